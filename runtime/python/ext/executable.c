// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu._vtpu.Executable over struct vtpu_executable, and run(): numpy
 * arrays in, numpy arrays out, in one call that holds the GIL only to
 * make the output arrays. An array already in the device's type is
 * uploaded from its own memory and an output in the type asked for is
 * downloaded into the new array's; the others convert through a scratch
 * copy by libvtpu's rules (vtpu_elem_convert), as vtpu-run does.
 */
#include "pyvtpu.h"

#include <errno.h>
#include <time.h>

/* One run's device buffers, reused by the next run of the executable. */
struct run_slot {
	struct run_slot *next;
	struct vtpu_buffer **in, **out;
};

static void slot_free(ExecutableObject *e, struct run_slot *s)
{
	for (int i = 0; i < e->nin; i++)
		if (s->in[i])
			vtpu_buffer_destroy(s->in[i]);
	for (int i = 0; i < e->nout; i++)
		if (s->out[i])
			vtpu_buffer_destroy(s->out[i]);
	free(s->in);
	free(s->out);
	free(s);
}

static size_t shape_bytes(const struct vtpu_shape *s)
{
	return vtpu_shape_elems(s) * vtpu_type_size(s->type);
}

/*
 * The device a new slot's buffers go to: all of one run's buffers must
 * share a device, so the choice is made once per slot rather than left
 * to each vtpu_buffer_create(). The least loaded device, as libvtpu
 * would pick; @turn breaks ties so that concurrent slots spread out.
 */
static struct vtpu_device *slot_device(struct vtpu_client *c, unsigned int turn)
{
	int n = vtpu_client_device_count(c), best = -1;
	uint64_t best_jobs = UINT64_MAX;
	struct vtpu_device *d, *pick = NULL;

	for (int k = 0; k < n; k++) {
		struct vtpu_device_info di;
		int i = (int)((turn + k) % n);

		if (vtpu_client_device(c, i, &d) || vtpu_device_info(d, &di))
			continue;
		if (best < 0 || di.jobs_in_flight < best_jobs) {
			best = i;
			best_jobs = di.jobs_in_flight;
			pick = d;
		}
	}
	return pick;
}

/* Called without the GIL. */
static int slot_new(ExecutableObject *e, struct run_slot **out)
{
	struct run_slot *s = calloc(1, sizeof(*s));
	struct vtpu_device *d;
	int ret = -ENOMEM;

	if (!s)
		return ret;
	d = slot_device(e->client->c,
			__atomic_fetch_add(&e->slots_made, 1, __ATOMIC_RELAXED));
	s->in = calloc(e->nin + 1, sizeof(*s->in));
	s->out = calloc(e->nout + 1, sizeof(*s->out));
	if (!s->in || !s->out)
		goto fail;
	for (int i = 0; i < e->nin; i++)
		if ((ret = vtpu_buffer_create(e->client->c, d,
					      shape_bytes(&e->in_shapes[i]),
					      VTPU_PLACE_AUTO, &s->in[i])))
			goto fail;
	for (int i = 0; i < e->nout; i++)
		if ((ret = vtpu_buffer_create(e->client->c, d,
					      shape_bytes(&e->out_shapes[i]),
					      VTPU_PLACE_AUTO, &s->out[i])))
			goto fail;
	*out = s;
	return 0;
fail:
	slot_free(e, s);
	return ret;
}

PyObject *pyvtpu_executable_new(ClientObject *c, struct vtpu_executable *x)
{
	ExecutableObject *e = PyObject_New(ExecutableObject, &Executable_Type);

	if (!e) {
		vtpu_executable_destroy(x);
		return NULL;
	}
	Py_INCREF(c);
	e->client = c;
	e->e = x;
	e->free_slots = NULL;
	e->slots_made = 0;
	e->nin = vtpu_executable_num_inputs(x);
	e->nout = vtpu_executable_num_outputs(x);
	e->in_shapes = calloc(e->nin + 1, sizeof(*e->in_shapes));
	e->out_shapes = calloc(e->nout + 1, sizeof(*e->out_shapes));
	if (!e->in_shapes || !e->out_shapes) {
		Py_DECREF(e);
		return PyErr_NoMemory();
	}
	for (int i = 0; i < e->nin; i++)
		vtpu_executable_input_shape(x, i, &e->in_shapes[i]);
	for (int i = 0; i < e->nout; i++)
		vtpu_executable_output_shape(x, i, &e->out_shapes[i]);
	return (PyObject *)e;
}

