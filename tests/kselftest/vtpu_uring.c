// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: io_uring passthrough. Batches of SUBMIT commands in one
 * io_uring_enter(), errors in CQEs, rings and processes that go away
 * with jobs in flight, IOPOLL rings, and equality with the ioctl path.
 */
#include <signal.h>
#include <sys/wait.h>

#include "vtpu_job_util.h"
#include "vtpu_submit.h"

#include "kselftest_harness.h"

#define MAX_BATCH	64

FIXTURE(uring) {
	int fd;
	int minor;
	struct drm_vtpu_query q;
	struct vtpu_sq sq;
	struct compute c[MAX_BATCH];
	unsigned int nc;
};

FIXTURE_SETUP(uring)
{
	self->fd = vtpu_open(0);
	ASSERT_LE(0, self->fd) TH_LOG("no vtpu device");
	self->minor = vtpu_minor(self->fd);
	ASSERT_EQ(0, vtpu_query(self->fd, &self->q));
	ASSERT_EQ(0, vtpu_sq_init(&self->sq, self->fd, 128, VTPU_SQ_URING))
		TH_LOG("io_uring with DRM_VTPU_URING_SUBMIT unavailable");
	ASSERT_EQ(VTPU_SQ_URING, self->sq.mode);
	self->nc = 0;
}

FIXTURE_TEARDOWN(uring)
{
	unsigned int i;

	vtpu_sq_fini(&self->sq);
	for (i = 0; i < self->nc; i++)
		compute_teardown(self->fd, &self->c[i]);
	close(self->fd);
}

static struct drm_vtpu_submit request(struct compute *c)
{
	return (struct drm_vtpu_submit){
		.program_handle = c->prog.handle,
		.program_size = c->prog_size,
		.bindings = (__u64)(uintptr_t)c->bind,
		.binding_count = 3,
	};
}

/* Submits @n jobs in one io_uring_enter(); checks all results. */
static void batch(struct __test_metadata *_metadata,
		  FIXTURE_DATA(uring) *self, unsigned int n)
{
	static float ref[N * (N + 1)];
	struct vtpu_completion done[MAX_BATCH];
	bool seen[MAX_BATCH] = { false };
	unsigned int i, got = 0;
	__u32 last_id = 0;

	for (i = self->nc; i < n; i++, self->nc++)
		ASSERT_EQ(0, compute_setup(self->fd, &self->c[i], 300 + i,
					   DRM_VTPU_PLACEMENT_AUTO));
	for (i = 0; i < n; i++) {
		struct drm_vtpu_submit s = request(&self->c[i]);

		memset(self->c[i].out.map, 0, self->c[i].out.size);
		ASSERT_EQ(0, vtpu_sq_queue(&self->sq, &s, 1000 + i));
	}
	ASSERT_EQ((int)n, vtpu_sq_submit(&self->sq)) TH_LOG("one enter");
	while (got < n) {
		int r = vtpu_sq_reap(&self->sq, done + got, n - got, 1);

		ASSERT_LT(0, r);
		got += r;
	}
	for (i = 0; i < n; i++) {
		unsigned int k = done[i].user_data - 1000;

		ASSERT_LT(k, n);
		EXPECT_FALSE(seen[k]) TH_LOG("two CQEs for request %u", k);
		seen[k] = true;
		EXPECT_EQ(0, done[i].status);
		EXPECT_NE(0, done[i].job_id);
		if (done[i].job_id > last_id)
			last_id = done[i].job_id;
	}
	EXPECT_EQ(0, vtpu_sq_outstanding(&self->sq));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, compute_reference(&self->c[i], self->q.vmem_size,
					       ref));
		EXPECT_EQ(0, memcmp(ref, self->c[i].out.map, sizeof(ref)))
			TH_LOG("job %u: wrong result", i);
	}
}

TEST_F(uring, batch_of_1_completes_correctly)
{
	batch(_metadata, self, 1);
}

