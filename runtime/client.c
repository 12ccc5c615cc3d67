// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * client.c - the client: picks and opens a backend, owns the devices and
 * the compile cache, keeps the per-thread error message, and the small
 * helpers the other runtime files share (rt.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
	d->obj.magic = RT_MAGIC(RT_KIND_DEVICE);
	d->client = c;
	d->index = c->ndevices;
	snprintf(d->name, sizeof(d->name), "%s", name);
	rt_pool_init(&d->pool);
	return d;
}

void RT_COMPLETION rt_job_done(struct rt_job *job)
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

void rt_completion_prefetch(void)
{
	/* what the completion path calls in the C library */
	static void (*const libc[])(void) = {
		(void (*)(void))pthread_mutex_lock,
		(void (*)(void))pthread_mutex_unlock,
		(void (*)(void))pthread_cond_broadcast,
		(void (*)(void))pthread_cond_destroy,
		(void (*)(void))pthread_mutex_destroy,
		(void (*)(void))free,
	};
	const char *p;
	size_t i;

	for (p = __start_vtpu_completion; p < __stop_vtpu_completion; p += 64)
		__builtin_prefetch(p);
	for (i = 0; i < sizeof(libc) / sizeof(libc[0]); i++)
		__builtin_prefetch((const void *)(uintptr_t)libc[i]);
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
	if (!o)
		return;
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
		c->devices[i]->obj.magic = RT_MAGIC_DEAD;
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
	c->obj.magic = RT_MAGIC(RT_KIND_CLIENT);
	c->objs.next = c->objs.prev = &c->objs;
	c->inject_left = c->opts.inject_failures;
	c->open_ns = rt_now_ns();
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	return c;
}

