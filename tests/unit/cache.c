// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the compile cache. graph_hash() changes with anything
 * that changes the code (a constant's value, the device) and nothing
 * else; the cache returns copies of what was put (sharing the weights,
 * which are never copied), evicts the least recently used entry,
 * survives a round trip through its directory, weights included, and
 * turns a damaged file into a counted miss that removes the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "ir.h"
#include "vtpu.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

static const struct vtpu_device_params dev = {
	.vmem_size = 1 << 20, .num_cores = 2, .hbm_size = 32 << 20,
};

/* x * c + 1 on f32[8], c all @v. */
static struct vtpu_graph *graph(float v)
{
	const struct vtpu_shape s = { VTPU_F32, 1, { 8 } };
	struct vtpu_graph *g = vtpu_graph_new();
	float c[8];
	int i, x, y;

	for (i = 0; i < 8; i++)
		c[i] = v;
	x = vtpu_g_parameter(g, 0, &s, "x");
	y = vtpu_g_binary(g, VTPU_MUL, x, vtpu_g_constant(g, &s, c));
	c[0] = 1;
	y = vtpu_g_binary(g, VTPU_ADD, y, vtpu_g_constant(g, &s, c));
	vtpu_g_outputs(g, 1, &y);
	return g;
}

static void key_of(float v, const struct vtpu_device_params *d, int no_fusion,
		   uint64_t key[2])
{
	struct vtpu_compile_options o = { .no_fusion = no_fusion };
	struct vtpu_graph *g = graph(v);

	graph_hash(&g->ir, d, &o, key);
	vtpu_graph_free(g);
}

static bool key_eq(const uint64_t a[2], const uint64_t b[2])
{
	return a[0] == b[0] && a[1] == b[1];
}

/* A fake program whose every field derives from @seed. */
static struct vtpu_program *program(int seed)
{
	struct vtpu_program *p = calloc(1, sizeof(*p));
	unsigned char *bin;
	int i;

	p->size = 100 + seed;
	bin = p->binary = malloc(p->size);
	for (i = 0; i < (int)p->size; i++)
		bin[i] = i * 31 + seed;
	p->nbindings = 2;
	p->bindings = calloc(2, sizeof(*p->bindings));
	p->bindings[0] = (struct vtpu_binding_info){ VTPU_BIND_PARAM, 0, 32,
		{ VTPU_F32, 1, { 8 } } };
	p->bindings[1] = (struct vtpu_binding_info){ VTPU_BIND_OUTPUT, 0, 32 + seed,
		{ VTPU_BF16, 2, { 4, 2 + seed } } };
	p->nparams = 1;
	p->noutputs = 1;
	p->cost.flops = 16.5 + seed;
	p->cost.est_time_ns = 1e3;
	p->cost.scratch_bytes = 4096;
	p->cost.kernel_count = seed;
	if (seed >= 0) {
		unsigned char *w;

		p->weights_size = 1000 + seed;
		w = weights_alloc(p->weights_size);
		for (i = 0; i < (int)p->weights_size; i++)
			w[i] = i * 7 + seed;
		p->weights = w;
		p->cost.weights_bytes = p->weights_size;
	}
	return p;
}

static void program_free(struct vtpu_program *p)
{
	vtpu_program_free(p);
}

static bool program_eq(const struct vtpu_program *a, const struct vtpu_program *b)
{
	return a->weights_size == b->weights_size &&
	       (!a->weights_size ||
		!memcmp(a->weights, b->weights, a->weights_size)) &&
	       a->size == b->size && !memcmp(a->binary, b->binary, a->size) &&
	       a->nbindings == b->nbindings &&
	       !memcmp(a->bindings, b->bindings,
		       a->nbindings * sizeof(*a->bindings)) &&
	       a->nparams == b->nparams && a->noutputs == b->noutputs &&
	       !memcmp(&a->cost, &b->cost, sizeof(a->cost));
}

static const uint64_t k1[2] = { 1, 11 }, k2[2] = { 2, 22 }, k3[2] = { 3, 33 };

/* 1: @key hits with a program equal to @want, 0: miss, -1: wrong. */
static int get_eq(struct vtpu_cache *c, const uint64_t key[2],
		  const struct vtpu_program *want)
{
	struct vtpu_program *p = NULL;
	int ret = vtpu_cache_get(c, key, &p);

	if (ret == -ENOENT && !p)
		return 0;
	ret = !ret && p && program_eq(p, want) ? 1 : -1;
	program_free(p);
	return ret;
}

TEST(same_graph_same_key)
{
	uint64_t a[2], b[2];

	key_of(2, &dev, 0, a);
	key_of(2, &dev, 0, b);
	ASSERT_TRUE(key_eq(a, b));
	ASSERT_TRUE(a[0] || a[1]);
}

TEST(changed_constant_changes_key)
{
	uint64_t a[2], b[2];

	key_of(2, &dev, 0, a);
	key_of(2.0000002f, &dev, 0, b);
	ASSERT_FALSE(key_eq(a, b));
}

TEST(device_and_options_change_key)
{
	struct vtpu_device_params d = dev;
	uint64_t a[2], b[2], c[2];

	key_of(2, &dev, 0, a);
	d.vmem_size /= 2;
	key_of(2, &d, 0, b);
	key_of(2, &dev, 1, c);
	ASSERT_FALSE(key_eq(a, b));
	ASSERT_FALSE(key_eq(a, c));
}

TEST(names_do_not_change_key)
{
	struct vtpu_graph *g = graph(2);
	uint64_t a[2], b[2];

	graph_hash(&g->ir, &dev, NULL, a);
	g->ir.nodes[0].name = "renamed";
	graph_hash(&g->ir, &dev, NULL, b);
	ASSERT_TRUE(key_eq(a, b));
	vtpu_graph_free(g);
}

TEST(memory_put_get_copies)
{
	struct vtpu_cache *c = vtpu_cache_new(4, "");
	struct vtpu_program *p = program(1);
	struct vtpu_cache_stats st;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, get_eq(c, k1, p));
	ASSERT_EQ(0, vtpu_cache_put(c, k1, p));
	((unsigned char *)p->binary)[0] ^= 1;	/* the cache kept a copy */
	ASSERT_EQ(-1, get_eq(c, k1, p));
	((unsigned char *)p->binary)[0] ^= 1;
	ASSERT_EQ(1, get_eq(c, k1, p));
	vtpu_cache_stats(c, &st);
	ASSERT_EQ(2, st.hits);
	ASSERT_EQ(1, st.misses);
	ASSERT_EQ(0, st.disk_hits);
	program_free(p);
	vtpu_cache_free(c);
}

