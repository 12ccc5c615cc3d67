// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the executor computes every opcode and every function as
 * uapi/drm/vtpu_isa.h and driver/vtpu_exec.c specify.
 *
 * Each test builds a program with tests/common/vtpu_asm.h, validates it
 * and runs it on the userspace executor two instructions per step, with
 * a small work budget, so that long instructions stop and resume, once
 * per build of the executor the CPU has (SSE2, AVX2, AVX-512): every
 * build must leave the same bytes in VMEM and in the bindings. The
 * references are written here, independently of the executor: double
 * precision and libm. Shapes and VMEM placement are random (seeded):
 * 1x1, 1xN, Nx1, non-square, strides beyond the columns, tiles at
 * unaligned-looking offsets. VMEM starts as random bytes and every test
 * checks that nothing outside its destinations changed.
 *
 * Tolerances, per function:
 *   bit for bit: NEG ABS COPY RELU SQRT RECIP; ADD SUB MUL DIV MAX MIN;
 *     MADD against libm's fmaf() (its NaNs as the executor documents);
 *     CMP; SELECT; FILL; IOTA; CONVERT; TRANSPOSE; DMA; REDUCE MAX MIN;
 *     MATMUL against the sequence of fused multiply-adds the executor
 *     documents (libm's fmaf: init, then + a[0]b[0], + a[1]b[1], ...,
 *     each rounded once), REDUCE SUM against the sequential f32 sum;
 *   MATMUL and REDUCE SUM against the exact (double) sum:
 *     (k + 1) * 2^-24 * (|init| + sum |terms|);
 *   LOG RSQRT POW (computed in double): at most 1 ulp from libm's double
 *     result; when written they measured below 0.5 ulp (correctly rounded
 *     on every input tried);
 *   EXP TANH SIGMOID GELU (f32 FMA polynomials): 1, 2, 3 and 8 ulp on
 *     the special and random inputs; the sweeps' bounds are a little
 *     above what they measured when written (EXP 0.97, TANH 1.25,
 *     SIGMOID 2.07, GELU 5.4 in its negative tail and 1.44 near 0).
 * The accuracy sweeps print the maximum they measure over 2^17..2^18
 * random inputs each.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtpu_asm.h"
#include "vtpu_exec.h"

#include "kselftest_harness.h"

#define VMEM_SIZE	(1u << 20)
#define MAX_BIND	4
/* Work a step, in the executor's units: a few pieces of an instruction. */
#define RIG_BUDGET	100003

/* xorshift64*: reproducible inputs for every test. */
static uint64_t rng_state;

static void rng_seed(uint64_t seed)
{
	rng_state = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
}

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t rng_below(uint32_t n)
{
	return (uint32_t)(rng() % n);
}

static float rng_uniform(double lo, double hi)
{
	return (float)(lo + (hi - lo) * (double)(rng() >> 11) * 0x1p-53);
}

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static const float specials[] = {
	0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -2.0f, 3.0f, 1e-3f, -7.25f, 100.0f,
	FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1e-40f, -1e-40f, 1e-45f,
	INFINITY, -INFINITY, NAN, -NAN,
};

/* Mostly uniform in [lo, hi], sometimes a special value. */
static float rng_value(double lo, double hi)
{
	if (rng_below(8) == 0)
		return specials[rng_below(ARRAY_SIZE(specials))];
	return rng_uniform(lo, hi);
}

/*
 * A test rig: VMEM of random bytes, bindings, and the program being
 * assembled. Tiles are placed one after another with random gaps.
 */
struct rig {
	struct vtpu_asm as;
	uint8_t *vmem, *before;
	uint32_t cursor;
	struct vtpu_exec_binding bind[MAX_BIND];
	struct vtpu_binding_desc desc[MAX_BIND];
	uint32_t nbind;
	uint64_t insns;
	const char *why;
	void (*trace)(void *arg, uint32_t id);
	void *trace_arg;
	uint64_t cut;		/* instructions the sharded runs cut */
};

static void rig_init(struct rig *r, uint64_t seed)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	rng_seed(seed);
	r->vmem = aligned_alloc(64, VMEM_SIZE);
	r->before = malloc(VMEM_SIZE);
	if (!r->vmem || !r->before)
		abort();
	for (i = 0; i < VMEM_SIZE; i += 8) {
		uint64_t x = rng();

		memcpy(r->vmem + i, &x, 8);
	}
	r->cursor = 4 * rng_below(16);
	vtpu_asm_init(&r->as, VMEM_SIZE, 0);
}

static void rig_fini(struct rig *r)
{
	uint32_t i;

	for (i = 0; i < r->nbind; i++)
		free(r->bind[i].data);
	vtpu_asm_free(&r->as);
	free(r->before);
	free(r->vmem);
}

/* A binding of @size random bytes; its index. */
static uint32_t rig_binding(struct rig *r, uint64_t size, uint32_t access)
{
	uint32_t n = r->nbind++;
	uint8_t *p = malloc(size);
	uint64_t i;

	if (!p || n >= MAX_BIND)
		abort();
	for (i = 0; i < size; i++)
		p[i] = (uint8_t)rng();
	r->bind[n].data = p;
	r->bind[n].size = size;
	r->desc[n].size = size;
	r->desc[n].access = access;
	r->as.nbindings = r->nbind;
	return n;
}

static uint32_t dt_size(uint8_t dtype)
{
	return dtype == VTPU_DT_BF16 ? 2 : 4;
}

static struct vtpu_tile rig_tile(struct rig *r, uint8_t dtype, uint32_t rows,
				 uint32_t cols)
{
	uint32_t es = dt_size(dtype);
	uint32_t stride = cols + (rng_below(3) ? 0 : 1 + rng_below(5));
	uint32_t addr = (r->cursor + es - 1) / es * es + es * rng_below(5);

	r->cursor = addr + ((rows - 1) * stride + cols) * es;
	if (r->cursor > VMEM_SIZE)
		abort();
	return vtpu_tile(addr, rows, cols, stride, dtype);
}

static uint8_t *elem(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		     uint32_t j)
{
	return r->vmem + t->addr + ((size_t)i * t->stride + j) * dt_size(t->dtype);
}

static float getf(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		  uint32_t j)
{
	float f;

	memcpy(&f, elem(r, t, i, j), sizeof(f));
	return f;
}

static void setf(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		 uint32_t j, float f)
{
	memcpy(elem(r, t, i, j), &f, sizeof(f));
}

static uint16_t geth(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		     uint32_t j)
{
	uint16_t h;

	memcpy(&h, elem(r, t, i, j), sizeof(h));
	return h;
}

static void seth(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		 uint32_t j, uint16_t h)
{
	memcpy(elem(r, t, i, j), &h, sizeof(h));
}

static int32_t gets(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		    uint32_t j)
{
	int32_t v;

	memcpy(&v, elem(r, t, i, j), sizeof(v));
	return v;
}

static void sets(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		 uint32_t j, int32_t v)
{
	memcpy(elem(r, t, i, j), &v, sizeof(v));
}

/* Element (i, j) of an f32 or bf16 tile, as f32. */
static float getv(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		  uint32_t j)
{
	if (t->dtype == VTPU_DT_BF16)
		return bits_f32((uint32_t)geth(r, t, i, j) << 16);
	return getf(r, t, i, j);
}

/* Fills an f32 tile from @gen. */
static void fill_tile(struct rig *r, const struct vtpu_tile *t, double lo,
		      double hi)
{
	uint32_t i, j;

	for (i = 0; i < t->rows; i++)
		for (j = 0; j < t->cols; j++)
			setf(r, t, i, j, rng_value(lo, hi));
}

/*
 * Helpers for a sharded run (struct vtpu_exec_par), as the host
 * backend's threads would be, but sequential and backwards: wait() runs
 * the shards last to first, after the caller's first one, so a shard
 * that reads what another writes shows.
 */
struct rig_par {
	struct vtpu_exec_par par;
	struct vtpu_exec helper;
	const struct vtpu_insn *shards;
	uint32_t n;
	uint64_t cut;		/* instructions cut */
};

static void rig_par_start(void *arg, const struct vtpu_insn *shards,
			  uint32_t n)
{
	struct rig_par *p = arg;

	p->shards = shards;
	p->n = n;
	p->cut++;
}

static int rig_par_wait(void *arg)
{
	struct rig_par *p = arg;
	int fault = 0, ret;

	while (p->n--) {
		ret = vtpu_exec_run(&p->helper, &p->shards[p->n]);
		if (ret && !fault)
			fault = ret;
	}
	p->n = 0;
	return fault;
}

/*
 * Runs a validated program on @isa, two insns a step; @ways > 1 cuts
 * every instruction that can be cut into that many shards.
 */
static void rig_exec(struct rig *r, const struct vtpu_prog_info *info,
		     enum vtpu_exec_isa isa, bool trace, uint32_t ways)
{
	static struct rig_par rp;
	struct vtpu_exec e;

	vtpu_exec_init(&e, info, r->bind, r->vmem);
	e.isa = isa;
	e.trace = trace ? r->trace : NULL;
	e.trace_arg = r->trace_arg;
	e.budget = RIG_BUDGET;
	if (ways > 1) {
		memset(&rp, 0, sizeof(rp));
		vtpu_exec_init(&rp.helper, info, r->bind, r->vmem);
		rp.helper.isa = isa;
		rp.par = (struct vtpu_exec_par){
			.start = rig_par_start, .wait = rig_par_wait,
			.arg = &rp, .ways = ways, .min_work = 1,
		};
		e.par = &rp.par;
	}
	while (!vtpu_exec_step(&e, 2))
		;
	r->insns = e.insns;
	if (ways > 1)
		r->cut += rp.cut;
}

/*
 * Validates and runs the program (END appended) on every build of the
 * executor this CPU has, each from the same VMEM and bindings, whole and
 * cut into shards 3 ways; they must all leave the same bytes (-EILSEQ
 * and @r->why if not). The best build runs last, whole, with the trace
 * callback, and its results are the rig's.
 */
static int rig_run(struct rig *r)
{
	static char why[128];
	struct vtpu_prog_info info;
	struct vtpu_prog_error err;
	uint8_t *ref = NULL, *bind0[MAX_BIND] = { NULL };
	uint8_t *refb[MAX_BIND] = { NULL };
	int isa, best = -1, ret = 0, run, runs = 0;
	const char *first = NULL;
	size_t size = 0;
	uint32_t i;
	void *prog;

	vtpu_asm_end(&r->as);
	prog = vtpu_asm_finish(&r->as, &size);
	if (!prog)
		return -ENOMEM;
	memcpy(r->before, r->vmem, VMEM_SIZE);
	ret = vtpu_prog_validate(prog, size, r->desc, r->nbind, VMEM_SIZE,
				 &info, &err);
	if (ret) {
		r->why = err.why;
		free(prog);
		return ret;
	}
	for (i = 0; i < r->nbind; i++) {
		bind0[i] = malloc(r->bind[i].size);
		memcpy(bind0[i], r->bind[i].data, r->bind[i].size);
	}
	for (isa = 0; isa < VTPU_EXEC_ISA_NR; isa++)
		if (vtpu_exec_isa_supported(isa))
			best = isa;
	/* Each build cut 3 ways, then whole; the best build whole last. */
	for (isa = 0; isa <= best; isa++) {
		if (!vtpu_exec_isa_supported(isa))
			continue;
		for (run = 0; run < 2; run++, runs++) {
			char name[32];

			snprintf(name, sizeof(name), "%s%s",
				 vtpu_exec_isa_name(isa),
				 run ? "" : " (sharded)");
			if (runs) {
				/* The first run's results are the reference. */
				if (!ref) {
					ref = malloc(VMEM_SIZE);
					memcpy(ref, r->vmem, VMEM_SIZE);
				}
				memcpy(r->vmem, r->before, VMEM_SIZE);
				for (i = 0; i < r->nbind; i++)
					memcpy(r->bind[i].data, bind0[i],
					       r->bind[i].size);
			} else {
				first = vtpu_exec_isa_name(isa);
			}
			rig_exec(r, &info, isa, isa == best && run,
				 run ? 1 : 3);
			if (ref && memcmp(ref, r->vmem, VMEM_SIZE)) {
				snprintf(why, sizeof(why), "VMEM differs between the %s (sharded) and %s builds",
					 first, name);
				r->why = why;
				ret = -EILSEQ;
			}
			for (i = 0; i < r->nbind; i++) {
				if (!runs) {
					refb[i] = malloc(r->bind[i].size);
					memcpy(refb[i], r->bind[i].data,
					       r->bind[i].size);
				} else if (memcmp(refb[i], r->bind[i].data,
						  r->bind[i].size)) {
					snprintf(why, sizeof(why), "binding %u differs between the %s (sharded) and %s builds",
						 i, first, name);
					r->why = why;
					ret = -EILSEQ;
				}
			}
		}
	}
	free(ref);
	for (i = 0; i < r->nbind; i++) {
		free(bind0[i]);
		free(refb[i]);
	}
	free(prog);
	/* Ready for the next program on the same VMEM. */
	vtpu_asm_free(&r->as);
	vtpu_asm_init(&r->as, VMEM_SIZE, r->nbind);
	return ret;
}

/*
 * Bytes outside the @n destination tiles that the last run changed: the
 * destinations are copied into the snapshot, which must then match.
 */
static size_t stray_writes(struct rig *r, const struct vtpu_tile *dst, int n)
{
	size_t count = 0, off, b;
	uint32_t i;
	int t;

	for (t = 0; t < n; t++) {
		for (i = 0; i < dst[t].rows; i++) {
			off = elem(r, &dst[t], i, 0) - r->vmem;
			memcpy(r->before + off, r->vmem + off,
			       (size_t)dst[t].cols * dt_size(dst[t].dtype));
		}
	}
	if (!memcmp(r->before, r->vmem, VMEM_SIZE))
		return 0;
	for (b = 0; b < VMEM_SIZE; b++)
		count += r->vmem[b] != r->before[b];
	return count;
}

/* The element (i, j) of operand b under broadcast mode @bcast. */
static float bcast_b(struct rig *r, const struct vtpu_tile *b, uint16_t bcast,
		     uint32_t imm, uint32_t i, uint32_t j)
{
	switch (bcast) {
	case VTPU_F_BCAST_SCALAR:
		return getf(r, b, 0, 0);
	case VTPU_F_BCAST_ROW:
		return getf(r, b, 0, j);
	case VTPU_F_BCAST_COL:
		return getf(r, b, i, 0);
	case VTPU_F_BCAST_IMM:
		return bits_f32(imm);
	}
	return getf(r, b, i, j);
}

static const uint16_t bcast_modes[] = {
	VTPU_F_BCAST_NONE, VTPU_F_BCAST_SCALAR, VTPU_F_BCAST_ROW,
	VTPU_F_BCAST_COL, VTPU_F_BCAST_IMM,
};

/* Operand b's shape for @bcast, given d's. */
static struct vtpu_tile bcast_tile(struct rig *r, uint16_t bcast, uint32_t rows,
				   uint32_t cols)
{
	switch (bcast) {
	case VTPU_F_BCAST_SCALAR:
		return rig_tile(r, VTPU_DT_F32, 1, 1);
	case VTPU_F_BCAST_ROW:
		return rig_tile(r, VTPU_DT_F32, 1, cols);
	case VTPU_F_BCAST_COL:
		return rig_tile(r, VTPU_DT_F32, rows, 1);
	case VTPU_F_BCAST_IMM:
		return vtpu_no_tile;
	}
	return rig_tile(r, VTPU_DT_F32, rows, cols);
}

/*
 * Random shapes, the degenerate ones first, then rows longer than one
 * piece of an instruction (the executor cuts rows into segments of a
 * few thousand elements at most, and resumes them).
 */
static void shape(int iter, uint32_t max, uint32_t *rows, uint32_t *cols)
{
	static const uint32_t fixed[][2] = {
		{ 1, 1 }, { 1, 9 }, { 9, 1 }, { 3, 4500 },
	};

	if (iter < (int)ARRAY_SIZE(fixed)) {
		*rows = fixed[iter][0];
		*cols = fixed[iter][1];
		return;
	}
	*rows = 1 + rng_below(max);
	*cols = 1 + rng_below(max);
}

