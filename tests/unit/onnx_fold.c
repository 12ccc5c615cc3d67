// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the ONNX frontend folds shape arithmetic exactly in int64:
 * a Slice end of INT64_MAX or INT64_MIN built through Concat, a
 * dimension of 2^24 + 1, integer division that truncates, Mod's two
 * sign conventions, values beyond 2^53, empty shape vectors, negative
 * axes and indices, comparisons and Where; and an s64 computation that
 * reaches the compiler is refused by lowering.
 *
 * Each test builds a small ModelProto with protobuf-c, parses it and
 * checks the output's dims or, for a folded output, its values.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "vtpu_compiler.h"
#include "onnx.pb-c.h"

#include "kselftest_harness.h"

#define MAX_NODES	16

/* A model under construction; everything it points to lives in it. */
struct model {
	Onnx__ModelProto m;
	Onnx__OperatorSetIdProto opset, *opsets[1];
	Onnx__GraphProto g;
	Onnx__NodeProto nodes[MAX_NODES], *pnodes[MAX_NODES];
	Onnx__AttributeProto attrs[MAX_NODES], *pattrs[MAX_NODES];
	Onnx__TensorProto consts[MAX_NODES];
	Onnx__ValueInfoProto in, out, *pin[1], *pout[1];
	Onnx__TypeProto in_type, out_type;
	Onnx__TypeProto__Tensor in_tt, out_tt;
	Onnx__TensorShapeProto in_shape;
	Onnx__TensorShapeProto__Dimension dims[4], *pdims[4];
	int64_t cdata[MAX_NODES][4];
	float fdata[MAX_NODES][16];
	int64_t fdims[MAX_NODES][2];
	char *io[MAX_NODES][8];
	char names[MAX_NODES][16];
};

/* A model of one f32 input "x" of @rank/@dims and output "y". */
static void model_init(struct model *md, int rank, const int64_t *dims)
{
	memset(md, 0, sizeof(*md));
	onnx__model_proto__init(&md->m);
	onnx__operator_set_id_proto__init(&md->opset);
	onnx__graph_proto__init(&md->g);
	md->opset.has_version = true;
	md->opset.version = 13;
	md->opsets[0] = &md->opset;
	md->m.n_opset_import = 1;
	md->m.opset_import = md->opsets;
	md->m.has_ir_version = true;
	md->m.ir_version = 7;
	md->m.graph = &md->g;
	md->g.name = "t";

	onnx__value_info_proto__init(&md->in);
	onnx__type_proto__init(&md->in_type);
	onnx__type_proto__tensor__init(&md->in_tt);
	onnx__tensor_shape_proto__init(&md->in_shape);
	for (int i = 0; i < rank; i++) {
		onnx__tensor_shape_proto__dimension__init(&md->dims[i]);
		md->dims[i].value_case =
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		md->dims[i].dim_value = dims[i];
		md->pdims[i] = &md->dims[i];
	}
	md->in_shape.n_dim = rank;
	md->in_shape.dim = md->pdims;
	md->in_tt.has_elem_type = true;
	md->in_tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	md->in_tt.shape = &md->in_shape;
	md->in_type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	md->in_type.tensor_type = &md->in_tt;
	md->in.name = "x";
	md->in.type = &md->in_type;
	md->pin[0] = &md->in;
	md->g.n_input = 1;
	md->g.input = md->pin;

	onnx__value_info_proto__init(&md->out);
	md->out.name = "y";
	md->pout[0] = &md->out;
	md->g.n_output = 1;
	md->g.output = md->pout;
	md->g.node = md->pnodes;
}

/*
 * Appends node @op with "|"-separated @ins and @outs (at most 7 each);
 * @attr and @ival an optional int attribute.
 */
