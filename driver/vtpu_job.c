// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * Jobs: SUBMIT copies and validates a program, takes references on and
 * maps every buffer it binds, and pushes a drm_sched job to the file's
 * entity, which spans all cores of the device. JOB_WAIT waits for a job by
 * id. All allocation and locking happens here, before the job is armed,
 * so the signalling path (vtpu_core.c) needs none.
 *
 * The small jobs of one io_uring batch are chained (vtpu_job_chain()):
 * the first becomes a scheduler job and the others run behind it on the
 * same core, so a batch costs the scheduler and the cores' workers one
 * hand-over, not one per job: one doorbell per batch, as blk-mq plugging
 * gives NVMe. Each chained job still has its own fence and result.
 */

#include <linux/blkdev.h>
#include <linux/dma-fence-chain.h>
#include <linux/ktime.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>

#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_print.h>
#include <drm/drm_syncobj.h>
#include <drm/drm_utils.h>
#include <drm/vtpu_accel.h>

#include "vtpu_core.h"
#include "vtpu_drv.h"
#include "vtpu_gem.h"
#include "vtpu_job.h"
#include "vtpu_program.h"
#include "vtpu_trace.h"

/*
 * Un-waited jobs a file may have. Their records are small, but a file
 * that never waits must not grow kernel memory without bound.
 */
#define VTPU_MAX_JOB_RECORDS	16384

/*
 * Submissions from io_uring's first, non-blocking attempt must not wait
 * for anything: allocations do not enter reclaim, locks are only tried,
 * and user memory is read only if resident. Whatever would wait makes the
 * submission fail with -EAGAIN, and io_uring retries it from io-wq.
 */
static gfp_t vtpu_gfp(bool nowait)
{
	/* A job's memory is charged to the submitter's memory cgroup. */
	return nowait ? GFP_NOWAIT | __GFP_NOWARN | __GFP_ACCOUNT :
			GFP_KERNEL_ACCOUNT;
}

static gfp_t vtpu_job_gfp(const struct vtpu_job *job)
{
	return vtpu_gfp(job->nowait);
}

static int vtpu_job_copy_from_user(const struct vtpu_job *job, void *dst,
				   u64 src, size_t size)
{
	if (job->nowait)
		return copy_from_user_nofault(dst, u64_to_user_ptr(src), size) ?
			-EAGAIN : 0;
	return copy_from_user(dst, u64_to_user_ptr(src), size) ? -EFAULT : 0;
}

static void vtpu_file_stats_release(struct kref *ref)
{
	kfree(container_of(ref, struct vtpu_file_stats, ref));
}

static void vtpu_job_free(struct vtpu_job *job);

/* A chained job that never ran (its file was closed, say) ends here. */
static void vtpu_job_end_unrun(struct vtpu_job *job)
{
	if (job->done && !dma_fence_is_signaled(job->done))
		vtpu_job_signal_done(job, atomic_read(&job->stats->closed) ?
				     -ESRCH : -ECANCELED, 0);
}

static void vtpu_job_free(struct vtpu_job *job)
{
	struct vtpu_device *vdev = job->vdev;
	struct vtpu_job *f, *tmp;
	unsigned int i;

	list_for_each_entry_safe(f, tmp, &job->chain, chain_node) {
		list_del(&f->chain_node);
		vtpu_job_end_unrun(f);
		vtpu_job_free(f);
	}
	if (job->done) {
		vtpu_job_end_unrun(job);
		dma_fence_put(job->done);
	}
	/* Only a job whose chain was never pushed still holds these. */
	dma_fence_chain_free(job->out_chain);
	if (job->out_sync)
		drm_syncobj_put(job->out_sync);

	for (i = 0; i < job->nbos; i++) {
		if (!job->bos[i].bo)
			continue;
		vtpu_bo_unmap_range(&job->bos[i].map);
		drm_gem_object_put(&job->bos[i].bo->base.base);
	}
	kvfree(job->prog);
	vtpu_program_put(job->program);
	if (job->stats) {
		atomic_dec(&job->stats->jobs);
		kref_put(&job->stats->ref, vtpu_file_stats_release);
	}
	if (job->hw_fence_init)
		dma_fence_put(job->hw_fence);
	else
		kfree(job->hw_fence);
	kfree(job);

	if (atomic_dec_and_test(&vdev->jobs_alive))
		wake_up_var(&vdev->jobs_alive);
}

/* A timeline point's error is its fence's: chains do not pass it on. */
static int vtpu_fence_error(struct dma_fence *fence)
{
	return dma_fence_chain_contained(fence)->error ?: fence->error;
}

static struct dma_fence *vtpu_job_run(struct drm_sched_job *sched_job)
{
	struct vtpu_job *job = to_vtpu_job(sched_job);
	struct vtpu_core *core = container_of(sched_job->sched,
					      struct vtpu_core, sched);
	struct dma_fence *fence;
	unsigned long i;

	/* From here the scheduler counts its end (drm_sched_job_done()). */
	job->ran = true;

	/* Killed while queued (its file went away): never start it. */
	if (unlikely(sched_job->s_fence->finished.error))
		return NULL;

	/*
	 * Its inputs may be garbage when an in-sync failed: the job never
	 * runs. Every in-sync has signalled by now: the scheduler waits only
	 * for its own fences to be scheduled, and userspace never sees those
	 * (syncobjs get a vtpu_out_fence).
	 */
	xa_for_each(&sched_job->dependencies, i, fence) {
		if (vtpu_fence_error(fence)) {
			drm_dbg(&job->vdev->drm, "job %llu: an in-sync failed\n",
				job->id);
			return ERR_PTR(-ECANCELED);
		}
	}

