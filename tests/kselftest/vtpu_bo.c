// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: buffer object life cycle for each placement: create, info,
 * mmap, write, read, close; size rounding; memory accounting; a buffer's
 * memory reads zeros, also when it was someone else's a moment ago.
 */
#include <sys/wait.h>

#include "vtpu_test.h"

/* Room AUTO and HBM variants need so that "placed HBM" is the only answer. */
#define BO_TEST_HBM_NEEDED	(4 * MiB)

FIXTURE(bo) {
	int fd;
	struct drm_vtpu_query q;
};

FIXTURE_VARIANT(bo) {
	__u32 placement;	/* what we ask for */
	__u32 placed;		/* what we must get while HBM has room */
};

FIXTURE_VARIANT_ADD(bo, hbm) {
	.placement = DRM_VTPU_PLACEMENT_HBM,
	.placed = DRM_VTPU_PLACEMENT_HBM,
};

FIXTURE_VARIANT_ADD(bo, host) {
	.placement = DRM_VTPU_PLACEMENT_HOST,
	.placed = DRM_VTPU_PLACEMENT_HOST,
};

FIXTURE_VARIANT_ADD(bo, auto) {
	.placement = DRM_VTPU_PLACEMENT_AUTO,
	.placed = DRM_VTPU_PLACEMENT_HBM,
};

FIXTURE_SETUP(bo)
{
	int ret;

	self->fd = vtpu_open(0);
	if (self->fd == -ENODEV)
		SKIP(return, "no vtpu accel node (is vtpu.ko loaded?)");
	ASSERT_LE(0, self->fd) TH_LOG("open vtpu node 0: %s",
				      strerror(-self->fd));
	ret = vtpu_query(self->fd, &self->q);
	ASSERT_EQ(0, ret) TH_LOG("QUERY: %s", strerror(-ret));
	if (variant->placed == DRM_VTPU_PLACEMENT_HBM &&
	    self->q.hbm_largest_free < BO_TEST_HBM_NEEDED)
		SKIP(return, "only %llu bytes of contiguous HBM free",
		     (unsigned long long)self->q.hbm_largest_free);
}

FIXTURE_TEARDOWN(bo)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* The memory figure the variant's placement is charged to. */
static __u64 placed_bytes_used(const struct drm_vtpu_query *q, __u32 placed)
{
	return placed == DRM_VTPU_PLACEMENT_HBM ? q->hbm_total - q->hbm_free :
						  q->host_bytes;
}

