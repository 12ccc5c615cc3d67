// SPDX-License-Identifier: GPL-2.0-only OR MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * The executor built for AVX-512F: vtpu_exec_step_avx512(). Same source,
 * same bits as every other build; only the vector width differs (see
 * vtpu_exec.c). Called only where vtpu_exec_isa_supported() says so.
 */
#define VTPU_EXEC_ISA	avx512
#include "vtpu_exec.c"
