// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu-bench submit: job submission throughput and latency for an
 * END-only program, through the ioctls and through io_uring, measured in
 * the same run so that the ratios mean something on a noisy machine.
 *
 *   ioctl-wait       one SUBMIT ioctl, then JOB_WAIT, per job
 *   ioctl-pipelined  SUBMIT ioctls back to back, then the waits
 *   uring-bB         B SUBMIT commands per io_uring_enter(), which also
 *                    sleeps until the previous B have completed: two
 *                    batches in flight, one system call and one wakeup
 *                    per batch (what a pipelined io_uring user does)
 *
 * `vtpu-bench submit [JOBS [MODE]]`: JOBS per round (default 1024), and
 * only MODE (say uring-b32) when profiling one path.
 *
 * Every job names a program object (DRM_VTPU_SUBMIT_PROGRAM) when the
 * kernel has them, else the program buffer (uAPI 1.1).
 *
 * Latency is per job: from its submission to the moment its completion
 * is seen. CPU is what the submitting process spends per job, in user
 * space and in system calls (the kernel's work for it, SUBMIT included;
 * not the cores' workers): what a batch of io_uring commands saves the
 * application even when the device, not submission, limits the rate. Modes run interleaved in rounds, and each figure is the
 * median over rounds, so drift in machine load hits all modes alike.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "vtpu_asm.h"
#include "vtpu_submit.h"
#include "vtpu_job_util.h"

#define ROUNDS		7
#define MAX_JOBS	4096

struct mode {
	const char *name;
	int batch;		/* 0: ioctl-wait, -1: ioctl-pipelined */
	double rate[ROUNDS];	/* jobs/s of each round */
	double lat[ROUNDS];	/* median latency (us) of each round */
	double cpu[ROUNDS];	/* process CPU time per job (us) of each round */
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double lat_us[MAX_JOBS];

static int run_ioctl_wait(int fd, const struct drm_vtpu_submit *req, int n,
			  double *rate, double *lat)
{
	double t0 = bench_now(), t;
	int i, ret, status;

	for (i = 0; i < n; i++) {
		struct drm_vtpu_submit s = *req;
		struct drm_vtpu_job_wait w = { 0 };

		t = bench_now();
		ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_SUBMIT, &s);
		if (ret)
			return ret;
		w.job_id = s.job_id;
		w.timeout_ns = INT64_MAX;
		ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_JOB_WAIT, &w);
		status = w.status;
		if (ret || status)
			return ret ? ret : status;
		lat_us[i] = (bench_now() - t) * 1e6;
	}
	*rate = n / (bench_now() - t0);
	*lat = bench_median(lat_us, n);
	return 0;
}

static int run_ioctl_pipelined(int fd, const struct drm_vtpu_submit *req,
			       int n, double *rate, double *lat)
{
	static double start[MAX_JOBS];
	static __u64 ids[MAX_JOBS];
	double t0 = bench_now();
	int i, ret;

	for (i = 0; i < n; i++) {
		struct drm_vtpu_submit s = *req;

		start[i] = bench_now();
		ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_SUBMIT, &s);
		if (ret)
			return ret;
		ids[i] = s.job_id;
	}
	for (i = 0; i < n; i++) {
		struct drm_vtpu_job_wait w = {
			.job_id = ids[i], .timeout_ns = INT64_MAX,
		};

		ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_JOB_WAIT, &w);
		if (ret || w.status)
			return ret ? ret : w.status;
		lat_us[i] = (bench_now() - start[i]) * 1e6;
	}
	*rate = n / (bench_now() - t0);
	*lat = bench_median(lat_us, n);
	return 0;
}

/* Reaps until at most @left are owed; latencies from each job's start. */
static int reap_until(struct vtpu_sq *sq, unsigned int left,
		      const double *start, int *nlat)
{
	struct vtpu_completion done[64];
	int k, ret;

	while (vtpu_sq_outstanding(sq) > left) {
		ret = vtpu_sq_reap(sq, done, 64,
				   vtpu_sq_outstanding(sq) - left);
		if (ret <= 0)
			return ret ? ret : -EIO;
		for (k = 0; k < ret; k++) {
			if (done[k].status)
				return done[k].status;
			lat_us[(*nlat)++] =
				(bench_now() - start[done[k].user_data]) * 1e6;
		}
	}
	return 0;
}

static int run_uring(struct vtpu_sq *sq, const struct drm_vtpu_submit *req,
		     int n, int batch, double *rate, double *lat)
{
	static double start[MAX_JOBS];
	double t0 = bench_now();
	int i, k, ret, nlat = 0;

	for (i = 0; i < n; i += batch) {
		for (k = 0; k < batch; k++) {
			start[i + k] = bench_now();
			ret = vtpu_sq_queue(sq, req, i + k);
			if (ret)
				return ret;
		}
		/* submits this batch, waits for the one before */
		ret = reap_until(sq, batch, start, &nlat);
		if (ret)
			return ret;
	}
	ret = reap_until(sq, 0, start, &nlat);
	if (ret)
		return ret;
	*rate = nlat / (bench_now() - t0);
	*lat = bench_median(lat_us, nlat);
	return 0;
}

