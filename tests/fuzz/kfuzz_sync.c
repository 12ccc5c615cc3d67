// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * Syncobjs and sync_files for vtpu-kfuzz: DRM's generic syncobj ioctls
 * on the accel file (create, destroy, wait, reset, signal, timeline
 * points, query, transfer, eventfd, handle/fd conversion, sync_file
 * export and import) and the sync_file ioctls (poll, info, merge).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "kfuzz.h"

#ifndef DRM_IOCTL_SYNCOBJ_EVENTFD
/* Linux 6.6; libdrm 2.4.114's drm.h predates it. */
struct drm_syncobj_eventfd {
	__u32 handle;
	__u32 flags;
	__u64 point;
	__s32 fd;
	__u32 pad;
};

#define DRM_IOCTL_SYNCOBJ_EVENTFD DRM_IOWR(0xCF, struct drm_syncobj_eventfd)
#endif

/* drm_syncobj_handle as of Linux 6.11: a timeline point at the end. */
struct kf_syncobj_handle {
	__u32 handle;
	__u32 flags;
	__s32 fd;
	__u32 pad;
	__u64 point;
};

#define KF_IOCTL_SYNCOBJ_HANDLE_TO_FD \
	DRM_IOWR(0xC1, struct kf_syncobj_handle)
#define KF_IOCTL_SYNCOBJ_FD_TO_HANDLE \
	DRM_IOWR(0xC2, struct kf_syncobj_handle)

/* --- syncobjs ------------------------------------------------------------------------ */

struct kf_syncobj *kf_syncobj_pick(struct kf_file *f, struct kf_rng *r)
{
	return f->nsyncobjs ? &f->syncobjs[kf_below(r, f->nsyncobjs)] : NULL;
}

static void syncobj_add(struct kf_file *f, uint32_t handle)
{
	int i;

	for (i = 0; i < f->nsyncobjs; i++)
		if (f->syncobjs[i].handle == handle)
			return;
	if (f->nsyncobjs < KF_MAX_SYNCOBJS)
		f->syncobjs[f->nsyncobjs++] =
			(struct kf_syncobj){ .handle = handle };
}

void kf_syncfile_add(int fd)
{
	if (kf.nsyncfiles == KF_MAX_SYNCFILES)
		close(kf.syncfiles[--kf.nsyncfiles]);
	kf.syncfiles[kf.nsyncfiles++] = fd;
}

/* A handle for @f: a live syncobj mostly, else anything. */
static uint32_t sync_handle(struct kf_file *f, struct kf_rng *r)
{
	struct kf_syncobj *s = kf_syncobj_pick(f, r);

	return s && kf_chance(r, 90) ? s->handle :
	       kf_chance(r, 50) ? 0 : (uint32_t)kf_rand(r);
}

static uint64_t sync_point(struct kf_rng *r, uint32_t handle,
			   struct kf_file *f)
{
	int i;

	for (i = 0; i < f->nsyncobjs; i++)
		if (f->syncobjs[i].handle == handle && kf_chance(r, 80))
			return f->syncobjs[i].point ?
			       1 + kf_below(r, f->syncobjs[i].point) : 0;
	return kf_chance(r, 50) ? kf_below(r, 4) : kf_rand(r);
}

/* A short absolute deadline, 0 (poll), or one in the past. */
static int64_t short_deadline(struct kf_rng *r)
{
	switch (kf_below(r, 6)) {
	case 0: return 0;
	case 1: return -1;
	case 2: return (int64_t)(kf_now() * 1e9) - 1000000;
	default: return (int64_t)((kf_now() + kf_below(r, 20) / 1000.0) * 1e9);
	}
}

static void syncobj_wait(struct kf_rng *r, struct kf_file *f, int fd,
			 bool timeline)
{
	uint32_t handles[4];
	uint64_t points[4];
	unsigned int n = 1 + kf_below(r, 4), i;
	uint32_t flags = kf_below(r, 8) & ~DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
	int ret;

	/* WAIT_FOR_SUBMIT waits for a fence to appear: short deadlines only. */
	if (kf_chance(r, 20))
		flags |= DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
	if (kf_chance(r, 3))
		flags |= 1u << kf_below(r, 32);
	for (i = 0; i < n; i++) {
		handles[i] = sync_handle(f, r);
		points[i] = sync_point(r, handles[i], f);
	}
	if (timeline) {
		struct drm_syncobj_timeline_wait w = {
			.handles = (uintptr_t)handles, .points = (uintptr_t)points,
			.timeout_nsec = short_deadline(r), .count_handles = n,
			.flags = flags,
		};

		if (kf_chance(r, 5))
			w.points = kf_bad_ptr(r);
		if (kf_chance(r, 3))
			w.count_handles = kf_chance(r, 50) ? 0 :
					  kf_big_count(r);
		ret = kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);
	} else {
		struct drm_syncobj_wait w = {
			.handles = (uintptr_t)handles,
			.timeout_nsec = short_deadline(r), .count_handles = n,
			.flags = flags,
		};

		if (kf_chance(r, 5))
			w.handles = kf_bad_ptr(r);
		if (kf_chance(r, 3))
			w.count_handles = kf_chance(r, 50) ? 0 :
					  kf_big_count(r);
		ret = kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w);
	}
	kf_note(" %swait %u handles flags %#x -> %d", timeline ? "timeline " : "",
		n, flags, ret);
}

