// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: vtpu_hlo_parse() reads the XLA HLO text subset into the
 * graph the builder would make, and rejects every malformed input with
 * -EINVAL and "LINE:COL: ..." pointing at the first problem.
 *
 * The modules are written in the style of XLA's own tests and of what
 * JAX dumps (layouts, metadata, "%" or not, operand shapes in older
 * dumps). Every text is parsed from an exact-size heap copy with no NUL
 * after it, so AddressSanitizer catches any read past the end. These
 * tests check parsing; compiling and running the modules is e2e's job.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "vtpu_compiler.h"

#include "kselftest_harness.h"

/* Parses @len bytes of @text from an exact-size copy. */
static int parse(const char *text, size_t len, struct vtpu_graph **g,
		 char *err, size_t errlen)
{
	char *copy = calloc(1, len ? len : 1);
	int ret;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	ret = vtpu_hlo_parse(copy, len, g, err, errlen);
	free(copy);
	return ret;
}

static struct vtpu_graph *parse_ok(struct __test_metadata *_metadata,
				   const char *text)
{
	struct vtpu_graph *g = NULL;
	char err[256] = "";

	ASSERT_EQ(0, parse(text, strlen(text), &g, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_NE(NULL, g);
	return g;
}

/* @len bytes of @text must fail with -EINVAL at @where ("LINE:COL"), saying @what. */
#define ASSERT_HLO_ERROR_N(text, len, where, what) do { \
	struct vtpu_graph *g_ = (struct vtpu_graph *)&g_; \
	const char *t_ = (text); \
	char err_[256] = ""; \
	ASSERT_EQ(-EINVAL, parse(t_, len, &g_, err_, sizeof(err_))) \
		TH_LOG("parsed:\n%s", t_); \
	ASSERT_NULL(g_); \
	ASSERT_EQ(0, strncmp(err_, where ": ", strlen(where ": "))) \
		TH_LOG("got \"%s\", want it at %s", err_, where); \
	ASSERT_NE(NULL, strstr(err_, what)) \
		TH_LOG("got \"%s\", want \"%s\"", err_, what); \
} while (0)

#define ASSERT_HLO_ERROR(text, where, what) \
	ASSERT_HLO_ERROR_N(text, strlen(text), where, what)

static const char *shape_str(const struct vtpu_graph *g, int v, char *buf,
			     size_t n)
{
	static const char *const types[] = { "f32", "bf16", "s32", "s64",
					     "pred" };
	struct vtpu_shape s;
	size_t k;
	int i;

	if (vtpu_graph_shape(g, v, &s))
		return "(bad id)";
	k = snprintf(buf, n, "%s[", types[s.type]);
	for (i = 0; i < s.rank; i++)
		k += snprintf(buf + k, n - k, "%s%lld", i ? "," : "",
			      (long long)s.dims[i]);
	snprintf(buf + k, n - k, "]");
	return buf;
}

#define SHAPE(g, v) shape_str(g, v, (char[96]){ 0 }, 96)

/* The graph's output @i, or -1. */
static int output(const struct vtpu_graph *g, int i)
{
	return i < g->ir.nout ? g->ir.outputs[i] : -1;
}

static const struct ir_node *node(const struct vtpu_graph *g, int v)
{
	return &g->ir.nodes[v];
}

/*
 * Parses @text and evaluates it with the reference evaluator (eval.c,
 * which knows nothing of the frontend) on f32 or s32 inputs @in; output
 * @k's elements, as doubles, in @out. The expected values in the tests
 * are worked out by hand from XLA's semantics.
 */
static int eval_hlo(struct __test_metadata *_metadata, const char *text,
		    const void *const *in, int k, double *out, int max)
{
	struct vtpu_graph *g = parse_ok(_metadata, text);
	void *outs[16] = { 0 };
	struct vtpu_shape s;
	int64_t n, i;
	int ret;

	ret = ir_eval(&g->ir, in, outs);
	ASSERT_EQ(0, ret);
	ASSERT_LT(k, g->ir.nout);
	ASSERT_EQ(0, vtpu_graph_shape(g, output(g, k), &s));
	n = (int64_t)vtpu_shape_elems(&s);
	ASSERT_LE(n, max);
	for (i = 0; i < n; i++) {
		if (s.type == VTPU_F32)
			out[i] = ((float *)outs[k])[i];
		else if (s.type == VTPU_S32)
			out[i] = ((int32_t *)outs[k])[i];
		else if (s.type == VTPU_PRED)
			out[i] = ((uint8_t *)outs[k])[i];
		else
			out[i] = vtpu_bf16_to_f32(((uint16_t *)outs[k])[i]);
	}
	for (i = 0; i < g->ir.nout; i++)
		free(outs[i]);
	vtpu_graph_free(g);
	return (int)n;
}

#define ASSERT_VALUES(got, n, ...) do { \
	const double want_[] = { __VA_ARGS__ }; \
	int i_; \
	ASSERT_EQ((int)(sizeof(want_) / sizeof(want_[0])), n); \
	for (i_ = 0; i_ < (n); i_++) { \
		double g_ = (got)[i_], w_ = want_[i_]; \
		ASSERT_TRUE(fabs(g_ - w_) <= 1e-5 * (1 + fabs(w_))) \
			TH_LOG("element %d: %.9g, want %.9g", i_, g_, w_); \
	} \
} while (0)

/* ---- modules that parse ---------------------------------------------------- */

TEST(elementwise_binary_ops_keep_the_shape)
{
	static const struct { const char *hlo; enum ir_op op; } ops[] = {
		{ "add", OP_ADD }, { "subtract", OP_SUB },
		{ "multiply", OP_MUL }, { "divide", OP_DIV },
		{ "maximum", OP_MAX }, { "minimum", OP_MIN },
		{ "power", OP_POW },
	};
	char text[512];
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct vtpu_graph *g;

		snprintf(text, sizeof(text),
			 "HloModule %s_module, entry_computation_layout={(f32[2,3]{1,0}, f32[2,3]{1,0})->f32[2,3]{1,0}}\n"
			 "\n"
			 "ENTRY %%%s.3 (a: f32[2,3], b: f32[2,3]) -> f32[2,3] {\n"
			 "  %%a = f32[2,3]{1,0} parameter(0)\n"
			 "  %%b = f32[2,3]{1,0} parameter(1)\n"
			 "  ROOT %%r = f32[2,3]{1,0} %s(f32[2,3]{1,0} %%a, f32[2,3]{1,0} %%b)\n"
			 "}\n", ops[i].hlo, ops[i].hlo, ops[i].hlo);
		g = parse_ok(_metadata, text);
		ASSERT_EQ(3, g->ir.n);
		ASSERT_EQ(1, g->ir.nout);
		ASSERT_EQ(ops[i].op, node(g, output(g, 0))->op)
			TH_LOG("%s", ops[i].hlo);
		ASSERT_STREQ("f32[2,3]", SHAPE(g, output(g, 0)));
		vtpu_graph_free(g);
	}
}

TEST(elementwise_unary_ops_keep_the_shape)
{
	static const struct { const char *hlo; enum ir_op op; } ops[] = {
		{ "negate", OP_NEG }, { "abs", OP_ABS },
		{ "exponential", OP_EXP }, { "log", OP_LOG },
		{ "sqrt", OP_SQRT }, { "rsqrt", OP_RSQRT },
		{ "tanh", OP_TANH }, { "logistic", OP_LOGISTIC },
	};
	char text[512];
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct vtpu_graph *g;

		snprintf(text, sizeof(text),
			 "HloModule jit_%s\n"
			 "\n"
			 "ENTRY main.3 {\n"
			 "  Arg_0.1 = bf16[4]{0} parameter(0)\n"
			 "  ROOT %s.2 = bf16[4]{0} %s(Arg_0.1)\n"
			 "}\n", ops[i].hlo, ops[i].hlo, ops[i].hlo);
		g = parse_ok(_metadata, text);
		ASSERT_EQ(2, g->ir.n);
		ASSERT_EQ(ops[i].op, node(g, output(g, 0))->op)
			TH_LOG("%s", ops[i].hlo);
		ASSERT_STREQ("bf16[4]", SHAPE(g, output(g, 0)));
		vtpu_graph_free(g);
	}
}

TEST(compare_gives_pred_and_select_takes_it)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  a = f32[4] parameter(0)\n"
		"  b = f32[4] parameter(1)\n"
		"  gt = pred[4]{0} compare(a, b), direction=GT, type=FLOAT\n"
		"  ROOT r = f32[4]{0} select(gt, a, b)\n"
		"}\n");

	ASSERT_EQ(OP_COMPARE, node(g, 2)->op);
	ASSERT_EQ(VTPU_GT, node(g, 2)->a.cmp.dir);
	ASSERT_STREQ("pred[4]", SHAPE(g, 2));
	ASSERT_EQ(OP_SELECT, node(g, output(g, 0))->op);
	ASSERT_STREQ("f32[4]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

TEST(dot_with_contracting_dims)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule jit_matmul, entry_computation_layout={(f32[2,3]{1,0}, f32[3,4]{1,0})->f32[2,4]{1,0}}\n"
		"\n"
		"ENTRY main.4 {\n"
		"  Arg_0.1 = f32[2,3]{1,0} parameter(0)\n"
		"  Arg_1.2 = f32[3,4]{1,0} parameter(1)\n"
		"  ROOT dot.3 = f32[2,4]{1,0} dot(Arg_0.1, Arg_1.2), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"}\n");
	const struct ir_node *d = node(g, output(g, 0));

	ASSERT_EQ(OP_DOT, d->op);
	ASSERT_EQ(0, d->a.dot.nbatch);
	ASSERT_EQ(1, d->a.dot.ncontract);
	ASSERT_EQ(1, d->a.dot.lhs_contract[0]);
	ASSERT_EQ(0, d->a.dot.rhs_contract[0]);
	ASSERT_STREQ("f32[2,4]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

TEST(dot_with_batch_dims)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule dot_product_module\n"
		"\n"
		"ENTRY %dot (a: f32[5,2,3], b: f32[5,3,4]) -> f32[5,2,4] {\n"
		"  %a = f32[5,2,3]{2,1,0} parameter(0)\n"
		"  %b = f32[5,3,4]{2,1,0} parameter(1)\n"
		"  ROOT %dot = f32[5,2,4]{2,1,0} dot(f32[5,2,3]{2,1,0} %a, f32[5,3,4]{2,1,0} %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={default,default}\n"
		"}\n");
	const struct ir_node *d = node(g, output(g, 0));

	ASSERT_EQ(1, d->a.dot.nbatch);
	ASSERT_EQ(0, d->a.dot.lhs_batch[0]);
	ASSERT_EQ(2, d->a.dot.lhs_contract[0]);
	ASSERT_EQ(1, d->a.dot.rhs_contract[0]);
	ASSERT_STREQ("f32[5,2,4]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

TEST(reduce_recognises_sum_max_and_min)
{
	static const struct {
		const char *op, *init;
		enum vtpu_reduce_op kind;
	} cases[] = {
		{ "add", "0", VTPU_REDUCE_SUM_OP },
		{ "maximum", "-inf", VTPU_REDUCE_MAX_OP },
		{ "minimum", "inf", VTPU_REDUCE_MIN_OP },
	};
	char text[1024];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vtpu_graph *g;
		const struct ir_node *r;

		snprintf(text, sizeof(text),
			 "HloModule R4F32Reduce_module\n"
			 "\n"
			 "%%region_0.3 (lhs: f32[], rhs: f32[]) -> f32[] {\n"
			 "  %%lhs = f32[] parameter(0)\n"
			 "  %%rhs = f32[] parameter(1)\n"
			 "  ROOT %%r = f32[] %s(f32[] %%rhs, f32[] %%lhs)\n"
			 "}\n"
			 "\n"
			 "ENTRY %%R4F32Reduce.v4 (input: f32[1,2,3,4]) -> f32[1,4] {\n"
			 "  %%input = f32[1,2,3,4]{3,2,1,0} parameter(0)\n"
			 "  %%init = f32[] constant(%s)\n"
			 "  ROOT %%reduce = f32[1,4]{1,0} reduce(f32[1,2,3,4]{3,2,1,0} %%input, f32[] %%init), dimensions={1,2}, to_apply=%%region_0.3\n"
			 "}\n", cases[i].op, cases[i].init);
		g = parse_ok(_metadata, text);
		r = node(g, output(g, 0));
		ASSERT_EQ(OP_REDUCE, r->op);
		ASSERT_EQ(cases[i].kind, r->a.reduce.op) TH_LOG("%s", cases[i].op);
		ASSERT_EQ(0x6u, r->a.reduce.axes);
		ASSERT_STREQ("f32[1,4]", SHAPE(g, output(g, 0)));
		vtpu_graph_free(g);
	}
}

