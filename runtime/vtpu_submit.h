/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu_submit.h - the runtime's job submission queue.
 *
 * Jobs go to the device through io_uring (IORING_OP_URING_CMD,
 * DRM_VTPU_URING_SUBMIT inline in 128-byte SQEs): many jobs per
 * io_uring_enter(), completions reaped from the CQ ring as the jobs end.
 * Where io_uring or the driver's command is unavailable, the same calls
 * fall back to DRM_IOCTL_VTPU_SUBMIT and DRM_IOCTL_VTPU_JOB_WAIT, with the
 * same semantics: a request that fails to submit is reported through its
 * completion, like a CQE carrying the error.
 *
 * Thread safety: none; one queue per thread, or a lock around it.
 * All functions return 0 or a count, or -errno; they never set errno.
 */
#ifndef VTPU_SUBMIT_H
#define VTPU_SUBMIT_H

#include <stdbool.h>
#include <stdint.h>

#include <liburing.h>

#include <drm/vtpu_accel.h>

enum vtpu_sq_mode {
	VTPU_SQ_AUTO,	/* io_uring when it works, else ioctl */
	VTPU_SQ_URING,
	VTPU_SQ_IOCTL,
};

/* One ended job (or a request that could not be submitted). */
struct vtpu_completion {
	uint64_t user_data;	/* as given to vtpu_sq_queue() */
	uint32_t job_id;	/* low 32 bits of the job id; 0 if none */
	int32_t status;		/* 0, the job's -errno or the submit's */
	uint32_t device_us;	/* time on the core (io_uring mode only) */
};

struct vtpu_sq_pending;

struct vtpu_sq {
	int fd;
	enum vtpu_sq_mode mode;		/* URING or IOCTL once initialised */
	struct io_uring ring;
	unsigned int unsubmitted;	/* SQEs prepared since the last enter */
	unsigned int inflight;		/* submitted, completion not reaped */
	/* ioctl mode: submitted jobs and early failures, in order */
	struct vtpu_sq_pending *pending;
	unsigned int npending, cap;
};

/*
 * Sets up a queue of @entries slots on the accel file @fd. In AUTO mode
 * it probes the ring and the driver's command once and says which mode
 * it got in @sq->mode.
 */
int vtpu_sq_init(struct vtpu_sq *sq, int fd, unsigned int entries,
		 enum vtpu_sq_mode mode);

/* Waits for nothing: completions not reaped are lost; jobs still run. */
void vtpu_sq_fini(struct vtpu_sq *sq);

/*
 * Queues one job. In io_uring mode the request is copied into an SQE
 * (submitted with the next vtpu_sq_submit(), or now if the SQ is full);
 * in ioctl mode it is submitted at once.
 */
int vtpu_sq_queue(struct vtpu_sq *sq, const struct drm_vtpu_submit *req,
		  uint64_t user_data);

/* Submits every queued SQE in one io_uring_enter(). Returns how many. */
int vtpu_sq_submit(struct vtpu_sq *sq);

/*
 * Reaps up to @max completions into @out, waiting until at least
 * @min_wait are available (0: do not wait). Submits what is queued
 * first. Returns the number reaped.
 */
int vtpu_sq_reap(struct vtpu_sq *sq, struct vtpu_completion *out,
		 unsigned int max, unsigned int min_wait);

/* Completions still owed: queued or in flight, not yet reaped. */
static inline unsigned int vtpu_sq_outstanding(const struct vtpu_sq *sq)
{
	return sq->unsubmitted + sq->inflight + sq->npending;
}

#endif /* VTPU_SUBMIT_H */
