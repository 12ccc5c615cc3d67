// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx.c - the ONNX frontend: vtpu_onnx_parse().
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
 * per operator family, each checking only what it supports. The first
 * error stops everything: "node I (OP): message".
 */
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
};

struct val {
	const char *name;	/* owned by the unpacked model */
	int id;			/* builder value; -1 until materialized */
	struct cval *c;		/* host copy or NULL */
	struct cval *b;		/* a bound input's values, for cin() only */
	struct seq *s;		/* a sequence, or NULL */
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
	bool folding;		/* building a node on host constants: s64 as f32 */
	const struct vtpu_onnx_binding *bind;	/* vtpu_onnx_parse_bound() */
	int nbind;
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

static struct cval *cval_new(enum vtpu_type type, int rank, const int64_t *dims,
			     const void *data, int64_t n);
static int keep_const(struct ctx *c, node_t *n, struct cval *cv);
static int iota_along(struct ctx *c, int64_t size, int rank,
		      const int64_t *dims, int axis);
static int matmul(struct ctx *c, int a, int b);
static int unreduce(struct ctx *c, int v, const struct vtpu_shape *sh, int ax);
static int iota_f32(struct ctx *c, const struct vtpu_shape *sh, int ax);
static int arg_extreme(struct ctx *c, int x, int ax, int io, bool largest,
		       bool last, int *value);

/* ---- errors ---------------------------------------------------------------- */

static int fail(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Records the first error, prefixed with the node; returns -EINVAL. */
static int fail(struct ctx *c, const char *fmt, ...)
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
static int chk(struct ctx *c, int id)
{
	const char *m;

	if (id >= 0)
		return id;
	m = vtpu_graph_error(c->g);
	fail(c, "%s", m ? m : strerror(-id));
	return id;
}

/* ---- values ---------------------------------------------------------------- */

static struct val *lookup(struct ctx *c, const char *name)
{
	for (int i = c->nv - 1; i >= 0; i--)
		if (!strcmp(c->v[i].name, name))
			return &c->v[i];
	return NULL;
}

static int define(struct ctx *c, const char *name, int id, struct cval *cv)
{
	struct val *v;

	if (c->nv == c->cap) {
		int cap = c->cap ? 2 * c->cap : 64;
		struct val *nv = realloc(c->v, cap * sizeof(*nv));

		if (!nv) {
			fail(c, "out of memory");
			return -ENOMEM;
		}
		c->v = nv;
		c->cap = cap;
	}
	v = &c->v[c->nv++];
	v->name = name;
	v->id = id;
	v->c = cv;
	v->b = NULL;
	v->s = NULL;
	return 0;
}

static void cval_free(struct cval *cv)
{
	if (cv) {
		free(cv->data);
		free(cv);
	}
}

static int esize(enum vtpu_type t)
{
	switch (t) {
	case VTPU_F32: case VTPU_S32: return 4;
	case VTPU_BF16: return 2;
	case VTPU_S64: return 8;
	default: return 1;
	}
}

static struct vtpu_shape shape_of(struct ctx *c, int id)
{
	struct vtpu_shape s = { 0 };

	vtpu_graph_shape(c->g, id, &s);
	return s;
}

static int64_t prod(const int64_t *d, int from, int to)
{
	int64_t p = 1;

	for (int i = from; i < to; i++)
		p *= d[i];
	return p;
}

/* The builder value of @name, making a host constant a graph constant. */
static int value(struct ctx *c, const char *name)
{
	struct val *v = lookup(c, name);
	struct vtpu_shape s = { 0 };

	if (!v)
		return fail(c, "input '%s' is not defined", name);
	if (v->id >= 0)
		return v->id;
	if (!v->c || v->c->n == 0)
		return fail(c, "input '%s' is an empty tensor", name);
	s.type = v->c->type;
	s.rank = v->c->rank;
	memcpy(s.dims, v->c->dims, sizeof(s.dims));
	if (c->folding && s.type == VTPU_S64) {
		/* The builder has no s64 arithmetic; shape math fits in f32. */
		float *f = malloc(v->c->n * sizeof(*f));

		if (!f)
			return fail(c, "out of memory");
		for (int64_t i = 0; i < v->c->n; i++)
			f[i] = (float)((const int64_t *)v->c->data)[i];
		s.type = VTPU_F32;
		v->id = chk(c, vtpu_g_constant(c->g, &s, f));
		free(f);
		return v->id;
	}
	if (s.type == VTPU_S64) {
		/* int64 computes as s32 on the device (see the header). */
		int32_t *w = malloc(v->c->n * sizeof(*w));

		if (!w)
			return fail(c, "out of memory");
		for (int64_t i = 0; i < v->c->n; i++) {
			int64_t x = ((const int64_t *)v->c->data)[i];

			if (x < INT32_MIN || x > INT32_MAX) {
				free(w);
				return fail(c, "unsupported int64 constant '%s': %lld does not fit in s32",
					    name, (long long)x);
			}
			w[i] = (int32_t)x;
		}
		s.type = VTPU_S32;
		v->id = chk(c, vtpu_g_constant(c->g, &s, w));
		free(w);
		return v->id;
	}
	v->id = chk(c, vtpu_g_constant(c->g, &s, v->c->data));
	return v->id;
}

static bool has_in(node_t *n, size_t i)
{
	return i < n->n_input && n->input[i][0];
}

static int in(struct ctx *c, node_t *n, size_t i)
{
	if (!has_in(n, i))
		return fail(c, "missing input %zu", i);
	return value(c, n->input[i]);
}

/* The host copy of input @i, or NULL with an error. */
static const struct cval *cin(struct ctx *c, node_t *n, size_t i,
			      const char *what)
{
	struct val *v;

	if (!has_in(n, i)) {
		fail(c, "missing input %zu (%s)", i, what);
		return NULL;
	}
	v = lookup(c, n->input[i]);
	/* A bound input's values serve where a constant is required. */
	if (v && !v->c && v->b)
		return v->b;
	if (!v || !v->c) {
		fail(c, "%s '%s' is not constant (it must be an initializer or a Constant)",
		     what, n->input[i]);
		return NULL;
	}
	return v->c;
}

/* Integer elements of host constant @cv into @out (at most @max). */
static int cv_ints(struct ctx *c, const struct cval *cv, int64_t *out,
		   int max, const char *what)
{
	if (cv->n > max)
		return fail(c, "%s has %lld elements (at most %d)", what,
			    (long long)cv->n, max);
	for (int64_t i = 0; i < cv->n; i++) {
		if (cv->type == VTPU_S64)
			out[i] = ((const int64_t *)cv->data)[i];
		else if (cv->type == VTPU_S32)
			out[i] = ((const int32_t *)cv->data)[i];
		else
			return fail(c, "%s must be integers", what);
	}
	return (int)cv->n;
}

static int in_ints(struct ctx *c, node_t *n, size_t i, int64_t *out, int max,
		   const char *what)
{
	const struct cval *cv = cin(c, n, i, what);

	return cv ? cv_ints(c, cv, out, max, what) : -EINVAL;
}

/* A scalar float from a host constant of any numeric type. */
static int cv_float(struct ctx *c, const struct cval *cv, double *out,
		    const char *what)
{
	if (cv->n != 1)
		return fail(c, "%s must be a scalar", what);
	switch (cv->type) {
	case VTPU_F32: *out = *(const float *)cv->data; break;
	case VTPU_S32: *out = *(const int32_t *)cv->data; break;
	case VTPU_S64: *out = (double)*(const int64_t *)cv->data; break;
	case VTPU_BF16: {
		uint32_t b = (uint32_t)*(const uint16_t *)cv->data << 16;
		float f;

		memcpy(&f, &b, 4);
		*out = f;
		break;
	}
	default: *out = *(const uint8_t *)cv->data; break;
	}
	return 0;
}

static int out(struct ctx *c, node_t *n, size_t i, int id)
{
	if (id < 0)
		return id;
	if (i >= n->n_output)
		return fail(c, "missing output %zu", i);
	return define(c, n->output[i], id, NULL);
}

/* ---- attributes ------------------------------------------------------------ */

static const Onnx__AttributeProto *attr(node_t *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

static int64_t attr_i(node_t *n, const char *name, int64_t def)
{
	const Onnx__AttributeProto *a = attr(n, name);

	return a && a->has_i ? a->i : def;
}

static float attr_f(node_t *n, const char *name, float def)
{
	const Onnx__AttributeProto *a = attr(n, name);

	return a && a->has_f ? a->f : def;
}

/* The ints of @name into @out; their count, -1 when absent. */
static int attr_ints(struct ctx *c, node_t *n, const char *name, int64_t *out,
		     int max)
{
	const Onnx__AttributeProto *a = attr(n, name);

	if (!a)
		return -1;
	if (a->n_ints > (size_t)max)
		return fail(c, "attribute %s has %zu values (at most %d)", name,
			    a->n_ints, max) - 1000;
	if (a->n_ints)	/* an empty list has no array at all */
		memcpy(out, a->ints, a->n_ints * sizeof(*out));
	return (int)a->n_ints;
}

static bool attr_s_is(node_t *n, const char *name, const char *def,
		      const char *want)
{
	const Onnx__AttributeProto *a = attr(n, name);

	if (!a || !a->has_s)
		return !strcmp(def, want);
	return strlen(want) == a->s.len && !memcmp(a->s.data, want, a->s.len);
}

static bool in_list(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == len && !memcmp(p, name, len))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

/* ---- shape helpers --------------------------------------------------------- */

static int axis_norm(struct ctx *c, int64_t a, int rank)
{
	if (a < -rank || a >= (rank ? rank : 1))
		return fail(c, "axis %lld out of range for rank %d", (long long)a,
			    rank);
	return (int)(a < 0 ? a + rank : a);
}

static int reshape(struct ctx *c, int a, int rank, const int64_t *dims)
{
	return chk(c, vtpu_g_reshape(c->g, a, rank, dims));
}

/* numpy broadcast of @a (right-aligned) to @rank/@dims. */
static int bcast_to(struct ctx *c, int a, int rank, const int64_t *dims)
{
	struct vtpu_shape s = shape_of(c, a);
	int map[R];
	bool same = s.rank == rank;

	if (a < 0)
		return a;
	if (s.rank > rank)
		return fail(c, "cannot broadcast rank %d to rank %d", s.rank, rank);
	for (int i = 0; i < s.rank; i++) {
		map[i] = i + rank - s.rank;
		if (s.dims[i] != dims[map[i]] && s.dims[i] != 1)
			return fail(c, "cannot broadcast dimension %d of size %lld to %lld",
				    i, (long long)s.dims[i],
				    (long long)dims[map[i]]);
		same = same && s.dims[i] == dims[map[i]];
	}
	if (same)
		return a;
	return chk(c, vtpu_g_broadcast(c->g, a, rank, dims, map));
}

/* The numpy common shape of @na values, into @rank/@dims. */
static int common(struct ctx *c, int na, const int *v, int *rank,
		  int64_t *dims)
{
	*rank = 0;
	for (int k = 0; k < na; k++) {
		struct vtpu_shape s = shape_of(c, v[k]);

		*rank = s.rank > *rank ? s.rank : *rank;
	}
	for (int i = 0; i < *rank; i++)
		dims[i] = 1;
	for (int k = 0; k < na; k++) {
		struct vtpu_shape s = shape_of(c, v[k]);

		for (int i = 0; i < s.rank; i++) {
			int64_t *d = &dims[i + *rank - s.rank];

			if (*d == 1)
				*d = s.dims[i];
			else if (s.dims[i] != 1 && s.dims[i] != *d)
				return fail(c, "incompatible broadcast dimensions %lld and %lld",
					    (long long)s.dims[i], (long long)*d);
		}
	}
	return 0;
}

/* Broadcasts @na values in place to their common shape. */
static int bcast_all(struct ctx *c, int na, int *v)
{
	int rank;
	int64_t dims[R];

	for (int k = 0; k < na; k++)
		if (v[k] < 0)
			return v[k];
	if (common(c, na, v, &rank, dims))
		return -EINVAL;
	for (int k = 0; k < na; k++)
		if ((v[k] = bcast_to(c, v[k], rank, dims)) < 0)
			return v[k];
	return 0;
}

/* A scalar @x in @like's type, broadcast to @like's shape. */
static int splat(struct ctx *c, double x, int like)
{
	struct vtpu_shape s = shape_of(c, like);
	int v = chk(c, vtpu_g_scalar(c->g, (float)x));

	if (v >= 0 && s.type != VTPU_F32)
		v = chk(c, vtpu_g_convert(c->g, v, s.type));
	return v < 0 ? v : bcast_to(c, v, s.rank, s.dims);
}

static int binary(struct ctx *c, enum vtpu_binary_op op, int a, int b)
{
	int v[2] = { a, b };

	if (bcast_all(c, 2, v))
		return -EINVAL;
	return chk(c, vtpu_g_binary(c->g, op, v[0], v[1]));
}

/* Elements @idx (in range) of @x along @axis: slices of runs, concatenated. */
static int take(struct ctx *c, int x, int axis, const int64_t *idx, int n)
{
	struct vtpu_shape s = shape_of(c, x);
	int parts[MAX_TAKE], np = 0;

	for (int i = 0; i < n;) {
		int64_t st[R] = { 0 }, lim[R], step[R];
		int j = i + 1;

		while (j < n && idx[j] == idx[j - 1] + 1)
			j++;
		for (int k = 0; k < s.rank; k++) {
			lim[k] = s.dims[k];
			step[k] = 1;
		}
		st[axis] = idx[i];
		lim[axis] = idx[j - 1] + 1;
		parts[np] = chk(c, vtpu_g_slice(c->g, x, st, lim, step));
		if (parts[np++] < 0)
			return -EINVAL;
		i = j;
	}
	if (np == 1)
		return parts[0];
	return chk(c, vtpu_g_concat(c->g, np, parts, axis));
}

/* ---- elementwise ------------------------------------------------------------ */

/*
 * Before opset 7, broadcast=1 aligned B's dims at @axis of A (default:
 * trailing, as numpy does); a reshape with 1s makes that numpy too.
 */
static int legacy_bcast(struct ctx *c, node_t *n, int a, int b)
{
	struct vtpu_shape sa = shape_of(c, a), sb = shape_of(c, b);
	int64_t t[R], ax;

	if (!attr_i(n, "broadcast", 0) || !attr(n, "axis"))
		return b;
	ax = attr_i(n, "axis", 0);
	ax = ax < 0 ? ax + sa.rank : ax;
	if (ax < 0 || ax + sb.rank > sa.rank)
		return fail(c, "bad broadcast axis %lld", (long long)ax);
	for (int i = 0; i < sa.rank; i++)
		t[i] = i >= ax && i < ax + sb.rank ? sb.dims[i - ax] : 1;
	return reshape(c, b, sa.rank, t);
}

static int op_binary(struct ctx *c, node_t *n, const struct opdef *d)
{
	int a = in(c, n, 0), b = in(c, n, 1);

	if (a < 0 || b < 0)
		return -EINVAL;
	if (c->opset < 7 && (b = legacy_bcast(c, n, a, b)) < 0)
		return b;
	if (d->arg == VTPU_POW && shape_of(c, a).type == VTPU_S32) {
		/*
		 * The device's pow is f32 only. Integer powers go through
		 * it: a correctly rounded pow is exact wherever the result
		 * fits f32's 24-bit significand.
		 */
		int y;

		a = chk(c, vtpu_g_convert(c->g, a, VTPU_F32));
		if (b >= 0 && shape_of(c, b).type != VTPU_F32)
			b = chk(c, vtpu_g_convert(c->g, b, VTPU_F32));
		y = a < 0 || b < 0 ? -EINVAL : binary(c, VTPU_POW, a, b);
		return out(c, n, 0, y < 0 ? y :
			   chk(c, vtpu_g_convert(c->g, y, VTPU_S32)));
	}
	/* Pow's exponent may have another type; the result has the base's. */
	if (shape_of(c, a).type != shape_of(c, b).type && d->arg == VTPU_POW)
		b = chk(c, vtpu_g_convert(c->g, b, shape_of(c, a).type));
	return out(c, n, 0, b < 0 ? b : binary(c, d->arg, a, b));
}

/*
 * And/Or/Xor (arg: 0, 1, 2) and Not (arg 3) on pred values, through
 * s32 0/1: min, max, !=, == 0.
 */
static int op_logical(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[2] = { in(c, n, 0), d->arg == 3 ? -1 : in(c, n, 1) }, y;
	int na = d->arg == 3 ? 1 : 2;

	for (int i = 0; i < na; i++) {
		if (v[i] < 0)
			return v[i];
		if (shape_of(c, v[i]).type != VTPU_PRED)
			return fail(c, "input %d must be bool", i);
		v[i] = chk(c, vtpu_g_convert(c->g, v[i], VTPU_S32));
		if (v[i] < 0)
			return v[i];
	}
	if (na == 2 && bcast_all(c, 2, v))
		return -EINVAL;
	switch (d->arg) {
	case 0: y = chk(c, vtpu_g_binary(c->g, VTPU_MIN, v[0], v[1])); break;
	case 1: y = chk(c, vtpu_g_binary(c->g, VTPU_MAX, v[0], v[1])); break;
	case 2: return out(c, n, 0, chk(c, vtpu_g_compare(c->g, VTPU_NE, v[0], v[1])));
	default: return out(c, n, 0, chk(c, vtpu_g_compare(c->g, VTPU_EQ, v[0],
							    splat(c, 0, v[0]))));
	}
	return out(c, n, 0, y < 0 ? y : chk(c, vtpu_g_compare(c->g, VTPU_NE, y,
							       splat(c, 0, y))));
}

/* Max/Min/Sum/Mean: a left fold over any number of inputs. */
static int op_variadic(struct ctx *c, node_t *n, const struct opdef *d)
{
	int acc = in(c, n, 0);

	for (size_t i = 1; i < n->n_input && acc >= 0; i++)
		acc = binary(c, d->arg, acc, in(c, n, i));
	if (acc >= 0 && d->arg2)	/* Mean */
		acc = binary(c, VTPU_DIV, acc, splat(c, (double)n->n_input, acc));
	return out(c, n, 0, acc);
}

static int op_compare(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[2] = { in(c, n, 0), in(c, n, 1) };

	if (bcast_all(c, 2, v))
		return -EINVAL;
	return out(c, n, 0, chk(c, vtpu_g_compare(c->g, d->arg, v[0], v[1])));
}

static int op_unary(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0);

	return out(c, n, 0, x < 0 ? x : chk(c, vtpu_g_unary(c->g, d->arg, x)));
}

static int op_gelu(struct ctx *c, node_t *n, const struct opdef *d)
{
	if (!attr_s_is(n, "approximate", "none", "none"))
		return fail(c, "unsupported approximate='tanh'");
	return op_unary(c, n, d);
}

static int op_reciprocal(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0);

	(void)d;
	return out(c, n, 0, x < 0 ? x : binary(c, VTPU_DIV, splat(c, 1, x), x));
}

/* select(x > 0, 1, select(x < 0, -1, 0)), in x's type. */
static int op_sign(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), zero, pos, neg, y;

	(void)d;
	if (x < 0)
		return x;
	zero = splat(c, 0, x);
	pos = zero < 0 ? zero : chk(c, vtpu_g_compare(c->g, VTPU_GT, x, zero));
	neg = zero < 0 ? zero : chk(c, vtpu_g_compare(c->g, VTPU_LT, x, zero));
	if (pos < 0 || neg < 0)
		return -EINVAL;
	y = chk(c, vtpu_g_select(c->g, neg, splat(c, -1, x), zero));
	return out(c, n, 0, y < 0 ? y :
		   chk(c, vtpu_g_select(c->g, pos, splat(c, 1, x), y)));
}

/* x < -lambd ? x + bias : x > lambd ? x - bias : 0. */
static int op_shrink(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), lo, hi, y;
	double l = attr_f(n, "lambd", 0.5f), b = attr_f(n, "bias", 0.0f);

	(void)d;
	if (x < 0)
		return x;
	lo = chk(c, vtpu_g_compare(c->g, VTPU_LT, x, splat(c, -l, x)));
	hi = chk(c, vtpu_g_compare(c->g, VTPU_GT, x, splat(c, l, x)));
	if (lo < 0 || hi < 0)
		return -EINVAL;
	y = chk(c, vtpu_g_select(c->g, hi, binary(c, VTPU_SUB, x, splat(c, b, x)),
				 splat(c, 0, x)));
	return out(c, n, 0, y < 0 ? y : chk(c, vtpu_g_select(c->g, lo,
				binary(c, VTPU_ADD, x, splat(c, b, x)), y)));
}

/* select(x > 0, x, slope * x): LeakyRelu (alpha) and PRelu (input 1). */
static int op_leaky(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), slope, zero, p;
	struct vtpu_shape s;

	if (x < 0)
		return x;
	s = shape_of(c, x);
	slope = d->arg ? in(c, n, 1) : splat(c, attr_f(n, "alpha", 0.01f), x);
	if (d->arg && slope >= 0 && c->opset < 7 && s.rank >= 2) {
		struct vtpu_shape ss = shape_of(c, slope);

		/* Before opset 7 a [C] slope is per channel (dimension 1). */
		if (ss.rank == 1 && ss.dims[0] == s.dims[1] && ss.dims[0] > 1) {
			int64_t t[R];

			for (int i = 0; i < s.rank - 1; i++)
				t[i] = i ? 1 : s.dims[1];
			slope = reshape(c, slope, s.rank - 1, t);
		}
	}
	slope = slope < 0 ? slope : bcast_to(c, slope, s.rank, s.dims);
	zero = splat(c, 0, x);
	if (slope < 0 || zero < 0)
		return -EINVAL;
	p = chk(c, vtpu_g_compare(c->g, VTPU_GT, x, zero));
	slope = chk(c, vtpu_g_binary(c->g, VTPU_MUL, slope, x));
	return out(c, n, 0, chk(c, vtpu_g_select(c->g, p, x, slope)));
}

/* Elu: select(x > 0, x, alpha * (exp(x) - 1)). */
static int op_elu(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), e, p;

	(void)d;
	if (x < 0)
		return x;
	e = binary(c, VTPU_SUB, chk(c, vtpu_g_unary(c->g, VTPU_EXP, x)),
		   splat(c, 1, x));
	e = binary(c, VTPU_MUL, e, splat(c, attr_f(n, "alpha", 1.0f), x));
	p = chk(c, vtpu_g_compare(c->g, VTPU_GT, x, splat(c, 0, x)));
	if (e < 0 || p < 0)
		return -EINVAL;
	return out(c, n, 0, chk(c, vtpu_g_select(c->g, p, x, e)));
}

/* Softplus: log(exp(x) + 1). */
static int op_softplus(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), e;

	(void)d;
	if (x < 0)
		return x;
	e = binary(c, VTPU_ADD, chk(c, vtpu_g_unary(c->g, VTPU_EXP, x)),
		   splat(c, 1, x));
	return out(c, n, 0, e < 0 ? e : chk(c, vtpu_g_unary(c->g, VTPU_LOG, e)));
}

/* Clip: max(min) against attributes (opset < 11) or optional inputs. */
static int op_clip(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), lo = -1, hi = -1;

	(void)d;
	if (x < 0)
		return x;
	if (c->opset < 11) {
		if (attr(n, "min"))
			lo = splat(c, attr_f(n, "min", 0), x);
		if (attr(n, "max"))
			hi = splat(c, attr_f(n, "max", 0), x);
	} else {
		if (has_in(n, 1))
			lo = in(c, n, 1);
		if (has_in(n, 2))
			hi = in(c, n, 2);
	}
	if (lo >= 0)
		x = binary(c, VTPU_MAX, x, lo);
	if (hi >= 0 && x >= 0)
		x = binary(c, VTPU_MIN, x, hi);
	return out(c, n, 0, c->failed ? -EINVAL : x);
}

static int op_where(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[3] = { in(c, n, 0), in(c, n, 1), in(c, n, 2) };

	(void)d;
	if (bcast_all(c, 3, v))
		return -EINVAL;
	return out(c, n, 0, chk(c, vtpu_g_select(c->g, v[0], v[1], v[2])));
}

static int op_identity(struct ctx *c, node_t *n, const struct opdef *d)
{
	struct val *v = has_in(n, 0) ? lookup(c, n->input[0]) : NULL;

	(void)d;
	if (n->n_output > 1 && n->output[1][0]) {
		/* Dropout's mask: all true, as inference drops nothing. */
		int x = in(c, n, 0), one = x < 0 ? x : splat(c, 1, x);

		one = one < 0 ? one : chk(c, vtpu_g_convert(c->g, one, VTPU_PRED));
		if (out(c, n, 1, one) < 0)
			return -EINVAL;
	}
	if (!v)
		return fail(c, "input 0 is not defined");
	/* Aliases keep a host copy visible to shape-reading consumers. */
	if (n->n_output < 1)
		return fail(c, "missing output 0");
	return define(c, n->output[0], v->id, v->c);
}

static int op_dropout(struct ctx *c, node_t *n, const struct opdef *d)
{
	if (attr_i(n, "is_test", 1) == 0 && c->opset < 7)
		return fail(c, "unsupported training mode");
	if (has_in(n, 2)) {
		double t = 0;
		const struct cval *cv = cin(c, n, 2, "training_mode");

		if (!cv || cv_float(c, cv, &t, "training_mode"))
			return -EINVAL;
		if (t != 0)
			return fail(c, "unsupported training_mode=1");
	}
	return op_identity(c, n, d);
}

