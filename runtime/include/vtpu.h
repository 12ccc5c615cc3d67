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
 * A job running longer than the job timeout ends with -ETIMEDOUT: the
 * job_timeout_ms parameter of vtpu.ko, or VTPU_HOST_JOB_TIMEOUT_MS on the
 * host backend (milliseconds, default 10000 as vtpu.ko's).
 *
 * Ownership: the client owns its devices; buffers, executables, events
 * and profile sessions belong to their creator, who destroys them,
 * normally before the client; whatever is left when the client is
 * destroyed, the client releases (see vtpu_client_destroy()). Thread
 * safety: a client and its objects may be used from any number of
 * threads at once, except that one buffer must not be written by two
 * threads at the same time, and destroy functions must not race with
 * uses of the same object.
 *
 * Misuse policy (argument checks, as IREE's IREE_ASSERT_ARGUMENT):
 *  - A NULL handle or a NULL out-pointer where one is required makes a
 *    function return -EINVAL, with a message (on the handle's client
 *    when there is one, else under vtpu_client_error(NULL)); it never
 *    crashes. Functions that cannot return an errno return a neutral
 *    value instead: vtpu_client_backend() "", vtpu_buffer_size() 0,
 *    vtpu_buffer_placement() VTPU_PLACE_AUTO (never a real placement),
 *    vtpu_client_error() "" for a handle that is not a client's.
 *    Optional pointers are said so where declared (the options of
 *    vtpu_client_create(), the @err buffers of the host tensor
 *    functions, a data pointer with a size of 0).
 *  - Destroy and free functions accept NULL and do nothing.
 *  - Every handle carries a magic number that its destroy overwrites
 *    before freeing it. A handle of the wrong kind, or one used or
 *    destroyed again after its destroy while its memory has not been
 *    reused yet, is therefore refused (-EINVAL with a message; a
 *    destroy does nothing and leaves the message under
 *    vtpu_client_error(NULL)). This is a debugging aid, not a promise:
 *    once the allocator reuses the memory, using a destroyed handle,
 *    a double destroy included, is undefined behaviour (AddressSanitizer
 *    reports it as a use after free).
 *  - Handles of another client are -EINVAL. The library never calls
 *    exit() or abort() and never prints, except as VTPU_DEBUG asks.
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
	/*
	 * The compile cache's directory. "": none (memory only). Otherwise
	 * the first of these that can be created (0700) and written is
	 * used: this one when not NULL, $VTPU_CACHE_DIR, $XDG_CACHE_HOME/vtpu,
	 * $HOME/.cache/vtpu, then ${TMPDIR:-/tmp}/vtpu-cache-<uid> (a
	 * directory of this user's, mode 0700, not a symlink). Which one and
	 * why the earlier ones were passed over: vtpu_client_cache_dir();
	 * with VTPU_DEBUG set, the reason is also printed to stderr once.
	 */
	const char *cache_dir;
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
/*
 * Ends the client. Runs still outstanding are finished first, whether
 * or not anyone waited on them: each is waited for to its end (retries
 * included; none is cancelled), then its event is freed. Then whatever
 * the caller did not destroy goes, in this order: events, profile
 * sessions (not written), executables, buffers; finally the devices.
 * The handles of all of them are invalid afterwards. Must not race with
 * other calls on the client or its objects.
 */
void vtpu_client_destroy(struct vtpu_client *c);

/*
 * The last failure's message for this thread, or "". With @c NULL: the
 * thread's last message from any client, vtpu_client_create() included.
 */
const char *vtpu_client_error(const struct vtpu_client *c);
/* "accel" or "host": the backend the client actually uses. */
const char *vtpu_client_backend(const struct vtpu_client *c);

/*
 * The compile cache's directory (vtpu_client_options.cache_dir says how
 * it is chosen), "" when programs are cached in memory only. *@out_note,
 * when @out_note is not NULL, gets why earlier choices were passed over
 * or why there is no directory ("" when the first choice worked). The
 * strings live as long as the client. 0 or -EINVAL.
 */
int vtpu_client_cache_dir(const struct vtpu_client *c, const char **out_dir,
			  const char **out_note);

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

/* The number of devices, or -EINVAL. */
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
/*
 * Parses and compiles an ONNX model's bytes bound by @b (see
 * vtpu_onnx_parse_bound()), through the compile cache by source
 * (vtpu_compile_onnx()): compiling the same bytes again, in this process
 * or another sharing the cache's directory, does not parse them.
 */
int vtpu_executable_compile_onnx(struct vtpu_client *c, const void *data,
				 size_t len, const struct vtpu_onnx_binding *b,
				 int n, struct vtpu_executable **out_exe);
/* Unloads it from every device and frees it. */
void vtpu_executable_destroy(struct vtpu_executable *e);
/*
 * Names it in profiles: its jobs' slices carry @name (copied). HLO
 * executables start with their HloModule's name; others have none, and
 * their jobs are named "job <run id>". 0, -EINVAL or -ENOMEM.
 */
int vtpu_executable_set_name(struct vtpu_executable *e, const char *name);
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
 * Where a run goes (vtpu_client_set_run_placement()).
 *
 * VTPU_RUN_WITH_BUFFERS, the default: a run uses the device its buffers
 * are on. All of its input and output buffers must be on one device
 * (else -EINVAL); only a run of an executable without any buffers goes
 * to the least loaded device (fewest jobs in flight, then least busy
 * time). Buffers created once on one device therefore keep every run on
 * that device, however loaded: spread them with vtpu_buffer_create()'s
 * device argument (NULL picks the least loaded device at creation).
 *
 * VTPU_RUN_LEAST_LOADED: a run goes to the least loaded device. When
 * its buffers are elsewhere, the runtime copies the inputs to scratch
 * buffers on that device before the run and the outputs back into the
 * caller's buffers after it (the profile shows them as "copy_in" and
 * "copy_out" slices on the device's submit queue). This pays two copies
 * per run for the balance; it suits runs long next to their I/O.
 */
enum vtpu_run_placement {
	VTPU_RUN_WITH_BUFFERS,
	VTPU_RUN_LEAST_LOADED,
};

/* Sets how later runs of @c pick their device. 0 or -EINVAL. */
int vtpu_client_set_run_placement(struct vtpu_client *c,
				  enum vtpu_run_placement p);

/*
 * Runs @e on @inputs (one buffer per parameter, each at least the
 * parameter's size) into @outputs (one per output), on the device the
 * run placement above picks: by default the one its buffers are on.
 * Scratch memory is reserved for the run from the device's pool
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

/* ---- host tensors and model introspection ------------------------------- */

/*
 * What applications feed and read: tensors in host element types (ONNX's
 * TensorProto numbering, which .pb files and model signatures use), read
 * from .npy or .pb files and converted to and from the device types
 * (enum vtpu_type) at the boundary. These functions need no client; they
 * are thread-safe and write their message into @err (@errlen bytes, may
 * be NULL) rather than a client's.
 */
enum vtpu_elem {
	VTPU_ELEM_UNDEFINED = 0,
	VTPU_ELEM_FLOAT = 1,
	VTPU_ELEM_UINT8 = 2,
	VTPU_ELEM_INT8 = 3,
	VTPU_ELEM_UINT16 = 4,
	VTPU_ELEM_INT16 = 5,
	VTPU_ELEM_INT32 = 6,
	VTPU_ELEM_INT64 = 7,
	VTPU_ELEM_STRING = 8,
	VTPU_ELEM_BOOL = 9,
	VTPU_ELEM_FLOAT16 = 10,
	VTPU_ELEM_DOUBLE = 11,
	VTPU_ELEM_UINT32 = 12,
	VTPU_ELEM_UINT64 = 13,
	VTPU_ELEM_BFLOAT16 = 16,
};

/* Ranks of host tensors: ONNX test data goes beyond VTPU_MAX_RANK. */
#define VTPU_TENSOR_MAX_RANK	16

/* A host tensor; vtpu_tensor_free() releases what the loader allocated. */
struct vtpu_tensor {
	enum vtpu_elem dtype;
	int rank;
	int64_t dims[VTPU_TENSOR_MAX_RANK];
	size_t n;			/* elements: the product of dims */
	void *data;			/* n elements, little-endian, owned */
	char *name;			/* a .pb's TensorProto.name, or NULL */
};

/* Bytes of one host element; 0 for types without a fixed size (STRING). */
size_t vtpu_elem_size(enum vtpu_elem dt);
/* ONNX's name: "float", "int64", "bool", ...; "undefined" for others. */
const char *vtpu_elem_name(enum vtpu_elem dt);
/* The host type holding a device type's elements as they are (F32: FLOAT). */
enum vtpu_elem vtpu_type_elem(enum vtpu_type t);

/*
 * Converts @n elements of @from at @src into @to at @dst (which holds
 * n * vtpu_elem_size(@to) bytes; @src and @dst may not overlap). Floats
 * round to the narrower float (to nearest even; NaN stays NaN); anything
 * becomes BOOL as "!= 0". Into an integer type, a value must be integral
 * and fit: -ERANGE names the first one that does not, never a silent
 * wrap (int64 inputs compute as s32 on the device). -EOPNOTSUPP for
 * STRING and unknown types.
 */
int vtpu_elem_convert(enum vtpu_elem from, const void *src, size_t n,
		       enum vtpu_elem to, void *dst, char *err, size_t errlen);

/*
 * Reads the whole file @path into *@out (NUL-terminated, which HLO text
 * wants; the caller frees it) and its length, not counting the NUL,
 * into *@len. 0 or -errno.
 */
int vtpu_read_file(const char *path, void **out, size_t *len);

/*
 * Reads a tensor file: .npy (version 1 to 3, C order, little-endian, any
 * numeric or bool type) when @path ends in ".npy", else an ONNX
 * TensorProto (.pb), raw_data or the typed fields.
 * -EOPNOTSUPP for element types or storage it cannot decode (strings,
 * external data), -EINVAL for files that are not tensors, -errno when
 * the file cannot be read. *@out is zeroed first, owned by the caller.
 */
int vtpu_tensor_load(const char *path, struct vtpu_tensor *out, char *err,
		     size_t errlen);
/* The same from a serialized TensorProto in memory. */
int vtpu_tensor_decode_pb(const void *data, size_t len,
			  struct vtpu_tensor *out, char *err, size_t errlen);
/* The same from the bytes of a .npy file in memory. */
int vtpu_tensor_decode_npy(const void *data, size_t len,
			   struct vtpu_tensor *out, char *err, size_t errlen);
/* Writes @t as a version-1 .npy file. */
int vtpu_tensor_save_npy(const char *path, const struct vtpu_tensor *t,
			 char *err, size_t errlen);
/* Frees data and name and zeroes @t; a zeroed tensor is fine. */
void vtpu_tensor_free(struct vtpu_tensor *t);

/* One graph input or output as an ONNX model declares it. */
struct vtpu_model_value {
	char *name;
	enum vtpu_elem dtype;		/* UNDEFINED: not a tensor */
	int rank;			/* -1: the model gives no shape */
	int64_t dims[VTPU_TENSOR_MAX_RANK];	/* -1 where not static */
	char *dim_params[VTPU_TENSOR_MAX_RANK];	/* symbolic names, or NULL */
};

/*
 * The signature of an ONNX model: its graph inputs that are not
 * initializers (in order: what callers feed) and its outputs.
 */
struct vtpu_model_info {
	int ninputs, noutputs;
	struct vtpu_model_value *inputs, *outputs;
};

/*
 * Lists the inputs and outputs of the serialized ModelProto @data.
 * -EINVAL with a message when the bytes are not a model with a graph.
 * Free with vtpu_model_info_free().
 */
int vtpu_model_info(const void *data, size_t len,
		    struct vtpu_model_info **out, char *err, size_t errlen);
void vtpu_model_info_free(struct vtpu_model_info *m);

/*
 * Fills @b (room for @n) with the bindings vtpu_onnx_parse_bound() takes
 * for the tensors @t: the i-th binds the i-th input of @m, or the input
 * its name names, by its dims (rank -1 beyond VTPU_MAX_RANK), and INT32
 * and INT64 tensors by their values as int64, FLOAT and DOUBLE ones as
 * doubles (used only where the model needs a compile-time constant).
 * Zeroed tensors (UNDEFINED: not decoded) and tensors beyond the inputs
 * bind nothing. The values live in *@values, which the caller frees with
 * free() after parsing; names point into @m. Returns the number of
 * bindings, -ENOMEM, or -EINVAL when @m, @values, or (with @n > 0) @t
 * or @b is NULL.
 */
int vtpu_model_bind(const struct vtpu_model_info *m,
		    const struct vtpu_tensor *t, int n,
		    struct vtpu_onnx_binding *b, void **values,
		    char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* VTPU_H */
