// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * execute.c - running executables: check the call, pick the device,
 * admit the run, reserve scratch, submit, and on completion apply the
 * retry policy, release, profile and count. The executable is resident
 * on the device (executable.c) and scratch comes from the device's pool
 * (pool.c): what a run costs on the host does not grow with its program
 * or its weights.
 *
 * A run is an event that owns its job. The thread that waits on the
 * event drives it: it reaps the job through ops->wait and performs any
 * retry there, so no work happens in backend callbacks (job->on_done is
 * NULL) and a run's memory is always released by the thread that sees
 * it end. vtpu_execute() is async + wait; a batch submits every run's
 * first attempt in one ops->submit() per device, then waits each.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm/vtpu_accel.h>

#include "rt.h"

/*
 * Scratch beyond HBM spills to the backing store, up to 4x the HBM and
 * at most 4 GiB: past that a run would only thrash host memory.
 */
#define RT_HOST_SCRATCH_MAX	(4ull << 30)
#define RT_HOST_SCRATCH_RATIO	4
/* Room for the job record and (64 KiB - 64) / 16 TRACE records. */
#define RT_PROFILE_BYTES	(64u << 10)

/*
 * A run. Only what a run uses is allocated and written, the job's
 * binding arrays up to the program's count: after a big run has streamed
 * its weights through the caches, every line the next run touches is a
 * miss.
 */
struct vtpu_event {
	struct rt_obj obj;	/* RT_KIND_EVENT; first, as client.c casts */
	struct vtpu_client *client;
	struct vtpu_executable *exe;
	struct vtpu_device *device;
	struct vtpu_buffer **in, **out;	/* the caller's, in bufs[] */
	/* held by the current attempt only */
	struct vtpu_buffer **scratch;	/* per binding, in bufs[] */
	struct vtpu_buffer *prof;
	bool on_device;		/* the attempt counts in the device's load */
	bool staged;		/* buffers elsewhere: copied (LEAST_LOADED) */
	uint64_t id;		/* pairs SUBMIT and COMPLETE in a profile */
	int retries;		/* of this run */
	pthread_mutex_t lock;	/* Protects the fields below: one driver */
	bool ended;
	int status;
	struct rt_job job;
	struct vtpu_buffer *bufs[];
};

/* ---- checking a call ---------------------------------------------------- */

static int check_buffers(struct vtpu_client *c, struct vtpu_executable *e,
			 struct vtpu_buffer *const *bufs, bool out,
			 struct vtpu_device **dev)
{
	const char *what = out ? "output" : "input";
	int i, n = out ? e->nout : e->nin;

	if (n && !bufs)
		return rt_set_error(c, EINVAL, "%d %ss expected, got none",
				    n, what);
	for (i = 0; i < e->prog->nbindings; i++) {
		const struct vtpu_binding_info *bi = &e->prog->bindings[i];
		struct vtpu_buffer *b;

		if (bi->role != (out ? VTPU_BIND_OUTPUT : VTPU_BIND_PARAM))
			continue;
		b = bufs[bi->index];
		if (!RT_LIVE(b, RT_KIND_BUFFER) || b->client != c)
			return rt_set_error(c, EINVAL, "%s %d: %s", what,
					    bi->index, b ? "buffer of another client"
						       : "no buffer");
		if (b->size < bi->size)
			return rt_set_error(c, EINVAL,
					    "%s %d: buffer has %llu bytes, the program needs %llu",
					    what, bi->index,
					    (unsigned long long)b->size,
					    (unsigned long long)bi->size);
		if (*dev && b->device != *dev)
			return rt_set_error(c, EINVAL,
					    "%s %d is on %s, other buffers on %s",
					    what, bi->index, b->device->name,
					    (*dev)->name);
		*dev = b->device;
	}
	return 0;
}

/*
 * vtpu.h's run placement: the buffers decide the device (with none, the
 * least loaded one), or under VTPU_RUN_LEAST_LOADED the load does and
 * *@staged says the buffers must be copied there and back.
 */
static int check_call(struct vtpu_client *c, struct vtpu_executable *e,
		      struct vtpu_buffer *const *inputs,
		      struct vtpu_buffer *const *outputs,
		      struct vtpu_device **dev, bool *staged)
{
	struct vtpu_device *least;
	int ret;

