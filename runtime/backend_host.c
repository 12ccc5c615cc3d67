// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * backend_host.c - the in-process backend: the same validator and
 * executor vtpu.ko runs, on buffers from calloc().
 *
 * Programs are loaded as vtpu.ko's program objects are: copied once into
 * memory only this file writes, validated once (vtpu_prog_load()), and
 * a job then only has its bindings checked against what the program
 * needs of them (vtpu_prog_bindings_ok()), so the host's per-job cost
 * stays the kernel's: no copy, checksum or validation per run.
 *
 * Each "hostN" device mirrors what the driver exposes: an HBM budget
 * (only counted: there is no device address space to fragment, so the
 * largest free range is the free total), a backing store for what does
 * not fit, one VMEM and a core count. Jobs run synchronously inside
 * submit(), one at a time per device (the VMEM is shared), so wait()
 * never has anything left to do. A job runs on the submitting thread
 * and, from the device's first job on, on its other cores too: helper
 * threads (host_pool.c, as many as the CPUs allow) run their share of a
 * program's lanes, or shards of the big instructions of a program
 * without lanes; either way the bits are one core's. Like vtpu.ko's
 * cores, a job that runs past the job timeout (VTPU_HOST_JOB_TIMEOUT_MS)
 * ends with -ETIMEDOUT: a program that loops forever must not hang the
 * process that submitted it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <drm/vtpu_accel.h>

#include "host_pool.h"
#include "rt.h"
#include "vtpu_exec.h"

#define HOST_DEF_HBM	(256ULL << 20)
#define HOST_DEF_VMEM	(1ULL << 20)
#define HOST_DEF_CORES	2
/* The driver refuses buffers above max(HBM, its backing-store limit). */
#define HOST_MAX_BO	(16ULL << 30)
/* Instructions per executor call: the executor needs no preemption here. */
#define HOST_STEP	4096
/* Buffers this large live in transparent huge pages. */
#define HOST_HUGE	(2ULL << 20)
/* The job timeout: vtpu.ko's job_timeout_ms, its default and its range. */
#define HOST_DEF_TIMEOUT_MS	10000
#define HOST_MIN_TIMEOUT_MS	10
#define HOST_MAX_TIMEOUT_MS	600000

struct rt_bo {
	void *mem;
	uint64_t size;		/* page aligned, as the driver rounds it */
	enum vtpu_placement placed;
};

/* A loaded program: a private copy, validated. */
struct rt_prog {
	void *data;
	uint64_t size;
	struct vtpu_prog_info info;	/* points into @data */
	struct vtpu_binding_desc need[VTPU_MAX_BINDINGS];
};

struct host_dev {
	pthread_mutex_t mem_lock;	/* protects the three counters */
	uint64_t hbm_total, hbm_used, host_bytes;
	uint64_t page;
	/* One VMEM for the device: jobs run one at a time under exec_lock. */
	pthread_mutex_t exec_lock;
	uint8_t *vmem;
	uint64_t vmem_size;
	int cores;
	uint64_t timeout_ns;	/* a job running longer ends, -ETIMEDOUT */
	/* The executor's state (18 KiB, kept off the caller's stack). */
	struct vtpu_exec exec;
	enum vtpu_exec_isa isa;
	/* The other cores, started by the first job (under exec_lock). */
	struct host_pool *pool;
	struct vtpu_exec_par par;
	bool pool_tried;
};

static struct host_dev *host_dev(struct vtpu_device *d)
{
	return d->priv;
}

static void host_dev_free(struct host_dev *h)
{
	if (!h)
		return;
	host_pool_destroy(h->pool);
	pthread_mutex_destroy(&h->mem_lock);
	pthread_mutex_destroy(&h->exec_lock);
	free(h->vmem);
	free(h);
}

static void host_close(struct vtpu_client *c)
{
	int i;

	/* The devices themselves are the front end's (rt_device_alloc). */
	for (i = 0; i < c->ndevices; i++) {
		if (!c->devices[i])
			continue;
		host_dev_free(c->devices[i]->priv);
		c->devices[i]->priv = NULL;
	}
}

