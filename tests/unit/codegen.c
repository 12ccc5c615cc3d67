// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the memory planner and code generator produce programs
 * that pass the validator and, run by the userspace executor, compute
 * what the reference evaluator (ir_eval) computes, for every primitive
 * op, fused elementwise chains, matmul with a fused epilogue, and shapes
 * larger than VMEM (which must be tiled). Shapes are random, seeded.
 *
 * Tolerances: elementwise ops relative 4e-6 (a few f32 ulps: the
 * executor's transcendentals are f32, ir_eval's double) plus 1e-6
 * absolute; matmul and reductions 1e-5 of the sum of |terms|, computed
 * by evaluating the same graph on |inputs| when the graph is monotone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ir.h"
#include "vtpu_exec.h"
#include "vtpu_prog.h"

#include "kselftest_harness.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static int rnd_in(int lo, int hi)	/* [lo, hi] */
{
	return lo + (int)(rnd() % (uint32_t)(hi - lo + 1));
}

static float rnd_f(float lo, float hi)
{
	return lo + (hi - lo) * (float)(rnd() & 0xffffff) / (float)0x1000000;
}

static struct vtpu_shape shp(enum vtpu_type t, int rank, const int64_t *d)
{
	struct vtpu_shape s = { .type = t, .rank = rank };

	memcpy(s.dims, d, rank * sizeof(*d));
	return s;
}

static struct vtpu_shape shp2(enum vtpu_type t, int64_t a, int64_t b)
{
	int64_t d[2] = { a, b };

	return shp(t, 2, d);
}

static struct vtpu_shape shp3(enum vtpu_type t, int64_t a, int64_t b, int64_t c)
{
	int64_t d[3] = { a, b, c };

	return shp(t, 3, d);
}

/* Ranges of random parameter values. */
struct fill {
	float lo, hi;
};

static void fill_param(void *p, const struct vtpu_shape *s,
		       const struct fill *f)
{
	int64_t i, n = shape_elems(s);

	for (i = 0; i < n; i++) {
		float x = rnd_f(f->lo, f->hi);
		uint32_t u;

		switch (s->type) {
		case VTPU_BF16:
			memcpy(&u, &x, 4);
			((uint16_t *)p)[i] = u >> 16;
			break;
		case VTPU_S32:
			((int32_t *)p)[i] = (int32_t)lrintf(x * 100);
			break;
		default:
			((float *)p)[i] = x;
		}
	}
}

static double get(const void *p, enum vtpu_type t, int64_t i)
{
	uint32_t u;
	float f;

	switch (t) {
	case VTPU_BF16:
		u = (uint32_t)((const uint16_t *)p)[i] << 16;
		memcpy(&f, &u, 4);
		return f;
	case VTPU_S32:
		return ((const int32_t *)p)[i];
	default:
		return ((const float *)p)[i];
	}
}

static void make_abs(void *p, const struct vtpu_shape *s)
{
	int64_t i, n = shape_elems(s);

	for (i = 0; i < n; i++) {
		if (s->type == VTPU_BF16)
			((uint16_t *)p)[i] &= 0x7fff;
		else if (s->type == VTPU_F32)
			((float *)p)[i] = fabsf(((float *)p)[i]);
	}
}

struct run {
	struct vtpu_program prog;
	struct plan_stats plan;
	int64_t mismatches;
	double worst;		/* worst |err| / tol */
};

/* Runs @prog on @params; outputs into @outs (malloc'd). */
static int execute(struct vtpu_program *prog, uint64_t vmem,
		   void **params, void **outs)
{
	struct vtpu_exec_binding eb[VTPU_MAX_BINDINGS];
	struct vtpu_binding_desc bd[VTPU_MAX_BINDINGS];
	struct vtpu_prog_info info;
	struct vtpu_prog_error perr = { 0 };
	struct vtpu_exec e;
	void *vm = malloc(vmem), *scratch = NULL;
	int i, ret;

	for (i = 0; i < prog->nbindings; i++) {
		struct vtpu_binding_info *b = &prog->bindings[i];

		bd[i].size = b->size;
		eb[i].size = b->size;
		if (b->role == VTPU_BIND_PARAM) {
			bd[i].access = VTPU_ACCESS_READ;
			eb[i].data = params[b->index];
		} else if (b->role == VTPU_BIND_OUTPUT) {
			bd[i].access = VTPU_ACCESS_WRITE;
			outs[b->index] = malloc(b->size);
			memset(outs[b->index], 0xff, b->size);	/* NaN */
			eb[i].data = outs[b->index];
		} else if (b->role == VTPU_BIND_WEIGHTS) {
			bd[i].access = VTPU_ACCESS_READ;
			eb[i].data = (void *)prog->weights;
		} else {
			bd[i].access = VTPU_ACCESS_READ | VTPU_ACCESS_WRITE;
			scratch = malloc(b->size);
			memset(scratch, 0xff, b->size);
			eb[i].data = scratch;
		}
	}
	ret = vtpu_prog_validate(prog->binary, prog->size, bd, prog->nbindings,
				 vmem, &info, &perr);
	if (ret) {
		fprintf(stderr, "# invalid program: insn %d: %s\n", perr.insn,
			perr.why);
		goto out;
	}
	vtpu_exec_init(&e, &info, eb, vm);
	while (!(ret = vtpu_exec_step(&e, 1 << 20)))
		;
	ret = ret < 0 ? ret : 0;	/* a fault: -ERANGE, say */
out:
	free(scratch);
	free(vm);
	return ret;
}