static enum vtpu_type onnx_type(int t, bool *ok)
{
	*ok = true;
	switch (t) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return VTPU_F32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return VTPU_BF16;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return VTPU_S32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return VTPU_S64;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return VTPU_PRED;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return VTPU_F32;
	default: *ok = false; return VTPU_F32;
	}
}

/*
 * The device type of a value of ONNX type @t: int64 computes as s32,
 * double as f32 (onnx_type() already), bool at a graph boundary as s32
 * 0/1 (the device has no byte type); see vtpu_compiler.h.
 */
static enum vtpu_type dev_type(enum vtpu_type t)
{
	return t == VTPU_S64 || t == VTPU_PRED ? VTPU_S32 : t;
}

static const char *onnx_type_name(int t)
{
	static const char *const names[] = {
		"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
		"INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
		"UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
	};

	return t >= 0 && t < 17 ? names[t] : "type";
}

static int op_cast(struct ctx *c, node_t *n, const struct opdef *d)
{
	int64_t to = attr_i(n, "to", 0);
	bool ok;
	enum vtpu_type t = onnx_type((int)to, &ok);
	int x;

	(void)d;
	if (!ok)
		return fail(c, "unsupported cast to %s", onnx_type_name((int)to));
	if (t == VTPU_S64 && !c->folding)
		t = VTPU_S32;
	x = in(c, n, 0);
	if (x < 0)
		return x;
	if (shape_of(c, x).type == t)
		return out(c, n, 0, x);
	return out(c, n, 0, chk(c, vtpu_g_convert(c->g, x, t)));
}

/* CastLike: Cast to the type of input 1 (its values unused). */
static int op_castlike(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), like = in(c, n, 1);
	enum vtpu_type t;

	(void)d;
	if (x < 0 || like < 0)
		return -EINVAL;
	t = shape_of(c, like).type;
	if (shape_of(c, x).type == t)
		return out(c, n, 0, x);
	return out(c, n, 0, chk(c, vtpu_g_convert(c->g, x, t)));
}

/* ---- softmax --------------------------------------------------------------- */

/* Softmax/LogSoftmax; before opset 13 the input is coerced to 2-D at axis. */
static int op_softmax(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax, y;
	struct vtpu_shape s;
	int64_t flat[2];

	if (x < 0)
		return x;
	s = shape_of(c, x);
	ax = axis_norm(c, attr_i(n, "axis", c->opset < 13 ? 1 : -1), s.rank);
	if (ax < 0)
		return ax;
	if (c->opset >= 13) {
		y = d->arg ? vtpu_g_log_softmax(c->g, x, ax)
			   : vtpu_g_softmax(c->g, x, ax);
		return out(c, n, 0, chk(c, y));
	}
	flat[0] = prod(s.dims, 0, ax);
	flat[1] = prod(s.dims, ax, s.rank);
	x = reshape(c, x, 2, flat);
	if (x < 0)
		return x;
	y = chk(c, d->arg ? vtpu_g_log_softmax(c->g, x, 1)
			  : vtpu_g_softmax(c->g, x, 1));
	return out(c, n, 0, y < 0 ? y : reshape(c, y, s.rank, s.dims));
}

/* ---- resize ------------------------------------------------------------------ */

/*
 * x with its @axis (length in) replaced by out = x . M along it, for an
 * [in, out] f32 matrix @mat: a dot contracting the axis, which leaves
 * the new one last, and a transpose to put it back.
 */
static int apply_along(struct ctx *c, int x, int axis, const float *mat,
		       int64_t out)
{
	struct vtpu_shape sx = shape_of(c, x);
	struct vtpu_shape ms = { VTPU_F32, 2, { sx.dims[axis], out } };
	struct vtpu_dot_dims dd = { .ncontract = 1 };
	int perm[R], m, y;

	m = chk(c, vtpu_g_constant(c->g, &ms, mat));
	dd.lhs_contract[0] = axis;
	dd.rhs_contract[0] = 0;
	y = m < 0 ? m : chk(c, vtpu_g_dot(c->g, x, m, &dd));
	for (int i = 0; i < sx.rank; i++)
		perm[i] = i < axis ? i : i == axis ? sx.rank - 1 : i - 1;
	if (y >= 0 && axis != sx.rank - 1)
		y = chk(c, vtpu_g_transpose(c->g, y, perm));
	return y;
}

enum { CT_HALF_PIXEL, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_CROP, CT_HALF_SYM,
       CT_TF_NN };

static const char *const ct_names[] = {
	"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
	"tf_crop_and_resize", "half_pixel_symmetric", "tf_half_pixel_for_nn",
};

/* Floating-point values of a host constant (at most @max); their count. */
static int cv_reals(struct ctx *c, const struct cval *cv, double *out, int max,
		    const char *what)
{
	if (cv->n > max)
		return fail(c, "%s has %lld elements (at most %d)", what,
			    (long long)cv->n, max);
	for (int64_t i = 0; i < cv->n; i++) {
		if (cv->type == VTPU_F32)
			out[i] = ((const float *)cv->data)[i];
		else if (cv->type == VTPU_S64)
			out[i] = (double)((const int64_t *)cv->data)[i];
		else if (cv->type == VTPU_S32)
			out[i] = ((const int32_t *)cv->data)[i];
		else
			return fail(c, "%s must be numbers", what);
	}
	return (int)cv->n;
}

/*
 * The source coordinate of output index @x along an axis (ONNX Resize).
 * @out is the output length as ONNX's reference computes it: in * scale,
 * unrounded, when scales were given.
 */
static double resize_coord(int ct, double x, double scale, int64_t in,
			   double out, double r0, double r1)
{
	switch (ct) {
	case CT_PYTORCH:
		return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
	case CT_ALIGN:
		return out == 1 ? 0 : x * (in - 1) / (double)(out - 1);
	case CT_ASYM:
		return x / scale;
	case CT_TF_CROP:
		return out > 1 ? r0 * (in - 1) + x * (r1 - r0) * (in - 1) / (out - 1)
			       : 0.5 * (r0 + r1) * (in - 1);
	case CT_TF_NN:
		return (x + 0.5) / scale;
	case CT_HALF_SYM: {
		double adj = out / (scale * in), center = in / 2.0;

		return center * (1 - adj) + (x + 0.5) / scale - 0.5;
	}
	default:
		return (x + 0.5) / scale - 0.5;
	}
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Nearest source index under @nm: 0 prefer floor, 1 prefer ceil, 2, 3. */
static int64_t resize_nearest(int nm, double x)
{
	double f = floor(x);

	switch (nm) {
	case 2: return (int64_t)f;
	case 3: return (int64_t)ceil(x);
	default:
		if (x - f == 0.5)
			return (int64_t)(nm ? f + 1 : f);
		return (int64_t)floor(x + 0.5);
	}
}

/* ONNX's cubic coefficients for offsets -1, 0, 1, 2 at fraction @r. */
static void cubic_coeffs(double r, double a, double w[4])
{
	double s = 1 - r;

	w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
	w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
	w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
	w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

/*
 * Resize along @axis as a product with an [in, out] interpolation
 * matrix built here from the mode and coordinate transformation: each
 * output point is a fixed combination of input points. Rows whose source
 * lies outside the crop (tf_crop_and_resize) become extrapolation_value.
 */
static int resize_axis(struct ctx *c, node_t *n, int x, int axis, int64_t out,
		       double out_f, double scale, double r0, double r1)
{
	int64_t in = shape_of(c, x).dims[axis];
	int mode = attr_s_is(n, "mode", "nearest", "linear") ? 1 :
		   attr_s_is(n, "mode", "nearest", "cubic") ? 2 : 0;
	int ct = CT_HALF_PIXEL, nm = 0, y;
	double a = attr_f(n, "cubic_coeff_a", -0.75f);
	bool excl = attr_i(n, "exclude_outside", 0) != 0, identity = in == out;
	bool extrap = false;
	float *mat;
	uint8_t *outside;

	for (int i = 0; i < 7; i++)
		if (attr_s_is(n, "coordinate_transformation_mode", "half_pixel",
			      ct_names[i]))
			ct = i;
	if (attr_s_is(n, "nearest_mode", "round_prefer_floor", "round_prefer_ceil"))
		nm = 1;
	else if (attr_s_is(n, "nearest_mode", "round_prefer_floor", "floor"))
		nm = 2;
	else if (attr_s_is(n, "nearest_mode", "round_prefer_floor", "ceil"))
		nm = 3;
	if (c->opset < 11)	/* Upsample-like: asymmetric, nearest floor */
		ct = CT_ASYM, nm = mode ? nm : 2;
	mat = calloc(in * out, sizeof(*mat));
	outside = calloc(out, 1);
	if (!mat || !outside) {
		free(mat);
		free(outside);
		return fail(c, "out of memory");
	}
	for (int64_t o = 0; o < out; o++) {
		double xo = resize_coord(ct, (double)o, scale, in, out_f, r0, r1);
		int64_t i0 = (int64_t)floor(xo);
		double w[4] = { 1, 0, 0, 0 }, sum = 0;
		int64_t idx[4] = { 0 };
		int k = 1;

		if (ct == CT_TF_CROP && (xo < 0 || xo > in - 1)) {
			outside[o] = 1;
			extrap = true;
			identity = false;
			continue;
		}
		if (mode == 0) {
			idx[0] = resize_nearest(nm, xo);
		} else if (mode == 1) {
			k = 2;
			idx[0] = i0, idx[1] = i0 + 1;
			w[1] = xo - i0, w[0] = 1 - w[1];
		} else {
			k = 4;
			cubic_coeffs(xo - i0, a, w);
			for (int j = 0; j < 4; j++)
				idx[j] = i0 - 1 + j;
		}
		for (int j = 0; j < k; j++) {
			if (excl && (idx[j] < 0 || idx[j] >= in))
				w[j] = 0;
			sum += w[j];
		}
		for (int j = 0; j < k; j++) {
			int64_t src = clamp64(idx[j], 0, in - 1);

			mat[src * out + o] += (float)(excl && sum ? w[j] / sum : w[j]);
		}
	}
	for (int64_t o = 0; identity && o < out; o++)
		for (int64_t i = 0; identity && i < in; i++)
			identity = mat[i * out + o] == (i == o);
	if (identity) {
		free(mat);
		free(outside);
		return x;
	}
	y = apply_along(c, x, axis, mat, out);
	free(mat);
	if (y >= 0 && extrap) {
		struct vtpu_shape os = { VTPU_PRED, 1, { out } }, sy = shape_of(c, y);
		int mask = chk(c, vtpu_g_constant(c->g, &os, outside)), map[1] = { axis };

		mask = mask < 0 ? mask : chk(c, vtpu_g_broadcast(c->g, mask, sy.rank,
							sy.dims, map));
		y = mask < 0 ? mask : chk(c, vtpu_g_select(c->g, mask,
			splat(c, attr_f(n, "extrapolation_value", 0.0f), y), y));
	}
	free(outside);
	return y;
}

/* A Resize input that may be empty or absent: its values, or 0. */
static int resize_input(struct ctx *c, node_t *n, size_t i, double *v,
			const char *what)
{
	const struct cval *cv;

	if (!has_in(n, i))
		return 0;
	cv = cin(c, n, i, what);
	if (!cv)
		return -EINVAL;
	return cv->n ? cv_reals(c, cv, v, 2 * R, what) : 0;
}

static int op_resize(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ns, nz, nr = 0;
	double scales[2 * R], sizes[2 * R], roi[2 * R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if (attr_i(n, "antialias", 0))
		return fail(c, "unsupported antialias=1");
	if (attr(n, "axes"))
		return fail(c, "unsupported attribute axes");
	if (!attr_s_is(n, "keep_aspect_ratio_policy", "stretch", "stretch"))
		return fail(c, "unsupported keep_aspect_ratio_policy");
	if (!attr_s_is(n, "mode", "nearest", "nearest") &&
	    !attr_s_is(n, "mode", "nearest", "linear") &&
	    !attr_s_is(n, "mode", "nearest", "cubic"))
		return fail(c, "unsupported mode");
	s = shape_of(c, x);
	if (c->opset < 11) {
		ns = resize_input(c, n, 1, scales, "scales");
		nz = 0;
	} else {
		nr = resize_input(c, n, 1, roi, "roi");
		ns = resize_input(c, n, 2, scales, "scales");
		nz = resize_input(c, n, 3, sizes, "sizes");
	}
	if (ns < 0 || nz < 0 || nr < 0)
		return -EINVAL;
	if ((ns && ns != s.rank) || (nz && nz != s.rank) || (!ns && !nz) ||
	    (ns && nz) || (nr && nr != 2 * s.rank))
		return fail(c, "wants scales or sizes for each of the %d axes",
			    s.rank);
	for (int a = 0; a < s.rank && x >= 0; a++) {
		int64_t out = nz ? (int64_t)sizes[a] :
			      (int64_t)floor(s.dims[a] * scales[a]);
		double scale = nz ? (double)out / s.dims[a] : scales[a];

		if (out < 1 || scale <= 0)
			return fail(c, "bad size or scale on axis %d", a);
		if (s.dims[a] > 4096 || out > 4096)
			return fail(c, "unsupported resize of %lld to %lld (at most 4096)",
				    (long long)s.dims[a], (long long)out);
		x = resize_axis(c, n, x, a, out, nz ? out : s.dims[a] * scales[a],
				scale, nr ? roi[a] : 0, nr ? roi[s.rank + a] : 1);
	}
	return out(c, n, 0, x);
}

/*
 * CumSum along a constant axis: a product with a triangular matrix of
 * ones (strictly so when exclusive, mirrored when reverse). Integers go
 * through f32, exact below 2^24.
 */
static int op_cumsum(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax, y;
	bool excl = attr_i(n, "exclusive", 0), rev = attr_i(n, "reverse", 0);
	enum vtpu_type t;
	int64_t axis, len;
	float *mat;

	(void)d;
	if (x < 0)
		return x;
	if (in_ints(c, n, 1, &axis, 1, "axis") != 1)
		return c->failed ? -EINVAL : fail(c, "axis must be a scalar");
	t = shape_of(c, x).type;
	ax = axis_norm(c, axis, shape_of(c, x).rank);
	if (ax < 0)
		return ax;
	len = shape_of(c, x).dims[ax];
	if (len > 4096)
		return fail(c, "unsupported axis of %lld (at most 4096)",
			    (long long)len);
	if (t != VTPU_F32 && t != VTPU_BF16)
		x = chk(c, vtpu_g_convert(c->g, x, VTPU_F32));
	mat = calloc(len * len, sizeof(*mat));
	if (!mat)
		return fail(c, "out of memory");
	/* y[j] = sum over i of x[i] * mat[i][j] */
	for (int64_t i = 0; i < len; i++)
		for (int64_t j = 0; j < len; j++)
			mat[i * len + j] = rev ? (excl ? i > j : i >= j) :
						 (excl ? i < j : i <= j);
	y = x < 0 ? x : apply_along(c, x, ax, mat, len);
	free(mat);
	if (y >= 0 && shape_of(c, y).type != t)
		y = chk(c, vtpu_g_convert(c->g, y, t));
	return out(c, n, 0, y);
}

/* Hardmax: 1 at the first maximum along the axis, 0 elsewhere. */
static int op_hardmax(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax, m, io, first, y;
	struct vtpu_shape s, sx;
	int64_t flat[2];

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	ax = axis_norm(c, attr_i(n, "axis", c->opset < 13 ? 1 : -1), s.rank);
	if (ax < 0)
		return ax;
	if (c->opset < 13) {	/* coerced to 2-D at axis, as Softmax was */
		flat[0] = prod(s.dims, 0, ax);
		flat[1] = prod(s.dims, ax, s.rank);
		x = reshape(c, x, 2, flat);
		ax = 1;
	}
	if (x < 0)
		return x;
	sx = shape_of(c, x);
	io = iota_f32(c, &sx, ax);
	first = arg_extreme(c, x, ax, io, true, false, &m);
	first = unreduce(c, first, &sx, ax);
	y = first < 0 ? first : chk(c, vtpu_g_compare(c->g, VTPU_EQ, io, first));
	y = y < 0 ? y : chk(c, vtpu_g_convert(c->g, y, s.type));
	return out(c, n, 0, y < 0 ? y : reshape(c, y, s.rank, s.dims));
}

/* IsNaN (arg 0): x != x. IsInf (arg 1): |x| == inf, by sign if asked. */
static int op_isnan_inf(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), y, pos, neg;

	if (x < 0)
		return x;
	if (!d->arg)
		return out(c, n, 0, chk(c, vtpu_g_compare(c->g, VTPU_NE, x, x)));
	pos = attr_i(n, "detect_positive", 1) ?
	      chk(c, vtpu_g_compare(c->g, VTPU_EQ, x, splat(c, INFINITY, x))) : -1;
	neg = attr_i(n, "detect_negative", 1) ?
	      chk(c, vtpu_g_compare(c->g, VTPU_EQ, x, splat(c, -INFINITY, x))) : -1;
	if (pos >= 0 && neg >= 0) {
		/* pred or pred: select(pos, pos, neg) */
		y = chk(c, vtpu_g_select(c->g, pos, pos, neg));
	} else if (pos >= 0 || neg >= 0) {
		y = pos >= 0 ? pos : neg;
	} else {	/* neither sign: all false */
		y = chk(c, vtpu_g_compare(c->g, VTPU_LT, splat(c, 1, x),
					  splat(c, 0, x)));
	}
	return out(c, n, 0, c->failed ? -EINVAL : y);
}

/* ThresholdedRelu: select(x > alpha, x, 0). */
static int op_thresholded_relu(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), p;

	(void)d;
	if (x < 0)
		return x;
	p = chk(c, vtpu_g_compare(c->g, VTPU_GT, x,
				  splat(c, attr_f(n, "alpha", 1.0f), x)));
	return out(c, n, 0, p < 0 ? p :
		   chk(c, vtpu_g_select(c->g, p, x, splat(c, 0, x))));
}

/*
 * Floor (arg 0), Ceil (1), Round (2, half to even) of f32. The device's
 * f32 -> s32 conversion truncates, so t = trunc(x) for |x| < 2^23 (above,
 * x is an integer already, or inf or NaN, and is its own result); then
 * step t by one where it is on the wrong side, or (Round) where the
 * fraction is over one half, or exactly one half and t is odd.
 */
static int op_floor_ceil_round(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), t, big, adj, y, one, zero;

	if (x < 0)
		return x;
	if (shape_of(c, x).type != VTPU_F32)
		return shape_of(c, x).type == VTPU_S32 ? out(c, n, 0, x) :
		       fail(c, "unsupported type");
	t = chk(c, vtpu_g_convert(c->g, x, VTPU_S32));
	t = t < 0 ? t : chk(c, vtpu_g_convert(c->g, t, VTPU_F32));
	one = splat(c, 1, x);
	zero = splat(c, 0, x);
	if (t < 0 || one < 0 || zero < 0)
		return -EINVAL;
	if (d->arg == 0) {	/* t > x: one less */
		adj = chk(c, vtpu_g_compare(c->g, VTPU_GT, t, x));
		adj = adj < 0 ? adj : chk(c, vtpu_g_select(c->g, adj,
					splat(c, -1, x), zero));
	} else if (d->arg == 1) {	/* t < x: one more */
		adj = chk(c, vtpu_g_compare(c->g, VTPU_LT, t, x));
		adj = adj < 0 ? adj : chk(c, vtpu_g_select(c->g, adj, one, zero));
	} else {
		int fr = binary(c, VTPU_SUB, x, t), a, s, over, half, odd, h;

		a = fr < 0 ? fr : chk(c, vtpu_g_unary(c->g, VTPU_ABS, fr));
		/* the step's direction: x's sign */
		s = chk(c, vtpu_g_compare(c->g, VTPU_LT, x, zero));
		s = s < 0 ? s : chk(c, vtpu_g_select(c->g, s, splat(c, -1, x), one));
		over = a < 0 ? a : chk(c, vtpu_g_compare(c->g, VTPU_GT, a,
							 splat(c, 0.5, x)));
		half = a < 0 ? a : chk(c, vtpu_g_compare(c->g, VTPU_EQ, a,
							 splat(c, 0.5, x)));
		/* t odd: t - 2 * trunc(t / 2) != 0 (t / 2 is exact) */
		h = binary(c, VTPU_MUL, t, splat(c, 0.5, x));
		h = h < 0 ? h : chk(c, vtpu_g_convert(c->g, h, VTPU_S32));
		h = h < 0 ? h : chk(c, vtpu_g_convert(c->g, h, VTPU_F32));
		h = h < 0 ? h : binary(c, VTPU_MUL, h, splat(c, 2, x));
		odd = h < 0 ? h : chk(c, vtpu_g_compare(c->g, VTPU_NE, t, h));
		if (s < 0 || over < 0 || half < 0 || odd < 0)
			return -EINVAL;
		/* half and odd: step; over: step; else 0 */
		adj = chk(c, vtpu_g_select(c->g, odd, s, zero));
		adj = adj < 0 ? adj : chk(c, vtpu_g_select(c->g, half, adj, zero));
		adj = adj < 0 ? adj : chk(c, vtpu_g_select(c->g, over, s, adj));
	}
	y = adj < 0 ? adj : binary(c, VTPU_ADD, t, adj);
	big = chk(c, vtpu_g_unary(c->g, VTPU_ABS, x));
	big = big < 0 ? big : chk(c, vtpu_g_compare(c->g, VTPU_LT, big,
						    splat(c, 8388608.0, x)));
	if (y < 0 || big < 0)
		return -EINVAL;
	return out(c, n, 0, chk(c, vtpu_g_select(c->g, big, y, x)));
}

/* Softsign: x / (1 + |x|). */
static int op_softsign(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), a;

	(void)d;
	if (x < 0)
		return x;
	a = chk(c, vtpu_g_unary(c->g, VTPU_ABS, x));
	a = a < 0 ? a : binary(c, VTPU_ADD, a, splat(c, 1, x));
	return out(c, n, 0, a < 0 ? a : binary(c, VTPU_DIV, x, a));
}

/*
 * Range with start, limit and delta known at compile time: a constant,
 * computed here as ONNX defines it (start + i * delta).
 */
static int op_range(struct ctx *c, node_t *n, const struct opdef *d)
{
	const struct cval *cv[3];
	double v[3];
	int64_t cnt;
	struct cval *r;
	bool is_int;

	(void)d;
	for (int i = 0; i < 3; i++) {
		static const char *const what[] = { "start", "limit", "delta" };

		cv[i] = cin(c, n, i, what[i]);
		if (!cv[i] || cv_reals(c, cv[i], &v[i], 1, what[i]) != 1)
			return c->failed ? -EINVAL : fail(c, "%s must be a scalar",
							  what[i]);
	}
	if (v[2] == 0)
		return fail(c, "delta is 0");
	cnt = (int64_t)ceil((v[1] - v[0]) / v[2]);
	cnt = cnt < 0 ? 0 : cnt;
	if (!cnt || cnt > MAX_FOLD)
		return fail(c, "unsupported range of %lld elements", (long long)cnt);
	is_int = cv[0]->type == VTPU_S64 || cv[0]->type == VTPU_S32;
	r = cval_new(is_int ? VTPU_S64 : VTPU_F32, 1, &cnt, NULL, 0);
	if (!r)
		return fail(c, "out of memory");
	free(r->data);
	r->n = cnt;
	r->data = malloc(cnt * 8);
	if (!r->data) {
		free(r);
		return fail(c, "out of memory");
	}
	for (int64_t i = 0; i < cnt; i++) {
		if (is_int)
			((int64_t *)r->data)[i] = (int64_t)v[0] + i * (int64_t)v[2];
		else
			((float *)r->data)[i] = (float)(v[0] + i * v[2]);
	}
	return keep_const(c, n, r);
}

/* ---- one-hot, scatter, top-k ------------------------------------------------- */

/* Integer indices in s32, negative ones counted back from @len. */
static int wrap_indices(struct ctx *c, int idx, int64_t len)
{
	int neg;

	if (idx >= 0 && shape_of(c, idx).type != VTPU_S32)
		idx = chk(c, vtpu_g_convert(c->g, idx, VTPU_S32));
	if (idx < 0)
		return idx;
	neg = chk(c, vtpu_g_compare(c->g, VTPU_LT, idx, splat(c, 0, idx)));
	return neg < 0 ? neg : chk(c, vtpu_g_select(c->g, neg,
			binary(c, VTPU_ADD, idx, splat(c, (double)len, idx)), idx));
}

/* Element @i of a rank-1 value, as a scalar. */
static int element(struct ctx *c, int v, int64_t i)
{
	int64_t st[1] = { i }, lim[1] = { i + 1 }, step[1] = { 1 };
	int y = chk(c, vtpu_g_slice(c->g, v, st, lim, step));

	return y < 0 ? y : reshape(c, y, 0, NULL);
}

