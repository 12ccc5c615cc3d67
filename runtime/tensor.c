// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * Host tensors: element types, conversion to and from what the device
 * computes in, and the two file formats tensors arrive in (NumPy .npy
 * and ONNX TensorProto .pb). vtpu-run, the conformance runner and the
 * Python module all go through here, so a rule (int64 range-checked
 * into s32, NaN kept through bf16) holds for every one of them.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "onnx.pb-c.h"
#include "vtpu.h"

#define DT(x)	ONNX__TENSOR_PROTO__DATA_TYPE__##x
/*
 * Far above any tensor a device holds; bounds the dims of files that
 * only look like tensors (ONNX's sequence test data unpacks "fine" as
 * a TensorProto with nonsense dims) before anything is allocated.
 */
#define MAX_ELEMS	(1ull << 31)

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* ---- types ------------------------------------------------------------ */

enum vtpu_elem vtpu_type_elem(enum vtpu_type t)
{
	switch (t) {
	case VTPU_F32:	return VTPU_ELEM_FLOAT;
	case VTPU_BF16:	return VTPU_ELEM_BFLOAT16;
	case VTPU_S32:	return VTPU_ELEM_INT32;
	case VTPU_S64:	return VTPU_ELEM_INT64;
	case VTPU_PRED:	return VTPU_ELEM_BOOL;
	}
	return VTPU_ELEM_UNDEFINED;
}

/* Size, name, and whether the type is an integer (bool counts as one). */
static const struct {
	const char *name;
	unsigned char size;
	bool is_int;
} dtypes[] = {
	[VTPU_ELEM_FLOAT] = { "float", 4, false },
	[VTPU_ELEM_UINT8] = { "uint8", 1, true },
	[VTPU_ELEM_INT8] = { "int8", 1, true },
	[VTPU_ELEM_UINT16] = { "uint16", 2, true },
	[VTPU_ELEM_INT16] = { "int16", 2, true },
	[VTPU_ELEM_INT32] = { "int32", 4, true },
	[VTPU_ELEM_INT64] = { "int64", 8, true },
	[VTPU_ELEM_STRING] = { "string", 0, false },
	[VTPU_ELEM_BOOL] = { "bool", 1, true },
	[VTPU_ELEM_FLOAT16] = { "float16", 2, false },
	[VTPU_ELEM_DOUBLE] = { "double", 8, false },
	[VTPU_ELEM_UINT32] = { "uint32", 4, true },
	[VTPU_ELEM_UINT64] = { "uint64", 8, true },
	[VTPU_ELEM_BFLOAT16] = { "bfloat16", 2, false },
};

#define NDTYPES	(sizeof(dtypes) / sizeof(dtypes[0]))

size_t vtpu_elem_size(enum vtpu_elem dt)
{
	return (unsigned int)dt < NDTYPES ? dtypes[dt].size : 0;
}

const char *vtpu_elem_name(enum vtpu_elem dt)
{
	return (unsigned int)dt < NDTYPES && dtypes[dt].name ?
	       dtypes[dt].name : "undefined";
}

/* ---- element conversion ----------------------------------------------- */

static double half_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) :
		   ldexp(m | 0x400, e - 25);

	return h & 0x8000 ? -v : v;
}

/* Rounds to nearest even through the f32 value, as a cast would. */
static uint16_t float_to_half(float f)
{
	uint32_t u, sign, man;
	int e;

	memcpy(&u, &f, sizeof(u));
	sign = (u >> 16) & 0x8000;
	e = (int)((u >> 23) & 0xff) - 127 + 15;
	man = u & 0x7fffff;
	if (((u >> 23) & 0xff) == 0xff)
		return sign | 0x7c00 | (man ? 0x200 : 0);
	if (e >= 31)
		return sign | 0x7c00;
	if (e <= 0) {
		/* Subnormal: the value in units of 2^-24, rounded even. */
		double v = ldexp(fabs((double)f), 24);
		double r = nearbyint(v);

		return sign | (uint16_t)r;
	}
	man += 0xfff + ((man >> 13) & 1);
	if (man & 0x800000) {
		man = 0;
		if (++e >= 31)
			return sign | 0x7c00;
	}
	return sign | (uint16_t)(e << 10) | (uint16_t)(man >> 13);
}