TEST_F(uring, batch_of_8_completes_correctly)
{
	batch(_metadata, self, 8);
}

TEST_F(uring, batch_of_64_completes_correctly)
{
	batch(_metadata, self, 64);
}

static void submit_slow_batch(struct vtpu_sq *sq, int fd, struct vtpu_buf *prog,
			      size_t size, struct vtpu_buf *out,
			      struct drm_vtpu_binding *b, unsigned int n);

/* Reaps @n completions into @done; false if one is missing. */
static bool reap_all(struct vtpu_sq *sq, struct vtpu_completion *done,
		     unsigned int n)
{
	unsigned int got = 0;

	while (got < n) {
		int r = vtpu_sq_reap(sq, done + got, n - got, 1);

		if (r <= 0)
			return false;
		got += r;
	}
	return true;
}

/*
 * The small jobs of one io_uring_enter() are chained: one scheduler job
 * carries them to a core. Each still ends on its own: its own result,
 * CQE, profile and time on the core.
 */
TEST_F(uring, small_jobs_of_a_batch_run_chained_with_their_own_results)
{
	static float ref[N * (N + 1)];
	struct vtpu_completion done[16];
	struct vtpu_buf prof[16];
	long before, chained = 0;
	unsigned int i, round;

	for (i = 0; i < 16; i++, self->nc++) {
		ASSERT_EQ(0, compute_setup(self->fd, &self->c[i], 400 + i,
					   DRM_VTPU_PLACEMENT_AUTO));
		ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096,
					  DRM_VTPU_PLACEMENT_HOST, &prof[i]));
	}
	/*
	 * The first job to bind a backing-store range maps it, which the
	 * non-blocking attempt leaves to io-wq, unchained; the range stays
	 * mapped, so the second round binds mapped ranges, as every
	 * execution of a loaded model does.
	 */
	for (round = 0; round < 2; round++) {
		for (i = 0; i < 16; i++) {
			struct drm_vtpu_submit s = request(&self->c[i]);

			s.profile_handle = prof[i].handle;
			memset(self->c[i].out.map, 0, self->c[i].out.size);
			ASSERT_EQ(0, vtpu_sq_queue(&self->sq, &s, i));
		}
		before = vtpu_core_chained(self->minor);
		ASSERT_LE(0, before);
		ASSERT_EQ(16, vtpu_sq_submit(&self->sq));
		ASSERT_TRUE(reap_all(&self->sq, done, 16));
		chained = vtpu_core_chained(self->minor) - before;
	}
	/* All 16 fit one chain; one retried from io-wq would go alone. */
	EXPECT_LE(8, chained) TH_LOG("%ld of 16 jobs chained", chained);
	EXPECT_GE(15, chained);

	for (i = 0; i < 16; i++) {
		unsigned int k = done[i].user_data;
		const struct drm_vtpu_profile *p;

		ASSERT_GT(16, k);
		p = prof[k].map;
		EXPECT_EQ(0, done[i].status);
		EXPECT_EQ(0, p->status);
		EXPECT_EQ(3, p->trace_count);
		EXPECT_GT(self->q.core_count, p->core);
		EXPECT_LE(p->queued, p->start);
		EXPECT_LE(p->start, p->end);
		/* The CQE's time covers the job's run, not its chain's. */
		EXPECT_LE((p->end - p->start) / 1000, done[i].device_us);
		EXPECT_GE((p->end - p->queued) / 1000 + 1, done[i].device_us);
		ASSERT_EQ(0, compute_reference(&self->c[k], self->q.vmem_size,
					       ref));
		EXPECT_EQ(0, memcmp(ref, self->c[k].out.map, sizeof(ref)))
			TH_LOG("job %u: wrong result", k);
	}
	for (i = 0; i < 16; i++)
		vtpu_buf_free(self->fd, &prof[i]);
}

