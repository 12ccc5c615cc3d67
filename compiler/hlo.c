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
	struct vtpu_shape s;	/* an array shape */
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
	X(INDEX,	"index")

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
	struct comp *to_apply;
	int nslice;
	int64_t start[R], limit[R], stride[R];
	struct dxd padding;
};

enum op_kind {
	OK_PARAM, OK_CONST, OK_UNARY, OK_BINARY, OK_COMPARE, OK_SELECT,
	OK_CONVERT, OK_COPY, OK_BROADCAST, OK_RESHAPE, OK_TRANSPOSE, OK_DOT,
	OK_CONV, OK_REDUCE, OK_CONCAT, OK_SLICE, OK_PAD, OK_TUPLE, OK_GTE,
	OK_UNSUPPORTED,
};

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
	X("get-tuple-element",  OK_GTE,       0,            1)

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
	"add-dependency", "after-all", "all-gather", "all-gather-done",
	"all-gather-start", "all-reduce", "all-reduce-done",
	"all-reduce-start", "all-to-all", "and", "async-done", "async-start",
	"async-update", "atan2", "batch-norm-grad", "batch-norm-inference",
	"batch-norm-training", "bitcast", "bitcast-convert", "call", "cbrt",
	"ceil", "cholesky", "clamp", "collective-broadcast",
	"collective-permute", "collective-permute-done",
	"collective-permute-start", "complex", "conditional", "copy-done",
	"copy-start", "cosine", "count-leading-zeros", "custom-call",
	"domain", "dynamic-reshape", "dynamic-slice", "dynamic-update-slice",
	"erf", "exponential-minus-one", "fft", "floor", "fusion", "gather",
	"get-dimension-size", "imag", "infeed", "iota", "is-finite",
	"log-plus-one", "map", "not", "optimization-barrier", "or", "outfeed",
	"partition-id", "popcnt", "ragged-all-to-all", "real", "recv",
	"recv-done", "reduce-precision", "reduce-scatter", "reduce-window",
	"remainder", "replica-id", "reverse", "rng", "rng-bit-generator",
	"rng-get-and-update-state", "round-nearest-afz",
	"round-nearest-even", "scatter", "select-and-scatter", "send",
	"send-done", "set-dimension-size", "shift-left",
	"shift-right-arithmetic", "shift-right-logical", "sign", "sine",
	"sort", "stochastic-convert", "tan", "topk", "triangular-solve",
	"while", "xor",
};

static const struct hlo_op op_unsupported = { "", OK_UNSUPPORTED, 0, -1 };

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
	int id;
	bool is_tuple;
	int ntuple;
	int *tuple;
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

