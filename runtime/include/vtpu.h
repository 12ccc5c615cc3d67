/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu.h - libvtpu, the vtpu runtime.
 *
 *	struct vtpu_client *c;
 *	vtpu_client_create(NULL, &c);		// accel if present, else host
 *	vtpu_executable_compile(c, graph, &exe);	// cached by content
 *	vtpu_execute(c, exe, inputs, outputs);	// buffers in, buffers out
 *
 * Conventions (IREE / PJRT style): opaque objects, vtpu_<object>_<verb>
 * names, out_ parameters last. Every function returns 0 or a negative
 * errno and never sets errno; after a failure vtpu_client_error() gives
 * a readable message (per client, per thread). The library never calls
 * exit() or abort().
 *
 * Backends: "accel" runs on /dev/accel/accelN vtpu devices through
 * io_uring (the ioctls when io_uring is unavailable); "host" runs the
 * same executor in-process. "auto" (the default, or the VTPU_BACKEND
 * environment variable) picks accel when a vtpu device exists, else host.
 *
 * Ownership: the client owns its devices; buffers, executables, events
 * and profile sessions belong to their creator, who destroys them (all
 * before the client). Thread safety: a client and its objects may be
 * used from any number of threads at once, except that one buffer must
 * not be written by two threads at the same time, and destroy functions
 * must not race with uses of the same object.
 */
#ifndef VTPU_H
#define VTPU_H

#include <stddef.h>
#include <stdint.h>

#include "vtpu_compiler.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VTPU_VERSION_MAJOR	0
#define VTPU_VERSION_MINOR	1

struct vtpu_client;
struct vtpu_device;
struct vtpu_buffer;
struct vtpu_executable;
struct vtpu_event;
struct vtpu_profile;

/* ---- client ------------------------------------------------------------ */

enum vtpu_backend {
	VTPU_BACKEND_AUTO,
	VTPU_BACKEND_ACCEL,
	VTPU_BACKEND_HOST,
};

struct vtpu_client_options {
	enum vtpu_backend backend;	/* AUTO: VTPU_BACKEND, else auto */
	int host_devices;		/* host backend: devices (default 1) */
	int host_cores;			/* host backend: cores (default 2) */
	uint64_t host_hbm_size;		/* host backend: bytes (default 256 MiB) */
	uint64_t host_vmem_size;	/* host backend: bytes (default 1 MiB) */
	int max_retries;		/* retryable failures (default 3) */
	int cache_entries;		/* compile cache, in memory (default 64) */
	const char *cache_dir;		/* NULL: $XDG_CACHE_HOME/vtpu; "": none */
	/*
	 * Test hook: fail the next @inject_failures executions with
	 * @inject_errno before they reach the device, once their memory
	 * is reserved (which must come back).
	 */
	int inject_failures;
	int inject_errno;
};

/* Fills @o with the defaults. */
void vtpu_client_options_init(struct vtpu_client_options *o);

/*
 * Opens a client. -ENODEV when the backend asked for has no device (the
 * message says how to load vtpu.ko, or to use the host backend).
 */
int vtpu_client_create(const struct vtpu_client_options *o,
		       struct vtpu_client **out_client);
/* Waits for work in flight, then releases everything the client holds. */
void vtpu_client_destroy(struct vtpu_client *c);

/*
 * The last failure's message for this thread, or "". With @c NULL: the
 * thread's last message from any client, vtpu_client_create() included.
 */
const char *vtpu_client_error(const struct vtpu_client *c);
/* "accel" or "host": the backend the client actually uses. */
const char *vtpu_client_backend(const struct vtpu_client *c);

/* ---- devices ----------------------------------------------------------- */

struct vtpu_device_info {
	int index;
	char name[32];			/* "accel0", "host0" */
	int cores;
	uint64_t hbm_total, hbm_free, hbm_largest_free;
	uint64_t host_bytes;		/* backing store in use */
	uint64_t vmem_size;
	uint64_t jobs_in_flight;	/* observed load */
	uint64_t jobs_completed;
};

int vtpu_client_device_count(const struct vtpu_client *c);
int vtpu_client_device(struct vtpu_client *c, int index,
		       struct vtpu_device **out_device);
int vtpu_device_info(struct vtpu_device *d, struct vtpu_device_info *out);

/* ---- buffers ----------------------------------------------------------- */

enum vtpu_placement {
	VTPU_PLACE_AUTO,	/* HBM, or the backing store when HBM is short */
	VTPU_PLACE_HBM,
	VTPU_PLACE_HOST,
};

/* A buffer of @size bytes on @d (NULL: the least loaded device). */
int vtpu_buffer_create(struct vtpu_client *c, struct vtpu_device *d,
		       uint64_t size, enum vtpu_placement p,
		       struct vtpu_buffer **out_buffer);
void vtpu_buffer_destroy(struct vtpu_buffer *b);
int vtpu_buffer_upload(struct vtpu_buffer *b, uint64_t offset,
		       const void *data, uint64_t size);
int vtpu_buffer_download(struct vtpu_buffer *b, uint64_t offset, void *data,
			 uint64_t size);
uint64_t vtpu_buffer_size(const struct vtpu_buffer *b);
/* Where the buffer really lives: HBM or HOST. */
enum vtpu_placement vtpu_buffer_placement(const struct vtpu_buffer *b);

