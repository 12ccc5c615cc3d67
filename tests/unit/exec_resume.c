// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: long instructions are resumable. However small the work
 * budget of a vtpu_exec_step() call, every opcode gives the same bytes as
 * when it runs in one go, and no call does more than its budget plus one
 * piece of an instruction (VTPU_EXEC_PIECE_MAX), so the kernel's FPU
 * sections stay short whatever the tiles.
 *
 * Each test assembles a program of big, odd-sized tiles (rows and
 * columns longer than one piece, in place and not) and runs it from the
 * same VMEM and binding contents several times: once with an unlimited
 * budget (one call), then with budgets of 1 (a piece per call), a few
 * thousand and the default, and with several limits on instructions per
 * call. The results must be equal to the byte (memcmp); each call's
 * e->work must stay within the bound, reach the budget whenever the
 * program is not done, and e->insns must count each instruction once,
 * when it completes; TRACE callbacks must fire once each, in order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vtpu_asm.h"
#include "vtpu_exec.h"

#include "kselftest_harness.h"

#define VMEM_SIZE	(4u << 20)
#define BIND_SIZE	(1u << 20)
#define MAX_TRACE	16
#define UNLIMITED	UINT64_MAX

/* xorshift64*: the same inputs on every run. */
static uint64_t rng_state;

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

/*
 * A 16-bit pattern: mostly the bf16 of a value in [-4, 4), so that f32
 * reads (two such halves) are ordinary numbers too; sometimes random
 * bits (NaN, infinities, denormals).
 */
static uint16_t rng_half(void)
{
	float f;
	uint32_t u;

	if (rng_below(64) == 0)
		return (uint16_t)rng();
	f = (float)((double)(rng() >> 11) * 0x1p-53 * 8 - 4);
	memcpy(&u, &f, sizeof(u));
	return (uint16_t)(u >> 16);
}

static void fill_random(uint8_t *p, size_t size)
{
	size_t i;

	for (i = 0; i + 1 < size; i += 2) {
		uint16_t h = rng_half();

		memcpy(p + i, &h, sizeof(h));
	}
}

/* The program being assembled and the state every run starts from. */
struct rig {
	struct vtpu_asm as;
	uint32_t cursor;
	uint8_t *vmem0, *bind0;
	void *prog;
	size_t size;
	struct vtpu_prog_info info;
};

/* What one run left behind. */
struct result {
	uint8_t *vmem, *bind;
	uint64_t steps;
	uint32_t trace[MAX_TRACE];
	uint32_t ntrace;
};

static void rig_init(struct rig *r, uint64_t seed)
{
	memset(r, 0, sizeof(*r));
	rng_state = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	r->vmem0 = aligned_alloc(64, VMEM_SIZE);
	r->bind0 = malloc(BIND_SIZE);
	if (!r->vmem0 || !r->bind0)
		abort();
	fill_random(r->vmem0, VMEM_SIZE);
	fill_random(r->bind0, BIND_SIZE);
	r->cursor = 4 * rng_below(16);
	vtpu_asm_init(&r->as, VMEM_SIZE, 1);
}

static void rig_fini(struct rig *r)
{
	vtpu_asm_free(&r->as);
	free(r->prog);
	free(r->bind0);
	free(r->vmem0);
}

/* A tile after the previous one; sometimes a stride beyond its columns. */
static struct vtpu_tile rig_tile(struct rig *r, uint8_t dtype, uint32_t rows,
				 uint32_t cols)
{
	uint32_t es = dtype == VTPU_DT_BF16 ? 2 : 4;
	uint32_t stride = cols + (rng_below(2) ? 0 : 1 + rng_below(7));
	uint32_t addr = (r->cursor + es - 1) / es * es + es * rng_below(9);

	r->cursor = addr + ((rows - 1) * stride + cols) * es;
	if (r->cursor > VMEM_SIZE)
		abort();
	return vtpu_tile(addr, rows, cols, stride, dtype);
}

static struct vtpu_tile rig_f32(struct rig *r, uint32_t rows, uint32_t cols)
{
	return rig_tile(r, VTPU_DT_F32, rows, cols);
}