/* XLA's other element types: "unsupported", not "expected a shape". */
static const char *const other_types[] = {
	"f16", "f64", "s2", "s4", "s8", "s16", "u1", "u2", "u4", "u8", "u16",
	"u32", "u64", "c64", "c128", "token", "tf32", "f4e2m1fn", "f8e3m4",
	"f8e4m3", "f8e4m3b11fnuz", "f8e4m3fn", "f8e4m3fnuz", "f8e5m2",
	"f8e5m2fnuz", "f8e8m0fnu",
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int lookup_type(struct parser *p, const struct tok *t,
		       enum vtpu_type *type)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(type_names); i++) {
		if (is_ident(t, type_names[i])) {
			*type = (enum vtpu_type)i;
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
 * shape  = type dims layout? | "(" [shape ("," shape)*] ")"
 * layout = "{" (NUM | ":" | "}") ... "}"          (ignored)
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
	if (lookup_type(p, p->tok, &sh->s.type))
		return p->ret;
	advance(p);
	if (parse_dims(p, &sh->s))
		return p->ret;
	if (is_punct(p->tok, "{")) {
		const struct tok *t = peek2(p);

		/* A layout, not the "{" that opens a computation's body. */
		if (t->kind == TK_NUM || is_punct(t, ":") || is_punct(t, "}"))
			return skip_group(p);
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
			return error_at(p, t->loc, "number out of range");
		i32 = (int32_t)i;
		memcpy(dst, &i32, 4);
		return 0;
	default:
		if (parse_float(p, &d))
			return p->ret;
		if (isfinite(d) && fabs(d) > FLT_MAX)
			return error_at(p, t->loc, "number out of range");
		f = (float)d;
		if (type == VTPU_F32) {
			memcpy(dst, &f, 4);
		} else {
			h = vtpu_f32_to_bf16(f);
			memcpy(dst, &h, 2);
		}
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

/* to_apply = name (of a computation defined above) */
static int parse_to_apply(struct parser *p, struct attrs *at)
{
	const struct tok *t = parse_name(p, "a computation name");

	if (!t)
		return p->ret;
	at->to_apply = map_get(&p->comps, t->s, t->n);
	if (!at->to_apply)
		return error_at(p, t->loc, "undefined computation '%.*s'",
				(int)t->n, t->s);
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
		return parse_to_apply(p, at);
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

static const struct hlo_op *lookup_op(struct parser *p, const struct comp *c,
				      const struct tok *t)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hlo_ops); i++)
		if (is_ident(t, hlo_ops[i].text))
			return &hlo_ops[i];
	for (i = 0; i < ARRAY_SIZE(unsupported_ops); i++) {
		if (!is_ident(t, unsupported_ops[i]))
			continue;
		/* other computations may hold anything; only ENTRY is built */
		if (!c->entry)
			return &op_unsupported;
		error_at(p, t->loc, "unsupported opcode '%s'",
			 unsupported_ops[i]);
		return NULL;
	}
	if (t->kind == TK_IDENT)
		error_at(p, t->loc, "unknown opcode '%.*s'", (int)t->n, t->s);
	else
		expected(p, "an opcode");
	return NULL;
}

/* operand = shape? name   (older dumps write each operand's shape) */
static int parse_operand(struct parser *p, struct comp *c, struct inst *in,
			 size_t *cap)
{
	const struct tok *t;
	struct hshape ignored = { 0 };
	struct inst *o;

	if ((p->tok->kind == TK_IDENT && is_punct(peek2(p), "[")) ||
	    is_punct(p->tok, "(")) {
		if (parse_shape(p, &ignored, 0))
			return p->ret;
	}
	t = parse_name(p, "an operand name");
	if (!t)
		return p->ret;
	o = map_get(&c->names, t->s, t->n);
	if (!o)
		return error_at(p, t->loc, "undefined operand '%.*s'",
				(int)t->n, t->s);
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
	return map_put(p, &c->names, in->name->s, in->name->n, in);
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
	if (skip(p, "=") || parse_shape(p, &in->shape, 0))
		return p->ret;
	in->op_tok = p->tok;
	in->op = lookup_op(p, c, p->tok);
	if (!in->op)
		return p->ret;
	advance(p);
	if (skip(p, "(") || parse_args(p, c, in) || skip(p, ")"))
		return p->ret;
	while (consume(p, ","))
		if (parse_attr(p, in))
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
static int parse_computation(struct parser *p)
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
	return map_put(p, &p->comps, c->name->s, c->name->n, c);
}

/* module = "HloModule" name ("," attr)* computation* EOF */
static int parse_module(struct parser *p)
{
	if (!is_ident(p->tok, "HloModule"))
		return expected(p, "'HloModule'");
	advance(p);
	if (!parse_name(p, "a module name"))
		return p->ret;
	while (consume(p, ","))
		if (parse_attr(p, NULL))
			return p->ret;
	while (p->tok->kind != TK_EOF)
		if (parse_computation(p))
			return p->ret;
	if (!p->entry)
		return error_at(p, p->tok->loc, "missing ENTRY computation");
	return 0;
}

/* ---- build: the ENTRY computation through the builder -------------------- */

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

/* The value id of operand @i (tuples are only outputs or get-tuple-element's). */
static int value_of(struct parser *p, const struct inst *in, int i, int *id)
{
	if (in->ops[i]->is_tuple)
		return error_at(p, in->op_name[i]->loc,
				"unsupported: tuple '%.*s' as an operand",
				(int)in->op_name[i]->n, in->op_name[i]->s);
	*id = in->ops[i]->id;
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
	int64_t i64;
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
	case VTPU_S64:
		memcpy(&i64, c->data, 8);
		return (double)i64;
	default:
		return *(uint8_t *)c->data;
	}
}

