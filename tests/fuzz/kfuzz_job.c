// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * Jobs for vtpu-kfuzz: SUBMIT requests built valid (bindings over live
 * buffers, a random program for exactly those bindings or a program
 * object, profile, in- and out-syncobjs) and then mutated; JOB_WAIT;
 * PROGRAM_CREATE and PROGRAM_DESTROY. kf_req_build() serves io_uring and
 * the children too.
 *
 * Oracle: for a request whose only possible fault is its program, the
 * host's copy of the validator says what SUBMIT must answer, and
 * vtpu_prog_load() what PROGRAM_CREATE must.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kfuzz.h"

/* --- building requests ----------------------------------------------------- */

static uint32_t bind_flags(struct kf_rng *r)
{
	switch (kf_below(r, 10)) {
	case 0: case 1: case 2: return DRM_VTPU_BIND_READ;
	case 3: case 4: case 5: return DRM_VTPU_BIND_WRITE;
	default: return DRM_VTPU_BIND_READ | DRM_VTPU_BIND_WRITE;
	}
}

static uint32_t bind_access(uint32_t flags)
{
	return (flags & DRM_VTPU_BIND_READ ? VTPU_ACCESS_READ : 0) |
	       (flags & DRM_VTPU_BIND_WRITE ? VTPU_ACCESS_WRITE : 0);
}

/* A bindable buffer of @f, created when there is none. */
static struct kf_bo *bindable_bo(struct kf_file *f, struct kf_rng *r,
				 uint64_t min)
{
	struct kf_bo *bo = kf_bo_pick(f, r, min, true);

	if (bo && kf_chance(r, 90))
		return bo;
	if (kf_bo_new(f, min + kf.page * kf_below(r, 16), kf_below(r, 3), &bo))
		return kf_bo_pick(f, r, min, true);
	return bo;
}

/* Ranges of live buffers, with access flags; how many it made. */
static unsigned int make_bindings(struct kf_file *f, struct kf_rng *r,
				  struct kf_req *q,
				  struct vtpu_binding_desc *desc)
{
	unsigned int n, i;

	n = kf_chance(r, 10) ? 0 : kf_chance(r, 90) ? 1 + kf_below(r, 4) :
	    5 + kf_below(r, DRM_VTPU_MAX_BINDINGS - 4);
	for (i = 0; i < n; i++) {
		struct drm_vtpu_binding *b = &q->bind[i];
		struct kf_bo *bo = bindable_bo(f, r, 1);

		if (!bo)
			break;
		b->handle = bo->handle;
		b->flags = bind_flags(r);
		if (kf_chance(r, 40)) {
			b->offset = 0;
			b->size = bo->size;
		} else {
			b->offset = kf_rand(r) % bo->size;
			if (kf_chance(r, 50))
				b->offset &= ~(uint64_t)(kf.page - 1);
			b->size = 1 + kf_rand(r) % (bo->size - b->offset);
		}
		desc[i].size = b->size;
		desc[i].access = bind_access(b->flags);
	}
	return i;
}

/* A mapped buffer of @f, for the profile: trace_count scribbles reach it. */
static struct kf_bo *mapped_bo(struct kf_file *f, struct kf_rng *r)
{
	int i, fi = (int)(f - kf.files), start = kf_below(r, kf.nmaps + 1);

	for (i = 0; i < kf.nmaps; i++) {
		struct kf_map *m = &kf.maps[(start + i) % kf.nmaps];
		int j;

		if (m->file != fi || !m->writable)
			continue;
		for (j = 0; j < f->nbos; j++)
			if (f->bos[j].handle == m->handle &&
			    f->bos[j].size <= KF_BIG_BO &&
			    m->len >= f->bos[j].size)
				return &f->bos[j];
	}
	return NULL;
}

