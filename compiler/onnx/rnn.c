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

/* [1, ...] -> [...]: the single direction's slice of a weight. */
static int drop_dir(struct ctx *c, int v)
{
	struct vtpu_shape s = onnx_shape_of(c, v);

	if (v < 0)
		return v;
	if (s.dims[0] != 1)
		return onnx_fail(c, "unsupported %lld directions (forward only)",
				 (long long)s.dims[0]);
	return onnx_reshape(c, v, s.rank - 1, s.dims + 1);
}

static int sigm(struct ctx *c, int v)
{
	return v < 0 ? v : onnx_chk(c, vtpu_g_unary(c->g, VTPU_LOGISTIC, v));
}

static int tanhv(struct ctx *c, int v)
{
	return v < 0 ? v : onnx_chk(c, vtpu_g_unary(c->g, VTPU_TANH, v));
}

/*
 * RNN, GRU and LSTM (forward, default activations), unrolled over the
 * sequence: per step one matmul of the input and one of the hidden
 * state against all the gates' weights at once, then the gates'
 * elementwise formulas from the ONNX operator definitions.
 */
int onnx_op_rnn(struct ctx *c, node_t *n, const struct opdef *d)
{
	int cell = d->arg, ng = cell == CELL_RNN ? 1 : cell == CELL_GRU ? 3 : 4;
	int x = onnx_in(c, n, 0), w = drop_dir(c, onnx_in(c, n, 1)), r = drop_dir(c, onnx_in(c, n, 2));
	int wt, rt, bw = -1, br = -1, hprev, cprev = -1, ys[256], peep = -1;
	bool batch_first = onnx_attr_i(n, "layout", 0) != 0;
	bool lbr = onnx_attr_i(n, "linear_before_reset", 0) != 0;
	int64_t hs = onnx_attr_i(n, "hidden_size", 0), seq, batch, t4[4], t2[2];
	static const int tr2[2] = { 1, 0 };
	struct vtpu_shape sx;

	if (x < 0 || w < 0 || r < 0)
		return -EINVAL;
	if (!onnx_attr_s_is(n, "direction", "forward", "forward") || onnx_attr(n, "activations") ||
	    onnx_attr(n, "clip") || onnx_attr_i(n, "input_forget", 0))
		return onnx_fail(c, "unsupported direction, activations, clip or input_forget");
	sx = onnx_shape_of(c, x);
	if (sx.rank != 3 || hs < 1)
		return onnx_fail(c, "wants X [seq, batch, input] and hidden_size");
	seq = sx.dims[batch_first ? 1 : 0];
	batch = sx.dims[batch_first ? 0 : 1];
	if (seq > 256)
		return onnx_fail(c, "unsupported sequence of %lld steps (at most 256)",
				 (long long)seq);
	if (onnx_has_in(n, 4)) {	/* sequence_lens: only the full length */
		const struct cval *cv = onnx_cin(c, n, 4, "sequence_lens");
		int64_t lens[1024];
		int m = cv ? onnx_cv_ints(c, cv, lens, 1024, "sequence_lens") : -1;

		for (int i = 0; i < m; i++)
			if (lens[i] != seq)
				return onnx_fail(c, "unsupported sequence_lens shorter than the sequence");
		if (m < 0)
			return -EINVAL;
	}
	wt = onnx_chk(c, vtpu_g_transpose(c->g, w, tr2));	/* [input, G * H] */
	rt = onnx_chk(c, vtpu_g_transpose(c->g, r, tr2));	/* [H, G * H] */
	if (onnx_has_in(n, 3)) {
		int b = drop_dir(c, onnx_in(c, n, 3));	/* [2 * G * H] */
		int64_t st[1] = { 0 }, lim[1] = { ng * hs }, step[1] = { 1 };

		bw = b < 0 ? b : onnx_chk(c, vtpu_g_slice(c->g, b, st, lim, step));
		st[0] = ng * hs, lim[0] = 2 * ng * hs;
		br = b < 0 ? b : onnx_chk(c, vtpu_g_slice(c->g, b, st, lim, step));
		t2[0] = 1, t2[1] = ng * hs;
		bw = bw < 0 ? bw : onnx_reshape(c, bw, 2, t2);
		br = br < 0 ? br : onnx_reshape(c, br, 2, t2);
		if (bw < 0 || br < 0)
			return -EINVAL;
	}
	t2[0] = batch, t2[1] = hs;
	if (onnx_has_in(n, 5)) {
		hprev = drop_dir(c, onnx_in(c, n, 5));
	} else {
		struct vtpu_shape hz = { VTPU_F32, 2, { batch, hs } };
		float *z = calloc(batch * hs, sizeof(*z));

		if (!z)
			return onnx_fail(c, "out of memory");
		hprev = onnx_chk(c, vtpu_g_constant(c->g, &hz, z));
		if (cell == CELL_LSTM)
			cprev = onnx_chk(c, vtpu_g_constant(c->g, &hz, z));
		free(z);
	}
	if (cell == CELL_LSTM && onnx_has_in(n, 6))
		cprev = drop_dir(c, onnx_in(c, n, 6));
	if (cell == CELL_LSTM && onnx_has_in(n, 7))
		peep = drop_dir(c, onnx_in(c, n, 7));	/* [3 * H]: i, o, f */
	if (wt < 0 || rt < 0 || hprev < 0 || (cell == CELL_LSTM && cprev < 0))
		return -EINVAL;
	for (int64_t t = 0; t < seq; t++) {
		int64_t st[3] = { 0 }, lim[3], step[3] = { 1, 1, 1 };
		int xt, gx, gh, h;

		for (int i = 0; i < 3; i++)
			lim[i] = sx.dims[i];
		st[batch_first ? 1 : 0] = t;
		lim[batch_first ? 1 : 0] = t + 1;
		xt = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, step));
		xt = xt < 0 ? xt : onnx_reshape(c, xt, 2, (int64_t[2]){ batch, sx.dims[2] });
		gx = xt < 0 ? xt : onnx_matmul(c, xt, wt);
		gh = onnx_matmul(c, hprev, rt);
		if (gx >= 0 && bw >= 0)
			gx = onnx_binary(c, VTPU_ADD, gx, bw);
		if (gh >= 0 && br >= 0)
			gh = onnx_binary(c, VTPU_ADD, gh, br);
		if (gx < 0 || gh < 0)
			return -EINVAL;
		if (cell == CELL_RNN) {
			h = tanhv(c, onnx_binary(c, VTPU_ADD, gx, gh));
		} else if (cell == CELL_GRU) {
			int z = sigm(c, onnx_binary(c, VTPU_ADD, gate(c, gx, 0, hs),
						gate(c, gh, 0, hs)));
			int rg = sigm(c, onnx_binary(c, VTPU_ADD, gate(c, gx, 1, hs),
						 gate(c, gh, 1, hs)));
			int hh;

			if (lbr) {
				hh = onnx_binary(c, VTPU_MUL, rg, gate(c, gh, 2, hs));
			} else {
				/* (r * H) . Rh + Rbh: the reset gate first */
				int rh = gate(c, rt, 2, hs);

				hh = onnx_matmul(c, onnx_binary(c, VTPU_MUL, rg, hprev), rh);
				if (hh >= 0 && br >= 0)
					hh = onnx_binary(c, VTPU_ADD, hh, gate(c, br, 2, hs));
			}
			hh = tanhv(c, onnx_binary(c, VTPU_ADD, gate(c, gx, 2, hs), hh));
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
			cc = onnx_binary(c, VTPU_ADD,
					 onnx_binary(c, VTPU_MUL, sigm(c, fg), cprev),
					 onnx_binary(c, VTPU_MUL, sigm(c, ig), tanhv(c, cg)));
			if (peep >= 0) {
				int64_t pst[1] = { hs }, plim[1] = { 2 * hs }, pstep[1] = { 1 };

				og = onnx_binary(c, VTPU_ADD, og, onnx_binary(c, VTPU_MUL,
					onnx_chk(c, vtpu_g_slice(c->g, peep, pst, plim, pstep)),
					cc));
			}
			h = onnx_binary(c, VTPU_MUL, sigm(c, og), tanhv(c, cc));
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
		ys[t] = onnx_reshape(c, h, 4, t4);
		if (ys[t] < 0)
			return -EINVAL;
	}
	if (n->n_output > 0 && n->output[0][0] &&
	    onnx_out(c, n, 0, seq == 1 ? ys[0] : onnx_chk(c, vtpu_g_concat(c->g, (int)seq,
					ys, batch_first ? 1 : 0))) < 0)
		return -EINVAL;
	if (batch_first)
		t4[0] = batch, t4[1] = 1, t4[2] = hs;
	else
		t4[0] = 1, t4[1] = batch, t4[2] = hs;
	if (n->n_output > 1 && n->output[1][0] &&
	    onnx_out(c, n, 1, onnx_reshape(c, hprev, 3, t4)) < 0)
		     return -EINVAL;
	if (cell == CELL_LSTM && n->n_output > 2 && n->output[2][0] &&
	    onnx_out(c, n, 2, onnx_reshape(c, cprev, 3, t4)) < 0)
		     return -EINVAL;
	return 0;
}
