// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the program validator accepts every well-formed program,
 * rejects each broken rule with its own reason, and never lets through a
 * program the executor cannot run safely.
 *
 * valid_*    one accepted program per opcode (and per notable form)
 * <rule>     a program that breaks exactly that rule: -EINVAL, the
 *            offending instruction and the reason
 * fuzz_*     mutants of valid programs; those accepted are executed on
 *            exactly sized buffers, so ASan/UBSan catch any access the
 *            validator should have refused (a mutant whose branches loop
 *            runs a bounded number of steps)
 * lanes_*    lanes (ISA version 3); scalar_*, sload_*, branch_*: the scalar
 *            unit and branches (ISA version 4)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vtpu_prog.h"
#include "vtpu_asm.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

/* The executor (driver/vtpu_exec.c) may not exist yet. */
#ifndef HAVE_EXECUTOR
#if __has_include("vtpu_exec.c")
#define HAVE_EXECUTOR 1
#else
#define HAVE_EXECUTOR 0
#endif
#endif
#if HAVE_EXECUTOR
#include "vtpu_exec.h"
#endif

#define CORE_VMEM	(64u << 10)
#define PROG_VMEM	8192u
#define NBINDINGS	3
#define BINDING_SIZE	4096u
#define NCONSTS		256	/* f32 constants */

static const struct vtpu_binding_desc bindings[NBINDINGS] = {
	{ BINDING_SIZE, VTPU_ACCESS_READ },
	{ BINDING_SIZE, VTPU_ACCESS_WRITE },
	{ BINDING_SIZE, VTPU_ACCESS_READ | VTPU_ACCESS_WRITE },
};

struct prog {
	uint8_t *buf;
	size_t size;
};

static struct vtpu_prog_header *hdr(struct prog *p)
{
	return (struct vtpu_prog_header *)p->buf;
}

static struct vtpu_insn *insn(struct prog *p, uint32_t i)
{
	return (struct vtpu_insn *)(p->buf + sizeof(struct vtpu_prog_header)) + i;
}

static void seal(struct prog *p)
{
	vtpu_asm_checksum(p->buf, p->size);
}

/* An assembler with the constants and op names every test program has. */
static void start(struct vtpu_asm *as)
{
	float c[NCONSTS];
	int i;

	for (i = 0; i < NCONSTS; i++)
		c[i] = (float)i * 0.5f - 3.0f;
	vtpu_asm_init(as, PROG_VMEM, NBINDINGS);
	vtpu_asm_const(as, c, sizeof(c));
	vtpu_asm_meta(as, "first");
	vtpu_asm_meta(as, "second");
}

static struct prog finish(struct vtpu_asm *as)
{
	struct prog p;

	p.buf = vtpu_asm_finish(as, &p.size);
	vtpu_asm_free(as);
	return p;
}

/* A program of @in followed by END. */
static struct prog prog1(struct vtpu_insn in)
{
	struct vtpu_asm as;

	start(&as);
	vtpu_asm_emit(&as, &in);
	vtpu_asm_end(&as);
	return finish(&as);
}

static int validate(const struct prog *p, struct vtpu_prog_info *info,
		    struct vtpu_prog_error *err)
{
	return vtpu_prog_validate(p->buf, p->size, bindings, NBINDINGS,
				  CORE_VMEM, info, err);
}

static struct vtpu_tile F(uint32_t addr, uint16_t rows, uint16_t cols)
{
	return vtpu_tile_f32(addr, rows, cols, cols);
}

static const struct vtpu_tile NONE;

static struct vtpu_insn op3(uint8_t op, uint8_t sub, uint16_t flags,
			    uint32_t imm, struct vtpu_tile d,
			    struct vtpu_tile a, struct vtpu_tile b)
{
	struct vtpu_insn in = {
		.op = op, .sub = sub, .flags = flags, .imm = imm,
		.t = { .d = d, .a = a, .b = b },
	};

	return in;
}

static struct vtpu_insn scalar(uint8_t op, uint8_t reg, uint32_t imm)
{
	return op3(op, reg, 0, imm, NONE, NONE, NONE);
}

static struct vtpu_insn dma(uint8_t op, struct vtpu_tile v, uint32_t binding,
			    uint64_t offset, uint32_t stride, uint8_t dtype)
{
	struct vtpu_insn in = {
		.op = op,
		.dma = { .v = v, .offset = offset, .binding = binding,
			 .stride = stride, .dtype = dtype },
	};

	return in;
}

/* Well-formed instructions the rule tests break one field of. */
static struct vtpu_insn unary(void)
{
	return op3(VTPU_OP_UNARY, VTPU_UNARY_EXP, 0, 0, F(0, 4, 4),
		   F(64, 4, 4), NONE);
}

static struct vtpu_insn binary(uint16_t flags, struct vtpu_tile b)
{
	return op3(VTPU_OP_BINARY, VTPU_BINARY_ADD, flags, 0, F(0, 4, 4),
		   F(64, 4, 4), b);
}

static struct vtpu_insn matmul(uint16_t flags)
{
	return op3(VTPU_OP_MATMUL, 0, flags, 0, F(0, 4, 8), F(256, 4, 2),
		   F(512, 2, 8));
}

static struct vtpu_insn load(void)
{
	return dma(VTPU_OP_DMA_LOAD, F(0, 4, 8), 0, 0, 32, VTPU_DT_F32);
}

static struct vtpu_insn store(void)
{
	return dma(VTPU_OP_DMA_STORE, F(0, 4, 8), 1, 0, 32, VTPU_DT_F32);
}

/* 4 rows of 8 f32 from a 128-row table in binding 0, indices at 4096. */
static struct vtpu_insn gather(void)
{
	struct vtpu_insn in = dma(VTPU_OP_DMA_GATHER, F(0, 4, 8), 0, 0, 32,
				  VTPU_DT_F32);

	in.dma.index = 4096;
	in.dma.rows = 128;
	return in;
}

#define EXPECT_VALID(p) do {						\
	struct vtpu_prog_error _e = { 0, NULL };			\
	int _ret = validate(&(p), NULL, &_e);				\
									\
	EXPECT_EQ(0, _ret) {						\
		TH_LOG("rejected at insn %d: %s", _e.insn, _e.why);	\
	}								\
} while (0)

#define EXPECT_REJECTED(p, at, reason) do {				\
	struct vtpu_prog_error _e = { 0, NULL };			\
	int _ret = validate(&(p), NULL, &_e);				\
									\
	EXPECT_EQ(-EINVAL, _ret);					\
	EXPECT_EQ(at, _e.insn);						\
	EXPECT_STREQ(reason, _e.why ? _e.why : "(null)");		\
} while (0)

/* Valid as built, then rejected for @reason once @field is set to @value. */
#define REJECT1(in, field, value, reason) do {				\
	struct vtpu_insn _in = (in);					\
	struct prog _p = prog1(_in);					\
									\
	EXPECT_VALID(_p);						\
	free(_p.buf);							\
	_in.field = (value);						\
	_p = prog1(_in);						\
	EXPECT_REJECTED(_p, 0, reason);					\
	free(_p.buf);							\
} while (0)

/* A one-instruction program that must be accepted. */
#define VALID1(in) do {							\
	struct prog _p = prog1(in);					\
									\
	EXPECT_VALID(_p);						\
	free(_p.buf);							\
} while (0)

/* A one-instruction program that must be rejected at instruction 0. */
#define REJECT_AS_IS(in, reason) do {					\
	struct prog _p = prog1(in);					\
									\
	EXPECT_REJECTED(_p, 0, reason);					\
	free(_p.buf);							\
} while (0)

/* Header rules: the valid END-only program with one header field changed. */
#define REJECT_HDR(field, value, reason) do {				\
	struct prog _p = prog1(op3(VTPU_OP_TRACE, 0, 0, 0, NONE, NONE,	\
				   NONE));				\
									\
	EXPECT_VALID(_p);						\
	hdr(&_p)->field = (value);					\
	seal(&_p);							\
	EXPECT_REJECTED(_p, -1, reason);				\
	free(_p.buf);							\
} while (0)

/* ---- CRC ---------------------------------------------------------- */

TEST(crc32_matches_zlib)
{
	uint8_t bytes[768];
	int i;

	for (i = 0; i < (int)sizeof(bytes); i++)
		bytes[i] = (uint8_t)i;
	/* Values from Python's zlib.crc32(). */
	EXPECT_EQ(0xcbf43926u, vtpu_prog_crc32("123456789", 9));
	EXPECT_EQ(0u, vtpu_prog_crc32("", 0));
	EXPECT_EQ(0xb0c0df2au, vtpu_prog_crc32(bytes, sizeof(bytes)));
	EXPECT_EQ(vtpu_asm_crc32(0, bytes, 100), vtpu_prog_crc32(bytes, 100));
}

/* ---- (a) valid programs -------------------------------------------- */

TEST(valid_end_only)
{
	struct vtpu_asm as;
	struct vtpu_prog_info info;
	struct prog p;

	vtpu_asm_init(&as, 0, 0);
	vtpu_asm_end(&as);
	p = finish(&as);
	ASSERT_EQ(0, vtpu_prog_validate(p.buf, p.size, NULL, 0, 0, &info,
					NULL));
	EXPECT_EQ(1u, info.insn_count);
	EXPECT_EQ(0u, info.meta_size);
	EXPECT_EQ(0u, info.flops);
	free(p.buf);
}

TEST(valid_trace)
{
	VALID1(op3(VTPU_OP_TRACE, 0, 0, 1, NONE, NONE, NONE));
}

TEST(valid_trace_without_metadata_any_id)
{
	struct vtpu_asm as;
	struct prog p;

	vtpu_asm_init(&as, PROG_VMEM, NBINDINGS);
	vtpu_asm_trace(&as, 12345);
	vtpu_asm_end(&as);
	p = finish(&as);
	EXPECT_VALID(p);
	free(p.buf);
}

TEST(valid_dma_load)
{
	VALID1(load());
	/* Exactly to the end of the binding, converting f32 -> bf16. */
	VALID1(dma(VTPU_OP_DMA_LOAD, vtpu_tile_bf16(0, 2, 8, 8), 0,
		   BINDING_SIZE - 64 - 32, 64, VTPU_DT_F32));
	/* From the constants, one row with a stride smaller than the row. */
	VALID1(dma(VTPU_OP_DMA_LOAD, F(0, 1, NCONSTS), VTPU_BINDING_CONSTANTS,
		   0, 0, VTPU_DT_F32));
	VALID1(dma(VTPU_OP_DMA_LOAD, vtpu_tile_s32(0, 4, 4, 4), 2, 0, 16,
		   VTPU_DT_S32));
}

TEST(valid_dma_store)
{
	VALID1(store());
	VALID1(dma(VTPU_OP_DMA_STORE, vtpu_tile_bf16(0, 4, 8, 8), 2, 0, 16,
		   VTPU_DT_BF16));
	VALID1(dma(VTPU_OP_DMA_STORE, F(0, 4, 8), 2, 8, 64, VTPU_DT_BF16));
}

TEST(valid_matmul)
{
	VALID1(matmul(0));
	VALID1(matmul(VTPU_F_ACC));
	/* op(a) 4x2 from a 2x4, op(b) 2x8 from an 8x2. */
	VALID1(op3(VTPU_OP_MATMUL, 0, VTPU_F_TRANS_A | VTPU_F_TRANS_B, 0,
		   F(0, 4, 8), F(256, 2, 4), F(512, 8, 2)));
	VALID1(op3(VTPU_OP_MATMUL, 0, 0, 0, F(0, 4, 8),
		   vtpu_tile_bf16(256, 4, 2, 2), vtpu_tile_bf16(512, 2, 8, 8)));
	/* a and b may be the same tile. */
	VALID1(op3(VTPU_OP_MATMUL, 0, 0, 0, F(0, 4, 4), F(256, 4, 4),
		   F(256, 4, 4)));
}

