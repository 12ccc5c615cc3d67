// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * conformance - runs the ONNX backend test data (Debian's
 * libonnx-testdata) through the ONNX frontend, the compiler and libvtpu.
 *
 *	conformance [--category C] [--filter SUBSTR] [--timeout S] [--verbose]
 *		    DATA_DIR
 *
 * DATA_DIR is /usr/share/libonnx-testdata/data; its node,
 * pytorch-converted, pytorch-operator and simple categories are run
 * (real/ needs a download). Each test is a directory holding model.onnx
 * and test_data_set_N/{input,output}_N.pb (onnx TensorProto).
 *
 * Output, one line a test, then one a category, then the suite line
 * `make check` reads:
 *
 *	PASS|FAIL|UNSUPPORTED category/name[: reason]
 *	conformance/<category>: N total, N supported, N passed, N failed
 *	conformance: N passed, N failed, N skipped
 *
 * A model the frontend reports as unsupported (-ENOTSUP / -EOPNOTSUPP, or
 * a message containing "unsupported") is UNSUPPORTED, so is a test whose
 * tensors have a type we cannot feed (strings, complex); every other
 * error, mismatch, crash or timeout is FAIL. Each test runs in a forked
 * child with a deadline, so one bad model cannot take the run down.
 *
 * Exit status 0 when passed / supported >= 0.90 and, over
 * pytorch-converted + pytorch-operator + simple, supported / total >=
 * 0.80; else 1, saying which goal was missed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "vtpu.h"
#include "vtpu_compiler.h"

/* ONNX element types, short: DT(FLOAT) and so on. */
#define DT(x)		ONNX__TENSOR_PROTO__DATA_TYPE__##x

#define RTOL		1e-3
#define ATOL		1e-7
#define TIMEOUT_S	20	/* default per test; --timeout S */
#define JOBS		2
#define MAX_ELEMS	(1 << 28)	/* far above any test tensor */
#define REASON_MAX	480	/* < PIPE_BUF: the child's one write is atomic */
#define MAX_PB_RANK	16	/* dims kept of a .pb tensor; more: FAIL */

static const char *const categories[] = {
	"node", "pytorch-converted", "pytorch-operator", "simple",
};
#define NCAT	(sizeof(categories) / sizeof(categories[0]))

enum verdict { V_PASS, V_FAIL, V_UNSUPPORTED };
static const char *const verdict_name[] = { "PASS", "FAIL", "UNSUPPORTED" };

struct opts {
	const char *category;
	const char *filter;
	bool verbose;
	int timeout;		/* seconds per test */
	const char *data_dir;
};

static struct opts opt;

/* ---- small helpers ---------------------------------------------------- */

/* The test's outcome; reasons are one line so the output stays greppable. */
struct result {
	enum verdict v;
	char reason[REASON_MAX];
};

