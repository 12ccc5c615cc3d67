// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * lower.c - rewrites the high-level ops into the primitive ones codegen.c
 * emits: every layout change becomes one strided P_COPY (or nothing, when
 * it does not move data), contractions become a batched P_MATMUL,
 * reductions become P_REDUCE_LAST over the last axis of a rank-2 view.
 *
 * Each rule appends its nodes, then the old node's uses move to the new
 * result and the old node dies; ir_compact() restores topological order.
 * ir_add() may move g->nodes, so rules work on copies of node data, not
 * on pointers into the array.
 */
#include <errno.h>
#include <string.h>

#include "ir.h"

/* Row-major element strides of @s. */
static void rm_strides(const struct vtpu_shape *s, int64_t *st)
{
	int64_t acc = 1;
	int i;

	for (i = s->rank - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= s->dims[i];
	}
}

static struct vtpu_shape mkshape(enum vtpu_type t, int rank,
				 const int64_t *dims)
{
	struct vtpu_shape s = { .type = t, .rank = rank };

	memcpy(s.dims, dims, rank * sizeof(dims[0]));
	return s;
}

static const struct vtpu_shape *shape_of(struct ir_graph *g, int v)
{
	return &g->nodes[v].shape;
}

static int add_copy(struct ir_graph *g, int x, int rank, const int64_t *dims,
		    const struct ir_view *v)
{
	struct vtpu_shape s;
	int id;

	if (x < 0)
		return x;
	s = mkshape(shape_of(g, x)->type, rank, dims);
	id = ir_add(g, OP_P_COPY, &s, 1, &x);
	if (id >= 0)
		g->nodes[id].a.view = *v;
	return id;
}

/* A RESHAPE is an alias, but a no-op one is still noise in dumps. */
static int add_reshape(struct ir_graph *g, int x, int rank, const int64_t *dims)
{
	struct vtpu_shape s;

	if (x < 0)
		return x;
	s = mkshape(shape_of(g, x)->type, rank, dims);
	if (dims_eq(&s, shape_of(g, x)))
		return x;
	return ir_add(g, OP_RESHAPE, &s, 1, &x);
}

static int add_ew(struct ir_graph *g, enum ir_op op, int a, int b)
{
	struct vtpu_shape s;
	int in[2] = { a, b };

	if (a < 0 || b < 0)
		return a < 0 ? a : b;
	s = *shape_of(g, a);
	return ir_add(g, op, &s, ir_ops[op].kind == K_EW1 ? 1 : 2, in);
}

static int add_convert(struct ir_graph *g, int x, enum vtpu_type t)
{
	struct vtpu_shape s;

	if (x < 0 || shape_of(g, x)->type == t)
		return x;
	s = *shape_of(g, x);
	s.type = t;
	return ir_add(g, OP_CONVERT, &s, 1, &x);
}

/*
 * Whether permuting @xs by @perm moves bytes: not when the dimensions
 * that change place all have size 1.
 */
static bool perm_moves(const struct vtpu_shape *xs, const int *perm)
{
	int i, last = -1;

	for (i = 0; i < xs->rank; i++) {
		if (xs->dims[perm[i]] == 1)
			continue;
		if (perm[i] < last)
			return true;
		last = perm[i];
	}
	return false;
}

/*
 * Result dimension i is @x's dimension @perm[i]: a P_COPY, or just a
 * RESHAPE (or nothing) when no byte moves.
 */
static int add_permute(struct ir_graph *g, int x, const int *perm)
{
	int64_t st[VTPU_MAX_RANK], dims[VTPU_MAX_RANK];
	struct ir_view v = { 0 };
	struct vtpu_shape xs;
	int i;

	if (x < 0)
		return x;
	xs = *shape_of(g, x);
	rm_strides(&xs, st);
	for (i = 0; i < xs.rank; i++) {
		dims[i] = xs.dims[perm[i]];
		v.stride[i] = st[perm[i]];
	}
	if (!perm_moves(&xs, perm))
		return add_reshape(g, x, xs.rank, dims);
	return add_copy(g, x, xs.rank, dims, &v);
}

