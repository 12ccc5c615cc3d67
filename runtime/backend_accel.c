// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * backend_accel.c - the backend for vtpu.ko: /dev/accel/accelN files,
 * GEM buffers mapped into the process, jobs through the submission queue
 * of vtpu_submit.h (io_uring, or the ioctls where it is unavailable).
 *
 * Programs are program objects (DRM_IOCTL_VTPU_PROGRAM_CREATE): the
 * kernel copies and validates a program once and every SUBMIT names it
 * (DRM_VTPU_SUBMIT_PROGRAM), costing O(bindings). A kernel without them
 * (no DRM_VTPU_FEATURE_PROGRAM) gets the program in a buffer, copied and
 * validated per SUBMIT as uAPI 1.1 does.
 *
 * Threading. Each device has one queue (struct vtpu_sq, not thread safe)
 * under sq_lock, held only for short, non-blocking steps: queueing and
 * submitting, and reaping what has already completed. Waiting for
 * completions follows a leader/followers scheme under wait_lock: one
 * waiter at a time is the reaper; it reaps, sleeps until the ring has
 * completions (poll() on the ring's fd, without sq_lock, so submitters
 * are never held up by a sleeping reaper), ends the jobs it reaped with
 * rt_job_done() (holding no lock, since on_done may submit again), then
 * gives up the role and wakes the followers. Each follower rechecks its
 * own job and either returns, keeps sleeping, or becomes the next
 * reaper. So whoever reaps a job, its waiter sees it done, and no thread
 * spins: a follower sleeps on a condition variable, the reaper in
 * poll(). In the ioctl fallback the kernel's JOB_WAIT is the only way to
 * sleep on a job, so a reaper with no deadline blocks in it under
 * sq_lock (each wait ends with the oldest job, which the driver's job
 * timeout bounds), and one with a deadline polls every millisecond.
 */
#define _GNU_SOURCE	/* ppoll() */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <xf86drm.h>
#include <drm/vtpu_accel.h>

#include "rt.h"
#include "vtpu_submit.h"

#define ACCEL_SYSFS	"/sys/class/accel"
#define ACCEL_DEV	"/dev/accel"
#define ACCEL_SQ_DEPTH	256
#define ACCEL_REAP_MAX	64
/* ioctl fallback with a deadline: how often to poll JOB_WAIT. */
#define ACCEL_POLL_NS	1000000LL

struct rt_bo {
	uint32_t handle;
	uint64_t size;		/* as BO_INFO reports: whole pages */
	void *map;		/* MAP_SHARED, the whole buffer */
	enum vtpu_placement placed;
};

/* A loaded program: an object's handle, or (uAPI 1.1) a buffer. */
struct rt_prog {
	uint32_t handle;	/* 0: in @bo */
	struct rt_bo *bo;
	uint64_t size;
};

/*
 * A job's backend state, from submit to its completion: the kernel reads
 * the bindings when the submission is consumed, which for io_uring may
 * happen after io_uring_enter() returned (in io-wq), so they live here
 * and not on submit()'s stack. Its address is the user_data.
 */
struct accel_req {
	struct rt_job *job;
	struct drm_vtpu_binding bind[];
};

struct accel_dev {
	int fd;
	uint64_t timestamp_unit_ns;	/* of the profile's timestamps */
	bool programs;			/* program objects (uAPI 1.2) */

	pthread_mutex_t sq_lock;	/* protects sq */
	struct vtpu_sq sq;

	pthread_mutex_t wait_lock;	/* protects the fields below */
	pthread_cond_t wait_cond;	/* a reaping round ended */
	bool reaping;			/* a waiter is the reaper */
	pthread_t reaper;
};

static struct accel_dev *accel_dev(struct vtpu_device *d)
{
	return d->priv;
}

static int accel_ioctl(int fd, unsigned long req, void *arg)
{
	/* drmIoctl() restarts on EINTR and EAGAIN. */
	return drmIoctl(fd, req, arg) ? -errno : 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_ts(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ULL),
		.tv_nsec = (long)(ns % 1000000000ULL),
	};

	return ts;
}

