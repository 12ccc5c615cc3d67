/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * ir.h - the compiler's internal header, one section per file (chibicc
 * style). The graph IR: nodes in topological order, each a value with a
 * static shape; node ids are indices into g->nodes and inputs always
 * have smaller ids. Passes rewrite the graph in place: they append new
 * nodes, redirect uses with ir_replace_uses() and leave dead nodes to
 * DCE, then ir_compact() renumbers. The pipeline is compile.c.
 *
 * Two levels of ops share the table below:
 *   high level  what the builder and the frontends produce
 *   primitive   what lower.c turns everything into and codegen.c emits:
 *               elementwise ops, P_MATMUL, P_REDUCE_LAST, P_COPY, CONCAT,
 *               PAD, GATHER, P_DWCONV, RESHAPE (an alias), PARAM, CONST
 */
#ifndef VTPU_IR_H
#define VTPU_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vtpu_compiler.h"

/*
 * The op table (QBE ops.h style).
 *   name      OP_<name>
 *   nin       inputs; -1: variable (CONCAT)
 *   kind      K_EW1 / K_EW2 / K_EW3: elementwise with 1, 2 or 3 inputs
 *             (fusable); K_OTHER
 *   prim      1 if codegen.c emits it directly (after lower.c)
 */
#define K_OTHER	0
#define K_EW1	1
#define K_EW2	2
#define K_EW3	3

#define IR_OPS(X) \
	/* name           nin  kind     prim */ \
	X(PARAM,          0,   K_OTHER, 1) \
	X(CONST,          0,   K_OTHER, 1) \
	X(NEG,            1,   K_EW1,   1) \
	X(ABS,            1,   K_EW1,   1) \
	X(EXP,            1,   K_EW1,   1) \
	X(LOG,            1,   K_EW1,   1) \
	X(SQRT,           1,   K_EW1,   1) \
	X(RSQRT,          1,   K_EW1,   1) \
	X(TANH,           1,   K_EW1,   1) \
	X(LOGISTIC,       1,   K_EW1,   1) \
	X(RELU,           1,   K_EW1,   1) \
	X(GELU,           1,   K_EW1,   1) \
	X(CONVERT,        1,   K_EW1,   1) \
	X(ADD,            2,   K_EW2,   1) \
	X(SUB,            2,   K_EW2,   1) \
	X(MUL,            2,   K_EW2,   1) \
	X(DIV,            2,   K_EW2,   1) \
	X(MAX,            2,   K_EW2,   1) \
	X(MIN,            2,   K_EW2,   1) \
	X(POW,            2,   K_EW2,   1) \
	X(COMPARE,        2,   K_EW2,   1) \
	X(SELECT,         3,   K_EW3,   1) \
	X(BROADCAST,      1,   K_OTHER, 0) \
	X(RESHAPE,        1,   K_OTHER, 1) \
	X(TRANSPOSE,      1,   K_OTHER, 0) \
	X(DOT,            2,   K_OTHER, 0) \
	X(CONV,           2,   K_OTHER, 0) \
	X(REDUCE,         1,   K_OTHER, 0) \
	X(SOFTMAX,        1,   K_OTHER, 0) \
	X(LOG_SOFTMAX,    1,   K_OTHER, 0) \
	X(CONCAT,         -1,  K_OTHER, 1) \
	X(SLICE,          1,   K_OTHER, 0) \
	X(PAD,            1,   K_OTHER, 1) \
	X(P_MATMUL,       2,   K_OTHER, 1) \
	X(P_REDUCE_LAST,  1,   K_OTHER, 1) \
	X(P_COPY,         1,   K_OTHER, 1) \
	X(GATHER,         2,   K_OTHER, 1) \
	X(P_DWCONV,       2,   K_OTHER, 1) \
	X(WHILE,          -1,  K_OTHER, 1) \
	X(WHILE_OUT,      1,   K_OTHER, 1) \
	X(DEAD,           0,   K_OTHER, 0)

enum ir_op {
#define IR_OP_ENUM(name, nin, kind, prim) OP_##name,
	IR_OPS(IR_OP_ENUM)
#undef IR_OP_ENUM
	OP_NR
};

struct ir_op_info {
	const char *name;
	int nin;
	int kind;
	int prim;
};

extern const struct ir_op_info ir_ops[OP_NR];

/*
 * A strided view of a row-major buffer, for P_COPY: element (i0..in-1)
 * of the result is element offset + sum(i_k * stride[k]) of the input's
 * buffer (strides in elements, >= 0; 0 repeats: a broadcast).
 */
