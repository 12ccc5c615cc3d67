// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * builder.c - the public graph builder (vtpu_g_*). Each call fills in a
 * node's attributes and lets ir_infer() decide its shape, so the builder
 * and the verifier can never disagree on the rules.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

struct vtpu_graph *vtpu_graph_new(void)
{
	return calloc(1, sizeof(struct vtpu_graph));
}

void vtpu_graph_free(struct vtpu_graph *g)
{
	if (!g)
		return;
	ir_free(&g->ir);
	free(g);
}

const char *vtpu_graph_error(const struct vtpu_graph *g)
{
	return g->ir.errcode ? g->ir.err : NULL;
}

int vtpu_graph_shape(const struct vtpu_graph *g, int v, struct vtpu_shape *out)
{
	if (v < 0 || v >= g->ir.n)
		return -EINVAL;
	*out = g->ir.nodes[v].shape;
	return 0;
}

/*
 * Appends a node of @op on @in with attributes @attr (copied into the
 * node's union) and the shape ir_infer() gives it; @hint supplies what
 * the rules take from the caller (a result shape, a target type).
 */
static int build(struct ir_graph *g, enum ir_op op, int nin, const int *in,
		 const void *attr, size_t attr_size,
		 const struct vtpu_shape *hint)
{
	struct vtpu_shape s = { 0 };
	int id, ret;

	if (g->errcode)
		return -g->errcode;
	if (hint)
		s = *hint;
	id = ir_add(g, op, &s, nin, in);
	if (id < 0)
		return id;
	if (attr_size)
		memcpy(&g->nodes[id].a, attr, attr_size);
	ret = ir_infer(g, &g->nodes[id], &s);
	if (ret) {
		g->n--;		/* drop the half-built node */
		return ret;
	}
	g->nodes[id].shape = s;
	return id;
}

int vtpu_g_parameter(struct vtpu_graph *gr, int index,
		     const struct vtpu_shape *shape, const char *name)
{
	struct ir_graph *g = &gr->ir;
	int id;

	if (g->errcode)
		return -g->errcode;
	if (index != g->nparams)
		return ir_error(g, EINVAL, "parameter %d declared where %d comes next",
				index, g->nparams);
	id = build(g, OP_PARAM, 0, NULL, &index, sizeof(index), shape);
	if (id < 0)
		return id;
	if (name) {
		char *copy = ir_alloc(g, strlen(name) + 1);

		if (!copy)
			return ir_error(g, ENOMEM, "out of memory");
		strcpy(copy, name);
		g->nodes[id].name = copy;
	}
	g->nparams++;
	return id;
}

int vtpu_g_constant(struct vtpu_graph *gr, const struct vtpu_shape *shape,
		    const void *data)
{
	struct ir_graph *g = &gr->ir;
	size_t bytes;
	void *copy;
	int id;

	id = build(g, OP_CONST, 0, NULL, NULL, 0, shape);
	if (id < 0)
		return id;
	bytes = shape_elems(shape) * type_size(shape->type);
	copy = ir_alloc(g, bytes);
	if (!copy)
		return ir_error(g, ENOMEM, "out of memory");
	memcpy(copy, data, bytes);
	g->nodes[id].a.cst.data = copy;
	return id;
}

int vtpu_g_scalar(struct vtpu_graph *g, float value)
{
	struct vtpu_shape s = { .type = VTPU_F32, .rank = 0 };

	return vtpu_g_constant(g, &s, &value);
}

int vtpu_g_unary(struct vtpu_graph *gr, enum vtpu_unary_op op, int a)
{
	static const enum ir_op map[] = {
		[VTPU_NEG] = OP_NEG, [VTPU_ABS] = OP_ABS, [VTPU_EXP] = OP_EXP,
		[VTPU_LOG] = OP_LOG, [VTPU_SQRT] = OP_SQRT,
		[VTPU_RSQRT] = OP_RSQRT, [VTPU_TANH] = OP_TANH,
		[VTPU_LOGISTIC] = OP_LOGISTIC, [VTPU_RELU] = OP_RELU,
		[VTPU_GELU] = OP_GELU,
	};

	if ((unsigned int)op >= sizeof(map) / sizeof(map[0]))
		return ir_error(&gr->ir, EINVAL, "unknown unary op %d", op);
	return build(&gr->ir, map[op], 1, &a, NULL, 0, NULL);
}

