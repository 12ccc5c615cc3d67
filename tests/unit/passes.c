// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the optimisation passes (simplify, fold, cse, dce) keep
 * what a graph computes while removing what they promise to remove, and
 * pass_fuse() groups nodes into kernels as codegen.c expects.
 *
 * Every rewriting test optimises a clone, checks the verifier accepts it,
 * and evaluates both graphs with the reference evaluator (ir_eval()) on
 * the same inputs: the identities are exact, so the outputs must match
 * bit for bit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

static const struct vtpu_shape f32x8 = { VTPU_F32, 1, { 8 } };
static const int nodims[1];	/* broadcast of a scalar */

/* Inputs for every parameter: small positive floats, no signed zeros. */
static float input[4][64];

static void fill_inputs(void)
{
	int i, k;

	for (k = 0; k < 4; k++)
		for (i = 0; i < 64; i++)
			input[k][i] = 0.25f + 0.125f * ((i * 7 + k * 3) % 13);
}

static struct ir_graph *G(struct vtpu_graph *g)
{
	return &g->ir;
}

static int count_op(const struct ir_graph *g, enum ir_op op)
{
	int i, n = 0;

	for (i = 0; i < g->n; i++)
		n += g->nodes[i].op == op;
	return n;
}

static size_t out_bytes(const struct ir_graph *g, int k)
{
	const struct ir_node *n = &g->nodes[g->outputs[k]];

	return shape_elems(&n->shape) * type_size(n->shape.type);
}

/* 0 when @a and @b give identical outputs on the same inputs. */
static int same_results(const struct ir_graph *a, const struct ir_graph *b)
{
	const void *params[4] = { input[0], input[1], input[2], input[3] };
	void *oa[4] = { 0 }, *ob[4] = { 0 };
	int k, ret = -1;

	if (a->nout != b->nout || a->nout > 4)
		return -1;
	if (ir_eval(a, params, oa) || ir_eval(b, params, ob))
		goto out;
	ret = 0;
	for (k = 0; k < a->nout; k++)
		if (out_bytes(a, k) != out_bytes(b, k) ||
		    memcmp(oa[k], ob[k], out_bytes(a, k)))
			ret = -1;
out:
	for (k = 0; k < 4; k++) {
		free(oa[k]);
		free(ob[k]);
	}
	return ret;
}

/*
 * Runs @pass on a clone of @g; checks the clone verifies and computes
 * what @g does. Returns the clone (free with ir_free_graph()), or NULL.
 */
static struct ir_graph *optimise(struct ir_graph *g, int (*pass)(struct ir_graph *))
{
	struct ir_graph *c = ir_clone(g);

	if (!c)
		return NULL;
	fill_inputs();
	if (pass(c) || ir_verify(c) || same_results(g, c)) {
		vtpu_graph_free((struct vtpu_graph *)c);
		return NULL;
	}
	return c;
}

static void ir_free_graph(struct ir_graph *g)
{
	vtpu_graph_free((struct vtpu_graph *)g);
}

static int constant(struct vtpu_graph *g, const struct vtpu_shape *s, float v)
{
	float data[64];
	int i;

	for (i = 0; i < 64; i++)
		data[i] = v;
	return vtpu_g_constant(g, s, data);
}

/* p <op> c (or c <op> p), c all @v; the graph's one output. */
static struct vtpu_graph *binary_with_const(enum vtpu_binary_op op, float v,
					    bool const_left)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int c = constant(g, &f32x8, v);
	int y = const_left ? vtpu_g_binary(g, op, c, p) : vtpu_g_binary(g, op, p, c);

	vtpu_g_outputs(g, 1, &y);
	return g;
}

/*
 * 1 when simplify reduces the graph to its parameter, 0 when it leaves
 * the op, -1 on any error. Frees @g.
 */
static int simplifies_to_param(struct vtpu_graph *g)
{
	struct ir_graph *c;
	int ret;

	c = vtpu_graph_error(g) ? NULL : optimise(G(g), pass_simplify);
	ret = c ? c->nodes[c->outputs[0]].op == OP_PARAM : -1;
	ir_free_graph(c);
	vtpu_graph_free(g);
	return ret;
}

