// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/tensor.c - shape operators: Reshape, Transpose, Concat, Slice, Split,
 * Pad, Tile, ..., and Shape/Size, whose results are host constants.
 */
#include "common.h"

/* ---- shape helpers --------------------------------------------------------- */

int onnx_axis_norm(struct ctx *c, int64_t a, int rank)
{
	if (a < -rank || a >= (rank ? rank : 1))
		return onnx_fail(c, "axis %lld out of range for rank %d", (long long)a,
				 rank);
	return (int)(a < 0 ? a + rank : a);
}

int onnx_reshape(struct ctx *c, int a, int rank, const int64_t *dims)
{
	return onnx_chk(c, vtpu_g_reshape(c->g, a, rank, dims));
}

/* Elements @idx (in range) of @x along @axis: slices of runs, concatenated. */
int onnx_take(struct ctx *c, int x, int axis, const int64_t *idx, int n)
{
	struct vtpu_shape s = onnx_shape_of(c, x);
	int parts[MAX_TAKE], np = 0;

	for (int i = 0; i < n;) {
		int64_t st[R] = { 0 }, lim[R], step[R];
		int j = i + 1;

		while (j < n && idx[j] == idx[j - 1] + 1)
			j++;
		for (int k = 0; k < s.rank; k++) {
			lim[k] = s.dims[k];
			step[k] = 1;
		}
		st[axis] = idx[i];
		lim[axis] = idx[j - 1] + 1;
		parts[np] = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, step));
		if (parts[np++] < 0)
			return -EINVAL;
		i = j;
	}
	if (np == 1)
		return parts[0];
	return onnx_chk(c, vtpu_g_concat(c->g, np, parts, axis));
}

int onnx_op_identity(struct ctx *c, node_t *n, const struct opdef *d)
{
	struct val *v = onnx_has_in(n, 0) ? onnx_lookup(c, n->input[0]) : NULL;

	(void)d;
	if (n->n_output > 1 && n->output[1][0]) {
		/* Dropout's mask: all true, as inference drops nothing. */
		int x = onnx_in(c, n, 0), one = x < 0 ? x : onnx_splat(c, 1, x);

		one = one < 0 ? one : onnx_chk(c, vtpu_g_convert(c->g, one, VTPU_PRED));
		if (onnx_out(c, n, 1, one) < 0)
			     return -EINVAL;
	}
	if (!v)
		return onnx_fail(c, "input 0 is not defined");
	/* Aliases keep a host copy visible to shape-reading consumers. */
	if (n->n_output < 1)
		return onnx_fail(c, "missing output 0");
	return onnx_define(c, n->output[0], v->id, v->c);
}

/*
 * Range with start, limit and delta known at compile time: a constant,
 * computed here as ONNX defines it (start + i * delta).
 */
int onnx_op_range(struct ctx *c, node_t *n, const struct opdef *d)
{
	static const char *const what[] = { "start", "limit", "delta" };
	const struct cval *cv[3];
	double v[3];
	int64_t iv[3], cnt;
	struct cval *r;
	bool is_int;

	(void)d;
	for (int i = 0; i < 3; i++) {
		cv[i] = onnx_cin(c, n, i, what[i]);
		if (!cv[i] || onnx_cv_reals(c, cv[i], &v[i], 1, what[i]) != 1)
			return c->failed ? -EINVAL : onnx_fail(c, "%s must be a scalar",
							       what[i]);
	}
	is_int = cv[0]->type == VTPU_S64 || cv[0]->type == VTPU_S32;
	if (v[2] == 0)
		return onnx_fail(c, "delta is 0");
	if (is_int) {
		/* In int64: a double is not exact beyond 2^53. */
		for (int i = 0; i < 3; i++)
			if (onnx_cv_ints(c, cv[i], &iv[i], 1, what[i]) != 1)
				return -EINVAL;
		if (__builtin_sub_overflow(iv[1], iv[0], &cnt))
			return onnx_fail(c, "unsupported range from %lld to %lld",
					 (long long)iv[0], (long long)iv[1]);
		/* ceil(cnt / delta), truncating division rounded away */
		cnt = cnt / iv[2] + (cnt % iv[2] != 0 && (cnt < 0) == (iv[2] < 0));
	} else {
		cnt = (int64_t)ceil((v[1] - v[0]) / v[2]);
	}
	cnt = cnt < 0 ? 0 : cnt;
	if (!cnt || cnt > MAX_FOLD)
		return onnx_fail(c, "unsupported range of %lld elements", (long long)cnt);
	r = onnx_cval_alloc(is_int ? VTPU_S64 : VTPU_F32, 1, &cnt, cnt);
	if (!r)
		return onnx_fail(c, "out of memory");
	for (int64_t i = 0; i < cnt; i++) {
		if (is_int)
			((int64_t *)r->data)[i] = (int64_t)((uint64_t)iv[0] +
							 (uint64_t)i * (uint64_t)iv[2]);
		else
			((float *)r->data)[i] = (float)(v[0] + i * v[2]);
	}
	return onnx_keep_const(c, n, r);
}

