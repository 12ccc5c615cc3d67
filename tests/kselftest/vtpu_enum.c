// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the vtpu devices the module creates match its parameters,
 * and QUERY, DRM_IOCTL_VERSION and sysfs describe them consistently.
 */
#include "vtpu_test.h"

/* All vtpu nodes, or SKIP when there is none (the count test fails then). */
#define FIND_NODES_OR_SKIP(minors, n) do {				\
	n = vtpu_find_minors(minors, VTPU_MAX_NODES);			\
	ASSERT_LE(0, n) TH_LOG("cannot read /dev/accel: %s", strerror(-n)); \
	if (n == 0)							\
		SKIP(return, "no vtpu accel node (is vtpu.ko loaded?)"); \
} while (0)

static int open_and_query(int minor, struct drm_vtpu_query *q)
{
	int fd = vtpu_open_minor(minor);
	int ret;

	if (fd < 0)
		return fd;
	ret = vtpu_query(fd, q);
	close(fd);
	return ret;
}

TEST(node_count_matches_num_devices)
{
	int minors[VTPU_MAX_NODES];
	struct vtpu_params p;
	int n;

	vtpu_params_get(&p);
	n = vtpu_find_minors(minors, VTPU_MAX_NODES);
	ASSERT_EQ((int)p.num_devices, n)
		TH_LOG("expected %u vtpu accel nodes, found %d",
		       p.num_devices, n);
}

TEST(version_reports_vtpu_uapi_version)
{
	int minors[VTPU_MAX_NODES];
	int i, n;

	FIND_NODES_OR_SKIP(minors, n);
	for (i = 0; i < n; i++) {
		drmVersionPtr v;
		int fd = vtpu_open_minor(minors[i]);

		ASSERT_LE(0, fd) TH_LOG("open accel%d: %s", minors[i],
					strerror(-fd));
		v = drmGetVersion(fd);
		ASSERT_NE(NULL, v) TH_LOG("accel%d: DRM_IOCTL_VERSION failed",
					  minors[i]);
		EXPECT_STREQ("vtpu", v->name);
		EXPECT_EQ(DRM_VTPU_UAPI_MAJOR, v->version_major)
			TH_LOG("accel%d: uAPI major", minors[i]);
		EXPECT_EQ(DRM_VTPU_UAPI_MINOR, v->version_minor)
			TH_LOG("accel%d: uAPI minor", minors[i]);
		drmFreeVersion(v);
		close(fd);
	}
}

TEST(query_reports_module_parameters)
{
	int minors[VTPU_MAX_NODES];
	struct vtpu_params p;
	int i, n, ret;

	vtpu_params_get(&p);
	FIND_NODES_OR_SKIP(minors, n);
	for (i = 0; i < n; i++) {
		struct drm_vtpu_query q;

		ret = open_and_query(minors[i], &q);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: QUERY failed: %s",
					 minors[i], strerror(-ret));
		EXPECT_EQ(p.num_devices, q.device_count)
			TH_LOG("accel%d: device_count", minors[i]);
		EXPECT_EQ(p.num_cores, q.core_count)
			TH_LOG("accel%d: core_count", minors[i]);
		EXPECT_EQ(p.vmem_bytes, q.vmem_size)
			TH_LOG("accel%d: vmem_size", minors[i]);
		EXPECT_EQ(p.hbm_bytes, q.hbm_total)
			TH_LOG("accel%d: hbm_total", minors[i]);
	}
}

TEST(query_reports_capabilities)
{
	const __u64 both = DRM_VTPU_FEATURE_HBM | DRM_VTPU_FEATURE_HOST;
	int minors[VTPU_MAX_NODES];
	int i, n, ret;

	FIND_NODES_OR_SKIP(minors, n);
	for (i = 0; i < n; i++) {
		struct drm_vtpu_query q;

		ret = open_and_query(minors[i], &q);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: QUERY failed: %s",
					 minors[i], strerror(-ret));
		EXPECT_LT(0U, q.timestamp_unit_ns)
			TH_LOG("accel%d: timestamp_unit_ns is 0", minors[i]);
		EXPECT_LE(1U, q.isa_version)
			TH_LOG("accel%d: isa_version is 0", minors[i]);
		EXPECT_EQ(both, q.features & both)
			TH_LOG("accel%d: features 0x%llx lack HBM|HOST",
			       minors[i], (unsigned long long)q.features);
		EXPECT_EQ(0U, q.pad2) TH_LOG("accel%d: pad2", minors[i]);
		/*
		 * Assumed, not stated by the header: the limit is a whole
		 * number of pages, so that size == max_bo_size is valid
		 * after rounding up.
		 */
		EXPECT_NE(0ULL, q.max_bo_size)
			TH_LOG("accel%d: max_bo_size is 0", minors[i]);
		EXPECT_EQ(0ULL, q.max_bo_size % vtpu_page_size())
			TH_LOG("accel%d: max_bo_size %llu is not page aligned",
			       minors[i], (unsigned long long)q.max_bo_size);
	}
}

