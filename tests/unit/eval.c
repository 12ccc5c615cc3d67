// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the reference evaluator (compiler/eval.c) computes every op
 * of the IR as XLA defines it.
 *
 * The evaluator is the oracle the compiler's other tests trust, so its
 * own expectations are computed by hand, in the comments next to them,
 * on inputs small enough to check on paper: a 2x3 dot, convolutions with
 * padding, stride, dilation and groups, softmax of [1, 2, 3], and so on.
 * Graphs are built with the public builder; primitive ops with ir_add()
 * and their attributes set directly, as lower.c does.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#include "kselftest_harness.h"

/* A shape from its dims: SHAPE(VTPU_F32, 2, 3) is f32[2,3]. */
#define SHAPE(t, ...) ((struct vtpu_shape){ .type = (t), \
	.rank = sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), \
	.dims = { __VA_ARGS__ } })
#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

/* Evaluates @g's single output into @out (@n elements of @size bytes). */
static int eval1(struct vtpu_graph *g, const void *const *params, void *out,
		 size_t n, size_t size)
{
	void *outs[1] = { NULL };
	int ret = ir_eval(&g->ir, params, outs);

	if (!ret) {
		memcpy(out, outs[0], n * size);
		free(outs[0]);
	}
	return ret;
}

/* @got equals @want to a few f32 ulps; NaN matches NaN. */
static int close_to(const float *got, const float *want, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (isnan(want[i]) ? !isnan(got[i]) :
		    fabsf(got[i] - want[i]) > 1e-6f * (1 + fabsf(want[i]))) {
			fprintf(stderr, "# element %zu: got %.9g, want %.9g\n",
				i, got[i], want[i]);
			return 0;
		}
	}
	return 1;
}

static int param(struct vtpu_graph *g, int index, struct vtpu_shape s)
{
	return vtpu_g_parameter(g, index, &s, NULL);
}

static int cst(struct vtpu_graph *g, struct vtpu_shape s, const void *data)
{
	return vtpu_g_constant(g, &s, data);
}

/* A node the builder does not make (primitive ops); attributes set after. */
static int prim(struct vtpu_graph *g, enum ir_op op, struct vtpu_shape s,
		int nin, const int *in)
{
	return ir_add(&g->ir, op, &s, nin, in);
}

FIXTURE(ev)
{
	struct vtpu_graph *g;
};

FIXTURE_SETUP(ev)
{
	self->g = vtpu_graph_new();
	ASSERT_NE(NULL, self->g);
}

FIXTURE_TEARDOWN(ev)
{
	vtpu_graph_free(self->g);
}

/* [[1,2,3],[4,5,6]] . [[7,8],[9,10],[11,12]] = [[58,64],[139,154]] */
static const float mat_a[] = { 1, 2, 3, 4, 5, 6 };
static const float mat_b[] = { 7, 8, 9, 10, 11, 12 };
static const float mat_ab[] = { 58, 64, 139, 154 };

TEST_F(ev, matmul_2x3_by_3x2)
{
	const void *p[] = { mat_a, mat_b };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 3));
	int b = param(self->g, 1, SHAPE(VTPU_F32, 3, 2));
	int c = vtpu_g_matmul(self->g, a, b);
	float out[4];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(0, eval1(self->g, p, out, 4, 4));
	ASSERT_TRUE(close_to(out, mat_ab, 4));
}

/*
 * Batch 0, contracting lhs 2 with rhs 2 (rhs is [B,N,K]):
 * r[b][m][n] = sum_k l[b][m][k] r[b][n][k]
 *   b0: l=[[1,0,2],[0,1,0]] r=[[1,2,3],[4,5,6]] -> [[7,16],[2,5]]
 *   b1: l=[[1,1,1],[2,0,1]] r=[[1,0,1],[0,2,0]] -> [[2,2],[3,0]]
 */
