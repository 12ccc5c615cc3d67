// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: program objects (uAPI 1.2). PROGRAM_CREATE copies and
 * validates a program once and says what it needs of each binding;
 * SUBMIT with DRM_VTPU_SUBMIT_PROGRAM then checks only the bindings.
 * Results equal the copy-per-submit path's bit for bit, from threads and
 * io_uring alike; handles are private, unmappable, and safe to destroy
 * with jobs queued; every malformed request fails without a trace.
 */
#include <pthread.h>

#include "vtpu_job_util.h"
#include "vtpu_submit.h"

#include "kselftest_harness.h"

FIXTURE(program) {
	int fd;
	int minor;
	struct drm_vtpu_query q;
	struct compute c;
	void *prog;		/* the compute program, in user memory */
	__u32 handle;
};

static int program_create(int fd, const void *prog, __u64 size,
			  struct drm_vtpu_program_binding *b, __u32 nb,
			  struct drm_vtpu_program_create *out)
{
	struct drm_vtpu_program_create pc = {
		.program = (__u64)(uintptr_t)prog,
		.size = size,
		.bindings = (__u64)(uintptr_t)b,
		.max_bindings = nb,
	};
	int ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_PROGRAM_CREATE, &pc);

	if (out)
		*out = pc;
	return ret;
}

static int program_destroy(int fd, __u32 handle)
{
	struct drm_vtpu_program_destroy d = { .handle = handle };

	return vtpu_ioctl(fd, DRM_IOCTL_VTPU_PROGRAM_DESTROY, &d);
}

FIXTURE_SETUP(program)
{
	struct drm_vtpu_program_create pc;

	self->fd = vtpu_open(0);
	ASSERT_LE(0, self->fd) TH_LOG("no vtpu device");
	self->minor = vtpu_minor(self->fd);
	ASSERT_EQ(0, vtpu_query(self->fd, &self->q));
	ASSERT_TRUE(self->q.features & DRM_VTPU_FEATURE_PROGRAM);
	ASSERT_EQ(0, compute_setup(self->fd, &self->c, 11,
				   DRM_VTPU_PLACEMENT_AUTO));
	self->prog = malloc(self->c.prog_size);
	ASSERT_NE(NULL, self->prog);
	memcpy(self->prog, self->c.prog.map, self->c.prog_size);
	ASSERT_EQ(0, program_create(self->fd, self->prog, self->c.prog_size,
				    NULL, 0, &pc));
	self->handle = pc.handle;
}

FIXTURE_TEARDOWN(program)
{
	compute_teardown(self->fd, &self->c);
	free(self->prog);
	close(self->fd);
}

static struct drm_vtpu_submit by_handle(const struct compute *c, __u32 handle)
{
	return (struct drm_vtpu_submit){
		.flags = DRM_VTPU_SUBMIT_PROGRAM,
		.program_handle = handle,
		.bindings = (__u64)(uintptr_t)c->bind,
		.binding_count = 3,
	};
}

/* Submits @s, waits, returns the job's status (or the submit's -errno). */
static int run(int fd, struct drm_vtpu_submit *s)
{
	int ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_SUBMIT, s), status = -1;

	if (ret)
		return ret;
	ret = vtpu_job_wait(fd, s->job_id, 60, &status);
	return ret ?: status;
}

TEST_F(program, create_reports_what_each_binding_needs)
{
	struct drm_vtpu_program_binding b[4];
	struct drm_vtpu_program_create pc;

	memset(b, 0xff, sizeof(b));
	ASSERT_EQ(0, program_create(self->fd, self->prog, self->c.prog_size,
				    b, 4, &pc));
	EXPECT_NE(0, pc.handle);
	EXPECT_NE(self->handle, pc.handle);
	EXPECT_EQ(3, pc.binding_count);
	EXPECT_EQ(3, pc.trace_count);
	EXPECT_EQ(N * N * 4, b[0].size);
	EXPECT_EQ(DRM_VTPU_BIND_READ, b[0].flags);
	EXPECT_EQ(N * N * 4, b[1].size);
	EXPECT_EQ(DRM_VTPU_BIND_READ, b[1].flags);
	EXPECT_EQ(N * (N + 1) * 4, b[2].size);
	EXPECT_EQ(DRM_VTPU_BIND_WRITE, b[2].flags);
	EXPECT_EQ(0, b[2].pad);
	/* Only max_bindings entries are written. */
	EXPECT_EQ(~0ULL, b[3].size);
	EXPECT_EQ(0, program_destroy(self->fd, pc.handle));
}

