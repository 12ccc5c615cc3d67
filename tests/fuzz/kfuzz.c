// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * Description: vtpu-kfuzz, the uAPI fuzzer (see kfuzz.h). This file has
 * the loop: options, the seeded choice of each operation, the kernel-log
 * oracle, and the end of a run (teardown, idle and leak check, the
 * unload check, the summary line).
 *
 *   vtpu-kfuzz [--seed N] [--seconds N] [--ops N] [--verbose]
 *              [--no FAMILY,...] [--enomem-ok] [--failslab PCT]
 *              [--unload MODULE] [--log FILE] [--keep-going]
 *              [--core-bugs] [--no-defer-taskrun] [--check-gen N]
 *
 * --enomem-ok (or KFUZZ_ENOMEM_OK=1) accepts -ENOMEM from any call, for
 * runs under fault injection; --failslab PCT sets that up for this
 * process where the kernel has CONFIG_FAILSLAB. --unload MODULE tries to
 * unload the module at the end while a sync_file holds one of its job
 * fences: it must refuse. --core-bugs also makes the calls that hit
 * known bugs of DRM's core in 6.12 on accel files (see kf_big_count()
 * and kf_op_raw()). --no-defer-taskrun sets up no DEFER_TASKRUN ring:
 * on a lockdep kernel, 6.12's io_uring warns (io_lockdep_assert_cq_locked
 * in io_ring_exit_work) whenever such a ring's fd is closed with commands
 * in flight while its task lives, whoever the driver (check-debug uses
 * it; the production kernel has no such assertion and keeps fuzzing
 * them). --check-gen N only checks, without a device, that
 * the program generator and the validator agree.
 *
 * Each operation draws its choices from its own generator, seeded by
 * the run's seed and the operation's number, so a seed replays the same
 * operations for as long as the kernel answers the same way; --ops N
 * stops right after operation N. It ends with exactly one line
 *
 *   fuzz-kernel: N ops, N jobs, N splats
 *
 * and exits nonzero on any splat, leak or uAPI contract violation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <regex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "kfuzz.h"

struct kf kf;

/* --- random numbers ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t kf_rand(struct kf_rng *r)
{
	return splitmix64(&r->s);
}

uint32_t kf_below(struct kf_rng *r, uint32_t n)
{
	return n ? (uint32_t)((kf_rand(r) >> 32) % n) : 0;
}

bool kf_chance(struct kf_rng *r, unsigned int percent)
{
	return kf_below(r, 100) < percent;
}

uint64_t kf_pick_u64(struct kf_rng *r, const uint64_t *vals, size_t n)
{
	return vals[kf_below(r, n)];
}

/*
 * A pointer the kernel must refuse: NULL, unmapped, kernel, read-only
 * where it writes, or a valid page that ends in an unmapped one.
 */
uint64_t kf_bad_ptr(struct kf_rng *r)
{
	switch (kf_below(r, 9)) {
	case 0: return 0;
	case 1: return 8;
	case 2: return 0xffff888000000000ULL;	/* the direct map */
	case 3: return 0xffffffff81000000ULL;	/* kernel text */
	case 4: return ~0ULL - 7;
	case 5: return (uintptr_t)kf.bad_page;
	case 6: return (uintptr_t)kf.ro_page;
	case 7: return 0x0000800000000000ULL;	/* past user space */
	default:
		/* The last bytes of a page: any struct read runs off it. */
		return (uintptr_t)kf.edge + kf.page - 1 - kf_below(r, 7);
	}
}

/* Sizes at the edges: 0, 1, a page and around it, @max and around it. */
uint64_t kf_edge_size(struct kf_rng *r, uint64_t max)
{
	switch (kf_below(r, 10)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return kf.page - 1;
	case 3: return kf.page;
	case 4: return kf.page + 1;
	case 5: return max;
	case 6: return max + 1;
	case 7: return ~0ULL;
	case 8: return 1ULL << (12 + kf_below(r, 40));
	default: return kf_rand(r);
	}
}

/*
 * A count far beyond any array the caller has: the kernel must fail the
 * copy. ~0 only with --core-bugs: 6.12's syncobj ioctls kmalloc() such
 * counts without __GFP_NOWARN, and the page allocator WARNs.
 */
uint32_t kf_big_count(struct kf_rng *r)
{
	if (kf.core_bugs && kf_chance(r, 50))
		return ~0u;
	return (1u << 16) + kf_below(r, 1u << 16);
}

double kf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int kf_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN) &&
		 req != DRM_IOCTL_VTPU_JOB_WAIT);
	return ret ? -errno : 0;
}

bool kf_fam(enum kf_family fam)
{
	return !kf.fam_off[fam];
}

/* --- the operation log ------------------------------------------------------ */

#define KF_HISTORY	64

static char cur_op[512];
static size_t cur_len;
static char history[KF_HISTORY][192];

static void kmsg_scan(void);

/* The last kernel lines, for a contract report (drm.debug=2 says why). */
static char recent[64][160];
static unsigned int nrecent;