TEST_F(ev, dot_general_batch_and_contract_last_dims)
{
	static const float l[] = { 1, 0, 2, 0, 1, 0, 1, 1, 1, 2, 0, 1 };
	static const float r[] = { 1, 2, 3, 4, 5, 6, 1, 0, 1, 0, 2, 0 };
	static const float want[] = { 7, 16, 2, 5, 2, 2, 3, 0 };
	struct vtpu_dot_dims d = { .nbatch = 1, .ncontract = 1,
		.lhs_batch = { 0 }, .rhs_batch = { 0 },
		.lhs_contract = { 2 }, .rhs_contract = { 2 } };
	const void *p[] = { l, r };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 2, 3));
	int b = param(self->g, 1, SHAPE(VTPU_F32, 2, 2, 3));
	int c = vtpu_g_dot(self->g, a, b, &d);
	struct vtpu_shape s;
	float out[8];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(0, vtpu_graph_shape(self->g, c, &s));
	ASSERT_EQ(3, s.rank);
	ASSERT_EQ(0, eval1(self->g, p, out, 8, 4));
	ASSERT_TRUE(close_to(out, want, 8));
}

/* l [3,2] contracting dim 0 with r [3]: [[1,2],[3,4],[5,6]]^T . [1,1,1] = [9,12] */
TEST_F(ev, dot_general_contracts_leading_dim)
{
	static const float l[] = { 1, 2, 3, 4, 5, 6 };
	static const float r[] = { 1, 1, 1 };
	static const float want[] = { 9, 12 };
	struct vtpu_dot_dims d = { .ncontract = 1, .lhs_contract = { 0 },
				   .rhs_contract = { 0 } };
	const void *p[] = { l, r };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 3, 2));
	int b = param(self->g, 1, SHAPE(VTPU_F32, 3));
	int c = vtpu_g_dot(self->g, a, b, &d);
	float out[2];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(0, eval1(self->g, p, out, 2, 4));
	ASSERT_TRUE(close_to(out, want, 2));
}

/*
 * x[h][w] = 4h + w + 1 (4x4), ones 2x2 kernel, pad 1, stride 2: output
 * 3x3, window rows {2oh-1, 2oh}, columns {2ow-1, 2ow}, clipped:
 *   [ 1      2+3          4    ]   [ 1  5  4]
 *   [ 5+9    6+7+10+11    8+12 ] = [14 34 20]
 *   [13      14+15        16   ]   [13 29 16]
 */
static const float conv_x[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				  13, 14, 15, 16 };

TEST_F(ev, conv_pads_and_strides)
{
	static const float k[] = { 1, 1, 1, 1 };
	static const float want[] = { 1, 5, 4, 14, 34, 20, 13, 29, 16 };
	struct vtpu_conv_params cp = { .stride = { 2, 2 }, .pad_lo = { 1, 1 },
		.pad_hi = { 1, 1 }, .dilation = { 1, 1 }, .groups = 1 };
	const void *p[] = { conv_x, k };
	int x = param(self->g, 0, SHAPE(VTPU_F32, 1, 1, 4, 4));
	int w = param(self->g, 1, SHAPE(VTPU_F32, 1, 1, 2, 2));
	int c = vtpu_g_conv2d(self->g, x, w, &cp);
	float out[9];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(0, eval1(self->g, p, out, 9, 4));
	ASSERT_TRUE(close_to(out, want, 9));
}

/* Kernel [[1,0],[0,1]] dilated by 2: out[i][j] = x[i][j] + x[i+2][j+2]. */
TEST_F(ev, conv_dilates)
{
	static const float k[] = { 1, 0, 0, 1 };
	static const float want[] = { 1 + 11, 2 + 12, 5 + 15, 6 + 16 };
	struct vtpu_conv_params cp = { .stride = { 1, 1 },
		.dilation = { 2, 2 }, .groups = 1 };
	const void *p[] = { conv_x, k };
	int x = param(self->g, 0, SHAPE(VTPU_F32, 1, 1, 4, 4));
	int w = param(self->g, 1, SHAPE(VTPU_F32, 1, 1, 2, 2));
	int c = vtpu_g_conv2d(self->g, x, w, &cp);
	float out[4];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(0, eval1(self->g, p, out, 4, 4));
	ASSERT_TRUE(close_to(out, want, 4));
}

