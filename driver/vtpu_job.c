// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * Jobs: SUBMIT copies and validates a program, takes references on and
 * maps every buffer it binds, and pushes a drm_sched job to the file's
 * entity, which spans all cores of the device. JOB_WAIT waits for a job by
 * id. All allocation and locking happens here, before the job is armed,
 * so the signalling path (vtpu_core.c) needs none.
 */

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
#include "vtpu_trace.h"

/*
 * Un-waited jobs a file may have. Their records are small, but a file
 * that never waits must not grow kernel memory without bound.
 */
#define VTPU_MAX_JOB_RECORDS	16384

/* Largest program: header, VTPU_MAX_INSNS instructions and both sections. */
#define VTPU_MAX_PROG_SIZE \
	(sizeof(struct vtpu_prog_header) + \
	 (u64)VTPU_MAX_INSNS * sizeof(struct vtpu_insn) + \
	 VTPU_MAX_CONST_SIZE + VTPU_MAX_META_SIZE)

/*
 * Submissions from io_uring's first, non-blocking attempt must not wait
 * for anything: allocations do not enter reclaim, locks are only tried,
 * and user memory is read only if resident. Whatever would wait makes the
 * submission fail with -EAGAIN, and io_uring retries it from io-wq.
 */
static gfp_t vtpu_job_gfp(const struct vtpu_job *job)
{
	return job->nowait ? GFP_NOWAIT | __GFP_NOWARN : GFP_KERNEL;
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

static void vtpu_job_free(struct vtpu_job *job)
{
	struct vtpu_device *vdev = job->vdev;
	unsigned int i;

	for (i = 0; i < job->nbos; i++) {
		if (job->bos[i].bo)
			drm_gem_object_put(&job->bos[i].bo->base.base);
	}
	kfree(job->bos);
	kfree(job->ebind);
	kvfree(job->prog);
	if (job->stats)
		kref_put(&job->stats->ref, vtpu_file_stats_release);
	if (job->hw_fence_init)
		dma_fence_put(job->hw_fence);
	else
		kfree(job->hw_fence);
	kfree(job);

	if (atomic_dec_and_test(&vdev->jobs_alive))
		wake_up_var(&vdev->jobs_alive);
}

static struct dma_fence *vtpu_job_run(struct drm_sched_job *sched_job)
{
	struct vtpu_job *job = to_vtpu_job(sched_job);
	struct vtpu_core *core = container_of(sched_job->sched,
					      struct vtpu_core, sched);

	/* Killed while queued (its file went away): never start it. */
	if (unlikely(sched_job->s_fence->finished.error))
		return NULL;

	return vtpu_core_queue_job(core, job);
}

/*
 * Backstop only: the core's watchdog aborts jobs at the job timeout, so
 * this runs when a job is still going at twice that. Stop the scheduler,
 * make the core abort the job, and restart the scheduler with the job's
 * fence in place, so the job ends with the fence's -ETIMEDOUT rather than
 * the -ECANCELED drm_sched_start() gives fenceless jobs.
 */
static enum drm_gpu_sched_stat vtpu_job_timedout(struct drm_sched_job *sched_job)
{
	struct vtpu_job *job = to_vtpu_job(sched_job);
	struct drm_gpu_scheduler *sched = sched_job->sched;

	drm_warn(&job->vdev->drm, "%s: job still running past twice the timeout\n",
		 sched->name);

	drm_sched_stop(sched, sched_job);
	atomic_set(&job->abort, 1);
	dma_fence_wait(job->hw_fence, false);
	if (!sched_job->s_fence->parent)
		sched_job->s_fence->parent = dma_fence_get(job->hw_fence);
	drm_sched_start(sched);

	return DRM_GPU_SCHED_STAT_NOMINAL;
}

static void vtpu_job_free_sched(struct drm_sched_job *sched_job)
{
	struct vtpu_job *job = to_vtpu_job(sched_job);

	drm_sched_job_cleanup(sched_job);
	vtpu_job_free(job);
}

const struct drm_sched_backend_ops vtpu_sched_ops = {
	.run_job = vtpu_job_run,
	.timedout_job = vtpu_job_timedout,
	.free_job = vtpu_job_free_sched,
};

/* Looks up a buffer and maps it; the job owns both from here on. */
static int vtpu_job_add_bo(struct vtpu_job *job, struct drm_file *file,
			   u32 handle, struct vtpu_job_bo *jbo)
{
	struct drm_gem_object *obj;
	void *vaddr;

	obj = drm_gem_object_lookup(file, handle);
	if (!obj) {
		drm_dbg(&job->vdev->drm, "submit: unknown handle %u\n", handle);
		return -ENOENT;
	}
	jbo->bo = to_vtpu_bo(obj);
	vaddr = vtpu_bo_kvaddr(jbo->bo, job->nowait);
	if (IS_ERR(vaddr))
		return PTR_ERR(vaddr);
	jbo->vaddr = vaddr;
	return 0;
}

static bool vtpu_range_ok(u64 offset, u64 size, u64 limit)
{
	u64 end;

	return size && !check_add_overflow(offset, size, &end) && end <= limit;
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

	ret = vtpu_job_add_bo(job, file, args->program_handle, &jbo);
	if (ret)
		goto out;
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
	memcpy(job->prog, jbo.vaddr + args->program_offset,
	       args->program_size);
out:
	if (jbo.bo)
		drm_gem_object_put(&jbo.bo->base.base);
	return ret;
}

static int vtpu_job_bind(struct vtpu_job *job, struct drm_file *file,
			 const struct drm_vtpu_submit *args,
			 struct vtpu_binding_desc *desc)
{
	struct drm_device *drm = &job->vdev->drm;
	struct drm_vtpu_binding *b;
	unsigned int i;
	int ret = 0;

	if (!args->binding_count)
		return 0;

	b = kvmalloc_array(args->binding_count, sizeof(*b), vtpu_job_gfp(job));
	if (!b)
		return -ENOMEM;
	ret = vtpu_job_copy_from_user(job, b, args->bindings,
				      array_size(args->binding_count, sizeof(*b)));
	if (ret)
		goto out;

	for (i = 0; i < args->binding_count; i++) {
		struct vtpu_job_bo *jbo = &job->bos[i];
		u32 flags = b[i].flags;

		if (!flags || flags & ~(DRM_VTPU_BIND_READ | DRM_VTPU_BIND_WRITE)) {
			drm_dbg(drm, "submit: binding %u flags 0x%x\n", i, flags);
			ret = -EINVAL;
			goto out;
		}
		ret = vtpu_job_add_bo(job, file, b[i].handle, jbo);
		if (ret)
			goto out;
		if (!vtpu_range_ok(b[i].offset, b[i].size,
				   jbo->bo->base.base.size)) {
			drm_dbg(drm, "submit: binding %u outside its buffer\n", i);
			ret = -EINVAL;
			goto out;
		}
		job->ebind[i].data = jbo->vaddr + b[i].offset;
		job->ebind[i].size = b[i].size;
		desc[i].size = b[i].size;
		desc[i].access = (flags & DRM_VTPU_BIND_READ ? VTPU_ACCESS_READ : 0) |
				 (flags & DRM_VTPU_BIND_WRITE ? VTPU_ACCESS_WRITE : 0);
	}
out:
	kvfree(b);
	return ret;
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

	ret = vtpu_job_add_bo(job, file, args->profile_handle, jbo);
	if (ret)
		return ret;
	need = struct_size(job->profile, trace, job->info.trace_count);
	if (!vtpu_range_ok(args->profile_offset, need, jbo->bo->base.base.size)) {
		drm_dbg(&job->vdev->drm, "submit: profile needs %llu bytes\n",
			need);
		return -EINVAL;
	}
	job->profile = jbo->vaddr + args->profile_offset;
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
		if (syncs[i].flags) {
			ret = -EINVAL;
			goto out;
		}
		ret = drm_sched_job_add_syncobj_dependency(&job->base, file,
							   syncs[i].handle,
							   syncs[i].point);
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
	if (args->flags) {
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

static struct vtpu_job *vtpu_job_alloc(struct vtpu_device *vdev,
				       const struct drm_vtpu_submit *args,
				       bool nowait)
{
	gfp_t gfp = nowait ? GFP_NOWAIT | __GFP_NOWARN : GFP_KERNEL;
	struct vtpu_job *job;

	job = kzalloc(sizeof(*job), gfp);
	if (!job)
		return NULL;
	job->vdev = vdev;
	job->nowait = nowait;
	INIT_LIST_HEAD(&job->node);
	atomic_inc(&vdev->jobs_alive);

	/* One slot per binding, plus the profile buffer. */
	job->nbos = args->binding_count + 1;
	job->bos = kcalloc(job->nbos, sizeof(*job->bos), gfp);
	job->ebind = kcalloc(args->binding_count + 1, sizeof(*job->ebind), gfp);
	job->hw_fence = kzalloc(sizeof(*job->hw_fence), gfp);
	if (!job->bos || !job->ebind || !job->hw_fence) {
		vtpu_job_free(job);
		return NULL;
	}
	return job;
}

/**
 * vtpu_job_submit() - validate and queue one job
 * @drm: device
 * @file: the submitting file
 * @args: the request, already copied into the kernel; @args->job_id is set
 * @done_out: NULL to keep a record JOB_WAIT can find the job by; else it
 *	receives a reference to the job's finished fence and no record is kept
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
	struct vtpu_binding_desc *desc = NULL;
	struct dma_fence_chain *chain = NULL;
	struct drm_syncobj *out_sync = NULL;
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

	job = vtpu_job_alloc(vdev, args, nowait);
	if (!job)
		return nowait ? -EAGAIN : -ENOMEM;
	job->queued = ktime_get_ns();

	desc = kcalloc(args->binding_count + 1, sizeof(*desc),
		       vtpu_job_gfp(job));
	if (!desc) {
		ret = -ENOMEM;
		goto err_free;
	}

	ret = vtpu_job_bind(job, file, args, desc);
	if (ret)
		goto err_free;
	ret = vtpu_job_copy_program(job, file, args);
	if (ret)
		goto err_free;
	ret = vtpu_job_validate(job, args, desc);
	if (ret)
		goto err_free;
	ret = vtpu_job_add_profile(job, file, args);
	if (ret)
		goto err_free;

	ret = drm_sched_job_init(&job->base, &vfile->entity, 1, vfile,
				 file->client_id);
	if (ret)
		goto err_free;

	ret = vtpu_job_add_in_syncs(job, file, args);
	if (ret)
		goto err_cleanup;

	if (args->out_sync) {
		out_sync = drm_syncobj_find(file, args->out_sync);
		if (!out_sync) {
			ret = -ENOENT;
			goto err_cleanup;
		}
		if (args->out_sync_point) {
			ret = -EAGAIN;
			if (nowait)
				goto err_cleanup;
			chain = dma_fence_chain_alloc();
			if (!chain) {
				ret = -ENOMEM;
				goto err_cleanup;
			}
		}
	}

	id = atomic64_inc_return(&vfile->next_id);
	job->id = id;
	job->client = file->client_id;
	kref_get(&vfile->stats->ref);
	job->stats = vfile->stats;
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

	if (!nowait) {
		mutex_lock(&vfile->submit_lock);
	} else if (!mutex_trylock(&vfile->submit_lock)) {
		ret = -EAGAIN;
		goto err_cleanup;
	}
	drm_sched_job_arm(&job->base);
	done = &job->base.s_fence->finished;
	if (record)
		xa_store(&vfile->jobs, id, dma_fence_get(done), GFP_KERNEL);
	else
		*done_out = dma_fence_get(done);
	if (out_sync) {
		if (chain)
			drm_syncobj_add_point(out_sync, chain, done,
					      args->out_sync_point);
		else
			drm_syncobj_replace_fence(out_sync, done);
	}
	trace_vtpu_job_submit(vdev->index, job->client, id, job->info.insn_count,
			      args->binding_count, !record);
	drm_sched_entity_push_job(&job->base);
	mutex_unlock(&vfile->submit_lock);

	if (out_sync)
		drm_syncobj_put(out_sync);
	kfree(desc);
	args->job_id = id;
	return 0;

err_cleanup:
	dma_fence_chain_free(chain);
	if (out_sync)
		drm_syncobj_put(out_sync);
	drm_sched_job_cleanup(&job->base);
err_free:
	kfree(desc);
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

	ret = drm_sched_entity_init(&vfile->entity, DRM_SCHED_PRIORITY_NORMAL,
				    vdev->scheds, vdev->num_cores, NULL);
	if (ret) {
		kfree(vfile->stats);
		kfree(vfile);
		return ret;
	}
	xa_init(&vfile->jobs);
	mutex_init(&vfile->submit_lock);
	file->driver_priv = vfile;
	return 0;
}

void vtpu_job_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct vtpu_file *vfile = file->driver_priv;
	struct dma_fence *fence;
	unsigned long id;

	/* Queued jobs are killed; a running one finishes or times out. */
	drm_sched_entity_destroy(&vfile->entity);

	xa_for_each(&vfile->jobs, id, fence) {
		if (!xa_is_value(fence))
			dma_fence_put(fence);
	}
	xa_destroy(&vfile->jobs);
	mutex_destroy(&vfile->submit_lock);
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
 * the file's finished jobs executed, summed over the cores, so it grows
 * up to capacity * wall time.
 */
void vtpu_job_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct vtpu_device *vdev = to_vtpu_device(file->minor->dev);
	struct vtpu_file *vfile = file->driver_priv;

	drm_printf(p, "drm-engine-vtpu:\t%llu ns\n",
		   (u64)atomic64_read(&vfile->stats->engine_ns));
	drm_printf(p, "drm-engine-capacity-vtpu:\t%u\n", vdev->num_cores);
}