TEST(valid_unary)
{
	int f;

	for (f = 0; f < VTPU_UNARY_NR; f++)
		VALID1(op3(VTPU_OP_UNARY, f, 0, 0, F(0, 4, 4), F(64, 4, 4),
			   NONE));
}

TEST(valid_binary)
{
	int f;

	for (f = 0; f < VTPU_BINARY_NR; f++)
		VALID1(op3(VTPU_OP_BINARY, f, 0, 0, F(0, 4, 4), F(64, 4, 4),
			   F(128, 4, 4)));
	VALID1(binary(VTPU_F_BCAST_SCALAR, F(128, 1, 1)));
	VALID1(binary(VTPU_F_BCAST_ROW, F(128, 1, 4)));
	VALID1(binary(VTPU_F_BCAST_COL, F(128, 4, 1)));
	VALID1(op3(VTPU_OP_BINARY, VTPU_BINARY_MUL, VTPU_F_BCAST_IMM,
		   vtpu_f32_bits(2.0f), F(0, 4, 4), F(64, 4, 4), NONE));
}

TEST(valid_cmp)
{
	int f;

	for (f = 0; f < VTPU_CMP_NR; f++)
		VALID1(op3(VTPU_OP_CMP, f, 0, 0, F(0, 4, 4), F(64, 4, 4),
			   F(128, 4, 4)));
	VALID1(op3(VTPU_OP_CMP, VTPU_CMP_GT, VTPU_F_BCAST_IMM,
		   vtpu_f32_bits(0.5f), F(0, 4, 4), F(64, 4, 4), NONE));
}

TEST(valid_select)
{
	VALID1(op3(VTPU_OP_SELECT, 0, 0, 0, F(0, 4, 4), F(64, 4, 4),
		   F(128, 4, 4)));
	VALID1(op3(VTPU_OP_SELECT, 0, VTPU_F_BCAST_ROW, 0, F(0, 4, 4),
		   F(64, 4, 4), F(128, 1, 4)));
	VALID1(op3(VTPU_OP_SELECT, 0, VTPU_F_BCAST_IMM, vtpu_f32_bits(1.0f),
		   F(0, 4, 4), F(64, 4, 4), NONE));
}

TEST(valid_reduce)
{
	int f;

	for (f = 0; f < VTPU_REDUCE_NR; f++) {
		VALID1(op3(VTPU_OP_REDUCE, f, VTPU_F_AXIS_COLS, 0,
			   F(0, 4, 1), F(64, 4, 8), NONE));
		VALID1(op3(VTPU_OP_REDUCE, f, VTPU_F_AXIS_ROWS | VTPU_F_ACC, 0,
			   F(0, 1, 8), F(64, 4, 8), NONE));
	}
}

TEST(valid_fill)
{
	VALID1(op3(VTPU_OP_FILL, 0, 0, vtpu_f32_bits(1.5f), F(0, 4, 4), NONE,
		   NONE));
	VALID1(op3(VTPU_OP_FILL, 0, 0, 7, vtpu_tile_s32(0, 4, 4, 4), NONE,
		   NONE));
	VALID1(op3(VTPU_OP_FILL, 0, 0, vtpu_f32_bits(-2.0f),
		   vtpu_tile_bf16(2, 3, 3, 5), NONE, NONE));
}

TEST(valid_iota)
{
	VALID1(op3(VTPU_OP_IOTA, 0, 0, (uint32_t)-3, F(0, 4, 4), NONE, NONE));
	VALID1(op3(VTPU_OP_IOTA, 0, VTPU_F_AXIS_ROWS, 0,
		   vtpu_tile_s32(0, 4, 4, 4), NONE, NONE));
}

TEST(valid_convert)
{
	VALID1(op3(VTPU_OP_CONVERT, 0, 0, 0, vtpu_tile_s32(0, 4, 4, 4),
		   F(64, 4, 4), NONE));
	VALID1(op3(VTPU_OP_CONVERT, 0, 0, 0, vtpu_tile_bf16(0, 4, 4, 4),
		   F(64, 4, 4), NONE));
	/* In place between types of the same size. */
	VALID1(op3(VTPU_OP_CONVERT, 0, 0, 0, vtpu_tile_s32(64, 4, 4, 4),
		   F(64, 4, 4), NONE));
}

TEST(valid_transpose)
{
	VALID1(op3(VTPU_OP_TRANSPOSE, 0, 0, 0, F(0, 8, 4), F(128, 4, 8),
		   NONE));
	VALID1(op3(VTPU_OP_TRANSPOSE, 0, 0, 0, vtpu_tile_bf16(0, 8, 4, 4),
		   vtpu_tile_bf16(128, 4, 8, 8), NONE));
}

TEST(valid_in_place_elementwise)
{
	VALID1(op3(VTPU_OP_UNARY, VTPU_UNARY_RELU, 0, 0, F(0, 4, 4),
		   F(0, 4, 4), NONE));
	VALID1(op3(VTPU_OP_BINARY, VTPU_BINARY_ADD, 0, 0, F(0, 4, 4),
		   F(64, 4, 4), F(0, 4, 4)));
	VALID1(op3(VTPU_OP_SELECT, 0, 0, 0, F(0, 4, 4), F(0, 4, 4),
		   F(64, 4, 4)));
}

/* Column blocks of one 4x16 matrix interleave but share no byte. */
TEST(valid_interleaved_column_blocks)
{
	struct vtpu_tile left = vtpu_tile_f32(0, 4, 8, 16);
	struct vtpu_tile right = vtpu_tile_f32(32, 4, 8, 16);

	VALID1(op3(VTPU_OP_UNARY, VTPU_UNARY_NEG, 0, 0, left, right, NONE));
	VALID1(op3(VTPU_OP_MATMUL, 0, 0, 0, vtpu_tile_f32(0, 4, 4, 16),
		   vtpu_tile_f32(16, 4, 4, 16), vtpu_tile_f32(32, 4, 4, 16)));
	/* One row against a strided tile, landing in its gap. */
	VALID1(op3(VTPU_OP_TRANSPOSE, 0, 0, 0, vtpu_tile_f32(32, 1, 4, 4),
		   vtpu_tile_f32(0, 4, 1, 16), NONE));
}

TEST(valid_program_info)
{
	struct vtpu_prog_info info;
	struct vtpu_asm as;
	struct prog p;

	start(&as);
	vtpu_asm_trace(&as, 0);
	vtpu_asm_dma_load(&as, vtpu_tile_bf16(256, 2, 8, 8), 0, 0, 32,
			  VTPU_DT_F32);
	vtpu_asm_op(&as, VTPU_OP_MATMUL, 0, 0, 0, F(0, 4, 8), F(512, 4, 2),
		    vtpu_tile_bf16(256, 2, 8, 8));
	vtpu_asm_reduce(&as, VTPU_REDUCE_SUM, F(1024, 4, 1), F(0, 4, 8),
			VTPU_F_AXIS_COLS);
	vtpu_asm_dma_store(&as, F(0, 4, 8), 1, 0, 32, VTPU_DT_F32);
	vtpu_asm_trace(&as, 1);
	vtpu_asm_end(&as);
	p = finish(&as);
	ASSERT_EQ(0, validate(&p, &info, NULL));
	EXPECT_EQ((void *)p.buf, (void *)info.hdr);
	EXPECT_EQ((void *)insn(&p, 0), (void *)info.code);
	EXPECT_EQ((void *)(p.buf + 64 + 7 * 64), (void *)info.consts);
	EXPECT_EQ(0, memcmp(info.meta, "first\0second\0", 13));
	EXPECT_EQ(7u, info.insn_count);
	EXPECT_EQ(NCONSTS * 4u, info.const_size);
	EXPECT_EQ(13u, info.meta_size);
	EXPECT_EQ(PROG_VMEM, info.vmem_size);
	EXPECT_EQ((uint32_t)NBINDINGS, info.binding_count);
	EXPECT_EQ(2u, info.trace_count);
	EXPECT_EQ(2u * 4 * 8 * 2 + 4 * 8, info.flops);
	EXPECT_EQ(2u * 8 * 4 + 4 * 8 * 4, info.dma_bytes);
	free(p.buf);
}

/* ---- (b) one test per rule: the header and sections -------------- */

TEST(program_smaller_than_header)
{
	struct prog p = prog1(unary());
	struct vtpu_prog_error e = { 0, NULL };

	EXPECT_EQ(-EINVAL, vtpu_prog_validate(NULL, 0, bindings, NBINDINGS,
					      CORE_VMEM, NULL, &e));
	EXPECT_STREQ("program smaller than its header", e.why);
	EXPECT_EQ(-1, e.insn);
	p.size = sizeof(struct vtpu_prog_header) - 1;
	EXPECT_REJECTED(p, -1, "program smaller than its header");
	free(p.buf);
}

TEST(program_buffer_misaligned)
{
	struct prog p = prog1(unary());
	uint8_t *copy = malloc(p.size + 4);
	struct prog q = { copy + 4, p.size };

	ASSERT_NE(NULL, copy);
	memcpy(q.buf, p.buf, p.size);
	EXPECT_REJECTED(q, -1, "program buffer misaligned");
	free(copy);
	free(p.buf);
}

TEST(bad_magic)
{
	REJECT_HDR(magic, 0x56545055, "bad magic");
}

TEST(unsupported_format_version)
{
	REJECT_HDR(format_version, VTPU_PROG_FORMAT_VERSION + 1,
		   "unsupported format version");
}

TEST(unsupported_isa_version)
{
	REJECT_HDR(isa_version, VTPU_ISA_VERSION + 1, "unsupported ISA version");
}

TEST(bad_header_size)
{
	REJECT_HDR(header_size, sizeof(struct vtpu_prog_header) + 64,
		   "bad header size");
}

TEST(instruction_count_zero)
{
	REJECT_HDR(insn_count, 0, "instruction count out of range");
}

TEST(instruction_count_above_limit)
{
	REJECT_HDR(insn_count, VTPU_MAX_INSNS + 1,
		   "instruction count out of range");
}

TEST(code_size_mismatch)
{
	REJECT_HDR(code_size, 3 * sizeof(struct vtpu_insn),
		   "code size does not match instruction count");
}

TEST(constants_section_too_large)
{
	REJECT_HDR(const_size, VTPU_MAX_CONST_SIZE + 1,
		   "constants section too large");
}

TEST(metadata_section_too_large)
{
	REJECT_HDR(meta_size, VTPU_MAX_META_SIZE + 1,
		   "metadata section too large");
}

TEST(program_size_mismatch)
{
	struct prog p = prog1(unary());
	uint8_t *longer = calloc(1, p.size + 1);
	struct prog q = { longer, p.size + 1 };

	ASSERT_NE(NULL, longer);
	memcpy(longer, p.buf, p.size);
	seal(&q);
	EXPECT_REJECTED(q, -1, "program size does not match its sections");
	hdr(&q)->meta_size += 1;	/* an empty string at the end */
	seal(&q);
	EXPECT_VALID(q);
	p.size -= 1;
	seal(&p);
	EXPECT_REJECTED(p, -1, "program size does not match its sections");
	free(longer);
	free(p.buf);
}

TEST(checksum_mismatch)
{
	struct prog p = prog1(unary());

	insn(&p, 0)->t.a.addr += 4;
	EXPECT_REJECTED(p, -1, "checksum mismatch");
	seal(&p);
	EXPECT_VALID(p);
	free(p.buf);
}