/*
 * HannWindow (arg 0), HammingWindow (1), BlackmanWindow (2) of a size
 * known at compile time: a host constant, cosines in double.
 */
int onnx_op_window(struct ctx *c, node_t *n, const struct opdef *d)
{
	static const double k[3][3] = {	/* a0 - a1 cos(2 pi x) + a2 cos(4 pi x) */
		{ 0.5, 0.5, 0 }, { 25.0 / 46, 21.0 / 46, 0 }, { 0.42, 0.5, 0.08 },
	};
	int64_t size, dt = onnx_attr_i(n, "output_datatype", 1);
	bool periodic = onnx_attr_i(n, "periodic", 1) != 0;
	struct cval *w;
	double den;

	if (onnx_in_ints(c, n, 0, &size, 1, "size") != 1)
		return c->failed ? -EINVAL : onnx_fail(c, "size must be a scalar");
	if (dt != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
	    dt != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
		return onnx_fail(c, "unsupported output_datatype %s",
				 onnx_type_name((int)dt));
	if (size < 1 || size > MAX_FOLD)
		return onnx_fail(c, "unsupported window of %lld", (long long)size);
	w = onnx_cval_alloc(VTPU_F32, 1, &size, size);
	if (!w)
		return onnx_fail(c, "out of memory");
	den = periodic ? (double)size : (double)(size - 1);
	for (int64_t i = 0; i < size; i++) {
		double x = den > 0 ? i / den : 0;

		((float *)w->data)[i] = (float)(k[d->arg][0] -
			k[d->arg][1] * cos(2 * M_PI * x) + k[d->arg][2] * cos(4 * M_PI * x));
	}
	return onnx_keep_const(c, n, w);
}

/* EyeLike: a constant of the input's 2-D shape with ones on diagonal k. */
int onnx_op_eyelike(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0);
	int64_t k = onnx_attr_i(n, "k", 0), rows, cols;
	struct vtpu_shape s;
	enum vtpu_type t;
	struct cval *cv;
	bool ok = true;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (s.rank != 2)
		return onnx_fail(c, "input must be 2-D");
	t = onnx_attr(n, "dtype") ? onnx_type((int)onnx_attr_i(n, "dtype", 1), &ok) : s.type;
	t = onnx_dev_type(t);
	if (!ok || (t != VTPU_F32 && t != VTPU_S32))
		return onnx_fail(c, "unsupported dtype");
	rows = s.dims[0], cols = s.dims[1];
	cv = onnx_cval_new(t, 2, s.dims, NULL, 0);
	if (!cv)
		return onnx_fail(c, "out of memory");
	free(cv->data);
	cv->n = rows * cols;
	cv->data = calloc(cv->n, 4);
	if (!cv->data) {
		free(cv);
		return onnx_fail(c, "out of memory");
	}
	for (int64_t i = 0; i < rows; i++)
		if (i + k >= 0 && i + k < cols) {
			if (t == VTPU_F32)
				((float *)cv->data)[i * cols + i + k] = 1;
			else
				((int32_t *)cv->data)[i * cols + i + k] = 1;
		}
	return onnx_keep_const(c, n, cv);
}

/* ---- shape manipulation ---------------------------------------------------- */

