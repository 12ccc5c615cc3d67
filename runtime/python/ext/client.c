// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu._vtpu.Client over struct vtpu_client, and its profile sessions.
 * Every object made from a client holds a reference to it, so the client
 * is destroyed last, as libvtpu requires.
 */
#include "pyvtpu.h"

#include <errno.h>

static int parse_backend(const char *s, enum vtpu_backend *b)
{
	if (!s || !strcmp(s, "auto"))
		*b = VTPU_BACKEND_AUTO;
	else if (!strcmp(s, "accel"))
		*b = VTPU_BACKEND_ACCEL;
	else if (!strcmp(s, "host"))
		*b = VTPU_BACKEND_HOST;
	else
		return -1;
	return 0;
}

static int Client_init(ClientObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "backend", "host_devices", "host_cores",
				  "host_hbm_size", "cache_dir", "max_retries",
				  "inject_failures", "inject_errno", NULL };
	struct vtpu_client_options o;
	const char *backend = NULL, *cache_dir = NULL;
	unsigned long long hbm = 0;
	int ret, retries = -1;

	vtpu_client_options_init(&o);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|ziiKziii", kwlist,
					 &backend, &o.host_devices,
					 &o.host_cores, &hbm, &cache_dir,
					 &retries, &o.inject_failures,
					 &o.inject_errno))
		return -1;
	if (parse_backend(backend, &o.backend)) {
		pyvtpu_raise(-EINVAL, "backend must be \"auto\", \"accel\" or \"host\"");
		return -1;
	}
	if (hbm)
		o.host_hbm_size = hbm;
	if (retries >= 0)
		o.max_retries = retries;
	o.cache_dir = cache_dir;
	if (self->c) {
		pyvtpu_raise(-EINVAL, "Client is already initialised");
		return -1;
	}
	Py_BEGIN_ALLOW_THREADS
	ret = vtpu_client_create(&o, &self->c);
	Py_END_ALLOW_THREADS
	if (ret) {
		self->c = NULL;
		pyvtpu_raise(ret, vtpu_client_error(NULL));
		return -1;
	}
	return 0;
}

