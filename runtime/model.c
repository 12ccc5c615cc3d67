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
