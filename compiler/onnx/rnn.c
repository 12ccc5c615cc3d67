// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/rnn.c - RNN, GRU and LSTM, unrolled over the sequence.
 */
#include "common.h"

/* Columns [g * h, (g + 1) * h) of a [rows, G * h] value: one gate. */
static int gate(struct ctx *c, int v, int g, int64_t h)
{
	struct vtpu_shape s = onnx_shape_of(c, v);
	int64_t st[2] = { 0, g * h }, lim[2] = { s.dims[0], (g + 1) * h };
	int64_t step[2] = { 1, 1 };

	return v < 0 ? v : onnx_chk(c, vtpu_g_slice(c->g, v, st, lim, step));
}

/* [D, ...] -> [...]: direction @dir's slice of a weight or state. */
static int dir_slice(struct ctx *c, int v, int dir, int ndir)
{
	struct vtpu_shape s = onnx_shape_of(c, v);
	int64_t st[R] = { 0 }, lim[R], step[R];

	if (v < 0)
		return v;
	if (s.rank < 1 || s.dims[0] != ndir)
		return onnx_fail(c, "wants %d direction(s) in dimension 0", ndir);
	for (int i = 0; i < s.rank; i++)
		lim[i] = s.dims[i], step[i] = 1;
	st[0] = dir;
	lim[0] = dir + 1;
	if (ndir > 1)
		v = onnx_chk(c, vtpu_g_slice(c->g, v, st, lim, step));
	return v < 0 ? v : onnx_reshape(c, v, s.rank - 1, s.dims + 1);
}

/*
 * Whether @v (one direction's, from dir_slice()) is [@d0] (@rank 1) or
 * [@d0, @d1]: the operator definition's shape, which unroll() slices
 * and multiplies by without looking again.
 */
static int want_shape(struct ctx *c, int v, int rank, int64_t d0, int64_t d1,
		      const char *what)
{
	struct vtpu_shape s;

	if (v < 0)
		return v;
	s = onnx_shape_of(c, v);
	if (s.rank != rank || s.dims[0] != d0 || (rank > 1 && s.dims[1] != d1)) {
		if (rank == 1)
			return onnx_fail(c, "%s must be [%lld] per direction", what,
					 (long long)d0);
		return onnx_fail(c, "%s must be [%lld, %lld] per direction", what,
				 (long long)d0, (long long)d1);
	}
	return v;
}

/*
 * Steps a layer unrolls: each is a few kernels, so a thousand keep a
 * two-layer bidirectional LSTM far inside the program's instruction
 * limit, and its compile time in seconds.
 */
#define RNN_MAX_STEPS	1024

/* The activation functions the ONNX recurrent operators name. */
enum act_fn {
	ACT_SIGMOID, ACT_TANH, ACT_RELU, ACT_AFFINE, ACT_LEAKY_RELU,
	ACT_THRESHOLDED_RELU, ACT_SCALED_TANH, ACT_HARD_SIGMOID, ACT_ELU,
	ACT_SOFTSIGN, ACT_SOFTPLUS,
};

static const struct {
	const char *name;
	bool alpha, beta;	/* which of activation_alpha/beta it takes */
	float a, b;		/* their defaults, the operators' own */
} act_fns[] = {
	[ACT_SIGMOID] = { "Sigmoid" },
	[ACT_TANH] = { "Tanh" },
	[ACT_RELU] = { "Relu" },
	[ACT_AFFINE] = { "Affine", true, true, 1.0f, 0.0f },
	[ACT_LEAKY_RELU] = { "LeakyRelu", true, false, 0.01f },
	[ACT_THRESHOLDED_RELU] = { "ThresholdedRelu", true, false, 1.0f },
	[ACT_SCALED_TANH] = { "ScaledTanh", true, true, 1.0f, 1.0f },
	[ACT_HARD_SIGMOID] = { "HardSigmoid", true, true, 0.2f, 0.5f },
	[ACT_ELU] = { "Elu", true, false, 1.0f },
	[ACT_SOFTSIGN] = { "Softsign" },
	[ACT_SOFTPLUS] = { "Softplus" },
};

struct act {
	enum act_fn fn;
	float a, b;
};

