// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the attacks of the kernel-hardening issue, each as it was
 * first tried, each failing on the driver it was found in. A job that
 * plants its profile's trace_count must not steer the kernel's writes
 * into another process's buffer; a sync_file keeps vtpu.ko loaded; no
 * FPU section grows with one instruction's size; a file's jobs are
 * bounded, charged to its memory cgroup and killed when it goes; a
 * failed in-sync cancels a job; unused SQE fields are refused; a job
 * pins only the pages it binds; rings torn down while their jobs end
 * leave nothing behind.
 */
#include <linux/sync_file.h>
#include <liburing.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include "vtpu_job_util.h"

#include "kselftest_harness.h"

/* Where the core keeps its count in struct drm_vtpu_profile. */
#define TRACE_COUNT_OFFSET	56
#define TRACE_ID		7

FIXTURE(harden) {
	int fd;
	int minor;
	struct drm_vtpu_query q;
	unsigned long timeout_ms;
};

FIXTURE_SETUP(harden)
{
	self->fd = vtpu_open(0);
	ASSERT_LE(0, self->fd) TH_LOG("no vtpu device");
	self->minor = vtpu_minor(self->fd);
	ASSERT_EQ(0, vtpu_query(self->fd, &self->q));
	self->timeout_ms = vtpu_env_ulong("VTPU_JOB_TIMEOUT_MS", 2000);
}

FIXTURE_TEARDOWN(harden)
{
	close(self->fd);
}

static __s64 ms_since(__s64 t0)
{
	return (vtpu_now_ns() - t0) / 1000000;
}

/* A program from @as, in a fresh HOST buffer. */
static int finish_into(int fd, struct vtpu_asm *as, struct vtpu_buf *b,
		       size_t *size)
{
	void *p = vtpu_asm_finish(as, size);
	int ret;

	vtpu_asm_free(as);
	if (!p)
		return -ENOMEM;
	ret = vtpu_buf_prog(fd, p, *size, b);
	free(p);
	return ret;
}

/* END only: the cheapest job there is. */
static int end_program(int fd, struct vtpu_buf *b, size_t *size)
{
	struct vtpu_asm as;

	vtpu_asm_init(&as, 0, 0);
	vtpu_asm_end(&as);
	return finish_into(fd, &as, b, size);
}

/* Runs past the job timeout (see vtpu_job.c); binding 0 is written. */
static int runaway_program(int fd, struct vtpu_buf *b, size_t *size)
{
	void *p = vtpu_prog_spin(256, 4000, size);
	int ret;

	if (!p)
		return -ENOMEM;
	ret = vtpu_buf_prog(fd, p, *size, b);
	free(p);
	return ret;
}

/* A runaway job signalling @out_sync; @sink receives its output. */
static int submit_runaway(int fd, struct vtpu_buf *prog, size_t size,
			  struct vtpu_buf *sink, __u32 out_sync, __u64 *id)
{
	struct drm_vtpu_binding b = { sink->handle, DRM_VTPU_BIND_WRITE, 0,
				      256 * 256 * 4 };
	struct vtpu_submit_args a = {
		.prog = prog, .prog_size = size, .bind = &b, .nbind = 1,
		.out_sync = out_sync,
	};

	return vtpu_submit(fd, &a, id);
}

/*
 * The attack: binding 0 is the job's own profile, writable; the program
 * stores @planted over trace_count, then TRACEs. The kernel used to index
 * the TRACE record with what it read back.
 */
static int plant_program(int fd, __u32 planted, struct vtpu_buf *b,
			 size_t *size)
{
	struct vtpu_tile v = vtpu_tile_s32(0, 1, 1, 1);
	struct vtpu_asm as;

	vtpu_asm_init(&as, 4, 1);
	vtpu_asm_fill(&as, v, planted);
	vtpu_asm_dma_store(&as, v, 0, TRACE_COUNT_OFFSET, 4, VTPU_DT_S32);
	vtpu_asm_trace(&as, TRACE_ID);
	vtpu_asm_end(&as);
	return finish_into(fd, &as, b, size);
}

static void run_planted(struct __test_metadata *_metadata, int fd,
			__u32 prof_handle, struct drm_vtpu_profile *prof,
			__u32 planted)
{
	__u64 need = sizeof(*prof) + sizeof(prof->trace[0]);
	struct drm_vtpu_binding b = { prof_handle, DRM_VTPU_BIND_WRITE, 0,
				      need };
	struct vtpu_buf prog;
	size_t size;
	int status = -1;
	__u64 id;

	ASSERT_EQ(0, plant_program(fd, planted, &prog, &size));
	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = size, .bind = &b, .nbind = 1,
		.profile = prof_handle,
	};
	ASSERT_EQ(0, vtpu_submit(fd, &a, &id));
	ASSERT_EQ(0, vtpu_job_wait(fd, id, 60, &status));
	EXPECT_EQ(0, status);
	EXPECT_EQ(0, prof->status);
	/* The job's own count, whatever the program stored there. */
	EXPECT_EQ(1, prof->trace_count);
	EXPECT_EQ(TRACE_ID, prof->trace[0].id);
	EXPECT_NE(0, prof->trace[0].timestamp);
	vtpu_buf_free(fd, &prog);
}