/*
 * Plans, compiles and runs @g with VMEM @vmem, compares every output
 * with ir_eval. Tolerance per element: rtol * |ref| + atol, or, with
 * @sum_bound, rtol * (the graph on |inputs|) + atol.
 */
static int check_graph(struct vtpu_graph *gr, uint64_t vmem,
		       const struct fill *f, double rtol, double atol,
		       int sum_bound, struct run *r)
{
	struct ir_graph *g = &gr->ir;
	struct vtpu_device_params dev = { .vmem_size = vmem, .num_cores = 1 };
	void *params[16] = { 0 }, *outs[16] = { 0 }, *ref[16] = { 0 };
	void *bound[16] = { 0 };
	char err[256] = "";
	int i, k, ret;

	memset(r, 0, sizeof(*r));
	if (ir_verify(g)) {
		fprintf(stderr, "# verify: %s\n", g->err);
		return -1;
	}
	for (i = 0; i < g->n; i++)
		if (g->nodes[i].op == OP_PARAM) {
			const struct vtpu_shape *s = &g->nodes[i].shape;

			params[g->nodes[i].a.param.index] =
				malloc(shape_elems(s) * type_size(s->type) + 1);
			fill_param(params[g->nodes[i].a.param.index], s, f);
		}
	ret = pass_plan(g, &r->plan);
	if (!ret)
		ret = codegen(g, &dev, &r->prog, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "# codegen: %d %s %s\n", ret, err, g->err);
		if (getenv("CG_DUMP"))
			ir_dump(g, stderr, "plan");
		goto out;
	}
	ret = execute(&r->prog, vmem, params, outs);
	if (!ret)
		ret = ir_eval(g, (const void *const *)params, ref);
	if (!ret && sum_bound) {
		for (i = 0; i < g->n; i++)
			if (g->nodes[i].op == OP_PARAM)
				make_abs(params[g->nodes[i].a.param.index],
					 &g->nodes[i].shape);
		ret = ir_eval(g, (const void *const *)params, bound);
	}
	for (k = 0; k < g->nout && !ret; k++) {
		const struct vtpu_shape *s = &g->nodes[g->outputs[k]].shape;
		int64_t j;

		for (j = 0; j < shape_elems(s); j++) {
			double x = get(outs[k], s->type, j);
			double y = get(ref[k], s->type, j);
			double scale = sum_bound ? fabs(get(bound[k], s->type, j)) : fabs(y);
			double tol = rtol * scale + atol;
			double e = fabs(x - y);

			if (isnan(y) && isnan(x))
				continue;
			if (!(e <= tol)) {
				if (r->mismatches++ < 5)
					fprintf(stderr, "# out %d [%lld]: got %.9g want %.9g\n",
						k, (long long)j, x, y);
			}
			if (e / (tol + 1e-300) > r->worst)
				r->worst = e / (tol + 1e-300);
		}
	}
out:
	for (i = 0; i < 16; i++) {
		free(params[i]);
		free(outs[i]);
		free(ref[i]);
		free(bound[i]);
	}
	return ret;
}

static void run_free(struct run *r)
{
	free(r->prog.binary);
	free(r->prog.bindings);
}

static const struct fill any = { -2, 2 };
static const struct fill pos = { 0.05f, 3 };

static int param(struct vtpu_graph *g, int i, struct vtpu_shape s)
{
	return vtpu_g_parameter(g, i, &s, NULL);
}

/* Node @id gets kernel @k. */
static void kern(struct vtpu_graph *g, int id, int k)
{
	g->ir.nodes[id].kernel = k;
}

TEST(every_unary_op_matches_eval)
{
	static const enum vtpu_unary_op ops[] = {
		VTPU_NEG, VTPU_ABS, VTPU_EXP, VTPU_LOG, VTPU_SQRT, VTPU_RSQRT,
		VTPU_TANH, VTPU_LOGISTIC, VTPU_RELU, VTPU_GELU,
	};
	unsigned int i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct vtpu_graph *g = vtpu_graph_new();
		struct run r;
		int x = param(g, 0, shp2(VTPU_F32, 37, 53));
		int y = vtpu_g_unary(g, ops[i], x);

		ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
		ASSERT_EQ(0, check_graph(g, 8192, ops[i] == VTPU_LOG ||
					 ops[i] == VTPU_SQRT ||
					 ops[i] == VTPU_RSQRT ? &pos : &any,
					 4e-6, 1e-6, 0, &r));
		EXPECT_EQ(0, r.mismatches) TH_LOG("unary op %u", i);
		run_free(&r);
		vtpu_graph_free(g);
	}
}

TEST(every_binary_op_matches_eval)
{
	int op;

	for (op = VTPU_ADD; op <= VTPU_POW; op++) {
		struct vtpu_graph *g = vtpu_graph_new();
		struct run r;
		int a = param(g, 0, shp2(VTPU_F32, 129, 31));
		int b = param(g, 1, shp2(VTPU_F32, 129, 31));
		int y = vtpu_g_binary(g, op, a, b);

		ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
		ASSERT_EQ(0, check_graph(g, 16384, &pos, 4e-6, 1e-6, 0, &r));
		EXPECT_EQ(0, r.mismatches) TH_LOG("binary op %d", op);
		run_free(&r);
		vtpu_graph_free(g);
	}
}

