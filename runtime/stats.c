// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * stats.c - the client's statistics: what execute.c counted under the
 * client lock, the compile cache's figures, and each device's load and
 * memory as the backend reports them now.
 */
#include <string.h>

#include "rt.h"

static void device_stats(struct vtpu_client *c, struct vtpu_stats *out,
			 uint64_t now)
{
	int i;

	out->ndevices = c->ndevices < 16 ? c->ndevices : 16;
	for (i = 0; i < out->ndevices; i++) {
		struct vtpu_device *d = c->devices[i];
		uint64_t busy = __atomic_load_n(&d->busy_ns, __ATOMIC_RELAXED);
		uint64_t wall = now > c->open_ns ? now - c->open_ns : 1;
		struct vtpu_device_info info;

		memset(&info, 0, sizeof(info));
		/* a device that cannot answer shows no memory, not garbage */
		c->ops->query(d, &info);
		/* several cores can be busy at once: cap at fully busy */
		out->device[i].utilisation = busy >= wall ? 1.0 :
					     (double)busy / (double)wall;
		out->device[i].busy_ns = busy;
		out->device[i].executions =
			__atomic_load_n(&d->jobs_completed, __ATOMIC_RELAXED);
		out->device[i].hbm_total = info.hbm_total;
		out->device[i].hbm_used = info.hbm_total - info.hbm_free;
		out->device[i].memory_utilisation = info.hbm_total ?
			(double)out->device[i].hbm_used / info.hbm_total : 0;
		pthread_mutex_lock(&d->pool.lock);
		out->device[i].pool_idle = d->pool.idle_bytes;
		out->device[i].pool_reuses = d->pool.reuses;
		out->device[i].pool_creates = d->pool.creates;
		pthread_mutex_unlock(&d->pool.lock);
	}
}

int vtpu_client_stats(struct vtpu_client *c, struct vtpu_stats *out)
{
	struct vtpu_cache_stats cs;
	uint64_t ok;

	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, __func__, "not a client");
	if (!out)
		return rt_bad_arg(c, __func__, "no out");
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	ok = out->executions - out->failures;
	out->avg_execution_ns = ok ? c->exec_ns_sum / (double)ok : 0;
	pthread_mutex_unlock(&c->lock);
	out->error_rate = out->executions ?
		(double)out->failures / (double)out->executions : 0;
	vtpu_cache_stats(c->cache, &cs);
	out->cache_hits = cs.hits;
	out->cache_misses = cs.misses;
	out->cache_hit_rate = cs.hits + cs.misses ?
		(double)cs.hits / (double)(cs.hits + cs.misses) : 0;
	device_stats(c, out, rt_now_ns());
	return 0;
}
