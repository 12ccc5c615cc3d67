// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * fused.c - the compute kernels: a chain of elementwise nodes, optionally
 * led by a P_MATMUL whose output tile the chain consumes in VMEM before
 * anything is stored (epilogue fusion). A single elementwise node is the
 * one-node case of the same code.
 *
 * Every value of the kernel has the same number of elements, so they all
 * share one 2-D view of their row-major bytes ([n / w x w] for a chain,
 * [B*M x N] behind a matmul) and one tile walks all of them at once.
 * Each value gets a VMEM slot of one tile for as long as the chain still
 * reads it (linear scan), plus one temporary for conversions; values read
 * or kept outside the kernel are stored as soon as they are computed.
 * Compute is f32: bf16 data are converted by DMA and results of bf16
 * nodes rounded to bf16 in VMEM, s32 data are converted in VMEM.
 *
 * A virtual broadcast operand (fuse.c) is loaded as what it repeats, a
 * 1x1, rows x 1 or 1 x cols tile (or not at all: a scalar constant is an
 * immediate), and used through the ISA's broadcast flags; where an
 * instruction cannot take it as operand b, it is first expanded into a
 * full tile in VMEM.
 *
 * A matmul's B may be a virtual im2col view (fuse.c): each row of a B
 * tile is then loaded straight from the convolution's input, a DMA per
 * run of output rows. Such tiles pay per run they cut, so C tiles of
 * whole rows grow past the MXU's width and take a MATMUL per
 * CG_MM_DIM columns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

struct fk {
	struct cg *c;
	const int *nodes;
	int nn;
	int mm;			/* the leading P_MATMUL, or -1 */
	int key;		/* node_kernel() of the kernel */
	int *ext;		/* operands from other kernels */
	int next;
	int *owner;		/* per node: the value whose slot it uses */
	int *slot;		/* per owner: its slot */
	int nslots, tmp;	/* tmp: the conversion slot, or -1 */
	int64_t slot_elems;
	/* the current tile, in a view of rows @rowlen elements long */
	int64_t rows, cols, rowlen;
};

/* An operand of an instruction: a tile, or a broadcast (VTPU_F_BCAST_*). */
struct opnd {
	struct vtpu_tile t;
	uint16_t bc;
	uint32_t imm;
};

static const struct vtpu_tile none;

static struct vtpu_tile slot_tile(const struct fk *k, int s, uint8_t dt)
{
	return vtile(s * k->slot_elems * 4, k->rows, k->cols, k->cols, dt);
}

static bool is_virt(const struct fk *k, int v)
{
	return k->c->g->nodes[v].virt;
}

/* The f32 bits of a virtual scalar whose source is a constant, if it is. */
static bool view_imm(const struct fk *k, int v, uint32_t *bits)
{
	const struct ir_graph *g = k->c->g;
	const struct ir_node *n = &g->nodes[v], *src;
	int64_t st, i = n->a.view.offset;
	float f;

	if (!n->virt || ir_bcast_class(g, v, 1, &st) != BC_SCALAR)
		return false;
	src = &g->nodes[node_root(g, n->in[0])];
	if (src->op != OP_CONST)
		return false;
	switch (src->shape.type) {
	case VTPU_F32:
		f = ((const float *)src->a.cst.data)[i];
		break;
	case VTPU_BF16:
		f = vtpu_bf16_to_f32(((const uint16_t *)src->a.cst.data)[i]);
		break;
	case VTPU_PRED:
		f = ((const uint8_t *)src->a.cst.data)[i] ? 1.0f : 0.0f;
		break;
	default:
		return false;	/* s32: loaded and converted as in memory */
	}
	memcpy(bits, &f, 4);
	return true;
}

/* Value @v as an operand of the current tile. */
static struct opnd opnd(const struct fk *k, int v)
{
	struct vtpu_tile t = slot_tile(k, k->slot[k->owner[v]], VTPU_DT_F32);
	struct opnd o = { .t = t };
	int64_t st;

	if (!is_virt(k, v))
		return o;
	if (view_imm(k, v, &o.imm)) {
		o.t = none;
		o.bc = VTPU_F_BCAST_IMM;
		return o;
	}
	switch (ir_bcast_class(k->c->g, v, k->rowlen, &st)) {
	case BC_COL:
		o.t = vtile(t.addr, k->rows, 1, 1, VTPU_DT_F32);
		o.bc = VTPU_F_BCAST_COL;
		break;
	case BC_ROW:
		o.t = vtile(t.addr, 1, k->cols, k->cols, VTPU_DT_F32);
		o.bc = VTPU_F_BCAST_ROW;
		break;
	default:	/* fuse.c made no other kind virtual */
		o.t = vtile(t.addr, 1, 1, 1, VTPU_DT_F32);
		o.bc = VTPU_F_BCAST_SCALAR;
		break;
	}
	return o;
}

static struct vtpu_tile val_tile(const struct fk *k, int v)
{
	return opnd(k, v).t;
}

/* Parameters and constants are memory, whatever kernel they are given. */
static int in_kernel(const struct fk *k, int v)
{
	enum ir_op op = k->c->g->nodes[v].op;

	return node_kernel(k->c->g, v) == k->key && op != OP_PARAM &&
	       op != OP_CONST;
}

/* ---- slots --------------------------------------------------------------- */

/* Operands sharing bytes (a value and its RESHAPE) are loaded once. */
static void add_ext(struct fk *k, int x)
{
	const struct ir_graph *g = k->c->g;
	int i;

	for (i = 0; i < k->next; i++)
		if (node_root(g, k->ext[i]) == node_root(g, x)) {
			k->owner[x] = k->ext[i];
			return;
		}
	k->ext[k->next++] = x;
	k->owner[x] = x;
}

/*
 * Whether @x comes from memory: made by another kernel, or a RESHAPE of
 * such a value (loaded only if something computes with it: an alias
 * alone must not read, e.g. from an output binding).
 */
static int is_ext(const struct fk *k, int x)
{
	const struct ir_node *n = &k->c->g->nodes[x];

	if (!in_kernel(k, x))
		return 1;
	return n->op == OP_RESHAPE && is_ext(k, n->in[0]);
}

