/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

/*
 * vgem, the other DRM driver the tests and the fuzzer share buffers and
 * fences with: finding its card, and a fence only the caller signals.
 * Header-only, for the kselftests and vtpu-kfuzz alike.
 */
#ifndef VTPU_VGEM_H
#define VTPU_VGEM_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <xf86drm.h>

/* A vgem card (loading vgem if need be), or -1. */
static inline int vtpu_vgem_open(void)
{
	char path[32];

	if (system("modprobe vgem 2>/dev/null")) {
		/* Not fatal: it may be built in, or already loaded. */
	}
	for (int i = 0; i < 16; i++) {
		drmVersionPtr v;
		int fd;

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		v = drmGetVersion(fd);
		if (v && !strcmp(v->name, "vgem")) {
			drmFreeVersion(v);
			return fd;
		}
		if (v)
			drmFreeVersion(v);
		close(fd);
	}
	return -1;
}

/* vgem's fence ioctls (include/uapi/drm/vgem_drm.h; libdrm lacks it). */
struct vtpu_vgem_fence_attach {
	__u32 handle;
	__u32 flags;		/* 1: a write fence */
	__u32 out_fence;
	__u32 pad;
};

struct vtpu_vgem_fence_signal {
	__u32 fence;
	__u32 flags;
};

#define VTPU_IOCTL_VGEM_FENCE_ATTACH \
	DRM_IOWR(DRM_COMMAND_BASE + 0x1, struct vtpu_vgem_fence_attach)
#define VTPU_IOCTL_VGEM_FENCE_SIGNAL \
	DRM_IOW(DRM_COMMAND_BASE + 0x2, struct vtpu_vgem_fence_signal)

/*
 * A fence the test signals itself (vgem_fence_signal()), put in syncobj
 * @sync of vtpu file @fd: jobs that wait on it wait, without a clock,
 * however slow the kernel (vgem signals it by itself after 10 s). Its
 * vgem fence id is *@fence.
 */
static inline int vtpu_vgem_held_fence(int vgem, int fd, __u32 sync,
				       __u32 *fence)
{
	struct drm_mode_create_dumb d = { .width = 1024, .height = 1, .bpp = 32 };
	struct dma_buf_export_sync_file ex = { .flags = DMA_BUF_SYNC_READ };
	struct vtpu_vgem_fence_attach at = { .flags = 1 };
	int dmabuf, ret;

	if (drmIoctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, &d))
		return -errno;
	at.handle = d.handle;
	if (drmIoctl(vgem, VTPU_IOCTL_VGEM_FENCE_ATTACH, &at))
		return -errno;
	*fence = at.out_fence;
	if (drmPrimeHandleToFD(vgem, d.handle, DRM_CLOEXEC, &dmabuf))
		return -errno;
	/* The fences a reader waits for: the write fence just attached. */
	ret = ioctl(dmabuf, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &ex) ? -errno : 0;
	close(dmabuf);
	if (ret)
		return ret;
	ret = drmSyncobjImportSyncFile(fd, sync, ex.fd);
	close(ex.fd);
	return ret;
}

static inline int vtpu_vgem_signal(int vgem, __u32 fence)
{
	struct vtpu_vgem_fence_signal sg = { .fence = fence };

	return drmIoctl(vgem, VTPU_IOCTL_VGEM_FENCE_SIGNAL, &sg) ? -errno : 0;
}

#endif /* VTPU_VGEM_H */
