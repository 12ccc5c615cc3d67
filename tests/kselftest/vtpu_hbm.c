// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: HBM runs out. Filling it with 1 MiB buffers ends in
 * -ENOSPC; then HBM-only requests fail without side effects, AUTO falls
 * back to HOST, fragmentation shows in hbm_largest_free, and closing
 * everything gives every byte back.
 */
#include "vtpu_test.h"

#define MAX_CHUNKS	1024

struct chunk {
	__u32 handle;
	__u64 addr;
	bool live;
};

FIXTURE(hbm) {
	int fd;
	struct drm_vtpu_query q0;	/* before the test allocated anything */
	struct chunk chunks[MAX_CHUNKS];	/* ascending device_addr */
	int n;
};

FIXTURE_SETUP(hbm)
{
	int ret;

	self->fd = vtpu_open(0);
	if (self->fd == -ENODEV)
		SKIP(return, "no vtpu accel node (is vtpu.ko loaded?)");
	ASSERT_LE(0, self->fd) TH_LOG("open vtpu node 0: %s",
				      strerror(-self->fd));
	ret = vtpu_query(self->fd, &self->q0);
	ASSERT_EQ(0, ret) TH_LOG("QUERY: %s", strerror(-ret));
	if (self->q0.hbm_free / MiB >= MAX_CHUNKS)
		SKIP(return, "HBM too large to fill 1 MiB at a time");
	if (self->q0.hbm_largest_free < 8 * MiB)
		SKIP(return, "less than 8 MiB of contiguous HBM free");
}

FIXTURE_TEARDOWN(hbm)
{
	if (self->fd >= 0)
		close(self->fd);
}

static int chunk_cmp(const void *a, const void *b)
{
	const struct chunk *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Create 1 MiB HBM buffers through @fd until the driver says -ENOSPC.
 * Any other error, or no -ENOSPC after more buffers than HBM can hold,
 * fails the test. The buffers end up in self->chunks, by address.
 */
#define FILL_HBM(fd) do {							\
	int __ret = 0;							\
	self->n = 0;							\
	while (self->n < MAX_CHUNKS) {					\
		struct drm_vtpu_bo_create __c;				\
		__ret = vtpu_bo_create((fd), MiB,			\
				       DRM_VTPU_PLACEMENT_HBM, &__c);	\
		if (__ret)						\
			break;						\
		ASSERT_EQ((__u32)DRM_VTPU_PLACEMENT_HBM, __c.placed);		\
		self->chunks[self->n].handle = __c.handle;		\
		self->chunks[self->n].addr = __c.device_addr;		\
		self->chunks[self->n].live = true;			\
		self->n++;						\
		ASSERT_GE(self->q0.hbm_total / MiB, (__u64)self->n)	\
			TH_LOG("more 1 MiB BOs than HBM can hold");	\
	}								\
	ASSERT_EQ(-ENOSPC, __ret)					\
		TH_LOG("filling HBM stopped after %d BOs with %s",	\
		       self->n, strerror(-__ret));			\
	qsort(self->chunks, self->n, sizeof(self->chunks[0]), chunk_cmp); \
} while (0)

/* Index of a live chunk whose address neighbours are both live, or -1. */
static int middle_chunk(const struct chunk *c, int n, int from)
{
	int i;

	for (i = from > 1 ? from : 1; i + 1 < n; i++)
		if (c[i].live && c[i - 1].live && c[i + 1].live &&
		    c[i - 1].addr + MiB == c[i].addr &&
		    c[i].addr + MiB == c[i + 1].addr)
			return i;
	return -1;
}

static int free_chunk(int fd, struct chunk *c)
{
	c->live = false;
	return vtpu_bo_close(fd, c->handle);
}

TEST_F(hbm, fills_with_1mib_bos_until_enospc)
{
	struct drm_vtpu_query q;
	int i;

	FILL_HBM(self->fd);
	ASSERT_EQ(0, vtpu_query(self->fd, &q));
	EXPECT_GT(MiB, q.hbm_largest_free)
		TH_LOG("-ENOSPC for 1 MiB while %llu contiguous bytes are free",
		       (unsigned long long)q.hbm_largest_free);
	EXPECT_EQ(self->q0.hbm_free - self->n * MiB, q.hbm_free)
		TH_LOG("%d BOs of 1 MiB do not account for the HBM used",
		       self->n);
	if (self->q0.hbm_largest_free == self->q0.hbm_free) {
		EXPECT_EQ(self->q0.hbm_free / MiB, (__u64)self->n)
			TH_LOG("unfragmented HBM did not fill up completely");
	}
	for (i = 1; i < self->n; i++) {
		EXPECT_LE(self->chunks[i - 1].addr + MiB, self->chunks[i].addr)
			TH_LOG("BOs at 0x%llx and 0x%llx overlap",
			       (unsigned long long)self->chunks[i - 1].addr,
			       (unsigned long long)self->chunks[i].addr);
	}
}

