// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * Random programs for vtpu-kfuzz: valid ones built with the test
 * assembler (every opcode, function, broadcast mode, dtype and DMA
 * direction, against the bindings the request really has, counted and
 * data-dependent loops), long-running ones for queues and timeouts (an
 * endless loop among them), and mutations of them that the host's
 * copy of the kernel validator judges, so the fuzzer knows what SUBMIT
 * must answer.
 *
 * VMEM is cut into equal slots; the operands of one instruction sit in
 * distinct slots (so never overlap) or, where the ISA allows it, are the
 * very same tile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kfuzz.h"
#include "vtpu_asm.h"

struct gen {
	struct kf_rng *r;
	struct vtpu_asm as;
	uint32_t nslots;
	uint32_t slot;		/* bytes per slot, a multiple of 64 */
	uint32_t maxe;		/* f32 elements that fit in a slot */
	const struct vtpu_binding_desc *bind;
	unsigned int nbind;
	uint32_t nstrings;
	unsigned int depth;	/* loops around the instruction being made */
};

static uint32_t esize(uint8_t dt)
{
	return dt == VTPU_DT_BF16 ? 2 : 4;
}

static uint8_t rand_dtype(struct gen *g)
{
	static const uint8_t dts[] = {
		VTPU_DT_F32, VTPU_DT_F32, VTPU_DT_BF16, VTPU_DT_S32,
	};

	return dts[kf_below(g->r, 4)];
}

/* A small dimension, biased to 1 and to powers of two. */
static uint32_t rand_dim(struct gen *g, uint32_t max)
{
	uint32_t d;

	if (!max)
		return 1;
	switch (kf_below(g->r, 4)) {
	case 0: d = 1; break;
	case 1: d = 1u << kf_below(g->r, 7); break;
	default: d = 1 + kf_below(g->r, 48); break;
	}
	return d > max ? max : d;
}

static void rand_shape(struct gen *g, uint32_t *rows, uint32_t *cols)
{
	*rows = rand_dim(g, g->maxe);
	*cols = rand_dim(g, g->maxe / *rows);
}

/* Tile of @rows x @cols in @slot, with padding between rows if it fits. */
static struct vtpu_tile tile(struct gen *g, unsigned int slot, uint8_t dt,
			     uint32_t rows, uint32_t cols)
{
	uint32_t stride = cols, pad = kf_chance(g->r, 25) ?
				     kf_below(g->r, 8) : 0;
	uint64_t bytes = ((uint64_t)(rows - 1) * (cols + pad) + cols) * esize(dt);

	if (bytes <= g->slot)
		stride = cols + pad;
	return vtpu_tile(slot * g->slot, rows, cols, stride, dt);
}

/* @n distinct slots. */
static void slots(struct gen *g, unsigned int *s, unsigned int n)
{
	unsigned int i, j;

	for (i = 0; i < n; i++) {
again:
		s[i] = kf_below(g->r, g->nslots);
		for (j = 0; j < i; j++)
			if (s[j] == s[i])
				goto again;
	}
}

static uint32_t rand_f32_bits(struct gen *g)
{
	static const float special[] = {
		0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e30f, -1e-30f, 65504.0f,
	};

	switch (kf_below(g->r, 6)) {
	case 0: return (uint32_t)kf_rand(g->r);
	case 1: return 0x7fc00000u;		/* NaN */
	case 2: return 0x7f800000u ^ (kf_below(g->r, 2) << 31);	/* inf */
	case 3: return vtpu_f32_bits(special[kf_below(g->r, 8)]);
	default:
		return vtpu_f32_bits((float)kf_below(g->r, 2000) / 500.0f - 2.0f);
	}
}

static uint16_t rand_bcast(struct gen *g)
{
	static const uint16_t modes[] = {
		VTPU_F_BCAST_NONE, VTPU_F_BCAST_SCALAR, VTPU_F_BCAST_ROW,
		VTPU_F_BCAST_COL, VTPU_F_BCAST_IMM,
	};

	return modes[kf_below(g->r, 5)];
}