TEST(header_flags_not_zero)
{
	REJECT_HDR(flags, 1, "header flags not zero");
}

TEST(header_reserved_not_zero)
{
	REJECT_HDR(reserved[3], 1, "header reserved not zero");
}

TEST(program_vmem_exceeds_core)
{
	REJECT_HDR(vmem_size, CORE_VMEM + 1,
		   "program needs more vmem than the core has");
}

TEST(too_many_bindings)
{
	static struct vtpu_binding_desc many[VTPU_MAX_BINDINGS + 1];
	struct vtpu_prog_error e = { 0, NULL };
	struct vtpu_asm as;
	struct prog p;

	vtpu_asm_init(&as, 0, VTPU_MAX_BINDINGS);
	vtpu_asm_end(&as);
	p = finish(&as);
	EXPECT_EQ(0, vtpu_prog_validate(p.buf, p.size, many,
					VTPU_MAX_BINDINGS, 0, NULL, &e));
	hdr(&p)->binding_count = VTPU_MAX_BINDINGS + 1;
	seal(&p);
	EXPECT_EQ(-EINVAL, vtpu_prog_validate(p.buf, p.size, many,
					      VTPU_MAX_BINDINGS + 1, 0, NULL,
					      &e));
	EXPECT_STREQ("too many bindings", e.why);
	free(p.buf);
}

TEST(binding_count_mismatch)
{
	REJECT_HDR(binding_count, NBINDINGS - 1, "binding count mismatch");
}

TEST(metadata_not_nul_terminated)
{
	struct prog p = prog1(unary());

	p.buf[p.size - 1] = 'x';
	seal(&p);
	EXPECT_REJECTED(p, -1, "metadata not NUL-terminated");
	free(p.buf);
}

/* ---- (b) instruction encoding -------------------------------------- */

TEST(unknown_opcode)
{
	REJECT1(unary(), op, 0x00, "unknown opcode");
	REJECT1(unary(), op, VTPU_OP_NR, "unknown opcode");
	REJECT1(unary(), op, 0xff, "unknown opcode");
}

TEST(invalid_function_selector)
{
	REJECT1(unary(), sub, VTPU_UNARY_NR, "invalid function selector");
	REJECT1(binary(0, F(128, 4, 4)), sub, VTPU_BINARY_NR,
		"invalid function selector");
	REJECT1(op3(VTPU_OP_CMP, 0, 0, 0, F(0, 4, 4), F(64, 4, 4),
		    F(128, 4, 4)), sub, VTPU_CMP_NR,
		"invalid function selector");
	REJECT1(op3(VTPU_OP_REDUCE, 0, VTPU_F_AXIS_COLS, 0, F(0, 4, 1),
		    F(64, 4, 4), NONE), sub, VTPU_REDUCE_NR,
		"invalid function selector");
	/* Opcodes without functions take sub 0 only. */
	REJECT1(matmul(0), sub, 1, "invalid function selector");
	REJECT1(load(), sub, 1, "invalid function selector");
}

TEST(flag_not_allowed_for_opcode)
{
	REJECT1(unary(), flags, VTPU_F_ACC, "flag not allowed for this opcode");
	REJECT1(matmul(0), flags, VTPU_F_BCAST_ROW,
		"flag not allowed for this opcode");
	REJECT1(binary(0, F(128, 4, 4)), flags, VTPU_F_ACC,
		"flag not allowed for this opcode");
	REJECT1(load(), flags, 0x8000, "flag not allowed for this opcode");
	REJECT1(op3(VTPU_OP_IOTA, 0, 0, 0, F(0, 4, 4), NONE, NONE), flags,
		VTPU_F_AXIS_COLS, "flag not allowed for this opcode");
}

TEST(invalid_broadcast_mode)
{
	REJECT1(binary(0, F(128, 4, 4)), flags, 0x0050,
		"invalid broadcast mode");
	REJECT1(binary(0, F(128, 4, 4)), flags, 0x0070,
		"invalid broadcast mode");
}

TEST(reduce_needs_exactly_one_axis_flag)
{
	struct vtpu_insn in = op3(VTPU_OP_REDUCE, VTPU_REDUCE_SUM,
				  VTPU_F_AXIS_COLS, 0, F(0, 4, 1),
				  F(64, 4, 4), NONE);

	REJECT1(in, flags, 0, "reduce needs exactly one axis flag");
	REJECT1(in, flags, VTPU_F_ACC, "reduce needs exactly one axis flag");
	REJECT1(in, flags, VTPU_F_AXIS_COLS | VTPU_F_AXIS_ROWS,
		"reduce needs exactly one axis flag");
}

TEST(unused_immediate_not_zero)
{
	REJECT1(unary(), imm, 1, "unused immediate not zero");
	REJECT1(binary(VTPU_F_BCAST_SCALAR, F(128, 1, 1)), imm, 1,
		"unused immediate not zero");
	REJECT1(matmul(0), imm, 1, "unused immediate not zero");
	REJECT1(store(), imm, 1, "unused immediate not zero");
}

TEST(instruction_reserved_not_zero)
{
	REJECT1(unary(), reserved, 1, "instruction reserved not zero");
	REJECT1(load(), reserved, 1ull << 63, "instruction reserved not zero");
}

TEST(unused_operand_not_zero)
{
	REJECT1(unary(), t.b.dtype, VTPU_DT_F32, "unused operand not zero");
	REJECT1(unary(), t.b.pad[2], 1, "unused operand not zero");
	REJECT1(op3(VTPU_OP_FILL, 0, 0, 0, F(0, 4, 4), NONE, NONE), t.a.rows,
		1, "unused operand not zero");
	/* BCAST_IMM takes b from the immediate: operand b is unused. */
	REJECT1(op3(VTPU_OP_BINARY, 0, VTPU_F_BCAST_IMM, 0, F(0, 4, 4),
		    F(64, 4, 4), NONE), t.b.addr, 128, "unused operand not zero");
	REJECT1(op3(VTPU_OP_TRACE, 0, 0, 0, NONE, NONE, NONE), t.d.cols, 1,
		"unused operand not zero");
}

/* ---- (b) tiles ------------------------------------------------------ */

TEST(tile_has_zero_rows)
{
	REJECT1(unary(), t.a.rows, 0, "tile has zero rows");
	REJECT1(load(), dma.v.rows, 0, "tile has zero rows");
}

TEST(tile_has_zero_columns)
{
	REJECT1(unary(), t.d.cols, 0, "tile has zero columns");
}

TEST(tile_stride_less_than_columns)
{
	REJECT1(unary(), t.a.stride, 3, "tile stride less than its columns");
	REJECT1(load(), dma.v.stride, 7, "tile stride less than its columns");
}

TEST(invalid_tile_dtype)
{
	REJECT1(op3(VTPU_OP_FILL, 0, 0, 0, F(0, 4, 4), NONE, NONE), t.d.dtype,
		0, "invalid tile dtype");
	REJECT1(op3(VTPU_OP_FILL, 0, 0, 0, F(0, 4, 4), NONE, NONE), t.d.dtype,
		VTPU_DT_S32 + 1, "invalid tile dtype");
}

TEST(tile_dtype_not_allowed_for_operand)
{
	REJECT1(unary(), t.a.dtype, VTPU_DT_S32,
		"tile dtype not allowed for this operand");
	REJECT1(unary(), t.d.dtype, VTPU_DT_BF16,
		"tile dtype not allowed for this operand");
	REJECT1(matmul(0), t.d.dtype, VTPU_DT_BF16,
		"tile dtype not allowed for this operand");
	REJECT1(matmul(0), t.b.dtype, VTPU_DT_S32,
		"tile dtype not allowed for this operand");
	REJECT1(op3(VTPU_OP_SELECT, 0, 0, 0, F(0, 4, 4), F(64, 4, 4),
		    F(128, 4, 4)), t.d.dtype, VTPU_DT_S32,
		"tile dtype not allowed for this operand");
}

TEST(tile_address_misaligned)
{
	REJECT1(unary(), t.a.addr, 66, "tile address misaligned");
	REJECT1(op3(VTPU_OP_FILL, 0, 0, 0, vtpu_tile_bf16(0, 4, 4, 4), NONE,
		    NONE), t.d.addr, 3, "tile address misaligned");
}

TEST(tile_pad_not_zero)
{
	REJECT1(unary(), t.a.pad[0], 1, "tile pad not zero");
	REJECT1(load(), dma.v.pad[1], 1, "tile pad not zero");
}

TEST(tile_exceeds_vmem)
{
	/* 4 rows of 4 f32 ending exactly at PROG_VMEM are fine... */
	VALID1(op3(VTPU_OP_UNARY, 0, 0, 0, F(PROG_VMEM - 64, 4, 4),
		   F(0, 4, 4), NONE));
	/* ...one element further is not. */
	REJECT1(unary(), t.d.addr, PROG_VMEM - 60, "tile exceeds vmem");
	REJECT1(unary(), t.a.stride, 0xffffffffu, "tile exceeds vmem");
	/* The largest extent the fields can express does not wrap. */
	REJECT_AS_IS(op3(VTPU_OP_FILL, 0, 0, 0,
			 vtpu_tile_f32(0xfffffffcu, 0xffff, 0xffff, 0xffffffffu),
			 NONE, NONE), "tile exceeds vmem");
	REJECT1(load(), dma.v.addr, PROG_VMEM, "tile exceeds vmem");
}

/* ---- (b) shapes ---------------------------------------------------- */

TEST(matmul_inner_dimensions_differ)
{
	REJECT1(matmul(0), t.b.rows, 3, "matmul inner dimensions differ");
	/* Transposing one side only breaks the 4x2 . 2x8 agreement. */
	REJECT1(matmul(0), flags, VTPU_F_TRANS_B,
		"matmul inner dimensions differ");
}

TEST(matmul_output_shape_mismatch)
{
	REJECT1(matmul(0), t.d.cols, 7, "matmul output shape mismatch");
	REJECT1(matmul(0), t.d.rows, 2, "matmul output shape mismatch");
}

TEST(source_shape_differs_from_destination)
{
	REJECT1(unary(), t.a.rows, 3, "source shape differs from destination");
	REJECT1(binary(0, F(128, 4, 4)), t.a.cols, 2,
		"source shape differs from destination");
	REJECT1(op3(VTPU_OP_CONVERT, 0, 0, 0, vtpu_tile_s32(0, 4, 4, 4),
		    F(64, 4, 4), NONE), t.a.rows, 2,
		"source shape differs from destination");
}

TEST(broadcast_operand_shape_mismatch)
{
	REJECT1(binary(0, F(128, 4, 4)), t.b.cols, 3,
		"broadcast operand shape mismatch");
	REJECT1(binary(VTPU_F_BCAST_SCALAR, F(128, 1, 1)), t.b.rows, 2,
		"broadcast operand shape mismatch");
	REJECT1(binary(VTPU_F_BCAST_ROW, F(128, 1, 4)), t.b.cols, 1,
		"broadcast operand shape mismatch");
	REJECT1(binary(VTPU_F_BCAST_COL, F(128, 4, 1)), t.b.rows, 1,
		"broadcast operand shape mismatch");
	REJECT1(binary(VTPU_F_BCAST_ROW, F(128, 1, 4)), flags,
		VTPU_F_BCAST_COL, "broadcast operand shape mismatch");
}

TEST(reduce_output_shape_mismatch)
{
	struct vtpu_insn in = op3(VTPU_OP_REDUCE, VTPU_REDUCE_MAX,
				  VTPU_F_AXIS_COLS, 0, F(0, 4, 1),
				  F(64, 4, 8), NONE);

	REJECT1(in, t.d.rows, 1, "reduce output shape mismatch");
	REJECT1(in, flags, VTPU_F_AXIS_ROWS, "reduce output shape mismatch");
}

