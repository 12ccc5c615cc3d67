// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/math.c - elementwise operators: arithmetic with numpy broadcasting,
 * comparisons, logical operators, activations, casts.
 */
#include "common.h"

/* numpy broadcast of @a (right-aligned) to @rank/@dims. */
int onnx_bcast_to(struct ctx *c, int a, int rank, const int64_t *dims)
{
	struct vtpu_shape s = onnx_shape_of(c, a);
	int map[R];
	bool same = s.rank == rank;

	if (a < 0)
		return a;
	if (s.rank > rank)
		return onnx_fail(c, "cannot broadcast rank %d to rank %d", s.rank, rank);
	for (int i = 0; i < s.rank; i++) {
		map[i] = i + rank - s.rank;
		if (s.dims[i] != dims[map[i]] && s.dims[i] != 1)
			return onnx_fail(c, "cannot broadcast dimension %d of size %lld to %lld",
					 i, (long long)s.dims[i],
					 (long long)dims[map[i]]);
		same = same && s.dims[i] == dims[map[i]];
	}
	if (same)
		return a;
	return onnx_chk(c, vtpu_g_broadcast(c->g, a, rank, dims, map));
}

/* The numpy common shape of @na values, into @rank/@dims. */
static int common(struct ctx *c, int na, const int *v, int *rank,
		  int64_t *dims)
{
	*rank = 0;
	for (int k = 0; k < na; k++) {
		struct vtpu_shape s = onnx_shape_of(c, v[k]);

		*rank = s.rank > *rank ? s.rank : *rank;
	}
	for (int i = 0; i < *rank; i++)
		dims[i] = 1;
	for (int k = 0; k < na; k++) {
		struct vtpu_shape s = onnx_shape_of(c, v[k]);

		for (int i = 0; i < s.rank; i++) {
			int64_t *d = &dims[i + *rank - s.rank];

			if (*d == 1)
				*d = s.dims[i];
			else if (s.dims[i] != 1 && s.dims[i] != *d)
				return onnx_fail(c, "incompatible broadcast dimensions %lld and %lld",
						 (long long)s.dims[i], (long long)*d);
		}
	}
	return 0;
}

/* Broadcasts @na values in place to their common shape. */
static int bcast_all(struct ctx *c, int na, int *v)
{
	int rank;
	int64_t dims[R];

	for (int k = 0; k < na; k++)
		if (v[k] < 0)
			return v[k];
	if (common(c, na, v, &rank, dims))
		return -EINVAL;
	for (int k = 0; k < na; k++)
		if ((v[k] = onnx_bcast_to(c, v[k], rank, dims)) < 0)
			return v[k];
	return 0;
}

/* A scalar @x in @like's type, broadcast to @like's shape. */
int onnx_splat(struct ctx *c, double x, int like)
{
	struct vtpu_shape s = onnx_shape_of(c, like);
	int v = onnx_chk(c, vtpu_g_scalar(c->g, (float)x));

	if (v >= 0 && s.type != VTPU_F32)
		v = onnx_chk(c, vtpu_g_convert(c->g, v, s.type));
	return v < 0 ? v : onnx_bcast_to(c, v, s.rank, s.dims);
}

int onnx_binary(struct ctx *c, enum vtpu_binary_op op, int a, int b)
{
	int v[2] = { a, b };

	if (bcast_all(c, 2, v))
		return -EINVAL;
	return onnx_chk(c, vtpu_g_binary(c->g, op, v[0], v[1]));
}

/* ---- elementwise ------------------------------------------------------------ */

/*
 * Before opset 7, broadcast=1 aligned B's dims at @axis of A (default:
 * trailing, as numpy does); a reshape with 1s makes that numpy too.
 */
static int legacy_bcast(struct ctx *c, node_t *n, int a, int b)
{
	struct vtpu_shape sa = onnx_shape_of(c, a), sb = onnx_shape_of(c, b);
	int64_t t[R], ax;

	if (!onnx_attr_i(n, "broadcast", 0) || !onnx_attr(n, "axis"))
		return b;
	ax = onnx_attr_i(n, "axis", 0);
	ax = ax < 0 ? ax + sa.rank : ax;
	if (ax < 0 || ax + sb.rank > sa.rank)
		return onnx_fail(c, "bad broadcast axis %lld", (long long)ax);
	for (int i = 0; i < sa.rank; i++)
		t[i] = i >= ax && i < ax + sb.rank ? sb.dims[i - ax] : 1;
	return onnx_reshape(c, b, sa.rank, t);
}

int onnx_op_binary(struct ctx *c, node_t *n, const struct opdef *d)
{
	int a = onnx_in(c, n, 0), b = onnx_in(c, n, 1);

	if (a < 0 || b < 0)
		return -EINVAL;
	if (c->opset < 7 && (b = legacy_bcast(c, n, a, b)) < 0)
		return b;
	if (d->arg == VTPU_POW && onnx_shape_of(c, a).type == VTPU_S32) {
		/*
		 * The device's pow is f32 only. Integer powers go through
		 * it: a correctly rounded pow is exact wherever the result
		 * fits f32's 24-bit significand.
		 */
		int y;

		a = onnx_chk(c, vtpu_g_convert(c->g, a, VTPU_F32));
		if (b >= 0 && onnx_shape_of(c, b).type != VTPU_F32)
			b = onnx_chk(c, vtpu_g_convert(c->g, b, VTPU_F32));
		y = a < 0 || b < 0 ? -EINVAL : onnx_binary(c, VTPU_POW, a, b);
		return onnx_out(c, n, 0, y < 0 ? y :
				onnx_chk(c, vtpu_g_convert(c->g, y, VTPU_S32)));
	}
	/* the device divides f32 only: compose.c's, exact below 2^24 */
	if (d->arg == VTPU_DIV && onnx_shape_of(c, a).type == VTPU_S32) {
		int v[2] = { a, b };

		if (bcast_all(c, 2, v))
			return -EINVAL;
		return onnx_out(c, n, 0, onnx_chk(c, compose_div_int(c->g, v[0], v[1])));
	}
	/* Pow's exponent may have another type; the result has the base's. */
	if (onnx_shape_of(c, a).type != onnx_shape_of(c, b).type && d->arg == VTPU_POW)
		b = onnx_chk(c, vtpu_g_convert(c->g, b, onnx_shape_of(c, a).type));
	return onnx_out(c, n, 0, b < 0 ? b : onnx_binary(c, d->arg, a, b));
}

