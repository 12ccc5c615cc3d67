/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * rt.h - libvtpu internals, one section per file. The front end
 * (client.c, buffer.c, pool.c, executable.c, execute.c, stats.c)
 * implements vtpu.h on top of a backend (backend_accel.c,
 * backend_host.c) reached through struct rt_backend_ops, like IREE's HAL
 * drivers.
 *
 * An executable is loaded once per device, on first use: its program
 * (validated then, by the kernel or by the host backend) and its weights
 * (uploaded into a read-only buffer, HBM when it fits) stay there until
 * the executable is destroyed. An execution then only reserves its
 * scratch from the device's pool and submits: nothing per run grows with
 * the program or its weights.
 */
#ifndef VTPU_RT_H
#define VTPU_RT_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vtpu.h"

#define RT_MAX_DEVICES	16
#define RT_MAX_BINDINGS	64

struct rt_bo;		/* a backend buffer: a GEM BO, or host memory */
struct rt_prog;		/* a program loaded on a device: the backend's */
struct rt_job;

/* ---- backends: backend_accel.c, backend_host.c ------------------------- */

struct rt_backend_ops {
	const char *name;	/* "accel", "host" */
	/*
	 * Finds and opens the devices: fills c->devices / c->ndevices
	 * (allocating each struct vtpu_device with rt_device_alloc()).
	 * -ENODEV with a message (rt_set_error) when there is none.
	 */
	int (*open)(struct vtpu_client *c, const struct vtpu_client_options *o);
	/* Closes every device; all work has ended and all BOs are freed. */
	void (*close)(struct vtpu_client *c);
	/* Live figures: memory, cores, VMEM (not the load counters). */
	int (*query)(struct vtpu_device *d, struct vtpu_device_info *out);
	/*
	 * The number of free HBM ranges now (@info: a query just made),
	 * for profiles' fragmentation counters; 0 when it cannot tell.
	 * Not in struct vtpu_device_info, whose size is ABI.
	 */
	uint64_t (*free_blocks)(struct vtpu_device *d,
				const struct vtpu_device_info *info);
	/* @placed: where it landed (HBM or HOST). -ENOSPC: HBM only, full. */
	int (*bo_create)(struct vtpu_device *d, uint64_t size,
			 enum vtpu_placement p, struct rt_bo **out,
			 enum vtpu_placement *placed);
	void (*bo_destroy)(struct vtpu_device *d, struct rt_bo *bo);
	/* A CPU mapping of the whole buffer, valid until it is destroyed. */
	void *(*bo_map)(struct vtpu_device *d, struct rt_bo *bo);
	/*
	 * Loads a program onto @d for every job that will run it: copies
	 * it where nobody can change it and validates it completely, once
	 * (vtpu.ko's PROGRAM_CREATE, vtpu_prog_load() on the host). A job
	 * then names it (job->prog) and its submission checks only its
	 * bindings. -EINVAL with a message: the program is invalid.
	 */
	int (*prog_load)(struct vtpu_device *d, const void *prog,
			 uint64_t size, struct rt_prog **out);
	/* Drops it; jobs already submitted keep what they need. */
	void (*prog_unload)(struct vtpu_device *d, struct rt_prog *p);
	/*
	 * Submits @n jobs together (one io_uring_enter() on accel). Each job
	 * ends later: the backend sets job->status, job->device_ns and the
	 * profile, then calls rt_job_done(job). A job that cannot even be
	 * submitted ends the same way, with its errno. Returns 0, or -errno
	 * when nothing at all could be submitted (then no job ends).
	 */
	int (*submit)(struct vtpu_device *d, struct rt_job **jobs, int n);
	/*
	 * Makes progress: reaps completions (calling rt_job_done) until
	 * @job has ended or @timeout_ns passed (< 0: forever); -ETIME then.
	 * May be called from several threads at once.
	 */
	int (*wait)(struct vtpu_device *d, struct rt_job *job,
		    int64_t timeout_ns);
};

extern const struct rt_backend_ops rt_backend_accel;
extern const struct rt_backend_ops rt_backend_host;

