// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

#include <linux/device.h>
#include <linux/mm.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>

#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <drm/vtpu_accel.h>

#include "vtpu_core.h"
#include "vtpu_device.h"
#include "vtpu_exec.h"

static void vtpu_device_hbm_fini(struct drm_device *drm, void *unused)
{
	struct vtpu_device *vdev = to_vtpu_device(drm);

	/* Every buffer holds a device reference: none can be left here. */
	drm_mm_takedown(&vdev->hbm_mm);
	vfree(vdev->hbm);
}

/*
 * The device's HBM is reserved up front and exists as long as the device
 * does: an emulated device whose memory could vanish under load would
 * teach userspace nothing about a real one. vmalloc_user() hands out
 * zeroed pages that remap_vmalloc_range() can later map to userspace.
 */
static int vtpu_device_hbm_init(struct vtpu_device *vdev)
{
	u64 ram = (u64)totalram_pages() << PAGE_SHIFT;

	vdev->hbm_size = (u64)vtpu_params.hbm_mib * SZ_1M;
	/*
	 * Refuse what the machine cannot hold before vmalloc tries (and
	 * warns with a stack trace): the administrator asked for too much.
	 */
	if (vdev->hbm_size * vtpu_params.num_devices > ram / 2) {
		drm_err(&vdev->drm, "num_devices=%u x hbm_mib=%u is more than half of the RAM (%llu MiB)\n",
			vtpu_params.num_devices, vtpu_params.hbm_mib, ram >> 20);
		return -ENOMEM;
	}
	vdev->hbm = vmalloc_user(vdev->hbm_size);
	if (!vdev->hbm)
		return -ENOMEM;

	drm_mm_init(&vdev->hbm_mm, 0, vdev->hbm_size);
	return drmm_add_action_or_reset(&vdev->drm, vtpu_device_hbm_fini, NULL);
}

/**
 * vtpu_device_init() - set up a device's memory and accounting
 * @vdev: device, allocated with devm_drm_dev_alloc()
 *
 * Everything set up here is torn down by DRM-managed actions when the
 * last reference to the DRM device goes away, so there is no _fini.
 *
 * Return: 0 or -errno.
 */
int vtpu_device_init(struct vtpu_device *vdev)
{
	u64 host_limit;
	int ret;

	vdev->num_cores = vtpu_params.num_cores;
	vdev->vmem_size = (u64)vtpu_params.vmem_kib * SZ_1K;
	INIT_LIST_HEAD(&vdev->bos);
	atomic64_set(&vdev->host_bytes, 0);
	atomic_set(&vdev->jobs_alive, 0);

	ret = drmm_mutex_init(&vdev->drm, &vdev->hbm_lock);
	if (ret)
		return ret;
	ret = drmm_mutex_init(&vdev->drm, &vdev->bos_lock);
	if (ret)
		return ret;
	ret = drmm_mutex_init(&vdev->drm, &vdev->sched_lock);
	if (ret)
		return ret;

	ret = vtpu_device_hbm_init(vdev);
	if (ret)
		return ret;

	ret = vtpu_cores_init(vdev);
	if (ret)
		return ret;

	/*
	 * A backing-store buffer may be as large as half of RAM: shmem pages
	 * are only allocated when touched, so the limit is about not
	 * promising what the machine cannot hold, and HBM must always fit.
	 */
	host_limit = ((u64)totalram_pages() << PAGE_SHIFT) / 2;
	vdev->max_bo_size = PAGE_ALIGN_DOWN(max(host_limit, vdev->hbm_size));
	return 0;
}

/**
 * vtpu_device_hbm_stats() - snapshot of the device's HBM accounting
 * @vdev: device
 * @stats: filled in
 */
void vtpu_device_hbm_stats(struct vtpu_device *vdev,
			   struct vtpu_hbm_stats *stats)
{
	struct drm_mm_node *hole;
	u64 start, end;

	memset(stats, 0, sizeof(*stats));
	stats->total = vdev->hbm_size;

	mutex_lock(&vdev->hbm_lock);
	stats->used = vdev->hbm_used;
	drm_mm_for_each_hole(hole, &vdev->hbm_mm, start, end) {
		stats->largest_free = max(stats->largest_free, end - start);
		stats->free_blocks++;
	}
	mutex_unlock(&vdev->hbm_lock);
}