static void *end_only_program(size_t *size)
{
	struct vtpu_asm as;
	void *p;

	vtpu_asm_init(&as, 0, 0);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, size);
	vtpu_asm_free(&as);
	return p;
}

/* The request every job makes: a program object's, when there are any. */
static int make_request(int fd, const void *prog, size_t size,
			struct vtpu_buf *buf, struct drm_vtpu_submit *req)
{
	struct drm_vtpu_program_create cr = {
		.program = (__u64)(uintptr_t)prog, .size = size,
	};
	struct drm_vtpu_query q = { 0 };
	int ret;

	memset(req, 0, sizeof(*req));
	if (!vtpu_ioctl(fd, DRM_IOCTL_VTPU_QUERY, &q) &&
	    (q.features & DRM_VTPU_FEATURE_PROGRAM)) {
		ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_PROGRAM_CREATE, &cr);
		req->flags = DRM_VTPU_SUBMIT_PROGRAM;
		req->program_handle = cr.handle;
		return ret;
	}
	ret = vtpu_buf_prog(fd, prog, size, buf);
	req->program_handle = buf->handle;
	req->program_size = size;
	return ret;
}

int bench_submit(int argc, char **argv)
{
	struct mode modes[] = {
		{ .name = "ioctl-wait", .batch = 0 },
		{ .name = "ioctl-pipelined", .batch = -1 },
		{ .name = "uring-b1", .batch = 1 },
		{ .name = "uring-b8", .batch = 8 },
		{ .name = "uring-b32", .batch = 32 },
	};
	int jobs = argc > 0 ? atoi(argv[0]) : 1024;
	/* vtpu-bench submit JOBS MODE: that mode alone (for profiling) */
	const char *only = argc > 1 ? argv[1] : NULL;
	struct drm_vtpu_submit req;
	struct vtpu_buf prog;
	double rate[5], lat[5], cpu[5], c0;
	struct vtpu_sq sq;
	unsigned int m;
	size_t size;
	int fd, r, ret;
	void *p;

	if (jobs < 32 || jobs > MAX_JOBS || jobs % 32) {
		fprintf(stderr, "vtpu-bench submit: JOBS must be a multiple of 32 in 32..%d\n",
			MAX_JOBS);
		return 2;
	}
	fd = vtpu_open(0);
	if (fd < 0) {
		fprintf(stderr, "vtpu-bench submit: no vtpu device (%s); load vtpu.ko, or run `make bench`, which boots one in QEMU\n",
			strerror(-fd));
		return 1;
	}
	memset(&prog, 0, sizeof(prog));
	p = end_only_program(&size);
	if (!p || make_request(fd, p, size, &prog, &req)) {
		fprintf(stderr, "vtpu-bench submit: cannot load the program\n");
		return 1;
	}
	free(p);
	ret = vtpu_sq_init(&sq, fd, 64, VTPU_SQ_URING);
	if (ret) {
		fprintf(stderr, "vtpu-bench submit: io_uring SUBMIT unavailable: %s\n",
			strerror(-ret));
		return 1;
	}

	/* A warm-up round, not counted, then the measured rounds. */
	for (r = -1; r < ROUNDS; r++) {
		for (m = 0; m < 5; m++) {
			if (only && strcmp(only, modes[m].name))
				continue;
			double *rt = r < 0 ? &rate[m] : &modes[m].rate[r];
			double *lt = r < 0 ? &lat[m] : &modes[m].lat[r];
			double *ct = r < 0 ? &cpu[m] : &modes[m].cpu[r];

			c0 = cpu_now();
			if (modes[m].batch == 0)
				ret = run_ioctl_wait(fd, &req, jobs, rt, lt);
			else if (modes[m].batch < 0)
				ret = run_ioctl_pipelined(fd, &req, jobs, rt, lt);
			else
				ret = run_uring(&sq, &req, jobs, modes[m].batch,
						rt, lt);
			if (ret) {
				fprintf(stderr, "vtpu-bench submit: %s failed: %s\n",
					modes[m].name, strerror(-ret));
				return 1;
			}
			*ct = (cpu_now() - c0) * 1e6 / jobs;
		}
	}
	for (m = 0; m < 5; m++) {
		rate[m] = bench_median(modes[m].rate, ROUNDS);
		lat[m] = bench_median(modes[m].lat, ROUNDS);
		cpu[m] = bench_median(modes[m].cpu, ROUNDS);
		printf("submit/%s: %.0f jobs/s\n", modes[m].name, rate[m]);
		printf("submit/%s-latency: %.1f us\n", modes[m].name, lat[m]);
		printf("submit/%s-cpu: %.2f us/job\n", modes[m].name, cpu[m]);
	}
	printf("submit/uring-b32-vs-ioctl-wait: %.2f x\n", rate[4] / rate[0]);
	printf("submit/uring-b32-vs-ioctl-pipelined: %.2f x\n",
	       rate[4] / rate[1]);
	printf("submit/uring-b32-vs-ioctl-pipelined-cpu: %.2f x\n",
	       cpu[1] / cpu[4]);

	vtpu_sq_fini(&sq);
	vtpu_buf_free(fd, &prog);
	close(fd);
	return 0;
}