/* Last position (0: the loads, i + 1: node i) each owner is read at. */
static void last_uses(struct fk *k, int *last, int *def)
{
	const struct ir_graph *g = k->c->g;
	int i, j;

	for (i = 0; i < k->next; i++)
		last[k->ext[i]] = def[k->ext[i]] = 0;
	for (i = 0; i < k->nn; i++) {
		const struct ir_node *n = &g->nodes[k->nodes[i]];

		if (n->op == OP_RESHAPE)
			continue;
		for (j = 0; j < n->nin && k->nodes[i] != k->mm; j++) {
			int o = k->owner[n->in[j]];

			if (last[o] < i + 1)
				last[o] = i + 1;
		}
		if (n->op != OP_RESHAPE)
			def[k->nodes[i]] = last[k->nodes[i]] = i + 1;
	}
}

static int take_slot(int *used, int *nslots)
{
	int s;

	for (s = 0; s < *nslots; s++)
		if (!used[s])
			break;
	if (s == *nslots)
		(*nslots)++;
	used[s] = 1;
	return s;
}

/* Linear scan over positions; frees a slot after its owner's last read. */
static void assign_slots(struct fk *k, const int *last, const int *def)
{
	const struct ir_graph *g = k->c->g;
	int *used = calloc(k->nn + k->next + 2, sizeof(int));
	int *held = calloc(k->nn + k->next + 2, sizeof(int));
	int i, t, s, v;

	if (!used || !held) {
		cg_fail(k->c, ENOMEM, "out of memory");
		goto out;
	}
	for (t = 0; t <= k->nn; t++) {
		for (s = 0; s < k->nslots; s++)
			if (used[s] && last[held[s]] < t)
				used[s] = 0;
		for (i = 0; i < k->next && !t; i++) {
			uint32_t bits;

			if (view_imm(k, k->ext[i], &bits))
				continue;	/* an immediate: no slot */
			s = take_slot(used, &k->nslots);
			k->slot[k->ext[i]] = s;
			held[s] = k->ext[i];
		}
		if (!t)
			continue;
		v = k->nodes[t - 1];
		if (g->nodes[v].op == OP_RESHAPE || def[v] != t)
			continue;
		s = take_slot(used, &k->nslots);
		k->slot[v] = s;
		held[s] = v;
	}
out:
	free(used);
	free(held);
}

static int needs_tmp(const struct fk *k)
{
	const struct ir_graph *g = k->c->g;
	int i;

	for (i = 0; i < k->nn; i++) {
		const struct ir_node *n = &g->nodes[k->nodes[i]];

		if (n->op == OP_CONVERT || n->shape.type == VTPU_BF16 ||
		    n->shape.type == VTPU_S32)
			return 1;
		/* SELECT's a cannot broadcast: expanded there */
		if (n->op == OP_SELECT && is_virt(k, n->in[1]))
			return 1;
	}
	return 0;
}

/* Operands, owners (RESHAPE shares its operand's slot) and slots. */
static int plan_slots(struct fk *k)
{
	const struct ir_graph *g = k->c->g;
	int *last = calloc(g->n + 1, sizeof(int)), *def = calloc(g->n + 1, sizeof(int));
	int i, j;

	if (!last || !def) {
		free(last);
		free(def);
		return cg_fail(k->c, ENOMEM, "out of memory");
	}
	for (i = 0; i < k->nn; i++) {
		const struct ir_node *n = &g->nodes[k->nodes[i]];

		if (n->op == OP_RESHAPE) {
			if (!is_ext(k, k->nodes[i]))
				k->owner[k->nodes[i]] = k->owner[n->in[0]];
			continue;
		}
		for (j = 0; j < n->nin && k->nodes[i] != k->mm; j++)
			if (is_ext(k, n->in[j]))
				add_ext(k, n->in[j]);
		k->owner[k->nodes[i]] = k->nodes[i];
	}
	last_uses(k, last, def);
	assign_slots(k, last, def);
	k->tmp = needs_tmp(k) ? k->nslots++ : -1;
	free(last);
	free(def);
	return k->c->ret;
}

/* ---- one tile ------------------------------------------------------------ */

/* Rounds an f32 tile to bf16 precision through the temporary slot. */
static void round_bf16(struct fk *k, struct vtpu_tile d)
{
	struct vtpu_tile t = slot_tile(k, k->tmp, VTPU_DT_BF16);

	emit_op(&k->c->e, VTPU_OP_CONVERT, 0, 0, 0, t, d, none);
	emit_op(&k->c->e, VTPU_OP_CONVERT, 0, 0, 0, d, t, none);
}

/* What virtual view @x repeats for the tile at @elem. */
static void load_view(struct fk *k, int x, int64_t elem)
{
	const struct ir_node *n = &k->c->g->nodes[x];
	struct loc l = loc_of(k->c, n->in[0]);
	struct opnd o = opnd(k, x);
	int64_t es = dt_size(l.dt), at = n->a.view.offset, st;
	struct vtpu_tile s = o.t;

	if (o.bc == VTPU_F_BCAST_IMM)
		return;
	if (ir_bcast_class(k->c->g, x, k->rowlen, &st) == BC_COL)
		at += elem / k->rowlen * st;
	else if (o.bc == VTPU_F_BCAST_ROW)
		at += elem % k->rowlen;
	if (l.dt == VTPU_DT_S32)
		s.dtype = VTPU_DT_S32;
	emit_dma(&k->c->e, 0, s, l.binding, l.off + at * es,
		 (o.bc == VTPU_F_BCAST_COL ? st : s.cols) * es, l.dt);
	if (l.dt == VTPU_DT_S32)
		emit_op(&k->c->e, VTPU_OP_CONVERT, 0, 0, 0, o.t, s, none);
}

static void load(struct fk *k, int x, int64_t elem, int64_t rowlen)
{
	struct loc l;
	int es;
	struct vtpu_tile t, s;

	if (is_virt(k, x)) {
		load_view(k, x, elem);
		return;
	}
	l = loc_of(k->c, x);
	es = dt_size(l.dt);
	t = val_tile(k, x);
	s = t;
	if (l.dt == VTPU_DT_S32) {
		s.dtype = VTPU_DT_S32;
		emit_dma(&k->c->e, 0, s, l.binding, l.off + elem * es,
			 rowlen * es, l.dt);
		emit_op(&k->c->e, VTPU_OP_CONVERT, 0, 0, 0, t, s, none);
		return;
	}
	emit_dma(&k->c->e, 0, t, l.binding, l.off + elem * es, rowlen * es,
		 l.dt);
}

static void store(struct fk *k, int v, int64_t elem, int64_t rowlen)
{
	struct loc l = loc_of(k->c, v);
	int es = dt_size(l.dt);
	struct vtpu_tile t = val_tile(k, v);

	if (l.dt == VTPU_DT_S32) {
		struct vtpu_tile s = slot_tile(k, k->tmp, VTPU_DT_S32);

		emit_op(&k->c->e, VTPU_OP_CONVERT, 0, 0, 0, s, t, none);
		t = s;
	}
	emit_dma(&k->c->e, 1, t, l.binding, l.off + elem * es, rowlen * es,
		 l.dt);
}