/* Ends and validates the program. */
static int rig_finish(struct rig *r)
{
	struct vtpu_binding_desc desc = {
		.size = BIND_SIZE,
		.access = VTPU_ACCESS_READ | VTPU_ACCESS_WRITE,
	};
	struct vtpu_prog_error err;

	vtpu_asm_end(&r->as);
	r->prog = vtpu_asm_finish(&r->as, &r->size);
	if (!r->prog)
		return -1;
	return vtpu_prog_validate(r->prog, r->size, &desc, 1, VMEM_SIZE,
				  &r->info, &err);
}

static void record_trace(void *arg, uint32_t id)
{
	struct result *res = arg;

	if (res->ntrace < MAX_TRACE)
		res->trace[res->ntrace] = id;
	res->ntrace++;
}

static void result_free(struct result *res)
{
	free(res->vmem);
	free(res->bind);
}

/*
 * Runs the program from the initial state, @budget of work and
 * @max_insns instructions a call, checking every call.
 */
static void run(struct __test_metadata *_metadata, struct rig *r,
		uint64_t budget, uint32_t max_insns, struct result *res)
{
	struct vtpu_exec_binding bind;
	struct vtpu_exec e;
	uint64_t insns;
	uint32_t pc;
	int done = 0;

	memset(res, 0, sizeof(*res));
	res->vmem = aligned_alloc(64, VMEM_SIZE);
	res->bind = malloc(BIND_SIZE);
	ASSERT_NE(NULL, res->vmem);
	ASSERT_NE(NULL, res->bind);
	memcpy(res->vmem, r->vmem0, VMEM_SIZE);
	memcpy(res->bind, r->bind0, BIND_SIZE);
	bind.data = res->bind;
	bind.size = BIND_SIZE;

	vtpu_exec_init(&e, &r->info, &bind, res->vmem);
	ASSERT_EQ(VTPU_EXEC_BUDGET, e.budget);
	e.budget = budget;
	e.trace = record_trace;
	e.trace_arg = res;
	while (!done) {
		pc = e.pc;
		insns = e.insns;
		done = vtpu_exec_step(&e, max_insns);
		res->steps++;
		/* Progress, within budget + one piece. */
		ASSERT_TRUE(e.pc > pc || e.work > 0);
		if (budget != UNLIMITED)
			ASSERT_LE(e.work, budget + VTPU_EXEC_PIECE_MAX);
		/* Stopped by the budget or by max_insns, never short. */
		if (!done && max_insns == UINT32_MAX)
			ASSERT_GE(e.work, budget);
		/* Instructions count once, when they complete. */
		ASSERT_EQ(e.pc, e.insns);
		ASSERT_LE(e.insns - insns, max_insns);
		ASSERT_LT(res->steps, 10000000);
	}
	ASSERT_EQ(r->info.insn_count, e.insns);
	/* Done stays done. */
	ASSERT_EQ(1, vtpu_exec_step(&e, 1));
	ASSERT_EQ(r->info.insn_count, e.insns);
}

static void expect_same(struct __test_metadata *_metadata,
			const struct result *x, const struct result *y,
			uint64_t budget, uint32_t max_insns)
{
	EXPECT_EQ(0, memcmp(x->vmem, y->vmem, VMEM_SIZE))
		TH_LOG("VMEM differs: budget %llu, %u insns a step",
		       (unsigned long long)budget, max_insns);
	EXPECT_EQ(0, memcmp(x->bind, y->bind, BIND_SIZE))
		TH_LOG("binding differs: budget %llu, %u insns a step",
		       (unsigned long long)budget, max_insns);
	ASSERT_EQ(x->ntrace, y->ntrace);
	EXPECT_EQ(0, memcmp(x->trace, y->trace,
			    sizeof(x->trace[0]) *
			    (x->ntrace < MAX_TRACE ? x->ntrace : MAX_TRACE)));
}

/*
 * The program of @r run in one go and resumed with small budgets gives
 * the same bytes; with a budget of 1 every piece is a call of its own, so
 * an instruction of several pieces takes several calls.
 */