TEST_F(hbm, hbm_create_when_full_fails_without_side_effects)
{
	struct drm_vtpu_bo_create c = { 0 };
	struct drm_vtpu_bo_info info;
	struct vtpu_state before;
	int i, ret;

	FILL_HBM(self->fd);
	ASSERT_EQ(0, vtpu_state_get(self->fd, &before));
	ret = vtpu_bo_create(self->fd, MiB, DRM_VTPU_PLACEMENT_HBM, &c);
	EXPECT_EQ(-ENOSPC, ret);
	EXPECT_STATE_UNCHANGED(self->fd, &before);

	/* Whatever the reply says, no new handle may exist. */
	for (i = 0; i < self->n; i++)
		if (self->chunks[i].handle == c.handle)
			return;
	EXPECT_EQ(-ENOENT, vtpu_bo_info(self->fd, c.handle, &info))
		TH_LOG("failed BO_CREATE left handle %u behind", c.handle);
}

TEST_F(hbm, auto_create_when_full_falls_back_to_host)
{
	struct drm_vtpu_query before, after;
	struct drm_vtpu_bo_create c;
	int ret;

	FILL_HBM(self->fd);
	ASSERT_EQ(0, vtpu_query(self->fd, &before));
	ret = vtpu_bo_create(self->fd, MiB, DRM_VTPU_PLACEMENT_AUTO, &c);
	ASSERT_EQ(0, ret) TH_LOG("AUTO BO_CREATE with HBM full: %s",
				 strerror(-ret));
	EXPECT_EQ((__u32)DRM_VTPU_PLACEMENT_HOST, c.placed);
	EXPECT_EQ(DRM_VTPU_NO_DEVICE_ADDR, c.device_addr);
	ASSERT_EQ(0, vtpu_query(self->fd, &after));
	EXPECT_EQ(before.host_bytes + MiB, after.host_bytes);
	EXPECT_EQ(before.hbm_free, after.hbm_free);
}

TEST_F(hbm, host_create_when_hbm_full_succeeds)
{
	struct drm_vtpu_bo_create c;
	void *map;
	int ret;

	FILL_HBM(self->fd);
	ret = vtpu_bo_create(self->fd, MiB, DRM_VTPU_PLACEMENT_HOST, &c);
	ASSERT_EQ(0, ret) TH_LOG("HOST BO_CREATE with HBM full: %s",
				 strerror(-ret));
	EXPECT_EQ((__u32)DRM_VTPU_PLACEMENT_HOST, c.placed);
	map = vtpu_bo_mmap(self->fd, c.handle, MiB);
	ASSERT_NE(MAP_FAILED, map) TH_LOG("mmap: %s", strerror(errno));
	vtpu_fill_pattern(map, MiB, 0x5eed0010);
	EXPECT_TRUE(vtpu_check_pattern(map, MiB, 0x5eed0010));
	munmap(map, MiB);
}

TEST_F(hbm, auto_create_larger_than_hbm_falls_back_to_host)
{
	const __u64 size = self->q0.hbm_total + vtpu_page_size();
	struct drm_vtpu_bo_create c;
	int ret;

	if (size > self->q0.max_bo_size)
		SKIP(return, "hbm_total + a page exceeds max_bo_size");
	ret = vtpu_bo_create(self->fd, size, DRM_VTPU_PLACEMENT_AUTO, &c);
	ASSERT_EQ(0, ret) TH_LOG("AUTO BO_CREATE of %llu bytes: %s",
				 (unsigned long long)size, strerror(-ret));
	EXPECT_EQ((__u32)DRM_VTPU_PLACEMENT_HOST, c.placed);
}

TEST_F(hbm, freed_hole_shows_as_largest_free)
{
	struct drm_vtpu_query before, after;
	int i;

	FILL_HBM(self->fd);
	i = middle_chunk(self->chunks, self->n, 0);
	ASSERT_LE(0, i) TH_LOG("no BO with both address neighbours in use");
	ASSERT_EQ(0, vtpu_query(self->fd, &before));
	ASSERT_EQ(0, free_chunk(self->fd, &self->chunks[i]));
	ASSERT_EQ(0, vtpu_query(self->fd, &after));
	EXPECT_EQ(before.hbm_free + MiB, after.hbm_free);
	EXPECT_EQ(MiB, after.hbm_largest_free)
		TH_LOG("a 1 MiB hole between used ranges is the largest free range");
}

