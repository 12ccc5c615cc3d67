/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

/* vtpu-bench: shared helpers and the suites. */
#ifndef VTPU_BENCH_H
#define VTPU_BENCH_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* Sorts @v in place. */
static inline double bench_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bench_compile(int argc, char **argv);
int bench_exec(int argc, char **argv);
int bench_runtime(int argc, char **argv);
int bench_submit(int argc, char **argv);

#endif /* VTPU_BENCH_H */
