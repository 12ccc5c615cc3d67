// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: vtpu-smi reports what the devices report. Its JSON gives
 * every device with the core count and HBM figures of QUERY and sysfs,
 * and lists this process's open files with the memory and engine time
 * their fdinfo shows; its table names this process too. A job still
 * running makes its device and its process busy, in the JSON and the
 * table; --id shows one device, or exits 3 if there is none with that
 * index; --loop with --count prints that many reports, one JSON document
 * each. Underneath, the figures it reads count a running job as it runs:
 * the device's sysfs busy_ns (and debugfs per-core busy_ns) and the
 * file's fdinfo drm-engine-vtpu grow by about the time elapsed, and
 * never go back, across the job's end included.
 */
#include <yajl/yajl_tree.h>

#include "vtpu_job_util.h"

#include "kselftest_harness.h"

/* build/bin/vtpu-smi, next to this binary's build/tests/kselftest/. */
static int smi_path(char *path, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -errno;
	self[n] = 0;
	snprintf(path, len, "%s/../../bin/vtpu-smi", dirname(self));
	return access(path, X_OK) ? -errno : 0;
}

/*
 * The whole standard output of "vtpu-smi ARGS", malloc'd, and its exit
 * status in @status; NULL if it could not run.
 */
static char *run_smi_status(const char *args, int *status)
{
	char path[PATH_MAX], cmd[PATH_MAX + 64];
	size_t len = 0, cap = 1 << 16;
	char *out = malloc(cap);
	FILE *p;
	size_t n;
	int ret;

	if (!out || smi_path(path, sizeof(path))) {
		free(out);
		return NULL;
	}
	snprintf(cmd, sizeof(cmd), "%s %s", path, args);
	p = popen(cmd, "re");
	if (!p) {
		free(out);
		return NULL;
	}
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 1024) {
			char *o = realloc(out, cap *= 2);

			if (!o)
				break;
			out = o;
		}
	}
	out[len] = 0;
	ret = pclose(p);
	*status = ret >= 0 && WIFEXITED(ret) ? WEXITSTATUS(ret) : -1;
	return out;
}

/* The output of a "vtpu-smi ARGS" that succeeded, or NULL. */
static char *run_smi(const char *args)
{
	int status;
	char *out = run_smi_status(args, &status);

	if (out && status) {
		free(out);
		return NULL;
	}
	return out;
}

static long long num(yajl_val obj, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val v = yajl_tree_get(obj, path, yajl_t_number);

	return v && YAJL_IS_INTEGER(v) ? YAJL_GET_INTEGER(v) : -1;
}

/* A number, integer or not; -1 if missing or null. */
static double dbl(yajl_val obj, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val v = yajl_tree_get(obj, path, yajl_t_number);

	if (!v)
		return -1;
	return YAJL_IS_DOUBLE(v) ? YAJL_GET_DOUBLE(v) :
	       (double)YAJL_GET_INTEGER(v);
}

static const char *str(yajl_val obj, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val v = yajl_tree_get(obj, path, yajl_t_string);

	return v ? YAJL_GET_STRING(v) : "";
}

static yajl_val array(yajl_val obj, const char *key)
{
	const char *path[] = { key, NULL };

	return yajl_tree_get(obj, path, yajl_t_array);
}

