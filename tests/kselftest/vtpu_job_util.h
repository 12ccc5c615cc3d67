/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

/*
 * Helpers for the job tests: SUBMIT/JOB_WAIT wrappers, buffers with
 * their mappings, the programs the tests run, and the userspace executor
 * as the reference the kernel's results must equal bit for bit.
 */
#ifndef VTPU_JOB_UTIL_H
#define VTPU_JOB_UTIL_H

#include <stdlib.h>
#include <time.h>

#include "vtpu_asm.h"
#include "vtpu_exec.h"
#include "vtpu_test.h"
#include "vtpu_vgem.h"

struct vtpu_buf {
	__u32 handle;
	__u64 size;
	void *map;
};

static inline int vtpu_buf_new(int fd, __u64 size, __u32 placement,
			       struct vtpu_buf *b)
{
	struct drm_vtpu_bo_create c = { .size = size, .placement = placement };
	int ret;

	memset(b, 0, sizeof(*b));
	ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_BO_CREATE, &c);
	if (ret)
		return ret;
	b->handle = c.handle;
	b->size = vtpu_page_align(size);
	b->map = vtpu_bo_mmap(fd, c.handle, b->size);
	if (!b->map) {
		vtpu_bo_close(fd, c.handle);
		return -ENOMEM;
	}
	return 0;
}

static inline void vtpu_buf_free(int fd, struct vtpu_buf *b)
{
	if (b->map)
		munmap(b->map, b->size);
	if (b->handle)
		vtpu_bo_close(fd, b->handle);
	memset(b, 0, sizeof(*b));
}

/* A buffer holding a program, ready to submit. */
static inline int vtpu_buf_prog(int fd, const void *prog, size_t size,
				struct vtpu_buf *b)
{
	int ret = vtpu_buf_new(fd, size, DRM_VTPU_PLACEMENT_HOST, b);

	if (!ret)
		memcpy(b->map, prog, size);
	return ret;
}

struct vtpu_submit_args {
	const struct vtpu_buf *prog;
	__u64 prog_size;
	const struct drm_vtpu_binding *bind;
	__u32 nbind;
	const struct drm_vtpu_sync *in;
	__u32 nin;
	__u32 out_sync;
	__u32 profile;
};

static inline int vtpu_submit(int fd, const struct vtpu_submit_args *a,
			      __u64 *job_id)
{
	struct drm_vtpu_submit s = {
		.program_handle = a->prog->handle,
		.program_size = a->prog_size,
		.bindings = (__u64)(uintptr_t)a->bind,
		.binding_count = a->nbind,
		.in_syncs = (__u64)(uintptr_t)a->in,
		.in_sync_count = a->nin,
		.out_sync = a->out_sync,
		.profile_handle = a->profile,
	};
	int ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_SUBMIT, &s);

	if (!ret && job_id)
		*job_id = s.job_id;
	return ret;
}

static inline __s64 vtpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__s64)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Waits up to @secs; returns the ioctl's -errno, the job's in @status. */
static inline int vtpu_job_wait(int fd, __u64 id, int secs, int *status)
{
	struct drm_vtpu_job_wait w = {
		.job_id = id,
		.timeout_ns = secs ? vtpu_now_ns() + secs * 1000000000LL : 0,
	};
	int ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_JOB_WAIT, &w);

	if (!ret && status)
		*status = w.status;
	return ret;
}

/* "jobs alive: N" from debugfs "cores"; -errno when unreadable. */
static inline long vtpu_jobs_alive(int minor)
{
	char path[PATH_MAX], line[128];
	long n = -EPROTO;
	FILE *f;
	int ret;

	ret = vtpu_debugfs_path(minor, "cores", path, sizeof(path));
	if (ret)
		return ret;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "jobs alive: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * Sum of the counter @name ("timeouts", "chained") over the "core N:"
 * lines of one device's debugfs "cores"; -errno if unreadable, -EPROTO
 * if no core line has it.
 */
static inline long vtpu_core_sum(int minor, const char *name)
{
	char path[PATH_MAX], line[200], key[32];
	long total = -EPROTO;
	const char *c;
	FILE *f;

	snprintf(key, sizeof(key), " %s ", name);
	if (vtpu_debugfs_path(minor, "cores", path, sizeof(path)))
		return -ENOENT;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		c = strstr(line, key);
		if (c && !strncmp(line, "core ", 5))
			total = (total < 0 ? 0 : total) + atol(c + strlen(key));
	}
	fclose(f);
	return total;
}

static inline long vtpu_core_timeouts(int minor)
{
	return vtpu_core_sum(minor, "timeouts");
}

static inline long vtpu_core_chained(int minor)
{
	return vtpu_core_sum(minor, "chained");
}

/* Polls until no job of the device is alive; false after @secs. */
static inline bool vtpu_wait_idle(int minor, int secs)
{
	__s64 end = vtpu_now_ns() + secs * 1000000000LL;

	while (vtpu_now_ns() < end) {
		if (vtpu_jobs_alive(minor) == 0)
			return true;
		usleep(20000);
	}
	return false;
}

/* Deterministic pseudo-random floats in [-1, 1). */
static inline void vtpu_fill_random(float *p, size_t n, unsigned int seed)
{
	__u32 x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (float)(x >> 8) / (float)(1u << 23) - 1.0f;
	}
}

/*
 * The compute program: out = tanh(A . B) + B[0, :] (row broadcast), then
 * a column of row maxima; A, B are n x n f32 (bindings 0, 1), out is
 * n x (n + 1) f32 (binding 2). Three TRACEs mark its phases. It uses
 * DMA, MXU, VPU unary, binary with broadcast and reduce.
 */