/* OneHot: values[1] where index == position along the new axis, else [0]. */
static int op_onehot(struct ctx *c, node_t *n, const struct opdef *d)
{
	int idx = in(c, n, 0), vals = in(c, n, 2), ax, map[R], mask, on, off;
	const struct cval *dv = cin(c, n, 1, "depth");
	struct vtpu_shape si;
	int64_t dims[R];
	double depth;

	(void)d;
	if (idx < 0 || vals < 0 || !dv || cv_reals(c, dv, &depth, 1, "depth") != 1)
		return c->failed ? -EINVAL : fail(c, "depth must be a scalar");
	si = shape_of(c, idx);
	if (si.rank + 1 > R || depth < 1 || depth > 65536)
		return fail(c, "unsupported depth %g or rank %d", depth, si.rank);
	if (shape_of(c, vals).rank != 1 || shape_of(c, vals).dims[0] != 2)
		return fail(c, "values must be [off, on]");
	ax = axis_norm(c, attr_i(n, "axis", -1), si.rank + 1);
	if (ax < 0)
		return ax;
	for (int i = 0, k = 0; i <= si.rank; i++) {
		dims[i] = i == ax ? (int64_t)depth : si.dims[k];
		if (i != ax)
			map[k++] = i;
	}
	idx = wrap_indices(c, idx, (int64_t)depth);
	idx = idx < 0 ? idx : chk(c, vtpu_g_broadcast(c->g, idx, si.rank + 1,
						      dims, map));
	mask = iota_along(c, (int64_t)depth, si.rank + 1, dims, ax);
	mask = idx < 0 || mask < 0 ? -EINVAL :
	       chk(c, vtpu_g_compare(c->g, VTPU_EQ, idx, mask));
	off = element(c, vals, 0);
	on = element(c, vals, 1);
	off = off < 0 ? off : bcast_to(c, off, si.rank + 1, dims);
	on = on < 0 ? on : bcast_to(c, on, si.rank + 1, dims);
	if (mask < 0 || on < 0 || off < 0)
		return -EINVAL;
	return out(c, n, 0, chk(c, vtpu_g_select(c->g, mask, on, off)));
}

/* EyeLike: a constant of the input's 2-D shape with ones on diagonal k. */
static int op_eyelike(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0);
	int64_t k = attr_i(n, "k", 0), rows, cols;
	struct vtpu_shape s;
	enum vtpu_type t;
	struct cval *cv;
	bool ok = true;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	if (s.rank != 2)
		return fail(c, "input must be 2-D");
	t = attr(n, "dtype") ? onnx_type((int)attr_i(n, "dtype", 1), &ok) : s.type;
	t = dev_type(t);
	if (!ok || (t != VTPU_F32 && t != VTPU_S32))
		return fail(c, "unsupported dtype");
	rows = s.dims[0], cols = s.dims[1];
	cv = cval_new(t, 2, s.dims, NULL, 0);
	if (!cv)
		return fail(c, "out of memory");
	free(cv->data);
	cv->n = rows * cols;
	cv->data = calloc(cv->n, 4);
	if (!cv->data) {
		free(cv);
		return fail(c, "out of memory");
	}
	for (int64_t i = 0; i < rows; i++)
		if (i + k >= 0 && i + k < cols) {
			if (t == VTPU_F32)
				((float *)cv->data)[i * cols + i + k] = 1;
			else
				((int32_t *)cv->data)[i * cols + i + k] = 1;
		}
	return keep_const(c, n, cv);
}

/*
 * ScatterElements (and the older Scatter): data with updates written at
 * the indices along the axis, as masked sums like GatherElements: a new
 * axis of the data's length V after the indices' axis K, the mask
 * (index == v), summed over K. Duplicates add (reduction "add" adds the
 * data too); positions no index hits keep the data.
 */
static int op_scatter_elements(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), idx = in(c, n, 1), upd = in(c, n, 2), ax, red[1];
	bool add = attr_s_is(n, "reduction", "none", "add");
	struct vtpu_shape sx, si;
	int64_t e[R], v, lo[R] = { 0 }, hi[R] = { 0 };
	int imap[R], mask, sum, hit, y;
	bool pad = false;

	(void)d;
	if (x < 0 || idx < 0 || upd < 0)
		return -EINVAL;
	if (!add && !attr_s_is(n, "reduction", "none", "none"))
		return fail(c, "unsupported reduction");
	sx = shape_of(c, x);
	si = shape_of(c, idx);
	if (si.rank != sx.rank || sx.rank + 1 > R)
		return fail(c, "indices must have the data's rank (at most %d)",
			    R - 1);
	ax = axis_norm(c, attr_i(n, "axis", 0), sx.rank);
	if (ax < 0)
		return ax;
	v = sx.dims[ax];
	for (int i = 0, k = 0; i <= sx.rank; i++)
		e[i] = i == ax + 1 ? v : si.dims[k++];
	if (prod(e, 0, sx.rank + 1) > (1 << 24))
		return fail(c, "unsupported scatter of that size");
	for (int i = 0; i < sx.rank; i++) {
		imap[i] = i <= ax ? i : i + 1;
		if (i != ax && si.dims[i] > sx.dims[i])
			return fail(c, "indices larger than the data on axis %d", i);
		if (i != ax && si.dims[i] < sx.dims[i])
			hi[i] = sx.dims[i] - si.dims[i], pad = true;
	}
	idx = wrap_indices(c, idx, v);
	idx = idx < 0 ? idx : chk(c, vtpu_g_broadcast(c->g, idx, sx.rank + 1, e,
						      imap));
	mask = iota_along(c, v, sx.rank + 1, e, ax + 1);
	mask = idx < 0 || mask < 0 ? -EINVAL :
	       chk(c, vtpu_g_compare(c->g, VTPU_EQ, idx, mask));
	upd = chk(c, vtpu_g_broadcast(c->g, upd, sx.rank + 1, e, imap));
	if (mask < 0 || upd < 0)
		return -EINVAL;
	red[0] = ax;
	sum = chk(c, vtpu_g_select(c->g, mask, upd, splat(c, 0, upd)));
	sum = sum < 0 ? sum : chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP,
						   sum, 1, red));
	hit = chk(c, vtpu_g_convert(c->g, mask, VTPU_F32));
	hit = hit < 0 ? hit : chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MAX_OP,
						   hit, 1, red));
	/* Data beyond the indices' extent on other axes is never hit. */
	if (pad && sum >= 0 && hit >= 0) {
		sum = chk(c, vtpu_g_pad(c->g, sum, lo, hi, 0.0));
		hit = chk(c, vtpu_g_pad(c->g, hit, lo, hi, 0.0));
	}
	if (sum < 0 || hit < 0)
		return -EINVAL;
	if (add)
		sum = binary(c, VTPU_ADD, x, sum);
	hit = chk(c, vtpu_g_compare(c->g, VTPU_GT, hit, splat(c, 0, hit)));
	y = sum < 0 || hit < 0 ? -EINVAL :
	    chk(c, vtpu_g_select(c->g, hit, sum, x));
	return out(c, n, 0, y);
}

/*
 * TopK for a small constant k: k rounds of "take the max (min), note
 * its first index, mask it out", concatenated. Sorted, ties to the
 * lower index.
 */
static int op_topk(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax, io, vals[64], idxs[64];
	bool largest = attr_i(n, "largest", 1) != 0;
	struct vtpu_shape s;
	int64_t k, kk[R];

	(void)d;
	if (x < 0)
		return x;
	if (c->opset < 10)
		k = attr_i(n, "k", 0);
	else if (in_ints(c, n, 1, &k, 1, "k") != 1)
		return c->failed ? -EINVAL : fail(c, "k must be one value");
	s = shape_of(c, x);
	ax = axis_norm(c, attr_i(n, "axis", -1), s.rank);
	if (ax < 0)
		return ax;
	if (k < 1 || k > 64 || k > s.dims[ax])
		return fail(c, "unsupported k %lld (1..64)", (long long)k);
	if (s.type != VTPU_F32)
		x = chk(c, vtpu_g_convert(c->g, x, VTPU_F32));
	io = iota_f32(c, &s, ax);
	memcpy(kk, s.dims, sizeof(kk));
	kk[ax] = 1;
	for (int64_t r = 0; r < k && x >= 0 && io >= 0; r++) {
		int m = -1, first, hit;

		first = arg_extreme(c, x, ax, io, largest, false, &m);
		hit = unreduce(c, first, &s, ax);
		hit = hit < 0 ? hit : chk(c, vtpu_g_compare(c->g, VTPU_EQ, io, hit));
		if (hit < 0)
			return -EINVAL;
		/* The taken element can never win again. */
		x = chk(c, vtpu_g_select(c->g, hit,
				splat(c, largest ? -INFINITY : INFINITY, x), x));
		vals[r] = reshape(c, m, s.rank, kk);
		idxs[r] = reshape(c, first, s.rank, kk);
		if (vals[r] < 0 || idxs[r] < 0)
			return -EINVAL;
	}
	if (x < 0 || io < 0)
		return -EINVAL;
	{
		int v = k == 1 ? vals[0] : chk(c, vtpu_g_concat(c->g, (int)k, vals, ax));
		int i = k == 1 ? idxs[0] : chk(c, vtpu_g_concat(c->g, (int)k, idxs, ax));

		if (v >= 0 && s.type != VTPU_F32)
			v = chk(c, vtpu_g_convert(c->g, v, s.type));
		i = i < 0 ? i : chk(c, vtpu_g_convert(c->g, i, VTPU_S32));
		if (out(c, n, 0, v) < 0)
			return -EINVAL;
		return n->n_output > 1 && n->output[1][0] ? out(c, n, 1, i) : 0;
	}
}

/* ---- recurrent networks ------------------------------------------------------ */

enum { CELL_RNN, CELL_GRU, CELL_LSTM };

/* Columns [g * h, (g + 1) * h) of a [rows, G * h] value: one gate. */
static int gate(struct ctx *c, int v, int g, int64_t h)
{
	struct vtpu_shape s = shape_of(c, v);
	int64_t st[2] = { 0, g * h }, lim[2] = { s.dims[0], (g + 1) * h };
	int64_t step[2] = { 1, 1 };

	return v < 0 ? v : chk(c, vtpu_g_slice(c->g, v, st, lim, step));
}

/* [1, ...] -> [...]: the single direction's slice of a weight. */
static int drop_dir(struct ctx *c, int v)
{
	struct vtpu_shape s = shape_of(c, v);

	if (v < 0)
		return v;
	if (s.dims[0] != 1)
		return fail(c, "unsupported %lld directions (forward only)",
			    (long long)s.dims[0]);
	return reshape(c, v, s.rank - 1, s.dims + 1);
}

static int sigm(struct ctx *c, int v)
{
	return v < 0 ? v : chk(c, vtpu_g_unary(c->g, VTPU_LOGISTIC, v));
}

static int tanhv(struct ctx *c, int v)
{
	return v < 0 ? v : chk(c, vtpu_g_unary(c->g, VTPU_TANH, v));
}

/*
 * RNN, GRU and LSTM (forward, default activations), unrolled over the
 * sequence: per step one matmul of the input and one of the hidden
 * state against all the gates' weights at once, then the gates'
 * elementwise formulas from the ONNX operator definitions.
 */
static int op_rnn(struct ctx *c, node_t *n, const struct opdef *d)
{
	int cell = d->arg, ng = cell == CELL_RNN ? 1 : cell == CELL_GRU ? 3 : 4;
	int x = in(c, n, 0), w = drop_dir(c, in(c, n, 1)), r = drop_dir(c, in(c, n, 2));
	int wt, rt, bw = -1, br = -1, hprev, cprev = -1, ys[256], peep = -1;
	bool batch_first = attr_i(n, "layout", 0) != 0;
	bool lbr = attr_i(n, "linear_before_reset", 0) != 0;
	int64_t hs = attr_i(n, "hidden_size", 0), seq, batch, t4[4], t2[2];
	static const int tr2[2] = { 1, 0 };
	struct vtpu_shape sx;

	if (x < 0 || w < 0 || r < 0)
		return -EINVAL;
	if (!attr_s_is(n, "direction", "forward", "forward") || attr(n, "activations") ||
	    attr(n, "clip") || attr_i(n, "input_forget", 0))
		return fail(c, "unsupported direction, activations, clip or input_forget");
	sx = shape_of(c, x);
	if (sx.rank != 3 || hs < 1)
		return fail(c, "wants X [seq, batch, input] and hidden_size");
	seq = sx.dims[batch_first ? 1 : 0];
	batch = sx.dims[batch_first ? 0 : 1];
	if (seq > 256)
		return fail(c, "unsupported sequence of %lld steps (at most 256)",
			    (long long)seq);
	if (has_in(n, 4)) {	/* sequence_lens: only the full length */
		const struct cval *cv = cin(c, n, 4, "sequence_lens");
		int64_t lens[1024];
		int m = cv ? cv_ints(c, cv, lens, 1024, "sequence_lens") : -1;

		for (int i = 0; i < m; i++)
			if (lens[i] != seq)
				return fail(c, "unsupported sequence_lens shorter than the sequence");
		if (m < 0)
			return -EINVAL;
	}
	wt = chk(c, vtpu_g_transpose(c->g, w, tr2));	/* [input, G * H] */
	rt = chk(c, vtpu_g_transpose(c->g, r, tr2));	/* [H, G * H] */
	if (has_in(n, 3)) {
		int b = drop_dir(c, in(c, n, 3));	/* [2 * G * H] */
		int64_t st[1] = { 0 }, lim[1] = { ng * hs }, step[1] = { 1 };

		bw = b < 0 ? b : chk(c, vtpu_g_slice(c->g, b, st, lim, step));
		st[0] = ng * hs, lim[0] = 2 * ng * hs;
		br = b < 0 ? b : chk(c, vtpu_g_slice(c->g, b, st, lim, step));
		t2[0] = 1, t2[1] = ng * hs;
		bw = bw < 0 ? bw : reshape(c, bw, 2, t2);
		br = br < 0 ? br : reshape(c, br, 2, t2);
		if (bw < 0 || br < 0)
			return -EINVAL;
	}
	t2[0] = batch, t2[1] = hs;
	if (has_in(n, 5)) {
		hprev = drop_dir(c, in(c, n, 5));
	} else {
		struct vtpu_shape hz = { VTPU_F32, 2, { batch, hs } };
		float *z = calloc(batch * hs, sizeof(*z));

		if (!z)
			return fail(c, "out of memory");
		hprev = chk(c, vtpu_g_constant(c->g, &hz, z));
		if (cell == CELL_LSTM)
			cprev = chk(c, vtpu_g_constant(c->g, &hz, z));
		free(z);
	}
	if (cell == CELL_LSTM && has_in(n, 6))
		cprev = drop_dir(c, in(c, n, 6));
	if (cell == CELL_LSTM && has_in(n, 7))
		peep = drop_dir(c, in(c, n, 7));	/* [3 * H]: i, o, f */
	if (wt < 0 || rt < 0 || hprev < 0 || (cell == CELL_LSTM && cprev < 0))
		return -EINVAL;
	for (int64_t t = 0; t < seq; t++) {
		int64_t st[3] = { 0 }, lim[3], step[3] = { 1, 1, 1 };
		int xt, gx, gh, h;

		for (int i = 0; i < 3; i++)
			lim[i] = sx.dims[i];
		st[batch_first ? 1 : 0] = t;
		lim[batch_first ? 1 : 0] = t + 1;
		xt = chk(c, vtpu_g_slice(c->g, x, st, lim, step));
		xt = xt < 0 ? xt : reshape(c, xt, 2, (int64_t[2]){ batch, sx.dims[2] });
		gx = xt < 0 ? xt : matmul(c, xt, wt);
		gh = matmul(c, hprev, rt);
		if (gx >= 0 && bw >= 0)
			gx = binary(c, VTPU_ADD, gx, bw);
		if (gh >= 0 && br >= 0)
			gh = binary(c, VTPU_ADD, gh, br);
		if (gx < 0 || gh < 0)
			return -EINVAL;
		if (cell == CELL_RNN) {
			h = tanhv(c, binary(c, VTPU_ADD, gx, gh));
		} else if (cell == CELL_GRU) {
			int z = sigm(c, binary(c, VTPU_ADD, gate(c, gx, 0, hs),
						gate(c, gh, 0, hs)));
			int rg = sigm(c, binary(c, VTPU_ADD, gate(c, gx, 1, hs),
						 gate(c, gh, 1, hs)));
			int hh;

			if (lbr) {
				hh = binary(c, VTPU_MUL, rg, gate(c, gh, 2, hs));
			} else {
				/* (r * H) . Rh + Rbh: the reset gate first */
				int rh = gate(c, rt, 2, hs);

				hh = matmul(c, binary(c, VTPU_MUL, rg, hprev), rh);
				if (hh >= 0 && br >= 0)
					hh = binary(c, VTPU_ADD, hh, gate(c, br, 2, hs));
			}
			hh = tanhv(c, binary(c, VTPU_ADD, gate(c, gx, 2, hs), hh));
			/* H = (1 - z) * hh + z * H_prev = hh + z * (H_prev - hh) */
			h = binary(c, VTPU_ADD, hh, binary(c, VTPU_MUL, z,
					binary(c, VTPU_SUB, hprev, hh)));
		} else {
			int g = binary(c, VTPU_ADD, gx, gh), ig, og, fg, cg, cc;

			ig = gate(c, g, 0, hs);
			og = gate(c, g, 1, hs);
			fg = gate(c, g, 2, hs);
			cg = gate(c, g, 3, hs);
			if (peep >= 0) {
				int64_t pst[1] = { 0 }, plim[1] = { hs }, pstep[1] = { 1 };
				int pi = chk(c, vtpu_g_slice(c->g, peep, pst, plim, pstep));

				pst[0] = 2 * hs, plim[0] = 3 * hs;
				ig = binary(c, VTPU_ADD, ig, binary(c, VTPU_MUL, pi, cprev));
				fg = binary(c, VTPU_ADD, fg, binary(c, VTPU_MUL,
					chk(c, vtpu_g_slice(c->g, peep, pst, plim, pstep)),
					cprev));
			}
			cc = binary(c, VTPU_ADD,
				    binary(c, VTPU_MUL, sigm(c, fg), cprev),
				    binary(c, VTPU_MUL, sigm(c, ig), tanhv(c, cg)));
			if (peep >= 0) {
				int64_t pst[1] = { hs }, plim[1] = { 2 * hs }, pstep[1] = { 1 };

				og = binary(c, VTPU_ADD, og, binary(c, VTPU_MUL,
					chk(c, vtpu_g_slice(c->g, peep, pst, plim, pstep)),
					cc));
			}
			h = binary(c, VTPU_MUL, sigm(c, og), tanhv(c, cc));
			cprev = cc;
		}
		if (h < 0 || c->failed)
			return -EINVAL;
		hprev = h;
		/* Y's step: [1, 1, batch, H] or, batch first, [batch, 1, 1, H] */
		if (batch_first)
			t4[0] = batch, t4[1] = 1, t4[2] = 1, t4[3] = hs;
		else
			t4[0] = 1, t4[1] = 1, t4[2] = batch, t4[3] = hs;
		ys[t] = reshape(c, h, 4, t4);
		if (ys[t] < 0)
			return -EINVAL;
	}
	if (n->n_output > 0 && n->output[0][0] &&
	    out(c, n, 0, seq == 1 ? ys[0] : chk(c, vtpu_g_concat(c->g, (int)seq,
					ys, batch_first ? 1 : 0))) < 0)
		return -EINVAL;
	if (batch_first)
		t4[0] = batch, t4[1] = 1, t4[2] = hs;
	else
		t4[0] = 1, t4[1] = batch, t4[2] = hs;
	if (n->n_output > 1 && n->output[1][0] &&
	    out(c, n, 1, reshape(c, hprev, 3, t4)) < 0)
		return -EINVAL;
	if (cell == CELL_LSTM && n->n_output > 2 && n->output[2][0] &&
	    out(c, n, 2, reshape(c, cprev, 3, t4)) < 0)
		return -EINVAL;
	return 0;
}

/* ---- einsum ------------------------------------------------------------------ */

static void add_letter(char *s, char ch)
{
	size_t len = strlen(s);

	s[len] = ch;
	s[len + 1] = 0;
}

/* Sums @x over the axes whose letters in @sub are not in @keep. */
static int einsum_sum_out(struct ctx *c, int x, char *sub, const char *keep)
{
	int axes[R], na = 0, k = 0;
	char left[R + 1];

	for (int i = 0; sub[i]; i++) {
		if (strchr(keep, sub[i]))
			left[k++] = sub[i];
		else
			axes[na++] = i;
	}
	left[k] = 0;
	if (!na)
		return x;
	strcpy(sub, left);
	return chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP, x, na, axes));
}

/*
 * Einsum of one or two operands without repeated letters in a term
 * (no diagonals) or ellipses: letters only one operand has and the
 * output lacks are summed out first, then one DotGeneral (shared
 * letters in the output are batch dims, the others contracted) and a
 * transpose into the output's order.
 */
static int op_einsum(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__AttributeProto *a = attr(n, "equation");
	char eq[128], *arrow, *terms[2], outs[R + 1], cur[2 * R + 1] = "";
	char all[2 * R + 1] = "";
	int v[2], nt = 0, y, perm[R];
	size_t k = 0;

	(void)d;
	if (!a || !a->has_s || a->s.len >= sizeof(eq))
		return fail(c, "missing or long equation");
	for (size_t i = 0; i < a->s.len; i++)
		if (a->s.data[i] != ' ')
			eq[k++] = (char)a->s.data[i];
	eq[k] = 0;
	if (strchr(eq, '.'))
		return fail(c, "unsupported ellipsis in equation %s", eq);
	arrow = strstr(eq, "->");
	if (arrow)
		*arrow = 0;
	terms[nt++] = eq;
	for (char *p = eq; *p; p++)
		if (*p == ',') {
			if (nt == 2)
				return fail(c, "unsupported einsum of more than 2 operands");
			*p = 0;
			terms[nt++] = p + 1;
		}
	if ((size_t)nt != n->n_input)
		return fail(c, "equation has %d terms for %zu inputs", nt,
			    n->n_input);
	for (int t = 0; t < nt; t++) {
		struct vtpu_shape s;

		v[t] = in(c, n, t);
		if (v[t] < 0)
			return v[t];
		s = shape_of(c, v[t]);
		if ((int)strlen(terms[t]) != s.rank)
			return fail(c, "term %s does not match rank %d", terms[t],
				    s.rank);
		for (int i = 0; terms[t][i]; i++) {
			if (!((terms[t][i] >= 'a' && terms[t][i] <= 'z') ||
			      (terms[t][i] >= 'A' && terms[t][i] <= 'Z')))
				return fail(c, "bad letter in equation");
			if (strchr(terms[t] + i + 1, terms[t][i]))
				return fail(c, "unsupported repeated index %c (diagonal)",
					    terms[t][i]);
		}
		strcat(all, terms[t]);
	}
	if (arrow) {
		if (strlen(arrow + 2) > R)
			return fail(c, "output rank above %d", R);
		strcpy(outs, arrow + 2);
	} else {	/* implicit: letters seen once, alphabetically */
		k = 0;
		for (int ch = 'A'; ch <= 'z'; ch++) {
			const char *p = strchr(all, ch);

			if (p && !strchr(p + 1, ch) && k < R)
				outs[k++] = (char)ch;
		}
		outs[k] = 0;
	}
	/* Sum out what only one operand has and the output lacks. */
	for (int t = 0; t < nt; t++) {
		char keep[2 * R + 2];

		snprintf(keep, sizeof(keep), "%s%s", outs,
			 nt == 2 ? terms[1 - t] : "");
		v[t] = einsum_sum_out(c, v[t], terms[t], keep);
		if (v[t] < 0)
			return v[t];
	}
	if (nt == 1) {
		strcpy(cur, terms[0]);
		y = v[0];
	} else {
		struct vtpu_dot_dims dd = { 0 };
		char *A = terms[0], *B = terms[1];

		/* Result order: batch, A's free, B's free (XLA's). */
		for (int i = 0; A[i]; i++) {
			char *pb = strchr(B, A[i]);

			if (!pb)
				continue;
			if (strchr(outs, A[i])) {
				dd.lhs_batch[dd.nbatch] = i;
				dd.rhs_batch[dd.nbatch++] = (int)(pb - B);
				add_letter(cur, A[i]);
			} else {
				dd.lhs_contract[dd.ncontract] = i;
				dd.rhs_contract[dd.ncontract++] = (int)(pb - B);
			}
		}
		for (int i = 0; A[i]; i++)
			if (!strchr(B, A[i]))
				add_letter(cur, A[i]);
		for (int i = 0; B[i]; i++)
			if (!strchr(A, B[i]))
				add_letter(cur, B[i]);
		y = chk(c, vtpu_g_dot(c->g, v[0], v[1], &dd));
	}
	if (y < 0)
		return y;
	if (strlen(cur) != strlen(outs))
		return fail(c, "output %s does not match the operands", outs);
	for (int i = 0; outs[i]; i++) {
		char *p = strchr(cur, outs[i]);

		if (!p)
			return fail(c, "output letter %c is in no operand", outs[i]);
		perm[i] = (int)(p - cur);
	}
	for (int i = 0; outs[i]; i++)
		if (perm[i] != i)
			return out(c, n, 0, chk(c, vtpu_g_transpose(c->g, y, perm)));
	return out(c, n, 0, y);
}