/* The victim: another process, its own file, a buffer in HBM. */
static pid_t spawn_victim(int to_parent[2], int from_parent[2])
{
	pid_t pid = fork();
	struct drm_vtpu_bo_create c;
	__u64 addr = 0;
	void *map;
	char go;
	int fd;

	if (pid)
		return pid;
	fd = vtpu_open(0);
	if (fd < 0 || vtpu_bo_create(fd, 4096, DRM_VTPU_PLACEMENT_HBM, &c))
		_exit(2);
	map = vtpu_bo_mmap(fd, c.handle, 4096);
	if (map == MAP_FAILED)
		_exit(2);
	vtpu_fill_pattern(map, 4096, 0x5a5a);
	addr = c.device_addr;
	if (write(to_parent[1], &addr, sizeof(addr)) != sizeof(addr) ||
	    read(from_parent[0], &go, 1) != 1)
		_exit(2);
	_exit(vtpu_check_pattern(map, 4096, 0x5a5a) ? 0 : 1);
}

TEST_F_TIMEOUT(harden, planted_trace_count_cannot_steer_kernel_writes, 240)
{
	struct drm_vtpu_bo_create pc;
	int to_parent[2], from_parent[2], wstatus;
	struct drm_vtpu_profile *prof;
	__u64 victim_addr, index;
	pid_t victim;

	ASSERT_EQ(0, vtpu_bo_create(self->fd, 4096, DRM_VTPU_PLACEMENT_HBM,
				    &pc));
	prof = vtpu_bo_mmap(self->fd, pc.handle, 4096);
	ASSERT_NE(MAP_FAILED, prof);

	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, pipe(from_parent));
	victim = spawn_victim(to_parent, from_parent);
	ASSERT_LT(0, victim);
	ASSERT_EQ(sizeof(victim_addr),
		  read(to_parent[0], &victim_addr, sizeof(victim_addr)));

	/* HBM is allocated bottom up: the victim lies above the profile. */
	ASSERT_LE(pc.device_addr + 4096, victim_addr);
	index = (victim_addr - pc.device_addr - sizeof(*prof)) /
		sizeof(prof->trace[0]);
	TH_LOG("profile at 0x%llx, victim at 0x%llx: planting index %llu",
	       (unsigned long long)pc.device_addr,
	       (unsigned long long)victim_addr, (unsigned long long)index);
	run_planted(_metadata, self->fd, pc.handle, prof, (__u32)index);

	ASSERT_EQ(1, write(from_parent[1], "x", 1));
	ASSERT_EQ(victim, waitpid(victim, &wstatus, 0));
	EXPECT_TRUE(WIFEXITED(wstatus));
	EXPECT_EQ(0, WEXITSTATUS(wstatus)) TH_LOG("the victim's buffer changed");

	/* An index far outside HBM, into vmalloc space (it used to Oops). */
	run_planted(_metadata, self->fd, pc.handle, prof, 0x7fffffff);
	run_planted(_metadata, self->fd, pc.handle, prof, 0xffffffff);

	munmap(prof, 4096);
	vtpu_bo_close(self->fd, pc.handle);
	close(to_parent[0]);
	close(to_parent[1]);
	close(from_parent[0]);
	close(from_parent[1]);
}

static long module_refcnt(void)
{
	FILE *f = fopen("/sys/module/vtpu/refcnt", "re");
	long n = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/*
 * A job's out-fence exported as a sync_file outlives every file of the
 * device: it must keep vtpu.ko loaded (rmmod used to succeed, and the
 * sync_file then read freed memory).
 */
TEST(sync_file_keeps_the_module_loaded)
{
	struct sync_fence_info fi = {};
	struct sync_file_info info = {};
	struct vtpu_buf prog;
	long base, held;
	__u32 sync;
	size_t size;
	int fd, sf;

	base = module_refcnt();
	ASSERT_LE(0, base) TH_LOG("no /sys/module/vtpu/refcnt");

	fd = vtpu_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, drmSyncobjCreate(fd, 0, &sync));
	ASSERT_EQ(0, end_program(fd, &prog, &size));
	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = size, .out_sync = sync,
	};
	ASSERT_EQ(0, vtpu_submit(fd, &a, NULL));
	ASSERT_EQ(0, drmSyncobjWait(fd, &sync, 1, INT64_MAX, 0, NULL));
	ASSERT_EQ(0, drmSyncobjExportSyncFile(fd, sync, &sf));
	drmSyncobjDestroy(fd, sync);
	vtpu_buf_free(fd, &prog);
	close(fd);

	held = module_refcnt();
	EXPECT_EQ(base + 1, held) TH_LOG("the sync_file does not pin vtpu.ko");

	info.num_fences = 1;
	info.sync_fence_info = (__u64)(uintptr_t)&fi;
	ASSERT_EQ(0, ioctl(sf, SYNC_IOC_FILE_INFO, &info));
	EXPECT_EQ(1, info.status);
	EXPECT_STREQ("vtpu", fi.driver_name);
	EXPECT_EQ(1, fi.status);

	close(sf);
	EXPECT_EQ(base, module_refcnt());
}

