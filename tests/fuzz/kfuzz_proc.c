// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * Files and processes for vtpu-kfuzz: opens, dups, closes with work
 * queued, reads of what the driver reports (fdinfo, sysfs, debugfs) while
 * jobs run, and children that submit on their own file or the one they
 * inherit and then leave, or are killed, with the work still queued.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kfuzz.h"

/* --- files ---------------------------------------------------------------------------- */

static void read_file(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

/* Reads what the driver reports about itself while jobs run. */
static void read_reports(struct kf_rng *r, struct kf_file *f)
{
	static const char *const sysfs[] = {
		"hbm_used", "hbm_largest_free", "hbm_free_blocks",
		"host_bytes", "cores",
	};
	char path[256];
	int minor = kf.devs[f->dev].minor;

	switch (kf_below(r, 3)) {
	case 0:
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d",
			 kf_file_fd(f, r));
		break;
	case 1:
		snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/%s",
			 minor, sysfs[kf_below(r, 5)]);
		break;
	default:
		snprintf(path, sizeof(path), "/sys/kernel/debug/accel/vtpu.%d/%s",
			 f->dev, kf_chance(r, 50) ? "bos" : "cores");
		break;
	}
	kf_note(" read %s", path);
	read_file(path);
}

void kf_op_fd(struct kf_rng *r)
{
	struct kf_file *f = kf_file_pick(r);
	int fd, i;

	if (!f)
		return;
	switch (kf_below(r, 10)) {
	case 0: case 1:
		i = kf_file_open(kf_below(r, kf.ndevs));
		kf_note(" open -> %d", i);
		break;
	case 2:
		kf_note(" close file %d with %d jobs pending", (int)(f - kf.files),
			f->npending);
		kf_file_close(f);
		break;
	case 3:
		if (f->nfds == KF_MAX_FDS)
			break;
		fd = fcntl(f->fds[0], F_DUPFD_CLOEXEC, 0);
		kf_note(" dup %d -> %d", f->fds[0], fd);
		if (fd >= 0)
			f->fds[f->nfds++] = fd;
		break;
	case 4:
		/* The first fd goes, a dup stays: the file lives on. */
		if (f->nfds < 2)
			break;
		kf_note(" close fd %d of 2+", f->fds[0]);
		close(f->fds[0]);
		f->fds[0] = f->fds[--f->nfds];
		break;
	default:
		read_reports(r, f);
		break;
	}
}

/* --- processes ------------------------------------------------------------------------- */

/*
 * A child: submits work on its own file or on the inherited one, through
 * ioctls or a ring, and then leaves with the work queued, or waits and is
 * killed in the wait.
 */
static void child_main(uint64_t seed, int mode, int parent_file)
{
	struct kf_rng r = { seed };
	struct kf_file *f;
	struct kf_req *q = malloc(sizeof(*q));
	struct io_uring ring;
	int i, n = 1 + kf_below(&r, 8), idx, status;
	bool have_ring = false;

	alarm(20);
	/* The parent's rings and children are not ours to touch. */
	memset(kf.rings, 0, sizeof(kf.rings));
	kf.nchildren = 0;
	if (mode == 2 && parent_file >= 0 && kf.files[parent_file].live) {
		f = &kf.files[parent_file];
		/*
		 * A fresh arena (io-wq may still read the parent's) and no
		 * buffers: the parent closes its own as it goes on.
		 */
		f->arena_map = NULL;
		f->arena_written = 0;
		f->nbos = 0;
		f->nsyncobjs = 0;
		f->nprogs = 0;
	} else {
		idx = kf_file_open(kf_below(&r, kf.ndevs));
		if (idx < 0 || !q)
			_exit(0);
		f = &kf.files[idx];
	}
	if (mode == 1)
		have_ring = !io_uring_queue_init(16, &ring, IORING_SETUP_SQE128 |
						 IORING_SETUP_CQE32);
	for (i = 0; i < n; i++) {
		if (kf_req_build(f, &r, q, kf_chance(&r, 20)))
			break;
		__atomic_fetch_add(&kf.stats->child_ops, 1, __ATOMIC_RELAXED);
		if (have_ring) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			if (!sqe)
				break;
			memset(sqe, 0, 2 * sizeof(*sqe));
			sqe->opcode = IORING_OP_URING_CMD;
			sqe->fd = f->fds[0];
			sqe->cmd_op = DRM_VTPU_URING_SUBMIT;
			memcpy(sqe->cmd, &q->s, sizeof(q->s));
			/* Jobs counted only when known to be queued. */
			io_uring_submit(&ring);
		} else if (!kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_SUBMIT, &q->s)) {
			__atomic_fetch_add(&kf.stats->jobs, 1, __ATOMIC_RELAXED);
			f->last_job = q->s.job_id;
		}
	}
	if (mode == 3 && f->last_job)
		kf_wait_one(f->fds[0], f->last_job,
			 (int64_t)((kf_now() + 5) * 1e9), &status);
	_exit(0);
}

void kf_children_reap(bool all)
{
	double end = kf_now() + 30;
	int i, status;

	for (i = 0; i < kf.nchildren; i++) {
		pid_t pid = kf.children[i];

		if (all || kf_now() > kf.child_deadline[i])
			kill(pid, SIGKILL);
		while (waitpid(pid, &status, all ? 0 : WNOHANG) < 0 &&
		       errno == EINTR && kf_now() < end)
			;
		if (all || kill(pid, 0)) {
			kf.children[i] = kf.children[--kf.nchildren];
			kf.child_deadline[i] = kf.child_deadline[kf.nchildren];
			i--;
		}
	}
}

void kf_op_fork(struct kf_rng *r)
{
	int mode = kf_below(r, 4), file = -1;
	struct kf_file *f;
	uint64_t seed = kf_rand(r);
	pid_t pid;

	if (kf.nchildren == KF_MAX_CHILDREN)
		kf_children_reap(false);
	if (kf.nchildren == KF_MAX_CHILDREN)
		return;
	if (mode == 2 && (f = kf_file_pick(r))) {
		file = (int)(f - kf.files);
		f->shared = true;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		child_main(seed, mode, file);
	kf_note(" mode %d -> pid %d", mode, pid);
	if (pid < 0)
		return;
	kf.children[kf.nchildren] = pid;
	/* Killed with its work queued, or given the time to leave. */
	kf.child_deadline[kf.nchildren] = kf_now() + (kf_chance(r, 50) ?
		kf_below(r, 300) / 1000.0 : 5);
	kf.nchildren++;
}
