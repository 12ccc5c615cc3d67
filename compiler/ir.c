// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * ir.c - graphs: nodes, ownership, the shape rules of every op (one
 * function, ir_infer(), used by the builder and by the verifier), use
 * counts, compaction, cloning and dumps.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ir.h"

const struct ir_op_info ir_ops[OP_NR] = {
#define IR_OP_INFO(n, ni, k, p) { .name = #n, .nin = ni, .kind = k, .prim = p },
	IR_OPS(IR_OP_INFO)
#undef IR_OP_INFO
};

int64_t shape_elems(const struct vtpu_shape *s)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < s->rank; i++)
		n *= s->dims[i];
	return n;
}

int type_size(enum vtpu_type t)
{
	switch (t) {
	case VTPU_F32:
	case VTPU_S32:
		return 4;
	case VTPU_BF16:
		return 2;
	case VTPU_S64:
		return 8;
	case VTPU_PRED:
		return 1;
	}
	return 0;
}

const char *type_name(enum vtpu_type t)
{
	static const char *const names[] = { "f32", "bf16", "s32", "s64", "pred" };

	return (unsigned int)t < 5 ? names[t] : "?";
}

size_t vtpu_type_size(enum vtpu_type t)
{
	return type_size(t);
}

const char *vtpu_type_name(enum vtpu_type t)
{
	return type_name(t);
}

size_t vtpu_shape_elems(const struct vtpu_shape *s)
{
	size_t n = 1;

	for (int i = 0; i < s->rank; i++)
		n *= (size_t)s->dims[i];
	return n;
}

