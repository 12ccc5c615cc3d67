// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: vtpu_onnx_parse() reads the ONNX test models Debian ships
 * (libonnx-testdata) into graphs whose outputs have the shapes the
 * models' reference outputs have, and rejects unsupported operators,
 * garbage and truncated files with -EINVAL and a message naming the
 * problem.
 *
 * Every model is parsed from an exact-size heap copy, so
 * AddressSanitizer catches any read past the end. These tests check
 * parsing and shapes; numerics are the conformance runner's job.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir.h"
#include "vtpu.h"
#include "vtpu_compiler.h"
#include "onnx.pb-c.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "kselftest_harness.h"

#define DATA "/usr/share/libonnx-testdata/data/"

/* The whole file at @path in a malloc'd exact-size buffer, or NULL. */
static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc(n ? n : 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	*len = n;
out:
	fclose(f);
	return buf;
}

static char *model_path(const char *test)
{
	static char path[512];

	snprintf(path, sizeof(path), DATA "%s/model.onnx", test);
	return path;
}

/* Parses the model of @test; returns what vtpu_onnx_parse() returned. */
static int parse_model(const char *test, struct vtpu_graph **g, char *err,
		       size_t errlen, bool *absent)
{
	size_t len = 0;
	void *buf = slurp(model_path(test), &len);
	int ret;

	*absent = !buf;
	if (!buf)
		return -ENOENT;
	ret = vtpu_onnx_parse(buf, len, g, err, errlen);
	free(buf);
	return ret;
}

/*
 * Parses @test with graph inputs @first.. turned into initializers from
 * its test_data_set_0: the node tests pass shapes and axes as inputs,
 * which vtpu_onnx_parse() rightly rejects as not constant.
 */
static int parse_frozen(const char *test, int first, struct vtpu_graph **g,
			char *err, size_t errlen, bool *absent)
{
	size_t len = 0, plen;
	void *buf = slurp(model_path(test), &len), *packed;
	Onnx__ModelProto *m = buf ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
	Onnx__TensorProto *t[8] = { NULL };
	Onnx__TensorProto **inits = NULL;
	Onnx__GraphProto *gp;
	size_t ninit, nt = 0;
	int ret = -EINVAL;

	*absent = !buf;
	free(buf);
	if (!m)
		return *absent ? -ENOENT : -EINVAL;
	gp = m->graph;
	for (size_t i = first; i < gp->n_input && nt < 8; i++) {
		char path[512];
		void *tb;
		size_t tl = 0;

		snprintf(path, sizeof(path), DATA "%s/test_data_set_0/input_%zu.pb",
			 test, i);
		tb = slurp(path, &tl);
		t[nt] = tb ? onnx__tensor_proto__unpack(NULL, tl, tb) : NULL;
		free(tb);
		if (!t[nt])
			goto out;
		free(t[nt]->name);
		t[nt]->name = strdup(gp->input[i]->name);
		nt++;
	}
	ninit = gp->n_initializer;
	inits = calloc(ninit + nt, sizeof(*inits));
	if (!inits)
		goto out;
	if (ninit)
		memcpy(inits, gp->initializer, ninit * sizeof(*inits));
	memcpy(inits + ninit, t, nt * sizeof(*inits));
	{
		Onnx__TensorProto **old = gp->initializer;
		size_t old_n = gp->n_initializer;

		gp->initializer = inits;
		gp->n_initializer = ninit + nt;
		plen = onnx__model_proto__get_packed_size(m);
		packed = malloc(plen ? plen : 1);
		if (packed) {
			onnx__model_proto__pack(m, packed);
			ret = vtpu_onnx_parse(packed, plen, g, err, errlen);
			free(packed);
		}
		gp->initializer = old;
		gp->n_initializer = old_n;
	}
out:
	for (size_t i = 0; i < nt; i++)
		onnx__tensor_proto__free_unpacked(t[i], NULL);
	free(inits);
	onnx__model_proto__free_unpacked(m, NULL);
	return ret;
}

/* Output @i's dims as "AxBxC" ("scalar" for rank 0). */
static const char *out_dims(struct vtpu_graph *g, int i, char *buf, size_t len)
{
	struct vtpu_shape s;
	size_t off = 0;

	if (i >= g->ir.nout || vtpu_graph_shape(g, g->ir.outputs[i], &s))
		return "none";
	if (!s.rank)
		return "scalar";
	buf[0] = 0;
	for (int d = 0; d < s.rank && off < len; d++)
		off += snprintf(buf + off, len - off, "%s%lld", d ? "x" : "",
				(long long)s.dims[d]);
	return buf;
}

