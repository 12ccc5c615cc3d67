// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * cache.c - the compile cache (cache.h): the key of a compilation, a
 * memory LRU and the on-disk store.
 *
 * The key is XXH3-128 over a canonical serialisation: every field as a
 * little-endian 64-bit word, attributes as ir_attr_words() describes
 * them (field by field, only the entries the rank uses), so padding
 * bytes and stale array tails never reach it; node names do not either
 * (they change no code).
 *
 * A disk entry is <dir>/<key as 32 hex digits>.vtpu:
 *
 *   offset  size  field
 *   0       8     magic "VTPUCCH\0"
 *   8       4     format version (CACHE_FORMAT), little-endian
 *   12      4     header size (64)
 *   16      16    key[0], key[1]
 *   32      8     payload size in bytes
 *   40      8     XXH3-64 of the payload
 *   48      8     weights size in bytes
 *   56      8     XXH3-64 of the weights
 *   64      ...   payload: the program, every field a little-endian u64
 *                 (doubles as their IEEE bits): binary size, binary
 *                 bytes, nbindings, nparams, noutputs, per binding role,
 *                 index, size, type, rank, 6 dims, then the cost fields
 *                 in struct vtpu_cost order
 *   ...     ...   the weights, as struct vtpu_program.weights holds them
 *
 * The weights come last and apart so that a hit reads them straight
 * into the program's weights, with no copy, and a memory hit shares
 * them: only the small payload is ever duplicated.
 *
 * Anything that does not check out is a miss and the file goes: a cache
 * may forget, it must never answer wrong. Writes go to a temporary file
 * in the same directory, fsync, rename, so readers (other processes
 * too) see a whole entry or none.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The state's layout, to keep it on the stack: graph_hash() cannot fail. */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "cache.h"
#include "ir.h"

#define VTPU_COMPILER_VERSION	"2"	/* 2: weights apart from the code */
/* The hash of the compiler's sources (Makefile); builds without it share one. */
#if __has_include("vtpu_build_id.h")
#include "vtpu_build_id.h"
#else
#define VTPU_COMPILER_BUILD	"unknown"
#endif
#define CACHE_FORMAT		2
#define CACHE_HDR_SIZE		64
#define CACHE_MAX_PAYLOAD	(1ull << 32)	/* sanity bound when reading */
static const char cache_magic[8] = "VTPUCCH";

/* ---- the key ------------------------------------------------------------ */

static void h_u64(XXH3_state_t *st, uint64_t v)
{
	unsigned char b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = v >> (8 * i);
	XXH3_128bits_update(st, b, sizeof(b));
}

static void h_f64(XXH3_state_t *st, double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	h_u64(st, u);
}

static void h_ints(XXH3_state_t *st, const int *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		h_u64(st, (uint64_t)(int64_t)v[i]);
}

static void h_i64s(XXH3_state_t *st, const int64_t *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		h_u64(st, (uint64_t)v[i]);
}

static int clamp_rank(int r)
{
	return r < 0 ? 0 : r > VTPU_MAX_RANK ? VTPU_MAX_RANK : r;
}

/* The attributes of node @n: ir_attr_words(), as CSE sees them. */
static void h_attrs(XXH3_state_t *st, const struct ir_graph *g,
		    const struct ir_node *n)
{
	int64_t w[IR_MAX_ATTR_WORDS];

	if (n->op == OP_CONST)
		XXH3_128bits_update(st, n->a.cst.data, ir_const_bytes(n));
	else
		h_i64s(st, w, ir_attr_words(g, n, w));
}

static void h_node(XXH3_state_t *st, const struct ir_graph *g,
		   const struct ir_node *n)
{
	int r = clamp_rank(n->shape.rank);

	h_u64(st, n->op);
	h_u64(st, n->shape.type);
	h_u64(st, n->shape.rank);
	h_i64s(st, n->shape.dims, r);
	h_u64(st, n->nin);
	h_ints(st, n->in, n->nin);
	h_attrs(st, g, n);
}