/* ---- losses ------------------------------------------------------------------ */

/*
 * An s32 iota [0, size) laid along dimension @axis of @rank/@dims, or
 * -errno.
 */
static int iota_along(struct ctx *c, int64_t size, int rank,
		      const int64_t *dims, int axis)
{
	struct vtpu_shape is = { VTPU_S32, 1, { size } };
	int32_t *v = malloc(size * sizeof(*v));
	int id, map[1] = { axis };

	if (!v)
		return fail(c, "out of memory");
	for (int64_t i = 0; i < size; i++)
		v[i] = (int32_t)i;
	id = chk(c, vtpu_g_constant(c->g, &is, v));
	free(v);
	return id < 0 ? id : chk(c, vtpu_g_broadcast(c->g, id, rank, dims, map));
}

/*
 * NegativeLogLikelihoodLoss on input [N, C, d...] (log-probabilities)
 * and target [N, d...]: a class mask (target == c) picks input and
 * weight along C, so no gather is needed; targets equal to ignore_index
 * (or out of range) weigh 0. Reduced by none, sum or the weighted mean.
 */
static int nll_loss(struct ctx *c, node_t *n, int x, int t, int w)
{
	struct vtpu_shape sx = shape_of(c, x), st = shape_of(c, t);
	int map[R], red[1] = { 1 }, mask, pick, wsel, loss, all[R];
	bool none = attr_s_is(n, "reduction", "mean", "none");
	bool sum = attr_s_is(n, "reduction", "mean", "sum");

	if (!none && !sum && !attr_s_is(n, "reduction", "mean", "mean"))
		return fail(c, "unsupported reduction");
	if (sx.rank < 2 || st.rank != sx.rank - 1 || st.type != VTPU_S32)
		return fail(c, "wants input [N, C, ...] and integer target [N, ...]");
	for (int i = 0, k = 0; i < sx.rank; i++) {
		if (i == 1)
			continue;
		if (st.dims[k] != sx.dims[i])
			return fail(c, "target dims do not match the input's");
		map[k++] = i;
	}
	t = chk(c, vtpu_g_broadcast(c->g, t, sx.rank, sx.dims, map));
	mask = iota_along(c, sx.dims[1], sx.rank, sx.dims, 1);
	mask = t < 0 || mask < 0 ? -EINVAL :
	       chk(c, vtpu_g_compare(c->g, VTPU_EQ, t, mask));
	if (mask < 0)
		return mask;
	pick = chk(c, vtpu_g_select(c->g, mask, x, splat(c, 0, x)));
	pick = pick < 0 ? pick : chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP,
						      pick, 1, red));
	if (w >= 0) {
		struct vtpu_shape sw = shape_of(c, w);

		if (sw.rank != 1 || sw.dims[0] != sx.dims[1])
			return fail(c, "weight must be [C]");
		w = chk(c, vtpu_g_broadcast(c->g, w, sx.rank, sx.dims, red));
	} else {
		w = splat(c, 1, x);
	}
	wsel = w < 0 ? w : chk(c, vtpu_g_select(c->g, mask, w, splat(c, 0, x)));
	wsel = wsel < 0 ? wsel : chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP,
						      wsel, 1, red));
	if (wsel >= 0 && attr(n, "ignore_index")) {
		int tt = in(c, n, 1), keep;

		keep = tt < 0 ? tt : chk(c, vtpu_g_compare(c->g, VTPU_NE, tt,
				splat(c, (double)attr_i(n, "ignore_index", 0), tt)));
		wsel = keep < 0 ? keep : chk(c, vtpu_g_select(c->g, keep, wsel,
							    splat(c, 0, wsel)));
	}
	if (pick < 0 || wsel < 0)
		return -EINVAL;
	loss = chk(c, vtpu_g_unary(c->g, VTPU_NEG, binary(c, VTPU_MUL, pick, wsel)));
	if (loss < 0 || none)
		return loss;
	for (int i = 0; i < st.rank; i++)
		all[i] = i;
	loss = chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP, loss, st.rank, all));
	if (loss < 0 || sum)
		return loss;
	wsel = chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP, wsel, st.rank, all));
	return wsel < 0 ? wsel : chk(c, vtpu_g_binary(c->g, VTPU_DIV, loss, wsel));
}

static int op_nll_loss(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), t = in(c, n, 1);
	int w = has_in(n, 2) ? in(c, n, 2) : -1;

	(void)d;
	if (x < 0 || t < 0 || (has_in(n, 2) && w < 0))
		return -EINVAL;
	return out(c, n, 0, nll_loss(c, n, x, t, w));
}

/* SoftmaxCrossEntropyLoss: NLL of log_softmax over C; log_prob too. */
static int op_sce_loss(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), t = in(c, n, 1), lp;
	int w = has_in(n, 2) ? in(c, n, 2) : -1;

	(void)d;
	if (x < 0 || t < 0 || (has_in(n, 2) && w < 0))
		return -EINVAL;
	lp = chk(c, vtpu_g_log_softmax(c->g, x, 1));
	if (lp >= 0 && n->n_output > 1 && n->output[1][0] && out(c, n, 1, lp) < 0)
		return -EINVAL;
	return out(c, n, 0, lp < 0 ? lp : nll_loss(c, n, lp, t, w));
}

/* ---- linear algebra -------------------------------------------------------- */

/* numpy matmul: 1-D operands promoted and squeezed, batch dims broadcast. */
static int matmul(struct ctx *c, int a, int b)
{
	struct vtpu_shape sa = shape_of(c, a), sb = shape_of(c, b);
	bool sqm = sa.rank == 1, sqn = sb.rank == 1;
	int64_t batch[R], fin[R], t[R];
	int nb, nf = 0, y;

	if (sa.rank == 0 || sb.rank == 0)
		return fail(c, "MatMul of a scalar");
	if (sqm) {
		t[0] = 1, t[1] = sa.dims[0];
		a = reshape(c, a, 2, t);
		sa = shape_of(c, a);
	}
	if (sqn) {
		t[0] = sb.dims[0], t[1] = 1;
		b = reshape(c, b, 2, t);
		sb = shape_of(c, b);
	}
	if (a < 0 || b < 0)
		return -EINVAL;
	nb = (sa.rank > sb.rank ? sa.rank : sb.rank) - 2;
	for (int i = 0; i < nb; i++) {
		int ia = i - (nb - (sa.rank - 2)), ib = i - (nb - (sb.rank - 2));
		int64_t da = ia >= 0 ? sa.dims[ia] : 1, db = ib >= 0 ? sb.dims[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return fail(c, "MatMul batch dimensions %lld and %lld differ",
				    (long long)da, (long long)db);
		batch[i] = da == 1 ? db : da;
		fin[nf++] = batch[i];
	}
	if (!sqm)
		fin[nf++] = sa.dims[sa.rank - 2];
	if (!sqn)
		fin[nf++] = sb.dims[sb.rank - 1];
	if (nb) {
		memcpy(t, batch, nb * sizeof(*t));
		t[nb] = sa.dims[sa.rank - 2], t[nb + 1] = sa.dims[sa.rank - 1];
		a = bcast_to(c, a, nb + 2, t);
		t[nb] = sb.dims[sb.rank - 2], t[nb + 1] = sb.dims[sb.rank - 1];
		b = bcast_to(c, b, nb + 2, t);
		t[0] = prod(batch, 0, nb);
		t[1] = sa.dims[sa.rank - 2], t[2] = sa.dims[sa.rank - 1];
		a = a < 0 ? a : reshape(c, a, 3, t);
		t[1] = sb.dims[sb.rank - 2], t[2] = sb.dims[sb.rank - 1];
		b = b < 0 ? b : reshape(c, b, 3, t);
		if (a < 0 || b < 0)
			return -EINVAL;
	}
	y = chk(c, vtpu_g_matmul(c->g, a, b));
	return y < 0 ? y : reshape(c, y, nf, fin);
}

static int op_matmul(struct ctx *c, node_t *n, const struct opdef *d)
{
	int a = in(c, n, 0), b = in(c, n, 1);

	(void)d;
	if (a < 0 || b < 0)
		return -EINVAL;
	return out(c, n, 0, matmul(c, a, b));
}

static int transpose2(struct ctx *c, int a)
{
	static const int perm[2] = { 1, 0 };

	return a < 0 ? a : chk(c, vtpu_g_transpose(c->g, a, perm));
}

/* Gemm: alpha * A' B' + beta * C, C broadcast to [M, N]. */
static int op_gemm(struct ctx *c, node_t *n, const struct opdef *d)
{
	int a = in(c, n, 0), b = in(c, n, 1), y;
	float alpha = attr_f(n, "alpha", 1), beta = attr_f(n, "beta", 1);

	(void)d;
	if (a < 0 || b < 0)
		return -EINVAL;
	if (shape_of(c, a).rank != 2 || shape_of(c, b).rank != 2)
		return fail(c, "Gemm operands must be 2-D");
	if (attr_i(n, "transA", 0))
		a = transpose2(c, a);
	if (attr_i(n, "transB", 0))
		b = transpose2(c, b);
	if (a < 0 || b < 0)
		return -EINVAL;
	y = chk(c, vtpu_g_matmul(c->g, a, b));
	if (y >= 0 && alpha != 1)
		y = binary(c, VTPU_MUL, y, splat(c, alpha, y));
	if (y >= 0 && has_in(n, 2)) {
		struct vtpu_shape s = shape_of(c, y);
		int cc = in(c, n, 2);

		if (cc >= 0 && beta != 1)
			cc = binary(c, VTPU_MUL, cc, splat(c, beta, cc));
		cc = cc < 0 ? cc : bcast_to(c, cc, 2, s.dims);
		y = cc < 0 ? cc : chk(c, vtpu_g_binary(c->g, VTPU_ADD, y, cc));
	}
	return out(c, n, 0, y);
}

/* ---- convolution and pooling ----------------------------------------------- */

struct window {
	int nsp;			/* spatial dims: 1, 2 or 3 */
	int64_t k[3], s[3], d[3], lo[3], hi[3], in[3], o[3];
	int64_t ceil_hi[3];		/* padding ceil_mode adds past @hi */
};

/* Strides, dilations, pads (auto_pad too) and output sizes of a window. */
static int window(struct ctx *c, node_t *n, struct window *w)
{
	int64_t v[6];
	int m;
	bool same_up = attr_s_is(n, "auto_pad", "NOTSET", "SAME_UPPER");
	bool same_lo = attr_s_is(n, "auto_pad", "NOTSET", "SAME_LOWER");
	bool valid = attr_s_is(n, "auto_pad", "NOTSET", "VALID");

	if (!same_up && !same_lo && !valid &&
	    !attr_s_is(n, "auto_pad", "NOTSET", "NOTSET"))
		return fail(c, "unsupported auto_pad");
	for (int i = 0; i < w->nsp; i++)
		w->s[i] = w->d[i] = 1, w->lo[i] = w->hi[i] = 0;
	if ((m = attr_ints(c, n, "strides", v, 3)) >= 0)
		for (int i = 0; i < m && i < w->nsp; i++)
			w->s[i] = v[i];
	if ((m = attr_ints(c, n, "dilations", v, 3)) >= 0)
		for (int i = 0; i < m && i < w->nsp; i++)
			w->d[i] = v[i];
	if ((m = attr_ints(c, n, "pads", v, 6)) == 2 * w->nsp)
		for (int i = 0; i < w->nsp; i++)
			w->lo[i] = v[i], w->hi[i] = v[i + w->nsp];
	else if (m >= 0 && !c->failed)
		return fail(c, "pads has %d values for %d spatial axes", m, w->nsp);
	if (c->failed)
		return -EINVAL;
	for (int i = 0; i < w->nsp; i++) {
		int64_t ext = (w->k[i] - 1) * w->d[i] + 1, tot;

		if (w->s[i] < 1 || w->d[i] < 1 || w->lo[i] < 0 || w->hi[i] < 0)
			return fail(c, "bad strides, dilations or pads");
		if (same_up || same_lo) {
			int64_t on = (w->in[i] + w->s[i] - 1) / w->s[i];

			tot = (on - 1) * w->s[i] + ext - w->in[i];
			tot = tot < 0 ? 0 : tot;
			w->lo[i] = same_up ? tot / 2 : tot - tot / 2;
			w->hi[i] = tot - w->lo[i];
		} else if (valid) {
			w->lo[i] = w->hi[i] = 0;
		}
		if (w->in[i] + w->lo[i] + w->hi[i] < ext)
			return fail(c, "window larger than the padded input");
		tot = w->in[i] + w->lo[i] + w->hi[i] - ext;
		w->o[i] = tot / w->s[i] + 1;
		w->ceil_hi[i] = 0;
		/*
		 * ceil_mode: one more window for a partial stride, unless it
		 * would start past the input and the left padding.
		 */
		if (attr_i(n, "ceil_mode", 0) && tot % w->s[i] &&
		    w->o[i] * w->s[i] < w->in[i] + w->lo[i]) {
			w->ceil_hi[i] = (w->o[i] * w->s[i] + ext) -
					(w->in[i] + w->lo[i] + w->hi[i]);
			w->o[i]++;
		}
	}
	return 0;
}

/* Rank-3 (1-D spatial) tensors become rank 4 with H = 1. */
static int to4d(struct ctx *c, int x)
{
	struct vtpu_shape s = shape_of(c, x);
	int64_t t[4] = { s.dims[0], s.dims[1], 1, s.dims[2] };

	return s.rank == 4 ? x : reshape(c, x, 4, t);
}

/* The builder's 2-D convolution with @w's last @nsp (1 or 2) axes. */
static int conv2d(struct ctx *c, int x, int k, const struct window *w,
		  int first, int nsp, int groups)
{
	struct vtpu_conv_params p = { .groups = groups };

	for (int j = 0; j < 2; j++)
		p.stride[j] = p.dilation[j] = 1;
	/* A 1-D window is the W axis of the 2-D one. */
	for (int i = first, j = 2 - nsp; j < 2; i++, j++) {
		p.stride[j] = (int)w->s[i], p.dilation[j] = (int)w->d[i];
		p.pad_lo[j] = (int)w->lo[i], p.pad_hi[j] = (int)w->hi[i];
	}
	return chk(c, vtpu_g_conv2d(c->g, x, k, &p));
}

/*
 * A 3-D convolution as one 2-D convolution: the input's KD depth
 * windows (strided slices of the depth-padded input) are stacked next
 * to the channels, [N, C, KD, OD, H, W] -> [N * OD, C * KD, H, W], and
 * the kernel [O, C/g, KD, KH, KW] read as [O, C/g * KD, KH, KW]: the
 * channel order c * KD + kd matches and keeps the groups contiguous.
 */
static int conv3d(struct ctx *c, int x, int k, const struct window *w,
		  int groups)
{
	struct vtpu_shape sx = shape_of(c, x), sk = shape_of(c, k), sy;
	int64_t lo[R] = { 0 }, hi[R] = { 0 }, od = w->o[0], kd = w->k[0];
	int parts[64], y;
	static const int to_nd[6] = { 0, 3, 1, 2, 4, 5 };
	static const int back[5] = { 0, 2, 1, 3, 4 };

	if (kd > 64)
		return fail(c, "unsupported kernel depth %lld (at most 64)",
			    (long long)kd);
	lo[2] = w->lo[0], hi[2] = w->hi[0];
	if (lo[2] || hi[2])
		x = chk(c, vtpu_g_pad(c->g, x, lo, hi, 0.0));
	if (x < 0)
		return x;
	sx = shape_of(c, x);
	for (int64_t i = 0; i < kd; i++) {
		int64_t st[R] = { 0, 0, i * w->d[0], 0, 0 };
		int64_t lim[R] = { sx.dims[0], sx.dims[1],
				   st[2] + (od - 1) * w->s[0] + 1,
				   sx.dims[3], sx.dims[4] };
		int64_t step[R] = { 1, 1, w->s[0], 1, 1 };
		int64_t t[6] = { sx.dims[0], sx.dims[1], 1, od, sx.dims[3],
				 sx.dims[4] };

		parts[i] = chk(c, vtpu_g_slice(c->g, x, st, lim, step));
		parts[i] = parts[i] < 0 ? parts[i] : reshape(c, parts[i], 6, t);
		if (parts[i] < 0)
			return parts[i];
	}
	x = kd == 1 ? parts[0] : chk(c, vtpu_g_concat(c->g, (int)kd, parts, 2));
	x = x < 0 ? x : chk(c, vtpu_g_transpose(c->g, x, to_nd));
	if (x >= 0) {
		int64_t t[4] = { sx.dims[0] * od, sx.dims[1] * kd, sx.dims[3],
				 sx.dims[4] };

		x = reshape(c, x, 4, t);
	}
	if (x >= 0) {
		int64_t t[4] = { sk.dims[0], sk.dims[1] * kd, sk.dims[3],
				 sk.dims[4] };

		k = reshape(c, k, 4, t);
	}
	if (x < 0 || k < 0)
		return -EINVAL;
	y = conv2d(c, x, k, w, 1, 2, groups);
	if (y < 0)
		return y;
	sy = shape_of(c, y);
	{
		int64_t t[5] = { sx.dims[0], od, sy.dims[1], sy.dims[2],
				 sy.dims[3] };

		y = reshape(c, y, 5, t);
	}
	return y < 0 ? y : chk(c, vtpu_g_transpose(c->g, y, back));
}

/* Convolution over 1, 2 or 3 spatial axes (@w->nsp), without bias. */
static int conv_nd(struct ctx *c, int x, int k, const struct window *w,
		   int groups)
{
	struct vtpu_shape sy;
	int y;

	if (w->nsp == 3)
		return conv3d(c, x, k, w, groups);
	x = to4d(c, x);
	k = to4d(c, k);
	if (x < 0 || k < 0)
		return -EINVAL;
	y = conv2d(c, x, k, w, 0, w->nsp, groups);
	if (y >= 0 && w->nsp == 1) {
		int64_t t[3];

		sy = shape_of(c, y);
		t[0] = sy.dims[0], t[1] = sy.dims[1], t[2] = sy.dims[3];
		y = reshape(c, y, 3, t);
	}
	return y;
}

/* y + bias (input @i, [C]) along dimension 1, when the node has one. */
static int add_bias(struct ctx *c, node_t *n, size_t i, int y)
{
	struct vtpu_shape sy;
	int bias, dim1[1] = { 1 };

	if (y < 0 || !has_in(n, i))
		return y;
	bias = in(c, n, i);
	sy = shape_of(c, y);
	if (bias >= 0 && (shape_of(c, bias).rank != 1 ||
			  shape_of(c, bias).dims[0] != sy.dims[1]))
		return fail(c, "bias must be [%lld]", (long long)sy.dims[1]);
	if (bias >= 0)
		bias = chk(c, vtpu_g_broadcast(c->g, bias, sy.rank, sy.dims, dim1));
	return bias < 0 ? bias : chk(c, vtpu_g_binary(c->g, VTPU_ADD, y, bias));
}

static int op_conv(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), k = in(c, n, 1);
	struct vtpu_shape sx, sk;
	struct window w = { 0 };
	int64_t kv[3];

	(void)d;
	if (x < 0 || k < 0)
		return -EINVAL;
	sx = shape_of(c, x);
	sk = shape_of(c, k);
	if (sx.rank < 3 || sx.rank > 5 || sk.rank != sx.rank)
		return fail(c, "unsupported %d-D convolution (1-D to 3-D only)",
			    sx.rank - 2);
	w.nsp = sx.rank - 2;
	if (attr_ints(c, n, "kernel_shape", kv, 3) >= 0)
		for (int i = 0; i < w.nsp; i++)
			if (kv[i] != sk.dims[2 + i])
				return fail(c, "kernel_shape does not match the weights");
	for (int i = 0; i < w.nsp; i++)
		w.in[i] = sx.dims[2 + i], w.k[i] = sk.dims[2 + i];
	if (c->failed || window(c, n, &w))
		return -EINVAL;
	x = conv_nd(c, x, k, &w, (int)attr_i(n, "group", 1));
	return out(c, n, 0, add_bias(c, n, 2, x));
}

/*
 * Inserts @s - 1 zeros between the elements of @x along @axis: a rank-4
 * view [pre, X, 1, post] padded to [pre, X, s, post], less the trailing
 * zeros.
 */
static int dilate(struct ctx *c, int x, int axis, int64_t s)
{
	struct vtpu_shape sx = shape_of(c, x);
	int64_t t[4] = { prod(sx.dims, 0, axis), sx.dims[axis], 1,
			 prod(sx.dims, axis + 1, sx.rank) };
	int64_t lo[R] = { 0 }, hi[R] = { 0 }, st[R] = { 0 }, step[R];

	if (s == 1)
		return x;
	hi[2] = s - 1;
	x = reshape(c, x, 4, t);
	x = x < 0 ? x : chk(c, vtpu_g_pad(c->g, x, lo, hi, 0.0));
	sx.dims[axis] = sx.dims[axis] * s;
	x = x < 0 ? x : reshape(c, x, sx.rank, sx.dims);
	for (int i = 0; i < sx.rank; i++)
		step[i] = 1;
	sx.dims[axis] -= s - 1;
	return x < 0 ? x : chk(c, vtpu_g_slice(c->g, x, st, sx.dims, step));
}

/*
 * ConvTranspose as a convolution: the input dilated by the strides and
 * padded by (k - 1) * d less the pads (cropped where that is negative),
 * convolved at stride 1 with the kernel flipped and its in/out channels
 * swapped within each group.
 */
static int op_convtranspose(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), k = in(c, n, 1), g = (int)attr_i(n, "group", 1);
	struct vtpu_shape sx, sk;
	struct window w = { 0 };
	int64_t st[6], dl[6], op[6] = { 0 }, pads[6] = { 0 }, os[6], kv[6];
	int64_t lo[R] = { 0 }, hi[R] = { 0 }, cst[R] = { 0 }, clim[R], cstep[R];
	int nos, m, nsp;
	bool same_up = attr_s_is(n, "auto_pad", "NOTSET", "SAME_UPPER");
	bool same_lo = attr_s_is(n, "auto_pad", "NOTSET", "SAME_LOWER");
	bool crop = false;

	(void)d;
	if (x < 0 || k < 0)
		return -EINVAL;
	sx = shape_of(c, x);
	sk = shape_of(c, k);
	if (sx.rank < 3 || sx.rank > 5 || sk.rank != sx.rank)
		return fail(c, "unsupported %d-D ConvTranspose (1-D to 3-D only)",
			    sx.rank - 2);
	nsp = w.nsp = sx.rank - 2;
	if (g < 1 || sx.dims[1] % g || sk.dims[0] != sx.dims[1])
		return fail(c, "weights [%lld, ...] do not match %lld channels in %d groups",
			    (long long)sk.dims[0], (long long)sx.dims[1], g);
	if (!same_up && !same_lo && !attr_s_is(n, "auto_pad", "NOTSET", "NOTSET") &&
	    !attr_s_is(n, "auto_pad", "NOTSET", "VALID"))
		return fail(c, "unsupported auto_pad");
	for (int i = 0; i < nsp; i++)
		st[i] = dl[i] = 1;
	if ((m = attr_ints(c, n, "kernel_shape", kv, 6)) >= 0)
		for (int i = 0; i < nsp; i++)
			if (m != nsp || kv[i] != sk.dims[2 + i])
				return fail(c, "kernel_shape does not match the weights");
	if ((m = attr_ints(c, n, "strides", st, 6)) >= 0 && m != nsp)
		return fail(c, "strides must have %d values", nsp);
	if ((m = attr_ints(c, n, "dilations", dl, 6)) >= 0 && m != nsp)
		return fail(c, "dilations must have %d values", nsp);
	if ((m = attr_ints(c, n, "output_padding", op, 6)) >= 0 && m != nsp)
		return fail(c, "output_padding must have %d values", nsp);
	if ((m = attr_ints(c, n, "pads", pads, 6)) >= 0 && m != 2 * nsp)
		return fail(c, "pads must have %d values", 2 * nsp);
	nos = attr_ints(c, n, "output_shape", os, 6);
	if (c->failed)
		return -EINVAL;
	if (nos >= 0 && nos != nsp && nos != nsp + 2)
		return fail(c, "output_shape must have %d values", nsp);
	for (int i = 0; i < nsp; i++) {
		int64_t kk = sk.dims[2 + i], ext = (kk - 1) * dl[i] + 1;
		int64_t in = sx.dims[2 + i], plo = pads[i], phi = pads[i + nsp];

		if (st[i] < 1 || dl[i] < 1 || op[i] < 0 || plo < 0 || phi < 0 ||
		    (op[i] >= st[i] && op[i] >= dl[i]))
			return fail(c, "bad strides, dilations, pads or output_padding");
		if (nos >= 0 || same_up || same_lo) {
			int64_t want = nos >= 0 ? os[nos - nsp + i] : in * st[i];
			int64_t tot = st[i] * (in - 1) + op[i] + ext - want;

			/* Floor division, as ONNX's reference: a larger
			 * output_shape (tot < 0) is zeros past the result. */
			int64_t half = tot >= 0 ? tot / 2 : -((-tot + 1) / 2);

			plo = same_up ? half : tot - half;
			phi = tot - plo;
		}
		/* Padding of the dilated input for a stride-1 convolution. */
		lo[2 + i] = (kk - 1) * dl[i] - plo;
		hi[2 + i] = (kk - 1) * dl[i] - phi + op[i];
		w.k[i] = kk, w.d[i] = dl[i], w.s[i] = 1;
		w.in[i] = (in - 1) * st[i] + 1 + lo[2 + i] + hi[2 + i];
		w.o[i] = w.in[i] - ext + 1;
		if (w.o[i] < 1)
			return fail(c, "empty result");
	}
	for (int i = 0; i < nsp && x >= 0; i++)
		x = dilate(c, x, 2 + i, st[i]);
	for (int i = 2; i < sx.rank; i++) {
		crop |= lo[i] < 0 || hi[i] < 0;
		cst[i] = lo[i] < 0 ? -lo[i] : 0;
		lo[i] = lo[i] < 0 ? 0 : lo[i];
	}
	if (x >= 0 && crop) {
		struct vtpu_shape sd = shape_of(c, x);

		for (int i = 0; i < sd.rank; i++) {
			cstep[i] = 1;
			clim[i] = sd.dims[i] + (i >= 2 && hi[i] < 0 ? hi[i] : 0);
		}
		x = chk(c, vtpu_g_slice(c->g, x, cst, clim, cstep));
	}
	for (int i = 2; i < sx.rank; i++)
		hi[i] = hi[i] < 0 ? 0 : hi[i];
	x = x < 0 ? x : chk(c, vtpu_g_pad(c->g, x, lo, hi, 0.0));
	/* The kernel: flipped, then [g, C/g, O/g, ...] -> [g, O/g, C/g, ...]. */
	for (int i = 2; i < sk.rank && k >= 0; i++) {
		int64_t rev[MAX_TAKE];

		if (sk.dims[i] > MAX_TAKE)
			return fail(c, "kernel too large");
		for (int64_t j = 0; j < sk.dims[i]; j++)
			rev[j] = sk.dims[i] - 1 - j;
		if (sk.dims[i] > 1)
			k = take(c, k, i, rev, (int)sk.dims[i]);
	}
	if (k >= 0) {
		int64_t t[R] = { g, sk.dims[0] / g, sk.dims[1] };
		int perm[R] = { 0, 2, 1 };

		for (int i = 0; i < nsp; i++)
			t[3 + i] = sk.dims[2 + i], perm[3 + i] = 3 + i;
		if (3 + nsp > R)
			return fail(c, "unsupported 3-D ConvTranspose with groups");
		k = reshape(c, k, 3 + nsp, t);
		k = k < 0 ? k : chk(c, vtpu_g_transpose(c->g, k, perm));
		t[0] = sk.dims[1] * g, t[1] = sk.dims[0] / g;
		for (int i = 0; i < nsp; i++)
			t[2 + i] = sk.dims[2 + i];
		k = k < 0 ? k : reshape(c, k, sk.rank, t);
	}
	if (x < 0 || k < 0)
		return -EINVAL;
	x = conv_nd(c, x, k, &w, g);
	return out(c, n, 0, add_bias(c, n, 2, x));
}

