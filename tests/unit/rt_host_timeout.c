// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the host backend's job timeout. A program whose loop
 * never ends (ISA version 4 branches) must not hang the process that
 * runs it: like vtpu.ko's cores, the host backend ends a job that runs
 * past the timeout with -ETIMEDOUT, VTPU_HOST_JOB_TIMEOUT_MS milliseconds
 * (default 10000, vtpu.ko's job_timeout_ms), and runs the next job.
 */
#include <unistd.h>

#define RT_TEST_OPS	(&rt_backend_host)
#include "rt_backend_test.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#define TIMEOUT_MS	200

/* Loads and runs @prog (no bindings) once; the job's status. */
static int run_prog(struct vtpu_device *d, const void *prog, size_t size,
		    uint64_t *ns)
{
	struct rt_prog *p = NULL;
	struct rt_job job;
	int ret;

	ret = ops->prog_load(d, prog, size, &p);
	if (ret)
		return ret;
	job_init(&job, d);
	job.prog = p;
	ret = run_one(d, &job);
	if (!ret)
		ret = job.status;
	*ns = job.done_ns - job.submit_ns;
	job_fini(&job);
	ops->prog_unload(d, p);
	return ret;
}

TEST(endless_loop_times_out_and_the_device_goes_on)
{
	struct vtpu_client *c;
	struct vtpu_device *d;
	struct rt_job job;
	struct mm m;
	size_t size = 0;
	uint64_t ns = 0;
	void *prog;
	int ret;

	ASSERT_EQ(0, setenv("VTPU_HOST_JOB_TIMEOUT_MS", "200", 1));
	c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];
	prog = vtpu_prog_forever(&size);
	ASSERT_NE(NULL, prog);
	EXPECT_EQ(-ETIMEDOUT, run_prog(d, prog, size, &ns));
	TH_LOG("endless loop stopped after %llu ms",
	       (unsigned long long)(ns / 1000000));
	EXPECT_LE(TIMEOUT_MS * 1000000ull, ns);
	EXPECT_GT(10 * TIMEOUT_MS * 1000000ull, ns);
	free(prog);

	/* The device goes on: the next job runs and is right. */
	ASSERT_EQ(0, mm_setup(d, &m, 3));
	mm_job(&job, d, &m, false);
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(0, job.status);
	EXPECT_EQ(0, mm_check(d, &m));
	job_fini(&job);
	mm_teardown(d, &m);
	client_close(c);
	unsetenv("VTPU_HOST_JOB_TIMEOUT_MS");
}

TEST(timeout_must_be_milliseconds_in_the_drivers_range)
{
	static const char *const bad[] = {
		"0", "9", "600001", "-5", "1e3", "100ms", " 100",
		"99999999999999999999",
	};
	struct vtpu_client *c;
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ASSERT_EQ(0, setenv("VTPU_HOST_JOB_TIMEOUT_MS", bad[i], 1));
		c = client_open(1, 0, &ret);
		EXPECT_EQ(-EINVAL, ret) TH_LOG("VTPU_HOST_JOB_TIMEOUT_MS=%s",
					       bad[i]);
		client_close(c);
	}
	ASSERT_EQ(0, setenv("VTPU_HOST_JOB_TIMEOUT_MS", "10", 1));
	c = client_open(1, 0, &ret);
	EXPECT_EQ(0, ret);
	client_close(c);
	unsetenv("VTPU_HOST_JOB_TIMEOUT_MS");
}

TEST_HARNESS_MAIN
