// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * grad.c - reverse-mode differentiation on the graph IR: the derivatives
 * of sum(y) with respect to some earlier values, built as more nodes of
 * the same graph (ONNX's Gradient operator; a training step's backward
 * pass). Nodes are in topological order, so one walk from y down to the
 * first x visits each node after every node that uses it: its adjoint
 * (d sum(y) / d node) is complete when it is reached, and is pushed to
 * its operands by the op's rule below. Only nodes on a path from an x
 * to y get adjoints; a value y does not depend on gets zeros.
 *
 * The rules cover the ops real losses are built from: elementwise
 * arithmetic and functions, MAX/MIN/SELECT (the chosen operand), CONVERT,
 * BROADCAST, RESHAPE, TRANSPOSE, REDUCE sum and mean, and 2-D/batched
 * DOT as matmul. Anything else on the path is -EOPNOTSUPP, naming the op.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

struct grad {
	struct vtpu_graph *g;
	int *adj;	/* node id -> its adjoint's id, or -1 */
	bool *live;	/* on a path from an x to y */
};

static struct ir_node *node(struct grad *d, int id)
{
	return &d->g->ir.nodes[id];
}

/* A constant @x of node @like's shape. */
static int splat(struct grad *d, double x, int like)
{
	struct vtpu_shape s = node(d, like)->shape;
	int dims[VTPU_MAX_RANK], v = vtpu_g_scalar(d->g, (float)x);

	if (v >= 0 && s.type != VTPU_F32)
		v = vtpu_g_convert(d->g, v, s.type);
	return v < 0 ? v : vtpu_g_broadcast(d->g, v, s.rank, s.dims, dims);
}

/* Adds @v to the adjoint of @id. */
static int push(struct grad *d, int id, int v)
{
	if (v < 0)
		return v;
	if (!d->live[id])
		return 0;
	d->adj[id] = d->adj[id] < 0 ? v :
		     vtpu_g_binary(d->g, VTPU_ADD, d->adj[id], v);
	return d->adj[id] < 0 ? d->adj[id] : 0;
}

static int mul(struct grad *d, int a, int b)
{
	return a < 0 || b < 0 ? -EINVAL : vtpu_g_binary(d->g, VTPU_MUL, a, b);
}

static int divide(struct grad *d, int a, int b)
{
	return a < 0 || b < 0 ? -EINVAL : vtpu_g_binary(d->g, VTPU_DIV, a, b);
}

/* @ga where @pred holds, 0 elsewhere. */
static int where(struct grad *d, int pred, int ga)
{
	return pred < 0 ? pred : vtpu_g_select(d->g, pred, ga, splat(d, 0, ga));
}

/* The adjoint of a broadcast's operand: sum over what was broadcast. */
static int unbroadcast(struct grad *d, const struct ir_node *n, int ga)
{
	const struct vtpu_shape *x = &node(d, n->in[0])->shape;
	int axes[VTPU_MAX_RANK], na = 0, i, j = 0;

	for (i = 0; i < n->shape.rank; i++) {
		if (j < x->rank && n->a.bcast.dims[j] == i) {
			if (x->dims[j] != n->shape.dims[i])
				axes[na++] = i;	/* size 1 stretched */
			j++;
		} else {
			axes[na++] = i;
		}
	}
	if (na)
		ga = vtpu_g_reduce(d->g, VTPU_REDUCE_SUM_OP, ga, na, axes);
	return ga < 0 ? ga : vtpu_g_reshape(d->g, ga, x->rank, x->dims);
}

/* REDUCE sum or mean: every element gets the adjoint of its sum. */
static int unreduce(struct grad *d, const struct ir_node *n, int ga)
{
	const struct vtpu_shape *x = &node(d, n->in[0])->shape;
	int dims[VTPU_MAX_RANK], i, j = 0;
	double count = 1;

	for (i = 0; i < x->rank; i++) {
		if (n->a.reduce.axes & (1u << i))
			count *= (double)x->dims[i];
		else
			dims[j++] = i;
	}
	ga = vtpu_g_broadcast(d->g, ga, x->rank, x->dims, dims);
	if (n->a.reduce.op == VTPU_REDUCE_MEAN_OP)
		ga = mul(d, ga, splat(d, 1 / count, n->in[0]));
	return ga;
}

