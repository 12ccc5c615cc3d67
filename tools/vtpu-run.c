// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu-run: run an ONNX model or an XLA HLO text module with libvtpu.
 * Inputs come from ONNX TensorProto (.pb) or NumPy (.npy) files, or are
 * random with a seed; outputs are printed or saved as .npy. It says
 * which backend and device ran the model and where each buffer landed,
 * times compile and execution, and can record a profile.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vtpu.h"

#define MAX_IO	16

static const char usage[] =
	"usage: vtpu-run [OPTIONS] MODEL.onnx|MODEL.hlo\n"
	"\n"
	"Runs a model on a vtpu device (or the host backend) and prints its\n"
	"outputs. A MODEL ending in .onnx, or that is not text, is ONNX; any\n"
	"other is XLA HLO text.\n"
	"\n"
	"  -i, --input FILE     input tensor, .pb (ONNX TensorProto) or .npy of\n"
	"                       f32, f64, int32, int64 or bool (.npy also f16,\n"
	"                       int8, uint8, int16, uint16, uint32); once per\n"
	"                       input, in order (default: random). Converted to\n"
	"                       what the device computes in (f64 and f16 as f32,\n"
	"                       the integers and bool as s32, range-checked),\n"
	"                       with a note on stderr for each converted input\n"
	"                       and a warning when a value changes. HLO inputs\n"
	"                       must have the parameter's shape; for ONNX, inputs\n"
	"                       also fill symbolic dims and the shape-like\n"
	"                       values the model needs at compile time\n"
	"  -s, --seed N         seed for random inputs (default 1)\n"
	"  -o, --output-dir DIR save outputs as DIR/output_N.npy (DIR must exist)\n"
	"  -n, --repeat N       run N times and report the min, median (p50) and\n"
	"                       p90 time (default 1)\n"
	"  -w, --warmup N       untimed runs before those (default 1 when N > 1,\n"
	"                       else 0)\n"
	"  -b, --backend B      auto, accel or host (default: $VTPU_BACKEND, auto)\n"
	"  -c, --cores N        host backend: cores per device (default 2), each\n"
	"                       a thread running its share of a program's lanes\n"
	"  -p, --profile FILE   write a Chrome trace (open it in Perfetto)\n"
	"  -e, --expect FILE    expected output (.pb or .npy), once per output:\n"
	"                       prints the largest absolute and relative errors\n"
	"                       and the largest error relative to max|expected|;\n"
	"                       an element matches when |y - e| <= atol + rtol*|e|\n"
	"      --rtol X         relative tolerance (default 1e-3)\n"
	"      --atol X         absolute tolerance (default 1e-5)\n"
	"  -q, --quiet          do not print output values\n"
	"      --json           print one JSON object on stdout instead of the\n"
	"                       text report: model, backend, device, device_index,\n"
	"                       devices, cores, compile_ms, runs, warmup, min_ms,\n"
	"                       p50_ms, p90_ms, max_ms, inputs, outputs (shape,\n"
	"                       bytes, placement, file, and the comparison with\n"
	"                       --expect; no values: save them with -o), match\n"
	"                       and profile. Notes and errors stay on stderr\n"
	"  -h, --help           this text\n"
	"      --version        print the version and exit\n"
	"\n"
	"Exit status: 0 on success, 1 on an error or an output that does not\n"
	"match, 2 for a command-line error.\n"
	"\n"
	"environment: VTPU_HLO_UNROLL (iterations of a known-trip-count HLO while\n"
	"loop unrolled, default 64; the rest loops on the device),\n"
	"VTPU_HOST_JOB_TIMEOUT_MS (the host backend's job timeout, default 10000),\n"
	"VTPU_CACHE_DIR (where compiled programs are kept, default\n"
	"$XDG_CACHE_HOME/vtpu: a model run again with the same inputs' shapes\n"
	"is found there without being parsed); see vtpu-run(1) for the others.\n"
	"\n"
	"examples:\n"
	"  vtpu-run model.onnx\n"
	"  vtpu-run -i test_data_set_0/input_0.pb model.onnx\n"
	"  vtpu-run -b host -i x.npy -e y.npy --rtol 1e-2 model.onnx\n"
	"  vtpu-run -n 100 -p trace.json -b host mlp.hlo\n"
	"  vtpu-run -b host -n 20 --json -i x.npy mlp.hlo\n";

struct opts {
	const char *inputs[MAX_IO];
	int ninputs;
	const char *expect[MAX_IO];
	int nexpect;
	double rtol, atol;
	unsigned int seed;
	const char *outdir;
	int repeat;
	int warmup;			/* -1: the default */
	enum vtpu_backend backend;
	int cores;
	const char *profile;
	int quiet;
	int json;
	const char *model;
};

