// SPDX-License-Identifier: MIT
/*
 * Description: the whole compiler, end to end. Graphs of every op, fused
 * patterns, multi-layer models and HLO modules are compiled, run on the
 * userspace executor and compared with the reference evaluator (double
 * precision, independent of the lowering and the codegen).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host_pool.h"
#include "ir.h"
#include "vtpu_asm.h"
#include "vtpu_compiler.h"
#include "vtpu_exec.h"

#include "kselftest_harness.h"

static const struct vtpu_device_params dev_big = {
	.vmem_size = 1 << 20, .num_cores = 2, .hbm_size = 64 << 20,
};
/* Small enough that most tensors below must be tiled. */
static const struct vtpu_device_params dev_small = {
	.vmem_size = 16 << 10, .num_cores = 2, .hbm_size = 64 << 20,
};

static unsigned int rng = 12345;

static float frand(void)
{
	rng = rng * 1103515245u + 12345u;
	return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void *random_tensor(const struct vtpu_shape *s)
{
	int64_t i, n = shape_elems(s);
	void *p = calloc(n ? n : 1, type_size(s->type));

	for (i = 0; p && i < n; i++) {
		float v = frand();

		if (s->type == VTPU_F32)
			((float *)p)[i] = v;
		else if (s->type == VTPU_S32)
			((int32_t *)p)[i] = (int32_t)(v * 100);
		else if (s->type == VTPU_PRED)
			((uint8_t *)p)[i] = v > 0;
		else if (s->type == VTPU_BF16) {
			uint32_t u;

			memcpy(&u, &v, 4);
			((uint16_t *)p)[i] = u >> 16;
		}
	}
	return p;
}

/*
 * Runs @prog on the userspace executor with @params; fills @outs. With
 * @ways > 1, as the host backend runs it on that many cores: helper
 * threads take their lanes (or shards of big instructions).
 */
static int run_program_on(const struct vtpu_program *prog,
			  const struct vtpu_device_params *dev,
			  void *const *params, void **outs, int ways)
{
	struct vtpu_binding_desc desc[VTPU_MAX_BINDINGS];
	struct vtpu_exec_binding eb[VTPU_MAX_BINDINGS];
	struct vtpu_prog_error perr;
	struct vtpu_prog_info info;
	void *scratch = NULL, *vmem;
	struct vtpu_exec e;
	int i, ret;

	if (prog->nbindings > VTPU_MAX_BINDINGS)
		return -E2BIG;
	for (i = 0; i < prog->nbindings; i++) {
		const struct vtpu_binding_info *b = &prog->bindings[i];

		desc[i].size = b->size;
		eb[i].size = b->size;
		switch (b->role) {
		case VTPU_BIND_PARAM:
			desc[i].access = VTPU_ACCESS_READ;
			eb[i].data = params[b->index];
			break;
		case VTPU_BIND_OUTPUT:
			desc[i].access = VTPU_ACCESS_WRITE;
			eb[i].data = outs[b->index] = calloc(1, b->size);
			break;
		case VTPU_BIND_WEIGHTS:
			desc[i].access = VTPU_ACCESS_READ;
			eb[i].data = (void *)prog->weights;
			break;
		default:
			desc[i].access = VTPU_ACCESS_READ | VTPU_ACCESS_WRITE;
			eb[i].data = scratch = calloc(1, b->size);
			break;
		}
	}
	ret = vtpu_prog_validate(prog->binary, prog->size, desc,
				 prog->nbindings, dev->vmem_size, &info, &perr);
	if (ret) {
		fprintf(stderr, "# program rejected at %d: %s\n", perr.insn,
			perr.why);
		free(scratch);
		return ret;
	}
	vmem = calloc(1, dev->vmem_size);
	vtpu_exec_init(&e, &info, eb, vmem);
	if (ways > 1) {
		struct host_pool *pool = host_pool_create(ways - 1);
		struct vtpu_exec_par par;
		uint64_t insns;

		if (!pool) {
			ret = -errno;
		} else {
			host_pool_bind(pool, &e, &par);
			e.par = &par;
			ret = host_pool_run_lanes(pool, &e, &insns);
			ret = ret == 1 ? 0 : ret ? ret : -EIO;
			if (!ret && insns != info.insn_count)
				ret = -EILSEQ;
			host_pool_destroy(pool);
		}
	} else {
		while (!vtpu_exec_step(&e, 4096))
			;
		ret = 0;
	}
	free(vmem);
	free(scratch);
	return ret;
}

static int run_program(const struct vtpu_program *prog,
		       const struct vtpu_device_params *dev,
		       void *const *params, void **outs)
{
	return run_program_on(prog, dev, params, outs, 1);
}

/* Largest |got - want| / (atol + rtol |want|) over an output. */
static double worst(const struct vtpu_shape *s, const void *got,
		    const void *want, double atol, double rtol)
{
	int64_t i, n = shape_elems(s);
	double w = 0;

	for (i = 0; i < n; i++) {
		double a, b, d;

		switch (s->type) {
		case VTPU_F32:
			a = ((const float *)got)[i];
			b = ((const float *)want)[i];
			break;
		case VTPU_S32:
			a = ((const int32_t *)got)[i];
			b = ((const int32_t *)want)[i];
			break;
		case VTPU_PRED:
			a = ((const uint8_t *)got)[i];
			b = ((const uint8_t *)want)[i];
			break;
		default: {
			uint32_t ua = (uint32_t)((const uint16_t *)got)[i] << 16;
			uint32_t ub = (uint32_t)((const uint16_t *)want)[i] << 16;
			float fa, fb;

			memcpy(&fa, &ua, 4);
			memcpy(&fb, &ub, 4);
			a = fa;
			b = fb;
		}
		}
		if (a == b || (isnan(a) && isnan(b)))
			continue;
		d = fabs(a - b) / (atol + rtol * fabs(b));
		if (!(d <= w))
			w = isnan(d) ? INFINITY : d;
	}
	return w;
}

/*
 * Compiles @g for @dev, runs it on random inputs, compares every output
 * with ir_eval() within atol + rtol * |ref|. Returns the worst ratio
 * (<= 1 passes) or a negative errno.
 */
static double check_graph(struct vtpu_graph *g,
			  const struct vtpu_device_params *dev,
			  double atol, double rtol, int no_fusion,
			  struct vtpu_program **keep)
{
	struct vtpu_compile_options opts = { .no_fusion = no_fusion };
	void *params[16] = { 0 }, *outs[16] = { 0 }, *refs[16] = { 0 };
	struct vtpu_program *prog = NULL;
	char err[256];
	double w = 0;
	int i, ret;

	if (vtpu_graph_error(g)) {
		fprintf(stderr, "# graph: %s\n", vtpu_graph_error(g));
		return -EINVAL;
	}
	ret = vtpu_compile(g, dev, &opts, &prog, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "# compile: %s\n", err);
		return ret;
	}
	for (i = 0; i < g->ir.n; i++)
		if (g->ir.nodes[i].op == OP_PARAM)
			params[g->ir.nodes[i].a.param.index] =
				random_tensor(&g->ir.nodes[i].shape);
	ret = ir_eval(&g->ir, (const void *const *)params, refs);
	if (!ret)
		ret = run_program(prog, dev, params, outs);
	for (i = 0; !ret && i < g->ir.nout; i++) {
		double wi = worst(&g->ir.nodes[g->ir.outputs[i]].shape, outs[i],
				  refs[i], atol, rtol);

		if (wi > w)
			w = wi;
	}
	for (i = 0; i < 16; i++) {
		free(params[i]);
		free(outs[i]);
		free(refs[i]);
	}
	if (keep && !ret)
		*keep = prog;
	else
		vtpu_program_free(prog);
	return ret ? ret : w;
}

static struct vtpu_shape f32(int rank, const int64_t *dims)
{
	struct vtpu_shape s = { .type = VTPU_F32, .rank = rank };

	memcpy(s.dims, dims, rank * sizeof(int64_t));
	return s;
}

/* Fused and unfused; a negative result is an error, not a pass. */
#define CHECK(g, dev, atol, rtol) do {					\
		double __w = check_graph((g), (dev), (atol), (rtol), 0, NULL); \
		EXPECT_TRUE(__w >= 0 && __w <= 1.0)			\
			TH_LOG("worst error ratio %g", __w);		\
		__w = check_graph((g), (dev), (atol), (rtol), 1, NULL);	\
		EXPECT_TRUE(__w >= 0 && __w <= 1.0)			\
			TH_LOG("unfused: worst ratio %g", __w);		\
	} while (0)

TEST(every_elementwise_op)
{
	static const int64_t d[] = { 7, 33 };
	struct vtpu_shape s = f32(2, d);
	int u, b;

	for (u = VTPU_NEG; u <= VTPU_GELU; u++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int x = vtpu_g_parameter(g, 0, &s, "x"), y;

		/* log/sqrt/rsqrt want positive inputs: abs first. */
		if (u == VTPU_LOG || u == VTPU_SQRT || u == VTPU_RSQRT)
			x = vtpu_g_unary(g, VTPU_ABS, x);
		y = vtpu_g_unary(g, u, x);
		vtpu_g_outputs(g, 1, &y);
		CHECK(g, &dev_big, 1e-6, 1e-5);
		vtpu_graph_free(g);
	}
	for (b = VTPU_ADD; b <= VTPU_POW; b++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int x = vtpu_g_parameter(g, 0, &s, "x");
		int y = vtpu_g_parameter(g, 1, &s, "y"), z;

		if (b == VTPU_POW)
			x = vtpu_g_unary(g, VTPU_ABS, x);
		z = vtpu_g_binary(g, b, x, y);
		vtpu_g_outputs(g, 1, &z);
		CHECK(g, &dev_big, 1e-5, 1e-5);
		vtpu_graph_free(g);
	}
}

TEST(compare_and_select)
{
	static const int64_t d[] = { 5, 17 };
	struct vtpu_shape s = f32(2, d);
	int dir;

	for (dir = VTPU_EQ; dir <= VTPU_GE; dir++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int x = vtpu_g_parameter(g, 0, &s, "x");
		int y = vtpu_g_parameter(g, 1, &s, "y");
		int p = vtpu_g_compare(g, dir, x, y);
		int z = vtpu_g_select(g, p, x, y);

		vtpu_g_outputs(g, 1, &z);
		CHECK(g, &dev_big, 0, 0 + 1e-30);
		vtpu_graph_free(g);
	}
}

TEST(matmul_tiles_when_vmem_is_small)
{
	static const int64_t m[][3] = { { 1, 1, 1 }, { 8, 16, 4 },
					{ 33, 70, 45 }, { 128, 96, 160 } };
	unsigned int i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int64_t a[] = { m[i][0], m[i][1] }, b[] = { m[i][1], m[i][2] };
		struct vtpu_shape sa = f32(2, a), sb = f32(2, b);
		int x = vtpu_g_parameter(g, 0, &sa, "a");
		int y = vtpu_g_parameter(g, 1, &sb, "b");
		int z = vtpu_g_matmul(g, x, y);

		vtpu_g_outputs(g, 1, &z);
		CHECK(g, &dev_big, 1e-5, 1e-4);
		CHECK(g, &dev_small, 1e-5, 1e-4);
		vtpu_graph_free(g);
	}
}

