// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * copy.c - the data-movement kernels: P_COPY (a strided view: slices,
 * transposes, broadcasts), CONCAT, PAD, GATHER and the copies into output
 * bindings. Everything reduces to copy_block(), a 2-D strided block
 * moved through VMEM in tiles, with one strategy per stride pattern:
 *
 *   s1 == 1           rows are contiguous: one DMA in, one DMA out
 *   s1 == 1, s0 == 0  a row broadcast: load the row once, replicate it
 *   s1 == 0           a column broadcast: load the column, replicate
 *   s0 == 1           a transpose: load the block transposed, TRANSPOSE
 *   otherwise         gather column by column (one DMA per column)
 *
 * Replication uses SELECT on a zero-filled tile (d = 0 ? a : b takes b's
 * bits unchanged, -0.0 and NaN payloads included), which needs f32
 * tiles: f32, bf16 (converted exactly by DMA) and pred data; s32 data
 * is replicated with one DMA per row or column instead.
 */
#include <errno.h>
#include <string.h>

#include "plan.h"

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Tile extents for @nbuf buffers of @es-byte elements in VMEM. */
static void pick_tile(struct cg *c, int nbuf, int es, int64_t rows,
		      int64_t cols, int64_t *tr, int64_t *tc)
{
	int64_t elems = min64(c->vmem / ((int64_t)nbuf * es), CG_TILE_ELEMS);

	*tc = max64(1, min64(min64(cols, CG_TILE_DIM), elems));
	*tr = max64(1, min64(min64(rows, CG_TILE_DIM), elems / *tc));
}

static void dma(struct cg *c, int store, struct vtpu_tile t, struct loc l,
		int64_t stride_bytes)
{
	emit_dma(&c->e, store, t, l.binding, l.off, (uint64_t)stride_bytes,
		 l.dt);
}

static int is_float_dt(uint8_t dt)
{
	return dt == VTPU_DT_F32 || dt == VTPU_DT_BF16;
}

/* d (f32, rows x cols) = b broadcast per @bcast, via SELECT on zeros. */
static void replicate(struct cg *c, struct vtpu_tile d, struct vtpu_tile b,
		      uint16_t bcast)
{
	static const struct vtpu_tile none;

	emit_op(&c->e, VTPU_OP_FILL, 0, 0, 0, d, none, none);
	emit_op(&c->e, VTPU_OP_SELECT, 0, bcast, 0, d, d, b);
}

/* One tile of a contiguous-row block: s1 == 1, rows s0 apart (s0 > 0). */
static void tile_rows(struct cg *c, struct loc src, int64_t s0, struct loc dst,
		      int64_t d0, int64_t tr, int64_t tc)
{
	int es = dt_size(src.dt);
	struct vtpu_tile t = vtile(0, tr, tc, tc, src.dt);

	dma(c, 0, t, src, s0 * es);
	dma(c, 1, t, dst, d0 * es);
}

/* A row broadcast (s0 == 0, s1 == 1). */
static void tile_row_bcast(struct cg *c, struct loc src, struct loc dst,
			   int64_t d0, int64_t tr, int64_t tc)
{
	int es = dt_size(dst.dt), i;
	uint8_t vdt = is_float_dt(src.dt) ? VTPU_DT_F32 : src.dt;
	struct vtpu_tile row = vtile(0, 1, tc, tc, vdt);
	struct vtpu_tile t = vtile(tc * 4, tr, tc, tc, VTPU_DT_F32);

	dma(c, 0, row, src, 0);
	if (vdt != VTPU_DT_F32) {
		for (i = 0; i < tr; i++)
			dma(c, 1, row, loc_add(dst, (uint64_t)i * d0 * es), 0);
		return;
	}
	replicate(c, t, row, VTPU_F_BCAST_ROW);
	dma(c, 1, t, dst, d0 * es);
}