TEST(simplify_add_zero_both_sides)
{
	ASSERT_EQ(1, simplifies_to_param(binary_with_const(VTPU_ADD, 0, false)));
	ASSERT_EQ(1, simplifies_to_param(binary_with_const(VTPU_ADD, 0, true)));
}

TEST(simplify_sub_zero_only_on_the_right)
{
	ASSERT_EQ(1, simplifies_to_param(binary_with_const(VTPU_SUB, 0, false)));
	ASSERT_EQ(0, simplifies_to_param(binary_with_const(VTPU_SUB, 0, true)));
}

TEST(simplify_mul_one_both_sides)
{
	ASSERT_EQ(1, simplifies_to_param(binary_with_const(VTPU_MUL, 1, false)));
	ASSERT_EQ(1, simplifies_to_param(binary_with_const(VTPU_MUL, 1, true)));
}

TEST(simplify_div_one)
{
	ASSERT_EQ(1, simplifies_to_param(binary_with_const(VTPU_DIV, 1, false)));
	ASSERT_EQ(0, simplifies_to_param(binary_with_const(VTPU_DIV, 1, true)));
}

TEST(simplify_keeps_mul_zero_and_add_one)
{
	/* NaN * 0 is NaN: not an identity */
	ASSERT_EQ(0, simplifies_to_param(binary_with_const(VTPU_MUL, 0, false)));
	ASSERT_EQ(0, simplifies_to_param(binary_with_const(VTPU_ADD, 1, false)));
}

TEST(simplify_add_broadcast_scalar_zero)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t d[1] = { 8 };
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int z = vtpu_g_scalar(g, 0.0f);
	int b = vtpu_g_broadcast(g, z, 1, d, nodims);
	int y = vtpu_g_binary(g, VTPU_ADD, p, b);

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(1, simplifies_to_param(g));
}

TEST(simplify_neg_neg)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int y = vtpu_g_unary(g, VTPU_NEG, vtpu_g_unary(g, VTPU_NEG, p));

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(1, simplifies_to_param(g));
}

TEST(simplify_convert_to_same_type)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int y = vtpu_g_convert(g, p, VTPU_F32);

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(1, simplifies_to_param(g));
}

TEST(simplify_select_constant_pred)
{
	const struct vtpu_shape ps = { VTPU_PRED, 1, { 8 } };
	uint8_t ones[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, zeros[8] = { 0 };
	int i;

	for (i = 0; i < 2; i++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int a = vtpu_g_parameter(g, 0, &f32x8, "a");
		int b = vtpu_g_parameter(g, 1, &f32x8, "b");
		int c = vtpu_g_constant(g, &ps, i ? ones : zeros);
		int y = vtpu_g_select(g, c, a, b);
		struct ir_graph *o;

		vtpu_g_outputs(g, 1, &y);
		o = optimise(G(g), pass_simplify);
		ASSERT_NE(NULL, o);
		ASSERT_EQ(i ? a : b, o->outputs[0]);
		ir_free_graph(o);
		vtpu_graph_free(g);
	}
}

TEST(simplify_reshape_reshape_is_one_reshape)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape s = { VTPU_F32, 2, { 2, 6 } };
	int64_t d1[2] = { 3, 4 }, d2[1] = { 12 };
	int p = vtpu_g_parameter(g, 0, &s, "x");
	int y = vtpu_g_reshape(g, vtpu_g_reshape(g, p, 2, d1), 1, d2);
	struct ir_graph *o;

	vtpu_g_outputs(g, 1, &y);
	o = optimise(G(g), pass_simplify);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(1, count_op(o, OP_RESHAPE));
	ASSERT_EQ(OP_PARAM, o->nodes[o->nodes[o->outputs[0]].in[0]].op);
	ir_free_graph(o);
	vtpu_graph_free(g);
}

TEST(simplify_reshape_back_to_same_shape)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape s = { VTPU_F32, 2, { 2, 6 } };
	int64_t d1[2] = { 3, 4 }, d2[2] = { 2, 6 };
	int p = vtpu_g_parameter(g, 0, &s, "x");
	int y = vtpu_g_reshape(g, vtpu_g_reshape(g, p, 2, d1), 2, d2);

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(1, simplifies_to_param(g));
}