/* Appends to the description of the current operation. */
void kf_note(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (cur_len >= sizeof(cur_op) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(cur_op + cur_len, sizeof(cur_op) - cur_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		cur_len = cur_len + n < sizeof(cur_op) ? cur_len + n :
			  sizeof(cur_op) - 1;
}

/*
 * The operation log (--log) is written a second at a time: one write per
 * operation to the VM's 9p share made the run ten times slower. What a
 * crash loses is also in the history printed at the first splat.
 */
static char logbuf[1 << 16];
static size_t loglen;
static double log_flushed;

static void log_flush(void)
{
	if (kf.log_fd >= 0 && loglen &&
	    write(kf.log_fd, logbuf, loglen) != (ssize_t)loglen)
		kf.log_fd = -1;
	loglen = 0;
	log_flushed = kf_now();
}

static void log_write(const char *s)
{
	size_t len = strlen(s);

	if (loglen + len > sizeof(logbuf))
		log_flush();
	if (len > sizeof(logbuf))
		return;
	memcpy(logbuf + loglen, s, len);
	loglen += len;
	if (kf_now() - log_flushed > 1)
		log_flush();
}

static void dump_history(void)
{
	uint64_t first = kf.ops >= KF_HISTORY ? kf.ops - KF_HISTORY + 1 : 1;
	uint64_t i;

	fprintf(stderr, "kfuzz: the last operations (seed %llu):\n",
		(unsigned long long)kf.seed);
	for (i = first; i <= kf.ops; i++)
		fprintf(stderr, "kfuzz:   %s\n", history[i % KF_HISTORY]);
}

/* A uAPI contract the kernel broke: a failure, with the operations before. */
/* Violations by kind (their format), for the summary. */
static struct {
	const char *fmt;
	uint64_t n;
} kinds[32];

static void count_kind(const char *fmt)
{
	unsigned int i;

	for (i = 0; i < 32; i++) {
		if (!kinds[i].fmt)
			kinds[i].fmt = fmt;
		if (kinds[i].fmt == fmt) {
			kinds[i].n++;
			return;
		}
	}
}

void kf_contract(const char *fmt, ...)
{
	unsigned int i;
	va_list ap;

	uint64_t n = __atomic_add_fetch(&kf.stats->contract, 1,
					__ATOMIC_RELAXED);

	count_kind(fmt);
	/* One bug tends to break the same promise many times. */
	if (n > 30) {
		if (n == 31)
			fprintf(stderr, "kfuzz: contract: more violations follow, counted but not shown\n");
		return;
	}
	fprintf(stderr, "kfuzz: contract: op %llu: ",
		(unsigned long long)kf.ops);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (n > 3)
		return;
	dump_history();
	/* With drm.debug=2 the driver says why it refused a request. */
	kmsg_scan();
	for (i = nrecent > 16 ? nrecent - 16 : 0; i < nrecent; i++)
		fprintf(stderr, "kfuzz:   kernel: %s\n", recent[i % 64]);
}

/* --- mappings: touching memory that may fault --------------------------- */

static sigjmp_buf touch_env;
static volatile sig_atomic_t touching;

static void fault_handler(int sig)
{
	void *frames[32];
	char msg[96];
	int n;

	if (touching)
		siglongjmp(touch_env, sig);
	/* The fuzzer's own bug: say where, for the log. */
	n = snprintf(msg, sizeof(msg), "kfuzz: signal %d in op %llu:\n", sig,
		     (unsigned long long)kf.ops);
	if (write(2, msg, n) == n)
		backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Copies @len bytes from @src (or reads them when NULL); false on a fault. */
bool kf_touch(void *p, size_t len, const void *src)
{
	volatile unsigned char sum = 0;
	size_t i;

	if (sigsetjmp(touch_env, 1)) {
		touching = 0;
		kf.faults++;
		kf_note(" FAULT");
		return false;
	}
	touching = 1;
	if (src) {
		memcpy(p, src, len);
	} else {
		for (i = 0; i < len; i += 64)
			sum += ((volatile unsigned char *)p)[i];
	}
	touching = 0;
	(void)sum;
	return true;
}

/* --- the kernel log -------------------------------------------------------- */

/* tools/vm/run.sh's DMESG_BAD, used when KFUZZ_DMESG_BAD does not say. */
static const char default_bad[] =
	"BUG:|WARNING:|Oops|Kernel panic|general protection fault|"
	"hung task|hung_task|blocked for more than|soft lockup|hard LOCKUP|"
	"rcu: .*(self-)?detected stalls?|UBSAN:|KASAN:|kmemleak|Call Trace:";

static int kmsg_fd = -1;
static regex_t bad_re, allow_re;
static bool have_allow;
static int echo_lines;		/* kernel lines still to show after a splat */

static void kmsg_open(void)
{
	const char *bad = getenv("KFUZZ_DMESG_BAD");
	const char *allow = getenv("KFUZZ_DMESG_ALLOW");

	if (!bad || !*bad)
		bad = default_bad;
	if (regcomp(&bad_re, bad, REG_EXTENDED | REG_NOSUB)) {
		fprintf(stderr, "kfuzz: bad KFUZZ_DMESG_BAD regexp\n");
		exit(2);
	}
	if (allow && *allow) {
		if (regcomp(&allow_re, allow, REG_EXTENDED | REG_NOSUB)) {
			fprintf(stderr, "kfuzz: bad KFUZZ_DMESG_ALLOW regexp\n");
			exit(2);
		}
		have_allow = true;
	}
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_fd < 0) {
		fprintf(stderr, "kfuzz: cannot read /dev/kmsg: %s\n",
			strerror(errno));
		exit(2);
	}
	/* What happened before the run is the harness's business. */
	lseek(kmsg_fd, 0, SEEK_END);
}

/* Reads what the kernel logged since the last call; counts splat lines. */
static void kmsg_scan(void)
{
	char buf[8192];

	for (;;) {
		ssize_t n = read(kmsg_fd, buf, sizeof(buf) - 1);
		char *text, *eol;

		if (n < 0 && errno == EPIPE)	/* overwritten: go on */
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf[n] = 0;
		text = strchr(buf, ';');
		text = text ? text + 1 : buf;
		eol = strchr(text, '\n');
		if (eol)
			*eol = 0;
		snprintf(recent[nrecent++ % 64], sizeof(recent[0]), "%.150s", text);
		if (!regexec(&bad_re, text, 0, NULL, 0) &&
		    !(have_allow && !regexec(&allow_re, text, 0, NULL, 0))) {
			kf.splats++;
			fprintf(stderr, "kfuzz: splat after op %llu: %s\n",
				(unsigned long long)kf.ops, text);
			if (kf.splats == 1) {
				log_flush();
				dump_history();
				echo_lines = 80;
			}
		} else if (echo_lines > 0) {
			echo_lines--;
			fprintf(stderr, "kfuzz: dmesg: %s\n", text);
		}
	}
}

/* --- debugfs --------------------------------------------------------------- */

/*
 * The device's debugfs directory is named after drm_device.unique, the
 * platform device's name (what /sys/class/accel/accelN/device points to);
 * older kernels use the minor, under accel/ or dri/.
 */
static int debugfs_path(int minor, const char *file, char *path, size_t size)
{
	static const char *const roots[] = {
		"/sys/kernel/debug/accel", "/sys/kernel/debug/dri",
	};
	char link[PATH_MAX], target[PATH_MAX];
	ssize_t len;
	unsigned int i;

	snprintf(link, sizeof(link), "/sys/class/accel/accel%d/device", minor);
	len = readlink(link, target, sizeof(target) - 1);
	for (i = 0; i < 2; i++) {
		if (len > 0) {
			target[len] = 0;
			snprintf(path, size, "%s/%s/%s", roots[i],
				 basename(target), file);
			if (!access(path, R_OK))
				return 0;
		}
		snprintf(path, size, "%s/%d/%s", roots[i], minor, file);
		if (!access(path, R_OK))
			return 0;
	}
	return -ENOENT;
}

/* "jobs alive: N" of debugfs "cores"; -errno when unreadable. */
static long jobs_alive(int minor)
{
	char path[PATH_MAX], line[256];
	long n = -EPROTO;
	FILE *f;

	if (debugfs_path(minor, "cores", path, sizeof(path)))
		return -ENOENT;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "jobs alive: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* Live buffers of a device, from debugfs "bos". */
static int bo_count(int minor, unsigned long long *bos,
		    unsigned long long *bytes)
{
	char path[PATH_MAX], line[256];
	unsigned long long n, b;
	int seen = 0;
	FILE *f;

	if (debugfs_path(minor, "bos", path, sizeof(path)))
		return -ENOENT;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	*bos = *bytes = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "hbm: %llu bos, %llu bytes", &n, &b) == 2 ||
		    sscanf(line, "host: %llu bos, %llu bytes", &n, &b) == 2) {
			*bos += n;
			*bytes += b;
			seen++;
		}
	}
	fclose(f);
	return seen == 2 ? 0 : -EPROTO;
}

