// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * cost.c - the cost model: FLOPs, DMA bytes and a roofline time estimate
 * for a compiled graph, for compile-time inspection (struct vtpu_cost).
 *
 * A kernel is a fusion group (node.kernel), or one node when fusion has
 * not run. The model is a roofline per kernel: a kernel overlaps its own
 * DMA with its compute, so it takes max(flops / compute rate, bytes /
 * DMA rate), and kernels run one after another on one core, so the
 * program takes the sum.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <drm/vtpu_isa.h>

#include "ir.h"

/*
 * Defaults when the device does not say: the userspace executor runs
 * about 8 GFLOP/s per core (8 flops/ns) and copies about 10 GB/s
 * (10 bytes/ns). Orders of magnitude, for ranking programs, not a promise.
 */
#define COST_FLOPS_PER_NS	8.0
#define COST_BYTES_PER_NS	10.0

static double node_bytes(const struct ir_node *n)
{
	return (double)shape_elems(&n->shape) * type_size(n->shape.type);
}

/* Size of every contracting dimension of a DOT, multiplied. */
static double dot_k(const struct ir_graph *g, const struct ir_node *n)
{
	const struct vtpu_shape *x = &g->nodes[n->in[0]].shape;
	double k = 1;
	int i;

	for (i = 0; i < n->a.dot.ncontract; i++)
		k *= x->dims[n->a.dot.lhs_contract[i]];
	return k;
}

/* FLOPs of one node; data movement counts none. */
static double node_flops(const struct ir_graph *g, const struct ir_node *n)
{
	double out = (double)shape_elems(&n->shape);
	const struct vtpu_shape *x = n->nin ? &g->nodes[n->in[0]].shape : NULL;
	const struct vtpu_shape *w = n->nin > 1 ? &g->nodes[n->in[1]].shape : NULL;

	if (ir_ops[n->op].kind != K_OTHER)
		return out;
	switch (n->op) {
	case OP_P_MATMUL:
		return 2 * out * (n->a.mm.trans_a ? x->dims[1] : x->dims[2]);
	case OP_DOT:
		return 2 * out * dot_k(g, n);
	case OP_CONV:	/* w is OIHW with I = C / groups already */
	case OP_P_DWCONV:
		return 2 * out * w->dims[1] * w->dims[2] * w->dims[3];
	case OP_REDUCE:
	case OP_P_REDUCE_LAST:
		return (double)shape_elems(x);
	case OP_SOFTMAX:
	case OP_LOG_SOFTMAX:	/* max, subtract, exp, sum, divide */
		return 5 * out;
	default:
		return 0;
	}
}

/* Nodes that produce no kernel: bindings, constants, aliases, views. */
static bool no_kernel(const struct ir_node *n)
{
	return n->op == OP_PARAM || n->op == OP_CONST ||
	       n->op == OP_RESHAPE || n->op == OP_DEAD || n->virt;
}

/*
 * RESHAPE is an alias and a virtual view is read through: reading one
 * reads its operand's buffer.
 */
static int storage_of(const struct ir_graph *g, int v)
{
	while (g->nodes[v].op == OP_RESHAPE || g->nodes[v].virt)
		v = g->nodes[v].in[0];
	return v;
}

/*
 * Kernel slots: a node's slot is the id of the first node of its fusion
 * group (fusion numbers kernels 0, 1, ... so a kernel id below g->n
 * indexes @first); an unfused node, or one with a stray id, is its own.
 */
static void find_slots(const struct ir_graph *g, int *slot, int *first)
{
	int i, k;

	for (i = 0; i < g->n; i++)
		first[i] = -1;
	for (i = 0; i < g->n; i++) {
		k = g->nodes[i].kernel;
		slot[i] = i;
		if (no_kernel(&g->nodes[i]) || k < 0 || k >= g->n)
			continue;
		if (first[k] < 0)
			first[k] = i;
		slot[i] = first[k];
	}
}

/* Whether @v's value crosses a kernel boundary: read elsewhere or output. */
static void find_escapes(const struct ir_graph *g, const int *slot, char *esc)
{
	int i, k, src;

	for (i = 0; i < g->n; i++) {
		if (no_kernel(&g->nodes[i]))
			continue;
		for (k = 0; k < g->nodes[i].nin; k++) {
			src = storage_of(g, g->nodes[i].in[k]);
			if (slot[src] != slot[i])
				esc[src] = 1;
		}
	}
	for (k = 0; k < g->nout; k++)
		esc[storage_of(g, g->outputs[k])] = 1;
}

struct kcost {
	double flops, bytes;
};