/* ---- open / close ------------------------------------------------------ */

static void accel_dev_free(struct accel_dev *a)
{
	if (!a)
		return;
	vtpu_sq_fini(&a->sq);
	if (a->fd >= 0)
		close(a->fd);
	pthread_mutex_destroy(&a->sq_lock);
	pthread_mutex_destroy(&a->wait_lock);
	pthread_cond_destroy(&a->wait_cond);
	free(a);
}

static void accel_close(struct vtpu_client *c)
{
	int i;

	/* The devices themselves are the front end's (rt_device_alloc). */
	for (i = 0; i < c->ndevices; i++) {
		if (!c->devices[i])
			continue;
		accel_dev_free(c->devices[i]->priv);
		c->devices[i]->priv = NULL;
	}
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/*
 * The accel minors present, ascending. libdrm's device listing skips
 * accel nodes, so read the class directory.
 */
static int accel_minors(int *out, int max)
{
	struct dirent *de;
	DIR *dir;
	int n = 0;

	dir = opendir(ACCEL_SYSFS);
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		char *end;
		long v;

		if (strncmp(de->d_name, "accel", 5) || !de->d_name[5])
			continue;
		v = strtol(de->d_name + 5, &end, 10);
		if (*end || v < 0 || v > 0xfffff)
			continue;
		out[n++] = (int)v;
	}
	closedir(dir);
	qsort(out, (size_t)n, sizeof(*out), cmp_int);
	return n;
}

/* Is this accel file a vtpu of a uAPI major we speak? */
static bool accel_is_vtpu(int fd)
{
	drmVersionPtr v = drmGetVersion(fd);
	bool ok;

	if (!v)
		return false;
	ok = v->name && !strcmp(v->name, "vtpu") &&
	     v->version_major == DRM_VTPU_UAPI_MAJOR;
	drmFreeVersion(v);
	return ok;
}

/* VTPU_ACCEL_SQ=ioctl|uring|auto: lets the tests pin the queue's mode. */
static enum vtpu_sq_mode accel_sq_mode(void)
{
	const char *s = getenv("VTPU_ACCEL_SQ");

	if (s && !strcmp(s, "ioctl"))
		return VTPU_SQ_IOCTL;
	if (s && !strcmp(s, "uring"))
		return VTPU_SQ_URING;
	return VTPU_SQ_AUTO;
}

/* VTPU_ACCEL_PROGRAM=object|copy|auto: lets the tests pin the program path. */
static bool accel_use_programs(const struct drm_vtpu_query *q)
{
	const char *s = getenv("VTPU_ACCEL_PROGRAM");

	if (s && !strcmp(s, "copy"))
		return false;
	return q->features & DRM_VTPU_FEATURE_PROGRAM;
}

static int accel_open_one(struct vtpu_client *c, int minor, int *why)
{
	struct drm_vtpu_query q = { 0 };
	struct vtpu_device *d;
	struct accel_dev *a;
	char path[64], name[32];
	int fd, ret;

	snprintf(path, sizeof(path), ACCEL_DEV "/accel%d", minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		*why = errno;
		return 0;		/* not ours to use: skip it */
	}
	if (!accel_is_vtpu(fd) || accel_ioctl(fd, DRM_IOCTL_VTPU_QUERY, &q) ||
	    !(q.features & DRM_VTPU_FEATURE_SUBMIT)) {
		close(fd);
		return 0;		/* another accel driver */
	}

	a = calloc(1, sizeof(*a));
	if (!a) {
		close(fd);
		return -ENOMEM;
	}
	a->fd = fd;
	a->timestamp_unit_ns = q.timestamp_unit_ns ? q.timestamp_unit_ns : 1;
	a->programs = accel_use_programs(&q);
	a->sq.fd = -1;
	pthread_mutex_init(&a->sq_lock, NULL);
	pthread_mutex_init(&a->wait_lock, NULL);
	{
		pthread_condattr_t attr;

		/* Deadlines are CLOCK_MONOTONIC, like the rest of libvtpu. */
		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_init(&a->wait_cond, &attr);
		pthread_condattr_destroy(&attr);
	}
	ret = vtpu_sq_init(&a->sq, fd, ACCEL_SQ_DEPTH, accel_sq_mode());
	if (ret) {
		accel_dev_free(a);
		return rt_set_error(c, -ret, "accel%d: submission queue: %s",
				    minor, strerror(-ret));
	}

	snprintf(name, sizeof(name), "accel%d", minor);
	d = rt_device_alloc(c, name);
	if (!d) {
		accel_dev_free(a);
		return -ENOMEM;
	}
	/*
	 * Whether rt_device_alloc() registers the device itself or leaves
	 * that to us, it ends up listed exactly once.
	 */
	if (c->ndevices == 0 || c->devices[c->ndevices - 1] != d)
		c->devices[c->ndevices++] = d;
	d->client = c;
	d->index = c->ndevices - 1;
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->priv = a;
	d->cores = (int)q.core_count;
	d->vmem_size = q.vmem_size;
	return 0;
}