/* What the report says about one input or output. */
struct io_info {
	struct vtpu_shape s;
	uint64_t bytes;
	enum vtpu_placement placed;
	const char *file;		/* given input or saved output, or NULL */
	enum vtpu_elem from;		/* input converted from, or UNDEFINED */
	/* outputs with --expect */
	const char *expect;
	size_t want_n;			/* the expected tensor's elements */
	double abs_err, rel_err, of_max;
	int match;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *ends(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix) ? s + a - b : NULL;
}

/* GNU style: what was wrong, then where to look; exit status 2. */
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("vtpu-run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'vtpu-run --help'.\n", stderr);
	return 2;
}

/*
 * A file the run will read (@want_dir 0) or a directory it will write
 * into (1), checked before anything is compiled or run, so that a typo
 * costs nothing. vtpu_read_file() on a directory fails late and says
 * "Cannot allocate memory".
 */
static int check_path(const char *what, const char *path, int want_dir)
{
	struct stat st;

	if (stat(path, &st))
		return fprintf(stderr, "vtpu-run: %s %s: %s\n", what, path,
			       strerror(errno)), -1;
	if (!want_dir && S_ISDIR(st.st_mode))
		return fprintf(stderr, "vtpu-run: %s %s: is a directory, not a file\n",
			       what, path), -1;
	if (want_dir && !S_ISDIR(st.st_mode))
		return fprintf(stderr, "vtpu-run: %s %s: not a directory\n",
			       what, path), -1;
	if (want_dir && access(path, W_OK | X_OK))
		return fprintf(stderr, "vtpu-run: %s %s: %s\n", what, path,
			       strerror(errno)), -1;
	return 0;
}

static int load_tensor(const char *path, struct vtpu_tensor *t)
{
	char err[512];

	/* The loader zeroes @t on failure: nothing for the caller to free. */
	if (vtpu_tensor_load(path, t, err, sizeof(err)))
		return fprintf(stderr, "vtpu-run: %s\n", err), -1;
	return 0;
}

/* "f32[2,3]" */
static const char *shape_str(const char *type, int rank, const int64_t *dims,
			     char *buf, size_t len)
{
	size_t k = snprintf(buf, len, "%s[", type);
	int d;

	for (d = 0; d < rank && k < len; d++)
		k += snprintf(buf + k, len - k, "%s%lld", d ? "," : "",
			      (long long)dims[d]);
	if (k < len)
		snprintf(buf + k, len - k, "]");
	return buf;
}

static int is_float(enum vtpu_elem dt)
{
	return dt == VTPU_ELEM_FLOAT || dt == VTPU_ELEM_DOUBLE ||
	       dt == VTPU_ELEM_FLOAT16 || dt == VTPU_ELEM_BFLOAT16;
}

/*
 * Whether element @k came back from the device type as it was: a value
 * the device type cannot hold (2^24 + 1 as f32, 0.1 as f32 from f64)
 * does not. Integers compare as bytes, since a double cannot hold every
 * int64 either; floats as values, NaN equal to NaN.
 */
static int kept(enum vtpu_elem from, const void *src, enum vtpu_elem to,
		const void *dst, size_t k)
{
	size_t fs = vtpu_elem_size(from), ts = vtpu_elem_size(to);
	unsigned char back[16];
	double a, b;

	if (vtpu_elem_convert(to, (const char *)dst + k * ts, 1, from, back,
			      NULL, 0))
		return 0;
	if (!is_float(from))
		return !memcmp(back, (const char *)src + k * fs, fs);
	if (vtpu_elem_convert(from, back, 1, VTPU_ELEM_DOUBLE, &a, NULL, 0) ||
	    vtpu_elem_convert(from, (const char *)src + k * fs, 1,
			      VTPU_ELEM_DOUBLE, &b, NULL, 0))
		return 0;
	return a == b || (a != a && b != b);
}

/* Element @k of @dt at @p, printed exactly enough to see the change. */
static void print_elem(FILE *f, enum vtpu_elem dt, const void *p, size_t k)
{
	double v = 0;

	if (dt == VTPU_ELEM_INT64) {
		int64_t i;

		memcpy(&i, (const char *)p + k * 8, 8);
		fprintf(f, "%lld", (long long)i);
		return;
	}
	vtpu_elem_convert(dt, (const char *)p + k * vtpu_elem_size(dt), 1,
			  VTPU_ELEM_DOUBLE, &v, NULL, 0);
	fprintf(f, "%.17g", v);
}

/*
 * @t in the device type of @s (what the compiler made of the model's
 * type: int64 computes as s32, double as f32, bool as s32 0/1); values
 * an s32 cannot hold are an error, not a silent wrap. A file's tensor
 * that needs converting gets a note, and a warning when the conversion
 * changes a value. @exact_shape (HLO): the dims must be the
 * parameter's, not only their product.
 */
