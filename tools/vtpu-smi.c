// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu-smi - lists the vtpu devices, like nvidia-smi: driver version,
 * cores, HBM and backing-store use, busy % and jobs run per device, the
 * module parameters, and the processes using the devices with their
 * memory and time on the cores. It talks to the devices directly
 * (DRM_IOCTL_VERSION, DRM_IOCTL_VTPU_QUERY, sysfs, debugfs, and every
 * open file's fdinfo) rather than through libvtpu, so it works without
 * the runtime and never creates a buffer or submits a job.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xf86drm.h>
#include <drm/vtpu_accel.h>
#include <yajl/yajl_gen.h>

/*
 * The release, as VTPU_VERSION_MAJOR/MINOR in runtime/include/vtpu.h:
 * vtpu-smi builds against the UAPI only, so keep the two in step
 * (tests/tools/vtpu_smi.sh checks that they are).
 */
#define SMI_VERSION_MAJOR	0
#define SMI_VERSION_MINOR	1

#define ACCEL_SYSFS	"/sys/class/accel"
#define ACCEL_DEV	"/dev/accel"
#define DEBUGFS_ACCEL	"/sys/kernel/debug/accel"
#define MODULE_PARAMS	"/sys/module/vtpu/parameters"

#define MAX_DEVICES	64	/* the module allows 16 */
#define MAX_CORES	64	/* the module's num_cores limit */
#define MAX_PARAMS	32
#define MAX_PROCS	256	/* open vtpu files listed */

/* Exit statuses; the usage text lists them. */
enum {
	EXIT_OK = 0,
	EXIT_DEVICE_ERROR = 1,	/* a vtpu device could not be described */
	EXIT_USAGE = 2,
	EXIT_NO_DEVICE = 3,	/* no vtpu device, or none with --id */
};

static const char usage[] =
"usage: vtpu-smi [OPTIONS]\n"
"\n"
"Lists the vtpu devices (/dev/accel/accelN driven by vtpu.ko): driver\n"
"version, cores, HBM used/total and largest free block, backing store in\n"
"use, busy % and jobs run, and the module parameters; then the processes\n"
"with a device open: their HBM and backing store, busy % and time on the\n"
"cores (from fdinfo; other users' processes need root).\n"
"\n"
"  -i, --id N         only device N (its index: the dev column)\n"
"  -l, --loop SEC     report every SEC seconds (0.1..86400) until interrupted\n"
"  -c, --count N      stop after N reports (without -l: every second)\n"
"      --interval MS  busy % sampling window, 1..60000 ms (default 200)\n"
"  -j, --json         print JSON instead of a table (one document a report)\n"
"  -v, --verbose      per-core counters; say why a figure is missing\n"
"  -V, --version      print vtpu-smi's version\n"
"  -h, --help         this text\n"
"\n"
"-i used to be the sampling window: that is --interval only now, and\n"
"-i selects a device, as in nvidia-smi.\n"
"\n"
"Busy % is the time the cores spent executing jobs during the window,\n"
"running jobs included, over cores * window: for a device from its sysfs\n"
"busy_ns (any user may read it; with an older module that lacks it, from\n"
"debugfs), for a process from its files' drm-engine-vtpu (fdinfo). Jobs\n"
"run, timeouts and the per-core figures (--verbose) come from debugfs\n"
"(/sys/kernel/debug/accel/vtpu.N/cores), which needs root and a mounted\n"
"debugfs; without it they print \"-\".\n"
"\n"
"exit status: 0 success, 1 a vtpu device could not be read, 2 usage\n"
"error, 3 no vtpu device (or none with the index given to --id).\n"
"\n"
"examples:\n"
"  vtpu-smi\n"
"  sudo vtpu-smi --verbose --interval 1000\n"
"  vtpu-smi --id 0 --loop 1\n"
"  vtpu-smi --json | jq '.devices[].hbm_used'\n";

struct opts {
	bool json, verbose;
	long interval_ms;
	long id;		/* device index to show; -1: all */
	double loop_s;		/* report period; 0: report once */
	long count;		/* reports to print; 0: until interrupted */
};

/* One core's debugfs counters. */
struct core_stat {
	long long jobs, timeouts, busy_ns;
};

/* One sample of a device's debugfs "cores" file, and when it was taken. */
struct core_sample {
	int ncores;
	long long jobs_alive;
	uint64_t t_ns;
	struct core_stat core[MAX_CORES];
};

struct device {
	int minor;
	char node[64];
	char bus_id[64];	/* the platform device's name, e.g. vtpu.0 */
	struct drm_vtpu_query q;
	bool have_query;
	long long free_blocks;	/* sysfs only; -1 if unreadable */
	bool have_stats;	/* both debugfs samples were read */
	char stats_why[160];	/* why not, for --verbose and JSON */
	struct core_sample s0, s1;
	bool have_busy;		/* both sysfs busy_ns samples were read */
	char busy_why[160];	/* why not, for --verbose */
	uint64_t busy0, busy1;	/* sysfs busy_ns (ns, summed over cores) */
	uint64_t busy_t0, busy_t1;	/* when they were read */
};

struct driver_version {
	int major, minor, patch;
	char date[32], desc[128];
	bool known;
};

struct param {
	char name[64], value[64];
};

/* One open vtpu file (a DRM client) and the process holding it. */
struct proc {
	int pid;
	char comm[32];
	int minor;
	long long client;	/* drm-client-id */
	int fds;		/* fds of the process on this client */
	uint64_t hbm, host;	/* bytes, from the last scan */
	long long engine[2];	/* drm-engine-vtpu (ns) per scan; -1 unseen */
};

struct state {
	struct driver_version ver;
	struct device dev[MAX_DEVICES];
	int ndev;
	struct param param[MAX_PARAMS];
	int nparam;
	int errors;		/* devices we could not describe */
	struct proc proc[MAX_PROCS];
	int nproc;
	uint64_t proc_t[2];	/* when each scan ran */
	bool proc_partial;	/* some processes' fdinfo was unreadable */
};

/* Set by SIGINT and SIGTERM: --loop finishes the report and stops. */
static volatile sig_atomic_t stop;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Reads a small text file into buf, stripped of its trailing newline. */
static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static long long read_sysfs_ll(int minor, const char *attr)
{
	char path[128], buf[64];
	char *end;
	long long v;

	snprintf(path, sizeof(path), ACCEL_SYSFS "/accel%d/device/%s",
		 minor, attr);
	if (read_text(path, buf, sizeof(buf)))
		return -1;
	errno = 0;
	v = strtoll(buf, &end, 10);
	return errno || end == buf ? -1 : v;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/*
 * The accel minors present, ascending. libdrm's device listing skips
 * accel nodes, so read the class directory.
 */
static int accel_minors(int *out, int max)
{
	struct dirent *de;
	DIR *dir = opendir(ACCEL_SYSFS);
	int n = 0;

	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		char *end;
		long v;

		if (strncmp(de->d_name, "accel", 5) || !de->d_name[5])
			continue;
		v = strtol(de->d_name + 5, &end, 10);
		if (*end || v < 0 || v > 0xfffff)
			continue;
		out[n++] = (int)v;
	}
	closedir(dir);
	qsort(out, (size_t)n, sizeof(*out), cmp_int);
	return n;
}

/*
 * Is this file a vtpu? Other accel drivers (ivpu, habanalabs, ...) share
 * /dev/accel, so the DRM driver name decides. Records the version, which
 * is the module's and so the same on every device.
 */
static bool is_vtpu(int fd, struct driver_version *ver)
{
	drmVersionPtr v = drmGetVersion(fd);
	bool ok;

	if (!v)
		return false;
	ok = v->name && !strcmp(v->name, "vtpu");
	if (ok && !ver->known) {
		ver->major = v->version_major;
		ver->minor = v->version_minor;
		ver->patch = v->version_patchlevel;
		snprintf(ver->date, sizeof(ver->date), "%s",
			 v->date ? v->date : "");
		snprintf(ver->desc, sizeof(ver->desc), "%s",
			 v->desc ? v->desc : "");
		ver->known = true;
	}
	drmFreeVersion(v);
	return ok;
}

/* The debugfs directory is named after the device (dev->unique). */
static void read_bus_id(struct device *d)
{
	char link[128], target[PATH_MAX];
	ssize_t n;
	const char *base;

	snprintf(link, sizeof(link), ACCEL_SYSFS "/accel%d/device", d->minor);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0) {
		snprintf(d->bus_id, sizeof(d->bus_id), "vtpu.%u",
			 d->q.device_index);
		return;
	}
	target[n] = '\0';
	base = strrchr(target, '/');
	snprintf(d->bus_id, sizeof(d->bus_id), "%.63s",
		 base ? base + 1 : target);
}

