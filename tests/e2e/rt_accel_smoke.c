// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: smoke test of the runtime's accel backend
 * (runtime/backend_accel.c) on a VM with vtpu.ko loaded, through its
 * struct rt_backend_ops table: devices found under /sys/class/accel,
 * zeroed and mapped GEM buffers with the driver's placements, matmul
 * jobs whose output and profile come back, an invalid program that ends
 * its job with -EINVAL, batches waited out of order, waits with
 * timeouts, and threads sharing one device's queue (the leader/follower
 * reaping). Every test runs on io_uring and on the ioctl fallback
 * (VTPU_ACCEL_SQ) with program objects, and on io_uring with uAPI 1.1's
 * program copied per SUBMIT (VTPU_ACCEL_PROGRAM=copy).
 *
 * Checks the device figures against VTPU_NUM_DEVICES, VTPU_NUM_CORES,
 * VTPU_HBM_MIB and VTPU_VMEM_KIB when they are set (tools/kselftest.sh
 * sets them from the module parameters); skips when there is no vtpu
 * device, so the host half of `make e2e` runs it harmlessly.
 *
 * Built by the e2e rule (libvtpu.a); the front end's helpers it needs
 * are weak stand-ins in rt_backend_test.h.
 * Run in the VM: tools/vm/run.sh --module driver/vtpu.ko \
 *	--params "num_devices=2 num_cores=2 hbm_mib=32 vmem_kib=1024 \
 *	job_timeout_ms=2000" -- rt_accel_smoke
 */
#include <stdlib.h>
#include <unistd.h>

#define RT_TEST_OPS	(&rt_backend_accel)
#include "rt_backend_test.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

/* A module parameter the VM was told (VTPU_<PARAM>), or 0 if unknown. */
static unsigned long env_ul(const char *name)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 0) : 0;
}

FIXTURE(accel) {
	struct vtpu_client *c;
	struct vtpu_device *d;
};

FIXTURE_VARIANT(accel) {
	const char *sq;
	const char *program;	/* VTPU_ACCEL_PROGRAM */
};

FIXTURE_VARIANT_ADD(accel, uring) { .sq = "uring", .program = "auto" };
FIXTURE_VARIANT_ADD(accel, ioctl) { .sq = "ioctl", .program = "auto" };
/* uAPI 1.1's path: the program copied and validated per SUBMIT */
FIXTURE_VARIANT_ADD(accel, uring_copy) { .sq = "uring", .program = "copy" };

FIXTURE_SETUP(accel)
{
	int ret;

	setenv("VTPU_ACCEL_SQ", variant->sq, 1);
	setenv("VTPU_ACCEL_PROGRAM", variant->program, 1);
	self->c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, self->c);
	if (ret == -ENODEV)
		SKIP(return, "no vtpu device");
	ASSERT_EQ(0, ret);
	ASSERT_LT(0, self->c->ndevices);
	self->d = self->c->devices[0];
}

FIXTURE_TEARDOWN(accel)
{
	client_close(self->c);
}

TEST_F(accel, devices)
{
	unsigned long ndev = env_ul("VTPU_NUM_DEVICES");
	unsigned long cores = env_ul("VTPU_NUM_CORES");
	unsigned long vmem = env_ul("VTPU_VMEM_KIB") * 1024;
	unsigned long hbm = env_ul("VTPU_HBM_MIB") * MiB;
	int i;

	if (ndev)
		EXPECT_EQ((int)ndev, self->c->ndevices);
	for (i = 0; i < self->c->ndevices; i++) {
		struct vtpu_device *d = self->c->devices[i];
		struct vtpu_device_info info = { 0 };

		EXPECT_EQ(0, strncmp(d->name, "accel", 5));
		EXPECT_EQ(i, d->index);
		EXPECT_LT(0, d->cores);
		if (cores)
			EXPECT_EQ((int)cores, d->cores);
		if (vmem)
			EXPECT_EQ(vmem, d->vmem_size);
		ASSERT_EQ(0, ops->query(d, &info));
		EXPECT_STREQ(d->name, info.name);
		if (hbm)
			EXPECT_EQ(hbm, info.hbm_total);
		EXPECT_LE(info.hbm_free, info.hbm_total);
		EXPECT_LE(info.hbm_largest_free, info.hbm_free);
		EXPECT_EQ(d->cores, info.cores);
	}
}