static uint8_t unary_fn(enum ir_op op)
{
	switch (op) {
	case OP_NEG: return VTPU_UNARY_NEG;
	case OP_ABS: return VTPU_UNARY_ABS;
	case OP_EXP: return VTPU_UNARY_EXP;
	case OP_LOG: return VTPU_UNARY_LOG;
	case OP_SQRT: return VTPU_UNARY_SQRT;
	case OP_RSQRT: return VTPU_UNARY_RSQRT;
	case OP_TANH: return VTPU_UNARY_TANH;
	case OP_LOGISTIC: return VTPU_UNARY_SIGMOID;
	case OP_RELU: return VTPU_UNARY_RELU;
	case OP_GELU: return VTPU_UNARY_GELU;
	default: return VTPU_UNARY_COPY;
	}
}

static uint8_t binary_fn(enum ir_op op)
{
	return op - OP_ADD;	/* ADD..POW follow the ISA's order */
}

/* CONVERT within the kernel: every value is already an f32 in VMEM. */
static void gen_convert(struct fk *k, const struct ir_node *n,
			struct vtpu_tile d, struct vtpu_tile a)
{
	enum vtpu_type from = k->c->g->nodes[n->in[0]].shape.type;
	struct vtpu_tile s;

	switch (n->shape.type) {
	case VTPU_PRED:
		emit_op(&k->c->e, VTPU_OP_CMP, VTPU_CMP_NE, VTPU_F_BCAST_IMM, 0,
			d, a, none);
		return;
	case VTPU_S32:
		if (from == VTPU_F32 || from == VTPU_BF16) {
			/* truncation toward zero, as the ISA's CONVERT does */
			s = d;
			s.dtype = VTPU_DT_S32;
			emit_op(&k->c->e, VTPU_OP_CONVERT, 0, 0, 0, s, a, none);
			emit_op(&k->c->e, VTPU_OP_CONVERT, 0, 0, 0, d, s, none);
			return;
		}
		break;
	default:
		break;
	}
	emit_op(&k->c->e, VTPU_OP_UNARY, VTPU_UNARY_COPY, 0, 0, d, a, none);
}

/*
 * @o as a full tile: @d itself, filled with it (-0 + x is x for every
 * x, zeros' signs included); @o itself when it is one already.
 */
static struct vtpu_tile expand(struct fk *k, struct vtpu_tile d, struct opnd o)
{
	if (!o.bc)
		return o.t;
	if (o.bc == VTPU_F_BCAST_IMM) {
		emit_op(&k->c->e, VTPU_OP_FILL, 0, 0, o.imm, d, none, none);
		return d;
	}
	emit_op(&k->c->e, VTPU_OP_FILL, 0, 0, 0x80000000u, d, none, none);
	emit_op(&k->c->e, VTPU_OP_BINARY, VTPU_BINARY_ADD, o.bc, 0, d, d, o.t);
	return d;
}

/*
 * The function that gives a f b as b f' a, for an operand a that
 * broadcasts; -1: none (SUB, DIV, POW).
 */
static int swapped(uint8_t op, uint8_t sub)
{
	static const int8_t cmp[VTPU_CMP_NR] = {
		[VTPU_CMP_EQ] = VTPU_CMP_EQ, [VTPU_CMP_NE] = VTPU_CMP_NE,
		[VTPU_CMP_LT] = VTPU_CMP_GT, [VTPU_CMP_LE] = VTPU_CMP_GE,
		[VTPU_CMP_GT] = VTPU_CMP_LT, [VTPU_CMP_GE] = VTPU_CMP_LE,
	};

	if (op == VTPU_OP_CMP)
		return cmp[sub];
	return sub == VTPU_BINARY_ADD || sub == VTPU_BINARY_MUL ||
	       sub == VTPU_BINARY_MAX || sub == VTPU_BINARY_MIN ? sub : -1;
}

static void compute_binary(struct fk *k, const struct ir_node *n,
			   struct vtpu_tile d)
{
	uint8_t op = n->op == OP_COMPARE ? VTPU_OP_CMP : VTPU_OP_BINARY;
	uint8_t sub = n->op == OP_COMPARE ? n->a.cmp.dir : binary_fn(n->op);
	struct opnd a = opnd(k, n->in[0]), b = opnd(k, n->in[1]), t;

	if (a.bc && !b.bc && swapped(op, sub) >= 0) {
		sub = swapped(op, sub);
		t = a;
		a = b;
		b = t;
	}
	emit_op(&k->c->e, op, sub, b.bc, b.imm, d, expand(k, d, a),
		b.bc == VTPU_F_BCAST_IMM ? none : b.t);
}

static void compute(struct fk *k, int v)
{
	const struct ir_node *n = &k->c->g->nodes[v];
	struct vtpu_tile d = val_tile(k, v), a;
	struct emit *e = &k->c->e;
	struct opnd p, b;

	switch (ir_ops[n->op].kind) {
	case K_EW1:
		a = expand(k, d, opnd(k, n->in[0]));
		if (n->op == OP_CONVERT)
			gen_convert(k, n, d, a);
		else
			emit_op(e, VTPU_OP_UNARY, unary_fn(n->op), 0, 0, d, a, none);
		break;
	case K_EW2:
		compute_binary(k, n, d);
		break;
	case K_EW3:	/* SELECT: the condition is the destination */
		p = opnd(k, n->in[0]);
		if (p.bc)
			expand(k, d, p);
		else
			emit_op(e, VTPU_OP_UNARY, VTPU_UNARY_COPY, 0, 0, d, p.t,
				none);
		a = expand(k, slot_tile(k, k->tmp, VTPU_DT_F32),
			   opnd(k, n->in[1]));
		b = opnd(k, n->in[2]);
		emit_op(e, VTPU_OP_SELECT, 0, b.bc, b.imm, d, a,
			b.bc == VTPU_F_BCAST_IMM ? none : b.t);
		break;
	}
	if (n->shape.type == VTPU_BF16)
		round_bf16(k, d);
}

static int stored(const struct fk *k, int v)
{
	const struct ir_node *n = &k->c->g->nodes[v];

	return n->op != OP_RESHAPE && n->arena != A_NONE;
}

/*
 * A loaded value, or what a virtual view of it (or of its alias) reads,
 * through a virtual PAD under an im2col view.
 */
