// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

#include <linux/debugfs.h>
#include <linux/highmem.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/scatterlist.h>
#include <linux/seq_file.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_print.h>
#include <drm/vtpu_accel.h>

#include "vtpu_drv.h"
#include "vtpu_gem.h"

static void vtpu_bo_track(struct vtpu_bo *bo)
{
	struct vtpu_device *vdev = bo->vdev;

	mutex_lock(&vdev->bos_lock);
	list_add_tail(&bo->link, &vdev->bos);
	mutex_unlock(&vdev->bos_lock);
}

static void vtpu_bo_untrack(struct vtpu_bo *bo)
{
	struct vtpu_device *vdev = bo->vdev;

	mutex_lock(&vdev->bos_lock);
	list_del(&bo->link);
	mutex_unlock(&vdev->bos_lock);
}

/* HBM buffers: a contiguous range of the device's reserved memory. */

/* Kernel address of an HBM buffer's first byte: HBM is mapped for good. */
static void *vtpu_hbm_vaddr(const struct vtpu_bo *bo)
{
	return bo->vdev->hbm + bo->node.start;
}

static void vtpu_hbm_bo_free(struct drm_gem_object *obj)
{
	struct vtpu_bo *bo = to_vtpu_bo(obj);
	struct vtpu_device *vdev = bo->vdev;

	vtpu_bo_untrack(bo);

	mutex_lock(&vdev->hbm_lock);
	drm_mm_remove_node(&bo->node);
	vdev->hbm_used -= obj->size;
	mutex_unlock(&vdev->hbm_lock);

	drm_gem_object_release(obj);
	kfree(bo);
}

static int vtpu_hbm_bo_mmap(struct drm_gem_object *obj,
			    struct vm_area_struct *vma)
{
	struct vtpu_bo *bo = to_vtpu_bo(obj);
	unsigned long first;

	/* A private writable mapping would copy HBM pages: refuse it. */
	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;

	/*
	 * drm_gem_mmap() only accepts mappings that start at the buffer and
	 * fit in it; a dma-buf mapping (drm_gem_prime_mmap()) may start at
	 * a page inside it, and dma_buf_mmap_internal() checked that it
	 * fits. Either way vm_pgoff is the fake offset plus that page. The
	 * vma keeps a reference on the object, so the range stays allocated
	 * until the last mapping is gone.
	 */
	first = vma->vm_pgoff - drm_vma_node_start(&obj->vma_node);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return remap_vmalloc_range(vma, bo->vdev->hbm,
				   (bo->node.start >> PAGE_SHIFT) + first);
}

/*
 * PRIME export: the range's pages, for importers' DMA mappings
 * (drm_gem_map_dma_buf()). HBM never moves, so nothing is pinned.
 */
static struct sg_table *vtpu_hbm_bo_get_sg_table(struct drm_gem_object *obj)
{
	struct vtpu_bo *bo = to_vtpu_bo(obj);
	unsigned int i, npages = obj->size >> PAGE_SHIFT;
	void *vaddr = vtpu_hbm_vaddr(bo);
	struct sg_table *sgt;
	struct page **pages;
	int ret;

	pages = kvmalloc_array(npages, sizeof(*pages), GFP_KERNEL);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!pages || !sgt) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < npages; i++)
		pages[i] = vmalloc_to_page(vaddr + ((size_t)i << PAGE_SHIFT));
	ret = sg_alloc_table_from_pages(sgt, pages, npages, 0, obj->size,
					GFP_KERNEL);
	if (ret)
		goto err;
	kvfree(pages);
	return sgt;

err:
	kfree(sgt);
	kvfree(pages);
	return ERR_PTR(ret);
}

/* dma_buf_vmap() of an exported buffer: HBM is mapped for good. */
static int vtpu_hbm_bo_vmap(struct drm_gem_object *obj, struct iosys_map *map)
{
	struct vtpu_bo *bo = to_vtpu_bo(obj);

	iosys_map_set_vaddr(map, vtpu_hbm_vaddr(bo));
	return 0;
}

