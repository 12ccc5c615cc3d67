// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * The emulated cores. Each core has a drm_sched scheduler that hands it
 * up to two jobs (credit limit 2: like a hardware ring, the core finds its
 * next job waiting when one ends, rather than idling while the scheduler
 * wakes up to hand it over; measured, this doubles the rate of small
 * jobs) and a work item that executes them in order. The scheduler's
 * timeout still measures execution: it is re-armed whenever a job starts
 * or ends. A job a core holds but has not started is still killed when
 * its file is closed (vtpu_file_stats.closed), as if it had been queued.
 *
 * A scheduler job may carry a chain of small jobs from one io_uring
 * batch (vtpu_job_chain()): the core runs them right after it, each
 * against its own deadline, signals each one's fence as it ends, and the
 * carrier's hardware fence last, since it frees them all.
 *
 * Execution never happens inside run_job: run_job only initialises the
 * job's hardware fence (preallocated at submit) and queues the job. The
 * work item runs the program in short kernel-FPU sections, rescheduling
 * between them, enforces the job timeout itself like a hardware watchdog
 * would, writes the profile and signals the fence. Nothing on that path
 * allocates or takes a dma_resv lock: SUBMIT did all of that.
 */

#include <linux/debugfs.h>
#include <linux/dma-fence.h>
#include <linux/fpu.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <drm/vtpu_accel.h>

#include "vtpu_core.h"
#include "vtpu_drv.h"
#include "vtpu_job.h"

#define CREATE_TRACE_POINTS
#include "vtpu_trace.h"

/*
 * An FPU section (preemption off) is one vtpu_exec_step() call: up to
 * this many instructions, and at most the executor's work budget (about
 * 0.25 ms natively), however big one instruction is: long instructions
 * stop partway and resume in the next section. The watchdog checks
 * between sections; short instructions do not pay an FPU save each.
 */
#define VTPU_SLICE_INSNS	1024

/* Jobs a core holds: the one running and the next (see above). */
#define VTPU_CORE_DEPTH		2

static const char *vtpu_fence_get_driver_name(struct dma_fence *fence)
{
	return VTPU_DRIVER_NAME;
}

static const char *vtpu_fence_get_timeline_name(struct dma_fence *fence)
{
	return "vtpu-core";
}

static const struct dma_fence_ops vtpu_fence_ops = {
	.get_driver_name = vtpu_fence_get_driver_name,
	.get_timeline_name = vtpu_fence_get_timeline_name,
};

static void vtpu_core_trace(void *arg, u32 id)
{
	struct vtpu_job *job = arg;
	struct drm_vtpu_profile *p = job->profile;
	struct drm_vtpu_profile_trace *t;

	/*
	 * SUBMIT sized the buffer for every TRACE of the program. The count
	 * is the job's own: userspace can write the buffer while the job
	 * runs, so nothing read back from it may steer a write.
	 */
	if (!p || job->trace_count >= job->info.trace_count)
		return;
	t = &p->trace[job->trace_count++];
	t->id = id;
	t->pad = 0;
	t->timestamp = ktime_get_ns();
}

static int vtpu_core_exec(struct vtpu_core *core, struct vtpu_job *job,
			  atomic_t *abort, u64 deadline, u64 *insns)
{
	struct vtpu_exec *exec = core->exec;
	bool first = true;
	int done = 0;

	vtpu_prog_clear_vmem(&job->info, core->vmem);

	*insns = 0;
	while (!done) {
		u64 now = ktime_get_ns();
		u64 t;

		if (atomic_read(abort) || now > deadline)
			return -ETIMEDOUT;

		kernel_fpu_begin();
		/*
		 * vtpu_exec.c is FPU code throughout (the compiler clears the
		 * state with vector stores): it starts in the first section.
		 */
		if (first) {
			vtpu_exec_init(exec, &job->info, job->ebind, core->vmem);
			exec->trace = vtpu_core_trace;
			exec->trace_arg = job;
			first = false;
		}
		done = vtpu_exec_step(exec, VTPU_SLICE_INSNS);
		kernel_fpu_end();
		t = ktime_get_ns();
		/* Instructions completed: one cut off by a timeout is not. */
		*insns = exec->insns;

		/* Only this core's worker writes them. */
		if (t - now > atomic64_read(&core->section_max_ns))
			atomic64_set(&core->section_max_ns, t - now);
		if (exec->work > atomic64_read(&core->section_max_work))
			atomic64_set(&core->section_max_work, exec->work);
		atomic64_inc(&core->sections);
		cond_resched();
	}
	/* 1 at END, or the program's fault (-ERANGE: a gather index). */
	return done < 0 ? done : 0;
}