static int accel_open(struct vtpu_client *c, const struct vtpu_client_options *o)
{
	int minors[256];
	int n, i, ret, why = 0;

	(void)o;
	n = accel_minors(minors, (int)(sizeof(minors) / sizeof(minors[0])));
	for (i = 0; i < n && c->ndevices < RT_MAX_DEVICES; i++) {
		ret = accel_open_one(c, minors[i], &why);
		if (ret) {
			accel_close(c);
			if (ret == -ENOMEM)
				return rt_set_error(c, ENOMEM,
						    "accel backend: out of memory");
			return ret;
		}
	}
	if (c->ndevices)
		return 0;
	if (why == EACCES || why == EPERM)
		return rt_set_error(c, ENODEV,
				    "no usable vtpu device: permission denied on " ACCEL_DEV
				    "/accel* (join the group owning it), or use the host backend (VTPU_BACKEND=host)");
	return rt_set_error(c, ENODEV,
			    "no vtpu device under " ACCEL_SYSFS
			    ": load vtpu.ko (see README) or use the host backend (VTPU_BACKEND=host)");
}

static int accel_query(struct vtpu_device *d, struct vtpu_device_info *out)
{
	struct accel_dev *a = accel_dev(d);
	struct drm_vtpu_query q = { 0 };
	int ret;

	ret = accel_ioctl(a->fd, DRM_IOCTL_VTPU_QUERY, &q);
	if (ret)
		return rt_set_error(d->client, -ret, "%s: QUERY: %s", d->name,
				    strerror(-ret));
	out->index = d->index;
	snprintf(out->name, sizeof(out->name), "%s", d->name);
	out->cores = (int)q.core_count;
	out->hbm_total = q.hbm_total;
	out->hbm_free = q.hbm_free;
	out->hbm_largest_free = q.hbm_largest_free;
	out->host_bytes = q.host_bytes;
	out->vmem_size = q.vmem_size;
	return 0;
}

/*
 * QUERY has no free block count; vtpu.ko publishes it in sysfs, as
 * vtpu-smi reads it. Profiles only: a read per memory snapshot.
 */
static uint64_t accel_free_blocks(struct vtpu_device *d,
				  const struct vtpu_device_info *info)
{
	char path[128], buf[32];
	unsigned long long v;
	FILE *f;
	int ok;

	(void)info;
	snprintf(path, sizeof(path), ACCEL_SYSFS "/%s/device/hbm_free_blocks",
		 d->name);
	f = fopen(path, "re");
	if (!f)
		return 0;
	ok = fgets(buf, sizeof(buf), f) && sscanf(buf, "%llu", &v) == 1;
	fclose(f);
	return ok ? v : 0;
}

/* ---- buffers ------------------------------------------------------------ */

