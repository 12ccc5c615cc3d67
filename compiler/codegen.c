// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * codegen.c - turns a planned primitive graph into one program. Kernels
 * (node.kernel, or one per node) are emitted in dependency order, each
 * behind a TRACE naming it; every kernel works in VMEM tiles sized from
 * the device's VMEM, and code unrolls the loops over tiles. A WHILE
 * node (a loop whose trip count the data decides) is the one kernel with
 * branches: loop.c links its condition's and body's programs in.
 *
 * Bindings: parameters (read), outputs (written, never read back), one
 * scratch buffer (read and written) when the plan uses it, then one
 * weights buffer (read only) holding the large constants. Values live
 * in memory as f32, bf16 or s32; pred values as f32 1.0/0.0 (the ISA
 * has no byte type), so pred parameters and outputs are refused: convert
 * them at the graph's boundary. s32 arithmetic runs in f32 on the VPU,
 * exact for magnitudes below 2^24. The result of every bf16 node is
 * rounded to bf16, in VMEM as in memory, so fused and unfused code agree
 * bit for bit (ir_eval rounds only at CONVERT and at the outputs).
 *
 * The kernels themselves: elementwise chains and P_MATMUL with fused
 * elementwise consumers (ew.c), P_REDUCE_LAST here, the data movers in
 * copy.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "plan.h"
#include "vtpu_prog.h"

int cg_fail(struct cg *c, int code, const char *fmt, ...)
{
	va_list ap;

	if (!c->ret) {
		c->ret = -code;
		if (c->err && c->errlen) {
			va_start(ap, fmt);
			vsnprintf(c->err, c->errlen, fmt, ap);
			va_end(ap);
		}
	}
	return c->ret;
}

uint8_t hbm_dtype(enum vtpu_type t)
{
	switch (t) {
	case VTPU_BF16:
		return VTPU_DT_BF16;
	case VTPU_S32:
		return VTPU_DT_S32;
	default:
		return VTPU_DT_F32;	/* f32 and pred */
	}
}

int dt_size(uint8_t dt)
{
	return dt == VTPU_DT_BF16 ? 2 : 4;
}

int64_t cdiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* The output binding an A_OUTPUT root went to: the first output naming it. */
static int output_of(const struct ir_graph *g, int r)
{
	int k;

	for (k = 0; k < g->nout; k++)
		if (node_root(g, g->outputs[k]) == r)
			return k;
	return 0;
}

struct loc loc_of(struct cg *c, int v)
{
	const struct ir_graph *g = c->g;
	int r = node_root(g, v);
	const struct ir_node *n = &g->nodes[r];
	struct loc l = { .off = n->offset, .dt = hbm_dtype(n->shape.type) };

	switch (n->arena) {
	case A_PARAM:
		l.binding = n->a.param.index;
		break;
	case A_OUTPUT:
		l.binding = c->nparams + output_of(g, r);
		break;
	case A_CONST:
		l.binding = VTPU_BINDING_CONSTANTS;
		break;
	case A_SCRATCH:
		l.binding = c->scratch_binding;
		break;
	case A_WEIGHTS:
		l.binding = c->weights_binding;
		break;
	default:
		cg_fail(c, EINVAL, "codegen: node %d has no memory", v);
	}
	return l;
}

int cg_values_meet(struct cg *c, int x, int y)
{
	const struct ir_graph *g = c->g;
	int rx = node_root(g, x), ry = node_root(g, y);
	struct loc a = loc_of(c, rx), b = loc_of(c, ry);
	uint64_t ea = a.off + (uint64_t)shape_elems(&g->nodes[rx].shape) *
		      dt_size(a.dt);
	uint64_t eb = b.off + (uint64_t)shape_elems(&g->nodes[ry].shape) *
		      dt_size(b.dt);

	return a.binding == b.binding && a.off < eb && b.off < ea;
}

struct loc loc_add(struct loc l, uint64_t bytes)
{
	l.off += bytes;
	return l;
}

/* ---- P_REDUCE_LAST ------------------------------------------------------ */

