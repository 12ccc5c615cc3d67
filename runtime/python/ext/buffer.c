// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu._vtpu.Buffer over struct vtpu_buffer: device memory that numpy
 * arrays are copied into and out of straight from their own storage (the
 * buffer protocol), with no staging copy on either side.
 */
#include "pyvtpu.h"

#include <errno.h>

static void Buffer_dealloc(BufferObject *self)
{
	if (self->b)
		vtpu_buffer_destroy(self->b);
	Py_XDECREF(self->client);
	PyObject_Free(self);
}

PyDoc_STRVAR(upload_doc,
"upload(data, offset=0): copies a C-contiguous bytes-like object (a\n"
"numpy array, say) into the buffer at offset; the GIL is released.");

static PyObject *Buffer_upload(BufferObject *self, PyObject *args,
			       PyObject *kw)
{
	static char *kwlist[] = { "data", "offset", NULL };
	unsigned long long off = 0;
	Py_buffer v;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|K", kwlist, &v, &off))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = vtpu_buffer_upload(self->b, off, v.buf, v.len);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&v);
	if (ret)
		return pyvtpu_raise_client(self->client, ret);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(download_doc,
"download(out, offset=0) -> out: fills a writable C-contiguous\n"
"bytes-like object (a numpy array, say) from the buffer at offset.");

static PyObject *Buffer_download(BufferObject *self, PyObject *args,
				 PyObject *kw)
{
	static char *kwlist[] = { "out", "offset", NULL };
	unsigned long long off = 0;
	PyObject *out;
	Py_buffer v;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|K", kwlist, &out, &off))
		return NULL;
	if (PyObject_GetBuffer(out, &v, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = vtpu_buffer_download(self->b, off, v.buf, v.len);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&v);
	if (ret)
		return pyvtpu_raise_client(self->client, ret);
	Py_INCREF(out);
	return out;
}

static PyObject *Buffer_size(BufferObject *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(vtpu_buffer_size(self->b));
}

static PyObject *Buffer_placement(BufferObject *self, void *closure)
{
	(void)closure;
	return PyUnicode_FromString(vtpu_buffer_placement(self->b) ==
				    VTPU_PLACE_HBM ? "hbm" : "host");
}

static PyMethodDef Buffer_methods[] = {
	{ "upload", (PyCFunction)(void (*)(void))Buffer_upload,
	  METH_VARARGS | METH_KEYWORDS, upload_doc },
	{ "download", (PyCFunction)(void (*)(void))Buffer_download,
	  METH_VARARGS | METH_KEYWORDS, download_doc },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef Buffer_getset[] = {
	{ "size", (getter)Buffer_size, NULL, "size in bytes", NULL },
	{ "placement", (getter)Buffer_placement, NULL,
	  "where it lives: 'hbm' or 'host' (the backing store)", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject Buffer_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "vtpu._vtpu.Buffer",
	.tp_basicsize = sizeof(BufferObject),
	.tp_dealloc = (destructor)Buffer_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Device memory; see Client.buffer().",
	.tp_methods = Buffer_methods,
	.tp_getset = Buffer_getset,
};