/*
 * Two groups, two output channels each, 1x1 kernels [1,2,3,4]: outputs
 * 0 and 1 see input channel 0 only, outputs 2 and 3 channel 1 only.
 */
TEST_F(ev, conv_groups_split_channels)
{
	static const float x[] = { 1, 2, 3, 4, 10, 20, 30, 40 };
	static const float k[] = { 1, 2, 3, 4 };
	static const float want[] = { 1, 2, 3, 4, 2, 4, 6, 8,
				      30, 60, 90, 120, 40, 80, 120, 160 };
	struct vtpu_conv_params cp = { .stride = { 1, 1 },
		.dilation = { 1, 1 }, .groups = 2 };
	const void *p[] = { x, k };
	int xi = param(self->g, 0, SHAPE(VTPU_F32, 1, 2, 2, 2));
	int w = param(self->g, 1, SHAPE(VTPU_F32, 4, 1, 1, 1));
	int c = vtpu_g_conv2d(self->g, xi, w, &cp);
	float out[16];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(0, eval1(self->g, p, out, 16, 4));
	ASSERT_TRUE(close_to(out, want, 16));
}

/* Batches [1,2] and [3,4] against kernel [10,100]: 210 and 430. */
TEST_F(ev, conv_sums_channels_per_batch)
{
	static const float x[] = { 1, 2, 3, 4 };
	static const float k[] = { 10, 100 };
	static const float want[] = { 210, 430 };
	struct vtpu_conv_params cp = { .stride = { 1, 1 },
		.dilation = { 1, 1 }, .groups = 1 };
	const void *p[] = { x, k };
	int xi = param(self->g, 0, SHAPE(VTPU_F32, 2, 2, 1, 1));
	int w = param(self->g, 1, SHAPE(VTPU_F32, 1, 2, 1, 1));
	int c = vtpu_g_conv2d(self->g, xi, w, &cp);
	float out[2];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(0, eval1(self->g, p, out, 2, 4));
	ASSERT_TRUE(close_to(out, want, 2));
}

/* e^k / (e + e^2 + e^3) for k = 1, 2, 3; log of it: k - 3.40760596. */
TEST_F(ev, softmax_of_1_2_3)
{
	static const float x[] = { 1, 2, 3 };
	static const float want[] = { 0.0900305732f, 0.244728471f,
				      0.665240956f };
	static const float want_log[] = { -2.40760596f, -1.40760596f,
					  -0.407605964f };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 3));
	int outs[2] = { vtpu_g_softmax(self->g, a, 0),
			vtpu_g_log_softmax(self->g, a, 0) };
	void *o[2];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 2, outs));
	ASSERT_EQ(0, ir_eval(&self->g->ir, p, o));
	EXPECT_TRUE(close_to(o[0], want, 3));
	EXPECT_TRUE(close_to(o[1], want_log, 3));
	free(o[0]);
	free(o[1]);
}

/* Over axis 0 of [[1,0],[3,0]]: columns softmax(1,3) and softmax(0,0). */
TEST_F(ev, softmax_over_leading_axis)
{
	static const float x[] = { 1, 0, 3, 0 };
	static const float want[] = { 0.119202922f, 0.5f, 0.880797078f, 0.5f };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 2));
	int s = vtpu_g_softmax(self->g, a, 0);
	float out[4];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &s));
	ASSERT_EQ(0, eval1(self->g, p, out, 4, 4));
	ASSERT_TRUE(close_to(out, want, 4));
}

/*
 * x[a][b][c] = 6a + 3b + c over [2,2,3], reduced over {0,2}:
 *   b=0: {0,1,2,6,7,8}  sum 24 max 8 min 0 mean 4
 *   b=1: {3,4,5,9,10,11} sum 42 max 11 min 3 mean 7
 */