int vtpu_g_binary(struct vtpu_graph *gr, enum vtpu_binary_op op, int a, int b)
{
	static const enum ir_op map[] = {
		[VTPU_ADD] = OP_ADD, [VTPU_SUB] = OP_SUB, [VTPU_MUL] = OP_MUL,
		[VTPU_DIV] = OP_DIV, [VTPU_MAX] = OP_MAX, [VTPU_MIN] = OP_MIN,
		[VTPU_POW] = OP_POW,
	};
	int in[2] = { a, b };

	if ((unsigned int)op >= sizeof(map) / sizeof(map[0]))
		return ir_error(&gr->ir, EINVAL, "unknown binary op %d", op);
	return build(&gr->ir, map[op], 2, in, NULL, 0, NULL);
}

int vtpu_g_compare(struct vtpu_graph *gr, enum vtpu_cmp_dir dir, int a, int b)
{
	int in[2] = { a, b };

	if ((unsigned int)dir > VTPU_GE)
		return ir_error(&gr->ir, EINVAL, "unknown comparison %d", dir);
	return build(&gr->ir, OP_COMPARE, 2, in, &dir, sizeof(dir), NULL);
}

int vtpu_g_select(struct vtpu_graph *gr, int pred, int a, int b)
{
	int in[3] = { pred, a, b };

	return build(&gr->ir, OP_SELECT, 3, in, NULL, 0, NULL);
}

int vtpu_g_broadcast(struct vtpu_graph *gr, int a, int rank,
		     const int64_t *out_dims, const int *dims)
{
	struct ir_graph *g = &gr->ir;
	struct vtpu_shape s = { .rank = rank };
	int bdims[VTPU_MAX_RANK] = { 0 };
	struct vtpu_shape in;

	if (rank < 0 || rank > VTPU_MAX_RANK || vtpu_graph_shape(gr, a, &in))
		return ir_error(g, EINVAL, "broadcast: bad operand or rank");
	if (rank)
		memcpy(s.dims, out_dims, rank * sizeof(int64_t));
	if (in.rank)
		memcpy(bdims, dims, in.rank * sizeof(int));
	return build(g, OP_BROADCAST, 1, &a, bdims, sizeof(bdims), &s);
}

int vtpu_g_reshape(struct vtpu_graph *gr, int a, int rank, const int64_t *dims)
{
	struct vtpu_shape s = { .rank = rank };
	int i;

	if (rank < 0 || rank > VTPU_MAX_RANK)
		return ir_error(&gr->ir, EINVAL, "reshape: rank %d out of 0..%d",
				rank, VTPU_MAX_RANK);
	if (rank)
		memcpy(s.dims, dims, rank * sizeof(int64_t));
	for (i = 0; i < rank; i++)
		if (dims[i] < 1)
			return ir_error(&gr->ir, EINVAL, "reshape: dimension %d is %lld",
					i, (long long)dims[i]);
	return build(&gr->ir, OP_RESHAPE, 1, &a, NULL, 0, &s);
}

int vtpu_g_transpose(struct vtpu_graph *gr, int a, const int *perm)
{
	int p[VTPU_MAX_RANK] = { 0 };
	struct vtpu_shape in;

	if (vtpu_graph_shape(gr, a, &in))
		return ir_error(&gr->ir, EINVAL, "transpose: bad operand");
	if (in.rank)
		memcpy(p, perm, in.rank * sizeof(int));
	return build(&gr->ir, OP_TRANSPOSE, 1, &a, p, sizeof(p), NULL);
}

