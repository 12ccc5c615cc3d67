// SPDX-License-Identifier: MIT
/*
 * Description: vtpu.h's misuse policy. Every public function is called
 * with NULL in each pointer argument it requires, and must return
 * -EINVAL (or the neutral value vtpu.h documents) with a message, never
 * crash; destroy and free functions take NULL as a no-op; a handle of
 * the wrong kind is refused by its magic.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vtpu.h"

#include "kselftest_harness.h"

static struct vtpu_graph *tiny_graph(void)
{
	struct vtpu_shape s = { VTPU_F32, 1, { 8 } };
	struct vtpu_graph *g = vtpu_graph_new();
	int p, v;

	p = vtpu_g_parameter(g, 0, &s, "x");
	v = vtpu_g_unary(g, VTPU_RELU, p);
	vtpu_g_outputs(g, 1, &v);
	return g;
}

FIXTURE(misuse) {
	struct vtpu_client *c;
	struct vtpu_device *d;
	struct vtpu_executable *e;
	struct vtpu_buffer *in[1], *out[1];
};

FIXTURE_SETUP(misuse)
{
	struct vtpu_client_options o;
	struct vtpu_graph *g = tiny_graph();

	vtpu_client_options_init(&o);
	o.backend = VTPU_BACKEND_HOST;
	o.cache_dir = "";
	ASSERT_EQ(0, vtpu_client_create(&o, &self->c));
	ASSERT_EQ(0, vtpu_client_device(self->c, 0, &self->d));
	ASSERT_EQ(0, vtpu_executable_compile(self->c, g, &self->e));
	vtpu_graph_free(g);
	ASSERT_EQ(0, vtpu_buffer_create(self->c, NULL, 32, VTPU_PLACE_AUTO,
					&self->in[0]));
	ASSERT_EQ(0, vtpu_buffer_create(self->c, NULL, 32, VTPU_PLACE_AUTO,
					&self->out[0]));
}

FIXTURE_TEARDOWN(misuse)
{
	vtpu_buffer_destroy(self->in[0]);
	vtpu_buffer_destroy(self->out[0]);
	vtpu_executable_destroy(self->e);
	vtpu_client_destroy(self->c);
}

/* -EINVAL and a message where vtpu_client_error(@c) finds it. */
#define EXPECT_MISUSE(c, call) do {					\
	EXPECT_EQ(-EINVAL, (call));					\
	EXPECT_NE(0, strlen(vtpu_client_error(c)));			\
} while (0)

TEST_F(misuse, client_functions)
{
	struct vtpu_device *d;
	struct vtpu_stats st;
	const char *s;

	vtpu_client_options_init(NULL);
	EXPECT_MISUSE(NULL, vtpu_client_create(NULL, NULL));
	EXPECT_STREQ("", vtpu_client_error((void *)self->in[0]));
	EXPECT_STREQ("", vtpu_client_backend(NULL));
	EXPECT_MISUSE(NULL, vtpu_client_device_count(NULL));
	EXPECT_MISUSE(NULL, vtpu_client_device(NULL, 0, &d));
	EXPECT_MISUSE(self->c, vtpu_client_device(self->c, 0, NULL));
	EXPECT_MISUSE(NULL, vtpu_device_info(NULL, NULL));
	EXPECT_MISUSE(self->c, vtpu_device_info(self->d, NULL));
	EXPECT_MISUSE(NULL, vtpu_client_stats(NULL, &st));
	EXPECT_MISUSE(self->c, vtpu_client_stats(self->c, NULL));
	EXPECT_MISUSE(NULL, vtpu_client_cache_dir(NULL, &s, NULL));
	EXPECT_MISUSE(self->c, vtpu_client_cache_dir(self->c, NULL, NULL));
	EXPECT_MISUSE(NULL, vtpu_client_set_run_placement(NULL,
							  VTPU_RUN_WITH_BUFFERS));
	EXPECT_MISUSE(self->c, vtpu_client_set_run_placement(self->c, 7));
	vtpu_client_destroy(NULL);
}