static void Client_dealloc(ClientObject *self)
{
	if (self->c) {
		Py_BEGIN_ALLOW_THREADS
		vtpu_client_destroy(self->c);
		Py_END_ALLOW_THREADS
	}
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Methods need an open client: a subclass may skip __init__. */
static int check(ClientObject *self)
{
	if (self->c)
		return 0;
	pyvtpu_raise(-EINVAL, "Client is not initialised");
	return -1;
}

static PyObject *Client_backend(ClientObject *self, void *closure)
{
	(void)closure;
	if (check(self))
		return NULL;
	return PyUnicode_FromString(vtpu_client_backend(self->c));
}

static PyObject *device_dict(const struct vtpu_device_info *d)
{
	return Py_BuildValue("{s:i,s:s,s:i,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
			     "index", d->index, "name", d->name,
			     "cores", d->cores,
			     "hbm_total", (unsigned long long)d->hbm_total,
			     "hbm_free", (unsigned long long)d->hbm_free,
			     "hbm_largest_free",
			     (unsigned long long)d->hbm_largest_free,
			     "host_bytes", (unsigned long long)d->host_bytes,
			     "vmem_size", (unsigned long long)d->vmem_size,
			     "jobs_in_flight",
			     (unsigned long long)d->jobs_in_flight,
			     "jobs_completed",
			     (unsigned long long)d->jobs_completed);
}

PyDoc_STRVAR(devices_doc, "devices() -> list of dicts of vtpu_device_info");

static PyObject *Client_devices(ClientObject *self, PyObject *unused)
{
	int n, ret;
	PyObject *l;

	(void)unused;
	if (check(self))
		return NULL;
	n = vtpu_client_device_count(self->c);
	l = PyList_New(0);
	for (int i = 0; l && i < n; i++) {
		struct vtpu_device_info di;
		struct vtpu_device *d;
		PyObject *o;

		ret = vtpu_client_device(self->c, i, &d);
		if (!ret)
			ret = vtpu_device_info(d, &di);
		if (ret) {
			Py_DECREF(l);
			return pyvtpu_raise_client(self, ret);
		}
		o = device_dict(&di);
		if (!o || PyList_Append(l, o)) {
			Py_XDECREF(o);
			Py_CLEAR(l);
		}
		Py_XDECREF(o);
	}
	return l;
}

static PyObject *device_stats(const struct vtpu_stats *st, int i)
{
	return Py_BuildValue("{s:d,s:K,s:K,s:K,s:K,s:d,s:K,s:K,s:K}",
			     "utilisation", st->device[i].utilisation,
			     "busy_ns", (unsigned long long)st->device[i].busy_ns,
			     "executions",
			     (unsigned long long)st->device[i].executions,
			     "hbm_used", (unsigned long long)st->device[i].hbm_used,
			     "hbm_total",
			     (unsigned long long)st->device[i].hbm_total,
			     "memory_utilisation",
			     st->device[i].memory_utilisation,
			     "pool_idle", (unsigned long long)st->device[i].pool_idle,
			     "pool_reuses",
			     (unsigned long long)st->device[i].pool_reuses,
			     "pool_creates",
			     (unsigned long long)st->device[i].pool_creates);
}

PyDoc_STRVAR(stats_doc, "stats() -> dict of vtpu_stats (devices as a list)");

static PyObject *Client_stats(ClientObject *self, PyObject *unused)
{
	struct vtpu_stats st;
	PyObject *devs;
	int ret;

	(void)unused;
	if (check(self))
		return NULL;
	ret = vtpu_client_stats(self->c, &st);
	if (ret)
		return pyvtpu_raise_client(self, ret);
	devs = PyList_New(0);
	for (int i = 0; devs && i < st.ndevices && i < 16; i++) {
		PyObject *o = device_stats(&st, i);

		if (!o || PyList_Append(devs, o))
			Py_CLEAR(devs);
		Py_XDECREF(o);
	}
	if (!devs)
		return NULL;
	return Py_BuildValue("{s:K,s:K,s:K,s:d,s:d,s:K,s:K,s:d,s:K,s:K,s:K,s:N}",
			     "executions", (unsigned long long)st.executions,
			     "failures", (unsigned long long)st.failures,
			     "retries", (unsigned long long)st.retries,
			     "avg_execution_ns", st.avg_execution_ns,
			     "error_rate", st.error_rate,
			     "cache_hits", (unsigned long long)st.cache_hits,
			     "cache_misses", (unsigned long long)st.cache_misses,
			     "cache_hit_rate", st.cache_hit_rate,
			     "program_loads", (unsigned long long)st.program_loads,
			     "weight_uploads",
			     (unsigned long long)st.weight_uploads,
			     "weight_bytes", (unsigned long long)st.weight_bytes,
			     "devices", devs);
}

PyDoc_STRVAR(compile_hlo_doc,
"compile_hlo(text) -> Executable: parses and compiles XLA HLO text.");

static PyObject *Client_compile_hlo(ClientObject *self, PyObject *args)
{
	struct vtpu_executable *e;
	Py_buffer text;
	int ret;

	if (check(self) || !PyArg_ParseTuple(args, "s*", &text))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = vtpu_executable_compile_hlo(self->c, text.buf, text.len, &e);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&text);
	if (ret)
		return pyvtpu_raise_client(self, ret);
	return pyvtpu_executable_new(self, e);
}

/*
 * Borrowed views of the feeds (name, array) as host tensors: what
 * vtpu_model_bind() reads. The arrays stay referenced by @keep.
 */
