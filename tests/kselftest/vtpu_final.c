// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: after every other test program has exited, no buffer
 * object is alive on any device and all memory is free again. run.sh
 * runs *_final binaries last; alone, it checks an idle system.
 */
#include "vtpu_test.h"

TEST(no_live_bos_in_debugfs)
{
	int minors[VTPU_MAX_NODES];
	struct vtpu_bo_counts total;
	int i, n, ret;

	n = vtpu_find_minors(minors, VTPU_MAX_NODES);
	if (n <= 0)
		SKIP(return, "no vtpu accel node (is vtpu.ko loaded?)");
	for (i = 0; i < n; i++) {
		struct vtpu_bo_counts c;

		ret = vtpu_debugfs_counts(minors[i], &c);
		if (ret == -ENODEV)
			SKIP(return, "debugfs is not mounted");
		ASSERT_EQ(0, ret) TH_LOG("debugfs bos of accel%d: %s",
					 minors[i], strerror(-ret));
		EXPECT_EQ(0ULL, c.hbm_bos)
			TH_LOG("accel%d: %llu HBM BOs (%llu bytes) still live",
			       minors[i], (unsigned long long)c.hbm_bos,
			       (unsigned long long)c.hbm_bytes);
		EXPECT_EQ(0ULL, c.host_bos)
			TH_LOG("accel%d: %llu HOST BOs (%llu bytes) still live",
			       minors[i], (unsigned long long)c.host_bos,
			       (unsigned long long)c.host_bytes);
		EXPECT_EQ(0ULL, c.hbm_bytes);
		EXPECT_EQ(0ULL, c.host_bytes);
	}
	ASSERT_EQ(0, vtpu_debugfs_total(&total));
	EXPECT_EQ(0ULL, total.hbm_bos + total.host_bos)
		TH_LOG("live BOs over all devices");
}

TEST(all_device_memory_is_free)
{
	int minors[VTPU_MAX_NODES];
	int i, n, ret;

	n = vtpu_find_minors(minors, VTPU_MAX_NODES);
	if (n <= 0)
		SKIP(return, "no vtpu accel node (is vtpu.ko loaded?)");
	for (i = 0; i < n; i++) {
		struct drm_vtpu_query q;
		__u64 used = 0;
		int fd = vtpu_open_minor(minors[i]);

		ASSERT_LE(0, fd) TH_LOG("open accel%d: %s", minors[i],
					strerror(-fd));
		ret = vtpu_query(fd, &q);
		close(fd);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: QUERY: %s", minors[i],
					 strerror(-ret));
		EXPECT_EQ(q.hbm_total, q.hbm_free)
			TH_LOG("accel%d: HBM still in use", minors[i]);
		EXPECT_EQ(q.hbm_total, q.hbm_largest_free)
			TH_LOG("accel%d: free HBM did not merge into one range",
			       minors[i]);
		EXPECT_EQ(0ULL, q.host_bytes)
			TH_LOG("accel%d: backing store still in use", minors[i]);
		ret = vtpu_sysfs_u64(minors[i], "hbm_used", &used);
		ASSERT_EQ(0, ret) TH_LOG("accel%d: sysfs hbm_used: %s",
					 minors[i], strerror(-ret));
		EXPECT_EQ(0ULL, used) TH_LOG("accel%d: sysfs hbm_used",
					     minors[i]);
	}
}

TEST_HARNESS_MAIN