/*
 * The executor's work budget of one FPU section and the most one piece of
 * an instruction may exceed it by: driver/vtpu_exec.h's VTPU_EXEC_BUDGET
 * and VTPU_EXEC_PIECE_MAX, which are not ABI. A test that fails because
 * they changed should change with them.
 */
#define EXEC_BUDGET	(1ll << 21)
#define EXEC_PIECE_MAX	(1ll << 18)

struct section_stats {
	long long max_ns;	/* the longest section, wall clock */
	long long count;	/* sections run */
	long long max_work;	/* most work done in one section */
};

/* debugfs "cores": every core's section statistics, summed or maxed. */
static int section_stats(int minor, struct section_stats *st)
{
	long long jobs, t, busy, ns, chained, count, work;
	char path[PATH_MAX], line[256];
	unsigned int core;
	int cores = 0;
	FILE *f;

	memset(st, 0, sizeof(*st));
	if (vtpu_debugfs_path(minor, "cores", path, sizeof(path)))
		return -ENOENT;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line,
			   "core %u: jobs %lld timeouts %lld busy_ns %lld section_max_ns %lld chained %lld sections %lld section_max_work %lld",
			   &core, &jobs, &t, &busy, &ns, &chained, &count,
			   &work) != 8)
			continue;
		cores++;
		st->count += count;
		if (ns > st->max_ns)
			st->max_ns = ns;
		if (work > st->max_work)
			st->max_work = work;
	}
	fclose(f);
	return cores ? 0 : -EPROTO;
}

static int reset_sections(int minor)
{
	char path[PATH_MAX];
	int fd, ret = 0;

	if (vtpu_debugfs_path(minor, "cores", path, sizeof(path)))
		return -ENOENT;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "0\n", 2) != 2)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * One MATMUL whose three tiles fill VMEM: its work grows with VMEM^1.5,
 * and it used to run in a single non-preemptible section (43 s under
 * TCG at vmem_kib=8192, beyond the watchdog's reach). Now no section is
 * more than a small part of the instruction. That is checked in the
 * executor's work units, which are the same on every run: a section's
 * wall-clock time also counts whatever preempted the VM's vCPU (a TCG
 * guest on a busy host once saw one section take 28 % of the job).
 */
TEST_F_TIMEOUT(harden, one_huge_matmul_runs_in_many_short_sections, 300)
{
	unsigned int n = (unsigned int)sqrt(self->q.vmem_size / 12.0) & ~7u;
	struct vtpu_buf prog, prof;
	struct drm_vtpu_profile *p;
	struct section_stats st;
	struct vtpu_asm as;
	int status = -1;
	long long dur;
	size_t size;
	__u64 id;

	/* At vmem_kib=1024, the default, n is 288: about 10 sections. */
	if (n < 288)
		SKIP(return, "vmem_kib=%u: too small for a MATMUL of 8 sections",
		     (unsigned int)(self->q.vmem_size >> 10));
	vtpu_asm_init(&as, 3 * n * n * 4, 0);
	vtpu_asm_matmul(&as, vtpu_tile_f32(2 * n * n * 4, n, n, n),
			vtpu_tile_f32(0, n, n, n),
			vtpu_tile_f32(n * n * 4, n, n, n), 0);
	vtpu_asm_end(&as);
	ASSERT_EQ(0, finish_into(self->fd, &as, &prog, &size));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_HOST,
				  &prof));
	ASSERT_EQ(0, reset_sections(self->minor))
		TH_LOG("debugfs \"cores\" is not writable");

	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = size, .profile = prof.handle,
	};
	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 240, &status));
	ASSERT_EQ(0, status);
	p = prof.map;
	dur = p->end - p->start;
	ASSERT_EQ(0, section_stats(self->minor, &st));
	TH_LOG("%ux%ux%u MATMUL: %lld us on the core in %lld sections, longest %lld us, most work %lld",
	       n, n, n, dur / 1000, st.count, st.max_ns / 1000, st.max_work);
	/* A section stops once it has done the budget, less one piece. */
	EXPECT_LE(st.max_work, EXEC_BUDGET + EXEC_PIECE_MAX);
	EXPECT_LT(EXEC_BUDGET / 2, st.max_work);
	/*
	 * Every section but the last did at least EXEC_BUDGET, so with 8
	 * or more none did more than (2^21 + 2^18) / (7 * 2^21), 18 %, of
	 * the work.
	 */
	EXPECT_LE(8, st.count);
	EXPECT_LT(st.max_ns, dur);

	vtpu_buf_free(self->fd, &prog);
	vtpu_buf_free(self->fd, &prof);
}

