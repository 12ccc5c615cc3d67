// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/nn.c - neural-network operators: convolutions and pools,
 * normalizations, Softmax, Resize, losses, Dropout.
 */
#include "common.h"

int onnx_op_dropout(struct ctx *c, node_t *n, const struct opdef *d)
{
	if (onnx_attr_i(n, "is_test", 1) == 0 && c->opset < 7)
		return onnx_fail(c, "unsupported training mode");
	if (onnx_has_in(n, 2)) {
		double t = 0;
		const struct cval *cv = onnx_cin(c, n, 2, "training_mode");

		double ratio = 0.5;

		if (!cv || onnx_cv_float(c, cv, &t, "training_mode"))
			return -EINVAL;
		/* Training with ratio 0 (torch's dropout p=0.0) drops nothing. */
		if (t != 0 && onnx_has_in(n, 1)) {
			cv = onnx_cin(c, n, 1, "ratio");
			if (!cv || onnx_cv_float(c, cv, &ratio, "ratio"))
				return -EINVAL;
		}
		if (t != 0 && ratio != 0)
			return onnx_fail(c, "unsupported training_mode=1");
	}
	return onnx_op_identity(c, n, d);
}

/* ---- softmax --------------------------------------------------------------- */

/* Softmax/LogSoftmax; before opset 13 the input is coerced to 2-D at axis. */
int onnx_op_softmax(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax, y;
	struct vtpu_shape s;
	int64_t flat[2];

	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", c->opset < 13 ? 1 : -1), s.rank);
	if (ax < 0)
		return ax;
	if (c->opset >= 13) {
		y = d->arg ? vtpu_g_log_softmax(c->g, x, ax)
			   : vtpu_g_softmax(c->g, x, ax);
		return onnx_out(c, n, 0, onnx_chk(c, y));
	}
	flat[0] = onnx_prod(s.dims, 0, ax);
	flat[1] = onnx_prod(s.dims, ax, s.rank);
	x = onnx_reshape(c, x, 2, flat);
	if (x < 0)
		return x;
	y = onnx_chk(c, d->arg ? vtpu_g_log_softmax(c->g, x, 1)
			  : vtpu_g_softmax(c->g, x, 1));
	return onnx_out(c, n, 0, y < 0 ? y : onnx_reshape(c, y, s.rank, s.dims));
}

/* ---- resize ------------------------------------------------------------------ */

/*
 * x with its @axis (length in) replaced by out = x . M along it, for an
 * [in, out] f32 matrix @mat: a dot contracting the axis, which leaves
 * the new one last, and a transpose to put it back.
 */
int onnx_apply_along(struct ctx *c, int x, int axis, const float *mat,
		     int64_t out)
{
	struct vtpu_shape sx = onnx_shape_of(c, x);
	struct vtpu_shape ms = { VTPU_F32, 2, { sx.dims[axis], out } };
	struct vtpu_dot_dims dd = { .ncontract = 1 };
	int perm[R], m, y;

	m = onnx_chk(c, vtpu_g_constant(c->g, &ms, mat));
	dd.lhs_contract[0] = axis;
	dd.rhs_contract[0] = 0;
	y = m < 0 ? m : onnx_chk(c, vtpu_g_dot(c->g, x, m, &dd));
	for (int i = 0; i < sx.rank; i++)
		perm[i] = i < axis ? i : i == axis ? sx.rank - 1 : i - 1;
	if (y >= 0 && axis != sx.rank - 1)
		y = onnx_chk(c, vtpu_g_transpose(c->g, y, perm));
	return y;
}

enum { CT_HALF_PIXEL, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_CROP, CT_HALF_SYM,
       CT_TF_NN };

static const char *const ct_names[] = {
	"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
	"tf_crop_and_resize", "half_pixel_symmetric", "tf_half_pixel_for_nn",
};

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
	int64_t in = onnx_shape_of(c, x).dims[axis];
	int mode = onnx_attr_s_is(n, "mode", "nearest", "linear") ? 1 :
		   onnx_attr_s_is(n, "mode", "nearest", "cubic") ? 2 : 0;
	int ct = CT_HALF_PIXEL, nm = 0, y;
	double a = onnx_attr_f(n, "cubic_coeff_a", -0.75f);
	bool excl = onnx_attr_i(n, "exclude_outside", 0) != 0, identity = in == out;
	bool extrap = false;
	float *mat;
	uint8_t *outside;

	for (int i = 0; i < 7; i++)
		if (onnx_attr_s_is(n, "coordinate_transformation_mode", "half_pixel",
				   ct_names[i]))
			ct = i;
	if (onnx_attr_s_is(n, "nearest_mode", "round_prefer_floor", "round_prefer_ceil"))
		nm = 1;
	else if (onnx_attr_s_is(n, "nearest_mode", "round_prefer_floor", "floor"))
		nm = 2;
	else if (onnx_attr_s_is(n, "nearest_mode", "round_prefer_floor", "ceil"))
		nm = 3;
	if (c->opset < 11)	/* Upsample-like: asymmetric, nearest floor */
		ct = CT_ASYM, nm = mode ? nm : 2;
	mat = calloc(in * out, sizeof(*mat));
	outside = calloc(out, 1);
	if (!mat || !outside) {
		free(mat);
		free(outside);
		return onnx_fail(c, "out of memory");
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
	y = onnx_apply_along(c, x, axis, mat, out);
	free(mat);
	if (y >= 0 && extrap) {
		struct vtpu_shape os = { VTPU_PRED, 1, { out } }, sy = onnx_shape_of(c, y);
		int mask = onnx_chk(c, vtpu_g_constant(c->g, &os, outside)), map[1] = { axis };

		mask = mask < 0 ? mask : onnx_chk(c, vtpu_g_broadcast(c->g, mask, sy.rank,
							sy.dims, map));
		y = mask < 0 ? mask : onnx_chk(c, vtpu_g_select(c->g, mask,
			onnx_splat(c, onnx_attr_f(n, "extrapolation_value", 0.0f), y), y));
	}
	free(outside);
	return y;
}

/* A Resize input that may be empty or absent: its values, or 0. */
static int resize_input(struct ctx *c, node_t *n, size_t i, double *v,
			const char *what)
{
	const struct cval *cv;

	if (!onnx_has_in(n, i))
		return 0;
	cv = onnx_cin(c, n, i, what);
	if (!cv)
		return -EINVAL;
	return cv->n ? onnx_cv_reals(c, cv, v, 2 * R, what) : 0;
}

static int resize_axes(struct ctx *c, node_t *n, int x, const double *scales,
		       const double *sizes, const double *roi);

