// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: profile sessions. Events of every kind, also from several
 * threads at once, come back from vtpu_profile_stop() as a Chrome trace
 * (the JSON Perfetto opens) with the right phase, process/thread names,
 * microsecond timestamps and args; one session per client; a large
 * session streams out; a failed stop returns -errno and leaves no file.
 */
#define _GNU_SOURCE	/* nftw's FTW_DEPTH */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yajl/yajl_parse.h>
#include <yajl/yajl_tree.h>

#include "rt.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

/*
 * profile.c reports through client.c's rt_set_error(); this test links
 * profile.c alone, so it stands in and keeps the last message.
 */
static char last_error[256];

int rt_set_error(const struct vtpu_client *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return -err;
}

/* A compile, an alloc and its snapshot, a run with a job and two ops. */
static void feed_every_kind(struct vtpu_client *c)
{
	const struct rt_event evs[] = {
		{ .kind = RT_EV_COMPILE, .device = -1, .core = -1,
		  .ts_ns = 1000000, .dur_ns = 2500, .name = "matmul",
		  .value = { 1, 4096 } },
		{ .kind = RT_EV_ALLOC, .device = 0, .core = -1,
		  .ts_ns = 1003000, .value = { 65536, VTPU_PLACE_HBM } },
		{ .kind = RT_EV_MEMORY, .device = 0, .core = -1,
		  .ts_ns = 1003001, .value = { 1000, 800, 600, 3 } },
		{ .kind = RT_EV_SUBMIT, .device = 0, .core = -1,
		  .ts_ns = 1004000, .name = "matmul", .value = { 7, 1 } },
		{ .kind = RT_EV_JOB, .device = 0, .core = 1,
		  .ts_ns = 1234567891, .dur_ns = 10500, .name = "matmul",
		  .value = { 300, 2048, 8192, (uint64_t)(int64_t)-ETIMEDOUT } },
		{ .kind = RT_EV_OP, .device = 0, .core = 1,
		  .ts_ns = 1234568000, .dur_ns = 1000, .name = "dot.3",
		  .value = { 3 } },
		{ .kind = RT_EV_OP, .device = 0, .core = 1,
		  .ts_ns = 1234569000, .dur_ns = 2000, .name = "add.4",
		  .value = { 4 } },
		{ .kind = RT_EV_COMPLETE, .device = 0, .core = -1,
		  .ts_ns = 1234580000, .name = "matmul",
		  .value = { (uint64_t)(int64_t)-ETIMEDOUT, 7 } },
		{ .kind = RT_EV_FREE, .device = 0, .core = -1,
		  .ts_ns = 1234590000, .value = { 65536, VTPU_PLACE_HBM } },
	};

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		rt_profile_event(c, &evs[i]);
}

/* The whole file as a tree; NULL when it is not JSON. */
static yajl_val load(const char *path)
{
	char err[128];
	yajl_val v = NULL;
	struct stat sb;
	char *buf;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return NULL;
	if (fstat(fileno(f), &sb) == 0) {
		buf = malloc(sb.st_size + 1);
		if (buf && fread(buf, 1, sb.st_size, f) == (size_t)sb.st_size) {
			buf[sb.st_size] = '\0';
			v = yajl_tree_parse(buf, err, sizeof(err));
		}
		free(buf);
	}
	fclose(f);
	return v;
}

static yajl_val get(yajl_val v, const char *key, yajl_type t)
{
	const char *path[] = { key, NULL };

	return yajl_tree_get(v, path, t);
}

static const char *get_str(yajl_val v, const char *key)
{
	return YAJL_GET_STRING(get(v, key, yajl_t_string));
}

static double get_num(yajl_val v, const char *key)
{
	yajl_val n = get(v, key, yajl_t_number);

	return n ? YAJL_GET_DOUBLE(n) : NAN;
}

static double get_arg(yajl_val ev, const char *key)
{
	return get_num(get(ev, "args", yajl_t_object), key);
}

static const char *get_arg_str(yajl_val ev, const char *key)
{
	return get_str(get(ev, "args", yajl_t_object), key);
}

static yajl_val events(yajl_val root)
{
	return get(root, "traceEvents", yajl_t_array);
}

