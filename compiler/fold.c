// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * fold.c - constant folding. A node whose operands are all constants
 * becomes a constant, computed by the reference evaluator (eval.c) on a
 * throwaway graph of the node and its operands: one source of truth for
 * what every op means, so folding cannot disagree with the oracle the
 * tests compare the device against.
 *
 * Limits, because a folded constant is stored in the program:
 *   - results above FOLD_MAX_ELEMS elements stay computed at run time,
 *     but for layout changes and elementwise ops up to FOLD_MAX_MOVE: a
 *     classifier's weights transposed by the exporter are worth folding
 *     (cheap to evaluate, no bigger than what they replace), a large
 *     product is not (the evaluator's O(n^3) in doubles at compile time);
 *   - an op that makes more elements than its operands hold (broadcast,
 *     pad) folds only up to FOLD_GROW_MAX elements: a broadcast of a
 *     scalar is cheaper to compute than to load.
 * The node is rewritten in place, so a chain of constant ops folds in one
 * forward walk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define FOLD_MAX_ELEMS	(1 << 20)
#define FOLD_MAX_MOVE	(1 << 24)
#define FOLD_GROW_MAX	(1 << 12)
/*
 * A transpose of a constant above FOLD_MAX_MOVE: a classifier's weights
 * the exporter stored the other way round (VGG's first Linear, 25088 x
 * 4096, is 102.8M elements) are moved here, element by element in their
 * own type, not through the evaluator's doubles. Left to run time they
 * were transposed again by every execution.
 */
#define FOLD_MAX_TRANSPOSE	(1 << 28)

static bool foldable(const struct ir_graph *g, const struct ir_node *n)
{
	int64_t elems = shape_elems(&n->shape), in_elems = 0;
	int k;

	/* a loop may run long, and runs on the device: never at compile time */
	if (n->op == OP_DEAD || n->nin == 0 || n->op == OP_WHILE ||
	    n->op == OP_WHILE_OUT)
		return false;
	if (elems > FOLD_MAX_MOVE)
		return n->op == OP_TRANSPOSE && elems <= FOLD_MAX_TRANSPOSE &&
		       g->nodes[n->in[0]].op == OP_CONST &&
		       g->nodes[n->in[0]].a.cst.data;
	if (elems > FOLD_MAX_ELEMS && ir_ops[n->op].kind == K_OTHER &&
	    n->op != OP_TRANSPOSE && n->op != OP_RESHAPE && n->op != OP_SLICE)
		return false;
	for (k = 0; k < n->nin; k++) {
		if (g->nodes[n->in[k]].op != OP_CONST)
			return false;
		in_elems += shape_elems(&g->nodes[n->in[k]].shape);
	}
	return elems <= in_elems || elems <= FOLD_GROW_MAX;
}

/*
 * Evaluates node @n of @g into @out (malloc'd by ir_eval). The subgraph
 * borrows the constants' data: a graph frees only what it allocated.
 */
static int eval_node(const struct ir_graph *g, const struct ir_node *n,
		     void **out)
{
	struct vtpu_graph *sub = vtpu_graph_new();
	struct ir_graph *s;
	int *in, k, id, ret = -ENOMEM;

	if (!sub)
		return -ENOMEM;
	s = &sub->ir;
	in = ir_alloc(s, n->nin * sizeof(int));
	if (!in)
		goto out;
	for (k = 0; k < n->nin; k++) {
		const struct ir_node *c = &g->nodes[n->in[k]];

		in[k] = ir_add(s, OP_CONST, &c->shape, 0, NULL);
		if (in[k] < 0)
			goto out;
		s->nodes[in[k]].a.cst.data = c->a.cst.data;
	}
	id = ir_add(s, n->op, &n->shape, n->nin, in);
	if (id < 0)
		goto out;
	s->nodes[id].a = n->a;
	s->outputs = malloc(sizeof(int));
	if (!s->outputs)
		goto out;
	s->outputs[0] = id;
	s->nout = 1;
	ret = ir_eval(s, NULL, out);
out:
	vtpu_graph_free(sub);
	return ret;
}

/*
 * TRANSPOSE of a constant, into @g's memory: each output element is an
 * input element of the same type, so no arithmetic and no evaluator. The
 * input's strides in output order let an odometer walk the input; the
 * innermost output dimension moves the most often.
 */
static void *transpose_const(struct ir_graph *g, int i)
{
	const struct ir_node *n = &g->nodes[i], *x = &g->nodes[n->in[0]];
	size_t es = type_size(n->shape.type), total = shape_elems(&n->shape);
	int64_t istride[VTPU_MAX_RANK], stride[VTPU_MAX_RANK];
	int64_t dims[VTPU_MAX_RANK], idx[VTPU_MAX_RANK] = { 0 }, off = 1;
	const uint8_t *in = x->a.cst.data;
	int rank = n->shape.rank, d;
	uint8_t *out, *o;
	size_t e;

	for (d = x->shape.rank - 1; d >= 0; d--) {
		istride[d] = off;
		off *= x->shape.dims[d];
	}
	/* output dimension d walks input dimension perm[d] */
	for (d = 0; d < rank; d++) {
		stride[d] = istride[n->a.transpose.perm[d]];
		dims[d] = n->shape.dims[d];
	}
	/* last: ir_alloc() may move the nodes */
	out = ir_alloc(g, total * es);
	if (!out)
		return NULL;
	if (rank == 2 && stride[1] != 1) {
		/* [r, c] from [c, r] in blocks: each input line read once */
		int64_t r0, c0, r, c;

		for (r0 = 0; r0 < dims[0]; r0 += 64)
			for (c0 = 0; c0 < dims[1]; c0 += 64)
				for (r = r0; r < r0 + 64 && r < dims[0]; r++)
					for (c = c0; c < c0 + 64 && c < dims[1]; c++)
						memcpy(out + (r * dims[1] + c) * es,
						       in + (c * dims[0] + r) * es, es);
		return out;
	}
	off = 0;
	for (e = 0, o = out; e < total; e++, o += es) {
		memcpy(o, in + off * es, es);
		for (d = rank - 1; d >= 0; d--) {
			off += stride[d];
			if (++idx[d] < dims[d])
				break;
			off -= stride[d] * dims[d];
			idx[d] = 0;
		}
	}
	return out;
}

/* Turns node @i into a constant of @data, @g's memory. */
static void set_const(struct ir_graph *g, int i, void *data)
{
	struct ir_node *n = &g->nodes[i];

	n->op = OP_CONST;
	n->nin = 0;
	n->in = NULL;
	/* zero the union: cse.c and cache.c read attribute bytes */
	memset(&n->a, 0, sizeof(n->a));
	n->a.cst.data = data;
}

/* Turns node @i into a constant holding @data (copied into @g). */
static int make_const(struct ir_graph *g, int i, const void *data)
{
	const struct ir_node *n = &g->nodes[i];
	size_t bytes = shape_elems(&n->shape) * type_size(n->shape.type);
	void *copy = ir_alloc(g, bytes);

	if (!copy)
		return ir_error(g, ENOMEM, "out of memory");
	memcpy(copy, data, bytes);
	set_const(g, i, copy);
	return 0;
}

int pass_fold(struct ir_graph *g)
{
	void *out[1];
	int i, ret;

	if (g->errcode)
		return -g->errcode;
	for (i = 0; i < g->n; i++) {
		if (!foldable(g, &g->nodes[i]))
			continue;
		if (shape_elems(&g->nodes[i].shape) > FOLD_MAX_MOVE) {
			void *t = transpose_const(g, i);

			if (!t)
				return ir_error(g, ENOMEM, "out of memory");
			set_const(g, i, t);
			continue;
		}
		out[0] = NULL;
		/* An op the evaluator cannot do stays for the device. */
		if (eval_node(g, &g->nodes[i], out))
			continue;
		ret = make_const(g, i, out[0]);
		free(out[0]);
		if (ret)
			return ret;
	}
	return ir_compact(g);
}
