// SPDX-License-Identifier: GPL-2.0-only OR MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * Program validation. A program that passes vtpu_prog_validate() can be
 * executed without any further check: every instruction is known and
 * well-formed, every tile lies inside the program's VMEM, every DMA stays
 * inside its binding with the access the submitter granted, every branch
 * lands on an instruction, and the code ends in exactly one END. The
 * executor relies on all of it.
 *
 * Each rule is a property of one instruction, so it holds whatever order
 * branches run the instructions in; END, the last instruction, is the only
 * way out of the code: nothing falls off its end.
 *
 * The rules come from uapi/drm/vtpu_isa.h; the per-opcode ones are driven
 * by its table, vtpu_isa_ops.h. Checks stop at the first broken rule and name
 * it in a static string. Integer code only.
 */
#include "vtpu_prog.h"

/* The opcode table by opcode byte; mnemonic is NULL for unknown opcodes. */
struct vtpu_op_desc {
	const char *mnemonic;
	u8 nsub;
	u8 kind[3];	/* t.d, t.a, t.b */
	u16 flags;
};

static const struct vtpu_op_desc vtpu_ops[256] = {
#define VTPU_OP(name, n_sub, kd, ka, kb, fl) \
	[VTPU_OP_##name] = { .mnemonic = #name, .nsub = n_sub, \
			     .kind = { kd, ka, kb }, .flags = fl },
#include <drm/vtpu_isa_ops.h>
#undef VTPU_OP
};

/* State of one validation. */
struct vtpu_prog_check {
	const struct vtpu_prog_header *hdr;
	const struct vtpu_binding_desc *bindings;
	u32 nbindings;
	struct vtpu_binding_desc *need;	/* non-NULL: loading, work it out */
	u32 nstrings;		/* metadata strings */
	s32 insn;		/* being checked, -1 for the header */
	u32 lane;		/* the lane instructions are in now */
	struct vtpu_prog_info info;
	struct vtpu_prog_error *err;
};

static int vtpu_reject(struct vtpu_prog_check *c, const char *why)
{
	c->err->insn = c->insn;
	c->err->why = why;
	return -EINVAL;
}

#ifdef __KERNEL__
static u32 vtpu_crc32_update(u32 crc, const void *buf, size_t len)
{
	return crc32_le(crc, buf, len);
}
#else
/* Reflected CRC-32 (polynomial 0xedb88320), four bits at a time. */
static const u32 vtpu_crc32_nibble[16] = {
	0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac,
	0x76dc4190, 0x6b6b51f4, 0x4db26158, 0x5005713c,
	0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
	0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
};

static u32 vtpu_crc32_update(u32 crc, const void *buf, size_t len)
{
	const u8 *p = buf;

	while (len--) {
		crc ^= *p++;
		crc = (crc >> 4) ^ vtpu_crc32_nibble[crc & 0xf];
		crc = (crc >> 4) ^ vtpu_crc32_nibble[crc & 0xf];
	}
	return crc;
}
#endif

/**
 * vtpu_prog_crc32() - CRC-32 of a buffer, as zlib's crc32(0, buf, len)
 * @buf: the bytes
 * @len: how many
 *
 * Return: the IEEE 802.3 CRC-32 of @buf.
 */
u32 vtpu_prog_crc32(const void *buf, size_t len)
{
	return ~vtpu_crc32_update(~0u, buf, len);
}

/* The checksum covers the whole program with the checksum field zeroed. */
static u32 vtpu_prog_checksum(const u8 *prog, size_t size)
{
	static const u8 zero[sizeof(u32)];
	size_t off = offsetof(struct vtpu_prog_header, checksum);
	u32 crc;

	crc = vtpu_crc32_update(~0u, prog, off);
	crc = vtpu_crc32_update(crc, zero, sizeof(zero));
	off += sizeof(zero);
	crc = vtpu_crc32_update(crc, prog + off, size - off);
	return ~crc;
}