static void add_syncs(struct kf_file *f, struct kf_rng *r, struct kf_req *q)
{
	struct kf_syncobj *s;
	unsigned int i, n;

	if (f->nsyncobjs && kf_chance(r, 20)) {
		n = 1 + kf_below(r, 3);
		for (i = 0; i < n; i++) {
			s = kf_syncobj_pick(f, r);
			q->in[i].handle = s->handle;
			q->in[i].point = s->point && kf_chance(r, 50) ?
					 1 + kf_below(r, s->point) : 0;
		}
		q->s.in_syncs = (uintptr_t)q->in;
		q->s.in_sync_count = n;
		/* Whether the in-fences exist is not modelled. */
		q->clean = false;
	}
	if (f->nsyncobjs && kf_chance(r, 30)) {
		s = kf_syncobj_pick(f, r);
		q->s.out_sync = s->handle;
		if (kf_chance(r, 50))
			q->s.out_sync_point = s->point += 1 + kf_below(r, 2);
	}
}

/* Breaks one to three things of a valid request. */
static void mutate_req(struct kf_file *f, struct kf_rng *r, struct kf_req *q)
{
	static const uint64_t sizes[] = {
		0, 1, 63, 64, 65, 4095, 4096, 0x7fffffff, 0x100000000ULL,
		0x80000000000ULL, ~0ULL,
	};
	unsigned int n = 1 + kf_below(r, 3), nb = q->s.binding_count;
	struct drm_vtpu_binding *b = nb ? &q->bind[kf_below(r, nb)] : NULL;
	struct drm_vtpu_sync *in = &q->in[kf_below(r, 3)];
	struct kf_bo *bo;

	q->clean = false;
	while (n--) {
		switch (kf_below(r, 20)) {
		case 0: q->s.flags = 1u << kf_below(r, 32); break;
		case 1:
			bo = kf_bo_pick(f, r, 0, false);
			q->s.program_handle = bo && kf_chance(r, 50) ?
					      bo->handle : (uint32_t)kf_rand(r);
			break;
		case 2:
			q->s.program_offset = kf_chance(r, 50) ?
				kf_pick_u64(r, sizes, 11) :
				q->s.program_offset + kf_below(r, 64);
			break;
		case 3:
			q->s.program_size = kf_chance(r, 50) ?
				kf_pick_u64(r, sizes, 11) :
				q->s.program_size + kf_below(r, 130) - 64;
			break;
		case 4: q->s.bindings = kf_bad_ptr(r); break;
		case 5:
			q->s.binding_count = kf_chance(r, 50) ?
				nb + kf_below(r, 3) - 1 :
				(uint32_t)kf_pick_u64(r, sizes, 11);
			break;
		case 6:
			q->s.in_sync_count = kf_chance(r, 50) ?
				DRM_VTPU_MAX_IN_SYNCS + 1 : (uint32_t)kf_rand(r);
			q->s.in_syncs = (uintptr_t)q->in;
			break;
		case 7:
			q->s.in_syncs = kf_bad_ptr(r);
			q->s.in_sync_count = 1 + kf_below(r, 3);
			break;
		case 8: q->s.out_sync = kf_rand(r); break;
		case 9: q->s.out_sync_point = kf_rand(r); break;
		case 10:
			bo = kf_bo_pick(f, r, 0, false);
			q->s.profile_handle = bo ? bo->handle : kf_rand(r);
			q->s.profile_offset = kf_chance(r, 50) ? 0 :
				kf_pick_u64(r, sizes, 11) & ~7ULL;
			break;
		case 11:
			q->s.profile_offset |= 1 + kf_below(r, 7);
			break;
		case 12:
			/* A profile too small for the program's TRACEs. */
			if ((bo = kf_bo_pick(f, r, 0, true))) {
				q->s.profile_handle = bo->handle;
				q->s.profile_offset = bo->size - 8 *
						      (1 + kf_below(r, 16));
			}
			break;
		case 13:
			if (b)
				b->flags = kf_chance(r, 50) ? 0 : kf_rand(r);
			break;
		case 14:
			if (b)
				b->handle = kf_chance(r, 50) ? 0 : kf_rand(r);
			break;
		case 15:
			if (b)
				b->offset = kf_chance(r, 50) ?
					kf_pick_u64(r, sizes, 11) :
					~0ULL - kf_below(r, 16);
			break;
		case 16:
			if (b)
				b->size = kf_pick_u64(r, sizes, 11);
			break;
		case 17:
			in->flags = 1u << kf_below(r, 32);
			q->s.in_syncs = (uintptr_t)q->in;
			if (!q->s.in_sync_count)
				q->s.in_sync_count = 1;
			break;
		case 18:
			in->point = kf_rand(r);
			in->handle = kf_chance(r, 50) ? in->handle : kf_rand(r);
			q->s.in_syncs = (uintptr_t)q->in;
			if (!q->s.in_sync_count)
				q->s.in_sync_count = 1;
			break;
		default:
			q->s.job_id = kf_rand(r);	/* ignored */
			break;
		}
	}
}

