// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: reverse-mode derivatives (vtpu_g_gradient, compiler/grad.c)
 * agree with finite differences of the same graph.
 *
 * The oracle is independent of grad.c: the reference evaluator computes
 * the loss at x + h and x - h for every element of every x, and the
 * central difference is compared with the evaluated gradient. Graphs mix
 * every op with a derivative: matmul, broadcasts, elementwise functions,
 * MAX and SELECT, reshape, transpose and reductions.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#include "kselftest_harness.h"

#define SHAPE(t, ...) ((struct vtpu_shape){ .type = (t), \
	.rank = sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), \
	.dims = { __VA_ARGS__ } })

static uint64_t seed = 88172645463325252ull;

static float uniform(float lo, float hi)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return lo + (hi - lo) * (float)(seed >> 40) / (float)(1 << 24);
}

/* Output @k of @g at @params, f32 elements. */
static float *eval_out(struct vtpu_graph *g, float **params, int nout, int k)
{
	void *outs[8] = { NULL };
	int i;

	if (ir_eval(&g->ir, (const void *const *)params, outs))
		return NULL;
	for (i = 0; i < nout; i++)
		if (i != k)
			free(outs[i]);
	return outs[k];
}

/*
 * @g has parameters of @sizes elements and outputs (loss, d loss / d
 * param 0, ...): each gradient element against the central difference.
 */
static int check(struct __test_metadata *_metadata, struct vtpu_graph *g,
		 int np, const int64_t *sizes)
{
	float *p[4], *grad, *up, *down, *loss;
	double atol;
	int k, bad = 0;
	int64_t i;

	for (k = 0; k < np; k++) {
		p[k] = malloc(sizeof(float) * sizes[k]);
		for (i = 0; i < sizes[k]; i++)
			p[k][i] = uniform(-1.5f, 1.5f);
	}
	/* The f32 loss's rounding, divided by 2h, bounds what h can resolve. */
	loss = eval_out(g, p, np + 1, 0);
	if (!loss)
		return -1;
	atol = 3e-5 + 5e-5 * fabs(loss[0]);
	free(loss);
	for (k = 0; k < np; k++) {
		grad = eval_out(g, p, np + 1, k + 1);
		if (!grad)
			return -1;
		for (i = 0; i < sizes[k]; i++) {
			const float h = 1e-2f, x = p[k][i];
			double fd;

			p[k][i] = x + h;
			up = eval_out(g, p, np + 1, 0);
			p[k][i] = x - h;
			down = eval_out(g, p, np + 1, 0);
			p[k][i] = x;
			if (!up || !down)
				return -1;
			fd = ((double)up[0] - down[0]) / (2 * h);
			if (fabs(fd - grad[i]) > atol + 3e-3 * fabs(fd)) {
				if (!bad++)
					TH_LOG("param %d [%lld]: gradient %g, finite difference %g",
					       k, (long long)i, grad[i], fd);
			}
			free(up);
			free(down);
		}
		free(grad);
	}
	for (k = 0; k < np; k++)
		free(p[k]);
	return bad;
}

/*
 * Differentiates @loss by the @np parameters @xs (parameter k is @xs[k]),
 * outputs (loss, gradients), checks them against finite differences and
 * frees @g.
 */
static void differentiate_and_check(struct __test_metadata *_metadata,
				    struct vtpu_graph *g, int loss, int np,
				    const int *xs, const int64_t *sizes)
{
	int outs[4];

	ASSERT_GE(3, np);
	ASSERT_EQ(0, vtpu_g_gradient(g, loss, np, xs, outs + 1))
		TH_LOG("%s", vtpu_graph_error(g));
	outs[0] = loss;
	ASSERT_LE(0, vtpu_g_outputs(g, np + 1, outs));
	ASSERT_EQ(0, ir_verify(&g->ir)) TH_LOG("%s", vtpu_graph_error(g));
	EXPECT_EQ(0, check(_metadata, g, np, sizes));
	vtpu_graph_free(g);
}

/* A two-layer perceptron's loss: mean(sigmoid(tanh(x W1 + b1) W2) * t). */
TEST(mlp_loss_matches_finite_differences)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t sizes[] = { 4 * 5, 5 * 3, 3 };
	int64_t hd[] = { 4, 3 };
	int dims1[] = { 1 };
	int x, w1, w2, b1, h, y, loss, xs[3];

	x = vtpu_g_parameter(g, 0, &SHAPE(VTPU_F32, 4, 5), "x");
	w1 = vtpu_g_parameter(g, 1, &SHAPE(VTPU_F32, 5, 3), "w1");
	b1 = vtpu_g_parameter(g, 2, &SHAPE(VTPU_F32, 3), "b1");
	h = vtpu_g_matmul(g, x, w1);
	h = vtpu_g_binary(g, VTPU_ADD, h, vtpu_g_broadcast(g, b1, 2, hd, dims1));
	h = vtpu_g_unary(g, VTPU_TANH, h);
	/* a transpose, a max with a constant, a select and a reshape */
	h = vtpu_g_transpose(g, h, (int[]){ 1, 0 });
	h = vtpu_g_binary(g, VTPU_MAX, h, vtpu_g_broadcast(g, vtpu_g_scalar(g, -0.3f),
							  2, (int64_t[]){ 3, 4 }, NULL));
	y = vtpu_g_unary(g, VTPU_LOGISTIC, vtpu_g_binary(g, VTPU_MUL, h, h));
	y = vtpu_g_select(g, vtpu_g_compare(g, VTPU_GT, h, y), y,
			  vtpu_g_unary(g, VTPU_EXP, h));
	y = vtpu_g_reshape(g, y, 1, (int64_t[]){ 12 });
	w2 = vtpu_g_reduce(g, VTPU_REDUCE_MEAN_OP, y, 1, (int[]){ 0 });
	loss = vtpu_g_binary(g, VTPU_DIV, w2, vtpu_g_binary(g, VTPU_ADD,
				vtpu_g_scalar(g, 2.0f), vtpu_g_unary(g, VTPU_ABS, w2)));
	xs[0] = x, xs[1] = w1, xs[2] = b1;
	differentiate_and_check(_metadata, g, loss, 3, xs, sizes);
}