/* A column broadcast (s1 == 0, s0 > 0). */
static void tile_col_bcast(struct cg *c, struct loc src, int64_t s0,
			   struct loc dst, int64_t d0, int64_t tr, int64_t tc)
{
	int es = dt_size(src.dt), j;
	struct vtpu_tile col = vtile(0, tr, 1, 1, VTPU_DT_F32);
	struct vtpu_tile t = vtile(tr * 4, tr, tc, tc, VTPU_DT_F32);

	if (!is_float_dt(src.dt)) {
		t = vtile(0, tr, tc, tc, src.dt);
		for (j = 0; j < tc; j++)
			dma(c, 0, vtile(j * es, tr, 1, tc, src.dt), src, s0 * es);
		dma(c, 1, t, dst, d0 * es);
		return;
	}
	dma(c, 0, col, src, s0 * es);
	replicate(c, t, col, VTPU_F_BCAST_COL);
	dma(c, 1, t, dst, d0 * es);
}

/* A transposed block (s0 == 1, s1 >= tr): load it as tc x tr. */
static void tile_transpose(struct cg *c, struct loc src, int64_t s1,
			   struct loc dst, int64_t d0, int64_t tr, int64_t tc)
{
	int es = dt_size(src.dt);
	struct vtpu_tile a = vtile(0, tc, tr, tr, src.dt);
	struct vtpu_tile t = vtile(tr * tc * es, tr, tc, tc, src.dt);
	static const struct vtpu_tile none;

	dma(c, 0, a, src, s1 * es);
	emit_op(&c->e, VTPU_OP_TRANSPOSE, 0, 0, 0, t, a, none);
	dma(c, 1, t, dst, d0 * es);
}

/* Anything else: one DMA per column (rows s0 > 0 apart, or one row). */
static void tile_gather(struct cg *c, struct loc src, int64_t s0, int64_t s1,
			struct loc dst, int64_t d0, int64_t tr, int64_t tc)
{
	int es = dt_size(src.dt), j;

	for (j = 0; j < tc; j++)
		dma(c, 0, vtile(j * es, tr, 1, tc, src.dt),
		    loc_add(src, (uint64_t)j * s1 * es), s0 * es);
	dma(c, 1, vtile(0, tr, tc, tc, src.dt), dst, d0 * es);
}

/*
 * A stepped block (s1 > 1) without per-column DMAs: load whole source
 * rows [tr x span], TRANSPOSE to [span x tr], whose every s1-th row is
 * one output column: that is the tile [tc x tr] with row stride s1 * tr,
 * and a second TRANSPOSE makes it [tr x tc]. Four instructions a tile.
 */
static void tile_step(struct cg *c, struct loc src, int64_t s0, int64_t s1,
		      struct loc dst, int64_t d0, int64_t tr, int64_t tc)
{
	int es = dt_size(src.dt);
	int64_t span = (tc - 1) * s1 + 1;
	struct vtpu_tile a = vtile(0, tr, span, span, src.dt);
	struct vtpu_tile t1 = vtile(tr * span * es, span, tr, tr, src.dt);
	struct vtpu_tile v = vtile(t1.addr, tc, tr, s1 * tr, src.dt);
	struct vtpu_tile t2 = vtile(t1.addr + span * tr * es, tr, tc, tc, src.dt);
	static const struct vtpu_tile none;

	dma(c, 0, a, src, s0 * es);
	emit_op(&c->e, VTPU_OP_TRANSPOSE, 0, 0, 0, t1, a, none);
	emit_op(&c->e, VTPU_OP_TRANSPOSE, 0, 0, 0, t2, v, none);
	dma(c, 1, t2, dst, d0 * es);
}

/*
 * A stepped block whose step a DMA takes (ISA version 6): each row's
 * elements s1 apart in one DMA, rows s0 apart, then one store. A pooling
 * window's or a strided slice's copy.
 */
static void tile_dma_step(struct cg *c, struct loc src, int64_t s0,
			  int64_t s1, struct loc dst, int64_t d0, int64_t tr,
			  int64_t tc)
{
	int es = dt_size(src.dt);
	struct vtpu_tile t = vtile(0, tr, tc, tc, src.dt);

	emit_dma_step(&c->e, 0, t, src.binding, src.off, (uint64_t)(s0 * es),
		      src.dt, (uint32_t)s1);
	dma(c, 1, t, dst, d0 * es);
}