	*dev = NULL;
	*staged = false;
	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, "execute", "not a client");
	if (!RT_LIVE(e, RT_KIND_EXECUTABLE) || e->client != c)
		return rt_set_error(c, EINVAL,
				    "executable not compiled by this client");
	ret = check_buffers(c, e, inputs, false, dev);
	if (!ret)
		ret = check_buffers(c, e, outputs, true, dev);
	if (ret)
		return ret;
	least = rt_pick_device(c);
	if (!*dev)
		*dev = least;
	if (__atomic_load_n(&c->run_placement, __ATOMIC_RELAXED) ==
	    VTPU_RUN_LEAST_LOADED && *dev != least) {
		*dev = least;
		*staged = true;
	}
	return 0;
}

static uint64_t scratch_bytes(const struct vtpu_program *p)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < p->nbindings; i++)
		if (p->bindings[i].role == VTPU_BIND_SCRATCH)
			n += p->bindings[i].size;
	return n;
}

/* Admission control: refuse what can never fit before touching memory. */
static int admit(struct vtpu_client *c, struct vtpu_executable *e,
		 struct vtpu_device *d)
{
	uint64_t need = scratch_bytes(e->prog), hbm = d->hbm_total, host;

	host = hbm < RT_HOST_SCRATCH_MAX / RT_HOST_SCRATCH_RATIO ?
	       hbm * RT_HOST_SCRATCH_RATIO : RT_HOST_SCRATCH_MAX;
	if (need > hbm + host)
		return rt_set_error(c, E2BIG,
				    "program needs %llu bytes of scratch; %s has %llu of HBM and %llu of host spill",
				    (unsigned long long)need, d->name,
				    (unsigned long long)hbm,
				    (unsigned long long)host);
	return 0;
}

/* ---- events ------------------------------------------------------------- */

static uint64_t next_run_id;

static struct vtpu_event *event_new(struct vtpu_client *c,
				    struct vtpu_executable *e,
				    struct vtpu_device *d,
				    struct vtpu_buffer *const *inputs,
				    struct vtpu_buffer *const *outputs,
				    bool staged)
{
	int nb = e->prog->nbindings;
	struct vtpu_event *ev = malloc(sizeof(*ev) + (size_t)(e->nin + e->nout +
					nb) * sizeof(ev->bufs[0]));

	if (!ev)
		return NULL;
	/* the job's arrays are set per attempt, reset_job() on */
	memset(ev, 0, offsetof(struct vtpu_event, job.bind));
	memset(&ev->job.profile_bo, 0,
	       sizeof(*ev) - offsetof(struct vtpu_event, job.profile_bo));
	ev->client = c;
	ev->exe = e;
	ev->device = d;
	ev->staged = staged;
	ev->in = ev->bufs;
	ev->out = ev->in + e->nin;
	ev->scratch = ev->out + e->nout;
	if (e->nin)
		memcpy(ev->in, inputs, e->nin * sizeof(*inputs));
	if (e->nout)
		memcpy(ev->out, outputs, e->nout * sizeof(*outputs));
	memset(ev->scratch, 0, nb * sizeof(*ev->scratch));
	pthread_mutex_init(&ev->lock, NULL);
	pthread_mutex_init(&ev->job.done_lock, NULL);
	pthread_cond_init(&ev->job.done_cond, NULL);
	ev->job.ctx = ev;
	ev->id = __atomic_add_fetch(&next_run_id, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&c->lock);
	c->inflight++;
	pthread_mutex_unlock(&c->lock);
	rt_obj_add(c, &ev->obj, RT_KIND_EVENT);
	return ev;
}