/*
 * Epilogues that read the matmul's value more than once: SiLU,
 * x * sigmoid(x), and x * relu(x) + x: each one kernel with its matmul
 * (fuse.c), against the reference, on both VMEMs.
 */
TEST(matmul_epilogue_reads_its_value_twice)
{
	static const int64_t a[] = { 37, 50 }, b[] = { 50, 70 };
	struct vtpu_shape sa = f32(2, a), sb = f32(2, b);
	struct vtpu_compile_options opts = { 0 };
	struct vtpu_program *prog = NULL;
	int hs;

	for (hs = 0; hs < 2; hs++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int x = vtpu_g_parameter(g, 0, &sa, "a");
		int w = vtpu_g_parameter(g, 1, &sb, "b");
		int m = vtpu_g_matmul(g, x, w), y;
		char err[256];

		if (hs)
			y = vtpu_g_binary(g, VTPU_ADD, vtpu_g_binary(g, VTPU_MUL,
				m, vtpu_g_unary(g, VTPU_RELU, m)), m);
		else
			y = vtpu_g_binary(g, VTPU_MUL, m,
					  vtpu_g_unary(g, VTPU_LOGISTIC, m));
		vtpu_g_outputs(g, 1, &y);
		ASSERT_EQ(NULL, vtpu_graph_error(g));
		ASSERT_EQ(0, vtpu_compile(g, &dev_big, &opts, &prog, err,
					  sizeof(err)))
			TH_LOG("%s", err);
		EXPECT_EQ(1, prog->cost.kernel_count) TH_LOG("case %d", hs);
		vtpu_program_free(prog);
		CHECK(g, &dev_big, 1e-5, 1e-4);
		CHECK(g, &dev_small, 1e-5, 1e-4);
		vtpu_graph_free(g);
	}
}

TEST(dot_general_batch_and_contracting_dims)
{
	static const int64_t a[] = { 3, 5, 4 }, b[] = { 4, 3, 6 };
	struct vtpu_shape sa = f32(3, a), sb = f32(3, b);
	struct vtpu_dot_dims dd = {
		.nbatch = 1, .ncontract = 1,
		.lhs_batch = { 0 }, .rhs_batch = { 1 },
		.lhs_contract = { 2 }, .rhs_contract = { 0 },
	};
	struct vtpu_graph *g = vtpu_graph_new();
	int x = vtpu_g_parameter(g, 0, &sa, "a");
	int y = vtpu_g_parameter(g, 1, &sb, "b");
	int z = vtpu_g_dot(g, x, y, &dd);

	vtpu_g_outputs(g, 1, &z);
	CHECK(g, &dev_big, 1e-5, 1e-4);
	vtpu_graph_free(g);
}

TEST(data_movement_ops)
{
	static const int64_t d[] = { 4, 6, 5 };
	struct vtpu_shape s = f32(3, d);
	struct vtpu_graph *g = vtpu_graph_new();
	int x = vtpu_g_parameter(g, 0, &s, "x");
	int perm[] = { 2, 0, 1 };
	int64_t rs[] = { 24, 5 }, bd[] = { 2, 4, 6, 5 };
	int bdims[] = { 1, 2, 3 };
	int64_t st[] = { 1, 0, 1 }, li[] = { 4, 6, 5 }, sp[] = { 2, 3, 2 };
	int64_t lo[] = { 1, 0, 2 }, hi[] = { 0, 2, 1 };
	int outs[6], parts[2];

	outs[0] = vtpu_g_transpose(g, x, perm);
	outs[1] = vtpu_g_reshape(g, x, 2, rs);
	outs[2] = vtpu_g_broadcast(g, x, 4, bd, bdims);
	outs[3] = vtpu_g_slice(g, x, st, li, sp);
	outs[4] = vtpu_g_pad(g, x, lo, hi, 0.5);
	parts[0] = x;
	parts[1] = vtpu_g_unary(g, VTPU_NEG, x);
	outs[5] = vtpu_g_concat(g, 2, parts, 1);
	vtpu_g_outputs(g, 6, outs);
	CHECK(g, &dev_big, 0, 1e-30);
	CHECK(g, &dev_small, 0, 1e-30);
	vtpu_graph_free(g);
}

TEST(reductions_over_any_axes)
{
	static const int64_t d[] = { 3, 4, 5 };
	static const int axes[][3] = { { 0 }, { 1 }, { 2 }, { 0, 2 }, { 0, 1, 2 } };
	static const int naxes[] = { 1, 1, 1, 2, 3 };
	struct vtpu_shape s = f32(3, d);
	unsigned int i;
	int op;

	for (i = 0; i < 5; i++)
		for (op = VTPU_REDUCE_SUM_OP; op <= VTPU_REDUCE_MEAN_OP; op++) {
			struct vtpu_graph *g = vtpu_graph_new();
			int x = vtpu_g_parameter(g, 0, &s, "x");
			int y = vtpu_g_reduce(g, op, x, naxes[i], axes[i]);

			vtpu_g_outputs(g, 1, &y);
			CHECK(g, &dev_big, 1e-5, 1e-5);
			vtpu_graph_free(g);
		}
}

TEST(softmax_and_log_softmax)
{
	static const int64_t d[] = { 6, 40 };
	struct vtpu_shape s = f32(2, d);
	int axis;

	for (axis = 0; axis < 2; axis++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int x = vtpu_g_parameter(g, 0, &s, "x");
		int o[2] = { vtpu_g_softmax(g, x, axis),
			     vtpu_g_log_softmax(g, x, axis) };

		vtpu_g_outputs(g, 2, o);
		CHECK(g, &dev_big, 1e-6, 1e-5);
		vtpu_graph_free(g);
	}
}

TEST(conv2d_strides_padding_dilation_groups)
{
	static const struct vtpu_conv_params ps[] = {
		{ { 1, 1 }, { 0, 0 }, { 0, 0 }, { 1, 1 }, 1 },
		{ { 2, 1 }, { 1, 1 }, { 1, 0 }, { 1, 1 }, 1 },
		{ { 1, 1 }, { 2, 2 }, { 2, 2 }, { 2, 2 }, 2 },
	};
	unsigned int i;

	for (i = 0; i < 3; i++) {
		int64_t xi[] = { 2, 4, 9, 8 }, ki[] = { 6, 4 / ps[i].groups, 3, 3 };
		struct vtpu_shape sx = f32(4, xi), sk = f32(4, ki);
		struct vtpu_graph *g = vtpu_graph_new();
		int x = vtpu_g_parameter(g, 0, &sx, "x");
		int k = vtpu_g_parameter(g, 1, &sk, "k");
		int y = vtpu_g_conv2d(g, x, k, &ps[i]);

		vtpu_g_outputs(g, 1, &y);
		CHECK(g, &dev_big, 1e-5, 1e-4);
		vtpu_graph_free(g);
	}
}

/*
 * Depthwise convolutions (one kernel per channel) have a kernel of their
 * own, P_DWCONV (compiler/dwconv.c): random windows, strides that differ
 * between the axes, dilations, padding on any side, channel counts past
 * its chunk of 256, bf16, and a VMEM so small that bands hold a row or
 * two. Each must lower to P_DWCONV, not to the matmul.
 */
/* Nodes of @op in @g once lowered. */
static int count_lowered(struct __test_metadata *_metadata,
			 struct vtpu_graph *g, enum ir_op op)
{
	struct ir_graph *low = ir_clone(&g->ir);
	int i, n = 0;

	ASSERT_NE(NULL, low);
	ASSERT_EQ(0, pass_lower(low));
	for (i = 0; i < low->n; i++)
		n += low->nodes[i].op == op;
	vtpu_graph_free((struct vtpu_graph *)low);
	return n;
}

TEST(depthwise_conv_every_window)
{
	static const int64_t chans[] = { 1, 3, 17, 300 };
	int it, i;

	rng = 4242;
	for (it = 0; it < 48; it++) {
		struct vtpu_conv_params p = { 0 };
		int64_t xi[4], ki[4], ext;
		enum vtpu_type t = it % 5 == 4 ? VTPU_BF16 : VTPU_F32;
		struct vtpu_shape sx, sk;
		struct vtpu_graph *g;
		int x, k, y;

		xi[0] = 1 + it % 2;
		xi[1] = chans[it % 4];
		ki[0] = xi[1];
		ki[1] = 1;
		p.groups = xi[1];
		for (i = 0; i < 2; i++) {
			ki[2 + i] = 1 + (it / 4 + 3 * i) % 5;
			p.stride[i] = 1 + (it / (2 + i)) % 3;
			p.dilation[i] = 1 + (it / 7 + i) % 2;
			p.pad_lo[i] = (it + i) % 3;
			p.pad_hi[i] = (it / 3 + i) % 3;
			ext = (ki[2 + i] - 1) * p.dilation[i] + 1;
			/* 300 channels: small images keep the reference quick */
			xi[2 + i] = xi[1] == 300 ? 6 : 1 + (it * 7 + 5 * i) % 19;
			if (xi[2 + i] + p.pad_lo[i] + p.pad_hi[i] < ext)
				xi[2 + i] = ext;
		}
		sx = f32(4, xi);
		sk = f32(4, ki);
		sx.type = sk.type = t;
		g = vtpu_graph_new();
		x = vtpu_g_parameter(g, 0, &sx, "x");
		k = vtpu_g_parameter(g, 1, &sk, "k");
		y = vtpu_g_conv2d(g, x, k, &p);
		vtpu_g_outputs(g, 1, &y);
		ASSERT_EQ(0, g->ir.errcode) TH_LOG("%s", g->ir.err);
		EXPECT_EQ(1, count_lowered(_metadata, g, OP_P_DWCONV));
		TH_LOG("case %d: x %lldx%lldx%lldx%lld k %lldx%lld stride %dx%d dilation %dx%d pad %d,%d/%d,%d %s",
		       it, (long long)xi[0], (long long)xi[1], (long long)xi[2],
		       (long long)xi[3], (long long)ki[2], (long long)ki[3],
		       p.stride[0], p.stride[1], p.dilation[0], p.dilation[1],
		       p.pad_lo[0], p.pad_lo[1], p.pad_hi[0], p.pad_hi[1],
		       type_name(t));
		CHECK(g, &dev_big, 1e-5, t == VTPU_BF16 ? 1e-2 : 1e-4);
		CHECK(g, &dev_small, 1e-5, t == VTPU_BF16 ? 1e-2 : 1e-4);
		vtpu_graph_free(g);
	}
}

/*
 * The sums of a depthwise convolution are fused: each output is its taps
 * in (kh, kw) order, the first one's product rounded to f32, then
 * fmaf(x, w, sum) a tap, one rounding each (BINARY MADD); padding
 * enters as +0. Bit for bit, on a VMEM big enough for one band and on
 * one so small that bands hold a row or two; and the same sums rounded
 * twice a tap must differ somewhere, or the inputs test nothing.
 */
