// SPDX-License-Identifier: MIT
/*
 * Description: libvtpu's public API on the host backend: compile through
 * the cache, run sync, async and batched, argument checking, admission
 * control, the retry policy with injected failures, memory released on
 * every failure path (to the device's pool, which keeps it for the next
 * run and gives idle HBM back to buffers that need it), executables
 * loaded once per device with their weights uploaded once (64 MiB of
 * them too), statistics, backend selection by VTPU_BACKEND, and several
 * threads sharing one client.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vtpu.h"

#include "kselftest_harness.h"

/* The MLP: y = relu(x W1 + b1) W2, x [B,I], W1 [I,H], b1 [H], W2 [H,O]. */
#define B	4
#define I	8
#define H	16
#define O	3

static float x[B * I], w1[I * H], b1[H], w2[H * O];

static void fill(float *p, int n, float scale)
{
	static unsigned int rng = 12345;
	int i;

	for (i = 0; i < n; i++) {
		rng = rng * 1103515245u + 12345u;
		p[i] = ((float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f) * scale;
	}
}

static void mlp_reference(float *y)
{
	float h[B * H];
	int b, i, j;

	for (b = 0; b < B; b++)
		for (j = 0; j < H; j++) {
			double s = b1[j];

			for (i = 0; i < I; i++)
				s += (double)x[b * I + i] * w1[i * H + j];
			h[b * H + j] = s > 0 ? (float)s : 0;
		}
	for (b = 0; b < B; b++)
		for (j = 0; j < O; j++) {
			double s = 0;

			for (i = 0; i < H; i++)
				s += (double)h[b * H + i] * w2[i * O + j];
			y[b * O + j] = (float)s;
		}
}

static struct vtpu_graph *mlp_graph(void)
{
	struct vtpu_shape sx = { VTPU_F32, 2, { B, I } };
	struct vtpu_shape sw1 = { VTPU_F32, 2, { I, H } };
	struct vtpu_shape sb1 = { VTPU_F32, 1, { H } };
	struct vtpu_shape sw2 = { VTPU_F32, 2, { H, O } };
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t bd[2] = { B, H };
	int dims[1] = { 1 };
	int px, pw1, pb1, pw2, v;

	px = vtpu_g_parameter(g, 0, &sx, "x");
	pw1 = vtpu_g_parameter(g, 1, &sw1, "w1");
	pb1 = vtpu_g_parameter(g, 2, &sb1, "b1");
	pw2 = vtpu_g_parameter(g, 3, &sw2, "w2");
	v = vtpu_g_matmul(g, px, pw1);
	v = vtpu_g_binary(g, VTPU_ADD, v, vtpu_g_broadcast(g, pb1, 2, bd, dims));
	v = vtpu_g_unary(g, VTPU_RELU, v);
	v = vtpu_g_matmul(g, v, pw2);
	vtpu_g_outputs(g, 1, &v);
	if (vtpu_graph_error(g)) {
		vtpu_graph_free(g);
		return NULL;
	}
	return g;
}

/* A program whose scratch (~2x its 4 MiB input) outgrows a 1 MiB HBM. */
static struct vtpu_graph *big_scratch_graph(void)
{
	struct vtpu_shape s = { VTPU_F32, 2, { 1024, 1024 } };
	struct vtpu_graph *g = vtpu_graph_new();
	int perm[2] = { 1, 0 }, axes[2] = { 0, 1 };
	int p, v;

	p = vtpu_g_parameter(g, 0, &s, "x");
	v = vtpu_g_transpose(g, p, perm);
	v = vtpu_g_unary(g, VTPU_EXP, v);
	v = vtpu_g_transpose(g, v, perm);
	v = vtpu_g_binary(g, VTPU_ADD, v, p);
	v = vtpu_g_reduce(g, VTPU_REDUCE_SUM_OP, v, 2, axes);
	vtpu_g_outputs(g, 1, &v);
	return g;
}

static struct vtpu_client *host_client(int inject, int err, int retries,
				       uint64_t hbm)
{
	struct vtpu_client_options o;
	struct vtpu_client *c;

	vtpu_client_options_init(&o);
	o.backend = VTPU_BACKEND_HOST;
	o.cache_dir = "";
	o.inject_failures = inject;
	o.inject_errno = err;
	o.max_retries = retries;
	if (hbm)
		o.host_hbm_size = hbm;
	if (vtpu_client_create(&o, &c))
		return NULL;
	return c;
}

/* The MLP compiled, its buffers on device 0 with the inputs uploaded. */
struct mlp {
	struct vtpu_executable *exe;
	struct vtpu_buffer *in[4], *out[1];
};

static int mlp_setup(struct vtpu_client *c, struct mlp *m)
{
	const float *data[4] = { x, w1, b1, w2 };
	const size_t size[4] = { sizeof(x), sizeof(w1), sizeof(b1), sizeof(w2) };
	struct vtpu_graph *g = mlp_graph();
	struct vtpu_device *d;
	int i, ret;

	if (!g)
		return -EINVAL;
	ret = vtpu_executable_compile(c, g, &m->exe);
	vtpu_graph_free(g);
	if (!ret)
		ret = vtpu_client_device(c, 0, &d);
	for (i = 0; !ret && i < 4; i++) {
		ret = vtpu_buffer_create(c, d, size[i], VTPU_PLACE_AUTO,
					 &m->in[i]);
		if (!ret)
			ret = vtpu_buffer_upload(m->in[i], 0, data[i], size[i]);
	}
	if (!ret)
		ret = vtpu_buffer_create(c, d, B * O * sizeof(float),
					 VTPU_PLACE_AUTO, &m->out[0]);
	return ret;
}

static void mlp_teardown(struct mlp *m)
{
	int i;

	for (i = 0; i < 4; i++)
		vtpu_buffer_destroy(m->in[i]);
	vtpu_buffer_destroy(m->out[0]);
	vtpu_executable_destroy(m->exe);
	memset(m, 0, sizeof(*m));
}

static double max_err(const float *got, const float *want, int n)
{
	double w = 0;
	int i;

	for (i = 0; i < n; i++)
		w = fmax(w, fabs(got[i] - want[i]) / (1e-5 + 1e-4 * fabs(want[i])));
	return w;
}

/* hbm_free + host_bytes of device 0: what a leak would change. */
static void mem_of(struct vtpu_client *c, uint64_t *hbm_free, uint64_t *host)
{
	struct vtpu_device_info info;
	struct vtpu_device *d;

	vtpu_client_device(c, 0, &d);
	vtpu_device_info(d, &info);
	*hbm_free = info.hbm_free;
	*host = info.host_bytes;
}

/*
 * Device 0's memory in use and not idle in the execution pool: what a
 * run that failed to release its reservation would change.
 */
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

FIXTURE(rt) {
	struct vtpu_client *c;
	struct mlp m;
	float want[B * O];
};

FIXTURE_SETUP(rt)
{
	fill(x, B * I, 1);
	fill(w1, I * H, 0.5f);
	fill(b1, H, 0.1f);
	fill(w2, H * O, 0.5f);
	mlp_reference(self->want);
	self->c = host_client(0, 0, 3, 0);
	ASSERT_NE(NULL, self->c);
	ASSERT_EQ(0, mlp_setup(self->c, &self->m));
}

FIXTURE_TEARDOWN(rt)
{
	mlp_teardown(&self->m);
	vtpu_client_destroy(self->c);
}

TEST_F(rt, mlp_matches_naive_loop)
{
	float y[B * O];

	ASSERT_STREQ("host", vtpu_client_backend(self->c));
	ASSERT_EQ(4, vtpu_executable_num_inputs(self->m.exe));
	ASSERT_EQ(1, vtpu_executable_num_outputs(self->m.exe));
	ASSERT_EQ(0, vtpu_execute(self->c, self->m.exe, self->m.in,
				  self->m.out));
	ASSERT_EQ(0, vtpu_buffer_download(self->m.out[0], 0, y, sizeof(y)));
	ASSERT_LE(max_err(y, self->want, B * O), 1.0);
}

TEST_F(rt, shapes_come_from_the_binding_table)
{
	struct vtpu_shape s;
	struct vtpu_cost cost;

	ASSERT_EQ(0, vtpu_executable_input_shape(self->m.exe, 1, &s));
	ASSERT_EQ(2, s.rank);
	ASSERT_EQ(I, s.dims[0]);
	ASSERT_EQ(H, s.dims[1]);
	ASSERT_EQ(0, vtpu_executable_output_shape(self->m.exe, 0, &s));
	ASSERT_EQ(B, s.dims[0]);
	ASSERT_EQ(O, s.dims[1]);
	ASSERT_EQ(-EINVAL, vtpu_executable_input_shape(self->m.exe, 4, &s));
	ASSERT_EQ(0, vtpu_executable_cost(self->m.exe, &cost));
	ASSERT_GT(cost.flops, 0);
}

TEST_F(rt, sync_async_batch_agree)
{
	struct vtpu_buffer *outs[3];
	struct vtpu_run runs[2];
	struct vtpu_event *ev;
	float y[3][B * O];
	int i;

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, vtpu_buffer_create(self->c, NULL, sizeof(y[0]),
						VTPU_PLACE_AUTO, &outs[i]));
	ASSERT_EQ(0, vtpu_execute(self->c, self->m.exe, self->m.in, &outs[0]));
	ASSERT_EQ(0, vtpu_execute_async(self->c, self->m.exe, self->m.in,
					&outs[1], &ev));
	ASSERT_EQ(0, vtpu_event_wait(ev, -1));
	ASSERT_EQ(1, vtpu_event_done(ev));
	vtpu_event_destroy(ev);
	runs[0] = (struct vtpu_run){ self->m.exe, self->m.in, &outs[2], 1 };
	runs[1] = (struct vtpu_run){ self->m.exe, self->m.in, self->m.out, 1 };
	ASSERT_EQ(0, vtpu_execute_batch(self->c, runs, 2));
	ASSERT_EQ(0, runs[0].status);
	ASSERT_EQ(0, runs[1].status);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, vtpu_buffer_download(outs[i], 0, y[i],
						  sizeof(y[i])));
		vtpu_buffer_destroy(outs[i]);
	}
	ASSERT_EQ(0, memcmp(y[0], y[1], sizeof(y[0])));
	ASSERT_EQ(0, memcmp(y[0], y[2], sizeof(y[0])));
	ASSERT_LE(max_err(y[0], self->want, B * O), 1.0);
}

