// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/indexing.c - gathers and scatters (constant and run-time indices),
 * OneHot.
 */
#include "common.h"

/* ---- one-hot, scatter, top-k ------------------------------------------------- */

/* Integer indices in s32, negative ones counted back from @len. */
static int wrap_indices(struct ctx *c, int idx, int64_t len)
{
	int neg;

	if (idx >= 0 && onnx_shape_of(c, idx).type != VTPU_S32)
		idx = onnx_chk(c, vtpu_g_convert(c->g, idx, VTPU_S32));
	if (idx < 0)
		return idx;
	neg = onnx_chk(c, vtpu_g_compare(c->g, VTPU_LT, idx, onnx_splat(c, 0, idx)));
	return neg < 0 ? neg : onnx_chk(c, vtpu_g_select(c->g, neg,
			onnx_binary(c, VTPU_ADD, idx, onnx_splat(c, (double)len, idx)), idx));
}

/* Element @i of a rank-1 value, as a scalar. */
static int element(struct ctx *c, int v, int64_t i)
{
	int64_t st[1] = { i }, lim[1] = { i + 1 }, step[1] = { 1 };
	int y = onnx_chk(c, vtpu_g_slice(c->g, v, st, lim, step));

	return y < 0 ? y : onnx_reshape(c, y, 0, NULL);
}

/* OneHot: values[1] where index == position along the new axis, else [0]. */
int onnx_op_onehot(struct ctx *c, node_t *n, const struct opdef *d)
{
	int idx = onnx_in(c, n, 0), vals = onnx_in(c, n, 2), ax, map[R], mask, on, off;
	const struct cval *dv = onnx_cin(c, n, 1, "depth");
	struct vtpu_shape si;
	int64_t dims[R];
	double depth;

	(void)d;
	if (idx < 0 || vals < 0 || !dv || onnx_cv_reals(c, dv, &depth, 1, "depth") != 1)
		return c->failed ? -EINVAL : onnx_fail(c, "depth must be a scalar");
	si = onnx_shape_of(c, idx);
	if (si.rank + 1 > R || depth < 1 || depth > 65536)
		return onnx_fail(c, "unsupported depth %g or rank %d", depth, si.rank);
	if (onnx_shape_of(c, vals).rank != 1 || onnx_shape_of(c, vals).dims[0] != 2)
		return onnx_fail(c, "values must be [off, on]");
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", -1), si.rank + 1);
	if (ax < 0)
		return ax;
	for (int i = 0, k = 0; i <= si.rank; i++) {
		dims[i] = i == ax ? (int64_t)depth : si.dims[k];
		if (i != ax)
			map[k++] = i;
	}
	idx = wrap_indices(c, idx, (int64_t)depth);
	idx = idx < 0 ? idx : onnx_chk(c, vtpu_g_broadcast(c->g, idx, si.rank + 1,
							   dims, map));
	mask = onnx_iota_along(c, (int64_t)depth, si.rank + 1, dims, ax);
	mask = idx < 0 || mask < 0 ? -EINVAL :
	       onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, idx, mask));
	off = element(c, vals, 0);
	on = element(c, vals, 1);
	off = off < 0 ? off : onnx_bcast_to(c, off, si.rank + 1, dims);
	on = on < 0 ? on : onnx_bcast_to(c, on, si.rank + 1, dims);
	if (mask < 0 || on < 0 || off < 0)
		return -EINVAL;
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_select(c->g, mask, on, off)));
}

/*
 * ScatterElements (and the older Scatter): data with updates written at
 * the indices along the axis, as masked sums like GatherElements: a new
 * axis of the data's length V after the indices' axis K, the mask
 * (index == v), summed over K. Duplicates add (reduction "add" adds the
 * data too); positions no index hits keep the data.
 */