TEST_F(accel, buffers)
{
	struct vtpu_device_info before, info;
	struct rt_bo *h = NULL, *o = NULL, *a = NULL, *x = NULL;
	enum vtpu_placement pl;
	const uint8_t *p;
	uint64_t i, hbm;

	ASSERT_EQ(0, ops->query(self->d, &before));
	ASSERT_EQ(0, ops->bo_create(self->d, 100000, VTPU_PLACE_HBM, &h, &pl));
	EXPECT_EQ(VTPU_PLACE_HBM, pl);
	ASSERT_EQ(0, ops->bo_create(self->d, 5000, VTPU_PLACE_HOST, &o, &pl));
	EXPECT_EQ(VTPU_PLACE_HOST, pl);
	p = ops->bo_map(self->d, h);
	ASSERT_NE(NULL, p);
	for (i = 0; i < 100000 && !p[i]; i++)
		;
	EXPECT_EQ(100000, i);
	memset((void *)p, 0x11, 100000);
	p = ops->bo_map(self->d, o);
	for (i = 0; i < 5000 && !p[i]; i++)
		;
	EXPECT_EQ(5000, i);
	ASSERT_EQ(0, ops->query(self->d, &info));
	EXPECT_GE(before.hbm_free - info.hbm_free, 100000);

	/* Fill what is left of HBM: AUTO falls back, HBM is -ENOSPC. */
	hbm = info.hbm_largest_free;
	if (hbm) {
		ASSERT_EQ(0, ops->bo_create(self->d, hbm, VTPU_PLACE_HBM, &x,
					    &pl));
	}
	ASSERT_EQ(0, ops->bo_create(self->d, 4096, VTPU_PLACE_AUTO, &a, &pl));
	EXPECT_EQ(VTPU_PLACE_HOST, pl);
	{
		struct rt_bo *no = NULL;

		EXPECT_EQ(-ENOSPC, ops->bo_create(self->d, 4096,
						  VTPU_PLACE_HBM, &no, &pl));
		EXPECT_EQ(NULL, no);
	}
	ops->bo_destroy(self->d, x);
	ops->bo_destroy(self->d, a);
	ops->bo_destroy(self->d, h);
	ops->bo_destroy(self->d, o);
	ASSERT_EQ(0, ops->query(self->d, &info));
	EXPECT_EQ(before.hbm_free, info.hbm_free);
}

TEST_F(accel, program_and_profile)
{
	struct drm_vtpu_profile *p;
	struct rt_job job;
	struct mm m;

	ASSERT_EQ(0, mm_setup(self->d, &m, 1));
	p = ops->bo_map(self->d, m.prof);
	mm_job(&job, self->d, &m, true);
	ASSERT_EQ(0, run_one(self->d, &job));
	EXPECT_TRUE(job.done);
	EXPECT_EQ(0, job.status);
	EXPECT_EQ(0, mm_check(self->d, &m));
	EXPECT_NE(0, job.submit_ns);
	EXPECT_GE(job.done_ns, job.submit_ns);
	EXPECT_EQ(0, p->status);
	EXPECT_EQ(7, p->insns);
	EXPECT_EQ(2ull * M * NN * K, p->flops);
	ASSERT_EQ(2, p->trace_count);
	EXPECT_EQ(0, p->trace[0].id);
	EXPECT_EQ(1, p->trace[1].id);
	EXPECT_LE(p->start, p->end);
	EXPECT_LT(p->start, (uint64_t)-1);
	TH_LOG("device_ns %llu (profile %llu)",
	       (unsigned long long)job.device_ns,
	       (unsigned long long)(p->end - p->start));
	job_fini(&job);
	mm_teardown(self->d, &m);
}