/* One element, widened: a float as double, an integer as int or uint. */
struct elem {
	double f;
	int64_t i;
	uint64_t u;
	int kind;		/* 0 float, 1 signed, 2 unsigned */
};

static struct elem get_elem(enum vtpu_elem dt, const uint8_t *p)
{
	union { int8_t s8; uint8_t u8; int16_t s16; uint16_t u16;
		int32_t s32; uint32_t u32; int64_t s64; uint64_t u64;
		float f32; double f64; } v;
	struct elem e = { 0 };

	memcpy(&v, p, dtypes[dt].size);		/* hosts are little-endian */
	switch (dt) {
	case VTPU_ELEM_FLOAT:	e.f = v.f32; break;
	case VTPU_ELEM_DOUBLE:	e.f = v.f64; break;
	case VTPU_ELEM_FLOAT16:	e.f = half_to_double(v.u16); break;
	case VTPU_ELEM_BFLOAT16:	e.f = vtpu_bf16_to_f32(v.u16); break;
	case VTPU_ELEM_INT8:	e.kind = 1, e.i = v.s8; break;
	case VTPU_ELEM_INT16:	e.kind = 1, e.i = v.s16; break;
	case VTPU_ELEM_INT32:	e.kind = 1, e.i = v.s32; break;
	case VTPU_ELEM_INT64:	e.kind = 1, e.i = v.s64; break;
	case VTPU_ELEM_BOOL:	e.kind = 2, e.u = v.u8 != 0; break;
	case VTPU_ELEM_UINT8:	e.kind = 2, e.u = v.u8; break;
	case VTPU_ELEM_UINT16:	e.kind = 2, e.u = v.u16; break;
	case VTPU_ELEM_UINT32:	e.kind = 2, e.u = v.u32; break;
	default:		e.kind = 2, e.u = v.u64; break;
	}
	return e;
}

static double elem_double(const struct elem *e)
{
	return e->kind == 0 ? e->f : e->kind == 1 ? (double)e->i : (double)e->u;
}

/* Integer limits of the integer host types. */
static void int_range(enum vtpu_elem dt, int64_t *lo, uint64_t *hi)
{
	switch (dt) {
	case VTPU_ELEM_INT8:	*lo = INT8_MIN, *hi = INT8_MAX; break;
	case VTPU_ELEM_INT16:	*lo = INT16_MIN, *hi = INT16_MAX; break;
	case VTPU_ELEM_INT32:	*lo = INT32_MIN, *hi = INT32_MAX; break;
	case VTPU_ELEM_INT64:	*lo = INT64_MIN, *hi = INT64_MAX; break;
	case VTPU_ELEM_UINT8:	*lo = 0, *hi = UINT8_MAX; break;
	case VTPU_ELEM_UINT16:	*lo = 0, *hi = UINT16_MAX; break;
	case VTPU_ELEM_UINT32:	*lo = 0, *hi = UINT32_MAX; break;
	default:		*lo = 0, *hi = UINT64_MAX; break;
	}
}

/*
 * @e as an integer of @dt: 0, or -ERANGE when it is not integral or out
 * of range. The value is carried as a sign and a magnitude so that
 * uint64 and int64 limits are both exact.
 */
static int put_int(enum vtpu_elem dt, const struct elem *e, uint8_t *p)
{
	int64_t lo;
	uint64_t hi, mag;
	bool neg;

	int_range(dt, &lo, &hi);
	if (e->kind == 0) {
		if (!(e->f == nearbyint(e->f)) || e->f >= 0x1p64 ||
		    e->f < -0x1p63)
			return -ERANGE;
		neg = e->f < 0;
		mag = (uint64_t)(neg ? -e->f : e->f);	/* exact: < 2^64 */
	} else if (e->kind == 1) {
		neg = e->i < 0;
		mag = neg ? (uint64_t)-(e->i + 1) + 1 : (uint64_t)e->i;
	} else {
		neg = false;
		mag = e->u;
	}
	if (neg ? mag > (uint64_t)-(lo + 1) + 1 : mag > hi)
		return -ERANGE;
	/* Two's complement of the magnitude, truncated to the width. */
	mag = neg ? ~mag + 1 : mag;
	memcpy(p, &mag, dtypes[dt].size);
	return 0;
}

