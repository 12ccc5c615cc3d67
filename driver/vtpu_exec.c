// SPDX-License-Identifier: GPL-2.0-only OR MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * The emulated TPU core: an interpreter for validated programs, and the
 * executable specification of the ISA in uapi/drm/vtpu_isa.h.
 *
 * vtpu.ko builds this file, three times (SSE2, AVX2, AVX-512F: see
 * VTPU_EXEC_ISA below), with kernel FPU support and runs it between
 * kernel_fpu_begin() and kernel_fpu_end(); userspace builds it the same
 * three times with -ffp-contract=off. Every float operation is an IEEE
 * operation in an order fixed by this code, and the transcendentals are
 * our own, so a program gives bit-identical results in the kernel and in
 * userspace, whichever build the CPU runs. Nothing with a float in its
 * signature is visible outside this file.
 *
 * The validator (vtpu_prog.c) has checked every operand: tiles lie inside
 * VMEM, DMA extents inside their bindings, shapes agree, a destination is
 * either disjoint from a source or exactly it. Nothing is checked again
 * here. VMEM must be 4-byte aligned (the kernel's is vmalloc'ed).
 *
 * What the ISA leaves to the executor, decided here:
 * - MATMUL accumulates the products in k order into an f32 accumulator
 *   that starts at d (VTPU_F_ACC) or at +0, each step one fused
 *   multiply-add (IEEE fusedMultiplyAdd, rounded once):
 *   fma(a1, b1, fma(a0, b0, init)) ...; a NaN result is 0x7fc00000.
 *   BINARY MADD is one such step per element, d = fma(a, b, d), and its
 *   NaN is that of glibc's fmaf() on x86-64: a's, else b's, else d's,
 *   quieted, else 0xffc00000.
 *   REDUCE folds along its axis in index order, starting from d (ACC) or
 *   from the first element.
 * - MAX and MIN propagate NaN and order -0 below +0 (IEEE 754-2019
 *   maximum and minimum); RELU is MAX(x, +0).
 * - EXP, TANH, SIGMOID and GELU are f32 polynomials in fused
 *   multiply-adds, the same operations in every lane (see
 *   vtpu_vexp32()): within 1, 2, 3 and 8 ulp of the exact result. LOG,
 *   RSQRT and POW are evaluated in double precision and rounded once to
 *   f32: within 1 ulp, and below 0.5 ulp on every input the unit tests
 *   try against libm (tests/unit/exec_ops.c prints the figures). GELU is
 *   the exact one, x * Phi(x), not the tanh approximation. SQRT, RECIP
 *   and DIV are the correctly rounded IEEE operations.
 * - Invalid operations (log of a negative number, ...) give the quiet NaN
 *   0x7fc00000 or whatever the SSE instruction gives; a NaN operand's
 *   payload is kept where the operation passes it through. GELU(-inf) is
 *   -0, its limit. IOTA into s32 wraps around like two's complement.
 *
 * Bit-identical results assume the default MXCSR (round to nearest, no
 * flush-to-zero): kernel_fpu_begin() loads it; a userspace process must
 * not change it (as -ffast-math's startup code does).
 */
#include "vtpu_exec.h"

/*
 * This file is built three times, each with its own instruction set:
 * plain (SSE2), and included by vtpu_exec_avx2.c and vtpu_exec_avx512.c,
 * which name their build in VTPU_EXEC_ISA. What is compiled differs in
 * vector width only: -ffp-contract=off everywhere, so elementwise code
 * the compiler vectorizes computes the same IEEE operations in any width,
 * and the explicitly vectorized multiply-add of MATMUL, MADD and the f32
 * polynomials is fused in every build (an FMA instruction, or its exact
 * emulation: see vtpu_vmadd()). The plain build also holds what does not
 * depend on the ISA: vtpu_exec_init() and the dispatch.
 */
#ifndef VTPU_EXEC_ISA
#define VTPU_EXEC_ISA		sse2
#define VTPU_EXEC_COMMON
#endif

#if defined(VTPU_EXEC_COMMON) && defined(__KERNEL__)
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>
#endif

#define VTPU_EXEC_CAT2(a, b)	a##_##b
#define VTPU_EXEC_CAT(a, b)	VTPU_EXEC_CAT2(a, b)

/*
 * MATMUL's vector: VTPU_VW f32 lanes in one register (GCC vector
 * extensions and, for FMA, the compiler's builtins: the kernel has no
 * <immintrin.h>). One work
 * unit (see VTPU_W_INSN) pays for VTPU_VW / 4 lanes' multiply-adds: a
 * register's worth costs about the same whatever its width.
 */
#if defined(__AVX512F__)
#define VTPU_VW			16
#elif defined(__AVX2__)
#define VTPU_VW			8
#else
#define VTPU_VW			4
#endif
#define VTPU_MADDS_PER_UNIT	(VTPU_VW / 4)
#define VTPU_VF float __attribute__((vector_size(VTPU_VW * 4)))
#define VTPU_VI int __attribute__((vector_size(VTPU_VW * 4)))

#define VTPU_F32_INF	0x7f800000u
#define VTPU_F32_QNAN	0x7fc00000u

static inline u32 vtpu_fbits(float f)
{
	u32 u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float vtpu_bitsf(u32 u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline u64 vtpu_dbits(double d)
{
	u64 u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static inline double vtpu_bitsd(u64 u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* f32 bits to bf16: round to nearest even; a NaN stays a (quiet) NaN. */
static inline u16 vtpu_bf16_round(u32 x)
{
	if ((x & 0x7fffffff) > VTPU_F32_INF)
		return (x >> 16) | 0x0040;
	return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
}

static inline float vtpu_bf16_to_f32(u16 h)
{
	return vtpu_bitsf((u32)h << 16);
}

static inline u32 vtpu_esize(u8 dtype)
{
	return dtype == VTPU_DT_BF16 ? 2 : 4;
}

/* Row @r of tile @t in VMEM. */
static inline u8 *vtpu_row(const struct vtpu_exec *e, const struct vtpu_tile *t,
			   u32 r)
{
	return e->vmem + t->addr + (size_t)r * t->stride * vtpu_esize(t->dtype);
}

static inline float *vtpu_frow(const struct vtpu_exec *e,
			       const struct vtpu_tile *t, u32 r)
{
	return (float *)vtpu_row(e, t, r);
}

/* Element @j of a row of f32 or bf16, as f32. */
static inline float vtpu_load_float(const u8 *row, u8 dtype, u32 j)
{
	u16 h;
	float f;

	if (dtype == VTPU_DT_BF16) {
		memcpy(&h, row + 2 * j, sizeof(h));
		return vtpu_bf16_to_f32(h);
	}
	memcpy(&f, row + 4 * j, sizeof(f));
	return f;
}

static inline void vtpu_store_float(u8 *row, u8 dtype, u32 j, float f)
{
	u16 h;

	if (dtype == VTPU_DT_BF16) {
		h = vtpu_bf16_round(vtpu_fbits(f));
		memcpy(row + 2 * j, &h, sizeof(h));
	} else {
		memcpy(row + 4 * j, &f, sizeof(f));
	}
}

/* f32 -> s32: toward zero, saturating, NaN -> 0 (a bare cast is UB). */
static inline s32 vtpu_f32_to_s32(float f)
{
	if (f != f)
		return 0;
	if (f >= 2147483648.0f)
		return 0x7fffffff;
	if (f <= -2147483648.0f)
		return -0x7fffffff - 1;
	return (s32)f;
}

/* double -> f32 with overflow to infinity spelled out. */
static inline float vtpu_narrow(double v)
{
	if (v >= 3.4028235677973366e38)
		return vtpu_bitsf(VTPU_F32_INF);
	if (v <= -3.4028235677973366e38)
		return -vtpu_bitsf(VTPU_F32_INF);
	return (float)v;
}

/* Sign-magnitude helpers that are exact for every input, NaN included. */
static inline float vtpu_absf(float x)
{
	return vtpu_bitsf(vtpu_fbits(x) & 0x7fffffff);
}

static inline float vtpu_negf(float x)
{
	return vtpu_bitsf(vtpu_fbits(x) ^ 0x80000000);
}

static inline bool vtpu_signbit(float x)
{
	return vtpu_fbits(x) >> 31;
}

/*
 * The NaN an operation of @x and @y gives when one of them is NaN: @x
 * quieted if it is one, else @y quieted (x86's rule, spelt out: the
 * compiler may swap the operands of a commutative operation); @r, the
 * operation's result, otherwise.
 */
static inline float vtpu_nan2(float x, float y, float r)
{
	if (x != x)
		return vtpu_bitsf(vtpu_fbits(x) | 0x00400000);
	if (y != y)
		return vtpu_bitsf(vtpu_fbits(y) | 0x00400000);
	return r;
}

/* IEEE 754-2019 maximum: NaN wins, -0 < +0. */
static inline float vtpu_maxf(float x, float y)
{
	if (x != x || y != y)
		return vtpu_nan2(x, y, 0);
	if (x == y)
		return vtpu_bitsf(vtpu_fbits(x) & vtpu_fbits(y));
	return x > y ? x : y;
}

static inline float vtpu_minf(float x, float y)
{
	if (x != x || y != y)
		return vtpu_nan2(x, y, 0);
	if (x == y)
		return vtpu_bitsf(vtpu_fbits(x) | vtpu_fbits(y));
	return x < y ? x : y;
}

/*
 * Transcendentals, in double precision. The argument reduction constants
 * split ln 2 so that n * VTPU_LN2_HI is exact for |n| < 2^20.
 */
#define VTPU_LN2_HI	0.6931471803691238
#define VTPU_LN2_LO	0.00000000019082149292705877
#define VTPU_LOG2E	1.4426950408889634
#define VTPU_SQRT2	1.4142135623730951

/*
 * e^x for |x| <= 700, POW's: x = n ln2 + r with |r| <= ln2 / 2, and e^r
 * from its Taylor polynomial of degree 13 (truncation error < 1e-17). n
 * is x log2 e rounded to nearest (even) by adding and subtracting
 * 1.5 * 2^52, whose sum also holds n in its low bits (vtpu_vlog() makes
 * a double of an integer the other way round).
 */
#define VTPU_ROUND_MAGIC	6755399441055744.0
#define VTPU_ROUND_BITS		0x4338000000000000ll

static const double vtpu_exp_poly[] = {
	1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
	1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0,
	1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0,
};

static double vtpu_exp(double x)
{
	double s = x * VTPU_LOG2E + VTPU_ROUND_MAGIC;
	double n = s - VTPU_ROUND_MAGIC, r, p;
	s64 e = (s64)vtpu_dbits(s) - VTPU_ROUND_BITS;
	u32 i;

	r = (x - n * VTPU_LN2_HI) - n * VTPU_LN2_LO;
	p = vtpu_exp_poly[0];
	for (i = 1; i < ARRAY_SIZE(vtpu_exp_poly); i++)
		p = p * r + vtpu_exp_poly[i];
	return p * vtpu_bitsd((u64)(e + 1023) << 52);
}

/*
 * ln x for finite x > 0 (a normal double): x = 2^e m, m in (1/sqrt2,
 * sqrt2], f = m - 1, s = f / (2 + f) and ln m = 2 atanh s =
 * f - s (f - R(s^2)), R the tail of the atanh series.
 */
static const double vtpu_log_poly[] = {
	2.0 / 21, 2.0 / 19, 2.0 / 17, 2.0 / 15, 2.0 / 13, 2.0 / 11,
	2.0 / 9, 2.0 / 7, 2.0 / 5, 2.0 / 3,
};

static double vtpu_log(double x)
{
	u64 u = vtpu_dbits(x);
	int e = (int)(u >> 52) - 1023;
	double m, f, s, z, r;
	u32 i;

	m = vtpu_bitsd((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
	if (m > VTPU_SQRT2) {
		m *= 0.5;
		e++;
	}
	f = m - 1;
	s = f / (2 + f);
	z = s * s;
	r = vtpu_log_poly[0];
	for (i = 1; i < ARRAY_SIZE(vtpu_log_poly); i++)
		r = r * z + vtpu_log_poly[i];
	r *= z;
	return e * VTPU_LN2_HI + (e * VTPU_LN2_LO + (f - s * (f - r)));
}

static float vtpu_rsqrtf(float x)
{
	return (float)(1 / __builtin_sqrt((double)x));
}

/*
 * LOG runs on vectors of VTPU_DW doubles. Each lane does the IEEE
 * operations written here, in this order, whatever the vector width,
 * and every element of a row goes through the vector code, its tail
 * padded: results do not depend on the build (the unit tests compare
 * the builds bit for bit). Special inputs are settled per lane after
 * the vector work, which they enter replaced by 1.
 */
#define VTPU_DW			(VTPU_VW / 2)
#define VTPU_VD double __attribute__((vector_size(VTPU_DW * 8)))
#define VTPU_VL long long __attribute__((vector_size(VTPU_DW * 8)))

static __always_inline VTPU_VD vtpu_vsel(VTPU_VL m, VTPU_VD a, VTPU_VD b)
{
	return (VTPU_VD)(((VTPU_VL)a & m) | ((VTPU_VL)b & ~m));
}

static __always_inline VTPU_VD vtpu_vload_d(const double *p)
{
	VTPU_VD v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * vtpu_log(), lane by lane, for normal x > 0. The exponent becomes a
 * double exactly through the bits of 1.5 * 2^52 + e, minus 1.5 * 2^52
 * (from 2^52 a negative e would fall into the binade below).
 */
static __always_inline VTPU_VD vtpu_vlog(VTPU_VD x)
{
	VTPU_VL u = (VTPU_VL)x, big;
	VTPU_VL e = (u >> 52) - 1023;
	VTPU_VD m, f, s, z, r, ed;
	u32 i;

	m = (VTPU_VD)((u & 0x000fffffffffffffll) | 0x3ff0000000000000ll);
	big = m > VTPU_SQRT2;
	m = vtpu_vsel(big, m * 0.5, m);
	e -= big;	/* a true lane is -1 */
	ed = (VTPU_VD)(e + VTPU_ROUND_BITS) - VTPU_ROUND_MAGIC;
	f = m - 1.0;
	s = f / (2.0 + f);
	z = s * s;
	r = (VTPU_VD){} + vtpu_log_poly[0];
	for (i = 1; i < ARRAY_SIZE(vtpu_log_poly); i++)
		r = r * z + vtpu_log_poly[i];
	r *= z;
	return ed * VTPU_LN2_HI + (ed * VTPU_LN2_LO + (f - s * (f - r)));
}

static __always_inline void vtpu_vlogf(float *y, const float *x)
{
	double in[VTPU_DW];
	VTPU_VD v;
	u32 l;

	for (l = 0; l < VTPU_DW; l++)
		in[l] = x[l] > 0 && vtpu_fbits(x[l]) < VTPU_F32_INF ? x[l] : 1;
	v = vtpu_vlog(vtpu_vload_d(in));
	for (l = 0; l < VTPU_DW; l++) {
		if (x[l] != x[l])
			y[l] = x[l] + x[l];
		else if (x[l] < 0)
			y[l] = vtpu_bitsf(VTPU_F32_QNAN);
		else if (x[l] == 0)
			y[l] = -vtpu_bitsf(VTPU_F32_INF);
		else if (vtpu_fbits(x[l]) == VTPU_F32_INF)
			y[l] = x[l];
		else
			y[l] = (float)v[l];
	}
}

/* A row of LOG; @d may be @a. */
static void vtpu_vlog_loop(float *d, const float *a, u32 n)
{
	float x[VTPU_DW], y[VTPU_DW];
	u32 j, l;

	for (j = 0; j + VTPU_DW <= n; j += VTPU_DW) {
		memcpy(x, a + j, sizeof(x));
		vtpu_vlogf(y, x);
		memcpy(d + j, y, sizeof(y));
	}
	if (j == n)
		return;
	for (l = 0; l < VTPU_DW; l++)
		x[l] = j + l < n ? a[j + l] : 0;
	vtpu_vlogf(y, x);
	memcpy(d + j, y, (n - j) * sizeof(*d));
}

/* C99 powf() special cases; otherwise e^(y ln|x|) with the sign of x^y. */
static float vtpu_powf(float x, float y)
{
	float ax = vtpu_absf(x), ay = vtpu_absf(y), r;
	bool yint, yodd = false;
	s32 i;

	if (y == 0 || x == 1)
		return 1;
	if (x != x || y != y)
		return vtpu_nan2(x, y, 0);
	if (vtpu_fbits(ay) == VTPU_F32_INF) {
		if (ax == 1)
			return 1;
		return (ax < 1) == (y < 0) ? vtpu_bitsf(VTPU_F32_INF) : 0;
	}
	if (ay >= 16777216.0f) {
		yint = true;	/* and even */
	} else {
		i = (s32)y;
		yint = (float)i == y;
		yodd = yint && (i & 1);
	}
	if (x < 0 && vtpu_fbits(ax) != VTPU_F32_INF && !yint)
		return vtpu_bitsf(VTPU_F32_QNAN);

	if (ax == 0) {
		r = y < 0 ? vtpu_bitsf(VTPU_F32_INF) : 0;
	} else if (vtpu_fbits(ax) == VTPU_F32_INF) {
		r = y < 0 ? 0 : vtpu_bitsf(VTPU_F32_INF);
	} else {
		double l = y * vtpu_log(ax);

		if (l > 200)
			l = 200;
		if (l < -200)
			l = -200;
		r = vtpu_narrow(vtpu_exp(l));
	}
	return vtpu_signbit(x) && yodd ? vtpu_negf(r) : r;
}

/*
 * The cheap elementwise functions, and MATMUL, on VTPU_VW f32 lanes.
 * Each lane does the same IEEE operations (or compares and bit
 * selections) whatever the width, so every build gives the same bits;
 * a row's tail is a vector too, its missing lanes zero and never stored.
 */
static __always_inline VTPU_VF vtpu_vload(const float *p)
{
	VTPU_VF v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static __always_inline void vtpu_vstore(float *p, VTPU_VF v)
{
	memcpy(p, &v, sizeof(v));
}

/*
 * Lanes [0, @n) of @p, n <= VTPU_VW; the others zero. A row's tail:
 * masked moves where the ISA has them (they touch no byte past the
 * row's end, which may be another core's), lane by lane in SSE2.
 */
#if defined(__AVX512F__)
static __always_inline VTPU_VF vtpu_vload_n(const float *p, u32 n)
{
	if (n == VTPU_VW)
		return vtpu_vload(p);
	return __builtin_ia32_loadups512_mask(p, (VTPU_VF){},
					      (u16)(BIT(n) - 1));
}

static __always_inline void vtpu_vstore_n(float *p, VTPU_VF v, u32 n)
{
	if (n == VTPU_VW)
		vtpu_vstore(p, v);
	else
		__builtin_ia32_storeups512_mask(p, v, (u16)(BIT(n) - 1));
}
#elif defined(__AVX2__)
static __always_inline VTPU_VI vtpu_vmask_n(u32 n)
{
	const VTPU_VI lane = { 0, 1, 2, 3, 4, 5, 6, 7 };

	return lane < (int)n;
}

static __always_inline VTPU_VF vtpu_vload_n(const float *p, u32 n)
{
	if (n == VTPU_VW)
		return vtpu_vload(p);
	return __builtin_ia32_maskloadps256((const VTPU_VF *)p,
					    vtpu_vmask_n(n));
}

static __always_inline void vtpu_vstore_n(float *p, VTPU_VF v, u32 n)
{
	if (n == VTPU_VW)
		vtpu_vstore(p, v);
	else
		__builtin_ia32_maskstoreps256((VTPU_VF *)p, vtpu_vmask_n(n), v);
}
#else
static __always_inline VTPU_VF vtpu_vload_n(const float *p, u32 n)
{
	VTPU_VF v = {};
	u32 l;

	float f;

	if (n == VTPU_VW)
		return vtpu_vload(p);
	/*
	 * A few lanes, each a 4-byte copy (a move, not a call): a DMA's
	 * side of a binding need not be aligned.
	 */
	for (l = 0; l < n; l++) {
		memcpy(&f, (const u8 *)p + 4 * l, sizeof(f));
		v[l] = f;
	}
	return v;
}

static __always_inline void vtpu_vstore_n(float *p, VTPU_VF v, u32 n)
{
	u32 l;
	float f;

	if (n == VTPU_VW) {
		vtpu_vstore(p, v);
		return;
	}
	for (l = 0; l < n; l++) {
		f = v[l];
		memcpy((u8 *)p + 4 * l, &f, sizeof(f));
	}
}
#endif

static __always_inline VTPU_VF vtpu_splat(float x)
{
	/* zeroed first only for -Wmaybe-uninitialized: one broadcast */
	VTPU_VF v = {};
	int l;

	for (l = 0; l < VTPU_VW; l++)
		v[l] = x;
	return v;
}

/* m ? a : b, lane by lane (m all ones or all zeros) */
static __always_inline VTPU_VF vtpu_vblend(VTPU_VI m, VTPU_VF a, VTPU_VF b)
{
	return (VTPU_VF)(((VTPU_VI)a & m) | ((VTPU_VI)b & ~m));
}

/* vtpu_nan2() on lanes. */
static __always_inline VTPU_VF vtpu_vnan2(VTPU_VF x, VTPU_VF y, VTPU_VF r)
{
	const VTPU_VI quiet = (VTPU_VI){ 0 } + 0x00400000;

	r = vtpu_vblend(y != y, (VTPU_VF)((VTPU_VI)y | quiet), r);
	return vtpu_vblend(x != x, (VTPU_VF)((VTPU_VI)x | quiet), r);
}

/*
 * The multiply-add of MATMUL, of BINARY MADD and of the f32 polynomials
 * is fused: c + a b rounded once, the IEEE fusedMultiplyAdd, as the FMA
 * instructions of AVX2 and AVX-512 compute it. A build without them
 * (SSE2, or clang's fuzzers, which get no -m flags) computes the same
 * bits from doubles: a b is exact in double, Knuth's TwoSum gives p + c
 * and its exact error, and the sum rounded to odd (truncated, last bit
 * set if inexact) rounds correctly to f32, which has fewer than 53 - 2
 * bits (Boldo and Melquiond, "When double rounding is odd", 2005).
 * Infinities and NaNs come out of the double sum as they would from the
 * fused one; which NaN operand comes out is settled afterwards where it
 * matters (MATMUL's NaN is canonical, MADD's see vtpu_vmadd_nan()).
 */
#if defined(__AVX512F__)
#define VTPU_MM_FUSED	1
#define VTPU_MM_COST	1
static __always_inline VTPU_VF vtpu_vmadd(VTPU_VF a, VTPU_VF b, VTPU_VF c)
{
	return __builtin_ia32_vfmaddps512_mask(a, b, c, (u16)~0, 4);
}

/* Whether a lane of @v is a NaN (3: _CMP_UNORD_Q). */
static __always_inline bool vtpu_vany_nan(VTPU_VF v)
{
	return __builtin_ia32_cmpps512_mask(v, v, 3, (u16)~0, 4);
}
#elif defined(__FMA__) && VTPU_VW == 8
#define VTPU_MM_FUSED	1
#define VTPU_MM_COST	1
static __always_inline VTPU_VF vtpu_vmadd(VTPU_VF a, VTPU_VF b, VTPU_VF c)
{
	return __builtin_ia32_vfmaddps256(a, b, c);
}

static __always_inline bool vtpu_vany_nan(VTPU_VF v)
{
	return __builtin_ia32_movmskps256((VTPU_VF)(v != v));
}
#else
#define VTPU_MM_FUSED	0
/* Work units per multiply-add, as measured against the fused builds. */
#define VTPU_MM_COST	8
#if VTPU_VW != 4
#error "an executor build with vectors wider than SSE's needs FMA (-mfma)"
#endif
#define VTPU_VH float __attribute__((vector_size(8)))
#define VTPU_VU unsigned long long __attribute__((vector_size(16)))

static __always_inline VTPU_VD vtpu_vfma_d(VTPU_VD a, VTPU_VD b, VTPU_VD c)
{
	VTPU_VD p = a * b, s = p + c, t = s - p;
	VTPU_VD err = (p - (s - t)) + (c - t);
	VTPU_VL nonzero = err != 0, finite = s - s == 0;
	VTPU_VL eneg = err < 0, sneg = s < 0;
	VTPU_VU inexact, inside, odd;

	/*
	 * Plain bit masks from here on: GCC would otherwise turn the
	 * compares' truth values into lane-by-lane selects.
	 */
	__asm__("" : "+x" (nonzero), "+x" (finite), "+x" (eneg), "+x" (sneg));
	/* all ones where the sum is finite and inexact */
	inexact = (VTPU_VU)nonzero & (VTPU_VU)finite;
	/* all ones where the exact sum lies between s and zero */
	inside = inexact & ((VTPU_VU)eneg ^ (VTPU_VU)sneg);
	/* 1 where inexact: a shift, as SSE2 has no 64-bit compare */
	odd = inexact >> 63;

	return (VTPU_VD)(((VTPU_VU)s + inside) | odd);
}

static __always_inline VTPU_VD vtpu_vwiden(VTPU_VH h)
{
	return __builtin_convertvector(h, VTPU_VD);
}

/* fma() of two lanes, @lanes: "0, 1" or "2, 3" */
#define VTPU_VFMA_HALF(a, b, c, lanes...) \
	__builtin_convertvector( \
		vtpu_vfma_d(vtpu_vwiden(__builtin_shufflevector(a, a, lanes)), \
			    vtpu_vwiden(__builtin_shufflevector(b, b, lanes)), \
			    vtpu_vwiden(__builtin_shufflevector(c, c, lanes))), \
		VTPU_VH)

static __always_inline VTPU_VF vtpu_vmadd(VTPU_VF a, VTPU_VF b, VTPU_VF c)
{
	VTPU_VH lo = VTPU_VFMA_HALF(a, b, c, 0, 1);
	VTPU_VH hi = VTPU_VFMA_HALF(a, b, c, 2, 3);

	return __builtin_shufflevector(lo, hi, 0, 1, 2, 3);
}

static __always_inline bool vtpu_vany_nan(VTPU_VF v)
{
	VTPU_VI m = v != v;
	u64 h[2];

	memcpy(h, &m, sizeof(h));
	return h[0] | h[1];
}
#endif

/*
 * MADD's a b + c. Which NaN operand an FMA instruction passes on depends
 * on the operand order the compiler picked (vfmadd132, 213 or 231), so
 * MADD spells it out, as glibc's fmaf() gives it on x86-64: a quieted if
 * it is a NaN, else b, else c; an invalid product or sum of numbers
 * gives the default NaN 0xffc00000, from the instructions as from the
 * doubles of the emulation. A NaN operand makes a NaN result, so a
 * vector of numbers returns before the lane selections, which would
 * cost a third of MADD's time.
 */
static __always_inline VTPU_VF vtpu_vmadd_nan(VTPU_VF a, VTPU_VF b, VTPU_VF c)
{
	VTPU_VF r = vtpu_vmadd(a, b, c);

	if (likely(!vtpu_vany_nan(r)))
		return r;
	return vtpu_vnan2(a, b, vtpu_vnan2(c, c, r));
}

/* vtpu_maxf() (@max) or vtpu_minf() on lanes. */
static __always_inline VTPU_VF vtpu_vmaxmin(bool max, VTPU_VF x, VTPU_VF y)
{
	VTPU_VI eq = x == y;
	VTPU_VF r, z;

	if (max) {
		r = vtpu_vblend(x > y, x, y);
		z = (VTPU_VF)((VTPU_VI)x & (VTPU_VI)y);
	} else {
		r = vtpu_vblend(x < y, x, y);
		z = (VTPU_VF)((VTPU_VI)x | (VTPU_VI)y);
	}
	return vtpu_vnan2(x, y, vtpu_vblend(eq, z, r));
}

/*
 * vtpu_vnan2() where @r, x op y, has a NaN lane: an operand's NaN always
 * makes one, so a vector of numbers skips the selections (as MADD).
 */
static __always_inline VTPU_VF vtpu_vnan2_cold(VTPU_VF x, VTPU_VF y, VTPU_VF r)
{
	if (likely(!vtpu_vany_nan(r)))
		return r;
	return vtpu_vnan2(x, y, r);
}

static __always_inline VTPU_VF vtpu_vbinary_fn(u8 sub, VTPU_VF x, VTPU_VF y)
{
	switch (sub) {
	case VTPU_BINARY_ADD:
		return vtpu_vnan2_cold(x, y, x + y);
	case VTPU_BINARY_SUB:
		return x - y;
	case VTPU_BINARY_MUL:
		return vtpu_vnan2_cold(x, y, x * y);
	case VTPU_BINARY_DIV:
		return x / y;
	case VTPU_BINARY_MAX:
		return vtpu_vmaxmin(true, x, y);
	}
	return vtpu_vmaxmin(false, x, y);	/* VTPU_BINARY_MIN */
}

static __always_inline VTPU_VI vtpu_vcmp_fn(u8 sub, VTPU_VF x, VTPU_VF y)
{
	switch (sub) {
	case VTPU_CMP_EQ:
		return x == y;
	case VTPU_CMP_NE:
		return x != y;
	case VTPU_CMP_LT:
		return x < y;
	case VTPU_CMP_LE:
		return x <= y;
	case VTPU_CMP_GT:
		return x > y;
	}
	return x >= y;	/* VTPU_CMP_GE */
}

/*
 * EXP, TANH, SIGMOID and GELU on VTPU_VW f32 lanes: polynomials in fused
 * multiply-adds (vtpu_vmadd(), defined above: an FMA instruction, or
 * its exact emulation in a build without one), so
 * every lane does the same IEEE operations whatever the width and every
 * build gives the same bits. Special inputs are clamped into the range
 * the polynomials handle and settled by selects after them; no lane is
 * looked at alone. A row goes through in blocks of VTPU_XBLK vectors,
 * independent chains the CPU overlaps (a polynomial is a chain of
 * dependent FMAs, each waiting ~4 cycles for the last).
 *
 * Accuracy, measured against libm's double by tests/unit/exec_ops.c's
 * sweeps (their bound in brackets): EXP < 1 ulp [1], SIGMOID < 2 [2],
 * TANH < 2 [2], GELU < 6 [8] (deep in its negative tail, where
 * e^(-x^2/2) is small; near 0 and for x > 0 < 2).
 */

#define VTPU_XBLK		4
#define VTPU_F32_LOG2E		1.44269504f
#define VTPU_F32_LN2_HI		0.693145751953125f	/* 15 bits */
#define VTPU_F32_LN2_LO		0.00000142860677f
#define VTPU_F32_ROUND		12582912.0f		/* 1.5 * 2^23 */
#define VTPU_F32_ROUND_BITS	0x4b400000

/* Cephes' expf() polynomial: e^r = 1 + r + r^2 P(r), |r| <= ln2 / 2. */
static const float vtpu_expf_poly[] = {
	0.00019875691500f, 0.0013981999507f, 0.0083334519073f,
	0.041665795894f, 0.16666665459f, 0.50000001201f,
};

/* Cephes' tanhf() polynomial: tanh x = x + x^3 P(x^2), |x| < 0.625. */
static const float vtpu_tanhf_poly[] = {
	-0.00570498872745f, 0.0206390887954f, -0.0537397155531f,
	0.133314422036f, -0.333332819422f,
};

/*
 * GELU, fitted for this file (Chebyshev, in relative terms): near 0,
 * gelu(x) = x (1/2 + x S(x^2)) for |x| < 0.75 (S < 1e-10); beyond, the
 * tail Q(a) = erfc(a / sqrt2) / 2 = e^(-a^2 / 2) R(a), a = |x|, with
 * R(a) (a + 4) / 8 a polynomial in t = (a - 4) / (a + 4), t in
 * [-0.68, 0.57] for a in [0.75, 14.5] (< 1e-9); 1 - t = 8 / (a + 4)
 * gives R back without a second division. t's rounding is most of the
 * tail's error.
 */
static const float vtpu_gelu_near[] = {
	-0.000008434553820f, 0.0001148385491f, -0.001187165151f,
	0.009973537177f, -0.06649038196f, 0.3989422917f,
};

static const float vtpu_gelu_tail[] = {
	-0.000001136457627f, -0.00002496053821f, 0.00001732600867f,
	0.0002024664282f, -0.0004351122479f, -0.0009423038573f,
	0.007549583446f, -0.02331524715f, 0.04839217663f,
	-0.07598707825f, 0.09441064298f,
};

#define VTPU_GELU_NEAR		0.75f
#define VTPU_GELU_K		4.0f
#define VTPU_GELU_MAX		14.5f	/* beyond, x Q(|x|) rounds to 0 */

static __always_inline VTPU_VF vtpu_vpoly(const float *c, u32 n, VTPU_VF x)
{
	VTPU_VF p = vtpu_splat(c[0]);
	u32 i;

	for (i = 1; i < n; i++)
		p = vtpu_vmadd(p, x, vtpu_splat(c[i]));
	return p;
}

/* Lanes of @x clamped to [lo, hi], a NaN to @hi. */
static __always_inline VTPU_VF vtpu_vclamp(VTPU_VF x, float lo, float hi)
{
	x = vtpu_vblend(x < hi, x, vtpu_splat(hi));
	return vtpu_vblend(x > lo, x, vtpu_splat(lo));
}

/*
 * e^x for x in [-104, 89], outside which it rounds to 0 or overflows
 * anyway: x = n ln2 + r, n = rint(x log2 e) read from the bits of the
 * fused sum with 1.5 * 2^23, and the result scaled by 2^n as two powers
 * of two, each normal, so a subnormal result is rounded only once.
 */
static __always_inline VTPU_VF vtpu_vexp32(VTPU_VF x)
{
	const VTPU_VF round = vtpu_splat(VTPU_F32_ROUND);
	VTPU_VF s = vtpu_vmadd(x, vtpu_splat(VTPU_F32_LOG2E), round);
	VTPU_VF n = s - round, r, p;
	VTPU_VI ni = (VTPU_VI)s - VTPU_F32_ROUND_BITS, n1;

	r = vtpu_vmadd(n, vtpu_splat(-VTPU_F32_LN2_HI), x);
	r = vtpu_vmadd(n, vtpu_splat(-VTPU_F32_LN2_LO), r);
	p = vtpu_vpoly(vtpu_expf_poly, ARRAY_SIZE(vtpu_expf_poly), r);
	p = vtpu_vmadd(p, r * r, r) + 1.0f;
	n1 = ni >> 1;
	p *= (VTPU_VF)((n1 + 127) << 23);
	return p * (VTPU_VF)((ni - n1 + 127) << 23);
}

static __always_inline VTPU_VF vtpu_vexpf(VTPU_VF x)
{
	VTPU_VF y = vtpu_vexp32(vtpu_vclamp(x, -104.0f, 89.0f));

	return vtpu_vblend(x != x, x + x, y);
}

/* 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below: one division. */
static __always_inline VTPU_VF vtpu_vsigmoidf(VTPU_VF x)
{
	const VTPU_VI sign = (VTPU_VI)vtpu_splat(-0.0f);
	VTPU_VF a = (VTPU_VF)((VTPU_VI)x & ~sign);
	VTPU_VF e = vtpu_vexp32(-vtpu_vclamp(a, 0.0f, 104.0f));
	VTPU_VF y = vtpu_vblend(x >= 0.0f, vtpu_splat(1.0f), e) / (1.0f + e);

	return vtpu_vblend(x != x, x + x, y);
}

/*
 * tanh |x|: Cephes' polynomial below 0.625, 1 - 2 / (e^2|x| + 1) from
 * there (1 beyond 44, where e^2|x| would overflow), then x's sign.
 */
static __always_inline VTPU_VF vtpu_vtanhf(VTPU_VF x)
{
	const VTPU_VI sign = (VTPU_VI)vtpu_splat(-0.0f);
	VTPU_VF a = (VTPU_VF)((VTPU_VI)x & ~sign), z = a * a, p, e, y;

	p = vtpu_vpoly(vtpu_tanhf_poly, ARRAY_SIZE(vtpu_tanhf_poly), z);
	p = vtpu_vmadd(p * z, a, a);
	e = vtpu_vexp32(vtpu_vclamp(a + a, 0.0f, 88.0f));
	y = 1.0f - 2.0f / (e + 1.0f);
	y = vtpu_vblend(a < 0.625f, p, y);
	y = (VTPU_VF)((VTPU_VI)y | ((VTPU_VI)x & sign));
	return vtpu_vblend(x != x, x + x, y);
}

/*
 * gelu(x) = x Phi(x): near 0 the series, else x (1 - Q(x)) for x > 0
 * and x Q(-x) below, -0 below -14.5. e^(-a^2/2) takes a^2 as the exact
 * h + l (an FMA gives l): e^(-h/2) (1 - l/2).
 */
static __always_inline VTPU_VF vtpu_vgeluf(VTPU_VF x)
{
	const VTPU_VI sign = (VTPU_VI)vtpu_splat(-0.0f);
	VTPU_VF a = (VTPU_VF)((VTPU_VI)x & ~sign), h, l, e, t, q, y;

	a = vtpu_vclamp(a, 0.0f, VTPU_GELU_MAX);
	h = a * a;
	l = vtpu_vmadd(a, a, -h);
	y = vtpu_vpoly(vtpu_gelu_near, ARRAY_SIZE(vtpu_gelu_near), h);
	y = x * vtpu_vmadd(x, y, vtpu_splat(0.5f));	/* -0 stays -0 */
	e = vtpu_vexp32(-0.5f * h);
	e = vtpu_vmadd(e, -0.5f * l, e);
	t = (a - VTPU_GELU_K) / (a + VTPU_GELU_K);
	q = vtpu_vpoly(vtpu_gelu_tail, ARRAY_SIZE(vtpu_gelu_tail), t);
	q *= 1.0f - t;
	/* x R first: e R alone may be subnormal where x e R is not */
	q = vtpu_vblend(x < 0.0f, (x * q) * e, x * (1.0f - e * q));
	q = vtpu_vblend(a < VTPU_GELU_NEAR, y, q);
	/* -inf times a Q that rounded to 0 */
	q = vtpu_vblend(x < -VTPU_GELU_MAX, vtpu_splat(-0.0f), q);
	return vtpu_vblend(x != x, x + x, q);
}

static __always_inline VTPU_VF vtpu_vtrans_fn(u8 sub, VTPU_VF x)
{
	switch (sub) {
	case VTPU_UNARY_EXP:
		return vtpu_vexpf(x);
	case VTPU_UNARY_TANH:
		return vtpu_vtanhf(x);
	case VTPU_UNARY_SIGMOID:
		return vtpu_vsigmoidf(x);
	}
	return vtpu_vgeluf(x);	/* VTPU_UNARY_GELU */
}

/* A row of EXP, TANH, SIGMOID or GELU; @d may be @a. */
static __always_inline void vtpu_vtrans_loop(u8 sub, float *d, const float *a,
					     u32 n)
{
	VTPU_VF x[VTPU_XBLK];
	u32 j, b;

	for (j = 0; j + VTPU_XBLK * VTPU_VW <= n; j += VTPU_XBLK * VTPU_VW) {
		for (b = 0; b < VTPU_XBLK; b++)
			x[b] = vtpu_vload(a + j + b * VTPU_VW);
		for (b = 0; b < VTPU_XBLK; b++)
			x[b] = vtpu_vtrans_fn(sub, x[b]);
		for (b = 0; b < VTPU_XBLK; b++)
			vtpu_vstore(d + j + b * VTPU_VW, x[b]);
	}
	for (; j < n; j += VTPU_VW) {
		b = min_t(u32, n - j, VTPU_VW);
		vtpu_vstore_n(d + j, vtpu_vtrans_fn(sub, vtpu_vload_n(a + j, b)),
			      b);
	}
}

/*
 * Elementwise rows. Each *_fn() is inlined into a loop specialised for
 * one function, so the dispatchers switch once per row, not once per
 * element.
 */
/* @w <= VTPU_VW lanes of a NEG, ABS, RECIP, RELU or COPY row. */
static __always_inline void vtpu_unary_step(u8 sub, float *d, const float *a,
					    u32 w)
{
	const VTPU_VI sign = (VTPU_VI)vtpu_splat(-0.0f);
	VTPU_VF x = vtpu_vload_n(a, w), zero = {};

	switch (sub) {
	case VTPU_UNARY_NEG:
		x = (VTPU_VF)((VTPU_VI)x ^ sign);
		break;
	case VTPU_UNARY_ABS:
		x = (VTPU_VF)((VTPU_VI)x & ~sign);
		break;
	case VTPU_UNARY_RECIP:
		x = 1 / x;
		break;
	case VTPU_UNARY_RELU:
		x = vtpu_vmaxmin(true, x, zero);
		break;
	}
	vtpu_vstore_n(d, x, w);	/* COPY: as loaded */
}

/* NEG, ABS, SQRT, RSQRT, RECIP, RELU and COPY; @d may be @a. */
static __always_inline void vtpu_unary_loop(u8 sub, float *d, const float *a,
					    u32 n)
{
	u32 j;

	if (sub == VTPU_UNARY_SQRT || sub == VTPU_UNARY_RSQRT) {
		/* no vector square root in GCC's vector extensions */
		for (j = 0; j < n; j++)
			d[j] = sub == VTPU_UNARY_SQRT ? __builtin_sqrtf(a[j]) :
			       vtpu_rsqrtf(a[j]);
		return;
	}
	for (j = 0; j + VTPU_VW <= n; j += VTPU_VW)
		vtpu_unary_step(sub, d + j, a + j, VTPU_VW);
	if (j < n)
		vtpu_unary_step(sub, d + j, a + j, n - j);
}

static void vtpu_unary_row(u8 sub, float *d, const float *a, u32 n)
{
	switch (sub) {
	case VTPU_UNARY_NEG:
		vtpu_unary_loop(VTPU_UNARY_NEG, d, a, n);
		break;
	case VTPU_UNARY_ABS:
		vtpu_unary_loop(VTPU_UNARY_ABS, d, a, n);
		break;
	case VTPU_UNARY_EXP:
		vtpu_vtrans_loop(VTPU_UNARY_EXP, d, a, n);
		break;
	case VTPU_UNARY_LOG:
		vtpu_vlog_loop(d, a, n);
		break;
	case VTPU_UNARY_SQRT:
		vtpu_unary_loop(VTPU_UNARY_SQRT, d, a, n);
		break;
	case VTPU_UNARY_RSQRT:
		vtpu_unary_loop(VTPU_UNARY_RSQRT, d, a, n);
		break;
	case VTPU_UNARY_RECIP:
		vtpu_unary_loop(VTPU_UNARY_RECIP, d, a, n);
		break;
	case VTPU_UNARY_TANH:
		vtpu_vtrans_loop(VTPU_UNARY_TANH, d, a, n);
		break;
	case VTPU_UNARY_SIGMOID:
		vtpu_vtrans_loop(VTPU_UNARY_SIGMOID, d, a, n);
		break;
	case VTPU_UNARY_RELU:
		vtpu_unary_loop(VTPU_UNARY_RELU, d, a, n);
		break;
	case VTPU_UNARY_GELU:
		vtpu_vtrans_loop(VTPU_UNARY_GELU, d, a, n);
		break;
	case VTPU_UNARY_COPY:
		vtpu_unary_loop(VTPU_UNARY_COPY, d, a, n);
		break;
	}
}

/*
 * Operand b advances by @bs elements per column: 1, or 0 when one value
 * serves the whole row. Both are specialised.
 */
/*
 * @w <= VTPU_VW lanes of a BINARY row; b is @bv when @one_b. MADD reads
 * d too: lane by lane, before it writes it.
 */
static __always_inline void vtpu_binary_step(u8 sub, float *d, const float *a,
					     const float *b, VTPU_VF bv,
					     const bool one_b, u32 w)
{
	VTPU_VF x = vtpu_vload_n(a, w), y = one_b ? bv : vtpu_vload_n(b, w);

	if (sub == VTPU_BINARY_MADD)
		x = vtpu_vmadd_nan(x, y, vtpu_vload_n(d, w));
	else
		x = vtpu_vbinary_fn(sub, x, y);
	vtpu_vstore_n(d, x, w);
}

/* One BINARY row; @one_b: b is one value for the whole row (a constant). */
static __always_inline void vtpu_binary_vloop(u8 sub, float *d, const float *a,
					      const float *b, const bool one_b,
					      u32 n)
{
	VTPU_VF bv = vtpu_splat(b[0]);
	u32 j;

	for (j = 0; j + VTPU_VW <= n; j += VTPU_VW)
		vtpu_binary_step(sub, d + j, a + j, b + j, bv, one_b, VTPU_VW);
	if (j < n)
		vtpu_binary_step(sub, d + j, a + j, b + j, bv, one_b, n - j);
}

static __always_inline void vtpu_binary_loop(u8 sub, float *d, const float *a,
					     const float *b, u32 bs, u32 n)
{
	u32 j;

	if (sub == VTPU_BINARY_POW) {	/* scalar: a log and an exp */
		for (j = 0; j < n; j++)
			d[j] = vtpu_powf(a[j], b[j * bs]);
	} else if (bs) {
		vtpu_binary_vloop(sub, d, a, b, false, n);
	} else {
		vtpu_binary_vloop(sub, d, a, b, true, n);
	}
}

static void vtpu_binary_row(u8 sub, float *d, const float *a, const float *b,
			    u32 bs, u32 n)
{
	switch (sub) {
	case VTPU_BINARY_ADD:
		vtpu_binary_loop(VTPU_BINARY_ADD, d, a, b, bs, n);
		break;
	case VTPU_BINARY_SUB:
		vtpu_binary_loop(VTPU_BINARY_SUB, d, a, b, bs, n);
		break;
	case VTPU_BINARY_MUL:
		vtpu_binary_loop(VTPU_BINARY_MUL, d, a, b, bs, n);
		break;
	case VTPU_BINARY_DIV:
		vtpu_binary_loop(VTPU_BINARY_DIV, d, a, b, bs, n);
		break;
	case VTPU_BINARY_MAX:
		vtpu_binary_loop(VTPU_BINARY_MAX, d, a, b, bs, n);
		break;
	case VTPU_BINARY_MIN:
		vtpu_binary_loop(VTPU_BINARY_MIN, d, a, b, bs, n);
		break;
	case VTPU_BINARY_POW:
		vtpu_binary_loop(VTPU_BINARY_POW, d, a, b, bs, n);
		break;
	case VTPU_BINARY_MADD:
		vtpu_binary_loop(VTPU_BINARY_MADD, d, a, b, bs, n);
		break;
	}
}

static __always_inline void vtpu_cmp_step(u8 sub, float *d, const float *a,
					  const float *b, VTPU_VF bv,
					  const bool one_b, u32 w)
{
	const VTPU_VI one = (VTPU_VI)vtpu_splat(1.0f);
	VTPU_VF y = one_b ? bv : vtpu_vload_n(b, w);

	vtpu_vstore_n(d, (VTPU_VF)(vtpu_vcmp_fn(sub, vtpu_vload_n(a, w), y) &
				   one), w);
}

static __always_inline void vtpu_cmp_vloop(u8 sub, float *d, const float *a,
					   const float *b, const bool one_b, u32 n)
{
	VTPU_VF bv = vtpu_splat(b[0]);
	u32 j;

	for (j = 0; j + VTPU_VW <= n; j += VTPU_VW)
		vtpu_cmp_step(sub, d + j, a + j, b + j, bv, one_b, VTPU_VW);
	if (j < n)
		vtpu_cmp_step(sub, d + j, a + j, b + j, bv, one_b, n - j);
}

static __always_inline void vtpu_cmp_loop(u8 sub, float *d, const float *a,
					  const float *b, u32 bs, u32 n)
{
	if (bs)
		vtpu_cmp_vloop(sub, d, a, b, false, n);
	else
		vtpu_cmp_vloop(sub, d, a, b, true, n);
}

static void vtpu_cmp_row(u8 sub, float *d, const float *a, const float *b,
			 u32 bs, u32 n)
{
	switch (sub) {
	case VTPU_CMP_EQ:
		vtpu_cmp_loop(VTPU_CMP_EQ, d, a, b, bs, n);
		break;
	case VTPU_CMP_NE:
		vtpu_cmp_loop(VTPU_CMP_NE, d, a, b, bs, n);
		break;
	case VTPU_CMP_LT:
		vtpu_cmp_loop(VTPU_CMP_LT, d, a, b, bs, n);
		break;
	case VTPU_CMP_LE:
		vtpu_cmp_loop(VTPU_CMP_LE, d, a, b, bs, n);
		break;
	case VTPU_CMP_GT:
		vtpu_cmp_loop(VTPU_CMP_GT, d, a, b, bs, n);
		break;
	case VTPU_CMP_GE:
		vtpu_cmp_loop(VTPU_CMP_GE, d, a, b, bs, n);
		break;
	}
}

/* Copies, not arithmetic: the selected value's bits are kept. */
static __always_inline void vtpu_select_step(float *d, const float *a,
					     const float *b, VTPU_VF bv,
					     const bool one_b, u32 w)
{
	VTPU_VF zero = {}, c = vtpu_vload_n(d, w);
	VTPU_VF y = one_b ? bv : vtpu_vload_n(b, w);

	vtpu_vstore_n(d, vtpu_vblend(c != zero, vtpu_vload_n(a, w), y), w);
}

static __always_inline void vtpu_select_vloop(float *d, const float *a,
					      const float *b, const bool one_b,
					      u32 n)
{
	VTPU_VF bv = vtpu_splat(b[0]);
	u32 j;

	for (j = 0; j + VTPU_VW <= n; j += VTPU_VW)
		vtpu_select_step(d + j, a + j, b + j, bv, one_b, VTPU_VW);
	if (j < n)
		vtpu_select_step(d + j, a + j, b + j, bv, one_b, n - j);
}

static void vtpu_select_row(float *d, const float *a, const float *b, u32 bs,
			    u32 n)
{
	if (bs)
		vtpu_select_vloop(d, a, b, false, n);
	else
		vtpu_select_vloop(d, a, b, true, n);
}

/* Row @r of operand b of a BINARY, CMP or SELECT, and its step @bs. */
static const float *vtpu_bcast_row(const struct vtpu_exec *e,
				   const struct vtpu_insn *in, u32 r,
				   const float *imm, u32 *bs)
{
	const struct vtpu_tile *b = &in->t.b;

	switch (in->flags & VTPU_F_BCAST_MASK) {
	case VTPU_F_BCAST_SCALAR:
		*bs = 0;
		return vtpu_frow(e, b, 0);
	case VTPU_F_BCAST_ROW:
		*bs = 1;
		return vtpu_frow(e, b, 0);
	case VTPU_F_BCAST_COL:
		*bs = 0;
		return vtpu_frow(e, b, r);
	case VTPU_F_BCAST_IMM:
		*bs = 0;
		return imm;
	}
	*bs = 1;
	return vtpu_frow(e, b, r);
}

/*
 * Long instructions run in pieces: a segment of a row (the VPU, REDUCE,
 * FILL, IOTA, CONVERT, DMA), a strip of blocks (TRANSPOSE), a panel of
 * d (MATMUL). Each piece adds its cost to e->work; once that reaches
 * e->budget, the instruction stops after the piece and e->cur says where
 * to resume. A piece runs exactly as the same stretch of the whole
 * instruction would, in the same order, and nothing but e->cur carries
 * over, so a resumed instruction gives the same bits as one run in one
 * go, in place or not.
 *
 * Costs are in units of one f32 multiply-add of MATMUL, about 0.1 ns:
 * the fixed cost of a piece, then what each element costs, measured on
 * tiles that fill a 64 MiB VMEM (normal numbers: denormals are slower).
 */
#define VTPU_W_INSN	128	/* fetching and dispatching an instruction */
#define VTPU_W_PIECE	128	/* a call, row addresses, a dispatch */
#define VTPU_W_TRACE	512	/* the kernel takes a timestamp */
#define VTPU_W_MOVE	8	/* memcpy(), memmove(), COPY */
#define VTPU_W_SIMPLE	16	/* a compare or an IEEE operation */
#define VTPU_W_SLOW	24	/* MAX/MIN, SQRT, bf16 FILL, conversions */
#define VTPU_W_IOTA	40	/* an integer conversion per element */
#define VTPU_W_TR	64	/* TRANSPOSE: a cache miss per element */
#define VTPU_W_TRANSC	48	/* EXP, TANH, SIGMOID: f32 polynomials */
#define VTPU_W_LOG	160	/* a polynomial in double */
#define VTPU_W_POW	320	/* a log and an exp */
#define VTPU_W_GELU	96	/* an exp, two polynomials, a division */
#if VTPU_MM_FUSED
#define VTPU_W_MADD	VTPU_W_SLOW	/* three operands to load */
#else
#define VTPU_W_MADD	128	/* emulated from doubles: 8 ADDs' time */
#endif

/* A row segment costs at most this, VTPU_W_PIECE aside. */
#define VTPU_CHUNK	BIT(15)

static const u16 vtpu_unary_weight[VTPU_UNARY_NR] = {
	[VTPU_UNARY_NEG] = VTPU_W_SIMPLE,
	[VTPU_UNARY_ABS] = VTPU_W_SIMPLE,
	[VTPU_UNARY_EXP] = VTPU_W_TRANSC,
	[VTPU_UNARY_LOG] = VTPU_W_LOG,
	[VTPU_UNARY_SQRT] = VTPU_W_SLOW,
	[VTPU_UNARY_RSQRT] = VTPU_W_SLOW,
	[VTPU_UNARY_RECIP] = VTPU_W_SIMPLE,
	[VTPU_UNARY_TANH] = VTPU_W_TRANSC,
	[VTPU_UNARY_SIGMOID] = VTPU_W_TRANSC,
	[VTPU_UNARY_RELU] = VTPU_W_SIMPLE,
	[VTPU_UNARY_GELU] = VTPU_W_GELU,
	[VTPU_UNARY_COPY] = VTPU_W_MOVE,
};

static const u16 vtpu_binary_weight[VTPU_BINARY_NR] = {
	[VTPU_BINARY_ADD] = VTPU_W_SIMPLE,
	[VTPU_BINARY_SUB] = VTPU_W_SIMPLE,
	[VTPU_BINARY_MUL] = VTPU_W_SIMPLE,
	[VTPU_BINARY_DIV] = VTPU_W_SIMPLE,
	[VTPU_BINARY_MAX] = VTPU_W_SLOW,
	[VTPU_BINARY_MIN] = VTPU_W_SLOW,
	[VTPU_BINARY_POW] = VTPU_W_POW,
	[VTPU_BINARY_MADD] = VTPU_W_MADD,
};

/* Columns [@j, @j + @n) of row @r of an instruction. */
typedef void (*vtpu_segment_fn)(struct vtpu_exec *e,
				const struct vtpu_insn *in, u32 r, u32 j,
				u32 n);

/*
 * Runs @fn over @rows rows of @cols columns in row-major order, in
 * segments of at most @width columns, each costing @weight per column,
 * from e->cur on. Returns true when done, false when the budget ran out
 * first.
 */
/*
 * Where a row-by-row instruction stands: it resumes at row @i, column @j
 * (0, 0 once it ended), with @work done.
 */
static void vtpu_rows_save(struct vtpu_exec *e, u32 i, u32 j, u64 work)
{
	e->cur.i = i;
	e->cur.j = j;
	e->work = work;
}

static bool vtpu_exec_rows(struct vtpu_exec *e, const struct vtpu_insn *in,
			   u32 rows, u32 cols, u32 width, u32 weight,
			   vtpu_segment_fn fn)
{
	u32 i = e->cur.i, j = e->cur.j, n;
	u64 work = e->work, budget = e->budget;

	/* In locals: a segment's stores could alias e as far as GCC knows. */
	while (i < rows) {
		n = min(width, cols - j);
		fn(e, in, i, j, n);
		work += (u64)n * weight + VTPU_W_PIECE;
		j += n;
		if (j == cols) {
			j = 0;
			i++;
		}
		if (work >= budget && i < rows) {
			vtpu_rows_save(e, i, j, work);
			return false;
		}
	}
	vtpu_rows_save(e, 0, 0, work);
	return true;
}

/* The same, for operations that cost @weight per element. */
static bool vtpu_exec_elems(struct vtpu_exec *e, const struct vtpu_insn *in,
			    u32 rows, u32 cols, u32 weight, vtpu_segment_fn fn)
{
	return vtpu_exec_rows(e, in, rows, cols, VTPU_CHUNK / weight, weight,
			      fn);
}

/* UNARY, BINARY, CMP and SELECT: d[i][j] from a[i][j], b. */
static void vtpu_vpu_segment(struct vtpu_exec *e, const struct vtpu_insn *in,
			     u32 r, u32 j, u32 n)
{
	float *dr = vtpu_frow(e, &in->t.d, r) + j;
	const float *ar = vtpu_frow(e, &in->t.a, r) + j;
	float imm = vtpu_bitsf(in->imm);
	const float *b;
	u32 bs;

	if (in->op == VTPU_OP_UNARY) {
		vtpu_unary_row(in->sub, dr, ar, n);
		return;
	}
	b = vtpu_bcast_row(e, in, r, &imm, &bs);
	b += j * bs;
	if (in->op == VTPU_OP_BINARY)
		vtpu_binary_row(in->sub, dr, ar, b, bs, n);
	else if (in->op == VTPU_OP_CMP)
		vtpu_cmp_row(in->sub, dr, ar, b, bs, n);
	else
		vtpu_select_row(dr, ar, b, bs, n);
}

static bool vtpu_exec_vpu(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	const struct vtpu_tile *d = &in->t.d;
	u32 w = VTPU_W_SIMPLE;

	if (in->op == VTPU_OP_UNARY)
		w = vtpu_unary_weight[in->sub];
	else if (in->op == VTPU_OP_BINARY)
		w = vtpu_binary_weight[in->sub];
	/* A function added to the ISA but not to a table: the dearest. */
	if (!w)
		w = VTPU_W_GELU;
	return vtpu_exec_elems(e, in, d->rows, d->cols, w, vtpu_vpu_segment);
}

static __always_inline float vtpu_reduce_fn(u8 sub, float acc, float x)
{
	switch (sub) {
	case VTPU_REDUCE_SUM:
		return acc + x;
	case VTPU_REDUCE_MAX:
		return vtpu_maxf(acc, x);
	}
	return vtpu_minf(acc, x);	/* VTPU_REDUCE_MIN */
}

/*
 * AXIS_COLS folds each row into d[i][0], carrying the partial result in
 * e->cur.acc from one segment of the row to the next; AXIS_ROWS folds
 * the rows one by one into d's single row, so both run along memory.
 */
static __always_inline void vtpu_reduce_loop(u8 sub, struct vtpu_exec *e,
					     const struct vtpu_insn *in,
					     u32 r, u32 j, u32 n)
{
	const struct vtpu_tile *d = &in->t.d, *a = &in->t.a;
	bool acc = in->flags & VTPU_F_ACC;
	const float *ar = vtpu_frow(e, a, r);
	u32 end = j + n;
	float *dr, s;

	if (in->flags & VTPU_F_AXIS_COLS) {
		dr = vtpu_frow(e, d, r);
		if (j)
			s = vtpu_bitsf(e->cur.acc);
		else if (acc)
			s = dr[0];
		else
			s = ar[j++];
		for (; j < end; j++)
			s = vtpu_reduce_fn(sub, s, ar[j]);
		if (end == a->cols)
			dr[0] = s;
		else
			e->cur.acc = vtpu_fbits(s);
		return;
	}
	dr = vtpu_frow(e, d, 0);
	if (!r && !acc) {
		memcpy(dr + j, ar + j, (size_t)n * sizeof(*dr));
		return;
	}
	/* Indexed from the segment's start, GCC keeps this loop tight. */
	dr += j;
	ar += j;
	for (j = 0; j < n; j++)
		dr[j] = vtpu_reduce_fn(sub, dr[j], ar[j]);
}

static void vtpu_reduce_segment(struct vtpu_exec *e,
				const struct vtpu_insn *in, u32 r, u32 j, u32 n)
{
	switch (in->sub) {
	case VTPU_REDUCE_SUM:
		vtpu_reduce_loop(VTPU_REDUCE_SUM, e, in, r, j, n);
		break;
	case VTPU_REDUCE_MAX:
		vtpu_reduce_loop(VTPU_REDUCE_MAX, e, in, r, j, n);
		break;
	case VTPU_REDUCE_MIN:
		vtpu_reduce_loop(VTPU_REDUCE_MIN, e, in, r, j, n);
		break;
	}
}

static bool vtpu_exec_reduce(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	const struct vtpu_tile *a = &in->t.a;
	u32 w = in->sub == VTPU_REDUCE_SUM ? VTPU_W_SIMPLE : VTPU_W_SLOW;

	return vtpu_exec_elems(e, in, a->rows, a->cols, w,
			       vtpu_reduce_segment);
}

/* FILL and IOTA: any dtype; elements are stored bytewise (no aliasing). */
static void vtpu_fill_segment(struct vtpu_exec *e, const struct vtpu_insn *in,
			      u32 r, u32 j, u32 n)
{
	const struct vtpu_tile *d = &in->t.d;
	bool iota = in->op == VTPU_OP_IOTA;
	bool rows = in->flags & VTPU_F_AXIS_ROWS;
	u32 esize = vtpu_esize(d->dtype), end = j + n, w;
	u16 h = vtpu_bf16_round(in->imm);
	u8 *dr = vtpu_row(e, d, r);
	s64 v;

	if (!iota && esize == 4) {	/* the common case, a vector a store */
		VTPU_VF f = vtpu_splat(vtpu_bitsf(in->imm));

		for (; j < end; j += VTPU_VW)
			vtpu_vstore_n((float *)dr + j, f,
				      min_t(u32, end - j, VTPU_VW));
		return;
	}
	for (; j < end; j++) {
		if (!iota) {
			memcpy(dr + 2 * j, &h, sizeof(h));
			continue;
		}
		v = (s64)(s32)in->imm + (rows ? r : j);
		if (d->dtype == VTPU_DT_S32) {
			w = (u32)v;
			memcpy(dr + 4 * j, &w, sizeof(w));
		} else {
			vtpu_store_float(dr, d->dtype, j, (float)v);
		}
	}
}

static bool vtpu_exec_fill(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	const struct vtpu_tile *d = &in->t.d;

	return vtpu_exec_elems(e, in, d->rows, d->cols,
			       in->op == VTPU_OP_IOTA ? VTPU_W_IOTA :
			       vtpu_esize(d->dtype) == 4 ? VTPU_W_MOVE :
			       VTPU_W_SLOW, vtpu_fill_segment);
}

/*
 * CONVERT. Every element is read before it is written, so a destination
 * that is exactly its source (same element size) converts in place.
 */
static void vtpu_convert_row(u8 *d, u8 ddt, const u8 *a, u8 adt, u32 n)
{
	s32 v;
	float f;
	u32 j;

	if (ddt == adt) {
		memmove(d, a, (size_t)n * vtpu_esize(ddt));
		return;
	}
	for (j = 0; j < n; j++) {
		if (adt == VTPU_DT_S32) {
			memcpy(&v, a + 4 * j, sizeof(v));
			f = (float)v;
		} else {
			f = vtpu_load_float(a, adt, j);
		}
		if (ddt == VTPU_DT_S32) {
			v = vtpu_f32_to_s32(f);
			memcpy(d + 4 * j, &v, sizeof(v));
		} else {
			vtpu_store_float(d, ddt, j, f);
		}
	}
}

static void vtpu_convert_segment(struct vtpu_exec *e,
				 const struct vtpu_insn *in, u32 r, u32 j,
				 u32 n)
{
	const struct vtpu_tile *d = &in->t.d, *a = &in->t.a;

	vtpu_convert_row(vtpu_row(e, d, r) + (size_t)j * vtpu_esize(d->dtype),
			 d->dtype,
			 vtpu_row(e, a, r) + (size_t)j * vtpu_esize(a->dtype),
			 a->dtype, n);
}

static bool vtpu_exec_convert(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	const struct vtpu_tile *d = &in->t.d;

	return vtpu_exec_elems(e, in, d->rows, d->cols,
			       d->dtype == in->t.a.dtype ? VTPU_W_MOVE :
			       VTPU_W_SLOW, vtpu_convert_segment);
}

/*
 * TRANSPOSE in 16x16 blocks, so both sides stay in cache. A piece is a
 * run of blocks along one strip of VTPU_TR_BLOCK rows of a.
 */
#define VTPU_TR_BLOCK	16
#define VTPU_TR_WIDTH	(VTPU_CHUNK / (VTPU_TR_BLOCK * VTPU_W_TR) / \
			 VTPU_TR_BLOCK * VTPU_TR_BLOCK)

static __always_inline void vtpu_transpose_block(const struct vtpu_exec *e,
						 const struct vtpu_insn *in,
						 u32 esize, u32 i0, u32 j0)
{
	const struct vtpu_tile *d = &in->t.d, *a = &in->t.a;
	u32 i1 = min_t(u32, i0 + VTPU_TR_BLOCK, a->rows);
	u32 j1 = min_t(u32, j0 + VTPU_TR_BLOCK, a->cols);
	const u8 *ar;
	u32 i, j;

	for (i = i0; i < i1; i++) {
		ar = vtpu_row(e, a, i);
		for (j = j0; j < j1; j++)
			memcpy(vtpu_row(e, d, j) + (size_t)i * esize,
			       ar + (size_t)j * esize, esize);
	}
}

/*
 * A VTPU_VW x VTPU_VW block of 4-byte elements in registers: log2(VW)
 * rounds, round b pairing rows i and i + b of each group of 2b rows and
 * interleaving their runs of b lanes (the low halves go to row i, the
 * high ones to row i + b). Moves bits only. GCC's __builtin_shuffle
 * takes the lane maps as computed; clang (the fuzzers' builds) has no
 * such builtin and uses the element loop.
 */
#ifndef __clang__
#define VTPU_TR_VECTOR	1
static __always_inline void vtpu_transpose_vblock(float *d, size_t ds,
						  const float *a, size_t as)
{
	VTPU_VF v[VTPU_VW], x, y;
	VTPU_VI lo, hi;
	u32 b, i, p, q, o;

	for (i = 0; i < VTPU_VW; i++)
		v[i] = vtpu_vload(a + i * as);
	for (b = 1; b < VTPU_VW; b *= 2) {
		for (p = 0; p < VTPU_VW; p++) {
			q = p / (2 * b) * (2 * b);
			o = p % (2 * b);
			lo[p] = o < b ? q + o : VTPU_VW + q + o - b;
			hi[p] = o < b ? q + b + o : VTPU_VW + q + o;
		}
		for (i = 0; i < VTPU_VW; i++) {
			if (i & b)
				continue;
			x = v[i];
			y = v[i + b];
			v[i] = __builtin_shuffle(x, y, lo);
			v[i + b] = __builtin_shuffle(x, y, hi);
		}
	}
	for (i = 0; i < VTPU_VW; i++)
		vtpu_vstore(d + i * ds, v[i]);
}

/* A whole VTPU_TR_BLOCK square of f32 or s32, in register blocks. */
static void vtpu_transpose_full(const struct vtpu_exec *e,
				const struct vtpu_insn *in, u32 i0, u32 j0)
{
	const struct vtpu_tile *d = &in->t.d, *a = &in->t.a;
	u32 bi, bj;

	BUILD_BUG_ON(VTPU_TR_BLOCK % VTPU_VW);
	for (bi = 0; bi < VTPU_TR_BLOCK; bi += VTPU_VW)
		for (bj = 0; bj < VTPU_TR_BLOCK; bj += VTPU_VW)
			vtpu_transpose_vblock(vtpu_frow(e, d, j0 + bj) + i0 + bi,
					      d->stride,
					      vtpu_frow(e, a, i0 + bi) + j0 + bj,
					      a->stride);
}

#endif

/* Blocks at columns [@j, @j + @n) of strip @r. */
static void vtpu_transpose_segment(struct vtpu_exec *e,
				   const struct vtpu_insn *in, u32 r, u32 j,
				   u32 n)
{
	u32 j0, i0 = r * VTPU_TR_BLOCK;

	for (j0 = j; j0 < j + n; j0 += VTPU_TR_BLOCK) {
#ifdef VTPU_TR_VECTOR
		if (vtpu_esize(in->t.a.dtype) == 4 &&
		    i0 + VTPU_TR_BLOCK <= in->t.a.rows &&
		    j0 + VTPU_TR_BLOCK <= in->t.a.cols) {
			vtpu_transpose_full(e, in, i0, j0);
			continue;
		}
#endif
		if (vtpu_esize(in->t.a.dtype) == 2)
			vtpu_transpose_block(e, in, 2, i0, j0);
		else
			vtpu_transpose_block(e, in, 4, i0, j0);
	}
}

static bool vtpu_exec_transpose(struct vtpu_exec *e,
				const struct vtpu_insn *in)
{
	const struct vtpu_tile *a = &in->t.a;

	BUILD_BUG_ON(VTPU_TR_WIDTH < VTPU_TR_BLOCK);
	return vtpu_exec_rows(e, in,
			      (a->rows + VTPU_TR_BLOCK - 1) / VTPU_TR_BLOCK,
			      a->cols, VTPU_TR_WIDTH,
			      VTPU_TR_BLOCK * VTPU_W_TR,
			      vtpu_transpose_segment);
}

/* One row of DMA: @n elements, converting between f32 and bf16. */
static void vtpu_dma_row(u8 *dst, u8 ddt, const u8 *src, u8 sdt, u32 n)
{
	u32 j;

	if (ddt == sdt) {
		memcpy(dst, src, (size_t)n * vtpu_esize(ddt));
		return;
	}
	/* f32 to bf16 or back, the only conversions DMA does. */
	if (ddt == VTPU_DT_BF16) {
		for (j = 0; j < n; j++)
			vtpu_store_float(dst, VTPU_DT_BF16, j,
					 vtpu_load_float(src, VTPU_DT_F32, j));
		return;
	}
	for (j = 0; j < n; j++)
		vtpu_store_float(dst, VTPU_DT_F32, j,
				 vtpu_load_float(src, VTPU_DT_BF16, j));
}

/*
 * One row of a DMA with an element step (ISA version 6): @n elements,
 * @step apart in the binding @b, next to each other in VMEM @v; @load
 * says which way. Converts between f32 and bf16 as vtpu_dma_row() does,
 * and otherwise moves bits. Loads of 4-byte elements at step 2 (a
 * stride-2 convolution's columns) go a vector at a time, which reads two
 * and keeps the even lanes, the last one through masks: nothing is read
 * past the row's last element.
 */
static void vtpu_dma_row_step(u8 *v, u8 vdt, u8 *b, u8 bdt, u32 step, u32 n,
			      bool load)
{
	size_t es = vtpu_esize(bdt), j = 0;

	if (vdt != bdt) {
		for (; j < n; j++) {
			if (load)
				vtpu_store_float(v, vdt, j,
						 vtpu_load_float(b, bdt,
								 j * step));
			else
				vtpu_store_float(b, bdt, j * step,
						 vtpu_load_float(v, vdt, j));
		}
		return;
	}
	if (es == 2) {
		for (; j < n; j++) {
			if (load)
				memcpy(v + 2 * j, b + 2 * j * step, 2);
			else
				memcpy(b + 2 * j * step, v + 2 * j, 2);
		}
		return;
	}
#ifdef VTPU_TR_VECTOR
	if (load && step == 2) {
		const float *s = (const float *)b;
		VTPU_VF x, y = {};
		VTPU_VI even;
		u32 l, m;

		for (l = 0; l < VTPU_VW; l++)
			even[l] = 2 * l;
		for (; j + VTPU_VW < n; j += VTPU_VW)
			vtpu_vstore((float *)v + j,
				    __builtin_shuffle(vtpu_vload(s + 2 * j),
						      vtpu_vload(s + 2 * j +
								 VTPU_VW),
						      even));
		/* the last 2 m - 1 elements, m <= VTPU_VW */
		m = 2 * (n - j) - 1;
		x = vtpu_vload_n(s + 2 * j, min_t(u32, m, VTPU_VW));
		if (m > VTPU_VW)
			y = vtpu_vload_n(s + 2 * j + VTPU_VW, m - VTPU_VW);
		vtpu_vstore_n((float *)v + j, __builtin_shuffle(x, y, even),
			      n - j);
		return;
	}
#endif
	for (; j < n; j++) {
		if (load)
			memcpy(v + 4 * j, b + 4 * j * step, 4);
		else
			memcpy(b + 4 * j * step, v + 4 * j, 4);
	}
}

/*
 * Bytes a strided DMA asks for ahead of the row it copies. The CPU's own
 * prefetchers follow one stream within a page, not rows a stride of
 * several KiB apart (a weight tile's columns, a window of an image):
 * without this each row waits on memory. Asking for lines the DMA
 * will read changes no result.
 */
#define VTPU_DMA_AHEAD	2048

/* Rows a DMA of @len-byte rows asks for ahead; 0: none (one stream). */
static u32 vtpu_dma_ahead(const struct vtpu_dma *m, size_t len)
{
	/* a contiguous DMA is one stream: the CPU follows it */
	if (m->stride <= len + 64)
		return 0;
	return clamp_t(u32, VTPU_DMA_AHEAD / max_t(size_t, len, 64), 1, 16);
}

/* The @len bytes of row @r + @ahead, when the DMA has that row. */
static void vtpu_dma_prefetch(const struct vtpu_dma *m, const u8 *src,
			      u32 r, size_t len, u32 ahead)
{
	size_t x;

	if (!ahead || ahead >= m->v.rows - r)
		return;
	src += (size_t)ahead * m->stride;
	for (x = 0; x < len; x += 64)
		prefetch(src + x);
}

static void vtpu_dma_segment(struct vtpu_exec *e, const struct vtpu_insn *in,
			     u32 r, u32 j, u32 n)
{
	const struct vtpu_dma *m = &in->dma;
	u8 *v = vtpu_row(e, &m->v, r) + (size_t)j * vtpu_esize(m->v.dtype);
	u32 step = max_t(u32, m->step, 1);
	u64 off = m->offset + (u64)r * m->stride +
		  (u64)j * step * vtpu_esize(m->dtype);

	if (step > 1) {
		/* constants: read only, as below */
		vtpu_dma_row_step(v, m->v.dtype, m->binding ==
				  VTPU_BINDING_CONSTANTS ?
				  (u8 *)e->prog->consts + off :
				  (u8 *)e->bindings[m->binding].data + off,
				  m->dtype, step, n,
				  in->op == VTPU_OP_DMA_LOAD);
		return;
	}
	/* Constants are loaded only: the validator rejects stores to them. */
	if (m->binding == VTPU_BINDING_CONSTANTS) {
		vtpu_dma_row(v, m->v.dtype, e->prog->consts + off, m->dtype,
			     n);
	} else if (in->op == VTPU_OP_DMA_LOAD) {
		const u8 *src = (u8 *)e->bindings[m->binding].data + off;
		size_t len = (size_t)n * vtpu_esize(m->dtype);

		vtpu_dma_prefetch(m, src, r, len, vtpu_dma_ahead(m, len));
		vtpu_dma_row(v, m->v.dtype, src, m->dtype, n);
	} else {
		vtpu_dma_row((u8 *)e->bindings[m->binding].data + off,
			     m->dtype, v, m->v.dtype, n);
	}
}

/*
 * DMA_GATHER, columns [@j, @j + @n) of row @r: from the table row its
 * index names, checked against the table (the validator checked the
 * whole table against the binding). A bad index faults the job.
 */
static void vtpu_gather_segment(struct vtpu_exec *e,
				const struct vtpu_insn *in, u32 r, u32 j, u32 n)
{
	const struct vtpu_dma *m = &in->dma;
	u8 *v = vtpu_row(e, &m->v, r) + (size_t)j * vtpu_esize(m->v.dtype);
	const u8 *table;
	s64 i;
	s32 x;

	if (e->fault)
		return;
	memcpy(&x, e->vmem + m->index + 4 * (size_t)r, sizeof(x));
	i = x;
	if (i < 0 && (in->flags & VTPU_F_INDEX_WRAP))
		i += m->rows;
	if (i < 0 || i >= m->rows) {
		e->fault = -ERANGE;
		return;
	}
	table = m->binding == VTPU_BINDING_CONSTANTS ? e->prog->consts :
		(const u8 *)e->bindings[m->binding].data;
	vtpu_dma_row(v, m->v.dtype,
		     table + m->offset + (u64)i * m->stride +
		     (u64)j * vtpu_esize(m->dtype), m->dtype, n);
}

/*
 * A short row between VMEM and a binding (never overlapping): 32-byte
 * moves, the last one ending at the row's end, inline. A call to
 * memcpy() cost more than moving the hundred-odd bytes of a plane row.
 */
static __always_inline void vtpu_copy_row(u8 *d, const u8 *s, size_t len)
{
	size_t o;

	if (len > 512) {
		memcpy(d, s, len);
	} else if (len >= 32) {
		for (o = 0; o + 32 < len; o += 32)
			memcpy(d + o, s + o, 32);
		memcpy(d + len - 32, s + len - 32, 32);
	} else if (len >= 16) {
		memcpy(d, s, 16);
		memcpy(d + len - 16, s + len - 16, 16);
	} else if (len >= 8) {
		memcpy(d, s, 8);
		memcpy(d + len - 8, s + len - 8, 8);
	} else if (len >= 4) {
		memcpy(d, s, 4);
		memcpy(d + len - 4, s + len - 4, 4);
	} else {
		memcpy(d, s, len);
	}
}

/*
 * DMA_LOAD and DMA_STORE without conversion or element step, whose rows
 * are a segment each (VTPU_CHUNK / VTPU_W_MOVE elements at most): a row
 * is one vtpu_copy_row(), and this loop goes from row to row with the
 * addresses in hand. Through vtpu_exec_rows() each row of a short-row DMA (a plane
 * row of a depthwise convolution: a hundred bytes) paid a call and the
 * row addresses worked out again, as much as the copy. Same rows, same
 * bytes, same work counted, same resume point.
 */
static bool vtpu_exec_dma_rows(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	const struct vtpu_dma *m = &in->dma;
	size_t len = (size_t)m->v.cols * vtpu_esize(m->dtype);
	size_t vstride = (size_t)m->v.stride * vtpu_esize(m->v.dtype);
	u64 work = e->work, budget = e->budget;
	u64 per = (u64)m->v.cols * VTPU_W_MOVE + VTPU_W_PIECE;
	u32 i = e->cur.i, rows = m->v.rows, ahead = vtpu_dma_ahead(m, len);
	u8 *v = vtpu_row(e, &m->v, i);
	u8 *b;

	b = m->binding == VTPU_BINDING_CONSTANTS ? (u8 *)e->prog->consts :
	    (u8 *)e->bindings[m->binding].data;
	b += m->offset + (u64)i * m->stride;
	for (; i < rows; i++, v += vstride, b += m->stride) {
		if (in->op == VTPU_OP_DMA_STORE) {
			vtpu_copy_row(b, v, len);
		} else {
			vtpu_dma_prefetch(m, b, i, len, ahead);
			vtpu_copy_row(v, b, len);
		}
		work += per;
		if (work >= budget && i + 1 < rows) {
			vtpu_rows_save(e, i + 1, 0, work);
			return false;
		}
	}
	vtpu_rows_save(e, 0, 0, work);
	return true;
}

static bool vtpu_exec_dma(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	const struct vtpu_dma *m = &in->dma;

	if (in->op != VTPU_OP_DMA_GATHER && m->dtype == m->v.dtype &&
	    m->step < 2 && m->v.cols <= VTPU_CHUNK / VTPU_W_MOVE)
		return vtpu_exec_dma_rows(e, in);
	return vtpu_exec_elems(e, in, m->v.rows, m->v.cols,
			       m->dtype == m->v.dtype && m->step < 2 ?
			       VTPU_W_MOVE : VTPU_W_SLOW,
			       in->op == VTPU_OP_DMA_GATHER ?
			       vtpu_gather_segment : vtpu_dma_segment);
}

/*
 * MATMUL: d (+)= op(a) . op(b).
 *
 * Each d[i][j] accumulates its products in k order, each step one fused
 * multiply-add: fma(a1, b1, fma(a0, b0, init)) ..., starting from d
 * (VTPU_F_ACC) or +0. A lane of a vector register holds one d[i][j] for
 * the whole sum, so the vector width decides how many sums run at once,
 * never what any of them computes: the SSE2 (emulated FMA), AVX2 and
 * AVX-512 builds of this file, and the kernel's, give the same bits.
 * (QEMU's TCG emulates an FMA instruction in software, which costs a
 * guest about as much as the multiply and the add it replaces.) A NaN
 * result is the
 * quiet NaN 0x7fc00000: which NaN operand an instruction passes on
 * depends on the operand order the compiler picked, so MATMUL does not
 * promise to keep a payload.
 *
 * A register block of VTPU_MR x VTPU_NR elements of d lives in vector
 * registers while k runs; each step broadcasts one element of a per row
 * and multiplies it with a row of b. b's rows come from a panel of
 * VTPU_KC steps of k packed into e->pack (f32, VTPU_NR wide,
 * zero-padded), which also takes care of bf16 and transposed b; a is read
 * in place through its strides, which covers a transposed a. The loop
 * order is k block, column panel, row block: a panel is packed once and
 * then serves every row of d, one piece (VTPU_MC rows) at a time, so a
 * resumed instruction finds its panel still packed in e->pack.
 *
 * Blocking changes only where partial sums are kept (registers, or d
 * between k blocks, exactly), never their order.
 */
#if VTPU_VW == 16
#define VTPU_MR		VTPU_EXEC_MR_MAX
#else
#define VTPU_MR		6
#endif
#define VTPU_NV		2			/* vectors per row of a block */
#define VTPU_NR		(VTPU_NV * VTPU_VW)
/* Shorter panels where the multiply-adds are emulated: shorter pieces. */
#define VTPU_KC		(VTPU_MM_FUSED ? VTPU_EXEC_KC : VTPU_EXEC_KC / 2)
#define VTPU_MC		(4 * VTPU_MR)

/* An operand: element (i, k) of op(a), or (k, j) of op(b), in bytes. */
struct vtpu_mm_src {
	const u8 *base;
	size_t rs;	/* between rows (i or k) */
	size_t cs;	/* between columns (k or j) */
	bool bf16;
};

struct vtpu_mm {
	struct vtpu_mm_src a, b;
	float *d;
	size_t ds;	/* d's stride, elements */
	u32 m, n, k;
	bool acc;
};

static __always_inline float vtpu_mm_load(const u8 *p, bool bf16)
{
	u16 h;
	float f;

	if (bf16) {
		memcpy(&h, p, sizeof(h));
		return vtpu_bf16_to_f32(h);
	}
	memcpy(&f, p, sizeof(f));
	return f;
}

/* Stores @v, any NaN as the quiet NaN (see above). */
static __always_inline void vtpu_mm_store(float *p, VTPU_VF v)
{
	VTPU_VI num = v == v;

	v = (VTPU_VF)(((VTPU_VI)v & num) | ((int)VTPU_F32_QNAN & ~num));
	memcpy(p, &v, sizeof(v));
}

/*
 * c[0..rows)[0..VTPU_NR) (+)= a[0..rows)[0..kc) . p[0..kc)[0..VTPU_NR);
 * @rows and @bf16 are constants in every caller, so each instance is
 * straight-line code with its block in registers.
 */
static __always_inline void vtpu_mm_block(const u32 rows, const bool bf16,
					  u32 kc, const u8 *a, size_t ars,
					  size_t acs, const float *p, size_t ps,
					  float *c, size_t cs, bool load)
{
	VTPU_VF acc[VTPU_MR][VTPU_NV], b[VTPU_NV], s;
	u32 r, v, k;

#pragma GCC unroll 16
	for (r = 0; r < rows; r++)
#pragma GCC unroll 4
		for (v = 0; v < VTPU_NV; v++)
			acc[r][v] = load ? vtpu_vload(c + r * cs + v * VTPU_VW) :
				    (VTPU_VF){};
	for (k = 0; k < kc; k++, a += acs, p += ps) {
#pragma GCC unroll 4
		for (v = 0; v < VTPU_NV; v++)
			b[v] = vtpu_vload(p + v * VTPU_VW);
#pragma GCC unroll 16
		for (r = 0; r < rows; r++) {
			s = vtpu_splat(vtpu_mm_load(a + r * ars, bf16));
#pragma GCC unroll 4
			for (v = 0; v < VTPU_NV; v++)
				acc[r][v] = vtpu_vmadd(s, b[v], acc[r][v]);
		}
	}
#pragma GCC unroll 16
	for (r = 0; r < rows; r++)
#pragma GCC unroll 4
		for (v = 0; v < VTPU_NV; v++)
			vtpu_mm_store(c + r * cs + v * VTPU_VW, acc[r][v]);
}

static __always_inline void vtpu_mm_block_rows(const u32 rows,
					       const struct vtpu_mm *mm,
					       u32 kc, const u8 *a,
					       const float *p, size_t ps,
					       float *c, size_t cs, bool load)
{
	if (mm->a.bf16)
		vtpu_mm_block(rows, true, kc, a, mm->a.rs, mm->a.cs, p, ps, c,
			      cs, load);
	else
		vtpu_mm_block(rows, false, kc, a, mm->a.rs, mm->a.cs, p, ps, c,
			      cs, load);
}

/*
 * One instance per block height, so remainders run at full speed too.
 * @p's rows are @ps floats apart: VTPU_NR in a packed panel, b's own
 * stride when the block reads b in place.
 */
static void vtpu_mm_kernel(const struct vtpu_mm *mm, u32 rows, u32 kc,
			   const u8 *a, const float *p, size_t ps, float *c,
			   size_t cs, bool load)
{
	switch (rows) {
	case 1:
		vtpu_mm_block_rows(1, mm, kc, a, p, ps, c, cs, load);
		break;
	case 2:
		vtpu_mm_block_rows(2, mm, kc, a, p, ps, c, cs, load);
		break;
	case 3:
		vtpu_mm_block_rows(3, mm, kc, a, p, ps, c, cs, load);
		break;
	case 4:
		vtpu_mm_block_rows(4, mm, kc, a, p, ps, c, cs, load);
		break;
	case 5:
		vtpu_mm_block_rows(5, mm, kc, a, p, ps, c, cs, load);
		break;
#if VTPU_MR > 6
	case 6:
		vtpu_mm_block_rows(6, mm, kc, a, p, ps, c, cs, load);
		break;
	case 7:
		vtpu_mm_block_rows(7, mm, kc, a, p, ps, c, cs, load);
		break;
	case 8:
		vtpu_mm_block_rows(8, mm, kc, a, p, ps, c, cs, load);
		break;
	case 9:
		vtpu_mm_block_rows(9, mm, kc, a, p, ps, c, cs, load);
		break;
	case 10:
		vtpu_mm_block_rows(10, mm, kc, a, p, ps, c, cs, load);
		break;
	case 11:
		vtpu_mm_block_rows(11, mm, kc, a, p, ps, c, cs, load);
		break;
#endif
	default:
		vtpu_mm_block_rows(VTPU_MR, mm, kc, a, p, ps, c, cs, load);
		break;
	}
}

/* A block narrower than VTPU_NR goes through a full-width copy of it. */
static void vtpu_mm_kernel_edge(struct vtpu_exec *e, const struct vtpu_mm *mm,
				u32 rows, u32 nr, u32 kc, const u8 *a,
				const float *p, float *d, bool load)
{
	float *c = (float *)e->edge;
	u32 r;

	BUILD_BUG_ON(VTPU_MR > VTPU_EXEC_MR_MAX || VTPU_NR > VTPU_EXEC_NR_MAX);
	for (r = 0; load && r < rows; r++)
		memcpy(c + r * VTPU_NR, d + r * mm->ds, nr * sizeof(*c));
	vtpu_mm_kernel(mm, rows, kc, a, p, VTPU_NR, c, VTPU_NR, load);
	for (r = 0; r < rows; r++)
		memcpy(d + r * mm->ds, c + r * VTPU_NR, nr * sizeof(*c));
}

/* p[k][j] = op(b)[kb + k][jb + j], zero beyond column @nr. */
static void vtpu_mm_pack(const struct vtpu_mm *mm, float *p, u32 kb, u32 kc,
			 u32 jb, u32 nr)
{
	const struct vtpu_mm_src *b = &mm->b;
	const u8 *src = b->base + kb * b->rs + jb * b->cs;
	u32 k, j;

	if (!b->bf16 && b->cs == sizeof(float)) {
		/*
		 * Rows of b, vector by vector, an edge panel's missing
		 * columns zero (vtpu_vload_n()): no calls, and no rep movs
		 * that would take longer to start than to copy a row.
		 */
		for (k = 0; k < kc; k++) {
			const float *row = (const float *)(src + k * b->rs);

			for (j = 0; j < VTPU_NR; j += VTPU_VW)
				vtpu_vstore(p + k * VTPU_NR + j, j >= nr ?
					    (VTPU_VF){} :
					    vtpu_vload_n(row + j,
							 min_t(u32, nr - j, VTPU_VW)));
		}
		return;
	}
	for (j = 0; j < VTPU_NR; j++) {
		for (k = 0; k < kc; k++)
			p[k * VTPU_NR + j] = j >= nr ? 0 :
				vtpu_mm_load(src + k * b->rs + j * b->cs,
					     b->bf16);
	}
}

/*
 * A piece of MATMUL is VTPU_MC rows of d through one panel of b: VTPU_KC
 * steps of k by VTPU_NR columns, packed by the panel's first piece. e->cur
 * holds the next piece's first k, column and row, in the loop order kb,
 * jb, ib. Besides the multiply-adds (see VTPU_MADDS_PER_UNIT and
 * VTPU_MM_COST; twice that with a bf16 operand, widened as it is loaded),
 * a piece costs its passage through d and its part of a, and the first
 * one of a panel packs it.
 */
#define VTPU_W_PACK	8	/* per element of b packed */
#define VTPU_W_D	8	/* per element of d loaded and stored */
#define VTPU_W_A	4	/* per element of a */
#define VTPU_MM_PIECE_MAX	(VTPU_MC * VTPU_KC * \
				 (VTPU_NR * 2 * VTPU_MM_COST / \
				  VTPU_MADDS_PER_UNIT + \
				  VTPU_W_A) + \
				 VTPU_NR * (VTPU_KC * VTPU_W_PACK + \
					    VTPU_MC * VTPU_W_D) + VTPU_W_PIECE)

/*
 * Whether a panel of b is read in place rather than packed: when d has a
 * single block of rows, so the panel would serve one block only, and b is
 * f32 with its columns adjacent, as a packed panel's are. A matrix-vector
 * product (an RNN's step, a batch of one) then passes b once instead of
 * three times; the sums are the same, in the same order.
 */
static bool vtpu_mm_in_place(const struct vtpu_mm *mm, u32 nr)
{
	return mm->m <= VTPU_MR && nr == VTPU_NR && !mm->b.bf16 &&
	       mm->b.cs == sizeof(float) && !(mm->b.rs % sizeof(float));
}

static void vtpu_mm_piece(struct vtpu_exec *e, const struct vtpu_mm *mm,
			  u32 kb, u32 kc, u32 jb, u32 nr, u32 ib, u32 mc)
{
	float *p = (float *)e->pack;
	bool load = mm->acc || kb;
	size_t ps = VTPU_NR;
	u32 i, rows;
	const u8 *a;
	float *d;

	BUILD_BUG_ON(VTPU_KC > VTPU_EXEC_KC || VTPU_NR > VTPU_EXEC_NR_MAX);
	if (vtpu_mm_in_place(mm, nr)) {
		p = (float *)(mm->b.base + kb * mm->b.rs + jb * mm->b.cs);
		ps = mm->b.rs / sizeof(float);
	} else if (!ib) {
		vtpu_mm_pack(mm, p, kb, kc, jb, nr);
	}
	for (i = ib; i < ib + mc; i += VTPU_MR) {
		rows = min_t(u32, VTPU_MR, ib + mc - i);
		a = mm->a.base + i * mm->a.rs + kb * mm->a.cs;
		d = mm->d + i * mm->ds + jb;
		if (nr == VTPU_NR)
			vtpu_mm_kernel(mm, rows, kc, a, p, ps, d, mm->ds, load);
		else
			vtpu_mm_kernel_edge(e, mm, rows, nr, kc, a, p, d, load);
	}
}

/*
 * A d of one row, b read in place (vtpu_mm_in_place()): VTPU_ROW_NV
 * vectors of the row at once, so that as many chains of multiply-adds
 * run side by side (a block of one row has only VTPU_NV of them, too few
 * to hide an FMA's latency). Each element's sum is still its own, in k
 * order.
 */
#define VTPU_ROW_NV	(4 * VTPU_NV)
#define VTPU_ROW_COLS	(VTPU_ROW_NV * VTPU_VW)

static bool vtpu_mm_row_fits(const struct vtpu_mm *mm, u32 jb)
{
	return mm->m == 1 && mm->n - jb >= VTPU_ROW_COLS &&
	       vtpu_mm_in_place(mm, VTPU_NR);
}

static void vtpu_mm_row(const struct vtpu_mm *mm, u32 kb, u32 kc, u32 jb)
{
	const u8 *a = mm->a.base + kb * mm->a.cs;
	const float *p = (const float *)(mm->b.base + kb * mm->b.rs) + jb;
	size_t ps = mm->b.rs / sizeof(float);
	float *d = mm->d + jb;
	bool load = mm->acc || kb;
	VTPU_VF acc[VTPU_ROW_NV], s;
	u32 k, v;

#pragma GCC unroll 16
	for (v = 0; v < VTPU_ROW_NV; v++)
		acc[v] = load ? vtpu_vload(d + v * VTPU_VW) : (VTPU_VF){};
	for (k = 0; k < kc; k++, a += mm->a.cs, p += ps) {
		s = vtpu_splat(vtpu_mm_load(a, mm->a.bf16));
#pragma GCC unroll 16
		for (v = 0; v < VTPU_ROW_NV; v++)
			acc[v] = vtpu_vmadd(s, vtpu_vload(p + v * VTPU_VW),
					    acc[v]);
	}
#pragma GCC unroll 16
	for (v = 0; v < VTPU_ROW_NV; v++)
		vtpu_mm_store(d + v * VTPU_VW, acc[v]);
}

static bool vtpu_exec_matmul(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	const struct vtpu_tile *td = &in->t.d, *ta = &in->t.a, *tb = &in->t.b;
	bool trans_a = in->flags & VTPU_F_TRANS_A;
	bool trans_b = in->flags & VTPU_F_TRANS_B;
	size_t ea = vtpu_esize(ta->dtype), eb = vtpu_esize(tb->dtype);
	struct vtpu_mm mm = {
		.a = {
			.base = vtpu_row(e, ta, 0),
			.rs = trans_a ? ea : ta->stride * ea,
			.cs = trans_a ? ta->stride * ea : ea,
			.bf16 = ta->dtype == VTPU_DT_BF16,
		},
		.b = {
			.base = vtpu_row(e, tb, 0),
			.rs = trans_b ? eb : tb->stride * eb,
			.cs = trans_b ? tb->stride * eb : eb,
			.bf16 = tb->dtype == VTPU_DT_BF16,
		},
		.d = vtpu_frow(e, td, 0),
		.ds = td->stride,
		.m = td->rows,
		.n = td->cols,
		.k = trans_a ? ta->rows : ta->cols,
		.acc = in->flags & VTPU_F_ACC,
	};
	u32 w = VTPU_NR * (1 + (mm.a.bf16 || mm.b.bf16)) * VTPU_MM_COST /
		VTPU_MADDS_PER_UNIT;
	struct vtpu_exec_cursor *c = &e->cur;
	u32 kc, mc, nr;

	BUILD_BUG_ON(VTPU_W_INSN + VTPU_MM_PIECE_MAX > VTPU_EXEC_PIECE_MAX);
	while (c->k < mm.k) {
		kc = min_t(u32, VTPU_KC, mm.k - c->k);
		if (vtpu_mm_row_fits(&mm, c->j)) {
			vtpu_mm_row(&mm, c->k, kc, c->j);
			e->work += (u64)kc * (w * (VTPU_ROW_COLS / VTPU_NR) +
					      VTPU_W_A) +
				   VTPU_ROW_COLS * VTPU_W_D + VTPU_W_PIECE;
			/* on as after the last of the panels it covered */
			c->j += VTPU_ROW_COLS - VTPU_NR;
			c->i = mm.m;
		} else {
			nr = min_t(u32, VTPU_NR, mm.n - c->j);
			mc = min_t(u32, VTPU_MC, mm.m - c->i);
			vtpu_mm_piece(e, &mm, c->k, kc, c->j, nr, c->i, mc);
			e->work += (u64)mc * kc * (w + VTPU_W_A) +
				   VTPU_NR * ((c->i || vtpu_mm_in_place(&mm, nr) ?
					       0 : kc * VTPU_W_PACK) +
					      mc * VTPU_W_D) + VTPU_W_PIECE;
			c->i += VTPU_MC;
		}
		if (c->i >= mm.m) {
			c->i = 0;
			c->j += VTPU_NR;
			if (c->j >= mm.n) {
				c->j = 0;
				c->k += VTPU_KC;
			}
		}
		if (e->work >= e->budget && c->k < mm.k)
			return false;
	}
	c->k = 0;
	return true;
}

/*
 * Sharding, for executors whose core has helpers (e->par: the host
 * backend's threads; vtpu.ko has none). An instruction big enough to pay
 * for the hand-over is cut into up to e->par->ways instructions, each the
 * original restricted to a band of its destination's rows, or columns
 * where it has few rows, and to the sources' parts that band reads. Each
 * shard is a sub-tile of what the validator checked, so it is valid
 * wherever the original was; the bands are disjoint, and every element
 * of d is computed by the same code from the same operands as in the
 * whole instruction: sharded or not, the same bits. DMA_GATHER (whose
 * fault must stop at the first bad row), IOTA, TRACE, END and the scalar
 * unit's instructions are never cut.
 */
#define VTPU_SHARD_MIN		BIT(20)	/* work worth a hand-over: ~10 us */
#define VTPU_SHARD_MIN_COLS	64	/* narrowest band of columns */

static void vtpu_tile_band(struct vtpu_tile *t, bool cols, u32 at, u32 n)
{
	u32 esize = vtpu_esize(t->dtype);

	if (cols) {
		t->addr += at * esize;
		t->cols = n;
	} else {
		t->addr += at * t->stride * esize;
		t->rows = n;
	}
}

/*
 * Cuts @in into @out[0..return) along @total rows or columns of d: band
 * i starts at i * len (len a multiple of @align) and is len long, the
 * last one what remains. @bands says how each operand follows the band:
 * per operand (d, a, b), 0 not at all, 1 its rows, 2 its columns.
 */
static u32 vtpu_shard_cut(const struct vtpu_insn *in, struct vtpu_insn *out,
			  u32 ways, u32 total, u32 align, const u8 bands[3])
{
	u32 len = DIV_ROUND_UP(DIV_ROUND_UP(total, ways), align) * align;
	u32 i, at, n;

	for (i = 0, at = 0; at < total; i++, at += n) {
		n = min(len, total - at);
		out[i] = *in;
		if (bands[0])
			vtpu_tile_band(&out[i].t.d, bands[0] == 2, at, n);
		if (bands[1])
			vtpu_tile_band(&out[i].t.a, bands[1] == 2, at, n);
		if (bands[2])
			vtpu_tile_band(&out[i].t.b, bands[2] == 2, at, n);
	}
	return i;
}

static u32 vtpu_shard_matmul(const struct vtpu_insn *in,
			     struct vtpu_insn *out, u32 ways, u64 min)
{
	const struct vtpu_tile *d = &in->t.d;
	bool ta = in->flags & VTPU_F_TRANS_A, tb = in->flags & VTPU_F_TRANS_B;
	u32 k = ta ? in->t.a.rows : in->t.a.cols;
	u8 bands[3] = { 1, 0, 0 };

	if ((u64)d->rows * d->cols * k * VTPU_MM_COST / VTPU_MADDS_PER_UNIT <
	    min)
		return 0;
	/* Bands of whole register blocks: rows of a, or columns of b. */
	if (d->rows >= 2 * ways * VTPU_MR) {
		bands[1] = ta ? 2 : 1;
		return vtpu_shard_cut(in, out, ways, d->rows, VTPU_MR, bands);
	}
	if (d->cols < 2 * ways * VTPU_NR)
		return 0;
	bands[0] = 2;
	bands[2] = tb ? 1 : 2;
	return vtpu_shard_cut(in, out, ways, d->cols, VTPU_NR, bands);
}

/* Elementwise ops, REDUCE, TRANSPOSE: by rows, or by columns if few. */
static u32 vtpu_shard_elems(const struct vtpu_insn *in,
			    struct vtpu_insn *out, u32 ways, u32 weight,
			    u64 min)
{
	const struct vtpu_tile *d = &in->t.d;
	u32 bc = in->flags & VTPU_F_BCAST_MASK;
	u8 rows[3] = { 1, 1, 0 }, cols[3] = { 2, 2, 0 };
	bool axis_cols = in->flags & VTPU_F_AXIS_COLS;

	if ((u64)d->rows * d->cols * weight < min)
		return 0;
	switch (in->op) {
	case VTPU_OP_UNARY:
	case VTPU_OP_CONVERT:
		break;
	case VTPU_OP_FILL:
		rows[1] = 0;
		cols[1] = 0;
		break;
	case VTPU_OP_BINARY:
	case VTPU_OP_CMP:
	case VTPU_OP_SELECT:
		/* b follows d where it has d's rows (columns) */
		rows[2] = bc == VTPU_F_BCAST_NONE || bc == VTPU_F_BCAST_COL;
		cols[2] = bc == VTPU_F_BCAST_NONE || bc == VTPU_F_BCAST_ROW ?
			  2 : 0;
		break;
	case VTPU_OP_REDUCE:
		/* only along the axis that is kept: d is a column or a row */
		if (axis_cols)
			return d->rows >= ways ?
			       vtpu_shard_cut(in, out, ways, d->rows, 1, rows) : 0;
		return d->cols >= ways * VTPU_SHARD_MIN_COLS ?
		       vtpu_shard_cut(in, out, ways, d->cols,
				      VTPU_SHARD_MIN_COLS, cols) : 0;
	case VTPU_OP_TRANSPOSE:
		/* d's rows are a's columns and the other way round */
		rows[1] = 2;
		cols[1] = 1;
		break;
	default:
		return 0;
	}
	if (d->rows >= ways)
		return vtpu_shard_cut(in, out, ways, d->rows, 1, rows);
	if (d->cols >= ways * VTPU_SHARD_MIN_COLS)
		return vtpu_shard_cut(in, out, ways, d->cols,
				      VTPU_SHARD_MIN_COLS, cols);
	return 0;
}

/* DMA_LOAD and DMA_STORE: bands of rows of VMEM and of the binding. */
static u32 vtpu_shard_dma(const struct vtpu_insn *in, struct vtpu_insn *out,
			  u32 ways, u64 min)
{
	const struct vtpu_dma *m = &in->dma;
	u32 len, i, at, n;

	if ((u64)m->v.rows * m->v.cols * VTPU_W_MOVE < min || m->v.rows < ways)
		return 0;
	len = DIV_ROUND_UP(m->v.rows, ways);
	for (i = 0, at = 0; at < m->v.rows; i++, at += n) {
		n = min(len, m->v.rows - at);
		out[i] = *in;
		vtpu_tile_band(&out[i].dma.v, false, at, n);
		out[i].dma.offset += (u64)at * m->stride;
	}
	return i;
}

/* The shards of @in in e->shards, or 0 if it runs whole. */
static u32 vtpu_exec_shard(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	u32 ways = min_t(u32, e->par->ways, VTPU_EXEC_WAYS_MAX);
	u64 min = e->par->min_work ? e->par->min_work : VTPU_SHARD_MIN;
	u32 w = VTPU_W_SIMPLE;

	if (ways < 2)
		return 0;
	switch (in->op) {
	case VTPU_OP_MATMUL:
		return vtpu_shard_matmul(in, e->shards, ways, min);
	case VTPU_OP_DMA_LOAD:
	case VTPU_OP_DMA_STORE:
		return vtpu_shard_dma(in, e->shards, ways, min);
	case VTPU_OP_UNARY:
		w = vtpu_unary_weight[in->sub];
		break;
	case VTPU_OP_BINARY:
		w = vtpu_binary_weight[in->sub];
		break;
	case VTPU_OP_TRANSPOSE:
		w = VTPU_W_TR;
		break;
	}
	return vtpu_shard_elems(in, e->shards, ways, w ? w : VTPU_W_GELU, min);
}

/*
 * Runs of taps. A BINARY MUL or MADD followed by MADDs into the same d,
 * every b a column broadcast, is how a depthwise convolution adds up its
 * taps (compiler/dwconv.c): one instruction, one pass over d, per tap.
 * Such a run goes as one pass instead, each vector of d in a register
 * through all of the run's products. Every element still goes through
 * the same operations in the same order as the instructions one by one
 * would take it through, so the bits are the same; that needs d apart
 * from every a and b (then no instruction of the run reads what an
 * earlier one wrote), which vtpu_taps_count() checks. The NaN selections
 * of MUL and MADD change only lanes whose result is a NaN, and a NaN
 * result stays one to the end of the run, so a block of d without one
 * skips them; a block with one is done again, step by step.
 */
#define VTPU_TAPS_MAX	32
#define VTPU_W_TAP	VTPU_W_SIMPLE	/* per element and tap, in registers */

static bool vtpu_tiles_apart(const struct vtpu_tile *x,
			     const struct vtpu_tile *y)
{
	u64 xe = x->addr + ((u64)(x->rows - 1) * x->stride + x->cols) *
			   vtpu_esize(x->dtype);
	u64 ye = y->addr + ((u64)(y->rows - 1) * y->stride + y->cols) *
			   vtpu_esize(y->dtype);

	return xe <= y->addr || ye <= x->addr;
}

static bool vtpu_tiles_same(const struct vtpu_tile *x,
			    const struct vtpu_tile *y)
{
	return x->addr == y->addr && x->rows == y->rows &&
	       x->cols == y->cols && x->stride == y->stride &&
	       x->dtype == y->dtype;
}

/* The instructions of the run of taps that starts at @in: 0, or >= 2. */
static u32 vtpu_taps_count(const struct vtpu_exec *e,
			   const struct vtpu_insn *in)
{
	u32 left = min_t(u32, e->prog->insn_count - e->pc, VTPU_TAPS_MAX);
	const struct vtpu_insn *t;
	u32 n;

	if (in->op != VTPU_OP_BINARY || in->flags != VTPU_F_BCAST_COL ||
	    (in->sub != VTPU_BINARY_MUL && in->sub != VTPU_BINARY_MADD))
		return 0;
	for (n = 0, t = in; n < left; n++, t++)
		if (t->op != VTPU_OP_BINARY || t->flags != VTPU_F_BCAST_COL ||
		    (n && t->sub != VTPU_BINARY_MADD) ||
		    !vtpu_tiles_same(&t->t.d, &in->t.d) ||
		    !vtpu_tiles_apart(&in->t.d, &t->t.a) ||
		    !vtpu_tiles_apart(&in->t.d, &t->t.b))
			break;
	return n >= 2 ? n : 0;
}

/* @w <= VTPU_VW lanes of the run, step by step as its instructions go. */
static __always_inline VTPU_VF vtpu_taps_exact(const float *const *a,
					       const float *b, u32 taps,
					       bool mul, const float *d,
					       u32 at, u32 w)
{
	VTPU_VF x, y = vtpu_splat(b[0]);
	u32 t;

	x = vtpu_vload_n(a[0] + at, w);
	x = mul ? vtpu_vnan2_cold(x, y, x * y) : vtpu_vmadd_nan(x, y,
						vtpu_vload_n(d + at, w));
	for (t = 1; t < taps; t++)
		x = vtpu_vmadd_nan(vtpu_vload_n(a[t] + at, w),
				   vtpu_splat(b[t]), x);
	return x;
}

/*
 * Columns [@j, @j + @n) of row @r of the run of @taps instructions at
 * @in: VTPU_XBLK vectors at a time, enough chains of multiply-adds to
 * hide their latency.
 */
static void vtpu_taps_segment(struct vtpu_exec *e, const struct vtpu_insn *in,
			      u32 taps, u32 r, u32 j, u32 n)
{
	const float *a[VTPU_TAPS_MAX];
	float b[VTPU_TAPS_MAX], *d = vtpu_frow(e, &in->t.d, r);
	bool mul = in->sub == VTPU_BINARY_MUL;
	VTPU_VF x[VTPU_XBLK], y;
	u32 t, v, end = j + n, w;

	for (t = 0; t < taps; t++) {
		a[t] = vtpu_frow(e, &in[t].t.a, r);
		b[t] = vtpu_frow(e, &in[t].t.b, r)[0];
	}
	for (; j + VTPU_XBLK * VTPU_VW <= end; j += VTPU_XBLK * VTPU_VW) {
		y = vtpu_splat(b[0]);
#pragma GCC unroll 4
		for (v = 0; v < VTPU_XBLK; v++)
			x[v] = mul ? vtpu_vload(a[0] + j + v * VTPU_VW) * y :
			       vtpu_vmadd(vtpu_vload(a[0] + j + v * VTPU_VW),
					  y, vtpu_vload(d + j + v * VTPU_VW));
		for (t = 1; t < taps; t++) {
			y = vtpu_splat(b[t]);
#pragma GCC unroll 4
			for (v = 0; v < VTPU_XBLK; v++)
				x[v] = vtpu_vmadd(vtpu_vload(a[t] + j +
							     v * VTPU_VW),
						  y, x[v]);
		}
#pragma GCC unroll 4
		for (v = 0; v < VTPU_XBLK; v++) {
			if (unlikely(vtpu_vany_nan(x[v])))
				x[v] = vtpu_taps_exact(a, b, taps, mul, d,
						       j + v * VTPU_VW,
						       VTPU_VW);
			vtpu_vstore(d + j + v * VTPU_VW, x[v]);
		}
	}
	for (; j < end; j += w) {
		w = min_t(u32, VTPU_VW, end - j);
		vtpu_vstore_n(d + j, vtpu_taps_exact(a, b, taps, mul, d, j, w),
			      w);
	}
}

/*
 * The run of @taps instructions at @in, from e->cur on; e->cur.k holds
 * @taps while it is under way. True when done.
 */
static bool vtpu_exec_taps(struct vtpu_exec *e, const struct vtpu_insn *in,
			   u32 taps)
{
	const struct vtpu_tile *d = &in->t.d;
	u32 i = e->cur.i, j = e->cur.j, n, weight = taps * VTPU_W_TAP;
	u32 width = VTPU_CHUNK / weight;
	u64 work = e->work;

	while (i < d->rows) {
		n = min_t(u32, width, d->cols - j);
		vtpu_taps_segment(e, in, taps, i, j, n);
		work += (u64)n * weight + VTPU_W_PIECE;
		j += n;
		if (j == d->cols) {
			j = 0;
			i++;
		}
		if (work >= e->budget && i < d->rows) {
			vtpu_rows_save(e, i, j, work);
			e->cur.k = taps;
			return false;
		}
	}
	memset(&e->cur, 0, sizeof(e->cur));
	e->work = work;
	return true;
}

/* Runs @in from e->cur on: true when done, false when the budget ran out. */
static bool vtpu_exec_insn(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	BUILD_BUG_ON(VTPU_W_INSN + VTPU_CHUNK + VTPU_W_PIECE >
		     VTPU_EXEC_PIECE_MAX);
	BUILD_BUG_ON(VTPU_W_INSN + VTPU_W_TRACE > VTPU_EXEC_PIECE_MAX);

	switch (in->op) {
	case VTPU_OP_TRACE:
		if (e->trace)
			e->trace(e->trace_arg, in->imm);
		e->work += VTPU_W_TRACE;
		return true;
	case VTPU_OP_DMA_LOAD:
	case VTPU_OP_DMA_STORE:
	case VTPU_OP_DMA_GATHER:
		return vtpu_exec_dma(e, in);
	case VTPU_OP_MATMUL:
		return vtpu_exec_matmul(e, in);
	case VTPU_OP_UNARY:
	case VTPU_OP_BINARY:
	case VTPU_OP_CMP:
	case VTPU_OP_SELECT:
		return vtpu_exec_vpu(e, in);
	case VTPU_OP_REDUCE:
		return vtpu_exec_reduce(e, in);
	case VTPU_OP_FILL:
	case VTPU_OP_IOTA:
		return vtpu_exec_fill(e, in);
	case VTPU_OP_CONVERT:
		return vtpu_exec_convert(e, in);
	case VTPU_OP_TRANSPOSE:
		return vtpu_exec_transpose(e, in);
	}
	return true;	/* VTPU_OP_END */
}

/*
 * LANE and BARRIER, and whether @in belongs to a lane another executor
 * runs (e->lane_step executors, this one lane_first of them: lanes
 * lane_first, lane_first + lane_step, ...); one executor runs them all.
 * At a BARRIER the executors of one execution wait for each other.
 */
static bool vtpu_exec_other_lane(struct vtpu_exec *e,
				 const struct vtpu_insn *in)
{
	int fault;

	switch (in->op) {
	case VTPU_OP_LANE:
		e->lane = in->imm;
		return true;
	case VTPU_OP_BARRIER:
		e->lane = 0;
		if (e->lane_step > 1) {
			fault = e->par->meet(e->par->arg);
			if (fault && !e->fault)
				e->fault = fault;
		}
		return true;
	}
	return e->lane_step > 1 && e->lane % e->lane_step != e->lane_first;
}

/*
 * The scalar unit and branches (ISA version 4): whether @in is one of
 * them, executed, with e->pc at the next instruction. They are never
 * sharded nor cut. The validator allows branches only in a program of one
 * lane, so the executor that meets one runs every instruction.
 */
static bool vtpu_exec_scalar(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	u32 next = e->pc + 1;

	switch (in->op) {
	case VTPU_OP_SLOAD:
		memcpy(&e->sreg[in->sub], e->vmem + in->imm, sizeof(s32));
		break;
	case VTPU_OP_SSET:
		e->sreg[in->sub] = (s32)in->imm;
		break;
	case VTPU_OP_SADD:
		/* two's complement wrap-around, without signed overflow */
		e->sreg[in->sub] = (s32)((u32)e->sreg[in->sub] + in->imm);
		break;
	case VTPU_OP_BRZ:
	case VTPU_OP_BRNZ:
	case VTPU_OP_JUMP:
		/* lanes shared among executors: not a validated program */
		if (e->lane_step > 1) {
			e->fault = -EINVAL;
			return true;
		}
		if (in->op == VTPU_OP_JUMP)
			next = in->imm;
		else if (in->op == VTPU_OP_BRZ ? !e->sreg[in->sub] :
			 e->sreg[in->sub])
			next = in->imm;
		break;
	default:
		return false;
	}
	e->pc = next;
	e->insns++;
	return true;
}

/* Runs @in from its start to its end, whatever the budget. */
static void vtpu_exec_whole(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	u64 budget = e->budget;

	e->budget = U64_MAX;
	while (!vtpu_exec_insn(e, in))
		;
	e->budget = budget;
}

/* vtpu_exec_run() of this build. */
int VTPU_EXEC_CAT(vtpu_exec_run, VTPU_EXEC_ISA)(struct vtpu_exec *e,
						const struct vtpu_insn *in)
{
	e->work = 0;
	vtpu_exec_whole(e, in);
	return e->fault;
}

/* vtpu_exec_step() of this build, which the dispatch below calls. */
int VTPU_EXEC_CAT(vtpu_exec_step, VTPU_EXEC_ISA)(struct vtpu_exec *e,
						 u32 max_insns)
{
	const struct vtpu_insn *in;
	int fault;
	u32 n;

	/* A fault stops the program: only an instruction sets one. */
	if (e->fault)
		return e->fault;
	e->work = 0;
	for (; max_insns; max_insns--) {
		if (e->pc >= e->prog->insn_count)
			return 1;
		in = &e->prog->code[e->pc];
		e->work += VTPU_W_INSN;
		if (vtpu_exec_other_lane(e, in)) {
			if (e->fault)
				return e->fault;
			e->pc++;
			/* LANE and BARRIER count once, for lane 0 */
			e->insns += (in->op == VTPU_OP_LANE ||
				     in->op == VTPU_OP_BARRIER) && !e->lane_first;
			continue;
		}
		if (vtpu_exec_scalar(e, in)) {
			if (e->fault)
				return e->fault;
			/* a loop's every pass counts: the budget slices it */
			if (e->work >= e->budget)
				break;
			continue;
		}
		/*
		 * A run of taps, new or under way (e->cur.k: a BINARY has no
		 * other use for it), counts as its instructions.
		 */
		n = 0;
		if (in->op == VTPU_OP_BINARY)
			n = e->cur.k ? e->cur.k : !e->cur.i && !e->cur.j ?
			    vtpu_taps_count(e, in) : 0;
		if (n) {
			if (!vtpu_exec_taps(e, in, n))
				return 0;
			e->pc += n;
			e->insns += n;
			if (e->work >= e->budget)
				break;
			continue;
		}
		/* Only an instruction not yet started is sharded. */
		n = e->par && e->lane_step < 2 && !e->cur.i && !e->cur.j &&
		    !e->cur.k ? vtpu_exec_shard(e, in) : 0;
		if (n > 1) {
			e->par->start(e->par->arg, e->shards + 1, n - 1);
			vtpu_exec_whole(e, e->shards);
			fault = e->par->wait(e->par->arg);
			if (fault && !e->fault)
				e->fault = fault;
		} else if (!vtpu_exec_insn(e, in)) {
			return 0;
		}
		if (e->fault)
			return e->fault;
		e->pc++;
		e->insns++;
		if (in->op == VTPU_OP_END)
			return 1;
		if (e->work >= e->budget)
			break;
	}
	return e->pc >= e->prog->insn_count;
}

#ifdef VTPU_EXEC_COMMON
#ifdef __KERNEL__
static bool vtpu_exec_cpu_has(enum vtpu_exec_isa isa)
{
	u64 ymm = XFEATURE_MASK_SSE | XFEATURE_MASK_YMM;

	switch (isa) {
	case VTPU_EXEC_AVX512:
		return boot_cpu_has(X86_FEATURE_AVX512F) &&
		       cpu_has_xfeatures(ymm | XFEATURE_MASK_AVX512, NULL);
	case VTPU_EXEC_AVX2:
		return boot_cpu_has(X86_FEATURE_AVX2) &&
		       boot_cpu_has(X86_FEATURE_FMA) &&
		       cpu_has_xfeatures(ymm, NULL);
	default:
		return true;
	}
}
#else
/* libgcc's answer includes the OS's consent (XCR0) to the wider state. */
static bool vtpu_exec_cpu_has(enum vtpu_exec_isa isa)
{
	__builtin_cpu_init();
	switch (isa) {
	case VTPU_EXEC_AVX512:
		return __builtin_cpu_supports("avx512f");
	case VTPU_EXEC_AVX2:
		return __builtin_cpu_supports("avx2") &&
		       __builtin_cpu_supports("fma");
	default:
		return true;
	}
}
#endif

bool vtpu_exec_isa_supported(enum vtpu_exec_isa isa)
{
	return isa < VTPU_EXEC_ISA_NR && vtpu_exec_cpu_has(isa);
}

const char *vtpu_exec_isa_name(enum vtpu_exec_isa isa)
{
	static const char *const names[VTPU_EXEC_ISA_NR] = {
		[VTPU_EXEC_SSE2] = "sse2",
		[VTPU_EXEC_AVX2] = "avx2",
		[VTPU_EXEC_AVX512] = "avx512",
	};

	return isa < VTPU_EXEC_ISA_NR ? names[isa] : "?";
}

enum vtpu_exec_isa vtpu_exec_isa_best(void)
{
	enum vtpu_exec_isa isa = VTPU_EXEC_ISA_NR - 1;

	while (isa > VTPU_EXEC_SSE2 && !vtpu_exec_cpu_has(isa))
		isa--;
	return isa;
}

/**
 * vtpu_exec_init() - prepare to run a validated program from its start
 * @e: the execution state to initialise
 * @prog: the program, as vtpu_prog_validate() described it
 * @bindings: its buffers, as many as @prog->binding_count, the same sizes
 *	the validator was given
 * @vmem: the core's VMEM, 4-byte aligned, at least @prog->vmem_size bytes
 *
 * Clears the trace callback; set @e->trace afterwards to receive TRACEs.
 * Sets @e->budget to VTPU_EXEC_BUDGET and @e->isa to the fastest build
 * this CPU runs.
 */
void vtpu_exec_init(struct vtpu_exec *e, const struct vtpu_prog_info *prog,
		    const struct vtpu_exec_binding *bindings, void *vmem)
{
	e->prog = prog;
	e->bindings = bindings;
	e->vmem = vmem;
	e->pc = 0;
	e->insns = 0;
	e->budget = VTPU_EXEC_BUDGET;
	e->work = 0;
	memset(&e->cur, 0, sizeof(e->cur));
	e->par = NULL;
	e->lane = 0;
	e->lane_first = 0;
	e->lane_step = 1;
	e->trace = NULL;
	e->trace_arg = NULL;
	e->isa = vtpu_exec_isa_best();
	e->fault = 0;
	memset(e->sreg, 0, sizeof(e->sreg));
}

/**
 * vtpu_exec_step() - run a slice of a program
 * @e: state from vtpu_exec_init()
 * @max_insns: the most instructions to start or resume in this call
 *
 * In the kernel this runs inside kernel_fpu_begin()/kernel_fpu_end(): it
 * never sleeps nor allocates. It returns once the work done in this call,
 * left in @e->work, reaches @e->budget, if need be in the middle of an
 * instruction; the next call resumes that instruction where it stopped,
 * and that counts as one of its @max_insns. Any call with @max_insns > 0
 * makes progress, and does at most @e->budget + VTPU_EXEC_PIECE_MAX of
 * work. @e->insns counts an instruction once, when it completes. Once END
 * has executed, further calls do nothing and return 1.
 *
 * Return: 1 once END has executed, 0 while work remains, or a -errno
 * once the program has faulted (@e->fault; every later call returns it).
 */
int vtpu_exec_step(struct vtpu_exec *e, u32 max_insns)
{
	switch (e->isa) {
	case VTPU_EXEC_AVX512:
		return vtpu_exec_step_avx512(e, max_insns);
	case VTPU_EXEC_AVX2:
		return vtpu_exec_step_avx2(e, max_insns);
	default:
		return vtpu_exec_step_sse2(e, max_insns);
	}
}

/**
 * vtpu_exec_run() - run one shard of an instruction, whole
 * @e: a helper's state: vtpu_exec_init() with the program, bindings and
 *	VMEM of the execution the shard belongs to, and its @isa
 * @in: a shard that the execution's struct vtpu_exec_par::start() passed
 *
 * Return: 0, or the fault the shard raised.
 */
int vtpu_exec_run(struct vtpu_exec *e, const struct vtpu_insn *in)
{
	switch (e->isa) {
	case VTPU_EXEC_AVX512:
		return vtpu_exec_run_avx512(e, in);
	case VTPU_EXEC_AVX2:
		return vtpu_exec_run_avx2(e, in);
	default:
		return vtpu_exec_run_sse2(e, in);
	}
}
#endif /* VTPU_EXEC_COMMON */
