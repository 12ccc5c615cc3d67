// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * io_uring passthrough: IORING_OP_URING_CMD submits a job and completes
 * when the job's fence signals, so an application keeps many jobs in
 * flight and reaps them without a syscall each. Modelled on NVMe
 * passthrough (drivers/nvme/host/ioctl.c) and ublk.
 *
 * Lifetime of a command: the submission (from io-wq: it sleeps) queues
 * the job and hooks a callback on its finished fence. Either that
 * callback or the cancellation of the command wins a cmpxchg on the
 * request's state; the winner completes the io_uring command, exactly
 * once, and frees the request only after io_uring_cmd_done() has taken
 * the command off the ring's cancelable list: a cancellation walking
 * that list must never find a freed request. A cancelled command's
 * request is freed by the fence side, which always runs, so no callback
 * is left pointing at freed memory.
 */

#include <linux/dma-fence.h>
#include <linux/io_uring/cmd.h>
#include <linux/io_uring_types.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_file.h>
#include <drm/drm_print.h>
#include <drm/vtpu_accel.h>

#include "vtpu_drv.h"
#include "vtpu_job.h"
#include "vtpu_uring.h"

enum vtpu_uring_state {
	VTPU_URING_PENDING,
	VTPU_URING_DONE,	/* the fence side completes the command */
	VTPU_URING_CANCELED,	/* cancellation completed it */
};

/**
 * struct vtpu_uring_req - one in-flight io_uring SUBMIT
 * @cmd: the io_uring command; only touched by whoever wins @state
 * @done: the job's finished fence (a reference)
 * @cb: callback on @done
 * @state: enum vtpu_uring_state
 * @job_id: the job's id, for the big CQE
 */
struct vtpu_uring_req {
	struct io_uring_cmd *cmd;
	struct dma_fence *done;
	struct dma_fence_cb cb;
	atomic_t state;
	u64 job_id;
};

struct vtpu_uring_pdu {
	struct vtpu_uring_req *req;
};

static struct vtpu_uring_req *vtpu_uring_req(struct io_uring_cmd *cmd)
{
	return io_uring_cmd_to_pdu(cmd, struct vtpu_uring_pdu)->req;
}

static void vtpu_uring_req_free(struct vtpu_uring_req *req)
{
	dma_fence_put(req->done);
	kfree(req);
}

/* The big CQE: job id, and microseconds the job spent on its core. */
static u64 vtpu_uring_res2(struct vtpu_uring_req *req)
{
	u64 us = vtpu_job_exec_us(req->done);

	return (min_t(u64, us, U32_MAX) << 32) | lower_32_bits(req->job_id);
}

/* Completes the command with the job's result, then frees the request. */
static void vtpu_uring_complete(struct vtpu_uring_req *req,
				unsigned int issue_flags)
{
	io_uring_cmd_done(req->cmd, req->done->error, vtpu_uring_res2(req),
			  issue_flags);
	vtpu_uring_req_free(req);
}

static void vtpu_uring_task_done(struct io_uring_cmd *cmd,
				 unsigned int issue_flags)
{
	vtpu_uring_complete(vtpu_uring_req(cmd), issue_flags);
}

/*
 * The job ended. Called with the fence's lock held, possibly from the
 * core's worker: hand the completion to the submitter's task context.
 */
static void vtpu_uring_fence_cb(struct dma_fence *fence,
				struct dma_fence_cb *cb)
{
	struct vtpu_uring_req *req = container_of(cb, struct vtpu_uring_req, cb);

	if (atomic_cmpxchg(&req->state, VTPU_URING_PENDING,
			   VTPU_URING_DONE) == VTPU_URING_PENDING)
		io_uring_cmd_do_in_task_lazy(req->cmd, vtpu_uring_task_done);
	else
		vtpu_uring_req_free(req);
}

static int vtpu_uring_cancel(struct io_uring_cmd *cmd,
			     unsigned int issue_flags)
{
	struct vtpu_uring_req *req = vtpu_uring_req(cmd);

	/* The job runs on to its end; the fence side frees @req then. */
	if (atomic_cmpxchg(&req->state, VTPU_URING_PENDING,
			   VTPU_URING_CANCELED) == VTPU_URING_PENDING)
		io_uring_cmd_done(cmd, -ECANCELED, 0, issue_flags);
	return 0;
}

/*
 * SQE fields the commands do not use must be zero, so that they can be
 * given a meaning later. io_uring itself checks the rest (__pad1, the
 * uring_cmd flags); registered buffers mean nothing to these commands.
 */
static int vtpu_uring_check_sqe(const struct io_uring_cmd *cmd)
{
	const struct io_uring_sqe *sqe = cmd->sqe;

	if (cmd->flags & IORING_URING_CMD_FIXED || READ_ONCE(sqe->addr) ||
	    READ_ONCE(sqe->len) || READ_ONCE(sqe->buf_index) ||
	    READ_ONCE(sqe->file_index))
		return -EINVAL;
	return 0;
}

/*
 * Copies the request out of the SQE (shared with userspace, so every
 * field is read once) or, for the _PTR form, out of user memory.
 */
static int vtpu_uring_copy_args(struct io_uring_cmd *cmd,
				unsigned int issue_flags,
				struct drm_vtpu_submit *args)
{
	const struct drm_vtpu_uring_submit_ptr *ptr;
	const struct drm_vtpu_submit *sqe_args;
	u64 uptr;
	int ret;

