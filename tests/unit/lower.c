// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: pass_lower() rewrites every high-level op into primitive
 * ones that compute the same values.
 *
 * Each test builds graphs with the public builder on seeded random
 * shapes and attributes, lowers a clone, checks that only primitive ops
 * remain and that the verifier accepts the result, then evaluates both
 * graphs with the reference evaluator (ir_eval(), double precision) on
 * the same random inputs and compares the outputs.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#define MAX_IO	8

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void seed(uint64_t s)
{
	rng = s * 0x9e3779b97f4a7c15ull + 1;
}

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng >> 32;
}

/* Uniform in [lo, hi]. */
static int rndi(int lo, int hi)
{
	return lo + (int)(rnd() % (uint32_t)(hi - lo + 1));
}

static void shuffle(int *a, int n)
{
	int i, j, t;

	for (i = n - 1; i > 0; i--) {
		j = rndi(0, i);
		t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

static double from_type(const void *buf, int64_t i, enum vtpu_type t)
{
	if (t == VTPU_BF16)
		return vtpu_bf16_to_f32(((const uint16_t *)buf)[i]);
	return ((const float *)buf)[i];
}

/* Random values in [-2, 2] for every parameter of @g, by index. */
static void make_params(const struct ir_graph *g, void **params)
{
	int i, k;

	for (i = 0; i < g->n; i++) {
		const struct ir_node *n = &g->nodes[i];
		int64_t cnt = shape_elems(&n->shape), e;
		void *buf;

		if (n->op != OP_PARAM)
			continue;
		k = n->a.param.index;
		buf = malloc(cnt * type_size(n->shape.type) + 1);
		for (e = 0; e < cnt; e++) {
			float f = (rnd() % 4001) / 1000.0f - 2.0f;

			if (n->shape.type == VTPU_BF16)
				((uint16_t *)buf)[e] = vtpu_f32_to_bf16(f);
			else
				((float *)buf)[e] = f;
		}
		params[k] = buf;
	}
}

static int count_op(const struct ir_graph *g, enum ir_op op)
{
	int i, c = 0;

	for (i = 0; i < g->n; i++)
		c += g->nodes[i].op == op;
	return c;
}

/* A lowered clone of @gr, checked to be primitive and well formed. */
static struct ir_graph *lower_clone(struct __test_metadata *_metadata,
				    struct vtpu_graph *gr)
{
	struct ir_graph *low;
	int i, ret;

	if (vtpu_graph_error(gr))
		TH_LOG("builder: %s", vtpu_graph_error(gr));
	ASSERT_EQ(0, gr->ir.errcode);
	low = ir_clone(&gr->ir);
	ASSERT_NE(NULL, low);
	ret = pass_lower(low);
	if (ret)
		TH_LOG("pass_lower: %s", low->err);
	ASSERT_EQ(0, ret);
	for (i = 0; i < low->n; i++) {
		if (!ir_ops[low->nodes[i].op].prim)
			TH_LOG("node %d is %s", i, ir_ops[low->nodes[i].op].name);
		ASSERT_TRUE(ir_ops[low->nodes[i].op].prim);
	}
	ASSERT_EQ(0, ir_verify(low));
	return low;
}

static void free_clone(struct ir_graph *low)
{
	/* ir_clone() returns the ir member of a vtpu_graph, its first */
	vtpu_graph_free((struct vtpu_graph *)low);
}

/* Both graphs evaluate to the same outputs on the same random inputs. */
static void compare(struct __test_metadata *_metadata,
		    const struct ir_graph *src, const struct ir_graph *low)
{
	void *params[MAX_IO] = { 0 }, *ref[MAX_IO] = { 0 }, *got[MAX_IO] = { 0 };
	int i, k;

	ASSERT_EQ(src->nout, low->nout);
	make_params(src, params);
	ASSERT_EQ(0, ir_eval(src, (const void *const *)params, ref));
	ASSERT_EQ(0, ir_eval(low, (const void *const *)params, got));
	for (k = 0; k < src->nout; k++) {
		const struct vtpu_shape *s = &src->nodes[src->outputs[k]].shape;
		const struct vtpu_shape *l = &low->nodes[low->outputs[k]].shape;
		double tol = s->type == VTPU_BF16 ? 1.6e-2 : 2e-6;
		int64_t e, cnt = shape_elems(s);

		ASSERT_TRUE(shape_eq(s, l));
		for (e = 0; e < cnt; e++) {
			double a = from_type(ref[k], e, s->type);
			double b = from_type(got[k], e, s->type);

			if (fabs(a - b) > tol * (1 + fabs(a)))
				TH_LOG("output %d element %lld: %g, lowered %g",
				       k, (long long)e, a, b);
			ASSERT_TRUE(fabs(a - b) <= tol * (1 + fabs(a)));
		}
	}
	for (i = 0; i < MAX_IO; i++) {
		free(params[i]);
		free(ref[i]);
		free(got[i]);
	}
}

/* Lowers @gr, compares, frees everything. */
static void check(struct __test_metadata *_metadata, struct vtpu_graph *gr)
{
	struct ir_graph *low = lower_clone(_metadata, gr);

	compare(_metadata, &gr->ir, low);
	free_clone(low);
	vtpu_graph_free(gr);
}

static int param(struct vtpu_graph *g, int index, enum vtpu_type t, int rank,
		 const int64_t *dims)
{
	struct vtpu_shape s = { .type = t, .rank = rank };

	if (rank)
		memcpy(s.dims, dims, rank * sizeof(dims[0]));
	return vtpu_g_parameter(g, index, &s, NULL);
}

static int random_shape(int64_t *dims, int minrank, int maxrank, int maxdim)
{
	int i, rank = rndi(minrank, maxrank);

	for (i = 0; i < rank; i++)
		dims[i] = rndi(1, maxdim);
	return rank;
}

/* ---- integer powers -------------------------------------------------------- */

/*
 * POW by a constant -1, 2, 3 or 4 becomes multiplies (and a division),
 * with the reference evaluator's results; other exponents, and POW by a
 * value, stay POW.
 */
TEST(constant_integer_powers_are_multiplies)
{
	static const double ks[] = { -1, 2, 3, 4, 0.5, 5 };
	const int64_t dims[] = { 3, 17 };
	unsigned int i;

	for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int x = param(g, 0, VTPU_F32, 2, dims), k, y;
		struct ir_graph *low;

		x = vtpu_g_unary(g, VTPU_ABS, x);	/* 0.5: a real root */
		k = vtpu_g_broadcast(g, vtpu_g_scalar(g, (float)ks[i]), 2, dims,
				     NULL);
		y = vtpu_g_binary(g, VTPU_POW, x, k);
		vtpu_g_outputs(g, 1, &y);
		low = lower_clone(_metadata, g);
		EXPECT_EQ(ks[i] == 0.5 || ks[i] == 5, count_op(low, OP_POW) == 1)
			TH_LOG("x^%g", ks[i]);
		compare(_metadata, &g->ir, low);
		free_clone(low);
		vtpu_graph_free(g);
	}
	{
		struct vtpu_graph *g = vtpu_graph_new();
		int x = param(g, 0, VTPU_F32, 2, dims);
		int k = param(g, 1, VTPU_F32, 2, dims);
		int y = vtpu_g_binary(g, VTPU_POW, vtpu_g_unary(g, VTPU_ABS, x), k);
		struct ir_graph *low;

		vtpu_g_outputs(g, 1, &y);
		low = lower_clone(_metadata, g);
		EXPECT_EQ(1, count_op(low, OP_POW));
		free_clone(low);
		vtpu_graph_free(g);
	}
}

/* ---- layout ops --------------------------------------------------------- */

TEST(broadcast_scalar)
{
	int64_t out[3] = { 3, 4, 5 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 0, NULL);

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_broadcast(g, x, 3, out, (int[]){ 0 }) });
	check(_metadata, g);
}