	return vtpu_core_queue_job(core, job);
}

/*
 * Backstop only: the core's watchdog aborts jobs at the job timeout, so
 * this runs when a job is still going at twice that. Stop the scheduler,
 * make the core abort the job, and restart the scheduler with the jobs'
 * fences in place, so the job ends with the fence's -ETIMEDOUT rather than
 * the -ECANCELED drm_sched_start() gives fenceless jobs.
 */
static enum drm_gpu_sched_stat vtpu_job_timedout(struct drm_sched_job *sched_job)
{
	struct vtpu_job *job = to_vtpu_job(sched_job);
	struct drm_gpu_scheduler *sched = sched_job->sched;
	struct drm_sched_job *s_job;

	drm_warn(&job->vdev->drm, "%s: job still running past twice the timeout\n",
		 sched->name);

	/* Not while vtpu_job_postclose() has the schedulers stopped. */
	mutex_lock(&job->vdev->sched_lock);
	drm_sched_stop(sched, sched_job);
	atomic_set(&job->abort, 1);
	dma_fence_wait(job->hw_fence, false);
	/*
	 * drm_sched_stop() took every pending job's hardware fence. Give
	 * them all back: drm_sched_start() would cancel and free a job
	 * without one, and the job a core holds next (VTPU_CORE_DEPTH) is
	 * still in that core's queue.
	 */
	spin_lock(&sched->job_list_lock);
	list_for_each_entry(s_job, &sched->pending_list, list) {
		struct vtpu_job *j = to_vtpu_job(s_job);

		if (!s_job->s_fence->parent && j->hw_fence_init)
			s_job->s_fence->parent = dma_fence_get(j->hw_fence);
	}
	spin_unlock(&sched->job_list_lock);
	drm_sched_start(sched);
	mutex_unlock(&job->vdev->sched_lock);

	return DRM_GPU_SCHED_STAT_NOMINAL;
}

static void vtpu_job_free_sched(struct drm_sched_job *sched_job)
{
	struct vtpu_job *job = to_vtpu_job(sched_job);

	/*
	 * A job killed with its entity (its file closed) never reaches
	 * run_job, and 6.12's scheduler then never takes it back off the
	 * score push_job added it to: every later entity would avoid that
	 * core. Take it off here.
	 */
	if (!job->ran)
		atomic_dec(sched_job->sched->score);
	drm_sched_job_cleanup(sched_job);
	vtpu_job_free(job);
}

const struct drm_sched_backend_ops vtpu_sched_ops = {
	.run_job = vtpu_job_run,
	.timedout_job = vtpu_job_timedout,
	.free_job = vtpu_job_free_sched,
};

/* Looks up a buffer; the reference is @jbo's from here on. */
static int vtpu_job_lookup_bo(struct vtpu_job *job, struct drm_file *file,
			      u32 handle, struct vtpu_job_bo *jbo)
{
	struct drm_gem_object *obj;

	obj = drm_gem_object_lookup(file, handle);
	if (!obj) {
		drm_dbg(&job->vdev->drm, "submit: unknown handle %u\n", handle);
		return -ENOENT;
	}
	jbo->bo = to_vtpu_bo(obj);
	return 0;
}

static bool vtpu_range_ok(u64 offset, u64 size, u64 limit)
{
	u64 end;

	return size && !check_add_overflow(offset, size, &end) && end <= limit;
}

/* Looks up a buffer and maps the range the job uses of it. */
static int vtpu_job_add_bo(struct vtpu_job *job, struct drm_file *file,
			   u32 handle, u64 offset, u64 size,
			   struct vtpu_job_bo *jbo)
{
	int ret;

	ret = vtpu_job_lookup_bo(job, file, handle, jbo);
	if (ret)
		return ret;
	if (!vtpu_range_ok(offset, size, jbo->bo->base.base.size)) {
		drm_dbg(&job->vdev->drm,
			"submit: %llu bytes at %llu outside buffer %u\n",
			size, offset, handle);
		return -EINVAL;
	}
	return vtpu_bo_map_range(jbo->bo, offset, size, job->nowait,
				 &jbo->map);
}

static int vtpu_job_copy_program(struct vtpu_job *job, struct drm_file *file,
				 const struct drm_vtpu_submit *args)
{
	struct drm_device *drm = &job->vdev->drm;
	struct vtpu_job_bo jbo = {};
	int ret;

	if (args->program_size < sizeof(struct vtpu_prog_header) ||
	    args->program_size > VTPU_MAX_PROG_SIZE) {
		drm_dbg(drm, "submit: program size %llu\n", args->program_size);
		return -EINVAL;
	}

	ret = vtpu_job_lookup_bo(job, file, args->program_handle, &jbo);
	if (ret)
		return ret;
	if (!vtpu_range_ok(args->program_offset, args->program_size,
			   jbo.bo->base.base.size)) {
		drm_dbg(drm, "submit: program outside its buffer\n");
		ret = -EINVAL;
		goto out;
	}

	/* Validate and execute a private copy userspace cannot change. */
	job->prog = kvmalloc(args->program_size, vtpu_job_gfp(job));
	if (!job->prog) {
		ret = -ENOMEM;
		goto out;
	}
	ret = vtpu_bo_read(jbo.bo, args->program_offset, job->prog,
			   args->program_size, job->nowait);
out:
	drm_gem_object_put(&jbo.bo->base.base);
	return ret;
}