	ret = vtpu_uring_check_sqe(cmd);
	if (ret)
		return ret;

	switch (cmd->cmd_op) {
	case DRM_VTPU_URING_SUBMIT:
		if (!(issue_flags & IO_URING_F_SQE128))
			return -EINVAL;
		sqe_args = io_uring_sqe_cmd(cmd->sqe);
		args->flags = READ_ONCE(sqe_args->flags);
		args->program_handle = READ_ONCE(sqe_args->program_handle);
		args->program_offset = READ_ONCE(sqe_args->program_offset);
		args->program_size = READ_ONCE(sqe_args->program_size);
		args->bindings = READ_ONCE(sqe_args->bindings);
		args->binding_count = READ_ONCE(sqe_args->binding_count);
		args->in_sync_count = READ_ONCE(sqe_args->in_sync_count);
		args->in_syncs = READ_ONCE(sqe_args->in_syncs);
		args->out_sync = READ_ONCE(sqe_args->out_sync);
		args->profile_handle = READ_ONCE(sqe_args->profile_handle);
		args->out_sync_point = READ_ONCE(sqe_args->out_sync_point);
		args->profile_offset = READ_ONCE(sqe_args->profile_offset);
		args->job_id = 0;
		return 0;
	case DRM_VTPU_URING_SUBMIT_PTR:
		ptr = io_uring_sqe_cmd(cmd->sqe);
		if (READ_ONCE(ptr->pad))
			return -EINVAL;
		uptr = READ_ONCE(ptr->submit);
		if (copy_from_user(args, u64_to_user_ptr(uptr), sizeof(*args)))
			return -EFAULT;
		args->job_id = 0;
		return 0;
	default:
		return -ENOTTY;
	}
}

/*
 * Debian's 6.12 copies the SQE aside when a command returns -EAGAIN but
 * leaves cmd->sqe pointing into the shared ring, so the retry from io-wq
 * would read whatever SQE has taken that slot since. Make the copy here
 * and point cmd->sqe at it: io_uring then sees the copy is made.
 */
static void vtpu_uring_keep_sqe(struct io_uring_cmd *cmd,
				unsigned int issue_flags)
{
	struct io_kiocb *req = cmd_to_io_kiocb(cmd);

	if (!req->async_data || cmd->sqe == req->async_data)
		return;
	memcpy(req->async_data, cmd->sqe,
	       issue_flags & IO_URING_F_SQE128 ? 2 * sizeof(*cmd->sqe) :
						 sizeof(*cmd->sqe));
	cmd->sqe = req->async_data;
}

/**
 * vtpu_uring_cmd() - &file_operations.uring_cmd of the accel file
 * @cmd: the command
 * @issue_flags: IO_URING_F_* of this attempt
 *
 * Return: -EIOCBQUEUED once the job is queued (the CQE follows when it
 * ends), -EAGAIN on the non-blocking first attempt, or -errno.
 */
int vtpu_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct drm_file *file = cmd->file->private_data;
	struct drm_vtpu_submit args;
	struct vtpu_uring_req *req;
	struct dma_fence *done;
	bool nowait;
	int ret;

	if (issue_flags & IO_URING_F_CANCEL)
		return vtpu_uring_cancel(cmd, issue_flags);

	/* Unknown commands fail at once, whatever the attempt. */
	if (cmd->cmd_op != DRM_VTPU_URING_SUBMIT &&
	    cmd->cmd_op != DRM_VTPU_URING_SUBMIT_PTR)
		return -ENOTTY;

	ret = vtpu_uring_copy_args(cmd, issue_flags, &args);
	if (ret)
		return ret;

	/*
	 * The first attempt must not wait: the submission then only tries
	 * (see vtpu_job_submit()), and returns -EAGAIN for io_uring to retry
	 * from io-wq, where waiting is fine.
	 */
	nowait = issue_flags & IO_URING_F_NONBLOCK;
	req = kzalloc(sizeof(*req), nowait ? GFP_NOWAIT | __GFP_NOWARN :
					     GFP_KERNEL);
	if (!req) {
		if (!nowait)
			return -ENOMEM;
		vtpu_uring_keep_sqe(cmd, issue_flags);
		return -EAGAIN;
	}

	ret = vtpu_job_submit(file->minor->dev, file, &args, &done, nowait);
	if (ret) {
		kfree(req);
		if (ret == -EAGAIN)
			vtpu_uring_keep_sqe(cmd, issue_flags);
		return ret;
	}
	req->cmd = cmd;
	req->done = done;
	req->job_id = args.job_id;
	atomic_set(&req->state, VTPU_URING_PENDING);
	io_uring_cmd_to_pdu(cmd, struct vtpu_uring_pdu)->req = req;

	io_uring_cmd_mark_cancelable(cmd, issue_flags);
	if (dma_fence_add_callback(done, &req->cb, vtpu_uring_fence_cb)) {
		/* Already over: complete now, unless a cancel came first. */
		if (atomic_cmpxchg(&req->state, VTPU_URING_PENDING,
				   VTPU_URING_DONE) == VTPU_URING_PENDING)
			vtpu_uring_complete(req, issue_flags);
		else
			vtpu_uring_req_free(req);
	}
	return -EIOCBQUEUED;
}
