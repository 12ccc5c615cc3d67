// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * compose.c - functions the device lacks, built from the ones it has, for
 * every frontend: sin and cos, floor, ceil and the two roundings, erf,
 * the remainder, float16 rounding, sign. Each takes builder values of
 * one shape and returns a new value or the builder's -errno, which the
 * next call passes on: a chain of calls needs one check at its end, and
 * the graph keeps the first error's message.
 */
#include <errno.h>
#include <math.h>

#include "ir.h"

int compose_splat(struct vtpu_graph *g, double x, int like)
{
	struct vtpu_shape s;
	int v;

	if (vtpu_graph_shape(g, like, &s))
		return like < 0 ? like : -EINVAL;
	v = vtpu_g_scalar(g, (float)x);
	if (v >= 0 && s.type != VTPU_F32)
		v = vtpu_g_convert(g, v, s.type);
	if (v < 0 || !s.rank)
		return v;
	return vtpu_g_broadcast(g, v, s.rank, s.dims, NULL);
}

static int bin(struct vtpu_graph *g, enum vtpu_binary_op op, int a, int b)
{
	return vtpu_g_binary(g, op, a, b);
}

static int add(struct vtpu_graph *g, int a, int b)
{
	return bin(g, VTPU_ADD, a, b);
}

static int sub(struct vtpu_graph *g, int a, int b)
{
	return bin(g, VTPU_SUB, a, b);
}

static int mul(struct vtpu_graph *g, int a, int b)
{
	return bin(g, VTPU_MUL, a, b);
}

static int kst(struct vtpu_graph *g, double v, int like)
{
	return compose_splat(g, v, like);
}

static int cmp(struct vtpu_graph *g, enum vtpu_cmp_dir dir, int a, double b)
{
	return vtpu_g_compare(g, dir, a, kst(g, b, a));
}

static int sel(struct vtpu_graph *g, int p, int a, int b)
{
	return vtpu_g_select(g, p, a, b);
}

/* k[0] + x (k[1] + x (k[2] + ...)) */
static int horner(struct vtpu_graph *g, int x, const double *k, int nk)
{
	int y = kst(g, k[nk - 1], x);

	for (int i = nk - 2; i >= 0; i--)
		y = add(g, mul(g, y, x), kst(g, k[i], x));
	return y;
}

/* trunc(x) for |x| < 2^31, by the device's truncating conversion. */
int compose_trunc(struct vtpu_graph *g, int x)
{
	return vtpu_g_convert(g, vtpu_g_convert(g, x, VTPU_S32), VTPU_F32);
}

/* select(x > 0, 1, select(x < 0, -1, 0)), in x's type; NaN stays NaN. */
int compose_sign(struct vtpu_graph *g, int x)
{
	int zero = kst(g, 0, x);
	int y = sel(g, vtpu_g_compare(g, VTPU_LT, x, zero), kst(g, -1, x), zero);
	struct vtpu_shape s;

	y = sel(g, vtpu_g_compare(g, VTPU_GT, x, zero), kst(g, 1, x), y);
	if (!vtpu_graph_shape(g, x, &s) && s.type == VTPU_F32)
		y = sel(g, vtpu_g_compare(g, VTPU_NE, x, x), x, y);
	return y;
}

/*
 * Floor, ceil, round half to even, round half away from zero of f32.
 * The device's f32 -> s32 conversion truncates, so t = trunc(x) for
 * |x| < 2^23 (above, x is an integer already, or inf or NaN, and is its
 * own result); then step t by one where it is on the wrong side, or
 * where the fraction is over one half, or exactly one half and (half to
 * even) t is odd or (away from zero) always.
 */
int compose_round(struct vtpu_graph *g, int x, enum compose_rounding mode)
{
	int t = compose_trunc(g, x), one = kst(g, 1, x), zero = kst(g, 0, x);
	int adj, y, big;

	if (mode == ROUND_FLOOR) {	/* t > x: one less */
		adj = sel(g, vtpu_g_compare(g, VTPU_GT, t, x), kst(g, -1, x), zero);
	} else if (mode == ROUND_CEIL) {	/* t < x: one more */
		adj = sel(g, vtpu_g_compare(g, VTPU_LT, t, x), one, zero);
	} else {
		int a = vtpu_g_unary(g, VTPU_ABS, sub(g, x, t)), s, over, half, h;

		/* the step's direction: x's sign */
		s = sel(g, cmp(g, VTPU_LT, x, 0), kst(g, -1, x), one);
		over = cmp(g, VTPU_GT, a, 0.5);
		half = cmp(g, VTPU_EQ, a, 0.5);
		if (mode == ROUND_EVEN) {
			/* t odd: t - 2 trunc(t / 2) != 0 (t / 2 is exact) */
			h = mul(g, compose_trunc(g, mul(g, t, kst(g, 0.5, x))),
				kst(g, 2, x));
			adj = sel(g, vtpu_g_compare(g, VTPU_NE, t, h), s, zero);
			adj = sel(g, half, adj, zero);
		} else {
			adj = sel(g, half, s, zero);
		}
		adj = sel(g, over, s, adj);
	}
	y = add(g, t, adj);
	big = cmp(g, VTPU_LT, vtpu_g_unary(g, VTPU_ABS, x), 8388608.0);
	return sel(g, big, y, x);
}