/*
 * And/Or/Xor (arg: 0, 1, 2) and Not (arg 3) on pred values, through
 * s32 0/1: min, max, !=, == 0.
 */
int onnx_op_logical(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[2] = { onnx_in(c, n, 0), d->arg == 3 ? -1 : onnx_in(c, n, 1) }, y;
	int na = d->arg == 3 ? 1 : 2;

	for (int i = 0; i < na; i++) {
		if (v[i] < 0)
			return v[i];
		if (onnx_shape_of(c, v[i]).type != VTPU_PRED)
			return onnx_fail(c, "input %d must be bool", i);
		v[i] = onnx_chk(c, vtpu_g_convert(c->g, v[i], VTPU_S32));
		if (v[i] < 0)
			return v[i];
	}
	if (na == 2 && bcast_all(c, 2, v))
		return -EINVAL;
	switch (d->arg) {
	case 0: y = onnx_chk(c, vtpu_g_binary(c->g, VTPU_MIN, v[0], v[1])); break;
	case 1: y = onnx_chk(c, vtpu_g_binary(c->g, VTPU_MAX, v[0], v[1])); break;
	case 2: return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_compare(c->g, VTPU_NE, v[0], v[1])));
	default: return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, v[0],
							    onnx_splat(c, 0, v[0]))));
	}
	return onnx_out(c, n, 0, y < 0 ? y : onnx_chk(c, vtpu_g_compare(c->g, VTPU_NE, y,
							       onnx_splat(c, 0, y))));
}

/* Max/Min/Sum/Mean: a left fold over any number of inputs. */
int onnx_op_variadic(struct ctx *c, node_t *n, const struct opdef *d)
{
	int acc = onnx_in(c, n, 0);

	for (size_t i = 1; i < n->n_input && acc >= 0; i++)
		acc = onnx_binary(c, d->arg, acc, onnx_in(c, n, i));
	if (acc >= 0 && d->arg2)	/* Mean */
		acc = onnx_binary(c, VTPU_DIV, acc, onnx_splat(c, (double)n->n_input, acc));
	return onnx_out(c, n, 0, acc);
}

int onnx_op_compare(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[2] = { onnx_in(c, n, 0), onnx_in(c, n, 1) };

	if (bcast_all(c, 2, v))
		return -EINVAL;
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_compare(c->g, d->arg, v[0], v[1])));
}

int onnx_op_unary(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0);

	return onnx_out(c, n, 0, x < 0 ? x : onnx_chk(c, vtpu_g_unary(c->g, d->arg, x)));
}

int onnx_op_gelu(struct ctx *c, node_t *n, const struct opdef *d)
{
	if (!onnx_attr_s_is(n, "approximate", "none", "none"))
		return onnx_fail(c, "unsupported approximate='tanh'");
	return onnx_op_unary(c, n, d);
}

int onnx_op_reciprocal(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0);

	(void)d;
	return onnx_out(c, n, 0, x < 0 ? x : onnx_binary(c, VTPU_DIV, onnx_splat(c, 1, x), x));
}

/* select(x > 0, 1, select(x < 0, -1, 0)), in x's type. */
int onnx_op_sign(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), zero, pos, neg, y;

	(void)d;
	if (x < 0)
		return x;
	zero = onnx_splat(c, 0, x);
	pos = zero < 0 ? zero : onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, x, zero));
	neg = zero < 0 ? zero : onnx_chk(c, vtpu_g_compare(c->g, VTPU_LT, x, zero));
	if (pos < 0 || neg < 0)
		return -EINVAL;
	y = onnx_chk(c, vtpu_g_select(c->g, neg, onnx_splat(c, -1, x), zero));
	return onnx_out(c, n, 0, y < 0 ? y :
			onnx_chk(c, vtpu_g_select(c->g, pos, onnx_splat(c, 1, x), y)));
}

/* x < -lambd ? x + bias : x > lambd ? x - bias : 0. */
int onnx_op_shrink(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), lo, hi, y;
	double l = onnx_attr_f(n, "lambd", 0.5f), b = onnx_attr_f(n, "bias", 0.0f);

	(void)d;
	if (x < 0)
		return x;
	lo = onnx_chk(c, vtpu_g_compare(c->g, VTPU_LT, x, onnx_splat(c, -l, x)));
	hi = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, x, onnx_splat(c, l, x)));
	if (lo < 0 || hi < 0)
		return -EINVAL;
	y = onnx_chk(c, vtpu_g_select(c->g, hi, onnx_binary(c, VTPU_SUB, x, onnx_splat(c, b, x)),
				      onnx_splat(c, 0, x)));
	return onnx_out(c, n, 0, y < 0 ? y : onnx_chk(c, vtpu_g_select(c->g, lo,
				onnx_binary(c, VTPU_ADD, x, onnx_splat(c, b, x)), y)));
}

