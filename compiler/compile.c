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

int vtpu_compile(const struct vtpu_graph *graph,
		 const struct vtpu_device_params *dev,
		 const struct vtpu_compile_options *opts,
		 struct vtpu_program **out, char *err, size_t errlen)
{
	struct vtpu_compile_options none = { 0 };
	struct pipeline p = { .err = err, .errlen = errlen };
	struct vtpu_program *prog = NULL;
	struct plan_stats plan = { 0 };
	uint64_t key[2];
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