TEST_F(ev, reduce_over_axes_0_and_2)
{
	static const float want[4][2] = { { 24, 42 }, { 8, 11 }, { 0, 3 },
					  { 4, 7 } };
	static const int axes[] = { 0, 2 };
	float x[12], out[2];
	const void *p[] = { x };
	int a, r, op;

	for (a = 0; a < 12; a++)
		x[a] = a;
	a = param(self->g, 0, SHAPE(VTPU_F32, 2, 2, 3));
	for (op = VTPU_REDUCE_SUM_OP; op <= VTPU_REDUCE_MEAN_OP; op++) {
		r = vtpu_g_reduce(self->g, op, a, 2, axes);
		ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &r));
		ASSERT_EQ(0, eval1(self->g, p, out, 2, 4));
		EXPECT_TRUE(close_to(out, want[op], 2));
	}
}

TEST_F(ev, reduce_max_propagates_nan)
{
	static const float x[] = { 1, NAN, 3 };
	const void *p[] = { x };
	int axes[] = { 0 };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 3));
	int r = vtpu_g_reduce(self->g, VTPU_REDUCE_MAX_OP, a, 1, axes);
	float out;

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &r));
	ASSERT_EQ(0, eval1(self->g, p, &out, 1, 4));
	ASSERT_TRUE(isnan(out));
}

/* 0..11 as [3,4], rows 0:3:2, columns 1:4:2: [[1,3],[9,11]]. */
TEST_F(ev, slice_with_strides)
{
	static const float want[] = { 1, 3, 9, 11 };
	static const int64_t start[] = { 0, 1 }, limit[] = { 3, 4 };
	static const int64_t step[] = { 2, 2 };
	float x[12], out[4];
	const void *p[] = { x };
	int i, a, s;

	for (i = 0; i < 12; i++)
		x[i] = i;
	a = param(self->g, 0, SHAPE(VTPU_F32, 3, 4));
	s = vtpu_g_slice(self->g, a, start, limit, step);
	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &s));
	ASSERT_EQ(0, eval1(self->g, p, out, 4, 4));
	ASSERT_TRUE(close_to(out, want, 4));
}

/* [[1,2]] padded one row above and one column right with 7. */
TEST_F(ev, pad_edges_with_value)
{
	static const float x[] = { 1, 2 };
	static const float want[] = { 7, 7, 7, 1, 2, 7 };
	static const int64_t lo[] = { 1, 0 }, hi[] = { 0, 1 };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 1, 2));
	int r = vtpu_g_pad(self->g, a, lo, hi, 7);
	float out[6];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &r));
	ASSERT_EQ(0, eval1(self->g, p, out, 6, 4));
	ASSERT_TRUE(close_to(out, want, 6));
}

/* [1,2,3] into [2,3] along dimension 1: rows repeat. */
TEST_F(ev, broadcast_in_dim_1)
{
	static const float x[] = { 1, 2, 3 };
	static const float want[] = { 1, 2, 3, 1, 2, 3 };
	static const int64_t dims[] = { 2, 3 };
	static const int bd[] = { 1 };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 3));
	int b = vtpu_g_broadcast(self->g, a, 2, dims, bd);
	float out[6];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &b));
	ASSERT_EQ(0, eval1(self->g, p, out, 6, 4));
	ASSERT_TRUE(close_to(out, want, 6));
}

/* [2,1] [[5],[6]] into [2,3] with dims {0,1}: the size-1 dim stretches. */
TEST_F(ev, broadcast_stretches_size_one_dims)
{
	static const float x[] = { 5, 6 };
	static const float want[] = { 5, 5, 5, 6, 6, 6 };
	static const int64_t dims[] = { 2, 3 };
	static const int bd[] = { 0, 1 };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 1));
	int b = vtpu_g_broadcast(self->g, a, 2, dims, bd);
	float out[6];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &b));
	ASSERT_EQ(0, eval1(self->g, p, out, 6, 4));
	ASSERT_TRUE(close_to(out, want, 6));
}