static int feeds_to_tensors(PyObject *feeds, struct vtpu_tensor *t, int n,
			    PyObject **keep)
{
	for (int i = 0; i < n; i++) {
		PyObject *item = PyList_GET_ITEM(feeds, i), *name, *obj;
		PyArrayObject *a;

		if (!PyArg_ParseTuple(item, "UO", &name, &obj))
			return -1;
		a = (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_IN_ARRAY);
		if (!a)
			return -1;
		keep[i] = (PyObject *)a;
		memset(&t[i], 0, sizeof(t[i]));
		t[i].dtype = pyvtpu_elem(PyArray_TYPE(a));
		if (t[i].dtype == VTPU_ELEM_UNDEFINED || PyArray_NDIM(a) >
		    VTPU_TENSOR_MAX_RANK) {
			pyvtpu_raise(-EINVAL, "feed: unsupported numpy dtype or rank");
			return -1;
		}
		t[i].rank = PyArray_NDIM(a);
		for (int d = 0; d < t[i].rank; d++)
			t[i].dims[d] = PyArray_DIM(a, d);
		t[i].n = PyArray_SIZE(a);
		t[i].data = PyArray_DATA(a);
		t[i].name = (char *)PyUnicode_AsUTF8(name);
		if (!t[i].name)
			return -1;
	}
	return 0;
}

/* Compiles @data bound to @t (values only if @with_values). */
static int compile_bound(struct vtpu_client *c, const void *data, size_t len,
			 const struct vtpu_tensor *t, int n, int with_values,
			 struct vtpu_executable **e, char *err, size_t errlen)
{
	struct vtpu_onnx_binding *b = calloc(n + 1, sizeof(*b));
	struct vtpu_model_info *m = NULL;
	void *vals = NULL;
	int nb = 0, ret;

	if (!b)
		return -ENOMEM;
	if (n && !vtpu_model_info(data, len, &m, NULL, 0))
		nb = vtpu_model_bind(m, t, n, b, &vals, err, errlen);
	for (int i = 0; !with_values && i < nb; i++)
		b[i].values = NULL, b[i].fvalues = NULL;
	/* the compile cache finds bytes and bindings it saw, unparsed */
	ret = nb < 0 ? nb : vtpu_executable_compile_onnx(c, data, len, b, nb,
							 e);
	if (nb >= 0 && ret)
		snprintf(err, errlen, "%s", vtpu_client_error(c));
	free(vals);
	free(b);
	vtpu_model_info_free(m);
	return ret;
}

PyDoc_STRVAR(compile_onnx_doc,
"compile_onnx(data, feeds=[], with_values=False) -> Executable\n\n"
"Parses a serialized ONNX model, its inputs bound to feeds, a list of\n"
"(name, array): their dims bind symbolic dims, and with with_values\n"
"their values serve where the model needs a compile-time constant.");

static PyObject *Client_compile_onnx(ClientObject *self, PyObject *args,
				     PyObject *kw)
{
	static char *kwlist[] = { "data", "feeds", "with_values", NULL };
	struct vtpu_executable *e = NULL;
	struct vtpu_tensor *t = NULL;
	PyObject *feeds = NULL, **keep = NULL, *r = NULL;
	Py_buffer data;
	char err[512] = "";
	int n = 0, with_values = 0, ret;

	if (check(self) || !PyArg_ParseTupleAndKeywords(args, kw, "y*|O!p",
			kwlist, &data, &PyList_Type, &feeds, &with_values))
		return NULL;
	n = feeds ? (int)PyList_GET_SIZE(feeds) : 0;
	t = calloc(n + 1, sizeof(*t));
	keep = calloc(n + 1, sizeof(*keep));
	if (!t || !keep) {
		PyErr_NoMemory();
		goto out;
	}
	if (feeds_to_tensors(feeds, t, n, keep))
		goto out;
	Py_BEGIN_ALLOW_THREADS
	ret = compile_bound(self->c, data.buf, data.len, t, n, with_values,
			    &e, err, sizeof(err));
	Py_END_ALLOW_THREADS
	r = ret ? pyvtpu_raise(ret, err) : pyvtpu_executable_new(self, e);
out:
	for (int i = 0; keep && i < n; i++)
		Py_XDECREF(keep[i]);
	free(keep);
	free(t);
	PyBuffer_Release(&data);
	return r;
}

