// SPDX-License-Identifier: MIT
/*
 * Description: one conformance suite for every backend (IREE's CTS idea).
 * The same graphs run through libvtpu on whichever backend the client
 * gets; every output is hashed. With VTPU_CONFORMANCE_WRITE=FILE the
 * hashes are recorded (the host run), with VTPU_CONFORMANCE_REF=FILE each
 * must equal the recorded one (the accel run in QEMU): the two backends
 * must agree bit for bit. VTPU_CONFORMANCE_BACKEND=host|accel says which
 * backend the run must have got.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "vtpu.h"

#include "kselftest_harness.h"

static unsigned int seed = 1;

static float frand(void)
{
	seed = seed * 1103515245u + 12345u;
	return (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static size_t shape_bytes(const struct vtpu_shape *s)
{
	size_t n = 4;
	int i;

	for (i = 0; i < s->rank; i++)
		n *= s->dims[i];
	return n;
}

/* Checks or records the hash of one output under @name. */
static int conform(const char *name, const void *data, size_t size)
{
	const char *ref = getenv("VTPU_CONFORMANCE_REF");
	const char *out = getenv("VTPU_CONFORMANCE_WRITE");
	unsigned long long h = XXH64(data, size, 0), want;
	char line[256], key[200];
	int found = 0;
	FILE *f;

	if (out) {
		f = fopen(out, "a");
		if (!f)
			return -1;
		fprintf(f, "%s %016llx\n", name, h);
		fclose(f);
	}
	if (!ref)
		return 0;
	f = fopen(ref, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%199s %llx", key, &want) == 2 &&
		    !strcmp(key, name)) {
			found = 1;
			break;
		}
	fclose(f);
	if (!found) {
		fprintf(stderr, "# %s: not in the reference\n", name);
		return -1;
	}
	if (want != h)
		fprintf(stderr, "# %s: %016llx here, %016llx in the reference\n",
			name, h, want);
	return want == h ? 0 : -1;
}

FIXTURE(cts) {
	struct vtpu_client *c;
};

FIXTURE_SETUP(cts)
{
	const char *want = getenv("VTPU_CONFORMANCE_BACKEND");

	ASSERT_EQ(0, vtpu_client_create(NULL, &self->c))
		TH_LOG("no client: %s", self->c ? vtpu_client_error(self->c) : "");
	if (want)
		ASSERT_STREQ(want, vtpu_client_backend(self->c));
}

FIXTURE_TEARDOWN(cts)
{
	vtpu_client_destroy(self->c);
}

/* Compiles @g, runs it on random inputs, checks each output's hash. */
static void run_graph(struct __test_metadata *_metadata,
		      struct vtpu_client *c, struct vtpu_graph *g,
		      const char *name)
{
	struct vtpu_buffer *in[8] = { 0 }, *out[8] = { 0 };
	struct vtpu_executable *exe = NULL;
	int i, k, nin, nout;

	ASSERT_EQ(NULL, vtpu_graph_error(g));
	ASSERT_EQ(0, vtpu_executable_compile(c, g, &exe))
		TH_LOG("%s: %s", name, vtpu_client_error(c));
	nin = vtpu_executable_num_inputs(exe);
	nout = vtpu_executable_num_outputs(exe);
	for (i = 0; i < nin; i++) {
		struct vtpu_shape s;
		size_t size;
		float *data;

		ASSERT_EQ(0, vtpu_executable_input_shape(exe, i, &s));
		size = shape_bytes(&s);
		data = malloc(size);
		for (k = 0; k < (int)(size / 4); k++)
			data[k] = frand();
		ASSERT_EQ(0, vtpu_buffer_create(c, NULL, size, VTPU_PLACE_AUTO,
						&in[i]));
		ASSERT_EQ(0, vtpu_buffer_upload(in[i], 0, data, size));
		free(data);
	}
	for (i = 0; i < nout; i++) {
		struct vtpu_shape s;

		ASSERT_EQ(0, vtpu_executable_output_shape(exe, i, &s));
		ASSERT_EQ(0, vtpu_buffer_create(c, NULL, shape_bytes(&s),
						VTPU_PLACE_AUTO, &out[i]));
	}
	ASSERT_EQ(0, vtpu_execute(c, exe, in, out))
		TH_LOG("%s: %s", name, vtpu_client_error(c));
	for (i = 0; i < nout; i++) {
		uint64_t size = vtpu_buffer_size(out[i]);
		void *data = malloc(size);
		char key[160];

		ASSERT_EQ(0, vtpu_buffer_download(out[i], 0, data, size));
		snprintf(key, sizeof(key), "%s.%d", name, i);
		EXPECT_EQ(0, conform(key, data, size));
		free(data);
	}
	for (i = 0; i < nin; i++)
		vtpu_buffer_destroy(in[i]);
	for (i = 0; i < nout; i++)
		vtpu_buffer_destroy(out[i]);
	vtpu_executable_destroy(exe);
}

