// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the cost model (compiler/cost.c) counts FLOPs, bytes and
 * time as it documents.
 *
 * FLOPs are exact by definition (2*M*N*K a matmul, 2*outputs*Cin/groups*
 * KH*KW a convolution, ...), so the tests compare them exactly on graphs
 * whose numbers are worked out in the comments. Bytes and time are
 * estimates; the tests pin down the rules: operands read and results
 * written once per kernel, fusion hides what stays inside a kernel,
 * codegen's own byte count wins, and time is the roofline maximum.
 */
#include <math.h>
#include <string.h>

#include <drm/vtpu_isa.h>

#include "ir.h"

#include "kselftest_harness.h"

#define SHAPE(t, ...) ((struct vtpu_shape){ .type = (t), \
	.rank = sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), \
	.dims = { __VA_ARGS__ } })

static int param(struct vtpu_graph *g, int index, struct vtpu_shape s)
{
	return vtpu_g_parameter(g, index, &s, NULL);
}

FIXTURE(cost)
{
	struct vtpu_graph *g;
	struct vtpu_program prog;
	struct vtpu_device_params dev;	/* zero: the defaults */
};

FIXTURE_SETUP(cost)
{
	self->g = vtpu_graph_new();
	ASSERT_NE(NULL, self->g);
	memset(&self->prog, 0, sizeof(self->prog));
	memset(&self->dev, 0, sizeof(self->dev));
}

FIXTURE_TEARDOWN(cost)
{
	vtpu_graph_free(self->g);
}

/*
 * [2,3] x [3,4]: 2*2*4*3 = 48 FLOPs; reads 24 + 48 bytes, writes 32: 104.
 * Defaults 8 flops/ns and 10 bytes/ns: max(6, 10.4) = 10.4 ns.
 */
TEST_F(cost, matmul_flops_bytes_and_time)
{
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 3));
	int b = param(self->g, 1, SHAPE(VTPU_F32, 3, 4));
	int c = vtpu_g_matmul(self->g, a, b);

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	cost_model(&self->g->ir, &self->dev, &self->prog);
	EXPECT_EQ(48, self->prog.cost.flops);
	EXPECT_EQ(104, self->prog.cost.bytes_moved);
	EXPECT_EQ(72, self->prog.cost.param_bytes);
	EXPECT_EQ(32, self->prog.cost.output_bytes);
	EXPECT_LT(fabs(self->prog.cost.est_time_ns - 10.4), 1e-9);
}

/* The device's rates replace the defaults: 1 flop/ns makes it 48 ns. */
TEST_F(cost, device_rates_override_defaults)
{
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 3));
	int b = param(self->g, 1, SHAPE(VTPU_F32, 3, 4));
	int c = vtpu_g_matmul(self->g, a, b);

	self->dev.flops_per_ns = 1;
	self->dev.bytes_per_ns = 100;
	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	cost_model(&self->g->ir, &self->dev, &self->prog);
	EXPECT_EQ(48, self->prog.cost.est_time_ns);
}

/* P_MATMUL [2,5,3]^T (trans_a: M=3, K=5) x [2,5,4]: 2*2*3*4*5 = 240. */
TEST_F(cost, p_matmul_flops_follow_trans_a)
{
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 5, 3));
	int b = param(self->g, 1, SHAPE(VTPU_F32, 2, 5, 4));
	int in[2] = { a, b };
	struct vtpu_shape s = SHAPE(VTPU_F32, 2, 3, 4);
	int m = ir_add(&self->g->ir, OP_P_MATMUL, &s, 2, in);

	ASSERT_LE(0, m);
	self->g->ir.nodes[m].a.mm.trans_a = true;
	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &m));
	cost_model(&self->g->ir, NULL, &self->prog);
	EXPECT_EQ(240, self->prog.cost.flops);
}

/*
 * Input [1,4,5,5], kernel [6,2,3,3], 2 groups, no padding: output
 * [1,6,3,3] = 54 elements, each 2 * (4/2) * 3 * 3 = 36 FLOPs: 1944.
 */
TEST_F(cost, grouped_conv_flops)
{
	struct vtpu_conv_params cp = { .stride = { 1, 1 },
		.dilation = { 1, 1 }, .groups = 2 };
	int x = param(self->g, 0, SHAPE(VTPU_F32, 1, 4, 5, 5));
	int w = param(self->g, 1, SHAPE(VTPU_F32, 6, 2, 3, 3));
	int c = vtpu_g_conv2d(self->g, x, w, &cp);

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	cost_model(&self->g->ir, &self->dev, &self->prog);
	EXPECT_EQ(1944, self->prog.cost.flops);
}

