/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

#ifndef __VTPU_JOB_H__
#define __VTPU_JOB_H__

#include <linux/dma-fence.h>
#include <linux/kref.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>

#include <drm/gpu_scheduler.h>

#include "vtpu_exec.h"
#include "vtpu_gem.h"

struct drm_printer;
struct drm_vtpu_binding;
struct drm_vtpu_profile;
struct drm_vtpu_submit;
struct vtpu_bo;
struct vtpu_device;
struct vtpu_program;

/**
 * struct vtpu_file_stats - a file's use of the cores, for fdinfo
 * @ref: the file's reference and one per job; a job may still be running
 *	when its file is closed
 * @engine_ns: time the file's finished jobs spent executing on cores
 * @run_seq: makes @engine_ns, @running and @start_sum one snapshot
 * @running: the file's jobs executing now, on any core
 * @start_sum: the sum of their start times, so that the time they have
 *	executed so far is @running * now - @start_sum
 * @jobs: the file's jobs not yet freed (queued, running or ending), at
 *	most DRM_VTPU_MAX_JOBS
 * @closed: the file is closed: a job of it that a core has queued but not
 *	started is killed (-ESRCH) like those still in the entity's queue
 */
struct vtpu_file_stats {
	struct kref ref;
	atomic64_t engine_ns;
	seqlock_t run_seq;
	u32 running;
	u64 start_sum;
	atomic_t jobs;
	atomic_t closed;
};

/**
 * struct vtpu_file - per open file state
 * @entity: the file's scheduler entity, spanning every core of the device
 * @jobs: job id -> the job's finished fence, until JOB_WAIT reports it
 * @nrecords: entries in @jobs
 * @next_id: last job id handed out (ioctl and io_uring alike)
 * @submit_lock: serialises arming and pushing jobs of @entity; a spinlock,
 *	because an io_uring batch's chain is pushed where sleeping is not
 *	allowed (see vtpu_job_chain())
 * @stats: what fdinfo reports of the file's jobs
 * @programs: program handle -> &struct vtpu_program (a reference)
 * @nprograms: entries in @programs, at most DRM_VTPU_MAX_PROGRAMS
 */
struct vtpu_file {
	struct drm_sched_entity entity;
	struct xarray jobs;
	struct xarray programs;
	atomic_t nprograms;
	atomic_t nrecords;
	atomic64_t next_id;
	spinlock_t submit_lock; /* Protects job arming order */
	struct vtpu_file_stats *stats;
};

/**
 * struct vtpu_job_bo - a buffer a job holds, with the range it uses
 * @bo: the buffer (a reference)
 * @map: the range the job uses, pinned and mapped
 */
struct vtpu_job_bo {
	struct vtpu_bo *bo;
	struct vtpu_bo_map map;
};

/**
 * struct vtpu_job - a validated program with its buffers, on its way
 * @base: scheduler job
 * @vdev: device
 * @prog: the kernel's copy of the program, when it came in a buffer
 * @program: the program object it runs, when it came as one (a reference)
 * @info: the program, validated
 * @bos: bound buffers, then the profile buffer if any
 * @nbos: entries in @bos
 * @ebind: the bindings as the executor sees them
 * @desc: the bindings as the validator sees them
 * @ubind: the bindings as SUBMIT gave them (used while submitting)
 * @profile: where the profile goes, inside the profile buffer, or NULL;
 *	userspace may write there too, so the kernel only ever writes it
 * @trace_count: TRACE records written to @profile so far
 * @hw_fence: signalled by the core when the job ends
 * @hw_fence_init: @hw_fence was initialised by run_job
 * @node: entry in &vtpu_core.queue
 * @chain: the jobs chained behind this one (an io_uring batch's small
 *	jobs): they run right after it, on the same core, as part of its
 *	scheduler job, and are freed with it
 * @chain_node: entry in the @chain of the job that carries this one
 * @done: a chained job's own finished fence (&struct vtpu_out_fence),
 *	signalled as soon as its program ends; NULL for other jobs
 * @out_sync: a chained job's out-syncobj (a reference), until its chain
 *	is pushed: only then does the syncobj get @done (see vtpu_job_push())
 * @out_chain: the timeline node for @out_point, or NULL
 * @out_point: the timeline point, or 0 for a binary syncobj
 * @abort: set by the timeout handler; the core stops at the next slice
 * @queued: SUBMIT time (ns)
 * @nowait: being submitted from a context that must not wait
 * @ran: run_job was called for it (it was not killed with its entity)
 * @id: the job id SUBMIT returns
 * @client: the submitting file's DRM client id
 * @stats: the submitting file's stats (a reference)
 */
struct vtpu_job {
	struct drm_sched_job base;
	struct vtpu_device *vdev;
	void *prog;
	struct vtpu_program *program;
	struct vtpu_prog_info info;
	struct vtpu_job_bo *bos;
	unsigned int nbos;
	struct vtpu_exec_binding *ebind;
	struct vtpu_binding_desc *desc;
	struct drm_vtpu_binding *ubind;
	struct drm_vtpu_profile *profile;
	u32 trace_count;
	struct dma_fence *hw_fence;
	bool hw_fence_init;
	struct list_head node;
	struct list_head chain;
	struct list_head chain_node;
	struct dma_fence *done;
	struct drm_syncobj *out_sync;
	struct dma_fence_chain *out_chain;
	u64 out_point;
	atomic_t abort;
	u64 queued;
	bool nowait;
	bool ran;
	u64 id;
	u64 client;
	struct vtpu_file_stats *stats;
};

static inline struct vtpu_job *to_vtpu_job(struct drm_sched_job *job)
{
	return container_of(job, struct vtpu_job, base);
}

extern const struct drm_sched_backend_ops vtpu_sched_ops;

int vtpu_job_open(struct drm_device *drm, struct drm_file *file);
void vtpu_job_postclose(struct drm_device *drm, struct drm_file *file);
void vtpu_job_show_fdinfo(struct drm_printer *p, struct drm_file *file);

int vtpu_job_submit(struct drm_device *drm, struct drm_file *file,
		    struct drm_vtpu_submit *args, struct dma_fence **done_out,
		    bool nowait);
void vtpu_job_signal_done(struct vtpu_job *job, int error, u64 exec_ns);
u64 vtpu_job_exec_us(struct dma_fence *done);
int vtpu_ioctl_submit(struct drm_device *drm, void *data,
		      struct drm_file *file);
int vtpu_ioctl_job_wait(struct drm_device *drm, void *data,
			struct drm_file *file);

#endif /* __VTPU_JOB_H__ */
