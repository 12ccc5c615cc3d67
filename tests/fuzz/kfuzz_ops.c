// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * The model of what vtpu-kfuzz owns, and the operations on everything
 * but jobs: QUERY, buffers (BO_CREATE, BO_INFO, GEM_CLOSE), mappings of
 * buffers and dma-bufs, writes through them, PRIME and raw ioctls
 * (syncobjs: kfuzz_sync.c). Each operation mostly does
 * something valid on a live object and sometimes something broken;
 * where the uAPI header promises an errno for a request with a single
 * fault, the answer is checked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "kfuzz.h"
#include "vtpu_vgem.h"

/* --- files ------------------------------------------------------------------- */

int kf_file_open(int dev)
{
	static uint64_t gen;
	char path[64];
	int i, fd;

	for (i = 0; i < KF_MAX_FILES; i++)
		if (!kf.files[i].live)
			break;
	if (i == KF_MAX_FILES || dev >= kf.ndevs)
		return -1;
	snprintf(path, sizeof(path), "/dev/accel/accel%d", kf.devs[dev].minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		kf_note(" open: %s", strerror(errno));
		return -1;
	}
	memset(&kf.files[i], 0, sizeof(kf.files[i]));
	kf.files[i].gen = ++gen;
	kf.files[i].live = true;
	kf.files[i].dev = dev;
	kf.files[i].fds[0] = fd;
	kf.files[i].nfds = 1;
	return i;
}

/* Closes every fd of @f: its jobs, buffers and syncobjs go with it. */
void kf_file_close(struct kf_file *f)
{
	int i;

	if (!f->live)
		return;
	for (i = 0; i < f->nfds; i++)
		close(f->fds[i]);
	if (f->arena_map)
		munmap(f->arena_map, f->arena_size);
	f->live = false;
}

struct kf_file *kf_file_pick(struct kf_rng *r)
{
	int live[KF_MAX_FILES], n = 0, i;

	for (i = 0; i < KF_MAX_FILES; i++)
		if (kf.files[i].live)
			live[n++] = i;
	if (!n) {
		i = kf_file_open(kf_below(r, kf.ndevs));
		return i < 0 ? NULL : &kf.files[i];
	}
	return &kf.files[live[kf_below(r, n)]];
}

int kf_file_fd(struct kf_file *f, struct kf_rng *r)
{
	return f->fds[kf_below(r, f->nfds)];
}

static int file_index(struct kf_file *f)
{
	return (int)(f - kf.files);
}

/* --- buffers ------------------------------------------------------------------- */

struct kf_bo *kf_bo_pick(struct kf_file *f, struct kf_rng *r, uint64_t min,
			 bool bindable)
{
	int i, n = f->nbos, start = kf_below(r, n ? n : 1);

	for (i = 0; i < n; i++) {
		struct kf_bo *bo = &f->bos[(start + i) % n];

		if (bo->size < min || (bindable && bo->size > KF_BIG_BO))
			continue;
		return bo;
	}
	return NULL;
}

static void bo_forget(struct kf_file *f, struct kf_bo *bo)
{
	f->closes++;
	*bo = f->bos[--f->nbos];
}

static bool bo_known(struct kf_file *f, uint32_t handle)
{
	int i;

	for (i = 0; i < f->nbos; i++)
		if (f->bos[i].handle == handle)
			return true;
	return false;
}

int kf_bo_new(struct kf_file *f, uint64_t size, uint32_t placement,
	      struct kf_bo **out)
{
	struct drm_vtpu_bo_create c = { .size = size, .placement = placement };
	struct drm_gem_close gc = { 0 };
	int ret;

	if (f->nbos == KF_MAX_BOS)
		return -ENOSPC;
	ret = kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_BO_CREATE, &c);
	if (ret)
		return ret;
	if (bo_known(f, c.handle)) {
		kf_contract("BO_CREATE returned live handle %u", c.handle);
		gc.handle = c.handle;
		kf_ioctl(f->fds[0], DRM_IOCTL_GEM_CLOSE, &gc);
		return -EEXIST;
	}
	f->bos[f->nbos] = (struct kf_bo){
		.handle = c.handle,
		.size = (size + kf.page - 1) & ~(uint64_t)(kf.page - 1),
		.placed = c.placed,
	};
	if (out)
		*out = &f->bos[f->nbos];
	f->nbos++;
	return 0;
}