/*
 * The count of real (unpadded) inputs under each window, [O0, O1, ...]:
 * a window is a box, so the count is the product of per-axis counts.
 */
static int pool_counts(struct ctx *c, const struct window *w, bool with_pads)
{
	struct vtpu_shape cs = { VTPU_F32, w->nsp, { 0 } };
	int64_t total = 1, pos[3] = { 0 };
	float *cnt, *axis[3] = { NULL };
	int v = -ENOMEM;

	for (int a = 0; a < w->nsp; a++) {
		cs.dims[a] = w->o[a];
		total *= w->o[a];
		axis[a] = calloc(w->o[a], sizeof(float));
		if (!axis[a])
			goto out;
		for (int64_t i = 0; i < w->o[a]; i++)
			for (int64_t k = 0; k < w->k[a]; k++) {
				int64_t x = i * w->s[a] + k * w->d[a] - w->lo[a];

				/* count_include_pad counts the pads, never the
				 * positions only ceil_mode added. */
				if (with_pads)
					axis[a][i] += x >= -w->lo[a] &&
						      x < w->in[a] + w->hi[a];
				else
					axis[a][i] += x >= 0 && x < w->in[a];
			}
	}
	cnt = malloc(total * sizeof(*cnt));
	if (!cnt)
		goto out;
	for (int64_t i = 0; i < total; i++) {
		cnt[i] = 1;
		for (int a = 0; a < w->nsp; a++)
			cnt[i] *= axis[a][pos[a]];
		for (int a = w->nsp - 1; a >= 0 && ++pos[a] == w->o[a]; a--)
			pos[a] = 0;
	}
	v = chk(c, vtpu_g_constant(c->g, &cs, cnt));
	free(cnt);
out:
	for (int a = 0; a < w->nsp; a++)
		free(axis[a]);
	return v == -ENOMEM ? fail(c, "out of memory") : v;
}

/*
 * MaxPool/AveragePool over 1, 2 or 3 spatial axes. A box window is
 * separable, so each axis is pooled in turn: the padded input's kernel
 * strided slices along that axis, combined by max or add. That is
 * k0 + k1 + k2 slices rather than k0 * k1 * k2.
 */
static int op_pool(struct ctx *c, node_t *n, const struct opdef *d)
{
	bool is_max = d->arg;
	int x = in(c, n, 0), m;
	struct vtpu_shape sx;
	struct window w = { 0 };
	int64_t kv[3], lo[R] = { 0 }, hi[R] = { 0 };
	bool padded = false, ceil = false;

	if (x < 0)
		return x;
	if (n->n_output > 1 && n->output[1][0])
		return fail(c, "unsupported Indices output");
	if (attr_i(n, "storage_order", 0))
		return fail(c, "unsupported storage_order=1");
	sx = shape_of(c, x);
	if (sx.rank < 3 || sx.rank > 5)
		return fail(c, "unsupported %d-D pooling (1-D to 3-D only)",
			    sx.rank - 2);
	w.nsp = sx.rank - 2;
	m = attr_ints(c, n, "kernel_shape", kv, 3);
	if (m != w.nsp)
		return fail(c, "kernel_shape must have %d values", w.nsp);
	for (int i = 0; i < w.nsp; i++) {
		w.in[i] = sx.dims[2 + i], w.k[i] = kv[i];
		/* One slice per offset: keep the graph a sane size. */
		if (kv[i] < 1 || kv[i] > 1024)
			return fail(c, "unsupported kernel_shape (1..1024 per axis)");
	}
	if (window(c, n, &w))
		return -EINVAL;
	for (int i = 0; i < w.nsp; i++) {
		lo[2 + i] = w.lo[i], hi[2 + i] = w.hi[i] + w.ceil_hi[i];
		padded |= lo[2 + i] || hi[2 + i];
		ceil |= w.ceil_hi[i] > 0;
	}
	if (padded)
		x = chk(c, vtpu_g_pad(c->g, x, lo, hi, is_max ? -INFINITY : 0.0));
	for (int i = 0; i < w.nsp && x >= 0; i++) {
		int acc = -1, ax = 2 + i;

		sx = shape_of(c, x);
		for (int64_t k = 0; k < w.k[i]; k++) {
			int64_t st[R] = { 0 }, lim[R], step[R];
			int sl;

			for (int j = 0; j < sx.rank; j++)
				lim[j] = sx.dims[j], step[j] = 1;
			st[ax] = k * w.d[i];
			lim[ax] = st[ax] + (w.o[i] - 1) * w.s[i] + 1;
			step[ax] = w.s[i];
			sl = chk(c, vtpu_g_slice(c->g, x, st, lim, step));
			if (sl < 0)
				return sl;
			acc = acc < 0 ? sl : chk(c, vtpu_g_binary(c->g,
					is_max ? VTPU_MAX : VTPU_ADD, acc, sl));
			if (acc < 0)
				return acc;
		}
		x = acc;
	}
	if (x >= 0 && !is_max) {
		int cnt, dims[3] = { 2, 3, 4 };
		int64_t kk = 1;

		for (int i = 0; i < w.nsp; i++)
			kk *= w.k[i];
		sx = shape_of(c, x);
		bool with_pads = attr_i(n, "count_include_pad", 0);

		if (with_pads && !ceil) {
			cnt = splat(c, (double)kk, x);
		} else {
			cnt = pool_counts(c, &w, with_pads);
			cnt = cnt < 0 ? cnt : chk(c, vtpu_g_broadcast(c->g, cnt,
						sx.rank, sx.dims, dims));
		}
		x = cnt < 0 ? cnt : chk(c, vtpu_g_binary(c->g, VTPU_DIV, x, cnt));
	}
	return out(c, n, 0, x);
}

/* GlobalAveragePool/GlobalMaxPool: reduce over the spatial axes, kept. */
static int op_global_pool(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), axes[R], y;
	struct vtpu_shape s;

	if (x < 0)
		return x;
	s = shape_of(c, x);
	if (s.rank < 3)
		return fail(c, "input must have spatial dimensions");
	for (int i = 2; i < s.rank; i++)
		axes[i - 2] = i, s.dims[i] = 1;
	y = chk(c, vtpu_g_reduce(c->g, d->arg, x, s.rank - 2, axes));
	return out(c, n, 0, y < 0 ? y : reshape(c, y, s.rank, s.dims));
}

/* Inference batch norm: (x - mean) / sqrt(var + eps) * scale + B. */
static int op_batchnorm(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), p[4], dim1[1] = { 1 }, y, den;
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if (attr_i(n, "training_mode", 0) || (n->n_output > 1 && n->output[1][0]))
		return fail(c, "unsupported training mode");
	if (attr_i(n, "spatial", 1) != 1)
		return fail(c, "unsupported spatial=0");
	s = shape_of(c, x);
	if (s.rank < 2)
		return fail(c, "input must have a channel dimension");
	for (int i = 0; i < 4; i++) {
		p[i] = in(c, n, i + 1);
		if (p[i] >= 0 && shape_of(c, p[i]).rank != 1)
			return fail(c, "input %d must be 1-D", i + 1);
		p[i] = p[i] < 0 ? p[i] :
			chk(c, vtpu_g_broadcast(c->g, p[i], s.rank, s.dims, dim1));
		if (p[i] < 0)
			return p[i];
	}
	den = binary(c, VTPU_ADD, p[3], splat(c, attr_f(n, "epsilon", 1e-5f), x));
	den = den < 0 ? den : chk(c, vtpu_g_unary(c->g, VTPU_RSQRT, den));
	y = binary(c, VTPU_SUB, x, p[2]);
	y = y < 0 || den < 0 ? -EINVAL : binary(c, VTPU_MUL, y, den);
	y = y < 0 ? y : binary(c, VTPU_MUL, y, p[0]);
	y = y < 0 ? y : binary(c, VTPU_ADD, y, p[1]);
	return out(c, n, 0, y);
}

/* ---- reductions ------------------------------------------------------------ */

enum { PRE_NONE, PRE_SQUARE, PRE_ABS, PRE_EXP };
enum { POST_NONE, POST_SQRT, POST_LOG };

/*
 * Reduce*: d->arg is the reduce op, d->arg2 packs pre (low byte), post
 * (second byte) and the opset from which axes is an input (>> 16).
 */
/* ReduceProd's d->arg: the device reduces by sum, max and min only. */
#define REDUCE_PROD	(-1)

/*
 * A product over @axes as a tree of multiplies: each axis is halved,
 * first half times second half (the odd element carried along), until
 * it has length 1. log2(n) steps, no log or exp: zeros and signs stay
 * exact.
 */
static int reduce_prod(struct ctx *c, int x, int na, const int *axes)
{
	struct vtpu_shape s;
	int64_t t[R];
	int k = 0;

	for (int i = 0; i < na && x >= 0; i++) {
		int ax = axes[i];

		for (s = shape_of(c, x); s.dims[ax] > 1 && x >= 0;
		     s = shape_of(c, x)) {
			int64_t half = s.dims[ax] / 2, st[R] = { 0 }, lim[R], step[R];
			int a, b, p;

			for (int j = 0; j < s.rank; j++)
				lim[j] = s.dims[j], step[j] = 1;
			lim[ax] = half;
			a = chk(c, vtpu_g_slice(c->g, x, st, lim, step));
			st[ax] = half, lim[ax] = 2 * half;
			b = chk(c, vtpu_g_slice(c->g, x, st, lim, step));
			p = a < 0 || b < 0 ? -EINVAL :
			    chk(c, vtpu_g_binary(c->g, VTPU_MUL, a, b));
			if (p >= 0 && s.dims[ax] % 2) {
				int parts[2] = { p, -1 };

				st[ax] = 2 * half, lim[ax] = s.dims[ax];
				parts[1] = chk(c, vtpu_g_slice(c->g, x, st, lim, step));
				p = parts[1] < 0 ? parts[1] :
				    chk(c, vtpu_g_concat(c->g, 2, parts, ax));
			}
			x = p;
		}
	}
	if (x < 0)
		return x;
	/* The reduced axes, now of length 1, go away as vtpu_g_reduce's do. */
	s = shape_of(c, x);
	for (int i = 0; i < s.rank; i++) {
		bool reduced = false;

		for (int j = 0; j < na; j++)
			reduced |= axes[j] == i;
		if (!reduced)
			t[k++] = s.dims[i];
	}
	return reshape(c, x, k, t);
}

static int op_reduce(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), pre = d->arg2 & 0xff, post = (d->arg2 >> 8) & 0xff;
	int64_t av[R], kd[R];
	int na = 0, axes[R], y, nk = 0;
	bool red[R] = { false };
	struct vtpu_shape s;

	if (x < 0)
		return x;
	s = shape_of(c, x);
	if (c->opset >= (d->arg2 >> 16)) {
		if (has_in(n, 1) && (na = in_ints(c, n, 1, av, R, "axes")) < 0)
			return na;
	} else if ((na = attr_ints(c, n, "axes", av, R)) < -1) {
		return -EINVAL;
	}
	na = na < 0 ? 0 : na;
	if (!na && attr_i(n, "noop_with_empty_axes", 0))
		return op_identity(c, n, d);
	for (int i = 0; i < na; i++) {
		int a = axis_norm(c, av[i], s.rank);

		if (a < 0)
			return a;
		red[a] = true;
	}
	na = 0;
	for (int i = 0; i < s.rank; i++)
		if (red[i])
			axes[na++] = i;
	if (!na)	/* empty axes: all of them */
		for (int i = 0; i < s.rank; i++)
			axes[na++] = i, red[i] = true;
	if (pre == PRE_SQUARE)
		x = chk(c, vtpu_g_binary(c->g, VTPU_MUL, x, x));
	else if (pre == PRE_ABS)
		x = chk(c, vtpu_g_unary(c->g, VTPU_ABS, x));
	else if (pre == PRE_EXP)
		x = chk(c, vtpu_g_unary(c->g, VTPU_EXP, x));
	if (d->arg == REDUCE_PROD)
		y = x < 0 ? x : reduce_prod(c, x, na, axes);
	else
		y = x < 0 ? x : chk(c, vtpu_g_reduce(c->g, d->arg, x, na, axes));
	if (y >= 0 && post == POST_SQRT)
		y = chk(c, vtpu_g_unary(c->g, VTPU_SQRT, y));
	else if (y >= 0 && post == POST_LOG)
		y = chk(c, vtpu_g_unary(c->g, VTPU_LOG, y));
	if (y >= 0 && attr_i(n, "keepdims", 1)) {
		for (int i = 0; i < s.rank; i++)
			kd[nk++] = red[i] ? 1 : s.dims[i];
		y = reshape(c, y, nk, kd);
	}
	return out(c, n, 0, y);
}

/* ---- shape manipulation ---------------------------------------------------- */

static int op_reshape(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), m, neg = -1;
	int64_t t[R], known = 1;
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	if (c->opset < 5) {
		if ((m = attr_ints(c, n, "shape", t, R)) < 0)
			return m < -1 ? -EINVAL : fail(c, "missing shape");
	} else if ((m = in_ints(c, n, 1, t, R, "shape")) < 0) {
		return m;
	}
	for (int i = 0; i < m; i++) {
		if (t[i] == 0 && !attr_i(n, "allowzero", 0)) {
			if (i >= s.rank)
				return fail(c, "shape[%d] = 0 beyond the input rank", i);
			t[i] = s.dims[i];
		}
		if (t[i] == -1) {
			if (neg >= 0)
				return fail(c, "two -1 dimensions in shape");
			neg = i;
		} else if (t[i] < 1) {
			return fail(c, "unsupported dimension %lld in shape",
				    (long long)t[i]);
		} else if (t[i] > prod(s.dims, 0, s.rank) / known) {
			/* checked before multiplying: no overflow */
			return fail(c, "shape does not fit %lld elements",
				    (long long)prod(s.dims, 0, s.rank));
		} else {
			known *= t[i];
		}
	}
	if (neg >= 0)
		t[neg] = prod(s.dims, 0, s.rank) / known;
	return out(c, n, 0, reshape(c, x, m, t));
}

static int op_flatten(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax;
	struct vtpu_shape s;
	int64_t t[2];

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	ax = (int)attr_i(n, "axis", 1);
	if (ax < -s.rank || ax > s.rank)
		return fail(c, "axis %d out of range", ax);
	ax = ax < 0 ? ax + s.rank : ax;
	t[0] = prod(s.dims, 0, ax);
	t[1] = prod(s.dims, ax, s.rank);
	return out(c, n, 0, reshape(c, x, 2, t));
}

static int op_transpose(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), perm[R], m;
	int64_t pv[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	m = attr_ints(c, n, "perm", pv, R);
	if (m < -1)
		return -EINVAL;
	if (m >= 0 && m != s.rank)
		return fail(c, "perm has %d values for rank %d", m, s.rank);
	for (int i = 0; i < s.rank; i++)
		perm[i] = m < 0 ? s.rank - 1 - i : (int)pv[i];
	return out(c, n, 0, chk(c, vtpu_g_transpose(c->g, x, perm)));
}

static int op_concat(struct ctx *c, node_t *n, const struct opdef *d)
{
	int v[64], ax, nv = 0;

	(void)d;
	if (n->n_input > 64)
		return fail(c, "too many inputs (%zu)", n->n_input);
	for (size_t i = 0; i < n->n_input; i++)
		if ((v[nv++] = in(c, n, i)) < 0)
			return -EINVAL;
	if (!nv)
		return fail(c, "no inputs");
	ax = axis_norm(c, attr_i(n, "axis", 0), shape_of(c, v[0]).rank);
	if (ax < 0)
		return ax;
	if (nv == 1)
		return out(c, n, 0, v[0]);
	return out(c, n, 0, chk(c, vtpu_g_concat(c->g, nv, v, ax)));
}

/* Slice: numpy clamping; negative steps become a take() of the indices. */
static int op_slice(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ns, ne, na = -1, nst = -1;
	int64_t st[R], en[R], ax[R], sp[R], lo[R], lim[R], step[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	if (c->opset < 10) {
		ns = attr_ints(c, n, "starts", st, R);
		ne = attr_ints(c, n, "ends", en, R);
		na = attr_ints(c, n, "axes", ax, R);
	} else {
		ns = in_ints(c, n, 1, st, R, "starts");
		ne = ns < 0 ? ns : in_ints(c, n, 2, en, R, "ends");
		if (ne >= 0 && has_in(n, 3))
			na = in_ints(c, n, 3, ax, R, "axes");
		if (ne >= 0 && has_in(n, 4))
			nst = in_ints(c, n, 4, sp, R, "steps");
	}
	if (c->failed)
		return -EINVAL;
	if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
		return fail(c, "starts, ends, axes and steps must have equal lengths");
	for (int i = 0; i < s.rank; i++)
		lo[i] = 0, lim[i] = s.dims[i], step[i] = 1;
	for (int i = 0; i < ns; i++) {
		int a = axis_norm(c, na >= 0 ? ax[i] : i, s.rank);
		int64_t dim, b, e, k = nst >= 0 ? sp[i] : 1;

		if (a < 0)
			return a;
		if (k == 0)
			return fail(c, "step 0");
		dim = s.dims[a];
		b = st[i] < 0 ? st[i] + dim : st[i];
		e = en[i] < 0 && en[i] > INT64_MIN ? en[i] + dim : en[i];
		if (k > 0) {
			b = b < 0 ? 0 : b > dim ? dim : b;
			e = e < 0 ? 0 : e > dim ? dim : e;
			if (e <= b)
				return fail(c, "empty slice on axis %d", a);
			lo[a] = b, lim[a] = e, step[a] = k;
		} else {
			int64_t idx[MAX_TAKE];
			int cnt = 0;

			b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
			e = en[i] < -dim ? -1 : e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			for (int64_t j = b; j > e && cnt < MAX_TAKE; j += k)
				idx[cnt++] = j;
			if (!cnt)
				return fail(c, "empty slice on axis %d", a);
			/* The take leaves the axis whole for the final slice. */
			x = take(c, x, a, idx, cnt);
			if (x < 0)
				return x;
			lim[a] = cnt;
		}
	}
	return out(c, n, 0, chk(c, vtpu_g_slice(c->g, x, lo, lim, step)));
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, else input 1. */
static int sq_axes(struct ctx *c, node_t *n, int64_t *ax)
{
	if (c->opset >= 13)
		return has_in(n, 1) ? in_ints(c, n, 1, ax, R, "axes") : -1;
	return attr_ints(c, n, "axes", ax, R);
}

static int op_squeeze(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), m, nr = 0;
	int64_t ax[R], t[R];
	bool drop[R] = { false };
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	m = sq_axes(c, n, ax);
	if (c->failed)
		return -EINVAL;
	for (int i = 0; i < m; i++) {
		int a = axis_norm(c, ax[i], s.rank);

		if (a < 0)
			return a;
		if (s.dims[a] != 1)
			return fail(c, "cannot squeeze axis %d of size %lld", a,
				    (long long)s.dims[a]);
		drop[a] = true;
	}
	for (int i = 0; i < s.rank; i++)
		if (!(m < 0 ? s.dims[i] == 1 : drop[i]))
			t[nr++] = s.dims[i];
	return out(c, n, 0, reshape(c, x, nr, t));
}

static int op_unsqueeze(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), m, rank, k = 0;
	int64_t ax[R], t[R];
	bool add[R] = { false };
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	m = sq_axes(c, n, ax);
	if (c->failed)
		return -EINVAL;
	if (m < 0)
		return fail(c, "missing axes");
	rank = s.rank + m;
	if (rank > R)
		return fail(c, "rank %d exceeds %d", rank, R);
	for (int i = 0; i < m; i++) {
		int a = axis_norm(c, ax[i], rank);

		if (a < 0)
			return a;
		add[a] = true;
	}
	for (int i = 0; i < rank; i++)
		t[i] = add[i] ? 1 : s.dims[k++];
	return out(c, n, 0, reshape(c, x, rank, t));
}

static int op_expand(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), m, rank;
	int64_t t[R], dims[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if ((m = in_ints(c, n, 1, t, R, "shape")) < 0)
		return m;
	s = shape_of(c, x);
	/* The result is the numpy broadcast of both shapes. */
	rank = m > s.rank ? m : s.rank;
	for (int i = 0; i < rank; i++) {
		int ia = i - (rank - s.rank), ib = i - (rank - m);
		int64_t da = ia >= 0 ? s.dims[ia] : 1, db = ib >= 0 ? t[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return fail(c, "cannot expand %lld to %lld", (long long)da,
				    (long long)db);
		dims[i] = da == 1 ? db : da;
	}
	return out(c, n, 0, bcast_to(c, x, rank, dims));
}

/*
 * Reflect, edge and wrap padding along @axis: every result element is
 * some input element, so it is a take() of the index sequence.
 */
static int pad_gather(struct ctx *c, node_t *n, int x, int axis, int64_t lo,
		      int64_t hi)
{
	int64_t len = shape_of(c, x).dims[axis], idx[MAX_TAKE];
	bool reflect = attr_s_is(n, "mode", "constant", "reflect");
	bool edge = attr_s_is(n, "mode", "constant", "edge");

	if (lo + len + hi > MAX_TAKE)
		return fail(c, "unsupported padded size %lld (at most %d)",
			    (long long)(lo + len + hi), MAX_TAKE);
	if (reflect && (lo >= len || hi >= len))
		return fail(c, "reflect pads must be smaller than the dimension");
	for (int64_t i = 0; i < lo + len + hi; i++) {
		int64_t j = i - lo;

		if (edge)
			j = j < 0 ? 0 : j >= len ? len - 1 : j;
		else if (reflect)
			j = j < 0 ? -j : j >= len ? 2 * (len - 1) - j : j;
		else
			j = ((j % len) + len) % len;
		idx[i] = j;
	}
	return take(c, x, axis, idx, (int)(lo + len + hi));
}

static int op_pad(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), m, na = -1;
	int64_t p[2 * R], ax[R], lo[R] = { 0 }, hi[R] = { 0 };
	double val = 0;
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if (!attr_s_is(n, "mode", "constant", "constant") &&
	    !attr_s_is(n, "mode", "constant", "reflect") &&
	    !attr_s_is(n, "mode", "constant", "edge") &&
	    !attr_s_is(n, "mode", "constant", "wrap"))
		return fail(c, "unsupported mode");
	s = shape_of(c, x);
	if (c->opset < 11) {
		m = attr_ints(c, n, c->opset < 2 ? "paddings" : "pads", p, 2 * R);
		val = attr_f(n, "value", 0);
	} else {
		m = in_ints(c, n, 1, p, 2 * R, "pads");
		if (m >= 0 && has_in(n, 2)) {
			const struct cval *cv = cin(c, n, 2, "constant_value");

			if (!cv || cv_float(c, cv, &val, "constant_value"))
				return -EINVAL;
		}
		if (m >= 0 && has_in(n, 3))
			na = in_ints(c, n, 3, ax, R, "axes");
	}
	if (c->failed)
		return -EINVAL;
	if (na < 0) {
		na = s.rank;
		for (int i = 0; i < na; i++)
			ax[i] = i;
	}
	if (m != 2 * na)
		return fail(c, "pads has %d values for %d axes", m, na);
	for (int i = 0; i < na; i++) {
		int a = axis_norm(c, ax[i], s.rank);

		if (a < 0)
			return a;
		if (p[i] < 0 || p[i + na] < 0)
			return fail(c, "unsupported negative pads");
		lo[a] = p[i], hi[a] = p[i + na];
	}
	if (attr_s_is(n, "mode", "constant", "constant"))
		return out(c, n, 0, chk(c, vtpu_g_pad(c->g, x, lo, hi, val)));
	for (int a = 0; a < s.rank && x >= 0; a++)
		if (lo[a] || hi[a])
			x = pad_gather(c, n, x, a, lo[a], hi[a]);
	return out(c, n, 0, x);
}

