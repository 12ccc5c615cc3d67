// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * onnx/values.c - values: the names of a graph, their host copies (initializers,
 * Constant nodes, folded shape arithmetic), node inputs and outputs,
 * attributes, element types and TensorProto decoding.
 */
#include "common.h"

/* ---- values ---------------------------------------------------------------- */

struct val *onnx_lookup(struct ctx *c, const char *name)
{
	/* protobuf allows a value without a name; none is ever defined */
	if (!name)
		return NULL;
	for (int i = c->nv - 1; i >= 0; i--)
		if (!strcmp(c->v[i].name, name))
			return &c->v[i];
	return NULL;
}

int onnx_define(struct ctx *c, const char *name, int id, struct cval *cv)
{
	struct val *v;

	/* a subgraph's input or output with no name (protobuf allows it) */
	if (!name)
		return onnx_fail(c, "a value without a name");
	if (c->nv == c->cap) {
		int cap = c->cap ? 2 * c->cap : 64;
		struct val *nv = realloc(c->v, cap * sizeof(*nv));

		if (!nv) {
			onnx_fail(c, "out of memory");
			return -ENOMEM;
		}
		c->v = nv;
		c->cap = cap;
	}
	v = &c->v[c->nv++];
	v->name = name;
	v->id = id;
	v->c = cv;
	v->b = NULL;
	v->s = NULL;
	v->gelu = 0;
	v->gelu_x = NULL;
	return 0;
}

void onnx_cval_free(struct cval *cv)
{
	if (cv) {
		if (!cv->borrowed)
			free(cv->data);
		free(cv);
	}
}

static int esize(enum vtpu_type t)
{
	switch (t) {
	case VTPU_F32: case VTPU_S32: return 4;
	case VTPU_BF16: return 2;
	case VTPU_S64: return 8;
	default: return 1;
	}
}

struct vtpu_shape onnx_shape_of(struct ctx *c, int id)
{
	struct vtpu_shape s = { 0 };

	vtpu_graph_shape(c->g, id, &s);
	return s;
}

int64_t onnx_prod(const int64_t *d, int from, int to)
{
	int64_t p = 1;

	for (int i = from; i < to; i++)
		p *= d[i];
	return p;
}

/* The builder value of @name, making a host constant a graph constant. */
int onnx_value(struct ctx *c, const char *name)
{
	struct val *v;
	struct vtpu_shape s = { 0 };

	if (!name)
		return onnx_fail(c, "a value without a name");
	v = onnx_lookup(c, name);
	if (!v)
		return onnx_fail(c, "input '%s' is not defined", name);
	if (v->id >= 0)
		return v->id;
	if (!v->c || v->c->n == 0)
		return onnx_fail(c, "input '%s' is an empty tensor", name);
	s.type = v->c->type;
	s.rank = v->c->rank;
	memcpy(s.dims, v->c->dims, sizeof(s.dims));
	if (c->folding && s.type == VTPU_S64) {
		/*
		 * The builder has no s64 arithmetic: a node folded through it
		 * (fold.c) computes in f32, only on integers f32 holds exactly.
		 */
		float *f = malloc(v->c->n * sizeof(*f));

		if (!f)
			return onnx_fail(c, "out of memory");
		for (int64_t i = 0; i < v->c->n; i++) {
			int64_t x = ((const int64_t *)v->c->data)[i];

			if (x < -(1 << 24) || x > (1 << 24)) {
				free(f);
				return onnx_fail(c, "int64 %lld is not exact in f32",
						 (long long)x);
			}
			f[i] = (float)x;
		}
		s.type = VTPU_F32;
		v->id = onnx_chk(c, vtpu_g_constant(c->g, &s, f));
		free(f);
		return v->id;
	}
	if (s.type == VTPU_S64) {
		/* int64 computes as s32 on the device (see the header). */
		int32_t *w = malloc(v->c->n * sizeof(*w));

		if (!w)
			return onnx_fail(c, "out of memory");
		for (int64_t i = 0; i < v->c->n; i++) {
			int64_t x = ((const int64_t *)v->c->data)[i];

			if (x < INT32_MIN || x > INT32_MAX) {
				free(w);
				return onnx_fail(c, "unsupported int64 constant '%s': %lld does not fit in s32",
						 name, (long long)x);
			}
			w[i] = (int32_t)x;
		}
		s.type = VTPU_S32;
		v->id = onnx_chk(c, vtpu_g_constant(c->g, &s, w));
		free(w);
		return v->id;
	}
	v->id = onnx_chk(c, vtpu_g_constant(c->g, &s, v->c->data));
	return v->id;
}