int vtpu_ioctl_query(struct drm_device *drm, void *data,
		     struct drm_file *file)
{
	struct vtpu_device *vdev = to_vtpu_device(drm);
	struct drm_vtpu_query *args = data;
	struct vtpu_hbm_stats hbm;

	if (args->flags || args->pad) {
		drm_dbg(drm, "query: nonzero flags 0x%x or pad 0x%x\n",
			args->flags, args->pad);
		return -EINVAL;
	}

	vtpu_device_hbm_stats(vdev, &hbm);

	args->device_index = vdev->index;
	args->device_count = vtpu_params.num_devices;
	args->core_count = vdev->num_cores;
	args->isa_version = VTPU_ISA_VERSION;
	args->vmem_size = vdev->vmem_size;
	args->hbm_total = hbm.total;
	args->hbm_free = hbm.total - hbm.used;
	args->hbm_largest_free = hbm.largest_free;
	args->host_bytes = atomic64_read(&vdev->host_bytes);
	args->max_bo_size = vdev->max_bo_size;
	args->timestamp_unit_ns = 1;
	args->pad2 = 0;
	args->features = DRM_VTPU_FEATURE_HBM | DRM_VTPU_FEATURE_HOST |
			 DRM_VTPU_FEATURE_PROGRAM |
			 DRM_VTPU_FEATURE_SUBMIT | DRM_VTPU_FEATURE_SYNCOBJ;
	return 0;
}

/*
 * sysfs attributes on the facade platform device, reachable as
 * /sys/class/accel/accelN/device/<name>. Each holds one decimal number.
 */
static struct vtpu_device *vtpu_device_from_dev(struct device *dev)
{
	return dev_get_drvdata(dev);
}

static ssize_t hbm_total_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", vtpu_device_from_dev(dev)->hbm_size);
}
static DEVICE_ATTR_RO(hbm_total);

static ssize_t hbm_used_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	struct vtpu_hbm_stats hbm;

	vtpu_device_hbm_stats(vtpu_device_from_dev(dev), &hbm);
	return sysfs_emit(buf, "%llu\n", hbm.used);
}
static DEVICE_ATTR_RO(hbm_used);

static ssize_t hbm_largest_free_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	struct vtpu_hbm_stats hbm;

	vtpu_device_hbm_stats(vtpu_device_from_dev(dev), &hbm);
	return sysfs_emit(buf, "%llu\n", hbm.largest_free);
}
static DEVICE_ATTR_RO(hbm_largest_free);

static ssize_t hbm_free_blocks_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	struct vtpu_hbm_stats hbm;

	vtpu_device_hbm_stats(vtpu_device_from_dev(dev), &hbm);
	return sysfs_emit(buf, "%llu\n", hbm.free_blocks);
}
static DEVICE_ATTR_RO(hbm_free_blocks);

static ssize_t host_bytes_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct vtpu_device *vdev = vtpu_device_from_dev(dev);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&vdev->host_bytes));
}
static DEVICE_ATTR_RO(host_bytes);

static ssize_t cores_show(struct device *dev,
			  struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", vtpu_device_from_dev(dev)->num_cores);
}
static DEVICE_ATTR_RO(cores);

static ssize_t vmem_size_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", vtpu_device_from_dev(dev)->vmem_size);
}
static DEVICE_ATTR_RO(vmem_size);

/* Which build of the executor the cores run (all give the same bits). */
static ssize_t exec_isa_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", vtpu_exec_isa_name(vtpu_exec_isa_best()));
}
static DEVICE_ATTR_RO(exec_isa);

/*
 * Time the cores have executed jobs, summed over them, the running ones
 * up to now: busy % without debugfs (two reads, a second apart).
 */
static ssize_t busy_ns_show(struct device *dev,
			    struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  vtpu_device_busy_ns(vtpu_device_from_dev(dev)));
}
static DEVICE_ATTR_RO(busy_ns);

static struct attribute *vtpu_device_attrs[] = {
	&dev_attr_hbm_total.attr,
	&dev_attr_hbm_used.attr,
	&dev_attr_hbm_largest_free.attr,
	&dev_attr_hbm_free_blocks.attr,
	&dev_attr_host_bytes.attr,
	&dev_attr_cores.attr,
	&dev_attr_vmem_size.attr,
	&dev_attr_exec_isa.attr,
	&dev_attr_busy_ns.attr,
	NULL
};

const struct attribute_group vtpu_device_attr_group = {
	.attrs = vtpu_device_attrs,
};