static int vtpu_check_header(struct vtpu_prog_check *c, u64 size, u64 core_vmem)
{
	const struct vtpu_prog_header *h = c->hdr;

	if (h->magic != VTPU_PROG_MAGIC)
		return vtpu_reject(c, "bad magic");
	if (h->format_version != VTPU_PROG_FORMAT_VERSION)
		return vtpu_reject(c, "unsupported format version");
	if (h->isa_version < VTPU_ISA_VERSION_MIN ||
	    h->isa_version > VTPU_ISA_VERSION)
		return vtpu_reject(c, "unsupported ISA version");
	if (h->header_size != sizeof(*h))
		return vtpu_reject(c, "bad header size");
	if (!h->insn_count || h->insn_count > VTPU_MAX_INSNS)
		return vtpu_reject(c, "instruction count out of range");
	if ((u64)h->code_size != (u64)h->insn_count * sizeof(struct vtpu_insn))
		return vtpu_reject(c, "code size does not match instruction count");
	if (h->const_size > VTPU_MAX_CONST_SIZE)
		return vtpu_reject(c, "constants section too large");
	if (h->meta_size > VTPU_MAX_META_SIZE)
		return vtpu_reject(c, "metadata section too large");
	if ((u64)h->header_size + h->code_size + h->const_size + h->meta_size != size)
		return vtpu_reject(c, "program size does not match its sections");
	if (vtpu_prog_checksum((const u8 *)h, size) != h->checksum)
		return vtpu_reject(c, "checksum mismatch");
	if (h->flags)
		return vtpu_reject(c, "header flags not zero");
	if (!mem_is_zero(h->reserved, sizeof(h->reserved)))
		return vtpu_reject(c, "header reserved not zero");
	if (h->lanes && h->isa_version < 3)
		return vtpu_reject(c, "lanes need ISA version 3");
	if (h->lanes > VTPU_MAX_LANES)
		return vtpu_reject(c, "too many lanes");
	if (h->lanes > 1 && h->vmem_size / h->lanes < 64)
		return vtpu_reject(c, "lanes of less than 64 bytes of vmem");
	if (h->vmem_size > core_vmem)
		return vtpu_reject(c, "program needs more vmem than the core has");
	if (h->binding_count > VTPU_MAX_BINDINGS)
		return vtpu_reject(c, "too many bindings");
	if (!c->need && h->binding_count != c->nbindings)
		return vtpu_reject(c, "binding count mismatch");
	return 0;
}

/* Counts the metadata strings; a non-empty section ends in a NUL. */
static int vtpu_check_meta(struct vtpu_prog_check *c)
{
	const char *meta = c->info.meta;
	u32 i;

	if (!c->info.meta_size)
		return 0;
	if (meta[c->info.meta_size - 1])
		return vtpu_reject(c, "metadata not NUL-terminated");
	for (i = 0; i < c->info.meta_size; i++)
		c->nstrings += !meta[i];
	return 0;
}

static u32 vtpu_dtype_size(u8 dtype)
{
	switch (dtype) {
	case VTPU_DT_F32:
	case VTPU_DT_S32:
		return 4;
	case VTPU_DT_BF16:
		return 2;
	}
	return 0;
}

static bool vtpu_kind_allows(u8 kind, u8 dtype)
{
	switch (kind) {
	case VTPU_K_F32:
	case VTPU_K_IO:
		return dtype == VTPU_DT_F32;
	case VTPU_K_MXU:
		return dtype == VTPU_DT_F32 || dtype == VTPU_DT_BF16;
	}
	return true;
}

static u64 vtpu_tile_row_bytes(const struct vtpu_tile *t)
{
	return (u64)t->cols * vtpu_dtype_size(t->dtype);
}

static u64 vtpu_tile_stride_bytes(const struct vtpu_tile *t)
{
	return (u64)t->stride * vtpu_dtype_size(t->dtype);
}

/* One past the last byte; cannot overflow (< 2^51 for valid fields). */
static u64 vtpu_tile_end(const struct vtpu_tile *t)
{
	return t->addr + (u64)(t->rows - 1) * vtpu_tile_stride_bytes(t) +
	       vtpu_tile_row_bytes(t);
}

/*
 * Records that the instruction being checked reaches VMEM up to @end
 * (checked to lie inside its lane's share).
 */