/*
 * Error of @got against the exact @ref, in units in the last place of
 * f32 at @ref. A NaN must meet a NaN and an infinite reference (or one
 * that rounds to infinity) an equal infinity.
 */
static double ulp_error(float got, double ref)
{
	double g = got, a = fabs(ref), ulp;
	int e;

	if (isnan(ref) || isnan(got))
		return isnan(ref) && isnan(got) ? 0 : INFINITY;
	if (a >= 0x1p128)
		return g == copysign(INFINITY, ref) ? 0 : INFINITY;
	if (isinf(got))
		g = copysign(0x1p128, g);
	if (a < 0x1p-126) {
		ulp = 0x1p-149;
	} else {
		frexp(a, &e);
		ulp = ldexp(1, e - 24);
	}
	return fabs(g - ref) / ulp;
}

/* Bit-exact equality, any NaN matching any NaN unless @payload. */
static int same_float(float got, float want, int payload)
{
	if (isnan(want) && !payload)
		return isnan(got);
	return f32_bits(got) == f32_bits(want);
}

/* ---- UNARY ---- */

struct unary_ref {
	const char *name;
	uint8_t sub;
	double lo, hi;		/* main input range */
	double ulps;		/* -1: bit-exact against (float)ref */
	int payload;		/* NaN payload and sign kept bit for bit */
	double (*ref)(double x);
};

static double ref_neg(double x) { return -x; }
static double ref_abs(double x) { return fabs(x); }
static double ref_copy(double x) { return x; }
static double ref_relu(double x) { return isnan(x) ? x : x > 0 ? x : 0.0; }
static double ref_rsqrt(double x) { return 1 / sqrt(x); }
static double ref_recip(double x) { return 1 / x; }
static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }
/* x Phi(x); its limit at -inf, -0, where the formula gives -inf * 0. */
static double ref_gelu(double x)
{
	return isinf(x) && x < 0 ? -0.0 : 0.5 * x * erfc(-x * M_SQRT1_2);
}

static const struct unary_ref unary_refs[] = {
	{ "neg", VTPU_UNARY_NEG, -1e6, 1e6, -1, 1, ref_neg },
	{ "abs", VTPU_UNARY_ABS, -1e6, 1e6, -1, 1, ref_abs },
	{ "exp", VTPU_UNARY_EXP, -105, 90, 1, 0, exp },
	{ "log", VTPU_UNARY_LOG, 0, 1e4, 1, 0, log },
	{ "sqrt", VTPU_UNARY_SQRT, 0, 1e6, -1, 0, sqrt },
	{ "rsqrt", VTPU_UNARY_RSQRT, 0, 1e6, 1, 0, ref_rsqrt },
	{ "recip", VTPU_UNARY_RECIP, -1e3, 1e3, -1, 0, ref_recip },
	{ "tanh", VTPU_UNARY_TANH, -12, 12, 2, 0, tanh },
	{ "sigmoid", VTPU_UNARY_SIGMOID, -110, 40, 3, 0, ref_sigmoid },
	{ "relu", VTPU_UNARY_RELU, -10, 10, -1, 0, ref_relu },
	{ "gelu", VTPU_UNARY_GELU, -16, 12, 8, 0, ref_gelu },
	{ "copy", VTPU_UNARY_COPY, -1e6, 1e6, -1, 1, ref_copy },
};

/* Whether @got is right for input @x under @u; its ulp error in @err. */
static int unary_ok(const struct unary_ref *u, float x, float got, double *err)
{
	double ref = u->ref(x);

	*err = 0;
	if (u->payload) {
		/* Sign operations: bits of x with the sign bit changed. */
		uint32_t s = f32_bits(x);

		if (u->sub == VTPU_UNARY_NEG)
			s ^= 0x80000000u;
		else if (u->sub == VTPU_UNARY_ABS)
			s &= 0x7fffffffu;
		return f32_bits(got) == s;
	}
	if (u->ulps < 0)
		return same_float(got, (float)ref, 0);
	*err = ulp_error(got, ref);
	return *err <= u->ulps;
}

/* Random shapes, out of place and in place; returns bad elements. */
static int check_unary(struct __test_metadata *_metadata,
		       const struct unary_ref *u, uint64_t seed)
{
	int iter, bad = 0;

	for (iter = 0; iter < 12; iter++) {
		struct rig r;
		struct vtpu_tile a, d;
		uint32_t rows, cols, i, j;
		int in_place = iter % 3 == 2;
		double err;
		float *x;

		rig_init(&r, seed + iter);
		shape(iter, 40, &rows, &cols);
		a = rig_tile(&r, VTPU_DT_F32, rows, cols);
		d = in_place ? a : rig_tile(&r, VTPU_DT_F32, rows, cols);
		fill_tile(&r, &a, u->lo, u->hi);
		x = malloc(sizeof(*x) * rows * cols);
		for (i = 0; i < rows; i++)
			for (j = 0; j < cols; j++)
				x[i * cols + j] = getf(&r, &a, i, j);
		vtpu_asm_unary(&r.as, u->sub, d, a);
		ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
		ASSERT_EQ(0, stray_writes(&r, &d, 1));
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				float got = getf(&r, &d, i, j);

				if (unary_ok(u, x[i * cols + j], got, &err))
					continue;
				if (!bad++)
					TH_LOG("%s(%a) = %a, want %a (%g ulp)",
					       u->name, x[i * cols + j], got,
					       u->ref(x[i * cols + j]), err);
			}
		}
		free(x);
		rig_fini(&r);
	}
	return bad;
}

#define UNARY_TEST(fn, index) \
TEST(unary_##fn) \
{ \
	ASSERT_EQ(0, check_unary(_metadata, &unary_refs[index], 100 + index)); \
}

UNARY_TEST(neg, 0)
UNARY_TEST(abs, 1)
UNARY_TEST(exp, 2)
UNARY_TEST(log, 3)
UNARY_TEST(sqrt, 4)
UNARY_TEST(rsqrt, 5)
UNARY_TEST(recip, 6)
UNARY_TEST(tanh, 7)
UNARY_TEST(sigmoid, 8)
UNARY_TEST(relu, 9)
UNARY_TEST(gelu, 10)
UNARY_TEST(copy, 11)

TEST(unary_table_matches_isa)
{
	uint32_t i;

	ASSERT_EQ(VTPU_UNARY_NR, ARRAY_SIZE(unary_refs));
	for (i = 0; i < ARRAY_SIZE(unary_refs); i++) {
		ASSERT_EQ(i, unary_refs[i].sub);
	}
}

/* Special values every transcendental must get exactly right. */
TEST(unary_special_values)
{
	static const struct {
		uint8_t sub;
		float x, want;
	} cases[] = {
		{ VTPU_UNARY_EXP, 0.0f, 1.0f },
		{ VTPU_UNARY_EXP, -0.0f, 1.0f },
		{ VTPU_UNARY_EXP, INFINITY, INFINITY },
		{ VTPU_UNARY_EXP, -INFINITY, 0.0f },
		{ VTPU_UNARY_EXP, 89.0f, INFINITY },
		{ VTPU_UNARY_EXP, -104.0f, 0.0f },
		{ VTPU_UNARY_EXP, NAN, NAN },
		{ VTPU_UNARY_LOG, 1.0f, 0.0f },
		{ VTPU_UNARY_LOG, 0.0f, -INFINITY },
		{ VTPU_UNARY_LOG, -0.0f, -INFINITY },
		{ VTPU_UNARY_LOG, -1.0f, NAN },
		{ VTPU_UNARY_LOG, -INFINITY, NAN },
		{ VTPU_UNARY_LOG, INFINITY, INFINITY },
		{ VTPU_UNARY_LOG, NAN, NAN },
		{ VTPU_UNARY_SQRT, -1.0f, NAN },
		{ VTPU_UNARY_SQRT, -0.0f, -0.0f },
		{ VTPU_UNARY_SQRT, INFINITY, INFINITY },
		{ VTPU_UNARY_RSQRT, 0.0f, INFINITY },
		{ VTPU_UNARY_RSQRT, -0.0f, -INFINITY },
		{ VTPU_UNARY_RSQRT, INFINITY, 0.0f },
		{ VTPU_UNARY_RSQRT, -4.0f, NAN },
		{ VTPU_UNARY_RSQRT, 4.0f, 0.5f },
		{ VTPU_UNARY_RECIP, 0.0f, INFINITY },
		{ VTPU_UNARY_RECIP, -0.0f, -INFINITY },
		{ VTPU_UNARY_RECIP, -INFINITY, -0.0f },
		{ VTPU_UNARY_TANH, 0.0f, 0.0f },
		{ VTPU_UNARY_TANH, -0.0f, -0.0f },
		{ VTPU_UNARY_TANH, INFINITY, 1.0f },
		{ VTPU_UNARY_TANH, -INFINITY, -1.0f },
		{ VTPU_UNARY_TANH, 1e-30f, 1e-30f },
		{ VTPU_UNARY_TANH, NAN, NAN },
		{ VTPU_UNARY_SIGMOID, 0.0f, 0.5f },
		{ VTPU_UNARY_SIGMOID, INFINITY, 1.0f },
		{ VTPU_UNARY_SIGMOID, -INFINITY, 0.0f },
		{ VTPU_UNARY_SIGMOID, NAN, NAN },
		{ VTPU_UNARY_GELU, 0.0f, 0.0f },
		{ VTPU_UNARY_GELU, -0.0f, -0.0f },
		{ VTPU_UNARY_GELU, INFINITY, INFINITY },
		{ VTPU_UNARY_GELU, -INFINITY, -0.0f },
		{ VTPU_UNARY_GELU, 20.0f, 20.0f },
		{ VTPU_UNARY_GELU, NAN, NAN },
		{ VTPU_UNARY_RELU, -0.0f, 0.0f },
		{ VTPU_UNARY_RELU, -INFINITY, 0.0f },
		{ VTPU_UNARY_RELU, NAN, NAN },
	};
	struct rig r;
	struct vtpu_tile a, d;
	uint32_t i;

	rig_init(&r, 7);
	a = rig_tile(&r, VTPU_DT_F32, 1, ARRAY_SIZE(cases));
	d = rig_tile(&r, VTPU_DT_F32, 1, ARRAY_SIZE(cases));
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct vtpu_tile ai = vtpu_tile_f32(a.addr + 4 * i, 1, 1, 1);
		struct vtpu_tile di = vtpu_tile_f32(d.addr + 4 * i, 1, 1, 1);

		setf(&r, &a, 0, i, cases[i].x);
		vtpu_asm_unary(&r.as, cases[i].sub, di, ai);
	}
	ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		EXPECT_TRUE(same_float(getf(&r, &d, 0, i), cases[i].want, 0))
			TH_LOG("case %u: f%u(%a) = %a, want %a", i,
			       cases[i].sub, cases[i].x, getf(&r, &d, 0, i),
			       cases[i].want);
	}
	rig_fini(&r);
}

/*
 * Accuracy sweeps: many inputs through one big UNARY each, the worst ulp
 * error printed. Inputs are random f32 bit patterns in the range where
 * the function is not trivially 0, 1, x or a special value.
 */
static double sweep_unary(struct __test_metadata *_metadata, uint8_t sub,
			  double (*ref)(double), double lo, double hi,
			  int log_scale, double *worst_x)
{
	const uint32_t rows = 256, cols = 256;
	double worst = 0, err;
	struct vtpu_tile a, d;
	struct rig r;
	uint32_t i, j;
	int pass;

	rig_init(&r, 1000 + sub);
	a = rig_tile(&r, VTPU_DT_F32, rows, cols);
	d = rig_tile(&r, VTPU_DT_F32, rows, cols);
	for (pass = 0; pass < 4; pass++) {
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				float x = log_scale ?
					(float)exp(rng_uniform(log(lo), log(hi))) :
					rng_uniform(lo, hi);

				setf(&r, &a, i, j, x);
			}
		}
		vtpu_asm_unary(&r.as, sub, d, a);
		EXPECT_EQ(0, rig_run(&r));
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				float x = getf(&r, &a, i, j);

				err = ulp_error(getf(&r, &d, i, j), ref(x));
				if (err > worst) {
					worst = err;
					*worst_x = x;
				}
			}
		}
	}
	rig_fini(&r);
	return worst;
}

#define SWEEP_TEST(fn, sub, ref, lo, hi, log_scale, bound) \
TEST(accuracy_##fn) \
{ \
	double x = 0, e = sweep_unary(_metadata, sub, ref, lo, hi, log_scale, &x); \
	printf("# " #fn ": max error %.9f ulp (at %a) over 262144 inputs in [%g, %g]\n", \
	       e, x, (double)(lo), (double)(hi)); \
	ASSERT_LE(e, bound); \
}

SWEEP_TEST(exp, VTPU_UNARY_EXP, exp, -103.9, 88.7, 0, 1.0)
SWEEP_TEST(exp_small, VTPU_UNARY_EXP, exp, -1, 1, 0, 1.0)
SWEEP_TEST(log, VTPU_UNARY_LOG, log, 1e-44, 3e38, 1, 1.0)
SWEEP_TEST(log_near_1, VTPU_UNARY_LOG, log, 0.5, 2, 0, 1.0)
SWEEP_TEST(rsqrt, VTPU_UNARY_RSQRT, ref_rsqrt, 1e-44, 3e38, 1, 1.0)
SWEEP_TEST(tanh, VTPU_UNARY_TANH, tanh, -10, 10, 0, 1.5)
SWEEP_TEST(tanh_small, VTPU_UNARY_TANH, tanh, 1e-6, 0.1, 1, 1.0)
SWEEP_TEST(sigmoid, VTPU_UNARY_SIGMOID, ref_sigmoid, -103, 17, 0, 2.5)
SWEEP_TEST(gelu, VTPU_UNARY_GELU, ref_gelu, -14, 6, 0, 6.0)
SWEEP_TEST(gelu_small, VTPU_UNARY_GELU, ref_gelu, 1e-6, 1, 1, 2.0)

static double sweep_pow(struct __test_metadata *_metadata, int negative_base,
			double *wx, double *wy)
{
	const uint32_t rows = 128, cols = 256;
	struct vtpu_tile a, b, d;
	double worst = 0, err;
	struct rig r;
	uint32_t i, j;
	int pass;

	rig_init(&r, 77 + negative_base);
	a = rig_tile(&r, VTPU_DT_F32, rows, cols);
	b = rig_tile(&r, VTPU_DT_F32, rows, cols);
	d = rig_tile(&r, VTPU_DT_F32, rows, cols);
	for (pass = 0; pass < 4; pass++) {
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				float x = (float)exp(rng_uniform(-20, 20));
				float y = rng_uniform(-80 / fabs(log(x)),
						      80 / fabs(log(x)));

				if (negative_base) {
					x = -x;
					y = (float)(int)rng_uniform(-30, 30);
				}
				setf(&r, &a, i, j, x);
				setf(&r, &b, i, j, y);
			}
		}
		vtpu_asm_binary(&r.as, VTPU_BINARY_POW, d, a, b, 0);
		EXPECT_EQ(0, rig_run(&r));
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				double x = getf(&r, &a, i, j);
				double y = getf(&r, &b, i, j);

				err = ulp_error(getf(&r, &d, i, j), pow(x, y));
				if (err > worst) {
					worst = err;
					*wx = x;
					*wy = y;
				}
			}
		}
	}
	rig_fini(&r);
	return worst;
}

TEST(accuracy_pow)
{
	double x = 0, y = 0, e = sweep_pow(_metadata, 0, &x, &y);

	printf("# pow: max error %.9f ulp (at %a ^ %a) over 131072 inputs\n",
	       e, x, y);
	ASSERT_LE(e, 1.0);
}

TEST(accuracy_pow_negative_base)
{
	double x = 0, y = 0, e = sweep_pow(_metadata, 1, &x, &y);

	printf("# pow (x < 0, integer y): max error %.9f ulp (at %a ^ %a)\n",
	       e, x, y);
	ASSERT_LE(e, 1.0);
}

/* ---- BINARY, CMP, SELECT ---- */

static float ref_max(float x, float y)
{
	if (isnan(x) || isnan(y))
		return NAN;
	if (x == 0 && y == 0)
		return signbit(x) && signbit(y) ? -0.0f : 0.0f;
	return x > y ? x : y;
}