static enum verdict set_result(struct result *r, enum verdict v,
			       const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum verdict set_result(struct result *r, enum verdict v,
			       const char *fmt, ...)
{
	va_list ap;

	r->v = v;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
	for (char *p = r->reason; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return v;
}

/*
 * Builds a path. Test paths are far shorter than PATH_MAX; going through
 * vsnprintf keeps -Wformat-truncation from guessing otherwise.
 */
static void mkpath(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void mkpath(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

/* Reads a whole file; NULL (errno set) on failure. */
static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc(n ? (size_t)n : 1);
		if (buf && fread(buf, 1, n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
			errno = EIO;
		}
		*len = n;
	}
	fclose(f);
	return buf;
}

static bool file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static int dir_filter(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static int data_set_filter(const struct dirent *d)
{
	return strncmp(d->d_name, "test_data_set_", 14) == 0;
}

/* ---- TensorProto decoding --------------------------------------------- */

/*
 * A decoded tensor: integers and booleans are kept as int64 so they can
 * be compared exactly; floating types as double.
 */
struct tensor {
	int dtype;		/* DT()* */
	bool is_int;
	int rank;		/* as in the .pb; may exceed VTPU_MAX_RANK */
	int64_t dims[MAX_PB_RANK];
	char *name;		/* TensorProto.name; NULL when empty */
	size_t n;
	double *f;
	int64_t *i;
};

static void tensor_free(struct tensor *t)
{
	free(t->f);
	free(t->i);
	free(t->name);
	memset(t, 0, sizeof(*t));
}

static bool dtype_is_int(int dt)
{
	switch (dt) {
	case DT(FLOAT):
	case DT(DOUBLE):
	case DT(FLOAT16):
	case DT(BFLOAT16):
		return false;
	default:
		return true;
	}
}

/* Bytes per element in raw_data; 0 for the types we cannot decode. */
static size_t dtype_size(int dt)
{
	switch (dt) {
	case DT(BOOL):
	case DT(INT8):
	case DT(UINT8):
		return 1;
	case DT(INT16):
	case DT(UINT16):
	case DT(FLOAT16):
	case DT(BFLOAT16):
		return 2;
	case DT(FLOAT):
	case DT(INT32):
	case DT(UINT32):
		return 4;
	case DT(DOUBLE):
	case DT(INT64):
	case DT(UINT64):
		return 8;
	default:
		return 0;
	}
}

static float half_to_float(uint16_t h)
{
	int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	float v;

	if (exp == 0)
		v = ldexpf((float)man, -24);
	else if (exp == 31)
		v = man ? NAN : INFINITY;
	else
		v = ldexpf((float)(man | 0x400), exp - 25);
	return (h & 0x8000) ? -v : v;
}

static float bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Stores element @k: @iv for integer tensors, @fv for floating ones. */
static void put_elem(struct tensor *t, size_t k, int64_t iv, double fv)
{
	if (t->is_int)
		t->i[k] = iv;
	else
		t->f[k] = fv;
}

/* Element @k of little-endian @p (the host is little-endian too). */
static void put_raw(struct tensor *t, size_t k, const uint8_t *p)
{
	union { int8_t s8; uint8_t u8; int16_t s16; uint16_t u16;
		int32_t s32; uint32_t u32; int64_t s64; uint64_t u64;
		float f32; double f64; } u;

	memcpy(&u, p + k * dtype_size(t->dtype), dtype_size(t->dtype));
	switch (t->dtype) {
	case DT(BOOL):
	case DT(UINT8):	put_elem(t, k, u.u8, 0); break;
	case DT(INT8):	put_elem(t, k, u.s8, 0); break;
	case DT(INT16):	put_elem(t, k, u.s16, 0); break;
	case DT(UINT16):	put_elem(t, k, u.u16, 0); break;
	case DT(INT32):	put_elem(t, k, u.s32, 0); break;
	case DT(UINT32):	put_elem(t, k, u.u32, 0); break;
	case DT(INT64):	put_elem(t, k, u.s64, 0); break;
	case DT(UINT64):	put_elem(t, k, (int64_t)u.u64, 0); break;
	case DT(FLOAT):	put_elem(t, k, 0, u.f32); break;
	case DT(DOUBLE):	put_elem(t, k, 0, u.f64); break;
	case DT(FLOAT16):	put_elem(t, k, 0, half_to_float(u.u16)); break;
	case DT(BFLOAT16):	put_elem(t, k, 0, bf16_to_float(u.u16)); break;
	}
}

/*
 * Element @k from the typed repeated fields. ONNX packs the narrow
 * integer types, bool and the 16-bit floats (as bits) into int32_data,
 * and uint32/uint64 into uint64_data.
 */
static int put_typed(struct tensor *t, size_t k, const Onnx__TensorProto *tp)
{
	switch (t->dtype) {
	case DT(FLOAT):
		if (tp->n_float_data != t->n)
			return -1;
		put_elem(t, k, 0, tp->float_data[k]);
		return 0;
	case DT(DOUBLE):
		if (tp->n_double_data != t->n)
			return -1;
		put_elem(t, k, 0, tp->double_data[k]);
		return 0;
	case DT(INT64):
		if (tp->n_int64_data != t->n)
			return -1;
		put_elem(t, k, tp->int64_data[k], 0);
		return 0;
	case DT(UINT32):
	case DT(UINT64):
		if (tp->n_uint64_data != t->n)
			return -1;
		put_elem(t, k, (int64_t)tp->uint64_data[k], 0);
		return 0;
	case DT(FLOAT16):
		if (tp->n_int32_data != t->n)
			return -1;
		put_elem(t, k, 0, half_to_float((uint16_t)tp->int32_data[k]));
		return 0;
	case DT(BFLOAT16):
		if (tp->n_int32_data != t->n)
			return -1;
		put_elem(t, k, 0, bf16_to_float((uint16_t)tp->int32_data[k]));
		return 0;
	default:
		if (tp->n_int32_data != t->n)
			return -1;
		put_elem(t, k, tp->int32_data[k], 0);
		return 0;
	}
}

/* Fills @t from an unpacked TensorProto; FAIL/UNSUPPORTED into @r. */
static int tensor_from_proto(const Onnx__TensorProto *tp, struct tensor *t,
			     struct result *r, const char *what)
{
	size_t n = 1;

	/*
	 * Sequence and optional test data (other protos) unpack "fine" as
	 * a TensorProto with nonsense dims: bound them before allocating.
	 */
	if (tp->n_dims > MAX_PB_RANK)
		return -set_result(r, V_FAIL, "%s: not a tensor (rank %zu)",
				   what, tp->n_dims);
	for (size_t d = 0; d < tp->n_dims; d++) {
		if (tp->dims[d] < 0 || tp->dims[d] > MAX_ELEMS ||
		    (n *= (size_t)tp->dims[d]) > MAX_ELEMS)
			return -set_result(r, V_FAIL, "%s: not a tensor (dims)",
					   what);
		t->dims[d] = tp->dims[d];
	}
	t->rank = (int)tp->n_dims;
	t->dtype = tp->data_type;
	t->n = n;
	t->is_int = dtype_is_int(t->dtype);
	if (!dtype_size(t->dtype))
		return -set_result(r, V_UNSUPPORTED, "%s: ONNX element type %d",
				   what, t->dtype);
	if (tp->has_data_location &&
	    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return -set_result(r, V_UNSUPPORTED, "%s: external data", what);
	t->f = calloc(n ? n : 1, sizeof(double));
	t->i = calloc(n ? n : 1, sizeof(int64_t));
	if (!t->f || !t->i)
		return -set_result(r, V_FAIL, "%s: out of memory", what);
	if (tp->has_raw_data) {
		if (tp->raw_data.len != n * dtype_size(t->dtype))
			return -set_result(r, V_FAIL, "%s: raw_data is %zu bytes, "
					   "expected %zu", what, tp->raw_data.len,
					   n * dtype_size(t->dtype));
		for (size_t k = 0; k < n; k++)
			put_raw(t, k, tp->raw_data.data);
		return 0;
	}
	for (size_t k = 0; k < n; k++)
		if (put_typed(t, k, tp))
			return -set_result(r, V_FAIL, "%s: element count does "
					   "not match dims", what);
	return 0;
}

/* Reads and decodes one .pb file. */
static int tensor_load(const char *path, struct tensor *t, struct result *r)
{
	const char *what = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	Onnx__TensorProto *tp;
	size_t len;
	void *buf = read_file(path, &len);
	int ret;

	if (!buf)
		return -set_result(r, V_FAIL, "%s: %s", what, strerror(errno));
	tp = onnx__tensor_proto__unpack(NULL, len, buf);
	free(buf);
	if (!tp)
		return -set_result(r, V_FAIL, "%s: not a TensorProto", what);
	ret = tensor_from_proto(tp, t, r, what);
	if (!ret && tp->name && tp->name[0] && !(t->name = strdup(tp->name)))
		ret = -set_result(r, V_FAIL, "%s: out of memory", what);
	onnx__tensor_proto__free_unpacked(tp, NULL);
	return ret;
}

/* ---- host <-> device conversion --------------------------------------- */

static size_t vtype_size(enum vtpu_type ty)
{
	switch (ty) {
	case VTPU_F32: case VTPU_S32:	return 4;
	case VTPU_BF16:			return 2;
	case VTPU_S64:			return 8;
	case VTPU_PRED:			return 1;
	}
	return 0;
}

static size_t shape_elems(const struct vtpu_shape *s)
{
	size_t n = 1;

	for (int d = 0; d < s->rank; d++)
		n *= (size_t)s->dims[d];
	return n;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if (isnan(f))
		return 0x7fc0;
	/* Round to nearest even, as the device does. */
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/* Element @k of @t converted to the device type @ty, written at @dst. */
static void store_elem(const struct tensor *t, size_t k, enum vtpu_type ty,
		       uint8_t *dst)
{
	double fv = t->is_int ? (double)t->i[k] : t->f[k];
	int64_t iv = t->is_int ? t->i[k] : (int64_t)t->f[k];
	float f = (float)fv;
	int32_t s32 = (int32_t)iv;
	uint16_t b;

	switch (ty) {
	case VTPU_F32:	memcpy(dst, &f, 4); break;
	case VTPU_BF16:	b = float_to_bf16(f); memcpy(dst, &b, 2); break;
	case VTPU_S32:	memcpy(dst, &s32, 4); break;
	case VTPU_S64:	memcpy(dst, &iv, 8); break;
	case VTPU_PRED:	*dst = fv != 0; break;
	}
}

/* Element @k of device data @src of type @ty, as a double and an int64. */
static void load_elem(const uint8_t *src, size_t k, enum vtpu_type ty,
		      double *fv, int64_t *iv)
{
	float f;
	int32_t s32;
	uint16_t b;

	switch (ty) {
	case VTPU_F32:	memcpy(&f, src + 4 * k, 4); *fv = f; break;
	case VTPU_BF16:	memcpy(&b, src + 2 * k, 2); *fv = bf16_to_float(b); break;
	case VTPU_S32:	memcpy(&s32, src + 4 * k, 4); *fv = s32; break;
	case VTPU_S64:	memcpy(iv, src + 8 * k, 8); *fv = (double)*iv; return;
	case VTPU_PRED:	*fv = src[k] != 0; break;
	}
	*iv = (int64_t)*fv;
}

/*
 * numpy has no bfloat16, so ONNX's test data stores bfloat16 tensors as
 * UINT16 bit patterns; when the executable says BF16, read them as such.
 */
static void bf16_bits_to_float(struct tensor *t, enum vtpu_type ty)
{
	if (ty != VTPU_BF16 || t->dtype != DT(UINT16))
		return;
	for (size_t k = 0; k < t->n; k++)
		t->f[k] = bf16_to_float((uint16_t)t->i[k]);
	t->dtype = DT(BFLOAT16);
	t->is_int = false;
}

/* ---- running one data set --------------------------------------------- */

struct run_ctx {
	struct vtpu_client *c;
	struct vtpu_executable *exe;
	int nin, nout;
	struct vtpu_buffer **in, **out;
};

static void run_ctx_release(struct run_ctx *x)
{
	for (int i = 0; x->in && i < x->nin; i++)
		if (x->in[i])
			vtpu_buffer_destroy(x->in[i]);
	for (int i = 0; x->out && i < x->nout; i++)
		if (x->out[i])
			vtpu_buffer_destroy(x->out[i]);
	free(x->in);
	free(x->out);
	x->in = x->out = NULL;
}

static int count_files(const char *dir, const char *prefix)
{
	char path[4096];
	int n = 0;

	for (;;) {
		mkpath(path, sizeof(path), "%s/%s_%d.pb", dir, prefix, n);
		if (!file_exists(path))
			return n;
		n++;
	}
}

/* Creates, fills and uploads input buffer @i from input_@i.pb. */
static int upload_input(struct run_ctx *x, const char *dir, int i,
			struct result *r)
{
	struct vtpu_shape s;
	struct tensor t = { 0 };
	char path[4096];
	uint8_t *host = NULL;
	size_t n, esz;
	int ret;

	mkpath(path, sizeof(path), "%s/input_%d.pb", dir, i);
	if (tensor_load(path, &t, r) < 0)
		return -1;
	vtpu_executable_input_shape(x->exe, i, &s);
	bf16_bits_to_float(&t, s.type);
	n = shape_elems(&s);
	esz = vtype_size(s.type);
	ret = -1;
	if (t.n != n) {
		set_result(r, V_FAIL, "input %d: %zu elements, executable "
			   "wants %zu", i, t.n, n);
		goto out;
	}
	host = malloc(n * esz);
	if (!host) {
		set_result(r, V_FAIL, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < n; k++)
		store_elem(&t, k, s.type, host + k * esz);
	ret = vtpu_buffer_create(x->c, NULL, n * esz, VTPU_PLACE_AUTO,
				 &x->in[i]);
	if (!ret)
		ret = vtpu_buffer_upload(x->in[i], 0, host, n * esz);
	if (ret)
		set_result(r, V_FAIL, "input %d: %s", i,
			   vtpu_client_error(x->c));
out:
	free(host);
	tensor_free(&t);
	return ret ? -1 : 0;
}

/* Compares one element; floats with ONNX's tolerance, NaN == NaN. */
static bool elem_close(const struct tensor *want, size_t k, double got,
		       int64_t got_i, enum vtpu_type ty)
{
	double w;

	if (want->is_int)
		return ty == VTPU_S64 ? got_i == want->i[k]
				      : got == (double)want->i[k];
	w = want->f[k];
	if (isnan(w) || isnan(got))
		return isnan(w) && isnan(got);
	if (got == w)	/* covers equal infinities */
		return true;
	return fabs(got - w) <= ATOL + RTOL * fabs(w);
}

/* Downloads output @i and checks it against output_@i.pb. */
static int check_output(struct run_ctx *x, const char *dir, int i,
			struct result *r)
{
	struct vtpu_shape s;
	struct tensor t = { 0 };
	char path[4096];
	uint8_t *host = NULL;
	size_t n, esz, bad = 0, first = 0;
	double got = 0, first_got = 0;
	int64_t got_i = 0;
	int ret = -1;

	mkpath(path, sizeof(path), "%s/output_%d.pb", dir, i);
	if (tensor_load(path, &t, r) < 0)
		return -1;
	vtpu_executable_output_shape(x->exe, i, &s);
	bf16_bits_to_float(&t, s.type);
	n = shape_elems(&s);
	esz = vtype_size(s.type);
	if (t.n != n) {
		set_result(r, V_FAIL, "output %d: %zu elements, expected %zu",
			   i, n, t.n);
		goto out;
	}
	host = malloc(n * esz);
	if (!host || vtpu_buffer_download(x->out[i], 0, host, n * esz)) {
		set_result(r, V_FAIL, "output %d: download: %s", i,
			   host ? vtpu_client_error(x->c) : "out of memory");
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		load_elem(host, k, s.type, &got, &got_i);
		if (!elem_close(&t, k, got, got_i, s.type) && !bad++) {
			first = k;
			first_got = got;
		}
	}
	if (bad)
		set_result(r, V_FAIL, "output %d: %zu of %zu elements differ, "
			   "first [%zu] got %.9g want %.9g", i, bad, n, first,
			   first_got, t.is_int ? (double)t.i[first] : t.f[first]);
	else
		ret = 0;
out:
	free(host);
	tensor_free(&t);
	return ret;
}

static int create_outputs(struct run_ctx *x, struct result *r)
{
	struct vtpu_shape s;

	for (int i = 0; i < x->nout; i++) {
		vtpu_executable_output_shape(x->exe, i, &s);
		if (vtpu_buffer_create(x->c, NULL,
				       shape_elems(&s) * vtype_size(s.type),
				       VTPU_PLACE_AUTO, &x->out[i]))
			return -set_result(r, V_FAIL, "output %d: %s", i,
					   vtpu_client_error(x->c));
	}
	return 0;
}

/* One test_data_set_N directory: 0 when every output matched. */
static int run_data_set(struct run_ctx *x, const char *dir, struct result *r)
{
	int nin = count_files(dir, "input"), nout = count_files(dir, "output");
	int ret = -1;

	if (nin != x->nin || nout != x->nout)
		return -set_result(r, V_FAIL, "executable has %d inputs / %d "
				   "outputs, test data %d / %d", x->nin,
				   x->nout, nin, nout);
	x->in = calloc(nin + 1, sizeof(*x->in));
	x->out = calloc(nout + 1, sizeof(*x->out));
	if (!x->in || !x->out) {
		set_result(r, V_FAIL, "out of memory");
		goto out;
	}
	for (int i = 0; i < nin; i++)
		if (upload_input(x, dir, i, r))
			goto out;
	if (create_outputs(x, r))
		goto out;
	if (vtpu_execute(x->c, x->exe, x->in, x->out)) {
		set_result(r, V_FAIL, "execute: %s", vtpu_client_error(x->c));
		goto out;
	}
	for (int i = 0; i < nout; i++)
		if (check_output(x, dir, i, r))
			goto out;
	ret = 0;
out:
	run_ctx_release(x);
	return ret;
}

/* ---- running one test (in the child) ---------------------------------- */

static bool is_unsupported(int rc, const char *msg)
{
	return rc == -ENOTSUP || rc == -EOPNOTSUPP ||
	       strcasestr(msg, "unsupported") != NULL;
}

/* model.onnx → graph; UNSUPPORTED for the frontend's clear refusals. */
static struct vtpu_graph *parse_model(const char *tdir, struct result *r)
{
	char path[4096], err[REASON_MAX] = "";
	struct vtpu_graph *g = NULL;
	size_t len;
	void *buf;
	int rc;

	mkpath(path, sizeof(path), "%s/model.onnx", tdir);
	buf = read_file(path, &len);
	if (!buf) {
		set_result(r, V_FAIL, "model.onnx: %s", strerror(errno));
		return NULL;
	}
	rc = vtpu_onnx_parse(buf, len, &g, err, sizeof(err));
	free(buf);
	if (rc < 0 || !g) {
		set_result(r, is_unsupported(rc, err) ? V_UNSUPPORTED : V_FAIL,
			   "%s", err[0] ? err : strerror(rc < 0 ? -rc : EINVAL));
		if (g)
			vtpu_graph_free(g);
		return NULL;
	}
	return g;
}

static int open_client(struct vtpu_client **c, struct result *r)
{
	struct vtpu_client_options o;

	vtpu_client_options_init(&o);
	o.backend = VTPU_BACKEND_AUTO;	/* VTPU_BACKEND decides */
	o.cache_dir = "";	/* measure the compiler, not the disk cache */
	if (vtpu_client_create(&o, c))
		return -set_result(r, V_FAIL, "client: %s",
				   vtpu_client_error(NULL));
	return 0;
}

/* Runs every data set of @tdir, stopping at the first failure. */
static void run_data_sets(struct run_ctx *x, const char *tdir,
			  struct result *r)
{
	struct dirent **ds;
	char dir[4096];
	int nds = scandir(tdir, &ds, data_set_filter, alphasort);

	if (nds <= 0) {
		set_result(r, V_FAIL, "no test_data_set_*");
		return;
	}
	set_result(r, V_PASS, "%d data set%s", nds, nds == 1 ? "" : "s");
	for (int k = 0; k < nds; k++) {
		mkpath(dir, sizeof(dir), "%s/%s", tdir, ds[k]->d_name);
		if (r->v == V_PASS && run_data_set(x, dir, r))
			snprintf(r->reason + strlen(r->reason),
				 sizeof(r->reason) - strlen(r->reason),
				 " (%s)", ds[k]->d_name);
		free(ds[k]);
	}
	free(ds);
}

/* Compiles @g on the client and runs the data sets against it. */
static void compile_and_run(struct run_ctx *x, const struct vtpu_graph *g,
			    const char *tdir, struct result *r)
{
	const char *e;

	if (vtpu_executable_compile(x->c, g, &x->exe)) {
		e = vtpu_client_error(x->c);
		/* libvtpu's message may already say "compile:". */
		set_result(r, V_FAIL, "%s%s",
			   strncmp(e, "compile:", 8) ? "compile: " : "", e);
		return;
	}
	x->nin = vtpu_executable_num_inputs(x->exe);
	x->nout = vtpu_executable_num_outputs(x->exe);
	run_data_sets(x, tdir, r);
	vtpu_executable_destroy(x->exe);
}

static void run_test(const char *tdir, struct result *r)
{
	struct run_ctx x = { 0 };
	struct vtpu_graph *g = parse_model(tdir, r);

	if (!g)
		return;
	if (open_client(&x.c, r) == 0) {
		compile_and_run(&x, g, tdir, r);
		vtpu_client_destroy(x.c);
	}
	vtpu_graph_free(g);
}

/* ---- the parent: children, deadlines, tallies ------------------------- */

struct test {
	char cat[32];
	char name[256];
	struct result r;
	pid_t pid;
	int fd;			/* read end of the child's result pipe */
	struct timespec start;
	bool done;
};

struct tally {
	int total, unsupported, passed, failed;
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static pid_t spawn(struct test *t)
{
	char tdir[4096];
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		/* libvtpu or a bad model may print; keep the report clean. */
		if (!opt.verbose) {
			int nul = open("/dev/null", O_WRONLY);

			dup2(nul, STDERR_FILENO);
			dup2(nul, STDOUT_FILENO);
		}
		mkpath(tdir, sizeof(tdir), "%s/%s/%s", opt.data_dir, t->cat,
			 t->name);
		run_test(tdir, &t->r);
		/* One write < PIPE_BUF: atomic, and never blocks. */
		if (write(p[1], &t->r, sizeof(t->r)) != sizeof(t->r))
			_exit(3);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	t->fd = p[0];
	t->pid = pid;
	clock_gettime(CLOCK_MONOTONIC, &t->start);
	return pid;
}

static const char *sig_name(int sig)
{
	static const struct { int sig; const char *name; } names[] = {
		{ SIGSEGV, "SIGSEGV" }, { SIGABRT, "SIGABRT" },
		{ SIGBUS, "SIGBUS" }, { SIGFPE, "SIGFPE" },
		{ SIGILL, "SIGILL" }, { SIGKILL, "SIGKILL" },
		{ SIGALRM, "SIGALRM" }, { SIGTERM, "SIGTERM" },
		{ SIGPIPE, "SIGPIPE" }, { SIGTRAP, "SIGTRAP" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].sig == sig)
			return names[i].name;
	return "signal";
}

/* Turns the child's exit into the test's result. */
static void reap(struct test *t, int status, bool timed_out)
{
	ssize_t n = read(t->fd, &t->r, sizeof(t->r));

	close(t->fd);
	t->done = true;
	if (timed_out)
		set_result(&t->r, V_FAIL, "timeout after %d s (SIGKILL)",
			   opt.timeout);
	else if (WIFSIGNALED(status))
		set_result(&t->r, V_FAIL, "crashed: %s",
			   sig_name(WTERMSIG(status)));
	else if (n != (ssize_t)sizeof(t->r) || WEXITSTATUS(status))
		set_result(&t->r, V_FAIL, "child exited with status %d",
			   WEXITSTATUS(status));
	t->r.reason[sizeof(t->r.reason) - 1] = '\0';
}

static void print_result(const struct test *t)
{
	bool why = t->r.v != V_PASS || opt.verbose;

	printf("%s %s/%s%s%s\n", verdict_name[t->r.v], t->cat, t->name,
	       why && t->r.reason[0] ? ": " : "", why ? t->r.reason : "");
	fflush(stdout);
}

/* Kills children past their deadline; reaps those that ended. */
static int poll_children(struct test *tests, int ntests)
{
	int ended = 0;

	for (int i = 0; i < ntests; i++) {
		struct test *t = &tests[i];
		int status;
		bool late;

		if (t->done || t->pid <= 0)
			continue;
		late = now_s() - (t->start.tv_sec + t->start.tv_nsec / 1e9) >
		       opt.timeout;
		if (late)
			kill(t->pid, SIGKILL);
		if (waitpid(t->pid, &status, late ? 0 : WNOHANG) == t->pid) {
			reap(t, status, late);
			ended++;
		}
	}
	return ended;
}

/* Runs all tests JOBS at a time; prints results in test order. */
static void run_all(struct test *tests, int ntests)
{
	int next = 0, running = 0, printed = 0, ended;
	struct timespec tick = { 0, 2 * 1000 * 1000 };

	while (printed < ntests) {
		while (running < JOBS && next < ntests) {
			if (spawn(&tests[next]) < 0) {
				set_result(&tests[next].r, V_FAIL, "fork: %s",
					   strerror(errno));
				tests[next].done = true;
			} else {
				running++;
			}
			next++;
		}
		ended = poll_children(tests, next);
		running -= ended;
		while (printed < next && tests[printed].done)
			print_result(&tests[printed++]);
		/* Sleep only while nothing moved: keeps short tests quick. */
		if (!ended && printed < ntests)
			nanosleep(&tick, NULL);
	}
}

/* ---- test discovery and the summary ----------------------------------- */

static bool wanted(const char *cat, const char *name)
{
	char full[512];

	if (opt.category && strcmp(opt.category, cat))
		return false;
	snprintf(full, sizeof(full), "%s/%s", cat, name);
	return !opt.filter || strstr(full, opt.filter);
}

/* Appends the tests of category @cat to *@tests. */
static int discover(const char *cat, struct test **tests, int *ntests)
{
	char dir[4096];
	struct dirent **ents;
	int n;

	mkpath(dir, sizeof(dir), "%s/%s", opt.data_dir, cat);
	n = scandir(dir, &ents, dir_filter, alphasort);
	if (n < 0)
		return 0;	/* a category the package lacks is empty */
	for (int i = 0; i < n; i++) {
		if (wanted(cat, ents[i]->d_name)) {
			struct test *t = realloc(*tests,
						 (*ntests + 1) * sizeof(**tests));

			if (!t)
				return -ENOMEM;
			*tests = t;
			t += (*ntests)++;
			memset(t, 0, sizeof(*t));
			snprintf(t->cat, sizeof(t->cat), "%s", cat);
			snprintf(t->name, sizeof(t->name), "%s",
				 ents[i]->d_name);
		}
		free(ents[i]);
	}
	free(ents);
	return 0;
}

static void count(struct tally *tl, const struct test *t)
{
	tl->total++;
	tl->unsupported += t->r.v == V_UNSUPPORTED;
	tl->passed += t->r.v == V_PASS;
	tl->failed += t->r.v == V_FAIL;
}

static void print_frac(const char *what, int num, int den)
{
	if (den)
		printf("%s: %d/%d = %.3f\n", what, num, den,
		       (double)num / den);
	else
		printf("%s: n/a (no tests)\n", what);
}

/*
 * Prints the per-category and suite lines and checks the two goals.
 * The coverage goal is over the pytorch and simple categories only: node
 * tests are single-op unit tests of the whole ONNX opset, most of which
 * vtpu does not aim to cover. A goal with no tests to judge (filtered
 * out) does not fail the run.
 */
static int summarise(const struct test *tests, int ntests)
{
	struct tally cat[NCAT] = { 0 }, all = { 0 }, models = { 0 };
	int ok = 1;

	for (int i = 0; i < ntests; i++) {
		for (size_t c = 0; c < NCAT; c++)
			if (!strcmp(tests[i].cat, categories[c]))
				count(&cat[c], &tests[i]);
		count(&all, &tests[i]);
		if (strcmp(tests[i].cat, "node"))
			count(&models, &tests[i]);
	}
	for (size_t c = 0; c < NCAT; c++)
		if (cat[c].total)
			printf("conformance/%s: %d total, %d supported, "
			       "%d passed, %d failed\n", categories[c],
			       cat[c].total, cat[c].total - cat[c].unsupported,
			       cat[c].passed, cat[c].failed);
	print_frac("pass rate (passed/supported)", all.passed,
		   all.total - all.unsupported);
	print_frac("coverage (supported/total, pytorch-* + simple)",
		   models.total - models.unsupported, models.total);
	if (all.total == all.unsupported ||
	    all.passed < 0.90 * (all.total - all.unsupported)) {
		printf("goal missed: pass rate below 0.90\n");
		ok = 0;
	}
	if (models.total &&
	    models.total - models.unsupported < 0.80 * models.total) {
		printf("goal missed: coverage below 0.80\n");
		ok = 0;
	}
	printf("conformance: %d passed, %d failed, %d skipped\n", all.passed,
	       all.failed, all.unsupported);
	return ok ? 0 : 1;
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--category C] [--filter SUBSTR] "
		"[--timeout S] [--verbose] DATA_DIR\n", argv0);
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	opt.timeout = TIMEOUT_S;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--category") && i + 1 < argc)
			opt.category = argv[++i];
		else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
			opt.filter = argv[++i];
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			opt.timeout = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v"))
			opt.verbose = true;
		else if (argv[i][0] == '-' || opt.data_dir)
			usage(argv[0]);
		else
			opt.data_dir = argv[i];
	}
	if (!opt.data_dir || opt.timeout < 1)
		usage(argv[0]);
}

int main(int argc, char **argv)
{
	struct test *tests = NULL;
	int ntests = 0, ret;

	parse_args(argc, argv);
	for (size_t c = 0; c < NCAT; c++)
		if (discover(categories[c], &tests, &ntests)) {
			fprintf(stderr, "conformance: out of memory\n");
			return 2;
		}
	if (!ntests)
		fprintf(stderr, "conformance: no tests under %s\n",
			opt.data_dir);
	/* Results arrive through pipes; a dead reader must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	run_all(tests, ntests);
	ret = summarise(tests, ntests);
	free(tests);
	return ret;
}