TEST_F(accel, invalid_program)
{
	struct rt_prog *bad = NULL;
	struct rt_job job;
	uint8_t *prog;
	struct mm m;
	size_t size;

	ASSERT_EQ(0, mm_setup(self->d, &m, 2));
	prog = prog_matmul(&size);
	ASSERT_NE(NULL, prog);
	prog[size - 1] ^= 0x40;		/* checksum mismatch */
	if (!strcmp(variant->program, "copy")) {
		/* uAPI 1.1: loads, and its job is refused at SUBMIT */
		ASSERT_EQ(0, ops->prog_load(self->d, prog, size, &bad));
		mm_job(&job, self->d, &m, false);
		job.prog = bad;
		ASSERT_EQ(0, run_one(self->d, &job));
		EXPECT_TRUE(job.done);
		EXPECT_EQ(-EINVAL, job.status);
		job_fini(&job);
		ops->prog_unload(self->d, bad);
	} else {
		EXPECT_EQ(-EINVAL, ops->prog_load(self->d, prog, size, &bad));
		EXPECT_EQ(NULL, bad);
	}
	free(prog);

	/* Too few bindings for the program. */
	mm_job(&job, self->d, &m, false);
	job.nbind = 2;
	ASSERT_EQ(0, run_one(self->d, &job));
	EXPECT_EQ(-EINVAL, job.status);
	job_fini(&job);

	/* And the genuine one still runs. */
	mm_job(&job, self->d, &m, false);
	ASSERT_EQ(0, run_one(self->d, &job));
	EXPECT_EQ(0, job.status);
	EXPECT_EQ(0, mm_check(self->d, &m));
	job_fini(&job);
	mm_teardown(self->d, &m);
}

#define BATCH	32

TEST_F(accel, batch_out_of_order)
{
	struct rt_job *job = calloc(BATCH, sizeof(*job)), *jobs[BATCH];
	struct mm *m = calloc(BATCH, sizeof(*m));
	int i;

	ASSERT_NE(NULL, job);
	ASSERT_NE(NULL, m);
	for (i = 0; i < BATCH; i++) {
		ASSERT_EQ(0, mm_setup(self->d, &m[i], 100 + i));
		mm_job(&job[i], self->d, &m[i], i & 1);
		jobs[i] = &job[i];
	}
	job[5].nbind = 1;	/* one bad job among them */
	ASSERT_EQ(0, ops->submit(self->d, jobs, BATCH));
	for (i = BATCH - 1; i >= 0; i--) {
		ASSERT_EQ(0, ops->wait(self->d, &job[i], -1));
		EXPECT_TRUE(job[i].done);
		EXPECT_EQ(i == 5 ? -EINVAL : 0, job[i].status);
		if (i != 5)
			EXPECT_EQ(0, mm_check(self->d, &m[i]));
	}
	for (i = 0; i < BATCH; i++) {
		job_fini(&job[i]);
		mm_teardown(self->d, &m[i]);
	}
	free(job);
	free(m);
}

TEST_F(accel, wait_timeout)
{
	struct rt_prog *prog;
	struct rt_bo *out;
	enum vtpu_placement pl;
	struct rt_job job, *jobs[1] = { &job };
	/* ~0.4 s under TCG, well inside the 2 s job timeout */
	unsigned int n = 64, count = 100;
	size_t size;
	float *o;
	void *p;
	int ret;

	p = vtpu_prog_spin(n, count, &size);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, ops->prog_load(self->d, p, size, &prog));
	free(p);
	ASSERT_EQ(0, ops->bo_create(self->d, n * n * 4, VTPU_PLACE_AUTO, &out,
				    &pl));
	job_init(&job, self->d);
	job.prog = prog;
	job.nbind = 1;
	job.bind[0] = out;
	job.bind_size[0] = n * n * 4;
	job.bind_flags[0] = DRM_VTPU_BIND_WRITE;
	ASSERT_EQ(0, ops->submit(self->d, jobs, 1));
	ret = ops->wait(self->d, &job, 0);
	if (ret == 0)
		TH_LOG("the spin job ended before a zero-timeout wait");
	else
		EXPECT_EQ(-ETIME, ret);
	ret = ops->wait(self->d, &job, 1000000);	/* 1 ms */
	if (ret)
		EXPECT_EQ(-ETIME, ret);
	ASSERT_EQ(0, ops->wait(self->d, &job, -1));
	EXPECT_TRUE(job.done);
	EXPECT_EQ(0, job.status);
	o = ops->bo_map(self->d, out);
	EXPECT_EQ((float)count * n * 0.5f, o[0]);
	EXPECT_EQ((float)count * n * 0.5f, o[n * n - 1]);
	TH_LOG("spin job: %.1f ms on the core",
	       (double)job.device_ns / 1e6);
	job_fini(&job);
	ops->prog_unload(self->d, prog);
	ops->bo_destroy(self->d, out);
}

/* Threads submitting and waiting on one device: one reaps for all. */
struct thr {
	struct vtpu_device *d;
	int seed, iters, errors;
	bool timed;
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	int it;

