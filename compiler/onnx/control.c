// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/control.c - If, Loop and Scan. Control flow mostly happens here,
 * on the builder: a subgraph's
 * nodes are built inline with its inputs bound to the caller's values
 * (outer names stay visible, as ONNX scoping says). If with a condition
 * known at compile time builds its branch; otherwise both branches and
 * a select. Loop and Scan unroll: each iteration builds the body again,
 * its iteration number a compile-time constant. A Loop whose condition
 * comes out of the body at run time is predicated for the rest of its
 * trip count (the carried values stop changing once it is false). A
 * Loop whose trip count is known only at run time, or that has none and
 * a condition known only at run time, loops on the device instead (a
 * WHILE node, as the HLO frontend's while loops do): its body becomes a
 * graph of its own, built in a scope of its own.
 */
#include "common.h"

#define MAX_ITERS	65536

/*
 * Defines @name as another name of value @v: its builder value, host
 * copy (shared: freed once) and sequence (copied: each entry owns one).
 */
static int alias(struct ctx *c, const char *name, const struct val *v)
{
	struct val src = *v;	/* @v may move when the table grows */
	struct val *d;

	if (onnx_define(c, name, src.id, src.c))
		return -ENOMEM;
	d = &c->v[c->nv - 1];
	d->gelu = src.gelu;
	d->gelu_x = src.gelu_x;
	if (src.s) {
		size_t sz = sizeof(*src.s) + src.s->n * sizeof(int);

		d->s = malloc(sz);
		if (!d->s)
			return onnx_fail(c, "out of memory");
		memcpy(d->s, src.s, sz);
	}
	return 0;
}

/* A copy of the value @name names, or -EINVAL. */
static int get_val(struct ctx *c, const char *name, struct val *out)
{
	struct val *v = onnx_lookup(c, name);

	if (!v)
		return onnx_fail(c, "'%s' is not defined", name);
	*out = *v;
	return 0;
}

static const Onnx__GraphProto *graph_attr(struct ctx *c, node_t *n,
					  const char *name)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);

	if (!a || !a->g)
		onnx_fail(c, "missing graph attribute %s", name);
	return a ? a->g : NULL;
}

/* Builds @gp's initializers and nodes (its inputs already defined). */
static int build_body(struct ctx *c, const Onnx__GraphProto *gp)
{
	int node = c->node;
	const char *op = c->op;

	for (size_t i = 0; i < gp->n_initializer; i++) {
		struct cval *cv = onnx_tensor(c, gp->initializer[i]);

		if (!cv || !gp->initializer[i]->name ||
		    onnx_define(c, gp->initializer[i]->name, -1, cv)) {
			onnx_cval_free(cv);
			return onnx_fail(c, "bad initializer %zu in subgraph", i);
		}
	}
	for (size_t i = 0; i < gp->n_node; i++)
		if (onnx_add_node(c, gp->node[i]))
			return -EINVAL;
	c->node = node;
	c->op = op;
	return 0;
}

/* Whether value @v is known at compile time; its truth in *@t. */
static bool known_bool(struct ctx *c, const struct val *v, bool *t)
{
	const struct cval *cv = v->c ? v->c : v->b;
	double x = 0;

	if (!cv || cv->n != 1)
		return false;
	switch (cv->type) {
	case VTPU_PRED:
		x = *(const uint8_t *)cv->data;
		break;
	case VTPU_S32:
		x = *(const int32_t *)cv->data;
		break;
	case VTPU_S64:
		x = (double)*(const int64_t *)cv->data;
		break;
	case VTPU_F32:
		x = *(const float *)cv->data;
		break;
	default:
		return false;
	}
	*t = x != 0;
	c->bound_used |= !v->c;
	return true;
}

/* The value's builder id, as a pred (run-time conditions). */
static int pred_of(struct ctx *c, const char *name)
{
	int id = onnx_value(c, name);

	if (id >= 0 && onnx_shape_of(c, id).type != VTPU_PRED)
		id = onnx_chk(c, vtpu_g_compare(c->g, VTPU_NE, id,
						onnx_splat(c, 0, id)));
	return id;
}

