// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu-bench: benchmarks that print one figure a line, each against a
 * baseline measured in the same run. `make bench` runs every suite (the
 * device suites inside the QEMU guest).
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} suites[] = {
	{ "compile", bench_compile,
	  "     compile time cold vs cached, planner peak vs lower bound" },
	{ "exec", bench_exec,
	  "        executor f32 matmul vs OpenBLAS sgemm, one thread" },
	{ "runtime", bench_runtime,
	  "     libvtpu overhead per execution of a tiny graph" },
	{ "submit", bench_submit,
	  "[JOBS]  job submission: ioctl vs io_uring batches (needs a device)" },
};

static void usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "usage: vtpu-bench SUITE [ARGS]\n\nsuites:\n");
	for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		fprintf(f, "  %s %s\n", suites[i].name, suites[i].help);
	fprintf(f, "\nexample: vtpu-bench submit 1024\n");
}

int main(int argc, char **argv)
{
	unsigned int i;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		if (!strcmp(argv[1], suites[i].name))
			return suites[i].run(argc - 2, argv + 2);
	fprintf(stderr, "vtpu-bench: unknown suite '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
