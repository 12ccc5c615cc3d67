/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

#ifndef __VTPU_GEM_H__
#define __VTPU_GEM_H__

#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>
#include <linux/mutex.h>

struct drm_printer;
struct vtpu_device;

/**
 * struct vtpu_bo - a buffer object in HBM or in the shmem backing store
 * @base: shmem object; for HBM buffers only @base.base (the GEM object)
 *	is initialised, the shmem part stays unused
 * @vdev: owning device
 * @placement: DRM_VTPU_PLACEMENT_HBM or DRM_VTPU_PLACEMENT_HOST
 * @node: the buffer's range of HBM (HBM placement only)
 * @link: entry in &vtpu_device.bos
 * @kvaddr: kernel mapping of a backing-store buffer, once a job used it
 * @kmap_lock: serialises creating @kvaddr
 */
struct vtpu_bo {
	struct drm_gem_shmem_object base;
	struct vtpu_device *vdev;
	u32 placement;
	struct drm_mm_node node;
	struct list_head link;
	void *kvaddr;
	struct mutex kmap_lock; /* Protects creating kvaddr */
};

static inline struct vtpu_bo *to_vtpu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct vtpu_bo, base.base);
}

void *vtpu_bo_kvaddr(struct vtpu_bo *bo, bool nowait);

struct drm_gem_object *vtpu_gem_create_object(struct drm_device *drm,
					      size_t size);
void vtpu_gem_show_fdinfo(struct drm_printer *p, struct drm_file *file);
void vtpu_gem_debugfs_init(struct vtpu_device *vdev);

int vtpu_ioctl_bo_create(struct drm_device *drm, void *data,
			 struct drm_file *file);
int vtpu_ioctl_bo_info(struct drm_device *drm, void *data,
		       struct drm_file *file);

#endif /* __VTPU_GEM_H__ */
