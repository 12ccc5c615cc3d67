// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * pool.c - per-execution memory. The scratch and profile buffers an
 * attempt reserves come from its device's pool of idle buffers and go
 * back to it when the attempt ends, so a run no longer creates, faults
 * in and zeroes its scratch every time (TensorFlow's BFC allocator and
 * PJRT keep device memory the same way). Reserving is a list walk under
 * a mutex; releasing is a push.
 *
 * A reservation takes the smallest idle buffer of the same placement
 * request that holds it without wasting more than a quarter of it, else
 * makes a new one, its size rounded up to whole pages. Idle memory is
 * bounded (POOL_IDLE_MAX: the oldest idle buffers go first past it) and
 * handed back when the device runs short: buffer.c trims the pool's HBM
 * before it would spill a buffer to the backing store or refuse one.
 * What is reserved is still released on every path (execute.c); only
 * the release now keeps the memory for the next run.
 */
#include <errno.h>
#include <stdlib.h>

#include "rt.h"

#define POOL_ROUND	4096ull
/* Idle bytes a device keeps at most, all placements together. */
#define POOL_IDLE_MAX	(1ull << 30)

void rt_pool_init(struct rt_pool *p)
{
	pthread_mutex_init(&p->lock, NULL);
	p->idle = NULL;
	p->idle_bytes = p->idle_hbm = 0;
	p->reuses = p->creates = 0;
}

/* @size in whole pages, as the pool makes its buffers. */
static bool fits(const struct vtpu_buffer *b, uint64_t size,
		 enum vtpu_placement p)
{
	return b->asked == p && b->size >= size && b->size - size <= b->size / 4;
}

static void unlink_idle(struct rt_pool *p, struct vtpu_buffer **link)
{
	struct vtpu_buffer *b = *link;

	*link = b->pool_next;
	b->pool_next = NULL;
	p->idle_bytes -= b->size;
	if (b->placed == VTPU_PLACE_HBM)
		p->idle_hbm -= b->size;
}

/* RT_EV_RESERVE / RT_EV_RELEASE: [0] size [1] placement [2] 1 if reused. */
static void pool_event(struct vtpu_buffer *b, int kind, bool reused)
{
	struct rt_event ev = {
		.kind = kind, .device = b->device->index, .core = -1,
		.ts_ns = rt_now_ns(), .value = { b->size, b->placed, reused },
	};

	rt_profile_event(b->client, &ev);
}

int rt_pool_get(struct vtpu_device *d, uint64_t size, enum vtpu_placement p,
		struct vtpu_buffer **out)
{
	struct rt_pool *pool = &d->pool;
	struct vtpu_buffer **link, **best = NULL, *b;
	int ret;

	if (size > UINT64_MAX - POOL_ROUND)
		return rt_set_error(d->client, E2BIG,
				    "%s: a reservation of %llu bytes", d->name,
				    (unsigned long long)size);
	size = (size + POOL_ROUND - 1) & ~(POOL_ROUND - 1);
	pthread_mutex_lock(&pool->lock);
	for (link = &pool->idle; *link; link = &(*link)->pool_next)
		if (fits(*link, size, p) &&
		    (!best || (*link)->size < (*best)->size))
			best = link;
	b = best ? *best : NULL;
	if (b) {
		unlink_idle(pool, best);
		pool->reuses++;
	} else {
		pool->creates++;
	}
	pthread_mutex_unlock(&pool->lock);

	if (!b) {
		ret = vtpu_buffer_create(d->client, d, size, p, &b);
		if (ret)
			return ret;
		b->asked = p;
	}
	pool_event(b, RT_EV_RESERVE, best != NULL);
	*out = b;
	return 0;
}

/* Unlinks idle buffers until @keep bytes are left; returns the list. */
static struct vtpu_buffer *evict(struct rt_pool *pool, uint64_t keep,
				 bool hbm_only)
{
	struct vtpu_buffer *gone = NULL, **link, **oldest;

	while (pool->idle_bytes > keep) {
		oldest = NULL;
		/* the list is newest first: the last match is the oldest */
		for (link = &pool->idle; *link; link = &(*link)->pool_next)
			if (!hbm_only || (*link)->placed == VTPU_PLACE_HBM)
				oldest = link;
		if (!oldest)
			break;
		{
			struct vtpu_buffer *b = *oldest;

			unlink_idle(pool, oldest);
			b->pool_next = gone;
			gone = b;
		}
	}
	return gone;
}

static uint64_t destroy_list(struct vtpu_buffer *b)
{
	uint64_t bytes = 0;

	while (b) {
		struct vtpu_buffer *next = b->pool_next;

		bytes += b->size;
		vtpu_buffer_destroy(b);
		b = next;
	}
	return bytes;
}

void RT_COMPLETION rt_pool_put(struct vtpu_buffer *b)
{
	struct rt_pool *pool;
	struct vtpu_buffer *gone;

	if (!b)
		return;
	pool = &b->device->pool;
	pool_event(b, RT_EV_RELEASE, false);
	pthread_mutex_lock(&pool->lock);
	b->pool_next = pool->idle;
	pool->idle = b;
	pool->idle_bytes += b->size;
	if (b->placed == VTPU_PLACE_HBM)
		pool->idle_hbm += b->size;
	gone = evict(pool, POOL_IDLE_MAX, false);
	pthread_mutex_unlock(&pool->lock);
	destroy_list(gone);
}

uint64_t rt_pool_trim(struct vtpu_device *d, bool hbm_only)
{
	struct rt_pool *pool = &d->pool;
	struct vtpu_buffer *gone;

	pthread_mutex_lock(&pool->lock);
	gone = hbm_only && !pool->idle_hbm ? NULL : evict(pool, 0, hbm_only);
	pthread_mutex_unlock(&pool->lock);
	return destroy_list(gone);
}

void rt_pool_fini(struct vtpu_device *d)
{
	rt_pool_trim(d, false);
	pthread_mutex_destroy(&d->pool.lock);
}
