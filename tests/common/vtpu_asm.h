/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu_asm.h - a small header-only assembler for vtpu programs, for unit
 * tests, kselftests and benchmarks (userspace C11). The compiler has its
 * own emitter; this one is for writing programs by hand.
 *
 *	struct vtpu_asm as;
 *	struct vtpu_tile x = vtpu_tile_f32(0, 8, 8, 8);
 *	struct vtpu_tile y = vtpu_tile_f32(256, 8, 8, 8);
 *	size_t size;
 *	void *prog;
 *
 *	vtpu_asm_init(&as, 512, 2);		// VMEM bytes used, bindings
 *	vtpu_asm_trace(&as, vtpu_asm_meta(&as, "exp"));
 *	vtpu_asm_dma_load(&as, x, 0, 0, 8 * 4, VTPU_DT_F32);
 *	vtpu_asm_unary(&as, VTPU_UNARY_EXP, y, x);
 *	vtpu_asm_dma_store(&as, y, 1, 0, 8 * 4, VTPU_DT_F32);
 *	vtpu_asm_end(&as);
 *	prog = vtpu_asm_finish(&as, &size);	// malloc'd, checksum set
 *	vtpu_asm_free(&as);
 *	...
 *	free(prog);
 *
 * Emitters do not validate anything: tests want malformed programs too.
 * Each returns the instruction's index; vtpu_asm_insn() gives access to it
 * for edits before vtpu_asm_finish(). After an edit of a finished program,
 * vtpu_asm_checksum() recomputes its checksum. Allocation failures are
 * sticky: vtpu_asm_finish() then returns NULL.
 */
#ifndef VTPU_ASM_H
#define VTPU_ASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <drm/vtpu_isa.h>

struct vtpu_asm {
	struct vtpu_insn *code;
	uint32_t ninsns, code_cap;
	uint8_t *consts;
	uint32_t const_size, const_cap;
	char *meta;
	uint32_t meta_size, meta_cap;
	uint32_t nstrings;
	uint32_t vmem_size;
	uint32_t nbindings;
	int failed;
};

static inline void vtpu_asm_init(struct vtpu_asm *as, uint32_t vmem_size,
				 uint32_t nbindings)
{
	memset(as, 0, sizeof(*as));
	as->vmem_size = vmem_size;
	as->nbindings = nbindings;
}

static inline void vtpu_asm_free(struct vtpu_asm *as)
{
	free(as->code);
	free(as->consts);
	free(as->meta);
	memset(as, 0, sizeof(*as));
}

/* Makes room for @more elements of @esize bytes; 0 or -1 (sticky). */
static inline int vtpu_asm_reserve(struct vtpu_asm *as, void **buf,
				   uint32_t *cap, uint32_t used, uint32_t more,
				   size_t esize)
{
	uint32_t n = *cap ? *cap : 16;
	void *p;

	if (as->failed)
		return -1;
	if (used + more <= *cap)
		return 0;
	while (n < used + more)
		n *= 2;
	p = realloc(*buf, n * esize);
	if (!p) {
		as->failed = 1;
		return -1;
	}
	memset((char *)p + (size_t)*cap * esize, 0, (size_t)(n - *cap) * esize);
	*buf = p;
	*cap = n;
	return 0;
}

/* The instruction at @index, to edit before vtpu_asm_finish(). */
static inline struct vtpu_insn *vtpu_asm_insn(struct vtpu_asm *as,
					      uint32_t index)
{
	return &as->code[index];
}

/* Appends @in as is; returns its index, or -1 after an allocation failure. */
static inline int vtpu_asm_emit(struct vtpu_asm *as, const struct vtpu_insn *in)
{
	if (vtpu_asm_reserve(as, (void **)&as->code, &as->code_cap, as->ninsns,
			     1, sizeof(*in)))
		return -1;
	as->code[as->ninsns] = *in;
	return (int)as->ninsns++;
}

/* Appends @size bytes of constants at a 64-byte boundary; their offset. */
static inline uint32_t vtpu_asm_const(struct vtpu_asm *as, const void *data,
				      uint32_t size)
{
	uint32_t off = (as->const_size + 63) & ~63u;

	if (vtpu_asm_reserve(as, (void **)&as->consts, &as->const_cap,
			     off, size, 1))
		return 0;
	memcpy(as->consts + off, data, size);
	as->const_size = off + size;
	return off;
}