/*
 * Runs one job's program; @abort is its scheduler job's (the backstop
 * timeout's). A chained job's own fence signals here.
 */
static int vtpu_core_run(struct vtpu_core *core, struct vtpu_job *job,
			 atomic_t *abort)
{
	struct drm_vtpu_profile *p = job->profile;
	u64 start, end, insns = 0;
	int ret;

	if (p) {
		memset(p, 0, sizeof(*p));
		p->queued = job->queued;
		p->core = core->index;
		p->flops = job->info.flops;
		p->dma_bytes = job->info.dma_bytes;
	}

	/* Running time counts at once: busy figures grow while jobs run. */
	write_seqlock(&core->run_seq);
	write_seqlock(&job->stats->run_seq);
	start = ktime_get_ns();
	core->run_start = start;
	job->stats->running++;
	job->stats->start_sum += start;
	write_sequnlock(&job->stats->run_seq);
	write_sequnlock(&core->run_seq);
	trace_vtpu_job_run(core->vdev->index, core->index, job->client,
			   job->id, start - job->queued);
	/* Killed with its entity's queue, as it would have been a moment ago. */
	if (atomic_read(&job->stats->closed))
		ret = -ESRCH;
	else
		ret = vtpu_core_exec(core, job, abort,
				     start + (u64)vtpu_params.job_timeout_ms *
				     NSEC_PER_MSEC, &insns);
	/*
	 * The end time is read under both seqlocks, so no reader that saw
	 * the job running computed a later "now" than @end: the figures
	 * never go back.
	 */
	write_seqlock(&core->run_seq);
	write_seqlock(&job->stats->run_seq);
	end = ktime_get_ns();
	atomic64_add(end - start, &core->busy_ns);
	core->run_start = 0;
	atomic64_add(end - start, &job->stats->engine_ns);
	job->stats->running--;
	job->stats->start_sum -= start;
	write_sequnlock(&job->stats->run_seq);
	write_sequnlock(&core->run_seq);

	atomic64_inc(&core->jobs);
	if (ret == -ETIMEDOUT) {
		atomic64_inc(&core->timeouts);
		trace_vtpu_job_timeout(core->vdev->index, core->index,
				       job->client, job->id, insns);
	}
	trace_vtpu_job_done(core->vdev->index, core->index, job->client,
			    job->id, ret, end - start, insns);

	if (p) {
		p->start = start;
		p->end = end;
		p->insns = insns;
		p->status = ret;
		p->trace_count = job->trace_count;
	}
	if (job->done)
		vtpu_job_signal_done(job, ret, end - start);
	return ret;
}

/* Runs a scheduler job: its own program, then those chained behind it. */
static void vtpu_core_run_job(struct vtpu_core *core, struct vtpu_job *job)
{
	struct vtpu_job *f;
	bool cookie;
	int ret;

	cookie = dma_fence_begin_signalling();
	ret = vtpu_core_run(core, job, &job->abort);
	/* Freed with @job, which its hardware fence may free: signal last. */
	list_for_each_entry(f, &job->chain, chain_node) {
		atomic64_inc(&core->chained);
		vtpu_core_run(core, f, &job->abort);
	}
	if (ret)
		dma_fence_set_error(job->hw_fence, ret);
	dma_fence_signal(job->hw_fence);
	dma_fence_end_signalling(cookie);
}

