// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: libFuzzer target for vtpu_onnx_parse(). Model files come
 * from anywhere: any bytes must become a graph that compiles, or be
 * refused with -EINVAL (not a model), -EOPNOTSUPP (a model we do not
 * handle) or -ENOMEM and a message, never crash, leak, hang or read past
 * @size. `make fuzz-onnx` runs it, seeded with ONNX's test models.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vtpu_compiler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vtpu_device_params dp = {
		.vmem_size = 1 << 18, .num_cores = 1, .hbm_size = 1 << 26,
	};
	struct vtpu_compile_options o = { 0 };
	struct vtpu_program *prog = NULL;
	struct vtpu_graph *g = NULL;
	char err[256];
	int ret;

	ret = vtpu_onnx_parse(data, size, &g, err, sizeof(err));
	if (ret == 0) {
		if (!g || vtpu_graph_error(g))
			abort();
		/* Whatever parsed compiles, or the compiler says why. */
		if (vtpu_compile(g, &dp, &o, &prog, err, sizeof(err)) == 0)
			vtpu_program_free(prog);
		else if (!err[0])
			abort();
		vtpu_graph_free(g);
	} else if (g || (ret != -EINVAL && ret != -EOPNOTSUPP &&
			 ret != -ENOMEM) ||
		   !memchr(err, '\0', sizeof(err)) || !err[0]) {
		abort();	/* failures leave no graph and say why */
	}
	return 0;
}
