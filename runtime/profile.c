// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * Profile sessions: rt_profile_event() records, vtpu_profile_stop() writes
 * a Chrome trace event file (JSON) that Perfetto and chrome://tracing open.
 *
 * ---- struct rt_event, field by field (the contract with the callers) ----
 *
 * ts_ns and dur_ns are CLOCK_MONOTONIC nanoseconds (rt_now_ns()'s base);
 * the backend converts device ticks (drm_vtpu_query.timestamp_unit_ns)
 * before calling. @device is the device index (-1: host side, no device),
 * @core the core that ran it (-1: host side). @name is copied, so a
 * caller's buffer may be reused at once; NULL is allowed everywhere.
 * value[] slots not listed are ignored; set them to 0.
 *
 * kind (device, core; ts_ns, dur_ns; name): value[]
 *
 * RT_EV_COMPILE (-1, -1; start, duration; program name or NULL):
 *	[0] 1 cache hit, 0 miss	[1] code bytes (0: not known)
 * RT_EV_ALLOC, RT_EV_FREE (device, -1; when, 0; NULL):
 *	[0] size in bytes	[1] placement it got (enum vtpu_placement)
 * RT_EV_SUBMIT (device, -1; when, 0; executable name):
 *	[0] run id, to pair with COMPLETE (0: none)
 *	[1] jobs submitted together
 * RT_EV_COMPLETE (device, -1; when, 0; executable name):
 *	[0] status: 0 or -errno, stored as (uint64_t)(int64_t)status
 *	[1] run id
 * RT_EV_JOB (device, core; start, end - start; executable name):
 *	from struct drm_vtpu_profile: [0] insns [1] flops [2] dma_bytes
 *	[3] status, stored as COMPLETE's
 * RT_EV_OP (device, core; start, duration; op name):
 *	[0] the TRACE instruction's op id
 * RT_EV_MEMORY (device, -1; when, 0; NULL), all of HBM:
 *	[0] used bytes		[1] free bytes
 *	[2] largest free block	[3] free blocks, a count (0: not known)
 * RT_EV_RESERVE, RT_EV_RELEASE (device, -1; when, 0; NULL): an attempt's
 *	memory from and back to the device's pool:
 *	[0] size in bytes	[1] placement	[2] 1: an idle buffer reused
 * RT_EV_LOAD (device, -1; start, duration; NULL): an executable loaded
 *	onto a device: [0] program bytes	[1] weights bytes uploaded
 * RT_EV_COPY (device, -1; start, duration; "copy_in" or "copy_out"): a
 *	run placed by load, its buffers copied to or from the device
 *	it runs on: [0] bytes	[1] run id
 *
 * ---- the trace ----------------------------------------------------------
 *
 * {"traceEvents":[...], "displayTimeUnit":"ns",
 *  "otherData":{"producer":"libvtpu","events":N,"dropped_events":N}}
 *
 * A process per device, pid = index + 1, named "vtpu device N"; pid 0 is
 * "host runtime" (compiles, and anything with device < 0). Within a
 * device, tid 0 is the "submit queue" (host-side events: submit,
 * complete, alloc, free) and tid core + 1 is "core N". ts and dur are
 * microseconds with the nanoseconds as three decimals (printed exactly,
 * not through a double). Kinds map to phases:
 *   COMPILE "X" name "compile", args cache "hit"/"miss", program, code_bytes
 *   JOB     "X" args core, insns, flops, dma_bytes, status
 *   OP      "X" args op_id
 *   LOAD    "X" args program_bytes, weights_bytes
 *   COPY    "X" args bytes, id
 *   SUBMIT, COMPLETE, ALLOC, FREE, RESERVE, RELEASE  "i" (thread
 *           scope); args id/jobs, status/id, size/placement (and
 *           reused for RESERVE)
 *   MEMORY  "C" name "memory", args hbm_used, hbm_free, largest_free,
 *           external_fragmentation (1 - largest_free / hbm_free; 0 when
 *           nothing is free), free_blocks
 *
 * Locking: without a session rt_profile_event() only reads c->profile
 * atomically. With one, it takes c->lock to find the session and hands
 * over to the session's lock before dropping it, so a concurrent stop
 * cannot free the session under it; callers therefore must not hold
 * c->lock. Lock order: c->lock, then the session's lock.
 */
#define _GNU_SOURCE	/* strerrordesc_np: thread-safe, unlike strerror */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yajl/yajl_gen.h>

#include "rt.h"

/*
 * Events live in fixed chunks so an append never moves earlier ones (no
 * realloc copy of a large array while other threads wait on the lock).
 */
#define EV_CHUNK	1024
/* Names are bump-allocated: a malloc per event would dominate the cost. */
#define NAME_BLOCK	(64 * 1024)
/* Cores we name in metadata; events on higher cores still appear. */
#define MAX_NAMED_CORES	63

struct ev_chunk {
	struct ev_chunk *next;
	unsigned int n;
	struct rt_event ev[EV_CHUNK];
};

struct name_block {
	struct name_block *next;
	size_t used, cap;
	char data[];
};

struct vtpu_profile {
	struct rt_obj obj;		/* RT_KIND_PROFILE */
	struct vtpu_client *client;	/* the owner, also after stop */
	pthread_mutex_t lock;		/* Protects the fields below */
	bool stopped;
	struct ev_chunk *head, *tail;
	uint64_t count;
	uint64_t dropped;		/* lost to allocation failures */
	struct name_block *names;	/* the current one first */
};

int vtpu_profile_start(struct vtpu_client *c, struct vtpu_profile **out)
{
	struct vtpu_profile *p;
	int ret;

	/*
	 * Not RT_LIVE(): profile.c's unit test drives it with a bare zeroed
	 * client. A destroyed or foreign handle is still refused.
	 */
	if (!c || (c->obj.magic && !RT_LIVE(c, RT_KIND_CLIENT)))
		return rt_bad_arg(c, __func__, "not a client");
	if (!out)
		return rt_bad_arg(c, __func__, "no out");
	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return rt_set_error(c, ENOMEM, "out of memory");
	ret = pthread_mutex_init(&p->lock, NULL);
	if (ret) {
		free(p);
		return rt_set_error(c, ret, "profile: %s", strerrordesc_np(ret));
	}
	p->client = c;

	pthread_mutex_lock(&c->lock);
	if (c->profile) {
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return rt_set_error(c, EBUSY, "profile: a session is already active");
	}
	/* Atomic: rt_profile_event() peeks at it without the lock. */
	__atomic_store_n(&c->profile, p, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lock);
	rt_obj_add(c, &p->obj, RT_KIND_PROFILE);
	*out = p;
	return 0;
}

/* Copies @s into the session's name blocks; NULL when out of memory. */
static const char *name_dup(struct vtpu_profile *p, const char *s)
{
	size_t len = strlen(s) + 1;
	struct name_block *b = p->names;
	char *dst;

	if (!b || b->cap - b->used < len) {
		size_t cap = len > NAME_BLOCK ? len : NAME_BLOCK;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		b->next = p->names;
		p->names = b;
	}
	dst = b->data + b->used;
	memcpy(dst, s, len);
	b->used += len;
	return dst;
}

/* Called with p->lock held. */
static void append(struct vtpu_profile *p, const struct rt_event *ev)
{
	struct ev_chunk *ch = p->tail;
	struct rt_event *slot;
	const char *name = NULL;

	if (ev->name) {
		name = name_dup(p, ev->name);
		if (!name)
			goto drop;
	}
	if (!ch || ch->n == EV_CHUNK) {
		ch = malloc(sizeof(*ch));
		if (!ch)
			goto drop;
		ch->next = NULL;
		ch->n = 0;
		if (p->tail)
			p->tail->next = ch;
		else
			p->head = ch;
		p->tail = ch;
	}
	slot = &ch->ev[ch->n++];
	*slot = *ev;
	slot->name = name;
	p->count++;
	return;
drop:
	/* The caller cannot handle an error; the trace reports the loss. */
	p->dropped++;
}

bool rt_profiling(struct vtpu_client *c)
{
	return __atomic_load_n(&c->profile, __ATOMIC_ACQUIRE) != NULL;
}

void RT_COMPLETION rt_profile_event(struct vtpu_client *c,
				   const struct rt_event *ev)
{
	struct vtpu_profile *p;

	/* The common case, no session, must not contend on c->lock. */
	if (!__atomic_load_n(&c->profile, __ATOMIC_ACQUIRE))
		return;

	pthread_mutex_lock(&c->lock);
	p = c->profile;
	if (!p) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	/*
	 * Take the session's lock before dropping the client's: stop detaches
	 * under c->lock and then takes p->lock, so it waits for us.
	 */
	pthread_mutex_lock(&p->lock);
	pthread_mutex_unlock(&c->lock);
	if (!p->stopped)
		append(p, ev);
	pthread_mutex_unlock(&p->lock);
}

/* Ends recording; later events for this session are not kept. */
static void detach(struct vtpu_profile *p)
{
	struct vtpu_client *c = p->client;

	/* Also called again by a second stop and by destroy: idempotent. */
	pthread_mutex_lock(&c->lock);
	if (c->profile == p)
		__atomic_store_n(&c->profile, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lock);
	/* Waits for appenders that found the session before it left. */
	pthread_mutex_lock(&p->lock);
	p->stopped = true;
	pthread_mutex_unlock(&p->lock);
}

/* ---- writing ------------------------------------------------------------ */

struct out {
	yajl_gen g;
	FILE *f;
	int err;		/* the first error, -errno */
};

static void out_print(void *ctx, const char *s, size_t len)
{
	struct out *o = ctx;

	if (o->err)
		return;
	if (fwrite(s, 1, len, o->f) != len)
		o->err = errno ? -errno : -EIO;
}

/*
 * yajl's calls only fail on generator misuse (a bug here), never on I/O,
 * which out_print() records; so the helpers fold errors into o->err and
 * the emitters stay readable.
 */
static void gen_check(struct out *o, yajl_gen_status st)
{
	if (st != yajl_gen_status_ok && !o->err)
		o->err = -EINVAL;
}

static void put_str(struct out *o, const char *s)
{
	yajl_gen_status st;

	st = yajl_gen_string(o->g, (const unsigned char *)s, strlen(s));
	/* Names come from user programs; keep the file valid JSON. */
	if (st == yajl_gen_invalid_string)
		st = yajl_gen_string(o->g, (const unsigned char *)"?", 1);
	gen_check(o, st);
}

static void put_key_str(struct out *o, const char *k, const char *v)
{
	put_str(o, k);
	put_str(o, v);
}

static void put_key_u64(struct out *o, const char *k, uint64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);

	put_str(o, k);
	gen_check(o, yajl_gen_number(o->g, buf, n));
}