/* Operand @i must be a scalar constant (pad values, reduce inits). */
static int scalar_const(struct parser *p, const struct inst *in, int i,
			const char *what, double *v)
{
	const struct inst *c = in->ops[i];

	if (c->op->kind != OK_CONST || c->shape.s.rank != 0)
		return error_at(p, in->op_name[i]->loc,
				"unsupported: %s must be a scalar constant",
				what);
	*v = const_value(c);
	return 0;
}

/*
 * A reduction computation: ROOT = add|maximum|minimum(p0, p1) of its two
 * scalar parameters, of the reduce's type.
 */
static int reduce_op(struct parser *p, const struct inst *in,
		     enum vtpu_type type, enum vtpu_reduce_op *op)
{
	const struct comp *c = in->at->to_apply;
	const struct inst *r = c->root;
	const struct tok *t = in->at->val[AT_TO_APPLY];

	if (c->nparams != 2 || r->op->kind != OK_BINARY ||
	    r->ops[0]->op->kind != OK_PARAM || r->ops[1]->op->kind != OK_PARAM ||
	    !((r->ops[0]->param == 0 && r->ops[1]->param == 1) ||
	      (r->ops[0]->param == 1 && r->ops[1]->param == 0)) ||
	    (r->op->arg != VTPU_ADD && r->op->arg != VTPU_MAX &&
	     r->op->arg != VTPU_MIN))
		return error_at(p, t->loc,
				"unsupported: to_apply '%.*s' is not add, maximum or minimum of its parameters",
				(int)c->name->n, c->name->s);
	if (r->shape.tuple || r->shape.s.rank || r->shape.s.type != type ||
	    r->ops[0]->shape.tuple || r->ops[0]->shape.s.rank ||
	    r->ops[1]->shape.tuple || r->ops[1]->shape.s.rank)
		return error_at(p, t->loc,
				"to_apply '%.*s' must combine two scalars of the reduce's type",
				(int)c->name->n, c->name->s);
	*op = r->op->arg == VTPU_ADD ? VTPU_REDUCE_SUM_OP :
	      r->op->arg == VTPU_MAX ? VTPU_REDUCE_MAX_OP : VTPU_REDUCE_MIN_OP;
	return 0;
}

/* The identity of each reduction in @type: 0, the lowest, the highest. */
static double reduce_identity(enum vtpu_reduce_op op, enum vtpu_type type)
{
	bool is_int = type == VTPU_S32 || type == VTPU_S64;
	double lo = type == VTPU_S32 ? INT32_MIN : (double)INT64_MIN;
	double hi = type == VTPU_S32 ? INT32_MAX : (double)INT64_MAX;

	if (type == VTPU_PRED)
		return op == VTPU_REDUCE_MIN_OP;
	if (op == VTPU_REDUCE_SUM_OP)
		return 0;
	if (op == VTPU_REDUCE_MAX_OP)
		return is_int ? lo : -INFINITY;
	return is_int ? hi : INFINITY;
}

