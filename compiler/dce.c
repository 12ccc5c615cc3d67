// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * dce.c - dead code elimination. A node lives when an output depends on
 * it; parameters always live, since they are bindings the caller passes
 * whether or not the program reads them. ir_compact() would drop the
 * dead nodes too, but doing it here makes the pass explicit in the
 * pipeline and its effect counted (VTPU_DUMP shows the count).
 *
 * Inputs have smaller ids than their users, so one backward walk over
 * the nodes marks everything live without recursion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* Marks the nodes no output needs DEAD; returns how many, or -errno. */
static int dce_mark(struct ir_graph *g)
{
	char *live = calloc(g->n + 1, 1);
	int i, k, removed = 0;

	if (!live)
		return ir_error(g, ENOMEM, "out of memory");
	for (k = 0; k < g->nout; k++)
		live[g->outputs[k]] = 1;
	for (i = g->n - 1; i >= 0; i--) {
		struct ir_node *n = &g->nodes[i];

		if (n->op == OP_PARAM)
			live[i] = 1;
		if (live[i]) {
			for (k = 0; k < n->nin; k++)
				live[n->in[k]] = 1;
			continue;
		}
		if (n->op != OP_DEAD)
			removed++;
		n->op = OP_DEAD;
		n->nin = 0;
	}
	free(live);
	return removed;
}

int pass_dce(struct ir_graph *g)
{
	const char *dump = getenv("VTPU_DUMP");
	int removed;

	if (g->errcode)
		return -g->errcode;
	removed = dce_mark(g);
	if (removed < 0)
		return removed;
	if (dump && (!strcmp(dump, "all") || !strncmp(dump, "dce", 3)))
		fprintf(stderr, "// dce: removed %d nodes\n", removed);
	return ir_compact(g);
}