/* The first event named @name with phase @ph on @pid, or NULL. */
static yajl_val find(yajl_val root, const char *name, const char *ph,
		     int pid)
{
	yajl_val arr = events(root);

	for (size_t i = 0; arr && i < YAJL_GET_ARRAY(arr)->len; i++) {
		yajl_val ev = YAJL_GET_ARRAY(arr)->values[i];
		const char *n = get_str(ev, "name"), *p = get_str(ev, "ph");

		if (n && p && !strcmp(n, name) && !strcmp(p, ph) &&
		    get_num(ev, "pid") == pid)
			return ev;
	}
	return NULL;
}

/* The name a metadata event gives (@what: process_name, thread_name). */
static const char *meta_name(yajl_val root, const char *what, int pid,
			     int tid)
{
	yajl_val arr = events(root);

	for (size_t i = 0; arr && i < YAJL_GET_ARRAY(arr)->len; i++) {
		yajl_val ev = YAJL_GET_ARRAY(arr)->values[i];
		const char *n = get_str(ev, "name"), *p = get_str(ev, "ph");

		if (n && p && !strcmp(n, what) && !strcmp(p, "M") &&
		    get_num(ev, "pid") == pid && get_num(ev, "tid") == tid)
			return get_arg_str(ev, "name");
	}
	return NULL;
}

/* Events that are not metadata. */
static size_t count_events(yajl_val root)
{
	yajl_val arr = events(root);
	size_t n = 0;

	for (size_t i = 0; arr && i < YAJL_GET_ARRAY(arr)->len; i++) {
		const char *p = get_str(YAJL_GET_ARRAY(arr)->values[i], "ph");

		n += p && strcmp(p, "M");
	}
	return n;
}

/*
 * yajl_tree grows arrays one element at a time (quadratic on 100k
 * events), so a big trace is checked with the streaming parser instead:
 * it counts the events that are not metadata, reading 64 KiB at a time.
 */
struct counter {
	int depth;
	bool ph_key;
	size_t events;
};

static int cnt_map_open(void *ctx)
{
	((struct counter *)ctx)->depth++;
	return 1;
}

static int cnt_map_close(void *ctx)
{
	((struct counter *)ctx)->depth--;
	return 1;
}

static int cnt_key(void *ctx, const unsigned char *k, size_t len)
{
	struct counter *c = ctx;

	c->ph_key = c->depth == 2 && len == 2 && !memcmp(k, "ph", 2);
	return 1;
}

static int cnt_string(void *ctx, const unsigned char *s, size_t len)
{
	struct counter *c = ctx;

	if (c->ph_key && !(len == 1 && *s == 'M'))
		c->events++;
	c->ph_key = false;
	return 1;
}

static const yajl_callbacks cnt_callbacks = {
	.yajl_start_map = cnt_map_open,
	.yajl_end_map = cnt_map_close,
	.yajl_map_key = cnt_key,
	.yajl_string = cnt_string,
};

/* Events that are not metadata; -1 when the file is not JSON. */
static long stream_count(const char *path)
{
	static unsigned char buf[65536];
	struct counter c = { 0 };
	yajl_status st = yajl_status_ok;
	yajl_handle h;
	size_t n;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return -1;
	h = yajl_alloc(&cnt_callbacks, NULL, &c);
	while (st == yajl_status_ok && (n = fread(buf, 1, sizeof(buf), f)))
		st = yajl_parse(h, buf, n);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	yajl_free(h);
	fclose(f);
	return st == yajl_status_ok ? (long)c.events : -1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	return remove(path);
}

/* Entries in @dir other than . and .. */
static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

FIXTURE(session) {
	struct vtpu_client c;
	struct vtpu_profile *p;
	char dir[64];
	char path[128];
	yajl_val root;
};