/* reduce(x, init), dimensions={...}, to_apply=c */
static int build_reduce(struct parser *p, struct inst *in)
{
	static const char *const names[] = { "sum", "max", "min" };
	enum vtpu_reduce_op op = VTPU_REDUCE_SUM_OP;
	double init = 0;
	int x = 0;

	if (in->nops != 2)
		return error_at(p, in->op_tok->loc, in->nops % 2 ?
				"reduce takes 2 operands, found %d" :
				"unsupported: variadic reduce (%d operands)",
				in->nops);
	if (need(p, in, AT_DIMENSIONS) || need(p, in, AT_TO_APPLY) ||
	    value_of(p, in, 0, &x) ||
	    reduce_op(p, in, shape_of(p, x).type, &op) ||
	    scalar_const(p, in, 1, "the reduce's init", &init))
		return p->ret;
	if (init != reduce_identity(op, shape_of(p, x).type))
		return error_at(p, in->op_name[1]->loc,
				"unsupported: %s reduce with init %g (not its identity)",
				names[op], init);
	return vtpu_g_reduce(p->g, op, x, in->at->dims.n, in->at->dims.v);
}

/* Only bf01_oi01->bf01 (NCHW, OIHW), stride, pad, rhs_dilate, groups. */
static int build_conv(struct parser *p, struct inst *in)
{
	struct vtpu_conv_params cp = { 0 };
	const struct attrs *at = in->at;
	const struct dxd *w = at ? at->win : NULL;
	struct vtpu_shape k;
	int x = 0, y = 0, i, f;

	if (need(p, in, AT_DIM_LABELS) || need(p, in, AT_WINDOW) ||
	    value_of(p, in, 0, &x) || value_of(p, in, 1, &y))
		return p->ret;
	k = shape_of(p, y);
	if (!is_ident(at->labels, "bf01_oi01->bf01"))
		return error_at(p, at->labels->loc,
				"unsupported dim_labels '%.*s' (only bf01_oi01->bf01)",
				(int)at->labels->n, at->labels->s);
	for (f = 0; f < WF_NR; f++)
		if (w[f].n && w[f].n != 2)
			return error_at(p, at->val[AT_WINDOW]->loc,
					"window %s must have 2 dimensions",
					window_fields[f]);
	if (w[WF_SIZE].n != 2)
		return error_at(p, at->val[AT_WINDOW]->loc,
				"window needs size=");
	if (at->bgc != 1)
		return error_at(p, at->val[AT_BGC]->loc,
				"unsupported: batch_group_count");
	if (at->fgc < 1 || at->fgc > INT32_MAX)
		return error_at(p, at->val[AT_FGC]->loc,
				"bad feature_group_count");
	for (i = 0; i < 2; i++) {
		if ((w[WF_LHS_DILATE].n && w[WF_LHS_DILATE].v[i][0] != 1) ||
		    (w[WF_REVERSAL].n && w[WF_REVERSAL].v[i][0]))
			return error_at(p, at->val[AT_WINDOW]->loc,
					"unsupported: lhs_dilate or window_reversal");
		if (k.rank == 4 && w[WF_SIZE].v[i][0] != k.dims[2 + i])
			return error_at(p, at->val[AT_WINDOW]->loc,
					"window size does not match the kernel");
		cp.stride[i] = w[WF_STRIDE].n ? (int)w[WF_STRIDE].v[i][0] : 1;
		cp.dilation[i] = w[WF_RHS_DILATE].n ?
				 (int)w[WF_RHS_DILATE].v[i][0] : 1;
		cp.pad_lo[i] = (int)w[WF_PAD].v[i][0];
		cp.pad_hi[i] = (int)w[WF_PAD].v[i][1];
		if (w[WF_PAD].v[i][0] < 0 || w[WF_PAD].v[i][1] < 0)
			return error_at(p, at->val[AT_WINDOW]->loc,
					"unsupported: negative padding");
	}
	cp.groups = (int)at->fgc;
	return vtpu_g_conv2d(p->g, x, y, &cp);
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
	int a = 0, b = 0;

	if (value_of(p, in, 0, &a) || value_of(p, in, 1, &b))
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
	return vtpu_g_dot(p->g, a, b, &d);
}