static void dwconv_ref(const float *x, const float *k, const int64_t *xi,
		       const int64_t *ki, const struct vtpu_conv_params *p,
		       int64_t oh_n, int64_t ow_n, bool fused, float *out)
{
	int64_t n, c, oh, ow, kh, kw, ih, iw, t;
	volatile float prod;
	float xv, acc;

	for (n = 0; n < xi[0]; n++)
	for (c = 0; c < xi[1]; c++)
	for (oh = 0; oh < oh_n; oh++)
	for (ow = 0; ow < ow_n; ow++) {
		acc = 0;
		for (t = 0, kh = 0; kh < ki[2]; kh++)
			for (kw = 0; kw < ki[3]; kw++, t++) {
				ih = oh * p->stride[0] + kh * p->dilation[0] -
				     p->pad_lo[0];
				iw = ow * p->stride[1] + kw * p->dilation[1] -
				     p->pad_lo[1];
				xv = ih < 0 || ih >= xi[2] || iw < 0 ||
				     iw >= xi[3] ? 0.0f :
				     x[((n * xi[1] + c) * xi[2] + ih) * xi[3] + iw];
				prod = xv * k[(c * ki[2] + kh) * ki[3] + kw];
				if (!t)
					acc = prod;
				else if (fused)
					acc = fmaf(xv, k[(c * ki[2] + kh) * ki[3] + kw],
						   acc);
				else
					acc = acc + prod;
			}
		out[((n * xi[1] + c) * oh_n + oh) * ow_n + ow] = acc;
	}
}

TEST(depthwise_conv_sums_are_fused_multiply_adds)
{
	static const struct vtpu_conv_params ps[] = {
		{ { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 5 },
		{ { 2, 1 }, { 0, 2 }, { 1, 1 }, { 1, 2 }, 5 },
	};
	const struct vtpu_device_params *devs[] = { &dev_big, &dev_small };
	unsigned int i, d;

	rng = 777;
	for (i = 0; i < ARRAY_SIZE(ps); i++)
	for (d = 0; d < ARRAY_SIZE(devs); d++) {
		int64_t xi[] = { 2, 5, 9, 8 }, ki[] = { 5, 1, 3, 3 }, oi[4];
		struct vtpu_shape sx = f32(4, xi), sk = f32(4, ki);
		struct vtpu_compile_options opts = { 0 };
		struct vtpu_graph *g = vtpu_graph_new();
		void *params[2], *outs[1] = { NULL };
		struct vtpu_program *prog = NULL;
		int64_t j, n, differ = 0, bad = 0;
		float *want, *twice;
		char err[256];
		int x, k, y;

		x = vtpu_g_parameter(g, 0, &sx, "x");
		k = vtpu_g_parameter(g, 1, &sk, "k");
		y = vtpu_g_conv2d(g, x, k, &ps[i]);
		vtpu_g_outputs(g, 1, &y);
		ASSERT_EQ(0, g->ir.errcode) TH_LOG("%s", g->ir.err);
		ASSERT_EQ(1, count_lowered(_metadata, g, OP_P_DWCONV));
		memcpy(oi, g->ir.nodes[y].shape.dims, sizeof(oi));
		n = oi[0] * oi[1] * oi[2] * oi[3];
		ASSERT_EQ(0, vtpu_compile(g, devs[d], &opts, &prog, err,
					  sizeof(err))) TH_LOG("%s", err);
		params[0] = random_tensor(&sx);
		params[1] = random_tensor(&sk);
		want = malloc(n * sizeof(*want));
		twice = malloc(n * sizeof(*twice));
		ASSERT_TRUE(params[0] && params[1] && want && twice);
		dwconv_ref(params[0], params[1], xi, ki, &ps[i], oi[2], oi[3],
			   true, want);
		dwconv_ref(params[0], params[1], xi, ki, &ps[i], oi[2], oi[3],
			   false, twice);
		ASSERT_EQ(0, run_program(prog, devs[d], params, outs));
		for (j = 0; j < n; j++) {
			float got = ((float *)outs[0])[j];

			differ += want[j] != twice[j];
			if (!memcmp(&got, &want[j], sizeof(got)) || bad++)
				continue;
			TH_LOG("case %u, output %lld: %a, want %a", i,
			       (long long)j, got, want[j]);
		}
		EXPECT_EQ(0, bad);
		EXPECT_LT(0, differ);
		free(twice);
		free(want);
		free(outs[0]);
		free(params[1]);
		free(params[0]);
		vtpu_program_free(prog);
		vtpu_graph_free(g);
	}
}

/*
 * Windows dwconv.c does not take (a band wider than DWCONV_MAX_BAND, a
 * stride above 32) stay on the matmul path, and still compute right.
 */
TEST(depthwise_conv_too_wide_for_a_band_is_a_matmul)
{
	static const struct {
		int64_t w;
		int stride;
	} cases[] = { { 3000, 1 }, { 70, 40 } };
	unsigned int c;

	for (c = 0; c < 2; c++) {
		struct vtpu_conv_params p = {
			{ 1, cases[c].stride }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 2,
		};
		int64_t xi[] = { 1, 2, 3, cases[c].w }, ki[] = { 2, 1, 3, 3 };
		struct vtpu_shape sx = f32(4, xi), sk = f32(4, ki);
		struct vtpu_graph *g = vtpu_graph_new();
		int x = vtpu_g_parameter(g, 0, &sx, "x");
		int k = vtpu_g_parameter(g, 1, &sk, "k");
		int y = vtpu_g_conv2d(g, x, k, &p);

		vtpu_g_outputs(g, 1, &y);
		ASSERT_EQ(0, g->ir.errcode) TH_LOG("%s", g->ir.err);
		EXPECT_EQ(0, count_lowered(_metadata, g, OP_P_DWCONV));
		CHECK(g, &dev_big, 1e-5, 1e-4);
		vtpu_graph_free(g);
	}
}

/* Nodes fuse.c made virtual broadcasts in @g's lowered, fused clone. */
static int count_virtual(struct __test_metadata *_metadata,
			 struct vtpu_graph *g)
{
	struct ir_graph *low = ir_clone(&g->ir);
	int i, n = 0;

	ASSERT_NE(NULL, low);
	ASSERT_EQ(0, pass_lower(low));
	ASSERT_EQ(0, pass_simplify(low));
	ASSERT_EQ(0, pass_fuse(low, true));
	for (i = 0; i < low->n; i++)
		n += low->nodes[i].virt;
	vtpu_graph_free((struct vtpu_graph *)low);
	return n;
}

/*
 * Broadcasts read through, never materialised (fuse.c's virtual views):
 * per row and per column of a chain ([B, S, D] with a [B, S] mean and a
 * [D] scale), scalars from a parameter and from constants, as the first
 * operand of operations that do not commute (expanded in VMEM), of a
 * compare (swapped), of SELECT's three operands, from s32 and bf16
 * memory; and a matmul's epilogue with a bias per column and per row.
 */
TEST(broadcasts_are_read_through)
{
	int64_t dx[] = { 3, 5, 40 }, dm[] = { 3, 5 }, dg[] = { 40 }, d0[] = { 1 };
	int64_t dw[] = { 40, 24 }, dbr[] = { 24 }, dbc[] = { 15 };
	int64_t dmm[] = { 15, 24 }, d2[] = { 15, 40 };
	struct vtpu_shape sx = f32(3, dx), sm = f32(2, dm), sg = f32(1, dg);
	struct vtpu_shape s0 = f32(0, d0), si = f32(2, dm), sh = f32(1, dg);
	struct vtpu_shape sw = f32(2, dw), sbr = f32(1, dbr), sbc = f32(1, dbc);
	struct vtpu_graph *g = vtpu_graph_new();
	int bm[] = { 0, 1 }, bg[] = { 2 }, br[] = { 1 }, bc[] = { 0 };
	int x, m, ga, sc, iv, hv, w, b1, b2, one, y, z, p, q, mm, outs[3];
	float c1 = 1.5f;

	si.type = VTPU_S32;
	sh.type = VTPU_BF16;
	x = vtpu_g_parameter(g, 0, &sx, "x");
	m = vtpu_g_parameter(g, 1, &sm, "mean");
	ga = vtpu_g_parameter(g, 2, &sg, "gamma");
	sc = vtpu_g_parameter(g, 3, &s0, "scale");
	iv = vtpu_g_parameter(g, 4, &si, "ints");
	hv = vtpu_g_parameter(g, 5, &sh, "halves");
	w = vtpu_g_parameter(g, 6, &sw, "w");
	b1 = vtpu_g_parameter(g, 7, &sbr, "bias_row");
	b2 = vtpu_g_parameter(g, 8, &sbc, "bias_col");
	one = vtpu_g_constant(g, &s0, &c1);
	y = vtpu_g_binary(g, VTPU_SUB, x, vtpu_g_broadcast(g, m, 3, dx, bm));
	y = vtpu_g_binary(g, VTPU_MUL, vtpu_g_broadcast(g, ga, 3, dx, bg), y);
	y = vtpu_g_binary(g, VTPU_DIV, vtpu_g_broadcast(g, sc, 3, dx, NULL), y);
	y = vtpu_g_binary(g, VTPU_SUB, vtpu_g_broadcast(g, one, 3, dx, NULL), y);
	z = vtpu_g_binary(g, VTPU_MAX, y,
			  vtpu_g_convert(g, vtpu_g_broadcast(g, iv, 3, dx, bm),
					 VTPU_F32));
	p = vtpu_g_compare(g, VTPU_LT, vtpu_g_broadcast(g, m, 3, dx, bm), z);
	q = vtpu_g_select(g, p, vtpu_g_broadcast(g, one, 3, dx, NULL),
			  vtpu_g_convert(g, vtpu_g_broadcast(g, hv, 3, dx, bg),
					 VTPU_F32));
	outs[0] = vtpu_g_binary(g, VTPU_ADD, z, q);
	outs[1] = vtpu_g_unary(g, VTPU_EXP,
			       vtpu_g_broadcast(g, ga, 3, dx, bg));
	mm = vtpu_g_matmul(g, vtpu_g_reshape(g, x, 2, d2), w);
	mm = vtpu_g_binary(g, VTPU_ADD, mm, vtpu_g_broadcast(g, b1, 2, dmm, br));
	outs[2] = vtpu_g_binary(g, VTPU_SUB,
				vtpu_g_broadcast(g, b2, 2, dmm, bc), mm);
	vtpu_g_outputs(g, 3, outs);
	ASSERT_EQ(0, g->ir.errcode) TH_LOG("%s", g->ir.err);
	/* every broadcast above but the one the output copy reads */
	EXPECT_LE(9, count_virtual(_metadata, g));
	CHECK(g, &dev_big, 1e-5, 1e-4);
	CHECK(g, &dev_small, 1e-5, 1e-4);
	vtpu_graph_free(g);
}

/* x -> relu(x W1 + b1) W2 + b2 -> softmax, with constant weights. */
static struct vtpu_graph *mlp(int batch, int in, int hidden, int out)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t dx[] = { batch, in }, d1[] = { in, hidden }, d2[] = { hidden, out };
	int64_t db1[] = { hidden }, db2[] = { out };
	int64_t h[] = { batch, hidden }, o[] = { batch, out };
	struct vtpu_shape sx = f32(2, dx), s1 = f32(2, d1), s2 = f32(2, d2);
	struct vtpu_shape sb1 = f32(1, db1), sb2 = f32(1, db2);
	int bd[] = { 1 }, x, w1, b1, w2, b2, y;
	void *c;

	x = vtpu_g_parameter(g, 0, &sx, "x");
	c = random_tensor(&s1);
	w1 = vtpu_g_constant(g, &s1, c);
	free(c);
	c = random_tensor(&sb1);
	b1 = vtpu_g_constant(g, &sb1, c);
	free(c);
	c = random_tensor(&s2);
	w2 = vtpu_g_constant(g, &s2, c);
	free(c);
	c = random_tensor(&sb2);
	b2 = vtpu_g_constant(g, &sb2, c);
	free(c);
	y = vtpu_g_matmul(g, x, w1);
	y = vtpu_g_binary(g, VTPU_ADD, y, vtpu_g_broadcast(g, b1, 2, h, bd));
	y = vtpu_g_unary(g, VTPU_RELU, y);
	y = vtpu_g_matmul(g, y, w2);
	y = vtpu_g_binary(g, VTPU_ADD, y, vtpu_g_broadcast(g, b2, 2, o, bd));
	y = vtpu_g_softmax(g, y, 1);
	vtpu_g_outputs(g, 1, &y);
	return g;
}

