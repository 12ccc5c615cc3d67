/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

/*
 * rt_backend_test.h - shared by the tests that drive a runtime backend
 * (runtime/backend_*.c) through its struct rt_backend_ops table: weak
 * stand-ins for the front end's helpers, a client made by hand, jobs,
 * and a small matmul program with its buffers and an exact check.
 *
 * Define RT_TEST_OPS (the ops table under test) before including it.
 */
#ifndef RT_BACKEND_TEST_H
#define RT_BACKEND_TEST_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <drm/vtpu_accel.h>

/* By path: the e2e tests build with the public include paths only. */
#include "../../runtime/rt.h"
#include "vtpu_asm.h"

/* ---- stand-ins for the front end (weak: the library's win) ----------- */

__attribute__((weak)) struct vtpu_device *
rt_device_alloc(struct vtpu_client *c, const char *name)
{
	struct vtpu_device *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->client = c;
	snprintf(d->name, sizeof(d->name), "%s", name);
	return d;
}

__attribute__((weak)) int rt_set_error(const struct vtpu_client *c, int err,
				       const char *fmt, ...)
{
	(void)c;
	(void)fmt;
	return -err;
}

__attribute__((weak)) uint64_t rt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((weak)) void rt_job_done(struct rt_job *job)
{
	pthread_mutex_lock(&job->done_lock);
	job->done = true;
	pthread_cond_broadcast(&job->done_cond);
	pthread_mutex_unlock(&job->done_lock);
	if (job->on_done)
		job->on_done(job);
}

/* ---- helpers ---------------------------------------------------------- */

#ifndef KiB
#define KiB	1024ull
#endif
#ifndef MiB
#define MiB	(1024ull * 1024ull)
#endif

static const struct rt_backend_ops *ops = RT_TEST_OPS;

static inline struct vtpu_client *client_open(int ndev, uint64_t hbm,
					       int *ret)
{
	struct vtpu_client_options o = {
		.backend = VTPU_BACKEND_HOST,
		.host_devices = ndev,
		.host_hbm_size = hbm,
	};
	struct vtpu_client *c = calloc(1, sizeof(*c));

	if (!c) {
		*ret = -ENOMEM;
		return NULL;
	}
	c->ops = ops;
	c->opts = o;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	*ret = ops->open(c, &o);
	return c;
}

static inline void client_close(struct vtpu_client *c)
{
	int i;

	if (!c)
		return;
	ops->close(c);
	for (i = 0; i < c->ndevices; i++)
		free(c->devices[i]);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->idle);
	free(c);
}

static inline void job_init(struct rt_job *job, struct vtpu_device *d)
{
	memset(job, 0, sizeof(*job));
	job->device = d;
	pthread_mutex_init(&job->done_lock, NULL);
	pthread_cond_init(&job->done_cond, NULL);
}

static inline void job_fini(struct rt_job *job)
{
	pthread_mutex_destroy(&job->done_lock);
	pthread_cond_destroy(&job->done_cond);
}

/*
 * out (M x N) = a (M x K) . b (K x N), f32, bindings 0 (a, read),
 * 1 (b, read), 2 (out, write); TRACE "load" and "store" around it.
 */
#define M	4
#define K	8
#define NN	4

static inline void *prog_matmul(size_t *size)
{
	struct vtpu_tile a = vtpu_tile_f32(0, M, K, K);
	struct vtpu_tile b = vtpu_tile_f32(M * K * 4, K, NN, NN);
	struct vtpu_tile c = vtpu_tile_f32((M * K + K * NN) * 4, M, NN, NN);
	struct vtpu_asm as;
	void *p;

	vtpu_asm_init(&as, (M * K + K * NN + M * NN) * 4, 3);
	vtpu_asm_trace(&as, vtpu_asm_meta(&as, "load"));
	vtpu_asm_dma_load(&as, a, 0, 0, K * 4, VTPU_DT_F32);
	vtpu_asm_dma_load(&as, b, 1, 0, NN * 4, VTPU_DT_F32);
	vtpu_asm_matmul(&as, c, a, b, 0);
	vtpu_asm_trace(&as, vtpu_asm_meta(&as, "store"));
	vtpu_asm_dma_store(&as, c, 2, 0, NN * 4, VTPU_DT_F32);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, size);
	vtpu_asm_free(&as);
	return p;
}