static int vtpu_job_bind(struct vtpu_job *job, struct drm_file *file,
			 const struct drm_vtpu_submit *args,
			 struct vtpu_binding_desc *desc)
{
	struct drm_device *drm = &job->vdev->drm;
	struct drm_vtpu_binding *b = job->ubind;
	unsigned int i;
	int ret;

	if (!args->binding_count)
		return 0;

	ret = vtpu_job_copy_from_user(job, b, args->bindings,
				      array_size(args->binding_count, sizeof(*b)));
	if (ret)
		return ret;

	for (i = 0; i < args->binding_count; i++) {
		struct vtpu_job_bo *jbo = &job->bos[i];
		u32 flags = b[i].flags;

		if (!flags || flags & ~(DRM_VTPU_BIND_READ | DRM_VTPU_BIND_WRITE)) {
			drm_dbg(drm, "submit: binding %u flags 0x%x\n", i, flags);
			return -EINVAL;
		}
		ret = vtpu_job_add_bo(job, file, b[i].handle, b[i].offset,
				      b[i].size, jbo);
		if (ret)
			return ret;
		job->ebind[i].data = jbo->map.vaddr;
		job->ebind[i].size = b[i].size;
		desc[i].size = b[i].size;
		desc[i].access = (flags & DRM_VTPU_BIND_READ ? VTPU_ACCESS_READ : 0) |
				 (flags & DRM_VTPU_BIND_WRITE ? VTPU_ACCESS_WRITE : 0);
	}
	return 0;
}

static int vtpu_job_validate(struct vtpu_job *job,
			     const struct drm_vtpu_submit *args,
			     const struct vtpu_binding_desc *desc)
{
	struct vtpu_prog_error err = {};
	int ret;

	ret = vtpu_prog_validate(job->prog, args->program_size, desc,
				 args->binding_count, job->vdev->vmem_size,
				 &job->info, &err);
	if (ret)
		drm_dbg(&job->vdev->drm, "submit: invalid program: insn %d: %s\n",
			err.insn, err.why);
	return ret;
}

/*
 * A program object was validated when it was created: only the bindings
 * are left to check, against what it needs of each. O(bindings).
 */
static int vtpu_job_use_program(struct vtpu_job *job, struct vtpu_file *vfile,
				const struct drm_vtpu_submit *args,
				const struct vtpu_binding_desc *desc)
{
	struct drm_device *drm = &job->vdev->drm;
	int bad;

	if (args->program_offset || args->program_size) {
		drm_dbg(drm, "submit: program offset or size with a program object\n");
		return -EINVAL;
	}
	job->program = vtpu_program_get(vfile, args->program_handle);
	if (!job->program) {
		drm_dbg(drm, "submit: unknown program %u\n",
			args->program_handle);
		return -ENOENT;
	}
	if (args->binding_count != job->program->info.binding_count) {
		drm_dbg(drm, "submit: %u bindings, the program has %u\n",
			args->binding_count, job->program->info.binding_count);
		return -EINVAL;
	}
	bad = vtpu_prog_bindings_ok(job->program->need, desc,
				    args->binding_count);
	if (bad >= 0) {
		drm_dbg(drm, "submit: binding %d too small or lacks rights\n",
			bad);
		return -EINVAL;
	}
	job->info = job->program->info;
	return 0;
}

static int vtpu_job_add_profile(struct vtpu_job *job, struct drm_file *file,
				const struct drm_vtpu_submit *args)
{
	struct vtpu_job_bo *jbo = &job->bos[args->binding_count];
	u64 need;
	int ret;

	if (!args->profile_handle) {
		if (args->profile_offset)
			return -EINVAL;
		return 0;
	}
	if (!IS_ALIGNED(args->profile_offset, 8))
		return -EINVAL;

	/* The core writes this much, and nothing past it. */
	need = struct_size(job->profile, trace, job->info.trace_count);
	ret = vtpu_job_add_bo(job, file, args->profile_handle,
			      args->profile_offset, need, jbo);
	if (ret)
		return ret;
	job->profile = jbo->map.vaddr;
	return 0;
}

static int vtpu_job_add_in_syncs(struct vtpu_job *job, struct drm_file *file,
				 const struct drm_vtpu_submit *args)
{
	struct drm_vtpu_sync *syncs;
	unsigned int i;
	int ret = 0;

	if (!args->in_sync_count)
		return 0;

	/* Adding dependencies allocates as it likes: not without waiting. */
	if (job->nowait)
		return -EAGAIN;

	syncs = kvmalloc_array(args->in_sync_count, sizeof(*syncs), GFP_KERNEL);
	if (!syncs)
		return -ENOMEM;
	ret = vtpu_job_copy_from_user(job, syncs, args->in_syncs,
				      array_size(args->in_sync_count,
						 sizeof(*syncs)));
	if (ret)
		goto out;
	for (i = 0; i < args->in_sync_count; i++) {
		struct dma_fence *fence;

		if (syncs[i].flags) {
			ret = -EINVAL;
			goto out;
		}
		/*
		 * Not drm_sched_job_add_syncobj_dependency(): it takes the
		 * point as a u32 and would wait for the wrong one.
		 */
		ret = drm_syncobj_find_fence(file, syncs[i].handle,
					     syncs[i].point, 0, &fence);
		if (!ret)
			ret = drm_sched_job_add_dependency(&job->base, fence);
		if (ret) {
			drm_dbg(&job->vdev->drm, "submit: in-sync %u: %d\n",
				syncs[i].handle, ret);
			goto out;
		}
	}
out:
	kvfree(syncs);
	return ret;
}