/* @test must parse into one output of dims @dims ("2x3"). */
#define ASSERT_MODEL(test, n_out, dims) do { \
	struct vtpu_graph *g_ = NULL; \
	char err_[512] = "", buf_[128]; \
	bool absent_; \
	int ret_ = parse_model(test, &g_, err_, sizeof(err_), &absent_); \
	if (absent_) \
		SKIP(return, "%s is not installed", model_path(test)); \
	ASSERT_EQ(0, ret_) TH_LOG("%s: %s", test, err_); \
	ASSERT_NE(NULL, g_); \
	EXPECT_EQ(n_out, g_->ir.nout) TH_LOG("%s", test); \
	EXPECT_STREQ(dims, out_dims(g_, 0, buf_, sizeof(buf_))) \
		TH_LOG("%s", test); \
	vtpu_graph_free(g_); \
} while (0)

/* As ASSERT_MODEL, with inputs @first.. frozen into initializers. */
#define ASSERT_FROZEN(test, first, dims) do { \
	struct vtpu_graph *g_ = NULL; \
	char err_[512] = "", buf_[128]; \
	bool absent_; \
	int ret_ = parse_frozen(test, first, &g_, err_, sizeof(err_), &absent_); \
	if (absent_) \
		SKIP(return, "%s is not installed", model_path(test)); \
	ASSERT_EQ(0, ret_) TH_LOG("%s: %s", test, err_); \
	ASSERT_NE(NULL, g_); \
	EXPECT_EQ(1, g_->ir.nparams) TH_LOG("%s", test); \
	EXPECT_STREQ(dims, out_dims(g_, 0, buf_, sizeof(buf_))) \
		TH_LOG("%s", test); \
	vtpu_graph_free(g_); \
} while (0)

/* @test must fail with -EOPNOTSUPP and a message containing @what. */
#define ASSERT_MODEL_ERROR(test, what) do { \
	struct vtpu_graph *g_ = (struct vtpu_graph *)&g_; \
	char err_[512] = ""; \
	bool absent_; \
	int ret_ = parse_model(test, &g_, err_, sizeof(err_), &absent_); \
	if (absent_) \
		SKIP(return, "%s is not installed", model_path(test)); \
	ASSERT_EQ(-EOPNOTSUPP, ret_) TH_LOG("%s parsed", test); \
	ASSERT_NULL(g_); \
	ASSERT_NE(NULL, strstr(err_, what)) TH_LOG("%s: '%s'", test, err_); \
} while (0)

TEST(elementwise)
{
	ASSERT_MODEL("node/test_add", 1, "3x4x5");
	ASSERT_MODEL("node/test_add_bcast", 1, "3x4x5");
	ASSERT_MODEL("node/test_mul", 1, "3x4x5");
	ASSERT_MODEL("node/test_pow_bcast_array", 1, "2x3");
	ASSERT_MODEL("node/test_relu", 1, "3x4x5");
	ASSERT_MODEL("node/test_leakyrelu", 1, "3x4x5");
	ASSERT_MODEL("node/test_sigmoid", 1, "3x4x5");
	ASSERT_MODEL("node/test_reciprocal", 1, "3x4x5");
	ASSERT_MODEL("node/test_clip", 1, "3x4x5");
	ASSERT_MODEL("node/test_where_example", 1, "2x2");
	ASSERT_MODEL("node/test_equal_bcast", 1, "3x4x5");
}

TEST(linear_algebra)
{
	ASSERT_MODEL("node/test_matmul_2d", 1, "3x3");
	ASSERT_MODEL("node/test_matmul_4d", 1, "1x2x3x3");
	ASSERT_MODEL("node/test_gemm_default_no_bias", 1, "2x3");
	ASSERT_MODEL("node/test_gemm_all_attributes", 1, "3x5");
	ASSERT_MODEL("node/test_conv_with_strides_padding", 1, "1x1x4x3");
	ASSERT_MODEL("node/test_basic_conv_without_padding", 1, "1x1x3x3");
}

TEST(normalization_and_pooling)
{
	ASSERT_MODEL("node/test_softmax_axis_1", 1, "3x4x5");
	ASSERT_MODEL("node/test_logsoftmax_axis_0", 1, "3x4x5");
	ASSERT_MODEL("node/test_batchnorm_example", 1, "2x3x4x5");
	ASSERT_MODEL("node/test_maxpool_2d_default", 1, "1x3x31x31");
	ASSERT_MODEL("node/test_maxpool_2d_pads", 1, "1x3x30x30");
	ASSERT_MODEL("node/test_averagepool_2d_pads", 1, "1x3x30x30");
	ASSERT_MODEL("node/test_globalaveragepool", 1, "1x3x1x1");
	ASSERT_FROZEN("node/test_reduce_sum_keepdims_example", 1, "3x1x2");
	ASSERT_MODEL("node/test_reduce_mean_do_not_keepdims_example", 1, "3x2");
}