TEST(simplify_transpose_transpose_composes)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape s = { VTPU_F32, 3, { 2, 3, 4 } };
	int perm[3] = { 1, 2, 0 };
	int p = vtpu_g_parameter(g, 0, &s, "x");
	int y = vtpu_g_transpose(g, vtpu_g_transpose(g, p, perm), perm);
	struct ir_graph *o;

	vtpu_g_outputs(g, 1, &y);
	o = optimise(G(g), pass_simplify);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(1, count_op(o, OP_TRANSPOSE));
	ASSERT_EQ(2, o->nodes[o->outputs[0]].a.transpose.perm[0]);
	ir_free_graph(o);
	vtpu_graph_free(g);
}

TEST(simplify_transpose_inverse_is_identity)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape s = { VTPU_F32, 3, { 2, 3, 4 } };
	int perm[3] = { 1, 2, 0 }, inv[3] = { 2, 0, 1 };
	int p = vtpu_g_parameter(g, 0, &s, "x");
	int y = vtpu_g_transpose(g, vtpu_g_transpose(g, p, perm), inv);

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(1, simplifies_to_param(g));
}

TEST(simplify_collapses_a_chain_in_one_pass)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int one = constant(g, &f32x8, 1), zero = constant(g, &f32x8, 0);
	int y = vtpu_g_binary(g, VTPU_ADD, vtpu_g_binary(g, VTPU_MUL, p, one),
			      zero);

	y = vtpu_g_unary(g, VTPU_NEG, vtpu_g_unary(g, VTPU_NEG, y));
	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(1, simplifies_to_param(g));
}

/* ---- fold ------------------------------------------------------------ */

TEST(fold_const_subgraph_into_one_const)
{
	struct vtpu_graph *g = vtpu_graph_new();
	float a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[8] = { 10, 20, 30, 40, 50, 60, 70, 80 };
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int ca = vtpu_g_constant(g, &f32x8, a), cb = vtpu_g_constant(g, &f32x8, b);
	int z = vtpu_g_binary(g, VTPU_MUL, vtpu_g_binary(g, VTPU_ADD, ca, cb), ca);
	int y = vtpu_g_binary(g, VTPU_ADD, p, z);
	const struct ir_node *c;
	struct ir_graph *o;
	int i;

	vtpu_g_outputs(g, 1, &y);
	o = optimise(G(g), pass_fold);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(3, o->n);
	ASSERT_EQ(1, count_op(o, OP_CONST));
	c = &o->nodes[o->nodes[o->outputs[0]].in[1]];
	ASSERT_EQ(OP_CONST, c->op);
	for (i = 0; i < 8; i++)
		ASSERT_EQ((a[i] + b[i]) * a[i], ((const float *)c->a.cst.data)[i]);
	ir_free_graph(o);
	vtpu_graph_free(g);
}

TEST(fold_whole_graph_to_a_const_output)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int c = constant(g, &f32x8, 4);
	int y = vtpu_g_unary(g, VTPU_SQRT, vtpu_g_unary(g, VTPU_NEG, vtpu_g_unary(g, VTPU_NEG, c)));
	struct ir_graph *o;

	vtpu_g_outputs(g, 1, &y);
	o = optimise(G(g), pass_fold);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(1, o->n);
	ASSERT_EQ(OP_CONST, o->nodes[0].op);
	ASSERT_EQ(2.0f, ((const float *)o->nodes[0].a.cst.data)[7]);
	ir_free_graph(o);
	vtpu_graph_free(g);
}

TEST(fold_leaves_large_broadcast_and_params)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t d[2] = { 128, 128 };
	struct vtpu_shape s = { VTPU_F32, 2, { 128, 128 } };
	int p = vtpu_g_parameter(g, 0, &s, "x");
	int b = vtpu_g_broadcast(g, vtpu_g_scalar(g, 3.0f), 2, d, nodims);
	int y = vtpu_g_binary(g, VTPU_MUL, p, b);
	struct ir_graph *o;

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(0, ir_verify(G(g)));
	o = ir_clone(G(g));
	ASSERT_NE(NULL, o);
	ASSERT_EQ(0, pass_fold(o));
	ASSERT_EQ(1, count_op(o, OP_BROADCAST));
	ASSERT_EQ(1, count_op(o, OP_MUL));
	ir_free_graph(o);
	vtpu_graph_free(g);
}

