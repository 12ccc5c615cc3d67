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
#include <stdbool.h>
#include <stdint.h>
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

static const char *ends(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix) ? s + a - b : NULL;
}

static size_t elems(const struct vtpu_shape *s)
{
	size_t n = 1;
	int i;

	for (i = 0; i < s->rank; i++)
		n *= s->dims[i];
	return n;
}

static int type_size(enum vtpu_type t)
{
	return t == VTPU_BF16 ? 2 : t == VTPU_S64 ? 8 : t == VTPU_PRED ? 1 : 4;
}

static const char *type_name(enum vtpu_type t)
{
	static const char *const names[] = { "f32", "bf16", "s32", "s64", "pred" };

	return t <= VTPU_PRED ? names[t] : "?";
}

/*
 * A tensor from a file, as doubles (exact for every type the files
 * hold that vtpu computes with: f32, f64 rounded later, int32, and
 * int64 within 2^53, checked), with its dims.
 */
struct tensor {
	int rank;
	int64_t dims[VTPU_MAX_RANK];
	size_t n;
	double *v;
	bool is_int;
};

static int tensor_alloc(struct tensor *t, const char *path)
{
	t->n = 1;
	for (int i = 0; i < t->rank; i++)
		t->n *= t->dims[i];
	t->v = calloc(t->n ? t->n : 1, sizeof(double));
	if (!t->v)
		return fprintf(stderr, "vtpu-run: %s: out of memory\n", path), -1;
	return 0;
}

#define PB(x)	ONNX__TENSOR_PROTO__DATA_TYPE__##x

/* An ONNX TensorProto file; -1 with a message on error. */
static int load_pb(const char *path, struct tensor *out)
{
	Onnx__TensorProto *t;
	size_t len, es, raw;
	void *buf = read_file(path, &len);
	int dt, ok = 1;

	if (!buf)
		return fprintf(stderr, "vtpu-run: cannot read %s: %s\n", path,
			       strerror(errno)), -1;
	t = onnx__tensor_proto__unpack(NULL, len, buf);
	free(buf);
	if (!t)
		return fprintf(stderr, "vtpu-run: %s is not an ONNX TensorProto\n",
			       path), -1;
	dt = t->data_type;
	es = dt == PB(FLOAT) || dt == PB(INT32) ? 4 : dt == PB(DOUBLE) ||
	     dt == PB(INT64) ? 8 : dt == PB(BOOL) ? 1 : 0;
	if (!es || t->n_dims > VTPU_MAX_RANK) {
		fprintf(stderr, "vtpu-run: %s: unsupported tensor (type %d, rank %zu); FLOAT, DOUBLE, INT32, INT64 and BOOL up to rank %d are\n",
			path, dt, t->n_dims, VTPU_MAX_RANK);
		onnx__tensor_proto__free_unpacked(t, NULL);
		return -1;
	}
	out->rank = (int)t->n_dims;
	for (int i = 0; i < out->rank; i++)
		out->dims[i] = t->dims[i];
	out->is_int = dt != PB(FLOAT) && dt != PB(DOUBLE);
	if (tensor_alloc(out, path)) {
		onnx__tensor_proto__free_unpacked(t, NULL);
		return -1;
	}
	raw = t->has_raw_data ? t->raw_data.len : 0;
	for (size_t k = 0; k < out->n && ok; k++) {
		const uint8_t *p = raw ? t->raw_data.data + k * es : NULL;
		union { float f; double d; int32_t i; int64_t l; uint8_t b; } u;

		if (raw && raw != out->n * es) {
			ok = 0;
			break;
		}
		if (p)
			memcpy(&u, p, es);	/* hosts are little-endian */
		else if (dt == PB(FLOAT) && k < t->n_float_data)
			u.f = t->float_data[k];
		else if (dt == PB(DOUBLE) && k < t->n_double_data)
			u.d = t->double_data[k];
		else if (dt == PB(INT64) && k < t->n_int64_data)
			u.l = t->int64_data[k];
		else if ((dt == PB(INT32) || dt == PB(BOOL)) && k < t->n_int32_data)
			u.i = t->int32_data[k], u.b = dt == PB(BOOL) ? u.i != 0 : u.b;
		else
			ok = 0;
		if (!ok)
			break;
		out->v[k] = dt == PB(FLOAT) ? u.f : dt == PB(DOUBLE) ? u.d :
			    dt == PB(INT32) ? u.i : dt == PB(INT64) ? (double)u.l :
			    u.b;
		if (dt == PB(INT64) && (u.l > (1ll << 53) || u.l < -(1ll << 53)))
			ok = 0;
	}
	onnx__tensor_proto__free_unpacked(t, NULL);
	if (!ok) {
		free(out->v);
		return fprintf(stderr, "vtpu-run: %s: data does not match its dims, or int64 beyond 2^53\n",
			       path), -1;
	}
	return 0;
}