/* One SQE per io_uring_enter(), or ioctls: nothing to chain. */
TEST_F(uring, jobs_submitted_one_at_a_time_are_not_chained)
{
	struct vtpu_completion done;
	long before;
	unsigned int i;
	__u64 id;

	ASSERT_EQ(0, compute_setup(self->fd, &self->c[0], 7,
				   DRM_VTPU_PLACEMENT_AUTO));
	self->nc = 1;
	before = vtpu_core_chained(self->minor);
	ASSERT_LE(0, before);
	for (i = 0; i < 8; i++) {
		struct drm_vtpu_submit s = request(&self->c[0]);

		ASSERT_EQ(0, vtpu_sq_queue(&self->sq, &s, i));
		ASSERT_EQ(1, vtpu_sq_submit(&self->sq));
		ASSERT_TRUE(reap_all(&self->sq, &done, 1));
		EXPECT_EQ(0, done.status);
	}
	for (i = 0; i < 8; i++) {
		struct vtpu_submit_args a = {
			.prog = &self->c[0].prog,
			.prog_size = self->c[0].prog_size,
			.bind = self->c[0].bind, .nbind = 3,
		};
		int status = -1;

		ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
		ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 30, &status));
		EXPECT_EQ(0, status);
	}
	EXPECT_EQ(before, vtpu_core_chained(self->minor));
}

/* Big jobs gain nothing from a chain and would hold a core: alone. */
TEST_F(uring, big_jobs_of_a_batch_are_not_chained)
{
	struct vtpu_completion done[4];
	struct drm_vtpu_binding b;
	struct vtpu_buf prog, out;
	long before;
	size_t size;
	unsigned int i;
	/* 5.2 MFLOP each, over the chain's budget of 2 Mi work units */
	void *p = vtpu_prog_spin(64, 10, &size);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &prog));
	free(p);
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 64 * 64 * 4,
				  DRM_VTPU_PLACEMENT_AUTO, &out));
	before = vtpu_core_chained(self->minor);
	ASSERT_LE(0, before);
	submit_slow_batch(&self->sq, self->fd, &prog, size, &out, &b, 4);
	ASSERT_TRUE(reap_all(&self->sq, done, 4));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, done[i].status);
	EXPECT_EQ(before, vtpu_core_chained(self->minor));
	vtpu_buf_free(self->fd, &prog);
	vtpu_buf_free(self->fd, &out);
}

/* A chained job's out-syncobj carries that job's own fence. */
TEST_F(uring, chained_jobs_signal_their_out_syncobjs)
{
	struct vtpu_completion done[8];
	__u32 sync[8];
	unsigned int i;

	for (i = 0; i < 8; i++, self->nc++) {
		struct drm_vtpu_submit s;

		ASSERT_EQ(0, compute_setup(self->fd, &self->c[i], 500 + i,
					   DRM_VTPU_PLACEMENT_AUTO));
		ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync[i]));
		s = request(&self->c[i]);
		s.out_sync = sync[i];
		ASSERT_EQ(0, vtpu_sq_queue(&self->sq, &s, i));
	}
	ASSERT_EQ(8, vtpu_sq_submit(&self->sq));
	ASSERT_TRUE(reap_all(&self->sq, done, 8));
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(0, done[i].status);
		/* Signalled by the time its CQE was posted. */
		EXPECT_EQ(0, drmSyncobjWait(self->fd, &sync[i], 1, 0, 0, NULL))
			TH_LOG("syncobj %u not signalled", i);
		drmSyncobjDestroy(self->fd, sync[i]);
	}
}

/*
 * A job of a batch that waits on an earlier job's out-syncobj waits for
 * that job, chained or not, and the batch completes: the chain it joined
 * is queued first. Queued behind the job waiting on it, the chain would
 * never run, and nor would anything else of the file.
 */