static void vtpu_core_work(struct work_struct *work)
{
	struct vtpu_core *core = container_of(work, struct vtpu_core, work);
	struct vtpu_job *job;

	for (;;) {
		spin_lock(&core->lock);
		job = list_first_entry_or_null(&core->queue, struct vtpu_job,
					       node);
		if (job)
			list_del_init(&job->node);
		spin_unlock(&core->lock);
		if (!job)
			break;
		vtpu_core_run_job(core, job);
	}
}

/**
 * vtpu_core_queue_job() - hand a job to a core (from run_job)
 * @core: the core whose scheduler runs the job
 * @job: the job; its hardware fence was allocated at submit
 *
 * Return: a reference to the job's hardware fence, for the scheduler.
 */
struct dma_fence *vtpu_core_queue_job(struct vtpu_core *core,
				      struct vtpu_job *job)
{
	spin_lock(&core->lock);
	dma_fence_init(job->hw_fence, &vtpu_fence_ops, &core->fence_lock,
		       core->fence_context, ++core->seqno);
	job->hw_fence_init = true;
	list_add_tail(&job->node, &core->queue);
	spin_unlock(&core->lock);

	queue_work(core->vdev->core_wq, &core->work);
	return dma_fence_get(job->hw_fence);
}

static void vtpu_cores_fini(struct drm_device *drm, void *unused)
{
	struct vtpu_device *vdev = to_vtpu_device(drm);
	unsigned int i;

	for (i = 0; i < vdev->num_cores; i++) {
		drm_sched_fini(&vdev->cores[i].sched);
		cancel_work_sync(&vdev->cores[i].work);
		kvfree(vdev->cores[i].vmem);
	}
	destroy_workqueue(vdev->core_wq);
}

static int vtpu_core_init(struct vtpu_device *vdev, struct vtpu_core *core,
			  unsigned int index)
{
	struct drm_sched_init_args args = {
		.ops = &vtpu_sched_ops,
		.num_rqs = DRM_SCHED_PRIORITY_COUNT,
		.credit_limit = VTPU_CORE_DEPTH,
		/*
		 * The core's own watchdog aborts a job at the timeout; the
		 * scheduler's handler is the backstop, should the core not
		 * have stopped by twice that.
		 */
		.timeout = msecs_to_jiffies(2 * vtpu_params.job_timeout_ms),
		.name = core->name,
		.dev = vdev->drm.dev,
	};
	int ret;

	core->vdev = vdev;
	core->index = index;
	snprintf(core->name, sizeof(core->name), "vtpu%u-core%u",
		 vdev->index, index);
	spin_lock_init(&core->lock);
	spin_lock_init(&core->fence_lock);
	seqlock_init(&core->run_seq);
	INIT_LIST_HEAD(&core->queue);
	INIT_WORK(&core->work, vtpu_core_work);
	core->fence_context = dma_fence_context_alloc(1);

	core->exec = drmm_kzalloc(&vdev->drm, sizeof(*core->exec), GFP_KERNEL);
	if (!core->exec)
		return -ENOMEM;
	core->vmem = kvzalloc(vdev->vmem_size, GFP_KERNEL);
	if (!core->vmem)
		return -ENOMEM;

	ret = drm_sched_init(&core->sched, &args);
	if (ret) {
		kvfree(core->vmem);
		return ret;
	}
	vdev->scheds[index] = &core->sched;
	return 0;
}

/**
 * vtpu_cores_init() - create the device's cores and their schedulers
 * @vdev: device
 *
 * Torn down by a DRM-managed action, once no job can be left: every job
 * holds references on its buffers, and they on the device.
 *
 * Return: 0 or -errno.
 */