TEST(memory_hit_shares_the_weights)
{
	struct vtpu_cache *c = vtpu_cache_new(4, "");
	struct vtpu_program *p = program(2), *got = NULL, *again = NULL;

	ASSERT_EQ(0, vtpu_cache_put(c, k1, p));
	ASSERT_EQ(0, vtpu_cache_get(c, k1, &got));
	ASSERT_EQ(0, vtpu_cache_get(c, k1, &again));
	EXPECT_TRUE(program_eq(p, got));
	/* one blob, referenced: a hit copies no weights */
	EXPECT_EQ(p->weights, got->weights);
	EXPECT_EQ(p->weights, again->weights);
	program_free(p);
	program_free(got);
	vtpu_cache_free(c);	/* the last reference is again's */
	EXPECT_EQ(7 * 3 + 2, ((const unsigned char *)again->weights)[3]);
	program_free(again);
}

TEST(lru_evicts_least_recently_used)
{
	struct vtpu_cache *c = vtpu_cache_new(2, "");
	struct vtpu_program *p1 = program(1), *p2 = program(2), *p3 = program(3);
	struct vtpu_cache_stats st;

	ASSERT_EQ(0, vtpu_cache_put(c, k1, p1));
	ASSERT_EQ(0, vtpu_cache_put(c, k2, p2));
	ASSERT_EQ(1, get_eq(c, k1, p1));	/* k2 is now the oldest */
	ASSERT_EQ(0, vtpu_cache_put(c, k3, p3));
	ASSERT_EQ(1, get_eq(c, k1, p1));
	ASSERT_EQ(0, get_eq(c, k2, p2));
	ASSERT_EQ(1, get_eq(c, k3, p3));
	vtpu_cache_stats(c, &st);
	ASSERT_EQ(1, st.evictions);
	ASSERT_EQ(1, st.misses);
	program_free(p1);
	program_free(p2);
	program_free(p3);
	vtpu_cache_free(c);
}

FIXTURE(disk) {
	char dir[64];
	struct vtpu_program *p;
	char path[128];
};

FIXTURE_SETUP(disk)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/vtpu-cache-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	self->p = program(7);
	/* cache.c names an entry key[1] then key[0], 16 hex digits each */
	snprintf(self->path, sizeof(self->path), "%s/%016llx%016llx.vtpu",
		 self->dir, (unsigned long long)k1[1], (unsigned long long)k1[0]);
}