static void vtpu_reach(struct vtpu_prog_check *c, u64 end)
{
	if (c->info.lane_size)
		end -= (u64)c->lane * c->info.lane_size;
	if (end > c->info.lane_reach)
		c->info.lane_reach = (u32)end;
}

static int vtpu_check_tile(struct vtpu_prog_check *c,
			   const struct vtpu_tile *t, u8 kind)
{
	u32 esize = vtpu_dtype_size(t->dtype);

	if (kind == VTPU_K_NONE)
		return mem_is_zero(t, sizeof(*t)) ? 0 :
		       vtpu_reject(c, "unused operand not zero");
	if (!t->rows)
		return vtpu_reject(c, "tile has zero rows");
	if (!t->cols)
		return vtpu_reject(c, "tile has zero columns");
	if (t->stride < t->cols)
		return vtpu_reject(c, "tile stride less than its columns");
	if (!esize)
		return vtpu_reject(c, "invalid tile dtype");
	if (!vtpu_kind_allows(kind, t->dtype))
		return vtpu_reject(c, "tile dtype not allowed for this operand");
	if (t->addr % esize)
		return vtpu_reject(c, "tile address misaligned");
	if (!mem_is_zero(t->pad, sizeof(t->pad)))
		return vtpu_reject(c, "tile pad not zero");
	if (vtpu_tile_end(t) > c->hdr->vmem_size)
		return vtpu_reject(c, "tile exceeds vmem");
	if (c->info.lane_size &&
	    (t->addr < (u64)c->lane * c->info.lane_size ||
	     vtpu_tile_end(t) > (u64)(c->lane + 1) * c->info.lane_size))
		return vtpu_reject(c, "tile outside its lane's vmem");
	vtpu_reach(c, vtpu_tile_end(t));
	return 0;
}

static s64 vtpu_floor_div(s64 n, s64 d)
{
	s64 q = div64_s64(n, d);

	return q * d > n ? q - 1 : q;
}

/*
 * Whether two checked tiles share a byte. Rows of x are the intervals
 * [x.addr + i * s, + wx), rows of y [y.addr + j * s, + wy); with
 * delta = y.addr - x.addr and k = j - i they meet iff
 * -wy < delta + k * s < wx for some k in [1 - x.rows, y.rows - 1].
 * Exact when the byte strides are equal or a tile has one row (the usual
 * case: blocks of one matrix); otherwise two tiles whose byte ranges
 * interleave count as overlapping.
 */
static bool vtpu_tiles_overlap(const struct vtpu_tile *x,
			       const struct vtpu_tile *y)
{
	s64 wx = vtpu_tile_row_bytes(x), wy = vtpu_tile_row_bytes(y);
	s64 sx = vtpu_tile_stride_bytes(x), sy = vtpu_tile_stride_bytes(y);
	s64 delta = (s64)y->addr - x->addr;
	s64 s, lo, hi;

	if (vtpu_tile_end(x) <= y->addr || vtpu_tile_end(y) <= x->addr)
		return false;
	if (x->rows == 1)
		s = sy;
	else if (y->rows == 1 || sx == sy)
		s = sx;
	else
		return true;
	lo = max_t(s64, vtpu_floor_div(-wy - delta, s) + 1, 1 - x->rows);
	hi = min_t(s64, -vtpu_floor_div(delta - wx, s) - 1, y->rows - 1);
	return lo <= hi;
}

/* "Exactly one of its sources": the same bytes, element for element. */
static bool vtpu_tiles_same(const struct vtpu_tile *x,
			    const struct vtpu_tile *y)
{
	return x->addr == y->addr && x->rows == y->rows &&
	       x->cols == y->cols && x->stride == y->stride &&
	       vtpu_dtype_size(x->dtype) == vtpu_dtype_size(y->dtype);
}

static bool vtpu_shape_is(const struct vtpu_tile *t, u32 rows, u32 cols)
{
	return t->rows == rows && t->cols == cols;
}

/*
 * DMA_GATHER's indices, as the tile they are (one row of s32), and the
 * extent of its whole table in the binding.
 */