/*
 * A SUBMIT of one of @f's program objects: bindings that give each what
 * PROGRAM_CREATE said it needs, now and then one that falls short.
 */
static int pobj_req_build(struct kf_file *f, struct kf_rng *r,
			  struct kf_req *q, bool mutate)
{
	struct kf_pobj *p = &f->progs[kf_below(r, f->nprogs)];
	int faults = 0, i, bad = -1;
	struct kf_bo *prof;
	uint64_t need;

	q->s.flags = DRM_VTPU_SUBMIT_PROGRAM;
	q->s.program_handle = p->handle;
	if (mutate && kf_chance(r, 10))
		bad = kf_below(r, p->nbind ? p->nbind : 1);
	for (i = 0; i < (int)p->nbind; i++) {
		struct drm_vtpu_binding *b = &q->bind[i];
		uint64_t want = p->need[i].size ? p->need[i].size : 1;
		struct kf_bo *bo = bindable_bo(f, r, want);

		if (!bo)
			return -ENOSPC;
		b->handle = bo->handle;
		b->flags = bind_flags(r) |
			   (p->need[i].access & VTPU_ACCESS_READ ?
			    DRM_VTPU_BIND_READ : 0) |
			   (p->need[i].access & VTPU_ACCESS_WRITE ?
			    DRM_VTPU_BIND_WRITE : 0);
		b->offset = kf_rand(r) % (bo->size - want + 1);
		b->size = want + kf_rand(r) % (bo->size - b->offset - want + 1);
		if (i == bad && p->need[i].size) {
			b->size = p->need[i].size - 1;
			faults++;
		} else if (i == bad && p->need[i].access) {
			b->flags = p->need[i].access & VTPU_ACCESS_READ ?
				   DRM_VTPU_BIND_WRITE : DRM_VTPU_BIND_READ;
			faults++;
		}
		if (!b->size) {
			/* A range is never empty: that is its own fault. */
			b->size = 1;
			faults = 2;
		}
	}
	q->s.bindings = p->nbind ? (uintptr_t)q->bind : 0;
	q->s.binding_count = p->nbind;
	need = sizeof(struct drm_vtpu_profile) +
	       (uint64_t)p->traces * sizeof(struct drm_vtpu_profile_trace);
	if (kf_chance(r, 40) && (prof = bindable_bo(f, r, need))) {
		q->s.profile_handle = prof->handle;
		q->s.profile_offset = (kf_rand(r) % (prof->size - need + 1)) &
				      ~7ULL;
		f->prof_handle = prof->handle;
		f->prof_offset = q->s.profile_offset;
	}
	/* The oracle: valid, or exactly one binding short. */
	q->prog_valid = !faults;
	q->clean = faults <= 1;
	kf_note(" program object %u bind %u%s", p->handle, p->nbind,
		faults ? " SHORT" : "");
	add_syncs(f, r, q);
	q->file = (int)(f - kf.files);
	q->file_gen = f->gen;
	q->closes_mark = f->closes;
	q->arena_mark = f->arena_written;
	if (mutate && kf_chance(r, 20))
		mutate_req(f, r, q);
	return 0;
}