static void node(struct model *md, const char *op, const char *ins,
		 const char *outs, const char *attr, int64_t ival)
{
	int k = (int)md->g.n_node, ni = 0, no = 0;
	Onnx__NodeProto *n = &md->nodes[k];
	char *s = strdup(ins), *o = strdup(outs), *t, *save;

	onnx__node_proto__init(n);
	n->op_type = (char *)op;
	md->io[k][0] = s;
	md->io[k][1] = o;
	n->input = &md->io[k][2];
	for (t = strtok_r(s, "|", &save); t; t = strtok_r(NULL, "|", &save))
		md->io[k][2 + ni++] = t;
	n->n_input = ni;
	n->output = &md->io[k][2 + ni];
	for (t = strtok_r(o, "|", &save); t; t = strtok_r(NULL, "|", &save))
		md->io[k][2 + ni + no++] = t;
	n->n_output = no;
	if (attr) {
		onnx__attribute_proto__init(&md->attrs[k]);
		md->attrs[k].name = (char *)attr;
		md->attrs[k].has_type = true;
		md->attrs[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		md->attrs[k].has_i = true;
		md->attrs[k].i = ival;
		md->pattrs[k] = &md->attrs[k];
		n->n_attribute = 1;
		n->attribute = &md->pattrs[k];
	}
	md->pnodes[k] = n;
	md->g.n_node++;
}

/* A Constant node "name" holding int64s (a 1-D tensor, or a scalar). */
static void iconst(struct model *md, const char *name, int n,
		   const int64_t *v, bool scalar)
{
	int k = (int)md->g.n_node;
	Onnx__TensorProto *t = &md->consts[k];
	static int64_t dims1[MAX_NODES];

	onnx__tensor_proto__init(t);
	t->has_data_type = true;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	memcpy(md->cdata[k], v, n * sizeof(*v));
	t->n_int64_data = n;
	t->int64_data = md->cdata[k];
	dims1[k] = n;
	t->n_dims = scalar ? 0 : 1;
	t->dims = scalar ? NULL : &dims1[k];
	node(md, "Constant", "", name, NULL, 0);
	md->attrs[k].name = "value";
	onnx__attribute_proto__init(&md->attrs[k]);
	md->attrs[k].name = "value";
	md->attrs[k].has_type = true;
	md->attrs[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	md->attrs[k].t = t;
	md->pattrs[k] = &md->attrs[k];
	md->nodes[k].n_attribute = 1;
	md->nodes[k].attribute = &md->pattrs[k];
}

/* A Constant node "name" of f32 @v: a scalar (@rows 0) or @rows x @cols. */
static void fconst(struct model *md, const char *name, int rows, int cols,
		   const float *v)
{
	int k = (int)md->g.n_node, n = rows ? rows * cols : 1;
	Onnx__TensorProto *t = &md->consts[k];

	onnx__tensor_proto__init(t);
	t->has_data_type = true;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	memcpy(md->fdata[k], v, n * sizeof(*v));
	t->n_float_data = n;
	t->float_data = md->fdata[k];
	md->fdims[k][0] = rows;
	md->fdims[k][1] = cols;
	t->n_dims = rows ? 2 : 0;
	t->dims = rows ? md->fdims[k] : NULL;
	node(md, "Constant", "", name, NULL, 0);
	onnx__attribute_proto__init(&md->attrs[k]);
	md->attrs[k].name = "value";
	md->attrs[k].has_type = true;
	md->attrs[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	md->attrs[k].t = t;
	md->pattrs[k] = &md->attrs[k];
	md->nodes[k].n_attribute = 1;
	md->nodes[k].attribute = &md->pattrs[k];
}

static int parse(struct model *md, struct vtpu_graph **g, char *err,
		 size_t errlen)
{
	size_t len = onnx__model_proto__get_packed_size(&md->m);
	void *buf = malloc(len ? len : 1);
	int ret;

	if (!buf)
		return -ENOMEM;
	onnx__model_proto__pack(&md->m, buf);
	ret = vtpu_onnx_parse(buf, len, g, err, errlen);
	free(buf);
	for (size_t k = 0; k < md->g.n_node; k++) {
		free(md->io[k][0]);
		free(md->io[k][1]);
	}
	return ret;
}

/* Output 0's dims as "AxB" ("scalar" for rank 0). */
static const char *dims_of(struct vtpu_graph *g, char *buf, size_t len)
{
	struct vtpu_shape s;
	size_t at = 0;

	vtpu_graph_shape(g, g->ir.outputs[0], &s);
	buf[0] = 0;
	if (!s.rank)
		snprintf(buf, len, "scalar");
	for (int i = 0; i < s.rank && at < len; i++)
		at += snprintf(buf + at, len - at, "%s%lld", i ? "x" : "",
			       (long long)s.dims[i]);
	return buf;
}

/* Element @i of output 0, a folded constant (int64 arrives as s32). */
static int64_t folded_at(struct vtpu_graph *g, int i)
{
	const struct ir_node *n = &g->ir.nodes[g->ir.outputs[0]];

	if (n->op != OP_CONST || n->shape.type != VTPU_S32)
		return INT64_MIN;
	return ((const int32_t *)n->a.cst.data)[i];
}

#define PARSE_OK(md, g) do {						\
	char err_[512] = "";						\
	ASSERT_EQ(0, parse(md, g, err_, sizeof(err_))) TH_LOG("%s", err_); \
} while (0)

TEST(slice_end_int64_max_through_concat)
{
	static const int64_t x[] = { 5, 4 }, big[] = { INT64_MAX },
		three[] = { 3 }, st[] = { 1, 0 }, ax[] = { 0, 1 };
	struct vtpu_graph *g = NULL;
	struct model md;
	char buf[64];

	model_init(&md, 2, x);
	iconst(&md, "big", 1, big, false);
	iconst(&md, "three", 1, three, false);
	iconst(&md, "st", 2, st, false);
	iconst(&md, "ax", 2, ax, false);
	node(&md, "Concat", "big|three", "en", "axis", 0);
	node(&md, "Slice", "x|st|en|ax", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_STREQ("4x3", dims_of(g, buf, sizeof(buf)));
	vtpu_graph_free(g);
}

TEST(slice_end_int64_min_through_concat_reverses)
{
	static const int64_t x[] = { 5, 4 }, small[] = { INT64_MIN },
		st[] = { -1 }, ax[] = { -2 }, step[] = { -1 };
	struct vtpu_graph *g = NULL;
	struct model md;
	char buf[64];

	model_init(&md, 2, x);
	iconst(&md, "small", 1, small, false);
	iconst(&md, "st", 1, st, false);
	iconst(&md, "ax", 1, ax, false);
	iconst(&md, "step", 1, step, false);
	node(&md, "Concat", "small", "en", "axis", 0);
	node(&md, "Slice", "x|st|en|ax|step", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_STREQ("5x4", dims_of(g, buf, sizeof(buf)));
	vtpu_graph_free(g);
}

TEST(dimension_of_2_pow_24_plus_1)
{
	/* Shape -> Concat -> Reshape: 16777217 is not an f32. */
	static const int64_t x[] = { (1 << 24) + 1 }, one[] = { 1 };
	struct vtpu_graph *g = NULL;
	struct model md;
	char buf[64];

	model_init(&md, 1, x);
	node(&md, "Shape", "x", "s", NULL, 0);
	iconst(&md, "one", 1, one, false);
	node(&md, "Concat", "s|one", "t", "axis", 0);
	node(&md, "Reshape", "x|t", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_STREQ("16777217x1", dims_of(g, buf, sizeof(buf)));
	vtpu_graph_free(g);
}

TEST(integer_division_truncates)
{
	/*
	 * torch's chunk(3) of 770 columns, as exported: (770 + 2) / 3 = 257
	 * rounds from 257.33 either way; (769 + 2) / 3 = 257 exactly, and
	 * 770 / 3 = 256.67 must give 256, not 257.
	 */
	static const int64_t x[] = { 2, 770 }, m1[] = { -1 }, three[] = { 3 },
		zero[] = { 0 };
	struct vtpu_graph *g = NULL;
	struct model md;
	char buf[64];

	model_init(&md, 2, x);
	node(&md, "Shape", "x", "s", NULL, 0);
	iconst(&md, "m1", 1, m1, false);
	node(&md, "Gather", "s|m1", "last", "axis", 0);
	iconst(&md, "three", 1, three, false);
	node(&md, "Div", "last|three", "chunk", NULL, 0);
	iconst(&md, "zero", 1, zero, false);
	node(&md, "Slice", "x|zero|chunk|m1", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_STREQ("2x256", dims_of(g, buf, sizeof(buf)));
	vtpu_graph_free(g);
}

TEST(values_beyond_2_pow_53_are_exact)
{
	/* (INT64_MAX - 2^32) / 2^32 = 2^31 - 2; f32 or double say 2^31. */
	static const int64_t x[] = { 1 }, big[] = { INT64_MAX },
		p32[] = { 1ll << 32 };
	struct vtpu_graph *g = NULL;
	struct model md;

	model_init(&md, 1, x);
	iconst(&md, "big", 1, big, true);
	iconst(&md, "p32", 1, p32, true);
	node(&md, "Sub", "big|p32", "d", NULL, 0);
	node(&md, "Div", "d|p32", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_EQ((1ll << 31) - 2, folded_at(g, 0));
	vtpu_graph_free(g);
}

TEST(mod_follows_the_divisor_or_the_dividend)
{
	static const int64_t x[] = { 1 }, a[] = { -7, 7 }, b[] = { 3, -3 };
	struct vtpu_graph *g = NULL;
	struct model md;

	model_init(&md, 1, x);
	iconst(&md, "a", 2, a, false);
	iconst(&md, "b", 2, b, false);
	node(&md, "Mod", "a|b", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_EQ(2, folded_at(g, 0));
	EXPECT_EQ(-2, folded_at(g, 1));
	vtpu_graph_free(g);

	model_init(&md, 1, x);
	iconst(&md, "a", 2, a, false);
	iconst(&md, "b", 2, b, false);
	node(&md, "Mod", "a|b", "y", "fmod", 1);
	PARSE_OK(&md, &g);
	EXPECT_EQ(-1, folded_at(g, 0));
	EXPECT_EQ(1, folded_at(g, 1));
	vtpu_graph_free(g);
}

TEST(empty_shape_vectors)
{
	/* x.shape[2:] of a matrix is empty; Concat with it adds nothing. */
	static const int64_t x[] = { 3, 4 }, two[] = { 2 },
		end[] = { INT64_MAX }, zero[] = { 0 }, t[] = { 4, 3 };
	struct vtpu_graph *g = NULL;
	struct model md;
	char buf[64];

	model_init(&md, 2, x);
	node(&md, "Shape", "x", "s", NULL, 0);
	iconst(&md, "two", 1, two, false);
	iconst(&md, "end", 1, end, false);
	iconst(&md, "zero", 1, zero, false);
	node(&md, "Slice", "s|two|end|zero", "none", NULL, 0);
	iconst(&md, "t", 2, t, false);
	node(&md, "Concat", "t|none", "shape", "axis", 0);
	node(&md, "Reshape", "x|shape", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_STREQ("4x3", dims_of(g, buf, sizeof(buf)));
	vtpu_graph_free(g);
}

TEST(negative_axes_and_indices)
{
	/*
	 * Unsqueeze at axis -1 (a folded Concat), then the shape's last two
	 * entries by Gather with negative indices, reversed: [1, 6].
	 */
	static const int64_t x[] = { 2, 3, 6 }, ax[] = { -1 }, idx[] = { -1, -2 };
	struct vtpu_graph *g = NULL;
	struct model md;

	model_init(&md, 3, x);
	iconst(&md, "ax0", 1, ax, false);
	node(&md, "Concat", "ax0", "ax", "axis", 0);
	node(&md, "Unsqueeze", "x|ax", "u", NULL, 0);
	node(&md, "Shape", "u", "s", NULL, 0);
	iconst(&md, "idx", 2, idx, false);
	node(&md, "Gather", "s|idx", "y", "axis", -1);
	PARSE_OK(&md, &g);
	EXPECT_EQ(1, folded_at(g, 0));
	EXPECT_EQ(6, folded_at(g, 1));
	vtpu_graph_free(g);
}

TEST(comparisons_and_where_on_shapes)
{
	/* Reshape's 0 means "copy": Where(Equal(t, 0), Shape, t) = [2, 12]. */
	static const int64_t x[] = { 2, 3, 4 }, t[] = { 0, 12 }, zero[] = { 0 },
		two[] = { 0, 1 };
	struct vtpu_graph *g = NULL;
	struct model md;
	char buf[64];

	model_init(&md, 3, x);
	node(&md, "Shape", "x", "s3", NULL, 0);
	iconst(&md, "two", 2, two, false);
	node(&md, "Gather", "s3|two", "s", "axis", 0);
	iconst(&md, "t", 2, t, false);
	iconst(&md, "zero", 1, zero, false);
	node(&md, "Equal", "t|zero", "eq", NULL, 0);
	node(&md, "Where", "eq|s|t", "shape", NULL, 0);
	node(&md, "Reshape", "x|shape", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_STREQ("2x12", dims_of(g, buf, sizeof(buf)));
	vtpu_graph_free(g);
}

TEST(s64_computation_is_refused_by_lowering)
{
	struct vtpu_shape s = { VTPU_S64, 1, { 4 } };
	struct vtpu_device_params dev = { .vmem_size = 1 << 20, .num_cores = 1,
					  .hbm_size = 64 << 20 };
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_program *p = NULL;
	int64_t lo[1] = { 1 }, hi[1] = { 3 }, st[1] = { 1 };
	char err[512] = "";
	int y;

	ASSERT_NE(NULL, g);
	y = vtpu_g_slice(g, vtpu_g_parameter(g, 0, &s, "x"), lo, hi, st);
	ASSERT_LE(0, y);
	ASSERT_LE(0, vtpu_g_outputs(g, 1, &y));
	EXPECT_GT(0, vtpu_compile(g, &dev, NULL, &p, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "s64 computation")) TH_LOG("%s", err);
	vtpu_program_free(p);
	vtpu_graph_free(g);
}

/* The op of output 0 and whether its operand 0 is the parameter. */
static enum ir_op out_op(struct vtpu_graph *g, bool *of_param)
{
	const struct ir_node *n = &g->ir.nodes[g->ir.outputs[0]];

	*of_param = n->nin && g->ir.nodes[n->in[0]].op == OP_PARAM;
	return n->op;
}

static const float sqrt2 = 1.41421353816986083984375f, one = 1, half = 0.5f;

/*
 * torch's export of exact GELU, x * (1 + erf(x / @scale)) * 0.5, its
 * product taken with @times ("x" for GELU), parsed: output 0's op.
 */
static enum ir_op torch_gelu(struct __test_metadata *_metadata, float scale,
			     const char *times, bool *of_x)
{
	static const int64_t x[] = { 2, 5 };
	struct vtpu_graph *g = NULL;
	char ins[16];
	struct model md;
	enum ir_op op;

	model_init(&md, 2, x);
	fconst(&md, "s2", 0, 0, &scale);
	fconst(&md, "one", 0, 0, &one);
	fconst(&md, "half", 0, 0, &half);
	node(&md, "Div", "x|s2", "d", NULL, 0);
	node(&md, "Erf", "d", "e", NULL, 0);
	node(&md, "Add", "e|one", "a", NULL, 0);
	snprintf(ins, sizeof(ins), "%s|a", times);
	node(&md, "Mul", ins, "m", NULL, 0);
	node(&md, "Mul", "m|half", "y", NULL, 0);
	PARSE_OK(&md, &g);
	op = out_op(g, of_x);
	vtpu_graph_free(g);
	return op;
}

TEST(torch_gelu_becomes_the_devices_gelu)
{
	bool of_x;

	EXPECT_EQ(OP_GELU, torch_gelu(_metadata, sqrt2, "x", &of_x));
	EXPECT_TRUE(of_x);
}

/* Hugging Face's: (x * 0.5) * (1 + erf(x * (1 / sqrt2))) */
TEST(hf_gelu_becomes_the_devices_gelu)
{
	static const int64_t x[] = { 3 };
	static const float rs2 = 0.707106769084930419921875f;
	struct vtpu_graph *g = NULL;
	struct model md;
	bool of_x;

	model_init(&md, 1, x);
	fconst(&md, "rs2", 0, 0, &rs2);
	fconst(&md, "one", 0, 0, &one);
	fconst(&md, "half", 0, 0, &half);
	node(&md, "Mul", "half|x", "h", NULL, 0);
	node(&md, "Mul", "x|rs2", "d", NULL, 0);
	node(&md, "Erf", "d", "e", NULL, 0);
	node(&md, "Add", "one|e", "a", NULL, 0);
	node(&md, "Mul", "h|a", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_EQ(OP_GELU, out_op(g, &of_x));
	EXPECT_TRUE(of_x);
	vtpu_graph_free(g);
}

/* Another scale, or another x, is not GELU: Erf stays. */
TEST(near_gelu_patterns_stay_erf)
{
	bool of_x;

	EXPECT_NE(OP_GELU, torch_gelu(_metadata, 2, "x", &of_x));
	EXPECT_NE(OP_GELU, torch_gelu(_metadata, sqrt2, "a", &of_x));
}

/* [B, S, E] x [E, N]: one matmul of B*S rows, not B copies of the weight. */
TEST(matmul_with_a_shared_weight_does_not_copy_it)
{
	static const int64_t x[] = { 3, 4, 2 };
	static const float w[6] = { 1, 2, 3, 4, 5, 6 };
	struct vtpu_graph *g = NULL;
	struct model md;
	char buf[64];
	int i, bcast = 0;

	model_init(&md, 3, x);
	fconst(&md, "w", 2, 3, w);
	node(&md, "MatMul", "x|w", "y", NULL, 0);
	PARSE_OK(&md, &g);
	EXPECT_STREQ("3x4x3", dims_of(g, buf, sizeof(buf)));
	for (i = 0; i < g->ir.n; i++)
		bcast += g->ir.nodes[i].op == OP_BROADCAST;
	EXPECT_EQ(0, bcast);
	vtpu_graph_free(g);
}

TEST_HARNESS_MAIN
