// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/reduce.c - reductions, CumSum, and the arg operators (ArgMax/ArgMin,
 * Hardmax, TopK).
 */
#include "common.h"

/*
 * ArgMax (arg 1) / ArgMin (arg 0): the first (or last) index along the
 * axis where x equals its max (min): select the index where equal, else
 * past the end (or -1), and reduce with min (or max). The device reduces
 * f32 only: indices are exact in f32 up to 2^24, then s32.
 */
/* @v, reduced over @ax of @sh, broadcast back to @sh's dims. */
static int unreduce(struct ctx *c, int v, const struct vtpu_shape *sh, int ax)
{
	int dims[R];

	if (v < 0 || sh->rank == 1)
		return v < 0 ? v : onnx_bcast_to(c, v, 1, sh->dims);
	for (int i = 0, k = 0; i < sh->rank; i++)
		if (i != ax)
			dims[k++] = i;
	return onnx_chk(c, vtpu_g_broadcast(c->g, v, sh->rank, sh->dims, dims));
}

/* An f32 iota along @ax of @sh's dims: indices compare exactly to 2^24. */
static int iota_f32(struct ctx *c, const struct vtpu_shape *sh, int ax)
{
	int io;

	if (sh->dims[ax] > (1 << 24))
		return onnx_fail(c, "axis longer than 2^24");
	io = onnx_iota_along(c, sh->dims[ax], sh->rank, sh->dims, ax);
	return io < 0 ? io : onnx_chk(c, vtpu_g_convert(c->g, io, VTPU_F32));
}

/*
 * ArgMax/ArgMin, Hardmax and TopK: along @ax of f32 @x, the extreme
 * (max when @largest) into @value and the first (@last: the last) index
 * holding it, as f32, both with the axis reduced away. The device has
 * no arg-reduction: select the index where x equals the extreme, else
 * past the end (or -1), and reduce that with min (or max). @io is
 * iota_f32() of @x's shape.
 */
static int arg_extreme(struct ctx *c, int x, int ax, int io, bool largest,
		       bool last, int *value)
{
	struct vtpu_shape s = onnx_shape_of(c, x);
	int red[1] = { ax }, m, eq, idx;

	m = onnx_chk(c, vtpu_g_reduce(c->g, largest ? VTPU_REDUCE_MAX_OP :
				      VTPU_REDUCE_MIN_OP, x, 1, red));
	eq = unreduce(c, m, &s, ax);
	eq = eq < 0 ? eq : onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, x, eq));
	if (eq < 0 || io < 0)
		return -EINVAL;
	idx = onnx_chk(c, vtpu_g_select(c->g, eq, io,
					onnx_splat(c, last ? -1 : (double)s.dims[ax], io)));
	*value = m;
	return idx < 0 ? idx : onnx_chk(c, vtpu_g_reduce(c->g, last ?
				VTPU_REDUCE_MAX_OP : VTPU_REDUCE_MIN_OP, idx, 1, red));
}

/*
 * CumSum along a constant axis: a product with a triangular matrix of
 * ones (strictly so when exclusive, mirrored when reverse). Integers go
 * through f32, exact below 2^24.
 */
int onnx_op_cumsum(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax, y;
	bool excl = onnx_attr_i(n, "exclusive", 0), rev = onnx_attr_i(n, "reverse", 0);
	enum vtpu_type t;
	int64_t axis, len;
	float *mat;

	(void)d;
	if (x < 0)
		return x;
	if (onnx_in_ints(c, n, 1, &axis, 1, "axis") != 1)
		return c->failed ? -EINVAL : onnx_fail(c, "axis must be a scalar");
	t = onnx_shape_of(c, x).type;
	ax = onnx_axis_norm(c, axis, onnx_shape_of(c, x).rank);
	if (ax < 0)
		return ax;
	len = onnx_shape_of(c, x).dims[ax];
	if (len > 4096)
		return onnx_fail(c, "unsupported axis of %lld (at most 4096)",
				 (long long)len);
	if (t != VTPU_F32 && t != VTPU_BF16)
		x = onnx_chk(c, vtpu_g_convert(c->g, x, VTPU_F32));
	mat = calloc(len * len, sizeof(*mat));
	if (!mat)
		return onnx_fail(c, "out of memory");
	/* y[j] = sum over i of x[i] * mat[i][j] */
	for (int64_t i = 0; i < len; i++)
		for (int64_t j = 0; j < len; j++)
			mat[i * len + j] = rev ? (excl ? i > j : i >= j) :
						 (excl ? i < j : i <= j);
	y = x < 0 ? x : onnx_apply_along(c, x, ax, mat, len);
	free(mat);
	if (y >= 0 && onnx_shape_of(c, y).type != t)
		y = onnx_chk(c, vtpu_g_convert(c->g, y, t));
	return onnx_out(c, n, 0, y);
}