int onnx_op_reshape(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), m, neg = -1;
	int64_t t[R], known = 1;
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (c->opset < 5) {
		if ((m = onnx_attr_ints(c, n, "shape", t, R)) < 0)
			return m < -1 ? -EINVAL : onnx_fail(c, "missing shape");
	} else if ((m = onnx_in_ints(c, n, 1, t, R, "shape")) < 0) {
		return m;
	}
	for (int i = 0; i < m; i++) {
		if (t[i] == 0 && !onnx_attr_i(n, "allowzero", 0)) {
			if (i >= s.rank)
				return onnx_fail(c, "shape[%d] = 0 beyond the input rank", i);
			t[i] = s.dims[i];
		}
		if (t[i] == -1) {
			if (neg >= 0)
				return onnx_fail(c, "two -1 dimensions in shape");
			neg = i;
		} else if (t[i] < 1) {
			return onnx_fail(c, "unsupported dimension %lld in shape",
					 (long long)t[i]);
		} else if (t[i] > onnx_prod(s.dims, 0, s.rank) / known) {
			/* checked before multiplying: no overflow */
			return onnx_fail(c, "shape does not fit %lld elements",
					 (long long)onnx_prod(s.dims, 0, s.rank));
		} else {
			known *= t[i];
		}
	}
	if (neg >= 0)
		t[neg] = onnx_prod(s.dims, 0, s.rank) / known;
	return onnx_out(c, n, 0, onnx_reshape(c, x, m, t));
}

int onnx_op_flatten(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax;
	struct vtpu_shape s;
	int64_t t[2];

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	ax = (int)onnx_attr_i(n, "axis", 1);
	if (ax < -s.rank || ax > s.rank)
		return onnx_fail(c, "axis %d out of range", ax);
	ax = ax < 0 ? ax + s.rank : ax;
	t[0] = onnx_prod(s.dims, 0, ax);
	t[1] = onnx_prod(s.dims, ax, s.rank);
	return onnx_out(c, n, 0, onnx_reshape(c, x, 2, t));
}

int onnx_op_transpose(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), perm[R], m;
	int64_t pv[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	m = onnx_attr_ints(c, n, "perm", pv, R);
	if (m < -1)
		return -EINVAL;
	if (m >= 0 && m != s.rank)
		return onnx_fail(c, "perm has %d values for rank %d", m, s.rank);
	for (int i = 0; i < s.rank; i++)
		perm[i] = m < 0 ? s.rank - 1 - i : (int)pv[i];
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_transpose(c->g, x, perm)));
}

int onnx_op_concat(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[64], ax, nv = 0;

	(void)d;
	if (n->n_input > 64)
		return onnx_fail(c, "too many inputs (%zu)", n->n_input);
	for (size_t i = 0; i < n->n_input; i++)
		if ((v[nv++] = onnx_in(c, n, i)) < 0)
			return -EINVAL;
	if (!nv)
		return onnx_fail(c, "no inputs");
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", 0), onnx_shape_of(c, v[0]).rank);
	if (ax < 0)
		return ax;
	if (nv == 1)
		return onnx_out(c, n, 0, v[0]);
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_concat(c->g, nv, v, ax)));
}

/* Slice: numpy clamping; negative steps become a take() of the indices. */
int onnx_op_slice(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ns, ne, na = -1, nst = -1;
	int64_t st[R], en[R], ax[R], sp[R], lo[R], lim[R], step[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (c->opset < 10) {
		ns = onnx_attr_ints(c, n, "starts", st, R);
		ne = onnx_attr_ints(c, n, "ends", en, R);
		na = onnx_attr_ints(c, n, "axes", ax, R);
	} else {
		ns = onnx_in_ints(c, n, 1, st, R, "starts");
		ne = ns < 0 ? ns : onnx_in_ints(c, n, 2, en, R, "ends");
		if (ne >= 0 && onnx_has_in(n, 3))
			na = onnx_in_ints(c, n, 3, ax, R, "axes");
		if (ne >= 0 && onnx_has_in(n, 4))
			nst = onnx_in_ints(c, n, 4, sp, R, "steps");
	}
	if (c->failed)
		return -EINVAL;
	if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
		return onnx_fail(c, "starts, ends, axes and steps must have equal lengths");
	for (int i = 0; i < s.rank; i++)
		lo[i] = 0, lim[i] = s.dims[i], step[i] = 1;
	for (int i = 0; i < ns; i++) {
		int a = onnx_axis_norm(c, na >= 0 ? ax[i] : i, s.rank);
		int64_t dim, b, e, k = nst >= 0 ? sp[i] : 1;

		if (a < 0)
			return a;
		if (k == 0)
			return onnx_fail(c, "step 0");
		dim = s.dims[a];
		b = st[i] < 0 ? st[i] + dim : st[i];
		e = en[i] < 0 && en[i] > INT64_MIN ? en[i] + dim : en[i];
		if (k > 0) {
			b = b < 0 ? 0 : b > dim ? dim : b;
			e = e < 0 ? 0 : e > dim ? dim : e;
			if (e <= b)
				return onnx_fail(c, "empty slice on axis %d", a);
			lo[a] = b, lim[a] = e, step[a] = k;
		} else {
			int64_t idx[MAX_TAKE];
			int cnt = 0;

			b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
			e = en[i] < -dim ? -1 : e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			for (int64_t j = b; j > e && cnt < MAX_TAKE; j += k)
				idx[cnt++] = j;
			if (!cnt)
				return onnx_fail(c, "empty slice on axis %d", a);
			/* The take leaves the axis whole for the final slice. */
			x = onnx_take(c, x, a, idx, cnt);
			if (x < 0)
				return x;
			lim[a] = cnt;
		}
	}
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_slice(c->g, x, lo, lim, step)));
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, else input 1. */
static int sq_axes(struct ctx *c, node_t *n, int64_t *ax)
{
	if (c->opset >= 13)
		return onnx_has_in(n, 1) ? onnx_in_ints(c, n, 1, ax, R, "axes") : -1;
	return onnx_attr_ints(c, n, "axes", ax, R);
}