/* One direction of a recurrent layer: its weights and its results. */
struct rnn_dir {
	int w, r, b, h, c, peep;	/* inputs, this direction's; -1: absent */
	struct act f[3];		/* f, g, h of the operator's formulas */
	int ys[RNN_MAX_STEPS];		/* Y's steps, in time order */
};

struct rnn {
	int cell, ng, x;
	bool batch_first, lbr, input_forget;
	float clip;			/* 0: none */
	int64_t hs, seq, batch, in;
};

/* @fn applied to @v, after the cell clip: "applied to the input of activations" */
static int act(struct ctx *c, const struct rnn *l, const struct act *fn, int v)
{
	int p;

	if (v < 0)
		return v;
	if (l->clip > 0) {
		v = onnx_binary(c, VTPU_MIN, v, onnx_splat(c, l->clip, v));
		v = onnx_binary(c, VTPU_MAX, v, onnx_splat(c, -l->clip, v));
	}
	switch (fn->fn) {
	case ACT_SIGMOID:
		return onnx_chk(c, vtpu_g_unary(c->g, VTPU_LOGISTIC, v));
	case ACT_TANH:
		return onnx_chk(c, vtpu_g_unary(c->g, VTPU_TANH, v));
	case ACT_RELU:
		return onnx_chk(c, vtpu_g_unary(c->g, VTPU_RELU, v));
	case ACT_AFFINE:
		return onnx_binary(c, VTPU_ADD, onnx_binary(c, VTPU_MUL, v,
						onnx_splat(c, fn->a, v)),
				   onnx_splat(c, fn->b, v));
	case ACT_LEAKY_RELU:
		p = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, v, onnx_splat(c, 0, v)));
		return p < 0 ? p : onnx_chk(c, vtpu_g_select(c->g, p, v,
				onnx_binary(c, VTPU_MUL, v, onnx_splat(c, fn->a, v))));
	case ACT_THRESHOLDED_RELU:
		p = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, v, onnx_splat(c, fn->a, v)));
		return p < 0 ? p : onnx_chk(c, vtpu_g_select(c->g, p, v,
							     onnx_splat(c, 0, v)));
	case ACT_SCALED_TANH:
		v = onnx_binary(c, VTPU_MUL, v, onnx_splat(c, fn->b, v));
		v = v < 0 ? v : onnx_chk(c, vtpu_g_unary(c->g, VTPU_TANH, v));
		return onnx_binary(c, VTPU_MUL, v, onnx_splat(c, fn->a, v));
	case ACT_HARD_SIGMOID:
		v = onnx_binary(c, VTPU_ADD, onnx_binary(c, VTPU_MUL, v,
						onnx_splat(c, fn->a, v)),
				onnx_splat(c, fn->b, v));
		v = onnx_binary(c, VTPU_MIN, v, onnx_splat(c, 1, v));
		return onnx_binary(c, VTPU_MAX, v, onnx_splat(c, 0, v));
	case ACT_ELU:
		p = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, v, onnx_splat(c, 0, v)));
		return p < 0 ? p : onnx_chk(c, vtpu_g_select(c->g, p, v,
			onnx_binary(c, VTPU_MUL, onnx_splat(c, fn->a, v),
				onnx_binary(c, VTPU_SUB,
					onnx_chk(c, vtpu_g_unary(c->g, VTPU_EXP, v)),
					onnx_splat(c, 1, v)))));
	case ACT_SOFTSIGN:
		p = onnx_chk(c, vtpu_g_unary(c->g, VTPU_ABS, v));
		p = onnx_binary(c, VTPU_ADD, p, onnx_splat(c, 1, v));
		return onnx_binary(c, VTPU_DIV, v, p);
	case ACT_SOFTPLUS:
		p = onnx_binary(c, VTPU_ADD, onnx_chk(c, vtpu_g_unary(c->g, VTPU_EXP, v)),
				onnx_splat(c, 1, v));
		return p < 0 ? p : onnx_chk(c, vtpu_g_unary(c->g, VTPU_LOG, p));
	}
	return -EINVAL;
}