int onnx_op_scatter_elements(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), idx = onnx_in(c, n, 1), upd = onnx_in(c, n, 2), ax, red[1];
	bool add = onnx_attr_s_is(n, "reduction", "none", "add");
	struct vtpu_shape sx, si;
	int64_t e[R], v, lo[R] = { 0 }, hi[R] = { 0 };
	int imap[R], mask, sum, hit, y;
	bool pad = false;

	(void)d;
	if (x < 0 || idx < 0 || upd < 0)
		return -EINVAL;
	if (!add && !onnx_attr_s_is(n, "reduction", "none", "none"))
		return onnx_fail(c, "unsupported reduction");
	sx = onnx_shape_of(c, x);
	si = onnx_shape_of(c, idx);
	if (si.rank != sx.rank || sx.rank + 1 > R)
		return onnx_fail(c, "indices must have the data's rank (at most %d)",
				 R - 1);
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", 0), sx.rank);
	if (ax < 0)
		return ax;
	v = sx.dims[ax];
	for (int i = 0, k = 0; i <= sx.rank; i++)
		e[i] = i == ax + 1 ? v : si.dims[k++];
	if (onnx_prod(e, 0, sx.rank + 1) > (1 << 24))
		return onnx_fail(c, "unsupported scatter of that size");
	for (int i = 0; i < sx.rank; i++) {
		imap[i] = i <= ax ? i : i + 1;
		if (i != ax && si.dims[i] > sx.dims[i])
			return onnx_fail(c, "indices larger than the data on axis %d", i);
		if (i != ax && si.dims[i] < sx.dims[i])
			hi[i] = sx.dims[i] - si.dims[i], pad = true;
	}
	idx = wrap_indices(c, idx, v);
	idx = idx < 0 ? idx : onnx_chk(c, vtpu_g_broadcast(c->g, idx, sx.rank + 1, e,
							   imap));
	mask = onnx_iota_along(c, v, sx.rank + 1, e, ax + 1);
	mask = idx < 0 || mask < 0 ? -EINVAL :
	       onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, idx, mask));
	upd = onnx_chk(c, vtpu_g_broadcast(c->g, upd, sx.rank + 1, e, imap));
	if (mask < 0 || upd < 0)
		return -EINVAL;
	red[0] = ax;
	sum = onnx_chk(c, vtpu_g_select(c->g, mask, upd, onnx_splat(c, 0, upd)));
	sum = sum < 0 ? sum : onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP,
							sum, 1, red));
	hit = onnx_chk(c, vtpu_g_convert(c->g, mask, VTPU_F32));
	hit = hit < 0 ? hit : onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MAX_OP,
							hit, 1, red));
	/* Data beyond the indices' extent on other axes is never hit. */
	if (pad && sum >= 0 && hit >= 0) {
		sum = onnx_chk(c, vtpu_g_pad(c->g, sum, lo, hi, 0.0));
		hit = onnx_chk(c, vtpu_g_pad(c->g, hit, lo, hi, 0.0));
	}
	if (sum < 0 || hit < 0)
		return -EINVAL;
	if (add)
		sum = onnx_binary(c, VTPU_ADD, x, sum);
	hit = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, hit, onnx_splat(c, 0, hit)));
	y = sum < 0 || hit < 0 ? -EINVAL :
	    onnx_chk(c, vtpu_g_select(c->g, hit, sum, x));
	return onnx_out(c, n, 0, y);
}

/* ---- losses ------------------------------------------------------------------ */

/*
 * An s32 iota [0, size) laid along dimension @axis of @rank/@dims, or
 * -errno.
 */
int onnx_iota_along(struct ctx *c, int64_t size, int rank,
		    const int64_t *dims, int axis)
{
	struct vtpu_shape is = { VTPU_S32, 1, { size } };
	int32_t *v = malloc(size * sizeof(*v));
	int id, map[1] = { axis };

	if (!v)
		return onnx_fail(c, "out of memory");
	for (int64_t i = 0; i < size; i++)
		v[i] = (int32_t)i;
	id = onnx_chk(c, vtpu_g_constant(c->g, &is, v));
	free(v);
	return id < 0 ? id : onnx_chk(c, vtpu_g_broadcast(c->g, id, rank, dims, map));
}

/*
 * Gather with indices known only at run time: the device's indexed DMA
 * (DMA_GATHER) brings the rows the indices name, checking each: one
 * outside the axis fails the execution with -ERANGE, as ONNX Runtime
 * refuses it. With @wrap negative indices count from the end (ONNX);
 * callers that have wrapped and checked their own pass false.
 */
static int gather_dynamic(struct ctx *c, int x, int ax, int idx, bool wrap)
{
	if (x < 0 || idx < 0)
		return x < 0 ? x : idx;
	if (onnx_shape_of(c, idx).type != VTPU_S32)
		return onnx_fail(c, "indices must be integers");
	return onnx_chk(c, vtpu_g_gather(c->g, x, idx, ax, wrap));
}

/*
 * @idx where every one of @n wrapped index values (@comp, each checked
 * against its extent @len) is inside its axis, else -1: an index the
 * gather refuses. s32 arithmetic runs in f32, exact below 2^24.
 */
static int valid_or_minus_one(struct ctx *c, int idx, const int *comp,
			      const int64_t *len, int n)
{
	int ok = -EINVAL;

	for (int i = 0; i < n; i++) {
		int lo = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GE, comp[i],
						    onnx_splat(c, 0, comp[i])));
		int hi = onnx_chk(c, vtpu_g_compare(c->g, VTPU_LT, comp[i],
						    onnx_splat(c, (double)len[i], comp[i])));
		/* pred and: lo ? hi : lo */
		int both = lo < 0 || hi < 0 ? -EINVAL :
			   onnx_chk(c, vtpu_g_select(c->g, lo, hi, lo));

		ok = i == 0 || both < 0 ? both :
		     onnx_chk(c, vtpu_g_select(c->g, ok, both, ok));
		if (ok < 0)
			return ok;
	}
	return onnx_chk(c, vtpu_g_select(c->g, ok, idx, onnx_splat(c, -1, idx)));
}

static int gather_elements(struct ctx *c, int x, int idx, int ax);

/*
 * GatherElements: element i of the result is the data element at i with
 * its @axis coordinate replaced by idx[i]. Its position in the data,
 * base[i] + idx[i] * stride (base, a constant of the indices' shape, is
 * i's position with that coordinate 0), feeds a gather of one-element
 * rows; an index outside the axis becomes -1, which the gather refuses.
 */
