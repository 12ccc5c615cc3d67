/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * host_pool.h - the host backend's helper threads: a device's other
 * cores, which run shards of the executing job's big instructions (see
 * struct vtpu_exec_par in driver/vtpu_exec.h).
 */
#ifndef VTPU_HOST_POOL_H
#define VTPU_HOST_POOL_H

#include "vtpu_exec.h"

struct host_pool;

/*
 * Starts @helpers threads (at most VTPU_EXEC_WAYS_MAX - 1). Returns NULL
 * with errno set if it cannot; a pool of fewer threads than asked is
 * never made.
 */
struct host_pool *host_pool_create(int helpers);
/* Stops and joins the threads; NULL is a no-op. */
void host_pool_destroy(struct host_pool *p);

/*
 * Wakes sleeping helpers without work: a job is about to start, and by
 * the time it has cleared VMEM they are spinning for it.
 */
void host_pool_poke(struct host_pool *p);

/*
 * Points the helpers at the execution @e (its program, bindings, VMEM
 * and build) and fills @par so that @e->par = @par shares with them.
 * Call it before each job's vtpu_exec_step() calls; one job at a time.
 */
void host_pool_bind(struct host_pool *p, const struct vtpu_exec *e,
		    struct vtpu_exec_par *par);

/*
 * Runs @e to its end: a program with lanes, when @e was bound as above,
 * each executor (@e and the helpers) its share of them; else on @e
 * alone, its big instructions shared if @e->par is set. Returns what
 * vtpu_exec_step() returned last (1, or the first fault) and the
 * instructions all executors ran in @insns.
 */
int host_pool_run_lanes(struct host_pool *p, struct vtpu_exec *e,
			uint64_t *insns);

#endif /* VTPU_HOST_POOL_H */