/* Appends a metadata string (an op name); its TRACE id. */
static inline uint32_t vtpu_asm_meta(struct vtpu_asm *as, const char *name)
{
	uint32_t len = (uint32_t)strlen(name) + 1;

	if (vtpu_asm_reserve(as, (void **)&as->meta, &as->meta_cap,
			     as->meta_size, len, 1))
		return 0;
	memcpy(as->meta + as->meta_size, name, len);
	as->meta_size += len;
	return as->nstrings++;
}

static inline struct vtpu_tile vtpu_tile(uint32_t addr, uint16_t rows,
					 uint16_t cols, uint32_t stride,
					 uint8_t dtype)
{
	struct vtpu_tile t = {
		.addr = addr, .rows = rows, .cols = cols, .stride = stride,
		.dtype = dtype,
	};

	return t;
}

static inline struct vtpu_tile vtpu_tile_f32(uint32_t addr, uint16_t rows,
					     uint16_t cols, uint32_t stride)
{
	return vtpu_tile(addr, rows, cols, stride, VTPU_DT_F32);
}

static inline struct vtpu_tile vtpu_tile_bf16(uint32_t addr, uint16_t rows,
					      uint16_t cols, uint32_t stride)
{
	return vtpu_tile(addr, rows, cols, stride, VTPU_DT_BF16);
}

static inline struct vtpu_tile vtpu_tile_s32(uint32_t addr, uint16_t rows,
					     uint16_t cols, uint32_t stride)
{
	return vtpu_tile(addr, rows, cols, stride, VTPU_DT_S32);
}

static inline uint32_t vtpu_f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* Any tile instruction: op, sub, flags, imm and the three tiles. */
static inline int vtpu_asm_op(struct vtpu_asm *as, uint8_t op, uint8_t sub,
			      uint16_t flags, uint32_t imm, struct vtpu_tile d,
			      struct vtpu_tile a, struct vtpu_tile b)
{
	struct vtpu_insn in = {
		.op = op, .sub = sub, .flags = flags, .imm = imm,
		.t = { .d = d, .a = a, .b = b },
	};

	return vtpu_asm_emit(as, &in);
}

static const struct vtpu_tile vtpu_no_tile;

static inline int vtpu_asm_end(struct vtpu_asm *as)
{
	return vtpu_asm_op(as, VTPU_OP_END, 0, 0, 0, vtpu_no_tile,
			   vtpu_no_tile, vtpu_no_tile);
}

static inline int vtpu_asm_trace(struct vtpu_asm *as, uint32_t id)
{
	return vtpu_asm_op(as, VTPU_OP_TRACE, 0, 0, id, vtpu_no_tile,
			   vtpu_no_tile, vtpu_no_tile);
}

/* @stride: bytes between rows in the binding; @dtype: the binding's type. */
static inline int vtpu_asm_dma(struct vtpu_asm *as, uint8_t op,
			       struct vtpu_tile v, uint32_t binding,
			       uint64_t offset, uint32_t stride, uint8_t dtype)
{
	struct vtpu_insn in = {
		.op = op,
		.dma = {
			.v = v, .offset = offset, .binding = binding,
			.stride = stride, .dtype = dtype,
		},
	};

	return vtpu_asm_emit(as, &in);
}

static inline int vtpu_asm_dma_load(struct vtpu_asm *as, struct vtpu_tile v,
				    uint32_t binding, uint64_t offset,
				    uint32_t stride, uint8_t dtype)
{
	return vtpu_asm_dma(as, VTPU_OP_DMA_LOAD, v, binding, offset, stride,
			    dtype);
}

static inline int vtpu_asm_dma_store(struct vtpu_asm *as, struct vtpu_tile v,
				     uint32_t binding, uint64_t offset,
				     uint32_t stride, uint8_t dtype)
{
	return vtpu_asm_dma(as, VTPU_OP_DMA_STORE, v, binding, offset, stride,
			    dtype);
}