/* A scalar broadcast (s0 == s1 == 0) of a float. */
static void tile_scalar(struct cg *c, struct loc src, struct loc dst,
			int64_t d0, int64_t tr, int64_t tc)
{
	struct vtpu_tile one = vtile(0, 1, 1, 1, VTPU_DT_F32);
	struct vtpu_tile t = vtile(64, tr, tc, tc, VTPU_DT_F32);

	dma(c, 0, one, src, 0);
	replicate(c, t, one, VTPU_F_BCAST_SCALAR);
	dma(c, 1, t, dst, d0 * dt_size(dst.dt));
}

enum copy_kind { CK_ROWS, CK_ROW_BCAST, CK_COL_BCAST, CK_TRANSPOSE, CK_GATHER,
		 CK_STEP, CK_DMA_STEP, CK_SCALAR };

static enum copy_kind copy_kind(int64_t s0, int64_t s1, int64_t rows,
				uint8_t dt)
{
	if (s0 == 0 && s1 == 0 && is_float_dt(dt))
		return CK_SCALAR;
	if (s1 == 1)
		return s0 == 0 && rows > 1 ? CK_ROW_BCAST : CK_ROWS;
	if (s1 == 0 && s0 > 0)
		return CK_COL_BCAST;
	if (s0 == 1)
		return CK_TRANSPOSE;
	if ((s0 > 0 || rows == 1) && s1 > 1 && s1 <= VTPU_MAX_DMA_STEP)
		return CK_DMA_STEP;
	return (s0 > 0 || rows == 1) && s1 > 1 ? CK_STEP : CK_GATHER;
}

static void copy_tile(struct cg *c, enum copy_kind k, struct loc src,
		      int64_t s0, int64_t s1, struct loc dst, int64_t d0,
		      int64_t tr, int64_t tc)
{
	switch (k) {
	case CK_ROWS:
		tile_rows(c, src, s0, dst, d0, tr, tc);
		break;
	case CK_ROW_BCAST:
		tile_row_bcast(c, src, dst, d0, tr, tc);
		break;
	case CK_COL_BCAST:
		tile_col_bcast(c, src, s0, dst, d0, tr, tc);
		break;
	case CK_TRANSPOSE:
		tile_transpose(c, src, s1, dst, d0, tr, tc);
		break;
	case CK_GATHER:
		tile_gather(c, src, s0, s1, dst, d0, tr, tc);
		break;
	case CK_STEP:
		tile_step(c, src, s0, s1, dst, d0, tr, tc);
		break;
	case CK_DMA_STEP:
		tile_dma_step(c, src, s0, s1, dst, d0, tr, tc);
		break;
	case CK_SCALAR:
		tile_scalar(c, src, dst, d0, tr, tc);
		break;
	}
}

/*
 * Tile extents per strategy. A DMA of several rows needs rows at least
 * a row apart, so overlapping source rows (s0 < tc) go one row a time;
 * the transpose likewise needs s1 >= tr. Gathers bound the columns,
 * since each costs an instruction, only by VMEM.
 */
/*
 * Extents of a stepped block: three buffers of at most @b elements, the
 * span of a row within __u16 (it becomes a row count), rows at least a
 * span apart for a multi-row DMA.
 */
static void step_extents(struct cg *c, int64_t s0, int64_t s1, int es,
			 int64_t rows, int64_t cols, int64_t *tr, int64_t *tc)
{
	int64_t b = min64(c->vmem / (3 * es), CG_TILE_ELEMS), span;

	*tc = max64(1, min64(min64(cols, CG_TILE_DIM), (b - 1) / s1 + 1));
	*tc = max64(1, min64(*tc, (CG_TILE_DIM - 1) / s1 + 1));
	span = (*tc - 1) * s1 + 1;
	*tr = max64(1, min64(min64(rows, CG_TILE_DIM), b / span));
	if (s0 < span)
		*tr = 1;
}