TEST(compare_and_select_keep_preds_inside)
{
	int dir;

	for (dir = VTPU_EQ; dir <= VTPU_GE; dir++) {
		struct vtpu_graph *g = vtpu_graph_new();
		struct run r;
		int a = param(g, 0, shp2(VTPU_F32, 20, 300));
		int b = param(g, 1, shp2(VTPU_F32, 20, 300));
		int ai = vtpu_g_convert(g, a, VTPU_S32);
		int bi = vtpu_g_convert(g, b, VTPU_S32);
		int c = vtpu_g_compare(g, dir, ai, bi);	/* ties happen */
		int y = vtpu_g_select(g, c, a, b);
		int z = vtpu_g_convert(g, c, VTPU_F32);
		int outs[2] = { y, z };

		ASSERT_EQ(0, vtpu_g_outputs(g, 2, outs));
		ASSERT_EQ(0, check_graph(g, 8192, &any, 0, 0, 0, &r));
		EXPECT_EQ(0, r.mismatches) TH_LOG("compare %d", dir);
		run_free(&r);
		vtpu_graph_free(g);
	}
}

/*
 * bf16 results are rounded to bf16 at every node (so fused and unfused
 * code agree bit for bit); ir_eval rounds only at outputs and CONVERT,
 * hence two bf16 ulps of tolerance.
 */
TEST(bf16_rounds_per_node)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct run r;
	int a = param(g, 0, shp2(VTPU_BF16, 33, 65));
	int b = param(g, 1, shp2(VTPU_BF16, 33, 65));
	int s = vtpu_g_binary(g, VTPU_MUL, a, b);
	int t = vtpu_g_binary(g, VTPU_ADD, s, a);
	int f = vtpu_g_convert(g, vtpu_g_convert(g, t, VTPU_F32), VTPU_BF16);

	ASSERT_EQ(0, vtpu_g_outputs(g, 1, &f));
	ASSERT_EQ(0, check_graph(g, 8192, &any, 1.6e-2, 1e-2, 0, &r));
	EXPECT_EQ(0, r.mismatches);
	run_free(&r);
	vtpu_graph_free(g);
}

TEST(s32_converts_exactly)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct run r;
	int a = param(g, 0, shp2(VTPU_F32, 33, 65));
	int c = param(g, 1, shp2(VTPU_S32, 33, 65));
	int i = vtpu_g_convert(g, a, VTPU_S32);	/* truncates */
	int j = vtpu_g_binary(g, VTPU_ADD, i, c);
	int k = vtpu_g_binary(g, VTPU_MUL, j, c);
	int h = vtpu_g_convert(g, vtpu_g_convert(g, c, VTPU_F32), VTPU_BF16);
	int outs[3] = { j, k, h };

	ASSERT_EQ(0, vtpu_g_outputs(g, 3, outs));
	ASSERT_EQ(0, check_graph(g, 8192, &any, 0, 0, 0, &r));
	EXPECT_EQ(0, r.mismatches);
	run_free(&r);
	vtpu_graph_free(g);
}

/* A chain in one kernel: one load per input, one store, no scratch. */
TEST(fused_chain_skips_memory)
{
	struct run r1, r2;
	int pass;
	double dma[2];

	for (pass = 0; pass < 2; pass++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int a = param(g, 0, shp3(VTPU_F32, 3, 50, 70));
		int b = param(g, 1, shp3(VTPU_F32, 3, 50, 70));
		int64_t d[2] = { 150, 70 };
		int x = vtpu_g_binary(g, VTPU_MUL, a, b);
		int y = vtpu_g_unary(g, VTPU_TANH, x);
		int z = vtpu_g_reshape(g, y, 2, d);
		int w = vtpu_g_unary(g, VTPU_EXP, z);
		int ar = vtpu_g_reshape(g, a, 2, d);
		int v = vtpu_g_binary(g, VTPU_SUB, w, ar);
		int o = vtpu_g_unary(g, VTPU_RELU, v);

		if (pass) {
			kern(g, x, 0); kern(g, y, 0); kern(g, z, 0);
			kern(g, w, 0); kern(g, v, 0); kern(g, o, 0);
		}
		ASSERT_EQ(0, vtpu_g_outputs(g, 1, &o));
		ASSERT_EQ(0, check_graph(g, 4096, &any, 4e-6, 1e-6, 0,
					 pass ? &r2 : &r1));
		EXPECT_EQ(0, (pass ? &r2 : &r1)->mismatches);
		dma[pass] = (pass ? &r2 : &r1)->prog.cost.bytes_moved;
		vtpu_graph_free(g);
	}
	EXPECT_EQ(1, r2.prog.cost.kernel_count);
	EXPECT_EQ(0, r2.plan.scratch_peak);
	EXPECT_EQ(3 * 3 * 50 * 70 * 4, dma[1]);	/* a, b in; o out */
	EXPECT_LT(dma[1], dma[0]);
	run_free(&r1);
	run_free(&r2);
}

/*
 * Random elementwise DAGs cut into kernels of consecutive nodes (always
 * acyclic): slots, liveness and which values reach memory all vary.
 */