TEST(broadcast_vectors)
{
	int it;

	for (it = 0; it < 30; it++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int64_t out[VTPU_MAX_RANK], in[VTPU_MAX_RANK];
		int pos[VTPU_MAX_RANK] = { 0, 1, 2, 3, 4, 5 }, dims[VTPU_MAX_RANK];
		int rank, r, i, x;

		seed(100 + it);
		rank = random_shape(out, 1, 5, 4);
		r = rndi(0, rank);
		shuffle(pos, rank);
		/* the first r positions, increasing, are the operand's dims */
		for (i = 0; i < r; i++)
			dims[i] = pos[i];
		for (i = 1; i < r; i++) {
			int k, t = dims[i];

			for (k = i; k > 0 && dims[k - 1] > t; k--)
				dims[k] = dims[k - 1];
			dims[k] = t;
		}
		for (i = 0; i < r; i++)
			in[i] = rndi(0, 1) ? out[dims[i]] : 1;
		x = param(g, 0, VTPU_F32, r, in);
		vtpu_g_outputs(g, 1, (int[]){ vtpu_g_broadcast(g, x, rank, out, dims) });
		check(_metadata, g);
	}
}

TEST(transpose_random)
{
	int it;

	for (it = 0; it < 30; it++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int perm[VTPU_MAX_RANK] = { 0, 1, 2, 3, 4, 5 };
		int64_t dims[VTPU_MAX_RANK];
		int rank, x;

		seed(200 + it);
		rank = random_shape(dims, 1, 6, 4);
		shuffle(perm, rank);
		x = param(g, 0, VTPU_F32, rank, dims);
		vtpu_g_outputs(g, 1, (int[]){ vtpu_g_transpose(g, x, perm) });
		check(_metadata, g);
	}
}