/*
 * The activations attribute: @per functions a direction (f; f, g; or f,
 * g, h), forward's then reverse's; without it the operator's defaults.
 * activation_alpha and activation_beta are taken in order by the
 * functions that have such a parameter, as ONNX Runtime reads them; a
 * function past the end of a list keeps its operator's default.
 */
static int activations(struct ctx *c, node_t *n, int cell, int nd,
		       struct rnn_dir *dirs)
{
	static const enum act_fn defs[3][3] = {
		[CELL_RNN] = { ACT_TANH },
		[CELL_GRU] = { ACT_SIGMOID, ACT_TANH },
		[CELL_LSTM] = { ACT_SIGMOID, ACT_TANH, ACT_TANH },
	};
	const Onnx__AttributeProto *names = onnx_attr(n, "activations");
	const Onnx__AttributeProto *al = onnx_attr(n, "activation_alpha");
	const Onnx__AttributeProto *be = onnx_attr(n, "activation_beta");
	int per = cell == CELL_RNN ? 1 : cell == CELL_GRU ? 2 : 3;
	size_t ia = 0, ib = 0;

	if (names && names->n_strings != (size_t)(per * nd))
		return onnx_fail(c, "wants %d activations, has %zu", per * nd,
				 names->n_strings);
	for (int k = 0; k < nd; k++) {
		for (int i = 0; i < per; i++) {
			struct act *f = &dirs[k].f[i];
			const ProtobufCBinaryData *s;
			size_t j;

			f->fn = defs[cell][i];
			if (names) {
				s = &names->strings[k * per + i];
				for (j = 0; j < sizeof(act_fns) / sizeof(act_fns[0]); j++)
					if (strlen(act_fns[j].name) == s->len &&
					    !strncasecmp(act_fns[j].name,
							 (const char *)s->data, s->len))
						break;
				if (j == sizeof(act_fns) / sizeof(act_fns[0]))
					return onnx_fail(c, "unsupported activation %.*s",
							 (int)s->len, (const char *)s->data);
				f->fn = (enum act_fn)j;
			}
			f->a = act_fns[f->fn].a;
			f->b = act_fns[f->fn].b;
			if (act_fns[f->fn].alpha && al && ia < al->n_floats)
				f->a = al->floats[ia++];
			if (act_fns[f->fn].beta && be && ib < be->n_floats)
				f->b = be->floats[ib++];
		}
	}
	return 0;
}

/*
 * One direction unrolled (@reverse: from the last step back): one matmul
 * of every step's input against all the gates' weights, then per step one
 * of the hidden state, then the gates' elementwise formulas from the
 * ONNX operator definitions. Leaves the last states in @d->h and @d->c.
 */