FIXTURE_TEARDOWN(disk)
{
	program_free(self->p);
	unlink(self->path);
	rmdir(self->dir);
}

/* Puts self->p under k1 with a cache that forgets it (no memory). */
static int put_to_disk(const char *dir, const struct vtpu_program *p)
{
	struct vtpu_cache *c = vtpu_cache_new(0, dir);
	int ret = c ? vtpu_cache_put(c, k1, p) : -ENOMEM;

	vtpu_cache_free(c);
	return ret;
}

static int get_from_disk(const char *dir, const struct vtpu_program *want,
			 struct vtpu_cache_stats *st)
{
	struct vtpu_cache *c = vtpu_cache_new(4, dir);
	int ret = get_eq(c, k1, want);

	vtpu_cache_stats(c, st);
	vtpu_cache_free(c);
	return ret;
}

TEST_F(disk, round_trip)
{
	struct vtpu_cache_stats st;
	struct stat sb;

	ASSERT_EQ(0, put_to_disk(self->dir, self->p));
	ASSERT_EQ(0, stat(self->path, &sb));
	ASSERT_EQ(1, get_from_disk(self->dir, self->p, &st));
	ASSERT_EQ(1, st.disk_hits);
	ASSERT_EQ(0, st.corrupt);
}

TEST_F(disk, default_dir_follows_xdg_cache_home)
{
	char sub[96], path[160];
	struct vtpu_cache *c;
	struct stat sb;

	snprintf(sub, sizeof(sub), "%s/vtpu", self->dir);
	snprintf(path, sizeof(path), "%s/%016llx%016llx.vtpu", sub,
		 (unsigned long long)k1[1], (unsigned long long)k1[0]);
	setenv("XDG_CACHE_HOME", self->dir, 1);
	c = vtpu_cache_new(0, NULL);
	ASSERT_EQ(0, vtpu_cache_put(c, k1, self->p));
	vtpu_cache_free(c);
	ASSERT_EQ(0, stat(path, &sb));
	ASSERT_EQ(0, unlink(path));
	ASSERT_EQ(0, rmdir(sub));
}

static int flip_byte(const char *path, off_t off)
{
	unsigned char b;
	int fd = open(path, O_RDWR);
	int ret = -1;

	if (fd < 0)
		return -1;
	if (pread(fd, &b, 1, off) == 1) {
		b ^= 0x40;
		ret = pwrite(fd, &b, 1, off) == 1 ? 0 : -1;
	}
	close(fd);
	return ret;
}

TEST_F(disk, flipped_payload_byte_is_corrupt_miss)
{
	struct vtpu_cache_stats st;

	ASSERT_EQ(0, put_to_disk(self->dir, self->p));
	ASSERT_EQ(0, flip_byte(self->path, 64 + 20));
	ASSERT_EQ(0, get_from_disk(self->dir, self->p, &st));
	ASSERT_EQ(1, st.corrupt);
	ASSERT_EQ(1, st.misses);
	ASSERT_NE(0, access(self->path, F_OK));
}

TEST_F(disk, flipped_weights_byte_is_corrupt_miss)
{
	struct vtpu_cache_stats st;
	struct stat sb;

	ASSERT_EQ(0, put_to_disk(self->dir, self->p));
	ASSERT_EQ(0, stat(self->path, &sb));
	/* the weights are the file's last bytes */
	ASSERT_EQ(0, flip_byte(self->path, sb.st_size - 10));
	ASSERT_EQ(0, get_from_disk(self->dir, self->p, &st));
	ASSERT_EQ(1, st.corrupt);
	ASSERT_NE(0, access(self->path, F_OK));
}

TEST_F(disk, program_without_weights_round_trips)
{
	struct vtpu_program *p = program(-1);
	struct vtpu_cache_stats st;

	ASSERT_EQ(NULL, p->weights);
	ASSERT_EQ(0, put_to_disk(self->dir, p));
	ASSERT_EQ(1, get_from_disk(self->dir, p, &st));
	ASSERT_EQ(1, st.disk_hits);
	program_free(p);
}

TEST_F(disk, flipped_header_byte_is_corrupt_miss)
{
	struct vtpu_cache_stats st;

	ASSERT_EQ(0, put_to_disk(self->dir, self->p));
	ASSERT_EQ(0, flip_byte(self->path, 17));	/* the key */
	ASSERT_EQ(0, get_from_disk(self->dir, self->p, &st));
	ASSERT_EQ(1, st.corrupt);
	ASSERT_NE(0, access(self->path, F_OK));
}