TEST(shapes)
{
	ASSERT_MODEL("node/test_transpose_default", 1, "4x3x2");
	ASSERT_MODEL("node/test_concat_2d_axis_0", 1, "4x2");
	ASSERT_MODEL("node/test_flatten_axis1", 1, "2x60");
	ASSERT_FROZEN("node/test_reshape_reordered_all_dims", 1, "4x2x3");
	ASSERT_FROZEN("node/test_slice", 1, "3x10x5");
	ASSERT_FROZEN("node/test_squeeze", 1, "3x4x5");
	ASSERT_FROZEN("node/test_unsqueeze_axis_0", 1, "1x3x4x5");
	ASSERT_FROZEN("node/test_constant_pad", 1, "1x3x7x12");
	ASSERT_FROZEN("node/test_expand_dim_changed", 1, "2x3x6");
}

TEST(normalization)
{
	/* Three outputs: Y, Mean and InvStdDev (normalized axes kept as 1). */
	ASSERT_MODEL("node/test_layer_normalization_4d_axis1", 3, "2x3x4x5");
	ASSERT_MODEL("node/test_instancenorm_example", 1, "1x2x1x3");
}

TEST(shape_arithmetic_is_folded)
{
	/* Shape -> Slice/Sub/ConstantOfShape on host constants, then Reshape. */
	ASSERT_MODEL("node/test_layer_normalization_2d_axis1_expanded", 3, "3x4");
	ASSERT_MODEL("node/test_layer_normalization_4d_axis1_expanded", 3,
		     "2x3x4x5");
}

TEST(split)
{
	ASSERT_MODEL("node/test_split_equal_parts_1d", 3, "2");
}

TEST(simple_models)
{
	ASSERT_MODEL("simple/test_single_relu_model", 1, "1x2");
	ASSERT_FROZEN("simple/test_expand_shape_model1", 1, "1x3x1");
}

TEST(unsupported_operator)
{
	ASSERT_MODEL_ERROR("node/test_nonmaxsuppression_center_point_box_format",
			   "node 0 (NonMaxSuppression): unsupported operator");
	ASSERT_MODEL_ERROR("node/test_unique_not_sorted_without_axis",
			   "unsupported operator Unique");
}

TEST(unsupported_attribute_and_type)
{
	ASSERT_MODEL_ERROR("node/test_batchnorm_example_training_mode",
			   "unsupported training mode");
	ASSERT_MODEL_ERROR("node/test_einsum_batch_diagonal",
			   "unsupported ellipsis");
	ASSERT_MODEL_ERROR("node/test_gathernd_example_int32_batch_dim1",
			   "unsupported batch_dims");
	ASSERT_MODEL_ERROR("node/test_cast_FLOAT_to_STRING",
			   "unsupported cast to STRING");
	ASSERT_MODEL_ERROR("node/test_min_uint64",
			   "unsupported element type UINT64");
}

TEST(convolution_pooling_and_layout_shapes)
{
	ASSERT_MODEL("pytorch-converted/test_Conv3d_groups", 1, "2x6x2x3x2");
	ASSERT_MODEL("pytorch-converted/test_ConvTranspose2d", 1, "1x4x20x12");
	ASSERT_MODEL("pytorch-converted/test_MaxPool3d_stride_padding", 1,
		     "2x3x3x3x3");
	ASSERT_MODEL("pytorch-converted/test_ReflectionPad2d", 1, "2x3x15x11");
	ASSERT_MODEL("pytorch-operator/test_operator_repeat", 1, "1x4x9x16");
	ASSERT_MODEL("node/test_maxpool_2d_ceil", 1, "1x1x2x2");
	ASSERT_MODEL("node/test_depthtospace_crd_mode_example", 1, "1x2x4x6");
	ASSERT_MODEL("node/test_argmax_keepdims_example", 1, "2x1");
	ASSERT_MODEL("node/test_nllloss_NCd1d2_with_weight_reduction_mean", 1,
		     "scalar");
	ASSERT_MODEL("node/test_sce_mean_weight_ii_log_prob", 2, "scalar");
	ASSERT_MODEL("node/test_gather_elements_0", 1, "2x2");
}