int onnx_op_squeeze(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), m, nr = 0;
	int64_t ax[R], t[R];
	bool drop[R] = { false };
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	m = sq_axes(c, n, ax);
	if (c->failed)
		return -EINVAL;
	for (int i = 0; i < m; i++) {
		int a = onnx_axis_norm(c, ax[i], s.rank);

		if (a < 0)
			return a;
		if (s.dims[a] != 1)
			return onnx_fail(c, "cannot squeeze axis %d of size %lld", a,
					 (long long)s.dims[a]);
		drop[a] = true;
	}
	for (int i = 0; i < s.rank; i++)
		if (!(m < 0 ? s.dims[i] == 1 : drop[i]))
			t[nr++] = s.dims[i];
	return onnx_out(c, n, 0, onnx_reshape(c, x, nr, t));
}

int onnx_op_unsqueeze(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), m, rank, k = 0;
	int64_t ax[R], t[R];
	bool add[R] = { false };
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	m = sq_axes(c, n, ax);
	if (c->failed)
		return -EINVAL;
	if (m < 0)
		return onnx_fail(c, "missing axes");
	rank = s.rank + m;
	if (rank > R)
		return onnx_fail(c, "rank %d exceeds %d", rank, R);
	for (int i = 0; i < m; i++) {
		int a = onnx_axis_norm(c, ax[i], rank);

		if (a < 0)
			return a;
		add[a] = true;
	}
	for (int i = 0; i < rank; i++)
		t[i] = add[i] ? 1 : s.dims[k++];
	return onnx_out(c, n, 0, onnx_reshape(c, x, rank, t));
}

