// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * disasm.c - prints a program one instruction a line, from the ISA
 * table (uapi/drm/vtpu_isa_ops.h): mnemonic, function, flags, tiles as
 * f32[8x16 @0x100 s16], DMA sides as b2+0x40 s128, TRACE with its name.
 *
 *   0007  DMA_LOAD   f32[64x64 @0x0 s64] <- b0+0x4000 s1024 f32
 *   0009  MATMUL.acc f32[64x64 @0x8000 s64], f32[64x64 @0x0 s64], ...
 *   000c  SADD s0, -1
 *   000d  BRNZ s0, 0007
 *
 * Scalar registers are s0..s15; branch targets are instruction indices,
 * in the hex of the index column.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <drm/vtpu_isa.h>

#include "vtpu_compiler.h"

struct op_row {
	const char *name;
	unsigned char kind[3];
};

static const struct op_row op_rows[] = {
	[VTPU_OP_INVALID] = { "INVALID", { 0, 0, 0 } },
#define VTPU_OP(n, nsub, d, a, b, fl) [VTPU_OP_##n] = { #n, { d, a, b } },
#include <drm/vtpu_isa_ops.h>
#undef VTPU_OP
};

static const char *const unary_names[] = {
#define VTPU_UNARY(n) #n,
#include <drm/vtpu_isa_ops.h>
#undef VTPU_UNARY
};

static const char *const binary_names[] = {
#define VTPU_BINARY(n) #n,
#include <drm/vtpu_isa_ops.h>
#undef VTPU_BINARY
};

static const char *const cmp_names[] = {
#define VTPU_CMP(n) #n,
#include <drm/vtpu_isa_ops.h>
#undef VTPU_CMP
};

static const char *const reduce_names[] = {
#define VTPU_REDUCE(n) #n,
#include <drm/vtpu_isa_ops.h>
#undef VTPU_REDUCE
};

static const char *dt_name(unsigned int dt)
{
	switch (dt) {
	case VTPU_DT_F32: return "f32";
	case VTPU_DT_BF16: return "bf16";
	case VTPU_DT_S32: return "s32";
	default: return "?";
	}
}

static void put_tile(FILE *f, const struct vtpu_tile *t)
{
	fprintf(f, "%s[%ux%u @0x%x s%u]", dt_name(t->dtype), t->rows, t->cols,
		t->addr, t->stride);
}

static const char *sub_name(const struct vtpu_insn *in)
{
	switch (in->op) {
	case VTPU_OP_UNARY:
		return in->sub < VTPU_UNARY_NR ? unary_names[in->sub] : "?";
	case VTPU_OP_BINARY:
		return in->sub < VTPU_BINARY_NR ? binary_names[in->sub] : "?";
	case VTPU_OP_CMP:
		return in->sub < VTPU_CMP_NR ? cmp_names[in->sub] : "?";
	case VTPU_OP_REDUCE:
		return in->sub < VTPU_REDUCE_NR ? reduce_names[in->sub] : "?";
	}
	return NULL;
}

static void put_flags(FILE *f, unsigned int fl)
{
	static const char *const bc[] = { "", ".scalar", ".row", ".col", ".imm" };

	if (fl & VTPU_F_ACC)
		fputs(".acc", f);
	if (fl & VTPU_F_TRANS_A)
		fputs(".ta", f);
	if (fl & VTPU_F_TRANS_B)
		fputs(".tb", f);
	if (((fl & VTPU_F_BCAST_MASK) >> 4) < 5)
		fputs(bc[(fl & VTPU_F_BCAST_MASK) >> 4], f);
	if (fl & VTPU_F_AXIS_COLS)
		fputs(".cols", f);
	if (fl & VTPU_F_AXIS_ROWS)
		fputs(".rows", f);
}

static void put_dma(FILE *f, const struct vtpu_insn *in)
{
	const struct vtpu_dma *m = &in->dma;
	char side[80], step[16] = "";

	/* an element step (ISA version 6): "b0+0x40 s128 step2 f32" */
	if (m->step)
		snprintf(step, sizeof(step), " step%u", m->step);
	if (m->binding == VTPU_BINDING_CONSTANTS)
		snprintf(side, sizeof(side), "const+0x%llx s%u%s %s",
			 (unsigned long long)m->offset, m->stride, step,
			 dt_name(m->dtype));
	else
		snprintf(side, sizeof(side), "b%u+0x%llx s%u%s %s", m->binding,
			 (unsigned long long)m->offset, m->stride, step,
			 dt_name(m->dtype));
	if (in->op == VTPU_OP_DMA_GATHER) {
		put_tile(f, &m->v);
		fprintf(f, " <- %s [rows of %u at i32 @0x%x%s]", side, m->rows,
			m->index, in->flags & VTPU_F_INDEX_WRAP ? ", wrapped" : "");
	} else if (in->op == VTPU_OP_DMA_LOAD) {
		put_tile(f, &m->v);
		fprintf(f, " <- %s", side);
	} else {
		fprintf(f, "%s <- ", side);
		put_tile(f, &m->v);
	}
}