/*
 * VTPU_EXEC_ISA=sse2|avx2|avx512 runs the executor's build of that name
 * rather than the fastest one (they give the same bits: tests compare).
 */
static int host_isa(struct vtpu_client *c, enum vtpu_exec_isa *out)
{
	const char *env = getenv("VTPU_EXEC_ISA");
	int isa;

	*out = VTPU_EXEC_ISA_NR;
	if (!env || !*env)
		return 0;
	for (isa = 0; isa < VTPU_EXEC_ISA_NR; isa++) {
		if (strcmp(env, vtpu_exec_isa_name(isa)))
			continue;
		if (!vtpu_exec_isa_supported(isa))
			return rt_set_error(c, ENODEV,
					    "VTPU_EXEC_ISA=%s: this CPU cannot run that build of the executor (unset it to use the fastest one)",
					    env);
		*out = isa;
		return 0;
	}
	return rt_set_error(c, EINVAL,
			    "VTPU_EXEC_ISA=%s: unknown; use sse2, avx2 or avx512",
			    env);
}

/* VTPU_HOST_JOB_TIMEOUT_MS, in vtpu.ko's job_timeout_ms range. */
static int host_timeout(struct vtpu_client *c, uint64_t *out_ns)
{
	const char *env = getenv("VTPU_HOST_JOB_TIMEOUT_MS");
	unsigned long long ms = HOST_DEF_TIMEOUT_MS;
	char *end = NULL;

	*out_ns = ms * 1000000ULL;
	if (env && *env) {
		ms = strtoull(env, &end, 10);
		if (*env < '0' || *env > '9' || *end ||
		    ms < HOST_MIN_TIMEOUT_MS || ms > HOST_MAX_TIMEOUT_MS)
			return rt_set_error(c, EINVAL,
					    "VTPU_HOST_JOB_TIMEOUT_MS=%s: not a whole number of milliseconds from %d to %d",
					    env, HOST_MIN_TIMEOUT_MS,
					    HOST_MAX_TIMEOUT_MS);
	}
	*out_ns = ms * 1000000ULL;
	return 0;
}

static int host_open(struct vtpu_client *c, const struct vtpu_client_options *o)
{
	int ndev = o->host_devices > 0 ? o->host_devices : 1;
	int cores = o->host_cores > 0 ? o->host_cores : HOST_DEF_CORES;
	uint64_t hbm = o->host_hbm_size ? o->host_hbm_size : HOST_DEF_HBM;
	uint64_t vmem = o->host_vmem_size ? o->host_vmem_size : HOST_DEF_VMEM;
	long page = sysconf(_SC_PAGESIZE);
	enum vtpu_exec_isa isa;
	uint64_t timeout_ns;
	int i, ret;

	ret = host_isa(c, &isa);
	if (ret)
		return ret;
	ret = host_timeout(c, &timeout_ns);
	if (ret)
		return ret;
	if (ndev > RT_MAX_DEVICES)
		return rt_set_error(c, EINVAL,
				    "host backend: %d devices asked, at most %d",
				    ndev, RT_MAX_DEVICES);
	/* VMEM addresses are 32-bit in the ISA. */
	if (vmem > UINT32_MAX)
		return rt_set_error(c, EINVAL,
				    "host backend: VMEM of %llu bytes exceeds 4 GiB",
				    (unsigned long long)vmem);
	if (page <= 0)
		page = 4096;

	for (i = 0; i < ndev; i++) {
		struct vtpu_device *d;
		struct host_dev *h;
		char name[32];

		snprintf(name, sizeof(name), "host%d", i);
		h = calloc(1, sizeof(*h));
		if (!h)
			goto nomem;
		h->vmem = calloc(1, vmem);
		if (!h->vmem) {
			free(h);
			goto nomem;
		}
		pthread_mutex_init(&h->mem_lock, NULL);
		pthread_mutex_init(&h->exec_lock, NULL);
		h->hbm_total = hbm;
		h->vmem_size = vmem;
		h->cores = cores;
		h->page = (uint64_t)page;
		h->isa = isa;
		h->timeout_ns = timeout_ns;

		d = rt_device_alloc(c, name);
		if (!d) {
			host_dev_free(h);
			goto nomem;
		}
		/*
		 * Whether rt_device_alloc() registers the device itself or
		 * leaves that to us, it ends up listed exactly once.
		 */
		if (c->ndevices == 0 || c->devices[c->ndevices - 1] != d)
			c->devices[c->ndevices++] = d;
		d->client = c;
		d->index = c->ndevices - 1;
		snprintf(d->name, sizeof(d->name), "%s", name);
		d->priv = h;
		d->vmem_size = vmem;
		d->cores = cores;
	}
	return 0;

nomem:
	host_close(c);
	return rt_set_error(c, ENOMEM, "host backend: out of memory opening device %d",
			    i);
}