FIXTURE_SETUP(session)
{
	/* rt.h: a zeroed client with its lock set up is enough here */
	memset(&self->c, 0, sizeof(self->c));
	self->c.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	self->p = NULL;
	self->root = NULL;
	snprintf(self->dir, sizeof(self->dir), "/tmp/vtpu-profile-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->path, sizeof(self->path), "%s/trace.json", self->dir);
	ASSERT_EQ(0, vtpu_profile_start(&self->c, &self->p));
}

FIXTURE_TEARDOWN(session)
{
	yajl_tree_free(self->root);
	vtpu_profile_destroy(self->p);
	nftw(self->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

TEST_F(session, trace_is_json_with_trace_events_in_ns_display)
{
	feed_every_kind(&self->c);
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_NE(NULL, self->root);
	ASSERT_NE(NULL, events(self->root));
	ASSERT_STREQ("ns", get_str(self->root, "displayTimeUnit"));
	ASSERT_EQ(9, count_events(self->root));
	ASSERT_EQ(9, get_num(get(self->root, "otherData", yajl_t_object),
			     "events"));
}

TEST_F(session, every_kind_has_its_phase)
{
	feed_every_kind(&self->c);
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_NE(NULL, self->root);
	EXPECT_NE(NULL, find(self->root, "compile", "X", 0));
	EXPECT_NE(NULL, find(self->root, "matmul", "X", 1));	/* the job */
	EXPECT_NE(NULL, find(self->root, "dot.3", "X", 1));
	EXPECT_NE(NULL, find(self->root, "add.4", "X", 1));
	EXPECT_NE(NULL, find(self->root, "submit", "i", 1));
	EXPECT_NE(NULL, find(self->root, "complete", "i", 1));
	EXPECT_NE(NULL, find(self->root, "alloc", "i", 1));
	EXPECT_NE(NULL, find(self->root, "free", "i", 1));
	EXPECT_NE(NULL, find(self->root, "memory", "C", 1));
}

TEST_F(session, processes_and_threads_are_named)
{
	feed_every_kind(&self->c);
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_NE(NULL, self->root);
	ASSERT_STREQ("host runtime",
		     meta_name(self->root, "process_name", 0, 0));
	ASSERT_STREQ("vtpu device 0",
		     meta_name(self->root, "process_name", 1, 0));
	ASSERT_STREQ("submit queue",
		     meta_name(self->root, "thread_name", 1, 0));
	ASSERT_STREQ("core 1", meta_name(self->root, "thread_name", 1, 2));
	/* core 0 ran nothing: no empty track */
	ASSERT_EQ(NULL, meta_name(self->root, "thread_name", 1, 1));
}

TEST_F(session, times_are_exact_microseconds)
{
	yajl_val job, sub;

	feed_every_kind(&self->c);
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_NE(NULL, self->root);
	job = find(self->root, "matmul", "X", 1);
	ASSERT_NE(NULL, job);
	ASSERT_EQ(1234567.891, get_num(job, "ts"));
	ASSERT_EQ(10.5, get_num(job, "dur"));
	ASSERT_EQ(2, get_num(job, "tid"));
	sub = find(self->root, "submit", "i", 1);
	ASSERT_NE(NULL, sub);
	ASSERT_EQ(1004.0, get_num(sub, "ts"));
	ASSERT_EQ(0, get_num(sub, "tid"));
}

TEST_F(session, args_carry_the_values)
{
	yajl_val ev;

	feed_every_kind(&self->c);
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_NE(NULL, self->root);

	ev = find(self->root, "matmul", "X", 1);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(1, get_arg(ev, "core"));
	EXPECT_EQ(300, get_arg(ev, "insns"));
	EXPECT_EQ(2048, get_arg(ev, "flops"));
	EXPECT_EQ(8192, get_arg(ev, "dma_bytes"));
	EXPECT_EQ(-ETIMEDOUT, get_arg(ev, "status"));

	ev = find(self->root, "compile", "X", 0);
	ASSERT_NE(NULL, ev);
	EXPECT_STREQ("hit", get_arg_str(ev, "cache"));
	EXPECT_STREQ("matmul", get_arg_str(ev, "program"));

	ev = find(self->root, "complete", "i", 1);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(-ETIMEDOUT, get_arg(ev, "status"));

	ev = find(self->root, "alloc", "i", 1);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(65536, get_arg(ev, "size"));
	EXPECT_STREQ("hbm", get_arg_str(ev, "placement"));

	ev = find(self->root, "dot.3", "X", 1);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(3, get_arg(ev, "op_id"));
}

TEST_F(session, memory_counter_has_fragmentation)
{
	yajl_val ev;

	feed_every_kind(&self->c);
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ev = find(self->root, "memory", "C", 1);
	ASSERT_NE(NULL, ev);
	ASSERT_EQ(1000, get_arg(ev, "hbm_used"));
	ASSERT_EQ(800, get_arg(ev, "hbm_free"));
	ASSERT_EQ(600, get_arg(ev, "largest_free"));
	ASSERT_EQ(3, get_arg(ev, "free_blocks"));
	/* 1 - 600 / 800 */
	ASSERT_GT(1e-9, fabs(0.25 - get_arg(ev, "external_fragmentation")));
}

TEST_F(session, full_memory_has_no_fragmentation)
{
	struct rt_event ev = {
		.kind = RT_EV_MEMORY, .device = 2, .core = -1, .ts_ns = 5,
		.value = { 1000, 0, 0, 0 },
	};
	yajl_val m;

	rt_profile_event(&self->c, &ev);
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	m = find(self->root, "memory", "C", 3);
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, get_arg(m, "external_fragmentation"));
	ASSERT_STREQ("vtpu device 2",
		     meta_name(self->root, "process_name", 3, 0));
}

TEST_F(session, name_is_copied)
{
	char name[16] = "conv.1";
	struct rt_event ev = {
		.kind = RT_EV_OP, .device = 0, .core = 0, .name = name,
	};

	rt_profile_event(&self->c, &ev);
	snprintf(name, sizeof(name), "clobbered");
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_NE(NULL, find(self->root, "conv.1", "X", 1));
}

TEST_F(session, invalid_utf8_name_keeps_json_valid)
{
	struct rt_event ev = {
		.kind = RT_EV_OP, .device = 0, .core = 0, .name = "bad\xff\xfe",
	};

	rt_profile_event(&self->c, &ev);
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_NE(NULL, self->root);
	ASSERT_EQ(1, count_events(self->root));
}

TEST_F(session, second_start_is_busy)
{
	struct vtpu_profile *q = (struct vtpu_profile *)&q;

	ASSERT_EQ(-EBUSY, vtpu_profile_start(&self->c, &q));
	ASSERT_EQ(NULL, q);
	ASSERT_EQ(self->p, self->c.profile);
	/* once stopped, the client takes a new session */
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	ASSERT_EQ(NULL, self->c.profile);
	ASSERT_EQ(0, vtpu_profile_start(&self->c, &q));
	vtpu_profile_destroy(q);
	ASSERT_EQ(NULL, self->c.profile);
}

TEST_F(session, events_outside_the_session_are_dropped)
{
	struct rt_event ev = { .kind = RT_EV_SUBMIT, .device = 0, .core = -1 };
	struct vtpu_client other;
	struct stat st;

	memset(&other, 0, sizeof(other));
	other.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	rt_profile_event(&other, &ev);		/* no session: a no-op */
	rt_profile_event(&self->c, &ev);
	ASSERT_EQ(0, vtpu_profile_stop(self->p, "/dev/null"));
	/* Written to, not renamed over (as root, that replaced the node). */
	ASSERT_EQ(0, stat("/dev/null", &st));
	ASSERT_TRUE(S_ISCHR(st.st_mode));
	rt_profile_event(&self->c, &ev);	/* after stop: not kept */
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_EQ(1, count_events(self->root));
}

/* The common case must stay cheap: no session, no lock taken. */
TEST(no_session_takes_no_lock)
{
	struct rt_event ev = { .kind = RT_EV_OP, .device = 0, .core = 0 };
	struct vtpu_client c;

	memset(&c, 0, sizeof(c));
	c.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	ASSERT_EQ(0, pthread_mutex_lock(&c.lock));
	rt_profile_event(&c, &ev);	/* would deadlock if it locked */
	ASSERT_EQ(0, pthread_mutex_unlock(&c.lock));
	ASSERT_EQ(NULL, c.profile);
}

#define THREADS		4
#define PER_THREAD	5000

struct feeder {
	struct vtpu_client *c;
	int core;
};

static void *feed_thread(void *arg)
{
	struct feeder *f = arg;
	char name[32];

	for (int i = 0; i < PER_THREAD; i++) {
		struct rt_event ev = {
			.kind = RT_EV_OP, .device = 0, .core = f->core,
			.ts_ns = 1000 * (uint64_t)i, .dur_ns = 500,
			.name = name, .value = { i },
		};

		/* a fresh name each time: the copy must not be shared */
		snprintf(name, sizeof(name), "op%d.%d", f->core, i);
		rt_profile_event(f->c, &ev);
	}
	return NULL;
}

TEST_F(session, four_threads_at_once_lose_nothing)
{
	struct feeder f[THREADS];
	pthread_t t[THREADS];
	char last[32];

	for (int i = 0; i < THREADS; i++) {
		f[i] = (struct feeder){ .c = &self->c, .core = i };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, feed_thread, &f[i]));
	}
	for (int i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_join(t[i], NULL));
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_NE(NULL, self->root);
	ASSERT_EQ(THREADS * PER_THREAD, count_events(self->root));
	for (int i = 0; i < THREADS; i++) {
		snprintf(last, sizeof(last), "op%d.%d", i, PER_THREAD - 1);
		ASSERT_NE(NULL, find(self->root, last, "X", 1));
		ASSERT_NE(NULL, meta_name(self->root, "thread_name", 1, i + 1));
	}
}