int vtpu_cores_init(struct vtpu_device *vdev)
{
	unsigned int i;
	int ret;

	vdev->cores = drmm_kcalloc(&vdev->drm, vdev->num_cores,
				   sizeof(*vdev->cores), GFP_KERNEL);
	vdev->scheds = drmm_kcalloc(&vdev->drm, vdev->num_cores,
				    sizeof(*vdev->scheds), GFP_KERNEL);
	if (!vdev->cores || !vdev->scheds)
		return -ENOMEM;

	/* Part of the fence signalling path: it must make progress. */
	vdev->core_wq = alloc_workqueue("vtpu%u-cores",
					WQ_UNBOUND | WQ_MEM_RECLAIM,
					vdev->num_cores, vdev->index);
	if (!vdev->core_wq)
		return -ENOMEM;

	for (i = 0; i < vdev->num_cores; i++) {
		ret = vtpu_core_init(vdev, &vdev->cores[i], i);
		if (ret)
			goto err_fini;
	}
	return drmm_add_action_or_reset(&vdev->drm, vtpu_cores_fini, NULL);

err_fini:
	while (i--) {
		drm_sched_fini(&vdev->cores[i].sched);
		kvfree(vdev->cores[i].vmem);
	}
	destroy_workqueue(vdev->core_wq);
	return ret;
}

/**
 * vtpu_core_busy_ns() - time @core has spent executing jobs
 * @core: the core
 *
 * Finished jobs and, up to now, the one running.
 *
 * Return: nanoseconds; never less than an earlier call returned.
 */
u64 vtpu_core_busy_ns(struct vtpu_core *core)
{
	u64 busy, start, now;
	unsigned int seq;

	do {
		seq = read_seqbegin(&core->run_seq);
		busy = atomic64_read(&core->busy_ns);
		start = core->run_start;
		now = ktime_get_ns();
	} while (read_seqretry(&core->run_seq, seq));
	return busy + (start ? now - start : 0);
}

/**
 * vtpu_device_busy_ns() - the sum of vtpu_core_busy_ns() over the cores
 * @vdev: the device
 *
 * Return: nanoseconds, up to num_cores * wall time.
 */
u64 vtpu_device_busy_ns(struct vtpu_device *vdev)
{
	unsigned int i;
	u64 sum = 0;

	for (i = 0; i < vdev->num_cores; i++)
		sum += vtpu_core_busy_ns(&vdev->cores[i]);
	return sum;
}

static int vtpu_cores_show(struct seq_file *m, void *unused)
{
	struct vtpu_device *vdev = m->private;
	unsigned int i;

	seq_printf(m, "jobs alive: %d\n", atomic_read(&vdev->jobs_alive));
	for (i = 0; i < vdev->num_cores; i++) {
		struct vtpu_core *core = &vdev->cores[i];

		seq_printf(m, "core %u: jobs %lld timeouts %lld busy_ns %llu section_max_ns %lld chained %lld sections %lld section_max_work %lld\n",
			   i, atomic64_read(&core->jobs),
			   atomic64_read(&core->timeouts),
			   vtpu_core_busy_ns(core),
			   atomic64_read(&core->section_max_ns),
			   atomic64_read(&core->chained),
			   atomic64_read(&core->sections),
			   atomic64_read(&core->section_max_work));
	}
	return 0;
}

static int vtpu_cores_open(struct inode *inode, struct file *file)
{
	return single_open(file, vtpu_cores_show, inode->i_private);
}

/* Any write resets the section statistics, so a test can measure one job. */
static ssize_t vtpu_cores_write(struct file *file, const char __user *buf,
				size_t len, loff_t *pos)
{
	struct vtpu_device *vdev = file_inode(file)->i_private;
	unsigned int i;

	for (i = 0; i < vdev->num_cores; i++) {
		atomic64_set(&vdev->cores[i].section_max_ns, 0);
		atomic64_set(&vdev->cores[i].sections, 0);
		atomic64_set(&vdev->cores[i].section_max_work, 0);
	}
	return len;
}

static const struct file_operations vtpu_cores_fops = {
	.owner = THIS_MODULE,
	.open = vtpu_cores_open,
	.read = seq_read,
	.write = vtpu_cores_write,
	.llseek = seq_lseek,
	.release = single_release,
};

/**
 * vtpu_cores_debugfs_init() - debugfs "cores": per-core counters
 * @vdev: a registered device
 */
void vtpu_cores_debugfs_init(struct vtpu_device *vdev)
{
	debugfs_create_file("cores", 0644, vdev->drm.debugfs_root, vdev,
			    &vtpu_cores_fops);
}