/* Whichever of stepping and gathering takes fewer instructions. */
static void choose_step(struct cg *c, enum copy_kind *k, int64_t s0,
			int64_t s1, int es, int64_t rows, int64_t cols,
			int64_t *tr, int64_t *tc)
{
	int64_t gr, gc, step_insns, gather_insns;

	step_extents(c, s0, s1, es, rows, cols, tr, tc);
	pick_tile(c, 1, es, rows, cols, &gr, &gc);
	step_insns = cdiv(rows, *tr) * cdiv(cols, *tc) * 4;
	gather_insns = cdiv(rows, gr) * cdiv(cols, gc) * (gc + 1);
	if (gather_insns < step_insns) {
		*k = CK_GATHER;
		*tr = gr;
		*tc = gc;
	}
}

static void copy_extents(struct cg *c, enum copy_kind *k, int64_t s0,
			 int64_t s1, int es, int64_t rows, int64_t cols,
			 int64_t *tr, int64_t *tc)
{
	int64_t side, elems;

	switch (*k) {
	case CK_STEP:
		choose_step(c, k, s0, s1, es, rows, cols, tr, tc);
		return;
	case CK_DMA_STEP:
		/* rows at least a stepped row's span apart, or one a DMA */
		pick_tile(c, 1, es, rows, cols, tr, tc);
		if (s0 < (*tc - 1) * s1 + 1)
			*tr = 1;
		return;
	case CK_ROWS:
		pick_tile(c, 1, es, rows, cols, tr, tc);
		if (s0 < *tc)
			*tr = 1;
		return;
	case CK_ROW_BCAST:
	case CK_COL_BCAST:
	case CK_SCALAR:
		pick_tile(c, 2, 4, rows, cols, tr, tc);
		return;
	case CK_TRANSPOSE:
		/*
		 * Square-ish blocks keep both DMAs long: up to 256 x 256, or
		 * the largest square two buffers of VMEM hold. Not
		 * pick_tile()'s widest rows: 16384 columns of a [96 x 25088]
		 * left 4 rows, and 4 x 4 blocks made MViT's transposes 150,000
		 * blocks each.
		 */
		elems = min64(c->vmem / (2 * es), CG_TILE_ELEMS);
		for (side = 256; side > 1 && side * side > elems; side /= 2)
			;
		*tc = min64(cols, side);
		*tr = min64(rows, side);
		if (s1 >= *tr)
			return;
		/* columns closer than the block's rows: blocks of s1 rows */
		if (s1 >= 2) {
			*tr = s1;
			return;
		}
		*k = CK_GATHER;
		/* fall through */
	case CK_GATHER:
		pick_tile(c, 1, es, rows, cols, tr, tc);
		if (s0 == 0)
			*tr = 1;
		return;
	}
}

void copy_block(struct cg *c, struct loc src, int64_t s0, int64_t s1,
		struct loc dst, int64_t d0, int64_t rows, int64_t cols)
{
	enum copy_kind k = copy_kind(s0, s1, rows, src.dt);
	int es = dt_size(src.dt);
	int64_t tr, tc, r, j;

	copy_extents(c, &k, s0, s1, es, rows, cols, &tr, &tc);
	/*
	 * A kernel of few blocks (lanes_by_dst()), this one a single band:
	 * a band per lane.
	 */
	if (c->lane_dst_bytes && c->lane_split && tr >= rows &&
	    rows >= 2 * (int64_t)c->e.lanes)
		tr = cdiv(rows, c->e.lanes);
	/* a program past the ISA's limit stops (emit_insn()) */
	for (r = 0; r < rows && !c->e.failed; r += tr) {
		for (j = 0; j < cols; j += tc) {
			int64_t nr = min64(tr, rows - r), nc = min64(tc, cols - j);
			uint64_t at = dst.off + (r * d0 + j) * es;

			/*
			 * A kernel that splits its copies among lanes: by the
			 * tile's band of this block's rows, or, for a block of
			 * one band, by where it lands in the kernel's output.
			 */
			if (c->lane_dst_bytes && rows > tr)
				emit_lane(&c->e, emit_lane_of(&c->e, r / tr,
							      cdiv(rows, tr)));
			else if (c->lane_dst_bytes &&
				 dst.binding == c->lane_dst_binding &&
				 at >= c->lane_dst_base)
				emit_lane(&c->e, emit_lane_of(&c->e,
					at - c->lane_dst_base, c->lane_dst_bytes));

			copy_tile(c, k, loc_add(src, (r * s0 + j * s1) * es),
				  s0, s1, loc_add(dst, (r * d0 + j) * es), d0,
				  nr, nc);
		}
	}
}

