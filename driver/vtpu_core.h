/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

#ifndef __VTPU_CORE_H__
#define __VTPU_CORE_H__

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include <drm/gpu_scheduler.h>

struct vtpu_device;
struct vtpu_exec;
struct vtpu_job;

/**
 * struct vtpu_core - one emulated TPU core
 * @vdev: owning device
 * @index: core number within the device
 * @name: scheduler name, "vtpuD-coreC"
 * @sched: the core's scheduler; it hands the core one job at a time
 * @vmem: the core's vector memory, cleared before every job
 * @exec: the executor's state for the job running (too big for a stack)
 * @fence_context: dma-fence context of the core's hardware fences
 * @seqno: last hardware fence sequence number
 * @lock: protects @queue and @seqno
 * @fence_lock: the hardware fences' lock
 * @queue: jobs handed over by run_job, not yet executing
 * @work: executes @queue; runs on the device's workqueue
 * @jobs: jobs completed (any status)
 * @timeouts: jobs aborted at the job timeout
 * @chained: jobs that ran chained behind another (vtpu_job_chain())
 * @busy_ns: time spent executing finished jobs
 * @run_seq: makes @busy_ns and @run_start one snapshot for readers
 * @run_start: when the job executing now started; 0 when idle
 * @section_max_ns: longest non-preemptible (FPU) section so far
 * @sections: FPU sections run so far
 * @section_max_work: most executor work (VTPU_EXEC_BUDGET's units) done
 *	in one section so far; unlike @section_max_ns, no host or hypervisor
 *	preemption inflates it
 *
 * debugfs "cores" shows the last three, and any write to it resets them.
 */
struct vtpu_core {
	struct vtpu_device *vdev;
	unsigned int index;
	char name[32];
	struct drm_gpu_scheduler sched;
	u8 *vmem;
	struct vtpu_exec *exec;
	u64 fence_context;
	u64 seqno;
	spinlock_t lock; /* Protects queue and seqno */
	spinlock_t fence_lock;
	struct list_head queue;
	struct work_struct work;
	atomic64_t jobs;
	atomic64_t timeouts;
	atomic64_t chained;
	atomic64_t busy_ns;
	seqlock_t run_seq;
	u64 run_start;
	atomic64_t section_max_ns;
	atomic64_t sections;
	atomic64_t section_max_work;
};

int vtpu_cores_init(struct vtpu_device *vdev);
struct dma_fence *vtpu_core_queue_job(struct vtpu_core *core,
				      struct vtpu_job *job);
void vtpu_cores_debugfs_init(struct vtpu_device *vdev);
u64 vtpu_core_busy_ns(struct vtpu_core *core);
u64 vtpu_device_busy_ns(struct vtpu_device *vdev);

#endif /* __VTPU_CORE_H__ */
