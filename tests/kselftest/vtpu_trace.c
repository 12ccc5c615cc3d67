// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: observability of jobs. The vtpu tracepoints report each
 * job's life (vtpu_job_submit, vtpu_job_run, vtpu_job_timeout,
 * vtpu_job_done) under the ids userspace knows: fdinfo's drm-client-id
 * and the job id SUBMIT returned. fdinfo reports each file's time on the
 * cores (drm-engine-vtpu, drm-engine-capacity-vtpu), per
 * Documentation/gpu/drm-usage-stats.rst.
 */
#include <sys/mount.h>

#include "vtpu_job_util.h"

#include "kselftest_harness.h"

/* tracefs: its own mount, or the automount under debugfs, or mount it. */
static const char *tracefs(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[PATH_MAX];

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/events", dirs[i]);
		if (!access(path, F_OK))
			return dirs[i];
	}
	if (!mount("nodev", dirs[0], "tracefs", 0, NULL))
		return dirs[0];
	return NULL;
}

static int write_file(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		ret = -errno;
	close(fd);
	return ret;
}

/* The trace buffer, malloc'd and NUL-terminated, or NULL. */
static char *read_trace(const char *dir)
{
	char path[PATH_MAX];
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/trace", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				break;
			buf = nb;
		}
	}
	buf[len] = 0;
	close(fd);
	return buf;
}

/* The line of @event naming @client and @job, or NULL. */
static const char *find_event(const char *trace, const char *event,
			      __u64 client, __u64 job)
{
	char key[128], ids[96];

	snprintf(key, sizeof(key), " %s: ", event);
	snprintf(ids, sizeof(ids), "client=%llu job=%llu ",
		 (unsigned long long)client, (unsigned long long)job);
	for (const char *p = strstr(trace, key); p; p = strstr(p + 1, key)) {
		const char *eol = strchr(p, '\n');
		const char *hit = strstr(p, ids);

		if (hit && (!eol || hit < eol))
			return p;
	}
	return NULL;
}

/* A number after @field= on the line at @line, or -1. */
static long long field(const char *line, const char *name)
{
	char key[32];
	const char *p, *eol = strchr(line, '\n');

	snprintf(key, sizeof(key), " %s=", name);
	p = strstr(line, key);
	if (!p || (eol && p > eol))
		return -1;
	return strtoll(p + strlen(key), NULL, 10);
}

/* An n x n, @count-MATMUL job with a profile; its id in @id. */
static int submit_spin(int fd, unsigned int n, unsigned int count,
		       struct vtpu_buf *bufs, __u64 *id)
{
	struct drm_vtpu_binding b;
	size_t size;
	void *p = vtpu_prog_spin(n, count, &size);
	int ret;

	if (!p)
		return -ENOMEM;
	ret = vtpu_buf_prog(fd, p, size, &bufs[0]);
	free(p);
	if (!ret)
		ret = vtpu_buf_new(fd, n * n * 4, DRM_VTPU_PLACEMENT_AUTO,
				   &bufs[1]);
	if (!ret)
		ret = vtpu_buf_new(fd, 4096, DRM_VTPU_PLACEMENT_HOST, &bufs[2]);
	if (ret)
		return ret;
	b = (struct drm_vtpu_binding){ bufs[1].handle, DRM_VTPU_BIND_WRITE,
				       0, bufs[1].size };

	struct vtpu_submit_args a = {
		.prog = &bufs[0], .prog_size = size, .bind = &b, .nbind = 1,
		.profile = bufs[2].handle,
	};

	return vtpu_submit(fd, &a, id);
}

FIXTURE(trace) {
	const char *dir;
	int fd;
	__u64 client;
};

FIXTURE_SETUP(trace)
{
	self->fd = vtpu_open(0);
	ASSERT_LE(0, self->fd) TH_LOG("no vtpu device");
	self->client = vtpu_fdinfo_value(self->fd, "drm-client-id");
	ASSERT_LT(0, (long long)self->client);
	self->dir = tracefs();
	ASSERT_NE(NULL, self->dir) TH_LOG("no tracefs: %s", strerror(errno));
	/*
	 * No command-name recording: with it, enabling any event hooks the
	 * scheduler's tracepoints, and patching trace_sched_wakeup while
	 * other CPUs run it once ended a debug-kernel run under TCG in an
	 * int3 Oops. The checks here read no command names.
	 */
	write_file(self->dir, "options/record-cmd", "0");
	/* The module's events exist while it is loaded. */
	ASSERT_EQ(0, write_file(self->dir, "events/vtpu/enable", "1"))
		TH_LOG("cannot enable events/vtpu");
	ASSERT_EQ(0, write_file(self->dir, "trace", ""));
}

