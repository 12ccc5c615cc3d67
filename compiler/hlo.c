// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * hlo.c - the XLA HLO text frontend: vtpu_hlo_parse().
 *
 * Three steps, chibicc style: tokenize() the whole text, parse_module()
 * into computations of instructions (names resolved as they are defined,
 * so every syntax and scope error is reported in text order), then
 * build() the ENTRY computation with the public builder, checking the
 * shape the text states for each instruction against the builder's.
 * Everything except the graph lives in one arena freed at the end. The
 * first error stops everything: "LINE:COL: message".
 *
 * The input is not NUL-terminated: the lexer checks every read against
 * the end, the helpers that take a token's text apart stay within its
 * length, and the parser reads tokens: the array always ends with
 * TK_EOF, which advancing never passes. Layouts, metadata and every
 * attribute the builder has no use for are parsed as balanced groups
 * and dropped.
 *
 * The subset (each parser function carries its production):
 *   module      = "HloModule" name ("," attr)* computation* EOF
 *   computation = "ENTRY"? name signature? "{" instruction+ "}"
 *   instruction = "ROOT"? name "=" shape opcode "(" args ")" ("," attr)*
 * Only the ENTRY computation becomes the graph; the others are usable as
 * the to_apply= of a reduce, when they add, maximize or minimize their
 * two parameters.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"	/* type_size(); graphs are built through the public API */

#define R		VTPU_MAX_RANK
#define MAX_DEPTH	64	/* nested tuple shapes */
#define MAX_ELEMS	(1ll << 40)	/* elements of one shape */
#define MAX_WINDOW	(1ll << 20)	/* convolution window numbers */

/* ---- arena --------------------------------------------------------------- */

struct chunk {
	struct chunk *next;
	size_t used, cap;
	max_align_t data[];
};

/* ---- tokens -------------------------------------------------------------- */

enum tok_kind { TK_IDENT, TK_NAME, TK_NUM, TK_STR, TK_PUNCT, TK_EOF };

struct tok {
	enum tok_kind kind;
	const char *loc;	/* its first character, for errors */
	size_t len;		/* its length in the text */
	const char *s;		/* its value: a name without '%', a string */
	size_t n;		/* without quotes; else the text itself */
};

/* ---- the parsed module --------------------------------------------------- */

struct hshape {
	const char *loc;
	bool tuple;
	int htype;		/* hlo_types[] index of an array's type */
	struct vtpu_shape s;	/* an array shape */
	/*
	 * Its layout's minor_to_major, when one was written with a dim per
	 * dimension; else row-major ({rank-1,...,0}). Only a bitcast reads
	 * it: every other operation is defined on logical indices.
	 */
	bool has_layout;
	int8_t minor_to_major[R];
	int n;			/* a tuple's elements */
	struct hshape *elem;
};

struct ilist {
	int n;
	int v[R];
};

/* "3x3", "1_1x0_2", "0_0_1x...": per dimension up to three numbers */
struct dxd {
	int n;
	int64_t v[R][3];
};

enum {
	WF_SIZE, WF_STRIDE, WF_PAD, WF_LHS_DILATE, WF_RHS_DILATE, WF_REVERSAL,
	WF_NR
};

static const char *const window_fields[WF_NR] = {
	"size", "stride", "pad", "lhs_dilate", "rhs_dilate", "window_reversal",
};

#define HLO_ATTRS(X) \
	X(DIMENSIONS,	"dimensions") \
	X(DIRECTION,	"direction") \
	X(LHS_BATCH,	"lhs_batch_dims") \
	X(RHS_BATCH,	"rhs_batch_dims") \
	X(LHS_CONTRACT,	"lhs_contracting_dims") \
	X(RHS_CONTRACT,	"rhs_contracting_dims") \
	X(WINDOW,	"window") \
	X(DIM_LABELS,	"dim_labels") \
	X(FGC,		"feature_group_count") \
	X(BGC,		"batch_group_count") \
	X(TO_APPLY,	"to_apply") \
	X(SLICE,	"slice") \
	X(PADDING,	"padding") \
	X(INDEX,	"index") \
	X(CALLS,	"calls") \
	X(CONDITION,	"condition") \
	X(BODY,		"body") \
	X(TRUE_COMP,	"true_computation") \
	X(FALSE_COMP,	"false_computation") \
	X(BRANCHES,	"branch_computations") \
	X(IOTA_DIM,	"iota_dimension") \
	X(DS_SIZES,	"dynamic_slice_sizes") \
	X(OFFSET_DIMS,	"offset_dims") \
	X(COLLAPSED,	"collapsed_slice_dims") \
	X(START_MAP,	"start_index_map") \
	X(IVD,		"index_vector_dim") \
	X(SLICE_SIZES,	"slice_sizes") \
	X(OBATCH,	"operand_batching_dims") \
	X(SBATCH,	"start_indices_batching_dims") \
	X(UPDATE_WIN,	"update_window_dims") \
	X(INSERTED,	"inserted_window_dims") \
	X(SCATTER_MAP,	"scatter_dims_to_operand_dims") \
	X(TARGET,	"custom_call_target") \
	X(EPSILON,	"epsilon") \
	X(FEATURE,	"feature_index") \
	X(GROUPS,	"replica_groups") \
	X(EXP_BITS,	"exponent_bits") \
	X(MANT_BITS,	"mantissa_bits") \
	X(CMP_TYPE,	"type") \
	X(SELECT,	"select") \
	X(SCATTER,	"scatter")

enum attr_id {
#define ATTR_ENUM(id, text) AT_##id,
	HLO_ATTRS(ATTR_ENUM)
#undef ATTR_ENUM
	AT_NR
};

static const char *const attr_names[AT_NR] = {
#define ATTR_NAME(id, text) text,
	HLO_ATTRS(ATTR_NAME)
#undef ATTR_NAME
};

/* The attributes the builder needs; the others are skipped. */
struct attrs {
	const struct tok *tok[AT_NR];	/* each one's name; NULL: absent */
	const struct tok *val[AT_NR];	/* where its value starts */
	struct ilist dims, lhs_batch, rhs_batch, lhs_contract, rhs_contract;
	enum vtpu_cmp_dir dir;
	struct dxd win[WF_NR];
	const struct tok *labels;
	int64_t fgc, bgc, index;
	struct comp *to_apply, *calls, *cond, *body, *tcomp, *fcomp;
	struct comp *select, *scatter;		/* select-and-scatter */
	int nbranch;
	struct comp **branches;
	struct ilist ds_sizes, offset_dims, collapsed, start_map, slice_sizes;
	struct ilist obatch, sbatch, update_win, inserted, scatter_map;
	int64_t iota_dim, ivd, feature, exp_bits, mant_bits;
	double epsilon;
	const struct tok *target, *cmp_type;
	bool one_replica;	/* replica_groups name one device at most */
	int nslice;
	int64_t start[R], limit[R], stride[R];
	struct dxd padding;
};

enum op_kind {
	OK_PARAM, OK_CONST, OK_UNARY, OK_BINARY, OK_COMPARE, OK_SELECT,
	OK_CONVERT, OK_COPY, OK_BROADCAST, OK_RESHAPE, OK_TRANSPOSE, OK_DOT,
	OK_CONV, OK_REDUCE, OK_CONCAT, OK_SLICE, OK_PAD, OK_TUPLE, OK_GTE,
	OK_IOTA, OK_CLAMP, OK_IDENTITY, OK_BITCAST, OK_CALL, OK_WHILE,
	OK_COND, OK_DSLICE, OK_DUS, OK_GATHER, OK_SCATTER, OK_SORT, OK_REVERSE, OK_RWINDOW,
	OK_BN_INF, OK_BN_TRAIN, OK_CUSTOM, OK_COLLECTIVE, OK_LOGIC, OK_MATH,
	OK_REPLICA_ID, OK_REDUCE_PRECISION, OK_SELSCAT, OK_UNSUPPORTED,
};

/* OK_MATH's functions, composed from the device's (compose.c) */
enum {
	M_SIN, M_COS, M_TAN, M_FLOOR, M_CEIL, M_RNE, M_AFZ, M_SIGN, M_EXPM1,
	M_LOG1P, M_ERF, M_ISFINITE, M_CBRT, M_REM, M_ATAN2,
};

/* OK_LOGIC's, on pred */
enum { L_NOT, L_AND, L_OR, L_XOR };

/*
 * The opcodes the builder covers.
 *   text   the HLO opcode
 *   kind   how build_inst() handles it
 *   arg    the builder's enum for the op, where it takes one
 *   nin    operands; -1: checked by build_inst()
 */
#define HLO_OPS(X) \
	/* text                 kind          arg           nin */ \
	X("parameter",          OK_PARAM,     0,            0) \
	X("constant",           OK_CONST,     0,            0) \
	X("negate",             OK_UNARY,     VTPU_NEG,     1) \
	X("abs",                OK_UNARY,     VTPU_ABS,     1) \
	X("exponential",        OK_UNARY,     VTPU_EXP,     1) \
	X("log",                OK_UNARY,     VTPU_LOG,     1) \
	X("sqrt",               OK_UNARY,     VTPU_SQRT,    1) \
	X("rsqrt",              OK_UNARY,     VTPU_RSQRT,   1) \
	X("tanh",               OK_UNARY,     VTPU_TANH,    1) \
	X("logistic",           OK_UNARY,     VTPU_LOGISTIC, 1) \
	X("add",                OK_BINARY,    VTPU_ADD,     2) \
	X("subtract",           OK_BINARY,    VTPU_SUB,     2) \
	X("multiply",           OK_BINARY,    VTPU_MUL,     2) \
	X("divide",             OK_BINARY,    VTPU_DIV,     2) \
	X("maximum",            OK_BINARY,    VTPU_MAX,     2) \
	X("minimum",            OK_BINARY,    VTPU_MIN,     2) \
	X("power",              OK_BINARY,    VTPU_POW,     2) \
	X("compare",            OK_COMPARE,   0,            2) \
	X("select",             OK_SELECT,    0,            3) \
	X("convert",            OK_CONVERT,   0,            1) \
	X("copy",               OK_COPY,      0,            1) \
	X("broadcast",          OK_BROADCAST, 0,            1) \
	X("reshape",            OK_RESHAPE,   0,            1) \
	X("transpose",          OK_TRANSPOSE, 0,            1) \
	X("dot",                OK_DOT,       0,            2) \
	X("convolution",        OK_CONV,      0,            2) \
	X("reduce",             OK_REDUCE,    0,            -1) \
	X("concatenate",        OK_CONCAT,    0,            -1) \
	X("slice",              OK_SLICE,     0,            1) \
	X("pad",                OK_PAD,       0,            2) \
	X("tuple",              OK_TUPLE,     0,            -1) \
	X("get-tuple-element",  OK_GTE,       0,            1) \
	X("iota",               OK_IOTA,      0,            0) \
	X("clamp",              OK_CLAMP,     0,            3) \
	X("opt-barrier",        OK_IDENTITY,  0,            1) \
	X("optimization-barrier", OK_IDENTITY, 0,           1) \
	X("bitcast",            OK_BITCAST,   0,            1) \
	X("call",               OK_CALL,      0,            -1) \
	X("fusion",             OK_CALL,      1,            -1) \
	X("while",              OK_WHILE,     0,            1) \
	X("conditional",        OK_COND,      0,            -1) \
	X("dynamic-slice",      OK_DSLICE,    0,            -1) \
	X("dynamic-update-slice", OK_DUS,     0,            -1) \
	X("gather",             OK_GATHER,    0,            2) \
	X("scatter",            OK_SCATTER,   0,            -1) \
	X("sort",               OK_SORT,      0,            -1) \
	X("reverse",            OK_REVERSE,   0,            1) \
	X("reduce-window",      OK_RWINDOW,   0,            -1) \
	X("select-and-scatter", OK_SELSCAT,   0,            3) \
	X("batch-norm-inference", OK_BN_INF,  0,            5) \
	X("batch-norm-training", OK_BN_TRAIN, 0,            3) \
	X("custom-call",        OK_CUSTOM,    0,            -1) \
	X("all-reduce",         OK_COLLECTIVE, 0,           -1) \
	X("all-gather",         OK_COLLECTIVE, 1,           -1) \
	X("reduce-scatter",     OK_COLLECTIVE, 2,           -1) \
	X("all-to-all",         OK_COLLECTIVE, 3,           -1) \
	X("collective-permute", OK_COLLECTIVE, 4,           1) \
	X("replica-id",         OK_REPLICA_ID, 0,           0) \
	X("partition-id",       OK_REPLICA_ID, 1,           0) \
	X("reduce-precision",   OK_REDUCE_PRECISION, 0,     1) \
	X("not",                OK_LOGIC,     L_NOT,        1) \
	X("and",                OK_LOGIC,     L_AND,        2) \
	X("or",                 OK_LOGIC,     L_OR,         2) \
	X("xor",                OK_LOGIC,     L_XOR,        2) \
	X("sine",               OK_MATH,      M_SIN,        1) \
	X("cosine",             OK_MATH,      M_COS,        1) \
	X("tan",                OK_MATH,      M_TAN,        1) \
	X("floor",              OK_MATH,      M_FLOOR,      1) \
	X("ceil",               OK_MATH,      M_CEIL,       1) \
	X("round-nearest-even", OK_MATH,      M_RNE,        1) \
	X("round-nearest-afz",  OK_MATH,      M_AFZ,        1) \
	X("sign",               OK_MATH,      M_SIGN,       1) \
	X("exponential-minus-one", OK_MATH,   M_EXPM1,      1) \
	X("log-plus-one",       OK_MATH,      M_LOG1P,      1) \
	X("erf",                OK_MATH,      M_ERF,        1) \
	X("is-finite",          OK_MATH,      M_ISFINITE,   1) \
	X("cbrt",               OK_MATH,      M_CBRT,       1) \
	X("remainder",          OK_MATH,      M_REM,        2) \
	X("atan2",              OK_MATH,      M_ATAN2,      2)

struct hlo_op {
	const char *text;
	enum op_kind kind;
	int arg;
	int nin;
};

static const struct hlo_op hlo_ops[] = {
#define HLO_OP_ENTRY(text, kind, arg, nin) { text, kind, arg, nin },
	HLO_OPS(HLO_OP_ENTRY)
#undef HLO_OP_ENTRY
};

/* Real XLA opcodes outside the subset: "unsupported", not "unknown". */
static const char *const unsupported_ops[] = {
	"add-dependency", "after-all", "all-gather-done", "all-gather-start",
	"all-reduce-done", "all-reduce-start", "async-done", "async-start",
	"async-update", "batch-norm-grad", "bitcast-convert",
	"cholesky", "collective-broadcast", "collective-permute-done",
	"collective-permute-start", "complex", "copy-done", "copy-start",
	"count-leading-zeros", "domain", "dynamic-reshape", "fft",
	"get-dimension-size", "imag", "infeed", "map", "outfeed", "popcnt",
	"ragged-all-to-all", "real", "recv", "recv-done", "rng",
	"rng-bit-generator", "rng-get-and-update-state", "send", "send-done",
	"set-dimension-size",
	"shift-left", "shift-right-arithmetic", "shift-right-logical",
	"stochastic-convert", "topk", "triangular-solve",
};

static const struct hlo_op op_unsupported = { "", OK_UNSUPPORTED, 0, -1 };

/*
 * A built value: an array (a builder value id) or a tuple of values. A
 * scalar whose value the frontend knows at compile time (loop counters,
 * slice starts, a conditional's predicate) carries it too: that is how
 * loops unroll and dynamic slices become static ones.
 */
struct hval {
	int n;			/* -1: an array; else a tuple of n */
	int id;
	struct hval *e;		/* a tuple's elements */
	bool known;
	double k;
};

struct inst {
	const struct tok *name;
	const struct tok *op_tok;
	const struct tok *arg_tok;	/* parameter(N): N */
	const struct hlo_op *op;
	struct hshape shape;
	bool root;
	int nops;
	struct inst **ops;
	const struct tok **op_name;	/* where each operand is named */
	struct attrs *at;		/* NULL: none the builder needs */
	int64_t param;
	void *data;			/* constant: elements in shape's type */
	struct inst *next;

	/* build() */
	struct hval v;
};

/* Open addressing, name -> pointer; one per computation's scope. */
struct map_ent {
	const char *s;
	size_t n;
	void *v;
};

struct map {
	size_t cap, n;
	struct map_ent *e;
};

struct comp {
	const struct tok *name;
	bool entry;
	struct inst *first, *last, *root;
	struct map names;
	int nparams;
};

struct parser {
	const char *text, *end;
	struct tok *toks, *tok;
	size_t ntok, captok;
	struct chunk *arena;
	struct map comps;
	struct comp *entry;
	struct vtpu_graph *g;
	int ret;		/* the first error */
	char msg[256];
	/*
	 * Building a scalar computation elementwise (a sort comparator):
	 * every value the text calls a scalar is an array of these dims,
	 * scalar constants are broadcast to them, and only elementwise
	 * instructions may appear. rank 0: off.
	 */
	struct vtpu_shape map;
};

/* ---- errors -------------------------------------------------------------- */

/* Records the first error as "LINE:COL: message"; returns it. */
__attribute__((format(printf, 3, 4)))
static int error_at(struct parser *p, const char *loc, const char *fmt, ...)
{
	unsigned long line = 1, col = 1;
	const char *q;
	va_list ap;
	int n;

	if (p->ret)
		return p->ret;
	for (q = p->text; q < loc; q++) {
		if (*q == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	n = snprintf(p->msg, sizeof(p->msg), "%lu:%lu: ", line, col);
	va_start(ap, fmt);
	vsnprintf(p->msg + n, sizeof(p->msg) - n, fmt, ap);
	va_end(ap);
	p->ret = -EINVAL;
	return p->ret;
}

static int oom(struct parser *p)
{
	if (!p->ret) {
		snprintf(p->msg, sizeof(p->msg), "out of memory");
		p->ret = -ENOMEM;
	}
	return p->ret;
}

/* "'text'" of a token, shortened, for "found ..." */
static const char *describe(const struct tok *t, char *buf, size_t n)
{
	if (t->kind == TK_EOF)
		return "end of input";
	if (t->kind == TK_STR)
		return "a string";
	snprintf(buf, n, "'%.*s%s'", (int)(t->len > 24 ? 24 : t->len), t->loc,
		 t->len > 24 ? "..." : "");
	return buf;
}

static int expected(struct parser *p, const char *what)
{
	char buf[40];

	return error_at(p, p->tok->loc, "expected %s, found %s", what,
			describe(p->tok, buf, sizeof(buf)));
}

/* ---- arena --------------------------------------------------------------- */

/* Zeroed memory that lives until vtpu_hlo_parse() returns. */
static void *alloc(struct parser *p, size_t size)
{
	struct chunk *c = p->arena;
	size_t cap;
	void *v;

	size = (size + 15) & ~(size_t)15;
	if (size > SIZE_MAX / 4) {
		oom(p);
		return NULL;
	}
	if (!c || c->cap - c->used < size) {
		cap = size > 65536 ? size : 65536;
		c = calloc(1, sizeof(*c) + cap);
		if (!c) {
			oom(p);
			return NULL;
		}
		c->cap = cap;
		c->next = p->arena;
		p->arena = c;
	}
	v = (char *)c->data + c->used;
	c->used += size;
	return v;
}

/* Multiplies with an overflow check, for array sizes. */
static void *alloc_array(struct parser *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / 4 / size) {
		oom(p);
		return NULL;
	}
	return alloc(p, n * size);
}

/* Doubles a vector kept in the arena (the old copy stays there). */
static void *grow(struct parser *p, void *v, size_t n, size_t *cap,
		  size_t size)
{
	size_t ncap = *cap ? *cap * 2 : 8;
	void *nv = alloc_array(p, ncap, size);

	if (!nv)
		return NULL;
	if (n)
		memcpy(nv, v, n * size);
	*cap = ncap;
	return nv;
}

static void arena_free(struct parser *p)
{
	struct chunk *c, *next;

	for (c = p->arena; c; c = next) {
		next = c->next;
		free(c);
	}
	p->arena = NULL;
}

/* ---- names --------------------------------------------------------------- */

static size_t hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return (size_t)h;
}

static struct map_ent *map_slot(struct map *m, const char *s, size_t n)
{
	size_t i = hash(s, n) & (m->cap - 1);

	while (m->e[i].s && (m->e[i].n != n || memcmp(m->e[i].s, s, n)))
		i = (i + 1) & (m->cap - 1);
	return &m->e[i];
}

static void *map_get(struct map *m, const char *s, size_t n)
{
	return m->cap ? map_slot(m, s, n)->v : NULL;
}

/* Adds a name that map_get() did not find; half full at most. */
static int map_put(struct parser *p, struct map *m, const char *s, size_t n,
		   void *v)
{
	struct map old = *m;
	struct map_ent *e;
	size_t i;

	if (2 * (m->n + 1) > m->cap) {
		m->cap = old.cap ? old.cap * 2 : 16;
		m->e = alloc_array(p, m->cap, sizeof(*m->e));
		if (!m->e) {
			*m = old;
			return p->ret;
		}
		for (i = 0; i < old.cap; i++)
			if (old.e[i].s)
				*map_slot(m, old.e[i].s, old.e[i].n) = old.e[i];
	}
	e = map_slot(m, s, n);
	e->s = s;
	e->n = n;
	e->v = v;
	m->n++;
	return 0;
}

/* ---- tokenize ------------------------------------------------------------ */

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_alnum(int c)
{
	return is_digit(c) || ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '_';
}

/*
 * The end of a word: a name ("get-tuple-element.3"), a number, or one of
 * the compound attribute values ("3x3", "1_1x0_0", "1e-05",
 * "bf01_oi01->bf01"), which the parser takes apart.
 */
static const char *scan_word(const char *q, const char *end, bool num)
{
	while (q < end) {
		char c = *q;
		bool more = q + 1 < end;

		if (is_alnum(c) || c == '.') {
			q++;
		} else if (c == '-' && more && q[1] == '>' && q + 2 < end &&
			   is_alnum(q[2])) {
			q += 2;
		} else if (num && (c == '-' || c == '+') &&
			   (q[-1] == 'e' || q[-1] == 'E' || q[-1] == '_')) {
			q++;
		} else if (num && c == '-' && q[-1] == 'x' && more &&
			   is_digit(q[1])) {
			q++;	/* padding=0_0x-1_2: a negative low edge */
		} else if (!num && c == '-' && more &&
			   (is_alnum(q[1]) || q[1] == '.')) {
			q++;
		} else {
			break;
		}
	}
	return q;
}

/* Whitespace and comments ("/ * index=5 * /" appears in long lists). */
static int skip_space(struct parser *p, const char **qp)
{
	const char *q = *qp, *e = p->end;

	for (;;) {
		if (q < e && (*q == ' ' || *q == '\t' || *q == '\n' ||
			      *q == '\r' || *q == '\f' || *q == '\v')) {
			q++;
		} else if (q + 1 < e && q[0] == '/' && q[1] == '/') {
			while (q < e && *q != '\n')
				q++;
		} else if (q + 1 < e && q[0] == '/' && q[1] == '*') {
			const char *start = q;

			for (q += 2; q + 1 < e && !(q[0] == '*' && q[1] == '/');)
				q++;
			if (q + 1 >= e)
				return error_at(p, start, "unterminated comment");
			q += 2;
		} else {
			break;
		}
	}
	*qp = q;
	return 0;
}

