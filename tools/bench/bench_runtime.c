// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu-bench runtime: what libvtpu costs per execution, on the backend
 * the client gets (VTPU_BACKEND picks).
 *
 *   execute-tiny   y = x + x on 4 floats: the mean wall time of a run,
 *                  whose device work is negligible
 *   overhead-tiny  per run, wall time minus time on the core (the
 *                  device's own figure), for the tiny graph
 *   overhead-big   the same for y = x W, W a 64 MiB constant [4096,4096]
 *                  (x [1,4096]): a model's weights. An executable is
 *                  loaded once, so this must not grow with the weights:
 *                  big-vs-tiny is the ratio of the two, measured in the
 *                  same run (goal: <= 1.5).
 *   overhead-tiny-hot  the tiny graph's overhead run after run
 *
 * The emulated core shares the host's caches, and a big run streams
 * 64 MiB through them: whatever runs next finds the runtime's code and
 * data evicted (~6 us on a desktop CPU). The host backend prefetches
 * its completion path after such a job (rt_completion_prefetch()), so
 * the big run's return waits on memory once, not line after line; what
 * runs before the next job is still cold. So big and tiny runs alternate
 * and both figures start from what a big run leaves, and the ratio
 * measures work that grows with the weights, not cache warmth; the
 * tiny graph's overhead with warm caches is printed apart. Each figure
 * is the median of per-run medians over rounds. The host backend prints
 * runtime/host-*; the accel backend (vtpu.ko, in QEMU for `make bench`)
 * prints them as submit/overhead-*, the submission path's figures.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "vtpu.h"

#define ROUNDS		7
#define RUNS		500	/* execute-tiny, per round */
#define OVH_HOT		50	/* overhead runs per round: tiny back to back */
#define OVH_PAIRS	3	/* big then tiny */
#define BIG_K		4096
#define BIG_N		4096	/* W: BIG_K * BIG_N * 4 bytes = 64 MiB */

struct graph_run {
	struct vtpu_executable *exe;
	struct vtpu_buffer *in, *out;
	struct vtpu_device *dev;
	double ovh[ROUNDS];	/* median overhead (us) of each round */
	double hot[ROUNDS];	/* the same, run after run of this graph */
};

static struct vtpu_graph *tiny_graph(void)
{
	struct vtpu_shape s = { VTPU_F32, 1, { 4 } };
	struct vtpu_graph *g = vtpu_graph_new();
	int y;

	y = vtpu_g_parameter(g, 0, &s, "x");
	y = vtpu_g_binary(g, VTPU_ADD, y, y);
	vtpu_g_outputs(g, 1, &y);
	return g;
}

static struct vtpu_graph *big_graph(void)
{
	struct vtpu_shape sx = { VTPU_F32, 2, { 1, BIG_K } };
	struct vtpu_shape sw = { VTPU_F32, 2, { BIG_K, BIG_N } };
	struct vtpu_graph *g = vtpu_graph_new();
	float *w = malloc((size_t)BIG_K * BIG_N * sizeof(float));
	size_t i;
	int y;

	if (!w)
		return g;	/* the graph reports the error */
	for (i = 0; i < (size_t)BIG_K * BIG_N; i++)
		w[i] = (float)(i % 7) * 0.125f - 0.375f;
	y = vtpu_g_matmul(g, vtpu_g_parameter(g, 0, &sx, "x"),
			  vtpu_g_constant(g, &sw, w));
	vtpu_g_outputs(g, 1, &y);
	free(w);
	return g;
}

static int setup(struct vtpu_client *c, struct vtpu_graph *g,
		 struct graph_run *r)
{
	struct vtpu_shape in, out;
	uint64_t isz, osz;
	int ret, i;

	ret = vtpu_executable_compile(c, g, &r->exe);
	vtpu_graph_free(g);
	if (ret)
		return ret;
	vtpu_executable_input_shape(r->exe, 0, &in);
	vtpu_executable_output_shape(r->exe, 0, &out);
	for (isz = 4, i = 0; i < in.rank; i++)
		isz *= in.dims[i];
	for (osz = 4, i = 0; i < out.rank; i++)
		osz *= out.dims[i];
	ret = vtpu_client_device(c, 0, &r->dev);
	if (!ret)
		ret = vtpu_buffer_create(c, r->dev, isz, VTPU_PLACE_AUTO, &r->in);
	if (!ret)
		ret = vtpu_buffer_create(c, r->dev, osz, VTPU_PLACE_AUTO,
					 &r->out);
	/* the first run loads the executable: not measured */
	if (!ret)
		ret = vtpu_execute(c, r->exe, &r->in, &r->out);
	return ret;
}

static void teardown(struct graph_run *r)
{
	vtpu_buffer_destroy(r->in);
	vtpu_buffer_destroy(r->out);
	vtpu_executable_destroy(r->exe);
}

static uint64_t busy_ns(struct vtpu_client *c)
{
	struct vtpu_stats st;

	vtpu_client_stats(c, &st);
	return st.device[0].busy_ns;
}

/* One run's wall time minus its time on the core, in us. */
static int overhead(struct vtpu_client *c, struct graph_run *r, double *us)
{
	uint64_t b0 = busy_ns(c);
	double t = bench_now();
	int ret;

	ret = vtpu_execute(c, r->exe, &r->in, &r->out);
	t = bench_now() - t;
	*us = t * 1e6 - (double)(busy_ns(c) - b0) / 1e3;
	return ret;
}

/* One round: big and tiny alternating, then tiny back to back. */
static int overhead_round(struct vtpu_client *c, struct graph_run *tiny,
			  struct graph_run *big, int round)
{
	double ob[OVH_PAIRS], ot[OVH_PAIRS], hot[OVH_HOT];
	int i, ret = 0;

	for (i = 0; !ret && i < OVH_PAIRS; i++) {
		ret = overhead(c, big, &ob[i]);
		if (!ret)
			ret = overhead(c, tiny, &ot[i]);
	}
	for (i = 0; !ret && i < OVH_HOT; i++)
		ret = overhead(c, tiny, &hot[i]);
	if (ret)
		return ret;
	big->ovh[round] = bench_median(ob, OVH_PAIRS);
	tiny->ovh[round] = bench_median(ot, OVH_PAIRS);
	tiny->hot[round] = bench_median(hot, OVH_HOT);
	return 0;
}

static int execute_tiny(struct vtpu_client *c, struct graph_run *r)
{
	double per[ROUNDS], t;
	int round, i, ret;

	for (round = -1; round < ROUNDS; round++) {
		t = bench_now();
		for (i = 0; i < RUNS; i++) {
			ret = vtpu_execute(c, r->exe, &r->in, &r->out);
			if (ret)
				return ret;
		}
		if (round >= 0)
			per[round] = (bench_now() - t) / RUNS;
	}
	printf("runtime/%s-execute-tiny: %.1f us\n", vtpu_client_backend(c),
	       bench_median(per, ROUNDS) * 1e6);
	return 0;
}

static int overheads(struct vtpu_client *c, struct graph_run *tiny,
		     struct graph_run *big)
{
	bool accel = !strcmp(vtpu_client_backend(c), "accel");
	const char *pfx = accel ? "submit/" : "runtime/host-";
	double t, b;
	int round, ret;

	for (round = 0; round < ROUNDS; round++) {
		ret = overhead_round(c, tiny, big, round);
		if (ret)
			return ret;
	}
	t = bench_median(tiny->ovh, ROUNDS);
	b = bench_median(big->ovh, ROUNDS);
	printf("%soverhead-tiny: %.1f us\n", pfx, t);
	printf("%soverhead-big: %.1f us\n", pfx, b);
	printf("%soverhead-big-vs-tiny: %.2f x\n", pfx, t > 0 ? b / t : 0);
	printf("%soverhead-tiny-hot: %.1f us\n", pfx,
	       bench_median(tiny->hot, ROUNDS));
	return 0;
}

int bench_runtime(int argc, char **argv)
{
	struct graph_run tiny = { 0 }, big = { 0 };
	struct vtpu_client *c = NULL;
	int ret;

	(void)argc;
	(void)argv;
	ret = vtpu_client_create(NULL, &c);
	if (!ret)
		ret = setup(c, tiny_graph(), &tiny);
	if (!ret)
		ret = execute_tiny(c, &tiny);
	if (!ret)
		ret = setup(c, big_graph(), &big);
	if (!ret)
		ret = overheads(c, &tiny, &big);
	if (ret)
		fprintf(stderr, "vtpu-bench runtime: %s\n", vtpu_client_error(c));
	teardown(&tiny);
	teardown(&big);
	vtpu_client_destroy(c);
	return ret ? 1 : 0;
}