static int host_query(struct vtpu_device *d, struct vtpu_device_info *out)
{
	struct host_dev *h = host_dev(d);

	out->index = d->index;
	snprintf(out->name, sizeof(out->name), "%s", d->name);
	out->cores = h->cores;
	out->vmem_size = h->vmem_size;
	pthread_mutex_lock(&h->mem_lock);
	out->hbm_total = h->hbm_total;
	out->hbm_free = h->hbm_total - h->hbm_used;
	/* Counted, not laid out: nothing fragments. */
	out->hbm_largest_free = out->hbm_free;
	out->host_bytes = h->host_bytes;
	pthread_mutex_unlock(&h->mem_lock);
	return 0;
}

/*
 * HBM is counted, not laid out (host_query()): whatever is free is one
 * range, so there is one free block when anything is free, and none
 * when HBM is full. That is the truth of this backend, not a guess.
 */
static uint64_t host_free_blocks(struct vtpu_device *d,
				 const struct vtpu_device_info *info)
{
	(void)d;
	return info->hbm_free ? 1 : 0;
}

/*
 * A buffer's memory, zeroed. Large ones are mapped in 2 MiB pages, as
 * vtpu.ko's HBM sits in the kernel's huge direct map: a job streaming a
 * model's weights through the executor then needs a few dozen TLB
 * entries instead of thousands, and leaves the TLB to the runtime's next
 * steps (in a VM a TLB miss is a two-level page walk).
 */
static void *host_mem_alloc(uint64_t size)
{
	uint8_t *p, *aligned;
	size_t len;

	if (size < HOST_HUGE)
		return calloc(1, size);
	len = size + HOST_HUGE;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	aligned = (uint8_t *)(((uintptr_t)p + HOST_HUGE - 1) & ~(HOST_HUGE - 1));
	if (aligned > p)
		munmap(p, aligned - p);
	if (p + len > aligned + size)
		munmap(aligned + size, p + len - (aligned + size));
	madvise(aligned, size, MADV_HUGEPAGE);	/* a hint: 4 KiB pages do too */
	return aligned;
}

static void host_mem_free(void *p, uint64_t size)
{
	if (size < HOST_HUGE)
		free(p);
	else if (p)
		munmap(p, size);
}

static int host_bo_create(struct vtpu_device *d, uint64_t size,
			  enum vtpu_placement p, struct rt_bo **out,
			  enum vtpu_placement *placed)
{
	struct host_dev *h = host_dev(d);
	const struct vtpu_client *c = d->client;
	enum vtpu_placement where;
	struct rt_bo *bo;
	uint64_t max = h->hbm_total > HOST_MAX_BO ? h->hbm_total : HOST_MAX_BO;