/* x[a][0][c] = 3a + c, [2,1,3]; perm {1,2,0}: out[0][j][k] = x[k][0][j]. */
TEST_F(ev, transpose_rank3_perm)
{
	static const float x[] = { 0, 1, 2, 3, 4, 5 };
	static const float want[] = { 0, 3, 1, 4, 2, 5 };
	static const int perm[] = { 1, 2, 0 };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 1, 3));
	int t = vtpu_g_transpose(self->g, a, perm);
	struct vtpu_shape s;
	float out[6];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &t));
	ASSERT_EQ(0, vtpu_graph_shape(self->g, t, &s));
	ASSERT_EQ(2, s.dims[2]);
	ASSERT_EQ(0, eval1(self->g, p, out, 6, 4));
	ASSERT_TRUE(close_to(out, want, 6));
}

/* [[1],[2]] ++ [[3,4],[5,6]] along 1; [[1,2]] ++ [[3,4]] along 0. */
TEST_F(ev, concat_along_inner_and_outer_axes)
{
	static const float a[] = { 1, 2 }, b[] = { 3, 4, 5, 6 };
	static const float want1[] = { 1, 3, 4, 2, 5, 6 };
	static const float want0[] = { 1, 2, 3, 4 };
	const void *p[] = { a, b };
	int x = param(self->g, 0, SHAPE(VTPU_F32, 2, 1));
	int y = param(self->g, 1, SHAPE(VTPU_F32, 2, 2));
	int xy[2] = { x, y }, xr, yr, c[2];
	int64_t row[] = { 1, 2 };
	void *o[2];

	xr = vtpu_g_reshape(self->g, x, 2, row);
	yr = vtpu_g_slice(self->g, y, (int64_t[]){ 0, 0 },
			  (int64_t[]){ 1, 2 }, NULL);
	c[0] = vtpu_g_concat(self->g, 2, xy, 1);
	c[1] = vtpu_g_concat(self->g, 2, (int[]){ xr, yr }, 0);
	ASSERT_EQ(0, vtpu_g_outputs(self->g, 2, c));
	ASSERT_EQ(0, ir_eval(&self->g->ir, p, o));
	EXPECT_TRUE(close_to(o[0], want1, 6));
	EXPECT_TRUE(close_to(o[1], want0, 4));
	free(o[0]);
	free(o[1]);
}

/* Elementwise functions at points whose values are known. */
TEST_F(ev, unary_functions)
{
	static const float x[] = { -1, 0, 1, 4 };
	static const struct { enum vtpu_unary_op op; float want[4]; } t[] = {
		{ VTPU_NEG, { 1, -0.f, -1, -4 } },
		{ VTPU_ABS, { 1, 0, 1, 4 } },
		{ VTPU_RELU, { 0, 0, 1, 4 } },
		{ VTPU_SQRT, { NAN, 0, 1, 2 } },
		{ VTPU_RSQRT, { NAN, INFINITY, 1, 0.5f } },
		{ VTPU_EXP, { 0.367879441f, 1, 2.71828183f, 54.5981500f } },
		{ VTPU_LOG, { NAN, -INFINITY, 0, 1.38629436f } },
		{ VTPU_TANH, { -0.761594156f, 0, 0.761594156f, 0.999329300f } },
		{ VTPU_LOGISTIC, { 0.268941421f, 0.5f, 0.731058579f,
				   0.982013790f } },
		/* x Phi(x): Phi(1) = 0.841344746, Phi(4) = 0.999968329 */
		{ VTPU_GELU, { -0.158655254f, 0, 0.841344746f, 3.99987332f } },
	};
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 4)), u;
	float out[4];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		u = vtpu_g_unary(self->g, t[i].op, a);
		ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &u));
		ASSERT_EQ(0, eval1(self->g, p, out, 4, 4));
		EXPECT_TRUE(close_to(out, t[i].want, 4))
			TH_LOG("unary op %d", t[i].op);
	}
}