TEST_F(hbm, hbm_create_fills_the_only_hole)
{
	struct drm_vtpu_bo_create c;
	__u64 hole;
	int i, ret;

	FILL_HBM(self->fd);
	i = middle_chunk(self->chunks, self->n, 0);
	ASSERT_LE(0, i) TH_LOG("no BO with both address neighbours in use");
	hole = self->chunks[i].addr;
	ASSERT_EQ(0, free_chunk(self->fd, &self->chunks[i]));
	ret = vtpu_bo_create(self->fd, MiB, DRM_VTPU_PLACEMENT_HBM, &c);
	ASSERT_EQ(0, ret) TH_LOG("HBM BO_CREATE into a 1 MiB hole: %s",
				 strerror(-ret));
	EXPECT_EQ(hole, c.device_addr);
}

TEST_F(hbm, fragmented_hbm_refuses_bo_larger_than_largest_free)
{
	struct drm_vtpu_query q;
	struct vtpu_state before;
	int i, j, ret;

	FILL_HBM(self->fd);
	i = middle_chunk(self->chunks, self->n, 0);
	ASSERT_LE(0, i);
	j = middle_chunk(self->chunks, self->n, i + 2);
	ASSERT_LE(0, j) TH_LOG("no second BO apart from the first");
	ASSERT_EQ(0, free_chunk(self->fd, &self->chunks[i]));
	ASSERT_EQ(0, free_chunk(self->fd, &self->chunks[j]));

	ASSERT_EQ(0, vtpu_query(self->fd, &q));
	ASSERT_LE(2 * MiB, q.hbm_free);
	EXPECT_EQ(MiB, q.hbm_largest_free);
	ASSERT_EQ(0, vtpu_state_get(self->fd, &before));
	ret = vtpu_bo_create(self->fd, 2 * MiB, DRM_VTPU_PLACEMENT_HBM, NULL);
	EXPECT_EQ(-ENOSPC, ret)
		TH_LOG("2 MiB in HBM with 2 MiB free in 1 MiB holes");
	EXPECT_STATE_UNCHANGED(self->fd, &before);
}

TEST_F(hbm, closing_all_bos_restores_hbm)
{
	struct drm_vtpu_query q;
	int i;

	FILL_HBM(self->fd);
	/* Close out of address order, so free ranges must merge. */
	for (i = 0; i < self->n; i += 2) {
		ASSERT_EQ(0, free_chunk(self->fd, &self->chunks[i]));
	}
	for (i = 1; i < self->n; i += 2) {
		ASSERT_EQ(0, free_chunk(self->fd, &self->chunks[i]));
	}

	ASSERT_EQ(0, vtpu_query(self->fd, &q));
	EXPECT_EQ(self->q0.hbm_free, q.hbm_free);
	EXPECT_EQ(self->q0.hbm_largest_free, q.hbm_largest_free)
		TH_LOG("freed ranges did not merge back");
	if (self->q0.hbm_free == self->q0.hbm_total) {
		EXPECT_EQ(q.hbm_total, q.hbm_largest_free);
	}
}

TEST_F(hbm, closing_the_file_restores_hbm)
{
	struct drm_vtpu_query q;
	int fd;

	/* Fill through a second file, then drop it without closing a BO. */
	fd = vtpu_open(0);
	ASSERT_LE(0, fd);
	FILL_HBM(fd);
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(0, vtpu_query(self->fd, &q));
	EXPECT_EQ(self->q0.hbm_free, q.hbm_free);
	EXPECT_EQ(self->q0.hbm_largest_free, q.hbm_largest_free);
}

TEST_F(hbm, filling_one_device_leaves_the_others_alone)
{
	struct drm_vtpu_query before, after;
	int other, ret;

	other = vtpu_open(1);
	if (other == -ENODEV)
		SKIP(return, "only one vtpu device");
	ASSERT_LE(0, other);
	ASSERT_EQ(0, vtpu_query(other, &before));
	FILL_HBM(self->fd);
	ASSERT_EQ(0, vtpu_query(other, &after));
	EXPECT_EQ(before.hbm_free, after.hbm_free);
	EXPECT_EQ(before.hbm_largest_free, after.hbm_largest_free);
	ret = vtpu_bo_create(other, MiB, DRM_VTPU_PLACEMENT_HBM, NULL);
	EXPECT_EQ(0, ret) TH_LOG("device 0 full, device 1 refuses HBM: %s",
				 strerror(-ret));
	close(other);
}

TEST_HARNESS_MAIN
