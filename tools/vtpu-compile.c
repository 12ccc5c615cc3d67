// SPDX-License-Identifier: MIT
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu-compile - compiles an XLA HLO text module or an ONNX model for a
 * vtpu device and prints what the compiler decided: the cost model, memory by kind and
 * the memory plan, optionally the disassembly and the binary. The
 * device is described on the command line, so no device is needed.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtpu.h"		/* VTPU_VERSION_* */
#include "vtpu_compiler.h"

static const char usage[] =
"usage: vtpu-compile [OPTIONS] FILE.hlo|FILE.onnx\n"
"\n"
"Compiles an XLA HLO text module or an ONNX model (\"-\" reads stdin) and\n"
"prints the cost model and the memory plan. A FILE ending in .onnx, or\n"
"that is not text, is ONNX; its shapes must be static (no symbolic dims).\n"
"\n"
"  --vmem KiB      VMEM per core (default 1024)\n"
"  --cores N       cores (default 2)\n"
"  --hbm MiB       device memory (default 32)\n"
"  --dump=PASS     print the IR after PASS (\"all\": every pass) to stderr\n"
"  --no-fusion     one kernel per op\n"
"  -o FILE         write the program binary to FILE\n"
"  --disasm        print the disassembly\n"
"  -h, --help      this text\n"
"  --version       print the version and exit\n"
"\n"
"Exit status: 0 on success, 1 on an error, 2 for a command-line error.\n"
"\n"
"examples:\n"
"  vtpu-compile mlp.hlo\n"
"  vtpu-compile model.onnx\n"
"  vtpu-compile --vmem 256 --no-fusion --disasm mlp.hlo\n"
"  vtpu-compile --dump=fuse -o mlp.bin mlp.hlo\n";

struct args {
	struct vtpu_device_params dev;
	struct vtpu_compile_options opts;
	const char *input, *output;
	int disasm;
};

/* GNU style: what was wrong, then where to look; -1 for parse_args(). */
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("vtpu-compile: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'vtpu-compile --help'.\n", stderr);
	return -1;
}

/* A positive integer option, or -1. */
static long long number(const char *opt, const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 1LL << 30)
		return usage_error("%s wants a positive number, not '%s'", opt, s);
	return v;
}

enum { OPT_VMEM = 256, OPT_CORES, OPT_HBM, OPT_DUMP, OPT_NO_FUSION, OPT_DISASM,
       OPT_VERSION };