static void put_key_i64(struct out *o, const char *k, int64_t v)
{
	put_str(o, k);
	gen_check(o, yajl_gen_integer(o->g, v));
}

/* Nanoseconds as exact microseconds: "12.345", never 12.3449999. */
static void put_key_us(struct out *o, const char *k, uint64_t ns)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64 ".%03u",
			 ns / 1000, (unsigned int)(ns % 1000));

	put_str(o, k);
	gen_check(o, yajl_gen_number(o->g, buf, n));
}

/* yajl_gen_double prints 17 digits: 0.33333333333333331483. */
static void put_key_frac(struct out *o, const char *k, double v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%.6f", v);

	put_str(o, k);
	gen_check(o, yajl_gen_number(o->g, buf, n));
}

static int ev_pid(const struct rt_event *ev)
{
	if (ev->kind == RT_EV_COMPILE || ev->device < 0 ||
	    ev->device >= RT_MAX_DEVICES)
		return 0;
	return ev->device + 1;
}

static int ev_tid(const struct rt_event *ev)
{
	return ev->kind == RT_EV_COMPILE || ev->core < 0 ? 0 : ev->core + 1;
}

static const char *placement_name(uint64_t v)
{
	switch (v) {
	case VTPU_PLACE_AUTO:	return "auto";
	case VTPU_PLACE_HBM:	return "hbm";
	case VTPU_PLACE_HOST:	return "host";
	default:		return "unknown";
	}
}