TEST_F_TIMEOUT(uring, batch_job_waits_on_an_earlier_chained_job, 120)
{
	struct vtpu_completion done[12];
	struct vtpu_buf prof[12];
	struct drm_vtpu_sync in[4];
	__u32 sync[4], after[4];
	long before, chained = 0;
	unsigned int i, g, round;

	for (i = 0; i < 12; i++, self->nc++) {
		ASSERT_EQ(0, compute_setup(self->fd, &self->c[i], 600 + i,
					   DRM_VTPU_PLACEMENT_AUTO));
		ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096,
					  DRM_VTPU_PLACEMENT_HOST, &prof[i]));
	}
	for (g = 0; g < 4; g++) {
		ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync[g]));
		ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &after[g]));
		in[g] = (struct drm_vtpu_sync){ .handle = sync[g] };
	}
	/*
	 * Round 0 maps the backing-store ranges (see above), so its jobs go
	 * to io-wq, where nothing orders them (the uAPI orders commands
	 * only when linked): a waiter could look up its in-sync before the
	 * job it waits on was submitted and fail with -EINVAL. It waits on
	 * nothing; round 1 chains and waits.
	 */
	for (round = 0; round < 2; round++) {
		struct timespec now;

		/* Groups of three: two small jobs, then one waiting on the 2nd */
		for (i = 0; i < 12; i++) {
			struct drm_vtpu_submit s = request(&self->c[i]);

			g = i / 3;
			s.profile_handle = prof[i].handle;
			if (i % 3 == 1)
				s.out_sync = sync[g];
			if (i % 3 == 2) {
				if (round) {
					s.in_syncs = (__u64)(uintptr_t)&in[g];
					s.in_sync_count = 1;
				}
				s.out_sync = after[g];
			}
			ASSERT_EQ(0, vtpu_sq_queue(&self->sq, &s, i));
		}
		ASSERT_EQ(0, drmSyncobjReset(self->fd, after, 4));
		before = vtpu_core_chained(self->minor);
		ASSERT_LE(0, before);
		ASSERT_EQ(12, vtpu_sq_submit(&self->sq));
		/* Bounded: a deadlocked file never posts these CQEs. */
		ASSERT_EQ(0, clock_gettime(CLOCK_MONOTONIC, &now));
		ASSERT_EQ(0, drmSyncobjWait(self->fd, after, 4,
					    (now.tv_sec + 60) * 1000000000LL,
					    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL |
					    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
					    NULL))
			TH_LOG("round %u: the waiting jobs never ended", round);
		ASSERT_TRUE(reap_all(&self->sq, done, 12));
		chained = vtpu_core_chained(self->minor) - before;
		for (i = 0; i < 12; i++)
			EXPECT_EQ(0, done[i].status);
		for (g = 0; round && g < 4; g++) {
			const struct drm_vtpu_profile *waited = prof[3 * g + 1].map;
			const struct drm_vtpu_profile *waiter = prof[3 * g + 2].map;

			EXPECT_LE(waited->end, waiter->start)
				TH_LOG("round %u group %u: ran before its in-sync",
				       round, g);
		}
	}
	/* Each group's first two jobs chain: one chained job per group. */
	EXPECT_LE(1, chained) TH_LOG("no job chained");
	for (g = 0; g < 4; g++) {
		drmSyncobjDestroy(self->fd, sync[g]);
		drmSyncobjDestroy(self->fd, after[g]);
	}
	for (i = 0; i < 12; i++)
		vtpu_buf_free(self->fd, &prof[i]);
}

