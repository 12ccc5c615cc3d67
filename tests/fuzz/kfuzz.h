/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu-kfuzz: a struct-aware fuzzer of the vtpu uAPI, run as root in the
 * test VM (make fuzz-kernel). One process drives a seeded sequence of
 * operations against a model of the objects it owns (files, buffers,
 * mappings, syncobjs, sync_files, dma-bufs, io_uring rings, children),
 * so that most requests are valid enough to reach deep code, and then
 * mutates them. The kernel log is the main oracle: any line matching
 * tools/vm/run.sh's DMESG_BAD list is a splat. A few uAPI contracts are
 * checked as well, and at the end the device must be idle with no
 * buffer or job left.
 *
 * Files: kfuzz.c (the loop, oracles, end checks), kfuzz_prog.c (random
 * programs), kfuzz_ops.c (buffers, mappings, PRIME, raw ioctls),
 * kfuzz_sync.c (syncobjs, sync_files), kfuzz_job.c (SUBMIT, JOB_WAIT,
 * program objects), kfuzz_uring.c (io_uring), kfuzz_proc.c (files,
 * processes).
 */
#ifndef KFUZZ_H
#define KFUZZ_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <liburing.h>
#include <xf86drm.h>
#include <drm/vtpu_accel.h>

#include "vtpu_prog.h"

#define KF_MAX_DEVS		4
#define KF_MAX_FILES		6
#define KF_MAX_FDS		3	/* an fd and its dups */
#define KF_MAX_BOS		40
#define KF_MAX_SYNCOBJS		16
#define KF_MAX_PENDING		48
#define KF_MAX_MAPS		32
#define KF_MAX_DMABUFS		12
#define KF_MAX_SYNCFILES	12
#define KF_MAX_RINGS		4
#define KF_MAX_CHILDREN		4
#define KF_MAX_PROGS		6	/* program objects per file */
#define KF_RING_SLOTS		64

/* Buffers above this are created, mapped and closed, never bound or touched. */
#define KF_BIG_BO		(8ULL << 20)
/* Nor mapped above this: a mapping pins the whole of a HOST buffer. */
#define KF_MAP_MAX		(64ULL << 20)
#define KF_ARENA_SIZE		(256 * 1024)

/* Op families, for --no=FAMILY,... (and the verbose op names). */
enum kf_family {
	KF_FAM_QUERY,
	KF_FAM_BO,
	KF_FAM_MMAP,
	KF_FAM_SCRIBBLE,
	KF_FAM_SUBMIT,
	KF_FAM_PROFILE,		/* profiles bound writable, trace_count scribbles */
	KF_FAM_WAIT,
	KF_FAM_SYNCOBJ,
	KF_FAM_SYNCFILE,
	KF_FAM_PRIME,
	KF_FAM_URING,
	KF_FAM_FD,
	KF_FAM_FORK,
	KF_FAM_RAW,
	KF_FAM_PROGRAM,		/* program objects (uAPI 1.2) */
	KF_FAM_NR
};

struct kf_rng {
	uint64_t s;
};

struct kf_bo {
	uint32_t handle;
	uint64_t size;
	uint32_t placed;
	bool imported;
};

/* A program object and what PROGRAM_CREATE said it needs. */
struct kf_pobj {
	uint32_t handle;
	uint32_t nbind;
	uint32_t traces;
	struct vtpu_binding_desc need[VTPU_MAX_BINDINGS];
};

struct kf_syncobj {
	uint32_t handle;
	uint64_t point;		/* highest timeline point used so far */
};