/* The program arena: a mapped buffer of the file, created on first use. */
bool kf_arena_ready(struct kf_file *f)
{
	struct drm_vtpu_bo_create c = {
		.size = KF_ARENA_SIZE, .placement = DRM_VTPU_PLACEMENT_HOST,
	};
	struct drm_vtpu_bo_info info = { 0 };
	void *p;

	if (f->arena_map)
		return true;
	if (kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_BO_CREATE, &c))
		return false;
	info.handle = c.handle;
	if (!kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_BO_INFO, &info)) {
		p = mmap(NULL, KF_ARENA_SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED, f->fds[0], (off_t)info.mmap_offset);
		if (p != MAP_FAILED) {
			f->arena = c.handle;
			f->arena_map = p;
			f->arena_size = KF_ARENA_SIZE;
		}
	}
	/* The mapping keeps the buffer; the handle stays for SUBMIT. */
	return f->arena_map;
}

static uint64_t rand_bo_size(struct kf_rng *r, const struct kf_dev *d)
{
	switch (kf_below(r, 10)) {
	case 0: case 1: case 2:
		return 1 + kf_below(r, 4 * kf.page);
	case 3: case 4: case 5:
		return kf.page * (1 + kf_below(r, 64));
	case 6:
		return (1ULL << 20) * (1 + kf_below(r, 8));
	default:
		return kf_edge_size(r, d->q.max_bo_size);
	}
}

void kf_op_query(struct kf_rng *r)
{
	struct kf_file *f = kf_file_pick(r);
	struct drm_vtpu_query q;
	const struct kf_dev *d;
	int ret, fd;

	if (!f)
		return;
	d = &kf.devs[f->dev];
	fd = kf_file_fd(f, r);
	memset(&q, 0, sizeof(q));
	if (kf_chance(r, 10)) {
		ret = kf_ioctl(fd, DRM_IOCTL_VTPU_QUERY, (void *)kf_bad_ptr(r));
		kf_note(" bad pointer -> %d", ret);
		return;
	}
	if (kf_chance(r, 15)) {
		if (kf_chance(r, 50))
			q.flags = 1u << kf_below(r, 32);
		else
			q.pad = 1u << kf_below(r, 32);
		ret = kf_ioctl(fd, DRM_IOCTL_VTPU_QUERY, &q);
		kf_note(" flags %#x pad %#x -> %d", q.flags, q.pad, ret);
		if (ret != -EINVAL)
			kf_contract("QUERY with nonzero flags/pad returned %d", ret);
		return;
	}
	ret = kf_ioctl(fd, DRM_IOCTL_VTPU_QUERY, &q);
	kf_note(" -> %d", ret);
	if (ret) {
		if (!kf.enomem_ok)
			kf_contract("QUERY failed: %d", ret);
		return;
	}
	if (q.core_count != d->q.core_count || q.hbm_total != d->q.hbm_total ||
	    q.hbm_free > q.hbm_total || q.hbm_largest_free > q.hbm_free ||
	    q.max_bo_size < q.hbm_total || q.max_bo_size % kf.page ||
	    (q.features & 0xf) != 0xf || q.pad2)
		kf_contract("QUERY answer inconsistent (cores %u hbm %llu free %llu largest %llu max_bo %llu features %#llx)",
			    q.core_count, (unsigned long long)q.hbm_total,
			    (unsigned long long)q.hbm_free,
			    (unsigned long long)q.hbm_largest_free,
			    (unsigned long long)q.max_bo_size,
			    (unsigned long long)q.features);
}