TEST_F(misuse, buffer_functions)
{
	struct vtpu_buffer *b;
	char data[8];

	EXPECT_MISUSE(NULL, vtpu_buffer_create(NULL, NULL, 8, VTPU_PLACE_AUTO,
					       &b));
	EXPECT_MISUSE(self->c, vtpu_buffer_create(self->c, NULL, 8,
						  VTPU_PLACE_AUTO, NULL));
	/* a handle of the wrong kind, here an executable as a device */
	EXPECT_MISUSE(self->c, vtpu_buffer_create(self->c, (void *)self->e, 8,
						  VTPU_PLACE_AUTO, &b));
	EXPECT_MISUSE(NULL, vtpu_buffer_upload(NULL, 0, data, 8));
	EXPECT_MISUSE(self->c, vtpu_buffer_upload(self->in[0], 0, NULL, 8));
	EXPECT_EQ(0, vtpu_buffer_upload(self->in[0], 0, NULL, 0));
	EXPECT_MISUSE(NULL, vtpu_buffer_download(NULL, 0, data, 8));
	EXPECT_MISUSE(self->c, vtpu_buffer_download(self->in[0], 0, NULL, 8));
	EXPECT_EQ(0, vtpu_buffer_size(NULL));
	EXPECT_EQ(VTPU_PLACE_AUTO, vtpu_buffer_placement(NULL));
	EXPECT_EQ(0, vtpu_buffer_size((void *)self->e));
	vtpu_buffer_destroy(NULL);
}

TEST_F(misuse, executable_functions)
{
	static const char hlo[] = "HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n";
	struct vtpu_executable *e;
	struct vtpu_shape sh;
	struct vtpu_cost cost;
	struct vtpu_graph *g = tiny_graph();

	EXPECT_MISUSE(NULL, vtpu_executable_compile(NULL, g, &e));
	EXPECT_MISUSE(self->c, vtpu_executable_compile(self->c, NULL, &e));
	EXPECT_MISUSE(self->c, vtpu_executable_compile(self->c, g, NULL));
	vtpu_graph_free(g);
	EXPECT_MISUSE(NULL, vtpu_executable_compile_hlo(NULL, hlo, sizeof(hlo) - 1,
							&e));
	EXPECT_MISUSE(self->c, vtpu_executable_compile_hlo(self->c, NULL, 0, &e));
	EXPECT_MISUSE(self->c, vtpu_executable_compile_hlo(self->c, hlo,
							   sizeof(hlo) - 1, NULL));
	EXPECT_MISUSE(NULL, vtpu_executable_cost(NULL, &cost));
	EXPECT_MISUSE(self->c, vtpu_executable_cost(self->e, NULL));
	EXPECT_MISUSE(NULL, vtpu_executable_num_inputs(NULL));
	EXPECT_MISUSE(NULL, vtpu_executable_num_outputs(NULL));
	EXPECT_MISUSE(NULL, vtpu_executable_num_inputs((void *)self->in[0]));
	EXPECT_MISUSE(NULL, vtpu_executable_input_shape(NULL, 0, &sh));
	EXPECT_MISUSE(self->c, vtpu_executable_input_shape(self->e, 0, NULL));
	EXPECT_MISUSE(NULL, vtpu_executable_output_shape(NULL, 0, &sh));
	EXPECT_MISUSE(self->c, vtpu_executable_output_shape(self->e, 0, NULL));
	EXPECT_MISUSE(NULL, vtpu_executable_set_name(NULL, "x"));
	EXPECT_MISUSE(self->c, vtpu_executable_set_name(self->e, NULL));
	vtpu_executable_destroy(NULL);
}