/* where(@p, @a, @b) for scalar pred @p. */
static int choose(struct ctx *c, int p, int a, int b)
{
	struct vtpu_shape sa = onnx_shape_of(c, a), sb = onnx_shape_of(c, b);

	if (sa.rank != sb.rank || memcmp(sa.dims, sb.dims, sa.rank * sizeof(sa.dims[0])))
		return onnx_fail(c, "unsupported: branches of different shapes");
	if (sa.type != sb.type)
		return onnx_fail(c, "branches of different types");
	return onnx_chk(c, vtpu_g_select(c->g, onnx_bcast_to(c, p, sa.rank, sa.dims),
					 a, b));
}

int onnx_op_if(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__GraphProto *g[2] = { graph_attr(c, n, "else_branch"),
					 graph_attr(c, n, "then_branch") };
	struct val cond, *outs[2] = { NULL, NULL };
	bool t;
	int p, k, ret = -EINVAL;

	(void)d;
	if (!g[0] || !g[1] || get_val(c, n->input[0], &cond))
		return -EINVAL;
	for (k = 0; k < 2; k++)
		if (g[k]->n_output != n->n_output)
			return onnx_fail(c, "a branch has %zu outputs, If %zu",
					 g[k]->n_output, n->n_output);
	if (known_bool(c, &cond, &t)) {
		if (build_body(c, g[t]))
			return -EINVAL;
		for (size_t i = 0; i < n->n_output; i++) {
			struct val o;

			if (get_val(c, g[t]->output[i]->name, &o) ||
			    alias(c, n->output[i], &o))
				return -EINVAL;
		}
		return 0;
	}
	p = pred_of(c, n->input[0]);
	if (p < 0)
		return p;
	for (k = 0; k < 2; k++) {
		outs[k] = calloc(n->n_output + 1, sizeof(*outs[k]));
		if (!outs[k])
			goto out;
		if (build_body(c, g[k]))
			goto out;
		for (size_t i = 0; i < n->n_output; i++)
			if (get_val(c, g[k]->output[i]->name, &outs[k][i]))
				goto out;
	}
	for (size_t i = 0; i < n->n_output; i++) {
		int a, b;

		if (outs[0][i].s || outs[1][i].s) {
			onnx_fail(c, "unsupported: a sequence from an If whose condition is known only at run time");
			goto out;
		}
		/* ids may be -1 (host constants): materialize them */
		a = onnx_value(c, g[1]->output[i]->name);
		b = onnx_value(c, g[0]->output[i]->name);
		if (a < 0 || b < 0 || onnx_out(c, n, i, choose(c, p, a, b)) < 0)
			goto out;
	}
	ret = 0;
out:
	free(outs[0]);
	free(outs[1]);
	return c->failed ? -EINVAL : ret;
}

/* A host scalar constant @v named @name (iteration numbers, conditions). */
static int define_scalar(struct ctx *c, const char *name, enum vtpu_type t,
			 int64_t v)
{
	unsigned char buf[8];
	struct cval *cv;

	if (t == VTPU_S64)
		memcpy(buf, &v, 8);
	else
		buf[0] = v != 0;
	cv = onnx_cval_new(t, 0, NULL, buf, 1);
	if (!cv || onnx_define(c, name, -1, cv)) {
		onnx_cval_free(cv);
		return onnx_fail(c, "out of memory");
	}
	return 0;
}