static void put_float(enum vtpu_elem dt, double v, uint8_t *p)
{
	float f = (float)v;
	uint16_t h;

	switch (dt) {
	case VTPU_ELEM_DOUBLE:	memcpy(p, &v, 8); break;
	case VTPU_ELEM_FLOAT:	memcpy(p, &f, 4); break;
	case VTPU_ELEM_BFLOAT16:	h = vtpu_f32_to_bf16(f); memcpy(p, &h, 2); break;
	default:		h = float_to_half(f); memcpy(p, &h, 2); break;
	}
}

static bool convertible(enum vtpu_elem dt)
{
	return (unsigned int)dt < NDTYPES && dtypes[dt].size;
}

int vtpu_elem_convert(enum vtpu_elem from, const void *src, size_t n,
		       enum vtpu_elem to, void *dst, char *err, size_t errlen)
{
	const uint8_t *s = src;
	uint8_t *d = dst;
	size_t fs, ts;

	if (n && (!src || !dst))
		return fail(err, errlen, -EINVAL, "convert: no %s",
			    src ? "dst" : "src");
	if (!convertible(from) || !convertible(to))
		return fail(err, errlen, -EOPNOTSUPP, "cannot convert %s to %s",
			    vtpu_elem_name(from), vtpu_elem_name(to));
	fs = dtypes[from].size;
	ts = dtypes[to].size;
	if (from == to) {
		if (n)
			memcpy(dst, src, n * fs);
		return 0;
	}
	for (size_t k = 0; k < n; k++) {
		struct elem e = get_elem(from, s + k * fs);

		if (to == VTPU_ELEM_BOOL) {
			d[k] = elem_double(&e) != 0 || (e.kind == 2 && e.u);
		} else if (!dtypes[to].is_int) {
			put_float(to, elem_double(&e), d + k * ts);
		} else if (put_int(to, &e, d + k * ts)) {
			return fail(err, errlen, -ERANGE,
				    "element %zu (%.17g) does not fit %s%s", k,
				    elem_double(&e), vtpu_elem_name(to),
				    to == VTPU_ELEM_INT32 ?
				    " (int64 computes as int32 on the device)" : "");
		}
	}
	return 0;
}

/* ---- files ------------------------------------------------------------ */

int vtpu_read_file(const char *path, void **out, size_t *len)
{
	FILE *f;
	char *buf = NULL;
	long n;
	int ret = -EIO;

	if (!path || !out || !len)
		return -EINVAL;
	*out = NULL;
	f = fopen(path, "rb");
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0) {
		rewind(f);
		buf = malloc(n + 1);
		/*
		 * A model of hundreds of MB: huge pages for the whole pages
		 * inside the buffer (malloc() maps one that big on its own),
		 * or reading it takes a page fault every 4 KiB.
		 */
		if (buf && n >= (2l << 20)) {
			uintptr_t a = ((uintptr_t)buf + 4095) & ~(uintptr_t)4095;

			madvise((void *)a, ((uintptr_t)buf + n - a) & ~(uintptr_t)4095,
				MADV_HUGEPAGE);
		}
		if (!buf) {
			ret = -ENOMEM;
		} else if (fread(buf, 1, n, f) == (size_t)n) {
			buf[n] = '\0';
			*len = n;
			*out = buf;
			ret = 0;
		} else {
			free(buf);
		}
	}
	fclose(f);
	return ret;
}