static int accel_bo_create(struct vtpu_device *d, uint64_t size,
			   enum vtpu_placement p, struct rt_bo **out,
			   enum vtpu_placement *placed)
{
	struct accel_dev *a = accel_dev(d);
	struct drm_vtpu_bo_create cr = { .size = size };
	struct drm_vtpu_bo_info info = { 0 };
	struct drm_gem_close gc = { 0 };
	struct rt_bo *bo;
	void *map;
	int ret;

	switch (p) {
	case VTPU_PLACE_AUTO:
		cr.placement = DRM_VTPU_PLACEMENT_AUTO;
		break;
	case VTPU_PLACE_HBM:
		cr.placement = DRM_VTPU_PLACEMENT_HBM;
		break;
	case VTPU_PLACE_HOST:
		cr.placement = DRM_VTPU_PLACEMENT_HOST;
		break;
	default:
		return rt_set_error(d->client, EINVAL, "%s: unknown placement %d",
				    d->name, (int)p);
	}
	ret = accel_ioctl(a->fd, DRM_IOCTL_VTPU_BO_CREATE, &cr);
	if (ret)
		return rt_set_error(d->client, -ret,
				    "%s: BO_CREATE of %llu bytes: %s", d->name,
				    (unsigned long long)size, strerror(-ret));
	gc.handle = cr.handle;

	info.handle = cr.handle;
	ret = accel_ioctl(a->fd, DRM_IOCTL_VTPU_BO_INFO, &info);
	if (ret) {
		rt_set_error(d->client, -ret, "%s: BO_INFO: %s", d->name,
			     strerror(-ret));
		goto close_bo;
	}
	map = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd,
		   (off_t)info.mmap_offset);
	if (map == MAP_FAILED) {
		ret = -errno;
		rt_set_error(d->client, -ret, "%s: mmap of %llu bytes: %s",
			     d->name, (unsigned long long)info.size,
			     strerror(-ret));
		goto close_bo;
	}
	bo = calloc(1, sizeof(*bo));
	if (!bo) {
		munmap(map, info.size);
		ret = rt_set_error(d->client, ENOMEM, "%s: out of memory",
				   d->name);
		goto close_bo;
	}
	bo->handle = cr.handle;
	bo->size = info.size;
	bo->map = map;
	bo->placed = cr.placed == DRM_VTPU_PLACEMENT_HBM ? VTPU_PLACE_HBM :
						       VTPU_PLACE_HOST;
	*out = bo;
	if (placed)
		*placed = bo->placed;
	return 0;

close_bo:
	accel_ioctl(a->fd, DRM_IOCTL_GEM_CLOSE, &gc);
	return ret;
}

static void accel_bo_destroy(struct vtpu_device *d, struct rt_bo *bo)
{
	struct accel_dev *a = accel_dev(d);
	struct drm_gem_close gc = { 0 };

	if (!bo)
		return;
	/*
	 * A job still using it keeps its own reference in the kernel, so
	 * this cannot pull memory from under a running program.
	 */
	munmap(bo->map, bo->size);
	gc.handle = bo->handle;
	accel_ioctl(a->fd, DRM_IOCTL_GEM_CLOSE, &gc);
	free(bo);
}

static void *accel_bo_map(struct vtpu_device *d, struct rt_bo *bo)
{
	(void)d;
	return bo->map;
}

/* ---- programs ------------------------------------------------------------ */

static int accel_prog_load(struct vtpu_device *d, const void *prog,
			   uint64_t size, struct rt_prog **out)
{
	struct accel_dev *a = accel_dev(d);
	struct drm_vtpu_program_create cr = {
		.program = (uint64_t)(uintptr_t)prog, .size = size,
	};
	enum vtpu_placement pl;
	struct rt_prog *p;
	int ret;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return rt_set_error(d->client, ENOMEM, "%s: out of memory",
				    d->name);
	p->size = size;
	if (a->programs) {
		ret = accel_ioctl(a->fd, DRM_IOCTL_VTPU_PROGRAM_CREATE, &cr);
		if (ret) {
			free(p);
			return rt_set_error(d->client, -ret,
					    "%s: PROGRAM_CREATE of %llu bytes: %s%s",
					    d->name, (unsigned long long)size,
					    strerror(-ret), ret == -EINVAL ?
					    " (an invalid program: the kernel log says why at debug level)" :
					    "");
		}
		p->handle = cr.handle;
		*out = p;
		return 0;
	}
	ret = accel_bo_create(d, size, VTPU_PLACE_HOST, &p->bo, &pl);
	if (ret) {
		free(p);
		return ret;
	}
	memcpy(p->bo->map, prog, size);
	*out = p;
	return 0;
}