TEST_F(rt, unknown_executable_is_einval)
{
	struct vtpu_client *other = host_client(0, 0, 3, 0);

	ASSERT_NE(NULL, other);
	ASSERT_EQ(-EINVAL, vtpu_execute(other, self->m.exe, self->m.in,
					self->m.out));
	ASSERT_NE(NULL, strstr(vtpu_client_error(other),
			       "not compiled by this client"));
	ASSERT_EQ(-EINVAL, vtpu_execute(self->c, NULL, self->m.in,
					self->m.out));
	vtpu_client_destroy(other);
}

TEST_F(rt, wrong_buffer_size_is_einval)
{
	struct vtpu_buffer *small, *in[4];
	uint64_t hf0, hb0, hf1, hb1;

	ASSERT_EQ(0, vtpu_buffer_create(self->c, NULL, 4, VTPU_PLACE_AUTO,
					&small));
	memcpy(in, self->m.in, sizeof(in));
	in[2] = small;
	mem_of(self->c, &hf0, &hb0);
	ASSERT_EQ(-EINVAL, vtpu_execute(self->c, self->m.exe, in,
					self->m.out));
	ASSERT_NE(NULL, strstr(vtpu_client_error(self->c), "input 2"));
	ASSERT_EQ(-EINVAL, vtpu_execute(self->c, self->m.exe, self->m.in,
					&small));
	ASSERT_NE(NULL, strstr(vtpu_client_error(self->c), "output 0"));
	mem_of(self->c, &hf1, &hb1);
	ASSERT_EQ(hf0, hf1);
	ASSERT_EQ(hb0, hb1);
	vtpu_buffer_destroy(small);
}

TEST_F(rt, buffer_bounds_are_checked)
{
	char buf[8] = { 0 };

	ASSERT_EQ(-EINVAL, vtpu_buffer_upload(self->m.out[0], 1,
					      buf, B * O * sizeof(float)));
	ASSERT_EQ(-EINVAL, vtpu_buffer_download(self->m.out[0], UINT64_MAX,
						buf, 2));
	ASSERT_EQ(0, vtpu_buffer_download(self->m.out[0], 4, buf, 8));
}