/* select(x > 0, x, slope * x): LeakyRelu (alpha) and PRelu (input 1). */
int onnx_op_leaky(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), slope, zero, p;
	struct vtpu_shape s;

	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	slope = d->arg ? onnx_in(c, n, 1) : onnx_splat(c, onnx_attr_f(n, "alpha", 0.01f), x);
	if (d->arg && slope >= 0 && c->opset < 7 && s.rank >= 2) {
		struct vtpu_shape ss = onnx_shape_of(c, slope);

		/* Before opset 7 a [C] slope is per channel (dimension 1). */
		if (ss.rank == 1 && ss.dims[0] == s.dims[1] && ss.dims[0] > 1) {
			int64_t t[R];

			for (int i = 0; i < s.rank - 1; i++)
				t[i] = i ? 1 : s.dims[1];
			slope = onnx_reshape(c, slope, s.rank - 1, t);
		}
	}
	slope = slope < 0 ? slope : onnx_bcast_to(c, slope, s.rank, s.dims);
	zero = onnx_splat(c, 0, x);
	if (slope < 0 || zero < 0)
		return -EINVAL;
	p = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, x, zero));
	slope = onnx_chk(c, vtpu_g_binary(c->g, VTPU_MUL, slope, x));
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_select(c->g, p, x, slope)));
}

/* Elu: select(x > 0, x, alpha * (exp(x) - 1)). */
int onnx_op_elu(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), e, p;

	(void)d;
	if (x < 0)
		return x;
	e = onnx_binary(c, VTPU_SUB, onnx_chk(c, vtpu_g_unary(c->g, VTPU_EXP, x)),
			onnx_splat(c, 1, x));
	e = onnx_binary(c, VTPU_MUL, e, onnx_splat(c, onnx_attr_f(n, "alpha", 1.0f), x));
	p = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, x, onnx_splat(c, 0, x)));
	if (e < 0 || p < 0)
		return -EINVAL;
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_select(c->g, p, x, e)));
}

/* Softplus: log(exp(x) + 1). */
int onnx_op_softplus(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), e;

	(void)d;
	if (x < 0)
		return x;
	e = onnx_binary(c, VTPU_ADD, onnx_chk(c, vtpu_g_unary(c->g, VTPU_EXP, x)),
			onnx_splat(c, 1, x));
	return onnx_out(c, n, 0, e < 0 ? e : onnx_chk(c, vtpu_g_unary(c->g, VTPU_LOG, e)));
}

/* Clip: max(min) against attributes (opset < 11) or optional inputs. */
int onnx_op_clip(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), lo = -1, hi = -1;

	(void)d;
	if (x < 0)
		return x;
	if (c->opset < 11) {
		if (onnx_attr(n, "min"))
			lo = onnx_splat(c, onnx_attr_f(n, "min", 0), x);
		if (onnx_attr(n, "max"))
			hi = onnx_splat(c, onnx_attr_f(n, "max", 0), x);
	} else {
		if (onnx_has_in(n, 1))
			lo = onnx_in(c, n, 1);
		if (onnx_has_in(n, 2))
			hi = onnx_in(c, n, 2);
	}
	if (lo >= 0)
		x = onnx_binary(c, VTPU_MAX, x, lo);
	if (hi >= 0 && x >= 0)
		x = onnx_binary(c, VTPU_MIN, x, hi);
	return onnx_out(c, n, 0, c->failed ? -EINVAL : x);
}

int onnx_op_where(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[3] = { onnx_in(c, n, 0), onnx_in(c, n, 1), onnx_in(c, n, 2) };

	(void)d;
	if (bcast_all(c, 3, v))
		return -EINVAL;
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_select(c->g, v[0], v[1], v[2])));
}

static int round_half(struct ctx *c, int x);

int onnx_op_cast(struct ctx *c, node_t *n, const struct opdef *d)
{
	int64_t to = onnx_attr_i(n, "to", 0);
	bool ok;
	enum vtpu_type t = onnx_type((int)to, &ok);
	int x;

	(void)d;
	if (!ok)
		return onnx_fail(c, "unsupported cast to %s", onnx_type_name((int)to));
	if (t == VTPU_S64 && !c->folding)
		t = VTPU_S32;
	x = onnx_in(c, n, 0);
	if (x < 0)
		return x;
	if (to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
	    onnx_shape_of(c, x).type == VTPU_F32)
		return onnx_out(c, n, 0, round_half(c, x));
	if (onnx_shape_of(c, x).type == t)
		return onnx_out(c, n, 0, x);
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_convert(c->g, x, t)));
}

/* CastLike: Cast to the type of input 1 (its values unused). */
int onnx_op_castlike(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), like = onnx_in(c, n, 1);
	enum vtpu_type t;

	(void)d;
	if (x < 0 || like < 0)
		return -EINVAL;
	t = onnx_shape_of(c, like).type;
	if (onnx_shape_of(c, x).type == t)
		return onnx_out(c, n, 0, x);
	return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_convert(c->g, x, t)));
}

/* IsNaN (arg 0): x != x. IsInf (arg 1): |x| == inf, by sign if asked. */
int onnx_op_isnan_inf(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), y, pos, neg;

	if (x < 0)
		return x;
	if (!d->arg)
		return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_compare(c->g, VTPU_NE, x, x)));
	pos = onnx_attr_i(n, "detect_positive", 1) ?
	      onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, x, onnx_splat(c, INFINITY, x))) : -1;
	neg = onnx_attr_i(n, "detect_negative", 1) ?
	      onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, x, onnx_splat(c, -INFINITY, x))) : -1;
	if (pos >= 0 && neg >= 0) {
		/* pred or pred: select(pos, pos, neg) */
		y = onnx_chk(c, vtpu_g_select(c->g, pos, pos, neg));
	} else if (pos >= 0 || neg >= 0) {
		y = pos >= 0 ? pos : neg;
	} else {	/* neither sign: all false */
		y = onnx_chk(c, vtpu_g_compare(c->g, VTPU_LT, onnx_splat(c, 1, x),
					       onnx_splat(c, 0, x)));
	}
	return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
}