TEST(broadcast_with_dimensions)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  b = f32[3]{0} parameter(0)\n"
		"  ROOT r = f32[2,3]{1,0} broadcast(b), dimensions={1}\n"
		"}\n");
	const struct ir_node *r = node(g, output(g, 0));

	ASSERT_EQ(OP_BROADCAST, r->op);
	ASSERT_EQ(1, r->a.bcast.dims[0]);
	ASSERT_STREQ("f32[2,3]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

TEST(broadcast_of_a_scalar_constant)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  zero = f32[] constant(0)\n"
		"  ROOT r = f32[2,2]{1,0} broadcast(f32[] zero), dimensions={}\n"
		"}\n");

	ASSERT_EQ(OP_BROADCAST, node(g, output(g, 0))->op);
	ASSERT_STREQ("f32[2,2]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

TEST(transpose_permutes_the_dims)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  x = f32[2,3,4]{2,1,0} parameter(0)\n"
		"  ROOT t = f32[4,2,3]{2,1,0} transpose(x), dimensions={2,0,1}\n"
		"}\n");
	const struct ir_node *t = node(g, output(g, 0));

	ASSERT_EQ(OP_TRANSPOSE, t->op);
	ASSERT_EQ(2, t->a.transpose.perm[0]);
	ASSERT_EQ(0, t->a.transpose.perm[1]);
	ASSERT_EQ(1, t->a.transpose.perm[2]);
	ASSERT_STREQ("f32[4,2,3]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

TEST(reshape_takes_the_stated_shape)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  x = s32[2,3]{1,0} parameter(0)\n"
		"  ROOT r = s32[3,1,2]{2,1,0} reshape(x)\n"
		"}\n");

	ASSERT_EQ(OP_RESHAPE, node(g, output(g, 0))->op);
	ASSERT_STREQ("s32[3,1,2]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

/* jax.jit(mlp).lower(...).as_hlo_text(), trimmed: two layers, relu. */
static const char mlp[] =
	"HloModule jit_mlp, entry_computation_layout={(f32[8,4]{1,0}, f32[4,16]{1,0}, f32[16]{0}, f32[16,2]{1,0}, f32[2]{0})->(f32[8,2]{1,0}, f32[8]{0})}\n"
	"\n"
	"region_0.13 {\n"
	"  Arg_0.14 = f32[] parameter(0)\n"
	"  Arg_1.15 = f32[] parameter(1)\n"
	"  ROOT maximum.16 = f32[] maximum(Arg_0.14, Arg_1.15)\n"
	"}\n"
	"\n"
	"ENTRY main.20 {\n"
	"  Arg_0.1 = f32[8,4]{1,0} parameter(0), metadata={op_name=\"x\"}\n"
	"  Arg_1.2 = f32[4,16]{1,0} parameter(1), metadata={op_name=\"w1\"}\n"
	"  dot.6 = f32[8,16]{1,0} dot(Arg_0.1, Arg_1.2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name=\"jit(mlp)/jit(main)/dot_general\" source_file=\"mlp.py\" source_line=7}\n"
	"  Arg_2.3 = f32[16]{0} parameter(2)\n"
	"  broadcast.7 = f32[8,16]{1,0} broadcast(Arg_2.3), dimensions={1}\n"
	"  add.8 = f32[8,16]{1,0} add(dot.6, broadcast.7)\n"
	"  constant.5 = f32[] constant(0)\n"
	"  broadcast.9 = f32[8,16]{1,0} broadcast(constant.5), dimensions={}\n"
	"  maximum.10 = f32[8,16]{1,0} maximum(add.8, broadcast.9)\n"
	"  Arg_3.4 = f32[16,2]{1,0} parameter(3)\n"
	"  dot.11 = f32[8,2]{1,0} dot(maximum.10, Arg_3.4), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  Arg_4.5 = f32[2]{0} parameter(4)\n"
	"  broadcast.12 = f32[8,2]{1,0} broadcast(Arg_4.5), dimensions={1}\n"
	"  add.13 = f32[8,2]{1,0} add(dot.11, broadcast.12)\n"
	"  constant.17 = f32[] constant(-inf)\n"
	"  reduce.18 = f32[8]{0} reduce(add.13, constant.17), dimensions={1}, to_apply=region_0.13\n"
	"  ROOT tuple.19 = (f32[8,2]{1,0}, f32[8]{0}) tuple(add.13, reduce.18)\n"
	"}\n";

TEST(small_mlp_module)
{
	struct vtpu_graph *g = parse_ok(_metadata, mlp);
	int i;

	ASSERT_EQ(5, g->ir.nparams);
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(OP_PARAM, node(g, i)->op);
		ASSERT_EQ(i, node(g, i)->a.param.index);
	}
	ASSERT_STREQ("Arg_2.3", node(g, 2)->name);
	ASSERT_EQ(2, g->ir.nout);
	ASSERT_EQ(OP_ADD, node(g, output(g, 0))->op);
	ASSERT_STREQ("f32[8,2]", SHAPE(g, output(g, 0)));
	ASSERT_EQ(OP_REDUCE, node(g, output(g, 1))->op);
	ASSERT_EQ(VTPU_REDUCE_MAX_OP, node(g, output(g, 1))->a.reduce.op);
	ASSERT_STREQ("f32[8]", SHAPE(g, output(g, 1)));
	vtpu_graph_free(g);
}

TEST(layouts_are_parsed_and_ignored)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m, entry_computation_layout={(f32[2,2]{0,1})->f32[2,2]{1,0}}\n"
		"ENTRY %e (p: f32[2,2]) -> f32[2,2]{1,0} {\n"
		"  %p = f32[2,2]{0,1} parameter(0)\n"
		"  %c = f32[2,2]{1,0:T(8,128)} copy(%p)\n"
		"  %s = f32[] constant(2)\n"
		"  %b = f32[2,2]{1,0} broadcast(%s), dimensions={}\n"
		"  ROOT %r = f32[2,2]{1,0} multiply(%c, %b)\n"
		"}\n");

	ASSERT_EQ(OP_MUL, node(g, output(g, 0))->op);
	/* copy only changes the layout: it is its operand */
	ASSERT_EQ(0, node(g, output(g, 0))->in[0]);
	ASSERT_STREQ("f32[2,2]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

TEST(metadata_and_unknown_attributes_are_skipped)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m, is_scheduled=true, num_partitions=1, frontend_attributes={fingerprint=\"x\"}\n"
		"\n"
		"// a line comment\n"
		"ENTRY e {\n"
		"  a = f32[2]{0} parameter(0), sharding={devices=[2]<=[2]}, metadata={op_type=\"Add\" op_name=\"a}{\\\"b\" source_line=3}\n"
		"  b = f32[2]{0} parameter(1), frontend_attributes={_xla_x=\"1\"}\n"
		"  ROOT s = f32[2]{0} add(a, /*index=1*/b), backend_config={\"flag\":[1,2]}, control-predecessors={a}, statistics=\"}\"\n"
		"}, execution_thread=\"main\"\n");

	ASSERT_EQ(3, g->ir.n);
	ASSERT_EQ(OP_ADD, node(g, output(g, 0))->op);
	vtpu_graph_free(g);
}

TEST(tuple_root_gives_the_outputs)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  a = f32[2] parameter(0)\n"
		"  b = f32[3] parameter(1)\n"
		"  n = f32[3] negate(b)\n"
		"  ROOT t = (f32[3], f32[2], f32[3]) tuple(n, a, b)\n"
		"}\n");

	ASSERT_EQ(3, g->ir.nout);
	ASSERT_EQ(2, output(g, 0));
	ASSERT_EQ(0, output(g, 1));
	ASSERT_EQ(1, output(g, 2));
	vtpu_graph_free(g);
}

TEST(root_defaults_to_the_last_instruction)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  a = f32[2] parameter(0)\n"
		"  b = f32[2] exponential(a)\n"
		"  c = f32[2] negate(a)\n"
		"}\n");

	ASSERT_EQ(1, g->ir.nout);
	ASSERT_EQ(OP_NEG, node(g, output(g, 0))->op);
	vtpu_graph_free(g);
}

TEST(root_need_not_be_last)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  a = f32[2] parameter(0)\n"
		"  ROOT b = f32[2] exponential(a)\n"
		"  c = f32[2] negate(a)\n"
		"}\n");

	ASSERT_EQ(OP_EXP, node(g, output(g, 0))->op);
	vtpu_graph_free(g);
}

TEST(parameters_may_come_in_any_order)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  y = f32[3] parameter(1)\n"
		"  x = f32[2] parameter(0)\n"
		"  ROOT t = (f32[2], f32[3]) tuple(x, y)\n"
		"}\n");

	ASSERT_STREQ("x", node(g, 0)->name);
	ASSERT_STREQ("f32[2]", SHAPE(g, 0));
	ASSERT_STREQ("y", node(g, 1)->name);
	ASSERT_EQ(0, output(g, 0));
	ASSERT_EQ(1, output(g, 1));
	vtpu_graph_free(g);
}

