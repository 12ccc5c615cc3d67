// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * buffer.c - device buffers: a backend BO plus its CPU mapping. Every
 * allocation and release goes to the profile with a memory snapshot, so
 * a trace shows how HBM filled up and fragmented over time.
 *
 * HBM the execution memory pool keeps idle is given back before a buffer
 * would spill to the backing store or be refused for want of HBM: the
 * pool must never cost a caller HBM it could have had.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/*
 * RT_EV_MEMORY (profile.c's contract): HBM used, free, largest free
 * block, free block count (the backend's ops->free_blocks; 0 when it
 * cannot tell). free vs largest free is the external fragmentation a
 * viewer plots.
 */
static void memory_snapshot(struct vtpu_device *d)
{
	struct vtpu_device_info info;
	struct rt_event ev = {
		.kind = RT_EV_MEMORY, .device = d->index, .core = -1,
		.ts_ns = rt_now_ns(),
	};

	memset(&info, 0, sizeof(info));
	if (d->client->ops->query(d, &info))
		return;
	ev.value[0] = info.hbm_total - info.hbm_free;
	ev.value[1] = info.hbm_free;
	ev.value[2] = info.hbm_largest_free;
	ev.value[3] = d->client->ops->free_blocks ?
		      d->client->ops->free_blocks(d, &info) : 0;
	rt_profile_event(d->client, &ev);
}

/* RT_EV_ALLOC / RT_EV_FREE values: size, placement. */
static void buffer_event(struct vtpu_buffer *b, enum rt_event_kind kind)
{
	struct rt_event ev = {
		.kind = kind, .device = b->device->index, .core = -1,
		.ts_ns = rt_now_ns(), .value = { b->size, b->placed },
	};

	/* the snapshot queries the device: only for a session */
	if (!rt_profiling(b->client))
		return;
	rt_profile_event(b->client, &ev);
	memory_snapshot(b->device);
}

/*
 * The backend's buffer; when HBM is short only because the pool keeps
 * some idle, the pool gives it back and the buffer is made again.
 */
static int bo_create(struct vtpu_device *d, uint64_t size,
		     enum vtpu_placement p, struct rt_bo **bo,
		     enum vtpu_placement *placed)
{
	const struct rt_backend_ops *ops = d->client->ops;
	int ret = ops->bo_create(d, size, p, bo, placed);
	bool short_of_hbm = (ret == -ENOSPC && p == VTPU_PLACE_HBM) ||
			    (!ret && p == VTPU_PLACE_AUTO &&
			     *placed == VTPU_PLACE_HOST);

	if (!short_of_hbm || !rt_pool_trim(d, true))
		return ret;
	if (!ret)
		ops->bo_destroy(d, *bo);
	return ops->bo_create(d, size, p, bo, placed);
}

int vtpu_buffer_create(struct vtpu_client *c, struct vtpu_device *d,
		       uint64_t size, enum vtpu_placement p,
		       struct vtpu_buffer **out_buffer)
{
	const struct rt_backend_ops *ops;
	struct vtpu_buffer *b;
	int ret;

	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, __func__, "not a client");
	if (!out_buffer)
		return rt_bad_arg(c, __func__, "no out_buffer");
	*out_buffer = NULL;
	ops = c->ops;
	if (d && !RT_LIVE(d, RT_KIND_DEVICE))
		return rt_bad_arg(c, __func__, "not a device");
	if (!size || p > VTPU_PLACE_HOST)
		return rt_set_error(c, EINVAL, "buffer: bad size %llu or placement %d",
				    (unsigned long long)size, (int)p);
	if (d && d->client != c)
		return rt_set_error(c, EINVAL, "buffer: device of another client");
	if (!d)
		d = rt_pick_device(c);
	b = calloc(1, sizeof(*b));
	if (!b)
		return rt_set_error(c, ENOMEM, "out of memory");
	b->client = c;
	b->device = d;
	b->size = size;
	b->asked = p;
	ret = bo_create(d, size, p, &b->bo, &b->placed);
	if (ret) {
		free(b);
		return rt_set_error(c, -ret, "%s: cannot allocate %llu bytes: %s",
				    d->name, (unsigned long long)size,
				    strerror(-ret));
	}
	b->map = ops->bo_map(d, b->bo);
	if (!b->map) {
		ops->bo_destroy(d, b->bo);
		free(b);
		return rt_set_error(c, ENOMEM, "%s: cannot map a buffer",
				    d->name);
	}
	rt_obj_add(c, &b->obj, RT_KIND_BUFFER);
	buffer_event(b, RT_EV_ALLOC);
	*out_buffer = b;
	return 0;
}

void vtpu_buffer_destroy(struct vtpu_buffer *b)
{
	if (!b)
		return;
	if (!RT_LIVE(b, RT_KIND_BUFFER)) {
		rt_bad_arg(NULL, __func__, "not a live buffer (destroyed twice?)");
		return;
	}
	rt_obj_del(b->client, &b->obj);
	b->client->ops->bo_destroy(b->device, b->bo);
	/* after the release, so the snapshot shows the memory back */
	buffer_event(b, RT_EV_FREE);
	free(b);
}

/* Overflow-safe: offset + size may wrap around. */
static bool in_range(const struct vtpu_buffer *b, uint64_t offset,
		     uint64_t size)
{
	return offset <= b->size && size <= b->size - offset;
}

int vtpu_buffer_upload(struct vtpu_buffer *b, uint64_t offset,
		       const void *data, uint64_t size)
{
	if (!RT_LIVE(b, RT_KIND_BUFFER))
		return rt_bad_arg(NULL, __func__, "not a buffer");
	if (!data && size)
		return rt_bad_arg(b->client, __func__, "no data");
	if (!in_range(b, offset, size))
		return rt_set_error(b->client, EINVAL,
				    "upload of %llu bytes at %llu: the buffer has %llu",
				    (unsigned long long)size,
				    (unsigned long long)offset,
				    (unsigned long long)b->size);
	if (size)
		memcpy((char *)b->map + offset, data, size);
	return 0;
}

int vtpu_buffer_download(struct vtpu_buffer *b, uint64_t offset, void *data,
			 uint64_t size)
{
	if (!RT_LIVE(b, RT_KIND_BUFFER))
		return rt_bad_arg(NULL, __func__, "not a buffer");
	if (!data && size)
		return rt_bad_arg(b->client, __func__, "no data");
	if (!in_range(b, offset, size))
		return rt_set_error(b->client, EINVAL,
				    "download of %llu bytes at %llu: the buffer has %llu",
				    (unsigned long long)size,
				    (unsigned long long)offset,
				    (unsigned long long)b->size);
	if (size)
		memcpy(data, (const char *)b->map + offset, size);
	return 0;
}

uint64_t vtpu_buffer_size(const struct vtpu_buffer *b)
{
	if (!RT_LIVE(b, RT_KIND_BUFFER)) {
		rt_bad_arg(NULL, __func__, "not a buffer");
		return 0;
	}
	return b->size;
}

enum vtpu_placement vtpu_buffer_placement(const struct vtpu_buffer *b)
{
	if (!RT_LIVE(b, RT_KIND_BUFFER)) {
		rt_bad_arg(NULL, __func__, "not a buffer");
		return VTPU_PLACE_AUTO;
	}
	return b->placed;
}