TEST_F(ev, binary_functions_and_nan)
{
	static const float x[] = { 2, -3, NAN, 1 }, y[] = { 3, 2, 1, NAN };
	static const struct { enum vtpu_binary_op op; float want[4]; } t[] = {
		{ VTPU_ADD, { 5, -1, NAN, NAN } },
		{ VTPU_SUB, { -1, -5, NAN, NAN } },
		{ VTPU_MUL, { 6, -6, NAN, NAN } },
		{ VTPU_DIV, { 2.f / 3, -1.5f, NAN, NAN } },
		{ VTPU_MAX, { 3, 2, NAN, NAN } },
		{ VTPU_MIN, { 2, -3, NAN, NAN } },
		{ VTPU_POW, { 8, 9, NAN, 1 } },
	};
	const void *p[] = { x, y };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 4));
	int b = param(self->g, 1, SHAPE(VTPU_F32, 4)), r;
	float out[4];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		r = vtpu_g_binary(self->g, t[i].op, a, b);
		ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &r));
		ASSERT_EQ(0, eval1(self->g, p, out, 4, 4));
		EXPECT_TRUE(close_to(out, t[i].want, 4))
			TH_LOG("binary op %d", t[i].op);
	}
}

/* [1,2,3] < [2,2,2] is [1,0,0]; selecting x where it holds, else y. */
TEST_F(ev, compare_gives_pred_and_select_picks)
{
	static const float x[] = { 1, 2, 3 }, y[] = { 2, 2, 2 };
	static const float want[] = { 1, 2, 2 };
	const void *p[] = { x, y };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 3));
	int b = param(self->g, 1, SHAPE(VTPU_F32, 3));
	int c = vtpu_g_compare(self->g, VTPU_LT, a, b);
	int outs[2] = { c, vtpu_g_select(self->g, c, a, b) };
	void *o[2];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 2, outs));
	ASSERT_EQ(0, ir_eval(&self->g->ir, p, o));
	EXPECT_EQ(0, memcmp(o[0], "\1\0\0", 3));
	EXPECT_TRUE(close_to(o[1], want, 3));
	free(o[0]);
	free(o[1]);
}

/* f32 -> s32 truncates toward zero, saturates, and sends NaN to 0. */
TEST_F(ev, convert_to_s32_truncates_and_saturates)
{
	static const float x[] = { 1.7f, -1.7f, 3e9f, -3e9f, NAN };
	static const int32_t want[] = { 1, -1, INT32_MAX, INT32_MIN, 0 };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 5));
	int c = vtpu_g_convert(self->g, a, VTPU_S32);
	int32_t out[5];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(0, eval1(self->g, p, out, 5, 4));
	ASSERT_EQ(0, memcmp(out, want, sizeof(want)));
}

/*
 * f32 -> bf16 rounds to nearest even: 1 + 2^-8 is halfway between 1
 * (0x3f80) and 1 + 2^-7 (0x3f81) and goes to the even 0x3f80; 1 + 3*2^-8
 * is halfway between 0x3f81 and 0x3f82 and goes to 0x3f82.
 */
TEST_F(ev, convert_to_bf16_rounds_to_even)
{
	static const float x[] = { 1.00390625f, 1.01171875f, -2 };
	static const uint16_t want[] = { 0x3f80, 0x3f82, 0xc000 };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 3));
	int c = vtpu_g_convert(self->g, a, VTPU_BF16);
	uint16_t out[3];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(0, eval1(self->g, p, out, 3, 2));
	ASSERT_EQ(0, memcmp(out, want, sizeof(want)));
}