TEST_F(rt, retryable_injected_failure_is_retried)
{
	struct vtpu_client *c = host_client(2, EAGAIN, 3, 0);
	struct vtpu_stats st;
	struct mlp m = { 0 };
	float y[B * O];
	uint64_t held0;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, mlp_setup(c, &m));
	held0 = held_of(c);
	ASSERT_EQ(0, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_EQ(2, st.retries);
	ASSERT_EQ(1, st.executions);
	ASSERT_EQ(0, st.failures);
	ASSERT_EQ(0, vtpu_buffer_download(m.out[0], 0, y, sizeof(y)));
	ASSERT_LE(max_err(y, self->want, B * O), 1.0);
	/* scratch is back in the pool; the program is loaded in host memory */
	ASSERT_EQ(held0, held_of(c));
	mlp_teardown(&m);
	vtpu_client_destroy(c);
}

TEST_F(rt, retries_run_out)
{
	struct vtpu_client *c = host_client(5, EBUSY, 3, 0);
	struct vtpu_stats st;
	struct mlp m = { 0 };

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, mlp_setup(c, &m));
	ASSERT_EQ(-EBUSY, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_EQ(3, st.retries);
	ASSERT_EQ(1, st.failures);
	/* one injected failure left: the next run retries once, succeeds */
	ASSERT_EQ(0, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_EQ(4, st.retries);
	ASSERT_EQ(2, st.executions);
	ASSERT_EQ(1, st.failures);
	mlp_teardown(&m);
	vtpu_client_destroy(c);
}

TEST_F(rt, non_retryable_injected_failure_surfaces_at_once)
{
	struct vtpu_client *c = host_client(1, EINVAL, 3, 0);
	struct vtpu_stats st;
	struct mlp m = { 0 };
	uint64_t held0;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, mlp_setup(c, &m));
	held0 = held_of(c);
	ASSERT_EQ(-EINVAL, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(held0, held_of(c));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_EQ(0, st.retries);
	ASSERT_EQ(1, st.executions);
	ASSERT_EQ(1, st.failures);
	ASSERT_NE(NULL, strstr(vtpu_client_error(c), "execution failed"));
	mlp_teardown(&m);
	vtpu_client_destroy(c);
}

/*
 * An HLO while loop runs on the device: with x = 3 it doubles to 12; with
 * x = 0 it never ends, and the job timeout stops it once, without the
 * retries a timeout otherwise gets (each would wait the timeout again).
 */
TEST(endless_device_loop_times_out_once)
{
	static const char text[] =
		"HloModule until\n"
		"body { v = f32[] parameter(0)\n  ROOT d = f32[] add(v, v) }\n"
		"cond { v = f32[] parameter(0)\n"
		"  ROOT lt = pred[] compare(v, f32[] constant(10)), direction=LT }\n"
		"ENTRY e { x = f32[] parameter(0)\n"
		"  ROOT w = f32[] while(x), condition=cond, body=body }\n";
	struct vtpu_buffer *in = NULL, *out = NULL;
	struct vtpu_executable *exe = NULL;
	struct vtpu_client *c;
	struct vtpu_stats st;
	float x = 3, y = 0;

	ASSERT_EQ(0, setenv("VTPU_HOST_JOB_TIMEOUT_MS", "100", 1));
	c = host_client(0, 0, 3, 0);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, vtpu_executable_compile_hlo(c, text, strlen(text), &exe))
		TH_LOG("%s", vtpu_client_error(c));
	ASSERT_EQ(0, vtpu_buffer_create(c, NULL, 4, VTPU_PLACE_AUTO, &in));
	ASSERT_EQ(0, vtpu_buffer_create(c, NULL, 4, VTPU_PLACE_AUTO, &out));
	ASSERT_EQ(0, vtpu_buffer_upload(in, 0, &x, 4));
	ASSERT_EQ(0, vtpu_execute(c, exe, &in, &out));
	ASSERT_EQ(0, vtpu_buffer_download(out, 0, &y, 4));
	EXPECT_EQ(12.0f, y);
	x = 0;
	ASSERT_EQ(0, vtpu_buffer_upload(in, 0, &x, 4));
	ASSERT_EQ(-ETIMEDOUT, vtpu_execute(c, exe, &in, &out));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	EXPECT_EQ(0, st.retries);
	EXPECT_EQ(1, st.failures);
	vtpu_buffer_destroy(in);
	vtpu_buffer_destroy(out);
	vtpu_executable_destroy(exe);
	vtpu_client_destroy(c);
	unsetenv("VTPU_HOST_JOB_TIMEOUT_MS");
}

TEST_F(rt, memory_returns_after_every_failure)
{
	/* 3 timeouts exhaust a run's budget of 2; the 4th is retried away */
	struct vtpu_client *c = host_client(4, ETIMEDOUT, 2, 0);
	uint64_t hf0, hb0, hf1, hb1, held0;
	struct vtpu_buffer *small;
	struct vtpu_stats st;
	struct mlp m = { 0 };

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, mlp_setup(c, &m));
	ASSERT_EQ(0, vtpu_buffer_create(c, NULL, 4, VTPU_PLACE_AUTO, &small));
	/* the injected failures come with scratch reserved: all comes back */
	held0 = held_of(c);
	ASSERT_EQ(-ETIMEDOUT, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(held0, held_of(c));
	ASSERT_EQ(-EINVAL, vtpu_execute(c, m.exe, m.in, &small));
	ASSERT_EQ(held0, held_of(c));
	ASSERT_EQ(0, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(held0, held_of(c));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_EQ(3, st.retries);
	/* 4 failed attempts and a good one, one scratch buffer for all */
	ASSERT_EQ(1, st.device[0].pool_creates);
	ASSERT_EQ(4, st.device[0].pool_reuses);
	/* and the pool holds it: run again, nothing else stays */
	mem_of(c, &hf0, &hb0);
	ASSERT_EQ(0, vtpu_execute(c, m.exe, m.in, m.out));
	mem_of(c, &hf1, &hb1);
	ASSERT_EQ(hf0, hf1);
	ASSERT_EQ(hb0, hb1);
	vtpu_buffer_destroy(small);
	mlp_teardown(&m);
	vtpu_client_destroy(c);
}

/* Compiles the big-scratch program and makes its buffers. */
static int big_setup(struct vtpu_client *c, struct vtpu_executable **exe,
		     struct vtpu_buffer **in, struct vtpu_buffer **out)
{
	struct vtpu_graph *g = big_scratch_graph();
	int ret = vtpu_executable_compile(c, g, exe);

	vtpu_graph_free(g);
	if (!ret)
		ret = vtpu_buffer_create(c, NULL, 4 << 20, VTPU_PLACE_AUTO, in);
	if (!ret)
		ret = vtpu_buffer_create(c, NULL, 4, VTPU_PLACE_AUTO, out);
	return ret;
}

TEST(oversized_scratch_is_e2big_before_submission)
{
	struct vtpu_client *c = host_client(0, 0, 3, 1 << 20);
	struct vtpu_executable *exe = NULL;
	struct vtpu_buffer *in = NULL, *out = NULL;
	struct vtpu_device_info i0, i1;
	struct vtpu_device *d;
	struct vtpu_stats st;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, big_setup(c, &exe, &in, &out));
	ASSERT_EQ(VTPU_PLACE_HOST, vtpu_buffer_placement(in));
	ASSERT_EQ(0, vtpu_client_device(c, 0, &d));
	ASSERT_EQ(0, vtpu_device_info(d, &i0));
	ASSERT_EQ(-E2BIG, vtpu_execute(c, exe, &in, &out));
	ASSERT_NE(NULL, strstr(vtpu_client_error(c), "bytes of scratch"));
	ASSERT_EQ(0, vtpu_device_info(d, &i1));
	ASSERT_EQ(i0.hbm_free, i1.hbm_free);
	ASSERT_EQ(i0.host_bytes, i1.host_bytes);
	ASSERT_EQ(0, i1.jobs_completed);
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_EQ(0, st.executions);
	vtpu_buffer_destroy(in);
	vtpu_buffer_destroy(out);
	vtpu_executable_destroy(exe);
	vtpu_client_destroy(c);
}

