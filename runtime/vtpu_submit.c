// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * Job submission: io_uring passthrough commands, or ioctls when those are
 * not available. See vtpu_submit.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "vtpu_submit.h"

struct vtpu_sq_pending {
	uint64_t user_data;
	uint64_t job_id;	/* 0: failed to submit, @status says why */
	int32_t status;
};

static int vtpu_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN));
	return ret ? -errno : 0;
}

/*
 * liburing 2.3 has no helper for URING_CMD: clear the whole 128-byte SQE,
 * then fill in the opcode, the file, the command and its payload.
 */
static void vtpu_prep_submit(struct io_uring_sqe *sqe, int fd,
			     const struct drm_vtpu_submit *req,
			     uint64_t user_data)
{
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = DRM_VTPU_URING_SUBMIT;
	memcpy(sqe->cmd, req, sizeof(*req));
	sqe->user_data = user_data;
}

_Static_assert(sizeof(struct drm_vtpu_submit) <= 80,
	       "the request must fit the 80-byte payload of a 128-byte SQE");

/*
 * Does the driver take our command? A _PTR submit of a NULL pointer
 * fails with -EFAULT in the driver, with -EOPNOTSUPP (or -EINVAL on old
 * kernels) where the file has no uring_cmd.
 */
static int vtpu_sq_probe(struct vtpu_sq *sq)
{
	struct drm_vtpu_uring_submit_ptr ptr = { 0 };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret;

	sqe = io_uring_get_sqe(&sq->ring);
	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = sq->fd;
	sqe->cmd_op = DRM_VTPU_URING_SUBMIT_PTR;
	memcpy(sqe->cmd, &ptr, sizeof(ptr));
	ret = io_uring_submit_and_wait(&sq->ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&sq->ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&sq->ring, cqe);
	return ret == -EFAULT ? 0 : -EOPNOTSUPP;
}

int vtpu_sq_init(struct vtpu_sq *sq, int fd, unsigned int entries,
		 enum vtpu_sq_mode mode)
{
	int ret;

	memset(sq, 0, sizeof(*sq));
	sq->fd = fd;
	sq->mode = VTPU_SQ_IOCTL;
	if (mode == VTPU_SQ_IOCTL)
		return 0;

	ret = io_uring_queue_init(entries, &sq->ring,
				  IORING_SETUP_SQE128 | IORING_SETUP_CQE32);
	if (!ret) {
		ret = vtpu_sq_probe(sq);
		if (ret)
			io_uring_queue_exit(&sq->ring);
	}
	if (!ret)
		sq->mode = VTPU_SQ_URING;
	else if (mode == VTPU_SQ_URING)
		return ret;
	return 0;
}

void vtpu_sq_fini(struct vtpu_sq *sq)
{
	if (sq->mode == VTPU_SQ_URING)
		io_uring_queue_exit(&sq->ring);
	free(sq->pending);
	memset(sq, 0, sizeof(*sq));
	sq->fd = -1;
}