TEST_F(cts, elementwise_chain)
{
	struct vtpu_shape s = { VTPU_F32, 2, { 33, 70 } };
	struct vtpu_graph *g = vtpu_graph_new();
	int x = vtpu_g_parameter(g, 0, &s, "x");
	int y = vtpu_g_parameter(g, 1, &s, "y");
	int z = vtpu_g_unary(g, VTPU_TANH, vtpu_g_binary(g, VTPU_MUL, x, y));

	z = vtpu_g_binary(g, VTPU_ADD, vtpu_g_unary(g, VTPU_GELU, z), x);
	z = vtpu_g_unary(g, VTPU_EXP, z);
	vtpu_g_outputs(g, 1, &z);
	run_graph(_metadata, self->c, g, "elementwise_chain");
	vtpu_graph_free(g);
}

TEST_F(cts, matmul_tiled)
{
	struct vtpu_shape a = { VTPU_F32, 2, { 200, 300 } };
	struct vtpu_shape b = { VTPU_F32, 2, { 300, 150 } };
	struct vtpu_graph *g = vtpu_graph_new();
	/* Separate statements: argument evaluation order is unspecified. */
	int pa = vtpu_g_parameter(g, 0, &a, "a");
	int pb = vtpu_g_parameter(g, 1, &b, "b");
	int z = vtpu_g_matmul(g, pa, pb);

	vtpu_g_outputs(g, 1, &z);
	run_graph(_metadata, self->c, g, "matmul_tiled");
	vtpu_graph_free(g);
}

TEST_F(cts, mlp_softmax)
{
	struct vtpu_shape x = { VTPU_F32, 2, { 16, 64 } };
	struct vtpu_shape w1 = { VTPU_F32, 2, { 64, 128 } };
	struct vtpu_shape w2 = { VTPU_F32, 2, { 128, 10 } };
	struct vtpu_graph *g = vtpu_graph_new();
	int px = vtpu_g_parameter(g, 0, &x, "x");
	int p1 = vtpu_g_parameter(g, 1, &w1, "w1");
	int p2 = vtpu_g_parameter(g, 2, &w2, "w2");
	int y = vtpu_g_matmul(g, px, p1);

	y = vtpu_g_unary(g, VTPU_RELU, y);
	y = vtpu_g_matmul(g, y, p2);
	y = vtpu_g_softmax(g, y, 1);
	vtpu_g_outputs(g, 1, &y);
	run_graph(_metadata, self->c, g, "mlp_softmax");
	vtpu_graph_free(g);
}

TEST_F(cts, conv_reduce)
{
	struct vtpu_shape x = { VTPU_F32, 4, { 2, 3, 10, 10 } };
	struct vtpu_shape k = { VTPU_F32, 4, { 4, 3, 3, 3 } };
	struct vtpu_conv_params p = { { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 };
	struct vtpu_graph *g = vtpu_graph_new();
	int axes[] = { 2, 3 };
	int px = vtpu_g_parameter(g, 0, &x, "x");
	int pk = vtpu_g_parameter(g, 1, &k, "k");
	int y = vtpu_g_conv2d(g, px, pk, &p);

	y = vtpu_g_reduce(g, VTPU_REDUCE_MEAN_OP, vtpu_g_unary(g, VTPU_RELU, y),
			  2, axes);
	vtpu_g_outputs(g, 1, &y);
	run_graph(_metadata, self->c, g, "conv_reduce");
	vtpu_graph_free(g);
}

TEST_F(cts, transpose_slice_concat)
{
	struct vtpu_shape x = { VTPU_F32, 3, { 5, 6, 7 } };
	struct vtpu_graph *g = vtpu_graph_new();
	int p = vtpu_g_parameter(g, 0, &x, "x");
	int perm[] = { 2, 0, 1 }, parts[2], outs[2];
	int64_t st[] = { 0, 1, 0 }, li[] = { 5, 6, 7 }, sp[] = { 2, 2, 3 };

	outs[0] = vtpu_g_transpose(g, p, perm);
	parts[0] = vtpu_g_slice(g, p, st, li, sp);
	parts[1] = vtpu_g_unary(g, VTPU_NEG, parts[0]);
	outs[1] = vtpu_g_concat(g, 2, parts, 2);
	vtpu_g_outputs(g, 2, outs);
	run_graph(_metadata, self->c, g, "transpose_slice_concat");
	vtpu_graph_free(g);
}

TEST_HARNESS_MAIN