static void check_resume(struct __test_metadata *_metadata, struct rig *r)
{
	static const struct {
		uint64_t budget;
		uint32_t max_insns;
	} runs[] = {
		{ 1, 1 },
		{ 1, UINT32_MAX },
		{ 3000, UINT32_MAX },
		{ 40000, 2 },
		{ VTPU_EXEC_BUDGET, UINT32_MAX },
	};
	struct result whole, part;
	size_t i;

	ASSERT_EQ(0, rig_finish(r));
	run(_metadata, r, UNLIMITED, UINT32_MAX, &whole);
	EXPECT_EQ(1, whole.steps);
	/* Something ran: the destinations changed. */
	EXPECT_NE(0, memcmp(whole.vmem, r->vmem0, VMEM_SIZE) |
		     memcmp(whole.bind, r->bind0, BIND_SIZE));

	for (i = 0; i < ARRAY_SIZE(runs); i++) {
		run(_metadata, r, runs[i].budget, runs[i].max_insns, &part);
		expect_same(_metadata, &whole, &part, runs[i].budget,
			    runs[i].max_insns);
		if (runs[i].budget == 1)
			EXPECT_GT(part.steps, 2 * r->info.insn_count);
		result_free(&part);
	}
	result_free(&whole);
}

/* MATMUL: more rows than a panel, columns not a multiple of 8, odd k. */
TEST(matmul_f32_resumes_bit_identical)
{
	struct rig r;

	rig_init(&r, 1);
	vtpu_asm_matmul(&r.as, rig_f32(&r, 150, 37), rig_f32(&r, 150, 70),
			rig_f32(&r, 70, 37), 0);
	vtpu_asm_matmul(&r.as, rig_f32(&r, 7, 300), rig_f32(&r, 7, 129),
			rig_f32(&r, 129, 300), 0);
	vtpu_asm_matmul(&r.as, rig_f32(&r, 300, 1), rig_f32(&r, 300, 65),
			rig_f32(&r, 65, 1), 0);
	check_resume(_metadata, &r);
	rig_fini(&r);
}

/* VTPU_F_ACC: the sums continue from d, still in k order. */
TEST(matmul_accumulate_resumes_bit_identical)
{
	struct vtpu_tile d, a, b;
	struct rig r;

	rig_init(&r, 2);
	d = rig_f32(&r, 161, 45);
	a = rig_f32(&r, 161, 97);
	b = rig_f32(&r, 97, 45);
	vtpu_asm_matmul(&r.as, d, a, b, VTPU_F_ACC);
	vtpu_asm_matmul(&r.as, d, a, b, VTPU_F_ACC);
	check_resume(_metadata, &r);
	rig_fini(&r);
}

TEST(matmul_transposed_operands_resume_bit_identical)
{
	struct rig r;

	rig_init(&r, 3);
	/* d[150x37] = a^T (a is 70x150) . b */
	vtpu_asm_matmul(&r.as, rig_f32(&r, 150, 37), rig_f32(&r, 70, 150),
			rig_f32(&r, 70, 37), VTPU_F_TRANS_A);
	/* d = a . b^T (b is 37x70) */
	vtpu_asm_matmul(&r.as, rig_f32(&r, 150, 37), rig_f32(&r, 150, 70),
			rig_f32(&r, 37, 70), VTPU_F_TRANS_B | VTPU_F_ACC);
	vtpu_asm_matmul(&r.as, rig_f32(&r, 145, 19), rig_f32(&r, 66, 145),
			rig_f32(&r, 19, 66), VTPU_F_TRANS_A | VTPU_F_TRANS_B);
	check_resume(_metadata, &r);
	rig_fini(&r);
}

TEST(matmul_bf16_resumes_bit_identical)
{
	struct rig r;

	rig_init(&r, 4);
	vtpu_asm_matmul(&r.as, rig_f32(&r, 149, 41),
			rig_tile(&r, VTPU_DT_BF16, 149, 99),
			rig_tile(&r, VTPU_DT_BF16, 99, 41), 0);
	vtpu_asm_matmul(&r.as, rig_f32(&r, 149, 41),
			rig_tile(&r, VTPU_DT_BF16, 99, 149), rig_f32(&r, 99, 41),
			VTPU_F_TRANS_A | VTPU_F_ACC);
	vtpu_asm_matmul(&r.as, rig_f32(&r, 149, 41), rig_f32(&r, 149, 99),
			rig_tile(&r, VTPU_DT_BF16, 41, 99), VTPU_F_TRANS_B);
	check_resume(_metadata, &r);
	rig_fini(&r);
}