/* ThresholdedRelu: select(x > alpha, x, 0). */
int onnx_op_thresholded_relu(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), p;

	(void)d;
	if (x < 0)
		return x;
	p = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, x,
				       onnx_splat(c, onnx_attr_f(n, "alpha", 1.0f), x)));
	return onnx_out(c, n, 0, p < 0 ? p :
			onnx_chk(c, vtpu_g_select(c->g, p, x, onnx_splat(c, 0, x))));
}

/* Floor (arg 0), Ceil (1), Round (2, half to even) of f32: compose.c. */
static int rounding(struct ctx *c, int x, int mode)
{
	return onnx_chk(c, compose_round(c->g, x, (enum compose_rounding)mode));
}

int onnx_op_floor_ceil_round(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0);

	if (x < 0)
		return x;
	if (onnx_shape_of(c, x).type != VTPU_F32)
		return onnx_shape_of(c, x).type == VTPU_S32 ? onnx_out(c, n, 0, x) :
		       onnx_fail(c, "unsupported type");
	return onnx_out(c, n, 0, rounding(c, x, d->arg));
}

/* Softsign: x / (1 + |x|). */
int onnx_op_softsign(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), a;

	(void)d;
	if (x < 0)
		return x;
	a = onnx_chk(c, vtpu_g_unary(c->g, VTPU_ABS, x));
	a = a < 0 ? a : onnx_binary(c, VTPU_ADD, a, onnx_splat(c, 1, x));
	return onnx_out(c, n, 0, a < 0 ? a : onnx_binary(c, VTPU_DIV, x, a));
}

/* Selu: gamma * select(x > 0, x, alpha * (exp(x) - 1)). */
int onnx_op_selu(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), e, p, y;

	(void)d;
	if (x < 0)
		return x;
	e = onnx_binary(c, VTPU_SUB, onnx_chk(c, vtpu_g_unary(c->g, VTPU_EXP, x)),
			onnx_splat(c, 1, x));
	e = onnx_binary(c, VTPU_MUL, e,
			onnx_splat(c, onnx_attr_f(n, "alpha", 1.67326319217681884765625f), x));
	p = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, x, onnx_splat(c, 0, x)));
	if (e < 0 || p < 0)
		return -EINVAL;
	y = onnx_chk(c, vtpu_g_select(c->g, p, x, e));
	y = onnx_binary(c, VTPU_MUL, y,
			onnx_splat(c, onnx_attr_f(n, "gamma", 1.05070102214813232421875f), x));
	return onnx_out(c, n, 0, y);
}

/* HardSigmoid: max(0, min(1, alpha * x + beta)). */
/* HardSigmoid (arg 0); HardSwish (arg 1) is x HardSigmoid(x, 1/6, 1/2). */
int onnx_op_hardsigmoid(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), y;
	float alpha = d->arg ? 1.0f / 6 : onnx_attr_f(n, "alpha", 0.2f);

	if (x < 0)
		return x;
	y = onnx_binary(c, VTPU_MUL, x, onnx_splat(c, alpha, x));
	y = onnx_binary(c, VTPU_ADD, y, onnx_splat(c, onnx_attr_f(n, "beta", 0.5f), x));
	y = onnx_binary(c, VTPU_MIN, y, onnx_splat(c, 1, x));
	y = onnx_binary(c, VTPU_MAX, y, onnx_splat(c, 0, x));
	if (d->arg)
		y = onnx_binary(c, VTPU_MUL, x, y);
	return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
}

/* ---- functions the device lacks, from the ones it has ---------------------- */

static int mul(struct ctx *c, int a, int b)
{
	return onnx_binary(c, VTPU_MUL, a, b);
}

static int add(struct ctx *c, int a, int b)
{
	return onnx_binary(c, VTPU_ADD, a, b);
}

static int cmp(struct ctx *c, enum vtpu_cmp_dir dir, int a, double b)
{
	return onnx_chk(c, vtpu_g_compare(c->g, dir, a, onnx_splat(c, b, a)));
}

static int sel(struct ctx *c, int p, int a, int b)
{
	return onnx_chk(c, vtpu_g_select(c->g, p, a, b));
}

/* k[0] + x (k[1] + x (k[2] + ...)) */
static int horner(struct ctx *c, int x, const double *k, int nk)
{
	int y = onnx_splat(c, k[nk - 1], x);

	for (int i = nk - 2; i >= 0; i--)
		y = add(c, mul(c, y, x), onnx_splat(c, k[i], x));
	return y;
}

/* trunc(x) for |x| < 2^31, by the device's truncating conversion. */
static int trunc_f32(struct ctx *c, int x)
{
	x = onnx_chk(c, vtpu_g_convert(c->g, x, VTPU_S32));
	return onnx_chk(c, vtpu_g_convert(c->g, x, VTPU_F32));
}

static int f32_in(struct ctx *c, node_t *n)
{
	int x = onnx_in(c, n, 0);

	if (x >= 0 && onnx_shape_of(c, x).type != VTPU_F32)
		return onnx_fail(c, "unsupported type %s (f32 only)",
				 type_name(onnx_shape_of(c, x).type));
	return x;
}

/* Erf: compose.c's, from the device's exact GELU. */
int onnx_op_erf(struct ctx *c, node_t *n, const struct opdef *d)
{
	int z = f32_in(c, n);

	(void)d;
	if (z < 0)
		return z;
	return onnx_out(c, n, 0, onnx_chk(c, compose_erf(c->g, z)));
}