TEST(json_reports_devices_and_this_process)
{
	struct drm_vtpu_bo_create hbm, host;
	struct vtpu_buf prog;
	struct drm_vtpu_query q;
	struct vtpu_asm as;
	char node[64], err[256], smi[PATH_MAX];
	int fd = vtpu_open(0), status = -1, found = 0;
	long long client, engine;
	yajl_val root, devs, procs;
	__u64 used;
	size_t size;
	char *out;
	__u64 id;
	void *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, smi_path(smi, sizeof(smi))) TH_LOG("no %s: make all", smi);
	ASSERT_EQ(0, vtpu_query(fd, &q));
	ASSERT_EQ(0, vtpu_bo_create(fd, 2 * MiB, DRM_VTPU_PLACEMENT_HBM, &hbm));
	ASSERT_EQ(0, vtpu_bo_create(fd, 1 * MiB, DRM_VTPU_PLACEMENT_HOST, &host));
	/* Some time on the cores, so engine time is not trivially 0. */
	vtpu_asm_init(&as, 0, 0);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, &size);
	vtpu_asm_free(&as);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(fd, p, size, &prog));
	free(p);

	struct vtpu_submit_args a = { .prog = &prog, .prog_size = size };

	ASSERT_EQ(0, vtpu_submit(fd, &a, &id));
	ASSERT_EQ(0, vtpu_job_wait(fd, id, 30, &status));
	ASSERT_EQ(0, status);
	client = vtpu_fdinfo_value(fd, "drm-client-id");
	engine = vtpu_fdinfo_value(fd, "drm-engine-vtpu");
	ASSERT_LT(0, engine);

	out = run_smi("--json --interval 20");
	ASSERT_NE(NULL, out);
	root = yajl_tree_parse(out, err, sizeof(err));
	ASSERT_NE(NULL, root) TH_LOG("not JSON (%s):\n%s", err, out);

	snprintf(node, sizeof(node), "/dev/accel/accel%d", vtpu_minor(fd));
	devs = array(root, "devices");
	ASSERT_NE(NULL, devs);
	for (size_t i = 0; i < YAJL_GET_ARRAY(devs)->len; i++) {
		yajl_val d = YAJL_GET_ARRAY(devs)->values[i];

		if (strcmp(str(d, "node"), node))
			continue;
		found++;
		EXPECT_EQ(q.core_count, num(d, "cores"));
		EXPECT_EQ((long long)q.hbm_total, num(d, "hbm_total"));
		ASSERT_EQ(0, vtpu_sysfs_u64(vtpu_minor(fd), "hbm_used", &used));
		EXPECT_EQ((long long)used, num(d, "hbm_used"));
	}
	EXPECT_EQ(1, found) TH_LOG("%s not listed:\n%s", node, out);

	found = 0;
	procs = array(root, "processes");
	ASSERT_NE(NULL, procs) TH_LOG("no processes:\n%s", out);
	for (size_t i = 0; i < YAJL_GET_ARRAY(procs)->len; i++) {
		yajl_val pr = YAJL_GET_ARRAY(procs)->values[i];

		if (num(pr, "pid") != getpid() || num(pr, "client_id") != client)
			continue;
		found++;
		EXPECT_STREQ(node, str(pr, "node"));
		EXPECT_EQ((long long)(2 * MiB), num(pr, "hbm_bytes"));
		/* The program's buffer is backing store too. */
		EXPECT_EQ((long long)(1 * MiB + prog.size),
			  num(pr, "host_bytes"));
		EXPECT_EQ(engine, num(pr, "engine_ns"));
		EXPECT_EQ(1, num(pr, "fds"));
	}
	EXPECT_EQ(1, found) TH_LOG("this process not listed:\n%s", out);
	yajl_tree_free(root);
	free(out);

	/* The table lists this process with its command name. */
	out = run_smi("--interval 20");
	ASSERT_NE(NULL, out);
	snprintf(err, sizeof(err), "  %7d  vtpu_smi", getpid());
	EXPECT_NE(NULL, strstr(out, err)) TH_LOG("'%s' not in:\n%s", err, out);
	free(out);

	vtpu_buf_free(fd, &prog);
	vtpu_bo_close(fd, hbm.handle);
	vtpu_bo_close(fd, host.handle);
	close(fd);
}

/* The device with this index in a report's "devices"; NULL if none. */
static yajl_val device_in(yajl_val root, long long index, int *ndev)
{
	yajl_val devs = array(root, "devices"), found = NULL;

	*ndev = devs ? (int)YAJL_GET_ARRAY(devs)->len : -1;
	for (int i = 0; i < *ndev; i++) {
		yajl_val d = YAJL_GET_ARRAY(devs)->values[i];

		if (num(d, "index") == index)
			found = d;
	}
	return found;
}

/*
 * The busy % column of the table row of device @index: a number, -1 for
 * "-", -2 if there is no such row.
 */
static double table_busy(const char *out, unsigned int index)
{
	char want[16];
	const char *line;

	snprintf(want, sizeof(want), "| %3u |", index);
	for (line = out; line; line = strchr(line, '\n')) {
		const char *col = line += *line == '\n';

		if (strncmp(line, want, strlen(want)))
			continue;
		/* dev node bus cores VMEM HBM largest backing, then busy. */
		for (int i = 0; i < 8 && col; i++)
			col = strchr(col + 1, '|');
		if (!col)
			return -2;
		col += strspn(col + 1, " ") + 1;
		return *col == '-' ? -1 : strtod(col, NULL);
	}
	return -2;
}