int onnx_op_resize(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ns, nz, nr = 0;
	double scales[2 * R], sizes[2 * R], roi[2 * R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if (onnx_attr_i(n, "antialias", 0))
		return onnx_fail(c, "unsupported antialias=1");
	if (onnx_attr(n, "axes"))
		return onnx_fail(c, "unsupported attribute axes");
	if (!onnx_attr_s_is(n, "keep_aspect_ratio_policy", "stretch", "stretch"))
		return onnx_fail(c, "unsupported keep_aspect_ratio_policy");
	if (!onnx_attr_s_is(n, "mode", "nearest", "nearest") &&
	    !onnx_attr_s_is(n, "mode", "nearest", "linear") &&
	    !onnx_attr_s_is(n, "mode", "nearest", "cubic"))
		return onnx_fail(c, "unsupported mode");
	s = onnx_shape_of(c, x);
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
		return onnx_fail(c, "wants scales or sizes for each of the %d axes",
				 s.rank);
	return onnx_out(c, n, 0, resize_axes(c, n, x, ns ? scales : NULL,
					     nz ? sizes : NULL, nr ? roi : NULL));
}

/*
 * Upsample (opsets 7 to 9, Resize's predecessor): scales from the
 * attribute (7) or input 1 (9), each at least 1; nearest (floor) or
 * linear, in asymmetric coordinates: Resize as opset 10 defines it.
 */
int onnx_op_upsample(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__AttributeProto *a = onnx_attr(n, "scales");
	int x = onnx_in(c, n, 0), ns;
	double scales[2 * R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if (!onnx_attr_s_is(n, "mode", "nearest", "nearest") &&
	    !onnx_attr_s_is(n, "mode", "nearest", "linear"))
		return onnx_fail(c, "unsupported mode (nearest or linear)");
	s = onnx_shape_of(c, x);
	if (c->opset >= 9) {
		ns = resize_input(c, n, 1, scales, "scales");
		if (ns < 0)
			return ns;
	} else {
		ns = a ? (int)a->n_floats : 0;
		for (int i = 0; i < ns && i < s.rank; i++)
			scales[i] = a->floats[i];
	}
	if (ns != s.rank)
		return onnx_fail(c, "wants scales for each of the %d axes", s.rank);
	for (int i = 0; i < ns; i++)
		if (!(scales[i] >= 1))
			return onnx_fail(c, "scale %g on axis %d: Upsample's are at least 1",
					 scales[i], i);
	return onnx_out(c, n, 0, resize_axes(c, n, x, scales, NULL, NULL));
}

/* Resizes every axis of @x: by @scales or to @sizes, within @roi if set. */
static int resize_axes(struct ctx *c, node_t *n, int x, const double *scales,
		       const double *sizes, const double *roi)
{
	struct vtpu_shape s = onnx_shape_of(c, x);

	for (int a = 0; a < s.rank && x >= 0; a++) {
		int64_t out = sizes ? (int64_t)sizes[a] :
			      (int64_t)floor(s.dims[a] * scales[a]);
		double scale = sizes ? (double)out / s.dims[a] : scales[a];

		if (out < 1 || scale <= 0)
			return onnx_fail(c, "bad size or scale on axis %d", a);
		if (s.dims[a] > 4096 || out > 4096)
			return onnx_fail(c, "unsupported resize of %lld to %lld (at most 4096)",
					 (long long)s.dims[a], (long long)out);
		x = resize_axis(c, n, x, a, out,
				sizes ? out : s.dims[a] * scales[a], scale,
				roi ? roi[a] : 0, roi ? roi[s.rank + a] : 1);
	}
	return x;
}

/*
 * NegativeLogLikelihoodLoss on input [N, C, d...] (log-probabilities)
 * and target [N, d...]: a class mask (target == c) picks input and
 * weight along C, so no gather is needed; targets equal to ignore_index
 * (or out of range) weigh 0. Reduced by none, sum or the weighted mean.
 */
static int nll_loss(struct ctx *c, node_t *n, int x, int t, int w)
{
	struct vtpu_shape sx = onnx_shape_of(c, x), st = onnx_shape_of(c, t);
	int map[R], red[1] = { 1 }, mask, pick, wsel, loss, all[R];
	bool none = onnx_attr_s_is(n, "reduction", "mean", "none");
	bool sum = onnx_attr_s_is(n, "reduction", "mean", "sum");

	if (!none && !sum && !onnx_attr_s_is(n, "reduction", "mean", "mean"))
		return onnx_fail(c, "unsupported reduction");
	if (sx.rank < 2 || st.rank != sx.rank - 1 || st.type != VTPU_S32)
		return onnx_fail(c, "wants input [N, C, ...] and integer target [N, ...]");
	for (int i = 0, k = 0; i < sx.rank; i++) {
		if (i == 1)
			continue;
		if (st.dims[k] != sx.dims[i])
			return onnx_fail(c, "target dims do not match the input's");
		map[k++] = i;
	}
	t = onnx_chk(c, vtpu_g_broadcast(c->g, t, sx.rank, sx.dims, map));
	mask = onnx_iota_along(c, sx.dims[1], sx.rank, sx.dims, 1);
	mask = t < 0 || mask < 0 ? -EINVAL :
	       onnx_chk(c, vtpu_g_compare(c->g, VTPU_EQ, t, mask));
	if (mask < 0)
		return mask;
	pick = onnx_chk(c, vtpu_g_select(c->g, mask, x, onnx_splat(c, 0, x)));
	pick = pick < 0 ? pick : onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP,
							   pick, 1, red));
	if (w >= 0) {
		struct vtpu_shape sw = onnx_shape_of(c, w);

		if (sw.rank != 1 || sw.dims[0] != sx.dims[1])
			return onnx_fail(c, "weight must be [C]");
		w = onnx_chk(c, vtpu_g_broadcast(c->g, w, sx.rank, sx.dims, red));
	} else {
		w = onnx_splat(c, 1, x);
	}
	wsel = w < 0 ? w : onnx_chk(c, vtpu_g_select(c->g, mask, w, onnx_splat(c, 0, x)));
	wsel = wsel < 0 ? wsel : onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP,
							   wsel, 1, red));
	if (wsel >= 0 && onnx_attr(n, "ignore_index")) {
		int tt = onnx_in(c, n, 1), keep;

		keep = tt < 0 ? tt : onnx_chk(c, vtpu_g_compare(c->g, VTPU_NE, tt,
				onnx_splat(c, (double)onnx_attr_i(n, "ignore_index", 0), tt)));
		wsel = keep < 0 ? keep : onnx_chk(c, vtpu_g_select(c->g, keep, wsel,
							    onnx_splat(c, 0, wsel)));
	}
	if (pick < 0 || wsel < 0)
		return -EINVAL;
	loss = onnx_chk(c, vtpu_g_unary(c->g, VTPU_NEG, onnx_binary(c, VTPU_MUL, pick, wsel)));
	if (loss < 0 || none)
		return loss;
	for (int i = 0; i < st.rank; i++)
		all[i] = i;
	loss = onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP, loss, st.rank, all));
	if (loss < 0 || sum)
		return loss;
	wsel = onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP, wsel, st.rank, all));
	return wsel < 0 ? wsel : onnx_chk(c, vtpu_g_binary(c->g, VTPU_DIV, loss, wsel));
}

int onnx_op_nll_loss(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), t = onnx_in(c, n, 1);
	int w = onnx_has_in(n, 2) ? onnx_in(c, n, 2) : -1;

	(void)d;
	if (x < 0 || t < 0 || (onnx_has_in(n, 2) && w < 0))
		return -EINVAL;
	return onnx_out(c, n, 0, nll_loss(c, n, x, t, w));
}