static double half_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) :
		   ldexp(m | 0x400, e - 25);

	return h & 0x8000 ? -v : v;
}

/*
 * A version-1 NumPy .npy file in C order: <f4, <f8, <f2, <i4, <i8, |b1,
 * |i1, |u1, <i2, <u2 or <u4.
 */
static int load_npy(const char *path, struct tensor *out)
{
	static const struct { const char *descr; int size; bool is_int; } kinds[] = {
		{ "'<f4'", 4, false }, { "'<f8'", 8, false },
		{ "'<i4'", 4, true }, { "'<i8'", 8, true }, { "'|b1'", 1, true },
		{ "'<f2'", 2, false }, { "'|i1'", 1, true }, { "'|u1'", 1, true },
		{ "'<i2'", 2, true }, { "'<u2'", 2, true }, { "'<u4'", 4, true },
	};
	size_t len, hlen;
	unsigned char *buf = read_file(path, &len);
	const char *hdr, *sh;
	int kind = -1, ret = -1;

	if (!buf)
		return fprintf(stderr, "vtpu-run: cannot read %s: %s\n", path,
			       strerror(errno)), -1;
	if (len < 10 || memcmp(buf, "\x93NUMPY\x01", 7)) {
		fprintf(stderr, "vtpu-run: %s is not a version-1 .npy file\n", path);
		goto out;
	}
	hlen = buf[8] | buf[9] << 8;
	hdr = (char *)buf + 10;
	for (int k = 0; k < (int)(sizeof(kinds) / sizeof(kinds[0])) &&
			10 + hlen <= len; k++)
		if (strstr(hdr, kinds[k].descr))
			kind = k;
	sh = 10 + hlen <= len ? strstr(hdr, "'shape': (") : NULL;
	if (kind < 0 || !sh || strstr(hdr, "'fortran_order': True")) {
		fprintf(stderr, "vtpu-run: %s: wants <f4, <f8, <f2, <i4, <i8, |b1, |i1, |u1, <i2, <u2 or <u4 in C order\n",
			path);
		goto out;
	}
	out->rank = 0;
	for (sh += 10; *sh && *sh != ')';) {
		char *e;
		long long d = strtoll(sh, &e, 10);

		if (e == sh)
			break;
		if (out->rank == VTPU_MAX_RANK) {
			fprintf(stderr, "vtpu-run: %s: rank above %d\n", path,
				VTPU_MAX_RANK);
			goto out;
		}
		out->dims[out->rank++] = d;
		sh = e + strspn(e, ", ");
	}
	out->is_int = kinds[kind].is_int;
	if (tensor_alloc(out, path))
		goto out;
	if (10 + hlen + out->n * kinds[kind].size != len) {
		fprintf(stderr, "vtpu-run: %s: %zu elements do not match the file size\n",
			path, out->n);
		free(out->v);
		goto out;
	}
	for (size_t k = 0; k < out->n; k++) {
		const unsigned char *p = buf + 10 + hlen + k * kinds[kind].size;
		union { float f; double d; int32_t i; int64_t l; uint8_t b;
			int8_t c; int16_t s; uint16_t h; uint32_t w; } u;

		memcpy(&u, p, kinds[kind].size);
		switch (kind) {
		case 0: out->v[k] = u.f; break;
		case 1: out->v[k] = u.d; break;
		case 2: out->v[k] = u.i; break;
		case 3: out->v[k] = (double)u.l; break;
		case 4: case 7: out->v[k] = u.b; break;
		case 5: out->v[k] = half_to_double(u.h); break;
		case 6: out->v[k] = u.c; break;
		case 8: out->v[k] = u.s; break;
		case 9: out->v[k] = u.h; break;
		default: out->v[k] = u.w; break;
		}
	}
	ret = 0;
out:
	free(buf);
	return ret;
}

