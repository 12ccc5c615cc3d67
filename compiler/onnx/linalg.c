// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/linalg.c - MatMul, Gemm and Einsum.
 */
#include "common.h"

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
	return onnx_chk(c, vtpu_g_reduce(c->g, VTPU_REDUCE_SUM_OP, x, na, axes));
}

/*
 * Einsum of one or two operands without repeated letters in a term
 * (no diagonals) or ellipses: letters only one operand has and the
 * output lacks are summed out first, then one DotGeneral (shared
 * letters in the output are batch dims, the others contracted) and a
 * transpose into the output's order.
 */
int onnx_op_einsum(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__AttributeProto *a = onnx_attr(n, "equation");
	char eq[128], *arrow, *terms[2], outs[R + 1], cur[2 * R + 1] = "";
	char all[2 * R + 1] = "";
	int v[2], nt = 0, y, perm[R];
	size_t k = 0;

	(void)d;
	if (!a || !a->has_s || a->s.len >= sizeof(eq))
		return onnx_fail(c, "missing or long equation");
	for (size_t i = 0; i < a->s.len; i++)
		if (a->s.data[i] != ' ')
			eq[k++] = (char)a->s.data[i];
	eq[k] = 0;
	if (strchr(eq, '.'))
		return onnx_fail(c, "unsupported ellipsis in equation %s", eq);
	arrow = strstr(eq, "->");
	if (arrow)
		*arrow = 0;
	terms[nt++] = eq;
	for (char *p = eq; *p; p++)
		if (*p == ',') {
			if (nt == 2)
				return onnx_fail(c, "unsupported einsum of more than 2 operands");
			*p = 0;
			terms[nt++] = p + 1;
		}
	if ((size_t)nt != n->n_input)
		return onnx_fail(c, "equation has %d terms for %zu inputs", nt,
				 n->n_input);
	for (int t = 0; t < nt; t++) {
		struct vtpu_shape s;

		v[t] = onnx_in(c, n, t);
		if (v[t] < 0)
			return v[t];
		s = onnx_shape_of(c, v[t]);
		if ((int)strlen(terms[t]) != s.rank)
			return onnx_fail(c, "term %s does not match rank %d", terms[t],
					 s.rank);
		for (int i = 0; terms[t][i]; i++) {
			if (!((terms[t][i] >= 'a' && terms[t][i] <= 'z') ||
			      (terms[t][i] >= 'A' && terms[t][i] <= 'Z')))
				return onnx_fail(c, "bad letter in equation");
			if (strchr(terms[t] + i + 1, terms[t][i]))
				return onnx_fail(c, "unsupported repeated index %c (diagonal)",
						 terms[t][i]);
		}
		strcat(all, terms[t]);
	}
	if (arrow) {
		if (strlen(arrow + 2) > R)
			return onnx_fail(c, "output rank above %d", R);
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
		y = onnx_chk(c, vtpu_g_dot(c->g, v[0], v[1], &dd));
	}
	if (y < 0)
		return y;
	if (strlen(cur) != strlen(outs))
		return onnx_fail(c, "output %s does not match the operands", outs);
	for (int i = 0; outs[i]; i++) {
		char *p = strchr(cur, outs[i]);

		if (!p)
			return onnx_fail(c, "output letter %c is in no operand", outs[i]);
		perm[i] = (int)(p - cur);
	}
	for (int i = 0; outs[i]; i++)
		if (perm[i] != i)
			return onnx_out(c, n, 0, onnx_chk(c, vtpu_g_transpose(c->g, y, perm)));
	return onnx_out(c, n, 0, y);
}

/* ---- linear algebra -------------------------------------------------------- */

