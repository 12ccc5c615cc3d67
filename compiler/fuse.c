// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * fuse.c - groups the nodes of a primitive graph into kernels: the nodes
 * of one kernel are computed together in VMEM, and only a value used
 * outside its kernel (or an output) is written to memory.
 *
 * The contract codegen.c reads: node.kernel is the id of the kernel's
 * root, the one node whose value may leave it (so a node that is alone
 * has kernel == its own id). Kernel ids therefore ascend in topological
 * order: everything a kernel reads was made by a kernel with a smaller
 * id. With fusion enabled:
 *   - an elementwise node (K_EW1/2/3) joins the kernel of each
 *     elementwise operand of its dims that has no other use: chains and
 *     trees become one kernel;
 *   - it joins a P_MATMUL operand the same way (an epilogue); a kernel
 *     holds at most one matmul and it is the kernel's first node, as
 *     fused.c wants;
 *   - a single-use RESHAPE between such a producer and its elementwise
 *     user joins with them (an alias inside the kernel);
 *   - a value read more than once joins the kernel of its readers once
 *     they are all in one (fuse_shared(): x * sigmoid(x));
 *   - PARAM, CONST and other RESHAPEs emit nothing and stay alone.
 * A kernel's non-root nodes thus have all their uses inside it, and no
 * cycle between kernels can form.
 *
 * Then broadcasts: a P_COPY that repeats its source (a bias over the
 * channels, a scalar bound of a clip) read only by elementwise nodes
 * becomes virtual (node.virt) when every reader's kernel can load it as
 * the ISA broadcasts an operand: a scalar, or one value per row or the
 * same row for all rows of the kernel's [rows, w] view. A matmul's
 * kernel has w = N; a chain takes the w its first virtual operand needs
 * (node.kw on its root) and other operands must agree. A virtual
 * P_COPY emits no code and takes no memory, so a broadcast costs no
 * pass over HBM.
 *
 * Last, im2col views (implicit GEMM): a P_COPY that repeats its source's
 * elements (a convolution's windows overlap) and is read only as the B
 * operand of matmuls becomes virtual too when its columns are runs of
 * contiguous source elements (ir_mm_view()): the matmul then loads each
 * row of a B tile straight from the source, a DMA per run of output
 * rows, and the copy, KH*KW times its source, is never written. So is
 * the convolution's PAD when only such views read it: they load what
 * lies inside its source and fill the rest.
 */
#include <errno.h>
#include <stdlib.h>

#include <drm/vtpu_isa.h>

#include "ir.h"

static bool is_ew(const struct ir_node *n)
{
	return ir_ops[n->op].kind != K_OTHER;
}

/* Per kernel, indexed by its root while it grows. */
struct fuse {
	int *root;	/* union-find parent; roots point to themselves */
	int *lo;	/* smallest node id in the kernel */
	int *mm;	/* its P_MATMUL, or -1 */
};

static int find(int *root, int v)
{
	while (root[v] != v) {
		root[v] = root[root[v]];
		v = root[v];
	}
	return v;
}

/*
 * Merges kernel @p into @i's unless that breaks what codegen.c (fused.c)
 * emits: one P_MATMUL a kernel, and it comes first, leading the
 * elementwise epilogue that consumes its tile in VMEM.
 */
static bool join(struct fuse *f, int p, int i)
{
	int mm = f->mm[p] >= 0 ? f->mm[p] : f->mm[i];
	int lo = f->lo[p] < f->lo[i] ? f->lo[p] : f->lo[i];

	if ((f->mm[p] >= 0 && f->mm[i] >= 0) || (mm >= 0 && lo != mm))
		return false;
	f->root[p] = i;
	f->mm[i] = mm;
	f->lo[i] = lo;
	return true;
}

static bool fusable(const struct ir_node *n)
{
	return (is_ew(n) || n->op == OP_P_MATMUL) && n->uses == 1;
}

/*
 * The operand of node @n (input @k) that may join @n's kernel, or -1.
 * A single-use RESHAPE between them is looked through (*@via): lowering
 * puts one after every matmul, and fused.c keeps it as an alias of its
 * operand's VMEM tile, so it must not cut the epilogue off.
 */
static int producer(const struct ir_graph *g, const struct ir_node *n, int k,
		    int *via)
{
	int v = n->in[k];

	*via = -1;
	if (g->nodes[v].op == OP_RESHAPE && g->nodes[v].uses == 1) {
		*via = v;
		v = g->nodes[v].in[0];
		if (shape_elems(&g->nodes[v].shape) != shape_elems(&n->shape))
			return -1;
	} else if (!dims_eq(&g->nodes[v].shape, &n->shape)) {
		return -1;
	}
	return fusable(&g->nodes[v]) ? v : -1;
}

/*
 * Joins elementwise node @i with the kernels of its fusable operands;
 * matmul kernels first, so an epilogue prefers its matmul over an
 * elementwise neighbour that would keep the matmul from leading.
 */
static void fuse_node(struct ir_graph *g, struct fuse *f, int i)
{
	const struct ir_node *n = &g->nodes[i];
	int k, round, p, via;

	for (round = 0; round < 2; round++)
		for (k = 0; k < n->nin; k++) {
			p = producer(g, n, k, &via);
			if (p < 0)
				continue;
			/* a single-use operand is still its kernel's root */
			p = find(f->root, p);
			if (p == i || (f->mm[p] >= 0) != (round == 0))
				continue;
			if (join(f, p, i) && via >= 0)
				f->root[via] = i;
		}
}

static bool is_output(const struct ir_graph *g, int v);

/*
 * Values read more than once (a SiLU's x, read by its sigmoid and by the
 * product; a hard swish's): operand @p of node @i, an elementwise value
 * or a matmul of @i's dims, joins @i's kernel once every reader of it is
 * there (@i, the last, is being fused), so it never leaves the kernel.
 * @p is its kernel's root and the only value that leaves it, and all of
 * its readers are in @i's kernel: the merge closes no cycle.
 */
static void fuse_shared(struct ir_graph *g, struct fuse *f, int i)
{
	const struct ir_node *n = &g->nodes[i];
	int k, j, q, p, src, ki = find(f->root, i);
	bool all;

	for (k = 0; k < n->nin; k++) {
		p = n->in[k];
		/* a matmul's RESHAPE, read twice: with the matmul behind it */
		src = p;
		if (g->nodes[p].op == OP_RESHAPE && g->nodes[p].uses >= 2 &&
		    g->nodes[g->nodes[p].in[0]].uses == 1)
			src = g->nodes[p].in[0];
		if (g->nodes[p].uses < 2 || find(f->root, src) != src ||
		    p == ki || src == ki || is_output(g, p) ||
		    !(is_ew(&g->nodes[src]) ||
		      g->nodes[src].op == OP_P_MATMUL) ||
		    shape_elems(&g->nodes[src].shape) !=
		    shape_elems(&n->shape) ||
		    (src == p && !dims_eq(&g->nodes[p].shape, &n->shape)))
			continue;
		/* readers after @i are not fused yet: not in its kernel */
		for (all = true, j = p + 1; j < g->n && all; j++)
			for (q = 0; q < g->nodes[j].nin && all; q++)
				all = g->nodes[j].in[q] != p ||
				      (j <= i && find(f->root, j) == ki);
		if (all && join(f, src, ki) && src != p)
			f->root[p] = ki;
	}
}

bool ir_view_linear(const struct ir_node *n, int lo, int hi, int64_t *step)
{
	int64_t next = 0;
	bool first = true;
	int k;

	*step = 0;
	for (k = hi - 1; k >= lo; k--) {
		if (n->shape.dims[k] == 1)
			continue;
		if (first)
			*step = n->a.view.stride[k];
		else if (n->a.view.stride[k] != next)
			return false;
		next = n->a.view.stride[k] * n->shape.dims[k];
		first = false;
	}
	return true;
}

static bool zero_strides(const struct ir_node *n, int lo, int hi)
{
	int k;

	for (k = lo; k < hi; k++)
		if (n->shape.dims[k] != 1 && n->a.view.stride[k])
			return false;
	return true;
}

enum ir_bcast ir_bcast_class(const struct ir_graph *g, int v, int64_t w,
			     int64_t *rstride)
{
	const struct ir_node *n = &g->nodes[v];
	int r = n->shape.rank, j = r;
	int64_t prod = 1, step;

	*rstride = 0;
	if (n->op != OP_P_COPY)
		return BC_NONE;
	if (zero_strides(n, 0, r))
		return BC_SCALAR;
	while (j > 0 && prod < w)
		prod *= n->shape.dims[--j];
	if (prod != w || w < 1)
		return BC_NONE;
	if (zero_strides(n, j, r) && ir_view_linear(n, 0, j, &step) && step > 0) {
		*rstride = step;
		return BC_COL;
	}
	if (zero_strides(n, 0, j) && ir_view_linear(n, j, r, &step) && step == 1)
		return BC_ROW;
	return BC_NONE;
}

/* A P_COPY that reads some element more than once: a stride-0 dimension. */
static bool is_broadcast(const struct ir_node *n)
{
	int k;

	if (n->op != OP_P_COPY || !shape_elems(&n->shape))
		return false;
	for (k = 0; k < n->shape.rank; k++)
		if (n->shape.dims[k] > 1 && !n->a.view.stride[k])
			return true;
	return false;
}

/*
 * The row width a chain kernel needs for broadcast @v: the narrowest
 * [rows, w] view where @v is BC_ROW or BC_COL; 0 for a scalar (any
 * width), -1 when there is none.
 */
static int64_t chain_width(const struct ir_graph *g, int v)
{
	const struct ir_node *n = &g->nodes[v];
	int64_t w = 1, st;
	int j;

	if (ir_bcast_class(g, v, 1, &st) == BC_SCALAR)
		return 0;
	for (j = n->shape.rank - 1; j > 0; j--) {
		if (n->shape.dims[j] == 1)
			continue;
		w *= n->shape.dims[j];
		if (ir_bcast_class(g, v, w, &st) != BC_NONE)
			return w;
	}
	return -1;
}

/* The row width @v needs in kernel @root (0: any), or -1: it cannot. */
static int64_t width_in(const struct ir_graph *g, const struct fuse *f,
			int root, int v)
{
	int64_t w, st;

	if (f->mm[root] >= 0) {
		w = g->nodes[f->mm[root]].shape.dims[2];
		return ir_bcast_class(g, v, w, &st) != BC_NONE ? w : -1;
	}
	if (g->nodes[root].kw)
		return ir_bcast_class(g, v, g->nodes[root].kw, &st) != BC_NONE ?
		       g->nodes[root].kw : -1;
	return chain_width(g, v);
}

static bool is_output(const struct ir_graph *g, int v)
{
	int k;

	for (k = 0; k < g->nout; k++)
		if (g->outputs[k] == v)
			return true;
	return false;
}

/*
 * Marks the broadcasts every reader can load as an operand (node.virt)
 * and records the widths chains need (node.kw of their roots). Readers
 * come after @v, so one scan per broadcast finds them all.
 */
static void virtual_views(struct ir_graph *g, struct fuse *f)
{
	int v, i, k, root;
	bool ok;

	for (v = 0; v < g->n; v++) {
		if (!is_broadcast(&g->nodes[v]) || is_output(g, v))
			continue;
		ok = true;
		for (i = v + 1; i < g->n && ok; i++)
			for (k = 0; k < g->nodes[i].nin && ok; k++)
				if (g->nodes[i].in[k] == v)
					ok = is_ew(&g->nodes[i]) &&
					     width_in(g, f, find(f->root, i), v) >= 0;
		if (!ok)
			continue;
		g->nodes[v].virt = true;
		for (i = v + 1; i < g->n; i++)
			for (k = 0; k < g->nodes[i].nin; k++) {
				if (g->nodes[i].in[k] != v)
					continue;
				root = find(f->root, i);
				if (f->mm[root] < 0 && !g->nodes[root].kw)
					g->nodes[root].kw = width_in(g, f, root, v);
			}
	}
}

bool ir_mm_view(const struct ir_graph *g, int v, int64_t ncols,
		struct ir_mm_view *mv)
{
	const struct ir_node *n = &g->nodes[v];
	int r = n->shape.rank, j = r, iw = -1, ih = -1, k;
	int64_t prod = 1;

	if (n->op != OP_P_COPY || ncols < 1 ||
	    (n->shape.type != VTPU_F32 && n->shape.type != VTPU_BF16))
		return false;
	while (j > 0 && prod < ncols)
		prod *= n->shape.dims[--j];
	if (prod != ncols)
		return false;
	for (k = r - 1; k >= j; k--) {
		if (n->shape.dims[k] == 1)
			continue;
		if (iw < 0) {
			iw = k;
		} else {
			ih = k;
			break;
		}
	}
	/*
	 * A run's columns are elements of the source a step apart, as DMA
	 * moves them (1: a stride-1 convolution's, 2: a stride-2 one's).
	 */
	if (iw >= 0 && (n->a.view.stride[iw] < 1 ||
			n->a.view.stride[iw] > VTPU_MAX_DMA_STEP))
		return false;
	mv->split = j;
	mv->wstep = iw >= 0 ? n->a.view.stride[iw] : 1;
	mv->w = iw >= 0 ? n->shape.dims[iw] : 1;
	mv->h = ih >= 0 ? n->shape.dims[ih] : 1;
	mv->hstride = ih >= 0 ? n->a.view.stride[ih] : 0;
	return true;
}

/*
 * Whether every reader of @v, through RESHAPEs, is a matmul that can
 * load P_COPY @copy as its B (operand 1, not transposed) by rows.
 */
static bool read_as_b(const struct ir_graph *g, int v, int copy)
{
	struct ir_mm_view mv;
	int i, k, readers = 0;

	for (i = v + 1; i < g->n; i++)
		for (k = 0; k < g->nodes[i].nin; k++) {
			const struct ir_node *n = &g->nodes[i];

			if (n->in[k] != v)
				continue;
			readers++;
			if (n->op == OP_RESHAPE && !is_output(g, i) &&
			    read_as_b(g, i, copy))
				continue;
			if (n->op != OP_P_MATMUL || k != 1 || n->a.mm.trans_b ||
			    !ir_mm_view(g, copy, n->shape.dims[2], &mv))
				return false;
		}
	return readers > 0;
}

/*
 * Whether view @n of a buffer [.., hp, wp] keeps each of its rows (runs
 * along the last dimension) inside a row of the buffer, and its steps
 * along rows inside a plane: a convolution's windows do. Strides that
 * mix rows and columns count against both, conservatively.
 */
static bool view_in_rows(const struct ir_node *n, int64_t hp, int64_t wp)
{
	int64_t col = n->a.view.offset % wp, row = n->a.view.offset / wp % hp;
	int64_t st, m;
	int k;

	for (k = 0; k < n->shape.rank; k++) {
		st = n->a.view.stride[k];
		m = n->shape.dims[k] - 1;
		if (st % wp)
			col += m * st;
		else if (st / wp % hp)
			row += m * (st / wp);
	}
	return col < wp && row < hp;
}

/*
 * Whether PAD @v is read only by virtual im2col views, which can load
 * its source and fill the rest of their B tiles with the pad value
 * (fused.c): then it need not be materialised either. Not a crop
 * (negative edges).
 */
static bool pad_read_through(const struct ir_graph *g, int v)
{
	const struct ir_node *n = &g->nodes[v];
	int i, k, readers = 0;

	if (n->op != OP_PAD || is_output(g, v) || n->shape.rank < 1)
		return false;
	for (k = 0; k < n->shape.rank; k++)
		if (n->a.pad.lo[k] < 0 || n->a.pad.hi[k] < 0)
			return false;
	for (i = v + 1; i < g->n; i++)
		for (k = 0; k < g->nodes[i].nin; k++) {
			if (g->nodes[i].in[k] != v)
				continue;
			if (!g->nodes[i].virt || is_broadcast(&g->nodes[i]) ||
			    !view_in_rows(&g->nodes[i], n->shape.rank > 1 ?
					  n->shape.dims[n->shape.rank - 2] : 1,
					  n->shape.dims[n->shape.rank - 1]))
				return false;
			readers++;
		}
	return readers > 0;
}

/*
 * Marks the im2col views matmuls load through (see the top). Only
 * copies larger than their source: one that is not (a transpose, a
 * strided slice) costs one pass to materialise, and B tiles are cheaper
 * to load whole than run by run; not broadcasts, virtual_views()' kind.
 */
static void mm_views(struct ir_graph *g)
{
	int v;

	for (v = 0; v < g->n; v++) {
		const struct ir_node *n = &g->nodes[v];

		if (n->op != OP_P_COPY || is_output(g, v) || is_broadcast(n) ||
		    shape_elems(&n->shape) <=
		    shape_elems(&g->nodes[n->in[0]].shape))
			continue;
		if (read_as_b(g, v, v))
			g->nodes[v].virt = true;
	}
	for (v = 0; v < g->n; v++)
		if (pad_read_through(g, v))
			g->nodes[v].virt = true;
}

int pass_fuse(struct ir_graph *g, bool enable)
{
	struct fuse f;
	int i;

	if (g->errcode)
		return -g->errcode;
	f.root = malloc((g->n + 1) * sizeof(int));
	f.lo = malloc((g->n + 1) * sizeof(int));
	f.mm = malloc((g->n + 1) * sizeof(int));
	if (!f.root || !f.lo || !f.mm) {
		free(f.mm);
		free(f.lo);
		free(f.root);
		return ir_error(g, ENOMEM, "out of memory");
	}
	ir_count_uses(g);
	for (i = 0; i < g->n; i++) {
		f.root[i] = i;
		f.lo[i] = i;
		f.mm[i] = g->nodes[i].op == OP_P_MATMUL ? i : -1;
		g->nodes[i].virt = false;
		g->nodes[i].kw = 0;
		if (enable && is_ew(&g->nodes[i])) {
			fuse_node(g, &f, i);
			fuse_shared(g, &f, i);
		}
	}
	if (enable) {
		virtual_views(g, &f);
		mm_views(g);
	}
	for (i = 0; i < g->n; i++)
		g->nodes[i].kernel = find(f.root, i);
	/* a loop's results are made by its kernel, the loop itself */
	for (i = 0; i < g->n; i++)
		if (g->nodes[i].op == OP_WHILE_OUT)
			g->nodes[i].kernel = g->nodes[g->nodes[i].in[0]].kernel;
	free(f.mm);
	free(f.lo);
	free(f.root);
	return 0;
}
