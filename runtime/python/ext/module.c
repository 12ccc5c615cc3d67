// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu._vtpu: the module, its exceptions (one per errno class, so that
 * Python code can catch NotImplementedError or ValueError as it would
 * for any library), the numpy type mapping and the functions that need
 * no client: model signatures, tensor files and type conversion.
 */
#define PYVTPU_MODULE_C
#include "pyvtpu.h"

#include <errno.h>

static PyObject *Error, *UnsupportedError, *InvalidArgumentError,
	*DeviceNotFoundError, *OutOfMemoryError, *DeviceTimeoutError;

PyObject *pyvtpu_raise(int ret, const char *msg)
{
	PyObject *type = Error, *exc;
	int e = ret < 0 ? -ret : ret;

	switch (e) {
	case EOPNOTSUPP:
		type = UnsupportedError;
		break;
	case EINVAL:
	case ERANGE:
	case EBADR:
	case E2BIG:
	case ENOENT:
		type = InvalidArgumentError;
		break;
	case ENODEV:
		type = DeviceNotFoundError;
		break;
	case ENOMEM:
	case ENOSPC:
		type = OutOfMemoryError;
		break;
	case ETIMEDOUT:
		type = DeviceTimeoutError;
		break;
	}
	exc = PyObject_CallFunction(type, "s", msg && *msg ? msg : strerror(e));
	if (exc) {
		PyObject *n = PyLong_FromLong(e);

		if (n)
			PyObject_SetAttrString(exc, "errno", n);
		Py_XDECREF(n);
		PyErr_SetObject(type, exc);
		Py_DECREF(exc);
	}
	return NULL;
}

PyObject *pyvtpu_raise_client(ClientObject *c, int ret)
{
	return pyvtpu_raise(ret, vtpu_client_error(c ? c->c : NULL));
}

/* Host element types and numpy's, both ways. */
static const struct {
	enum vtpu_elem elem;
	int npy;
} types[] = {
	{ VTPU_ELEM_FLOAT, NPY_FLOAT32 }, { VTPU_ELEM_DOUBLE, NPY_FLOAT64 },
	{ VTPU_ELEM_FLOAT16, NPY_FLOAT16 }, { VTPU_ELEM_INT8, NPY_INT8 },
	{ VTPU_ELEM_UINT8, NPY_UINT8 }, { VTPU_ELEM_INT16, NPY_INT16 },
	{ VTPU_ELEM_UINT16, NPY_UINT16 }, { VTPU_ELEM_INT32, NPY_INT32 },
	{ VTPU_ELEM_UINT32, NPY_UINT32 }, { VTPU_ELEM_INT64, NPY_INT64 },
	{ VTPU_ELEM_UINT64, NPY_UINT64 }, { VTPU_ELEM_BOOL, NPY_BOOL },
};

int pyvtpu_npy_type(enum vtpu_elem e)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].elem == e)
			return types[i].npy;
	return -1;
}

enum vtpu_elem pyvtpu_elem(int npy_type)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (PyArray_EquivTypenums(types[i].npy, npy_type))
			return types[i].elem;
	return VTPU_ELEM_UNDEFINED;
}

PyObject *pyvtpu_shape(const struct vtpu_shape *s)
{
	PyObject *dims = PyTuple_New(s->rank);

	if (!dims)
		return NULL;
	for (int i = 0; i < s->rank; i++)
		PyTuple_SET_ITEM(dims, i, PyLong_FromLongLong(s->dims[i]));
	return Py_BuildValue("(sN)", vtpu_type_name(s->type), dims);
}

/* {"name", "type", "shape"} of a model value; dims None or a string. */
static PyObject *model_value(const struct vtpu_model_value *v)
{
	PyObject *shape = Py_None;

	Py_INCREF(Py_None);
	if (v->rank >= 0) {
		Py_DECREF(Py_None);
		shape = PyList_New(v->rank);
		for (int i = 0; shape && i < v->rank; i++) {
			PyObject *d = v->dims[i] >= 0 ?
				PyLong_FromLongLong(v->dims[i]) :
				v->dim_params[i] ?
				PyUnicode_FromString(v->dim_params[i]) :
				(Py_INCREF(Py_None), Py_None);

			PyList_SET_ITEM(shape, i, d);
		}
		if (!shape)
			return NULL;
	}
	return Py_BuildValue("{s:s,s:i,s:s,s:N}", "name", v->name,
			     "elem", (int)v->dtype, "type",
			     vtpu_elem_name(v->dtype), "shape", shape);
}

