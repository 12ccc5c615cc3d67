// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/common.h - what the files of the ONNX frontend share: the
 * builder context, host constants, the operator table's entry type and
 * every handler and helper used across files. Those carry the onnx_
 * prefix, so that the static library exports nothing generic.
 */
#ifndef VTPU_ONNX_COMMON_H
#define VTPU_ONNX_COMMON_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"		/* ir_eval() folds constant subgraphs */
#include "vtpu_compiler.h"
#include "onnx.pb-c.h"

#define R		VTPU_MAX_RANK
#define MAX_TAKE	1024	/* Gather / negative-step Slice indices */
#define MAX_FOLD	65536	/* elements of a tensor folded on the host */

/* A compile-time copy of a tensor (dims may be 0 here, unlike the IR). */
struct cval {
	enum vtpu_type type;
	int rank;
	int64_t dims[R];
	int64_t n;
	void *data;		/* n elements in @type's layout */
	int otype;		/* the ONNX type decoded from; 0: derived */
	/*
	 * @data is the TensorProto's own (the unpacked model outlives every
	 * value): a model's weights are not copied once more to be parsed.
	 * Never written, and not freed with the value.
	 */
	bool borrowed;
};

struct val {
	const char *name;	/* owned by the unpacked model */
	int id;			/* builder value; -1 until materialized */
	struct cval *c;		/* host copy or NULL */
	struct cval *b;		/* a bound input's values, for cin() only */
	struct seq *s;		/* a sequence, or NULL */
	/* which part of x * 0.5 * (1 + erf(x / sqrt2)) it is, of which x */
	int gelu;		/* enum onnx_gelu_part; 0: none */
	const char *gelu_x;	/* x's name */
};

/* An ONNX sequence, known at compile time: its tensors' builder values. */
struct seq {
	int n;
	int ids[];
};

struct ctx {
	struct vtpu_graph *g;
	int64_t opset;
	struct val *v;
	int nv, cap;
	int node;		/* index of the node being built, or -1 */
	const char *op;
	char *err;
	size_t errlen;
	bool failed;
	bool folding;		/* building a node on host constants (fold.c) */
	const struct vtpu_onnx_binding *bind;	/* vtpu_onnx_parse_bound() */
	int nbind;
	bool bound_used;	/* a bound input's values served as a constant */
};

typedef const Onnx__NodeProto node_t;
struct opdef;
typedef int (*handler_t)(struct ctx *c, node_t *n, const struct opdef *d);

struct opdef {
	const char *name;
	int min, max;		/* opset range */
	handler_t fn;
	int arg, arg2;		/* per-operator parameters of a shared handler */
	const char *attrs;	/* the attributes understood, comma separated */
};

/* The per-operator parameters of shared handlers (ops[] in onnx.c). */
enum { CELL_RNN, CELL_GRU, CELL_LSTM };
enum { PRE_NONE, PRE_SQUARE, PRE_ABS, PRE_EXP };
enum { POST_NONE, POST_SQRT, POST_LOG };

/*
 * Reduce*: d->arg is the reduce op, d->arg2 packs pre (low byte), post
 * (second byte) and the opset from which axes is an input (>> 16).
 */
/* ReduceProd's d->arg: the device reduces by sum, max and min only. */
#define REDUCE_PROD	(-1)

/* ---- onnx.c -------------------------------------------------------------- */