int vtpu_g_dot(struct vtpu_graph *gr, int lhs, int rhs,
	       const struct vtpu_dot_dims *dims)
{
	int in[2] = { lhs, rhs };

	return build(&gr->ir, OP_DOT, 2, in, dims, sizeof(*dims), NULL);
}

int vtpu_g_matmul(struct vtpu_graph *gr, int lhs, int rhs)
{
	struct vtpu_dot_dims d = { 0 };
	struct vtpu_shape l;

	if (vtpu_graph_shape(gr, lhs, &l) || (l.rank != 2 && l.rank != 3))
		return ir_error(&gr->ir, EINVAL, "matmul: wants rank-2 or rank-3 operands");
	d.ncontract = 1;
	d.lhs_contract[0] = l.rank - 1;
	d.rhs_contract[0] = l.rank - 2;
	if (l.rank == 3) {
		d.nbatch = 1;
		d.lhs_batch[0] = 0;
		d.rhs_batch[0] = 0;
	}
	return vtpu_g_dot(gr, lhs, rhs, &d);
}

int vtpu_g_conv2d(struct vtpu_graph *gr, int input, int kernel,
		  const struct vtpu_conv_params *p)
{
	int in[2] = { input, kernel };

	return build(&gr->ir, OP_CONV, 2, in, p, sizeof(*p), NULL);
}

int vtpu_g_reduce(struct vtpu_graph *gr, enum vtpu_reduce_op op, int a,
		  int naxes, const int *axes)
{
	struct ir_graph *g = &gr->ir;
	struct { enum vtpu_reduce_op op; uint32_t axes; } r = { op, 0 };
	int i;

	if ((unsigned int)op > VTPU_REDUCE_MEAN_OP)
		return ir_error(g, EINVAL, "reduce: unknown op %d", op);
	for (i = 0; i < naxes; i++) {
		if (axes[i] < 0 || axes[i] >= VTPU_MAX_RANK ||
		    r.axes & (1u << axes[i]))
			return ir_error(g, EINVAL, "reduce: bad or repeated axis %d",
					axes[i]);
		r.axes |= 1u << axes[i];
	}
	return build(g, OP_REDUCE, 1, &a, &r, sizeof(r), NULL);
}

int vtpu_g_softmax(struct vtpu_graph *gr, int a, int axis)
{
	return build(&gr->ir, OP_SOFTMAX, 1, &a, &axis, sizeof(axis), NULL);
}

int vtpu_g_log_softmax(struct vtpu_graph *gr, int a, int axis)
{
	return build(&gr->ir, OP_LOG_SOFTMAX, 1, &a, &axis, sizeof(axis), NULL);
}

int vtpu_g_concat(struct vtpu_graph *gr, int n, const int *vals, int axis)
{
	if (n < 1)
		return ir_error(&gr->ir, EINVAL, "concatenate: no operands");
	return build(&gr->ir, OP_CONCAT, n, vals, &axis, sizeof(axis), NULL);
}

int vtpu_g_slice(struct vtpu_graph *gr, int a, const int64_t *start,
		 const int64_t *limit, const int64_t *strides)
{
	struct ir_node tmp;
	struct vtpu_shape in;
	int i;

	if (vtpu_graph_shape(gr, a, &in))
		return ir_error(&gr->ir, EINVAL, "slice: bad operand");
	memset(&tmp, 0, sizeof(tmp));
	for (i = 0; i < in.rank; i++) {
		tmp.a.slice.start[i] = start[i];
		tmp.a.slice.limit[i] = limit[i];
		tmp.a.slice.stride[i] = strides ? strides[i] : 1;
	}
	return build(&gr->ir, OP_SLICE, 1, &a, &tmp.a.slice,
		     sizeof(tmp.a.slice), NULL);
}

