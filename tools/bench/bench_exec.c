// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * Description: f32 matmul on the userspace executor against OpenBLAS.
 *
 * A benchmark, not a test: it prints one figure a line,
 *	exec/matmul-<n>: <GFLOP/s> GFLOP/s
 *	openblas/core: <the kernel set OpenBLAS runs>, exec/isa: <the
 *	executor's build>, once, then per size
 *	openblas/sgemm-<n>: <GFLOP/s> GFLOP/s
 *	exec/matmul-<n>-vs-openblas: <ratio> x
 * and last, for every build of the executor this CPU runs (the fastest
 * is the one above; a build without FMA instructions emulates them),
 *	exec/matmul-256-<isa>: <GFLOP/s> GFLOP/s
 * each the median of several runs. The executor runs the program a
 * compiler would emit for C = A . B with A, B, C n x n in three bindings
 * and a 4 MiB VMEM: blocks of at most 512 x 512 are loaded by DMA,
 * multiplied with VTPU_F_ACC along k, and stored. OpenBLAS runs
 * single-threaded. The two results must agree; a mismatch prints a FAIL
 * line and makes the exit status non-zero.
 *
 * Run it as `vtpu-bench exec` (`make bench` does, with one OpenBLAS
 * thread).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cblas.h>

#include "bench.h"
#include "vtpu_asm.h"
#include "vtpu_exec.h"

#define VMEM_SIZE	(4u << 20)
#define BLOCK		512u


/* C = A . B, n x n row-major in bindings 0, 1, 2, in t x t blocks. */
static void *build_program(uint32_t n, size_t *size)
{
	uint32_t t = n < BLOCK ? n : BLOCK, row = n * 4, bi, bj, bk;
	struct vtpu_tile a = vtpu_tile_f32(0, t, t, t);
	struct vtpu_tile b = vtpu_tile_f32(t * t * 4, t, t, t);
	struct vtpu_tile c = vtpu_tile_f32(2 * t * t * 4, t, t, t);
	struct vtpu_asm as;
	void *prog;

	vtpu_asm_init(&as, 3 * t * t * 4, 3);
	for (bi = 0; bi < n / t; bi++) {
		for (bj = 0; bj < n / t; bj++) {
			for (bk = 0; bk < n / t; bk++) {
				vtpu_asm_dma_load(&as, a, 0,
						  ((uint64_t)bi * t * n + bk * t) * 4,
						  row, VTPU_DT_F32);
				vtpu_asm_dma_load(&as, b, 1,
						  ((uint64_t)bk * t * n + bj * t) * 4,
						  row, VTPU_DT_F32);
				vtpu_asm_matmul(&as, c, a, b,
						bk ? VTPU_F_ACC : 0);
			}
			vtpu_asm_dma_store(&as, c, 2,
					   ((uint64_t)bi * t * n + bj * t) * 4,
					   row, VTPU_DT_F32);
		}
	}
	vtpu_asm_end(&as);
	prog = vtpu_asm_finish(&as, size);
	vtpu_asm_free(&as);
	return prog;
}

static int run_exec(const struct vtpu_prog_info *info,
		    const struct vtpu_exec_binding *bind, void *vmem,
		    enum vtpu_exec_isa isa)
{
	struct vtpu_exec e;

	vtpu_exec_init(&e, info, bind, vmem);
	e.isa = isa;
	while (!vtpu_exec_step(&e, 64))
		;
	return 0;
}

/* Relative error of @x against @ref, in the Frobenius norm. */
static double rel_error(const float *x, const float *ref, size_t count)
{
	double num = 0, den = 0, d;
	size_t i;

	for (i = 0; i < count; i++) {
		d = (double)x[i] - ref[i];
		num += d * d;
		den += (double)ref[i] * ref[i];
	}
	return sqrt(num / den);
}