static void Executable_dealloc(ExecutableObject *self)
{
	while (self->free_slots) {
		struct run_slot *s = self->free_slots;

		self->free_slots = s->next;
		slot_free(self, s);
	}
	if (self->e)
		vtpu_executable_destroy(self->e);
	free(self->in_shapes);
	free(self->out_shapes);
	Py_XDECREF(self->client);
	PyObject_Free(self);
}

static PyObject *shape_list(const struct vtpu_shape *s, int n)
{
	PyObject *l = PyList_New(n);

	for (int i = 0; l && i < n; i++) {
		PyObject *o = pyvtpu_shape(&s[i]);

		if (!o) {
			Py_DECREF(l);
			return NULL;
		}
		PyList_SET_ITEM(l, i, o);
	}
	return l;
}

static PyObject *Executable_inputs(ExecutableObject *self, void *closure)
{
	(void)closure;
	return shape_list(self->in_shapes, self->nin);
}

static PyObject *Executable_outputs(ExecutableObject *self, void *closure)
{
	(void)closure;
	return shape_list(self->out_shapes, self->nout);
}

PyDoc_STRVAR(cost_doc,
"cost() -> dict: the compiler's cost model (FLOPs, bytes moved,\n"
"estimated time, memory by kind, instructions and kernels).");

static PyObject *Executable_cost(ExecutableObject *self, PyObject *unused)
{
	struct vtpu_cost c;
	int ret;

	(void)unused;
	ret = vtpu_executable_cost(self->e, &c);
	if (ret)
		return pyvtpu_raise_client(self->client, ret);
	return Py_BuildValue("{s:d,s:d,s:d,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:I,s:I}",
			     "flops", c.flops, "bytes_moved", c.bytes_moved,
			     "est_time_ns", c.est_time_ns,
			     "code_bytes", (unsigned long long)c.code_bytes,
			     "const_bytes", (unsigned long long)c.const_bytes,
			     "weights_bytes", (unsigned long long)c.weights_bytes,
			     "param_bytes", (unsigned long long)c.param_bytes,
			     "output_bytes", (unsigned long long)c.output_bytes,
			     "scratch_bytes", (unsigned long long)c.scratch_bytes,
			     "scratch_lower_bound",
			     (unsigned long long)c.scratch_lower_bound,
			     "vmem_bytes", (unsigned long long)c.vmem_bytes,
			     "insn_count", c.insn_count,
			     "kernel_count", c.kernel_count);
}

/* What a run needs; filled with the GIL, used without it. */
struct run {
	ExecutableObject *e;
	PyArrayObject **in, **out;
	enum vtpu_elem *in_elem, *out_elem;
	char err[512];
};

/* Uploads @a (host type @elem) into @b, converting when the types differ. */
static int upload(struct run *r, int i, struct vtpu_buffer *b)
{
	const struct vtpu_shape *s = &r->e->in_shapes[i];
	enum vtpu_elem dev = vtpu_type_elem(s->type);
	size_t n = vtpu_shape_elems(s), bytes = shape_bytes(s);
	void *src = PyArray_DATA(r->in[i]), *tmp = NULL;
	char msg[256];
	int ret;

	if (r->in_elem[i] != dev) {
		tmp = malloc(bytes + 1);
		if (!tmp)
			return -ENOMEM;
		ret = vtpu_elem_convert(r->in_elem[i], src, n, dev, tmp, msg,
					sizeof(msg));
		if (ret) {
			snprintf(r->err, sizeof(r->err), "input %d: %s", i, msg);
			free(tmp);
			return ret;
		}
		src = tmp;
	}
	ret = vtpu_buffer_upload(b, 0, src, bytes);
	free(tmp);
	return ret;
}

static int download(struct run *r, int i, struct vtpu_buffer *b)
{
	const struct vtpu_shape *s = &r->e->out_shapes[i];
	enum vtpu_elem dev = vtpu_type_elem(s->type);
	size_t n = vtpu_shape_elems(s), bytes = shape_bytes(s);
	void *dst = PyArray_DATA(r->out[i]), *tmp = dst;
	char msg[256];
	int ret;

	if (r->out_elem[i] != dev && !(tmp = malloc(bytes + 1)))
		return -ENOMEM;
	ret = vtpu_buffer_download(b, 0, tmp, bytes);
	if (!ret && tmp != dst) {
		ret = vtpu_elem_convert(dev, tmp, n, r->out_elem[i], dst, msg,
					sizeof(msg));
		if (ret)
			snprintf(r->err, sizeof(r->err), "output %d: %s", i, msg);
	}
	if (tmp != dst)
		free(tmp);
	return ret;
}

