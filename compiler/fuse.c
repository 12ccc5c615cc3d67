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
 *   - PARAM, CONST and other RESHAPEs emit nothing and stay alone.
 * A kernel is thus a tree whose non-root nodes have exactly one use,
 * inside it, and no cycle between kernels can form.
 */
#include <errno.h>
#include <stdlib.h>

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
		if (enable && is_ew(&g->nodes[i]))
			fuse_node(g, &f, i);
	}
	for (i = 0; i < g->n; i++)
		g->nodes[i].kernel = find(f.root, i);
	free(f.mm);
	free(f.lo);
	free(f.root);
	return 0;
}