static int build_slice(struct parser *p, struct inst *in)
{
	int a = 0;

	if (need(p, in, AT_SLICE) || value_of(p, in, 0, &a) ||
	    check_count(p, in, AT_SLICE, in->at->nslice, rank_of(p, a)))
		return p->ret;
	return vtpu_g_slice(p->g, a, in->at->start, in->at->limit,
			    in->at->stride);
}

/* pad(x, v), padding=lo_hi(_interior)?x... */
static int build_pad(struct parser *p, struct inst *in)
{
	int64_t lo[R], hi[R];
	const struct dxd *d;
	double v;
	int a = 0, i;

	if (need(p, in, AT_PADDING) || value_of(p, in, 0, &a) ||
	    scalar_const(p, in, 1, "the pad value", &v))
		return p->ret;
	d = &in->at->padding;
	if (check_count(p, in, AT_PADDING, d->n, rank_of(p, a)))
		return p->ret;
	for (i = 0; i < d->n; i++) {
		if (d->v[i][2])
			return error_at(p, in->at->val[AT_PADDING]->loc,
					"unsupported: interior padding");
		if (d->v[i][0] < 0 || d->v[i][1] < 0)
			return error_at(p, in->at->val[AT_PADDING]->loc,
					"unsupported: negative padding");
		lo[i] = d->v[i][0];
		hi[i] = d->v[i][1];
	}
	return vtpu_g_pad(p->g, a, lo, hi, v);
}

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

/* A tuple: its members' ids, for get-tuple-element and the outputs. */
static int build_tuple(struct parser *p, struct inst *in)
{
	struct vtpu_shape s;
	char a[64], b[64];
	int i;

	in->is_tuple = true;
	in->ntuple = in->nops;
	in->tuple = alloc_array(p, in->nops, sizeof(*in->tuple));
	if (!in->tuple)
		return p->ret;
	for (i = 0; i < in->nops; i++)
		if (in->ops[i]->is_tuple)
			return error_at(p, in->op_name[i]->loc,
					"unsupported: nested tuple");
	if (values_of(p, in, in->tuple))
		return p->ret;
	if (!in->shape.tuple || in->shape.n != in->nops)
		goto mismatch;
	for (i = 0; i < in->nops; i++) {
		if (vtpu_graph_shape(p->g, in->tuple[i], &s))
			return builder_error(p, in, -EINVAL);
		if (in->shape.elem[i].tuple ||
		    !shape_same(&s, &in->shape.elem[i].s))
			goto mismatch;
	}
	return 0;
mismatch:
	fmt_hshape(a, sizeof(a), &in->shape);
	snprintf(b, sizeof(b), "a tuple of %d", in->nops);
	return error_at(p, in->shape.loc, "shape mismatch: the text says %s, the operands make %s",
			a, b);
}

static int build_gte(struct parser *p, struct inst *in)
{
	const struct inst *t = in->ops[0];

	if (need(p, in, AT_INDEX))
		return p->ret;
	if (!t->is_tuple)
		return error_at(p, in->op_name[0]->loc,
				"unsupported: get-tuple-element of '%.*s', not a tuple instruction",
				(int)in->op_name[0]->n, in->op_name[0]->s);
	if (in->at->index < 0 || in->at->index >= t->ntuple)
		return error_at(p, in->at->val[AT_INDEX]->loc,
				"index %lld out of range", (long long)in->at->index);
	return t->tuple[in->at->index];
}