/* y = a . b as a (batched) matmul [.., M, K] x [.., K, N]. */
static int is_matmul(const struct ir_graph *ir, const struct ir_node *n)
{
	const struct vtpu_dot_dims *t = &n->a.dot;
	int ra = ir->nodes[n->in[0]].shape.rank;
	int rb = ir->nodes[n->in[1]].shape.rank;
	int i;

	if (ra != rb || ra < 2 || t->nbatch != ra - 2 || t->ncontract != 1 ||
	    t->lhs_contract[0] != ra - 1 || t->rhs_contract[0] != ra - 2)
		return 0;
	for (i = 0; i < t->nbatch; i++)
		if (t->lhs_batch[i] != i || t->rhs_batch[i] != i)
			return 0;
	return 1;
}

/* The last two dims of @v swapped. */
static int swap_last(struct grad *d, int v)
{
	int perm[VTPU_MAX_RANK], r = node(d, v)->shape.rank, i;

	for (i = 0; i < r; i++)
		perm[i] = i;
	perm[r - 2] = r - 1;
	perm[r - 1] = r - 2;
	return vtpu_g_transpose(d->g, v, perm);
}

/* Pushes the adjoint @ga of node @id to its operands. */
static int back(struct grad *d, int id, int ga)
{
	const struct ir_node n = *node(d, id);	/* nodes may move */
	int a = n.nin > 0 ? n.in[0] : -1, b = n.nin > 1 ? n.in[1] : -1;
	int perm[VTPU_MAX_RANK], i, t;

	switch (n.op) {
	case OP_PARAM:
	case OP_CONST:
		return 0;
	case OP_NEG:
		return push(d, a, vtpu_g_unary(d->g, VTPU_NEG, ga));
	case OP_ABS:		/* the sign of a; +1 at 0 */
		t = vtpu_g_compare(d->g, VTPU_GE, a, splat(d, 0, a));
		return push(d, a, t < 0 ? t : vtpu_g_select(d->g, t, ga,
				    vtpu_g_unary(d->g, VTPU_NEG, ga)));
	case OP_EXP:
		return push(d, a, mul(d, ga, id));
	case OP_LOG:
		return push(d, a, divide(d, ga, a));
	case OP_SQRT:		/* 1 / (2 sqrt a) */
		return push(d, a, divide(d, ga, mul(d, splat(d, 2, id), id)));
	case OP_RSQRT:		/* -y / (2 a) */
		return push(d, a, mul(d, ga, divide(d, vtpu_g_unary(d->g, VTPU_NEG, id),
						     mul(d, splat(d, 2, a), a))));
	case OP_TANH:		/* 1 - y^2 */
		return push(d, a, mul(d, ga, vtpu_g_binary(d->g, VTPU_SUB,
							    splat(d, 1, id),
							    mul(d, id, id))));
	case OP_LOGISTIC:	/* y (1 - y) */
		return push(d, a, mul(d, ga, mul(d, id,
						 vtpu_g_binary(d->g, VTPU_SUB,
							       splat(d, 1, id), id))));
	case OP_RELU:
		return push(d, a, where(d, vtpu_g_compare(d->g, VTPU_GT, a,
							  splat(d, 0, a)), ga));
	case OP_CONVERT:
		return push(d, a, vtpu_g_convert(d->g, ga,
						 node(d, a)->shape.type));
	case OP_ADD:
		t = push(d, a, ga);
		return t ? t : push(d, b, ga);
	case OP_SUB:
		t = push(d, a, ga);
		return t ? t : push(d, b, vtpu_g_unary(d->g, VTPU_NEG, ga));
	case OP_MUL:
		t = push(d, a, mul(d, ga, b));
		return t ? t : push(d, b, mul(d, ga, a));
	case OP_DIV:		/* d/db a/b = -y / b */
		t = push(d, a, divide(d, ga, b));
		return t ? t : push(d, b, mul(d, ga, divide(d,
					     vtpu_g_unary(d->g, VTPU_NEG, id), b)));
	case OP_MAX:
	case OP_MIN:		/* the chosen operand; a on ties */
		t = vtpu_g_compare(d->g, n.op == OP_MAX ? VTPU_GE : VTPU_LE,
				   a, b);
		i = push(d, a, where(d, t, ga));
		return i ? i : push(d, b, t < 0 ? t :
				    vtpu_g_select(d->g, t, splat(d, 0, ga), ga));
	case OP_SELECT:
		t = push(d, b, where(d, a, ga));
		return t ? t : push(d, n.in[2], vtpu_g_select(d->g, a,
							      splat(d, 0, ga), ga));
	case OP_BROADCAST:
		return push(d, a, unbroadcast(d, &n, ga));
	case OP_RESHAPE:
		return push(d, a, vtpu_g_reshape(d->g, ga, node(d, a)->shape.rank,
						 node(d, a)->shape.dims));
	case OP_TRANSPOSE:
		for (i = 0; i < n.shape.rank; i++)
			perm[n.a.transpose.perm[i]] = i;
		return push(d, a, vtpu_g_transpose(d->g, ga, perm));
	case OP_REDUCE:
		if (n.a.reduce.op != VTPU_REDUCE_SUM_OP &&
		    n.a.reduce.op != VTPU_REDUCE_MEAN_OP)
			break;
		return push(d, a, unreduce(d, &n, ga));
	case OP_DOT:
		if (!is_matmul(&d->g->ir, &n))
			break;
		/* da = ga . b^T, db = a^T . ga */
		t = push(d, a, vtpu_g_matmul(d->g, ga, swap_last(d, b)));
		return t ? t : push(d, b, vtpu_g_matmul(d->g, swap_last(d, a), ga));
	default:
		break;
	}
	return ir_error(&d->g->ir, EOPNOTSUPP,
			"gradient: no derivative of %s", ir_ops[n.op].name);
}

