/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

#ifndef __VTPU_DEVICE_H__
#define __VTPU_DEVICE_H__

#include "vtpu_drv.h"

struct drm_file;

/**
 * struct vtpu_hbm_stats - a consistent snapshot of HBM accounting
 * @total: bytes of HBM
 * @used: bytes allocated to buffers
 * @largest_free: largest contiguous free range in bytes
 * @free_blocks: number of free ranges (external fragmentation)
 */
struct vtpu_hbm_stats {
	u64 total;
	u64 used;
	u64 largest_free;
	u64 free_blocks;
};

int vtpu_device_init(struct vtpu_device *vdev);
void vtpu_device_hbm_stats(struct vtpu_device *vdev,
			   struct vtpu_hbm_stats *stats);

int vtpu_ioctl_query(struct drm_device *drm, void *data,
		     struct drm_file *file);

extern const struct attribute_group vtpu_device_attr_group;

#endif /* __VTPU_DEVICE_H__ */