void kf_op_bo_create(struct kf_rng *r)
{
	struct kf_file *f = kf_file_pick(r);
	struct drm_vtpu_bo_create c = { 0 };
	struct drm_gem_close gc = { 0 };
	const struct kf_dev *d;
	int ret, faults = 0, want = 0;

	if (!f)
		return;
	d = &kf.devs[f->dev];
	/* Room for what we create: drop one first. */
	if (f->nbos == KF_MAX_BOS) {
		gc.handle = f->bos[0].handle;
		kf_ioctl(f->fds[0], DRM_IOCTL_GEM_CLOSE, &gc);
		bo_forget(f, &f->bos[0]);
	}
	c.size = rand_bo_size(r, d);
	c.placement = kf_below(r, 3);
	if (kf_chance(r, 5)) {
		c.placement = kf_chance(r, 50) ? 3 : (uint32_t)kf_rand(r);
		faults++;
		want = -EINVAL;
	}
	if (kf_chance(r, 5)) {
		c.flags = 1u << kf_below(r, 32);
		faults++;
		want = -EINVAL;
	}
	if (!c.size) {
		faults++;
		want = -EINVAL;
	} else if (c.size > d->q.max_bo_size) {
		faults++;
		want = -E2BIG;
	}
	/* Outputs are ignored on input. */
	c.handle = kf_rand(r);
	c.placed = kf_rand(r);
	c.device_addr = kf_rand(r);
	if (kf_chance(r, 3)) {
		ret = kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_BO_CREATE,
			       (void *)kf_bad_ptr(r));
		kf_note(" bad pointer -> %d", ret);
		if (!ret)
			kf_contract("BO_CREATE through a bad pointer succeeded");
		return;
	}
	ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_VTPU_BO_CREATE, &c);
	kf_note(" size %#llx placement %u flags %#x -> %d handle %u placed %u",
		(unsigned long long)c.size, c.placement, c.flags, ret,
		ret ? 0 : c.handle, ret ? 0 : c.placed);
	if (faults == 1 && ret != want)
		kf_contract("BO_CREATE size %#llx placement %u flags %#x: %d, not %d",
			    (unsigned long long)c.size, c.placement, c.flags,
			    ret, want);
	if (!faults && ret && ret != -ENOSPC && ret != -ENOMEM)
		kf_contract("BO_CREATE size %#llx placement %u: %d",
			    (unsigned long long)c.size, c.placement, ret);
	if (ret)
		return;
	if (faults) {
		kf_contract("BO_CREATE accepted a bad request");
	} else if ((c.placement == DRM_VTPU_PLACEMENT_HOST &&
		    c.placed != DRM_VTPU_PLACEMENT_HOST) ||
		   (c.placement == DRM_VTPU_PLACEMENT_HBM &&
		    c.placed != DRM_VTPU_PLACEMENT_HBM) ||
		   (c.placed == DRM_VTPU_PLACEMENT_HOST) !=
		   (c.device_addr == DRM_VTPU_NO_DEVICE_ADDR)) {
		kf_contract("BO_CREATE placement %u gave placed %u addr %#llx",
			    c.placement, c.placed,
			    (unsigned long long)c.device_addr);
	}
	if (bo_known(f, c.handle)) {
		kf_contract("BO_CREATE returned live handle %u", c.handle);
		return;
	}
	f->bos[f->nbos++] = (struct kf_bo){
		.handle = c.handle,
		.size = (c.size + kf.page - 1) & ~(uint64_t)(kf.page - 1),
		.placed = c.placed,
	};
}

void kf_op_bo_info(struct kf_rng *r)
{
	struct kf_file *f = kf_file_pick(r);
	struct drm_vtpu_bo_info info = { 0 };
	struct kf_bo *bo;
	int ret;

	if (!f)
		return;
	bo = kf_bo_pick(f, r, 0, false);
	info.handle = bo && kf_chance(r, 85) ? bo->handle : (uint32_t)kf_rand(r);
	if (kf_chance(r, 5))
		info.flags = 1u << kf_below(r, 32);
	info.pad = kf_rand(r);
	if (kf_chance(r, 3)) {
		ret = kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_BO_INFO,
			       (void *)kf_bad_ptr(r));
		kf_note(" bad pointer -> %d", ret);
		return;
	}
	ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_VTPU_BO_INFO, &info);
	kf_note(" handle %u flags %#x -> %d", info.handle, info.flags, ret);
	if (info.flags && ret != -EINVAL)
		kf_contract("BO_INFO flags %#x: %d", info.flags, ret);
	if (!ret && bo && info.handle == bo->handle &&
	    (info.size != bo->size || info.pad ||
	     (info.placed == DRM_VTPU_PLACEMENT_HOST) !=
	     (info.device_addr == DRM_VTPU_NO_DEVICE_ADDR)))
		kf_contract("BO_INFO handle %u: size %llu (created %llu) placed %u addr %#llx pad %u",
			    bo->handle, (unsigned long long)info.size,
			    (unsigned long long)bo->size, info.placed,
			    (unsigned long long)info.device_addr, info.pad);
}