FIXTURE_TEARDOWN(trace)
{
	if (self->dir)
		write_file(self->dir, "events/vtpu/enable", "0");
	close(self->fd);
}

TEST_F(trace, a_job_is_submitted_run_and_done)
{
	struct vtpu_buf bufs[3];
	struct drm_vtpu_profile *prof;
	const char *sub, *run, *done;
	int status = -1;
	char *trace;
	__u64 id;

	ASSERT_EQ(0, submit_spin(self->fd, 32, 4, bufs, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 60, &status));
	ASSERT_EQ(0, status);
	prof = bufs[2].map;

	trace = read_trace(self->dir);
	ASSERT_NE(NULL, trace);
	sub = find_event(trace, "vtpu_job_submit", self->client, id);
	run = find_event(trace, "vtpu_job_run", self->client, id);
	done = find_event(trace, "vtpu_job_done", self->client, id);
	ASSERT_NE(NULL, sub) TH_LOG("no submit event in:\n%s", trace);
	ASSERT_NE(NULL, run) TH_LOG("no run event in:\n%s", trace);
	ASSERT_NE(NULL, done) TH_LOG("no done event in:\n%s", trace);
	/* In that order, and saying what the profile says. */
	EXPECT_LT(sub, run);
	EXPECT_LT(run, done);
	EXPECT_NE(NULL, strstr(sub, "via=ioctl"));
	EXPECT_EQ(1, field(sub, "bindings"));
	/* A straight-line program executes each instruction once. */
	EXPECT_EQ(prof->insns, field(sub, "insns"));
	EXPECT_EQ(prof->core, field(run, "core"));
	EXPECT_EQ(0, field(done, "status"));
	EXPECT_EQ(prof->insns, field(done, "insns"));
	EXPECT_EQ(prof->end - prof->start, field(done, "run_ns"));
	EXPECT_EQ(prof->start - prof->queued, field(run, "queued_ns"));
	EXPECT_EQ(NULL, find_event(trace, "vtpu_job_timeout", self->client, id));
	free(trace);
	for (int i = 0; i < 3; i++)
		vtpu_buf_free(self->fd, &bufs[i]);
}

TEST_F(trace, a_runaway_job_traces_its_timeout)
{
	struct vtpu_buf bufs[3];
	struct drm_vtpu_profile *prof;
	const char *to, *done;
	int status = 0;
	char *trace;
	__u64 id;

	ASSERT_EQ(0, submit_spin(self->fd, 256, 4000, bufs, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 120, &status));
	ASSERT_EQ(-ETIMEDOUT, status);
	prof = bufs[2].map;

	trace = read_trace(self->dir);
	ASSERT_NE(NULL, trace);
	to = find_event(trace, "vtpu_job_timeout", self->client, id);
	done = find_event(trace, "vtpu_job_done", self->client, id);
	ASSERT_NE(NULL, to) TH_LOG("no timeout event in:\n%s", trace);
	ASSERT_NE(NULL, done);
	EXPECT_LT(to, done);
	EXPECT_EQ(prof->insns, field(to, "insns"));
	EXPECT_EQ(-ETIMEDOUT, field(done, "status"));
	free(trace);
	for (int i = 0; i < 3; i++)
		vtpu_buf_free(self->fd, &bufs[i]);
}

TEST(fdinfo_counts_engine_time_per_file)
{
	int fd = vtpu_open(0), other = vtpu_open(0);
	struct drm_vtpu_query q;
	struct vtpu_buf bufs[2][3];
	__u64 run_ns = 0, id;
	long long after;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, vtpu_query(fd, &q));
	EXPECT_EQ(q.core_count, vtpu_fdinfo_value(fd, "drm-engine-capacity-vtpu"));
	EXPECT_EQ(0, vtpu_fdinfo_value(fd, "drm-engine-vtpu"));
	EXPECT_EQ(0, vtpu_fdinfo_value(other, "drm-engine-vtpu"));

	for (int i = 0; i < 2; i++) {
		struct drm_vtpu_profile *p;
		int status = -1;

		ASSERT_EQ(0, submit_spin(fd, 64, 8, bufs[i], &id));
		ASSERT_EQ(0, vtpu_job_wait(fd, id, 60, &status));
		ASSERT_EQ(0, status);
		p = bufs[i][2].map;
		ASSERT_LT(p->start, p->end);
		run_ns += p->end - p->start;
	}
	/* Exactly the two jobs' time on the cores, and only in this file. */
	after = vtpu_fdinfo_value(fd, "drm-engine-vtpu");
	EXPECT_EQ((long long)run_ns, after);
	EXPECT_EQ(0, vtpu_fdinfo_value(other, "drm-engine-vtpu"));
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 3; k++)
			vtpu_buf_free(fd, &bufs[i][k]);
	close(other);
	close(fd);
}

TEST_HARNESS_MAIN