/* RESET, SIGNAL, TIMELINE_SIGNAL, QUERY. */
static void syncobj_array(struct kf_rng *r, struct kf_file *f, int fd)
{
	static const unsigned long reqs[] = {
		DRM_IOCTL_SYNCOBJ_RESET, DRM_IOCTL_SYNCOBJ_SIGNAL,
		DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, DRM_IOCTL_SYNCOBJ_QUERY,
	};
	unsigned int which = kf_below(r, 4), n = 1 + kf_below(r, 4), i;
	uint32_t handles[4];
	uint64_t points[4];
	int ret;

	for (i = 0; i < n; i++) {
		struct kf_syncobj *s = kf_syncobj_pick(f, r);

		handles[i] = sync_handle(f, r);
		points[i] = 0;
		if (which == 2 && s && s->handle == handles[i])
			points[i] = s->point += 1 + kf_below(r, 3);
		else if (which == 2)
			points[i] = kf_rand(r);
	}
	if (which < 2) {
		struct drm_syncobj_array a = {
			.handles = (uintptr_t)handles, .count_handles = n,
			.pad = kf_chance(r, 3),
		};

		if (kf_chance(r, 5))
			a.handles = kf_bad_ptr(r);
		ret = kf_ioctl(fd, reqs[which], &a);
	} else {
		struct drm_syncobj_timeline_array a = {
			.handles = (uintptr_t)handles, .points = (uintptr_t)points,
			.count_handles = n,
			.flags = kf_chance(r, 30) ?
				 DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED : 0,
		};

		if (kf_chance(r, 5))
			a.points = kf_bad_ptr(r);
		if (kf_chance(r, 3))
			a.flags = kf_rand(r);
		ret = kf_ioctl(fd, reqs[which], &a);
	}
	kf_note(" %s %u handles -> %d",
		(const char *[]){ "reset", "signal", "timeline_signal",
				  "query" }[which], n, ret);
}

static void syncobj_fd(struct kf_rng *r, struct kf_file *f, int fd)
{
	struct kf_syncobj_handle h = { 0 };
	unsigned long req;
	int ret;

	if (kf_chance(r, 50)) {
		/* To an fd: a syncobj file, or a sync_file of its fence. */
		h.handle = sync_handle(f, r);
		h.flags = kf_chance(r, 50) ?
			  DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE : 0;
		if (kf_chance(r, 10))
			h.flags = kf_below(r, 16);
		h.point = kf_chance(r, 80) ? 0 : sync_point(r, h.handle, f);
		h.fd = -1;
		req = kf_chance(r, 50) ? KF_IOCTL_SYNCOBJ_HANDLE_TO_FD :
					 DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD;
		ret = kf_ioctl(fd, req, &h);
		kf_note(" handle_to_fd %u flags %#x -> %d fd %d", h.handle,
			h.flags, ret, ret ? -1 : h.fd);
		if (ret)
			return;
		if (h.flags & DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE) {
			kf_syncfile_add(h.fd);
		} else if (kf.nsyncobj_fds < KF_MAX_SYNCFILES) {
			kf.syncobj_fds[kf.nsyncobj_fds++] = h.fd;
		} else {
			close(h.fd);
		}
		return;
	}
	/* From an fd: a new syncobj, or a sync_file into an existing one. */
	if (kf_chance(r, 50) && kf.nsyncfiles) {
		h.fd = kf.syncfiles[kf_below(r, kf.nsyncfiles)];
		h.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE;
		h.handle = sync_handle(f, r);
	} else if (kf.nsyncobj_fds && kf_chance(r, 80)) {
		h.fd = kf.syncobj_fds[kf_below(r, kf.nsyncobj_fds)];
	} else {
		h.fd = kf_junk_fd(r);
		h.flags = kf_below(r, 4);
	}
	h.point = kf_chance(r, 80) ? 0 : kf_rand(r);
	req = kf_chance(r, 50) ? KF_IOCTL_SYNCOBJ_FD_TO_HANDLE :
				 DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE;
	ret = kf_ioctl(fd, req, &h);
	kf_note(" fd_to_handle fd %d flags %#x -> %d handle %u", h.fd, h.flags,
		ret, h.handle);
	if (!ret && !h.flags)
		syncobj_add(f, h.handle);
}