static int real(const struct fk *k, int v)
{
	int r = node_root(k->c->g, v);

	if (!is_virt(k, r))
		return v;
	while (is_virt(k, r))
		r = node_root(k->c->g, k->c->g->nodes[r].in[0]);
	return r;
}

static int spans_meet(struct fk *k, int x, int y)
{
	return cg_values_meet(k->c, real(k, x), real(k, y));
}

/*
 * Whether the kernel's tiles may be split among lanes, which run at
 * once: nothing it stores shares HBM with what it loads or with another
 * value it stores. The planner may place a result where an operand whose
 * last reader is this kernel lived; tiles in order read each part before
 * they overwrite it, lanes at once would not.
 */
static int lanes_safe(struct fk *k)
{
	const struct ir_node *mm = k->mm >= 0 ? &k->c->g->nodes[k->mm] : NULL;
	int out[64], nout = 0, i, j, v;

	for (i = -1; i < k->nn; i++) {
		v = i < 0 ? k->mm : k->nodes[i];
		if (v < 0 || (i >= 0 && v == k->mm) || !stored(k, v))
			continue;
		if (nout == (int)(sizeof(out) / sizeof(out[0])))
			return 0;
		out[nout++] = v;
	}
	for (i = 0; i < nout; i++) {
		for (j = 0; j < i; j++)
			if (spans_meet(k, out[i], out[j]))
				return 0;
		for (j = 0; j < k->next; j++)
			if (spans_meet(k, out[i], k->ext[j]))
				return 0;
		if (mm && (spans_meet(k, out[i], mm->in[0]) ||
			   spans_meet(k, out[i], mm->in[1])))
			return 0;
	}
	return 1;
}

/* Whether splitting the kernel among lanes pays (CG_LANES_MIN_*). */
static int lanes_pay(const struct fk *k)
{
	const struct ir_graph *g = k->c->g;
	const struct ir_node *last = &g->nodes[k->nodes[k->nn - 1]];
	double work = (double)shape_elems(&last->shape) * k->nn;

	if (k->mm >= 0) {
		const struct ir_node *n = &g->nodes[k->mm];
		const struct vtpu_shape *xs = &g->nodes[n->in[0]].shape;

		work += (double)shape_elems(&n->shape) *
			(n->a.mm.trans_a ? xs->dims[1] : xs->dims[2]) / 16;
	}
	return work >= (k->mm >= 0 ? CG_LANES_MIN_MM : CG_LANES_MIN_WORK);
}

/* The chain on one tile at element @elem of the view, rows @rowlen apart. */
static void body(struct fk *k, int64_t elem, int64_t rowlen)
{
	int i, v;

	k->rowlen = rowlen;
	for (i = 0; i < k->next; i++)
		load(k, k->ext[i], elem, rowlen);
	if (k->mm >= 0 && stored(k, k->mm))
		store(k, k->mm, elem, rowlen);
	for (i = 0; i < k->nn; i++) {
		v = k->nodes[i];
		if (v == k->mm || k->c->g->nodes[v].op == OP_RESHAPE)
			continue;
		compute(k, v);
		if (stored(k, v))
			store(k, v, elem, rowlen);
	}
}

/* ---- elementwise chains ------------------------------------------------- */

/*
 * Slots as large as the kernel's biggest tile, not all of its VMEM share:
 * the program's VMEM is what it touches, and the core clears that much
 * before every job (a 4-element add would otherwise clear 256 KiB).
 */
static void fit_slots(struct fk *k, int64_t per, int64_t tile)
{
	int64_t want = (tile + 15) & ~(int64_t)15;	/* 64-byte slots */

	k->slot_elems = want < per ? want : per;
}

/*
 * The chain as rows of @kw elements (its virtual operands broadcast
 * along them), in tiles of up to @per elements: whole rows, or pieces
 * of one when a row is longer than that.
 */
static void gen_rows(struct fk *k, int64_t n, int64_t kw, int64_t per)
{
	int64_t nrows = n / kw, wc, tr, r, c0, rtiles, ctiles, tiles, t;
	int64_t lanes = k->c->e.lanes;
	bool by_cols;

	wc = kw < per ? kw : per;
	/*
	 * Lanes split the columns where each gets some: a row is a channel
	 * of an image (a bias per row), and a matmul or a depthwise
	 * convolution before split its pixels, so each lane reads the
	 * columns it stored itself.
	 */
	by_cols = lanes > 1 && kw >= 64 * lanes;
	if (by_cols && wc > cdiv(kw, lanes))
		wc = cdiv(cdiv(kw, lanes), 16) * 16;
	wc = wc < CG_TILE_DIM ? wc : CG_TILE_DIM;
	tr = per / wc;
	tr = tr < CG_TILE_DIM ? tr : CG_TILE_DIM;
	fit_slots(k, per, (nrows < tr ? nrows : tr) * wc);
	rtiles = cdiv(nrows, tr);
	ctiles = cdiv(kw, wc);
	tiles = rtiles * ctiles;
	for (t = 0; t < tiles && !k->c->e.failed; t++) {
		r = (by_cols ? t % rtiles : t / ctiles) * tr;
		c0 = (by_cols ? t / rtiles : t % ctiles) * wc;
		k->rows = nrows - r < tr ? nrows - r : tr;
		k->cols = kw - c0 < wc ? kw - c0 : wc;
		emit_lane(&k->c->e, emit_lane_of(&k->c->e, t, tiles));
		body(k, r * kw + c0, kw);
	}
}

static void gen_chain(struct fk *k, int64_t n)
{
	int64_t per = k->c->vmem / 4 / (k->nslots ? k->nslots : 1), w, full,
		rest, tr, r, tiles, t = 0;
	int64_t kw = k->key >= 0 ? k->c->g->nodes[k->key].kw : 0;

	if (per > CG_TILE_ELEMS)
		per = CG_TILE_ELEMS;
	if (per < 1) {
		cg_fail(k->c, ENOSPC, "elementwise kernel: %d values do not fit VMEM",
			k->nslots);
		return;
	}
	/* split among lanes (gen_fused()): at least a tile per lane */
	if (k->c->e.lanes > 1 && per > cdiv(n, k->c->e.lanes))
		per = cdiv(n, k->c->e.lanes);
	if (kw) {
		gen_rows(k, n, kw, per);
		return;
	}
	w = n < 1024 ? n : 1024;
	if (w > per)
		w = per;
	full = n / w;
	rest = n % w;
	tr = per / w;
	tr = tr < CG_TILE_DIM ? tr : CG_TILE_DIM;
	fit_slots(k, per, (full > tr ? tr : full > 0 ? full : 1) * w);
	k->cols = w;
	tiles = cdiv(full, tr) + !!rest;
	for (r = 0; r < full && !k->c->e.failed; r += tr) {
		k->rows = full - r < tr ? full - r : tr;
		emit_lane(&k->c->e, emit_lane_of(&k->c->e, t++, tiles));
		body(k, r * w, w);
	}
	if (rest) {
		k->rows = 1;
		k->cols = rest;
		emit_lane(&k->c->e, emit_lane_of(&k->c->e, t++, tiles));
		body(k, full * w, rest);
	}
}