TEST(transpose_shape_mismatch)
{
	REJECT1(op3(VTPU_OP_TRANSPOSE, 0, 0, 0, F(0, 8, 4), F(128, 4, 8),
		    NONE), t.d.rows, 4, "transpose shape mismatch");
}

TEST(transpose_changes_dtype)
{
	REJECT1(op3(VTPU_OP_TRANSPOSE, 0, 0, 0, F(0, 8, 4), F(128, 4, 8),
		    NONE), t.d.dtype, VTPU_DT_S32, "transpose changes dtype");
}

/* ---- (b) aliasing -------------------------------------------------- */

TEST(destination_partially_overlaps_a_source)
{
	REJECT1(unary(), t.a.addr, 60, "destination partially overlaps a source");
	/* Same bytes, different shape. */
	REJECT1(op3(VTPU_OP_UNARY, 0, 0, 0, F(0, 4, 4), F(0, 4, 4), NONE),
		t.a.stride, 5, "destination partially overlaps a source");
	/* A broadcast row inside the destination. */
	REJECT1(binary(VTPU_F_BCAST_ROW, F(128, 1, 4)), t.b.addr, 16,
		"destination partially overlaps a source");
	/* Converting in place between sizes is a partial overlap. */
	REJECT1(op3(VTPU_OP_CONVERT, 0, 0, 0, vtpu_tile_bf16(0, 4, 4, 4),
		    F(64, 4, 4), NONE), t.d.addr, 64,
		"destination partially overlaps a source");
	/* Interleaved rows with different strides count as overlapping. */
	REJECT1(op3(VTPU_OP_UNARY, 0, 0, 0, vtpu_tile_f32(0, 4, 4, 16),
		    vtpu_tile_f32(256, 4, 4, 8), NONE), t.a.addr, 16,
		"destination partially overlaps a source");
}

TEST(destination_overlaps_a_source)
{
	/* MATMUL: even the exact alias is refused. */
	REJECT1(op3(VTPU_OP_MATMUL, 0, 0, 0, F(0, 4, 4), F(64, 4, 4),
		    F(128, 4, 4)), t.a.addr, 0, "destination overlaps a source");
	REJECT1(matmul(0), t.b.addr, 124, "destination overlaps a source");
	REJECT1(op3(VTPU_OP_REDUCE, 0, VTPU_F_AXIS_COLS, 0, F(0, 4, 1),
		    F(64, 4, 4), NONE), t.d.addr, 124,
		"destination overlaps a source");
	REJECT1(op3(VTPU_OP_TRANSPOSE, 0, 0, 0, F(0, 4, 4), F(64, 4, 4),
		    NONE), t.d.addr, 64, "destination overlaps a source");
}

static bool bytes_overlap(struct vtpu_tile x, struct vtpu_tile y)
{
	uint8_t used[PROG_VMEM] = { 0 };
	uint32_t r, i;

	for (r = 0; r < x.rows; r++)
		for (i = 0; i < x.cols * 4u; i++)
			used[x.addr + r * x.stride * 4 + i] = 1;
	for (r = 0; r < y.rows; r++)
		for (i = 0; i < y.cols * 4u; i++)
			if (used[y.addr + r * y.stride * 4 + i])
				return true;
	return false;
}

/* The row-lattice overlap test against a byte map, on random tiles. */
TEST(aliasing_matches_byte_overlap)
{
	uint32_t n, refused_disjoint = 0;

	srand(1);
	for (n = 0; n < 4000; n++) {
		uint16_t rows = 1 + rand() % 4, cols = 1 + rand() % 4;
		struct vtpu_tile d = vtpu_tile_f32(4 * (rand() % 32), rows, cols,
						   cols + rand() % 5);
		struct vtpu_tile a = vtpu_tile_f32(4 * (rand() % 32), rows, cols,
						   rand() % 2 ? d.stride :
						   (uint32_t)(cols + rand() % 5));
		struct vtpu_tile at = vtpu_tile_f32(a.addr, cols, rows,
						    rows + rand() % 5);
		bool same = !memcmp(&d, &a, sizeof(d));
		bool overlap = bytes_overlap(d, a);
		struct prog p = prog1(op3(VTPU_OP_UNARY, 0, 0, 0, d, a, NONE));
		struct prog q = prog1(op3(VTPU_OP_TRANSPOSE, 0, 0, 0, d, at,
					  NONE));
		int ret = validate(&p, NULL, NULL);

		if (same || !overlap) {
			/* Refused only for different strides, both multi-row. */
			if (ret) {
				EXPECT_TRUE(d.stride != a.stride && rows > 1);
				refused_disjoint++;
			}
		} else {
			EXPECT_EQ(-EINVAL, ret);
		}
		ret = validate(&q, NULL, NULL);
		if (bytes_overlap(d, at)) {
			EXPECT_EQ(-EINVAL, ret);
		} else if (ret) {
			EXPECT_TRUE(d.stride != at.stride && rows > 1 && cols > 1);
		}
		free(p.buf);
		free(q.buf);
	}
	TH_LOG("%u byte-disjoint pairs refused as interleaved", refused_disjoint);
}

/* ---- (b) DMA ------------------------------------------------------- */

TEST(dma_pad_not_zero)
{
	REJECT1(load(), dma.pad[2], 1, "dma pad not zero");
	REJECT1(gather(), dma.pad[0], 1, "dma pad not zero");
}

/* load() and store() with an element step of @step, rows @stride apart. */
static struct vtpu_insn stepped(bool st, uint32_t step, uint32_t stride)
{
	struct vtpu_insn in = st ? store() : load();

	in.dma.step = step;
	in.dma.stride = stride;
	return in;
}

/* @in from binding byte @offset, or its first row only (@rows 1). */
static struct vtpu_insn dma_at(struct vtpu_insn in, uint64_t offset,
			       uint16_t rows)
{
	in.dma.offset = offset;
	in.dma.v.rows = rows;
	return in;
}

/*
 * The element step (ISA version 6): a row of 8 f32 at step s spans
 * 7 s + 1 elements, which the stride and the binding must hold; at most
 * VTPU_MAX_DMA_STEP; not for gathers, nor before version 6.
 */
TEST(dma_step_extent_limit_and_isa_version)
{
	uint32_t v;

	VALID1(stepped(false, 1, 32));
	VALID1(stepped(false, 2, 60));
	VALID1(stepped(true, 3, 88));
	REJECT1(stepped(false, 2, 64), dma.stride, 56,
		"dma stride less than a row");
	/* 4 rows: 3 * 60 + 60 = 240 bytes; the last byte at the end */
	REJECT1(stepped(false, 2, 60), dma.offset, BINDING_SIZE - 240 + 4,
		"binding extent out of range");
	VALID1(dma_at(stepped(false, 2, 60), BINDING_SIZE - 240, 4));
	/* one row at the largest step: 7 * 64 + 1 = 449 f32 */
	REJECT1(dma_at(stepped(true, VTPU_MAX_DMA_STEP, 0), 0, 1), dma.step,
		VTPU_MAX_DMA_STEP + 1, "dma step out of range");
	REJECT1(load(), dma.step, 0xffffffffu, "dma step out of range");
	REJECT1(gather(), dma.step, 1, "gather has no step");
	for (v = VTPU_ISA_VERSION_MIN; v < 6; v++) {
		struct prog p = prog1(stepped(false, 2, 60));

		hdr(&p)->isa_version = v;
		seal(&p);
		EXPECT_REJECTED(p, 0, "dma step needs ISA version 6");
		free(p.buf);
		p = prog1(stepped(false, 0, 60));
		hdr(&p)->isa_version = v;
		seal(&p);
		EXPECT_VALID(p);
		free(p.buf);
	}
}

TEST(dma_index_fields_only_for_gather)
{
	REJECT1(load(), dma.index, 4, "dma index or rows not zero");
	REJECT1(store(), dma.rows, 1, "dma index or rows not zero");
	REJECT1(load(), flags, VTPU_F_INDEX_WRAP,
		"flag not allowed for this opcode");
	VALID1(gather());
}

/* ---- (b') DMA_GATHER ----------------------------------------------- */

TEST(gather_table_must_fit_the_binding)
{
	/* 4 rows of 8 f32 from a 128-row table: 128 * 32 = 4096 bytes */
	REJECT1(gather(), dma.rows, 129, "binding extent out of range");
	REJECT1(gather(), dma.offset, 4, "binding extent out of range");
	REJECT1(gather(), dma.rows, 0, "gather table has no rows");
	REJECT1(gather(), dma.stride, 16, "dma stride less than a row");
	/* a one-row table may overlap itself: rows at the same offset */
	{
		struct vtpu_insn in = gather();

		in.dma.rows = 1;
		in.dma.stride = 0;
		VALID1(in);
	}
}

TEST(gather_indices_inside_vmem_aligned_not_overlapping)
{
	REJECT1(gather(), dma.index, PROG_VMEM - 8, "tile exceeds vmem");
	REJECT1(gather(), dma.index, 4098, "tile address misaligned");
	/* the destination is [0, 128): indices at 120 overlap it */
	REJECT1(gather(), dma.index, 120,
		"gather indices overlap the destination");
}

TEST(gather_checks_rights_and_isa_version)
{
	REJECT1(gather(), dma.binding, 1, "binding not readable");
	REJECT1(gather(), dma.binding, NBINDINGS, "binding index out of range");
	{
		struct prog p = prog1(gather());

		hdr(&p)->isa_version = 1;
		seal(&p);
		EXPECT_REJECTED(p, 0, "gather needs ISA version 2");
		free(p.buf);
	}
	/* a version 1 program without gathers is still accepted */
	REJECT_HDR(isa_version, 0, "unsupported ISA version");
	{
		struct prog p = prog1(load());

		hdr(&p)->isa_version = 1;
		seal(&p);
		EXPECT_VALID(p);
		free(p.buf);
	}
}

TEST(gather_from_constants_is_allowed)
{
	struct vtpu_insn in = gather();

	in.dma.binding = VTPU_BINDING_CONSTANTS;
	in.dma.rows = NCONSTS / 8;
	VALID1(in);
	in.dma.rows = NCONSTS / 8 + 1;
	REJECT_AS_IS(in, "binding extent out of range");
}

TEST(invalid_dma_dtype)
{
	REJECT1(load(), dma.dtype, 0, "invalid dma dtype");
	REJECT1(load(), dma.dtype, 9, "invalid dma dtype");
}

TEST(dma_dtype_conversion_not_supported)
{
	REJECT1(load(), dma.dtype, VTPU_DT_S32,
		"dma dtype conversion not supported");
	REJECT1(dma(VTPU_OP_DMA_STORE, vtpu_tile_s32(0, 4, 4, 4), 1, 0, 16,
		    VTPU_DT_S32), dma.dtype, VTPU_DT_BF16,
		"dma dtype conversion not supported");
}

TEST(store_to_the_constants_section)
{
	REJECT1(store(), dma.binding, VTPU_BINDING_CONSTANTS,
		"store to the constants section");
}

TEST(binding_index_out_of_range)
{
	REJECT1(load(), dma.binding, NBINDINGS, "binding index out of range");
	REJECT1(store(), dma.binding, 0xfffffffeu,
		"binding index out of range");
}

TEST(binding_not_readable)
{
	REJECT1(load(), dma.binding, 1, "binding not readable");
}

TEST(binding_not_writable)
{
	REJECT1(store(), dma.binding, 0, "binding not writable");
}