static void client_free(struct vtpu_client *c)
{
	c->obj.magic = RT_MAGIC_DEAD;
	free(c->cache_dir);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* ---- the compile cache's directory ---------------------------------------- */

/* Appends "@what @dir: @why" to the client's note of passed-over choices. */
static void cache_note(struct vtpu_client *c, const char *what,
		       const char *dir, const char *why)
{
	size_t len = strlen(c->cache_note);

	snprintf(c->cache_note + len, sizeof(c->cache_note) - len, "%s%s %s: %s",
		 len ? "; " : "", what, dir, why);
}

/* Creates @dir (0700) and its missing parents; 0 or -errno. */
static int make_dirs(const char *dir)
{
	char path[4096];
	size_t len = strlen(dir);
	char *p;

	if (!len || len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (p = path + 1; ; p++) {
		if (*p && *p != '/')
			continue;
		if (p[-1] != '/') {
			char end = *p;

			*p = '\0';
			if (mkdir(path, 0700) && errno != EEXIST)
				return -errno;
			*p = end;
		}
		if (!*p)
			break;
	}
	return 0;
}

/*
 * A directory shared by everyone (/tmp) is only used through a directory
 * of our own: an entry someone else planted there must not be trusted.
 */
static int check_private(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid())
		return -EPERM;
	if ((st.st_mode & 077) && chmod(dir, 0700))
		return -errno;
	return 0;
}

/*
 * Whether the cache can keep programs in @dir: created if missing, and a
 * file made and removed there. The compile cache itself fails quietly
 * (every compile a miss), so this is where a read-only $HOME shows.
 */
static int probe_dir(const char *dir, bool private)
{
	char path[4096 + 16];
	int fd, ret = make_dirs(dir);

	if (!ret && private)
		ret = check_private(dir);
	if (ret)
		return ret;
	if (snprintf(path, sizeof(path), "%s/.probe-XXXXXX", dir) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	unlink(path);
	close(fd);
	return 0;
}

/* A place the cache may live: @base @sub (and the uid when @private). */
struct cache_cand {
	const char *what, *base, *sub;
	bool private;
};

/* The first writable of vtpu.h's list; NULL and a note when none is. */
static int choose_cache_dir(struct vtpu_client *c)
{
	static int told;
	const char *opt = c->opts.cache_dir, *env;
	struct cache_cand cand[5];
	char dir[4096];
	int n = 0, i, ret;

	c->cache_note[0] = '\0';
	if (opt && !*opt)
		return 0;	/* memory only, as asked */
	if (opt)
		cand[n++] = (struct cache_cand){ "cache_dir", opt, "", false };
	env = getenv("VTPU_CACHE_DIR");
	if (env && *env)
		cand[n++] = (struct cache_cand){ "$VTPU_CACHE_DIR", env, "", false };
	env = getenv("XDG_CACHE_HOME");
	if (env && *env)
		cand[n++] = (struct cache_cand){ "$XDG_CACHE_HOME", env, "/vtpu",
					       false };
	env = getenv("HOME");
	if (env && *env)
		cand[n++] = (struct cache_cand){ "$HOME", env, "/.cache/vtpu",
					       false };
	env = getenv("TMPDIR");
	cand[n++] = (struct cache_cand){ "per-user", env && *env ? env : "/tmp",
				       "/vtpu-cache-", true };

	for (i = 0; i < n; i++) {
		if (cand[i].private)
			snprintf(dir, sizeof(dir), "%s%s%u", cand[i].base,
				 cand[i].sub, (unsigned int)geteuid());
		else if (snprintf(dir, sizeof(dir), "%s%s", cand[i].base,
				  cand[i].sub) >= (int)sizeof(dir))
			continue;
		ret = probe_dir(dir, cand[i].private);
		if (!ret)
			break;
		cache_note(c, cand[i].what, dir, strerror(-ret));
	}
	if (i < n) {
		c->cache_dir = strdup(dir);
		if (!c->cache_dir)
			return rt_set_error(c, ENOMEM, "out of memory");
		if (c->cache_note[0]) {
			size_t len = strlen(c->cache_note);

			snprintf(c->cache_note + len, sizeof(c->cache_note) - len,
				 "; using %s", dir);
		}
	} else {
		size_t len = strlen(c->cache_note);

		snprintf(c->cache_note + len, sizeof(c->cache_note) - len,
			 "; no writable directory: compiled programs are cached in memory only");
	}
	/* Once per process: a program opening many clients says it once. */
	if (c->cache_note[0] && getenv("VTPU_DEBUG") &&
	    !__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "libvtpu: compile cache: %s\n", c->cache_note);
	return 0;
}

int vtpu_client_cache_dir(const struct vtpu_client *c, const char **out_dir,
			  const char **out_note)
{
	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, __func__, "not a client");
	if (!out_dir)
		return rt_bad_arg(c, __func__, "no out_dir");
	*out_dir = c->cache_dir ? c->cache_dir : "";
	if (out_note)
		*out_note = c->cache_note;
	return 0;
}

int vtpu_client_create(const struct vtpu_client_options *o,
		       struct vtpu_client **out_client)
{
	struct vtpu_client *c;
	enum vtpu_backend b;
	int ret;

	if (!out_client)
		return rt_bad_arg(NULL, __func__, "no out_client");
	*out_client = NULL;
	c = client_alloc(o);
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
	ret = choose_cache_dir(c);
	if (ret)
		goto err_close;
	c->cache = vtpu_cache_new(c->opts.cache_entries > 0 ?
				  (size_t)c->opts.cache_entries : 0,
				  c->cache_dir ? c->cache_dir : "");
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

/* The newest live object of @kind on @c's list, or NULL. */
static struct rt_obj *first_of(struct vtpu_client *c, enum rt_kind kind)
{
	struct rt_obj *o, *found = NULL;

	pthread_mutex_lock(&c->lock);
	for (o = c->objs.next; o != &c->objs && !found; o = o->next)
		if (o->magic == RT_MAGIC(kind))
			found = o;
	pthread_mutex_unlock(&c->lock);
	return found;
}

/*
 * What the caller left behind, through each kind's own destroy (which
 * takes it off the list; obj is every struct's first member). Events
 * first: destroying one drives its run to the end, so nothing is in
 * flight when executables and buffers go.
 */
static void release_leftovers(struct vtpu_client *c)
{
	struct rt_obj *o;

	while ((o = first_of(c, RT_KIND_EVENT)))
		vtpu_event_destroy((struct vtpu_event *)o);
	while ((o = first_of(c, RT_KIND_PROFILE)))
		vtpu_profile_destroy((struct vtpu_profile *)o);
	while ((o = first_of(c, RT_KIND_EXECUTABLE)))
		vtpu_executable_destroy((struct vtpu_executable *)o);
}

void vtpu_client_destroy(struct vtpu_client *c)
{
	struct rt_obj *o;
	int i;

	if (!c)
		return;
	if (!RT_LIVE(c, RT_KIND_CLIENT)) {
		rt_bad_arg(NULL, __func__, "not a live client (destroyed twice?)");
		return;
	}
	release_leftovers(c);
	pthread_mutex_lock(&c->lock);
	while (c->inflight)
		pthread_cond_wait(&c->idle, &c->lock);
	pthread_mutex_unlock(&c->lock);
	/* the pool's buffers go while the backend can still free them */
	for (i = 0; i < c->ndevices; i++)
		rt_pool_trim(c->devices[i], false);
	/* then the caller's buffers, the pool's being gone */
	while ((o = first_of(c, RT_KIND_BUFFER)))
		vtpu_buffer_destroy((struct vtpu_buffer *)o);
	c->ops->close(c);
	free_devices(c);
	vtpu_cache_free(c->cache);
	if (err_client == c)
		err_client = NULL;
	client_free(c);
}

const char *vtpu_client_backend(const struct vtpu_client *c)
{
	if (!RT_LIVE(c, RT_KIND_CLIENT)) {
		rt_bad_arg(c, __func__, "not a client");
		return "";
	}
	return c->ops->name;
}

int vtpu_client_device_count(const struct vtpu_client *c)
{
	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, __func__, "not a client");
	return c->ndevices;
}

int vtpu_client_set_run_placement(struct vtpu_client *c,
				  enum vtpu_run_placement p)
{
	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, __func__, "not a client");
	if (p != VTPU_RUN_WITH_BUFFERS && p != VTPU_RUN_LEAST_LOADED)
		return rt_set_error(c, EINVAL, "%s: unknown placement %d",
				    __func__, (int)p);
	__atomic_store_n(&c->run_placement, p, __ATOMIC_RELAXED);
	return 0;
}

int vtpu_client_device(struct vtpu_client *c, int index,
		       struct vtpu_device **out_device)
{
	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, __func__, "not a client");
	if (!out_device)
		return rt_bad_arg(c, __func__, "no out_device");
	*out_device = NULL;
	if (index < 0 || index >= c->ndevices)
		return rt_set_error(c, EINVAL, "no device %d (the client has %d)",
				    index, c->ndevices);
	*out_device = c->devices[index];
	return 0;
}

int vtpu_device_info(struct vtpu_device *d, struct vtpu_device_info *out)
{
	int ret;

	if (!RT_LIVE(d, RT_KIND_DEVICE))
		return rt_bad_arg(NULL, __func__, "not a device");
	if (!out)
		return rt_bad_arg(d->client, __func__, "no out");
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