/*
 * Closing a file kills its queued jobs at once (-ESRCH); the running one
 * runs to its end. close() used to wait for every queued job.
 */
TEST_F_TIMEOUT(harden, close_kills_queued_jobs_at_once, 120)
{
	struct sync_fence_info fi = {};
	struct sync_file_info info = {};
	struct vtpu_buf spin, sink, end;
	__u32 sync, last = 0;
	size_t ss, se;
	__s64 t0;
	int f2, sf, i;

	f2 = vtpu_open(0);
	ASSERT_LE(0, f2);
	ASSERT_EQ(0, runaway_program(f2, &spin, &ss));
	ASSERT_EQ(0, vtpu_buf_new(f2, 256 * 256 * 4, DRM_VTPU_PLACEMENT_AUTO,
				  &sink));
	ASSERT_EQ(0, end_program(f2, &end, &se));
	/* Eight runaways: sixteen timeouts' worth of work on two cores. */
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, drmSyncobjCreate(f2, 0, &sync));
		ASSERT_EQ(0, submit_runaway(f2, &spin, ss, &sink, sync, NULL));
		if (last)
			drmSyncobjDestroy(f2, last);
		last = sync;
	}
	ASSERT_EQ(0, drmSyncobjExportSyncFile(f2, last, &sf));
	vtpu_buf_free(f2, &spin);
	vtpu_buf_free(f2, &sink);
	vtpu_buf_free(f2, &end);

	/*
	 * Waiting for the queue would take about 7 timeouts (14 s at the
	 * default); the bound leaves the rest to a noisy host.
	 */
	t0 = vtpu_now_ns();
	close(f2);
	EXPECT_GT(3 * self->timeout_ms, ms_since(t0))
		TH_LOG("close() waited %lld ms", (long long)ms_since(t0));

	/* The last job never ran: its fence says so, once the one ahead ends. */
	{
		struct pollfd pfd = { .fd = sf, .events = POLLIN };

		ASSERT_EQ(1, poll(&pfd, 1, 3 * self->timeout_ms));
	}
	info.num_fences = 1;
	info.sync_fence_info = (__u64)(uintptr_t)&fi;
	ASSERT_EQ(0, ioctl(sf, SYNC_IOC_FILE_INFO, &info));
	EXPECT_EQ(-ESRCH, fi.status);
	close(sf);

	/* Only the running jobs are left: idle within one timeout or so. */
	EXPECT_TRUE(vtpu_wait_idle(self->minor, 3 * self->timeout_ms / 1000));
	TH_LOG("idle %lld ms after close", (long long)ms_since(t0));
}

/*
 * Files closed with jobs queued while the scheduler pops them, and
 * another file keeps pushing to the same cores. 6.12's scheduler could
 * leave a killed entity in its run queue's tree and the next push walk
 * it once freed (an Oops the kernel fuzzer found after 478 s): vtpu.ko
 * kills entities with the schedulers stopped. The race is narrow: these
 * 200 rounds did not hit it with the module before that fix either, so
 * this is a stress of close against scheduling, not its reproducer.
 */
TEST_F_TIMEOUT(harden, files_closed_as_their_jobs_are_scheduled, 240)
{
	struct vtpu_buf end;
	int round, i, wstatus;
	size_t se;
	pid_t pusher;

	pusher = fork();
	ASSERT_LE(0, pusher);
	if (!pusher) {
		int fd = vtpu_open(0);
		struct vtpu_buf e;
		size_t s;
		__u64 id;

		if (fd < 0 || end_program(fd, &e, &s))
			_exit(2);
		for (;;) {
			struct vtpu_submit_args a = { .prog = &e, .prog_size = s };
			int status;

			if (vtpu_submit(fd, &a, &id) ||
			    vtpu_job_wait(fd, id, 30, &status) || status)
				_exit(3);
		}
	}
	for (round = 0; round < 200; round++) {
		int f2 = vtpu_open(0);

		ASSERT_LE(0, f2);
		ASSERT_EQ(0, end_program(f2, &end, &se));
		for (i = 0; i < 24; i++) {
			struct vtpu_submit_args a = { .prog = &end, .prog_size = se };

			ASSERT_EQ(0, vtpu_submit(f2, &a, NULL));
		}
		/* The queued jobs hold the program buffer. */
		vtpu_buf_free(f2, &end);
		close(f2);
	}
	ASSERT_EQ(0, kill(pusher, SIGKILL));
	ASSERT_EQ(pusher, waitpid(pusher, &wstatus, 0));
	EXPECT_TRUE(WIFSIGNALED(wstatus)) TH_LOG("the pushing child failed");
	EXPECT_TRUE(vtpu_wait_idle(self->minor, 60));
}