/* @value of type @t repeated over @dims: a scalar CONST seen with stride 0. */
static int add_fill(struct ir_graph *g, enum vtpu_type t, double value,
		    int rank, const int64_t *dims)
{
	struct vtpu_shape s = { .type = t, .rank = 0 };
	struct ir_view v = { 0 };
	float f = value;
	uint16_t h = vtpu_f32_to_bf16(f);
	void *data;
	int c;

	if (t != VTPU_F32 && t != VTPU_BF16)
		return ir_error(g, EINVAL, "lower: no %s fill constant",
				type_name(t));
	data = ir_alloc(g, type_size(t));
	if (!data)
		return ir_error(g, ENOMEM, "out of memory");
	memcpy(data, t == VTPU_F32 ? (void *)&f : (void *)&h, type_size(t));
	c = ir_add(g, OP_CONST, &s, 0, NULL);
	if (c < 0)
		return c;
	g->nodes[c].a.cst.data = data;
	return add_copy(g, c, rank, dims, &v);
}

/* BROADCAST: size-1 and new dimensions read one element: stride 0. */
static int lower_broadcast(struct ir_graph *g, const struct ir_node *n)
{
	struct vtpu_shape xs = *shape_of(g, n->in[0]);
	int64_t st[VTPU_MAX_RANK];
	struct ir_view v = { 0 };
	int i;

	rm_strides(&xs, st);
	for (i = 0; i < xs.rank; i++)
		if (xs.dims[i] != 1)
			v.stride[n->a.bcast.dims[i]] = st[i];
	return add_copy(g, n->in[0], n->shape.rank, n->shape.dims, &v);
}

static int lower_transpose(struct ir_graph *g, const struct ir_node *n)
{
	return add_permute(g, n->in[0], n->a.transpose.perm);
}

static int lower_slice(struct ir_graph *g, const struct ir_node *n)
{
	struct vtpu_shape xs = *shape_of(g, n->in[0]);
	int64_t st[VTPU_MAX_RANK];
	struct ir_view v = { 0 };
	int i;

	rm_strides(&xs, st);
	for (i = 0; i < xs.rank; i++) {
		v.offset += n->a.slice.start[i] * st[i];
		v.stride[i] = n->a.slice.stride[i] * st[i];
	}
	return add_copy(g, n->in[0], n->shape.rank, n->shape.dims, &v);
}

/*
 * One DOT operand as a rank-3 P_MATMUL operand. Its natural layout is
 * [batch, free, contract] (@contract_last, the lhs) or [batch, contract,
 * free] (the rhs); when the operand already is in the other layout,
 * P_MATMUL's transpose flag saves the copy, which *@trans reports.
 * *@fsize gets the product of the free dimensions.
 */
static int dot_operand(struct ir_graph *g, int x, int nb, const int *batch,
		       int nc, const int *contract, bool contract_last,
		       bool *trans, int64_t *fsize)
{
	struct vtpu_shape xs = *shape_of(g, x);
	int pl[VTPU_MAX_RANK], pf[VTPU_MAX_RANK], fr[VTPU_MAX_RANK];
	int64_t b = 1, k = 1, dims[3];
	uint32_t used = 0;
	int i, nf = 0, id;

	for (i = 0; i < nb; i++) {
		used |= 1u << batch[i];
		b *= xs.dims[batch[i]];
		pl[i] = pf[i] = batch[i];
	}
	for (i = 0; i < nc; i++) {
		used |= 1u << contract[i];
		k *= xs.dims[contract[i]];
	}
	*fsize = 1;
	for (i = 0; i < xs.rank; i++)
		if (!(used & (1u << i))) {
			*fsize *= xs.dims[i];
			fr[nf++] = i;
		}
	/* pl: contract last; pf: contract first */
	memcpy(pl + nb, fr, nf * sizeof(int));
	memcpy(pl + nb + nf, contract, nc * sizeof(int));
	memcpy(pf + nb, contract, nc * sizeof(int));
	memcpy(pf + nb + nc, fr, nf * sizeof(int));

	*trans = perm_moves(&xs, contract_last ? pl : pf) &&
		 !perm_moves(&xs, contract_last ? pf : pl);
	id = add_permute(g, x, contract_last != *trans ? pl : pf);
	dims[0] = b;
	dims[1] = contract_last != *trans ? *fsize : k;
	dims[2] = contract_last != *trans ? k : *fsize;
	return add_reshape(g, id, 3, dims);
}