static float ref_min(float x, float y)
{
	if (isnan(x) || isnan(y))
		return NAN;
	if (x == 0 && y == 0)
		return signbit(x) || signbit(y) ? -0.0f : 0.0f;
	return x < y ? x : y;
}

/*
 * MADD: libm's fmaf(), rounded once, and the NaN the executor documents
 * (glibc's fmaf() on x86-64 gives the same): x's, else y's, else z's,
 * quieted; else, for an invalid product or sum, the default NaN.
 */
static float ref_madd(float x, float y, float z)
{
	float r;

	if (isnan(x))
		return bits_f32(f32_bits(x) | 0x00400000);
	if (isnan(y))
		return bits_f32(f32_bits(y) | 0x00400000);
	if (isnan(z))
		return bits_f32(f32_bits(z) | 0x00400000);
	r = fmaf(x, y, z);
	return isnan(r) ? bits_f32(0xffc00000) : r;
}

/*
 * Exact for + - * /: double holds the f32 result before one rounding.
 * @z is what d held before (MADD adds it), bit for bit with its NaNs.
 */
static int binary_ok(uint8_t sub, float x, float y, float z, float got,
		     double *err)
{
	*err = 0;
	switch (sub) {
	case VTPU_BINARY_MADD:
		return same_float(got, ref_madd(x, y, z), 1);
	case VTPU_BINARY_ADD:
		return same_float(got, (float)((double)x + y), 0);
	case VTPU_BINARY_SUB:
		return same_float(got, (float)((double)x - y), 0);
	case VTPU_BINARY_MUL:
		return same_float(got, (float)((double)x * y), 0);
	case VTPU_BINARY_DIV:
		return same_float(got, (float)((double)x / y), 0);
	case VTPU_BINARY_MAX:
		return same_float(got, ref_max(x, y), 0);
	case VTPU_BINARY_MIN:
		return same_float(got, ref_min(x, y), 0);
	}
	*err = ulp_error(got, pow(x, y));
	return *err <= 1.0;
}

static int cmp_ref(uint8_t sub, float x, float y)
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
	return x >= y;
}

enum { ELT_BINARY, ELT_CMP, ELT_SELECT };

/* Where the destination lives: its own tile, or exactly a or b. */
enum { OUT_OF_PLACE, IN_PLACE_A, IN_PLACE_B };

/*
 * One BINARY, CMP or SELECT instruction for every broadcast mode and
 * placement, on random shapes; returns the number of wrong elements.
 */
static int check_elementwise(struct __test_metadata *_metadata, int kind,
			     uint8_t sub, uint64_t seed)
{
	int iter, mode, place, bad = 0;

	for (iter = 0; iter < 6; iter++)
	for (mode = 0; mode < (int)ARRAY_SIZE(bcast_modes); mode++)
	for (place = OUT_OF_PLACE; place <= IN_PLACE_B; place++) {
		uint16_t bcast = bcast_modes[mode];
		uint32_t rows, cols, i, j, imm = 0;
		struct vtpu_tile a, b, d;
		float *x, *y, *c;
		struct rig r;
		double err;

		if (place == IN_PLACE_B && bcast != VTPU_F_BCAST_NONE)
			continue;
		rig_init(&r, seed * 1000 + iter * 100 + mode * 10 + place);
		shape(iter, 24, &rows, &cols);
		a = rig_tile(&r, VTPU_DT_F32, rows, cols);
		b = bcast_tile(&r, bcast, rows, cols);
		d = place == IN_PLACE_A ? a : place == IN_PLACE_B ? b :
		    rig_tile(&r, VTPU_DT_F32, rows, cols);
		fill_tile(&r, &a, -8, 8);
		if (bcast != VTPU_F_BCAST_IMM)
			fill_tile(&r, &b, -8, 8);
		else
			imm = f32_bits(rng_value(-8, 8));
		/* Equal operands now and then, for EQ, LE, GE and MAX. */
		for (i = 0; bcast == VTPU_F_BCAST_NONE && i < rows; i++)
			for (j = 0; j < cols; j++)
				if (!rng_below(5))
					setf(&r, &a, i, j, getf(&r, &b, i, j));
		/*
		 * MADD reads d: numbers, some of them specials, and now and
		 * then whatever bits VMEM held (NaNs of any payload too).
		 */
		for (i = 0; sub == VTPU_BINARY_MADD && place == OUT_OF_PLACE &&
			    i < rows; i++)
			for (j = 0; j < cols; j++)
				if (rng_below(8))
					setf(&r, &d, i, j, rng_value(-64, 64));
		if (kind == ELT_SELECT && place == OUT_OF_PLACE)
			for (i = 0; i < rows; i++)
				for (j = 0; j < cols; j++)
					setf(&r, &d, i, j, (float[]){ 0.0f,
					     -0.0f, 1.0f, NAN, -3.0f }
					     [rng_below(5)]);
		x = malloc(sizeof(*x) * rows * cols);
		y = malloc(sizeof(*y) * rows * cols);
		c = malloc(sizeof(*c) * rows * cols);
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				x[i * cols + j] = getf(&r, &a, i, j);
				y[i * cols + j] = bcast_b(&r, &b, bcast, imm,
							  i, j);
				c[i * cols + j] = getf(&r, &d, i, j);
			}
		}
		if (kind == ELT_BINARY)
			vtpu_asm_op(&r.as, VTPU_OP_BINARY, sub, bcast, imm, d,
				    a, b);
		else if (kind == ELT_CMP)
			vtpu_asm_op(&r.as, VTPU_OP_CMP, sub, bcast, imm, d, a,
				    b);
		else
			vtpu_asm_op(&r.as, VTPU_OP_SELECT, 0, bcast, imm, d,
				    a, b);
		ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
		ASSERT_EQ(0, stray_writes(&r, &d, 1));
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				size_t k = i * cols + j;
				float got = getf(&r, &d, i, j), want = 0;
				int ok;

				if (kind == ELT_BINARY) {
					ok = binary_ok(sub, x[k], y[k], c[k],
						       got, &err);
				} else if (kind == ELT_CMP) {
					want = cmp_ref(sub, x[k], y[k]);
					ok = same_float(got, want, 1);
				} else {
					want = c[k] != 0 ? x[k] : y[k];
					ok = same_float(got, want, 1);
				}
				if (ok)
					continue;
				if (!bad++)
					TH_LOG("kind %d f%u bcast %#x place %d [%u][%u]: f(%a, %a) = %a (d was %a)",
					       kind, sub, bcast, place, i, j,
					       x[k], y[k], got, c[k]);
			}
		}
		free(c);
		free(y);
		free(x);
		rig_fini(&r);
	}
	return bad;
}

TEST(binary_add) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_BINARY, VTPU_BINARY_ADD, 1)); }
TEST(binary_sub) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_BINARY, VTPU_BINARY_SUB, 2)); }
TEST(binary_mul) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_BINARY, VTPU_BINARY_MUL, 3)); }
TEST(binary_div) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_BINARY, VTPU_BINARY_DIV, 4)); }
TEST(binary_max) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_BINARY, VTPU_BINARY_MAX, 5)); }
TEST(binary_min) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_BINARY, VTPU_BINARY_MIN, 6)); }
TEST(binary_pow) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_BINARY, VTPU_BINARY_POW, 7)); }
TEST(binary_madd) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_BINARY, VTPU_BINARY_MADD, 8)); }
TEST(cmp_eq) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_CMP, VTPU_CMP_EQ, 11)); }
TEST(cmp_ne) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_CMP, VTPU_CMP_NE, 12)); }
TEST(cmp_lt) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_CMP, VTPU_CMP_LT, 13)); }
TEST(cmp_le) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_CMP, VTPU_CMP_LE, 14)); }
TEST(cmp_gt) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_CMP, VTPU_CMP_GT, 15)); }
TEST(cmp_ge) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_CMP, VTPU_CMP_GE, 16)); }
TEST(select_d_chooses_a_or_b) { ASSERT_EQ(0, check_elementwise(_metadata, ELT_SELECT, 0, 21)); }

TEST(binary_max_min_signed_zero_and_nan)
{
	static const float x[] = { 0.0f, -0.0f, -0.0f, NAN, 1.0f, -INFINITY };
	static const float y[] = { -0.0f, 0.0f, -0.0f, 1.0f, NAN, -1e30f };
	static const uint32_t max_bits[] = {
		0x00000000, 0x00000000, 0x80000000, 0, 0, 0xf149f2ca,
	};
	static const uint32_t min_bits[] = {
		0x80000000, 0x80000000, 0x80000000, 0, 0, 0xff800000,
	};
	struct vtpu_tile a, b, dmax, dmin;
	struct rig r;
	uint32_t j, n = ARRAY_SIZE(x);

	rig_init(&r, 5);
	a = rig_tile(&r, VTPU_DT_F32, 1, n);
	b = rig_tile(&r, VTPU_DT_F32, 1, n);
	dmax = rig_tile(&r, VTPU_DT_F32, 1, n);
	dmin = rig_tile(&r, VTPU_DT_F32, 1, n);
	for (j = 0; j < n; j++) {
		setf(&r, &a, 0, j, x[j]);
		setf(&r, &b, 0, j, y[j]);
	}
	vtpu_asm_binary(&r.as, VTPU_BINARY_MAX, dmax, a, b, 0);
	vtpu_asm_binary(&r.as, VTPU_BINARY_MIN, dmin, a, b, 0);
	ASSERT_EQ(0, rig_run(&r));
	for (j = 0; j < n; j++) {
		if (isnan(x[j]) || isnan(y[j])) {
			EXPECT_TRUE(isnan(getf(&r, &dmax, 0, j)));
			EXPECT_TRUE(isnan(getf(&r, &dmin, 0, j)));
			continue;
		}
		EXPECT_EQ(max_bits[j], f32_bits(getf(&r, &dmax, 0, j)));
		EXPECT_EQ(min_bits[j], f32_bits(getf(&r, &dmin, 0, j)));
	}
	rig_fini(&r);
}

TEST(binary_pow_special_values)
{
	static const float xs[] = {
		0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, INFINITY,
		-INFINITY, NAN, FLT_MAX, 1e-40f, -3.0f, 10.0f,
	};
	static const float ys[] = {
		0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 3.0f, -3.0f, 0.5f, -0.5f,
		INFINITY, -INFINITY, NAN, 16777216.0f, -16777216.0f, 1e10f,
		3.5f, 127.0f, -149.0f,
	};
	uint32_t nx = ARRAY_SIZE(xs), ny = ARRAY_SIZE(ys), i, j;
	struct vtpu_tile a, b, d;
	struct rig r;

	rig_init(&r, 9);
	a = rig_tile(&r, VTPU_DT_F32, nx, ny);
	b = rig_tile(&r, VTPU_DT_F32, nx, ny);
	d = rig_tile(&r, VTPU_DT_F32, nx, ny);
	for (i = 0; i < nx; i++) {
		for (j = 0; j < ny; j++) {
			setf(&r, &a, i, j, xs[i]);
			setf(&r, &b, i, j, ys[j]);
		}
	}
	vtpu_asm_binary(&r.as, VTPU_BINARY_POW, d, a, b, 0);
	ASSERT_EQ(0, rig_run(&r));
	for (i = 0; i < nx; i++) {
		for (j = 0; j < ny; j++) {
			float got = getf(&r, &d, i, j);
			double want = pow(xs[i], ys[j]);

			EXPECT_LE(ulp_error(got, want), 1.0)
				TH_LOG("pow(%a, %a) = %a, want %a", xs[i],
				       ys[j], got, want);
			/* Signs of zero and infinity are part of C99 pow. */
			if (!isnan(want) && (want == 0 || isinf(want))) {
				EXPECT_EQ(f32_bits((float)want), f32_bits(got))
					TH_LOG("pow(%a, %a) = %a, want %a",
					       xs[i], ys[j], got, want);
			}
		}
	}
	rig_fini(&r);
}

/* CMP yields exactly 1.0f and 0.0f; NaN compares false except with NE. */
TEST(cmp_nan_and_result_bits)
{
	struct vtpu_tile a, d[VTPU_CMP_NR];
	struct rig r;
	int f;

	rig_init(&r, 3);
	a = rig_tile(&r, VTPU_DT_F32, 1, 1);
	setf(&r, &a, 0, 0, NAN);
	for (f = 0; f < VTPU_CMP_NR; f++) {
		d[f] = rig_tile(&r, VTPU_DT_F32, 1, 1);
		vtpu_asm_cmp_imm(&r.as, f, d[f], a, NAN);
	}
	ASSERT_EQ(0, rig_run(&r));
	for (f = 0; f < VTPU_CMP_NR; f++) {
		EXPECT_EQ(f == VTPU_CMP_NE ? 0x3f800000u : 0u,
			  f32_bits(getf(&r, &d[f], 0, 0)));
	}
	rig_fini(&r);
}

/* ---- REDUCE ---- */

static float ref_fold(uint8_t sub, float acc, float x)
{
	switch (sub) {
	case VTPU_REDUCE_SUM:
		return acc + x;
	case VTPU_REDUCE_MAX:
		return ref_max(acc, x);
	}
	return ref_min(acc, x);
}

static int check_reduce(struct __test_metadata *_metadata, uint8_t sub,
			uint64_t seed)
{
	int iter, axis, acc, bad = 0;

	for (iter = 0; iter < 10; iter++)
	for (axis = 0; axis < 2; axis++)
	for (acc = 0; acc < 2; acc++) {
		bool cols_axis = axis == 0;
		uint32_t rows, cols, i, j, n, len;
		struct vtpu_tile a, d;
		struct rig r;
		uint16_t flags;

		rig_init(&r, seed * 1000 + iter * 10 + axis * 2 + acc);
		shape(iter, 50, &rows, &cols);
		a = rig_tile(&r, VTPU_DT_F32, rows, cols);
		d = cols_axis ? rig_tile(&r, VTPU_DT_F32, rows, 1) :
				rig_tile(&r, VTPU_DT_F32, 1, cols);
		fill_tile(&r, &a, -100, 100);
		/*
		 * Few specials: most reductions should stay finite. Long
		 * rows get none, or every sum would be a NaN.
		 */
		for (i = 0; i < rows; i++)
			for (j = 0; j < cols; j++)
				if ((isnan(getf(&r, &a, i, j)) &&
				     rng_below(4)) ||
				    (!isfinite(getf(&r, &a, i, j)) &&
				     rows * cols > 1000))
					setf(&r, &a, i, j, 0.0f);
		fill_tile(&r, &d, -100, 100);
		flags = (cols_axis ? VTPU_F_AXIS_COLS : VTPU_F_AXIS_ROWS) |
			(acc ? VTPU_F_ACC : 0);
		n = cols_axis ? rows : cols;
		len = cols_axis ? cols : rows;
		{
			float *want = malloc(n * sizeof(*want));
			float *bound = malloc(n * sizeof(*bound));
			double *exact = malloc(n * sizeof(*exact));

			ASSERT_TRUE(want && bound && exact);
			for (i = 0; i < n; i++) {
				float s = acc ? (cols_axis ? getf(&r, &d, i, 0) :
						 getf(&r, &d, 0, i)) : 0;
				double e = 0, m = 0;

				for (j = 0; j < len; j++) {
					float x = cols_axis ? getf(&r, &a, i, j) :
							      getf(&r, &a, j, i);

					s = j == 0 && !acc ? x :
					    ref_fold(sub, s, x);
					e += x;
					m += fabs(x);
				}
				if (acc) {
					float d0 = cols_axis ? getf(&r, &d, i, 0) :
							       getf(&r, &d, 0, i);
					e += d0;
					m += fabs(d0);
				}
				want[i] = s;
				exact[i] = e;
				bound[i] = (float)((len + 1) * 0x1p-24 * m);
			}
			vtpu_asm_reduce(&r.as, sub, d, a, flags);
			ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
			ASSERT_EQ(0, stray_writes(&r, &d, 1));
			for (i = 0; i < n; i++) {
				float got = cols_axis ? getf(&r, &d, i, 0) :
							getf(&r, &d, 0, i);
				int ok = same_float(got, want[i], 0);

				if (ok && sub == VTPU_REDUCE_SUM &&
				    isfinite(exact[i]) && isfinite(got))
					ok = fabs(got - exact[i]) <= bound[i];
				if (ok)
					continue;
				if (!bad++)
					TH_LOG("f%u axis %s acc %d %ux%u [%u]: %a, want %a (exact %a)",
					       sub, cols_axis ? "cols" : "rows",
					       acc, rows, cols, i, got, want[i],
					       exact[i]);
			}
			free(exact);
			free(bound);
			free(want);
		}
		rig_fini(&r);
	}
	return bad;
}