/* @parts (@n of them) stacked along a new axis @axis (reversed if @rev). */
static int stack(struct ctx *c, int *parts, int n, int axis, bool rev)
{
	struct vtpu_shape s;
	int64_t dims[R];
	int i, k, *u;

	if (!n)
		return onnx_fail(c, "unsupported: a scan output of no iterations");
	s = onnx_shape_of(c, parts[0]);
	if (axis < 0)
		axis += s.rank + 1;
	if (axis < 0 || axis > s.rank || s.rank + 1 > R)
		return onnx_fail(c, "bad scan output axis");
	for (i = 0, k = 0; i <= s.rank; i++)
		dims[i] = i == axis ? 1 : s.dims[k++];
	u = calloc(n, sizeof(*u));
	if (!u)
		return onnx_fail(c, "out of memory");
	for (i = 0; i < n; i++) {
		u[i] = onnx_chk(c, vtpu_g_reshape(c->g, parts[rev ? n - 1 - i : i],
						  s.rank + 1, dims));
		if (u[i] < 0) {
			free(u);
			return -EINVAL;
		}
	}
	k = n == 1 ? u[0] : onnx_chk(c, vtpu_g_concat(c->g, n, u, axis));
	free(u);
	return k;
}

/* ---- Loop on the device ------------------------------------------------- */

/* A set of names (pointers into the model), grown as needed. */
struct names {
	const char **v;
	size_t n, cap;
};

static bool names_has(const struct names *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], name))
			return true;
	return false;
}

static int names_add(struct names *s, const char *name)
{
	if (!name || !*name || names_has(s, name))
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		const char **v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = name;
	return 0;
}

/*
 * The names @g and the graphs inside it define (@def) and read (@use):
 * what it reads and does not define comes from the enclosing scopes.
 */
static int scope_names(const Onnx__GraphProto *g, struct names *def,
		       struct names *use)
{
	size_t i, k, a;
	int ret = 0;

	for (i = 0; i < g->n_input && !ret; i++)
		ret = names_add(def, g->input[i]->name);
	for (i = 0; i < g->n_initializer && !ret; i++)
		ret = names_add(def, g->initializer[i]->name);
	for (i = 0; i < g->n_node && !ret; i++) {
		const Onnx__NodeProto *n = g->node[i];

		for (k = 0; k < n->n_output && !ret; k++)
			ret = names_add(def, n->output[k]);
		for (k = 0; k < n->n_input && !ret; k++)
			ret = names_add(use, n->input[k]);
		for (a = 0; a < n->n_attribute && !ret; a++) {
			const Onnx__AttributeProto *at = n->attribute[a];

			if (at->g)
				ret = scope_names(at->g, def, use);
			for (k = 0; k < at->n_graphs && !ret; k++)
				ret = scope_names(at->graphs[k], def, use);
		}
	}
	for (i = 0; i < g->n_output && !ret; i++)
		ret = names_add(use, g->output[i]->name);
	return ret;
}

/* A deep copy of a host value, or NULL. */
static struct cval *cval_dup(const struct cval *cv)
{
	return onnx_cval_new(cv->type, cv->rank, cv->dims, cv->data, cv->n);
}

/*
 * One of a device loop's graphs, in a scope of its own (@sc): the state
 * leaves' values @ids (of @c's graph, s32 where @preds says the value is
 * a pred) become its parameters, the
 * captured constants @caps host values again. @body: the Loop's body,
 * its outputs the next state; else the condition, i < M and cond.
 */