/*
 * Exact GELU as torch and Hugging Face export it, x * 0.5 * (1 +
 * erf(x / sqrt2)) in either association, becomes the device's GELU of
 * x: one VPU operation instead of Erf's two dozen. Each node is built as
 * it comes, so every intermediate value stays usable; the parts are
 * tagged on the way (x / sqrt2, its Erf, 1 + that, x * 0.5, x times
 * 1 + erf), and the node that completes the product is redefined as
 * GELU(x). Parts nothing else uses die in DCE.
 */
enum onnx_gelu_part {
	GELU_NONE, GELU_SCALED, GELU_ERF, GELU_ONE_PLUS, GELU_HALF_X,
	GELU_X_ONE_PLUS,
};

/* Whether input @i of @n is a constant scalar within 1e-6 of @want. */
static bool const_near(struct ctx *c, node_t *n, size_t i, double want)
{
	struct val *v = i < n->n_input ? onnx_lookup(c, n->input[i]) : NULL;
	double x;

	if (!v || !v->c || v->c->n != 1 || onnx_cv_float(c, v->c, &x, "x"))
		return false;
	return fabs(x - want) <= 1e-6 * fabs(want);
}

static struct val *part(struct ctx *c, node_t *n, size_t i, int want)
{
	struct val *v = i < n->n_input ? onnx_lookup(c, n->input[i]) : NULL;

	return v && v->gelu == want ? v : NULL;
}

static bool is_name(node_t *n, size_t i, const char *name)
{
	return i < n->n_input && name && !strcmp(n->input[i], name);
}

int onnx_gelu_peephole(struct ctx *c, node_t *n)
{
	const char *op = n->op_type, *x = NULL;
	struct val *out, *p, *q;
	int kind = GELU_NONE, k, y;

	if (n->n_output != 1 || n->n_input != 2 - !strcmp(op, "Erf"))
		return 0;
	if (!strcmp(op, "Div") && const_near(c, n, 1, M_SQRT2)) {
		kind = GELU_SCALED, x = n->input[0];
	} else if (!strcmp(op, "Erf") && (p = part(c, n, 0, GELU_SCALED))) {
		kind = GELU_ERF, x = p->gelu_x;
	} else if (!strcmp(op, "Add")) {
		for (k = 0; k < 2 && !kind; k++)
			if ((p = part(c, n, k, GELU_ERF)) && const_near(c, n, !k, 1))
				kind = GELU_ONE_PLUS, x = p->gelu_x;
	} else if (!strcmp(op, "Mul")) {
		for (k = 0; k < 2 && !kind; k++) {
			if (const_near(c, n, !k, M_SQRT1_2))
				kind = GELU_SCALED, x = n->input[k];
			else if ((p = part(c, n, k, GELU_X_ONE_PLUS)) &&
				 const_near(c, n, !k, 0.5))
				kind = -1, x = p->gelu_x;
			else if ((p = part(c, n, k, GELU_ONE_PLUS)) &&
				 is_name(n, !k, p->gelu_x))
				kind = GELU_X_ONE_PLUS, x = p->gelu_x;
			else if ((p = part(c, n, k, GELU_ONE_PLUS)) &&
				 (q = part(c, n, !k, GELU_HALF_X)) &&
				 !strcmp(q->gelu_x, p->gelu_x))
				kind = -1, x = p->gelu_x;
			else if (const_near(c, n, !k, 0.5))
				kind = GELU_HALF_X, x = n->input[k];
		}
	}
	if (!kind)
		return 0;
	if (kind > 0) {
		out = onnx_lookup(c, n->output[0]);
		if (out) {
			out->gelu = kind;
			out->gelu_x = x;
		}
		return 0;
	}
	/* the product is complete: GELU(x), when x is f32 */
	y = onnx_value(c, x);
	if (y < 0 || onnx_shape_of(c, y).type != VTPU_F32)
		return 0;
	y = onnx_chk(c, vtpu_g_unary(c->g, VTPU_GELU, y));
	return y < 0 ? y : onnx_out(c, n, 0, y);
}

static int sin_cos(struct ctx *c, int x, int want)
{
	return onnx_chk(c, compose_sin_cos(c->g, x, want));
}

/* Sin (arg 0), Cos (1), Tan (2). */
int onnx_op_trig(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = f32_in(c, n), y;

	if (x < 0)
		return x;
	if (d->arg < 2)
		y = sin_cos(c, x, d->arg);
	else
		y = onnx_binary(c, VTPU_DIV, sin_cos(c, x, 0), sin_cos(c, x, 1));
	return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
}

static int unary(struct ctx *c, enum vtpu_unary_op op, int x)
{
	return onnx_chk(c, vtpu_g_unary(c->g, op, x));
}

static int sub(struct ctx *c, int a, int b)
{
	return onnx_binary(c, VTPU_SUB, a, b);
}

static int dvd(struct ctx *c, int a, int b)
{
	return onnx_binary(c, VTPU_DIV, a, b);
}

static int kst(struct ctx *c, double v, int like)
{
	return onnx_splat(c, v, like);
}

/* @small where |x| < @lim, else @big: series where a formula cancels. */
static int below(struct ctx *c, int x, double lim, int small, int big)
{
	return sel(c, cmp(c, VTPU_LT, unary(c, VTPU_ABS, x), lim), small, big);
}

/* x (k[0] + x^2 (k[1] + ...)): an odd series. */
static int odd_series(struct ctx *c, int x, const double *k, int nk)
{
	return mul(c, x, horner(c, mul(c, x, x), k, nk));
}