void kf_op_bo_close(struct kf_rng *r)
{
	struct kf_file *f = kf_file_pick(r);
	struct drm_gem_close gc = { 0 };
	struct kf_bo *bo;
	int ret;

	if (!f)
		return;
	bo = kf_bo_pick(f, r, 0, false);
	if (bo && kf_chance(r, 90)) {
		gc.handle = bo->handle;
		ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_GEM_CLOSE, &gc);
		kf_note(" handle %u -> %d", gc.handle, ret);
		bo_forget(f, bo);
		return;
	}
	gc.handle = kf_chance(r, 50) ? 0 : (uint32_t)kf_rand(r);
	if (bo_known(f, gc.handle) || gc.handle == f->arena)
		return;
	ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_GEM_CLOSE, &gc);
	kf_note(" unknown handle %u -> %d", gc.handle, ret);
	if (ret != -EINVAL)
		kf_contract("GEM_CLOSE of unknown handle %u: %d", gc.handle, ret);
}

/* --- mappings --------------------------------------------------------------------- */

void kf_map_add(void *p, size_t len, bool writable, int file, uint32_t handle)
{
	if (kf.nmaps == KF_MAX_MAPS) {
		munmap(p, len);
		return;
	}
	kf.maps[kf.nmaps++] = (struct kf_map){
		.p = p, .len = len, .writable = writable, .file = file,
		.handle = handle,
	};
}

static void map_drop(struct kf_map *m)
{
	munmap(m->p, m->len);
	*m = kf.maps[--kf.nmaps];
}

static void mmap_dmabuf(struct kf_rng *r)
{
	struct kf_dmabuf *d;
	size_t len;
	off_t off = 0;
	void *p;

	if (!kf.ndmabufs)
		return;
	d = &kf.dmabufs[kf_below(r, kf.ndmabufs)];
	if (d->size > KF_MAP_MAX)
		return;
	len = d->size;
	if (kf_chance(r, 30)) {
		off = kf.page * kf_below(r, d->size / kf.page + 2);
		len = kf.page * (1 + kf_below(r, 4));
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 kf_chance(r, 90) ? MAP_SHARED : MAP_PRIVATE, d->fd, off);
	kf_note(" dma-buf %d size %#llx offset %#llx len %#zx -> %s", d->fd,
		(unsigned long long)d->size, (unsigned long long)off, len,
		p == MAP_FAILED ? strerror(errno) : "mapped");
	if (p == MAP_FAILED)
		return;
	if (kf_chance(r, 50))
		kf_touch(p, len < (64 << 10) ? len : (64 << 10), NULL);
	kf_map_add(p, len, true, -1, 0);
}