/* The compiler, device and options: what a program depends on but input. */
static void h_context(XXH3_state_t *st, const char *what,
		      const struct vtpu_device_params *dev,
		      const struct vtpu_compile_options *opts)
{
	static const char id[] = "vtpu-compiler " VTPU_COMPILER_VERSION " "
				 VTPU_COMPILER_BUILD;

	XXH3_INITSTATE(st);
	XXH3_128bits_reset(st);
	XXH3_128bits_update(st, id, sizeof(id));
	XXH3_128bits_update(st, what, strlen(what) + 1);
	h_u64(st, dev->vmem_size);
	h_u64(st, dev->num_cores);
	h_u64(st, dev->hbm_size);
	h_f64(st, dev->flops_per_ns);
	h_f64(st, dev->bytes_per_ns);
	/* dump and dump_file change no code */
	h_u64(st, opts ? !!opts->no_fusion : 0);
}

static void h_digest(XXH3_state_t *st, uint64_t out[2])
{
	XXH128_hash_t h = XXH3_128bits_digest(st);

	out[0] = h.low64;
	out[1] = h.high64;
}

void graph_hash(const struct ir_graph *g, const struct vtpu_device_params *dev,
		const struct vtpu_compile_options *opts, uint64_t out[2])
{
	XXH3_state_t state, *st = &state;
	int i;

	h_context(st, "graph", dev, opts);
	h_u64(st, g->n);
	h_u64(st, g->nparams);
	for (i = 0; i < g->n; i++)
		h_node(st, g, &g->nodes[i]);
	h_u64(st, g->nout);
	h_ints(st, g->outputs, g->nout);
	h_digest(st, out);
}

/*
 * Elements of @b's values: prod(dims) when the rank and dims are ones
 * the parser accepts, else -1 (then nothing is hashed: the parse says
 * what is wrong).
 */
static int64_t binding_elems(const struct vtpu_onnx_binding *b)
{
	int64_t n = 1;
	int i;

	if (b->rank < 0 || b->rank > VTPU_MAX_RANK)
		return b->rank < 0 && !b->values && !b->fvalues ? 0 : -1;
	for (i = 0; i < b->rank; i++) {
		if (b->dims[i] < 0 || (b->dims[i] && n > (1ll << 40) / b->dims[i]))
			return -1;
		n *= b->dims[i];
	}
	return n;
}

int onnx_source_hash(const void *data, size_t len,
		     const struct vtpu_onnx_binding *b, int n, bool values,
		     const struct vtpu_device_params *dev,
		     const struct vtpu_compile_options *opts, uint64_t out[2])
{
	XXH3_state_t state, *st = &state;
	int64_t elems, k;
	int i;

	if (n < 0 || (n && !b))
		return -EINVAL;
	h_context(st, values ? "onnx with values" : "onnx", dev, opts);
	h_u64(st, len);
	XXH3_128bits_update(st, data, len);
	h_u64(st, (uint64_t)n);
	for (i = 0; i < n; i++) {
		elems = binding_elems(&b[i]);
		if (elems < 0 || !b[i].name)
			return -EINVAL;
		h_u64(st, strlen(b[i].name));
		XXH3_128bits_update(st, b[i].name, strlen(b[i].name));
		h_u64(st, (uint64_t)(int64_t)b[i].rank);
		h_i64s(st, b[i].dims, b[i].rank > 0 ? b[i].rank : 0);
		if (!values)
			continue;
		h_u64(st, !!b[i].values);
		for (k = 0; b[i].values && k < elems; k++)
			h_u64(st, (uint64_t)b[i].values[k]);
		h_u64(st, !!b[i].fvalues);
		for (k = 0; b[i].fvalues && k < elems; k++)
			h_f64(st, b[i].fvalues[k]);
	}
	h_digest(st, out);
	return 0;
}

/* ---- programs: copy and (de)serialise ----------------------------------- */

static void prog_free(struct vtpu_program *p)
{
	if (!p)
		return;
	weights_put(p->weights);
	free(p->binary);
	free(p->bindings);
	free(p);
}

static struct vtpu_program *prog_dup(const struct vtpu_program *src)
{
	struct vtpu_program *p = malloc(sizeof(*p));
	size_t nb = src->nbindings > 0 ? src->nbindings : 0;

	if (!p)
		return NULL;
	*p = *src;
	p->weights = weights_get(src->weights);
	p->binary = malloc(src->size ? src->size : 1);
	p->bindings = malloc(nb ? nb * sizeof(*p->bindings) : 1);
	if (!p->binary || !p->bindings) {
		prog_free(p);
		return NULL;
	}
	if (src->size)
		memcpy(p->binary, src->binary, src->size);
	if (nb)
		memcpy(p->bindings, src->bindings, nb * sizeof(*p->bindings));
	return p;
}

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	bool oom;
};