/* Moving only size-1 dimensions moves no byte: no P_COPY. */
TEST(transpose_of_unit_dims_is_a_reshape)
{
	int64_t dims[3] = { 4, 1, 5 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 3, dims);
	struct ir_graph *low;

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_transpose(g, x, (int[]){ 1, 0, 2 }) });
	low = lower_clone(_metadata, g);
	ASSERT_EQ(0, count_op(low, OP_P_COPY));
	ASSERT_EQ(1, count_op(low, OP_RESHAPE));
	free_clone(low);
	check(_metadata, g);
}

TEST(slice_with_steps)
{
	int it;

	for (it = 0; it < 30; it++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int64_t dims[VTPU_MAX_RANK], st[VTPU_MAX_RANK];
		int64_t li[VTPU_MAX_RANK], sd[VTPU_MAX_RANK];
		int rank, i, x;

		seed(300 + it);
		rank = random_shape(dims, 1, 5, 7);
		for (i = 0; i < rank; i++) {
			st[i] = rndi(0, dims[i] - 1);
			li[i] = rndi(st[i] + 1, dims[i]);
			sd[i] = rndi(1, 3);
		}
		x = param(g, 0, VTPU_F32, rank, dims);
		vtpu_g_outputs(g, 1, (int[]){ vtpu_g_slice(g, x, st, li, sd) });
		check(_metadata, g);
	}
}

/* ---- DOT ---------------------------------------------------------------- */

/*
 * A random DotGeneral: up to two batch, contracting and free dimensions
 * per operand, at random positions in each operand.
 */
static void random_dot(struct __test_metadata *_metadata, enum vtpu_type t)
{
	int nb = rndi(0, 2), nc = rndi(0, 2), nfl = rndi(0, 2), nfr = rndi(0, 2);
	int lp[VTPU_MAX_RANK] = { 0, 1, 2, 3, 4, 5 };
	int rp[VTPU_MAX_RANK] = { 0, 1, 2, 3, 4, 5 };
	int64_t ld[VTPU_MAX_RANK], rd[VTPU_MAX_RANK], sz;
	struct vtpu_dot_dims d = { .nbatch = nb, .ncontract = nc };
	struct vtpu_graph *g = vtpu_graph_new();
	int i, l, r;

	shuffle(lp, nb + nc + nfl);
	shuffle(rp, nb + nc + nfr);
	for (i = 0; i < nb + nc; i++) {
		sz = rndi(1, 4);
		ld[lp[i]] = sz;
		rd[rp[i]] = sz;
		if (i < nb) {
			d.lhs_batch[i] = lp[i];
			d.rhs_batch[i] = rp[i];
		} else {
			d.lhs_contract[i - nb] = lp[i];
			d.rhs_contract[i - nb] = rp[i];
		}
	}
	for (i = 0; i < nfl; i++)
		ld[lp[nb + nc + i]] = rndi(1, 4);
	for (i = 0; i < nfr; i++)
		rd[rp[nb + nc + i]] = rndi(1, 4);
	l = param(g, 0, t, nb + nc + nfl, ld);
	r = param(g, 1, t, nb + nc + nfr, rd);
	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_dot(g, l, r, &d) });
	check(_metadata, g);
}

TEST(dot_general_random)
{
	int it;

	for (it = 0; it < 60; it++) {
		seed(400 + it);
		random_dot(_metadata, VTPU_F32);
	}
}

