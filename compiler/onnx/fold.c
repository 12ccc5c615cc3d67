// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/fold.c - a node whose inputs are all host constants is evaluated
 * at import, so that shape arithmetic (Shape -> Gather -> Concat ->
 * Reshape) yields the host constants later nodes need.
 *
 * Integers stay integers: ONNX computes shapes in int64, and f32 holds
 * integers exactly only up to 2^24 (a dimension of 2^24 + 1, the
 * INT64_MAX that says "to the end" of a Slice). Elementwise integer
 * operators are evaluated here in int64 with numpy broadcasting, wrapping
 * as ONNX Runtime does. Operators that only move elements (Gather,
 * Slice, Concat, Reshape, ...) run their own handler on the positions of
 * the elements instead of their values, and the positions it returns
 * pick the integers: exact, and no second copy of each operator's rules.
 * Other nodes are built into a scratch graph and evaluated by ir_eval();
 * an integer node goes that way only when its integers are exact in f32.
 */
#include "common.h"

#define F32_EXACT	(1 << 24)	/* |integers| that f32 holds exactly */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static bool is_int(enum vtpu_type t)
{
	return t == VTPU_S64 || t == VTPU_S32 || t == VTPU_PRED;
}

static int64_t get_int(const struct cval *cv, int64_t i)
{
	switch (cv->type) {
	case VTPU_S64: return ((const int64_t *)cv->data)[i];
	case VTPU_S32: return ((const int32_t *)cv->data)[i];
	default: return ((const uint8_t *)cv->data)[i];
	}
}

/* Stores @x in @cv's type: s32 wraps, pred is x != 0. */
static void put_int(struct cval *cv, int64_t i, int64_t x)
{
	switch (cv->type) {
	case VTPU_S64: ((int64_t *)cv->data)[i] = x; break;
	case VTPU_S32: ((int32_t *)cv->data)[i] = (int32_t)(uint32_t)x; break;
	case VTPU_F32: ((float *)cv->data)[i] = (float)x; break;
	default: ((uint8_t *)cv->data)[i] = x != 0; break;
	}
}

/* Forgets the values a failed fold defined from @first on. */
static void unfold(struct ctx *c, int first)
{
	for (int i = first; i < c->nv; i++) {
		onnx_cval_free(c->v[i].c);
		free(c->v[i].s);	/* a sequence a folded node made */
	}
	c->nv = first;
	c->failed = false;
}

/* ---- through the builder and ir_eval() ----------------------------------- */

/*
 * The folded value of @id. With @to_int, an f32 result stands for the
 * int64 a node of int64 inputs computes: it must be an integer f32 holds
 * exactly, or nothing is folded.
 */