TEST(scratch_spills_to_host_and_is_released)
{
	struct vtpu_client *c = host_client(0, 0, 3, 2 << 20);
	struct vtpu_executable *exe = NULL;
	struct vtpu_buffer *in = NULL, *out = NULL;
	uint64_t hf0, hb0, hf1, hb1;
	float *data, sum;
	int i;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, big_setup(c, &exe, &in, &out));
	data = calloc(1 << 20, sizeof(float));
	ASSERT_NE(NULL, data);
	for (i = 0; i < 1 << 20; i++)
		data[i] = i % 2 ? 0.5f : -1.0f;
	ASSERT_EQ(0, vtpu_buffer_upload(in, 0, data, 4 << 20));
	free(data);
	ASSERT_EQ(0, vtpu_execute(c, exe, &in, &out));
	mem_of(c, &hf0, &hb0);
	ASSERT_EQ(0, vtpu_execute(c, exe, &in, &out));
	mem_of(c, &hf1, &hb1);
	ASSERT_EQ(hf0, hf1);
	ASSERT_EQ(hb0, hb1);
	ASSERT_EQ(0, vtpu_buffer_download(out, 0, &sum, 4));
	/* half exp(0.5) + 0.5, half exp(-1) - 1 */
	ASSERT_LT(fabs(sum - 524288.0 * (exp(0.5) + 0.5 + exp(-1) - 1)),
		  1e-2 * 524288.0);
	vtpu_buffer_destroy(in);
	vtpu_buffer_destroy(out);
	vtpu_executable_destroy(exe);
	vtpu_client_destroy(c);
}

