// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/training.c - the ai.onnx.preview.training domain: Gradient, the
 * derivatives of a value of the graph with respect to earlier ones, by
 * the compiler's reverse-mode pass (compiler/grad.c).
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* An attribute string as a C string, in @buf. */
static const char *attr_string(struct ctx *c, const ProtobufCBinaryData *s,
			       char *buf, size_t size)
{
	if (!s->data || s->len >= size || memchr(s->data, 0, s->len)) {
		onnx_fail(c, "a value name of %zu bytes", s->len);
		return NULL;
	}
	memcpy(buf, s->data, s->len);
	buf[s->len] = 0;
	return buf;
}

/*
 * Gradient-1: output i is d sum(y) / d xs[i]. The xs are named by the
 * attribute (the node's inputs feed them); zs, values y depends on that
 * are not differentiated, change nothing here: only paths from an x count.
 */
int onnx_op_gradient(struct ctx *c, node_t *n)
{
	const Onnx__AttributeProto *xs = onnx_attr(n, "xs"), *y = onnx_attr(n, "y");
	int ids[64], out[64], yid;
	char name[256];
	size_t i;

	for (i = 0; i < n->n_attribute; i++) {
		const char *a = n->attribute[i]->name ? n->attribute[i]->name : "";

		if (strcmp(a, "xs") && strcmp(a, "y") && strcmp(a, "zs"))
			return onnx_fail(c, "unsupported attribute %s", a);
	}
	if (!xs || !y || !xs->n_strings)
		return onnx_fail(c, "Gradient needs the attributes xs and y");
	if (xs->n_strings > sizeof(ids) / sizeof(ids[0]) || xs->n_strings != n->n_output)
		return onnx_fail(c, "Gradient: %zu xs for %zu outputs",
				 xs->n_strings, n->n_output);
	if (!attr_string(c, &y->s, name, sizeof(name)))
		return -EINVAL;
	yid = onnx_value(c, name);
	for (i = 0; i < xs->n_strings && yid >= 0; i++) {
		if (!attr_string(c, &xs->strings[i], name, sizeof(name)))
			return -EINVAL;
		ids[i] = onnx_value(c, name);
		if (ids[i] < 0)
			return ids[i];
	}
	if (yid < 0)
		return yid;
	if (onnx_chk(c, vtpu_g_gradient(c->g, yid, (int)xs->n_strings, ids,
					out)) < 0)
		return -EINVAL;
	for (i = 0; i < xs->n_strings; i++)
		if (onnx_out(c, n, i, out[i]) < 0)
			return -EINVAL;
	return 0;
}