static int parse_placement(const char *s, enum vtpu_placement *p)
{
	if (!s || !strcmp(s, "auto"))
		*p = VTPU_PLACE_AUTO;
	else if (!strcmp(s, "hbm"))
		*p = VTPU_PLACE_HBM;
	else if (!strcmp(s, "host"))
		*p = VTPU_PLACE_HOST;
	else
		return -1;
	return 0;
}

PyDoc_STRVAR(buffer_doc,
"buffer(size, placement='auto') -> Buffer of size bytes on the least\n"
"loaded device; placement is 'auto', 'hbm' or 'host'.");

static PyObject *Client_buffer(ClientObject *self, PyObject *args,
			       PyObject *kw)
{
	static char *kwlist[] = { "size", "placement", NULL };
	unsigned long long size;
	const char *place = NULL;
	enum vtpu_placement p;
	BufferObject *b;
	int ret;

	if (check(self) || !PyArg_ParseTupleAndKeywords(args, kw, "K|z",
							 kwlist, &size, &place))
		return NULL;
	if (parse_placement(place, &p))
		return pyvtpu_raise(-EINVAL, "placement must be 'auto', 'hbm' or 'host'");
	b = PyObject_New(BufferObject, &Buffer_Type);
	if (!b)
		return NULL;
	b->b = NULL;
	Py_INCREF(self);
	b->client = self;
	Py_BEGIN_ALLOW_THREADS
	ret = vtpu_buffer_create(self->c, NULL, size, p, &b->b);
	Py_END_ALLOW_THREADS
	if (ret) {
		Py_DECREF(b);
		return pyvtpu_raise_client(self, ret);
	}
	return (PyObject *)b;
}

/* @seq of Buffers as an array; NULL with an exception set. */
static struct vtpu_buffer **buffers(PyObject *seq, int want, const char *what)
{
	struct vtpu_buffer **v;
	Py_ssize_t n;

	if (!PyList_Check(seq) && !PyTuple_Check(seq))
		return PyErr_Format(PyExc_TypeError, "%s: a list of Buffers", what),
		       NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n != want) {
		PyErr_Format(PyExc_ValueError, "%s: %d buffers wanted, %zd given",
			     what, want, n);
		return NULL;
	}
	v = calloc(n + 1, sizeof(*v));
	for (Py_ssize_t i = 0; v && i < n; i++) {
		PyObject *o = PySequence_Fast_GET_ITEM(seq, i);

		if (!PyObject_TypeCheck(o, &Buffer_Type)) {
			free(v);
			PyErr_Format(PyExc_TypeError, "%s[%zd] is not a Buffer",
				     what, i);
			return NULL;
		}
		v[i] = ((BufferObject *)o)->b;
	}
	if (!v)
		PyErr_NoMemory();
	return v;
}

PyDoc_STRVAR(execute_doc,
"execute(executable, inputs, outputs): runs it on lists of Buffers\n"
"(one per parameter, one per output); the GIL is released meanwhile.");

static PyObject *Client_execute(ClientObject *self, PyObject *args)
{
	struct vtpu_buffer **in = NULL, **out = NULL;
	ExecutableObject *e;
	PyObject *ins, *outs;
	int ret;

	if (check(self) || !PyArg_ParseTuple(args, "O!OO", &Executable_Type,
					     &e, &ins, &outs))
		return NULL;
	in = buffers(ins, e->nin, "inputs");
	out = in ? buffers(outs, e->nout, "outputs") : NULL;
	if (!out) {
		free(in);
		return NULL;
	}
	/* The lists keep the Buffers alive; the caller must not mutate
	 * them from another thread while this runs. */
	Py_BEGIN_ALLOW_THREADS
	ret = vtpu_execute(self->c, e->e, in, out);
	Py_END_ALLOW_THREADS
	free(in);
	free(out);
	if (ret)
		return pyvtpu_raise_client(self, ret);
	Py_RETURN_NONE;
}