/**
 * kf_req_build() - a SUBMIT request of @f, valid unless @mutate breaks it
 * @f: the file whose buffers and syncobjs it uses
 * @r: random numbers
 * @q: receives the request; it points into itself
 * @mutate: break the program or the request now and then
 *
 * The program is written into the file's arena at the next free place.
 *
 * Return: 0, or -ENOMEM when no program could be built.
 */
int kf_req_build(struct kf_file *f, struct kf_rng *r, struct kf_req *q,
		 bool mutate)
{
	struct vtpu_binding_desc desc[DRM_VTPU_MAX_BINDINGS + 1];
	const struct kf_dev *d = &kf.devs[f->dev];
	uint64_t need, room, prof_off = 0, po;
	struct kf_bo *prof = NULL;
	int attack = -1;
	uint64_t attack_off = 0;
	struct kf_prog p = { 0 };
	unsigned int nb;

	memset(q, 0, sizeof(*q));
	q->clean = true;
	if (f->nprogs && kf_fam(KF_FAM_PROGRAM) && kf_chance(r, 30))
		return pobj_req_build(f, r, q, mutate);
	if (!kf_arena_ready(f))
		return -ENOMEM;
	nb = make_bindings(f, r, q, desc);

	/* The profile, and now and then a binding that can write to it. */
	if (kf_chance(r, 40)) {
		prof = kf_fam(KF_FAM_PROFILE) && kf_chance(r, 50) ?
		       mapped_bo(f, r) : NULL;
		if (!prof)
			prof = bindable_bo(f, r, sizeof(struct drm_vtpu_profile));
	}
	if (prof) {
		room = prof->size >= 8192 ? prof->size - 4096 : 64;
		prof_off = (kf_rand(r) % (prof->size - 64 + 1)) & ~7ULL;
		if (prof_off > room)
			prof_off = room & ~7ULL;
	}
	if (prof && nb < DRM_VTPU_MAX_BINDINGS && kf_fam(KF_FAM_PROFILE) &&
	    kf_chance(r, 15)) {
		struct drm_vtpu_binding *b = &q->bind[nb];
		uint64_t tc = prof_off + offsetof(struct drm_vtpu_profile,
						  trace_count);

		b->handle = prof->handle;
		b->flags = DRM_VTPU_BIND_WRITE |
			   (kf_chance(r, 50) ? DRM_VTPU_BIND_READ : 0);
		b->offset = tc - (kf_below(r, (uint32_t)(tc / 4) + 1) * 4);
		b->size = tc + 4 - b->offset + kf_below(r, 64);
		if (b->offset + b->size > prof->size)
			b->size = prof->size - b->offset;
		desc[nb].size = b->size;
		desc[nb].access = bind_access(b->flags);
		attack = nb++;
		attack_off = tc - b->offset;
	}
	q->s.bindings = nb ? (uintptr_t)q->bind : 0;
	q->s.binding_count = nb;

	if (kf_prog_gen(r, d->q.vmem_size, desc, nb, attack, attack_off, &p))
		return -ENOMEM;
	if (mutate && kf_chance(r, 25)) {
		kf_prog_mutate(r, &p);
		kf_prog_check(&p, desc, nb, d->q.vmem_size);
	}
	q->prog_valid = p.valid;
	if (p.size > f->arena_size) {
		kf_prog_free(&p);
		return -ENOMEM;
	}
	/* Round the arena, never across its end. */
	po = f->arena_written % f->arena_size;
	if (po + p.size > f->arena_size) {
		f->arena_written += f->arena_size - po;
		po = 0;
	}
	q->arena_mark = f->arena_written;
	f->arena_written = (f->arena_written + p.size + 63) & ~63ULL;
	if (!kf_touch((char *)f->arena_map + po, p.size, p.buf)) {
		kf_prog_free(&p);
		return -EFAULT;
	}
	q->s.program_handle = f->arena;
	q->s.program_offset = po;
	q->s.program_size = p.size;
	q->prog_crc = vtpu_prog_crc32(p.buf, p.size);
	kf_note(" prog %zu bytes %s%s bind %u", p.size,
		p.valid ? "valid" : "invalid", attack >= 0 ? " ATTACK" : "", nb);
	kf_prog_free(&p);

	if (prof) {
		need = sizeof(struct drm_vtpu_profile) +
		       (uint64_t)p.traces * sizeof(struct drm_vtpu_profile_trace);
		if (prof_off + need > prof->size) {
			/* Cannot hold it: no profile (unless attacking). */
			if (attack < 0)
				prof = NULL;
			else
				q->clean = false;
		}
	}
	if (prof) {
		q->s.profile_handle = prof->handle;
		q->s.profile_offset = prof_off;
		f->prof_handle = prof->handle;
		f->prof_offset = prof_off;
	}
	add_syncs(f, r, q);
	q->file = (int)(f - kf.files);
	q->file_gen = f->gen;
	q->closes_mark = f->closes;
	q->s.job_id = kf_chance(r, 10) ? kf_rand(r) : 0;
	if (mutate && kf_chance(r, 30))
		mutate_req(f, r, q);
	return 0;
}

