// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * emit.c - writes program binaries (uapi/drm/vtpu_isa.h): instructions,
 * the constants section, TRACE names, the header and its checksum. It
 * checks nothing; codegen validates the finished program.
 */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "vtpu_prog.h"

void emit_init(struct emit *e)
{
	memset(e, 0, sizeof(*e));
}

void emit_fini(struct emit *e)
{
	free(e->code);
	free(e->consts);
	free(e->meta);
	memset(e, 0, sizeof(*e));
}

void emit_insn(struct emit *e, const struct vtpu_insn *in)
{
	if (e->failed)
		return;
	/*
	 * No program runs past the ISA's limit: stop here rather than grow
	 * the code for a kernel that tiles into hundreds of millions of
	 * instructions (a fuzzed MaxPool took 6 s and 800 MB to be refused).
	 */
	if (e->n >= VTPU_MAX_INSNS) {
		e->too_many = e->failed = 1;
		return;
	}
	if (e->n == e->cap) {
		uint32_t cap = e->cap ? 2 * e->cap : 256;
		void *p = realloc(e->code, cap * sizeof(*e->code));

		if (!p) {
			e->failed = 1;
			return;
		}
		e->code = p;
		e->cap = cap;
	}
	e->code[e->n++] = *in;
}

uint32_t emit_meta(struct emit *e, const char *name)
{
	uint32_t len = strlen(name) + 1;

	if (e->failed)
		return 0;
	if (e->meta_size + len > e->meta_cap) {
		uint32_t cap = e->meta_cap ? e->meta_cap : 256;
		void *p;

		while (cap < e->meta_size + len)
			cap *= 2;
		p = realloc(e->meta, cap);
		if (!p) {
			e->failed = 1;
			return 0;
		}
		e->meta = p;
		e->meta_cap = cap;
	}
	memcpy(e->meta + e->meta_size, name, len);
	e->meta_size += len;
	return e->nstrings++;
}

struct vtpu_tile vtile(uint32_t addr, uint32_t rows, uint32_t cols,
		       uint32_t stride, uint8_t dtype)
{
	struct vtpu_tile t = {
		.addr = addr, .rows = rows, .cols = cols, .stride = stride,
		.dtype = dtype,
	};

	return t;
}

/* Moves a tile into the current lane's VMEM. */
static void lane_tile(const struct emit *e, struct vtpu_tile *t)
{
	if (t->rows)
		t->addr += e->vmem_base;
}

void emit_kernel(struct emit *e)
{
	if (e->lanes_used)
		emit_barrier(e);
	e->kernel_at = e->n;
}

void emit_lane(struct emit *e, uint32_t lane)
{
	struct vtpu_insn in = { .op = VTPU_OP_LANE, .imm = lane };
	struct vtpu_insn bar = { .op = VTPU_OP_BARRIER };

	if (e->lanes < 2 || lane == e->lane)
		return;
	/*
	 * The first lane but 0 in a phase that holds earlier kernels' code
	 * (lane 0's): a BARRIER goes in front of this kernel, which may
	 * read what they stored. Straight-line code moves freely.
	 */
	if (lane && !e->lanes_used && e->kernel_at > e->phase_at) {
		emit_insn(e, &bar);
		if (e->failed)
			return;
		memmove(e->code + e->kernel_at + 1, e->code + e->kernel_at,
			(e->n - 1 - e->kernel_at) * sizeof(*e->code));
		e->code[e->kernel_at] = bar;
		e->phase_at = ++e->kernel_at;
	}
	emit_insn(e, &in);
	e->lane = lane;
	e->vmem_base = lane * e->lane_size;
	e->lanes_used |= lane != 0;
	e->lanes_ever |= lane != 0;
}

void emit_barrier(struct emit *e)
{
	struct vtpu_insn in = { .op = VTPU_OP_BARRIER };

	if (!e->lanes_used) {
		emit_lane(e, 0);
		return;
	}
	emit_insn(e, &in);
	e->lane = 0;
	e->vmem_base = 0;
	e->lanes_used = 0;
	e->phase_at = e->n;
}

uint32_t emit_lane_of(const struct emit *e, int64_t i, int64_t n)
{
	if (e->lanes < 2 || n < 2)
		return 0;
	return (uint32_t)(i * e->lanes / n);
}

static void note_vmem(struct emit *e, const struct vtpu_tile *t)
{
	uint32_t es = t->dtype == VTPU_DT_BF16 ? 2 : 4, end;

	if (!t->rows)
		return;
	end = t->addr + ((t->rows - 1) * t->stride + t->cols) * es;
	if (end > e->vmem_used)
		e->vmem_used = end;
}