static void *to_device(const struct vtpu_tensor *t, const struct vtpu_shape *s,
		       const char *what, int from_file, int exact_shape,
		       struct io_info *io)
{
	enum vtpu_elem to = vtpu_type_elem(s->type);
	size_t n = vtpu_shape_elems(s), k, changed = 0, first = 0;
	char err[256], want[160], got[160];
	int d, same = t->rank == s->rank;
	void *dst;

	for (d = 0; same && d < s->rank; d++)
		same = t->dims[d] == s->dims[d];
	if (t->n != n || (exact_shape && !same)) {
		fprintf(stderr, "vtpu-run: %s has shape %s, the model wants %s\n",
			what, shape_str(vtpu_elem_name(t->dtype), t->rank,
					t->dims, got, sizeof(got)),
			shape_str(vtpu_type_name(s->type), s->rank, s->dims,
				  want, sizeof(want)));
		return NULL;
	}
	dst = malloc(n * vtpu_type_size(s->type) + 1);
	if (!dst)
		return fprintf(stderr, "vtpu-run: %s: out of memory\n", what), NULL;
	if (vtpu_elem_convert(t->dtype, t->data, n, to, dst, err,
			      sizeof(err))) {
		fprintf(stderr, "vtpu-run: %s: %s\n", what, err);
		free(dst);
		return NULL;
	}
	if (!from_file || t->dtype == to)
		return dst;
	io->from = t->dtype;
	fprintf(stderr, "vtpu-run: note: %s: converted from %s to %s, what the model computes in\n",
		what, vtpu_elem_name(t->dtype), vtpu_elem_name(to));
	for (k = 0; k < n; k++)
		if (!kept(t->dtype, t->data, to, dst, k) && !changed++)
			first = k;
	if (changed) {
		fprintf(stderr, "vtpu-run: warning: %s: %zu of %zu values changed by the conversion (element %zu: ",
			what, changed, n, first);
		print_elem(stderr, t->dtype, t->data, first);
		fputs(" became ", stderr);
		print_elem(stderr, to, dst, first);
		fputs(")\n", stderr);
	}
	return dst;
}

/* Elements of @t as doubles, for printing and comparing. */
static double *as_doubles(enum vtpu_elem dt, const void *src, size_t n)
{
	double *v = malloc(n * sizeof(*v) + 1);

	if (v && vtpu_elem_convert(dt, src, n, VTPU_ELEM_DOUBLE, v, NULL, 0)) {
		free(v);
		return NULL;
	}
	return v;
}

/* Device data of @s as .npy; NumPy has no bfloat16, so that widens. */
static int save_npy(const char *path, const void *data,
		    const struct vtpu_shape *s)
{
	struct vtpu_tensor t = { .dtype = vtpu_type_elem(s->type),
				 .rank = s->rank, .n = vtpu_shape_elems(s),
				 .data = (void *)data };
	float *f32 = NULL;
	char err[512];
	int ret;

	memcpy(t.dims, s->dims, sizeof(s->dims));
	if (s->type == VTPU_BF16) {
		f32 = malloc(t.n * sizeof(*f32) + 1);
		if (!f32 || vtpu_elem_convert(t.dtype, data, t.n,
					      VTPU_ELEM_FLOAT, f32, NULL, 0)) {
			free(f32);
			return -1;
		}
		t.dtype = VTPU_ELEM_FLOAT;
		t.data = f32;
	}
	ret = vtpu_tensor_save_npy(path, &t, err, sizeof(err));
	if (ret)
		fprintf(stderr, "vtpu-run: %s\n", err);
	free(f32);
	return ret;
}

/*
 * Compiles with bindings (vtpu_onnx_parse_bound()): the i-th input file
 * binds the i-th graph input that is not an initializer (or the one its
 * name names), its dims (they fill symbolic ones) and its values (they
 * may be a shape, scales or the like, which the model needs at compile
 * time). The compile cache finds bytes and bindings it has seen without
 * parsing them. Returns 0, or -1 with the message printed.
 */
static int compile_onnx(struct vtpu_client *c, const char *path,
			const void *buf, size_t len,
			const struct vtpu_tensor *in, int nin,
			struct vtpu_executable **exe)
{
	struct vtpu_onnx_binding b[MAX_IO];
	struct vtpu_model_info *m = NULL;
	void *vals = NULL;
	char err[512];
	int nb = 0, ret;

