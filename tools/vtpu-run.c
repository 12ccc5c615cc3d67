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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "vtpu.h"

#define MAX_IO	16

static const char usage[] =
	"usage: vtpu-run [OPTIONS] MODEL.onnx|MODEL.hlo\n"
	"\n"
	"Runs a model on a vtpu device (or the host backend) and prints its\n"
	"outputs.\n"
	"\n"
	"  -i, --input FILE     input tensor, .pb (ONNX TensorProto) or .npy;\n"
	"                       once per input, in order (default: random)\n"
	"  -s, --seed N         seed for random inputs (default 1)\n"
	"  -o, --output-dir DIR save outputs as DIR/output_N.npy\n"
	"  -n, --repeat N       run N times and report the median (default 1)\n"
	"  -b, --backend B      auto, accel or host (default: $VTPU_BACKEND, auto)\n"
	"  -p, --profile FILE   write a Chrome trace (open it in Perfetto)\n"
	"  -e, --expect FILE    expected output (.pb or .npy), once per output:\n"
	"                       prints the error against it (rtol 1e-3, atol 1e-7)\n"
	"  -q, --quiet          do not print output values\n"
	"  -h, --help           this text\n"
	"\n"
	"examples:\n"
	"  vtpu-run model.onnx\n"
	"  vtpu-run -i test_data_set_0/input_0.pb model.onnx\n"
	"  vtpu-run -n 100 -p trace.json -b host mlp.hlo\n";

struct opts {
	const char *inputs[MAX_IO];
	int ninputs;
	const char *expect[MAX_IO];
	int nexpect;
	unsigned int seed;
	const char *outdir;
	int repeat;
	const char *backend;
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

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0) {
		rewind(f);
		buf = malloc(n + 1);
		if (buf && fread(buf, 1, n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else if (buf) {
			buf[n] = '\0';
			*len = n;
		}
	}
	fclose(f);
	return buf;
}

static size_t elems(const struct vtpu_shape *s)
{
	size_t n = 1;
	int i;

	for (i = 0; i < s->rank; i++)
		n *= s->dims[i];
	return n;
}

/* An ONNX TensorProto file, as f32; -1 with a message on error. */
static int load_pb(const char *path, float *dst, size_t n)
{
	Onnx__TensorProto *t;
	size_t len;
	void *buf = read_file(path, &len);

	if (!buf)
		return fprintf(stderr, "vtpu-run: cannot read %s: %s\n", path,
			       strerror(errno)), -1;
	t = onnx__tensor_proto__unpack(NULL, len, buf);
	free(buf);
	if (!t)
		return fprintf(stderr, "vtpu-run: %s is not an ONNX TensorProto\n",
			       path), -1;
	if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
	    t->raw_data.len == n * 4) {
		memcpy(dst, t->raw_data.data, n * 4);
	} else if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
		   t->n_float_data == n) {
		memcpy(dst, t->float_data, n * 4);
	} else {
		onnx__tensor_proto__free_unpacked(t, NULL);
		return fprintf(stderr, "vtpu-run: %s: wants %zu f32 elements\n",
			       path, n), -1;
	}
	onnx__tensor_proto__free_unpacked(t, NULL);
	return 0;
}

/* A NumPy .npy file of '<f4' in C order, as f32. */
static int load_npy(const char *path, float *dst, size_t n)
{
	size_t len, hlen;
	unsigned char *buf = read_file(path, &len);
	int ret = -1;

	if (!buf)
		return fprintf(stderr, "vtpu-run: cannot read %s: %s\n", path,
			       strerror(errno)), -1;
	if (len < 10 || memcmp(buf, "\x93NUMPY", 6)) {
		fprintf(stderr, "vtpu-run: %s is not a .npy file\n", path);
		goto out;
	}
	hlen = buf[6] == 1 ? buf[8] | buf[9] << 8 : 0;
	if (!hlen || 10 + hlen + n * 4 != len ||
	    !strstr((char *)buf + 10, "'<f4'") ||
	    strstr((char *)buf + 10, "'fortran_order': True")) {
		fprintf(stderr, "vtpu-run: %s: wants %zu little-endian f32 in C order (version 1 .npy)\n",
			path, n);
		goto out;
	}
	memcpy(dst, buf + 10 + hlen, n * 4);
	ret = 0;
out:
	free(buf);
	return ret;
}

static int save_npy(const char *path, const float *data,
		    const struct vtpu_shape *s)
{
	char hdr[256], dims[160] = "";
	FILE *f = fopen(path, "wb");
	int i, len;

	if (!f)
		return fprintf(stderr, "vtpu-run: cannot write %s: %s\n", path,
			       strerror(errno)), -1;
	for (i = 0; i < s->rank; i++)
		snprintf(dims + strlen(dims), sizeof(dims) - strlen(dims),
			 "%lld,%s", (long long)s->dims[i],
			 s->rank > 1 && i < s->rank - 1 ? " " : "");
	len = snprintf(hdr, sizeof(hdr),
		       "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }",
		       dims);
	/* pad so data starts 64-byte aligned, header ends with \n */
	while ((10 + len + 1) % 64)
		hdr[len++] = ' ';
	hdr[len++] = '\n';
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	fputc(len & 0xff, f);
	fputc(len >> 8, f);
	fwrite(hdr, 1, len, f);
	fwrite(data, 4, elems(s), f);
	return fclose(f) ? -1 : 0;
}