/*
 * Gather with indices known only at run time, as a masked sum: the
 * device has no gather, so row k of the result is the sum over v of
 * (idx[k] == v ? x[v] : 0), an exact selection (a product with a
 * one-hot matrix would spread one inf or NaN to every row). It moves
 * K * V * P elements, so it is limited to tables that make sense here.
 * Negative indices count from the end; out-of-range ones give zeros.
 */
static int gather_dynamic(struct ctx *c, int x, int ax, int idx)
{
	struct vtpu_shape s = shape_of(c, x), is;
	int64_t v, pre, post, k, t[R], kvp[3];
	int y, io, mask, zero;
	static const int d0[1] = { 0 }, d01[2] = { 0, 1 };
	static const int d12[2] = { 1, 2 }, swap[3] = { 1, 0, 2 };
	int red[1] = { 1 }, rank = 0;

	if (idx < 0)
		return idx;
	is = shape_of(c, idx);
	if (is.type != VTPU_S32)
		return fail(c, "indices must be integers");
	/* The masked sum reduces, and the device reduces floats only. */
	if (s.type != VTPU_F32 && s.type != VTPU_BF16)
		return fail(c, "unsupported run-time gather of %s data",
			    s.type == VTPU_S32 ? "integer" : "non-float");
	v = s.dims[ax];
	pre = prod(s.dims, 0, ax);
	post = prod(s.dims, ax + 1, s.rank);
	k = prod(is.dims, 0, is.rank);
	if (s.rank - 1 + is.rank > R)
		return fail(c, "result rank exceeds %d", R);
	if (k * v * pre * post > (1 << 24))
		return fail(c, "unsupported run-time gather of %lld x %lld rows (at most 2^24 elements selected from)",
			    (long long)k, (long long)v);
	/* x as [V, P]: the gathered axis first. */
	kvp[0] = pre, kvp[1] = v, kvp[2] = post;
	x = reshape(c, x, 3, kvp);
	if (x >= 0 && pre > 1)
		x = chk(c, vtpu_g_transpose(c->g, x, swap));
	kvp[0] = v, kvp[1] = pre * post;
	x = x < 0 ? x : reshape(c, x, 2, kvp);
	/* The indices as [K], negative ones from the end. */
	idx = reshape(c, idx, 1, &k);
	idx = wrap_indices(c, idx, v);
	/* mask[k, v] = idx[k] == v, then the masked sum over v. */
	kvp[0] = k, kvp[1] = v, kvp[2] = pre * post;
	io = iota_along(c, v, 2, kvp, 1);
	if (x < 0 || idx < 0 || io < 0)
		return -EINVAL;
	idx = chk(c, vtpu_g_broadcast(c->g, idx, 2, kvp, d0));
	mask = idx < 0 || io < 0 ? -EINVAL :
	       chk(c, vtpu_g_compare(c->g, VTPU_EQ, idx, io));
	mask = mask < 0 ? mask : chk(c, vtpu_g_broadcast(c->g, mask, 3, kvp, d01));
	x = chk(c, vtpu_g_broadcast(c->g, x, 3, kvp, d12));
	zero = x < 0 ? x : splat(c, 0, x);
	if (mask < 0 || zero < 0)
		return -EINVAL;
	y = chk(c, vtpu_g_select(c->g, mask, x, zero));
	y = y < 0 ? y : chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP, y, 1, red));
	/* [K, P] back to dims[:ax] + index dims + dims[ax + 1:]. */
	kvp[0] = k, kvp[1] = pre, kvp[2] = post;
	y = y < 0 ? y : reshape(c, y, 3, kvp);
	if (y >= 0 && pre > 1)
		y = chk(c, vtpu_g_transpose(c->g, y, swap));
	for (int i = 0; i < ax; i++)
		t[rank++] = s.dims[i];
	for (int i = 0; i < is.rank; i++)
		t[rank++] = is.dims[i];
	for (int i = ax + 1; i < s.rank; i++)
		t[rank++] = s.dims[i];
	return y < 0 ? y : reshape(c, y, rank, t);
}

/*
 * GatherElements as a masked sum, like gather_dynamic(): a new axis of
 * the data's @axis size V right after @axis, where the mask is
 * (index == v), summed away. Exact, and no gather on the device.
 */
static int op_gather_elements(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), idx = in(c, n, 1), ax, xmap[R], imap[R], red[1];
	int64_t e[R], v, total = 1;
	struct vtpu_shape sx, si;
	int mask, y;

	(void)d;
	if (x < 0 || idx < 0)
		return -EINVAL;
	sx = shape_of(c, x);
	si = shape_of(c, idx);
	if (si.type != VTPU_S32 || si.rank != sx.rank || !sx.rank)
		return fail(c, "wants integer indices of the data's rank");
	if (sx.rank + 1 > R)
		return fail(c, "unsupported rank %d (at most %d)", sx.rank, R - 1);
	ax = axis_norm(c, attr_i(n, "axis", 0), sx.rank);
	if (ax < 0)
		return ax;
	v = sx.dims[ax];
	for (int i = 0; i < sx.rank; i++)
		if (i != ax && si.dims[i] > sx.dims[i])
			return fail(c, "indices larger than the data on axis %d", i);
	/* Data beyond the indices' extent on the other axes is never read. */
	for (int i = 0; i < sx.rank; i++)
		if (i != ax && si.dims[i] != sx.dims[i]) {
			int64_t st[R] = { 0 }, lim[R], step[R];

			for (int j = 0; j < sx.rank; j++) {
				lim[j] = j == ax ? sx.dims[j] : si.dims[j];
				step[j] = 1;
			}
			x = chk(c, vtpu_g_slice(c->g, x, st, lim, step));
			break;
		}
	for (int i = 0, k = 0; i <= sx.rank; i++) {
		e[i] = i == ax + 1 ? v : si.dims[k++];
		total *= e[i];
	}
	if (total > (1 << 24))
		return fail(c, "unsupported: %lld elements to select from (at most 2^24)",
			    (long long)total);
	for (int i = 0; i < sx.rank; i++) {
		imap[i] = i <= ax ? i : i + 1;
		xmap[i] = i < ax ? i : i + 1;
	}
	idx = wrap_indices(c, idx, v);
	idx = idx < 0 ? idx : chk(c, vtpu_g_broadcast(c->g, idx, sx.rank + 1, e,
						      imap));
	mask = iota_along(c, v, sx.rank + 1, e, ax + 1);
	mask = idx < 0 || mask < 0 ? -EINVAL :
	       chk(c, vtpu_g_compare(c->g, VTPU_EQ, idx, mask));
	x = x < 0 ? x : chk(c, vtpu_g_broadcast(c->g, x, sx.rank + 1, e, xmap));
	if (mask < 0 || x < 0)
		return -EINVAL;
	y = chk(c, vtpu_g_select(c->g, mask, x, splat(c, 0, x)));
	red[0] = ax + 1;
	return out(c, n, 0, y < 0 ? y : chk(c, vtpu_g_reduce(c->g,
				VTPU_REDUCE_SUM_OP, y, 1, red)));
}

/*
 * The row-major position in data's first @k dims of each index tuple of
 * @idx [..., k] (GatherND, ScatterND), negative components wrapped:
 * an s32 value of idx's dims less the last.
 */
static int nd_linear(struct ctx *c, int idx, const struct vtpu_shape *sx,
		     int k)
{
	struct vtpu_shape si = shape_of(c, idx);
	int lin = -1;
	int64_t stride = 1;

	for (int j = k - 1; j >= 0; j--) {
		int64_t st[R] = { 0 }, lim[R], step[R];
		int comp;

		for (int i = 0; i < si.rank; i++)
			lim[i] = si.dims[i], step[i] = 1;
		st[si.rank - 1] = j, lim[si.rank - 1] = j + 1;
		comp = chk(c, vtpu_g_slice(c->g, idx, st, lim, step));
		comp = comp < 0 ? comp : reshape(c, comp, si.rank - 1, si.dims);
		comp = wrap_indices(c, comp, sx->dims[j]);
		if (comp >= 0 && stride > 1)
			comp = binary(c, VTPU_MUL, comp, splat(c, (double)stride, comp));
		lin = comp < 0 ? comp : lin < 0 ? comp : binary(c, VTPU_ADD, lin, comp);
		if (lin < 0)
			return lin;
		stride *= sx->dims[j];
	}
	return lin;
}

/* GatherND (batch_dims 0): a run-time Gather of data's first k dims. */
static int op_gathernd(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), idx = in(c, n, 1), k, lin;
	struct vtpu_shape sx, si;
	int64_t t[R];

	(void)d;
	if (x < 0 || idx < 0)
		return -EINVAL;
	if (attr_i(n, "batch_dims", 0))
		return fail(c, "unsupported batch_dims");
	sx = shape_of(c, x);
	si = shape_of(c, idx);
	k = si.rank ? (int)si.dims[si.rank - 1] : 0;
	if (si.rank < 1 || k < 1 || k > sx.rank || si.type != VTPU_S32)
		return fail(c, "indices must be integers [..., k], k <= rank");
	lin = nd_linear(c, idx, &sx, k);
	/* data as [prod(dims[:k]), dims[k:]...] */
	t[0] = prod(sx.dims, 0, k);
	for (int i = k; i < sx.rank; i++)
		t[1 + i - k] = sx.dims[i];
	x = reshape(c, x, 1 + sx.rank - k, t);
	return out(c, n, 0, lin < 0 || x < 0 ? -EINVAL :
		   gather_dynamic(c, x, 0, lin));
}

/*
 * ScatterND (reduction none or add): updates rows written at the index
 * tuples of data viewed as [V = prod(dims[:k]), P], as a masked sum
 * over the M tuples; duplicates add.
 */
static int op_scatternd(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), idx = in(c, n, 1), upd = in(c, n, 2), k, lin;
	bool add = attr_s_is(n, "reduction", "none", "add");
	int mask, sum, hit, y, red[1] = { 0 };
	static const int d0[1] = { 0 }, d01[2] = { 0, 1 }, d02[2] = { 0, 2 };
	struct vtpu_shape sx, si;
	int64_t v, p, m, mvp[3];

	(void)d;
	if (x < 0 || idx < 0 || upd < 0)
		return -EINVAL;
	if (!add && !attr_s_is(n, "reduction", "none", "none"))
		return fail(c, "unsupported reduction");
	sx = shape_of(c, x);
	si = shape_of(c, idx);
	k = si.rank ? (int)si.dims[si.rank - 1] : 0;
	if (si.rank < 1 || k < 1 || k > sx.rank || si.type != VTPU_S32)
		return fail(c, "indices must be integers [..., k], k <= rank");
	if (sx.type != VTPU_F32 && sx.type != VTPU_BF16)
		return fail(c, "unsupported scatter of non-float data");
	v = prod(sx.dims, 0, k);
	p = prod(sx.dims, k, sx.rank);
	m = prod(si.dims, 0, si.rank - 1);
	if (m * v * p > (1 << 24))
		return fail(c, "unsupported scatter of that size");
	if (prod(shape_of(c, upd).dims, 0, shape_of(c, upd).rank) != m * p)
		return fail(c, "updates do not match the indices and data");
	lin = nd_linear(c, idx, &sx, k);
	lin = lin < 0 ? lin : reshape(c, lin, 1, &m);
	mvp[0] = m, mvp[1] = v, mvp[2] = p;
	lin = lin < 0 ? lin : chk(c, vtpu_g_broadcast(c->g, lin, 2, mvp, d0));
	mask = iota_along(c, v, 2, mvp, 1);
	mask = lin < 0 || mask < 0 ? -EINVAL :
	       chk(c, vtpu_g_compare(c->g, VTPU_EQ, lin, mask));
	upd = reshape(c, upd, 2, (int64_t[2]){ m, p });
	upd = upd < 0 ? upd : chk(c, vtpu_g_broadcast(c->g, upd, 3, mvp, d02));
	if (mask < 0 || upd < 0)
		return -EINVAL;
	sum = chk(c, vtpu_g_broadcast(c->g, mask, 3, mvp, d01));
	sum = sum < 0 ? sum : chk(c, vtpu_g_select(c->g, sum, upd, splat(c, 0, upd)));
	sum = sum < 0 ? sum : chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP, sum,
						   1, red));	/* [V, P] */
	hit = chk(c, vtpu_g_convert(c->g, mask, VTPU_F32));
	hit = hit < 0 ? hit : chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MAX_OP, hit,
						   1, red));	/* [V] */
	hit = hit < 0 ? hit : chk(c, vtpu_g_broadcast(c->g, hit, 2, mvp + 1, d0));
	hit = hit < 0 ? hit : chk(c, vtpu_g_compare(c->g, VTPU_GT, hit,
						    splat(c, 0, hit)));
	x = reshape(c, x, 2, mvp + 1);
	if (sum < 0 || hit < 0 || x < 0)
		return -EINVAL;
	if (add)
		sum = binary(c, VTPU_ADD, x, sum);
	y = sum < 0 ? sum : chk(c, vtpu_g_select(c->g, hit, sum, x));
	return out(c, n, 0, y < 0 ? y : reshape(c, y, sx.rank, sx.dims));
}

/* Gather with constant indices: take() along axis, then the index shape. */
static int op_gather(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax, rank = 0, ni;
	const struct cval *iv;
	int64_t idx[MAX_TAKE], t[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	ax = axis_norm(c, attr_i(n, "axis", 0), s.rank);
	if (ax < 0)
		return ax;
	if (has_in(n, 1) && lookup(c, n->input[1]) && !lookup(c, n->input[1])->c)
		return out(c, n, 0, gather_dynamic(c, x, ax, in(c, n, 1)));
	iv = cin(c, n, 1, "indices");
	if (!iv || (ni = cv_ints(c, iv, idx, MAX_TAKE, "indices")) < 0)
		return -EINVAL;
	if (!ni)
		return fail(c, "unsupported empty indices");
	for (int i = 0; i < ni; i++) {
		if (idx[i] < -s.dims[ax] || idx[i] >= s.dims[ax])
			return fail(c, "index %lld out of range", (long long)idx[i]);
		idx[i] += idx[i] < 0 ? s.dims[ax] : 0;
	}
	if (s.rank - 1 + iv->rank > R)
		return fail(c, "result rank exceeds %d", R);
	for (int i = 0; i < ax; i++)
		t[rank++] = s.dims[i];
	for (int i = 0; i < iv->rank; i++)
		t[rank++] = iv->dims[i];
	for (int i = ax + 1; i < s.rank; i++)
		t[rank++] = s.dims[i];
	x = take(c, x, ax, idx, ni);
	return out(c, n, 0, x < 0 ? x : reshape(c, x, rank, t));
}

/*
 * Tile with constant repeats, one axis at a time: [.., X, ..] viewed as
 * [.., 1, X, ..], broadcast to [.., r, X, ..] and merged to [.., r * X, ..];
 * at the maximum rank, a concatenation of r copies.
 */
static int op_tile(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), m;
	int64_t rep[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	if ((m = in_ints(c, n, 1, rep, R, "repeats")) < 0)
		return m;
	if (m != s.rank)
		return fail(c, "repeats has %d values for rank %d", m, s.rank);
	for (int a = 0; a < s.rank && x >= 0; a++) {
		int64_t t[R], bd[R];
		int map[R];

		if (rep[a] < 1 || rep[a] > 1024)
			return fail(c, "unsupported repeats %lld (1..1024)",
				    (long long)rep[a]);
		if (rep[a] == 1)
			continue;
		s = shape_of(c, x);
		if (s.rank == R) {
			int parts[1024];

			for (int64_t i = 0; i < rep[a]; i++)
				parts[i] = x;
			x = chk(c, vtpu_g_concat(c->g, (int)rep[a], parts, a));
			continue;
		}
		for (int i = 0, j = 0; i <= s.rank; i++) {
			bd[i] = i == a ? rep[a] : s.dims[j];
			if (i != a)
				map[j++] = i;
		}
		x = chk(c, vtpu_g_broadcast(c->g, x, s.rank + 1, bd, map));
		for (int i = 0; i < s.rank; i++)
			t[i] = i == a ? rep[a] * s.dims[a] : s.dims[i];
		x = x < 0 ? x : reshape(c, x, s.rank, t);
	}
	return out(c, n, 0, x);
}

/*
 * ArgMax (arg 1) / ArgMin (arg 0): the first (or last) index along the
 * axis where x equals its max (min): select the index where equal, else
 * past the end (or -1), and reduce with min (or max). The device reduces
 * f32 only: indices are exact in f32 up to 2^24, then s32.
 */
/* @v, reduced over @ax of @sh, broadcast back to @sh's dims. */
static int unreduce(struct ctx *c, int v, const struct vtpu_shape *sh, int ax)
{
	int dims[R];

	if (v < 0 || sh->rank == 1)
		return v < 0 ? v : bcast_to(c, v, 1, sh->dims);
	for (int i = 0, k = 0; i < sh->rank; i++)
		if (i != ax)
			dims[k++] = i;
	return chk(c, vtpu_g_broadcast(c->g, v, sh->rank, sh->dims, dims));
}

/* An f32 iota along @ax of @sh's dims: indices compare exactly to 2^24. */
static int iota_f32(struct ctx *c, const struct vtpu_shape *sh, int ax)
{
	int io;

	if (sh->dims[ax] > (1 << 24))
		return fail(c, "axis longer than 2^24");
	io = iota_along(c, sh->dims[ax], sh->rank, sh->dims, ax);
	return io < 0 ? io : chk(c, vtpu_g_convert(c->g, io, VTPU_F32));
}

/*
 * ArgMax/ArgMin, Hardmax and TopK: along @ax of f32 @x, the extreme
 * (max when @largest) into @value and the first (@last: the last) index
 * holding it, as f32, both with the axis reduced away. The device has
 * no arg-reduction: select the index where x equals the extreme, else
 * past the end (or -1), and reduce that with min (or max). @io is
 * iota_f32() of @x's shape.
 */
static int arg_extreme(struct ctx *c, int x, int ax, int io, bool largest,
		       bool last, int *value)
{
	struct vtpu_shape s = shape_of(c, x);
	int red[1] = { ax }, m, eq, idx;

	m = chk(c, vtpu_g_reduce(c->g, largest ? VTPU_REDUCE_MAX_OP :
				 VTPU_REDUCE_MIN_OP, x, 1, red));
	eq = unreduce(c, m, &s, ax);
	eq = eq < 0 ? eq : chk(c, vtpu_g_compare(c->g, VTPU_EQ, x, eq));
	if (eq < 0 || io < 0)
		return -EINVAL;
	idx = chk(c, vtpu_g_select(c->g, eq, io,
				   splat(c, last ? -1 : (double)s.dims[ax], io)));
	*value = m;
	return idx < 0 ? idx : chk(c, vtpu_g_reduce(c->g, last ?
				VTPU_REDUCE_MAX_OP : VTPU_REDUCE_MIN_OP, idx, 1, red));
}

/* ArgMax (arg 1) / ArgMin (arg 0), in f32 (exact to 2^24), then s32. */
static int op_argmax(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax, m, y;
	struct vtpu_shape s;

	if (x < 0)
		return x;
	s = shape_of(c, x);
	if (!s.rank)
		return fail(c, "input must have an axis");
	if (s.type == VTPU_S32)
		x = chk(c, vtpu_g_convert(c->g, x, VTPU_F32));
	ax = axis_norm(c, attr_i(n, "axis", 0), s.rank);
	if (x < 0 || ax < 0)
		return -EINVAL;
	s = shape_of(c, x);
	y = arg_extreme(c, x, ax, iota_f32(c, &s, ax), d->arg,
			attr_i(n, "select_last_index", 0) != 0, &m);
	y = y < 0 ? y : chk(c, vtpu_g_convert(c->g, y, VTPU_S32));
	if (y >= 0 && attr_i(n, "keepdims", 1)) {
		s.dims[ax] = 1;
		y = reshape(c, y, s.rank, s.dims);
	}
	return out(c, n, 0, y);
}

/* Trilu: x where the diagonal offset keeps it, else 0 (a host mask). */
static int op_trilu(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), mask, y, dims2[2];
	bool upper = attr_i(n, "upper", 1) != 0;
	int64_t k = 0, rows, cols;
	struct vtpu_shape s, ms;
	uint8_t *keep;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	if (s.rank < 2)
		return fail(c, "input must have rank 2 or more");
	if (has_in(n, 1) && in_ints(c, n, 1, &k, 1, "k") != 1)
		return c->failed ? -EINVAL : fail(c, "k must be a scalar");
	rows = s.dims[s.rank - 2], cols = s.dims[s.rank - 1];
	keep = malloc(rows * cols);
	if (!keep)
		return fail(c, "out of memory");
	for (int64_t i = 0; i < rows; i++)
		for (int64_t j = 0; j < cols; j++)
			keep[i * cols + j] = upper ? j - i >= k : j - i <= k;
	ms = (struct vtpu_shape){ VTPU_PRED, 2, { rows, cols } };
	mask = chk(c, vtpu_g_constant(c->g, &ms, keep));
	free(keep);
	dims2[0] = s.rank - 2, dims2[1] = s.rank - 1;
	mask = mask < 0 ? mask : chk(c, vtpu_g_broadcast(c->g, mask, s.rank,
							 s.dims, dims2));
	if (mask < 0)
		return mask;
	y = chk(c, vtpu_g_select(c->g, mask, x, splat(c, 0, x)));
	return out(c, n, 0, y);
}

/*
 * DepthToSpace (arg 1) and SpaceToDepth (arg 0): a rank-6 view and a
 * transpose, as the operators' definitions are written.
 */
static int op_depth_space(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0);
	int64_t b = attr_i(n, "blocksize", 0), t[6], o[4];
	bool crd = attr_s_is(n, "mode", "DCR", "CRD");
	static const int dcr[6] = { 0, 3, 4, 1, 5, 2 };
	static const int crdp[6] = { 0, 1, 4, 2, 5, 3 };
	static const int s2d[6] = { 0, 3, 5, 1, 2, 4 };
	struct vtpu_shape s;
	int64_t nn, ch, h, w;

	if (x < 0)
		return x;
	s = shape_of(c, x);
	if (s.rank != 4 || b < 1)
		return fail(c, "wants a rank-4 input and blocksize >= 1");
	nn = s.dims[0], ch = s.dims[1], h = s.dims[2], w = s.dims[3];
	if (!crd && !attr_s_is(n, "mode", "DCR", "DCR"))
		return fail(c, "unsupported mode");
	if (d->arg) {
		if (ch % (b * b))
			return fail(c, "channels not divisible by blocksize^2");
		if (crd) {
			int64_t v[6] = { nn, ch / (b * b), b, b, h, w };

			memcpy(t, v, sizeof(t));
		} else {
			int64_t v[6] = { nn, b, b, ch / (b * b), h, w };

			memcpy(t, v, sizeof(t));
		}
		o[0] = nn, o[1] = ch / (b * b), o[2] = h * b, o[3] = w * b;
	} else {
		int64_t v[6] = { nn, ch, h / b, b, w / b, b };

		if (h % b || w % b)
			return fail(c, "spatial dims not divisible by blocksize");
		memcpy(t, v, sizeof(t));
		o[0] = nn, o[1] = ch * b * b, o[2] = h / b, o[3] = w / b;
	}
	x = reshape(c, x, 6, t);
	x = x < 0 ? x : chk(c, vtpu_g_transpose(c->g, x, !d->arg ? s2d :
						crd ? crdp : dcr));
	return out(c, n, 0, x < 0 ? x : reshape(c, x, 4, o));
}

/* ---- sequences --------------------------------------------------------------- */

/*
 * Sequences whose length and positions are known at compile time, as the
 * tensors of models without loops are: a sequence is a list of values,
 * and each operator builds a new list.
 */
#define MAX_SEQ	1024