/* Every function, in place (d is a) and not, rows longer than a piece. */
TEST(unary_resumes_in_place_and_not)
{
	struct vtpu_tile t;
	struct rig r;
	int sub;

	rig_init(&r, 5);
	for (sub = 0; sub < VTPU_UNARY_NR; sub++) {
		t = rig_f32(&r, 3, 5003);
		vtpu_asm_unary(&r.as, sub, t, t);
		vtpu_asm_unary(&r.as, sub, rig_f32(&r, 2, 4099),
			       rig_f32(&r, 2, 4099));
	}
	check_resume(_metadata, &r);
	rig_fini(&r);
}

/* Every function with every broadcast; d is a, d is b, or neither. */
TEST(binary_resumes_with_every_broadcast)
{
	static const uint16_t bcast[] = {
		VTPU_F_BCAST_NONE, VTPU_F_BCAST_SCALAR, VTPU_F_BCAST_ROW,
		VTPU_F_BCAST_COL,
	};
	const uint32_t rows = 3, cols = 3000;
	struct vtpu_tile d, b;
	struct rig r;
	size_t i;
	int sub;

	rig_init(&r, 6);
	for (sub = 0; sub < VTPU_BINARY_NR; sub++) {
		for (i = 0; i < ARRAY_SIZE(bcast); i++) {
			d = rig_f32(&r, rows, cols);
			b = rig_f32(&r, bcast[i] == VTPU_F_BCAST_ROW ||
					bcast[i] == VTPU_F_BCAST_SCALAR ? 1 : rows,
				    bcast[i] == VTPU_F_BCAST_COL ||
				    bcast[i] == VTPU_F_BCAST_SCALAR ? 1 : cols);
			vtpu_asm_binary(&r.as, sub, d, d, b, bcast[i]);
		}
		d = rig_f32(&r, rows, cols);
		vtpu_asm_binary(&r.as, sub, d, rig_f32(&r, rows, cols), d,
				VTPU_F_BCAST_NONE);
		vtpu_asm_binary_imm(&r.as, sub, rig_f32(&r, rows, cols),
				    rig_f32(&r, rows, cols), 0.75f);
	}
	check_resume(_metadata, &r);
	rig_fini(&r);
}

TEST(cmp_and_select_resume_bit_identical)
{
	const uint32_t rows = 4, cols = 4001;
	struct vtpu_tile d;
	struct rig r;
	int sub;

	rig_init(&r, 7);
	for (sub = 0; sub < VTPU_CMP_NR; sub++) {
		d = rig_f32(&r, rows, cols);
		vtpu_asm_cmp(&r.as, sub, d, d, rig_f32(&r, 1, cols),
			     VTPU_F_BCAST_ROW);
		vtpu_asm_cmp(&r.as, sub, rig_f32(&r, rows, cols),
			     rig_f32(&r, rows, cols), rig_f32(&r, rows, 1),
			     VTPU_F_BCAST_COL);
		vtpu_asm_cmp_imm(&r.as, sub, rig_f32(&r, rows, cols),
				 rig_f32(&r, rows, cols), -0.5f);
	}
	/* SELECT reads d (the condition) and writes it. */
	vtpu_asm_select(&r.as, rig_f32(&r, rows, cols), rig_f32(&r, rows, cols),
			rig_f32(&r, rows, cols), VTPU_F_BCAST_NONE);
	d = rig_f32(&r, rows, cols);
	vtpu_asm_select(&r.as, d, d, rig_f32(&r, 1, cols), VTPU_F_BCAST_ROW);
	vtpu_asm_select_imm(&r.as, rig_f32(&r, rows, cols),
			    rig_f32(&r, rows, cols), 2.5f);
	check_resume(_metadata, &r);
	rig_fini(&r);
}

/*
 * REDUCE over columns carries a row's partial result from one call to
 * the next; over rows it folds into d. Rows far longer than a piece.
 */
TEST(reduce_resumes_mid_row)
{
	struct vtpu_tile a;
	struct rig r;
	int sub, acc;

	rig_init(&r, 8);
	for (sub = 0; sub < VTPU_REDUCE_NR; sub++) {
		for (acc = 0; acc < 2; acc++) {
			a = rig_f32(&r, 5, 9001);
			vtpu_asm_reduce(&r.as, sub, rig_f32(&r, 5, 1), a,
					VTPU_F_AXIS_COLS |
					(acc ? VTPU_F_ACC : 0));
			vtpu_asm_reduce(&r.as, sub, rig_f32(&r, 1, 9001), a,
					VTPU_F_AXIS_ROWS |
					(acc ? VTPU_F_ACC : 0));
			a = rig_f32(&r, 301, 37);
			vtpu_asm_reduce(&r.as, sub, rig_f32(&r, 1, 37), a,
					VTPU_F_AXIS_ROWS |
					(acc ? VTPU_F_ACC : 0));
		}
	}
	/* A single column: no fold, only the start. */
	vtpu_asm_reduce(&r.as, VTPU_REDUCE_SUM, rig_f32(&r, 2000, 1),
			rig_f32(&r, 2000, 1), VTPU_F_AXIS_COLS);
	check_resume(_metadata, &r);
	rig_fini(&r);
}