static void put_meta(struct out *o, const char *what, int pid, int tid,
		     const char *name)
{
	gen_check(o, yajl_gen_map_open(o->g));
	put_key_str(o, "name", what);
	put_key_str(o, "ph", "M");
	put_key_i64(o, "pid", pid);
	put_key_i64(o, "tid", tid);
	put_str(o, "args");
	gen_check(o, yajl_gen_map_open(o->g));
	put_key_str(o, "name", name);
	gen_check(o, yajl_gen_map_close(o->g));
	gen_check(o, yajl_gen_map_close(o->g));
}

/* Names only the processes and threads that have events. */
static void put_metadata(struct out *o, const struct vtpu_profile *p)
{
	/* bit t of seen[pid]: thread t of that process has events */
	uint64_t seen[RT_MAX_DEVICES + 1] = { 0 };
	const struct ev_chunk *ch;
	char name[32];
	int pid, tid;

	seen[0] = 1;	/* the host runtime is always there */
	for (ch = p->head; ch; ch = ch->next)
		for (unsigned int i = 0; i < ch->n; i++) {
			tid = ev_tid(&ch->ev[i]);
			if (tid <= MAX_NAMED_CORES)
				seen[ev_pid(&ch->ev[i])] |= 1ull << tid;
			else
				seen[ev_pid(&ch->ev[i])] |= 1;
		}

	put_meta(o, "process_name", 0, 0, "host runtime");
	put_meta(o, "thread_name", 0, 0, "runtime");
	for (pid = 1; pid <= RT_MAX_DEVICES; pid++) {
		if (!seen[pid])
			continue;
		snprintf(name, sizeof(name), "vtpu device %d", pid - 1);
		put_meta(o, "process_name", pid, 0, name);
		put_meta(o, "thread_name", pid, 0, "submit queue");
		for (tid = 1; tid <= MAX_NAMED_CORES; tid++) {
			if (!(seen[pid] & (1ull << tid)))
				continue;
			snprintf(name, sizeof(name), "core %d", tid - 1);
			put_meta(o, "thread_name", pid, tid, name);
		}
	}
}

