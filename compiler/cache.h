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

#include <stddef.h>
#include <stdint.h>

#include "vtpu_compiler.h"

/* The API is public: see vtpu_compiler.h. */

#endif /* VTPU_CACHE_H */