TEST(reduce_sum) { ASSERT_EQ(0, check_reduce(_metadata, VTPU_REDUCE_SUM, 1)); }
TEST(reduce_max) { ASSERT_EQ(0, check_reduce(_metadata, VTPU_REDUCE_MAX, 2)); }
TEST(reduce_min) { ASSERT_EQ(0, check_reduce(_metadata, VTPU_REDUCE_MIN, 3)); }

/* ---- MATMUL ---- */

/* Stores f32 @x into an f32 or bf16 tile; bf16 gets x truncated. */
static void setv(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		 uint32_t j, float x)
{
	if (t->dtype == VTPU_DT_BF16)
		seth(r, t, i, j, f32_bits(x) >> 16);
	else
		setf(r, t, i, j, x);
}

static int check_matmul(struct __test_metadata *_metadata, uint32_t m,
			uint32_t n, uint32_t k, uint8_t adt, uint8_t bdt,
			uint16_t flags, uint64_t seed)
{
	bool ta = flags & VTPU_F_TRANS_A, tb = flags & VTPU_F_TRANS_B;
	bool acc = flags & VTPU_F_ACC;
	struct vtpu_tile a, b, d;
	uint32_t i, j, p;
	float *init;
	struct rig r;
	int bad = 0;

	rig_init(&r, seed);
	a = ta ? rig_tile(&r, adt, k, m) : rig_tile(&r, adt, m, k);
	b = tb ? rig_tile(&r, bdt, n, k) : rig_tile(&r, bdt, k, n);
	d = rig_tile(&r, VTPU_DT_F32, m, n);
	for (i = 0; i < a.rows; i++)
		for (j = 0; j < a.cols; j++)
			setv(&r, &a, i, j, rng_uniform(-2, 2));
	for (i = 0; i < b.rows; i++)
		for (j = 0; j < b.cols; j++)
			setv(&r, &b, i, j, rng_uniform(-2, 2));
	if (acc)
		fill_tile(&r, &d, -4, 4);
	init = malloc(sizeof(*init) * m * n);
	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++)
			init[i * n + j] = acc ? getf(&r, &d, i, j) : 0.0f;

	vtpu_asm_matmul(&r.as, d, a, b, flags);
	ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
	ASSERT_EQ(0, stray_writes(&r, &d, 1));
	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			float s = init[i * n + j], got = getf(&r, &d, i, j);
			double e = s, mag = fabs(s);

			for (p = 0; p < k; p++) {
				float x = ta ? getv(&r, &a, p, i) :
					       getv(&r, &a, i, p);
				float y = tb ? getv(&r, &b, j, p) :
					       getv(&r, &b, p, j);
				s = fmaf(x, y, s);
				e += (double)x * y;
				mag += fabs((double)x * y);
			}
			/* A NaN result is the quiet NaN, whatever its operands. */
			if ((isnan(s) ? f32_bits(got) == 0x7fc00000 :
			     same_float(got, s, 1)) && (!isfinite(e) ||
			    fabs(got - e) <= (k + 1) * 0x1p-24 * mag))
				continue;
			if (!bad++)
				TH_LOG("%ux%ux%u dt %u,%u flags %#x [%u][%u]: %a, want %a (exact %a)",
				       m, n, k, adt, bdt, flags, i, j, got, s,
				       e);
		}
	}
	free(init);
	rig_fini(&r);
	return bad;
}

/* Every dtype, transpose and ACC combination on small and odd shapes. */
TEST(matmul_all_variants)
{
	static const uint32_t shapes[][3] = {
		{ 1, 1, 1 }, { 1, 17, 5 }, { 13, 1, 7 }, { 5, 9, 1 },
		{ 6, 8, 32 }, { 7, 9, 33 }, { 12, 16, 3 }, { 19, 23, 41 },
	};
	static const uint8_t dts[] = { VTPU_DT_F32, VTPU_DT_BF16 };
	int s, da, db, fl, bad = 0;

	for (s = 0; s < (int)ARRAY_SIZE(shapes); s++)
	for (da = 0; da < 2; da++)
	for (db = 0; db < 2; db++)
	for (fl = 0; fl < 8; fl++) {
		uint16_t flags = (fl & 1 ? VTPU_F_ACC : 0) |
				 (fl & 2 ? VTPU_F_TRANS_A : 0) |
				 (fl & 4 ? VTPU_F_TRANS_B : 0);

		bad += check_matmul(_metadata, shapes[s][0], shapes[s][1],
				    shapes[s][2], dts[da], dts[db], flags,
				    s * 100 + da * 50 + db * 20 + fl);
	}
	ASSERT_EQ(0, bad);
}

/* Shapes beyond every blocking constant (k > 32 steps, m > 144 rows). */
TEST(matmul_large_blocks)
{
	ASSERT_EQ(0, check_matmul(_metadata, 150, 70, 100, VTPU_DT_F32,
				  VTPU_DT_F32, 0, 1));
	ASSERT_EQ(0, check_matmul(_metadata, 161, 64, 97, VTPU_DT_F32,
				  VTPU_DT_F32, VTPU_F_ACC, 2));
	ASSERT_EQ(0, check_matmul(_metadata, 145, 31, 65, VTPU_DT_BF16,
				  VTPU_DT_BF16, VTPU_F_TRANS_A | VTPU_F_TRANS_B,
				  3));
	ASSERT_EQ(0, check_matmul(_metadata, 40, 129, 200, VTPU_DT_F32,
				  VTPU_DT_BF16, VTPU_F_TRANS_B | VTPU_F_ACC, 4));
}

/*
 * Few rows of d: b's panels are read in place, and a d of one row goes
 * several panels at once, then panel by panel, then an edge panel. Wide
 * enough for every vector width's pieces, k past a panel's depth, each
 * with and without ACC, a transposed a or b, and bf16 operands (packed).
 */
TEST(matmul_few_rows_read_b_in_place)
{
	static const uint32_t shapes[][3] = {
		{ 1, 512, 128 }, { 1, 611, 300 }, { 1, 97, 70 }, { 1, 160, 1 },
		{ 2, 300, 129 }, { 5, 257, 64 }, { 12, 200, 40 },
	};
	int s, fl, bad = 0;

	for (s = 0; s < (int)ARRAY_SIZE(shapes); s++)
	for (fl = 0; fl < 16; fl++) {
		uint16_t flags = (fl & 1 ? VTPU_F_ACC : 0) |
				 (fl & 2 ? VTPU_F_TRANS_A : 0) |
				 (fl & 4 ? VTPU_F_TRANS_B : 0);
		uint8_t adt = fl & 8 ? VTPU_DT_BF16 : VTPU_DT_F32;
		uint8_t bdt = fl == 9 ? VTPU_DT_BF16 : VTPU_DT_F32;

		bad += check_matmul(_metadata, shapes[s][0], shapes[s][1],
				    shapes[s][2], adt, bdt, flags,
				    700 + s * 16 + fl);
	}
	ASSERT_EQ(0, bad);
}

TEST(matmul_random_shapes)
{
	int iter, bad = 0;

	rng_seed(4242);
	for (iter = 0; iter < 40; iter++) {
		uint32_t m = 1 + rng_below(30), n = 1 + rng_below(30);
		uint32_t k = 1 + rng_below(70);
		uint32_t bits = rng_below(8);
		uint8_t adt = rng_below(2) ? VTPU_DT_F32 : VTPU_DT_BF16;
		uint8_t bdt = rng_below(2) ? VTPU_DT_F32 : VTPU_DT_BF16;
		uint16_t flags = (bits & 1 ? VTPU_F_ACC : 0) |
				 (bits & 2 ? VTPU_F_TRANS_A : 0) |
				 (bits & 4 ? VTPU_F_TRANS_B : 0);

		bad += check_matmul(_metadata, m, n, k, adt, bdt, flags,
				    9000 + iter);
		rng_seed(4242 + iter + 1);
	}
	ASSERT_EQ(0, bad);
}

/* An f32 of any class and scale: subnormal, huge, special, zero... */
static float hard_float(void)
{
	uint32_t sign = (uint32_t)rng() & 0x80000000u;

	switch (rng_below(8)) {
	case 0:		/* subnormal */
		return bits_f32(sign | (uint32_t)rng_below(0x800000));
	case 1:		/* near the top of the range */
		return bits_f32(sign | (0x7e000000u + (uint32_t)rng_below(0x1000000)));
	case 2:		/* tiny normal */
		return bits_f32(sign | (0x00800000u + (uint32_t)rng_below(0x4000000)));
	case 3:		/* a special */
		return bits_f32(sign | (rng_below(2) ? 0x7f800000u : 0x7fc00000u));
	case 4:		/* zero */
		return bits_f32(sign);
	default:	/* any finite normal near 1 */
		return bits_f32(sign | (0x3c000000u + (uint32_t)rng_below(0x8000000)));
	}
}

/*
 * Runs d += a b for a column a and a row b and counts the elements of d
 * that differ from @want (NaN: the quiet NaN), logging the first.
 */
static int run_outer_product(struct __test_metadata *_metadata,
			     struct rig *r, struct vtpu_tile a,
			     struct vtpu_tile b, struct vtpu_tile d,
			     const float *want)
{
	uint32_t i, j;
	int bad = 0;

	vtpu_asm_matmul(&r->as, d, a, b, VTPU_F_ACC);
	if (rig_run(r)) {
		TH_LOG("rejected: %s", r->why);
		return -1;
	}
	for (i = 0; i < d.rows; i++) {
		for (j = 0; j < d.cols; j++) {
			float w = want[i * d.cols + j], got = getf(r, &d, i, j);
			uint32_t wb = isnan(w) ? 0x7fc00000u : f32_bits(w);

			if (f32_bits(got) == wb)
				continue;
			if (!bad++)
				TH_LOG("[%u][%u]: %a * %a + ... = %a, want %a",
				       i, j, getf(r, &a, i, 0),
				       getf(r, &b, 0, j), got, w);
		}
	}
	return bad;
}

/*
 * A rig for d (m x n) += a (m x 1) . b (1 x n), and room for the m x n
 * results wanted.
 */
static float *outer_rig(struct rig *r, uint64_t seed, uint32_t m, uint32_t n,
			struct vtpu_tile *a, struct vtpu_tile *b,
			struct vtpu_tile *d)
{
	rig_init(r, seed);
	*a = rig_tile(r, VTPU_DT_F32, m, 1);
	*b = rig_tile(r, VTPU_DT_F32, 1, n);
	*d = rig_tile(r, VTPU_DT_F32, m, n);
	return malloc(sizeof(float) * m * n);
}

/*
 * One k step with ACC is one fused multiply-add per element: the outer
 * product d[i][j] = d[i][j] + a[i] b[j] must be exactly libm's fmaf(),
 * rounded once, on every build (the SSE2 build emulates it), for
 * subnormals, overflow, cancellation (d = -a b rounded, leaving the
 * product's rounding error) and specials.
 */
TEST(matmul_single_step_is_one_fused_multiply_add)
{
	const uint32_t m = 96, n = 96;
	struct vtpu_tile a, b, d;
	uint32_t i, j;
	float *want;
	struct rig r;

	want = outer_rig(&r, 77, m, n, &a, &b, &d);
	ASSERT_NE(NULL, want);
	for (i = 0; i < m; i++)
		setf(&r, &a, i, 0, hard_float());
	for (j = 0; j < n; j++)
		setf(&r, &b, 0, j, hard_float());
	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			float x = getf(&r, &a, i, 0), y = getf(&r, &b, 0, j);
			volatile float prod = x * y;
			/* A third of them cancel: d is -x y rounded. */
			float c = rng_below(3) ? hard_float() : -prod;

			setf(&r, &d, i, j, c);
			want[i * n + j] = fmaf(x, y, c);
		}
	}
	EXPECT_EQ(0, run_outer_product(_metadata, &r, a, b, d, want));
	free(want);
	rig_fini(&r);
}

/*
 * Where rounding twice goes wrong: c has an odd last bit and a b is just
 * under half of c's ulp, so the exact sum is just under the midpoint
 * between c and its neighbour. Rounded once, that is c; the sum rounded
 * to double first lands on the midpoint, which then rounds to the even
 * neighbour. Every column has its own binade, every row its own c.
 */
TEST(matmul_fused_multiply_add_rounds_once)
{
	const uint32_t m = 64, n = 44;
	struct vtpu_tile a, b, d;
	uint32_t i, j;
	float *want;
	struct rig r;

	want = outer_rig(&r, 78, m, n, &a, &b, &d);
	ASSERT_NE(NULL, want);
	/* a b = 2^e (1 - 2^-46): 1 + 2^-23 times 2^e (1 - 2^-23) */
	for (i = 0; i < m; i++)
		setf(&r, &a, i, 0, 1 + 0x1p-23f);
	for (j = 0; j < n; j++)
		setf(&r, &b, 0, j, ldexpf(1 - 0x1p-23f, (int)j * 5 - 120));
	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			/* c in [2^(e+24), 2^(e+25)): its half ulp is 2^e */
			uint32_t odd = (uint32_t)rng_below(1u << 22) * 2 + 1;
			float c = ldexpf(1 + odd * 0x1p-23f, (int)j * 5 - 96);
			float x = getf(&r, &a, i, 0), y = getf(&r, &b, 0, j);

			if (i & 1)
				c = -c;
			setf(&r, &d, i, j, c);
			want[i * n + j] = fmaf(x, y, c);
			/* The case is what it says: once rounded, c itself. */
			if (!(i & 1))
				ASSERT_EQ(f32_bits(c), f32_bits(want[i * n + j]));
		}
	}
	EXPECT_EQ(0, run_outer_product(_metadata, &r, a, b, d, want));
	free(want);
	rig_fini(&r);
}

/*
 * Runs MADD d = a b + d with broadcast @bcast (b's value @imm for
 * BCAST_IMM) and counts the elements of d that differ from ref_madd() of
 * the operands it held before, bit for bit, logging the first.
 */
static int run_madd(struct __test_metadata *_metadata, struct rig *r,
		    uint16_t bcast, uint32_t imm, struct vtpu_tile a,
		    struct vtpu_tile b, struct vtpu_tile d)
{
	uint32_t i, j, n = d.rows * d.cols;
	float *x = malloc(sizeof(*x) * n), *y = malloc(sizeof(*y) * n);
	float *z = malloc(sizeof(*z) * n);
	int bad = 0;

	if (!x || !y || !z)
		abort();
	for (i = 0; i < d.rows; i++) {
		for (j = 0; j < d.cols; j++) {
			x[i * d.cols + j] = getf(r, &a, i, j);
			y[i * d.cols + j] = bcast_b(r, &b, bcast, imm, i, j);
			z[i * d.cols + j] = getf(r, &d, i, j);
		}
	}
	vtpu_asm_op(&r->as, VTPU_OP_BINARY, VTPU_BINARY_MADD, bcast, imm, d, a,
		    b);
	if (rig_run(r)) {
		TH_LOG("rejected: %s", r->why);
		bad = -1;
	}
	for (i = 0; !bad && i < d.rows; i++) {
		for (j = 0; j < d.cols; j++) {
			uint32_t k = i * d.cols + j;
			float got = getf(r, &d, i, j);
			float want = ref_madd(x[k], y[k], z[k]);

			if (f32_bits(got) == f32_bits(want))
				continue;
			if (!bad++)
				TH_LOG("bcast %#x [%u][%u]: fma(%a, %a, %a) = %a, want %a",
				       bcast, i, j, x[k], y[k], z[k], got,
				       want);
		}
	}
	free(z);
	free(y);
	free(x);
	return bad;
}

/*
 * MADD is one fused multiply-add per element, libm's fmaf() rounded
 * once, on every build (the SSE2 build emulates it), with every
 * broadcast: subnormals, overflow, cancellation (d = -a b rounded,
 * leaving the product's rounding error), infinities and NaNs.
 */