TEST(fill_and_iota_resume_bit_identical)
{
	static const uint8_t dtypes[] = {
		VTPU_DT_F32, VTPU_DT_BF16, VTPU_DT_S32,
	};
	struct rig r;
	size_t i;

	rig_init(&r, 9);
	for (i = 0; i < ARRAY_SIZE(dtypes); i++) {
		vtpu_asm_fill_f32(&r.as, rig_tile(&r, dtypes[i], 6, 9007),
				  -1.75f);
		vtpu_asm_iota(&r.as, rig_tile(&r, dtypes[i], 6, 9007), -3000,
			      0);
		vtpu_asm_iota(&r.as, rig_tile(&r, dtypes[i], 3001, 3), 7,
			      VTPU_F_AXIS_ROWS);
	}
	check_resume(_metadata, &r);
	rig_fini(&r);
}

/* Conversions between every pair; same-size ones also in place. */
TEST(convert_resumes_in_place_and_not)
{
	static const uint8_t dtypes[] = {
		VTPU_DT_F32, VTPU_DT_BF16, VTPU_DT_S32,
	};
	struct vtpu_tile t;
	struct rig r;
	size_t i, j;

	rig_init(&r, 10);
	for (i = 0; i < ARRAY_SIZE(dtypes); i++) {
		for (j = 0; j < ARRAY_SIZE(dtypes); j++) {
			vtpu_asm_convert(&r.as, rig_tile(&r, dtypes[i], 3, 7001),
					 rig_tile(&r, dtypes[j], 3, 7001));
			if ((dtypes[i] == VTPU_DT_BF16) !=
			    (dtypes[j] == VTPU_DT_BF16))
				continue;
			t = rig_tile(&r, dtypes[j], 3, 7001);
			vtpu_asm_convert(&r.as,
					 vtpu_tile(t.addr, t.rows, t.cols,
						   t.stride, dtypes[i]), t);
		}
	}
	check_resume(_metadata, &r);
	rig_fini(&r);
}

TEST(transpose_resumes_bit_identical)
{
	struct rig r;

	rig_init(&r, 11);
	vtpu_asm_transpose(&r.as, rig_f32(&r, 333, 75), rig_f32(&r, 75, 333));
	vtpu_asm_transpose(&r.as, rig_tile(&r, VTPU_DT_BF16, 47, 130),
			   rig_tile(&r, VTPU_DT_BF16, 130, 47));
	vtpu_asm_transpose(&r.as, rig_f32(&r, 5000, 1), rig_f32(&r, 1, 5000));
	vtpu_asm_transpose(&r.as, rig_tile(&r, VTPU_DT_S32, 3, 4001),
			   rig_tile(&r, VTPU_DT_S32, 4001, 3));
	check_resume(_metadata, &r);
	rig_fini(&r);
}