/*
 * A transpose of a constant too big for the evaluator (above 2^24
 * elements): folded by moving elements, the 2-D case in blocks, others
 * by an odometer. Every element is checked against its index formula;
 * s32 data, so a move through a float would show.
 */
static int check_big_transpose(struct __test_metadata *_metadata, int rank,
			       const int64_t *dims, const int *perm)
{
	struct vtpu_shape s = { VTPU_S32, rank, { 0 } };
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t n = 1, i, os[4], idx[4], off;
	const int32_t *t;
	struct ir_graph *o;
	int32_t *data;
	int d, y, bad = 0;

	for (d = 0; d < rank; d++) {
		s.dims[d] = dims[d];
		n *= dims[d];
	}
	data = malloc(n * sizeof(*data));
	if (!data)
		return 1;
	for (i = 0; i < n; i++)
		data[i] = (int32_t)(i * 2654435761u);
	y = vtpu_g_transpose(g, vtpu_g_constant(g, &s, data), perm);
	vtpu_g_outputs(g, 1, &y);
	o = ir_clone(G(g));
	if (!o || pass_fold(o) || o->n != 1 || o->nodes[0].op != OP_CONST) {
		TH_LOG("rank %d: not folded to one constant", rank);
		bad = 1;
		goto out;
	}
	t = o->nodes[0].a.cst.data;
	/*
	 * The other way round from the fold: along the input, each input
	 * dimension moving the output offset by its output stride.
	 */
	for (d = rank - 1, off = 1; d >= 0; d--) {
		os[perm[d]] = off;
		off *= dims[perm[d]];
		idx[d] = 0;
	}
	for (i = 0, off = 0; i < n && !bad; i++) {
		if (t[off] != data[i]) {
			TH_LOG("rank %d: input %lld is not at %lld", rank,
			       (long long)i, (long long)off);
			bad = 1;
		}
		for (d = rank - 1; d >= 0; d--) {
			off += os[d];
			if (++idx[d] < dims[d])
				break;
			off -= os[d] * dims[d];
			idx[d] = 0;
		}
	}
out:
	ir_free_graph(o);
	vtpu_graph_free(g);
	free(data);
	return bad;
}

/*
 * Shapes whose check walks memory in order (the output is read where the
 * input's walk puts it): a square one would be a cache miss an element.
 */
TEST(fold_transposes_a_constant_above_the_evaluators_limit)
{
	static const int64_t wide[2] = { 3, 5592406 }, tall[2] = { 5592406, 3 };
	static const int64_t d3[3] = { 64, 1025, 257 };
	static const int p2[2] = { 1, 0 }, p3[3] = { 1, 0, 2 };

	ASSERT_EQ(0, check_big_transpose(_metadata, 2, wide, p2));
	ASSERT_EQ(0, check_big_transpose(_metadata, 2, tall, p2));
	ASSERT_EQ(0, check_big_transpose(_metadata, 3, d3, p3));
}

/* ---- cse -------------------------------------------------------------- */

TEST(cse_merges_duplicate_subtrees_and_constants)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int c1 = constant(g, &f32x8, 2), c2 = constant(g, &f32x8, 2);
	int a = vtpu_g_unary(g, VTPU_EXP, vtpu_g_binary(g, VTPU_MUL, p, c1));
	int b = vtpu_g_unary(g, VTPU_EXP, vtpu_g_binary(g, VTPU_MUL, p, c2));
	int y = vtpu_g_binary(g, VTPU_ADD, a, b);
	struct ir_graph *o;

	vtpu_g_outputs(g, 1, &y);
	o = optimise(G(g), pass_cse);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(1, count_op(o, OP_CONST));
	ASSERT_EQ(1, count_op(o, OP_MUL));
	ASSERT_EQ(1, count_op(o, OP_EXP));
	ASSERT_EQ(o->nodes[o->outputs[0]].in[0], o->nodes[o->outputs[0]].in[1]);
	ir_free_graph(o);
	vtpu_graph_free(g);
}