TEST(binary_madd_is_one_fused_multiply_add)
{
	const uint32_t rows = 37, cols = 53;
	size_t mode;

	for (mode = 0; mode < ARRAY_SIZE(bcast_modes); mode++) {
		uint16_t bcast = bcast_modes[mode];
		uint32_t i, j, imm = 0;
		struct vtpu_tile a, b, d;
		struct rig r;

		rig_init(&r, 81 + mode);
		a = rig_tile(&r, VTPU_DT_F32, rows, cols);
		b = bcast_tile(&r, bcast, rows, cols);
		d = rig_tile(&r, VTPU_DT_F32, rows, cols);
		for (i = 0; i < b.rows; i++)
			for (j = 0; j < b.cols; j++)
				setf(&r, &b, i, j, hard_float());
		if (bcast == VTPU_F_BCAST_IMM)
			imm = f32_bits(1 + 0x1p-20f);
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				float x = hard_float();
				float y = bcast_b(&r, &b, bcast, imm, i, j);
				volatile float prod = x * y;

				setf(&r, &a, i, j, x);
				/* A third of them cancel: d is -x y rounded. */
				setf(&r, &d, i, j,
				     rng_below(3) ? hard_float() : -prod);
			}
		}
		EXPECT_EQ(0, run_madd(_metadata, &r, bcast, imm, a, b, d));
		rig_fini(&r);
	}
}

/*
 * Where rounding twice goes wrong (see matmul_fused_multiply_add_rounds_
 * once): d has an odd last bit and a b is just under half its ulp, so a
 * b + d rounded once is d, and the sum rounded to double first is the
 * midpoint, which rounds to the even neighbour. Row 0 takes normal d
 * across the exponent range; row 1 subnormal d (the emulation's sum is
 * then a double far from f32's precision, and still rounds once), a b =
 * 2^-150 (1 - 2^-46).
 */
TEST(binary_madd_rounds_once)
{
	const uint32_t cols = 44;
	struct vtpu_tile a, b, d;
	volatile double p;
	uint32_t j;
	struct rig r;

	rig_init(&r, 83);
	a = rig_tile(&r, VTPU_DT_F32, 2, cols);
	b = rig_tile(&r, VTPU_DT_F32, 2, 1);
	d = rig_tile(&r, VTPU_DT_F32, 2, cols);
	setf(&r, &b, 0, 0, 1 + 0x1p-23f);
	setf(&r, &b, 1, 0, ldexpf(1 - 0x1p-23f, -75));
	for (j = 0; j < cols; j++) {
		/* d in [2^(e+24), 2^(e+25)): its half ulp is 2^e */
		uint32_t odd = (uint32_t)rng_below(1u << 22) * 2 + 1;
		float c = ldexpf(1 + odd * 0x1p-23f, (int)j * 5 - 96);
		/* an odd multiple of 2^-149 from 2^-137 up: subnormal */
		float s = ldexpf((float)(odd >> 10 | 1u << 12 | 1), -149);

		setf(&r, &a, 0, j, ldexpf(1 - 0x1p-23f, (int)j * 5 - 120));
		setf(&r, &d, 0, j, j & 1 ? -c : c);
		setf(&r, &a, 1, j, ldexpf(1 + 0x1p-23f, -75));
		setf(&r, &d, 1, j, j & 1 ? -s : s);
		/* The cases are what they say: once rounded, d itself. */
		ASSERT_EQ(f32_bits(c), f32_bits(fmaf(getf(&r, &a, 0, j),
						     1 + 0x1p-23f, c)));
		ASSERT_EQ(f32_bits(s),
			  f32_bits(fmaf(getf(&r, &a, 1, j),
					ldexpf(1 - 0x1p-23f, -75), s)));
		/* and the sum rounded to double first is not */
		p = (double)getf(&r, &a, 1, j) * ldexpf(1 - 0x1p-23f, -75);
		ASSERT_NE(f32_bits(s), f32_bits((float)(p + s)));
	}
	EXPECT_EQ(0, run_madd(_metadata, &r, VTPU_F_BCAST_COL, 0, a, b, d));
	rig_fini(&r);
}

/* MUL: the product rounded once, x's NaN, else y's, else the default. */
static float ref_mul(float x, float y)
{
	float r;

	if (isnan(x))
		return bits_f32(f32_bits(x) | 0x00400000);
	if (isnan(y))
		return bits_f32(f32_bits(y) | 0x00400000);
	r = (float)((double)x * y);
	return isnan(r) ? bits_f32(0xffc00000) : r;
}

/*
 * A depthwise convolution's taps (compiler/dwconv.c): @mul ? MUL : MADD
 * into d, then MADDs, tap t's a the window of one plane at column
 * (t / 3) * pitch + t % 3, its b column t of a weight tile (BCAST_COL).
 * Tap @self (if below @taps) reads d itself instead, which makes the
 * instructions run one by one. Against the instructions' meaning, one
 * after the other, bit for bit: rows below 20 of numbers only, the
 * others with specials, NaNs among them.
 */
static int check_taps(struct __test_metadata *_metadata, uint64_t seed,
		      uint32_t taps, bool mul, uint32_t self)
{
	const uint32_t rows = 37, cols = 301, pitch = 40;
	uint32_t span = (taps - 1) / 3 * pitch + 2, i, j, t;
	struct vtpu_tile plane, w, d, a, b;
	float *want;
	struct rig r;
	int bad = 0;

	rig_init(&r, seed);
	plane = rig_tile(&r, VTPU_DT_F32, rows, cols + span);
	w = rig_tile(&r, VTPU_DT_F32, rows, taps);
	d = rig_tile(&r, VTPU_DT_F32, rows, cols);
	for (i = 0; i < rows; i++) {
		for (j = 0; j < cols + span; j++)
			setf(&r, &plane, i, j, i < 20 ? (float)rng_uniform(-3, 3) :
			     hard_float());
		for (t = 0; t < taps; t++)
			setf(&r, &w, i, t, i < 20 ? (float)rng_uniform(-1, 1) :
			     hard_float());
		for (j = 0; j < cols; j++)
			setf(&r, &d, i, j, i < 20 ? (float)rng_uniform(-9, 9) :
			     hard_float());
	}
	want = malloc(sizeof(*want) * rows * cols);
	if (!want)
		abort();
	for (i = 0; i < rows; i++) {
		for (j = 0; j < cols; j++) {
			float acc = getf(&r, &d, i, j), x, y;

			for (t = 0; t < taps; t++) {
				x = t == self ? acc :
				    getf(&r, &plane, i, j + t / 3 * pitch + t % 3);
				y = getf(&r, &w, i, t);
				acc = !t && mul ? ref_mul(x, y) :
				      ref_madd(x, y, acc);
			}
			want[i * cols + j] = acc;
		}
	}
	for (t = 0; t < taps; t++) {
		a = plane;
		a.addr += (t / 3 * pitch + t % 3) * 4;
		a.cols = cols;
		b = w;
		b.addr += t * 4;
		b.cols = 1;
		vtpu_asm_op(&r.as, VTPU_OP_BINARY, !t && mul ? VTPU_BINARY_MUL :
			    VTPU_BINARY_MADD, VTPU_F_BCAST_COL, 0, d,
			    t == self ? d : a, b);
	}
	if (rig_run(&r)) {
		TH_LOG("rejected: %s", r.why);
		bad = -1;
	}
	for (i = 0; !bad && i < rows; i++) {
		for (j = 0; j < cols; j++) {
			float got = getf(&r, &d, i, j);

			if (f32_bits(got) == f32_bits(want[i * cols + j]))
				continue;
			if (!bad++)
				TH_LOG("%u taps, mul %d, self %u: [%u][%u] = %a, want %a",
				       taps, mul, self, i, j, got,
				       want[i * cols + j]);
		}
	}
	if (!bad && stray_writes(&r, &d, 1))
		bad = -1;
	free(want);
	rig_fini(&r);
	return bad;
}

/*
 * Runs of taps, which the executor does in one pass over d: the same
 * bits as the instructions one by one, NaNs included, from a MUL or a
 * MADD, as long as the longest run (32) and beyond it; and a run broken
 * by a tap that reads d.
 */
TEST(binary_taps_run_as_one_by_one)
{
	EXPECT_EQ(0, check_taps(_metadata, 91, 9, true, ~0u));
	EXPECT_EQ(0, check_taps(_metadata, 92, 9, false, ~0u));
	EXPECT_EQ(0, check_taps(_metadata, 93, 2, true, ~0u));
	EXPECT_EQ(0, check_taps(_metadata, 94, 25, true, ~0u));
	EXPECT_EQ(0, check_taps(_metadata, 95, 40, false, ~0u));
	EXPECT_EQ(0, check_taps(_metadata, 96, 9, true, 4));
}

/* Without ACC, d's old contents (NaN here) must not leak in. */
TEST(matmul_ignores_old_d_without_acc)
{
	struct vtpu_tile a, b, d;
	struct rig r;
	uint32_t i, j;

	rig_init(&r, 11);
	a = rig_tile(&r, VTPU_DT_F32, 7, 3);
	b = rig_tile(&r, VTPU_DT_F32, 3, 10);
	d = rig_tile(&r, VTPU_DT_F32, 7, 10);
	for (i = 0; i < 7; i++)
		for (j = 0; j < 3; j++)
			setf(&r, &a, i, j, 1.0f);
	for (i = 0; i < 3; i++)
		for (j = 0; j < 10; j++)
			setf(&r, &b, i, j, (float)j);
	for (i = 0; i < 7; i++)
		for (j = 0; j < 10; j++)
			setf(&r, &d, i, j, NAN);
	vtpu_asm_matmul(&r.as, d, a, b, 0);
	ASSERT_EQ(0, rig_run(&r));
	for (i = 0; i < 7; i++)
		for (j = 0; j < 10; j++) {
			ASSERT_EQ(3.0f * j, getf(&r, &d, i, j));
		}
	rig_fini(&r);
}

/* ---- bf16 rounding ---- */

/* Nearest bf16 by distance, ties to even; NaN not handled here. */
static uint16_t ref_bf16(float f)
{
	uint32_t x = f32_bits(f), lo = x & 0xffff0000u, hi = lo + 0x10000;
	double v = f, dl, dh;

	if (isinf(f))
		return x >> 16;
	dl = fabs(v - bits_f32(lo));
	dh = (hi & 0x7fffffffu) >= 0x7f800000u ? fabs(copysign(0x1p128, v) - v) :
						  fabs((double)bits_f32(hi) - v);
	if (dl != dh)
		return (dl < dh ? lo : hi) >> 16;
	return ((lo >> 16) & 1 ? hi : lo) >> 16;
}

static const uint32_t bf16_cases[] = {
	0x3f800000, 0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001,
	0xbf808000, 0xbf818000, 0x00008000, 0x00018000, 0x00017fff,
	0x80008000, 0x00000001, 0x7f7fffff, 0x7f7f7fff, 0x7f7f8000,
	0xff7f8000, 0x7f800000, 0xff800000, 0x00000000, 0x80000000,
	0x7f800001, 0xff800001, 0x7fc00000, 0x7fffffff, 0xffc00001,
	0x807fffff, 0x00800000, 0x4b7fffff, 0x3fffffff,
};

static int bf16_ok(uint32_t x, uint16_t got)
{
	float f = bits_f32(x);

	if (isnan(f))
		return (got & 0x7f80) == 0x7f80 && (got & 0x0040) &&
		       (got >> 15) == (x >> 31);
	return got == ref_bf16(f);
}

/* f32 -> bf16 by CONVERT, by DMA_LOAD and by DMA_STORE. */
TEST(bf16_rounding)
{
	uint32_t n = ARRAY_SIZE(bf16_cases) + 200, i, src, dst;
	struct vtpu_tile a, c, v;
	uint32_t *x = malloc(n * sizeof(*x));
	uint16_t *out;
	struct rig r;

	rig_init(&r, 21);
	for (i = 0; i < n; i++)
		x[i] = i < ARRAY_SIZE(bf16_cases) ? bf16_cases[i] :
		       (uint32_t)rng();
	src = rig_binding(&r, n * 4, VTPU_ACCESS_READ);
	dst = rig_binding(&r, n * 2, VTPU_ACCESS_WRITE);
	memcpy(r.bind[src].data, x, n * 4);
	a = rig_tile(&r, VTPU_DT_F32, 1, n);
	c = rig_tile(&r, VTPU_DT_BF16, 1, n);
	v = rig_tile(&r, VTPU_DT_BF16, 1, n);
	for (i = 0; i < n; i++)
		setf(&r, &a, 0, i, bits_f32(x[i]));
	vtpu_asm_convert(&r.as, c, a);
	vtpu_asm_dma_load(&r.as, v, src, 0, n * 4, VTPU_DT_F32);
	vtpu_asm_dma_store(&r.as, a, dst, 0, n * 2, VTPU_DT_BF16);
	ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
	out = r.bind[dst].data;
	for (i = 0; i < n; i++) {
		EXPECT_TRUE(bf16_ok(x[i], geth(&r, &c, 0, i)))
			TH_LOG("convert %#010x -> %#06x, want %#06x", x[i],
			       geth(&r, &c, 0, i), ref_bf16(bits_f32(x[i])));
		EXPECT_TRUE(bf16_ok(x[i], geth(&r, &v, 0, i)))
			TH_LOG("dma load %#010x -> %#06x", x[i],
			       geth(&r, &v, 0, i));
		EXPECT_TRUE(bf16_ok(x[i], out[i]))
			TH_LOG("dma store %#010x -> %#06x", x[i], out[i]);
	}
	free(x);
	rig_fini(&r);
}

/* ---- FILL, IOTA, CONVERT, TRANSPOSE ---- */

TEST(fill_every_dtype)
{
	static const uint32_t imms[] = {
		0x3f808000, 0x3f818000, 0x7f800001, 0xfffffff6, 0x80000000,
		0x7fc12345,
	};
	uint32_t t, i, j, rows, cols;
	struct rig r;

	rig_init(&r, 31);
	for (t = 0; t < ARRAY_SIZE(imms); t++) {
		struct vtpu_tile f, s, h;

		shape(t, 9, &rows, &cols);
		f = rig_tile(&r, VTPU_DT_F32, rows, cols);
		s = rig_tile(&r, VTPU_DT_S32, rows, cols);
		h = rig_tile(&r, VTPU_DT_BF16, rows, cols);
		vtpu_asm_fill(&r.as, f, imms[t]);
		vtpu_asm_fill(&r.as, s, imms[t]);
		vtpu_asm_fill(&r.as, h, imms[t]);
		ASSERT_EQ(0, rig_run(&r));
		{
			struct vtpu_tile dst[3] = { f, s, h };

			ASSERT_EQ(0, stray_writes(&r, dst, 3));
		}
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				ASSERT_EQ(imms[t], f32_bits(getf(&r, &f, i, j)));
				ASSERT_EQ((int32_t)imms[t], gets(&r, &s, i, j));
				ASSERT_TRUE(bf16_ok(imms[t], geth(&r, &h, i, j)));
			}
		}
	}
	rig_fini(&r);
}

TEST(iota_every_dtype_and_axis)
{
	static const int32_t starts[] = {
		0, -5, 16777215, 2147483646, -2147483647 - 1, 255,
	};
	uint32_t t, i, j, rows, cols;
	int axis;
	struct rig r;

	rig_init(&r, 41);
	for (t = 0; t < ARRAY_SIZE(starts); t++)
	for (axis = 0; axis < 2; axis++) {
		uint16_t flags = axis ? VTPU_F_AXIS_ROWS : 0;
		struct vtpu_tile f, s, h;

		shape(t + 3, 12, &rows, &cols);
		f = rig_tile(&r, VTPU_DT_F32, rows, cols);
		s = rig_tile(&r, VTPU_DT_S32, rows, cols);
		h = rig_tile(&r, VTPU_DT_BF16, rows, cols);
		vtpu_asm_iota(&r.as, f, starts[t], flags);
		vtpu_asm_iota(&r.as, s, starts[t], flags);
		vtpu_asm_iota(&r.as, h, starts[t], flags);
		ASSERT_EQ(0, rig_run(&r));
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				int64_t v = (int64_t)starts[t] + (axis ? i : j);
				float fv = (float)v;

				ASSERT_EQ(f32_bits(fv), f32_bits(getf(&r, &f, i, j)));
				/* s32 wraps like two's complement. */
				ASSERT_EQ((uint32_t)v, (uint32_t)gets(&r, &s, i, j));
				ASSERT_EQ(ref_bf16(fv), geth(&r, &h, i, j));
			}
		}
		rig_fini(&r);
		rig_init(&r, 41 + t * 2 + axis + 1);
	}
	rig_fini(&r);
}

