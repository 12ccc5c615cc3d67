// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the uAPI structs have the same layout on every ABI.
 *
 * botching-up-ioctls.rst: no implicit padding (32-bit and 64-bit
 * userspace must agree without compat code), sizes a multiple of 8, every
 * __u64 naturally aligned, and ioctl numbers that encode the struct size
 * (the DRM core zero-extends and truncates by that size).
 */
#include <stddef.h>

#include <drm/vtpu_accel.h>

#include "kselftest_harness.h"

/* Sum of the member sizes must equal sizeof: no hidden holes. */
#define FIELD(s, f) (sizeof(((struct s *)0)->f))

static size_t u64_misaligned;

#define CHECK_U64(s, f) \
	(u64_misaligned += FIELD(s, f) == 8 && offsetof(struct s, f) % 8)

TEST(query_has_no_holes)
{
	size_t sum = FIELD(drm_vtpu_query, flags) + FIELD(drm_vtpu_query, pad) +
		FIELD(drm_vtpu_query, device_index) +
		FIELD(drm_vtpu_query, device_count) +
		FIELD(drm_vtpu_query, core_count) +
		FIELD(drm_vtpu_query, isa_version) +
		FIELD(drm_vtpu_query, vmem_size) +
		FIELD(drm_vtpu_query, hbm_total) +
		FIELD(drm_vtpu_query, hbm_free) +
		FIELD(drm_vtpu_query, hbm_largest_free) +
		FIELD(drm_vtpu_query, host_bytes) +
		FIELD(drm_vtpu_query, max_bo_size) +
		FIELD(drm_vtpu_query, timestamp_unit_ns) +
		FIELD(drm_vtpu_query, pad2) +
		FIELD(drm_vtpu_query, features);

	ASSERT_EQ(sizeof(struct drm_vtpu_query), sum);
	ASSERT_EQ(0, sizeof(struct drm_vtpu_query) % 8);
	u64_misaligned = 0;
	CHECK_U64(drm_vtpu_query, vmem_size);
	CHECK_U64(drm_vtpu_query, hbm_total);
	CHECK_U64(drm_vtpu_query, hbm_free);
	CHECK_U64(drm_vtpu_query, hbm_largest_free);
	CHECK_U64(drm_vtpu_query, host_bytes);
	CHECK_U64(drm_vtpu_query, max_bo_size);
	CHECK_U64(drm_vtpu_query, features);
	ASSERT_EQ(0, u64_misaligned);
}

TEST(bo_create_has_no_holes)
{
	size_t sum = FIELD(drm_vtpu_bo_create, size) +
		FIELD(drm_vtpu_bo_create, placement) +
		FIELD(drm_vtpu_bo_create, flags) +
		FIELD(drm_vtpu_bo_create, handle) +
		FIELD(drm_vtpu_bo_create, placed) +
		FIELD(drm_vtpu_bo_create, device_addr);

	ASSERT_EQ(sizeof(struct drm_vtpu_bo_create), sum);
	ASSERT_EQ(0, sizeof(struct drm_vtpu_bo_create) % 8);
	u64_misaligned = 0;
	CHECK_U64(drm_vtpu_bo_create, size);
	CHECK_U64(drm_vtpu_bo_create, device_addr);
	ASSERT_EQ(0, u64_misaligned);
}

TEST(bo_info_has_no_holes)
{
	size_t sum = FIELD(drm_vtpu_bo_info, handle) +
		FIELD(drm_vtpu_bo_info, flags) +
		FIELD(drm_vtpu_bo_info, size) +
		FIELD(drm_vtpu_bo_info, mmap_offset) +
		FIELD(drm_vtpu_bo_info, device_addr) +
		FIELD(drm_vtpu_bo_info, placed) +
		FIELD(drm_vtpu_bo_info, pad);

	ASSERT_EQ(sizeof(struct drm_vtpu_bo_info), sum);
	ASSERT_EQ(0, sizeof(struct drm_vtpu_bo_info) % 8);
	u64_misaligned = 0;
	CHECK_U64(drm_vtpu_bo_info, size);
	CHECK_U64(drm_vtpu_bo_info, mmap_offset);
	CHECK_U64(drm_vtpu_bo_info, device_addr);
	ASSERT_EQ(0, u64_misaligned);
}

/* The ioctl number carries the struct size the kernel copies. */
TEST(ioctl_numbers_encode_struct_sizes)
{
	ASSERT_EQ(sizeof(struct drm_vtpu_query),
		  _IOC_SIZE(DRM_IOCTL_VTPU_QUERY));
	ASSERT_EQ(sizeof(struct drm_vtpu_bo_create),
		  _IOC_SIZE(DRM_IOCTL_VTPU_BO_CREATE));
	ASSERT_EQ(sizeof(struct drm_vtpu_bo_info),
		  _IOC_SIZE(DRM_IOCTL_VTPU_BO_INFO));
	ASSERT_EQ(_IOC_READ | _IOC_WRITE, _IOC_DIR(DRM_IOCTL_VTPU_BO_CREATE));
	ASSERT_EQ(DRM_COMMAND_BASE + DRM_VTPU_BO_INFO,
		  _IOC_NR(DRM_IOCTL_VTPU_BO_INFO));
}

/* AUTO is the zero value so a zeroed request means "let the driver pick". */
TEST(placement_auto_is_zero)
{
	struct drm_vtpu_bo_create req = { 0 };

	ASSERT_EQ((__u32)DRM_VTPU_PLACEMENT_AUTO, req.placement);
	ASSERT_NE(DRM_VTPU_PLACEMENT_HBM, DRM_VTPU_PLACEMENT_HOST);
}

TEST_HARNESS_MAIN
