// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: vtpu-smi reports what the devices report. Its JSON gives
 * every device with the core count and HBM figures of QUERY and sysfs,
 * and lists this process's open files with the memory and engine time
 * their fdinfo shows; its table names this process too.
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

/* The whole output of "vtpu-smi ARGS", malloc'd, or NULL. */
static char *run_smi(const char *args)
{
	char path[PATH_MAX], cmd[PATH_MAX + 64];
	size_t len = 0, cap = 1 << 16;
	char *out = malloc(cap);
	FILE *p;
	size_t n;

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
	if (pclose(p)) {
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

TEST_HARNESS_MAIN