static int32_t ref_f32_to_s32(float f)
{
	double t;

	if (isnan(f))
		return 0;
	t = trunc(f);
	if (t >= 2147483647.0)
		return INT32_MAX;
	if (t <= -2147483648.0)
		return INT32_MIN;
	return (int32_t)t;
}

static const float convert_inputs[] = {
	0.0f, -0.0f, 0.9f, -0.9f, 1.5f, -1.5f, 2.5f, -2.99f, 16777217.0f,
	2147483520.0f, 2147483648.0f, -2147483648.0f, -2147483904.0f, 1e20f,
	-1e20f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, 3.0e9f, 65536.5f,
};

static const int32_t convert_ints[] = {
	0, 1, -1, 16777217, 16777219, -16777217, INT32_MAX, INT32_MIN, 257,
	33024, 33280, 12345678,
};

/* Row 0's element @j of a CONVERT source of dtype @dt, as raw bits. */
static uint32_t convert_source(uint8_t dt, uint32_t j)
{
	uint32_t nf = ARRAY_SIZE(convert_inputs), ni = ARRAY_SIZE(convert_ints);

	if (dt == VTPU_DT_S32)
		return j < ni ? (uint32_t)convert_ints[j] : j * 99991u - 1000000u;
	if (dt == VTPU_DT_F32)
		return j < nf ? f32_bits(convert_inputs[j]) :
		       f32_bits((float)convert_ints[j - nf]);
	return j < nf ? f32_bits(convert_inputs[j]) >> 16 : 0x3f80 + j;
}

/* The source element with raw @bits of dtype @dt, as f32 (s32 rounded). */
static float convert_value(uint8_t dt, uint32_t bits)
{
	if (dt == VTPU_DT_S32)
		return (float)(int32_t)bits;
	return bits_f32(dt == VTPU_DT_BF16 ? bits << 16 : bits);
}

/* Whether CONVERT got @got (raw bits) from @bits, @adt -> @ddt. */
static int convert_ok(uint8_t adt, uint8_t ddt, uint32_t bits, uint32_t got)
{
	float f = convert_value(adt, bits);

	if (adt == ddt)
		return got == bits;
	if (ddt == VTPU_DT_S32)
		return (int32_t)got == ref_f32_to_s32(f);
	if (ddt == VTPU_DT_F32)
		return same_float(bits_f32(got), f, 1);
	return bf16_ok(f32_bits(f), (uint16_t)got);
}

static uint32_t get_bits(struct rig *r, const struct vtpu_tile *t, uint32_t i,
			 uint32_t j)
{
	return t->dtype == VTPU_DT_BF16 ? geth(r, t, i, j) :
	       (uint32_t)gets(r, t, i, j);
}

static void set_bits(struct rig *r, const struct vtpu_tile *t, uint32_t i,
		     uint32_t j, uint32_t bits)
{
	if (t->dtype == VTPU_DT_BF16)
		seth(r, t, i, j, (uint16_t)bits);
	else
		sets(r, t, i, j, (int32_t)bits);
}

/*
 * Every (source, destination) dtype pair, out of place and, for equal
 * element sizes, in place. Row 0 holds the interesting inputs, row 1
 * random bits.
 */
TEST(convert_every_pair)
{
	static const uint8_t dts[] = { VTPU_DT_F32, VTPU_DT_BF16, VTPU_DT_S32 };
	uint32_t n = ARRAY_SIZE(convert_inputs) + ARRAY_SIZE(convert_ints);
	int sa, sd, in_place;

	for (sa = 0; sa < 3; sa++)
	for (sd = 0; sd < 3; sd++)
	for (in_place = 0; in_place < 2; in_place++) {
		uint8_t adt = dts[sa], ddt = dts[sd];
		struct vtpu_tile a, d;
		uint32_t i, j, *src;
		struct rig r;

		if (in_place && dt_size(adt) != dt_size(ddt))
			continue;
		rig_init(&r, 51 + sa * 6 + sd * 2 + in_place);
		a = rig_tile(&r, adt, 2, n);
		d = in_place ? a : rig_tile(&r, ddt, 2, n);
		d.dtype = ddt;
		src = malloc(2 * n * sizeof(*src));
		for (i = 0; i < 2; i++) {
			for (j = 0; j < n; j++) {
				uint32_t bits = i ? (uint32_t)rng() :
					convert_source(adt, j);

				if (adt == VTPU_DT_BF16)
					bits &= 0xffff;
				set_bits(&r, &a, i, j, bits);
				src[i * n + j] = bits;
			}
		}
		vtpu_asm_convert(&r.as, d, a);
		ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
		ASSERT_EQ(0, stray_writes(&r, &d, 1));
		for (i = 0; i < 2; i++)
			for (j = 0; j < n; j++) {
				ASSERT_TRUE(convert_ok(adt, ddt, src[i * n + j],
						       get_bits(&r, &d, i, j)))
					TH_LOG("dtype %u -> %u: %#x -> %#x",
					       adt, ddt, src[i * n + j],
					       get_bits(&r, &d, i, j));
			}
		free(src);
		rig_fini(&r);
	}
}

/* s32 -> f32 rounds to nearest even; f32 -> s32 truncates, saturates. */
TEST(convert_rounding_examples)
{
	static const struct { int32_t s; float f; } to_f32[] = {
		{ 16777217, 16777216.0f }, { 16777219, 16777220.0f },
		{ -16777217, -16777216.0f }, { INT32_MAX, 2147483648.0f },
	};
	static const struct { float f; int32_t s; } to_s32[] = {
		{ -0.99f, 0 }, { 2.99f, 2 }, { -2.99f, -2 }, { NAN, 0 },
		{ 3e9f, INT32_MAX }, { -3e9f, INT32_MIN },
		{ INFINITY, INT32_MAX }, { -INFINITY, INT32_MIN },
		{ -2147483648.0f, INT32_MIN },
	};
	struct vtpu_tile s, f, f2, s2;
	struct rig r;
	uint32_t i;

	rig_init(&r, 61);
	s = rig_tile(&r, VTPU_DT_S32, 1, ARRAY_SIZE(to_f32));
	f = rig_tile(&r, VTPU_DT_F32, 1, ARRAY_SIZE(to_f32));
	f2 = rig_tile(&r, VTPU_DT_F32, 1, ARRAY_SIZE(to_s32));
	s2 = rig_tile(&r, VTPU_DT_S32, 1, ARRAY_SIZE(to_s32));
	for (i = 0; i < ARRAY_SIZE(to_f32); i++)
		sets(&r, &s, 0, i, to_f32[i].s);
	for (i = 0; i < ARRAY_SIZE(to_s32); i++)
		setf(&r, &f2, 0, i, to_s32[i].f);
	vtpu_asm_convert(&r.as, f, s);
	vtpu_asm_convert(&r.as, s2, f2);
	ASSERT_EQ(0, rig_run(&r));
	for (i = 0; i < ARRAY_SIZE(to_f32); i++) {
		EXPECT_EQ(f32_bits(to_f32[i].f), f32_bits(getf(&r, &f, 0, i)));
	}
	for (i = 0; i < ARRAY_SIZE(to_s32); i++) {
		EXPECT_EQ(to_s32[i].s, gets(&r, &s2, 0, i));
	}
	rig_fini(&r);
}

TEST(transpose_every_dtype)
{
	static const uint8_t dts[] = { VTPU_DT_F32, VTPU_DT_BF16, VTPU_DT_S32 };
	int iter, t;

	for (iter = 0; iter < 8; iter++)
	for (t = 0; t < 3; t++) {
		uint32_t rows, cols, i, j;
		struct vtpu_tile a, d;
		struct rig r;

		rig_init(&r, 71 + iter * 3 + t);
		shape(iter, 45, &rows, &cols);
		a = rig_tile(&r, dts[t], rows, cols);
		d = rig_tile(&r, dts[t], cols, rows);
		vtpu_asm_transpose(&r.as, d, a);
		ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
		ASSERT_EQ(0, stray_writes(&r, &d, 1));
		for (i = 0; i < rows; i++)
			for (j = 0; j < cols; j++) {
				ASSERT_EQ(0, memcmp(elem(&r, &a, i, j),
						    elem(&r, &d, j, i),
						    dt_size(dts[t])));
			}
		rig_fini(&r);
	}
}

/* ---- DMA ---- */

/* bf16 of the f32 @bits as DMA and CONVERT must produce it; NaN aside. */
static uint32_t dma_convert(uint8_t from, uint8_t to, uint32_t bits)
{
	if (from == to)
		return bits;
	if (to == VTPU_DT_BF16)
		return ref_bf16(bits_f32(bits));
	return bits << 16;
}

static int dma_ok(uint8_t from, uint8_t to, uint32_t bits, uint32_t got)
{
	if (from == VTPU_DT_F32 && to == VTPU_DT_BF16)
		return bf16_ok(bits, (uint16_t)got);
	return got == dma_convert(from, to, bits);
}

/*
 * Loads a block from a binding (or the constants) with a row stride and
 * a byte offset of its own (not always element-aligned) into a VMEM tile,
 * possibly converting, then stores it to a second binding with another
 * stride and dtype. Checks VMEM, the stored block, and that the store
 * wrote nothing else. @sstep and @ostep: the element steps (ISA version
 * 6) of the load and the store, 0 for none.
 */
static int check_dma_cols(struct __test_metadata *_metadata, uint8_t sdt,
			  uint8_t vdt, uint8_t odt, int constants,
			  uint32_t sstep, uint32_t ostep, uint32_t fixed_cols,
			  uint64_t seed)
{
	uint32_t rows, cols, i, j, es = dt_size(sdt), eo = dt_size(odt);
	uint32_t ss = sstep ? sstep : 1, os = ostep ? ostep : 1;
	uint32_t sstride, ostride, src, dst, srow, orow;
	uint64_t ssize, osize, soff, ooff, dma_off;
	uint8_t *sbuf, *obuf, *orig;
	struct vtpu_tile v;
	struct rig r;
	int bad = 0;

	rig_init(&r, seed);
	shape((int)(seed % 7), 30, &rows, &cols);
	if (fixed_cols)
		cols = fixed_cols;
	/* a row's bytes, from its first element to its last */
	srow = ((cols - 1) * ss + 1) * es;
	orow = ((cols - 1) * os + 1) * eo;
	sstride = srow + (rows > 1 ? es * rng_below(9) : 0);
	if (rows == 1 && rng_below(2))
		sstride = rng_below(3);	/* one row: any stride goes */
	ostride = orow + eo * rng_below(9);
	soff = es * rng_below(20) + (rng_below(3) ? 0 : 1);
	ooff = eo * rng_below(20);
	/* sometimes the bindings end with the blocks' last bytes */
	ssize = soff + (uint64_t)(rows - 1) * sstride + srow +
		rng_below(2) * rng_below(16);
	osize = ooff + (uint64_t)(rows - 1) * ostride + orow +
		rng_below(2) * rng_below(16);
	dst = rig_binding(&r, osize, VTPU_ACCESS_WRITE);
	obuf = r.bind[dst].data;
	if (constants) {
		sbuf = malloc(ssize);
		for (i = 0; i < ssize; i++)
			sbuf[i] = (uint8_t)rng();
		src = VTPU_BINDING_CONSTANTS;
		dma_off = soff + vtpu_asm_const(&r.as, sbuf, ssize);
	} else {
		src = rig_binding(&r, ssize, VTPU_ACCESS_READ);
		sbuf = r.bind[src].data;
		dma_off = soff;
	}
	orig = malloc(osize);
	memcpy(orig, obuf, osize);
	v = rig_tile(&r, vdt, rows, cols);
	vtpu_asm_dma_step(&r.as, false, v, src, dma_off, sstride, sdt, sstep);
	vtpu_asm_dma_step(&r.as, true, v, dst, ooff, ostride, odt, ostep);
	ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
	ASSERT_EQ(0, stray_writes(&r, &v, 1));
	for (i = 0; i < rows; i++) {
		for (j = 0; j < cols; j++) {
			uint32_t sbits = 0, vbits, obits = 0;

			memcpy(&sbits, sbuf + soff + (uint64_t)i * sstride +
			       j * ss * es, es);
			vbits = get_bits(&r, &v, i, j);
			if (vdt == VTPU_DT_BF16)
				vbits &= 0xffff;
			memcpy(&obits, obuf + ooff + (uint64_t)i * ostride +
			       j * os * eo, eo);
			if (!dma_ok(sdt, vdt, sbits, vbits)) {
				if (!bad++)
					TH_LOG("load [%u][%u]: %#x -> %#x", i,
					       j, sbits, vbits);
			} else if (!dma_ok(vdt, odt, vbits, obits)) {
				if (!bad++)
					TH_LOG("store [%u][%u]: %#x -> %#x",
					       i, j, vbits, obits);
			}
		}
	}
	for (i = 0; i < rows; i++)
		for (j = 0; j < cols; j++)
			memcpy(orig + ooff + (uint64_t)i * ostride + j * os * eo,
			       obuf + ooff + (uint64_t)i * ostride + j * os * eo,
			       eo);
	if (memcmp(orig, obuf, osize)) {
		TH_LOG("store wrote outside its block");
		bad++;
	}
	free(orig);
	if (constants)
		free(sbuf);
	rig_fini(&r);
	return bad;
}

static int check_dma_step(struct __test_metadata *_metadata, uint8_t sdt,
			  uint8_t vdt, uint8_t odt, int constants,
			  uint32_t sstep, uint32_t ostep, uint64_t seed)
{
	return check_dma_cols(_metadata, sdt, vdt, odt, constants, sstep,
			      ostep, 0, seed);
}

static int check_dma(struct __test_metadata *_metadata, uint8_t sdt,
		     uint8_t vdt, uint8_t odt, int constants, uint64_t seed)
{
	return check_dma_step(_metadata, sdt, vdt, odt, constants, 0, 0,
			      seed);
}

/*
 * Every row length up to past the executor's inline row copy (512
 * bytes), in f32, s32 and bf16 (rows of 2 to 1040 bytes), from bindings
 * and the constants: the short-row path copies in overlapping pieces,
 * which must neither drop nor add a byte.
 */
TEST(dma_every_row_length)
{
	static const uint8_t dts[] = { VTPU_DT_F32, VTPU_DT_BF16, VTPU_DT_S32 };
	uint32_t cols, t;
	int bad = 0;

	for (cols = 1; cols <= 260; cols++)
		for (t = 0; t < ARRAY_SIZE(dts); t++)
			bad += check_dma_cols(_metadata, dts[t], dts[t], dts[t],
					      cols % 5 == 4, 0, 0, cols,
					      7000 + cols * 3 + t);
	ASSERT_EQ(0, bad);
}

/*
 * Element steps (ISA version 6) on either side, every dtype pair, from a
 * binding and from the constants: step 2 (a vector at a time for 4-byte
 * loads), odd steps, the largest.
 */
TEST(dma_element_step)
{
	static const uint32_t steps[] = { 1, 2, 3, 7, VTPU_MAX_DMA_STEP };
	static const uint8_t dts[][3] = {
		{ VTPU_DT_F32, VTPU_DT_F32, VTPU_DT_F32 },
		{ VTPU_DT_BF16, VTPU_DT_BF16, VTPU_DT_BF16 },
		{ VTPU_DT_F32, VTPU_DT_BF16, VTPU_DT_F32 },
		{ VTPU_DT_BF16, VTPU_DT_F32, VTPU_DT_BF16 },
		{ VTPU_DT_S32, VTPU_DT_S32, VTPU_DT_S32 },
	};
	int i, s, t, bad = 0;

	for (i = 0; i < 14; i++)
		for (s = 0; s < (int)ARRAY_SIZE(steps); s++)
			for (t = 0; t < (int)ARRAY_SIZE(dts); t++)
				bad += check_dma_step(_metadata, dts[t][0],
						      dts[t][1], dts[t][2],
						      i % 4 == 3,
						      steps[s],
						      steps[(s + i) %
							    ARRAY_SIZE(steps)],
						      900 + i * 50 + s * 7 + t);
	ASSERT_EQ(0, bad);
}