static int vtpu_check_gather(struct vtpu_prog_check *c,
			     const struct vtpu_insn *in, u64 row, u64 *end)
{
	const struct vtpu_dma *m = &in->dma;
	struct vtpu_tile idx = {
		.addr = m->index, .rows = 1, .cols = m->v.rows,
		.stride = m->v.rows, .dtype = VTPU_DT_S32,
	};
	int ret;

	if (c->hdr->isa_version < 2)
		return vtpu_reject(c, "gather needs ISA version 2");
	ret = vtpu_check_tile(c, &idx, VTPU_K_ANY);
	if (ret)
		return ret;
	if (vtpu_tiles_overlap(&idx, &m->v))
		return vtpu_reject(c, "gather indices overlap the destination");
	if (!m->rows)
		return vtpu_reject(c, "gather table has no rows");
	if (m->rows > 1 && m->stride < row)
		return vtpu_reject(c, "dma stride less than a row");
	*end = (u64)(m->rows - 1) * m->stride + row;
	return 0;
}

static int vtpu_check_dma(struct vtpu_prog_check *c, const struct vtpu_insn *in)
{
	const struct vtpu_dma *m = &in->dma;
	bool gather = in->op == VTPU_OP_DMA_GATHER;
	bool load = in->op == VTPU_OP_DMA_LOAD || gather;
	u32 esize = vtpu_dtype_size(m->dtype);
	u64 limit, row, end;
	int ret;

	ret = vtpu_check_tile(c, &m->v, VTPU_K_ANY);
	if (ret)
		return ret;
	if (!mem_is_zero(m->pad, sizeof(m->pad)))
		return vtpu_reject(c, "dma pad not zero");
	if (!gather && (m->index || m->rows))
		return vtpu_reject(c, "dma index or rows not zero");
	if (m->step && c->hdr->isa_version < 6)
		return vtpu_reject(c, "dma step needs ISA version 6");
	if (m->step && gather)
		return vtpu_reject(c, "gather has no step");
	if (m->step > VTPU_MAX_DMA_STEP)
		return vtpu_reject(c, "dma step out of range");
	if (!esize)
		return vtpu_reject(c, "invalid dma dtype");
	if (m->dtype != m->v.dtype &&
	    !(m->dtype == VTPU_DT_F32 && m->v.dtype == VTPU_DT_BF16) &&
	    !(m->dtype == VTPU_DT_BF16 && m->v.dtype == VTPU_DT_F32))
		return vtpu_reject(c, "dma dtype conversion not supported");

	/* the bytes of one row, from its first element to its last */
	row = ((u64)(m->v.cols - 1) * max_t(u32, m->step, 1) + 1) * esize;
	if (gather) {
		ret = vtpu_check_gather(c, in, row, &end);
		if (ret)
			return ret;
	} else {
		if (m->v.rows > 1 && m->stride < row)
			return vtpu_reject(c, "dma stride less than a row");
		end = (u64)(m->v.rows - 1) * m->stride + row;
	}
	if (check_add_overflow(end, m->offset, &end))
		return vtpu_reject(c, "binding extent out of range");

	if (m->binding == VTPU_BINDING_CONSTANTS) {
		if (!load)
			return vtpu_reject(c, "store to the constants section");
		limit = c->info.const_size;
	} else if (m->binding >= c->hdr->binding_count) {
		return vtpu_reject(c, "binding index out of range");
	} else if (c->need) {
		/* Loading: what the program needs of the binding. */
		struct vtpu_binding_desc *n = &c->need[m->binding];

		n->access |= load ? VTPU_ACCESS_READ : VTPU_ACCESS_WRITE;
		n->size = max(n->size, end);
		limit = end;
	} else {
		const struct vtpu_binding_desc *b = &c->bindings[m->binding];

		if (load && !(b->access & VTPU_ACCESS_READ))
			return vtpu_reject(c, "binding not readable");
		if (!load && !(b->access & VTPU_ACCESS_WRITE))
			return vtpu_reject(c, "binding not writable");
		limit = b->size;
	}
	if (end > limit)
		return vtpu_reject(c, "binding extent out of range");

	c->info.dma_bytes += (u64)m->v.rows * row;
	return 0;
}