bool onnx_has_in(node_t *n, size_t i)
{
	return i < n->n_input && n->input[i][0];
}

int onnx_in(struct ctx *c, node_t *n, size_t i)
{
	if (!onnx_has_in(n, i))
		return onnx_fail(c, "missing input %zu", i);
	return onnx_value(c, n->input[i]);
}

/* The host copy of input @i, or NULL with an error. */
const struct cval *onnx_cin(struct ctx *c, node_t *n, size_t i,
			    const char *what)
{
	struct val *v;

	if (!onnx_has_in(n, i)) {
		onnx_fail(c, "missing input %zu (%s)", i, what);
		return NULL;
	}
	v = onnx_lookup(c, n->input[i]);
	/* A bound input's values serve where a constant is required. */
	if (v && !v->c && v->b) {
		c->bound_used = true;
		return v->b;
	}
	if (!v || !v->c) {
		onnx_fail(c, "%s '%s' is not constant (it must be an initializer or a Constant)",
			  what, n->input[i]);
		return NULL;
	}
	return v->c;
}

/* Integer elements of host constant @cv into @out (at most @max). */
int onnx_cv_ints(struct ctx *c, const struct cval *cv, int64_t *out,
		 int max, const char *what)
{
	if (cv->n > max)
		return onnx_fail(c, "%s has %lld elements (at most %d)", what,
				 (long long)cv->n, max);
	for (int64_t i = 0; i < cv->n; i++) {
		if (cv->type == VTPU_S64)
			out[i] = ((const int64_t *)cv->data)[i];
		else if (cv->type == VTPU_S32)
			out[i] = ((const int32_t *)cv->data)[i];
		else
			return onnx_fail(c, "%s must be integers", what);
	}
	return (int)cv->n;
}

int onnx_in_ints(struct ctx *c, node_t *n, size_t i, int64_t *out, int max,
		 const char *what)
{
	const struct cval *cv = onnx_cin(c, n, i, what);

	return cv ? onnx_cv_ints(c, cv, out, max, what) : -EINVAL;
}

/* A scalar float from a host constant of any numeric type. */
int onnx_cv_float(struct ctx *c, const struct cval *cv, double *out,
		  const char *what)
{
	if (cv->n != 1)
		return onnx_fail(c, "%s must be a scalar", what);
	switch (cv->type) {
	case VTPU_F32: *out = *(const float *)cv->data; break;
	case VTPU_S32: *out = *(const int32_t *)cv->data; break;
	case VTPU_S64: *out = (double)*(const int64_t *)cv->data; break;
	case VTPU_BF16: {
		uint32_t b = (uint32_t)*(const uint16_t *)cv->data << 16;
		float f;

		memcpy(&f, &b, 4);
		*out = f;
		break;
	}
	default: *out = *(const uint8_t *)cv->data; break;
	}
	return 0;
}

int onnx_out(struct ctx *c, node_t *n, size_t i, int id)
{
	if (id < 0)
		return id;
	if (i >= n->n_output)
		return onnx_fail(c, "missing output %zu", i);
	return onnx_define(c, n->output[i], id, NULL);
}

/* ---- attributes ------------------------------------------------------------ */

const Onnx__AttributeProto *onnx_attr(node_t *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

int64_t onnx_attr_i(node_t *n, const char *name, int64_t def)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);

	return a && a->has_i ? a->i : def;
}

float onnx_attr_f(node_t *n, const char *name, float def)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);

	return a && a->has_f ? a->f : def;
}

/* The ints of @name into @out; their count, -1 when absent. */
int onnx_attr_ints(struct ctx *c, node_t *n, const char *name, int64_t *out,
		   int max)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);

	if (!a)
		return -1;
	if (a->n_ints > (size_t)max)
		return onnx_fail(c, "attribute %s has %zu values (at most %d)", name,
				 a->n_ints, max) - 1000;
	if (a->n_ints)	/* an empty list has no array at all */
		memcpy(out, a->ints, a->n_ints * sizeof(*out));
	return (int)a->n_ints;
}

bool onnx_attr_s_is(node_t *n, const char *name, const char *def,
		    const char *want)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);

	if (!a || !a->has_s)
		return !strcmp(def, want);
	return strlen(want) == a->s.len && !memcmp(a->s.data, want, a->s.len);
}

bool onnx_in_list(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == len && !memcmp(p, name, len))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

enum vtpu_type onnx_type(int t, bool *ok)
{
	*ok = true;
	switch (t) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return VTPU_F32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return VTPU_BF16;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return VTPU_S32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return VTPU_S64;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return VTPU_PRED;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return VTPU_F32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return VTPU_F32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return VTPU_S32;
	default: *ok = false; return VTPU_F32;
	}
}