/* The Nth NUL-terminated string of the metadata section, or NULL. */
static const char *meta_name(const char *meta, unsigned int size,
			     unsigned int id)
{
	unsigned int off = 0;

	while (off < size) {
		if (!id--)
			return memchr(meta + off, 0, size - off) ? meta + off : NULL;
		off += strnlen(meta + off, size - off) + 1;
	}
	return NULL;
}

/* SLOAD, SSET, SADD, BRZ, BRNZ, JUMP; false for any other opcode. */
static bool put_scalar(FILE *f, const struct vtpu_insn *in)
{
	switch (in->op) {
	case VTPU_OP_SLOAD:
		fprintf(f, "s%u, [0x%x]", in->sub, in->imm);
		return true;
	case VTPU_OP_SSET:
	case VTPU_OP_SADD:
		fprintf(f, "s%u, %d", in->sub, (int32_t)in->imm);
		return true;
	case VTPU_OP_BRZ:
	case VTPU_OP_BRNZ:
		fprintf(f, "s%u, %04x", in->sub, in->imm);
		return true;
	case VTPU_OP_JUMP:
		fprintf(f, "%04x", in->imm);
		return true;
	}
	return false;
}

static void put_insn(FILE *f, const struct vtpu_insn *in, const char *meta,
		     unsigned int meta_size)
{
	const struct vtpu_tile *t[3] = { &in->t.d, &in->t.a, &in->t.b };
	const struct op_row *r = &op_rows[in->op];
	const char *sub = sub_name(in), *name;
	int i, n = 0;

	fprintf(f, "%s", r->name ? r->name : "?");
	if (sub)
		fprintf(f, ".%s", sub);
	put_flags(f, in->flags);
	fputc(' ', f);
	if (in->op == VTPU_OP_LANE) {
		fprintf(f, "%u", in->imm);
		return;
	}
	if (in->op == VTPU_OP_TRACE) {
		name = meta_name(meta, meta_size, in->imm);
		fprintf(f, "%u \"%s\"", in->imm, name ? name : "");
		return;
	}
	if (put_scalar(f, in))
		return;
	if (r->kind[0] == VTPU_K_DMA) {
		put_dma(f, in);
		return;
	}
	for (i = 0; i < 3; i++) {
		if (!r->kind[i] || (i == 2 && (in->flags & VTPU_F_BCAST_MASK) ==
				     VTPU_F_BCAST_IMM))
			continue;
		fputs(n++ ? ", " : "", f);
		put_tile(f, t[i]);
	}
	if (in->imm)
		fprintf(f, "%simm 0x%x", n ? ", " : "", in->imm);
}

int vtpu_disasm(const void *binary, size_t size, void *file)
{
	const struct vtpu_prog_header *h = binary;
	const struct vtpu_insn *code;
	const char *meta;
	FILE *f = file;
	uint32_t i;

	if (size < sizeof(*h) || h->magic != VTPU_PROG_MAGIC ||
	    h->header_size != sizeof(*h) ||
	    h->code_size != (uint64_t)h->insn_count * sizeof(*code) ||
	    (uint64_t)h->header_size + h->code_size + h->const_size +
	    h->meta_size != size)
		return -EINVAL;
	code = (const void *)((const char *)binary + h->header_size);
	meta = (const char *)code + h->code_size + h->const_size;
	fprintf(f, "; vtpu program: %u insns, %u const bytes, vmem %u, %u bindings\n",
		h->insn_count, h->const_size, h->vmem_size, h->binding_count);
	for (i = 0; i < h->insn_count; i++) {
		fprintf(f, "%04x  ", i);
		if (code[i].op >= VTPU_OP_NR) {
			fprintf(f, "?op%u\n", code[i].op);
			continue;
		}
		put_insn(f, &code[i], meta, h->meta_size);
		fputc('\n', f);
	}
	return 0;
}
