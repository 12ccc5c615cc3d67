/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu._vtpu, the CPython extension under the vtpu package: one file per
 * object (client.c, buffer.c, executable.c) and module.c for the module,
 * its exceptions and the numpy <-> libvtpu type mapping. The package's
 * __init__.py builds the ONNX Runtime-style API on these.
 *
 * Locking: libvtpu's clients and executables are thread-safe; its buffers
 * must not be written by two threads at once, so a run takes buffers of
 * its own from the executable's free list (which the GIL protects) and
 * puts them back when done. The GIL is dropped around every libvtpu call
 * that may wait for a device or compile.
 */
#ifndef PYVTPU_H
#define PYVTPU_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyvtpu_ARRAY_API
#ifndef PYVTPU_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "vtpu.h"

typedef struct {
	PyObject_HEAD
	struct vtpu_client *c;
} ClientObject;

typedef struct {
	PyObject_HEAD
	ClientObject *client;	/* kept alive: destroyed after us */
	struct vtpu_buffer *b;
} BufferObject;

struct run_slot;

typedef struct {
	PyObject_HEAD
	ClientObject *client;
	struct vtpu_executable *e;
	int nin, nout;
	struct vtpu_shape *in_shapes, *out_shapes;
	struct run_slot *free_slots;	/* buffers of finished runs */
	unsigned int slots_made;	/* spreads new slots over devices */
} ExecutableObject;

extern PyTypeObject Client_Type, Buffer_Type, Executable_Type, Profile_Type;

/*
 * Raises the vtpu.Error subclass of @ret (-errno) with @msg; returns
 * NULL for "return pyvtpu_raise(...)".
 */
PyObject *pyvtpu_raise(int ret, const char *msg);
/* The same with the client's last message for this thread. */
PyObject *pyvtpu_raise_client(ClientObject *c, int ret);

/* numpy's type number for a host element type, or -1. */
int pyvtpu_npy_type(enum vtpu_elem e);
/* The host element type of a numpy type number, or UNDEFINED. */
enum vtpu_elem pyvtpu_elem(int npy_type);
/* A shape as (type name, dims tuple). */
PyObject *pyvtpu_shape(const struct vtpu_shape *s);

/* Executable_Type's constructor for Client.compile_*(). */
PyObject *pyvtpu_executable_new(ClientObject *c, struct vtpu_executable *e);

#endif /* PYVTPU_H */