/*
 * Erf from the device's exact GELU: erf(z) = 2 gelu(y) / y - 1 with
 * y = z sqrt2, where |z| >= 1/2 (z clamped to +-10, where erf is +-1 in
 * f32 and gelu(inf) / inf would be NaN); below, where that difference
 * cancels, the Taylor series to z^13 (relative error < 1e-8 at 1/2).
 */
int compose_erf(struct vtpu_graph *g, int z)
{
	static const double taylor[] = {
		1.1283791670955126, -0.37612638903183754, 0.11283791670955126,
		-0.026866170645131252, 0.005223977625442188,
		-0.0008548327023450852, 0.00012055332981789664,
	};
	int small, big, y;

	small = mul(g, z, horner(g, mul(g, z, z), taylor, 7));
	y = bin(g, VTPU_MIN, z, kst(g, 10, z));
	y = bin(g, VTPU_MAX, y, kst(g, -10, z));
	y = mul(g, y, kst(g, M_SQRT2, z));
	big = vtpu_g_unary(g, VTPU_GELU, y);
	big = bin(g, VTPU_DIV, mul(g, big, kst(g, 2, z)), y);
	big = sub(g, big, kst(g, 1, z));
	y = cmp(g, VTPU_LT, vtpu_g_unary(g, VTPU_ABS, z), 0.5);
	return sel(g, y, small, big);
}

/*
 * sin (@want 0) or cos (1) of f32 @x: x = k pi/2 + r with |r| <= pi/4
 * (pi/2 in three parts, Cody and Waite's, whose products with k are
 * exact for |k| < 2^16), then Cephes' minimax polynomials for sin r and
 * cos r, chosen and signed by k mod 4. A few ulp for |x| < 10^4; beyond,
 * the reduction loses what f32 cannot hold.
 */
int compose_sin_cos(struct vtpu_graph *g, int x, int want)
{
	static const double ps[] = { -1.6666654611e-1, 8.3321608736e-3,
				      -1.9515295891e-4 };
	static const double pc[] = { 4.166664568298827e-2,
				     -1.388731625493765e-3,
				     2.443315711809948e-5 };
	int u, k, r, z, s, co, q, t, odd, neg, y;

	u = mul(g, x, kst(g, M_2_PI, x));
	u = bin(g, VTPU_MIN, u, kst(g, 1 << 23, x));
	u = bin(g, VTPU_MAX, u, kst(g, -(1 << 23), x));
	k = compose_trunc(g, add(g, u, sel(g, cmp(g, VTPU_LT, u, 0),
					   kst(g, -0.5, x), kst(g, 0.5, x))));
	r = sub(g, x, mul(g, k, kst(g, 1.5703125, x)));
	r = sub(g, r, mul(g, k, kst(g, 4.837512969970703125e-4, x)));
	r = sub(g, r, mul(g, k, kst(g, 7.54978995489188216e-8, x)));
	z = mul(g, r, r);
	s = add(g, r, mul(g, mul(g, r, z), horner(g, z, ps, 3)));
	co = sub(g, kst(g, 1, x), mul(g, z, kst(g, 0.5, x)));
	co = add(g, co, mul(g, mul(g, z, z), horner(g, z, pc, 3)));
	/* q = k mod 4, floor(k / 4) exact; cos x = sin(x + pi/2) */
	t = mul(g, k, kst(g, 0.25, x));
	q = compose_trunc(g, t);
	q = sub(g, q, sel(g, vtpu_g_compare(g, VTPU_GT, q, t), kst(g, 1, x),
			  kst(g, 0, x)));
	q = sub(g, k, mul(g, q, kst(g, 4, x)));
	q = add(g, q, kst(g, want, x));
	odd = sel(g, cmp(g, VTPU_EQ, q, 1), cmp(g, VTPU_EQ, q, 1),
		  cmp(g, VTPU_EQ, q, 3));
	neg = sel(g, cmp(g, VTPU_GE, q, 2), cmp(g, VTPU_LE, q, 3),
		  cmp(g, VTPU_LT, q, 0));
	y = sel(g, odd, co, s);
	return sel(g, neg, vtpu_g_unary(g, VTPU_NEG, y), y);
}