static const struct vm_operations_struct vtpu_hbm_vm_ops = {
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static const struct drm_gem_object_funcs vtpu_hbm_funcs = {
	.free = vtpu_hbm_bo_free,
	.get_sg_table = vtpu_hbm_bo_get_sg_table,
	.vmap = vtpu_hbm_bo_vmap,
	.mmap = vtpu_hbm_bo_mmap,
	.vm_ops = &vtpu_hbm_vm_ops,
};

static struct vtpu_bo *vtpu_hbm_bo_create(struct vtpu_device *vdev, u64 size)
{
	struct drm_gem_object *obj;
	struct vtpu_bo *bo;
	int ret;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->vdev = vdev;
	bo->placement = DRM_VTPU_PLACEMENT_HBM;
	obj = &bo->base.base;
	obj->funcs = &vtpu_hbm_funcs;

	/* Best fit keeps large ranges whole for large buffers. */
	mutex_lock(&vdev->hbm_lock);
	ret = drm_mm_insert_node_generic(&vdev->hbm_mm, &bo->node, size, 0, 0,
					 DRM_MM_INSERT_BEST);
	if (!ret)
		vdev->hbm_used += size;
	mutex_unlock(&vdev->hbm_lock);
	if (ret) {
		kfree(bo);
		return ERR_PTR(ret);
	}

	/* No data may leak from the range's previous owner. */
	memset(vtpu_hbm_vaddr(bo), 0, size);

	drm_gem_private_object_init(&vdev->drm, obj, size);
	vtpu_bo_track(bo);

	ret = drm_gem_create_mmap_offset(obj);
	if (ret) {
		drm_gem_object_put(obj);
		return ERR_PTR(ret);
	}
	return bo;
}

/* Backing-store buffers: shmem pages, allocated when first touched. */

/* Undoes vtpu_bo_pages_map(), or what of it was done. */
static void vtpu_bo_pages_unmap(struct vtpu_bo_pages *bp)
{
	unsigned long i;

	if (!bp->pages)
		return;
	if (bp->vaddr)
		vunmap(bp->vaddr);
	for (i = 0; i < bp->npages; i++)
		put_page(bp->pages[i]);
	kvfree(bp->pages);
	memset(bp, 0, sizeof(*bp));
}

static void vtpu_host_bo_free(struct drm_gem_object *obj)
{
	struct vtpu_bo *bo = to_vtpu_bo(obj);

	vtpu_bo_untrack(bo);
	atomic64_sub(obj->size, &bo->vdev->host_bytes);
	/* No job holds a buffer that is freed: it holds a reference. */
	vtpu_bo_pages_unmap(&bo->kmap);
	mutex_destroy(&bo->kmap_lock);
	drm_gem_shmem_free(&bo->base);
}

/*
 * The shmem helper's fault handler (6.12) maps page (address - vm_start)
 * of the buffer whatever page the mapping starts at, so a dma-buf mmap
 * with an offset would show the wrong pages: refuse it. (drm_gem_mmap()
 * already refuses mappings that do not start at the buffer.)
 */
static int vtpu_host_bo_mmap(struct drm_gem_object *obj,
			     struct vm_area_struct *vma)
{
	if (vma->vm_pgoff != drm_vma_node_start(&obj->vma_node))
		return -EINVAL;
	return drm_gem_shmem_object_mmap(obj, vma);
}

static const struct drm_gem_object_funcs vtpu_host_funcs = {
	.free = vtpu_host_bo_free,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = vtpu_host_bo_mmap,
	.vm_ops = &drm_gem_shmem_vm_ops,
};

/**
 * vtpu_gem_create_object() - &drm_driver.gem_create_object hook
 * @drm: device
 * @size: size of the object
 *
 * Lets the shmem helper allocate a &struct vtpu_bo. Accounting starts in
 * vtpu_host_bo_create(), once the helper can no longer fail: its error
 * path frees the object without calling &drm_gem_object_funcs.free.
 *
 * Return: the embedded GEM object or an ERR_PTR().
 */
struct drm_gem_object *vtpu_gem_create_object(struct drm_device *drm,
					      size_t size)
{
	struct vtpu_device *vdev = to_vtpu_device(drm);
	struct vtpu_bo *bo;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->vdev = vdev;
	bo->placement = DRM_VTPU_PLACEMENT_HOST;
	mutex_init(&bo->kmap_lock);
	bo->base.base.funcs = &vtpu_host_funcs;
	return &bo->base.base;
}

static struct vtpu_bo *vtpu_host_bo_create(struct vtpu_device *vdev, u64 size)
{
	struct drm_gem_shmem_object *shmem;
	struct vtpu_bo *bo;

	shmem = drm_gem_shmem_create(&vdev->drm, size);
	if (IS_ERR(shmem))
		return ERR_CAST(shmem);
	bo = container_of(shmem, struct vtpu_bo, base);
	atomic64_add(size, &vdev->host_bytes);
	vtpu_bo_track(bo);
	return bo;
}

/*
 * A backing-store page with a reference, allocated if it was a hole.
 * @nowait: only a page already in memory, found without sleeping.
 */
static struct page *vtpu_host_bo_page(struct vtpu_bo *bo, pgoff_t index,
				      bool nowait)
{
	struct address_space *mapping = bo->base.base.filp->f_mapping;
	struct folio *folio;

	if (!nowait)
		return shmem_read_mapping_page_gfp(mapping, index,
						   mapping_gfp_mask(mapping));
	folio = filemap_get_folio(mapping, index);
	if (IS_ERR(folio))
		return ERR_PTR(-EAGAIN);
	return folio_file_page(folio, index);
}

/* Pins and maps @size bytes at @offset of a backing-store buffer. */
static int vtpu_bo_pages_map(struct vtpu_bo *bo, u64 offset, u64 size,
			     struct vtpu_bo_pages *bp)
{
	pgoff_t first = offset >> PAGE_SHIFT;
	unsigned long i, n;
	struct page *page;
	void *vaddr;

	n = ((offset + size - 1) >> PAGE_SHIFT) - first + 1;
	bp->pages = kvmalloc_array(n, sizeof(*bp->pages), GFP_KERNEL_ACCOUNT);
	if (!bp->pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		page = vtpu_host_bo_page(bo, first + i, false);
		if (IS_ERR(page)) {
			vtpu_bo_pages_unmap(bp);
			return PTR_ERR(page);
		}
		bp->pages[bp->npages++] = page;
	}
	vaddr = vmap(bp->pages, n, VM_MAP, PAGE_KERNEL);
	if (!vaddr) {
		vtpu_bo_pages_unmap(bp);
		return -ENOMEM;
	}
	bp->vaddr = vaddr;
	bp->offset = offset;
	bp->size = size;
	return 0;
}

/**
 * vtpu_bo_map_range() - pin and map the range of a buffer a job uses
 * @bo: buffer; the caller holds a reference until vtpu_bo_unmap_range()
 * @offset: first byte of the range
 * @size: bytes of the range, nonzero, within the buffer (checked by the
 *	caller)
 * @nowait: return -EAGAIN rather than sleep, allocate or read pages
 * @map: receives the mapping
 *
 * HBM is mapped already. Of a backing-store buffer only the pages of the
 * range are pinned: binding 4 KiB of a 512 MiB buffer must not pin the
 * other 511 MiB, unseen. The range stays mapped after the job, for the
 * next job that binds the same range (a model binds its weights and its
 * pooled scratch at every execution, and mapping 64 MiB costs far more
 * than running a small model), until a job binds another range of it
 * while no job holds this one, or the buffer is freed; fdinfo counts
 * those pages in drm-resident-host. Pages are charged to the memory
 * cgroup of whoever first touches them. This may sleep unless @nowait:
 * call it at submit, never while signalling.
 *
 * Return: 0 or -errno.
 */
int vtpu_bo_map_range(struct vtpu_bo *bo, u64 offset, u64 size, bool nowait,
		      struct vtpu_bo_map *map)
{
	struct vtpu_bo_pages *km = &bo->kmap;
	int ret = 0;

	memset(map, 0, sizeof(*map));
	if (bo->placement == DRM_VTPU_PLACEMENT_HBM) {
		map->vaddr = vtpu_hbm_vaddr(bo) + offset;
		return 0;
	}

	if (nowait) {
		if (!mutex_trylock(&bo->kmap_lock))
			return -EAGAIN;
	} else {
		mutex_lock(&bo->kmap_lock);
	}
	if (!km->vaddr || km->offset != offset || km->size != size) {
		if (nowait) {
			ret = -EAGAIN;
			goto out;
		}
		if (bo->kmap_users) {
			/* Another range is in use: this job maps its own. */
			ret = vtpu_bo_pages_map(bo, offset, size, &map->own);
			if (!ret)
				map->vaddr = map->own.vaddr +
					     offset_in_page(offset);
			goto out;
		}
		vtpu_bo_pages_unmap(km);
		ret = vtpu_bo_pages_map(bo, offset, size, km);
		if (ret)
			goto out;
	}
	bo->kmap_users++;
	map->bo = bo;
	map->vaddr = km->vaddr + offset_in_page(offset);
out:
	mutex_unlock(&bo->kmap_lock);
	return ret;
}

/**
 * vtpu_bo_unmap_range() - undo vtpu_bo_map_range()
 * @map: a mapping it filled (or a zeroed one); may sleep
 */
void vtpu_bo_unmap_range(struct vtpu_bo_map *map)
{
	if (map->bo) {
		mutex_lock(&map->bo->kmap_lock);
		map->bo->kmap_users--;
		mutex_unlock(&map->bo->kmap_lock);
	}
	vtpu_bo_pages_unmap(&map->own);
	memset(map, 0, sizeof(*map));
}

/**
 * vtpu_bo_read() - copy a range of a buffer, without mapping it
 * @bo: buffer
 * @offset: first byte, range checked by the caller
 * @dst: where to copy to
 * @size: bytes
 * @nowait: return -EAGAIN rather than wait for a backing-store page
 *	that is not in memory
 *
 * Return: 0 or -errno.
 */
int vtpu_bo_read(struct vtpu_bo *bo, u64 offset, void *dst, size_t size,
		 bool nowait)
{
	struct page *page;
	size_t n;

	if (bo->placement == DRM_VTPU_PLACEMENT_HBM) {
		memcpy(dst, vtpu_hbm_vaddr(bo) + offset, size);
		return 0;
	}
	while (size) {
		n = min_t(size_t, size, PAGE_SIZE - offset_in_page(offset));
		page = vtpu_host_bo_page(bo, offset >> PAGE_SHIFT, nowait);
		if (IS_ERR(page))
			return PTR_ERR(page);
		memcpy_from_page(dst, page, offset_in_page(offset), n);
		put_page(page);
		dst += n;
		offset += n;
		size -= n;
		if (!nowait)
			cond_resched();
	}
	return 0;
}

static u64 vtpu_bo_device_addr(struct vtpu_bo *bo)
{
	if (bo->placement == DRM_VTPU_PLACEMENT_HBM)
		return bo->node.start;
	return DRM_VTPU_NO_DEVICE_ADDR;
}

int vtpu_ioctl_bo_create(struct drm_device *drm, void *data,
			 struct drm_file *file)
{
	struct vtpu_device *vdev = to_vtpu_device(drm);
	struct drm_vtpu_bo_create *args = data;
	struct vtpu_bo *bo;
	u64 size;
	int ret;

	if (args->flags) {
		drm_dbg(drm, "bo_create: unknown flags 0x%x\n", args->flags);
		return -EINVAL;
	}
	if (args->placement != DRM_VTPU_PLACEMENT_AUTO &&
	    args->placement != DRM_VTPU_PLACEMENT_HBM &&
	    args->placement != DRM_VTPU_PLACEMENT_HOST) {
		drm_dbg(drm, "bo_create: unknown placement %u\n",
			args->placement);
		return -EINVAL;
	}
	if (!args->size) {
		drm_dbg(drm, "bo_create: size 0\n");
		return -EINVAL;
	}
	if (args->size > vdev->max_bo_size) {
		drm_dbg(drm, "bo_create: size %llu > max %llu\n",
			args->size, vdev->max_bo_size);
		return -E2BIG;
	}
	/* max_bo_size is page aligned, so this cannot overflow. */
	size = PAGE_ALIGN(args->size);

	if (args->placement == DRM_VTPU_PLACEMENT_HOST) {
		bo = vtpu_host_bo_create(vdev, size);
	} else {
		bo = vtpu_hbm_bo_create(vdev, size);
		if (PTR_ERR_OR_ZERO(bo) == -ENOSPC &&
		    args->placement == DRM_VTPU_PLACEMENT_AUTO)
			bo = vtpu_host_bo_create(vdev, size);
	}
	if (IS_ERR(bo)) {
		drm_dbg(drm, "bo_create: %llu bytes placement %u: %pe\n",
			size, args->placement, bo);
		return PTR_ERR(bo);
	}

	ret = drm_gem_handle_create(file, &bo->base.base, &args->handle);
	/* The handle holds the reference from here on. */
	drm_gem_object_put(&bo->base.base);
	if (ret)
		return ret;

	args->placed = bo->placement;
	args->device_addr = vtpu_bo_device_addr(bo);
	return 0;
}

int vtpu_ioctl_bo_info(struct drm_device *drm, void *data,
		       struct drm_file *file)
{
	struct drm_vtpu_bo_info *args = data;
	struct drm_gem_object *obj;
	struct vtpu_bo *bo;

	if (args->flags) {
		drm_dbg(drm, "bo_info: unknown flags 0x%x\n", args->flags);
		return -EINVAL;
	}

	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj) {
		drm_dbg(drm, "bo_info: unknown handle %u\n", args->handle);
		return -ENOENT;
	}
	bo = to_vtpu_bo(obj);

	args->size = obj->size;
	args->mmap_offset = drm_vma_node_offset_addr(&obj->vma_node);
	args->device_addr = vtpu_bo_device_addr(bo);
	args->placed = bo->placement;
	args->pad = 0;

	drm_gem_object_put(obj);
	return 0;
}