int onnx_op_gather_elements(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), idx = onnx_in(c, n, 1), ax;
	struct vtpu_shape sx, si;

	(void)d;
	if (x < 0 || idx < 0)
		return -EINVAL;
	sx = onnx_shape_of(c, x);
	si = onnx_shape_of(c, idx);
	if (si.type != VTPU_S32 || si.rank != sx.rank || !sx.rank)
		return onnx_fail(c, "wants integer indices of the data's rank");
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", 0), sx.rank);
	if (ax < 0)
		return ax;
	return onnx_out(c, n, 0, gather_elements(c, x, idx, ax));
}

/*
 * ReverseSequence: along the time axis, the first sequence_lens[b]
 * elements of batch entry b in reverse order, the rest as they are. The
 * lengths are known at run time: the source position of each element,
 * t < len ? len - 1 - t : t, feeds GatherElements' gather. A length
 * beyond the time axis makes a position outside it, and the execution
 * fails (-ERANGE), as ONNX Runtime refuses such lengths.
 */
int onnx_op_reverse_sequence(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), len = onnx_in(c, n, 1), ta, ba, t, rev, in,
	    map[1];
	struct vtpu_shape sx;

	(void)d;
	if (x < 0 || len < 0)
		return -EINVAL;
	sx = onnx_shape_of(c, x);
	ta = (int)onnx_attr_i(n, "time_axis", 0);
	ba = (int)onnx_attr_i(n, "batch_axis", 1);
	if (sx.rank < 2 || ta < 0 || ta > 1 || ba < 0 || ba > 1 || ta == ba)
		return onnx_fail(c, "wants time_axis and batch_axis 0 and 1, or 1 and 0, of a tensor of rank 2 or more");
	if (onnx_shape_of(c, len).rank != 1 ||
	    onnx_shape_of(c, len).dims[0] != sx.dims[ba])
		return onnx_fail(c, "sequence_lens must have one length per batch entry (%lld)",
				 (long long)sx.dims[ba]);
	if (onnx_shape_of(c, len).type != VTPU_S32)
		len = onnx_chk(c, vtpu_g_convert(c->g, len, VTPU_S32));
	map[0] = ba;
	len = len < 0 ? len : onnx_chk(c, vtpu_g_broadcast(c->g, len, sx.rank,
							   sx.dims, map));
	t = onnx_iota_along(c, sx.dims[ta], sx.rank, sx.dims, ta);
	if (len < 0 || t < 0)
		return -EINVAL;
	rev = onnx_binary(c, VTPU_SUB, onnx_binary(c, VTPU_SUB, len,
						   onnx_splat(c, 1, len)), t);
	in = onnx_chk(c, vtpu_g_compare(c->g, VTPU_LT, t, len));
	t = rev < 0 || in < 0 ? -EINVAL :
	    onnx_chk(c, vtpu_g_select(c->g, in, rev, t));
	return onnx_out(c, n, 0, t < 0 ? t : gather_elements(c, x, t, ta));
}

/*
 * GatherElements of @x by s32 @idx (of @x's rank) along @ax, as
 * described above; the result, or -errno.
 */
static int gather_elements(struct ctx *c, int x, int idx, int ax)
{
	struct vtpu_shape sx = onnx_shape_of(c, x), si = onnx_shape_of(c, idx), bs;
	int64_t total, m, stride, v, flat;
	int base, pos, w;
	int32_t *bv;

	for (int i = 0; i < sx.rank; i++)
		if (i != ax && si.dims[i] > sx.dims[i])
			return onnx_fail(c, "indices larger than the data on axis %d", i);
	total = onnx_prod(sx.dims, 0, sx.rank);
	m = onnx_prod(si.dims, 0, si.rank);
	if (total >= (1 << 24))
		return onnx_fail(c, "unsupported: GatherElements over %lld elements (positions are exact below 2^24)",
				 (long long)total);
	v = sx.dims[ax];
	stride = onnx_prod(sx.dims, ax + 1, sx.rank);
	bv = malloc((m ? m : 1) * sizeof(*bv));
	if (!bv)
		return onnx_fail(c, "out of memory");
	for (int64_t e = 0; e < m; e++) {
		int64_t rest = e, p = 0, sd = 1;

		for (int i = si.rank - 1; i >= 0; i--) {
			int64_t coord = rest % si.dims[i];

			rest /= si.dims[i];
			if (i != ax)
				p += coord * sd;
			sd *= sx.dims[i];
		}
		bv[e] = (int32_t)p;
	}
	bs = si;
	base = onnx_chk(c, vtpu_g_constant(c->g, &bs, bv));
	free(bv);
	w = wrap_indices(c, idx, v);
	pos = w < 0 || base < 0 ? -EINVAL :
	      onnx_binary(c, VTPU_ADD, base,
			  stride > 1 ? onnx_binary(c, VTPU_MUL, w,
						   onnx_splat(c, (double)stride, w)) : w);
	pos = pos < 0 ? pos : valid_or_minus_one(c, pos, &w, &v, 1);
	flat = total;
	x = onnx_reshape(c, x, 1, &flat);
	x = gather_dynamic(c, x, 0, pos, false);
	return x < 0 ? x : onnx_reshape(c, x, si.rank, si.dims);
}