/* SQE128 ring; one inline SUBMIT of @s with @mutate applied to the SQE. */
static int uring_submit(struct io_uring *ring, int fd,
			const struct drm_vtpu_submit *s,
			void (*mutate)(struct io_uring_sqe *sqe))
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = DRM_VTPU_URING_SUBMIT;
	memcpy(sqe->cmd, s, sizeof(*s));
	if (mutate)
		mutate(sqe);
	return 0;
}

/* Submits what is queued, reaps one CQE; its res. */
static int uring_reap(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int res;

	if (io_uring_submit_and_wait(ring, 1) < 0 ||
	    io_uring_wait_cqe(ring, &cqe))
		return -EIO;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/*
 * A file may not have more than DRM_VTPU_MAX_JOBS jobs, whichever way
 * they came in (io_uring used to accept 8192 past the ioctl's cap).
 */
TEST_F_TIMEOUT(harden, jobs_per_file_are_capped_on_every_path, 300)
{
	struct vtpu_buf end;
	struct drm_vtpu_submit s;
	struct drm_vtpu_sync in;
	struct io_uring ring;
	__u32 sync, fence = 0;
	int i, f2, vgem;
	size_t se;

	vgem = vtpu_vgem_open();
	if (vgem < 0)
		SKIP(return, "no vgem: the jobs wait on a vgem fence");
	f2 = vtpu_open(0);
	ASSERT_LE(0, f2);
	ASSERT_EQ(0, io_uring_queue_init(64, &ring, IORING_SETUP_SQE128));
	ASSERT_EQ(0, end_program(f2, &end, &se));
	ASSERT_EQ(0, drmSyncobjCreate(f2, 0, &sync));
	/*
	 * Every job waits on a fence the test holds: none ends while the
	 * cap fills, however slow the kernel (a runaway's timeout did not
	 * last long enough under KASAN).
	 */
	ASSERT_EQ(0, vtpu_vgem_held_fence(vgem, f2, sync, &fence));
	in = (struct drm_vtpu_sync){ .handle = sync };
	s = (struct drm_vtpu_submit){
		.program_handle = end.handle, .program_size = se,
		.in_syncs = (__u64)(uintptr_t)&in, .in_sync_count = 1,
	};
	for (i = 0; i < DRM_VTPU_MAX_JOBS / 2; i++) {
		ASSERT_EQ(0, uring_submit(&ring, f2, &s, NULL));
		if (io_uring_sq_ready(&ring) == 32)
			ASSERT_EQ(32, io_uring_submit(&ring));
	}
	ASSERT_LE(0, io_uring_submit(&ring));
	for (; i < DRM_VTPU_MAX_JOBS; i++)
		ASSERT_EQ(0, vtpu_ioctl(f2, DRM_IOCTL_VTPU_SUBMIT, &s))
			TH_LOG("job %d", i);

	EXPECT_EQ(-EBUSY, vtpu_ioctl(f2, DRM_IOCTL_VTPU_SUBMIT, &s));
	ASSERT_EQ(0, uring_submit(&ring, f2, &s, NULL));
	EXPECT_EQ(-EBUSY, uring_reap(&ring));
	/* Another file is not held back by this one. */
	{
		struct vtpu_buf e2;
		size_t s2;
		int st = -1;
		__u64 id = 0;

		ASSERT_EQ(0, end_program(self->fd, &e2, &s2));
		struct vtpu_submit_args a = { .prog = &e2, .prog_size = s2 };
		EXPECT_EQ(0, vtpu_submit(self->fd, &a, &id));
		EXPECT_EQ(0, vtpu_job_wait(self->fd, id, 60, &st));
		EXPECT_EQ(0, st);
		vtpu_buf_free(self->fd, &e2);
	}

	EXPECT_EQ(0, vtpu_vgem_signal(vgem, fence));
	close(vgem);
	vtpu_buf_free(f2, &end);
	io_uring_queue_exit(&ring);
	close(f2);
	EXPECT_TRUE(vtpu_wait_idle(self->minor, 3 * self->timeout_ms / 1000));
}

/* memory.current of the cgroup at @dir, or -1. */
static long long cg_current(const char *dir)
{
	char path[PATH_MAX];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.current", dir);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int cg_write(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Queued jobs' kernel memory (here, their copies of a 1 MiB program) is
 * charged to the submitter's memory cgroup: it used to grow vmalloc
 * while the process's accounts did not move.
 */
TEST_F_TIMEOUT(harden, queued_jobs_are_charged_to_the_submitters_cgroup, 240)
{
	static const char root[] = "/sys/fs/cgroup";
	char dir[PATH_MAX], pid[32];
	struct vtpu_buf spin, sink, big;
	struct drm_vtpu_sync in;
	long long before, after;
	struct vtpu_asm as;
	size_t ss, sb;
	__u32 sync;
	int i, f2;

	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("none", root, "cgroup2", 0, NULL));
	ASSERT_EQ(0, cg_write(root, "cgroup.subtree_control", "+memory"));
	snprintf(dir, sizeof(dir), "%s/vtpu-harden-%d", root, getpid());
	ASSERT_EQ(0, mkdir(dir, 0755));
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, cg_write(dir, "cgroup.procs", pid));

	f2 = vtpu_open(0);
	ASSERT_LE(0, f2);
	ASSERT_EQ(0, runaway_program(f2, &spin, &ss));
	ASSERT_EQ(0, vtpu_buf_new(f2, 256 * 256 * 4, DRM_VTPU_PLACEMENT_AUTO,
				  &sink));
	{
		/* 1 MiB of constants: the copy each job keeps is that big. */
		float *c = calloc(256 * 1024, sizeof(*c));

		ASSERT_NE(NULL, c);
		vtpu_asm_init(&as, 0, 0);
		vtpu_asm_const(&as, c, 256 * 1024 * sizeof(*c));
		vtpu_asm_end(&as);
		free(c);
		ASSERT_EQ(0, finish_into(f2, &as, &big, &sb));
	}
	ASSERT_EQ(0, drmSyncobjCreate(f2, 0, &sync));
	ASSERT_EQ(0, submit_runaway(f2, &spin, ss, &sink, sync, NULL));
	in = (struct drm_vtpu_sync){ .handle = sync };

	before = cg_current(dir);
	ASSERT_LT(0, before);
	for (i = 0; i < 32; i++) {
		struct vtpu_submit_args a = {
			.prog = &big, .prog_size = sb, .in = &in, .nin = 1,
		};

		ASSERT_EQ(0, vtpu_submit(f2, &a, NULL));
	}
	after = cg_current(dir);
	TH_LOG("32 queued jobs of a %zu-byte program: +%lld KiB charged",
	       sb, (after - before) / 1024);
	EXPECT_LT(before + 24 * (long long)MiB, after);

	vtpu_buf_free(f2, &spin);
	vtpu_buf_free(f2, &sink);
	vtpu_buf_free(f2, &big);
	close(f2);
	EXPECT_TRUE(vtpu_wait_idle(self->minor, 3 * self->timeout_ms / 1000));
	cg_write(root, "cgroup.procs", pid);
	rmdir(dir);
}