static int unroll(struct ctx *c, const struct rnn *l, struct rnn_dir *d,
		  bool reverse)
{
	static const int tr2[2] = { 1, 0 };
	int cell = l->cell, ng = l->ng, wt, rt, bw = -1, br = -1, gxs;
	int hprev = d->h, cprev = d->c, peep = d->peep;
	int64_t hs = l->hs, t2[2], t3[3], t4[4];

	wt = onnx_chk(c, vtpu_g_transpose(c->g, d->w, tr2));	/* [input, G * H] */
	rt = onnx_chk(c, vtpu_g_transpose(c->g, d->r, tr2));	/* [H, G * H] */
	if (d->b >= 0) {	/* [2 * G * H] */
		int64_t st[1] = { 0 }, lim[1] = { ng * hs }, step[1] = { 1 };

		bw = onnx_chk(c, vtpu_g_slice(c->g, d->b, st, lim, step));
		st[0] = ng * hs, lim[0] = 2 * ng * hs;
		br = onnx_chk(c, vtpu_g_slice(c->g, d->b, st, lim, step));
		t2[0] = 1, t2[1] = ng * hs;
		bw = bw < 0 ? bw : onnx_reshape(c, bw, 2, t2);
		br = br < 0 ? br : onnx_reshape(c, br, 2, t2);
		if (bw < 0 || br < 0)
			return -EINVAL;
	}
	if (wt < 0 || rt < 0 || hprev < 0 || (cell == CELL_LSTM && cprev < 0))
		return -EINVAL;
	/*
	 * The input's part of every step does not depend on the state: one
	 * matmul of all the steps' rows at once (each element the same sum
	 * as a step's own matmul would give), so its weights pass once and
	 * a step's matmul is only the state's.
	 */
	t2[0] = l->seq * l->batch, t2[1] = l->in;
	gxs = onnx_reshape(c, l->x, 2, t2);
	gxs = gxs < 0 ? gxs : onnx_matmul(c, gxs, wt);
	if (gxs >= 0 && bw >= 0)
		gxs = onnx_binary(c, VTPU_ADD, gxs, bw);
	t3[0] = l->batch_first ? l->batch : l->seq;
	t3[1] = l->batch_first ? l->seq : l->batch;
	t3[2] = ng * hs;
	gxs = gxs < 0 ? gxs : onnx_reshape(c, gxs, 3, t3);
	if (gxs < 0)
		return -EINVAL;
	for (int64_t k = 0; k < l->seq; k++) {
		int64_t t = reverse ? l->seq - 1 - k : k;
		int64_t st[3] = { 0 }, lim[3], step[3] = { 1, 1, 1 };
		int gx, gh, h;

		memcpy(lim, t3, sizeof(lim));
		st[l->batch_first ? 1 : 0] = t;
		lim[l->batch_first ? 1 : 0] = t + 1;
		gx = onnx_chk(c, vtpu_g_slice(c->g, gxs, st, lim, step));
		gx = gx < 0 ? gx : onnx_reshape(c, gx, 2, (int64_t[2]){ l->batch, ng * hs });
		gh = onnx_matmul(c, hprev, rt);
		if (gh >= 0 && br >= 0)
			gh = onnx_binary(c, VTPU_ADD, gh, br);
		if (gx < 0 || gh < 0)
			return -EINVAL;
		if (cell == CELL_RNN) {
			h = act(c, l, &d->f[0], onnx_binary(c, VTPU_ADD, gx, gh));
		} else if (cell == CELL_GRU) {
			int z = act(c, l, &d->f[0],
				    onnx_binary(c, VTPU_ADD, gate(c, gx, 0, hs),
						gate(c, gh, 0, hs)));
			int rg = act(c, l, &d->f[0],
				     onnx_binary(c, VTPU_ADD, gate(c, gx, 1, hs),
						 gate(c, gh, 1, hs)));
			int hh;

			if (l->lbr) {
				hh = onnx_binary(c, VTPU_MUL, rg, gate(c, gh, 2, hs));
			} else {
				/* (r * H) . Rh + Rbh: the reset gate first */
				int rh = gate(c, rt, 2, hs);

				hh = onnx_matmul(c, onnx_binary(c, VTPU_MUL, rg, hprev), rh);
				if (hh >= 0 && br >= 0)
					hh = onnx_binary(c, VTPU_ADD, hh, gate(c, br, 2, hs));
			}
			hh = act(c, l, &d->f[1],
				 onnx_binary(c, VTPU_ADD, gate(c, gx, 2, hs), hh));
			/* H = (1 - z) * hh + z * H_prev = hh + z * (H_prev - hh) */
			h = onnx_binary(c, VTPU_ADD, hh, onnx_binary(c, VTPU_MUL, z,
					onnx_binary(c, VTPU_SUB, hprev, hh)));
		} else {
			int g = onnx_binary(c, VTPU_ADD, gx, gh), ig, og, fg, cg, cc;

			ig = gate(c, g, 0, hs);
			og = gate(c, g, 1, hs);
			fg = gate(c, g, 2, hs);
			cg = gate(c, g, 3, hs);
			if (peep >= 0) {
				int64_t pst[1] = { 0 }, plim[1] = { hs }, pstep[1] = { 1 };
				int pi = onnx_chk(c, vtpu_g_slice(c->g, peep, pst, plim, pstep));

				pst[0] = 2 * hs, plim[0] = 3 * hs;
				ig = onnx_binary(c, VTPU_ADD, ig, onnx_binary(c, VTPU_MUL, pi, cprev));
				fg = onnx_binary(c, VTPU_ADD, fg, onnx_binary(c, VTPU_MUL,
					onnx_chk(c, vtpu_g_slice(c->g, peep, pst, plim, pstep)),
					cprev));
			}
			ig = act(c, l, &d->f[0], ig);
			/* input_forget couples them: f = 1 - i, as ONNX Runtime */
			fg = l->input_forget ?
			     onnx_binary(c, VTPU_SUB, onnx_splat(c, 1, ig), ig) :
			     act(c, l, &d->f[0], fg);
			cc = onnx_binary(c, VTPU_ADD,
					 onnx_binary(c, VTPU_MUL, fg, cprev),
					 onnx_binary(c, VTPU_MUL, ig,
						     act(c, l, &d->f[1], cg)));
			if (peep >= 0) {
				int64_t pst[1] = { hs }, plim[1] = { 2 * hs }, pstep[1] = { 1 };

				og = onnx_binary(c, VTPU_ADD, og, onnx_binary(c, VTPU_MUL,
					onnx_chk(c, vtpu_g_slice(c->g, peep, pst, plim, pstep)),
					cc));
			}
			h = onnx_binary(c, VTPU_MUL, act(c, l, &d->f[0], og),
					act(c, l, &d->f[2], cc));
			cprev = cc;
		}
		if (h < 0 || c->failed)
			return -EINVAL;
		hprev = h;
		/* Y's step: [1, 1, batch, H] or, batch first, [batch, 1, 1, H] */
		if (l->batch_first)
			t4[0] = l->batch, t4[1] = 1, t4[2] = 1, t4[3] = hs;
		else
			t4[0] = 1, t4[1] = 1, t4[2] = l->batch, t4[3] = hs;
		d->ys[t] = onnx_reshape(c, h, 4, t4);
		if (d->ys[t] < 0)
			return -EINVAL;
	}
	d->h = hprev;
	d->c = cprev;
	return 0;
}