/* Operand b of a broadcast instruction whose destination is @rows x @cols. */
static struct vtpu_tile bcast_tile(struct gen *g, uint16_t mode,
				   unsigned int slot, uint32_t rows,
				   uint32_t cols)
{
	switch (mode) {
	case VTPU_F_BCAST_SCALAR: return tile(g, slot, VTPU_DT_F32, 1, 1);
	case VTPU_F_BCAST_ROW: return tile(g, slot, VTPU_DT_F32, 1, cols);
	case VTPU_F_BCAST_COL: return tile(g, slot, VTPU_DT_F32, rows, 1);
	case VTPU_F_BCAST_IMM: return vtpu_no_tile;
	}
	return tile(g, slot, VTPU_DT_F32, rows, cols);
}

static void gen_elementwise(struct gen *g, uint8_t op)
{
	uint32_t rows, cols, imm = 0;
	uint16_t flags = 0;
	unsigned int s[3];
	struct vtpu_tile d, a, b = vtpu_no_tile;
	uint8_t sub = 0;

	rand_shape(g, &rows, &cols);
	slots(g, s, 3);
	d = tile(g, s[0], VTPU_DT_F32, rows, cols);
	/* In place (the very same tile) is allowed for sources. */
	a = kf_chance(g->r, 20) ? d : tile(g, s[1], VTPU_DT_F32, rows, cols);
	switch (op) {
	case VTPU_OP_UNARY:
		sub = kf_below(g->r, VTPU_UNARY_NR);
		break;
	case VTPU_OP_BINARY:
	case VTPU_OP_CMP:
	case VTPU_OP_SELECT:
		sub = op == VTPU_OP_BINARY ? kf_below(g->r, VTPU_BINARY_NR) :
		      op == VTPU_OP_CMP ? kf_below(g->r, VTPU_CMP_NR) : 0;
		flags = rand_bcast(g);
		b = bcast_tile(g, flags, s[2], rows, cols);
		if (flags == VTPU_F_BCAST_IMM)
			imm = rand_f32_bits(g);
		else if (flags == VTPU_F_BCAST_NONE && kf_chance(g->r, 15))
			b = d;
		break;
	}
	vtpu_asm_op(&g->as, op, sub, flags, imm, d, a, b);
}

static void gen_matmul(struct gen *g)
{
	uint32_t m = rand_dim(g, g->maxe), k, n;
	uint16_t flags = kf_below(g->r, 8);	/* ACC, TRANS_A, TRANS_B */
	uint8_t dt = kf_chance(g->r, 30) ? VTPU_DT_BF16 : VTPU_DT_F32;
	unsigned int s[3];
	struct vtpu_tile d, a, b;

	k = rand_dim(g, g->maxe / m);
	n = rand_dim(g, g->maxe / (m > k ? m : k));
	slots(g, s, 3);
	d = tile(g, s[0], VTPU_DT_F32, m, n);
	a = flags & VTPU_F_TRANS_A ? tile(g, s[1], dt, k, m) :
				     tile(g, s[1], dt, m, k);
	b = flags & VTPU_F_TRANS_B ? tile(g, s[2], dt, n, k) :
				     tile(g, s[2], dt, k, n);
	/* Both sources may be one tile when the shapes agree. */
	if (kf_chance(g->r, 10) && a.rows == b.rows && a.cols == b.cols)
		b = a;
	vtpu_asm_matmul(&g->as, d, a, b, flags);
}

static void gen_reduce(struct gen *g)
{
	uint16_t flags = kf_chance(g->r, 50) ? VTPU_F_AXIS_COLS :
					       VTPU_F_AXIS_ROWS;
	uint32_t rows, cols;
	unsigned int s[2];
	struct vtpu_tile d, a;

	if (kf_chance(g->r, 30))
		flags |= VTPU_F_ACC;
	rand_shape(g, &rows, &cols);
	slots(g, s, 2);
	a = tile(g, s[1], VTPU_DT_F32, rows, cols);
	d = flags & VTPU_F_AXIS_COLS ? tile(g, s[0], VTPU_DT_F32, rows, 1) :
				       tile(g, s[0], VTPU_DT_F32, 1, cols);
	vtpu_asm_reduce(&g->as, kf_below(g->r, VTPU_REDUCE_NR), d, a, flags);
}