static uint8_t reduce_fn(enum vtpu_reduce_op op)
{
	switch (op) {
	case VTPU_REDUCE_MAX_OP:
		return VTPU_REDUCE_MAX;
	case VTPU_REDUCE_MIN_OP:
		return VTPU_REDUCE_MIN;
	default:
		return VTPU_REDUCE_SUM;	/* SUM and MEAN */
	}
}

/* [rows, cols] -> [rows]: row tiles folded into a column, column tile by tile. */
static void gen_reduce_last(struct cg *c, int v)
{
	const struct ir_node *n = &c->g->nodes[v];
	const struct vtpu_shape *xs = &c->g->nodes[n->in[0]].shape;
	struct loc src = loc_of(c, n->in[0]), dst = loc_of(c, v);
	int64_t nrows = xs->dims[0], ncols = xs->dims[1], V = c->vmem / 4, tr, tc, r, j;
	static const struct vtpu_tile none;
	float inv = (float)ncols;
	uint32_t bits;

	memcpy(&bits, &inv, sizeof(bits));
	if (V > CG_TILE_ELEMS)
		V = CG_TILE_ELEMS;
	tc = ncols < CG_TILE_DIM ? ncols : CG_TILE_DIM;
	if (tc > V / 2)
		tc = V / 2;
	tr = V / (tc + 1);
	tr = tr < nrows ? tr : nrows;
	tr = tr < CG_TILE_DIM ? tr : CG_TILE_DIM;
	for (r = 0; r < nrows; r += tr) {
		int64_t nr = nrows - r < tr ? nrows - r : tr;
		struct vtpu_tile acc = vtile(0, nr, 1, 1, VTPU_DT_F32);

		for (j = 0; j < ncols; j += tc) {
			int64_t nc = ncols - j < tc ? ncols - j : tc;
			struct vtpu_tile t = vtile(tr * 4, nr, nc, nc, VTPU_DT_F32);

			emit_dma(&c->e, 0, t, src.binding,
				 src.off + (r * ncols + j) * dt_size(src.dt),
				 ncols * dt_size(src.dt), src.dt);
			emit_op(&c->e, VTPU_OP_REDUCE, reduce_fn(n->a.rl.op),
				VTPU_F_AXIS_COLS | (j ? VTPU_F_ACC : 0), 0, acc,
				t, none);
		}
		if (n->a.rl.op == VTPU_REDUCE_MEAN_OP)
			emit_op(&c->e, VTPU_OP_BINARY, VTPU_BINARY_DIV,
				VTPU_F_BCAST_IMM, bits, acc, acc, none);
		emit_dma(&c->e, 1, acc, dst.binding, dst.off + r * dt_size(dst.dt),
			 dt_size(dst.dt), dst.dt);
	}
}

/* ---- kernels ------------------------------------------------------------ */