/* --- SUBMIT and JOB_WAIT ---------------------------------------------------------- */

static void pending_add(struct kf_file *f, uint64_t id)
{
	if (f->npending == KF_MAX_PENDING) {
		/* Forget the oldest: its record stays until the file goes. */
		memmove(f->pending, f->pending + 1,
			(KF_MAX_PENDING - 1) * sizeof(f->pending[0]));
		f->npending--;
	}
	f->pending[f->npending++] = id;
}

static void pending_del(struct kf_file *f, int i)
{
	memmove(f->pending + i, f->pending + i + 1,
		(f->npending - i - 1) * sizeof(f->pending[0]));
	f->npending--;
}

/* Which handle of a request @fd does not know: for the report. */
static void explain_enoent(int fd, const struct kf_req *q)
{
	struct drm_vtpu_bo_info info = { 0 };
	unsigned int i;

	info.handle = q->s.program_handle;
	if (kf_ioctl(fd, DRM_IOCTL_VTPU_BO_INFO, &info))
		fprintf(stderr, "kfuzz: program handle %u unknown\n",
			q->s.program_handle);
	for (i = 0; i < q->s.binding_count; i++) {
		info.handle = q->bind[i].handle;
		if (kf_ioctl(fd, DRM_IOCTL_VTPU_BO_INFO, &info))
			fprintf(stderr, "kfuzz: binding %u handle %u unknown\n",
				i, q->bind[i].handle);
	}
	info.handle = q->s.profile_handle;
	if (info.handle && kf_ioctl(fd, DRM_IOCTL_VTPU_BO_INFO, &info))
		fprintf(stderr, "kfuzz: profile handle %u unknown\n",
			info.handle);
	if (q->s.out_sync)
		fprintf(stderr, "kfuzz: out_sync %u\n", q->s.out_sync);
}

/*
 * What the oracle allows SUBMIT to answer for @q. Under fault injection
 * (--enomem-ok) a failed allocation may surface as any errno (a copy
 * from user memory whose page cannot be allocated is -EFAULT): then only
 * a bad request that succeeds is wrong.
 */
static void check_submit(const struct kf_req *q, int ret, const char *how)
{
	if (!q->clean)
		return;
	if (kf.enomem_ok && (ret || q->prog_valid)) {
		return;
	} else if (q->prog_valid) {
		if (ret && ret != -EBUSY && ret != -ENOMEM)
			kf_contract("%s of a valid request failed: %d", how, ret);
	} else if (ret != -EINVAL && ret != -ENOMEM) {
		kf_contract("%s of a program the validator rejects: %d, not -EINVAL",
			    how, ret);
	}
}