/*
 * The row-major position in data's first @k dims of each index tuple of
 * @idx [..., k] (GatherND, ScatterND), negative components wrapped: an
 * s32 value of idx's dims less the last. With @check, a tuple with a
 * component outside its axis gives -1.
 */
static int nd_linear(struct ctx *c, int idx, const struct vtpu_shape *sx,
		     int k, bool check)
{
	struct vtpu_shape si = onnx_shape_of(c, idx);
	int lin = -1, comps[R];
	int64_t stride = 1;

	for (int j = k - 1; j >= 0; j--) {
		int64_t st[R] = { 0 }, lim[R], step[R];
		int comp;

		for (int i = 0; i < si.rank; i++)
			lim[i] = si.dims[i], step[i] = 1;
		st[si.rank - 1] = j, lim[si.rank - 1] = j + 1;
		comp = onnx_chk(c, vtpu_g_slice(c->g, idx, st, lim, step));
		comp = comp < 0 ? comp : onnx_reshape(c, comp, si.rank - 1, si.dims);
		comp = wrap_indices(c, comp, sx->dims[j]);
		comps[j] = comp;
		if (comp >= 0 && stride > 1)
			comp = onnx_binary(c, VTPU_MUL, comp, onnx_splat(c, (double)stride, comp));
		lin = comp < 0 ? comp : lin < 0 ? comp : onnx_binary(c, VTPU_ADD, lin, comp);
		if (lin < 0)
			return lin;
		stride *= sx->dims[j];
	}
	return check ? valid_or_minus_one(c, lin, comps, sx->dims, k) : lin;
}

/* GatherND (batch_dims 0): a run-time Gather of data's first k dims. */
int onnx_op_gathernd(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), idx = onnx_in(c, n, 1), k, lin;
	struct vtpu_shape sx, si;
	int64_t t[R];

	(void)d;
	if (x < 0 || idx < 0)
		return -EINVAL;
	if (onnx_attr_i(n, "batch_dims", 0))
		return onnx_fail(c, "unsupported batch_dims");
	sx = onnx_shape_of(c, x);
	si = onnx_shape_of(c, idx);
	k = si.rank ? (int)si.dims[si.rank - 1] : 0;
	if (si.rank < 1 || k < 1 || k > sx.rank || si.type != VTPU_S32)
		return onnx_fail(c, "indices must be integers [..., k], k <= rank");
	if (onnx_prod(sx.dims, 0, k) >= (1 << 24))
		return onnx_fail(c, "unsupported: GatherND over %lld index tuples (positions are exact below 2^24)",
				 (long long)onnx_prod(sx.dims, 0, k));
	lin = nd_linear(c, idx, &sx, k, true);
	/* data as [prod(dims[:k]), dims[k:]...] */
	t[0] = onnx_prod(sx.dims, 0, k);
	for (int i = k; i < sx.rank; i++)
		t[1 + i - k] = sx.dims[i];
	x = onnx_reshape(c, x, 1 + sx.rank - k, t);
	return onnx_out(c, n, 0, lin < 0 || x < 0 ? -EINVAL :
			gather_dynamic(c, x, 0, lin, false));
}

/*
 * ScatterND (reduction none or add): updates rows written at the index
 * tuples of data viewed as [V = prod(dims[:k]), P], as a masked sum
 * over the M tuples; duplicates add.
 */
