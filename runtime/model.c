// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * An ONNX model's signature, read without compiling it: what a caller
 * must feed (graph inputs that are not initializers) and what comes
 * back, with element types and dims as the model declares them. Tools
 * use it to bind their tensors to the model's inputs before
 * vtpu_onnx_parse_bound() specializes the graph on them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "vtpu.h"

static bool is_initializer(const Onnx__GraphProto *g, const char *name)
{
	for (size_t i = 0; i < g->n_initializer; i++)
		if (g->initializer[i]->name &&
		    !strcmp(g->initializer[i]->name, name))
			return true;
	for (size_t i = 0; i < g->n_sparse_initializer; i++) {
		const Onnx__SparseTensorProto *sp = g->sparse_initializer[i];

		if (sp->values && sp->values->name &&
		    !strcmp(sp->values->name, name))
			return true;
	}
	return false;
}

static void value_free(struct vtpu_model_value *v)
{
	free(v->name);
	for (int i = 0; i < VTPU_TENSOR_MAX_RANK; i++)
		free(v->dim_params[i]);
}

/* @v from a ValueInfoProto; -ENOMEM is the only failure. */
static int value_from_proto(const Onnx__ValueInfoProto *vi,
			    struct vtpu_model_value *v)
{
	const Onnx__TypeProto__Tensor *tt = NULL;

	v->rank = -1;
	v->name = strdup(vi->name ? vi->name : "");
	if (!v->name)
		return -ENOMEM;
	if (vi->type && vi->type->value_case ==
	    ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		tt = vi->type->tensor_type;
	if (!tt)
		return 0;
	v->dtype = tt->elem_type;
	if (!tt->shape || tt->shape->n_dim > VTPU_TENSOR_MAX_RANK)
		return 0;
	v->rank = (int)tt->shape->n_dim;
	for (int i = 0; i < v->rank; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];

		v->dims[i] = -1;
		if (d->value_case ==
		    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			v->dims[i] = d->dim_value;
		else if (d->value_case ==
			 ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			 d->dim_param && !(v->dim_params[i] = strdup(d->dim_param)))
			return -ENOMEM;
	}
	return 0;
}

void vtpu_model_info_free(struct vtpu_model_info *m)
{
	if (!m)
		return;
	for (int i = 0; m->inputs && i < m->ninputs; i++)
		value_free(&m->inputs[i]);
	for (int i = 0; m->outputs && i < m->noutputs; i++)
		value_free(&m->outputs[i]);
	free(m->inputs);
	free(m->outputs);
	free(m);
}

static int graph_info(const Onnx__GraphProto *g, struct vtpu_model_info *m)
{
	m->inputs = calloc(g->n_input + 1, sizeof(*m->inputs));
	m->outputs = calloc(g->n_output + 1, sizeof(*m->outputs));
	if (!m->inputs || !m->outputs)
		return -ENOMEM;
	for (size_t i = 0; i < g->n_input; i++) {
		const char *name = g->input[i]->name;

		if (!name || is_initializer(g, name))
			continue;
		if (value_from_proto(g->input[i], &m->inputs[m->ninputs++]))
			return -ENOMEM;
	}
	for (size_t i = 0; i < g->n_output; i++)
		if (value_from_proto(g->output[i], &m->outputs[m->noutputs++]))
			return -ENOMEM;
	return 0;
}

/*
 * The signature without the weights. Unpacking a whole ModelProto
 * copies every initializer's bytes (seconds for a model of hundreds of
 * MB), and the signature needs only the graph's inputs, outputs and the
 * initializers' names. So the protobuf wire format is walked, and a
 * small ModelProto written of just those: a graph (field 7) of its
 * inputs (11) and outputs (12) as they are, and each initializer (5) and
 * sparse initializer (15, its values 1) cut to its name (8).
 */
struct wire {
	const uint8_t *p, *end;
};

struct out {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static bool varint(struct wire *w, uint64_t *v)
{
	int shift;

