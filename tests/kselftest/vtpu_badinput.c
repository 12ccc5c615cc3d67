// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: every malformed request fails with the errno the uAPI
 * header documents and changes nothing: memory figures and the live BOs
 * in debugfs are the same before and after.
 */
#include "vtpu_test.h"

static const __u32 placements[] = {
	DRM_VTPU_PLACEMENT_AUTO,
	DRM_VTPU_PLACEMENT_HBM,
	DRM_VTPU_PLACEMENT_HOST,
};

#define N_PLACEMENTS	(sizeof(placements) / sizeof(placements[0]))

FIXTURE(bad) {
	int fd;
	struct drm_vtpu_query q;
	struct vtpu_state before;
};

FIXTURE_SETUP(bad)
{
	int ret;

	self->fd = vtpu_open(0);
	if (self->fd == -ENODEV)
		SKIP(return, "no vtpu accel node (is vtpu.ko loaded?)");
	ASSERT_LE(0, self->fd) TH_LOG("open vtpu node 0: %s",
				      strerror(-self->fd));
	ret = vtpu_query(self->fd, &self->q);
	ASSERT_EQ(0, ret) TH_LOG("QUERY: %s", strerror(-ret));
	ASSERT_EQ(0, vtpu_state_get(self->fd, &self->before));
}

FIXTURE_TEARDOWN(bad)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* A BO for the tests that need one; the state is sampled afterwards. */
static int make_bo(int fd, __u64 size, struct drm_vtpu_bo_info *info,
		   struct vtpu_state *state)
{
	struct drm_vtpu_bo_create c;
	int ret;

	ret = vtpu_bo_create(fd, size, DRM_VTPU_PLACEMENT_AUTO, &c);
	if (ret)
		return ret;
	ret = vtpu_bo_info(fd, c.handle, info);
	if (ret)
		return ret;
	return vtpu_state_get(fd, state);
}

static int create_raw(int fd, __u64 size, __u32 placement, __u32 flags)
{
	struct drm_vtpu_bo_create c = {
		.size = size,
		.placement = placement,
		.flags = flags,
	};

	return vtpu_ioctl(fd, DRM_IOCTL_VTPU_BO_CREATE, &c);
}

TEST_F(bad, create_size_zero_fails_with_einval)
{
	unsigned int i;

	for (i = 0; i < N_PLACEMENTS; i++) {
		EXPECT_EQ(-EINVAL, create_raw(self->fd, 0, placements[i], 0))
			TH_LOG("placement %u", placements[i]);
	}
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

TEST_F(bad, create_size_above_max_bo_size_fails_with_e2big)
{
	const __u64 max = self->q.max_bo_size;
	const __u64 sizes[] = { max + 1, max + vtpu_page_size() };
	unsigned int i, j;

	ASSERT_LT(max, UINT64_MAX - vtpu_page_size())
		TH_LOG("max_bo_size leaves no size above it");
	for (i = 0; i < N_PLACEMENTS; i++)
		for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			EXPECT_EQ(-E2BIG, create_raw(self->fd, sizes[j],
						     placements[i], 0))
				TH_LOG("size max_bo_size + %llu, placement %u",
				       (unsigned long long)(sizes[j] - max),
				       placements[i]);
		}
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

/* Sizes whose page rounding overflows, or nearly. */
TEST_F(bad, create_huge_size_fails_with_e2big)
{
	const __u64 sizes[] = {
		1ULL << 63,
		UINT64_MAX - vtpu_page_size() + 2,	/* rounds up to 0 */
		UINT64_MAX - vtpu_page_size() + 1,
		UINT64_MAX,
	};
	unsigned int i, j;

	ASSERT_GT(1ULL << 63, self->q.max_bo_size);
	for (i = 0; i < N_PLACEMENTS; i++)
		for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			EXPECT_EQ(-E2BIG, create_raw(self->fd, sizes[j],
						     placements[i], 0))
				TH_LOG("size 0x%llx, placement %u",
				       (unsigned long long)sizes[j],
				       placements[i]);
		}
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

TEST_F(bad, hbm_create_larger_than_hbm_fails_with_enospc)
{
	const __u64 size = self->q.hbm_total + vtpu_page_size();

	if (size > self->q.max_bo_size)
		SKIP(return, "hbm_total + a page is above max_bo_size (E2BIG)");
	EXPECT_EQ(-ENOSPC, create_raw(self->fd, size,
				      DRM_VTPU_PLACEMENT_HBM, 0));
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

TEST_F(bad, hbm_create_larger_than_largest_free_fails_with_enospc)
{
	const __u64 size = self->q.hbm_largest_free + vtpu_page_size();

	if (size > self->q.max_bo_size)
		SKIP(return, "hbm_largest_free + a page is above max_bo_size");
	EXPECT_EQ(-ENOSPC, create_raw(self->fd, size,
				      DRM_VTPU_PLACEMENT_HBM, 0));
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

TEST_F(bad, create_unknown_placement_fails_with_einval)
{
	const __u32 bad[] = { 3, 4, 0x80000000u, 0xffffffffu };
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, create_raw(self->fd, vtpu_page_size(),
					      bad[i], 0))
			TH_LOG("placement 0x%x", bad[i]);
	}
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

TEST_F(bad, create_nonzero_flags_fails_with_einval)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		EXPECT_EQ(-EINVAL, create_raw(self->fd, vtpu_page_size(),
					      DRM_VTPU_PLACEMENT_AUTO,
					      1u << bit))
			TH_LOG("flags bit %u", bit);
	}
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

TEST_F(bad, query_nonzero_flags_fails_with_einval)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		struct drm_vtpu_query q = { .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_QUERY,
					      &q))
			TH_LOG("flags bit %u", bit);
	}
}