/* Jobs alive on every device, or -1 when debugfs does not say. */
static long all_jobs_alive(void)
{
	long total = 0, n;
	int i;

	for (i = 0; i < kf.ndevs; i++) {
		n = jobs_alive(kf.devs[i].minor);
		if (n < 0)
			return -1;
		total += n;
	}
	return total;
}

/* --- devices ----------------------------------------------------------------- */

static bool is_vtpu(int fd)
{
	drmVersionPtr v = drmGetVersion(fd);
	bool ret = v && v->name && !strcmp(v->name, "vtpu");

	if (v)
		drmFreeVersion(v);
	return ret;
}

static int cmp_dev(const void *a, const void *b)
{
	return ((const struct kf_dev *)a)->minor -
	       ((const struct kf_dev *)b)->minor;
}

static void find_devices(void)
{
	char path[64];
	int minor, fd;

	for (minor = 0; minor < 64 && kf.ndevs < KF_MAX_DEVS; minor++) {
		snprintf(path, sizeof(path), "/dev/accel/accel%d", minor);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (is_vtpu(fd)) {
			struct kf_dev *d = &kf.devs[kf.ndevs];

			d->minor = minor;
			memset(&d->q, 0, sizeof(d->q));
			if (!kf_ioctl(fd, DRM_IOCTL_VTPU_QUERY, &d->q))
				kf.ndevs++;
		}
		close(fd);
	}
	qsort(kf.devs, kf.ndevs, sizeof(kf.devs[0]), cmp_dev);
}