	for (it = 0; it < t->iters; it++) {
		struct rt_job job, *jobs[1] = { &job };
		struct mm m;
		int ret;

		if (mm_setup(t->d, &m, t->seed + it)) {
			t->errors++;
			mm_teardown(t->d, &m);
			continue;
		}
		mm_job(&job, t->d, &m, it & 1);
		ret = ops->submit(t->d, jobs, 1);
		if (!ret) {
			/* Half the threads wait in short slices. */
			do {
				ret = ops->wait(t->d, &job,
						t->timed ? 200000 : -1);
			} while (ret == -ETIME);
		}
		if (ret || job.status == -EBUSY) {
			/* -EBUSY: too many un-waited jobs; not ours to fix */
			if (ret)
				t->errors++;
		} else if (job.status || mm_check(t->d, &m)) {
			t->errors++;
		}
		job_fini(&job);
		mm_teardown(t->d, &m);
	}
	return NULL;
}

TEST_F(accel, threads)
{
	pthread_t tid[8];
	struct thr t[8];
	int i;

	for (i = 0; i < 8; i++) {
		t[i] = (struct thr){
			.d = self->c->devices[i % self->c->ndevices],
			.seed = i * 1000, .iters = 40,
			.timed = i & 1,
		};
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, thr_main, &t[i]));
	}
	for (i = 0; i < 8; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(0, t[i].errors);
	}
}

/* Waiters on jobs another thread submitted, each reaping for the others. */
struct waiter {
	struct vtpu_device *d;
	struct rt_job *job;
	int first, step, n, errors;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	int i, ret;

	for (i = w->first; i < w->n; i += w->step) {
		do {
			ret = ops->wait(w->d, &w->job[i],
					(i & 1) ? 100000 : -1);
		} while (ret == -ETIME);
		if (ret || !w->job[i].done)
			w->errors++;
	}
	return NULL;
}

TEST_F(accel, cross_thread_wait)
{
	struct rt_job *job = calloc(BATCH, sizeof(*job)), *jobs[BATCH];
	struct mm *m = calloc(BATCH, sizeof(*m));
	struct waiter w[4];
	pthread_t tid[4];
	int i;

	ASSERT_NE(NULL, job);
	ASSERT_NE(NULL, m);
	for (i = 0; i < BATCH; i++) {
		ASSERT_EQ(0, mm_setup(self->d, &m[i], 300 + i));
		mm_job(&job[i], self->d, &m[i], false);
		jobs[i] = &job[i];
	}
	ASSERT_EQ(0, ops->submit(self->d, jobs, BATCH));
	for (i = 0; i < 4; i++) {
		w[i] = (struct waiter){
			.d = self->d, .job = job, .first = i, .step = 4,
			.n = BATCH,
		};
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, waiter_main, &w[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(0, w[i].errors);
	}
	for (i = 0; i < BATCH; i++) {
		EXPECT_EQ(0, job[i].status);
		EXPECT_EQ(0, mm_check(self->d, &m[i]));
		job_fini(&job[i]);
		mm_teardown(self->d, &m[i]);
	}
	free(job);
	free(m);
}

/* on_done submitting again (a retry) from inside the reaper's round. */
static struct rt_job *chained;

static void resubmit(struct rt_job *job)
{
	struct rt_job *jobs[1] = { chained };

	if (chained && ops->submit(job->device, jobs, 1))
		chained->status = -EIO;
}

TEST_F(accel, submit_from_on_done)
{
	struct rt_job first, second;
	struct mm m1, m2;

	ASSERT_EQ(0, mm_setup(self->d, &m1, 7));
	ASSERT_EQ(0, mm_setup(self->d, &m2, 8));
	mm_job(&first, self->d, &m1, false);
	mm_job(&second, self->d, &m2, true);
	chained = &second;
	first.on_done = resubmit;
	ASSERT_EQ(0, run_one(self->d, &first));
	EXPECT_EQ(0, first.status);
	ASSERT_EQ(0, ops->wait(self->d, &second, -1));
	EXPECT_EQ(0, second.status);
	EXPECT_EQ(0, mm_check(self->d, &m1));
	EXPECT_EQ(0, mm_check(self->d, &m2));
	chained = NULL;
	job_fini(&first);
	job_fini(&second);
	mm_teardown(self->d, &m1);
	mm_teardown(self->d, &m2);
}

TEST_HARNESS_MAIN
