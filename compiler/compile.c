// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * compile.c - the pipeline, in one function (chibicc's cc1(), QBE's
 * func()): each pass in order, the verifier between passes, and the IR
 * dumped after any pass VTPU_DUMP (or the dump option) names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "ir.h"

struct pipeline {
	struct ir_graph *g;
	const char *dump;
	FILE *dump_file;
	char *err;
	size_t errlen;
};

static int after(struct pipeline *p, const char *pass, int ret)
{
	if (!ret)
		ret = ir_verify(p->g);
	if (ret) {
		if (p->err)
			snprintf(p->err, p->errlen, "%s: %s", pass,
				 p->g->errcode ? p->g->err : strerror(-ret));
		return ret;
	}
	if (p->dump && (!strcmp(p->dump, pass) || !strcmp(p->dump, "all")))
		ir_dump(p->g, p->dump_file, pass);
	return 0;
}

/* Runs one pass, verifies, dumps; leaves the pipeline on failure. */
#define RUN(p, name, call) do {					\
		ret = after((p), (name), (call));			\
		if (ret)						\
			goto fail;					\
	} while (0)

/* vtpu_compile(); with a cache, the graph's key in @key. */
static int compile_keyed(const struct vtpu_graph *graph,
			 const struct vtpu_device_params *dev,
			 const struct vtpu_compile_options *opts,
			 struct vtpu_program **out, char *err, size_t errlen,
			 uint64_t key[2])
{
	struct vtpu_compile_options none = { 0 };
	struct pipeline p = { .err = err, .errlen = errlen };
	struct vtpu_program *prog = NULL;
	struct plan_stats plan = { 0 };
	int ret;

	if (!opts)
		opts = &none;
	if (err && errlen)
		err[0] = '\0';
	if (graph->ir.errcode) {
		if (err)
			snprintf(err, errlen, "graph: %s", graph->ir.err);
		return -graph->ir.errcode;
	}
	if (opts->cache) {
		graph_hash(&graph->ir, dev, opts, key);
		if (!vtpu_cache_get(opts->cache, key, out))
			return 0;
	}
	p.dump = opts->dump ? opts->dump : getenv("VTPU_DUMP");
	p.dump_file = opts->dump_file ? opts->dump_file : stderr;
	p.g = ir_clone(&graph->ir);
	prog = calloc(1, sizeof(*prog));
	if (!p.g || !prog) {
		ret = -ENOMEM;
		goto fail;
	}

	RUN(&p, "input", 0);
	RUN(&p, "simplify", pass_simplify(p.g));
	RUN(&p, "fold", pass_fold(p.g));
	RUN(&p, "cse", pass_cse(p.g));
	RUN(&p, "dce", pass_dce(p.g));
	RUN(&p, "lower", pass_lower(p.g));
	/* Lowering leaves reshape chains and copies of copies behind. */
	RUN(&p, "simplify2", pass_simplify(p.g));
	RUN(&p, "cse2", pass_cse(p.g));
	RUN(&p, "dce2", pass_dce(p.g));
	RUN(&p, "fuse", pass_fuse(p.g, !opts->no_fusion));
	RUN(&p, "plan", pass_plan(p.g, &plan));

	ret = codegen(p.g, dev, prog, err, errlen);
	if (ret)
		goto fail;
	prog->cost.scratch_bytes = plan.scratch_peak;
	prog->cost.scratch_lower_bound = plan.scratch_lower_bound;
	if (plan.vmem_peak > prog->cost.vmem_bytes)
		prog->cost.vmem_bytes = plan.vmem_peak;
	cost_model(p.g, dev, prog);

	vtpu_graph_free((struct vtpu_graph *)p.g);
	/* A cache that cannot store still leaves a good program. */
	if (opts->cache)
		vtpu_cache_put(opts->cache, key, prog);
	*out = prog;
	return 0;

fail:
	vtpu_graph_free((struct vtpu_graph *)p.g);
	vtpu_program_free(prog);
	return ret;
}

int vtpu_compile(const struct vtpu_graph *graph,
		 const struct vtpu_device_params *dev,
		 const struct vtpu_compile_options *opts,
		 struct vtpu_program **out, char *err, size_t errlen)
{
	uint64_t key[2];

	return compile_keyed(graph, dev, opts, out, err, errlen, key);
}

/*
 * The program of a source seen before, without parsing it. A source's
 * key leaves the bound values out, since few models read them; one that
 * did maps to zeros, and the key with the values names its graph.
 */
static int source_get(struct vtpu_cache *cache, const void *data, size_t len,
		      const struct vtpu_onnx_binding *b, int n,
		      const struct vtpu_device_params *dev,
		      const struct vtpu_compile_options *opts,
		      const uint64_t src[2], struct vtpu_program **out)
{
	uint64_t key[2], srcv[2];

	if (vtpu_cache_get_source(cache, src, key))
		return -ENOENT;
	if (!key[0] && !key[1] &&
	    (onnx_source_hash(data, len, b, n, true, dev, opts, srcv) ||
	     vtpu_cache_get_source(cache, srcv, key)))
		return -ENOENT;
	/* a source whose program has gone is parsed and compiled anew */
	return vtpu_cache_get(cache, key, out);
}

int vtpu_compile_onnx(const void *data, size_t len,
		      const struct vtpu_onnx_binding *bindings, int n,
		      const struct vtpu_device_params *dev,
		      const struct vtpu_compile_options *opts,
		      struct vtpu_program **out, char *err, size_t errlen)
{
	static const uint64_t by_values[2];
	struct vtpu_cache *cache = opts ? opts->cache : NULL;
	uint64_t src[2], srcv[2], key[2];
	struct vtpu_graph *g;
	bool by_source, used = false;
	int ret;

	by_source = cache && !onnx_source_hash(data, len, bindings, n, false,
					       dev, opts, src);
	if (by_source && !source_get(cache, data, len, bindings, n, dev, opts,
				     src, out))
		return 0;
	ret = onnx_parse_bound(data, len, bindings, n, &g, &used, err, errlen);
	if (ret)
		return ret;
	ret = compile_keyed(g, dev, opts, out, err, errlen, key);
	vtpu_graph_free(g);
	/* a cache that cannot store still leaves a good program */
	if (!ret && by_source && !used)
		vtpu_cache_put_source(cache, src, key);
	if (!ret && by_source && used &&
	    !onnx_source_hash(data, len, bindings, n, true, dev, opts, srcv)) {
		vtpu_cache_put_source(cache, src, by_values);
		vtpu_cache_put_source(cache, srcv, key);
	}
	return ret;
}
