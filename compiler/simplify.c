// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * simplify.c - algebraic identities that hold bit for bit (up to the
 * sign of a zero), so the pass never changes what a graph computes:
 *
 *   x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1      -> x
 *   neg(neg(x))                                   -> x
 *   reshape(reshape(x))                           -> reshape(x)
 *   reshape or broadcast to x's own shape         -> x
 *   transpose(transpose(x))                       -> one transpose, or x
 *   transpose by the identity permutation         -> x
 *   convert to x's own type                       -> x
 *   a P_COPY whose view is x's own row-major order -> reshape(x)
 *   select(all-true, a, b) -> a, select(all-false, a, b) -> b,
 *   select(p, a, a) -> a
 *
 * x * 0 -> 0 is not among them: NaN * 0 and inf * 0 are NaN. A constant
 * is "all v" when every element equals v, seen through a broadcast of a
 * constant (fold.c leaves large broadcasts alone).
 *
 * One forward walk: a node's operands are remapped to their replacements
 * before the node itself is looked at, so chains collapse in one pass.
 * Replaced nodes become DEAD; ir_compact() drops them and whatever fell
 * out of use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/*
 * Element @i of a constant of type @t, as a double: exact but for s64
 * beyond 2^53, which never rounds to 0 or 1.
 */
static double cst_elem(const void *data, enum vtpu_type t, int64_t i)
{
	uint32_t u;
	float f;

	switch (t) {
	case VTPU_F32:
		return ((const float *)data)[i];
	case VTPU_BF16:
		u = (uint32_t)((const uint16_t *)data)[i] << 16;
		memcpy(&f, &u, sizeof(f));
		return f;
	case VTPU_S32:
		return ((const int32_t *)data)[i];
	case VTPU_S64:
		return (double)((const int64_t *)data)[i];
	case VTPU_PRED:
		return ((const uint8_t *)data)[i] != 0;
	}
	return 0.0 / 0.0;
}

/*
 * True when every element of value @v is @want, looking through a
 * broadcast of a constant (which repeats the constant's elements).
 */
bool ir_all_equal(const struct ir_graph *g, int v, double want)
{
	const struct ir_node *n = &g->nodes[v];
	int64_t i, cnt;

	if (n->op == OP_BROADCAST)
		n = &g->nodes[n->in[0]];
	if (n->op != OP_CONST)
		return false;
	cnt = shape_elems(&n->shape);
	for (i = 0; i < cnt; i++)
		if (cst_elem(n->a.cst.data, n->shape.type, i) != want)
			return false;
	return true;
}

/* x op c -> x when c is all @unit; also c op x for commutative ops. */
static int binary_identity(const struct ir_graph *g, const struct ir_node *n,
			   double unit, bool commutes)
{
	if (ir_all_equal(g, n->in[1], unit))
		return n->in[0];
	if (commutes && ir_all_equal(g, n->in[0], unit))
		return n->in[1];
	return -1;
}

static int simplify_reshape(struct ir_graph *g, struct ir_node *n)
{
	const struct ir_node *x = &g->nodes[n->in[0]];

	/* A reshape only reinterprets row-major order, so two compose. */
	if (x->op == OP_RESHAPE)
		n->in[0] = x->in[0];
	if (shape_eq(&g->nodes[n->in[0]].shape, &n->shape))
		return n->in[0];
	return -1;
}

static bool identity_perm(const int *perm, int rank)
{
	int i;

	for (i = 0; i < rank; i++)
		if (perm[i] != i)
			return false;
	return true;
}

static int simplify_transpose(struct ir_graph *g, struct ir_node *n)
{
	const struct ir_node *x = &g->nodes[n->in[0]];
	int perm[VTPU_MAX_RANK] = { 0 }, i, rank = n->shape.rank;

	if (x->op == OP_TRANSPOSE) {
		/* result dim i = x dim perm[i] = x's input dim xperm[perm[i]] */
		for (i = 0; i < rank; i++)
			perm[i] = x->a.transpose.perm[n->a.transpose.perm[i]];
		memcpy(n->a.transpose.perm, perm, sizeof(perm));
		n->in[0] = x->in[0];
	}
	if (identity_perm(n->a.transpose.perm, rank))
		return n->in[0];
	return -1;
}

static int simplify_select(const struct ir_graph *g, const struct ir_node *n)
{
	if (n->in[1] == n->in[2])
		return n->in[1];
	if (ir_all_equal(g, n->in[0], 1))
		return n->in[1];
	if (ir_all_equal(g, n->in[0], 0))
		return n->in[2];
	return -1;
}

/*
 * Whether P_COPY @n reads its operand's elements in their own order,
 * each once: its view is the row-major one (size-1 dims aside).
 */
static bool copy_is_reshape(const struct ir_graph *g, const struct ir_node *n)
{
	int64_t step;

	return !n->a.view.offset &&
	       shape_elems(&n->shape) == shape_elems(&g->nodes[n->in[0]].shape) &&
	       ir_view_linear(n, 0, n->shape.rank, &step) &&
	       (step == 1 || shape_elems(&n->shape) == 1);
}

/* The value node @n can be replaced by, or -1. May rewrite @n in place. */
static int simplify_node(struct ir_graph *g, struct ir_node *n)
{
	switch (n->op) {
	case OP_ADD:
		return binary_identity(g, n, 0, true);
	case OP_SUB:
		return binary_identity(g, n, 0, false);
	case OP_MUL:
		return binary_identity(g, n, 1, true);
	case OP_DIV:
		return binary_identity(g, n, 1, false);
	case OP_NEG:
		if (g->nodes[n->in[0]].op == OP_NEG)
			return g->nodes[n->in[0]].in[0];
		return -1;
	case OP_CONVERT:
	case OP_BROADCAST:
		/* a broadcast to the same shape has identity dims */
		return shape_eq(&g->nodes[n->in[0]].shape, &n->shape) ?
		       n->in[0] : -1;
	case OP_RESHAPE:
		return simplify_reshape(g, n);
	case OP_TRANSPOSE:
		return simplify_transpose(g, n);
	case OP_SELECT:
		return simplify_select(g, n);
	case OP_P_COPY:
		if (!copy_is_reshape(g, n))
			return -1;
		n->op = OP_RESHAPE;
		memset(&n->a, 0, sizeof(n->a));
		return simplify_reshape(g, n);
	default:
		return -1;
	}
}

int pass_simplify(struct ir_graph *g)
{
	int *repl, i, k, r;

	if (g->errcode)
		return -g->errcode;
	repl = malloc((g->n + 1) * sizeof(int));
	if (!repl)
		return ir_error(g, ENOMEM, "out of memory");
	for (i = 0; i < g->n; i++) {
		struct ir_node *n = &g->nodes[i];

		repl[i] = i;
		for (k = 0; k < n->nin; k++)
			n->in[k] = repl[n->in[k]];
		r = simplify_node(g, n);
		if (r < 0 || r == i)
			continue;
		repl[i] = r;
		n->op = OP_DEAD;
		n->nin = 0;
	}
	for (k = 0; k < g->nout; k++)
		g->outputs[k] = repl[g->outputs[k]];
	free(repl);
	return ir_compact(g);
}