/*
 * DMA_LOAD (@store false) or DMA_STORE with an element step (ISA version
 * 6): a row's elements lie @step elements apart in the binding.
 */
static inline int vtpu_asm_dma_step(struct vtpu_asm *as, bool store,
				    struct vtpu_tile v, uint32_t binding,
				    uint64_t offset, uint32_t stride,
				    uint8_t dtype, uint32_t step)
{
	struct vtpu_insn in = {
		.op = store ? VTPU_OP_DMA_STORE : VTPU_OP_DMA_LOAD,
		.dma = {
			.v = v, .offset = offset, .binding = binding,
			.stride = stride, .dtype = dtype, .step = step,
		},
	};

	return vtpu_asm_emit(as, &in);
}

/*
 * Row r of @v <- table row idx[r] of @rows rows, @stride bytes apart from
 * @offset; the s32 indices sit at VMEM @index. @flags: VTPU_F_INDEX_WRAP.
 */
static inline int vtpu_asm_dma_gather(struct vtpu_asm *as, struct vtpu_tile v,
				      uint32_t binding, uint64_t offset,
				      uint32_t stride, uint8_t dtype,
				      uint32_t index, uint32_t rows,
				      uint16_t flags)
{
	struct vtpu_insn in = {
		.op = VTPU_OP_DMA_GATHER, .flags = flags,
		.dma = {
			.v = v, .offset = offset, .binding = binding,
			.stride = stride, .dtype = dtype, .index = index,
			.rows = rows,
		},
	};

	return vtpu_asm_emit(as, &in);
}

/* @flags: VTPU_F_ACC, VTPU_F_TRANS_A, VTPU_F_TRANS_B. */
static inline int vtpu_asm_matmul(struct vtpu_asm *as, struct vtpu_tile d,
				  struct vtpu_tile a, struct vtpu_tile b,
				  uint16_t flags)
{
	return vtpu_asm_op(as, VTPU_OP_MATMUL, 0, flags, 0, d, a, b);
}

static inline int vtpu_asm_unary(struct vtpu_asm *as, enum vtpu_unary f,
				 struct vtpu_tile d, struct vtpu_tile a)
{
	return vtpu_asm_op(as, VTPU_OP_UNARY, f, 0, 0, d, a, vtpu_no_tile);
}

/* @flags: a VTPU_F_BCAST_* mode other than IMM (see vtpu_asm_binary_imm). */
static inline int vtpu_asm_binary(struct vtpu_asm *as, enum vtpu_binary f,
				  struct vtpu_tile d, struct vtpu_tile a,
				  struct vtpu_tile b, uint16_t flags)
{
	return vtpu_asm_op(as, VTPU_OP_BINARY, f, flags, 0, d, a, b);
}

static inline int vtpu_asm_binary_imm(struct vtpu_asm *as, enum vtpu_binary f,
				      struct vtpu_tile d, struct vtpu_tile a,
				      float b)
{
	return vtpu_asm_op(as, VTPU_OP_BINARY, f, VTPU_F_BCAST_IMM,
			   vtpu_f32_bits(b), d, a, vtpu_no_tile);
}

static inline int vtpu_asm_cmp(struct vtpu_asm *as, enum vtpu_cmp f,
			       struct vtpu_tile d, struct vtpu_tile a,
			       struct vtpu_tile b, uint16_t flags)
{
	return vtpu_asm_op(as, VTPU_OP_CMP, f, flags, 0, d, a, b);
}

static inline int vtpu_asm_cmp_imm(struct vtpu_asm *as, enum vtpu_cmp f,
				   struct vtpu_tile d, struct vtpu_tile a,
				   float b)
{
	return vtpu_asm_op(as, VTPU_OP_CMP, f, VTPU_F_BCAST_IMM,
			   vtpu_f32_bits(b), d, a, vtpu_no_tile);
}

/* d = d != 0 ? a : b */
static inline int vtpu_asm_select(struct vtpu_asm *as, struct vtpu_tile d,
				  struct vtpu_tile a, struct vtpu_tile b,
				  uint16_t flags)
{
	return vtpu_asm_op(as, VTPU_OP_SELECT, 0, flags, 0, d, a, b);
}