/* Without the GIL: buffers (reused or new), upload, run, download. */
static int run_nogil(struct run *r, struct run_slot **slot)
{
	ExecutableObject *e = r->e;
	int ret = 0;

	if (!*slot && (ret = slot_new(e, slot)))
		return ret;
	for (int i = 0; i < e->nin && !ret; i++)
		ret = upload(r, i, (*slot)->in[i]);
	if (!ret)
		ret = vtpu_execute(e->client->c, e->e, (*slot)->in, (*slot)->out);
	for (int i = 0; i < e->nout && !ret; i++)
		ret = download(r, i, (*slot)->out[i]);
	return ret;
}

/* Input @i as an aligned C-contiguous array of the shape's size. */
static int take_input(struct run *r, PyObject *obj, int i)
{
	const struct vtpu_shape *s = &r->e->in_shapes[i];

	r->in[i] = (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_IN_ARRAY);
	if (!r->in[i])
		return -1;
	r->in_elem[i] = pyvtpu_elem(PyArray_TYPE(r->in[i]));
	if (r->in_elem[i] == VTPU_ELEM_UNDEFINED) {
		pyvtpu_raise(-EINVAL, "input: unsupported numpy dtype");
		return -1;
	}
	if ((size_t)PyArray_SIZE(r->in[i]) != vtpu_shape_elems(s)) {
		snprintf(r->err, sizeof(r->err),
			 "input %d has %zd elements, the executable wants %zu",
			 i, (Py_ssize_t)PyArray_SIZE(r->in[i]),
			 vtpu_shape_elems(s));
		pyvtpu_raise(-EINVAL, r->err);
		return -1;
	}
	return 0;
}

/* Output @i, a new array of the shape's dims in host type @elem. */
static int make_output(struct run *r, PyObject *elems, int i)
{
	const struct vtpu_shape *s = &r->e->out_shapes[i];
	npy_intp dims[VTPU_MAX_RANK];
	int npy;

	r->out_elem[i] = vtpu_type_elem(s->type);
	/* numpy has no bfloat16. */
	if (r->out_elem[i] == VTPU_ELEM_BFLOAT16)
		r->out_elem[i] = VTPU_ELEM_FLOAT;
	if (elems && i < PyList_GET_SIZE(elems) &&
	    PyList_GET_ITEM(elems, i) != Py_None) {
		r->out_elem[i] = PyLong_AsLong(PyList_GET_ITEM(elems, i));
		if (PyErr_Occurred())
			return -1;
	}
	npy = pyvtpu_npy_type(r->out_elem[i]);
	if (npy < 0) {
		pyvtpu_raise(-EOPNOTSUPP, "output: no numpy type for its element type");
		return -1;
	}
	for (int d = 0; d < s->rank; d++)
		dims[d] = s->dims[d];
	r->out[i] = (PyArrayObject *)PyArray_SimpleNew(s->rank, dims, npy);
	return r->out[i] ? 0 : -1;
}

static void run_release(struct run *r, int nin, int nout)
{
	for (int i = 0; r->in && i < nin; i++)
		Py_XDECREF(r->in[i]);
	for (int i = 0; r->out && i < nout; i++)
		Py_XDECREF(r->out[i]);
	free(r->in);
	free(r->out);
	free(r->in_elem);
	free(r->out_elem);
}

PyDoc_STRVAR(run_doc,
"run(inputs, output_elems=None) -> list of numpy.ndarray\n\n"
"Runs on a list of arrays, one per parameter with its element count,\n"
"converted to the device type by libvtpu's rules (float64 to f32,\n"
"int64 to s32 range-checked, bool to s32). Outputs come back in the\n"
"device's type (bf16 as float32) or, where output_elems names one, in\n"
"that ONNX element type. The GIL is released while it runs.");