void kf_op_mmap(struct kf_rng *r)
{
	struct drm_vtpu_bo_info info = { 0 };
	struct kf_file *f, *other;
	int prot = PROT_READ | PROT_WRITE, flags = MAP_SHARED, fd;
	uint64_t off;
	struct kf_bo *bo;
	size_t len;
	void *p;

	if (kf_chance(r, 20)) {
		mmap_dmabuf(r);
		return;
	}
	f = kf_file_pick(r);
	if (!f || !(bo = kf_bo_pick(f, r, 0, false)))
		return;
	/* 6.12's shmem helper allocates every page of a buffer it maps. */
	if (bo->size > KF_MAP_MAX)
		return;
	info.handle = bo->handle;
	if (kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_BO_INFO, &info))
		return;
	off = info.mmap_offset;
	len = bo->size;
	switch (kf_below(r, 12)) {
	case 0: len = kf.page * (1 + kf_below(r, bo->size / kf.page)); break;
	case 1: len = bo->size + kf.page; break;
	case 2: off += kf.page; break;
	case 3: off = kf_rand(r) & ~(uint64_t)(kf.page - 1); break;
	case 4: flags = MAP_PRIVATE; break;
	case 5: prot = PROT_READ; break;
	case 6: len = 0; break;
	default: break;
	}
	fd = kf_file_fd(f, r);
	/* Another file's offset: -EACCES. */
	if (kf_chance(r, 5) && (other = kf_file_pick(r)) && other != f)
		fd = kf_file_fd(other, r);
	p = mmap(NULL, len, prot, flags, fd, (off_t)off);
	kf_note(" handle %u size %#llx offset %#llx len %#zx prot %d flags %d -> %s",
		bo->handle, (unsigned long long)bo->size,
		(unsigned long long)off, len, prot, flags,
		p == MAP_FAILED ? strerror(errno) : "mapped");
	if (p == MAP_FAILED)
		return;
	if (kf_chance(r, 50))
		kf_touch(p, len < (64 << 10) ? len : (64 << 10), NULL);
	kf_map_add(p, len, prot & PROT_WRITE, file_index(f), bo->handle);
}

void kf_op_munmap(struct kf_rng *r)
{
	struct kf_map *m;
	void *p;

	if (!kf.nmaps)
		return;
	m = &kf.maps[kf_below(r, kf.nmaps)];
	switch (kf_below(r, 8)) {
	case 0:
		/*
		 * A hole in the middle splits the vma: open/close of both.
		 * The two parts are two mappings from then on (the hole may
		 * be reused by anyone).
		 */
		if (m->len >= 3 * kf.page && kf.nmaps < KF_MAX_MAPS) {
			kf_note(" hole in %p", m->p);
			munmap((char *)m->p + kf.page, kf.page);
			kf_map_add((char *)m->p + 2 * kf.page,
				   m->len - 2 * kf.page, m->writable, m->file,
				   m->handle);
			m->len = kf.page;
			return;
		}
		break;
	case 1:
		p = mremap(m->p, m->len, m->len + kf.page, MREMAP_MAYMOVE);
		kf_note(" grow %p -> %s", m->p, p == MAP_FAILED ?
			strerror(errno) : "grown");
		if (p != MAP_FAILED) {
			m->p = p;
			m->len += kf.page;
		}
		return;
	case 2:
		if (m->len >= 2 * kf.page) {
			p = mremap(m->p, m->len, m->len - kf.page, 0);
			kf_note(" shrink %p -> %s", m->p, p == MAP_FAILED ?
				strerror(errno) : "shrunk");
			if (p != MAP_FAILED)
				m->len -= kf.page;
			return;
		}
		break;
	case 3:
		kf_note(" madvise %p", m->p);
		madvise(m->p, m->len, kf_chance(r, 50) ? MADV_DONTNEED :
							 MADV_DONTFORK);
		return;
	case 4:
		kf_note(" read-only %p", m->p);
		if (!mprotect(m->p, m->len, PROT_READ))
			m->writable = false;
		return;
	}
	kf_note(" %p len %#zx", m->p, m->len);
	map_drop(m);
}

static struct kf_map *profile_map(struct kf_file **out_f, uint64_t *off)
{
	int i, fi;

	for (i = 0; i < kf.nmaps; i++) {
		struct kf_map *m = &kf.maps[i];
		struct kf_file *f;

		fi = m->file;
		if (fi < 0 || !m->writable)
			continue;
		f = &kf.files[fi];
		if (!f->live || !f->prof_handle || m->handle != f->prof_handle)
			continue;
		if (f->prof_offset + sizeof(struct drm_vtpu_profile) > m->len)
			continue;
		*out_f = f;
		*off = f->prof_offset;
		return m;
	}
	return NULL;
}