static void gen_fill_iota(struct gen *g)
{
	uint32_t rows, cols;
	uint8_t dt = rand_dtype(g);
	struct vtpu_tile d;

	rand_shape(g, &rows, &cols);
	d = tile(g, kf_below(g->r, g->nslots), dt, rows, cols);
	if (kf_chance(g->r, 50))
		vtpu_asm_fill(&g->as, d, dt == VTPU_DT_S32 ?
			      (uint32_t)kf_rand(g->r) : rand_f32_bits(g));
	else
		vtpu_asm_iota(&g->as, d, (int32_t)kf_rand(g->r) >> kf_below(g->r, 32),
			      kf_chance(g->r, 50) ? VTPU_F_AXIS_ROWS : 0);
}

static void gen_convert_transpose(struct gen *g)
{
	uint32_t rows, cols;
	uint8_t dt = rand_dtype(g);
	unsigned int s[2];
	struct vtpu_tile d, a;

	rand_shape(g, &rows, &cols);
	slots(g, s, 2);
	a = tile(g, s[1], dt, rows, cols);
	if (kf_chance(g->r, 50)) {
		d = tile(g, s[0], rand_dtype(g), rows, cols);
		vtpu_asm_convert(&g->as, d, a);
	} else {
		d = tile(g, s[0], dt, cols, rows);
		vtpu_asm_transpose(&g->as, d, a);
	}
}

/* A binding the program may load from (@load) or store to; -1: none. */
static int pick_binding(struct gen *g, bool load)
{
	uint32_t want = load ? VTPU_ACCESS_READ : VTPU_ACCESS_WRITE;
	unsigned int i, start = kf_below(g->r, g->nbind ? g->nbind : 1);

	for (i = 0; i < g->nbind; i++) {
		unsigned int b = (start + i) % g->nbind;

		if (g->bind[b].access & want)
			return b;
	}
	return -1;
}

/* The binding side of a DMA: which binding, its type and its rows. */
struct dma_side {
	uint32_t binding;
	uint64_t limit;		/* its bytes */
	uint8_t mdt;
	uint32_t cols, row, stride;
};

/*
 * A binding to load from (@load, or the constants) or store to, of
 * @vdt's type or converted (f32 <-> bf16), a row width and stride that
 * fit it. False when there is none.
 */
static bool gen_dma_side(struct gen *g, bool load, uint8_t vdt,
			 struct dma_side *d)
{
	int b = pick_binding(g, load);

	if (load && (b < 0 || kf_chance(g->r, 20)) && g->as.const_size) {
		d->binding = VTPU_BINDING_CONSTANTS;
		d->limit = g->as.const_size;
	} else if (b >= 0) {
		d->binding = b;
		d->limit = g->bind[b].size;
	} else {
		return false;
	}
	d->mdt = vdt;
	if (vdt != VTPU_DT_S32 && kf_chance(g->r, 30))
		d->mdt = vdt == VTPU_DT_F32 ? VTPU_DT_BF16 : VTPU_DT_F32;
	if (d->limit < esize(d->mdt))
		return false;
	d->cols = rand_dim(g, g->maxe);
	if (d->cols > d->limit / esize(d->mdt))
		d->cols = d->limit / esize(d->mdt);
	d->row = d->cols * esize(d->mdt);
	d->stride = d->row + (kf_chance(g->r, 30) ? 4 * kf_below(g->r, 16) : 0);
	return true;
}