static void RT_COMPLETION event_free(struct vtpu_event *ev)
{
	rt_obj_del(ev->client, &ev->obj);
	pthread_cond_destroy(&ev->job.done_cond);
	pthread_mutex_destroy(&ev->job.done_lock);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

/* Checks, admits and makes the event of one run. */
static int run_new(struct vtpu_client *c, struct vtpu_executable *e,
		   struct vtpu_buffer *const *inputs,
		   struct vtpu_buffer *const *outputs, struct vtpu_event **out)
{
	struct vtpu_device *d = NULL;
	bool staged;
	int ret;

	*out = NULL;
	ret = check_call(c, e, inputs, outputs, &d, &staged);
	if (!ret)
		ret = admit(c, e, d);
	if (ret)
		return ret;
	*out = event_new(c, e, d, inputs, outputs, staged);
	return *out ? 0 : rt_set_error(c, ENOMEM, "out of memory");
}

/* ---- one attempt ---------------------------------------------------------- */

/* The test hook: consumes one injected failure, if any is left. */
static int take_injected(struct vtpu_client *c)
{
	int err = 0;

	pthread_mutex_lock(&c->lock);
	if (c->inject_left > 0) {
		c->inject_left--;
		err = c->opts.inject_errno ? c->opts.inject_errno : -EIO;
	}
	pthread_mutex_unlock(&c->lock);
	/* accept the errno either way round */
	return err > 0 ? -err : err;
}

/* The attempt's memory goes back to the device's pool. */
static void RT_COMPLETION release_attempt(struct vtpu_event *ev)
{
	int i;

	for (i = 0; i < ev->exe->prog->nbindings; i++) {
		rt_pool_put(ev->scratch[i]);
		ev->scratch[i] = NULL;
	}
	rt_pool_put(ev->prof);
	ev->prof = NULL;
}

/* RT_EV_COPY: a staged run's copy, value[0] bytes, [1] the run id. */
static void copy_event(struct vtpu_event *ev, const char *name,
		       uint64_t start, uint64_t bytes)
{
	struct rt_event e = {
		.kind = RT_EV_COPY, .device = ev->device->index, .core = -1,
		.ts_ns = start, .dur_ns = rt_now_ns() - start, .name = name,
		.value = { bytes, ev->id },
	};

	rt_profile_event(ev->client, &e);
}

/*
 * A staged run's copy of its caller's buffer @b on the run's device, for
 * binding @i: reserved from that device's pool like scratch, and filled
 * from @b for an input (@in).
 */
static int stage(struct vtpu_event *ev, int i, struct vtpu_buffer *b, bool in)
{
	uint64_t size = ev->exe->prog->bindings[i].size;
	int ret;

	ret = rt_pool_get(ev->device, size ? size : 1, VTPU_PLACE_AUTO,
			  &ev->scratch[i]);
	if (ret)
		return ret;
	if (in)
		memcpy(ev->scratch[i]->map, b->map, size);
	return 0;
}

/* A staged run's outputs, back to the caller's buffers. */
static void unstage_outputs(struct vtpu_event *ev)
{
	const struct vtpu_program *p = ev->exe->prog;
	uint64_t start = rt_now_ns(), bytes = 0;
	int i;

	for (i = 0; i < p->nbindings; i++) {
		const struct vtpu_binding_info *bi = &p->bindings[i];

		if (bi->role != VTPU_BIND_OUTPUT || !ev->scratch[i])
			continue;
		memcpy(ev->out[bi->index]->map, ev->scratch[i]->map, bi->size);
		bytes += bi->size;
	}
	copy_event(ev, "copy_out", start, bytes);
}

/*
 * Bindings in the program's order: the caller's buffers (or, for a
 * staged run, their copies on its device), the resident weights, and
 * scratch reserved for this attempt.
 */
static int bind_all(struct vtpu_event *ev, const struct rt_resident *r)
{
	const struct vtpu_program *p = ev->exe->prog;
	struct rt_job *job = &ev->job;
	uint64_t start = rt_now_ns(), copied = 0;
	int i, ret;

	for (i = 0; i < p->nbindings; i++) {
		const struct vtpu_binding_info *bi = &p->bindings[i];

		job->bind_size[i] = bi->size;
		switch (bi->role) {
		case VTPU_BIND_PARAM:
			job->bind[i] = ev->in[bi->index]->bo;
			job->bind_flags[i] = DRM_VTPU_BIND_READ;
			if (!ev->staged)
				break;
			ret = stage(ev, i, ev->in[bi->index], true);
			if (ret)
				return ret;
			job->bind[i] = ev->scratch[i]->bo;
			copied += bi->size;
			break;
		case VTPU_BIND_OUTPUT:
			job->bind[i] = ev->out[bi->index]->bo;
			job->bind_flags[i] = DRM_VTPU_BIND_WRITE;
			if (!ev->staged)
				break;
			ret = stage(ev, i, ev->out[bi->index], false);
			if (ret)
				return ret;
			job->bind[i] = ev->scratch[i]->bo;
			break;
		case VTPU_BIND_WEIGHTS:
			job->bind[i] = r->weights->bo;
			job->bind_flags[i] = DRM_VTPU_BIND_READ;
			break;
		default:
			/* AUTO: a full HBM spills to the backing store */
			ret = rt_pool_get(ev->device, bi->size ? bi->size : 1,
					  VTPU_PLACE_AUTO, &ev->scratch[i]);
			if (ret)
				return ret;
			job->bind[i] = ev->scratch[i]->bo;
			job->bind_flags[i] = DRM_VTPU_BIND_READ |
					     DRM_VTPU_BIND_WRITE;
		}
	}
	job->nbind = p->nbindings;
	if (ev->staged)
		copy_event(ev, "copy_in", start, copied);
	return 0;
}

static int profile_buffer(struct vtpu_event *ev)
{
	int ret;

	if (!rt_profiling(ev->client))
		return 0;
	/*
	 * HBM when there is room: vtpu.ko maps a backing-store range per
	 * job, which sends io_uring's non-blocking first attempt to io-wq.
	 */
	ret = rt_pool_get(ev->device, RT_PROFILE_BYTES, VTPU_PLACE_AUTO,
			  &ev->prof);
	if (ret)
		return ret;
	/*
	 * The header only: it says whether the job reached a core and how
	 * many records follow, and only those are read. Clearing all 64 KiB
	 * cost every run 1,024 cache lines.
	 */
	memset(ev->prof->map, 0, sizeof(struct drm_vtpu_profile));
	ev->job.profile_bo = ev->prof->bo;
	ev->job.profile_size = RT_PROFILE_BYTES;
	return 0;
}

/* Ends the attempt here, without the device: the job carries @err. */
static void fail_attempt(struct vtpu_event *ev, int err)
{
	release_attempt(ev);
	ev->job.status = err;
	rt_job_done(&ev->job);
}

/* A fresh job for the next attempt; the lock, condvar and ctx stay. */
static void reset_job(struct vtpu_event *ev)
{
	struct rt_job *job = &ev->job;

	memset(job->bind, 0, ev->exe->prog->nbindings * sizeof(job->bind[0]));
	job->device = ev->device;
	job->exe = ev->exe;
	job->prog = NULL;
	job->profile_bo = NULL;
	job->profile_size = 0;
	job->status = 0;
	job->device_ns = 0;
	job->done = false;
	job->on_done = NULL;
	/* submit_jobs() sets it again; this is for attempts ended here */
	job->submit_ns = rt_now_ns();
	job->done_ns = 0;
	ev->on_device = false;
}

/*
 * Readies the next attempt. Returns true when its job must be submitted;
 * false when it already ended (an injected failure, no memory, a program
 * that would not load).
 */
static bool prepare_attempt(struct vtpu_event *ev)
{
	struct vtpu_device *d = ev->device;
	struct rt_job *job = &ev->job;
	struct rt_resident r;
	int ret;

	reset_job(ev);
	ret = rt_exe_resident(ev->exe, d, &r);
	if (!ret) {
		job->prog = r.prog;
		ret = bind_all(ev, &r);
	}
	if (!ret)
		ret = profile_buffer(ev);
	/* last: an injected failure has memory reserved to give back */
	if (!ret)
		ret = take_injected(ev->client);
	if (ret) {
		fail_attempt(ev, ret);
		return false;
	}
	ev->on_device = true;
	__atomic_add_fetch(&d->jobs_in_flight, 1, __ATOMIC_RELAXED);
	return true;
}

/* RT_EV_SUBMIT: value[0] the run id, [1] jobs submitted together. */
static void submit_event(struct rt_job *job, int n)
{
	struct vtpu_event *ev = job->ctx;
	struct rt_event e = {
		.kind = RT_EV_SUBMIT, .device = job->device->index, .core = -1,
		.ts_ns = job->submit_ns, .value = { ev->id, (uint64_t)n },
	};

	rt_profile_event(ev->client, &e);
}

/* Nothing submitted: every job ends with the backend's errno. */
static void RT_COMPLETION submit_jobs(struct vtpu_device *d,
				      struct rt_job **jobs, int n)
{
	int i, ret;

	if (!n)
		return;
	/* before the submit: the job may end (and be reaped) at once */
	for (i = 0; i < n; i++) {
		jobs[i]->submit_ns = rt_now_ns();
		submit_event(jobs[i], n);
	}
	ret = d->client->ops->submit(d, jobs, n);
	for (i = 0; ret && i < n; i++) {
		jobs[i]->status = ret;
		rt_job_done(jobs[i]);
	}
}

static void RT_COMPLETION start_attempt(struct vtpu_event *ev)
{
	struct rt_job *job = &ev->job;

	if (prepare_attempt(ev))
		submit_jobs(ev->device, &job, 1);
}

/* ---- completion ----------------------------------------------------------- */

/*
 * RT_EV_JOB: the device's record; RT_EV_OP: one span per TRACE. The
 * device's ticks are taken as nanoseconds, what vtpu.ko and the host
 * backend report (timestamp_unit_ns == 1); rt_job does not carry the
 * unit.
 */
static void profile_records(struct vtpu_event *ev)
{
	const struct drm_vtpu_profile *pr = ev->prof->map;
	uint32_t i, n = pr->trace_count;
	uint32_t max = (RT_PROFILE_BYTES - sizeof(*pr)) / sizeof(pr->trace[0]);
	char job_name[32];
	struct rt_event e = {
		.kind = RT_EV_JOB, .device = ev->device->index,
		.core = (int)pr->core, .ts_ns = pr->start,
		.dur_ns = pr->end > pr->start ? pr->end - pr->start : 0,
		.value = { pr->insns, pr->flops, pr->dma_bytes,
			   (uint64_t)(int64_t)pr->status },
	};

	/* a job that never reached a core has no record */
	if (!pr->start && !pr->end)
		return;
	/* the executable's name, else the run's: a slice is never anonymous */
	snprintf(job_name, sizeof(job_name), "job %llu",
		 (unsigned long long)ev->id);
	pthread_mutex_lock(&ev->exe->lock);
	e.name = ev->exe->name ? ev->exe->name : job_name;
	rt_profile_event(ev->client, &e);
	pthread_mutex_unlock(&ev->exe->lock);
	if (n > max)
		n = max;
	for (i = 0; i < n; i++) {
		uint64_t t = pr->trace[i].timestamp;
		uint64_t next = i + 1 < n ? pr->trace[i + 1].timestamp : pr->end;

		e.kind = RT_EV_OP;
		e.ts_ns = t;
		e.dur_ns = next > t ? next - t : 0;
		memset(e.value, 0, sizeof(e.value));
		e.value[0] = pr->trace[i].id;
		/* the session copies it: the executable may go first */
		e.name = pr->trace[i].id < ev->exe->nop_names ?
			 ev->exe->op_names[pr->trace[i].id] : NULL;
		rt_profile_event(ev->client, &e);
	}
}

/* The attempt's job ended: give back its load, records and memory. */
static void RT_COMPLETION end_attempt(struct vtpu_event *ev)
{
	struct vtpu_device *d = ev->device;
	struct rt_job *job = &ev->job;
	struct rt_event e = {
		.kind = RT_EV_COMPLETE, .device = d->index, .core = -1,
		.ts_ns = job->done_ns,
		.value = { (uint64_t)(int64_t)job->status, ev->id },
	};

	if (ev->on_device) {
		uint64_t busy = job->device_ns ? job->device_ns
					       : job->done_ns - job->submit_ns;

		__atomic_sub_fetch(&d->jobs_in_flight, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&d->jobs_completed, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&d->busy_ns, busy, __ATOMIC_RELAXED);
		ev->on_device = false;
		rt_profile_event(ev->client, &e);
		if (ev->prof)
			profile_records(ev);
		if (ev->staged && !job->status)
			unstage_outputs(ev);
	}
	release_attempt(ev);
}

/*
 * What another attempt may cure: a busy device, or a timeout, unless the
 * program loops on the device, where a timeout most likely means a loop
 * that does not end (every retry would wait the whole timeout again).
 */
static bool retryable(const struct vtpu_event *ev, int status)
{
	if (status == -ETIMEDOUT)
		return !ev->exe->loops;
	return status == -EBUSY || status == -EAGAIN;
}

/* The run ended for good: count it and let the client go idle. */
static void RT_COMPLETION finish_run(struct vtpu_event *ev, int status)
{
	struct vtpu_client *c = ev->client;
	struct rt_job *job = &ev->job;

	ev->ended = true;
	ev->status = status;
	pthread_mutex_lock(&c->lock);
	c->stats.executions++;
	if (status)
		c->stats.failures++;
	else
		c->exec_ns_sum += (double)(job->done_ns - job->submit_ns);
	if (!--c->inflight)
		pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->lock);
}