/**
 * vtpu_g_gradient() - d sum(@y) / d @xs[i], as new values of @g
 * @g: graph
 * @y: the value differentiated (any float shape; its elements are summed)
 * @n: how many values to differentiate by
 * @xs: their ids, each computed before @y
 * @out: receives @n ids, each of its x's shape
 *
 * Return: 0, or -errno with the graph's error set (-EOPNOTSUPP names an
 * op on the way without a derivative here).
 */
int vtpu_g_gradient(struct vtpu_graph *g, int y, int n, const int *xs,
		    int *out)
{
	struct grad d = { .g = g };
	int lo = y, id, i, ret = 0;
	bool *reach;

	if (y < 0 || y >= g->ir.n || n < 1)
		return ir_error(&g->ir, EINVAL, "gradient: bad arguments");
	for (i = 0; i < n; i++) {
		if (xs[i] < 0 || xs[i] > y)
			return ir_error(&g->ir, EINVAL,
					"gradient: value %d is not computed before %d",
					xs[i], y);
		lo = xs[i] < lo ? xs[i] : lo;
	}
	d.adj = malloc(sizeof(*d.adj) * (size_t)(y + 1));
	d.live = calloc((size_t)y + 1, sizeof(*d.live));
	reach = calloc((size_t)y + 1, sizeof(*reach));
	if (!d.adj || !d.live || !reach) {
		ret = ir_error(&g->ir, ENOMEM, "gradient: out of memory");
		goto out;
	}
	/* Forward from the xs, then back from y: the nodes in between. */
	for (i = 0; i < n; i++)
		reach[xs[i]] = true;
	for (id = lo; id <= y; id++)
		for (i = 0; i < g->ir.nodes[id].nin && !reach[id]; i++)
			reach[id] = reach[g->ir.nodes[id].in[i]];
	d.live[y] = reach[y];
	for (id = y; id >= lo; id--) {
		d.adj[id] = -1;
		for (i = 0; d.live[id] && i < g->ir.nodes[id].nin; i++)
			if (reach[g->ir.nodes[id].in[i]])
				d.live[g->ir.nodes[id].in[i]] = true;
	}
	d.adj[y] = d.live[y] ? splat(&d, 1, y) : -1;
	for (id = y; id > lo && ret >= 0; id--) {
		if (d.live[id] && d.adj[id] >= 0)
			ret = back(&d, id, d.adj[id]);
	}
	for (i = 0; i < n && ret >= 0; i++) {
		out[i] = d.adj[xs[i]] >= 0 ? d.adj[xs[i]] : splat(&d, 0, xs[i]);
		ret = out[i] < 0 ? out[i] : 0;
	}
out:
	free(reach);
	free(d.live);
	free(d.adj);
	return ret < 0 ? ret : 0;
}