TEST_F(misuse, execution_functions)
{
	struct vtpu_buffer *none[1] = { NULL };
	struct vtpu_run run = { .exe = self->e, .inputs = self->in,
				.outputs = self->out };
	struct vtpu_event *ev;

	EXPECT_MISUSE(NULL, vtpu_execute(NULL, self->e, self->in, self->out));
	EXPECT_MISUSE(self->c, vtpu_execute(self->c, NULL, self->in, self->out));
	EXPECT_MISUSE(self->c, vtpu_execute(self->c, self->e, NULL, self->out));
	EXPECT_MISUSE(self->c, vtpu_execute(self->c, self->e, self->in, NULL));
	EXPECT_MISUSE(self->c, vtpu_execute(self->c, self->e, none, self->out));
	EXPECT_MISUSE(self->c, vtpu_execute(self->c, self->e,
					    (void *)&self->e, self->out));
	EXPECT_MISUSE(NULL, vtpu_execute_async(NULL, self->e, self->in,
					       self->out, &ev));
	EXPECT_MISUSE(self->c, vtpu_execute_async(self->c, self->e, self->in,
						  self->out, NULL));
	EXPECT_MISUSE(self->c, vtpu_execute_async(self->c, NULL, self->in,
						  self->out, &ev));
	EXPECT_MISUSE(NULL, vtpu_execute_batch(NULL, &run, 1));
	EXPECT_MISUSE(self->c, vtpu_execute_batch(self->c, NULL, 1));
	run.exe = NULL;
	EXPECT_MISUSE(self->c, vtpu_execute_batch(self->c, &run, 1));
	EXPECT_EQ(-EINVAL, run.status);
	EXPECT_MISUSE(NULL, vtpu_event_wait(NULL, -1));
	EXPECT_MISUSE(NULL, vtpu_event_done(NULL));
	vtpu_event_destroy(NULL);
	/* and the client still works */
	EXPECT_EQ(0, vtpu_execute(self->c, self->e, self->in, self->out));
}

TEST_F(misuse, profile_functions)
{
	struct vtpu_profile *p;

	EXPECT_MISUSE(NULL, vtpu_profile_start(NULL, &p));
	EXPECT_MISUSE(self->c, vtpu_profile_start(self->c, NULL));
	EXPECT_MISUSE(NULL, vtpu_profile_stop(NULL, "/dev/null"));
	ASSERT_EQ(0, vtpu_profile_start(self->c, &p));
	EXPECT_MISUSE(self->c, vtpu_profile_stop(p, NULL));
	vtpu_profile_destroy(p);
	vtpu_profile_destroy(NULL);
}

TEST(host_tensor_functions)
{
	struct vtpu_model_info *mi;
	struct vtpu_onnx_binding b[1];
	struct vtpu_model_info m = { 0 };
	struct vtpu_tensor t = { 0 };
	char err[128];
	void *vals;
	size_t len;
	float f = 1;

	EXPECT_EQ(-EINVAL, vtpu_elem_convert(VTPU_ELEM_FLOAT, NULL, 1,
					     VTPU_ELEM_FLOAT, &f, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, vtpu_elem_convert(VTPU_ELEM_FLOAT, &f, 1,
					     VTPU_ELEM_FLOAT, NULL, NULL, 0));
	EXPECT_EQ(-EINVAL, vtpu_read_file(NULL, &vals, &len));
	EXPECT_EQ(-EINVAL, vtpu_read_file("/dev/null", NULL, &len));
	EXPECT_EQ(-EINVAL, vtpu_read_file("/dev/null", &vals, NULL));
	EXPECT_EQ(-EINVAL, vtpu_tensor_load(NULL, &t, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, vtpu_tensor_load("x.npy", NULL, NULL, 0));
	EXPECT_EQ(-EINVAL, vtpu_tensor_decode_pb(NULL, 4, &t, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, vtpu_tensor_decode_pb("abcd", 4, NULL, NULL, 0));
	EXPECT_EQ(-EINVAL, vtpu_tensor_decode_npy(NULL, 4, &t, NULL, 0));
	EXPECT_EQ(-EINVAL, vtpu_tensor_decode_npy("abcd", 4, NULL, NULL, 0));
	EXPECT_EQ(-EINVAL, vtpu_tensor_save_npy(NULL, &t, NULL, 0));
	EXPECT_EQ(-EINVAL, vtpu_tensor_save_npy("/dev/null", NULL, NULL, 0));
	vtpu_tensor_free(NULL);
	EXPECT_EQ(-EINVAL, vtpu_model_info(NULL, 4, &mi, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, vtpu_model_info("abcd", 4, NULL, NULL, 0));
	vtpu_model_info_free(NULL);
	EXPECT_EQ(-EINVAL, vtpu_model_bind(NULL, &t, 1, b, &vals, NULL, 0));
	EXPECT_EQ(-EINVAL, vtpu_model_bind(&m, NULL, 1, b, &vals, NULL, 0));
	EXPECT_EQ(-EINVAL, vtpu_model_bind(&m, &t, 1, NULL, &vals, NULL, 0));
	EXPECT_EQ(-EINVAL, vtpu_model_bind(&m, &t, 1, b, NULL, NULL, 0));
}

TEST_HARNESS_MAIN