/* ---- objects ----------------------------------------------------------- */

/*
 * Every handle vtpu.h hands out starts with a struct rt_obj. Its magic
 * says what the handle is while it lives; destroy overwrites it with
 * RT_MAGIC_DEAD before the free, so a handle used again after its
 * destroy (its memory not yet reused) or a handle of the wrong kind is
 * refused with -EINVAL rather than followed (vtpu.h's misuse policy).
 * Buffers, executables, events and profile sessions are also linked on
 * their client's list (under c->lock), so that vtpu_client_destroy()
 * can release what the caller left behind.
 */
enum rt_kind {
	RT_KIND_CLIENT = 1,
	RT_KIND_DEVICE,
	RT_KIND_BUFFER,
	RT_KIND_EXECUTABLE,
	RT_KIND_EVENT,
	RT_KIND_PROFILE,
};

#define RT_MAGIC(kind)	(0x76747000u | (uint32_t)(kind))	/* "vtp" */
#define RT_MAGIC_DEAD	0x64656164u				/* "dead" */

struct rt_obj {
	uint32_t magic;
	struct rt_obj *prev, *next;	/* the client's list; NULL: not on it */
};

/* Whether @o (may be NULL) is a live object of @kind. */
static inline bool rt_obj_ok(const struct rt_obj *o, enum rt_kind kind)
{
	return o && __atomic_load_n(&o->magic, __ATOMIC_RELAXED) ==
		    RT_MAGIC(kind);
}

#define RT_LIVE(p, kind)	((p) && rt_obj_ok(&(p)->obj, (kind)))

/*
 * A device's pool of idle per-execution buffers (pool.c). Protected by
 * its lock; the buffers are listed through vtpu_buffer.pool_next.
 */
struct rt_pool {
	pthread_mutex_t lock;
	struct vtpu_buffer *idle;	/* most recently returned first */
	uint64_t idle_bytes;		/* of them, all placements */
	uint64_t idle_hbm;		/* of them, in HBM */
	uint64_t reuses, creates;	/* reservations served either way */
};

struct vtpu_device {
	struct rt_obj obj;		/* RT_KIND_DEVICE */
	struct vtpu_client *client;
	int index;
	char name[32];
	void *priv;			/* the backend's */
	uint64_t vmem_size;
	uint64_t hbm_total;		/* fixed: read once at open */
	int cores;
	struct rt_pool pool;
	/* load, for device selection and statistics */
	uint64_t jobs_in_flight;	/* atomic */
	uint64_t jobs_completed;	/* atomic */
	uint64_t busy_ns;		/* atomic: sum of device times */
};

struct vtpu_client {
	struct rt_obj obj;		/* RT_KIND_CLIENT */
	const struct rt_backend_ops *ops;
	struct vtpu_client_options opts;
	struct vtpu_device *devices[RT_MAX_DEVICES];
	int ndevices;
	struct vtpu_cache *cache;
	struct vtpu_device_params params;	/* for compiling */
	uint64_t open_ns;
	pthread_mutex_t lock;		/* protects the fields below */
	int inject_left;
	struct vtpu_stats stats;	/* device[] filled on demand */
	double exec_ns_sum;
	struct vtpu_profile *profile;	/* the active session, or NULL */
	uint64_t inflight;		/* runs not yet ended */
	pthread_cond_t idle;		/* inflight reached 0 */
	struct rt_obj objs;		/* list head: live objects */
	enum vtpu_run_placement run_placement;
	char *cache_dir;		/* the compile cache's, or NULL: none */
	char cache_note[512];		/* why not the first choice, or "" */
};

struct vtpu_buffer {
	struct rt_obj obj;		/* RT_KIND_BUFFER */
	struct vtpu_client *client;
	struct vtpu_device *device;
	struct rt_bo *bo;
	uint64_t size;
	enum vtpu_placement placed;
	void *map;
	/* pool.c's, for buffers of the execution memory pool */
	enum vtpu_placement asked;
	struct vtpu_buffer *pool_next;	/* while idle in the pool */
};