static void put_bytes(struct wbuf *b, const void *data, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		unsigned char *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void put_u64(struct wbuf *b, uint64_t v)
{
	unsigned char le[8];
	int i;

	for (i = 0; i < 8; i++)
		le[i] = v >> (8 * i);
	put_bytes(b, le, sizeof(le));
}

static void put_f64(struct wbuf *b, double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	put_u64(b, u);
}

static void put_binding(struct wbuf *b, const struct vtpu_binding_info *bi)
{
	int i;

	put_u64(b, bi->role);
	put_u64(b, (uint64_t)(int64_t)bi->index);
	put_u64(b, bi->size);
	put_u64(b, bi->shape.type);
	put_u64(b, (uint64_t)(int64_t)bi->shape.rank);
	for (i = 0; i < VTPU_MAX_RANK; i++)
		put_u64(b, (uint64_t)bi->shape.dims[i]);
}

static void put_cost(struct wbuf *b, const struct vtpu_cost *c)
{
	put_f64(b, c->flops);
	put_f64(b, c->bytes_moved);
	put_f64(b, c->est_time_ns);
	put_u64(b, c->code_bytes);
	put_u64(b, c->const_bytes);
	put_u64(b, c->weights_bytes);
	put_u64(b, c->param_bytes);
	put_u64(b, c->output_bytes);
	put_u64(b, c->scratch_bytes);
	put_u64(b, c->scratch_lower_bound);
	put_u64(b, c->vmem_bytes);
	put_u64(b, c->insn_count);
	put_u64(b, c->kernel_count);
}

static void put_program(struct wbuf *b, const struct vtpu_program *p)
{
	int i;

	put_u64(b, p->size);
	put_bytes(b, p->binary, p->size);
	put_u64(b, (uint64_t)(int64_t)p->nbindings);
	put_u64(b, (uint64_t)(int64_t)p->nparams);
	put_u64(b, (uint64_t)(int64_t)p->noutputs);
	for (i = 0; i < p->nbindings; i++)
		put_binding(b, &p->bindings[i]);
	put_cost(b, &p->cost);
}

/* A bounds-checked reader: past the end, every read gives 0 and sets bad. */
struct rbuf {
	const unsigned char *p;
	size_t len, pos;
	bool bad;
};

static uint64_t get_u64(struct rbuf *r)
{
	uint64_t v = 0;
	int i;

	if (r->bad || r->len - r->pos < 8) {
		r->bad = true;
		return 0;
	}
	for (i = 0; i < 8; i++)
		v |= (uint64_t)r->p[r->pos + i] << (8 * i);
	r->pos += 8;
	return v;
}

static double get_f64(struct rbuf *r)
{
	uint64_t u = get_u64(r);
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* A small non-negative count, or bad. */
static int get_count(struct rbuf *r, uint64_t max)
{
	uint64_t v = get_u64(r);

	if (v > max)
		r->bad = true;
	return r->bad ? 0 : (int)v;
}

static void get_binding(struct rbuf *r, struct vtpu_binding_info *bi)
{
	int i;

	bi->role = get_count(r, VTPU_BIND_WEIGHTS);
	bi->index = get_count(r, INT_MAX);
	bi->size = get_u64(r);
	bi->shape.type = get_count(r, VTPU_PRED);
	bi->shape.rank = get_count(r, VTPU_MAX_RANK);
	for (i = 0; i < VTPU_MAX_RANK; i++)
		bi->shape.dims[i] = (int64_t)get_u64(r);
}

static void get_cost(struct rbuf *r, struct vtpu_cost *c)
{
	c->flops = get_f64(r);
	c->bytes_moved = get_f64(r);
	c->est_time_ns = get_f64(r);
	c->code_bytes = get_u64(r);
	c->const_bytes = get_u64(r);
	c->weights_bytes = get_u64(r);
	c->param_bytes = get_u64(r);
	c->output_bytes = get_u64(r);
	c->scratch_bytes = get_u64(r);
	c->scratch_lower_bound = get_u64(r);
	c->vmem_bytes = get_u64(r);
	c->insn_count = get_u64(r);
	c->kernel_count = get_u64(r);
}

/* Parses a whole payload; NULL when it is malformed (or out of memory). */
static struct vtpu_program *get_program(const void *data, size_t len)
{
	struct rbuf r = { .p = data, .len = len };
	struct vtpu_program *p = calloc(1, sizeof(*p));
	int i;

	if (!p)
		return NULL;
	p->size = get_u64(&r);
	if (r.bad || p->size > len - r.pos)
		goto bad;
	p->binary = malloc(p->size ? p->size : 1);
	if (!p->binary)
		goto bad;
	memcpy(p->binary, r.p + r.pos, p->size);
	r.pos += p->size;
	/* each binding takes 11 words: bounds the allocation */
	p->nbindings = get_count(&r, (len - r.pos) / 88);
	p->nparams = get_count(&r, INT_MAX);
	p->noutputs = get_count(&r, INT_MAX);
	p->bindings = calloc(p->nbindings ? p->nbindings : 1,
			     sizeof(*p->bindings));
	if (r.bad || !p->bindings)
		goto bad;
	for (i = 0; i < p->nbindings; i++)
		get_binding(&r, &p->bindings[i]);
	get_cost(&r, &p->cost);
	if (r.bad || r.pos != len)
		goto bad;
	return p;
bad:
	prog_free(p);
	return NULL;
}

/* ---- the memory LRU ------------------------------------------------------ */

struct cache_entry {
	uint64_t key[2];
	struct vtpu_program *p;		/* NULL: free slot */
	uint64_t used;			/* tick of the last use */
};

/* A source's graph key (vtpu_cache_get_source()). */
struct cache_source {
	uint64_t src[2], key[2];
	uint64_t used;			/* tick of the last use; 0: free */
};

struct vtpu_cache {
	pthread_mutex_t lock;		/* Protects everything below. */
	struct cache_entry *mem;
	struct cache_source *srcs;	/* as many as @mem */
	size_t nmem;
	uint64_t tick;
	char *dir;			/* NULL: no disk */
	struct vtpu_cache_stats st;
};

static struct cache_entry *mem_find(struct vtpu_cache *c, const uint64_t key[2])
{
	size_t i;

	for (i = 0; i < c->nmem; i++)
		if (c->mem[i].p && c->mem[i].key[0] == key[0] &&
		    c->mem[i].key[1] == key[1])
			return &c->mem[i];
	return NULL;
}

/* The slot for a new entry: a free one, else the least recently used. */
static struct cache_entry *mem_victim(struct vtpu_cache *c)
{
	struct cache_entry *v = &c->mem[0];
	size_t i;

	for (i = 0; i < c->nmem; i++) {
		if (!c->mem[i].p)
			return &c->mem[i];
		if (c->mem[i].used < v->used)
			v = &c->mem[i];
	}
	c->st.evictions++;
	prog_free(v->p);
	v->p = NULL;
	return v;
}

/* Takes ownership of @p. */
static void mem_insert(struct vtpu_cache *c, const uint64_t key[2],
		       struct vtpu_program *p)
{
	struct cache_entry *e;

	if (!c->nmem) {
		prog_free(p);
		return;
	}
	e = mem_find(c, key);
	if (e)
		prog_free(e->p);
	else
		e = mem_victim(c);
	e->key[0] = key[0];
	e->key[1] = key[1];
	e->p = p;
	e->used = ++c->tick;
}

/* ---- the disk store ------------------------------------------------------ */

static char *entry_path(const struct vtpu_cache *c, const uint64_t key[2],
			const char *prefix, const char *suffix)
{
	size_t len = strlen(c->dir) + strlen(prefix) + 32 + strlen(suffix) + 2;
	char *path = malloc(len);

	if (path)
		snprintf(path, len, "%s/%s%016llx%016llx%s", c->dir, prefix,
			 (unsigned long long)key[1], (unsigned long long)key[0],
			 suffix);
	return path;
}

/* Creates @dir and its missing parents. */
static int mkdir_p(const char *dir)
{
	char *p, *copy = strdup(dir);
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (p = copy + 1; !ret; p++) {
		char c = *p;

		if (c && c != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0700) && errno != EEXIST)
			ret = -errno;
		*p = c;
		if (!c)
			break;
	}
	free(copy);
	return ret;
}

static void hdr_put32(unsigned char *h, int off, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		h[off + i] = v >> (8 * i);
}

static void hdr_put64(unsigned char *h, int off, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		h[off + i] = v >> (8 * i);
}

static uint64_t hdr_get(const unsigned char *h, int off, int size)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < size; i++)
		v |= (uint64_t)h[off + i] << (8 * i);
	return v;
}