/* SoftmaxCrossEntropyLoss: NLL of log_softmax over C; log_prob too. */
int onnx_op_sce_loss(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), t = onnx_in(c, n, 1), lp;
	int w = onnx_has_in(n, 2) ? onnx_in(c, n, 2) : -1;

	(void)d;
	if (x < 0 || t < 0 || (onnx_has_in(n, 2) && w < 0))
		return -EINVAL;
	lp = onnx_chk(c, vtpu_g_log_softmax(c->g, x, 1));
	if (lp >= 0 && n->n_output > 1 && n->output[1][0] && onnx_out(c, n, 1, lp) < 0)
		return -EINVAL;
	return onnx_out(c, n, 0, lp < 0 ? lp : nll_loss(c, n, lp, t, w));
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
	bool same_up = onnx_attr_s_is(n, "auto_pad", "NOTSET", "SAME_UPPER");
	bool same_lo = onnx_attr_s_is(n, "auto_pad", "NOTSET", "SAME_LOWER");
	bool valid = onnx_attr_s_is(n, "auto_pad", "NOTSET", "VALID");

	if (!same_up && !same_lo && !valid &&
	    !onnx_attr_s_is(n, "auto_pad", "NOTSET", "NOTSET"))
		return onnx_fail(c, "unsupported auto_pad");
	for (int i = 0; i < w->nsp; i++)
		w->s[i] = w->d[i] = 1, w->lo[i] = w->hi[i] = 0;
	if ((m = onnx_attr_ints(c, n, "strides", v, 3)) >= 0)
		for (int i = 0; i < m && i < w->nsp; i++)
			w->s[i] = v[i];
	if ((m = onnx_attr_ints(c, n, "dilations", v, 3)) >= 0)
		for (int i = 0; i < m && i < w->nsp; i++)
			w->d[i] = v[i];
	if ((m = onnx_attr_ints(c, n, "pads", v, 6)) == 2 * w->nsp)
		for (int i = 0; i < w->nsp; i++)
			w->lo[i] = v[i], w->hi[i] = v[i + w->nsp];
	else if (m >= 0 && !c->failed)
		return onnx_fail(c, "pads has %d values for %d spatial axes", m, w->nsp);
	if (c->failed)
		return -EINVAL;
	for (int i = 0; i < w->nsp; i++) {
		int64_t ext = (w->k[i] - 1) * w->d[i] + 1, tot;

		if (w->s[i] < 1 || w->d[i] < 1 || w->lo[i] < 0 || w->hi[i] < 0)
			return onnx_fail(c, "bad strides, dilations or pads");
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
			return onnx_fail(c, "window larger than the padded input");
		tot = w->in[i] + w->lo[i] + w->hi[i] - ext;
		w->o[i] = tot / w->s[i] + 1;
		w->ceil_hi[i] = 0;
		/*
		 * ceil_mode: one more window for a partial stride, unless it
		 * would start past the input and the left padding.
		 */
		if (onnx_attr_i(n, "ceil_mode", 0) && tot % w->s[i] &&
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
	struct vtpu_shape s = onnx_shape_of(c, x);
	int64_t t[4] = { s.dims[0], s.dims[1], 1, s.dims[2] };

	return s.rank == 4 ? x : onnx_reshape(c, x, 4, t);
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
	return onnx_chk(c, vtpu_g_conv2d(c->g, x, k, &p));
}

/* @x with @w's depth padding (axis 2), for the 3-D convolutions. */
static int pad_depth(struct ctx *c, int x, const struct window *w)
{
	int64_t lo[R] = { 0 }, hi[R] = { 0 };

	lo[2] = w->lo[0], hi[2] = w->hi[0];
	if (x < 0 || (!lo[2] && !hi[2]))
		return x;
	return onnx_chk(c, vtpu_g_pad(c->g, x, lo, hi, 0.0));
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
	struct vtpu_shape sx = onnx_shape_of(c, x), sk = onnx_shape_of(c, k), sy;
	int64_t od = w->o[0], kd = w->k[0];
	int parts[64], y;
	static const int to_nd[6] = { 0, 3, 1, 2, 4, 5 };
	static const int back[5] = { 0, 2, 1, 3, 4 };

	if (kd > 64)
		return onnx_fail(c, "unsupported kernel depth %lld (at most 64)",
				 (long long)kd);
	x = pad_depth(c, x, w);
	if (x < 0)
		return x;
	sx = onnx_shape_of(c, x);
	for (int64_t i = 0; i < kd; i++) {
		int64_t st[R] = { 0, 0, i * w->d[0], 0, 0 };
		int64_t lim[R] = { sx.dims[0], sx.dims[1],
				   st[2] + (od - 1) * w->s[0] + 1,
				   sx.dims[3], sx.dims[4] };
		int64_t step[R] = { 1, 1, w->s[0], 1, 1 };
		int64_t t[6] = { sx.dims[0], sx.dims[1], 1, od, sx.dims[3],
				 sx.dims[4] };

		parts[i] = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, step));
		parts[i] = parts[i] < 0 ? parts[i] : onnx_reshape(c, parts[i], 6, t);
		if (parts[i] < 0)
			return parts[i];
	}
	x = kd == 1 ? parts[0] : onnx_chk(c, vtpu_g_concat(c->g, (int)kd, parts, 2));
	x = x < 0 ? x : onnx_chk(c, vtpu_g_transpose(c->g, x, to_nd));
	if (x >= 0) {
		int64_t t[4] = { sx.dims[0] * od, sx.dims[1] * kd, sx.dims[3],
				 sx.dims[4] };

		x = onnx_reshape(c, x, 4, t);
	}
	if (x >= 0) {
		int64_t t[4] = { sk.dims[0], sk.dims[1] * kd, sk.dims[3],
				 sk.dims[4] };

		k = onnx_reshape(c, k, 4, t);
	}
	if (x < 0 || k < 0)
		return -EINVAL;
	y = conv2d(c, x, k, w, 1, 2, groups);
	if (y < 0)
		return y;
	sy = onnx_shape_of(c, y);
	{
		int64_t t[5] = { sx.dims[0], od, sy.dims[1], sy.dims[2],
				 sy.dims[3] };

		y = onnx_reshape(c, y, 5, t);
	}
	return y < 0 ? y : onnx_chk(c, vtpu_g_transpose(c->g, y, back));
}

/*
 * A depthwise 3-D convolution (a kernel per channel, as MViT's pooling)
 * as KD depthwise 2-D ones, summed: tap kd reads the frames it sees,
 * [N, OD, C, H, W] as [N * OD, C, H, W], with the kernel's [C, 1, KH, KW]
 * at depth kd. conv3d()'s stacking would give each group KD input
 * channels: a grouped matmul of C products of one row each, after an
 * im2col copy of KD * KH * KW times the input.
 */