static int vtpu_submit_check(struct drm_device *drm,
			     const struct drm_vtpu_submit *args)
{
	if (args->flags & ~DRM_VTPU_SUBMIT_PROGRAM) {
		drm_dbg(drm, "submit: unknown flags 0x%x\n", args->flags);
		return -EINVAL;
	}
	if (args->binding_count > DRM_VTPU_MAX_BINDINGS ||
	    args->in_sync_count > DRM_VTPU_MAX_IN_SYNCS) {
		drm_dbg(drm, "submit: %u bindings, %u in-syncs\n",
			args->binding_count, args->in_sync_count);
		return -E2BIG;
	}
	if (!args->out_sync && args->out_sync_point)
		return -EINVAL;
	return 0;
}

/*
 * The fence an out-syncobj receives. Not the scheduler's finished fence:
 * that one points into the device's scheduler and gpu-sched's slab, and
 * a sync_file holding it would not keep vtpu.ko loaded. This fence is
 * vtpu.ko's, holds a module reference until it is freed, and follows the
 * finished fence, error included.
 */
struct vtpu_out_fence {
	struct dma_fence base;	/* first: dma_fence_free() frees the whole */
	spinlock_t lock;	/* Protects base */
	struct dma_fence_cb cb;
	u64 exec_ns;		/* a chained job's time on its core */
};

static const char *vtpu_out_fence_driver_name(struct dma_fence *fence)
{
	return VTPU_DRIVER_NAME;
}

static const char *vtpu_out_fence_timeline_name(struct dma_fence *fence)
{
	return "vtpu-job";
}

static void vtpu_out_fence_release(struct dma_fence *fence)
{
	dma_fence_free(fence);
	/* Last, so that no code of the module runs after it (a tail call). */
	module_put(THIS_MODULE);
}

static const struct dma_fence_ops vtpu_out_fence_ops = {
	.get_driver_name = vtpu_out_fence_driver_name,
	.get_timeline_name = vtpu_out_fence_timeline_name,
	.release = vtpu_out_fence_release,
};

static struct dma_fence *vtpu_out_fence_create(gfp_t gfp)
{
	struct vtpu_out_fence *of;

	of = kzalloc(sizeof(*of), gfp);
	if (!of)
		return NULL;
	spin_lock_init(&of->lock);
	/* Jobs end in any order: each fence is its own timeline. */
	dma_fence_init(&of->base, &vtpu_out_fence_ops, &of->lock,
		       dma_fence_context_alloc(1), 1);
	/* The caller is in an ioctl of this module: it is loaded. */
	__module_get(THIS_MODULE);
	return &of->base;
}

static void vtpu_out_fence_cb(struct dma_fence *done, struct dma_fence_cb *cb)
{
	struct vtpu_out_fence *of = container_of(cb, struct vtpu_out_fence, cb);

	if (done->error)
		dma_fence_set_error(&of->base, done->error);
	dma_fence_signal(&of->base);
	dma_fence_put(&of->base);
}

/**
 * vtpu_job_signal_done() - a chained job's program ended (or never ran)
 * @job: the job; @job->done is its fence
 * @error: its result, 0 or -errno
 * @exec_ns: time it spent on its core
 */
void vtpu_job_signal_done(struct vtpu_job *job, int error, u64 exec_ns)
{
	struct vtpu_out_fence *of = container_of(job->done,
						 struct vtpu_out_fence, base);

	of->exec_ns = exec_ns;
	if (error)
		dma_fence_set_error(job->done, error);
	dma_fence_signal(job->done);
}

/**
 * vtpu_job_exec_us() - time an ended job spent on its core
 * @done: the finished fence vtpu_job_submit() gave, signalled
 *
 * Return: microseconds, 0 when the job never ran.
 */
u64 vtpu_job_exec_us(struct dma_fence *done)
{
	struct drm_sched_fence *s_fence = to_drm_sched_fence(done);

	if (done->ops == &vtpu_out_fence_ops)
		return div_u64(container_of(done, struct vtpu_out_fence,
					    base)->exec_ns, NSEC_PER_USEC);
	if (s_fence &&
	    test_bit(DMA_FENCE_FLAG_TIMESTAMP_BIT, &s_fence->scheduled.flags) &&
	    test_bit(DMA_FENCE_FLAG_TIMESTAMP_BIT, &s_fence->finished.flags))
		return ktime_us_delta(s_fence->finished.timestamp,
				      s_fence->scheduled.timestamp);
	return 0;
}

/* @out follows @done from now on; takes its own reference on @out. */
static void vtpu_out_fence_follow(struct dma_fence *out, struct dma_fence *done)
{
	struct vtpu_out_fence *of = container_of(out, struct vtpu_out_fence,
						 base);

	dma_fence_get(out);
	if (dma_fence_add_callback(done, &of->cb, vtpu_out_fence_cb))
		vtpu_out_fence_cb(done, &of->cb);
}