static void kernel_name(const struct ir_graph *g, const int *nodes, int nn,
			int id, char *buf, size_t len)
{
	size_t o = snprintf(buf, len, "k%d:", id);
	int i;
	char *p;

	for (i = 0; i < nn && o + 1 < len; i++) {
		if (g->nodes[nodes[i]].op == OP_RESHAPE)
			continue;
		o += snprintf(buf + o, len - o, "%s%s", o > 3 && buf[o - 1] != ':' ? "+" : "",
			      ir_ops[g->nodes[nodes[i]].op].name);
	}
	for (p = buf; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p += 'a' - 'A';
}

/* Whether a kernel of these nodes emits code: not parameters/aliases. */
static int kernel_has_code(const struct ir_graph *g, const int *nodes, int nn)
{
	int i;

	for (i = 0; i < nn; i++) {
		enum ir_op op = g->nodes[nodes[i]].op;

		if (op != OP_PARAM && op != OP_CONST && op != OP_RESHAPE &&
		    !g->nodes[nodes[i]].virt)
			return 1;
	}
	return 0;
}

static void gen_kernel(struct cg *c, const int *nodes, int nn, int id)
{
	const struct ir_graph *g = c->g;
	const struct ir_node *n = &g->nodes[nodes[0]];
	static const struct vtpu_tile none;
	char name[96];

	if (!nn || !kernel_has_code(g, nodes, nn))
		return;
	kernel_name(g, nodes, nn, id, name, sizeof(name));
	/* A kernel reads what the ones before it stored, lanes and all. */
	emit_kernel(&c->e);
	emit_op(&c->e, VTPU_OP_TRACE, 0, 0, emit_meta(&c->e, name), none, none,
		none);
	if (nn == 1 && n->op == OP_P_REDUCE_LAST)
		gen_reduce_last(c, nodes[0]);
	else if (nn == 1 && n->op == OP_P_COPY)
		gen_p_copy(c, nodes[0]);
	else if (nn == 1 && n->op == OP_CONCAT)
		gen_concat(c, nodes[0]);
	else if (nn == 1 && n->op == OP_PAD)
		gen_pad(c, nodes[0]);
	else if (nn == 1 && n->op == OP_GATHER)
		gen_gather(c, nodes[0]);
	else if (nn == 1 && n->op == OP_P_DWCONV)
		gen_dwconv(c, nodes[0]);
	else if (n->op == OP_WHILE)
		gen_while(c, nodes[0]);
	else
		gen_fused(c, nodes, nn);
}

/* Every kernel in order, then the copies into output bindings. */
static int gen_kernels(struct cg *c, int *ncode_kernels)
{
	struct ir_graph *g = c->g;
	int *knum = calloc(g->n + 1, sizeof(int));
	int *nodes = calloc(g->n + 1, sizeof(int));
	int nk, k, i, nn, before;

	if (!knum || !nodes) {
		free(knum);
		free(nodes);
		return cg_fail(c, ENOMEM, "out of memory");
	}
	nk = kernel_order(g, knum);
	if (nk < 0)
		cg_fail(c, EINVAL, "codegen: kernels have no order");
	*ncode_kernels = 0;
	for (k = 0; k < nk && !c->ret && !c->e.failed; k++) {
		/* parameters and constants are memory, not code */
		for (nn = 0, i = 0; i < g->n; i++)
			if (knum[i] == k && g->nodes[i].op != OP_PARAM &&
			    g->nodes[i].op != OP_CONST)
				nodes[nn++] = i;
		before = c->e.n;
		gen_kernel(c, nodes, nn, *ncode_kernels);
		*ncode_kernels += c->e.n != (uint32_t)before;
	}
	free(knum);
	free(nodes);
	return c->ret;
}

static void gen_output_copies(struct cg *c, int *nkernels)
{
	static const struct vtpu_tile none;
	struct ir_graph *g = c->g;
	struct loc dst;
	char name[32];
	int k, v;

	for (k = 0; k < g->nout; k++) {
		v = g->outputs[k];
		if (g->nodes[node_root(g, v)].arena == A_OUTPUT &&
		    output_of(g, node_root(g, v)) == k)
			continue;
		snprintf(name, sizeof(name), "k%d:out%d", (*nkernels)++, k);
		emit_kernel(&c->e);
		emit_op(&c->e, VTPU_OP_TRACE, 0, 0, emit_meta(&c->e, name),
			none, none, none);
		dst.binding = c->nparams + k;
		dst.off = 0;
		dst.dt = hbm_dtype(g->nodes[v].shape.type);
		copy_flat(c, loc_of(c, v), dst, shape_elems(&g->nodes[v].shape));
	}
}

/* ---- bindings, constants, weights, the program ---------------------------- */

static int check_boundary_type(struct cg *c, const struct vtpu_shape *s,
			       const char *what, int i)
{
	if (s->type == VTPU_PRED || s->type == VTPU_S64)
		return cg_fail(c, ENOTSUP, "%s %d: %s is not supported at a binding (convert it)",
			       what, i, type_name(s->type));
	return 0;
}

static int param_node(const struct ir_graph *g, int index)
{
	int i;

	for (i = 0; i < g->n; i++)
		if (g->nodes[i].op == OP_PARAM && g->nodes[i].a.param.index == index)
			return i;
	return -1;
}

static uint64_t scratch_size(const struct ir_graph *g)
{
	uint64_t end = 0, e;
	int i;

	for (i = 0; i < g->n; i++) {
		if (g->nodes[i].arena != A_SCRATCH || g->nodes[i].op == OP_RESHAPE)
			continue;
		e = g->nodes[i].offset + dev_bytes(&g->nodes[i].shape);
		end = e > end ? e : end;
	}
	return end;
}

/* The end of the last constant placed in @arena. */
static uint64_t const_end(const struct ir_graph *g, int arena)
{
	uint64_t end = 0, e;
	int i;

	for (i = 0; i < g->n; i++)
		if (g->nodes[i].op == OP_CONST && g->nodes[i].arena == arena) {
			e = g->nodes[i].offset + dev_bytes(&g->nodes[i].shape);
			end = e > end ? e : end;
		}
	return end;
}

static int make_bindings(struct cg *c, struct vtpu_program *prog)
{
	struct ir_graph *g = c->g;
	uint64_t scratch = c->loop_scratch, weights = c->loop_weights;
	int i, p, nb = g->nparams + g->nout + !!scratch + !!weights;

	prog->bindings = calloc(nb + 1, sizeof(*prog->bindings));
	if (!prog->bindings)
		return cg_fail(c, ENOMEM, "out of memory");
	prog->nbindings = nb;
	prog->nparams = g->nparams;
	prog->noutputs = g->nout;
	for (i = 0; i < g->nparams; i++) {
		struct vtpu_binding_info *b = &prog->bindings[i];

		p = param_node(g, i);
		b->role = VTPU_BIND_PARAM;
		b->index = i;
		if (p < 0)
			continue;
		b->shape = g->nodes[p].shape;
		b->size = dev_bytes(&b->shape);
		if (check_boundary_type(c, &b->shape, "parameter", i))
			return c->ret;
	}
	for (i = 0; i < g->nout; i++) {
		struct vtpu_binding_info *b = &prog->bindings[g->nparams + i];

		b->role = VTPU_BIND_OUTPUT;
		b->index = i;
		b->shape = g->nodes[g->outputs[i]].shape;
		b->size = dev_bytes(&b->shape);
		if (check_boundary_type(c, &b->shape, "output", i))
			return c->ret;
	}
	c->scratch_binding = -1;
	c->weights_binding = -1;
	i = g->nparams + g->nout;
	if (scratch) {
		prog->bindings[i].role = VTPU_BIND_SCRATCH;
		prog->bindings[i].size = scratch;
		c->scratch_binding = i++;
	}
	if (weights) {
		prog->bindings[i].role = VTPU_BIND_WEIGHTS;
		prog->bindings[i].size = weights;
		c->weights_binding = i;
	}
	return 0;
}

/* Constants in device format at their planned offsets (pred as f32). */
static void put_const(uint8_t *dst, const struct ir_node *n)
{
	int64_t i, cnt = shape_elems(&n->shape);
	const uint8_t *src = n->a.cst.data;
	float f;

	if (n->shape.type != VTPU_PRED) {
		memcpy(dst, src, cnt * dev_type_size(n->shape.type));
		return;
	}
	for (i = 0; i < cnt; i++) {
		f = src[i] ? 1.0f : 0.0f;
		memcpy(dst + 4 * i, &f, 4);
	}
}

/* The constants section and the weights, each constant in its arena. */
static int make_consts(struct cg *c)
{
	struct ir_graph *g = c->g;
	uint64_t size = c->loop_consts;
	int i;

	/* The planner keeps the section far below the ISA's limit. */
	if (size > VTPU_MAX_CONST_SIZE)
		return cg_fail(c, E2BIG, "constants: %llu bytes, the limit is %u",
			       (unsigned long long)size, VTPU_MAX_CONST_SIZE);
	c->weights_size = c->loop_weights;
	if (size) {
		c->e.consts = calloc(1, size);
		c->e.const_size = size;
	}
	if (c->weights_size)
		c->weights = weights_alloc(c->weights_size);
	if ((size && !c->e.consts) || (c->weights_size && !c->weights))
		return cg_fail(c, ENOMEM, "out of memory for %llu bytes of weights",
			       (unsigned long long)c->weights_size);
	for (i = 0; i < g->n; i++) {
		const struct ir_node *n = &g->nodes[i];

		if (n->op != OP_CONST)
			continue;
		put_const((n->arena == A_CONST ? c->e.consts : c->weights) +
			  n->offset, n);
	}
	loops_fill(c);
	return 0;
}

/*
 * Lanes: a device of several cores gets programs whose big kernels split
 * their tiles among as many lanes (uapi/drm/vtpu_isa.h), one per core,
 * each with its share of VMEM, so the cores can run them at once; every
 * kernel then plans its tiles for one lane's VMEM. Not when that share
 * would be under 64 KiB: tiles that small cost more than a core gains.
 */
static void plan_lanes(struct cg *c, const struct vtpu_device_params *dev)
{
	uint32_t lanes = dev->num_cores < VTPU_MAX_LANES ? dev->num_cores :
			 VTPU_MAX_LANES;

	/* a program with branches has one lane (uapi/drm/vtpu_isa.h) */
	if (lanes < 2 || c->vmem / lanes < (64u << 10) || ir_has_loops(c->g))
		return;
	c->e.lanes = lanes;
	c->e.lane_size = c->vmem / lanes & ~63u;
	c->vmem = c->e.lane_size;
}

/* The finished program must pass the same validator the kernel runs. */
static int finish(struct cg *c, const struct vtpu_device_params *dev,
		  struct vtpu_program *prog)
{
	struct vtpu_binding_desc bd[VTPU_MAX_BINDINGS];
	struct vtpu_prog_info info;
	struct vtpu_prog_error perr = { 0 };
	uint32_t vmem = (c->e.vmem_used + 63) & ~63u;
	int i;

	/*
	 * Each lane's VMEM is the same share of the header's; a program
	 * whose kernels all stayed in lane 0 needs no lanes, and its VMEM is
	 * what it uses (which the core clears before each job).
	 */
	if (c->e.lanes_ever)
		vmem = c->e.lanes * c->e.lane_size;
	if (prog->nbindings > VTPU_MAX_BINDINGS)
		return cg_fail(c, E2BIG, "%d bindings, the limit is %d",
			       prog->nbindings, VTPU_MAX_BINDINGS);
	if (vmem > dev->vmem_size)
		vmem = dev->vmem_size;
	if (c->e.too_wide)
		return cg_fail(c, E2BIG, "a DMA stride does not fit 32 bits");
	if (c->e.too_many)
		return cg_fail(c, E2BIG, "over the limit of %u instructions",
			       VTPU_MAX_INSNS);
	prog->binary = emit_finish(&c->e, vmem ? vmem : 64, prog->nbindings,
				   &prog->size);
	if (!prog->binary)
		return cg_fail(c, ENOMEM, "out of memory");
	for (i = 0; i < prog->nbindings; i++) {
		bd[i].size = prog->bindings[i].size;
		switch (prog->bindings[i].role) {
		case VTPU_BIND_PARAM:
		case VTPU_BIND_WEIGHTS:
			bd[i].access = VTPU_ACCESS_READ;
			break;
		case VTPU_BIND_OUTPUT:
			bd[i].access = VTPU_ACCESS_WRITE;
			break;
		default:
			bd[i].access = VTPU_ACCESS_READ | VTPU_ACCESS_WRITE;
		}
	}
	if (vtpu_prog_validate(prog->binary, prog->size, bd, prog->nbindings,
			       dev->vmem_size, &info, &perr))
		return cg_fail(c, EINVAL, "codegen bug: instruction %d: %s",
			       perr.insn, perr.why ? perr.why : "?");
	prog->cost.insn_count = info.insn_count;
	prog->cost.flops = (double)info.flops;
	prog->cost.bytes_moved = (double)info.dma_bytes;
	prog->cost.vmem_bytes = info.vmem_size;
	prog->cost.code_bytes = (uint64_t)info.insn_count * sizeof(struct vtpu_insn);
	prog->cost.const_bytes = info.const_size;
	return 0;
}

static void sum_binding_bytes(struct vtpu_program *prog)
{
	int i;

	for (i = 0; i < prog->nbindings; i++) {
		const struct vtpu_binding_info *b = &prog->bindings[i];

		if (b->role == VTPU_BIND_PARAM)
			prog->cost.param_bytes += b->size;
		else if (b->role == VTPU_BIND_OUTPUT)
			prog->cost.output_bytes += b->size;
		else if (b->role == VTPU_BIND_WEIGHTS)
			prog->cost.weights_bytes = b->size;
		else
			prog->cost.scratch_bytes = b->size;
	}
}

int codegen(struct ir_graph *g, const struct vtpu_device_params *dev,
	    struct vtpu_program *prog, char *err, size_t errlen)
{
	struct cg c = {
		.g = g, .err = err, .errlen = errlen, .nparams = g->nparams,
		.noutputs = g->nout,
	};
	int nkernels = 0;

	memset(prog, 0, sizeof(*prog));
	if (err && errlen)
		err[0] = '\0';
	emit_init(&c.e);
	c.vmem = dev->vmem_size > 0x40000000u ? 0x40000000u : dev->vmem_size;
	if (c.vmem < 4096)
		cg_fail(&c, EINVAL, "VMEM of %llu bytes is too small",
			(unsigned long long)dev->vmem_size);
	plan_lanes(&c, dev);
	if (!c.ret)
		loops_prepare(&c, dev, scratch_size(g), const_end(g, A_CONST),
			      const_end(g, A_WEIGHTS));
	if (!c.ret)
		make_bindings(&c, prog);
	if (!c.ret)
		make_consts(&c);
	if (!c.ret)
		gen_kernels(&c, &nkernels);
	if (!c.ret)
		gen_output_copies(&c, &nkernels);
	if (!c.ret) {
		emit_barrier(&c.e);
		emit_op(&c.e, VTPU_OP_END, 0, 0, 0, vtile(0, 0, 0, 0, 0),
			vtile(0, 0, 0, 0, 0), vtile(0, 0, 0, 0, 0));
		finish(&c, dev, prog);
	}
	emit_fini(&c.e);
	loops_free(&c);
	if (c.ret) {
		weights_put(c.weights);
		free(prog->binary);
		free(prog->bindings);
		memset(prog, 0, sizeof(*prog));
		return c.ret;
	}
	prog->weights = c.weights;
	prog->weights_size = c.weights_size;
	prog->cost.kernel_count = nkernels;
	sum_binding_bytes(prog);
	return 0;
}

/* ---- weights ------------------------------------------------------------- */

/* In front of the bytes; 64 bytes keep them aligned for any DMA. */
struct weights_hdr {
	uint64_t refs;
	uint64_t size;
	uint64_t mapped;	/* bytes mmap()ed, header included; 0: calloc() */
	uint64_t pad[5];
};

/*
 * From 2 MiB, weights get a mapping of their own in huge pages: filling
 * hundreds of MB (codegen, a cache hit's read) otherwise takes a page
 * fault every 4 KiB, which in a VM costs more than the copy.
 */
#define WEIGHTS_HUGE	(2u << 20)

void *weights_alloc(uint64_t size)
{
	struct weights_hdr *h;
	size_t len;

	if (size > SIZE_MAX - sizeof(*h))
		return NULL;
	len = sizeof(*h) + size;
	if (len < WEIGHTS_HUGE) {
		h = calloc(1, len);
		if (!h)
			return NULL;
	} else {
		h = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (h == MAP_FAILED)
			return NULL;
		madvise(h, len, MADV_HUGEPAGE);	/* a hint: 4 KiB pages do too */
		h->mapped = len;
	}
	h->refs = 1;
	h->size = size;
	return h + 1;
}

static struct weights_hdr *weights_hdr(const void *w)
{
	return (struct weights_hdr *)w - 1;
}

const void *weights_get(const void *w)
{
	if (w)
		__atomic_add_fetch(&weights_hdr(w)->refs, 1, __ATOMIC_RELAXED);
	return w;
}

void weights_put(const void *w)
{
	struct weights_hdr *h = w ? weights_hdr(w) : NULL;

	if (!h || __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (h->mapped)
		munmap(h, h->mapped);
	else
		free(h);
}

void vtpu_program_free(struct vtpu_program *p)
{
	if (!p)
		return;
	weights_put(p->weights);
	free(p->binary);
	free(p->bindings);
	free(p);
}