/* SLOAD, SSET, SADD, BRZ, BRNZ, JUMP: the scalar unit (ISA version 4). */
static bool vtpu_op_is_scalar(u8 op)
{
	switch (op) {
	case VTPU_OP_SLOAD:
	case VTPU_OP_SSET:
	case VTPU_OP_SADD:
	case VTPU_OP_BRZ:
	case VTPU_OP_BRNZ:
	case VTPU_OP_JUMP:
		return true;
	}
	return false;
}

static int vtpu_check_flags(struct vtpu_prog_check *c,
			    const struct vtpu_insn *in, u16 allowed)
{
	u16 axis = in->flags & (VTPU_F_AXIS_COLS | VTPU_F_AXIS_ROWS);
	bool imm;

	if (in->flags & ~allowed)
		return vtpu_reject(c, "flag not allowed for this opcode");
	if ((in->flags & VTPU_F_BCAST_MASK) > VTPU_F_BCAST_IMM)
		return vtpu_reject(c, "invalid broadcast mode");
	if (in->op == VTPU_OP_REDUCE &&
	    axis != VTPU_F_AXIS_COLS && axis != VTPU_F_AXIS_ROWS)
		return vtpu_reject(c, "reduce needs exactly one axis flag");

	imm = in->op == VTPU_OP_TRACE || in->op == VTPU_OP_FILL ||
	      in->op == VTPU_OP_IOTA || in->op == VTPU_OP_LANE ||
	      vtpu_op_is_scalar(in->op) ||
	      (in->flags & VTPU_F_BCAST_MASK) == VTPU_F_BCAST_IMM;
	if (!imm && in->imm)
		return vtpu_reject(c, "unused immediate not zero");
	return 0;
}

static int vtpu_check_matmul(struct vtpu_prog_check *c,
			     const struct vtpu_insn *in)
{
	const struct vtpu_tile *d = &in->t.d, *a = &in->t.a, *b = &in->t.b;
	bool ta = in->flags & VTPU_F_TRANS_A, tb = in->flags & VTPU_F_TRANS_B;
	u64 m = ta ? a->cols : a->rows, k = ta ? a->rows : a->cols;
	u64 kb = tb ? b->cols : b->rows, n = tb ? b->rows : b->cols;

	if (k != kb)
		return vtpu_reject(c, "matmul inner dimensions differ");
	if (!vtpu_shape_is(d, m, n))
		return vtpu_reject(c, "matmul output shape mismatch");
	if (vtpu_tiles_overlap(d, a) || vtpu_tiles_overlap(d, b))
		return vtpu_reject(c, "destination overlaps a source");
	c->info.flops += 2 * m * n * k;
	return 0;
}

static int vtpu_check_reduce(struct vtpu_prog_check *c,
			     const struct vtpu_insn *in)
{
	const struct vtpu_tile *d = &in->t.d, *a = &in->t.a;
	bool cols = in->flags & VTPU_F_AXIS_COLS;

	if (!vtpu_shape_is(d, cols ? a->rows : 1, cols ? 1 : a->cols))
		return vtpu_reject(c, "reduce output shape mismatch");
	if (vtpu_tiles_overlap(d, a))
		return vtpu_reject(c, "destination overlaps a source");
	c->info.flops += (u64)a->rows * a->cols;
	return 0;
}

static int vtpu_check_transpose(struct vtpu_prog_check *c,
				const struct vtpu_insn *in)
{
	const struct vtpu_tile *d = &in->t.d, *a = &in->t.a;

	if (!vtpu_shape_is(d, a->cols, a->rows))
		return vtpu_reject(c, "transpose shape mismatch");
	if (d->dtype != a->dtype)
		return vtpu_reject(c, "transpose changes dtype");
	if (vtpu_tiles_overlap(d, a))
		return vtpu_reject(c, "destination overlaps a source");
	c->info.flops += (u64)d->rows * d->cols;
	return 0;
}