	if (p != VTPU_PLACE_AUTO && p != VTPU_PLACE_HBM && p != VTPU_PLACE_HOST)
		return rt_set_error(c, EINVAL, "%s: unknown placement %d",
				    d->name, (int)p);
	if (!size)
		return rt_set_error(c, EINVAL, "%s: buffer of 0 bytes", d->name);
	if (size > max)
		return rt_set_error(c, E2BIG, "%s: buffer of %llu bytes, at most %llu",
				    d->name, (unsigned long long)size,
				    (unsigned long long)max);
	/* Like the driver: whole pages, counted whole. No overflow: max. */
	size = (size + h->page - 1) & ~(h->page - 1);

	bo = calloc(1, sizeof(*bo));
	if (!bo)
		return rt_set_error(c, ENOMEM, "%s: out of memory", d->name);

	/* Reserve first, allocate outside the lock, give back on failure. */
	pthread_mutex_lock(&h->mem_lock);
	if (p != VTPU_PLACE_HOST && size <= h->hbm_total - h->hbm_used) {
		h->hbm_used += size;
		where = VTPU_PLACE_HBM;
	} else if (p == VTPU_PLACE_HBM) {
		uint64_t left = h->hbm_total - h->hbm_used;

		pthread_mutex_unlock(&h->mem_lock);
		free(bo);
		return rt_set_error(c, ENOSPC,
				    "%s: %llu bytes of HBM asked, %llu free",
				    d->name, (unsigned long long)size,
				    (unsigned long long)left);
	} else {
		h->host_bytes += size;
		where = VTPU_PLACE_HOST;
	}
	pthread_mutex_unlock(&h->mem_lock);

	bo->mem = host_mem_alloc(size);	/* buffers read as zeros */
	if (!bo->mem) {
		pthread_mutex_lock(&h->mem_lock);
		if (where == VTPU_PLACE_HBM)
			h->hbm_used -= size;
		else
			h->host_bytes -= size;
		pthread_mutex_unlock(&h->mem_lock);
		free(bo);
		return rt_set_error(c, ENOMEM, "%s: out of memory for %llu bytes",
				    d->name, (unsigned long long)size);
	}
	bo->size = size;
	bo->placed = where;
	*out = bo;
	if (placed)
		*placed = where;
	return 0;
}

static void host_bo_destroy(struct vtpu_device *d, struct rt_bo *bo)
{
	struct host_dev *h = host_dev(d);

	if (!bo)
		return;
	pthread_mutex_lock(&h->mem_lock);
	if (bo->placed == VTPU_PLACE_HBM)
		h->hbm_used -= bo->size;
	else
		h->host_bytes -= bo->size;
	pthread_mutex_unlock(&h->mem_lock);
	host_mem_free(bo->mem, bo->size);
	free(bo);
}

static void *host_bo_map(struct vtpu_device *d, struct rt_bo *bo)
{
	(void)d;
	return bo->mem;
}

static int host_prog_load(struct vtpu_device *d, const void *prog,
			  uint64_t size, struct rt_prog **out)
{
	struct host_dev *h = host_dev(d);
	struct vtpu_prog_error perr = { .insn = -1 };
	struct rt_prog *p;
	int ret;

	*out = NULL;
	if (!prog || size < sizeof(struct vtpu_prog_header))
		return rt_set_error(d->client, EINVAL,
				    "%s: a program of %llu bytes", d->name,
				    (unsigned long long)size);
	if (size > VTPU_MAX_PROG_SIZE)
		return rt_set_error(d->client, E2BIG,
				    "%s: a program of %llu bytes, at most %llu",
				    d->name, (unsigned long long)size,
				    (unsigned long long)VTPU_MAX_PROG_SIZE);
	p = calloc(1, sizeof(*p));
	/* malloc's alignment satisfies the validator's 8-byte rule */
	if (p)
		p->data = malloc(size);
	if (!p || !p->data) {
		free(p);
		return rt_set_error(d->client, ENOMEM,
				    "%s: out of memory for a program", d->name);
	}
	memcpy(p->data, prog, size);
	p->size = size;
	ret = vtpu_prog_load(p->data, size, h->vmem_size, &p->info, p->need,
			     &perr);
	if (ret) {
		free(p->data);
		free(p);
		return rt_set_error(d->client, -ret,
				    "%s: invalid program: instruction %d: %s",
				    d->name, perr.insn, perr.why ? perr.why : "?");
	}
	*out = p;
	return 0;
}