/* @n contiguous elements: a [n / w x w] block and a short last row. */
void copy_flat(struct cg *c, struct loc src, struct loc dst, int64_t n)
{
	int64_t w = min64(n, 1024), full = n / w, rest = n % w;
	int es = dt_size(src.dt);

	copy_block(c, src, w, 1, dst, w, full, w);
	if (rest)
		copy_block(c, loc_add(src, full * w * es), rest, 1,
			   loc_add(dst, full * w * es), rest, 1, rest);
}

/* Drops size-1 dimensions and merges dimensions that walk memory alike. */
static int simplify_view(const struct vtpu_shape *s, const int64_t *stride,
			 int64_t *dims, int64_t *str)
{
	int i, n = 0;

	for (i = 0; i < s->rank; i++) {
		if (s->dims[i] == 1)
			continue;
		if (n && str[n - 1] == stride[i] * s->dims[i]) {
			dims[n - 1] *= s->dims[i];
			str[n - 1] = stride[i];
			continue;
		}
		dims[n] = s->dims[i];
		str[n++] = stride[i];
	}
	while (n < 2) {	/* at least rows x cols */
		memmove(dims + 1, dims, n * sizeof(*dims));
		memmove(str + 1, str, n * sizeof(*str));
		dims[0] = 1;
		str[0] = 0;
		n++;
	}
	return n;
}

/*
 * The outer dimensions (all but the last two) as a counter; returns
 * false after the last combination. Offsets in elements.
 */
static bool next_outer(int n, const int64_t *dims, int64_t *idx)
{
	int i;

	for (i = n - 3; i >= 0; i--) {
		if (++idx[i] < dims[i])
			return true;
		idx[i] = 0;
	}
	return false;
}

/*
 * A one-dimensional view (rows == 1) tiles badly; reshape it: contiguous
 * or broadcast runs into [n / w x w] blocks, a stepped vector into one
 * column [n x 1], whose rows one DMA moves at any stride.
 */
static void shape_vector(int64_t *dims, int64_t *str, int r)
{
	int64_t n = dims[r - 1], s = str[r - 1], w;

	if (dims[r - 2] != 1 || n == 1)
		return;
	if (s > 1) {
		dims[r - 2] = n;
		str[r - 2] = s;
		dims[r - 1] = 1;
		str[r - 1] = 1;
		return;
	}
	for (w = 1024; w >= 64; w--)
		if (n % w == 0)
			break;
	if (w < 64)
		return;
	dims[r - 2] = n / w;
	str[r - 2] = s * w;
	dims[r - 1] = w;
}

/*
 * Lanes for the copies of kernel @v, @blocks copy_block()s: each tile
 * goes to a lane by where it lands in @v, or, when there are too few
 * blocks for that, by its band of its block; tiles are independent
 * unless the output overlaps an input. lanes_end() stops it.
 */
static void lanes_by_dst(struct cg *c, int v, int64_t blocks)
{
	const struct ir_node *n = &c->g->nodes[v];
	struct loc dst = loc_of(c, v);
	int i;

	for (i = 0; i < n->nin; i++)
		if (cg_values_meet(c, v, n->in[i]))
			return;
	if (shape_elems(&n->shape) < CG_LANES_MIN_WORK / 4)
		return;
	c->lane_dst_binding = dst.binding;
	c->lane_dst_base = dst.off;
	c->lane_dst_bytes = (uint64_t)shape_elems(&n->shape) * dt_size(dst.dt);
	c->lane_split = blocks < 2 * (int64_t)c->e.lanes;
}