/*
 * atan by Cephes' atanf: |x| reduced to [0, tan(pi/8)] through
 * atan(x) = pi/2 - atan(1/x) and pi/4 + atan((x - 1) / (x + 1)), then an
 * odd polynomial; the sign restored.
 */
static int atan_f32(struct ctx *c, int x)
{
	static const double p[] = { 1, -3.33329491539e-1, 1.99777106478e-1,
				    -1.38776856032e-1, 8.05374449538e-2 };
	int a = unary(c, VTPU_ABS, x), hi, mid, r, base, y;

	hi = cmp(c, VTPU_GT, a, 2.414213562373095);
	mid = cmp(c, VTPU_GT, a, 0.4142135623730950);
	r = sel(c, hi, dvd(c, kst(c, -1, x), a),
		sel(c, mid, dvd(c, sub(c, a, kst(c, 1, x)), add(c, a, kst(c, 1, x))), a));
	base = sel(c, hi, kst(c, M_PI_2, x), sel(c, mid, kst(c, M_PI_4, x), kst(c, 0, x)));
	y = add(c, base, odd_series(c, r, p, 5));
	return sel(c, cmp(c, VTPU_LT, x, 0), unary(c, VTPU_NEG, y), y);
}

/* log(x + sqrt(x^2 + @s)): asinh (s 1, |x|), acosh (s -1). */
static int log_hyp(struct ctx *c, int x, double s)
{
	int q = add(c, mul(c, x, x), kst(c, s, x));

	return unary(c, VTPU_LOG, add(c, x, unary(c, VTPU_SQRT, q)));
}

/*
 * Sinh, Cosh, Asinh, Acosh, Atanh, Asin, Acos, Atan (arg 0 to 7) from
 * exp, log, sqrt and the odd series where those cancel (|x| small).
 */
int onnx_op_math(struct ctx *c, node_t *n, const struct opdef *d)
{
	static const double sinh_k[] = { 1, 1.0 / 6, 1.0 / 120, 1.0 / 5040,
					 1.0 / 362880, 1.0 / 39916800 };
	static const double asinh_k[] = { 1, -1.0 / 6, 3.0 / 40, -15.0 / 336,
					  105.0 / 3456, -945.0 / 42240 };
	static const double atanh_k[] = { 1, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9,
					  1.0 / 11 };
	int x = f32_in(c, n), y, e, ei, a, one;

	if (x < 0)
		return x;
	one = kst(c, 1, x);
	switch (d->arg) {
	case 0:	/* sinh */
	case 1:	/* cosh */
		e = unary(c, VTPU_EXP, x);
		ei = dvd(c, one, e);
		y = mul(c, onnx_binary(c, d->arg ? VTPU_ADD : VTPU_SUB, e, ei),
			kst(c, 0.5, x));
		if (!d->arg)
			y = below(c, x, 0.5, odd_series(c, x, sinh_k, 6), y);
		break;
	case 2:	/* asinh, odd */
		a = log_hyp(c, unary(c, VTPU_ABS, x), 1);
		y = sel(c, cmp(c, VTPU_LT, x, 0), unary(c, VTPU_NEG, a), a);
		y = below(c, x, 0.125, odd_series(c, x, asinh_k, 6), y);
		break;
	case 3:	/* acosh */
		y = log_hyp(c, x, -1);
		break;
	case 4:	/* atanh = log((1 + x) / (1 - x)) / 2 */
		y = dvd(c, add(c, one, x), sub(c, one, x));
		y = mul(c, unary(c, VTPU_LOG, y), kst(c, 0.5, x));
		y = below(c, x, 0.125, odd_series(c, x, atanh_k, 6), y);
		break;
	case 5:	/* asin = atan(x / sqrt((1 - x)(1 + x))) */
		y = unary(c, VTPU_SQRT, mul(c, sub(c, one, x), add(c, one, x)));
		y = atan_f32(c, dvd(c, x, y));
		break;
	case 6:	/* acos = 2 atan(sqrt((1 - x) / (1 + x))) */
		y = unary(c, VTPU_SQRT, dvd(c, sub(c, one, x), add(c, one, x)));
		y = mul(c, atan_f32(c, y), kst(c, 2, x));
		break;
	default:
		y = atan_f32(c, x);
		break;
	}
	return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
}

/* Mod: compose.c's remainder; fmod = 0 (integers only) takes the divisor's sign. */
int onnx_op_mod(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[2] = { onnx_in(c, n, 0), onnx_in(c, n, 1) };
	bool fmod_ = onnx_attr_i(n, "fmod", 0) != 0;
	enum vtpu_type t;

	(void)d;
	if (v[0] < 0 || v[1] < 0 || bcast_all(c, 2, v))
		return -EINVAL;
	t = onnx_shape_of(c, v[0]).type;
	if (t != VTPU_F32 && t != VTPU_S32)
		return onnx_fail(c, "unsupported type %s", type_name(t));
	if (t == VTPU_F32 && !fmod_)
		return onnx_fail(c, "fmod=0 is for integers");
	return onnx_out(c, n, 0, onnx_chk(c, compose_mod(c->g, v[0], v[1], !fmod_)));
}

/* Celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)). */
int onnx_op_celu(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = f32_in(c, n), y, zero;
	double al = onnx_attr_f(n, "alpha", 1.0f);

	(void)d;
	if (x < 0)
		return x;
	zero = kst(c, 0, x);
	y = unary(c, VTPU_EXP, dvd(c, x, kst(c, al, x)));
	y = mul(c, sub(c, y, kst(c, 1, x)), kst(c, al, x));
	y = add(c, onnx_binary(c, VTPU_MAX, x, zero), onnx_binary(c, VTPU_MIN, y, zero));
	return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
}