/*
 * A small elementwise kernel uses as much VMEM as its tiles, not the
 * core's megabyte: the core clears a program's VMEM before every job,
 * and a 4-float add whose slots were spread over VMEM cost 256 KiB of
 * memset a run. Both chain generators: flat, and rows with a broadcast.
 */
TEST(small_chains_touch_little_vmem)
{
	int64_t sizes[] = { 4, 1000 }, dx[] = { 5, 3 }, db[] = { 3 };
	struct vtpu_program *prog;
	int along = 1, i, x, y, b;
	struct vtpu_graph *g;
	struct vtpu_shape s;

	for (i = 0; i < 2; i++) {
		g = vtpu_graph_new();
		s = f32(1, &sizes[i]);
		x = vtpu_g_parameter(g, 0, &s, "x");
		y = vtpu_g_binary(g, VTPU_MUL, vtpu_g_binary(g, VTPU_ADD, x, x), x);
		y = vtpu_g_unary(g, VTPU_EXP, y);
		ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
		prog = NULL;
		EXPECT_EQ(1, check_graph(g, &dev_big, 1e-6, 1e-5, 0, &prog) <= 1.0);
		ASSERT_NE(NULL, prog);
		/* two values live at once, in 64-byte slots, and no more */
		EXPECT_LE(prog->cost.vmem_bytes, 3 * ((sizes[i] * 4 + 63) & ~63))
			TH_LOG("%lld floats: %llu bytes of VMEM", (long long)sizes[i],
			       (unsigned long long)prog->cost.vmem_bytes);
		vtpu_program_free(prog);
		vtpu_graph_free(g);
	}
	g = vtpu_graph_new();
	s = f32(2, dx);
	x = vtpu_g_parameter(g, 0, &s, "x");
	s = f32(1, db);
	b = vtpu_g_parameter(g, 1, &s, "b");
	y = vtpu_g_binary(g, VTPU_ADD, x, vtpu_g_broadcast(g, b, 2, dx, &along));
	ASSERT_EQ(0, vtpu_g_outputs(g, 1, &y));
	prog = NULL;
	EXPECT_EQ(1, check_graph(g, &dev_big, 1e-6, 1e-6, 0, &prog) <= 1.0);
	ASSERT_NE(NULL, prog);
	EXPECT_LE(prog->cost.vmem_bytes, 4096)
		TH_LOG("[5,3] + [3]: %llu bytes of VMEM",
		       (unsigned long long)prog->cost.vmem_bytes);
	vtpu_program_free(prog);
	vtpu_graph_free(g);
}

TEST(mlp_matches_reference)
{
	struct vtpu_graph *g = mlp(16, 64, 128, 10);

	CHECK(g, &dev_big, 1e-5, 1e-4);
	CHECK(g, &dev_small, 1e-5, 1e-4);
	vtpu_graph_free(g);
}