static const struct seq *seq_in(struct ctx *c, node_t *n, size_t i)
{
	struct val *v = has_in(n, i) ? lookup(c, n->input[i]) : NULL;

	if (!v || !v->s) {
		fail(c, "input %zu is not a sequence", i);
		return NULL;
	}
	return v->s;
}

static int seq_out(struct ctx *c, node_t *n, const int *ids, int cnt)
{
	struct seq *sq;

	if (cnt > MAX_SEQ)
		return fail(c, "unsupported sequence of %d tensors (at most %d)",
			    cnt, MAX_SEQ);
	sq = malloc(sizeof(*sq) + (cnt + 1) * sizeof(int));
	if (!sq)
		return fail(c, "out of memory");
	sq->n = cnt;
	if (cnt)
		memcpy(sq->ids, ids, cnt * sizeof(int));
	if (n->n_output < 1 || define(c, n->output[0], -1, NULL)) {
		free(sq);
		return n->n_output < 1 ? fail(c, "missing output 0") : -ENOMEM;
	}
	c->v[c->nv - 1].s = sq;
	return 0;
}

/* Position input @i (default @def) in [lo, hi], negatives from the end. */
static int seq_pos(struct ctx *c, node_t *n, size_t i, int64_t def,
		   int64_t len, int64_t hi)
{
	int64_t p = def;

	if (has_in(n, i) && in_ints(c, n, i, &p, 1, "position") != 1)
		return c->failed ? -EINVAL : fail(c, "position must be a scalar");
	if (p < 0)
		p += len;
	if (p < 0 || p > hi)
		return fail(c, "position %lld out of range", (long long)p);
	return (int)p;
}

static int op_seq_construct(struct ctx *c, node_t *n, const struct opdef *d)
{
	int ids[MAX_SEQ];

	(void)d;
	if (n->n_input > MAX_SEQ)
		return fail(c, "too many inputs");
	for (size_t i = 0; i < n->n_input; i++)
		if ((ids[i] = in(c, n, i)) < 0)
			return ids[i];
	return seq_out(c, n, ids, (int)n->n_input);
}

/* SequenceInsert (arg 1), SequenceErase (arg 0). */
static int op_seq_edit(struct ctx *c, node_t *n, const struct opdef *d)
{
	const struct seq *sq = seq_in(c, n, 0);
	int ids[MAX_SEQ + 1], p, t = -1, k = 0;

	if (!sq)
		return -EINVAL;
	if (d->arg && (t = in(c, n, 1)) < 0)
		return t;
	p = d->arg ? seq_pos(c, n, 2, sq->n, sq->n, sq->n) :
		     seq_pos(c, n, 1, sq->n - 1, sq->n, sq->n - 1);
	if (p < 0)
		return p;
	for (int i = 0; i <= sq->n; i++) {
		if (i == p && d->arg)
			ids[k++] = t;
		if (i < sq->n && !(i == p && !d->arg))
			ids[k++] = sq->ids[i];
	}
	return seq_out(c, n, ids, k);
}

static int op_seq_at(struct ctx *c, node_t *n, const struct opdef *d)
{
	const struct seq *sq = seq_in(c, n, 0);
	int p;

	(void)d;
	if (!sq)
		return -EINVAL;
	if (!has_in(n, 1))
		return fail(c, "missing position");
	p = seq_pos(c, n, 1, 0, sq->n, sq->n - 1);
	return p < 0 ? p : out(c, n, 0, sq->ids[p]);
}

static int op_seq_length(struct ctx *c, node_t *n, const struct opdef *d)
{
	const struct seq *sq = seq_in(c, n, 0);
	int64_t len;

	(void)d;
	if (!sq)
		return -EINVAL;
	len = sq->n;
	return keep_const(c, n, cval_new(VTPU_S64, 0, NULL, &len, 1));
}

static int op_seq_empty(struct ctx *c, node_t *n, const struct opdef *d)
{
	(void)d;
	return seq_out(c, n, NULL, 0);
}

/* ConcatFromSequence: a Concat, or a Stack with new_axis = 1. */
static int op_concat_from_seq(struct ctx *c, node_t *n, const struct opdef *d)
{
	const struct seq *sq = seq_in(c, n, 0);
	bool stack = attr_i(n, "new_axis", 0) != 0;
	int ids[MAX_SEQ], ax;
	struct vtpu_shape s;

	(void)d;
	if (!sq)
		return -EINVAL;
	if (!sq->n)
		return fail(c, "empty sequence");
	s = shape_of(c, sq->ids[0]);
	ax = axis_norm(c, attr_i(n, "axis", 0), s.rank + stack);
	if (ax < 0)
		return ax;
	for (int i = 0; i < sq->n; i++) {
		ids[i] = sq->ids[i];
		if (stack) {
			int64_t t[R];

			s = shape_of(c, ids[i]);
			if (s.rank + 1 > R)
				return fail(c, "result rank exceeds %d", R);
			for (int j = 0, k = 0; j <= s.rank; j++)
				t[j] = j == ax ? 1 : s.dims[k++];
			if ((ids[i] = reshape(c, ids[i], s.rank + 1, t)) < 0)
				return ids[i];
		}
	}
	return out(c, n, 0, sq->n == 1 ? ids[0] :
		   chk(c, vtpu_g_concat(c->g, sq->n, ids, ax)));
}

/* SplitToSequence: chunks of the split sizes (default 1, then squeezed). */
static int op_split_to_seq(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax, ids[MAX_SEQ], cnt = 0, m = -1;
	int64_t sz[MAX_SEQ], lo[R] = { 0 }, lim[R], step[R], at = 0;
	bool squeeze = false;
	struct vtpu_shape s;
	const struct cval *cv;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	ax = axis_norm(c, attr_i(n, "axis", 0), s.rank);
	if (ax < 0)
		return ax;
	if (has_in(n, 1)) {
		if (!(cv = cin(c, n, 1, "split")))
			return -EINVAL;
		m = cv_ints(c, cv, sz, MAX_SEQ, "split");
		if (m < 0)
			return m;
		if (cv->rank == 0) {	/* one size: chunks of it, the last smaller */
			int64_t part = sz[0];

			if (part < 1)
				return fail(c, "bad split size %lld", (long long)part);
			for (m = 0; m * part < s.dims[ax] && m < MAX_SEQ; m++)
				sz[m] = part < s.dims[ax] - m * part ? part :
					s.dims[ax] - m * part;
		}
	} else {
		squeeze = attr_i(n, "keepdims", 1) == 0;
		if (s.dims[ax] > MAX_SEQ)
			return fail(c, "unsupported split into %lld tensors",
				    (long long)s.dims[ax]);
		for (m = 0; m < s.dims[ax]; m++)
			sz[m] = 1;
	}
	for (int i = 0; i < s.rank; i++)
		lim[i] = s.dims[i], step[i] = 1;
	for (int i = 0; i < m; i++) {
		int y;

		if (sz[i] < 1 || at + sz[i] > s.dims[ax])
			return fail(c, "bad split size %lld", (long long)sz[i]);
		lo[ax] = at;
		lim[ax] = at += sz[i];
		y = chk(c, vtpu_g_slice(c->g, x, lo, lim, step));
		if (y >= 0 && squeeze) {
			int64_t t[R];

			for (int j = 0, k = 0; j < s.rank; j++)
				if (j != ax)
					t[k++] = s.dims[j];
			y = reshape(c, y, s.rank - 1, t);
		}
		if ((ids[cnt++] = y) < 0)
			return y;
	}
	if (at != s.dims[ax])
		return fail(c, "split sizes do not cover the axis");
	return seq_out(c, n, ids, cnt);
}

/* ---- constants --------------------------------------------------------------- */

/* A host constant of @type and @n elements from @data (copied). */
static struct cval *cval_new(enum vtpu_type type, int rank, const int64_t *dims,
			     const void *data, int64_t n)
{
	struct cval *cv = calloc(1, sizeof(*cv));

	if (!cv)
		return NULL;
	cv->type = type;
	cv->rank = rank;
	if (rank)
		memcpy(cv->dims, dims, rank * sizeof(*dims));
	cv->n = n;
	cv->data = malloc(n ? n * esize(type) : 1);
	if (!cv->data) {
		free(cv);
		return NULL;
	}
	if (n)
		memcpy(cv->data, data, n * esize(type));
	return cv;
}

/* A DOUBLE TensorProto of @n elements, rounded to f32. */
static struct cval *tensor_double(struct ctx *c, const Onnx__TensorProto *t,
				  int64_t n)
{
	bool raw = t->has_raw_data && t->raw_data.len;
	struct cval *cv;

	if (raw ? t->raw_data.len != (size_t)n * 8 : t->n_double_data != (size_t)n) {
		fail(c, "tensor '%s': data does not match %lld elements of DOUBLE",
		     t->name ? t->name : "", (long long)n);
		return NULL;
	}
	cv = cval_new(VTPU_F32, (int)t->n_dims, t->dims, NULL, 0);

	if (!cv)
		goto oom;
	free(cv->data);
	cv->n = n;
	cv->data = calloc(n ? n : 1, sizeof(float));
	if (!cv->data)
		goto oom;
	for (int64_t i = 0; i < n; i++) {
		double d;

		if (raw)
			memcpy(&d, t->raw_data.data + 8 * i, 8);	/* LE */
		else
			d = t->double_data[i];
		((float *)cv->data)[i] = (float)d;
	}
	return cv;
oom:
	cval_free(cv);
	fail(c, "out of memory");
	return NULL;
}

/* Decodes a TensorProto: raw_data (little-endian) or the typed field. */
static struct cval *tensor(struct ctx *c, const Onnx__TensorProto *t)
{
	bool ok;
	enum vtpu_type ty = onnx_type(t->data_type, &ok);
	int64_t n = 1, es;
	struct cval *cv;
	const char *nm = t->name ? t->name : "";

	if (!ok) {
		fail(c, "tensor '%s': unsupported element type %s", nm,
		     onnx_type_name(t->data_type));
		return NULL;
	}
	if (t->has_data_location &&
	    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		fail(c, "tensor '%s': unsupported external data", nm);
		return NULL;
	}
	if (t->n_dims > R) {
		fail(c, "tensor '%s': rank %zu exceeds %d", nm, t->n_dims, R);
		return NULL;
	}
	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0 || t->dims[i] > (1ll << 32)) {
			fail(c, "tensor '%s': bad dimension %lld", nm,
			     (long long)t->dims[i]);
			return NULL;
		}
		n *= t->dims[i];
		if (n > (1ll << 32)) {
			fail(c, "tensor '%s' is too large", nm);
			return NULL;
		}
	}
	if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
		return tensor_double(c, t, n);
	es = esize(ty);
	/*
	 * The data must be there before we allocate for it: dims alone may
	 * claim billions of elements in a file of a few bytes.
	 */
	{
		bool raw = t->has_raw_data && t->raw_data.len;
		size_t have = raw ? t->raw_data.len :
			      ty == VTPU_F32 ? t->n_float_data :
			      ty == VTPU_S64 ? t->n_int64_data : t->n_int32_data;

		if (have != (size_t)n * (raw ? es : 1)) {
			fail(c, "tensor '%s': data does not match %lld elements of %s",
			     nm, (long long)n, onnx_type_name(t->data_type));
			return NULL;
		}
	}
	cv = cval_new(ty, (int)t->n_dims, t->dims, NULL, 0);
	if (!cv)
		goto oom;
	free(cv->data);
	cv->n = n;
	cv->data = calloc(n ? n : 1, es);
	if (!cv->data)
		goto oom;
	/* Sizes were checked above. */
	if (t->has_raw_data && t->raw_data.len) {
		memcpy(cv->data, t->raw_data.data, n * es);	/* hosts are LE */
	} else if (ty == VTPU_F32) {
		if (n)
			memcpy(cv->data, t->float_data, n * es);
	} else if (ty == VTPU_S64) {
		if (n)
			memcpy(cv->data, t->int64_data, n * es);
	} else {
		/* int32_data carries int32, bool and bf16 bits. */
		for (int64_t i = 0; i < n; i++) {
			int32_t v = t->int32_data[i];

			if (ty == VTPU_S32)
				((int32_t *)cv->data)[i] = v;
			else if (ty == VTPU_BF16)
				((uint16_t *)cv->data)[i] = (uint16_t)v;
			else
				((uint8_t *)cv->data)[i] = v != 0;
		}
	}
	return cv;
oom:
	cval_free(cv);
	fail(c, "out of memory");
	return NULL;
}

static int keep_const(struct ctx *c, node_t *n, struct cval *cv)
{
	if (!cv)
		return -EINVAL;
	if (n->n_output < 1) {
		cval_free(cv);
		return fail(c, "missing output 0");
	}
	if (define(c, n->output[0], -1, cv)) {
		cval_free(cv);
		return -ENOMEM;
	}
	return 0;
}

static int op_constant(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__AttributeProto *a;
	struct cval *cv = NULL;
	int64_t cnt;

	(void)d;
	if ((a = attr(n, "value")) && a->t)
		cv = tensor(c, a->t);
	else if ((a = attr(n, "value_float")) && a->has_f)
		cv = cval_new(VTPU_F32, 0, NULL, &a->f, 1);
	else if ((a = attr(n, "value_int")) && a->has_i)
		cv = cval_new(VTPU_S64, 0, NULL, &a->i, 1);
	else if ((a = attr(n, "value_floats"))) {
		cnt = (int64_t)a->n_floats;
		cv = cval_new(VTPU_F32, 1, &cnt, a->floats, cnt);
	} else if ((a = attr(n, "value_ints"))) {
		cnt = (int64_t)a->n_ints;
		cv = cval_new(VTPU_S64, 1, &cnt, a->ints, cnt);
	} else {
		return fail(c, "unsupported value kind");
	}
	if (!cv && !c->failed)
		return fail(c, "out of memory");
	return keep_const(c, n, cv);
}

/* Shape: static, so a host constant. */
static int op_shape(struct ctx *c, node_t *n, const struct opdef *d)
{
	struct val *v = has_in(n, 0) ? lookup(c, n->input[0]) : NULL;
	int64_t dims[R], st, en, cnt;
	int rank;

	(void)d;
	if (!v)
		return fail(c, "input 0 is not defined");
	if (v->id >= 0) {
		struct vtpu_shape s = shape_of(c, v->id);

		rank = s.rank;
		memcpy(dims, s.dims, sizeof(dims));
	} else {
		rank = v->c->rank;
		memcpy(dims, v->c->dims, sizeof(dims));
	}
	st = attr_i(n, "start", 0);
	en = attr_i(n, "end", rank);
	st = st < 0 ? st + rank : st;
	en = en < 0 ? en + rank : en;
	st = st < 0 ? 0 : st > rank ? rank : st;
	en = en < st ? st : en > rank ? rank : en;
	cnt = en - st;
	return keep_const(c, n, cval_new(VTPU_S64, 1, &cnt, dims + st, cnt));
}

/* ConstantOfShape: a host constant filled with the value attribute. */
static int op_constant_of_shape(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__AttributeProto *a = attr(n, "value");
	struct cval *fill = NULL, *cv;
	int64_t dims[R], cnt = 1;
	float zero = 0;
	int m, es;

	(void)d;
	if ((m = in_ints(c, n, 0, dims, R, "shape")) < 0)
		return m;
	for (int i = 0; i < m; i++) {
		if (dims[i] < 0 || (cnt *= dims[i]) > (1 << 24))
			return fail(c, "unsupported shape (at most 2^24 elements)");
	}
	fill = a && a->t ? tensor(c, a->t) : cval_new(VTPU_F32, 0, NULL, &zero, 1);
	if (!fill)
		return c->failed ? -EINVAL : fail(c, "out of memory");
	if (fill->n != 1) {
		cval_free(fill);
		return fail(c, "value must have one element");
	}
	es = esize(fill->type);
	cv = cval_new(fill->type, m, dims, NULL, 0);
	if (cv) {
		free(cv->data);
		cv->n = cnt;
		cv->data = malloc(cnt ? cnt * es : 1);
		if (!cv->data) {
			free(cv);
			cv = NULL;
		}
	}
	for (int64_t i = 0; cv && i < cnt; i++)
		memcpy((char *)cv->data + i * es, fill->data, es);
	cval_free(fill);
	if (!cv)
		return fail(c, "out of memory");
	return keep_const(c, n, cv);
}

/* Size: the element count, a host constant. */
static int op_size(struct ctx *c, node_t *n, const struct opdef *d)
{
	struct val *v = has_in(n, 0) ? lookup(c, n->input[0]) : NULL;
	int64_t cnt;

	(void)d;
	if (!v)
		return fail(c, "input 0 is not defined");
	if (v->id >= 0) {
		struct vtpu_shape s = shape_of(c, v->id);

		cnt = prod(s.dims, 0, s.rank);
	} else {
		cnt = v->c->n;
	}
	return keep_const(c, n, cval_new(VTPU_S64, 0, NULL, &cnt, 1));
}

/* Split: one slice per output, sizes from split (attr/input) or equal. */
static int op_split(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax, m = -1, no = (int)n->n_output;
	int64_t sz[64], lo[R] = { 0 }, lim[R], step[R], at = 0;
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if (no < 1 || no > 64)
		return fail(c, "unsupported %d outputs", no);
	s = shape_of(c, x);
	ax = axis_norm(c, attr_i(n, "axis", 0), s.rank);
	if (ax < 0)
		return ax;
	if (c->opset < 13)
		m = attr_ints(c, n, "split", sz, 64);
	else if (has_in(n, 1))
		m = in_ints(c, n, 1, sz, 64, "split");
	if (c->failed)
		return -EINVAL;
	if (m < 0) {
		/* Equal parts; the last may be smaller (opset 18). */
		int64_t part = (s.dims[ax] + no - 1) / no;

		for (int i = 0; i < no; i++)
			sz[i] = i < no - 1 ? part : s.dims[ax] - part * (no - 1);
		m = no;
	}
	if (m != no)
		return fail(c, "split has %d sizes for %d outputs", m, no);
	for (int i = 0; i < s.rank; i++)
		lim[i] = s.dims[i], step[i] = 1;
	for (int i = 0; i < no; i++) {
		if (sz[i] < 1 || at + sz[i] > s.dims[ax])
			return fail(c, "bad split size %lld", (long long)sz[i]);
		lo[ax] = at;
		lim[ax] = at += sz[i];
		if (n->output[i][0] &&
		    out(c, n, i, chk(c, vtpu_g_slice(c->g, x, lo, lim, step))) < 0)
			return -EINVAL;
	}
	return 0;
}

/* Selu: gamma * select(x > 0, x, alpha * (exp(x) - 1)). */
static int op_selu(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), e, p, y;

	(void)d;
	if (x < 0)
		return x;
	e = binary(c, VTPU_SUB, chk(c, vtpu_g_unary(c->g, VTPU_EXP, x)),
		   splat(c, 1, x));
	e = binary(c, VTPU_MUL, e,
		   splat(c, attr_f(n, "alpha", 1.67326319217681884765625f), x));
	p = chk(c, vtpu_g_compare(c->g, VTPU_GT, x, splat(c, 0, x)));
	if (e < 0 || p < 0)
		return -EINVAL;
	y = chk(c, vtpu_g_select(c->g, p, x, e));
	y = binary(c, VTPU_MUL, y,
		   splat(c, attr_f(n, "gamma", 1.05070102214813232421875f), x));
	return out(c, n, 0, y);
}

/* HardSigmoid: max(0, min(1, alpha * x + beta)). */
static int op_hardsigmoid(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), y;

	(void)d;
	if (x < 0)
		return x;
	y = binary(c, VTPU_MUL, x, splat(c, attr_f(n, "alpha", 0.2f), x));
	y = binary(c, VTPU_ADD, y, splat(c, attr_f(n, "beta", 0.5f), x));
	y = binary(c, VTPU_MIN, y, splat(c, 1, x));
	y = binary(c, VTPU_MAX, y, splat(c, 0, x));
	return out(c, n, 0, c->failed ? -EINVAL : y);
}

/*
 * (x - mean) * rsqrt(var + eps) over @na axes; @stats (optional)
 * receives the reduced mean and rsqrt(var + eps).
 */
static int normalize(struct ctx *c, int x, int na, const int *axes, float eps,
		     int *stats)
{
	struct vtpu_shape s = shape_of(c, x);
	int keep[R], nk = 0, mean, var, dx;
	bool red[R] = { false };

	for (int i = 0; i < na; i++)
		red[axes[i]] = true;
	for (int i = 0; i < s.rank; i++)
		if (!red[i])
			keep[nk++] = i;
	mean = chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MEAN_OP, x, na, axes));
	mean = mean < 0 ? mean : chk(c, vtpu_g_broadcast(c->g, mean, s.rank,
							 s.dims, keep));
	dx = mean < 0 ? mean : chk(c, vtpu_g_binary(c->g, VTPU_SUB, x, mean));
	var = dx < 0 ? dx : chk(c, vtpu_g_binary(c->g, VTPU_MUL, dx, dx));
	var = var < 0 ? var : chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MEAN_OP, var,
						   na, axes));
	var = var < 0 ? var : binary(c, VTPU_ADD, var, splat(c, eps, var));
	var = var < 0 ? var : chk(c, vtpu_g_unary(c->g, VTPU_RSQRT, var));
	if (stats && var >= 0) {
		stats[0] = chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MEAN_OP, x, na,
						 axes));
		stats[1] = var;
	}
	var = var < 0 ? var : chk(c, vtpu_g_broadcast(c->g, var, s.rank, s.dims,
						      keep));
	return var < 0 ? var : chk(c, vtpu_g_binary(c->g, VTPU_MUL, dx, var));
}

/* LayerNormalization: normalize over axis.., then scale and bias. */
static int op_layernorm(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), ax, axes[R], na = 0, y, sc, st[2] = { -1, -1 };
	int64_t kd[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	ax = axis_norm(c, attr_i(n, "axis", -1), s.rank);
	if (ax < 0)
		return ax;
	for (int i = 0; i < s.rank; i++)
		kd[i] = i < ax ? s.dims[i] : 1;
	for (int i = ax; i < s.rank; i++)
		axes[na++] = i;
	y = normalize(c, x, na, axes, attr_f(n, "epsilon", 1e-5f), st);
	/* Mean and InvStdDev keep the normalized axes as 1s. */
	for (size_t i = 1; i < n->n_output && i < 3 && y >= 0; i++)
		if (n->output[i][0] &&
		    out(c, n, i, reshape(c, st[i - 1], s.rank, kd)) < 0)
			return -EINVAL;
	sc = y < 0 ? y : in(c, n, 1);
	y = sc < 0 ? sc : binary(c, VTPU_MUL, y, sc);
	if (y >= 0 && has_in(n, 2))
		y = binary(c, VTPU_ADD, y, in(c, n, 2));
	return out(c, n, 0, c->failed ? -EINVAL : y);
}

/* InstanceNormalization: normalize over the spatial axes, per channel. */
static int op_instnorm(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = in(c, n, 0), axes[R], na = 0, y, p[2], dim1[1] = { 1 };
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = shape_of(c, x);
	if (s.rank < 3)
		return fail(c, "input must have spatial dimensions");
	for (int i = 2; i < s.rank; i++)
		axes[na++] = i;
	y = normalize(c, x, na, axes, attr_f(n, "epsilon", 1e-5f), NULL);
	for (int i = 0; i < 2 && y >= 0; i++) {
		p[i] = in(c, n, i + 1);
		if (p[i] >= 0 && (shape_of(c, p[i]).rank != 1 ||
				  shape_of(c, p[i]).dims[0] != s.dims[1]))
			return fail(c, "input %d must be [%lld]", i + 1,
				    (long long)s.dims[1]);
		p[i] = p[i] < 0 ? p[i] :
			chk(c, vtpu_g_broadcast(c->g, p[i], s.rank, s.dims, dim1));
		y = p[i] < 0 ? p[i] : chk(c, vtpu_g_binary(c->g,
					i ? VTPU_ADD : VTPU_MUL, y, p[i]));
	}
	return out(c, n, 0, y);
}

/* ---- the operator table ---------------------------------------------------- */

#define RED(pre, post, axes_ver)	((pre) | (post) << 8 | (axes_ver) << 16)
#define MAXV	1000