static void make_header(unsigned char *h, const uint64_t key[2],
			const struct wbuf *payload,
			const struct vtpu_program *p)
{
	memcpy(h, cache_magic, 8);
	hdr_put32(h, 8, CACHE_FORMAT);
	hdr_put32(h, 12, CACHE_HDR_SIZE);
	hdr_put64(h, 16, key[0]);
	hdr_put64(h, 24, key[1]);
	hdr_put64(h, 32, payload->len);
	hdr_put64(h, 40, XXH3_64bits(payload->p, payload->len));
	hdr_put64(h, 48, p->weights_size);
	hdr_put64(h, 56, XXH3_64bits(p->weights, p->weights_size));
}

static int write_all(int fd, const void *data, size_t n)
{
	const unsigned char *p = data;
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= w;
	}
	return 0;
}

/* Writes @tmp (a mkstemp template) whole and renames it to @path. */
static int write_atomic(char *tmp, const char *path, const void *hdr,
			const struct wbuf *payload,
			const struct vtpu_program *p)
{
	int fd = mkstemp(tmp), ret;

	if (fd < 0)
		return -errno;
	ret = write_all(fd, hdr, CACHE_HDR_SIZE);
	if (!ret)
		ret = write_all(fd, payload->p, payload->len);
	if (!ret && p->weights_size)
		ret = write_all(fd, p->weights, p->weights_size);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

static int disk_put(struct vtpu_cache *c, const uint64_t key[2],
		    const struct vtpu_program *p)
{
	unsigned char hdr[CACHE_HDR_SIZE];
	struct wbuf payload = { 0 };
	char *path = entry_path(c, key, "", ".vtpu");
	char *tmp = entry_path(c, key, ".", ".XXXXXX");
	int ret = -ENOMEM;

	put_program(&payload, p);
	if (!path || !tmp || payload.oom)
		goto out;
	ret = mkdir_p(c->dir);
	if (ret)
		goto out;
	make_header(hdr, key, &payload, p);
	ret = write_atomic(tmp, path, hdr, &payload, p);
out:
	free(payload.p);
	free(tmp);
	free(path);
	return ret;
}

static int read_all(int fd, void *data, size_t n)
{
	unsigned char *p = data;
	ssize_t r;

	while (n) {
		r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		p += r;
		n -= r;
	}
	return 0;
}

/*
 * Checks a header against @key and the file size; the payload and
 * weights sizes.
 */
static int check_header(const unsigned char *h, const uint64_t key[2],
			off_t file_size, size_t *payload_size,
			uint64_t *weights_size)
{
	uint64_t size = hdr_get(h, 32, 8), wsize = hdr_get(h, 48, 8);

	if (memcmp(h, cache_magic, 8) ||
	    hdr_get(h, 8, 4) != CACHE_FORMAT ||
	    hdr_get(h, 12, 4) != CACHE_HDR_SIZE ||
	    hdr_get(h, 16, 8) != key[0] || hdr_get(h, 24, 8) != key[1] ||
	    size > CACHE_MAX_PAYLOAD || wsize > (uint64_t)file_size ||
	    (uint64_t)file_size != CACHE_HDR_SIZE + size + wsize)
		return -EBADMSG;
	*payload_size = size;
	*weights_size = wsize;
	return 0;
}

/* Reads the weights into a blob of their own; NULL when they are bad. */
static void *read_weights(int fd, uint64_t size, uint64_t hash)
{
	void *w = weights_alloc(size);

	if (w && !read_all(fd, w, size) && XXH3_64bits(w, size) == hash)
		return w;
	weights_put(w);
	return NULL;
}

/* Reads and checks the entry in open file @fd; NULL when it is bad. */
static struct vtpu_program *read_entry(int fd, const uint64_t key[2])
{
	unsigned char hdr[CACHE_HDR_SIZE];
	struct vtpu_program *p = NULL;
	unsigned char *payload;
	uint64_t wsize;
	struct stat sb;
	size_t size;

	if (fstat(fd, &sb) || sb.st_size < CACHE_HDR_SIZE ||
	    read_all(fd, hdr, sizeof(hdr)) ||
	    check_header(hdr, key, sb.st_size, &size, &wsize))
		return NULL;
	payload = malloc(size ? size : 1);
	if (!payload)
		return NULL;
	if (!read_all(fd, payload, size) &&
	    XXH3_64bits(payload, size) == hdr_get(hdr, 40, 8))
		p = get_program(payload, size);
	free(payload);
	if (p && wsize) {
		p->weights = read_weights(fd, wsize, hdr_get(hdr, 56, 8));
		p->weights_size = wsize;
		if (!p->weights) {
			prog_free(p);
			return NULL;
		}
	}
	return p;
}

/* The entry for @key from disk, or NULL; a bad entry is removed. */
static struct vtpu_program *disk_get(struct vtpu_cache *c, const uint64_t key[2])
{
	char *path = entry_path(c, key, "", ".vtpu");
	struct vtpu_program *p = NULL;
	int fd;

	if (!path)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		p = read_entry(fd, key);
		close(fd);
		if (!p) {
			c->st.corrupt++;
			unlink(path);
		}
	}
	free(path);
	return p;
}