TEST_F(disk, truncated_file_is_corrupt_miss)
{
	struct vtpu_cache_stats st;
	struct stat sb;

	ASSERT_EQ(0, put_to_disk(self->dir, self->p));
	ASSERT_EQ(0, stat(self->path, &sb));
	ASSERT_EQ(0, truncate(self->path, sb.st_size - 1));
	ASSERT_EQ(0, get_from_disk(self->dir, self->p, &st));
	ASSERT_EQ(1, st.corrupt);
	ASSERT_NE(0, access(self->path, F_OK));
	/* a header cut short too */
	ASSERT_EQ(0, put_to_disk(self->dir, self->p));
	ASSERT_EQ(0, truncate(self->path, 20));
	ASSERT_EQ(0, get_from_disk(self->dir, self->p, &st));
	ASSERT_EQ(1, st.corrupt);
	ASSERT_NE(0, access(self->path, F_OK));
}

TEST_F(disk, missing_file_is_plain_miss)
{
	struct vtpu_cache_stats st;

	ASSERT_EQ(0, get_from_disk(self->dir, self->p, &st));
	ASSERT_EQ(1, st.misses);
	ASSERT_EQ(0, st.corrupt);
}

/* Sources: k2 names k1 in memory, then from the directory alone. */
TEST_F(disk, source_names_its_key_in_memory_and_on_disk)
{
	struct vtpu_cache *c = vtpu_cache_new(4, self->dir);
	struct vtpu_cache_stats st;
	uint64_t key[2] = { 0, 0 };
	char path[160];

	ASSERT_NE(NULL, c);
	EXPECT_EQ(-ENOENT, vtpu_cache_get_source(c, k2, key));
	ASSERT_EQ(0, vtpu_cache_put_source(c, k2, k1));
	ASSERT_EQ(0, vtpu_cache_get_source(c, k2, key));
	EXPECT_TRUE(key_eq(key, k1));
	EXPECT_EQ(-ENOENT, vtpu_cache_get_source(c, k3, key));
	vtpu_cache_free(c);

	c = vtpu_cache_new(4, self->dir);
	ASSERT_NE(NULL, c);
	memset(key, 0, sizeof(key));
	ASSERT_EQ(0, vtpu_cache_get_source(c, k2, key));
	EXPECT_TRUE(key_eq(key, k1));
	vtpu_cache_stats(c, &st);
	EXPECT_EQ(0, st.corrupt);
	vtpu_cache_free(c);
	snprintf(path, sizeof(path), "%s/%016llx%016llx.src", self->dir,
		 (unsigned long long)k2[1], (unsigned long long)k2[0]);
	EXPECT_EQ(0, unlink(path));
}

/* A damaged source entry is a counted miss, and goes. */
TEST_F(disk, flipped_source_byte_is_corrupt_miss)
{
	struct vtpu_cache *c = vtpu_cache_new(0, self->dir);
	struct vtpu_cache_stats st;
	uint64_t key[2];
	char path[160];
	struct stat sb;
	int off;

	ASSERT_NE(NULL, c);
	snprintf(path, sizeof(path), "%s/%016llx%016llx.src", self->dir,
		 (unsigned long long)k2[1], (unsigned long long)k2[0]);
	for (off = 0; off < 48; off += 13) {
		ASSERT_EQ(0, vtpu_cache_put_source(c, k2, k1));
		ASSERT_EQ(0, flip_byte(path, off));
		EXPECT_EQ(-ENOENT, vtpu_cache_get_source(c, k2, key))
			TH_LOG("byte %d", off);
		EXPECT_NE(0, stat(path, &sb)) TH_LOG("byte %d", off);
	}
	vtpu_cache_stats(c, &st);
	EXPECT_EQ(4, st.corrupt);
	vtpu_cache_free(c);
}

#define DATA	"/usr/share/libonnx-testdata/data/"

/* A test model's bytes, or NULL (vtpu_read_file(), the runtime's reader). */
static void *slurp(const char *path, size_t *len)
{
	void *buf = NULL;

	return vtpu_read_file(path, &buf, len) ? NULL : buf;
}

/*
 * vtpu_compile_onnx() finds a model's bytes by their source key without
 * parsing them: the source of the Relu test, pointed at the Abs test's
 * program, gives the Abs program (the bytes are never looked at). The
 * key leaves out the bound values unless the model read them: Reshape's
 * shape, bound to two shapes, gives two programs, and each again.
 */