TEST(host_constant_handlers_fold)
{
	/*
	 * Range on initializers is a host constant at import: no parameter
	 * is left, and the folding that tries every node of constants keeps
	 * what the handler made (the unit tests also fail on leaks).
	 */
	struct vtpu_graph *g = NULL;
	char err[512] = "", buf[64];
	bool absent;
	int ret = parse_frozen("node/test_range_float_type_positive_delta", 0,
			       &g, err, sizeof(err), &absent);

	if (absent)
		SKIP(return, "test_range_float_type_positive_delta is not installed");
	ASSERT_EQ(0, ret) TH_LOG("%s", err);
	EXPECT_EQ(0, g->ir.nparams);
	EXPECT_STREQ("2", out_dims(g, 0, buf, sizeof(buf)));
	vtpu_graph_free(g);
}

TEST(sequences)
{
	/* Compile-time sequences: lists of values, no sequence at run time. */
	ASSERT_MODEL("simple/test_sequence_model1", 1, "1x3x4");
	ASSERT_MODEL("simple/test_sequence_model4", 1, "2x9x4");
	ASSERT_MODEL("simple/test_sequence_model5", 1, "2x3x4x3");
	ASSERT_MODEL("simple/test_sequence_model6", 1, "scalar");
}

/* The type of parameter @i (-1: output 0) of @test, parsed unbound. */
static int io_type(const char *test, int i, enum vtpu_type *t, bool *absent)
{
	struct vtpu_graph *g = NULL;
	struct vtpu_shape s;
	char err[512] = "";
	int ret = parse_model(test, &g, err, sizeof(err), absent);

	if (ret)
		return ret;
	for (int k = 0; k < g->ir.n && i >= 0; k++)
		if (g->ir.nodes[k].op == OP_PARAM &&
		    g->ir.nodes[k].a.param.index == i)
			ret = vtpu_graph_shape(g, k, &s);
	if (i < 0)
		ret = vtpu_graph_shape(g, g->ir.outputs[0], &s);
	*t = s.type;
	vtpu_graph_free(g);
	return ret;
}

TEST(device_types_at_the_boundary)
{
	enum vtpu_type t = VTPU_PRED;
	bool absent;

	/* DOUBLE computes as f32, INT64 as s32, BOOL leaves as s32 0/1. */
	ASSERT_EQ(0, io_type("node/test_cast_FLOAT_to_DOUBLE", -1, &t, &absent));
	EXPECT_EQ(VTPU_F32, t);
	ASSERT_EQ(0, io_type("node/test_where_long_example", 1, &t, &absent));
	EXPECT_EQ(VTPU_S32, t);
	ASSERT_EQ(0, io_type("node/test_where_long_example", 0, &t, &absent));
	EXPECT_EQ(VTPU_S32, t);		/* the BOOL condition */
	ASSERT_EQ(0, io_type("node/test_equal", -1, &t, &absent));
	EXPECT_EQ(VTPU_S32, t);
}

/* vtpu_onnx_parse_bound() on @test's model. */
static int parse_bound(const char *test, const struct vtpu_onnx_binding *b,
		       int n, struct vtpu_graph **g, char *err, size_t len)
{
	size_t mlen = 0;
	void *buf = slurp(model_path(test), &mlen);
	int ret;

	if (!buf)
		return -ENOENT;
	ret = vtpu_onnx_parse_bound(buf, mlen, b, n, g, err, len);
	free(buf);
	return ret;
}

TEST(bound_shape_input)
{
	/* Expand(X [1,3,1], shape): shape is a graph input, bound here. */
	static const int64_t shape[2] = { 1, 6 };
	struct vtpu_onnx_binding b = {
		.name = "shape", .rank = 1, .dims = { 2 }, .values = shape,
	};
	struct vtpu_graph *g = NULL;
	char err[512] = "", buf[64];
	int ret = parse_bound("simple/test_expand_shape_model1", &b, 1, &g, err,
			      sizeof(err));

	if (ret == -ENOENT)
		SKIP(return, "test_expand_shape_model1 is not installed");
	ASSERT_EQ(0, ret) TH_LOG("%s", err);
	EXPECT_STREQ("1x3x6", out_dims(g, 0, buf, sizeof(buf)));
	/* Still a parameter: the caller binds it at run time as before. */
	EXPECT_EQ(2, g->ir.nparams);
	vtpu_graph_free(g);
	/* Unbound, the shape is not known at compile time. */
	ASSERT_MODEL_ERROR("simple/test_expand_shape_model1",
			   "shape 'shape' is not constant");
}

/* How many nodes of @g are @op. */
static int count_op(const struct vtpu_graph *g, enum ir_op op)
{
	int cnt = 0;

	for (int i = 0; i < g->ir.n; i++)
		cnt += g->ir.nodes[i].op == op;
	return cnt;
}