TEST(query_memory_figures_are_consistent)
{
	int minors[VTPU_MAX_NODES];
	int i, n, ret;

	FIND_NODES_OR_SKIP(minors, n);
	for (i = 0; i < n; i++) {
		struct drm_vtpu_query q;

		ret = open_and_query(minors[i], &q);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: QUERY failed: %s",
					 minors[i], strerror(-ret));
		EXPECT_LE(q.hbm_free, q.hbm_total)
			TH_LOG("accel%d: more HBM free than exists", minors[i]);
		EXPECT_LE(q.hbm_largest_free, q.hbm_free)
			TH_LOG("accel%d: largest free range exceeds free HBM",
			       minors[i]);
		EXPECT_EQ(0ULL, q.hbm_free % vtpu_page_size())
			TH_LOG("accel%d: hbm_free not page aligned", minors[i]);
		EXPECT_EQ(0ULL, q.hbm_largest_free % vtpu_page_size())
			TH_LOG("accel%d: hbm_largest_free not page aligned",
			       minors[i]);
		EXPECT_EQ(0ULL, q.host_bytes % vtpu_page_size())
			TH_LOG("accel%d: host_bytes not page aligned",
			       minors[i]);
	}
}

TEST(device_indexes_are_distinct_and_dense)
{
	int minors[VTPU_MAX_NODES];
	bool seen[VTPU_MAX_NODES] = { false };
	int i, n, ret;

	FIND_NODES_OR_SKIP(minors, n);
	for (i = 0; i < n; i++) {
		struct drm_vtpu_query q;

		ret = open_and_query(minors[i], &q);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: QUERY failed: %s",
					 minors[i], strerror(-ret));
		ASSERT_GT((__u32)n, q.device_index)
			TH_LOG("accel%d: device_index %u out of 0..%d",
			       minors[i], q.device_index, n - 1);
		EXPECT_FALSE(seen[q.device_index])
			TH_LOG("accel%d: device_index %u used twice",
			       minors[i], q.device_index);
		seen[q.device_index] = true;
	}
}

/* The figures fixed at load time: hbm_total, cores, vmem_size. */
TEST(sysfs_fixed_attributes_agree_with_query)
{
	int minors[VTPU_MAX_NODES];
	int i, n, ret;

	FIND_NODES_OR_SKIP(minors, n);
	for (i = 0; i < n; i++) {
		struct drm_vtpu_query q;
		__u64 hbm_total = 0, cores = 0, vmem = 0;

		ret = open_and_query(minors[i], &q);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: QUERY failed: %s",
					 minors[i], strerror(-ret));
		ret = vtpu_sysfs_u64(minors[i], "hbm_total", &hbm_total);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: sysfs hbm_total: %s",
					 minors[i], strerror(-ret));
		ret = vtpu_sysfs_u64(minors[i], "cores", &cores);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: sysfs cores: %s",
					 minors[i], strerror(-ret));
		ret = vtpu_sysfs_u64(minors[i], "vmem_size", &vmem);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: sysfs vmem_size: %s",
					 minors[i], strerror(-ret));
		EXPECT_EQ(q.hbm_total, hbm_total)
			TH_LOG("accel%d: hbm_total", minors[i]);
		EXPECT_EQ(q.core_count, cores)
			TH_LOG("accel%d: cores", minors[i]);
		EXPECT_EQ(q.vmem_size, vmem)
			TH_LOG("accel%d: vmem_size", minors[i]);
	}
}

/* Snapshot figures; nothing else allocates while the tests run. */
TEST(sysfs_memory_attributes_agree_with_query)
{
	int minors[VTPU_MAX_NODES];
	int i, n, ret;

	FIND_NODES_OR_SKIP(minors, n);
	for (i = 0; i < n; i++) {
		struct drm_vtpu_query q;
		__u64 used = 0, largest = 0, host = 0;

		ret = open_and_query(minors[i], &q);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: QUERY failed: %s",
					 minors[i], strerror(-ret));
		ret = vtpu_sysfs_u64(minors[i], "hbm_used", &used);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: sysfs hbm_used: %s",
					 minors[i], strerror(-ret));
		ret = vtpu_sysfs_u64(minors[i], "hbm_largest_free", &largest);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: sysfs hbm_largest_free: %s",
					 minors[i], strerror(-ret));
		ret = vtpu_sysfs_u64(minors[i], "host_bytes", &host);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: sysfs host_bytes: %s",
					 minors[i], strerror(-ret));
		EXPECT_EQ(q.hbm_total - q.hbm_free, used)
			TH_LOG("accel%d: hbm_used", minors[i]);
		EXPECT_EQ(q.hbm_largest_free, largest)
			TH_LOG("accel%d: hbm_largest_free", minors[i]);
		EXPECT_EQ(q.host_bytes, host)
			TH_LOG("accel%d: host_bytes", minors[i]);
	}
}

TEST_HARNESS_MAIN