TEST(dot_general_random_bf16)
{
	int it;

	for (it = 0; it < 20; it++) {
		seed(500 + it);
		random_dot(_metadata, VTPU_BF16);
	}
}

TEST(matmul_2d_and_batched)
{
	int64_t a2[2] = { 5, 7 }, b2[2] = { 7, 3 };
	int64_t a3[3] = { 2, 5, 7 }, b3[3] = { 2, 7, 3 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 2, a2), y = param(g, 1, VTPU_F32, 2, b2);
	int u = param(g, 2, VTPU_F32, 3, a3), v = param(g, 3, VTPU_F32, 3, b3);
	struct ir_graph *low;

	vtpu_g_outputs(g, 2, (int[]){ vtpu_g_matmul(g, x, y),
				      vtpu_g_matmul(g, u, v) });
	low = lower_clone(_metadata, g);
	/* already [B,M,K] x [B,K,N]: no copy at all */
	ASSERT_EQ(0, count_op(low, OP_P_COPY));
	ASSERT_EQ(2, count_op(low, OP_P_MATMUL));
	free_clone(low);
	check(_metadata, g);
}

/* lhs [K,M] and rhs [N,K] use the transpose flags, not copies. */
TEST(dot_uses_transpose_flags)
{
	int64_t a[3] = { 2, 7, 5 }, b[3] = { 2, 3, 7 };
	struct vtpu_dot_dims d = {
		.nbatch = 1, .ncontract = 1,
		.lhs_batch = { 0 }, .rhs_batch = { 0 },
		.lhs_contract = { 1 }, .rhs_contract = { 2 },
	};
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 3, a), y = param(g, 1, VTPU_F32, 3, b);
	struct ir_graph *low;
	int i;

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_dot(g, x, y, &d) });
	low = lower_clone(_metadata, g);
	ASSERT_EQ(0, count_op(low, OP_P_COPY));
	for (i = 0; i < low->n; i++)
		if (low->nodes[i].op == OP_P_MATMUL) {
			ASSERT_TRUE(low->nodes[i].a.mm.trans_a);
			ASSERT_TRUE(low->nodes[i].a.mm.trans_b);
		}
	free_clone(low);
	check(_metadata, g);
}

/* Batch dimensions in the middle and contracting ones out of order. */
TEST(dot_batch_in_the_middle)
{
	int64_t a[4] = { 3, 2, 4, 5 }, b[4] = { 5, 2, 3, 6 };
	struct vtpu_dot_dims d = {
		.nbatch = 1, .ncontract = 2,
		.lhs_batch = { 1 }, .rhs_batch = { 1 },
		.lhs_contract = { 3, 0 }, .rhs_contract = { 0, 2 },
	};
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 4, a), y = param(g, 1, VTPU_F32, 4, b);

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_dot(g, x, y, &d) });
	check(_metadata, g);
}

TEST(dot_bf16_converts_back)
{
	int64_t a[2] = { 4, 6 }, b[2] = { 6, 3 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_BF16, 2, a), y = param(g, 1, VTPU_BF16, 2, b);
	struct ir_graph *low;

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_matmul(g, x, y) });
	low = lower_clone(_metadata, g);
	ASSERT_EQ(1, count_op(low, OP_CONVERT));
	ASSERT_EQ(VTPU_BF16, low->nodes[low->outputs[0]].shape.type);
	free_clone(low);
	check(_metadata, g);
}

/* ---- CONV --------------------------------------------------------------- */

static void conv_case(struct __test_metadata *_metadata, enum vtpu_type t,
		      const int64_t *in, const int64_t *k,
		      const struct vtpu_conv_params *p)
{
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, t, 4, in), w = param(g, 1, t, 4, k);

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_conv2d(g, x, w, p) });
	check(_metadata, g);
}

TEST(conv_plain_3x3)
{
	int64_t in[4] = { 2, 3, 6, 5 }, k[4] = { 4, 3, 3, 3 };
	struct vtpu_conv_params p = { { 1, 1 }, { 0, 0 }, { 0, 0 }, { 1, 1 }, 1 };

	conv_case(_metadata, VTPU_F32, in, k, &p);
}