int onnx_fail(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int onnx_chk(struct ctx *c, int id);
/* Builds one node (a subgraph's too: control.c). */
int onnx_add_node(struct ctx *c, node_t *n);

/* ---- control.c ------------------------------------------------------------ */

int onnx_op_if(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_loop(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_scan(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- fold.c -------------------------------------------------------------- */

int onnx_fold(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- values.c ------------------------------------------------------------ */

struct val *onnx_lookup(struct ctx *c, const char *name);
int onnx_define(struct ctx *c, const char *name, int id, struct cval *cv);
/* Frees every value's host copies and sequences, and the table. */
void onnx_values_free(struct ctx *c);
void onnx_cval_free(struct cval *cv);
struct vtpu_shape onnx_shape_of(struct ctx *c, int id);
int64_t onnx_prod(const int64_t *d, int from, int to);
int onnx_value(struct ctx *c, const char *name);
bool onnx_has_in(node_t *n, size_t i);
int onnx_in(struct ctx *c, node_t *n, size_t i);
const struct cval *onnx_cin(struct ctx *c, node_t *n, size_t i,
			    const char *what);
int onnx_cv_ints(struct ctx *c, const struct cval *cv, int64_t *out,
		 int max, const char *what);
int onnx_in_ints(struct ctx *c, node_t *n, size_t i, int64_t *out, int max,
		 const char *what);
int onnx_cv_float(struct ctx *c, const struct cval *cv, double *out,
		  const char *what);
int onnx_out(struct ctx *c, node_t *n, size_t i, int id);
const Onnx__AttributeProto *onnx_attr(node_t *n, const char *name);
int64_t onnx_attr_i(node_t *n, const char *name, int64_t def);
float onnx_attr_f(node_t *n, const char *name, float def);
int onnx_attr_ints(struct ctx *c, node_t *n, const char *name, int64_t *out,
		   int max);
bool onnx_attr_s_is(node_t *n, const char *name, const char *def,
		    const char *want);
bool onnx_in_list(const char *list, const char *name);
enum vtpu_type onnx_type(int t, bool *ok);
enum vtpu_type onnx_dev_type(enum vtpu_type t);
const char *onnx_type_name(int t);
int onnx_cv_reals(struct ctx *c, const struct cval *cv, double *out, int max,
		  const char *what);
struct cval *onnx_cval_new(enum vtpu_type type, int rank, const int64_t *dims,
			   const void *data, int64_t n);
struct cval *onnx_cval_alloc(enum vtpu_type type, int rank,
			     const int64_t *dims, int64_t n);
struct cval *onnx_tensor(struct ctx *c, const Onnx__TensorProto *t);
int onnx_keep_const(struct ctx *c, node_t *n, struct cval *cv);
int onnx_op_constant(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_constant_of_shape(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- math.c -------------------------------------------------------------- */

int onnx_bcast_to(struct ctx *c, int a, int rank, const int64_t *dims);
int onnx_splat(struct ctx *c, double x, int like);
int onnx_binary(struct ctx *c, enum vtpu_binary_op op, int a, int b);
int onnx_op_binary(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_logical(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_variadic(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_compare(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_unary(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_gelu(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_reciprocal(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_sign(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_shrink(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_leaky(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_elu(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_softplus(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_clip(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_where(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_cast(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_castlike(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_isnan_inf(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_thresholded_relu(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_floor_ceil_round(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_softsign(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_selu(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_hardsigmoid(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_erf(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_gelu_peephole(struct ctx *c, node_t *n);
int onnx_op_trig(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_math(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_mod(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_celu(struct ctx *c, node_t *n, const struct opdef *d);
/* A per-tensor or per-axis scale or zero point @v laid along @axis of @like. */
int onnx_per_axis(struct ctx *c, int v, int like, int64_t axis);
int onnx_per_axis_in(struct ctx *c, node_t *n, size_t i, int like,
		     int64_t axis);
int onnx_less_zero_point(struct ctx *c, node_t *n, int x, size_t i,
			 int64_t axis);
/* Inputs @i and @j of an integer operator (MatMulInteger, QLinearConv..). */
int onnx_int_inputs(struct ctx *c, node_t *n, size_t i, size_t j, int *a,
		    int *b);
int onnx_zp_range(struct ctx *c, node_t *n, size_t i, double *lo, double *hi);
int onnx_requantize(struct ctx *c, node_t *n, int acc, int mult, size_t zpi);
int onnx_op_dyn_quantize(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_quantize(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_bitshift(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- reduce.c ------------------------------------------------------------ */

int onnx_op_cumsum(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_hardmax(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_topk(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_reduce(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_argmax(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- linalg.c ------------------------------------------------------------ */

int onnx_op_einsum(struct ctx *c, node_t *n, const struct opdef *d);

/* training.c (domain ai.onnx.preview.training) */
int onnx_op_gradient(struct ctx *c, node_t *n);
int onnx_matmul(struct ctx *c, int a, int b);
int onnx_op_qlinear_matmul(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_matmul_integer(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_matmul(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_gemm(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- nn.c ---------------------------------------------------------------- */

int onnx_op_dropout(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_softmax(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_apply_along(struct ctx *c, int x, int axis, const float *mat,
		     int64_t out);
int onnx_op_resize(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_upsample(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_mvn(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_nll_loss(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_sce_loss(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_qlinear_conv(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_conv_integer(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_conv(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_convtranspose(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_pool(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_global_pool(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_batchnorm(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_layernorm(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_instnorm(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_lrn(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- indexing.c ---------------------------------------------------------- */

int onnx_op_onehot(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_scatter_elements(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_iota_along(struct ctx *c, int64_t size, int rank,
		    const int64_t *dims, int axis);
int onnx_op_reverse_sequence(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_gather_elements(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_grid_sample(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_gathernd(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_scatternd(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_gather(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- tensor.c ------------------------------------------------------------ */

int onnx_axis_norm(struct ctx *c, int64_t a, int rank);
int onnx_reshape(struct ctx *c, int a, int rank, const int64_t *dims);
int onnx_take(struct ctx *c, int x, int axis, const int64_t *idx, int n);
int onnx_op_identity(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_range(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_eyelike(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_window(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_reshape(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_flatten(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_transpose(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_concat(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_slice(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_squeeze(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_unsqueeze(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_expand(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_pad(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_tile(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_trilu(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_depth_space(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_shape(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_size(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_split(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- rnn.c --------------------------------------------------------------- */

int onnx_op_rnn(struct ctx *c, node_t *n, const struct opdef *d);

/* ---- sequence.c ---------------------------------------------------------- */

int onnx_op_seq_construct(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_seq_edit(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_seq_at(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_seq_length(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_seq_empty(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_concat_from_seq(struct ctx *c, node_t *n, const struct opdef *d);
int onnx_op_split_to_seq(struct ctx *c, node_t *n, const struct opdef *d);

#endif
