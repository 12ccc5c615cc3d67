/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

#ifndef __VTPU_GEM_H__
#define __VTPU_GEM_H__

#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>

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
 */
/**
 * struct vtpu_bo_pages - a range of a backing-store buffer, pinned and
 *	mapped into the kernel
 * @offset: first byte of the range
 * @size: bytes of the range
 * @vaddr: kernel address of the page holding @offset
 * @pages: the range's pages, one reference each
 * @npages: entries in @pages
 */
struct vtpu_bo_pages {
	u64 offset;
	u64 size;
	void *vaddr;
	struct page **pages;
	unsigned long npages;
};

struct vtpu_bo {
	struct drm_gem_shmem_object base;
	struct vtpu_device *vdev;
	u32 placement;
	struct drm_mm_node node;
	struct list_head link;
	/*
	 * Backing store: the range the last jobs bound stays mapped for
	 * the next ones (weights and pooled scratch are bound at every
	 * execution); @kmap_users of them hold it now.
	 */
	struct mutex kmap_lock;	/* Protects kmap and kmap_users */
	struct vtpu_bo_pages kmap;
	unsigned int kmap_users;
};

/**
 * struct vtpu_bo_map - a range of a buffer a job uses, pinned and mapped
 * @vaddr: kernel address of the range's first byte
 * @bo: the buffer, when the range is its cached mapping (&vtpu_bo.kmap)
 * @own: a mapping of the job's own, when the cached one serves another
 *	range; empty for HBM, which is mapped for good
 */
struct vtpu_bo_map {
	void *vaddr;
	struct vtpu_bo *bo;
	struct vtpu_bo_pages own;
};

static inline struct vtpu_bo *to_vtpu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct vtpu_bo, base.base);
}

int vtpu_bo_map_range(struct vtpu_bo *bo, u64 offset, u64 size, bool nowait,
		      struct vtpu_bo_map *map);
void vtpu_bo_unmap_range(struct vtpu_bo_map *map);
int vtpu_bo_read(struct vtpu_bo *bo, u64 offset, void *dst, size_t size,
		 bool nowait);

struct drm_gem_object *vtpu_gem_create_object(struct drm_device *drm,
					      size_t size);
void vtpu_gem_show_fdinfo(struct drm_printer *p, struct drm_file *file);
void vtpu_gem_debugfs_init(struct vtpu_device *vdev);

int vtpu_ioctl_bo_create(struct drm_device *drm, void *data,
			 struct drm_file *file);
int vtpu_ioctl_bo_info(struct drm_device *drm, void *data,
		       struct drm_file *file);

#endif /* __VTPU_GEM_H__ */