static void put_args(struct out *o, const struct rt_event *ev)
{
	const uint64_t *v = ev->value;

	switch (ev->kind) {
	case RT_EV_COMPILE:
		put_key_str(o, "cache", v[0] ? "hit" : "miss");
		if (ev->name)
			put_key_str(o, "program", ev->name);
		put_key_u64(o, "code_bytes", v[1]);
		break;
	case RT_EV_ALLOC:
	case RT_EV_FREE:
	case RT_EV_RELEASE:
		put_key_u64(o, "size", v[0]);
		put_key_str(o, "placement", placement_name(v[1]));
		break;
	case RT_EV_RESERVE:
		put_key_u64(o, "size", v[0]);
		put_key_str(o, "placement", placement_name(v[1]));
		put_key_u64(o, "reused", v[2]);
		break;
	case RT_EV_LOAD:
		put_key_u64(o, "program_bytes", v[0]);
		put_key_u64(o, "weights_bytes", v[1]);
		break;
	case RT_EV_COPY:
		put_key_u64(o, "bytes", v[0]);
		put_key_u64(o, "id", v[1]);
		break;
	case RT_EV_SUBMIT:
		put_key_u64(o, "id", v[0]);
		put_key_u64(o, "jobs", v[1]);
		break;
	case RT_EV_COMPLETE:
		put_key_i64(o, "status", (int64_t)v[0]);
		put_key_u64(o, "id", v[1]);
		break;
	case RT_EV_JOB:
		put_key_i64(o, "core", ev->core);
		put_key_u64(o, "insns", v[0]);
		put_key_u64(o, "flops", v[1]);
		put_key_u64(o, "dma_bytes", v[2]);
		put_key_i64(o, "status", (int64_t)v[3]);
		break;
	case RT_EV_OP:
		put_key_u64(o, "op_id", v[0]);
		break;
	case RT_EV_MEMORY:
		put_key_u64(o, "hbm_used", v[0]);
		put_key_u64(o, "hbm_free", v[1]);
		put_key_u64(o, "largest_free", v[2]);
		put_key_frac(o, "external_fragmentation",
			     v[1] ? 1.0 - (double)v[2] / (double)v[1] : 0.0);
		put_key_u64(o, "free_blocks", v[3]);
		break;
	}
}