TEST(constant_literals)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  m = f32[2,2]{1,0} constant({ {1, 2.5}, {-3, 4e-1} })\n"
		"  p = pred[3] constant({true, false, true})\n"
		"  f = f32[4] constant({inf, -inf, nan, -0})\n"
		"  i = s32[] constant(-7)\n"
		"  h = bf16[2] constant({1.5, 3.14159})\n"
		"  l = s64[] constant(-2147483648)\n"
		"  ROOT t = (f32[2,2], pred[3], f32[4], s32[], bf16[2], s32[]) tuple(m, p, f, i, h, l)\n"
		"}\n");
	const float *m = node(g, 0)->a.cst.data, *f = node(g, 2)->a.cst.data;
	const uint8_t *p = node(g, 1)->a.cst.data;
	const uint16_t *h = node(g, 4)->a.cst.data;
	int32_t l;

	ASSERT_EQ(1.0f, m[0]);
	ASSERT_EQ(2.5f, m[1]);
	ASSERT_EQ(-3.0f, m[2]);
	ASSERT_EQ(0.4f, m[3]);
	ASSERT_EQ(1, p[0]);
	ASSERT_EQ(0, p[1]);
	ASSERT_EQ(1, p[2]);
	ASSERT_TRUE(isinf(f[0]) && f[0] > 0);
	ASSERT_TRUE(isinf(f[1]) && f[1] < 0);
	ASSERT_TRUE(isnan(f[2]));
	ASSERT_TRUE(f[3] == 0 && signbit(f[3]));
	ASSERT_EQ(-7, *(int32_t *)node(g, 3)->a.cst.data);
	ASSERT_EQ(0x3fc0, h[0]);	/* 1.5 */
	ASSERT_EQ(0x4049, h[1]);	/* 3.14159 rounds to 3.140625 */
	/* s64 is held as s32, as JAX holds it without x64 */
	memcpy(&l, node(g, 5)->a.cst.data, 4);
	ASSERT_EQ(INT32_MIN, l);
	ASSERT_STREQ("f32[2,2]", SHAPE(g, 0));
	vtpu_graph_free(g);
}

/*
 * XLA prints finfo(f32).max and .min with nine digits, a little beyond
 * FLT_MAX (JAX's masks fill with it): they round back to the type's
 * largest finite value; only what would round to an infinity is out of
 * range.
 */
TEST(printed_float_extremes_round_to_the_largest_finite)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  a = f32[2] constant({-3.40282347e+38, 3.40282347e+38})\n"
		"  b = bf16[2] constant({-3.38953139e+38, 3.38953139e+38})\n"
		"  ROOT t = (f32[2], bf16[2]) tuple(a, b)\n"
		"}\n");
	const float *a = node(g, 0)->a.cst.data;
	const uint16_t *b = node(g, 1)->a.cst.data;

	ASSERT_EQ(-FLT_MAX, a[0]);
	ASSERT_EQ(FLT_MAX, a[1]);
	ASSERT_EQ(0xff7f, b[0]);
	ASSERT_EQ(0x7f7f, b[1]);
	vtpu_graph_free(g);
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = f32[] constant(3.4028236e+38)\n"
			 "}\n",
			 "3:27", "number out of range");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = bf16[] constant(-3.4e+38)\n"
			 "}\n",
			 "3:28", "number out of range");
}

TEST(convolution_nchw_oihw)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule jit_conv\n"
		"\n"
		"ENTRY main.4 {\n"
		"  Arg_0.1 = f32[1,3,8,8]{3,2,1,0} parameter(0)\n"
		"  Arg_1.2 = f32[6,1,3,3]{3,2,1,0} parameter(1)\n"
		"  ROOT convolution.3 = f32[1,6,4,4]{3,2,1,0} convolution(Arg_0.1, Arg_1.2), window={size=3x3 stride=2x2 pad=1_1x1_1 rhs_dilate=1x1}, dim_labels=bf01_oi01->bf01, feature_group_count=3\n"
		"}\n");
	const struct ir_node *c = node(g, output(g, 0));

	ASSERT_EQ(OP_CONV, c->op);
	ASSERT_EQ(2, c->a.conv.stride[0]);
	ASSERT_EQ(2, c->a.conv.stride[1]);
	ASSERT_EQ(1, c->a.conv.pad_lo[0]);
	ASSERT_EQ(1, c->a.conv.pad_hi[1]);
	ASSERT_EQ(1, c->a.conv.dilation[0]);
	ASSERT_EQ(3, c->a.conv.groups);
	ASSERT_STREQ("f32[1,6,4,4]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

TEST(concatenate_slice_pad_and_convert)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  a = f32[2,3] parameter(0)\n"
		"  b = f32[2,1] parameter(1)\n"
		"  c = f32[2,4]{1,0} concatenate(a, b), dimensions={1}\n"
		"  s = f32[1,2]{1,0} slice(c), slice={[1:2], [0:4:2]}\n"
		"  z = f32[] constant(0)\n"
		"  p = f32[4,5]{1,0} pad(s, z), padding=1_2x0_3\n"
		"  ROOT i = s32[4,5]{1,0} convert(p)\n"
		"}\n");

	ASSERT_EQ(OP_CONCAT, node(g, 2)->op);
	ASSERT_EQ(1, node(g, 2)->a.concat.axis);
	ASSERT_EQ(OP_SLICE, node(g, 3)->op);
	ASSERT_EQ(2, node(g, 3)->a.slice.stride[1]);
	ASSERT_STREQ("f32[1,2]", SHAPE(g, 3));
	ASSERT_EQ(OP_PAD, node(g, 5)->op);
	ASSERT_EQ(2, node(g, 5)->a.pad.hi[0]);
	ASSERT_EQ(3, node(g, 5)->a.pad.hi[1]);
	/* f32 to s32 saturates (NaN is 0), around a convert */
	{
		int i, converts = 0;

		for (i = 0; i < g->ir.n; i++)
			converts += g->ir.nodes[i].op == OP_CONVERT &&
				    g->ir.nodes[i].shape.type == VTPU_S32;
		ASSERT_EQ(1, converts);
	}
	ASSERT_STREQ("s32[4,5]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
}

TEST(get_tuple_element_of_a_tuple_is_its_element)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  a = f32[2] parameter(0)\n"
		"  b = f32[3] parameter(1)\n"
		"  t = (f32[2], f32[3]) tuple(a, b)\n"
		"  ROOT g = f32[3] get-tuple-element(t), index=1\n"
		"}\n");

	ASSERT_EQ(1, output(g, 0));
	vtpu_graph_free(g);
}

TEST(error_buffer_is_optional_and_truncated)
{
	struct vtpu_graph *g = NULL;
	char err[4];

	ASSERT_EQ(-EINVAL, vtpu_hlo_parse("x", 1, &g, NULL, 0));
	ASSERT_EQ(-EINVAL, vtpu_hlo_parse("x", 1, &g, err, sizeof(err)));
	ASSERT_STREQ("1:2", err);
	ASSERT_EQ(-EINVAL, vtpu_hlo_parse(NULL, 0, &g, NULL, 0));
	ASSERT_EQ(-EINVAL, vtpu_hlo_parse("x", 1, NULL, NULL, 0));
	ASSERT_NULL(g);
}

/* ---- what JAX and torch-xla emit: each checked on the reference evaluator -- */

#define SCALAR_COMP(name, op) \
	name " {\n" \
	"  a = f32[] parameter(0)\n" \
	"  b = f32[] parameter(1)\n" \
	"  ROOT r = f32[] " op "(a, b)\n" \
	"}\n"

/* fori_loop: the counter in the state, compared with a constant bound. */
TEST(while_loop_with_a_known_trip_count_unrolls)
{
	static const float x[2] = { 1, 2 };
	const void *in[] = { x };
	double out[4];
	const char *text;
	int n;

	text = "HloModule jit_loop\n"
		"body {\n"
		"  s = (s32[], f32[2]) parameter(0)\n"
		"  i = s32[] get-tuple-element(s), index=0\n"
		"  v = f32[2] get-tuple-element(s), index=1\n"
		"  i1 = s32[] add(i, s32[] constant(1))\n"
		"  two = f32[2] constant({2, 2})\n"
		"  one = f32[2] constant({1, 1})\n"
		"  v1 = f32[2] add(f32[2] multiply(v, two), one)\n"
		"  ROOT t = (s32[], f32[2]) tuple(i1, v1)\n"
		"}\n"
		"cond {\n"
		"  s = (s32[], f32[2]) parameter(0)\n"
		"  i = s32[] get-tuple-element(s), index=0\n"
		"  ROOT lt = pred[] compare(i, s32[] constant(3)), direction=LT\n"
		"}\n"
		"ENTRY main {\n"
		"  x = f32[2] parameter(0)\n"
		"  init = (s32[], f32[2]) tuple(s32[] constant(0), x)\n"
		"  w = (s32[], f32[2]) while(init), condition=cond, body=body\n"
		"  r = f32[2] get-tuple-element(w), index=1\n"
		"  c = s32[] get-tuple-element(w), index=0\n"
		"  ROOT o = (f32[2], s32[]) tuple(r, c)\n"
		"}\n";
	n = eval_hlo(_metadata, text, in, 0, out, 4);
	ASSERT_VALUES(out, n, 15, 23);	/* x -> 2x + 1, three times */
	n = eval_hlo(_metadata, text, in, 1, out, 4);
	ASSERT_VALUES(out, n, 3);
}

/*
 * A loop until a value reaches 10: predicated iterations, up to the
 * limit; a run that would go on past it fails instead of stopping short.
 */
/*
 * A loop whose condition depends on data loops on the device: a WHILE
 * node, as many iterations as the data asks for (an endless one is the
 * watchdog's: ir_eval() stops it with -ETIMEDOUT).
 */
TEST(while_loop_whose_trip_count_depends_on_data_loops_on_the_device)
{
	static const float three = 3, zero = 0;
	const char *text =
		"HloModule m\n"
		"body {\n"
		"  v = f32[] parameter(0)\n"
		"  ROOT d = f32[] add(v, v)\n"
		"}\n"
		"cond {\n"
		"  v = f32[] parameter(0)\n"
		"  ROOT lt = pred[] compare(v, f32[] constant(10)), direction=LT\n"
		"}\n"
		"ENTRY e {\n"
		"  x = f32[] parameter(0)\n"
		"  ROOT w = f32[] while(x), condition=cond, body=body\n"
		"}\n";
	struct vtpu_graph *g;
	void *outs[1] = { 0 };
	double out[1];
	int n;

	static const float small = 1e-30f;
	int i, loops = 0;

	n = eval_hlo(_metadata, text, (const void *[]){ &three }, 0, out, 1);
	ASSERT_VALUES(out, n, 12);	/* 3, 6, 12 */
	/* 1e-30 doubles 110 times: no unrolling limit stands in the way */
	n = eval_hlo(_metadata, text, (const void *[]){ &small }, 0, out, 1);
	ASSERT_TRUE(out[0] >= 10 && out[0] < 20);
	g = parse_ok(_metadata, text);
	for (i = 0; i < g->ir.n; i++)
		loops += g->ir.nodes[i].op == OP_WHILE;
	ASSERT_EQ(1, loops);
	ASSERT_EQ(-ETIMEDOUT, ir_eval(&g->ir, (const void *[]){ &zero }, outs));
	free(outs[0]);
	vtpu_graph_free(g);
}