static const struct opdef ops[] = {
	{ "Add", 1, MAXV, op_binary, VTPU_ADD, 0, "axis,broadcast" },
	{ "Sub", 1, MAXV, op_binary, VTPU_SUB, 0, "axis,broadcast" },
	{ "Mul", 1, MAXV, op_binary, VTPU_MUL, 0, "axis,broadcast" },
	{ "Div", 1, MAXV, op_binary, VTPU_DIV, 0, "axis,broadcast" },
	{ "Pow", 1, MAXV, op_binary, VTPU_POW, 0, "axis,broadcast" },
	/* Before opset 8 the inputs have one shape: broadcasting is moot. */
	{ "Max", 1, MAXV, op_variadic, VTPU_MAX, 0, "consumed_inputs" },
	{ "Min", 1, MAXV, op_variadic, VTPU_MIN, 0, "consumed_inputs" },
	{ "Sum", 1, MAXV, op_variadic, VTPU_ADD, 0, "consumed_inputs" },
	{ "Mean", 1, MAXV, op_variadic, VTPU_ADD, 1, "consumed_inputs" },
	{ "Equal", 7, MAXV, op_compare, VTPU_EQ, 0, "" },
	{ "Less", 7, MAXV, op_compare, VTPU_LT, 0, "" },
	{ "LessOrEqual", 12, MAXV, op_compare, VTPU_LE, 0, "" },
	{ "Greater", 7, MAXV, op_compare, VTPU_GT, 0, "" },
	{ "GreaterOrEqual", 12, MAXV, op_compare, VTPU_GE, 0, "" },
	{ "Where", 9, MAXV, op_where, 0, 0, "" },
	{ "Exp", 6, MAXV, op_unary, VTPU_EXP, 0, "" },
	{ "Log", 6, MAXV, op_unary, VTPU_LOG, 0, "" },
	{ "Sqrt", 6, MAXV, op_unary, VTPU_SQRT, 0, "" },
	{ "Abs", 6, MAXV, op_unary, VTPU_ABS, 0, "" },
	{ "Neg", 6, MAXV, op_unary, VTPU_NEG, 0, "" },
	{ "Relu", 6, MAXV, op_unary, VTPU_RELU, 0, "" },
	{ "Sigmoid", 6, MAXV, op_unary, VTPU_LOGISTIC, 0, "" },
	{ "Tanh", 6, MAXV, op_unary, VTPU_TANH, 0, "" },
	{ "Gelu", 20, MAXV, op_gelu, VTPU_GELU, 0, "approximate" },
	{ "Reciprocal", 6, MAXV, op_reciprocal, 0, 0, "" },
	{ "Sign", 9, MAXV, op_sign, 0, 0, "" },
	{ "Shrink", 9, MAXV, op_shrink, 0, 0, "bias,lambd" },
	{ "LeakyRelu", 6, MAXV, op_leaky, 0, 0, "alpha" },
	{ "PRelu", 6, MAXV, op_leaky, 1, 0, "" },
	{ "Elu", 6, MAXV, op_elu, 0, 0, "alpha" },
	{ "Softplus", 1, MAXV, op_softplus, 0, 0, "" },
	{ "Clip", 6, MAXV, op_clip, 0, 0, "min,max" },
	{ "Identity", 1, MAXV, op_identity, 0, 0, "" },
	{ "Dropout", 7, MAXV, op_dropout, 0, 0, "ratio,seed" },
	{ "Cast", 6, MAXV, op_cast, 0, 0, "to,saturate" },
	{ "CastLike", 15, MAXV, op_castlike, 0, 0, "saturate" },
	{ "And", 7, MAXV, op_logical, 0, 0, "" },
	{ "Or", 7, MAXV, op_logical, 1, 0, "" },
	{ "Xor", 7, MAXV, op_logical, 2, 0, "" },
	{ "Not", 1, MAXV, op_logical, 3, 0, "" },
	{ "Softmax", 1, MAXV, op_softmax, 0, 0, "axis" },
	{ "LogSoftmax", 1, MAXV, op_softmax, 1, 0, "axis" },
	{ "MatMul", 1, MAXV, op_matmul, 0, 0, "" },
	{ "Gemm", 6, MAXV, op_gemm, 0, 0, "alpha,beta,broadcast,transA,transB" },
	{ "Conv", 1, MAXV, op_conv, 0, 0,
	  "auto_pad,dilations,group,kernel_shape,pads,strides" },
	{ "ConvTranspose", 1, MAXV, op_convtranspose, 0, 0,
	  "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides" },
	{ "MaxPool", 1, MAXV, op_pool, 1, 0,
	  "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides" },
	{ "AveragePool", 1, MAXV, op_pool, 0, 0,
	  "auto_pad,ceil_mode,count_include_pad,dilations,kernel_shape,pads,strides" },
	{ "GlobalAveragePool", 1, MAXV, op_global_pool, VTPU_REDUCE_MEAN_OP, 0, "" },
	{ "GlobalMaxPool", 1, MAXV, op_global_pool, VTPU_REDUCE_MAX_OP, 0, "" },
	{ "BatchNormalization", 6, MAXV, op_batchnorm, 0, 0,
	  "epsilon,momentum,spatial,is_test,training_mode" },
	{ "ReduceSum", 1, MAXV, op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_NONE, POST_NONE, 13), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceMean", 1, MAXV, op_reduce, VTPU_REDUCE_MEAN_OP,
	  RED(PRE_NONE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceMax", 1, MAXV, op_reduce, VTPU_REDUCE_MAX_OP,
	  RED(PRE_NONE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceMin", 1, MAXV, op_reduce, VTPU_REDUCE_MIN_OP,
	  RED(PRE_NONE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceProd", 1, MAXV, op_reduce, REDUCE_PROD,
	  RED(PRE_NONE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceSumSquare", 1, MAXV, op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_SQUARE, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceL1", 1, MAXV, op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_ABS, POST_NONE, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceL2", 1, MAXV, op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_SQUARE, POST_SQRT, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceLogSum", 1, MAXV, op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_NONE, POST_LOG, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "ReduceLogSumExp", 1, MAXV, op_reduce, VTPU_REDUCE_SUM_OP,
	  RED(PRE_EXP, POST_LOG, 18), "axes,keepdims,noop_with_empty_axes" },
	{ "Reshape", 1, MAXV, op_reshape, 0, 0, "shape,allowzero" },
	{ "Flatten", 1, MAXV, op_flatten, 0, 0, "axis" },
	{ "Transpose", 1, MAXV, op_transpose, 0, 0, "perm" },
	{ "Concat", 4, MAXV, op_concat, 0, 0, "axis" },
	{ "Slice", 1, MAXV, op_slice, 0, 0, "starts,ends,axes" },
	{ "Squeeze", 1, MAXV, op_squeeze, 0, 0, "axes" },
	{ "Unsqueeze", 1, MAXV, op_unsqueeze, 0, 0, "axes" },
	{ "Expand", 8, MAXV, op_expand, 0, 0, "" },
	{ "Pad", 2, MAXV, op_pad, 0, 0, "mode,pads,value" },
	{ "Gather", 1, MAXV, op_gather, 0, 0, "axis" },
	{ "Tile", 6, MAXV, op_tile, 0, 0, "" },
	{ "GatherND", 11, MAXV, op_gathernd, 0, 0, "batch_dims" },
	{ "ScatterND", 11, MAXV, op_scatternd, 0, 0, "reduction" },
	{ "RNN", 7, MAXV, op_rnn, CELL_RNN, 0,
	  "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout" },
	{ "GRU", 7, MAXV, op_rnn, CELL_GRU, 0,
	  "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout,linear_before_reset" },
	{ "LSTM", 7, MAXV, op_rnn, CELL_LSTM, 0,
	  "activation_alpha,activation_beta,activations,clip,direction,hidden_size,input_forget,layout" },
	{ "OneHot", 9, MAXV, op_onehot, 0, 0, "axis" },
	{ "EyeLike", 9, MAXV, op_eyelike, 0, 0, "dtype,k" },
	{ "Scatter", 9, 10, op_scatter_elements, 0, 0, "axis" },
	{ "ScatterElements", 11, MAXV, op_scatter_elements, 0, 0,
	  "axis,reduction" },
	{ "TopK", 1, MAXV, op_topk, 0, 0, "axis,k,largest,sorted" },
	{ "Einsum", 12, MAXV, op_einsum, 0, 0, "equation" },
	{ "CumSum", 11, MAXV, op_cumsum, 0, 0, "exclusive,reverse" },
	{ "Hardmax", 1, MAXV, op_hardmax, 0, 0, "axis" },
	{ "IsNaN", 9, MAXV, op_isnan_inf, 0, 0, "" },
	{ "IsInf", 10, MAXV, op_isnan_inf, 1, 0,
	  "detect_negative,detect_positive" },
	{ "ThresholdedRelu", 10, MAXV, op_thresholded_relu, 0, 0, "alpha" },
	{ "Softsign", 1, MAXV, op_softsign, 0, 0, "" },
	{ "Floor", 6, MAXV, op_floor_ceil_round, 0, 0, "" },
	{ "Ceil", 6, MAXV, op_floor_ceil_round, 1, 0, "" },
	{ "Round", 11, MAXV, op_floor_ceil_round, 2, 0, "" },
	{ "Range", 11, MAXV, op_range, 0, 0, "" },
	{ "Resize", 10, MAXV, op_resize, 0, 0,
	  "antialias,axes,coordinate_transformation_mode,cubic_coeff_a,"
	  "exclude_outside,extrapolation_value,keep_aspect_ratio_policy,mode,"
	  "nearest_mode" },
	{ "GatherElements", 11, MAXV, op_gather_elements, 0, 0, "axis" },
	{ "NegativeLogLikelihoodLoss", 12, MAXV, op_nll_loss, 0, 0,
	  "ignore_index,reduction" },
	{ "SoftmaxCrossEntropyLoss", 12, MAXV, op_sce_loss, 0, 0,
	  "ignore_index,reduction" },
	{ "ArgMax", 1, MAXV, op_argmax, 1, 0, "axis,keepdims,select_last_index" },
	{ "ArgMin", 1, MAXV, op_argmax, 0, 0, "axis,keepdims,select_last_index" },
	{ "Trilu", 14, MAXV, op_trilu, 0, 0, "upper" },
	{ "DepthToSpace", 1, MAXV, op_depth_space, 1, 0, "blocksize,mode" },
	{ "SpaceToDepth", 1, MAXV, op_depth_space, 0, 0, "blocksize" },
	{ "SequenceEmpty", 11, MAXV, op_seq_empty, 0, 0, "dtype" },
	{ "SequenceConstruct", 11, MAXV, op_seq_construct, 0, 0, "" },
	{ "SequenceInsert", 11, MAXV, op_seq_edit, 1, 0, "" },
	{ "SequenceErase", 11, MAXV, op_seq_edit, 0, 0, "" },
	{ "SequenceAt", 11, MAXV, op_seq_at, 0, 0, "" },
	{ "SequenceLength", 11, MAXV, op_seq_length, 0, 0, "" },
	{ "ConcatFromSequence", 11, MAXV, op_concat_from_seq, 0, 0,
	  "axis,new_axis" },
	{ "SplitToSequence", 11, MAXV, op_split_to_seq, 0, 0, "axis,keepdims" },
	{ "Constant", 1, MAXV, op_constant, 0, 0,
	  "value,value_float,value_floats,value_int,value_ints" },
	{ "Shape", 1, MAXV, op_shape, 0, 0, "start,end" },
	{ "Size", 1, MAXV, op_size, 0, 0, "" },
	{ "ConstantOfShape", 9, MAXV, op_constant_of_shape, 0, 0, "value" },
	{ "Split", 2, MAXV, op_split, 0, 0, "axis,split,num_outputs" },
	{ "Selu", 6, MAXV, op_selu, 0, 0, "alpha,gamma" },
	{ "HardSigmoid", 6, MAXV, op_hardsigmoid, 0, 0, "alpha,beta" },
	{ "LayerNormalization", 17, MAXV, op_layernorm, 0, 0,
	  "axis,epsilon,stash_type" },
	{ "InstanceNormalization", 6, MAXV, op_instnorm, 0, 0, "epsilon" },
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
		return fail(c, "binding of %s has rank %d (at most %d)", vi->name,
			    b->rank, R);
	if (b && b->rank >= 0)
		for (int i = 0; i < b->rank; i++)
			if (b->dims[i] < 1)
				return fail(c, "input %s: unsupported empty dimension %d (bound)",
					    vi->name, i);

	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !vi->type->tensor_type)
		return fail(c, "input %s is not a tensor", vi->name);
	tt = vi->type->tensor_type;
	s->type = onnx_type(tt->elem_type, &ok);
	if (!ok)
		return fail(c, "input %s has unsupported element type %s", vi->name,
			    onnx_type_name(tt->elem_type));
	if (!tt->shape && b && b->rank >= 0) {
		s->rank = b->rank;
		memcpy(s->dims, b->dims, sizeof(s->dims));
		return 0;
	}
	if (!tt->shape)
		return fail(c, "input %s has no shape", vi->name);
	if (b && b->rank >= 0 && (size_t)b->rank != tt->shape->n_dim)
		return fail(c, "input %s has rank %zu, bound to rank %d",
			    vi->name, tt->shape->n_dim, b->rank);
	if (tt->shape->n_dim > R)
		return fail(c, "input %s has rank %zu (at most %d)", vi->name,
			    tt->shape->n_dim, R);
	s->rank = (int)tt->shape->n_dim;
	for (int i = 0; i < s->rank; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
		bool is_static = d->value_case ==
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;

		if (is_static && b && b->rank >= 0 && b->dims[i] != d->dim_value) {
			fail(c, "input %s dimension %d is %lld, bound to %lld",
			     vi->name, i, (long long)d->dim_value,
			     (long long)b->dims[i]);
			return -EBADR;	/* the caller's mistake: -EINVAL */
		}
		if (!is_static && b && b->rank >= 0) {
			s->dims[i] = b->dims[i];
			continue;
		}
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
			return fail(c, "input %s has symbolic dimension '%s' (bind it from the actual input)",
				    vi->name, d->dim_param);
		if (!is_static || d->dim_value < 1)
			return fail(c, "input %s has unknown or empty dimension %d",
				    vi->name, i);
		s->dims[i] = d->dim_value;
	}
	return 0;
}

/* An integer input's bound values, kept for where constants are needed. */
static int bind_values(struct ctx *c, struct val *v, const struct vtpu_shape *s)
{
	const struct vtpu_onnx_binding *b = binding(c, v->name);
	bool is_int = s->type == VTPU_S64 || s->type == VTPU_S32;
	int64_t n = 1;

	if (!b || !(is_int ? b->values != NULL :
		    s->type == VTPU_F32 && b->fvalues != NULL))
		return 0;
	for (int i = 0; i < s->rank; i++)
		n *= s->dims[i];
	if (is_int) {
		v->b = cval_new(VTPU_S64, s->rank, s->dims, b->values, n);
	} else {
		v->b = cval_new(VTPU_F32, s->rank, s->dims, NULL, 0);
		if (v->b) {
			float *f = malloc(n * sizeof(*f) + 1);

			for (int64_t i = 0; f && i < n; i++)
				f[i] = (float)b->fvalues[i];
			free(v->b->data);
			v->b->data = f;
			v->b->n = n;
			if (!f) {
				cval_free(v->b);
				v->b = NULL;
			}
		}
	}
	if (!v->b) {
		fail(c, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int add_inputs(struct ctx *c, const Onnx__GraphProto *gp)
{
	int np = 0;

	for (size_t i = 0; i < gp->n_initializer; i++) {
		struct cval *cv = tensor(c, gp->initializer[i]);

		if (!cv)
			return -EINVAL;
		if (!gp->initializer[i]->name) {
			cval_free(cv);
			return fail(c, "initializer %zu has no name", i);
		}
		if (define(c, gp->initializer[i]->name, -1, cv)) {
			cval_free(cv);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		struct vtpu_shape s = { 0 };
		int id;

		if (!vi->name)
			return fail(c, "input %zu has no name", i);
		if (is_initializer(gp, vi->name))
			continue;
		if ((id = input_shape(c, vi, &s)))
			return id == -EBADR ? id : -EINVAL;
		{
			enum vtpu_type t = s.type;

			s.type = dev_type(t);
			id = chk(c, vtpu_g_parameter(c->g, np++, &s, vi->name));
			/* bool arrives as s32 0/1: pred is x != 0. */
			if (id >= 0 && t == VTPU_PRED)
				id = chk(c, vtpu_g_compare(c->g, VTPU_NE, id,
							   splat(c, 0, id)));
			s.type = t;
		}
		if (id < 0 || define(c, vi->name, id, NULL))
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

		if (!in_list(d->attrs, a))
			return fail(c, "unsupported attribute %s", a);
	}
	return 0;
}

/* The folded value of output val @v (f32 back to s64 when @to_int). */
static struct cval *folded(struct vtpu_graph *tg, int id,
			   void *data, bool to_int)
{
	struct vtpu_shape s;
	struct cval *cv;

	vtpu_graph_shape(tg, id, &s);
	if (!to_int || s.type != VTPU_F32)
		return cval_new(s.type, s.rank, s.dims, data, shape_elems(&s));
	cv = cval_new(VTPU_S64, s.rank, s.dims, NULL, 0);
	if (!cv)
		return NULL;
	free(cv->data);
	cv->n = shape_elems(&s);
	cv->data = malloc(cv->n * sizeof(int64_t) + 1);
	if (!cv->data) {
		free(cv);
		return NULL;
	}
	for (int64_t i = 0; i < cv->n; i++)
		((int64_t *)cv->data)[i] = (int64_t)llroundf(((float *)data)[i]);
	return cv;
}

/* Host constants for all new outputs of a folded node, by ir_eval(). */
static int fold_eval(struct ctx *c, struct vtpu_graph *tg, int first,
		     bool to_int)
{
	int ids[16], at[16], nout = c->nv - first, ne = 0, ret;
	void *outs[16] = { NULL };

	if (nout < 1 || nout > 16)
		return -EINVAL;
	for (int i = first; i < c->nv; i++) {
		/* A handler that made a host constant itself (Range, ...) */
		if (c->v[i].id < 0) {
			if (!c->v[i].c)
				return -EINVAL;
			continue;
		}
		at[ne] = i;
		ids[ne++] = c->v[i].id;
	}
	if (!ne)
		return 0;
	if (vtpu_g_outputs(tg, ne, ids) < 0)
		return -EINVAL;
	ret = ir_eval(&tg->ir, NULL, outs);
	for (int i = 0; i < ne; i++) {
		struct cval *cv = ret ? NULL : folded(tg, ids[i], outs[i], to_int);

		if (!cv)
			ret = -EINVAL;
		c->v[at[i]].id = -1;
		c->v[at[i]].c = cv;
		free(outs[i]);
	}
	return ret;
}

static bool foldable(struct ctx *c, node_t *n, const struct opdef *d,
		     bool *has_int)
{
	static const char *const never =
		"Constant,ConstantOfShape,Shape,Size,Identity,Dropout";
	bool has_float = false;

	*has_int = false;
	if (in_list(never, d->name) || !n->n_input)
		return false;
	for (size_t i = 0; i < n->n_input; i++) {
		struct val *v = n->input[i][0] ? lookup(c, n->input[i]) : NULL;

		if (!n->input[i][0])
			continue;
		if (!v || !v->c || !v->c->n || v->c->n > MAX_FOLD)
			return false;
		*has_int |= v->c->type == VTPU_S64;
		has_float |= v->c->type == VTPU_F32 || v->c->type == VTPU_BF16;
	}
	/* f32 results are s64 ones only when no input was really float. */
	*has_int &= !has_float;
	return true;
}

/*
 * Builds a node whose inputs are all host constants into a scratch graph
 * and evaluates it, so that shape arithmetic (Shape -> Gather -> Concat
 * -> Reshape) yields the host constants later nodes need. 1 when
 * folded; 0 (state restored) to build it normally.
 */
static int fold(struct ctx *c, node_t *n, const struct opdef *d)
{
	struct vtpu_graph *main_g = c->g, *tg;
	int saved[64], first = c->nv, ret;
	bool has_int;
	char *err = c->err;

	if (n->n_input > 64 || !foldable(c, n, d, &has_int))
		return 0;
	tg = vtpu_graph_new();
	if (!tg)
		return 0;
	for (size_t i = 0; i < n->n_input; i++) {
		struct val *v = n->input[i][0] ? lookup(c, n->input[i]) : NULL;

		saved[i] = v ? v->id : -1;
		if (v)
			v->id = -1;
	}
	c->g = tg;
	c->folding = true;
	c->err = NULL;		/* a failed fold is silent: build it normally */
	ret = d->fn(c, n, d);
	if (ret >= 0 && !c->failed)
		ret = fold_eval(c, tg, first,
				has_int && strcmp(d->name, "Cast") != 0);
	else
		ret = -EINVAL;
	c->g = main_g;
	c->folding = false;
	c->err = err;
	for (size_t i = 0; i < n->n_input; i++) {
		struct val *v = n->input[i][0] ? lookup(c, n->input[i]) : NULL;

		if (v)
			v->id = saved[i];
	}
	if (ret < 0) {
		for (int i = first; i < c->nv; i++)
			cval_free(c->v[i].c);
		c->nv = first;
		c->failed = false;
	}
	vtpu_graph_free(tg);
	return ret < 0 ? 0 : 1;
}

static int add_node(struct ctx *c, node_t *n)
{
	const char *dom = n->domain ? n->domain : "";
	const struct opdef *d;
	bool known;

	c->op = n->op_type ? n->op_type : "?";
	if (*dom && strcmp(dom, "ai.onnx"))
		return fail(c, "unsupported operator %s (domain %s)", c->op, dom);
	for (size_t i = 0; i < n->n_input; i++)
		if (!n->input[i])
			return fail(c, "malformed input %zu", i);
	for (size_t i = 0; i < n->n_output; i++)
		if (!n->output[i])
			return fail(c, "malformed output %zu", i);
	if (c->opset < 0)
		return fail(c, "operator %s: the model imports no ai.onnx opset",
			    c->op);
	d = find_op(c->op, c->opset, &known);
	if (!d)
		return fail(c, "unsupported operator %s (opset %lld)", c->op,
			    (long long)c->opset);
	if (check_attrs(c, n, d))
		return -EINVAL;
	if (fold(c, n, d))
		return 0;
	if (d->fn(c, n, d) < 0 || c->failed)
		return c->failed ? -EINVAL : fail(c, "failed");
	return 0;
}

static int add_outputs(struct ctx *c, const Onnx__GraphProto *gp)
{
	int *v = calloc(gp->n_output ? gp->n_output : 1, sizeof(*v));
	int ret;

	if (!v)
		return fail(c, "out of memory");
	for (size_t i = 0; i < gp->n_output; i++) {
		if (!gp->output[i]->name) {
			free(v);
			return fail(c, "output %zu has no name", i);
		}
		v[i] = value(c, gp->output[i]->name);
		/* bool leaves as s32 0/1 (dev_type()). */
		if (v[i] >= 0 && shape_of(c, v[i]).type == VTPU_PRED)
			v[i] = chk(c, vtpu_g_convert(c->g, v[i], VTPU_S32));
		if (v[i] < 0) {
			free(v);
			return -EINVAL;
		}
	}
	if (!gp->n_output) {
		free(v);
		return fail(c, "the graph has no outputs");
	}
	ret = chk(c, vtpu_g_outputs(c->g, (int)gp->n_output, v));
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
		return fail(c, "the model has no graph");
	if (find_opset(c, m))
		return -EINVAL;
	if ((ret = add_inputs(c, gp)))
		return ret;
	for (size_t i = 0; i < gp->n_node; i++) {
		c->node = (int)i;
		if (add_node(c, gp->node[i]))
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
			return fail(c, "binding %d has no name", i);
		for (size_t k = 0; k < gp->n_input && !found; k++)
			found = gp->input[k]->name &&
				!strcmp(gp->input[k]->name, nm) &&
				!is_initializer(gp, nm);
		if (!found)
			return fail(c, "binding %d: the graph has no input '%s'", i,
				    nm);
		if (binding(c, nm) != &c->bind[i])
			return fail(c, "input '%s' is bound twice", nm);
		if ((c->bind[i].values || c->bind[i].fvalues) &&
		    c->bind[i].rank < 0)
			return fail(c, "binding of '%s' has values but no dims",
				    nm);
	}
	return 0;
}

int vtpu_onnx_parse(const void *data, size_t len, struct vtpu_graph **out,
		    char *err, size_t errlen)
{
	return vtpu_onnx_parse_bound(data, len, NULL, 0, out, err, errlen);
}

int vtpu_onnx_parse_bound(const void *data, size_t len,
			  const struct vtpu_onnx_binding *bindings, int n,
			  struct vtpu_graph **out, char *err, size_t errlen)
{
	struct ctx c = { .node = -1, .err = err, .errlen = errlen,
			 .bind = bindings, .nbind = n };
	Onnx__ModelProto *m;
	int ret;

	if (err && errlen)
		err[0] = 0;
	*out = NULL;
	m = onnx__model_proto__unpack(NULL, len, data);
	if (!m) {
		fail(&c, "malformed ONNX protobuf (%zu bytes)", len);
		return -EINVAL;
	}
	if (!m->graph || n < 0 || (n && !bindings) ||
	    check_bindings(&c, m->graph)) {
		if (!m->graph)
			fail(&c, "the model has no graph");
		else if (n < 0 || (n && !bindings))
			fail(&c, "bad bindings");
		onnx__model_proto__free_unpacked(m, NULL);
		return -EINVAL;
	}
	c.g = vtpu_graph_new();
	if (!c.g) {
		onnx__model_proto__free_unpacked(m, NULL);
		fail(&c, "out of memory");
		return -ENOMEM;
	}
	ret = build_model(&c, m);
	for (int i = 0; i < c.nv; i++) {
		bool dup = false;

		/* Aliases (Identity) share a host copy: free it once. */
		for (int j = 0; j < i && !dup; j++)
			dup = c.v[j].c == c.v[i].c;
		if (!dup)
			cval_free(c.v[i].c);
		cval_free(c.v[i].b);
		free(c.v[i].s);
	}
	free(c.v);
	onnx__model_proto__free_unpacked(m, NULL);
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
	*out = c.g;
	return 0;
}