static int load_tensor(const char *path, struct tensor *t)
{
	return ends(path, ".npy") ? load_npy(path, t) : load_pb(path, t);
}

/*
 * @t in the device type of @s (what the compiler made of the model's
 * type: int64 computes as s32, double as f32, bool as s32 0/1); values
 * an s32 cannot hold are an error, not a silent wrap.
 */
static void *to_device(const struct tensor *t, const struct vtpu_shape *s,
		       const char *what)
{
	size_t n = elems(s);
	void *dst;

	if (t->n != n) {
		fprintf(stderr, "vtpu-run: %s has %zu elements, the model wants %zu\n",
			what, t->n, n);
		return NULL;
	}
	dst = malloc(n * type_size(s->type) + 1);
	for (size_t k = 0; dst && k < n; k++) {
		double v = t->v[k];

		if (s->type == VTPU_F32) {
			((float *)dst)[k] = (float)v;
		} else if (s->type == VTPU_BF16) {
			float f = (float)v;
			uint32_t b;

			memcpy(&b, &f, 4);
			b += 0x7fff + ((b >> 16) & 1);	/* round to nearest even */
			((uint16_t *)dst)[k] = (uint16_t)(b >> 16);
		} else if (s->type == VTPU_S32) {
			if (v != (double)(int32_t)v) {
				fprintf(stderr, "vtpu-run: %s element %zu (%.17g) does not fit the device's s32\n",
					what, k, v);
				free(dst);
				return NULL;
			}
			((int32_t *)dst)[k] = (int32_t)v;
		} else {
			fprintf(stderr, "vtpu-run: %s: the model wants %s, which a buffer cannot hold\n",
				what, type_name(s->type));
			free(dst);
			return NULL;
		}
	}
	return dst;
}

/* Device data of @s as doubles, for printing and comparing. */
static double *from_device(const void *src, const struct vtpu_shape *s)
{
	size_t n = elems(s);
	double *v = malloc(n * sizeof(*v) + 1);

	for (size_t k = 0; v && k < n; k++) {
		if (s->type == VTPU_F32) {
			v[k] = ((const float *)src)[k];
		} else if (s->type == VTPU_BF16) {
			uint32_t b = (uint32_t)((const uint16_t *)src)[k] << 16;
			float f;

			memcpy(&f, &b, 4);
			v[k] = f;
		} else {
			v[k] = ((const int32_t *)src)[k];
		}
	}
	return v;
}

static int save_npy(const char *path, const void *data,
		    const struct vtpu_shape *s)
{
	char hdr[256], dims[160] = "";
	FILE *f = fopen(path, "wb");
	int i, len;
	size_t n = elems(s);
	float *f32 = NULL;

	if (!f)
		return fprintf(stderr, "vtpu-run: cannot write %s: %s\n", path,
			       strerror(errno)), -1;
	for (i = 0; i < s->rank; i++)
		snprintf(dims + strlen(dims), sizeof(dims) - strlen(dims),
			 "%lld,%s", (long long)s->dims[i],
			 s->rank > 1 && i < s->rank - 1 ? " " : "");
	len = snprintf(hdr, sizeof(hdr),
		       "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
		       s->type == VTPU_S32 ? "<i4" : "<f4", dims);
	/* pad so data starts 64-byte aligned, header ends with \n */
	while ((10 + len + 1) % 64)
		hdr[len++] = ' ';
	hdr[len++] = '\n';
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	fputc(len & 0xff, f);
	fputc(len >> 8, f);
	fwrite(hdr, 1, len, f);
	if (s->type == VTPU_BF16) {	/* NumPy has no bfloat16: widen */
		double *v = from_device(data, s);

		f32 = malloc(n * sizeof(*f32) + 1);
		for (size_t k = 0; v && f32 && k < n; k++)
			f32[k] = (float)v[k];
		free(v);
		data = f32;
	}
	if (data)
		fwrite(data, 4, n, f);
	free(f32);
	return fclose(f) || !data ? -1 : 0;
}

/*
 * Bindings for vtpu_onnx_parse_bound(): the i-th input file binds the
 * i-th graph input that is not an initializer, its dims (they fill
 * symbolic ones) and its values (they may be a shape, scales or the
 * like, which the model needs at compile time).
 */
