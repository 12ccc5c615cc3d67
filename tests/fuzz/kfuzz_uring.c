// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * io_uring for vtpu-kfuzz: rings of every kind (64- and 128-byte SQEs,
 * big CQEs, DEFER_TASKRUN, SQPOLL, IOPOLL, a registered file), batches
 * of SUBMIT requests inline and by pointer with garbage in the fields a
 * command does not use, links, forced async issue, reaping, and rings
 * torn down with commands in flight. The request of each command stays
 * in its ring's slot until the CQE, which the oracle then judges.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuzz.h"

/* --- io_uring ---------------------------------------------------------------------- */

static struct kf_ring *ring_pick(struct kf_rng *r)
{
	int live[KF_MAX_RINGS], n = 0, i;

	for (i = 0; i < KF_MAX_RINGS; i++)
		if (kf.rings[i].live)
			live[n++] = i;
	return n ? &kf.rings[live[kf_below(r, n)]] : NULL;
}

static void ring_setup(struct kf_rng *r)
{
	static const unsigned int variants[] = {
		IORING_SETUP_SQE128 | IORING_SETUP_CQE32,
		IORING_SETUP_SQE128 | IORING_SETUP_CQE32,
		IORING_SETUP_SQE128 | IORING_SETUP_CQE32,
		0, 0,
		IORING_SETUP_SQE128,
		IORING_SETUP_CQE32,
		IORING_SETUP_SQE128 | IORING_SETUP_CQE32 |
			IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | IORING_SETUP_SQPOLL,
		IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | IORING_SETUP_IOPOLL,
	};
	struct io_uring_params p = { 0 };
	struct kf_ring *ring = NULL;
	struct kf_file *f;
	int i, ret, fd;

	for (i = 0; i < KF_MAX_RINGS; i++)
		if (!kf.rings[i].live)
			ring = &kf.rings[i];
	if (!ring)
		return;
	p.flags = variants[kf_below(r, 10)];
	if (kf.no_defer_taskrun && (p.flags & IORING_SETUP_DEFER_TASKRUN))
		p.flags &= ~(IORING_SETUP_DEFER_TASKRUN |
			     IORING_SETUP_SINGLE_ISSUER);
	p.sq_thread_idle = 10;
	ret = io_uring_queue_init_params(8u << kf_below(r, 3), &ring->ring, &p);
	kf_note(" setup ring %d flags %#x -> %d", (int)(ring - kf.rings),
		p.flags, ret);
	if (ret)
		return;
	if (!ring->slots)
		ring->slots = calloc(KF_RING_SLOTS, sizeof(*ring->slots));
	if (!ring->slots) {
		io_uring_queue_exit(&ring->ring);
		return;
	}
	for (i = 0; i < KF_RING_SLOTS; i++)
		ring->slots[i].busy = false;
	ring->live = true;
	ring->flags = p.flags;
	ring->outstanding = 0;
	ring->fixed_file = -1;
	if (kf_chance(r, 30) && (f = kf_file_pick(r))) {
		fd = f->fds[0];
		if (!io_uring_register_files(&ring->ring, &fd, 1)) {
			ring->fixed_file = (int)(f - kf.files);
			ring->fixed_gen = f->gen;
			kf_note(" fixed file %d", fd);
		}
	}
}

static void ring_exit(struct kf_ring *ring)
{
	kf_note(" exit with %d in flight", ring->outstanding);
	io_uring_queue_exit(&ring->ring);
	ring->live = false;
}