/* bf16 0x3fc0 is 1.5, exactly; pred bytes are 0 or 1; s32 adds exactly. */
TEST_F(ev, loads_bf16_pred_and_s32)
{
	static const uint16_t h[] = { 0x3fc0, 0xbf80 };
	static const uint8_t pr[] = { 1, 0 };
	static const int32_t s[] = { 2000000000, -7 };
	static const float want_h[] = { 1.5f, -1 }, want_p[] = { 1, 0 };
	static const int32_t want_s[] = { INT32_MAX, -14 };
	const void *p[] = { h, pr, s };
	int a = param(self->g, 0, SHAPE(VTPU_BF16, 2));
	int b = param(self->g, 1, SHAPE(VTPU_PRED, 2));
	int c = param(self->g, 2, SHAPE(VTPU_S32, 2));
	int outs[3] = { vtpu_g_convert(self->g, a, VTPU_F32),
			vtpu_g_convert(self->g, b, VTPU_F32),
			vtpu_g_binary(self->g, VTPU_ADD, c, c) };
	void *o[3];
	int i;

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 3, outs));
	ASSERT_EQ(0, ir_eval(&self->g->ir, p, o));
	EXPECT_TRUE(close_to(o[0], want_h, 2));
	EXPECT_TRUE(close_to(o[1], want_p, 2));
	/* 4e9 does not fit: stored saturated */
	EXPECT_EQ(0, memcmp(o[2], want_s, sizeof(want_s)));
	for (i = 0; i < 3; i++)
		free(o[i]);
}

TEST_F(ev, constant_and_reshape)
{
	static const float k[] = { 1, 2, 3, 4, 5, 6 };
	static const int64_t dims[] = { 3, 2 };
	int c = cst(self->g, SHAPE(VTPU_F32, 2, 3), k);
	int r = vtpu_g_reshape(self->g, c, 2, dims);
	struct vtpu_shape s;
	float out[6];

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &r));
	ASSERT_EQ(0, vtpu_graph_shape(self->g, r, &s));
	ASSERT_EQ(3, s.dims[0]);
	ASSERT_EQ(0, eval1(self->g, NULL, out, 6, 4));
	ASSERT_TRUE(close_to(out, k, 6));
}

/* A [1,2,3], B [1,3,2], passed transposed or not: always A . B. */
TEST_F(ev, p_matmul_honours_transpose_flags)
{
	static const float at[] = { 1, 4, 2, 5, 3, 6 };
	static const float bt[] = { 7, 9, 11, 8, 10, 12 };
	int ta, tb, id, a, b, in[2];
	float out[4];

	for (ta = 0; ta < 2; ta++)
		for (tb = 0; tb < 2; tb++) {
			struct vtpu_graph *g = vtpu_graph_new();
			const void *p[] = { ta ? at : mat_a, tb ? bt : mat_b };

			ASSERT_NE(NULL, g);
			a = param(g, 0, ta ? SHAPE(VTPU_F32, 1, 3, 2) :
					   SHAPE(VTPU_F32, 1, 2, 3));
			b = param(g, 1, tb ? SHAPE(VTPU_F32, 1, 2, 3) :
					   SHAPE(VTPU_F32, 1, 3, 2));
			in[0] = a;
			in[1] = b;
			id = prim(g, OP_P_MATMUL, SHAPE(VTPU_F32, 1, 2, 2), 2, in);
			ASSERT_LE(0, id);
			g->ir.nodes[id].a.mm.trans_a = ta;
			g->ir.nodes[id].a.mm.trans_b = tb;
			ASSERT_EQ(0, vtpu_g_outputs(g, 1, &id));
			EXPECT_EQ(0, eval1(g, p, out, 4, 4));
			EXPECT_TRUE(close_to(out, mat_ab, 4))
				TH_LOG("trans_a %d trans_b %d", ta, tb);
			vtpu_graph_free(g);
		}
}