int onnx_op_expand(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), m, rank;
	int64_t t[R], dims[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if ((m = onnx_in_ints(c, n, 1, t, R, "shape")) < 0)
		return m;
	s = onnx_shape_of(c, x);
	/* The result is the numpy broadcast of both shapes. */
	rank = m > s.rank ? m : s.rank;
	for (int i = 0; i < rank; i++) {
		int ia = i - (rank - s.rank), ib = i - (rank - m);
		int64_t da = ia >= 0 ? s.dims[ia] : 1, db = ib >= 0 ? t[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return onnx_fail(c, "cannot expand %lld to %lld", (long long)da,
					 (long long)db);
		dims[i] = da == 1 ? db : da;
	}
	return onnx_out(c, n, 0, onnx_bcast_to(c, x, rank, dims));
}

/*
 * Reflect, edge and wrap padding along @axis: every result element is
 * some input element, so it is a take() of the index sequence.
 */
static int pad_gather(struct ctx *c, node_t *n, int x, int axis, int64_t lo,
		      int64_t hi)
{
	int64_t len = onnx_shape_of(c, x).dims[axis], idx[MAX_TAKE];
	bool reflect = onnx_attr_s_is(n, "mode", "constant", "reflect");
	bool edge = onnx_attr_s_is(n, "mode", "constant", "edge");

	if (lo + len + hi > MAX_TAKE)
		return onnx_fail(c, "unsupported padded size %lld (at most %d)",
				 (long long)(lo + len + hi), MAX_TAKE);
	if (reflect && (lo >= len || hi >= len))
		return onnx_fail(c, "reflect pads must be smaller than the dimension");
	for (int64_t i = 0; i < lo + len + hi; i++) {
		int64_t j = i - lo;

		if (edge)
			j = j < 0 ? 0 : j >= len ? len - 1 : j;
		else if (reflect)
			j = j < 0 ? -j : j >= len ? 2 * (len - 1) - j : j;
		else
			j = ((j % len) + len) % len;
		idx[i] = j;
	}
	return onnx_take(c, x, axis, idx, (int)(lo + len + hi));
}

int onnx_op_pad(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), m, na = -1;
	int64_t p[2 * R], ax[R], lo[R] = { 0 }, hi[R] = { 0 };
	int64_t st[R], lim[R], step[R];
	double val = 0;
	struct vtpu_shape s;
	bool crop = false;

	(void)d;
	if (x < 0)
		return x;
	if (!onnx_attr_s_is(n, "mode", "constant", "constant") &&
	    !onnx_attr_s_is(n, "mode", "constant", "reflect") &&
	    !onnx_attr_s_is(n, "mode", "constant", "edge") &&
	    !onnx_attr_s_is(n, "mode", "constant", "wrap"))
		return onnx_fail(c, "unsupported mode");
	s = onnx_shape_of(c, x);
	if (c->opset < 11) {
		m = onnx_attr_ints(c, n, c->opset < 2 ? "paddings" : "pads", p, 2 * R);
		val = onnx_attr_f(n, "value", 0);
	} else {
		m = onnx_in_ints(c, n, 1, p, 2 * R, "pads");
		if (m >= 0 && onnx_has_in(n, 2)) {
			const struct cval *cv = onnx_cin(c, n, 2, "constant_value");

			if (!cv || onnx_cv_float(c, cv, &val, "constant_value"))
				return -EINVAL;
		}
		if (m >= 0 && onnx_has_in(n, 3))
			na = onnx_in_ints(c, n, 3, ax, R, "axes");
	}
	if (c->failed)
		return -EINVAL;
	if (na < 0) {
		na = s.rank;
		for (int i = 0; i < na; i++)
			ax[i] = i;
	}
	if (m != 2 * na)
		return onnx_fail(c, "pads has %d values for %d axes", m, na);
	for (int i = 0; i < na; i++) {
		int a = onnx_axis_norm(c, ax[i], s.rank);

		if (a < 0)
			return a;
		lo[a] = p[i], hi[a] = p[i + na];
	}
	/*
	 * Negative pads remove elements: a slice first, as ONNX Runtime
	 * crops before it pads (which matters to reflect and edge).
	 */
	for (int a = 0; a < s.rank; a++)
		crop |= lo[a] < 0 || hi[a] < 0;
	for (int a = 0; crop && a < s.rank; a++) {
		st[a] = lo[a] < 0 ? -lo[a] : 0;
		lim[a] = s.dims[a] - (hi[a] < 0 ? -hi[a] : 0);
		step[a] = 1;
		if (lim[a] <= st[a])
			return onnx_fail(c, "pads remove all %lld elements of axis %d",
					 (long long)s.dims[a], a);
		lo[a] = lo[a] < 0 ? 0 : lo[a];
		hi[a] = hi[a] < 0 ? 0 : hi[a];
	}
	if (crop && (x = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, step))) < 0)
		return x;
	if (onnx_attr_s_is(n, "mode", "constant", "constant"))
		return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_pad(c->g, x, lo, hi, val)));
	for (int a = 0; a < s.rank && x >= 0; a++)
		if (lo[a] || hi[a])
			x = pad_gather(c, n, x, a, lo[a], hi[a]);
	return onnx_out(c, n, 0, x);
}

/*
 * Tile with constant repeats, one axis at a time: [.., X, ..] viewed as
 * [.., 1, X, ..], broadcast to [.., r, X, ..] and merged to [.., r * X, ..];
 * at the maximum rank, a concatenation of r copies.
 */