TEST(random_dags_any_grouping)
{
	static const enum vtpu_unary_op un[] = { VTPU_NEG, VTPU_TANH,
						  VTPU_RELU, VTPU_LOGISTIC };
	static const enum vtpu_binary_op bin[] = { VTPU_ADD, VTPU_SUB, VTPU_MUL,
						   VTPU_MAX, VTPU_MIN };
	int it;

	for (it = 0; it < 40; it++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int64_t n = rnd_in(1, 3000), d[2] = { 1, n };
		int v[64], nv = 0, i, group = rnd_in(1, 6), outs[3];
		struct run r;

		for (i = 0; i < 3; i++)
			v[nv++] = param(g, i, shp2(VTPU_F32, 1, n));
		while (nv < 24) {
			int a = v[rnd_in(0, nv - 1)], b = v[rnd_in(0, nv - 1)];

			switch (rnd() % 4) {
			case 0:
				v[nv++] = vtpu_g_unary(g, un[rnd() % 4], a);
				break;
			case 1:
				d[0] = g->ir.nodes[a].shape.rank == 1 ? 1 : 0;
				v[nv++] = d[0] ? vtpu_g_reshape(g, a, 2, (int64_t[]){ 1, n }) :
					  vtpu_g_reshape(g, a, 1, &n);
				break;
			case 2:
				if (g->ir.nodes[a].shape.rank != g->ir.nodes[b].shape.rank)
					b = a;
				v[nv++] = vtpu_g_select(g, vtpu_g_compare(g, VTPU_GT, a, b),
							a, b);
				break;
			default:
				if (g->ir.nodes[a].shape.rank != g->ir.nodes[b].shape.rank)
					b = a;
				v[nv++] = vtpu_g_binary(g, bin[rnd() % 5], a, b);
			}
		}
		for (i = 3; i < g->ir.n; i++)
			kern(g, i, it % 4 ? i / group : -1);
		outs[0] = v[nv - 1];
		outs[1] = v[rnd_in(3, nv - 1)];
		outs[2] = v[rnd_in(3, nv - 1)];
		ASSERT_EQ(0, vtpu_g_outputs(g, 3, outs));
		ASSERT_EQ(0, check_graph(g, it % 2 ? 4096 : 65536, &any, 4e-6,
					 1e-6, 0, &r));
		EXPECT_EQ(0, r.mismatches) TH_LOG("it %d n %lld group %d", it,
						  (long long)n, group);
		run_free(&r);
		vtpu_graph_free(g);
	}
}

static int matmul(struct vtpu_graph *gr, int a, int b, bool ta, bool tb)
{
	struct ir_graph *g = &gr->ir;
	struct vtpu_shape s;
	int id = ir_add(g, OP_P_MATMUL, &g->nodes[a].shape, 2,
			(int[]){ a, b });

	g->nodes[id].a.mm.trans_a = ta;
	g->nodes[id].a.mm.trans_b = tb;
	if (ir_infer(g, &g->nodes[id], &s))
		return -1;
	g->nodes[id].shape = s;
	return id;
}

TEST(matmul_random_shapes_and_transposes)
{
	int it;

	for (it = 0; it < 24; it++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int B = rnd_in(1, 3), M = rnd_in(1, 140), N = rnd_in(1, 140);
		int K = rnd_in(1, 300), ta = rnd() & 1, tb = rnd() & 1;
		enum vtpu_type t = it % 3 == 2 ? VTPU_BF16 : VTPU_F32;
		int a = param(g, 0, ta ? shp3(t, B, K, M) : shp3(t, B, M, K));
		int b = param(g, 1, tb ? shp3(t, B, N, K) : shp3(t, B, K, N));
		int y = matmul(g, a, b, ta, tb);
		struct run r;

		ASSERT_LE(0, y);
		ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
		ASSERT_EQ(0, check_graph(g, it % 2 ? 65536 : 16384, &any,
					 1e-5, 1e-30, 1, &r));
		EXPECT_EQ(0, r.mismatches)
			TH_LOG("B%d M%d N%d K%d ta%d tb%d", B, M, N, K, ta, tb);
		run_free(&r);
		vtpu_graph_free(g);
	}
}

/* 256^3 does not fit 64 KiB of VMEM: it must be tiled, and stay right. */
TEST(matmul_256_tiles_in_64k)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int a = param(g, 0, shp3(VTPU_F32, 1, 256, 256));
	int b = param(g, 1, shp3(VTPU_F32, 1, 256, 256));
	int y = matmul(g, a, b, false, false);
	struct run r;

	ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
	ASSERT_EQ(0, check_graph(g, 65536, &any, 1e-5, 1e-30, 1, &r));
	EXPECT_EQ(0, r.mismatches);
	EXPECT_LE(r.prog.cost.vmem_bytes, 65536);
	EXPECT_EQ(2.0 * 256 * 256 * 256, r.prog.cost.flops);
	fprintf(stderr, "# 256^3 matmul, 64 KiB VMEM: %u insns, %.0f DMA bytes\n",
		r.prog.cost.insn_count, r.prog.cost.bytes_moved);
	EXPECT_LT(r.prog.cost.insn_count, 2000);
	run_free(&r);
	vtpu_graph_free(g);
}