static void host_prog_unload(struct vtpu_device *d, struct rt_prog *p)
{
	(void)d;
	if (!p)
		return;
	free(p->data);
	free(p);
}

struct host_trace {
	struct drm_vtpu_profile *p;
	uint32_t cap;		/* records the profile buffer holds */
};

/*
 * The executor's TRACE hook: one timestamped record per TRACE, as the
 * driver's vtpu_core_trace() writes them.
 */
static void host_trace(void *arg, u32 id)
{
	struct host_trace *t = arg;
	struct drm_vtpu_profile *p = t->p;

	if (!p || p->trace_count >= t->cap)
		return;
	p->trace[p->trace_count].id = id;
	p->trace[p->trace_count].pad = 0;
	p->trace[p->trace_count].timestamp = rt_now_ns();
	p->trace_count++;
}

/*
 * The device's other cores, once: as many helper threads as it has cores
 * beyond the first, but no more than the CPUs online beyond the caller's
 * (more would only take turns). Without them jobs run on one thread.
 */
static void host_pool_start(struct host_dev *h)
{
	int helpers = h->cores - 1;
	long cpus;

	/* Every job calls this; sysconf() reads sysfs, so only the first. */
	if (h->pool_tried)
		return;
	h->pool_tried = true;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus > 0 && helpers > cpus - 1)
		helpers = (int)cpus - 1;
	if (helpers > VTPU_EXEC_WAYS_MAX - 1)
		helpers = VTPU_EXEC_WAYS_MAX - 1;
	if (helpers > 0)
		h->pool = host_pool_create(helpers);
}

/*
 * Runs @e to its end, or until the clock passes @deadline: checked
 * between slices of the executor, as vtpu.ko's core checks its watchdog
 * between FPU sections, so a program that loops forever (its branches
 * never reach END) ends with -ETIMEDOUT.
 */
static int host_exec(struct vtpu_exec *e, uint64_t deadline)
{
	int done;

	while (!(done = vtpu_exec_step(e, HOST_STEP))) {
		if (rt_now_ns() > deadline)
			return -ETIMEDOUT;
	}
	return done;
}

/*
 * Checks and runs one job the way SUBMIT with a program object and a
 * core would. Returns the job's status. Like the driver, it fills the
 * profile only for a job that passed the checks: a rejected SUBMIT
 * writes nothing.
 */