int onnx_op_tile(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), m;
	int64_t rep[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if ((m = onnx_in_ints(c, n, 1, rep, R, "repeats")) < 0)
		return m;
	if (m != s.rank)
		return onnx_fail(c, "repeats has %d values for rank %d", m, s.rank);
	for (int a = 0; a < s.rank && x >= 0; a++) {
		int64_t t[R], bd[R];
		int map[R];

		if (rep[a] < 1 || rep[a] > 1024)
			return onnx_fail(c, "unsupported repeats %lld (1..1024)",
					 (long long)rep[a]);
		if (rep[a] == 1)
			continue;
		s = onnx_shape_of(c, x);
		if (s.rank == R) {
			int parts[1024];

			for (int64_t i = 0; i < rep[a]; i++)
				parts[i] = x;
			x = onnx_chk(c, vtpu_g_concat(c->g, (int)rep[a], parts, a));
			continue;
		}
		for (int i = 0, j = 0; i <= s.rank; i++) {
			bd[i] = i == a ? rep[a] : s.dims[j];
			if (i != a)
				map[j++] = i;
		}
		x = onnx_chk(c, vtpu_g_broadcast(c->g, x, s.rank + 1, bd, map));
		for (int i = 0; i < s.rank; i++)
			t[i] = i == a ? rep[a] * s.dims[a] : s.dims[i];
		x = x < 0 ? x : onnx_reshape(c, x, s.rank, t);
	}
	return onnx_out(c, n, 0, x);
}

/* Trilu: x where the diagonal offset keeps it, else 0 (a host mask). */
int onnx_op_trilu(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), mask, y, dims2[2];
	bool upper = onnx_attr_i(n, "upper", 1) != 0;
	int64_t k = 0, rows, cols;
	struct vtpu_shape s, ms;
	uint8_t *keep;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (s.rank < 2)
		return onnx_fail(c, "input must have rank 2 or more");
	if (onnx_has_in(n, 1) && onnx_in_ints(c, n, 1, &k, 1, "k") != 1)
		return c->failed ? -EINVAL : onnx_fail(c, "k must be a scalar");
	rows = s.dims[s.rank - 2], cols = s.dims[s.rank - 1];
	keep = malloc(rows * cols);
	if (!keep)
		return onnx_fail(c, "out of memory");
	for (int64_t i = 0; i < rows; i++)
		for (int64_t j = 0; j < cols; j++)
			keep[i * cols + j] = upper ? j - i >= k : j - i <= k;
	ms = (struct vtpu_shape){ VTPU_PRED, 2, { rows, cols } };
	mask = onnx_chk(c, vtpu_g_constant(c->g, &ms, keep));
	free(keep);
	dims2[0] = s.rank - 2, dims2[1] = s.rank - 1;
	mask = mask < 0 ? mask : onnx_chk(c, vtpu_g_broadcast(c->g, mask, s.rank,
							      s.dims, dims2));
	if (mask < 0)
		return mask;
	y = onnx_chk(c, vtpu_g_select(c->g, mask, x, onnx_splat(c, 0, x)));
	return onnx_out(c, n, 0, y);
}

/*
 * DepthToSpace (arg 1) and SpaceToDepth (arg 0): a rank-6 view and a
 * transpose, as the operators' definitions are written.
 */
int onnx_op_depth_space(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0);
	int64_t b = onnx_attr_i(n, "blocksize", 0), t[6], o[4];
	bool crd = onnx_attr_s_is(n, "mode", "DCR", "CRD");
	static const int dcr[6] = { 0, 3, 4, 1, 5, 2 };
	static const int crdp[6] = { 0, 1, 4, 2, 5, 3 };
	static const int s2d[6] = { 0, 3, 5, 1, 2, 4 };
	struct vtpu_shape s;
	int64_t nn, ch, h, w;

	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (s.rank != 4 || b < 1)
		return onnx_fail(c, "wants a rank-4 input and blocksize >= 1");
	nn = s.dims[0], ch = s.dims[1], h = s.dims[2], w = s.dims[3];
	if (!crd && !onnx_attr_s_is(n, "mode", "DCR", "DCR"))
		return onnx_fail(c, "unsupported mode");
	if (d->arg) {
		if (ch % (b * b))
			return onnx_fail(c, "channels not divisible by blocksize^2");
		if (crd) {
			int64_t v[6] = { nn, ch / (b * b), b, b, h, w };

			memcpy(t, v, sizeof(t));
		} else {
			int64_t v[6] = { nn, b, b, ch / (b * b), h, w };

			memcpy(t, v, sizeof(t));
		}
		o[0] = nn, o[1] = ch / (b * b), o[2] = h * b, o[3] = w * b;
	} else {
		int64_t v[6] = { nn, ch, h / b, b, w / b, b };

		if (h % b || w % b)
			return onnx_fail(c, "spatial dims not divisible by blocksize");
		memcpy(t, v, sizeof(t));
		o[0] = nn, o[1] = ch * b * b, o[2] = h / b, o[3] = w / b;
	}
	x = onnx_reshape(c, x, 6, t);
	x = x < 0 ? x : onnx_chk(c, vtpu_g_transpose(c->g, x, !d->arg ? s2d :
						     crd ? crdp : dcr));
	return onnx_out(c, n, 0, x < 0 ? x : onnx_reshape(c, x, 4, o));
}

