// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * executable.c - compiled programs. Every graph goes through the one
 * cached path, vtpu_compile() with the client's cache, so the same graph
 * compiled twice (by any frontend) is a cache hit.
 *
 * An executable is loaded onto a device once, on its first use there
 * (rt_exe_resident()): the backend validates its program once, and its
 * weights go into a buffer of their own. Both stay, bound read-only to
 * every execution, until the executable is destroyed (PJRT and IREE load
 * an executable the same way; ethos-u validates a command stream once).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <drm/vtpu_isa.h>

#include "rt.h"

/* The shapes come from the program's binding table, in index order. */
static int fill_shapes(struct vtpu_client *c, struct vtpu_executable *e)
{
	const struct vtpu_program *p = e->prog;
	int i;

	if (p->nparams > RT_MAX_BINDINGS || p->noutputs > RT_MAX_BINDINGS ||
	    p->nbindings > RT_MAX_BINDINGS)
		return rt_set_error(c, E2BIG,
				    "program has %d bindings; the runtime takes %d",
				    p->nbindings, RT_MAX_BINDINGS);
	e->nin = p->nparams;
	e->nout = p->noutputs;
	e->weights_binding = -1;
	for (i = 0; i < p->nbindings; i++) {
		const struct vtpu_binding_info *b = &p->bindings[i];

		if (b->role == VTPU_BIND_WEIGHTS) {
			if (e->weights_binding >= 0 ||
			    b->size > p->weights_size)
				return rt_set_error(c, EINVAL,
						    "program binding %d: weights of %llu bytes, the program has %llu",
						    i, (unsigned long long)b->size,
						    (unsigned long long)p->weights_size);
			e->weights_binding = i;
		}
		if (b->role == VTPU_BIND_SCRATCH || b->role == VTPU_BIND_WEIGHTS)
			continue;
		if (b->index < 0 ||
		    b->index >= (b->role == VTPU_BIND_PARAM ? e->nin : e->nout))
			return rt_set_error(c, EINVAL,
					    "program binding %d has bad index %d",
					    i, b->index);
		if (b->role == VTPU_BIND_PARAM)
			e->in_shape[b->index] = b->shape;
		else
			e->out_shape[b->index] = b->shape;
	}
	return 0;
}

/* RT_EV_COMPILE: value[0] 1 on a cache hit, [1] code bytes. */
static void compile_event(struct vtpu_client *c, const struct vtpu_program *p,
			  uint64_t start, bool hit)
{
	struct rt_event ev = {
		.kind = RT_EV_COMPILE, .device = -1, .core = -1,
		.ts_ns = start, .dur_ns = rt_now_ns() - start,
		.value = { hit, p->size },
	};

	rt_profile_event(c, &ev);
}

/* Whether the program branches: loops on the device (ISA version 4). */
static bool program_loops(const struct vtpu_program *p)
{
	const struct vtpu_prog_header *h = p->binary;
	const struct vtpu_insn *code = (const void *)((const char *)h +
						     h->header_size);
	uint32_t i;

	for (i = 0; i < h->insn_count; i++)
		if (code[i].op == VTPU_OP_BRZ || code[i].op == VTPU_OP_BRNZ ||
		    code[i].op == VTPU_OP_JUMP)
			return true;
	return false;
}

/*
 * The op names of the program's metadata section (TRACE id N names the
 * Nth string), indexed once so that profiles name each op's span.
 */
static int index_op_names(struct vtpu_client *c, struct vtpu_executable *e)
{
	const struct vtpu_prog_header *h = e->prog->binary;
	const char *meta, *end, *s;
	uint32_t n = 0;

	meta = (const char *)h + h->header_size + h->code_size + h->const_size;
	end = meta + h->meta_size;
	for (s = meta; s < end; s++)
		n += !*s;
	if (!n)
		return 0;
	e->op_names = calloc(n, sizeof(*e->op_names));
	if (!e->op_names)
		return rt_set_error(c, ENOMEM, "out of memory");
	for (s = meta; s < end && e->nop_names < n; s += strlen(s) + 1)
		e->op_names[e->nop_names++] = s;
	return 0;
}

/* What to compile: a graph, or an ONNX model's bytes and bindings. */
struct source {
	const struct vtpu_graph *g;
	const void *data;
	size_t len;
	const struct vtpu_onnx_binding *b;
	int n;
	const char *what;	/* for messages: "compile", "onnx" */
	const char *fn;		/* the API function called */
	bool onnx;
};