/* Sets dims, n and the data buffer; -EINVAL past MAX_ELEMS. */
static int tensor_alloc(struct vtpu_tensor *t, enum vtpu_elem dt, int rank,
			const int64_t *dims, char *err, size_t errlen)
{
	size_t n = 1;

	if (rank < 0 || rank > VTPU_TENSOR_MAX_RANK)
		return fail(err, errlen, -EINVAL, "not a tensor (rank %d)",
			    rank);
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0 || (uint64_t)dims[i] > MAX_ELEMS ||
		    (n *= (size_t)dims[i]) > MAX_ELEMS)
			return fail(err, errlen, -EINVAL,
				    "not a tensor (dims)");
		t->dims[i] = dims[i];
	}
	t->dtype = dt;
	t->rank = rank;
	t->n = n;
	t->data = malloc(n * dtypes[dt].size + 1);
	if (!t->data)
		return fail(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

/*
 * Element @k from the typed repeated fields. ONNX packs the narrow
 * integer types, bool and the 16-bit floats (as bits) into int32_data,
 * and uint32/uint64 into uint64_data.
 */
static int put_typed(struct vtpu_tensor *t, size_t k,
		     const Onnx__TensorProto *tp)
{
	uint8_t *p = (uint8_t *)t->data + k * dtypes[t->dtype].size;
	struct elem e = { .kind = 1 };
	size_t have;

	switch ((int)t->dtype) {
	case DT(FLOAT):		have = tp->n_float_data; break;
	case DT(DOUBLE):	have = tp->n_double_data; break;
	case DT(INT64):		have = tp->n_int64_data; break;
	case DT(UINT32):
	case DT(UINT64):	have = tp->n_uint64_data; break;
	default:		have = tp->n_int32_data; break;
	}
	if (have != t->n)
		return -EINVAL;
	switch ((int)t->dtype) {
	case DT(FLOAT):		memcpy(p, &tp->float_data[k], 4); return 0;
	case DT(DOUBLE):	memcpy(p, &tp->double_data[k], 8); return 0;
	case DT(INT64):		memcpy(p, &tp->int64_data[k], 8); return 0;
	case DT(UINT32):
	case DT(UINT64):
		memcpy(p, &tp->uint64_data[k], dtypes[t->dtype].size);
		return 0;
	case DT(FLOAT16):
	case DT(BFLOAT16):
		memcpy(p, &tp->int32_data[k], 2);	/* the bits */
		return 0;
	default:
		e.i = tp->int32_data[k];
		if (t->dtype == VTPU_ELEM_BOOL)
			e.i = e.i != 0;
		/* Narrow types wrap as ONNX stored them. */
		memcpy(p, &e.i, dtypes[t->dtype].size);
		return 0;
	}
}

static int tensor_from_proto(const Onnx__TensorProto *tp,
			     struct vtpu_tensor *t, char *err, size_t errlen)
{
	int64_t dims[VTPU_TENSOR_MAX_RANK];
	int dt = tp->data_type, ret;
	size_t es;

	/*
	 * Sequence and optional test data (other protos) unpack "fine" as
	 * a TensorProto with nonsense dims: bound them before allocating.
	 */
	if (tp->n_dims > VTPU_TENSOR_MAX_RANK)
		return fail(err, errlen, -EINVAL, "not a tensor (rank %zu)",
			    tp->n_dims);
	for (size_t d = 0; d < tp->n_dims; d++)
		dims[d] = tp->dims[d];
	if (!convertible(dt))
		return fail(err, errlen, -EOPNOTSUPP,
			    "ONNX element type %d (%s) is not supported", dt,
			    vtpu_elem_name(dt));
	if (tp->has_data_location &&
	    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return fail(err, errlen, -EOPNOTSUPP, "external data");
	ret = tensor_alloc(t, dt, (int)tp->n_dims, dims, err, errlen);
	if (ret)
		return ret;
	es = dtypes[dt].size;
	if (tp->has_raw_data) {
		if (tp->raw_data.len != t->n * es)
			return fail(err, errlen, -EINVAL,
				    "raw_data is %zu bytes, expected %zu",
				    tp->raw_data.len, t->n * es);
		if (t->n)	/* an empty raw_data may have no bytes at all */
			memcpy(t->data, tp->raw_data.data, t->n * es);
		if (dt == VTPU_ELEM_BOOL)
			for (size_t k = 0; k < t->n; k++)
				((uint8_t *)t->data)[k] &= 1;
		return 0;
	}
	for (size_t k = 0; k < t->n; k++)
		if (put_typed(t, k, tp))
			return fail(err, errlen, -EINVAL,
				    "element count does not match dims");
	return 0;
}

int vtpu_tensor_decode_pb(const void *data, size_t len,
			  struct vtpu_tensor *out, char *err, size_t errlen)
{
	Onnx__TensorProto *tp;
	int ret;

	if (!out)
		return fail(err, errlen, -EINVAL, "decode_pb: no out");
	memset(out, 0, sizeof(*out));
	if (!data)
		return fail(err, errlen, -EINVAL, "decode_pb: no data");
	tp = onnx__tensor_proto__unpack(NULL, len, data);
	if (!tp)
		return fail(err, errlen, -EINVAL, "not an ONNX TensorProto");
	ret = tensor_from_proto(tp, out, err, errlen);
	if (!ret && tp->name && tp->name[0] && !(out->name = strdup(tp->name)))
		ret = fail(err, errlen, -ENOMEM, "out of memory");
	onnx__tensor_proto__free_unpacked(tp, NULL);
	if (ret)
		vtpu_tensor_free(out);
	return ret;
}

/* NumPy's descr of each host type, little-endian. */
static const char *const npy_descr[] = {
	[VTPU_ELEM_FLOAT] = "<f4", [VTPU_ELEM_DOUBLE] = "<f8",
	[VTPU_ELEM_FLOAT16] = "<f2", [VTPU_ELEM_INT8] = "|i1",
	[VTPU_ELEM_UINT8] = "|u1", [VTPU_ELEM_INT16] = "<i2",
	[VTPU_ELEM_UINT16] = "<u2", [VTPU_ELEM_INT32] = "<i4",
	[VTPU_ELEM_UINT32] = "<u4", [VTPU_ELEM_INT64] = "<i8",
	[VTPU_ELEM_UINT64] = "<u8", [VTPU_ELEM_BOOL] = "|b1",
};

#define NNPY	(sizeof(npy_descr) / sizeof(npy_descr[0]))

int vtpu_tensor_decode_npy(const void *data, size_t len,
			   struct vtpu_tensor *out, char *err, size_t errlen)
{
	const unsigned char *buf = data;
	int64_t dims[VTPU_TENSOR_MAX_RANK];
	size_t hlen, off;
	char *hdr = NULL;
	const char *sh, *d;
	int dt = 0, rank = 0, ret = -EINVAL;

	if (!out)
		return fail(err, errlen, -EINVAL, "decode_npy: no out");
	memset(out, 0, sizeof(*out));
	if (!data)
		return fail(err, errlen, -EINVAL, "decode_npy: no data");
	if (len < 10 || memcmp(buf, "\x93NUMPY", 6) || buf[6] < 1 || buf[6] > 3)
		return fail(err, errlen, -EINVAL, "not a .npy file");
	if (buf[6] == 1) {
		hlen = buf[8] | buf[9] << 8;
		off = 10;
	} else {
		if (len < 12)
			return fail(err, errlen, -EINVAL, "not a .npy file");
		hlen = buf[8] | buf[9] << 8 | (size_t)buf[10] << 16 |
		       (size_t)buf[11] << 24;
		off = 12;
	}
	if (off + hlen > len)
		return fail(err, errlen, -EINVAL, "truncated .npy header");
	hdr = strndup((const char *)buf + off, hlen);
	if (!hdr)
		return fail(err, errlen, -ENOMEM, "out of memory");
	off += hlen;
	d = strstr(hdr, "'descr': '");
	for (size_t k = 0; d && k < NNPY; k++)
		if (npy_descr[k] && !strncmp(d + 10, npy_descr[k], 3) &&
		    d[13] == '\'')
			dt = (int)k;
	sh = strstr(hdr, "'shape': (");
	if (!dt || !sh || strstr(hdr, "'fortran_order': True")) {
		ret = fail(err, errlen, -EOPNOTSUPP,
			   ".npy: wants a little-endian number or bool type in C order");
		goto out;
	}
	for (sh += 10; *sh && *sh != ')';) {
		char *e;
		long long v = strtoll(sh, &e, 10);

		if (e == sh)
			break;
		if (rank == VTPU_TENSOR_MAX_RANK) {
			ret = fail(err, errlen, -EOPNOTSUPP, ".npy: rank above %d",
				   VTPU_TENSOR_MAX_RANK);
			goto out;
		}
		dims[rank++] = v;
		sh = e + strspn(e, ", ");
	}
	ret = tensor_alloc(out, dt, rank, dims, err, errlen);
	if (ret)
		goto out;
	if (off + out->n * dtypes[dt].size != len) {
		ret = fail(err, errlen, -EINVAL,
			   ".npy: %zu elements do not match the file size",
			   out->n);
		goto out;
	}
	memcpy(out->data, buf + off, out->n * dtypes[dt].size);
	ret = 0;
out:
	free(hdr);
	if (ret)
		vtpu_tensor_free(out);
	return ret;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

int vtpu_tensor_load(const char *path, struct vtpu_tensor *out, char *err,
		     size_t errlen)
{
	const char *base;
	char msg[256];
	size_t len = 0;
	int ret;
	void *buf;

	if (!out)
		return fail(err, errlen, -EINVAL, "tensor_load: no out");
	memset(out, 0, sizeof(*out));
	if (!path)
		return fail(err, errlen, -EINVAL, "tensor_load: no path");
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	ret = vtpu_read_file(path, &buf, &len);
	if (ret)
		return fail(err, errlen, ret, "cannot read %s: %s", path,
			    strerror(-ret));
	if (ends_with(path, ".npy"))
		ret = vtpu_tensor_decode_npy(buf, len, out, msg, sizeof(msg));
	else
		ret = vtpu_tensor_decode_pb(buf, len, out, msg, sizeof(msg));
	free(buf);
	if (ret)
		fail(err, errlen, ret, "%s: %s", base, msg);
	return ret;
}

int vtpu_tensor_save_npy(const char *path, const struct vtpu_tensor *t,
			 char *err, size_t errlen)
{
	char hdr[512], dims[400] = "";
	size_t es;
	FILE *f;
	int len;

	if (!path || !t)
		return fail(err, errlen, -EINVAL, "save_npy: no %s",
			    path ? "tensor" : "path");
	if (t->n && !t->data)
		return fail(err, errlen, -EINVAL, "save_npy: a tensor without data");
	es = vtpu_elem_size(t->dtype);

	if ((unsigned int)t->dtype >= NNPY || !npy_descr[t->dtype])
		return fail(err, errlen, -EOPNOTSUPP, "NumPy has no %s",
			    vtpu_elem_name(t->dtype));
	for (int i = 0; i < t->rank; i++)
		snprintf(dims + strlen(dims), sizeof(dims) - strlen(dims),
			 "%lld,%s", (long long)t->dims[i],
			 t->rank > 1 && i < t->rank - 1 ? " " : "");
	len = snprintf(hdr, sizeof(hdr),
		       "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
		       npy_descr[t->dtype], dims);
	/* Data starts 64-byte aligned; the header ends with a newline. */
	while ((10 + len + 1) % 64)
		hdr[len++] = ' ';
	hdr[len++] = '\n';
	f = fopen(path, "wb");
	if (!f)
		return fail(err, errlen, -errno, "cannot write %s: %s", path,
			    strerror(errno));
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	fputc(len & 0xff, f);
	fputc(len >> 8, f);
	fwrite(hdr, 1, len, f);
	fwrite(t->data, es, t->n, f);
	if (fclose(f))
		return fail(err, errlen, -EIO, "cannot write %s", path);
	return 0;
}

void vtpu_tensor_free(struct vtpu_tensor *t)
{
	if (!t)
		return;
	free(t->data);
	free(t->name);
	memset(t, 0, sizeof(*t));
}
