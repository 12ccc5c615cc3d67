// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * loop.c - WHILE nodes: loops that run on the device (ISA version 4).
 *
 * A loop's condition and body are graphs of their own. Each is compiled
 * by the whole pipeline into a program for one core, and that program is
 * linked into this one, between the branches that make the loop:
 *
 *	state = init			copies into the loop's region
 *   top:	cond(state) -> pred		the condition's code
 *		s0 = pred; BRZ s0, done
 *		next = body(state)		the body's code
 *		state = next			copies
 *		JUMP top
 *   done:	results = state			copies out
 *
 * Linking rebinds the sub-program's DMA: its parameters are the state,
 * its outputs the next state (or the predicate), its scratch a part of
 * the loop's region, its constants and weights appended to this
 * program's. The region lies past the scratch the planner placed, so
 * nothing else is live in it; loops in a body have theirs inside the
 * body program's scratch, linked the same way. Branch targets move with
 * the code; the sub-program's END goes (it is its last instruction, so
 * no target moves past it), its TRACEs keep their names, prefixed.
 *
 * The state goes through scratch even when a leaf is a parameter or an
 * output: parameters are read only, outputs write only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

struct cg_loop {
	int node;			/* the WHILE */
	struct vtpu_program *cond, *body;
	uint64_t *state_off, *next_off;	/* scratch offsets, per leaf */
	uint64_t pred_off, sub_off;	/* the condition's output; scratch */
	uint64_t cond_woff, body_woff;	/* their weights in this program's */
	uint32_t cond_coff, body_coff;	/* their constants in this one's */
};

static uint64_t align64(uint64_t x)
{
	return (x + 63) & ~(uint64_t)63;
}

static const struct vtpu_prog_header *hdr_of(const struct vtpu_program *p)
{
	return p->binary;
}

static uint64_t prog_scratch(const struct vtpu_program *p)
{
	int i;

	for (i = 0; i < p->nbindings; i++)
		if (p->bindings[i].role == VTPU_BIND_SCRATCH)
			return p->bindings[i].size;
	return 0;
}

static int compile_sub(struct cg *c, const struct ir_graph *sub,
		       const struct vtpu_device_params *dev, const char *what,
		       struct vtpu_program **out)
{
	struct vtpu_compile_options opts = { 0 };
	char err[200];
	int ret;

	ret = vtpu_compile((const struct vtpu_graph *)sub, dev, &opts, out,
			   err, sizeof(err));
	if (ret)
		return cg_fail(c, -ret, "a loop's %s: %s", what, err);
	return 0;
}

int loops_prepare(struct cg *c, const struct vtpu_device_params *dev,
		  uint64_t scratch, uint64_t consts, uint64_t weights)
{
	struct vtpu_device_params one = *dev;
	struct ir_graph *g = c->g;
	uint64_t off = align64(scratch), sub;
	int i, k, n = 0;

	/* a program with branches has one lane: so have its loops' */
	one.num_cores = 1;
	c->loop_scratch = scratch;
	c->loop_consts = consts;
	c->loop_weights = weights;
	for (i = 0; i < g->n; i++)
		n += g->nodes[i].op == OP_WHILE;
	if (!n)
		return 0;
	c->loops = calloc(n, sizeof(*c->loops));
	if (!c->loops)
		return cg_fail(c, ENOMEM, "out of memory");
	consts = align64(consts);
	weights = align64(weights);
	for (i = 0; i < g->n && !c->ret; i++) {
		const struct ir_node *w = &g->nodes[i];
		struct cg_loop *l = &c->loops[c->nloops];

		if (w->op != OP_WHILE)
			continue;
		c->nloops++;
		l->node = i;
		l->state_off = calloc(w->nin, sizeof(uint64_t));
		l->next_off = calloc(w->nin, sizeof(uint64_t));
		if (!l->state_off || !l->next_off)
			return cg_fail(c, ENOMEM, "out of memory");
		if (compile_sub(c, w->a.loop.cond, &one, "condition", &l->cond) ||
		    compile_sub(c, w->a.loop.body, &one, "body", &l->body))
			return c->ret;
		for (k = 0; k < w->nin; k++) {
			l->state_off[k] = off;
			off += align64(dev_bytes(&g->nodes[w->in[k]].shape));
		}
		for (k = 0; k < w->nin; k++) {
			l->next_off[k] = off;
			off += align64(dev_bytes(&g->nodes[w->in[k]].shape));
		}
		l->pred_off = off;
		off += 64;
		l->sub_off = off;
		sub = prog_scratch(l->cond);
		if (prog_scratch(l->body) > sub)
			sub = prog_scratch(l->body);
		off += align64(sub);
		l->cond_coff = (uint32_t)consts;
		consts = align64(consts + hdr_of(l->cond)->const_size);
		l->body_coff = (uint32_t)consts;
		consts = align64(consts + hdr_of(l->body)->const_size);
		l->cond_woff = weights;
		weights = align64(weights + l->cond->weights_size);
		l->body_woff = weights;
		weights = align64(weights + l->body->weights_size);
		if (hdr_of(l->cond)->vmem_size > c->e.vmem_used)
			c->e.vmem_used = hdr_of(l->cond)->vmem_size;
		if (hdr_of(l->body)->vmem_size > c->e.vmem_used)
			c->e.vmem_used = hdr_of(l->body)->vmem_size;
	}
	if (c->ret)
		return c->ret;
	if (consts > VTPU_MAX_CONST_SIZE)
		return cg_fail(c, E2BIG, "constants: %llu bytes with the loops', the limit is %u",
			       (unsigned long long)consts, VTPU_MAX_CONST_SIZE);
	c->loop_scratch = off;
	c->loop_consts = consts;
	c->loop_weights = weights;
	return 0;
}