/*
 * DOT: [B,M,K] x [B,K,N] with B, M, K, N products of the batch, free and
 * contracting dimensions; the XLA result order (batch, lhs free, rhs
 * free) is that of [B,M,N] in memory, so a RESHAPE ends it.
 */
static int lower_dot(struct ir_graph *g, const struct ir_node *n)
{
	const struct vtpu_dot_dims *d = &n->a.dot;
	struct vtpu_shape s;
	int64_t m, nn;
	bool ta, tb;
	int in[2], id;

	in[0] = dot_operand(g, n->in[0], d->nbatch, d->lhs_batch, d->ncontract,
			    d->lhs_contract, true, &ta, &m);
	if (in[0] < 0)
		return in[0];
	in[1] = dot_operand(g, n->in[1], d->nbatch, d->rhs_batch, d->ncontract,
			    d->rhs_contract, false, &tb, &nn);
	if (in[1] < 0)
		return in[1];
	s = *shape_of(g, in[0]);
	s.type = VTPU_F32;
	s.dims[1] = m;
	s.dims[2] = nn;
	id = ir_add(g, OP_P_MATMUL, &s, 2, in);
	if (id < 0)
		return id;
	g->nodes[id].a.mm.trans_a = ta;
	g->nodes[id].a.mm.trans_b = tb;
	id = add_convert(g, id, n->shape.type);
	return add_reshape(g, id, n->shape.rank, n->shape.dims);
}

/*
 * The im2col matrices of all groups as one rank-6 strided view of the
 * padded input @x: [C, KH, KW, N, OH, OW]. Channel c of group k is
 * channel k*C/g + c, so as [g, C/g*KH*KW, N*OH*OW] its rows are in the
 * kernel's own (c, kh, kw) order and the kernel needs no copy.
 */
static int im2col(struct ir_graph *g, int x, const struct vtpu_conv_params *p,
		  const struct vtpu_shape *ks, const struct vtpu_shape *out)
{
	const struct vtpu_shape *xs = shape_of(g, x);
	int64_t hp = xs->dims[2], wp = xs->dims[3];
	int64_t dims[6] = { xs->dims[1], ks->dims[2], ks->dims[3],
			    out->dims[0], out->dims[2], out->dims[3] };
	struct ir_view v = {
		.stride = { hp * wp, p->dilation[0] * wp, p->dilation[1],
			    xs->dims[1] * hp * wp, p->stride[0] * wp,
			    p->stride[1] },
	};

	return add_copy(g, x, 6, dims, &v);
}

static int conv_pad(struct ir_graph *g, int x, const struct vtpu_conv_params *p)
{
	struct vtpu_shape s = *shape_of(g, x);
	int id, i;

	if (!p->pad_lo[0] && !p->pad_lo[1] && !p->pad_hi[0] && !p->pad_hi[1])
		return x;
	for (i = 0; i < 2; i++)
		s.dims[2 + i] += p->pad_lo[i] + p->pad_hi[i];
	id = ir_add(g, OP_PAD, &s, 1, &x);
	if (id < 0)
		return id;
	for (i = 0; i < 2; i++) {
		g->nodes[id].a.pad.lo[2 + i] = p->pad_lo[i];
		g->nodes[id].a.pad.hi[2 + i] = p->pad_hi[i];
	}
	return id;
}