static int dwconv3d(struct ctx *c, int x, int k, const struct window *w,
		    int groups)
{
	struct vtpu_shape sx, sk = onnx_shape_of(c, k), sy;
	int64_t od = w->o[0];
	static const int swap[5] = { 0, 2, 1, 3, 4 };
	int y = -1;

	/* [N, D, C, H, W]: a tap's frames are one strided slice */
	x = pad_depth(c, x, w);
	x = x < 0 ? x : onnx_chk(c, vtpu_g_transpose(c->g, x, swap));
	if (x < 0)
		return x;
	sx = onnx_shape_of(c, x);
	for (int64_t i = 0; i < w->k[0]; i++) {
		int64_t st[R] = { 0, i * w->d[0], 0, 0, 0 };
		int64_t lim[R] = { sx.dims[0], st[1] + (od - 1) * w->s[0] + 1,
				   sx.dims[2], sx.dims[3], sx.dims[4] };
		int64_t step[R] = { 1, w->s[0], 1, 1, 1 };
		int64_t kst[R] = { 0, 0, i, 0, 0 };
		int64_t klim[R] = { sk.dims[0], 1, i + 1, sk.dims[3],
				    sk.dims[4] };
		int64_t one[R] = { 1, 1, 1, 1, 1 };
		int64_t tx[4] = { sx.dims[0] * od, sx.dims[2], sx.dims[3],
				  sx.dims[4] };
		int64_t tk[4] = { sk.dims[0], 1, sk.dims[3], sk.dims[4] };
		int xi, ki, yi;

		xi = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, step));
		xi = xi < 0 ? xi : onnx_reshape(c, xi, 4, tx);
		ki = onnx_chk(c, vtpu_g_slice(c->g, k, kst, klim, one));
		ki = ki < 0 ? ki : onnx_reshape(c, ki, 4, tk);
		if (xi < 0 || ki < 0)
			return -EINVAL;
		yi = conv2d(c, xi, ki, w, 1, 2, groups);
		if (yi >= 0 && y >= 0)
			yi = onnx_chk(c, vtpu_g_binary(c->g, VTPU_ADD, y, yi));
		if (yi < 0)
			return yi;
		y = yi;
	}
	sy = onnx_shape_of(c, y);
	{
		int64_t t[5] = { sx.dims[0], od, sy.dims[1], sy.dims[2],
				 sy.dims[3] };

		y = onnx_reshape(c, y, 5, t);
	}
	return y < 0 ? y : onnx_chk(c, vtpu_g_transpose(c->g, y, swap));
}

/* Convolution over 1, 2 or 3 spatial axes (@w->nsp), without bias. */
static int conv_nd(struct ctx *c, int x, int k, const struct window *w,
		   int groups)
{
	struct vtpu_shape sy;
	int y;

	if (w->nsp == 3 && w->k[0] > 1 && groups > 1 &&
	    onnx_shape_of(c, x).dims[1] == groups &&
	    onnx_shape_of(c, k).dims[0] == groups)
		return dwconv3d(c, x, k, w, groups);
	if (w->nsp == 3)
		return conv3d(c, x, k, w, groups);
	x = to4d(c, x);
	k = to4d(c, k);
	if (x < 0 || k < 0)
		return -EINVAL;
	y = conv2d(c, x, k, w, 0, w->nsp, groups);
	if (y >= 0 && w->nsp == 1) {
		int64_t t[3];

		sy = onnx_shape_of(c, y);
		t[0] = sy.dims[0], t[1] = sy.dims[1], t[2] = sy.dims[3];
		y = onnx_reshape(c, y, 3, t);
	}
	return y;
}

/* y + bias (input @i, [C]) along dimension 1, when the node has one. */
static int add_bias(struct ctx *c, node_t *n, size_t i, int y)
{
	struct vtpu_shape sy;
	int bias, dim1[1] = { 1 };

	if (y < 0 || !onnx_has_in(n, i))
		return y;
	bias = onnx_in(c, n, i);
	sy = onnx_shape_of(c, y);
	if (bias >= 0 && (onnx_shape_of(c, bias).rank != 1 ||
			  onnx_shape_of(c, bias).dims[0] != sy.dims[1]))
		return onnx_fail(c, "bias must be [%lld]", (long long)sy.dims[1]);
	if (bias >= 0)
		bias = onnx_chk(c, vtpu_g_broadcast(c->g, bias, sy.rank, sy.dims, dim1));
	return bias < 0 ? bias : onnx_chk(c, vtpu_g_binary(c->g, VTPU_ADD, y, bias));
}

/* Conv's x * k, with @n's attributes; no bias. */
static int conv_of(struct ctx *c, node_t *n, int x, int k)
{
	struct vtpu_shape sx, sk;
	struct window w = { 0 };
	int64_t kv[3];

	if (x < 0 || k < 0)
		return -EINVAL;
	sx = onnx_shape_of(c, x);
	sk = onnx_shape_of(c, k);
	if (sx.rank < 3 || sx.rank > 5 || sk.rank != sx.rank)
		return onnx_fail(c, "unsupported %d-D convolution (1-D to 3-D only)",
				 sx.rank - 2);
	w.nsp = sx.rank - 2;
	if (onnx_attr_ints(c, n, "kernel_shape", kv, 3) >= 0)
		for (int i = 0; i < w.nsp; i++)
			if (kv[i] != sk.dims[2 + i])
				return onnx_fail(c, "kernel_shape does not match the weights");
	for (int i = 0; i < w.nsp; i++)
		w.in[i] = sx.dims[2 + i], w.k[i] = sk.dims[2 + i];
	if (c->failed || window(c, n, &w))
		return -EINVAL;
	return conv_nd(c, x, k, &w, (int)onnx_attr_i(n, "group", 1));
}

int onnx_op_conv(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), k = onnx_in(c, n, 1);

	(void)d;
	return onnx_out(c, n, 0, add_bias(c, n, 2, conv_of(c, n, x, k)));
}

/*
 * QLinearConv: ConvInteger's exact sums plus the int32 bias, times
 * x_scale w_scale / y_scale (w_scale a scalar or one per output
 * channel), rounded half to even, plus y's zero point, saturated.
 */
int onnx_op_qlinear_conv(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x, k, y, m, map[1] = { 1 };
	struct vtpu_shape sk;

	(void)d;
	if (onnx_int_inputs(c, n, 0, 3, &x, &k))
		return -EINVAL;
	sk = onnx_shape_of(c, k);
	y = conv_of(c, n, onnx_less_zero_point(c, n, x, 2, -1),
		    onnx_less_zero_point(c, n, k, 5, 0));
	if (y >= 0 && onnx_has_in(n, 8)) {
		int b = onnx_in(c, n, 8);

		b = b < 0 ? b : onnx_chk(c, vtpu_g_convert(c->g, b, VTPU_F32));
		if (b >= 0 && (onnx_shape_of(c, b).rank != 1 ||
			       onnx_shape_of(c, b).dims[0] != sk.dims[0]))
			return onnx_fail(c, "bias must be [%lld]", (long long)sk.dims[0]);
		b = b < 0 ? b : onnx_chk(c, vtpu_g_broadcast(c->g, b,
				onnx_shape_of(c, y).rank, onnx_shape_of(c, y).dims, map));
		y = b < 0 ? b : onnx_binary(c, VTPU_ADD, y, b);
	}
	if (y < 0)
		return y;
	/* w_scale per tensor or per output channel: y's axis 1 */
	m = onnx_binary(c, VTPU_MUL, onnx_per_axis_in(c, n, 1, y, 1),
			onnx_per_axis_in(c, n, 4, y, 1));
	m = m < 0 ? m : onnx_binary(c, VTPU_DIV, m,
				    onnx_per_axis_in(c, n, 6, y, 1));
	return onnx_out(c, n, 0, onnx_requantize(c, n, y, m, 7));
}