int onnx_op_scatternd(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), idx = onnx_in(c, n, 1), upd = onnx_in(c, n, 2), k, lin;
	bool add = onnx_attr_s_is(n, "reduction", "none", "add");
	int mask, sum, hit, y, red[1] = { 0 };
	static const int d0[1] = { 0 }, d01[2] = { 0, 1 }, d02[2] = { 0, 2 };
	struct vtpu_shape sx, si;
	int64_t v, p, m, mvp[3];

	(void)d;
	if (x < 0 || idx < 0 || upd < 0)
		return -EINVAL;
	if (!add && !onnx_attr_s_is(n, "reduction", "none", "none"))
		return onnx_fail(c, "unsupported reduction");
	sx = onnx_shape_of(c, x);
	si = onnx_shape_of(c, idx);
	k = si.rank ? (int)si.dims[si.rank - 1] : 0;
	if (si.rank < 1 || k < 1 || k > sx.rank || si.type != VTPU_S32)
		return onnx_fail(c, "indices must be integers [..., k], k <= rank");
	if (sx.type != VTPU_F32 && sx.type != VTPU_BF16)
		return onnx_fail(c, "unsupported scatter of non-float data");
	v = onnx_prod(sx.dims, 0, k);
	p = onnx_prod(sx.dims, k, sx.rank);
	m = onnx_prod(si.dims, 0, si.rank - 1);
	if (m * v * p > (1 << 24))
		return onnx_fail(c, "unsupported scatter of that size");
	if (onnx_prod(onnx_shape_of(c, upd).dims, 0, onnx_shape_of(c, upd).rank) != m * p)
		return onnx_fail(c, "updates do not match the indices and data");
	lin = nd_linear(c, idx, &sx, k, false);
	lin = lin < 0 ? lin : onnx_reshape(c, lin, 1, &m);
	mvp[0] = m, mvp[1] = v, mvp[2] = p;
	lin = lin < 0 ? lin : onnx_chk(c, vtpu_g_broadcast(c->g, lin, 2, mvp, d0));
	mask = onnx_iota_along(c, v, 2, mvp, 1);
	mask = lin < 0 || mask < 0 ? -EINVAL :
	       onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, lin, mask));
	upd = onnx_reshape(c, upd, 2, (int64_t[2]){ m, p });
	upd = upd < 0 ? upd : onnx_chk(c, vtpu_g_broadcast(c->g, upd, 3, mvp, d02));
	if (mask < 0 || upd < 0)
		return -EINVAL;
	sum = onnx_chk(c, vtpu_g_broadcast(c->g, mask, 3, mvp, d01));
	sum = sum < 0 ? sum : onnx_chk(c, vtpu_g_select(c->g, sum, upd, onnx_splat(c, 0, upd)));
	sum = sum < 0 ? sum : onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP, sum,
							1, red));	/* [V, P] */
	hit = onnx_chk(c, vtpu_g_convert(c->g, mask, VTPU_F32));
	hit = hit < 0 ? hit : onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MAX_OP, hit,
							1, red));	/* [V] */
	hit = hit < 0 ? hit : onnx_chk(c, vtpu_g_broadcast(c->g, hit, 2, mvp + 1, d0));
	hit = hit < 0 ? hit : onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, hit,
							 onnx_splat(c, 0, hit)));
	x = onnx_reshape(c, x, 2, mvp + 1);
	if (sum < 0 || hit < 0 || x < 0)
		return -EINVAL;
	if (add)
		sum = onnx_binary(c, VTPU_ADD, x, sum);
	y = sum < 0 ? sum : onnx_chk(c, vtpu_g_select(c->g, hit, sum, x));
	return onnx_out(c, n, 0, y < 0 ? y : onnx_reshape(c, y, sx.rank, sx.dims));
}