static int host_run(struct vtpu_device *d, struct rt_job *job)
{
	struct host_dev *h = host_dev(d);
	struct vtpu_binding_desc desc[DRM_VTPU_MAX_BINDINGS];
	struct vtpu_exec_binding eb[DRM_VTPU_MAX_BINDINGS];
	struct drm_vtpu_profile *prof = NULL;
	const struct rt_prog *prog = job->prog;
	struct host_trace tr = { 0 };
	struct vtpu_exec *e = &h->exec;
	uint64_t start, end, insns;
	int i, done;

	if (job->nbind < 0 || job->nbind > DRM_VTPU_MAX_BINDINGS)
		return -E2BIG;
	if (!prog)
		return -ENOENT;
	if ((u32)job->nbind != prog->info.binding_count)
		return -EINVAL;
	for (i = 0; i < job->nbind; i++) {
		uint32_t f = job->bind_flags[i];

		if (!job->bind[i])
			return -ENOENT;
		if (!f || (f & ~(DRM_VTPU_BIND_READ | DRM_VTPU_BIND_WRITE)))
			return -EINVAL;
		if (!job->bind_size[i] || job->bind_size[i] > job->bind[i]->size)
			return -EINVAL;
		desc[i].size = job->bind_size[i];
		desc[i].access = (f & DRM_VTPU_BIND_READ ? VTPU_ACCESS_READ : 0) |
				 (f & DRM_VTPU_BIND_WRITE ? VTPU_ACCESS_WRITE : 0);
		eb[i].data = job->bind[i]->mem;
		eb[i].size = job->bind_size[i];
	}

	/* O(bindings): the program itself was validated when it loaded. */
	if (vtpu_prog_bindings_ok(prog->need, desc, (u32)job->nbind) >= 0)
		return -EINVAL;

	if (job->profile_bo) {
		uint64_t need = sizeof(*prof) +
			(uint64_t)prog->info.trace_count * sizeof(prof->trace[0]);
		uint64_t have = job->profile_size ? job->profile_size :
			job->profile_bo->size;

		if (have > job->profile_bo->size)
			have = job->profile_bo->size;
		if (need > have)
			return -EINVAL;	/* SUBMIT: a too small profile buffer */
		prof = job->profile_bo->mem;
		memset(prof, 0, sizeof(*prof));
		prof->queued = job->submit_ns;
		prof->flops = prog->info.flops;
		prof->dma_bytes = prog->info.dma_bytes;
		tr.p = prof;
		tr.cap = prog->info.trace_count;
	}

	pthread_mutex_lock(&h->exec_lock);
	host_pool_start(h);
	/*
	 * On the core's clock from here, as on vtpu.ko, whose core wakes its
	 * helpers and clears its VMEM inside the job's running time.
	 */
	start = rt_now_ns();
	if (h->pool && prog->info.lanes > 1)
		host_pool_poke(h->pool);
	vtpu_prog_clear_vmem(&prog->info, h->vmem);
	vtpu_exec_init(e, &prog->info, eb, h->vmem);
	if (h->isa < VTPU_EXEC_ISA_NR)
		e->isa = h->isa;
	if (h->pool) {
		host_pool_bind(h->pool, e, &h->par);
		e->par = &h->par;
	}
	e->trace = host_trace;
	e->trace_arg = &tr;
	if (h->pool && prog->info.lanes > 1) {
		/* no branches with lanes: straight-line code, it ends */
		done = host_pool_run_lanes(h->pool, e, &insns);
	} else {
		done = host_exec(e, start + h->timeout_ns);
		insns = e->insns;
	}
	end = rt_now_ns();
	if (prog->info.dma_bytes >= RT_COMPLETION_PREFETCH_BYTES)
		rt_completion_prefetch();
	pthread_mutex_unlock(&h->exec_lock);

	job->device_ns = end - start;
	if (prof) {
		prof->start = start;
		prof->end = end;
		prof->insns = insns;
		prof->core = 0;		/* one VMEM: everything runs as core 0 */
		prof->status = done < 0 ? done : 0;
	}
	/*
	 * a fault (-ERANGE: a gather index) or the timeout ends the job, as
	 * on vtpu.ko
	 */
	return done < 0 ? done : 0;
}

static int RT_COMPLETION host_submit(struct vtpu_device *d,
				     struct rt_job **jobs, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct rt_job *job = jobs[i];

		if (!job->submit_ns)
			job->submit_ns = rt_now_ns();
		job->device_ns = 0;
		job->status = host_run(d, job);
		job->done_ns = rt_now_ns();
		rt_job_done(job);
	}
	return 0;
}

static int host_wait(struct vtpu_device *d, struct rt_job *job,
		     int64_t timeout_ns)
{
	/* submit() ran the job to its end before returning. */
	(void)d;
	(void)job;
	(void)timeout_ns;
	return 0;
}

const struct rt_backend_ops rt_backend_host = {
	.name = "host",
	.open = host_open,
	.close = host_close,
	.query = host_query,
	.free_blocks = host_free_blocks,
	.bo_create = host_bo_create,
	.bo_destroy = host_bo_destroy,
	.bo_map = host_bo_map,
	.prog_load = host_prog_load,
	.prog_unload = host_prog_unload,
	.submit = host_submit,
	.wait = host_wait,
};