static void lanes_end(struct cg *c)
{
	c->lane_dst_bytes = 0;
}

void gen_p_copy(struct cg *c, int v)
{
	const struct ir_node *n = &c->g->nodes[v];
	struct loc src = loc_of(c, n->in[0]), dst = loc_of(c, v);
	int64_t dims[VTPU_MAX_RANK + 2], str[VTPU_MAX_RANK + 2];
	int64_t idx[VTPU_MAX_RANK + 2] = { 0 }, so, dof, inner;
	int es = dt_size(src.dt), r = simplify_view(&n->shape, n->a.view.stride,
						      dims, str), i;

	shape_vector(dims, str, r);
	inner = dims[r - 2] * dims[r - 1];
	dof = 0;
	lanes_by_dst(c, v, shape_elems(&n->shape) / inner);
	do {
		so = n->a.view.offset;
		for (i = 0; i < r - 2; i++)
			so += idx[i] * str[i];
		copy_block(c, loc_add(src, so * es), str[r - 2], str[r - 1],
			   loc_add(dst, dof * es), dims[r - 1], dims[r - 2],
			   dims[r - 1]);
		dof += inner;
	} while (next_outer(r, dims, idx));
	lanes_end(c);
}

/* Each operand is a [outer x inner_k] block of the [outer x sum] output. */
void gen_concat(struct cg *c, int v)
{
	const struct ir_node *n = &c->g->nodes[v];
	int axis = n->a.concat.axis, k, i;
	int64_t outer = 1, after = 1, col = 0, width;
	struct loc dst = loc_of(c, v);
	int es = dt_size(dst.dt);

	for (i = 0; i < axis; i++)
		outer *= n->shape.dims[i];
	for (i = axis + 1; i < n->shape.rank; i++)
		after *= n->shape.dims[i];
	width = n->shape.dims[axis] * after;
	lanes_by_dst(c, v, n->nin);
	for (k = 0; k < n->nin; k++) {
		int64_t w = c->g->nodes[n->in[k]].shape.dims[axis] * after;

		copy_block(c, loc_of(c, n->in[k]), w, 1, loc_add(dst, col * es),
			   width, outer, w);
		col += w;
	}
	lanes_end(c);
}

/* Fills @n elements at @dst with @bits (f32 bits, or the s32 value). */
static void fill_flat(struct cg *c, struct loc dst, int64_t n, uint32_t bits)
{
	int es = dt_size(dst.dt);
	int64_t tr, tc, r, w = min64(n, 1024), full = n / w, rest = n % w;
	static const struct vtpu_tile none;

	pick_tile(c, 1, es, full, w, &tr, &tc);
	emit_op(&c->e, VTPU_OP_FILL, 0, 0, bits, vtile(0, tr, tc, tc, dst.dt),
		none, none);
	for (r = 0; r < full; r += tr)
		dma(c, 1, vtile(0, min64(tr, full - r), tc, tc, dst.dt),
		    loc_add(dst, r * w * es), w * es);
	if (rest)
		dma(c, 1, vtile(0, 1, rest, rest, dst.dt),
		    loc_add(dst, full * w * es), 0);
}

uint32_t pad_bits(const struct ir_node *n)
{
	double v = n->a.pad.value;
	float f = (float)v;
	uint32_t u;

	/* Converted only for s32, saturating: a bare cast of -inf (a max
	 * pool's padding) or NaN to int is undefined. */
	if (n->shape.type == VTPU_S32)
		return (uint32_t)(int32_t)(v != v ? 0 : v <= INT32_MIN ? INT32_MIN :
					   v >= INT32_MAX ? INT32_MAX : v);
	if (n->shape.type == VTPU_PRED)
		f = n->a.pad.value != 0 ? 1.0f : 0.0f;
	memcpy(&u, &f, sizeof(u));
	return u;
}