TEST(statistics_add_up)
{
	/* no retry budget: the two injected -EAGAIN fail their runs */
	struct vtpu_client *c = host_client(2, EAGAIN, 0, 0);
	struct vtpu_stats st;
	struct mlp m = { 0 };
	int i;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, mlp_setup(c, &m));
	ASSERT_EQ(-EAGAIN, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(-EAGAIN, vtpu_execute(c, m.exe, m.in, m.out));
	for (i = 0; i < 6; i++)
		ASSERT_EQ(0, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_EQ(8, st.executions);
	ASSERT_EQ(2, st.failures);
	ASSERT_EQ(0, st.retries);
	ASSERT_LT(fabs(st.error_rate - 0.25), 1e-9);
	ASSERT_GT(st.avg_execution_ns, 0);
	ASSERT_EQ(1, st.ndevices);
	/* injected failures never reached the device */
	ASSERT_EQ(6, st.device[0].executions);
	ASSERT_GT(st.device[0].utilisation, 0);
	ASSERT_LE(st.device[0].utilisation, 1);
	ASSERT_GT(st.device[0].hbm_used, 0);
	ASSERT_GT(st.device[0].memory_utilisation, 0);
	mlp_teardown(&m);
	vtpu_client_destroy(c);
}

TEST_F(rt, batch_reports_each_run)
{
	/* runs of a batch may overlap: each writes its own output */
	struct vtpu_buffer *out2;
	struct vtpu_run runs[3] = {
		{ self->m.exe, self->m.in, self->m.out, 1 },
		{ NULL, self->m.in, self->m.out, 1 },
		{ self->m.exe, self->m.in, &out2, 1 },
	};
	struct vtpu_stats st;

	ASSERT_EQ(0, vtpu_buffer_create(self->c, NULL, B * O * 4,
					VTPU_PLACE_AUTO, &out2));
	ASSERT_EQ(-EINVAL, vtpu_execute_batch(self->c, runs, 3));
	vtpu_buffer_destroy(out2);
	ASSERT_EQ(0, runs[0].status);
	ASSERT_EQ(-EINVAL, runs[1].status);
	ASSERT_EQ(0, runs[2].status);
	ASSERT_EQ(0, vtpu_client_stats(self->c, &st));
	ASSERT_EQ(2, st.executions);
	ASSERT_EQ(0, vtpu_execute_batch(self->c, runs, 0));
}

TEST_F(rt, profiled_run_releases_its_profile_buffer)
{
	char path[] = "/tmp/rt_api_profile_XXXXXX";
	struct vtpu_profile *p;
	uint64_t held0;
	FILE *f;
	long len;
	int fd;

	/* the program buffer is cached by a first run */
	ASSERT_EQ(0, vtpu_execute(self->c, self->m.exe, self->m.in,
				  self->m.out));
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	close(fd);
	held0 = held_of(self->c);
	ASSERT_EQ(0, vtpu_profile_start(self->c, &p));
	ASSERT_EQ(0, vtpu_execute(self->c, self->m.exe, self->m.in,
				  self->m.out));
	ASSERT_EQ(0, vtpu_profile_stop(p, path));
	vtpu_profile_destroy(p);
	ASSERT_EQ(held0, held_of(self->c));
	if (getenv("RT_API_KEEP_PROFILE"))
		fprintf(stderr, "# profile kept in %s\n", path);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fclose(f);
	if (!getenv("RT_API_KEEP_PROFILE"))
		unlink(path);
	ASSERT_GT(len, 0);
}

TEST(buffers_choose_the_device)
{
	struct vtpu_client_options o;
	struct vtpu_buffer *in[4], *out[1], *stray;
	struct vtpu_device *d0, *d1;
	struct vtpu_stats st;
	struct vtpu_client *c;
	struct mlp m = { 0 };
	int i;

	vtpu_client_options_init(&o);
	o.backend = VTPU_BACKEND_HOST;
	o.cache_dir = "";
	o.host_devices = 2;
	ASSERT_EQ(0, vtpu_client_create(&o, &c));
	ASSERT_EQ(2, vtpu_client_device_count(c));
	ASSERT_EQ(0, mlp_setup(c, &m));	/* on device 0 */
	ASSERT_EQ(0, vtpu_client_device(c, 0, &d0));
	ASSERT_EQ(0, vtpu_client_device(c, 1, &d1));
	for (i = 0; i < 4; i++) {
		uint64_t size = vtpu_buffer_size(m.in[i]);
		char *tmp = malloc(size);

		ASSERT_NE(NULL, tmp);
		ASSERT_EQ(0, vtpu_buffer_create(c, d1, size, VTPU_PLACE_AUTO,
						&in[i]));
		vtpu_buffer_download(m.in[i], 0, tmp, size);
		vtpu_buffer_upload(in[i], 0, tmp, size);
		free(tmp);
	}
	ASSERT_EQ(0, vtpu_buffer_create(c, d1, B * O * 4, VTPU_PLACE_AUTO,
					&out[0]));
	ASSERT_EQ(0, vtpu_execute(c, m.exe, in, out));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_EQ(0, st.device[0].executions);
	ASSERT_EQ(1, st.device[1].executions);
	/* inputs on one device, output on the other */
	stray = out[0];
	ASSERT_EQ(-EINVAL, vtpu_execute(c, m.exe, m.in, &stray));
	ASSERT_NE(NULL, strstr(vtpu_client_error(c), "output 0 is on"));
	ASSERT_EQ(-EINVAL, vtpu_client_device(c, 2, &d0));
	for (i = 0; i < 4; i++)
		vtpu_buffer_destroy(in[i]);
	vtpu_buffer_destroy(out[0]);
	mlp_teardown(&m);
	vtpu_client_destroy(c);
}

TEST(bad_graph_fails_to_compile_with_message)
{
	struct vtpu_client *c = host_client(0, 0, 3, 0);
	struct vtpu_shape a = { VTPU_F32, 2, { 2, 3 } };
	struct vtpu_shape b = { VTPU_F32, 2, { 4, 5 } };
	struct vtpu_graph *g = vtpu_graph_new();
	struct vtpu_executable *e = NULL;
	int v;

	ASSERT_NE(NULL, c);
	v = vtpu_g_matmul(g, vtpu_g_parameter(g, 0, &a, NULL),
			  vtpu_g_parameter(g, 1, &b, NULL));
	vtpu_g_outputs(g, 1, &v);
	ASSERT_GT(0, vtpu_executable_compile(c, g, &e));
	ASSERT_EQ(NULL, e);
	ASSERT_EQ(0, strncmp(vtpu_client_error(c), "compile: ", 9));
	ASSERT_GT(strlen(vtpu_client_error(c)), 9);
	vtpu_graph_free(g);
	vtpu_client_destroy(c);
}

TEST(auto_without_device_falls_back_to_host)
{
	struct vtpu_client *c;

	unsetenv("VTPU_BACKEND");
	ASSERT_EQ(0, vtpu_client_create(NULL, &c));
	if (strcmp(vtpu_client_backend(c), "host")) {
		vtpu_client_destroy(c);
		SKIP(return, "a vtpu device is present");
	}
	ASSERT_STREQ("", vtpu_client_error(c));
	ASSERT_LE(1, vtpu_client_device_count(c));
	vtpu_client_destroy(c);
}

/*
 * y = x W + b with W [K,N] and b [N] constants of small integers, so the
 * device's f32 sums are exact and equal the reference bit for bit.
 */
struct dense {
	int m, k, n;
	float *x, *w, *b, *want;
};

static int dense_init(struct dense *d, int m, int k, int n)
{
	int64_t i, j, t;

	d->m = m;
	d->k = k;
	d->n = n;
	d->x = malloc((size_t)m * k * sizeof(float));
	d->w = malloc((size_t)k * n * sizeof(float));
	d->b = malloc((size_t)n * sizeof(float));
	d->want = malloc((size_t)m * n * sizeof(float));
	if (!d->x || !d->w || !d->b || !d->want)
		return -ENOMEM;
	for (i = 0; i < (int64_t)m * k; i++)
		d->x[i] = (float)(i % 5 - 2);
	for (i = 0; i < (int64_t)k * n; i++)
		d->w[i] = (float)((i * 7 + i / n) % 5 - 2);
	for (j = 0; j < n; j++)
		d->b[j] = (float)(j % 3);
	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++) {
			float s = d->b[j];

			for (t = 0; t < k; t++)
				s += d->x[i * k + t] * d->w[t * n + j];
			d->want[i * n + j] = s;
		}
	return 0;
}

static void dense_fini(struct dense *d)
{
	free(d->x);
	free(d->w);
	free(d->b);
	free(d->want);
}

static struct vtpu_graph *dense_graph(const struct dense *d)
{
	struct vtpu_shape sx = { VTPU_F32, 2, { d->m, d->k } };
	struct vtpu_shape sw = { VTPU_F32, 2, { d->k, d->n } };
	struct vtpu_shape sb = { VTPU_F32, 1, { d->n } };
	struct vtpu_graph *g = vtpu_graph_new();
	int64_t bd[2] = { d->m, d->n };
	int dims[1] = { 1 };
	int v;

	v = vtpu_g_matmul(g, vtpu_g_parameter(g, 0, &sx, "x"),
			  vtpu_g_constant(g, &sw, d->w));
	v = vtpu_g_binary(g, VTPU_ADD, v,
			  vtpu_g_broadcast(g, vtpu_g_constant(g, &sb, d->b), 2,
					   bd, dims));
	vtpu_g_outputs(g, 1, &v);
	return g;
}