/* ---- matmul with epilogue ------------------------------------------------ */

/*
 * B read through a virtual im2col view (fuse.c): row r of B starts at
 * the view's offset of r in the source, its columns come in runs
 * (struct ir_mm_view), and each run of whole view rows, or part of one,
 * is one DMA into the B tile.
 */
struct mm_bview {
	const struct ir_node *view;	/* the P_COPY */
	const struct ir_node *pad;	/* a virtual PAD it reads, or NULL */
	uint32_t fill;			/* the pad value's f32 bits */
	struct ir_mm_view g;
	struct loc src;
};

struct mm_shape {
	int64_t b, m, n, k;
	int ta, tb;
	const struct mm_bview *bv;	/* B through a view, or NULL */
};

struct mm_tiles {
	int64_t tm, tn, tk;
};

/* A PAD's value in an f32 tile, as its type holds it in memory. */
static uint32_t pad_fill(const struct ir_node *p)
{
	uint32_t bits = pad_bits(p);
	float f;

	memcpy(&f, &bits, 4);
	if (p->shape.type == VTPU_BF16)
		f = vtpu_bf16_to_f32(vtpu_f32_to_bf16(f));
	memcpy(&bits, &f, 4);
	return bits;
}

/* The source offset of element @i of the view's dims [lo, hi), in elements. */
static int64_t view_at(const struct ir_node *n, int lo, int hi, int64_t i)
{
	int64_t off = 0;
	int d;

	for (d = hi - 1; d >= lo; d--) {
		off += i % n->shape.dims[d] * n->a.view.stride[d];
		i /= n->shape.dims[d];
	}
	return off;
}

/*
 * Rows [i0, i1) of a padded run that lie inside the source: those of
 * index h0 + i * step in [lo, lo + n).
 */
static void clip_rows(int64_t h0, int64_t step, int64_t lo, int64_t n,
		      int64_t *i0, int64_t *i1)
{
	*i0 = h0 >= lo ? 0 : cdiv(lo - h0, step);
	*i1 = h0 >= lo + n ? 0 : (lo + n - 1 - h0) / step + 1;
	if (*i1 < *i0)
		*i1 = *i0;
}

/*
 * A run of @rows x @cols elements of a virtual PAD's value, at padded
 * element @at, rows @hstride apart and columns @bv->g.wstep, into VMEM
 * at @dst (rows @cols apart, already filled with the pad value): the
 * part inside the PAD's source, one DMA. fuse.c saw to it that no row of
 * a run crosses a padded row; rows that do not step along the second
 * last dimension within one plane (a batch's images, when the image has
 * one row) go one at a time.
 */
static void pad_run(struct fk *k, const struct mm_bview *bv, int64_t at,
		    int64_t rows, int64_t cols, int64_t hstride, uint32_t dst)
{
	int64_t ws = bv->g.wstep;
	const struct ir_node *p = bv->pad;
	const struct vtpu_shape *xs = &k->c->g->nodes[p->in[0]].shape;
	int r = p->shape.rank, d;
	int64_t wp = p->shape.dims[r - 1], w = xs->dims[r - 1];
	int64_t h = r > 1 ? xs->dims[r - 2] : 1, lw = p->a.pad.lo[r - 1];
	int64_t lh = r > 1 ? p->a.pad.lo[r - 2] : 0, step = hstride / wp;
	int64_t es = dt_size(bv->src.dt), idx[VTPU_MAX_RANK], rest = at;
	int64_t i0, i1, j0, j1, so = 0, i, x;

	for (d = r - 1; d >= 0; d--) {
		idx[d] = rest % p->shape.dims[d];
		rest /= p->shape.dims[d];
	}
	if (rows > 1 && (hstride % wp || r < 2 || idx[r - 2] +
			 (rows - 1) * step >= p->shape.dims[r - 2])) {
		for (i = 0; i < rows; i++)
			pad_run(k, bv, at + i * hstride, 1, cols, 0,
				dst + i * cols * 4);
		return;
	}
	for (d = 0; d < r - 2; d++) {
		if (idx[d] < p->a.pad.lo[d] ||
		    idx[d] >= p->a.pad.lo[d] + xs->dims[d])
			return;		/* all padding */
		so = so * xs->dims[d] + idx[d] - p->a.pad.lo[d];
	}
	clip_rows(r > 1 ? idx[r - 2] : 0, step ? step : 1, lh, h, &i0, &i1);
	i1 = i1 < rows ? i1 : rows;
	/* the run's columns idx + j * ws inside the source: [j0, j1) */
	clip_rows(idx[r - 1], ws, lw, w, &j0, &j1);
	j1 = j1 < cols ? j1 : cols;
	if (i0 >= i1 || j0 >= j1)
		return;
	x = idx[r - 1] + j0 * ws - lw;
	so = (so * h + (r > 1 ? idx[r - 2] : 0) + i0 * step - lh) * w + x;
	emit_dma_step(&k->c->e, 0,
		      vtile(dst + (i0 * cols + j0) * 4, i1 - i0, j1 - j0, cols,
			    VTPU_DT_F32),
		      bv->src.binding, bv->src.off + so * es,
		      (i1 - i0 > 1 ? step * w : j1 - j0) * es, bv->src.dt,
		      (uint32_t)ws);
}

/*
 * Columns [n0, n0 + nt) of B's row @r into VMEM at @dst (f32, one after
 * the other), run by run. Returns how many DMAs that takes; emits them
 * unless @k is NULL (mm_pick() counts).
 */