static int compile_source(struct vtpu_client *c, const struct source *src,
			  struct vtpu_executable **out_exe)
{
	struct vtpu_compile_options opts = { 0 };
	struct vtpu_cache_stats before, after;
	struct vtpu_executable *e;
	uint64_t start = rt_now_ns();
	char err[256] = "";
	int ret;

	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, src->fn, "not a client");
	if (!out_exe)
		return rt_bad_arg(c, src->fn, "no out_exe");
	*out_exe = NULL;
	if (src->onnx ? !src->data : !src->g)
		return rt_set_error(c, EINVAL, "%s: no %s", src->what,
				    src->onnx ? "data" : "graph");
	if (src->n < 0 || (src->n && !src->b))
		return rt_set_error(c, EINVAL, "onnx: %d bindings at %p",
				    src->n, (const void *)src->b);
	opts.cache = c->cache;
	e = calloc(1, sizeof(*e));
	if (!e)
		return rt_set_error(c, ENOMEM, "out of memory");
	vtpu_cache_stats(c->cache, &before);
	ret = src->g ? vtpu_compile(src->g, &c->params, &opts, &e->prog, err,
				    sizeof(err)) :
		vtpu_compile_onnx(src->data, src->len, src->b, src->n,
				  &c->params, &opts, &e->prog, err,
				  sizeof(err));
	if (ret) {
		free(e);
		return rt_set_error(c, -ret, "%s: %s", src->what,
				    *err ? err : strerror(-ret));
	}
	vtpu_cache_stats(c->cache, &after);
	e->client = c;
	e->loops = program_loops(e->prog);
	pthread_mutex_init(&e->lock, NULL);
	rt_obj_add(c, &e->obj, RT_KIND_EXECUTABLE);
	ret = fill_shapes(c, e);
	if (!ret)
		ret = index_op_names(c, e);
	if (ret) {
		vtpu_executable_destroy(e);
		return ret;
	}
	/* Other threads may compile at once: this is a hint, not a proof. */
	compile_event(c, e->prog, start, after.hits > before.hits);
	*out_exe = e;
	return 0;
}

int vtpu_executable_compile(struct vtpu_client *c,
			    const struct vtpu_graph *g,
			    struct vtpu_executable **out_exe)
{
	struct source src = { .g = g, .what = "compile", .fn = __func__ };

	return compile_source(c, &src, out_exe);
}

int vtpu_executable_compile_onnx(struct vtpu_client *c, const void *data,
				 size_t len, const struct vtpu_onnx_binding *b,
				 int n, struct vtpu_executable **out_exe)
{
	struct source src = {
		.data = data, .len = len, .b = b, .n = n, .what = "onnx",
		.fn = __func__, .onnx = true,
	};

	return compile_source(c, &src, out_exe);
}

static bool hlo_module_name(const char *text, size_t len, char *out,
			    size_t size);

int vtpu_executable_compile_hlo(struct vtpu_client *c, const char *text,
				size_t len, struct vtpu_executable **out_exe)
{
	struct vtpu_graph *g;
	char err[256] = "", name[128];
	int ret;

	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, __func__, "not a client");
	if (!out_exe)
		return rt_bad_arg(c, __func__, "no out_exe");
	*out_exe = NULL;
	if (!text)
		return rt_set_error(c, EINVAL, "hlo: no text");
	ret = vtpu_hlo_parse(text, len, &g, err, sizeof(err));
	if (ret)
		/* err starts with LINE:COL */
		return rt_set_error(c, -ret, "hlo:%s", *err ? err : strerror(-ret));
	ret = vtpu_executable_compile(c, g, out_exe);
	vtpu_graph_free(g);
	if (!ret && hlo_module_name(text, len, name, sizeof(name)) &&
	    vtpu_executable_set_name(*out_exe, name)) {
		vtpu_executable_destroy(*out_exe);
		*out_exe = NULL;
		ret = rt_set_error(c, ENOMEM, "out of memory");
	}
	return ret;
}

/*
 * "HloModule NAME, ..." names the module; the parser has checked the
 * text, and keeps no name, so this only picks the identifier out.
 */
static bool hlo_module_name(const char *text, size_t len, char *out,
			    size_t size)
{
	static const char kw[] = "HloModule";
	const char *p = text, *end = text + len;
	size_t n = 0;

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if ((size_t)(end - p) <= sizeof(kw) - 1 ||
	    memcmp(p, kw, sizeof(kw) - 1))
		return false;
	p += sizeof(kw) - 1;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (p < end && n + 1 < size && *p != ',' && *p != ' ' &&
	       *p != '\t' && *p != '\n' && *p != '\r' && *p != '{')
		out[n++] = *p++;
	out[n] = '\0';
	return n > 0;
}

int vtpu_executable_set_name(struct vtpu_executable *e, const char *name)
{
	char *copy;

	if (!RT_LIVE(e, RT_KIND_EXECUTABLE))
		return rt_bad_arg(NULL, __func__, "not an executable");
	if (!name)
		return rt_bad_arg(e->client, __func__, "no name");
	copy = strdup(name);
	if (!copy)
		return rt_set_error(e->client, ENOMEM, "out of memory");
	/* profile_records() reads it under the lock, and the session copies it */
	pthread_mutex_lock(&e->lock);
	free(e->name);
	e->name = copy;
	pthread_mutex_unlock(&e->lock);
	return 0;
}

/* ---- resident on a device ------------------------------------------------- */

