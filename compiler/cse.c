// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * cse.c - common subexpressions (QBE gvn.c, without the dominators: the
 * graph has no control flow). Two nodes are the same value when they
 * have the same op, shape and operands and equal attributes; constants
 * compare by content. One forward walk with a hash table of the nodes
 * seen so far: a node's operands are first remapped to their
 * representatives, so equal subtrees merge bottom-up in O(n).
 *
 * Attributes compare as ir_attr_words() describes them, the words the
 * compile cache hashes too. Parameters never merge: each is its own
 * binding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "ir.h"

/* Chained one-shot hashes: each part seeds the next. */
static uint64_t node_hash(const struct ir_graph *g, const struct ir_node *n)
{
	int64_t head[2 + VTPU_MAX_RANK] = { n->op, n->shape.type };
	int64_t w[IR_MAX_ATTR_WORDS];
	uint64_t h;

	memcpy(&head[2], n->shape.dims, n->shape.rank * sizeof(int64_t));
	h = XXH3_64bits(head, (2 + n->shape.rank) * sizeof(int64_t));
	if (n->nin)
		h = XXH3_64bits_withSeed(n->in, n->nin * sizeof(int), h);
	if (n->op == OP_CONST)
		return XXH3_64bits_withSeed(n->a.cst.data, ir_const_bytes(n), h);
	return XXH3_64bits_withSeed(w, ir_attr_words(g, n, w) * sizeof(*w), h);
}

static bool node_eq(const struct ir_graph *g, const struct ir_node *a,
		    const struct ir_node *b)
{
	if (a->op != b->op || !shape_eq(&a->shape, &b->shape) ||
	    a->nin != b->nin ||
	    (a->nin && memcmp(a->in, b->in, a->nin * sizeof(int))))
		return false;
	return ir_attrs_eq(g, a, b);
}

/*
 * Open addressing, linear probing; slots hold node id + 1 (0: empty).
 * Returns the representative of node @i, inserting @i if it is new.
 */
static int lookup(const struct ir_graph *g, int *slots, size_t mask, int i)
{
	size_t h = node_hash(g, &g->nodes[i]) & mask;

	for (; slots[h]; h = (h + 1) & mask)
		if (node_eq(g, &g->nodes[slots[h] - 1], &g->nodes[i]))
			return slots[h] - 1;
	slots[h] = i + 1;
	return i;
}

int pass_cse(struct ir_graph *g)
{
	size_t cap = 16;
	int *repl, *slots, i, k, r;

	if (g->errcode)
		return -g->errcode;
	while (cap < 2 * (size_t)g->n)
		cap *= 2;
	repl = malloc((g->n + 1) * sizeof(int));
	slots = calloc(cap, sizeof(int));
	if (!repl || !slots) {
		free(slots);
		free(repl);
		return ir_error(g, ENOMEM, "out of memory");
	}
	for (i = 0; i < g->n; i++) {
		struct ir_node *n = &g->nodes[i];

		repl[i] = i;
		for (k = 0; k < n->nin; k++)
			n->in[k] = repl[n->in[k]];
		if (n->op == OP_PARAM || n->op == OP_DEAD)
			continue;
		r = lookup(g, slots, cap - 1, i);
		if (r == i)
			continue;
		repl[i] = r;
		n->op = OP_DEAD;
		n->nin = 0;
	}
	for (k = 0; k < g->nout; k++)
		g->outputs[k] = repl[g->outputs[k]];
	free(slots);
	free(repl);
	return ir_compact(g);
}