TEST_F(program, results_equal_the_copy_per_submit_path)
{
	static float ref[N * (N + 1)], by_copy[N * (N + 1)];
	struct drm_vtpu_submit s;
	__u64 id;
	int st = -1;

	ASSERT_EQ(0, compute_reference(&self->c, self->q.vmem_size, ref));
	ASSERT_EQ(0, compute_submit(self->fd, &self->c, 0, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 60, &st));
	ASSERT_EQ(0, st);
	memcpy(by_copy, self->c.out.map, sizeof(by_copy));
	memset(self->c.out.map, 0, sizeof(by_copy));

	s = by_handle(&self->c, self->handle);
	ASSERT_EQ(0, run(self->fd, &s));
	EXPECT_EQ(0, memcmp(by_copy, self->c.out.map, sizeof(by_copy)));
	EXPECT_EQ(0, memcmp(ref, self->c.out.map, sizeof(ref)));
}

/* The kernel runs its copy: what userspace does to its own is moot. */
TEST_F(program, the_kernel_keeps_its_own_unmappable_copy)
{
	static float ref[N * (N + 1)];
	struct drm_vtpu_submit s;
	int dmabuf = -1;

	ASSERT_EQ(0, compute_reference(&self->c, self->q.vmem_size, ref));
	memset(self->prog, 0xa5, self->c.prog_size);
	s = by_handle(&self->c, self->handle);
	ASSERT_EQ(0, run(self->fd, &s));
	EXPECT_EQ(0, memcmp(ref, self->c.out.map, sizeof(ref)));

	/* A program handle is no buffer handle: no offset, no dma-buf. */
	{
		int fd = vtpu_open(0);
		struct drm_vtpu_program_create pc;
		struct drm_vtpu_bo_info info;

		ASSERT_LE(0, fd);
		memcpy(self->prog, self->c.prog.map, self->c.prog_size);
		ASSERT_EQ(0, program_create(fd, self->prog, self->c.prog_size,
					    NULL, 0, &pc));
		EXPECT_EQ(-ENOENT, vtpu_bo_info(fd, pc.handle, &info));
		EXPECT_NE(0, drmPrimeHandleToFD(fd, pc.handle, DRM_CLOEXEC,
						&dmabuf));
		EXPECT_EQ(-EINVAL, vtpu_bo_close(fd, pc.handle));
		EXPECT_EQ(0, program_destroy(fd, pc.handle));
		close(fd);
	}
}

TEST_F(program, create_refuses_malformed_requests_without_a_trace)
{
	struct drm_vtpu_program_create pc = {
		.program = (__u64)(uintptr_t)self->prog,
		.size = self->c.prog_size,
	};
	struct drm_vtpu_program_create t;
	char *bad = malloc(self->c.prog_size);
	unsigned int bit;

	ASSERT_NE(NULL, bad);
#define EXPECT_CREATE(err, edit) do {					\
		t = pc;							\
		edit;							\
		EXPECT_EQ(err, vtpu_ioctl(self->fd,			\
					  DRM_IOCTL_VTPU_PROGRAM_CREATE, &t)) \
			TH_LOG("%s", #edit);				\
	} while (0)

	for (bit = 0; bit < 32; bit++)
		EXPECT_CREATE(-EINVAL, t.flags = 1u << bit);
	EXPECT_CREATE(-EINVAL, t.pad = 1);
	EXPECT_CREATE(-EINVAL, t.size = 0);
	EXPECT_CREATE(-EINVAL, t.size = sizeof(struct vtpu_prog_header) - 1);
	EXPECT_CREATE(-E2BIG, t.size = 1ULL << 40);
	EXPECT_CREATE(-E2BIG, t.size = ~0ULL);
	EXPECT_CREATE(-EFAULT, t.program = 0);
	EXPECT_CREATE(-EFAULT, t.program = 0xffff888000000000ULL);
	EXPECT_CREATE(-EFAULT, (t.bindings = 8, t.max_bindings = 3));
	EXPECT_CREATE(-EFAULT, (t.bindings = 0xffff888000000000ULL,
				t.max_bindings = 1));
	/* A program that is not one: a bad checksum, a truncated copy. */
	memcpy(bad, self->prog, self->c.prog_size);
	bad[self->c.prog_size - 1] ^= 1;
	EXPECT_CREATE(-EINVAL, t.program = (__u64)(uintptr_t)bad);
	EXPECT_CREATE(-EINVAL, t.size -= 8);
	free(bad);
#undef EXPECT_CREATE

	/* Nothing was created: the next handle is the fixture's + 1. */
	ASSERT_EQ(0, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_PROGRAM_CREATE, &pc));
	EXPECT_EQ(self->handle + 1, pc.handle);
}