/* relu(x . w + bias): the sum never reaches HBM. */
TEST(matmul_epilogue_fused)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, shp3(VTPU_F32, 2, 100, 70));
	int w = param(g, 1, shp3(VTPU_F32, 2, 70, 90));
	int bias = param(g, 2, shp3(VTPU_F32, 2, 100, 90));
	int y = matmul(g, x, w, false, false);
	int s = vtpu_g_binary(g, VTPU_ADD, y, bias);
	int o = vtpu_g_unary(g, VTPU_RELU, s);
	struct run r;

	kern(g, y, 0);
	kern(g, s, 0);
	kern(g, o, 0);
	ASSERT_EQ(0, vtpu_g_outputs(g, 1, &o));
	ASSERT_EQ(0, check_graph(g, 32768, &any, 1e-5, 1e-30, 1, &r));
	EXPECT_EQ(0, r.mismatches);
	EXPECT_EQ(1, r.prog.cost.kernel_count);
	EXPECT_EQ(0, r.plan.scratch_peak);
	run_free(&r);
	vtpu_graph_free(g);
}

/* Epilogues of random length, the product itself also an output. */
TEST(matmul_epilogue_random)
{
	int it;

	for (it = 0; it < 12; it++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int B = rnd_in(1, 2), M = rnd_in(1, 90), N = rnd_in(1, 90);
		int K = rnd_in(1, 90), i, len = rnd_in(1, 4);
		int a = param(g, 0, shp3(VTPU_F32, B, M, K));
		int b = param(g, 1, shp3(VTPU_F32, B, K, N));
		int c = param(g, 2, shp3(VTPU_F32, B, M, N));
		int y = matmul(g, a, b, false, false), h = y, outs[2];
		struct run r;

		kern(g, y, 0);
		for (i = 0; i < len; i++) {
			h = i % 2 ? vtpu_g_unary(g, VTPU_RELU, h) :
				    vtpu_g_binary(g, VTPU_ADD, h, c);
			kern(g, h, 0);
		}
		outs[0] = h;
		outs[1] = y;
		ASSERT_EQ(0, vtpu_g_outputs(g, it % 2 ? 2 : 1, outs));
		/* relu and + |c| keep the |inputs| graph a bound on |terms| */
		ASSERT_EQ(0, check_graph(g, it % 3 ? 16384 : 65536, &any,
					 1e-5, 1e-30, 1, &r));
		EXPECT_EQ(0, r.mismatches) TH_LOG("it %d", it);
		EXPECT_EQ(it % 2 ? 2 : 1, r.prog.cost.kernel_count);
		run_free(&r);
		vtpu_graph_free(g);
	}
}

static int reduce_last(struct vtpu_graph *gr, int a, enum vtpu_reduce_op op)
{
	struct ir_graph *g = &gr->ir;
	struct vtpu_shape s = g->nodes[a].shape;
	int id;

	s.rank = 1;
	id = ir_add(g, OP_P_REDUCE_LAST, &s, 1, &a);
	g->nodes[id].a.rl.op = op;
	return id;
}

TEST(reduce_last_every_op)
{
	int op, it;

	for (it = 0; it < 8; it++)
		for (op = VTPU_REDUCE_SUM_OP; op <= VTPU_REDUCE_MEAN_OP; op++) {
			struct vtpu_graph *g = vtpu_graph_new();
			int R = rnd_in(1, 300), C = rnd_in(1, it < 4 ? 100 : 5000);
			int a = param(g, 0, shp2(it & 1 ? VTPU_BF16 : VTPU_F32, R, C));
			int y = reduce_last(g, a, op);
			struct run r;

			ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
			ASSERT_EQ(0, check_graph(g, 16384, &pos, 1e-5,
						 1e-30, 0, &r));
			EXPECT_EQ(0, r.mismatches) TH_LOG("R%d C%d op%d", R, C, op);
			run_free(&r);
			vtpu_graph_free(g);
		}
}

static int view(struct vtpu_graph *gr, int a, struct vtpu_shape s,
		int64_t off, const int64_t *stride)
{
	struct ir_graph *g = &gr->ir;
	int id;

	s.type = g->nodes[a].shape.type;
	id = ir_add(g, OP_P_COPY, &s, 1, &a);
	g->nodes[id].a.view.offset = off;
	memcpy(g->nodes[id].a.view.stride, stride, s.rank * sizeof(*stride));
	return id;
}