static void gen_dma(struct gen *g, bool load)
{
	uint8_t vdt = rand_dtype(g);
	uint64_t end, offset;
	struct dma_side d;
	struct vtpu_tile v;
	uint32_t rows;

	if (!gen_dma_side(g, load, vdt, &d))
		return;
	rows = rand_dim(g, g->maxe / d.cols);
	if (rows > 1 + (d.limit - d.row) / d.stride)
		rows = 1 + (d.limit - d.row) / d.stride;
	if (rows == 1 && kf_chance(g->r, 20))
		d.stride = kf_below(g->r, d.row + 1);	/* anything goes */
	end = (uint64_t)(rows - 1) * d.stride + d.row;
	offset = d.limit > end ? kf_rand(g->r) % (d.limit - end + 1) : 0;
	if (kf_chance(g->r, 50))
		offset &= ~3ULL;
	v = tile(g, kf_below(g->r, g->nslots), vdt, rows, d.cols);
	vtpu_asm_dma(&g->as, load ? VTPU_OP_DMA_LOAD : VTPU_OP_DMA_STORE, v,
		     d.binding, offset, d.stride, d.mdt);
}

/*
 * DMA_GATHER: rows of a table in a binding (or the constants) by the
 * indices in a slot, an IOTA that may run past the table's end, or
 * whatever the slot holds: a bad index ends the job with -ERANGE.
 */
static void gen_gather(struct gen *g)
{
	uint8_t vdt = rand_dtype(g);
	uint64_t end, offset;
	struct vtpu_tile v, idx;
	struct dma_side d;
	unsigned int s[2];
	uint32_t rows, k;

	if (!gen_dma_side(g, true, vdt, &d))
		return;
	rows = 1 + kf_below(g->r, 1 + (uint32_t)((d.limit - d.row) / d.stride));
	end = (uint64_t)(rows - 1) * d.stride + d.row;
	offset = d.limit > end ? kf_rand(g->r) % (d.limit - end + 1) : 0;
	slots(g, s, 2);
	k = rand_dim(g, g->maxe / d.cols);
	idx = vtpu_tile(s[1] * g->slot, 1, k, k, VTPU_DT_S32);
	if (kf_chance(g->r, 70))
		vtpu_asm_iota(&g->as, idx, (int32_t)kf_below(g->r, 2 * rows) -
			      (int32_t)rows, 0);
	v = tile(g, s[0], vdt, k, d.cols);
	vtpu_asm_dma_gather(&g->as, v, d.binding, offset, d.stride, d.mdt,
			    idx.addr, rows,
			    kf_chance(g->r, 50) ? VTPU_F_INDEX_WRAP : 0);
}

static void gen_trace(struct gen *g)
{
	vtpu_asm_trace(&g->as, g->nstrings ? kf_below(g->r, g->nstrings) :
					    (uint32_t)kf_rand(g->r));
}

static void gen_insn(struct gen *g);

/* Loops count in the last registers, which nothing else touches. */
#define LOOP_SREGS	4

/*
 * The scalar unit: SSET, SADD, or an SLOAD of whatever VMEM holds, and a
 * BRZ or BRNZ on it that skips a random instruction or not.
 */
static void gen_scalar(struct gen *g)
{
	uint8_t reg = kf_below(g->r, VTPU_SREGS - LOOP_SREGS);
	uint32_t vmem = g->nslots * g->slot;
	int br;

	switch (kf_below(g->r, 3)) {
	case 0:
		vtpu_asm_sset(&g->as, reg, (int32_t)kf_rand(g->r));
		break;
	case 1:
		vtpu_asm_sadd(&g->as, reg, (int32_t)kf_rand(g->r));
		break;
	default:
		if (vmem >= 4)
			vtpu_asm_sload(&g->as, reg,
				       kf_below(g->r, vmem / 4) * 4);
		break;
	}
	br = kf_chance(g->r, 50) ? vtpu_asm_brz(&g->as, reg, 0) :
				   vtpu_asm_brnz(&g->as, reg, 0);
	gen_insn(g);
	if (br >= 0)
		vtpu_asm_insn(&g->as, br)->imm = vtpu_asm_here(&g->as);
}

