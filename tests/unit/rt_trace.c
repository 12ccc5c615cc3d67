// SPDX-License-Identifier: MIT
/*
 * Description: a profile recorded from real runs (compile, buffers,
 * executions on the host backend) exports as JSON that parses and holds
 * every event kind: compile, alloc/free, memory counters, submit and
 * complete, the device's job record and per-op TRACE spans.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>

#include "vtpu.h"

#include "kselftest_harness.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/*
 * Events with this "ph" and, if @name, this name (with @part, a name
 * that contains it).
 */
static int count_some(yajl_val events, const char *ph, const char *name,
		      bool part)
{
	const char *ph_path[] = { "ph", NULL }, *name_path[] = { "name", NULL };
	size_t i;
	int n = 0;

	for (i = 0; i < YAJL_GET_ARRAY(events)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(events)->values[i];
		yajl_val p = yajl_tree_get(e, ph_path, yajl_t_string);
		yajl_val nm = yajl_tree_get(e, name_path, yajl_t_string);

		if (p && !strcmp(p->u.string, ph) &&
		    (!name || (nm && (part ? strstr(nm->u.string, name) != NULL :
				      !strcmp(nm->u.string, name)))))
			n++;
	}
	return n;
}

static int count(yajl_val events, const char *ph, const char *name)
{
	return count_some(events, ph, name, false);
}

TEST(profile_of_real_runs_has_every_event_kind)
{
	struct vtpu_client_options o;
	struct vtpu_shape s = { VTPU_F32, 2, { 8, 8 } };
	const char *te_path[] = { "traceEvents", NULL };
	char path[] = "/tmp/rt_trace_XXXXXX", errbuf[256];
	struct vtpu_buffer *in, *out;
	struct vtpu_executable *exe;
	struct vtpu_profile *p;
	struct vtpu_client *c;
	struct vtpu_graph *g;
	yajl_val root, events;
	char *text;
	int fd, y, x;

	vtpu_client_options_init(&o);
	o.backend = VTPU_BACKEND_HOST;
	o.cache_dir = "";
	ASSERT_EQ(0, vtpu_client_create(&o, &c));
	ASSERT_EQ(0, vtpu_profile_start(c, &p));

	g = vtpu_graph_new();
	x = vtpu_g_parameter(g, 0, &s, "x");
	y = vtpu_g_unary(g, VTPU_TANH, vtpu_g_matmul(g, x, x));
	vtpu_g_outputs(g, 1, &y);
	ASSERT_EQ(0, vtpu_executable_compile(c, g, &exe));
	ASSERT_EQ(0, vtpu_buffer_create(c, NULL, 256, VTPU_PLACE_AUTO, &in));
	ASSERT_EQ(0, vtpu_buffer_create(c, NULL, 256, VTPU_PLACE_AUTO, &out));
	ASSERT_EQ(0, vtpu_execute(c, exe, &in, &out));
	ASSERT_EQ(0, vtpu_execute(c, exe, &in, &out));
	vtpu_buffer_destroy(in);
	vtpu_buffer_destroy(out);

	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, vtpu_profile_stop(p, path));
	vtpu_profile_destroy(p);
	text = slurp(path);
	unlink(path);
	ASSERT_NE(NULL, text);
	root = yajl_tree_parse(text, errbuf, sizeof(errbuf));
	ASSERT_NE(NULL, root) TH_LOG("not JSON: %s", errbuf);
	events = yajl_tree_get(root, te_path, yajl_t_array);
	ASSERT_NE(NULL, events);

	EXPECT_LE(1, count(events, "X", "compile"));
	EXPECT_LE(2, count(events, "i", "alloc"));
	EXPECT_LE(2, count(events, "i", "free"));
	EXPECT_LE(2, count(events, "i", "submit"));
	EXPECT_LE(2, count(events, "i", "complete"));
	EXPECT_LE(1, count(events, "C", "memory"));
	/* Per run: the job record and one TRACE span per kernel. */
	EXPECT_LE(4, count(events, "X", NULL) - count(events, "X", "compile"));
	/* each TRACE span is named by its kernel, once per run */
	EXPECT_EQ(2, count_some(events, "X", "matmul", true));
	EXPECT_LE(2, count(events, "M", "process_name"));
	EXPECT_LE(1, count(events, "M", "thread_name"));

	yajl_tree_free(root);
	free(text);
	vtpu_executable_destroy(exe);
	vtpu_client_destroy(c);
	vtpu_graph_free(g);
}

TEST_HARNESS_MAIN