static int64_t bview_row(struct fk *k, const struct mm_bview *bv, int64_t r,
			 int64_t n0, int64_t nt, uint32_t dst)
{
	const struct ir_mm_view *g = &bv->g;
	const struct ir_node *v = bv->view;
	int64_t n = n0, end = n0 + nt, rows, cols, at, cnt = 0;
	int64_t es = dt_size(bv->src.dt);

	while (n < end && !(k && k->c->e.failed)) {
		rows = 1;
		cols = g->w - n % g->w;
		if (cols > end - n) {
			cols = end - n;
		} else if (cols == g->w &&
			   g->hstride >= (g->w - 1) * g->wstep + 1) {
			/* whole runs, up to the end of their outer dimension */
			rows = g->h - n / g->w % g->h;
			if (rows > (end - n) / g->w)
				rows = (end - n) / g->w;
		}
		if (k) {
			at = v->a.view.offset + view_at(v, 0, g->split, r) +
			     view_at(v, g->split, v->shape.rank, n);
		}
		if (k && bv->pad) {
			pad_run(k, bv, at, rows, cols, rows > 1 ? g->hstride : 0,
				dst + (n - n0) * 4);
		} else if (k) {
			emit_dma_step(&k->c->e, 0,
				      vtile(dst + (n - n0) * 4, rows, cols,
					    cols, VTPU_DT_F32),
				      bv->src.binding, bv->src.off + at * es,
				      (rows > 1 ? g->hstride : cols) * es,
				      bv->src.dt, (uint32_t)g->wstep);
		}
		n += rows * cols;
		cnt++;
	}
	return cnt;
}

/*
 * DMAs a row of B takes over all its column tiles of @tn; counted up to
 * past the ISA's instruction limit, which no width that needs them all
 * fits (a fuzzed ConvTranspose's view of 50M columns took seconds).
 */
static int64_t bview_dmas(const struct mm_shape *s, int64_t tn)
{
	int64_t n0, cnt = 0;

	for (n0 = 0; n0 < s->n && cnt <= VTPU_MAX_INSNS; n0 += tn)
		cnt += bview_row(NULL, s->bv, 0, n0,
				 s->n - n0 < tn ? s->n - n0 : tn, 0);
	return cnt;
}

/*
 * Instructions weigh as much as ~1 KB of DMA in the executor. A B
 * through a view costs @bdmas DMAs a row of B per row of A tiles, and a
 * C tile wider than the MXU takes a MATMUL per CG_MM_DIM columns.
 */
static double mm_score(const struct mm_shape *s, int64_t tm, int64_t tn,
		       int64_t tk, int epi, double bdmas)
{
	double nm = cdiv(s->m, tm), nn = cdiv(s->n, tn), nk = cdiv(s->k, tk);
	double la = s->b * nm * (nk == 1 ? 1 : nn * nk), lb = s->b * nm * nn * nk;
	double mx = cdiv(tn, CG_MM_DIM);
	double insns = la + (s->bv ? s->b * nm * s->k * bdmas : lb) +
		       s->b * nm * nn * (nk * mx + epi);
	double bytes = la * tm * tk * 4 + lb * tk * tn * 4;

	return insns * 1024 + bytes;
}

static int64_t next_cand(int64_t t, int64_t dim)
{
	int64_t lim = dim < CG_MM_DIM ? dim : CG_MM_DIM;

	if (t == lim)
		return 0;
	return 2 * t < lim ? 2 * t : lim;
}

#define MM_VIEW_SPLITS	64
#define MM_LANE_SPLITS	8

/*
 * Adds to the @n candidates in @t the sizes that cut @dim into p *
 * @lanes equal tiles (p up to MM_LANE_SPLITS, rounded up to 8 elements,
 * at most @lim): split among lanes, powers of two alone often leave a
 * remainder tile that makes one lane do more than its share (784 pixels
 * in tiles of 256 give the lanes 512 and 272). Returns the new count.
 */
static int mm_even(int64_t dim, int64_t lanes, int64_t lim, int64_t *t, int n)
{
	int64_t c;
	int p, i;

	for (p = 1; lanes > 1 && p <= MM_LANE_SPLITS; p++) {
		c = cdiv(cdiv(dim, p * lanes), 8) * 8;
		if (c >= dim || c > lim)
			continue;
		for (i = 0; i < n && t[i] != c; i++)
			;
		if (i == n)
			t[n++] = c;
	}
	return n;
}

/* What one lane's run of C tiles holds (mm_lane_split()). */
struct mm_lane {
	double rows, rows_m;	/* rows of tiles it enters, their rows of C */
	double tiles, m, n;	/* C tiles; the sums of their rows, columns */
};

/*
 * Fills @ln[0..@lanes) from C's tiles of @tm by @tn, which go to the
 * lanes in runs, in the order gen_matmul() emits them. Returns false
 * past a few thousand tiles, where the runs are long and even.
 */
static bool mm_lane_split(const struct mm_shape *s, int64_t tm, int64_t tn,
			  int64_t lanes, struct mm_lane *ln)
{
	int64_t mt = cdiv(s->m, tm), nt = cdiv(s->n, tn);
	int64_t tiles = s->b * mt * nt, i, r, c, row = -1;
	uint32_t lane = 0, l;

	if (tiles > 4096)
		return false;
	memset(ln, 0, lanes * sizeof(*ln));
	for (i = 0; i < tiles; i++) {
		r = s->m - i / nt % mt * tm;
		r = r < tm ? r : tm;
		c = s->n - i % nt * tn;
		c = c < tn ? c : tn;
		l = (uint32_t)(i * lanes / tiles);
		if (l != lane) {
			lane = l;
			row = -1;
		}
		if (i / nt != row) {
			ln[l].rows++;
			ln[l].rows_m += r;
		}
		row = i / nt;
		ln[l].tiles++;
		ln[l].m += r;
		ln[l].n += c;
	}
	return true;
}

/*
 * mm_score() of the busiest lane, for a kernel split among @lanes: a
 * kernel takes as long as its busiest lane. Each lane loads A again
 * where its run enters a row of tiles: splitting the columns of a
 * narrow C (a late layer's few pixels) makes every lane load all of A,
 * splitting its rows gives each half. Tiles at C's edges cost their
 * share of bytes. Without @ln (many tiles), the whole score's share.
 */
static double mm_lane_score(const struct mm_shape *s, int64_t tm, int64_t tn,
			    int64_t tk, int epi, double bdmas, int64_t lanes,
			    const struct mm_lane *ln)
{
	double nt = cdiv(s->n, tn), nk = cdiv(s->k, tk), tiles, cost, most = 0;
	double mx = cdiv(tn, CG_MM_DIM);
	int64_t l;

	if (!ln) {
		tiles = s->b * cdiv(s->m, tm) * nt;
		return mm_score(s, tm, tn, tk, epi, bdmas) *
		       cdiv((int64_t)tiles, lanes) / tiles;
	}
	for (l = 0; l < lanes; l++) {
		/* A: once a row of tiles when K is whole, else every tile */
		cost = nk > 1 ? ln[l].tiles * nk * 1024 + ln[l].m * nk * tk * 4 :
		       ln[l].rows * 1024 + ln[l].rows_m * tk * 4;
		/* B: a DMA per K step, or a view's DMAs per row of B */
		cost += ln[l].tiles * (s->bv ? s->k * bdmas / nt : nk) * 1024 +
			ln[l].n * nk * tk * 4;
		cost += ln[l].tiles * (nk * mx + epi) * 1024;
		most = cost > most ? cost : most;
	}
	return most;
}