static inline int vtpu_asm_select_imm(struct vtpu_asm *as, struct vtpu_tile d,
				      struct vtpu_tile a, float b)
{
	return vtpu_asm_op(as, VTPU_OP_SELECT, 0, VTPU_F_BCAST_IMM,
			   vtpu_f32_bits(b), d, a, vtpu_no_tile);
}

/* @flags: VTPU_F_AXIS_COLS or VTPU_F_AXIS_ROWS, optionally VTPU_F_ACC. */
static inline int vtpu_asm_reduce(struct vtpu_asm *as, enum vtpu_reduce f,
				  struct vtpu_tile d, struct vtpu_tile a,
				  uint16_t flags)
{
	return vtpu_asm_op(as, VTPU_OP_REDUCE, f, flags, 0, d, a, vtpu_no_tile);
}

/* @bits: f32 bits for f32 and bf16 tiles, the value for s32 tiles. */
static inline int vtpu_asm_fill(struct vtpu_asm *as, struct vtpu_tile d,
				uint32_t bits)
{
	return vtpu_asm_op(as, VTPU_OP_FILL, 0, 0, bits, d, vtpu_no_tile,
			   vtpu_no_tile);
}

static inline int vtpu_asm_fill_f32(struct vtpu_asm *as, struct vtpu_tile d,
				    float value)
{
	return vtpu_asm_fill(as, d, vtpu_f32_bits(value));
}

/* d[i][j] = start + (flags & VTPU_F_AXIS_ROWS ? i : j) */
static inline int vtpu_asm_iota(struct vtpu_asm *as, struct vtpu_tile d,
				int32_t start, uint16_t flags)
{
	return vtpu_asm_op(as, VTPU_OP_IOTA, 0, flags, (uint32_t)start, d,
			   vtpu_no_tile, vtpu_no_tile);
}

static inline int vtpu_asm_convert(struct vtpu_asm *as, struct vtpu_tile d,
				   struct vtpu_tile a)
{
	return vtpu_asm_op(as, VTPU_OP_CONVERT, 0, 0, 0, d, a, vtpu_no_tile);
}

static inline int vtpu_asm_transpose(struct vtpu_asm *as, struct vtpu_tile d,
				     struct vtpu_tile a)
{
	return vtpu_asm_op(as, VTPU_OP_TRANSPOSE, 0, 0, 0, d, a, vtpu_no_tile);
}

/*
 * The scalar unit and branches (ISA version 4): s[@reg] is one of the
 * VTPU_SREGS registers, @target an instruction index. A forward branch
 * is emitted with any target and set once known:
 *
 *	int br = vtpu_asm_brz(&as, 0, 0);
 *	...
 *	vtpu_asm_insn(&as, br)->imm = vtpu_asm_here(&as);
 */
static inline int vtpu_asm_scalar(struct vtpu_asm *as, uint8_t op,
				  uint8_t reg, uint32_t imm)
{
	return vtpu_asm_op(as, op, reg, 0, imm, vtpu_no_tile, vtpu_no_tile,
			   vtpu_no_tile);
}

/* The index the next instruction gets: a label. */
static inline uint32_t vtpu_asm_here(const struct vtpu_asm *as)
{
	return as->ninsns;
}

/* s[reg] = the s32 at VMEM byte @addr */
static inline int vtpu_asm_sload(struct vtpu_asm *as, uint8_t reg,
				 uint32_t addr)
{
	return vtpu_asm_scalar(as, VTPU_OP_SLOAD, reg, addr);
}

static inline int vtpu_asm_sset(struct vtpu_asm *as, uint8_t reg,
				int32_t value)
{
	return vtpu_asm_scalar(as, VTPU_OP_SSET, reg, (uint32_t)value);
}

static inline int vtpu_asm_sadd(struct vtpu_asm *as, uint8_t reg,
				int32_t delta)
{
	return vtpu_asm_scalar(as, VTPU_OP_SADD, reg, (uint32_t)delta);
}

static inline int vtpu_asm_brz(struct vtpu_asm *as, uint8_t reg,
			       uint32_t target)
{
	return vtpu_asm_scalar(as, VTPU_OP_BRZ, reg, target);
}