/* Lexes one token at @q into @t. */
static int lex_one(struct parser *p, const char *q, struct tok *t)
{
	const char *e = p->end, *s = q;

	t->loc = q;
	t->kind = TK_PUNCT;
	if (q == e) {
		t->kind = TK_EOF;
	} else if (is_alnum(*q) && !is_digit(*q)) {
		t->kind = TK_IDENT;
		q = scan_word(q, e, false);
	} else if (is_digit(*q) ||
		   (*q == '-' && q + 1 < e && is_digit(q[1]))) {
		t->kind = TK_NUM;
		q = scan_word(q + 1, e, true);
	} else if (*q == '%') {
		t->kind = TK_NAME;
		s = q + 1;
		q = scan_word(s, e, false);
		if (q == s)
			return error_at(p, t->loc, "expected a name after '%%'");
	} else if (*q == '"') {
		t->kind = TK_STR;
		s = ++q;
		while (q < e && *q != '"')
			q += (*q == '\\' && q + 1 < e) ? 2 : 1;
		if (q >= e)
			return error_at(p, t->loc, "unterminated string");
		t->s = s;
		t->n = q - s;
		q++;
	} else if (*q == '-' && q + 1 < e && q[1] == '>') {
		q += 2;
	} else if (*q > ' ' && *q < 127) {
		q++;
	} else {
		return error_at(p, q, "unexpected character '\\x%02x'",
				(unsigned char)*q);
	}
	t->len = q - t->loc;
	if (t->kind != TK_STR) {
		t->s = s;
		t->n = q - s;
	}
	return 0;
}

static int tokenize(struct parser *p)
{
	const char *q = p->text;
	struct tok t;

	do {
		if (skip_space(p, &q) || lex_one(p, q, &t))
			return p->ret;
		if (p->ntok == p->captok) {
			p->toks = grow(p, p->toks, p->ntok, &p->captok,
				       sizeof(t));
			if (!p->toks)
				return p->ret;
		}
		p->toks[p->ntok++] = t;
		q = t.loc + t.len;
	} while (t.kind != TK_EOF);
	p->tok = p->toks;
	return 0;
}

/* ---- token helpers ------------------------------------------------------- */

static void advance(struct parser *p)
{
	if (p->tok->kind != TK_EOF)
		p->tok++;
}

static const struct tok *peek2(struct parser *p)
{
	return p->tok->kind == TK_EOF ? p->tok : p->tok + 1;
}

static bool tok_is(const struct tok *t, enum tok_kind kind, const char *s)
{
	size_t n = strlen(s);

	return t->kind == kind && t->n == n && !memcmp(t->s, s, n);
}

static bool is_punct(const struct tok *t, const char *s)
{
	return tok_is(t, TK_PUNCT, s);
}

static bool is_ident(const struct tok *t, const char *s)
{
	return tok_is(t, TK_IDENT, s);
}

static bool is_name(const struct tok *t)
{
	return t->kind == TK_IDENT || t->kind == TK_NAME;
}

static bool consume(struct parser *p, const char *punct)
{
	if (!is_punct(p->tok, punct))
		return false;
	advance(p);
	return true;
}

static int skip(struct parser *p, const char *punct)
{
	char what[8];

	if (consume(p, punct))
		return 0;
	snprintf(what, sizeof(what), "'%s'", punct);
	return expected(p, what);
}

/* name = IDENT | "%" IDENT */
static const struct tok *parse_name(struct parser *p, const char *what)
{
	const struct tok *t = p->tok;

	if (!is_name(t)) {
		expected(p, what);
		return NULL;
	}
	advance(p);
	return t;
}

/* Copies a token's value, NUL-terminated, into @buf of @n bytes. */
static bool tok_cstr(const struct tok *t, char *buf, size_t n)
{
	if (t->n >= n)
		return false;
	memcpy(buf, t->s, t->n);
	buf[t->n] = '\0';
	return true;
}

/* A decimal integer: "-"? DIGIT+, in int64 range. */
static bool text_int(const char *s, size_t n, int64_t *v)
{
	bool neg = n && *s == '-';
	size_t i = neg;
	int64_t x = 0;		/* negated: INT64_MIN has no positive twin */

	if (i == n)
		return false;
	for (; i < n; i++)
		if (!is_digit(s[i]) || __builtin_mul_overflow(x, 10, &x) ||
		    __builtin_sub_overflow(x, s[i] - '0', &x))
			return false;
	if (!neg && x == INT64_MIN)
		return false;
	*v = neg ? x : -x;
	return true;
}

static bool in_range(int64_t v, int64_t lim)
{
	return v >= -lim && v <= lim;
}

/* int = NUM (a decimal integer) */
static int parse_int(struct parser *p, int64_t *v)
{
	if (p->tok->kind != TK_NUM || !text_int(p->tok->s, p->tok->n, v))
		return expected(p, "an integer");
	advance(p);
	return 0;
}

/* Skips a balanced "{...}", "(...)" or "[...]" group. */
static int skip_group(struct parser *p)
{
	const struct tok *open = p->tok;
	char o = *open->loc, c = o == '{' ? '}' : o == '(' ? ')' : ']';
	size_t depth = 0;

	do {
		if (p->tok->kind == TK_EOF)
			return error_at(p, open->loc, "unterminated '%c'", o);
		if (p->tok->kind == TK_PUNCT && *p->tok->loc == o)
			depth++;
		else if (p->tok->kind == TK_PUNCT && *p->tok->loc == c)
			depth--;
		advance(p);
	} while (depth);
	return 0;
}

/* value = "{" ... "}" | "(" ... ")" | "[" ... "]" | IDENT | NAME | NUM | STR */
static int skip_value(struct parser *p)
{
	if (is_punct(p->tok, "{") || is_punct(p->tok, "(") ||
	    is_punct(p->tok, "["))
		return skip_group(p);
	if (p->tok->kind == TK_PUNCT || p->tok->kind == TK_EOF)
		return expected(p, "an attribute value");
	advance(p);
	return 0;
}

/* ---- shapes -------------------------------------------------------------- */

static const char *const type_names[] = {
	[VTPU_F32] = "f32", [VTPU_BF16] = "bf16", [VTPU_S32] = "s32",
	[VTPU_S64] = "s64", [VTPU_PRED] = "pred",
};

/*
 * XLA's element types and what the device computes them in, as JAX does
 * without x64: wider floats in f32, every integer in s32 (a constant
 * outside its range is refused). f16 values are f32 rounded to f16 where
 * a convert makes them. u32 and u64 are s32 bits: the operations where
 * signedness matters (compare, divide, convert, shifts) refuse them.
 */
enum { HT_PLAIN, HT_UNSIGNED, HT_F16 };

static const struct {
	const char *name;
	enum vtpu_type dev;
	int kind;
	double lo, hi;		/* an integer type's range; else 0, 0 */
} hlo_types[] = {
	{ "f32", VTPU_F32, HT_PLAIN, 0, 0 },
	{ "bf16", VTPU_BF16, HT_PLAIN, 0, 0 },
	{ "s32", VTPU_S32, HT_PLAIN, INT32_MIN, INT32_MAX },
	{ "s64", VTPU_S32, HT_PLAIN, INT32_MIN, INT32_MAX },
	{ "pred", VTPU_PRED, HT_PLAIN, 0, 0 },
	{ "f64", VTPU_F32, HT_PLAIN, 0, 0 },
	{ "f16", VTPU_F32, HT_F16, 0, 0 },
	{ "s8", VTPU_S32, HT_PLAIN, -128, 127 },
	{ "s16", VTPU_S32, HT_PLAIN, -32768, 32767 },
	{ "u8", VTPU_S32, HT_PLAIN, 0, 255 },
	{ "u16", VTPU_S32, HT_PLAIN, 0, 65535 },
	{ "u32", VTPU_S32, HT_UNSIGNED, INT32_MIN, INT32_MAX },
	{ "u64", VTPU_S32, HT_UNSIGNED, INT32_MIN, INT32_MAX },
};

/* XLA's other element types: "unsupported", not "expected a shape". */
static const char *const other_types[] = {
	"s2", "s4", "u1", "u2", "u4", "c64", "c128", "token", "tf32",
	"f4e2m1fn", "f8e3m4", "f8e4m3", "f8e4m3b11fnuz", "f8e4m3fn",
	"f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "f8e8m0fnu",
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int lookup_type(struct parser *p, const struct tok *t,
		       enum vtpu_type *type, int *htype)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hlo_types); i++) {
		if (is_ident(t, hlo_types[i].name)) {
			*type = hlo_types[i].dev;
			*htype = (int)i;
			return 0;
		}
	}
	for (i = 0; i < ARRAY_SIZE(other_types); i++)
		if (is_ident(t, other_types[i]))
			return error_at(p, t->loc,
					"unsupported element type '%s'",
					other_types[i]);
	return expected(p, "a shape");
}

/* dims = "[" [dim ("," dim)*] "]";  dim = NUM (a positive integer) */
static int parse_dims(struct parser *p, struct vtpu_shape *s)
{
	int64_t d, elems = 1;

	if (skip(p, "["))
		return p->ret;
	while (!consume(p, "]")) {
		if (s->rank && skip(p, ","))
			return p->ret;
		if (is_punct(p->tok, "<") || is_punct(p->tok, "?"))
			return error_at(p, p->tok->loc,
					"unsupported: dynamic dimension");
		if (s->rank == R)
			return error_at(p, p->tok->loc,
					"unsupported: rank above %d", R);
		if (parse_int(p, &d))
			return p->ret;
		if (d < 1)
			return error_at(p, p[0].tok[-1].loc,
					"unsupported: dimension of size %lld",
					(long long)d);
		if (__builtin_mul_overflow(elems, d, &elems) ||
		    elems > MAX_ELEMS)
			return error_at(p, p[0].tok[-1].loc, "shape too large");
		s->dims[s->rank++] = d;
	}
	return 0;
}

/*
 * The minor_to_major list of the layout at p->tok ("{"), read ahead
 * without consuming: kept when it is a permutation of the dimensions.
 */
static void parse_layout(struct parser *p, struct hshape *sh)
{
	const struct tok *t = p->tok + 1;
	int64_t v;
	int n = 0, seen = 0;

	while (t->kind == TK_NUM && n < R && text_int(t->s, t->n, &v) &&
	       v >= 0 && v < sh->s.rank && !(seen & 1 << v)) {
		sh->minor_to_major[n++] = (int8_t)v;
		seen |= 1 << v;
		t++;
		if (!is_punct(t, ","))
			break;
		t++;
	}
	sh->has_layout = n == sh->s.rank &&
			 (is_punct(t, "}") || is_punct(t, ":"));
}

/*
 * shape  = type dims layout? | "(" [shape ("," shape)*] ")"
 * layout = "{" [NUM ("," NUM)*] [":" ...] "}"  (minor_to_major, then tiling,
 *          memory space... which are skipped)
 */
static int parse_shape(struct parser *p, struct hshape *sh, int depth)
{
	size_t cap = 0;

	sh->loc = p->tok->loc;
	if (consume(p, "(")) {
		if (depth == MAX_DEPTH)
			return error_at(p, sh->loc, "tuple shape nested too deep");
		sh->tuple = true;
		while (!consume(p, ")")) {
			if (sh->n && skip(p, ","))
				return p->ret;
			if ((size_t)sh->n == cap) {
				sh->elem = grow(p, sh->elem, sh->n, &cap,
						sizeof(*sh->elem));
				if (!sh->elem)
					return p->ret;
			}
			if (parse_shape(p, &sh->elem[sh->n++], depth + 1))
				return p->ret;
		}
		return 0;
	}
	if (p->tok->kind != TK_IDENT)
		return expected(p, "a shape");
	if (lookup_type(p, p->tok, &sh->s.type, &sh->htype))
		return p->ret;
	advance(p);
	if (parse_dims(p, &sh->s))
		return p->ret;
	if (is_punct(p->tok, "{")) {
		const struct tok *t = peek2(p);

		/* A layout, not the "{" that opens a computation's body. */
		if (t->kind == TK_NUM || is_punct(t, ":") || is_punct(t, "}")) {
			parse_layout(p, sh);
			return skip_group(p);
		}
	}
	return 0;
}

static void fmt_shape(char *buf, size_t n, const struct vtpu_shape *s)
{
	int i, k;

	k = snprintf(buf, n, "%s[", (unsigned int)s->type < ARRAY_SIZE(type_names)
		     ? type_names[s->type] : "?");
	for (i = 0; i < s->rank && k > 0 && (size_t)k < n; i++)
		k += snprintf(buf + k, n - k, "%s%lld", i ? "," : "",
			      (long long)s->dims[i]);
	if (k > 0 && (size_t)k < n)
		snprintf(buf + k, n - k, "]");
}

static void fmt_hshape(char *buf, size_t n, const struct hshape *sh)
{
	if (sh->tuple)
		snprintf(buf, n, "a tuple of %d", sh->n);
	else
		fmt_shape(buf, n, &sh->s);
}

static bool shape_same(const struct vtpu_shape *a, const struct vtpu_shape *b)
{
	int i;

	if (a->type != b->type || a->rank != b->rank)
		return false;
	for (i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

static int64_t elems_of(const struct vtpu_shape *s)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < s->rank; i++)
		n *= s->dims[i];
	return n;
}

/* ---- constants ----------------------------------------------------------- */

/* -?DIGIT+ ("." DIGIT*)? ([eE] [+-]? DIGIT+)? */
static bool float_syntax(const char *s)
{
	if (*s == '-')
		s++;
	if (!is_digit(*s))
		return false;
	while (is_digit(*s))
		s++;
	if (*s == '.')
		for (s++; is_digit(*s);)
			s++;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!is_digit(*s))
			return false;
		while (is_digit(*s))
			s++;
	}
	return !*s;
}

/* A float's value: NUM, "inf", "nan", "-inf", "-nan". */
static int parse_float(struct parser *p, double *v)
{
	const struct tok *t = p->tok;
	bool neg = false;
	char buf[64];

	if (is_punct(t, "-") && peek2(p)->kind == TK_IDENT) {
		neg = true;
		advance(p);
		t = p->tok;
	}
	if (is_ident(t, "inf") || is_ident(t, "nan")) {
		*v = *t->s == 'i' ? INFINITY : NAN;
		if (neg)
			*v = -*v;
		advance(p);
		return 0;
	}
	if (neg || t->kind != TK_NUM || !tok_cstr(t, buf, sizeof(buf)) ||
	    !float_syntax(buf))
		return expected(p, "a number");
	*v = strtod(buf, NULL);
	if (!isfinite(*v))
		return error_at(p, t->loc, "number out of range");
	advance(p);
	return 0;
}

/*
 * scalar = "true" | "false" (pred) | int (s32, s64)
 *        | "-"? (NUM | "inf" | "nan") (f32, bf16)
 * Stores it in @type's format at @dst.
 */
static int parse_scalar(struct parser *p, enum vtpu_type type, void *dst)
{
	const struct tok *t = p->tok;
	int64_t i;
	int32_t i32;
	uint16_t h;
	double d = 0;
	float f;

	switch (type) {
	case VTPU_PRED:
		if (!is_ident(t, "true") && !is_ident(t, "false"))
			return expected(p, "true or false");
		*(uint8_t *)dst = *t->s == 't';
		advance(p);
		return 0;
	case VTPU_S32:
	case VTPU_S64:
		if (parse_int(p, &i))
			return p->ret;
		if (type == VTPU_S64) {
			memcpy(dst, &i, 8);
			return 0;
		}
		if (i < INT32_MIN || i > INT32_MAX)
			return error_at(p, t->loc,
					"unsupported: %lld is outside the device's s32 range",
					(long long)i);
		i32 = (int32_t)i;
		memcpy(dst, &i32, 4);
		return 0;
	default:
		if (parse_float(p, &d))
			return p->ret;
		/*
		 * Out of range is what rounds to an infinity: XLA prints
		 * FLT_MAX as 3.40282347e+38, a little above it, which
		 * rounds back to FLT_MAX.
		 */
		f = (float)d;
		h = vtpu_f32_to_bf16(f);
		if (isfinite(d) && (isinf(f) || (type != VTPU_F32 &&
						 (h & 0x7fff) == 0x7f80)))
			return error_at(p, t->loc, "number out of range");
		if (type == VTPU_F32)
			memcpy(dst, &f, 4);
		else
			memcpy(dst, &h, 2);
		return 0;
	}
}

/*
 * literal = scalar                          (rank 0)
 *         | "{" literal ("," literal)* "}"  (one level per dimension)
 */
static int parse_literal(struct parser *p, const struct vtpu_shape *s,
			 int dim, unsigned char *data, size_t *k)
{
	const struct tok *open = p->tok;
	int64_t i;

	if (dim == s->rank) {
		if (parse_scalar(p, s->type, data + *k * (size_t)type_size(s->type)))
			return p->ret;
		++*k;
		return 0;
	}
	if (skip(p, "{"))
		return p->ret;
	for (i = 0; i < s->dims[dim]; i++) {
		if (i && !consume(p, ","))
			goto count;
		if (parse_literal(p, s, dim + 1, data, k))
			return p->ret;
	}
	if (consume(p, "}"))
		return 0;
count:
	return error_at(p, open->loc,
			"bad constant: dimension %d must have %lld elements",
			dim, (long long)s->dims[dim]);
}

/* constant's args = literal (of the instruction's shape) */
static int parse_constant(struct parser *p, struct inst *in)
{
	const struct vtpu_shape *s = &in->shape.s;
	size_t k = 0, left = p->ntok - (size_t)(p->tok - p->toks);
	int64_t n = elems_of(s);

	if (in->shape.tuple)
		return error_at(p, in->shape.loc,
				"unsupported: tuple-shaped constant");
	if (is_punct(p->tok, "{") && is_punct(peek2(p), "."))
		return error_at(p, p->tok->loc,
				"unsupported: elided constant '{...}'");
	/* each element takes a token: a short text cannot claim a lot */
	if ((uint64_t)n > left)
		return error_at(p, p->tok->loc,
				"bad constant: the text is too short for %lld elements",
				(long long)n);
	in->data = alloc_array(p, (size_t)n, (size_t)type_size(s->type));
	if (!in->data)
		return p->ret;
	return parse_literal(p, s, 0, in->data, &k);
}

/* ---- attributes ---------------------------------------------------------- */

/* ints = "{" [int ("," int)*] "}" */
static int parse_ilist(struct parser *p, struct ilist *l)
{
	int64_t v = 0;

	if (skip(p, "{"))
		return p->ret;
	while (!consume(p, "}")) {
		if (l->n && skip(p, ","))
			return p->ret;
		if (l->n == R)
			return error_at(p, p->tok->loc,
					"more than %d dimensions", R);
		if (parse_int(p, &v))
			return p->ret;
		if (v < INT32_MIN || v > INT32_MAX)
			return error_at(p, p[0].tok[-1].loc,
					"number out of range");
		l->v[l->n++] = (int)v;
	}
	return 0;
}

/*
 * dxd = part ("x" part)*;  part = int ("_" int)*   (one word, e.g. 1_1x0_2)
 * Each part has @min..@max numbers, each at most @lim in magnitude (the
 * builder's shape arithmetic must not overflow).
 */
static int parse_dxd(struct parser *p, const char *what, int min, int max,
		     int64_t lim, struct dxd *d)
{
	const struct tok *t = p->tok;
	size_t i = 0, j;
	int k;

	if (t->kind != TK_NUM)
		return expected(p, what);
	d->n = 0;
	while (i < t->n) {
		if (d->n == R)
			goto bad;
		for (k = 0;; k++) {
			j = i;
			if (j < t->n && t->s[j] == '-')
				j++;
			while (j < t->n && is_digit(t->s[j]))
				j++;
			if (k == max || !text_int(t->s + i, j - i,
						  &d->v[d->n][k]))
				goto bad;
			if (!in_range(d->v[d->n][k], lim))
				return error_at(p, t->loc, "%s out of range",
						what);
			i = j;
			if (i == t->n || t->s[i] != '_')
				break;
			i++;
		}
		if (k + 1 < min)
			goto bad;
		d->n++;
		if (i < t->n && (t->s[i] != 'x' || ++i == t->n))
			goto bad;
	}
	advance(p);
	return 0;
bad:
	return error_at(p, t->loc, "bad %s '%.*s'", what, (int)t->n, t->s);
}

/* window = "{" (field "=" dxd)* "}" */
static int parse_window(struct parser *p, struct dxd *win)
{
	int f;

	if (skip(p, "{"))
		return p->ret;
	while (!consume(p, "}")) {
		const struct tok *t = p->tok;

		for (f = 0; f < WF_NR; f++)
			if (is_ident(t, window_fields[f]))
				break;
		if (is_ident(t, "rhs_reversal"))	/* XLA's spelling */
			f = WF_REVERSAL;
		if (f == WF_NR)
			return expected(p, "a window field or '}'");
		advance(p);
		if (skip(p, "=") ||
		    parse_dxd(p, window_fields[f], f == WF_PAD ? 2 : 1,
			      f == WF_PAD ? 2 : 1, MAX_WINDOW, &win[f]))
			return p->ret;
	}
	return 0;
}

/* slice = "{" [range ("," range)*] "}";  range = "[" int ":" int (":" int)? "]" */
static int parse_slice(struct parser *p, struct attrs *at)
{
	const struct tok *open;
	int i;

	if (skip(p, "{"))
		return p->ret;
	while (!consume(p, "}")) {
		if (at->nslice && skip(p, ","))
			return p->ret;
		if (at->nslice == R)
			return error_at(p, p->tok->loc,
					"more than %d dimensions", R);
		open = p->tok;
		i = at->nslice++;
		at->stride[i] = 1;
		if (skip(p, "[") || parse_int(p, &at->start[i]) ||
		    skip(p, ":") || parse_int(p, &at->limit[i]))
			return p->ret;
		if (consume(p, ":") && parse_int(p, &at->stride[i]))
			return p->ret;
		if (skip(p, "]"))
			return p->ret;
		if (!in_range(at->start[i], MAX_ELEMS) ||
		    !in_range(at->limit[i], MAX_ELEMS) ||
		    !in_range(at->stride[i], MAX_ELEMS))
			return error_at(p, open->loc, "slice out of range");
	}
	return 0;
}

static const char *const directions[] = {
	[VTPU_EQ] = "EQ", [VTPU_NE] = "NE", [VTPU_LT] = "LT",
	[VTPU_LE] = "LE", [VTPU_GT] = "GT", [VTPU_GE] = "GE",
};

/* direction = "EQ" | "NE" | "LT" | "LE" | "GT" | "GE" */
static int parse_direction(struct parser *p, enum vtpu_cmp_dir *dir)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(directions); i++) {
		if (is_ident(p->tok, directions[i])) {
			*dir = (enum vtpu_cmp_dir)i;
			advance(p);
			return 0;
		}
	}
	return expected(p, "a comparison direction");
}

/* comp = name (of a computation defined above) */
static int parse_comp(struct parser *p, struct comp **c)
{
	const struct tok *t = parse_name(p, "a computation name");

	if (!t)
		return p->ret;
	*c = map_get(&p->comps, t->s, t->n);
	if (!*c)
		return error_at(p, t->loc, "undefined computation '%.*s'",
				(int)t->n, t->s);
	return 0;
}

/* comps = "{" comp ("," comp)* "}" */
static int parse_comps(struct parser *p, struct attrs *at)
{
	size_t cap = 0;

	if (skip(p, "{"))
		return p->ret;
	while (!consume(p, "}")) {
		if (at->nbranch && skip(p, ","))
			return p->ret;
		if ((size_t)at->nbranch == cap) {
			at->branches = grow(p, at->branches, at->nbranch, &cap,
					    sizeof(*at->branches));
			if (!at->branches)
				return p->ret;
		}
		if (parse_comp(p, &at->branches[at->nbranch++]))
			return p->ret;
	}
	return 0;
}

/*
 * replica_groups = "{" ("{" ints "}")* "}" | "[" ints "]" "<=" "[" ints "]"
 * Whether they name one device at most: all zeros, or an iota list of 1.
 */
static int parse_groups(struct parser *p, struct attrs *at)
{
	const struct tok *start = p->tok, *t;
	bool iota = is_punct(p->tok, "[");

	if (skip_value(p))
		return p->ret;
	at->one_replica = true;
	if (iota) {	/* [a,b]<=[n]: n devices */
		int64_t n = 0;

		if (!consume(p, "<") || skip(p, "=") || skip(p, "[") ||
		    parse_int(p, &n))
			return p->ret ? p->ret : expected(p, "'<=['");
		while (!is_punct(p->tok, "]") && p->tok->kind != TK_EOF)
			advance(p);
		if (skip(p, "]"))
			return p->ret;
		at->one_replica = n <= 1;
		return 0;
	}
	for (t = start; t < p->tok; t++)
		if (t->kind == TK_NUM && !tok_is(t, TK_NUM, "0"))
			at->one_replica = false;
	return 0;
}