static int loop_graph(struct ctx *c, const Onnx__GraphProto *g,
		      const int *ids, const bool *preds, int n, bool has_m,
		      const struct names *caps, const struct cval **capv,
		      int ncap_v, bool body, struct vtpu_graph **out)
{
	struct ctx sc = {
		.g = vtpu_graph_new(), .opset = c->opset, .node = -1,
		.err = c->err, .errlen = c->errlen,
	};
	int *par = calloc(n + 1, sizeof(int)), *res = calloc(n + 1, sizeof(int));
	int i, k, lead = has_m ? 3 : 2, ret = -EINVAL;
	size_t nv = g->n_input - 2;

	*out = NULL;
	if (!sc.g || !par || !res) {
		onnx_fail(c, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct vtpu_shape s = onnx_shape_of(c, ids[i]);

		/* bindings hold no pred: such leaves cross as s32 0 and 1 */
		par[i] = onnx_chk(&sc, vtpu_g_parameter(sc.g, i, &s, NULL));
		if (preds && preds[i] && par[i] >= 0)
			par[i] = onnx_chk(&sc, vtpu_g_compare(sc.g, VTPU_NE, par[i],
							      onnx_splat(&sc, 0, par[i])));
	}
	if (!body) {
		/* (i < M) and cond, as s32 */
		int go = onnx_chk(&sc, vtpu_g_compare(sc.g, VTPU_NE, par[lead - 1],
						      onnx_splat(&sc, 0, par[lead - 1])));

		if (has_m)
			go = onnx_chk(&sc, vtpu_g_select(sc.g, go,
				vtpu_g_compare(sc.g, VTPU_LT, par[0], par[1]), go));
		res[0] = onnx_chk(&sc, vtpu_g_convert(sc.g, go, VTPU_S32));
		if (!sc.failed && vtpu_g_outputs(sc.g, 1, res) >= 0)
			ret = 0;
		goto out;
	}
	/* the body's inputs: i, cond (pred), the carried values */
	if (onnx_define(&sc, g->input[0]->name, par[0], NULL) ||
	    onnx_define(&sc, g->input[1]->name,
			onnx_chk(&sc, vtpu_g_compare(sc.g, VTPU_NE, par[lead - 1],
						     onnx_splat(&sc, 0, par[lead - 1]))),
			NULL))
		goto out;
	for (i = 0; (size_t)i < nv; i++)
		if (onnx_define(&sc, g->input[2 + i]->name, par[lead + i], NULL))
			goto out;
	for (k = 0, i = lead + (int)nv; (size_t)k < caps->n; k++) {
		struct cval *cv = k < ncap_v && capv[k] ? cval_dup(capv[k]) : NULL;

		if (k < ncap_v && capv[k]) {
			if (!cv || onnx_define(&sc, caps->v[k], -1, cv)) {
				onnx_cval_free(cv);
				onnx_fail(c, "out of memory");
				goto out;
			}
		} else if (onnx_define(&sc, caps->v[k], par[i++], NULL)) {
			goto out;
		}
	}
	if (build_body(&sc, g))
		goto out;
	/* the next state: i + 1, M, cond, the carried values, the captures */
	res[0] = onnx_chk(&sc, vtpu_g_binary(sc.g, VTPU_ADD, par[0],
					     onnx_splat(&sc, 1, par[0])));
	if (has_m)
		res[1] = par[1];
	res[lead - 1] = pred_of(&sc, g->output[0]->name);
	if (res[lead - 1] >= 0)
		res[lead - 1] = onnx_chk(&sc, vtpu_g_convert(sc.g, res[lead - 1],
							     VTPU_S32));
	for (i = 0; (size_t)i < nv; i++) {
		res[lead + i] = onnx_value(&sc, g->output[1 + i]->name);
		if (res[lead + i] >= 0 &&
		    onnx_shape_of(&sc, res[lead + i]).type != onnx_shape_of(c, ids[lead + i]).type)
			res[lead + i] = onnx_chk(&sc, vtpu_g_convert(sc.g, res[lead + i],
					onnx_shape_of(c, ids[lead + i]).type));
	}
	for (i = lead + (int)nv; i < n; i++)
		res[i] = par[i];
	for (i = 0; i < n; i++)
		if (preds && preds[i] && res[i] >= 0)
			res[i] = onnx_chk(&sc, vtpu_g_convert(sc.g, res[i], VTPU_S32));
	if (!sc.failed && vtpu_g_outputs(sc.g, n, res) >= 0)
		ret = 0;
out:
	if (sc.failed)
		c->failed = true;
	onnx_values_free(&sc);
	free(par);
	free(res);
	if (ret) {
		if (!c->failed)
			onnx_fail(c, "the Loop's body: %s", sc.g && vtpu_graph_error(sc.g) ?
				  vtpu_graph_error(sc.g) : "out of memory");
		vtpu_graph_free(sc.g);
		return -EINVAL;
	}
	*out = sc.g;
	return 0;
}

/*
 * Loop(M, cond, v...) whose trip count or condition is known only at run
 * time, without scan outputs: a loop on the device (a WHILE node). Its
 * state is the iteration number, M (when given), cond, the carried
 * values, and whatever the body reads from enclosing scopes that is not
 * a constant (constants are rebuilt inside: shapes and axes stay known).
 */
static int device_loop(struct ctx *c, node_t *n, const Onnx__GraphProto *g)
{
	struct names def = { 0 }, use = { 0 }, caps = { 0 };
	const struct cval **capv = NULL;
	struct vtpu_graph *cg = NULL, *bg = NULL;
	size_t nv = n->n_input - 2, i;
	bool has_m = onnx_has_in(n, 0);
	int lead = has_m ? 3 : 2, *ids = NULL, *outs = NULL, nids = 0, ret = -EINVAL;
	struct vtpu_shape one = { .type = VTPU_S32 };
	bool *preds = NULL;

	if (scope_names(g, &def, &use))
		goto oom;
	for (i = 0; i < use.n; i++)
		if (!names_has(&def, use.v[i]) && names_add(&caps, use.v[i]))
			goto oom;
	capv = calloc(caps.n + 1, sizeof(*capv));
	ids = calloc(lead + nv + caps.n + 1, sizeof(int));
	outs = calloc(lead + nv + caps.n + 1, sizeof(int));
	if (!capv || !ids || !outs)
		goto oom;
	ids[nids++] = onnx_chk(c, vtpu_g_constant(c->g, &one, &(int32_t){ 0 }));
	if (has_m)
		ids[nids++] = onnx_value(c, n->input[0]);
	if (onnx_has_in(n, 1)) {
		int p = pred_of(c, n->input[1]);

		ids[nids++] = p < 0 ? p : onnx_chk(c, vtpu_g_convert(c->g, p, VTPU_S32));
	} else {
		ids[nids++] = onnx_chk(c, vtpu_g_constant(c->g, &one, &(int32_t){ 1 }));
	}
	for (i = 0; i < nv; i++) {
		struct val *v = onnx_lookup(c, n->input[2 + i]);

		if (v && v->s) {
			onnx_fail(c, "unsupported: a sequence carried by a Loop on the device");
			goto out;
		}
		ids[nids++] = onnx_value(c, n->input[2 + i]);
	}
	for (i = 0; i < caps.n; i++) {
		struct val *v = onnx_lookup(c, caps.v[i]);

		if (!v) {
			onnx_fail(c, "'%s' is not defined", caps.v[i]);
			goto out;
		}
		if (v->s) {
			onnx_fail(c, "unsupported: a Loop on the device reading sequence '%s'",
				  caps.v[i]);
			goto out;
		}
		if (v->c)
			capv[i] = v->c;
		else
			ids[nids++] = onnx_value(c, caps.v[i]);
	}
	preds = calloc(nids + 1, sizeof(*preds));
	if (!preds)
		goto oom;
	for (i = 0; i < (size_t)nids; i++) {
		if (ids[i] < 0)
			goto out;
		preds[i] = onnx_shape_of(c, ids[i]).type == VTPU_PRED;
		if (preds[i])
			ids[i] = onnx_chk(c, vtpu_g_convert(c->g, ids[i], VTPU_S32));
	}
	if (loop_graph(c, g, ids, preds, nids, has_m, &caps, capv, (int)caps.n,
		       false, &cg) ||
	    loop_graph(c, g, ids, preds, nids, has_m, &caps, capv, (int)caps.n,
		       true, &bg))
		goto out;
	ret = ir_while(&c->g->ir, nids, ids, cg, bg, outs);
	cg = bg = NULL;
	if (ret < 0) {
		onnx_chk(c, ret);
		goto out;
	}
	for (i = 0; i < nv; i++) {
		int o = outs[lead + i];

		if (preds[lead + i])
			o = onnx_chk(c, vtpu_g_compare(c->g, VTPU_NE, o,
						       onnx_splat(c, 0, o)));
		if (onnx_out(c, n, i, o) < 0)
			goto out;
	}
	ret = 0;
	goto out;
oom:
	onnx_fail(c, "out of memory");
out:
	vtpu_graph_free(cg);
	vtpu_graph_free(bg);
	free(def.v);
	free(use.v);
	free(caps.v);
	free(capv);
	free(preds);
	free(ids);
	free(outs);
	return c->failed ? -EINVAL : ret;
}

/*
 * Loop(M, cond, v...): body(i, cond, v...) -> (cond, v..., scan...).
 * Each scan output is its per-iteration values stacked along axis 0.
 */
int onnx_op_loop(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__GraphProto *g = graph_attr(c, n, "body");
	int64_t m = MAX_ITERS, it;
	size_t nv, ns, i;
	struct val *state = NULL, v;
	int **scan = NULL, running = -1, ret = -EINVAL;
	bool cond = true, known = true;

	(void)d;
	if (!g)
		return -EINVAL;
	if (n->n_input < 2 || g->n_input != n->n_input ||
	    g->n_output < n->n_input - 1)
		return onnx_fail(c, "the body's inputs and outputs do not match the Loop's");
	nv = n->n_input - 2;
	ns = g->n_output - 1 - nv;
	if (n->n_output != nv + ns)
		return onnx_fail(c, "Loop has %zu outputs, its body makes %zu",
				 n->n_output, nv + ns);
	if (onnx_has_in(n, 0)) {
		int64_t mm;

		if (get_val(c, n->input[0], &v))
			return -EINVAL;
		if (!v.c && !v.b) {
			if (ns)
				return onnx_fail(c, "unsupported: scan outputs of a Loop whose trip count is known only at run time");
			return device_loop(c, n, g);
		}
		if (onnx_in_ints(c, n, 0, &mm, 1, "trip count") != 1)
			return -EINVAL;
		m = mm < 0 ? 0 : mm;
		if (m > MAX_ITERS)
			return onnx_fail(c, "unsupported: %lld iterations (at most %d)",
					 (long long)m, MAX_ITERS);
	}
	if (onnx_has_in(n, 1)) {
		if (get_val(c, n->input[1], &v))
			return -EINVAL;
		known = known_bool(c, &v, &cond);
		if (!known && (running = pred_of(c, n->input[1])) < 0)
			return -EINVAL;
	}
	if (!onnx_has_in(n, 0) && !known) {
		if (ns)
			return onnx_fail(c, "unsupported: scan outputs of a Loop without a trip count whose condition is known only at run time");
		return device_loop(c, n, g);
	}
	state = calloc(nv + 1, sizeof(*state));
	scan = calloc(ns + 1, sizeof(*scan));
	if (!state || !scan)
		goto oom;
	for (i = 0; i < ns; i++)
		if (!(scan[i] = calloc(m + 1, sizeof(int))))
			goto oom;
	for (i = 0; i < nv; i++)
		if (get_val(c, n->input[2 + i], &state[i]))
			goto out;
	for (it = 0; it < m && (!known || cond); it++) {
		struct val cv;

		if (!known && ns) {
			onnx_fail(c, "unsupported: scan outputs of a Loop whose condition is known only at run time");
			goto out;
		}
		if (define_scalar(c, g->input[0]->name, VTPU_S64, it))
			goto out;
		if (known ? define_scalar(c, g->input[1]->name, VTPU_PRED, cond) :
		    onnx_define(c, g->input[1]->name, running, NULL))
			goto out;
		for (i = 0; i < nv; i++)
			if (alias(c, g->input[2 + i]->name, &state[i]))
				goto out;
		if (build_body(c, g) || get_val(c, g->output[0]->name, &cv))
			goto out;
		for (i = 0; i < nv; i++) {
			struct val o;

			if (get_val(c, g->output[1 + i]->name, &o))
				goto out;
			if (!known) {	/* carried values stop once false */
				int a = onnx_value(c, g->output[1 + i]->name);
				/* the body's input still names the old value */
				int b = onnx_value(c, g->input[2 + i]->name);

				if (o.s || state[i].s || a < 0 || b < 0) {
					onnx_fail(c, "unsupported: a sequence carried by a Loop whose condition is known only at run time");
					goto out;
				}
				o.id = choose(c, running, a, b);
				o.c = NULL;
				if (o.id < 0)
					goto out;
			}
			state[i] = o;
		}
		for (i = 0; i < ns; i++)
			if ((scan[i][it] = onnx_value(c, g->output[1 + nv + i]->name)) < 0)
				goto out;
		if (known) {
			known = known_bool(c, &cv, &cond);
			if (!known && (running = pred_of(c, g->output[0]->name)) < 0)
				goto out;
		} else {
			int nc = pred_of(c, g->output[0]->name);

			running = nc < 0 ? nc : onnx_chk(c, vtpu_g_select(c->g, running, nc, running));
			if (running < 0)
				goto out;
		}
	}
	for (i = 0; i < nv; i++)
		if (alias(c, n->output[i], &state[i]))
			goto out;
	for (i = 0; i < ns; i++)
		if (onnx_out(c, n, nv + i, stack(c, scan[i], (int)it, 0, false)) < 0)
			goto out;
	ret = 0;
	goto out;
oom:
	onnx_fail(c, "out of memory");
out:
	for (i = 0; scan && i < ns; i++)
		free(scan[i]);
	free(scan);
	free(state);
	return c->failed ? -EINVAL : ret;
}

/* Slice @t of @x along @axis, without that axis. */
static int take(struct ctx *c, int x, int axis, int64_t t)
{
	struct vtpu_shape s = onnx_shape_of(c, x);
	int64_t st[R] = { 0 }, lim[R], dims[R];
	int i, k;

	for (i = 0, k = 0; i < s.rank; i++) {
		lim[i] = i == axis ? t + 1 : s.dims[i];
		st[i] = i == axis ? t : 0;
		if (i != axis)
			dims[k++] = s.dims[i];
	}
	x = onnx_chk(c, vtpu_g_slice(c->g, x, st, lim, NULL));
	return x < 0 ? x : onnx_chk(c, vtpu_g_reshape(c->g, x, k, dims));
}

static int64_t attr_at(node_t *n, const char *name, size_t i)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);

	return a && i < a->n_ints ? a->ints[i] : 0;
}

