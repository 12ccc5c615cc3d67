// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * plan.c - the memory planner. Decides where every materialised value
 * lives: parameters in their binding, small constants in the program's
 * constants section, large ones (weights) in the weights binding, graph
 * outputs in their output binding, RESHAPE at its operand's bytes,
 * everything else in one HBM scratch arena.
 *
 * Weights are data, not code: the runtime uploads them once per device
 * and binds them read only at every execution, so a program stays small
 * whatever its model's size (cheap to load and validate) and the weights
 * are bounded by device memory, not by the constants section's limit.
 *
 * Scratch offsets come from liveness (tinygrad style): a value lives
 * from the kernel that defines it to the last kernel that reads it
 * (inclusive: a kernel reads its inputs while it writes its outputs, so
 * they never share bytes). Buffers are placed largest first, each at the
 * best-fitting gap among the buffers it is live with.
 *
 * Element sizes on the device (dev_type_size): pred values are kept as
 * f32 1.0/0.0 because the ISA has no byte type; pred parameters and
 * outputs are therefore refused by codegen.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "plan.h"

#define PLAN_ALIGN 64
/*
 * A constant below PLAN_SMALL_CONST bytes stays in the program while
 * the constants section holds less than PLAN_CONST_BUDGET: scalars,
 * masks and small tables cost no binding reads of their own.
 */
#define PLAN_SMALL_CONST	4096
#define PLAN_CONST_BUDGET	(1u << 20)

int dev_type_size(enum vtpu_type t)
{
	switch (t) {
	case VTPU_F32:
	case VTPU_S32:
	case VTPU_PRED:
		return 4;
	case VTPU_BF16:
		return 2;
	default:
		return 0;	/* s64: no device type */
	}
}

uint64_t dev_bytes(const struct vtpu_shape *s)
{
	return (uint64_t)shape_elems(s) * dev_type_size(s->type);
}

static uint64_t align_up(uint64_t x)
{
	return (x + PLAN_ALIGN - 1) & ~(uint64_t)(PLAN_ALIGN - 1);
}

/* A unique key per kernel: the fused id, or one kernel per node. */
int node_kernel(const struct ir_graph *g, int v)
{
	return g->nodes[v].kernel >= 0 ? g->nodes[v].kernel : -1 - v;
}

/* The node whose bytes @v shares: RESHAPE chains end at their operand. */
int node_root(const struct ir_graph *g, int v)
{
	while (g->nodes[v].op == OP_RESHAPE)
		v = g->nodes[v].in[0];
	return v;
}

/*
 * A dense index for @v's kernel in [0, 2n): fused kernel ids (< n) and
 * unfused nodes (n + v) never collide.
 */
static int kernel_rep(const struct ir_graph *g, int v)
{
	return g->nodes[v].kernel >= 0 ? g->nodes[v].kernel : g->n + v;
}

static void heap_push(int *heap, int *n, const int *first, int k)
{
	int i = (*n)++;

	while (i && first[heap[(i - 1) / 2]] > first[k]) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = k;
}

static int heap_pop(int *heap, int *n, const int *first)
{
	int top = heap[0], last = heap[--(*n)], i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && first[heap[c + 1]] < first[heap[c]])
			c++;
		if (first[last] <= first[heap[c]])
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = last;
	return top;
}

/*
 * Kernels in emission order: repeatedly the not yet emitted kernel whose
 * first node comes earliest among those whose inputs are all computed
 * (a topological sort over kernels, ready ones in a heap: O(E log N)).
 * Fills knum[v] with the position of v's kernel; returns the count.
 */