/* Shape: static, so a host constant. */
int onnx_op_shape(struct ctx *c, node_t *n, const struct opdef *d)
{
	struct val *v = onnx_has_in(n, 0) ? onnx_lookup(c, n->input[0]) : NULL;
	int64_t dims[R], st, en, cnt;
	int rank;

	(void)d;
	if (!v)
		return onnx_fail(c, "input 0 is not defined");
	if (v->id >= 0) {
		struct vtpu_shape s = onnx_shape_of(c, v->id);

		rank = s.rank;
		memcpy(dims, s.dims, sizeof(dims));
	} else {
		rank = v->c->rank;
		memcpy(dims, v->c->dims, sizeof(dims));
	}
	st = onnx_attr_i(n, "start", 0);
	en = onnx_attr_i(n, "end", rank);
	st = st < 0 ? st + rank : st;
	en = en < 0 ? en + rank : en;
	st = st < 0 ? 0 : st > rank ? rank : st;
	en = en < st ? st : en > rank ? rank : en;
	cnt = en - st;
	return onnx_keep_const(c, n, onnx_cval_new(VTPU_S64, 1, &cnt, dims + st, cnt));
}

/* Size: the element count, a host constant. */
int onnx_op_size(struct ctx *c, node_t *n, const struct opdef *d)
{
	struct val *v = onnx_has_in(n, 0) ? onnx_lookup(c, n->input[0]) : NULL;
	int64_t cnt;

	(void)d;
	if (!v)
		return onnx_fail(c, "input 0 is not defined");
	if (v->id >= 0) {
		struct vtpu_shape s = onnx_shape_of(c, v->id);

		cnt = onnx_prod(s.dims, 0, s.rank);
	} else {
		cnt = v->c->n;
	}
	return onnx_keep_const(c, n, onnx_cval_new(VTPU_S64, 0, NULL, &cnt, 1));
}

/* Split: one slice per output, sizes from split (attr/input) or equal. */
int onnx_op_split(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax, m = -1, no = (int)n->n_output;
	int64_t sz[64], lo[R] = { 0 }, lim[R], step[R], at = 0;
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if (no < 1 || no > 64)
		return onnx_fail(c, "unsupported %d outputs", no);
	s = onnx_shape_of(c, x);
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", 0), s.rank);
	if (ax < 0)
		return ax;
	if (c->opset < 13)
		m = onnx_attr_ints(c, n, "split", sz, 64);
	else if (onnx_has_in(n, 1))
		m = onnx_in_ints(c, n, 1, sz, 64, "split");
	if (c->failed)
		return -EINVAL;
	if (m < 0) {
		/* Equal parts; the last may be smaller (opset 18). */
		int64_t part = (s.dims[ax] + no - 1) / no;

		for (int i = 0; i < no; i++)
			sz[i] = i < no - 1 ? part : s.dims[ax] - part * (no - 1);
		m = no;
	}
	if (m != no)
		return onnx_fail(c, "split has %d sizes for %d outputs", m, no);
	for (int i = 0; i < s.rank; i++)
		lim[i] = s.dims[i], step[i] = 1;
	for (int i = 0; i < no; i++) {
		if (sz[i] < 1 || at + sz[i] > s.dims[ax])
			return onnx_fail(c, "bad split size %lld", (long long)sz[i]);
		lo[ax] = at;
		lim[ax] = at += sz[i];
		if (n->output[i][0] &&
		    onnx_out(c, n, i, onnx_chk(c, vtpu_g_slice(c->g, x, lo, lim, step))) < 0)
			     return -EINVAL;
	}
	return 0;
}