/* A CQE of one of our commands: job counts and the oracle. */
static void ring_cqe(struct kf_ring *ring, struct io_uring_cqe *cqe)
{
	unsigned int slot = cqe->user_data % KF_RING_SLOTS;
	struct kf_req *q = &ring->slots[slot];
	uint32_t job = 0;

	if (ring->flags & IORING_SETUP_CQE32)
		job = (uint32_t)cqe->big_cqe[0];
	if (job || (!(ring->flags & IORING_SETUP_CQE32) &&
		    (cqe->res == 0 || cqe->res == -ETIMEDOUT)))
		__atomic_fetch_add(&kf.stats->jobs, 1, __ATOMIC_RELAXED);
	if (q->busy) {
		struct kf_file *f = &kf.files[q->file];
		struct kf_file *t = &kf.files[q->ring_file];

		/*
		 * The job's id, where the CQE says it (CQE32: zero when the
		 * request made no job); a ring without CQE32 never says, so
		 * the file's ids become unknown, as with a child's submits.
		 */
		if (t->live && t->gen == q->ring_gen) {
			t->ring_submits--;
			if (!(ring->flags & IORING_SETUP_CQE32))
				t->shared = true;
			if (job > t->last_job)
				t->last_job = job;
		}
		/*
		 * io-wq may have read the request long after the SQE went
		 * in: judge it only if nothing it names changed since.
		 */
		if (!f->live || f->gen != q->file_gen ||
		    f->closes != q->closes_mark ||
		    f->arena_written > q->arena_mark + f->arena_size)
			q->clean = false;
		/*
		 * A job's result is never -EINVAL: only the request's. (On
		 * 6.12, io_uring_cmd() copies the SQE on -EAGAIN but leaves
		 * cmd->sqe in the SQ ring, so io-wq may read the SQE that
		 * took the slot since: the driver must keep its own copy.)
		 */
		if (q->clean && q->prog_valid && cqe->res == -EINVAL) {
			struct drm_vtpu_submit s = q->s;
			int again = kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_SUBMIT, &s);
			int status = 1;

			if (!again)
				kf_wait_one(f->fds[0], s.job_id,
					 (int64_t)((kf_now() + 5) * 1e9), &status);
			/*
			 * Every such failure seen had gone to a ring's
			 * registered file after its slot was reopened, which
			 * kfuzz used to judge against the new file: now a
			 * contract violation, with what to replay it by.
			 */
			kf_contract("io_uring SUBMIT of a valid request failed with -EINVAL");
			fprintf(stderr, "kfuzz: the request: ");
			fprintf(stderr, "ring %d flags %#x, user_data %llu, sqe flags %#x, %s, job %u, %u bindings, profile %u, program %s; as an ioctl now: %d, job status %d",
				    (int)(ring - kf.rings), ring->flags,
				    (unsigned long long)cqe->user_data,
				    q->sqe_flags,
				    q->inline_form ? "inline" : "pointer", job,
				    q->s.binding_count, q->s.profile_handle,
				    vtpu_prog_crc32((char *)f->arena_map +
						    q->s.program_offset,
						    q->s.program_size) ==
				    q->prog_crc ? "intact" : "CHANGED", again,
				    status);
			fputc('\n', stderr);
		}
		if (q->clean && !q->prog_valid && !cqe->res)
			kf_contract("io_uring SUBMIT of a program the validator rejects succeeded");
		q->busy = false;
	}
	ring->outstanding--;
}

static void ring_reap(struct kf_ring *ring, int wait_ms)
{
	struct __kernel_timespec ts = { .tv_nsec = wait_ms * 1000000LL };
	struct io_uring_cqe *cqe;
	int n = 0;

	if (wait_ms && ring->outstanding > 0 &&
	    !io_uring_wait_cqe_timeout(&ring->ring, &cqe, &ts)) {
		ring_cqe(ring, cqe);
		io_uring_cqe_seen(&ring->ring, cqe);
		n++;
	}
	while (!io_uring_peek_cqe(&ring->ring, &cqe)) {
		ring_cqe(ring, cqe);
		io_uring_cqe_seen(&ring->ring, cqe);
		n++;
	}
	kf_note(" reaped %d", n);
}

/* Fields a URING_CMD does not use: the driver must refuse garbage there. */
static void sqe_garbage(struct kf_rng *r, struct io_uring_sqe *sqe,
			struct kf_req *q)
{
	q->clean = false;
	switch (kf_below(r, 7)) {
	case 0: sqe->addr = kf_rand(r); break;
	case 1: sqe->len = kf_rand(r); break;
	case 2: sqe->uring_cmd_flags = 1u << kf_below(r, 32); break;
	case 3: sqe->buf_index = kf_rand(r); break;
	case 4: sqe->personality = kf_rand(r); break;
	case 5: sqe->splice_fd_in = kf_rand(r); break;
	default: sqe->ioprio = kf_rand(r); break;
	}
}