/* Hardmax: 1 at the first maximum along the axis, 0 elsewhere. */
int onnx_op_hardmax(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax, m, io, first, y;
	struct vtpu_shape s, sx;
	int64_t flat[2];

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", c->opset < 13 ? 1 : -1), s.rank);
	if (ax < 0)
		return ax;
	if (c->opset < 13) {	/* coerced to 2-D at axis, as Softmax was */
		flat[0] = onnx_prod(s.dims, 0, ax);
		flat[1] = onnx_prod(s.dims, ax, s.rank);
		x = onnx_reshape(c, x, 2, flat);
		ax = 1;
	}
	if (x < 0)
		return x;
	sx = onnx_shape_of(c, x);
	io = iota_f32(c, &sx, ax);
	first = arg_extreme(c, x, ax, io, true, false, &m);
	first = unreduce(c, first, &sx, ax);
	y = first < 0 ? first : onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, io, first));
	y = y < 0 ? y : onnx_chk(c, vtpu_g_convert(c->g, y, s.type));
	return onnx_out(c, n, 0, y < 0 ? y : onnx_reshape(c, y, s.rank, s.dims));
}

/*
 * TopK for a small constant k: k rounds of "take the max (min), note
 * its first index, mask it out", concatenated. Sorted, ties to the
 * lower index.
 */
int onnx_op_topk(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax, io, vals[64], idxs[64];
	bool largest = onnx_attr_i(n, "largest", 1) != 0;
	struct vtpu_shape s;
	int64_t k, kk[R];

	(void)d;
	if (x < 0)
		return x;
	if (c->opset < 10)
		k = onnx_attr_i(n, "k", 0);
	else if (onnx_in_ints(c, n, 1, &k, 1, "k") != 1)
		return c->failed ? -EINVAL : onnx_fail(c, "k must be one value");
	s = onnx_shape_of(c, x);
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", -1), s.rank);
	if (ax < 0)
		return ax;
	if (k < 1 || k > 64 || k > s.dims[ax])
		return onnx_fail(c, "unsupported k %lld (1..64)", (long long)k);
	if (s.type != VTPU_F32)
		x = onnx_chk(c, vtpu_g_convert(c->g, x, VTPU_F32));
	io = iota_f32(c, &s, ax);
	memcpy(kk, s.dims, sizeof(kk));
	kk[ax] = 1;
	for (int64_t r = 0; r < k && x >= 0 && io >= 0; r++) {
		int m = -1, first, hit;

		first = arg_extreme(c, x, ax, io, largest, false, &m);
		hit = unreduce(c, first, &s, ax);
		hit = hit < 0 ? hit : onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, io, hit));
		if (hit < 0)
			return -EINVAL;
		/* The taken element can never win again. */
		x = onnx_chk(c, vtpu_g_select(c->g, hit,
				onnx_splat(c, largest ? -INFINITY : INFINITY, x), x));
		vals[r] = onnx_reshape(c, m, s.rank, kk);
		idxs[r] = onnx_reshape(c, first, s.rank, kk);
		if (vals[r] < 0 || idxs[r] < 0)
			return -EINVAL;
	}
	if (x < 0 || io < 0)
		return -EINVAL;
	{
		int v = k == 1 ? vals[0] : onnx_chk(c, vtpu_g_concat(c->g, (int)k, vals, ax));
		int i = k == 1 ? idxs[0] : onnx_chk(c, vtpu_g_concat(c->g, (int)k, idxs, ax));

		if (v >= 0 && s.type != VTPU_F32)
			v = onnx_chk(c, vtpu_g_convert(c->g, v, s.type));
		i = i < 0 ? i : onnx_chk(c, vtpu_g_convert(c->g, i, VTPU_S32));
		if (onnx_out(c, n, 0, v) < 0)
			     return -EINVAL;
		return n->n_output > 1 && n->output[1][0] ? onnx_out(c, n, 1, i) : 0;
	}
}

/*
 * A product over @axes as a tree of multiplies: each axis is halved,
 * first half times second half (the odd element carried along), until
 * it has length 1. log2(n) steps, no log or exp: zeros and signs stay
 * exact.
 */