/* Transposes, stepped slices, row and column broadcasts, any dtype. */
TEST(p_copy_views)
{
	static const enum vtpu_type types[] = { VTPU_F32, VTPU_BF16, VTPU_S32 };
	int it;

	for (it = 0; it < 66; it++) {
		struct vtpu_graph *g = vtpu_graph_new();
		enum vtpu_type t = types[it % 3];
		int64_t m = rnd_in(1, 90), n = rnd_in(1, 90), st[3];
		int a = param(g, 0, shp2(t, m, n)), y;
		struct run r;

		switch ((it / 3) % 10) {
		case 0:	/* transpose */
			st[0] = 1; st[1] = n;
			y = view(g, a, shp2(t, n, m), 0, st);
			break;
		case 1:	/* a[1::2, ::3] */
			st[0] = 2 * n; st[1] = 3;
			y = view(g, a, shp2(t, m / 2 ? m / 2 : 1, (n + 2) / 3),
				 m > 1 ? n : 0, st);
			break;
		case 2:	/* row broadcast: [k, n] from row 0 */
			st[0] = 0; st[1] = 1;
			y = view(g, a, shp2(t, rnd_in(2, 70), n), 0, st);
			break;
		case 3:	/* column broadcast: [m, k] from column 0 */
			st[0] = n; st[1] = 0;
			y = view(g, a, shp2(t, m, rnd_in(2, 70)), 0, st);
			break;
		case 4:	/* [m, 2, n] repeating each row */
			st[0] = n; st[1] = 0; st[2] = 1;
			y = view(g, a, shp3(t, m, 2, n), 0, st);
			break;
		case 6:	/* a[:, 1::s] for a random step */
			st[0] = n; st[1] = rnd_in(2, 5);
			y = view(g, a, shp2(t, m, n > st[1] ? (n - 1 + st[1] - 1) / st[1] : 1),
				 n > st[1] ? 1 : 0, st);
			break;
		case 7:	/* three-dimensional: [n/2, m] rows two apart, stepping n */
			st[0] = 2; st[1] = n;
			y = view(g, a, shp2(t, n / 2 ? n / 2 : 1, m), 0, st);
			break;
		case 8:	/* scalar broadcast of a[0][1 % n] into [m + 1, 3 n] */
			st[0] = 0; st[1] = 0;
			y = view(g, a, shp2(t, m + 1, 3 * n), 1 % n, st);
			break;
		case 9:	/* every third element, flat */
			st[0] = 3;
			y = view(g, a, shp(t, 1, (int64_t[]){ (m * n + 2) / 3 }), 0, st);
			break;
		default:	/* rank-3 permute of [m, n] as [m, n, 1] -> [n, 1, m] */
			st[0] = 1; st[1] = 0; st[2] = n;
			y = view(g, a, shp3(t, n, 1, m), 0, st);
			break;
		}
		ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
		ASSERT_EQ(0, check_graph(g, it % 2 ? 4096 : 65536, &any, 0, 0, 0, &r));
		EXPECT_EQ(0, r.mismatches) TH_LOG("case %d type %d m%lld n%lld",
						  (it / 3) % 10, t, (long long)m,
						  (long long)n);
		run_free(&r);
		vtpu_graph_free(g);
	}
}

/*
 * A transpose of few rows and many columns ([96 x 4096] from [4096 x 96],
 * as MViT's token/channel swaps) in square-ish blocks: blocks as wide as
 * pick_tile()'s rows left 2 x 2 of them in 64 KiB (98,304 blocks).
 */
TEST(wide_transposes_take_square_blocks)
{
	static const uint32_t vmem[] = { 65536, 1 << 20 };
	static const uint32_t most[] = { 1000, 200 };
	int i;

	for (i = 0; i < 2; i++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int a = param(g, 0, shp2(VTPU_F32, 4096, 96)), y;
		int64_t st[2] = { 1, 96 };
		struct run r;

		y = view(g, a, shp2(VTPU_F32, 96, 4096), 0, st);
		ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
		ASSERT_EQ(0, check_graph(g, vmem[i], &any, 0, 0, 0, &r));
		EXPECT_EQ(0, r.mismatches);
		EXPECT_LT(r.prog.cost.insn_count, most[i])
			TH_LOG("%u KiB of VMEM", vmem[i] >> 10);
		run_free(&r);
		vtpu_graph_free(g);
	}
}

/*
 * A transposed view whose columns are closer than its rows, y[i][j] =
 * a[i + 3 j] (im2col's overlapping windows): blocks of 3 rows, not a DMA
 * per element.
 */
TEST(overlapping_transposed_views_take_narrow_blocks)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int a = param(g, 0, shp(VTPU_F32, 1, (int64_t[]){ 96 + 3 * 999 })), y;
	int64_t st[2] = { 1, 3 };
	struct run r;

	y = view(g, a, shp2(VTPU_F32, 96, 1000), 0, st);
	ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
	ASSERT_EQ(0, check_graph(g, 1 << 20, &any, 0, 0, 0, &r));
	EXPECT_EQ(0, r.mismatches);
	EXPECT_LT(r.prog.cost.insn_count, 1000);
	run_free(&r);
	vtpu_graph_free(g);
}

/*
 * A kernel that would tile into 64M instructions (a stepped row read
 * again for each of 65536 rows: one DMA per element) is refused with
 * E2BIG once it passes the ISA's limit, without growing the code past
 * it: a fuzzed MaxPool of 13M instructions took 800 MB to be refused.
 */
TEST(code_past_the_instruction_limit_stops_growing)
{
	struct vtpu_graph *gr = vtpu_graph_new();
	struct ir_graph *g = &gr->ir;
	struct vtpu_device_params dev = { .vmem_size = 1 << 20, .num_cores = 1 };
	int a = param(gr, 0, shp(VTPU_F32, 1, (int64_t[]){ 2048 })), y;
	int64_t st[2] = { 0, 2 };
	struct vtpu_program prog = { 0 };
	struct plan_stats plan;
	struct rusage ru;
	char err[256] = "";

	y = view(gr, a, shp2(VTPU_F32, 65536, 1024), 0, st);
	ASSERT_EQ(0, vtpu_g_outputs(gr, 1, &y));
	ASSERT_EQ(0, ir_verify(g));
	ASSERT_EQ(0, pass_plan(g, &plan));
	EXPECT_EQ(-E2BIG, codegen(g, &dev, &prog, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "over the limit of 1048576 instructions"))
		TH_LOG("%s", err);
	/* this test's process: 64M instructions would be 4 GiB of code */
	ASSERT_EQ(0, getrusage(RUSAGE_SELF, &ru));
	EXPECT_GT(512L << 10, ru.ru_maxrss) TH_LOG("peak %ld KiB", ru.ru_maxrss);
	free(prog.binary);
	free(prog.bindings);
	vtpu_graph_free(gr);
}