/* RT_EV_LOAD: value[0] program bytes, [1] weights bytes uploaded. */
static void load_event(struct vtpu_executable *e, struct vtpu_device *d,
		       uint64_t start)
{
	struct rt_event ev = {
		.kind = RT_EV_LOAD, .device = d->index, .core = -1,
		.ts_ns = start, .dur_ns = rt_now_ns() - start,
		.value = { e->prog->size, e->prog->weights_size },
	};

	rt_profile_event(e->client, &ev);
}

/* The weights in a read-only buffer of their own: HBM, else host. */
static int upload_weights(struct vtpu_executable *e, struct vtpu_device *d,
			  struct vtpu_buffer **out)
{
	const struct vtpu_program *p = e->prog;
	int ret;

	*out = NULL;
	if (e->weights_binding < 0)
		return 0;
	ret = vtpu_buffer_create(e->client, d, p->weights_size,
				 VTPU_PLACE_AUTO, out);
	if (ret)
		return rt_set_error(e->client, -ret,
				    "%s: no room for %llu bytes of weights: %s",
				    d->name, (unsigned long long)p->weights_size,
				    vtpu_client_error(e->client));
	return vtpu_buffer_upload(*out, 0, p->weights, p->weights_size);
}

static void unload(struct vtpu_executable *e, struct vtpu_device *d)
{
	struct rt_resident *r = &e->on[d->index];

	if (r->prog)
		e->client->ops->prog_unload(d, r->prog);
	vtpu_buffer_destroy(r->weights);
	r->prog = NULL;
	r->weights = NULL;
}

static int load(struct vtpu_executable *e, struct vtpu_device *d)
{
	struct vtpu_client *c = e->client;
	struct rt_resident *r = &e->on[d->index];
	uint64_t start = rt_now_ns();
	int ret;

	ret = upload_weights(e, d, &r->weights);
	if (!ret)
		ret = c->ops->prog_load(d, e->prog->binary, e->prog->size,
					&r->prog);
	if (ret) {
		unload(e, d);
		return ret;
	}
	pthread_mutex_lock(&c->lock);
	c->stats.program_loads++;
	if (r->weights) {
		c->stats.weight_uploads++;
		c->stats.weight_bytes += e->prog->weights_size;
	}
	pthread_mutex_unlock(&c->lock);
	load_event(e, d, start);
	return 0;
}

int rt_exe_resident(struct vtpu_executable *e, struct vtpu_device *d,
		    struct rt_resident *out)
{
	int ret = 0;

	pthread_mutex_lock(&e->lock);
	if (!e->on[d->index].prog)
		ret = load(e, d);
	*out = e->on[d->index];
	pthread_mutex_unlock(&e->lock);
	return ret;
}

void vtpu_executable_destroy(struct vtpu_executable *e)
{
	int i;

	if (!e)
		return;
	if (!RT_LIVE(e, RT_KIND_EXECUTABLE)) {
		rt_bad_arg(NULL, __func__,
			   "not a live executable (destroyed twice?)");
		return;
	}
	for (i = 0; i < e->client->ndevices; i++)
		unload(e, e->client->devices[i]);
	rt_obj_del(e->client, &e->obj);
	vtpu_program_free(e->prog);
	free(e->op_names);
	free(e->name);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

int vtpu_executable_cost(const struct vtpu_executable *e,
			 struct vtpu_cost *out)
{
	if (!RT_LIVE(e, RT_KIND_EXECUTABLE))
		return rt_bad_arg(NULL, __func__, "not an executable");
	if (!out)
		return rt_bad_arg(e->client, __func__, "no out");
	*out = e->prog->cost;
	return 0;
}

int vtpu_executable_num_inputs(const struct vtpu_executable *e)
{
	if (!RT_LIVE(e, RT_KIND_EXECUTABLE))
		return rt_bad_arg(NULL, __func__, "not an executable");
	return e->nin;
}

int vtpu_executable_num_outputs(const struct vtpu_executable *e)
{
	if (!RT_LIVE(e, RT_KIND_EXECUTABLE))
		return rt_bad_arg(NULL, __func__, "not an executable");
	return e->nout;
}

int vtpu_executable_input_shape(const struct vtpu_executable *e, int i,
				struct vtpu_shape *out)
{
	if (!RT_LIVE(e, RT_KIND_EXECUTABLE))
		return rt_bad_arg(NULL, __func__, "not an executable");
	if (!out)
		return rt_bad_arg(e->client, __func__, "no out");
	if (i < 0 || i >= e->nin)
		return rt_set_error(e->client, EINVAL,
				    "no input %d (the program has %d)", i, e->nin);
	*out = e->in_shape[i];
	return 0;
}

int vtpu_executable_output_shape(const struct vtpu_executable *e, int i,
				 struct vtpu_shape *out)
{
	if (!RT_LIVE(e, RT_KIND_EXECUTABLE))
		return rt_bad_arg(NULL, __func__, "not an executable");
	if (!out)
		return rt_bad_arg(e->client, __func__, "no out");
	if (i < 0 || i >= e->nout)
		return rt_set_error(e->client, EINVAL,
				    "no output %d (the program has %d)",
				    i, e->nout);
	*out = e->out_shape[i];
	return 0;
}