static int vtpu_sq_push_pending(struct vtpu_sq *sq, uint64_t user_data,
				uint64_t job_id, int status)
{
	if (sq->npending == sq->cap) {
		unsigned int cap = sq->cap ? 2 * sq->cap : 64;
		struct vtpu_sq_pending *p;

		p = realloc(sq->pending, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		sq->pending = p;
		sq->cap = cap;
	}
	sq->pending[sq->npending++] = (struct vtpu_sq_pending){
		.user_data = user_data, .job_id = job_id, .status = status,
	};
	return 0;
}

int vtpu_sq_submit(struct vtpu_sq *sq)
{
	int ret;

	if (sq->mode != VTPU_SQ_URING || !sq->unsubmitted)
		return 0;
	do {
		ret = io_uring_submit(&sq->ring);
	} while (ret == -EINTR);
	if (ret < 0)
		return ret;
	sq->unsubmitted -= ret;
	sq->inflight += ret;
	return ret;
}

int vtpu_sq_queue(struct vtpu_sq *sq, const struct drm_vtpu_submit *req,
		  uint64_t user_data)
{
	struct io_uring_sqe *sqe;
	int ret;

	if (sq->mode == VTPU_SQ_IOCTL) {
		struct drm_vtpu_submit s = *req;

		ret = vtpu_ioctl(sq->fd, DRM_IOCTL_VTPU_SUBMIT, &s);
		return vtpu_sq_push_pending(sq, user_data, ret ? 0 : s.job_id,
					    ret);
	}

	sqe = io_uring_get_sqe(&sq->ring);
	if (!sqe) {
		/* SQ ring full: submit what is there to make room. */
		ret = vtpu_sq_submit(sq);
		if (ret < 0)
			return ret;
		sqe = io_uring_get_sqe(&sq->ring);
		if (!sqe)
			return -EBUSY;
	}
	vtpu_prep_submit(sqe, sq->fd, req, user_data);
	sq->unsubmitted++;
	return 0;
}

static int vtpu_sq_reap_ioctl(struct vtpu_sq *sq, struct vtpu_completion *out,
			      unsigned int max, unsigned int min_wait)
{
	unsigned int n = 0;

	/* In submission order: the order io_uring users mostly see too. */
	while (n < max && n < sq->npending) {
		struct vtpu_sq_pending *p = &sq->pending[n];
		struct drm_vtpu_job_wait w = { .job_id = p->job_id };
		int ret;

		if (p->job_id) {
			if (n >= min_wait) {
				w.timeout_ns = 0;	/* poll */
			} else {
				struct timespec ts;

				clock_gettime(CLOCK_MONOTONIC, &ts);
				/* Effectively forever; the job timeout bounds it. */
				w.timeout_ns = (ts.tv_sec + 3600) * 1000000000LL;
			}
			ret = vtpu_ioctl(sq->fd, DRM_IOCTL_VTPU_JOB_WAIT, &w);
			if (ret == -ETIME)
				break;
			p->status = ret ? ret : w.status;
		}
		out[n] = (struct vtpu_completion){
			.user_data = p->user_data,
			.job_id = (uint32_t)p->job_id,
			.status = p->status,
		};
		n++;
	}
	memmove(sq->pending, sq->pending + n,
		(sq->npending - n) * sizeof(*sq->pending));
	sq->npending -= n;
	return n;
}

int vtpu_sq_reap(struct vtpu_sq *sq, struct vtpu_completion *out,
		 unsigned int max, unsigned int min_wait)
{
	struct io_uring_cqe *cqe;
	unsigned int n = 0;
	int ret;

	if (sq->mode == VTPU_SQ_IOCTL)
		return vtpu_sq_reap_ioctl(sq, out, max, min_wait);

	if (min_wait > sq->inflight + sq->unsubmitted)
		min_wait = sq->inflight + sq->unsubmitted;
	/*
	 * One io_uring_enter() submits what is queued and sleeps until
	 * @min_wait completions are there: the kernel wakes us once for
	 * all of them, not once per job.
	 */
	if (sq->unsubmitted) {
		do {
			ret = io_uring_submit_and_wait(&sq->ring, min_wait);
		} while (ret == -EINTR);
		if (ret < 0)
			return ret;
		sq->unsubmitted -= ret;
		sq->inflight += ret;
	} else if (min_wait > io_uring_cq_ready(&sq->ring)) {
		do {
			ret = io_uring_wait_cqe_nr(&sq->ring, &cqe, min_wait);
		} while (ret == -EINTR);
		if (ret)
			return ret;
	}
	while (n < max) {
		struct io_uring_cqe *batch[64];
		unsigned int i, got;

		got = io_uring_peek_batch_cqe(&sq->ring, batch,
					      max - n < 64 ? max - n : 64);
		for (i = 0; i < got; i++) {
			cqe = batch[i];
			out[n++] = (struct vtpu_completion){
				.user_data = cqe->user_data,
				.job_id = (uint32_t)cqe->big_cqe[0],
				.status = cqe->res,
				.device_us = (uint32_t)(cqe->big_cqe[0] >> 32),
			};
		}
		io_uring_cq_advance(&sq->ring, got);
		sq->inflight -= got;
		if (got < 64)
			break;
	}
	return n;
}
