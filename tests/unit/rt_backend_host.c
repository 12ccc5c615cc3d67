// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the runtime's host backend (runtime/backend_host.c),
 * driven through its struct rt_backend_ops table as the front end drives
 * it: devices and their figures, zeroed buffers, HBM accounting with the
 * AUTO fallback to the backing store and -ENOSPC for HBM only, programs
 * built with vtpu_asm.h that run and write their output, the profile
 * record and its TRACE entries, programs refused when they load (once)
 * and the submit-time binding checks that end a job with -EINVAL,
 * -E2BIG, -ENOENT.
 *
 * Build: needs -Iruntime -Iruntime/include -Icompiler/include and links
 * backend_host.o (libvtpu) with the exec library. The front end's helpers
 * (rt_device_alloc, rt_set_error, rt_now_ns, rt_job_done) are defined
 * weak in rt_backend_test.h, so the test links with or without
 * runtime/client.c: when the library provides them, its definitions win.
 */
#include <unistd.h>

#define RT_TEST_OPS	(&rt_backend_host)
#include "rt_backend_test.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

/* ---- tests ------------------------------------------------------------ */

TEST(open_devices)
{
	struct vtpu_client *c;
	struct vtpu_device_info info;
	int ret, i;

	c = client_open(3, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(3, c->ndevices);
	for (i = 0; i < 3; i++) {
		char name[32];
		struct vtpu_device *d = c->devices[i];

		snprintf(name, sizeof(name), "host%d", i);
		EXPECT_STREQ(name, d->name);
		EXPECT_EQ(i, d->index);
		EXPECT_EQ(2, d->cores);
		EXPECT_EQ(1 * MiB, d->vmem_size);
		memset(&info, 0, sizeof(info));
		ASSERT_EQ(0, ops->query(d, &info));
		EXPECT_STREQ(name, info.name);
		EXPECT_EQ(i, info.index);
		EXPECT_EQ(256 * MiB, info.hbm_total);
		EXPECT_EQ(256 * MiB, info.hbm_free);
		EXPECT_EQ(256 * MiB, info.hbm_largest_free);
		EXPECT_EQ(0, info.host_bytes);
		EXPECT_EQ(1 * MiB, info.vmem_size);
		EXPECT_EQ(2, info.cores);
	}
	client_close(c);
}

TEST(open_options)
{
	struct vtpu_client_options o = {
		.host_devices = 1, .host_cores = 5,
		.host_hbm_size = 8 * MiB, .host_vmem_size = 64 * KiB,
	};
	struct vtpu_client *c = calloc(1, sizeof(*c));
	struct vtpu_device_info info = { 0 };

	ASSERT_NE(NULL, c);
	c->ops = ops;
	ASSERT_EQ(0, ops->open(c, &o));
	ASSERT_EQ(1, c->ndevices);
	ASSERT_EQ(0, ops->query(c->devices[0], &info));
	EXPECT_EQ(5, info.cores);
	EXPECT_EQ(8 * MiB, info.hbm_total);
	EXPECT_EQ(64 * KiB, info.vmem_size);
	client_close(c);

	/* More devices than a client holds. */
	c = calloc(1, sizeof(*c));
	ASSERT_NE(NULL, c);
	c->ops = ops;
	o.host_devices = RT_MAX_DEVICES + 1;
	EXPECT_EQ(-EINVAL, ops->open(c, &o));
	client_close(c);
}

TEST(buffers_zeroed)
{
	static const enum vtpu_placement pl[] = {
		VTPU_PLACE_AUTO, VTPU_PLACE_HBM, VTPU_PLACE_HOST,
	};
	static const uint64_t sizes[] = { 1, 4095, 4096, 65537, 3 * MiB };
	struct vtpu_client *c;
	struct vtpu_device *d;
	int ret;
	size_t i, j;

	c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];
	for (i = 0; i < sizeof(pl) / sizeof(pl[0]); i++)
		for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			enum vtpu_placement placed = -1;
			struct rt_bo *bo = NULL;
			const uint8_t *p;
			uint64_t k;

			ASSERT_EQ(0, ops->bo_create(d, sizes[j], pl[i], &bo,
						    &placed));
			EXPECT_EQ(pl[i] == VTPU_PLACE_HOST ? VTPU_PLACE_HOST :
				  VTPU_PLACE_HBM, placed);
			p = ops->bo_map(d, bo);
			ASSERT_NE(NULL, p);
			for (k = 0; k < sizes[j]; k++)
				if (p[k])
					break;
			EXPECT_EQ(sizes[j], k);
			/* Dirty it: the next buffer must not see this. */
			memset((void *)p, 0xa5, sizes[j]);
			ops->bo_destroy(d, bo);
		}
	/* Sizes 0 and unknown placements are refused. */
	{
		struct rt_bo *bo = NULL;
		enum vtpu_placement placed;

		EXPECT_EQ(-EINVAL, ops->bo_create(d, 0, VTPU_PLACE_AUTO, &bo,
						  &placed));
		EXPECT_EQ(-EINVAL, ops->bo_create(d, 4096,
						  (enum vtpu_placement)7,
						  &bo, &placed));
		EXPECT_EQ(NULL, bo);
	}
	client_close(c);
}