/* The module's job_timeout_ms: how long a runaway job lasts. */
static unsigned long job_timeout_ms(void)
{
	FILE *f = fopen("/sys/module/vtpu/parameters/job_timeout_ms", "re");
	unsigned long ms = 0;

	if (f) {
		if (fscanf(f, "%lu", &ms) != 1)
			ms = 0;
		fclose(f);
	}
	return ms ? ms : vtpu_env_ulong("VTPU_JOB_TIMEOUT_MS", 2000);
}

/* A job that runs until the job timeout stops it (see vtpu_job.c). */
static int submit_runaway(int fd, struct vtpu_buf *prog, struct vtpu_buf *sink,
			  __u64 *id)
{
	struct drm_vtpu_binding b;
	size_t size;
	void *p = vtpu_prog_spin(256, 4000, &size);
	int ret;

	if (!p)
		return -ENOMEM;
	ret = vtpu_buf_prog(fd, p, size, prog);
	free(p);
	if (!ret)
		ret = vtpu_buf_new(fd, 256 * 256 * 4, DRM_VTPU_PLACEMENT_HOST,
				   sink);
	if (ret)
		return ret;
	b = (struct drm_vtpu_binding){ sink->handle, DRM_VTPU_BIND_WRITE, 0,
				       sink->size };

	struct vtpu_submit_args a = {
		.prog = prog, .prog_size = size, .bind = &b, .nbind = 1,
	};

	return vtpu_submit(fd, &a, id);
}

/* This process's entry for @client in a report's "processes"; NULL if none. */
static yajl_val proc_in(yajl_val root, long long client)
{
	yajl_val procs = array(root, "processes");

	for (size_t i = 0; procs && i < YAJL_GET_ARRAY(procs)->len; i++) {
		yajl_val pr = YAJL_GET_ARRAY(procs)->values[i];

		if (num(pr, "pid") == getpid() && num(pr, "client_id") == client)
			return pr;
	}
	return NULL;
}

/*
 * The driver used to count a job's time only when it ended: vtpu-smi
 * showed a device busy with a long job as 0.0 % until then.
 */
TEST(a_running_job_makes_its_device_busy)
{
	unsigned long timeout_ms = job_timeout_ms();
	int fd = vtpu_open(0), status = 0, ndev;
	char args[96], err[256];
	struct vtpu_buf prog, sink;
	struct drm_vtpu_query q;
	yajl_val root, d, pr;
	long long client;
	double busy;
	char *out;
	__u64 id;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, vtpu_query(fd, &q));
	if (timeout_ms < 1500)
		SKIP(close(fd); return,
		     "job timeout %lu ms: the job would end under the check",
		     timeout_ms);
	client = vtpu_fdinfo_value(fd, "drm-client-id");
	ASSERT_EQ(0, submit_runaway(fd, &prog, &sink, &id));
	usleep(100 * 1000);	/* on a core by now */

	snprintf(args, sizeof(args), "--json --interval 250 --id %u",
		 q.device_index);
	out = run_smi(args);
	ASSERT_NE(NULL, out);
	root = yajl_tree_parse(out, err, sizeof(err));
	ASSERT_NE(NULL, root) TH_LOG("not JSON (%s):\n%s", err, out);
	d = device_in(root, q.device_index, &ndev);
	ASSERT_NE(NULL, d) TH_LOG("device %u not listed:\n%s",
				  q.device_index, out);
	/* One core of core_count busy all the window: about 100/n %. */
	busy = dbl(d, "busy_percent");
	EXPECT_LE(50.0 / q.core_count, busy)
		TH_LOG("busy %.1f %% with a job running on 1 of %u cores:\n%s",
		       busy, q.core_count, out);
	EXPECT_STREQ("sysfs", str(d, "busy_source")) TH_LOG("%s", out);
	pr = proc_in(root, client);
	ASSERT_NE(NULL, pr) TH_LOG("this process not listed:\n%s", out);
	busy = dbl(pr, "busy_percent");
	EXPECT_LE(50.0 / q.core_count, busy)
		TH_LOG("process busy %.1f %% with its job running:\n%s",
		       busy, out);
	yajl_tree_free(root);
	free(out);

	snprintf(args, sizeof(args), "--interval 250 --id %u", q.device_index);
	out = run_smi(args);
	ASSERT_NE(NULL, out);
	busy = table_busy(out, q.device_index);
	EXPECT_LT(0.0, busy) TH_LOG("table busy %.1f (-1: \"-\", -2: no row):\n%s",
				    busy, out);
	free(out);

	/* All of it while the job ran. */
	EXPECT_EQ(-ETIME, vtpu_job_wait(fd, id, 0, &status))
		TH_LOG("the job ended before the checks did: they prove nothing");
	ASSERT_EQ(0, vtpu_job_wait(fd, id, 60, &status));
	vtpu_buf_free(fd, &prog);
	vtpu_buf_free(fd, &sink);
	close(fd);
}