static void accel_prog_unload(struct vtpu_device *d, struct rt_prog *p)
{
	struct accel_dev *a = accel_dev(d);
	struct drm_vtpu_program_destroy de = { 0 };

	if (!p)
		return;
	/* Jobs still queued hold the program in the kernel. */
	if (p->handle) {
		de.handle = p->handle;
		accel_ioctl(a->fd, DRM_IOCTL_VTPU_PROGRAM_DESTROY, &de);
	}
	accel_bo_destroy(d, p->bo);
	free(p);
}

/* ---- jobs --------------------------------------------------------------- */

/* Builds a job's request; a job that cannot be expressed gets -errno. */
static int accel_req_new(struct rt_job *job, struct accel_req **out)
{
	struct accel_req *req;
	int i;

	*out = NULL;
	if (job->nbind < 0 || job->nbind > DRM_VTPU_MAX_BINDINGS)
		return -E2BIG;
	req = calloc(1, sizeof(*req) +
			(size_t)job->nbind * sizeof(req->bind[0]));
	if (!req)
		return -ENOMEM;
	req->job = job;
	*out = req;
	if (!job->prog)
		return -ENOENT;
	for (i = 0; i < job->nbind; i++) {
		if (!job->bind[i])
			return -ENOENT;
		req->bind[i] = (struct drm_vtpu_binding){
			.handle = job->bind[i]->handle,
			.flags = job->bind_flags[i],
			.offset = 0,
			.size = job->bind_size[i],
		};
	}
	return 0;
}

static void accel_req_submit_args(const struct accel_req *req,
				  struct drm_vtpu_submit *s)
{
	const struct rt_job *job = req->job;

	memset(s, 0, sizeof(*s));
	if (job->prog->handle) {
		s->flags = DRM_VTPU_SUBMIT_PROGRAM;
		s->program_handle = job->prog->handle;
	} else {
		s->program_handle = job->prog->bo->handle;
		s->program_size = job->prog->size;
	}
	s->bindings = (uint64_t)(uintptr_t)req->bind;
	s->binding_count = (uint32_t)job->nbind;
	if (job->profile_bo) {
		s->profile_handle = job->profile_bo->handle;
		s->profile_offset = 0;
	}
}

static void accel_job_end(struct rt_job *job, int status, uint64_t device_ns)
{
	job->status = status;
	job->device_ns = device_ns;
	job->done_ns = rt_now_ns();
	rt_job_done(job);
}