/* Bad requests fail in their own CQE with the ioctl's errno. */
TEST_F(uring, invalid_request_fails_in_its_cqe_others_succeed)
{
	struct drm_vtpu_binding bad_bind[3];
	struct vtpu_completion done[8];
	struct drm_vtpu_submit s[8], t;
	int want[8] = { 0 };
	unsigned int i, got = 0;

	for (i = 0; i < 8; i++, self->nc++) {
		ASSERT_EQ(0, compute_setup(self->fd, &self->c[i], 50 + i,
					   DRM_VTPU_PLACEMENT_AUTO));
		s[i] = request(&self->c[i]);
	}
	s[2].flags = 1;
	s[4].program_handle = 99999;
	memcpy(bad_bind, self->c[6].bind, sizeof(bad_bind));
	bad_bind[2].size = 4;	/* smaller than the program's store */
	s[6].bindings = (__u64)(uintptr_t)bad_bind;
	/* The ioctl says what each must fail with. */
	for (i = 2; i <= 6; i += 2) {
		t = s[i];
		want[i] = vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_SUBMIT, &t);
		ASSERT_NE(0, want[i]);
	}
	EXPECT_EQ(-EINVAL, want[2]);
	EXPECT_EQ(-ENOENT, want[4]);
	EXPECT_EQ(-EINVAL, want[6]);

	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, vtpu_sq_queue(&self->sq, &s[i], i));
	ASSERT_EQ(8, vtpu_sq_submit(&self->sq));
	while (got < 8) {
		int r = vtpu_sq_reap(&self->sq, done + got, 8 - got, 1);

		ASSERT_LT(0, r);
		got += r;
	}
	for (i = 0; i < 8; i++) {
		unsigned int k = done[i].user_data;
		int status = done[i].status;

		ASSERT_LT(k, 8);
		EXPECT_EQ(want[k], status) TH_LOG("request %u", k);
	}
}

TEST_F(uring, results_equal_ioctl_results)
{
	static float via_ioctl[N * (N + 1)];
	struct vtpu_completion done;
	struct drm_vtpu_submit s;
	struct compute *c = &self->c[0];
	int status = -1;
	__u64 id;

	ASSERT_EQ(0, compute_setup(self->fd, c, 77, DRM_VTPU_PLACEMENT_HBM));
	self->nc = 1;
	ASSERT_EQ(0, compute_submit(self->fd, c, 0, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 60, &status));
	ASSERT_EQ(0, status);
	memcpy(via_ioctl, c->out.map, sizeof(via_ioctl));
	memset(c->out.map, 0, c->out.size);

	s = request(c);
	ASSERT_EQ(0, vtpu_sq_queue(&self->sq, &s, 1));
	ASSERT_EQ(1, vtpu_sq_reap(&self->sq, &done, 1, 1));
	ASSERT_EQ(0, done.status);
	EXPECT_EQ(0, memcmp(via_ioctl, c->out.map, sizeof(via_ioctl)));
	/* The big CQE carries the job id: the next after the ioctl's. */
	EXPECT_EQ((__u32)id + 1, done.job_id);
}

/*
 * One URING_CMD on @ring with @len bytes of payload; returns its CQE's res.
 * liburing 2.3 has no prep helper: clear the SQE (both halves on SQE128
 * rings), then set opcode, fd, cmd_op and the payload.
 */
static int ring_cmd(struct io_uring *ring, int fd, __u32 op,
		    const void *payload, size_t len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int res;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, ring->flags & IORING_SETUP_SQE128 ? 2 * sizeof(*sqe) :
							   sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	memcpy(sqe->cmd, payload, len);
	if (io_uring_submit_and_wait(ring, 1) != 1 ||
	    io_uring_wait_cqe(ring, &cqe))
		return -EIO;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

TEST_F(uring, pointer_form_works_on_a_64_byte_sqe_ring)
{
	struct drm_vtpu_uring_submit_ptr ptr;
	struct drm_vtpu_submit s;
	struct io_uring ring;

	ASSERT_EQ(0, compute_setup(self->fd, &self->c[0], 5,
				   DRM_VTPU_PLACEMENT_AUTO));
	self->nc = 1;
	s = request(&self->c[0]);
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));

	ptr = (struct drm_vtpu_uring_submit_ptr){ .submit = (__u64)(uintptr_t)&s };
	EXPECT_EQ(0, ring_cmd(&ring, self->fd, DRM_VTPU_URING_SUBMIT_PTR,
			      &ptr, sizeof(ptr)));
	EXPECT_FALSE(vtpu_mem_is(self->c[0].out.map, 0, N * 4));

	/* The inline form needs 128-byte SQEs: -EINVAL on this ring. */
	EXPECT_EQ(-EINVAL, ring_cmd(&ring, self->fd, DRM_VTPU_URING_SUBMIT,
				    NULL, 0));
	/* Nonzero padding, a bad pointer and unknown commands. */
	ptr.pad = 1;
	EXPECT_EQ(-EINVAL, ring_cmd(&ring, self->fd, DRM_VTPU_URING_SUBMIT_PTR,
				    &ptr, sizeof(ptr)));
	ptr = (struct drm_vtpu_uring_submit_ptr){ .submit = 8 };
	EXPECT_EQ(-EFAULT, ring_cmd(&ring, self->fd, DRM_VTPU_URING_SUBMIT_PTR,
				    &ptr, sizeof(ptr)));
	EXPECT_EQ(-ENOTTY, ring_cmd(&ring, self->fd, 0x1234, NULL, 0));
	io_uring_queue_exit(&ring);
}