TEST(bound_float_input)
{
	/* Resize's scales are a float graph input: bound, they are known. */
	static const double scales[4] = { 1, 1, 2, 2 };
	struct vtpu_onnx_binding b = {
		.name = "scales", .rank = 1, .dims = { 4 }, .fvalues = scales,
	};
	struct vtpu_graph *g = NULL;
	char err[512] = "", buf[64];
	int ret = parse_bound("node/test_resize_upsample_scales_linear", &b, 1,
			      &g, err, sizeof(err));

	if (ret == -ENOENT)
		SKIP(return, "test_resize_upsample_scales_linear is not installed");
	ASSERT_EQ(0, ret) TH_LOG("%s", err);
	EXPECT_STREQ("1x1x4x4", out_dims(g, 0, buf, sizeof(buf)));
	vtpu_graph_free(g);
	ASSERT_MODEL_ERROR("node/test_resize_upsample_scales_linear",
			   "scales 'scales' is not constant");
}

/* Evaluates output 0 of @g (f32) on the reference evaluator. */
static int eval_out0(struct vtpu_graph *g, const void *const *in, float *out,
		     size_t n)
{
	void *outs[8] = { 0 };
	int ret = ir_eval(&g->ir, in, outs);

	if (!ret)
		memcpy(out, outs[0], n * sizeof(float));
	for (int i = 0; i < g->ir.nout; i++)
		free(outs[i]);
	return ret;
}

/*
 * If: a condition bound at compile time builds its branch alone; left
 * to run time, both branches and a select, which must agree with it for
 * either value. (test_if's branches are constants of five floats.)
 */
TEST(if_with_a_condition_known_or_not)
{
	static const int64_t t = 1, f;
	struct vtpu_onnx_binding b = { .name = "cond", .rank = 0 };
	struct vtpu_graph *g = NULL, *k = NULL;
	float sel[5], want[5];
	char err[512] = "";
	int ret, which;

	ret = parse_bound("node/test_if", NULL, 0, &g, err, sizeof(err));
	if (ret == -ENOENT)
		SKIP(return, "test_if is not installed");
	ASSERT_EQ(0, ret) TH_LOG("%s", err);
	ASSERT_GE(count_op(g, OP_SELECT), 1);
	for (which = 0; which < 2; which++) {
		b.values = which ? &t : &f;
		ASSERT_EQ(0, parse_bound("node/test_if", &b, 1, &k, err, sizeof(err)))
			TH_LOG("%s", err);
		EXPECT_EQ(0, count_op(k, OP_SELECT));
		/* the parameter is s32 0/1 at the boundary */
		{
			int32_t c32 = which;

			ASSERT_EQ(0, eval_out0(k, (const void *[]){ &c32 }, want, 5));
			ASSERT_EQ(0, eval_out0(g, (const void *[]){ &c32 }, sel, 5));
		}
		for (int i = 0; i < 5; i++)
			EXPECT_EQ(want[i], sel[i]);
		vtpu_graph_free(k);
		k = NULL;
	}
	vtpu_graph_free(g);
}

/*
 * Loop: a known trip count unrolls (a trip count known only at run time
 * loops on the device, but not with scan outputs, whose shape it would
 * decide); Scan unrolls over its sequence.
 */