/* Rows of [[1,2,3],[4,5,6]]: sum 6 15, max 3 6, min 1 4, mean 2 5. */
TEST_F(ev, p_reduce_last_folds_rows)
{
	static const float want[4][2] = { { 6, 15 }, { 3, 6 }, { 1, 4 },
					  { 2, 5 } };
	const void *p[] = { mat_a };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 3)), r, op;
	float out[2];

	for (op = VTPU_REDUCE_SUM_OP; op <= VTPU_REDUCE_MEAN_OP; op++) {
		r = prim(self->g, OP_P_REDUCE_LAST, SHAPE(VTPU_F32, 2), 1, &a);
		ASSERT_LE(0, r);
		self->g->ir.nodes[r].a.rl.op = op;
		ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &r));
		ASSERT_EQ(0, eval1(self->g, p, out, 2, 4));
		EXPECT_TRUE(close_to(out, want[op], 2));
	}
}

/*
 * Views of 0..5 held as [2,3]: strides {1,3} read it transposed; offset
 * 3 and strides {0,1} repeat its second row.
 */
TEST_F(ev, p_copy_views)
{
	static const float x[] = { 0, 1, 2, 3, 4, 5 };
	static const float want_t[] = { 0, 3, 1, 4, 2, 5 };
	static const float want_b[] = { 3, 4, 5, 3, 4, 5 };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 3));
	int c[2];
	void *o[2];

	c[0] = prim(self->g, OP_P_COPY, SHAPE(VTPU_F32, 3, 2), 1, &a);
	c[1] = prim(self->g, OP_P_COPY, SHAPE(VTPU_F32, 2, 3), 1, &a);
	ASSERT_LE(0, c[1]);
	self->g->ir.nodes[c[0]].a.view = (struct ir_view){ 0, { 1, 3 } };
	self->g->ir.nodes[c[1]].a.view = (struct ir_view){ 3, { 0, 1 } };
	ASSERT_EQ(0, vtpu_g_outputs(self->g, 2, c));
	ASSERT_EQ(0, ir_eval(&self->g->ir, p, o));
	EXPECT_TRUE(close_to(o[0], want_t, 6));
	EXPECT_TRUE(close_to(o[1], want_b, 6));
	free(o[0]);
	free(o[1]);
}

/* The last element of the view, 4 + 1*3 + 2*1 = 9, lies past the 6. */
TEST_F(ev, p_copy_rejects_view_past_the_end)
{
	static const float x[6] = { 0 };
	const void *p[] = { x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 3));
	int c = prim(self->g, OP_P_COPY, SHAPE(VTPU_F32, 2, 3), 1, &a);
	void *o[1] = { NULL };

	ASSERT_LE(0, c);
	self->g->ir.nodes[c].a.view = (struct ir_view){ 4, { 3, 1 } };
	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	ASSERT_EQ(-EINVAL, ir_eval(&self->g->ir, p, o));
	ASSERT_EQ(NULL, o[0]);
}

/* A shape that does not follow from the operands is refused, not trusted. */
TEST_F(ev, rejects_inconsistent_graph)
{
	static const float x[6] = { 0 };
	const void *p[] = { x, x };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 1, 2, 3));
	int in[2] = { a, a };
	int m = prim(self->g, OP_P_MATMUL, SHAPE(VTPU_F32, 1, 2, 2), 2, in);
	void *o[1] = { NULL };

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &m));
	ASSERT_EQ(-EINVAL, ir_eval(&self->g->ir, p, o));
	/* and the graph's own error slot is left alone */
	ASSERT_EQ(NULL, vtpu_graph_error(self->g));
}

TEST_F(ev, rejects_missing_parameters)
{
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2));
	void *o[1] = { NULL };

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &a));
	ASSERT_EQ(-EINVAL, ir_eval(&self->g->ir, NULL, o));
}

TEST_F(ev, rejects_graph_without_outputs)
{
	void *o[1] = { NULL };

	param(self->g, 0, SHAPE(VTPU_F32, 2));
	ASSERT_EQ(-EINVAL, ir_eval(&self->g->ir, NULL, o));
}

TEST_HARNESS_MAIN