/* What an executable keeps on one device, from its first use there. */
struct rt_resident {
	struct rt_prog *prog;		/* loaded: validated once */
	struct vtpu_buffer *weights;	/* uploaded once; NULL: none */
};

struct vtpu_executable {
	struct rt_obj obj;		/* RT_KIND_EXECUTABLE */
	struct vtpu_client *client;
	char *name;			/* for profiles; NULL: none given */
	struct vtpu_program *prog;
	pthread_mutex_t lock;		/* protects on[] */
	struct rt_resident on[RT_MAX_DEVICES];
	int weights_binding;		/* -1: none */
	int nin, nout;
	/* TRACE id -> op name, into the program's metadata section */
	const char **op_names;
	uint32_t nop_names;
	/*
	 * The program branches (loops on the device): a timeout then is
	 * most likely a loop that does not end, and is not retried.
	 */
	bool loops;
	struct vtpu_shape in_shape[RT_MAX_BINDINGS];
	struct vtpu_shape out_shape[RT_MAX_BINDINGS];
};

/*
 * A job: one program run on one device. Built by execute.c, run by a
 * backend. The bindings follow the program's binding table.
 */
struct rt_job {
	struct vtpu_device *device;
	struct vtpu_executable *exe;
	struct rt_prog *prog;		/* loaded on @device */
	int nbind;
	struct rt_bo *bind[RT_MAX_BINDINGS];
	uint64_t bind_size[RT_MAX_BINDINGS];
	uint32_t bind_flags[RT_MAX_BINDINGS];	/* DRM_VTPU_BIND_* */
	struct rt_bo *profile_bo;	/* receives struct drm_vtpu_profile */
	uint64_t profile_size;
	/* results */
	int status;			/* 0 or -errno */
	uint64_t device_ns;		/* time on the core, if known */
	uint64_t submit_ns, done_ns;	/* CLOCK_MONOTONIC */
	bool done;			/* set (under done_lock) by rt_job_done */
	pthread_mutex_t done_lock;
	pthread_cond_t done_cond;
	void (*on_done)(struct rt_job *job);	/* execute.c's, may be NULL */
	void *ctx;			/* execute.c's */
};

/* ---- helpers: client.c ---------------------------------------------------- */