struct ir_view {
	int64_t offset;
	int64_t stride[VTPU_MAX_RANK];
};

struct ir_node {
	enum ir_op op;
	struct vtpu_shape shape;
	int nin;
	int *in;		/* nin input ids */
	const char *name;	/* optional, for dumps (PARAM: its name) */

	union {
		struct { int index; } param;
		struct { void *data; } cst;	/* row-major, shape's type */
		struct { enum vtpu_cmp_dir dir; } cmp;
		struct { int dims[VTPU_MAX_RANK]; } bcast;
		struct { int perm[VTPU_MAX_RANK]; } transpose;
		struct vtpu_dot_dims dot;
		/* CONV; P_DWCONV: a CONV with one kernel per channel
		 * (groups = channels), result f32 */
		struct vtpu_conv_params conv;
		struct { enum vtpu_reduce_op op; uint32_t axes; } reduce;
		struct { int axis; } softmax;	/* and LOG_SOFTMAX */
		struct { int axis; } concat;
		struct {
			int64_t start[VTPU_MAX_RANK], limit[VTPU_MAX_RANK];
			int64_t stride[VTPU_MAX_RANK];
		} slice;
		struct {
			int64_t lo[VTPU_MAX_RANK], hi[VTPU_MAX_RANK];
			double value;
		} pad;
		/* P_MATMUL: in[0] [B,M,K] (or [B,K,M] if trans_a), in[1]
		 * [B,K,N] (or [B,N,K] if trans_b), rank 3, result [B,M,N] */
		struct { bool trans_a, trans_b; } mm;
		/* P_REDUCE_LAST: rank-2 [R,C] -> [R] (rank 1) */
		struct { enum vtpu_reduce_op op; } rl;
		struct ir_view view;	/* P_COPY */
		/*
		 * GATHER: in[0] [A,V,B] (any type), in[1] s32 [K] -> [A,K,B]:
		 * row k of each A block is row in[1][k] of its V rows (wrap:
		 * negative indices count from V); an index outside [0, V)
		 * fails the execution with -ERANGE
		 */
		struct { bool wrap; } gather;
		/*
		 * WHILE: a loop on the device. in[] is the initial state,
		 * one value per leaf; while @cond (params: the state;
		 * output: one s32 scalar, nonzero to go on) says so, the
		 * state becomes @body's outputs (params: the state). The
		 * node's own value is a token (s32[], never materialised);
		 * WHILE_OUT @index (in[0]: the WHILE) is leaf @index of the
		 * final state. The graphs belong to the graph holding the
		 * node (ir_graph.subs); @hash is theirs (cache.c), for CSE
		 * and the compile cache.
		 */
		struct {
			struct ir_graph *cond, *body;
			uint64_t hash[2];
		} loop;
		struct { int index; } wout;
	} a;

	/* Set by passes. */
	int kernel;		/* fusion: id of the kernel it belongs to */
	/*
	 * fusion: a P_COPY that is never materialised: every reader loads
	 * its source through the view (fused.c). A broadcast read by
	 * elementwise nodes, or an im2col view read as a matmul's B.
	 */
	bool virt;
	int64_t kw;		/* fusion, on a kernel's root: the row width
				 * its virtual operands need, 0: any */
	int64_t offset;		/* plan: byte offset in its arena */
	int arena;		/* plan: enum ir_arena */
	int uses;		/* users, counted by ir_count_uses() */
};

enum ir_arena {
	A_NONE,		/* not materialised (fused away) or an alias */
	A_PARAM,	/* a parameter binding */
	A_OUTPUT,	/* an output binding */
	A_CONST,	/* the constants section */
	A_SCRATCH,	/* the HBM scratch binding */
	A_WEIGHTS,	/* the weights binding (large constants) */
};

struct ir_graph {
	struct ir_node *nodes;
	int n, cap;
	int *outputs;
	int nout;
	int nparams;
	char err[256];
	int errcode;
	/* every allocation the graph owns, freed with it */
	void **allocs;
	int nallocs, allocs_cap;
	/* the graphs of its WHILE nodes, freed with it */
	struct ir_graph **subs;
	int nsubs;
};

/* The public type is the internal one. */
struct vtpu_graph {
	struct ir_graph ir;
};

/* ---- ir.c: graphs, shapes, the verifier, dumps ------------------------- */