static const struct option long_opts[] = {
	{ "vmem", required_argument, NULL, OPT_VMEM },
	{ "cores", required_argument, NULL, OPT_CORES },
	{ "hbm", required_argument, NULL, OPT_HBM },
	{ "dump", required_argument, NULL, OPT_DUMP },
	{ "no-fusion", no_argument, NULL, OPT_NO_FUSION },
	{ "disasm", no_argument, NULL, OPT_DISASM },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* 0, 1 for --help, 2 for --version, -1 for a usage error (said). */
static int parse_args(int argc, char **argv, struct args *a)
{
	long long v = 0;
	int c;

	a->dev.vmem_size = 1024 << 10;
	a->dev.num_cores = 2;
	a->dev.hbm_size = 32 << 20;
	/* Our own messages: getopt's would name argv[0], a full path. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_VMEM:
			v = number("--vmem", optarg);
			a->dev.vmem_size = (uint64_t)v << 10;
			break;
		case OPT_CORES:
			v = number("--cores", optarg);
			a->dev.num_cores = v;
			break;
		case OPT_HBM:
			v = number("--hbm", optarg);
			a->dev.hbm_size = (uint64_t)v << 20;
			break;
		case OPT_DUMP:
			a->opts.dump = optarg;
			break;
		case OPT_NO_FUSION:
			a->opts.no_fusion = 1;
			break;
		case OPT_DISASM:
			a->disasm = 1;
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'h':
			return 1;
		case OPT_VERSION:
			return 2;
		case ':':
			return usage_error("option '%s' needs an argument",
					   argv[optind - 1]);
		default:
			if (optopt)
				return usage_error("unknown option -- '%c'", optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
		if (v < 0)
			return -1;
	}
	if (optind == argc)
		return usage_error("no input file");
	if (optind != argc - 1)
		return usage_error("one input file, please; '%s' is one too many",
				   argv[optind + 1]);
	a->input = argv[optind];
	return 0;
}

/* The whole of @path ("-": stdin), NUL-terminated; NULL with a message. */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 1 << 16, n = 0, r;
	char *buf = NULL, *nb = NULL;

	if (!f) {
		fprintf(stderr, "vtpu-compile: cannot open %s: %s\n", path,
			strerror(errno));
		return NULL;
	}
	for (;;) {
		nb = realloc(buf, cap + 1);
		if (!nb)
			break;
		buf = nb;
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		cap *= 2;
	}
	if (!nb || ferror(f)) {
		fprintf(stderr, "vtpu-compile: cannot read %s: %s\n", path,
			nb ? strerror(errno) : "out of memory");
		free(buf);
		buf = NULL;
	} else {
		buf[n] = '\0';
		*len = n;
	}
	if (f != stdin)
		fclose(f);
	return buf;
}

/* Bytes, in the largest unit that keeps a digit before the point. */
static const char *human(uint64_t b, char *s, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB" };
	double v = b;
	int u = 0;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(s, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return s;
}

static void print_cost(const char *file, const struct vtpu_program *p)
{
	const struct vtpu_cost *c = &p->cost;
	char s[8][32];

	printf("%s: %u kernels, %u instructions, %zu bytes\n", file,
	       c->kernel_count, c->insn_count, p->size);
	printf("cost model:\n");
	printf("  flops            %.4g\n", c->flops);
	printf("  bytes moved      %s (DMA)\n", human(c->bytes_moved, s[0], 32));
	printf("  estimated time   %.4g us (one core)\n", c->est_time_ns / 1e3);
	printf("memory:\n");
	printf("  code             %s\n", human(c->code_bytes, s[1], 32));
	printf("  constants        %s (in the program)\n",
	       human(c->const_bytes, s[2], 32));
	printf("  weights          %s (a read-only binding)\n",
	       human(c->weights_bytes, s[7], 32));
	printf("  parameters       %s\n", human(c->param_bytes, s[3], 32));
	printf("  outputs          %s\n", human(c->output_bytes, s[4], 32));
	printf("  scratch          %s\n", human(c->scratch_bytes, s[5], 32));
	printf("  vmem             %s\n", human(c->vmem_bytes, s[6], 32));
}

static void print_plan(const struct vtpu_program *p)
{
	const struct vtpu_cost *c = &p->cost;

	printf("memory plan:\n");
	printf("  scratch peak     %llu bytes\n",
	       (unsigned long long)c->scratch_bytes);
	printf("  lower bound      %llu bytes\n",
	       (unsigned long long)c->scratch_lower_bound);
	if (c->scratch_lower_bound)
		printf("  ratio            %.3f\n",
		       (double)c->scratch_bytes / c->scratch_lower_bound);
	else
		printf("  ratio            - (no scratch needed)\n");
}

static int write_binary(const char *path, const struct vtpu_program *p)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f) {
		fprintf(stderr, "vtpu-compile: cannot create %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	ok = fwrite(p->binary, 1, p->size, f) == p->size;
	ok &= !fclose(f);
	if (!ok)
		fprintf(stderr, "vtpu-compile: cannot write %s\n", path);
	return ok ? 0 : -1;
}

/*
 * ONNX by name, else by content: a ModelProto starts with a field tag
 * (ir_version's is 0x08), which HLO text never has; stdin has no name.
 */
static int is_onnx(const char *path, const char *buf, size_t len)
{
	size_t a = strlen(path), k;

	if (a >= 5 && !strcmp(path + a - 5, ".onnx"))
		return 1;
	for (k = 0; k < len && k < 4096; k++) {
		unsigned char ch = buf[k];

		if (ch < 0x09 || (ch > 0x0d && ch < 0x20))
			return 1;
	}
	return 0;
}

/* Parses and compiles the input; the program or NULL with a message. */
static struct vtpu_program *compile_file(const struct args *a)
{
	struct vtpu_program *prog = NULL;
	struct vtpu_graph *g = NULL;
	char err[512] = "";
	size_t len = 0;
	char *text = read_file(a->input, &len);
	int ret;

	if (!text)
		return NULL;
	if (is_onnx(a->input, text, len)) {
		ret = vtpu_onnx_parse(text, len, &g, err, sizeof(err));
		if (ret)
			fprintf(stderr, "vtpu-compile: %s: %s\n", a->input,
				err[0] ? err : "not an ONNX model");
	} else {
		/* HLO messages start with the line and column */
		ret = vtpu_hlo_parse(text, len, &g, err, sizeof(err));
		if (ret)
			fprintf(stderr, "%s:%s\n", a->input,
				err[0] ? err : " cannot parse");
	}
	if (!ret && vtpu_compile(g, &a->dev, &a->opts, &prog, err, sizeof(err)))
		fprintf(stderr, "vtpu-compile: %s: compile error: %s\n",
			a->input, err[0] ? err : "unknown");
	vtpu_graph_free(g);
	free(text);
	return prog;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	struct vtpu_program *prog;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret == 1) {
		fputs(usage, stdout);
		return 0;
	}
	if (ret == 2) {
		printf("vtpu-compile %d.%d\n", VTPU_VERSION_MAJOR,
		       VTPU_VERSION_MINOR);
		return 0;
	}
	if (ret < 0)
		return 2;
	prog = compile_file(&a);
	if (!prog)
		return 1;
	print_cost(a.input, prog);
	print_plan(prog);
	ret = 0;
	if (a.disasm && vtpu_disasm(prog->binary, prog->size, stdout)) {
		fprintf(stderr, "vtpu-compile: cannot disassemble the program\n");
		ret = 1;
	}
	if (a.output && write_binary(a.output, prog))
		ret = 1;
	vtpu_program_free(prog);
	return ret;
}