static int onnx_bindings(const void *buf, size_t len, const struct tensor *in,
			 int nin, struct vtpu_onnx_binding *b, int64_t **vals)
{
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
	int nb = 0;

	if (!m || !m->graph) {
		if (m)
			onnx__model_proto__free_unpacked(m, NULL);
		return 0;	/* vtpu_onnx_parse_bound() will say why */
	}
	for (size_t i = 0; i < m->graph->n_input && nb < nin; i++) {
		const char *name = m->graph->input[i]->name;
		bool init = false;

		for (size_t k = 0; k < m->graph->n_initializer && !init; k++)
			init = name && m->graph->initializer[k]->name &&
			       !strcmp(name, m->graph->initializer[k]->name);
		if (init || !name)
			continue;
		b[nb].name = strdup(name);
		b[nb].rank = in[nb].rank;
		memcpy(b[nb].dims, in[nb].dims, sizeof(b[nb].dims));
		b[nb].values = NULL;
		b[nb].fvalues = NULL;
		if (in[nb].is_int && (vals[nb] = malloc(in[nb].n * 8 + 8))) {
			for (size_t k = 0; k < in[nb].n; k++)
				vals[nb][k] = (int64_t)in[nb].v[k];
			b[nb].values = vals[nb];
		} else if (!in[nb].is_int) {
			b[nb].fvalues = in[nb].v;
		}
		nb++;
	}
	onnx__model_proto__free_unpacked(m, NULL);
	return nb;
}

static int compile_model(struct vtpu_client *c, const char *path,
			 const struct tensor *in, int nin,
			 struct vtpu_executable **exe)
{
	struct vtpu_onnx_binding b[MAX_IO];
	int64_t *vals[MAX_IO] = { 0 };
	struct vtpu_graph *g = NULL;
	char err[512];
	size_t len;
	void *buf = read_file(path, &len);
	int ret, nb = 0;

	if (!buf)
		return fprintf(stderr, "vtpu-run: cannot read %s: %s\n", path,
			       strerror(errno)), -1;
	if (ends(path, ".onnx")) {
		nb = onnx_bindings(buf, len, in, nin, b, vals);
		ret = vtpu_onnx_parse_bound(buf, len, b, nb, &g, err, sizeof(err));
		for (int i = 0; i < nb; i++) {
			free((char *)b[i].name);
			free(vals[i]);
		}
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

static void print_output(int i, const double *v, const struct vtpu_shape *s)
{
	size_t n = elems(s), k;
	int d;

	printf("output %d: %s[", i, type_name(s->type));
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
	size_t n = elems(s), k;
	struct tensor want;
	double abs_err = 0, rel_err = 0, ref_max = 0;
	int ok = 1;

	if (load_tensor(path, &want))
		return 0;
	if (want.n != n) {
		printf("output %d vs %s: %zu elements, expected %zu: MISMATCH\n",
		       i, path, n, want.n);
		free(want.v);
		return 0;
	}
	for (k = 0; k < n; k++) {
		double w = want.v[k], d = got[k] > w ? got[k] - w : w - got[k];
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
	free(want.v);
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
	struct tensor tin[MAX_IO] = { 0 };
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
		struct tensor rnd = { 0 };
		void *dev;

		vtpu_executable_input_shape(exe, i, &s);
		n = elems(&s);
		bytes = n * type_size(s.type);
		if (!o.ninputs) {
			rnd.rank = s.rank;
			memcpy(rnd.dims, s.dims, sizeof(rnd.dims));
			if (tensor_alloc(&rnd, "random input"))
				goto out;
			for (k = 0; k < n; k++)
				rnd.v[k] = s.type == VTPU_S32 ? rand() % 10 :
					   (double)rand() / RAND_MAX * 2 - 1;
		}
		snprintf(what, sizeof(what), "input %d", i);
		dev = to_device(o.ninputs ? &tin[i] : &rnd, &s, what);
		free(rnd.v);
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
		if (vtpu_buffer_create(c, NULL, elems(&s) * type_size(s.type),
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
		bytes = elems(&s) * type_size(s.type);
		data = malloc(bytes + 1);
		if (!data || vtpu_buffer_download(out[i], 0, data, bytes)) {
			free(data);
			goto out;
		}
		printf("output %d: %llu bytes in %s\n", i,
		       (unsigned long long)vtpu_buffer_size(out[i]),
		       placement(vtpu_buffer_placement(out[i])));
		v = from_device(data, &s);
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
		free(tin[i].v);
	vtpu_client_destroy(c);
	return ret;
}