/*
 * The busy figures at one moment: the device's sysfs busy_ns, the sum of
 * its cores' debugfs busy_ns (-1 without debugfs, read after sysfs), and
 * the file's drm-engine-vtpu; @t0 and @t1 bracket the reads.
 */
struct busy_read {
	__u64 dev;
	long long cores, file;
	__s64 t0, t1;
};

static int read_busy(int fd, struct busy_read *r)
{
	int ret;

	r->t0 = vtpu_now_ns();
	ret = vtpu_sysfs_u64(vtpu_minor(fd), "busy_ns", &r->dev);
	r->cores = vtpu_core_sum(vtpu_minor(fd), "busy_ns");
	r->file = vtpu_fdinfo_value(fd, "drm-engine-vtpu");
	r->t1 = vtpu_now_ns();
	if (r->cores < 0)
		r->cores = -1;
	return ret ? ret : r->file < 0 ? -EPROTO : 0;
}

/*
 * Submits a runaway job on @fd and waits, up to a second, until it runs:
 * the device's busy_ns or the file's engine time has moved.
 */
static int start_running(int fd, struct vtpu_buf *prog, struct vtpu_buf *sink,
			 __u64 *id, struct busy_read *before)
{
	struct busy_read r;
	__s64 end;
	int ret;

	ret = read_busy(fd, before);
	if (!ret)
		ret = submit_runaway(fd, prog, sink, id);
	if (ret)
		return ret;
	end = vtpu_now_ns() + 1000000000LL;
	while (!read_busy(fd, &r) && r.t0 < end) {
		if (r.dev > before->dev || r.file > before->file)
			return 0;
		usleep(1000);
	}
	return -ETIME;
}

static void finish_running(int fd, struct vtpu_buf *prog,
			   struct vtpu_buf *sink, __u64 id)
{
	int status;

	vtpu_job_wait(fd, id, 60, &status);
	vtpu_buf_free(fd, prog);
	vtpu_buf_free(fd, sink);
	close(fd);
}

#define WINDOW_MS	200
#define MS		1000000LL

/*
 * Two reads WINDOW_MS apart while one job runs on one core: the device's
 * busy_ns grows by about the time between them (at least half the
 * window), and by no more than the time between them (one core busy).
 */
TEST(sysfs_busy_ns_grows_while_a_job_runs)
{
	int fd = vtpu_open(0), status;
	struct busy_read r0, r1, before;
	struct vtpu_buf prog, sink;
	long long grew, cores;
	__u64 id;

	ASSERT_LE(0, fd);
	if (job_timeout_ms() < 1500)
		SKIP(close(fd); return, "job timeout under 1.5 s");
	ASSERT_EQ(0, vtpu_sysfs_u64(vtpu_minor(fd), "busy_ns", &before.dev))
		TH_LOG("no sysfs busy_ns: a module older than it?");
	ASSERT_EQ(0, start_running(fd, &prog, &sink, &id, &before))
		TH_LOG("sysfs busy_ns and fdinfo did not move within 1 s of the submit");
	ASSERT_EQ(0, read_busy(fd, &r0));
	usleep(WINDOW_MS * 1000);
	ASSERT_EQ(0, read_busy(fd, &r1));
	EXPECT_EQ(-ETIME, vtpu_job_wait(fd, id, 0, &status))
		TH_LOG("the job ended in the window: the checks prove nothing");

	grew = (long long)(r1.dev - r0.dev);
	EXPECT_LE(WINDOW_MS / 2 * MS, grew)
		TH_LOG("busy_ns grew %lld ns in %lld ns with a job running",
		       grew, r1.t0 - r0.t1);
	EXPECT_GE(r1.t1 - r0.t0, grew)
		TH_LOG("busy_ns grew %lld ns in at most %lld ns, one core busy",
		       grew, r1.t1 - r0.t0);
	/* debugfs: the same per core, summed; read after sysfs. */
	if (r0.cores >= 0 && r1.cores >= 0) {
		cores = r1.cores - r0.cores;
		EXPECT_LE(WINDOW_MS / 2 * MS, cores)
			TH_LOG("debugfs cores busy_ns grew %lld ns in %lld ns",
			       cores, r1.t0 - r0.t1);
		EXPECT_LE((long long)r1.dev, r1.cores)
			TH_LOG("debugfs sum %lld read after sysfs %llu",
			       r1.cores, (unsigned long long)r1.dev);
	} else {
		TH_LOG("debugfs cores unreadable: per-core busy_ns not checked");
	}
	finish_running(fd, &prog, &sink, id);
}