TEST(cse_keeps_different_constants)
{
	struct vtpu_graph *g = vtpu_graph_new();
	float a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[8] = { 1, 2, 3, 4, 5, 6, 7, 9 };
	int ca = vtpu_g_constant(g, &f32x8, a), cb = vtpu_g_constant(g, &f32x8, b);
	int y = vtpu_g_binary(g, VTPU_ADD, vtpu_g_unary(g, VTPU_EXP, ca),
			      vtpu_g_unary(g, VTPU_EXP, cb));
	struct ir_graph *o;

	vtpu_g_outputs(g, 1, &y);
	o = optimise(G(g), pass_cse);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(2, count_op(o, OP_CONST));
	ASSERT_EQ(2, count_op(o, OP_EXP));
	ir_free_graph(o);
	vtpu_graph_free(g);
}

TEST(cse_keeps_different_attributes)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t s0[1] = { 0 }, s1[1] = { 1 }, l0[1] = { 4 }, l1[1] = { 5 };
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int q = vtpu_g_parameter(g, 1, &f32x8, "y");
	int lt = vtpu_g_compare(g, VTPU_LT, p, q), gt = vtpu_g_compare(g, VTPU_GT, p, q);
	int a = vtpu_g_slice(g, vtpu_g_select(g, lt, p, q), s0, l0, NULL);
	int b = vtpu_g_slice(g, vtpu_g_select(g, gt, p, q), s0, l0, NULL);
	int c = vtpu_g_slice(g, vtpu_g_select(g, gt, p, q), s1, l1, NULL);
	int y = vtpu_g_binary(g, VTPU_ADD, vtpu_g_binary(g, VTPU_ADD, a, b), c);
	struct ir_graph *o;

	vtpu_g_outputs(g, 1, &y);
	o = optimise(G(g), pass_cse);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(2, count_op(o, OP_COMPARE));
	ASSERT_EQ(2, count_op(o, OP_SELECT));	/* the two gt selects merge */
	ASSERT_EQ(3, count_op(o, OP_SLICE));
	ASSERT_EQ(2, count_op(o, OP_PARAM));
	ir_free_graph(o);
	vtpu_graph_free(g);
}

/* ---- dce -------------------------------------------------------------- */

TEST(dce_removes_dead_nodes_keeps_params)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int q = vtpu_g_parameter(g, 1, &f32x8, "unused");
	int y;
	struct ir_graph *o;

	vtpu_g_unary(g, VTPU_EXP, vtpu_g_unary(g, VTPU_LOG, p));	/* dead */
	y = vtpu_g_unary(g, VTPU_NEG, p);
	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(5, G(g)->n);
	o = optimise(G(g), pass_dce);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(3, o->n);
	ASSERT_EQ(2, count_op(o, OP_PARAM));
	ASSERT_EQ(0, count_op(o, OP_EXP));
	ASSERT_EQ(q, o->nodes[q].a.param.index);
	ir_free_graph(o);
	vtpu_graph_free(g);
}

/* ---- fuse (primitive graphs, built node by node) ------------------------ */

/* Appends a primitive node whose shape follows from @in. */
static int prim(struct ir_graph *g, enum ir_op op, int nin, const int *in)
{
	struct vtpu_shape s = { 0 };
	int id = ir_add(g, op, &s, nin, in);

	if (id < 0 || ir_infer(g, &g->nodes[id], &s))
		return -1;
	g->nodes[id].shape = s;
	return id;
}

static int un(struct ir_graph *g, enum ir_op op, int a)
{
	return prim(g, op, 1, &a);
}

static int bin(struct ir_graph *g, enum ir_op op, int a, int b)
{
	int in[2] = { a, b };

	return prim(g, op, 2, in);
}

static int kern(const struct ir_graph *g, int v)
{
	return g->nodes[v].kernel;
}