/* Compiles @d's graph on @c and runs it @runs times on device @dev. */
static int dense_run(struct vtpu_client *c, const struct dense *d, int dev,
		     int runs, struct vtpu_executable **exe, float *y)
{
	struct vtpu_graph *g = dense_graph(d);
	struct vtpu_buffer *in = NULL, *out = NULL;
	struct vtpu_device *dv;
	int i, ret;

	ret = vtpu_executable_compile(c, g, exe);
	vtpu_graph_free(g);
	if (!ret)
		ret = vtpu_client_device(c, dev, &dv);
	if (!ret)
		ret = vtpu_buffer_create(c, dv, (uint64_t)d->m * d->k * 4,
					 VTPU_PLACE_AUTO, &in);
	if (!ret)
		ret = vtpu_buffer_create(c, dv, (uint64_t)d->m * d->n * 4,
					 VTPU_PLACE_AUTO, &out);
	if (!ret)
		ret = vtpu_buffer_upload(in, 0, d->x, (uint64_t)d->m * d->k * 4);
	for (i = 0; !ret && i < runs; i++) {
		memset(y, 0xff, (size_t)d->m * d->n * 4);
		ret = vtpu_buffer_upload(out, 0, y, (uint64_t)d->m * d->n * 4);
		if (!ret)
			ret = vtpu_execute(c, *exe, &in, &out);
		if (!ret)
			ret = vtpu_buffer_download(out, 0, y,
						   (uint64_t)d->m * d->n * 4);
		if (!ret && memcmp(y, d->want, (size_t)d->m * d->n * 4))
			ret = -EDOM;
	}
	vtpu_buffer_destroy(in);
	vtpu_buffer_destroy(out);
	return ret;
}

TEST(weights_are_uploaded_once_per_device)
{
	struct vtpu_client_options o;
	struct vtpu_executable *exe = NULL;
	struct vtpu_client *c;
	struct vtpu_cost cost;
	struct vtpu_stats st;
	struct dense d;
	float *y;

	ASSERT_EQ(0, dense_init(&d, 4, 256, 128));
	y = malloc(4 * 128 * sizeof(float));
	ASSERT_NE(NULL, y);
	vtpu_client_options_init(&o);
	o.backend = VTPU_BACKEND_HOST;
	o.cache_dir = "";
	o.host_devices = 2;
	ASSERT_EQ(0, vtpu_client_create(&o, &c));
	ASSERT_EQ(0, dense_run(c, &d, 0, 5, &exe, y));
	ASSERT_EQ(0, vtpu_executable_cost(exe, &cost));
	/* W (128 KiB) is data in the weights binding; b (512 B) is code */
	EXPECT_EQ(256 * 128 * 4, cost.weights_bytes);
	EXPECT_LT(cost.const_bytes, 4096);
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	EXPECT_EQ(5, st.executions);
	EXPECT_EQ(1, st.program_loads);
	EXPECT_EQ(1, st.weight_uploads);
	EXPECT_EQ(cost.weights_bytes, st.weight_bytes);
	vtpu_executable_destroy(exe);
	/* the same graph again (a cache hit) on the other device: once more */
	ASSERT_EQ(0, dense_run(c, &d, 1, 3, &exe, y));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	EXPECT_EQ(8, st.executions);
	EXPECT_EQ(2, st.program_loads);
	EXPECT_EQ(2, st.weight_uploads);
	EXPECT_EQ(1, st.cache_hits);
	vtpu_executable_destroy(exe);
	vtpu_client_destroy(c);
	free(y);
	dense_fini(&d);
}

/* 64 MiB of weights: past the program's constants limit, no matter. */
TEST(big_weights_compile_and_run)
{
	struct vtpu_client *c = host_client(0, 0, 3, 0);
	struct vtpu_executable *exe = NULL;
	uint64_t held0;
	struct vtpu_cost cost;
	struct vtpu_stats st;
	struct dense d;
	float *y;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, dense_init(&d, 2, 4096, 4096));
	y = malloc(2 * 4096 * sizeof(float));
	ASSERT_NE(NULL, y);
	held0 = held_of(c);
	ASSERT_EQ(0, dense_run(c, &d, 0, 3, &exe, y));
	ASSERT_EQ(0, vtpu_executable_cost(exe, &cost));
	/* W and b (16 KiB): both too big for the program */
	EXPECT_EQ((64ull << 20) + 4096 * 4, cost.weights_bytes);
	EXPECT_LT(cost.const_bytes + cost.code_bytes, 1 << 20);
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	EXPECT_EQ(1, st.weight_uploads);
	EXPECT_EQ(cost.weights_bytes, st.weight_bytes);
	/* resident while the executable lives, in HBM: it fits */
	EXPECT_LE(held0 + (64ull << 20), held_of(c));
	EXPECT_LE(64ull << 20, st.device[0].hbm_used);
	vtpu_executable_destroy(exe);
	EXPECT_EQ(held0, held_of(c));
	vtpu_client_destroy(c);
	free(y);
	dense_fini(&d);
}

TEST(pool_reuses_scratch_across_runs)
{
	struct vtpu_client *c = host_client(0, 0, 3, 0);
	struct vtpu_stats st;
	struct mlp m = { 0 };
	int i;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, mlp_setup(c, &m));
	for (i = 0; i < 6; i++)
		ASSERT_EQ(0, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	EXPECT_EQ(1, st.device[0].pool_creates);
	EXPECT_EQ(5, st.device[0].pool_reuses);
	EXPECT_LT(0, st.device[0].pool_idle);
	mlp_teardown(&m);
	vtpu_client_destroy(c);
}