/* --- fault injection ----------------------------------------------------------- */

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len = strlen(s), n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	close(fd);
	return n == len ? 0 : -EIO;
}

#define FAILSLAB "/sys/kernel/debug/failslab/"

/* Makes this process's slab allocations (and its children's) fail. */
static void failslab_start(void)
{
	char pct[16];

	snprintf(pct, sizeof(pct), "%d", kf.failslab);
	if (write_str(FAILSLAB "probability", pct) ||
	    write_str(FAILSLAB "interval", "1") ||
	    write_str(FAILSLAB "times", "-1") ||
	    write_str(FAILSLAB "verbose", "0") ||
	    write_str(FAILSLAB "task-filter", "Y") ||
	    write_str(FAILSLAB "ignore-gfp-wait", "N") ||
	    write_str("/proc/self/make-it-fail", "1")) {
		fprintf(stderr, "kfuzz: failslab unavailable (no CONFIG_FAILSLAB or debugfs); running without\n");
		kf.failslab = 0;
		return;
	}
	fprintf(stderr, "kfuzz: failslab at %d%% for this process\n",
		kf.failslab);
}

/* Idempotent: the end of a run must not fail at random. */
void kf_fail_stop(void)
{
	if (!kf.failslab)
		return;
	write_str("/proc/self/make-it-fail", "0");
	write_str(FAILSLAB "probability", "0");
	kf.failslab = 0;
}

/* --- the operations ---------------------------------------------------------- */

struct kf_op {
	const char *name;
	enum kf_family fam;
	unsigned int weight;
	void (*fn)(struct kf_rng *r);
};

static const struct kf_op ops[] = {
	{ "query",	KF_FAM_QUERY,	 2, kf_op_query },
	{ "bo_create",	KF_FAM_BO,	 8, kf_op_bo_create },
	{ "bo_info",	KF_FAM_BO,	 3, kf_op_bo_info },
	{ "bo_close",	KF_FAM_BO,	 4, kf_op_bo_close },
	{ "mmap",	KF_FAM_MMAP,	 6, kf_op_mmap },
	{ "munmap",	KF_FAM_MMAP,	 3, kf_op_munmap },
	{ "scribble",	KF_FAM_SCRIBBLE, 6, kf_op_scribble },
	{ "submit",	KF_FAM_SUBMIT,	22, kf_op_submit },
	{ "wait",	KF_FAM_WAIT,	10, kf_op_wait },
	{ "syncobj",	KF_FAM_SYNCOBJ,	 8, kf_op_syncobj },
	{ "syncfile",	KF_FAM_SYNCFILE, 4, kf_op_syncfile },
	{ "prime",	KF_FAM_PRIME,	 4, kf_op_prime },
	{ "uring",	KF_FAM_URING,	12, kf_op_uring },
	{ "fd",		KF_FAM_FD,	 2, kf_op_fd },
	{ "fork",	KF_FAM_FORK,	 1, kf_op_fork },
	{ "raw",	KF_FAM_RAW,	 2, kf_op_raw },
	{ "program",	KF_FAM_PROGRAM,	 4, kf_op_program },
};

static const char *const fam_names[KF_FAM_NR] = {
	[KF_FAM_QUERY] = "query", [KF_FAM_BO] = "bo", [KF_FAM_MMAP] = "mmap",
	[KF_FAM_SCRIBBLE] = "scribble", [KF_FAM_SUBMIT] = "submit",
	[KF_FAM_PROFILE] = "profile", [KF_FAM_WAIT] = "wait",
	[KF_FAM_SYNCOBJ] = "syncobj", [KF_FAM_SYNCFILE] = "syncfile",
	[KF_FAM_PRIME] = "prime", [KF_FAM_URING] = "uring", [KF_FAM_FD] = "fd",
	[KF_FAM_FORK] = "fork", [KF_FAM_RAW] = "raw",
	[KF_FAM_PROGRAM] = "program",
};

#define KF_NOPS	(sizeof(ops) / sizeof(ops[0]))

/* Per operation: how often it ran and for how long, for --verbose. */
static uint64_t op_count[KF_NOPS];
static double op_time[KF_NOPS];

static bool adds_work(const struct kf_op *op)
{
	return op->fam == KF_FAM_SUBMIT || op->fam == KF_FAM_FORK;
}