/*
 * Candidate widths of C tiles: powers of two up to the MXU's, and,
 * with B through a view, whole runs: N in p tiles for p up to
 * MM_VIEW_SPLITS, each rounded up to runs, as wide as a VPU tile
 * allows (the MATMULs split it), since every tile costs a DMA per run
 * it cuts. Returns how many, each with the DMAs a row of B takes.
 */
static int mm_widths(const struct mm_shape *s, int64_t lanes, int64_t *tn,
		     int64_t *dmas)
{
	int64_t t, w = s->bv ? s->bv->g.w : 1, lim;
	int n = 0, p, i;

	for (t = 1; t; t = next_cand(t, s->n))
		tn[n++] = t;
	lim = s->n < CG_TILE_DIM ? s->n : CG_TILE_DIM;
	for (p = 1; s->bv && p <= MM_VIEW_SPLITS; p++) {
		t = cdiv(cdiv(s->n, p), w) * w;
		t = t < s->n ? t : s->n;
		for (i = 0; i < n && tn[i] != t; i++)
			;
		if (i == n && t <= lim)
			tn[n++] = t;
	}
	n = mm_even(s->n, lanes, s->bv ? lim : CG_MM_DIM, tn, n);
	for (i = 0; i < n; i++)
		dmas[i] = s->bv ? bview_dmas(s, tn[i]) : 0;
	return n;
}

/*
 * The tiles that score best. Split among lanes (gen_fused() left
 * c->e.lanes above 1), a kernel takes the time of its busiest lane
 * (mm_lane_score()), and tiles fewer than the lanes are a last resort
 * (the biggest tile alone would keep one core busy and the others
 * waiting at the BARRIER).
 */
static int mm_pick(struct fk *k, const struct mm_shape *s, struct mm_tiles *best)
{
	int64_t V = k->c->vmem / 4, tk, tm[64 + MM_LANE_SPLITS];
	int64_t tn[64 + MM_VIEW_SPLITS + MM_LANE_SPLITS];
	int64_t dmas[64 + MM_VIEW_SPLITS + MM_LANE_SPLITS];
	int64_t lanes = k->c->e.lanes, tiles, t;
	int nw = mm_widths(s, lanes, tn, dmas), nh = 0, i, j, few;
	struct mm_lane ln[VTPU_MAX_LANES];
	bool split = false;
	double sc, bs = 0;
	int found = 0;

	for (t = 1; t; t = next_cand(t, s->m))
		tm[nh++] = t;
	nh = mm_even(s->m, lanes, CG_MM_DIM, tm, nh);
	for (few = 0; few < 2 && !found; few++)
	for (j = 0; j < nh; j++)
		for (i = 0; i < nw; i++) {
			tiles = s->b * cdiv(s->m, tm[j]) * cdiv(s->n, tn[i]);
			if (lanes > 1 && !few && tiles < lanes)
				continue;
			if (lanes > 1)
				split = mm_lane_split(s, tm[j], tn[i], lanes, ln);
			for (tk = 1; tk; tk = next_cand(tk, s->k)) {
				if (k->nslots * tm[j] * tn[i] + tm[j] * tk +
				    tk * tn[i] > V ||
				    tm[j] * tn[i] > CG_TILE_ELEMS)
					continue;
				sc = lanes > 1 ?
				     mm_lane_score(s, tm[j], tn[i], tk,
						   2 * k->nn + k->next,
						   dmas[i], lanes,
						   split ? ln : NULL) :
				     mm_score(s, tm[j], tn[i], tk,
					      2 * k->nn + k->next, dmas[i]);
				if (!found || sc < bs) {
					bs = sc;
					best->tm = tm[j];
					best->tn = tn[i];
					best->tk = tk;
					found = 1;
				}
			}
		}
	return found ? 0 : cg_fail(k->c, ENOSPC, "matmul: VMEM too small for %d slots",
				   k->nslots);
}

static void mm_load(struct fk *k, int v, struct vtpu_tile t, int64_t r0,
		    int64_t c0, int64_t ld)
{
	struct loc l = loc_of(k->c, v);
	int es = dt_size(l.dt);

	emit_dma(&k->c->e, 0, t, l.binding, l.off + (r0 * ld + c0) * es,
		 ld * es, l.dt);
}

/* B's rows [r0, r0 + B.rows), columns [c0, c0 + B.cols) (not transposed). */
static void mm_load_b(struct fk *k, const struct mm_shape *s, int v,
		      struct vtpu_tile B, int64_t r0, int64_t c0)
{
	int64_t i, f;

	if (!s->bv) {
		mm_load(k, v, B, r0, c0, s->n);
		return;
	}
	/* what the source lacks is the pad value; VPU tiles stay modest */
	for (i = 0; s->bv->pad && i < B.rows; i += f) {
		f = CG_TILE_ELEMS / B.cols;
		f = f < B.rows - i ? f : B.rows - i;
		emit_op(&k->c->e, VTPU_OP_FILL, 0, 0, s->bv->fill,
			vtile(B.addr + i * B.stride * 4, f, B.cols, B.stride,
			      VTPU_DT_F32), none, none);
	}
	for (i = 0; i < B.rows; i++)
		bview_row(k, s->bv, r0 + i, c0, B.cols,
			  B.addr + i * B.stride * 4);
}

/*
 * One C tile: the K loop of loads and MATMULs. When K fits one step, A
 * stays in VMEM for the tiles after the first of its row (@fresh: the
 * first of its lane, whose VMEM has no A yet).
 */