/* Idle pooled HBM goes to a buffer that needs it, not to the host. */
TEST(pool_gives_idle_hbm_back)
{
	/* the 4 MiB input and 8 MiB of scratch both fit in HBM */
	struct vtpu_client *c = host_client(0, 0, 3, 16 << 20);
	struct vtpu_executable *exe = NULL;
	struct vtpu_buffer *in = NULL, *out = NULL, *big = NULL, *big2 = NULL;
	struct vtpu_device_info info;
	struct vtpu_device *d;
	struct vtpu_stats st;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, big_setup(c, &exe, &in, &out));
	ASSERT_EQ(0, vtpu_execute(c, exe, &in, &out));
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_LT(0, st.device[0].pool_idle);
	ASSERT_EQ(0, vtpu_client_device(c, 0, &d));
	ASSERT_EQ(0, vtpu_device_info(d, &info));
	/* all the HBM no buffer holds: some of it is the pool's */
	ASSERT_EQ(0, vtpu_buffer_create(c, d, info.hbm_free + 4096,
					VTPU_PLACE_HBM, &big));
	EXPECT_EQ(VTPU_PLACE_HBM, vtpu_buffer_placement(big));
	vtpu_buffer_destroy(big);
	ASSERT_EQ(0, vtpu_execute(c, exe, &in, &out));
	ASSERT_EQ(0, vtpu_device_info(d, &info));
	ASSERT_EQ(0, vtpu_buffer_create(c, d, info.hbm_free + 4096,
					VTPU_PLACE_AUTO, &big2));
	EXPECT_EQ(VTPU_PLACE_HBM, vtpu_buffer_placement(big2));
	vtpu_buffer_destroy(big2);
	vtpu_buffer_destroy(in);
	vtpu_buffer_destroy(out);
	vtpu_executable_destroy(exe);
	vtpu_client_destroy(c);
}

TEST(same_graph_twice_hits_the_cache)
{
	struct vtpu_client *c = host_client(0, 0, 3, 0);
	struct vtpu_graph *g = mlp_graph();
	struct vtpu_executable *e1, *e2;
	struct vtpu_stats st;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, vtpu_executable_compile(c, g, &e1));
	ASSERT_EQ(0, vtpu_executable_compile(c, g, &e2));
	vtpu_graph_free(g);
	ASSERT_EQ(0, vtpu_client_stats(c, &st));
	ASSERT_EQ(1, st.cache_hits);
	ASSERT_EQ(1, st.cache_misses);
	ASSERT_LT(fabs(st.cache_hit_rate - 0.5), 1e-9);
	vtpu_executable_destroy(e1);
	vtpu_executable_destroy(e2);
	vtpu_client_destroy(c);
}

TEST(hlo_parse_error_has_line_and_column)
{
	struct vtpu_client *c = host_client(0, 0, 3, 0);
	static const char bad[] = "HloModule m\n\nENTRY e {\n  p = f32[2 parameter(0)\n}\n";
	struct vtpu_executable *e;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(-EINVAL, vtpu_executable_compile_hlo(c, bad, strlen(bad),
						       &e));
	ASSERT_EQ(0, strncmp(vtpu_client_error(c), "hlo:4:", 6));
	vtpu_client_destroy(c);
}

/* VTPU_BACKEND only matters when the options say AUTO. */
static int env_client(const char *value, struct vtpu_client **c)
{
	struct vtpu_client_options o;
	int ret;

	vtpu_client_options_init(&o);
	o.cache_dir = "";
	setenv("VTPU_BACKEND", value, 1);
	ret = vtpu_client_create(&o, c);
	unsetenv("VTPU_BACKEND");
	return ret;
}

TEST(env_host_selects_host)
{
	struct vtpu_client *c;

	ASSERT_EQ(0, env_client("host", &c));
	ASSERT_STREQ("host", vtpu_client_backend(c));
	ASSERT_EQ(1, vtpu_client_device_count(c));
	vtpu_client_destroy(c);
}

TEST(env_bogus_is_einval)
{
	struct vtpu_client *c;

	ASSERT_EQ(-EINVAL, env_client("bogus", &c));
	ASSERT_EQ(NULL, c);
	ASSERT_NE(NULL, strstr(vtpu_client_error(NULL), "bogus"));
}

TEST(env_accel_without_device_is_enodev)
{
	struct vtpu_client *c;
	int ret = env_client("accel", &c);

	if (!ret) {
		vtpu_client_destroy(c);
		SKIP(return, "a vtpu device is present");
	}
	ASSERT_EQ(-ENODEV, ret);
	ASSERT_NE(0, strlen(vtpu_client_error(NULL)));
	ASSERT_NE(NULL, strstr(vtpu_client_error(NULL), "vtpu.ko"));
	ASSERT_NE(NULL, strstr(vtpu_client_error(NULL), "VTPU_BACKEND=host"));
}

TEST(default_options)
{
	struct vtpu_client_options o;

	vtpu_client_options_init(&o);
	ASSERT_EQ(VTPU_BACKEND_AUTO, o.backend);
	ASSERT_EQ(1, o.host_devices);
	ASSERT_EQ(2, o.host_cores);
	ASSERT_EQ(256ull << 20, o.host_hbm_size);
	ASSERT_EQ(1ull << 20, o.host_vmem_size);
	ASSERT_EQ(3, o.max_retries);
	ASSERT_EQ(64, o.cache_entries);
	ASSERT_EQ(NULL, o.cache_dir);
}

/* ---- several threads, one client ---------------------------------------- */

#define NTHREADS	4
#define NRUNS		20

struct worker {
	struct vtpu_client *c;
	struct vtpu_executable *exe;
	const float *want;
	int bad;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mlp m = { .exe = w->exe };
	const float *data[4] = { x, w1, b1, w2 };
	const size_t size[4] = { sizeof(x), sizeof(w1), sizeof(b1), sizeof(w2) };
	float y[B * O];
	int i, r;

	/* own buffers: one buffer must not be written by two threads */
	for (i = 0; i < 4; i++)
		if (vtpu_buffer_create(w->c, NULL, size[i], VTPU_PLACE_AUTO,
				       &m.in[i]) ||
		    vtpu_buffer_upload(m.in[i], 0, data[i], size[i]))
			w->bad++;
	if (vtpu_buffer_create(w->c, NULL, sizeof(y), VTPU_PLACE_AUTO,
			       &m.out[0]))
		w->bad++;
	for (r = 0; !w->bad && r < NRUNS; r++) {
		struct vtpu_event *ev;

		memset(y, 0, sizeof(y));
		if (r % 2) {
			if (vtpu_execute(w->c, w->exe, m.in, m.out))
				w->bad++;
		} else if (vtpu_execute_async(w->c, w->exe, m.in, m.out, &ev)) {
			w->bad++;
		} else {
			w->bad += vtpu_event_wait(ev, -1) != 0;
			vtpu_event_destroy(ev);
		}
		vtpu_buffer_download(m.out[0], 0, y, sizeof(y));
		w->bad += max_err(y, w->want, B * O) > 1.0;
	}
	for (i = 0; i < 4; i++)
		vtpu_buffer_destroy(m.in[i]);
	vtpu_buffer_destroy(m.out[0]);
	return NULL;
}