/* The loops' constants and weights, at the offsets loops_prepare() chose. */
void loops_fill(struct cg *c)
{
	int i;

	for (i = 0; i < c->nloops; i++) {
		const struct cg_loop *l = &c->loops[i];
		const struct vtpu_program *p[2] = { l->cond, l->body };
		uint32_t coff[2] = { l->cond_coff, l->body_coff };
		uint64_t woff[2] = { l->cond_woff, l->body_woff };
		int j;

		for (j = 0; j < 2; j++) {
			const struct vtpu_prog_header *h = hdr_of(p[j]);

			if (h->const_size)
				memcpy(c->e.consts + coff[j],
				       (const uint8_t *)h + h->header_size +
				       h->code_size, h->const_size);
			if (p[j]->weights_size)
				memcpy(c->weights + woff[j], p[j]->weights,
				       p[j]->weights_size);
		}
	}
}

void loops_free(struct cg *c)
{
	int i;

	for (i = 0; i < c->nloops; i++) {
		vtpu_program_free(c->loops[i].cond);
		vtpu_program_free(c->loops[i].body);
		free(c->loops[i].state_off);
		free(c->loops[i].next_off);
	}
	free(c->loops);
	c->loops = NULL;
	c->nloops = 0;
}

/* String @id of a program's metadata, or "". */
static const char *meta_string(const struct vtpu_prog_header *h, uint32_t id)
{
	const char *m = (const char *)h + h->header_size + h->code_size +
			h->const_size, *end = m + h->meta_size;

	while (id && m < end) {
		m += strnlen(m, end - m) + 1;
		id--;
	}
	return m < end ? m : "";
}

/*
 * Appends @p's code, rebound: parameter k reads @pin[k], output k writes
 * @pout[k] (scratch offsets), its scratch is at @sub, its constants and
 * weights at @coff and @woff of this program's.
 */