TEST(loop_and_scan_unroll)
{
	static const int64_t m = 5, yes = 1;
	struct vtpu_onnx_binding b[2] = {
		{ .name = "trip_count", .rank = 0, .values = &m },
		{ .name = "cond", .rank = 0, .values = &yes },
	};
	struct vtpu_graph *g = NULL;
	char err[512] = "", buf[64];
	int ret = parse_bound("node/test_loop11", b, 2, &g, err, sizeof(err));

	if (ret == -ENOENT)
		SKIP(return, "test_loop11 is not installed");
	ASSERT_EQ(0, ret) TH_LOG("%s", err);
	/* the scan output stacks one [1] value per iteration */
	EXPECT_STREQ("5x1", out_dims(g, 1, buf, sizeof(buf)));
	vtpu_graph_free(g);
	ASSERT_MODEL_ERROR("node/test_loop11",
			   "scan outputs of a Loop whose trip count is known only at run time");
	ASSERT_EQ(0, parse_bound("node/test_scan9_sum", NULL, 0, &g, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_STREQ("3x2", out_dims(g, 1, buf, sizeof(buf)));
	vtpu_graph_free(g);
}

TEST(bound_values_are_not_data)
{
	/*
	 * Gather indices are data: bound values do not make them
	 * constant. Both value sets give the same run-time gather (the
	 * indexed DMA on the parameter), not two folded tables.
	 */
	static const int64_t a[4] = { 0, 1, 2, 3 }, b[4] = { 3, 3, 0, 1 };
	struct vtpu_onnx_binding ba = {
		.name = "0", .rank = 2, .dims = { 1, 4 }, .values = a,
	};
	struct vtpu_onnx_binding bb = {
		.name = "0", .rank = 2, .dims = { 1, 4 }, .values = b,
	};
	struct vtpu_graph *ga = NULL, *gb = NULL;
	char err[512] = "", buf[64];
	int ret = parse_bound("pytorch-converted/test_Embedding", &ba, 1, &ga,
			      err, sizeof(err));

	if (ret == -ENOENT)
		SKIP(return, "test_Embedding is not installed");
	ASSERT_EQ(0, ret) TH_LOG("%s", err);
	ASSERT_EQ(0, parse_bound("pytorch-converted/test_Embedding", &bb, 1,
				 &gb, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_STREQ("1x4x3", out_dims(ga, 0, buf, sizeof(buf)));
	EXPECT_EQ(1, ga->ir.nparams);
	EXPECT_EQ(1, count_op(ga, OP_GATHER));
	EXPECT_EQ(ga->ir.n, gb->ir.n);
	vtpu_graph_free(ga);
	vtpu_graph_free(gb);
}

TEST(bad_bindings)
{
	static const int64_t shape[2] = { 1, 6 };
	const char *t = "simple/test_expand_shape_model1";
	struct vtpu_onnx_binding unknown = {
		.name = "nope", .rank = 1, .dims = { 2 }, .values = shape,
	};
	struct vtpu_onnx_binding wrong_dim = {
		.name = "X", .rank = 3, .dims = { 2, 3, 1 },
	};
	struct vtpu_onnx_binding twice[2] = {
		{ .name = "shape", .rank = 1, .dims = { 2 }, .values = shape },
		{ .name = "shape", .rank = 1, .dims = { 2 }, .values = shape },
	};
	struct vtpu_onnx_binding no_dims = {
		.name = "shape", .rank = -1, .values = shape,
	};
	struct vtpu_graph *g = (struct vtpu_graph *)&g;
	char err[512] = "";
	int ret = parse_bound(t, &unknown, 1, &g, err, sizeof(err));

	if (ret == -ENOENT)
		SKIP(return, "%s is not installed", t);
	EXPECT_EQ(-EINVAL, ret);
	EXPECT_NULL(g);
	EXPECT_NE(NULL, strstr(err, "no input 'nope'")) TH_LOG("%s", err);
	EXPECT_EQ(-EINVAL, parse_bound(t, &wrong_dim, 1, &g, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "dimension 0 is 1, bound to 2")) TH_LOG("%s", err);
	EXPECT_EQ(-EINVAL, parse_bound(t, twice, 2, &g, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "bound twice")) TH_LOG("%s", err);
	EXPECT_EQ(-EINVAL, parse_bound(t, &no_dims, 1, &g, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "no dims")) TH_LOG("%s", err);
	EXPECT_EQ(-EINVAL, parse_bound(t, NULL, 1, &g, err, sizeof(err)));
	EXPECT_NULL(g);
}

TEST(shape_operands_must_be_constant)
{
	/* test_reshape_* pass the shape as a graph input. */
	ASSERT_MODEL_ERROR("node/test_reshape_extended_dims",
			   "node 0 (Reshape): shape 'shape' is not constant");
}

TEST(symbolic_dimension)
{
	ASSERT_MODEL_ERROR("simple/test_sequence_model8",
			   "has symbolic dimension 'n' (bind it");
}

/*
 * Binds the model's inputs to test_data_set_0 of @dir by libvtpu's own
 * rules (vtpu_model_bind(), as vtpu-run and the conformance runner bind
 * them). Returns the number of bindings; @t, *@values and *@info are
 * the caller's to free once parsed.
 */
static int bind_data_set(const char *dir, const void *buf, size_t len,
			 struct vtpu_onnx_binding *b, struct vtpu_tensor *t,
			 void **values, struct vtpu_model_info **info)
{
	int n, nb;

	*values = NULL;
	if (vtpu_model_info(buf, len, info, NULL, 0))
		return 0;
	for (n = 0; n < (*info)->ninputs && n < 16; n++) {
		char path[1200];

		snprintf(path, sizeof(path), "%s/test_data_set_0/input_%d.pb",
			 dir, n);
		vtpu_tensor_load(path, &t[n], NULL, 0);	/* zeroed if not */
	}
	nb = vtpu_model_bind(*info, t, n, b, values, NULL, 0);
	return nb < 0 ? 0 : nb;
}

/*
 * Every model of ONNX's test data, under ASan/UBSan/LSan: parsed as it
 * is and bound to its first data set, each either a graph that
 * compiles or a clean refusal (-EOPNOTSUPP, with a message); never a
 * crash, a leak or another error.
 */
TEST(every_test_model_parses_or_is_refused_and_compiles)
{
	static const char *const cats[] = {
		"node", "pytorch-converted", "pytorch-operator", "simple",
	};
	struct vtpu_device_params dp = {
		.vmem_size = 1 << 20, .num_cores = 2, .hbm_size = 1 << 28,
	};
	struct vtpu_compile_options o = { 0 };
	int models = 0, graphs = 0;

	for (int ci = 0; ci < 4; ci++) {
		char dir[512];
		struct dirent *e;
		DIR *d;

		snprintf(dir, sizeof(dir), DATA "%s", cats[ci]);
		d = opendir(dir);
		if (!d)
			SKIP(return, "%s is not installed", dir);
		while ((e = readdir(d))) {
			char tdir[1024], path[1100], err[512] = "";
			struct vtpu_onnx_binding b[16];
			Onnx__ModelProto *m;
			size_t len = 0;
			void *buf;

			if (e->d_name[0] == '.')
				continue;
			snprintf(tdir, sizeof(tdir), "%s/%s", dir, e->d_name);
			snprintf(path, sizeof(path), "%s/model.onnx", tdir);
			buf = slurp(path, &len);
			if (!buf)
				continue;
			m = onnx__model_proto__unpack(NULL, len, buf);
			ASSERT_NE(NULL, m) TH_LOG("%s", path);
			models++;
			for (int bound = 0; bound < 2; bound++) {
				struct vtpu_graph *g = NULL;
				struct vtpu_program *prog = NULL;
				struct vtpu_tensor t[16] = { 0 };
				struct vtpu_model_info *info = NULL;
				void *values = NULL;
				int nb = bound ? bind_data_set(tdir, buf, len, b, t,
							       &values, &info) : 0;
				int r = vtpu_onnx_parse_bound(buf, len, b, nb, &g,
							      err, sizeof(err));

				EXPECT_TRUE(r == 0 || r == -EOPNOTSUPP)
					TH_LOG("%s: %d %s", tdir, r, err);
				if (r) {
					EXPECT_NE(0, err[0]) TH_LOG("%s", tdir);
				} else {
					graphs++;
					EXPECT_EQ(0, vtpu_compile(g, &dp, &o, &prog,
								  err, sizeof(err)))
						TH_LOG("%s: %s", tdir, err);
					vtpu_program_free(prog);
					vtpu_graph_free(g);
				}
				for (int i = 0; i < 16; i++)
					vtpu_tensor_free(&t[i]);
				free(values);
				vtpu_model_info_free(info);
			}
			onnx__model_proto__free_unpacked(m, NULL);
			free(buf);
		}
		closedir(d);
	}
	TH_LOG("%d models, %d graphs compiled", models, graphs);
	EXPECT_LT(1000, models);
	EXPECT_LT(models, graphs);	/* most models parse, bound or not */
#ifdef __SANITIZE_ADDRESS__
	/* The harness's child _exit()s, so LSan would never look: ask it. */
	EXPECT_EQ(0, __lsan_do_recoverable_leak_check());
#endif
}

/*
 * A Scan whose body has an input without a name (protobuf allows it) is
 * refused with a message; it used to be looked up by a NULL name
 * (found by the fuzzer).
 */
/* A Scan body's first input, then its first output, without a name. */
TEST(subgraph_value_without_a_name)
{
	size_t len = 0, plen;
	void *buf = slurp(model_path("node/test_scan9_sum"), &len), *packed;
	Onnx__ModelProto *m = buf ? onnx__model_proto__unpack(NULL, len, buf) :
			      NULL;
	Onnx__GraphProto *body = NULL;
	struct vtpu_graph *g = NULL;
	char err[256] = "", *name, **slot;
	size_t i;
	int out;

	if (!buf)
		SKIP(return, "the ONNX node tests are not installed");
	ASSERT_NE(NULL, m);
	ASSERT_LT(0, m->graph->n_node);
	for (i = 0; i < m->graph->node[0]->n_attribute; i++)
		if (m->graph->node[0]->attribute[i]->g)
			body = m->graph->node[0]->attribute[i]->g;
	ASSERT_NE(NULL, body);
	ASSERT_LT(0, body->n_input);
	ASSERT_LT(0, body->n_output);
	for (out = 0; out < 2; out++) {
		slot = out ? &body->output[0]->name : &body->input[0]->name;
		name = *slot;
		*slot = NULL;
		plen = onnx__model_proto__get_packed_size(m);
		packed = malloc(plen);
		ASSERT_NE(NULL, packed);
		onnx__model_proto__pack(m, packed);
		*slot = name;
		err[0] = 0;
		EXPECT_GT(0, vtpu_onnx_parse(packed, plen, &g, err, sizeof(err)));
		EXPECT_NULL(g);
		EXPECT_NE(NULL, strstr(err, "without a name"))
			TH_LOG("%s: %s", out ? "output" : "input", err);
		free(packed);
	}
	onnx__model_proto__free_unpacked(m, NULL);
	free(buf);
}

/*
 * A node whose first input is absent (an empty name): refused as such,
 * not folded as though its inputs were all known (onnx-fuzz, UBSan: a
 * Cast looked its input up and used what it did not find).
 */
TEST(absent_first_input_is_refused)
{
	size_t len = 0, plen;
	void *buf = slurp(model_path("node/test_cast_DOUBLE_to_FLOAT"), &len);
	Onnx__ModelProto *m = buf ? onnx__model_proto__unpack(NULL, len, buf) :
			      NULL;
	struct vtpu_graph *g = NULL;
	char err[256] = "", *name, empty[1] = "";
	void *packed;

	if (!buf)
		SKIP(return, "the ONNX node tests are not installed");
	ASSERT_NE(NULL, m);
	ASSERT_EQ(1, m->graph->n_node);
	ASSERT_LT(0, m->graph->node[0]->n_input);
	name = m->graph->node[0]->input[0];
	m->graph->node[0]->input[0] = empty;
	plen = onnx__model_proto__get_packed_size(m);
	packed = malloc(plen);
	ASSERT_NE(NULL, packed);
	onnx__model_proto__pack(m, packed);
	m->graph->node[0]->input[0] = name;
	EXPECT_GT(0, vtpu_onnx_parse(packed, plen, &g, err, sizeof(err)));
	EXPECT_NULL(g);
	EXPECT_NE(NULL, strstr(err, "missing input 0")) TH_LOG("%s", err);
	free(packed);
	onnx__model_proto__free_unpacked(m, NULL);
	free(buf);
}

TEST(garbage)
{
	static const unsigned char junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
					      0x0f, 0x12, 0x34, 0x56 };
	struct vtpu_graph *g = (struct vtpu_graph *)&g;
	char err[256] = "";
	void *copy = malloc(sizeof(junk));

	ASSERT_NE(NULL, copy);
	memcpy(copy, junk, sizeof(junk));
	EXPECT_EQ(-EINVAL, vtpu_onnx_parse(copy, sizeof(junk), &g, err,
					   sizeof(err)));
	EXPECT_NULL(g);
	EXPECT_NE(NULL, strstr(err, "malformed ONNX protobuf")) TH_LOG("%s", err);
	/* Nothing at all is an empty ModelProto: no graph. */
	g = (struct vtpu_graph *)&g;
	EXPECT_EQ(-EINVAL, vtpu_onnx_parse(copy, 0, &g, err, sizeof(err)));
	EXPECT_NULL(g);
	EXPECT_NE(NULL, strstr(err, "no graph")) TH_LOG("%s", err);
	free(copy);
}

TEST(truncated)
{
	size_t len = 0;
	void *buf = slurp(model_path("node/test_conv_with_strides_padding"), &len);
	int fails = 0;

	if (!buf)
		SKIP(return, "test_conv_with_strides_padding is not installed");
	/* Every prefix must fail cleanly (or, rarely, parse a valid prefix). */
	for (size_t cut = 0; cut < len; cut++) {
		struct vtpu_graph *g = NULL;
		char err[256] = "";
		void *copy = malloc(cut ? cut : 1);
		int ret;

		ASSERT_NE(NULL, copy);
		memcpy(copy, buf, cut);
		ret = vtpu_onnx_parse(copy, cut, &g, err, sizeof(err));
		free(copy);
		if (ret) {
			/* Bytes that decode to a (broken) model are refused too. */
			EXPECT_TRUE(ret == -EINVAL || ret == -EOPNOTSUPP);
			EXPECT_NULL(g);
			EXPECT_NE(0, err[0]);
			fails++;
		} else {
			vtpu_graph_free(g);
		}
	}
	EXPECT_GT(fails, (int)len / 2);
	/* Cut in the middle of the weights: malformed. */
	{
		struct vtpu_graph *g = NULL;
		char err[256] = "";

		int r = vtpu_onnx_parse(buf, len - 3, &g, err, sizeof(err));

		EXPECT_TRUE(r == -EINVAL || r == -EOPNOTSUPP);
		EXPECT_NULL(g);
	}
	free(buf);
}

TEST(null_err_buffer)
{
	static const unsigned char junk[] = { 0xff, 0xff };
	struct vtpu_graph *g = NULL;

	EXPECT_EQ(-EINVAL, vtpu_onnx_parse(junk, sizeof(junk), &g, NULL, 0));
	EXPECT_NULL(g);
}

TEST_HARNESS_MAIN