static const struct kf_op *pick_op(struct kf_rng *r)
{
	unsigned int total = 0, i, x;

	for (i = 0; i < KF_NOPS; i++)
		if (kf_fam(ops[i].fam) && !(kf.busy && adds_work(&ops[i])))
			total += ops[i].weight;
	if (!total)
		return NULL;
	x = kf_below(r, total);
	for (i = 0; i < KF_NOPS; i++) {
		if (!kf_fam(ops[i].fam) || (kf.busy && adds_work(&ops[i])))
			continue;
		if (x < ops[i].weight)
			return &ops[i];
		x -= ops[i].weight;
	}
	return NULL;
}

/* Where the run is, for a report from the alarm. */
static const char *volatile stage = "op";

static void alarm_handler(int sig)
{
	char msg[128];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg),
		     "kfuzz: stuck in %s (after op %llu): giving up\n", stage,
		     (unsigned long long)kf.ops);
	if (write(2, msg, n) == n)
		_exit(3);
	_exit(3);
}

/* Keeps queues short: the device runs far slower than we submit. */
/*
 * The device runs far slower than we submit (under TCG especially): with
 * this many jobs alive, operations that add work are left out until it
 * catches up, and the others go on. Waiting for jobs is no better a use
 * of the time than fuzzing the rest of the uAPI.
 */
#define KF_BUSY_JOBS	32

static void update_busy(void)
{
	kf.busy = all_jobs_alive() >= KF_BUSY_JOBS;
}

static void run_one(uint64_t n)
{
	struct kf_rng r = { kf.seed ^ (n * 0xd1b54a32d192ed69ULL) };
	const struct kf_op *op;
	double t;

	splitmix64(&r.s);
	op = pick_op(&r);
	if (!op)
		return;
	kf.ops = n;
	cur_len = 0;
	cur_op[0] = 0;
	kf_note("#%llu %s:", (unsigned long long)n, op->name);
	if (kf.log_fd >= 0 && op->fam == KF_FAM_FORK)
		log_flush();	/* the child must not write it again */
	t = kf_now();
	alarm(120);
	op->fn(&r);
	alarm(0);
	op_count[op - ops]++;
	op_time[op - ops] += kf_now() - t;
	snprintf(history[n % KF_HISTORY], sizeof(history[0]), "%s", cur_op);
	if (kf.verbose)
		fprintf(stderr, "%s\n", cur_op);
	if (kf.log_fd >= 0) {
		log_write(cur_op);
		log_write("\n");
	}
}

/* --- the end of a run ---------------------------------------------------------- */

/*
 * A job's fence held in a sync_file and a syncobj file while no vtpu file
 * is open: the module must stay loaded (its code signals and names the
 * fence). Built before the teardown, checked after the leak check.
 */
struct unload_check {
	int sync_file;
	int syncobj_fd;
};

static void unload_prepare(struct unload_check *u)
{
	struct kf_rng r = { kf.seed ^ 0x5eed };
	struct drm_syncobj_handle h = { 0 };
	struct drm_syncobj_wait w = { 0 };
	struct drm_syncobj_create c = { 0 };
	struct kf_req q;
	struct kf_file *f;
	int idx, fd, ret;

	u->sync_file = u->syncobj_fd = -1;
	/* A slot for one more file. */
	for (idx = 0; idx < KF_MAX_FILES && kf.files[idx].live; idx++)
		;
	if (idx == KF_MAX_FILES)
		kf_file_close(&kf.files[0]);
	idx = kf_file_open(0);
	if (idx < 0) {
		fprintf(stderr, "kfuzz: unload check: cannot open a file\n");
		return;
	}
	f = &kf.files[idx];
	fd = f->fds[0];
	ret = kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c);
	if (!ret)
		ret = kf_req_build(f, &r, &q, false);
	if (!ret && !q.prog_valid)
		ret = -EINVAL;
	q.s.out_sync = c.handle;
	q.s.out_sync_point = 0;
	q.s.in_sync_count = 0;
	if (!ret)
		ret = kf_ioctl(fd, DRM_IOCTL_VTPU_SUBMIT, &q.s);
	if (ret) {
		fprintf(stderr, "kfuzz: unload check: cannot submit a job: %d\n",
			ret);
		goto out;
	}
	w.handles = (uintptr_t)&c.handle;
	w.count_handles = 1;
	w.timeout_nsec = (int64_t)((kf_now() + 10) * 1e9);
	kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w);
	h.handle = c.handle;
	h.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
	h.fd = -1;
	if (!kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h))
		u->sync_file = h.fd;
	h.flags = 0;
	h.fd = -1;
	if (!kf_ioctl(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h))
		u->syncobj_fd = h.fd;
out:
	kf_file_close(f);
}