/*
 * QUERY failed (an old or broken module): sysfs has the same figures, if
 * not as one snapshot.
 */
static bool query_from_sysfs(struct device *d)
{
	long long total = read_sysfs_ll(d->minor, "hbm_total");
	long long used = read_sysfs_ll(d->minor, "hbm_used");
	long long largest = read_sysfs_ll(d->minor, "hbm_largest_free");
	long long host = read_sysfs_ll(d->minor, "host_bytes");
	long long cores = read_sysfs_ll(d->minor, "cores");
	long long vmem = read_sysfs_ll(d->minor, "vmem_size");

	if (total < 0 || used < 0 || largest < 0 || host < 0 || cores < 0 ||
	    vmem < 0)
		return false;
	d->q.hbm_total = (uint64_t)total;
	d->q.hbm_free = (uint64_t)(total - used);
	d->q.hbm_largest_free = (uint64_t)largest;
	d->q.host_bytes = (uint64_t)host;
	d->q.core_count = (uint32_t)cores;
	d->q.vmem_size = (uint64_t)vmem;
	return true;
}

/*
 * Opens accelN: 1 if it is a vtpu and d is filled, 0 if it is another
 * driver's, -errno if it cannot be opened or described.
 */
static int probe_device(struct state *st, struct device *d, int minor)
{
	int fd, err = 0;

	memset(d, 0, sizeof(*d));
	d->minor = minor;
	snprintf(d->node, sizeof(d->node), ACCEL_DEV "/accel%d", minor);
	fd = open(d->node, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!is_vtpu(fd, &st->ver)) {
		close(fd);
		return 0;
	}
	/* drmIoctl() restarts on EINTR and EAGAIN. */
	if (drmIoctl(fd, DRM_IOCTL_VTPU_QUERY, &d->q))
		err = -errno;
	close(fd);
	d->have_query = !err;
	if (err && !query_from_sysfs(d))
		return err;
	/* Only sysfs knows how fragmented HBM is. */
	d->free_blocks = read_sysfs_ll(minor, "hbm_free_blocks");
	read_bus_id(d);
	return 1;
}