struct vtpu_device *rt_device_alloc(struct vtpu_client *c, const char *name);
/* Records @fmt as the thread's last error for @c; returns -@err. */
int rt_set_error(const struct vtpu_client *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
uint64_t rt_now_ns(void);
/* The client of @c if it is a live one, else NULL. */
static inline const struct vtpu_client *rt_live_client(const struct vtpu_client *c)
{
	return RT_LIVE(c, RT_KIND_CLIENT) ? c : NULL;
}

/*
 * The misuse policy's message: records "@fn: @what" for @c (NULL, or not
 * a live client: the caller without one, vtpu_client_error(NULL)) and
 * returns -EINVAL. Inline, like the two below, so that profile.c links
 * without client.c (tests/unit/rt_profile.c supplies rt_set_error()).
 */
static inline int rt_bad_arg(const struct vtpu_client *c, const char *fn,
			     const char *what)
{
	return rt_set_error(rt_live_client(c), EINVAL, "%s: %s", fn, what);
}

/*
 * Links @o, of @kind, on @c's list of live objects. A client whose list
 * was never set up (a bare zeroed one, as profile.c's unit test uses)
 * keeps nothing on it.
 */
static inline void rt_obj_add(struct vtpu_client *c, struct rt_obj *o,
			      enum rt_kind kind)
{
	o->magic = RT_MAGIC(kind);
	pthread_mutex_lock(&c->lock);
	if (c->objs.next) {
		o->next = c->objs.next;
		o->prev = &c->objs;
		c->objs.next->prev = o;
		c->objs.next = o;
	}
	pthread_mutex_unlock(&c->lock);
}

/* Takes @o off @c's list and marks it dead, before its free. */
static inline void rt_obj_del(struct vtpu_client *c, struct rt_obj *o)
{
	pthread_mutex_lock(&c->lock);
	if (o->next) {
		o->prev->next = o->next;
		o->next->prev = o->prev;
		o->next = o->prev = NULL;
	}
	/* a second destroy sees a dead handle */
	__atomic_store_n(&o->magic, RT_MAGIC_DEAD, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->lock);
}
/* Marks @job ended: wakes waiters, calls job->on_done. */
void rt_job_done(struct rt_job *job);

/*
 * The completion path: what runs from a job's end until the caller has
 * its result (rt_job_done, the event's wait and teardown, the pool's
 * release, the host backend's submit loop). Its functions sit together
 * in one section, a few pages of code, so that rt_completion_prefetch()
 * can ask for all of it at once.
 */
#define RT_COMPLETION __attribute__((section("vtpu_completion")))
/*
 * A job that streamed more than the CPU's caches hold (the host backend
 * runs jobs on the caller's CPU) leaves the completion path's code and
 * the C library's locking and free() evicted, and their TLB entries
 * with them. Fetched on demand, each line and page waits for the one
 * before; prefetched together, the misses overlap. Measured with
 * `vtpu-bench runtime` (medians of 15 runs): the overhead after a
 * 64 MiB job fell from 1.42x a tiny job's to 1.05x.
 */
#define RT_COMPLETION_PREFETCH_BYTES	(1u << 20)	/* a CPU's L2 */
void rt_completion_prefetch(void);
/* The section's bounds, which the linker defines. */
extern const char __start_vtpu_completion[], __stop_vtpu_completion[];
/* The least loaded device (jobs in flight, then busy time). */
struct vtpu_device *rt_pick_device(struct vtpu_client *c);

/* ---- executable.c ---------------------------------------------------------- */

/*
 * What @e keeps on @d, loading it there first if this is its first use:
 * the program validated once, the weights uploaded once.
 */
int rt_exe_resident(struct vtpu_executable *e, struct vtpu_device *d,
		    struct rt_resident *out);

/* ---- pool.c: per-execution memory ------------------------------------------ */

void rt_pool_init(struct rt_pool *p);
/*
 * Reserves @size bytes of placement @p on @d for one attempt: an idle
 * pooled buffer that fits, else a new one. Its contents are whatever
 * the last user left (the compiler never reads scratch it did not
 * write); rt_pool_put() gives it back.
 */
int rt_pool_get(struct vtpu_device *d, uint64_t size, enum vtpu_placement p,
		struct vtpu_buffer **out);
void rt_pool_put(struct vtpu_buffer *b);
/* Frees idle buffers (@hbm_only: those in HBM); returns the bytes. */
uint64_t rt_pool_trim(struct vtpu_device *d, bool hbm_only);
/* Frees every idle buffer; nothing may be reserved any more. */
void rt_pool_fini(struct vtpu_device *d);

/* ---- profile.c ----------------------------------------------------------- */

enum rt_event_kind {
	RT_EV_COMPILE,		/* name: cache hit or miss */
	RT_EV_ALLOC,		/* a buffer: size, placement */
	RT_EV_FREE,
	RT_EV_SUBMIT,
	RT_EV_COMPLETE,
	RT_EV_JOB,		/* the device's record: core, start, end */
	RT_EV_OP,		/* a TRACE span on a core */
	RT_EV_MEMORY,		/* counter: HBM used, fragmentation */
	RT_EV_RESERVE,		/* an attempt's memory: size, from the pool */
	RT_EV_RELEASE,
	RT_EV_LOAD,		/* an executable loaded onto a device */
	RT_EV_COPY,		/* a staged run's copy_in / copy_out */
};

struct rt_event {
	enum rt_event_kind kind;
	int device;
	int core;			/* -1: host side */
	uint64_t ts_ns, dur_ns;
	const char *name;		/* static or owned by the session */
	uint64_t value[4];		/* kind-specific, see profile.c */
};

/* Appends an event to the client's active session, if any. */
void rt_profile_event(struct vtpu_client *c, const struct rt_event *ev);
/* Whether a session is recording (a hint: it may stop at once). */
bool rt_profiling(struct vtpu_client *c);

#endif /* VTPU_RT_H */
