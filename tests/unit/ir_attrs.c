// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: each op's attributes are described once (ir_attr_words())
 * and CSE and the compile cache agree on them. For every op of the table
 * and every byte of a node's attribute union, a node that differs from
 * another only in that byte either is a different value for both (CSE
 * keeps both nodes, the cache keys differ) or the same value for both
 * (CSE merges them, the keys are equal). Ops that carry attributes have
 * some byte that matters; constants compare by their data.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#include "kselftest_harness.h"

static const struct vtpu_device_params dev = {
	.vmem_size = 1 << 20, .num_cores = 1, .hbm_size = 1 << 26,
};

/*
 * A graph of one f32[2,3] parameter and two @op nodes on it, their
 * attribute unions @a and @b; both nodes are outputs. @two: both nodes,
 * else only the first (for the cache key of a single node).
 */
static struct ir_graph *graph(enum ir_op op, const void *a, const void *b,
			      bool two)
{
	struct vtpu_graph *vg = vtpu_graph_new();
	struct ir_graph *g = &vg->ir;
	struct vtpu_shape s = { VTPU_F32, 2, { 2, 3 } };
	int nin = ir_ops[op].nin < 0 ? 2 : ir_ops[op].nin, in[3] = { 0, 0, 0 };
	int ids[2], p;

	p = ir_add(g, OP_PARAM, &s, 0, NULL);
	g->nparams = 1;
	for (int k = 0; k < (two ? 2 : 1); k++) {
		ids[k] = ir_add(g, op, &s, nin, in);
		memcpy(&g->nodes[ids[k]].a, k ? b : a, sizeof(g->nodes[0].a));
	}
	g->outputs = malloc(2 * sizeof(int));
	g->nout = two ? 2 : 1;
	memcpy(g->outputs, ids, sizeof(ids));
	(void)p;
	return g;
}

static int count(const struct ir_graph *g, enum ir_op op)
{
	int c = 0;

	for (int i = 0; i < g->n; i++)
		c += g->nodes[i].op == op;
	return c;
}

static void key(enum ir_op op, const void *a, uint64_t out[2])
{
	struct ir_graph *g = graph(op, a, a, false);

	graph_hash(g, &dev, NULL, out);
	vtpu_graph_free((struct vtpu_graph *)g);
}

TEST(every_op_agrees_between_cse_and_the_cache)
{
	size_t size = sizeof(((struct ir_node *)0)->a);

	for (int op = 0; op < OP_NR; op++) {
		unsigned char zero[sizeof(((struct ir_node *)0)->a)] = { 0 };
		unsigned char flip[sizeof(zero)];
		uint64_t k0[2], k1[2];
		int significant = 0;

		/* params never merge; constants hold a pointer; DEAD is none */
		if (op == OP_PARAM || op == OP_CONST || op == OP_DEAD)
			continue;
		key(op, zero, k0);
		for (size_t byte = 0; byte < size; byte++) {
			struct ir_graph *g;
			int64_t wa[IR_MAX_ATTR_WORDS], wb[IR_MAX_ATTR_WORDS];
			bool differ, merged, keys_differ;
			int na, nb;

			memcpy(flip, zero, size);
			flip[byte] ^= 1;	/* a valid bool, enum or int */
			g = graph(op, zero, flip, true);
			na = ir_attr_words(g, &g->nodes[1], wa);
			nb = ir_attr_words(g, &g->nodes[2], wb);
			differ = na != nb || memcmp(wa, wb, na * sizeof(*wa));
			ASSERT_EQ(0, pass_cse(g));
			merged = count(g, op) == 1;
			vtpu_graph_free((struct vtpu_graph *)g);
			key(op, flip, k1);
			keys_differ = memcmp(k0, k1, sizeof(k0)) != 0;
			EXPECT_EQ(differ, !merged)
				TH_LOG("%s byte %zu: CSE %s", ir_ops[op].name, byte,
				       merged ? "merged" : "kept both");
			EXPECT_EQ(differ, keys_differ)
				TH_LOG("%s byte %zu: cache keys %s", ir_ops[op].name,
				       byte, keys_differ ? "differ" : "equal");
			significant += differ;
		}
		/* ops with attributes describe some of them */
		switch (op) {
		case OP_COMPARE: case OP_BROADCAST: case OP_TRANSPOSE:
		case OP_DOT: case OP_CONV: case OP_REDUCE: case OP_SOFTMAX:
		case OP_LOG_SOFTMAX: case OP_CONCAT: case OP_SLICE: case OP_PAD:
		case OP_P_MATMUL: case OP_P_REDUCE_LAST: case OP_P_COPY:
		case OP_GATHER: case OP_P_DWCONV: case OP_WHILE: case OP_WHILE_OUT:
			EXPECT_LT(0, significant) TH_LOG("%s", ir_ops[op].name);
			break;
		default:
			EXPECT_EQ(0, significant) TH_LOG("%s", ir_ops[op].name);
		}
	}
}

TEST(constants_compare_by_data)
{
	struct vtpu_shape s = { VTPU_F32, 1, { 4 } };
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 2, 3, 5 };
	struct vtpu_graph *vg = vtpu_graph_new();
	int ids[3];

	ids[0] = vtpu_g_constant(vg, &s, a);
	ids[1] = vtpu_g_constant(vg, &s, a);
	ids[2] = vtpu_g_constant(vg, &s, b);
	ASSERT_LE(0, vtpu_g_outputs(vg, 3, ids));
	ASSERT_EQ(0, pass_cse(&vg->ir));
	EXPECT_EQ(2, count(&vg->ir, OP_CONST));
	vtpu_graph_free(vg);
}

TEST(unused_tail_entries_are_not_attributes)
{
	/* A rank-2 transpose: perm[2..] is stale, not an attribute. */
	struct vtpu_graph *vg = vtpu_graph_new();
	struct ir_graph *g = &vg->ir;
	struct ir_node n = { .op = OP_TRANSPOSE, .shape = { VTPU_F32, 2, { 3, 2 } } };
	int64_t w1[IR_MAX_ATTR_WORDS], w2[IR_MAX_ATTR_WORDS];
	int n1, n2;

	n.a.transpose.perm[0] = 1;
	n1 = ir_attr_words(g, &n, w1);
	n.a.transpose.perm[4] = 7;
	n2 = ir_attr_words(g, &n, w2);
	EXPECT_EQ(2, n1);
	ASSERT_EQ(n1, n2);
	EXPECT_EQ(0, memcmp(w1, w2, n1 * sizeof(*w1)));
	vtpu_graph_free(vg);
}

TEST_HARNESS_MAIN