/* @v, a scalar or (@axis of @like) per-channel 1-D value, to @like's rank. */
int onnx_per_axis(struct ctx *c, int v, int like, int64_t axis)
{
	struct vtpu_shape s = onnx_shape_of(c, like), sv = onnx_shape_of(c, v);
	int64_t dims[R];
	int ax;

	if (v < 0 || sv.rank == 0 || (sv.rank == 1 && sv.dims[0] == 1) ||
	    (sv.rank == s.rank && s.rank > 1))
		return v;
	ax = onnx_axis_norm(c, axis, s.rank);
	if (ax < 0 || sv.rank != 1 || sv.dims[0] != s.dims[ax])
		return ax < 0 ? ax : onnx_fail(c, "scale and zero point must be scalars or [%lld]",
					       ax < 0 ? 0LL : (long long)s.dims[ax]);
	for (int i = 0; i < s.rank; i++)
		dims[i] = i == ax ? s.dims[ax] : 1;
	return onnx_reshape(c, v, s.rank, dims);
}

static int to_f32(struct ctx *c, int v)
{
	if (v < 0 || onnx_shape_of(c, v).type == VTPU_F32)
		return v;
	return onnx_chk(c, vtpu_g_convert(c->g, v, VTPU_F32));
}

/*
 * Input @i of @n (a scale or zero point) in f32, laid along @axis of
 * @like as onnx_per_axis() lays it; -ENOENT when the input is absent.
 */
int onnx_per_axis_in(struct ctx *c, node_t *n, size_t i, int like,
		     int64_t axis)
{
	if (!onnx_has_in(n, i))
		return -ENOENT;
	return onnx_per_axis(c, to_f32(c, onnx_in(c, n, i)), like, axis);
}

int onnx_int_inputs(struct ctx *c, node_t *n, size_t i, size_t j, int *a,
		    int *b)
{
	*a = onnx_in(c, n, i);
	*b = onnx_in(c, n, j);
	if (*a < 0 || *b < 0)
		return -EINVAL;
	if (onnx_shape_of(c, *a).type != VTPU_S32 ||
	    onnx_shape_of(c, *b).type != VTPU_S32)
		return onnx_fail(c, "wants integer inputs %zu and %zu", i, j);
	return 0;
}

/*
 * Integer @x in f32 less its zero point, input @i of @n if given: a
 * scalar, or one per index of @axis (the integer operators' per-row,
 * per-column or per-output-channel zero points).
 */
int onnx_less_zero_point(struct ctx *c, node_t *n, int x, size_t i,
			 int64_t axis)
{
	int zp = onnx_per_axis_in(c, n, i, x, axis);

	x = to_f32(c, x);
	if (zp == -ENOENT || x < 0)
		return x;
	return zp < 0 ? zp : onnx_binary(c, VTPU_SUB, x, zp);
}

/*
 * QuantizeLinear (arg 0): saturate(round(x / scale) + zero point), half
 * to even, into the zero point's range (uint8 unless it is int8);
 * DequantizeLinear (arg 1): (x - zero point) scale. The integers are the
 * device's s32; scale and zero point are scalars or per @axis.
 */
int onnx_op_quantize(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), y, zp = -1;
	int64_t axis = onnx_attr_i(n, "axis", 1);
	int scale = onnx_per_axis(c, to_f32(c, onnx_in(c, n, 1)), x, axis);
	double lo = 0, hi = 255;

	if (x < 0 || scale < 0)
		return -EINVAL;
	if (onnx_has_in(n, 2)) {
		struct val *v = onnx_lookup(c, n->input[2]);

		if (v && v->c && v->c->otype == ONNX__TENSOR_PROTO__DATA_TYPE__INT8)
			lo = -128, hi = 127;
		else if (v && v->c && v->c->otype &&
			 v->c->otype != ONNX__TENSOR_PROTO__DATA_TYPE__UINT8)
			return onnx_fail(c, "unsupported zero point type %s",
					 onnx_type_name(v->c->otype));
		zp = onnx_per_axis(c, to_f32(c, onnx_in(c, n, 2)), x, axis);
		if (zp < 0)
			return -EINVAL;
	}
	if (d->arg) {
		y = to_f32(c, x);
		if (zp >= 0)
			y = onnx_binary(c, VTPU_SUB, y, zp);
		return onnx_out(c, n, 0, onnx_binary(c, VTPU_MUL, y, scale));
	}
	if (onnx_shape_of(c, x).type != VTPU_F32)
		return onnx_fail(c, "x must be float");
	y = rounding(c, onnx_binary(c, VTPU_DIV, x, scale), 2);
	if (zp >= 0)
		y = onnx_binary(c, VTPU_ADD, y, zp);
	y = onnx_binary(c, VTPU_MAX, y, onnx_splat(c, lo, x));
	y = onnx_binary(c, VTPU_MIN, y, onnx_splat(c, hi, x));
	y = y < 0 ? y : onnx_chk(c, vtpu_g_convert(c->g, y, VTPU_S32));
	return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
}

/*
 * The range of the 8-bit type of zero point input @i of @n: int8's if
 * the model says so, uint8's otherwise (QuantizeLinear's default).
 */
int onnx_zp_range(struct ctx *c, node_t *n, size_t i, double *lo, double *hi)
{
	struct val *v = onnx_has_in(n, i) ? onnx_lookup(c, n->input[i]) : NULL;

	*lo = 0, *hi = 255;
	if (v && v->c && v->c->otype == ONNX__TENSOR_PROTO__DATA_TYPE__INT8)
		*lo = -128, *hi = 127;
	else if (v && v->c && v->c->otype &&
		 v->c->otype != ONNX__TENSOR_PROTO__DATA_TYPE__UINT8)
		return onnx_fail(c, "unsupported zero point type %s",
				 onnx_type_name(v->c->otype));
	return 0;
}