/*
 * x [4,8]: exp 32 + reduce over axis 1 (one per input) 32 + softmax 5*32
 * 160 = 224; the reshape is an alias and costs nothing.
 */
TEST_F(cost, elementwise_reduce_softmax_flops)
{
	static const int64_t flat[] = { 32 };
	int x = param(self->g, 0, SHAPE(VTPU_F32, 4, 8));
	int e = vtpu_g_unary(self->g, VTPU_EXP, x);
	int r = vtpu_g_reduce(self->g, VTPU_REDUCE_SUM_OP, e, 1, (int[]){ 1 });
	int s = vtpu_g_softmax(self->g, x, 1);
	int outs[2] = { r, vtpu_g_reshape(self->g, s, 1, flat) };

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 2, outs));
	cost_model(&self->g->ir, &self->dev, &self->prog);
	EXPECT_EQ(224, self->prog.cost.flops);
	EXPECT_EQ(16 + 128, self->prog.cost.output_bytes);
}

/*
 * x [4] f32 -> exp -> neg. Unfused, each reads 16 and writes 16: 64.
 * Fused into one kernel, exp's result never leaves it: 32.
 */
TEST_F(cost, fusion_hides_intermediates)
{
	int x = param(self->g, 0, SHAPE(VTPU_F32, 4));
	int e = vtpu_g_unary(self->g, VTPU_EXP, x);
	int n = vtpu_g_unary(self->g, VTPU_NEG, e);

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &n));
	cost_model(&self->g->ir, &self->dev, &self->prog);
	EXPECT_EQ(64, self->prog.cost.bytes_moved);
	EXPECT_EQ(8, self->prog.cost.flops);
	self->g->ir.nodes[e].kernel = 0;
	self->g->ir.nodes[n].kernel = 0;
	self->prog.cost.bytes_moved = 0;
	cost_model(&self->g->ir, &self->dev, &self->prog);
	EXPECT_EQ(32, self->prog.cost.bytes_moved);
	EXPECT_EQ(8, self->prog.cost.flops);
}

/* Codegen counted 1000 bytes: kept, and the time follows: 1000/10 ns. */
TEST_F(cost, codegen_bytes_win)
{
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2, 3));
	int b = param(self->g, 1, SHAPE(VTPU_F32, 3, 4));
	int c = vtpu_g_matmul(self->g, a, b);

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &c));
	self->prog.cost.bytes_moved = 1000;
	cost_model(&self->g->ir, &self->dev, &self->prog);
	EXPECT_EQ(1000, self->prog.cost.bytes_moved);
	EXPECT_LT(fabs(self->prog.cost.est_time_ns - 100), 1e-9);
}

/* Sizes come from the header; what the caller set stays as it was. */
TEST_F(cost, header_sizes_and_caller_fields)
{
	struct vtpu_prog_header h = { .code_size = 64, .const_size = 16 };
	int a = param(self->g, 0, SHAPE(VTPU_F32, 2));
	int n = vtpu_g_unary(self->g, VTPU_NEG, a);

	ASSERT_EQ(0, vtpu_g_outputs(self->g, 1, &n));
	self->prog.binary = &h;
	self->prog.size = sizeof(h);
	self->prog.cost.scratch_bytes = 11;
	self->prog.cost.scratch_lower_bound = 12;
	self->prog.cost.vmem_bytes = 13;
	self->prog.cost.insn_count = 14;
	self->prog.cost.kernel_count = 15;
	cost_model(&self->g->ir, &self->dev, &self->prog);
	EXPECT_EQ(64, self->prog.cost.code_bytes);
	EXPECT_EQ(16, self->prog.cost.const_bytes);
	EXPECT_EQ(11, self->prog.cost.scratch_bytes);
	EXPECT_EQ(12, self->prog.cost.scratch_lower_bound);
	EXPECT_EQ(13, self->prog.cost.vmem_bytes);
	EXPECT_EQ(14, self->prog.cost.insn_count);
	EXPECT_EQ(15, self->prog.cost.kernel_count);
}

TEST_HARNESS_MAIN