TEST(hbm_accounting)
{
	struct vtpu_client *c;
	struct vtpu_device *d;
	struct vtpu_device_info info;
	struct rt_bo *big, *auto_bo, *host, *again, *tmp = NULL;
	enum vtpu_placement placed;
	long page = sysconf(_SC_PAGESIZE);
	int ret;

	c = client_open(1, 1 * MiB, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];

	/* Sizes count whole pages, like the driver's. */
	ASSERT_EQ(0, ops->bo_create(d, 1, VTPU_PLACE_HBM, &tmp, &placed));
	EXPECT_EQ(VTPU_PLACE_HBM, placed);
	ASSERT_EQ(0, ops->query(d, &info));
	EXPECT_EQ(1 * MiB - (uint64_t)page, info.hbm_free);
	ops->bo_destroy(d, tmp);

	/* Fill HBM exactly. */
	ASSERT_EQ(0, ops->bo_create(d, 1 * MiB, VTPU_PLACE_HBM, &big, &placed));
	EXPECT_EQ(VTPU_PLACE_HBM, placed);
	ASSERT_EQ(0, ops->query(d, &info));
	EXPECT_EQ(0, info.hbm_free);
	EXPECT_EQ(0, info.hbm_largest_free);

	/* AUTO falls back to the backing store... */
	ASSERT_EQ(0, ops->bo_create(d, 10000, VTPU_PLACE_AUTO, &auto_bo,
				    &placed));
	EXPECT_EQ(VTPU_PLACE_HOST, placed);
	/* ...HBM alone cannot... */
	tmp = NULL;
	EXPECT_EQ(-ENOSPC, ops->bo_create(d, 1, VTPU_PLACE_HBM, &tmp, &placed));
	EXPECT_EQ(NULL, tmp);
	/* ...HOST never needs HBM. */
	ASSERT_EQ(0, ops->bo_create(d, 4096, VTPU_PLACE_HOST, &host, &placed));
	EXPECT_EQ(VTPU_PLACE_HOST, placed);

	ASSERT_EQ(0, ops->query(d, &info));
	EXPECT_EQ(0, info.hbm_free);
	EXPECT_EQ(((10000 + (uint64_t)page - 1) & ~((uint64_t)page - 1)) + 4096,
		  info.host_bytes);

	/* Freeing HBM makes room again; freeing HOST returns its bytes. */
	ops->bo_destroy(d, big);
	ASSERT_EQ(0, ops->bo_create(d, 512 * KiB, VTPU_PLACE_AUTO, &again,
				    &placed));
	EXPECT_EQ(VTPU_PLACE_HBM, placed);
	ops->bo_destroy(d, auto_bo);
	ops->bo_destroy(d, host);
	ASSERT_EQ(0, ops->query(d, &info));
	EXPECT_EQ(512 * KiB, info.hbm_free);
	EXPECT_EQ(0, info.host_bytes);

	/* A buffer larger than HBM: AUTO lands in HOST, HBM is -ENOSPC. */
	EXPECT_EQ(-ENOSPC, ops->bo_create(d, 2 * MiB, VTPU_PLACE_HBM, &tmp,
					  &placed));
	ASSERT_EQ(0, ops->bo_create(d, 2 * MiB, VTPU_PLACE_AUTO, &tmp,
				    &placed));
	EXPECT_EQ(VTPU_PLACE_HOST, placed);
	ops->bo_destroy(d, tmp);
	ops->bo_destroy(d, again);
	ASSERT_EQ(0, ops->query(d, &info));
	EXPECT_EQ(1 * MiB, info.hbm_free);
	EXPECT_EQ(0, info.host_bytes);
	client_close(c);
}

static int done_calls;