/* The value of a known attribute; see the production of each parser. */
static int parse_known_attr(struct parser *p, struct attrs *at, int id)
{
	switch (id) {
	case AT_DIMENSIONS:
		return parse_ilist(p, &at->dims);
	case AT_DIRECTION:
		return parse_direction(p, &at->dir);
	case AT_LHS_BATCH:
		return parse_ilist(p, &at->lhs_batch);
	case AT_RHS_BATCH:
		return parse_ilist(p, &at->rhs_batch);
	case AT_LHS_CONTRACT:
		return parse_ilist(p, &at->lhs_contract);
	case AT_RHS_CONTRACT:
		return parse_ilist(p, &at->rhs_contract);
	case AT_WINDOW:
		return parse_window(p, at->win);
	case AT_DIM_LABELS:
		if (p->tok->kind != TK_IDENT && p->tok->kind != TK_NUM)
			return expected(p, "dimension labels");
		at->labels = p->tok;
		advance(p);
		return 0;
	case AT_FGC:
		return parse_int(p, &at->fgc);
	case AT_BGC:
		return parse_int(p, &at->bgc);
	case AT_TO_APPLY:
		return parse_comp(p, &at->to_apply);
	case AT_CALLS:
		return parse_comp(p, &at->calls);
	case AT_CONDITION:
		return parse_comp(p, &at->cond);
	case AT_SELECT:
		return parse_comp(p, &at->select);
	case AT_SCATTER:
		return parse_comp(p, &at->scatter);
	case AT_BODY:
		return parse_comp(p, &at->body);
	case AT_TRUE_COMP:
		return parse_comp(p, &at->tcomp);
	case AT_FALSE_COMP:
		return parse_comp(p, &at->fcomp);
	case AT_BRANCHES:
		return parse_comps(p, at);
	case AT_IOTA_DIM:
		return parse_int(p, &at->iota_dim);
	case AT_DS_SIZES:
		return parse_ilist(p, &at->ds_sizes);
	case AT_OFFSET_DIMS:
		return parse_ilist(p, &at->offset_dims);
	case AT_COLLAPSED:
		return parse_ilist(p, &at->collapsed);
	case AT_START_MAP:
		return parse_ilist(p, &at->start_map);
	case AT_IVD:
		return parse_int(p, &at->ivd);
	case AT_SLICE_SIZES:
		return parse_ilist(p, &at->slice_sizes);
	case AT_OBATCH:
		return parse_ilist(p, &at->obatch);
	case AT_SBATCH:
		return parse_ilist(p, &at->sbatch);
	case AT_UPDATE_WIN:
		return parse_ilist(p, &at->update_win);
	case AT_INSERTED:
		return parse_ilist(p, &at->inserted);
	case AT_SCATTER_MAP:
		return parse_ilist(p, &at->scatter_map);
	case AT_TARGET:
		if (p->tok->kind != TK_STR)
			return expected(p, "a string");
		at->target = p->tok;
		advance(p);
		return 0;
	case AT_EPSILON:
		return parse_float(p, &at->epsilon);
	case AT_FEATURE:
		return parse_int(p, &at->feature);
	case AT_GROUPS:
		return parse_groups(p, at);
	case AT_EXP_BITS:
		return parse_int(p, &at->exp_bits);
	case AT_MANT_BITS:
		return parse_int(p, &at->mant_bits);
	case AT_CMP_TYPE:	/* compare's FLOAT, TOTALORDER, SIGNED, UNSIGNED */
		if (p->tok->kind != TK_IDENT)	/* another op's type= */
			return skip_value(p);
		at->cmp_type = p->tok;
		advance(p);
		return 0;
	case AT_SLICE:
		return parse_slice(p, at);
	case AT_PADDING:
		return parse_dxd(p, "padding", 2, 3, MAX_ELEMS, &at->padding);
	default:
		return parse_int(p, &at->index);
	}
}

/* attr = IDENT "=" value */
static int parse_attr(struct parser *p, struct inst *in)
{
	const struct tok *key = p->tok;
	int id;

	if (key->kind != TK_IDENT)
		return expected(p, "an attribute name");
	advance(p);
	if (skip(p, "="))
		return p->ret;
	for (id = 0; id < AT_NR; id++)
		if (is_ident(key, attr_names[id]))
			break;
	if (id == AT_NR || !in)
		return skip_value(p);
	if (!in->at) {
		in->at = alloc(p, sizeof(*in->at));
		if (!in->at)
			return p->ret;
		in->at->fgc = 1;	/* XLA's defaults */
		in->at->bgc = 1;
	}
	if (in->at->tok[id])
		return error_at(p, key->loc, "duplicate attribute '%s'",
				attr_names[id]);
	in->at->tok[id] = key;
	in->at->val[id] = p->tok;
	return parse_known_attr(p, in->at, id);
}

/* ---- instructions -------------------------------------------------------- */

static const struct hlo_op *lookup_op(struct parser *p, const struct tok *t)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hlo_ops); i++)
		if (is_ident(t, hlo_ops[i].text))
			return &hlo_ops[i];
	/* refused when built: a computation nothing calls may hold anything */
	for (i = 0; i < ARRAY_SIZE(unsupported_ops); i++)
		if (is_ident(t, unsupported_ops[i]))
			return &op_unsupported;
	if (t->kind == TK_IDENT)
		error_at(p, t->loc, "unknown opcode '%.*s'", (int)t->n, t->s);
	else
		expected(p, "an opcode");
	return NULL;
}

static int parse_call(struct parser *p, struct comp *c, struct inst *in);
static int add_inst(struct parser *p, struct comp *c, struct inst *in);

/*
 * operand = shape? name            (older dumps write each operand's shape)
 *         | shape opcode "(" args ")"   (an instruction written inline)
 */
static int parse_operand(struct parser *p, struct comp *c, struct inst *in,
			 size_t *cap)
{
	const struct tok *t;
	struct hshape sh = { 0 };
	bool has_shape = false;
	struct inst *o;

	if ((p->tok->kind == TK_IDENT && is_punct(peek2(p), "[")) ||
	    is_punct(p->tok, "(")) {
		if (parse_shape(p, &sh, 0))
			return p->ret;
		has_shape = true;
	}
	t = p->tok;
	if (has_shape && t->kind == TK_IDENT && is_punct(peek2(p), "(")) {
		/* a nameless instruction, defined just before its user */
		o = alloc(p, sizeof(*o));
		if (!o)
			return p->ret;
		o->name = t;
		o->shape = sh;
		if (parse_call(p, c, o) || add_inst(p, c, o))
			return p->ret;
	} else {
		t = parse_name(p, "an operand name");
		if (!t)
			return p->ret;
		o = map_get(&c->names, t->s, t->n);
		if (!o)
			return error_at(p, t->loc, "undefined operand '%.*s'",
					(int)t->n, t->s);
	}
	if ((size_t)in->nops == *cap) {
		size_t cap2 = *cap;

		in->ops = grow(p, in->ops, in->nops, cap, sizeof(*in->ops));
		in->op_name = grow(p, in->op_name, in->nops, &cap2,
				   sizeof(*in->op_name));
		if (!in->ops || !in->op_name)
			return p->ret;
	}
	in->op_name[in->nops] = t;
	in->ops[in->nops++] = o;
	return 0;
}

/*
 * args = int                      (parameter)
 *      | literal                  (constant)
 *      | [operand ("," operand)*]
 */
static int parse_args(struct parser *p, struct comp *c, struct inst *in)
{
	size_t cap = 0;

	if (in->op->kind == OK_PARAM) {
		in->arg_tok = p->tok;
		if (parse_int(p, &in->param))
			return p->ret;
		if (in->param < 0)
			return error_at(p, in->arg_tok->loc,
					"negative parameter number");
		return 0;
	}
	if (in->op->kind == OK_CONST)
		return parse_constant(p, in);
	while (!is_punct(p->tok, ")")) {
		if (in->nops && skip(p, ","))
			return p->ret;
		if (parse_operand(p, c, in, &cap))
			return p->ret;
	}
	if (in->op->nin >= 0 && in->nops != in->op->nin)
		return error_at(p, in->op_tok->loc,
				"%s takes %d operand%s, found %d",
				in->op->text, in->op->nin,
				in->op->nin == 1 ? "" : "s", in->nops);
	return 0;
}

static int add_inst(struct parser *p, struct comp *c, struct inst *in)
{
	bool named = !in->op_tok || in->name != in->op_tok;

	if (in->root) {
		if (c->root)
			return error_at(p, in->name->loc,
					"second ROOT in computation '%.*s'",
					(int)c->name->n, c->name->s);
		c->root = in;
	}
	if (in->op->kind == OK_PARAM)
		c->nparams++;
	if (c->last)
		c->last->next = in;
	else
		c->first = in;
	c->last = in;
	return named ? map_put(p, &c->names, in->name->s, in->name->n, in) : 0;
}

/* call = opcode "(" args ")" ("," attr)*   (after the shape) */
static int parse_call(struct parser *p, struct comp *c, struct inst *in)
{
	in->op_tok = p->tok;
	in->op = lookup_op(p, p->tok);
	if (!in->op)
		return p->ret;
	advance(p);
	if (skip(p, "(") || parse_args(p, c, in) || skip(p, ")"))
		return p->ret;
	/*
	 * Inline, "," also separates the user's operands: an attribute is
	 * a "," followed by NAME "=", which no operand is.
	 */
	while (is_punct(p->tok, ",")) {
		const struct tok *t = p->tok + 1;

		if (in->name == in->op_tok &&
		    !(t->kind == TK_IDENT && is_punct(t + 1, "=")))
			break;
		advance(p);
		if (parse_attr(p, in))
			return p->ret;
	}
	return 0;
}

/* instruction = "ROOT"? name "=" shape opcode "(" args ")" ("," attr)* */
static int parse_instruction(struct parser *p, struct comp *c)
{
	struct inst *in = alloc(p, sizeof(*in));

	if (!in)
		return p->ret;
	if (is_ident(p->tok, "ROOT") && !is_punct(peek2(p), "=")) {
		in->root = true;
		advance(p);
	}
	in->name = parse_name(p, "an instruction name");
	if (!in->name)
		return p->ret;
	if (map_get(&c->names, in->name->s, in->name->n))
		return error_at(p, in->name->loc, "duplicate name '%.*s'",
				(int)in->name->n, in->name->s);
	if (skip(p, "=") || parse_shape(p, &in->shape, 0) ||
	    parse_call(p, c, in))
		return p->ret;
	return add_inst(p, c, in);
}

/* ---- computations -------------------------------------------------------- */

/* signature = "(" [name ":" shape ("," name ":" shape)*] ")" "->" shape */
static int parse_signature(struct parser *p)
{
	struct hshape ignored = { 0 };
	bool first = true;

	if (skip(p, "("))
		return p->ret;
	while (!consume(p, ")")) {
		if (!first && skip(p, ","))
			return p->ret;
		first = false;
		if (!parse_name(p, "a parameter name") || skip(p, ":") ||
		    parse_shape(p, &ignored, 0))
			return p->ret;
		memset(&ignored, 0, sizeof(ignored));
	}
	if (skip(p, "->"))
		return p->ret;
	return parse_shape(p, &ignored, 0);
}

/* body = "{" instruction+ "}" */
static int parse_body(struct parser *p, struct comp *c)
{
	const struct tok *open = p->tok;

	if (skip(p, "{"))
		return p->ret;
	while (!consume(p, "}")) {
		if (p->tok->kind == TK_EOF)
			return error_at(p, open->loc,
					"unterminated '{' of computation '%.*s'",
					(int)c->name->n, c->name->s);
		if (parse_instruction(p, c))
			return p->ret;
	}
	if (!c->first)
		return error_at(p, open->loc, "empty computation '%.*s'",
				(int)c->name->n, c->name->s);
	if (!c->root)
		c->root = c->last;	/* XLA's rule */
	return 0;
}

/* computation = "ENTRY"? name signature? body ("," attr)* */
static int parse_computation(struct parser *p, struct comp **last)
{
	struct comp *c = alloc(p, sizeof(*c));
	const struct tok *entry = p->tok;

	if (!c)
		return p->ret;
	if (is_ident(entry, "ENTRY") && is_name(peek2(p))) {
		c->entry = true;
		advance(p);
		if (p->entry)
			return error_at(p, entry->loc, "second ENTRY computation");
		p->entry = c;
	}
	c->name = parse_name(p, "a computation name");
	if (!c->name)
		return p->ret;
	if (map_get(&p->comps, c->name->s, c->name->n))
		return error_at(p, c->name->loc, "duplicate computation '%.*s'",
				(int)c->name->n, c->name->s);
	if (is_punct(p->tok, "(") && parse_signature(p))
		return p->ret;
	if (parse_body(p, c))
		return p->ret;
	while (consume(p, ","))
		if (parse_attr(p, NULL))
			return p->ret;
	*last = c;
	return map_put(p, &p->comps, c->name->s, c->name->n, c);
}

/*
 * frames = ("FileNames" | "FunctionNames" | "FileLocations" |
 *           "StackFrames") (NUM (STR | "{" ... "}"))*
 * The stack-frame tables newer dumps print after the header: skipped.
 */
static int skip_frames(struct parser *p)
{
	static const char *const tables[] = {
		"FileNames", "FunctionNames", "FileLocations", "StackFrames",
	};
	size_t i;

	for (;;) {
		for (i = 0; i < ARRAY_SIZE(tables); i++)
			if (is_ident(p->tok, tables[i]))
				break;
		if (i == ARRAY_SIZE(tables))
			return 0;
		advance(p);
		while (p->tok->kind == TK_NUM) {
			advance(p);
			if (p->tok->kind == TK_STR)
				advance(p);
			else if (!is_punct(p->tok, "{") || skip_group(p))
				return p->ret ? p->ret :
				       expected(p, "a string or '{'");
		}
	}
}

/*
 * module = ("HloModule" name ("," attr)* frames)? computation+ EOF
 * Without ENTRY, the last computation is the entry (XLA's rule).
 */
static int parse_module(struct parser *p)
{
	struct comp *last = NULL;

	if (is_ident(p->tok, "HloModule")) {
		advance(p);
		if (!parse_name(p, "a module name"))
			return p->ret;
		while (consume(p, ","))
			if (parse_attr(p, NULL))
				return p->ret;
		if (skip_frames(p))
			return p->ret;
	} else if (!is_name(p->tok)) {
		return expected(p, "'HloModule' or a computation");
	}
	while (p->tok->kind != TK_EOF)
		if (parse_computation(p, &last))
			return p->ret;
	if (!last)
		return error_at(p, p->tok->loc, "no computation");
	if (!p->entry) {
		p->entry = last;
		last->entry = true;
	}
	return 0;
}

/* ---- build: computations through the builder ----------------------------- */

/*
 * The ENTRY computation is built with its parameters as the graph's (a
 * tuple parameter becomes one graph parameter per leaf); every other
 * computation is built where it is used, with its parameters bound to
 * the caller's values: call and fusion inline it, reduce and
 * reduce-window read its operation off it, a conditional builds each
 * branch and selects, and a while loop is unrolled, its condition built
 * and evaluated at compile time before every iteration.
 */
#define MAX_UNROLL	65536		/* iterations of one while loop */
/* graph nodes a while loop is unrolled into before it loops on the device */
#define MAX_UNROLL_NODES	20000
#define MAX_NODES	(1 << 21)	/* graph nodes unrolling may make */
#define MAX_WINDOW_ELEMS 1024		/* reduce-window: window elements */

static int builder_error(struct parser *p, const struct inst *in, int ret)
{
	const char *msg = vtpu_graph_error(p->g);

	if (ret == -ENOMEM)
		return oom(p);
	return error_at(p, in->op_tok->loc, "%s", msg ? msg : strerror(-ret));
}

static int need(struct parser *p, const struct inst *in, int id)
{
	if (in->at && in->at->tok[id])
		return 0;
	return error_at(p, in->op_tok->loc, "%s needs %s=", in->op->text,
			attr_names[id]);
}

static struct hval array_val(int id)
{
	struct hval v = { .n = -1, .id = id };

	return v;
}

/* The value id of operand @i, which must be an array. */
static int value_of(struct parser *p, const struct inst *in, int i, int *id)
{
	if (in->ops[i]->v.n >= 0)
		return error_at(p, in->op_name[i]->loc,
				"unsupported: tuple '%.*s' as an operand",
				(int)in->op_name[i]->n, in->op_name[i]->s);
	*id = in->ops[i]->v.id;
	return 0;
}

static int values_of(struct parser *p, const struct inst *in, int *ids)
{
	int i;

	for (i = 0; i < in->nops; i++)
		if (value_of(p, in, i, &ids[i]))
			return p->ret;
	return 0;
}

static int array_shape(struct parser *p, const struct inst *in)
{
	if (!in->shape.tuple)
		return 0;
	return error_at(p, in->shape.loc, "expected an array shape");
}

/* The builder's shape of value @id (one it returned: cannot fail). */
static struct vtpu_shape shape_of(struct parser *p, int id)
{
	struct vtpu_shape s = { 0 };

	vtpu_graph_shape(p->g, id, &s);
	return s;
}

static int rank_of(struct parser *p, int id)
{
	return shape_of(p, id).rank;
}

/* A count attribute must match the operand's rank (before the builder reads it). */
static int check_count(struct parser *p, const struct inst *in, int at,
		       int n, int rank)
{
	if (n == rank)
		return 0;
	return error_at(p, in->at->val[at]->loc,
			"%s has %d entries for an operand of rank %d",
			attr_names[at], n, rank);
}

/* The scalar value of constant @c. */
static double const_value(const struct inst *c)
{
	int32_t i32;
	uint32_t u;
	float f;

	switch (c->shape.s.type) {
	case VTPU_F32:
		memcpy(&f, c->data, 4);
		return f;
	case VTPU_BF16:
		u = (uint32_t)*(uint16_t *)c->data << 16;
		memcpy(&f, &u, 4);
		return f;
	case VTPU_S32:
		memcpy(&i32, c->data, 4);
		return i32;
	default:
		return *(uint8_t *)c->data;
	}
}

/* Operand @i must be a scalar known at compile time (pad values, inits). */
static int scalar_const(struct parser *p, const struct inst *in, int i,
			const char *what, double *v)
{
	const struct hval *h = &in->ops[i]->v;

	if (h->n >= 0 || !h->known)
		return error_at(p, in->op_name[i]->loc,
				"unsupported: %s must be a scalar constant",
				what);
	*v = h->k;
	return 0;
}

/* Whether operand @i's HLO type is u32 or u64 (held as s32 bits). */
static bool is_unsigned(const struct inst *in, int i)
{
	const struct hshape *sh = &in->ops[i]->shape;

	return !sh->tuple && hlo_types[sh->htype].kind == HT_UNSIGNED;
}

static int no_unsigned(struct parser *p, const struct inst *in)
{
	int i;

	for (i = 0; i < in->nops; i++)
		if (is_unsigned(in, i))
			return error_at(p, in->op_tok->loc,
					"unsupported: %s of %s values (the device's integers are signed)",
					in->op->text,
					hlo_types[in->ops[i]->shape.htype].name);
	return 0;
}

/* ---- small builders ------------------------------------------------------ */

/* A scalar @v of @type. */
static int scalar_of(struct parser *p, double v, enum vtpu_type type)
{
	struct vtpu_shape s = { .type = type };
	unsigned char d[8] = { 0 };
	int32_t i;
	uint16_t h;
	float f = (float)v;

	switch (type) {
	case VTPU_F32:
		memcpy(d, &f, 4);
		break;
	case VTPU_BF16:
		h = vtpu_f32_to_bf16(f);
		memcpy(d, &h, 2);
		break;
	case VTPU_PRED:
		d[0] = v != 0;
		break;
	default:
		i = (int32_t)v;
		memcpy(d, &i, 4);
		break;
	}
	return vtpu_g_constant(p->g, &s, d);
}

/* Scalar @v, or @like's shape filled with @v, in @like's type. */
static int splat(struct parser *p, double v, int like)
{
	struct vtpu_shape s = shape_of(p, like);
	int c = scalar_of(p, v, s.type);

	if (c < 0 || !s.rank)
		return c;
	return vtpu_g_broadcast(p->g, c, s.rank, s.dims, NULL);
}

/* Scalar @x broadcast to @like's dims (unchanged when it has them). */
static int bcast_like(struct parser *p, int x, int like)
{
	struct vtpu_shape s = shape_of(p, like), xs = shape_of(p, x);

	if (x < 0 || like < 0)
		return x < 0 ? x : like;
	if (xs.rank || !s.rank)
		return x;
	return vtpu_g_broadcast(p->g, x, s.rank, s.dims, NULL);
}

/* A 1-D @v broadcast along dimension @d of @like's dims. */
static int along(struct parser *p, int v, int d, int like)
{
	struct vtpu_shape s = shape_of(p, like);

	return vtpu_g_broadcast(p->g, v, s.rank, s.dims, &d);
}