TEST(call_and_fusion_are_inlined)
{
	static const float x[3] = { 1, 2, 3 };
	const void *in[] = { x };
	double out[3];
	const char *text =
		"HloModule jit_f\n"
		"square {\n"
		"  a = f32[3] parameter(0)\n"
		"  b = f32[3] parameter(1)\n"
		"  ROOT m = f32[3] multiply(a, b)\n"
		"}\n"
		"fused_computation {\n"
		"  p = f32[3] parameter(0)\n"
		"  ROOT a = f32[3] add(p, f32[3] constant({1, 1, 1}))\n"
		"}\n"
		"ENTRY main {\n"
		"  x = f32[3] parameter(0)\n"
		"  c = f32[3] call(x, x), to_apply=square\n"
		"  ROOT f = f32[3] fusion(c), kind=kLoop, calls=fused_computation\n"
		"}\n";
	int n = eval_hlo(_metadata, text, in, 0, out, 3);

	ASSERT_VALUES(out, n, 2, 5, 10);
}

TEST(conditional_builds_the_branches_and_selects)
{
	static const float x[2] = { -1, 2 };
	/* pred parameters cross the boundary as s32 */
	static const int32_t t = 1, f, far = 5, one = 1;
	double out[2];
	const char *pred =
		"HloModule m\n"
		"neg { a = f32[2] parameter(0)\n ROOT n = f32[2] negate(a) }\n"
		"abs { a = f32[2] parameter(0)\n ROOT n = f32[2] abs(a) }\n"
		"ENTRY e {\n"
		"  x = f32[2] parameter(0)\n"
		"  p = pred[] parameter(1)\n"
		"  ROOT c = f32[2] conditional(p, x, x), true_computation=neg, false_computation=abs\n"
		"}\n";
	const char *index =
		"HloModule m\n"
		"neg { a = f32[2] parameter(0)\n ROOT n = f32[2] negate(a) }\n"
		"abs { a = f32[2] parameter(0)\n ROOT n = f32[2] abs(a) }\n"
		"dbl { a = f32[2] parameter(0)\n ROOT n = f32[2] add(a, a) }\n"
		"ENTRY e {\n"
		"  x = f32[2] parameter(0)\n"
		"  i = s32[] parameter(1)\n"
		"  ROOT c = f32[2] conditional(i, x, x, x), branch_computations={neg, abs, dbl}\n"
		"}\n";
	int n;

	n = eval_hlo(_metadata, pred, (const void *[]){ x, &t }, 0, out, 2);
	ASSERT_VALUES(out, n, 1, -2);
	n = eval_hlo(_metadata, pred, (const void *[]){ x, &f }, 0, out, 2);
	ASSERT_VALUES(out, n, 1, 2);
	n = eval_hlo(_metadata, index, (const void *[]){ x, &one }, 0, out, 2);
	ASSERT_VALUES(out, n, 1, 2);
	/* an index out of range runs the last branch */
	n = eval_hlo(_metadata, index, (const void *[]){ x, &far }, 0, out, 2);
	ASSERT_VALUES(out, n, -2, 4);
}

TEST(dynamic_slice_clamps_its_starts)
{
	static const float x[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
	static const int32_t four = 4, minus = -1, three = 3;
	double out[4];
	const char *one =
		"HloModule m\n"
		"ENTRY e {\n"
		"  x = f32[5] parameter(0)\n"
		"  i = s32[] parameter(1)\n"
		"  ROOT d = f32[2] dynamic-slice(x, i), dynamic_slice_sizes={2}\n"
		"}\n";
	const char *two =
		"HloModule m\n"
		"ENTRY e {\n"
		"  x = f32[3,4] parameter(0)\n"
		"  j = s32[] parameter(1)\n"
		"  ROOT d = f32[2,2] dynamic-slice(x, s32[] constant(1), j), dynamic_slice_sizes={2,2}\n"
		"}\n";
	int n;

	n = eval_hlo(_metadata, one, (const void *[]){ x, &four }, 0, out, 4);
	ASSERT_VALUES(out, n, 3, 4);
	n = eval_hlo(_metadata, one, (const void *[]){ x, &minus }, 0, out, 4);
	ASSERT_VALUES(out, n, 0, 1);
	n = eval_hlo(_metadata, two, (const void *[]){ x, &three }, 0, out, 4);
	ASSERT_VALUES(out, n, 6, 7, 10, 11);
}

TEST(dynamic_update_slice_writes_its_window)
{
	static const float x[5] = { 0, 1, 2, 3, 4 }, u[2] = { 10, 20 };
	static const int32_t two = 2, seven = 7;
	double out[5];
	const char *text =
		"HloModule m\n"
		"ENTRY e {\n"
		"  x = f32[5] parameter(0)\n"
		"  u = f32[2] parameter(1)\n"
		"  i = s32[] parameter(2)\n"
		"  ROOT d = f32[5] dynamic-update-slice(x, u, i)\n"
		"}\n";
	int n;

	n = eval_hlo(_metadata, text, (const void *[]){ x, u, &two }, 0, out, 5);
	ASSERT_VALUES(out, n, 0, 1, 10, 20, 4);
	n = eval_hlo(_metadata, text, (const void *[]){ x, u, &seven }, 0, out, 5);
	ASSERT_VALUES(out, n, 0, 1, 2, 10, 20);
}

TEST(gather_takes_rows_and_points)
{
	static const float t[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
	static const int32_t rows[3] = { 3, 1, 9 }, pts[4] = { 2, 1, 0, 3 };
	double out[12];
	/* jnp.take(table, idx, axis=0): an index past the end is clamped */
	const char *take =
		"HloModule jit_take\n"
		"ENTRY e {\n"
		"  t = f32[4,3] parameter(0)\n"
		"  i = s32[3,1] parameter(1)\n"
		"  ROOT g = f32[3,3] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}, indices_are_sorted=false\n"
		"}\n";
	/* table[i, j] for index pairs */
	const char *points =
		"HloModule jit_points\n"
		"ENTRY e {\n"
		"  t = f32[3,4] parameter(0)\n"
		"  i = s32[2,2] parameter(1)\n"
		"  ROOT g = f32[2] gather(t, i), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}\n"
		"}\n";
	int n;

	n = eval_hlo(_metadata, take, (const void *[]){ t, rows }, 0, out, 12);
	ASSERT_VALUES(out, n, 9, 10, 11, 3, 4, 5, 9, 10, 11);
	n = eval_hlo(_metadata, points, (const void *[]){ t, pts }, 0, out, 12);
	ASSERT_VALUES(out, n, 9, 3);
}

TEST(iota_compare_select_and_clamp_make_masks)
{
	static const float x[3] = { -1, 0.5, 2 };
	double out[9];
	const char *mask =
		"HloModule jit_causal\n"
		"ENTRY e {\n"
		"  r = s32[3,3] iota(), iota_dimension=0\n"
		"  c = s32[3,3] iota(), iota_dimension=1\n"
		"  m = pred[3,3] compare(r, c), direction=GE\n"
		"  one = f32[3,3] broadcast(f32[] constant(1)), dimensions={}\n"
		"  zero = f32[3,3] broadcast(f32[] constant(0)), dimensions={}\n"
		"  ROOT s = f32[3,3] select(m, one, zero)\n"
		"}\n";
	const char *clamp =
		"HloModule jit_clip\n"
		"ENTRY e {\n"
		"  x = f32[3] parameter(0)\n"
		"  ROOT c = f32[3] clamp(f32[] constant(0), x, f32[] constant(1))\n"
		"}\n";
	int n;

	n = eval_hlo(_metadata, mask, NULL, 0, out, 9);
	ASSERT_VALUES(out, n, 1, 0, 0, 1, 1, 0, 1, 1, 1);
	n = eval_hlo(_metadata, clamp, (const void *[]){ x }, 0, out, 9);
	ASSERT_VALUES(out, n, 0, 0.5, 1);
}

TEST(sine_cosine_and_the_roundings)
{
	static const float x[4] = { 0, 1.57079632679f, 3.14159265359f, -2.5f };
	static const float h[4] = { 0.5f, 1.5f, 2.5f, -0.5f };
	static const float small[2] = { 1e-6f, 1 };
	double out[4];
	const char *fmt =
		"HloModule m\n"
		"ENTRY e {\n"
		"  x = f32[4] parameter(0)\n"
		"  ROOT y = f32[4] %s(x)\n"
		"}\n";
	char text[256];
	int n;

	snprintf(text, sizeof(text), fmt, "sine");
	n = eval_hlo(_metadata, text, (const void *[]){ x }, 0, out, 4);
	ASSERT_VALUES(out, n, 0, 1, 0, sin(-2.5));
	snprintf(text, sizeof(text), fmt, "cosine");
	n = eval_hlo(_metadata, text, (const void *[]){ x }, 0, out, 4);
	ASSERT_VALUES(out, n, 1, 0, -1, cos(-2.5));
	snprintf(text, sizeof(text), fmt, "floor");
	n = eval_hlo(_metadata, text, (const void *[]){ h }, 0, out, 4);
	ASSERT_VALUES(out, n, 0, 1, 2, -1);
	snprintf(text, sizeof(text), fmt, "round-nearest-even");
	n = eval_hlo(_metadata, text, (const void *[]){ h }, 0, out, 4);
	ASSERT_VALUES(out, n, 0, 2, 2, 0);
	snprintf(text, sizeof(text), fmt, "round-nearest-afz");
	n = eval_hlo(_metadata, text, (const void *[]){ h }, 0, out, 4);
	ASSERT_VALUES(out, n, 1, 2, 3, -1);
	snprintf(text, sizeof(text), fmt, "sign");
	n = eval_hlo(_metadata, text, (const void *[]){ x }, 0, out, 4);
	ASSERT_VALUES(out, n, 0, 1, 1, -1);
	/* expm1 and log1p keep their precision near 0 */
	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
		     "  ROOT y = f32[2] exponential-minus-one(x)\n}\n",
		     (const void *[]){ small }, 0, out, 4);
	ASSERT_EQ(2, n);
	ASSERT_TRUE(fabs(out[0] - 1.0000005e-6) < 1e-12) TH_LOG("%.9g", out[0]);
	ASSERT_TRUE(fabs(out[1] - expm1(1)) < 1e-6);
	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
		     "  ROOT y = f32[2] log-plus-one(x)\n}\n",
		     (const void *[]){ small }, 0, out, 4);
	ASSERT_TRUE(fabs(out[0] - 9.999995e-7) < 1e-12) TH_LOG("%.9g", out[0]);
	ASSERT_TRUE(fabs(out[1] - log1p(1)) < 1e-6);
}