/* Loads and stores, converting or not, and loads of constants. */
TEST(dma_resumes_bit_identical)
{
	static float consts[3 * 5000];
	struct vtpu_tile v;
	struct rig r;
	uint32_t off;
	size_t i;

	rig_init(&r, 12);
	for (i = 0; i < ARRAY_SIZE(consts); i++)
		consts[i] = (float)i * 0.25f - 7;
	off = vtpu_asm_const(&r.as, consts, sizeof(consts));

	vtpu_asm_dma_load(&r.as, rig_f32(&r, 3, 9001), 0, 8, 9001 * 4 + 12,
			  VTPU_DT_F32);
	vtpu_asm_dma_load(&r.as, rig_tile(&r, VTPU_DT_BF16, 5, 7003), 0,
			  120000, 7003 * 4, VTPU_DT_F32);
	vtpu_asm_dma_load(&r.as, rig_f32(&r, 5, 7003), 0, 260000, 7003 * 2,
			  VTPU_DT_BF16);
	v = rig_tile(&r, VTPU_DT_BF16, 4, 6007);
	vtpu_asm_dma_store(&r.as, v, 0, 400000, 6007 * 4, VTPU_DT_F32);
	vtpu_asm_dma_store(&r.as, rig_f32(&r, 4, 6007), 0, 500000, 6007 * 2,
			   VTPU_DT_BF16);
	vtpu_asm_dma_store(&r.as, rig_f32(&r, 2, 9001), 0, 600000,
			   9001 * 4 + 100, VTPU_DT_F32);
	vtpu_asm_dma_load(&r.as, rig_f32(&r, 3, 5000), VTPU_BINDING_CONSTANTS,
			  off, 5000 * 4, VTPU_DT_F32);
	vtpu_asm_dma_load(&r.as, rig_tile(&r, VTPU_DT_BF16, 3, 5000),
			  VTPU_BINDING_CONSTANTS, off, 5000 * 4, VTPU_DT_F32);
	check_resume(_metadata, &r);
	rig_fini(&r);
}

/*
 * TRACEs between long instructions fire once each, in order, however
 * the instructions around them are cut.
 */
TEST(trace_fires_once_between_resumed_instructions)
{
	struct result res;
	struct rig r;
	uint32_t i;

	rig_init(&r, 13);
	vtpu_asm_trace(&r.as, 10);
	vtpu_asm_matmul(&r.as, rig_f32(&r, 100, 50), rig_f32(&r, 100, 80),
			rig_f32(&r, 80, 50), 0);
	vtpu_asm_trace(&r.as, 11);
	vtpu_asm_trace(&r.as, 12);
	vtpu_asm_unary(&r.as, VTPU_UNARY_GELU, rig_f32(&r, 2, 3000),
		       rig_f32(&r, 2, 3000));
	vtpu_asm_trace(&r.as, 13);
	check_resume(_metadata, &r);

	run(_metadata, &r, 1, 1, &res);
	ASSERT_EQ(4, res.ntrace);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(10 + i, res.trace[i]);
	result_free(&res);
	rig_fini(&r);
}

/*
 * Resuming an instruction counts as one of a call's max_insns; e->pc and
 * e->insns stay on it until it completes.
 */
TEST(resumed_instruction_counts_toward_max_insns)
{
	struct vtpu_exec_binding bind = { NULL, 0 };
	struct vtpu_exec e;
	struct rig r;
	uint8_t *vmem;
	int steps = 0;

	rig_init(&r, 14);
	vtpu_asm_unary(&r.as, VTPU_UNARY_EXP, rig_f32(&r, 4, 4000),
		       rig_f32(&r, 4, 4000));
	vtpu_asm_fill_f32(&r.as, rig_f32(&r, 1, 1), 1);
	vtpu_asm_fill_f32(&r.as, rig_f32(&r, 1, 1), 2);
	ASSERT_EQ(0, rig_finish(&r));
	vmem = r.vmem0;
	bind.data = r.bind0;
	bind.size = BIND_SIZE;

	vtpu_exec_init(&e, &r.info, &bind, vmem);
	e.budget = 1000;
	ASSERT_EQ(0, vtpu_exec_step(&e, 2));
	ASSERT_EQ(0, e.pc);
	ASSERT_EQ(0, e.insns);
	ASSERT_GE(e.work, 1000);
	while (e.pc == 0) {
		ASSERT_EQ(0, vtpu_exec_step(&e, 1));
		ASSERT_EQ(e.pc, e.insns);
		steps++;
	}
	/* A piece a call: many calls, the last one completing the EXP. */
	EXPECT_GT(steps, 10);
	EXPECT_EQ(1, e.insns);

	/* Now unlimited: the EXP is done, so two calls of 2 finish. */
	vtpu_exec_init(&e, &r.info, &bind, vmem);
	e.budget = 1000;
	ASSERT_EQ(0, vtpu_exec_step(&e, 2));
	e.budget = UNLIMITED;
	ASSERT_EQ(0, vtpu_exec_step(&e, 2));
	EXPECT_EQ(2, e.insns);
	ASSERT_EQ(1, vtpu_exec_step(&e, 2));
	EXPECT_EQ(4, e.insns);
	rig_fini(&r);
}

TEST_HARNESS_MAIN