void emit_dma(struct emit *e, int store, struct vtpu_tile v, uint32_t binding,
	      uint64_t offset, uint64_t stride, uint8_t dtype)
{
	emit_dma_step(e, store, v, binding, offset, stride, dtype, 0);
}

void emit_dma_step(struct emit *e, int store, struct vtpu_tile v,
		   uint32_t binding, uint64_t offset, uint64_t stride,
		   uint8_t dtype, uint32_t step)
{
	struct vtpu_insn in = {
		.op = store ? VTPU_OP_DMA_STORE : VTPU_OP_DMA_LOAD,
		.dma = {
			.v = v, .offset = offset, .binding = binding,
			/* a single row's stride is never used: keep it legal */
			.stride = v.rows == 1 ? 0 : (uint32_t)stride,
			.dtype = dtype,
			/* a single element's step is never used either */
			.step = v.cols == 1 || step == 1 ? 0 : step,
		},
	};

	if (stride > UINT32_MAX && v.rows > 1)
		e->too_wide = 1;
	lane_tile(e, &in.dma.v);
	note_vmem(e, &in.dma.v);
	emit_insn(e, &in);
}

void emit_gather(struct emit *e, struct vtpu_tile v, uint32_t binding,
		 uint64_t offset, uint64_t stride, uint8_t dtype,
		 uint32_t index, uint64_t rows, uint16_t flags)
{
	struct vtpu_insn in = {
		.op = VTPU_OP_DMA_GATHER, .flags = flags,
		.dma = {
			.v = v, .offset = offset, .binding = binding,
			/* a one-row table's stride is never used */
			.stride = rows == 1 ? 0 : (uint32_t)stride,
			.dtype = dtype, .index = index, .rows = (uint32_t)rows,
		},
	};
	struct vtpu_tile idx = vtile(index, 1, v.rows, v.rows, VTPU_DT_S32);

	if ((stride > UINT32_MAX && rows > 1) || rows > UINT32_MAX)
		e->too_wide = 1;
	lane_tile(e, &in.dma.v);
	lane_tile(e, &idx);
	in.dma.index = idx.addr;
	note_vmem(e, &in.dma.v);
	note_vmem(e, &idx);
	emit_insn(e, &in);
}

void emit_op(struct emit *e, uint8_t op, uint8_t sub, uint16_t flags,
	     uint32_t imm, struct vtpu_tile d, struct vtpu_tile a,
	     struct vtpu_tile b)
{
	struct vtpu_insn in = {
		.op = op, .sub = sub, .flags = flags, .imm = imm,
		.t = { .d = d, .a = a, .b = b },
	};

	lane_tile(e, &in.t.d);
	lane_tile(e, &in.t.a);
	lane_tile(e, &in.t.b);
	note_vmem(e, &in.t.d);
	note_vmem(e, &in.t.a);
	note_vmem(e, &in.t.b);
	emit_insn(e, &in);
}

void *emit_finish(struct emit *e, uint32_t vmem_size, uint32_t nbindings,
		  size_t *size)
{
	struct vtpu_prog_header h = {
		.magic = VTPU_PROG_MAGIC,
		.format_version = VTPU_PROG_FORMAT_VERSION,
		.isa_version = VTPU_ISA_VERSION,
		.header_size = sizeof(h),
		.insn_count = e->n,
		.code_size = e->n * (uint32_t)sizeof(struct vtpu_insn),
		.const_size = e->const_size,
		.meta_size = e->meta_size,
		.vmem_size = vmem_size,
		.binding_count = nbindings,
		.lanes = e->lanes_ever ? e->lanes : 0,
	};
	size_t total = sizeof(h) + (size_t)h.code_size + h.const_size +
		       h.meta_size;
	struct vtpu_prog_header *p;
	uint8_t *b;

	if (e->failed)
		return NULL;
	/* malloc's alignment satisfies the validator's 8-byte rule */
	b = malloc(total);
	if (!b)
		return NULL;
	memcpy(b, &h, sizeof(h));
	if (h.code_size)
		memcpy(b + sizeof(h), e->code, h.code_size);
	if (h.const_size)
		memcpy(b + sizeof(h) + h.code_size, e->consts, h.const_size);
	if (h.meta_size)
		memcpy(b + sizeof(h) + h.code_size + h.const_size, e->meta,
		       h.meta_size);
	p = (struct vtpu_prog_header *)b;
	p->checksum = vtpu_prog_crc32(b, total);
	*size = total;
	return b;
}