/*
 * The bytes a matmul reads for operand @v: an im2col view read through
 * (fuse.c) is loaded window by window, its own size, not its source's.
 */
static double read_bytes(const struct ir_graph *g, const struct ir_node *n,
			 int v, int src)
{
	while (g->nodes[v].op == OP_RESHAPE)
		v = g->nodes[v].in[0];
	if (n->op == OP_P_MATMUL && g->nodes[v].virt)
		return node_bytes(&g->nodes[v]);
	return node_bytes(&g->nodes[src]);
}

/*
 * Charges node @i to its kernel's slot in @kc: its FLOPs, its value if it
 * escapes (written once), and each operand from outside the kernel (read
 * once per kernel: @seen remembers the last slot that paid for a tensor).
 */
static void charge(const struct ir_graph *g, int i, const int *slot,
		   const char *esc, int *seen, struct kcost *kc)
{
	const struct ir_node *n = &g->nodes[i];
	struct kcost *c = &kc[slot[i]];
	int k, src;

	c->flops += node_flops(g, n);
	if (esc[i])
		c->bytes += node_bytes(n);
	for (k = 0; k < n->nin; k++) {
		src = storage_of(g, n->in[k]);
		if ((!no_kernel(&g->nodes[src]) && slot[src] == slot[i]) ||
		    seen[src] == slot[i])
			continue;
		seen[src] = slot[i];
		c->bytes += read_bytes(g, n, n->in[k], src);
	}
}

/* Fills @kc per kernel slot; returns 0 or -ENOMEM. */
static int kernel_costs(const struct ir_graph *g, struct kcost *kc)
{
	int *slot = calloc(3 * (g->n + 1), sizeof(int));
	char *esc = calloc(g->n + 1, 1);
	int i, ret = -ENOMEM;

	if (!slot || !esc)
		goto out;
	find_slots(g, slot, slot + g->n + 1);
	find_escapes(g, slot, esc);
	for (i = 0; i < g->n; i++)
		slot[2 * (g->n + 1) + i] = -1;
	for (i = 0; i < g->n; i++)
		if (!no_kernel(&g->nodes[i]))
			charge(g, i, slot, esc, slot + 2 * (g->n + 1), kc);
	ret = 0;
out:
	free(esc);
	free(slot);
	return ret;
}

static void binding_bytes(const struct ir_graph *g, struct vtpu_cost *c)
{
	int i;

	c->param_bytes = 0;
	c->output_bytes = 0;
	for (i = 0; i < g->n; i++)
		if (g->nodes[i].op == OP_PARAM)
			c->param_bytes += node_bytes(&g->nodes[i]);
	for (i = 0; i < g->nout; i++)
		c->output_bytes += node_bytes(&g->nodes[g->outputs[i]]);
}

static void header_bytes(const struct vtpu_program *prog, struct vtpu_cost *c)
{
	struct vtpu_prog_header h;

	if (!prog->binary || prog->size < sizeof(h))
		return;
	memcpy(&h, prog->binary, sizeof(h));
	c->code_bytes = h.code_size;
	c->const_bytes = h.const_size;
}

void cost_model(const struct ir_graph *g, const struct vtpu_device_params *dev,
		struct vtpu_program *prog)
{
	struct vtpu_cost *c = &prog->cost;
	double fpn = dev && dev->flops_per_ns > 0 ? dev->flops_per_ns : COST_FLOPS_PER_NS;
	double bpn = dev && dev->bytes_per_ns > 0 ? dev->bytes_per_ns : COST_BYTES_PER_NS;
	double est = 0, scale = 1, tf, tb;
	struct kcost *kc;
	int i;

	binding_bytes(g, c);
	header_bytes(prog, c);
	kc = calloc(g->n + 1, sizeof(*kc));
	if (!kc || kernel_costs(g, kc))
		goto out;	/* figures only: leave them as they were */
	c->flops = 0;
	for (i = 0; i < g->n; i++) {
		c->flops += kc[i].flops;
		est += kc[i].bytes;
	}
	/*
	 * What codegen counted is the truth; spread it over the kernels in
	 * proportion to the estimate.
	 */
	if (c->bytes_moved > 0 && est > 0)
		scale = c->bytes_moved / est;
	else
		c->bytes_moved = est;
	c->est_time_ns = 0;
	for (i = 0; i < g->n; i++) {
		tf = kc[i].flops / fpn;
		tb = kc[i].bytes * scale / bpn;
		c->est_time_ns += tf > tb ? tf : tb;
	}
out:
	free(kc);
}