static void probe_all(struct state *st)
{
	int minors[MAX_DEVICES];
	int n = accel_minors(minors, MAX_DEVICES);

	for (int i = 0; i < n; i++) {
		struct device *d = &st->dev[st->ndev];
		int ret = probe_device(st, d, minors[i]);

		if (ret == 0)
			continue;
		if (ret > 0) {
			st->ndev++;
			continue;
		}
		st->errors++;
		if (ret == -EACCES || ret == -EPERM)
			fprintf(stderr, "vtpu-smi: %s: %s (run as root, or join the group owning it: ls -l %s)\n",
				d->node, strerror(-ret), d->node);
		else
			fprintf(stderr, "vtpu-smi: %s: %s (check dmesg for vtpu errors)\n",
				d->node, strerror(-ret));
	}
}

static int cmp_param(const void *a, const void *b)
{
	return strcmp(((const struct param *)a)->name,
		      ((const struct param *)b)->name);
}

/* Reads every file of /sys/module/vtpu/parameters, sorted by name. */
static void read_params(struct state *st)
{
	DIR *dir = opendir(MODULE_PARAMS);
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir)) && st->nparam < MAX_PARAMS) {
		struct param *p = &st->param[st->nparam];
		char path[sizeof(MODULE_PARAMS) + 300];

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), MODULE_PARAMS "/%s", de->d_name);
		snprintf(p->name, sizeof(p->name), "%.63s", de->d_name);
		if (read_text(path, p->value, sizeof(p->value)))
			snprintf(p->value, sizeof(p->value), "?");
		st->nparam++;
	}
	closedir(dir);
	qsort(st->param, (size_t)st->nparam, sizeof(*st->param), cmp_param);
}

/* A readable reason for a debugfs failure, with what to do about it. */
static void stats_reason(struct device *d, int err, const char *path)
{
	const char *why;

	if (err == -EACCES || err == -EPERM)
		why = "debugfs is root-only: run vtpu-smi as root";
	else if (err == -ENOENT && access(DEBUGFS_ACCEL, F_OK))
		why = "debugfs not mounted: mount -t debugfs none /sys/kernel/debug";
	else if (err == -EINVAL)
		why = "unexpected format";
	else
		why = strerror(-err);
	snprintf(d->stats_why, sizeof(d->stats_why), "%s: %s", path, why);
}

/* Parses one "cores" file: "jobs alive: A", then "core N: jobs J ...". */
static int parse_cores(FILE *f, struct core_sample *s)
{
	char line[256];

	s->ncores = 0;
	s->jobs_alive = -1;
	while (fgets(line, sizeof(line), f)) {
		struct core_stat c;
		unsigned int idx;

		if (sscanf(line, "jobs alive: %lld", &s->jobs_alive) == 1)
			continue;
		if (sscanf(line, "core %u: jobs %lld timeouts %lld busy_ns %lld",
			   &idx, &c.jobs, &c.timeouts, &c.busy_ns) != 4)
			continue;
		if (idx != (unsigned int)s->ncores || idx >= MAX_CORES)
			return -EINVAL;
		s->core[s->ncores++] = c;
	}
	return s->ncores ? 0 : -EINVAL;
}

static int sample_cores(struct device *d, struct core_sample *s)
{
	char path[160];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), DEBUGFS_ACCEL "/%s/cores", d->bus_id);
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		stats_reason(d, ret, path);
		return ret;
	}
	s->t_ns = mono_ns();
	ret = parse_cores(f, s);
	fclose(f);
	if (ret)
		stats_reason(d, ret, path);
	return ret;
}

/* ---- busy time -------------------------------------------------------- */

/*
 * The device's busy time from sysfs: busy_ns, the time its cores have
 * executed jobs, summed over them, the running jobs up to the moment of
 * the read; it never goes back. Modules before it have debugfs only.
 */
static int sample_busy(struct device *d, uint64_t *busy, uint64_t *t_ns)
{
	char path[128], buf[64];
	unsigned long long v;
	char *end;
	int ret;

	snprintf(path, sizeof(path), ACCEL_SYSFS "/accel%d/device/busy_ns",
		 d->minor);
	*t_ns = mono_ns();
	ret = read_text(path, buf, sizeof(buf));
	if (ret) {
		snprintf(d->busy_why, sizeof(d->busy_why), "%s: %s%s", path,
			 strerror(-ret),
			 ret == -ENOENT ? " (a module older than busy_ns)" : "");
		return ret;
	}
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || *end) {
		snprintf(d->busy_why, sizeof(d->busy_why),
			 "%s: unexpected format", path);
		return -EINVAL;
	}
	*busy = v;
	return 0;
}

/* Sleeps until @end (CLOCK_MONOTONIC ns), or until a signal stops us. */
static void sleep_until(uint64_t end)
{
	uint64_t now;

	while (!stop && (now = mono_ns()) < end) {
		uint64_t left = end - now;
		struct timespec ts = {
			.tv_sec = (time_t)(left / 1000000000ULL),
			.tv_nsec = (long)(left % 1000000000ULL),
		};

		nanosleep(&ts, NULL);	/* EINTR: the loop sleeps on */
	}
}

/*
 * Two samples per device, interval_ms apart, of sysfs busy_ns and of
 * debugfs "cores": both only grow and count the running jobs, so the
 * difference over the elapsed time is how busy the cores were. One
 * window covers every device.
 */
