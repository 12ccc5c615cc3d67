/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * The few kernel definitions the shared validator and executor use. In
 * the kernel they come from <linux/...>; in userspace the same names are
 * provided by vtpu_user_compat.h beside it, so vtpu_prog.c and
 * vtpu_exec.c compile unchanged in both places.
 */
#ifndef __VTPU_COMPAT_H__
#define __VTPU_COMPAT_H__

#ifdef __KERNEL__
#include <linux/array_size.h>
#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/crc32.h>
#include <linux/errno.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/prefetch.h>
#include <linux/string.h>
#include <linux/types.h>
#else
#include "vtpu_user_compat.h"
#endif

#endif /* __VTPU_COMPAT_H__ */