static bool vtpu_bcast_fits(const struct vtpu_insn *in)
{
	const struct vtpu_tile *d = &in->t.d, *b = &in->t.b;

	switch (in->flags & VTPU_F_BCAST_MASK) {
	case VTPU_F_BCAST_NONE:
		return vtpu_shape_is(b, d->rows, d->cols);
	case VTPU_F_BCAST_SCALAR:
		return vtpu_shape_is(b, 1, 1);
	case VTPU_F_BCAST_ROW:
		return vtpu_shape_is(b, 1, d->cols);
	case VTPU_F_BCAST_COL:
		return vtpu_shape_is(b, d->rows, 1);
	}
	return true;	/* VTPU_F_BCAST_IMM: no operand b */
}

/* UNARY, BINARY, CMP, SELECT, CONVERT, FILL, IOTA. */
static int vtpu_check_elementwise(struct vtpu_prog_check *c,
				  const struct vtpu_insn *in, const u8 *kind)
{
	const struct vtpu_tile *d = &in->t.d, *a = &in->t.a, *b = &in->t.b;

	if (kind[1] && !vtpu_shape_is(a, d->rows, d->cols))
		return vtpu_reject(c, "source shape differs from destination");
	if (kind[2] && !vtpu_bcast_fits(in))
		return vtpu_reject(c, "broadcast operand shape mismatch");
	if ((kind[1] && !vtpu_tiles_same(d, a) && vtpu_tiles_overlap(d, a)) ||
	    (kind[2] && !vtpu_tiles_same(d, b) && vtpu_tiles_overlap(d, b)))
		return vtpu_reject(c, "destination partially overlaps a source");
	c->info.flops += (u64)d->rows * d->cols;
	return 0;
}

/*
 * BINARY. MADD (ISA version 5) reads d as well as writing it; the
 * elementwise rule, d exactly a, exactly b or disjoint from both, is what
 * makes that sound: every element reads its own d before it writes it,
 * whatever order the executor takes elements in, and no element reads
 * another's. It counts a multiply and an add.
 */
static int vtpu_check_binary(struct vtpu_prog_check *c,
			     const struct vtpu_insn *in, const u8 *kind)
{
	const struct vtpu_tile *d = &in->t.d;
	int ret;

	if (in->sub == VTPU_BINARY_MADD && c->hdr->isa_version < 5)
		return vtpu_reject(c, "fused multiply-add needs ISA version 5");
	ret = vtpu_check_elementwise(c, in, kind);
	if (!ret && in->sub == VTPU_BINARY_MADD)
		c->info.flops += (u64)d->rows * d->cols;
	return ret;
}

/*
 * The scalar unit and branches. They belong to lane 0, like TRACE and
 * END: lanes may run at once on several cores, and an SLOAD of another
 * lane's VMEM would race with its writes. A branch needs a program of one
 * lane, whose one executor runs every instruction: a loop around the lanes
 * would have every core follow one core's registers.
 */
static int vtpu_check_scalar(struct vtpu_prog_check *c,
			     const struct vtpu_insn *in)
{
	if (c->hdr->isa_version < 4)
		return vtpu_reject(c, "scalar registers and branches need ISA version 4");

	switch (in->op) {
	case VTPU_OP_SLOAD:
		if (in->imm % sizeof(s32))
			return vtpu_reject(c, "sload address misaligned");
		if ((u64)in->imm + sizeof(s32) > c->hdr->vmem_size)
			return vtpu_reject(c, "sload address exceeds vmem");
		if (c->info.lane_size && (u64)in->imm + sizeof(s32) > c->info.lane_size)
			return vtpu_reject(c, "sload outside lane 0's vmem");
		vtpu_reach(c, (u64)in->imm + sizeof(s32));
		break;
	case VTPU_OP_BRZ:
	case VTPU_OP_BRNZ:
	case VTPU_OP_JUMP:
		if (in->imm >= c->info.insn_count)
			return vtpu_reject(c, "branch target out of range");
		if (c->info.lanes > 1)
			return vtpu_reject(c, "branches need a program of one lane");
		c->info.branch_count++;
		break;
	}
	if (c->lane)
		return vtpu_reject(c, "scalar instruction outside lane 0");
	return 0;
}