/* Per kind: the event's name (NULL: the caller's) and its phase. */
static const struct {
	const char *name, *ph;
} kind_fmt[] = {
	[RT_EV_COMPILE]		= { "compile", "X" },
	[RT_EV_ALLOC]		= { "alloc", "i" },
	[RT_EV_FREE]		= { "free", "i" },
	[RT_EV_SUBMIT]		= { "submit", "i" },
	[RT_EV_COMPLETE]	= { "complete", "i" },
	[RT_EV_JOB]		= { NULL, "X" },
	[RT_EV_OP]		= { NULL, "X" },
	[RT_EV_MEMORY]		= { "memory", "C" },
	[RT_EV_RESERVE]		= { "reserve", "i" },
	[RT_EV_RELEASE]		= { "release", "i" },
	[RT_EV_LOAD]		= { "load", "X" },
	[RT_EV_COPY]		= { NULL, "X" },
};

static void put_event(struct out *o, const struct rt_event *ev)
{
	const char *name, *ph;

	/* a kind newer than this file: leave it out rather than guess */
	if ((unsigned int)ev->kind >= sizeof(kind_fmt) / sizeof(kind_fmt[0]) ||
	    !kind_fmt[ev->kind].ph)
		return;
	ph = kind_fmt[ev->kind].ph;
	name = kind_fmt[ev->kind].name;
	if (!name)
		name = ev->name ? ev->name : "";

	gen_check(o, yajl_gen_map_open(o->g));
	put_key_str(o, "name", name);
	put_key_str(o, "ph", ph);
	put_key_us(o, "ts", ev->ts_ns);
	if (*ph == 'X')
		put_key_us(o, "dur", ev->dur_ns);
	if (*ph == 'i')
		put_key_str(o, "s", "t");
	put_key_i64(o, "pid", ev_pid(ev));
	put_key_i64(o, "tid", ev_tid(ev));
	put_str(o, "args");
	gen_check(o, yajl_gen_map_open(o->g));
	put_args(o, ev);
	gen_check(o, yajl_gen_map_close(o->g));
	gen_check(o, yajl_gen_map_close(o->g));
}

/* Streams the whole trace; 0 or -errno. */
static int put_trace(struct out *o, const struct vtpu_profile *p)
{
	const struct ev_chunk *ch;

	gen_check(o, yajl_gen_map_open(o->g));
	put_str(o, "traceEvents");
	gen_check(o, yajl_gen_array_open(o->g));
	put_metadata(o, p);
	for (ch = p->head; ch && !o->err; ch = ch->next)
		for (unsigned int i = 0; i < ch->n; i++)
			put_event(o, &ch->ev[i]);
	gen_check(o, yajl_gen_array_close(o->g));
	put_key_str(o, "displayTimeUnit", "ns");
	put_str(o, "otherData");
	gen_check(o, yajl_gen_map_open(o->g));
	put_key_str(o, "producer", "libvtpu");
	put_key_u64(o, "events", p->count);
	put_key_u64(o, "dropped_events", p->dropped);
	gen_check(o, yajl_gen_map_close(o->g));
	gen_check(o, yajl_gen_map_close(o->g));
	return o->err;
}

