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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vtpu.h"

#define MAX_IO	16

static const char usage[] =
	"usage: vtpu-run [OPTIONS] MODEL.onnx|MODEL.hlo\n"
	"\n"
	"Runs a model on a vtpu device (or the host backend) and prints its\n"
	"outputs.\n"
	"\n"
	"  -i, --input FILE     input tensor, .pb (ONNX TensorProto) or .npy of\n"
	"                       f32, f64, int32, int64 or bool (.npy also f16,\n"
	"                       int8, uint8, int16, uint16, uint32); once per\n"
	"                       input, in order (default: random). Converted to\n"
	"                       what the device computes in (f64 and f16 as f32,\n"
	"                       the integers and bool as s32, range-checked).\n"
	"                       For ONNX, inputs\n"
	"                       also fill symbolic dims and the shape-like\n"
	"                       values the model needs at compile time\n"
	"  -s, --seed N         seed for random inputs (default 1)\n"
	"  -o, --output-dir DIR save outputs as DIR/output_N.npy\n"
	"  -n, --repeat N       run N times and report the median (default 1)\n"
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
	"  -h, --help           this text\n"
	"\n"
	"examples:\n"
	"  vtpu-run model.onnx\n"
	"  vtpu-run -i test_data_set_0/input_0.pb model.onnx\n"
	"  vtpu-run -b host -i x.npy -e y.npy --rtol 1e-2 model.onnx\n"
	"  vtpu-run -n 100 -p trace.json -b host mlp.hlo\n";