/* Gather with constant indices: take() along axis, then the index shape. */
int onnx_op_gather(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax, rank = 0, ni;
	const struct cval *iv;
	int64_t idx[MAX_TAKE], t[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", 0), s.rank);
	if (ax < 0)
		return ax;
	if (onnx_has_in(n, 1) && onnx_lookup(c, n->input[1]) && !onnx_lookup(c, n->input[1])->c)
		return onnx_out(c, n, 0, gather_dynamic(c, x, ax, onnx_in(c, n, 1),
							true));
	iv = onnx_cin(c, n, 1, "indices");
	if (!iv || (ni = onnx_cv_ints(c, iv, idx, MAX_TAKE, "indices")) < 0)
		return -EINVAL;
	if (!ni)
		return onnx_fail(c, "unsupported empty indices");
	for (int i = 0; i < ni; i++) {
		if (idx[i] < -s.dims[ax] || idx[i] >= s.dims[ax])
			return onnx_fail(c, "index %lld out of range", (long long)idx[i]);
		idx[i] += idx[i] < 0 ? s.dims[ax] : 0;
	}
	if (s.rank - 1 + iv->rank > R)
		return onnx_fail(c, "result rank exceeds %d", R);
	for (int i = 0; i < ax; i++)
		t[rank++] = s.dims[i];
	for (int i = 0; i < iv->rank; i++)
		t[rank++] = iv->dims[i];
	for (int i = ax + 1; i < s.rank; i++)
		t[rank++] = s.dims[i];
	x = onnx_take(c, x, ax, idx, ni);
	return onnx_out(c, n, 0, x < 0 ? x : onnx_reshape(c, x, rank, t));
}

/* ---- GridSample -------------------------------------------------------- */

struct sampler {
	struct ctx *c;
	int x;			/* the input, flat [N * C * H * W] */
	int64_t n, ch, h, w, ho, wo;
	int base;		/* s32 [N, C, 1]: (n C + c) H W */
};

static int gs_k(struct sampler *s, double v, int like)
{
	return onnx_splat(s->c, v, like);
}

static int gs_bin(struct sampler *s, enum vtpu_binary_op op, int a, int b)
{
	return a < 0 || b < 0 ? -EINVAL : onnx_binary(s->c, op, a, b);
}

static int gs_cmp(struct sampler *s, enum vtpu_cmp_dir dir, int a, double b)
{
	return a < 0 ? a : onnx_chk(s->c, vtpu_g_compare(s->c->g, dir, a,
							 gs_k(s, b, a)));
}

/*
 * A normalised coordinate in [-1, 1] (f32 [N, Ho, Wo]) as a pixel
 * coordinate along an axis of @len, with the padding mode's clipping or
 * reflection: PyTorch's grid_sampler_compute_source_index(), which
 * ONNX's GridSample follows.
 */
static int gs_unnormalise(struct sampler *s, int g, int64_t len, bool align)
{
	if (align)	/* (g + 1) / 2 * (len - 1) */
		return gs_bin(s, VTPU_MUL, gs_bin(s, VTPU_ADD, g, gs_k(s, 1, g)),
			      gs_k(s, (len - 1) / 2.0, g));
	/* ((g + 1) * len - 1) / 2 */
	return gs_bin(s, VTPU_MUL, gs_bin(s, VTPU_SUB,
		      gs_bin(s, VTPU_MUL, gs_bin(s, VTPU_ADD, g, gs_k(s, 1, g)),
			     gs_k(s, (double)len, g)), gs_k(s, 1, g)),
		      gs_k(s, 0.5, g));
}

/* A pixel coordinate with the padding mode applied: clipped or reflected. */
static int gs_pad(struct sampler *s, int v, int64_t len, bool align, int pad)
{
	struct ctx *c = s->c;

	if (pad == 2 && v >= 0) {
		/* reflection about [lo, hi]: |v - lo| folded by the span */
		double lo = align ? 0 : -0.5, span = align ? len - 1 : len;
		int a, flips, extra, odd;

		if (span <= 0)
			return gs_k(s, 0, v);
		a = onnx_chk(c, vtpu_g_unary(c->g, VTPU_ABS,
					     gs_bin(s, VTPU_SUB, v, gs_k(s, lo, v))));
		flips = onnx_chk(c, compose_round(c->g, gs_bin(s, VTPU_DIV, a,
						  gs_k(s, span, a)), ROUND_FLOOR));
		extra = gs_bin(s, VTPU_SUB, a, gs_bin(s, VTPU_MUL, flips,
						      gs_k(s, span, a)));
		odd = onnx_chk(c, compose_mod(c->g, flips, gs_k(s, 2, a), true));
		odd = gs_cmp(s, VTPU_EQ, odd, 1);
		v = odd < 0 ? odd : onnx_chk(c, vtpu_g_select(c->g, odd,
			gs_bin(s, VTPU_SUB, gs_k(s, span + lo, extra), extra),
			gs_bin(s, VTPU_ADD, extra, gs_k(s, lo, extra))));
	}
	if (pad >= 1) {	/* border, and reflection's result: clipped */
		v = gs_bin(s, VTPU_MAX, v, gs_k(s, 0, v));
		v = gs_bin(s, VTPU_MIN, v, gs_k(s, (double)(len - 1), v));
	}
	return v;
}

static int gs_coord(struct sampler *s, int g, int64_t len, bool align,
		    int pad)
{
	return gs_pad(s, gs_unnormalise(s, g, len, align), len, align, pad);
}

/*
 * The cubic convolution weight (A = -0.75, PyTorch's and ONNX's) of tap
 * @k (0..3) at fraction @t past the second tap.
 */
static int gs_cubic(struct sampler *s, int t, int k)
{
	const double A = -0.75;
	int u = k == 0 ? gs_bin(s, VTPU_ADD, t, gs_k(s, 1, t)) :
		k == 1 ? t :
		k == 2 ? gs_bin(s, VTPU_SUB, gs_k(s, 1, t), t) :
		gs_bin(s, VTPU_SUB, gs_k(s, 2, t), t);

	if (k == 1 || k == 2)	/* ((A + 2) u - (A + 3)) u u + 1 */
		return gs_bin(s, VTPU_ADD, gs_bin(s, VTPU_MUL, gs_bin(s, VTPU_MUL,
			gs_bin(s, VTPU_SUB, gs_bin(s, VTPU_MUL, u, gs_k(s, A + 2, u)),
			       gs_k(s, A + 3, u)), u), u), gs_k(s, 1, u));
	/* ((A u - 5A) u + 8A) u - 4A */
	return gs_bin(s, VTPU_SUB, gs_bin(s, VTPU_MUL, gs_bin(s, VTPU_ADD,
		gs_bin(s, VTPU_MUL, gs_bin(s, VTPU_SUB,
		       gs_bin(s, VTPU_MUL, u, gs_k(s, A, u)), gs_k(s, 5 * A, u)), u),
		gs_k(s, 8 * A, u)), u), gs_k(s, 4 * A, u));
}

/*
 * One corner: the input at integral pixel (@yi, @xi) (f32 [N, Ho, Wo])
 * times @wt, zero where the pixel lies outside; [N, C, Ho, Wo].
 */
static int gs_corner(struct sampler *s, int yi, int xi, int wt)
{
	struct ctx *c = s->c;
	int64_t pd[3] = { s->n, 1, s->ho * s->wo }, od[4];
	int64_t flat = s->n * s->ch * s->ho * s->wo;
	int in, yc, xc, p, v, k;

	/* in bounds: both coordinates; the weight is zero outside */
	in = gs_cmp(s, VTPU_GE, yi, 0);
	k = gs_cmp(s, VTPU_LE, yi, (double)(s->h - 1));
	in = in < 0 || k < 0 ? -EINVAL : onnx_chk(c, vtpu_g_select(c->g, in, k, in));
	k = gs_cmp(s, VTPU_GE, xi, 0);
	in = in < 0 || k < 0 ? -EINVAL : onnx_chk(c, vtpu_g_select(c->g, in, k, in));
	k = gs_cmp(s, VTPU_LE, xi, (double)(s->w - 1));
	in = in < 0 || k < 0 ? -EINVAL : onnx_chk(c, vtpu_g_select(c->g, in, k, in));
	wt = in < 0 ? in : onnx_chk(c, vtpu_g_select(c->g, in, wt, gs_k(s, 0, wt)));
	/*
	 * The pixel to read: pixel 0 where it lies outside (its weight is
	 * zero), so that no index, not even a NaN or huge coordinate's,
	 * leaves the input
	 */
	yc = in < 0 ? in : onnx_chk(c, vtpu_g_select(c->g, in, yi, gs_k(s, 0, yi)));
	xc = in < 0 ? in : onnx_chk(c, vtpu_g_select(c->g, in, xi, gs_k(s, 0, xi)));
	p = gs_bin(s, VTPU_ADD, gs_bin(s, VTPU_MUL, yc, gs_k(s, (double)s->w, yc)),
		   xc);
	p = p < 0 ? p : onnx_chk(c, vtpu_g_convert(c->g, p, VTPU_S32));
	p = p < 0 ? p : onnx_reshape(c, p, 3, pd);
	p = gs_bin(s, VTPU_ADD, s->base, p);
	p = p < 0 ? p : onnx_reshape(c, p, 1, &flat);
	v = gather_dynamic(c, s->x, 0, p, false);
	od[0] = s->n, od[1] = s->ch, od[2] = s->ho, od[3] = s->wo;
	v = v < 0 ? v : onnx_reshape(c, v, 4, od);
	od[1] = 1;
	wt = wt < 0 ? wt : onnx_reshape(c, wt, 4, od);
	return gs_bin(s, VTPU_MUL, v, wt);
}

/*
 * GridSample (opset 16; opset 20's names too) of a 4-D input: each
 * output pixel samples the input where the grid points, bilinearly (four
 * corners, each read by the device's indexed DMA), bicubically (16) or
 * at the nearest pixel (halves to even), with zeros, border or
 * reflection padding, in f32. Positions are computed in s32, which the device does
 * in f32: the input is refused from 2^24 elements.
 */
int onnx_op_grid_sample(struct ctx *c, node_t *n, const struct opdef *d)
{
	struct sampler s = { .c = c };
	int x = onnx_in(c, n, 0), g = onnx_in(c, n, 1), gx, gy, ix, iy, y;
	bool align = onnx_attr_i(n, "align_corners", 0) != 0;
	bool nearest = onnx_attr_s_is(n, "mode", "bilinear", "nearest"), cubic;
	int pad = onnx_attr_s_is(n, "padding_mode", "zeros", "border") ? 1 :
		  onnx_attr_s_is(n, "padding_mode", "zeros", "reflection") ? 2 : 0;
	struct vtpu_shape sx, sg;
	int64_t st[R] = { 0 }, lim[R], step[R] = { 1, 1, 1, 1 }, t[3];
	int32_t *bv;

	(void)d;
	if (x < 0 || g < 0)
		return -EINVAL;
	cubic = onnx_attr_s_is(n, "mode", "bilinear", "bicubic") ||
		onnx_attr_s_is(n, "mode", "bilinear", "cubic");
	if (!nearest && !cubic &&
	    !onnx_attr_s_is(n, "mode", "bilinear", "bilinear") &&
	    !onnx_attr_s_is(n, "mode", "bilinear", "linear"))
		return onnx_fail(c, "unsupported mode");
	if (!pad && !onnx_attr_s_is(n, "padding_mode", "zeros", "zeros"))
		return onnx_fail(c, "unsupported padding_mode");
	sx = onnx_shape_of(c, x);
	sg = onnx_shape_of(c, g);
	if (sx.rank != 4 || sg.rank != 4 || sg.dims[0] != sx.dims[0] ||
	    sg.dims[3] != 2)
		return onnx_fail(c, "wants X [N, C, H, W] and grid [N, Ho, Wo, 2]");
	if (sx.type != VTPU_F32 || sg.type != VTPU_F32)
		return onnx_fail(c, "unsupported type (f32 only)");
	s.n = sx.dims[0], s.ch = sx.dims[1], s.h = sx.dims[2], s.w = sx.dims[3];
	s.ho = sg.dims[1], s.wo = sg.dims[2];
	if (onnx_prod(sx.dims, 0, 4) >= (1 << 24))
		return onnx_fail(c, "unsupported: GridSample of %lld elements (positions are exact below 2^24)",
				 (long long)onnx_prod(sx.dims, 0, 4));
	t[0] = onnx_prod(sx.dims, 0, 4);
	s.x = onnx_reshape(c, x, 1, t);
	bv = malloc(s.n * s.ch * sizeof(*bv));
	if (!bv)
		return onnx_fail(c, "out of memory");
	for (int64_t i = 0; i < s.n * s.ch; i++)
		bv[i] = (int32_t)(i * s.h * s.w);
	t[0] = s.n, t[1] = s.ch, t[2] = 1;
	s.base = onnx_chk(c, vtpu_g_constant(c->g, &(struct vtpu_shape){
		VTPU_S32, 3, { s.n, s.ch, 1 } }, bv));
	free(bv);
	/* the grid's x and y, [N, Ho, Wo] each */
	for (int i = 0; i < 4; i++)
		lim[i] = sg.dims[i];
	lim[3] = 1;
	t[0] = s.n, t[1] = s.ho, t[2] = s.wo;
	gx = onnx_chk(c, vtpu_g_slice(c->g, g, st, lim, step));
	gx = gx < 0 ? gx : onnx_reshape(c, gx, 3, t);
	st[3] = 1, lim[3] = 2;
	gy = onnx_chk(c, vtpu_g_slice(c->g, g, st, lim, step));
	gy = gy < 0 ? gy : onnx_reshape(c, gy, 3, t);
	if (s.x < 0 || s.base < 0 || gx < 0 || gy < 0)
		return -EINVAL;
	if (cubic) {
		/*
		 * 4 x 4 taps around the unnormalised point, each coordinate
		 * padded on its own (PyTorch's get_value_bounded())
		 */
		int x0, y0, tx, ty, wx[4], wy[4], xs[4], ys[4];

		ix = gs_unnormalise(&s, gx, s.w, align);
		iy = gs_unnormalise(&s, gy, s.h, align);
		x0 = ix < 0 ? ix : onnx_chk(c, compose_round(c->g, ix, ROUND_FLOOR));
		y0 = iy < 0 ? iy : onnx_chk(c, compose_round(c->g, iy, ROUND_FLOOR));
		tx = gs_bin(&s, VTPU_SUB, ix, x0);
		ty = gs_bin(&s, VTPU_SUB, iy, y0);
		for (int k = 0; k < 4; k++) {
			wx[k] = gs_cubic(&s, tx, k);
			wy[k] = gs_cubic(&s, ty, k);
			xs[k] = gs_pad(&s, gs_bin(&s, VTPU_ADD, x0, gs_k(&s, k - 1, ix)),
				       s.w, align, pad);
			ys[k] = gs_pad(&s, gs_bin(&s, VTPU_ADD, y0, gs_k(&s, k - 1, iy)),
				       s.h, align, pad);
		}
		y = -EINVAL;
		for (int i = 0; i < 4; i++) {
			int row = -EINVAL;

			for (int j = 0; j < 4; j++) {
				int v = gs_corner(&s, ys[i], xs[j], wx[j]);

				row = j ? gs_bin(&s, VTPU_ADD, row, v) : v;
			}
			row = gs_bin(&s, VTPU_MUL, row, onnx_reshape(c, wy[i], 4,
				(int64_t[4]){ s.n, 1, s.ho, s.wo }));
			y = i ? gs_bin(&s, VTPU_ADD, y, row) : row;
		}
		return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
	}
	ix = gs_coord(&s, gx, s.w, align, pad);
	iy = gs_coord(&s, gy, s.h, align, pad);
	if (ix < 0 || iy < 0)
		return -EINVAL;
	if (nearest) {
		ix = onnx_chk(c, compose_round(c->g, ix, ROUND_EVEN));
		iy = onnx_chk(c, compose_round(c->g, iy, ROUND_EVEN));
		y = gs_corner(&s, iy, ix, gs_k(&s, 1, ix));
	} else {
		int x0 = onnx_chk(c, compose_round(c->g, ix, ROUND_FLOOR));
		int y0 = onnx_chk(c, compose_round(c->g, iy, ROUND_FLOOR));
		int x1 = gs_bin(&s, VTPU_ADD, x0, gs_k(&s, 1, ix));
		int y1 = gs_bin(&s, VTPU_ADD, y0, gs_k(&s, 1, iy));
		int wx1 = gs_bin(&s, VTPU_SUB, ix, x0), wy1 = gs_bin(&s, VTPU_SUB, iy, y0);
		int wx0 = gs_bin(&s, VTPU_SUB, gs_k(&s, 1, ix), wx1);
		int wy0 = gs_bin(&s, VTPU_SUB, gs_k(&s, 1, iy), wy1);

		y = gs_corner(&s, y0, x0, gs_bin(&s, VTPU_MUL, wy0, wx0));
		y = gs_bin(&s, VTPU_ADD, y, gs_corner(&s, y0, x1,
					gs_bin(&s, VTPU_MUL, wy0, wx1)));
		y = gs_bin(&s, VTPU_ADD, y, gs_corner(&s, y1, x0,
					gs_bin(&s, VTPU_MUL, wy1, wx0)));
		y = gs_bin(&s, VTPU_ADD, y, gs_corner(&s, y1, x1,
					gs_bin(&s, VTPU_MUL, wy1, wx1)));
	}
	return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
}
