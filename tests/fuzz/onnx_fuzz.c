// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: libFuzzer target for vtpu_onnx_parse() and
 * vtpu_model_info() (check_signature()). Model files come
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

#include "onnx.pb-c.h"
#include "vtpu.h"
#include "vtpu_compiler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fed(const Onnx__GraphProto *g, const char *name)
{
	for (size_t i = 0; i < g->n_initializer; i++)
		if (g->initializer[i]->name &&
		    !strcmp(g->initializer[i]->name, name))
			return 0;
	for (size_t i = 0; i < g->n_sparse_initializer; i++)
		if (g->sparse_initializer[i]->values &&
		    g->sparse_initializer[i]->values->name &&
		    !strcmp(g->sparse_initializer[i]->values->name, name))
			return 0;
	return 1;
}

/*
 * vtpu_model_info() reads the signature off the wire format without
 * unpacking the weights: whenever the whole model unpacks, it must give
 * the inputs (those no initializer feeds) and outputs a whole unpack
 * gives, in order.
 */
static void check_signature(const uint8_t *data, size_t size)
{
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, data);
	const Onnx__GraphProto *g = mp ? mp->graph : NULL;
	struct vtpu_model_info *m = NULL;
	int k = 0;

	if (vtpu_model_info(data, size, &m, NULL, 0)) {
		if (g)
			abort();	/* a model that unpacks has a signature */
		goto out;
	}
	if (!g)
		goto out;	/* the wire walk may read what unpack refuses */
	for (size_t i = 0; i < g->n_input; i++) {
		const char *name = g->input[i]->name;

		if (!name || !fed(g, name))
			continue;
		if (k >= m->ninputs || strcmp(m->inputs[k++].name, name))
			abort();
	}
	if (k != m->ninputs || m->noutputs != (int)g->n_output)
		abort();
out:
	vtpu_model_info_free(m);
	if (mp)
		onnx__model_proto__free_unpacked(mp, NULL);
}

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

	check_signature(data, size);
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