TEST(concat_and_pad)
{
	int it;

	for (it = 0; it < 12; it++) {
		struct vtpu_graph *g = vtpu_graph_new();
		enum vtpu_type t = it % 3 == 1 ? VTPU_BF16 : it % 3 ? VTPU_S32 : VTPU_F32;
		int64_t d0 = rnd_in(1, 40), d1 = rnd_in(1, 40), d2 = rnd_in(1, 40);
		int axis = it % 3;
		int64_t lo[3] = { rnd_in(0, 3), rnd_in(0, 3), rnd_in(0, 3) };
		int64_t hi[3] = { rnd_in(0, 3), rnd_in(0, 3), rnd_in(0, 3) };
		int a = param(g, 0, shp3(t, d0, d1, d2)), b, c, p, y[2];
		struct vtpu_shape sb = shp3(t, d0, d1, d2);
		struct run r;

		sb.dims[axis] = rnd_in(1, 30);
		b = param(g, 1, sb);
		c = vtpu_g_concat(g, 2, (int[]){ a, b }, axis);
		p = vtpu_g_pad(g, a, lo, hi, it % 2 ? -1.5 : 7);
		y[0] = c;
		y[1] = p;
		ASSERT_EQ(0, vtpu_g_outputs(g, 2, y));
		ASSERT_EQ(0, check_graph(g, it % 2 ? 4096 : 65536, &any, 0, 0, 0, &r));
		EXPECT_EQ(0, r.mismatches) TH_LOG("it %d", it);
		run_free(&r);
		vtpu_graph_free(g);
	}
}

/* A parameter, a repeated value and an alias as outputs get copies. */
/*
 * Gather along any axis of f32, bf16 and s32 data with indices of rank
 * 1 or 2, negative ones wrapped, small and large VMEM (many index chunks
 * and row pieces): the bytes ir_eval gives. An index outside the axis
 * fails the run with -ERANGE on the device and in ir_eval alike.
 */
TEST(gather_matches_eval_and_refuses_bad_indices)
{
	int it;

	for (it = 0; it < 24; it++) {
		struct vtpu_graph *gr = vtpu_graph_new();
		struct ir_graph *g = &gr->ir;
		enum vtpu_type t = it % 3 == 1 ? VTPU_BF16 : it % 3 ? VTPU_S32 : VTPU_F32;
		int rank = 1 + it % 3, axis = rnd_in(0, rank - 1), irank = 1 + (it / 3) % 2;
		int64_t d[3], id[2], ne = 1, ni = 1, j;
		struct vtpu_device_params dev = { .vmem_size = it % 2 ? 4096 : 65536,
						  .num_cores = 1 };
		struct vtpu_shape sx, si;
		void *params[2], *outs[1] = { 0 }, *ref[1] = { 0 };
		struct vtpu_program prog = { 0 };
		struct plan_stats ps;
		char err[256] = "";
		int x, idx, y, ret;
		int32_t *iv;

		for (j = 0; j < rank; j++)
			ne *= d[j] = rnd_in(1, j == axis ? 50 : 30);
		for (j = 0; j < irank; j++)
			ni *= id[j] = rnd_in(1, 40);
		sx = shp(t, rank, d);
		si = shp(VTPU_S32, irank, id);
		x = param(gr, 0, sx);
		idx = param(gr, 1, si);
		y = vtpu_g_gather(gr, x, idx, axis, true);
		ASSERT_LE(0, y) TH_LOG("%s", g->err);
		ASSERT_EQ(0, vtpu_g_outputs(gr, 1, &y));
		params[0] = malloc(ne * type_size(t));
		params[1] = iv = malloc(ni * sizeof(*iv));
		fill_param(params[0], &sx, &any);
		for (j = 0; j < ni; j++)
			iv[j] = rnd_in(-(int)d[axis], (int)d[axis] - 1);
		ASSERT_EQ(0, pass_plan(g, &ps));
		ASSERT_EQ(0, codegen(g, &dev, &prog, err, sizeof(err))) TH_LOG("%s", err);
		ASSERT_EQ(0, execute(&prog, dev.vmem_size, params, outs));
		ASSERT_EQ(0, ir_eval(g, (const void *const *)params, ref));
		for (j = 0; j < shape_elems(&g->nodes[y].shape); j++)
			if (get(outs[0], t, j) != get(ref[0], t, j))
				break;
		EXPECT_EQ(shape_elems(&g->nodes[y].shape), j)
			TH_LOG("it %d type %d axis %d: element %lld", it, t, axis,
			       (long long)j);
		free(outs[0]);
		free(ref[0]);
		outs[0] = ref[0] = NULL;

		/* one index one past the end (or before the start, wrapped) */
		iv[rnd_in(0, (int)ni - 1)] = it % 2 ? (int)d[axis] : -(int)d[axis] - 1;
		EXPECT_EQ(-ERANGE, execute(&prog, dev.vmem_size, params, outs));
		EXPECT_EQ(-ERANGE, ir_eval(g, (const void *const *)params, ref));
		free(outs[0]);
		free(params[0]);
		free(params[1]);
		run_free(&(struct run){ .prog = prog });
		vtpu_graph_free(gr);
		(void)ret;
	}
}