/*
 * A depthwise CONV (one kernel per channel, as MobileNet's) is P_DWCONV:
 * as a matmul it would be C products of one row each, after an im2col
 * copy KH*KW times the input's size; codegen's own kernel multiplies
 * shifted windows of the input in VMEM instead (dwconv.c).
 */
static bool is_depthwise(struct ir_graph *g, const struct ir_node *n)
{
	const struct vtpu_conv_params *p = &n->a.conv;
	const struct vtpu_shape *ks = shape_of(g, n->in[1]);
	const struct vtpu_shape *xs = shape_of(g, n->in[0]);
	int64_t wp = xs->dims[3] + p->pad_lo[1] + p->pad_hi[1] + p->stride[1];
	int64_t rows = (ks->dims[2] - 1) * p->dilation[0] + p->stride[0];

	/*
	 * dwconv.c's phases are bit masks (32 at most) and a band of one
	 * output row must fit any VMEM; wider windows stay on the matmul
	 * path, which tiles anything.
	 */
	return p->groups == xs->dims[1] && ks->dims[0] == p->groups &&
	       ks->dims[1] == 1 && p->stride[0] <= 32 && p->stride[1] <= 32 &&
	       wp * rows <= DWCONV_MAX_BAND;
}

static int lower_dwconv(struct ir_graph *g, const struct ir_node *n)
{
	struct vtpu_shape s = n->shape;
	int id;

	s.type = VTPU_F32;
	id = ir_add(g, OP_P_DWCONV, &s, 2, n->in);
	if (id < 0)
		return id;
	g->nodes[id].a.conv = n->a.conv;
	return add_convert(g, id, n->shape.type);
}

/*
 * The kernel taps along one axis that read some input for some output:
 * tap k reads input o * s + k * d - pad for o in [0, O). Returns them as
 * [*k0, *k1], and false when none does.
 */
static bool live_taps(int64_t in, int64_t out, int64_t taps, int s, int d,
		      int pad, int64_t *k0, int64_t *k1)
{
	int64_t k, o;

	*k0 = -1;
	for (k = 0; k < taps; k++) {
		/* the first output whose row is not above the input */
		o = pad - k * d > 0 ? (pad - k * d + s - 1) / s : 0;
		if (o < out && o * s + k * d - pad < in) {
			if (*k0 < 0)
				*k0 = k;
			*k1 = k;
		}
	}
	return *k0 >= 0;
}

/*
 * A convolution whose outer taps only ever read padding (an atrous
 * convolution with a dilation as large as its input: DeepLab's ASPP at
 * 36 on a 7x7 map is a 1x1 convolution) keeps only the taps that read
 * input: a smaller kernel, less padding, the same output. The dropped
 * products are 0 * w; leaving them out changes no sum but the sign of a
 * zero one (and a NaN or infinite weight's NaN). Returns the new
 * CONV's id, 0 when nothing can be dropped.
 */