/*
 * The device type of a value of ONNX type @t: int64 computes as s32,
 * double and float16 as f32, the 8- and 16-bit integers and uint32 as s32
 * (onnx_type() already), bool at a graph boundary as s32 0/1 (the device
 * has no byte type); see vtpu_compiler.h.
 */
enum vtpu_type onnx_dev_type(enum vtpu_type t)
{
	return t == VTPU_S64 || t == VTPU_PRED ? VTPU_S32 : t;
}

const char *onnx_type_name(int t)
{
	static const char *const names[] = {
		"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
		"INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
		"UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
	};

	return t >= 0 && t < 17 ? names[t] : "type";
}

/* Floating-point values of a host constant (at most @max); their count. */
int onnx_cv_reals(struct ctx *c, const struct cval *cv, double *out, int max,
		  const char *what)
{
	if (cv->n > max)
		return onnx_fail(c, "%s has %lld elements (at most %d)", what,
				 (long long)cv->n, max);
	for (int64_t i = 0; i < cv->n; i++) {
		if (cv->type == VTPU_F32)
			out[i] = ((const float *)cv->data)[i];
		else if (cv->type == VTPU_S64)
			out[i] = (double)((const int64_t *)cv->data)[i];
		else if (cv->type == VTPU_S32)
			out[i] = ((const int32_t *)cv->data)[i];
		else
			return onnx_fail(c, "%s must be numbers", what);
	}
	return (int)cv->n;
}

/* ---- constants --------------------------------------------------------------- */

/* A host constant of @type and @n elements from @data (copied). */
struct cval *onnx_cval_new(enum vtpu_type type, int rank, const int64_t *dims,
			   const void *data, int64_t n)
{
	struct cval *cv = calloc(1, sizeof(*cv));

	if (!cv)
		return NULL;
	cv->type = type;
	cv->rank = rank;
	if (rank)
		memcpy(cv->dims, dims, rank * sizeof(*dims));
	cv->n = n;
	cv->data = malloc(n ? n * esize(type) : 1);
	if (!cv->data) {
		free(cv);
		return NULL;
	}
	if (n)
		memcpy(cv->data, data, n * esize(type));
	return cv;
}

/* A host constant of @type and @n elements, uninitialized. */
struct cval *onnx_cval_alloc(enum vtpu_type type, int rank,
			     const int64_t *dims, int64_t n)
{
	struct cval *cv = onnx_cval_new(type, rank, dims, NULL, 0);

	if (!cv)
		return NULL;
	free(cv->data);
	cv->n = n;
	cv->data = malloc(n ? n * esize(type) : 1);
	if (!cv->data) {
		free(cv);
		return NULL;
	}
	return cv;
}

/* A DOUBLE TensorProto of @n elements, rounded to f32. */
static struct cval *tensor_double(struct ctx *c, const Onnx__TensorProto *t,
				  int64_t n)
{
	bool raw = t->has_raw_data && t->raw_data.len;
	struct cval *cv;

	if (raw ? t->raw_data.len != (size_t)n * 8 : t->n_double_data != (size_t)n) {
		onnx_fail(c, "tensor '%s': data does not match %lld elements of DOUBLE",
			  t->name ? t->name : "", (long long)n);
		return NULL;
	}
	cv = onnx_cval_new(VTPU_F32, (int)t->n_dims, t->dims, NULL, 0);

	if (!cv)
		goto oom;
	free(cv->data);
	cv->n = n;
	cv->data = calloc(n ? n : 1, sizeof(float));
	if (!cv->data)
		goto oom;
	for (int64_t i = 0; i < n; i++) {
		double d;

		if (raw)
			memcpy(&d, t->raw_data.data + 8 * i, 8);	/* LE */
		else
			d = t->double_data[i];
		((float *)cv->data)[i] = (float)d;
	}
	return cv;
oom:
	onnx_cval_free(cv);
	onnx_fail(c, "out of memory");
	return NULL;
}

static float half_to_float(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v = e == 0 ? ldexpf((float)m, -24) :
		  e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);

	return h & 0x8000 ? -v : v;
}

/*
 * A TensorProto of a type the device computes wider: float16 as f32, the
 * 8- and 16-bit integers and uint32 as s32 (a uint32 beyond it refused).
 * Typed data is in int32_data (float16 as its bits), uint32 in
 * uint64_data.
 */
