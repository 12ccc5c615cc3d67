/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the vtpu kselftests.
 *
 * Every helper returns 0 or a negative errno and leaves the global errno
 * alone for the caller to ignore; the tests compare the returned value
 * against the errno the uAPI header documents.
 *
 * A "vtpu node" is a /dev/accel/accelN whose DRM_IOCTL_VERSION name is
 * "vtpu". Nodes are numbered 0..n-1 in ascending minor order; that number
 * is what vtpu_open() takes. It need not equal drm_vtpu_query.device_index
 * (the enumeration tests check the latter separately).
 */
#ifndef VTPU_TEST_H
#define VTPU_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <xf86drm.h>
#include <drm/vtpu_accel.h>

/*
 * The 6.12 harness is not -Wextra clean: __timeout_handler() and the
 * wrapper TEST() generates leave parameters unused, and the latter is
 * expanded in our own files, so a push/pop around the include is not
 * enough.
 */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#define VTPU_MAX_NODES		64
#define MiB			(1024ULL * 1024ULL)

/* Module parameters the test VM loads vtpu.ko with, unless overridden. */
#define VTPU_DEFAULT_NUM_DEVICES	2
#define VTPU_DEFAULT_NUM_CORES		2
#define VTPU_DEFAULT_HBM_MIB		32
#define VTPU_DEFAULT_VMEM_KIB		1024

#define VTPU_DEBUGFS_ROOT	"/sys/kernel/debug/accel"

/* What the loaded module was told to create, in the units of the uAPI. */
struct vtpu_params {
	unsigned int num_devices;
	unsigned int num_cores;
	__u64 hbm_bytes;
	__u64 vmem_bytes;
};

/* Live buffer objects of one device (or of all), from debugfs "bos". */
struct vtpu_bo_counts {
	__u64 hbm_bos;
	__u64 hbm_bytes;
	__u64 host_bos;
	__u64 host_bytes;
};

/* What a rejected ioctl must leave untouched. */
struct vtpu_state {
	__u64 hbm_free;
	__u64 hbm_largest_free;
	__u64 host_bytes;
	bool have_counts;	/* false when debugfs is not mounted */
	struct vtpu_bo_counts counts;
};

static inline __u64 vtpu_page_size(void)
{
	return (__u64)sysconf(_SC_PAGESIZE);
}

static inline __u64 vtpu_page_align(__u64 size)
{
	__u64 page = vtpu_page_size();

	return (size + page - 1) & ~(page - 1);
}

static inline unsigned long vtpu_env_ulong(const char *name,
					   unsigned long fallback)
{
	const char *s = getenv(name);
	unsigned long v;
	char *end;

	if (!s || !*s)
		return fallback;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end)
		return fallback;
	return v;
}

static inline void vtpu_params_get(struct vtpu_params *p)
{
	p->num_devices = vtpu_env_ulong("VTPU_NUM_DEVICES",
					VTPU_DEFAULT_NUM_DEVICES);
	p->num_cores = vtpu_env_ulong("VTPU_NUM_CORES",
				      VTPU_DEFAULT_NUM_CORES);
	p->hbm_bytes = (__u64)vtpu_env_ulong("VTPU_HBM_MIB",
					     VTPU_DEFAULT_HBM_MIB) * MiB;
	p->vmem_bytes = (__u64)vtpu_env_ulong("VTPU_VMEM_KIB",
					      VTPU_DEFAULT_VMEM_KIB) * 1024;
}

static inline int vtpu_ioctl(int fd, unsigned long request, void *arg)
{
	return drmIoctl(fd, request, arg) ? -errno : 0;
}

/* True when @fd is a DRM file whose driver is called "vtpu". */
static inline bool vtpu_fd_is_vtpu(int fd)
{
	drmVersionPtr v = drmGetVersion(fd);
	bool ret;

	if (!v)
		return false;
	ret = v->name && !strcmp(v->name, "vtpu");
	drmFreeVersion(v);
	return ret;
}

/* The accel minor behind an open node, or -errno. */
static inline int vtpu_minor(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -ENOTTY;
	return (int)minor(st.st_rdev);
}

static inline int vtpu_open_minor(int minor)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/accel/accel%d", minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static inline int vtpu_cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/*
 * Fill @minors with the minors of all vtpu nodes, ascending. Returns how
 * many there are, or -errno when /dev/accel cannot be read.
 */