/*
 * ConvInteger: (x - x_zero_point) * (w - w_zero_point) in int32, padding
 * counted as the zero point (0 once shifted), as ONNX's reference does.
 * f32 products and sums: exact while every partial sum stays below 2^24
 * in magnitude (any C / group * kernel size up to 258).
 */
int onnx_op_conv_integer(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x, k, y;

	(void)d;
	if (onnx_int_inputs(c, n, 0, 1, &x, &k))
		return -EINVAL;
	y = conv_of(c, n, onnx_less_zero_point(c, n, x, 2, -1),
		    onnx_less_zero_point(c, n, k, 3, 0));
	y = y < 0 ? y : onnx_chk(c, vtpu_g_convert(c->g, y, VTPU_S32));
	return onnx_out(c, n, 0, y);
}

/*
 * Inserts @s - 1 zeros between the elements of @x along @axis: a rank-4
 * view [pre, X, 1, post] padded to [pre, X, s, post], less the trailing
 * zeros.
 */
static int dilate(struct ctx *c, int x, int axis, int64_t s)
{
	struct vtpu_shape sx = onnx_shape_of(c, x);
	int64_t t[4] = { onnx_prod(sx.dims, 0, axis), sx.dims[axis], 1,
			 onnx_prod(sx.dims, axis + 1, sx.rank) };
	int64_t lo[R] = { 0 }, hi[R] = { 0 }, st[R] = { 0 }, step[R];

	if (s == 1)
		return x;
	hi[2] = s - 1;
	x = onnx_reshape(c, x, 4, t);
	x = x < 0 ? x : onnx_chk(c, vtpu_g_pad(c->g, x, lo, hi, 0.0));
	sx.dims[axis] = sx.dims[axis] * s;
	x = x < 0 ? x : onnx_reshape(c, x, sx.rank, sx.dims);
	for (int i = 0; i < sx.rank; i++)
		step[i] = 1;
	sx.dims[axis] -= s - 1;
	return x < 0 ? x : onnx_chk(c, vtpu_g_slice(c->g, x, st, sx.dims, step));
}

/*
 * ConvTranspose as a convolution: the input dilated by the strides and
 * padded by (k - 1) * d less the pads (cropped where that is negative),
 * convolved at stride 1 with the kernel flipped and its in/out channels
 * swapped within each group.
 */
int onnx_op_convtranspose(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), k = onnx_in(c, n, 1), g = (int)onnx_attr_i(n, "group", 1);
	struct vtpu_shape sx, sk;
	struct window w = { 0 };
	int64_t st[6], dl[6], op[6] = { 0 }, pads[6] = { 0 }, os[6], kv[6];
	int64_t lo[R] = { 0 }, hi[R] = { 0 }, cst[R] = { 0 }, clim[R], cstep[R];
	int nos, m, nsp;
	bool same_up = onnx_attr_s_is(n, "auto_pad", "NOTSET", "SAME_UPPER");
	bool same_lo = onnx_attr_s_is(n, "auto_pad", "NOTSET", "SAME_LOWER");
	bool crop = false;

	(void)d;
	if (x < 0 || k < 0)
		return -EINVAL;
	sx = onnx_shape_of(c, x);
	sk = onnx_shape_of(c, k);
	if (sx.rank < 3 || sx.rank > 5 || sk.rank != sx.rank)
		return onnx_fail(c, "unsupported %d-D ConvTranspose (1-D to 3-D only)",
				 sx.rank - 2);
	nsp = w.nsp = sx.rank - 2;
	if (g < 1 || sx.dims[1] % g || sk.dims[0] != sx.dims[1])
		return onnx_fail(c, "weights [%lld, ...] do not match %lld channels in %d groups",
				 (long long)sk.dims[0], (long long)sx.dims[1], g);
	if (!same_up && !same_lo && !onnx_attr_s_is(n, "auto_pad", "NOTSET", "NOTSET") &&
	    !onnx_attr_s_is(n, "auto_pad", "NOTSET", "VALID"))
		return onnx_fail(c, "unsupported auto_pad");
	for (int i = 0; i < nsp; i++)
		st[i] = dl[i] = 1;
	if ((m = onnx_attr_ints(c, n, "kernel_shape", kv, 6)) >= 0)
		for (int i = 0; i < nsp; i++)
			if (m != nsp || kv[i] != sk.dims[2 + i])
				return onnx_fail(c, "kernel_shape does not match the weights");
	if ((m = onnx_attr_ints(c, n, "strides", st, 6)) >= 0 && m != nsp)
		return onnx_fail(c, "strides must have %d values", nsp);
	if ((m = onnx_attr_ints(c, n, "dilations", dl, 6)) >= 0 && m != nsp)
		return onnx_fail(c, "dilations must have %d values", nsp);
	if ((m = onnx_attr_ints(c, n, "output_padding", op, 6)) >= 0 && m != nsp)
		return onnx_fail(c, "output_padding must have %d values", nsp);
	if ((m = onnx_attr_ints(c, n, "pads", pads, 6)) >= 0 && m != 2 * nsp)
		return onnx_fail(c, "pads must have %d values", 2 * nsp);
	nos = onnx_attr_ints(c, n, "output_shape", os, 6);
	if (c->failed)
		return -EINVAL;
	if (nos >= 0 && nos != nsp && nos != nsp + 2)
		return onnx_fail(c, "output_shape must have %d values", nsp);
	for (int i = 0; i < nsp; i++) {
		int64_t kk = sk.dims[2 + i], ext = (kk - 1) * dl[i] + 1;
		int64_t in = sx.dims[2 + i], plo = pads[i], phi = pads[i + nsp];

		if (st[i] < 1 || dl[i] < 1 || op[i] < 0 || plo < 0 || phi < 0 ||
		    (op[i] >= st[i] && op[i] >= dl[i]))
			return onnx_fail(c, "bad strides, dilations, pads or output_padding");
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
			return onnx_fail(c, "empty result");
	}
	for (int i = 0; i < nsp && x >= 0; i++)
		x = dilate(c, x, 2 + i, st[i]);
	for (int i = 2; i < sx.rank; i++) {
		crop |= lo[i] < 0 || hi[i] < 0;
		cst[i] = lo[i] < 0 ? -lo[i] : 0;
		lo[i] = lo[i] < 0 ? 0 : lo[i];
	}
	if (x >= 0 && crop) {
		struct vtpu_shape sd = onnx_shape_of(c, x);

		for (int i = 0; i < sd.rank; i++) {
			cstep[i] = 1;
			clim[i] = sd.dims[i] + (i >= 2 && hi[i] < 0 ? hi[i] : 0);
		}
		x = onnx_chk(c, vtpu_g_slice(c->g, x, cst, clim, cstep));
	}
	for (int i = 2; i < sx.rank; i++)
		hi[i] = hi[i] < 0 ? 0 : hi[i];
	x = x < 0 ? x : onnx_chk(c, vtpu_g_pad(c->g, x, lo, hi, 0.0));
	/* The kernel: flipped, then [g, C/g, O/g, ...] -> [g, O/g, C/g, ...]. */
	for (int i = 2; i < sk.rank && k >= 0; i++) {
		int64_t rev[MAX_TAKE];

		if (sk.dims[i] > MAX_TAKE)
			return onnx_fail(c, "kernel too large");
		for (int64_t j = 0; j < sk.dims[i]; j++)
			rev[j] = sk.dims[i] - 1 - j;
		if (sk.dims[i] > 1)
			k = onnx_take(c, k, i, rev, (int)sk.dims[i]);
	}
	if (k >= 0) {
		int64_t t[R] = { g, sk.dims[0] / g, sk.dims[1] };
		int perm[R] = { 0, 2, 1 };

		for (int i = 0; i < nsp; i++)
			t[3 + i] = sk.dims[2 + i], perm[3 + i] = 3 + i;
		if (3 + nsp > R)
			return onnx_fail(c, "unsupported 3-D ConvTranspose with groups");
		k = onnx_reshape(c, k, 3 + nsp, t);
		k = k < 0 ? k : onnx_chk(c, vtpu_g_transpose(c->g, k, perm));
		t[0] = sk.dims[1] * g, t[1] = sk.dims[0] / g;
		for (int i = 0; i < nsp; i++)
			t[2 + i] = sk.dims[2 + i];
		k = k < 0 ? k : onnx_reshape(c, k, sk.rank, t);
	}
	if (x < 0 || k < 0)
		return -EINVAL;
	x = conv_nd(c, x, k, &w, g);
	return onnx_out(c, n, 0, add_bias(c, n, 2, x));
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
	v = onnx_chk(c, vtpu_g_constant(c->g, &cs, cnt));
	free(cnt);