/*
 * The remainder a - trunc(a / b) b of f32 or s32 values, computed in f32
 * (integers exact below 2^24) with a's sign (C's fmod, XLA's remainder);
 * @floor_mod: with b's sign instead (Python's %, ONNX Mod with fmod=0).
 * A quotient rounded up to the next integer leaves a remainder of the
 * wrong sign, which one more step of b puts right.
 */
int compose_mod(struct vtpu_graph *g, int a0, int b0, bool floor_mod)
{
	struct vtpu_shape s;
	int a, b, r, fix;

	if (vtpu_graph_shape(g, a0, &s))
		return a0 < 0 ? a0 : -EINVAL;
	a = s.type == VTPU_F32 ? a0 : vtpu_g_convert(g, a0, VTPU_F32);
	b = s.type == VTPU_F32 ? b0 : vtpu_g_convert(g, b0, VTPU_F32);
	r = sub(g, a, mul(g, compose_trunc(g, bin(g, VTPU_DIV, a, b)), b));
	/* |r| must not exceed |b|, with a's sign: step toward zero */
	fix = sel(g, cmp(g, VTPU_LT, a, 0), cmp(g, VTPU_GT, r, 0),
		  cmp(g, VTPU_LT, r, 0));
	r = sel(g, fix, sel(g, cmp(g, VTPU_LT, mul(g, r, b), 0), add(g, r, b),
			    sub(g, r, b)), r);
	if (floor_mod) {	/* the divisor's sign: r + b where they differ */
		fix = sel(g, cmp(g, VTPU_LT, b, 0), cmp(g, VTPU_GT, r, 0),
			  cmp(g, VTPU_LT, r, 0));
		r = sel(g, fix, add(g, r, b), r);
	}
	return s.type == VTPU_F32 ? r : vtpu_g_convert(g, r, s.type);
}

/*
 * s32 division, rounding toward zero (C's, XLA's, ONNX Div of integers):
 * the f32 quotient truncated (exact below 2^24), then one step where
 * the remainder shows it off by one; x / 0 is -1, as XLA defines it
 * (ONNX leaves it undefined).
 */
int compose_div_int(struct vtpu_graph *g, int a, int b)
{
	int fa = vtpu_g_convert(g, a, VTPU_F32), fb = vtpu_g_convert(g, b, VTPU_F32);
	int q = vtpu_g_convert(g, bin(g, VTPU_DIV, fa, fb), VTPU_S32);
	int r = sub(g, a, mul(g, q, b));
	int s = mul(g, compose_sign(g, a), compose_sign(g, b));
	int ar = bin(g, VTPU_MAX, r, sub(g, kst(g, 0, r), r));
	int ab = bin(g, VTPU_MAX, b, sub(g, kst(g, 0, b), b));
	int rneg = cmp(g, VTPU_LT, r, 0), aneg = cmp(g, VTPU_LT, a, 0);
	int anonneg = cmp(g, VTPU_GE, a, 0);
	/* r nonzero with the other sign than a */
	int wrong = sel(g, cmp(g, VTPU_NE, r, 0), sel(g, rneg, anonneg, aneg),
			kst(g, 0, rneg));

	q = sel(g, wrong, sub(g, q, s), q);
	q = sel(g, vtpu_g_compare(g, VTPU_GE, ar, ab), add(g, q, s), q);
	return sel(g, cmp(g, VTPU_EQ, b, 0), kst(g, -1, a), q);
}

/*
 * f32 @x rounded to float16's precision, kept in f32 (the device has no
 * float16): 11 significant bits by Veltkamp's split (x 8193 - (x 8193 -
 * x)), multiples of 2^-24 below 2^-14 (subnormals, (x + 3/4) - 3/4), and
 * infinity from 65520 up.
 */
int compose_round_f16(struct vtpu_graph *g, int x)
{
	int a = vtpu_g_unary(g, VTPU_ABS, x), p, hi, tiny, inf;

	p = mul(g, x, kst(g, 8193, x));
	hi = sub(g, p, sub(g, p, x));
	tiny = sub(g, add(g, x, kst(g, 0.75, x)), kst(g, 0.75, x));
	inf = sel(g, cmp(g, VTPU_LT, x, 0), kst(g, -INFINITY, x),
		  kst(g, INFINITY, x));
	hi = sel(g, cmp(g, VTPU_LT, a, 1.0 / 16384), tiny, hi);
	return sel(g, cmp(g, VTPU_GE, a, 65520), inf, hi);
}