/* Looks at and drops the fence: in a child, for an Oops kills its task. */
static void poke_fence(struct unload_check *u)
{
	struct sync_fence_info info[2];
	struct sync_file_info fi;
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct pollfd p = { .fd = u->sync_file, .events = POLLIN };

		memset(&fi, 0, sizeof(fi));
		memset(info, 0, sizeof(info));
		fi.num_fences = 2;
		fi.sync_fence_info = (uintptr_t)info;
		if (u->sync_file >= 0) {
			ioctl(u->sync_file, SYNC_IOC_FILE_INFO, &fi);
			poll(&p, 1, 0);
		}
		_exit(0);
	}
	if (pid > 0) {
		/* The child's copies go with it; ours go now. */
		if (u->sync_file >= 0)
			close(u->sync_file);
		if (u->syncobj_fd >= 0)
			close(u->syncobj_fd);
		waitpid(pid, &status, 0);
	} else {
		close(u->sync_file);
		close(u->syncobj_fd);
	}
	u->sync_file = u->syncobj_fd = -1;
}

static void unload_check(struct unload_check *u)
{
	double end;
	int ret;

	if (u->sync_file < 0 && u->syncobj_fd < 0) {
		fprintf(stderr, "kfuzz: unload check: no fence to hold (skipped)\n");
		return;
	}
	ret = syscall(SYS_delete_module, kf.unload, O_NONBLOCK) ? -errno : 0;
	if (ret) {
		fprintf(stderr, "kfuzz: unload check: %s stays loaded while a fence lives (%s)\n",
			kf.unload, strerror(-ret));
		if (u->sync_file >= 0)
			close(u->sync_file);
		if (u->syncobj_fd >= 0)
			close(u->syncobj_fd);
		return;
	}
	fprintf(stderr, "kfuzz: unload check: %s was unloaded while a sync_file held one of its job fences; touching the fence\n",
		kf.unload);
	poke_fence(u);
	/* Give an Oops in a worker the time to reach the log. */
	end = kf_now() + 2;
	while (kf_now() < end) {
		kmsg_scan();
		usleep(100000);
	}
}

static void show_file(const char *path)
{
	char line[256];
	FILE *f = fopen(path, "re");
	int n = 0;

	while (f && fgets(line, sizeof(line), f) && n++ < 60)
		fprintf(stderr, "kfuzz:   %s", line);
	if (f)
		fclose(f);
}

/*
 * Closes what raw ioctls may have created behind the model's back
 * (dma-bufs, syncobj files), except @keep.
 */
static void close_stray_fds(const int *keep, int nkeep)
{
	int fd, i;

	for (fd = 3; fd < 4096; fd++) {
		for (i = 0; i < nkeep; i++)
			if (keep[i] == fd)
				break;
		if (i == nkeep && fd != kmsg_fd && fd != kf.log_fd)
			close(fd);
	}
}

static void leak_check(const unsigned long long *base_bos)
{
	/* After a splat the device may never go idle: the run failed anyway. */
	double end = kf_now() + (kf.splats ? 15 : 120);
	unsigned long long bos, bytes;
	char path[PATH_MAX];
	long alive;
	int i;

	while ((alive = all_jobs_alive()) > 0 && kf_now() < end) {
		kmsg_scan();
		usleep(50000);
	}
	if (alive < 0) {
		fprintf(stderr, "kfuzz: leak check: debugfs unreadable (skipped)\n");
		return;
	}
	if (alive > 0) {
		fprintf(stderr, "kfuzz: leak: %ld jobs still alive %d s after every file was closed\n",
			alive, kf.splats ? 15 : 120);
		kf.leaks += alive;
	}
	for (i = 0; i < kf.ndevs; i++) {
		int minor = kf.devs[i].minor;

		/* Rings and dma-bufs let go of files asynchronously. */
		end = kf_now() + 10;
		while (!bo_count(minor, &bos, &bytes) && bos > base_bos[i] &&
		       kf_now() < end)
			usleep(50000);
		if (bo_count(minor, &bos, &bytes)) {
			fprintf(stderr, "kfuzz: leak check: accel%d: no debugfs bos\n",
				minor);
			continue;
		}
		if (bos > base_bos[i]) {
			fprintf(stderr, "kfuzz: leak: accel%d: %llu buffers (%llu bytes) alive after every file, mapping and dma-buf was closed (%llu before the run):\n",
				minor, bos, bytes, base_bos[i]);
			kf.leaks += bos - base_bos[i];
			if (!debugfs_path(minor, "bos", path, sizeof(path)))
				show_file(path);
		}
	}
}

/* --- main ---------------------------------------------------------------------- */

/*
 * --check-gen N: N programs for random bindings, judged by the host's
 * validator, without a device. Every one must be valid: the generator
 * and the validator must agree before the oracle can be trusted.
 */