void kf_op_submit(struct kf_rng *r)
{
	struct kf_file *f = kf_file_pick(r), *other = NULL;
	bool own_fd = true;
	struct kf_req *q;
	int fd, ret;

	if (!f)
		return;
	q = malloc(sizeof(*q));
	if (!q || kf_req_build(f, r, q, true)) {
		free(q);
		return;
	}
	fd = kf_file_fd(f, r);
	if (kf_chance(r, 3) && (other = kf_file_pick(r)) && other != f) {
		fd = kf_file_fd(other, r);
		q->clean = false;
		own_fd = false;
	}
	if (kf_chance(r, 2)) {
		ret = kf_ioctl(fd, DRM_IOCTL_VTPU_SUBMIT, (void *)kf_bad_ptr(r));
		kf_note(" bad pointer -> %d", ret);
		free(q);
		return;
	}
	ret = kf_ioctl(fd, DRM_IOCTL_VTPU_SUBMIT, &q->s);
	kf_note(" -> %d job %llu", ret, ret ? 0ULL :
		(unsigned long long)q->s.job_id);
	check_submit(q, ret, "SUBMIT");
	if (q->clean && ret == -ENOENT)
		explain_enoent(fd, q);
	if (!ret) {
		__atomic_fetch_add(&kf.stats->jobs, 1, __ATOMIC_RELAXED);
		if (own_fd) {
			if (!q->s.job_id ||
			    (q->s.job_id <= f->last_job && !f->shared))
				kf_contract("SUBMIT returned job id %llu after %llu",
					    (unsigned long long)q->s.job_id,
					    (unsigned long long)f->last_job);
			f->last_job = q->s.job_id;
			pending_add(f, q->s.job_id);
		} else if (q->s.job_id > other->last_job) {
			/* the job is the other file's: so is its id */
			other->last_job = q->s.job_id;
		}
	}
	free(q);
}

/* JOB_WAIT of @id until @deadline: the ioctl's -errno, the job's in @status. */
int kf_wait_one(int fd, uint64_t id, int64_t deadline, int *status)
{
	struct drm_vtpu_job_wait w = { .job_id = id, .timeout_ns = deadline };
	int ret = kf_ioctl(fd, DRM_IOCTL_VTPU_JOB_WAIT, &w);

	*status = w.status;
	return ret;
}

void kf_op_wait(struct kf_rng *r)
{
	struct kf_file *f = kf_file_pick(r);
	struct drm_vtpu_job_wait w = { 0 };
	int64_t now = (int64_t)(kf_now() * 1e9);
	int i = -1, ret;

	if (!f)
		return;
	if (f->npending && kf_chance(r, 75)) {
		i = kf_chance(r, 50) ? 0 : (int)kf_below(r, f->npending);
		w.job_id = f->pending[i];
	} else {
		static const uint64_t ids[] = {
			0, 1, 0x7fffffffffffffffULL, 0x8000000000000000ULL,
			~0ULL, 0x100000000ULL,
		};

		w.job_id = kf_chance(r, 50) ? f->last_job + 1 + kf_below(r, 4) :
			   kf_pick_u64(r, ids, 6);
	}
	switch (kf_below(r, 10)) {
	case 0: case 1: case 2: w.timeout_ns = 0; break;
	case 3: w.timeout_ns = now - 1000000; break;
	case 4: w.timeout_ns = -1; break;
	case 5: w.timeout_ns = i >= 0 ? now + 2500000000LL : now; break;
	default: w.timeout_ns = now + kf_below(r, 50) * 1000000LL; break;
	}
	if (kf_chance(r, 3))
		w.flags = 1u << kf_below(r, 32);
	w.status = kf_rand(r);
	if (kf_chance(r, 2)) {
		ret = kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_JOB_WAIT,
			       (void *)kf_bad_ptr(r));
		kf_note(" bad pointer -> %d", ret);
		return;
	}
	ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_VTPU_JOB_WAIT, &w);
	kf_note(" job %llu timeout %lld ms flags %#x -> %d status %d",
		(unsigned long long)w.job_id, w.timeout_ns > 0 ?
		(long long)(w.timeout_ns - now) / 1000000 : (long long)w.timeout_ns,
		w.flags, ret, ret ? 0 : w.status);
	if (w.flags) {
		if (ret != -EINVAL)
			kf_contract("JOB_WAIT flags %#x: %d", w.flags, ret);
		return;
	}
	if (i < 0 && w.job_id > f->last_job && !f->shared &&
	    !f->ring_submits && ret != -ENOENT)
		kf_contract("JOB_WAIT of job %llu, never submitted: %d",
			    (unsigned long long)w.job_id, ret);
	/* A job ends 0, -ETIMEDOUT, -ECANCELED, -ENOENT or -ESRCH. */
	if (!ret && (w.status > 0 || w.status == -EINVAL ||
		     w.status == -EFAULT))
		kf_contract("JOB_WAIT of job %llu: status %d",
			    (unsigned long long)w.job_id, w.status);
	if (i >= 0 && (!ret || ret == -ENOENT))
		pending_del(f, i);
}