static void count_done(struct rt_job *job)
{
	(void)job;
	__atomic_add_fetch(&done_calls, 1, __ATOMIC_SEQ_CST);
}

TEST(program_runs)
{
	struct vtpu_client *c;
	struct vtpu_device *d;
	struct rt_job job;
	struct mm m;
	int ret;

	c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];
	ASSERT_EQ(0, mm_setup(d, &m, 1));
	mm_job(&job, d, &m, false);
	job.on_done = count_done;
	done_calls = 0;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_TRUE(job.done);
	EXPECT_EQ(1, done_calls);
	EXPECT_EQ(0, job.status);
	EXPECT_NE(0, job.submit_ns);
	EXPECT_GE(job.done_ns, job.submit_ns);
	EXPECT_EQ(0, mm_check(d, &m));
	job_fini(&job);

	/* Again with other inputs: VMEM is zeroed, results follow inputs. */
	mm_teardown(d, &m);
	ASSERT_EQ(0, mm_setup(d, &m, 5));
	mm_job(&job, d, &m, false);
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(0, job.status);
	EXPECT_EQ(0, mm_check(d, &m));
	job_fini(&job);
	mm_teardown(d, &m);
	client_close(c);
}

/*
 * A job's path makes no system call of its own: the first job starts the
 * helper threads, sized by sysconf(_SC_NPROCESSORS_ONLN), which reads
 * sysfs (an open, a read and a close: 17 us a job on a VM), and later
 * jobs must not ask again.
 */
extern unsigned long test_sysconf_calls;

TEST(jobs_ask_the_cpu_count_once)
{
	struct vtpu_client *c;
	struct vtpu_device *d;
	struct rt_job job;
	unsigned long after_first;
	struct mm m;
	int ret, i;

	c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];
	ASSERT_EQ(0, mm_setup(d, &m, 1));
	for (i = 0; i < 20; i++) {
		mm_job(&job, d, &m, false);
		ASSERT_EQ(0, run_one(d, &job));
		EXPECT_EQ(0, job.status);
		job_fini(&job);
		if (!i)
			after_first = test_sysconf_calls;
	}
	EXPECT_EQ(after_first, test_sysconf_calls);
	EXPECT_EQ(0, mm_check(d, &m));
	mm_teardown(d, &m);
	client_close(c);
}

TEST(profile_written)
{
	struct vtpu_client *c;
	struct vtpu_device *d;
	struct drm_vtpu_profile *p;
	struct rt_job job;
	struct mm m;
	uint64_t before;
	int ret;

	c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];
	ASSERT_EQ(0, mm_setup(d, &m, 2));
	p = ops->bo_map(d, m.prof);
	memset(p, 0xff, 4096);	/* stale content must be overwritten */
	mm_job(&job, d, &m, true);
	before = rt_now_ns();
	job.submit_ns = before;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(0, job.status);
	EXPECT_EQ(0, mm_check(d, &m));

	EXPECT_EQ(before, p->queued);
	EXPECT_LE(p->queued, p->start);
	EXPECT_LE(p->start, p->end);
	EXPECT_LE(p->end, job.done_ns);
	EXPECT_EQ(p->end - p->start, job.device_ns);
	EXPECT_EQ(7, p->insns);	/* 2 TRACE, 2 LOAD, MATMUL, STORE, END */
	EXPECT_EQ(2ull * M * NN * K, p->flops);
	EXPECT_EQ((M * K + K * NN + M * NN) * 4ull, p->dma_bytes);
	EXPECT_EQ(0, p->status);
	EXPECT_EQ(0, p->pad);
	ASSERT_EQ(2, p->trace_count);
	EXPECT_EQ(0, p->trace[0].id);		/* meta string 0: "load" */
	EXPECT_EQ(1, p->trace[1].id);		/* "store" */
	EXPECT_EQ(0, p->trace[0].pad);
	EXPECT_LE(p->start, p->trace[0].timestamp);
	EXPECT_LE(p->trace[0].timestamp, p->trace[1].timestamp);
	EXPECT_LE(p->trace[1].timestamp, p->end);
	job_fini(&job);

	/* Too small for the record and its two TRACEs: -EINVAL, untouched. */
	memset(p, 0xee, 4096);
	mm_job(&job, d, &m, true);
	job.profile_size = sizeof(*p) + sizeof(p->trace[0]);
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(-EINVAL, job.status);
	EXPECT_TRUE(job.done);
	EXPECT_EQ(0xeeeeeeeeeeeeeeeeull, p->queued);
	job_fini(&job);

	mm_teardown(d, &m);
	client_close(c);
}