/* A counted loop of 1..8 passes around a few instructions. */
static void gen_loop(struct gen *g)
{
	uint8_t reg = VTPU_SREGS - LOOP_SREGS + kf_below(g->r, LOOP_SREGS);
	unsigned int n = 1 + kf_below(g->r, 3);
	uint32_t top;

	g->depth++;
	vtpu_asm_sset(&g->as, reg, 1 + kf_below(g->r, 8));
	top = vtpu_asm_here(&g->as);
	while (n--)
		gen_insn(g);
	vtpu_asm_sadd(&g->as, reg, -1);
	vtpu_asm_brnz(&g->as, reg, top);
	g->depth--;
}

static void gen_insn(struct gen *g)
{
	switch (kf_below(g->r, 18)) {
	case 0: case 1: gen_dma(g, true); break;
	case 2: case 3: gen_dma(g, false); break;
	case 4: gen_matmul(g); break;
	case 5: gen_elementwise(g, VTPU_OP_UNARY); break;
	case 6: gen_elementwise(g, VTPU_OP_BINARY); break;
	case 7: gen_elementwise(g, VTPU_OP_CMP); break;
	case 8: gen_elementwise(g, VTPU_OP_SELECT); break;
	case 9: gen_reduce(g); break;
	case 10: case 11: gen_fill_iota(g); break;
	case 12: gen_convert_transpose(g); break;
	case 13: gen_gather(g); break;
	case 14: gen_scalar(g); break;
	case 15:
		/* a loop's register is its own: no loop inside another */
		if (!g->depth) {
			gen_loop(g);
			break;
		}
		fallthrough;
	default: gen_trace(g); break;
	}
}

/* Many accumulating MATMULs: a job that keeps a core busy, or times out. */
static void gen_spin(struct gen *g)
{
	uint32_t n = 16 + kf_below(g->r, 81), count, i;
	int b = pick_binding(g, false);
	struct vtpu_tile a, bt, c;

	while (n > 1 && 3ULL * n * n * 4 > (uint64_t)g->nslots * g->slot)
		n /= 2;
	/* Now and then one past the job timeout, to be aborted. */
	count = kf_chance(g->r, 5) ? 200 + kf_below(g->r, 300) :
				     1 + kf_below(g->r, 20);
	a = vtpu_tile_f32(0, n, n, n);
	bt = vtpu_tile_f32(n * n * 4, n, n, n);
	c = vtpu_tile_f32(2 * n * n * 4, n, n, n);
	vtpu_asm_fill_f32(&g->as, a, 1.0f);
	vtpu_asm_fill_f32(&g->as, bt, 0.5f);
	for (i = 0; i < count; i++)
		vtpu_asm_matmul(&g->as, c, a, bt, i ? VTPU_F_ACC : 0);
	if (b >= 0 && g->bind[b].size >= 4)
		vtpu_asm_dma_store(&g->as, vtpu_tile_f32(2 * n * n * 4, 1, 1, 1),
				   b, 0, 4, VTPU_DT_F32);
}

/*
 * The profile attack (issue 11): store a large trace_count into the job's
 * own profile, through binding @b at @off, between TRACEs.
 */
static void gen_attack(struct gen *g, unsigned int b, uint64_t off)
{
	struct vtpu_tile t = vtpu_tile_s32(0, 1, 1, 1);
	uint32_t v;

	switch (kf_below(g->r, 3)) {
	case 0: v = 0x7fffffff; break;
	case 1: v = 1u << (8 + kf_below(g->r, 20)); break;
	default: v = (uint32_t)kf_rand(g->r); break;
	}
	gen_trace(g);
	vtpu_asm_fill(&g->as, t, v);
	vtpu_asm_dma_store(&g->as, t, b, off, 4, VTPU_DT_S32);
	gen_trace(g);
	gen_trace(g);
}

void kf_prog_check(struct kf_prog *p, const struct vtpu_binding_desc *bind,
		   unsigned int nbind, uint64_t vmem)
{
	struct vtpu_prog_info info;

	p->valid = p->buf && !vtpu_prog_validate(p->buf, p->size, bind, nbind,
						 vmem, &info, NULL);
	p->traces = p->valid ? info.trace_count : 0;
}