/* The directions' values @v[0..nd) joined along @axis (one: as is). */
static int join(struct ctx *c, int nd, int *v, int axis)
{
	return nd == 1 ? v[0] : onnx_chk(c, vtpu_g_concat(c->g, nd, v, axis));
}

/*
 * RNN, GRU and LSTM (forward, reverse or bidirectional; default
 * activations), each direction unrolled over the sequence.
 */
int onnx_op_rnn(struct ctx *c, node_t *n, const struct opdef *d)
{
	struct rnn l = { .cell = d->arg };
	struct rnn_dir dirs[2];
	int nd = 1, y[2], steps[RNN_MAX_STEPS];
	bool rev = onnx_attr_s_is(n, "direction", "forward", "reverse");
	int64_t t3[3];
	struct vtpu_shape sx;

	l.ng = l.cell == CELL_RNN ? 1 : l.cell == CELL_GRU ? 3 : 4;
	l.x = onnx_in(c, n, 0);
	l.batch_first = onnx_attr_i(n, "layout", 0) != 0;
	l.lbr = onnx_attr_i(n, "linear_before_reset", 0) != 0;
	l.hs = onnx_attr_i(n, "hidden_size", 0);
	if (onnx_attr_s_is(n, "direction", "forward", "bidirectional"))
		nd = 2;
	else if (!rev && !onnx_attr_s_is(n, "direction", "forward", "forward"))
		return onnx_fail(c, "unsupported direction");
	if (l.x < 0)
		return -EINVAL;
	l.input_forget = onnx_attr_i(n, "input_forget", 0) != 0;
	l.clip = onnx_attr_f(n, "clip", 0.0f);
	if (onnx_attr(n, "clip") && !(l.clip > 0))
		return onnx_fail(c, "clip must be positive");
	if (activations(c, n, l.cell, nd, dirs))
		return -EINVAL;
	sx = onnx_shape_of(c, l.x);
	if (sx.rank != 3 || l.hs < 1)
		return onnx_fail(c, "wants X [seq, batch, input] and hidden_size");
	l.seq = sx.dims[l.batch_first ? 1 : 0];
	l.batch = sx.dims[l.batch_first ? 0 : 1];
	l.in = sx.dims[2];
	if (l.seq > RNN_MAX_STEPS)
		return onnx_fail(c, "unsupported sequence of %lld steps (at most %d)",
				 (long long)l.seq, RNN_MAX_STEPS);
	if (onnx_has_in(n, 4)) {	/* sequence_lens: only the full length */
		const struct cval *cv = onnx_cin(c, n, 4, "sequence_lens");
		int64_t lens[1024];
		int m = cv ? onnx_cv_ints(c, cv, lens, 1024, "sequence_lens") : -1;

		for (int i = 0; i < m; i++)
			if (lens[i] != l.seq)
				return onnx_fail(c, "unsupported sequence_lens shorter than the sequence");
		if (m < 0)
			return -EINVAL;
	}
	for (int k = 0; k < nd; k++) {
		struct rnn_dir *dr = &dirs[k];
		struct vtpu_shape hz = { VTPU_F32, 2, { l.batch, l.hs } };

		dr->w = dir_slice(c, onnx_in(c, n, 1), k, nd);
		dr->r = dir_slice(c, onnx_in(c, n, 2), k, nd);
		dr->b = onnx_has_in(n, 3) ? dir_slice(c, onnx_in(c, n, 3), k, nd) : -1;
		dr->c = dr->peep = -1;
		if (!onnx_has_in(n, 5) || (l.cell == CELL_LSTM && !onnx_has_in(n, 6))) {
			float *z = calloc(l.batch * l.hs, sizeof(*z));

			if (!z)
				return onnx_fail(c, "out of memory");
			dr->h = dr->c = onnx_chk(c, vtpu_g_constant(c->g, &hz, z));
			free(z);
		}
		if (onnx_has_in(n, 5))
			dr->h = dir_slice(c, onnx_in(c, n, 5), k, nd);
		if (l.cell == CELL_LSTM && onnx_has_in(n, 6))
			dr->c = dir_slice(c, onnx_in(c, n, 6), k, nd);
		if (l.cell == CELL_LSTM && onnx_has_in(n, 7))	/* [3 * H]: i, o, f */
			dr->peep = dir_slice(c, onnx_in(c, n, 7), k, nd);
		dr->w = want_shape(c, dr->w, 2, l.ng * l.hs, l.in, "W");
		dr->r = want_shape(c, dr->r, 2, l.ng * l.hs, l.hs, "R");
		dr->b = want_shape(c, dr->b, 1, 2 * l.ng * l.hs, 0, "B");
		dr->h = want_shape(c, dr->h, 2, l.batch, l.hs, "initial_h");
		dr->c = want_shape(c, dr->c, 2, l.batch, l.hs, "initial_c");
		dr->peep = want_shape(c, dr->peep, 1, 3 * l.hs, 0, "P");
		if (c->failed || unroll(c, &l, dr, rev || k == 1))
			return -EINVAL;
	}
	/* Y: [seq, D, batch, H], or batch first [batch, seq, D, H] */
	for (int64_t t = 0; t < l.seq; t++) {
		y[0] = dirs[0].ys[t];
		y[1] = nd > 1 ? dirs[1].ys[t] : -1;
		steps[t] = join(c, nd, y, l.batch_first ? 2 : 1);
	}
	if (n->n_output > 0 && n->output[0][0] &&
	    onnx_out(c, n, 0, join(c, (int)l.seq, steps, l.batch_first ? 1 : 0)) < 0)
		return -EINVAL;
	/* Y_h and Y_c: [D, batch, H], or batch first [batch, D, H] */
	if (l.batch_first)
		t3[0] = l.batch, t3[1] = 1, t3[2] = l.hs;
	else
		t3[0] = 1, t3[1] = l.batch, t3[2] = l.hs;
	for (int o = 1; o < (l.cell == CELL_LSTM ? 3 : 2); o++) {
		if (n->n_output <= (size_t)o || !n->output[o][0])
			continue;
		for (int k = 0; k < nd; k++)
			y[k] = onnx_reshape(c, o == 1 ? dirs[k].h : dirs[k].c, 3, t3);
		if (onnx_out(c, n, o, join(c, nd, y, l.batch_first ? 1 : 0)) < 0)
			return -EINVAL;
	}
	return 0;
}