/* ---- the API ------------------------------------------------------------- */

static char *default_dir(void)
{
	const char *base = getenv("XDG_CACHE_HOME"), *sub = "/vtpu";
	size_t len;
	char *dir;

	if (!base || !*base) {
		base = getenv("HOME");
		sub = "/.cache/vtpu";
	}
	if (!base || !*base)
		return NULL;
	len = strlen(base) + strlen(sub) + 1;
	dir = malloc(len);
	if (dir)
		snprintf(dir, len, "%s%s", base, sub);
	return dir;
}

struct vtpu_cache *vtpu_cache_new(size_t mem_entries, const char *dir)
{
	struct vtpu_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->nmem = mem_entries;
	c->mem = calloc(mem_entries ? mem_entries : 1, sizeof(*c->mem));
	c->srcs = calloc(mem_entries ? mem_entries : 1, sizeof(*c->srcs));
	if (!dir)
		c->dir = default_dir();
	else if (*dir)
		c->dir = strdup(dir);
	if (!c->mem || !c->srcs || (dir && *dir && !c->dir) ||
	    pthread_mutex_init(&c->lock, NULL)) {
		free(c->dir);
		free(c->mem);
		free(c->srcs);
		free(c);
		return NULL;
	}
	return c;
}

void vtpu_cache_free(struct vtpu_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nmem; i++)
		prog_free(c->mem[i].p);
	pthread_mutex_destroy(&c->lock);
	free(c->dir);
	free(c->mem);
	free(c->srcs);
	free(c);
}