static int reduce_prod(struct ctx *c, int x, int na, const int *axes)
{
	struct vtpu_shape s;
	int64_t t[R];
	int k = 0;

	for (int i = 0; i < na && x >= 0; i++) {
		int ax = axes[i];

		for (s = onnx_shape_of(c, x); s.dims[ax] > 1 && x >= 0;
		     s = onnx_shape_of(c, x)) {
			int64_t half = s.dims[ax] / 2, st[R] = { 0 }, lim[R], step[R];
			int a, b, p;

			for (int j = 0; j < s.rank; j++)
				lim[j] = s.dims[j], step[j] = 1;
			lim[ax] = half;
			a = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, step));
			st[ax] = half, lim[ax] = 2 * half;
			b = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, step));
			p = a < 0 || b < 0 ? -EINVAL :
			    onnx_chk(c, vtpu_g_binary(c->g, VTPU_MUL, a, b));
			if (p >= 0 && s.dims[ax] % 2) {
				int parts[2] = { p, -1 };

				st[ax] = 2 * half, lim[ax] = s.dims[ax];
				parts[1] = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, step));
				p = parts[1] < 0 ? parts[1] :
				    onnx_chk(c, vtpu_g_concat(c->g, 2, parts, ax));
			}
			x = p;
		}
	}
	if (x < 0)
		return x;
	/* The reduced axes, now of length 1, go away as vtpu_g_reduce's do. */
	s = onnx_shape_of(c, x);
	for (int i = 0; i < s.rank; i++) {
		bool reduced = false;

		for (int j = 0; j < na; j++)
			reduced |= axes[j] == i;
		if (!reduced)
			t[k++] = s.dims[i];
	}
	return onnx_reshape(c, x, k, t);
}

int onnx_op_reduce(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), pre = d->arg2 & 0xff, post = (d->arg2 >> 8) & 0xff;
	int64_t av[R], kd[R];
	int na = 0, axes[R], y, nk = 0;
	bool red[R] = { false };
	struct vtpu_shape s;

	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (c->opset >= (d->arg2 >> 16)) {
		if (onnx_has_in(n, 1) && (na = onnx_in_ints(c, n, 1, av, R, "axes")) < 0)
			return na;
	} else if ((na = onnx_attr_ints(c, n, "axes", av, R)) < -1) {
		return -EINVAL;
	}
	na = na < 0 ? 0 : na;
	if (!na && onnx_attr_i(n, "noop_with_empty_axes", 0))
		return onnx_op_identity(c, n, d);
	for (int i = 0; i < na; i++) {
		int a = onnx_axis_norm(c, av[i], s.rank);

		if (a < 0)
			return a;
		red[a] = true;
	}
	na = 0;
	for (int i = 0; i < s.rank; i++)
		if (red[i])
			axes[na++] = i;
	if (!na)	/* empty axes: all of them */
		for (int i = 0; i < s.rank; i++)
			axes[na++] = i, red[i] = true;
	if (pre == PRE_SQUARE)
		x = onnx_chk(c, vtpu_g_binary(c->g, VTPU_MUL, x, x));
	else if (pre == PRE_ABS)
		x = onnx_chk(c, vtpu_g_unary(c->g, VTPU_ABS, x));
	else if (pre == PRE_EXP)
		x = onnx_chk(c, vtpu_g_unary(c->g, VTPU_EXP, x));
	if (d->arg == REDUCE_PROD)
		y = x < 0 ? x : reduce_prod(c, x, na, axes);
	else
		y = x < 0 ? x : onnx_chk(c, vtpu_g_reduce(c->g, d->arg, x, na, axes));
	if (y >= 0 && post == POST_SQRT)
		y = onnx_chk(c, vtpu_g_unary(c->g, VTPU_SQRT, y));
	else if (y >= 0 && post == POST_LOG)
		y = onnx_chk(c, vtpu_g_unary(c->g, VTPU_LOG, y));
	if (y >= 0 && onnx_attr_i(n, "keepdims", 1)) {
		for (int i = 0; i < s.rank; i++)
			kd[nk++] = red[i] ? 1 : s.dims[i];
		y = onnx_reshape(c, y, nk, kd);
	}
	return onnx_out(c, n, 0, y);
}

/* ArgMax (arg 1) / ArgMin (arg 0), in f32 (exact to 2^24), then s32. */
int onnx_op_argmax(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax, m, y;
	struct vtpu_shape s;

	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (!s.rank)
		return onnx_fail(c, "input must have an axis");
	if (s.type == VTPU_S32)
		x = onnx_chk(c, vtpu_g_convert(c->g, x, VTPU_F32));
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", 0), s.rank);
	if (x < 0 || ax < 0)
		return -EINVAL;
	s = onnx_shape_of(c, x);
	y = arg_extreme(c, x, ax, iota_f32(c, &s, ax), d->arg,
			onnx_attr_i(n, "select_last_index", 0) != 0, &m);
	y = y < 0 ? y : onnx_chk(c, vtpu_g_convert(c->g, y, VTPU_S32));
	if (y >= 0 && onnx_attr_i(n, "keepdims", 1)) {
		s.dims[ax] = 1;
		y = onnx_reshape(c, y, s.rank, s.dims);
	}
	return onnx_out(c, n, 0, y);
}