static inline int vtpu_find_minors(int *minors, int max)
{
	struct dirent *de;
	int n = 0;
	DIR *dir;

	dir = opendir("/dev/accel");
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(dir))) {
		int minor, fd;
		char tail;

		if (sscanf(de->d_name, "accel%d%c", &minor, &tail) != 1)
			continue;
		fd = vtpu_open_minor(minor);
		if (fd < 0)
			continue;
		if (vtpu_fd_is_vtpu(fd) && n < max)
			minors[n++] = minor;
		close(fd);
	}
	closedir(dir);
	qsort(minors, n, sizeof(*minors), vtpu_cmp_int);
	return n;
}

/* Open the @n-th vtpu node: an fd, or -ENODEV when there is none. */
static inline int vtpu_open(int n)
{
	int minors[VTPU_MAX_NODES];
	int count = vtpu_find_minors(minors, VTPU_MAX_NODES);

	if (count < 0)
		return count;
	if (n < 0 || n >= count)
		return -ENODEV;
	return vtpu_open_minor(minors[n]);
}

static inline int vtpu_query(int fd, struct drm_vtpu_query *q)
{
	memset(q, 0, sizeof(*q));
	return vtpu_ioctl(fd, DRM_IOCTL_VTPU_QUERY, q);
}

/* Create a BO; @out (may be NULL) receives the whole reply. */
static inline int vtpu_bo_create(int fd, __u64 size, __u32 placement,
				 struct drm_vtpu_bo_create *out)
{
	struct drm_vtpu_bo_create c = {
		.size = size,
		.placement = placement,
	};
	int ret = vtpu_ioctl(fd, DRM_IOCTL_VTPU_BO_CREATE, &c);

	if (out)
		*out = c;
	return ret;
}

static inline int vtpu_bo_info(int fd, __u32 handle,
			       struct drm_vtpu_bo_info *out)
{
	memset(out, 0, sizeof(*out));
	out->handle = handle;
	return vtpu_ioctl(fd, DRM_IOCTL_VTPU_BO_INFO, out);
}

static inline int vtpu_bo_close(int fd, __u32 handle)
{
	struct drm_gem_close c = { .handle = handle };

	return vtpu_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
}

/*
 * Map @len bytes of a BO through BO_INFO's mmap_offset on @fd. Returns
 * MAP_FAILED with errno set on failure, like mmap().
 */
static inline void *vtpu_bo_mmap(int fd, __u32 handle, size_t len)
{
	struct drm_vtpu_bo_info info;
	int ret = vtpu_bo_info(fd, handle, &info);

	if (ret) {
		errno = -ret;
		return MAP_FAILED;
	}
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)info.mmap_offset);
}

/* mmap() at a raw offset; 0 or -errno (the mapping is dropped at once). */
static inline int vtpu_try_mmap(int fd, __u64 offset, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)offset);

	if (p == MAP_FAILED)
		return -errno;
	munmap(p, len);
	return 0;
}

/* True when all @len bytes at @p equal @byte. */
static inline bool vtpu_mem_is(const void *p, int byte, size_t len)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (c[i] != (unsigned char)byte)
			return false;
	return true;
}

/* A pattern no page of zeros or of one repeated byte can match. */
static inline void vtpu_fill_pattern(void *p, size_t len, __u32 seed)
{
	__u32 *w = p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		w[i] = seed ^ (__u32)(i * 2654435761u);
}

static inline bool vtpu_check_pattern(const void *p, size_t len, __u32 seed)
{
	const __u32 *w = p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i] != (seed ^ (__u32)(i * 2654435761u)))
			return false;
	return true;
}

/* The number after "@key:" in /proc/self/fdinfo/@fd, or -1. */
static inline long long vtpu_fdinfo_value(int fd, const char *key)
{
	char path[64], line[256];
	size_t len = strlen(key);
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':') {
			v = strtoll(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Read /sys/class/accel/accel<minor>/device/<attr> as a decimal number. */
static inline int vtpu_sysfs_u64(int minor, const char *attr, __u64 *val)
{
	char path[128], buf[64], *end;
	unsigned long long v;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/%s",
		 minor, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0)
		return -errno;
	buf[len] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end != '\n' && *end != '\0'))
		return -EINVAL;
	*val = v;
	return 0;
}

/*
 * The debugfs directory of a DRM accel device is named after
 * drm_device.unique, which 6.12 sets to the parent device's name
 * (drm_dev_init(): dev_name(parent)), i.e. the name /device points to.
 * Older kernels used the minor number; try that second.
 */