static PyObject *value_list(const struct vtpu_model_value *v, int n)
{
	PyObject *l = PyList_New(n);

	for (int i = 0; l && i < n; i++) {
		PyObject *o = model_value(&v[i]);

		if (!o) {
			Py_DECREF(l);
			return NULL;
		}
		PyList_SET_ITEM(l, i, o);
	}
	return l;
}

PyDoc_STRVAR(model_info_doc,
"model_info(data: bytes) -> (inputs, outputs)\n\n"
"The signature of a serialized ONNX model: lists of dicts with 'name',\n"
"'elem' (ONNX element type number), 'type' and 'shape' (None when the\n"
"model gives none; symbolic dims as strings, unknown ones as None).");

static PyObject *py_model_info(PyObject *self, PyObject *args)
{
	struct vtpu_model_info *m;
	PyObject *in, *out;
	Py_buffer buf;
	char err[256];
	int ret;

	(void)self;
	if (!PyArg_ParseTuple(args, "y*", &buf))
		return NULL;
	ret = vtpu_model_info(buf.buf, buf.len, &m, err, sizeof(err));
	PyBuffer_Release(&buf);
	if (ret)
		return pyvtpu_raise(ret, err);
	in = value_list(m->inputs, m->ninputs);
	out = in ? value_list(m->outputs, m->noutputs) : NULL;
	vtpu_model_info_free(m);
	if (!out) {
		Py_XDECREF(in);
		return NULL;
	}
	return Py_BuildValue("(NN)", in, out);
}

PyDoc_STRVAR(convert_doc,
"convert(array, elem: int) -> numpy.ndarray\n\n"
"array converted to the host element type elem (an ONNX type number) by\n"
"libvtpu's rules: floats round to nearest even, integers must fit\n"
"(InvalidArgumentError otherwise), anything becomes bool as != 0.");

static PyObject *py_convert(PyObject *self, PyObject *args)
{
	PyArrayObject *src, *dst;
	PyObject *obj;
	enum vtpu_elem from;
	char err[256];
	int to, npy, ret;

	(void)self;
	if (!PyArg_ParseTuple(args, "Oi", &obj, &to))
		return NULL;
	npy = pyvtpu_npy_type(to);
	if (npy < 0)
		return pyvtpu_raise(-EOPNOTSUPP, "no numpy type for that element type");
	src = (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_IN_ARRAY);
	if (!src)
		return NULL;
	from = pyvtpu_elem(PyArray_TYPE(src));
	if (from == VTPU_ELEM_UNDEFINED) {
		Py_DECREF(src);
		return pyvtpu_raise(-EOPNOTSUPP, "unsupported numpy dtype");
	}
	dst = (PyArrayObject *)PyArray_SimpleNew(PyArray_NDIM(src),
						 PyArray_DIMS(src), npy);
	if (!dst) {
		Py_DECREF(src);
		return NULL;
	}
	ret = vtpu_elem_convert(from, PyArray_DATA(src), PyArray_SIZE(src), to,
				PyArray_DATA(dst), err, sizeof(err));
	Py_DECREF(src);
	if (ret) {
		Py_DECREF(dst);
		return pyvtpu_raise(ret, err);
	}
	return (PyObject *)dst;
}

PyDoc_STRVAR(load_tensor_doc,
"load_tensor(path: str) -> (numpy.ndarray, name or None)\n\n"
"Reads a .npy file or an ONNX TensorProto (.pb) with libvtpu's loader.");

static PyObject *py_load_tensor(PyObject *self, PyObject *args)
{
	struct vtpu_tensor t;
	npy_intp dims[VTPU_TENSOR_MAX_RANK];
	PyObject *r = NULL;
	PyArrayObject *a;
	const char *path;
	char err[512];
	int ret, npy;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &path))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = vtpu_tensor_load(path, &t, err, sizeof(err));
	Py_END_ALLOW_THREADS
	if (ret)
		return pyvtpu_raise(ret, err);
	npy = pyvtpu_npy_type(t.dtype);
	if (npy < 0) {
		vtpu_tensor_free(&t);
		return pyvtpu_raise(-EOPNOTSUPP, "numpy has no such element type");
	}
	for (int i = 0; i < t.rank; i++)
		dims[i] = t.dims[i];
	a = (PyArrayObject *)PyArray_SimpleNew(t.rank, dims, npy);
	if (a) {
		memcpy(PyArray_DATA(a), t.data, t.n * vtpu_elem_size(t.dtype));
		r = Py_BuildValue("(Nz)", a, t.name);
	}
	vtpu_tensor_free(&t);
	return r;
}