TEST(small_conv_net_matches_reference)
{
	int64_t xi[] = { 2, 3, 12, 12 }, k1[] = { 8, 3, 3, 3 };
	int64_t k2[] = { 8, 4, 3, 3 };
	struct vtpu_shape sx = f32(4, xi), s1 = f32(4, k1), s2 = f32(4, k2);
	struct vtpu_conv_params p1 = { { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 };
	struct vtpu_conv_params p2 = { { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 2 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = vtpu_g_parameter(g, 0, &sx, "x");
	int w1 = vtpu_g_parameter(g, 1, &s1, "w1");
	int w2 = vtpu_g_parameter(g, 2, &s2, "w2");
	int axes[] = { 2, 3 }, y;

	y = vtpu_g_unary(g, VTPU_RELU, vtpu_g_conv2d(g, x, w1, &p1));
	y = vtpu_g_unary(g, VTPU_RELU, vtpu_g_conv2d(g, y, w2, &p2));
	y = vtpu_g_reduce(g, VTPU_REDUCE_MEAN_OP, y, 2, axes);
	vtpu_g_outputs(g, 1, &y);
	CHECK(g, &dev_big, 1e-5, 1e-4);
	vtpu_graph_free(g);
}

TEST(attention_block_matches_reference)
{
	int64_t dq[] = { 16, 32 }, dk[] = { 32, 16 }, ds[] = { 16, 16 };
	struct vtpu_shape sq = f32(2, dq), sk = f32(2, dk);
	struct vtpu_graph *g = vtpu_graph_new();
	int q = vtpu_g_parameter(g, 0, &sq, "q");
	int kt = vtpu_g_parameter(g, 1, &sk, "kt");
	int v = vtpu_g_parameter(g, 2, &sq, "v");
	int bd[] = { 0 }, s, scale, y;
	int64_t none[1] = { 0 };

	(void)none;
	s = vtpu_g_matmul(g, q, kt);
	scale = vtpu_g_broadcast(g, vtpu_g_scalar(g, 0.17677669f), 2, ds, bd);
	s = vtpu_g_binary(g, VTPU_MUL, s, scale);
	s = vtpu_g_softmax(g, s, 1);
	y = vtpu_g_matmul(g, s, v);
	vtpu_g_outputs(g, 1, &y);
	CHECK(g, &dev_big, 1e-5, 1e-4);
	vtpu_graph_free(g);
}

static const char hlo_dot[] =
	"HloModule dot, entry_computation_layout={(f32[4,8]{1,0}, f32[8,3]{1,0})->f32[4,3]{1,0}}\n"
	"\n"
	"ENTRY %main (a: f32[4,8], b: f32[8,3]) -> f32[4,3] {\n"
	"  %a = f32[4,8]{1,0} parameter(0)\n"
	"  %b = f32[8,3]{1,0} parameter(1)\n"
	"  ROOT %dot = f32[4,3]{1,0} dot(f32[4,8]{1,0} %a, f32[8,3]{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name=\"dot\"}\n"
	"}\n";

static const char hlo_reduce[] =
	"HloModule reduce\n"
	"\n"
	"%add (x: f32[], y: f32[]) -> f32[] {\n"
	"  %x = f32[] parameter(0)\n"
	"  %y = f32[] parameter(1)\n"
	"  ROOT %sum = f32[] add(f32[] %x, f32[] %y)\n"
	"}\n"
	"\n"
	"ENTRY %main (p: f32[6,5]) -> f32[6] {\n"
	"  %p = f32[6,5]{1,0} parameter(0)\n"
	"  %zero = f32[] constant(0)\n"
	"  ROOT %r = f32[6]{0} reduce(f32[6,5]{1,0} %p, f32[] %zero), dimensions={1}, to_apply=%add\n"
	"}\n";

static const char hlo_bcast[] =
	"HloModule bcast\n"
	"ENTRY main {\n"
	"  p = f32[3]{0} parameter(0)\n"
	"  q = f32[2,3]{1,0} parameter(1)\n"
	"  b = f32[2,3]{1,0} broadcast(p), dimensions={1}\n"
	"  t = f32[3,2]{1,0} transpose(q), dimensions={1,0}\n"
	"  m = f32[2,3]{1,0} multiply(b, q)\n"
	"  e = f32[2,3]{1,0} exponential(m)\n"
	"  ROOT out = (f32[2,3]{1,0}, f32[3,2]{1,0}) tuple(e, t)\n"
	"}\n";

TEST(hlo_modules_parse_compile_and_run)
{
	const char *mods[] = { hlo_dot, hlo_reduce, hlo_bcast };
	unsigned int i;

	for (i = 0; i < 3; i++) {
		struct vtpu_graph *g = NULL;
		char err[256];

		ASSERT_EQ(0, vtpu_hlo_parse(mods[i], strlen(mods[i]), &g, err,
					    sizeof(err)))
			TH_LOG("module %u: %s", i, err);
		CHECK(g, &dev_big, 1e-5, 1e-4);
		vtpu_graph_free(g);
	}
}

/*
 * Loops on the device (WHILE, ISA version 4): a trip count that depends
 * on the data; nested loops; a scan far past the unrolling limit with
 * dynamic slices at its counter; a body with weights large enough for
 * the weights binding; each on a big and a tiny VMEM, against ir_eval().
 */
static const char hlo_until[] =
	"HloModule until\n"
	"sum { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b) }\n"
	"body { s = (s32[], f32[5,7]) parameter(0)\n"
	"  i = s32[] get-tuple-element(s), index=0\n"
	"  v = f32[5,7] get-tuple-element(s), index=1\n"
	"  i1 = s32[] add(i, s32[] constant(1))\n"
	"  h = f32[5,7] broadcast(f32[] constant(1.5)), dimensions={}\n"
	"  c = f32[5,7] broadcast(f32[] constant(0.25)), dimensions={}\n"
	"  v1 = f32[5,7] add(f32[5,7] multiply(v, h), c)\n"
	"  ROOT t = (s32[], f32[5,7]) tuple(i1, v1) }\n"
	"cond { s = (s32[], f32[5,7]) parameter(0)\n"
	"  v = f32[5,7] get-tuple-element(s), index=1\n"
	"  a = f32[5,7] abs(v)\n"
	"  m = f32[] reduce(a, f32[] constant(0)), dimensions={0,1}, to_apply=sum\n"
	"  ROOT lt = pred[] compare(m, f32[] constant(1e6)), direction=LT }\n"
	"ENTRY e { x = f32[5,7] parameter(0)\n"
	"  w = (s32[], f32[5,7]) while((s32[], f32[5,7]) tuple(s32[] constant(0), x)), condition=cond, body=body\n"
	"  n = s32[] get-tuple-element(w), index=0\n"
	"  y = f32[5,7] get-tuple-element(w), index=1\n"
	"  ROOT r = (s32[], f32[5,7]) tuple(n, y) }\n";

static const char hlo_nested[] =
	"HloModule nested\n"
	"ibody { s = (s32[], f32[3]) parameter(0)\n"
	"  j = s32[] get-tuple-element(s), index=0\n"
	"  v = f32[3] get-tuple-element(s), index=1\n"
	"  ROOT t = (s32[], f32[3]) tuple(s32[] add(j, s32[] constant(1)), f32[3] add(v, v)) }\n"
	"icond { s = (s32[], f32[3]) parameter(0)\n"
	"  v = f32[3] get-tuple-element(s), index=1\n"
	"  x = f32[1] slice(v), slice={[1:2]}\n"
	"  ROOT c = pred[] compare(f32[] reshape(x), f32[] constant(50)), direction=LT }\n"
	"obody { s = (s32[], f32[3]) parameter(0)\n"
	"  i = s32[] get-tuple-element(s), index=0\n"
	"  v = f32[3] get-tuple-element(s), index=1\n"
	"  w = (s32[], f32[3]) while((s32[], f32[3]) tuple(s32[] constant(0), v)), condition=icond, body=ibody\n"
	"  v2 = f32[3] get-tuple-element(w), index=1\n"
	"  ROOT t = (s32[], f32[3]) tuple(s32[] add(i, s32[] constant(1)), f32[3] multiply(v2, f32[3] constant({0.5, 0.25, 0.125}))) }\n"
	"ocond { s = (s32[], f32[3]) parameter(0)\n"
	"  v = f32[3] get-tuple-element(s), index=1\n"
	"  x = f32[1] slice(v), slice={[0:1]}\n"
	"  y = f32[] reshape(x)\n"
	"  ROOT c = pred[] compare(y, f32[] constant(100)), direction=LT }\n"
	"ENTRY e { x = f32[3] parameter(0)\n"
	"  a = f32[3] abs(x)\n"
	"  b = f32[3] add(a, f32[3] constant({1, 1, 1}))\n"
	"  w = (s32[], f32[3]) while((s32[], f32[3]) tuple(s32[] constant(0), b)), condition=ocond, body=obody\n"
	"  ROOT r = s32[] get-tuple-element(w), index=0 }\n";

static const char hlo_scan[] =
	"HloModule scan\n"
	"body { s = (s32[], f32[300,4], f32[4], f32[300,4]) parameter(0)\n"
	"  i = s32[] get-tuple-element(s), index=0\n"
	"  xs = f32[300,4] get-tuple-element(s), index=1\n"
	"  h = f32[4] get-tuple-element(s), index=2\n"
	"  ys = f32[300,4] get-tuple-element(s), index=3\n"
	"  z = s32[] constant(0)\n"
	"  x = f32[1,4] dynamic-slice(xs, i, z), dynamic_slice_sizes={1,4}\n"
	"  xr = f32[4] reshape(x)\n"
	"  h1 = f32[4] tanh(f32[4] add(f32[4] multiply(h, f32[4] constant({0.9, 0.8, 0.7, 0.6})), xr))\n"
	"  y = f32[1,4] reshape(h1)\n"
	"  ys1 = f32[300,4] dynamic-update-slice(ys, y, i, z)\n"
	"  ROOT t = (s32[], f32[300,4], f32[4], f32[300,4]) tuple(s32[] add(i, s32[] constant(1)), xs, h1, ys1) }\n"
	"cond { s = (s32[], f32[300,4], f32[4], f32[300,4]) parameter(0)\n"
	"  i = s32[] get-tuple-element(s), index=0\n"
	"  ROOT c = pred[] compare(i, s32[] constant(300)), direction=LT }\n"
	"ENTRY e { xs = f32[300,4] parameter(0)\n"
	"  h = f32[4] constant({0, 0, 0, 0})\n"
	"  ys = f32[300,4] broadcast(f32[] constant(0)), dimensions={}\n"
	"  w = (s32[], f32[300,4], f32[4], f32[300,4]) while((s32[], f32[300,4], f32[4], f32[300,4]) tuple(s32[] constant(0), xs, h, ys)), condition=cond, body=body\n"
	"  hn = f32[4] get-tuple-element(w), index=2\n"
	"  y = f32[300,4] get-tuple-element(w), index=3\n"
	"  ROOT r = (f32[4], f32[300,4]) tuple(hn, y) }\n";

TEST(loops_run_on_the_device)
{
	const char *mods[] = { hlo_until, hlo_nested, hlo_scan };
	unsigned int i, j;

	for (i = 0; i < 3; i++) {
		for (j = 0; j < 2; j++) {
			struct vtpu_graph *g = NULL;
			char err[256];
			int k, loops = 0;

			ASSERT_EQ(0, vtpu_hlo_parse(mods[i], strlen(mods[i]), &g,
						    err, sizeof(err)))
				TH_LOG("module %u: %s", i, err);
			for (k = 0; k < g->ir.n; k++)
				loops += g->ir.nodes[k].op == OP_WHILE;
			/* the nested one: a loop in a loop's body */
			EXPECT_EQ(1, loops) TH_LOG("module %u", i);
			if (i == 1) {
				for (k = 0; k < g->ir.n; k++)
					if (g->ir.nodes[k].op == OP_WHILE)
						EXPECT_TRUE(ir_has_loops(g->ir.nodes[k].a.loop.body));
			}
			CHECK(g, j ? &dev_small : &dev_big, 1e-5, 1e-4);
			vtpu_graph_free(g);
		}
	}
}

/* A loop whose body holds weights: they go to the weights binding. */
TEST(loop_bodies_keep_their_weights)
{
	static const int64_t d[] = { 4, 64 }, md[] = { 64, 64 };
	struct vtpu_shape s = f32(2, d), ms = f32(2, md);
	struct vtpu_shape i32 = { .type = VTPU_S32 };
	struct vtpu_graph *g = vtpu_graph_new(), *cg = vtpu_graph_new();
	struct vtpu_graph *bg = vtpu_graph_new();
	struct vtpu_program *p = NULL;
	float *m = random_tensor(&ms);
	int init[2], outs[2], ci, cv, bi, bv, k, w;
	double r;

	/* cond: i < 7 */
	ci = vtpu_g_parameter(cg, 0, &i32, "i");
	cv = vtpu_g_parameter(cg, 1, &s, "v");
	(void)cv;
	k = vtpu_g_convert(cg, vtpu_g_compare(cg, VTPU_LT, ci,
			   vtpu_g_constant(cg, &i32, &(int32_t){ 7 })), VTPU_S32);
	ASSERT_LE(0, vtpu_g_outputs(cg, 1, &k));
	/* body: i + 1, tanh(v . m) with m a 16 KiB constant */
	bi = vtpu_g_parameter(bg, 0, &i32, "i");
	bv = vtpu_g_parameter(bg, 1, &s, "v");
	outs[0] = vtpu_g_binary(bg, VTPU_ADD, bi,
				vtpu_g_constant(bg, &i32, &(int32_t){ 1 }));
	outs[1] = vtpu_g_unary(bg, VTPU_TANH,
			       vtpu_g_matmul(bg, bv, vtpu_g_constant(bg, &ms, m)));
	ASSERT_LE(0, vtpu_g_outputs(bg, 2, outs));
	init[0] = vtpu_g_constant(g, &i32, &(int32_t){ 0 });
	init[1] = vtpu_g_parameter(g, 0, &s, "x");
	ASSERT_EQ(0, ir_while(&g->ir, 2, init, cg, bg, outs));
	w = outs[1];
	ASSERT_LE(0, vtpu_g_outputs(g, 1, &w));
	r = check_graph(g, &dev_big, 1e-4, 1e-3, 0, &p);
	EXPECT_TRUE(r >= 0 && r <= 1.0) TH_LOG("worst ratio %g", r);
	ASSERT_NE(NULL, p);
	EXPECT_LE(64 * 64 * 4, p->weights_size);
	vtpu_program_free(p);
	free(m);
	vtpu_graph_free(g);
}

/*
 * f16 runs in f32 with each arithmetic result rounded to f16, on the
 * device (ir_eval() computes in double, where the rounding trick is
 * exact, so this checks the executor's bits): (1024 + 0.25) - 1024 is 0.
 */
TEST(f16_results_round_to_f16)
{
	static const char text[] =
		"HloModule m\nENTRY e {\n"
		"  p = f16[2] parameter(0)\n"
		"  a = f16[1] slice(p), slice={[0:1]}\n"
		"  b = f16[1] slice(p), slice={[1:2]}\n"
		"  s = f16[1] add(a, b)\n"
		"  ROOT d = f16[1] subtract(s, a)\n}\n";
	float x[2] = { 1024, 0.25 };
	void *params[1] = { x }, *outs[1] = { 0 };
	struct vtpu_program *prog = NULL;
	struct vtpu_graph *g = NULL;
	char err[256];

	ASSERT_EQ(0, vtpu_hlo_parse(text, strlen(text), &g, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(0, vtpu_compile(g, &dev_big, NULL, &prog, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(0, run_program(prog, &dev_big, params, outs));
	EXPECT_EQ(0.0f, ((float *)outs[0])[0]);
	/* and 1024 + 1 is exact in f16 */
	x[1] = 1;
	free(outs[0]);
	outs[0] = NULL;
	ASSERT_EQ(0, run_program(prog, &dev_big, params, outs));
	EXPECT_EQ(1.0f, ((float *)outs[0])[0]);
	free(outs[0]);
	vtpu_program_free(prog);
	vtpu_graph_free(g);

	/* a reduction's f16 result too: 1024 + 0.25 sums to 1024 */
	{
		static const char sum[] =
			"HloModule m\n"
			"add { a = f16[] parameter(0)\n b = f16[] parameter(1)\n"
			"  ROOT s = f16[] add(a, b) }\n"
			"ENTRY e {\n  p = f16[2] parameter(0)\n"
			"  ROOT r = f16[] reduce(p, f16[] constant(0)), dimensions={0}, to_apply=add\n}\n";

		x[1] = 0.25;
		outs[0] = NULL;
		ASSERT_EQ(0, vtpu_hlo_parse(sum, strlen(sum), &g, err, sizeof(err)))
			TH_LOG("%s", err);
		ASSERT_EQ(0, vtpu_compile(g, &dev_big, NULL, &prog, err, sizeof(err)))
			TH_LOG("%s", err);
		ASSERT_EQ(0, run_program(prog, &dev_big, params, outs));
		EXPECT_EQ(1024.0f, ((float *)outs[0])[0]);
		free(outs[0]);
		vtpu_program_free(prog);
		vtpu_graph_free(g);
	}
}

TEST(planner_peak_within_ten_percent_of_lower_bound)
{
	struct vtpu_graph *graphs[] = { mlp(32, 64, 256, 16), mlp(8, 128, 64, 8) };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct vtpu_program *p = NULL;
		double w = check_graph(graphs[i], &dev_big, 1e-5, 1e-4, 1, &p);

		EXPECT_TRUE(w >= 0 && w <= 1.0) TH_LOG("worst ratio %g", w);
		ASSERT_NE(NULL, p);
		TH_LOG("graph %u: scratch peak %llu, lower bound %llu", i,
		       (unsigned long long)p->cost.scratch_bytes,
		       (unsigned long long)p->cost.scratch_lower_bound);
		EXPECT_LE((double)p->cost.scratch_bytes,
			  1.10 * (double)p->cost.scratch_lower_bound + 64);
		EXPECT_LT(0, p->cost.flops);
		EXPECT_LT(0, p->cost.est_time_ns);
		vtpu_program_free(p);
		vtpu_graph_free(graphs[i]);
	}
}

TEST(compile_errors_are_reported)
{
	static const int64_t d[] = { 2, 3 }, e[] = { 3, 2 };
	struct vtpu_shape s = f32(2, d), t = f32(2, e);
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_program *p = NULL;
	char err[256];
	int x = vtpu_g_parameter(g, 0, &s, "x");
	int y = vtpu_g_parameter(g, 1, &t, "y");

	/* Shape mismatch: the builder says so, and so does compile. */
	EXPECT_GT(0, vtpu_g_binary(g, VTPU_ADD, x, y));
	ASSERT_NE(NULL, vtpu_graph_error(g));
	EXPECT_NE(NULL, strstr(vtpu_graph_error(g), "ADD"));
	EXPECT_GT(0, vtpu_compile(g, &dev_big, NULL, &p, err, sizeof(err)));
	EXPECT_EQ(NULL, p);
	vtpu_graph_free(g);
}

/* The cache behind vtpu_compile(): hit, miss on a changed constant,
 * and a corrupted file recompiled (same bytes), never executed. */
TEST(compile_cache_hits_misses_and_recompiles_corrupt_entries)
{
	char dir[] = "/tmp/vtpu-cache-XXXXXX", path[512];
	struct vtpu_graph *g1 = mlp(4, 8, 16, 4), *g2;
	struct vtpu_program *a = NULL, *b = NULL, *c = NULL;
	struct vtpu_cache_stats st;
	struct vtpu_cache *cache;
	struct vtpu_compile_options opts = { 0 };
	char err[256];
	uint64_t key[2];
	FILE *f;
	long size;
	int byte;

	ASSERT_NE(NULL, mkdtemp(dir));
	/* No memory entries: every hit comes from the disk. */
	cache = vtpu_cache_new(0, dir);
	ASSERT_NE(NULL, cache);
	opts.cache = cache;
	ASSERT_EQ(0, vtpu_compile(g1, &dev_big, &opts, &a, err, sizeof(err)));
	ASSERT_EQ(0, vtpu_compile(g1, &dev_big, &opts, &b, err, sizeof(err)));
	vtpu_cache_stats(cache, &st);
	EXPECT_EQ(1, st.misses);
	EXPECT_EQ(1, st.hits);
	ASSERT_EQ(a->size, b->size);
	EXPECT_EQ(0, memcmp(a->binary, b->binary, a->size));

	/* Another graph with one constant changed: a miss. */
	rng = 777;
	g2 = mlp(4, 8, 16, 4);
	ASSERT_EQ(0, vtpu_compile(g2, &dev_big, &opts, &c, err, sizeof(err)));
	vtpu_cache_stats(cache, &st);
	EXPECT_EQ(2, st.misses);
	vtpu_program_free(c);
	c = NULL;

	/* Flip a byte in g1's file: detected, removed, recompiled. */
	graph_hash(&g1->ir, &dev_big, &opts, key);
	snprintf(path, sizeof(path), "%s/%016llx%016llx.vtpu", dir,
		 (unsigned long long)key[1], (unsigned long long)key[0]);
	f = fopen(path, "r+b");
	ASSERT_NE(NULL, f) TH_LOG("no cache file %s", path);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size - 3, SEEK_SET);
	byte = fgetc(f);
	fseek(f, size - 3, SEEK_SET);	/* a write after a read needs one */
	fputc(0x5a ^ byte, f);
	fclose(f);
	ASSERT_EQ(0, vtpu_compile(g1, &dev_big, &opts, &c, err, sizeof(err)));
	vtpu_cache_stats(cache, &st);
	EXPECT_EQ(1, st.corrupt);
	EXPECT_EQ(3, st.misses);
	ASSERT_EQ(a->size, c->size);
	EXPECT_EQ(0, memcmp(a->binary, c->binary, a->size));

	vtpu_program_free(a);
	vtpu_program_free(b);
	vtpu_program_free(c);
	vtpu_cache_free(cache);
	vtpu_graph_free(g1);
	vtpu_graph_free(g2);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	ASSERT_EQ(0, system(path));
}

/* ---- lanes ------------------------------------------------------------ */

static int count_op(const struct vtpu_program *prog, uint8_t op)
{
	const struct vtpu_prog_header *h = prog->binary;
	const struct vtpu_insn *in = (const void *)(h + 1);
	uint32_t i;
	int n = 0;

	for (i = 0; i < h->insn_count; i++)
		n += in[i].op == op;
	return n;
}

/*
 * For a device of two cores, big kernels split their tiles between two
 * lanes: a matmul with its epilogue and a chain after it, a transposing
 * copy, a depthwise convolution, a pad and a concatenation. The program gives the same bits run
 * by one executor, by two threads at once (each its lane, meeting at the
 * BARRIERs) and as the one-core device's program, which has no lanes.
 */
TEST(lanes_split_big_kernels_and_keep_the_bits)
{
	static const struct vtpu_device_params one = {
		.vmem_size = 1 << 20, .num_cores = 1, .hbm_size = 64 << 20,
	};
	int64_t dx[] = { 192, 256 }, dw[] = { 256, 320 }, db[] = { 320 };
	int64_t dy[] = { 192, 320 }, di[] = { 1, 24, 96, 96 };
	int64_t dk[] = { 24, 1, 3, 3 };
	int perm[] = { 1, 0 }, bd[] = { 1 };
	struct vtpu_shape sx = f32(2, dx), sw = f32(2, dw), sb = f32(1, db);
	struct vtpu_shape si = f32(4, di), sk = f32(4, dk);
	struct vtpu_conv_params p = { { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
				      24 };
	struct vtpu_compile_options opts = { 0 };
	struct vtpu_program *two = NULL, *single = NULL;
	int64_t plo[] = { 0, 0, 1, 2 }, phi[] = { 0, 0, 3, 1 };
	void *params[5], *out[3][6] = { { 0 } };
	struct vtpu_graph *g = vtpu_graph_new();
	const struct vtpu_shape *os[6];
	int x, w, b, img, ker, y[6], i, r, o;
	char err[256];

	x = vtpu_g_parameter(g, 0, &sx, "x");
	w = vtpu_g_parameter(g, 1, &sw, "w");
	b = vtpu_g_parameter(g, 2, &sb, "b");
	img = vtpu_g_parameter(g, 3, &si, "img");
	ker = vtpu_g_parameter(g, 4, &sk, "ker");
	y[0] = vtpu_g_unary(g, VTPU_RELU, vtpu_g_binary(g, VTPU_ADD,
		vtpu_g_matmul(g, x, w), vtpu_g_broadcast(g, b, 2, dy, bd)));
	y[1] = vtpu_g_unary(g, VTPU_TANH,
			    vtpu_g_binary(g, VTPU_MUL, y[0], y[0]));
	y[2] = vtpu_g_transpose(g, x, perm);
	y[3] = vtpu_g_conv2d(g, img, ker, &p);
	y[4] = vtpu_g_pad(g, img, plo, phi, 0.0f);
	y[5] = vtpu_g_concat(g, 2, (int[]){ x, x }, 1);
	vtpu_g_outputs(g, 6, y);
	ASSERT_EQ(NULL, vtpu_graph_error(g));
	ASSERT_EQ(0, vtpu_compile(g, &dev_big, &opts, &two, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(0, vtpu_compile(g, &one, &opts, &single, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(2u, ((const struct vtpu_prog_header *)two->binary)->lanes);
	EXPECT_EQ(0u, ((const struct vtpu_prog_header *)single->binary)->lanes);
	/*
	 * The matmul's kernel (its epilogue and the chain fused in), the
	 * copy, the convolution, the pad and the concatenation: each a
	 * lane 1 and a BARRIER after it.
	 */
	EXPECT_LE(5, count_op(two, VTPU_OP_LANE));
	EXPECT_LE(5, count_op(two, VTPU_OP_BARRIER));
	EXPECT_EQ(0, count_op(single, VTPU_OP_LANE));

	params[0] = random_tensor(&sx);
	params[1] = random_tensor(&sw);
	params[2] = random_tensor(&sb);
	params[3] = random_tensor(&si);
	params[4] = random_tensor(&sk);
	ASSERT_EQ(0, run_program_on(two, &dev_big, params, out[0], 1));
	ASSERT_EQ(0, run_program_on(two, &dev_big, params, out[1], 2));
	ASSERT_EQ(0, run_program_on(single, &one, params, out[2], 1));
	for (o = 0; o < 6; o++) {
		os[o] = &g->ir.nodes[g->ir.outputs[o]].shape;
		for (r = 1; r < 3; r++)
			EXPECT_EQ(0, memcmp(out[0][o], out[r][o],
					    shape_elems(os[o]) * 4))
				TH_LOG("output %d differs in run %d", o, r);
	}
	for (i = 0; i < 5; i++)
		free(params[i]);
	for (r = 0; r < 3; r++)
		for (o = 0; o < 6; o++)
			free(out[r][o]);
	vtpu_program_free(two);
	vtpu_program_free(single);
	vtpu_graph_free(g);
}

/*
 * A matmul splits between the lanes from a few microseconds of work
 * (CG_LANES_MIN_MM): an MLP's first layer, 8x784 by 784x256 (1.6M
 * multiply-adds), does; a 16x64 by 64x64 one (64K) stays whole, and so
 * does an elementwise chain of two operations on 32K elements
 * (CG_LANES_MIN_WORK).
 */
TEST(lanes_split_matmuls_from_a_few_microseconds)
{
	static const struct {
		int64_t m, k, n;
		int chain, lanes;
	} cases[] = {
		{ 8, 784, 256, 0, 2 },
		{ 16, 64, 64, 0, 0 },
		{ 128, 256, 1, 1, 0 },
	};
	struct vtpu_compile_options opts = { 0 };
	char err[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		int64_t dx[] = { cases[i].m, cases[i].k };
		int64_t dw[] = { cases[i].k, cases[i].n };
		struct vtpu_shape sx = f32(2, dx), sw = f32(2, dw);
		struct vtpu_graph *g = vtpu_graph_new();
		struct vtpu_program *p = NULL;
		int x = vtpu_g_parameter(g, 0, &sx, "x"), y;

		y = cases[i].chain ?
		    vtpu_g_unary(g, VTPU_TANH, vtpu_g_binary(g, VTPU_MUL, x, x)) :
		    vtpu_g_matmul(g, x, vtpu_g_parameter(g, 1, &sw, "w"));
		vtpu_g_outputs(g, 1, &y);
		ASSERT_EQ(0, vtpu_compile(g, &dev_big, &opts, &p, err,
					  sizeof(err)))
			TH_LOG("case %zu: %s", i, err);
		EXPECT_EQ((uint32_t)cases[i].lanes,
			  ((const struct vtpu_prog_header *)p->binary)->lanes)
			TH_LOG("case %zu", i);
		EXPECT_EQ(cases[i].lanes ? 1 : 0, count_op(p, VTPU_OP_BARRIER))
			TH_LOG("case %zu", i);
		vtpu_program_free(p);
		vtpu_graph_free(g);
	}
}

/* Elements each lane of @prog stores, into @per[0..1]. */
static void lane_stores(const struct vtpu_program *prog, int64_t *per)
{
	const struct vtpu_prog_header *h = prog->binary;
	const struct vtpu_insn *in = (const void *)(h + 1);
	uint32_t i, lane = 0;

	per[0] = per[1] = 0;
	for (i = 0; i < h->insn_count; i++) {
		if (in[i].op == VTPU_OP_LANE)
			lane = in[i].imm;
		else if (in[i].op == VTPU_OP_BARRIER)
			lane = 0;
		else if (in[i].op == VTPU_OP_DMA_STORE && lane < 2)
			per[lane] += (int64_t)in[i].dma.v.rows *
				     in[i].dma.v.cols;
	}
}

/*
 * A kernel split among lanes takes as long as its busiest lane, so each
 * lane gets an equal share, within 5%, where powers of two and the
 * biggest bands that fit did not: the 1x1 convolutions of MobileNetV2,
 * 144x24 by 24x784 (tiles of 256 columns gave 512 and 272) and 576x96
 * by 96x49; its stride-2 depthwise convolutions, 144 channels of 56x56
 * (bands of 13, 13 and 2 rows) and 576 of 14x14 (chunks of 256, 256
 * and 64 channels). The bits are the one-core program's.
 */
TEST(lanes_get_equal_shares_of_matmuls_and_depthwise_convolutions)
{
	static const struct vtpu_device_params one = {
		.vmem_size = 1 << 20, .num_cores = 1, .hbm_size = 64 << 20,
	};
	static const struct {
		int64_t a, b, c;	/* matmul: m, k, n; conv: C, H, 0 */
	} cases[] = {
		{ 144, 24, 784 }, { 576, 96, 49 }, { 144, 56, 0 }, { 576, 14, 0 },
	};
	struct vtpu_conv_params cp = { { 2, 2 }, { 1, 1 }, { 1, 1 },
				       { 1, 1 }, 1 };
	struct vtpu_compile_options opts = { 0 };
	char err[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		int64_t d0[4], d1[4], per[2], n;
		struct vtpu_program *two = NULL, *single = NULL;
		struct vtpu_graph *g = vtpu_graph_new();
		struct vtpu_shape s0, s1;
		void *params[2], *out[3][1] = { { 0 } };
		int x, y, r;

		if (cases[i].c) {
			d0[0] = cases[i].a, d0[1] = cases[i].b;
			d1[0] = cases[i].b, d1[1] = cases[i].c;
			s0 = f32(2, d0);
			s1 = f32(2, d1);
			x = vtpu_g_parameter(g, 0, &s0, "x");
			y = vtpu_g_matmul(g, x, vtpu_g_parameter(g, 1, &s1, "w"));
		} else {
			d0[0] = 1, d0[1] = cases[i].a;
			d0[2] = d0[3] = cases[i].b;
			d1[0] = cases[i].a, d1[1] = 1, d1[2] = d1[3] = 3;
			s0 = f32(4, d0);
			s1 = f32(4, d1);
			cp.groups = (int)cases[i].a;
			x = vtpu_g_parameter(g, 0, &s0, "x");
			y = vtpu_g_conv2d(g, x, vtpu_g_parameter(g, 1, &s1, "k"),
					  &cp);
		}
		vtpu_g_outputs(g, 1, &y);
		ASSERT_EQ(0, vtpu_compile(g, &dev_big, &opts, &two, err,
					  sizeof(err)))
			TH_LOG("case %zu: %s", i, err);
		ASSERT_EQ(0, vtpu_compile(g, &one, &opts, &single, err,
					  sizeof(err)))
			TH_LOG("case %zu: %s", i, err);
		EXPECT_EQ(2u, ((const struct vtpu_prog_header *)two->binary)->lanes)
			TH_LOG("case %zu", i);
		n = shape_elems(&g->ir.nodes[g->ir.outputs[0]].shape);
		lane_stores(two, per);
		EXPECT_EQ(n, per[0] + per[1]) TH_LOG("case %zu", i);
		EXPECT_LE(per[0] > per[1] ? per[0] : per[1], n / 2 + n / 40)
			TH_LOG("case %zu: lanes store %lld and %lld of %lld",
			       i, (long long)per[0], (long long)per[1],
			       (long long)n);
		params[0] = random_tensor(&s0);
		params[1] = random_tensor(&s1);
		ASSERT_EQ(0, run_program_on(single, &one, params, out[0], 1));
		ASSERT_EQ(0, run_program_on(two, &dev_big, params, out[1], 1));
		ASSERT_EQ(0, run_program_on(two, &dev_big, params, out[2], 2));
		for (r = 1; r < 3; r++)
			EXPECT_EQ(0, memcmp(out[0][0], out[r][0], n * 4))
				TH_LOG("case %zu: run %d differs", i, r);
		for (r = 0; r < 3; r++)
			free(out[r][0]);
		free(params[0]);
		free(params[1]);
		vtpu_program_free(two);
		vtpu_program_free(single);
		vtpu_graph_free(g);
	}
}

/*
 * A chain with a value per channel (relu(x + b), x [1, 32, 64, 64])
 * splits its columns, the pixels, among the lanes, as the matmuls and
 * depthwise convolutions before such chains split theirs: lane 1 starts
 * at column 2048 of the first channel. Bit for bit the reference, on one
 * thread and on two.
 */
TEST(lanes_split_a_chain_of_channels_by_pixels)
{
	int64_t dx[] = { 1, 32, 64, 64 }, db[] = { 32 };
	int bd[] = { 1 };
	struct vtpu_shape sx = f32(4, dx), sb = f32(1, db);
	struct vtpu_compile_options opts = { 0 };
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_program *prog = NULL;
	const struct vtpu_prog_header *h;
	const struct vtpu_insn *in;
	int64_t n = shape_elems(&sx), i;
	void *params[2], *out[1] = { NULL };
	float *want = malloc(n * 4);
	int x, b, y, ways, lane1 = 0, bad = 0;
	int64_t first = -1;
	uint32_t k;
	char err[256];

	ASSERT_NE(NULL, want);
	x = vtpu_g_parameter(g, 0, &sx, "x");
	b = vtpu_g_parameter(g, 1, &sb, "b");
	y = vtpu_g_unary(g, VTPU_RELU, vtpu_g_binary(g, VTPU_ADD, x,
			 vtpu_g_broadcast(g, b, 4, dx, bd)));
	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(0, vtpu_compile(g, &dev_big, &opts, &prog, err, sizeof(err)))
		TH_LOG("%s", err);
	h = prog->binary;
	in = (const void *)(h + 1);
	EXPECT_EQ(2u, h->lanes);
	for (k = 0; k < h->insn_count && first < 0; k++) {
		if (in[k].op == VTPU_OP_LANE)
			lane1 = in[k].imm == 1;
		else if (lane1 && in[k].op == VTPU_OP_DMA_LOAD &&
			 in[k].dma.v.cols > 1)
			first = (int64_t)in[k].dma.offset;
	}
	EXPECT_EQ(2048 * 4, first);
	params[0] = random_tensor(&sx);
	params[1] = random_tensor(&sb);
	for (i = 0; i < n; i++) {
		want[i] = ((float *)params[0])[i] +
			  ((float *)params[1])[i / 4096];
		want[i] = want[i] > 0 ? want[i] : 0;
	}
	for (ways = 1; ways <= 2; ways++) {
		ASSERT_EQ(0, run_program_on(prog, &dev_big, params, out, ways));
		for (i = 0; i < n; i++)
			if (memcmp(&want[i], (float *)out[0] + i, 4) && !bad++)
				TH_LOG("%d threads: element %lld", ways,
				       (long long)i);
		free(out[0]);
		out[0] = NULL;
	}
	EXPECT_EQ(0, bad);
	free(params[0]);
	free(params[1]);
	free(want);
	vtpu_program_free(prog);
	vtpu_graph_free(g);
}

/*
 * A fault in one lane stops every executor: lane 1's gather index is
 * out of its table while lane 0 waits at the BARRIER after it, and a
 * second phase follows that nobody may run. The job ends with -ERANGE,
 * on two threads as on one.
 */
TEST(a_fault_in_one_lane_stops_them_all)
{
	const uint32_t vmem = 8192, half = vmem / 2;
	struct vtpu_insn lane = { .op = VTPU_OP_LANE, .imm = 1 };
	struct vtpu_insn barrier = { .op = VTPU_OP_BARRIER };
	struct vtpu_binding_desc desc = { 4096, VTPU_ACCESS_READ | VTPU_ACCESS_WRITE };
	int32_t bad = 1000;
	uint8_t *table = calloc(1, 4096), *mem = calloc(1, vmem);
	struct vtpu_exec_binding eb = { table, 4096 };
	struct vtpu_prog_info info;
	struct vtpu_prog_error perr;
	struct vtpu_exec e;
	struct vtpu_asm as;
	int ways, ret;
	size_t size;
	void *prog;

	ASSERT_NE(NULL, table);
	ASSERT_NE(NULL, mem);
	vtpu_asm_init(&as, vmem, 1);
	vtpu_asm_emit(&as, &lane);
	vtpu_asm_fill(&as, vtpu_tile_s32(half, 1, 1, 1), (uint32_t)bad);
	vtpu_asm_dma_gather(&as, vtpu_tile_f32(half + 64, 1, 16, 16), 0, 0,
			    64, VTPU_DT_F32, half, 64, 0);
	vtpu_asm_emit(&as, &barrier);
	vtpu_asm_fill(&as, vtpu_tile_f32(0, 4, 16, 16), 0x3f800000u);
	vtpu_asm_dma_store(&as, vtpu_tile_f32(0, 4, 16, 16), 0, 0, 64,
			   VTPU_DT_F32);
	vtpu_asm_emit(&as, &barrier);
	vtpu_asm_end(&as);
	prog = vtpu_asm_finish(&as, &size);
	ASSERT_NE(NULL, prog);
	((struct vtpu_prog_header *)prog)->lanes = 2;
	vtpu_asm_checksum(prog, size);
	vtpu_asm_free(&as);
	ASSERT_EQ(0, vtpu_prog_validate(prog, size, &desc, 1, vmem, &info,
					&perr)) TH_LOG("%d: %s", perr.insn, perr.why);
	for (ways = 1; ways <= 2; ways++) {
		struct host_pool *pool = host_pool_create(1);
		struct vtpu_exec_par par;
		uint64_t insns = 0;

		ASSERT_NE(NULL, pool);
		memset(table, 0x5a, 4096);
		vtpu_exec_init(&e, &info, &eb, mem);
		if (ways == 2) {
			host_pool_bind(pool, &e, &par);
			e.par = &par;
		}
		ret = host_pool_run_lanes(pool, &e, &insns);
		EXPECT_EQ(-ERANGE, ret) TH_LOG("on %d thread(s)", ways);
		/* the store after the BARRIER never ran */
		EXPECT_EQ(0x5a, table[0]) TH_LOG("on %d thread(s)", ways);
		host_pool_destroy(pool);
	}
	free(prog);
	free(table);
	free(mem);
}

/* Kernels of @prog whose TRACE name contains @what (the meta strings). */
static int count_kernels(const struct vtpu_program *prog, const char *what)
{
	const struct vtpu_prog_header *h = prog->binary;
	const char *meta = (const char *)prog->binary + h->header_size +
			   h->code_size + h->const_size;
	uint32_t at;
	int n = 0;

	for (at = 0; at < h->meta_size; at += strlen(meta + at) + 1)
		n += !!strstr(meta + at, what);
	return n;
}

/*
 * Materialised copies that repeat elements of their source without a
 * broadcast (no stride 0): im2col matrices, in @g lowered and fused.
 */
static int count_im2col(struct __test_metadata *_metadata,
			struct vtpu_graph *g)
{
	struct ir_graph *low = ir_clone(&g->ir);
	int i, k, n = 0;
	bool bcast;

	ASSERT_NE(NULL, low);
	ASSERT_EQ(0, pass_lower(low));
	ASSERT_EQ(0, pass_simplify(low));
	ASSERT_EQ(0, pass_fuse(low, true));
	for (i = 0; i < low->n; i++) {
		const struct ir_node *x = &low->nodes[i];

		if (x->op != OP_P_COPY || x->virt ||
		    shape_elems(&x->shape) <=
		    shape_elems(&low->nodes[x->in[0]].shape))
			continue;
		for (bcast = false, k = 0; k < x->shape.rank; k++)
			bcast |= x->shape.dims[k] > 1 && !x->a.view.stride[k];
		n += !bcast;
	}
	vtpu_graph_free((struct vtpu_graph *)low);
	return n;
}

/*
 * Implicit GEMM: a convolution whose window rows are contiguous in its
 * input (stride 1 along the width) loads its matmul's B tiles straight
 * from the input, a DMA per run of output rows, and has no im2col copy
 * (no p_copy kernel but a batch's transpose to NCHW) and no scratch for
 * KH*KW times the input. Nor a pad kernel: B tiles are filled with
 * zeros and get what lies inside the input (padding wider than the
 * window: whole rows of zeros). The products and their order are the
 * im2col path's, so the bits are those of the unfused program, which
 * materialises both. On VMEM so small that tiles cut output rows (a
 * row of 600 and tiles of fewer columns), with a fused bias and relu,
 * groups, a vertical stride and dilations, batches (of images of one
 * row too: ONNX's Conv1d, where runs of rows step from image to image),
 * bf16. A horizontal stride keeps the copy.
 */
TEST(conv_reads_its_windows_in_place)
{
	static const struct {
		int64_t x[4], k[4];
		struct vtpu_conv_params p;
		enum vtpu_type t;
		bool in_place;
	} cs[] = {
		{ { 1, 16, 12, 10 }, { 8, 16, 3, 3 },
		  { { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 }, VTPU_F32, true },
		{ { 2, 6, 9, 7 }, { 4, 3, 3, 2 },
		  { { 2, 1 }, { 2, 0 }, { 1, 1 }, { 2, 2 }, 2 }, VTPU_F32, true },
		{ { 1, 4, 40, 37 }, { 6, 4, 5, 3 },
		  { { 1, 1 }, { 2, 1 }, { 2, 1 }, { 1, 3 }, 1 }, VTPU_F32, true },
		{ { 2, 5, 11, 13 }, { 7, 5, 3, 3 },
		  { { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 }, VTPU_BF16, true },
		{ { 1, 2, 3, 600 }, { 3, 2, 3, 3 },
		  { { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 }, VTPU_F32, true },
		{ { 2, 4, 1, 10 }, { 5, 4, 1, 3 },
		  { { 1, 1 }, { 0, 1 }, { 0, 1 }, { 1, 1 }, 1 }, VTPU_F32, true },
		{ { 1, 3, 5, 6 }, { 2, 3, 3, 3 },
		  { { 1, 1 }, { 3, 0 }, { 1, 4 }, { 1, 1 }, 1 }, VTPU_F32, true },
		/* strides along the width: DMAs with an element step */
		{ { 1, 4, 12, 12 }, { 4, 4, 3, 3 },
		  { { 1, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 }, VTPU_F32, true },
		{ { 2, 3, 23, 21 }, { 8, 3, 7, 7 },
		  { { 2, 2 }, { 3, 3 }, { 3, 2 }, { 1, 1 }, 1 }, VTPU_F32, true },
		{ { 1, 6, 14, 15 }, { 6, 3, 3, 3 },
		  { { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 2 }, VTPU_BF16, true },
		{ { 1, 4, 9, 17 }, { 5, 4, 3, 3 },
		  { { 1, 3 }, { 0, 2 }, { 1, 0 }, { 1, 2 }, 1 }, VTPU_F32, true },
		{ { 1, 2, 3, 300 }, { 3, 2, 3, 4 },
		  { { 1, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 }, VTPU_F32, true },
	};
	const struct vtpu_device_params *devs[] = { &dev_big, &dev_small };
	struct vtpu_compile_options fused = { 0 }, unfused = { .no_fusion = 1 };
	unsigned int c, d;

	for (c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		struct vtpu_shape sx = f32(4, cs[c].x), sk = f32(4, cs[c].k);
		struct vtpu_graph *g = vtpu_graph_new();
		int64_t db[] = { cs[c].k[0] };
		struct vtpu_shape sb = f32(1, db);
		int bd[] = { 1 }, x, k, b, y;
		int64_t win = cs[c].x[0] * cs[c].x[1] * cs[c].k[2] * cs[c].k[3];
		void *params[3], *out[2][1] = { { 0 } };
		struct vtpu_program *prog[2] = { 0 };
		char err[256];

		sx.type = sk.type = cs[c].t;
		x = vtpu_g_parameter(g, 0, &sx, "x");
		k = vtpu_g_parameter(g, 1, &sk, "k");
		b = vtpu_g_parameter(g, 2, &sb, "b");
		y = vtpu_g_convert(g, vtpu_g_conv2d(g, x, k, &cs[c].p),
				   VTPU_F32);
		y = vtpu_g_unary(g, VTPU_RELU, vtpu_g_binary(g, VTPU_ADD, y,
			vtpu_g_broadcast(g, b, 4,
					 g->ir.nodes[y].shape.dims, bd)));
		vtpu_g_outputs(g, 1, &y);
		ASSERT_EQ(NULL, vtpu_graph_error(g));
		EXPECT_EQ(!cs[c].in_place, count_im2col(_metadata, g));
		params[0] = random_tensor(&sx);
		params[1] = random_tensor(&sk);
		params[2] = random_tensor(&sb);
		for (d = 0; d < 2; d++) {
			const struct vtpu_shape *ys = &g->ir.nodes[y].shape;

			TH_LOG("case %u, %s VMEM", c, d ? "small" : "big");
			ASSERT_EQ(0, vtpu_compile(g, devs[d], &fused, &prog[0],
						  err, sizeof(err)))
				TH_LOG("%s", err);
			ASSERT_EQ(0, vtpu_compile(g, devs[d], &unfused, &prog[1],
						  err, sizeof(err)))
				TH_LOG("%s", err);
			/* a batch adds copies: NCHW, the bias over it */
			if (cs[c].x[0] == 1)
				EXPECT_EQ(!cs[c].in_place,
					  count_kernels(prog[0], "p_copy"));
			EXPECT_EQ(!cs[c].in_place,
				  count_kernels(prog[0], ":pad"));
			/* the im2col matrix alone would be more */
			if (cs[c].in_place)
				EXPECT_LT(prog[0]->cost.scratch_bytes,
					  (uint64_t)win * shape_elems(ys) /
					  cs[c].k[0] / cs[c].x[0] * 4);
			ASSERT_EQ(0, run_program(prog[0], devs[d], params,
						 out[0]));
			ASSERT_EQ(0, run_program(prog[1], devs[d], params,
						 out[1]));
			EXPECT_EQ(0, memcmp(out[0][0], out[1][0],
					    shape_elems(ys) * 4));
			free(out[0][0]);
			free(out[1][0]);
			vtpu_program_free(prog[0]);
			vtpu_program_free(prog[1]);
		}
		/* bf16 sums rounded, then a bias: cancellation near zero */
		if (cs[c].t == VTPU_BF16)
			CHECK(g, &dev_small, 5e-2, 1e-2);
		else
			CHECK(g, &dev_small, 1e-5, 1e-4);
		free(params[0]);
		free(params[1]);
		free(params[2]);
		vtpu_graph_free(g);
	}
}

/*
 * Kernel taps that only ever read padding are dropped (DeepLab's ASPP:
 * dilation 36 on a 7x7 map leaves the centre tap, a 1x1 convolution
 * with neither PAD nor im2col), with the padding that remains adjusted:
 * the results are the reference's, the kernel a parameter or a
 * constant, depthwise or not, on both VMEM sizes.
 */
TEST(conv_drops_taps_that_read_only_padding)
{
	static const struct {
		int64_t x[4], k[4];
		struct vtpu_conv_params p;
		bool one_by_one;	/* all but the centre tap drop */
	} cs[] = {
		{ { 1, 8, 7, 7 }, { 4, 8, 3, 3 },
		  { { 1, 1 }, { 36, 36 }, { 36, 36 }, { 36, 36 }, 1 }, true },
		{ { 2, 6, 5, 6 }, { 4, 6, 3, 3 },
		  { { 1, 1 }, { 12, 12 }, { 12, 12 }, { 12, 12 }, 1 }, true },
		/* depthwise 7x7 on a 2x2 map: the outer taps go */
		{ { 1, 4, 2, 2 }, { 4, 1, 7, 7 },
		  { { 1, 1 }, { 3, 3 }, { 3, 3 }, { 1, 1 }, 4 }, false },
		/* uneven padding and a stride: some rows go, columns stay */
		{ { 1, 3, 5, 4 }, { 2, 3, 3, 3 },
		  { { 2, 1 }, { 7, 1 }, { 1, 1 }, { 4, 1 }, 1 }, false },
		{ { 1, 3, 4, 9 }, { 5, 3, 5, 3 },
		  { { 1, 2 }, { 6, 1 }, { 5, 2 }, { 3, 2 }, 1 }, false },
	};
	unsigned int c, konst;

	for (c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		for (konst = 0; konst < 2; konst++) {
			struct vtpu_shape sx = f32(4, cs[c].x), sk = f32(4, cs[c].k);
			struct vtpu_graph *g = vtpu_graph_new();
			struct vtpu_program *prog = NULL;
			void *kd = random_tensor(&sk);
			int x, k, y;
			double w;

			TH_LOG("case %u, %s kernel", c, konst ? "constant" : "parameter");
			x = vtpu_g_parameter(g, 0, &sx, "x");
			k = konst ? vtpu_g_constant(g, &sk, kd) :
				    vtpu_g_parameter(g, 1, &sk, "k");
			y = vtpu_g_conv2d(g, x, k, &cs[c].p);
			vtpu_g_outputs(g, 1, &y);
			w = check_graph(g, &dev_big, 1e-5, 1e-4, 0, &prog);
			EXPECT_TRUE(w >= 0 && w <= 1.0)
				TH_LOG("worst error ratio %g", w);
			/*
			 * No PAD, and no copy at all but a parameter
			 * kernel's slice and a batch's NCHW
			 */
			if (prog && cs[c].one_by_one) {
				EXPECT_EQ(0, count_kernels(prog, ":pad"));
				if (konst && cs[c].x[0] == 1)
					EXPECT_EQ(0, count_kernels(prog, "p_copy"));
			}
			vtpu_program_free(prog);
			CHECK(g, &dev_small, 1e-5, 1e-4);
			free(kd);
			vtpu_graph_free(g);
		}
	}
}

TEST_HARNESS_MAIN
