// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx.c - the ONNX frontend: vtpu_onnx_parse(), the model walk, the
 * operator table, bindings and constant folding.
 *
 * protobuf-c decodes the ModelProto (code generated at build time from
 * Debian's onnx.proto); the graph is then built node by node, in the
 * topological order ONNX requires, with the public builder. Every value
 * name maps to a builder value and, for initializers, Constant nodes and
 * Shape results, to a host copy of its data: shapes, axes, pads and
 * Gather indices must be known at compile time, so they are read from
 * those copies. A host constant becomes a graph constant only when an
 * operator computes with it, so int64 shape data never reaches the
 * device unless the model computes with it.
 *
 * Operators are resolved through ops[] by (op_type, opset); one handler
 * per operator family, each checking only what it supports. The handlers
 * live in one file per family (common.h lists them). The first
 * error stops everything: "node I (OP): message".
 */
#include "common.h"

/* Records the first error, prefixed with the node; returns -EINVAL. */
int onnx_fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	size_t off = 0;

	if (c->failed || !c->err || !c->errlen) {
		c->failed = true;
		return -EINVAL;
	}
	c->failed = true;
	if (c->node >= 0)
		snprintf(c->err, c->errlen, "node %d (%s): ", c->node,
			 c->op ? c->op : "?");
	off = strlen(c->err);
	va_start(ap, fmt);
	vsnprintf(c->err + off, c->errlen - off, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A builder result: on failure, report the graph's sticky message. */
int onnx_chk(struct ctx *c, int id)
{
	const char *m;

	if (id >= 0)
		return id;
	m = vtpu_graph_error(c->g);
	onnx_fail(c, "%s", m ? m : strerror(-id));
	return id;
}

/* ---- the operator table ---------------------------------------------------- */

#define RED(pre, post, axes_ver)	((pre) | (post) << 8 | (axes_ver) << 16)
#define MAXV	1000

static const struct opdef ops[] = {
	{ "Add", 1, MAXV, onnx_op_binary, VTPU_ADD, 0, "axis,broadcast" },
	{ "Sub", 1, MAXV, onnx_op_binary, VTPU_SUB, 0, "axis,broadcast" },
	{ "Mul", 1, MAXV, onnx_op_binary, VTPU_MUL, 0, "axis,broadcast" },
	{ "Div", 1, MAXV, onnx_op_binary, VTPU_DIV, 0, "axis,broadcast" },
	{ "Pow", 1, MAXV, onnx_op_binary, VTPU_POW, 0, "axis,broadcast" },
	/* Before opset 8 the inputs have one shape: broadcasting is moot. */
	{ "Max", 1, MAXV, onnx_op_variadic, VTPU_MAX, 0, "consumed_inputs" },
	{ "Min", 1, MAXV, onnx_op_variadic, VTPU_MIN, 0, "consumed_inputs" },
	{ "Sum", 1, MAXV, onnx_op_variadic, VTPU_ADD, 0, "consumed_inputs" },
	{ "Mean", 1, MAXV, onnx_op_variadic, VTPU_ADD, 1, "consumed_inputs" },
	{ "Equal", 7, MAXV, onnx_op_compare, VTPU_EQ, 0, "" },
	{ "Less", 7, MAXV, onnx_op_compare, VTPU_LT, 0, "" },
	{ "LessOrEqual", 12, MAXV, onnx_op_compare, VTPU_LE, 0, "" },
	{ "Greater", 7, MAXV, onnx_op_compare, VTPU_GT, 0, "" },
	{ "GreaterOrEqual", 12, MAXV, onnx_op_compare, VTPU_GE, 0, "" },
	{ "Where", 9, MAXV, onnx_op_where, 0, 0, "" },
	{ "Exp", 6, MAXV, onnx_op_unary, VTPU_EXP, 0, "" },
	{ "Log", 6, MAXV, onnx_op_unary, VTPU_LOG, 0, "" },
	{ "Sqrt", 6, MAXV, onnx_op_unary, VTPU_SQRT, 0, "" },
	{ "Abs", 6, MAXV, onnx_op_unary, VTPU_ABS, 0, "" },
	{ "Neg", 6, MAXV, onnx_op_unary, VTPU_NEG, 0, "" },
	{ "Relu", 6, MAXV, onnx_op_unary, VTPU_RELU, 0, "" },
	{ "Sigmoid", 6, MAXV, onnx_op_unary, VTPU_LOGISTIC, 0, "" },
	{ "Tanh", 6, MAXV, onnx_op_unary, VTPU_TANH, 0, "" },
	{ "Gelu", 20, MAXV, onnx_op_gelu, VTPU_GELU, 0, "approximate" },
	{ "Erf", 9, MAXV, onnx_op_erf, 0, 0, "" },
	{ "Sin", 7, MAXV, onnx_op_trig, 0, 0, "" },
	{ "Cos", 7, MAXV, onnx_op_trig, 1, 0, "" },
	{ "Tan", 7, MAXV, onnx_op_trig, 2, 0, "" },
	{ "Sinh", 9, MAXV, onnx_op_math, 0, 0, "" },
	{ "Cosh", 9, MAXV, onnx_op_math, 1, 0, "" },
	{ "Asinh", 9, MAXV, onnx_op_math, 2, 0, "" },
	{ "Acosh", 9, MAXV, onnx_op_math, 3, 0, "" },
	{ "Atanh", 9, MAXV, onnx_op_math, 4, 0, "" },
	{ "Asin", 7, MAXV, onnx_op_math, 5, 0, "" },
	{ "Acos", 7, MAXV, onnx_op_math, 6, 0, "" },
	{ "Atan", 7, MAXV, onnx_op_math, 7, 0, "" },
	{ "Mod", 10, MAXV, onnx_op_mod, 0, 0, "fmod" },
	{ "Celu", 12, MAXV, onnx_op_celu, 0, 0, "alpha" },
	{ "HardSwish", 14, MAXV, onnx_op_hardsigmoid, 1, 0, "" },
	{ "QuantizeLinear", 10, MAXV, onnx_op_quantize, 0, 0, "axis" },
	{ "DynamicQuantizeLinear", 11, MAXV, onnx_op_dyn_quantize, 0, 0, "" },
	{ "DequantizeLinear", 10, MAXV, onnx_op_quantize, 1, 0, "axis" },
	{ "BitShift", 11, MAXV, onnx_op_bitshift, 0, 0, "direction" },
	{ "LRN", 1, MAXV, onnx_op_lrn, 0, 0, "alpha,beta,bias,size" },
	{ "HannWindow", 17, MAXV, onnx_op_window, 0, 0, "output_datatype,periodic" },
	{ "HammingWindow", 17, MAXV, onnx_op_window, 1, 0, "output_datatype,periodic" },
	{ "BlackmanWindow", 17, MAXV, onnx_op_window, 2, 0, "output_datatype,periodic" },
	{ "Reciprocal", 6, MAXV, onnx_op_reciprocal, 0, 0, "" },
	{ "Sign", 9, MAXV, onnx_op_sign, 0, 0, "" },
	{ "Shrink", 9, MAXV, onnx_op_shrink, 0, 0, "bias,lambd" },
	{ "LeakyRelu", 6, MAXV, onnx_op_leaky, 0, 0, "alpha" },
	{ "PRelu", 6, MAXV, onnx_op_leaky, 1, 0, "" },
	{ "Elu", 6, MAXV, onnx_op_elu, 0, 0, "alpha" },
	{ "Softplus", 1, MAXV, onnx_op_softplus, 0, 0, "" },
	{ "Clip", 6, MAXV, onnx_op_clip, 0, 0, "min,max" },
	{ "Identity", 1, MAXV, onnx_op_identity, 0, 0, "" },
	{ "If", 1, MAXV, onnx_op_if, 0, 0, "then_branch,else_branch" },
	{ "Loop", 1, MAXV, onnx_op_loop, 0, 0, "body" },
	{ "Scan", 8, MAXV, onnx_op_scan, 0, 0,
	  "body,num_scan_inputs,directions,scan_input_axes,scan_input_directions,scan_output_axes,scan_output_directions" },
	{ "Dropout", 7, MAXV, onnx_op_dropout, 0, 0, "ratio,seed" },
	{ "Cast", 6, MAXV, onnx_op_cast, 0, 0, "to,saturate" },
	{ "CastLike", 15, MAXV, onnx_op_castlike, 0, 0, "saturate" },
	{ "And", 7, MAXV, onnx_op_logical, 0, 0, "" },
	{ "Or", 7, MAXV, onnx_op_logical, 1, 0, "" },
	{ "Xor", 7, MAXV, onnx_op_logical, 2, 0, "" },
	{ "Not", 1, MAXV, onnx_op_logical, 3, 0, "" },
	{ "Softmax", 1, MAXV, onnx_op_softmax, 0, 0, "axis" },
	{ "LogSoftmax", 1, MAXV, onnx_op_softmax, 1, 0, "axis" },
	{ "MatMul", 1, MAXV, onnx_op_matmul, 0, 0, "" },
	{ "MatMulInteger", 10, MAXV, onnx_op_matmul_integer, 0, 0, "" },
	{ "QLinearMatMul", 10, MAXV, onnx_op_qlinear_matmul, 0, 0, "" },
	{ "Gemm", 6, MAXV, onnx_op_gemm, 0, 0, "alpha,beta,broadcast,transA,transB" },
	{ "Conv", 1, MAXV, onnx_op_conv, 0, 0,
	  "auto_pad,dilations,group,kernel_shape,pads,strides" },
	{ "ConvInteger", 10, MAXV, onnx_op_conv_integer, 0, 0,
	  "auto_pad,dilations,group,kernel_shape,pads,strides" },
	{ "QLinearConv", 10, MAXV, onnx_op_qlinear_conv, 0, 0,
	  "auto_pad,dilations,group,kernel_shape,pads,strides" },
	{ "ConvTranspose", 1, MAXV, onnx_op_convtranspose, 0, 0,
	  "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides" },
	{ "MaxPool", 1, MAXV, onnx_op_pool, 1, 0,
	  "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides" },
	{ "AveragePool", 1, MAXV, onnx_op_pool, 0, 0,
	  "auto_pad,ceil_mode,count_include_pad,dilations,kernel_shape,pads,strides" },
	{ "GlobalAveragePool", 1, MAXV, onnx_op_global_pool, VTPU_REDUCE_MEAN_OP, 0, "" },
	{ "GlobalMaxPool", 1, MAXV, onnx_op_global_pool, VTPU_REDUCE_MAX_OP, 0, "" },
	{ "BatchNormalization", 6, MAXV, onnx_op_batchnorm, 0, 0,
	  "epsilon,momentum,spatial,is_test,training_mode" },
	{ "ReduceSum", 1, MAXV, onnx_op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_NONE, POST_NONE, 13), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceMean", 1, MAXV, onnx_op_reduce, VTPU_REDUCE_MEAN_OP,
	  RED(PRE_NONE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceMax", 1, MAXV, onnx_op_reduce, VTPU_REDUCE_MAX_OP,
	  RED(PRE_NONE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceMin", 1, MAXV, onnx_op_reduce, VTPU_REDUCE_MIN_OP,
	  RED(PRE_NONE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceProd", 1, MAXV, onnx_op_reduce, REDUCE_PROD,
	  RED(PRE_NONE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceSumSquare", 1, MAXV, onnx_op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_SQUARE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceL1", 1, MAXV, onnx_op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_ABS, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceL2", 1, MAXV, onnx_op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_SQUARE, POST_SQRT, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceLogSum", 1, MAXV, onnx_op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_NONE, POST_LOG, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceLogSumExp", 1, MAXV, onnx_op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_EXP, POST_LOG, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "Reshape", 1, MAXV, onnx_op_reshape, 0, 0, "shape,allowzero" },
	{ "Flatten", 1, MAXV, onnx_op_flatten, 0, 0, "axis" },
	{ "Transpose", 1, MAXV, onnx_op_transpose, 0, 0, "perm" },
	{ "Concat", 4, MAXV, onnx_op_concat, 0, 0, "axis" },
	{ "Slice", 1, MAXV, onnx_op_slice, 0, 0, "starts,ends,axes" },
	{ "Squeeze", 1, MAXV, onnx_op_squeeze, 0, 0, "axes" },
	{ "Unsqueeze", 1, MAXV, onnx_op_unsqueeze, 0, 0, "axes" },
	{ "Expand", 8, MAXV, onnx_op_expand, 0, 0, "" },
	{ "Pad", 2, MAXV, onnx_op_pad, 0, 0, "mode,pads,value" },
	{ "Gather", 1, MAXV, onnx_op_gather, 0, 0, "axis" },
	{ "Tile", 6, MAXV, onnx_op_tile, 0, 0, "" },
	{ "GatherND", 11, MAXV, onnx_op_gathernd, 0, 0, "batch_dims" },
	{ "ScatterND", 11, MAXV, onnx_op_scatternd, 0, 0, "reduction" },
	{ "RNN", 7, MAXV, onnx_op_rnn, CELL_RNN, 0,
	  "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout" },
	{ "GRU", 7, MAXV, onnx_op_rnn, CELL_GRU, 0,
	  "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout,linear_before_reset" },
	{ "LSTM", 7, MAXV, onnx_op_rnn, CELL_LSTM, 0,
	  "activation_alpha,activation_beta,activations,clip,direction,hidden_size,input_forget,layout" },
	{ "OneHot", 9, MAXV, onnx_op_onehot, 0, 0, "axis" },
	{ "EyeLike", 9, MAXV, onnx_op_eyelike, 0, 0, "dtype,k" },
	{ "Scatter", 9, 10, onnx_op_scatter_elements, 0, 0, "axis" },
	{ "ScatterElements", 11, MAXV, onnx_op_scatter_elements, 0, 0,
	  "axis,reduction" },
	{ "TopK", 1, MAXV, onnx_op_topk, 0, 0, "axis,k,largest,sorted" },
	{ "Einsum", 12, MAXV, onnx_op_einsum, 0, 0, "equation" },
	{ "CumSum", 11, MAXV, onnx_op_cumsum, 0, 0, "exclusive,reverse" },
	{ "Hardmax", 1, MAXV, onnx_op_hardmax, 0, 0, "axis" },
	{ "IsNaN", 9, MAXV, onnx_op_isnan_inf, 0, 0, "" },
	{ "IsInf", 10, MAXV, onnx_op_isnan_inf, 1, 0,
	  "detect_negative,detect_positive" },
	{ "ThresholdedRelu", 10, MAXV, onnx_op_thresholded_relu, 0, 0, "alpha" },
	{ "Softsign", 1, MAXV, onnx_op_softsign, 0, 0, "" },
	{ "Floor", 6, MAXV, onnx_op_floor_ceil_round, 0, 0, "" },
	{ "Ceil", 6, MAXV, onnx_op_floor_ceil_round, 1, 0, "" },
	{ "Round", 11, MAXV, onnx_op_floor_ceil_round, 2, 0, "" },
	{ "Range", 11, MAXV, onnx_op_range, 0, 0, "" },
	{ "Resize", 10, MAXV, onnx_op_resize, 0, 0,
	  "antialias,axes,coordinate_transformation_mode,cubic_coeff_a,"
	  "exclude_outside,extrapolation_value,keep_aspect_ratio_policy,mode,"
	  "nearest_mode" },
	{ "Upsample", 7, 9, onnx_op_upsample, 0, 0, "mode,scales" },
	{ "GatherElements", 11, MAXV, onnx_op_gather_elements, 0, 0, "axis" },
	{ "ReverseSequence", 10, MAXV, onnx_op_reverse_sequence, 0, 0,
	  "batch_axis,time_axis" },
	{ "GridSample", 16, MAXV, onnx_op_grid_sample, 0, 0,
	  "align_corners,mode,padding_mode" },
	{ "NegativeLogLikelihoodLoss", 12, MAXV, onnx_op_nll_loss, 0, 0,
	  "ignore_index,reduction" },
	{ "SoftmaxCrossEntropyLoss", 12, MAXV, onnx_op_sce_loss, 0, 0,
	  "ignore_index,reduction" },
	{ "ArgMax", 1, MAXV, onnx_op_argmax, 1, 0, "axis,keepdims,select_last_index" },
	{ "ArgMin", 1, MAXV, onnx_op_argmax, 0, 0, "axis,keepdims,select_last_index" },
	{ "Trilu", 14, MAXV, onnx_op_trilu, 0, 0, "upper" },
	{ "DepthToSpace", 1, MAXV, onnx_op_depth_space, 1, 0, "blocksize,mode" },
	{ "SpaceToDepth", 1, MAXV, onnx_op_depth_space, 0, 0, "blocksize" },
	{ "SequenceEmpty", 11, MAXV, onnx_op_seq_empty, 0, 0, "dtype" },
	{ "SequenceConstruct", 11, MAXV, onnx_op_seq_construct, 0, 0, "" },
	{ "SequenceInsert", 11, MAXV, onnx_op_seq_edit, 1, 0, "" },
	{ "SequenceErase", 11, MAXV, onnx_op_seq_edit, 0, 0, "" },
	{ "SequenceAt", 11, MAXV, onnx_op_seq_at, 0, 0, "" },
	{ "SequenceLength", 11, MAXV, onnx_op_seq_length, 0, 0, "" },
	{ "ConcatFromSequence", 11, MAXV, onnx_op_concat_from_seq, 0, 0,
	  "axis,new_axis" },
	{ "SplitToSequence", 11, MAXV, onnx_op_split_to_seq, 0, 0, "axis,keepdims" },
	{ "Constant", 1, MAXV, onnx_op_constant, 0, 0,
	  "value,value_float,value_floats,value_int,value_ints" },
	{ "Shape", 1, MAXV, onnx_op_shape, 0, 0, "start,end" },
	{ "Size", 1, MAXV, onnx_op_size, 0, 0, "" },
	{ "ConstantOfShape", 9, MAXV, onnx_op_constant_of_shape, 0, 0, "value" },
	{ "Split", 2, MAXV, onnx_op_split, 0, 0, "axis,split,num_outputs" },
	{ "Selu", 6, MAXV, onnx_op_selu, 0, 0, "alpha,gamma" },
	{ "HardSigmoid", 6, MAXV, onnx_op_hardsigmoid, 0, 0, "alpha,beta" },
	{ "LayerNormalization", 17, MAXV, onnx_op_layernorm, 0, 0,
	  "axis,epsilon,stash_type" },
	{ "InstanceNormalization", 6, MAXV, onnx_op_instnorm, 0, 0, "epsilon" },
	{ "MeanVarianceNormalization", 9, MAXV, onnx_op_mvn, 0, 0, "axes" },
};

static const struct opdef *find_op(const char *name, int64_t opset, bool *known)
{
	*known = false;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(ops[i].name, name))
			continue;
		*known = true;
		if (opset >= ops[i].min && opset <= ops[i].max)
			return &ops[i];
	}
	return NULL;
}

/* ---- the graph --------------------------------------------------------------- */

static bool is_initializer(const Onnx__GraphProto *gp, const char *name)
{
	for (size_t i = 0; i < gp->n_initializer; i++)
		if (gp->initializer[i]->name && !strcmp(gp->initializer[i]->name, name))
			return true;
	return false;
}

static const struct vtpu_onnx_binding *binding(struct ctx *c,
						const char *name)
{
	for (int i = 0; i < c->nbind; i++)
		if (c->bind[i].name && !strcmp(c->bind[i].name, name))
			return &c->bind[i];
	return NULL;
}

/*
 * The shape of a graph input: the model's static dims, with symbolic or
 * unknown ones taken from the caller's binding; or an error naming what
 * is missing.
 */
static int input_shape(struct ctx *c, const Onnx__ValueInfoProto *vi,
		       struct vtpu_shape *s)
{
	const struct vtpu_onnx_binding *b = binding(c, vi->name);
	const Onnx__TypeProto__Tensor *tt;
	bool ok;

	if (b && b->rank > R)
		return onnx_fail(c, "binding of %s has rank %d (at most %d)", vi->name,
				 b->rank, R);
	if (b && b->rank >= 0)
		for (int i = 0; i < b->rank; i++)
			if (b->dims[i] < 1)
				return onnx_fail(c, "input %s: unsupported empty dimension %d (bound)",
						 vi->name, i);

	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !vi->type->tensor_type)
		return onnx_fail(c, "input %s is not a tensor", vi->name);
	tt = vi->type->tensor_type;
	s->type = onnx_type(tt->elem_type, &ok);
	if (!ok)
		return onnx_fail(c, "input %s has unsupported element type %s", vi->name,
				 onnx_type_name(tt->elem_type));
	if (!tt->shape && b && b->rank >= 0) {
		s->rank = b->rank;
		memcpy(s->dims, b->dims, sizeof(s->dims));
		return 0;
	}
	if (!tt->shape)
		return onnx_fail(c, "input %s has no shape", vi->name);
	if (b && b->rank >= 0 && (size_t)b->rank != tt->shape->n_dim)
		return onnx_fail(c, "input %s has rank %zu, bound to rank %d",
				 vi->name, tt->shape->n_dim, b->rank);
	if (tt->shape->n_dim > R)
		return onnx_fail(c, "input %s has rank %zu (at most %d)", vi->name,
				 tt->shape->n_dim, R);
	s->rank = (int)tt->shape->n_dim;
	for (int i = 0; i < s->rank; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
		bool is_static = d->value_case ==
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;

		if (is_static && b && b->rank >= 0 && b->dims[i] != d->dim_value) {
			onnx_fail(c, "input %s dimension %d is %lld, bound to %lld",
				  vi->name, i, (long long)d->dim_value,
				  (long long)b->dims[i]);
			return -EBADR;	/* the caller's mistake: -EINVAL */
		}
		if (!is_static && b && b->rank >= 0) {
			s->dims[i] = b->dims[i];
			continue;
		}
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
			return onnx_fail(c, "input %s has symbolic dimension '%s' (bind it from the actual input)",
					 vi->name, d->dim_param);
		if (!is_static || d->dim_value < 1)
			return onnx_fail(c, "input %s has unknown or empty dimension %d",
					 vi->name, i);
		s->dims[i] = d->dim_value;
	}
	return 0;
}

/* An integer input's bound values, kept for where constants are needed. */
static int bind_values(struct ctx *c, struct val *v, const struct vtpu_shape *s)
{
	const struct vtpu_onnx_binding *b = binding(c, v->name);
	bool is_int = s->type == VTPU_S64 || s->type == VTPU_S32 ||
		      s->type == VTPU_PRED;
	int64_t n = 1;

	if (!b || !(is_int ? b->values != NULL :
		    s->type == VTPU_F32 && b->fvalues != NULL))
		return 0;
	for (int i = 0; i < s->rank; i++)
		n *= s->dims[i];
	if (is_int) {
		v->b = onnx_cval_new(VTPU_S64, s->rank, s->dims, b->values, n);
	} else {
		v->b = onnx_cval_new(VTPU_F32, s->rank, s->dims, NULL, 0);
		if (v->b) {
			float *f = malloc(n * sizeof(*f) + 1);

			for (int64_t i = 0; f && i < n; i++)
				f[i] = (float)b->fvalues[i];
			free(v->b->data);
			v->b->data = f;
			v->b->n = n;
			if (!f) {
				onnx_cval_free(v->b);
				v->b = NULL;
			}
		}
	}
	if (!v->b) {
		onnx_fail(c, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int add_inputs(struct ctx *c, const Onnx__GraphProto *gp)
{
	int np = 0;

	for (size_t i = 0; i < gp->n_initializer; i++) {
		struct cval *cv = onnx_tensor(c, gp->initializer[i]);

		if (!cv)
			return -EINVAL;
		if (!gp->initializer[i]->name) {
			onnx_cval_free(cv);
			return onnx_fail(c, "initializer %zu has no name", i);
		}
		if (onnx_define(c, gp->initializer[i]->name, -1, cv)) {
			onnx_cval_free(cv);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		struct vtpu_shape s = { 0 };
		int id;

		if (!vi->name)
			return onnx_fail(c, "input %zu has no name", i);
		if (is_initializer(gp, vi->name))
			continue;
		if ((id = input_shape(c, vi, &s)))
			return id == -EBADR ? id : -EINVAL;
		{
			enum vtpu_type t = s.type;

			s.type = onnx_dev_type(t);
			id = onnx_chk(c, vtpu_g_parameter(c->g, np++, &s, vi->name));
			/* bool arrives as s32 0/1: pred is x != 0. */
			if (id >= 0 && t == VTPU_PRED)
				id = onnx_chk(c, vtpu_g_compare(c->g, VTPU_NE, id,
								onnx_splat(c, 0, id)));
			s.type = t;
		}
		if (id < 0 || onnx_define(c, vi->name, id, NULL))
			return -EINVAL;
		if ((id = bind_values(c, &c->v[c->nv - 1], &s)))
			return id;
	}
	return 0;
}

static int check_attrs(struct ctx *c, node_t *n, const struct opdef *d)
{
	for (size_t i = 0; i < n->n_attribute; i++) {
		const char *a = n->attribute[i]->name ? n->attribute[i]->name : "";

		if (!onnx_in_list(d->attrs, a))
			return onnx_fail(c, "unsupported attribute %s", a);
	}
	return 0;
}

int onnx_add_node(struct ctx *c, node_t *n)
{
	const char *dom = n->domain ? n->domain : "";
	const struct opdef *d;
	bool known;
	int ret;

	c->op = n->op_type ? n->op_type : "?";
	if (!strcmp(dom, "ai.onnx.preview.training") && !strcmp(c->op, "Gradient"))
		return onnx_op_gradient(c, n) < 0 || c->failed ? -EINVAL : 0;
	if (*dom && strcmp(dom, "ai.onnx"))
		return onnx_fail(c, "unsupported operator %s (domain %s)", c->op, dom);
	for (size_t i = 0; i < n->n_input; i++)
		if (!n->input[i])
			return onnx_fail(c, "malformed input %zu", i);
	for (size_t i = 0; i < n->n_output; i++)
		if (!n->output[i])
			return onnx_fail(c, "malformed output %zu", i);
	if (c->opset < 0)
		return onnx_fail(c, "operator %s: the model imports no ai.onnx opset",
				 c->op);
	d = find_op(c->op, c->opset, &known);
	if (!d)
		return onnx_fail(c, "unsupported operator %s (opset %lld)", c->op,
				 (long long)c->opset);
	if (check_attrs(c, n, d))
		return -EINVAL;
	ret = onnx_fold(c, n, d);
	if (ret)
		return ret < 0 ? -EINVAL : 0;
	if (d->fn(c, n, d) < 0 || c->failed)
		return c->failed ? -EINVAL : onnx_fail(c, "failed");
	return onnx_gelu_peephole(c, n) < 0 ? -EINVAL : 0;
}

static int add_outputs(struct ctx *c, const Onnx__GraphProto *gp)
{
	int *v = calloc(gp->n_output ? gp->n_output : 1, sizeof(*v));
	int ret;

	if (!v)
		return onnx_fail(c, "out of memory");
	for (size_t i = 0; i < gp->n_output; i++) {
		if (!gp->output[i]->name) {
			free(v);
			return onnx_fail(c, "output %zu has no name", i);
		}
		v[i] = onnx_value(c, gp->output[i]->name);
		/* bool leaves as s32 0/1 (dev_type()). */
		if (v[i] >= 0 && onnx_shape_of(c, v[i]).type == VTPU_PRED)
			v[i] = onnx_chk(c, vtpu_g_convert(c->g, v[i], VTPU_S32));
		if (v[i] < 0) {
			free(v);
			return -EINVAL;
		}
	}
	if (!gp->n_output) {
		free(v);
		return onnx_fail(c, "the graph has no outputs");
	}
	ret = onnx_chk(c, vtpu_g_outputs(c->g, (int)gp->n_output, v));
	free(v);
	return ret < 0 ? ret : 0;
}

static int find_opset(struct ctx *c, const Onnx__ModelProto *m)
{
	for (size_t i = 0; i < m->n_opset_import; i++) {
		const char *d = m->opset_import[i]->domain;

		if (!d || !*d || !strcmp(d, "ai.onnx")) {
			c->opset = m->opset_import[i]->version;
			return 0;
		}
	}
	c->opset = -1;	/* only an error if a node needs it */
	return 0;
}

static int build_model(struct ctx *c, const Onnx__ModelProto *m)
{
	const Onnx__GraphProto *gp = m->graph;
	int ret;

	if (!gp)
		return onnx_fail(c, "the model has no graph");
	if (find_opset(c, m))
		return -EINVAL;
	if ((ret = add_inputs(c, gp)))
		return ret;
	for (size_t i = 0; i < gp->n_node; i++) {
		c->node = (int)i;
		if (onnx_add_node(c, gp->node[i]))
			return -EINVAL;
	}
	c->node = -1;
	return add_outputs(c, gp);
}

/* Every binding must name a graph input (not an initializer), once. */
static int check_bindings(struct ctx *c, const Onnx__GraphProto *gp)
{
	for (int i = 0; i < c->nbind; i++) {
		const char *nm = c->bind[i].name;
		bool found = false;

		if (!nm)
			return onnx_fail(c, "binding %d has no name", i);
		for (size_t k = 0; k < gp->n_input && !found; k++)
			found = gp->input[k]->name &&
				!strcmp(gp->input[k]->name, nm) &&
				!is_initializer(gp, nm);
		if (!found)
			return onnx_fail(c, "binding %d: the graph has no input '%s'", i,
					 nm);
		if (binding(c, nm) != &c->bind[i])
			return onnx_fail(c, "input '%s' is bound twice", nm);
		if ((c->bind[i].values || c->bind[i].fvalues) &&
		    c->bind[i].rank < 0)
			return onnx_fail(c, "binding of '%s' has values but no dims",
					 nm);
	}
	return 0;
}

void onnx_values_free(struct ctx *c)
{
	for (int i = 0; i < c->nv; i++) {
		bool dup = false;

		/* Aliases (Identity) share a host copy: free it once. */
		for (int j = 0; j < i && !dup; j++)
			dup = c->v[j].c == c->v[i].c;
		if (!dup)
			onnx_cval_free(c->v[i].c);
		onnx_cval_free(c->v[i].b);
		free(c->v[i].s);
	}
	free(c->v);
	c->v = NULL;
	c->nv = c->cap = 0;
}

/* protobuf-c's: the model's tensors (its weights) in huge pages */
static void *unpack_alloc(void *unused, size_t size)
{
	void *p = malloc(size);

	(void)unused;
	ir_huge_hint(p, size);
	return p;
}

static void unpack_free(void *unused, void *p)
{
	(void)unused;
	free(p);
}

static ProtobufCAllocator unpack_allocator = {
	.alloc = unpack_alloc, .free = unpack_free,
};

int vtpu_onnx_parse(const void *data, size_t len, struct vtpu_graph **out,
		    char *err, size_t errlen)
{
	return vtpu_onnx_parse_bound(data, len, NULL, 0, out, err, errlen);
}

int vtpu_onnx_parse_bound(const void *data, size_t len,
			  const struct vtpu_onnx_binding *bindings, int n,
			  struct vtpu_graph **out, char *err, size_t errlen)
{
	bool used;

	return onnx_parse_bound(data, len, bindings, n, out, &used, err,
				errlen);
}

int onnx_parse_bound(const void *data, size_t len,
		     const struct vtpu_onnx_binding *bindings, int n,
		     struct vtpu_graph **out, bool *values_used, char *err,
		     size_t errlen)
{
	struct ctx c = { .node = -1, .err = err, .errlen = errlen,
			 .bind = bindings, .nbind = n };
	Onnx__ModelProto *m;
	int ret;

	if (err && errlen)
		err[0] = 0;
	*out = NULL;
	m = onnx__model_proto__unpack(&unpack_allocator, len, data);
	if (!m) {
		onnx_fail(&c, "malformed ONNX protobuf (%zu bytes)", len);
		return -EINVAL;
	}
	if (!m->graph || n < 0 || (n && !bindings) ||
	    check_bindings(&c, m->graph)) {
		if (!m->graph)
			onnx_fail(&c, "the model has no graph");
		else if (n < 0 || (n && !bindings))
			onnx_fail(&c, "bad bindings");
		onnx__model_proto__free_unpacked(m, &unpack_allocator);
		return -EINVAL;
	}
	c.g = vtpu_graph_new();
	if (!c.g) {
		onnx__model_proto__free_unpacked(m, &unpack_allocator);
		onnx_fail(&c, "out of memory");
		return -ENOMEM;
	}
	ret = build_model(&c, m);
	onnx_values_free(&c);
	onnx__model_proto__free_unpacked(m, &unpack_allocator);
	if (ret) {
		vtpu_graph_free(c.g);
		/*
		 * The protobuf decoded: what stops us is an operator, an
		 * attribute, a type or a shape we do not handle.
		 */
		if (ret == -ENOMEM || ret == -EBADR)
			return ret == -EBADR ? -EINVAL : ret;
		return -EOPNOTSUPP;
	}
	*values_used = c.bound_used;
	*out = c.g;
	return 0;
}