TEST_F(rt, threads_share_a_client)
{
	struct worker w[NTHREADS];
	pthread_t t[NTHREADS];
	struct vtpu_stats st;
	int i;

	for (i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ self->c, self->m.exe, self->want, 0 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, worker_main, &w[i]));
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].bad);
	}
	ASSERT_EQ(0, vtpu_client_stats(self->c, &st));
	ASSERT_EQ(NTHREADS * NRUNS, st.executions);
	ASSERT_EQ(0, st.failures);
}

/* Runs started and never waited on end with the client, which frees them. */
TEST(destroy_finishes_outstanding_runs)
{
	struct vtpu_client *c = host_client(0, 0, 3, 0);
	struct vtpu_event *ev[4];
	struct mlp m;
	int i;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, mlp_setup(c, &m));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, vtpu_execute_async(c, m.exe, m.in, m.out, &ev[i]));
	/* no wait, no destroy of events, buffers or executable: the client's */
	vtpu_client_destroy(c);
}

static char *slurp(const char *path)
{
	size_t len;
	void *buf;

	return vtpu_read_file(path, &buf, &len) ? NULL : buf;
}

TEST(profile_names_jobs_and_ops)
{
	struct vtpu_client *c = host_client(0, 0, 3, 0);
	char path[] = "/tmp/rt_api_prof_XXXXXX";
	struct vtpu_profile *p;
	struct mlp m;
	char *json;
	int fd;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, mlp_setup(c, &m));
	ASSERT_EQ(0, vtpu_executable_set_name(m.exe, "mlp"));
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, vtpu_profile_start(c, &p));
	ASSERT_EQ(0, vtpu_execute(c, m.exe, m.in, m.out));
	ASSERT_EQ(0, vtpu_profile_stop(p, path));
	vtpu_profile_destroy(p);
	json = slurp(path);
	unlink(path);
	ASSERT_NE(NULL, json);
	EXPECT_EQ(NULL, strstr(json, "\"name\":\"\""));
	EXPECT_NE(NULL, strstr(json, "\"name\":\"mlp\""));
	/* op slices carry the compiler's kernel names: "k0:..." */
	EXPECT_NE(NULL, strstr(json, "\"name\":\"k0"));
	/* the host backend's HBM is one free range */
	EXPECT_NE(NULL, strstr(json, "\"free_blocks\":1"));
	free(json);
	mlp_teardown(&m);
	vtpu_client_destroy(c);
}

/* A read-only (here: impossible) $HOME falls back to a per-user dir. */
TEST(cache_survives_unwritable_home)
{
	char tmp[] = "/tmp/rt_api_cache_XXXXXX", cmd[128];
	struct vtpu_client_options o;
	struct vtpu_executable *e;
	struct vtpu_graph *g = mlp_graph();
	struct vtpu_client *c;
	struct vtpu_stats st;
	const char *dir, *note;
	int round;

	ASSERT_NE(NULL, g);
	ASSERT_NE(NULL, mkdtemp(tmp));
	setenv("HOME", "/dev/null/nohome", 1);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("VTPU_CACHE_DIR");
	setenv("TMPDIR", tmp, 1);
	vtpu_client_options_init(&o);
	o.backend = VTPU_BACKEND_HOST;
	o.cache_entries = 0;		/* the disk or nothing */
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(0, vtpu_client_create(&o, &c));
		ASSERT_EQ(0, vtpu_client_cache_dir(c, &dir, &note));
		EXPECT_EQ(0, strncmp(dir, tmp, strlen(tmp)));
		EXPECT_NE(NULL, strstr(note, "$HOME"));
		ASSERT_EQ(0, vtpu_executable_compile(c, g, &e));
		vtpu_client_stats(c, &st);
		EXPECT_EQ(round, (int)st.cache_hits);
		vtpu_executable_destroy(e);
		vtpu_client_destroy(c);
	}
	vtpu_graph_free(g);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	EXPECT_EQ(0, system(cmd));
}

/* By default a run follows its buffers; LEAST_LOADED copies them. */
TEST(run_placement_follows_buffers_or_load)
{
	struct vtpu_client_options o;
	struct vtpu_device_info i0, i1;
	struct vtpu_device *d0, *d1;
	struct vtpu_client *c;
	float y[B * O], want[B * O];
	struct mlp m;
	int r;

	fill(x, B * I, 1);
	fill(w1, I * H, 0.5f);
	fill(b1, H, 0.1f);
	fill(w2, H * O, 0.5f);
	mlp_reference(want);
	vtpu_client_options_init(&o);
	o.backend = VTPU_BACKEND_HOST;
	o.cache_dir = "";
	o.host_devices = 2;
	ASSERT_EQ(0, vtpu_client_create(&o, &c));
	ASSERT_EQ(0, mlp_setup(c, &m));	/* buffers on device 0 */
	vtpu_client_device(c, 0, &d0);
	vtpu_client_device(c, 1, &d1);
	for (r = 0; r < 4; r++)
		ASSERT_EQ(0, vtpu_execute(c, m.exe, m.in, m.out));
	vtpu_device_info(d0, &i0);
	vtpu_device_info(d1, &i1);
	EXPECT_EQ(4, i0.jobs_completed);
	EXPECT_EQ(0, i1.jobs_completed);

	ASSERT_EQ(0, vtpu_client_set_run_placement(c, VTPU_RUN_LEAST_LOADED));
	for (r = 0; r < 4; r++) {
		memset(y, 0, sizeof(y));
		ASSERT_EQ(0, vtpu_buffer_upload(m.out[0], 0, y, sizeof(y)));
		ASSERT_EQ(0, vtpu_execute(c, m.exe, m.in, m.out));
		ASSERT_EQ(0, vtpu_buffer_download(m.out[0], 0, y, sizeof(y)));
		EXPECT_GT(1.0, max_err(y, want, B * O));
	}
	vtpu_device_info(d1, &i1);
	/* device 1 was idle with less busy time: the staged runs went there */
	EXPECT_LT(0, i1.jobs_completed);
	mlp_teardown(&m);
	vtpu_client_destroy(c);
}

TEST_HARNESS_MAIN