/* Runs the executor's @isa build and, unless @blas_gflops is NULL, sgemm. */
static int bench(uint32_t n, int reps, enum vtpu_exec_isa isa,
		 double *exec_gflops, double *blas_gflops)
{
	size_t count = (size_t)n * n, bytes = count * 4, size = 0;
	float *a = malloc(bytes), *b = malloc(bytes);
	float *c = malloc(bytes), *ref = malloc(bytes);
	void *vmem = aligned_alloc(64, VMEM_SIZE);
	double flops = 2.0 * n * n * n, *t = calloc(reps, sizeof(*t)), t0;
	struct vtpu_binding_desc desc[3] = {
		{ bytes, VTPU_ACCESS_READ }, { bytes, VTPU_ACCESS_READ },
		{ bytes, VTPU_ACCESS_WRITE },
	};
	struct vtpu_exec_binding bind[3] = {
		{ a, bytes }, { b, bytes }, { c, bytes },
	};
	struct vtpu_prog_error err;
	struct vtpu_prog_info info;
	void *prog = build_program(n, &size);
	double e;
	size_t i;
	int r, ret = 0;

	if (!a || !b || !c || !ref || !vmem || !t || !prog) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	if (vtpu_prog_validate(prog, size, desc, 3, VMEM_SIZE, &info, &err)) {
		fprintf(stderr, "program rejected at %d: %s\n", err.insn,
			err.why);
		exit(2);
	}
	srand(n);
	for (i = 0; i < count; i++) {
		a[i] = (float)rand() / RAND_MAX - 0.5f;
		b[i] = (float)rand() / RAND_MAX - 0.5f;
	}

	for (r = 0; r < reps; r++) {
		t0 = bench_now();
		run_exec(&info, bind, vmem, isa);
		t[r] = bench_now() - t0;
	}
	*exec_gflops = flops / bench_median(t, reps) * 1e-9;

	for (r = 0; blas_gflops && r < reps; r++) {
		t0 = bench_now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n,
			    1.0f, a, n, b, n, 0.0f, ref, n);
		t[r] = bench_now() - t0;
	}
	if (blas_gflops)
		*blas_gflops = flops / bench_median(t, reps) * 1e-9;
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n,
			    1.0f, a, n, b, n, 0.0f, ref, n);

	e = rel_error(c, ref, count);
	if (!(e < 1e-5)) {
		printf("FAIL: exec/matmul-%u differs from sgemm: relative error %g\n",
		       n, e);
		ret = 1;
	}
	free(prog);
	free(t);
	free(vmem);
	free(ref);
	free(c);
	free(b);
	free(a);
	return ret;
}

int bench_exec(int argc, char **argv)
{
	static const struct { uint32_t n; int reps; } sizes[] = {
		{ 256, 31 }, { 1024, 7 },
	};
	enum vtpu_exec_isa isa, best = vtpu_exec_isa_best();
	double ex, bl;
	int ret = 0;
	size_t i;

	(void)argc;
	(void)argv;
	openblas_set_num_threads(1);
	printf("openblas/core: %s\n", openblas_get_corename());
	printf("exec/isa: %s\n", vtpu_exec_isa_name(best));
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		ret |= bench(sizes[i].n, sizes[i].reps, best, &ex, &bl);
		printf("exec/matmul-%u: %.2f GFLOP/s\n", sizes[i].n, ex);
		printf("openblas/sgemm-%u: %.2f GFLOP/s\n", sizes[i].n, bl);
		printf("exec/matmul-%u-vs-openblas: %.3f x\n", sizes[i].n,
		       ex / bl);
	}
	for (isa = 0; isa < VTPU_EXEC_ISA_NR; isa++) {
		if (!vtpu_exec_isa_supported(isa))
			continue;
		ret |= bench(256, 11, isa, &ex, NULL);
		printf("exec/matmul-256-%s: %.2f GFLOP/s\n",
		       vtpu_exec_isa_name(isa), ex);
	}
	return ret;
}