int64_t shape_elems(const struct vtpu_shape *s);
int type_size(enum vtpu_type t);	/* bytes in memory; pred: 1 */
const char *type_name(enum vtpu_type t);
bool shape_eq(const struct vtpu_shape *a, const struct vtpu_shape *b);
bool dims_eq(const struct vtpu_shape *a, const struct vtpu_shape *b);

void *ir_alloc(struct ir_graph *g, size_t size);	/* zeroed, owned */
/*
 * Asks for huge pages for the 2 MiB-aligned part of a large block not
 * yet written: filling hundreds of MB of weights otherwise takes a page
 * fault every 4 KiB, which in a VM costs more than the copy.
 */
#define IR_HUGE	((size_t)2 << 20)
void ir_huge_hint(void *p, size_t size);
/* Sets the sticky error (first one wins); returns -code. */
int ir_error(struct ir_graph *g, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Appends a node; copies @in. Returns its id or -errno. */
int ir_add(struct ir_graph *g, enum ir_op op, const struct vtpu_shape *shape,
	   int nin, const int *in);
void ir_replace_uses(struct ir_graph *g, int from, int to);
void ir_count_uses(struct ir_graph *g);
/* Drops DEAD nodes and renumbers; keeps topological order. */
int ir_compact(struct ir_graph *g);
/* The shape node @n must have, from its operands and attributes. */
int ir_infer(struct ir_graph *g, const struct ir_node *n,
	     struct vtpu_shape *s);
/* Shape and type rules of every op; 0 or -EINVAL with g->err set. */
int ir_verify(struct ir_graph *g);
void ir_dump(const struct ir_graph *g, FILE *f, const char *title);
/*
 * A copy for the passes, which keep the original as it was. Constants
 * are shared, not copied (a model's weights, hundreds of MB): the passes
 * never write a constant's data, they make new ones; so @g must outlive
 * its clone.
 */
struct ir_graph *ir_clone(const struct ir_graph *g);
void ir_free(struct ir_graph *g);
/*
 * A loop (see WHILE above): takes ownership of @cond and @body (freed on
 * error too) and writes the final state's @n leaves to @outs. Returns 0
 * or -errno (the graph's sticky error set).
 */
int ir_while(struct ir_graph *g, int n, const int *init,
	     struct vtpu_graph *cond, struct vtpu_graph *body, int *outs);
/* Whether @g holds a loop (its program then has one lane). */
bool ir_has_loops(const struct ir_graph *g);

/*
 * Each op's attributes, described once (ir.c) for CSE and the compile
 * cache alike: what makes two nodes of the same op, shape and operands
 * different values, as canonical words (every field, only the entries
 * the rank uses, a double as its bits). A constant has none; its data,
 * ir_const_bytes() of it, is compared and hashed instead.
 */
#define IR_MAX_ATTR_WORDS	(2 + 4 * VTPU_MAX_RANK)
int ir_attr_words(const struct ir_graph *g, const struct ir_node *n,
		  int64_t w[IR_MAX_ATTR_WORDS]);
size_t ir_const_bytes(const struct ir_node *n);
/* Equal attributes (constants: equal data); same op, shape, operands assumed. */
bool ir_attrs_eq(const struct ir_graph *g, const struct ir_node *a,
		 const struct ir_node *b);

/* ---- compose.c: functions the device lacks, from the ones it has -------- */

/*
 * Each takes builder values (f32 unless said) and returns a new value or
 * the -errno of the first builder call that failed; a negative argument
 * is passed on, so a chain needs one check at its end.
 */
enum compose_rounding { ROUND_FLOOR, ROUND_CEIL, ROUND_EVEN, ROUND_AWAY };
/* The scalar @x in @like's type, broadcast to its shape. */
int compose_splat(struct vtpu_graph *g, double x, int like);
int compose_trunc(struct vtpu_graph *g, int x);	/* |x| < 2^31 */
int compose_sign(struct vtpu_graph *g, int x);	/* f32 or s32 */
int compose_round(struct vtpu_graph *g, int x, enum compose_rounding mode);
int compose_erf(struct vtpu_graph *g, int x);
int compose_sin_cos(struct vtpu_graph *g, int x, int want_cos);
/* f32 or s32; @floor_mod: the divisor's sign, else the dividend's. */
int compose_mod(struct vtpu_graph *g, int a, int b, bool floor_mod);
/* s32 quotient truncated toward zero, exact below 2^24; x / 0 is -1. */
int compose_div_int(struct vtpu_graph *g, int a, int b);
int compose_round_f16(struct vtpu_graph *g, int x);

/* ---- eval.c: the reference evaluator ------------------------------------ */

/*
 * Evaluates any graph (high level or primitive) in double precision, an
 * oracle independent of lower.c and codegen.c. @params[i] points to
 * parameter i in its type's memory format; @outs[i] receives output i in
 * its type's format (malloc'd; free each). Returns 0 or -errno.
 */
int ir_eval(const struct ir_graph *g, const void *const *params,
	    void **outs);

/* ---- passes: simplify.c, fold.c, cse.c, dce.c, fuse.c ------------------- */

int pass_simplify(struct ir_graph *g);	/* algebraic identities */
/* Every element of @v is @want (a constant, or a broadcast of one). */
bool ir_all_equal(const struct ir_graph *g, int v, double want);
int pass_fold(struct ir_graph *g);	/* constant folding (uses eval.c) */
int pass_cse(struct ir_graph *g);
int pass_dce(struct ir_graph *g);
int pass_lower(struct ir_graph *g);	/* lower.c: to primitive ops */
/*
 * The largest padded band of one output row (width x window rows, in
 * elements) lower.c gives P_DWCONV; dwconv.c holds a few of them in
 * VMEM for a single channel.
 */
#define DWCONV_MAX_BAND	4096
int pass_fuse(struct ir_graph *g, bool enable);	/* sets node.kernel */

/*
 * How the elements of broadcast P_COPY @v, taken as rows of @w
 * (row-major), come from its source: one element for all (BC_SCALAR),
 * one per row, *@rstride elements apart (BC_COL), or the same @w
 * consecutive elements for every row (BC_ROW). BC_NONE: none of these.
 */
enum ir_bcast { BC_NONE, BC_SCALAR, BC_ROW, BC_COL };
/*
 * Whether dims [@lo, @hi) of P_COPY @n that have size > 1 address their
 * elements linearly, innermost first: *@step apart (0 when all have
 * size 1).
 */
bool ir_view_linear(const struct ir_node *n, int lo, int hi, int64_t *step);
enum ir_bcast ir_bcast_class(const struct ir_graph *g, int v, int64_t w,
			     int64_t *rstride);
/*
 * How P_COPY @v, read as the B operand [.., K, @ncols] of a matmul (its
 * elements in row-major order are B's), loads by rows: B's rows index
 * the copy's dims [0, split), its columns the rest, whose innermost
 * dimension of size > 1 is contiguous in the source: runs of @w
 * elements, @h of them @hstride elements apart (h 1: no such outer
 * dimension). False when the columns are no such runs (a strided
 * convolution's window) or the source is not a float the DMA can load.
 */
struct ir_mm_view {
	int split;
	int64_t w, h, hstride;
	int64_t wstep;		/* source elements between a run's columns */
};
bool ir_mm_view(const struct ir_graph *g, int v, int64_t ncols,
		struct ir_mm_view *mv);

/* ---- tile.c, plan.c, codegen.c, emit.c, cost.c -------------------------- */

struct cg_tiles;	/* per kernel tile choices, tile.c */

struct plan_stats {
	uint64_t scratch_peak;
	uint64_t scratch_lower_bound;
	uint64_t vmem_peak;
};

int pass_plan(struct ir_graph *g, struct plan_stats *st);
int codegen(struct ir_graph *g, const struct vtpu_device_params *dev,
	    struct vtpu_program *prog, char *err, size_t errlen);
/*
 * A program's weights (struct vtpu_program.weights): one allocation,
 * reference counted so that copies of a program share it. weights_alloc()
 * returns @size zeroed bytes with one reference (NULL when out of
 * memory); weights_get() takes another; weights_put() drops one (NULL
 * is fine) and frees the bytes with the last.
 */
void *weights_alloc(uint64_t size);
const void *weights_get(const void *w);
void weights_put(const void *w);
void cost_model(const struct ir_graph *g, const struct vtpu_device_params *dev,
		struct vtpu_program *prog);

/* ---- cache.c: the compile cache ------------------------------------------ */

/*
 * vtpu_onnx_parse_bound(), and whether a bound input's values served
 * where the model needed a constant (@values_used): when not, the
 * graph is the same whatever values were bound.
 */
int onnx_parse_bound(const void *data, size_t len,
		     const struct vtpu_onnx_binding *bindings, int n,
		     struct vtpu_graph **out, bool *values_used, char *err,
		     size_t errlen);

/* 128-bit content hash of the canonical graph, options, device, version. */
void graph_hash(const struct ir_graph *g, const struct vtpu_device_params *dev,
		const struct vtpu_compile_options *opts, uint64_t out[2]);

#endif /* VTPU_IR_H */