/* Waits a little for the oldest jobs of @f until at most @keep remain. */
void kf_wait_pending(struct kf_file *f, int keep)
{
	double end = kf_now() + 3;
	int status, ret;

	while (f->npending > keep && kf_now() < end) {
		ret = kf_wait_one(f->fds[0], f->pending[0],
			       (int64_t)((kf_now() + 0.5) * 1e9), &status);
		if (ret == -ETIME)
			break;
		pending_del(f, 0);
	}
}

/* --- program objects -------------------------------------------------------------- */

static void pobj_forget(struct kf_file *f, struct kf_pobj *p)
{
	f->closes++;
	*p = f->progs[--f->nprogs];
}

/* PROGRAM_CREATE, checked against the host's vtpu_prog_load(). */
static void program_create(struct kf_rng *r, struct kf_file *f)
{
	struct drm_vtpu_program_binding out[VTPU_MAX_BINDINGS + 1];
	struct vtpu_binding_desc desc[8], need[VTPU_MAX_BINDINGS];
	const struct kf_dev *d = &kf.devs[f->dev];
	struct drm_vtpu_program_create c = { 0 };
	struct drm_vtpu_program_destroy pd = { 0 };
	struct vtpu_prog_info info;
	struct kf_prog p = { 0 };
	unsigned int nb = kf_below(r, 6), i;
	bool clean = true, loads;
	int ret;

	if (f->nprogs == KF_MAX_PROGS) {
		pd.handle = f->progs[0].handle;
		kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_PROGRAM_DESTROY, &pd);
		pobj_forget(f, &f->progs[0]);
	}
	/* Made for some bindings; the object takes any that are enough. */
	for (i = 0; i < nb; i++) {
		desc[i].size = 1 + kf_below(r, 1 << 16);
		desc[i].access = 1 + kf_below(r, 3);
	}
	if (kf_prog_gen(r, d->q.vmem_size, desc, nb, -1, 0, &p))
		return;
	if (kf_chance(r, 25))
		kf_prog_mutate(r, &p);
	loads = !vtpu_prog_load(p.buf, p.size, d->q.vmem_size, &info, need,
				NULL);
	c.program = (uintptr_t)p.buf;
	c.size = p.size;
	c.bindings = (uintptr_t)out;
	c.max_bindings = VTPU_MAX_BINDINGS;
	memset(out, 0xff, sizeof(out));
	switch (kf_below(r, 20)) {
	case 0: c.program = kf_bad_ptr(r); clean = false; break;
	case 1: c.size = kf_edge_size(r, p.size); clean = false; break;
	case 2: c.bindings = kf_bad_ptr(r); clean = false; break;
	case 3: c.max_bindings = kf_below(r, 3); break;
	case 4: c.bindings = 0; break;
	case 5: c.flags = 1u << kf_below(r, 32); clean = false; break;
	case 6: c.pad = 1u << kf_below(r, 32); clean = false; break;
	default: break;
	}
	c.handle = kf_rand(r);
	ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_VTPU_PROGRAM_CREATE, &c);
	kf_note(" create %zu bytes %s -> %d handle %u bindings %u traces %u",
		p.size, loads ? "loadable" : "invalid", ret, ret ? 0 : c.handle,
		c.binding_count, c.trace_count);
	if (clean && (loads ? ret && ret != -ENOMEM && ret != -EMFILE &&
			      !kf.enomem_ok :
			      ret != -EINVAL && ret != -ENOMEM &&
			      !(kf.enomem_ok && ret)))
		kf_contract("PROGRAM_CREATE of a program vtpu_prog_load() %s: %d",
			    loads ? "accepts" : "rejects", ret);
	if ((c.flags || c.pad) && ret != -EINVAL)
		kf_contract("PROGRAM_CREATE flags %#x pad %#x: %d", c.flags,
			    c.pad, ret);
	if (!ret && clean && loads) {
		if (!c.handle)
			kf_contract("PROGRAM_CREATE returned handle 0 (never valid)");
		if (c.binding_count != info.binding_count ||
		    c.trace_count != info.trace_count)
			kf_contract("PROGRAM_CREATE: %u bindings, %u traces (%u, %u expected)",
				    c.binding_count, c.trace_count,
				    info.binding_count, info.trace_count);
		for (i = 0; c.bindings && i < info.binding_count &&
		     i < c.max_bindings; i++)
			if (out[i].size != need[i].size || out[i].pad ||
			    out[i].flags != bind_access(need[i].access))
				kf_contract("PROGRAM_CREATE binding %u: %llu bytes flags %u (%llu, %u expected)",
					    i, (unsigned long long)out[i].size,
					    out[i].flags,
					    (unsigned long long)need[i].size,
					    bind_access(need[i].access));
		if (c.bindings && c.max_bindings < VTPU_MAX_BINDINGS &&
		    out[c.max_bindings].flags != 0xffffffffu)
			kf_contract("PROGRAM_CREATE wrote past max_bindings %u",
				    c.max_bindings);
	}
	for (i = 0; !ret && i < (unsigned int)f->nprogs; i++)
		if (f->progs[i].handle == c.handle)
			kf_contract("PROGRAM_CREATE returned live handle %u",
				    c.handle);
	if (!ret && !c.handle) {
		/* Reported above: keep it out of the model. */
		pd.handle = 0;
		kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_PROGRAM_DESTROY, &pd);
	} else if (!ret && f->nprogs < KF_MAX_PROGS && loads) {
		struct kf_pobj *o = &f->progs[f->nprogs++];

		o->handle = c.handle;
		o->nbind = info.binding_count;
		o->traces = info.trace_count;
		memcpy(o->need, need, sizeof(need));
	} else if (!ret) {
		pd.handle = c.handle;
		kf_ioctl(f->fds[0], DRM_IOCTL_VTPU_PROGRAM_DESTROY, &pd);
	}
	kf_prog_free(&p);
}

