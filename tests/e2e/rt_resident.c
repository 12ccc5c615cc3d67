// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: executables resident on a vtpu device, through libvtpu's
 * public API on the accel backend: a graph with 64 MiB of constants
 * (past the program's constants section) compiles, loads once as a
 * program object with its weights in a buffer of their own (the
 * backing store when HBM is short), runs several times with results
 * equal to the reference and, bit for bit, to the host backend's, and
 * uploads its weights once for all those runs; scratch comes from the
 * pool; destroying the executable gives the weights' memory back. Runs
 * with program objects and with uAPI 1.1's program copied per SUBMIT
 * (VTPU_ACCEL_PROGRAM=copy).
 *
 * Skips when there is no vtpu device, so the host half of `make e2e`
 * runs it harmlessly.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtpu.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#define K	4096
#define N	4096	/* W: K * N * 4 bytes = 64 MiB */
#define RUNS	3	/* on the device; once on the host, to compare */

/* x [1,K], W [K,N], b [N]: small integers, every f32 sum exact. */
static float *x, *w, *b, *want;

static int reference(void)
{
	int64_t i, j;

	x = malloc(K * sizeof(float));
	w = malloc((size_t)K * N * sizeof(float));
	b = malloc(N * sizeof(float));
	want = malloc(N * sizeof(float));
	if (!x || !w || !b || !want)
		return -ENOMEM;
	for (i = 0; i < K; i++)
		x[i] = (float)(i % 5 - 2);
	for (i = 0; i < (int64_t)K * N; i++)
		w[i] = (float)((i * 7 + i / N) % 5 - 2);
	for (j = 0; j < N; j++) {
		float s = (float)(j % 3);

		b[j] = s;
		for (i = 0; i < K; i++)
			s += x[i] * w[i * N + j];
		want[j] = s;
	}
	return 0;
}

static struct vtpu_graph *graph(void)
{
	struct vtpu_shape sx = { VTPU_F32, 2, { 1, K } };
	struct vtpu_shape sw = { VTPU_F32, 2, { K, N } };
	struct vtpu_shape sb = { VTPU_F32, 1, { N } };
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t bd[2] = { 1, N };
	int dims[1] = { 1 };
	int v;

	v = vtpu_g_matmul(g, vtpu_g_parameter(g, 0, &sx, "x"),
			  vtpu_g_constant(g, &sw, w));
	v = vtpu_g_binary(g, VTPU_ADD, v,
			  vtpu_g_broadcast(g, vtpu_g_constant(g, &sb, b), 2,
					   bd, dims));
	vtpu_g_outputs(g, 1, &v);
	return g;
}

/* Device 0's memory in use and not idle in the execution pool. */
static uint64_t held_of(struct vtpu_client *c)
{
	struct vtpu_device_info info;
	struct vtpu_device *d;
	struct vtpu_stats st;

	vtpu_client_device(c, 0, &d);
	vtpu_device_info(d, &info);
	vtpu_client_stats(c, &st);
	return info.hbm_total - info.hbm_free + info.host_bytes -
	       st.device[0].pool_idle;
}

/* Compiles and runs the graph @runs times on @c into @y; 0 or -errno. */
static int run(struct __test_metadata *_metadata, struct vtpu_client *c,
	       int runs, float *y, struct vtpu_stats *st)
{
	struct vtpu_graph *g = graph();
	struct vtpu_executable *exe = NULL;
	struct vtpu_buffer *in = NULL, *out = NULL;
	uint64_t held0 = held_of(c);
	struct vtpu_cost cost;
	int i, ret;

	ret = vtpu_executable_compile(c, g, &exe);
	vtpu_graph_free(g);
	if (ret) {
		TH_LOG("compile: %s", vtpu_client_error(c));
		return ret;
	}
	EXPECT_EQ(0, vtpu_executable_cost(exe, &cost));
	EXPECT_EQ((uint64_t)K * N * 4 + N * 4, cost.weights_bytes);
	ret = vtpu_buffer_create(c, NULL, K * 4, VTPU_PLACE_AUTO, &in);
	if (!ret)
		ret = vtpu_buffer_create(c, NULL, N * 4, VTPU_PLACE_AUTO, &out);
	if (!ret)
		ret = vtpu_buffer_upload(in, 0, x, K * 4);
	for (i = 0; !ret && i < runs; i++) {
		memset(y, 0xff, N * 4);	/* NaN: every element is written */
		ret = vtpu_buffer_upload(out, 0, y, N * 4);
		if (!ret)
			ret = vtpu_execute(c, exe, &in, &out);
		if (!ret)
			ret = vtpu_buffer_download(out, 0, y, N * 4);
		if (!ret)
			EXPECT_EQ(0, memcmp(y, want, N * 4));
	}
	if (ret)
		TH_LOG("%s", vtpu_client_error(c));
	vtpu_client_stats(c, st);
	vtpu_buffer_destroy(in);
	vtpu_buffer_destroy(out);
	vtpu_executable_destroy(exe);
	/* the weights go with the executable, scratch idles in the pool */
	EXPECT_EQ(held0, held_of(c));
	return ret;
}

FIXTURE(resident) {
	struct vtpu_client *accel, *host;
};

FIXTURE_VARIANT(resident) {
	const char *program;	/* VTPU_ACCEL_PROGRAM */
};

FIXTURE_VARIANT_ADD(resident, object) { .program = "auto" };
FIXTURE_VARIANT_ADD(resident, copy) { .program = "copy" };

FIXTURE_SETUP(resident)
{
	struct vtpu_client_options o;
	int ret;

	if (!x)
		ASSERT_EQ(0, reference());
	setenv("VTPU_ACCEL_PROGRAM", variant->program, 1);
	vtpu_client_options_init(&o);
	o.cache_dir = "";
	o.backend = VTPU_BACKEND_ACCEL;
	ret = vtpu_client_create(&o, &self->accel);
	if (ret == -ENODEV)
		SKIP(return, "no vtpu device");
	ASSERT_EQ(0, ret);
	o.backend = VTPU_BACKEND_HOST;
	ASSERT_EQ(0, vtpu_client_create(&o, &self->host));
}

FIXTURE_TEARDOWN(resident)
{
	vtpu_client_destroy(self->accel);
	vtpu_client_destroy(self->host);
}

/* A 64 MiB matmul takes a second or more per run under TCG. */
TEST_F_TIMEOUT(resident, big_weights_run_as_on_the_host_and_upload_once, 600)
{
	float *ya = malloc(N * 4), *yh = malloc(N * 4);
	struct vtpu_stats st;

	ASSERT_NE(NULL, ya);
	ASSERT_NE(NULL, yh);
	ASSERT_EQ(0, run(_metadata, self->accel, RUNS, ya, &st));
	EXPECT_EQ(RUNS, st.executions);
	EXPECT_EQ(0, st.failures);
	EXPECT_EQ(1, st.program_loads);
	EXPECT_EQ(1, st.weight_uploads);
	EXPECT_EQ((uint64_t)K * N * 4 + N * 4, st.weight_bytes);
	/* the output binding is written directly: no scratch at all, or reused */
	EXPECT_GE(1, st.device[0].pool_creates);

	ASSERT_EQ(0, run(_metadata, self->host, 1, yh, &st));
	EXPECT_EQ(1, st.weight_uploads);
	EXPECT_EQ(0, memcmp(ya, yh, N * 4));
	free(ya);
	free(yh);
}

TEST_HARNESS_MAIN
