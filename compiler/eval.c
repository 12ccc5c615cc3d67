// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * eval.c - the reference evaluator: every op of the table, high level and
 * primitive, as plain loops over multi-indices in double precision. It is
 * the oracle the tests hold lower.c, codegen.c and the executor to, so it
 * shares no code with them and favours the obvious over the fast.
 *
 * Every value is a row-major array of doubles. Inputs convert exactly
 * (f32 and bf16 are subsets of double; s32, s64 and pred are integers,
 * exact below 2^53). Ops compute in double and do not round to their
 * node's type, except CONVERT, whose whole point is the rounding; the
 * outputs are rounded once, into their type's memory format.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* ---- multi-indices ----------------------------------------------------- */

/* Advances @idx over @s in row-major order; false after the last one. */
static bool idx_next(int64_t *idx, const struct vtpu_shape *s)
{
	int i;

	for (i = s->rank - 1; i >= 0; i--) {
		if (++idx[i] < s->dims[i])
			return true;
		idx[i] = 0;
	}
	return false;
}

static int64_t idx_flat(const int64_t *idx, const struct vtpu_shape *s)
{
	int64_t f = 0;
	int i;

	for (i = 0; i < s->rank; i++)
		f = f * s->dims[i] + idx[i];
	return f;
}

/* Product of dims [lo, hi) of @s. */
static int64_t dims_prod(const struct vtpu_shape *s, int lo, int hi)
{
	int64_t n = 1;

	for (; lo < hi; lo++)
		n *= s->dims[lo];
	return n;
}

/* ---- conversions between memory formats and doubles -------------------- */

/*
 * double -> f32, overflow spelled out: C leaves an out-of-range
 * conversion undefined. From FLT_MAX + half an ulp up, round to nearest
 * even gives infinity.
 */
static float to_f32(double d)
{
	if (fabs(d) >= 0x1.ffffffp127)
		return copysign(INFINITY, d);
	return (float)d;
}