/* Fill everything with the pad value, then copy the operand inside. */
void gen_pad(struct cg *c, int v)
{
	const struct ir_node *n = &c->g->nodes[v];
	const struct vtpu_shape *xs = &c->g->nodes[n->in[0]].shape;
	struct loc src = loc_of(c, n->in[0]), dst = loc_of(c, v);
	int64_t d[VTPU_MAX_RANK + 2], od[VTPU_MAX_RANK + 2], lo[VTPU_MAX_RANK + 2];
	int64_t idx[VTPU_MAX_RANK + 2] = { 0 }, so, dof, ostr, band;
	int r = xs->rank, p = r < 2 ? 2 - r : 0, i;
	int es = dt_size(dst.dt);

	fill_flat(c, dst, shape_elems(&n->shape), pad_bits(n));
	for (i = 0; i < p; i++) {
		d[i] = od[i] = 1;
		lo[i] = 0;
	}
	for (i = 0; i < r; i++) {
		d[p + i] = xs->dims[i];
		od[p + i] = n->shape.dims[i];
		lo[p + i] = n->a.pad.lo[i];
	}
	r += p;
	/* The copies overwrite the fill: a BARRIER if they go to lanes. */
	emit_kernel(&c->e);
	band = d[r - 2] * d[r - 1];
	lanes_by_dst(c, v, band ? shape_elems(xs) / band : 0);
	do {
		so = 0;
		dof = 0;
		for (i = 0; i < r; i++) {
			so = so * d[i] + (i < r - 2 ? idx[i] : 0);
			dof = dof * od[i] + (i < r - 2 ? idx[i] : 0) + lo[i];
		}
		ostr = od[r - 1];
		copy_block(c, loc_add(src, so * es), d[r - 1], 1,
			   loc_add(dst, dof * es), ostr, d[r - 2], d[r - 1]);
	} while (next_outer(r, d, idx));
	lanes_end(c);
}

/*
 * GATHER: for each of the A blocks, the K rows (B elements each) its
 * indices name out of V. A chunk of indices comes into VMEM with one DMA;
 * then, per block and piece of a row, one DMA_GATHER brings the chosen
 * rows in, checking every index on the way, and one DMA stores them.
 */
void gen_gather(struct cg *c, int v)
{
	const struct ir_node *n = &c->g->nodes[v];
	const struct vtpu_shape *xs = &c->g->nodes[n->in[0]].shape;
	int64_t na = xs->dims[0], nv = xs->dims[1], nb = xs->dims[2];
	int64_t nk = n->shape.dims[1], tr, tc, k0, a, j0;
	struct loc src = loc_of(c, n->in[0]), idx = loc_of(c, n->in[1]);
	struct loc dst = loc_of(c, v);
	uint16_t flags = n->a.gather.wrap ? VTPU_F_INDEX_WRAP : 0;
	int es = dt_size(src.dt);
	uint32_t base;

	/* the rows' tile, and room for its indices before it */
	pick_tile(c, 3, 4, nk, nb, &tr, &tc);
	base = (uint32_t)((tr * 4 + 63) & ~63);
	for (k0 = 0; k0 < nk; k0 += tr) {
		int64_t kr = min64(tr, nk - k0);

		dma(c, 0, vtile(0, 1, kr, kr, VTPU_DT_S32),
		    loc_add(idx, (uint64_t)k0 * 4), 0);
		for (a = 0; a < na; a++)
			for (j0 = 0; j0 < nb; j0 += tc) {
				int64_t jc = min64(tc, nb - j0);
				struct vtpu_tile t = vtile(base, kr, jc, jc,
							   src.dt);

				emit_gather(&c->e, t, src.binding,
					    src.off + (uint64_t)(a * nv * nb + j0) * es,
					    (uint64_t)nb * es, src.dt, 0, nv,
					    flags);
				dma(c, 1, t, loc_add(dst, (uint64_t)((a * nk + k0) *
						     nb + j0) * es),
				    nb * es);
			}
	}
}