static int accel_submit(struct vtpu_device *d, struct rt_job **jobs, int n)
{
	struct accel_dev *a = accel_dev(d);
	struct accel_req **reqs;
	int *err;
	int i, queued = 0, first_err = 0, ret;

	if (n <= 0)
		return 0;
	reqs = calloc((size_t)n, sizeof(*reqs));
	err = calloc((size_t)n, sizeof(*err));
	if (!reqs || !err) {
		free(reqs);
		free(err);
		return rt_set_error(d->client, ENOMEM, "%s: out of memory",
				    d->name);
	}
	for (i = 0; i < n; i++) {
		err[i] = accel_req_new(jobs[i], &reqs[i]);
		if (err[i] == -ENOMEM && !reqs[i])
			break;
		if (!jobs[i]->submit_ns)
			jobs[i]->submit_ns = rt_now_ns();
	}
	if (i < n) {
		/* Out of memory before anything went out: nothing ends. */
		while (i >= 0)
			free(reqs[i--]);
		free(reqs);
		free(err);
		return rt_set_error(d->client, ENOMEM, "%s: out of memory",
				    d->name);
	}

	pthread_mutex_lock(&a->sq_lock);
	for (i = 0; i < n; i++) {
		struct drm_vtpu_submit s;

		if (err[i])
			continue;
		accel_req_submit_args(reqs[i], &s);
		ret = vtpu_sq_queue(&a->sq, &s, (uint64_t)(uintptr_t)reqs[i]);
		if (ret)
			err[i] = ret;
		else
			queued++;
	}
	/*
	 * One io_uring_enter() for the batch. A failure here leaves the
	 * SQEs queued: the next reap submits them, so they still end.
	 */
	if (queued)
		vtpu_sq_submit(&a->sq);
	pthread_mutex_unlock(&a->sq_lock);

	/*
	 * From here the queued jobs belong to the reapers, which may already
	 * have ended and freed them: touch only the ones that failed.
	 */
	for (i = 0; i < n; i++)
		if (err[i] && !first_err)
			first_err = err[i];
	if (!queued) {
		for (i = 0; i < n; i++)
			free(reqs[i]);
		free(reqs);
		free(err);
		return rt_set_error(d->client, -first_err,
				    "%s: submit: %s", d->name,
				    strerror(-first_err));
	}
	for (i = 0; i < n; i++) {
		if (!err[i])
			continue;
		free(reqs[i]);
		accel_job_end(jobs[i], err[i], 0);
	}
	free(reqs);
	free(err);
	return 0;
}

static bool job_is_done(struct rt_job *job)
{
	bool done;

	pthread_mutex_lock(&job->done_lock);
	done = job->done;
	pthread_mutex_unlock(&job->done_lock);
	return done;
}

/* Ends a reaped job: the profile has the core time ioctl mode lacks. */
static void accel_complete(struct accel_dev *a,
			   const struct vtpu_completion *cp)
{
	struct accel_req *req = (struct accel_req *)(uintptr_t)cp->user_data;
	struct rt_job *job;
	uint64_t device_ns = (uint64_t)cp->device_us * 1000;

	if (!req)		/* not a job's: vtpu_sq_init()'s probe uses 0 */
		return;
	job = req->job;
	free(req);
	if (!device_ns && job->profile_bo && cp->status == 0) {
		const struct drm_vtpu_profile *p = job->profile_bo->map;

		if (p->end > p->start)
			device_ns = (p->end - p->start) * a->timestamp_unit_ns;
	}
	accel_job_end(job, cp->status, device_ns);
}

/*
 * One round of the reaper: takes what has completed, or sleeps until
 * something completes or @remaining_ns (< 0: no limit) passes. Returns
 * how many jobs it ended, or -errno; -ENOENT when nothing is owed at all.
 */
static int accel_reap_round(struct vtpu_device *d, int64_t remaining_ns)
{
	struct accel_dev *a = accel_dev(d);
	struct vtpu_completion cp[ACCEL_REAP_MAX];
	unsigned int owed, min_wait = 0;
	bool uring, stuck;
	int n, i;

	pthread_mutex_lock(&a->sq_lock);
	uring = a->sq.mode == VTPU_SQ_URING;
	/* ioctl mode can only sleep inside JOB_WAIT, i.e. under the lock. */
	if (!uring && remaining_ns < 0)
		min_wait = 1;
	n = vtpu_sq_reap(&a->sq, cp, ACCEL_REAP_MAX, min_wait);
	owed = vtpu_sq_outstanding(&a->sq);
	/* SQEs the kernel refused for now, none running: no CQE will come. */
	stuck = uring && a->sq.unsubmitted && !a->sq.inflight;
	pthread_mutex_unlock(&a->sq_lock);
	if (n < 0)
		return rt_set_error(d->client, -n, "%s: reaping completions: %s",
				    d->name, strerror(-n));

	/* No lock held: on_done may submit or wait on other devices. */
	for (i = 0; i < n; i++)
		accel_complete(a, &cp[i]);
	if (n > 0)
		return n;
	if (!owed)
		return -ENOENT;
	if (remaining_ns == 0)
		return 0;

	if (uring && !stuck) {
		struct pollfd pfd = { .fd = a->sq.ring.ring_fd, .events = POLLIN };
		struct timespec ts;

		/*
		 * The ring's fd is readable once the CQ ring holds entries.
		 * Only this thread reads the CQ, so what it sees stays there
		 * until the next round takes it under sq_lock.
		 */
		if (remaining_ns > 0)
			ts = ns_to_ts((uint64_t)remaining_ns);
		if (ppoll(&pfd, 1, remaining_ns > 0 ? &ts : NULL, NULL) < 0 &&
		    errno != EINTR)
			return rt_set_error(d->client, errno,
					    "%s: poll on the ring: %s", d->name,
					    strerror(errno));
	} else {
		/* Retry after a while (a negative remaining_ns is no limit). */
		int64_t nap = remaining_ns >= 0 && remaining_ns < ACCEL_POLL_NS ?
			      remaining_ns : ACCEL_POLL_NS;
		struct timespec ts = ns_to_ts((uint64_t)nap);

		nanosleep(&ts, NULL);
	}
	return 0;
}