uint16_t vtpu_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x40);	/* quiet NaN */
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float vtpu_bf16_to_f32(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

bool dims_eq(const struct vtpu_shape *a, const struct vtpu_shape *b)
{
	return a->rank == b->rank &&
	       !memcmp(a->dims, b->dims, a->rank * sizeof(a->dims[0]));
}

bool shape_eq(const struct vtpu_shape *a, const struct vtpu_shape *b)
{
	return a->type == b->type && dims_eq(a, b);
}

void ir_huge_hint(void *p, size_t size)
{
	uintptr_t lo = ((uintptr_t)p + IR_HUGE - 1) & ~(uintptr_t)(IR_HUGE - 1);
	uintptr_t hi = ((uintptr_t)p + size) & ~(uintptr_t)(IR_HUGE - 1);

	if (p && size >= 2 * IR_HUGE && hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);	/* a hint */
}

void *ir_alloc(struct ir_graph *g, size_t size)
{
	void *p;

	if (g->nallocs == g->allocs_cap) {
		int cap = g->allocs_cap ? 2 * g->allocs_cap : 64;
		void **a = realloc(g->allocs, cap * sizeof(*a));

		if (!a)
			return NULL;
		g->allocs = a;
		g->allocs_cap = cap;
	}
	p = calloc(1, size ? size : 1);
	if (p)
		g->allocs[g->nallocs++] = p;
	ir_huge_hint(p, size);	/* a model's weights: untouched so far */
	return p;
}

int ir_error(struct ir_graph *g, int code, const char *fmt, ...)
{
	va_list ap;

	if (!g->errcode) {
		g->errcode = code;
		va_start(ap, fmt);
		vsnprintf(g->err, sizeof(g->err), fmt, ap);
		va_end(ap);
	}
	return -g->errcode;
}

int ir_add(struct ir_graph *g, enum ir_op op, const struct vtpu_shape *shape,
	   int nin, const int *in)
{
	struct ir_node *n;
	int i;

	if (g->errcode)
		return -g->errcode;
	for (i = 0; i < nin; i++)
		if (in[i] < 0 || in[i] >= g->n)
			return ir_error(g, EINVAL, "%s: operand %d is not a value",
					ir_ops[op].name, i);
	if (g->n == g->cap) {
		int cap = g->cap ? 2 * g->cap : 32;
		struct ir_node *nodes = realloc(g->nodes, cap * sizeof(*nodes));

		if (!nodes)
			return ir_error(g, ENOMEM, "out of memory");
		g->nodes = nodes;
		g->cap = cap;
	}
	n = &g->nodes[g->n];
	memset(n, 0, sizeof(*n));
	n->op = op;
	n->shape = *shape;
	n->nin = nin;
	n->kernel = -1;
	if (nin) {
		n->in = ir_alloc(g, nin * sizeof(int));
		if (!n->in)
			return ir_error(g, ENOMEM, "out of memory");
		memcpy(n->in, in, nin * sizeof(int));
	}
	return g->n++;
}

void ir_replace_uses(struct ir_graph *g, int from, int to)
{
	int i, k;

	for (i = 0; i < g->n; i++)
		for (k = 0; k < g->nodes[i].nin; k++)
			if (g->nodes[i].in[k] == from)
				g->nodes[i].in[k] = to;
	for (k = 0; k < g->nout; k++)
		if (g->outputs[k] == from)
			g->outputs[k] = to;
}

void ir_count_uses(struct ir_graph *g)
{
	int i, k;

	for (i = 0; i < g->n; i++)
		g->nodes[i].uses = 0;
	for (i = 0; i < g->n; i++)
		for (k = 0; k < g->nodes[i].nin; k++)
			g->nodes[g->nodes[i].in[k]].uses++;
	for (k = 0; k < g->nout; k++)
		g->nodes[g->outputs[k]].uses++;
}

/*
 * Passes may append a node that replaces an earlier one, so a user can
 * precede its (new) input. Compaction restores topological order: a
 * depth-first walk from the outputs, which also drops DEAD and unused
 * nodes, then renumbers.
 */
static int ir_topo_visit(struct ir_graph *g, int v, int *newid, int *order,
			 int *norder, char *state)
{
	int k, ret;

	if (state[v] == 2)
		return 0;
	if (state[v] == 1)
		return ir_error(g, EINVAL, "cycle through node %d", v);
	state[v] = 1;
	for (k = 0; k < g->nodes[v].nin; k++) {
		ret = ir_topo_visit(g, g->nodes[v].in[k], newid, order, norder,
				    state);
		if (ret)
			return ret;
	}
	state[v] = 2;
	newid[v] = *norder;
	order[(*norder)++] = v;
	return 0;
}

int ir_compact(struct ir_graph *g)
{
	int *newid, *order, norder = 0, i, k, ret = 0;
	struct ir_node *nodes;
	char *state;

	newid = calloc(g->n + 1, sizeof(int));
	order = calloc(g->n + 1, sizeof(int));
	state = calloc(g->n + 1, 1);
	nodes = calloc(g->n + 1, sizeof(*nodes));
	if (!newid || !order || !state || !nodes) {
		ret = ir_error(g, ENOMEM, "out of memory");
		goto out;
	}
	/* Parameters stay, used or not: they are bindings. */
	for (i = 0; i < g->n && !ret; i++)
		if (g->nodes[i].op == OP_PARAM)
			ret = ir_topo_visit(g, i, newid, order, &norder, state);
	for (k = 0; k < g->nout && !ret; k++)
		ret = ir_topo_visit(g, g->outputs[k], newid, order, &norder,
				    state);
	if (ret)
		goto out;
	for (i = 0; i < norder; i++) {
		nodes[i] = g->nodes[order[i]];
		for (k = 0; k < nodes[i].nin; k++)
			nodes[i].in[k] = newid[nodes[i].in[k]];
	}
	for (k = 0; k < g->nout; k++)
		g->outputs[k] = newid[g->outputs[k]];
	free(g->nodes);
	g->nodes = nodes;
	g->n = norder;
	g->cap = g->n + 1;
	nodes = NULL;
out:
	free(nodes);
	free(state);
	free(order);
	free(newid);
	return ret;
}

static bool is_float(enum vtpu_type t)
{
	return t == VTPU_F32 || t == VTPU_BF16;
}

/*
 * The shape rules: computes what node @n's shape must be from its inputs
 * and attributes. Returns 0, or -EINVAL with the reason in g->err.
 */
/* The parameter of @g numbered @index, or -1. */
static int param_of(const struct ir_graph *g, int index)
{
	int i;

	for (i = 0; i < g->n; i++)
		if (g->nodes[i].op == OP_PARAM && g->nodes[i].a.param.index == index)
			return i;
	return -1;
}

/*
 * A WHILE's graphs fit its state: @cond and @body take one parameter per
 * leaf of the shape of in[i], @cond gives one s32 scalar, @body the
 * state's shapes again. Its own value is an s32 scalar token.
 */
static int loop_check(struct ir_graph *g, const struct ir_node *n,
		      struct vtpu_shape *s)
{
	const struct ir_graph *c = n->a.loop.cond, *b = n->a.loop.body;
	int i, pc, pb;

	if (!c || !b || c->nparams != n->nin || b->nparams != n->nin ||
	    c->nout != 1 || b->nout != n->nin || !n->nin)
		return ir_error(g, EINVAL, "WHILE: its graphs do not take and give its state");
	for (i = 0; i < n->nin; i++) {
		const struct vtpu_shape *x = &g->nodes[n->in[i]].shape;

		pc = param_of(c, i);
		pb = param_of(b, i);
		if (pc < 0 || pb < 0 || !shape_eq(&c->nodes[pc].shape, x) ||
		    !shape_eq(&b->nodes[pb].shape, x) ||
		    !shape_eq(&b->nodes[b->outputs[i]].shape, x))
			return ir_error(g, EINVAL, "WHILE: leaf %d of the state changes shape", i);
	}
	if (c->nodes[c->outputs[0]].shape.type != VTPU_S32 ||
	    c->nodes[c->outputs[0]].shape.rank)
		return ir_error(g, EINVAL, "WHILE: the condition must give an s32 scalar");
	memset(s, 0, sizeof(*s));
	s->type = VTPU_S32;
	return 0;
}

int ir_infer(struct ir_graph *g, const struct ir_node *n, struct vtpu_shape *s)
{
	const struct vtpu_shape *x = n->nin ? &g->nodes[n->in[0]].shape : NULL;
	const struct vtpu_shape *y = n->nin > 1 ? &g->nodes[n->in[1]].shape : NULL;
	const char *name = ir_ops[n->op].name;
	int i, k, r;

	if (ir_ops[n->op].nin >= 0 && n->nin != ir_ops[n->op].nin)
		return ir_error(g, EINVAL, "%s: %d operands, wants %d", name,
				n->nin, ir_ops[n->op].nin);
	switch (ir_ops[n->op].kind) {
	case K_EW1:
		*s = *x;
		if (n->op == OP_CONVERT) {
			s->type = n->shape.type;
			return 0;
		}
		if (!is_float(x->type))
			return ir_error(g, EINVAL, "%s: wants f32 or bf16, not %s",
					name, type_name(x->type));
		return 0;
	case K_EW2:
		if (!shape_eq(x, y))
			return ir_error(g, EINVAL, "%s: operands differ in shape or type (broadcast explicitly)",
					name);
		if (x->type == VTPU_PRED || x->type == VTPU_S64 ||
		    (n->op != OP_COMPARE && !is_float(x->type) &&
		     n->op != OP_ADD && n->op != OP_SUB && n->op != OP_MUL &&
		     n->op != OP_MAX && n->op != OP_MIN))
			return ir_error(g, EINVAL, "%s: unsupported type %s", name,
					type_name(x->type));
		*s = *x;
		if (n->op == OP_COMPARE)
			s->type = VTPU_PRED;
		return 0;
	case K_EW3: {
		const struct vtpu_shape *z = &g->nodes[n->in[2]].shape;

		if (x->type != VTPU_PRED || !dims_eq(x, y) || !shape_eq(y, z))
			return ir_error(g, EINVAL, "SELECT: wants pred and two values of its dims and one type");
		*s = *y;
		return 0;
	}
	}

	switch (n->op) {
	case OP_PARAM:
	case OP_CONST:
		*s = n->shape;
		for (i = 0; i < s->rank; i++)
			if (s->dims[i] < 1)
				return ir_error(g, EINVAL, "%s: dimension %d is %lld",
						name, i, (long long)s->dims[i]);
		if (s->rank < 0 || s->rank > VTPU_MAX_RANK || !type_size(s->type))
			return ir_error(g, EINVAL, "%s: bad shape", name);
		return 0;
	case OP_BROADCAST:
		*s = n->shape;
		s->type = x->type;
		if (x->rank > s->rank)
			return ir_error(g, EINVAL, "BROADCAST: operand rank %d > result rank %d",
					x->rank, s->rank);
		for (i = 0; i < x->rank; i++) {
			k = n->a.bcast.dims[i];
			if (k < 0 || k >= s->rank || (i && k <= n->a.bcast.dims[i - 1]))
				return ir_error(g, EINVAL, "BROADCAST: dimensions must increase within the result rank");
			if (x->dims[i] != 1 && x->dims[i] != s->dims[k])
				return ir_error(g, EINVAL, "BROADCAST: operand dimension %d (%lld) does not fit result dimension %d (%lld)",
						i, (long long)x->dims[i], k,
						(long long)s->dims[k]);
		}
		return 0;
	case OP_RESHAPE:
		*s = n->shape;
		s->type = x->type;
		if (shape_elems(s) != shape_elems(x))
			return ir_error(g, EINVAL, "RESHAPE: %lld elements into %lld",
					(long long)shape_elems(x),
					(long long)shape_elems(s));
		return 0;
	case OP_TRANSPOSE: {
		uint32_t seen = 0;

		*s = *x;
		for (i = 0; i < x->rank; i++) {
			k = n->a.transpose.perm[i];
			if (k < 0 || k >= x->rank || seen & (1u << k))
				return ir_error(g, EINVAL, "TRANSPOSE: not a permutation");
			seen |= 1u << k;
			s->dims[i] = x->dims[k];
		}
		return 0;
	}
	case OP_DOT: {
		const struct vtpu_dot_dims *d = &n->a.dot;
		uint32_t lused = 0, rused = 0;

		if (!is_float(x->type) || x->type != y->type)
			return ir_error(g, EINVAL, "DOT: wants two f32 or two bf16 operands");
		if (d->nbatch < 0 || d->ncontract < 0 ||
		    d->nbatch + d->ncontract > x->rank ||
		    d->nbatch + d->ncontract > y->rank)
			return ir_error(g, EINVAL, "DOT: bad dimension numbers");
		s->type = x->type;
		s->rank = 0;
		for (i = 0; i < d->nbatch + d->ncontract; i++) {
			int l = i < d->nbatch ? d->lhs_batch[i] : d->lhs_contract[i - d->nbatch];
			int rr = i < d->nbatch ? d->rhs_batch[i] : d->rhs_contract[i - d->nbatch];

			if (l < 0 || l >= x->rank || rr < 0 || rr >= y->rank ||
			    lused & (1u << l) || rused & (1u << rr))
				return ir_error(g, EINVAL, "DOT: bad dimension numbers");
			if (x->dims[l] != y->dims[rr])
				return ir_error(g, EINVAL, "DOT: %s dimension sizes differ (%lld vs %lld)",
						i < d->nbatch ? "batch" : "contracting",
						(long long)x->dims[l],
						(long long)y->dims[rr]);
			lused |= 1u << l;
			rused |= 1u << rr;
			if (i < d->nbatch)
				s->dims[s->rank++] = x->dims[l];
		}
		for (i = 0; i < x->rank; i++)
			if (!(lused & (1u << i)))
				s->dims[s->rank++] = x->dims[i];
		for (i = 0; i < y->rank; i++)
			if (!(rused & (1u << i))) {
				if (s->rank == VTPU_MAX_RANK)
					return ir_error(g, EINVAL, "DOT: result rank too large");
				s->dims[s->rank++] = y->dims[i];
			}
		return 0;
	}
	case OP_CONV:
	case OP_P_DWCONV: {
		const struct vtpu_conv_params *p = &n->a.conv;

		if (x->rank != 4 || y->rank != 4 || !is_float(x->type) ||
		    x->type != y->type)
			return ir_error(g, EINVAL, "CONV: wants NCHW input and OIHW kernel of one float type");
		if (p->groups < 1 || x->dims[1] % p->groups ||
		    y->dims[0] % p->groups || x->dims[1] / p->groups != y->dims[1])
			return ir_error(g, EINVAL, "CONV: channels (%lld in, kernel %lldx%lld) do not fit %d groups",
					(long long)x->dims[1],
					(long long)y->dims[0],
					(long long)y->dims[1], p->groups);
		*s = *x;
		s->dims[1] = y->dims[0];
		for (i = 0; i < 2; i++) {
			int64_t in = x->dims[2 + i] + p->pad_lo[i] + p->pad_hi[i];
			int64_t kext;

			/* Huge dilations must not overflow into a "fit". */
			if (__builtin_mul_overflow(y->dims[2 + i] - 1,
						   (int64_t)p->dilation[i], &kext))
				return ir_error(g, EINVAL, "CONV: window too large");
			kext += 1;
			if (p->stride[i] < 1 || p->dilation[i] < 1 ||
			    p->pad_lo[i] < 0 || p->pad_hi[i] < 0 || in < kext)
				return ir_error(g, EINVAL, "CONV: bad window in dimension %d",
						i);
			s->dims[2 + i] = (in - kext) / p->stride[i] + 1;
		}
		if (n->op == OP_P_DWCONV) {
			if (p->groups != x->dims[1] || y->dims[0] != x->dims[1])
				return ir_error(g, EINVAL, "P_DWCONV: wants one kernel per channel");
			s->type = VTPU_F32;
		}
		return 0;
	}
	case OP_REDUCE:
		if (!is_float(x->type))
			return ir_error(g, EINVAL, "REDUCE: wants f32 or bf16");
		if (n->a.reduce.axes >> x->rank)
			return ir_error(g, EINVAL, "REDUCE: axis out of range");
		s->type = x->type;
		s->rank = 0;
		for (i = 0; i < x->rank; i++)
			if (!(n->a.reduce.axes & (1u << i)))
				s->dims[s->rank++] = x->dims[i];
		return 0;
	case OP_SOFTMAX:
	case OP_LOG_SOFTMAX:
		if (!is_float(x->type) || n->a.softmax.axis < 0 ||
		    n->a.softmax.axis >= x->rank)
			return ir_error(g, EINVAL, "%s: wants a float and an axis in range",
					name);
		*s = *x;
		return 0;
	case OP_CONCAT:
		r = n->a.concat.axis;
		if (n->nin < 1 || r < 0 || r >= x->rank)
			return ir_error(g, EINVAL, "CONCAT: wants operands and an axis in range");
		*s = *x;
		for (k = 1; k < n->nin; k++) {
			const struct vtpu_shape *z = &g->nodes[n->in[k]].shape;

			if (z->type != x->type || z->rank != x->rank)
				return ir_error(g, EINVAL, "CONCAT: operand %d differs in type or rank",
						k);
			for (i = 0; i < x->rank; i++)
				if (i != r && z->dims[i] != x->dims[i])
					return ir_error(g, EINVAL, "CONCAT: operand %d differs in dimension %d",
							k, i);
			s->dims[r] += z->dims[r];
		}
		return 0;
	case OP_SLICE:
		*s = *x;
		for (i = 0; i < x->rank; i++) {
			int64_t st = n->a.slice.start[i], li = n->a.slice.limit[i];
			int64_t sd = n->a.slice.stride[i];

			if (st < 0 || li > x->dims[i] || st >= li || sd < 1)
				return ir_error(g, EINVAL, "SLICE: bad range in dimension %d",
						i);
			/* ceil((li - st) / sd) without overflow for huge sd */
			s->dims[i] = (li - st - 1) / sd + 1;
		}
		return 0;
	case OP_PAD:
		*s = *x;
		for (i = 0; i < x->rank; i++) {
			if (n->a.pad.lo[i] < 0 || n->a.pad.hi[i] < 0)
				return ir_error(g, EINVAL, "PAD: negative padding");
			s->dims[i] += n->a.pad.lo[i] + n->a.pad.hi[i];
		}
		return 0;
	case OP_P_MATMUL: {
		int64_t m, k1, k2, nn;

		if (x->rank != 3 || y->rank != 3 || x->dims[0] != y->dims[0] ||
		    !is_float(x->type) || !is_float(y->type))
			return ir_error(g, EINVAL, "P_MATMUL: wants [B,.,.] float operands");
		m = n->a.mm.trans_a ? x->dims[2] : x->dims[1];
		k1 = n->a.mm.trans_a ? x->dims[1] : x->dims[2];
		k2 = n->a.mm.trans_b ? y->dims[2] : y->dims[1];
		nn = n->a.mm.trans_b ? y->dims[1] : y->dims[2];
		if (k1 != k2)
			return ir_error(g, EINVAL, "P_MATMUL: inner dimensions differ");
		s->type = VTPU_F32;
		s->rank = 3;
		s->dims[0] = x->dims[0];
		s->dims[1] = m;
		s->dims[2] = nn;
		return 0;
	}
	case OP_P_REDUCE_LAST:
		if (x->rank != 2 || !is_float(x->type))
			return ir_error(g, EINVAL, "P_REDUCE_LAST: wants a float [R,C]");
		s->type = x->type;
		s->rank = 1;
		s->dims[0] = x->dims[0];
		return 0;
	case OP_GATHER:
		if (x->rank != 3 || y->rank != 1 || y->type != VTPU_S32)
			return ir_error(g, EINVAL, "GATHER: wants [A,V,B] data and s32 [K] indices");
		*s = *x;
		s->dims[1] = y->dims[0];
		return 0;
	case OP_P_COPY:
		*s = n->shape;
		s->type = x->type;
		for (i = 0; i < s->rank; i++)
			if (n->a.view.stride[i] < 0)
				return ir_error(g, EINVAL, "P_COPY: negative stride");
		return 0;
	case OP_WHILE:
		return loop_check(g, n, s);
	case OP_WHILE_OUT: {
		const struct ir_graph *b;

		if (x && g->nodes[n->in[0]].op == OP_WHILE) {
			b = g->nodes[n->in[0]].a.loop.body;
			if (n->a.wout.index >= 0 && n->a.wout.index < b->nout) {
				*s = b->nodes[b->outputs[n->a.wout.index]].shape;
				return 0;
			}
		}
		return ir_error(g, EINVAL, "WHILE_OUT: wants a WHILE and a leaf of its state");
	}
	default:
		return ir_error(g, EINVAL, "%s: no shape rule", name);
	}
}

int ir_verify(struct ir_graph *g)
{
	struct vtpu_shape s;
	int i, k, ret;

	if (g->errcode)
		return -g->errcode;
	for (i = 0; i < g->n; i++) {
		struct ir_node *n = &g->nodes[i];

		if (n->op == OP_DEAD)
			continue;
		for (k = 0; k < n->nin; k++)
			if (n->in[k] < 0 || n->in[k] >= i ||
			    g->nodes[n->in[k]].op == OP_DEAD)
				return ir_error(g, EINVAL, "node %d (%s): operand %d is %d",
						i, ir_ops[n->op].name, k, n->in[k]);
		ret = ir_infer(g, n, &s);
		if (ret)
			return ret;
		if (!shape_eq(&s, &n->shape))
			return ir_error(g, EINVAL, "node %d (%s): shape does not follow from its operands",
					i, ir_ops[n->op].name);
	}
	if (g->nout < 1)
		return ir_error(g, EINVAL, "the graph has no outputs");
	for (k = 0; k < g->nout; k++)
		if (g->outputs[k] < 0 || g->outputs[k] >= g->n)
			return ir_error(g, EINVAL, "output %d is not a value", k);
	return 0;
}

/* ---- attributes ---------------------------------------------------------- */

static int clamp_rank(int r)
{
	return r < 0 ? 0 : r > VTPU_MAX_RANK ? VTPU_MAX_RANK : r;
}

static int put_ints(int64_t *w, const int *v, int n)
{
	for (int i = 0; i < n; i++)
		w[i] = v[i];
	return n;
}

static int put_i64s(int64_t *w, const int64_t *v, int n)
{
	memcpy(w, v, n * sizeof(*v));
	return n;
}

/*
 * Every op is named here, without a default, so that a new op cannot
 * be forgotten (-Wswitch): what is not an attribute of it is said so.
 */
int ir_attr_words(const struct ir_graph *g, const struct ir_node *n,
		  int64_t w[IR_MAX_ATTR_WORDS])
{
	int r = clamp_rank(n->shape.rank), k = 0, nb, nc;
	/* operand 0's rank: broadcast, slice and pad describe its dims */
	int ri = n->nin ? clamp_rank(g->nodes[n->in[0]].shape.rank) : 0;
	uint64_t bits;

	switch (n->op) {
	case OP_PARAM:
		w[k++] = n->a.param.index;
		break;
	case OP_COMPARE:
		w[k++] = n->a.cmp.dir;
		break;
	case OP_BROADCAST:
		k += put_ints(w + k, n->a.bcast.dims, ri);
		break;
	case OP_TRANSPOSE:
		k += put_ints(w + k, n->a.transpose.perm, r);
		break;
	case OP_DOT:
		nb = clamp_rank(n->a.dot.nbatch);
		nc = clamp_rank(n->a.dot.ncontract);
		w[k++] = n->a.dot.nbatch;
		w[k++] = n->a.dot.ncontract;
		k += put_ints(w + k, n->a.dot.lhs_batch, nb);
		k += put_ints(w + k, n->a.dot.rhs_batch, nb);
		k += put_ints(w + k, n->a.dot.lhs_contract, nc);
		k += put_ints(w + k, n->a.dot.rhs_contract, nc);
		break;
	case OP_CONV:
	case OP_P_DWCONV:
		k += put_ints(w + k, n->a.conv.stride, 2);
		k += put_ints(w + k, n->a.conv.pad_lo, 2);
		k += put_ints(w + k, n->a.conv.pad_hi, 2);
		k += put_ints(w + k, n->a.conv.dilation, 2);
		w[k++] = n->a.conv.groups;
		break;
	case OP_REDUCE:
		w[k++] = n->a.reduce.op;
		w[k++] = n->a.reduce.axes;
		break;
	case OP_SOFTMAX:
	case OP_LOG_SOFTMAX:
		w[k++] = n->a.softmax.axis;
		break;
	case OP_CONCAT:
		w[k++] = n->a.concat.axis;
		break;
	case OP_SLICE:
		k += put_i64s(w + k, n->a.slice.start, ri);
		k += put_i64s(w + k, n->a.slice.limit, ri);
		k += put_i64s(w + k, n->a.slice.stride, ri);
		break;
	case OP_PAD:
		k += put_i64s(w + k, n->a.pad.lo, ri);
		k += put_i64s(w + k, n->a.pad.hi, ri);
		memcpy(&bits, &n->a.pad.value, sizeof(bits));
		w[k++] = (int64_t)bits;
		break;
	case OP_P_MATMUL:
		w[k++] = n->a.mm.trans_a;
		w[k++] = n->a.mm.trans_b;
		break;
	case OP_P_REDUCE_LAST:
		w[k++] = n->a.rl.op;
		break;
	case OP_GATHER:
		w[k++] = n->a.gather.wrap;
		break;
	case OP_P_COPY:
		w[k++] = n->a.view.offset;
		k += put_i64s(w + k, n->a.view.stride, r);
		break;
	case OP_WHILE:
		w[k++] = (int64_t)n->a.loop.hash[0];
		w[k++] = (int64_t)n->a.loop.hash[1];
		break;
	case OP_WHILE_OUT:
		w[k++] = n->a.wout.index;
		break;
	case OP_CONST:		/* its data: ir_const_bytes() */
	case OP_NEG: case OP_ABS: case OP_EXP: case OP_LOG: case OP_SQRT:
	case OP_RSQRT: case OP_TANH: case OP_LOGISTIC: case OP_RELU:
	case OP_GELU: case OP_CONVERT: case OP_ADD: case OP_SUB: case OP_MUL:
	case OP_DIV: case OP_MAX: case OP_MIN: case OP_POW: case OP_SELECT:
	case OP_RESHAPE:	/* the target type and dims are the shape */
	case OP_DEAD:
	case OP_NR:
		break;
	}
	return k;
}

size_t ir_const_bytes(const struct ir_node *n)
{
	return shape_elems(&n->shape) * type_size(n->shape.type);
}

bool ir_attrs_eq(const struct ir_graph *g, const struct ir_node *a,
		 const struct ir_node *b)
{
	int64_t wa[IR_MAX_ATTR_WORDS], wb[IR_MAX_ATTR_WORDS];
	int na, nb;

	if (a->op != b->op)
		return false;
	if (a->op == OP_CONST)
		return shape_eq(&a->shape, &b->shape) &&
		       !memcmp(a->a.cst.data, b->a.cst.data, ir_const_bytes(a));
	na = ir_attr_words(g, a, wa);
	nb = ir_attr_words(g, b, wb);
	return na == nb && !memcmp(wa, wb, na * sizeof(*wa));
}

static void dump_shape(FILE *f, const struct vtpu_shape *s)
{
	int i;

	fprintf(f, "%s[", type_name(s->type));
	for (i = 0; i < s->rank; i++)
		fprintf(f, "%s%lld", i ? "," : "", (long long)s->dims[i]);
	fputc(']', f);
}

void ir_dump(const struct ir_graph *g, FILE *f, const char *title)
{
	int i, k;

	fprintf(f, "// after %s: %d nodes\n", title, g->n);
	for (i = 0; i < g->n; i++) {
		const struct ir_node *n = &g->nodes[i];

		fprintf(f, "%%%d = ", i);
		dump_shape(f, &n->shape);
		fprintf(f, " %s(", ir_ops[n->op].name);
		for (k = 0; k < n->nin; k++)
			fprintf(f, "%s%%%d", k ? ", " : "", n->in[k]);
		fputc(')', f);
		if (n->op == OP_PARAM)
			fprintf(f, " index=%d", n->a.param.index);
		if (n->op == OP_WHILE_OUT)
			fprintf(f, " index=%d", n->a.wout.index);
		if (n->op == OP_WHILE)
			fprintf(f, " cond=(%d nodes) body=(%d nodes)",
				n->a.loop.cond->n, n->a.loop.body->n);
		if (n->name)
			fprintf(f, " name=%s", n->name);
		if (n->kernel >= 0)
			fprintf(f, " kernel=%d", n->kernel);
		if (n->virt)
			fprintf(f, " virtual");
		if (n->kw)
			fprintf(f, " width=%lld", (long long)n->kw);
		if (n->arena != A_NONE)
			fprintf(f, " arena=%d offset=%lld", n->arena,
				(long long)n->offset);
		fputc('\n', f);
	}
	fprintf(f, "outputs:");
	for (k = 0; k < g->nout; k++)
		fprintf(f, " %%%d", g->outputs[k]);
	fputc('\n', f);
}

void ir_free(struct ir_graph *g)
{
	int i;

	if (!g)
		return;
	for (i = 0; i < g->nsubs; i++)
		vtpu_graph_free((struct vtpu_graph *)g->subs[i]);
	free(g->subs);
	for (i = 0; i < g->nallocs; i++)
		free(g->allocs[i]);
	free(g->allocs);
	free(g->nodes);
	free(g->outputs);
	memset(g, 0, sizeof(*g));
}

/* @g owns @sub from now on (freed here if that fails); 0 or -ENOMEM. */
static int own_sub(struct ir_graph *g, struct ir_graph *sub)
{
	struct ir_graph **a;

	if (!sub)
		return -ENOMEM;
	a = realloc(g->subs, (g->nsubs + 1) * sizeof(*a));
	if (!a) {
		vtpu_graph_free((struct vtpu_graph *)sub);
		return -ENOMEM;
	}
	g->subs = a;
	g->subs[g->nsubs++] = sub;
	return 0;
}

int ir_while(struct ir_graph *g, int n, const int *init,
	     struct vtpu_graph *cond, struct vtpu_graph *body, int *outs)
{
	static const struct vtpu_device_params none;
	struct ir_graph *c = cond ? &cond->ir : NULL;
	struct ir_graph *b = body ? &body->ir : NULL;
	int w, i, o;

	if (own_sub(g, c)) {
		vtpu_graph_free(body);
		return ir_error(g, ENOMEM, "out of memory");
	}
	if (own_sub(g, b))
		return ir_error(g, ENOMEM, "out of memory");
	if (c->errcode || b->errcode)
		return ir_error(g, c->errcode ? c->errcode : b->errcode,
				"in a loop: %s", c->errcode ? c->err : b->err);
	for (i = 0; i < n; i++)
		if (init[i] < 0 || init[i] >= g->n)
			return ir_error(g, EINVAL, "WHILE: bad state value");
	w = ir_add(g, OP_WHILE, &(struct vtpu_shape){ .type = VTPU_S32 },
		   n, init);
	if (w < 0)
		return w;
	g->nodes[w].a.loop.cond = c;
	g->nodes[w].a.loop.body = b;
	graph_hash(c, &none, NULL, g->nodes[w].a.loop.hash);
	{
		uint64_t hb[2];

		graph_hash(b, &none, NULL, hb);
		g->nodes[w].a.loop.hash[0] ^= hb[0] * 0x9e3779b97f4a7c15ull;
		g->nodes[w].a.loop.hash[1] ^= hb[1] + 0x632be59bd9b4e019ull;
	}
	{
		struct vtpu_shape s;

		if (ir_infer(g, &g->nodes[w], &s))
			return -g->errcode;
	}
	for (i = 0; i < n; i++) {
		struct vtpu_shape s = b->nodes[b->outputs[i]].shape;

		o = ir_add(g, OP_WHILE_OUT, &s, 1, &w);
		if (o < 0)
			return o;
		g->nodes[o].a.wout.index = i;
		outs[i] = o;
	}
	return 0;
}

bool ir_has_loops(const struct ir_graph *g)
{
	int i;

	for (i = 0; i < g->n; i++)
		if (g->nodes[i].op == OP_WHILE)
			return true;
	return false;
}

struct ir_graph *ir_clone(const struct ir_graph *src)
{
	struct vtpu_graph *dst = vtpu_graph_new();
	struct ir_graph *g;
	int i;

	if (!dst)
		return NULL;
	g = &dst->ir;
	for (i = 0; i < src->n; i++) {
		const struct ir_node *n = &src->nodes[i];
		int id = ir_add(g, n->op, &n->shape, n->nin, n->in);

		if (id < 0)
			goto fail;
		g->nodes[id].a = n->a;
		g->nodes[id].kernel = n->kernel;
		if (n->name) {
			char *name = ir_alloc(g, strlen(n->name) + 1);

			if (!name)
				goto fail;
			strcpy(name, n->name);
			g->nodes[id].name = name;
		}
		if (n->op == OP_WHILE) {
			struct ir_graph *c = ir_clone(n->a.loop.cond);
			struct ir_graph *b = c ? ir_clone(n->a.loop.body) : NULL;

			if (own_sub(g, c) || own_sub(g, b))
				goto fail;
			g->nodes[id].a.loop.cond = c;
			g->nodes[id].a.loop.body = b;
		}
	}
	g->outputs = malloc((src->nout + 1) * sizeof(int));
	if (!g->outputs)
		goto fail;
	memcpy(g->outputs, src->outputs, src->nout * sizeof(int));
	g->nout = src->nout;
	g->nparams = src->nparams;
	return g;
fail:
	vtpu_graph_free(dst);
	return NULL;
}