static int check_gen(uint64_t n)
{
	struct vtpu_binding_desc desc[8];
	struct vtpu_prog_error err;
	struct vtpu_prog_info info;
	uint64_t i, bad = 0, insns = 0, mutants = 0;
	unsigned int nb, j;

	for (i = 0; i < n; i++) {
		struct kf_rng r = { kf.seed + i };
		struct kf_prog p = { 0 };

		nb = kf_below(&r, 8);
		for (j = 0; j < nb; j++) {
			desc[j].size = 1 + kf_below(&r, 1 << 16);
			desc[j].access = 1 + kf_below(&r, 3);
		}
		if (kf_prog_gen(&r, 1 << 20, desc, nb, -1, 0, &p))
			return 1;
		if (vtpu_prog_validate(p.buf, p.size, desc, nb, 1 << 20, &info,
				       &err)) {
			if (bad++ < 10)
				fprintf(stderr, "kfuzz: program %llu: insn %d: %s\n",
					(unsigned long long)i, err.insn, err.why);
		} else {
			insns += info.insn_count;
		}
		kf_prog_mutate(&r, &p);
		kf_prog_check(&p, desc, nb, 1 << 20);
		mutants += p.valid;
		kf_prog_free(&p);
	}
	fprintf(stderr, "kfuzz: %llu programs, %llu invalid, %.1f instructions on average; %llu of their mutants still valid\n",
		(unsigned long long)n, (unsigned long long)bad,
		n > bad ? (double)insns / (n - bad) : 0.0,
		(unsigned long long)mutants);
	return bad ? 1 : 0;
}

static void usage(const char *argv0)
{
	unsigned int i;

	fprintf(stderr,
		"usage: %s [--seed N] [--seconds N] [--ops N] [--verbose]\n"
		"          [--no FAMILY,...] [--enomem-ok] [--failslab PCT]\n"
		"          [--unload MODULE] [--log FILE] [--keep-going]\n"
		"          [--core-bugs] [--no-defer-taskrun] [--check-gen N]\n"
		"families:", argv0);
	for (i = 0; i < KF_FAM_NR; i++)
		fprintf(stderr, " %s", fam_names[i]);
	fputc('\n', stderr);
	exit(2);
}

static void disable_families(const char *list, const char *argv0)
{
	char *copy = strdup(list), *save = NULL, *tok;
	unsigned int i;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < KF_FAM_NR; i++)
			if (!strcmp(tok, fam_names[i]))
				break;
		if (i == KF_FAM_NR) {
			fprintf(stderr, "kfuzz: unknown family '%s'\n", tok);
			usage(argv0);
		}
		kf.fam_off[i] = true;
	}
	free(copy);
}