void kf_prog_free(struct kf_prog *p)
{
	free(p->buf);
	p->buf = NULL;
	p->size = 0;
}

/**
 * kf_prog_gen() - a random valid program for the given bindings
 * @r: random numbers
 * @vmem: the core's VMEM
 * @bind: the bindings the request will have
 * @nbind: how many
 * @attack_bind: a writable binding over the job's profile, or -1
 * @attack_off: where trace_count lies in that binding
 * @p: receives the program (free with kf_prog_free())
 *
 * Return: 0 or -ENOMEM.
 */
int kf_prog_gen(struct kf_rng *r, uint64_t vmem,
		const struct vtpu_binding_desc *bind, unsigned int nbind,
		int attack_bind, uint64_t attack_off, struct kf_prog *p)
{
	static const uint32_t budgets[] = {
		1024, 4096, 16384, 65536, 262144, 1u << 20,
	};
	struct gen g = { .r = r, .bind = bind, .nbind = nbind };
	uint32_t budget = budgets[kf_below(r, 6)], ninsns, i, nconst;
	float consts[512];

	if (budget > vmem)
		budget = vmem & ~63u;
	if (budget < 256)
		budget = vmem >= 256 ? 256 : (uint32_t)vmem;
	g.nslots = 4 + kf_below(r, 5);
	g.slot = budget / g.nslots & ~63u;
	if (g.slot < 64) {
		g.nslots = 1;
		g.slot = budget & ~3u;
	}
	g.maxe = g.slot / 4;
	vtpu_asm_init(&g.as, g.nslots * g.slot, nbind);

	nconst = kf_chance(r, 50) ? kf_below(r, 512) : 0;
	for (i = 0; i < nconst; i++)
		consts[i] = (float)kf_below(r, 4000) / 1000.0f - 2.0f;
	if (nconst)
		vtpu_asm_const(&g.as, consts, nconst * 4);
	for (i = kf_below(r, 4); i; i--) {
		static const char *const names[] = {
			"load", "matmul", "gelu", "", "store",
		};

		vtpu_asm_meta(&g.as, names[kf_below(r, 5)]);
		g.nstrings++;
	}

	if (attack_bind >= 0)
		gen_attack(&g, attack_bind, attack_off);
	if (kf_chance(r, 2)) {
		gen_spin(&g);
	} else if (kf_chance(r, 1)) {
		/* a loop that never ends: the job timeout stops it */
		vtpu_asm_jump(&g.as, vtpu_asm_here(&g.as));
	} else {
		ninsns = kf_chance(r, 10) ? kf_below(r, 200) : kf_below(r, 24);
		for (i = 0; i < ninsns; i++)
			gen_insn(&g);
	}
	vtpu_asm_end(&g.as);
	p->buf = vtpu_asm_finish(&g.as, &p->size);
	vtpu_asm_free(&g.as);
	if (!p->buf)
		return -ENOMEM;
	kf_prog_check(p, bind, nbind, vmem);
	return 0;
}

/* --- mutations ------------------------------------------------------------ */

static uint64_t edge_u32(struct kf_rng *r)
{
	static const uint64_t v[] = {
		0, 1, 2, 63, 64, 65, 0x7fff, 0xffff, 0x10000, 0x7fffffff,
		0x80000000, 0xfffffffe, 0xffffffff,
	};

	return kf_chance(r, 70) ? kf_pick_u64(r, v, sizeof(v) / sizeof(v[0])) :
				  (uint32_t)kf_rand(r);
}