int kernel_order(const struct ir_graph *g, int *knum)
{
	int n = g->n, m = 2 * g->n, i, k, nk = 0, done = 0, nheap = 0, ret;
	int *indeg = calloc(m + 1, sizeof(int));
	int *first = malloc((m + 1) * sizeof(int));
	int *start = calloc(m + 2, sizeof(int));
	int *edges = NULL, *heap = malloc((m + 1) * sizeof(int));
	int *pos = NULL, nedges = 0;

	if (!indeg || !first || !start || !heap)
		goto nomem;
	for (i = 0; i < m; i++)
		first[i] = n;
	for (i = 0; i < n; i++) {
		int r = kernel_rep(g, i);

		if (i < first[r])
			first[r] = i;
		for (k = 0; k < g->nodes[i].nin; k++)
			if (kernel_rep(g, g->nodes[i].in[k]) != r) {
				start[kernel_rep(g, g->nodes[i].in[k]) + 1]++;
				indeg[r]++;
				nedges++;
			}
	}
	for (i = 0; i < m; i++)
		start[i + 1] += start[i];
	edges = malloc((nedges + 1) * sizeof(int));
	pos = malloc((m + 1) * sizeof(int));
	if (!edges || !pos)
		goto nomem;
	memcpy(pos, start, m * sizeof(int));
	for (i = 0; i < n; i++)
		for (k = 0; k < g->nodes[i].nin; k++) {
			int p = kernel_rep(g, g->nodes[i].in[k]);

			if (p != kernel_rep(g, i))
				edges[pos[p]++] = kernel_rep(g, i);
		}
	for (i = 0; i < m; i++)
		if (first[i] < n && !indeg[i])
			heap_push(heap, &nheap, first, i);
	/* pos[] now numbers kernels in emission order */
	while (nheap) {
		int kr = heap_pop(heap, &nheap, first);

		pos[kr] = nk++;
		for (i = start[kr]; i < start[kr + 1]; i++)
			if (!--indeg[edges[i]])
				heap_push(heap, &nheap, first, edges[i]);
	}
	for (i = 0; i < n; i++) {
		if (indeg[kernel_rep(g, i)])
			break;	/* kernels depend on each other */
		knum[i] = pos[kernel_rep(g, i)];
		done++;
	}
	ret = done == n ? nk : -EINVAL;
	goto out;
nomem:
	ret = -ENOMEM;
out:
	free(pos);
	free(edges);
	free(heap);
	free(start);
	free(first);
	free(indeg);
	return ret;
}

/*
 * need[v]: whether v's value must be in memory, being read by another
 * kernel or an output. One pass over the edges: asked node by node, the
 * question cost a scan of the graph each, which an unrolled recurrent
 * layer of thousands of steps made minutes.
 */
static uint8_t *memory_needs(const struct ir_graph *g)
{
	uint8_t *need = calloc(g->n + 1, 1);
	int i, k;

	if (!need)
		return NULL;
	for (k = 0; k < g->nout; k++)
		need[g->outputs[k]] = 1;
	for (i = 0; i < g->n; i++)
		for (k = 0; k < g->nodes[i].nin; k++) {
			int v = g->nodes[i].in[k];

			if (v < i && node_kernel(g, i) != node_kernel(g, v))
				need[v] = 1;
		}
	return need;
}

/* Whether anything but the output list reads @r or one of its aliases. */
static int read_by_nodes(const struct ir_graph *g, int r)
{
	int i, k;

	for (i = 0; i < g->n; i++)
		for (k = 0; k < g->nodes[i].nin; k++)
			if (node_root(g, g->nodes[i].in[k]) == r &&
			    g->nodes[i].op != OP_RESHAPE)
				return 1;
	return 0;
}

static int output_count(const struct ir_graph *g, int r)
{
	int k, n = 0;

	for (k = 0; k < g->nout; k++)
		n += node_root(g, g->outputs[k]) == r;
	return n;
}

/*
 * Output k goes straight into its binding when its root is computed by a
 * kernel and nothing else reads it: no node, no other output (output
 * bindings are never read back). Otherwise the value lives in scratch
 * and codegen copies it there at the end (out_copy[k] = 1).
 */
static void place_outputs(struct ir_graph *g, uint8_t *out_copy)
{
	int k, r;

	for (k = 0; k < g->nout; k++) {
		r = node_root(g, g->outputs[k]);
		out_copy[k] = 1;
		if (g->nodes[r].op == OP_PARAM || g->nodes[r].op == OP_CONST ||
		    output_count(g, r) > 1 || read_by_nodes(g, r))
			continue;
		g->nodes[r].arena = A_OUTPUT;
		g->nodes[r].offset = g->nparams + k;	/* binding, fixed below */
		out_copy[k] = 0;
	}
}

struct buf {
	int v;
	uint64_t size;
	int def, last;
};

static int by_size_desc(const void *a, const void *b)
{
	const struct buf *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	return x->v - y->v;
}