void kf_op_program(struct kf_rng *r)
{
	struct drm_vtpu_program_destroy pd = { 0 };
	struct kf_file *f = kf_file_pick(r);
	int i, ret;

	if (!f)
		return;
	if (!f->nprogs || kf_chance(r, 60)) {
		program_create(r, f);
		return;
	}
	i = kf_below(r, f->nprogs);
	pd.handle = kf_chance(r, 85) ? f->progs[i].handle :
		    kf_chance(r, 30) ? 0 : kf_rand(r);
	if (kf_chance(r, 5))
		pd.flags = 1u << kf_below(r, 32);
	ret = kf_ioctl(kf_file_fd(f, r), DRM_IOCTL_VTPU_PROGRAM_DESTROY, &pd);
	kf_note(" destroy %u flags %#x -> %d", pd.handle, pd.flags, ret);
	if (pd.flags && ret != -EINVAL)
		kf_contract("PROGRAM_DESTROY flags %#x: %d", pd.flags, ret);
	if (!pd.flags && !pd.handle && ret != -ENOENT)
		kf_contract("PROGRAM_DESTROY of handle 0 (never valid): %d", ret);
	if (!ret && pd.handle == f->progs[i].handle)
		pobj_forget(f, &f->progs[i]);
	else if (!pd.flags && pd.handle == f->progs[i].handle)
		kf_contract("PROGRAM_DESTROY of live program %u: %d",
			    pd.handle, ret);
}