/*
 * One Scan over @state (@nst ids, updated) and @xs (@nx ids): each
 * iteration slices every scan input, builds the body and collects its
 * scan outputs, stacked into @ys at the end.
 */
static int scan_core(struct ctx *c, node_t *n, const Onnx__GraphProto *g,
		     int *state, int nst, const int *xs, int nx, int *ys,
		     int ny, bool v8)
{
	int64_t len = -1, t;
	int **parts = calloc(ny + 1, sizeof(*parts)), i, ret = -EINVAL;

	if (!parts)
		return onnx_fail(c, "out of memory");
	for (i = 0; i < nx; i++) {
		struct vtpu_shape s = onnx_shape_of(c, xs[i]);
		int ax = v8 ? 0 : (int)attr_at(n, "scan_input_axes", i);

		ax = ax < 0 ? ax + s.rank : ax;
		if (ax < 0 || ax >= s.rank || (len >= 0 && s.dims[ax] != len)) {
			onnx_fail(c, "scan inputs of different lengths");
			goto out;
		}
		len = s.dims[ax];
	}
	if (len < 0 || len > MAX_ITERS) {
		onnx_fail(c, "unsupported: a Scan of %lld iterations", (long long)len);
		goto out;
	}
	for (i = 0; i < ny; i++)
		if (!(parts[i] = calloc(len + 1, sizeof(int)))) {
			onnx_fail(c, "out of memory");
			goto out;
		}
	for (t = 0; t < len; t++) {
		for (i = 0; i < nst; i++)
			if (onnx_define(c, g->input[i]->name, state[i], NULL))
				goto out;
		for (i = 0; i < nx; i++) {
			int ax = v8 ? 0 : (int)attr_at(n, "scan_input_axes", i);
			bool rev = attr_at(n, v8 ? "directions" : "scan_input_directions", i);
			int x;

			ax = ax < 0 ? ax + onnx_shape_of(c, xs[i]).rank : ax;
			x = take(c, xs[i], ax, rev ? len - 1 - t : t);
			if (x < 0 || onnx_define(c, g->input[nst + i]->name, x, NULL))
				goto out;
		}
		if (build_body(c, g))
			goto out;
		for (i = 0; i < nst; i++)
			if ((state[i] = onnx_value(c, g->output[i]->name)) < 0)
				goto out;
		for (i = 0; i < ny; i++)
			if ((parts[i][t] = onnx_value(c, g->output[nst + i]->name)) < 0)
				goto out;
	}
	for (i = 0; i < ny; i++) {
		int ax = v8 ? 0 : (int)attr_at(n, "scan_output_axes", i);
		bool rev = !v8 && attr_at(n, "scan_output_directions", i);

		if ((ys[i] = stack(c, parts[i], (int)len, ax, rev)) < 0)
			goto out;
	}
	ret = 0;
out:
	for (i = 0; i < ny; i++)
		free(parts[i]);
	free(parts);
	return c->failed ? -EINVAL : ret;
}