/* A program that fills binding 0 (4096 bytes) with 7.0f. */
static int fill_program(int fd, struct vtpu_buf *b, size_t *size)
{
	struct vtpu_tile t = vtpu_tile_f32(0, 1, 1024, 1024);
	struct vtpu_asm as;

	vtpu_asm_init(&as, 4096, 1);
	vtpu_asm_fill_f32(&as, t, 7.0f);
	vtpu_asm_dma_store(&as, t, 0, 0, 4096, VTPU_DT_F32);
	vtpu_asm_end(&as);
	return finish_into(fd, &as, b, size);
}

/* Its input may be garbage: a job whose in-sync failed never runs. */
TEST_F_TIMEOUT(harden, failed_in_sync_cancels_the_job, 120)
{
	struct vtpu_buf spin, sink, prog, x;
	struct drm_vtpu_binding bx;
	struct drm_vtpu_sync in;
	int status = 0, st = 0;
	__u64 ids, idx;
	size_t ss, sp;
	__u32 sync;

	ASSERT_EQ(0, runaway_program(self->fd, &spin, &ss));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 256 * 256 * 4,
				  DRM_VTPU_PLACEMENT_AUTO, &sink));
	ASSERT_EQ(0, fill_program(self->fd, &prog, &sp));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_HOST, &x));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync));
	ASSERT_EQ(0, submit_runaway(self->fd, &spin, ss, &sink, sync, &ids));

	in = (struct drm_vtpu_sync){ .handle = sync };
	bx = (struct drm_vtpu_binding){ x.handle, DRM_VTPU_BIND_WRITE, 0, 4096 };
	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = sp, .bind = &bx, .nbind = 1,
		.in = &in, .nin = 1,
	};
	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &idx));

	ASSERT_EQ(0, vtpu_job_wait(self->fd, ids, 60, &st));
	EXPECT_EQ(-ETIMEDOUT, st);
	ASSERT_EQ(0, vtpu_job_wait(self->fd, idx, 60, &status));
	EXPECT_EQ(-ECANCELED, status);
	EXPECT_TRUE(vtpu_mem_is(x.map, 0, 4096)) TH_LOG("the job ran");

	drmSyncobjDestroy(self->fd, sync);
	vtpu_buf_free(self->fd, &spin);
	vtpu_buf_free(self->fd, &sink);
	vtpu_buf_free(self->fd, &prog);
	vtpu_buf_free(self->fd, &x);
}

static void set_addr(struct io_uring_sqe *sqe) { sqe->addr = 0x1000; }
static void set_len(struct io_uring_sqe *sqe) { sqe->len = 1; }
static void set_buf_index(struct io_uring_sqe *sqe) { sqe->buf_index = 1; }
static void set_file_index(struct io_uring_sqe *sqe) { sqe->file_index = 1; }
static void set_fixed(struct io_uring_sqe *sqe)
{
	sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
}