/* Waits for the current job; -ETIME when @deadline (0: none) passed. */
static int RT_COMPLETION wait_job(struct vtpu_event *ev,
				  uint64_t deadline)
{
	struct rt_job *job = &ev->job;

	for (;;) {
		int64_t left = -1;
		bool done;
		int ret;

		pthread_mutex_lock(&job->done_lock);
		done = job->done;
		pthread_mutex_unlock(&job->done_lock);
		if (done)
			return 0;
		if (deadline) {
			uint64_t now = rt_now_ns();

			left = now < deadline ? (int64_t)(deadline - now) : 0;
		}
		ret = ev->client->ops->wait(ev->device, job, left);
		if (ret && (ret != -ETIME || deadline))
			return ret;
	}
}

/* Carries the run forward to its end, retrying on the way. ev->lock held. */
static int RT_COMPLETION drive(struct vtpu_event *ev, uint64_t deadline)
{
	struct vtpu_client *c = ev->client;

	while (!ev->ended) {
		int ret = wait_job(ev, deadline);
		int status;

		if (ret)
			return ret;
		end_attempt(ev);
		status = ev->job.status;
		if (!retryable(ev, status) || ev->retries >= c->opts.max_retries) {
			finish_run(ev, status);
			break;
		}
		ev->retries++;
		pthread_mutex_lock(&c->lock);
		c->stats.retries++;
		pthread_mutex_unlock(&c->lock);
		start_attempt(ev);
	}
	return ev->status;
}

