// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * host_pool.c - helper threads for the host backend's cores.
 *
 * A host device of N cores runs one job at a time on the submitting
 * thread (the VMEM is one); its other N - 1 cores are helper threads
 * here, capped by the CPUs online. The executor hands them shards of
 * its big instructions (struct vtpu_exec_par): start() publishes the
 * shards and bumps a generation counter, each helper runs its own shard
 * on its own struct vtpu_exec, and wait() spins until they are all done.
 * Instructions come microseconds apart, so helpers spin for a while
 * after each shard before they sleep on a condition variable; a job's
 * first shard may wait for one to wake.
 *
 * A program with lanes (vtpu_isa.h) runs differently: every helper runs
 * the whole program from the start, each its own share of the lanes,
 * and they meet at each BARRIER (pool_barrier()); nothing is handed
 * over per instruction.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host_pool.h"

/* How long a helper spins for the next shard before it sleeps. */
#define POOL_SPIN_NS	1000000
/*
 * Pause instructions between looks at the clock while spinning, and
 * between sched_yield()s while waiting: a spinning thread that shares
 * its CPU with the one it waits for (the scheduler may put them there)
 * must let it run soon.
 */
#define POOL_SPIN_BATCH	64
#define POOL_YIELD	256

struct host_helper {
	pthread_t thread;
	struct host_pool *pool;
	int index;			/* runs shards[index] */
	uint64_t seen;			/* the last generation it ran */
	unsigned int pokes;		/* the last host_pool_poke() it saw */
	struct vtpu_exec exec;		/* its own panels and cursor */
};

enum pool_task {
	POOL_SHARDS,			/* helper i runs shards[i] of @n */
	POOL_LANES,			/* helpers below @n run their lanes */
};

struct host_pool {
	int helpers;
	pid_t pid;			/* a fork()ed child has no helpers */
	enum pool_task task;		/* this generation's, with: */
	const struct vtpu_insn *shards;
	uint32_t n;
	uint32_t ways;			/* POOL_LANES: executors, caller too */
	atomic_int bar_count;		/* arrived at the barrier */
	atomic_uint_fast64_t bar_gen;	/* barriers passed */
	atomic_bool abort;		/* an executor stopped: leave barriers */
	atomic_ullong insns;		/* POOL_LANES: the helpers' count */
	atomic_uint_fast64_t gen;
	atomic_int pending;		/* shards of @gen still running */
	atomic_int fault;
	atomic_bool quit;
	pthread_mutex_t lock;		/* protects @sleepers, @pokes */
	pthread_cond_t wake;
	int sleepers;
	unsigned int pokes;
	struct host_helper h[];
};

static void pool_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static uint64_t pool_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The next generation after @seen, or 0 once the pool is quitting. */
static uint64_t helper_next(struct host_helper *self)
{
	struct host_pool *p = self->pool;
	uint64_t g, t0 = pool_now();
	unsigned int batches = 0;
	int i;

	for (;;) {
		for (i = 0; i < POOL_SPIN_BATCH; i++) {
			g = atomic_load_explicit(&p->gen, memory_order_acquire);
			if (g != self->seen)
				return g;
			if (atomic_load_explicit(&p->quit, memory_order_relaxed))
				return 0;
			pool_relax();
		}
		if (++batches % (POOL_YIELD / 8) == 0)
			sched_yield();
		if (pool_now() - t0 < POOL_SPIN_NS)
			continue;
		/*
		 * start() bumps @gen before it looks for sleepers; a job that
		 * starts bumps @pokes, to have the helpers spinning by the
		 * time its first shard or lane comes.
		 */
		pthread_mutex_lock(&p->lock);
		p->sleepers++;
		while (atomic_load(&p->gen) == self->seen &&
		       p->pokes == self->pokes && !atomic_load(&p->quit))
			pthread_cond_wait(&p->wake, &p->lock);
		self->pokes = p->pokes;
		p->sleepers--;
		pthread_mutex_unlock(&p->lock);
		t0 = pool_now();
	}
}

static void helper_run(struct host_pool *p, struct host_helper *self)
{
	int ret, zero = 0;

	ret = vtpu_exec_run(&self->exec, &p->shards[self->index]);
	if (ret)
		atomic_compare_exchange_strong(&p->fault, &zero, ret);
	atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
}

/* Runs this helper's lanes of the whole program to its end. */
static void helper_lanes(struct host_pool *p, struct host_helper *self)
{
	struct vtpu_exec *e = &self->exec;
	int done, zero = 0;

	e->lane_first = (uint32_t)self->index + 1;
	e->lane_step = p->ways;
	while (!(done = vtpu_exec_step(e, 4096)))
		;
	if (done < 0) {
		atomic_store(&p->abort, true);
		if (done != -ECANCELED)
			atomic_compare_exchange_strong(&p->fault, &zero, done);
	}
	atomic_fetch_add_explicit(&p->insns, e->insns, memory_order_relaxed);
	atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
}

static void *helper_main(void *arg)
{
	struct host_helper *self = arg;
	struct host_pool *p = self->pool;
	uint64_t g;

	while ((g = helper_next(self))) {
		self->seen = g;
		if ((uint32_t)self->index >= p->n)
			continue;
		if (p->task == POOL_LANES)
			helper_lanes(p, self);
		else
			helper_run(p, self);
	}
	return NULL;
}