static struct vtpu_job *vtpu_job_alloc(struct vtpu_device *vdev,
				       struct vtpu_file *vfile,
				       const struct drm_vtpu_submit *args,
				       bool nowait)
{
	/* One slot per binding, plus the profile buffer. */
	u32 n = args->binding_count + 1;
	gfp_t gfp = vtpu_gfp(nowait);
	struct vtpu_job *job;

	/*
	 * One allocation for the job and its per-binding arrays (64
	 * bindings at most), sizes multiples of 8: fewer allocations on
	 * the submit path, io_uring's non-blocking one above all.
	 */
	job = kzalloc(sizeof(*job) + n * (sizeof(*job->bos) +
					  sizeof(*job->ebind) +
					  sizeof(*job->desc) +
					  sizeof(*job->ubind)), gfp);
	if (!job)
		return ERR_PTR(-ENOMEM);
	job->nbos = n;
	job->bos = (void *)(job + 1);
	job->ebind = (void *)(job->bos + n);
	job->desc = (void *)(job->ebind + n);
	job->ubind = (void *)(job->desc + n);
	job->vdev = vdev;
	job->nowait = nowait;
	INIT_LIST_HEAD(&job->node);
	INIT_LIST_HEAD(&job->chain);
	INIT_LIST_HEAD(&job->chain_node);
	atomic_inc(&vdev->jobs_alive);

	/* Counted until freed, whichever path submitted it. */
	kref_get(&vfile->stats->ref);
	job->stats = vfile->stats;
	if (atomic_inc_return(&job->stats->jobs) > DRM_VTPU_MAX_JOBS) {
		vtpu_job_free(job);
		return ERR_PTR(-EBUSY);
	}

	job->hw_fence = kzalloc(sizeof(*job->hw_fence), gfp);
	if (!job->hw_fence) {
		vtpu_job_free(job);
		return ERR_PTR(-ENOMEM);
	}
	return job;
}

/*
 * The out-syncobj and, for a timeline point, the chain node it takes:
 * looked up and allocated before anything is queued.
 */
static int vtpu_job_get_out_sync(struct vtpu_job *job, struct drm_file *file,
				 const struct drm_vtpu_submit *args,
				 struct drm_syncobj **out_sync,
				 struct dma_fence_chain **chain)
{
	*out_sync = NULL;
	*chain = NULL;
	if (!args->out_sync)
		return 0;
	*out_sync = drm_syncobj_find(file, args->out_sync);
	if (!*out_sync)
		return -ENOENT;
	if (!args->out_sync_point)
		return 0;
	if (job->nowait)
		return -EAGAIN;
	*chain = dma_fence_chain_alloc();
	return *chain ? 0 : -ENOMEM;
}

/* Called with the file's submit_lock held, so points go in order. */
static void vtpu_job_set_out_sync(struct drm_syncobj *out_sync,
				  struct dma_fence_chain *chain,
				  struct dma_fence *fence, u64 point)
{
	if (chain)
		drm_syncobj_add_point(out_sync, chain, fence, point);
	else
		drm_syncobj_replace_fence(out_sync, fence);
}

/*
 * Chaining. A job joins a chain when it comes from io_uring's submission
 * of a batch (io_uring wraps it in a block plug, whose end is the end of
 * the batch), waits for no in-sync, and is small: a chain's programs
 * together do at most one FPU section's work (VTPU_EXEC_BUDGET), so a
 * chain holds its core about as long as one section of a big job, and
 * big jobs, whose hand-over costs nothing next to their work, go alone.
 * The chain's first job is the scheduler job; the core runs the others
 * after it, each against its own watchdog deadline, and signals each
 * one's fence as its program ends. The batch's end pushes the chain.
 *
 * A job of the batch that does not chain pushes the file's chain first
 * (vtpu_plug_flush()): the file's jobs are queued in the order they were
 * submitted, so a job waiting on an earlier one's out-syncobj finds its
 * fence and sits behind it.
 */
#define VTPU_CHAIN_BUDGET	VTPU_EXEC_BUDGET
#define VTPU_CHAIN_MAX		32

/*
 * What running a program costs its core, in the executor's work units.
 * A program with branches may loop until the job timeout: it never
 * chains, or a chain of them would run the scheduler job past its
 * backstop timeout and abort the jobs behind them.
 */
static u64 vtpu_job_cost(const struct vtpu_prog_info *info)
{
	if (info->branch_count)
		return U64_MAX;
	return info->flops + info->dma_bytes + info->insn_count +
	       vtpu_prog_vmem_cleared(info);
}

/* A chained job's out-syncobj gets its fence; called with submit_lock. */
static void vtpu_job_publish(struct vtpu_job *job)
{
	if (!job->out_sync)
		return;
	vtpu_job_set_out_sync(job->out_sync, job->out_chain, job->done,
			      job->out_point);
	job->out_chain = NULL;	/* the syncobj's now */
	drm_syncobj_put(job->out_sync);
	job->out_sync = NULL;
}

/*
 * Queues an initialised scheduler job and the jobs chained behind it;
 * sleeps not (see vtpu_plug_unplug()).
 *
 * Their out-syncobjs get their fences here, under the lock that orders
 * pushes, not when they joined the chain: a job that waits on one of
 * them is then always queued behind the chain. Published while the
 * chain sat in the plug, a fence could be waited on by a job another
 * task submitted to the same file meanwhile, queued ahead of the chain,
 * and the entity, which runs its jobs in order, would wait for ever (the
 * kernel fuzzer found this).
 */
static void vtpu_job_push(struct vtpu_file *vfile, struct vtpu_job *job)
{
	struct vtpu_job *f;

	spin_lock(&vfile->submit_lock);
	vtpu_job_publish(job);
	list_for_each_entry(f, &job->chain, chain_node)
		vtpu_job_publish(f);
	drm_sched_job_arm(&job->base);
	drm_sched_entity_push_job(&job->base);
	spin_unlock(&vfile->submit_lock);
}

#ifdef CONFIG_BLOCK
/**
 * struct vtpu_plug - the chain a file's jobs join during one batch
 * @cb: blk_check_plugged()'s callback, whose data is the &struct vtpu_file
 * @leader: the chain's scheduler job, initialised but not yet pushed
 * @count: jobs in the chain, @leader included
 * @cost: their vtpu_job_cost()
 */