TEST_F(bad, query_nonzero_pad_fails_with_einval)
{
	const __u32 pads[] = { 1, 0x80000000u, 0xffffffffu };
	unsigned int i;

	for (i = 0; i < sizeof(pads) / sizeof(pads[0]); i++) {
		struct drm_vtpu_query q = { .pad = pads[i] };

		EXPECT_EQ(-EINVAL, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_QUERY,
					      &q))
			TH_LOG("pad 0x%x", pads[i]);
	}
}

TEST_F(bad, info_nonzero_flags_fails_with_einval)
{
	struct drm_vtpu_bo_info info;
	struct vtpu_state before;
	unsigned int bit;
	int ret;

	ret = make_bo(self->fd, MiB, &info, &before);
	ASSERT_EQ(0, ret) TH_LOG("creating a BO: %s", strerror(-ret));
	for (bit = 0; bit < 32; bit++) {
		struct drm_vtpu_bo_info bad = {
			.handle = info.handle,
			.flags = 1u << bit,
		};

		EXPECT_EQ(-EINVAL, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_BO_INFO,
					      &bad))
			TH_LOG("flags bit %u", bit);
	}
	EXPECT_STATE_UNCHANGED(self->fd, &before);
}

TEST_F(bad, info_unknown_handle_fails_with_enoent)
{
	const __u32 handles[] = { 0, 12345, 0xffffffffu };
	struct drm_vtpu_bo_info info;
	unsigned int i;

	for (i = 0; i < sizeof(handles) / sizeof(handles[0]); i++) {
		EXPECT_EQ(-ENOENT, vtpu_bo_info(self->fd, handles[i], &info))
			TH_LOG("handle %u", handles[i]);
	}
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

/* drm_gem_close_ioctl() -> drm_gem_handle_delete(): -EINVAL. */
TEST_F(bad, close_unknown_handle_fails_with_einval)
{
	const __u32 handles[] = { 0, 12345, 0xffffffffu };
	unsigned int i;

	for (i = 0; i < sizeof(handles) / sizeof(handles[0]); i++) {
		EXPECT_EQ(-EINVAL, vtpu_bo_close(self->fd, handles[i]))
			TH_LOG("handle %u", handles[i]);
	}
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

TEST_F(bad, mmap_past_end_fails_with_einval)
{
	const __u64 page = vtpu_page_size();
	struct drm_vtpu_bo_info info;
	struct vtpu_state before;
	int ret;

	ret = make_bo(self->fd, 2 * page, &info, &before);
	ASSERT_EQ(0, ret) TH_LOG("creating a BO: %s", strerror(-ret));
	EXPECT_EQ(-EINVAL, vtpu_try_mmap(self->fd, info.mmap_offset,
					 3 * page));
	EXPECT_EQ(-EINVAL, vtpu_try_mmap(self->fd, info.mmap_offset,
					 64 * MiB));
	EXPECT_STATE_UNCHANGED(self->fd, &before);
}

/* drm_gem_mmap() only maps whole objects, from their first page. */
TEST_F(bad, mmap_inside_bo_fails_with_einval)
{
	const __u64 page = vtpu_page_size();
	struct drm_vtpu_bo_info info;
	struct vtpu_state before;
	int ret;

	ret = make_bo(self->fd, 2 * page, &info, &before);
	ASSERT_EQ(0, ret) TH_LOG("creating a BO: %s", strerror(-ret));
	EXPECT_EQ(-EINVAL, vtpu_try_mmap(self->fd, info.mmap_offset + page,
					 page));
	EXPECT_STATE_UNCHANGED(self->fd, &before);
}

TEST_F(bad, mmap_unknown_offset_fails)
{
	const __u64 offsets[] = { 0, vtpu_page_size(), 1ULL << 40 };
	unsigned int i;

	for (i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		int ret = vtpu_try_mmap(self->fd, offsets[i],
					vtpu_page_size());

		EXPECT_TRUE(ret == -EINVAL || ret == -EACCES)
			TH_LOG("mmap at 0x%llx: %d (%s)",
			       (unsigned long long)offsets[i], ret,
			       strerror(-ret));
	}
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

TEST_F(bad, mmap_offset_from_other_file_fails_with_eacces)
{
	struct drm_vtpu_bo_info info;
	struct vtpu_state before;
	int other, ret;

	ret = make_bo(self->fd, MiB, &info, &before);
	ASSERT_EQ(0, ret) TH_LOG("creating a BO: %s", strerror(-ret));
	other = vtpu_open(0);
	ASSERT_LE(0, other) TH_LOG("second open: %s", strerror(-other));
	EXPECT_EQ(-EACCES, vtpu_try_mmap(other, info.mmap_offset, MiB));
	EXPECT_EQ(0, vtpu_try_mmap(self->fd, info.mmap_offset, MiB))
		TH_LOG("the owner can no longer map its BO");
	close(other);
	EXPECT_STATE_UNCHANGED(self->fd, &before);
}

TEST_F(bad, other_file_cannot_query_handle)
{
	struct drm_vtpu_bo_info info, theirs;
	struct vtpu_state before;
	int other, ret;

	ret = make_bo(self->fd, MiB, &info, &before);
	ASSERT_EQ(0, ret) TH_LOG("creating a BO: %s", strerror(-ret));
	other = vtpu_open(0);
	ASSERT_LE(0, other) TH_LOG("second open: %s", strerror(-other));
	EXPECT_EQ(-ENOENT, vtpu_bo_info(other, info.handle, &theirs));
	close(other);
	EXPECT_STATE_UNCHANGED(self->fd, &before);
}

TEST_F(bad, other_file_cannot_close_handle)
{
	struct drm_vtpu_bo_info info, again;
	struct vtpu_state before;
	int other, ret;
	void *map;

	ret = make_bo(self->fd, MiB, &info, &before);
	ASSERT_EQ(0, ret) TH_LOG("creating a BO: %s", strerror(-ret));
	other = vtpu_open(0);
	ASSERT_LE(0, other) TH_LOG("second open: %s", strerror(-other));
	EXPECT_EQ(-EINVAL, vtpu_bo_close(other, info.handle));
	close(other);
	EXPECT_STATE_UNCHANGED(self->fd, &before);

	/* Still the owner's, whole and usable. */
	ASSERT_EQ(0, vtpu_bo_info(self->fd, info.handle, &again));
	EXPECT_EQ(info.size, again.size);
	map = vtpu_bo_mmap(self->fd, info.handle, MiB);
	ASSERT_NE(MAP_FAILED, map) TH_LOG("mmap: %s", strerror(errno));
	vtpu_fill_pattern(map, MiB, 0x5eed0020);
	EXPECT_TRUE(vtpu_check_pattern(map, MiB, 0x5eed0020));
	munmap(map, MiB);
}

/* drm_ioctl(): a driver ioctl past the table answers -EINVAL. */
TEST_F(bad, unknown_driver_ioctl_fails_with_einval)
{
	struct drm_vtpu_query q = { 0 };

	EXPECT_EQ(-EINVAL, vtpu_ioctl(self->fd,
				      DRM_IOWR(DRM_COMMAND_BASE + 0x3f,
					       struct drm_vtpu_query), &q));
	EXPECT_STATE_UNCHANGED(self->fd, &self->before);
}

TEST_HARNESS_MAIN