static void ring_submit(struct kf_rng *r, struct kf_ring *ring)
{
	bool big = ring->flags & IORING_SETUP_SQE128;
	unsigned int n = 1 + kf_below(r, 8), i, queued = 0;
	bool linked = false;
	int ret;

	for (i = 0; i < n; i++) {
		unsigned int slot = ring->next_data % KF_RING_SLOTS;
		struct kf_req *q = &ring->slots[slot];
		struct io_uring_sqe *sqe;
		struct kf_file *f;
		bool inline_form;

		if (q->busy)
			break;
		f = kf_file_pick(r);
		if (!f || kf_req_build(f, r, q, true))
			break;
		sqe = io_uring_get_sqe(&ring->ring);
		if (!sqe)
			break;
		memset(sqe, 0, big ? 2 * sizeof(*sqe) : sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = kf_file_fd(f, r);
		if (ring->fixed_file >= 0 && kf_chance(r, 30)) {
			sqe->fd = 0;
			sqe->flags |= IOSQE_FIXED_FILE;
			/*
			 * The registered file stays the one open then, also
			 * once its slot was closed and reopened: valid
			 * requests for the new file may fail against it.
			 */
			if (ring->fixed_file != (int)(f - kf.files) ||
			    ring->fixed_gen != f->gen)
				q->clean = false;
		}
		inline_form = kf_chance(r, 50);
		if (inline_form) {
			sqe->cmd_op = DRM_VTPU_URING_SUBMIT;
			/* Only 16 bytes of payload fit a 64-byte SQE. */
			memcpy(sqe->cmd, &q->s, big ? sizeof(q->s) : 16);
			if (!big)
				q->clean = false;
		} else {
			q->ptr.submit = (uintptr_t)&q->s;
			if (kf_chance(r, 3))
				q->ptr.submit = kf_bad_ptr(r);
			if (kf_chance(r, 3))
				q->ptr.pad = kf_rand(r);
			if (q->ptr.pad || q->ptr.submit != (uintptr_t)&q->s)
				q->clean = false;
			sqe->cmd_op = DRM_VTPU_URING_SUBMIT_PTR;
			memcpy(sqe->cmd, &q->ptr, sizeof(q->ptr));
		}
		if (kf_chance(r, 3)) {
			sqe->cmd_op = kf_chance(r, 50) ? (uint32_t)kf_rand(r) :
				      sqe->cmd_op ^ (1u << kf_below(r, 32));
			q->clean = false;
		}
		if (kf_chance(r, 8))
			sqe_garbage(r, sqe, q);
		if (kf_chance(r, 15))
			sqe->flags |= IOSQE_ASYNC;
		/* A link fails what follows it with -ECANCELED. */
		if (linked)
			q->clean = false;
		linked = kf_chance(r, 5) && i + 1 < n;
		if (linked)
			sqe->flags |= IOSQE_IO_LINK;
		if (ring->flags & IORING_SETUP_IOPOLL)
			q->clean = false;
		sqe->user_data = ring->next_data++;
		q->sqe_flags = sqe->flags;
		q->inline_form = inline_form;
		q->busy = true;
		/* the file the job goes to: the registered one, or f */
		q->ring_file = sqe->flags & IOSQE_FIXED_FILE ?
			       ring->fixed_file : (int)(f - kf.files);
		q->ring_gen = sqe->flags & IOSQE_FIXED_FILE ? ring->fixed_gen :
			      f->gen;
		if (kf.files[q->ring_file].gen == q->ring_gen)
			kf.files[q->ring_file].ring_submits++;
		queued++;
	}
	ret = io_uring_submit(&ring->ring);
	kf_note(" queued %u (user_data up to %llu) -> %d", queued,
		(unsigned long long)ring->next_data - 1, ret);
	if (ret > 0)
		ring->outstanding += ret;
}

void kf_op_uring(struct kf_rng *r)
{
	struct kf_ring *ring = ring_pick(r);

	if (!ring || kf_chance(r, 4)) {
		ring_setup(r);
		return;
	}
	kf_note(" ring %d", (int)(ring - kf.rings));
	switch (kf_below(r, 20)) {
	case 0:
		ring_exit(ring);
		break;
	case 1: case 2: case 3: case 4:
		ring_reap(ring, kf_below(r, 20));
		break;
	default:
		if (ring->outstanding > 32 || kf.busy) {
			ring_reap(ring, 10);
			break;
		}
		ring_submit(r, ring);
		ring_reap(ring, 0);
		break;
	}
}

void kf_rings_teardown(void)
{
	int i;

	for (i = 0; i < KF_MAX_RINGS; i++) {
		if (kf.rings[i].live)
			ring_exit(&kf.rings[i]);
		free(kf.rings[i].slots);
		kf.rings[i].slots = NULL;
	}
}