TEST_F(bo, create_places_bo_as_requested)
{
	struct drm_vtpu_bo_create c;
	int ret;

	ret = vtpu_bo_create(self->fd, MiB, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	EXPECT_EQ(variant->placed, c.placed);
	if (variant->placed == DRM_VTPU_PLACEMENT_HBM) {
		EXPECT_EQ(0ULL, c.device_addr % vtpu_page_size())
			TH_LOG("device_addr 0x%llx not page aligned",
			       (unsigned long long)c.device_addr);
		EXPECT_LE(c.device_addr + MiB, self->q.hbm_total)
			TH_LOG("device_addr 0x%llx + 1 MiB beyond HBM",
			       (unsigned long long)c.device_addr);
	} else {
		EXPECT_EQ(DRM_VTPU_NO_DEVICE_ADDR, c.device_addr);
	}
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_F(bo, create_rounds_size_up_to_page)
{
	const __u64 page = vtpu_page_size();
	const __u64 sizes[] = { 1, page - 1, page, page + 1, 3 * page + 17 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct drm_vtpu_bo_create c;
		struct drm_vtpu_bo_info info;
		int ret;

		ret = vtpu_bo_create(self->fd, sizes[i], variant->placement, &c);
		ASSERT_EQ(0, ret) TH_LOG("BO_CREATE size %llu: %s",
					 (unsigned long long)sizes[i],
					 strerror(-ret));
		ret = vtpu_bo_info(self->fd, c.handle, &info);
		ASSERT_EQ(0, ret) TH_LOG("BO_INFO: %s", strerror(-ret));
		EXPECT_EQ(vtpu_page_align(sizes[i]), info.size)
			TH_LOG("size %llu", (unsigned long long)sizes[i]);
		EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
	}
}

TEST_F(bo, info_reports_what_create_returned)
{
	struct drm_vtpu_bo_create c;
	struct drm_vtpu_bo_info info;
	int ret;

	ret = vtpu_bo_create(self->fd, 2 * MiB, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	ret = vtpu_bo_info(self->fd, c.handle, &info);
	ASSERT_EQ(0, ret) TH_LOG("BO_INFO: %s", strerror(-ret));
	EXPECT_EQ(c.handle, info.handle);
	EXPECT_EQ(2 * MiB, info.size);
	EXPECT_EQ(c.placed, info.placed);
	EXPECT_EQ(c.device_addr, info.device_addr);
	EXPECT_EQ(0U, info.pad);
	EXPECT_NE(0ULL, info.mmap_offset) TH_LOG("no mmap offset");
	EXPECT_EQ(0ULL, info.mmap_offset % vtpu_page_size())
		TH_LOG("mmap_offset 0x%llx not page aligned",
		       (unsigned long long)info.mmap_offset);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_F(bo, new_bo_reads_zeros)
{
	const size_t size = MiB + vtpu_page_size();
	struct drm_vtpu_bo_create c;
	void *map;
	int ret;

	ret = vtpu_bo_create(self->fd, size, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	map = vtpu_bo_mmap(self->fd, c.handle, size);
	ASSERT_NE(MAP_FAILED, map) TH_LOG("mmap: %s", strerror(errno));
	EXPECT_TRUE(vtpu_mem_is(map, 0, size)) TH_LOG("new BO is not zeroed");
	munmap(map, size);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_F(bo, data_written_through_one_mapping_reads_back_through_another)
{
	const size_t size = MiB;
	struct drm_vtpu_bo_create c;
	void *a, *b;
	int ret;

	ret = vtpu_bo_create(self->fd, size, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	a = vtpu_bo_mmap(self->fd, c.handle, size);
	ASSERT_NE(MAP_FAILED, a) TH_LOG("first mmap: %s", strerror(errno));
	b = vtpu_bo_mmap(self->fd, c.handle, size);
	ASSERT_NE(MAP_FAILED, b) TH_LOG("second mmap: %s", strerror(errno));
	ASSERT_NE(a, b);

	vtpu_fill_pattern(a, size, 0x5eed0001);
	EXPECT_TRUE(vtpu_check_pattern(b, size, 0x5eed0001))
		TH_LOG("second mapping does not see the first one's writes");
	vtpu_fill_pattern(b, size, 0x5eed0002);
	EXPECT_TRUE(vtpu_check_pattern(a, size, 0x5eed0002))
		TH_LOG("first mapping does not see the second one's writes");

	munmap(a, size);
	munmap(b, size);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_F(bo, data_survives_unmap_and_remap)
{
	const size_t size = MiB;
	struct drm_vtpu_bo_create c;
	void *map;
	int ret;

	ret = vtpu_bo_create(self->fd, size, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	map = vtpu_bo_mmap(self->fd, c.handle, size);
	ASSERT_NE(MAP_FAILED, map) TH_LOG("mmap: %s", strerror(errno));
	vtpu_fill_pattern(map, size, 0x5eed0003);
	munmap(map, size);

	map = vtpu_bo_mmap(self->fd, c.handle, size);
	ASSERT_NE(MAP_FAILED, map) TH_LOG("mmap again: %s", strerror(errno));
	EXPECT_TRUE(vtpu_check_pattern(map, size, 0x5eed0003))
		TH_LOG("data lost between two mappings");
	munmap(map, size);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_F(bo, create_charges_rounded_size_to_placement)
{
	const __u64 size = 256 * 1024 + 1;
	const __u64 rounded = vtpu_page_align(size);
	struct drm_vtpu_query before, after;
	struct drm_vtpu_bo_create c;
	int ret;

	ASSERT_EQ(0, vtpu_query(self->fd, &before));
	ret = vtpu_bo_create(self->fd, size, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	ASSERT_EQ(0, vtpu_query(self->fd, &after));

	EXPECT_EQ(placed_bytes_used(&before, variant->placed) + rounded,
		  placed_bytes_used(&after, variant->placed))
		TH_LOG("the BO's %llu bytes were not charged to its placement",
		       (unsigned long long)rounded);
	if (variant->placed == DRM_VTPU_PLACEMENT_HBM) {
		EXPECT_EQ(before.host_bytes, after.host_bytes)
			TH_LOG("HBM BO charged to host_bytes");
	} else {
		EXPECT_EQ(before.hbm_free, after.hbm_free)
			TH_LOG("HOST BO charged to HBM");
	}
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_F(bo, close_returns_memory)
{
	struct drm_vtpu_query before, after;
	struct drm_vtpu_bo_create c;
	int ret;

	ASSERT_EQ(0, vtpu_query(self->fd, &before));
	ret = vtpu_bo_create(self->fd, 3 * MiB + 1, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	ASSERT_EQ(0, vtpu_bo_close(self->fd, c.handle));
	ASSERT_EQ(0, vtpu_query(self->fd, &after));

	EXPECT_EQ(before.hbm_free, after.hbm_free);
	EXPECT_EQ(before.hbm_largest_free, after.hbm_largest_free);
	EXPECT_EQ(before.host_bytes, after.host_bytes);
}

TEST_F(bo, debugfs_counts_live_bo)
{
	struct vtpu_bo_counts before, during, after;
	struct drm_vtpu_bo_create c;
	int minor, ret;

	minor = vtpu_minor(self->fd);
	ASSERT_LE(0, minor);
	ret = vtpu_debugfs_counts(minor, &before);
	if (ret == -ENODEV)
		SKIP(return, "debugfs is not mounted");
	ASSERT_EQ(0, ret) TH_LOG("debugfs bos of accel%d: %s", minor,
				 strerror(-ret));

	ret = vtpu_bo_create(self->fd, MiB, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	ASSERT_EQ(0, vtpu_debugfs_counts(minor, &during));
	ASSERT_EQ(0, vtpu_bo_close(self->fd, c.handle));
	ASSERT_EQ(0, vtpu_debugfs_counts(minor, &after));

	if (variant->placed == DRM_VTPU_PLACEMENT_HBM) {
		EXPECT_EQ(before.hbm_bos + 1, during.hbm_bos);
		EXPECT_EQ(before.hbm_bytes + MiB, during.hbm_bytes);
		EXPECT_EQ(before.host_bos, during.host_bos);
	} else {
		EXPECT_EQ(before.host_bos + 1, during.host_bos);
		EXPECT_EQ(before.host_bytes + MiB, during.host_bytes);
		EXPECT_EQ(before.hbm_bos, during.hbm_bos);
	}
	EXPECT_EQ(before.hbm_bos, after.hbm_bos) TH_LOG("HBM BO not freed");
	EXPECT_EQ(before.host_bos, after.host_bos) TH_LOG("HOST BO not freed");
	EXPECT_EQ(before.hbm_bytes, after.hbm_bytes);
	EXPECT_EQ(before.host_bytes, after.host_bytes);
}

/* A mapping holds the BO: closing the handle must not free its memory. */
TEST_F(bo, mapping_keeps_bo_alive_after_handle_close)
{
	const size_t size = MiB;
	struct drm_vtpu_query before, mapped, unmapped;
	struct drm_vtpu_bo_create c;
	void *map;
	int ret;

	ASSERT_EQ(0, vtpu_query(self->fd, &before));
	ret = vtpu_bo_create(self->fd, size, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	map = vtpu_bo_mmap(self->fd, c.handle, size);
	ASSERT_NE(MAP_FAILED, map) TH_LOG("mmap: %s", strerror(errno));
	vtpu_fill_pattern(map, size, 0x5eed0004);
	ASSERT_EQ(0, vtpu_bo_close(self->fd, c.handle));

	EXPECT_TRUE(vtpu_check_pattern(map, size, 0x5eed0004))
		TH_LOG("data changed after the handle was closed");
	vtpu_fill_pattern(map, size, 0x5eed0005);
	EXPECT_TRUE(vtpu_check_pattern(map, size, 0x5eed0005));
	ASSERT_EQ(0, vtpu_query(self->fd, &mapped));
	EXPECT_EQ(placed_bytes_used(&before, variant->placed) + size,
		  placed_bytes_used(&mapped, variant->placed))
		TH_LOG("memory released while still mapped");

	munmap(map, size);
	ASSERT_EQ(0, vtpu_query(self->fd, &unmapped));
	EXPECT_EQ(placed_bytes_used(&before, variant->placed),
		  placed_bytes_used(&unmapped, variant->placed))
		TH_LOG("memory not released after the last unmap");
}

TEST_F(bo, closed_handle_is_gone)
{
	struct drm_vtpu_bo_create c;
	struct drm_vtpu_bo_info info;
	int ret;

	ret = vtpu_bo_create(self->fd, MiB, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	ASSERT_EQ(0, vtpu_bo_close(self->fd, c.handle));
	EXPECT_EQ(-ENOENT, vtpu_bo_info(self->fd, c.handle, &info));
	/* drm_gem_handle_delete() answers -EINVAL for an unknown handle. */
	EXPECT_EQ(-EINVAL, vtpu_bo_close(self->fd, c.handle));
}

/* Fill a new BO of @size with @byte, then close it; 0 or -errno. */
static int create_fill_close(int fd, __u64 size, __u32 placement, int byte,
			     struct drm_vtpu_bo_create *out)
{
	void *map;
	int ret;

	ret = vtpu_bo_create(fd, size, placement, out);
	if (ret)
		return ret;
	map = vtpu_bo_mmap(fd, out->handle, size);
	if (map == MAP_FAILED) {
		ret = -errno;
		vtpu_bo_close(fd, out->handle);
		return ret;
	}
	memset(map, byte, size);
	munmap(map, size);
	return vtpu_bo_close(fd, out->handle);
}

TEST_F(bo, reallocated_memory_reads_zeros)
{
	const size_t size = MiB;
	struct drm_vtpu_bo_create dirty, c;
	void *map;
	int ret;

	ret = create_fill_close(self->fd, size, variant->placement, 0xa5,
				&dirty);
	ASSERT_EQ(0, ret) TH_LOG("dirtying a BO: %s", strerror(-ret));
	ret = vtpu_bo_create(self->fd, size, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	map = vtpu_bo_mmap(self->fd, c.handle, size);
	ASSERT_NE(MAP_FAILED, map) TH_LOG("mmap: %s", strerror(errno));
	EXPECT_TRUE(vtpu_mem_is(map, 0, size))
		TH_LOG("reallocated BO (device_addr 0x%llx, freed one 0x%llx) holds old data",
		       (unsigned long long)c.device_addr,
		       (unsigned long long)dirty.device_addr);
	munmap(map, size);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_F(bo, memory_freed_by_another_process_reads_zeros)
{
	const size_t size = MiB;
	struct drm_vtpu_bo_create c;
	int status;
	pid_t pid;
	void *map;
	int ret;

	pid = fork();
	ASSERT_LE(0, pid) TH_LOG("fork: %s", strerror(errno));
	if (pid == 0) {
		struct drm_vtpu_bo_create dirty;
		int fd = vtpu_open(0);

		if (fd < 0)
			_exit(2);
		ret = create_fill_close(fd, size, variant->placement, 0xa5,
					&dirty);
		close(fd);
		_exit(ret ? 3 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child died");
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child could not dirty a BO (2: open, 3: create/mmap/close)");

	ret = vtpu_bo_create(self->fd, size, variant->placement, &c);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	map = vtpu_bo_mmap(self->fd, c.handle, size);
	ASSERT_NE(MAP_FAILED, map) TH_LOG("mmap: %s", strerror(errno));
	EXPECT_TRUE(vtpu_mem_is(map, 0, size))
		TH_LOG("BO holds data another process left behind");
	munmap(map, size);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

/* HBM-only behaviour, on device 0. */
FIXTURE(hbm_idle) {
	int fd;
};

FIXTURE_SETUP(hbm_idle)
{
	struct drm_vtpu_query q;

	self->fd = vtpu_open(0);
	if (self->fd == -ENODEV)
		SKIP(return, "no vtpu accel node (is vtpu.ko loaded?)");
	ASSERT_LE(0, self->fd) TH_LOG("open vtpu node 0: %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, vtpu_query(self->fd, &q));
	if (q.hbm_free != q.hbm_total)
		SKIP(return, "HBM is not idle: %llu of %llu bytes free",
		     (unsigned long long)q.hbm_free,
		     (unsigned long long)q.hbm_total);
}

FIXTURE_TEARDOWN(hbm_idle)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Not a uAPI promise, but what any sane allocator does; the zero tests
 * above are only as strong as this reuse.
 */
TEST_F(hbm_idle, freed_range_is_handed_out_again)
{
	struct drm_vtpu_bo_create first, second;
	int ret;

	ret = create_fill_close(self->fd, MiB, DRM_VTPU_PLACEMENT_HBM, 0xa5,
				&first);
	ASSERT_EQ(0, ret) TH_LOG("dirtying a BO: %s", strerror(-ret));
	ret = vtpu_bo_create(self->fd, MiB, DRM_VTPU_PLACEMENT_HBM, &second);
	ASSERT_EQ(0, ret) TH_LOG("BO_CREATE: %s", strerror(-ret));
	EXPECT_EQ(first.device_addr, second.device_addr);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, second.handle));
}

TEST_F(hbm_idle, bo_spanning_all_hbm_starts_at_zero)
{
	struct drm_vtpu_query q;
	struct drm_vtpu_bo_create c;
	int ret;

	ASSERT_EQ(0, vtpu_query(self->fd, &q));
	ret = vtpu_bo_create(self->fd, q.hbm_total, DRM_VTPU_PLACEMENT_HBM,
			     &c);
	if (ret == -E2BIG)
		SKIP(return, "max_bo_size %llu < hbm_total",
		     (unsigned long long)q.max_bo_size);
	ASSERT_EQ(0, ret) TH_LOG("a BO as large as idle HBM: %s",
				 strerror(-ret));
	EXPECT_EQ(0ULL, c.device_addr)
		TH_LOG("a BO spanning all of HBM must start at 0");
	ASSERT_EQ(0, vtpu_query(self->fd, &q));
	EXPECT_EQ(0ULL, q.hbm_free);
	EXPECT_EQ(0ULL, q.hbm_largest_free);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_HARNESS_MAIN