static PyMethodDef methods[] = {
	{ "model_info", py_model_info, METH_VARARGS, model_info_doc },
	{ "convert", py_convert, METH_VARARGS, convert_doc },
	{ "load_tensor", py_load_tensor, METH_VARARGS, load_tensor_doc },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "vtpu._vtpu",
	"The C extension under the vtpu package; use vtpu instead.", -1,
	methods, NULL, NULL, NULL, NULL,
};

/* An exception class deriving from @bases, added to @m as @name. */
static PyObject *add_error(PyObject *m, const char *name, PyObject *bases,
			   const char *doc)
{
	char qual[64];
	PyObject *e;

	snprintf(qual, sizeof(qual), "vtpu.%s", name);
	e = PyErr_NewExceptionWithDoc(qual, doc, bases, NULL);
	if (e && PyModule_AddObjectRef(m, name, e) < 0)
		Py_CLEAR(e);
	return e;
}

/* Error, then one subclass per errno class, each also a builtin class. */
static int add_errors(PyObject *m)
{
	struct { PyObject **slot; const char *name; PyObject *builtin;
		 const char *doc; } sub[] = {
		{ &UnsupportedError, "UnsupportedError", PyExc_NotImplementedError,
		  "The model, operator, type or shape is not supported (EOPNOTSUPP)." },
		{ &InvalidArgumentError, "InvalidArgumentError", PyExc_ValueError,
		  "A bad input: wrong shape, type or name, a value out of range." },
		{ &DeviceNotFoundError, "DeviceNotFoundError", PyExc_RuntimeError,
		  "No vtpu device: load vtpu.ko or use backend=\"host\" (ENODEV)." },
		{ &OutOfMemoryError, "OutOfMemoryError", PyExc_MemoryError,
		  "Device or host memory ran out (ENOMEM, ENOSPC)." },
		{ &DeviceTimeoutError, "DeviceTimeoutError", PyExc_TimeoutError,
		  "A job ran past the device's timeout (ETIMEDOUT)." },
	};

	Error = add_error(m, "Error", PyExc_RuntimeError,
			  "Base class of libvtpu's errors; .errno is the errno.");
	if (!Error)
		return -1;
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		PyObject *bases = PyTuple_Pack(2, Error, sub[i].builtin);

		if (!bases)
			return -1;
		*sub[i].slot = add_error(m, sub[i].name, bases, sub[i].doc);
		Py_DECREF(bases);
		if (!*sub[i].slot)
			return -1;
	}
	return 0;
}

static int add_type(PyObject *m, PyTypeObject *t, const char *name)
{
	if (PyType_Ready(t) < 0)
		return -1;
	return PyModule_AddObjectRef(m, name, (PyObject *)t);
}

PyMODINIT_FUNC PyInit__vtpu(void)
{
	PyObject *m;

	import_array();
	m = PyModule_Create(&module);
	if (!m)
		return NULL;
	if (add_errors(m) || add_type(m, &Client_Type, "Client") ||
	    add_type(m, &Buffer_Type, "Buffer") ||
	    add_type(m, &Executable_Type, "Executable") ||
	    add_type(m, &Profile_Type, "Profile") ||
	    PyModule_AddIntConstant(m, "ELEM_FLOAT", VTPU_ELEM_FLOAT) ||
	    PyModule_AddIntConstant(m, "ELEM_INT32", VTPU_ELEM_INT32) ||
	    PyModule_AddIntConstant(m, "ELEM_INT64", VTPU_ELEM_INT64) ||
	    PyModule_AddIntConstant(m, "ELEM_BOOL", VTPU_ELEM_BOOL) ||
	    PyModule_AddIntConstant(m, "ELEM_DOUBLE", VTPU_ELEM_DOUBLE)) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