static inline int vtpu_asm_brnz(struct vtpu_asm *as, uint8_t reg,
				uint32_t target)
{
	return vtpu_asm_scalar(as, VTPU_OP_BRNZ, reg, target);
}

static inline int vtpu_asm_jump(struct vtpu_asm *as, uint32_t target)
{
	return vtpu_asm_scalar(as, VTPU_OP_JUMP, 0, target);
}

/* Bitwise CRC-32 (zlib's), kept apart from the validator's on purpose. */
static inline uint32_t vtpu_asm_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int i;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (i = 0; i < 8; i++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

/* Sets the checksum of a program of @size bytes (>= the header). */
static inline void vtpu_asm_checksum(void *prog, size_t size)
{
	struct vtpu_prog_header *h = prog;

	h->checksum = 0;
	h->checksum = vtpu_asm_crc32(0, prog, size);
}

/* The program so far, header first; malloc'd (free() it), NULL on ENOMEM. */
static inline void *vtpu_asm_finish(struct vtpu_asm *as, size_t *size)
{
	struct vtpu_prog_header h = {
		.magic = VTPU_PROG_MAGIC,
		.format_version = VTPU_PROG_FORMAT_VERSION,
		.isa_version = VTPU_ISA_VERSION,
		.header_size = sizeof(h),
		.insn_count = as->ninsns,
		.code_size = as->ninsns * (uint32_t)sizeof(struct vtpu_insn),
		.const_size = as->const_size,
		.meta_size = as->meta_size,
		.vmem_size = as->vmem_size,
		.binding_count = as->nbindings,
	};
	size_t total = sizeof(h) + (size_t)h.code_size + h.const_size +
		       h.meta_size;
	uint8_t *p;

	if (as->failed)
		return NULL;
	p = malloc(total);
	if (!p)
		return NULL;
	memcpy(p, &h, sizeof(h));
	if (h.code_size)
		memcpy(p + sizeof(h), as->code, h.code_size);
	if (h.const_size)
		memcpy(p + sizeof(h) + h.code_size, as->consts, h.const_size);
	if (h.meta_size)
		memcpy(p + sizeof(h) + h.code_size + h.const_size, as->meta,
		       h.meta_size);
	vtpu_asm_checksum(p, total);
	*size = total;
	return p;
}

/*
 * A program that runs for a while, for tests of timeouts, queues and
 * cancellation: @count accumulating n x n MATMULs, then the result is
 * stored to binding 0 (written). Every element ends as count * n * 0.5.
 * malloc'd like vtpu_asm_finish(); NULL on ENOMEM.
 */
static inline void *vtpu_prog_spin(unsigned int n, unsigned int count,
				   size_t *size)
{
	uint32_t sz = n * n * 4;
	struct vtpu_tile a = vtpu_tile_f32(0, n, n, n);
	struct vtpu_tile b = vtpu_tile_f32(sz, n, n, n);
	struct vtpu_tile c = vtpu_tile_f32(2 * sz, n, n, n);
	struct vtpu_asm as;
	unsigned int i;
	void *p;

	vtpu_asm_init(&as, 3 * sz, 1);
	vtpu_asm_fill_f32(&as, a, 1.0f);
	vtpu_asm_fill_f32(&as, b, 0.5f);
	for (i = 0; i < count; i++)
		vtpu_asm_matmul(&as, c, a, b, i ? VTPU_F_ACC : 0);
	vtpu_asm_dma_store(&as, c, 0, 0, n * 4, VTPU_DT_F32);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, size);
	vtpu_asm_free(&as);
	return p;
}

/*
 * A program that never ends: JUMP to itself, then END (which it never
 * reaches), for tests of the job timeout. No bindings.
 */
static inline void *vtpu_prog_forever(size_t *size)
{
	struct vtpu_asm as;
	void *p;

	vtpu_asm_init(&as, 64, 0);
	vtpu_asm_jump(&as, vtpu_asm_here(&as));
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, size);
	vtpu_asm_free(&as);
	return p;
}

#endif /* VTPU_ASM_H */