static void sample_all(struct state *st, long interval_ms)
{
	for (int i = 0; i < st->ndev; i++) {
		struct device *d = &st->dev[i];

		d->have_busy = !sample_busy(d, &d->busy0, &d->busy_t0);
		sample_cores(d, &d->s0);
	}
	/* Processes' busy % needs the window even without a device figure. */
	if (!st->ndev)
		return;
	sleep_until(mono_ns() + (uint64_t)interval_ms * 1000000ULL);
	for (int i = 0; i < st->ndev; i++) {
		struct device *d = &st->dev[i];

		if (d->have_busy)
			d->have_busy = !sample_busy(d, &d->busy1, &d->busy_t1);
		if (d->stats_why[0])
			continue;
		if (sample_cores(d, &d->s1))
			continue;
		/* Cannot happen while the module stays loaded; be safe. */
		if (d->s1.ncores != d->s0.ncores) {
			snprintf(d->stats_why, sizeof(d->stats_why),
				 "core count changed between samples");
			continue;
		}
		d->have_stats = true;
	}
}

/*
 * @busy ns of work over @dt ns on @n cores, in %. The reads and our
 * clock are a few µs apart, so a saturated device can come out a hair
 * over 100: clamp.
 */
static double pct_of(long long busy, uint64_t dt, int n)
{
	double pct;

	if (!dt || n <= 0 || busy < 0)
		return 0.0;
	pct = 100.0 * (double)busy / ((double)dt * n);
	return pct > 100.0 ? 100.0 : pct;
}

/* Busy % of cores [first, first+n) over the window, from debugfs. */
static double busy_pct(const struct device *d, int first, int n)
{
	long long busy = 0;

	for (int i = first; i < first + n; i++)
		busy += d->s1.core[i].busy_ns - d->s0.core[i].busy_ns;
	return pct_of(busy, d->s1.t_ns - d->s0.t_ns, n);
}

/* Is there a device busy %: from sysfs, or else debugfs? */
static bool have_device_busy(const struct device *d)
{
	return d->have_busy || d->have_stats;
}

/* Where the device's busy % comes from. */
static const char *busy_source(const struct device *d)
{
	return d->have_busy ? "sysfs" : d->have_stats ? "debugfs" : NULL;
}

/* The device's busy %: sysfs busy_ns, or the cores' debugfs busy_ns. */
static double device_busy(const struct device *d)
{
	if (d->have_busy)
		return pct_of((long long)(d->busy1 - d->busy0),
			      d->busy_t1 - d->busy_t0, (int)d->q.core_count);
	return d->have_stats ? busy_pct(d, 0, d->s1.ncores) : 0.0;
}

static long long total_jobs(const struct core_sample *s, bool timeouts)
{
	long long sum = 0;

	for (int i = 0; i < s->ncores; i++)
		sum += timeouts ? s->core[i].timeouts : s->core[i].jobs;
	return sum;
}

/* ---- processes -------------------------------------------------------- */

/* The value after "key:" in fdinfo text, or -1. */
static long long fdinfo_ll(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, key, len) && p[len] == ':')
			return strtoll(p + len + 1, NULL, 10);
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return -1;
}

static const struct device *device_of(const struct state *st, int minor)
{
	for (int i = 0; i < st->ndev; i++)
		if (st->dev[i].minor == minor)
			return &st->dev[i];
	return NULL;
}

static struct proc *find_proc(struct state *st, int minor, long long client)
{
	for (int i = 0; i < st->nproc; i++)
		if (st->proc[i].minor == minor && st->proc[i].client == client)
			return &st->proc[i];
	return NULL;
}

/* One fd of @pid: if it is a vtpu file, note its client in @pass. */
static void scan_fd(struct state *st, int pid, const char *fd, int pass)
{
	char path[96], link[PATH_MAX], text[2048];
	long long client, engine, hbm, host;
	struct proc *p;
	ssize_t n;
	int minor;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", pid, fd);
	if (read_text(path, text, sizeof(text)) ||
	    !strstr(text, "drm-driver:\tvtpu\n"))
		return;
	snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = 0;
	if (sscanf(link, ACCEL_DEV "/accel%d", &minor) != 1 ||
	    !device_of(st, minor))
		return;	/* not a device listed (--id) */
	client = fdinfo_ll(text, "drm-client-id");
	engine = fdinfo_ll(text, "drm-engine-vtpu");
	hbm = fdinfo_ll(text, "drm-memory-hbm");
	host = fdinfo_ll(text, "drm-memory-host");
	p = find_proc(st, minor, client);
	if (!p) {
		if (st->nproc == MAX_PROCS)
			return;
		p = &st->proc[st->nproc++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->minor = minor;
		p->client = client;
		p->engine[0] = p->engine[1] = -1;
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		if (read_text(path, p->comm, sizeof(p->comm)))
			snprintf(p->comm, sizeof(p->comm), "?");
		p->comm[strcspn(p->comm, "\n")] = 0;
	}
	/* A client shared by fds (dup, fork) is listed once. */
	p->fds += pass;
	p->engine[pass] = engine;
	p->hbm = hbm >= 0 ? (uint64_t)hbm * 1024 : 0;	/* KiB */
	p->host = host >= 0 ? (uint64_t)host * 1024 : 0;
}

/*
 * Every process's open vtpu files, from /proc/PID/fdinfo. Scan 0 runs
 * before the sampling window and scan 1 after it: the difference in
 * drm-engine-vtpu is each client's busy time over the window.
 */
static void scan_procs(struct state *st, int pass)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;

	st->proc_t[pass] = mono_ns();
	for (int i = 0; i < st->nproc; i++)
		st->proc[i].fds = 0;
	if (!proc)
		return;
	while ((e = readdir(proc))) {
		char path[64];
		struct dirent *f;
		DIR *fds;
		int pid = atoi(e->d_name);

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo", pid);
		fds = opendir(path);
		if (!fds) {
			st->proc_partial |= errno == EACCES;
			continue;
		}
		while ((f = readdir(fds)))
			if (f->d_name[0] != '.')
				scan_fd(st, pid, f->d_name, pass);
		closedir(fds);
	}
	closedir(proc);
	/* Clients gone by the second scan are not listed. */
	for (int i = 0; pass == 1 && i < st->nproc;)
		if (st->proc[i].engine[1] < 0)
			st->proc[i] = st->proc[--st->nproc];
		else
			i++;
}