/* A run's final status as the caller sees it, with a message. */
static int RT_COMPLETION run_result(struct vtpu_event *ev)
{
	int st = ev->status;

	if (st == -ERANGE)
		rt_set_error(ev->client, ERANGE,
			     "execution failed on %s: an index is out of range (a Gather's or dynamic slice's index outside its table)",
			     ev->device->name);
	else if (st == -ETIMEDOUT)
		rt_set_error(ev->client, ETIMEDOUT,
			     "execution failed on %s after %d retries: the job ran past the job timeout (vtpu.ko's job_timeout_ms, or $VTPU_HOST_JOB_TIMEOUT_MS on the host backend; default 10 s): too much work for one job, or a loop on the device that does not end",
			     ev->device->name, ev->retries);
	else if (st)
		rt_set_error(ev->client, -st,
			     "execution failed on %s after %d retries: %s",
			     ev->device->name, ev->retries, strerror(-st));
	return st;
}

/* ---- public ---------------------------------------------------------------- */

int RT_COMPLETION vtpu_execute_async(struct vtpu_client *c,
				     struct vtpu_executable *e,
				     struct vtpu_buffer *const *inputs,
				     struct vtpu_buffer *const *outputs,
				     struct vtpu_event **out_event)
{
	int ret;

	if (!out_event)
		return rt_bad_arg(c, __func__, "no out_event");
	ret = run_new(c, e, inputs, outputs, out_event);
	if (!ret)
		start_attempt(*out_event);
	return ret;
}

