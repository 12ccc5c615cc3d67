// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/sequence.c - ONNX sequences whose length is known at compile time.
 */
#include "common.h"

/* ---- sequences --------------------------------------------------------------- */

/*
 * Sequences whose length and positions are known at compile time, as the
 * tensors of models without loops are: a sequence is a list of values,
 * and each operator builds a new list.
 */
#define MAX_SEQ	1024

static const struct seq *seq_in(struct ctx *c, node_t *n, size_t i)
{
	struct val *v = onnx_has_in(n, i) ? onnx_lookup(c, n->input[i]) : NULL;

	if (!v || !v->s) {
		onnx_fail(c, "input %zu is not a sequence", i);
		return NULL;
	}
	return v->s;
}

static int seq_out(struct ctx *c, node_t *n, const int *ids, int cnt)
{
	struct seq *sq;

	if (cnt > MAX_SEQ)
		return onnx_fail(c, "unsupported sequence of %d tensors (at most %d)",
				 cnt, MAX_SEQ);
	sq = malloc(sizeof(*sq) + (cnt + 1) * sizeof(int));
	if (!sq)
		return onnx_fail(c, "out of memory");
	sq->n = cnt;
	if (cnt)
		memcpy(sq->ids, ids, cnt * sizeof(int));
	if (n->n_output < 1 || onnx_define(c, n->output[0], -1, NULL)) {
		free(sq);
		return n->n_output < 1 ? onnx_fail(c, "missing output 0") : -ENOMEM;
	}
	c->v[c->nv - 1].s = sq;
	return 0;
}

/* Position input @i (default @def) in [lo, hi], negatives from the end. */
static int seq_pos(struct ctx *c, node_t *n, size_t i, int64_t def,
		   int64_t len, int64_t hi)
{
	int64_t p = def;

	if (onnx_has_in(n, i) && onnx_in_ints(c, n, i, &p, 1, "position") != 1)
		return c->failed ? -EINVAL : onnx_fail(c, "position must be a scalar");
	if (p < 0)
		p += len;
	if (p < 0 || p > hi)
		return onnx_fail(c, "position %lld out of range", (long long)p);
	return (int)p;
}

int onnx_op_seq_construct(struct ctx *c, node_t *n, const struct opdef *d)
{
	int ids[MAX_SEQ];

	(void)d;
	if (n->n_input > MAX_SEQ)
		return onnx_fail(c, "too many inputs");
	for (size_t i = 0; i < n->n_input; i++)
		if ((ids[i] = onnx_in(c, n, i)) < 0)
			return ids[i];
	return seq_out(c, n, ids, (int)n->n_input);
}