/* Stopping while threads still record: no crash, a valid trace. */
TEST_F(session, stop_races_with_recording)
{
	struct feeder f[THREADS];
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++) {
		f[i] = (struct feeder){ .c = &self->c, .core = i };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, feed_thread, &f[i]));
	}
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	for (int i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_join(t[i], NULL));
	self->root = load(self->path);
	ASSERT_NE(NULL, self->root);
	ASSERT_GE(THREADS * PER_THREAD, count_events(self->root));
}

TEST_F(session, hundred_thousand_events_stream_out)
{
	struct stat sb;

	for (int i = 0; i < 100000; i++) {
		struct rt_event ev = {
			.kind = i % 10 ? RT_EV_OP : RT_EV_JOB, .device = i % 3,
			.core = i % 4, .ts_ns = 1000ull * i, .dur_ns = 900,
			.name = i % 10 ? "fused_elementwise" : "step",
			.value = { i },
		};

		rt_profile_event(&self->c, &ev);
	}
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	ASSERT_EQ(0, stat(self->path, &sb));
	ASSERT_LT(100000 * 100, sb.st_size);	/* over 100 bytes each */
	ASSERT_EQ(100000, stream_count(self->path));
}

TEST_F(session, missing_directory_fails_without_a_file)
{
	char bad[160];

	feed_every_kind(&self->c);
	snprintf(bad, sizeof(bad), "%s/no/such/trace.json", self->dir);
	ASSERT_EQ(-ENOENT, vtpu_profile_stop(self->p, bad));
	ASSERT_NE(NULL, strstr(last_error, bad));
	ASSERT_EQ(0, dir_entries(self->dir));
}