void kf_op_syncobj(struct kf_rng *r)
{
	struct kf_file *f = kf_file_pick(r);
	struct drm_syncobj_create c = { 0 };
	struct drm_syncobj_destroy d = { 0 };
	struct drm_syncobj_transfer t = { 0 };
	struct drm_syncobj_eventfd e = { 0 };
	struct kf_syncobj *s;
	int fd, efd, ret;

	if (!f)
		return;
	fd = kf_file_fd(f, r);
	switch (kf_below(r, 12)) {
	case 0: case 1:
		if (f->nsyncobjs == KF_MAX_SYNCOBJS)
			goto destroy;
		c.flags = kf_chance(r, 30) ? DRM_SYNCOBJ_CREATE_SIGNALED : 0;
		if (kf_chance(r, 5))
			c.flags = kf_rand(r);
		ret = kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c);
		kf_note(" create flags %#x -> %d handle %u", c.flags, ret,
			c.handle);
		if (!ret)
			syncobj_add(f, c.handle);
		break;
	case 2:
destroy:
		d.handle = sync_handle(f, r);
		d.pad = kf_chance(r, 5);
		ret = kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
		kf_note(" destroy %u -> %d", d.handle, ret);
		for (s = f->syncobjs; !ret && s < f->syncobjs + f->nsyncobjs; s++)
			if (s->handle == d.handle) {
				*s = f->syncobjs[--f->nsyncobjs];
				break;
			}
		break;
	case 3: case 4:
		syncobj_wait(r, f, fd, kf_chance(r, 50));
		break;
	case 5: case 6:
		syncobj_array(r, f, fd);
		break;
	case 7:
		t.src_handle = sync_handle(f, r);
		t.dst_handle = sync_handle(f, r);
		t.src_point = sync_point(r, t.src_handle, f);
		s = kf_syncobj_pick(f, r);
		if (s && s->handle == t.dst_handle && kf_chance(r, 70))
			t.dst_point = s->point += 1;
		else
			t.dst_point = kf_chance(r, 50) ? 0 : kf_rand(r);
		t.flags = kf_chance(r, 90) ? 0 : kf_rand(r) &
			  ~DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
		t.pad = kf_chance(r, 3);
		ret = kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_TRANSFER, &t);
		kf_note(" transfer %u:%llu -> %u:%llu -> %d", t.src_handle,
			(unsigned long long)t.src_point, t.dst_handle,
			(unsigned long long)t.dst_point, ret);
		break;
	case 8:
		e.handle = sync_handle(f, r);
		e.point = sync_point(r, e.handle, f);
		e.flags = kf_chance(r, 80) ? kf_below(r, 2) * 4 : kf_rand(r);
		efd = kf_chance(r, 90) ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) :
					 -1;
		e.fd = efd >= 0 ? efd : kf_junk_fd(r);
		ret = kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_EVENTFD, &e);
		kf_note(" eventfd %u:%llu -> %d", e.handle,
			(unsigned long long)e.point, ret);
		/* The syncobj keeps its own reference to the eventfd. */
		if (efd >= 0)
			close(efd);
		break;
	default:
		syncobj_fd(r, f, fd);
		break;
	}
}

/* --- sync_files -------------------------------------------------------------------------- */

void kf_op_syncfile(struct kf_rng *r)
{
	struct sync_fence_info fences[4];
	struct sync_merge_data m = { 0 };
	struct sync_file_info info = { 0 };
	struct pollfd p;
	int *sf, ret;

	if (!kf.nsyncfiles)
		return;
	sf = &kf.syncfiles[kf_below(r, kf.nsyncfiles)];
	switch (kf_below(r, 5)) {
	case 0:
		p = (struct pollfd){ .fd = *sf, .events = POLLIN };
		ret = poll(&p, 1, kf_below(r, 10));
		kf_note(" poll %d -> %d", *sf, ret);
		break;
	case 1: case 2:
		info.num_fences = kf_chance(r, 30) ? 0 : kf_below(r, 5);
		info.sync_fence_info = kf_chance(r, 90) ? (uintptr_t)fences :
							  kf_bad_ptr(r);
		if (kf_chance(r, 5))
			info.flags = kf_rand(r);
		ret = kf_ioctl(*sf, SYNC_IOC_FILE_INFO, &info);
		kf_note(" info %d num %u -> %d status %d", *sf, info.num_fences,
			ret, info.status);
		break;
	case 3:
		snprintf(m.name, sizeof(m.name), "kfuzz-%u", kf_below(r, 100));
		m.fd2 = kf.syncfiles[kf_below(r, kf.nsyncfiles)];
		if (kf_chance(r, 5))
			m.fd2 = kf_junk_fd(r);
		m.flags = kf_chance(r, 95) ? 0 : kf_rand(r);
		ret = kf_ioctl(*sf, SYNC_IOC_MERGE, &m);
		kf_note(" merge %d %d -> %d", *sf, m.fd2, ret);
		if (!ret)
			kf_syncfile_add(m.fence);
		break;
	default:
		kf_note(" close %d", *sf);
		close(*sf);
		*sf = kf.syncfiles[--kf.nsyncfiles];
		break;
	}
}