	/* Bytes that do not decode: vtpu_onnx_parse_bound() will say why. */
	if (!vtpu_model_info(buf, len, &m, NULL, 0)) {
		nb = vtpu_model_bind(m, in, nin, b, &vals, err, sizeof(err));
		if (nb < 0) {
			vtpu_model_info_free(m);
			fprintf(stderr, "vtpu-run: %s: %s\n", path, err);
			return -1;
		}
	}
	ret = vtpu_executable_compile_onnx(c, buf, len, b, nb, exe);
	free(vals);
	vtpu_model_info_free(m);
	if (ret)
		fprintf(stderr, "vtpu-run: %s: %s\n", path, vtpu_client_error(c));
	return ret ? -1 : 0;
}

/*
 * ONNX by name, else by content: a ModelProto starts with a field tag
 * (ir_version's is 0x08), which HLO text never has.
 */
static int is_onnx(const char *path, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t k;

	if (ends(path, ".onnx"))
		return 1;
	if (ends(path, ".hlo"))
		return 0;
	for (k = 0; k < len && k < 4096; k++)
		if (p[k] < 0x09 || (p[k] > 0x0d && p[k] < 0x20))
			return 1;
	return 0;
}

static int compile_model(struct vtpu_client *c, const char *path,
			 const struct vtpu_tensor *in, int nin,
			 struct vtpu_executable **exe, int *onnx)
{
	size_t len;
	void *buf;
	int ret = vtpu_read_file(path, &buf, &len);

	if (ret)
		return fprintf(stderr, "vtpu-run: cannot read %s: %s\n", path,
			       strerror(-ret)), -1;
	*onnx = is_onnx(path, buf, len);
	if (*onnx) {
		ret = compile_onnx(c, path, buf, len, in, nin, exe);
		free(buf);
		return ret;
	}
	ret = vtpu_executable_compile_hlo(c, buf, len, exe);
	free(buf);
	if (ret)
		fprintf(stderr, "vtpu-run: %s: %s\n", path, vtpu_client_error(c));
	return ret ? -1 : 0;
}

static const char *placement(enum vtpu_placement p)
{
	return p == VTPU_PLACE_HBM ? "HBM" : p == VTPU_PLACE_HOST ? "host" : "auto";
}

static void progress(int done, int total)
{
	static int tty = -1;	/* asked once: isatty() is a system call */
	int w = 40, k = done * w / total;

	if (tty < 0)
		tty = isatty(2);
	if (!tty || total < 2)
		return;
	fprintf(stderr, "\r[%.*s%*s] %d/%d", k,
		"########################################", w - k, "", done,
		total);
	if (done == total)
		fputc('\n', stderr);
}

/*
 * The device that ran the model: the buffers decide it (the least
 * loaded one when they were made), so ask the runtime's per-device
 * counts rather than guess.
 */
static int ran_on(struct vtpu_client *c, struct vtpu_device_info *di)
{
	struct vtpu_device *dev;
	struct vtpu_stats st;
	int d, best = 0;

	if (!vtpu_client_stats(c, &st))
		for (d = 1; d < st.ndevices && d < 16; d++)
			if (st.device[d].executions > st.device[best].executions)
				best = d;
	memset(di, 0, sizeof(*di));
	if (vtpu_client_device(c, best, &dev) || vtpu_device_info(dev, di))
		snprintf(di->name, sizeof(di->name), "unknown");
	di->index = best;
	return best;
}