TEST(outputs_that_need_copies)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int a = param(g, 0, shp2(VTPU_F32, 30, 40));
	int64_t d[1] = { 1200 };
	int e = vtpu_g_unary(g, VTPU_EXP, a);
	int re = vtpu_g_reshape(g, e, 1, d);
	int f = vtpu_g_unary(g, VTPU_NEG, re);
	int outs[5] = { a, e, e, re, f };
	float cv[4] = { 1, -2, 3, -4 };
	struct vtpu_shape cs = shp2(VTPU_F32, 2, 2);
	int k = vtpu_g_constant(g, &cs, cv);
	struct run r;

	ASSERT_EQ(0, vtpu_g_outputs(g, 5, outs));
	ASSERT_EQ(0, check_graph(g, 8192, &any, 4e-6, 1e-6, 0, &r));
	EXPECT_EQ(0, r.mismatches);
	run_free(&r);
	outs[2] = k;
	ASSERT_EQ(0, vtpu_g_outputs(g, 5, outs));
	ASSERT_EQ(0, check_graph(g, 8192, &any, 4e-6, 1e-6, 0, &r));
	EXPECT_EQ(0, r.mismatches);
	run_free(&r);
	vtpu_graph_free(g);
}

/* An MLP-like chain: scratch is reused and close to the lower bound. */
TEST(plan_peak_near_lower_bound)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, shp3(VTPU_F32, 1, 64, 128)), h = x, l, i;
	int w[4], bb[4];
	struct run r;

	for (l = 0; l < 4; l++) {
		w[l] = param(g, 1 + 2 * l, shp3(VTPU_F32, 1, 128, 128));
		bb[l] = param(g, 2 + 2 * l, shp3(VTPU_F32, 1, 64, 128));
	}
	for (l = 0; l < 4; l++) {
		h = matmul(g, h, w[l], false, false);
		h = vtpu_g_binary(g, VTPU_ADD, h, bb[l]);
		h = vtpu_g_unary(g, VTPU_TANH, h);
	}
	ASSERT_EQ(0, vtpu_g_outputs(g, 1, &h));
	/* four layers of f32 sums against double: loose on purpose */
	ASSERT_EQ(0, check_graph(g, 65536, &any, 1e-3, 1e-3, 0, &r));
	EXPECT_EQ(0, r.mismatches);
	EXPECT_LT(0, r.plan.scratch_lower_bound);
	EXPECT_LE(r.plan.scratch_peak * 10, r.plan.scratch_lower_bound * 11);
	/* 11 intermediates of 32 KiB each, never more than two live */
	EXPECT_EQ(2 * 64 * 128 * 4, r.plan.scratch_peak);
	for (i = 0; i < g->ir.n; i++)
		if (g->ir.nodes[i].arena == A_SCRATCH)
			EXPECT_EQ(0, g->ir.nodes[i].offset % 64);
	run_free(&r);
	vtpu_graph_free(g);
}

TEST(pred_outputs_are_refused)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_device_params dev = { .vmem_size = 65536 };
	struct vtpu_program prog;
	struct plan_stats st;
	int a = param(g, 0, shp2(VTPU_F32, 4, 4));
	int c = vtpu_g_compare(g, VTPU_LT, a, a);
	char err[128];

	ASSERT_EQ(0, vtpu_g_outputs(g, 1, &c));
	ASSERT_EQ(0, pass_plan(&g->ir, &st));
	EXPECT_EQ(-ENOTSUP, codegen(&g->ir, &dev, &prog, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "pred"));
	vtpu_graph_free(g);
}

TEST(disasm_names_ops_and_traces)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int a = param(g, 0, shp3(VTPU_F32, 1, 16, 16));
	int y = matmul(g, a, a, false, true);
	int z = vtpu_g_unary(g, VTPU_RELU, y);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct run r;

	kern(g, y, 0);
	kern(g, z, 0);
	ASSERT_EQ(0, vtpu_g_outputs(g, 1, &z));
	ASSERT_EQ(0, check_graph(g, 65536, &any, 1e-5, 1e-30, 1, &r));
	ASSERT_EQ(0, vtpu_disasm(r.prog.binary, r.prog.size, f));
	fclose(f);
	EXPECT_NE(NULL, strstr(buf, "TRACE 0 \"k0:p_matmul+relu\""));
	EXPECT_NE(NULL, strstr(buf, "MATMUL.tb f32[16x16 @0x0 s16]"));
	EXPECT_NE(NULL, strstr(buf, "DMA_LOAD"));
	EXPECT_NE(NULL, strstr(buf, "UNARY.RELU"));
	EXPECT_NE(NULL, strstr(buf, "END"));
	EXPECT_EQ(-EINVAL, vtpu_disasm(r.prog.binary, r.prog.size - 1, stdout));
	free(buf);
	run_free(&r);
	vtpu_graph_free(g);
}

TEST_HARNESS_MAIN