TEST(reduce_folds_in_its_init)
{
	static const float x[2] = { -3, -1 }, init = 5;
	double out[1];
	int n;

	/* an init other than the identity takes part, as in XLA */
	n = eval_hlo(_metadata, "HloModule m\n" SCALAR_COMP("mx", "maximum")
		     "ENTRY e {\n  x = f32[2] parameter(0)\n"
		     "  ROOT r = f32[] reduce(x, f32[] constant(0)), dimensions={0}, to_apply=mx\n}\n",
		     (const void *[]){ x }, 0, out, 1);
	ASSERT_VALUES(out, n, 0);
	n = eval_hlo(_metadata, "HloModule m\n" SCALAR_COMP("sum", "add")
		     "ENTRY e {\n  x = f32[2] parameter(0)\n  i = f32[] parameter(1)\n"
		     "  ROOT r = f32[] reduce(x, i), dimensions={0}, to_apply=sum\n}\n",
		     (const void *[]){ x, &init }, 0, out, 1);
	ASSERT_VALUES(out, n, 1);
}

TEST(pad_with_interior_and_negative_padding)
{
	static const float x[2] = { 1, 2 };
	double out[5];
	int n;

	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
		     "  ROOT p = f32[5] pad(x, f32[] constant(0)), padding=1_1_1\n}\n",
		     (const void *[]){ x }, 0, out, 5);
	ASSERT_VALUES(out, n, 0, 1, 0, 2, 0);
	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
		     "  ROOT p = f32[1] pad(x, f32[] constant(0)), padding=-1_0\n}\n",
		     (const void *[]){ x }, 0, out, 5);
	ASSERT_VALUES(out, n, 2);
	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
		     "  ROOT p = f32[3] pad(x, f32[] constant(7)), padding=-1_1_1\n}\n",
		     (const void *[]){ x }, 0, out, 5);
	ASSERT_VALUES(out, n, 7, 2, 7);
	/* a negative edge after the first dimension: one word, "x-1" */
	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n  x = f32[1,2] parameter(0)\n"
		     "  ROOT p = f32[1,3] pad(x, f32[] constant(5)), padding=0_0x-1_2\n}\n",
		     (const void *[]){ x }, 0, out, 5);
	ASSERT_VALUES(out, n, 2, 5, 5);
}

TEST(tuple_parameters_and_nested_tuples)
{
	static const float a[2] = { 1, 2 }, b[2] = { 3, 4 }, c[1] = { 5 };
	const char *text =
		"HloModule m\n"
		"ENTRY e {\n"
		"  p = (f32[2], (f32[2], f32[1])) parameter(0)\n"
		"  i = (f32[2], f32[1]) get-tuple-element(p), index=1\n"
		"  b = f32[2] get-tuple-element(i), index=0\n"
		"  a = f32[2] get-tuple-element(p), index=0\n"
		"  s = f32[2] add(a, b)\n"
		"  ROOT t = (f32[2], (f32[2], f32[1])) tuple(s, i)\n"
		"}\n";
	struct vtpu_graph *g = parse_ok(_metadata, text);
	double out[2];
	int n;

	/* leaf by leaf: three parameters, three outputs */
	ASSERT_EQ(3, g->ir.nparams);
	ASSERT_EQ(3, g->ir.nout);
	vtpu_graph_free(g);
	n = eval_hlo(_metadata, text, (const void *[]){ a, b, c }, 0, out, 2);
	ASSERT_VALUES(out, n, 4, 6);
	n = eval_hlo(_metadata, text, (const void *[]){ a, b, c }, 2, out, 2);
	ASSERT_VALUES(out, n, 5);
}

/* jnp.argmax: a (value, index) reduce keeping the first of equal maxima. */
TEST(argmax_is_a_variadic_reduce)
{
	static const float x[6] = { 1, 5, 5, 7, 2, 7 };
	const char *text =
		"HloModule jit_argmax\n"
		"region_0.4 {\n"
		"  Arg_0.5 = f32[] parameter(0)\n"
		"  Arg_1.6 = s32[] parameter(1)\n"
		"  Arg_2.7 = f32[] parameter(2)\n"
		"  Arg_3.8 = s32[] parameter(3)\n"
		"  compare.9 = pred[] compare(Arg_0.5, Arg_2.7), direction=GT\n"
		"  compare.10 = pred[] compare(Arg_0.5, Arg_0.5), direction=NE\n"
		"  or.11 = pred[] or(compare.9, compare.10)\n"
		"  select.12 = f32[] select(or.11, Arg_0.5, Arg_2.7)\n"
		"  compare.13 = pred[] compare(Arg_0.5, Arg_2.7), direction=EQ\n"
		"  compare.14 = pred[] compare(Arg_1.6, Arg_3.8), direction=LT\n"
		"  and.15 = pred[] and(compare.13, compare.14)\n"
		"  or.16 = pred[] or(or.11, and.15)\n"
		"  select.17 = s32[] select(or.16, Arg_1.6, Arg_3.8)\n"
		"  ROOT tuple.18 = (f32[], s32[]) tuple(select.12, select.17)\n"
		"}\n"
		"ENTRY main.23 {\n"
		"  Arg_0.1 = f32[2,3]{1,0} parameter(0)\n"
		"  iota.2 = s32[2,3]{1,0} iota(), iota_dimension=1\n"
		"  constant.3 = f32[] constant(-inf)\n"
		"  constant.4 = s32[] constant(0)\n"
		"  reduce.19 = (f32[2]{0}, s32[2]{0}) reduce(Arg_0.1, iota.2, constant.3, constant.4), dimensions={1}, to_apply=region_0.4\n"
		"  ROOT get-tuple-element.21 = s32[2]{0} get-tuple-element(reduce.19), index=1\n"
		"}\n";
	double out[2];
	int n = eval_hlo(_metadata, text, (const void *[]){ x }, 0, out, 2);

	ASSERT_VALUES(out, n, 1, 0);
}

/* Flax's NHWC convolutions, by transposes; a 1-D one; reversal; base dilation. */
TEST(convolution_of_any_layout)
{
	static const float img[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	static const float k[8] = { 1, 2, 1, 2, 1, 2, 1, 2 };
	static const float s[3] = { 1, 2, 3 }, w[2] = { 1, 10 };
	double out[8];
	const char *nhwc =
		"HloModule jit_conv\n"
		"ENTRY e {\n"
		"  x = f32[1,3,3,1] parameter(0)\n"
		"  k = f32[2,2,1,2] parameter(1)\n"
		"  ROOT c = f32[1,2,2,2] convolution(x, k), window={size=2x2}, dim_labels=b01f_01io->b01f\n"
		"}\n";
	char text[512];
	int n;

	/* feature 1's kernel is twice feature 0's, features innermost */
	n = eval_hlo(_metadata, nhwc, (const void *[]){ img, k }, 0, out, 8);
	ASSERT_VALUES(out, n, 12, 24, 16, 32, 24, 48, 28, 56);
	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e {\n  x = f32[1,1,3] parameter(0)\n"
		 "  k = f32[1,1,2] parameter(1)\n"
		 "  ROOT c = f32[1,1,%d] convolution(x, k), window={size=2%s}, dim_labels=bf0_oi0->bf0\n}\n",
		 2, "");
	n = eval_hlo(_metadata, text, (const void *[]){ s, w }, 0, out, 8);
	ASSERT_VALUES(out, n, 21, 32);
	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e {\n  x = f32[1,1,3] parameter(0)\n"
		 "  k = f32[1,1,2] parameter(1)\n"
		 "  ROOT c = f32[1,1,%d] convolution(x, k), window={size=2%s}, dim_labels=bf0_oi0->bf0\n}\n",
		 2, " rhs_reversal=1");
	n = eval_hlo(_metadata, text, (const void *[]){ s, w }, 0, out, 8);
	ASSERT_VALUES(out, n, 12, 23);
	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e {\n  x = f32[1,1,3] parameter(0)\n"
		 "  k = f32[1,1,2] parameter(1)\n"
		 "  ROOT c = f32[1,1,%d] convolution(x, k), window={size=2%s}, dim_labels=bf0_oi0->bf0\n}\n",
		 4, " lhs_dilate=2");
	n = eval_hlo(_metadata, text, (const void *[]){ s, w }, 0, out, 8);
	ASSERT_VALUES(out, n, 1, 20, 2, 30);
}

TEST(reduce_window_pools)
{
	static const float x[4] = { 1, 3, 2, 5 };
	double out[3];
	int n;

	n = eval_hlo(_metadata, "HloModule m\n" SCALAR_COMP("mx", "maximum")
		     "ENTRY e {\n  x = f32[4] parameter(0)\n"
		     "  ROOT r = f32[2] reduce-window(x, f32[] constant(-inf)), window={size=2 stride=2}, to_apply=mx\n}\n",
		     (const void *[]){ x }, 0, out, 3);
	ASSERT_VALUES(out, n, 3, 5);
	n = eval_hlo(_metadata, "HloModule m\n" SCALAR_COMP("mx", "maximum")
		     "ENTRY e {\n  x = f32[4] parameter(0)\n"
		     "  ROOT r = f32[2] reduce-window(x, f32[] constant(-inf)), window={size=2 stride=2 pad=1_0}, to_apply=mx\n}\n",
		     (const void *[]){ x }, 0, out, 3);
	ASSERT_VALUES(out, n, 1, 3);
	n = eval_hlo(_metadata, "HloModule m\n" SCALAR_COMP("sum", "add")
		     "ENTRY e {\n  x = f32[4] parameter(0)\n"
		     "  ROOT r = f32[3] reduce-window(x, f32[] constant(0)), window={size=2}, to_apply=sum\n}\n",
		     (const void *[]){ x }, 0, out, 3);
	ASSERT_VALUES(out, n, 4, 5, 7);
}

TEST(batch_norm_inference_and_training)
{
	static const float x[4] = { 1, 2, 3, 4 }, sc[2] = { 1, 2 }, of[2] = { 0, 1 };
	static const float mean[2] = { 2, 3 }, var[2] = { 1, 4 };
	double out[4];
	const char *train =
		"HloModule m\nENTRY e {\n  x = f32[2,2] parameter(0)\n"
		"  s = f32[2] parameter(1)\n  o = f32[2] parameter(2)\n"
		"  ROOT b = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, s, o), epsilon=0, feature_index=1\n}\n";
	int n;

	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n  x = f32[2,2] parameter(0)\n"
		     "  s = f32[2] parameter(1)\n  o = f32[2] parameter(2)\n"
		     "  m = f32[2] parameter(3)\n  v = f32[2] parameter(4)\n"
		     "  ROOT b = f32[2,2] batch-norm-inference(x, s, o, m, v), epsilon=0, feature_index=1\n}\n",
		     (const void *[]){ x, sc, of, mean, var }, 0, out, 4);
	ASSERT_VALUES(out, n, -1, 0, 1, 2);
	/* column means 2 and 3, variances 1 and 1 */
	n = eval_hlo(_metadata, train, (const void *[]){ x, sc, of }, 0, out, 4);
	ASSERT_VALUES(out, n, -1, -1, 1, 3);
	n = eval_hlo(_metadata, train, (const void *[]){ x, sc, of }, 1, out, 4);
	ASSERT_VALUES(out, n, 2, 3);
	n = eval_hlo(_metadata, train, (const void *[]){ x, sc, of }, 2, out, 4);
	ASSERT_VALUES(out, n, 1, 1);
}