/* Unused SQE fields must be zero, or they can never get a meaning. */
TEST_F(harden, uring_refuses_garbage_in_unused_sqe_fields)
{
	static void (*const mutate[])(struct io_uring_sqe *) = {
		set_addr, set_len, set_buf_index, set_file_index, set_fixed,
	};
	static const char *const name[] = {
		"addr", "len", "buf_index", "file_index", "URING_CMD_FIXED",
	};
	char page[4096] __attribute__((aligned(4096)));
	struct iovec iov = { page, sizeof(page) };
	struct drm_vtpu_submit s;
	struct io_uring ring;
	struct vtpu_buf end;
	__u64 id0, id1;
	size_t se;
	unsigned int i;

	ASSERT_EQ(0, io_uring_queue_init(8, &ring, IORING_SETUP_SQE128));
	/* So that FIXED reaches the driver rather than io_uring's check. */
	ASSERT_EQ(0, io_uring_register_buffers(&ring, &iov, 1));
	ASSERT_EQ(0, end_program(self->fd, &end, &se));
	struct vtpu_submit_args a = { .prog = &end, .prog_size = se };
	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id0));

	s = (struct drm_vtpu_submit){
		.program_handle = end.handle, .program_size = se,
	};
	for (i = 0; i < ARRAY_SIZE(mutate); i++) {
		ASSERT_EQ(0, uring_submit(&ring, self->fd, &s, mutate[i]));
		EXPECT_EQ(-EINVAL, uring_reap(&ring)) TH_LOG("%s", name[i]);
	}
	/* Nothing was queued: the next job id follows the last one. */
	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id1));
	EXPECT_EQ(id0 + 1, id1);
	ASSERT_EQ(0, uring_submit(&ring, self->fd, &s, NULL));
	EXPECT_EQ(0, uring_reap(&ring));

	vtpu_buf_free(self->fd, &end);
	io_uring_queue_exit(&ring);
}

/* "Shmem:" of /proc/meminfo, in KiB. */
static long long shmem_kib(void)
{
	char line[128];
	long long v = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Shmem: %lld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/*
 * Binding 4 KiB of a big backing-store buffer pins those 4 KiB, and only
 * while the job holds them: it used to pin the whole buffer until it was
 * freed, unseen in fdinfo and RSS.
 */
TEST_F_TIMEOUT(harden, a_job_pins_only_the_pages_it_binds, 120)
{
	__u64 big = 64 * MiB, off = 8 * MiB;
	long long shm0, shm1, res0, res1;
	struct drm_vtpu_bo_create c;
	struct drm_vtpu_binding b;
	struct vtpu_buf prog;
	int status = -1;
	size_t sp;
	__u64 id;

	if (big > self->q.max_bo_size)
		big = self->q.max_bo_size & ~(MiB - 1);
	ASSERT_LT(off + 4096, big);
	ASSERT_EQ(0, fill_program(self->fd, &prog, &sp));
	ASSERT_EQ(0, vtpu_bo_create(self->fd, big, DRM_VTPU_PLACEMENT_HOST, &c));

	shm0 = shmem_kib();
	res0 = vtpu_fdinfo_value(self->fd, "drm-resident-host");
	b = (struct drm_vtpu_binding){ c.handle, DRM_VTPU_BIND_WRITE, off, 4096 };
	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = sp, .bind = &b, .nbind = 1,
	};
	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 60, &status));
	ASSERT_EQ(0, status);
	shm1 = shmem_kib();
	res1 = vtpu_fdinfo_value(self->fd, "drm-resident-host");
	TH_LOG("bound 4 KiB of %llu MiB: Shmem +%lld KiB, drm-resident-host +%lld KiB",
	       (unsigned long long)(big / MiB), shm1 - shm0, res1 - res0);
	EXPECT_GT(1024, shm1 - shm0);
	/* fdinfo counts what exists: the one page the job wrote. */
	EXPECT_EQ(4, res1 - res0);

	/* And the job really wrote there. */
	{
		float *m = vtpu_bo_mmap(self->fd, c.handle, big);

		ASSERT_NE(MAP_FAILED, m);
		EXPECT_EQ(7.0f, m[off / 4]);
		EXPECT_EQ(7.0f, m[off / 4 + 1023]);
		EXPECT_EQ(0.0f, m[off / 4 + 1024]);
		munmap(m, big);
	}
	vtpu_bo_close(self->fd, c.handle);
	vtpu_buf_free(self->fd, &prog);
}

/*
 * The debugfs "bos" line of the one buffer of @size bytes: its kept
 * mapping's range and users, or -ENOENT (no such buffer) or 0 with
 * *off = *len = 0 (not mapped).
 */