/* The same for the submitting file's fdinfo drm-engine-vtpu. */
TEST(fdinfo_engine_time_grows_while_a_job_runs)
{
	int fd = vtpu_open(0), status;
	struct busy_read r0, r1, before;
	struct vtpu_buf prog, sink;
	long long grew;
	__u64 id;

	ASSERT_LE(0, fd);
	if (job_timeout_ms() < 1500)
		SKIP(close(fd); return, "job timeout under 1.5 s");
	ASSERT_EQ(0, start_running(fd, &prog, &sink, &id, &before))
		TH_LOG("sysfs busy_ns and fdinfo did not move within 1 s of the submit");
	ASSERT_EQ(0, read_busy(fd, &r0));
	usleep(WINDOW_MS * 1000);
	ASSERT_EQ(0, read_busy(fd, &r1));
	EXPECT_EQ(-ETIME, vtpu_job_wait(fd, id, 0, &status))
		TH_LOG("the job ended in the window: the checks prove nothing");

	EXPECT_LT(0, r0.file) TH_LOG("no engine time with the job running");
	grew = r1.file - r0.file;
	EXPECT_LE(WINDOW_MS / 2 * MS, grew)
		TH_LOG("drm-engine-vtpu grew %lld ns in %lld ns with a job running",
		       grew, r1.t0 - r0.t1);
	EXPECT_GE(r1.t1 - r0.t0, grew)
		TH_LOG("drm-engine-vtpu grew %lld ns in at most %lld ns, one job",
		       grew, r1.t1 - r0.t0);
	finish_running(fd, &prog, &sink, id);
}

/*
 * Read over and over from the job's start to past its end, when the
 * running time turns into finished time: no figure is ever below the
 * one read before it. Once the job is over they stop growing, and the
 * file's total is no more than the time since the submit.
 */
TEST(busy_figures_never_go_back)
{
	int fd = vtpu_open(0), status, backs = 0, reads = 0;
	struct busy_read before, last, r, idle;
	struct vtpu_buf prog, sink;
	char what[200] = "";
	bool done = false;
	__s64 end;
	__u64 id;

	ASSERT_LE(0, fd);
	if (job_timeout_ms() < 1500)
		SKIP(close(fd); return, "job timeout under 1.5 s");
	ASSERT_EQ(0, start_running(fd, &prog, &sink, &id, &before))
		TH_LOG("sysfs busy_ns and fdinfo did not move within 1 s of the submit");
	ASSERT_EQ(0, read_busy(fd, &last));
	end = vtpu_now_ns() + (job_timeout_ms() + 5000) * MS;
	/* Until a read that began after the job was seen done. */
	while (vtpu_now_ns() < end) {
		bool was_done = done;

		/* JOB_WAIT reports a job once: its record goes with it. */
		if (!done)
			done = vtpu_job_wait(fd, id, 0, &status) == 0;
		ASSERT_EQ(0, read_busy(fd, &r));
		reads++;
		if ((r.dev < last.dev || r.file < last.file ||
		     r.cores < last.cores) && !backs++)
			snprintf(what, sizeof(what),
				 "read %d: busy_ns %llu -> %llu, engine %lld -> %lld, cores %lld -> %lld",
				 reads, (unsigned long long)last.dev,
				 (unsigned long long)r.dev, last.file, r.file,
				 last.cores, r.cores);
		last = r;
		if (was_done)
			break;
	}
	ASSERT_TRUE(done) TH_LOG("the job did not end");
	EXPECT_EQ(0, backs) TH_LOG("%d of %d reads went back; first: %s",
				   backs, reads, what);

	usleep(50 * 1000);
	ASSERT_EQ(0, read_busy(fd, &idle));
	EXPECT_EQ(last.file, idle.file)
		TH_LOG("engine time grows with no job: %lld -> %lld",
		       last.file, idle.file);
	EXPECT_EQ(last.dev, idle.dev)
		TH_LOG("busy_ns grows with the device idle: %llu -> %llu",
		       (unsigned long long)last.dev,
		       (unsigned long long)idle.dev);
	EXPECT_GE(idle.t1 - before.t0, idle.file - before.file)
		TH_LOG("engine time %lld ns for a job submitted %lld ns ago",
		       idle.file - before.file, idle.t1 - before.t0);
	finish_running(fd, &prog, &sink, id);
}