TEST(mixed_precision_dot_and_narrow_types)
{
	double out[1];
	int n;

	/* preferred_element_type=f32: bf16 operands, an f32 result */
	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n"
		     "  a = bf16[1,2] constant({ {1.5, 2} })\n"
		     "  b = bf16[2,1] constant({ {2}, {0.25} })\n"
		     "  ROOT d = f32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
		     NULL, 0, out, 1);
	ASSERT_VALUES(out, n, 3.5);
	/* s64 and u8 compute as s32, f64 as f32 */
	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n"
		     "  a = s64[] constant(40)\n  b = u8[] constant(2)\n"
		     "  c = s64[] convert(b)\n  s = s64[] add(a, c)\n"
		     "  ROOT f = f64[] convert(s)\n}\n", NULL, 0, out, 1);
	ASSERT_VALUES(out, n, 42);
	ASSERT_HLO_ERROR("HloModule m\nENTRY e {\n  a = u32[] parameter(0)\n"
			 "  ROOT c = pred[] compare(a, a), direction=LT\n}\n",
			 "4:19", "unsupported: compare of u32 values");
}

TEST(barriers_collectives_and_annotations_are_their_operands)
{
	static const float x[2] = { 1, -2 };
	double out[2];
	int n;

	n = eval_hlo(_metadata, "HloModule m\n" SCALAR_COMP("sum", "add")
		     "ENTRY e {\n  x = f32[2] parameter(0)\n"
		     "  t = (f32[2]) tuple(x)\n"
		     "  b = (f32[2]) opt-barrier(t)\n"
		     "  y = f32[2] get-tuple-element(b), index=0\n"
		     "  s = f32[2] custom-call(y), custom_call_target=\"Sharding\", sharding={replicated}\n"
		     "  ROOT r = f32[2] all-reduce(s), replica_groups={}, to_apply=sum\n}\n",
		     (const void *[]){ x }, 0, out, 2);
	ASSERT_VALUES(out, n, 1, -2);
	ASSERT_HLO_ERROR("HloModule m\n" SCALAR_COMP("sum", "add")
			 "ENTRY e {\n  x = f32[2] parameter(0)\n"
			 "  ROOT r = f32[2] all-reduce(x), replica_groups={{0,1}}, to_apply=sum\n}\n",
			 "9:19", "unsupported: all-reduce across more than one device");
}

/* .at[i].add and .at[i].set: out-of-range rows are dropped, as XLA does. */
TEST(scatter_adds_and_replaces_rows)
{
	static const float x[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const float u[6] = { 10, 20, 30, 40, 50, 60 };
	static const int32_t i[3] = { 1, 3, 9 };
	double out[8];
	const char *fmt =
		"HloModule jit_scatter\n"
		SCALAR_COMP("add", "add")
		"set {\n  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)\n}\n"
		"ENTRY e {\n"
		"  x = f32[4,2] parameter(0)\n"
		"  i = s32[3,1] parameter(1)\n"
		"  u = f32[3,2] parameter(2)\n"
		"  ROOT s = f32[4,2] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%s\n"
		"}\n";
	char text[768];
	int n;

	snprintf(text, sizeof(text), fmt, "add");
	n = eval_hlo(_metadata, text, (const void *[]){ x, i, u }, 0, out, 8);
	ASSERT_VALUES(out, n, 0, 1, 12, 23, 4, 5, 36, 47);
	snprintf(text, sizeof(text), fmt, "set");
	n = eval_hlo(_metadata, text, (const void *[]){ x, i, u }, 0, out, 8);
	ASSERT_VALUES(out, n, 0, 1, 10, 20, 4, 5, 30, 40);
}

/* jnp.argsort: keys and an iota, stable, along the last dimension. */
TEST(sort_orders_every_operand_by_the_first)
{
	static const float k[8] = { 3, 1, 2, 1, 0.5, -1, 4, 0 };
	const char *fmt =
		"HloModule jit_argsort\n"
		"cmp {\n"
		"  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
		"  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
		"  ROOT l = pred[] compare(a, b), direction=%s\n"
		"}\n"
		"ENTRY e {\n"
		"  k = f32[2,4] parameter(0)\n"
		"  io = s32[2,4] iota(), iota_dimension=1\n"
		"  s = (f32[2,4], s32[2,4]) sort(k, io), dimensions={1}, is_stable=true, to_apply=cmp\n"
		"  a = f32[2,4] get-tuple-element(s), index=0\n"
		"  b = s32[2,4] get-tuple-element(s), index=1\n"
		"  ROOT t = (f32[2,4], s32[2,4]) tuple(a, b)\n"
		"}\n";
	char text[768];
	double out[8];
	int n;

	snprintf(text, sizeof(text), fmt, "LT");
	n = eval_hlo(_metadata, text, (const void *[]){ k }, 0, out, 8);
	ASSERT_VALUES(out, n, 1, 1, 2, 3, -1, 0, 0.5, 4);
	n = eval_hlo(_metadata, text, (const void *[]){ k }, 1, out, 8);
	ASSERT_VALUES(out, n, 1, 3, 2, 0, 1, 3, 0, 2);
	snprintf(text, sizeof(text), fmt, "GT");
	n = eval_hlo(_metadata, text, (const void *[]){ k }, 1, out, 8);
	ASSERT_VALUES(out, n, 0, 2, 1, 3, 2, 0, 3, 1);
}

/*
 * The comparator is applied as written, whatever it is: two keys
 * lexicographically (lax.sort with num_keys=2), not just the first
 * compare found in it.
 */
TEST(sort_applies_the_whole_comparator)
{
	static const int32_t k0[4] = { 1, 0, 1, 0 }, k1[4] = { 5, 9, 2, 1 };
	const char *text =
		"HloModule jit_lexsort\n"
		"cmp {\n"
		"  a0 = s32[] parameter(0)\n  b0 = s32[] parameter(1)\n"
		"  a1 = s32[] parameter(2)\n  b1 = s32[] parameter(3)\n"
		"  lt0 = pred[] compare(a0, b0), direction=LT\n"
		"  eq0 = pred[] compare(a0, b0), direction=EQ\n"
		"  lt1 = pred[] compare(a1, b1), direction=LT\n"
		"  t = pred[] and(eq0, lt1)\n"
		"  ROOT r = pred[] or(lt0, t)\n"
		"}\n"
		"ENTRY e {\n"
		"  k0 = s32[4] parameter(0)\n  k1 = s32[4] parameter(1)\n"
		"  ROOT s = (s32[4], s32[4]) sort(k0, k1), dimensions={0}, is_stable=true, to_apply=cmp\n"
		"}\n";
	double out[4];
	int n;

	n = eval_hlo(_metadata, text, (const void *[]){ k0, k1 }, 1, out, 4);
	ASSERT_VALUES(out, n, 1, 9, 2, 5);
	ASSERT_HLO_ERROR("HloModule m\n"
			 "cmp {\n"
			 "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
			 "  s = f32[] reshape(a)\n"
			 "  ROOT l = pred[] compare(s, b), direction=LT\n"
			 "}\n"
			 "ENTRY e {\n"
			 "  k = f32[4] parameter(0)\n"
			 "  ROOT s = f32[4] sort(k), dimensions={0}, to_apply=cmp\n"
			 "}\n",
			 "5:13", "unsupported: reshape in a computation applied elementwise (a sort comparator)");
}

/*
 * A gather whose windows span the indexed dimensions (what vmap makes of
 * dynamic_slice): each window starts at its index, clamped so it fits.
 */
TEST(gather_windows_over_indexed_dimensions)
{
	static const float x[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
				     12, 13, 14, 15 };
	static const int32_t idx[4] = { 1, 1, 3, 2 };
	double out[8];
	int n;

	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n"
		     "  x = f32[4,4] parameter(0)\n  i = s32[2,2] parameter(1)\n"
		     "  ROOT g = f32[2,2,2] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}\n}\n",
		     (const void *[]){ x, idx }, 0, out, 8);
	ASSERT_VALUES(out, n, 5, 6, 9, 10, 10, 11, 14, 15);
}

/*
 * select-and-scatter, max pooling's gradient: each window's source value
 * goes to its first maximum (ties: the first in the window's order).
 */
TEST(select_and_scatter_routes_to_the_first_maximum)
{
	static const float x[16] = { 1, 5, 2, 2, 3, 4, 2, 7, 9, 0, 1, 1,
				     9, 8, 1, 1 };
	static const float src[4] = { 1, 2, 3, 4 };
	double out[16];
	int n;

	n = eval_hlo(_metadata, "HloModule m\n"
		     "ge { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		     "  ROOT c = pred[] compare(a, b), direction=GE }\n"
		     "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		     "  ROOT s = f32[] add(a, b) }\n"
		     "ENTRY e {\n"
		     "  x = f32[4,4] parameter(0)\n  s = f32[2,2] parameter(1)\n"
		     "  ROOT r = f32[4,4] select-and-scatter(x, s, f32[] constant(0)), window={size=2x2 stride=2x2}, select=ge, scatter=add\n}\n",
		     (const void *[]){ x, src }, 0, out, 16);
	ASSERT_VALUES(out, n, 0, 1, 0, 0, 0, 0, 0, 2, 3, 0, 4, 0, 0, 0, 0, 0);
}

/* atan2 in every quadrant, on the axes, at signed zeros and infinities */
TEST(atan2_as_c_defines_it)
{
	static const float y[10] = { 1, 1, -1, 0, -0.0f, 2, 0, INFINITY, 1, 3 };
	static const float x[10] = { 1, -1, -1, -1, -1, 0, 0, INFINITY,
				     INFINITY, -4 };
	double out[16];
	int n, i;

	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n"
		     "  y = f32[10] parameter(0)\n  x = f32[10] parameter(1)\n"
		     "  ROOT a = f32[10] atan2(y, x)\n}\n",
		     (const void *[]){ y, x }, 0, out, 16);
	ASSERT_EQ(10, n);
	for (i = 0; i < 10; i++)
		EXPECT_LE(fabs(out[i] - atan2(y[i], x[i])), 1e-6)
			TH_LOG("atan2(%g, %g): %.9g, want %.9g", y[i], x[i],
			       out[i], atan2(y[i], x[i]));
	EXPECT_TRUE(signbit(out[4]));	/* atan2(-0, -1) = -pi */
}