struct kf_file {
	bool live;
	int dev;		/* index into kf.devs */
	int fds[KF_MAX_FDS];
	int nfds;
	struct kf_bo bos[KF_MAX_BOS];
	int nbos;
	struct kf_syncobj syncobjs[KF_MAX_SYNCOBJS];
	int nsyncobjs;
	struct kf_pobj progs[KF_MAX_PROGS];
	int nprogs;
	uint64_t pending[KF_MAX_PENDING];	/* ioctl job ids not yet waited */
	int npending;
	/* Programs are written here before SUBMIT: never exported nor bound. */
	uint32_t arena;
	void *arena_map;
	uint64_t arena_size;
	uint64_t last_job;	/* the highest job id SUBMIT returned */
	uint64_t gen;		/* which opening of this slot */
	bool shared;		/* a child submits on it too: ids unknown */
	/*
	 * io_uring SUBMITs on it not yet reaped: their jobs may exist with
	 * ids above last_job, which kfuzz learns only from their CQEs.
	 */
	int ring_submits;
	/*
	 * Programs go round the arena (arena_written, never wrapped, is where
	 * the next one goes); buffers and program objects closed, ever.
	 * io-wq may read an io_uring request late: it is judged only if
	 * neither its program nor its handles changed meanwhile.
	 */
	uint64_t arena_written;
	uint64_t closes;
	/* The last profile a job was given, for trace_count scribbles. */
	uint32_t prof_handle;
	uint64_t prof_offset;
};

struct kf_map {
	void *p;
	size_t len;
	bool writable;
	int file;		/* -1: a dma-buf mapping */
	uint32_t handle;
};

struct kf_dmabuf {
	int fd;
	uint64_t size;
	int dev;
};

/*
 * A SUBMIT request with everything it points at. Kept whole while the
 * kernel may read it: the ioctl, or an io_uring slot until its CQE.
 */
struct kf_req {
	struct drm_vtpu_submit s;
	struct drm_vtpu_uring_submit_ptr ptr;
	struct drm_vtpu_binding bind[DRM_VTPU_MAX_BINDINGS + 2];
	struct drm_vtpu_sync in[DRM_VTPU_MAX_IN_SYNCS + 2];
	/* Only the program may differ from a valid request. */
	bool clean;
	/* The host validator's verdict on the program as submitted. */
	bool prog_valid;
	bool busy;		/* an io_uring slot in flight */
	int file;		/* kf.files index it was built for */
	uint64_t file_gen;	/* and which opening of it */
	int ring_file;		/* the file an io_uring SQE went to, */
	uint64_t ring_gen;	/* and which opening of it */
	uint64_t arena_mark;	/* where its program went in that arena */
	uint32_t prog_crc;	/* of the program as written there */
	uint8_t sqe_flags;	/* for reports */
	bool inline_form;
	uint64_t closes_mark;	/* and its closes */
};

struct kf_ring {
	bool live;
	struct io_uring ring;
	unsigned int flags;
	int outstanding;
	int fixed_file;		/* kf.files index registered as file 0, or -1 */
	uint64_t fixed_gen;	/* that file's gen then: a reopen is another file */
	uint64_t next_data;
	struct kf_req *slots;	/* KF_RING_SLOTS */
};

struct kf_dev {
	int minor;
	struct drm_vtpu_query q;
};

struct kf_stats {
	/* Shared with children (a MAP_SHARED page): they add their jobs. */
	volatile uint64_t jobs;
	volatile uint64_t child_ops;
	volatile uint64_t contract;	/* uAPI contract violations */
};

struct kf {
	/* options */
	uint64_t seed;
	uint64_t max_ops;
	double seconds;
	bool verbose;
	bool enomem_ok;
	bool no_defer_taskrun;	/* --no-defer-taskrun */
	bool fam_off[KF_FAM_NR];
	const char *unload;	/* module to try to unload with a live fence */
	int log_fd;
	int failslab;		/* percent, 0: off */
	bool busy;		/* enough jobs queued: add no more for now */
	bool core_bugs;		/* also what hits known DRM core bugs */

	/* devices and the model */
	struct kf_dev devs[KF_MAX_DEVS];
	int ndevs;
	struct kf_file files[KF_MAX_FILES];
	struct kf_map maps[KF_MAX_MAPS];
	int nmaps;
	struct kf_dmabuf dmabufs[KF_MAX_DMABUFS];
	int ndmabufs;
	int syncfiles[KF_MAX_SYNCFILES];
	int nsyncfiles;
	int syncobj_fds[KF_MAX_SYNCFILES];
	int nsyncobj_fds;
	int vgem_fd;		/* another DRM driver, -1 if none */
	struct kf_ring rings[KF_MAX_RINGS];
	pid_t children[KF_MAX_CHILDREN];
	double child_deadline[KF_MAX_CHILDREN];
	int nchildren;

	/* memory the kernel may be pointed at */
	void *bad_page;		/* PROT_NONE */
	void *ro_page;		/* PROT_READ, zeros */
	void *edge;		/* a writable page followed by bad_page */
	size_t page;