/* ---- profiles --------------------------------------------------------- */

typedef struct {
	PyObject_HEAD
	ClientObject *client;
	struct vtpu_profile *p;
} ProfileObject;

PyDoc_STRVAR(profile_start_doc,
"profile_start() -> Profile: records until Profile.stop(path) writes\n"
"the Chrome trace. One session at a time per client.");

static PyObject *Client_profile_start(ClientObject *self, PyObject *unused)
{
	ProfileObject *p;
	int ret;

	(void)unused;
	if (check(self))
		return NULL;
	p = PyObject_New(ProfileObject, &Profile_Type);
	if (!p)
		return NULL;
	Py_INCREF(self);
	p->client = self;
	p->p = NULL;
	ret = vtpu_profile_start(self->c, &p->p);
	if (ret) {
		Py_DECREF(p);
		return pyvtpu_raise_client(self, ret);
	}
	return (PyObject *)p;
}

PyDoc_STRVAR(profile_stop_doc,
"stop(path): stops recording and writes Chrome trace JSON to path.");

static PyObject *Profile_stop(ProfileObject *self, PyObject *args)
{
	const char *path;
	int ret;

	if (!PyArg_ParseTuple(args, "s", &path))
		return NULL;
	if (!self->p)
		return pyvtpu_raise(-EINVAL, "profile already stopped");
	Py_BEGIN_ALLOW_THREADS
	ret = vtpu_profile_stop(self->p, path);
	Py_END_ALLOW_THREADS
	vtpu_profile_destroy(self->p);
	self->p = NULL;
	if (ret)
		return pyvtpu_raise_client(self->client, ret);
	Py_RETURN_NONE;
}

static void Profile_dealloc(ProfileObject *self)
{
	if (self->p)
		vtpu_profile_destroy(self->p);
	Py_XDECREF(self->client);
	PyObject_Free(self);
}

static PyMethodDef Profile_methods[] = {
	{ "stop", (PyCFunction)Profile_stop, METH_VARARGS, profile_stop_doc },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject Profile_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "vtpu._vtpu.Profile",
	.tp_basicsize = sizeof(ProfileObject),
	.tp_dealloc = (destructor)Profile_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A profile session; see Client.profile_start().",
	.tp_methods = Profile_methods,
};

static PyMethodDef Client_methods[] = {
	{ "devices", (PyCFunction)Client_devices, METH_NOARGS, devices_doc },
	{ "stats", (PyCFunction)Client_stats, METH_NOARGS, stats_doc },
	{ "compile_hlo", (PyCFunction)Client_compile_hlo, METH_VARARGS,
	  compile_hlo_doc },
	{ "compile_onnx", (PyCFunction)(void (*)(void))Client_compile_onnx,
	  METH_VARARGS | METH_KEYWORDS, compile_onnx_doc },
	{ "buffer", (PyCFunction)(void (*)(void))Client_buffer,
	  METH_VARARGS | METH_KEYWORDS, buffer_doc },
	{ "execute", (PyCFunction)Client_execute, METH_VARARGS, execute_doc },
	{ "profile_start", (PyCFunction)Client_profile_start, METH_NOARGS,
	  profile_start_doc },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef Client_getset[] = {
	{ "backend", (getter)Client_backend, NULL,
	  "\"accel\" or \"host\": the backend the client uses", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject Client_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "vtpu._vtpu.Client",
	.tp_basicsize = sizeof(ClientObject),
	.tp_dealloc = (destructor)Client_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "Client(backend='auto', ...): a libvtpu client.",
	.tp_methods = Client_methods,
	.tp_getset = Client_getset,
	.tp_init = (initproc)Client_init,
	.tp_new = PyType_GenericNew,
};