/* numpy matmul: 1-D operands promoted and squeezed, batch dims broadcast. */
int onnx_matmul(struct ctx *c, int a, int b)
{
	struct vtpu_shape sa = onnx_shape_of(c, a), sb = onnx_shape_of(c, b);
	bool sqm = sa.rank == 1, sqn = sb.rank == 1;
	int64_t batch[R], fin[R], t[R];
	int nb, nf = 0, y;

	if (sa.rank == 0 || sb.rank == 0)
		return onnx_fail(c, "MatMul of a scalar");
	if (sqm) {
		t[0] = 1, t[1] = sa.dims[0];
		a = onnx_reshape(c, a, 2, t);
		sa = onnx_shape_of(c, a);
	}
	if (sqn) {
		t[0] = sb.dims[0], t[1] = 1;
		b = onnx_reshape(c, b, 2, t);
		sb = onnx_shape_of(c, b);
	}
	if (a < 0 || b < 0)
		return -EINVAL;
	nb = (sa.rank > sb.rank ? sa.rank : sb.rank) - 2;
	for (int i = 0; i < nb; i++) {
		int ia = i - (nb - (sa.rank - 2)), ib = i - (nb - (sb.rank - 2));
		int64_t da = ia >= 0 ? sa.dims[ia] : 1, db = ib >= 0 ? sb.dims[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return onnx_fail(c, "MatMul batch dimensions %lld and %lld differ",
					 (long long)da, (long long)db);
		batch[i] = da == 1 ? db : da;
		fin[nf++] = batch[i];
	}
	if (!sqm)
		fin[nf++] = sa.dims[sa.rank - 2];
	if (!sqn)
		fin[nf++] = sb.dims[sb.rank - 1];
	/*
	 * A b shared by every batch (a Linear layer's weight on [B, S, E]
	 * activations): the batches are just more rows of one matmul, rather
	 * than B copies of b. Each output row is the same sum either way.
	 */
	if (nb && onnx_prod(sb.dims, 0, sb.rank - 2) == 1) {
		t[0] = onnx_prod(batch, 0, nb) * sa.dims[sa.rank - 2];
		t[1] = sa.dims[sa.rank - 1];
		a = onnx_reshape(c, a, 2, t);
		t[0] = sb.dims[sb.rank - 2], t[1] = sb.dims[sb.rank - 1];
		b = onnx_reshape(c, b, 2, t);
		nb = 0;
	}
	if (nb) {
		memcpy(t, batch, nb * sizeof(*t));
		t[nb] = sa.dims[sa.rank - 2], t[nb + 1] = sa.dims[sa.rank - 1];
		a = onnx_bcast_to(c, a, nb + 2, t);
		t[nb] = sb.dims[sb.rank - 2], t[nb + 1] = sb.dims[sb.rank - 1];
		b = onnx_bcast_to(c, b, nb + 2, t);
		t[0] = onnx_prod(batch, 0, nb);
		t[1] = sa.dims[sa.rank - 2], t[2] = sa.dims[sa.rank - 1];
		a = a < 0 ? a : onnx_reshape(c, a, 3, t);
		t[1] = sb.dims[sb.rank - 2], t[2] = sb.dims[sb.rank - 1];
		b = b < 0 ? b : onnx_reshape(c, b, 3, t);
		if (a < 0 || b < 0)
			return -EINVAL;
	}
	y = onnx_chk(c, vtpu_g_matmul(c->g, a, b));
	return y < 0 ? y : onnx_reshape(c, y, nf, fin);
}

int onnx_op_matmul(struct ctx *c, node_t *n, const struct opdef *d)
{
	int a = onnx_in(c, n, 0), b = onnx_in(c, n, 1);

	(void)d;
	if (a < 0 || b < 0)
		return -EINVAL;
	return onnx_out(c, n, 0, onnx_matmul(c, a, b));
}

/*
 * MatMulInteger: (A - a_zero_point)(B - b_zero_point) in int32, of 8-bit
 * integers (the device's s32). The products and sums run in f32: exact
 * while every partial sum stays below 2^24 in magnitude, which any K up
 * to 258 guarantees and typical activations and weights keep far beyond.
 */
int onnx_op_matmul_integer(struct ctx *c, node_t *n, const struct opdef *d)
{
	int a, b, y;

	(void)d;
	if (onnx_int_inputs(c, n, 0, 1, &a, &b))
		return -EINVAL;
	a = onnx_less_zero_point(c, n, a, 2, -2);
	b = onnx_less_zero_point(c, n, b, 3, -1);
	y = a < 0 || b < 0 ? -EINVAL : onnx_matmul(c, a, b);
	y = y < 0 ? y : onnx_chk(c, vtpu_g_convert(c->g, y, VTPU_S32));
	return onnx_out(c, n, 0, y);
}

/*
 * QLinearMatMul: MatMulInteger's exact sums, times a_scale b_scale /
 * y_scale, rounded half to even, plus y's zero point, saturated to its
 * 8-bit type (onnx_requantize()).
 */
int onnx_op_qlinear_matmul(struct ctx *c, node_t *n, const struct opdef *d)
{
	int a, b, y, m;

	(void)d;
	if (onnx_int_inputs(c, n, 0, 3, &a, &b))
		return -EINVAL;
	/* per tensor, or per row of A and per column of B */
	m = onnx_binary(c, VTPU_MUL, onnx_per_axis_in(c, n, 1, a, -2),
			onnx_per_axis_in(c, n, 4, b, -1));
	m = m < 0 ? m : onnx_binary(c, VTPU_DIV, m,
				    onnx_per_axis_in(c, n, 6, a, -1));
	a = onnx_less_zero_point(c, n, a, 2, -2);
	b = onnx_less_zero_point(c, n, b, 5, -1);
	y = a < 0 || b < 0 ? -EINVAL : onnx_matmul(c, a, b);
	return onnx_out(c, n, 0, onnx_requantize(c, n, y, m, 7));
}

static int transpose2(struct ctx *c, int a)
{
	static const int perm[2] = { 1, 0 };

	return a < 0 ? a : onnx_chk(c, vtpu_g_transpose(c->g, a, perm));
}

/* Gemm: alpha * A' B' + beta * C, C broadcast to [M, N]. */
int onnx_op_gemm(struct ctx *c, node_t *n, const struct opdef *d)
{
	int a = onnx_in(c, n, 0), b = onnx_in(c, n, 1), y;
	float alpha = onnx_attr_f(n, "alpha", 1), beta = onnx_attr_f(n, "beta", 1);

	(void)d;
	if (a < 0 || b < 0)
		return -EINVAL;
	if (onnx_shape_of(c, a).rank != 2 || onnx_shape_of(c, b).rank != 2)
		return onnx_fail(c, "Gemm operands must be 2-D");
	if (onnx_attr_i(n, "transA", 0))
		a = transpose2(c, a);
	if (onnx_attr_i(n, "transB", 0))
		b = transpose2(c, b);
	if (a < 0 || b < 0)
		return -EINVAL;
	y = onnx_chk(c, vtpu_g_matmul(c->g, a, b));
	if (y >= 0 && alpha != 1)
		y = onnx_binary(c, VTPU_MUL, y, onnx_splat(c, alpha, y));
	if (y >= 0 && onnx_has_in(n, 2)) {
		struct vtpu_shape s = onnx_shape_of(c, y);
		int cc = onnx_in(c, n, 2);

		if (cc >= 0 && beta != 1)
			cc = onnx_binary(c, VTPU_MUL, cc, onnx_splat(c, beta, cc));
		cc = cc < 0 ? cc : onnx_bcast_to(c, cc, 2, s.dims);
		y = cc < 0 ? cc : onnx_chk(c, vtpu_g_binary(c->g, VTPU_ADD, y, cc));
	}
	return onnx_out(c, n, 0, y);
}
