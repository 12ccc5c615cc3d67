// SPDX-License-Identifier: GPL-2.0-only OR MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * The executor built for AVX2: vtpu_exec_step_avx2(). Same source,
 * same bits as every other build; only the vector width differs (see
 * vtpu_exec.c). Called only where vtpu_exec_isa_supported() says so.
 */
#define VTPU_EXEC_ISA	avx2
#include "vtpu_exec.c"