/* Writes through mappings while jobs run, the profile counters too. */
void kf_op_scribble(struct kf_rng *r)
{
	unsigned char junk[64];
	struct kf_file *f;
	struct kf_map *m;
	uint64_t off;
	uint32_t v;
	int i, n;

	if (kf_fam(KF_FAM_PROFILE) && kf_chance(r, 30) &&
	    (m = profile_map(&f, &off))) {
		v = kf_chance(r, 50) ? 0x7fffffff : (uint32_t)kf_rand(r);
		kf_note(" trace_count of profile at %#llx := %#x",
			(unsigned long long)off, v);
		kf_touch((char *)m->p + off +
			 offsetof(struct drm_vtpu_profile, trace_count),
			 sizeof(v), &v);
		return;
	}
	if (!kf.nmaps)
		return;
	m = &kf.maps[kf_below(r, kf.nmaps)];
	if (!m->writable)
		return;
	for (n = 1 + kf_below(r, 8); n; n--) {
		size_t len = 1 + kf_below(r, sizeof(junk));
		size_t at = kf_rand(r) % m->len;

		if (at + len > m->len)
			len = m->len - at;
		for (i = 0; i < (int)len; i++)
			junk[i] = kf_rand(r);
		if (!kf_touch((char *)m->p + at, len, junk))
			break;
	}
	kf_note(" %p len %#zx", m->p, m->len);
}

/* --- PRIME ------------------------------------------------------------------------- */

int kf_devnull(void)
{
	static int fd = -1;

	if (fd < 0)
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	return fd;
}

/* A file descriptor that is no dma-buf, sync_file or syncobj (or none). */
int kf_junk_fd(struct kf_rng *r)
{
	struct kf_file *f;

	switch (kf_below(r, 5)) {
	case 0: return -1;
	case 1: return kf_devnull();
	case 2: return kf.nsyncfiles ? kf.syncfiles[0] : 1000;
	case 3: return kf.nsyncobj_fds ? kf.syncobj_fds[0] : 1001;
	default:
		f = kf_file_pick(r);
		return f ? f->fds[0] : -1;
	}
}

static void prime_export(struct kf_rng *r)
{
	struct drm_prime_handle p = { 0 };
	struct kf_file *f = kf_file_pick(r);
	struct kf_bo *bo;
	int ret;

	if (!f || kf.ndmabufs == KF_MAX_DMABUFS)
		return;
	bo = kf_bo_pick(f, r, 0, false);
	p.handle = bo && kf_chance(r, 90) ? bo->handle : (uint32_t)kf_rand(r);
	p.flags = DRM_CLOEXEC | (kf_chance(r, 50) ? DRM_RDWR : 0);
	if (kf_chance(r, 5))
		p.flags |= 1u << kf_below(r, 32);
	p.fd = -1;
	ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);
	kf_note(" export handle %u flags %#x -> %d fd %d", p.handle, p.flags,
		ret, ret ? -1 : p.fd);
	if (ret)
		return;
	kf.dmabufs[kf.ndmabufs++] = (struct kf_dmabuf){
		.fd = p.fd, .size = bo && bo->handle == p.handle ? bo->size :
				    (uint64_t)lseek(p.fd, 0, SEEK_END),
		.dev = f->dev,
	};
}

static void prime_import(struct kf_rng *r)
{
	struct drm_prime_handle p = { 0 };
	struct drm_vtpu_bo_info info = { 0 };
	struct kf_file *f = kf_file_pick(r);
	struct kf_dmabuf *d = NULL;
	int ret;

	if (!f)
		return;
	if (kf.ndmabufs && kf_chance(r, 85)) {
		d = &kf.dmabufs[kf_below(r, kf.ndmabufs)];
		p.fd = d->fd;
	} else {
		p.fd = kf_junk_fd(r);
	}
	p.flags = kf_chance(r, 5) ? (uint32_t)kf_rand(r) : 0;
	ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_PRIME_FD_TO_HANDLE, &p);
	kf_note(" import fd %d into a file of dev %d -> %d handle %u", p.fd,
		f->dev, ret, ret ? 0 : p.handle);
	if (ret)
		return;
	if (!d || d->dev != f->dev)
		kf_contract("PRIME import of fd %d (%s) into device %d succeeded",
			    p.fd, d ? "another device's dma-buf" : "no dma-buf",
			    f->dev);
	if (bo_known(f, p.handle) || f->nbos == KF_MAX_BOS)
		return;
	info.handle = p.handle;
	if (kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_BO_INFO, &info))
		return;
	f->bos[f->nbos++] = (struct kf_bo){
		.handle = p.handle, .size = info.size, .placed = info.placed,
		.imported = true,
	};
}