/* ---- executables ------------------------------------------------------- */

/*
 * Compiles @g (the graph stays the caller's) through the compile cache.
 * On its first use on a device, an executable is loaded there once: its
 * program is validated and its weights (large constants) are uploaded
 * into a read-only buffer (HBM, or the backing store when HBM is short)
 * that stays until the executable is destroyed. Executions then copy,
 * validate and upload nothing of either.
 */
int vtpu_executable_compile(struct vtpu_client *c,
			    const struct vtpu_graph *g,
			    struct vtpu_executable **out_exe);
/* Parses and compiles XLA HLO text. */
int vtpu_executable_compile_hlo(struct vtpu_client *c, const char *text,
				size_t len, struct vtpu_executable **out_exe);
/* Unloads it from every device and frees it. */
void vtpu_executable_destroy(struct vtpu_executable *e);
/* FLOPs, estimated time, memory by kind: the compiler's cost model. */
int vtpu_executable_cost(const struct vtpu_executable *e,
			 struct vtpu_cost *out);
int vtpu_executable_num_inputs(const struct vtpu_executable *e);
int vtpu_executable_num_outputs(const struct vtpu_executable *e);
int vtpu_executable_input_shape(const struct vtpu_executable *e, int i,
				struct vtpu_shape *out);
int vtpu_executable_output_shape(const struct vtpu_executable *e, int i,
				 struct vtpu_shape *out);

/* ---- execution --------------------------------------------------------- */

/*
 * Runs @e on @inputs (one buffer per parameter, each at least the
 * parameter's size) into @outputs (one per output), on the least loaded
 * device. Scratch memory is reserved for the run from the device's pool
 * and released to it whatever happens (the pool keeps it for the next
 * run, and gives idle HBM back when buffers need it). Retryable
 * failures (-ETIMEDOUT, -EBUSY, -EAGAIN) are retried up to the client's
 * budget; others are returned at once.
 */
int vtpu_execute(struct vtpu_client *c, struct vtpu_executable *e,
		 struct vtpu_buffer *const *inputs,
		 struct vtpu_buffer *const *outputs);

/* The same, returning at once; the event tells when it ended. */
int vtpu_execute_async(struct vtpu_client *c, struct vtpu_executable *e,
		       struct vtpu_buffer *const *inputs,
		       struct vtpu_buffer *const *outputs,
		       struct vtpu_event **out_event);

/* One run of a batch. */
struct vtpu_run {
	struct vtpu_executable *exe;
	struct vtpu_buffer *const *inputs;
	struct vtpu_buffer *const *outputs;
	int status;			/* out: 0 or -errno of this run */
};

/*
 * Submits @n runs together (one io_uring_enter() on the accel backend)
 * and waits for all. Returns 0 when every run succeeded, else the first
 * failure; each run's own result is in its status.
 */
int vtpu_execute_batch(struct vtpu_client *c, struct vtpu_run *runs, int n);

/* Waits for the run; returns its status. @timeout_ns < 0: forever. */
int vtpu_event_wait(struct vtpu_event *ev, int64_t timeout_ns);
/* 1 if ended, 0 if not yet. */
int vtpu_event_done(struct vtpu_event *ev);
/* Waits if needed, then frees. */
void vtpu_event_destroy(struct vtpu_event *ev);

/* ---- statistics -------------------------------------------------------- */

struct vtpu_stats {
	uint64_t executions;		/* runs that ended, any status */
	uint64_t failures;		/* of those, failed */
	uint64_t retries;
	double avg_execution_ns;	/* submit to completion, successful */
	double error_rate;		/* failures / executions */
	uint64_t cache_hits, cache_misses;
	double cache_hit_rate;
	uint64_t program_loads;		/* executables loaded onto a device */
	uint64_t weight_uploads;	/* weights uploaded (once per load) */
	uint64_t weight_bytes;		/* bytes those uploads copied */
	int ndevices;
	struct {
		double utilisation;	/* busy time / wall time since open */
		uint64_t busy_ns;	/* time on the cores, all jobs */
		uint64_t executions;
		uint64_t hbm_used, hbm_total;
		double memory_utilisation;	/* hbm_used / hbm_total */
		uint64_t pool_idle;	/* bytes the pool keeps, idle */
		uint64_t pool_reuses;	/* reservations it served */
		uint64_t pool_creates;	/* reservations that made a buffer */
	} device[16];
};

int vtpu_client_stats(struct vtpu_client *c, struct vtpu_stats *out);

/* ---- profiling --------------------------------------------------------- */

/*
 * A profile session records, from its start to its stop: compiles,
 * buffer allocations and releases with fragmentation snapshots, submits
 * and completions, the device's per-job records and per-op TRACE
 * timestamps. One session at a time per client.
 */
int vtpu_profile_start(struct vtpu_client *c, struct vtpu_profile **out);
/* Stops recording and writes Chrome trace JSON (Perfetto opens it). */
int vtpu_profile_stop(struct vtpu_profile *p, const char *path);
void vtpu_profile_destroy(struct vtpu_profile *p);

#ifdef __cplusplus
}
#endif

#endif /* VTPU_H */