TEST(compile_onnx_finds_sources_without_parsing)
{
	struct vtpu_cache *c = vtpu_cache_new(8, "");
	struct vtpu_compile_options o = { .cache = c };
	struct vtpu_program *p = NULL, *q = NULL;
	struct vtpu_cache_stats st;
	size_t rlen = 0, alen = 0, slen = 0;
	void *relu = slurp(DATA "node/test_relu/model.onnx", &rlen);
	void *abs = slurp(DATA "node/test_abs/model.onnx", &alen);
	void *rs = slurp(DATA "node/test_reshape_reordered_all_dims/model.onnx",
			 &slen);
	int64_t shape[2][3] = { { 4, 2, 3 }, { 2, 12, 1 } };
	struct vtpu_onnx_binding b[2] = {
		{ .name = "data", .rank = 3, .dims = { 2, 3, 4 } },
		{ .name = "shape", .rank = 1, .dims = { 3 } },
	};
	uint64_t src[2], key[2], zero[2] = { 0, 0 };
	char err[256];
	int i, k, o2;

	ASSERT_NE(NULL, c);
	if (!relu || !abs || !rs)
		SKIP(return, "the ONNX node tests are not installed");
	ASSERT_EQ(0, vtpu_compile_onnx(abs, alen, NULL, 0, &dev, &o, &p, err,
				       sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, onnx_source_hash(abs, alen, NULL, 0, false, &dev, &o,
				      src));
	ASSERT_EQ(0, vtpu_cache_get_source(c, src, key));
	ASSERT_EQ(0, onnx_source_hash(relu, rlen, NULL, 0, false, &dev, &o,
				      src));
	ASSERT_EQ(0, vtpu_cache_put_source(c, src, key));
	ASSERT_EQ(0, vtpu_compile_onnx(relu, rlen, NULL, 0, &dev, &o, &q, err,
				       sizeof(err))) TH_LOG("%s", err);
	EXPECT_TRUE(program_eq(p, q));
	vtpu_program_free(p);
	vtpu_program_free(q);

	for (k = 0; k < 2; k++) {
		for (i = 0; i < 2; i++) {
			b[1].values = shape[i];
			ASSERT_EQ(0, vtpu_compile_onnx(rs, slen, b, 2, &dev, &o,
						       &p, err, sizeof(err)))
				TH_LOG("%s", err);
			/* the output's dims are the bound shape */
			for (o2 = 0; o2 < p->nbindings &&
			     p->bindings[o2].role != VTPU_BIND_OUTPUT; o2++)
				;
			ASSERT_LT(o2, p->nbindings);
			EXPECT_EQ(0, memcmp(p->bindings[o2].shape.dims,
					    shape[i], sizeof(shape[i])))
				TH_LOG("pass %d, shape %d", k, i);
			vtpu_program_free(p);
		}
	}
	vtpu_cache_stats(c, &st);
	/* Relu's, then the second pass's two */
	EXPECT_EQ(3, st.hits);
	ASSERT_EQ(0, onnx_source_hash(rs, slen, b, 2, false, &dev, &o, src));
	ASSERT_EQ(0, vtpu_cache_get_source(c, src, key));
	EXPECT_TRUE(key_eq(key, zero)) TH_LOG("the values matter");
	free(relu);
	free(abs);
	free(rs);
	vtpu_cache_free(c);
}

struct worker {
	struct vtpu_cache *c;
	struct vtpu_program *p;
	int bad;
};

/* Puts and gets its own key over and over while the others do theirs. */
static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t key[2] = { (uintptr_t)w, 99 };
	int i;

	for (i = 0; i < 200; i++) {
		if (vtpu_cache_put(w->c, key, w->p))
			w->bad++;
		if (get_eq(w->c, key, w->p) < 0)	/* evicted is fine */
			w->bad++;
	}
	return NULL;
}

TEST_F(disk, threads_share_one_cache)
{
	struct vtpu_cache *c = vtpu_cache_new(2, self->dir);
	struct worker w[4];
	pthread_t t[4];
	char path[160];
	int i;

	ASSERT_NE(NULL, c);
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ c, program(i), 0 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, work, &w[i]));
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, w[i].bad);
		snprintf(path, sizeof(path), "%s/%016llx%016llx.vtpu", self->dir,
			 99ull, (unsigned long long)(uintptr_t)&w[i]);
		EXPECT_EQ(0, unlink(path));
		program_free(w[i].p);
	}
	vtpu_cache_free(c);
}

TEST_HARNESS_MAIN