/* SequenceInsert (arg 1), SequenceErase (arg 0). */
int onnx_op_seq_edit(struct ctx *c, node_t *n, const struct opdef *d)
{
	const struct seq *sq = seq_in(c, n, 0);
	int ids[MAX_SEQ + 1], p, t = -1, k = 0;

	if (!sq)
		return -EINVAL;
	if (d->arg && (t = onnx_in(c, n, 1)) < 0)
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

int onnx_op_seq_at(struct ctx *c, node_t *n, const struct opdef *d)
{
	const struct seq *sq = seq_in(c, n, 0);
	int p;

	(void)d;
	if (!sq)
		return -EINVAL;
	if (!onnx_has_in(n, 1))
		return onnx_fail(c, "missing position");
	p = seq_pos(c, n, 1, 0, sq->n, sq->n - 1);
	return p < 0 ? p : onnx_out(c, n, 0, sq->ids[p]);
}

int onnx_op_seq_length(struct ctx *c, node_t *n, const struct opdef *d)
{
	const struct seq *sq = seq_in(c, n, 0);
	int64_t len;

	(void)d;
	if (!sq)
		return -EINVAL;
	len = sq->n;
	return onnx_keep_const(c, n, onnx_cval_new(VTPU_S64, 0, NULL, &len, 1));
}

int onnx_op_seq_empty(struct ctx *c, node_t *n, const struct opdef *d)
{
	(void)d;
	return seq_out(c, n, NULL, 0);
}

/* ConcatFromSequence: a Concat, or a Stack with new_axis = 1. */
int onnx_op_concat_from_seq(struct ctx *c, node_t *n, const struct opdef *d)
{
	const struct seq *sq = seq_in(c, n, 0);
	bool stack = onnx_attr_i(n, "new_axis", 0) != 0;
	int ids[MAX_SEQ], ax;
	struct vtpu_shape s;

	(void)d;
	if (!sq)
		return -EINVAL;
	if (!sq->n)
		return onnx_fail(c, "empty sequence");
	s = onnx_shape_of(c, sq->ids[0]);
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", 0), s.rank + stack);
	if (ax < 0)
		return ax;
	for (int i = 0; i < sq->n; i++) {
		ids[i] = sq->ids[i];
		if (stack) {
			int64_t t[R];

			s = onnx_shape_of(c, ids[i]);
			if (s.rank + 1 > R)
				return onnx_fail(c, "result rank exceeds %d", R);
			for (int j = 0, k = 0; j <= s.rank; j++)
				t[j] = j == ax ? 1 : s.dims[k++];
			if ((ids[i] = onnx_reshape(c, ids[i], s.rank + 1, t)) < 0)
				return ids[i];
		}
	}
	return onnx_out(c, n, 0, sq->n == 1 ? ids[0] :
			onnx_chk(c, vtpu_g_concat(c->g, sq->n, ids, ax)));
}

/* SplitToSequence: chunks of the split sizes (default 1, then squeezed). */
int onnx_op_split_to_seq(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax, ids[MAX_SEQ], cnt = 0, m = -1;
	int64_t sz[MAX_SEQ], lo[R] = { 0 }, lim[R], step[R], at = 0;
	bool squeeze = false;
	struct vtpu_shape s;
	const struct cval *cv;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", 0), s.rank);
	if (ax < 0)
		return ax;
	if (onnx_has_in(n, 1)) {
		if (!(cv = onnx_cin(c, n, 1, "split")))
			return -EINVAL;
		m = onnx_cv_ints(c, cv, sz, MAX_SEQ, "split");
		if (m < 0)
			return m;
		if (cv->rank == 0) {	/* one size: chunks of it, the last smaller */
			int64_t part = sz[0];

			if (part < 1)
				return onnx_fail(c, "bad split size %lld", (long long)part);
			for (m = 0; m * part < s.dims[ax] && m < MAX_SEQ; m++)
				sz[m] = part < s.dims[ax] - m * part ? part :
					s.dims[ax] - m * part;
		}
	} else {
		squeeze = onnx_attr_i(n, "keepdims", 1) == 0;
		if (s.dims[ax] > MAX_SEQ)
			return onnx_fail(c, "unsupported split into %lld tensors",
					 (long long)s.dims[ax]);
		for (m = 0; m < s.dims[ax]; m++)
			sz[m] = 1;
	}
	for (int i = 0; i < s.rank; i++)
		lim[i] = s.dims[i], step[i] = 1;
	for (int i = 0; i < m; i++) {
		int y;

		if (sz[i] < 1 || at + sz[i] > s.dims[ax])
			return onnx_fail(c, "bad split size %lld", (long long)sz[i]);
		lo[ax] = at;
		lim[ax] = at += sz[i];
		y = onnx_chk(c, vtpu_g_slice(c->g, x, lo, lim, step));
		if (y >= 0 && squeeze) {
			int64_t t[R];

			for (int j = 0, k = 0; j < s.rank; j++)
				if (j != ax)
					t[k++] = s.dims[j];
			y = onnx_reshape(c, y, s.rank - 1, t);
		}
		if ((ids[cnt++] = y) < 0)
			return y;
	}
	if (at != s.dims[ax])
		return onnx_fail(c, "split sizes do not cover the axis");
	return seq_out(c, n, ids, cnt);
}