static int kept_mapping(int minor, __u64 size, unsigned long long *off,
			unsigned long long *len, unsigned int *users)
{
	char path[PATH_MAX], line[256], want[64];
	int ret = -ENOENT;
	FILE *f;

	if (vtpu_debugfs_path(minor, "bos", path, sizeof(path)))
		return -ENOENT;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	snprintf(want, sizeof(want), "host size %llu ", (unsigned long long)size);
	while (fgets(line, sizeof(line), f)) {
		const char *k;

		if (strncmp(line, want, strlen(want)))
			continue;
		*off = *len = 0;
		*users = 0;
		k = strstr(line, " kmap ");
		if (k && sscanf(k, " kmap %llu+%llu users %u", off, len,
				users) != 3)
			break;
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/*
 * A backing-store range bound by one job stays mapped for the next job
 * that binds it (weights and pooled scratch are bound at every run, and
 * mapping them per job cost more than running a small model), is
 * replaced when an idle buffer is bound elsewhere, and goes with the
 * buffer. Results stay right throughout.
 */
TEST_F_TIMEOUT(harden, backing_store_ranges_stay_mapped_between_jobs, 120)
{
	const __u64 size = 3 * MiB + 5 * 4096;	/* no other buffer has it */
	unsigned long long off, len;
	struct drm_vtpu_bo_create c;
	struct drm_vtpu_binding b;
	struct vtpu_buf prog;
	unsigned int users;
	int i, status;
	size_t sp;
	float *m;
	__u64 id;

	ASSERT_EQ(0, fill_program(self->fd, &prog, &sp));
	ASSERT_EQ(0, vtpu_bo_create(self->fd, size, DRM_VTPU_PLACEMENT_HOST, &c));
	ASSERT_EQ(0, kept_mapping(self->minor, size, &off, &len, &users));
	EXPECT_EQ(0, len);
	for (i = 0; i < 3; i++) {
		/* Jobs 0 and 1 bind page 2, job 2 page 700. */
		__u64 at = (i < 2 ? 2 : 700) * 4096ull;
		struct vtpu_submit_args a = {
			.prog = &prog, .prog_size = sp, .bind = &b, .nbind = 1,
		};

		b = (struct drm_vtpu_binding){ c.handle, DRM_VTPU_BIND_WRITE,
					       at, 4096 };
		ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
		status = -1;
		ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 60, &status));
		ASSERT_EQ(0, status);
		/*
		 * A job lets go of its buffers when the scheduler frees it,
		 * just after its fence signals: on a loaded machine JOB_WAIT
		 * can return first. Up to 5 s for that.
		 */
		for (int t = 0; t < 500; t++) {
			ASSERT_EQ(0, kept_mapping(self->minor, size, &off, &len,
						  &users));
			if (!users)
				break;
			usleep(10000);
		}
		EXPECT_EQ(at, off);
		EXPECT_EQ(4096, len);
		EXPECT_EQ(0, users) TH_LOG("job %d ended but holds the mapping", i);
	}
	m = vtpu_bo_mmap(self->fd, c.handle, size);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(7.0f, m[2 * 1024]);
	EXPECT_EQ(7.0f, m[700 * 1024 + 1023]);
	EXPECT_EQ(0.0f, m[3 * 1024]);
	munmap(m, size);
	vtpu_bo_close(self->fd, c.handle);
	EXPECT_EQ(-ENOENT, kept_mapping(self->minor, size, &off, &len, &users));
	vtpu_buf_free(self->fd, &prog);
}

/*
 * Rings torn down (by exit) while their jobs are ending: the completion
 * and the cancellation race for each command. Under KASAN this finds a
 * request freed while its command is still cancelable.
 */
TEST_F_TIMEOUT(harden, rings_torn_down_as_their_jobs_end, 300)
{
	struct compute c;
	int round, i;

	ASSERT_EQ(0, compute_setup(self->fd, &c, 3, DRM_VTPU_PLACEMENT_AUTO));
	for (round = 0; round < 24; round++) {
		int wstatus;
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			struct drm_vtpu_submit s = {
				.program_handle = c.prog.handle,
				.program_size = c.prog_size,
				.bindings = (__u64)(uintptr_t)c.bind,
				.binding_count = 3,
			};
			struct io_uring ring;

			if (io_uring_queue_init(16, &ring, IORING_SETUP_SQE128))
				_exit(2);
			for (i = 0; i < 16; i++)
				uring_submit(&ring, self->fd, &s, NULL);
			io_uring_submit(&ring);
			/* Leave as the first jobs end, by round. */
			usleep(round * 2000);
			_exit(round & 1 ? 0 : (raise(SIGKILL), 3));
		}
		ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
		/* Exited or killed, as planned; 2 means no ring. */
		EXPECT_FALSE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 2);
	}
	EXPECT_TRUE(vtpu_wait_idle(self->minor, 60));
	compute_teardown(self->fd, &c);
}

TEST_HARNESS_MAIN