TEST_F(session, failed_rename_leaves_no_partial_file)
{
	char sub[160];

	feed_every_kind(&self->c);
	/* the temp file gets written, then rename() onto a directory fails */
	snprintf(sub, sizeof(sub), "%s/d", self->dir);
	ASSERT_EQ(0, mkdir(sub, 0755));
	ASSERT_EQ(-EISDIR, vtpu_profile_stop(self->p, sub));
	ASSERT_EQ(1, dir_entries(self->dir));	/* only d */
	ASSERT_EQ(0, dir_entries(sub));
	/* the events are kept: stopping again to a good path works */
	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	self->root = load(self->path);
	ASSERT_EQ(9, count_events(self->root));
}

TEST_F(session, write_error_fails_without_a_file)
{
	struct rlimit small = { 4096, 4096 };

	for (int i = 0; i < 100; i++)
		feed_every_kind(&self->c);
	/*
	 * A file size limit makes a write fail midway (EFBIG instead of
	 * SIGXFSZ once that is ignored); the harness runs each test in its
	 * own process, so the limit ends with it.
	 */
	signal(SIGXFSZ, SIG_IGN);
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &small));
	ASSERT_EQ(-EFBIG, vtpu_profile_stop(self->p, self->path));
	ASSERT_EQ(0, dir_entries(self->dir));
}

TEST_F(session, trace_file_is_readable_by_others)
{
	struct stat sb;

	ASSERT_EQ(0, vtpu_profile_stop(self->p, self->path));
	ASSERT_EQ(0, stat(self->path, &sb));
	ASSERT_EQ(0644, sb.st_mode & 0777);
}

TEST_F(session, destroy_without_stop_detaches)
{
	struct vtpu_profile *q;

	vtpu_profile_destroy(self->p);
	self->p = NULL;
	ASSERT_EQ(NULL, self->c.profile);
	ASSERT_EQ(0, vtpu_profile_start(&self->c, &q));
	vtpu_profile_destroy(q);
}

TEST_HARNESS_MAIN