/* A placed buffer live at once with the one being placed. */
struct span {
	uint64_t start, end;
};

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Lowest offset of the smallest gap that holds @b among placed buffers. */
static uint64_t best_fit(const struct buf *bufs, int nplaced,
			 const uint64_t *off, const struct buf *b)
{
	uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, pos = 0;
	int i, n = 0;
	struct span *live = malloc((nplaced + 1) * sizeof(*live));

	if (!live)
		return UINT64_MAX;
	for (i = 0; i < nplaced; i++)
		if (bufs[i].def <= b->last && b->def <= bufs[i].last)
			live[n++] = (struct span){ off[i], off[i] + bufs[i].size };
	/*
	 * By offset. Usually few are live at once, but an unrolled
	 * recurrent layer keeps every step's output live to its end: an
	 * insertion sort made thousands of steps take minutes.
	 */
	qsort(live, n, sizeof(*live), by_start);
	for (i = 0; i < n; i++) {
		uint64_t s = live[i].start, e = live[i].end;

		if (s > pos && s - pos >= b->size && s - pos < best_gap) {
			best_gap = s - pos;
			best = pos;
		}
		if (e > pos)
			pos = e;
	}
	free(live);
	return best != UINT64_MAX ? best : pos;
}

static uint64_t lower_bound(const struct buf *bufs, int n, int nk)
{
	uint64_t lb = 0, sum;
	int t, i;

	for (t = 0; t < nk; t++) {
		sum = 0;
		for (i = 0; i < n; i++)
			if (bufs[i].def <= t && t <= bufs[i].last)
				sum += bufs[i].size;
		if (sum > lb)
			lb = sum;
	}
	return lb;
}

/*
 * The buffer reading @v reads: a virtual view's is its source's (a
 * virtual PAD under an im2col view: the PAD's source).
 */
static int read_root(const struct ir_graph *g, int v)
{
	int r = node_root(g, v);

	while (g->nodes[r].virt)
		r = node_root(g, g->nodes[r].in[0]);
	return r;
}

/* Liveness of each scratch root, in kernel positions; -1: no memory. */
static int collect_scratch(struct ir_graph *g, const int *knum, int nk,
			   const uint8_t *out_copy, struct buf *bufs)
{
	int i, k, n = 0, *buf_of;

	for (i = 0; i < g->n; i++) {
		if (g->nodes[i].arena != A_SCRATCH)
			continue;
		bufs[n].v = i;
		bufs[n].size = align_up(dev_bytes(&g->nodes[i].shape));
		bufs[n].def = bufs[n].last = knum[i];
		n++;
	}
	/* which buffer a root is (-1: none), for one pass over the edges */
	buf_of = malloc((g->n + 1) * sizeof(*buf_of));
	if (!buf_of)
		return -1;
	for (i = 0; i < g->n; i++)
		buf_of[i] = -1;
	for (k = 0; k < n; k++)
		buf_of[bufs[k].v] = k;
	for (i = 0; i < g->n; i++) {
		int j;

		for (j = 0; j < g->nodes[i].nin; j++) {
			k = buf_of[read_root(g, g->nodes[i].in[j])];
			if (k >= 0 && knum[i] > bufs[k].last)
				bufs[k].last = knum[i];
		}
	}
	/* output copies run after every kernel */
	for (i = 0; i < g->nout; i++) {
		k = out_copy[i] ? buf_of[node_root(g, g->outputs[i])] : -1;
		if (k >= 0)
			bufs[k].last = nk;
	}
	free(buf_of);
	return n;
}

static int place_scratch(struct ir_graph *g, const int *knum, int nk,
			 const uint8_t *out_copy, struct plan_stats *st)
{
	struct buf *bufs = calloc(g->n + 1, sizeof(*bufs));
	uint64_t *off = calloc(g->n + 1, sizeof(*off));
	uint64_t peak = 0;
	int n, i;

	if (!bufs || !off) {
		free(bufs);
		free(off);
		return -ENOMEM;
	}
	n = collect_scratch(g, knum, nk, out_copy, bufs);
	if (n < 0) {
		free(bufs);
		free(off);
		return -ENOMEM;
	}
	qsort(bufs, n, sizeof(*bufs), by_size_desc);
	for (i = 0; i < n; i++) {
		off[i] = best_fit(bufs, i, off, &bufs[i]);
		if (off[i] == UINT64_MAX)
			break;
		g->nodes[bufs[i].v].offset = (int64_t)off[i];
		if (off[i] + bufs[i].size > peak)
			peak = off[i] + bufs[i].size;
	}
	st->scratch_peak = peak;
	st->scratch_lower_bound = lower_bound(bufs, n, nk + 1);
	free(bufs);
	free(off);
	return i == n ? 0 : -ENOMEM;
}