TEST(invalid_programs_fail_to_load)
{
	struct rt_prog *p = (struct rt_prog *)1;
	struct vtpu_client *c;
	struct vtpu_device *d;
	uint8_t *prog;
	size_t size;
	int ret;

	c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];
	prog = prog_matmul(&size);
	ASSERT_NE(NULL, prog);

	/* A flipped byte: the checksum no longer matches. */
	prog[size - 1] ^= 0x40;
	EXPECT_EQ(-EINVAL, ops->prog_load(d, prog, size, &p));
	EXPECT_EQ(NULL, p);
	prog[size - 1] ^= 0x40;

	/* Garbage instead of a program; too short for a header. */
	{
		uint8_t *junk = malloc(size);

		ASSERT_NE(NULL, junk);
		memset(junk, 0x5a, size);
		EXPECT_EQ(-EINVAL, ops->prog_load(d, junk, size, &p));
		EXPECT_EQ(-EINVAL, ops->prog_load(d, prog, 16, &p));
		free(junk);
	}

	/* The genuine one loads, and is its own copy. */
	ASSERT_EQ(0, ops->prog_load(d, prog, size, &p));
	ASSERT_NE(NULL, p);
	memset(prog, 0, size);
	ops->prog_unload(d, p);
	free(prog);
	client_close(c);
}

/* The loaded copy runs, whatever happens to the bytes it came from. */
TEST(loaded_program_is_a_private_copy)
{
	struct vtpu_client *c;
	struct vtpu_device *d;
	struct rt_job job;
	uint8_t *prog;
	struct mm m;
	size_t size;
	int ret;

	c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];
	ASSERT_EQ(0, mm_setup(d, &m, 4));
	ops->prog_unload(d, m.prog);
	prog = prog_matmul(&size);
	ASSERT_NE(NULL, prog);
	ASSERT_EQ(0, ops->prog_load(d, prog, size, &m.prog));
	memset(prog, 0x5a, size);
	free(prog);
	mm_job(&job, d, &m, false);
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(0, job.status);
	EXPECT_EQ(0, mm_check(d, &m));
	job_fini(&job);
	mm_teardown(d, &m);
	client_close(c);
}

TEST(invalid_jobs)
{
	struct vtpu_client *c;
	struct vtpu_device *d;
	struct rt_job job;
	float *out;
	struct mm m;
	int ret, i;

	c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];
	ASSERT_EQ(0, mm_setup(d, &m, 3));
	out = ops->bo_map(d, m.out);

	/* No program: -ENOENT, like an unknown handle; nothing runs. */
	mm_job(&job, d, &m, false);
	job.prog = NULL;
	done_calls = 0;
	job.on_done = count_done;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(-ENOENT, job.status);
	EXPECT_TRUE(job.done);
	EXPECT_EQ(1, done_calls);
	for (i = 0; i < M * NN; i++)
		EXPECT_EQ(0.0f, out[i]);
	job_fini(&job);

	/* Binding count differs from the program's. */
	mm_job(&job, d, &m, false);
	job.nbind = 2;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(-EINVAL, job.status);
	job_fini(&job);

	/* The output bound read-only: the store is not allowed. */
	mm_job(&job, d, &m, false);
	job.bind_flags[2] = DRM_VTPU_BIND_READ;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(-EINVAL, job.status);
	job_fini(&job);

	/* A range past the end of its buffer. */
	mm_job(&job, d, &m, false);
	job.bind_size[0] = 1 * MiB;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(-EINVAL, job.status);
	job_fini(&job);

	/* A range too small for the program's DMA. */
	mm_job(&job, d, &m, false);
	job.bind_size[2] = 4;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(-EINVAL, job.status);
	job_fini(&job);

	/* Unknown binding flags, no buffer, too many bindings. */
	mm_job(&job, d, &m, false);
	job.bind_flags[1] = 0x4 | DRM_VTPU_BIND_READ;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(-EINVAL, job.status);
	job_fini(&job);
	mm_job(&job, d, &m, false);
	job.bind[1] = NULL;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(-ENOENT, job.status);
	job_fini(&job);
	mm_job(&job, d, &m, false);
	job.nbind = DRM_VTPU_MAX_BINDINGS + 1;
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(-E2BIG, job.status);
	job_fini(&job);

	/* After all that, the genuine job still runs. */
	mm_job(&job, d, &m, false);
	ASSERT_EQ(0, run_one(d, &job));
	EXPECT_EQ(0, job.status);
	EXPECT_EQ(0, mm_check(d, &m));
	job_fini(&job);

	mm_teardown(d, &m);
	client_close(c);
}