static void vtpu_print_region(struct drm_printer *p, const char *region,
			      u64 bytes)
{
	drm_printf(p, "drm-memory-%s:\t%llu KiB\n", region, bytes / SZ_1K);
}

/**
 * vtpu_gem_show_fdinfo() - memory of one open file, per placement
 * @p: printer into the fdinfo file
 * @file: the DRM file
 */
void vtpu_gem_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct drm_gem_object *obj;
	u64 hbm = 0, host = 0, resident = 0;
	int id;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, obj, id) {
		struct vtpu_bo *bo = to_vtpu_bo(obj);

		if (bo->placement == DRM_VTPU_PLACEMENT_HBM) {
			hbm += obj->size;
		} else {
			host += obj->size;
			/* Pages exist once touched, by a mapping or a job. */
			resident += (u64)obj->filp->f_mapping->nrpages <<
				    PAGE_SHIFT;
		}
	}
	spin_unlock(&file->table_lock);

	vtpu_print_region(p, "hbm", hbm);
	vtpu_print_region(p, "host", host);
	drm_printf(p, "drm-resident-host:\t%llu KiB\n", resident / SZ_1K);
}

static int vtpu_bos_show(struct seq_file *m, void *unused)
{
	struct vtpu_device *vdev = m->private;
	u64 count[2] = {}, bytes[2] = {};
	struct vtpu_bo *bo;

	mutex_lock(&vdev->bos_lock);
	list_for_each_entry(bo, &vdev->bos, link) {
		int hbm = bo->placement == DRM_VTPU_PLACEMENT_HBM;

		count[hbm]++;
		bytes[hbm] += bo->base.base.size;
	}
	seq_printf(m, "hbm: %llu bos, %llu bytes\n", count[1], bytes[1]);
	seq_printf(m, "host: %llu bos, %llu bytes\n", count[0], bytes[0]);
	list_for_each_entry(bo, &vdev->bos, link) {
		seq_printf(m, "%-4s size %-12zu addr 0x%-10llx handles %u",
			   bo->placement == DRM_VTPU_PLACEMENT_HBM ? "hbm" : "host",
			   bo->base.base.size, vtpu_bo_device_addr(bo),
			   bo->base.base.handle_count);
		/* The range kept mapped between jobs (vtpu_bo_map_range()). */
		if (bo->placement == DRM_VTPU_PLACEMENT_HOST) {
			mutex_lock(&bo->kmap_lock);
			if (bo->kmap.vaddr)
				seq_printf(m, " kmap %llu+%llu users %u",
					   bo->kmap.offset, bo->kmap.size,
					   bo->kmap_users);
			mutex_unlock(&bo->kmap_lock);
		}
		seq_putc(m, '\n');
	}
	mutex_unlock(&vdev->bos_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vtpu_bos);

/**
 * vtpu_gem_debugfs_init() - create debugfs "bos": live buffers per placement,
 *	then one line per buffer (a backing-store buffer's kept mapping too)
 * @vdev: a registered device
 */
void vtpu_gem_debugfs_init(struct vtpu_device *vdev)
{
	debugfs_create_file("bos", 0444, vdev->drm.debugfs_root, vdev,
			    &vtpu_bos_fops);
}