TEST_F(program, destroy_refuses_unknown_handles_and_flags)
{
	struct drm_vtpu_program_destroy d = { .handle = self->handle };
	const __u32 handles[] = { 0, 12345, 0xffffffffu };
	unsigned int i;

	for (i = 0; i < 32; i++) {
		d.flags = 1u << i;
		EXPECT_EQ(-EINVAL, vtpu_ioctl(self->fd,
					      DRM_IOCTL_VTPU_PROGRAM_DESTROY, &d));
	}
	for (i = 0; i < 3; i++)
		EXPECT_EQ(-ENOENT, program_destroy(self->fd, handles[i]));
	EXPECT_EQ(0, program_destroy(self->fd, self->handle));
	EXPECT_EQ(-ENOENT, program_destroy(self->fd, self->handle));
	/* Gone: SUBMIT does not find it either. */
	{
		struct drm_vtpu_submit s = by_handle(&self->c, self->handle);

		EXPECT_EQ(-ENOENT, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_SUBMIT,
					      &s));
	}
}

TEST_F(program, submit_checks_bindings_against_the_program)
{
	struct drm_vtpu_binding bind[3];
	struct drm_vtpu_submit good = by_handle(&self->c, self->handle), s;
	int other;

	memcpy(bind, self->c.bind, sizeof(bind));
	good.bindings = (__u64)(uintptr_t)bind;
#define EXPECT_SUBMIT(err, edit) do {					\
		s = good;						\
		memcpy(bind, self->c.bind, sizeof(bind));		\
		edit;							\
		EXPECT_EQ(err, vtpu_ioctl(self->fd,			\
					  DRM_IOCTL_VTPU_SUBMIT, &s))	\
			TH_LOG("%s", #edit);				\
	} while (0)

	EXPECT_SUBMIT(-ENOENT, s.program_handle = self->handle + 100);
	EXPECT_SUBMIT(-ENOENT, s.program_handle = 0);
	EXPECT_SUBMIT(-EINVAL, s.program_size = self->c.prog_size);
	EXPECT_SUBMIT(-EINVAL, s.program_offset = 4096);
	EXPECT_SUBMIT(-EINVAL, s.flags |= 2);
	EXPECT_SUBMIT(-EINVAL, s.binding_count = 2);
	EXPECT_SUBMIT(-EINVAL, bind[2].size -= 4);
	EXPECT_SUBMIT(-EINVAL, bind[0].size = 4);
	EXPECT_SUBMIT(-EINVAL, bind[2].flags = DRM_VTPU_BIND_READ);
	EXPECT_SUBMIT(-EINVAL, bind[1].flags = DRM_VTPU_BIND_WRITE);
	/* More than needed is fine: a bigger range, more rights. */
	EXPECT_SUBMIT(0, bind[1].flags |= DRM_VTPU_BIND_WRITE);
#undef EXPECT_SUBMIT

	/* Handles are private to their file. */
	other = vtpu_open(0);
	ASSERT_LE(0, other);
	{
		struct drm_vtpu_submit t = by_handle(&self->c, self->handle);

		t.bindings = 0;
		t.binding_count = 0;
		EXPECT_EQ(-ENOENT, vtpu_ioctl(other, DRM_IOCTL_VTPU_SUBMIT,
					      &t));
	}
	close(other);
	EXPECT_TRUE(vtpu_wait_idle(self->minor, 60));
}

/* Jobs hold their program: the handle may go while they wait. */
TEST_F(program, destroyed_while_jobs_are_queued_they_still_run)
{
	static float ref[N * (N + 1)];
	struct drm_vtpu_binding bs;
	struct drm_vtpu_sync in;
	struct vtpu_buf spin, sink;
	struct drm_vtpu_submit s;
	size_t ss;
	__u32 sync;
	int st = -1;
	void *p;

	ASSERT_EQ(0, compute_reference(&self->c, self->q.vmem_size, ref));
	p = vtpu_prog_spin(64, 20, &ss);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, ss, &spin));
	free(p);
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 64 * 64 * 4, DRM_VTPU_PLACEMENT_AUTO,
				  &sink));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync));
	bs = (struct drm_vtpu_binding){ sink.handle, DRM_VTPU_BIND_WRITE, 0,
					64 * 64 * 4 };
	struct vtpu_submit_args a = {
		.prog = &spin, .prog_size = ss, .bind = &bs, .nbind = 1,
		.out_sync = sync,
	};
	ASSERT_EQ(0, vtpu_submit(self->fd, &a, NULL));

	in = (struct drm_vtpu_sync){ .handle = sync };
	s = by_handle(&self->c, self->handle);
	s.in_syncs = (__u64)(uintptr_t)&in;
	s.in_sync_count = 1;
	ASSERT_EQ(0, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_SUBMIT, &s));
	ASSERT_EQ(0, program_destroy(self->fd, self->handle));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, s.job_id, 60, &st));
	EXPECT_EQ(0, st);
	EXPECT_EQ(0, memcmp(ref, self->c.out.map, sizeof(ref)));

	drmSyncobjDestroy(self->fd, sync);
	vtpu_buf_free(self->fd, &spin);
	vtpu_buf_free(self->fd, &sink);
}