static void parse_args(int argc, char **argv, bool *keep_going,
		       uint64_t *check)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "ops", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "no", required_argument, NULL, 'x' },
		{ "enomem-ok", no_argument, NULL, 'e' },
		{ "failslab", required_argument, NULL, 'f' },
		{ "unload", required_argument, NULL, 'u' },
		{ "log", required_argument, NULL, 'l' },
		{ "keep-going", no_argument, NULL, 'k' },
		{ "check-gen", required_argument, NULL, 'g' },
		{ "core-bugs", no_argument, NULL, 'c' },
		{ "no-defer-taskrun", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("KFUZZ_ENOMEM_OK");
	int c;

	kf.seed = (uint64_t)time(NULL);
	kf.log_fd = -1;
	kf.vgem_fd = -1;
	kf.enomem_ok = env && *env && strcmp(env, "0");
	while ((c = getopt_long(argc, argv, "s:t:n:vx:ef:u:l:kh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 's': kf.seed = strtoull(optarg, NULL, 0); break;
		case 't': kf.seconds = strtod(optarg, NULL); break;
		case 'n': kf.max_ops = strtoull(optarg, NULL, 0); break;
		case 'v': kf.verbose = true; break;
		case 'x': disable_families(optarg, argv[0]); break;
		case 'e': kf.enomem_ok = true; break;
		case 'f':
			kf.failslab = atoi(optarg);
			kf.enomem_ok = true;
			break;
		case 'u': kf.unload = *optarg ? optarg : NULL; break;
		case 'l':
			kf.log_fd = open(optarg, O_WRONLY | O_CREAT | O_TRUNC |
					 O_APPEND | O_CLOEXEC, 0644);
			if (kf.log_fd < 0)
				fprintf(stderr, "kfuzz: cannot write %s: %s\n",
					optarg, strerror(errno));
			break;
		case 'k': *keep_going = true; break;
		case 'g': *check = strtoull(optarg, NULL, 0); break;
		case 'c': kf.core_bugs = true; break;
		case 'd': kf.no_defer_taskrun = true; break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc)
		usage(argv[0]);
	if (!kf.seconds && !kf.max_ops)
		kf.seconds = 60;
}

static void setup_memory(void)
{
	char *p;

	kf.page = (size_t)sysconf(_SC_PAGESIZE);
	/* [edge][bad] then [ro]: the kernel is pointed at these. */
	p = mmap(NULL, 3 * kf.page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	kf.stats = mmap(NULL, kf.page, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || kf.stats == MAP_FAILED) {
		perror("kfuzz: mmap");
		exit(2);
	}
	memset(p, 0x5a, kf.page);
	kf.edge = p;
	kf.bad_page = p + kf.page;
	kf.ro_page = p + 2 * kf.page;
	memset(kf.ro_page, 0, kf.page);
	mprotect(kf.bad_page, kf.page, PROT_NONE);
	mprotect(kf.ro_page, kf.page, PROT_READ);
}

int main(int argc, char **argv)
{
	unsigned long long base_bos[KF_MAX_DEVS], bytes;
	struct unload_check u = { -1, -1 };
	double start, end, next_report;
	bool keep_going = false;
	uint64_t check = 0;
	struct sigaction sa;
	uint64_t n;
	int i, failed;

	setvbuf(stderr, NULL, _IOLBF, 0);
	parse_args(argc, argv, &keep_going, &check);
	setup_memory();
	if (check)
		return check_gen(check);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fault_handler;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sa.sa_handler = alarm_handler;
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	kmsg_open();
	find_devices();
	if (!kf.ndevs) {
		fprintf(stderr, "kfuzz: no vtpu device\n");
		printf("fuzz-kernel: 0 ops, 0 jobs, 0 splats\n");
		return 1;
	}
	for (i = 0; i < kf.ndevs; i++)
		if (bo_count(kf.devs[i].minor, &base_bos[i], &bytes))
			base_bos[i] = 0;
	fprintf(stderr, "kfuzz: seed %llu, %d devices, families off:",
		(unsigned long long)kf.seed, kf.ndevs);
	for (i = 0, n = 0; i < KF_FAM_NR; i++) {
		if (!kf.fam_off[i])
			continue;
		fprintf(stderr, " %s", fam_names[i]);
		n++;
	}
	fprintf(stderr, "%s%s\n", n ? "" : " none",
		kf.enomem_ok ? ", -ENOMEM tolerated everywhere" : "");
	for (i = 0; i < KF_MAX_FILES; i++)
		kf.files[i].live = false;
	for (i = 0; i < kf.ndevs && i < 2; i++)
		kf_file_open(i);
	if (kf.failslab)
		failslab_start();

	start = kf_now();
	end = kf.seconds ? start + kf.seconds : 0;
	next_report = start + 10;
	for (n = 1; !kf.max_ops || n <= kf.max_ops; n++) {
		if (end && kf_now() >= end)
			break;
		run_one(n);
		kmsg_scan();
		if (kf.splats && !keep_going) {
			fprintf(stderr, "kfuzz: stopping at the first splat (op %llu, seed %llu); --keep-going to go on\n",
				(unsigned long long)n,
				(unsigned long long)kf.seed);
			break;
		}
		if (!(n % 8)) {
			kf_children_reap(false);
			update_busy();
		}
		if (kf_now() >= next_report) {
			fprintf(stderr, "kfuzz: %.0f s: %llu ops, %llu jobs, %llu splats\n",
				kf_now() - start, (unsigned long long)kf.ops,
				(unsigned long long)kf.stats->jobs,
				(unsigned long long)kf.splats);
			next_report += 10;
		}
	}

	/* The end: nothing may be left once everything is closed. */
	stage = "the end of the run";
	log_flush();
	alarm(300);
	kf_fail_stop();
	kf_children_reap(true);
	if (kf.unload && !kf.splats)
		unload_prepare(&u);
	kf_rings_teardown();
	kf_model_teardown();
	close_stray_fds((int[]){ u.sync_file, u.syncobj_fd }, 2);
	leak_check(base_bos);
	kmsg_scan();
	/* Unloading a module whose cores died would hang. */
	if (kf.unload && !kf.splats && !kf.leaks)
		unload_check(&u);
	kmsg_scan();
	alarm(0);

	fprintf(stderr, "kfuzz: seed %llu: %llu ops (%llu by children), %llu jobs, %llu splats, %llu leaks, %llu contract violations, %llu mapping faults, %.0f s\n",
		(unsigned long long)kf.seed, (unsigned long long)kf.ops,
		(unsigned long long)kf.stats->child_ops,
		(unsigned long long)kf.stats->jobs,
		(unsigned long long)kf.splats, (unsigned long long)kf.leaks,
		(unsigned long long)kf.stats->contract,
		(unsigned long long)kf.faults, kf_now() - start);
	for (i = 0; i < 32 && kinds[i].fmt; i++)
		fprintf(stderr, "kfuzz: %llu x contract: %s\n",
			(unsigned long long)kinds[i].n, kinds[i].fmt);
	for (i = 0; kf.verbose && i < (int)KF_NOPS; i++)
		fprintf(stderr, "kfuzz: %-10s %8llu ops %8.1f ms each\n",
			ops[i].name, (unsigned long long)op_count[i],
			op_count[i] ? 1000 * op_time[i] / op_count[i] : 0.0);
	printf("fuzz-kernel: %llu ops, %llu jobs, %llu splats\n",
	       (unsigned long long)kf.ops, (unsigned long long)kf.stats->jobs,
	       (unsigned long long)kf.splats);
	fflush(stdout);
	failed = kf.splats || kf.leaks || kf.stats->contract;
	return failed ? 1 : 0;
}