/* Looks @key up with the lock held; returns a copy or NULL. */
static struct vtpu_program *cache_lookup(struct vtpu_cache *c,
					 const uint64_t key[2])
{
	struct cache_entry *e = mem_find(c, key);
	struct vtpu_program *p, *copy;

	if (e) {
		e->used = ++c->tick;
		return prog_dup(e->p);
	}
	p = c->dir ? disk_get(c, key) : NULL;
	if (!p)
		return NULL;
	c->st.disk_hits++;
	copy = prog_dup(p);
	if (copy)	/* a failed copy only costs the next get a disk read */
		mem_insert(c, key, copy);
	return p;
}

int vtpu_cache_get(struct vtpu_cache *c, const uint64_t key[2],
		   struct vtpu_program **out)
{
	struct vtpu_program *p;

	pthread_mutex_lock(&c->lock);
	p = cache_lookup(c, key);
	if (p)
		c->st.hits++;
	else
		c->st.misses++;
	pthread_mutex_unlock(&c->lock);
	*out = p;
	return p ? 0 : -ENOENT;
}

int vtpu_cache_put(struct vtpu_cache *c, const uint64_t key[2],
		   const struct vtpu_program *p)
{
	struct vtpu_program *copy = c->nmem ? prog_dup(p) : NULL;
	int ret = 0;

	if (c->nmem && !copy)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	if (copy)
		mem_insert(c, key, copy);
	if (c->dir)
		ret = disk_put(c, key, p);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* ---- sources ------------------------------------------------------------ */

/*
 * A disk source entry is <dir>/<src as 32 hex digits>.src, 48 bytes:
 * magic "VTPUSRC\0", src[0], src[1], key[0], key[1], then XXH3-64 of the
 * 40 bytes before it; all little-endian. Like a program entry, one that
 * does not check out is a miss and goes.
 */
#define SOURCE_SIZE	48
static const char source_magic[8] = "VTPUSRC";

static struct cache_source *src_find(struct vtpu_cache *c,
				     const uint64_t src[2])
{
	size_t i;

	for (i = 0; i < c->nmem; i++)
		if (c->srcs[i].used && c->srcs[i].src[0] == src[0] &&
		    c->srcs[i].src[1] == src[1])
			return &c->srcs[i];
	return NULL;
}

static void src_insert(struct vtpu_cache *c, const uint64_t src[2],
		       const uint64_t key[2])
{
	struct cache_source *e = src_find(c, src), *v = NULL;
	size_t i;

	/* else a free slot (used 0), or the least recently used */
	for (i = 0; !e && i < c->nmem; i++)
		if (!v || c->srcs[i].used < v->used)
			v = &c->srcs[i];
	e = e ? e : v;
	if (!e)
		return;
	e->src[0] = src[0];
	e->src[1] = src[1];
	e->key[0] = key[0];
	e->key[1] = key[1];
	e->used = ++c->tick;
}

static int disk_get_source(struct vtpu_cache *c, const uint64_t src[2],
			   uint64_t key[2])
{
	char *path = entry_path(c, src, "", ".src");
	unsigned char b[SOURCE_SIZE + 1];
	ssize_t n = -1;
	int fd;

	if (!path)
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(path);
		return -ENOENT;
	}
	n = read(fd, b, sizeof(b));
	close(fd);
	if (n != SOURCE_SIZE || memcmp(b, source_magic, 8) ||
	    hdr_get(b, 8, 8) != src[0] || hdr_get(b, 16, 8) != src[1] ||
	    hdr_get(b, 40, 8) != XXH3_64bits(b, 40)) {
		c->st.corrupt++;
		unlink(path);
		free(path);
		return -ENOENT;
	}
	key[0] = hdr_get(b, 24, 8);
	key[1] = hdr_get(b, 32, 8);
	free(path);
	return 0;
}