TEST(conv_stride_padding_dilation_groups)
{
	int64_t in[4] = { 2, 6, 9, 8 }, k[4] = { 4, 3, 3, 2 };
	struct vtpu_conv_params p = { { 2, 1 }, { 1, 2 }, { 2, 0 }, { 2, 3 }, 2 };

	conv_case(_metadata, VTPU_F32, in, k, &p);
}

TEST(conv_depthwise)
{
	int64_t in[4] = { 1, 4, 5, 5 }, k[4] = { 4, 1, 3, 3 };
	struct vtpu_conv_params p = { { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 4 };

	conv_case(_metadata, VTPU_F32, in, k, &p);
}

/* One im2col view and one matmul for all groups; N = 1 needs no transpose. */
TEST(conv_is_one_copy_and_one_matmul)
{
	int64_t in[4] = { 1, 6, 7, 7 }, k[4] = { 9, 2, 3, 3 };
	struct vtpu_conv_params p = { { 2, 2 }, { 0, 0 }, { 0, 0 }, { 1, 1 }, 3 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 4, in), w = param(g, 1, VTPU_F32, 4, k);
	struct ir_graph *low;

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_conv2d(g, x, w, &p) });
	low = lower_clone(_metadata, g);
	ASSERT_EQ(1, count_op(low, OP_P_COPY));
	ASSERT_EQ(1, count_op(low, OP_P_MATMUL));
	ASSERT_EQ(0, count_op(low, OP_CONCAT));
	ASSERT_EQ(0, count_op(low, OP_PAD));
	free_clone(low);
	check(_metadata, g);
}

TEST(conv_random)
{
	int it, i;

	for (it = 0; it < 40; it++) {
		struct vtpu_conv_params p = { .groups = 1 };
		int64_t in[4], k[4], grp, ext;

		seed(600 + it);
		grp = rndi(1, 3);
		p.groups = grp;
		in[0] = rndi(1, 2);
		in[1] = grp * rndi(1, 3);
		k[0] = grp * rndi(1, 3);
		k[1] = in[1] / grp;
		for (i = 0; i < 2; i++) {
			k[2 + i] = rndi(1, 3);
			p.stride[i] = rndi(1, 3);
			p.dilation[i] = rndi(1, 2);
			p.pad_lo[i] = rndi(0, 2);
			p.pad_hi[i] = rndi(0, 2);
			ext = (k[2 + i] - 1) * p.dilation[i] + 1;
			in[2 + i] = rndi(1, 7);
			if (in[2 + i] + p.pad_lo[i] + p.pad_hi[i] < ext)
				in[2 + i] = ext;
		}
		conv_case(_metadata, it % 4 ? VTPU_F32 : VTPU_BF16, in, k, &p);
	}
}

/* ---- REDUCE, SOFTMAX ---------------------------------------------------- */

static void reduce_case(struct __test_metadata *_metadata, int rank,
			const int64_t *dims, int naxes, const int *axes)
{
	enum vtpu_reduce_op op;

	for (op = VTPU_REDUCE_SUM_OP; op <= VTPU_REDUCE_MEAN_OP; op++) {
		struct vtpu_graph *g = vtpu_graph_new();
		int x = param(g, 0, VTPU_F32, rank, dims);

		vtpu_g_outputs(g, 1, (int[]){ vtpu_g_reduce(g, op, x, naxes, axes) });
		check(_metadata, g);
	}
}

TEST(reduce_listed_axes)
{
	int64_t d[3] = { 3, 4, 5 };

	reduce_case(_metadata, 3, d, 1, (int[]){ 0 });
	reduce_case(_metadata, 3, d, 1, (int[]){ 1 });
	reduce_case(_metadata, 3, d, 1, (int[]){ 2 });
	reduce_case(_metadata, 3, d, 2, (int[]){ 0, 2 });
	reduce_case(_metadata, 3, d, 2, (int[]){ 2, 1 });
	reduce_case(_metadata, 3, d, 3, (int[]){ 0, 1, 2 });
	reduce_case(_metadata, 3, d, 0, NULL);
}

TEST(reduce_scalar_and_vector)
{
	int64_t d[1] = { 7 };

	reduce_case(_metadata, 0, NULL, 0, NULL);
	reduce_case(_metadata, 1, d, 1, (int[]){ 0 });
}

