/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

#ifndef __VTPU_DRV_H__
#define __VTPU_DRV_H__

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>

#include <drm/drm_device.h>
#include <drm/drm_mm.h>

#define VTPU_DRIVER_NAME	"vtpu"
#define VTPU_DRIVER_DESC	"Emulated TPU cores"

/* Module parameters, fixed once the module is loaded. */
struct drm_gpu_scheduler;
struct vtpu_core;
struct workqueue_struct;

struct vtpu_params {
	unsigned int num_devices;
	unsigned int num_cores;
	unsigned int hbm_mib;
	unsigned int vmem_kib;
	unsigned int job_timeout_ms;
};

extern struct vtpu_params vtpu_params;

/**
 * struct vtpu_device - one emulated TPU device
 * @drm: the DRM accel device
 * @pdev: facade platform device the DRM device hangs off
 * @index: position among the module's devices
 * @num_cores: emulated cores on this device
 * @vmem_size: bytes of vector memory per core
 * @hbm: kernel mapping of the device memory, reserved when the device is
 *	created (vmalloc_user, so ranges of it can be mapped to userspace)
 * @hbm_size: bytes of @hbm
 * @hbm_mm: allocator of @hbm ranges; one contiguous range per buffer
 * @hbm_used: bytes of @hbm allocated to buffers
 * @hbm_lock: protects @hbm_mm and @hbm_used
 * @host_bytes: bytes of shmem backing-store buffers alive
 * @max_bo_size: largest buffer BO_CREATE accepts
 * @bos: every live buffer of this device, for debugfs
 * @bos_lock: protects @bos
 * @cores: the emulated cores
 * @scheds: their schedulers, the list every file's entity spans
 * @core_wq: workqueue the cores execute on
 * @jobs_alive: jobs submitted and not yet freed; unload waits for zero
 */
struct vtpu_device {
	struct drm_device drm;
	struct platform_device *pdev;
	unsigned int index;
	unsigned int num_cores;
	u64 vmem_size;

	void *hbm;
	u64 hbm_size;
	struct drm_mm hbm_mm;
	u64 hbm_used;
	struct mutex hbm_lock; /* Protects hbm_mm and hbm_used */

	atomic64_t host_bytes;
	u64 max_bo_size;

	struct list_head bos;
	struct mutex bos_lock; /* Protects bos */

	struct vtpu_core *cores;
	struct drm_gpu_scheduler **scheds;
	struct mutex sched_lock; /* Serialises stopping the schedulers */
	struct workqueue_struct *core_wq;
	atomic_t jobs_alive;
};

static inline struct vtpu_device *to_vtpu_device(struct drm_device *drm)
{
	return container_of(drm, struct vtpu_device, drm);
}

#endif /* __VTPU_DRV_H__ */
