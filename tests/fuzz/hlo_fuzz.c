// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: libFuzzer target for vtpu_hlo_parse(). Any input must be
 * parsed or rejected with a message, never crash, leak, hang or read
 * past @size (the input is not NUL-terminated).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	-fno-sanitize-recover=all -std=gnu11 -Wall -Wextra -Werror \
 *	-Icompiler/include -Icompiler compiler/hlo.c compiler/builder.c \
 *	compiler/ir.c tests/fuzz/hlo_fuzz.c -lm -o build/hlo_fuzz
 *   mkdir -p build/hlo_fuzz_corpus
 *   build/hlo_fuzz -dict=tests/fuzz/hlo.dict -max_len=8192 -timeout=5 \
 *	-max_total_time=120 build/hlo_fuzz_corpus tests/fuzz/hlo_corpus
 *
 * New inputs go to the first directory; tests/fuzz/hlo_corpus holds the
 * seeds (real modules) and is only read.
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
	struct vtpu_graph *g = NULL;
	char err[256];
	int ret;

	ret = vtpu_hlo_parse((const char *)data, size, &g, err, sizeof(err));
	if (ret == 0) {
		struct vtpu_shape s;

		/* a graph that parsed answers for its values */
		if (!g || vtpu_graph_error(g) || vtpu_graph_shape(g, 0, &s))
			abort();
		vtpu_graph_free(g);
	} else if (g || (ret != -EINVAL && ret != -ENOMEM) ||
		   !memchr(err, '\0', sizeof(err)) || !err[0]) {
		abort();	/* failures leave no graph and say why */
	}
	return 0;
}