TEST(vmem_too_small)
{
	struct vtpu_client_options o = {
		.host_devices = 1, .host_vmem_size = 256,
	};
	struct vtpu_client *c = calloc(1, sizeof(*c));
	struct vtpu_device *d;
	struct mm m;

	ASSERT_NE(NULL, c);
	c->ops = ops;
	ASSERT_EQ(0, ops->open(c, &o));
	d = c->devices[0];
	/* The program needs 320 bytes of VMEM; the device has 256. */
	EXPECT_EQ(-EINVAL, mm_setup(d, &m, 4));
	EXPECT_EQ(NULL, m.prog);
	mm_teardown(d, &m);
	client_close(c);
}

TEST(batch_submit)
{
	struct vtpu_client *c;
	struct vtpu_device *d;
	struct rt_job job[4], *jobs[4];
	struct mm m[4];
	int ret, i;

	c = client_open(1, 0, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	d = c->devices[0];
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, mm_setup(d, &m[i], 10 + i));
		mm_job(&job[i], d, &m[i], i & 1);
		jobs[i] = &job[i];
	}
	job[2].nbind = 1;	/* one bad job does not stop the others */
	ASSERT_EQ(0, ops->submit(d, jobs, 4));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, ops->wait(d, &job[i], 0));
		EXPECT_TRUE(job[i].done);
		EXPECT_EQ(i == 2 ? -EINVAL : 0, job[i].status);
		if (i != 2)
			EXPECT_EQ(0, mm_check(d, &m[i]));
		job_fini(&job[i]);
		mm_teardown(d, &m[i]);
	}
	client_close(c);
}

/* Threads sharing one device (and its VMEM) and its allocator. */
struct thr {
	struct vtpu_device *d;
	int seed, errors;
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	int it;

	for (it = 0; it < 50; it++) {
		struct rt_job job;
		struct mm m;

		if (mm_setup(t->d, &m, t->seed + it)) {
			t->errors++;
			mm_teardown(t->d, &m);
			continue;
		}
		mm_job(&job, t->d, &m, it & 1);
		if (run_one(t->d, &job) || job.status || mm_check(t->d, &m))
			t->errors++;
		job_fini(&job);
		mm_teardown(t->d, &m);
	}
	return NULL;
}

TEST(threads)
{
	struct vtpu_client *c;
	struct vtpu_device_info info;
	pthread_t tid[8];
	struct thr t[8];
	int ret, i;

	c = client_open(2, 1 * MiB, &ret);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ret);
	for (i = 0; i < 8; i++) {
		t[i] = (struct thr){ .d = c->devices[i & 1], .seed = i * 100 };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, thr_main, &t[i]));
	}
	for (i = 0; i < 8; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(0, t[i].errors);
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, ops->query(c->devices[i], &info));
		EXPECT_EQ(1 * MiB, info.hbm_free);
		EXPECT_EQ(0, info.host_bytes);
	}
	client_close(c);
}

/*
 * After a job that streamed more than the caches hold, the host backend
 * prefetches the completion path in one go (rt_completion_prefetch()):
 * that works only while the path's functions sit in their section, and
 * costs little only while the section is a few pages.
 */
TEST(completion_path_is_one_small_section)
{
	const void *fns[] = {
		(const void *)(uintptr_t)rt_job_done,
		(const void *)(uintptr_t)rt_pool_put,
		(const void *)(uintptr_t)rt_profile_event,
		(const void *)(uintptr_t)vtpu_execute,
		(const void *)(uintptr_t)vtpu_event_wait,
		(const void *)(uintptr_t)vtpu_event_destroy,
	};
	const char *lo = __start_vtpu_completion, *hi = __stop_vtpu_completion;
	size_t i;

	ASSERT_LT(lo, hi);
	/* a few pages of code; ASan's instrumentation about triples it */
	EXPECT_LE((size_t)(hi - lo), (size_t)64 << 10);
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		EXPECT_LE(lo, (const char *)fns[i]) TH_LOG("function %zu", i);
		EXPECT_GT(hi, (const char *)fns[i]) TH_LOG("function %zu", i);
	}
	rt_completion_prefetch();	/* only prefetches: no fault */
}

TEST_HARNESS_MAIN
