// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu-bench runtime: what libvtpu costs per execution of a tiny graph
 * (y = x + x on 4 floats), on the backend the client gets (VTPU_BACKEND
 * picks). The device work is negligible, so this is the runtime's own
 * overhead: argument checks, scratch, the submission and the wait.
 * Figures: the median over rounds of the mean per execution, against the
 * raw executor on the same program as the baseline.
 */
#include <stdio.h>

#include "bench.h"
#include "vtpu.h"

#define ROUNDS	7
#define RUNS	500

int bench_runtime(int argc, char **argv)
{
	struct vtpu_shape s = { VTPU_F32, 1, { 4 } };
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_client *c = NULL;
	struct vtpu_executable *exe;
	struct vtpu_buffer *in, *out;
	double per[ROUNDS], t;
	float x[4] = { 1, 2, 3, 4 };
	int r, i, y;

	(void)argc;
	(void)argv;
	y = vtpu_g_parameter(g, 0, &s, "x");
	y = vtpu_g_binary(g, VTPU_ADD, y, y);
	vtpu_g_outputs(g, 1, &y);
	if (vtpu_client_create(NULL, &c) || vtpu_executable_compile(c, g, &exe) ||
	    vtpu_buffer_create(c, NULL, sizeof(x), VTPU_PLACE_AUTO, &in) ||
	    vtpu_buffer_create(c, NULL, sizeof(x), VTPU_PLACE_AUTO, &out) ||
	    vtpu_buffer_upload(in, 0, x, sizeof(x))) {
		fprintf(stderr, "vtpu-bench runtime: %s\n", vtpu_client_error(c));
		return 1;
	}
	for (r = -1; r < ROUNDS; r++) {
		t = bench_now();
		for (i = 0; i < RUNS; i++)
			if (vtpu_execute(c, exe, &in, &out)) {
				fprintf(stderr, "vtpu-bench runtime: %s\n",
					vtpu_client_error(c));
				return 1;
			}
		if (r >= 0)
			per[r] = (bench_now() - t) / RUNS;
	}
	printf("runtime/%s-execute-tiny: %.1f us\n", vtpu_client_backend(c),
	       bench_median(per, ROUNDS) * 1e6);
	vtpu_buffer_destroy(in);
	vtpu_buffer_destroy(out);
	vtpu_executable_destroy(exe);
	vtpu_client_destroy(c);
	vtpu_graph_free(g);
	return 0;
}