/* TopK, as XLA's TopkRewriter leaves it: the k greatest and their indices */
TEST(topk_custom_call)
{
	static const float x[8] = { 3, 1, 4, 1, 5, 9, 2, 6 };
	const char *text =
		"HloModule m\n"
		"gt {\n"
		"  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
		"  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
		"  ROOT g = pred[] compare(a, b), direction=GT, type=TOTALORDER\n"
		"}\n"
		"ENTRY e {\n"
		"  x = f32[2,4] parameter(0)\n"
		"  ROOT t = (f32[2,3], s32[2,3]) custom-call(x), custom_call_target=\"TopK\", to_apply=gt\n"
		"}\n";
	double out[6];
	int n;

	n = eval_hlo(_metadata, text, (const void *[]){ x }, 0, out, 6);
	ASSERT_VALUES(out, n, 4, 3, 1, 9, 6, 5);
	n = eval_hlo(_metadata, text, (const void *[]){ x }, 1, out, 6);
	ASSERT_VALUES(out, n, 2, 0, 1, 1, 3, 0);
}

/* s8 x s8 -> s32 is exact on the f32 MXU while sums stay below 2^24 */
TEST(integer_dot_of_narrow_types)
{
	static const int32_t a[4] = { -128, 127, 3, -5 }, b[4] = { -128, 2, 127, 7 };
	double out[4];
	int n;

	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n"
		     "  a = s8[2,2] parameter(0)\n  b = s8[2,2] parameter(1)\n"
		     "  ROOT d = s32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
		     (const void *[]){ a, b }, 0, out, 4);
	ASSERT_VALUES(out, n, -128 * -128 + 127 * 127, -128 * 2 + 127 * 7,
		      3 * -128 + -5 * 127, 3 * 2 + -5 * 7);
	ASSERT_HLO_ERROR("HloModule m\nENTRY e {\n"
			 "  a = s32[2,2] parameter(0)\n  b = s32[2,2] parameter(1)\n"
			 "  ROOT d = s32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
			 "5:21", "unsupported: an integer dot whose sums can pass 2^24");
}

/*
 * bitcast reinterprets bytes in their layout: compiled HLO writes a
 * transpose as a copy to layout {0,1} and a bitcast back to {1,0}.
 */
TEST(bitcast_follows_the_layouts)
{
	static const float x[6] = { 0, 1, 2, 3, 4, 5 };
	double out[6];
	int n;

	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n"
		     "  p = f32[2,3]{1,0} parameter(0)\n"
		     "  c = f32[2,3]{0,1} copy(p)\n"
		     "  ROOT b = f32[3,2]{1,0} bitcast(c)\n}\n",
		     (const void *[]){ x }, 0, out, 6);
	ASSERT_VALUES(out, n, 0, 3, 1, 4, 2, 5);
	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n"
		     "  p = f32[2,3]{1,0} parameter(0)\n"
		     "  b = f32[3,2]{0,1} bitcast(p)\n"
		     "  ROOT c = f32[3,2]{1,0} copy(b)\n}\n",
		     (const void *[]){ x }, 0, out, 6);
	ASSERT_VALUES(out, n, 0, 3, 1, 4, 2, 5);
	/* default layouts, written or not: a reshape */
	n = eval_hlo(_metadata, "HloModule m\nENTRY e {\n"
		     "  p = f32[2,3] parameter(0)\n"
		     "  ROOT b = f32[3,2]{1,0} bitcast(p)\n}\n",
		     (const void *[]){ x }, 0, out, 6);
	ASSERT_VALUES(out, n, 0, 1, 2, 3, 4, 5);
}

/* ---- malformed input: -EINVAL at the first problem --------------------------- */

TEST(empty_input)
{
	ASSERT_HLO_ERROR("", "1:1", "expected 'HloModule' or a computation, found end of input");
	ASSERT_HLO_ERROR("  \n\n", "3:1", "expected 'HloModule' or a computation");
	ASSERT_HLO_ERROR("HloModule m\n", "2:1", "no computation");
}

/* Text cut out of a dump may start at ENTRY. */
TEST(module_header_is_optional)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"ENTRY e {\n  ROOT c = f32[] constant(1)\n}\n");

	ASSERT_STREQ("f32[]", SHAPE(g, output(g, 0)));
	vtpu_graph_free(g);
	ASSERT_HLO_ERROR("42 {\n}\n", "1:1", "expected 'HloModule' or a computation, found '42'");
}

/* Newer dumps print stack-frame tables after the header. */
TEST(stack_frame_tables_are_skipped)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n"
		"\n"
		"FileNames\n1 \"/tmp/x.py\"\n"
		"FunctionNames\n1 \"f\"\n"
		"FileLocations\n1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=2 end_column=9}\n"
		"StackFrames\n1 {file_location_id=1 parent_frame_id=0}\n"
		"\n"
		"ENTRY e {\n  p = f32[2] parameter(0), metadata={stack_frame_id=1}\n"
		"  ROOT n = f32[2] negate(p)\n}\n");

	ASSERT_EQ(OP_NEG, node(g, output(g, 0))->op);
	vtpu_graph_free(g);
}

TEST(missing_entry)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"neg {\n"
		"  x = f32[3] parameter(0)\n"
		"  ROOT n = f32[3] negate(x)\n"
		"}\n"
		"main {\n"
		"  y = f32[3] parameter(0)\n"
		"  ROOT a = f32[3] abs(y)\n"
		"}\n");

	/* XLA's rule: without ENTRY the last computation is the entry */
	ASSERT_EQ(OP_ABS, node(g, output(g, 0))->op);
	vtpu_graph_free(g);
}

TEST(second_entry)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY a {\n"
			 "  x = f32[] parameter(0)\n"
			 "}\n"
			 "ENTRY b {\n"
			 "  x = f32[] parameter(0)\n"
			 "}\n",
			 "5:1", "second ENTRY");
}

TEST(unknown_opcode)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2] frobnicate(p)\n"
			 "}\n",
			 "4:19", "unknown opcode 'frobnicate'");
}

TEST(unsupported_opcode_is_named)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2] rng-bit-generator(p), algorithm=rng_default\n"
			 "}\n",
			 "4:19", "unsupported opcode 'rng-bit-generator'");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2] shift-left(p, p)\n"
			 "}\n",
			 "4:19", "unsupported opcode 'shift-left'");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2] custom-call(p), custom_call_target=\"__cublas$gemm\"\n"
			 "}\n",
			 "4:54", "unsupported: custom-call target '__cublas$gemm'");
}

TEST(unsupported_opcodes_outside_entry_are_fine)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"and.1 {\n"
		"  x = pred[] parameter(0)\n"
		"  y = pred[] parameter(1)\n"
		"  ROOT a = pred[] and(x, y)\n"
		"}\n"
		"ENTRY e {\n"
		"  ROOT p = f32[2] parameter(0)\n"
		"}\n");

	vtpu_graph_free(g);
}

TEST(bad_shape)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2,x] parameter(0)\n"
			 "}\n",
			 "3:13", "expected an integer, found 'x'");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = q32[2] parameter(0)\n"
			 "}\n",
			 "3:7", "expected a shape, found 'q32'");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32 parameter(0)\n"
			 "}\n",
			 "3:11", "expected '[', found 'parameter'");
}

TEST(unsupported_element_type)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = c64[2] parameter(0)\n"
			 "}\n",
			 "3:7", "unsupported element type 'c64'");
}

TEST(unsupported_dimensions)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[<=4] parameter(0)\n"
			 "}\n",
			 "3:11", "dynamic dimension");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2,0] parameter(0)\n"
			 "}\n",
			 "3:13", "dimension of size 0");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[1,1,1,1,1,1,1] parameter(0)\n"
			 "}\n",
			 "3:23", "rank above 6");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[65536,65536,65536] parameter(0)\n"
			 "}\n",
			 "3:23", "shape too large");
}

TEST(shape_mismatch)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[3] negate(p)\n"
			 "}\n",
			 "4:12", "shape mismatch: the text says f32[3], the operands make f32[2]");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  a = f32[2,3] parameter(0)\n"
			 "  b = f32[3,4] parameter(1)\n"
			 "  ROOT d = f32[2,3]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
			 "}\n",
			 "5:12", "the operands make f32[2,4]");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  a = f32[2] parameter(0)\n"
			 "  ROOT t = (f32[2], f32[2]) tuple(a)\n"
			 "}\n",
			 "4:12", "shape mismatch");
}

TEST(builder_rejects_the_operands)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  a = f32[2] parameter(0)\n"
			 "  b = f32[3] parameter(1)\n"
			 "  ROOT c = f32[2] add(a, b)\n"
			 "}\n",
			 "5:19", "operands differ in shape");
}

TEST(undefined_operand)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2] negate(r)\n"
			 "}\n",
			 "4:26", "undefined operand 'r'");
}

TEST(operand_used_before_its_definition)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  q = f32[2] negate(p)\n"
			 "  p = f32[2] parameter(0)\n"
			 "}\n",
			 "3:21", "undefined operand 'p'");
}

TEST(operands_of_another_computation_are_not_in_scope)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "c {\n"
			 "  x = f32[2] parameter(0)\n"
			 "}\n"
			 "ENTRY e {\n"
			 "  ROOT q = f32[2] negate(x)\n"
			 "}\n",
			 "6:26", "undefined operand 'x'");
}

TEST(duplicate_name)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  %p = f32[2] negate(p)\n"
			 "}\n",
			 "4:3", "duplicate name 'p'");
}

TEST(duplicate_computation)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "c {\n"
			 "  x = f32[] parameter(0)\n"
			 "}\n"
			 "%c {\n"
			 "  x = f32[] parameter(0)\n"
			 "}\n",
			 "5:1", "duplicate computation 'c'");
}

TEST(duplicate_attribute)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2,2] broadcast(p), dimensions={0}, dimensions={1}\n"
			 "}\n",
			 "4:51", "duplicate attribute 'dimensions'");
}

TEST(second_root)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2] negate(p)\n"
			 "}\n",
			 "4:8", "second ROOT");
}

TEST(empty_computation)
{
	ASSERT_HLO_ERROR("HloModule m\nENTRY e {\n}\n", "2:9",
			 "empty computation 'e'");
}

TEST(unterminated_brace)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT p = f32[2] parameter(0)\n",
			 "2:9", "unterminated '{'");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT p = f32[2] parameter(0), metadata={op_name=\"x\"\n",
			 "3:42", "unterminated '{'");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT p = f32[2,2]{1,0",
			 "3:20", "unterminated '{'");
}

TEST(unterminated_string)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT p = f32[2] parameter(0), backend_config=\"abc\n"
			 "}\n",
			 "3:48", "unterminated string");
	ASSERT_HLO_ERROR("HloModule m, x=\"\\", "1:16", "unterminated string");
}