TEST(fuse_chain_of_four_is_one_kernel)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int a = un(G(g), OP_EXP, p), b = un(G(g), OP_NEG, a);
	int c = un(G(g), OP_ABS, b), d = un(G(g), OP_TANH, c);

	vtpu_g_outputs(g, 1, &d);
	ASSERT_EQ(0, ir_verify(G(g)));
	ASSERT_EQ(0, pass_fuse(G(g), true));
	ASSERT_EQ(p, kern(G(g), p));
	ASSERT_EQ(d, kern(G(g), a));
	ASSERT_EQ(d, kern(G(g), b));
	ASSERT_EQ(d, kern(G(g), c));
	ASSERT_EQ(d, kern(G(g), d));
	vtpu_graph_free(g);
}

TEST(fuse_stops_at_a_value_with_two_uses)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int e = un(G(g), OP_EXP, un(G(g), OP_LOG, p));
	int a = un(G(g), OP_NEG, e), b = un(G(g), OP_ABS, e);
	int y = bin(G(g), OP_ADD, a, b);

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(0, pass_fuse(G(g), true));
	ASSERT_EQ(e, kern(G(g), e));
	ASSERT_EQ(e, kern(G(g), G(g)->nodes[e].in[0]));	/* log joins exp */
	ASSERT_EQ(y, kern(G(g), a));	/* a tree: both branches join */
	ASSERT_EQ(y, kern(G(g), b));
	vtpu_graph_free(g);
}

/*
 * A value its last reader reads directly, all its readers in one kernel
 * by then (x * sigmoid(x), a matmul's SiLU epilogue), joins them: it
 * never leaves the kernel. Not when a reader is elsewhere or it is an
 * output.
 */
TEST(fuse_takes_a_value_all_of_whose_readers_it_holds)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape sa = { VTPU_F32, 3, { 1, 4, 8 } };
	struct vtpu_shape sb = { VTPU_F32, 3, { 1, 8, 16 } };
	int a = vtpu_g_parameter(g, 0, &sa, "a");
	int b = vtpu_g_parameter(g, 1, &sb, "b");
	int m = bin(G(g), OP_P_MATMUL, a, b);
	int s = un(G(g), OP_LOGISTIC, m), y = bin(G(g), OP_MUL, m, s);
	int x = un(G(g), OP_EXP, y), t = un(G(g), OP_NEG, x);
	int z = bin(G(g), OP_MUL, x, t), w = un(G(g), OP_ABS, x);
	int outs[2] = { z, w };

	vtpu_g_outputs(g, 2, outs);
	ASSERT_EQ(0, pass_fuse(G(g), true));
	/* the matmul leads its SiLU, and exp(y) follows */
	EXPECT_EQ(x, kern(G(g), m));
	EXPECT_EQ(x, kern(G(g), s));
	EXPECT_EQ(x, kern(G(g), y));
	/* x is read by w too, outside z's kernel: it stays a root */
	EXPECT_EQ(x, kern(G(g), x));
	EXPECT_EQ(z, kern(G(g), t));
	EXPECT_EQ(w, kern(G(g), w));
	vtpu_graph_free(g);
}

TEST(fuse_stops_at_an_output)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int a = un(G(g), OP_EXP, p), b = un(G(g), OP_NEG, a);
	int outs[2] = { b, a };

	vtpu_g_outputs(g, 2, outs);
	ASSERT_EQ(0, pass_fuse(G(g), true));
	ASSERT_EQ(a, kern(G(g), a));
	ASSERT_EQ(b, kern(G(g), b));
	vtpu_graph_free(g);
}

static int matmul(struct ir_graph *g, int a, int b)
{
	return bin(g, OP_P_MATMUL, a, b);
}

TEST(fuse_matmul_bias_relu_is_one_kernel)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape sa = { VTPU_F32, 3, { 1, 4, 8 } };
	struct vtpu_shape sb = { VTPU_F32, 3, { 1, 8, 16 } };
	struct vtpu_shape sc = { VTPU_F32, 3, { 1, 4, 16 } };
	int a = vtpu_g_parameter(g, 0, &sa, "a");
	int b = vtpu_g_parameter(g, 1, &sb, "b");
	int bias = vtpu_g_parameter(g, 2, &sc, "bias");
	int mm = matmul(G(g), a, b);
	int y = un(G(g), OP_RELU, bin(G(g), OP_ADD, mm, bias));

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(0, ir_verify(G(g)));
	ASSERT_EQ(0, pass_fuse(G(g), true));
	ASSERT_EQ(y, kern(G(g), mm));
	ASSERT_EQ(y, kern(G(g), y - 1));
	ASSERT_EQ(bias, kern(G(g), bias));
	vtpu_graph_free(g);
}