int vtpu_g_gather(struct vtpu_graph *gr, int data, int indices, int axis,
		  bool wrap)
{
	struct ir_graph *g = &gr->ir;
	struct vtpu_shape x, is;
	int64_t avb[3], k, t[VTPU_MAX_RANK];
	int i, rank = 0, y;

	if (vtpu_graph_shape(gr, data, &x) || vtpu_graph_shape(gr, indices, &is))
		return ir_error(g, EINVAL, "gather: bad operand");
	if (axis < 0 || axis >= x.rank)
		return ir_error(g, EINVAL, "gather: axis %d of a rank %d value",
				axis, x.rank);
	if (is.type != VTPU_S32)
		return ir_error(g, EINVAL, "gather: indices must be s32");
	if (x.rank - 1 + is.rank > VTPU_MAX_RANK)
		return ir_error(g, EINVAL, "gather: the result's rank exceeds %d",
				VTPU_MAX_RANK);
	/* data as [A, V, B] around the axis, the indices as [K] */
	avb[0] = 1;
	avb[1] = x.dims[axis];
	avb[2] = 1;
	for (i = 0; i < axis; i++)
		avb[0] *= x.dims[i];
	for (i = axis + 1; i < x.rank; i++)
		avb[2] *= x.dims[i];
	k = shape_elems(&is);
	data = vtpu_g_reshape(gr, data, 3, avb);
	indices = vtpu_g_reshape(gr, indices, 1, &k);
	if (data < 0 || indices < 0)
		return -g->errcode;
	y = build(g, OP_GATHER, 2, (int[2]){ data, indices }, &wrap,
		  sizeof(wrap), NULL);
	if (y < 0)
		return y;
	/* [A, K, B] as dims[:axis] + the indices' dims + dims[axis + 1:] */
	for (i = 0; i < axis; i++)
		t[rank++] = x.dims[i];
	for (i = 0; i < is.rank; i++)
		t[rank++] = is.dims[i];
	for (i = axis + 1; i < x.rank; i++)
		t[rank++] = x.dims[i];
	return vtpu_g_reshape(gr, y, rank, t);
}

int vtpu_g_pad(struct vtpu_graph *gr, int a, const int64_t *lo,
	       const int64_t *hi, double pad_value)
{
	struct ir_node tmp;
	struct vtpu_shape in;
	int i;

	if (vtpu_graph_shape(gr, a, &in))
		return ir_error(&gr->ir, EINVAL, "pad: bad operand");
	memset(&tmp, 0, sizeof(tmp));
	for (i = 0; i < in.rank; i++) {
		tmp.a.pad.lo[i] = lo[i];
		tmp.a.pad.hi[i] = hi[i];
	}
	tmp.a.pad.value = pad_value;
	return build(&gr->ir, OP_PAD, 1, &a, &tmp.a.pad, sizeof(tmp.a.pad),
		     NULL);
}

int vtpu_g_convert(struct vtpu_graph *gr, int a, enum vtpu_type type)
{
	struct vtpu_shape s = { .type = type };

	if (!type_size(type))
		return ir_error(&gr->ir, EINVAL, "convert: unknown type %d", type);
	return build(&gr->ir, OP_CONVERT, 1, &a, NULL, 0, &s);
}

int vtpu_g_outputs(struct vtpu_graph *gr, int n, const int *vals)
{
	struct ir_graph *g = &gr->ir;
	int i, *outs;

	if (g->errcode)
		return -g->errcode;
	if (n < 1)
		return ir_error(g, EINVAL, "a graph needs at least one output");
	for (i = 0; i < n; i++)
		if (vals[i] < 0 || vals[i] >= g->n)
			return ir_error(g, EINVAL, "output %d is not a value", i);
	outs = malloc(n * sizeof(int));
	if (!outs)
		return ir_error(g, ENOMEM, "out of memory");
	memcpy(outs, vals, n * sizeof(int));
	free(g->outputs);
	g->outputs = outs;
	g->nout = n;
	return 0;
}