TEST_F(uring, iopoll_ring_gets_eopnotsupp)
{
	struct drm_vtpu_submit s;
	struct io_uring ring;

	ASSERT_EQ(0, compute_setup(self->fd, &self->c[0], 5,
				   DRM_VTPU_PLACEMENT_AUTO));
	self->nc = 1;
	s = request(&self->c[0]);
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, IORING_SETUP_IOPOLL |
					  IORING_SETUP_SQE128 |
					  IORING_SETUP_CQE32));
	EXPECT_EQ(-EOPNOTSUPP, ring_cmd(&ring, self->fd, DRM_VTPU_URING_SUBMIT,
					&s, sizeof(s)));
	io_uring_queue_exit(&ring);
	EXPECT_TRUE(vtpu_wait_idle(self->minor, 10));
}

/* Slow jobs, so that they are still in flight when we leave. */
static void submit_slow_batch(struct vtpu_sq *sq, int fd, struct vtpu_buf *prog,
			      size_t size, struct vtpu_buf *out,
			      struct drm_vtpu_binding *b, unsigned int n)
{
	unsigned int i;

	*b = (struct drm_vtpu_binding){ out->handle, DRM_VTPU_BIND_WRITE, 0,
					out->size };
	for (i = 0; i < n; i++) {
		struct drm_vtpu_submit s = {
			.program_handle = prog->handle, .program_size = size,
			.bindings = (__u64)(uintptr_t)b, .binding_count = 1,
		};

		vtpu_sq_queue(sq, &s, i);
	}
	vtpu_sq_submit(sq);
}