static int trim_conv(struct ir_graph *g, const struct ir_node *n)
{
	const struct vtpu_conv_params *p = &n->a.conv;
	const struct vtpu_shape *xs = shape_of(g, n->in[0]);
	struct vtpu_shape ks = *shape_of(g, n->in[1]);
	struct vtpu_conv_params q = *p;
	int64_t k0[2], k1[2], kn[2], ext;
	const struct ir_node *w = &g->nodes[n->in[1]];
	int i, id, wid, in[2];

	if (ks.rank != 4)
		return 0;
	for (i = 0; i < 2; i++) {
		if (!live_taps(xs->dims[2 + i], n->shape.dims[2 + i],
			       ks.dims[2 + i], p->stride[i], p->dilation[i],
			       p->pad_lo[i], &k0[i], &k1[i]))
			return 0;
		kn[i] = k1[i] - k0[i] + 1;
		q.pad_lo[i] = p->pad_lo[i] - (int)(k0[i] * p->dilation[i]);
		/* the padded extent the same outputs need */
		ext = (n->shape.dims[2 + i] - 1) * p->stride[i] +
		      (kn[i] - 1) * p->dilation[i] + 1;
		q.pad_hi[i] = (int)(ext - xs->dims[2 + i] - q.pad_lo[i]);
		if (q.pad_lo[i] < 0 || q.pad_hi[i] < 0)
			return 0;
		if (kn[i] == 1)
			q.dilation[i] = 1;
	}
	if (kn[0] == ks.dims[2] && kn[1] == ks.dims[3])
		return 0;
	ks.dims[2] = kn[0];
	ks.dims[3] = kn[1];
	if (w->op == OP_CONST && w->a.cst.data) {
		/* a constant kernel is cut here: fold.c has run already */
		size_t es = type_size(ks.type);
		const uint8_t *src = w->a.cst.data;
		int64_t KH = w->shape.dims[2], KW = w->shape.dims[3], oi, r, c;
		uint8_t *dst = ir_alloc(g, shape_elems(&ks) * es), *o;

		if (!dst)
			return -ENOMEM;
		for (oi = 0, o = dst; oi < ks.dims[0] * ks.dims[1]; oi++)
			for (r = k0[0]; r <= k1[0]; r++)
				for (c = k0[1]; c <= k1[1]; c++, o += es)
					memcpy(o, src + ((oi * KH + r) * KW + c) * es,
					       es);
		wid = ir_add(g, OP_CONST, &ks, 0, NULL);
		if (wid < 0)
			return wid;
		g->nodes[wid].a.cst.data = dst;
	} else {
		/* lowered here: the pass does not visit nodes it adds */
		struct ir_node sl = { .op = OP_SLICE, .shape = ks, .nin = 1,
				      .in = &in[1] };

		in[1] = n->in[1];
		for (i = 0; i < 4; i++) {
			sl.a.slice.start[i] = i < 2 ? 0 : k0[i - 2];
			sl.a.slice.limit[i] = i < 2 ? ks.dims[i] : k1[i - 2] + 1;
			sl.a.slice.stride[i] = 1;
		}
		wid = lower_slice(g, &sl);
		if (wid < 0)
			return wid;
	}
	in[0] = n->in[0];
	in[1] = wid;
	id = ir_add(g, OP_CONV, &n->shape, 2, in);
	if (id < 0)
		return id;
	g->nodes[id].a.conv = q;
	return id;
}

/*
 * CONV as one matmul batched over the groups: the kernel [O, C/g, KH, KW]
 * is [g, O/g, C/g*KH*KW] in memory, the im2col view [g, C/g*KH*KW,
 * N*OH*OW]; their product is [O, N, OH, OW], transposed to NCHW (only a
 * RESHAPE when N is 1).
 */
static int lower_conv(struct ir_graph *g, const struct ir_node *n)
{
	const struct vtpu_conv_params *p = &n->a.conv;
	struct vtpu_shape ks = *shape_of(g, n->in[1]), out = n->shape;
	int64_t grp = p->groups, og = ks.dims[0] / grp;
	int64_t kc = ks.dims[1] * ks.dims[2] * ks.dims[3];
	int64_t np = out.dims[0] * out.dims[2] * out.dims[3];
	int64_t wdims[3] = { grp, og, kc }, cdims[3] = { grp, kc, np };
	int64_t odims[4] = { out.dims[1], out.dims[0], out.dims[2],
			     out.dims[3] };
	struct vtpu_shape ms = { .type = VTPU_F32, .rank = 3,
				 .dims = { grp, og, np } };
	static const int nchw[4] = { 1, 0, 2, 3 };
	int in[2], id;

	id = trim_conv(g, n);
	if (id) {
		struct ir_node t;

		if (id < 0)
			return id;
		t = g->nodes[id];
		return lower_conv(g, &t);
	}
	if (is_depthwise(g, n))
		return lower_dwconv(g, n);
	id = conv_pad(g, n->in[0], p);
	if (id < 0)
		return id;
	in[1] = add_reshape(g, im2col(g, id, p, &ks, &out), 3, cdims);
	in[0] = add_reshape(g, n->in[1], 3, wdims);
	id = ir_add(g, OP_P_MATMUL, &ms, 2, in);
	id = add_convert(g, id, out.type);
	id = add_reshape(g, id, 4, odims);
	return add_permute(g, id, nchw);
}

