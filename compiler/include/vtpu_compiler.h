/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu_compiler.h - build tensor graphs and compile them into vtpu
 * programs (uapi/drm/vtpu_isa.h).
 *
 * A graph is built op by op with the vtpu_g_* builder functions (or
 * parsed from XLA HLO text with vtpu_hlo_parse()). Every builder function
 * returns the new value's id (>= 0) or a negative -errno; an error is
 * sticky: the graph remembers the first one, with a message
 * (vtpu_graph_error()), and every later call returns it, so a sequence of
 * builder calls needs one check at the end. Shapes are static; element
 * types are f32, bf16, s32, s64 and pred (booleans).
 *
 * vtpu_compile() turns a graph into a struct vtpu_program: the binary
 * the device runs, its weights (the large constants, which are data the
 * program reads through a binding, not part of the code), how its
 * bindings map to parameters, outputs, scratch and weights, and the cost
 * model's figures.
 *
 * Ownership: a graph owns everything built into it; a program owns its
 * binary and tables, and holds a reference on its weights, which copies
 * of the program (the compile cache's among them) share read-only.
 * Thread safety: a graph or program may be used by one thread at a time;
 * different objects are independent.
 */
#ifndef VTPU_COMPILER_H
#define VTPU_COMPILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VTPU_MAX_RANK	6

enum vtpu_type {
	VTPU_F32,
	VTPU_BF16,
	VTPU_S32,
	VTPU_S64,
	VTPU_PRED,
};

struct vtpu_shape {
	enum vtpu_type type;
	int rank;			/* 0 (scalar) .. VTPU_MAX_RANK */
	int64_t dims[VTPU_MAX_RANK];	/* each >= 1 */
};

/* Bytes of one element: bf16 2, s64 8, pred 1, the others 4. */
size_t vtpu_type_size(enum vtpu_type t);
/* "f32", "bf16", "s32", "s64", "pred"; "?" for others. */
const char *vtpu_type_name(enum vtpu_type t);
/* Elements of @s: the product of its dims (1 for a scalar). */
size_t vtpu_shape_elems(const struct vtpu_shape *s);
/*
 * f32 to bf16 rounding to nearest even, as the device does; a NaN stays
 * a quiet NaN (rounding its bits could carry it into infinity).
 */
uint16_t vtpu_f32_to_bf16(float f);
float vtpu_bf16_to_f32(uint16_t b);

struct vtpu_graph;

/* A new, empty graph; NULL when out of memory. */
struct vtpu_graph *vtpu_graph_new(void);
void vtpu_graph_free(struct vtpu_graph *g);

/* The first error's message, or NULL. Owned by the graph. */
const char *vtpu_graph_error(const struct vtpu_graph *g);

/* The shape of value @v; -EINVAL for a bad id. */
int vtpu_graph_shape(const struct vtpu_graph *g, int v, struct vtpu_shape *out);

/* ---- builder ---------------------------------------------------------- */

/* Parameter @index (0, 1, ... in order, each once); @name may be NULL. */
int vtpu_g_parameter(struct vtpu_graph *g, int index,
		     const struct vtpu_shape *shape, const char *name);
/* A constant; @data holds the elements row-major in @shape's type (pred:
 * one byte each). The graph keeps a copy. */
int vtpu_g_constant(struct vtpu_graph *g, const struct vtpu_shape *shape,
		    const void *data);
/* A scalar f32 constant, for convenience. */
int vtpu_g_scalar(struct vtpu_graph *g, float value);

enum vtpu_unary_op {
	VTPU_NEG, VTPU_ABS, VTPU_EXP, VTPU_LOG, VTPU_SQRT, VTPU_RSQRT,
	VTPU_TANH, VTPU_LOGISTIC, VTPU_RELU, VTPU_GELU,
};
int vtpu_g_unary(struct vtpu_graph *g, enum vtpu_unary_op op, int a);

/* Elementwise on equal shapes and types (broadcast explicitly first). */
enum vtpu_binary_op {
	VTPU_ADD, VTPU_SUB, VTPU_MUL, VTPU_DIV, VTPU_MAX, VTPU_MIN, VTPU_POW,
};
int vtpu_g_binary(struct vtpu_graph *g, enum vtpu_binary_op op, int a, int b);

enum vtpu_cmp_dir { VTPU_EQ, VTPU_NE, VTPU_LT, VTPU_LE, VTPU_GT, VTPU_GE };
/* pred result of the same dims. */
int vtpu_g_compare(struct vtpu_graph *g, enum vtpu_cmp_dir dir, int a, int b);
/* @pred ? @a : @b, elementwise; @pred of type pred. */
int vtpu_g_select(struct vtpu_graph *g, int pred, int a, int b);

/*
 * XLA broadcast_in_dim: the result has @shape's dims (@a's type);
 * operand dimension i becomes result dimension @dims[i] (increasing), of
 * the same size or size 1.
 */
int vtpu_g_broadcast(struct vtpu_graph *g, int a, int rank,
		     const int64_t *out_dims, const int *dims);
int vtpu_g_reshape(struct vtpu_graph *g, int a, int rank, const int64_t *dims);
/* Result dimension i is operand dimension @perm[i]. */
int vtpu_g_transpose(struct vtpu_graph *g, int a, const int *perm);

/* XLA DotGeneral dimension numbers. */
struct vtpu_dot_dims {
	int nbatch, ncontract;
	int lhs_batch[VTPU_MAX_RANK], rhs_batch[VTPU_MAX_RANK];
	int lhs_contract[VTPU_MAX_RANK], rhs_contract[VTPU_MAX_RANK];
};
/* Result dims: batch, lhs free, rhs free (XLA order). */
int vtpu_g_dot(struct vtpu_graph *g, int lhs, int rhs,
	       const struct vtpu_dot_dims *dims);
/* Plain 2-D [M,K] x [K,N] (and batched [B,M,K] x [B,K,N]) matmul. */
int vtpu_g_matmul(struct vtpu_graph *g, int lhs, int rhs);

/* 2-D convolution, input NCHW, kernel OIHW (I = C / groups). */
struct vtpu_conv_params {
	int stride[2];		/* >= 1 */
	int pad_lo[2], pad_hi[2];	/* >= 0 */
	int dilation[2];	/* >= 1 */
	int groups;		/* >= 1, divides C and O */
};
int vtpu_g_conv2d(struct vtpu_graph *g, int input, int kernel,
		  const struct vtpu_conv_params *p);

enum vtpu_reduce_op { VTPU_REDUCE_SUM_OP, VTPU_REDUCE_MAX_OP,
		      VTPU_REDUCE_MIN_OP, VTPU_REDUCE_MEAN_OP };
/* Reduces over @naxes axes (distinct); they disappear from the shape. */
int vtpu_g_reduce(struct vtpu_graph *g, enum vtpu_reduce_op op, int a,
		  int naxes, const int *axes);
int vtpu_g_softmax(struct vtpu_graph *g, int a, int axis);
int vtpu_g_log_softmax(struct vtpu_graph *g, int a, int axis);
int vtpu_g_concat(struct vtpu_graph *g, int n, const int *vals, int axis);
/* XLA slice: [start, limit) with step @strides (>= 1) per dimension. */
int vtpu_g_slice(struct vtpu_graph *g, int a, const int64_t *start,
		 const int64_t *limit, const int64_t *strides);
/* Edge padding (no interior) with the scalar value @pad_value. */
int vtpu_g_pad(struct vtpu_graph *g, int a, const int64_t *lo,
	       const int64_t *hi, double pad_value);
/*
 * ONNX Gather: the slices of @data along @axis that the s32 @indices
 * name, at run time; the result's dims are @data's before @axis, the
 * indices', then @data's after it. With @wrap a negative index counts
 * from the end (ONNX); an index outside the axis fails the execution
 * with -ERANGE ("an index is outside the table it indexes").
 */
int vtpu_g_gather(struct vtpu_graph *g, int data, int indices, int axis,
		  bool wrap);
int vtpu_g_convert(struct vtpu_graph *g, int a, enum vtpu_type type);

/*
 * Reverse-mode derivatives: @out[i] = d sum(@y) / d @xs[i], new values of
 * @g of @xs[i]'s shape (zeros where @y does not depend on it); each x is
 * computed before @y. -EOPNOTSUPP names an op on the way without a
 * derivative (convolutions, say).
 */
int vtpu_g_gradient(struct vtpu_graph *g, int y, int n, const int *xs,
		    int *out);

/* The graph's results, in order (a tuple when n > 1). */
int vtpu_g_outputs(struct vtpu_graph *g, int n, const int *vals);

/* ---- frontends -------------------------------------------------------- */

/*
 * Parses XLA HLO text (the subset the builder covers) into a new graph.
 * On error returns -EINVAL and, when @err is not NULL, a message
 * "LINE:COL: expected ..." in @err (@errlen bytes).
 */
int vtpu_hlo_parse(const char *text, size_t len, struct vtpu_graph **out,
		   char *err, size_t errlen);

/*
 * Parses a serialized ONNX ModelProto (@len bytes) into a new graph:
 * graph inputs that are not initializers become parameters in order,
 * initializers constants, outputs in order. Shapes must be static;
 * shape, axes and index operands must be initializers or Constant
 * nodes. Returns -EINVAL for bytes that are not an ONNX model,
 * -EOPNOTSUPP for a model that uses an operator, attribute, type or shape
 * the frontend does not handle, -ENOMEM; when @err is not NULL, a message
 * such as "node 3 (TopK): unsupported operator TopK (opset 11)" in
 * @err (@errlen bytes).
 *
 * Types: the device computes in f32, bf16 and s32. As JAX does without
 * x64, ONNX DOUBLE values are f32 and INT64 values s32 (an int64
 * constant outside the s32 range is -EOPNOTSUPP); BOOL parameters and
 * outputs are s32 0/1. The graph's parameter and output shapes give
 * these device types: the caller converts its data (range-checking
 * int64) when it fills the parameters and reads the outputs.
 */
int vtpu_onnx_parse(const void *data, size_t len, struct vtpu_graph **out,
		    char *err, size_t errlen);

/*
 * What the caller knows of one graph input before compiling, for
 * vtpu_onnx_parse_bound(): its actual dims, which bind the model's
 * symbolic (dim_param) and unknown dimensions, and optionally its
 * contents. Contents are used only where the model needs a compile-time
 * constant (the shape of Expand, Reshape, Tile, ..., pads, axes,
 * Resize's scales and roi): the input stays a parameter, the graph is
 * specialized on those values, and the caller must compile again for
 * other values (the compile cache keys on the graph, so that is cheap).
 */
struct vtpu_onnx_binding {
	const char *name;		/* the graph input's name */
	int rank;			/* -1: dims unknown */
	int64_t dims[VTPU_MAX_RANK];
	const int64_t *values;		/* NULL, or prod(dims) values of an
					 * integer input */
	const double *fvalues;		/* NULL, or prod(dims) values of a
					 * floating-point input */
};

/*
 * vtpu_onnx_parse() with @n @bindings (names not among the graph inputs
 * are -EINVAL). A bound dim that contradicts a static one in the model
 * is -EINVAL; a symbolic dim left unbound stays -EOPNOTSUPP.
 */
int vtpu_onnx_parse_bound(const void *data, size_t len,
			  const struct vtpu_onnx_binding *bindings, int n,
			  struct vtpu_graph **out, char *err, size_t errlen);

/* ---- compilation ------------------------------------------------------ */

/* What the compiler must know of the device (from DRM_IOCTL_VTPU_QUERY). */
struct vtpu_device_params {
	uint64_t vmem_size;	/* bytes per core */
	uint32_t num_cores;
	uint64_t hbm_size;
	/* For the cost model; 0 picks the documented defaults. */
	double flops_per_ns;	/* MXU+VPU throughput of one core */
	double bytes_per_ns;	/* DMA bandwidth of one core */
};

struct vtpu_cache;

struct vtpu_compile_options {
	/* Look the program up here first, and store it after compiling;
	 * NULL: no cache. */
	struct vtpu_cache *cache;
	/* Print the IR after this pass ("all" for every pass), as the
	 * environment variable VTPU_DUMP does; NULL: as VTPU_DUMP says. */
	const char *dump;
	void *dump_file;	/* FILE *; NULL: stderr */
	int no_fusion;		/* disable fusion (for tests) */
};

enum vtpu_binding_role {
	VTPU_BIND_PARAM,	/* parameter @index, read */
	VTPU_BIND_OUTPUT,	/* output @index, written */
	VTPU_BIND_SCRATCH,	/* intermediates, read and written */
	/*
	 * The program's weights, read only: bind a buffer holding
	 * struct vtpu_program.weights. Made once per device and kept
	 * resident, it is never part of an execution's own memory.
	 */
	VTPU_BIND_WEIGHTS,
};

struct vtpu_binding_info {
	enum vtpu_binding_role role;
	int index;		/* parameter or output number; else 0 */
	uint64_t size;		/* bytes */
	struct vtpu_shape shape;	/* parameters and outputs */
};

/* Compile-time inspection: the cost model and the memory plan. */
struct vtpu_cost {
	double flops;
	double bytes_moved;		/* DMA bytes */
	double est_time_ns;		/* on one core */
	uint64_t code_bytes;
	uint64_t const_bytes;		/* small constants, in the program */
	uint64_t weights_bytes;		/* large ones, in the weights binding */
	uint64_t param_bytes, output_bytes;
	uint64_t scratch_bytes;		/* planned HBM scratch peak */
	uint64_t scratch_lower_bound;	/* liveness lower bound */
	uint64_t vmem_bytes;		/* VMEM the program uses */
	uint32_t insn_count;
	uint32_t kernel_count;		/* after fusion */
};

struct vtpu_program {
	void *binary;			/* the program, header first */
	size_t size;
	/*
	 * The contents of the VTPU_BIND_WEIGHTS binding, in the device's
	 * formats at the offsets the code reads (NULL and 0 when the
	 * program has none). Shared and read only: never write them.
	 */
	const void *weights;
	uint64_t weights_size;
	int nbindings;
	struct vtpu_binding_info *bindings;	/* in binding order */
	int nparams, noutputs;
	struct vtpu_cost cost;
};

/*
 * Compiles @g for a device. On error returns -errno and, when @err is
 * not NULL, a message.
 */
int vtpu_compile(const struct vtpu_graph *g,
		 const struct vtpu_device_params *dev,
		 const struct vtpu_compile_options *opts,
		 struct vtpu_program **out, char *err, size_t errlen);

/*
 * vtpu_onnx_parse_bound() and vtpu_compile() in one, through the compile
 * cache's sources when @opts has a cache: the same bytes and bindings
 * compiled before (by any process sharing the cache's directory) give
 * their program without being parsed again, which for a model of
 * hundreds of MB of weights is most of a compile.
 */
int vtpu_compile_onnx(const void *data, size_t len,
		      const struct vtpu_onnx_binding *bindings, int n,
		      const struct vtpu_device_params *dev,
		      const struct vtpu_compile_options *opts,
		      struct vtpu_program **out, char *err, size_t errlen);
void vtpu_program_free(struct vtpu_program *p);

/* ---- the compile cache ------------------------------------------------ */

/*
 * Programs by a 128-bit content hash (xxh3) of the canonical graph
 * (constants included), the device parameters, the options that change
 * code and the compiler version. A small LRU in memory in front of a
 * directory of files, one a program, written atomically. An entry that
 * is short, corrupt or for another key is a miss and is removed: it is
 * never returned. Thread safety: any thread may call any function but
 * vtpu_cache_free().
 */

struct vtpu_cache_stats {
	uint64_t hits;		/* gets that returned a program */
	uint64_t misses;	/* gets that did not */
	uint64_t evictions;	/* memory entries pushed out by the LRU */
	uint64_t disk_hits;	/* hits read from disk (counted in hits too) */
	uint64_t corrupt;	/* disk entries rejected and removed */
};

/*
 * A cache of @mem_entries programs in memory (0: none) backed by @dir:
 * NULL picks $XDG_CACHE_HOME/vtpu, else ~/.cache/vtpu; "" disables the
 * disk. The directory is created (0700) on the first put. NULL when out
 * of memory.
 */
struct vtpu_cache *vtpu_cache_new(size_t mem_entries, const char *dir);
void vtpu_cache_free(struct vtpu_cache *c);

/* 0 and a copy of the program in *@out, or -ENOENT on a miss. */
int vtpu_cache_get(struct vtpu_cache *c, const uint64_t key[2],
		   struct vtpu_program **out);
/*
 * Stores a copy of @p in memory and on disk (written atomically); 0, or
 * -errno when the disk write failed (the memory entry stays).
 */
int vtpu_cache_put(struct vtpu_cache *c, const uint64_t key[2],
		   const struct vtpu_program *p);
void vtpu_cache_stats(const struct vtpu_cache *c, struct vtpu_cache_stats *st);
/*
 * Sources: the key of a compile's input as it came (an ONNX model's
 * bytes and bindings, vtpu_compile_onnx()) names the key of the graph it
 * parsed to, so compiling the same bytes again finds the program without
 * parsing them. Kept beside the programs, in memory and on disk. get: 0
 * and the graph's key in @key, or -ENOENT. put: 0, or -errno when the
 * disk write failed.
 */
int vtpu_cache_get_source(struct vtpu_cache *c, const uint64_t src[2],
			  uint64_t key[2]);
int vtpu_cache_put_source(struct vtpu_cache *c, const uint64_t src[2],
			  const uint64_t key[2]);


/* Disassembles a program, one instruction a line. */
int vtpu_disasm(const void *binary, size_t size, void *file /* FILE * */);

#ifdef __cplusplus
}
#endif

#endif /* VTPU_COMPILER_H */