static const char *ends(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix) ? s + a - b : NULL;
}

static int compile_model(struct vtpu_client *c, const char *path,
			 struct vtpu_executable **exe)
{
	struct vtpu_graph *g = NULL;
	char err[512];
	size_t len;
	void *buf = read_file(path, &len);
	int ret;

	if (!buf)
		return fprintf(stderr, "vtpu-run: cannot read %s: %s\n", path,
			       strerror(errno)), -1;
	if (ends(path, ".onnx")) {
		ret = vtpu_onnx_parse(buf, len, &g, err, sizeof(err));
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
	int w = 40, k = done * w / total;

	if (!isatty(2) || total < 2)
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

static void print_output(int i, const float *v, const struct vtpu_shape *s)
{
	size_t n = elems(s), k;
	int d;

	printf("output %d: f32[", i);
	for (d = 0; d < s->rank; d++)
		printf("%s%lld", d ? "," : "", (long long)s->dims[d]);
	printf("] =");
	for (k = 0; k < n && k < 8; k++)
		printf(" %.6g", v[k]);
	printf("%s\n", n > 8 ? " ..." : "");
}

/* Compares with an expected tensor; 1 when within ONNX's tolerance. */
static int check_expected(int i, const float *got, const struct vtpu_shape *s,
			  const char *path)
{
	size_t n = elems(s), k;
	float *want = malloc(n * 4);
	double abs_err = 0, rel_err = 0;
	int ok = 1;

	if (!want || (ends(path, ".npy") ? load_npy : load_pb)(path, want, n)) {
		free(want);
		return 0;
	}
	for (k = 0; k < n; k++) {
		double d = got[k] > want[k] ? got[k] - want[k] : want[k] - got[k];
		double m = want[k] < 0 ? -want[k] : want[k];

		if (d > abs_err)
			abs_err = d;
		if (m > 0 && d / m > rel_err)
			rel_err = d / m;
		if (!(d <= 1e-7 + 1e-3 * m))
			ok = 0;
	}
	printf("output %d vs %s: max abs error %.3g, max rel error %.3g: %s\n",
	       i, path, abs_err, rel_err, ok ? "match" : "MISMATCH");
	free(want);
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
		{ "profile", required_argument, NULL, 'p' },
		{ "expect", required_argument, NULL, 'e' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->repeat = 1;
	while ((c = getopt_long(argc, argv, "i:s:o:n:b:p:e:qh", longopts,
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
		case 'p': o->profile = optarg; break;
		case 'q': o->quiet = 1; break;
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
	float *data;

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
	if (vtpu_client_create(&co, &c))
		return fprintf(stderr, "vtpu-run: %s\n", vtpu_client_error(NULL)), 1;
	if (o.profile && vtpu_profile_start(c, &prof))
		fprintf(stderr, "vtpu-run: no profile: %s\n", vtpu_client_error(c));
	t0 = now();
	if (compile_model(c, o.model, &exe))
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
		size_t n, k;

		vtpu_executable_input_shape(exe, i, &s);
		n = elems(&s);
		data = malloc(n * 4);
		if (!data)
			goto out;
		if (!o.ninputs)
			for (k = 0; k < n; k++)
				data[k] = (float)rand() / RAND_MAX * 2 - 1;
		else if ((ends(o.inputs[i], ".npy") ? load_npy : load_pb)(o.inputs[i], data, n)) {
			free(data);
			goto out;
		}
		if (vtpu_buffer_create(c, NULL, n * 4, VTPU_PLACE_AUTO, &in[i]) ||
		    vtpu_buffer_upload(in[i], 0, data, n * 4)) {
			fprintf(stderr, "vtpu-run: input %d: %s\n", i,
				vtpu_client_error(c));
			free(data);
			goto out;
		}
		free(data);
	}
	for (i = 0; i < nout; i++) {
		vtpu_executable_output_shape(exe, i, &s);
		if (vtpu_buffer_create(c, NULL, elems(&s) * 4, VTPU_PLACE_AUTO,
				       &out[i])) {
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

		vtpu_executable_output_shape(exe, i, &s);
		data = malloc(elems(&s) * 4);
		if (!data || vtpu_buffer_download(out[i], 0, data, elems(&s) * 4))
			goto out;
		printf("output %d: %llu bytes in %s\n", i,
		       (unsigned long long)vtpu_buffer_size(out[i]),
		       placement(vtpu_buffer_placement(out[i])));
		if (!o.quiet)
			print_output(i, data, &s);
		if (i < o.nexpect && !check_expected(i, data, &s, o.expect[i]))
			mismatch = 1;
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
	vtpu_client_destroy(c);
	return ret;
}