/*
 * Scan (opset 9 on): N state values, then num_scan_inputs inputs sliced
 * along their axes. Opset 8's has a batch axis first (and an unused
 * sequence_lens input): each batch entry is scanned on its own and the
 * results stacked.
 */
int onnx_op_scan(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__GraphProto *g = graph_attr(c, n, "body");
	bool v8 = c->opset < 9;
	int64_t k = onnx_attr_i(n, "num_scan_inputs", -1), b, batch = 1;
	int first = v8, nin, nst, ny, i, *ids, *st, *xs, *ys, **outs, ret = -EINVAL;

	(void)d;
	if (!g)
		return -EINVAL;
	if (v8 && onnx_has_in(n, 0))
		return onnx_fail(c, "unsupported: Scan with sequence_lens");
	nin = (int)n->n_input - first;
	nst = nin - (int)k;
	ny = (int)g->n_output - nst;
	if (k < 1 || nst < 0 || ny < 0 || (int)g->n_input != nin ||
	    (int)n->n_output != nst + ny)
		return onnx_fail(c, "the body's inputs and outputs do not match the Scan's");
	ids = calloc(4 * (nin + ny) + 4, sizeof(int));
	outs = calloc(nst + ny + 1, sizeof(*outs));
	if (!ids || !outs) {
		free(ids);
		free(outs);
		return onnx_fail(c, "out of memory");
	}
	st = ids + nin + ny;
	xs = st + nin + ny;
	ys = xs + nin + ny;
	for (i = 0; i < nin; i++)
		if ((ids[i] = onnx_in(c, n, first + i)) < 0)
			goto out;
	if (v8)
		batch = onnx_shape_of(c, ids[0]).dims[0];
	for (i = 0; i < nst + ny; i++)
		if (!(outs[i] = calloc(batch + 1, sizeof(int))))
			goto out;
	for (b = 0; b < batch; b++) {
		for (i = 0; i < nin; i++) {
			int x = v8 ? take(c, ids[i], 0, b) : ids[i];

			if (x < 0)
				goto out;
			(i < nst ? st : xs)[i < nst ? i : i - nst] = x;
		}
		if (scan_core(c, n, g, st, nst, xs, (int)k, ys, ny, v8))
			goto out;
		for (i = 0; i < nst; i++)
			outs[i][b] = st[i];
		for (i = 0; i < ny; i++)
			outs[nst + i][b] = ys[i];
	}
	for (i = 0; i < nst + ny; i++) {
		int y = v8 ? stack(c, outs[i], (int)batch, 0, false) : outs[i][0];

		if (onnx_out(c, n, i, y) < 0)
			goto out;
	}
	ret = 0;
out:
	for (i = 0; i < nst + ny; i++)
		free(outs[i]);
	free(outs);
	free(ids);
	return c->failed ? -EINVAL : ret;
}