struct vtpu_plug {
	struct blk_plug_cb cb;	/* first: blk_check_plugged() allocates it */
	struct vtpu_job *leader;
	unsigned int count;
	u64 cost;
};

static void vtpu_plug_push(struct vtpu_file *vfile, struct vtpu_plug *plug)
{
	if (plug->leader)
		vtpu_job_push(vfile, plug->leader);
	plug->leader = NULL;
}

/*
 * The batch ended, or its task is about to sleep (@from_schedule: with a
 * task state set, so this must not sleep, and does not).
 */
static void vtpu_plug_unplug(struct blk_plug_cb *cb, bool from_schedule)
{
	struct vtpu_plug *plug = container_of(cb, struct vtpu_plug, cb);

	vtpu_plug_push(cb->data, plug);
	kfree(plug);
}

/* Whether the task is submitting a batch (io_uring plugs it). */
static bool vtpu_in_batch(void)
{
	return current->plug;
}

static struct vtpu_plug *vtpu_plug_get(struct vtpu_file *vfile)
{
	struct blk_plug_cb *cb;

	cb = blk_check_plugged(vtpu_plug_unplug, vfile, sizeof(struct vtpu_plug));
	return cb ? container_of(cb, struct vtpu_plug, cb) : NULL;
}

/*
 * Pushes the chain this task's batch holds for @vfile, if any: a job of
 * the batch that does not chain is queued behind the jobs submitted
 * before it, and sees their out-syncobjs' fences, as without chains.
 * A lookup only: blk_check_plugged() would allocate a plug.
 */
static void vtpu_plug_flush(struct vtpu_file *vfile)
{
	struct blk_plug *bplug = current->plug;
	struct blk_plug_cb *cb;

	if (!bplug)
		return;
	list_for_each_entry(cb, &bplug->cb_list, list) {
		if (cb->callback == vtpu_plug_unplug && cb->data == vfile) {
			vtpu_plug_push(vfile, container_of(cb, struct vtpu_plug,
							   cb));
			return;
		}
	}
}
#else
struct vtpu_plug;

static void vtpu_plug_push(struct vtpu_file *vfile, struct vtpu_plug *plug)
{
}

static bool vtpu_in_batch(void)
{
	return false;
}

static struct vtpu_plug *vtpu_plug_get(struct vtpu_file *vfile)
{
	return NULL;
}

static void vtpu_plug_flush(struct vtpu_file *vfile)
{
}
#endif

/*
 * Queues @job on the chain of the batch being submitted. Return: 0 when
 * it is queued, 1 when it does not chain (not from a batch, or not a
 * small job), or -errno with nothing queued.
 */
static int vtpu_job_chain(struct vtpu_job *job, struct drm_file *file,
			  struct drm_vtpu_submit *args,
			  struct dma_fence **done_out)
{
	struct vtpu_file *vfile = file->driver_priv;
	u64 cost = vtpu_job_cost(&job->info);
	struct vtpu_plug *plug;
	int ret;

	if (args->in_sync_count || cost > VTPU_CHAIN_BUDGET || !vtpu_in_batch())
		return 1;

	/*
	 * Whatever may sleep comes before the plug is looked up, or between
	 * two lookups: a task that sleeps flushes its plug, which runs
	 * vtpu_plug_unplug() and frees the plug. The out-syncobj and its
	 * node are held until the chain is pushed (vtpu_job_publish()), or
	 * dropped by vtpu_job_free().
	 */
	ret = vtpu_job_get_out_sync(job, file, args, &job->out_sync,
				    &job->out_chain);
	if (ret)
		return ret;
	job->out_point = args->out_sync_point;
	job->done = vtpu_out_fence_create(vtpu_job_gfp(job));
	if (!job->done)
		return -ENOMEM;

	plug = vtpu_plug_get(vfile);
	if (plug && (plug->count == VTPU_CHAIN_MAX ||
		     plug->cost + cost > VTPU_CHAIN_BUDGET))
		vtpu_plug_push(vfile, plug);
	if (!plug || !plug->leader) {
		/* A new chain: its scheduler job (this may sleep) */
		ret = drm_sched_job_init(&job->base, &vfile->entity, 1, vfile,
					 file->client_id);
		if (ret)
			return ret;
		plug = vtpu_plug_get(vfile);
		if (plug && !plug->leader) {
			plug->leader = job;
			plug->count = 0;
			plug->cost = 0;
		} else {
			plug = NULL;	/* no memory for a plug: alone */
		}
	} else {
		/* The leader's scheduler job and hardware fence carry it. */
		kfree(job->hw_fence);
		job->hw_fence = NULL;
		list_add_tail(&job->chain_node, &plug->leader->chain);
	}
	if (plug) {
		plug->count++;
		plug->cost += cost;
	}

	job->id = atomic64_inc_return(&vfile->next_id);
	job->client = file->client_id;
	trace_vtpu_job_submit(job->vdev->index, job->client, job->id,
			      job->info.insn_count, args->binding_count, true);
	*done_out = dma_fence_get(job->done);
	args->job_id = job->id;
	if (!plug)
		vtpu_job_push(vfile, job);
	return 0;
}