	*v = 0;
	for (shift = 0; shift < 64 && w->p < w->end; shift += 7) {
		uint8_t b = *w->p++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* The next field: its number, wire type and, for type 2, its bytes. */
static bool field(struct wire *w, uint32_t *num, int *type, struct wire *body)
{
	uint64_t key, n;

	if (!varint(w, &key) || key >> 32)
		return false;
	*num = (uint32_t)(key >> 3);
	*type = key & 7;
	body->p = w->p;
	switch (*type) {
	case 0:
		return varint(w, &n);
	case 1:
	case 5:
		n = *type == 1 ? 8 : 4;
		break;
	case 2:
		if (!varint(w, &n))
			return false;
		body->p = w->p;
		break;
	default:	/* groups: not in ONNX */
		return false;
	}
	if (n > (uint64_t)(w->end - w->p))
		return false;
	w->p += n;
	body->end = w->p;
	return true;
}

static void put(struct out *o, const void *data, size_t n)
{
	if (o->oom || n > SIZE_MAX / 2 - o->len)
		return (void)(o->oom = true);
	if (o->len + n > o->cap) {
		size_t cap = (o->len + n) * 2 + 64;
		uint8_t *p = realloc(o->p, cap);

		if (!p)
			return (void)(o->oom = true);
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->len, data, n);
	o->len += n;
}

static void put_varint(struct out *o, uint64_t v)
{
	uint8_t b[10];
	int n = 0;

	do {
		b[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	put(o, b, n);
}

/* A length-delimited field @num holding @n bytes. */
static void put_bytes(struct out *o, uint32_t num, const void *data, size_t n)
{
	put_varint(o, (uint64_t)num << 3 | 2);
	put_varint(o, n);
	put(o, data, n);
}

/* TensorProto @t cut to its name, as field @num of @o. */
static bool put_name_only(struct out *o, uint32_t num, struct wire t)
{
	struct wire body, name = { NULL, NULL };
	struct out m = { 0 };
	uint32_t f;
	int type;

	while (t.p < t.end) {
		if (!field(&t, &f, &type, &body))
			return false;
		if (f == 8 && type == 2)
			name = body;
	}
	if (name.p)
		put_bytes(&m, 8, name.p, name.end - name.p);
	put_bytes(o, num, m.p ? m.p : (const uint8_t *)"", m.len);
	o->oom |= m.oom;
	free(m.p);
	return true;
}

static bool slim_graph(struct out *o, struct wire g)
{
	struct wire body, sb;
	struct out sp;
	uint32_t f, sf;
	int type, st;

	while (g.p < g.end) {
		if (!field(&g, &f, &type, &body))
			return false;
		if (type != 2)
			continue;
		if (f == 11 || f == 12) {
			put_bytes(o, f, body.p, body.end - body.p);
		} else if (f == 5) {
			if (!put_name_only(o, 5, body))
				return false;
		} else if (f == 15) {
			bool ok = true;

			memset(&sp, 0, sizeof(sp));
			while (ok && body.p < body.end) {
				ok = field(&body, &sf, &st, &sb);
				if (ok && sf == 1 && st == 2)
					ok = put_name_only(&sp, 1, sb);
			}
			if (ok)
				put_bytes(o, 15, sp.p ? sp.p : (const uint8_t *)"",
					  sp.len);
			o->oom |= sp.oom;
			free(sp.p);
			if (!ok)
				return false;
		}
	}
	return true;
}

/* The slim ModelProto, or NULL (malformed, or out of memory). */
static Onnx__ModelProto *slim_model(const void *data, size_t len)
{
	struct wire w = { data, (const uint8_t *)data + len }, body;
	struct out g = { 0 }, m = { 0 };
	Onnx__ModelProto *mp = NULL;
	bool ok = true, graph = false;
	uint32_t f;
	int type;

	while (ok && w.p < w.end) {
		ok = field(&w, &f, &type, &body);
		if (ok && f == 7 && type == 2) {
			ok = slim_graph(&g, body);
			graph = true;
		}
	}
	if (ok && graph && !g.oom) {
		put_bytes(&m, 7, g.p ? g.p : (const uint8_t *)"", g.len);
		if (!m.oom)
			mp = onnx__model_proto__unpack(NULL, m.len, m.p);
	}
	free(g.p);
	free(m.p);
	return mp;
}

int vtpu_model_info(const void *data, size_t len,
		    struct vtpu_model_info **out, char *err, size_t errlen)
{
	Onnx__ModelProto *mp;
	struct vtpu_model_info *m;
	int ret;

	if (!out || !data) {
		if (err && errlen)
			snprintf(err, errlen, "model_info: no %s",
				 out ? "data" : "out");
		return -EINVAL;
	}
	*out = NULL;
	/* what does not walk unpacks whole, to say what is wrong */
	mp = slim_model(data, len);
	if (!mp)
		mp = onnx__model_proto__unpack(NULL, len, data);
	if (!mp || !mp->graph) {
		if (mp)
			onnx__model_proto__free_unpacked(mp, NULL);
		if (err && errlen)
			snprintf(err, errlen, "not an ONNX model (no ModelProto with a graph)");
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	ret = m ? graph_info(mp->graph, m) : -ENOMEM;
	onnx__model_proto__free_unpacked(mp, NULL);
	if (ret) {
		vtpu_model_info_free(m);
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return ret;
	}
	*out = m;
	return 0;
}

/* The input @t feeds: the one its name names, else the @i-th. */
static const struct vtpu_model_value *
bound_input(const struct vtpu_model_info *m, const struct vtpu_tensor *t,
	    int i)
{
	for (int k = 0; t->name && k < m->ninputs; k++)
		if (!strcmp(m->inputs[k].name, t->name))
			return &m->inputs[k];
	return i < m->ninputs ? &m->inputs[i] : NULL;
}

/*
 * Integers and booleans bind as int64 values, floats as doubles; others
 * by dims only. A boolean's value lets an If pick its branch.
 */
static enum vtpu_elem value_type(enum vtpu_elem dt)
{
	switch (dt) {
	case VTPU_ELEM_BOOL:
	case VTPU_ELEM_INT32:
	case VTPU_ELEM_INT64:
		return VTPU_ELEM_INT64;
	case VTPU_ELEM_FLOAT:
	case VTPU_ELEM_DOUBLE:
		return VTPU_ELEM_DOUBLE;
	default:
		return VTPU_ELEM_UNDEFINED;
	}
}

int vtpu_model_bind(const struct vtpu_model_info *m,
		    const struct vtpu_tensor *t, int n,
		    struct vtpu_onnx_binding *b, void **values,
		    char *err, size_t errlen)
{
	size_t total = 0, off = 0;
	uint8_t *vals;
	int nb = 0;

	if (!values || !m || n < 0 || (n && (!t || !b))) {
		if (err && errlen)
			snprintf(err, errlen, "model_bind: %s",
				 n < 0 ? "negative count" : "a required pointer is NULL");
		return -EINVAL;
	}
	for (int i = 0; i < n; i++)
		total += t[i].n * 8;
	*values = vals = malloc(total + 8);
	if (!vals) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		const struct vtpu_model_value *in = bound_input(m, &t[i], i);
		struct vtpu_onnx_binding *bi = &b[nb];
		enum vtpu_elem vt = value_type(t[i].dtype);

		/* Undecoded tensors and extra ones bind nothing. */
		if (!in || t[i].dtype == VTPU_ELEM_UNDEFINED)
			continue;
		memset(bi, 0, sizeof(*bi));
		bi->name = in->name;
		/* Beyond VTPU_MAX_RANK the frontend refuses the input. */
		bi->rank = t[i].rank <= VTPU_MAX_RANK ? t[i].rank : -1;
		for (int d = 0; d < t[i].rank && d < VTPU_MAX_RANK; d++)
			bi->dims[d] = t[i].dims[d];
		if (bi->rank >= 0 && vt != VTPU_ELEM_UNDEFINED &&
		    !vtpu_elem_convert(t[i].dtype, t[i].data, t[i].n, vt,
				       vals + off, NULL, 0)) {
			if (vt == VTPU_ELEM_INT64)
				bi->values = (const int64_t *)(vals + off);
			else
				bi->fvalues = (const double *)(vals + off);
			off += t[i].n * 8;
		}
		nb++;
	}
	return nb;
}