/* Operands and the opcode's shape and aliasing rules. */
static int vtpu_check_operands(struct vtpu_prog_check *c,
			       const struct vtpu_insn *in,
			       const struct vtpu_op_desc *op)
{
	const struct vtpu_tile *t[3] = { &in->t.d, &in->t.a, &in->t.b };
	u8 kind[3] = { op->kind[0], op->kind[1], op->kind[2] };
	int i, ret;

	if (kind[0] == VTPU_K_DMA)
		return vtpu_check_dma(c, in);

	if ((in->flags & VTPU_F_BCAST_MASK) == VTPU_F_BCAST_IMM)
		kind[2] = VTPU_K_NONE;
	for (i = 0; i < 3; i++) {
		ret = vtpu_check_tile(c, t[i], kind[i]);
		if (ret)
			return ret;
	}

	if (vtpu_op_is_scalar(in->op))
		return vtpu_check_scalar(c, in);
	switch (in->op) {
	case VTPU_OP_END:
	case VTPU_OP_TRACE:
	case VTPU_OP_LANE:
	case VTPU_OP_BARRIER:
		return 0;
	case VTPU_OP_MATMUL:
		return vtpu_check_matmul(c, in);
	case VTPU_OP_REDUCE:
		return vtpu_check_reduce(c, in);
	case VTPU_OP_TRANSPOSE:
		return vtpu_check_transpose(c, in);
	case VTPU_OP_BINARY:
		return vtpu_check_binary(c, in, kind);
	}
	return vtpu_check_elementwise(c, in, kind);
}

/*
 * LANE and BARRIER move between lanes; TRACE and END belong to lane 0,
 * so that only one core reports a program's progress and ends it.
 */
static int vtpu_check_lanes(struct vtpu_prog_check *c,
			    const struct vtpu_insn *in)
{
	u32 lanes = max_t(u32, c->hdr->lanes, 1);

	switch (in->op) {
	case VTPU_OP_LANE:
	case VTPU_OP_BARRIER:
		if (c->hdr->isa_version < 3)
			return vtpu_reject(c, "lanes need ISA version 3");
		if (in->op == VTPU_OP_LANE && in->imm >= lanes)
			return vtpu_reject(c, "lane out of range");
		c->lane = in->op == VTPU_OP_LANE ? in->imm : 0;
		return 0;
	case VTPU_OP_TRACE:
	case VTPU_OP_END:
		if (c->lane)
			return vtpu_reject(c, "TRACE or END outside lane 0");
		return 0;
	}
	return 0;
}

static int vtpu_check_insn(struct vtpu_prog_check *c, const struct vtpu_insn *in)
{
	const struct vtpu_op_desc *op = &vtpu_ops[in->op];
	bool last = (u32)c->insn == c->info.insn_count - 1;
	int ret;

	if (!op->mnemonic)
		return vtpu_reject(c, "unknown opcode");
	if (op->nsub ? in->sub >= op->nsub : in->sub)
		return vtpu_reject(c, "invalid function selector");
	ret = vtpu_check_flags(c, in, op->flags);
	if (ret)
		return ret;
	if (in->reserved)
		return vtpu_reject(c, "instruction reserved not zero");
	ret = vtpu_check_operands(c, in, op);
	if (ret)
		return ret;

	if (in->op == VTPU_OP_END && !last)
		return vtpu_reject(c, "END before the last instruction");
	if (in->op != VTPU_OP_END && last)
		return vtpu_reject(c, "last instruction is not END");
	if (in->op == VTPU_OP_TRACE) {
		if (c->info.meta_size && in->imm >= c->nstrings)
			return vtpu_reject(c, "trace id has no metadata string");
		c->info.trace_count++;
	}
	return vtpu_check_lanes(c, in);
}

static int vtpu_prog_check_all(struct vtpu_prog_check *c, const void *prog,
			       u64 size, u64 vmem_size,
			       struct vtpu_prog_info *info)
{
	const u8 *p = prog;
	u32 i;
	int ret;

	if (size < sizeof(struct vtpu_prog_header))
		return vtpu_reject(c, "program smaller than its header");
	if ((uintptr_t)prog % 8)
		return vtpu_reject(c, "program buffer misaligned");
	ret = vtpu_check_header(c, size, vmem_size);
	if (ret)
		return ret;