/**
 * vtpu_job_submit() - validate and queue one job
 * @drm: device
 * @file: the submitting file
 * @args: the request, already copied into the kernel; @args->job_id is set
 * @done_out: NULL to keep a record JOB_WAIT can find the job by; else it
 *	receives a reference to the job's finished fence and no record is kept
 *	(io_uring), and the job may be chained (vtpu_job_chain())
 * @nowait: fail with -EAGAIN rather than wait for memory, a lock or a page
 *	of user memory (io_uring's non-blocking attempt). The scheduler's
 *	own fence allocation is the exception: like io_uring's request
 *	allocation on the same path, it uses GFP_KERNEL.
 *
 * Shared by the SUBMIT ioctl and the io_uring SUBMIT command, so both
 * check exactly the same things. Nothing is queued unless all succeeds.
 *
 * Return: 0 or -errno.
 */
int vtpu_job_submit(struct drm_device *drm, struct drm_file *file,
		    struct drm_vtpu_submit *args, struct dma_fence **done_out,
		    bool nowait)
{
	struct vtpu_device *vdev = to_vtpu_device(drm);
	struct vtpu_file *vfile = file->driver_priv;
	struct vtpu_binding_desc *desc;
	struct dma_fence_chain *chain = NULL;
	struct drm_syncobj *out_sync = NULL;
	struct dma_fence *out_fence = NULL;
	bool record = !done_out;
	struct dma_fence *done;
	struct vtpu_job *job;
	u64 id;
	int ret;

	ret = vtpu_submit_check(drm, args);
	if (ret)
		return ret;

	/* Only io_uring submissions come without a JOB_WAIT record. */
	if (WARN_ON(nowait && record))
		return -EINVAL;

	job = vtpu_job_alloc(vdev, vfile, args, nowait);
	if (IS_ERR(job)) {
		ret = PTR_ERR(job);
		return nowait && ret == -ENOMEM ? -EAGAIN : ret;
	}
	job->queued = ktime_get_ns();

	desc = job->desc;
	ret = vtpu_job_bind(job, file, args, desc);
	if (ret)
		goto err_free;
	if (args->flags & DRM_VTPU_SUBMIT_PROGRAM) {
		ret = vtpu_job_use_program(job, vfile, args, desc);
	} else {
		ret = vtpu_job_copy_program(job, file, args);
		if (!ret)
			ret = vtpu_job_validate(job, args, desc);
	}
	if (ret)
		goto err_free;
	ret = vtpu_job_add_profile(job, file, args);
	if (ret)
		goto err_free;

	if (!record) {
		ret = vtpu_job_chain(job, file, args, done_out);
		if (ret < 0)
			goto err_free;
		if (!ret)
			return 0;
	}
	vtpu_plug_flush(vfile);

	ret = drm_sched_job_init(&job->base, &vfile->entity, 1, vfile,
				 file->client_id);
	if (ret)
		goto err_free;

	ret = vtpu_job_add_in_syncs(job, file, args);
	if (ret)
		goto err_cleanup;

	ret = vtpu_job_get_out_sync(job, file, args, &out_sync, &chain);
	if (ret)
		goto err_cleanup;
	if (out_sync) {
		out_fence = vtpu_out_fence_create(vtpu_job_gfp(job));
		if (!out_fence) {
			ret = -ENOMEM;
			goto err_cleanup;
		}
	}

	id = atomic64_inc_return(&vfile->next_id);
	job->id = id;
	job->client = file->client_id;
	if (record) {
		/* Reserve the slot now: the fence exists only once armed. */
		if (atomic_inc_return(&vfile->nrecords) > VTPU_MAX_JOB_RECORDS) {
			atomic_dec(&vfile->nrecords);
			ret = -EBUSY;
			goto err_cleanup;
		}
		ret = xa_insert(&vfile->jobs, id, xa_mk_value(0), GFP_KERNEL);
		if (ret) {
			atomic_dec(&vfile->nrecords);
			goto err_cleanup;
		}
	}

	spin_lock(&vfile->submit_lock);
	drm_sched_job_arm(&job->base);
	done = dma_fence_get(&job->base.s_fence->finished);
	if (out_sync) {
		vtpu_out_fence_follow(out_fence, done);
		vtpu_job_set_out_sync(out_sync, chain, out_fence,
				      args->out_sync_point);
	}
	trace_vtpu_job_submit(vdev->index, job->client, id, job->info.insn_count,
			      args->binding_count, !record);
	drm_sched_entity_push_job(&job->base);
	spin_unlock(&vfile->submit_lock);

	/* Into the slot reserved above: this allocates nothing. */
	if (record)
		xa_store(&vfile->jobs, id, done, GFP_KERNEL);
	else
		*done_out = done;
	if (out_sync) {
		dma_fence_put(out_fence);
		drm_syncobj_put(out_sync);
	}
	args->job_id = id;
	return 0;

err_cleanup:
	dma_fence_chain_free(chain);
	if (out_fence)
		dma_fence_put(out_fence);
	if (out_sync)
		drm_syncobj_put(out_sync);
	drm_sched_job_cleanup(&job->base);
err_free:
	vtpu_job_free(job);
	/* Out of memory without reclaim: worth a try that may wait. */
	return nowait && ret == -ENOMEM ? -EAGAIN : ret;
}

int vtpu_ioctl_submit(struct drm_device *drm, void *data,
		      struct drm_file *file)
{
	return vtpu_job_submit(drm, file, data, NULL, false);
}

int vtpu_ioctl_job_wait(struct drm_device *drm, void *data,
			struct drm_file *file)
{
	struct vtpu_file *vfile = file->driver_priv;
	struct drm_vtpu_job_wait *args = data;
	struct dma_fence *fence;
	long ret;

	if (args->flags) {
		drm_dbg(drm, "job_wait: unknown flags 0x%x\n", args->flags);
		return -EINVAL;
	}
	/* xarray indices are unsigned long: ids beyond do not exist. */
	if (!args->job_id || args->job_id != (unsigned long)args->job_id)
		return -ENOENT;