	/* results */
	uint64_t ops;
	struct kf_stats *stats;
	uint64_t splats;
	uint64_t leaks;
	uint64_t faults;	/* SIGSEGV/SIGBUS on a mapping */
};

extern struct kf kf;

/* kfuzz.c */
uint64_t kf_rand(struct kf_rng *r);
uint32_t kf_below(struct kf_rng *r, uint32_t n);
bool kf_chance(struct kf_rng *r, unsigned int percent);
uint64_t kf_pick_u64(struct kf_rng *r, const uint64_t *vals, size_t n);
uint64_t kf_bad_ptr(struct kf_rng *r);
uint64_t kf_edge_size(struct kf_rng *r, uint64_t max);
uint32_t kf_big_count(struct kf_rng *r);
void kf_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kf_contract(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double kf_now(void);
int kf_ioctl(int fd, unsigned long req, void *arg);
bool kf_touch(void *p, size_t len, const void *src);
bool kf_fam(enum kf_family fam);
void kf_fail_stop(void);

/* kfuzz_ops.c: model, buffers, mappings, PRIME, raw ioctls */
struct kf_file *kf_file_pick(struct kf_rng *r);
int kf_file_fd(struct kf_file *f, struct kf_rng *r);
int kf_file_open(int dev);
void kf_file_close(struct kf_file *f);
struct kf_bo *kf_bo_pick(struct kf_file *f, struct kf_rng *r, uint64_t min,
			 bool bindable);
int kf_bo_new(struct kf_file *f, uint64_t size, uint32_t placement,
	      struct kf_bo **out);
bool kf_arena_ready(struct kf_file *f);
void kf_map_add(void *p, size_t len, bool writable, int file, uint32_t handle);
int kf_junk_fd(struct kf_rng *r);
int kf_devnull(void);
void kf_model_teardown(void);
void kf_op_query(struct kf_rng *r);
void kf_op_bo_create(struct kf_rng *r);
void kf_op_bo_info(struct kf_rng *r);
void kf_op_bo_close(struct kf_rng *r);
void kf_op_mmap(struct kf_rng *r);
void kf_op_munmap(struct kf_rng *r);
void kf_op_scribble(struct kf_rng *r);
void kf_op_prime(struct kf_rng *r);
void kf_op_raw(struct kf_rng *r);

/* kfuzz_sync.c: syncobjs and sync_files */
struct kf_syncobj *kf_syncobj_pick(struct kf_file *f, struct kf_rng *r);
void kf_syncfile_add(int fd);
void kf_op_syncobj(struct kf_rng *r);
void kf_op_syncfile(struct kf_rng *r);

/* kfuzz_prog.c: programs */
struct kf_prog {
	void *buf;
	size_t size;
	uint32_t traces;	/* TRACE instructions, when valid */
	bool valid;		/* what the host validator says */
};

int kf_prog_gen(struct kf_rng *r, uint64_t vmem,
		const struct vtpu_binding_desc *bind, unsigned int nbind,
		int attack_bind, uint64_t attack_off, struct kf_prog *p);
void kf_prog_mutate(struct kf_rng *r, struct kf_prog *p);
void kf_prog_check(struct kf_prog *p, const struct vtpu_binding_desc *bind,
		   unsigned int nbind, uint64_t vmem);
void kf_prog_free(struct kf_prog *p);

/* kfuzz_job.c: SUBMIT, JOB_WAIT, program objects */
int kf_req_build(struct kf_file *f, struct kf_rng *r, struct kf_req *q,
		 bool mutate);
int kf_wait_one(int fd, uint64_t id, int64_t deadline, int *status);
void kf_op_submit(struct kf_rng *r);
void kf_op_wait(struct kf_rng *r);
void kf_op_program(struct kf_rng *r);
void kf_wait_pending(struct kf_file *f, int keep);

/* kfuzz_uring.c: io_uring */
void kf_op_uring(struct kf_rng *r);
void kf_rings_teardown(void);

/* kfuzz_proc.c: files and processes */
void kf_op_fd(struct kf_rng *r);
void kf_op_fork(struct kf_rng *r);
void kf_children_reap(bool all);

#endif /* KFUZZ_H */