TEST(dma_same_dtype)
{
	int i, bad = 0;

	for (i = 0; i < 14; i++) {
		bad += check_dma(_metadata, VTPU_DT_F32, VTPU_DT_F32,
				 VTPU_DT_F32, 0, 100 + i);
		bad += check_dma(_metadata, VTPU_DT_BF16, VTPU_DT_BF16,
				 VTPU_DT_BF16, 0, 200 + i);
	}
	ASSERT_EQ(0, bad);
}

TEST(dma_converts_f32_bf16)
{
	int i, bad = 0;

	for (i = 0; i < 14; i++) {
		bad += check_dma(_metadata, VTPU_DT_F32, VTPU_DT_BF16,
				 VTPU_DT_F32, 0, 300 + i);
		bad += check_dma(_metadata, VTPU_DT_BF16, VTPU_DT_F32,
				 VTPU_DT_BF16, 0, 400 + i);
		bad += check_dma(_metadata, VTPU_DT_F32, VTPU_DT_F32,
				 VTPU_DT_BF16, 0, 500 + i);
		bad += check_dma(_metadata, VTPU_DT_BF16, VTPU_DT_BF16,
				 VTPU_DT_F32, 0, 600 + i);
	}
	ASSERT_EQ(0, bad);
}

TEST(dma_from_constants)
{
	int i, bad = 0;

	for (i = 0; i < 14; i++) {
		bad += check_dma(_metadata, VTPU_DT_F32, VTPU_DT_F32,
				 VTPU_DT_F32, 1, 700 + i);
		bad += check_dma(_metadata, VTPU_DT_F32, VTPU_DT_BF16,
				 VTPU_DT_BF16, 1, 800 + i);
	}
	ASSERT_EQ(0, bad);
}

/* ---- DMA_GATHER ---- */

/*
 * K rows of a V-row table, chosen by indices (negative ones wrapped),
 * into a tile of @vdt from a table of @sdt; every build must agree and
 * every row must be its table row, converted as DMA converts.
 */
static int check_gather(struct __test_metadata *_metadata, uint8_t sdt,
			uint8_t vdt, uint64_t seed)
{
	uint32_t es = dt_size(sdt), v, k, cols, stride, tb, i, j;
	struct vtpu_tile idx, t;
	int32_t want[64];
	struct rig r;
	uint64_t off;
	int bad = 0;

	rig_init(&r, seed);
	v = 1 + rng_below(60);
	k = 1 + rng_below(40);
	cols = 1 + rng_below(70);
	stride = cols * es + es * rng_below(4);
	off = es * rng_below(8);
	tb = rig_binding(&r, off + (uint64_t)(v - 1) * stride + cols * es,
			 VTPU_ACCESS_READ);
	idx = rig_tile(&r, VTPU_DT_S32, 1, k);
	t = rig_tile(&r, vdt, k, cols);
	for (i = 0; i < k; i++) {
		int32_t x = (int32_t)rng_below(2 * v) - (int32_t)v;

		want[i] = x < 0 ? x + (int32_t)v : x;
		sets(&r, &idx, 0, i, x);
	}
	vtpu_asm_dma_gather(&r.as, t, tb, off, stride, sdt, idx.addr, v,
			    VTPU_F_INDEX_WRAP);
	ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
	EXPECT_EQ(0, stray_writes(&r, &t, 1));
	for (i = 0; i < k; i++) {
		const uint8_t *row = r.bind[tb].data + off +
				     (uint64_t)want[i] * stride;

		for (j = 0; j < cols; j++) {
			uint32_t sbits = 0, vbits = get_bits(&r, &t, i, j);

			memcpy(&sbits, row + j * es, es);
			if (vdt == VTPU_DT_BF16)
				vbits &= 0xffff;
			if (!dma_ok(sdt, vdt, sbits, vbits) && !bad++)
				TH_LOG("row %u (table row %d) [%u]: %#x -> %#x",
				       i, want[i], j, sbits, vbits);
		}
	}
	rig_fini(&r);
	return bad;
}

TEST(dma_gather_picks_table_rows)
{
	int i, bad = 0;

	for (i = 0; i < 12; i++) {
		bad += check_gather(_metadata, VTPU_DT_F32, VTPU_DT_F32, 900 + i);
		bad += check_gather(_metadata, VTPU_DT_BF16, VTPU_DT_BF16,
				    920 + i);
		bad += check_gather(_metadata, VTPU_DT_S32, VTPU_DT_S32, 940 + i);
		bad += check_gather(_metadata, VTPU_DT_F32, VTPU_DT_BF16,
				    960 + i);
	}
	ASSERT_EQ(0, bad);
}

/*
 * An index outside the table stops the program with -ERANGE: that row
 * and what follows are never written, later steps return the fault, and
 * nothing is read outside the binding (ASan: it is sized exactly).
 */
TEST(dma_gather_out_of_range_index_faults)
{
	static const struct { int32_t index; bool wrap; } cases[] = {
		{ -1, false }, { -11, true }, { 10, false }, { 10, true },
		{ INT32_MIN, true }, { INT32_MIN, false }, { INT32_MAX, true },
		{ -10, false },
	};
	unsigned int c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct vtpu_prog_info info;
		struct vtpu_prog_error err;
		struct vtpu_tile idx, t, f;
		struct vtpu_exec e;
		uint32_t tb, i;
		struct rig r;
		size_t size;
		void *prog;
		int ret;

		rig_init(&r, 990 + c);
		tb = rig_binding(&r, 10 * 16, VTPU_ACCESS_READ);
		idx = rig_tile(&r, VTPU_DT_S32, 1, 6);
		t = rig_tile(&r, VTPU_DT_F32, 6, 4);
		f = rig_tile(&r, VTPU_DT_F32, 1, 1);
		for (i = 0; i < 6; i++)
			sets(&r, &idx, 0, i, (int32_t)i);
		sets(&r, &idx, 0, 3, cases[c].index);	/* row 3's is bad */
		vtpu_asm_dma_gather(&r.as, t, tb, 0, 16, VTPU_DT_F32, idx.addr,
				    10, cases[c].wrap ? VTPU_F_INDEX_WRAP : 0);
		vtpu_asm_fill_f32(&r.as, f, 42.0f);
		vtpu_asm_end(&r.as);
		prog = vtpu_asm_finish(&r.as, &size);
		ASSERT_NE(NULL, prog);
		ASSERT_EQ(0, vtpu_prog_validate(prog, size, r.desc, r.nbind,
						VMEM_SIZE, &info, &err))
			TH_LOG("%s", err.why);
		memcpy(r.before, r.vmem, VMEM_SIZE);
		vtpu_exec_init(&e, &info, r.bind, r.vmem);
		do
			ret = vtpu_exec_step(&e, 1);
		while (!ret);
		EXPECT_EQ(-ERANGE, ret) TH_LOG("index %d", cases[c].index);
		EXPECT_EQ(-ERANGE, e.fault);
		EXPECT_EQ(-ERANGE, vtpu_exec_step(&e, 10));
		EXPECT_EQ(0, e.insns);	/* the gather did not complete */
		/* rows 3.. of t and the FILL's tile are as they were */
		for (i = 3; i < 6; i++)
			EXPECT_EQ(0, memcmp(elem(&r, &t, i, 0),
					    r.before + (elem(&r, &t, i, 0) - r.vmem),
					    16));
		EXPECT_EQ(0, memcmp(elem(&r, &f, 0, 0),
				    r.before + (elem(&r, &f, 0, 0) - r.vmem), 4));
		free(prog);
		rig_fini(&r);
	}
}

/* ---- TRACE and stepping ---- */

struct trace_log {
	struct rig *r;
	struct vtpu_tile probe;
	uint32_t ids[16];
	float seen[16];
	int n;
};

static void record_trace(void *arg, uint32_t id)
{
	struct trace_log *log = arg;

	if (log->n < 16) {
		log->ids[log->n] = id;
		log->seen[log->n] = getf(log->r, &log->probe, 0, 0);
	}
	log->n++;
}

/* TRACE calls back in program order, after everything before it ran. */
TEST(trace_calls_back_in_order)
{
	static const uint32_t ids[] = { 3, 1, 4, 1, 5, 9, 2, 6 };
	struct trace_log log = { 0 };
	struct rig r;
	uint32_t i;

	rig_init(&r, 81);
	log.r = &r;
	log.probe = rig_tile(&r, VTPU_DT_F32, 1, 1);
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		vtpu_asm_fill_f32(&r.as, log.probe, (float)i);
		vtpu_asm_trace(&r.as, ids[i]);
	}
	r.trace = record_trace;
	r.trace_arg = &log;
	ASSERT_EQ(0, rig_run(&r));
	ASSERT_EQ((int)ARRAY_SIZE(ids), log.n);
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		EXPECT_EQ(ids[i], log.ids[i]);
		EXPECT_EQ((float)i, log.seen[i]);
	}
	EXPECT_EQ(2 * ARRAY_SIZE(ids) + 1, r.insns);
	rig_fini(&r);
}

TEST(trace_without_callback)
{
	struct rig r;

	rig_init(&r, 82);
	vtpu_asm_trace(&r.as, 7);
	vtpu_asm_trace(&r.as, 8);
	ASSERT_EQ(0, rig_run(&r));
	EXPECT_EQ(3, r.insns);
	rig_fini(&r);
}

/* vtpu_exec_step() runs at most max_insns and says when END has run. */
TEST(step_counts_and_stops_at_end)
{
	struct vtpu_prog_info info;
	struct vtpu_tile t;
	struct vtpu_exec e;
	size_t size = 0;
	struct rig r;
	void *prog;
	int i;

	rig_init(&r, 91);
	t = rig_tile(&r, VTPU_DT_F32, 2, 2);
	for (i = 0; i < 5; i++)
		vtpu_asm_fill_f32(&r.as, t, (float)i);
	vtpu_asm_end(&r.as);
	prog = vtpu_asm_finish(&r.as, &size);
	ASSERT_NE(NULL, prog);
	ASSERT_EQ(0, vtpu_prog_validate(prog, size, NULL, 0, VMEM_SIZE, &info,
					NULL));
	vtpu_exec_init(&e, &info, NULL, r.vmem);
	EXPECT_EQ(NULL, e.trace);
	EXPECT_EQ(0, vtpu_exec_step(&e, 0));
	EXPECT_EQ(0, e.insns);
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(0, vtpu_exec_step(&e, 1));
		EXPECT_EQ(i + 1, (int)e.insns);
		EXPECT_EQ((float)i, getf(&r, &t, 1, 1));
	}
	EXPECT_EQ(1, vtpu_exec_step(&e, 1));
	EXPECT_EQ(6, e.insns);
	EXPECT_EQ(1, vtpu_exec_step(&e, 100));
	EXPECT_EQ(6, e.insns);
	free(prog);
	rig_fini(&r);
}

/*
 * A step stops once it has done its budget of work, in the middle of an
 * instruction if need be, so FPU sections stay short: two MATMULs of
 * 2^24 bf16 multiply-adds take many steps, none much over the budget.
 * tests/unit/exec_resume.c checks that the cut changes no result.
 */
TEST(step_returns_early_after_big_work)
{
	struct vtpu_prog_info info;
	struct vtpu_tile a, b, d;
	struct vtpu_exec e;
	size_t size = 0;
	int steps, done, isa;
	struct rig r;
	void *prog;

	rig_init(&r, 92);
	a = rig_tile(&r, VTPU_DT_BF16, 256, 256);
	b = rig_tile(&r, VTPU_DT_BF16, 256, 256);
	d = rig_tile(&r, VTPU_DT_F32, 256, 256);
	vtpu_asm_fill(&r.as, a, 0);
	vtpu_asm_fill(&r.as, b, 0);
	vtpu_asm_matmul(&r.as, d, a, b, 0);
	vtpu_asm_matmul(&r.as, d, a, b, VTPU_F_ACC);
	vtpu_asm_end(&r.as);
	prog = vtpu_asm_finish(&r.as, &size);
	ASSERT_NE(NULL, prog);
	ASSERT_EQ(0, vtpu_prog_validate(prog, size, NULL, 0, VMEM_SIZE, &info,
					NULL));
	/*
	 * 2^25 bf16 multiply-adds: at least eight sections on the fastest
	 * build (a quarter of a unit each, doubled for bf16), more on the
	 * narrower ones.
	 */
	for (isa = 0; isa < VTPU_EXEC_ISA_NR; isa++) {
		if (!vtpu_exec_isa_supported(isa))
			continue;
		vtpu_exec_init(&e, &info, NULL, r.vmem);
		e.isa = isa;
		EXPECT_EQ(VTPU_EXEC_BUDGET, e.budget);
		steps = 0;
		do {
			done = vtpu_exec_step(&e, 100);
			steps++;
			ASSERT_LE(e.work, VTPU_EXEC_BUDGET + VTPU_EXEC_PIECE_MAX);
			if (!done)
				ASSERT_GE(e.work, VTPU_EXEC_BUDGET);
			ASSERT_EQ(e.pc, e.insns);
		} while (!done && steps < 10000);
		EXPECT_TRUE(done);
		EXPECT_GE(steps, isa == VTPU_EXEC_SSE2 ? 16 : 8)
			TH_LOG("%s build", vtpu_exec_isa_name(isa));
		EXPECT_EQ(5, e.insns);
		EXPECT_EQ(0, f32_bits(getf(&r, &d, 255, 255)));
	}
	free(prog);
	rig_fini(&r);
}

/* A program that chains opcodes: softmax over rows, checked in double. */
TEST(program_softmax_rows)
{
	const uint32_t rows = 5, cols = 37;
	struct vtpu_tile x, m, s, y;
	uint32_t i, j, in, out;
	float *src, *dst;
	struct rig r;

	rig_init(&r, 101);
	in = rig_binding(&r, rows * cols * 4, VTPU_ACCESS_READ);
	out = rig_binding(&r, rows * cols * 2, VTPU_ACCESS_WRITE);
	src = r.bind[in].data;
	for (i = 0; i < rows * cols; i++)
		src[i] = rng_uniform(-20, 20);
	x = rig_tile(&r, VTPU_DT_F32, rows, cols);
	m = rig_tile(&r, VTPU_DT_F32, rows, 1);
	s = rig_tile(&r, VTPU_DT_F32, rows, 1);
	y = rig_tile(&r, VTPU_DT_F32, rows, cols);
	vtpu_asm_dma_load(&r.as, x, in, 0, cols * 4, VTPU_DT_F32);
	vtpu_asm_reduce(&r.as, VTPU_REDUCE_MAX, m, x, VTPU_F_AXIS_COLS);
	vtpu_asm_binary(&r.as, VTPU_BINARY_SUB, y, x, m, VTPU_F_BCAST_COL);
	vtpu_asm_unary(&r.as, VTPU_UNARY_EXP, y, y);
	vtpu_asm_reduce(&r.as, VTPU_REDUCE_SUM, s, y, VTPU_F_AXIS_COLS);
	vtpu_asm_binary(&r.as, VTPU_BINARY_DIV, y, y, s, VTPU_F_BCAST_COL);
	vtpu_asm_dma_store(&r.as, y, out, 0, cols * 2, VTPU_DT_BF16);
	ASSERT_EQ(0, rig_run(&r)) TH_LOG("rejected: %s", r.why);
	dst = malloc(rows * cols * sizeof(*dst));
	for (i = 0; i < rows * cols; i++) {
		uint16_t h;

		memcpy(&h, (uint8_t *)r.bind[out].data + 2 * i, 2);
		dst[i] = bits_f32((uint32_t)h << 16);
	}
	for (i = 0; i < rows; i++) {
		double mx = -INFINITY, sum = 0;

		for (j = 0; j < cols; j++)
			mx = fmax(mx, src[i * cols + j]);
		for (j = 0; j < cols; j++)
			sum += exp(src[i * cols + j] - mx);
		for (j = 0; j < cols; j++) {
			double want = exp(src[i * cols + j] - mx) / sum;

			/* bf16 output: 2^-8 relative, plus f32 rounding. */
			ASSERT_LE(fabs(dst[i * cols + j] - want),
				  want * 0x1p-8 + 1e-30);
		}
	}
	free(dst);
	rig_fini(&r);
}

