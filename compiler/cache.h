/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * cache.h - the compile cache: programs by the 128-bit key graph_hash()
 * (ir.h) gives a graph, device and options. A small LRU in memory in
 * front of a directory of files, one a program.
 *
 * Ownership: vtpu_cache_put() copies the program; vtpu_cache_get() hands
 * out a new copy the caller releases with vtpu_program_free() (binary,
 * bindings and the struct are each malloc'd). Thread safety: one mutex
 * inside; any thread may call any function but vtpu_cache_free().
 * Disk errors never surface as wrong programs: an entry that is short,
 * corrupt or for another key is a miss, and its file is removed.
 */
#ifndef VTPU_CACHE_H
#define VTPU_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vtpu_compiler.h"

/* The API is public: see vtpu_compiler.h. */

/*
 * The source key of an ONNX model's bytes @data bound by @b (vtpu_
 * compile_onnx()): the bindings' names and dims, their values too when
 * @values, with the compiler, device and options, as graph_hash() keys a
 * graph. -EINVAL when a binding's values cannot be counted (the parse
 * then says why): nothing is cached by source.
 */
int onnx_source_hash(const void *data, size_t len,
		     const struct vtpu_onnx_binding *b, int n, bool values,
		     const struct vtpu_device_params *dev,
		     const struct vtpu_compile_options *opts, uint64_t out[2]);

#endif /* VTPU_CACHE_H */