static int accel_wait(struct vtpu_device *d, struct rt_job *job,
		      int64_t timeout_ns)
{
	struct accel_dev *a = accel_dev(d);
	uint64_t deadline = 0;
	bool tried = false;
	int ret;

	if (job_is_done(job))
		return 0;
	if (timeout_ns > 0)
		deadline = mono_ns() + (uint64_t)timeout_ns;

	pthread_mutex_lock(&a->wait_lock);
	for (;;) {
		int64_t left = -1;
		int r;

		if (job_is_done(job)) {
			ret = 0;
			break;
		}
		if (timeout_ns >= 0) {
			uint64_t now = mono_ns();

			left = now < deadline ? (int64_t)(deadline - now) : 0;
			/* A zero timeout still gets one look at the ring. */
			if (!left && tried) {
				ret = -ETIME;
				break;
			}
		}

		if (a->reaping) {
			/* on_done waiting on this device from inside a round. */
			if (pthread_equal(a->reaper, pthread_self())) {
				ret = rt_set_error(d->client, EDEADLK,
						   "%s: wait from a completion callback",
						   d->name);
				break;
			}
			if (left < 0) {
				pthread_cond_wait(&a->wait_cond, &a->wait_lock);
			} else if (left == 0) {
				ret = -ETIME;	/* timeout 0: don't queue up */
				break;
			} else {
				struct timespec ts = ns_to_ts(deadline);

				pthread_cond_timedwait(&a->wait_cond,
						       &a->wait_lock, &ts);
				tried = true;
			}
			continue;
		}

		a->reaping = true;
		a->reaper = pthread_self();
		pthread_mutex_unlock(&a->wait_lock);
		r = accel_reap_round(d, left);
		pthread_mutex_lock(&a->wait_lock);
		a->reaping = false;
		pthread_cond_broadcast(&a->wait_cond);
		tried = true;

		if (r == -ENOENT && !job_is_done(job)) {
			/* Nothing owed, yet not ended: it was never ours. */
			ret = rt_set_error(d->client, EINVAL,
					   "%s: waiting on a job not submitted here",
					   d->name);
			break;
		}
		if (r < 0 && r != -ENOENT) {
			ret = r;
			break;
		}
	}
	pthread_mutex_unlock(&a->wait_lock);
	return ret;
}

const struct rt_backend_ops rt_backend_accel = {
	.name = "accel",
	.open = accel_open,
	.close = accel_close,
	.query = accel_query,
	.free_blocks = accel_free_blocks,
	.bo_create = accel_bo_create,
	.bo_destroy = accel_bo_destroy,
	.bo_map = accel_bo_map,
	.prog_load = accel_prog_load,
	.prog_unload = accel_prog_unload,
	.submit = accel_submit,
	.wait = accel_wait,
};