/* Reducing only the last axis needs no copy. */
TEST(reduce_last_axis_copies_nothing)
{
	int64_t d[3] = { 3, 4, 5 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 3, d);
	struct ir_graph *low;

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_reduce(g, VTPU_REDUCE_SUM_OP, x, 2,
						     (int[]){ 1, 2 }) });
	low = lower_clone(_metadata, g);
	ASSERT_EQ(0, count_op(low, OP_P_COPY));
	ASSERT_EQ(1, count_op(low, OP_P_REDUCE_LAST));
	free_clone(low);
	check(_metadata, g);
}

TEST(reduce_random)
{
	int it, i;

	for (it = 0; it < 20; it++) {
		int64_t dims[VTPU_MAX_RANK];
		int axes[VTPU_MAX_RANK], rank, na = 0;

		seed(700 + it);
		rank = random_shape(dims, 1, 5, 4);
		for (i = 0; i < rank; i++)
			if (rndi(0, 1))
				axes[na++] = i;
		reduce_case(_metadata, rank, dims, na, axes);
	}
}

TEST(reduce_mean_bf16)
{
	int64_t d[2] = { 3, 8 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_BF16, 2, d);

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_reduce(g, VTPU_REDUCE_MEAN_OP, x, 1,
						     (int[]){ 0 }) });
	check(_metadata, g);
}

TEST(softmax_each_axis)
{
	int64_t d[3] = { 3, 4, 5 };
	int axis, log;

	for (log = 0; log < 2; log++)
		for (axis = 0; axis < 3; axis++) {
			struct vtpu_graph *g = vtpu_graph_new();
			int x = param(g, 0, VTPU_F32, 3, d), y;

			y = log ? vtpu_g_log_softmax(g, x, axis)
				: vtpu_g_softmax(g, x, axis);
			vtpu_g_outputs(g, 1, &y);
			check(_metadata, g);
		}
}

/* On the last axis: two reductions, two broadcasts, no transposes. */
TEST(softmax_last_axis_copies_only_broadcasts)
{
	int64_t d[2] = { 6, 10 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 2, d);
	struct ir_graph *low;

	vtpu_g_outputs(g, 1, (int[]){ vtpu_g_softmax(g, x, 1) });
	low = lower_clone(_metadata, g);
	ASSERT_EQ(2, count_op(low, OP_P_REDUCE_LAST));
	ASSERT_EQ(2, count_op(low, OP_P_COPY));
	free_clone(low);
	check(_metadata, g);
}

TEST(softmax_vector)
{
	int64_t d[1] = { 9 };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 1, d);

	vtpu_g_outputs(g, 2, (int[]){ vtpu_g_softmax(g, x, 0),
				      vtpu_g_log_softmax(g, x, 0) });
	check(_metadata, g);
}

/* ---- whole graphs ------------------------------------------------------- */

/*
 * High-level ops feeding each other, elementwise ops between them and
 * an output used twice: uses must follow every replacement.
 */
TEST(chain_of_high_level_ops)
{
	int64_t xd[3] = { 2, 6, 8 }, wd[2] = { 4, 5 }, bd[1] = { 5 };
	int64_t st[3] = { 0, 1, 0 }, li[3] = { 2, 6, 8 }, sd[3] = { 1, 1, 2 };
	int64_t hd[3] = { 2, 5, 5 };
	struct vtpu_dot_dims d = {
		.ncontract = 1, .lhs_contract = { 2 }, .rhs_contract = { 0 },
	};
	struct vtpu_graph *g = vtpu_graph_new();
	int x = param(g, 0, VTPU_F32, 3, xd), w = param(g, 1, VTPU_F32, 2, wd);
	int b = param(g, 2, VTPU_F32, 1, bd), h, s;

	h = vtpu_g_slice(g, x, st, li, sd);		/* [2,5,4] */
	h = vtpu_g_dot(g, h, w, &d);			/* [2,5,5] */
	h = vtpu_g_binary(g, VTPU_ADD, h,
			  vtpu_g_broadcast(g, b, 3, hd, (int[]){ 2 }));
	h = vtpu_g_unary(g, VTPU_TANH, h);
	s = vtpu_g_softmax(g, h, 2);
	h = vtpu_g_transpose(g, s, (int[]){ 2, 0, 1 });
	vtpu_g_outputs(g, 3, (int[]){ h, vtpu_g_reduce(g, VTPU_REDUCE_MEAN_OP,
						       s, 2, (int[]){ 0, 1 }), s });
	check(_metadata, g);
}

TEST_HARNESS_MAIN