/* A client's share of its device's cores over the window; -1: unknown. */
static double proc_busy(const struct state *st, const struct proc *p)
{
	const struct device *d = device_of(st, p->minor);
	uint64_t dt = st->proc_t[1] - st->proc_t[0];
	double pct;

	if (!d || !dt || p->engine[0] < 0 || !d->q.core_count)
		return -1;
	pct = 100.0 * (double)(p->engine[1] - p->engine[0]) /
	      ((double)dt * d->q.core_count);
	return pct < 0 ? 0 : pct > 100 ? 100 : pct;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->client < y->client ? -1 : x->client > y->client;
}

/* ---- table ------------------------------------------------------------ */

/* Bytes as "31.5 MiB": binary units, one decimal above bytes. */
static const char *fmt_size(char *buf, size_t len, uint64_t v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double x = (double)v;
	unsigned int u = 0;

	while (x >= 1024.0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		x /= 1024.0;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%llu B", (unsigned long long)v);
	else
		snprintf(buf, len, "%.1f %s", x, unit[u]);
	return buf;
}

/* Column widths of the table; the format strings below follow them. */
static const int col_width[] = { 3, 8, 7, 5, 9, 21, 19, 9, 6, 6 };

static void print_rule(void)
{
	for (size_t i = 0; i < sizeof(col_width) / sizeof(col_width[0]); i++)
		printf("+%.*s", col_width[i] + 2,
		       "------------------------------------------");
	puts("+");
}

static void print_table_head(void)
{
	print_rule();
	printf("| %-3s | %-8s | %-7s | %5s | %9s | %21s | %19s | %9s | %6s | %6s |\n",
	       "dev", "node", "bus", "cores", "VMEM/core", "HBM used / total",
	       "largest free (blks)", "backing", "busy %", "jobs");
	print_rule();
}

static void print_device_row(const struct device *d)
{
	char a[24], b[24], c[24], e[24], f[24], hbm[48], lf[48];
	char busy[16] = "-", jobs[24] = "-", blocks[24] = "?";

	snprintf(hbm, sizeof(hbm), "%s / %s",
		 fmt_size(a, sizeof(a), d->q.hbm_total - d->q.hbm_free),
		 fmt_size(b, sizeof(b), d->q.hbm_total));
	if (d->free_blocks >= 0)
		snprintf(blocks, sizeof(blocks), "%lld", d->free_blocks);
	snprintf(lf, sizeof(lf), "%s (%s)",
		 fmt_size(c, sizeof(c), d->q.hbm_largest_free), blocks);
	if (have_device_busy(d))
		snprintf(busy, sizeof(busy), "%.1f", device_busy(d));
	if (d->have_stats)
		snprintf(jobs, sizeof(jobs), "%lld", total_jobs(&d->s1, false));
	printf("| %3u | %-8s | %-7s | %5u | %9s | %21s | %19s | %9s | %6s | %6s |\n",
	       d->q.device_index, d->node + sizeof(ACCEL_DEV), d->bus_id,
	       d->q.core_count, fmt_size(e, sizeof(e), d->q.vmem_size), hbm, lf,
	       fmt_size(f, sizeof(f), d->q.host_bytes), busy, jobs);
}

/* --verbose: where busy % came from, per-core counters, or why not. */
static void print_device_detail(const struct device *d)
{
	unsigned int idx = d->q.device_index;

	if (d->have_busy)
		printf("  dev %u: busy %.1f %% (sysfs busy_ns, %.3f s in all)\n",
		       idx, device_busy(d), d->busy1 / 1e9);
	else if (d->have_stats)
		printf("  dev %u: busy %.1f %% from debugfs: no sysfs figure: %s\n",
		       idx, device_busy(d), d->busy_why);
	else
		printf("  dev %u: busy %% unavailable: %s\n", idx, d->busy_why);
	if (!d->have_stats) {
		printf("  dev %u: jobs and per-core figures unavailable: %s\n",
		       idx, d->stats_why[0] ? d->stats_why : "no second sample");
		return;
	}
	printf("  dev %u: jobs alive %lld, timeouts %lld\n", idx,
	       d->s1.jobs_alive, total_jobs(&d->s1, true));
	for (int i = 0; i < d->s1.ncores; i++)
		printf("    core %d: busy %5.1f %%  jobs %lld  timeouts %lld  busy %.3f s\n",
		       i, busy_pct(d, i, 1), d->s1.core[i].jobs,
		       d->s1.core[i].timeouts, d->s1.core[i].busy_ns / 1e9);
}

static void print_procs(const struct state *st)
{
	const char *partial = st->proc_partial ?
		" (run as root to see other users' processes)" : "";

	if (!st->nproc) {
		printf("processes: none%s\n", partial);
		return;
	}
	printf("processes%s:\n", partial);
	printf("  %7s  %-16s %3s %7s %10s %10s %7s %12s\n", "pid", "command",
	       "dev", "client", "HBM", "backing", "busy %", "engine time");
	for (int i = 0; i < st->nproc; i++) {
		const struct proc *p = &st->proc[i];
		const struct device *d = device_of(st, p->minor);
		double busy = proc_busy(st, p);
		char a[24], b[24], pct[16] = "-";

		if (busy >= 0)
			snprintf(pct, sizeof(pct), "%.1f", busy);
		printf("  %7d  %-16s %3d %7lld %10s %10s %7s %10.3f s\n", p->pid,
		       p->comm, d ? (int)d->q.device_index : -1, p->client,
		       fmt_size(a, sizeof(a), p->hbm),
		       fmt_size(b, sizeof(b), p->host), pct,
		       p->engine[1] / 1e9);
	}
}

static void print_table(const struct state *st, const struct opts *o)
{
	printf("vtpu-smi  driver vtpu %d.%d.%d  devices %d\n", st->ver.major,
	       st->ver.minor, st->ver.patch, st->ndev);
	/* Since 6.12 the DRM core reports "0" whatever the driver says. */
	if (strcmp(st->ver.date, "0") && st->ver.date[0])
		printf("driver date %s, ", st->ver.date);
	else
		fputs("driver date not reported by the kernel, ", stdout);
	printf("busy %% over %ld ms\n", o->interval_ms);
	print_table_head();
	for (int i = 0; i < st->ndev; i++)
		print_device_row(&st->dev[i]);
	print_rule();
	if (st->nparam) {
		fputs("module parameters:", stdout);
		for (int i = 0; i < st->nparam; i++)
			printf(" %s=%s", st->param[i].name, st->param[i].value);
		putchar('\n');
	}
	print_procs(st);
	if (!o->verbose)
		return;
	for (int i = 0; i < st->ndev; i++)
		print_device_detail(&st->dev[i]);
}

/* ---- JSON ------------------------------------------------------------- */

static void j_str(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void j_kv_str(yajl_gen g, const char *k, const char *v)
{
	j_str(g, k);
	j_str(g, v);
}

static void j_kv_int(yajl_gen g, const char *k, long long v)
{
	j_str(g, k);
	yajl_gen_integer(g, v);
}

/* JSON integers are signed 64-bit in yajl; byte counts fit. */
static void j_kv_u64(yajl_gen g, const char *k, uint64_t v)
{
	j_kv_int(g, k, (long long)v);
}

/*
 * One decimal, as in the table. yajl_gen_double prints %.20g (1.2 comes
 * out as 1.1999999999999999556), so format the number ourselves.
 */
static void j_pct(yajl_gen g, double v)
{
	char s[32];

	snprintf(s, sizeof(s), "%.1f", v);
	yajl_gen_number(g, s, strlen(s));
}

static void j_kv_pct(yajl_gen g, const char *k, double v)
{
	j_str(g, k);
	j_pct(g, v);
}

static void j_driver(yajl_gen g, const struct driver_version *v)
{
	char s[48];

	snprintf(s, sizeof(s), "%d.%d.%d", v->major, v->minor, v->patch);
	j_str(g, "driver");
	yajl_gen_map_open(g);
	j_kv_str(g, "name", "vtpu");
	j_kv_str(g, "version", s);
	j_kv_int(g, "major", v->major);
	j_kv_int(g, "minor", v->minor);
	j_kv_int(g, "patchlevel", v->patch);
	j_kv_str(g, "date", v->date);
	j_kv_str(g, "desc", v->desc);
	yajl_gen_map_close(g);
}

/* Parameters are numbers in vtpu; anything else stays a string. */
static void j_params(yajl_gen g, const struct state *st)
{
	j_str(g, "module_parameters");
	yajl_gen_map_open(g);
	for (int i = 0; i < st->nparam; i++) {
		const char *v = st->param[i].value;
		char *end;
		long long n;

		errno = 0;
		n = strtoll(v, &end, 10);
		if (!errno && *v && !*end)
			j_kv_int(g, st->param[i].name, n);
		else
			j_kv_str(g, st->param[i].name, v);
	}
	yajl_gen_map_close(g);
}

static void j_features(yajl_gen g, uint64_t f)
{
	static const struct { uint64_t bit; const char *name; } names[] = {
		{ DRM_VTPU_FEATURE_HBM, "hbm" },
		{ DRM_VTPU_FEATURE_HOST, "host" },
		{ DRM_VTPU_FEATURE_SUBMIT, "submit" },
		{ DRM_VTPU_FEATURE_SYNCOBJ, "syncobj" },
	};

	j_str(g, "features");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (f & names[i].bit)
			j_str(g, names[i].name);
	yajl_gen_array_close(g);
}

/* Busy figures, or nulls and the reason: a consumer must not read 0. */
static void j_stats(yajl_gen g, const struct device *d)
{
	j_str(g, "busy_percent");
	if (have_device_busy(d))
		j_pct(g, device_busy(d));
	else
		yajl_gen_null(g);
	j_str(g, "busy_source");
	if (busy_source(d))
		j_str(g, busy_source(d));
	else
		yajl_gen_null(g);
	j_str(g, "busy_ns");
	if (d->have_busy)
		yajl_gen_integer(g, (long long)d->busy1);
	else
		yajl_gen_null(g);
	if (!d->have_busy)
		j_kv_str(g, "busy_unavailable", d->busy_why);
	if (!d->have_stats) {
		const char *keys[] = { "jobs", "timeouts", "jobs_alive",
				       "cores_detail" };

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			j_str(g, keys[i]);
			yajl_gen_null(g);
		}
		j_kv_str(g, "stats_unavailable", d->stats_why);
		return;
	}
	j_kv_int(g, "jobs", total_jobs(&d->s1, false));
	j_kv_int(g, "timeouts", total_jobs(&d->s1, true));
	j_kv_int(g, "jobs_alive", d->s1.jobs_alive);
	j_str(g, "cores_detail");
	yajl_gen_array_open(g);
	for (int i = 0; i < d->s1.ncores; i++) {
		yajl_gen_map_open(g);
		j_kv_int(g, "core", i);
		j_kv_pct(g, "busy_percent", busy_pct(d, i, 1));
		j_kv_int(g, "jobs", d->s1.core[i].jobs);
		j_kv_int(g, "timeouts", d->s1.core[i].timeouts);
		j_kv_int(g, "busy_ns", d->s1.core[i].busy_ns);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

static void j_device(yajl_gen g, const struct device *d)
{
	yajl_gen_map_open(g);
	j_kv_int(g, "index", d->q.device_index);
	j_kv_str(g, "node", d->node);
	j_kv_str(g, "bus_id", d->bus_id);
	j_kv_int(g, "cores", d->q.core_count);
	j_kv_u64(g, "vmem_size", d->q.vmem_size);
	j_kv_u64(g, "hbm_total", d->q.hbm_total);
	j_kv_u64(g, "hbm_used", d->q.hbm_total - d->q.hbm_free);
	j_kv_u64(g, "hbm_free", d->q.hbm_free);
	j_kv_u64(g, "hbm_largest_free", d->q.hbm_largest_free);
	j_str(g, "hbm_free_blocks");
	if (d->free_blocks >= 0)
		yajl_gen_integer(g, d->free_blocks);
	else
		yajl_gen_null(g);
	j_kv_u64(g, "host_bytes", d->q.host_bytes);
	if (d->have_query) {
		j_kv_int(g, "isa_version", d->q.isa_version);
		j_kv_u64(g, "max_bo_size", d->q.max_bo_size);
		j_features(g, d->q.features);
	}
	j_stats(g, d);
	yajl_gen_map_close(g);
}

static void j_procs(yajl_gen g, const struct state *st)
{
	j_str(g, "processes");
	yajl_gen_array_open(g);
	for (int i = 0; i < st->nproc; i++) {
		const struct proc *p = &st->proc[i];
		const struct device *d = device_of(st, p->minor);
		double busy = proc_busy(st, p);

		yajl_gen_map_open(g);
		j_kv_int(g, "pid", p->pid);
		j_kv_str(g, "command", p->comm);
		j_kv_int(g, "device", d ? (long long)d->q.device_index : -1);
		j_kv_str(g, "node", d ? d->node : "");
		j_kv_int(g, "client_id", p->client);
		j_kv_int(g, "fds", p->fds);
		j_kv_u64(g, "hbm_bytes", p->hbm);
		j_kv_u64(g, "host_bytes", p->host);
		j_kv_int(g, "engine_ns", p->engine[1]);
		j_str(g, "busy_percent");
		if (busy >= 0)
			j_pct(g, busy);
		else
			yajl_gen_null(g);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	j_str(g, "processes_partial");
	yajl_gen_bool(g, st->proc_partial);
}

static int print_json(const struct state *st, const struct opts *o)
{
	yajl_gen g;
	const unsigned char *buf;
	size_t len;

	g = yajl_gen_alloc(NULL);
	if (!g) {
		fputs("vtpu-smi: out of memory\n", stderr);
		return -1;
	}
	yajl_gen_config(g, yajl_gen_beautify, 1);
	yajl_gen_config(g, yajl_gen_indent_string, "  ");
	yajl_gen_map_open(g);
	j_driver(g, &st->ver);
	j_params(g, st);
	j_kv_int(g, "interval_ms", o->interval_ms);
	j_str(g, "devices");
	yajl_gen_array_open(g);
	for (int i = 0; i < st->ndev; i++)
		j_device(g, &st->dev[i]);
	yajl_gen_array_close(g);
	j_procs(g, st);
	yajl_gen_map_close(g);
	yajl_gen_get_buf(g, &buf, &len);
	fwrite(buf, 1, len, stdout);
	yajl_gen_free(g);
	return 0;
}

/* ---- main ------------------------------------------------------------- */

/* What was wrong with the command line, and where to look: exit 2. */
static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("vtpu-smi: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'vtpu-smi --help'.\n", stderr);
	return EXIT_USAGE;
}

/* A whole decimal number in [min, max], or false. */
static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* The option as typed, for messages: "--id" or "-i". */
static const char *opt_name(char **argv, char *buf, size_t len)
{
	const char *arg = argv[optind - 1];

	if (!strncmp(arg, "--", 2)) {
		snprintf(buf, len, "%.*s", (int)strcspn(arg, "="), arg);
		return buf;
	}
	snprintf(buf, len, "-%c", optopt ? optopt : '?');
	return buf;
}

/* -1 to go on, or the exit status (--help, --version, usage errors). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	enum { OPT_INTERVAL = 256 };
	static const struct option lopts[] = {
		{ "id", required_argument, NULL, 'i' },
		{ "loop", required_argument, NULL, 'l' },
		{ "count", required_argument, NULL, 'c' },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char name[64];
	int c;

	o->interval_ms = 200;
	o->id = -1;
	opterr = 0;	/* the messages below say more */
	while ((c = getopt_long(argc, argv, ":i:l:c:jvVh", lopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'i':
			if (!parse_long(optarg, 0, MAX_DEVICES - 1, &o->id))
				return usage_error("--id wants a device index, 0..%d, not '%s'",
						   MAX_DEVICES - 1, optarg);
			break;
		case 'l':
			errno = 0;
			o->loop_s = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(o->loop_s >= 0.1 && o->loop_s <= 86400))
				return usage_error("--loop wants seconds, 0.1..86400, not '%s'",
						   optarg);
			break;
		case 'c':
			if (!parse_long(optarg, 1, LONG_MAX, &o->count))
				return usage_error("--count wants a number of reports, 1 or more, not '%s'",
						   optarg);
			break;
		case OPT_INTERVAL:
			if (!parse_long(optarg, 1, 60000, &o->interval_ms))
				return usage_error("--interval wants milliseconds, 1..60000, not '%s'",
						   optarg);
			break;
		case 'V':
			printf("vtpu-smi %d.%d\n", SMI_VERSION_MAJOR,
			       SMI_VERSION_MINOR);
			return EXIT_OK;
		case 'h':
			fputs(usage, stdout);
			return EXIT_OK;
		case ':':
			return usage_error("option '%s' needs a value",
					   opt_name(argv, name, sizeof(name)));
		default:
			if (strncmp(argv[optind - 1], "--", 2))
				return usage_error("unknown option '-%c'", optopt);
			/* A known long option here was given a value. */
			if (optopt)
				return usage_error("option '%s' takes no value",
						   opt_name(argv, name, sizeof(name)));
			return usage_error("unknown option '%s'",
					   argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (o->count && !o->loop_s)
		o->loop_s = 1;
	return -1;
}

/* Said once, on stderr, whatever the mode. */
static void say_no_device(void)
{
	fputs("vtpu-smi: no vtpu device found: no /dev/accel device is driven by vtpu.ko.\n"
	      "To get one, load the module: 'sudo insmod driver/vtpu.ko' in a vtpu build tree, or 'sudo modprobe vtpu' once it is installed (the DKMS package).\n",
	      stderr);
}

/* --id: no such device; says which there are. */
static void say_no_such_id(long id, const unsigned int *index, int n)
{
	fprintf(stderr, "vtpu-smi: no vtpu device with index %ld (devices:",
		id);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %u", index[i]);
	fputs(")\n", stderr);
}

/* Keeps only the device --id names, if there is one. */
static void select_device(struct state *st, long id)
{
	for (int i = 0; i < st->ndev; i++) {
		if (st->dev[i].q.device_index != (unsigned long)id)
			continue;
		if (i)
			st->dev[0] = st->dev[i];
		st->ndev = 1;
		return;
	}
	st->ndev = 0;
}

/* One report: probe, sample over the window, print. Returns the status. */
static int report(struct state *st, const struct opts *o)
{
	unsigned int index[MAX_DEVICES];
	int all;

	memset(st, 0, sizeof(*st));
	probe_all(st);
	all = st->ndev;
	for (int i = 0; i < all; i++)
		index[i] = st->dev[i].q.device_index;
	if (o->id >= 0)
		select_device(st, o->id);
	if (!st->ndev) {
		/* yajl beautifies an empty array over three lines. */
		if (o->json)
			puts("{\"devices\": []}");
		if (all) {
			say_no_such_id(o->id, index, all);
			return EXIT_NO_DEVICE;
		}
		if (st->errors)
			return EXIT_DEVICE_ERROR;	/* probe_all said why */
		say_no_device();
		return EXIT_NO_DEVICE;
	}
	read_params(st);
	scan_procs(st, 0);
	sample_all(st, o->interval_ms);
	scan_procs(st, 1);
	qsort(st->proc, st->nproc, sizeof(st->proc[0]), cmp_proc);
	if (o->verbose && !o->json)
		for (int i = 0; i < st->ndev; i++)
			if (!st->dev[i].have_query)
				fprintf(stderr, "vtpu-smi: %s: QUERY failed, figures from sysfs\n",
					st->dev[i].node);
	if (o->json) {
		if (print_json(st, o))
			return EXIT_DEVICE_ERROR;
	} else {
		print_table(st, o);
	}
	/* A device we saw but could not describe is a failure. */
	return st->errors ? EXIT_DEVICE_ERROR : EXIT_OK;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static struct state st;	/* large: keep it off the stack */
	struct opts o = { 0 };
	int ret = parse_args(argc, argv, &o);

	if (ret >= 0)
		return ret;
	if (!o.loop_s)
		return report(&st, &o);

	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (long n = 0; !stop && (!o.count || n < o.count); n++) {
		uint64_t next = mono_ns() + (uint64_t)(o.loop_s * 1e9);

		if (n && !o.json)
			putchar('\n');
		ret = report(&st, &o);
		fflush(stdout);
		if (ret == EXIT_NO_DEVICE || ret == EXIT_USAGE)
			break;
		if (o.count && n + 1 == o.count)
			break;
		/* A signal ends the sleep and, through stop, the loop. */
		sleep_until(next);
	}
	return ret;
}