/* Writes the session to @f; 0 or -errno. */
static int write_file(const struct vtpu_profile *p, FILE *f, bool sync)
{
	struct out o = { .f = f };
	int err;

	o.g = yajl_gen_alloc(NULL);
	if (!o.g)
		return -ENOMEM;
	/*
	 * Streaming through the callback: yajl keeps no copy of the text, so
	 * memory does not grow with the trace.
	 */
	if (!yajl_gen_config(o.g, yajl_gen_print_callback, out_print, &o) ||
	    !yajl_gen_config(o.g, yajl_gen_validate_utf8, 1)) {
		yajl_gen_free(o.g);
		return -EINVAL;
	}
	err = put_trace(&o, p);
	yajl_gen_free(o.g);
	if (!err && fflush(f))
		err = -errno;
	/* rename() without it can leave an empty file after a crash */
	if (!err && sync && fsync(fileno(f)))
		err = -errno;
	return err;
}

/*
 * Temp file in the same directory, then rename: a reader (or a crash)
 * never sees half a trace, and a failed stop leaves nothing behind.
 */
static int write_atomic(const struct vtpu_profile *p, const char *path)
{
	size_t len = strlen(path);
	struct stat st;
	char *tmp;
	FILE *f;
	int fd, err;

	/*
	 * Not a regular file (/dev/stdout, a FIFO, /dev/null): written to
	 * as it is. A rename would replace it, the device node included.
	 */
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		f = fopen(path, "we");
		if (!f)
			return -errno;
		err = write_file(p, f, false);
		if (fclose(f) && !err)
			err = -errno;
		return err;
	}

	tmp = malloc(len + sizeof(".XXXXXX"));
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".XXXXXX", sizeof(".XXXXXX"));
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
		goto out_free;
	}
	/* mkstemp makes it 0600; a trace is meant to be shared. */
	if (fchmod(fd, 0644)) {
		err = -errno;
		close(fd);
		goto out_unlink;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		goto out_unlink;
	}
	err = write_file(p, f, true);
	if (fclose(f) && !err)
		err = -errno;
	if (err)
		goto out_unlink;
	if (rename(tmp, path)) {
		err = -errno;
		goto out_unlink;
	}
	free(tmp);
	return 0;

out_unlink:
	unlink(tmp);
out_free:
	free(tmp);
	return err;
}

/*
 * A failed write keeps the events: the caller may stop again with
 * another path.
 */
int vtpu_profile_stop(struct vtpu_profile *p, const char *path)
{
	int err;

	if (!RT_LIVE(p, RT_KIND_PROFILE))
		return rt_bad_arg(NULL, __func__, "not a profile session");
	detach(p);
	if (!path)
		return rt_set_error(p->client, EINVAL, "profile: no path");
	err = write_atomic(p, path);
	if (err)
		return rt_set_error(p->client, -err, "profile: writing %s: %s",
				    path, strerrordesc_np(-err));
	return 0;
}

void vtpu_profile_destroy(struct vtpu_profile *p)
{
	struct ev_chunk *ch, *nch;
	struct name_block *b, *nb;

	if (!p)
		return;
	if (!RT_LIVE(p, RT_KIND_PROFILE)) {
		rt_bad_arg(NULL, __func__,
			   "not a live profile session (destroyed twice?)");
		return;
	}
	detach(p);
	rt_obj_del(p->client, &p->obj);
	for (ch = p->head; ch; ch = nch) {
		nch = ch->next;
		free(ch);
	}
	for (b = p->names; b; b = nb) {
		nb = b->next;
		free(b);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}