	xa_lock(&vfile->jobs);
	fence = xa_load(&vfile->jobs, args->job_id);
	if (!fence || xa_is_value(fence))
		fence = NULL;
	else
		dma_fence_get(fence);
	xa_unlock(&vfile->jobs);
	if (!fence)
		return -ENOENT;

	ret = dma_fence_wait_timeout(fence, true,
				     drm_timeout_abs_to_jiffies(args->timeout_ns));
	if (ret == 0 && !dma_fence_is_signaled(fence))
		ret = -ETIME;
	if (ret >= 0) {
		args->status = fence->error;
		/* Reported: forget the id, unless a racing wait already did. */
		if (xa_cmpxchg(&vfile->jobs, args->job_id, fence, NULL,
			       GFP_KERNEL) == fence) {
			atomic_dec(&vfile->nrecords);
			dma_fence_put(fence);
		}
		ret = 0;
	}
	dma_fence_put(fence);
	return ret;
}

int vtpu_job_open(struct drm_device *drm, struct drm_file *file)
{
	struct vtpu_device *vdev = to_vtpu_device(drm);
	struct vtpu_file *vfile;
	int ret;

	vfile = kzalloc(sizeof(*vfile), GFP_KERNEL);
	if (!vfile)
		return -ENOMEM;
	vfile->stats = kzalloc(sizeof(*vfile->stats), GFP_KERNEL);
	if (!vfile->stats) {
		kfree(vfile);
		return -ENOMEM;
	}
	kref_init(&vfile->stats->ref);
	seqlock_init(&vfile->stats->run_seq);

	ret = drm_sched_entity_init(&vfile->entity, DRM_SCHED_PRIORITY_NORMAL,
				    vdev->scheds, vdev->num_cores, NULL);
	if (ret) {
		kfree(vfile->stats);
		kfree(vfile);
		return ret;
	}
	xa_init(&vfile->jobs);
	xa_init_flags(&vfile->programs, XA_FLAGS_ALLOC1);
	spin_lock_init(&vfile->submit_lock);
	file->driver_priv = vfile;
	return 0;
}

/*
 * Kills an entity with the device's schedulers stopped. 6.12's
 * drm_sched_entity_pop_job() puts the entity back into its run queue's
 * FIFO tree when more jobs wait, without looking at entity->stopped: a
 * pop racing drm_sched_entity_kill() left the entity in the tree after
 * the kill had taken it out, and once the file was freed the next push
 * to that core walked freed memory (the kernel fuzzer's Oops in
 * drm_sched_rq_update_fifo_locked()). With every core's run_job work
 * stopped, nothing pops while the kill runs.
 */
static void vtpu_job_entity_kill(struct vtpu_device *vdev,
				 struct drm_sched_entity *entity)
{
	unsigned int i;

	mutex_lock(&vdev->sched_lock);
	for (i = 0; i < vdev->num_cores; i++)
		drm_sched_wqueue_stop(vdev->scheds[i]);
	drm_sched_entity_fini(entity);
	for (i = 0; i < vdev->num_cores; i++)
		drm_sched_wqueue_start(vdev->scheds[i]);
	mutex_unlock(&vdev->sched_lock);
}

void vtpu_job_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct vtpu_file *vfile = file->driver_priv;
	struct dma_fence *fence;
	unsigned long id;

	/*
	 * The owner is gone: queued jobs are killed (-ESRCH), a running one
	 * finishes or times out. Not drm_sched_entity_destroy(), whose flush
	 * waits for the queue to drain unless the closing task is exiting;
	 * the last close may come from a kworker (io_uring's ring teardown,
	 * a dma-buf's last reference), which would wait for every queued job.
	 * The cores' queues take @closed into account.
	 */
	atomic_set(&vfile->stats->closed, 1);
	vtpu_job_entity_kill(to_vtpu_device(drm), &vfile->entity);

	xa_for_each(&vfile->jobs, id, fence) {
		if (!xa_is_value(fence))
			dma_fence_put(fence);
	}
	xa_destroy(&vfile->jobs);
	vtpu_programs_fini(vfile);
	kref_put(&vfile->stats->ref, vtpu_file_stats_release);
	kfree(vfile);
}

/**
 * vtpu_job_show_fdinfo() - the file's time on the cores
 * @p: printer into the fdinfo file
 * @file: the DRM file
 *
 * One engine class, "vtpu", with one engine per core
 * (Documentation/gpu/drm-usage-stats.rst): drm-engine-vtpu is the time
 * the file's jobs executed, summed over the cores, the running ones up to
 * now, so it grows up to capacity * wall time while a job runs, and never
 * goes back (vtpu_core_run() takes a job's end time under the seqlock).
 */
void vtpu_job_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct vtpu_device *vdev = to_vtpu_device(file->minor->dev);
	struct vtpu_file *vfile = file->driver_priv;
	struct vtpu_file_stats *st = vfile->stats;
	u64 engine, sum, now;
	unsigned int seq;
	u32 running;

	do {
		seq = read_seqbegin(&st->run_seq);
		engine = atomic64_read(&st->engine_ns);
		running = st->running;
		sum = st->start_sum;
		now = ktime_get_ns();
	} while (read_seqretry(&st->run_seq, seq));
	drm_printf(p, "drm-engine-vtpu:\t%llu ns\n",
		   engine + running * now - sum);
	drm_printf(p, "drm-engine-capacity-vtpu:\t%u\n", vdev->num_cores);
}