TEST(dma_stride_less_than_a_row)
{
	REJECT1(load(), dma.stride, 31, "dma stride less than a row");
	/* bf16 in the binding: a row of 8 is 16 bytes. */
	REJECT1(dma(VTPU_OP_DMA_LOAD, F(0, 4, 8), 0, 0, 16, VTPU_DT_BF16),
		dma.stride, 15, "dma stride less than a row");
}

TEST(binding_extent_out_of_range)
{
	/* The last row ends exactly at the end of the binding: fine. */
	VALID1(dma(VTPU_OP_DMA_LOAD, F(0, 4, 8), 0, BINDING_SIZE - 3 * 64 - 32,
		   64, VTPU_DT_F32));
	REJECT1(dma(VTPU_OP_DMA_LOAD, F(0, 4, 8), 0, 0, 64, VTPU_DT_F32),
		dma.offset, BINDING_SIZE - 3 * 64 - 31,
		"binding extent out of range");
	REJECT1(store(), dma.stride, BINDING_SIZE / 2,
		"binding extent out of range");
	REJECT1(load(), dma.offset, UINT64_MAX - 16,
		"binding extent out of range");
	REJECT1(load(), dma.offset, 1ull << 63, "binding extent out of range");
	REJECT1(dma(VTPU_OP_DMA_LOAD, F(0, 1, 8), VTPU_BINDING_CONSTANTS, 0, 0,
		    VTPU_DT_F32), dma.offset, NCONSTS * 4 - 28,
		"binding extent out of range");
	/* A single row's stride does not count. */
	VALID1(dma(VTPU_OP_DMA_LOAD, F(0, 1, 8), 0, BINDING_SIZE - 32,
		   0xffffffffu, VTPU_DT_F32));
}

/* ---- (b) control ---------------------------------------------------- */

TEST(last_instruction_is_not_end)
{
	struct vtpu_insn in = unary();
	struct vtpu_asm as;
	struct prog p;


	start(&as);
	vtpu_asm_emit(&as, &in);
	p = finish(&as);
	EXPECT_REJECTED(p, 0, "last instruction is not END");
	free(p.buf);
}

TEST(end_before_the_last_instruction)
{
	struct vtpu_asm as;
	struct prog p;

	start(&as);
	vtpu_asm_end(&as);
	vtpu_asm_trace(&as, 0);
	vtpu_asm_end(&as);
	p = finish(&as);
	EXPECT_REJECTED(p, 0, "END before the last instruction");
	free(p.buf);
}

TEST(trace_id_has_no_metadata_string)
{
	REJECT1(op3(VTPU_OP_TRACE, 0, 0, 1, NONE, NONE, NONE), imm, 2,
		"trace id has no metadata string");
}

/* ---- (c) mutation fuzzing ------------------------------------------ */

#define FUZZ_MUTANTS	100000u
#define FUZZ_SEED	0x7670755f66757a7aull	/* "vtpu_fuzz" */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static const uint8_t fuzz_ops[] = {
#define VTPU_OP(name, ...) VTPU_OP_##name,
#include <drm/vtpu_isa_ops.h>
#undef VTPU_OP
};

/* Every opcode, every broadcast mode, every dtype, both DMA directions. */
static struct prog seed_all_ops(void)
{
	struct vtpu_tile x = F(0, 8, 8), y = F(256, 8, 8), z = F(512, 8, 8);
	struct vtpu_tile w = vtpu_tile_bf16(768, 8, 8, 8);
	struct vtpu_tile s = vtpu_tile_s32(1024, 8, 8, 8);
	struct vtpu_tile col = F(1280, 8, 1), row = F(1344, 1, 8);
	struct vtpu_tile one = F(1408, 1, 1);
	struct vtpu_tile t = F(1536, 8, 16), tt = F(2048, 16, 8);
	struct vtpu_asm as;

	start(&as);
	vtpu_asm_trace(&as, 0);
	vtpu_asm_dma_load(&as, x, 0, 0, 32, VTPU_DT_F32);
	vtpu_asm_dma_load(&as, w, 0, 256, 32, VTPU_DT_F32);
	vtpu_asm_dma_load(&as, y, VTPU_BINDING_CONSTANTS, 0, 32, VTPU_DT_F32);
	vtpu_asm_dma_load(&as, t, 2, 0, 64, VTPU_DT_F32);
	vtpu_asm_matmul(&as, z, x, y, 0);
	vtpu_asm_matmul(&as, z, x, w, VTPU_F_ACC | VTPU_F_TRANS_A |
			VTPU_F_TRANS_B);
	vtpu_asm_unary(&as, VTPU_UNARY_TANH, y, x);
	vtpu_asm_unary(&as, VTPU_UNARY_LOG, y, y);
	vtpu_asm_fill_f32(&as, one, 1.5f);
	vtpu_asm_reduce(&as, VTPU_REDUCE_SUM, col, x, VTPU_F_AXIS_COLS);
	vtpu_asm_reduce(&as, VTPU_REDUCE_MAX, row, x,
			VTPU_F_AXIS_ROWS | VTPU_F_ACC);
	vtpu_asm_binary(&as, VTPU_BINARY_ADD, z, z, y, VTPU_F_BCAST_NONE);
	vtpu_asm_binary(&as, VTPU_BINARY_MUL, z, z, one, VTPU_F_BCAST_SCALAR);
	vtpu_asm_binary(&as, VTPU_BINARY_SUB, y, z, row, VTPU_F_BCAST_ROW);
	vtpu_asm_binary(&as, VTPU_BINARY_DIV, y, y, col, VTPU_F_BCAST_COL);
	vtpu_asm_binary_imm(&as, VTPU_BINARY_POW, y, y, 0.5f);
	vtpu_asm_binary(&as, VTPU_BINARY_MADD, z, y, col, VTPU_F_BCAST_COL);
	vtpu_asm_cmp(&as, VTPU_CMP_LT, x, y, z, 0);
	vtpu_asm_cmp_imm(&as, VTPU_CMP_GE, z, y, 0.0f);
	vtpu_asm_select(&as, x, y, z, 0);
	vtpu_asm_select_imm(&as, z, y, -1.0f);
	vtpu_asm_fill(&as, s, 7);
	vtpu_asm_fill_f32(&as, w, 2.0f);
	vtpu_asm_iota(&as, s, -3, VTPU_F_AXIS_ROWS);
	vtpu_asm_iota(&as, x, 5, 0);
	vtpu_asm_convert(&as, s, y);
	vtpu_asm_convert(&as, w, z);
	vtpu_asm_convert(&as, x, w);
	vtpu_asm_transpose(&as, tt, t);
	vtpu_asm_dma_store(&as, z, 1, 0, 32, VTPU_DT_F32);
	vtpu_asm_dma_store(&as, w, 2, 0, 32, VTPU_DT_F32);
	vtpu_asm_dma_store(&as, s, 2, 2048, 32, VTPU_DT_S32);
	vtpu_asm_dma_store(&as, tt, 1, 256, 32, VTPU_DT_BF16);
	vtpu_asm_trace(&as, 1);
	vtpu_asm_end(&as);
	return finish(&as);
}

/* Strided and single-row DMA, bf16 on both sides, in-place chains. */
static struct prog seed_dma(void)
{
	struct vtpu_tile a = vtpu_tile_f32(0, 4, 16, 32);
	struct vtpu_tile b = vtpu_tile_bf16(512, 4, 16, 16);
	struct vtpu_tile r = F(1024, 1, 64);
	struct vtpu_asm as;

	start(&as);
	vtpu_asm_dma_load(&as, a, 0, 100 * 4, 128, VTPU_DT_F32);
	vtpu_asm_dma_load(&as, b, 2, 0, 32, VTPU_DT_BF16);
	vtpu_asm_dma_load(&as, r, VTPU_BINDING_CONSTANTS, 64, 0, VTPU_DT_F32);
	vtpu_asm_unary(&as, VTPU_UNARY_SIGMOID, a, a);
	vtpu_asm_unary(&as, VTPU_UNARY_GELU, r, r);
	vtpu_asm_convert(&as, vtpu_tile_f32(16 * 4, 4, 16, 32), b);
	vtpu_asm_dma_store(&as, a, 1, 4, 64, VTPU_DT_BF16);
	vtpu_asm_dma_store(&as, r, 2, 4096 - 256, 0, VTPU_DT_F32);
	/* The binding side needs no alignment. */
	vtpu_asm_dma_store(&as, b, 2, 1002, 64, VTPU_DT_F32);
	/* Rows of a table chosen by indices: in range, wrapped, or not. */
	vtpu_asm_iota(&as, vtpu_tile_s32(2048, 1, 4, 4), -2, 0);
	vtpu_asm_dma_gather(&as, vtpu_tile_f32(2560, 4, 16, 16), 2, 64, 64,
			    VTPU_DT_F32, 2048, 60, VTPU_F_INDEX_WRAP);
	vtpu_asm_dma_gather(&as, vtpu_tile_bf16(3072, 4, 8, 8),
			    VTPU_BINDING_CONSTANTS, 0, 32, VTPU_DT_F32, 2048,
			    NCONSTS / 8, VTPU_F_INDEX_WRAP);
	vtpu_asm_end(&as);
	return finish(&as);
}

/* A blocked bf16 matmul with column blocks of one VMEM matrix. */
static struct prog seed_matmul(void)
{
	struct vtpu_tile a = vtpu_tile_bf16(0, 16, 32, 32);
	struct vtpu_tile b = vtpu_tile_bf16(1024, 32, 16, 16);
	struct vtpu_tile c0 = vtpu_tile_f32(2048, 16, 8, 16);
	struct vtpu_tile c1 = vtpu_tile_f32(2048 + 32, 16, 8, 16);
	struct vtpu_tile b0 = vtpu_tile_bf16(1024, 32, 8, 16);
	struct vtpu_tile b1 = vtpu_tile_bf16(1024 + 16, 32, 8, 16);
	struct vtpu_tile sum = F(4096, 16, 1);
	struct vtpu_asm as;

	start(&as);
	vtpu_asm_trace(&as, 1);
	vtpu_asm_dma_load(&as, a, 0, 0, 128, VTPU_DT_F32);
	vtpu_asm_dma_load(&as, b, 2, 0, 32, VTPU_DT_BF16);
	vtpu_asm_matmul(&as, c0, a, b0, 0);
	vtpu_asm_matmul(&as, c1, a, b1, 0);
	vtpu_asm_matmul(&as, vtpu_tile_f32(2048, 16, 16, 16),
			vtpu_tile_bf16(0, 16, 16, 32),
			vtpu_tile_bf16(1024, 16, 16, 16),
			VTPU_F_ACC | VTPU_F_TRANS_B);
	vtpu_asm_unary(&as, VTPU_UNARY_RELU, c0, c1);
	vtpu_asm_reduce(&as, VTPU_REDUCE_MIN, sum, c0, VTPU_F_AXIS_COLS);
	vtpu_asm_binary(&as, VTPU_BINARY_MAX, c1, c1, sum, VTPU_F_BCAST_COL);
	vtpu_asm_dma_store(&as, vtpu_tile_f32(2048, 16, 16, 16), 1, 0, 64,
			   VTPU_DT_F32);
	vtpu_asm_trace(&as, 0);
	vtpu_asm_end(&as);
	return finish(&as);
}

/* Two lanes of the 8192-byte VMEM, each its own tiles, and a BARRIER. */
static struct prog seed_lanes(void)
{
	struct vtpu_insn lane = { .op = VTPU_OP_LANE, .imm = 1 };
	struct vtpu_insn barrier = { .op = VTPU_OP_BARRIER };
	struct vtpu_tile lo = F(64, 8, 8), hi = F(4096 + 64, 8, 8);
	struct vtpu_asm as;
	struct prog p;