/* Hands the generation set up in @p to the helpers. */
static void pool_go(struct host_pool *p)
{
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
	pthread_mutex_lock(&p->lock);
	if (p->sleepers)
		pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

static void pool_start(void *arg, const struct vtpu_insn *shards, uint32_t n)
{
	struct host_pool *p = arg;
	uint32_t i;

	p->task = POOL_SHARDS;
	p->shards = shards;
	p->n = n;
	atomic_store_explicit(&p->pending, (int)n, memory_order_relaxed);
	if (getpid() != p->pid) {
		/* After fork() the threads are gone: run the shards here. */
		for (i = 0; i < n; i++)
			helper_run(p, &p->h[i]);
		return;
	}
	pool_go(p);
}

static int pool_wait(void *arg)
{
	struct host_pool *p = arg;
	unsigned int spins = 0;

	while (atomic_load_explicit(&p->pending, memory_order_acquire)) {
		/* A helper descheduled by a busy machine: let it run. */
		if (++spins % POOL_YIELD == 0)
			sched_yield();
		else
			pool_relax();
	}
	return atomic_exchange(&p->fault, 0);
}

/*
 * A BARRIER of a program with lanes: the last of p->ways executors to
 * arrive lets the others go. -ECANCELED once one of them has stopped.
 */
static int pool_barrier(void *arg)
{
	struct host_pool *p = arg;
	unsigned int spins = 0;
	uint64_t gen;

	if (atomic_load(&p->abort))
		return -ECANCELED;
	gen = atomic_load_explicit(&p->bar_gen, memory_order_acquire);
	if (atomic_fetch_add_explicit(&p->bar_count, 1, memory_order_acq_rel) + 1 ==
	    (int)p->ways) {
		atomic_store_explicit(&p->bar_count, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&p->bar_gen, 1, memory_order_release);
		return 0;
	}
	while (atomic_load_explicit(&p->bar_gen, memory_order_acquire) == gen) {
		if (atomic_load_explicit(&p->abort, memory_order_relaxed))
			return -ECANCELED;
		if (++spins % POOL_YIELD == 0)
			sched_yield();
		else
			pool_relax();
	}
	return 0;
}

int host_pool_run_lanes(struct host_pool *p, struct vtpu_exec *e,
			uint64_t *insns)
{
	uint32_t ways = min_t(uint32_t, e->prog->lanes, p->helpers + 1);
	int done, fault;

	if (ways < 2 || !e->par || getpid() != p->pid) {
		while (!(done = vtpu_exec_step(e, 4096)))
			;
		*insns = e->insns;
		return done;
	}
	p->task = POOL_LANES;
	p->n = ways - 1;
	p->ways = ways;
	atomic_store(&p->bar_count, 0);
	atomic_store(&p->abort, false);
	atomic_store(&p->insns, 0);
	atomic_store_explicit(&p->pending, (int)ways - 1, memory_order_relaxed);
	e->lane_first = 0;
	e->lane_step = ways;
	pool_go(p);
	while (!(done = vtpu_exec_step(e, 4096)))
		;
	if (done < 0)
		atomic_store(&p->abort, true);
	fault = pool_wait(p);
	*insns = e->insns + atomic_load(&p->insns);
	/* The first real fault; -ECANCELED only says another one stopped. */
	if (done < 0 && done != -ECANCELED)
		return done;
	return fault ? fault : done;
}

struct host_pool *host_pool_create(int helpers)
{
	struct host_pool *p;
	int i, ret;

	if (helpers < 1 || helpers > VTPU_EXEC_WAYS_MAX - 1) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p) + (size_t)helpers * sizeof(p->h[0]));
	if (!p)
		return NULL;
	p->helpers = helpers;
	p->pid = getpid();
	atomic_init(&p->gen, 0);
	atomic_init(&p->pending, 0);
	atomic_init(&p->fault, 0);
	atomic_init(&p->quit, false);
	atomic_init(&p->bar_count, 0);
	atomic_init(&p->bar_gen, 0);
	atomic_init(&p->abort, false);
	atomic_init(&p->insns, 0);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	for (i = 0; i < helpers; i++) {
		p->h[i].pool = p;
		p->h[i].index = i;
		ret = pthread_create(&p->h[i].thread, NULL, helper_main,
				     &p->h[i]);
		if (ret) {
			p->helpers = i;
			host_pool_destroy(p);
			errno = ret;
			return NULL;
		}
	}
	return p;
}

void host_pool_destroy(struct host_pool *p)
{
	int i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	atomic_store(&p->quit, true);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (getpid() == p->pid)
		for (i = 0; i < p->helpers; i++)
			pthread_join(p->h[i].thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void host_pool_bind(struct host_pool *p, const struct vtpu_exec *e,
		    struct vtpu_exec_par *par)
{
	int i;

	/* No shard runs between jobs: the helpers read this after start(). */
	for (i = 0; i < p->helpers; i++) {
		vtpu_exec_init(&p->h[i].exec, e->prog, e->bindings, e->vmem);
		p->h[i].exec.isa = e->isa;
		p->h[i].exec.par = par;
	}
	par->start = pool_start;
	par->wait = pool_wait;
	par->meet = pool_barrier;
	par->arg = p;
	par->ways = (uint32_t)p->helpers + 1;
}

void host_pool_poke(struct host_pool *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->sleepers) {
		p->pokes++;
		pthread_cond_broadcast(&p->wake);
	}
	pthread_mutex_unlock(&p->lock);
}