TEST(unterminated_comment)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e { /* ROOT p = f32[2] parameter(0)\n"
			 "}\n",
			 "2:11", "unterminated comment");
}

TEST(unexpected_character)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT p = f32[2] param\xc3\xa9ter(0)\n"
			 "}\n",
			 "3:24", "unexpected character '\\xc3'");
	ASSERT_HLO_ERROR_N("HloModule m\0", 12, "1:12",
			   "unexpected character '\\x00'");
}

TEST(bad_constant_element_count)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = f32[2,2] constant({ {1,2}, {3} })\n"
			 "}\n",
			 "3:39", "bad constant: dimension 1 must have 2 elements");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = f32[2] constant({1, 2, 3})\n"
			 "}\n",
			 "3:28", "dimension 0 must have 2 elements");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = f32[2] constant(1)\n"
			 "}\n",
			 "3:28", "expected '{', found '1'");
}

TEST(bad_constant_value)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = f32[] constant(1.2.3)\n"
			 "}\n",
			 "3:27", "expected a number, found '1.2.3'");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = s32[] constant(1.5)\n"
			 "}\n",
			 "3:27", "expected an integer");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = s32[] constant(3000000000)\n"
			 "}\n",
			 "3:27", "unsupported: 3000000000 is outside the device's s32 range");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = f32[] constant(1e39)\n"
			 "}\n",
			 "3:27", "number out of range");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = pred[] constant(1)\n"
			 "}\n",
			 "3:28", "expected true or false");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = f32[] constant(-infinity)\n"
			 "}\n",
			 "3:28", "expected a number, found 'infinity'");
}

TEST(elided_constant)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT c = f32[1000] constant({...})\n"
			 "}\n",
			 "3:31", "elided constant");
}

TEST(wrong_to_apply)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "sub {\n"
			 "  x = f32[] parameter(0)\n"
			 "  y = f32[] parameter(1)\n"
			 "  ROOT s = f32[] subtract(x, y)\n"
			 "}\n"
			 "ENTRY e {\n"
			 "  a = f32[4] parameter(0)\n"
			 "  z = f32[] constant(0)\n"
			 "  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=sub\n"
			 "}\n",
			 "10:57", "to_apply 'sub' is not add, maximum, minimum, and or or");
	/* the add must combine the two parameters, not a parameter twice */
	ASSERT_HLO_ERROR("HloModule m\n"
			 "dbl {\n"
			 "  x = f32[] parameter(0)\n"
			 "  y = f32[] parameter(1)\n"
			 "  ROOT s = f32[] add(x, x)\n"
			 "}\n"
			 "ENTRY e {\n"
			 "  a = f32[4] parameter(0)\n"
			 "  z = f32[] constant(0)\n"
			 "  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=dbl\n"
			 "}\n",
			 "10:57", "to_apply 'dbl' is not add");
}

TEST(to_apply_undefined)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  a = f32[4] parameter(0)\n"
			 "  z = f32[] constant(0)\n"
			 "  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=%add\n"
			 "}\n",
			 "5:57", "undefined computation 'add'");
}

#define ADD_COMP \
	"add {\n" \
	"  x = f32[] parameter(0)\n" \
	"  y = f32[] parameter(1)\n" \
	"  ROOT s = f32[] add(x, y)\n" \
	"}\n"

#define MAX_COMP \
	"max {\n" \
	"  x = f32[] parameter(0)\n" \
	"  y = f32[] parameter(1)\n" \
	"  ROOT s = f32[] maximum(x, y)\n" \
	"}\n"

TEST(variadic_reduce)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 ADD_COMP
			 "ENTRY e {\n"
			 "  a = f32[4] parameter(0)\n"
			 "  z = f32[] constant(0)\n"
			 "  ROOT r = (f32[], f32[]) reduce(a, a, z, z), dimensions={0}, to_apply=add\n"
			 "}\n",
			 "10:72", "unsupported: variadic reduce other than argmax or argmin");
}

TEST(wrong_operand_count)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2] add(p)\n"
			 "}\n",
			 "4:19", "add takes 2 operands, found 1");
}

TEST(missing_comma_between_operands)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2] add(p p)\n"
			 "}\n",
			 "4:25", "expected ',', found 'p'");
}

TEST(missing_attribute)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[3,2] broadcast(p)\n"
			 "}\n",
			 "4:21", "broadcast needs dimensions=");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = pred[2] compare(p, p)\n"
			 "}\n",
			 "4:20", "compare needs direction=");
}

TEST(attribute_count_does_not_match_the_rank)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2,3] parameter(0)\n"
			 "  ROOT q = f32[3,2] transpose(p), dimensions={1}\n"
			 "}\n",
			 "4:46", "dimensions has 1 entries for an operand of rank 2");
}

TEST(bad_comparison_direction)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = pred[2] compare(p, p), direction=XX\n"
			 "}\n",
			 "4:45", "expected a comparison direction, found 'XX'");
}

#define CONV_ENTRY(attrs) \
	"HloModule m\n" \
	"ENTRY e {\n" \
	"  x = f32[1,2,4,4] parameter(0)\n" \
	"  k = f32[2,2,3,3] parameter(1)\n" \
	"  ROOT c = f32[1,2,4,4] convolution(x, k), " attrs "\n" \
	"}\n"

TEST(unsupported_convolution_layout)
{
	ASSERT_HLO_ERROR(CONV_ENTRY("window={size=3x3 pad=1_1x1_1}, dim_labels=b012f_012io->b012f"),
			 "5:86", "unsupported dim_labels 'b012f_012io->b012f'");
	ASSERT_HLO_ERROR(CONV_ENTRY("window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bx01"),
			 "5:86", "unsupported dim_labels 'bf01_oi01->bx01'");
}

TEST(unsupported_convolution_window)
{
	ASSERT_HLO_ERROR(CONV_ENTRY("window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, batch_group_count=2"),
			 "5:121", "unsupported: batch_group_count");
	ASSERT_HLO_ERROR(CONV_ENTRY("window={size=3y3}, dim_labels=bf01_oi01->bf01"),
			 "5:57", "bad size '3y3'");
	ASSERT_HLO_ERROR(CONV_ENTRY("window={size=3x3 pad=1x1}, dim_labels=bf01_oi01->bf01"),
			 "5:65", "bad pad '1x1'");
	ASSERT_HLO_ERROR(CONV_ENTRY("window={size=5x5 pad=2_2x2_2}, dim_labels=bf01_oi01->bf01"),
			 "5:51", "window size does not match the kernel");
	ASSERT_HLO_ERROR(CONV_ENTRY("window={size=3x3 pad=1_1x1_1 stride=1x1x1}, dim_labels=bf01_oi01->bf01"),
			 "5:51", "window stride must have 2 dimensions");
}

TEST(pad_value_of_another_type)
{
	struct vtpu_graph *g = parse_ok(_metadata,
		"HloModule m\n"
		"ENTRY e {\n"
		"  p = bf16[2] parameter(0)\n"
		"  v = bf16[] constant(1.5)\n"
		"  ROOT q = bf16[5] pad(p, v), padding=0_3\n"
		"}\n");

	ASSERT_EQ(OP_PAD, node(g, output(g, 0))->op);
	ASSERT_TRUE(node(g, output(g, 0))->a.pad.value == 1.5);
	vtpu_graph_free(g);
}

TEST(pad_value_is_not_a_constant)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  z = f32[] parameter(1)\n"
			 "  ROOT q = f32[4] pad(p, z), padding=1_1\n"
			 "}\n",
			 "5:26", "the pad value must be a scalar constant");
}

TEST(get_tuple_element_of_a_non_tuple)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT q = f32[2] get-tuple-element(p), index=0\n"
			 "}\n",
			 "4:37", "get-tuple-element of 'p', which is not a tuple");
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  t = (f32[2]) tuple(p)\n"
			 "  ROOT q = f32[2] get-tuple-element(t), index=1\n"
			 "}\n",
			 "5:47", "index 1 out of range");
}

TEST(tuple_used_as_an_operand)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  t = (f32[2]) tuple(p)\n"
			 "  ROOT q = f32[2] negate(t)\n"
			 "}\n",
			 "5:26", "tuple 't' as an operand");
}

TEST(empty_tuple_result)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT t = () tuple()\n"
			 "}\n",
			 "3:15", "unsupported: an empty tuple as the result");
}

TEST(concatenate_needs_one_dimension)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  p = f32[2] parameter(0)\n"
			 "  ROOT c = f32[4] concatenate(p, p), dimensions={0,1}\n"
			 "}\n",
			 "4:49", "concatenate needs one dimension");
}

TEST(parameter_numbers_have_a_gap)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  a = f32[2] parameter(0)\n"
			 "  b = f32[2] parameter(2)\n"
			 "}\n",
			 "4:24", "parameter(2) but the computation has 2 parameters");
}

TEST(parameter_number_repeats)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  a = f32[2] parameter(0)\n"
			 "  b = f32[2] parameter(0)\n"
			 "}\n",
			 "4:24", "parameter(0) defined twice");
}

TEST(trailing_garbage)
{
	ASSERT_HLO_ERROR("HloModule m\n"
			 "ENTRY e {\n"
			 "  ROOT p = f32[2] parameter(0)\n"
			 "}\n"
			 "42\n",
			 "5:1", "expected a computation name, found '42'");
}

/*
 * Every prefix of a valid module fails cleanly: -EINVAL, no graph, and a
 * location inside the prefix (the parser never looks past the end).
 */
TEST(truncated_input_at_every_length)
{
	size_t full = strrchr(mlp, '}') - mlp, len;
	/* a prefix that ends after the first computation is a module */
	size_t first = strstr(mlp, "\n}\n") + 2 - mlp;
	size_t entry = strstr(mlp, "ENTRY") - mlp;

	for (len = 0; len <= full; len++) {
		struct vtpu_graph *g = (struct vtpu_graph *)&g;
		unsigned long line, col, l = 1, c = 1;
		char err[256] = "";
		size_t i;

		if (len >= first && len <= entry) {
			ASSERT_EQ(0, parse(mlp, len, &g, err, sizeof(err)))
				TH_LOG("prefix of %zu bytes: %s", len, err);
			vtpu_graph_free(g);
			continue;
		}
		ASSERT_EQ(-EINVAL, parse(mlp, len, &g, err, sizeof(err)))
			TH_LOG("prefix of %zu bytes", len);
		ASSERT_NULL(g);
		ASSERT_EQ(2, sscanf(err, "%lu:%lu: ", &line, &col))
			TH_LOG("%s", err);
		for (i = 0; i < len && (l < line || c < col); i++) {
			if (mlp[i] == '\n') {
				l++;
				c = 1;
			} else {
				c++;
			}
		}
		ASSERT_TRUE(l == line && c == col)
			TH_LOG("prefix of %zu bytes: %s", len, err);
	}
}

TEST_HARNESS_MAIN