/* 0, 1, ..., n - 1 as s32 [n]. */
static int iota_s32(struct parser *p, int64_t n)
{
	struct vtpu_shape s = { .type = VTPU_S32, .rank = 1, .dims = { n } };
	int32_t *d;
	int64_t i;

	/* positions must be exact in f32, where integers reduce */
	if (n > (1 << 24))
		return ir_error(&p->g->ir, EINVAL,
				"unsupported: a dimension of %lld to index",
				(long long)n);
	d = alloc_array(p, (size_t)n, sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		d[i] = (int32_t)i;
	return vtpu_g_constant(p->g, &s, d);
}

static int bin(struct parser *p, enum vtpu_binary_op op, int a, int b)
{
	return vtpu_g_binary(p->g, op, a, b);
}

/* pred @a and @b, or @b, not @a (select on the device's pred). */
static int p_and(struct parser *p, int a, int b)
{
	return vtpu_g_select(p->g, a, b, splat(p, 0, a));
}

static int p_or(struct parser *p, int a, int b)
{
	return vtpu_g_select(p->g, a, splat(p, 1, a), b);
}

static int p_not(struct parser *p, int a)
{
	return vtpu_g_select(p->g, a, splat(p, 0, a), splat(p, 1, a));
}

/* @x converted to @type when it is not of it. */
static int to_type(struct parser *p, int x, enum vtpu_type type)
{
	if (x < 0 || shape_of(p, x).type == type)
		return x;
	return vtpu_g_convert(p->g, x, type);
}

/* @x reversed along dimension @d. */
static int reverse_dim(struct parser *p, int x, int d)
{
	int64_t n = shape_of(p, x).dims[d], i;
	struct vtpu_shape s = { .type = VTPU_S32, .rank = 1, .dims = { n } };
	int32_t *idx;

	if (n == 1)
		return x;
	if (n > (1 << 24))
		return ir_error(&p->g->ir, EINVAL,
				"unsupported: reversing a dimension of %lld",
				(long long)n);
	idx = alloc_array(p, (size_t)n, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		idx[i] = (int32_t)(n - 1 - i);
	return vtpu_g_gather(p->g, x, vtpu_g_constant(p->g, &s, idx), d,
			     false);
}

/*
 * Pads @x by @lo and @hi (either may be negative: a slice) with @interior
 * elements between neighbours, all @v. Interior padding is a reshape of
 * dimension d to [n, 1], an edge pad to [n, 1 + i] and a reshape back,
 * less the last i.
 */
static int pad_general(struct parser *p, int x, const int64_t *lo,
		       const int64_t *hi, const int64_t *interior, double v)
{
	struct vtpu_shape s = shape_of(p, x);
	int64_t l[R] = { 0 }, h[R] = { 0 }, st[R] = { 0 }, lim[R];
	bool cut = false;
	int d, k;

	for (d = 0; d < s.rank && x >= 0; d++) {
		int64_t t[R + 1], z[R + 1] = { 0 }, zi[R + 1] = { 0 };
		int64_t n = s.dims[d], in = interior ? interior[d] : 0;

		if (!in || n == 1)
			continue;
		for (k = 0; k < s.rank; k++)
			t[k + (k > d)] = s.dims[k];
		t[d + 1] = 1;
		x = vtpu_g_reshape(p->g, x, s.rank + 1, t);
		zi[d + 1] = in;
		x = vtpu_g_pad(p->g, x, z, zi, v);
		s.dims[d] = n * (1 + in);
		x = vtpu_g_reshape(p->g, x, s.rank, s.dims);
		for (k = 0; k < s.rank; k++)
			lim[k] = s.dims[k];
		lim[d] -= in;
		x = vtpu_g_slice(p->g, x, st, lim, NULL);
		s.dims[d] -= in;
	}
	for (d = 0; d < s.rank; d++) {
		l[d] = lo[d] > 0 ? lo[d] : 0;
		h[d] = hi[d] > 0 ? hi[d] : 0;
		cut |= lo[d] < 0 || hi[d] < 0;
	}
	x = vtpu_g_pad(p->g, x, l, h, v);
	if (!cut || x < 0)
		return x;
	for (d = 0; d < s.rank; d++) {
		st[d] = lo[d] < 0 ? -lo[d] : 0;
		lim[d] = l[d] + s.dims[d] + h[d] - (hi[d] < 0 ? -hi[d] : 0);
		if (lim[d] <= st[d])
			return ir_error(&p->g->ir, EINVAL,
					"pad: negative padding removes every element");
	}
	return vtpu_g_slice(p->g, x, st, lim, NULL);
}

/* ---- compile-time scalars ------------------------------------------------ */

/* @v as the device holds it in @type; false when an integer overflows. */
static bool fit(double *v, enum vtpu_type type)
{
	switch (type) {
	case VTPU_F32:
		*v = (float)*v;
		return true;
	case VTPU_BF16:
		*v = vtpu_bf16_to_f32(vtpu_f32_to_bf16((float)*v));
		return true;
	case VTPU_PRED:
		*v = *v != 0;
		return true;
	default:
		if (isnan(*v) || *v < INT32_MIN || *v > INT32_MAX)
			return false;
		*v = trunc(*v);
		return true;
	}
}

static bool compare_known(enum vtpu_cmp_dir dir, double a, double b)
{
	switch (dir) {
	case VTPU_EQ: return a == b;
	case VTPU_NE: return a != b;
	case VTPU_LT: return a < b;
	case VTPU_LE: return a <= b;
	case VTPU_GT: return a > b;
	default: return a >= b;
	}
}

/*
 * The value of scalar instruction @in when its operands are known: the
 * arithmetic that loop counters, bounds and slice starts go through.
 */
static void fold_known(struct inst *in)
{
	struct hval *v = &in->v;
	double a[3] = { 0 }, r;
	bool is_int;
	int i;

	if (v->n >= 0 || in->shape.tuple || in->shape.s.rank)
		return;
	if (in->op->kind == OK_CONST) {
		v->known = true;
		v->k = const_value(in);
		return;
	}
	if (in->nops > 3)
		return;
	for (i = 0; i < in->nops; i++) {
		const struct hval *o = &in->ops[i]->v;

		if (o->n >= 0 || !o->known || is_unsigned(in, i))
			return;
		a[i] = o->k;
	}
	is_int = in->nops && in->ops[0]->shape.s.type == VTPU_S32;
	switch (in->op->kind) {
	case OK_CONVERT:
	case OK_COPY:
	case OK_RESHAPE:
	case OK_IDENTITY:
	case OK_BITCAST:
		r = a[0];
		break;
	case OK_UNARY:
		if (in->op->arg == VTPU_NEG)
			r = -a[0];
		else if (in->op->arg == VTPU_ABS)
			r = fabs(a[0]);
		else
			return;
		break;
	case OK_BINARY:
		switch (in->op->arg) {
		case VTPU_ADD: r = a[0] + a[1]; break;
		case VTPU_SUB: r = a[0] - a[1]; break;
		case VTPU_MUL: r = a[0] * a[1]; break;
		case VTPU_MAX: r = fmax(a[0], a[1]); break;
		case VTPU_MIN: r = fmin(a[0], a[1]); break;
		case VTPU_DIV:
			if (is_int && !a[1])
				return;
			r = is_int ? trunc(a[0] / a[1]) : a[0] / a[1];
			break;
		default:
			return;
		}
		break;
	case OK_MATH:
		if (in->op->arg != M_REM || !is_int || !a[1])
			return;
		r = fmod(a[0], a[1]);
		break;
	case OK_COMPARE:
		if (!in->at)
			return;
		r = compare_known(in->at->dir, a[0], a[1]);
		break;
	case OK_SELECT:
		r = a[0] ? a[1] : a[2];
		break;
	case OK_CLAMP:
		r = fmin(fmax(a[1], a[0]), a[2]);
		break;
	case OK_LOGIC:
		if (in->shape.s.type != VTPU_PRED)
			return;
		r = in->op->arg == L_NOT ? !a[0] :
		    in->op->arg == L_AND ? (a[0] && a[1]) :
		    in->op->arg == L_OR ? (a[0] || a[1]) : (!a[0] != !a[1]);
		break;
	default:
		return;
	}
	if (!fit(&r, in->shape.s.type))
		return;
	v->known = true;
	v->k = r;
}

/* ---- reductions ---------------------------------------------------------- */

/*
 * A reduction computation: ROOT = add|maximum|minimum|and|or(p0, p1) of
 * its two scalar parameters, of the reduce's type (and = min and or =
 * max on pred).
 */
static int reduce_op(struct parser *p, const struct inst *in,
		     const struct comp *c, enum vtpu_type type,
		     enum vtpu_reduce_op *op)
{
	const struct inst *r = c->root;
	const struct tok *t = in->at->val[AT_TO_APPLY];
	bool bin_ok = r->op->kind == OK_BINARY &&
		      (r->op->arg == VTPU_ADD || r->op->arg == VTPU_MAX ||
		       r->op->arg == VTPU_MIN);
	bool logic_ok = r->op->kind == OK_LOGIC &&
			(r->op->arg == L_AND || r->op->arg == L_OR);

	if (c->nparams != 2 || r->nops != 2 || (!bin_ok && !logic_ok) ||
	    r->ops[0]->op->kind != OK_PARAM || r->ops[1]->op->kind != OK_PARAM ||
	    !((r->ops[0]->param == 0 && r->ops[1]->param == 1) ||
	      (r->ops[0]->param == 1 && r->ops[1]->param == 0)))
		return error_at(p, t->loc,
				"unsupported: to_apply '%.*s' is not add, maximum, minimum, and or or of its parameters",
				(int)c->name->n, c->name->s);
	if (r->shape.tuple || r->shape.s.rank || r->shape.s.type != type ||
	    r->ops[0]->shape.tuple || r->ops[0]->shape.s.rank ||
	    r->ops[1]->shape.tuple || r->ops[1]->shape.s.rank)
		return error_at(p, t->loc,
				"to_apply '%.*s' must combine two scalars of the reduce's type",
				(int)c->name->n, c->name->s);
	if (logic_ok)
		*op = r->op->arg == L_AND ? VTPU_REDUCE_MIN_OP :
		      VTPU_REDUCE_MAX_OP;
	else
		*op = r->op->arg == VTPU_ADD ? VTPU_REDUCE_SUM_OP :
		      r->op->arg == VTPU_MAX ? VTPU_REDUCE_MAX_OP :
		      VTPU_REDUCE_MIN_OP;
	return 0;
}

/* The identity of each reduction in @type: 0, the lowest, the highest. */
static double reduce_identity(enum vtpu_reduce_op op, enum vtpu_type type)
{
	if (type == VTPU_PRED)
		return op == VTPU_REDUCE_MIN_OP;
	if (op == VTPU_REDUCE_SUM_OP)
		return 0;
	if (op == VTPU_REDUCE_MAX_OP)
		return type == VTPU_S32 ? INT32_MIN : -INFINITY;
	return type == VTPU_S32 ? INT32_MAX : INFINITY;
}

static enum vtpu_binary_op combine_op(enum vtpu_reduce_op op)
{
	return op == VTPU_REDUCE_SUM_OP ? VTPU_ADD :
	       op == VTPU_REDUCE_MAX_OP ? VTPU_MAX : VTPU_MIN;
}

/*
 * reduce(@x) by @op over @naxes @axes, then with @init unless it is -1.
 * The device reduces floats: integers go through f32 (exact below 2^24),
 * pred as 0 and 1 (and, or: min, max).
 */
static int reduce_with(struct parser *p, int x, enum vtpu_reduce_op op,
		       int naxes, const int *axes, int init)
{
	enum vtpu_type t = shape_of(p, x).type;
	bool conv = t == VTPU_S32 || t == VTPU_PRED;
	int y;

	x = to_type(p, x, conv ? VTPU_F32 : t);
	y = naxes ? vtpu_g_reduce(p->g, op, x, naxes, axes) : x;
	if (init >= 0 && y >= 0)
		y = bin(p, combine_op(op), y,
			bcast_like(p, to_type(p, init, shape_of(p, y).type), y));
	if (t == VTPU_PRED && y >= 0)
		return vtpu_g_compare(p->g, VTPU_NE, y, splat(p, 0, y));
	return to_type(p, y, t);
}

/*
 * Variadic reduce(values, indices, init, init) whose computation keeps
 * the larger (or smaller) value and the first index among equals: JAX's
 * argmax and argmin. The computation's first compare of the two values
 * says which: GT/GE keeps the larger.
 */
static int build_argreduce(struct parser *p, struct inst *in)
{
	const struct comp *c = in->at->to_apply;
	const struct inst *q;
	enum vtpu_reduce_op op = VTPU_REDUCE_MAX_OP;
	bool found = false;
	int v[4], m, eq, cand, idx;
	struct hval *e;

	if (values_of(p, in, v))
		return p->ret;
	for (q = c->first; q; q = q->next) {
		if (q->op->kind != OK_COMPARE || !q->at || q->nops != 2 ||
		    q->ops[0]->op->kind != OK_PARAM ||
		    q->ops[1]->op->kind != OK_PARAM)
			continue;
		if (q->ops[0]->param == 0 && q->ops[1]->param == 2 &&
		    q->at->dir != VTPU_EQ && q->at->dir != VTPU_NE) {
			op = q->at->dir == VTPU_GT || q->at->dir == VTPU_GE ?
			     VTPU_REDUCE_MAX_OP : VTPU_REDUCE_MIN_OP;
			found = true;
			break;
		}
	}
	if (!found || c->nparams != 4 || !c->root->shape.tuple ||
	    shape_of(p, v[1]).type != VTPU_S32)
		return error_at(p, in->at->val[AT_TO_APPLY]->loc,
				"unsupported: variadic reduce other than argmax or argmin");
	m = reduce_with(p, v[0], op, in->at->dims.n, in->at->dims.v, v[2]);
	eq = m;
	if (m >= 0) {	/* m's dims are v's others */
		int keep[R], nk = 0, d, a;

		for (d = 0; d < rank_of(p, v[0]); d++) {
			for (a = 0; a < in->at->dims.n; a++)
				if (in->at->dims.v[a] == d)
					break;
			if (a == in->at->dims.n)
				keep[nk++] = d;
		}
		eq = vtpu_g_broadcast(p->g, m, rank_of(p, v[0]),
				      shape_of(p, v[0]).dims, keep);
	}
	eq = vtpu_g_compare(p->g, VTPU_EQ, v[0], eq);
	cand = vtpu_g_select(p->g, eq, v[1], splat(p, 1 << 24, v[1]));
	idx = reduce_with(p, cand, VTPU_REDUCE_MIN_OP, in->at->dims.n,
			  in->at->dims.v, -1);
	if (m < 0 || idx < 0)
		return builder_error(p, in, m < 0 ? m : idx);
	e = alloc_array(p, 2, sizeof(*e));
	if (!e)
		return p->ret;
	e[0] = array_val(m);
	e[1] = array_val(idx);
	in->v.n = 2;
	in->v.e = e;
	return 0;
}

/* reduce(x, init), dimensions={...}, to_apply=c */
static int build_reduce(struct parser *p, struct inst *in)
{
	enum vtpu_reduce_op op = VTPU_REDUCE_SUM_OP;
	double init = 0;
	int x = 0, y, iv = -1;

	if (need(p, in, AT_DIMENSIONS) || need(p, in, AT_TO_APPLY))
		return p->ret;
	if (in->nops == 4)
		return build_argreduce(p, in);
	if (in->nops != 2)
		return error_at(p, in->op_tok->loc, in->nops % 2 ?
				"reduce takes 2 operands, found %d" :
				"unsupported: variadic reduce (%d operands)",
				in->nops);
	if (value_of(p, in, 0, &x) || value_of(p, in, 1, &iv) ||
	    reduce_op(p, in, in->at->to_apply, shape_of(p, x).type, &op))
		return p->ret;
	/* an init that is the identity changes nothing */
	if (in->ops[1]->v.known) {
		init = in->ops[1]->v.k;
		if (init == reduce_identity(op, shape_of(p, x).type) ||
		    (op == VTPU_REDUCE_SUM_OP && init == 0))
			iv = -1;
	}
	y = reduce_with(p, x, op, in->at->dims.n, in->at->dims.v, iv);
	if (y < 0)
		return builder_error(p, in, y);
	in->v = array_val(y);
	return 0;
}

/*
 * reduce-window(x, init), window={size stride pad rhs_dilate}: pad with
 * the init (every window starts from it), then one strided slice per
 * window element, combined.
 */
static int build_reduce_window(struct parser *p, struct inst *in)
{
	const struct dxd *w = in->at ? in->at->win : NULL;
	int64_t lo[R], hi[R], out[R], k[R] = { 0 }, st[R], lim[R], str[R];
	enum vtpu_reduce_op op = VTPU_REDUCE_SUM_OP;
	struct vtpu_shape s;
	int64_t elems = 1;
	double init = 0;
	int x = 0, acc = -1, d, rank;

	if (in->nops != 2)
		return error_at(p, in->op_tok->loc,
				"unsupported: reduce-window of %d operands",
				in->nops);
	if (need(p, in, AT_WINDOW) || need(p, in, AT_TO_APPLY) ||
	    value_of(p, in, 0, &x) ||
	    scalar_const(p, in, 1, "the reduce-window's init", &init) ||
	    reduce_op(p, in, in->at->to_apply, shape_of(p, x).type, &op))
		return p->ret;
	s = shape_of(p, x);
	rank = s.rank;
	if (w[WF_SIZE].n != rank)
		return error_at(p, in->at->val[AT_WINDOW]->loc,
				"window has %d dimensions for an operand of rank %d",
				w[WF_SIZE].n, rank);
	for (d = 0; d < rank; d++) {
		int64_t size = w[WF_SIZE].v[d][0];
		int64_t dil = w[WF_RHS_DILATE].n ? w[WF_RHS_DILATE].v[d][0] : 1;
		int64_t span;

		str[d] = w[WF_STRIDE].n ? w[WF_STRIDE].v[d][0] : 1;
		lo[d] = w[WF_PAD].n ? w[WF_PAD].v[d][0] : 0;
		hi[d] = w[WF_PAD].n ? w[WF_PAD].v[d][1] : 0;
		if ((w[WF_LHS_DILATE].n && w[WF_LHS_DILATE].v[d][0] != 1) ||
		    size < 1 || str[d] < 1 || dil < 1)
			return error_at(p, in->at->val[AT_WINDOW]->loc,
					"unsupported: reduce-window with base dilation");
		span = (size - 1) * dil + 1;
		out[d] = (s.dims[d] + lo[d] + hi[d] - span) / str[d] + 1;
		if (s.dims[d] + lo[d] + hi[d] < span)
			return error_at(p, in->at->val[AT_WINDOW]->loc,
					"the window is larger than the padded operand");
		elems *= size;
		if (elems > MAX_WINDOW_ELEMS)
			return error_at(p, in->at->val[AT_WINDOW]->loc,
					"unsupported: a window of more than %d elements",
					MAX_WINDOW_ELEMS);
	}
	x = pad_general(p, x, lo, hi, NULL, init);
	for (;;) {
		int sl;

		for (d = 0; d < rank; d++) {
			int64_t dil = w[WF_RHS_DILATE].n ?
				      w[WF_RHS_DILATE].v[d][0] : 1;

			st[d] = k[d] * dil;
			lim[d] = st[d] + (out[d] - 1) * str[d] + 1;
		}
		sl = vtpu_g_slice(p->g, x, st, lim, str);
		acc = acc < 0 ? sl : bin(p, combine_op(op), acc, sl);
		if (acc < 0)
			return builder_error(p, in, acc);
		for (d = rank - 1; d >= 0; d--) {
			if (++k[d] < w[WF_SIZE].v[d][0])
				break;
			k[d] = 0;
		}
		if (d < 0)
			break;
	}
	/* a window wholly in the padding holds the init alone: as XLA */
	in->v = array_val(acc);
	return 0;
}

/*
 * select-and-scatter(operand, source, init), window=, select=, scatter=
 * (max pooling's gradient): in each window of the operand, the element
 * select picks (scanning the window in order, the current choice stays
 * while select(current, next) holds; padding is never chosen) receives
 * the window's source value, added (scatter must be an add) to init.
 * With the window's k offsets as strided slices: the choice and its
 * offset as a running select over them, select applied elementwise;
 * then each offset's share of the source, spread back onto the operand
 * by interior padding.
 */
static bool adds_params(const struct comp *c);
static int build_comp(struct parser *p, struct comp *c, int nargs,
		      const struct hval *args, const struct tok *site,
		      struct hval *out);

static int build_select_scatter(struct parser *p, struct inst *in)
{
	const struct dxd *w = in->at ? in->at->win : NULL;
	int64_t lo[R] = { 0 }, hi[R] = { 0 }, out[R], k[R] = { 0 }, st[R], lim[R], str[R];
	int64_t pdims[R], plo[R], phi[R], inter[R];
	int x = 0, src = 0, valid, sel = -1, idx = -1, have = -1, res, d;
	int rank, o = 0, nwin = 1, i;
	struct vtpu_shape s, ss;
	struct hval args[2], r;
	double init = 0;

	if (need(p, in, AT_WINDOW) || need(p, in, AT_SELECT) ||
	    need(p, in, AT_SCATTER) || value_of(p, in, 0, &x) ||
	    value_of(p, in, 1, &src) ||
	    scalar_const(p, in, 2, "the select-and-scatter's init", &init))
		return p->ret;
	if (!adds_params(in->at->scatter))
		return error_at(p, in->at->val[AT_SCATTER]->loc,
				"unsupported: a select-and-scatter whose scatter is not an add");
	if (in->at->select->nparams != 2)
		return error_at(p, in->at->val[AT_SELECT]->loc,
				"select takes 2 parameters");
	s = shape_of(p, x);
	ss = shape_of(p, src);
	rank = s.rank;
	if (w[WF_SIZE].n != rank || !rank)
		return error_at(p, in->at->val[AT_WINDOW]->loc,
				"window has %d dimensions for an operand of rank %d",
				w[WF_SIZE].n, rank);
	for (d = 0; d < rank; d++) {
		int64_t size = w[WF_SIZE].v[d][0];

		str[d] = w[WF_STRIDE].n ? w[WF_STRIDE].v[d][0] : 1;
		lo[d] = w[WF_PAD].n ? w[WF_PAD].v[d][0] : 0;
		hi[d] = w[WF_PAD].n ? w[WF_PAD].v[d][1] : 0;
		if ((w[WF_LHS_DILATE].n && w[WF_LHS_DILATE].v[d][0] != 1) ||
		    (w[WF_RHS_DILATE].n && w[WF_RHS_DILATE].v[d][0] != 1) ||
		    size < 1 || str[d] < 1 || lo[d] < 0 || hi[d] < 0)
			return error_at(p, in->at->val[AT_WINDOW]->loc,
					"unsupported: a select-and-scatter window with dilation or negative padding");
		pdims[d] = s.dims[d] + lo[d] + hi[d];
		if (pdims[d] < size)
			return error_at(p, in->at->val[AT_WINDOW]->loc,
					"the window is larger than the padded operand");
		out[d] = (pdims[d] - size) / str[d] + 1;
		if (ss.rank != rank || ss.dims[d] != out[d])
			return error_at(p, in->op_tok->loc,
					"the source must have the windows' shape");
		nwin *= (int)size;
		if (nwin > MAX_WINDOW_ELEMS)
			return error_at(p, in->at->val[AT_WINDOW]->loc,
					"unsupported: a window of more than %d elements",
					MAX_WINDOW_ELEMS);
	}
	/* where the operand is, in the padded one: padding is never chosen */
	valid = pad_general(p, vtpu_g_broadcast(p->g, scalar_of(p, 1, VTPU_F32),
						rank, s.dims, NULL),
			    lo, hi, NULL, 0);
	x = pad_general(p, x, lo, hi, NULL, 0);
	for (o = 0; o < nwin; o++) {
		int v, ok, keep, take;

		for (d = 0; d < rank; d++) {
			st[d] = k[d];
			lim[d] = st[d] + (out[d] - 1) * str[d] + 1;
		}
		v = vtpu_g_slice(p->g, x, st, lim, str);
		ok = vtpu_g_slice(p->g, valid, st, lim, str);
		ok = vtpu_g_compare(p->g, VTPU_NE, ok, splat(p, 0, ok));
		if (v < 0 || ok < 0)
			return builder_error(p, in, v < 0 ? v : ok);
		if (!o) {
			sel = v;
			idx = vtpu_g_broadcast(p->g, scalar_of(p, 0, VTPU_S32),
					       rank, out, NULL);
			have = ok;
		} else {
			args[0] = array_val(sel);
			args[1] = array_val(v);
			memset(&p->map, 0, sizeof(p->map));
			p->map.rank = rank;
			memcpy(p->map.dims, out, rank * sizeof(*out));
			i = build_comp(p, in->at->select, 2, args, in->op_tok, &r);
			memset(&p->map, 0, sizeof(p->map));
			if (i)
				return p->ret;
			if (r.n >= 0 || shape_of(p, r.id).type != VTPU_PRED)
				return error_at(p, in->at->val[AT_SELECT]->loc,
						"select must give a pred");
			keep = r.id;
			take = p_and(p, ok, p_or(p, p_not(p, have), p_not(p, keep)));
			sel = vtpu_g_select(p->g, take, v, sel);
			idx = vtpu_g_select(p->g, take,
					    vtpu_g_broadcast(p->g, scalar_of(p, o, VTPU_S32),
							     rank, out, NULL), idx);
			have = p_or(p, have, ok);
		}
		for (d = rank - 1; d >= 0; d--) {
			if (++k[d] < w[WF_SIZE].v[d][0])
				break;
			k[d] = 0;
		}
	}
	/* each offset's share of the source, back where it came from */
	res = vtpu_g_broadcast(p->g, scalar_of(p, init, s.type), rank, pdims,
			       NULL);
	memset(k, 0, sizeof(k));
	for (o = 0; o < nwin; o++) {
		int mine = p_and(p, have, vtpu_g_compare(p->g, VTPU_EQ, idx,
					vtpu_g_broadcast(p->g, scalar_of(p, o, VTPU_S32),
							 rank, out, NULL)));
		int part = vtpu_g_select(p->g, mine, src, splat(p, 0, src));

		for (d = 0; d < rank; d++) {
			plo[d] = k[d];
			inter[d] = str[d] - 1;
			phi[d] = pdims[d] - (k[d] + (out[d] - 1) * str[d] + 1);
		}
		res = bin(p, VTPU_ADD, res, pad_general(p, part, plo, phi, inter, 0));
		if (res < 0)
			return builder_error(p, in, res);
		for (d = rank - 1; d >= 0; d--) {
			if (++k[d] < w[WF_SIZE].v[d][0])
				break;
			k[d] = 0;
		}
	}
	for (d = 0; d < rank; d++) {
		st[d] = lo[d];
		lim[d] = lo[d] + s.dims[d];
	}
	res = vtpu_g_slice(p->g, res, st, lim, NULL);
	if (res < 0)
		return builder_error(p, in, res);
	in->v = array_val(res);
	return 0;
}

/* ---- convolution --------------------------------------------------------- */

/*
 * dim_labels = lhs "_" rhs "->" out: lhs and out of 'b', 'f' and the
 * spatial digits, rhs of 'o', 'i' and the digits. The permutations that
 * make lhs NCHW, rhs OIHW, and NCHW the output.
 */
static bool parse_labels(const struct tok *t, int rank, int *lp, int *rp,
			 int *op)
{
	const char *s = t->s, *e = t->s + t->n;
	const char *const parts[3][2] = { { "b", "f" }, { "o", "i" },
					  { "b", "f" } };
	int *perm[3] = { lp, rp, op }, k, n, i;

	for (k = 0; k < 3; k++) {
		n = 0;
		for (i = 0; i < rank; i++)
			perm[k][i] = -1;
		while (s < e && *s != '_' && *s != '-') {
			int slot;

			if (*s == parts[k][0][0])
				slot = 0;
			else if (*s == parts[k][1][0])
				slot = 1;
			else if (*s >= '0' && *s - '0' < rank - 2)
				slot = 2 + (*s - '0');
			else
				return false;
			if (n == rank || perm[k][slot] >= 0)
				return false;
			perm[k][slot] = n++;
			s++;
		}
		if (n != rank)
			return false;
		if (k == 0 && (s == e || *s++ != '_'))
			return false;
		if (k == 1 && (e - s < 2 || s[0] != '-' || s[1] != '>'))
			return false;
		if (k == 1)
			s += 2;
	}
	return s == e;
}

/* vtpu_g_transpose(), unless @perm is the identity. */
static int permute(struct parser *p, int x, const int *perm)
{
	int i, rank = x < 0 ? 0 : rank_of(p, x);

	for (i = 0; i < rank; i++)
		if (perm[i] != i)
			return vtpu_g_transpose(p->g, x, perm);
	return x;
}

/* The inverse of permutation @perm of @n. */
static void invert(const int *perm, int n, int *inv)
{
	for (int i = 0; i < n; i++)
		inv[perm[i]] = i;
}

/*
 * convolution(lhs, rhs), window=..., dim_labels=...: any labels of 1 or
 * 2 spatial dimensions, by transposes to NCHW and OIHW and back (one
 * spatial dimension gets a second of size 1); base dilation (lhs_dilate,
 * transposed convolutions) as interior padding of the input; window
 * reversal as a reversed kernel.
 */
static int build_conv(struct parser *p, struct inst *in)
{
	struct vtpu_conv_params cp = { 0 };
	const struct attrs *at = in->at;
	const struct dxd *w = at ? at->win : NULL;
	int lp[R], rp[R], op[R], inv[R], x = 0, y = 0, i, f, rank, ns, res;
	int64_t ilo[R] = { 0 }, ihi[R] = { 0 }, interior[R] = { 0 };
	enum vtpu_type rt = in->shape.s.type;
	bool dilate = false;

	if (need(p, in, AT_DIM_LABELS) || need(p, in, AT_WINDOW) ||
	    array_shape(p, in) ||
	    value_of(p, in, 0, &x) || value_of(p, in, 1, &y))
		return p->ret;
	rank = rank_of(p, x);
	ns = rank - 2;
	if (ns < 1 || ns > 2 || rank_of(p, y) != rank ||
	    !parse_labels(at->labels, rank, lp, rp, op))
		return error_at(p, at->labels->loc,
				"unsupported dim_labels '%.*s' (1 or 2 spatial dimensions)",
				(int)at->labels->n, at->labels->s);
	for (f = 0; f < WF_NR; f++)
		if (w[f].n && w[f].n != ns)
			return error_at(p, at->val[AT_WINDOW]->loc,
					"window %s must have %d dimensions",
					window_fields[f], ns);
	if (w[WF_SIZE].n != ns)
		return error_at(p, at->val[AT_WINDOW]->loc,
				"window needs size=");
	if (at->bgc != 1)
		return error_at(p, at->val[AT_BGC]->loc,
				"unsupported: batch_group_count");
	if (at->fgc < 1 || at->fgc > INT32_MAX)
		return error_at(p, at->val[AT_FGC]->loc,
				"bad feature_group_count");
	/* NCHW and OIHW; mixed precision computes in the result's type */
	x = permute(p, to_type(p, x, rt == VTPU_F32 ? rt :
				shape_of(p, x).type), lp);
	y = permute(p, to_type(p, y, rt == VTPU_F32 ? rt :
				shape_of(p, y).type), rp);
	for (i = 0; i < ns; i++) {
		if (w[WF_REVERSAL].n && w[WF_REVERSAL].v[i][0])
			y = reverse_dim(p, y, 2 + i);
		if (w[WF_LHS_DILATE].n && w[WF_LHS_DILATE].v[i][0] != 1) {
			if (w[WF_LHS_DILATE].v[i][0] < 1)
				return error_at(p, at->val[AT_WINDOW]->loc,
						"bad lhs_dilate");
			interior[2 + i] = w[WF_LHS_DILATE].v[i][0] - 1;
			dilate = true;
		}
		if (w[WF_SIZE].v[i][0] != shape_of(p, y).dims[2 + i])
			return error_at(p, at->val[AT_WINDOW]->loc,
					"window size does not match the kernel");
		cp.stride[i] = w[WF_STRIDE].n ? (int)w[WF_STRIDE].v[i][0] : 1;
		cp.dilation[i] = w[WF_RHS_DILATE].n ?
				 (int)w[WF_RHS_DILATE].v[i][0] : 1;
		/* negative padding crops the input */
		ilo[2 + i] = w[WF_PAD].v[i][0] < 0 ? w[WF_PAD].v[i][0] : 0;
		ihi[2 + i] = w[WF_PAD].v[i][1] < 0 ? w[WF_PAD].v[i][1] : 0;
		cp.pad_lo[i] = (int)(w[WF_PAD].v[i][0] > 0 ? w[WF_PAD].v[i][0] : 0);
		cp.pad_hi[i] = (int)(w[WF_PAD].v[i][1] > 0 ? w[WF_PAD].v[i][1] : 0);
		if (ilo[2 + i] || ihi[2 + i])
			dilate = true;
	}
	if (dilate)
		x = pad_general(p, x, ilo, ihi, interior, 0);
	if (ns == 1) {	/* [N, C, W] as [N, C, W, 1] */
		struct vtpu_shape a = shape_of(p, x), b = shape_of(p, y);

		a.dims[3] = b.dims[3] = 1;
		x = vtpu_g_reshape(p->g, x, 4, a.dims);
		y = vtpu_g_reshape(p->g, y, 4, b.dims);
		cp.stride[1] = cp.dilation[1] = 1;
	}
	cp.groups = (int)at->fgc;
	res = vtpu_g_conv2d(p->g, x, y, &cp);
	if (ns == 1 && res >= 0) {
		struct vtpu_shape a = shape_of(p, res);

		res = vtpu_g_reshape(p->g, res, 3, a.dims);
	}
	invert(op, rank, inv);
	res = permute(p, res, inv);
	return to_type(p, res, rt);
}

/* dot(a, b) with XLA's dimension numbers; a result type other than the
 * operands' (bf16 x bf16 -> f32) computes in it when it is f32. */
/* The largest magnitude a value of HLO type @t holds (integers). */
static double int_bound(int t)
{
	return fmax(fabs(hlo_types[t].lo), fabs(hlo_types[t].hi));
}

/*
 * An integer dot (s8 x s8 -> s32, as quantized models make) on the MXU,
 * which accumulates in f32: exact when no partial sum can pass 2^24,
 * which the operand types bound (|a| |b| K); refused otherwise.
 */
static int int_dot(struct parser *p, const struct inst *in, int a, int b,
		   const struct vtpu_dot_dims *d)
{
	struct vtpu_shape sa = shape_of(p, a);
	double k = 1;
	int i, y;

	for (i = 0; i < d->ncontract; i++)
		if (d->lhs_contract[i] >= 0 && d->lhs_contract[i] < sa.rank)
			k *= (double)sa.dims[d->lhs_contract[i]];
	if (sa.type != VTPU_S32 || shape_of(p, b).type != VTPU_S32 ||
	    in->shape.s.type != VTPU_S32 ||
	    in->ops[0]->shape.htype < 0 || in->ops[1]->shape.htype < 0 ||
	    hlo_types[in->ops[0]->shape.htype].kind != HT_PLAIN ||
	    hlo_types[in->ops[1]->shape.htype].kind != HT_PLAIN ||
	    int_bound(in->ops[0]->shape.htype) *
	    int_bound(in->ops[1]->shape.htype) * k > 0x1p24)
		return error_at(p, in->op_tok->loc,
				"unsupported: an integer dot whose sums can pass 2^24 (the MXU accumulates in f32; 8- and 16-bit operands over short enough sums are exact)");
	y = vtpu_g_dot(p->g, to_type(p, a, VTPU_F32), to_type(p, b, VTPU_F32), d);
	return to_type(p, y, VTPU_S32);
}

static int build_dot(struct parser *p, struct inst *in)
{
	static const struct ilist none;
	struct vtpu_dot_dims d = { 0 };
	const struct attrs *at = in->at;
	const struct ilist *lb = at ? &at->lhs_batch : &none;
	const struct ilist *rb = at ? &at->rhs_batch : &none;
	const struct ilist *lc = at ? &at->lhs_contract : &none;
	const struct ilist *rc = at ? &at->rhs_contract : &none;
	enum vtpu_type rt = in->shape.s.type;
	int a = 0, b = 0;

	if (array_shape(p, in) || value_of(p, in, 0, &a) ||
	    value_of(p, in, 1, &b))
		return p->ret;
	if (lb->n != rb->n || lc->n != rc->n)
		return error_at(p, in->op_tok->loc,
				"lhs and rhs dimension lists differ in length");
	d.nbatch = lb->n;
	d.ncontract = lc->n;
	memcpy(d.lhs_batch, lb->v, sizeof(d.lhs_batch));
	memcpy(d.rhs_batch, rb->v, sizeof(d.rhs_batch));
	memcpy(d.lhs_contract, lc->v, sizeof(d.lhs_contract));
	memcpy(d.rhs_contract, rc->v, sizeof(d.rhs_contract));
	if (rt == VTPU_S32 || shape_of(p, a).type == VTPU_S32 ||
	    shape_of(p, b).type == VTPU_S32)
		return int_dot(p, in, a, b, &d);
	if (rt == VTPU_F32) {
		a = to_type(p, a, rt);
		b = to_type(p, b, rt);
	} else if (shape_of(p, a).type != shape_of(p, b).type) {
		b = to_type(p, b, shape_of(p, a).type);
	}
	return to_type(p, vtpu_g_dot(p->g, a, b, &d), rt);
}

/* ---- slices and indexing ------------------------------------------------- */

static int build_slice(struct parser *p, struct inst *in)
{
	int a = 0;

	if (need(p, in, AT_SLICE) || value_of(p, in, 0, &a) ||
	    check_count(p, in, AT_SLICE, in->at->nslice, rank_of(p, a)))
		return p->ret;
	return vtpu_g_slice(p->g, a, in->at->start, in->at->limit,
			    in->at->stride);
}

/* pad(x, v), padding=lo_hi(_interior)?x... (negative: a crop) */
static int build_pad(struct parser *p, struct inst *in)
{
	int64_t lo[R], hi[R], interior[R];
	const struct dxd *d;
	double v = 0;
	int a = 0, i;

	if (need(p, in, AT_PADDING) || value_of(p, in, 0, &a) ||
	    scalar_const(p, in, 1, "the pad value", &v))
		return p->ret;
	d = &in->at->padding;
	if (check_count(p, in, AT_PADDING, d->n, rank_of(p, a)))
		return p->ret;
	for (i = 0; i < d->n; i++) {
		if (d->v[i][2] < 0)
			return error_at(p, in->at->val[AT_PADDING]->loc,
					"negative interior padding");
		lo[i] = d->v[i][0];
		hi[i] = d->v[i][1];
		interior[i] = d->v[i][2];
	}
	return pad_general(p, a, lo, hi, interior, v);
}

/* Start index operand @i, clamped to [0, @hi], as an s32 scalar. */
static int start_index(struct parser *p, const struct inst *in, int i,
		       int64_t hi, bool *known, int64_t *k)
{
	const struct hval *h = &in->ops[i]->v;
	int x;

	if (h->n >= 0 || rank_of(p, h->id))
		return error_at(p, in->op_name[i]->loc,
				"a start index must be a scalar");
	if (h->known) {
		*known = true;
		*k = h->k < 0 ? 0 : h->k > (double)hi ? hi : (int64_t)h->k;
		return scalar_of(p, (double)*k, VTPU_S32);
	}
	*known = false;
	x = to_type(p, h->id, VTPU_S32);
	x = bin(p, VTPU_MAX, x, scalar_of(p, 0, VTPU_S32));
	return bin(p, VTPU_MIN, x, scalar_of(p, (double)hi, VTPU_S32));
}

/*
 * dynamic-slice(x, s0, s1, ...), dynamic_slice_sizes={...}: a static
 * slice where the starts are known, else a gather of the rows
 * clamp(start) + iota along each dimension that moves.
 */
static int build_dslice(struct parser *p, struct inst *in)
{
	int64_t st[R], lim[R];
	int x = 0, d, rank, starts[R];
	bool known[R];
	struct vtpu_shape s;

	if (need(p, in, AT_DS_SIZES) || value_of(p, in, 0, &x))
		return p->ret;
	s = shape_of(p, x);
	rank = s.rank;
	if (in->nops != rank + 1)
		return error_at(p, in->op_tok->loc,
				"dynamic-slice takes the operand and %d start indices, found %d operands",
				rank, in->nops);
	if (check_count(p, in, AT_DS_SIZES, in->at->ds_sizes.n, rank))
		return p->ret;
	for (d = 0; d < rank; d++) {
		int64_t size = in->at->ds_sizes.v[d];

		if (size < 1 || size > s.dims[d])
			return error_at(p, in->at->val[AT_DS_SIZES]->loc,
					"slice size %lld outside dimension %d of %lld",
					(long long)size, d, (long long)s.dims[d]);
		starts[d] = start_index(p, in, 1 + d, s.dims[d] - size,
					&known[d], &st[d]);
		if (p->ret)
			return p->ret;
		if (!known[d])
			st[d] = 0;
		lim[d] = known[d] ? st[d] + size : s.dims[d];
	}
	x = vtpu_g_slice(p->g, x, st, lim, NULL);
	for (d = 0; d < rank && x >= 0; d++) {
		int64_t size = in->at->ds_sizes.v[d];
		int idx;

		if (known[d])
			continue;
		idx = vtpu_g_broadcast(p->g, starts[d], 1, &size, NULL);
		idx = bin(p, VTPU_ADD, idx, iota_s32(p, size));
		x = vtpu_g_gather(p->g, x, idx, d, false);
	}
	return x;
}

/*
 * dynamic-update-slice(x, u, s0, s1, ...): u where its window lies, x
 * elsewhere. Along each dimension, position i of the result reads row
 * i - start of u (clamped), and is inside the window when 0 <= i - start
 * < size; a gather spreads u to x's shape, and a select on the window
 * mask merges.
 */
static int build_dus(struct parser *p, struct inst *in)
{
	struct vtpu_shape s, us;
	int x = 0, u = 0, d, rank, mask = -1;

	if (value_of(p, in, 0, &x) || value_of(p, in, 1, &u))
		return p->ret;
	s = shape_of(p, x);
	us = shape_of(p, u);
	rank = s.rank;
	if (in->nops != rank + 2 || us.rank != rank)
		return error_at(p, in->op_tok->loc,
				"dynamic-update-slice takes the operand, an update of its rank and %d start indices",
				rank);
	for (d = 0; d < rank; d++) {
		int64_t n = s.dims[d], size = us.dims[d], k;
		int start, pos, inside, idx;
		bool known;

		if (size > n)
			return error_at(p, in->op_name[1]->loc,
					"the update is larger than the operand in dimension %d",
					d);
		start = start_index(p, in, 2 + d, n - size, &known, &k);
		if (p->ret)
			return p->ret;
		if (size == n)
			continue;
		pos = bin(p, VTPU_SUB, iota_s32(p, n),
			  vtpu_g_broadcast(p->g, start, 1, &n, NULL));
		inside = p_and(p, vtpu_g_compare(p->g, VTPU_GE, pos, splat(p, 0, pos)),
			       vtpu_g_compare(p->g, VTPU_LT, pos,
					      splat(p, (double)size, pos)));
		idx = bin(p, VTPU_MAX, pos, splat(p, 0, pos));
		idx = bin(p, VTPU_MIN, idx, splat(p, (double)(size - 1), pos));
		u = vtpu_g_gather(p->g, u, idx, d, false);
		inside = along(p, inside, d, x);
		mask = mask < 0 ? inside : p_and(p, mask, inside);
		if (u < 0 || mask < 0)
			return builder_error(p, in, u < 0 ? u : mask);
	}
	if (mask < 0)	/* the update covers the operand */
		return u;
	return vtpu_g_select(p->g, mask, u, x);
}

static bool in_list(const struct ilist *l, int v)
{
	for (int i = 0; i < l->n; i++)
		if (l->v[i] == v)
			return true;
	return false;
}

/*
 * gather(x, indices) with XLA's dimension numbers, where each indexed
 * dimension (start_index_map) has slice size 1 and the others are taken
 * from 0 (jnp.take, x[idx], embedding lookups, index_select, 2-D point
 * gathers). The indexed dimensions move to the front and flatten into
 * one, the index vectors become flat row numbers (each index clamped
 * into its dimension, as XLA clamps starts), one gather takes the rows,
 * and reshape and transpose put batch and offset dimensions where
 * offset_dims says.
 */
static int build_gather(struct parser *p, struct inst *in)
{
	const struct attrs *at = in->at;
	struct vtpu_shape xs, is;
	int x = 0, ix = 0, perm[R], np = 0, d, j, m, rank, out_rank;
	int64_t st[R] = { 0 }, lim[R], dims[R], nb = 1, flat_n = 1, stride;
	int64_t bdims[R], g_dims[2 * R], nbd = 0;
	int flat = -1, ivd, y, operm[R];
	int64_t wz = 1, wdims[R + 1];
	bool windows = false;

	if (need(p, in, AT_START_MAP) || need(p, in, AT_SLICE_SIZES) ||
	    array_shape(p, in) || value_of(p, in, 0, &x) ||
	    value_of(p, in, 1, &ix))
		return p->ret;
	if (at->obatch.n || at->sbatch.n)
		return error_at(p, in->op_tok->loc,
				"unsupported: gather with batching dimensions");
	xs = shape_of(p, x);
	is = shape_of(p, ix);
	rank = xs.rank;
	m = at->start_map.n;
	ivd = at->tok[AT_IVD] ? (int)at->ivd : is.rank;
	if (check_count(p, in, AT_SLICE_SIZES, at->slice_sizes.n, rank))
		return p->ret;
	if (ivd < 0 || ivd > is.rank || (ivd < is.rank ? is.dims[ivd] : 1) != m ||
	    m < 1)
		return error_at(p, in->op_tok->loc,
				"bad index_vector_dim or start_index_map");
	for (d = 0; d < rank; d++) {
		bool mapped = in_list(&at->start_map, d);
		int64_t size = at->slice_sizes.v[d];

		if (size < 1 || size > xs.dims[d] ||
		    (in_list(&at->collapsed, d) && (size != 1 || !mapped)))
			return error_at(p, at->val[AT_SLICE_SIZES]->loc,
					"unsupported: gather slice size %lld of dimension %d",
					(long long)size, d);
		lim[d] = mapped ? xs.dims[d] : size;
		windows |= mapped && size > 1;
	}
	x = vtpu_g_slice(p->g, x, st, lim, NULL);
	/* indexed dimensions first, in start_index_map order, flattened */
	for (j = 0; j < m; j++) {
		if (at->start_map.v[j] < 0 || at->start_map.v[j] >= rank)
			return error_at(p, at->val[AT_START_MAP]->loc,
					"start_index_map names dimension %d of a rank %d operand",
					at->start_map.v[j], rank);
		perm[np++] = at->start_map.v[j];
		flat_n *= xs.dims[at->start_map.v[j]];
	}
	dims[0] = flat_n;
	for (d = 0; d < rank; d++)
		if (!in_list(&at->start_map, d))
			perm[np++] = d;
	x = permute(p, x, perm);
	for (d = m; d < rank; d++)
		dims[1 + d - m] = at->slice_sizes.v[perm[d]];
	x = vtpu_g_reshape(p->g, x, 1 + rank - m, dims);
	/* the index vectors as [B, m], B the batch dimensions' product */
	for (d = 0; d < is.rank; d++)
		if (d != ivd) {
			bdims[nbd++] = is.dims[d];
			nb *= is.dims[d];
		}
	{
		int ip[R], k = 0;
		int64_t two[2] = { nb, m };

		for (d = 0; d < is.rank; d++)
			if (d != ivd)
				ip[k++] = d;
		if (ivd < is.rank)
			ip[k++] = ivd;
		ix = permute(p, to_type(p, ix, VTPU_S32), ip);
		ix = vtpu_g_reshape(p->g, ix, 2, two);
	}
	/*
	 * Window j of an indexed dimension of size n starts at its index
	 * clamped to [0, n - size]; with windows over indexed dimensions
	 * (a vmapped dynamic_slice) every position of the window is a row:
	 * [B, size_0, ..., size_m-1] flat row numbers.
	 */
	wdims[0] = nb;
	stride = flat_n;
	for (j = 0; j < m; j++) {
		int64_t n = xs.dims[at->start_map.v[j]];
		int64_t z = at->slice_sizes.v[at->start_map.v[j]];
		int64_t s0[2] = { 0, j }, l0[2] = { nb, j + 1 };
		int c;

		stride /= n;
		wdims[1 + j] = z;
		wz *= z;
		c = vtpu_g_reshape(p->g, vtpu_g_slice(p->g, ix, s0, l0, NULL),
				   1, &nb);
		c = bin(p, VTPU_MAX, c, splat(p, 0, c));
		c = bin(p, VTPU_MIN, c, splat(p, (double)(n - z), c));
		if (stride != 1)
			c = bin(p, VTPU_MUL, c, splat(p, (double)stride, c));
		flat = flat < 0 ? c : bin(p, VTPU_ADD, flat, c);
	}
	if (windows) {
		int64_t all = nb * wz;

		flat = vtpu_g_broadcast(p->g, flat, 1 + m, wdims, (int[]){ 0 });
		stride = flat_n;
		for (j = 0; j < m; j++) {
			int64_t z = wdims[1 + j];
			int w;

			stride /= xs.dims[at->start_map.v[j]];
			w = iota_s32(p, z);
			if (stride != 1)
				w = bin(p, VTPU_MUL, w, splat(p, (double)stride, w));
			flat = bin(p, VTPU_ADD, flat,
				   vtpu_g_broadcast(p->g, w, 1 + m, wdims,
						    (int[]){ 1 + j }));
		}
		flat = vtpu_g_reshape(p->g, flat, 1, &all);
	}
	y = vtpu_g_gather(p->g, x, flat, 0, false);
	if (windows) {
		/* [B, windows in start_map order, the rest] to operand order */
		int wp[R + 1], k = 0, r2 = 1 + rank;
		int64_t wd[R + 1];

		for (j = 0; j < 1 + m; j++)
			wd[j] = wdims[j];
		for (d = m; d < rank; d++)
			wd[1 + d] = at->slice_sizes.v[perm[d]];
		y = vtpu_g_reshape(p->g, y, r2, wd);
		wp[0] = 0;
		for (d = 0; d < rank; d++) {
			for (j = 0; j < m && at->start_map.v[j] != d; j++)
				;
			if (j < m) {
				wp[1 + d] = 1 + j;
			} else {
				wp[1 + d] = 1 + m + k++;
			}
		}
		y = permute(p, y, wp);
	}
	/* [batch..., offset dims in operand order (size-1 ones too)] */
	for (d = 0; d < nbd; d++)
		g_dims[d] = bdims[d];
	out_rank = (int)nbd;
	for (d = 0; d < rank; d++)
		if (!in_list(&at->collapsed, d))
			g_dims[out_rank++] = at->slice_sizes.v[d];
	if (out_rank != in->shape.s.rank || out_rank > R ||
	    at->offset_dims.n != out_rank - nbd)
		return error_at(p, in->shape.loc,
				"the gather's dimension numbers do not give its shape");
	y = vtpu_g_reshape(p->g, y, out_rank, g_dims);
	/* offset dimension k goes to offset_dims[k], batch ones fill in */
	{
		int b = 0, o = 0;

		for (d = 0; d < out_rank; d++) {
			if (in_list(&at->offset_dims, d))
				operm[d] = (int)nbd + o++;
			else
				operm[d] = b++;
		}
	}
	return permute(p, y, operm);
}

static int build_reverse(struct parser *p, struct inst *in)
{
	int x = 0, i;

	if (need(p, in, AT_DIMENSIONS) || value_of(p, in, 0, &x))
		return p->ret;
	for (i = 0; i < in->at->dims.n && x >= 0; i++) {
		if (in->at->dims.v[i] < 0 || in->at->dims.v[i] >= rank_of(p, x))
			return error_at(p, in->at->val[AT_DIMENSIONS]->loc,
					"reverse of dimension %d of a rank %d operand",
					in->at->dims.v[i], rank_of(p, x));
		x = reverse_dim(p, x, in->at->dims.v[i]);
	}
	return x;
}

/* Whether @c's root is the sum of its parameters 0 and 1. */
static bool adds_params(const struct comp *c)
{
	const struct inst *r = c->root;

	return r->op->kind == OK_BINARY && r->op->arg == VTPU_ADD &&
	       r->nops == 2 && r->ops[0]->op->kind == OK_PARAM &&
	       r->ops[1]->op->kind == OK_PARAM &&
	       r->ops[0]->param + r->ops[1]->param == 1 &&
	       r->ops[0]->param != r->ops[1]->param;
}

/* Whether @c's root is parameter @k itself. */
static bool root_is_param(const struct comp *c, int64_t k)
{
	return c->root->op->kind == OK_PARAM && c->root->param == k;
}

/* The permutation that moves @first (n of them) to the front, the rest after in order. */
static int front_perm(const int *first, int n, int rank, int *perm)
{
	int k = 0, d, j;

	for (j = 0; j < n; j++)
		perm[k++] = first[j];
	for (d = 0; d < rank; d++) {
		for (j = 0; j < n && first[j] != d; j++)
			;
		if (j == n)
			perm[k++] = d;
	}
	return k;
}

/*
 * scatter(x, indices, updates) with XLA's dimension numbers, where the
 * indexed dimensions (scatter_dims_to_operand_dims) are the inserted
 * ones and every window spans the rest of x (jnp's .at[i].add/.set,
 * the gradient of a gather, embedding updates), combined by add or by
 * replacing. x's indexed dimensions go to the front and flatten into F
 * rows; each update row's flat row number (-1 when an index is out of
 * range: XLA skips those) makes a one-hot [N, F] matrix, and its
 * product with the updates, [F, rest], is every row's sum of updates.
 */
static int build_scatter(struct parser *p, struct inst *in)
{
	const struct attrs *at = in->at;
	struct vtpu_shape xs, is, us;
	int x = 0, ix = 0, u = 0, perm[R], inv[R], up[R], ip[R], k, d, j;
	int m, rank, ivd, flat = -1, valid = -1, onehot, contrib, res;
	int64_t rows = 1, rest = 1, nb = 1, stride, two[2], xd[R];
	struct vtpu_dot_dims dd = { .ncontract = 1 };
	bool set;

	if (need(p, in, AT_SCATTER_MAP) || need(p, in, AT_TO_APPLY) ||
	    array_shape(p, in))
		return p->ret;
	if (in->nops != 3)
		return error_at(p, in->op_tok->loc,
				"unsupported: scatter of %d operands",
				in->nops);
	if (value_of(p, in, 0, &x) || value_of(p, in, 1, &ix) ||
	    value_of(p, in, 2, &u))
		return p->ret;
	set = root_is_param(at->to_apply, 1);
	if (!set && !adds_params(at->to_apply))
		return error_at(p, at->val[AT_TO_APPLY]->loc,
				"unsupported: scatter combining other than by add or replacing");
	if (at->obatch.n || at->sbatch.n)
		return error_at(p, in->op_tok->loc,
				"unsupported: scatter with batching dimensions");
	xs = shape_of(p, x);
	is = shape_of(p, ix);
	us = shape_of(p, u);
	rank = xs.rank;
	m = at->scatter_map.n;
	ivd = at->tok[AT_IVD] ? (int)at->ivd : is.rank;
	if (m < 1 || ivd < 0 || ivd > is.rank ||
	    (ivd < is.rank ? is.dims[ivd] : 1) != m)
		return error_at(p, in->op_tok->loc,
				"bad index_vector_dim or scatter_dims_to_operand_dims");
	for (j = 0; j < m; j++) {
		d = at->scatter_map.v[j];
		if (d < 0 || d >= rank || !in_list(&at->inserted, d))
			return error_at(p, at->val[AT_SCATTER_MAP]->loc,
					"unsupported: scatter into dimension %d, which is not an inserted window dimension",
					d);
		rows *= xs.dims[d];
	}
	if (at->inserted.n != m ||
	    at->update_win.n != rank - m || us.rank != is.rank - (ivd < is.rank) + rank - m)
		return error_at(p, in->op_tok->loc,
				"unsupported: scatter windows that do not span the operand's other dimensions");
	/* x as [F, rest] */
	front_perm(at->scatter_map.v, m, rank, perm);
	for (d = m, k = 0; d < rank; d++, k++) {
		/* window dimension k of the updates is operand dimension perm[d] */
		if (us.dims[at->update_win.v[k]] != xs.dims[perm[d]])
			return error_at(p, in->op_tok->loc,
					"unsupported: scatter windows smaller than the operand");
		rest *= xs.dims[perm[d]];
	}
	for (d = 0; d < rank; d++)
		xd[d] = xs.dims[perm[d]];
	two[0] = rows;
	two[1] = rest;
	x = vtpu_g_reshape(p->g, permute(p, x, perm), 2, two);
	/* the updates as [N, rest], the index vectors as [N, m] */
	for (d = 0, k = 0; d < us.rank; d++)
		if (!in_list(&at->update_win, d))
			up[k++] = d;
	for (j = 0; j < at->update_win.n; j++)
		up[k++] = at->update_win.v[j];
	for (d = 0, k = 0; d < is.rank; d++)
		if (d != ivd) {
			ip[k++] = d;
			nb *= is.dims[d];
		}
	if (ivd < is.rank)
		ip[k++] = ivd;
	two[0] = nb;
	two[1] = rest;
	u = vtpu_g_reshape(p->g, permute(p, u, up), 2, two);
	two[1] = m;
	ix = vtpu_g_reshape(p->g, permute(p, to_type(p, ix, VTPU_S32), ip), 2, two);
	stride = rows;
	for (j = 0; j < m; j++) {
		int64_t n = xs.dims[at->scatter_map.v[j]];
		int64_t s0[2] = { 0, j }, l0[2] = { nb, j + 1 };
		int c, ok;

		stride /= n;
		c = vtpu_g_reshape(p->g, vtpu_g_slice(p->g, ix, s0, l0, NULL),
				   1, &nb);
		ok = p_and(p, vtpu_g_compare(p->g, VTPU_GE, c, splat(p, 0, c)),
			   vtpu_g_compare(p->g, VTPU_LT, c, splat(p, (double)n, c)));
		valid = valid < 0 ? ok : p_and(p, valid, ok);
		c = bin(p, VTPU_MUL, c, splat(p, (double)stride, c));
		flat = flat < 0 ? c : bin(p, VTPU_ADD, flat, c);
	}
	flat = vtpu_g_select(p->g, valid, flat, splat(p, -1, flat));
	two[1] = rows;
	onehot = vtpu_g_compare(p->g, VTPU_EQ,
				vtpu_g_broadcast(p->g, flat, 2, two, (int[]){ 0 }),
				vtpu_g_broadcast(p->g, iota_s32(p, rows), 2, two,
						 (int[]){ 1 }));
	onehot = vtpu_g_select(p->g, onehot,
			       vtpu_g_broadcast(p->g, scalar_of(p, 1, VTPU_F32), 2, two, NULL),
			       vtpu_g_broadcast(p->g, scalar_of(p, 0, VTPU_F32), 2, two, NULL));
	contrib = vtpu_g_dot(p->g, onehot, to_type(p, u, VTPU_F32), &dd);
	contrib = to_type(p, contrib, xs.type);
	if (set) {
		int hit = vtpu_g_reduce(p->g, VTPU_REDUCE_MAX_OP, onehot, 1,
					(int[]){ 0 });

		hit = vtpu_g_compare(p->g, VTPU_GT, hit, splat(p, 0, hit));
		two[0] = rows;
		two[1] = rest;
		hit = vtpu_g_broadcast(p->g, hit, 2, two, (int[]){ 0 });
		res = vtpu_g_select(p->g, hit, contrib, x);
	} else {
		res = bin(p, VTPU_ADD, x, contrib);
	}
	res = vtpu_g_reshape(p->g, res, rank, xd);
	invert(perm, rank, inv);
	return permute(p, res, inv);
}

static int build_comp(struct parser *p, struct comp *c, int nargs,
		      const struct hval *args, const struct tok *site,
		      struct hval *out);

/*
 * comparator(lhs_0, rhs_0, lhs_1, rhs_1, ...) for every pair of
 * positions at once: built elementwise on [B, n, n], operand k's
 * element j as lhs and element i as rhs. True where j goes before i.
 */
static int sort_before(struct parser *p, const struct inst *in,
		       struct comp *c, const int *ops, const int64_t *t3,
		       int *before)
{
	struct hval *args, res;
	int k, nops;

	if (!c) {
		/* TopK without a comparator: greater first, NaN largest */
		int xj = vtpu_g_broadcast(p->g, ops[0], 3, t3, (int[]){ 0, 2 });
		int xi = vtpu_g_broadcast(p->g, ops[0], 3, t3, (int[]){ 0, 1 });
		int nj = vtpu_g_compare(p->g, VTPU_NE, xj, xj);
		int ni = vtpu_g_compare(p->g, VTPU_NE, xi, xi);

		*before = p_or(p, vtpu_g_compare(p->g, VTPU_GT, xj, xi),
			       p_and(p, nj, p_not(p, ni)));
		return *before < 0 ? builder_error(p, in, *before) : 0;
	}
	nops = c->nparams / 2;
	args = alloc_array(p, 2 * nops, sizeof(*args));
	if (!args)
		return p->ret;
	for (k = 0; k < nops; k++) {
		args[2 * k] = array_val(vtpu_g_broadcast(p->g, ops[k], 3, t3,
							 (int[]){ 0, 2 }));
		args[2 * k + 1] = array_val(vtpu_g_broadcast(p->g, ops[k], 3,
							     t3, (int[]){ 0, 1 }));
		if (args[2 * k].id < 0 || args[2 * k + 1].id < 0)
			return builder_error(p, in, args[2 * k].id < 0 ?
					     args[2 * k].id : args[2 * k + 1].id);
	}
	memset(&p->map, 0, sizeof(p->map));
	p->map.rank = 3;
	memcpy(p->map.dims, t3, 3 * sizeof(*t3));
	k = build_comp(p, c, 2 * nops, args, in->op_tok, &res);
	memset(&p->map, 0, sizeof(p->map));
	if (k)
		return p->ret;
	if (res.n >= 0 || shape_of(p, res.id).type != VTPU_PRED)
		return error_at(p, in->op_tok->loc,
				"a sort comparator must give a pred");
	*before = res.id;
	return 0;
}

/*
 * sort(ops...), dimensions={d}, to_apply=cmp: any comparator made of
 * scalar functions (LT or GT of a key, JAX's total order with -0 and
 * NaN made canonical, several keys lexicographically...), applied to
 * every pair of positions at once. With the sorted dimension last as
 * [B, n]: j goes before i when cmp(x_j, x_i), or when neither goes
 * before the other and j < i (stable, which is_stable=false allows
 * too). Element i's rank is the number of elements that go before it,
 * position k takes the element whose rank is k, and one gather of flat
 * positions permutes every operand.
 */
static int sort_core(struct parser *p, const struct inst *in,
		     struct comp *c, const int *vals, int nops, int d,
		     struct hval *e)
{
	int perm[R], inv[R], rank, i, a, before = -1, rk, pos, flat;
	int64_t n, nb = 1, t3[3], two[2], td[R], all;
	struct vtpu_shape s;
	int *ops;

	s = shape_of(p, vals[0]);
	rank = s.rank;
	n = s.dims[d];
	for (i = 0; i < rank; i++)
		if (i != d)
			nb *= s.dims[i];
	if (n * n * nb > (1 << 22))
		return error_at(p, in->op_tok->loc,
				"unsupported: sort of %lld rows of %lld (the lowering is quadratic)",
				(long long)nb, (long long)n);
	for (i = 0, a = 0; i < rank; i++)
		if (i != d)
			perm[a++] = i;
	perm[a] = d;
	for (i = 0; i < rank; i++)
		td[i] = s.dims[perm[i]];
	two[0] = nb;
	two[1] = n;
	t3[0] = nb;
	t3[1] = n;
	t3[2] = n;
	ops = alloc_array(p, nops, sizeof(*ops));
	if (!ops)
		return p->ret;
	for (i = 0; i < nops; i++) {
		struct vtpu_shape vs = shape_of(p, vals[i]);

		if (!dims_eq(&vs, &s))
			return error_at(p, in->op_tok->loc,
					"sort operands of different shapes");
		ops[i] = vtpu_g_reshape(p->g, permute(p, vals[i], perm), 2, two);
		if (ops[i] < 0)
			return builder_error(p, in, ops[i]);
	}
	{
		int64_t nn[2] = { n, n };
		int ii = vtpu_g_broadcast(p->g, iota_s32(p, n), 2, nn, (int[]){ 0 });
		int jj = vtpu_g_broadcast(p->g, iota_s32(p, n), 2, nn, (int[]){ 1 });
		int earlier = vtpu_g_broadcast(p->g, vtpu_g_compare(p->g, VTPU_LT, jj, ii),
					       3, t3, (int[]){ 1, 2 });
		int after, perm3[3] = { 0, 2, 1 };

		if (sort_before(p, in, c, ops, t3, &before))
			return p->ret;
		/* i before j is the same relation transposed */
		after = vtpu_g_transpose(p->g, before, perm3);
		before = p_or(p, before, p_and(p, p_not(p, after), earlier));
		rk = reduce_with(p, to_type(p, before, VTPU_S32),
				 VTPU_REDUCE_SUM_OP, 1, (int[]){ 2 }, -1);
		/* [b, k, i]: i's rank is k; then sum i over those */
		pos = vtpu_g_compare(p->g, VTPU_EQ,
				     vtpu_g_broadcast(p->g, rk, 3, t3, (int[]){ 0, 2 }),
				     vtpu_g_broadcast(p->g, iota_s32(p, n), 3, t3, (int[]){ 1 }));
		pos = vtpu_g_select(p->g, pos,
				    vtpu_g_broadcast(p->g, iota_s32(p, n), 3, t3, (int[]){ 2 }),
				    vtpu_g_broadcast(p->g, scalar_of(p, 0, VTPU_S32), 3, t3, NULL));
		pos = reduce_with(p, pos, VTPU_REDUCE_SUM_OP, 1, (int[]){ 2 }, -1);
	}
	/* flat positions b n + pos */
	flat = bin(p, VTPU_ADD, pos,
		   vtpu_g_broadcast(p->g, bin(p, VTPU_MUL, iota_s32(p, nb),
					      splat(p, (double)n, iota_s32(p, nb))),
				    2, two, (int[]){ 0 }));
	all = nb * n;
	flat = vtpu_g_reshape(p->g, flat, 1, &all);
	invert(perm, rank, inv);
	for (i = 0; i < nops; i++) {
		int v = vtpu_g_reshape(p->g, ops[i], 1, &all);

		v = vtpu_g_gather(p->g, v, flat, 0, false);
		v = permute(p, vtpu_g_reshape(p->g, v, rank, td), inv);
		if (v < 0)
			return builder_error(p, in, v);
		e[i] = array_val(v);
	}
	return 0;
}

/*
 * sort(ops...), dimensions={d}, to_apply=cmp: any comparator made of
 * scalar functions, see sort_core().
 */
static int build_sort(struct parser *p, struct inst *in)
{
	struct hval *e;
	int *vals, i, rank;

	if (need(p, in, AT_DIMENSIONS) || need(p, in, AT_TO_APPLY))
		return p->ret;
	if (in->nops < 1 || in->at->to_apply->nparams != 2 * in->nops)
		return error_at(p, in->at->val[AT_TO_APPLY]->loc,
				"a sort of %d operands needs a comparator of %d parameters",
				in->nops, 2 * in->nops);
	vals = alloc_array(p, in->nops, sizeof(*vals));
	e = alloc_array(p, in->nops, sizeof(*e));
	if (!vals || !e)
		return p->ret;
	for (i = 0; i < in->nops; i++)
		if (value_of(p, in, i, &vals[i]))
			return p->ret;
	rank = rank_of(p, vals[0]);
	if (in->at->dims.n != 1 || in->at->dims.v[0] < 0 ||
	    in->at->dims.v[0] >= rank)
		return error_at(p, in->at->val[AT_DIMENSIONS]->loc,
				"sort needs one dimension of the operands");
	if (sort_core(p, in, in->at->to_apply, vals, in->nops,
		      in->at->dims.v[0], e))
		return p->ret;
	if (in->nops == 1) {
		in->v = e[0];
		return 0;
	}
	in->v.n = in->nops;
	in->v.e = e;
	return 0;
}

/*
 * custom-call(x), custom_call_target="TopK", to_apply=cmp (optional):
 * the k first of x's last dimension in cmp's order (greater first
 * without one), and their s32 indices: a stable sort of (x, iota)
 * whose comparator sees x only, then the first k.
 */
static int build_topk(struct parser *p, struct inst *in)
{
	struct vtpu_shape s;
	struct hval *e;
	int vals[2], i, r;
	int64_t start[R] = { 0 }, limit[R], stride[R];
	struct comp *c = in->at ? in->at->to_apply : NULL;

	if (in->nops != 1 || !in->shape.tuple || in->shape.n != 2 ||
	    in->shape.elem[0].tuple || in->shape.elem[1].tuple ||
	    value_of(p, in, 0, &vals[0]))
		return error_at(p, in->op_tok->loc,
				"a TopK custom-call takes one array and gives (values, indices)");
	s = shape_of(p, vals[0]);
	r = s.rank;
	if (!r || in->shape.elem[0].s.rank != r ||
	    in->shape.elem[0].s.dims[r - 1] > s.dims[r - 1] ||
	    (c && c->nparams != 2 && c->nparams != 4))
		return error_at(p, in->op_tok->loc,
				"a TopK custom-call takes k of its operand's last dimension and a comparator of 2 or 4 parameters");
	vals[1] = vtpu_g_broadcast(p->g, iota_s32(p, s.dims[r - 1]), r,
				   s.dims, (int[]){ r - 1 });
	e = alloc_array(p, 2, sizeof(*e));
	if (!e || vals[1] < 0)
		return vals[1] < 0 ? builder_error(p, in, vals[1]) : p->ret;
	if (sort_core(p, in, c, vals, 2, r - 1, e))
		return p->ret;
	for (i = 0; i < r; i++) {
		limit[i] = in->shape.elem[0].s.dims[i];
		stride[i] = 1;
	}
	for (i = 0; i < 2; i++) {
		int v = vtpu_g_slice(p->g, e[i].id, start, limit, stride);

		if (v < 0)
			return builder_error(p, in, v);
		e[i] = array_val(v);
	}
	in->v.n = 2;
	in->v.e = e;
	return 0;
}

/* ---- the other array ops ------------------------------------------------- */

static int build_broadcast(struct parser *p, struct inst *in)
{
	int a = 0;

	if (array_shape(p, in) || need(p, in, AT_DIMENSIONS) ||
	    value_of(p, in, 0, &a) ||
	    check_count(p, in, AT_DIMENSIONS, in->at->dims.n, rank_of(p, a)))
		return p->ret;
	return vtpu_g_broadcast(p->g, a, in->shape.s.rank, in->shape.s.dims,
				in->at->dims.v);
}

static int build_transpose(struct parser *p, struct inst *in)
{
	int a = 0;

	if (need(p, in, AT_DIMENSIONS) || value_of(p, in, 0, &a) ||
	    check_count(p, in, AT_DIMENSIONS, in->at->dims.n, rank_of(p, a)))
		return p->ret;
	return vtpu_g_transpose(p->g, a, in->at->dims.v);
}

static int build_concat(struct parser *p, struct inst *in)
{
	int *ids;

	if (need(p, in, AT_DIMENSIONS))
		return p->ret;
	if (in->at->dims.n != 1)
		return error_at(p, in->at->val[AT_DIMENSIONS]->loc,
				"concatenate needs one dimension");
	if (!in->nops)
		return error_at(p, in->op_tok->loc,
				"concatenate needs operands");
	ids = alloc_array(p, in->nops, sizeof(*ids));
	if (!ids || values_of(p, in, ids))
		return p->ret;
	return vtpu_g_concat(p->g, in->nops, ids, in->at->dims.v[0]);
}

/* iota, iota_dimension=d: 0, 1, ... along d, as a constant broadcast. */
static int build_iota(struct parser *p, struct inst *in)
{
	const struct vtpu_shape *s = &in->shape.s;
	int d, x;

	if (array_shape(p, in) || need(p, in, AT_IOTA_DIM))
		return p->ret;
	d = (int)in->at->iota_dim;
	if (in->at->iota_dim < 0 || d >= s->rank || s->type == VTPU_PRED ||
	    s->dims[d] > (1 << 24))
		return error_at(p, in->at->val[AT_IOTA_DIM]->loc,
				"bad iota_dimension %lld for %d dimensions",
				(long long)in->at->iota_dim, s->rank);
	x = to_type(p, iota_s32(p, s->dims[d]), s->type);
	return vtpu_g_broadcast(p->g, x, s->rank, s->dims, &d);
}

/* clamp(lo, x, hi): min(max(x, lo), hi), lo and hi scalars or x-shaped. */
static int build_clamp(struct parser *p, struct inst *in)
{
	int v[3];

	if (values_of(p, in, v) || no_unsigned(p, in))
		return p->ret;
	return bin(p, VTPU_MIN, bin(p, VTPU_MAX, v[1], bcast_like(p, v[0], v[1])),
		   bcast_like(p, v[2], v[1]));
}

/* select(pred, a, b); a scalar pred picks a whole operand. */
static int build_select(struct parser *p, struct inst *in)
{
	int v[3];

	if (values_of(p, in, v))
		return p->ret;
	return vtpu_g_select(p->g, bcast_like(p, v[0], v[1]), v[1], v[2]);
}

/*
 * To an integer type of range [lo, hi]: floats saturate (NaN is 0) and
 * truncate, as XLA converts; integers keep their low bits, a narrow
 * type's wrap-around (computed in f32: exact below 2^24).
 */
static int convert_int(struct parser *p, int x, int from, int to)
{
	double lo = hlo_types[to].lo, hi = hlo_types[to].hi;
	enum vtpu_type ft = shape_of(p, x).type;
	int y, big;

	if (ft == VTPU_F32 || ft == VTPU_BF16) {
		x = to_type(p, x, VTPU_F32);
		big = vtpu_g_compare(p->g, VTPU_GE, x, splat(p, hi, x));
		y = bin(p, VTPU_MAX, x, splat(p, lo, x));
		/* NaN: max and min keep the bound; select zero */
		y = vtpu_g_select(p->g, vtpu_g_compare(p->g, VTPU_NE, x, x),
				  splat(p, 0, x), y);
		y = vtpu_g_convert(p->g, bin(p, VTPU_MIN, y,
					     splat(p, hi >= INT32_MAX ? 2147483520.0 : hi, x)),
				   VTPU_S32);
		return vtpu_g_select(p->g, big, splat(p, hi, y), y);
	}
	x = to_type(p, x, VTPU_S32);
	if (ft == VTPU_PRED || (lo <= hlo_types[from].lo &&
				hi >= hlo_types[from].hi))
		return x;
	/* ((x - lo) mod 2^bits) + lo */
	y = bin(p, VTPU_SUB, x, splat(p, lo, x));
	y = compose_mod(p->g, y, splat(p, hi - lo + 1, y), true);
	return bin(p, VTPU_ADD, y, splat(p, lo, y));
}

static int build_convert(struct parser *p, struct inst *in)
{
	enum vtpu_type t = in->shape.s.type;
	int x = 0;

	if (array_shape(p, in) || value_of(p, in, 0, &x))
		return p->ret;
	if (is_unsigned(in, 0) && t != VTPU_S32)
		return no_unsigned(p, in);
	if (t == VTPU_PRED && shape_of(p, x).type != VTPU_PRED)	/* x != 0 */
		return vtpu_g_compare(p->g, VTPU_NE, x, splat(p, 0, x));
	if (t == VTPU_S32)
		return convert_int(p, x, in->ops[0]->shape.htype,
				   in->shape.htype);
	x = to_type(p, x, t);
	if (hlo_types[in->shape.htype].kind == HT_F16 &&
	    hlo_types[in->ops[0]->shape.htype].kind != HT_F16)
		x = compose_round_f16(p->g, x);
	return x;
}

/* Whether @x is negative, -0 and -inf included (1/x is -inf at -0). */
static int negative(struct parser *p, int x)
{
	return p_or(p, vtpu_g_compare(p->g, VTPU_LT, x, splat(p, 0, x)),
		    vtpu_g_compare(p->g, VTPU_LT,
				   bin(p, VTPU_DIV, splat(p, 1, x), x),
				   splat(p, 0, x)));
}

/*
 * atan2(y, x): atan of the smaller magnitude over the larger, in [0, 1]
 * (Cephes' atanf: one range reduction at tan(pi/8), then a degree-4
 * polynomial in z^2; ~2 ulp), moved to its octant and quadrant. Zeros,
 * infinities and NaN as C's atan2: atan2(+-0, -0) = +-pi, both
 * infinite an odd multiple of pi/4, NaN in, NaN out.
 */
static int atan2_of(struct parser *p, int y, int x)
{
	static const double c[] = { 8.05374449538e-2, -1.38776856032e-1,
				    1.99777106478e-1, -3.33329491539e-1 };
	int ax = vtpu_g_unary(p->g, VTPU_ABS, x);
	int ay = vtpu_g_unary(p->g, VTPU_ABS, y);
	int mx = bin(p, VTPU_MAX, ax, ay), mn = bin(p, VTPU_MIN, ax, ay);
	int t = bin(p, VTPU_DIV, mn, mx), big, u, z, r;
	unsigned int i;

	t = vtpu_g_select(p->g, vtpu_g_compare(p->g, VTPU_EQ, mx, splat(p, 0, x)),
			  splat(p, 0, x), t);
	t = vtpu_g_select(p->g, vtpu_g_compare(p->g, VTPU_EQ, mn,
					       splat(p, INFINITY, x)),
			  splat(p, 1, x), t);
	big = vtpu_g_compare(p->g, VTPU_GT, t, splat(p, 0.4142135623730950, x));
	u = vtpu_g_select(p->g, big,
			  bin(p, VTPU_DIV, bin(p, VTPU_SUB, t, splat(p, 1, x)),
			      bin(p, VTPU_ADD, t, splat(p, 1, x))), t);
	z = bin(p, VTPU_MUL, u, u);
	r = splat(p, c[0], x);
	for (i = 1; i < sizeof(c) / sizeof(c[0]); i++)
		r = bin(p, VTPU_ADD, bin(p, VTPU_MUL, r, z), splat(p, c[i], x));
	r = bin(p, VTPU_ADD, bin(p, VTPU_MUL, bin(p, VTPU_MUL, r, z), u), u);
	r = vtpu_g_select(p->g, big, bin(p, VTPU_ADD, r, splat(p, M_PI / 4, x)), r);
	r = vtpu_g_select(p->g, vtpu_g_compare(p->g, VTPU_GT, ay, ax),
			  bin(p, VTPU_SUB, splat(p, M_PI / 2, x), r), r);
	r = vtpu_g_select(p->g, negative(p, x),
			  bin(p, VTPU_SUB, splat(p, M_PI, x), r), r);
	return vtpu_g_select(p->g, negative(p, y),
			     bin(p, VTPU_SUB, splat(p, 0, x), r), r);
}

/*
 * sin, cos, tan, atan2, the roundings, sign, expm1, log1p, erf, cbrt,
 * is-finite and the remainder, from compose.c and the device's
 * functions; bf16 in f32 and back, integers where they are the identity.
 */
static int build_math(struct parser *p, struct inst *in)
{
	enum vtpu_type t = in->ops[0]->shape.s.type;
	int v[2] = { 0 }, x, u, y;

	if (values_of(p, in, v) || no_unsigned(p, in))
		return p->ret;
	if (t == VTPU_S32 || t == VTPU_PRED) {
		switch (in->op->arg) {
		case M_FLOOR: case M_CEIL: case M_RNE: case M_AFZ:
			return v[0];
		case M_SIGN:
			return compose_sign(p->g, v[0]);
		case M_REM:
			return compose_mod(p->g, v[0], v[1], false);
		default:
			return error_at(p, in->op_tok->loc,
					"unsupported: %s of integers",
					in->op->text);
		}
	}
	x = to_type(p, v[0], VTPU_F32);
	switch (in->op->arg) {
	case M_SIN:
	case M_COS:
		y = compose_sin_cos(p->g, x, in->op->arg == M_COS);
		break;
	case M_TAN:
		y = bin(p, VTPU_DIV, compose_sin_cos(p->g, x, 0),
			compose_sin_cos(p->g, x, 1));
		break;
	case M_FLOOR:
		y = compose_round(p->g, x, ROUND_FLOOR);
		break;
	case M_CEIL:
		y = compose_round(p->g, x, ROUND_CEIL);
		break;
	case M_RNE:
		y = compose_round(p->g, x, ROUND_EVEN);
		break;
	case M_AFZ:
		y = compose_round(p->g, x, ROUND_AWAY);
		break;
	case M_SIGN:
		y = compose_sign(p->g, x);
		break;
	case M_EXPM1:
		/* (e^x - 1) x / log(e^x): exact where e^x rounds to 1 */
		u = vtpu_g_unary(p->g, VTPU_EXP, x);
		y = bin(p, VTPU_MUL, bin(p, VTPU_SUB, u, splat(p, 1, x)),
			bin(p, VTPU_DIV, x, vtpu_g_unary(p->g, VTPU_LOG, u)));
		y = vtpu_g_select(p->g, vtpu_g_compare(p->g, VTPU_EQ, u,
						       splat(p, 1, x)), x, y);
		y = vtpu_g_select(p->g, vtpu_g_compare(p->g, VTPU_GT, x,
						       splat(p, 80, x)), u, y);
		y = vtpu_g_select(p->g, vtpu_g_compare(p->g, VTPU_LT, x,
						       splat(p, -20, x)),
				  splat(p, -1, x), y);
		break;
	case M_LOG1P:
		/* log(1 + x) x / ((1 + x) - 1), Goldberg's */
		u = bin(p, VTPU_ADD, x, splat(p, 1, x));
		y = bin(p, VTPU_MUL, vtpu_g_unary(p->g, VTPU_LOG, u),
			bin(p, VTPU_DIV, x, bin(p, VTPU_SUB, u, splat(p, 1, x))));
		y = vtpu_g_select(p->g, vtpu_g_compare(p->g, VTPU_EQ, u,
						       splat(p, 1, x)), x, y);
		y = vtpu_g_select(p->g, vtpu_g_compare(p->g, VTPU_GT, x,
						       splat(p, 1e30, x)),
				  vtpu_g_unary(p->g, VTPU_LOG, u), y);
		break;
	case M_ERF:
		y = compose_erf(p->g, x);
		break;
	case M_ISFINITE:	/* x - x is 0 unless x is inf or NaN */
		return vtpu_g_compare(p->g, VTPU_EQ, bin(p, VTPU_SUB, x, x),
				      splat(p, 0, x));
	case M_CBRT:
		y = bin(p, VTPU_POW, vtpu_g_unary(p->g, VTPU_ABS, x),
			splat(p, 1.0 / 3, x));
		y = bin(p, VTPU_MUL, compose_sign(p->g, x), y);
		break;
	case M_ATAN2:
		y = atan2_of(p, x, to_type(p, v[1], VTPU_F32));
		break;
	default:	/* M_REM */
		y = compose_mod(p->g, x, to_type(p, v[1], VTPU_F32), false);
		break;
	}
	return to_type(p, y, t);
}

/* not, and, or, xor of pred (selects); integers' bits are refused. */
static int build_logic(struct parser *p, struct inst *in)
{
	int v[2] = { 0 };

	if (values_of(p, in, v))
		return p->ret;
	if (shape_of(p, v[0]).type != VTPU_PRED)
		return error_at(p, in->op_tok->loc,
				"unsupported: bitwise %s of integers",
				in->op->text);
	switch (in->op->arg) {
	case L_NOT:
		return p_not(p, v[0]);
	case L_AND:
		return p_and(p, v[0], v[1]);
	case L_OR:
		return p_or(p, v[0], v[1]);
	default:
		return vtpu_g_select(p->g, v[0], p_not(p, v[1]), v[1]);
	}
}

/* x is -0: 0 whose reciprocal is -inf */
static int neg_zero(struct parser *p, int x)
{
	return p_and(p, vtpu_g_compare(p->g, VTPU_EQ, x, splat(p, 0, x)),
		     vtpu_g_compare(p->g, VTPU_LT, bin(p, VTPU_DIV, splat(p, 1, x), x),
				    splat(p, 0, x)));
}

/*
 * IEEE total order: -0 before +0, NaN after everything (a NaN's sign,
 * which only a bitcast could read, is not looked at).
 */
static int total_order(struct parser *p, enum vtpu_cmp_dir dir, int a, int b)
{
	int na = vtpu_g_compare(p->g, VTPU_NE, a, a);
	int nb = vtpu_g_compare(p->g, VTPU_NE, b, b);
	int za = neg_zero(p, a), zb = neg_zero(p, b);
	int same0 = vtpu_g_select(p->g, za, zb, p_not(p, zb));
	int eq = p_or(p, p_and(p, vtpu_g_compare(p->g, VTPU_EQ, a, b), same0),
		      p_and(p, na, nb));
	int lt = p_or(p, vtpu_g_compare(p->g, VTPU_LT, a, b),
		      p_or(p, p_and(p, p_not(p, na), nb),
			   p_and(p, vtpu_g_compare(p->g, VTPU_EQ, a, b),
				 p_and(p, za, p_not(p, zb)))));
	int le = p_or(p, lt, eq);

	switch (dir) {
	case VTPU_EQ: return eq;
	case VTPU_NE: return p_not(p, eq);
	case VTPU_LT: return lt;
	case VTPU_LE: return le;
	case VTPU_GT: return p_not(p, le);
	default: return p_not(p, lt);
	}
}

/* compare(a, b), direction=...; signedness matters, so no u32. */
static int build_compare(struct parser *p, struct inst *in)
{
	int v[2];

	if (need(p, in, AT_DIRECTION) || values_of(p, in, v) ||
	    no_unsigned(p, in))
		return p->ret;
	if (in->at->cmp_type && is_ident(in->at->cmp_type, "UNSIGNED"))
		return error_at(p, in->at->cmp_type->loc,
				"unsupported: unsigned compare (the device's integers are signed)");
	if (shape_of(p, v[0]).type == VTPU_PRED) {	/* as 0 and 1 */
		v[0] = to_type(p, v[0], VTPU_S32);
		v[1] = to_type(p, v[1], VTPU_S32);
	}
	if (in->at->cmp_type && is_ident(in->at->cmp_type, "TOTALORDER") &&
	    shape_of(p, v[0]).type != VTPU_S32)
		return total_order(p, in->at->dir, v[0], v[1]);
	return vtpu_g_compare(p->g, in->at->dir, v[0], v[1]);
}

static int build_binary(struct parser *p, struct inst *in)
{
	int v[2];

	if (values_of(p, in, v))
		return p->ret;
	if (in->op->arg == VTPU_DIV || in->op->arg == VTPU_MAX ||
	    in->op->arg == VTPU_MIN)
		if (no_unsigned(p, in))
			return p->ret;
	if (in->op->arg == VTPU_DIV && shape_of(p, v[0]).type == VTPU_S32)
		return compose_div_int(p->g, v[0], v[1]);
	return vtpu_g_binary(p->g, in->op->arg, v[0], v[1]);
}

/* Per-feature [C] @v along dimension @f of @like. */
static int feature(struct parser *p, int v, int f, int like)
{
	return along(p, v, f, like);
}

/*
 * batch-norm-inference(x, scale, offset, mean, variance): (x - mean)
 * scale / sqrt(variance + epsilon) + offset, per feature_index.
 */
static int build_bn_inf(struct parser *p, struct inst *in)
{
	int v[5], f, x, y;

	if (need(p, in, AT_FEATURE) || values_of(p, in, v))
		return p->ret;
	x = v[0];
	f = (int)in->at->feature;
	if (in->at->feature < 0 || f >= rank_of(p, x))
		return error_at(p, in->at->val[AT_FEATURE]->loc,
				"bad feature_index");
	y = bin(p, VTPU_ADD, v[4], splat(p, in->at->epsilon, v[4]));
	y = bin(p, VTPU_MUL, vtpu_g_unary(p->g, VTPU_RSQRT, y), v[1]);
	y = bin(p, VTPU_MUL, bin(p, VTPU_SUB, x, feature(p, v[3], f, x)),
		feature(p, y, f, x));
	return bin(p, VTPU_ADD, y, feature(p, v[2], f, x));
}

/*
 * batch-norm-training(x, scale, offset): the batch's mean and (biased)
 * variance over every dimension but feature_index, x normalized with
 * them; the tuple (y, mean, variance).
 */
static int build_bn_train(struct parser *p, struct inst *in)
{
	int v[3], axes[R], na = 0, f, d, x, mean, var, c, y;
	struct hval *e;

	if (need(p, in, AT_FEATURE) || values_of(p, in, v))
		return p->ret;
	x = v[0];
	f = (int)in->at->feature;
	if (in->at->feature < 0 || f >= rank_of(p, x))
		return error_at(p, in->at->val[AT_FEATURE]->loc,
				"bad feature_index");
	for (d = 0; d < rank_of(p, x); d++)
		if (d != f)
			axes[na++] = d;
	mean = vtpu_g_reduce(p->g, VTPU_REDUCE_MEAN_OP, x, na, axes);
	c = bin(p, VTPU_SUB, x, feature(p, mean, f, x));
	var = vtpu_g_reduce(p->g, VTPU_REDUCE_MEAN_OP, bin(p, VTPU_MUL, c, c),
			    na, axes);
	y = bin(p, VTPU_ADD, var, splat(p, in->at->epsilon, var));
	y = bin(p, VTPU_MUL, vtpu_g_unary(p->g, VTPU_RSQRT, y), v[1]);
	y = bin(p, VTPU_MUL, c, feature(p, y, f, x));
	y = bin(p, VTPU_ADD, y, feature(p, v[2], f, x));
	if (y < 0)
		return builder_error(p, in, y);
	e = alloc_array(p, 3, sizeof(*e));
	if (!e)
		return p->ret;
	e[0] = array_val(y);
	e[1] = array_val(mean);
	e[2] = array_val(var);
	in->v.n = 3;
	in->v.e = e;
	return 0;
}

/* reduce-precision(x), exponent_bits, mantissa_bits: bf16's, f16's or f32's. */
static int build_reduce_precision(struct parser *p, struct inst *in)
{
	int x = 0;

	if (need(p, in, AT_EXP_BITS) || need(p, in, AT_MANT_BITS) ||
	    value_of(p, in, 0, &x))
		return p->ret;
	if (in->at->exp_bits >= 8 && in->at->mant_bits >= 23)
		return x;
	if (shape_of(p, x).type == VTPU_F32 && in->at->exp_bits == 8 &&
	    in->at->mant_bits == 7)
		return to_type(p, to_type(p, x, VTPU_BF16), VTPU_F32);
	if (shape_of(p, x).type == VTPU_F32 && in->at->exp_bits == 5 &&
	    in->at->mant_bits == 10) {
		/*
		 * Unlike a convert to f16, reduce-precision has no
		 * subnormals: what rounds (to 10 bits) below 2^-14 is a
		 * signed zero, i.e. |x| < 2^-14 - 2^-26.
		 */
		int small = vtpu_g_compare(p->g, VTPU_LT,
					   vtpu_g_unary(p->g, VTPU_ABS, x),
					   splat(p, 0x1p-14 - 0x1p-26, x));

		return vtpu_g_select(p->g, small,
				     bin(p, VTPU_MUL, x, splat(p, 0, x)),
				     compose_round_f16(p->g, x));
	}
	return error_at(p, in->op_tok->loc,
			"unsupported: reduce-precision to %lld exponent and %lld mantissa bits",
			(long long)in->at->exp_bits, (long long)in->at->mant_bits);
}

/* bitcast to the same element type and count: a reshape. */
/*
 * A bitcast reinterprets the bytes: with layouts, a value's bytes are its
 * elements in major-to-minor order of its layout, not row-major (compiled
 * HLO writes a transpose as a copy to a {0,1} layout and a bitcast).
 * !@back: @x, of shape @sh, in its physical order (a transpose, if the
 * layout is not row-major, to the dims major to minor); @back: the value
 * of shape @sh whose physical order is @x's elements (a reshape to the
 * physical dims, then the transpose back).
 */
static int physical(struct parser *p, int x, const struct hshape *sh,
		    bool back)
{
	int perm[R], inv[R], i, r = sh->s.rank;
	int64_t dims[R] = { 0 };
	bool plain = true;

	for (i = 0; i < r; i++) {
		perm[i] = sh->has_layout ? sh->minor_to_major[r - 1 - i] : i;
		inv[perm[i]] = i;
		dims[i] = sh->s.dims[perm[i]];
		plain &= perm[i] == i;
	}
	if (!back) {
		if (plain)
			return x;
		x = vtpu_g_transpose(p->g, x, perm);
		if (x < 0)
			return x;
		/* flat, so the reshape back is one row-major reinterpretation */
		dims[0] = elems_of(&sh->s);
		return vtpu_g_reshape(p->g, x, 1, dims);
	}
	x = vtpu_g_reshape(p->g, x, r, dims);
	if (x < 0 || plain)
		return x;
	return vtpu_g_transpose(p->g, x, inv);
}

static int build_bitcast(struct parser *p, struct inst *in)
{
	struct vtpu_shape s;
	int x = 0;

	if (array_shape(p, in) || value_of(p, in, 0, &x))
		return p->ret;
	s = shape_of(p, x);
	if (s.type != in->shape.s.type ||
	    in->ops[0]->shape.htype != in->shape.htype ||
	    elems_of(&s) != elems_of(&in->shape.s))
		return error_at(p, in->op_tok->loc,
				"unsupported: bitcast that changes the element type or count");
	x = physical(p, x, &in->ops[0]->shape, false);
	if (x < 0)
		return builder_error(p, in, x);
	x = physical(p, x, &in->shape, true);
	return x < 0 ? builder_error(p, in, x) : x;
}

/* ---- tuples, calls and control flow -------------------------------------- */

static int build_comp(struct parser *p, struct comp *c, int nargs,
		      const struct hval *args, const struct tok *site,
		      struct hval *out);
static int leaves(const struct hval *v, int *ids, int n);

/* Whether value @v has shape @sh (tuples element by element). */
static bool hval_is(struct parser *p, const struct hval *v,
		    const struct hshape *sh)
{
	struct vtpu_shape s;
	int i;

	if (sh->tuple) {
		if (v->n != sh->n)
			return false;
		for (i = 0; i < v->n; i++)
			if (!hval_is(p, &v->e[i], &sh->elem[i]))
				return false;
		return true;
	}
	if (v->n >= 0)
		return false;
	s = shape_of(p, v->id);
	if (p->map.rank && !sh->s.rank) {
		struct vtpu_shape m = p->map;

		m.type = sh->s.type;
		return shape_same(&s, &m);
	}
	return shape_same(&s, &sh->s);
}

static void fmt_hval(struct parser *p, char *buf, size_t n,
		     const struct hval *v)
{
	struct vtpu_shape s;

	if (v->n >= 0) {
		snprintf(buf, n, "a tuple of %d", v->n);
		return;
	}
	s = shape_of(p, v->id);
	fmt_shape(buf, n, &s);
}

/* The shape the text states must be the one the builder inferred. */
static int check_shape(struct parser *p, const struct inst *in)
{
	char a[80], b[80];

	if (hval_is(p, &in->v, &in->shape))
		return 0;
	fmt_hshape(a, sizeof(a), &in->shape);
	fmt_hval(p, b, sizeof(b), &in->v);
	return error_at(p, in->shape.loc,
			"shape mismatch: the text says %s, the operands make %s",
			a, b);
}

/* tuple(a, b, ...): its members, which may be tuples themselves. */
static int build_tuple(struct parser *p, struct inst *in)
{
	int i;

	in->v.n = in->nops;
	in->v.e = alloc_array(p, in->nops ? in->nops : 1, sizeof(*in->v.e));
	if (!in->v.e)
		return p->ret;
	for (i = 0; i < in->nops; i++)
		in->v.e[i] = in->ops[i]->v;
	return 0;
}

static int build_gte(struct parser *p, struct inst *in)
{
	const struct hval *t = &in->ops[0]->v;

	if (need(p, in, AT_INDEX))
		return p->ret;
	if (t->n < 0)
		return error_at(p, in->op_name[0]->loc,
				"get-tuple-element of '%.*s', which is not a tuple",
				(int)in->op_name[0]->n, in->op_name[0]->s);
	if (in->at->index < 0 || in->at->index >= t->n)
		return error_at(p, in->at->val[AT_INDEX]->loc,
				"index %lld out of range", (long long)in->at->index);
	in->v = t->e[in->at->index];
	return 0;
}

/* The operands' values, as arguments of a computation. */
static struct hval *operand_vals(struct parser *p, const struct inst *in,
				 int from)
{
	struct hval *a = alloc_array(p, in->nops + 1, sizeof(*a));
	int i;

	if (!a)
		return NULL;
	for (i = from; i < in->nops; i++)
		a[i - from] = in->ops[i]->v;
	return a;
}

/* call(...), to_apply=c and fusion(...), calls=c: c inlined. */
static int build_call(struct parser *p, struct inst *in)
{
	struct comp *c;
	struct hval *a;

	if (need(p, in, in->op->arg ? AT_CALLS : AT_TO_APPLY))
		return p->ret;
	c = in->op->arg ? in->at->calls : in->at->to_apply;
	a = operand_vals(p, in, 0);
	if (!a)
		return p->ret;
	return build_comp(p, c, in->nops, a, in->op_tok, &in->v);
}

/* select(@pred, @a, @b) through tuples; @pred a pred scalar. */
static int select_hval(struct parser *p, const struct inst *in, int pred,
		       const struct hval *a, const struct hval *b,
		       struct hval *out)
{
	struct hval *e;
	int i, y;

	if (a->n != b->n)
		return error_at(p, in->op_tok->loc,
				"the branches give different shapes");
	if (a->n < 0) {
		y = vtpu_g_select(p->g, bcast_like(p, pred, a->id), a->id, b->id);
		if (y < 0)
			return builder_error(p, in, y);
		*out = array_val(y);
		return 0;
	}
	/* @out may be @a or @b: built aside, then stored */
	e = alloc_array(p, a->n + 1, sizeof(*e));
	if (!e)
		return p->ret;
	for (i = 0; i < a->n; i++)
		if (select_hval(p, in, pred, &a->e[i], &b->e[i], &e[i]))
			return p->ret;
	memset(out, 0, sizeof(*out));
	out->n = a->n;
	out->e = e;
	return 0;
}

/* Iterations of a loop with a known trip count that are unrolled. */
static int64_t unroll_limit(void)
{
	const char *e = getenv("VTPU_HLO_UNROLL");
	long long v = e ? atoll(e) : -1;

	return v >= 0 && v <= MAX_UNROLL ? v : 64;
}

/* @v with its leaves, in order, replaced by @ids (from *@k on). */
static int relabel(struct parser *p, const struct hval *v, const int *ids,
		   int *k, struct hval *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	if (v->n < 0) {
		*out = array_val(ids[(*k)++]);
		return 0;
	}
	out->n = v->n;
	out->e = alloc_array(p, v->n + 1, sizeof(*out->e));
	if (!out->e)
		return p->ret;
	for (i = 0; i < v->n; i++)
		if (relabel(p, &v->e[i], ids, k, &out->e[i]))
			return p->ret;
	return 0;
}

/*
 * Computation @c on a state shaped like @state, built as a graph of its
 * own: one parameter per leaf (pred crosses as s32, as at every binding),
 * its result's leaves the outputs (@cond: the pred, as an s32 scalar).
 */
static int loop_graph(struct parser *p, const struct inst *in,
		      struct comp *c, const struct hval *state,
		      const int *ids, int n, bool cond,
		      struct vtpu_graph **out)
{
	struct vtpu_graph *outer = p->g, *g = vtpu_graph_new();
	int *pid = alloc_array(p, n + 1, sizeof(int));
	int *oid = alloc_array(p, n + 1, sizeof(int));
	struct hval args, res;
	int k = 0, i, no;

	*out = NULL;
	if (!g || !pid || !oid) {
		vtpu_graph_free(g);
		return p->ret ? p->ret : error_at(p, in->op_tok->loc, "out of memory");
	}
	p->g = g;
	for (i = 0; i < n; i++) {
		struct vtpu_shape s;
		bool pred;

		vtpu_graph_shape(outer, ids[i], &s);
		pred = s.type == VTPU_PRED;
		if (pred)
			s.type = VTPU_S32;
		pid[i] = vtpu_g_parameter(g, i, &s, NULL);
		if (pred)
			pid[i] = vtpu_g_compare(g, VTPU_NE, pid[i],
						splat(p, 0, pid[i]));
	}
	if (relabel(p, state, pid, &k, &args) ||
	    build_comp(p, c, 1, &args, in->op_tok, &res))
		goto fail;
	if (cond) {
		if (res.n >= 0 || shape_of(p, res.id).type != VTPU_PRED ||
		    rank_of(p, res.id)) {
			error_at(p, in->at->val[AT_CONDITION]->loc,
				 "the condition must give a pred scalar");
			goto fail;
		}
		oid[0] = to_type(p, res.id, VTPU_S32);
		no = 1;
	} else {
		no = leaves(&res, NULL, 0);
		if (no == n)
			leaves(&res, oid, 0);
		for (i = 0; i < n && no == n; i++) {
			struct vtpu_shape a = shape_of(p, oid[i]), b;

			vtpu_graph_shape(outer, ids[i], &b);
			if (!shape_same(&a, &b))
				no = -1;
			else if (a.type == VTPU_PRED)
				oid[i] = to_type(p, oid[i], VTPU_S32);
		}
		if (no != n) {
			error_at(p, in->at->val[AT_BODY]->loc,
				 "the body must give the loop's state shape");
			goto fail;
		}
	}
	i = vtpu_g_outputs(g, no, oid);
	if (i < 0) {
		builder_error(p, in, i);
		goto fail;
	}
	p->g = outer;
	*out = g;
	return 0;
fail:
	p->g = outer;
	vtpu_graph_free(g);
	return p->ret;
}

/*
 * The rest of while loop @in, from @state on, as a loop on the device
 * (a WHILE node, ISA version 4): its condition and body compiled as
 * graphs of their own, which the program branches through.
 */
static int device_loop(struct parser *p, struct inst *in, struct hval *state)
{
	struct vtpu_graph *cg = NULL, *bg = NULL;
	int n = leaves(state, NULL, 0), *ids, *outs, i, k = 0, ret;
	struct hval res;

	ids = alloc_array(p, n + 1, sizeof(int));
	outs = alloc_array(p, n + 1, sizeof(int));
	if (!ids || !outs)
		return p->ret;
	if (!n)
		return error_at(p, in->op_tok->loc,
				"unsupported: a while loop without state");
	leaves(state, ids, 0);
	if (loop_graph(p, in, in->at->cond, state, ids, n, true, &cg) ||
	    loop_graph(p, in, in->at->body, state, ids, n, false, &bg))
		goto fail;
	for (i = 0; i < n; i++)
		if (shape_of(p, ids[i]).type == VTPU_PRED)
			ids[i] = to_type(p, ids[i], VTPU_S32);
	ret = ir_while(&p->g->ir, n, ids, cg, bg, outs);
	cg = bg = NULL;		/* the graph owns them now */
	if (ret < 0)
		return builder_error(p, in, ret);
	leaves(state, ids, 0);
	for (i = 0; i < n; i++)
		if (shape_of(p, ids[i]).type == VTPU_PRED)
			outs[i] = vtpu_g_compare(p->g, VTPU_NE, outs[i],
						 splat(p, 0, outs[i]));
	if (relabel(p, state, outs, &k, &res))
		return p->ret;
	in->v = res;
	return 0;
fail:
	vtpu_graph_free(cg);
	vtpu_graph_free(bg);
	return p->ret;
}

/*
 * while(init), condition=c, body=b. While c, built on the loop's state,
 * comes out as a compile-time constant (a counter against a bound, as
 * fori_loop and scan make), iterations are unrolled: plain code, and
 * dynamic slices at the counter become static ones. From the first
 * iteration whose condition depends on run-time data, or after
 * unroll_limit() of them ($VTPU_HLO_UNROLL, 64 by default), the rest is
 * a loop on the device, which runs exactly as many iterations as the
 * data asks for.
 */
static int build_while(struct parser *p, struct inst *in)
{
	struct hval state = in->ops[0]->v, cond;
	int64_t iter, limit = unroll_limit();
	int start = p->g->ir.n;

	if (need(p, in, AT_CONDITION) || need(p, in, AT_BODY))
		return p->ret;
	for (iter = 0;; iter++) {
		if (build_comp(p, in->at->cond, 1, &state, in->op_tok, &cond))
			return p->ret;
		if (cond.n >= 0 || shape_of(p, cond.id).type != VTPU_PRED ||
		    rank_of(p, cond.id))
			return error_at(p, in->at->val[AT_CONDITION]->loc,
					"the condition must give a pred scalar");
		if (!cond.known || iter >= limit ||
		    p->g->ir.n - start > MAX_UNROLL_NODES)
			break;
		if (!cond.k) {
			in->v = state;
			return 0;
		}
		if (build_comp(p, in->at->body, 1, &state, in->op_tok, &state))
			return p->ret;
	}
	return device_loop(p, in, &state);
}

/*
 * conditional(p, t_arg, f_arg), true_computation=, false_computation=
 * and conditional(i, args...), branch_computations={...}: the branch a
 * known predicate picks, else every branch, then selects (an index out
 * of range runs the last branch, as XLA does). Branches are pure, so
 * building them all is only more work.
 */
static int build_cond(struct parser *p, struct inst *in)
{
	const struct hval *sel = &in->ops[0]->v;
	struct comp *pair[2], **br;
	struct hval *res;
	int nb, i, k, pred;
	bool is_pred;

	if (in->nops < 1 || sel->n >= 0 || rank_of(p, sel->id))
		return error_at(p, in->op_tok->loc,
				"a conditional needs a scalar predicate or index");
	is_pred = shape_of(p, sel->id).type == VTPU_PRED;
	if (is_pred) {
		if (need(p, in, AT_TRUE_COMP) || need(p, in, AT_FALSE_COMP))
			return p->ret;
		/* branch 0 is taken for false, as for index 0 */
		pair[0] = in->at->fcomp;
		pair[1] = in->at->tcomp;
		br = pair;
		nb = 2;
		if (in->nops != 3)
			return error_at(p, in->op_tok->loc,
					"a pred conditional takes 3 operands");
	} else {
		if (need(p, in, AT_BRANCHES))
			return p->ret;
		br = in->at->branches;
		nb = in->at->nbranch;
		if (in->nops != nb + 1 || nb < 1)
			return error_at(p, in->op_tok->loc,
					"a conditional of %d branches takes %d operands",
					nb, nb + 1);
	}
	/* operand 1 + k goes to branch k; pred: false, true = f_arg, t_arg */
	res = alloc_array(p, nb, sizeof(*res));
	if (!res)
		return p->ret;
	if (sel->known) {
		k = is_pred ? sel->k != 0 :
		    (sel->k < 0 || sel->k >= nb) ? nb - 1 : (int)sel->k;
		i = is_pred ? (k ? 1 : 2) : 1 + k;
		return build_comp(p, br[k], 1, &in->ops[i]->v, in->op_tok,
				  &in->v);
	}
	for (k = 0; k < nb; k++) {
		i = is_pred ? (k ? 1 : 2) : 1 + k;
		if (build_comp(p, br[k], 1, &in->ops[i]->v, in->op_tok, &res[k]))
			return p->ret;
	}
	in->v = res[nb - 1];
	for (k = nb - 2; k >= 0; k--) {
		pred = is_pred ? p_not(p, sel->id) :
		       vtpu_g_compare(p->g, VTPU_EQ, to_type(p, sel->id, VTPU_S32),
				      scalar_of(p, k, VTPU_S32));
		if (pred < 0)
			return builder_error(p, in, pred);
		if (select_hval(p, in, pred, &res[k], &in->v, &in->v))
			return p->ret;
	}
	return 0;
}

/*
 * Collectives over one device (the only kind vtpu has): all-reduce,
 * all-gather, reduce-scatter and all-to-all are their operands, when the
 * replica groups name one device at most.
 */
static int build_collective(struct parser *p, struct inst *in)
{
	if (!in->at || !in->at->one_replica)
		return error_at(p, in->op_tok->loc,
				"unsupported: %s across more than one device",
				in->op->text);
	if (in->nops == 1) {
		in->v = in->ops[0]->v;
		return 0;
	}
	return build_tuple(p, in);
}

/*
 * custom-call: the targets with plain semantics on one device (sharding
 * annotations) are their operand; any other is refused by name.
 */
static int build_custom(struct parser *p, struct inst *in)
{
	static const char *const identity[] = {
		"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
		"MoveToHost", "MoveToDevice", "annotate_device_placement",
	};
	const struct tok *t = in->at ? in->at->target : NULL;
	size_t i;

	if (!t)
		return error_at(p, in->op_tok->loc,
				"custom-call needs custom_call_target=");
	for (i = 0; i < ARRAY_SIZE(identity); i++)
		if (t->n == strlen(identity[i]) &&
		    !memcmp(t->s, identity[i], t->n) && in->nops == 1) {
			in->v = in->ops[0]->v;
			return 0;
		}
	if (t->n == 4 && !memcmp(t->s, "TopK", 4))
		return build_topk(p, in);
	return error_at(p, t->loc, "unsupported: custom-call target '%.*s'",
			(int)t->n, t->s);
}

/* ---- instructions and computations --------------------------------------- */

/* Builds an instruction whose result is an array; its value id or -errno. */
static int build_value(struct parser *p, struct inst *in)
{
	int v[3] = { 0 };

	switch (in->op->kind) {
	case OK_CONST:
		return vtpu_g_constant(p->g, &in->shape.s, in->data);
	case OK_UNARY:
		if (values_of(p, in, v))
			return p->ret;
		if (shape_of(p, v[0]).type == VTPU_S32 &&
		    (in->op->arg == VTPU_NEG || in->op->arg == VTPU_ABS)) {
			int neg = bin(p, VTPU_SUB, splat(p, 0, v[0]), v[0]);

			if (in->op->arg == VTPU_NEG)
				return neg;
			return bin(p, VTPU_MAX, v[0], neg);
		}
		return vtpu_g_unary(p->g, in->op->arg, v[0]);
	case OK_BINARY:
		return build_binary(p, in);
	case OK_COMPARE:
		return build_compare(p, in);
	case OK_SELECT:
		return build_select(p, in);
	case OK_CONVERT:
		return build_convert(p, in);
	case OK_COPY:
		if (values_of(p, in, v))
			return p->ret;
		return v[0];	/* layouts are ignored: a copy is the value */
	case OK_RESHAPE:
		if (array_shape(p, in) || values_of(p, in, v))
			return p->ret;
		return vtpu_g_reshape(p->g, v[0], in->shape.s.rank,
				      in->shape.s.dims);
	case OK_BROADCAST:
		return build_broadcast(p, in);
	case OK_TRANSPOSE:
		return build_transpose(p, in);
	case OK_DOT:
		return build_dot(p, in);
	case OK_CONV:
		return build_conv(p, in);
	case OK_CONCAT:
		return build_concat(p, in);
	case OK_SLICE:
		return build_slice(p, in);
	case OK_PAD:
		return build_pad(p, in);
	case OK_IOTA:
		return build_iota(p, in);
	case OK_CLAMP:
		return build_clamp(p, in);
	case OK_BITCAST:
		return build_bitcast(p, in);
	case OK_DSLICE:
		return build_dslice(p, in);
	case OK_DUS:
		return build_dus(p, in);
	case OK_GATHER:
		return build_gather(p, in);
	case OK_SCATTER:
		return build_scatter(p, in);
	case OK_REVERSE:
		return build_reverse(p, in);
	case OK_BN_INF:
		return build_bn_inf(p, in);
	case OK_LOGIC:
		return build_logic(p, in);
	case OK_MATH:
		return build_math(p, in);
	case OK_REDUCE_PRECISION:
		return build_reduce_precision(p, in);
	case OK_REPLICA_ID:	/* one device: number 0 */
		if (array_shape(p, in))
			return p->ret;
		return scalar_of(p, 0, in->shape.s.type);
	default:
		return error_at(p, in->op_tok->loc, "unsupported opcode '%.*s'",
				(int)in->op_tok->n, in->op_tok->s);
	}
}

/* Builds one instruction into in->v. */
/* The leaves of @v that @sh says are f16, rounded to f16. */
static int round_f16_leaves(struct parser *p, const struct inst *in,
			    struct hval *v, const struct hshape *sh)
{
	int i, id;

	if (sh->tuple) {
		if (v->n != sh->n)
			return 0;	/* check_shape() says what is wrong */
		for (i = 0; i < v->n; i++)
			if (round_f16_leaves(p, in, &v->e[i], &sh->elem[i]))
				return p->ret;
		return 0;
	}
	if (v->n >= 0 || hlo_types[sh->htype].kind != HT_F16)
		return 0;
	id = compose_round_f16(p->g, v->id);
	if (id < 0)
		return builder_error(p, in, id);
	*v = array_val(id);
	return 0;
}

/* What a computation applied elementwise may hold: scalar functions. */
static bool map_ok(const struct inst *in)
{
	switch (in->op->kind) {
	case OK_PARAM: case OK_CONST: case OK_UNARY: case OK_BINARY:
	case OK_COMPARE: case OK_SELECT: case OK_CONVERT: case OK_COPY:
	case OK_CLAMP: case OK_LOGIC: case OK_MATH: case OK_IDENTITY:
	case OK_REDUCE_PRECISION: case OK_CALL:
		return !in->shape.tuple && !in->shape.s.rank;
	default:
		return false;
	}
}

static int build_inst(struct parser *p, struct inst *in)
{
	int id, ret = 0;

	memset(&in->v, 0, sizeof(in->v));
	in->v.n = -1;
	if (p->map.rank && !map_ok(in))
		return error_at(p, in->op_tok->loc,
				"unsupported: %.*s in a computation applied elementwise (a sort comparator)",
				(int)in->op_tok->n, in->op_tok->s);
	switch (in->op->kind) {
	case OK_TUPLE:
		ret = build_tuple(p, in);
		break;
	case OK_GTE:
		ret = build_gte(p, in);
		break;
	case OK_IDENTITY:
		in->v = in->ops[0]->v;
		break;
	case OK_CALL:
		ret = build_call(p, in);
		break;
	case OK_WHILE:
		ret = build_while(p, in);
		break;
	case OK_COND:
		ret = build_cond(p, in);
		break;
	case OK_COLLECTIVE:
		ret = build_collective(p, in);
		break;
	case OK_CUSTOM:
		ret = build_custom(p, in);
		break;
	case OK_REDUCE:
		ret = build_reduce(p, in);
		break;
	case OK_RWINDOW:
		ret = build_reduce_window(p, in);
		break;
	case OK_BN_TRAIN:
		ret = build_bn_train(p, in);
		break;
	case OK_SORT:
		ret = build_sort(p, in);
		break;
	case OK_SELSCAT:
		ret = build_select_scatter(p, in);
		break;
	default:
		id = build_value(p, in);
		if (p->ret)
			return p->ret;
		if (id < 0)
			return builder_error(p, in, id);
		/*
		 * f16 runs in f32: each arithmetic result is rounded to f16,
		 * as f16 hardware (and XLA's evaluator) gives it; operations
		 * that only move values need not.
		 */
		if (!in->shape.tuple &&
		    hlo_types[in->shape.htype].kind == HT_F16 &&
		    (in->op->kind == OK_UNARY || in->op->kind == OK_BINARY ||
		     in->op->kind == OK_MATH || in->op->kind == OK_DOT ||
		     in->op->kind == OK_CONV || in->op->kind == OK_BN_INF)) {
			id = compose_round_f16(p->g, id);
			if (id < 0)
				return builder_error(p, in, id);
		}
		if (p->map.rank && in->op->kind == OK_CONST) {
			id = vtpu_g_broadcast(p->g, id, p->map.rank,
					      p->map.dims, NULL);
			if (id < 0)
				return builder_error(p, in, id);
		}
		in->v = array_val(id);
		fold_known(in);
		break;
	}
	if (ret || p->ret)
		return p->ret ? p->ret : ret;
	/* reductions' f16 results too (their sums run in f32) */
	if ((in->op->kind == OK_REDUCE || in->op->kind == OK_RWINDOW ||
	     in->op->kind == OK_BN_TRAIN) &&
	    round_f16_leaves(p, in, &in->v, &in->shape))
		return p->ret;
	return check_shape(p, in);
}

/* The parameters of @c: numbers 0 .. n - 1, each once; by number in @by. */
static int index_params(struct parser *p, const struct comp *c,
			struct inst **by)
{
	struct inst *in;

	for (in = c->first; in; in = in->next) {
		if (in->op->kind != OK_PARAM)
			continue;
		if (in->param >= c->nparams)
			return error_at(p, in->arg_tok->loc,
					"parameter(%lld) but the computation has %d parameters",
					(long long)in->param, c->nparams);
		if (by[in->param])
			return error_at(p, in->arg_tok->loc,
					"parameter(%lld) defined twice",
					(long long)in->param);
		by[in->param] = in;
	}
	return 0;
}

/*
 * Builds computation @c with its parameters bound to @args (@site: the
 * instruction that uses it, for errors); its root's value in *@out.
 */
static int build_comp(struct parser *p, struct comp *c, int nargs,
		      const struct hval *args, const struct tok *site,
		      struct hval *out)
{
	struct inst **by, *in;
	int i;

	if (nargs != c->nparams)
		return error_at(p, site->loc,
				"computation '%.*s' takes %d parameters, given %d",
				(int)c->name->n, c->name->s, c->nparams, nargs);
	by = alloc_array(p, c->nparams + 1, sizeof(*by));
	if (!by || index_params(p, c, by))
		return p->ret;
	for (i = 0; i < nargs; i++) {
		in = by[i];
		in->v = args[i];
		if (!hval_is(p, &in->v, &in->shape)) {
			char a[80], b[80];

			fmt_hshape(a, sizeof(a), &in->shape);
			fmt_hval(p, b, sizeof(b), &in->v);
			return error_at(p, in->shape.loc,
					"parameter %d of '%.*s' is %s, given %s",
					i, (int)c->name->n, c->name->s, a, b);
		}
	}
	for (in = c->first; in; in = in->next) {
		/* inlining and unrolling multiply: one budget for the module */
		if (p->g->ir.n > MAX_NODES)
			return error_at(p, in->op_tok->loc,
					"unsupported: the module inlines and unrolls into more than %d operations",
					MAX_NODES);
		if (in->op->kind != OK_PARAM && build_inst(p, in))
			return p->ret;
	}
	*out = c->root->v;
	return 0;
}

/* The ENTRY parameters as graph parameters, tuples leaf by leaf. */
static int make_params(struct parser *p, const struct inst *in,
		       const struct hshape *sh, int *next, struct hval *v)
{
	char name[128];
	int i, id;

	memset(v, 0, sizeof(*v));
	if (sh->tuple) {
		v->n = sh->n;
		v->e = alloc_array(p, sh->n + 1, sizeof(*v->e));
		if (!v->e)
			return p->ret;
		for (i = 0; i < sh->n; i++)
			if (make_params(p, in, &sh->elem[i], next, &v->e[i]))
				return p->ret;
		return 0;
	}
	/* pred crosses the boundary as s32 0 and 1, as in the ONNX frontend */
	{
		struct vtpu_shape s = sh->s;

		if (s.type == VTPU_PRED)
			s.type = VTPU_S32;
		id = vtpu_g_parameter(p->g, (*next)++, &s,
				      tok_cstr(in->name, name, sizeof(name)) ?
				      name : NULL);
		if (id >= 0 && sh->s.type == VTPU_PRED)
			id = vtpu_g_compare(p->g, VTPU_NE, id, splat(p, 0, id));
	}
	if (id < 0)
		return builder_error(p, in, id);
	*v = array_val(id);
	return 0;
}

/* The leaves of @v, in order, into @ids (NULL: only counted). */
static int leaves(const struct hval *v, int *ids, int n)
{
	int i;

	if (v->n < 0) {
		if (ids)
			ids[n] = v->id;
		return n + 1;
	}
	for (i = 0; i < v->n; i++)
		n = leaves(&v->e[i], ids, n);
	return n;
}

static int build(struct parser *p)
{
	struct comp *c = p->entry;
	struct hval *args, out;
	struct inst **by;
	int i, next = 0, n, *ids, ret;

	p->g = vtpu_graph_new();
	if (!p->g)
		return oom(p);
	by = alloc_array(p, c->nparams + 1, sizeof(*by));
	args = alloc_array(p, c->nparams + 1, sizeof(*args));
	if (!by || !args || index_params(p, c, by))
		return p->ret;
	for (i = 0; i < c->nparams; i++)
		if (make_params(p, by[i], &by[i]->shape, &next, &args[i]))
			return p->ret;
	if (build_comp(p, c, c->nparams, args, c->name, &out))
		return p->ret;
	n = leaves(&out, NULL, 0);
	if (!n)
		return error_at(p, c->root->op_tok->loc,
				"unsupported: an empty tuple as the result");
	ids = alloc_array(p, n, sizeof(*ids));
	if (!ids)
		return p->ret;
	leaves(&out, ids, 0);
	for (i = 0; i < n; i++)
		ids[i] = to_type(p, ids[i], shape_of(p, ids[i]).type == VTPU_PRED ?
				 VTPU_S32 : shape_of(p, ids[i]).type);
	ret = vtpu_g_outputs(p->g, n, ids);
	if (ret < 0)
		return builder_error(p, c->root, ret);
	return 0;
}

int vtpu_hlo_parse(const char *text, size_t len, struct vtpu_graph **out,
		   char *err, size_t errlen)
{
	struct parser p = { 0 };
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!out || (!text && len)) {
		if (err && errlen)
			snprintf(err, errlen, "bad arguments");
		return -EINVAL;
	}
	*out = NULL;
	p.text = text ? text : "";
	p.end = p.text + len;
	ret = tokenize(&p);
	if (!ret)
		ret = parse_module(&p);
	if (!ret)
		ret = build(&p);
	if (ret) {
		if (p.g)
			vtpu_graph_free(p.g);
		if (err && errlen)
			snprintf(err, errlen, "%s", p.msg);
	} else {
		*out = p.g;
	}
	arena_free(&p);
	return ret;
}