TEST(id_selects_one_device)
{
	int fd = vtpu_open(0), status = -1, ndev, n = 0;
	char args[96], err[256];
	struct drm_vtpu_query q;
	yajl_val root, procs;
	char *out;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, vtpu_query(fd, &q));
	snprintf(args, sizeof(args), "--json --interval 20 -i %u",
		 q.device_index);
	out = run_smi(args);
	ASSERT_NE(NULL, out);
	root = yajl_tree_parse(out, err, sizeof(err));
	ASSERT_NE(NULL, root) TH_LOG("not JSON (%s):\n%s", err, out);
	EXPECT_NE(NULL, device_in(root, q.device_index, &ndev));
	EXPECT_EQ(1, ndev) TH_LOG("-i %u lists %d devices:\n%s",
				  q.device_index, ndev, out);
	procs = array(root, "processes");
	ASSERT_NE(NULL, procs);
	for (size_t i = 0; i < YAJL_GET_ARRAY(procs)->len; i++) {
		yajl_val pr = YAJL_GET_ARRAY(procs)->values[i];

		EXPECT_EQ(q.device_index, num(pr, "device"));
		n += num(pr, "pid") == getpid();
	}
	EXPECT_EQ(1, n) TH_LOG("this process not listed:\n%s", out);
	yajl_tree_free(root);
	free(out);

	/* No such device: status 3, and the message names what there is. */
	out = run_smi_status("--interval 20 --id 63 2>&1", &status);
	ASSERT_NE(NULL, out);
	EXPECT_EQ(3, status) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "no vtpu device with index 63"))
		TH_LOG("%s", out);
	free(out);
	close(fd);
}

/* --loop 0.3 --count 3: three reports, one JSON document each, 0.3 s apart. */
TEST(loop_count_prints_that_many_reports)
{
	int fd = vtpu_open(0), docs = 0, ndev;
	char args[96], err[256];
	struct drm_vtpu_query q;
	__s64 t0, ms;
	char *out, *doc;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, vtpu_query(fd, &q));
	snprintf(args, sizeof(args), "--json --interval 20 --id %u -l 0.3 -c 3",
		 q.device_index);
	t0 = vtpu_now_ns();
	out = run_smi(args);
	ms = (vtpu_now_ns() - t0) / 1000000;
	ASSERT_NE(NULL, out);
	/* Beautified: only a document's own braces start a line. */
	for (doc = out; *doc; docs++) {
		char *end = strstr(doc, "\n}\n");
		yajl_val root;

		ASSERT_NE(NULL, end) TH_LOG("document %d unterminated:\n%s",
					    docs, doc);
		end[2] = 0;
		root = yajl_tree_parse(doc, err, sizeof(err));
		ASSERT_NE(NULL, root) TH_LOG("document %d not JSON (%s):\n%s",
					     docs, err, doc);
		EXPECT_NE(NULL, device_in(root, q.device_index, &ndev));
		EXPECT_EQ(1, ndev);
		yajl_tree_free(root);
		doc = end + 3;
	}
	EXPECT_EQ(3, docs);
	EXPECT_LE(600, ms) TH_LOG("3 reports 0.3 s apart in %lld ms",
				  (long long)ms);
	free(out);
	close(fd);
}

TEST_HARNESS_MAIN