static int disk_put_source(struct vtpu_cache *c, const uint64_t src[2],
			   const uint64_t key[2])
{
	char *path = entry_path(c, src, "", ".src");
	char *tmp = entry_path(c, src, ".", ".XXXXXX");
	unsigned char b[SOURCE_SIZE];
	int fd, ret = -ENOMEM;

	if (!path || !tmp)
		goto out;
	ret = mkdir_p(c->dir);
	if (ret)
		goto out;
	memcpy(b, source_magic, 8);
	hdr_put64(b, 8, src[0]);
	hdr_put64(b, 16, src[1]);
	hdr_put64(b, 24, key[0]);
	hdr_put64(b, 32, key[1]);
	hdr_put64(b, 40, XXH3_64bits(b, 40));
	fd = mkstemp(tmp);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = write_all(fd, b, sizeof(b));
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
out:
	free(tmp);
	free(path);
	return ret;
}

int vtpu_cache_get_source(struct vtpu_cache *c, const uint64_t src[2],
			  uint64_t key[2])
{
	struct cache_source *e;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	e = src_find(c, src);
	if (e) {
		e->used = ++c->tick;
		key[0] = e->key[0];
		key[1] = e->key[1];
	} else {
		ret = c->dir ? disk_get_source(c, src, key) : -ENOENT;
		if (!ret)
			src_insert(c, src, key);
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int vtpu_cache_put_source(struct vtpu_cache *c, const uint64_t src[2],
			  const uint64_t key[2])
{
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	src_insert(c, src, key);
	if (c->dir)
		ret = disk_put_source(c, src, key);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void vtpu_cache_stats(const struct vtpu_cache *c, struct vtpu_cache_stats *st)
{
	pthread_mutex_lock((pthread_mutex_t *)&c->lock);
	*st = c->st;
	pthread_mutex_unlock((pthread_mutex_t *)&c->lock);
}