out:
	for (int a = 0; a < w->nsp; a++)
		free(axis[a]);
	return v == -ENOMEM ? onnx_fail(c, "out of memory") : v;
}

/*
 * MaxPool's Indices: for each element of the padded input @sx (padding
 * @w->lo before each spatial axis), its position in the unpadded input,
 * as an s32 value of the padded shape: (n C + c) S plus the spatial
 * position, row-major (or @col_major: storage_order=1), -1 in the
 * padding (-inf there never wins).
 */
static int pool_positions(struct ctx *c, const struct vtpu_shape *sx,
			  const struct window *w, bool col_major)
{
	struct vtpu_shape bs = { VTPU_S32, sx->rank, { sx->dims[0], sx->dims[1] } };
	struct vtpu_shape ps = { VTPU_S32, sx->rank, { 1, 1 } };
	int64_t S = 1, np = 1, e, pos[3] = { 0 };
	int32_t *bv, *pv;
	int b, p;

	for (int a = 0; a < w->nsp; a++) {
		S *= w->in[a];
		bs.dims[2 + a] = 1;
		ps.dims[2 + a] = w->in[a] + w->lo[a] + w->hi[a] + w->ceil_hi[a];
		np *= ps.dims[2 + a];
	}
	/* s32 arithmetic runs in f32 on the device: exact below 2^24 */
	if (sx->dims[0] * sx->dims[1] * S >= (1 << 24))
		return onnx_fail(c, "unsupported: MaxPool indices of %lld elements (exact below 2^24)",
				 (long long)(sx->dims[0] * sx->dims[1] * S));
	bv = malloc(sx->dims[0] * sx->dims[1] * sizeof(*bv));
	pv = malloc(np * sizeof(*pv));
	if (!bv || !pv) {
		free(bv);
		free(pv);
		return onnx_fail(c, "out of memory");
	}
	for (e = 0; e < sx->dims[0] * sx->dims[1]; e++)
		bv[e] = (int32_t)(e * S);
	for (e = 0; e < np; e++) {
		int64_t flat = 0;
		bool in = true;

		for (int t = 0; t < w->nsp; t++) {
			/* storage_order=1: the spatial position column-major */
			int a = col_major ? w->nsp - 1 - t : t;
			int64_t r = pos[a] - w->lo[a];

			in &= r >= 0 && r < w->in[a];
			flat = flat * w->in[a] + r;
		}
		pv[e] = in ? (int32_t)flat : -1;
		for (int a = w->nsp - 1; a >= 0 && ++pos[a] == ps.dims[2 + a]; a--)
			pos[a] = 0;
	}
	b = onnx_chk(c, vtpu_g_constant(c->g, &bs, bv));
	p = onnx_chk(c, vtpu_g_constant(c->g, &ps, pv));
	free(bv);
	free(pv);
	return b < 0 || p < 0 ? -EINVAL : onnx_binary(c, VTPU_ADD, b, p);
}

/*
 * MaxPool/AveragePool over 1, 2 or 3 spatial axes. A box window is
 * separable, so each axis is pooled in turn: the padded input's kernel
 * strided slices along that axis, combined by max or add. That is
 * k0 + k1 + k2 slices rather than k0 * k1 * k2.
 */