	start(&as);
	vtpu_asm_dma_load(&as, lo, 0, 0, 32, VTPU_DT_F32);
	vtpu_asm_emit(&as, &lane);
	vtpu_asm_dma_load(&as, hi, 0, 256, 32, VTPU_DT_F32);
	vtpu_asm_unary(&as, VTPU_UNARY_NEG, hi, hi);
	vtpu_asm_dma_store(&as, hi, 1, 256, 32, VTPU_DT_F32);
	lane.imm = 0;
	vtpu_asm_emit(&as, &lane);
	vtpu_asm_unary(&as, VTPU_UNARY_EXP, lo, lo);
	vtpu_asm_dma_store(&as, lo, 1, 0, 32, VTPU_DT_F32);
	vtpu_asm_emit(&as, &barrier);
	vtpu_asm_trace(&as, 0);
	vtpu_asm_end(&as);
	p = finish(&as);
	hdr(&p)->lanes = 2;
	seal(&p);
	return p;
}

/*
 * A counted loop around a BINARY, then a loop whose trip count is a value
 * in VMEM, left by a forward BRZ.
 */
static struct prog seed_loop(void)
{
	struct vtpu_tile acc = F(0, 4, 8), n = vtpu_tile_s32(256, 1, 1, 1);
	struct vtpu_asm as;
	uint32_t top;
	int out;

	start(&as);
	vtpu_asm_fill_f32(&as, acc, 0.0f);
	vtpu_asm_fill(&as, n, 3);
	vtpu_asm_sload(&as, 1, 256);
	vtpu_asm_sset(&as, 0, 2);
	top = vtpu_asm_here(&as);
	vtpu_asm_binary_imm(&as, VTPU_BINARY_ADD, acc, acc, 1.0f);
	vtpu_asm_sadd(&as, 0, -1);
	vtpu_asm_brnz(&as, 0, top);
	top = vtpu_asm_here(&as);
	out = vtpu_asm_brz(&as, 1, 0);
	vtpu_asm_binary_imm(&as, VTPU_BINARY_MUL, acc, acc, 2.0f);
	vtpu_asm_sadd(&as, 1, -1);
	vtpu_asm_jump(&as, top);
	vtpu_asm_insn(&as, out)->imm = vtpu_asm_here(&as);
	vtpu_asm_dma_store(&as, acc, 1, 0, 32, VTPU_DT_F32);
	vtpu_asm_end(&as);
	return finish(&as);
}

TEST(fuzz_seeds_are_valid)
{
	struct prog seeds[] = { seed_all_ops(), seed_dma(), seed_matmul(),
				seed_lanes(), seed_loop() };
	struct vtpu_prog_info info;
	bool seen[256] = { false };
	uint32_t i, j;

	for (i = 0; i < ARRAY_SIZE(seeds); i++) {
		EXPECT_VALID(seeds[i]);
		if (validate(&seeds[i], &info, NULL))
			continue;
		for (j = 0; j < info.insn_count; j++)
			seen[info.code[j].op] = true;
	}
	for (i = 0; i < ARRAY_SIZE(fuzz_ops); i++) {
		EXPECT_TRUE(seen[fuzz_ops[i]]) {
			TH_LOG("no seed has opcode 0x%02x", fuzz_ops[i]);
		}
	}
	for (i = 0; i < ARRAY_SIZE(seeds); i++)
		free(seeds[i].buf);
}

/* A value near @old or at an edge, for a field of @bits bits. */
static uint64_t interesting(uint64_t old, int bits)
{
	uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;

	switch (below(12)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return mask;
	case 3: return (old + 1) & mask;
	case 4: return (old - 1) & mask;
	case 5: return (old + 1 + below(64)) & mask;
	case 6: return (old - 1 - below(64)) & mask;
	case 7: return (old * 2) & mask;
	case 8: return old / 2;
	case 9: return (1ull << below(bits)) & mask;
	case 10: return below(PROG_VMEM + 64) & mask;
	}
	return rnd() & mask;
}

static void set_field(void *p, int bytes, uint64_t v)
{
	memcpy(p, &v, bytes);	/* little-endian host */
}

static uint64_t get_field(const void *p, int bytes)
{
	uint64_t v = 0;

	memcpy(&v, p, bytes);
	return v;
}

static void mutate_field(void *p, int bytes)
{
	set_field(p, bytes, interesting(get_field(p, bytes), bytes * 8));
}

static void mutate_tile(struct vtpu_tile *t)
{
	switch (below(6)) {
	case 0: mutate_field(&t->addr, 4); break;
	case 1: mutate_field(&t->rows, 2); break;
	case 2: mutate_field(&t->cols, 2); break;
	case 3: mutate_field(&t->stride, 4); break;
	case 4: t->dtype = below(5); break;
	default: mutate_field(&t->pad[below(3)], 1); break;
	}
}

/* One structure-aware change to instruction @in. */
static void mutate_insn(struct vtpu_insn *in, struct vtpu_insn *other)
{
	struct vtpu_tile *tiles[3] = { &in->t.d, &in->t.a, &in->t.b };
	bool is_dma = in->op == VTPU_OP_DMA_LOAD || in->op == VTPU_OP_DMA_STORE ||
		      in->op == VTPU_OP_DMA_GATHER;

	switch (below(12)) {
	case 0: in->op = fuzz_ops[below(sizeof(fuzz_ops))]; break;
	case 1: in->sub = below(14); break;
	case 2: in->flags ^= 1u << below(10); break;
	case 3: mutate_field(&in->imm, 4); break;
	case 4: *tiles[below(3)] = *tiles[below(3)]; break;
	case 5: *in = *other; break;
	case 6:
		if (is_dma) {
			switch (below(6)) {
			case 0: mutate_field(&in->dma.offset, 8); break;
			case 1: in->dma.binding = below(4) == 0 ?
					VTPU_BINDING_CONSTANTS : below(NBINDINGS + 1);
				break;
			case 2: mutate_field(&in->dma.stride, 4); break;
			case 3: mutate_field(&in->dma.index, 4); break;
			case 4: mutate_field(&in->dma.rows, 4); break;
			default: in->dma.dtype = below(5); break;
			}
			break;
		}
		fallthrough;
	default:
		mutate_tile(is_dma ? &in->dma.v : tiles[below(3)]);
		break;
	}
}

/* Changes @p (whose buffer has room for @cap bytes) in place. */
static void mutate(struct prog *p, size_t cap)
{
	struct vtpu_prog_header *h = hdr(p);
	size_t room = p->size > sizeof(*h) ? (p->size - sizeof(*h)) / 64 : 0;
	uint32_t n = h->insn_count < room ? h->insn_count : (uint32_t)room;
	uint32_t i = below(n), j = below(n), grow;

	switch (below(16)) {
	case 0:
		p->buf[below(p->size)] ^= 1u << below(8);
		break;
	case 1:
		p->buf[below(p->size)] = (uint8_t[]){ 0, 1, 0x7f, 0x80, 0xff }[below(5)];
		break;
	case 2:
		mutate_field((uint8_t *)h + 4 * (2 + below(14)), 4);
		break;
	case 3:
		p->size = below(p->size);
		break;
	case 4:
		grow = 1 + below(cap - p->size < 128 ? cap - p->size : 128);
		if (p->size + grow > cap)
			break;
		memset(p->buf + p->size, below(2) ? 0 : (int)rnd(), grow);
		p->size += grow;
		if (below(2))
			h->meta_size += grow;
		break;
	case 5:		/* drop one instruction, keeping the header coherent */
		if (i + 1 >= n)
			break;
		memmove(insn(p, i), insn(p, i + 1),
			p->size - ((uint8_t *)insn(p, i + 1) - p->buf));
		p->size -= sizeof(struct vtpu_insn);
		h->insn_count--;
		h->code_size -= sizeof(struct vtpu_insn);
		break;
	default:
		if (n)
			mutate_insn(insn(p, i), insn(p, j));
		break;
	}
}

/* Randomly smaller or less permitted bindings for one mutant. */
static void mutate_bindings(struct vtpu_binding_desc *b)
{
	uint32_t k = below(NBINDINGS);

	memcpy(b, bindings, sizeof(bindings));
	switch (below(8)) {
	case 0: b[k].size -= below(512); break;
	case 1: b[k].access = below(4); break;
	}
}

static uint64_t esize(uint8_t dtype)
{
	return dtype == VTPU_DT_BF16 ? 2 : dtype == VTPU_DT_F32 ||
	       dtype == VTPU_DT_S32 ? 4 : 0;
}

static uint64_t tile_end(const struct vtpu_tile *t)
{
	if (!t->rows || !esize(t->dtype))
		return 0;
	return t->addr + ((uint64_t)(t->rows - 1) * t->stride + t->cols) *
	       esize(t->dtype);
}

static void raise_to(uint64_t *max, uint64_t v)
{
	if (v > *max)
		*max = v;
}

/*
 * Shrinks the header's VMEM and the bindings to what the instructions
 * touch, so that the executor's memory ends exactly where the program's
 * last access does and ASan sees a single byte too far. One time in four
 * one of them ends a little short, which the validator must refuse.
 */
static void tighten(struct prog *p, struct vtpu_binding_desc *desc)
{
	uint64_t vmax = 0, bmax[NBINDINGS] = { 0 };
	size_t room = p->size > 64 ? (p->size - 64) / 64 : 0;
	uint32_t n = hdr(p)->insn_count < room ? hdr(p)->insn_count : room;
	uint32_t i, k;

	for (i = 0; i < n; i++) {
		struct vtpu_insn *in = insn(p, i);
		const struct vtpu_dma *m = &in->dma;

		if (in->op != VTPU_OP_DMA_LOAD && in->op != VTPU_OP_DMA_STORE &&
		    in->op != VTPU_OP_DMA_GATHER) {
			raise_to(&vmax, tile_end(&in->t.d));
			raise_to(&vmax, tile_end(&in->t.a));
			raise_to(&vmax, tile_end(&in->t.b));
			continue;
		}
		raise_to(&vmax, tile_end(&m->v));
		if (in->op == VTPU_OP_DMA_GATHER) {
			/* the indices, and the whole table */
			raise_to(&vmax, m->index + 4ull * m->v.rows);
			if (m->binding < NBINDINGS && m->rows &&
			    esize(m->dtype) && m->offset < (1ull << 32))
				raise_to(&bmax[m->binding], m->offset +
					 (uint64_t)(m->rows - 1) * m->stride +
					 m->v.cols * esize(m->dtype));
			continue;
		}
		if (m->binding < NBINDINGS && m->v.rows && esize(m->dtype) &&
		    m->offset < (1ull << 32))
			raise_to(&bmax[m->binding], m->offset +
				 (uint64_t)(m->v.rows - 1) * m->stride +
				 m->v.cols * esize(m->dtype));
	}
	k = below(4) ? NBINDINGS + 1 : below(NBINDINGS + 1);
	if (vmax && vmax <= CORE_VMEM)
		hdr(p)->vmem_size = (uint32_t)vmax - (k == NBINDINGS ?
						       1 + below(4) : 0);
	for (i = 0; i < NBINDINGS; i++)
		if (bmax[i] && bmax[i] <= BINDING_SIZE)
			desc[i].size = bmax[i] - (k == i ? 1 + below(4) : 0);
}

#if HAVE_EXECUTOR
static bool code_has_gather(const struct vtpu_prog_info *info)
{
	uint32_t i;

	for (i = 0; i < info->insn_count; i++)
		if (info->code[i].op == VTPU_OP_DMA_GATHER)
			return true;
	return false;
}

