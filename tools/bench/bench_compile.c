// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu-bench compile: compile time of generated graphs of 10, 100 and
 * 1000 ops, cold (the whole pipeline) against cached (a hit in the
 * in-memory compile cache: hashing the graph and copying the program),
 * and the memory planner's peak against the liveness lower bound.
 *
 * The graphs are MLP-like chains: every few ops a matmul with a constant
 * weight, then bias, activation and residual elementwise ops, so fusion,
 * planning and tiling all have work to do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "vtpu_compiler.h"

#define REPS	5

static struct vtpu_graph *chain(int nops)
{
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_shape sx = { VTPU_F32, 2, { 32, 64 } };
	struct vtpu_shape sw = { VTPU_F32, 2, { 64, 64 } };
	float *w = calloc(64 * 64, sizeof(float));
	int x, y, i, ops = 0;

	for (i = 0; i < 64 * 64; i++)
		w[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
	x = y = vtpu_g_parameter(g, 0, &sx, "x");
	for (i = 0; ops < nops; i++) {
		switch (i % 5) {
		case 0:
			/* A different constant each time: nothing to CSE. */
			w[i % (64 * 64)] += 1.0f;
			y = vtpu_g_matmul(g, y, vtpu_g_constant(g, &sw, w));
			ops += 2;
			break;
		case 1:
			y = vtpu_g_unary(g, VTPU_TANH, y);
			ops++;
			break;
		case 2:
			y = vtpu_g_binary(g, VTPU_ADD, y, x);
			ops++;
			break;
		case 3:
			y = vtpu_g_unary(g, VTPU_RELU, y);
			ops++;
			break;
		default:
			x = y;
			y = vtpu_g_binary(g, VTPU_MUL, y, y);
			ops++;
		}
	}
	vtpu_g_outputs(g, 1, &y);
	free(w);
	return g;
}

int bench_compile(int argc, char **argv)
{
	static const int sizes[] = { 10, 100, 1000 };
	const struct vtpu_device_params dev = {
		.vmem_size = 1 << 20, .num_cores = 2, .hbm_size = 256 << 20,
	};
	double cold[REPS], warm[REPS], t;
	unsigned int s;
	int r, ret;

	(void)argc;
	(void)argv;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct vtpu_graph *g = chain(sizes[s]);
		struct vtpu_cache *cache = vtpu_cache_new(4, "");
		struct vtpu_compile_options opts = { .cache = cache };
		struct vtpu_program *p = NULL;
		char err[256];

		if (!g || !cache || vtpu_graph_error(g)) {
			fprintf(stderr, "vtpu-bench compile: cannot build the graph\n");
			return 1;
		}
		for (r = 0; r < REPS; r++) {
			t = bench_now();
			ret = vtpu_compile(g, &dev, NULL, &p, err, sizeof(err));
			cold[r] = bench_now() - t;
			if (ret) {
				fprintf(stderr, "vtpu-bench compile: %s\n", err);
				return 1;
			}
			if (r == 0)
				printf("compile/plan-%d-ops: peak %llu / lower bound %llu = %.3f\n",
				       sizes[s],
				       (unsigned long long)p->cost.scratch_bytes,
				       (unsigned long long)p->cost.scratch_lower_bound,
				       p->cost.scratch_lower_bound ?
				       (double)p->cost.scratch_bytes /
				       p->cost.scratch_lower_bound : 1.0);
			vtpu_program_free(p);
		}
		/* Fill the cache once, then time hits. */
		vtpu_compile(g, &dev, &opts, &p, err, sizeof(err));
		vtpu_program_free(p);
		for (r = 0; r < REPS; r++) {
			t = bench_now();
			ret = vtpu_compile(g, &dev, &opts, &p, err, sizeof(err));
			warm[r] = bench_now() - t;
			if (ret)
				return 1;
			vtpu_program_free(p);
		}
		printf("compile/cold-%d-ops: %.3f ms\n", sizes[s],
		       bench_median(cold, REPS) * 1e3);
		printf("compile/cached-%d-ops: %.3f ms\n", sizes[s],
		       bench_median(warm, REPS) * 1e3);
		printf("compile/cold-vs-cached-%d-ops: %.1f x\n", sizes[s],
		       bench_median(cold, REPS) / bench_median(warm, REPS));
		vtpu_cache_free(cache);
		vtpu_graph_free(g);
	}
	return 0;
}