/* Parameters, constants, outputs and which values need scratch. */
static void place_const(struct ir_node *n, uint64_t *coff, uint64_t *woff)
{
	uint64_t size = dev_bytes(&n->shape);

	if (size < PLAN_SMALL_CONST && *coff + size <= PLAN_CONST_BUDGET) {
		n->arena = A_CONST;
		n->offset = (int64_t)*coff;
		*coff = align_up(*coff + size);
	} else {
		n->arena = A_WEIGHTS;
		n->offset = (int64_t)*woff;
		*woff = align_up(*woff + size);
	}
}

static int assign_arenas(struct ir_graph *g, uint8_t *out_copy,
			 const uint8_t *need)
{
	uint64_t coff = 0, woff = 0;
	int i;

	for (i = 0; i < g->n; i++) {
		struct ir_node *n = &g->nodes[i];

		n->arena = A_NONE;
		n->offset = 0;
		if (!dev_type_size(n->shape.type))
			return ir_error(g, ENOTSUP, "node %d: type %s has no device representation",
					i, type_name(n->shape.type));
	}
	place_outputs(g, out_copy);
	for (i = 0; i < g->n; i++) {
		struct ir_node *n = &g->nodes[i];

		if (n->op == OP_PARAM) {
			n->arena = A_PARAM;
			n->offset = 0;
		} else if (n->op == OP_CONST) {
			place_const(n, &coff, &woff);
		} else if (n->op == OP_RESHAPE || n->arena == A_OUTPUT ||
			   n->virt) {
			continue;
		} else if (need[i]) {
			n->arena = A_SCRATCH;
		}
	}
	return 0;
}

/* A RESHAPE's operand must be in memory when the RESHAPE's value is. */
static void materialise_reshape_roots(struct ir_graph *g, const uint8_t *need)
{
	int i, r;

	for (i = 0; i < g->n; i++) {
		if (g->nodes[i].op != OP_RESHAPE)
			continue;
		r = node_root(g, i);
		/* a virtual view's readers read its source */
		if (g->nodes[r].arena == A_NONE && !g->nodes[r].virt && need[i])
			g->nodes[r].arena = A_SCRATCH;
	}
}

static void alias_reshapes(struct ir_graph *g)
{
	int i, r;

	for (i = 0; i < g->n; i++) {
		if (g->nodes[i].op != OP_RESHAPE)
			continue;
		r = node_root(g, i);
		g->nodes[i].arena = g->nodes[r].arena;
		g->nodes[i].offset = g->nodes[r].offset;
	}
}

/*
 * Output bindings: node.offset of an A_OUTPUT root is its byte offset
 * (0); the output index is found again from g->outputs by codegen.
 */
static void fix_output_offsets(struct ir_graph *g)
{
	int i;

	for (i = 0; i < g->n; i++)
		if (g->nodes[i].arena == A_OUTPUT)
			g->nodes[i].offset = 0;
}

int pass_plan(struct ir_graph *g, struct plan_stats *st)
{
	uint8_t *out_copy = calloc(g->nout + 1, 1);
	int *knum = calloc(g->n + 1, sizeof(int));
	uint8_t *need = memory_needs(g);
	int nk, ret;

	memset(st, 0, sizeof(*st));
	if (!out_copy || !knum || !need) {
		ret = ir_error(g, ENOMEM, "out of memory");
		goto out;
	}
	nk = kernel_order(g, knum);
	if (nk < 0) {
		ret = ir_error(g, EINVAL, "plan: kernels have no order");
		goto out;
	}
	ret = assign_arenas(g, out_copy, need);
	if (ret)
		goto out;
	materialise_reshape_roots(g, need);
	fix_output_offsets(g);
	ret = place_scratch(g, knum, nk, out_copy, st);
	if (ret) {
		ret = ir_error(g, ENOMEM, "plan: scratch placement failed");
		goto out;
	}
	alias_reshapes(g);
out:
	free(need);
	free(knum);
	free(out_copy);
	return ret;
}