static void dmabuf_ioctl(struct kf_rng *r)
{
	struct dma_buf_export_sync_file ex = { 0 };
	struct dma_buf_import_sync_file im = { 0 };
	struct dma_buf_sync s = { 0 };
	struct kf_dmabuf *d;
	int ret;

	if (!kf.ndmabufs)
		return;
	d = &kf.dmabufs[kf_below(r, kf.ndmabufs)];
	switch (kf_below(r, 4)) {
	case 0:
		s.flags = kf_chance(r, 80) ? DMA_BUF_SYNC_START |
			  (1 + kf_below(r, 3)) : kf_rand(r);
		ret = kf_ioctl(d->fd, DMA_BUF_IOCTL_SYNC, &s);
		s.flags = (s.flags & ~DMA_BUF_SYNC_START) | DMA_BUF_SYNC_END;
		kf_ioctl(d->fd, DMA_BUF_IOCTL_SYNC, &s);
		kf_note(" sync %d -> %d", d->fd, ret);
		break;
	case 1:
		ex.flags = kf_chance(r, 80) ? 1 + kf_below(r, 3) : kf_rand(r);
		ex.fd = -1;
		ret = kf_ioctl(d->fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &ex);
		kf_note(" export sync_file %d -> %d", d->fd, ret);
		if (!ret)
			kf_syncfile_add(ex.fd);
		break;
	case 2:
		im.flags = kf_chance(r, 80) ? 1 + kf_below(r, 2) : kf_rand(r);
		im.fd = kf.nsyncfiles ? kf.syncfiles[kf_below(r, kf.nsyncfiles)] :
					kf_junk_fd(r);
		ret = kf_ioctl(d->fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &im);
		kf_note(" import sync_file %d into %d -> %d", im.fd, d->fd, ret);
		break;
	default:
		kf_note(" close %d", d->fd);
		close(d->fd);
		*d = kf.dmabufs[--kf.ndmabufs];
		break;
	}
}

/* vgem, another driver, if the kernel has it: -1 otherwise. */
static int vgem(void)
{
	static int fd = -2;

	if (fd == -2)
		kf.vgem_fd = fd = vtpu_vgem_open();
	return fd;
}

/*
 * Another driver: vgem attaches to and maps our dma-bufs (HOST buffers
 * pin all their pages then: small ones only), and offers its own, which
 * vtpu must refuse to import.
 */
static void prime_vgem(struct kf_rng *r)
{
	struct drm_mode_create_dumb dumb = { 0 };
	struct drm_prime_handle p = { 0 };
	struct drm_gem_close gc = { 0 };
	struct kf_dmabuf *d;
	struct kf_file *f;
	int fd = vgem(), ret;

	if (fd < 0)
		return;
	if (kf_chance(r, 60) && kf.ndmabufs) {
		d = &kf.dmabufs[kf_below(r, kf.ndmabufs)];
		if (d->size > KF_BIG_BO)
			return;
		p.fd = d->fd;
		ret = kf_ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &p);
		kf_note(" vgem imports dma-buf %d -> %d", d->fd, ret);
		/* Now and then vgem keeps it until the end. */
		if (!ret && kf_chance(r, 70)) {
			gc.handle = p.handle;
			kf_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &gc);
		}
		return;
	}
	f = kf_file_pick(r);
	dumb.width = 1 + kf_below(r, 256);
	dumb.height = 1 + kf_below(r, 64);
	dumb.bpp = 32;
	if (!f || kf_ioctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &dumb))
		return;
	p.handle = dumb.handle;
	p.flags = DRM_CLOEXEC | DRM_RDWR;
	if (!kf_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p)) {
		struct drm_prime_handle in = { .fd = p.fd };

		ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_PRIME_FD_TO_HANDLE,
			       &in);
		kf_note(" vtpu imports a vgem dma-buf -> %d", ret);
		if (!ret)
			kf_contract("PRIME import of vgem's dma-buf into vtpu succeeded");
		close(p.fd);
	}
	gc.handle = dumb.handle;
	kf_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &gc);
}