static inline int vtpu_debugfs_path(int minor, const char *file,
				    char *path, size_t size)
{
	char link[PATH_MAX], target[PATH_MAX];
	ssize_t len;

	snprintf(link, sizeof(link), "/sys/class/accel/accel%d/device",
		 minor);
	len = readlink(link, target, sizeof(target) - 1);
	if (len > 0) {
		target[len] = '\0';
		snprintf(path, size, VTPU_DEBUGFS_ROOT "/%s/%s",
			 basename(target), file);
		if (!access(path, F_OK))
			return 0;
	}
	snprintf(path, size, VTPU_DEBUGFS_ROOT "/%d/%s", minor, file);
	if (!access(path, F_OK))
		return 0;
	/* No accel directory at all: debugfs is not mounted. */
	return access(VTPU_DEBUGFS_ROOT, F_OK) ? -ENODEV : -ENOENT;
}

/*
 * Live BOs of one device from debugfs. -ENODEV: debugfs is not mounted
 * (skip); -ENOENT: mounted but the device has no "bos" file (a failure);
 * -EPROTO: the file lacks a "hbm:" or "host:" summary line.
 */
static inline int vtpu_debugfs_counts(int minor, struct vtpu_bo_counts *c)
{
	bool have_hbm = false, have_host = false;
	char path[PATH_MAX], line[256];
	FILE *f;
	int ret;

	ret = vtpu_debugfs_path(minor, "bos", path, sizeof(path));
	if (ret)
		return ret;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(c, 0, sizeof(*c));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long n, b;

		if (sscanf(line, "hbm: %llu bos, %llu bytes", &n, &b) == 2) {
			c->hbm_bos = n;
			c->hbm_bytes = b;
			have_hbm = true;
		} else if (sscanf(line, "host: %llu bos, %llu bytes",
				  &n, &b) == 2) {
			c->host_bos = n;
			c->host_bytes = b;
			have_host = true;
		}
	}
	fclose(f);
	return have_hbm && have_host ? 0 : -EPROTO;
}

/* Live BOs summed over every vtpu device: the module-wide count. */
static inline int vtpu_debugfs_total(struct vtpu_bo_counts *total)
{
	int minors[VTPU_MAX_NODES];
	int i, n, ret;

	n = vtpu_find_minors(minors, VTPU_MAX_NODES);
	if (n < 0)
		return n;
	memset(total, 0, sizeof(*total));
	for (i = 0; i < n; i++) {
		struct vtpu_bo_counts c;

		ret = vtpu_debugfs_counts(minors[i], &c);
		if (ret)
			return ret;
		total->hbm_bos += c.hbm_bos;
		total->hbm_bytes += c.hbm_bytes;
		total->host_bos += c.host_bos;
		total->host_bytes += c.host_bytes;
	}
	return 0;
}

static inline int vtpu_state_get(int fd, struct vtpu_state *s)
{
	struct drm_vtpu_query q;
	int ret, minor;

	memset(s, 0, sizeof(*s));
	ret = vtpu_query(fd, &q);
	if (ret)
		return ret;
	s->hbm_free = q.hbm_free;
	s->hbm_largest_free = q.hbm_largest_free;
	s->host_bytes = q.host_bytes;

	minor = vtpu_minor(fd);
	if (minor < 0)
		return minor;
	/*
	 * Without a readable "bos" file compare the QUERY figures only; the
	 * debugfs tests report a missing or malformed file themselves.
	 */
	s->have_counts = !vtpu_debugfs_counts(minor, &s->counts);
	return 0;
}

/*
 * Fail the test unless the memory figures and the live BOs of the device
 * behind @fd are what they were in @before.
 */
#define EXPECT_STATE_UNCHANGED(fd, before) do {				\
	struct vtpu_state __now;					\
	ASSERT_EQ(0, vtpu_state_get((fd), &__now))			\
		TH_LOG("cannot read device state");			\
	EXPECT_EQ((before)->hbm_free, __now.hbm_free)			\
		TH_LOG("hbm_free changed");				\
	EXPECT_EQ((before)->hbm_largest_free, __now.hbm_largest_free)	\
		TH_LOG("hbm_largest_free changed");			\
	EXPECT_EQ((before)->host_bytes, __now.host_bytes)		\
		TH_LOG("host_bytes changed");				\
	if ((before)->have_counts && __now.have_counts) {		\
		EXPECT_EQ((before)->counts.hbm_bos, __now.counts.hbm_bos) \
			TH_LOG("debugfs: number of HBM BOs changed");	\
		EXPECT_EQ((before)->counts.host_bos, __now.counts.host_bos) \
			TH_LOG("debugfs: number of HOST BOs changed");	\
		EXPECT_EQ((before)->counts.hbm_bytes, __now.counts.hbm_bytes) \
			TH_LOG("debugfs: HBM bytes changed");		\
		EXPECT_EQ((before)->counts.host_bytes, __now.counts.host_bytes) \
			TH_LOG("debugfs: HOST bytes changed");		\
	}								\
} while (0)

#endif /* VTPU_TEST_H */