static struct cval *tensor_widened(struct ctx *c, const Onnx__TensorProto *t,
				   enum vtpu_type ty, int64_t n)
{
	int dt = t->data_type, es;
	bool raw = t->has_raw_data && t->raw_data.len;
	struct cval *cv;

	es = dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT8 ||
	     dt == ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 ? 1 :
	     dt == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 ? 4 : 2;
	if (raw ? t->raw_data.len != (size_t)n * es :
	    (dt == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 ? t->n_uint64_data :
	     t->n_int32_data) != (size_t)n) {
		onnx_fail(c, "tensor '%s': data does not match %lld elements of %s",
			  t->name ? t->name : "", (long long)n, onnx_type_name(dt));
		return NULL;
	}
	cv = onnx_cval_alloc(ty, (int)t->n_dims, t->dims, n);
	if (!cv) {
		onnx_fail(c, "out of memory");
		return NULL;
	}
	for (int64_t i = 0; i < n; i++) {
		const uint8_t *p = raw ? t->raw_data.data + i * es : NULL;
		uint64_t u = 0;
		int64_t v;

		if (p)
			memcpy(&u, p, es);	/* hosts are LE */
		else
			u = dt == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 ?
			    t->uint64_data[i] : (uint32_t)t->int32_data[i];
		switch (dt) {
		case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
			((float *)cv->data)[i] = half_to_float((uint16_t)u);
			continue;
		case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: v = (int8_t)u; break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: v = (uint8_t)u; break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: v = (int16_t)u; break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: v = (uint16_t)u; break;
		default: v = (uint32_t)u; break;
		}
		if (v > INT32_MAX) {
			onnx_cval_free(cv);
			onnx_fail(c, "tensor '%s': %s %lld does not fit in s32",
				  t->name ? t->name : "", onnx_type_name(dt),
				  (long long)v);
			return NULL;
		}
		((int32_t *)cv->data)[i] = (int32_t)v;
	}
	return cv;
}

/* Decodes a TensorProto: raw_data (little-endian) or the typed field. */
static struct cval *decode(struct ctx *c, const Onnx__TensorProto *t)
{
	bool ok, raw;
	enum vtpu_type ty = onnx_type(t->data_type, &ok);
	int64_t n = 1, es;
	struct cval *cv;
	const char *nm = t->name ? t->name : "";

	if (!ok) {
		onnx_fail(c, "tensor '%s': unsupported element type %s", nm,
			  onnx_type_name(t->data_type));
		return NULL;
	}
	if (t->has_data_location &&
	    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		onnx_fail(c, "tensor '%s': unsupported external data", nm);
		return NULL;
	}
	if (t->n_dims > R) {
		onnx_fail(c, "tensor '%s': rank %zu exceeds %d", nm, t->n_dims, R);
		return NULL;
	}
	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0 || t->dims[i] > (1ll << 32)) {
			onnx_fail(c, "tensor '%s': bad dimension %lld", nm,
				  (long long)t->dims[i]);
			return NULL;
		}
		n *= t->dims[i];
		if (n > (1ll << 32)) {
			onnx_fail(c, "tensor '%s' is too large", nm);
			return NULL;
		}
	}
	if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
		return tensor_double(c, t, n);
	if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
	    t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16 &&
	    t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT32 &&
	    t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 &&
	    t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__BOOL)
		return tensor_widened(c, t, ty, n);
	es = esize(ty);
	/*
	 * The data must be there before we allocate for it: dims alone may
	 * claim billions of elements in a file of a few bytes.
	 */
	{
		bool raw = t->has_raw_data && t->raw_data.len;
		size_t have = raw ? t->raw_data.len :
			      ty == VTPU_F32 ? t->n_float_data :
			      ty == VTPU_S64 ? t->n_int64_data : t->n_int32_data;

		if (have != (size_t)n * (raw ? es : 1)) {
			onnx_fail(c, "tensor '%s': data does not match %lld elements of %s",
				  nm, (long long)n, onnx_type_name(t->data_type));
			return NULL;
		}
	}
	cv = onnx_cval_new(ty, (int)t->n_dims, t->dims, NULL, 0);
	if (!cv)
		goto oom;
	free(cv->data);
	cv->n = n;
	raw = t->has_raw_data && t->raw_data.len;
	/*
	 * Sizes were checked above. Bytes in the host's layout (hosts are
	 * little-endian), aligned as malloc() aligns protobuf-c's arrays,
	 * are borrowed rather than copied.
	 */
	if (!n)
		cv->data = NULL;
	else if (raw)
		cv->data = (uintptr_t)t->raw_data.data % es ? NULL :
			   t->raw_data.data;
	else if (ty == VTPU_F32)
		cv->data = t->float_data;
	else if (ty == VTPU_S64)
		cv->data = t->int64_data;
	else
		cv->data = NULL;
	if (cv->data) {
		cv->borrowed = true;
		return cv;
	}
	cv->data = calloc(n ? n : 1, es);
	if (!cv->data)
		goto oom;
	if (raw) {
		memcpy(cv->data, t->raw_data.data, n * es);	/* unaligned */
	} else {
		/* int32_data carries int32, bool and bf16 bits. */
		for (int64_t i = 0; i < n; i++) {
			int32_t v = t->int32_data[i];

			if (ty == VTPU_S32)
				((int32_t *)cv->data)[i] = v;
			else if (ty == VTPU_BF16)
				((uint16_t *)cv->data)[i] = (uint16_t)v;
			else
				((uint8_t *)cv->data)[i] = v != 0;
		}
	}
	return cv;