TEST(fuse_one_matmul_a_kernel)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape s = { VTPU_F32, 3, { 1, 4, 4 } };
	int a = vtpu_g_parameter(g, 0, &s, "a");
	int m1 = matmul(G(g), a, a), m2 = matmul(G(g), a, a);
	int y = bin(G(g), OP_ADD, m1, m2);

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(0, pass_fuse(G(g), true));
	ASSERT_EQ(y, kern(G(g), m1));
	ASSERT_EQ(m2, kern(G(g), m2));
	vtpu_graph_free(g);
}

/*
 * fused.c wants the matmul first in its kernel: an elementwise operand
 * made before the matmul must stay out.
 */
TEST(fuse_matmul_leads_its_kernel)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape s = { VTPU_F32, 3, { 1, 4, 4 } };
	int a = vtpu_g_parameter(g, 0, &s, "a");
	int x = un(G(g), OP_EXP, a);
	int mm = matmul(G(g), a, a);
	int y = bin(G(g), OP_ADD, x, mm);

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(0, pass_fuse(G(g), true));
	ASSERT_EQ(y, kern(G(g), mm));
	ASSERT_EQ(x, kern(G(g), x));
	vtpu_graph_free(g);
}

TEST(fuse_disabled_gives_one_kernel_per_node)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int y = un(G(g), OP_TANH, un(G(g), OP_ABS, un(G(g), OP_EXP, p)));
	int i;

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(0, pass_fuse(G(g), false));
	for (i = 0; i < G(g)->n; i++)
		ASSERT_EQ(i, kern(G(g), i));
	vtpu_graph_free(g);
}

TEST(fuse_never_fuses_params_consts_or_their_reshapes)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t d[2] = { 2, 4 };
	int p = vtpu_g_parameter(g, 0, &f32x8, "x");
	int r = vtpu_g_reshape(g, p, 2, d);
	int c = constant(g, &G(g)->nodes[r].shape, 1);
	int y = un(G(g), OP_NEG, bin(G(g), OP_ADD, r, c));

	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(0, pass_fuse(G(g), true));
	ASSERT_EQ(p, kern(G(g), p));
	ASSERT_EQ(r, kern(G(g), r));
	ASSERT_EQ(c, kern(G(g), c));
	ASSERT_EQ(y, kern(G(g), y - 1));
	vtpu_graph_free(g);
}

/* Lowering reshapes every matmul result: the epilogue fuses through. */
TEST(fuse_through_a_single_use_reshape)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape s = { VTPU_F32, 3, { 1, 2, 4 } };
	int64_t d[2] = { 2, 4 };
	struct vtpu_shape sb = { VTPU_F32, 3, { 1, 4, 4 } };
	int a = vtpu_g_parameter(g, 0, &s, "a");
	int mm = bin(G(g), OP_P_MATMUL, a, vtpu_g_parameter(g, 1, &sb, "b"));
	int r = vtpu_g_reshape(g, mm, 2, d);
	int y = un(G(g), OP_TANH, r);
	int e = un(G(g), OP_EXP, y);
	int r2 = vtpu_g_reshape(g, e, 1, (int64_t[]){ 8 });
	int outs[2] = { r2, un(G(g), OP_NEG, r2) };

	vtpu_g_outputs(g, 2, outs);
	ASSERT_EQ(0, ir_verify(G(g)));
	ASSERT_EQ(0, pass_fuse(G(g), true));
	ASSERT_EQ(e, kern(G(g), mm));
	ASSERT_EQ(e, kern(G(g), r));
	ASSERT_EQ(e, kern(G(g), y));
	ASSERT_EQ(r2, kern(G(g), r2));	/* two uses: an output and neg */
	ASSERT_EQ(outs[1], kern(G(g), outs[1]));
	vtpu_graph_free(g);
}

TEST_HARNESS_MAIN