static PyObject *Executable_run(ExecutableObject *self, PyObject *args,
				PyObject *kw)
{
	static char *kwlist[] = { "inputs", "output_elems", NULL };
	struct run r = { .e = self };
	struct run_slot *slot;
	PyObject *inputs, *elems = NULL, *res = NULL;
	int nin = self->nin, nout = self->nout, ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &inputs,
					 &elems))
		return NULL;
	if (elems == Py_None)
		elems = NULL;
	if (elems && !PyList_Check(elems))
		return PyErr_Format(PyExc_TypeError, "output_elems: a list");
	inputs = PySequence_Fast(inputs, "inputs: a sequence of arrays");
	if (!inputs)
		return NULL;
	if (PySequence_Fast_GET_SIZE(inputs) != nin) {
		snprintf(r.err, sizeof(r.err), "%zd inputs given, the executable takes %d",
			 PySequence_Fast_GET_SIZE(inputs), nin);
		Py_DECREF(inputs);
		return pyvtpu_raise(-EINVAL, r.err);
	}
	r.in = calloc(nin + 1, sizeof(*r.in));
	r.out = calloc(nout + 1, sizeof(*r.out));
	r.in_elem = calloc(nin + 1, sizeof(*r.in_elem));
	r.out_elem = calloc(nout + 1, sizeof(*r.out_elem));
	if (!r.in || !r.out || !r.in_elem || !r.out_elem) {
		PyErr_NoMemory();
		goto out;
	}
	for (int i = 0; i < nin; i++)
		if (take_input(&r, PySequence_Fast_GET_ITEM(inputs, i), i))
			goto out;
	for (int i = 0; i < nout; i++)
		if (make_output(&r, elems, i))
			goto out;
	/* The GIL guards the free list: a slot is one thread's at a time. */
	slot = self->free_slots;
	if (slot)
		self->free_slots = slot->next;
	Py_BEGIN_ALLOW_THREADS
	ret = run_nogil(&r, &slot);
	Py_END_ALLOW_THREADS
	if (slot) {
		slot->next = self->free_slots;
		self->free_slots = slot;
	}
	if (ret) {
		pyvtpu_raise(ret, r.err[0] ? r.err : vtpu_client_error(self->client->c));
		goto out;
	}
	res = PyList_New(nout);
	for (int i = 0; res && i < nout; i++) {
		PyList_SET_ITEM(res, i, (PyObject *)r.out[i]);
		r.out[i] = NULL;
	}
out:
	run_release(&r, nin, nout);
	Py_DECREF(inputs);
	return res;
}

PyDoc_STRVAR(time_c_doc,
"_time_c(inputs, n) -> seconds: n runs as a C program would make them\n"
"(upload, vtpu_execute, download, on the same buffers), with no Python\n"
"in between; the baseline of tools/bench/python_overhead.py.");

static PyObject *Executable_time_c(ExecutableObject *self, PyObject *args)
{
	struct run r = { .e = self };
	struct run_slot *slot = NULL;
	struct timespec t0, t1;
	PyObject *inputs, *res = NULL;
	int n, ret = 0, nin = self->nin, nout = self->nout;

	if (!PyArg_ParseTuple(args, "Oi", &inputs, &n))
		return NULL;
	inputs = PySequence_Fast(inputs, "inputs: a sequence of arrays");
	if (!inputs)
		return NULL;
	r.in = calloc(nin + 1, sizeof(*r.in));
	r.out = calloc(nout + 1, sizeof(*r.out));
	r.in_elem = calloc(nin + 1, sizeof(*r.in_elem));
	r.out_elem = calloc(nout + 1, sizeof(*r.out_elem));
	if (!r.in || !r.out || !r.in_elem || !r.out_elem ||
	    PySequence_Fast_GET_SIZE(inputs) != nin) {
		PyErr_SetString(PyExc_ValueError, "inputs");
		goto out;
	}
	for (int i = 0; i < nin; i++)
		if (take_input(&r, PySequence_Fast_GET_ITEM(inputs, i), i))
			goto out;
	for (int i = 0; i < nout; i++)
		if (make_output(&r, NULL, i))
			goto out;
	Py_BEGIN_ALLOW_THREADS
	ret = run_nogil(&r, &slot);	/* the buffers, made once */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < n && !ret; k++)
		ret = run_nogil(&r, &slot);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	Py_END_ALLOW_THREADS
	if (slot)
		slot_free(self, slot);
	if (ret)
		pyvtpu_raise(ret, r.err[0] ? r.err : vtpu_client_error(self->client->c));
	else
		res = PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) +
					 (t1.tv_nsec - t0.tv_nsec) * 1e-9);
out:
	run_release(&r, nin, nout);
	Py_DECREF(inputs);
	return res;
}

static PyMethodDef Executable_methods[] = {
	{ "_time_c", (PyCFunction)Executable_time_c, METH_VARARGS, time_c_doc },
	{ "cost", (PyCFunction)Executable_cost, METH_NOARGS, cost_doc },
	{ "run", (PyCFunction)(void (*)(void))Executable_run,
	  METH_VARARGS | METH_KEYWORDS, run_doc },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef Executable_getset[] = {
	{ "inputs", (getter)Executable_inputs, NULL,
	  "parameter shapes: a list of (device type, dims)", NULL },
	{ "outputs", (getter)Executable_outputs, NULL,
	  "output shapes: a list of (device type, dims)", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject Executable_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "vtpu._vtpu.Executable",
	.tp_basicsize = sizeof(ExecutableObject),
	.tp_dealloc = (destructor)Executable_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A compiled program; see Client.compile_hlo/compile_onnx.",
	.tp_methods = Executable_methods,
	.tp_getset = Executable_getset,
};