/*
 * The QLinear operators' output: acc (f32, exact integers) times the
 * scale @mult, rounded half to even, plus zero point input @zpi of @n,
 * saturated to its 8-bit range, as the device's s32.
 */
int onnx_requantize(struct ctx *c, node_t *n, int acc, int mult, size_t zpi)
{
	double lo, hi;
	int y;

	if (acc < 0 || mult < 0 || onnx_zp_range(c, n, zpi, &lo, &hi))
		return -EINVAL;
	y = rounding(c, onnx_binary(c, VTPU_MUL, acc, mult), 2);
	if (onnx_has_in(n, zpi))
		y = onnx_binary(c, VTPU_ADD, y, to_f32(c, onnx_in(c, n, zpi)));
	y = onnx_binary(c, VTPU_MAX, y, onnx_splat(c, lo, acc));
	y = onnx_binary(c, VTPU_MIN, y, onnx_splat(c, hi, acc));
	return y < 0 ? y : onnx_chk(c, vtpu_g_convert(c->g, y, VTPU_S32));
}

/*
 * DynamicQuantizeLinear: x to uint8 with the scale and zero point its own
 * range gives, as ONNX's reference computes them in f32: the range
 * [min(0, min x), max(0, max x)] over 255 levels (scale 1/255 for an
 * all-zero x), the zero point -min / scale clipped to [0, 255] then
 * rounded half to even, y = saturate(round(x / scale) + zero point).
 * The integers are the device's s32; scale and zero point are scalars.
 */
int onnx_op_dyn_quantize(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), axes[R], lo, hi, flat, same, scale, zp, y, bs, bz;
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (s.type != VTPU_F32)
		return onnx_fail(c, "x must be float");
	for (int i = 0; i < s.rank; i++)
		axes[i] = i;
	lo = onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MIN_OP, x, s.rank, axes));
	hi = onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MAX_OP, x, s.rank, axes));
	if (lo < 0 || hi < 0)
		return -EINVAL;
	lo = onnx_binary(c, VTPU_MIN, lo, onnx_splat(c, 0, lo));
	hi = onnx_binary(c, VTPU_MAX, hi, onnx_splat(c, 0, hi));
	flat = onnx_binary(c, VTPU_SUB, hi, lo);
	same = flat < 0 ? flat :
	       onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, flat, onnx_splat(c, 0, flat)));
	flat = same < 0 ? same :
	       onnx_chk(c, vtpu_g_select(c->g, same, onnx_splat(c, 1, flat), flat));
	scale = flat < 0 ? flat : onnx_binary(c, VTPU_DIV, flat,
					      onnx_splat(c, 255, flat));
	zp = scale < 0 ? scale : onnx_binary(c, VTPU_SUB, onnx_splat(c, 0, lo),
					     onnx_binary(c, VTPU_DIV, lo, scale));
	zp = zp < 0 ? zp : onnx_binary(c, VTPU_MAX, zp, onnx_splat(c, 0, zp));
	zp = zp < 0 ? zp : onnx_binary(c, VTPU_MIN, zp, onnx_splat(c, 255, zp));
	zp = rounding(c, zp, 2);
	bs = onnx_bcast_to(c, scale, s.rank, s.dims);
	bz = onnx_bcast_to(c, zp, s.rank, s.dims);
	y = bs < 0 || bz < 0 ? -EINVAL :
	    onnx_binary(c, VTPU_ADD, rounding(c, onnx_binary(c, VTPU_DIV, x, bs), 2),
			bz);
	y = onnx_binary(c, VTPU_MAX, y, onnx_splat(c, 0, x));
	y = onnx_binary(c, VTPU_MIN, y, onnx_splat(c, 255, x));
	y = y < 0 ? y : onnx_chk(c, vtpu_g_convert(c->g, y, VTPU_S32));
	zp = zp < 0 ? zp : onnx_chk(c, vtpu_g_convert(c->g, zp, VTPU_S32));
	if (c->failed || y < 0 || zp < 0)
		return -EINVAL;
	if (onnx_out(c, n, 0, y) < 0 || onnx_out(c, n, 1, scale) < 0)
		return -EINVAL;
	return onnx_out(c, n, 2, zp);
}

/*
 * BitShift of unsigned integers (as the device's s32): x 2^y or
 * trunc(x / 2^y), in f32, exact below 2^24.
 */
int onnx_op_bitshift(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[2] = { onnx_in(c, n, 0), onnx_in(c, n, 1) }, x, p, y;
	bool left = onnx_attr_s_is(n, "direction", "", "LEFT");

	(void)d;
	if (!left && !onnx_attr_s_is(n, "direction", "", "RIGHT"))
		return onnx_fail(c, "direction must be LEFT or RIGHT");
	if (v[0] < 0 || v[1] < 0 || bcast_all(c, 2, v))
		return -EINVAL;
	if (onnx_shape_of(c, v[0]).type != VTPU_S32)
		return onnx_fail(c, "unsupported type");
	x = to_f32(c, v[0]);
	p = onnx_binary(c, VTPU_POW, onnx_splat(c, 2, x), to_f32(c, v[1]));
	y = left ? mul(c, x, p) : trunc_f32(c, dvd(c, x, p));
	y = y < 0 ? y : onnx_chk(c, vtpu_g_convert(c->g, y, VTPU_S32));
	return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
}

/* f32 @x rounded to float16's precision, kept in f32: compose.c. */
static int round_half(struct ctx *c, int x)
{
	return onnx_chk(c, compose_round_f16(c->g, x));
}