/* A matmul job's loaded program and buffers, inputs small ints. */
struct mm {
	struct rt_prog *prog;
	struct rt_bo *a, *b, *out, *prof;
	size_t prog_size;
};

static inline int mm_setup(struct vtpu_device *d, struct mm *m, int seed)
{
	enum vtpu_placement pl;
	float *a, *b;
	void *p;
	int i, ret;

	memset(m, 0, sizeof(*m));
	p = prog_matmul(&m->prog_size);
	if (!p)
		return -ENOMEM;
	ret = ops->prog_load(d, p, m->prog_size, &m->prog);
	free(p);
	if (!ret)
		ret = ops->bo_create(d, M * K * 4, VTPU_PLACE_AUTO, &m->a, &pl);
	if (!ret)
		ret = ops->bo_create(d, K * NN * 4, VTPU_PLACE_AUTO, &m->b, &pl);
	if (!ret)
		ret = ops->bo_create(d, M * NN * 4, VTPU_PLACE_AUTO, &m->out, &pl);
	if (!ret)
		ret = ops->bo_create(d, 4096, VTPU_PLACE_HOST, &m->prof, &pl);
	if (ret)
		return ret;
	a = ops->bo_map(d, m->a);
	b = ops->bo_map(d, m->b);
	for (i = 0; i < M * K; i++)
		a[i] = (float)((i * 7 + seed) % 11 - 5);
	for (i = 0; i < K * NN; i++)
		b[i] = (float)((i * 3 + seed) % 9 - 4);
	return 0;
}

static inline void mm_teardown(struct vtpu_device *d, struct mm *m)
{
	ops->prog_unload(d, m->prog);
	ops->bo_destroy(d, m->a);
	ops->bo_destroy(d, m->b);
	ops->bo_destroy(d, m->out);
	ops->bo_destroy(d, m->prof);
}

static inline void mm_job(struct rt_job *job, struct vtpu_device *d,
			  struct mm *m, bool profile)
{
	job_init(job, d);
	job->prog = m->prog;
	job->nbind = 3;
	job->bind[0] = m->a;
	job->bind_size[0] = M * K * 4;
	job->bind_flags[0] = DRM_VTPU_BIND_READ;
	job->bind[1] = m->b;
	job->bind_size[1] = K * NN * 4;
	job->bind_flags[1] = DRM_VTPU_BIND_READ;
	job->bind[2] = m->out;
	job->bind_size[2] = M * NN * 4;
	job->bind_flags[2] = DRM_VTPU_BIND_WRITE;
	if (profile) {
		job->profile_bo = m->prof;
		job->profile_size = 4096;
	}
}

/* Small integers: every product and sum is exact in f32. */
static inline int mm_check(struct vtpu_device *d, struct mm *m)
{
	const float *a = ops->bo_map(d, m->a), *b = ops->bo_map(d, m->b);
	const float *out = ops->bo_map(d, m->out);
	int i, j, k;

	for (i = 0; i < M; i++)
		for (j = 0; j < NN; j++) {
			float s = 0;

			for (k = 0; k < K; k++)
				s += a[i * K + k] * b[k * NN + j];
			if (out[i * NN + j] != s)
				return -1;
		}
	return 0;
}

static inline int run_one(struct vtpu_device *d, struct rt_job *job)
{
	struct rt_job *jobs[1] = { job };
	int ret = ops->submit(d, jobs, 1);

	if (ret)
		return ret;
	return ops->wait(d, job, -1);
}

#endif /* RT_BACKEND_TEST_H */