/*
 * Reduces @x over the axes in @axes with @op: the reduced axes move to
 * the end (a no-op when they are there), the view becomes [R, C] and
 * P_REDUCE_LAST gives [R]; MEAN is SUM times 1/C. Returns a value of the
 * result dims (the kept axes in order).
 */
static int reduce_axes(struct ir_graph *g, int x, uint32_t axes,
		       enum vtpu_reduce_op op)
{
	struct vtpu_shape xs = *shape_of(g, x), rs = { .type = xs.type };
	int perm[VTPU_MAX_RANK], np = 0, i, id;
	int64_t rc[2] = { 1, 1 };

	if (!axes)
		return x;
	for (i = 0; i < xs.rank; i++)
		if (!(axes & (1u << i))) {
			perm[np++] = i;
			rc[0] *= xs.dims[i];
			rs.dims[rs.rank++] = xs.dims[i];
		}
	for (i = 0; i < xs.rank; i++)
		if (axes & (1u << i)) {
			perm[np++] = i;
			rc[1] *= xs.dims[i];
		}
	id = add_permute(g, x, perm);
	id = add_reshape(g, id, 2, rc);
	if (id < 0)
		return id;
	id = ir_add(g, OP_P_REDUCE_LAST, &(struct vtpu_shape){
		.type = xs.type, .rank = 1, .dims = { rc[0] } }, 1, &id);
	if (id < 0)
		return id;
	g->nodes[id].a.rl.op = op == VTPU_REDUCE_MEAN_OP ? VTPU_REDUCE_SUM_OP
							 : op;
	if (op == VTPU_REDUCE_MEAN_OP)
		id = add_ew(g, OP_MUL, id,
			    add_fill(g, xs.type, 1.0 / rc[1], 1, rc));
	return add_reshape(g, id, rs.rank, rs.dims);
}

static int lower_reduce(struct ir_graph *g, const struct ir_node *n)
{
	return reduce_axes(g, n->in[0], n->a.reduce.axes, n->a.reduce.op);
}

/* @r (the dims of @s without @axis) seen again with stride 0 along @axis. */
static int expand(struct ir_graph *g, int r, const struct vtpu_shape *s,
		  int axis)
{
	int64_t st[VTPU_MAX_RANK];
	struct ir_view v = { 0 };
	int i, k = 0;

	if (r < 0)
		return r;
	rm_strides(shape_of(g, r), st);
	for (i = 0; i < s->rank; i++)
		if (i != axis)
			v.stride[i] = st[k++];
	return add_copy(g, r, s->rank, s->dims, &v);
}

/*
 * softmax(x) = exp(x - max) / sum(exp(x - max)); subtracting the max keeps
 * exp() finite. log_softmax = (x - max) - log(sum): the log is taken on
 * the reduced value, before it is broadcast.
 */
static int lower_softmax(struct ir_graph *g, const struct ir_node *n)
{
	int axis = n->a.softmax.axis, x = n->in[0], d, e, s;
	uint32_t axes = 1u << axis;

	d = add_ew(g, OP_SUB, x,
		   expand(g, reduce_axes(g, x, axes, VTPU_REDUCE_MAX_OP),
			  &n->shape, axis));
	e = add_ew(g, OP_EXP, d, d);
	if (e < 0)
		return e;
	s = reduce_axes(g, e, axes, VTPU_REDUCE_SUM_OP);
	if (n->op == OP_LOG_SOFTMAX)
		return add_ew(g, OP_SUB, d,
			      expand(g, add_ew(g, OP_LOG, s, s), &n->shape,
				     axis));
	return add_ew(g, OP_DIV, e, expand(g, s, &n->shape, axis));
}