/* Runs an accepted program on exactly sized, random-filled memory. */
static int run_exactly_sized(const struct vtpu_prog_info *info,
			     const struct vtpu_binding_desc *desc)
{
	struct vtpu_exec_binding eb[NBINDINGS];
	uint8_t *vmem = malloc(info->vmem_size ? info->vmem_size : 1);
	/* a loop may never end: a bounded run proves as much as a whole one */
	uint32_t max_steps = info->branch_count ? 8 * info->insn_count + 64 :
			     info->insn_count;
	struct vtpu_exec e;
	uint32_t i, steps;
	int done = 0;

	for (i = 0; i < info->vmem_size; i++)
		vmem[i] = (uint8_t)rnd();
	for (i = 0; i < NBINDINGS; i++) {
		eb[i].size = desc[i].size;
		eb[i].data = malloc(desc[i].size);
		memset(eb[i].data, (int)below(256), desc[i].size);
	}
	vtpu_exec_init(&e, info, eb, vmem);
	for (steps = 0; steps <= max_steps && !done; steps++)
		done = vtpu_exec_step(&e, 1 + below(8));
	/* random indices mostly fault a gather: a clean stop is fine */
	if (done == -ERANGE && e.fault == -ERANGE &&
	    code_has_gather(info))
		done = 1;
	else if (info->branch_count)
		done = done >= 0 && e.pc < info->insn_count + !!done;
	else if (done && e.insns != info->insn_count)
		done = 0;
	for (i = 0; i < NBINDINGS; i++)
		free(eb[i].data);
	free(vmem);
	return done;
}
#endif

struct reason_count {
	const char *why;
	uint32_t n;
};

static void count_reason(struct reason_count *rc, size_t nrc, const char *why)
{
	size_t i;

	for (i = 0; i < nrc && rc[i].why; i++)
		if (!strcmp(rc[i].why, why))
			break;
	if (i < nrc) {
		rc[i].why = why;
		rc[i].n++;
	}
}

static int by_count(const void *x, const void *y)
{
	const struct reason_count *a = x, *b = y;

	return a->n != b->n ? (a->n < b->n) - (a->n > b->n) :
	       strcmp(a->why ? a->why : "", b->why ? b->why : "");
}

TEST(fuzz_mutants_are_rejected_or_run_safely)
{
	struct prog seeds[] = { seed_all_ops(), seed_dma(), seed_matmul(),
				seed_lanes(), seed_loop() };
	struct reason_count reasons[64] = { 0 };
	uint32_t accepted = 0, rejected = 0, executed = 0, tight = 0, i, k;
	struct vtpu_binding_desc desc[NBINDINGS];
	time_t t0 = time(NULL);

	rng_state = FUZZ_SEED;
	for (i = 0; i < FUZZ_MUTANTS; i++) {
		struct prog *s = &seeds[below(ARRAY_SIZE(seeds))];
		size_t cap = s->size + 256;
		struct prog m = { calloc(1, cap), s->size };
		struct vtpu_prog_error err = { 0, NULL };
		struct vtpu_prog_info info;
		uint32_t nmut = 1 + below(3);
		bool tightened = false;
		uint8_t *exact;
		int ret;

		ASSERT_NE(NULL, m.buf);
		memcpy(m.buf, s->buf, s->size);
		for (k = 0; k < nmut; k++)
			mutate(&m, cap);
		mutate_bindings(desc);
		if (below(2)) {
			tighten(&m, desc);
			tightened = true;
		}
		if (below(16) && m.size >= sizeof(struct vtpu_prog_header))
			seal(&m);

		/* Exactly m.size bytes, so ASan sees any read past the end. */
		exact = malloc(m.size ? m.size : 1);
		ASSERT_NE(NULL, exact);
		memcpy(exact, m.buf, m.size);
		ret = vtpu_prog_validate(exact, m.size, desc, NBINDINGS,
					 CORE_VMEM, &info, &err);
		/*
		 * Loading once and checking the bindings later (program
		 * objects) accepts exactly what validating with them does.
		 */
		{
			struct vtpu_binding_desc need[VTPU_MAX_BINDINGS];
			struct vtpu_prog_info li;
			int lret = vtpu_prog_load(exact, m.size, CORE_VMEM,
						  &li, need, NULL);

			if (!lret && li.binding_count != NBINDINGS)
				lret = -EINVAL;
			if (!lret && vtpu_prog_bindings_ok(need, desc,
							   NBINDINGS) >= 0)
				lret = -EINVAL;
			ASSERT_EQ(ret, lret) TH_LOG("mutant %u: %s", i,
						    err.why ? err.why : "ok");
			if (!ret)
				ASSERT_EQ(0, memcmp(&info, &li, sizeof(li)));
		}
		if (ret) {
			ASSERT_EQ(-EINVAL, ret);
			ASSERT_NE(NULL, err.why);
			ASSERT_TRUE(err.insn >= -1 &&
				    err.insn < (int32_t)VTPU_MAX_INSNS);
			rejected++;
			count_reason(reasons, ARRAY_SIZE(reasons), err.why);
		} else {
			accepted++;
			tight += tightened;
#if HAVE_EXECUTOR
			ASSERT_TRUE(run_exactly_sized(&info, desc));
			executed++;
#endif
		}
		free(exact);
		free(m.buf);
	}

	TH_LOG("%u mutants: %u accepted (%u on tightened memory), %u rejected, %u executed (%s), %lds",
	       FUZZ_MUTANTS, accepted, tight, rejected, executed,
	       HAVE_EXECUTOR ? "executor linked" : "no executor yet",
	       (long)(time(NULL) - t0));
	qsort(reasons, ARRAY_SIZE(reasons), sizeof(reasons[0]), by_count);
	for (k = 0; k < ARRAY_SIZE(reasons) && reasons[k].why; k++)
		TH_LOG("  %6u  %s", reasons[k].n, reasons[k].why);
	EXPECT_EQ(FUZZ_MUTANTS, accepted + rejected);
	/* The mutator must reach both sides, or it tests nothing. */
	EXPECT_GT(accepted, FUZZ_MUTANTS / 20);
	EXPECT_GT(rejected, FUZZ_MUTANTS / 2);
	for (k = 0; k < ARRAY_SIZE(seeds); k++)
		free(seeds[k].buf);
}

/* ---- lanes (ISA version 3) ---- */

/*
 * A program of @n instructions and END, with @lanes lanes: PROG_VMEM of
 * 8192 bytes, so lane l owns [l * 8192 / lanes, ...).
 */
static struct prog lanes_prog(uint32_t lanes, const struct vtpu_insn *in,
			      int n)
{
	struct vtpu_asm as;
	struct prog p;
	int i;

	start(&as);
	for (i = 0; i < n; i++)
		vtpu_asm_emit(&as, &in[i]);
	vtpu_asm_end(&as);
	p = finish(&as);
	hdr(&p)->lanes = lanes;
	seal(&p);
	return p;
}

#define LANE(l)		op3(VTPU_OP_LANE, 0, 0, l, NONE, NONE, NONE)
#define BARRIER		op3(VTPU_OP_BARRIER, 0, 0, 0, NONE, NONE, NONE)
#define NEG(addr)	op3(VTPU_OP_UNARY, VTPU_UNARY_NEG, 0, 0, F(addr, 4, 8), \
			    F(addr, 4, 8), NONE)

TEST(lanes_split_vmem_and_pass)
{
	/* lane 1 of 2 owns [4096, 8192), lane 3 of 4 [6144, 8192) */
	struct vtpu_insn two[] = { NEG(0), LANE(1), NEG(4096), LANE(0),
				   NEG(4096 - 128), BARRIER, NEG(0) };
	struct vtpu_insn four[] = { LANE(3), NEG(6144), BARRIER };
	struct vtpu_prog_info info;
	struct vtpu_prog_error e;
	struct prog p = lanes_prog(2, two, ARRAY_SIZE(two));

	ASSERT_EQ(0, validate(&p, &info, &e)) TH_LOG("%d: %s", e.insn, e.why);
	EXPECT_EQ(2u, info.lanes);
	free(p.buf);
	p = lanes_prog(4, four, ARRAY_SIZE(four));
	EXPECT_VALID(p);
	free(p.buf);
	/* no lanes: 0 and 1 alike, and LANE 0 and BARRIER are no-ops */
	p = lanes_prog(0, (struct vtpu_insn[]){ LANE(0), NEG(4096), BARRIER },
		       3);
	ASSERT_EQ(0, validate(&p, &info, &e)) TH_LOG("%d: %s", e.insn, e.why);
	EXPECT_EQ(1u, info.lanes);
	free(p.buf);
}

/*
 * What a job clears of VMEM is what its tiles reach from the start of
 * each lane's share, not the span up to the last lane's last tile: a
 * two-lane program on 8 KiB of VMEM clears 2 x 384 bytes, not 4480.
 */
TEST(lanes_clear_only_what_each_lane_reaches)
{
	struct vtpu_insn two[] = { NEG(0), LANE(1), NEG(4096 + 256), BARRIER,
				   NEG(64) };
	struct vtpu_prog_info info;
	struct vtpu_prog_error e;
	struct prog p = lanes_prog(2, two, ARRAY_SIZE(two));
	uint8_t vmem[8192];
	int i;

	ASSERT_EQ(0, validate(&p, &info, &e)) TH_LOG("%d: %s", e.insn, e.why);
	EXPECT_EQ(4096u, info.lane_size);
	EXPECT_EQ(384u, info.lane_reach);
	EXPECT_EQ(768u, vtpu_prog_vmem_cleared(&info));
	memset(vmem, 0xa5, sizeof(vmem));
	vtpu_prog_clear_vmem(&info, vmem);
	for (i = 0; i < (int)sizeof(vmem); i++) {
		int reached = i % 4096 < 384;

		ASSERT_EQ(reached ? 0 : 0xa5, vmem[i]) TH_LOG("byte %d", i);
	}
	free(p.buf);
	/* without lanes, the furthest tile's end */
	p = lanes_prog(0, (struct vtpu_insn[]){ NEG(4096), NEG(256) }, 2);
	ASSERT_EQ(0, validate(&p, &info, &e)) TH_LOG("%d: %s", e.insn, e.why);
	EXPECT_EQ(0u, info.lane_size);
	EXPECT_EQ(4096u + 128, info.lane_reach);
	EXPECT_EQ(4096u + 128, vtpu_prog_vmem_cleared(&info));
	free(p.buf);
}

TEST(lanes_header_rules)
{
	struct prog p = lanes_prog(VTPU_MAX_LANES + 1, NULL, 0);

	EXPECT_REJECTED(p, -1, "too many lanes");
	free(p.buf);
	p = lanes_prog(2, NULL, 0);
	hdr(&p)->isa_version = 2;
	seal(&p);
	EXPECT_REJECTED(p, -1, "lanes need ISA version 3");
	free(p.buf);
	/* 8 lanes of 8192 bytes are 1024 each; of 256 bytes, 32 */
	p = lanes_prog(8, NULL, 0);
	EXPECT_VALID(p);
	hdr(&p)->vmem_size = 256;
	seal(&p);
	EXPECT_REJECTED(p, -1, "lanes of less than 64 bytes of vmem");
	free(p.buf);
}

/* A two-lane program of @insns and END, rejected at @at for @why. */
#define REJECT_LANES(at, why, ...) do {					\
	struct vtpu_insn _in[] = { __VA_ARGS__ };			\
	struct prog _p = lanes_prog(2, _in, ARRAY_SIZE(_in));		\
									\
	EXPECT_REJECTED(_p, at, why);					\
	free(_p.buf);							\
} while (0)