/* One field of one instruction. */
static void mutate_insn(struct kf_rng *r, struct vtpu_insn *in)
{
	struct vtpu_tile *t = kf_chance(r, 34) ? &in->t.d :
			      kf_chance(r, 50) ? &in->t.a : &in->t.b;

	switch (kf_below(r, 14)) {
	case 0: in->op = kf_below(r, 3) ? kf_below(r, VTPU_OP_NR + 1) :
					  (uint8_t)kf_rand(r); break;
	case 1: in->sub = kf_below(r, 16); break;
	case 2: in->flags ^= 1u << kf_below(r, 16); break;
	case 3: in->imm = edge_u32(r); break;
	case 4: t->addr = edge_u32(r); break;
	case 5: t->rows = edge_u32(r); break;
	case 6: t->cols = edge_u32(r); break;
	case 7: t->stride = edge_u32(r); break;
	case 8: t->dtype = kf_below(r, 5); break;
	case 9: t->pad[kf_below(r, 3)] = 1; break;
	case 10: in->dma.offset = kf_chance(r, 50) ? edge_u32(r) :
				  kf_rand(r); break;
	case 11: in->dma.binding = kf_chance(r, 50) ? kf_below(r, 66) :
				   (uint32_t)edge_u32(r); break;
	case 12: in->dma.stride = edge_u32(r); break;
	default: in->reserved = 1; break;
	}
}

/* One header field to an edge value. */
static void mutate_header(struct kf_rng *r, struct vtpu_prog_header *h)
{
	switch (kf_below(r, 13)) {
	case 0: h->magic ^= 1u << kf_below(r, 32); break;
	case 1: h->format_version = kf_below(r, 3); break;
	case 2: h->isa_version = kf_below(r, VTPU_ISA_VERSION + 2); break;
	case 3: h->header_size = edge_u32(r); break;
	case 4: h->insn_count = edge_u32(r); break;
	case 5: h->code_size = edge_u32(r); break;
	case 6: h->const_size = edge_u32(r); break;
	case 7: h->meta_size = edge_u32(r); break;
	case 8: h->vmem_size = edge_u32(r); break;
	case 9: h->binding_count = edge_u32(r); break;
	case 10: h->flags = 1u << kf_below(r, 32); break;
	case 11: h->lanes = kf_below(r, 4); break;
	default: h->reserved[kf_below(r, 5)] = 1; break;
	}
}

/**
 * kf_prog_mutate() - damage a program the ways the validator must catch
 * @r: random numbers
 * @p: the program; re-judge it with kf_prog_check() afterwards
 *
 * Mostly the checksum is recomputed, so the damage reaches the checks
 * behind it.
 */
void kf_prog_mutate(struct kf_rng *r, struct kf_prog *p)
{
	struct vtpu_prog_header *h = p->buf;
	unsigned int ninsns, i, n;
	uint8_t *b = p->buf;
	bool fix_crc = kf_chance(r, 80);

	if (!p->buf || p->size < sizeof(*h))
		return;
	ninsns = (p->size - sizeof(*h)) / sizeof(struct vtpu_insn);
	switch (kf_below(r, 7)) {
	case 0:
		for (n = 1 + kf_below(r, 8); n; n--) {
			i = kf_below(r, p->size);
			b[i] ^= 1u << kf_below(r, 8);
		}
		break;
	case 1:
		mutate_header(r, h);
		break;
	case 2: case 3:
		if (!ninsns)
			break;
		for (n = 1 + kf_below(r, 2); n; n--)
			mutate_insn(r, (struct vtpu_insn *)(b + sizeof(*h)) +
				    kf_below(r, ninsns));
		break;
	case 4:
		/* Cut anywhere: SUBMIT's program_size says so. */
		p->size -= kf_below(r, p->size - sizeof(*h) + 1);
		break;
	case 5:
		if (ninsns >= 2) {
			struct vtpu_insn *code = (void *)(b + sizeof(*h));
			struct vtpu_insn tmp;
			unsigned int x = kf_below(r, ninsns);
			unsigned int y = kf_below(r, ninsns);

			tmp = code[x];
			code[x] = code[y];
			code[y] = tmp;
		}
		break;
	default:
		for (i = sizeof(*h); i < p->size; i++)
			if (kf_chance(r, 5))
				b[i] = kf_rand(r);
		break;
	}
	if (fix_crc)
		vtpu_asm_checksum(p->buf, p->size);
}
