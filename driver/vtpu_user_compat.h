/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * Userspace stand-ins for the kernel definitions driver/vtpu_compat.h
 * pulls in, so that the validator and the executor build as plain C11
 * (gnu11) for the host backend, the compiler and the tests.
 *
 * Only what the shared code needs lives here. Note that the kernel's
 * min()/max() reject operands of different signedness at compile time
 * while these do not: use min_t()/max_t() for mixed types, and build the
 * kernel module to be sure.
 */
#ifndef __VTPU_USER_COMPAT_H__
#define __VTPU_USER_COMPAT_H__

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/cdefs.h>

#include <linux/types.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s8 s8;
typedef __s16 s16;
typedef __s32 s32;
typedef __s64 s64;

#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif

/* glibc's <sys/cdefs.h> spells the kernel's attributes. */
#ifndef __maybe_unused
#define __maybe_unused	__attribute_maybe_unused__
#endif
#ifndef __pure
#define __pure		__attribute_pure__
#endif
#ifndef fallthrough
#define fallthrough	__attribute__((__fallthrough__))
#endif

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif
#ifndef BIT
#define BIT(n)		(1UL << (n))
#define BIT_ULL(n)	(1ULL << (n))
#endif
#define BUILD_BUG_ON(cond) static_assert(!(cond), "BUILD_BUG_ON(" #cond ")")
#ifndef DIV_ROUND_UP
#define DIV_ROUND_UP(n, d)	({ __typeof__(d) _dru_d = (d); ((n) + _dru_d - 1) / _dru_d; })
#endif
#ifndef U64_MAX
#define U64_MAX		((u64)~0ULL)
#endif

#define min(x, y) ({ __typeof__(x) _min_x = (x); __typeof__(y) _min_y = (y); \
		     _min_x < _min_y ? _min_x : _min_y; })
#define max(x, y) ({ __typeof__(x) _max_x = (x); __typeof__(y) _max_y = (y); \
		     _max_x > _max_y ? _max_x : _max_y; })
/* Each of @x, @y as type @t, evaluated once; @op picks the result. */
#define __cmp_t(t, x, y, op) ({ t _cmp_x = (x), _cmp_y = (y); \
				_cmp_x op _cmp_y ? _cmp_x : _cmp_y; })
#define min_t(t, x, y)	__cmp_t(t, x, y, <)
#define max_t(t, x, y)	__cmp_t(t, x, y, >)
#define clamp(v, lo, hi) min(max(v, lo), hi)
#define clamp_t(t, v, lo, hi) ({ t _clamp_v = (v), _clamp_lo = (lo), _clamp_hi = (hi); \
				 _clamp_v < _clamp_lo ? _clamp_lo : \
				 _clamp_v > _clamp_hi ? _clamp_hi : _clamp_v; })

/* A read of the line at @x soon: a hint, never a fault (<linux/prefetch.h>) */
#define prefetch(x)	__builtin_prefetch(x)

/* Like the kernel's: store the wrapped result, return true on overflow. */
#define check_add_overflow(a, b, d)	__builtin_add_overflow(a, b, d)
#define check_sub_overflow(a, b, d)	__builtin_sub_overflow(a, b, d)
#define check_mul_overflow(a, b, d)	__builtin_mul_overflow(a, b, d)

static inline u64 div64_u64(u64 dividend, u64 divisor)
{
	return dividend / divisor;
}

static inline s64 div64_s64(s64 dividend, s64 divisor)
{
	return dividend / divisor;
}

static inline bool mem_is_zero(const void *s, size_t n)
{
	const u8 *p = s;

	while (n--)
		if (*p++)
			return false;
	return true;
}

#endif /* __VTPU_USER_COMPAT_H__ */