void kf_op_prime(struct kf_rng *r)
{
	switch (kf_below(r, 7)) {
	case 0: case 1: prime_export(r); break;
	case 2: case 3: prime_import(r); break;
	case 4: prime_vgem(r); break;
	default: dmabuf_ioctl(r); break;
	}
}

/* --- raw ioctls ---------------------------------------------------------------------- */

/* Any size, any direction, any bytes, on the driver's and DRM's numbers. */
void kf_op_raw(struct kf_rng *r)
{
	/*
	 * DRM's own ioctls an accel file may be given; not GEM_CLOSE nor
	 * SYNCOBJ_DESTROY, or the model would lie.
	 */
	static const uint8_t generic[] = {
		0x00, 0x01, 0x02, 0x05, 0x06, 0x07, 0x0c, 0x0d, 0x2d, 0x2e,
		0xbf, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xca, 0xcb, 0xcc, 0xcd,
		0xcf,
	};
	static uint64_t buf[64];
	struct kf_file *f = kf_file_pick(r);
	unsigned int nr, dir, size, i;
	unsigned long req;
	bool small;
	int ret;

	if (!f)
		return;
	nr = kf_chance(r, 60) ? DRM_COMMAND_BASE + kf_below(r, 8) :
	     generic[kf_below(r, sizeof(generic))];
	/* GET_UNIQUE, GET_MAGIC: 6.12 dereferences an accel file's NULL master. */
	if ((nr == 0x01 || nr == 0x02) && !kf.core_bugs)
		nr = 0x00;
	dir = kf_below(r, 4);
	size = kf_chance(r, 50) ? kf_below(r, sizeof(buf) + 1) :
				  kf_below(r, 1 << 14);
	req = _IOC(dir, DRM_IOCTL_BASE, nr, size);
	/* The syncobj arrays' counts: see kf_big_count(). */
	small = !kf.core_bugs && (nr == 0xc3 || nr == 0xc4 || nr == 0xc5 ||
				  nr == 0xca || nr == 0xcb || nr == 0xcd);
	for (i = 0; i < 64; i++)
		buf[i] = small || kf_chance(r, 50) ? kf_below(r, 4) : kf_rand(r);
	/*
	 * Not a handle the model holds (kf_op_program destroys those): bit
	 * 31 set, and copied in whole, since DRM copies only the first
	 * @size bytes and zero-fills the rest.
	 */
	if (nr == DRM_COMMAND_BASE + DRM_VTPU_PROGRAM_DESTROY) {
		buf[0] |= 0x80000000;
		if (size < sizeof(struct drm_vtpu_program_destroy))
			size = sizeof(struct drm_vtpu_program_destroy);
		req = _IOC(dir, DRM_IOCTL_BASE, nr, size);
	}
	/* Large sizes read past buf: the kernel must only fault. */
	ret = kf_ioctl(kf_file_fd(f, r), req,
		       kf_chance(r, 80) && size <= sizeof(buf) ? (void *)buf :
		       (void *)kf_bad_ptr(r));
	kf_note(" nr %#x dir %u size %u -> %d", nr, dir, size, ret);
}

/* --- the end --------------------------------------------------------------------- */

void kf_model_teardown(void)
{
	int i;

	for (i = 0; i < kf.nsyncfiles; i++)
		close(kf.syncfiles[i]);
	kf.nsyncfiles = 0;
	for (i = 0; i < kf.nsyncobj_fds; i++)
		close(kf.syncobj_fds[i]);
	kf.nsyncobj_fds = 0;
	for (i = 0; i < kf.ndmabufs; i++)
		close(kf.dmabufs[i].fd);
	kf.ndmabufs = 0;
	while (kf.nmaps)
		map_drop(&kf.maps[0]);
	/* vgem's imports hold our buffers. */
	if (kf.vgem_fd >= 0)
		close(kf.vgem_fd);
	kf.vgem_fd = -1;
	for (i = 0; i < KF_MAX_FILES; i++)
		kf_file_close(&kf.files[i]);
}