int onnx_op_pool(struct ctx *c, node_t *n, const struct opdef *d)
{
	bool is_max = d->arg;
	int x = onnx_in(c, n, 0), m;
	struct vtpu_shape sx;
	struct window w = { 0 };
	int64_t kv[3], lo[R] = { 0 }, hi[R] = { 0 };
	bool padded = false, ceil = false, want_idx;
	int idx = -1;

	if (x < 0)
		return x;
	want_idx = is_max && n->n_output > 1 && n->output[1][0];
	sx = onnx_shape_of(c, x);
	if (sx.rank < 3 || sx.rank > 5)
		return onnx_fail(c, "unsupported %d-D pooling (1-D to 3-D only)",
				 sx.rank - 2);
	w.nsp = sx.rank - 2;
	m = onnx_attr_ints(c, n, "kernel_shape", kv, 3);
	if (m != w.nsp)
		return onnx_fail(c, "kernel_shape must have %d values", w.nsp);
	for (int i = 0; i < w.nsp; i++) {
		w.in[i] = sx.dims[2 + i], w.k[i] = kv[i];
		/* One slice per offset: keep the graph a sane size. */
		if (kv[i] < 1 || kv[i] > 1024)
			return onnx_fail(c, "unsupported kernel_shape (1..1024 per axis)");
	}
	if (window(c, n, &w))
		return -EINVAL;
	for (int i = 0; i < w.nsp; i++) {
		lo[2 + i] = w.lo[i], hi[2 + i] = w.hi[i] + w.ceil_hi[i];
		padded |= lo[2 + i] || hi[2 + i];
		ceil |= w.ceil_hi[i] > 0;
	}
	if (want_idx && (idx = pool_positions(c, &sx, &w,
				onnx_attr_i(n, "storage_order", 0) != 0)) < 0)
		return idx;
	if (padded)
		x = onnx_chk(c, vtpu_g_pad(c->g, x, lo, hi, is_max ? -INFINITY : 0.0));
	/*
	 * With indices the last axis goes first: each row's first maximum,
	 * then the first row's, is the first in row-major order, the one
	 * ONNX Runtime reports. The maximum itself is the same either way.
	 */
	for (int t = 0; t < w.nsp && x >= 0; t++) {
		int i = want_idx ? w.nsp - 1 - t : t;
		int acc = -1, iacc = -1, ax = 2 + i;

		sx = onnx_shape_of(c, x);
		for (int64_t k = 0; k < w.k[i]; k++) {
			int64_t st[R] = { 0 }, lim[R], step[R];
			int sl, si = -1, gt;

			for (int j = 0; j < sx.rank; j++)
				lim[j] = sx.dims[j], step[j] = 1;
			st[ax] = k * w.d[i];
			lim[ax] = st[ax] + (w.o[i] - 1) * w.s[i] + 1;
			step[ax] = w.s[i];
			sl = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, step));
			if (want_idx)
				si = onnx_chk(c, vtpu_g_slice(c->g, idx, st, lim, step));
			if (sl < 0 || (want_idx && si < 0))
				return -EINVAL;
			if (want_idx && acc >= 0) {
				/* a later tap only where strictly greater */
				gt = onnx_chk(c, vtpu_g_compare(c->g, VTPU_GT, sl, acc));
				iacc = gt < 0 ? gt : onnx_chk(c, vtpu_g_select(c->g, gt, si, iacc));
				if (iacc < 0)
					return iacc;
			} else if (want_idx) {
				iacc = si;
			}
			acc = acc < 0 ? sl : onnx_chk(c, vtpu_g_binary(c->g,
					is_max ? VTPU_MAX : VTPU_ADD, acc, sl));
			if (acc < 0)
				return acc;
		}
		x = acc;
		idx = iacc;
	}
	if (want_idx && onnx_out(c, n, 1, idx) < 0)
		return -EINVAL;
	if (x >= 0 && !is_max) {
		int cnt, dims[3] = { 2, 3, 4 };
		int64_t kk = 1;

		for (int i = 0; i < w.nsp; i++)
			kk *= w.k[i];
		sx = onnx_shape_of(c, x);
		bool with_pads = onnx_attr_i(n, "count_include_pad", 0);

		if (with_pads && !ceil) {
			cnt = onnx_splat(c, (double)kk, x);
		} else {
			cnt = pool_counts(c, &w, with_pads);
			cnt = cnt < 0 ? cnt : onnx_chk(c, vtpu_g_broadcast(c->g, cnt,
						sx.rank, sx.dims, dims));
		}
		x = cnt < 0 ? cnt : onnx_chk(c, vtpu_g_binary(c->g, VTPU_DIV, x, cnt));
	}
	return onnx_out(c, n, 0, x);
}

/* GlobalAveragePool/GlobalMaxPool: reduce over the spatial axes, kept. */
int onnx_op_global_pool(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), axes[R], y;
	struct vtpu_shape s;

	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (s.rank < 3)
		return onnx_fail(c, "input must have spatial dimensions");
	for (int i = 2; i < s.rank; i++)
		axes[i - 2] = i, s.dims[i] = 1;
	y = onnx_chk(c, vtpu_g_reduce(c->g, d->arg, x, s.rank - 2, axes));
	return onnx_out(c, n, 0, y < 0 ? y : onnx_reshape(c, y, s.rank, s.dims));
}

/* Inference batch norm: (x - mean) / sqrt(var + eps) * scale + B. */
int onnx_op_batchnorm(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), p[4], dim1[1] = { 1 }, y, den;
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	if (onnx_attr_i(n, "training_mode", 0) || (n->n_output > 1 && n->output[1][0]))
		return onnx_fail(c, "unsupported training mode");
	if (onnx_attr_i(n, "spatial", 1) != 1)
		return onnx_fail(c, "unsupported spatial=0");
	s = onnx_shape_of(c, x);
	if (s.rank < 2)
		return onnx_fail(c, "input must have a channel dimension");
	for (int i = 0; i < 4; i++) {
		p[i] = onnx_in(c, n, i + 1);
		if (p[i] >= 0 && onnx_shape_of(c, p[i]).rank != 1)
			return onnx_fail(c, "input %d must be 1-D", i + 1);
		p[i] = p[i] < 0 ? p[i] :
			onnx_chk(c, vtpu_g_broadcast(c->g, p[i], s.rank, s.dims, dim1));
		if (p[i] < 0)
			return p[i];
	}
	den = onnx_binary(c, VTPU_ADD, p[3], onnx_splat(c, onnx_attr_f(n, "epsilon", 1e-5f), x));
	den = den < 0 ? den : onnx_chk(c, vtpu_g_unary(c->g, VTPU_RSQRT, den));
	y = onnx_binary(c, VTPU_SUB, x, p[2]);
	y = y < 0 || den < 0 ? -EINVAL : onnx_binary(c, VTPU_MUL, y, den);
	y = y < 0 ? y : onnx_binary(c, VTPU_MUL, y, p[0]);
	y = y < 0 ? y : onnx_binary(c, VTPU_ADD, y, p[1]);
	return onnx_out(c, n, 0, y);
}

/*
 * x - mean over @na axes (in *@dx) and the mean of its squares, reduced
 * (the return value); @keep gets the axes not reduced, *@nk of them.
 */
static int centred(struct ctx *c, int x, int na, const int *axes, int *dx,
		   int *keep, int *nk)
{
	struct vtpu_shape s = onnx_shape_of(c, x);
	bool red[R] = { false };
	int mean, var;

	for (int i = 0; i < na; i++)
		red[axes[i]] = true;
	*nk = 0;
	for (int i = 0; i < s.rank; i++)
		if (!red[i])
			keep[(*nk)++] = i;
	mean = onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MEAN_OP, x, na, axes));
	mean = mean < 0 ? mean : onnx_chk(c, vtpu_g_broadcast(c->g, mean, s.rank,
							      s.dims, keep));
	*dx = mean < 0 ? mean : onnx_chk(c, vtpu_g_binary(c->g, VTPU_SUB, x, mean));
	var = *dx < 0 ? *dx : onnx_chk(c, vtpu_g_binary(c->g, VTPU_MUL, *dx, *dx));
	return var < 0 ? var : onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MEAN_OP,
							 var, na, axes));
}

/*
 * (x - mean) * rsqrt(var + eps) over @na axes; @stats (optional)
 * receives the reduced mean and rsqrt(var + eps).
 */