static void link_sub(struct cg *c, const struct vtpu_program *p,
		     const char *name, const uint64_t *pin, const uint64_t *pout,
		     uint64_t sub, uint32_t coff, uint64_t woff)
{
	const struct vtpu_prog_header *h = hdr_of(p);
	const struct vtpu_insn *code =
		(const void *)((const uint8_t *)h + h->header_size);
	uint32_t base = c->e.n, i;
	char label[160];

	for (i = 0; i < h->insn_count && !c->ret; i++) {
		struct vtpu_insn in = code[i];
		const struct vtpu_binding_info *b;

		switch (in.op) {
		case VTPU_OP_END:
			if (i + 1 != h->insn_count)
				cg_fail(c, EINVAL, "codegen: a loop's program ends early");
			continue;
		case VTPU_OP_TRACE:
			snprintf(label, sizeof(label), "%s/%s", name,
				 meta_string(h, in.imm));
			in.imm = emit_meta(&c->e, label);
			break;
		case VTPU_OP_BRZ:
		case VTPU_OP_BRNZ:
		case VTPU_OP_JUMP:
			in.imm += base;
			break;
		case VTPU_OP_DMA_LOAD:
		case VTPU_OP_DMA_STORE:
		case VTPU_OP_DMA_GATHER:
			if (in.dma.binding == VTPU_BINDING_CONSTANTS) {
				in.dma.offset += coff;
				break;
			}
			if (in.dma.binding >= (uint32_t)p->nbindings) {
				cg_fail(c, EINVAL, "codegen: a loop's program has a bad binding");
				continue;
			}
			b = &p->bindings[in.dma.binding];
			switch (b->role) {
			case VTPU_BIND_PARAM:
				in.dma.offset += pin[b->index];
				break;
			case VTPU_BIND_OUTPUT:
				in.dma.offset += pout[b->index];
				break;
			case VTPU_BIND_SCRATCH:
				in.dma.offset += sub;
				break;
			case VTPU_BIND_WEIGHTS:
				in.dma.offset += woff;
				in.dma.binding = c->weights_binding;
				emit_insn(&c->e, &in);
				continue;
			}
			in.dma.binding = c->scratch_binding;
			break;
		default:
			break;
		}
		emit_insn(&c->e, &in);
	}
}

static struct loc scratch_at(struct cg *c, uint64_t off, enum vtpu_type t)
{
	struct loc l = {
		.binding = c->scratch_binding, .off = off, .dt = hbm_dtype(t),
	};

	return l;
}

void gen_while(struct cg *c, int v)
{
	static const struct vtpu_tile none;
	struct ir_graph *g = c->g;
	const struct ir_node *w = &g->nodes[v];
	struct cg_loop *l = NULL;
	uint32_t top, brz;
	char name[32];
	int i, k;

	for (i = 0; i < c->nloops; i++)
		if (c->loops[i].node == v)
			l = &c->loops[i];
	if (!l) {
		cg_fail(c, EINVAL, "codegen: a loop was not prepared");
		return;
	}
	snprintf(name, sizeof(name), "loop%d", (int)(l - c->loops));
	for (k = 0; k < w->nin; k++) {
		const struct ir_node *x = &g->nodes[w->in[k]];

		if (shape_elems(&x->shape))
			copy_flat(c, loc_of(c, w->in[k]),
				  scratch_at(c, l->state_off[k], x->shape.type),
				  shape_elems(&x->shape));
	}
	top = c->e.n;
	snprintf(name + strlen(name), sizeof(name) - strlen(name), "/cond");
	link_sub(c, l->cond, name, l->state_off, &l->pred_off, l->sub_off,
		 l->cond_coff, l->cond_woff);
	/* the predicate to s0, and out of the loop when it is zero */
	emit_dma(&c->e, 0, vtile(0, 1, 1, 1, VTPU_DT_S32), c->scratch_binding,
		 l->pred_off, 4, VTPU_DT_S32);
	emit_op(&c->e, VTPU_OP_SLOAD, 0, 0, 0, none, none, none);
	brz = c->e.n;
	emit_op(&c->e, VTPU_OP_BRZ, 0, 0, 0, none, none, none);
	snprintf(strrchr(name, '/'), 8, "/body");
	link_sub(c, l->body, name, l->state_off, l->next_off, l->sub_off,
		 l->body_coff, l->body_woff);
	for (k = 0; k < w->nin; k++) {
		const struct ir_node *x = &g->nodes[w->in[k]];

		if (shape_elems(&x->shape))
			copy_flat(c, scratch_at(c, l->next_off[k], x->shape.type),
				  scratch_at(c, l->state_off[k], x->shape.type),
				  shape_elems(&x->shape));
	}
	emit_op(&c->e, VTPU_OP_JUMP, 0, 0, top, none, none, none);
	if (!c->e.failed && brz < c->e.n)
		c->e.code[brz].imm = c->e.n;
	/* the results that are read, or are outputs */
	for (i = v + 1; i < g->n; i++) {
		const struct ir_node *o = &g->nodes[i];

		if (o->op != OP_WHILE_OUT || o->in[0] != v ||
		    g->nodes[node_root(g, i)].arena == A_NONE ||
		    !shape_elems(&o->shape))
			continue;
		k = o->a.wout.index;
		copy_flat(c, scratch_at(c, l->state_off[k], o->shape.type),
			  loc_of(c, i), shape_elems(&o->shape));
	}
}
