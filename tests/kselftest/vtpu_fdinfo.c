// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: fdinfo reports each open file's memory per placement
 * (drm-memory-hbm, drm-memory-host) and identifies the driver, as
 * Documentation/gpu/drm-usage-stats.rst describes.
 */
#include "vtpu_test.h"

#include "kselftest_harness.h"

/* The value of "key:\t<n> KiB" in /proc/self/fdinfo/<fd>, in bytes. */
static long long fdinfo_kib(int fd, const char *key)
{
	char path[64], line[256], unit[8];
	long long v = -1, n;
	size_t len = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, len) || line[len] != ':')
			continue;
		if (sscanf(line + len + 1, "%lld %7s", &n, unit) == 2 &&
		    !strcmp(unit, "KiB"))
			v = n * 1024;
		break;
	}
	fclose(f);
	return v;
}

static bool fdinfo_has(int fd, const char *text)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, text);
	fclose(f);
	return found;
}

TEST(fdinfo_names_the_driver)
{
	int fd = vtpu_open(0);

	ASSERT_LE(0, fd);
	EXPECT_TRUE(fdinfo_has(fd, "drm-driver:\tvtpu"));
	EXPECT_TRUE(fdinfo_has(fd, "drm-client-id:"));
	close(fd);
}

TEST(fdinfo_counts_memory_per_placement_and_per_file)
{
	struct drm_vtpu_bo_create b1, b2, b3;
	int fd = vtpu_open(0), other = vtpu_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, other);
	EXPECT_EQ(0, fdinfo_kib(fd, "drm-memory-hbm"));
	EXPECT_EQ(0, fdinfo_kib(fd, "drm-memory-host"));

	ASSERT_EQ(0, vtpu_bo_create(fd, 3 * MiB, DRM_VTPU_PLACEMENT_HBM, &b1));
	ASSERT_EQ(0, vtpu_bo_create(fd, 5 * MiB, DRM_VTPU_PLACEMENT_HOST, &b2));
	ASSERT_EQ(0, vtpu_bo_create(other, 1 * MiB, DRM_VTPU_PLACEMENT_HOST,
				    &b3));
	EXPECT_EQ((long long)(3 * MiB), fdinfo_kib(fd, "drm-memory-hbm"));
	EXPECT_EQ((long long)(5 * MiB), fdinfo_kib(fd, "drm-memory-host"));
	/* The other file sees only its own buffer. */
	EXPECT_EQ(0, fdinfo_kib(other, "drm-memory-hbm"));
	EXPECT_EQ((long long)(1 * MiB), fdinfo_kib(other, "drm-memory-host"));

	ASSERT_EQ(0, vtpu_bo_close(fd, b1.handle));
	EXPECT_EQ(0, fdinfo_kib(fd, "drm-memory-hbm"));
	EXPECT_EQ((long long)(5 * MiB), fdinfo_kib(fd, "drm-memory-host"));
	ASSERT_EQ(0, vtpu_bo_close(fd, b2.handle));
	EXPECT_EQ(0, fdinfo_kib(fd, "drm-memory-host"));
	close(other);
	close(fd);
}

TEST_HARNESS_MAIN