static void leave_with_jobs_in_flight(struct __test_metadata *_metadata,
				      int minor, bool kill_process)
{
	struct vtpu_bo_counts before, after;
	__s64 t_end;
	pid_t pid;
	int wst;

	ASSERT_EQ(0, vtpu_debugfs_counts(minor, &before));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct drm_vtpu_binding b;
		struct vtpu_buf prog, small, out;
		struct vtpu_sq sq;
		size_t size;
		int fd = vtpu_open(0);
		void *p = vtpu_prog_spin(64, 50, &size);
		__s64 t0 = vtpu_now_ns();

		if (fd < 0 || !p || vtpu_buf_prog(fd, p, size, &prog) ||
		    vtpu_buf_new(fd, 64 * 64 * 4, DRM_VTPU_PLACEMENT_AUTO, &out) ||
		    vtpu_sq_init(&sq, fd, 64, VTPU_SQ_URING))
			_exit(3);
		submit_slow_batch(&sq, fd, &prog, size, &out, &b, 32);
		/* and a chain of small ones behind them, killed with them */
		p = vtpu_prog_spin(8, 1, &size);
		if (!p || vtpu_buf_prog(fd, p, size, &small))
			_exit(3);
		submit_slow_batch(&sq, fd, &small, size, &out, &b, 32);
		fprintf(stderr, "# child: 64 jobs queued in %lld ms\n",
			(long long)(vtpu_now_ns() - t0) / 1000000);
		if (kill_process)
			kill(getpid(), SIGKILL);
		/* Tear the ring down under the jobs' feet, then the file. */
		vtpu_sq_fini(&sq);
		close(fd);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &wst, 0));
	t_end = vtpu_now_ns();
	if (kill_process) {
		ASSERT_TRUE(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
	} else {
		ASSERT_TRUE(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	}
	ASSERT_TRUE(vtpu_wait_idle(minor, 150)) TH_LOG("jobs still alive");
	TH_LOG("idle %lld ms after the child ended",
	       (long long)(vtpu_now_ns() - t_end) / 1000000);
	ASSERT_EQ(0, vtpu_debugfs_counts(minor, &after));
	EXPECT_EQ(before.hbm_bos, after.hbm_bos);
	EXPECT_EQ(before.host_bos, after.host_bos);
	EXPECT_EQ(before.hbm_bytes + before.host_bytes,
		  after.hbm_bytes + after.host_bytes);
}

TEST_F_TIMEOUT(uring, ring_closed_with_jobs_in_flight_leaks_nothing, 180)
{
	leave_with_jobs_in_flight(_metadata, self->minor, false);
}

TEST_F_TIMEOUT(uring, process_killed_mid_batch_leaks_nothing, 180)
{
	leave_with_jobs_in_flight(_metadata, self->minor, true);
}

/* The ring goes, the file stays: in-flight commands end -ECANCELED. */
TEST_F_TIMEOUT(uring, ring_exit_cancels_commands_exactly_once, 180)
{
	struct drm_vtpu_binding b;
	struct vtpu_buf prog, out;
	size_t size;
	void *p = vtpu_prog_spin(64, 50, &size);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &prog));
	free(p);
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 64 * 64 * 4,
				  DRM_VTPU_PLACEMENT_AUTO, &out));
	submit_slow_batch(&self->sq, self->fd, &prog, size, &out, &b, 16);
	EXPECT_EQ(16, vtpu_sq_outstanding(&self->sq));
	vtpu_sq_fini(&self->sq);
	/* The jobs run to their end and free everything, file still open. */
	EXPECT_TRUE(vtpu_wait_idle(self->minor, 120));
	vtpu_buf_free(self->fd, &prog);
	vtpu_buf_free(self->fd, &out);
	ASSERT_EQ(0, vtpu_sq_init(&self->sq, self->fd, 128, VTPU_SQ_URING));
}

/* The ioctl fallback behaves like the ring: same results, same errors. */
TEST_F(uring, ioctl_fallback_matches_uring)
{
	static float ref[N * (N + 1)];
	struct vtpu_completion done[4];
	struct vtpu_sq sq;
	unsigned int i, got = 0;

	ASSERT_EQ(0, vtpu_sq_init(&sq, self->fd, 8, VTPU_SQ_IOCTL));
	ASSERT_EQ(VTPU_SQ_IOCTL, sq.mode);
	for (i = 0; i < 4; i++, self->nc++) {
		struct drm_vtpu_submit s;

		ASSERT_EQ(0, compute_setup(self->fd, &self->c[i], 90 + i,
					   DRM_VTPU_PLACEMENT_AUTO));
		s = request(&self->c[i]);
		if (i == 3)
			s.flags = 2;
		ASSERT_EQ(0, vtpu_sq_queue(&sq, &s, i));
	}
	while (got < 4) {
		int r = vtpu_sq_reap(&sq, done + got, 4 - got, 1);

		ASSERT_LT(0, r);
		got += r;
	}
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(i, done[i].user_data);
		EXPECT_EQ(i == 3 ? -EINVAL : 0, done[i].status);
	}
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, compute_reference(&self->c[i], self->q.vmem_size,
					       ref));
		EXPECT_EQ(0, memcmp(ref, self->c[i].out.map, sizeof(ref)));
	}
	vtpu_sq_fini(&sq);
}

TEST_HARNESS_MAIN