oom:
	onnx_cval_free(cv);
	onnx_fail(c, "out of memory");
	return NULL;
}

/* A TensorProto's host copy, which remembers the ONNX type it had. */
struct cval *onnx_tensor(struct ctx *c, const Onnx__TensorProto *t)
{
	struct cval *cv = decode(c, t);

	if (cv)
		cv->otype = t->data_type;
	return cv;
}

int onnx_keep_const(struct ctx *c, node_t *n, struct cval *cv)
{
	if (!cv)
		return -EINVAL;
	if (n->n_output < 1) {
		onnx_cval_free(cv);
		return onnx_fail(c, "missing output 0");
	}
	if (onnx_define(c, n->output[0], -1, cv)) {
		onnx_cval_free(cv);
		return -ENOMEM;
	}
	return 0;
}

int onnx_op_constant(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__AttributeProto *a;
	struct cval *cv = NULL;
	int64_t cnt;

	(void)d;
	if ((a = onnx_attr(n, "value")) && a->t)
		cv = onnx_tensor(c, a->t);
	else if ((a = onnx_attr(n, "value_float")) && a->has_f)
		cv = onnx_cval_new(VTPU_F32, 0, NULL, &a->f, 1);
	else if ((a = onnx_attr(n, "value_int")) && a->has_i)
		cv = onnx_cval_new(VTPU_S64, 0, NULL, &a->i, 1);
	else if ((a = onnx_attr(n, "value_floats"))) {
		cnt = (int64_t)a->n_floats;
		cv = onnx_cval_new(VTPU_F32, 1, &cnt, a->floats, cnt);
	} else if ((a = onnx_attr(n, "value_ints"))) {
		cnt = (int64_t)a->n_ints;
		cv = onnx_cval_new(VTPU_S64, 1, &cnt, a->ints, cnt);
	} else {
		return onnx_fail(c, "unsupported value kind");
	}
	if (!cv && !c->failed)
		return onnx_fail(c, "out of memory");
	return onnx_keep_const(c, n, cv);
}

/* ConstantOfShape: a host constant filled with the value attribute. */
int onnx_op_constant_of_shape(struct ctx *c, node_t *n, const struct opdef *d)
{
	const Onnx__AttributeProto *a = onnx_attr(n, "value");
	struct cval *fill = NULL, *cv;
	int64_t dims[R], cnt = 1;
	float zero = 0;
	int m, es;

	(void)d;
	if ((m = onnx_in_ints(c, n, 0, dims, R, "shape")) < 0)
		return m;
	for (int i = 0; i < m; i++) {
		if (dims[i] < 0 || (cnt *= dims[i]) > (1 << 24))
			return onnx_fail(c, "unsupported shape (at most 2^24 elements)");
	}
	fill = a && a->t ? onnx_tensor(c, a->t) : onnx_cval_new(VTPU_F32, 0, NULL, &zero, 1);
	if (!fill)
		return c->failed ? -EINVAL : onnx_fail(c, "out of memory");
	if (fill->n != 1) {
		onnx_cval_free(fill);
		return onnx_fail(c, "value must have one element");
	}
	es = esize(fill->type);
	cv = onnx_cval_new(fill->type, m, dims, NULL, 0);
	if (cv) {
		free(cv->data);
		cv->n = cnt;
		cv->data = malloc(cnt ? cnt * es : 1);
		if (!cv->data) {
			free(cv);
			cv = NULL;
		}
	}
	for (int64_t i = 0; cv && i < cnt; i++)
		memcpy((char *)cv->data + i * es, fill->data, es);
	onnx_cval_free(fill);
	if (!cv)
		return onnx_fail(c, "out of memory");
	return onnx_keep_const(c, n, cv);
}
