// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * client.c - the client: picks and opens a backend, owns the devices and
 * the compile cache, keeps the per-thread error message, and the small
 * helpers the other runtime files share (rt.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"

/*
 * The last failure's message, per thread. It belongs to the client it
 * was recorded for, so a message from another client reads as "". A
 * failed vtpu_client_create() leaves its message under NULL, which is
 * where a caller without a client looks for it.
 */
static __thread char err_msg[256];
static __thread const struct vtpu_client *err_client;

int rt_set_error(const struct vtpu_client *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	err_client = c;
	return -err;
}

const char *vtpu_client_error(const struct vtpu_client *c)
{
	return err_client == c ? err_msg : "";
}

uint64_t rt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The backend stores the result in c->devices[c->ndevices++]; the
 * client frees the struct after ops->close (the backend frees ->priv).
 */
struct vtpu_device *rt_device_alloc(struct vtpu_client *c, const char *name)
{
	struct vtpu_device *d;

	if (c->ndevices >= RT_MAX_DEVICES)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->client = c;
	d->index = c->ndevices;
	snprintf(d->name, sizeof(d->name), "%s", name);
	rt_pool_init(&d->pool);
	return d;
}

void rt_job_done(struct rt_job *job)
{
	/* Read before waking anyone: a waiter may free the job at once. */
	void (*cb)(struct rt_job *) = job->on_done;

	pthread_mutex_lock(&job->done_lock);
	if (!job->done_ns)
		job->done_ns = rt_now_ns();
	job->done = true;
	pthread_cond_broadcast(&job->done_cond);
	pthread_mutex_unlock(&job->done_lock);
	if (cb)
		cb(job);
}

struct vtpu_device *rt_pick_device(struct vtpu_client *c)
{
	struct vtpu_device *best = NULL;
	uint64_t best_jobs = 0, best_busy = 0;
	int i;

	for (i = 0; i < c->ndevices; i++) {
		struct vtpu_device *d = c->devices[i];
		uint64_t jobs = __atomic_load_n(&d->jobs_in_flight,
						__ATOMIC_RELAXED);
		uint64_t busy = __atomic_load_n(&d->busy_ns, __ATOMIC_RELAXED);

		if (!best || jobs < best_jobs ||
		    (jobs == best_jobs && busy < best_busy)) {
			best = d;
			best_jobs = jobs;
			best_busy = busy;
		}
	}
	return best;
}

void vtpu_client_options_init(struct vtpu_client_options *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = VTPU_BACKEND_AUTO;
	o->host_devices = 1;
	o->host_cores = 2;
	o->host_hbm_size = 256ull << 20;
	o->host_vmem_size = 1ull << 20;
	o->max_retries = 3;
	o->cache_entries = 64;
	o->cache_dir = NULL;
}

/* AUTO defers to VTPU_BACKEND; a value we do not know is an error. */
static int resolve_backend(struct vtpu_client *c, enum vtpu_backend *b)
{
	const char *env = getenv("VTPU_BACKEND");

	if (*b != VTPU_BACKEND_AUTO || !env || !*env || !strcmp(env, "auto"))
		return 0;
	if (!strcmp(env, "accel"))
		*b = VTPU_BACKEND_ACCEL;
	else if (!strcmp(env, "host"))
		*b = VTPU_BACKEND_HOST;
	else
		return rt_set_error(c, EINVAL,
				    "VTPU_BACKEND=%s: expected auto, accel or host",
				    env);
	return 0;
}

/* Whatever the backend said, tell the user the two ways out. */
static int no_accel(struct vtpu_client *c)
{
	char why[sizeof(err_msg)] = "";

	if (err_client == c)
		memcpy(why, err_msg, sizeof(why));
	return rt_set_error(c, ENODEV,
			    "no vtpu accel device%s%s: load the driver (modprobe vtpu, or insmod vtpu.ko) or use the host backend (VTPU_BACKEND=host)",
			    *why ? ": " : "", why);
}

static int open_backend(struct vtpu_client *c, enum vtpu_backend b)
{
	int ret;

	if (b == VTPU_BACKEND_HOST) {
		c->ops = &rt_backend_host;
		return c->ops->open(c, &c->opts);
	}
	c->ops = &rt_backend_accel;
	ret = c->ops->open(c, &c->opts);
	if (ret == -ENODEV && b == VTPU_BACKEND_ACCEL)
		return no_accel(c);
	if (ret != -ENODEV)
		return ret;
	/* auto: no vtpu device here, the in-process executor will do */
	if (err_client == c)
		err_msg[0] = '\0';
	c->ops = &rt_backend_host;
	return c->ops->open(c, &c->opts);
}

/* What the compiler must know: the smallest device bounds every program. */
static int init_params(struct vtpu_client *c)
{
	struct vtpu_device_info info;
	int i, ret;

	memset(&c->params, 0, sizeof(c->params));
	for (i = 0; i < c->ndevices; i++) {
		struct vtpu_device *d = c->devices[i];

		memset(&info, 0, sizeof(info));
		ret = c->ops->query(d, &info);
		if (ret)
			return rt_set_error(c, -ret, "%s: query failed: %s",
					    d->name, strerror(-ret));
		if (!i || d->vmem_size < c->params.vmem_size)
			c->params.vmem_size = d->vmem_size;
		if (!i || (uint32_t)d->cores < c->params.num_cores)
			c->params.num_cores = d->cores;
		if (!i || info.hbm_total < c->params.hbm_size)
			c->params.hbm_size = info.hbm_total;
		d->hbm_total = info.hbm_total;
	}
	return 0;
}

static void free_devices(struct vtpu_client *c)
{
	int i;

	for (i = 0; i < c->ndevices; i++) {
		rt_pool_fini(c->devices[i]);
		free(c->devices[i]);
	}
	c->ndevices = 0;
}

static struct vtpu_client *client_alloc(const struct vtpu_client_options *o)
{
	struct vtpu_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (o)
		c->opts = *o;
	else
		vtpu_client_options_init(&c->opts);
	c->inject_left = c->opts.inject_failures;
	c->open_ns = rt_now_ns();
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	return c;
}

static void client_free(struct vtpu_client *c)
{
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int vtpu_client_create(const struct vtpu_client_options *o,
		       struct vtpu_client **out_client)
{
	struct vtpu_client *c = client_alloc(o);
	enum vtpu_backend b;
	int ret;

	*out_client = NULL;
	if (!c)
		return rt_set_error(NULL, ENOMEM, "out of memory");
	b = c->opts.backend;
	ret = resolve_backend(c, &b);
	if (ret)
		goto err_free;
	ret = open_backend(c, b);
	if (ret)
		goto err_devices;
	if (!c->ndevices) {
		ret = rt_set_error(c, ENODEV, "%s backend found no device",
				   c->ops->name);
		goto err_close;
	}
	ret = init_params(c);
	if (ret)
		goto err_close;
	c->cache = vtpu_cache_new(c->opts.cache_entries > 0 ?
				  (size_t)c->opts.cache_entries : 0,
				  c->opts.cache_dir);
	if (!c->cache) {
		ret = rt_set_error(c, ENOMEM, "out of memory for the cache");
		goto err_close;
	}
	*out_client = c;
	return 0;

err_close:
	c->ops->close(c);
err_devices:
	free_devices(c);
err_free:
	/* The client is gone: leave the message where NULL finds it. */
	if (err_client == c)
		err_client = NULL;
	client_free(c);
	return ret;
}

void vtpu_client_destroy(struct vtpu_client *c)
{
	int i;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	while (c->inflight)
		pthread_cond_wait(&c->idle, &c->lock);
	pthread_mutex_unlock(&c->lock);
	/* the pool's buffers go while the backend can still free them */
	for (i = 0; i < c->ndevices; i++)
		rt_pool_trim(c->devices[i], false);
	c->ops->close(c);
	free_devices(c);
	vtpu_cache_free(c->cache);
	if (err_client == c)
		err_client = NULL;
	client_free(c);
}

const char *vtpu_client_backend(const struct vtpu_client *c)
{
	return c->ops->name;
}

int vtpu_client_device_count(const struct vtpu_client *c)
{
	return c->ndevices;
}

int vtpu_client_device(struct vtpu_client *c, int index,
		       struct vtpu_device **out_device)
{
	if (index < 0 || index >= c->ndevices)
		return rt_set_error(c, EINVAL, "no device %d (the client has %d)",
				    index, c->ndevices);
	*out_device = c->devices[index];
	return 0;
}

int vtpu_device_info(struct vtpu_device *d, struct vtpu_device_info *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	ret = d->client->ops->query(d, out);
	if (ret)
		return rt_set_error(d->client, -ret, "%s: query failed: %s",
				    d->name, strerror(-ret));
	out->index = d->index;
	snprintf(out->name, sizeof(out->name), "%s", d->name);
	out->jobs_in_flight = __atomic_load_n(&d->jobs_in_flight,
					      __ATOMIC_RELAXED);
	out->jobs_completed = __atomic_load_n(&d->jobs_completed,
					      __ATOMIC_RELAXED);
	return 0;
}