static void mm_tile(struct fk *k, const struct mm_shape *s,
		    const struct mm_tiles *t, int64_t b, int64_t m0, int64_t n0,
		    int fresh)
{
	const struct ir_node *n = &k->c->g->nodes[k->mm];
	int64_t mt = k->rows, nt = k->cols, k0, kt, j, nj;
	uint32_t abase = k->nslots * k->slot_elems * 4;
	uint32_t bbase = abase + t->tm * t->tk * 4;
	struct vtpu_tile A, B, C = val_tile(k, k->mm);
	uint16_t fl = (s->ta ? VTPU_F_TRANS_A : 0) | (s->tb ? VTPU_F_TRANS_B : 0);

	for (k0 = 0; k0 < s->k; k0 += t->tk) {
		kt = s->k - k0 < t->tk ? s->k - k0 : t->tk;
		A = s->ta ? vtile(abase, kt, mt, mt, VTPU_DT_F32) :
			    vtile(abase, mt, kt, kt, VTPU_DT_F32);
		B = s->tb ? vtile(bbase, nt, kt, kt, VTPU_DT_F32) :
			    vtile(bbase, kt, nt, nt, VTPU_DT_F32);
		if (kt < s->k || n0 == 0 || fresh)
			mm_load(k, n->in[0], A, s->ta ? b * s->k + k0 : b * s->m + m0,
				s->ta ? m0 : k0, s->ta ? s->m : s->k);
		if (s->tb)
			mm_load(k, n->in[1], B, b * s->n + n0, k0, s->k);
		else
			mm_load_b(k, s, n->in[1], B, b * s->k + k0, n0);
		/* only B through a view has C tiles wider than the MXU */
		for (j = 0; j < nt; j += CG_MM_DIM) {
			nj = nt - j < CG_MM_DIM ? nt - j : CG_MM_DIM;
			emit_op(&k->c->e, VTPU_OP_MATMUL, 0,
				fl | (k0 ? VTPU_F_ACC : 0), 0,
				vtile(C.addr + j * 4, C.rows, nj, C.stride,
				      VTPU_DT_F32),
				A, s->tb ? B : vtile(B.addr + j * 4, kt, nj, nt,
						     VTPU_DT_F32));
		}
	}
}

static void gen_matmul(struct fk *k)
{
	const struct ir_graph *g = k->c->g;
	const struct ir_node *n = &g->nodes[k->mm];
	const struct vtpu_shape *xs = &g->nodes[n->in[0]].shape;
	struct mm_shape s = {
		.b = n->shape.dims[0], .m = n->shape.dims[1],
		.n = n->shape.dims[2], .k = n->a.mm.trans_a ? xs->dims[1] : xs->dims[2],
		.ta = n->a.mm.trans_a, .tb = n->a.mm.trans_b,
	};
	struct mm_tiles t = { 1, 1, 1 };
	int64_t b, m0, n0, tiles, i = 0;
	uint32_t lane, last = UINT32_MAX;
	int bn = node_root(g, n->in[1]);
	struct mm_bview bv;

	if (g->nodes[bn].virt) {
		bv.view = &g->nodes[bn];
		bv.pad = &g->nodes[node_root(g, bv.view->in[0])];
		bv.pad = bv.pad->virt ? bv.pad : NULL;
		bv.src = loc_of(k->c, bv.pad ? bv.pad->in[0] : bv.view->in[0]);
		bv.fill = bv.pad ? pad_fill(bv.pad) : 0;
		if (s.tb || !ir_mm_view(g, bn, s.n, &bv.g)) {
			cg_fail(k->c, EINVAL,
				"codegen: matmul %d cannot load its B view",
				k->mm);
			return;
		}
		s.bv = &bv;
	}
	if (mm_pick(k, &s, &t))
		return;
	k->slot_elems = t.tm * t.tn;
	/* Contiguous runs of C tiles per lane: rows of tiles share A. */
	tiles = s.b * cdiv(s.m, t.tm) * cdiv(s.n, t.tn);
	/* a program past the ISA's limit stops (emit_insn()) */
	for (b = 0; b < s.b && !k->c->e.failed; b++)
		for (m0 = 0; m0 < s.m && !k->c->e.failed; m0 += t.tm)
			for (n0 = 0; n0 < s.n && !k->c->e.failed; n0 += t.tn) {
				k->rows = s.m - m0 < t.tm ? s.m - m0 : t.tm;
				k->cols = s.n - n0 < t.tn ? s.n - n0 : t.tn;
				lane = emit_lane_of(&k->c->e, i++, tiles);
				emit_lane(&k->c->e, lane);
				mm_tile(k, &s, &t, b, m0, n0, lane != last);
				last = lane;
				body(k, (b * s.m + m0) * s.n + n0, s.n);
			}
}

/* ---- the kernel ----------------------------------------------------------- */

static int check_kernel(struct fk *k)
{
	const struct ir_graph *g = k->c->g;
	int64_t n = shape_elems(&g->nodes[k->nodes[k->nn - 1]].shape);
	int i;

	for (i = 0; i < k->nn; i++) {
		const struct ir_node *x = &g->nodes[k->nodes[i]];

		if (x->op == OP_P_MATMUL && i == 0) {
			if (in_kernel(k, x->in[0]) || in_kernel(k, x->in[1]))
				return cg_fail(k->c, ENOTSUP, "codegen: matmul operands fused into its kernel (node %d)",
					       k->nodes[i]);
			continue;
		}
		if (ir_ops[x->op].kind == K_OTHER && x->op != OP_RESHAPE)
			return cg_fail(k->c, ENOTSUP, "codegen: %s cannot be fused here (node %d)",
				       ir_ops[x->op].name, k->nodes[i]);
		if (shape_elems(&x->shape) != n)
			return cg_fail(k->c, ENOTSUP, "codegen: fused values differ in size (node %d)",
				       k->nodes[i]);
	}
	return 0;
}

void gen_fused(struct cg *c, const int *nodes, int nn)
{
	const struct ir_graph *g = c->g;
	struct fk k = {
		.c = c, .nodes = nodes, .nn = nn, .key = node_kernel(g, nodes[0]),
		.mm = g->nodes[nodes[0]].op == OP_P_MATMUL ? nodes[0] : -1,
	};

	k.ext = calloc(3 * nn + 1, sizeof(int));
	k.owner = calloc(g->n + 1, sizeof(int));
	k.slot = calloc(g->n + 1, sizeof(int));
	if (!k.ext || !k.owner || !k.slot)
		cg_fail(c, ENOMEM, "out of memory");
	else if (!check_kernel(&k) && !plan_slots(&k)) {
		uint32_t lanes = c->e.lanes;

		if (!lanes_safe(&k) || !lanes_pay(&k))
			c->e.lanes = 1;
		if (k.mm >= 0)
			gen_matmul(&k);
		else
			gen_chain(&k, shape_elems(&g->nodes[nodes[nn - 1]].shape));
		c->e.lanes = lanes;
	}
	free(k.ext);
	free(k.owner);
	free(k.slot);
}
