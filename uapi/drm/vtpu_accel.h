/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * vtpu: emulated TPU cores as a DRM compute-accel device.
 *
 * This header is the contract between vtpu.ko and userspace. It follows
 * Documentation/process/botching-up-ioctls.rst: fixed-width types only,
 * explicit padding that must be zero, user pointers as __u64, flags that
 * must be known, ioctl numbers that are only ever appended. A struct may
 * grow at its end; the DRM core zero-extends what an older userspace
 * passes and truncates what an older userspace reads back.
 *
 * Errors common to every ioctl below:
 *  -EINVAL  unknown flag, nonzero padding or reserved field, unknown enum
 *  -ENOENT  unknown GEM handle (handles are private to one open file)
 *  -EFAULT  bad user pointer
 */
#ifndef _UAPI_VTPU_ACCEL_H_
#define _UAPI_VTPU_ACCEL_H_

#include <linux/const.h>

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

/* uAPI version reported by DRM_IOCTL_VERSION (major.minor). */
#define DRM_VTPU_UAPI_MAJOR		1
#define DRM_VTPU_UAPI_MINOR		0

#define DRM_VTPU_QUERY			0x00
#define DRM_VTPU_BO_CREATE		0x01
#define DRM_VTPU_BO_INFO		0x02

#define DRM_IOCTL_VTPU_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VTPU_QUERY, struct drm_vtpu_query)
#define DRM_IOCTL_VTPU_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VTPU_BO_CREATE, struct drm_vtpu_bo_create)
#define DRM_IOCTL_VTPU_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VTPU_BO_INFO, struct drm_vtpu_bo_info)

/**
 * enum drm_vtpu_placement - where the memory of a buffer object lives
 * @DRM_VTPU_PLACEMENT_AUTO: device memory (HBM) when a contiguous range
 *	is free, otherwise the shmem backing store. Only valid as a request.
 * @DRM_VTPU_PLACEMENT_HBM: device memory only; fails with -ENOSPC when
 *	HBM cannot hold the buffer.
 * @DRM_VTPU_PLACEMENT_HOST: shmem backing store (system memory).
 */
enum drm_vtpu_placement {
	DRM_VTPU_PLACEMENT_AUTO = 0,
	DRM_VTPU_PLACEMENT_HBM = 1,
	DRM_VTPU_PLACEMENT_HOST = 2,
};

/* Feature bits reported in &drm_vtpu_query.features. */
#define DRM_VTPU_FEATURE_HBM		_BITULL(0)	/* HBM placement */
#define DRM_VTPU_FEATURE_HOST		_BITULL(1)	/* shmem placement */

/* &drm_vtpu_bo_create.device_addr of a buffer without one (HOST). */
#define DRM_VTPU_NO_DEVICE_ADDR		(~0ULL)

/**
 * struct drm_vtpu_query - describe the device behind this file
 *
 * Every field but @flags is Output. Memory figures are a snapshot: other
 * files may allocate or free at any time.
 */
struct drm_vtpu_query {
	/** @flags: Input. Must be zero. */
	__u32 flags;
	/** @pad: Input. Must be zero. */
	__u32 pad;

	/** @device_index: Output. Index of this device, 0..@device_count-1. */
	__u32 device_index;
	/** @device_count: Output. Number of vtpu devices in the system. */
	__u32 device_count;
	/** @core_count: Output. Emulated TPU cores on this device. */
	__u32 core_count;
	/** @isa_version: Output. Version of the instruction set executed. */
	__u32 isa_version;
	/** @vmem_size: Output. Bytes of vector memory (VMEM) per core. */
	__u64 vmem_size;

	/** @hbm_total: Output. Bytes of device memory (HBM). */
	__u64 hbm_total;
	/** @hbm_free: Output. Bytes of HBM not allocated to any buffer. */
	__u64 hbm_free;
	/**
	 * @hbm_largest_free: Output. Largest contiguous free HBM range in
	 * bytes: the largest HBM buffer that can be created right now.
	 */
	__u64 hbm_largest_free;
	/** @host_bytes: Output. Bytes of backing-store (HOST) buffers. */
	__u64 host_bytes;
	/**
	 * @max_bo_size: Output. Largest size DRM_IOCTL_VTPU_BO_CREATE
	 * accepts, for any placement.
	 */
	__u64 max_bo_size;

	/** @timestamp_unit_ns: Output. Nanoseconds per device timestamp tick. */
	__u32 timestamp_unit_ns;
	/** @pad2: Output. Zero. */
	__u32 pad2;
	/** @features: Output. DRM_VTPU_FEATURE_* bits. */
	__u64 features;
};

/**
 * struct drm_vtpu_bo_create - create a buffer object
 *
 * The buffer's memory reads as zeros, whichever placement it gets. Sizes
 * are rounded up to the page size. Destroy it with DRM_IOCTL_GEM_CLOSE.
 *
 * Errors: -EINVAL @size is 0, unknown @placement, nonzero @flags or @pad;
 * -E2BIG @size exceeds &drm_vtpu_query.max_bo_size; -ENOSPC placement HBM
 * and no contiguous HBM range of @size is free; -ENOMEM out of memory.
 */
struct drm_vtpu_bo_create {
	/** @size: Input. Size in bytes, 1..max_bo_size. */
	__u64 size;
	/** @placement: Input. One of &enum drm_vtpu_placement. */
	__u32 placement;
	/** @flags: Input. Must be zero. */
	__u32 flags;
	/** @handle: Output. GEM handle, valid in this file only. */
	__u32 handle;
	/** @placed: Output. HBM or HOST: where the buffer really lives. */
	__u32 placed;
	/**
	 * @device_addr: Output. For HBM, the byte offset of the buffer in
	 * the device's HBM; DRM_VTPU_NO_DEVICE_ADDR for HOST.
	 */
	__u64 device_addr;
};

/**
 * struct drm_vtpu_bo_info - describe a buffer object
 *
 * Errors: -EINVAL nonzero @flags; -ENOENT unknown @handle.
 */
struct drm_vtpu_bo_info {
	/** @handle: Input. GEM handle in this file. */
	__u32 handle;
	/** @flags: Input. Must be zero. */
	__u32 flags;
	/** @size: Output. Size in bytes (a multiple of the page size). */
	__u64 size;
	/** @mmap_offset: Output. Offset to pass to mmap() on this file. */
	__u64 mmap_offset;
	/** @device_addr: Output. As in &drm_vtpu_bo_create.device_addr. */
	__u64 device_addr;
	/** @placed: Output. HBM or HOST. */
	__u32 placed;
	/** @pad: Output. Zero. */
	__u32 pad;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_VTPU_ACCEL_H_ */