/* Rank 3: a product of different operands, a 3-cycle transpose, sums. */
TEST(rank3_product_and_transpose_match_finite_differences)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t sizes[] = { 2 * 3 * 4, 4 };
	float cdata[24];
	int x, w, u, v, c, loss, xs[2], i;

	for (i = 0; i < 24; i++)
		cdata[i] = 0.1f * (float)(i % 7) + 0.05f;	/* > 0: log's domain */
	x = vtpu_g_parameter(g, 0, &SHAPE(VTPU_F32, 2, 3, 4), "x");
	/* size-1 dimensions stretched, not new ones */
	w = vtpu_g_parameter(g, 1, &SHAPE(VTPU_F32, 1, 1, 4), "w");
	u = vtpu_g_binary(g, VTPU_MUL, x, vtpu_g_broadcast(g, w, 3,
				(int64_t[]){ 2, 3, 4 }, (int[]){ 0, 1, 2 }));
	v = vtpu_g_transpose(g, u, (int[]){ 2, 0, 1 });	/* [4, 2, 3] */
	c = vtpu_g_constant(g, &SHAPE(VTPU_F32, 4, 2, 3), cdata);
	v = vtpu_g_binary(g, VTPU_SUB, vtpu_g_binary(g, VTPU_MUL, v, c),
			  vtpu_g_unary(g, VTPU_LOGISTIC, v));
	/* log(1 + v^2) + tanh(v) */
	v = vtpu_g_binary(g, VTPU_ADD, vtpu_g_unary(g, VTPU_TANH, v),
			  vtpu_g_unary(g, VTPU_LOG, vtpu_g_binary(g, VTPU_ADD,
				vtpu_g_binary(g, VTPU_MUL, v, v), c)));
	loss = vtpu_g_reduce(g, VTPU_REDUCE_SUM_OP, v, 3, (int[]){ 0, 1, 2 });
	xs[0] = x, xs[1] = w;
	differentiate_and_check(_metadata, g, loss, 2, xs, sizes);
}

/* A value the loss does not depend on gets zeros, of its shape. */
TEST(unrelated_value_gets_zeros)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int a = vtpu_g_parameter(g, 0, &SHAPE(VTPU_F32, 3), "a");
	int b = vtpu_g_parameter(g, 1, &SHAPE(VTPU_F32, 2, 2), "b");
	int y = vtpu_g_unary(g, VTPU_EXP, a), xs[2] = { a, b }, gr[2];
	float pa[3] = { 0, 1, 2 }, pb[4] = { 1, 2, 3, 4 }, *p[2] = { pa, pb };
	float *db;

	ASSERT_EQ(0, vtpu_g_gradient(g, y, 2, xs, gr));
	ASSERT_LE(0, vtpu_g_outputs(g, 2, gr));
	EXPECT_EQ(2, g->ir.nodes[gr[1]].shape.rank);
	db = eval_out(g, p, 2, 1);
	ASSERT_NE(NULL, db);
	EXPECT_EQ(0.0f, db[0] + db[1] + db[2] + db[3]);
	free(db);
	db = eval_out(g, p, 2, 0);	/* d sum(exp a) / da = exp a */
	ASSERT_NE(NULL, db);
	EXPECT_LT(fabsf(db[2] - expf(2)), 1e-5f);
	free(db);
	vtpu_graph_free(g);
}

/* An op without a derivative here is named, not silently skipped. */
TEST(no_derivative_is_named)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_conv_params cp = { { 1, 1 }, { 0, 0 }, { 0, 0 }, { 1, 1 }, 1 };
	int x = vtpu_g_parameter(g, 0, &SHAPE(VTPU_F32, 1, 1, 3, 3), "x");
	int k = vtpu_g_parameter(g, 1, &SHAPE(VTPU_F32, 1, 1, 2, 2), "k");
	int y = vtpu_g_conv2d(g, x, k, &cp), gr[1];

	EXPECT_EQ(-EOPNOTSUPP, vtpu_g_gradient(g, y, 1, &x, gr));
	EXPECT_NE(NULL, strstr(vtpu_graph_error(g), "CONV"));
	vtpu_graph_free(g);
}

TEST_HARNESS_MAIN