/* ---- sharding ---- */

/*
 * Every kind of instruction that can be cut, cut 3 ways (by rows, or by
 * columns where d has few): rig_run() compares each build's sharded run
 * with the whole runs bit for bit, VMEM and bindings. Each of these
 * instructions must really be cut, on every build.
 */
TEST(sharded_instructions_give_the_same_bits)
{
	struct vtpu_tile ma, mb, md, ta, tb, td, x, y, z, w, row, col;
	struct vtpu_tile wide, wide_d, red_c, tall, red_r, tr, half, fill, v;
	struct vtpu_tile one;
	uint32_t in, out, isas = 0, isa, cut;
	struct rig r;

	rig_init(&r, 31337);
	in = rig_binding(&r, 30 * 20 * 4, VTPU_ACCESS_READ);
	out = rig_binding(&r, 30 * 20 * 4, VTPU_ACCESS_WRITE);
	ma = rig_tile(&r, VTPU_DT_F32, 120, 40);
	mb = rig_tile(&r, VTPU_DT_F32, 40, 50);
	md = rig_tile(&r, VTPU_DT_F32, 120, 50);
	ta = rig_tile(&r, VTPU_DT_F32, 30, 8);
	tb = rig_tile(&r, VTPU_DT_BF16, 200, 30);
	td = rig_tile(&r, VTPU_DT_F32, 8, 200);
	x = rig_tile(&r, VTPU_DT_F32, 40, 70);
	y = rig_tile(&r, VTPU_DT_F32, 40, 70);
	z = rig_tile(&r, VTPU_DT_F32, 40, 70);
	w = rig_tile(&r, VTPU_DT_F32, 40, 70);
	row = rig_tile(&r, VTPU_DT_F32, 1, 70);
	col = rig_tile(&r, VTPU_DT_F32, 40, 1);
	one = rig_tile(&r, VTPU_DT_F32, 1, 1);
	wide = rig_tile(&r, VTPU_DT_F32, 1, 300);
	wide_d = rig_tile(&r, VTPU_DT_F32, 1, 300);
	red_c = rig_tile(&r, VTPU_DT_F32, 40, 1);
	tall = rig_tile(&r, VTPU_DT_F32, 5, 200);
	red_r = rig_tile(&r, VTPU_DT_F32, 1, 200);
	tr = rig_tile(&r, VTPU_DT_F32, 70, 40);
	half = rig_tile(&r, VTPU_DT_BF16, 40, 70);
	fill = rig_tile(&r, VTPU_DT_F32, 40, 70);
	v = rig_tile(&r, VTPU_DT_F32, 30, 20);
	fill_tile(&r, &ma, -2, 2);
	fill_tile(&r, &mb, -2, 2);
	fill_tile(&r, &ta, -2, 2);
	fill_tile(&r, &x, -3, 3);
	fill_tile(&r, &y, -3, 3);
	fill_tile(&r, &row, -3, 3);
	fill_tile(&r, &col, -3, 3);
	fill_tile(&r, &one, -3, 3);
	fill_tile(&r, &wide, -3, 3);
	fill_tile(&r, &tall, -3, 3);

	vtpu_asm_matmul(&r.as, md, ma, mb, 0);
	vtpu_asm_matmul(&r.as, td, ta, tb, VTPU_F_TRANS_A | VTPU_F_TRANS_B);
	vtpu_asm_unary(&r.as, VTPU_UNARY_EXP, z, x);
	vtpu_asm_binary(&r.as, VTPU_BINARY_ADD, w, x, y, VTPU_F_BCAST_NONE);
	vtpu_asm_binary(&r.as, VTPU_BINARY_MUL, w, w, row, VTPU_F_BCAST_ROW);
	vtpu_asm_binary(&r.as, VTPU_BINARY_SUB, z, z, col, VTPU_F_BCAST_COL);
	vtpu_asm_binary_imm(&r.as, VTPU_BINARY_MAX, wide_d, wide, 0.5f);
	vtpu_asm_op(&r.as, VTPU_OP_CMP, VTPU_CMP_LT, VTPU_F_BCAST_SCALAR, 0,
		    y, x, one);
	vtpu_asm_select(&r.as, y, z, w, VTPU_F_BCAST_NONE);
	vtpu_asm_reduce(&r.as, VTPU_REDUCE_SUM, red_c, x, VTPU_F_AXIS_COLS);
	vtpu_asm_reduce(&r.as, VTPU_REDUCE_MAX, red_r, tall, VTPU_F_AXIS_ROWS);
	vtpu_asm_transpose(&r.as, tr, z);
	vtpu_asm_convert(&r.as, half, w);
	vtpu_asm_fill(&r.as, fill, f32_bits(-1.5f));
	vtpu_asm_dma_load(&r.as, v, in, 0, 20 * 4, VTPU_DT_F32);
	vtpu_asm_dma_store(&r.as, v, out, 0, 20 * 4, VTPU_DT_F32);
	cut = 16;

	ASSERT_EQ(0, rig_run(&r)) TH_LOG("%s", r.why);
	for (isa = 0; isa < VTPU_EXEC_ISA_NR; isa++)
		isas += vtpu_exec_isa_supported(isa);
	EXPECT_EQ(cut * isas, r.cut);
	rig_fini(&r);
}

/* ---- the scalar unit and branches (ISA version 4) ---- */

/* The f32 elements of binding @b, as a DMA_STORE of @t left them. */
static float bound_f32(struct rig *r, uint32_t b, uint32_t i)
{
	float f;

	memcpy(&f, (uint8_t *)r->bind[b].data + 4 * i, sizeof(f));
	return f;
}

/*
 * A counted loop: SSET, a body, SADD -1, BRNZ back. The sum in VMEM
 * proves the trip count, the instruction count that every pass counts.
 */
TEST(branch_counted_loop)
{
	struct vtpu_tile acc;
	uint32_t b, i, top;
	struct rig r;

	rig_init(&r, 201);
	acc = rig_tile(&r, VTPU_DT_F32, 4, 8);
	b = rig_binding(&r, 4 * 8 * 4, VTPU_ACCESS_WRITE);
	vtpu_asm_fill_f32(&r.as, acc, 0.0f);
	vtpu_asm_sset(&r.as, 0, 37);
	top = vtpu_asm_here(&r.as);
	vtpu_asm_binary_imm(&r.as, VTPU_BINARY_ADD, acc, acc, 1.5f);
	vtpu_asm_sadd(&r.as, 0, -1);
	vtpu_asm_brnz(&r.as, 0, top);
	vtpu_asm_dma_store(&r.as, acc, b, 0, 8 * 4, VTPU_DT_F32);
	ASSERT_EQ(0, rig_run(&r)) TH_LOG("%s", r.why);
	for (i = 0; i < 32; i++)
		EXPECT_EQ(37 * 1.5f, bound_f32(&r, b, i));
	/* FILL, SSET, 37 x (BINARY, SADD, BRNZ), DMA_STORE, END */
	EXPECT_EQ(2 + 37 * 3 + 2, r.insns);
	EXPECT_EQ(0, stray_writes(&r, &acc, 1));
	rig_fini(&r);
}

/*
 * A while loop on data: x *= 3 while x < 100, the condition computed in
 * VMEM (CMP, CONVERT to s32) and read by SLOAD. x comes from a binding,
 * so the trip count is the data's: 1 -> 243 in 5 passes; 200 -> 600 in
 * one (the body runs before the test); a BRZ skips a body that must not
 * run.
 */
TEST(branch_data_dependent_loop)
{
	static const float x0[] = { 1.0f, 200.0f, 99.0f };
	static const float want[] = { 243.0f, 600.0f, 297.0f };
	struct vtpu_tile x, c, n;
	uint32_t in, out, k;
	uint32_t top;
	int skip;

	for (k = 0; k < ARRAY_SIZE(x0); k++) {
		struct rig r;

		rig_init(&r, 202 + k);
		x = rig_tile(&r, VTPU_DT_F32, 1, 1);
		c = rig_tile(&r, VTPU_DT_F32, 1, 1);
		n = rig_tile(&r, VTPU_DT_S32, 1, 1);
		in = rig_binding(&r, 4, VTPU_ACCESS_READ);
		out = rig_binding(&r, 4, VTPU_ACCESS_WRITE);
		memcpy(r.bind[in].data, &x0[k], 4);
		vtpu_asm_dma_load(&r.as, x, in, 0, 4, VTPU_DT_F32);
		top = vtpu_asm_here(&r.as);
		vtpu_asm_binary_imm(&r.as, VTPU_BINARY_MUL, x, x, 3.0f);
		vtpu_asm_cmp_imm(&r.as, VTPU_CMP_LT, c, x, 100.0f);
		vtpu_asm_convert(&r.as, n, c);
		vtpu_asm_sload(&r.as, 9, n.addr);
		vtpu_asm_brnz(&r.as, 9, top);
		/* s9 is 0 here: BRZ jumps over a body that would spoil x */
		skip = vtpu_asm_brz(&r.as, 9, 0);
		vtpu_asm_fill_f32(&r.as, x, -1.0f);
		vtpu_asm_insn(&r.as, skip)->imm = vtpu_asm_here(&r.as);
		vtpu_asm_dma_store(&r.as, x, out, 0, 4, VTPU_DT_F32);
		ASSERT_EQ(0, rig_run(&r)) TH_LOG("%s", r.why);
		EXPECT_EQ(want[k], bound_f32(&r, out, 0));
		rig_fini(&r);
	}
}

/* Loops in loops: 4 outer passes of 5 inner ones, each its register. */
TEST(branch_nested_loops)
{
	struct vtpu_tile inner, outer;
	uint32_t b, top, itop;
	struct rig r;

	rig_init(&r, 210);
	inner = rig_tile(&r, VTPU_DT_F32, 1, 8);
	outer = rig_tile(&r, VTPU_DT_F32, 1, 8);
	b = rig_binding(&r, 2 * 8 * 4, VTPU_ACCESS_WRITE);
	vtpu_asm_fill_f32(&r.as, inner, 0.0f);
	vtpu_asm_fill_f32(&r.as, outer, 0.0f);
	vtpu_asm_sset(&r.as, 0, 4);
	top = vtpu_asm_here(&r.as);
	vtpu_asm_sset(&r.as, 1, 5);
	itop = vtpu_asm_here(&r.as);
	vtpu_asm_binary_imm(&r.as, VTPU_BINARY_ADD, inner, inner, 1.0f);
	vtpu_asm_sadd(&r.as, 1, -1);
	vtpu_asm_brnz(&r.as, 1, itop);
	vtpu_asm_binary_imm(&r.as, VTPU_BINARY_ADD, outer, outer, 1.0f);
	vtpu_asm_sadd(&r.as, 0, -1);
	vtpu_asm_brnz(&r.as, 0, top);
	vtpu_asm_dma_store(&r.as, inner, b, 0, 32, VTPU_DT_F32);
	vtpu_asm_dma_store(&r.as, outer, b, 32, 32, VTPU_DT_F32);
	ASSERT_EQ(0, rig_run(&r)) TH_LOG("%s", r.why);
	EXPECT_EQ(20.0f, bound_f32(&r, b, 0));
	EXPECT_EQ(20.0f, bound_f32(&r, b, 7));
	EXPECT_EQ(4.0f, bound_f32(&r, b, 8));
	EXPECT_EQ(4.0f, bound_f32(&r, b, 15));
	rig_fini(&r);
}

/*
 * A loop around instructions big enough to be sharded and to stop and
 * resume mid-way (rig_run: every build, whole and cut 3 ways, a small
 * budget): all give the same bits, and the loop runs its passes.
 */
TEST(branch_loop_builds_agree)
{
	struct vtpu_tile a, w, y;
	uint32_t b, top;
	struct rig r;

	rig_init(&r, 211);
	a = rig_tile(&r, VTPU_DT_F32, 48, 40);
	w = rig_tile(&r, VTPU_DT_F32, 40, 40);
	y = rig_tile(&r, VTPU_DT_F32, 48, 40);
	fill_tile(&r, &a, -1.0, 1.0);
	fill_tile(&r, &w, -0.2, 0.2);
	b = rig_binding(&r, 48 * 40 * 4, VTPU_ACCESS_WRITE);
	vtpu_asm_sset(&r.as, 2, 6);
	top = vtpu_asm_here(&r.as);
	vtpu_asm_matmul(&r.as, y, a, w, 0);
	vtpu_asm_unary(&r.as, VTPU_UNARY_TANH, a, y);
	vtpu_asm_sadd(&r.as, 2, -1);
	vtpu_asm_brnz(&r.as, 2, top);
	vtpu_asm_dma_store(&r.as, a, b, 0, 40 * 4, VTPU_DT_F32);
	ASSERT_EQ(0, rig_run(&r)) TH_LOG("%s", r.why);
	EXPECT_GT(r.cut, 0);
	EXPECT_EQ(1 + 6 * 4 + 2, r.insns);
	rig_fini(&r);
}

/* Registers start at zero, SSET takes any s32, SADD wraps around. */
TEST(scalar_registers_start_at_zero_and_wrap)
{
	struct vtpu_prog_info info;
	struct vtpu_tile t;
	struct vtpu_exec e;
	int32_t v = -123456;
	size_t size = 0;
	struct rig r;
	void *prog;
	int i;

	rig_init(&r, 212);
	t = rig_tile(&r, VTPU_DT_S32, 1, 1);
	memcpy(r.vmem + t.addr, &v, 4);
	for (i = 0; i < VTPU_SREGS; i++)	/* all still zero: none taken */
		vtpu_asm_brnz(&r.as, i, 0);
	vtpu_asm_sset(&r.as, 3, INT32_MAX);
	vtpu_asm_sadd(&r.as, 3, 1);
	vtpu_asm_sset(&r.as, 4, -1);
	vtpu_asm_sadd(&r.as, 4, INT32_MIN);
	vtpu_asm_sload(&r.as, 15, t.addr);
	vtpu_asm_sadd(&r.as, 15, 6);
	vtpu_asm_end(&r.as);
	prog = vtpu_asm_finish(&r.as, &size);
	ASSERT_NE(NULL, prog);
	ASSERT_EQ(0, vtpu_prog_validate(prog, size, NULL, 0, VMEM_SIZE, &info,
					NULL));
	memset(&e, 0x5a, sizeof(e));
	vtpu_exec_init(&e, &info, NULL, r.vmem);
	for (i = 0; i < VTPU_SREGS; i++)
		EXPECT_EQ(0, e.sreg[i]);
	EXPECT_EQ(1, vtpu_exec_step(&e, 1000));
	EXPECT_EQ(INT32_MIN, e.sreg[3]);
	EXPECT_EQ(INT32_MAX, e.sreg[4]);
	EXPECT_EQ(-123450, e.sreg[15]);
	EXPECT_EQ(0, e.sreg[0]);
	EXPECT_EQ(info.insn_count, e.insns);
	free(prog);
	rig_fini(&r);
}

/*
 * A loop that never ends is cut like any long work: each call stops at
 * its instruction count or its budget, every pass counted, so the kernel
 * core's watchdog and the host backend's clock get their turn.
 */
TEST(branch_endless_loop_is_sliced)
{
	struct vtpu_prog_info info;
	struct vtpu_exec e;
	size_t size = 0;
	void *prog = vtpu_prog_forever(&size);
	uint8_t vmem[64];
	int i;

	ASSERT_NE(NULL, prog);
	ASSERT_EQ(0, vtpu_prog_validate(prog, size, NULL, 0, sizeof(vmem),
					&info, NULL));
	EXPECT_EQ(1u, info.branch_count);
	vtpu_exec_init(&e, &info, NULL, vmem);
	EXPECT_EQ(0, vtpu_exec_step(&e, 10));
	EXPECT_EQ(10, e.insns);
	EXPECT_EQ(0u, e.pc);
	for (i = 0; i < 3; i++) {
		uint64_t before = e.insns;

		EXPECT_EQ(0, vtpu_exec_step(&e, UINT32_MAX));
		EXPECT_GE(e.work, e.budget);
		EXPECT_LT(e.work, e.budget + VTPU_EXEC_PIECE_MAX);
		EXPECT_GT(e.insns, before);
		EXPECT_LT(e.insns - before, (uint64_t)UINT32_MAX);
	}
	free(prog);
}

TEST_HARNESS_MAIN