static struct cval *folded(struct vtpu_graph *tg, int id,
			   void *data, bool to_int)
{
	struct vtpu_shape s;
	struct cval *cv;

	vtpu_graph_shape(tg, id, &s);
	if (!to_int || s.type != VTPU_F32)
		return onnx_cval_new(s.type, s.rank, s.dims, data, shape_elems(&s));
	cv = onnx_cval_alloc(VTPU_S64, s.rank, s.dims, shape_elems(&s));
	for (int64_t i = 0; cv && i < cv->n; i++) {
		float f = ((float *)data)[i];

		if (!(fabsf(f) <= F32_EXACT) || f != truncf(f)) {
			onnx_cval_free(cv);
			return NULL;
		}
		((int64_t *)cv->data)[i] = (int64_t)f;
	}
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

/*
 * Builds the node into a scratch graph, its inputs the host constants
 * (int64 ones as f32, see onnx_value()), and evaluates it. 1 when folded;
 * 0 (state restored) to build it normally.
 */
static int fold_graph(struct ctx *c, node_t *n, const struct opdef *d,
		      bool to_int)
{
	struct vtpu_graph *main_g = c->g, *tg;
	int saved[64], first = c->nv, ret;
	char *err = c->err;

	tg = vtpu_graph_new();
	if (!tg)
		return 0;
	for (size_t i = 0; i < n->n_input; i++) {
		struct val *v = n->input[i][0] ? onnx_lookup(c, n->input[i]) : NULL;

		saved[i] = v ? v->id : -1;
		if (v)
			v->id = -1;
	}
	c->g = tg;
	c->folding = true;
	c->err = NULL;		/* a failed fold is silent: build it normally */
	ret = d->fn(c, n, d);
	if (ret >= 0 && !c->failed)
		ret = fold_eval(c, tg, first, to_int);
	else
		ret = -EINVAL;
	c->g = main_g;
	c->folding = false;
	c->err = err;
	for (size_t i = 0; i < n->n_input; i++) {
		struct val *v = n->input[i][0] ? onnx_lookup(c, n->input[i]) : NULL;

		if (v)
			v->id = saved[i];
	}
	if (ret < 0)
		unfold(c, first);
	vtpu_graph_free(tg);
	return ret < 0 ? 0 : 1;
}

/* ---- integers that only move ---------------------------------------------- */

/* The operators that only move elements, and which inputs are their data. */
static const struct { const char *op; unsigned data; } moves[] = {
	{ "Reshape", 1 }, { "Flatten", 1 }, { "Squeeze", 1 }, { "Unsqueeze", 1 },
	{ "Transpose", 1 }, { "Slice", 1 }, { "Gather", 1 }, { "Expand", 1 },
	{ "Tile", 1 }, { "Split", 1 }, { "Concat", ~0u },
};

/*
 * The handler of an operator that only moves elements runs on f32
 * positions (exact below 2^24) in place of its integer data inputs; the
 * positions it returns pick the integers. Its other inputs (Reshape's
 * shape, Gather's indices, Slice's ends) keep their values.
 */
static int fold_moves(struct ctx *c, node_t *n, const struct opdef *d,
		      unsigned data)
{
	int dv[64];	/* indices in c->v, which the handler may move */
	struct cval *orig[64];
	int64_t off[64], total = 0;
	int nd = 0, first = c->nv, ret;

	for (size_t i = 0; i < n->n_input; i++) {
		struct val *v = n->input[i][0] ? onnx_lookup(c, n->input[i]) : NULL;
		bool seen = false;

		if (!v)
			continue;
		if (!(data >> (i < 31 ? i : 31) & 1)) {
			/* A parameter that is data too would read positions. */
			for (size_t j = 0; j < n->n_input; j++)
				if ((data >> (j < 31 ? j : 31) & 1) &&
				    !strcmp(n->input[i], n->input[j]))
					return 0;
			continue;
		}
		for (int k = 0; k < nd; k++)
			seen |= dv[k] == v - c->v;
		if (seen)
			continue;
		if (!is_int(v->c->type) || (nd && v->c->type != orig[0]->type))
			return 0;
		dv[nd] = (int)(v - c->v);
		orig[nd] = v->c;
		off[nd++] = total;
		total += v->c->n;
	}
	if (!nd || total > F32_EXACT)
		return 0;
	for (int k = 0; k < nd; k++) {
		struct cval *pos = onnx_cval_alloc(VTPU_F32, orig[k]->rank,
					      orig[k]->dims, orig[k]->n);

		for (int64_t j = 0; pos && j < pos->n; j++)
			((float *)pos->data)[j] = (float)(off[k] + j);
		c->v[dv[k]].c = pos ? pos : orig[k];
		if (!pos)
			nd = k;
	}
	ret = nd ? fold_graph(c, n, d, false) : 0;
	for (int k = 0; k < nd; k++) {
		if (c->v[dv[k]].c != orig[k])
			onnx_cval_free(c->v[dv[k]].c);
		c->v[dv[k]].c = orig[k];
	}
	for (int i = first; ret && i < c->nv; i++) {
		struct cval *p = c->v[i].c, *r;

		if (!p || p->type != VTPU_F32 ||
		    !(r = onnx_cval_alloc(orig[0]->type, p->rank, p->dims, p->n))) {
			ret = 0;
			break;
		}
		for (int64_t j = 0; j < p->n && ret; j++) {
			float f = ((float *)p->data)[j];
			int k = nd - 1;

			if (!(f >= 0 && f < total) || f != truncf(f)) {
				ret = 0;
				break;
			}
			while (off[k] > (int64_t)f)
				k--;
			put_int(r, j, get_int(orig[k], (int64_t)f - off[k]));
		}
		onnx_cval_free(p);
		c->v[i].c = r;
	}
	if (!ret)
		unfold(c, first);
	return ret;
}

/* ---- shape vectors, which may be empty ------------------------------------ */

/* A host constant of input @i, or NULL; empty ones too. */
static const struct cval *host(struct ctx *c, node_t *n, size_t i)
{
	struct val *v = onnx_has_in(n, i) ? onnx_lookup(c, n->input[i]) : NULL;

	return v && v->id < 0 ? v->c : NULL;
}

/* [x0][x1]...: rank-1 integer host constants, any of them empty. */
static int concat_vectors(struct ctx *c, node_t *n)
{
	int64_t cnt = 0, at = 0, axis = onnx_attr_i(n, "axis", 0);
	const struct cval *x;
	struct cval *y;

	if (axis != 0 && axis != -1)
		return 0;
	for (size_t i = 0; i < n->n_input; i++) {
		x = host(c, n, i);
		if (!x || x->rank != 1 || !is_int(x->type) ||
		    x->type != host(c, n, 0)->type)
			return 0;
		cnt += x->n;
	}
	if (!n->n_input || cnt > MAX_FOLD)
		return 0;
	y = onnx_cval_alloc(host(c, n, 0)->type, 1, &cnt, cnt);
	for (size_t i = 0; y && i < n->n_input; i++) {
		x = host(c, n, i);
		for (int64_t j = 0; j < x->n; j++)
			put_int(y, at++, get_int(x, j));
	}
	if (!y)
		return 0;
	return onnx_keep_const(c, n, y) ? -EINVAL : 1;
}

/* x[start:end:step] of a rank-1 integer host constant (opset 10 on). */
static int slice_vector(struct ctx *c, node_t *n)
{
	const struct cval *x = host(c, n, 0), *p[4];
	int64_t v[4] = { 0, 0, 0, 1 }, dim, b, e, k, cnt, at = 0;
	struct cval *y;

	if (c->opset < 10 || !x || x->rank != 1 || !is_int(x->type))
		return 0;
	for (int i = 0; i < 4; i++) {
		p[i] = host(c, n, i + 1);
		if ((i < 2 || onnx_has_in(n, i + 1)) &&
		    (!p[i] || p[i]->n != 1 || !is_int(p[i]->type)))
			return 0;
		if (p[i] && onnx_has_in(n, i + 1))
			v[i] = get_int(p[i], 0);
	}
	dim = x->n;
	if ((v[2] != 0 && v[2] != -1) || !(k = v[3]))
		return 0;	/* the handler says why */
	b = v[0] < 0 ? v[0] + dim : v[0];
	e = v[1] < 0 ? (v[1] < -dim ? -1 : v[1] + dim) : v[1];
	if (k > 0) {
		b = b < 0 ? 0 : b > dim ? dim : b;
		e = e < 0 ? 0 : e > dim ? dim : e;
		cnt = e > b ? (e - b + k - 1) / k : 0;
	} else {
		b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
		e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
		cnt = b > e ? (b - e - k - 1) / -k : 0;
	}
	y = onnx_cval_alloc(x->type, 1, &cnt, cnt);
	for (int64_t j = b; y && at < cnt; j += k)
		put_int(y, at++, get_int(x, j));
	if (!y)
		return 0;
	return onnx_keep_const(c, n, y) ? -EINVAL : 1;
}

/* ---- integer arithmetic ---------------------------------------------------- */

enum { I_ADD, I_SUB, I_MUL, I_DIV, I_MOD, I_MIN, I_MAX, I_NEG, I_ABS,
       I_SIGN, I_EQ, I_LT, I_LE, I_GT, I_GE, I_NOT, I_AND, I_OR, I_XOR,
       I_WHERE };

/* nin -1: variadic, folded left to right. I_EQ to I_XOR give bool. */
static const struct { const char *op; int fn, nin; } ariths[] = {
	{ "Add", I_ADD, 2 }, { "Sub", I_SUB, 2 }, { "Mul", I_MUL, 2 },
	{ "Div", I_DIV, 2 }, { "Mod", I_MOD, 2 }, { "Min", I_MIN, -1 },
	{ "Max", I_MAX, -1 }, { "Sum", I_ADD, -1 }, { "Neg", I_NEG, 1 },
	{ "Abs", I_ABS, 1 }, { "Sign", I_SIGN, 1 }, { "Equal", I_EQ, 2 },
	{ "Less", I_LT, 2 }, { "LessOrEqual", I_LE, 2 }, { "Greater", I_GT, 2 },
	{ "GreaterOrEqual", I_GE, 2 }, { "Not", I_NOT, 1 }, { "And", I_AND, 2 },
	{ "Or", I_OR, 2 }, { "Xor", I_XOR, 2 }, { "Where", I_WHERE, 3 },
};

/* One element: 0, or -1 where the result is undefined (x / 0). */
static int arith(int fn, bool fmod_, const int64_t *x, int nx, int64_t *y)
{
	uint64_t a = (uint64_t)x[0], b = nx > 1 ? (uint64_t)x[1] : 0;

	switch (fn) {
	/* Two's complement wrap-around, as ONNX Runtime computes. */
	case I_ADD: *y = (int64_t)(a + b); break;
	case I_SUB: *y = (int64_t)(a - b); break;
	case I_MUL: *y = (int64_t)(a * b); break;
	case I_NEG: *y = (int64_t)(0 - a); break;
	case I_ABS: *y = x[0] < 0 ? (int64_t)(0 - a) : x[0]; break;
	case I_SIGN: *y = (x[0] > 0) - (x[0] < 0); break;
	case I_DIV:	/* truncates toward zero */
		if (!x[1])
			return -1;
		*y = x[1] == -1 ? (int64_t)(0 - a) : x[0] / x[1];
		break;
	case I_MOD:	/* fmod: the dividend's sign; else the divisor's */
		if (!x[1])
			return -1;
		*y = x[1] == -1 ? 0 : x[0] % x[1];
		if (!fmod_ && *y && (*y < 0) != (x[1] < 0))
			*y += x[1];
		break;
	case I_MIN: *y = x[0] < x[1] ? x[0] : x[1]; break;
	case I_MAX: *y = x[0] > x[1] ? x[0] : x[1]; break;
	case I_EQ: *y = x[0] == x[1]; break;
	case I_LT: *y = x[0] < x[1]; break;
	case I_LE: *y = x[0] <= x[1]; break;
	case I_GT: *y = x[0] > x[1]; break;
	case I_GE: *y = x[0] >= x[1]; break;
	case I_NOT: *y = !x[0]; break;
	case I_AND: *y = x[0] && x[1]; break;
	case I_OR: *y = x[0] || x[1]; break;
	case I_XOR: *y = !x[0] != !x[1]; break;
	case I_WHERE: *y = x[0] ? x[1] : x[2]; break;
	}
	return 0;
}

/* The numpy broadcast of @nc constants' shapes; false if they do not. */
static bool bcast_shape(const struct cval **cv, int nc, int *rank,
			int64_t *dims)
{
	*rank = 0;
	for (int k = 0; k < nc; k++)
		*rank = cv[k]->rank > *rank ? cv[k]->rank : *rank;
	for (int i = 0; i < *rank; i++)
		dims[i] = 1;
	for (int k = 0; k < nc; k++)
		for (int i = 0; i < cv[k]->rank; i++) {
			int64_t *dd = &dims[i + *rank - cv[k]->rank];

			if (*dd == 1)
				*dd = cv[k]->dims[i];
			else if (cv[k]->dims[i] != 1 && cv[k]->dims[i] != *dd)
				return false;
		}
	return true;
}

/* Element @flat of the broadcast result, as an index into @cv. */
static int64_t bcast_index(const struct cval *cv, int rank, const int64_t *dims,
			   int64_t flat)
{
	int64_t at = 0, stride = 1;

	for (int i = rank - 1, j = cv->rank - 1; i >= 0; i--, j--) {
		int64_t k = flat % dims[i];

		flat /= dims[i];
		if (j >= 0 && cv->dims[j] != 1)
			at += k * stride;
		if (j >= 0)
			stride *= cv->dims[j];
	}
	return at;
}

static int fold_arith(struct ctx *c, node_t *n, int op)
{
	const struct cval *cv[64];
	int nc = 0, rank, fn = ariths[op].fn;
	bool fmod_ = onnx_attr_i(n, "fmod", 0) != 0;
	int64_t dims[R], cnt;
	enum vtpu_type type;
	struct cval *y;

	/* Before opset 7, broadcast=1 meant a different alignment. */
	if (onnx_attr(n, "broadcast") || n->n_output != 1)
		return 0;
	for (size_t i = 0; i < n->n_input && i < 64; i++) {
		if (!n->input[i][0])
			return 0;
		cv[nc++] = onnx_lookup(c, n->input[i])->c;
	}
	if (ariths[op].nin < 0 ? nc < 1 : nc != ariths[op].nin)
		return 0;
	if (!bcast_shape(cv, nc, &rank, dims) ||
	    (cnt = onnx_prod(dims, 0, rank)) > MAX_FOLD)
		return 0;
	type = fn >= I_EQ && fn <= I_XOR ? VTPU_PRED : cv[fn == I_WHERE]->type;
	y = onnx_cval_alloc(type, rank, dims, cnt);
	if (!y)
		return 0;
	for (int64_t j = 0; j < cnt; j++) {
		int64_t x[3], r = 0;

		for (int k = 0; k < nc; k++) {
			int64_t e = get_int(cv[k], bcast_index(cv[k], rank, dims, j));

			if (k == 0 || ariths[op].nin >= 0) {
				x[k < 3 ? k : 2] = e;
				continue;
			}
			x[1] = e;	/* variadic: accumulate in x[0] */
			arith(fn, fmod_, x, 2, &x[0]);
		}
		if (ariths[op].nin >= 0 && arith(fn, fmod_, x, nc, &r)) {
			onnx_cval_free(y);
			return 0;	/* built as is, the device decides */
		}
		put_int(y, j, ariths[op].nin < 0 ? x[0] : r);
	}
	return onnx_keep_const(c, n, y) ? -EINVAL : 1;
}

/* Cast of integers: to int64, int32, bool or float. */
static int fold_cast(struct ctx *c, node_t *n)
{
	const struct cval *x = onnx_lookup(c, n->input[0])->c;
	int to = (int)onnx_attr_i(n, "to", 0);
	bool ok;
	enum vtpu_type t = onnx_type(to, &ok);
	struct cval *y;

	if (!ok || t == VTPU_BF16 || n->n_input != 1)
		return 0;
	y = onnx_cval_alloc(t, x->rank, x->dims, x->n);
	if (!y)
		return 0;
	for (int64_t j = 0; j < x->n; j++)
		put_int(y, j, get_int(x, j));
	return onnx_keep_const(c, n, y) ? -EINVAL : 1;
}

/* 1 when folded exactly, 0 when this node is not one for us. */
static int fold_int(struct ctx *c, node_t *n, const struct opdef *d)
{
	for (size_t i = 0; i < ARRAY_SIZE(moves); i++)
		if (!strcmp(moves[i].op, d->name))
			return fold_moves(c, n, d, moves[i].data);
	for (size_t i = 0; i < ARRAY_SIZE(ariths); i++)
		if (!strcmp(ariths[i].op, d->name))
			return fold_arith(c, n, (int)i);
	if (!strcmp(d->name, "Cast"))
		return fold_cast(c, n);
	return 0;
}

/* ---- which nodes fold, and how --------------------------------------------- */

/*
 * Whether every input of @n is a host constant (small enough to fold),
 * and what types they are.
 */
static bool foldable(struct ctx *c, node_t *n, const struct opdef *d,
		     bool *has_s64, bool *has_float, bool *f32_exact)
{
	static const char *const never =
		"Constant,ConstantOfShape,Shape,Size,Identity,Dropout,If,Loop,Scan";

	*has_s64 = *has_float = false;
	*f32_exact = true;
	/*
	 * The first input is one no operator folded here may go without:
	 * absent (an empty name), the node is built, and refused there.
	 */
	if (onnx_in_list(never, d->name) || !n->n_input || n->n_input > 64 ||
	    !n->input[0][0])
		return false;
	for (size_t i = 0; i < n->n_input; i++) {
		struct val *v = n->input[i][0] ? onnx_lookup(c, n->input[i]) : NULL;

		if (!n->input[i][0])
			continue;
		if (!v || !v->c || !v->c->n || v->c->n > MAX_FOLD)
			return false;
		*has_s64 |= v->c->type == VTPU_S64;
		*has_float |= !is_int(v->c->type);
		for (int64_t j = 0; v->c->type == VTPU_S64 && j < v->c->n; j++) {
			int64_t x = get_int(v->c, j);

			*f32_exact &= x >= -F32_EXACT && x <= F32_EXACT;
		}
	}
	return true;
}

/*
 * Folds a node whose inputs are all host constants: 1 when folded (its
 * outputs are host constants), 0 to build it normally, -errno on error.
 */
int onnx_fold(struct ctx *c, node_t *n, const struct opdef *d)
{
	bool has_s64, has_float, f32_exact;
	int ret;

	/* Shape vectors, empty ones too, which the builder cannot hold. */
	if (!strcmp(d->name, "Concat") && (ret = concat_vectors(c, n)))
		return ret;
	if (!strcmp(d->name, "Slice") && (ret = slice_vector(c, n)))
		return ret;

	if (!foldable(c, n, d, &has_s64, &has_float, &f32_exact))
		return 0;
	if (!has_float) {
		ret = fold_int(c, n, d);
		if (ret)
			return ret;
		if (!f32_exact)
			return 0;
	}
	/* f32 results are int64 ones only when no input was really float. */
	return fold_graph(c, n, d, has_s64 && !has_float &&
			  strcmp(d->name, "Cast") != 0);
}