/* What the compiler expected and what the runtime saw. */
static void print_summary(struct vtpu_client *c, struct vtpu_executable *exe)
{
	struct vtpu_stats st;
	struct vtpu_cost cost;
	int d;

	if (!vtpu_executable_cost(exe, &cost))
		printf("cost model: %.0f FLOPs, %.0f bytes moved, est. %.1f us; %u instructions in %u kernels\n",
		       cost.flops, cost.bytes_moved, cost.est_time_ns / 1e3,
		       cost.insn_count, cost.kernel_count);
	if (vtpu_client_stats(c, &st))
		return;
	printf("runtime: %llu executions, avg %.1f us, %llu retries, cache hit rate %.2f\n",
	       (unsigned long long)st.executions, st.avg_execution_ns / 1e3,
	       (unsigned long long)st.retries, st.cache_hit_rate);
	for (d = 0; d < st.ndevices && d < 16; d++)
		printf("device %d: utilisation %.1f%%, memory %.1f%% of %llu bytes\n",
		       d, 100 * st.device[d].utilisation,
		       100 * st.device[d].memory_utilisation,
		       (unsigned long long)st.device[d].hbm_total);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void print_output(int i, const double *v, const struct vtpu_shape *s)
{
	size_t n = vtpu_shape_elems(s), k;
	char sh[160];

	printf("output %d: %s =", i, shape_str(vtpu_type_name(s->type),
						s->rank, s->dims, sh,
						sizeof(sh)));
	for (k = 0; k < n && k < 8; k++)
		printf(" %.6g", v[k]);
	printf("%s\n", n > 8 ? " ..." : "");
}

/*
 * Compares with an expected tensor; 1 when every element is within
 * atol + rtol * |expected| (ONNX Runtime's test runner's rule). The
 * error relative to max|expected| is the fair single figure for float32
 * results of long reductions, whose small elements carry the absolute
 * error of the large ones. The figures go into @io; -1 when the
 * expected file cannot be read.
 */
static int check_expected(const double *got, const struct vtpu_shape *s,
			  const char *path, const struct opts *o,
			  struct io_info *io)
{
	size_t n = vtpu_shape_elems(s), k;
	struct vtpu_tensor want;
	double abs_err = 0, rel_err = 0, ref_max = 0, *wv;
	int ok = 1;

	io->expect = path;
	io->match = 0;
	if (load_tensor(path, &want))
		return -1;
	io->want_n = want.n;
	if (want.n != n) {
		vtpu_tensor_free(&want);
		return 0;
	}
	wv = as_doubles(want.dtype, want.data, n);
	vtpu_tensor_free(&want);
	if (!wv)
		return -1;
	for (k = 0; k < n; k++) {
		double w = wv[k], d = got[k] > w ? got[k] - w : w - got[k];
		double m = w < 0 ? -w : w;

		if (d > abs_err || d != d)
			abs_err = d;
		if (m > 0 && d / m > rel_err)
			rel_err = d / m;
		if (m > ref_max)
			ref_max = m;
		if (!(d <= o->atol + o->rtol * m) && !(got[k] == w))
			ok = 0;
	}
	free(wv);
	io->abs_err = abs_err;
	io->rel_err = rel_err;
	io->of_max = ref_max > 0 ? abs_err / ref_max : abs_err;
	io->match = ok;
	return ok;
}

static void print_expected(int i, size_t n, const struct io_info *io,
			   const struct opts *o)
{
	if (io->want_n != n)
		printf("output %d vs %s: %zu elements, expected %zu: MISMATCH\n",
		       i, io->expect, n, io->want_n);
	else
		printf("output %d vs %s: max abs error %.3g, max rel error %.3g, %.3g of max|expected|: %s (rtol %g, atol %g)\n",
		       i, io->expect, io->abs_err, io->rel_err, io->of_max,
		       io->match ? "match" : "MISMATCH", o->rtol, o->atol);
}

/* ---- JSON report ------------------------------------------------------- */

static void json_str(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = *s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* JSON has no NaN or infinity: those are null. */
static void json_num(double v)
{
	if (isfinite(v))
		printf("%.6g", v);
	else
		fputs("null", stdout);
}

static void json_io(const char *key, const struct io_info *io, int n)
{
	char sh[160];
	int i;

	printf(", \"%s\": [", key);
	for (i = 0; i < n; i++) {
		const struct io_info *x = &io[i];

		printf("%s{\"index\": %d, \"shape\": ", i ? ", " : "", i);
		json_str(shape_str(vtpu_type_name(x->s.type), x->s.rank,
				   x->s.dims, sh, sizeof(sh)));
		printf(", \"bytes\": %llu, \"placement\": \"%s\", \"file\": ",
		       (unsigned long long)x->bytes, placement(x->placed));
		json_str(x->file);
		if (x->from) {
			printf(", \"converted_from\": ");
			json_str(vtpu_elem_name(x->from));
		}
		if (x->expect) {
			printf(", \"expect\": {\"file\": ");
			json_str(x->expect);
			printf(", \"elements\": %zu", x->want_n);
			if (x->want_n == vtpu_shape_elems(&x->s)) {
				printf(", \"max_abs_error\": ");
				json_num(x->abs_err);
				printf(", \"max_rel_error\": ");
				json_num(x->rel_err);
				printf(", \"of_max_expected\": ");
				json_num(x->of_max);
			}
			printf(", \"match\": %s}", x->match ? "true" : "false");
		}
		putchar('}');
	}
	putchar(']');
}

/* ---- command line ------------------------------------------------------ */

/* An integer option from @lo to @hi, or a usage error. */
static int int_arg(const char *opt, const char *s, long lo, long hi, int *out)
{
	char *e;
	long x;

	errno = 0;
	x = strtol(s, &e, 10);
	if (errno || e == s || *e || x < lo || x > hi)
		return usage_error("%s wants a number from %ld to %ld, not '%s'",
				   opt, lo, hi, s);
	*out = (int)x;
	return 0;
}

enum { OPT_RTOL = 256, OPT_ATOL, OPT_JSON, OPT_VERSION };

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 's' },
		{ "output-dir", required_argument, NULL, 'o' },
		{ "repeat", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "backend", required_argument, NULL, 'b' },
		{ "cores", required_argument, NULL, 'c' },
		{ "profile", required_argument, NULL, 'p' },
		{ "expect", required_argument, NULL, 'e' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "rtol", required_argument, NULL, OPT_RTOL },
		{ "atol", required_argument, NULL, OPT_ATOL },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 },
	};
	int c, r;

	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->repeat = 1;
	o->warmup = -1;
	o->rtol = 1e-3;
	o->atol = 1e-5;
	o->backend = VTPU_BACKEND_AUTO;
	/* Our own messages: getopt's would name argv[0], a full path. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:s:o:n:w:b:c:p:e:qh", longopts,
				NULL)) != -1) {
		r = 0;
		switch (c) {
		case 'i':
			if (o->ninputs == MAX_IO)
				return usage_error("more than %d inputs", MAX_IO);
			o->inputs[o->ninputs++] = optarg;
			break;
		case 'e':
			if (o->nexpect == MAX_IO)
				return usage_error("more than %d expected outputs",
						   MAX_IO);
			o->expect[o->nexpect++] = optarg;
			break;
		case 's': {
			char *e;

			errno = 0;
			o->seed = strtoul(optarg, &e, 0);
			if (errno || e == optarg || *e)
				return usage_error("--seed wants a number, not '%s'",
						   optarg);
			break;
		}
		case 'o': o->outdir = optarg; break;
		case 'n': r = int_arg("--repeat", optarg, 1, 1000000, &o->repeat); break;
		case 'w': r = int_arg("--warmup", optarg, 0, 1000000, &o->warmup); break;
		case 'b':
			if (!strcmp(optarg, "host"))
				o->backend = VTPU_BACKEND_HOST;
			else if (!strcmp(optarg, "accel"))
				o->backend = VTPU_BACKEND_ACCEL;
			else if (strcmp(optarg, "auto"))
				return usage_error("--backend wants auto, accel or host, not '%s'",
						   optarg);
			break;
		case 'c': r = int_arg("--cores", optarg, 1, 64, &o->cores); break;
		case 'p': o->profile = optarg; break;
		case 'q': o->quiet = 1; break;
		case OPT_JSON: o->json = 1; break;
		case OPT_RTOL:
		case OPT_ATOL: {
			char *e;
			double x = strtod(optarg, &e);

			if (e == optarg || *e || !(x >= 0))
				return usage_error("--%s wants a number >= 0, not '%s'",
						   c == OPT_RTOL ? "rtol" : "atol",
						   optarg);
			*(c == OPT_RTOL ? &o->rtol : &o->atol) = x;
			break;
		}
		case 'h': fputs(usage, stdout); exit(0);
		case OPT_VERSION:
			printf("vtpu-run %d.%d\n", VTPU_VERSION_MAJOR,
			       VTPU_VERSION_MINOR);
			exit(0);
		case ':':
			return usage_error("option '%s' needs an argument",
					   argv[optind - 1]);
		default:
			if (optopt)
				return usage_error("unknown option -- '%c'", optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
		if (r)
			return r;
	}
	if (optind == argc)
		return usage_error("no model given");
	if (optind != argc - 1)
		return usage_error("one model, please; '%s' is one too many",
				   argv[optind + 1]);
	if (o->warmup < 0)
		o->warmup = o->repeat > 1;
	o->model = argv[optind];
	return 0;
}

/* Everything that names a file is checked before the client opens. */
static int check_paths(const struct opts *o)
{
	int i;

	if (check_path("model", o->model, 0))
		return -1;
	for (i = 0; i < o->ninputs; i++)
		if (check_path("input", o->inputs[i], 0))
			return -1;
	for (i = 0; i < o->nexpect; i++)
		if (check_path("expected output", o->expect[i], 0))
			return -1;
	if (o->outdir && check_path("output directory", o->outdir, 1))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct vtpu_buffer *in[MAX_IO] = { 0 }, *out[MAX_IO] = { 0 };
	struct io_info iin[MAX_IO] = { 0 }, iout[MAX_IO] = { 0 };
	char saved[MAX_IO][512];
	struct vtpu_client_options co;
	struct vtpu_executable *exe = NULL;
	struct vtpu_device_info di;
	struct vtpu_profile *prof = NULL;
	struct vtpu_client *c = NULL;
	struct vtpu_shape s;
	double t0, tc, *times = NULL, p50, p90, sum = 0;
	int i, nin, nout, r, ret = 1, mismatch = 0, onnx = 0, profiled = 0;
	struct opts o;
	struct vtpu_tensor tin[MAX_IO] = { 0 };
	void *data;

	r = parse_args(argc, argv, &o);
	if (r)
		return r;
	if (check_paths(&o))
		return 1;
	vtpu_client_options_init(&co);
	co.backend = o.backend;
	if (o.cores)
		co.host_cores = o.cores;
	if (vtpu_client_create(&co, &c))
		return fprintf(stderr, "vtpu-run: %s\n", vtpu_client_error(NULL)), 1;
	if (o.profile && vtpu_profile_start(c, &prof))
		fprintf(stderr, "vtpu-run: no profile: %s\n", vtpu_client_error(c));
	for (i = 0; i < o.ninputs; i++)
		if (load_tensor(o.inputs[i], &tin[i]))
			goto out;
	t0 = now();
	if (compile_model(c, o.model, tin, o.ninputs, &exe, &onnx))
		goto out;
	tc = now() - t0;
	nin = vtpu_executable_num_inputs(exe);
	nout = vtpu_executable_num_outputs(exe);
	if (o.ninputs && o.ninputs != nin) {
		fprintf(stderr, "vtpu-run: the model takes %d inputs, %d given\n",
			nin, o.ninputs);
		goto out;
	}
	if (nin > MAX_IO || nout > MAX_IO) {
		fprintf(stderr, "vtpu-run: more than %d inputs or outputs\n", MAX_IO);
		goto out;
	}
	srand(o.seed);
	for (i = 0; i < nin; i++) {
		char what[600];
		size_t n, k, bytes;
		struct vtpu_tensor rnd = { .dtype = VTPU_ELEM_DOUBLE };
		double *rv;
		void *dev;

		vtpu_executable_input_shape(exe, i, &s);
		n = vtpu_shape_elems(&s);
		bytes = n * vtpu_type_size(s.type);
		if (!o.ninputs) {
			rnd.rank = s.rank;
			memcpy(rnd.dims, s.dims, sizeof(s.dims));
			rnd.n = n;
			rnd.data = rv = malloc(n * sizeof(double) + 1);
			if (!rv)
				goto out;
			for (k = 0; k < n; k++)
				rv[k] = s.type == VTPU_S32 ? rand() % 10 :
					   (double)rand() / RAND_MAX * 2 - 1;
			snprintf(what, sizeof(what), "input %d", i);
		} else {
			snprintf(what, sizeof(what), "input %d (%s)", i,
				 o.inputs[i]);
			iin[i].file = o.inputs[i];
		}
		iin[i].s = s;
		dev = to_device(o.ninputs ? &tin[i] : &rnd, &s, what,
				o.ninputs > 0, !onnx, &iin[i]);
		free(rnd.data);
		if (!dev)
			goto out;
		if (vtpu_buffer_create(c, NULL, bytes, VTPU_PLACE_AUTO, &in[i]) ||
		    vtpu_buffer_upload(in[i], 0, dev, bytes)) {
			fprintf(stderr, "vtpu-run: input %d: %s\n", i,
				vtpu_client_error(c));
			free(dev);
			goto out;
		}
		free(dev);
		iin[i].bytes = vtpu_buffer_size(in[i]);
		iin[i].placed = vtpu_buffer_placement(in[i]);
	}
	for (i = 0; i < nout; i++) {
		vtpu_executable_output_shape(exe, i, &s);
		if (vtpu_buffer_create(c, NULL,
				       vtpu_shape_elems(&s) * vtpu_type_size(s.type),
				       VTPU_PLACE_AUTO, &out[i])) {
			fprintf(stderr, "vtpu-run: output %d: %s\n", i,
				vtpu_client_error(c));
			goto out;
		}
	}
	/* Warm-up: the first run loads the program and weights, pools memory. */
	for (r = 0; r < o.warmup; r++)
		if (vtpu_execute(c, exe, in, out)) {
			fprintf(stderr, "vtpu-run: warm-up run %d: %s\n", r,
				vtpu_client_error(c));
			goto out;
		}
	times = calloc(o.repeat, sizeof(double));
	if (!times)
		goto out;
	for (r = 0; r < o.repeat; r++) {
		t0 = now();
		if (vtpu_execute(c, exe, in, out)) {
			fprintf(stderr, "vtpu-run: run %d: %s\n", r,
				vtpu_client_error(c));
			goto out;
		}
		times[r] = now() - t0;
		sum += times[r];
		progress(r + 1, o.repeat);
	}
	qsort(times, o.repeat, sizeof(double), cmp_double);
	/* p50 as before (the upper middle), p90 by nearest rank */
	p50 = times[o.repeat / 2];
	p90 = times[(9 * o.repeat + 9) / 10 - 1];
	ran_on(c, &di);
	if (!o.json) {
		printf("backend %s, device %s (index %d of %d, %d cores); compile %.2f ms; run %.4f ms (median of %d)\n",
		       vtpu_client_backend(c), di.name, di.index,
		       vtpu_client_device_count(c), di.cores, tc * 1e3,
		       p50 * 1e3, o.repeat);
		printf("timing: min %.4f ms, p50 %.4f ms, p90 %.4f ms, max %.4f ms over %d run(s) after %d warm-up run(s)\n",
		       times[0] * 1e3, p50 * 1e3, p90 * 1e3,
		       times[o.repeat - 1] * 1e3, o.repeat, o.warmup);
		for (i = 0; i < nin; i++)
			printf("input %d: %llu bytes in %s\n", i,
			       (unsigned long long)iin[i].bytes,
			       placement(iin[i].placed));
	}
	for (i = 0; i < nout; i++) {
		double *v;
		size_t bytes;

		vtpu_executable_output_shape(exe, i, &s);
		bytes = vtpu_shape_elems(&s) * vtpu_type_size(s.type);
		iout[i].s = s;
		iout[i].bytes = vtpu_buffer_size(out[i]);
		iout[i].placed = vtpu_buffer_placement(out[i]);
		data = malloc(bytes + 1);
		if (!data || vtpu_buffer_download(out[i], 0, data, bytes)) {
			fprintf(stderr, "vtpu-run: output %d: %s\n", i,
				data ? vtpu_client_error(c) : "out of memory");
			free(data);
			goto out;
		}
		if (!o.json)
			printf("output %d: %llu bytes in %s\n", i,
			       (unsigned long long)iout[i].bytes,
			       placement(iout[i].placed));
		v = as_doubles(vtpu_type_elem(s.type), data, vtpu_shape_elems(&s));
		if (!v) {
			free(data);
			goto out;
		}
		if (!o.quiet && !o.json)
			print_output(i, v, &s);
		if (i < o.nexpect) {
			r = check_expected(v, &s, o.expect[i], &o, &iout[i]);
			if (r < 0) {
				free(v);
				free(data);
				goto out;
			}
			if (!r)
				mismatch = 1;
			if (!o.json)
				print_expected(i, vtpu_shape_elems(&s), &iout[i], &o);
		}
		free(v);
		if (o.outdir) {
			snprintf(saved[i], sizeof(saved[i]), "%s/output_%d.npy",
				 o.outdir, i);
			if (save_npy(saved[i], data, &s)) {
				free(data);
				goto out;
			}
			iout[i].file = saved[i];
		}
		free(data);
	}
	if (!o.json)
		print_summary(c, exe);
	if (prof && vtpu_profile_stop(prof, o.profile))
		fprintf(stderr, "vtpu-run: %s\n", vtpu_client_error(c));
	else if (prof)
		profiled = 1;
	if (profiled && !o.json)
		printf("profile: %s (Chrome trace; open it in Perfetto)\n", o.profile);
	if (o.json) {
		printf("{\"model\": ");
		json_str(o.model);
		printf(", \"format\": \"%s\", \"backend\": ", onnx ? "onnx" : "hlo");
		json_str(vtpu_client_backend(c));
		printf(", \"device\": ");
		json_str(di.name);
		printf(", \"device_index\": %d, \"devices\": %d, \"cores\": %d",
		       di.index, vtpu_client_device_count(c), di.cores);
		printf(", \"compile_ms\": ");
		json_num(tc * 1e3);
		printf(", \"runs\": %d, \"warmup\": %d, \"min_ms\": ", o.repeat,
		       o.warmup);
		json_num(times[0] * 1e3);
		printf(", \"p50_ms\": ");
		json_num(p50 * 1e3);
		printf(", \"p90_ms\": ");
		json_num(p90 * 1e3);
		printf(", \"max_ms\": ");
		json_num(times[o.repeat - 1] * 1e3);
		printf(", \"mean_ms\": ");
		json_num(sum / o.repeat * 1e3);
		json_io("inputs", iin, nin);
		json_io("outputs", iout, nout);
		printf(", \"match\": %s, \"profile\": ",
		       !o.nexpect ? "null" : mismatch ? "false" : "true");
		json_str(profiled ? o.profile : NULL);
		printf("}\n");
	}
	ret = mismatch;
out:
	free(times);
	if (prof)
		vtpu_profile_destroy(prof);
	for (i = 0; i < MAX_IO; i++) {
		if (in[i])
			vtpu_buffer_destroy(in[i]);
		if (out[i])
			vtpu_buffer_destroy(out[i]);
	}
	if (exe)
		vtpu_executable_destroy(exe);
	for (i = 0; i < MAX_IO; i++)
		vtpu_tensor_free(&tin[i]);
	vtpu_client_destroy(c);
	return ret;
}