	c->info.hdr = c->hdr;
	c->info.code = (const struct vtpu_insn *)(p + c->hdr->header_size);
	c->info.consts = p + c->hdr->header_size + c->hdr->code_size;
	c->info.meta = (const char *)c->info.consts + c->hdr->const_size;
	c->info.insn_count = c->hdr->insn_count;
	c->info.const_size = c->hdr->const_size;
	c->info.meta_size = c->hdr->meta_size;
	c->info.vmem_size = c->hdr->vmem_size;
	c->info.binding_count = c->hdr->binding_count;
	c->info.lanes = max_t(u32, c->hdr->lanes, 1);
	if (c->info.lanes > 1)
		c->info.lane_size = c->hdr->vmem_size / c->info.lanes & ~63u;

	ret = vtpu_check_meta(c);
	if (ret)
		return ret;
	for (i = 0; i < c->info.insn_count; i++) {
		c->insn = i;
		ret = vtpu_check_insn(c, &c->info.code[i]);
		if (ret)
			return ret;
	}

	if (info)
		*info = c->info;
	return 0;
}

/**
 * vtpu_prog_validate() - check a program completely before it runs
 * @prog: the program; the caller's own copy, which must not change
 *	until the program has run. 8-byte aligned.
 * @size: bytes of @prog; nothing beyond them is read
 * @bindings: the buffers bound at submit, @nbindings of them
 * @nbindings: must equal the header's binding_count
 * @vmem_size: VMEM of the core(s) the program may run on
 * @info: filled on success with pointers into @prog and static counts
 * @err: on failure, the instruction (-1: header or sections) and the rule
 *	broken; may be NULL
 *
 * Return: 0 if the executor may run the program, -EINVAL otherwise.
 */
int vtpu_prog_validate(const void *prog, u64 size,
		       const struct vtpu_binding_desc *bindings, u32 nbindings,
		       u64 vmem_size, struct vtpu_prog_info *info,
		       struct vtpu_prog_error *err)
{
	struct vtpu_prog_error unused;
	struct vtpu_prog_check c = {
		.hdr = prog,
		.bindings = bindings,
		.nbindings = nbindings,
		.insn = -1,
		.err = err ?: &unused,
	};

	return vtpu_prog_check_all(&c, prog, size, vmem_size, info);
}

/**
 * vtpu_prog_load() - check a program completely, once, before its bindings
 * @prog: the program, as for vtpu_prog_validate()
 * @size: bytes of @prog
 * @vmem_size: VMEM of the core(s) the program may run on
 * @info: filled on success, as by vtpu_prog_validate()
 * @need: VTPU_MAX_BINDINGS entries; on success the first
 *	@info->binding_count say what the program needs of each binding:
 *	the bytes it touches from the range's start and the access it makes
 *	(both 0 for a binding it never touches)
 * @err: on failure, as for vtpu_prog_validate(); may be NULL
 *
 * The program then runs with any bindings that vtpu_prog_bindings_ok()
 * accepts: vtpu_prog_validate() with them would have passed.
 *
 * Return: 0 or -EINVAL.
 */
int vtpu_prog_load(const void *prog, u64 size, u64 vmem_size,
		   struct vtpu_prog_info *info, struct vtpu_binding_desc *need,
		   struct vtpu_prog_error *err)
{
	struct vtpu_prog_error unused;
	struct vtpu_prog_check c = {
		.hdr = prog,
		.need = need,
		.insn = -1,
		.err = err ?: &unused,
	};

	memset(need, 0, VTPU_MAX_BINDINGS * sizeof(*need));
	return vtpu_prog_check_all(&c, prog, size, vmem_size, info);
}

/**
 * vtpu_prog_bindings_ok() - may a loaded program run with these bindings?
 * @need: what vtpu_prog_load() reported, @n entries
 * @given: the buffers bound at submit, @n entries
 * @n: the program's binding count
 *
 * Return: -1 if every binding is long enough and grants the access the
 * program makes of it, else the index of the first that does not.
 */
int vtpu_prog_bindings_ok(const struct vtpu_binding_desc *need,
			  const struct vtpu_binding_desc *given, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		if (given[i].size < need[i].size ||
		    need[i].access & ~given[i].access)
			return i;
	}
	return -1;
}