static double bf16_to_double(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Round to nearest even from the f32 value; a NaN stays a quiet NaN. */
static uint16_t double_to_bf16(double d)
{
	return vtpu_f32_to_bf16(to_f32(d));
}

/* Toward zero, saturating; NaN is 0 (a bare cast would be undefined). */
static double trunc_sat(double d, double lo, double hi)
{
	if (isnan(d))
		return 0;
	if (d <= lo)
		return lo;
	if (d >= hi)
		return hi;
	return trunc(d);
}

/* What @d becomes when stored as @t, as a double. */
static double round_to(double d, enum vtpu_type t)
{
	switch (t) {
	case VTPU_F32:
		return to_f32(d);
	case VTPU_BF16:
		return bf16_to_double(double_to_bf16(d));
	case VTPU_S32:
		return trunc_sat(d, -2147483648.0, 2147483647.0);
	case VTPU_S64:
		/* 2^63 - 1 is not a double; the largest below 2^63 is. */
		return trunc_sat(d, -9223372036854775808.0,
				 9223372036854774784.0);
	case VTPU_PRED:
		return d != 0;
	}
	return NAN;
}

static void load(double *dst, const void *src, enum vtpu_type t, int64_t n)
{
	const unsigned char *p = src;
	int64_t i;

	for (i = 0; i < n; i++) {
		float f;
		uint16_t h;
		int32_t s;
		int64_t l;

		switch (t) {
		case VTPU_F32:
			memcpy(&f, p + 4 * i, 4);
			dst[i] = f;
			break;
		case VTPU_BF16:
			memcpy(&h, p + 2 * i, 2);
			dst[i] = bf16_to_double(h);
			break;
		case VTPU_S32:
			memcpy(&s, p + 4 * i, 4);
			dst[i] = s;
			break;
		case VTPU_S64:
			memcpy(&l, p + 8 * i, 8);
			dst[i] = (double)l;
			break;
		case VTPU_PRED:
			dst[i] = p[i] != 0;
			break;
		}
	}
}

static void store(void *dst, const double *src, enum vtpu_type t, int64_t n)
{
	unsigned char *p = dst;
	int64_t i;

	for (i = 0; i < n; i++) {
		double d = round_to(src[i], t);
		float f = to_f32(d);
		uint16_t h = double_to_bf16(d);
		int32_t s = t == VTPU_S32 ? (int32_t)d : 0;
		int64_t l = t == VTPU_S64 ? (int64_t)d : 0;

		switch (t) {
		case VTPU_F32:
			memcpy(p + 4 * i, &f, 4);
			break;
		case VTPU_BF16:
			memcpy(p + 2 * i, &h, 2);
			break;
		case VTPU_S32:
			memcpy(p + 4 * i, &s, 4);
			break;
		case VTPU_S64:
			memcpy(p + 8 * i, &l, 8);
			break;
		case VTPU_PRED:
			p[i] = d != 0;
			break;
		}
	}
}

/* ---- elementwise ------------------------------------------------------- */

/* IEEE 754-2019 maximum/minimum, as the executor: NaN wins, -0 < +0. */
static double max_nan(double a, double b)
{
	if (isnan(a))
		return a;
	if (isnan(b))
		return b;
	if (a == b)
		return signbit(a) ? b : a;
	return a > b ? a : b;
}

static double min_nan(double a, double b)
{
	if (isnan(a))
		return a;
	if (isnan(b))
		return b;
	if (a == b)
		return signbit(a) ? a : b;
	return a < b ? a : b;
}

/* x Phi(x); erfc keeps Phi accurate in the negative tail; the limit at -inf is -0. */
static double gelu(double x)
{
	if (isinf(x))
		return x > 0 ? x : -0.0;
	return x * 0.5 * erfc(-x / sqrt(2.0));
}

static double unary(enum ir_op op, double x, enum vtpu_type to)
{
	switch (op) {
	case OP_NEG:
		return -x;
	case OP_ABS:
		return fabs(x);
	case OP_EXP:
		return exp(x);
	case OP_LOG:
		return log(x);
	case OP_SQRT:
		return sqrt(x);
	case OP_RSQRT:
		return 1 / sqrt(x);
	case OP_TANH:
		return tanh(x);
	case OP_LOGISTIC:
		return 1 / (1 + exp(-x));
	case OP_RELU:
		return max_nan(x, 0.0);
	case OP_GELU:
		return gelu(x);
	default:	/* OP_CONVERT: the one op that rounds */
		return round_to(x, to);
	}
}

static double compare(enum vtpu_cmp_dir dir, double a, double b)
{
	switch (dir) {
	case VTPU_EQ: return a == b;
	case VTPU_NE: return a != b;
	case VTPU_LT: return a < b;
	case VTPU_LE: return a <= b;
	case VTPU_GT: return a > b;
	case VTPU_GE: return a >= b;
	}
	return NAN;
}

static double binary(const struct ir_node *n, double a, double b)
{
	switch (n->op) {
	case OP_ADD:
		return a + b;
	case OP_SUB:
		return a - b;
	case OP_MUL:
		return a * b;
	case OP_DIV:
		return a / b;
	case OP_MAX:
		return max_nan(a, b);
	case OP_MIN:
		return min_nan(a, b);
	case OP_POW:
		return pow(a, b);
	default:	/* OP_COMPARE, its direction checked by the caller */
		return compare(n->a.cmp.dir, a, b);
	}
}

/*
 * The evaluation state: one double array per node, NULL until computed.
 * Passed to every op so that no op needs more than (graph, node, values).
 */
struct ev {
	const struct ir_graph *g;
	double **v;
	void ***loop;	/* a WHILE's final state, leaf by leaf, typed */
};

/* Iterations ir_eval() gives a loop before it calls it endless. */
#define EV_MAX_ITER	(1 << 20)

#define IN(ev, n, k)	((ev)->v[(n)->in[k]])
#define INSHAPE(ev, n, k)	(&(ev)->g->nodes[(n)->in[k]].shape)

static int ev_elementwise(struct ev *ev, const struct ir_node *n, double *out)
{
	int64_t i, cnt = shape_elems(&n->shape);
	const double *x = IN(ev, n, 0);

	if (n->op == OP_COMPARE && (unsigned int)n->a.cmp.dir > VTPU_GE)
		return -EINVAL;
	for (i = 0; i < cnt; i++) {
		switch (ir_ops[n->op].kind) {
		case K_EW1:
			out[i] = unary(n->op, x[i], n->shape.type);
			break;
		case K_EW2:
			out[i] = binary(n, x[i], IN(ev, n, 1)[i]);
			break;
		default:	/* K_EW3: SELECT */
			out[i] = x[i] != 0 ? IN(ev, n, 1)[i] : IN(ev, n, 2)[i];
		}
	}
	return 0;
}

/* ---- data movement ----------------------------------------------------- */

static int ev_broadcast(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct vtpu_shape *x = INSHAPE(ev, n, 0);
	int64_t idx[VTPU_MAX_RANK] = { 0 }, xi[VTPU_MAX_RANK];
	int64_t o = 0;
	int i;

	do {
		for (i = 0; i < x->rank; i++)
			xi[i] = x->dims[i] == 1 ? 0 : idx[n->a.bcast.dims[i]];
		out[o++] = IN(ev, n, 0)[idx_flat(xi, x)];
	} while (idx_next(idx, &n->shape));
	return 0;
}

static int ev_transpose(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct vtpu_shape *x = INSHAPE(ev, n, 0);
	int64_t idx[VTPU_MAX_RANK] = { 0 }, xi[VTPU_MAX_RANK];
	int64_t o = 0;
	int i;

	do {
		for (i = 0; i < x->rank; i++)
			xi[n->a.transpose.perm[i]] = idx[i];
		out[o++] = IN(ev, n, 0)[idx_flat(xi, x)];
	} while (idx_next(idx, &n->shape));
	return 0;
}

static int ev_slice(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct vtpu_shape *x = INSHAPE(ev, n, 0);
	int64_t idx[VTPU_MAX_RANK] = { 0 }, xi[VTPU_MAX_RANK];
	int64_t o = 0;
	int i;

	do {
		for (i = 0; i < x->rank; i++)
			xi[i] = n->a.slice.start[i] + idx[i] * n->a.slice.stride[i];
		out[o++] = IN(ev, n, 0)[idx_flat(xi, x)];
	} while (idx_next(idx, &n->shape));
	return 0;
}

static int ev_pad(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct vtpu_shape *x = INSHAPE(ev, n, 0);
	int64_t idx[VTPU_MAX_RANK] = { 0 }, xi[VTPU_MAX_RANK];
	int64_t o = 0;
	bool inside;
	int i;

	do {
		inside = true;
		for (i = 0; i < x->rank; i++) {
			xi[i] = idx[i] - n->a.pad.lo[i];
			inside &= xi[i] >= 0 && xi[i] < x->dims[i];
		}
		out[o++] = inside ? IN(ev, n, 0)[idx_flat(xi, x)] : n->a.pad.value;
	} while (idx_next(idx, &n->shape));
	return 0;
}

/* Operands laid side by side along the axis: per outer row, each one's chunk. */
static int ev_concat(struct ev *ev, const struct ir_node *n, double *out)
{
	int axis = n->a.concat.axis;
	int64_t outer = dims_prod(&n->shape, 0, axis);
	int64_t inner = dims_prod(&n->shape, axis + 1, n->shape.rank);
	int64_t r, o = 0;
	int k;

	for (r = 0; r < outer; r++)
		for (k = 0; k < n->nin; k++) {
			int64_t chunk = INSHAPE(ev, n, k)->dims[axis] * inner;

			memcpy(out + o, IN(ev, n, k) + r * chunk,
			       chunk * sizeof(double));
			o += chunk;
		}
	return 0;
}

/* Rows chosen by index; one outside the table fails, as on the device. */
static int ev_gather(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct vtpu_shape *xs = INSHAPE(ev, n, 0);
	int64_t a = xs->dims[0], v = xs->dims[1], b = xs->dims[2];
	int64_t k = n->shape.dims[1], i, j;
	const double *x = IN(ev, n, 0), *idx = IN(ev, n, 1);

	for (j = 0; j < k; j++) {
		int64_t r = (int64_t)idx[j];

		if (r < 0 && n->a.gather.wrap)
			r += v;
		if (r < 0 || r >= v)
			return -ERANGE;
		for (i = 0; i < a; i++)
			memcpy(out + (i * k + j) * b, x + (i * v + r) * b,
			       b * sizeof(double));
	}
	return 0;
}

/* Checks the view stays inside the input before reading through it. */
static int ev_copy(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct ir_view *v = &n->a.view;
	int64_t idx[VTPU_MAX_RANK] = { 0 }, last = v->offset, src, o = 0;
	int i;

	for (i = 0; i < n->shape.rank; i++)
		last += (n->shape.dims[i] - 1) * v->stride[i];
	if (v->offset < 0 || last >= shape_elems(INSHAPE(ev, n, 0)))
		return -EINVAL;
	do {
		src = v->offset;
		for (i = 0; i < n->shape.rank; i++)
			src += idx[i] * v->stride[i];
		out[o++] = IN(ev, n, 0)[src];
	} while (idx_next(idx, &n->shape));
	return 0;
}

/* ---- contractions ------------------------------------------------------ */

/* Sum over the contracting multi-index of lhs[li] * rhs[ri]. */
static double dot_sum(struct ev *ev, const struct ir_node *n, int64_t *li,
		      int64_t *ri)
{
	const struct vtpu_dot_dims *d = &n->a.dot;
	const struct vtpu_shape *x = INSHAPE(ev, n, 0), *y = INSHAPE(ev, n, 1);
	struct vtpu_shape cs = { .rank = d->ncontract };
	int64_t ci[VTPU_MAX_RANK] = { 0 };
	double acc = 0;
	int c;

	for (c = 0; c < d->ncontract; c++)
		cs.dims[c] = x->dims[d->lhs_contract[c]];
	do {
		for (c = 0; c < d->ncontract; c++) {
			li[d->lhs_contract[c]] = ci[c];
			ri[d->rhs_contract[c]] = ci[c];
		}
		acc += IN(ev, n, 0)[idx_flat(li, x)] * IN(ev, n, 1)[idx_flat(ri, y)];
	} while (idx_next(ci, &cs));
	return acc;
}

/* Free dims of one side, in order: those neither batch nor contracting. */
static int dot_free(int rank, int nb, const int *batch, int nc,
		    const int *contract, int *free_dims)
{
	uint32_t used = 0;
	int i, nf = 0;

	for (i = 0; i < nb; i++)
		used |= 1u << batch[i];
	for (i = 0; i < nc; i++)
		used |= 1u << contract[i];
	for (i = 0; i < rank; i++)
		if (!(used & (1u << i)))
			free_dims[nf++] = i;
	return nf;
}

/* XLA DotGeneral: result index = (batch..., lhs free..., rhs free...). */
static int ev_dot(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct vtpu_dot_dims *d = &n->a.dot;
	int lf[VTPU_MAX_RANK], rf[VTPU_MAX_RANK], nlf, nrf, i;
	int64_t idx[VTPU_MAX_RANK] = { 0 }, li[VTPU_MAX_RANK], ri[VTPU_MAX_RANK];
	int64_t o = 0;

	nlf = dot_free(INSHAPE(ev, n, 0)->rank, d->nbatch, d->lhs_batch,
		       d->ncontract, d->lhs_contract, lf);
	nrf = dot_free(INSHAPE(ev, n, 1)->rank, d->nbatch, d->rhs_batch,
		       d->ncontract, d->rhs_contract, rf);
	if (d->nbatch + nlf + nrf != n->shape.rank)
		return -EINVAL;
	do {
		for (i = 0; i < d->nbatch; i++) {
			li[d->lhs_batch[i]] = idx[i];
			ri[d->rhs_batch[i]] = idx[i];
		}
		for (i = 0; i < nlf; i++)
			li[lf[i]] = idx[d->nbatch + i];
		for (i = 0; i < nrf; i++)
			ri[rf[i]] = idx[d->nbatch + nlf + i];
		out[o++] = dot_sum(ev, n, li, ri);
	} while (idx_next(idx, &n->shape));
	return 0;
}

/* in[0] [B,M,K] or [B,K,M] (trans_a), in[1] [B,K,N] or [B,N,K] (trans_b). */
static int ev_matmul(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct vtpu_shape *x = INSHAPE(ev, n, 0);
	int64_t B = n->shape.dims[0], M = n->shape.dims[1], N = n->shape.dims[2];
	int64_t K = n->a.mm.trans_a ? x->dims[1] : x->dims[2];
	int64_t b, m, j, k, ai, bi;
	double acc;

	for (b = 0; b < B; b++)
		for (m = 0; m < M; m++)
			for (j = 0; j < N; j++) {
				acc = 0;
				for (k = 0; k < K; k++) {
					ai = n->a.mm.trans_a ? k * M + m : m * K + k;
					bi = n->a.mm.trans_b ? j * K + k : k * N + j;
					acc += IN(ev, n, 0)[b * M * K + ai] *
					       IN(ev, n, 1)[b * K * N + bi];
				}
				*out++ = acc;
			}
	return 0;
}

/*
 * One output element of a convolution, out[b][o][oh][ow]: output channel
 * o belongs to group o / (O / groups) and sees that group's I = C /
 * groups input channels; taps that land in the padding read zero.
 */
static double conv_at(struct ev *ev, const struct ir_node *n, int64_t b,
		      int64_t o, int64_t oh, int64_t ow)
{
	const struct vtpu_conv_params *p = &n->a.conv;
	const struct vtpu_shape *x = INSHAPE(ev, n, 0), *w = INSHAPE(ev, n, 1);
	int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
	int64_t I = w->dims[1], KH = w->dims[2], KW = w->dims[3];
	int64_t c0 = o / (w->dims[0] / p->groups) * I, c, kh, kw, ih, iw;
	const double *in = IN(ev, n, 0), *k = IN(ev, n, 1);
	double acc = 0;

	for (c = 0; c < I; c++)
		for (kh = 0; kh < KH; kh++)
			for (kw = 0; kw < KW; kw++) {
				ih = oh * p->stride[0] - p->pad_lo[0] +
				     kh * p->dilation[0];
				iw = ow * p->stride[1] - p->pad_lo[1] +
				     kw * p->dilation[1];
				if (ih < 0 || ih >= H || iw < 0 || iw >= W)
					continue;
				acc += in[((b * C + c0 + c) * H + ih) * W + iw] *
				       k[((o * I + c) * KH + kh) * KW + kw];
			}
	return acc;
}

static int ev_conv(struct ev *ev, const struct ir_node *n, double *out)
{
	int64_t idx[VTPU_MAX_RANK] = { 0 }, o = 0;

	do
		out[o++] = conv_at(ev, n, idx[0], idx[1], idx[2], idx[3]);
	while (idx_next(idx, &n->shape));
	return 0;
}

/* ---- reductions -------------------------------------------------------- */

static double reduce_init(enum vtpu_reduce_op op)
{
	switch (op) {
	case VTPU_REDUCE_MAX_OP:
		return -INFINITY;
	case VTPU_REDUCE_MIN_OP:
		return INFINITY;
	default:
		return 0;
	}
}

static double reduce_step(enum vtpu_reduce_op op, double acc, double x)
{
	switch (op) {
	case VTPU_REDUCE_MAX_OP:
		return max_nan(acc, x);
	case VTPU_REDUCE_MIN_OP:
		return min_nan(acc, x);
	default:
		return acc + x;
	}
}

/* Each input element folds into the output element its kept axes name. */
static int ev_reduce(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct vtpu_shape *x = INSHAPE(ev, n, 0);
	enum vtpu_reduce_op op = n->a.reduce.op;
	int64_t idx[VTPU_MAX_RANK] = { 0 }, oi[VTPU_MAX_RANK], i, o, cnt;
	int k, r;

	if ((unsigned int)op > VTPU_REDUCE_MEAN_OP)
		return -EINVAL;
	cnt = shape_elems(&n->shape);
	for (i = 0; i < cnt; i++)
		out[i] = reduce_init(op);
	i = 0;
	do {
		for (k = 0, r = 0; k < x->rank; k++)
			if (!(n->a.reduce.axes & (1u << k)))
				oi[r++] = idx[k];
		o = idx_flat(oi, &n->shape);
		out[o] = reduce_step(op, out[o], IN(ev, n, 0)[i++]);
	} while (idx_next(idx, x));
	if (op == VTPU_REDUCE_MEAN_OP)
		for (i = 0; i < cnt; i++)
			out[i] /= (double)(shape_elems(x) / cnt);
	return 0;
}

static int ev_reduce_last(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct vtpu_shape *x = INSHAPE(ev, n, 0);
	enum vtpu_reduce_op op = n->a.rl.op;
	int64_t r, c, C = x->dims[1];

	if ((unsigned int)op > VTPU_REDUCE_MEAN_OP)
		return -EINVAL;
	for (r = 0; r < x->dims[0]; r++) {
		out[r] = reduce_init(op);
		for (c = 0; c < C; c++)
			out[r] = reduce_step(op, out[r], IN(ev, n, 0)[r * C + c]);
		if (op == VTPU_REDUCE_MEAN_OP)
			out[r] /= (double)C;
	}
	return 0;
}

/* Max-subtracted, so exp() cannot overflow; log_softmax = x - max - log(sum). */
static int ev_softmax(struct ev *ev, const struct ir_node *n, double *out)
{
	int axis = n->a.softmax.axis;
	int64_t outer = dims_prod(&n->shape, 0, axis), len = n->shape.dims[axis];
	int64_t inner = dims_prod(&n->shape, axis + 1, n->shape.rank);
	const double *x = IN(ev, n, 0);
	int64_t o, i, k, at;
	double m, s;

	for (o = 0; o < outer; o++)
		for (i = 0; i < inner; i++) {
			at = o * len * inner + i;
			m = -INFINITY;
			s = 0;
			for (k = 0; k < len; k++)
				m = max_nan(m, x[at + k * inner]);
			for (k = 0; k < len; k++)
				s += exp(x[at + k * inner] - m);
			for (k = 0; k < len; k++)
				out[at + k * inner] = n->op == OP_SOFTMAX ?
					exp(x[at + k * inner] - m) / s :
					x[at + k * inner] - m - log(s);
		}
	return 0;
}

/* ---- the walk ---------------------------------------------------------- */

static int ev_leaf(const struct ir_node *n, const struct ir_graph *g,
		   const void *const *params, double *out)
{
	const void *src;

	if (n->op == OP_CONST) {
		src = n->a.cst.data;
	} else {
		if (!params || n->a.param.index < 0 ||
		    n->a.param.index >= g->nparams)
			return -EINVAL;
		src = params[n->a.param.index];
	}
	if (!src)
		return -EINVAL;
	load(out, src, n->shape.type, shape_elems(&n->shape));
	return 0;
}

static void free_leaves(void **x, int n)
{
	int k;

	if (!x)
		return;
	for (k = 0; k < n; k++)
		free(x[k]);
	free(x);
}

/*
 * A WHILE: its condition and body evaluated with ir_eval() itself, the
 * state typed between iterations as on the device; the final state kept
 * for its WHILE_OUTs. A loop still going after EV_MAX_ITER iterations is
 * -ETIMEDOUT, as the device's watchdog would have it.
 */
static int ev_while(struct ev *ev, const struct ir_node *n, double *out)
{
	const struct ir_graph *cg = n->a.loop.cond, *bg = n->a.loop.body;
	void **state = calloc(n->nin + 1, sizeof(void *));
	void **next = calloc(n->nin + 1, sizeof(void *));
	void *pred[1] = { NULL };
	long iter;
	int k, ret = -ENOMEM;

	out[0] = 0;
	if (!state || !next)
		goto out;
	for (k = 0; k < n->nin; k++) {
		const struct vtpu_shape *s = INSHAPE(ev, n, k);

		state[k] = malloc(shape_elems(s) * type_size(s->type) + 1);
		if (!state[k])
			goto out;
		store(state[k], IN(ev, n, k), s->type, shape_elems(s));
	}
	for (iter = 0;; iter++) {
		ret = ir_eval(cg, (const void *const *)state, pred);
		if (ret)
			goto out;
		ret = *(int32_t *)pred[0] ? 0 : 1;
		free(pred[0]);
		pred[0] = NULL;
		if (ret == 1)
			break;
		if (iter == EV_MAX_ITER) {
			ret = -ETIMEDOUT;
			goto out;
		}
		ret = ir_eval(bg, (const void *const *)state, next);
		if (ret)
			goto out;
		for (k = 0; k < n->nin; k++) {
			free(state[k]);
			state[k] = next[k];
			next[k] = NULL;
		}
	}
	ev->loop[n - ev->g->nodes] = state;
	state = NULL;
	ret = 0;
out:
	free_leaves(state, n->nin);
	free_leaves(next, n->nin);
	return ret;
}

static int ev_while_out(struct ev *ev, const struct ir_node *n, double *out)
{
	void **state = ev->loop[n->in[0]];

	if (!state)
		return -EINVAL;
	load(out, state[n->a.wout.index], n->shape.type,
	     shape_elems(&n->shape));
	return 0;
}

static int ev_node(struct ev *ev, const struct ir_node *n,
		   const void *const *params, double *out)
{
	if (ir_ops[n->op].kind != K_OTHER)
		return ev_elementwise(ev, n, out);
	switch (n->op) {
	case OP_PARAM:
	case OP_CONST:
		return ev_leaf(n, ev->g, params, out);
	case OP_RESHAPE:	/* row-major order is unchanged */
		memcpy(out, IN(ev, n, 0), shape_elems(&n->shape) * sizeof(double));
		return 0;
	case OP_BROADCAST:
		return ev_broadcast(ev, n, out);
	case OP_TRANSPOSE:
		return ev_transpose(ev, n, out);
	case OP_DOT:
		return ev_dot(ev, n, out);
	case OP_CONV:
	case OP_P_DWCONV:
		return ev_conv(ev, n, out);
	case OP_REDUCE:
		return ev_reduce(ev, n, out);
	case OP_SOFTMAX:
	case OP_LOG_SOFTMAX:
		return ev_softmax(ev, n, out);
	case OP_CONCAT:
		return ev_concat(ev, n, out);
	case OP_SLICE:
		return ev_slice(ev, n, out);
	case OP_PAD:
		return ev_pad(ev, n, out);
	case OP_P_MATMUL:
		return ev_matmul(ev, n, out);
	case OP_P_REDUCE_LAST:
		return ev_reduce_last(ev, n, out);
	case OP_P_COPY:
		return ev_copy(ev, n, out);
	case OP_GATHER:
		return ev_gather(ev, n, out);
	case OP_WHILE:
		return ev_while(ev, n, out);
	case OP_WHILE_OUT:
		return ev_while_out(ev, n, out);
	default:
		return -EINVAL;
	}
}

/*
 * The loops above trust the shapes, so check them first: the verifier on
 * a shallow copy, whose error slot absorbs the message and leaves @g as
 * the caller passed it.
 */
static int ev_check(const struct ir_graph *g)
{
	struct ir_graph chk = *g;
	int i;

	chk.errcode = 0;
	for (i = 0; i < g->n; i++)
		if ((unsigned int)g->nodes[i].op >= OP_NR)
			return -EINVAL;
	if (ir_verify(&chk))
		return -EINVAL;
	for (i = 0; i < g->nout; i++)
		if (g->nodes[g->outputs[i]].op == OP_DEAD)
			return -EINVAL;
	return 0;
}

static int ev_outputs(const struct ev *ev, void **outs)
{
	const struct ir_graph *g = ev->g;
	int k;

	for (k = 0; k < g->nout; k++) {
		const struct ir_node *n = &g->nodes[g->outputs[k]];
		int64_t cnt = shape_elems(&n->shape);

		outs[k] = malloc(cnt * type_size(n->shape.type) + 1);
		if (!outs[k]) {
			while (k--) {
				free(outs[k]);
				outs[k] = NULL;
			}
			return -ENOMEM;
		}
		store(outs[k], ev->v[g->outputs[k]], n->shape.type, cnt);
	}
	return 0;
}

int ir_eval(const struct ir_graph *g, const void *const *params, void **outs)
{
	struct ev ev = { .g = g };
	int i, ret;

	ret = ev_check(g);
	if (ret)
		return ret;
	ev.v = calloc(g->n + 1, sizeof(*ev.v));
	ev.loop = calloc(g->n + 1, sizeof(*ev.loop));
	if (!ev.v || !ev.loop) {
		free(ev.v);
		free(ev.loop);
		return -ENOMEM;
	}
	for (i = 0; i < g->n && !ret; i++) {
		const struct ir_node *n = &g->nodes[i];

		if (n->op == OP_DEAD)	/* the verifier saw nothing uses it */
			continue;
		ev.v[i] = malloc(shape_elems(&n->shape) * sizeof(double));
		ret = ev.v[i] ? ev_node(&ev, n, params, ev.v[i]) : -ENOMEM;
	}
	if (!ret)
		ret = ev_outputs(&ev, outs);
	for (i = 0; i < g->n; i++) {
		free(ev.v[i]);
		if (ev.loop[i])
			free_leaves(ev.loop[i], g->nodes[i].nin);
	}
	free(ev.v);
	free(ev.loop);
	return ret;
}