/*
 * x^k for a constant k in {-1, 2, 3, 4} as multiplies (and a division):
 * POW is exp(k log|x|) in double, 20 times the cost of a multiply, and
 * LayerNorm's variance and the tanh GELU are Pow(x, 2) and Pow(x, 3).
 * x^2 and x^-1 come out correctly rounded (POW promises 1 ulp), x^3 and
 * x^4 within 2 ulp (two roundings); signs, zeros, infinities and NaN are
 * POW's. 0: not such a power, POW stays.
 */
static int lower_pow(struct ir_graph *g, const struct ir_node *n)
{
	int x = n->in[0], sq;

	if (n->shape.type != VTPU_F32 && n->shape.type != VTPU_BF16)
		return 0;
	if (ir_all_equal(g, n->in[1], -1))
		return add_ew(g, OP_DIV, add_fill(g, n->shape.type, 1,
						  n->shape.rank, n->shape.dims), x);
	if (ir_all_equal(g, n->in[1], 2))
		return add_ew(g, OP_MUL, x, x);
	if (ir_all_equal(g, n->in[1], 3)) {
		sq = add_ew(g, OP_MUL, x, x);
		return add_ew(g, OP_MUL, sq, x);
	}
	if (ir_all_equal(g, n->in[1], 4)) {
		sq = add_ew(g, OP_MUL, x, x);
		return add_ew(g, OP_MUL, sq, sq);
	}
	return 0;
}

static int lower_node(struct ir_graph *g, const struct ir_node *n)
{
	switch (n->op) {
	case OP_BROADCAST:
		return lower_broadcast(g, n);
	case OP_TRANSPOSE:
		return lower_transpose(g, n);
	case OP_SLICE:
		return lower_slice(g, n);
	case OP_DOT:
		return lower_dot(g, n);
	case OP_CONV:
		return lower_conv(g, n);
	case OP_REDUCE:
		return lower_reduce(g, n);
	case OP_SOFTMAX:
	case OP_LOG_SOFTMAX:
		return lower_softmax(g, n);
	default:
		return ir_error(g, EINVAL, "lower: no rule for %s",
				ir_ops[n->op].name);
	}
}

/*
 * The device has no int64. Frontends fold integer arithmetic exactly at
 * import (ONNX shape computations) or compute int64 as s32 (ONNX data,
 * see its header): an s64 value still here would be computed wrongly.
 */
static int refuse_s64(struct ir_graph *g)
{
	int i;

	for (i = 0; i < g->n; i++)
		if (g->nodes[i].op != OP_DEAD && g->nodes[i].shape.type == VTPU_S64)
			return ir_error(g, ENOTSUP,
					"node %d (%s): s64 computation: the device computes in f32, bf16 and s32 (fold integer arithmetic before compiling, or convert to s32)",
					i, ir_ops[g->nodes[i].op].name);
	return 0;
}

int pass_lower(struct ir_graph *g)
{
	int i, n = g->n, id;

	id = refuse_s64(g);
	if (id)
		return id;
	/* First, while exponents are still constants or their broadcasts. */
	for (i = 0; i < n; i++) {
		struct ir_node node = g->nodes[i];

		if (node.op != OP_POW)
			continue;
		id = lower_pow(g, &node);
		if (id < 0)
			return id;
		if (id) {
			ir_replace_uses(g, i, id);
			g->nodes[i].op = OP_DEAD;
			g->nodes[i].nin = 0;
		}
	}
	for (i = 0; i < n; i++) {
		struct ir_node node = g->nodes[i];

		if (node.op == OP_DEAD || ir_ops[node.op].prim)
			continue;
		id = lower_node(g, &node);
		if (id < 0)
			return id;
		ir_replace_uses(g, i, id);
		g->nodes[i].op = OP_DEAD;
		g->nodes[i].nin = 0;
	}
	id = ir_compact(g);
	if (id)
		return id;
	return ir_verify(g);
}