struct submitter {
	int fd;
	__u32 handle;
	struct compute c;
	unsigned int ok;
	__u64 vmem;
};

static void *submitter_main(void *arg)
{
	static __thread float ref[N * (N + 1)];
	struct submitter *w = arg;
	struct drm_vtpu_submit s;
	int i;

	if (compute_reference(&w->c, w->vmem, ref))
		return NULL;
	for (i = 0; i < 8; i++) {
		memset(w->c.out.map, 0, sizeof(ref));
		s = by_handle(&w->c, w->handle);
		if (run(w->fd, &s) == 0 &&
		    !memcmp(ref, w->c.out.map, sizeof(ref)))
			w->ok++;
	}
	return NULL;
}

/* One program, four threads and an io_uring ring, all at once. */
TEST_F_TIMEOUT(program, one_program_from_many_threads_and_io_uring, 300)
{
	struct submitter w[4];
	struct vtpu_completion done[8];
	struct drm_vtpu_submit s[8];
	struct vtpu_sq sq;
	pthread_t t[4];
	unsigned int i, got = 0;

	for (i = 0; i < 4; i++) {
		w[i] = (struct submitter){ .fd = self->fd, .handle = self->handle,
					   .vmem = self->q.vmem_size };
		ASSERT_EQ(0, compute_setup(self->fd, &w[i].c, 20 + i,
					   DRM_VTPU_PLACEMENT_AUTO));
		ASSERT_EQ(0, pthread_create(&t[i], NULL, submitter_main, &w[i]));
	}
	/* Meanwhile the same program through io_uring (inline form). */
	ASSERT_EQ(0, vtpu_sq_init(&sq, self->fd, 16, VTPU_SQ_URING));
	for (i = 0; i < 8; i++) {
		s[i] = by_handle(&self->c, self->handle);
		ASSERT_EQ(0, vtpu_sq_queue(&sq, &s[i], i));
	}
	ASSERT_LE(0, vtpu_sq_submit(&sq));
	while (got < 8) {
		int n = vtpu_sq_reap(&sq, done, 8 - got, 1);

		ASSERT_LT(0, n);
		for (int j = 0; j < n; j++)
			EXPECT_EQ(0, done[j].status);
		got += n;
	}
	vtpu_sq_fini(&sq);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(8, w[i].ok) TH_LOG("thread %u", i);
		compute_teardown(self->fd, &w[i].c);
	}
	{
		static float ref[N * (N + 1)];

		ASSERT_EQ(0, compute_reference(&self->c, self->q.vmem_size,
					       ref));
		EXPECT_EQ(0, memcmp(ref, self->c.out.map, sizeof(ref)));
	}
}

/* Handles die with their file, and their memory with the last job. */
TEST(programs_of_a_closed_file_are_freed)
{
	struct drm_vtpu_program_create pc;
	struct compute c;
	int fd, i, minor;
	void *p;

	fd = vtpu_open(0);
	ASSERT_LE(0, fd);
	minor = vtpu_minor(fd);
	ASSERT_EQ(0, compute_setup(fd, &c, 1, DRM_VTPU_PLACEMENT_AUTO));
	p = malloc(c.prog_size);
	ASSERT_NE(NULL, p);
	memcpy(p, c.prog.map, c.prog_size);
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, program_create(fd, p, c.prog_size, NULL, 0, &pc));
	EXPECT_EQ(64, pc.handle);
	{
		struct drm_vtpu_submit s = by_handle(&c, pc.handle);

		ASSERT_EQ(0, vtpu_ioctl(fd, DRM_IOCTL_VTPU_SUBMIT, &s));
	}
	free(p);
	compute_teardown(fd, &c);
	close(fd);
	/* kmemleak (make check-debug) sees whether anything stayed. */
	EXPECT_TRUE(vtpu_wait_idle(minor, 60));
}

TEST_HARNESS_MAIN