TEST(lanes_instruction_rules)
{
	struct vtpu_insn trace = op3(VTPU_OP_TRACE, 0, 0, 0, NONE, NONE, NONE);
	struct vtpu_insn lane_operand = LANE(1), lane_flag = LANE(1);
	struct vtpu_insn barrier_imm = BARRIER;
	struct prog p;

	REJECT_LANES(0, "lane out of range", LANE(2));
	REJECT_LANES(1, "tile outside its lane's vmem", LANE(1), NEG(4096 - 64));
	REJECT_LANES(1, "tile outside its lane's vmem", LANE(1), NEG(0));
	REJECT_LANES(0, "tile outside its lane's vmem", NEG(4096));
	REJECT_LANES(1, "TRACE or END outside lane 0", LANE(1), trace);
	/* END follows the LANE */
	REJECT_LANES(1, "TRACE or END outside lane 0", LANE(1));
	/* LANE and BARRIER take nothing but LANE's immediate */
	lane_operand.t.d = F(0, 1, 1);
	REJECT_LANES(0, "unused operand not zero", lane_operand);
	barrier_imm.imm = 1;
	REJECT_LANES(0, "unused immediate not zero", barrier_imm);
	lane_flag.flags = VTPU_F_ACC;
	REJECT_LANES(0, "flag not allowed for this opcode", lane_flag);
	/* a version 2 program has neither */
	p = lanes_prog(0, (struct vtpu_insn[]){ BARRIER }, 1);
	hdr(&p)->isa_version = 2;
	seal(&p);
	EXPECT_REJECTED(p, 0, "lanes need ISA version 3");
	free(p.buf);
}

/* ---- scalar unit and branches (ISA version 4) ---- */

static const uint8_t scalar_ops[] = {
	VTPU_OP_SLOAD, VTPU_OP_SSET, VTPU_OP_SADD,
	VTPU_OP_BRZ, VTPU_OP_BRNZ, VTPU_OP_JUMP,
};

TEST(scalar_valid_programs)
{
	struct prog p = seed_loop();
	struct vtpu_prog_info info;
	struct vtpu_prog_error e;
	uint32_t i;

	ASSERT_EQ(0, validate(&p, &info, &e)) TH_LOG("%d: %s", e.insn, e.why);
	EXPECT_EQ(3u, info.branch_count);
	free(p.buf);
	/* each alone; registers s0..s15, targets 0 and END's index 1 */
	VALID1(scalar(VTPU_OP_SLOAD, 15, PROG_VMEM - 4));
	VALID1(scalar(VTPU_OP_SLOAD, 0, 0));
	VALID1(scalar(VTPU_OP_SSET, VTPU_SREGS - 1, 0xffffffffu));
	VALID1(scalar(VTPU_OP_SADD, 7, 0x80000000u));
	VALID1(scalar(VTPU_OP_BRZ, 3, 1));
	VALID1(scalar(VTPU_OP_BRNZ, 15, 0));
	VALID1(scalar(VTPU_OP_JUMP, 0, 1));
	/* a loop of one instruction is valid: the job timeout ends it */
	VALID1(scalar(VTPU_OP_JUMP, 0, 0));
	/* straight-line code has no branches */
	p = seed_all_ops();
	ASSERT_EQ(0, validate(&p, &info, &e));
	EXPECT_EQ(0u, info.branch_count);
	free(p.buf);
	for (i = 0; i < ARRAY_SIZE(scalar_ops); i++) {
		p = prog1(scalar(scalar_ops[i], 0, 0));
		ASSERT_EQ(0, validate(&p, &info, &e));
		EXPECT_EQ((uint32_t)(scalar_ops[i] >= VTPU_OP_BRZ),
			  info.branch_count);
		EXPECT_EQ(0u, info.flops);
		free(p.buf);
	}
}

TEST(scalar_needs_isa_version_4)
{
	struct prog p;
	uint32_t i, v;

	for (i = 0; i < ARRAY_SIZE(scalar_ops); i++) {
		for (v = VTPU_ISA_VERSION_MIN; v < 4; v++) {
			p = prog1(scalar(scalar_ops[i], 0, 0));
			EXPECT_VALID(p);
			hdr(&p)->isa_version = v;
			seal(&p);
			EXPECT_REJECTED(p, 0, "scalar registers and branches need ISA version 4");
			free(p.buf);
		}
	}
}

/* BINARY MADD is ISA version 5's; the other functions are version 1's. */
TEST(madd_needs_isa_version_5)
{
	struct vtpu_insn madd = op3(VTPU_OP_BINARY, VTPU_BINARY_MADD,
				    VTPU_F_BCAST_COL, 0, F(0, 4, 4),
				    F(64, 4, 4), F(128, 4, 1));
	struct vtpu_insn mul = madd;
	struct prog p;
	uint32_t v;

	mul.sub = VTPU_BINARY_MUL;
	for (v = VTPU_ISA_VERSION_MIN; v <= VTPU_ISA_VERSION; v++) {
		p = prog1(madd);
		hdr(&p)->isa_version = v;
		seal(&p);
		if (v < 5) {
			EXPECT_REJECTED(p, 0, "fused multiply-add needs ISA version 5");
		} else {
			EXPECT_VALID(p);
		}
		free(p.buf);
		p = prog1(mul);
		hdr(&p)->isa_version = v;
		seal(&p);
		EXPECT_VALID(p);
		free(p.buf);
	}
}

/*
 * MADD reads d too: d exactly a, exactly b or apart from both, as for
 * every elementwise instruction, never a part of either; a multiply and
 * an add per element.
 */
TEST(madd_aliasing_and_flops)
{
	struct vtpu_insn madd = op3(VTPU_OP_BINARY, VTPU_BINARY_MADD, 0, 0,
				    F(0, 4, 4), F(64, 4, 4), F(128, 4, 4));
	struct vtpu_prog_info info;
	struct prog p;

	VALID1(madd);
	REJECT1(madd, t.d.addr, 64 + 4, "destination partially overlaps a source");
	REJECT1(madd, t.d.addr, 128 - 4, "destination partially overlaps a source");
	madd.t.d = madd.t.a;
	VALID1(madd);
	REJECT1(madd, t.a.stride, 5, "destination partially overlaps a source");
	madd.t.d = madd.t.b;
	VALID1(madd);
	REJECT1(madd, t.b.stride, 5, "destination partially overlaps a source");
	/* a broadcast column inside d */
	madd.flags = VTPU_F_BCAST_COL;
	madd.t.d = F(0, 4, 4);
	madd.t.b = F(128, 4, 1);
	VALID1(madd);
	REJECT1(madd, t.b.addr, 4, "destination partially overlaps a source");

	p = prog1(op3(VTPU_OP_BINARY, VTPU_BINARY_MADD, VTPU_F_BCAST_IMM,
		      vtpu_f32_bits(0.5f), F(0, 3, 5), F(64, 3, 5), NONE));
	ASSERT_EQ(0, validate(&p, &info, NULL));
	EXPECT_EQ(2u * 3 * 5, info.flops);
	free(p.buf);
}

TEST(scalar_selector_flags_and_operands)
{
	uint32_t i;

	for (i = 0; i < ARRAY_SIZE(scalar_ops); i++) {
		struct vtpu_insn in = scalar(scalar_ops[i], 0, 0);

		/* s0..s15; JUMP has no register */
		REJECT1(in, sub, scalar_ops[i] == VTPU_OP_JUMP ? 1 : VTPU_SREGS,
			"invalid function selector");
		REJECT1(in, sub, 0xff, "invalid function selector");
		REJECT1(in, flags, VTPU_F_ACC, "flag not allowed for this opcode");
		REJECT1(in, flags, VTPU_F_BCAST_IMM,
			"flag not allowed for this opcode");
		REJECT1(in, reserved, 1, "instruction reserved not zero");
		REJECT1(in, t.d.rows, 1, "unused operand not zero");
		REJECT1(in, t.a.addr, 4, "unused operand not zero");
		REJECT1(in, t.b.pad[2], 1, "unused operand not zero");
		/* the DMA view of the same bytes */
		REJECT1(in, dma.offset, 1, "unused operand not zero");
		REJECT1(in, dma.binding, 1, "unused operand not zero");
		REJECT1(in, dma.step, 1, "unused operand not zero");
	}
}

TEST(sload_address_rules)
{
	struct vtpu_insn in = scalar(VTPU_OP_SLOAD, 2, 64);

	REJECT1(in, imm, 66, "sload address misaligned");
	REJECT1(in, imm, 1, "sload address misaligned");
	REJECT1(in, imm, PROG_VMEM - 2, "sload address misaligned");
	REJECT1(in, imm, PROG_VMEM, "sload address exceeds vmem");
	REJECT1(in, imm, CORE_VMEM - 4, "sload address exceeds vmem");
	REJECT1(in, imm, 0xfffffffcu, "sload address exceeds vmem");
}

TEST(branch_target_out_of_range)
{
	uint32_t i;

	/* prog1(): the branch and END, so targets 0 and 1 */
	for (i = 3; i < ARRAY_SIZE(scalar_ops); i++) {
		struct vtpu_insn in = scalar(scalar_ops[i], 0, 1);

		REJECT1(in, imm, 2, "branch target out of range");
		REJECT1(in, imm, 0x7fffffffu, "branch target out of range");
		REJECT1(in, imm, 0xffffffffu, "branch target out of range");
	}
}

TEST(branch_cannot_end_the_code)
{
	struct vtpu_asm as;
	struct prog p;

	/* END stays the one way out: a loop may not replace it */
	start(&as);
	vtpu_asm_sset(&as, 0, 1);
	vtpu_asm_jump(&as, 0);
	p = finish(&as);
	EXPECT_REJECTED(p, 1, "last instruction is not END");
	free(p.buf);
}

TEST(branch_needs_one_lane)
{
	struct prog p;
	uint32_t i;

	for (i = 3; i < ARRAY_SIZE(scalar_ops); i++) {
		REJECT_LANES(0, "branches need a program of one lane",
			     scalar(scalar_ops[i], 0, 0));
		REJECT_LANES(1, "branches need a program of one lane",
			     NEG(0), scalar(scalar_ops[i], 0, 2));
		/* one lane, or none */
		p = lanes_prog(1, (struct vtpu_insn[]){ NEG(0),
				scalar(scalar_ops[i], 0, 0) }, 2);
		EXPECT_VALID(p);
		free(p.buf);
		p = lanes_prog(0, (struct vtpu_insn[]){ NEG(0),
				scalar(scalar_ops[i], 0, 0) }, 2);
		EXPECT_VALID(p);
		free(p.buf);
	}
}

TEST(scalar_belongs_to_lane_0)
{
	struct prog p;

	/* with lanes, SLOAD, SSET and SADD are lane 0's, on its VMEM */
	p = lanes_prog(2, (struct vtpu_insn[]){
		scalar(VTPU_OP_SSET, 0, 5), scalar(VTPU_OP_SADD, 0, 1),
		scalar(VTPU_OP_SLOAD, 1, 4096 - 4), LANE(1), NEG(4096),
		BARRIER, scalar(VTPU_OP_SLOAD, 1, 0) }, 7);
	EXPECT_VALID(p);
	free(p.buf);
	REJECT_LANES(1, "scalar instruction outside lane 0", LANE(1),
		     scalar(VTPU_OP_SSET, 0, 5));
	REJECT_LANES(1, "scalar instruction outside lane 0", LANE(1),
		     scalar(VTPU_OP_SADD, 0, 5));
	REJECT_LANES(1, "scalar instruction outside lane 0", LANE(1),
		     scalar(VTPU_OP_SLOAD, 0, 0));
	REJECT_LANES(0, "sload outside lane 0's vmem",
		     scalar(VTPU_OP_SLOAD, 0, 4096));
	REJECT_LANES(0, "sload outside lane 0's vmem",
		     scalar(VTPU_OP_SLOAD, 0, 8192 - 4));
}

TEST_HARNESS_MAIN