int RT_COMPLETION vtpu_execute(struct vtpu_client *c,
			       struct vtpu_executable *e,
			       struct vtpu_buffer *const *inputs,
			       struct vtpu_buffer *const *outputs)
{
	struct vtpu_event *ev;
	int ret = vtpu_execute_async(c, e, inputs, outputs, &ev);

	if (ret)
		return ret;
	ret = vtpu_event_wait(ev, -1);
	vtpu_event_destroy(ev);
	return ret;
}

/* First attempts of a batch: one submit per device for all its jobs. */
static void submit_batch(struct vtpu_client *c, struct vtpu_event **evs,
			 int n, struct rt_job **jobs)
{
	int di, i, nj;

	/* an attempt that ended here (injected, no memory) is not submitted */
	for (i = 0; i < n; i++)
		if (evs[i])
			prepare_attempt(evs[i]);
	for (di = 0; di < c->ndevices; di++) {
		struct vtpu_device *d = c->devices[di];

		for (i = 0, nj = 0; i < n; i++)
			if (evs[i] && evs[i]->device == d && evs[i]->on_device)
				jobs[nj++] = &evs[i]->job;
		submit_jobs(d, jobs, nj);
	}
}

int vtpu_execute_batch(struct vtpu_client *c, struct vtpu_run *runs, int n)
{
	struct vtpu_event **evs;
	struct rt_job **jobs;
	int i, first = 0;

	if (!RT_LIVE(c, RT_KIND_CLIENT))
		return rt_bad_arg(c, __func__, "not a client");
	if (n < 0 || (n && !runs))
		return rt_set_error(c, EINVAL, "batch: bad run count %d", n);
	evs = calloc(n ? n : 1, sizeof(*evs));
	jobs = calloc(n ? n : 1, sizeof(*jobs));
	if (!evs || !jobs) {
		free(evs);
		free(jobs);
		return rt_set_error(c, ENOMEM, "out of memory");
	}
	for (i = 0; i < n; i++)
		runs[i].status = run_new(c, runs[i].exe, runs[i].inputs,
					 runs[i].outputs, &evs[i]);
	submit_batch(c, evs, n, jobs);
	for (i = 0; i < n; i++) {
		if (evs[i]) {
			runs[i].status = vtpu_event_wait(evs[i], -1);
			vtpu_event_destroy(evs[i]);
		}
		if (runs[i].status && !first)
			first = runs[i].status;
	}
	free(jobs);
	free(evs);
	return first;
}