static int normalize(struct ctx *c, int x, int na, const int *axes, float eps,
		     int *stats)
{
	struct vtpu_shape s = onnx_shape_of(c, x);
	int keep[R], nk, dx, var = centred(c, x, na, axes, &dx, keep, &nk);

	var = var < 0 ? var : onnx_binary(c, VTPU_ADD, var, onnx_splat(c, eps, var));
	var = var < 0 ? var : onnx_chk(c, vtpu_g_unary(c->g, VTPU_RSQRT, var));
	if (stats && var >= 0) {
		stats[0] = onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_MEAN_OP, x, na,
						 axes));
		stats[1] = var;
	}
	var = var < 0 ? var : onnx_chk(c, vtpu_g_broadcast(c->g, var, s.rank, s.dims,
							   keep));
	return var < 0 ? var : onnx_chk(c, vtpu_g_binary(c->g, VTPU_MUL, dx, var));
}

/* LayerNormalization: normalize over axis.., then scale and bias. */
int onnx_op_layernorm(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), ax, axes[R], na = 0, y, sc, st[2] = { -1, -1 };
	int64_t kd[R];
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	ax = onnx_axis_norm(c, onnx_attr_i(n, "axis", -1), s.rank);
	if (ax < 0)
		return ax;
	for (int i = 0; i < s.rank; i++)
		kd[i] = i < ax ? s.dims[i] : 1;
	for (int i = ax; i < s.rank; i++)
		axes[na++] = i;
	y = normalize(c, x, na, axes, onnx_attr_f(n, "epsilon", 1e-5f), st);
	/* Mean and InvStdDev keep the normalized axes as 1s. */
	for (size_t i = 1; i < n->n_output && i < 3 && y >= 0; i++)
		if (n->output[i][0] &&
		    onnx_out(c, n, i, onnx_reshape(c, st[i - 1], s.rank, kd)) < 0)
			     return -EINVAL;
	sc = y < 0 ? y : onnx_in(c, n, 1);
	y = sc < 0 ? sc : onnx_binary(c, VTPU_MUL, y, sc);
	if (y >= 0 && onnx_has_in(n, 2))
		y = onnx_binary(c, VTPU_ADD, y, onnx_in(c, n, 2));
	return onnx_out(c, n, 0, c->failed ? -EINVAL : y);
}

/* InstanceNormalization: normalize over the spatial axes, per channel. */
int onnx_op_instnorm(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), axes[R], na = 0, y, p[2], dim1[1] = { 1 };
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (s.rank < 3)
		return onnx_fail(c, "input must have spatial dimensions");
	for (int i = 2; i < s.rank; i++)
		axes[na++] = i;
	y = normalize(c, x, na, axes, onnx_attr_f(n, "epsilon", 1e-5f), NULL);
	for (int i = 0; i < 2 && y >= 0; i++) {
		p[i] = onnx_in(c, n, i + 1);
		if (p[i] >= 0 && (onnx_shape_of(c, p[i]).rank != 1 ||
				  onnx_shape_of(c, p[i]).dims[0] != s.dims[1]))
			return onnx_fail(c, "input %d must be [%lld]", i + 1,
					 (long long)s.dims[1]);
		p[i] = p[i] < 0 ? p[i] :
			onnx_chk(c, vtpu_g_broadcast(c->g, p[i], s.rank, s.dims, dim1));
		y = p[i] < 0 ? p[i] : onnx_chk(c, vtpu_g_binary(c->g,
					i ? VTPU_ADD : VTPU_MUL, y, p[i]));
	}
	return onnx_out(c, n, 0, y);
}

/*
 * MeanVarianceNormalization: (x - mean) / (std + 1e-9) over @axes
 * (default 0, 2, 3), as ONNX's function body defines it; the variance
 * is the mean of the centred squares, which ONNX's E[x^2] - E[x]^2
 * equals in exact arithmetic and rounds no better.
 */
int onnx_op_mvn(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), axes[R], keep[R], nk, na, dx, sd;
	int64_t ax[R] = { 0, 2, 3 };
	bool red[R] = { false };
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	na = onnx_attr(n, "axes") ? onnx_attr_ints(c, n, "axes", ax, R) : 3;
	if (na < 0)
		return na;
	for (int i = 0; i < na; i++) {
		axes[i] = onnx_axis_norm(c, ax[i], s.rank);
		if (axes[i] < 0)
			return axes[i];
		if (red[axes[i]])
			return onnx_fail(c, "axis %lld named twice", (long long)ax[i]);
		red[axes[i]] = true;
	}
	sd = centred(c, x, na, axes, &dx, keep, &nk);
	sd = sd < 0 ? sd : onnx_chk(c, vtpu_g_unary(c->g, VTPU_SQRT, sd));
	sd = sd < 0 ? sd : onnx_binary(c, VTPU_ADD, sd, onnx_splat(c, 1e-9, sd));
	sd = sd < 0 ? sd : onnx_chk(c, vtpu_g_broadcast(c->g, sd, s.rank, s.dims,
							keep));
	return onnx_out(c, n, 0, sd < 0 ? sd : onnx_binary(c, VTPU_DIV, dx, sd));
}

/*
 * LRN: x / (bias + alpha / size * sum of x^2 over the @size channels
 * around each)^beta, the window sum as @size slices of the squares
 * padded with zeros along the channels.
 */
int onnx_op_lrn(struct ctx *c, node_t *n, const struct opdef *d)
{
	int x = onnx_in(c, n, 0), sq, acc = -1;
	int64_t size = onnx_attr_i(n, "size", 0), lo[R] = { 0 }, hi[R] = { 0 };
	int64_t st[R] = { 0 }, lim[R], step[R];
	double alpha = onnx_attr_f(n, "alpha", 1e-4f), beta = onnx_attr_f(n, "beta", 0.75f);
	struct vtpu_shape s;

	(void)d;
	if (x < 0)
		return x;
	s = onnx_shape_of(c, x);
	if (s.rank < 3 || size < 1 || size > 64)
		return onnx_fail(c, "wants [N, C, ...] and a size from 1 to 64");
	sq = onnx_binary(c, VTPU_MUL, x, x);
	lo[1] = (size - 1) / 2;
	hi[1] = size - 1 - lo[1];
	sq = sq < 0 ? sq : onnx_chk(c, vtpu_g_pad(c->g, sq, lo, hi, 0.0));
	for (int i = 0; i < s.rank; i++)
		lim[i] = s.dims[i], step[i] = 1;
	for (int64_t k = 0; k < size && sq >= 0; k++) {
		int sl;

		st[1] = k;
		lim[1] = k + s.dims[1];
		sl = onnx_chk(c, vtpu_g_slice(c->g, sq, st, lim, step));
		acc = acc < 0 ? sl : onnx_binary(c, VTPU_ADD, acc, sl);
	}
	acc = onnx_binary(c, VTPU_MUL, acc, onnx_splat(c, alpha / size, x));
	acc = onnx_binary(c, VTPU_ADD, acc, onnx_splat(c, onnx_attr_f(n, "bias", 1.0f), x));
	acc = onnx_binary(c, VTPU_POW, acc, onnx_splat(c, beta, x));
	return onnx_out(c, n, 0, c->failed ? -EINVAL : onnx_binary(c, VTPU_DIV, x, acc));
}