struct opts {
	const char *inputs[MAX_IO];
	int ninputs;
	const char *expect[MAX_IO];
	int nexpect;
	double rtol, atol;
	unsigned int seed;
	const char *outdir;
	int repeat;
	const char *backend;
	int cores;
	const char *profile;
	int quiet;
	const char *model;
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

static int load_tensor(const char *path, struct vtpu_tensor *t)
{
	char err[512];

	if (vtpu_tensor_load(path, t, err, sizeof(err)))
		return fprintf(stderr, "vtpu-run: %s\n", err), -1;
	return 0;
}

/*
 * @t in the device type of @s (what the compiler made of the model's
 * type: int64 computes as s32, double as f32, bool as s32 0/1); values
 * an s32 cannot hold are an error, not a silent wrap.
 */
static void *to_device(const struct vtpu_tensor *t, const struct vtpu_shape *s,
		       const char *what)
{
	size_t n = vtpu_shape_elems(s);
	char err[256];
	void *dst;

	if (t->n != n) {
		fprintf(stderr, "vtpu-run: %s has %zu elements, the model wants %zu\n",
			what, t->n, n);
		return NULL;
	}
	dst = malloc(n * vtpu_type_size(s->type) + 1);
	if (dst && vtpu_elem_convert(t->dtype, t->data, n,
				     vtpu_type_elem(s->type), dst, err,
				     sizeof(err))) {
		fprintf(stderr, "vtpu-run: %s: %s\n", what, err);
		free(dst);
		return NULL;
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
 * Bindings for vtpu_onnx_parse_bound(): the i-th input file binds the
 * i-th graph input that is not an initializer (or the one its name
 * names), its dims (they fill symbolic ones) and its values (they may
 * be a shape, scales or the like, which the model needs at compile
 * time).
 */
static int parse_onnx(const void *buf, size_t len, const struct vtpu_tensor *in,
		      int nin, struct vtpu_graph **g, char *err, size_t errlen)
{
	struct vtpu_onnx_binding b[MAX_IO];
	struct vtpu_model_info *m = NULL;
	void *vals = NULL;
	int nb = 0, ret;

	/* Bytes that do not decode: vtpu_onnx_parse_bound() will say why. */
	if (!vtpu_model_info(buf, len, &m, NULL, 0)) {
		nb = vtpu_model_bind(m, in, nin, b, &vals, err, errlen);
		if (nb < 0) {
			vtpu_model_info_free(m);
			return nb;
		}
	}
	ret = vtpu_onnx_parse_bound(buf, len, b, nb, g, err, errlen);
	free(vals);
	vtpu_model_info_free(m);
	return ret;
}

static int compile_model(struct vtpu_client *c, const char *path,
			 const struct vtpu_tensor *in, int nin,
			 struct vtpu_executable **exe)
{
	struct vtpu_graph *g = NULL;
	char err[512];
	size_t len;
	void *buf;
	int ret = vtpu_read_file(path, &buf, &len);

	if (ret)
		return fprintf(stderr, "vtpu-run: cannot read %s: %s\n", path,
			       strerror(-ret)), -1;
	if (ends(path, ".onnx")) {
		ret = parse_onnx(buf, len, in, nin, &g, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "vtpu-run: %s: %s\n", path, err);
			free(buf);
			return -1;
		}
		ret = vtpu_executable_compile(c, g, exe);
		vtpu_graph_free(g);
	} else {
		ret = vtpu_executable_compile_hlo(c, buf, len, exe);
	}
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
	int d;

	printf("output %d: %s[", i, vtpu_type_name(s->type));
	for (d = 0; d < s->rank; d++)
		printf("%s%lld", d ? "," : "", (long long)s->dims[d]);
	printf("] =");
	for (k = 0; k < n && k < 8; k++)
		printf(" %.6g", v[k]);
	printf("%s\n", n > 8 ? " ..." : "");
}

/*
 * Compares with an expected tensor; 1 when every element is within
 * atol + rtol * |expected| (ONNX Runtime's test runner's rule). The
 * error relative to max|expected| is the fair single figure for float32
 * results of long reductions, whose small elements carry the absolute
 * error of the large ones.
 */
static int check_expected(int i, const double *got, const struct vtpu_shape *s,
			  const char *path, const struct opts *o)
{
	size_t n = vtpu_shape_elems(s), k;
	struct vtpu_tensor want;
	double abs_err = 0, rel_err = 0, ref_max = 0, *wv;
	int ok = 1;

	if (load_tensor(path, &want))
		return 0;
	if (want.n != n) {
		printf("output %d vs %s: %zu elements, expected %zu: MISMATCH\n",
		       i, path, n, want.n);
		vtpu_tensor_free(&want);
		return 0;
	}
	wv = as_doubles(want.dtype, want.data, n);
	vtpu_tensor_free(&want);
	if (!wv)
		return 0;
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
	printf("output %d vs %s: max abs error %.3g, max rel error %.3g, %.3g of max|expected|: %s (rtol %g, atol %g)\n",
	       i, path, abs_err, rel_err,
	       ref_max > 0 ? abs_err / ref_max : abs_err,
	       ok ? "match" : "MISMATCH", o->rtol, o->atol);
	free(wv);
	return ok;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 's' },
		{ "output-dir", required_argument, NULL, 'o' },
		{ "repeat", required_argument, NULL, 'n' },
		{ "backend", required_argument, NULL, 'b' },
		{ "cores", required_argument, NULL, 'c' },
		{ "profile", required_argument, NULL, 'p' },
		{ "expect", required_argument, NULL, 'e' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "rtol", required_argument, NULL, 'R' },
		{ "atol", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->repeat = 1;
	o->rtol = 1e-3;
	o->atol = 1e-5;
	while ((c = getopt_long(argc, argv, "i:s:o:n:b:c:p:e:qh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'i':
			if (o->ninputs == MAX_IO)
				return fprintf(stderr, "vtpu-run: too many inputs\n"), 2;
			o->inputs[o->ninputs++] = optarg;
			break;
		case 'e':
			if (o->nexpect == MAX_IO)
				return fprintf(stderr, "vtpu-run: too many outputs\n"), 2;
			o->expect[o->nexpect++] = optarg;
			break;
		case 's': o->seed = strtoul(optarg, NULL, 0); break;
		case 'o': o->outdir = optarg; break;
		case 'n': o->repeat = atoi(optarg); break;
		case 'b': o->backend = optarg; break;
		case 'c': {
			char *e;
			long x = strtol(optarg, &e, 10);

			if (e == optarg || *e || x < 1 || x > 64)
				return fprintf(stderr, "vtpu-run: --cores wants a number from 1 to 64\n"), 2;
			o->cores = (int)x;
			break;
		}
		case 'p': o->profile = optarg; break;
		case 'q': o->quiet = 1; break;
		case 'R':
		case 'A': {
			char *e;
			double x = strtod(optarg, &e);

			if (e == optarg || *e || !(x >= 0))
				return fprintf(stderr, "vtpu-run: --%s wants a number >= 0\n",
					       c == 'R' ? "rtol" : "atol"), 2;
			*(c == 'R' ? &o->rtol : &o->atol) = x;
			break;
		}
		case 'h': fputs(usage, stdout); exit(0);
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind != argc - 1 || o->repeat < 1) {
		fputs(usage, stderr);
		return 2;
	}
	o->model = argv[optind];
	return 0;
}

int main(int argc, char **argv)
{
	struct vtpu_buffer *in[MAX_IO] = { 0 }, *out[MAX_IO] = { 0 };
	struct vtpu_client_options co;
	struct vtpu_executable *exe = NULL;
	struct vtpu_device_info di;
	struct vtpu_device *dev;
	struct vtpu_profile *prof = NULL;
	struct vtpu_client *c = NULL;
	struct vtpu_shape s;
	double t0, tc, *times;
	int i, nin, nout, r, ret = 1, mismatch = 0;
	struct opts o;
	struct vtpu_tensor tin[MAX_IO] = { 0 };
	void *data;

	r = parse_args(argc, argv, &o);
	if (r)
		return r;
	vtpu_client_options_init(&co);
	if (o.backend) {
		if (!strcmp(o.backend, "host"))
			co.backend = VTPU_BACKEND_HOST;
		else if (!strcmp(o.backend, "accel"))
			co.backend = VTPU_BACKEND_ACCEL;
		else if (strcmp(o.backend, "auto"))
			return fprintf(stderr, "vtpu-run: --backend wants auto, accel or host\n"), 2;
	}
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
	if (compile_model(c, o.model, tin, o.ninputs, &exe))
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
		char what[64];
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
		}
		snprintf(what, sizeof(what), "input %d", i);
		dev = to_device(o.ninputs ? &tin[i] : &rnd, &s, what);
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
	times = calloc(o.repeat, sizeof(double));
	for (r = 0; times && r < o.repeat; r++) {
		t0 = now();
		if (vtpu_execute(c, exe, in, out)) {
			fprintf(stderr, "vtpu-run: run %d: %s\n", r,
				vtpu_client_error(c));
			free(times);
			goto out;
		}
		times[r] = now() - t0;
		progress(r + 1, o.repeat);
	}
	qsort(times, o.repeat, sizeof(double), cmp_double);
	vtpu_client_device(c, 0, &dev);
	vtpu_device_info(dev, &di);
	printf("backend %s, %d device(s); compile %.2f ms; run %.3f ms (median of %d)\n",
	       vtpu_client_backend(c), vtpu_client_device_count(c), tc * 1e3,
	       times[o.repeat / 2] * 1e3, o.repeat);
	free(times);
	for (i = 0; i < nin; i++)
		printf("input %d: %llu bytes in %s\n", i,
		       (unsigned long long)vtpu_buffer_size(in[i]),
		       placement(vtpu_buffer_placement(in[i])));
	for (i = 0; i < nout; i++) {
		char path[512];

		double *v;
		size_t bytes;

		vtpu_executable_output_shape(exe, i, &s);
		bytes = vtpu_shape_elems(&s) * vtpu_type_size(s.type);
		data = malloc(bytes + 1);
		if (!data || vtpu_buffer_download(out[i], 0, data, bytes)) {
			free(data);
			goto out;
		}
		printf("output %d: %llu bytes in %s\n", i,
		       (unsigned long long)vtpu_buffer_size(out[i]),
		       placement(vtpu_buffer_placement(out[i])));
		v = as_doubles(vtpu_type_elem(s.type), data, vtpu_shape_elems(&s));
		if (!v) {
			free(data);
			goto out;
		}
		if (!o.quiet)
			print_output(i, v, &s);
		if (i < o.nexpect && !check_expected(i, v, &s, o.expect[i], &o))
			mismatch = 1;
		free(v);
		if (o.outdir) {
			snprintf(path, sizeof(path), "%s/output_%d.npy", o.outdir, i);
			if (save_npy(path, data, &s)) {
				free(data);
				goto out;
			}
		}
		free(data);
	}
	print_summary(c, exe);
	if (prof && vtpu_profile_stop(prof, o.profile))
		fprintf(stderr, "vtpu-run: %s\n", vtpu_client_error(c));
	else if (prof)
		printf("profile: %s (Chrome trace; open it in Perfetto)\n", o.profile);
	ret = mismatch;
out:
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