static inline void *vtpu_prog_compute(unsigned int n, size_t *size)
{
	__u32 sz = n * n * 4, row = n * 4;
	struct vtpu_tile a = vtpu_tile_f32(0, n, n, n);
	struct vtpu_tile b = vtpu_tile_f32(sz, n, n, n);
	struct vtpu_tile c = vtpu_tile_f32(2 * sz, n, n, n);
	struct vtpu_tile b0 = vtpu_tile_f32(sz, 1, n, n);
	struct vtpu_tile mx = vtpu_tile_f32(3 * sz, n, 1, 1);
	struct vtpu_asm as;
	void *p;

	vtpu_asm_init(&as, 3 * sz + row, 3);
	vtpu_asm_trace(&as, vtpu_asm_meta(&as, "load"));
	vtpu_asm_dma_load(&as, a, 0, 0, row, VTPU_DT_F32);
	vtpu_asm_dma_load(&as, b, 1, 0, row, VTPU_DT_F32);
	vtpu_asm_trace(&as, vtpu_asm_meta(&as, "matmul"));
	vtpu_asm_matmul(&as, c, a, b, 0);
	vtpu_asm_unary(&as, VTPU_UNARY_TANH, c, c);
	vtpu_asm_binary(&as, VTPU_BINARY_ADD, c, c, b0, VTPU_F_BCAST_ROW);
	vtpu_asm_reduce(&as, VTPU_REDUCE_MAX, mx, c, VTPU_F_AXIS_COLS);
	vtpu_asm_trace(&as, vtpu_asm_meta(&as, "store"));
	vtpu_asm_dma_store(&as, c, 2, 0, (n + 1) * 4, VTPU_DT_F32);
	vtpu_asm_dma_store(&as, mx, 2, row, (n + 1) * 4, VTPU_DT_F32);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, size);
	vtpu_asm_free(&as);
	return p;
}

/* Runs @prog on the userspace executor: the reference for the kernel. */
static inline int vtpu_ref_run(const void *prog, size_t size,
			       struct vtpu_exec_binding *bind,
			       const __u32 *access, unsigned int nbind,
			       __u64 vmem_size)
{
	struct vtpu_binding_desc desc[DRM_VTPU_MAX_BINDINGS];
	struct vtpu_prog_error err;
	struct vtpu_prog_info info;
	struct vtpu_exec e;
	unsigned int i;
	void *vmem;
	int ret;

	for (i = 0; i < nbind; i++) {
		desc[i].size = bind[i].size;
		desc[i].access = access[i];
	}
	ret = vtpu_prog_validate(prog, size, desc, nbind, vmem_size, &info,
				 &err);
	if (ret)
		return ret;
	vmem = calloc(1, vmem_size);
	if (!vmem)
		return -ENOMEM;
	vtpu_exec_init(&e, &info, bind, vmem);
	while (!vtpu_exec_step(&e, 1024))
		;
	free(vmem);
	return 0;
}

/* The compute program's matrix size, and a set of buffers to run it. */
#define N	32

struct compute {
	struct vtpu_buf prog, a, b, out;
	size_t prog_size;
	struct drm_vtpu_binding bind[3];
};

static inline int compute_setup(int fd, struct compute *c, unsigned int seed,
			 __u32 out_placement)
{
	void *p;
	int ret;

	memset(c, 0, sizeof(*c));
	p = vtpu_prog_compute(N, &c->prog_size);
	if (!p)
		return -ENOMEM;
	ret = vtpu_buf_prog(fd, p, c->prog_size, &c->prog);
	free(p);
	if (!ret)
		ret = vtpu_buf_new(fd, N * N * 4, DRM_VTPU_PLACEMENT_HBM, &c->a);
	if (!ret)
		ret = vtpu_buf_new(fd, N * N * 4, DRM_VTPU_PLACEMENT_HOST, &c->b);
	if (!ret)
		ret = vtpu_buf_new(fd, N * (N + 1) * 4, out_placement, &c->out);
	if (ret)
		return ret;
	vtpu_fill_random(c->a.map, N * N, seed);
	vtpu_fill_random(c->b.map, N * N, seed + 1000);
	c->bind[0] = (struct drm_vtpu_binding){ c->a.handle,
		DRM_VTPU_BIND_READ, 0, N * N * 4 };
	c->bind[1] = (struct drm_vtpu_binding){ c->b.handle,
		DRM_VTPU_BIND_READ, 0, N * N * 4 };
	c->bind[2] = (struct drm_vtpu_binding){ c->out.handle,
		DRM_VTPU_BIND_WRITE, 0, N * (N + 1) * 4 };
	return 0;
}

static inline void compute_teardown(int fd, struct compute *c)
{
	vtpu_buf_free(fd, &c->prog);
	vtpu_buf_free(fd, &c->a);
	vtpu_buf_free(fd, &c->b);
	vtpu_buf_free(fd, &c->out);
}

/* The userspace executor's output for the same program and inputs. */
static inline int compute_reference(struct compute *c, __u64 vmem, float *out)
{
	static const __u32 access[3] = {
		VTPU_ACCESS_READ, VTPU_ACCESS_READ, VTPU_ACCESS_WRITE,
	};
	struct vtpu_exec_binding eb[3] = {
		{ c->a.map, N * N * 4 }, { c->b.map, N * N * 4 },
		{ out, N * (N + 1) * 4 },
	};

	return vtpu_ref_run(c->prog.map, c->prog_size, eb, access, 3, vmem);
}

static inline int compute_submit(int fd, struct compute *c, __u32 profile,
			  __u64 *id)
{
	struct vtpu_submit_args a = {
		.prog = &c->prog, .prog_size = c->prog_size,
		.bind = c->bind, .nbind = 3, .profile = profile,
	};

	return vtpu_submit(fd, &a, id);
}

#endif /* VTPU_JOB_UTIL_H */