int RT_COMPLETION vtpu_event_wait(struct vtpu_event *ev,
				  int64_t timeout_ns)
{
	uint64_t deadline = 0;
	int ret;

	if (!RT_LIVE(ev, RT_KIND_EVENT))
		return rt_bad_arg(NULL, __func__, "not an event");
	if (timeout_ns >= 0)
		deadline = rt_now_ns() + (uint64_t)timeout_ns + 1;
	pthread_mutex_lock(&ev->lock);
	ret = drive(ev, deadline);
	if (ev->ended)
		ret = run_result(ev);
	else
		ret = rt_set_error(ev->client, -ret, "wait: %s", strerror(-ret));
	pthread_mutex_unlock(&ev->lock);
	return ret;
}

int vtpu_event_done(struct vtpu_event *ev)
{
	bool ended;

	if (!RT_LIVE(ev, RT_KIND_EVENT))
		return rt_bad_arg(NULL, __func__, "not an event");
	/* someone else is driving it: not ended as far as we know */
	if (pthread_mutex_trylock(&ev->lock))
		return 0;
	/* a zero-length wait reaps a finished job and starts any retry */
	drive(ev, rt_now_ns() + 1);
	ended = ev->ended;
	pthread_mutex_unlock(&ev->lock);
	return ended;
}

void RT_COMPLETION vtpu_event_destroy(struct vtpu_event *ev)
{
	if (!ev)
		return;
	if (!RT_LIVE(ev, RT_KIND_EVENT)) {
		rt_bad_arg(NULL, __func__, "not a live event (destroyed twice?)");
		return;
	}
	pthread_mutex_lock(&ev->lock);
	while (!ev->ended)
		drive(ev, 0);
	pthread_mutex_unlock(&ev->lock);
	event_free(ev);
}