/* Builds one instruction; returns its value id or -errno. */
static int build_value(struct parser *p, struct inst *in)
{
	int v[3] = { 0 };

	/* fixed arity (at most 3): a get-tuple-element's is a tuple */
	if (in->op->nin > 0 && in->op->kind != OK_GTE && values_of(p, in, v))
		return p->ret;
	switch (in->op->kind) {
	case OK_CONST:
		return vtpu_g_constant(p->g, &in->shape.s, in->data);
	case OK_UNARY:
		return vtpu_g_unary(p->g, in->op->arg, v[0]);
	case OK_BINARY:
		return vtpu_g_binary(p->g, in->op->arg, v[0], v[1]);
	case OK_COMPARE:
		if (need(p, in, AT_DIRECTION))
			return p->ret;
		return vtpu_g_compare(p->g, in->at->dir, v[0], v[1]);
	case OK_SELECT:
		return vtpu_g_select(p->g, v[0], v[1], v[2]);
	case OK_CONVERT:
		if (array_shape(p, in))
			return p->ret;
		return vtpu_g_convert(p->g, v[0], in->shape.s.type);
	case OK_COPY:
		return v[0];	/* layouts are ignored: a copy is the value */
	case OK_RESHAPE:
		if (array_shape(p, in))
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
	case OK_REDUCE:
		return build_reduce(p, in);
	case OK_CONCAT:
		return build_concat(p, in);
	case OK_SLICE:
		return build_slice(p, in);
	case OK_PAD:
		return build_pad(p, in);
	case OK_GTE:
		return build_gte(p, in);
	default:
		return error_at(p, in->op_tok->loc, "unsupported opcode '%.*s'",
				(int)in->op_tok->n, in->op_tok->s);
	}
}

/* The shape the text states must be the one the builder inferred. */
static int check_shape(struct parser *p, const struct inst *in)
{
	struct vtpu_shape s;
	char a[80], b[80];
	int ret = vtpu_graph_shape(p->g, in->id, &s);

	if (ret)
		return builder_error(p, in, ret);
	if (!in->shape.tuple && shape_same(&s, &in->shape.s))
		return 0;
	fmt_hshape(a, sizeof(a), &in->shape);
	fmt_shape(b, sizeof(b), &s);
	return error_at(p, in->shape.loc,
			"shape mismatch: the text says %s, the operands make %s",
			a, b);
}

static int build_inst(struct parser *p, struct inst *in)
{
	int id;

	if (in->op->kind == OK_PARAM)
		return 0;
	if (in->op->kind == OK_TUPLE)
		return build_tuple(p, in);
	id = build_value(p, in);
	if (p->ret)
		return p->ret;
	if (id < 0)
		return builder_error(p, in, id);
	in->id = id;
	return check_shape(p, in);
}

/* Parameters first, in number order, as the builder wants them. */
static int build_params(struct parser *p, const struct comp *c)
{
	struct inst **by = alloc_array(p, c->nparams, sizeof(*by));
	struct inst *in;
	char name[128];
	int i, id;

	if (!by)
		return p->ret;
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
		if (in->shape.tuple)
			return error_at(p, in->shape.loc,
					"unsupported: tuple-shaped parameter");
		by[in->param] = in;
	}
	for (i = 0; i < c->nparams; i++) {
		in = by[i];
		id = vtpu_g_parameter(p->g, i, &in->shape.s,
				      tok_cstr(in->name, name, sizeof(name)) ?
				      name : NULL);
		if (id < 0)
			return builder_error(p, in, id);
		in->id = id;
	}
	return 0;
}

static int build(struct parser *p)
{
	const struct comp *c = p->entry;
	struct inst *in;
	int ret, one;

	p->g = vtpu_graph_new();
	if (!p->g)
		return oom(p);
	if (build_params(p, c))
		return p->ret;
	for (in = c->first; in; in = in->next)
		if (build_inst(p, in))
			return p->ret;
	in = c->root;
	if (in->is_tuple) {
		if (!in->ntuple)
			return error_at(p, in->op_tok->loc,
					"unsupported: an empty tuple as the result");
		ret = vtpu_g_outputs(p->g, in->ntuple, in->tuple);
	} else {
		one = in->id;
		ret = vtpu_g_outputs(p->g, 1, &one);
	}
	if (ret < 0)
		return builder_error(p, in, ret);
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
