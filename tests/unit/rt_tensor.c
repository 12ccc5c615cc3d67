// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: host tensors, the one I/O layer of vtpu-run, the
 * conformance runner and the Python module: element conversion (int64
 * range-checked into int32, never wrapped; NaN kept through bf16; floats
 * rounded to nearest even), .npy and TensorProto decoding and .npy
 * writing, and an ONNX model's signature with its bindings.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "vtpu.h"

#include "kselftest_harness.h"

TEST(int64_into_int32_is_range_checked_not_wrapped)
{
	int64_t ok[3] = { -2147483648LL, 0, 2147483647LL }, bad = 2147483648LL;
	int32_t out[3];
	char err[128] = "";

	ASSERT_EQ(0, vtpu_elem_convert(VTPU_ELEM_INT64, ok, 3, VTPU_ELEM_INT32,
				       out, err, sizeof(err)));
	EXPECT_EQ(INT32_MIN, out[0]);
	EXPECT_EQ(INT32_MAX, out[2]);
	EXPECT_EQ(-ERANGE, vtpu_elem_convert(VTPU_ELEM_INT64, &bad, 1,
					      VTPU_ELEM_INT32, out, err,
					      sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "does not fit int32")) TH_LOG("%s", err);
}

TEST(floats_into_integers_must_be_integral)
{
	double d[2] = { 3.0, 2.5 };
	uint64_t u = UINT64_MAX;
	int32_t i[2];
	int64_t l;

	EXPECT_EQ(0, vtpu_elem_convert(VTPU_ELEM_DOUBLE, d, 1, VTPU_ELEM_INT32,
				       i, NULL, 0));
	EXPECT_EQ(3, i[0]);
	EXPECT_EQ(-ERANGE, vtpu_elem_convert(VTPU_ELEM_DOUBLE, d, 2,
					      VTPU_ELEM_INT32, i, NULL, 0));
	EXPECT_EQ(-ERANGE, vtpu_elem_convert(VTPU_ELEM_UINT64, &u, 1,
					      VTPU_ELEM_INT64, &l, NULL, 0));
}

TEST(bf16_rounds_to_even_and_keeps_nan)
{
	float f[4] = { 1.0f + 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-9f, NAN, INFINITY };
	uint32_t snan = 0x7f800001;
	uint16_t b[4], h;

	memcpy(&f[2], &snan, 4);	/* rounding its bits would make inf */
	ASSERT_EQ(0, vtpu_elem_convert(VTPU_ELEM_FLOAT, f, 4,
				       VTPU_ELEM_BFLOAT16, b, NULL, 0));
	EXPECT_EQ(0x3f80, b[0]);	/* a tie: to even */
	EXPECT_EQ(0x3f81, b[1]);
	EXPECT_TRUE(isnan(vtpu_bf16_to_f32(b[2])));
	EXPECT_EQ(0x7f80, b[3]);
	h = vtpu_f32_to_bf16(f[2]);
	EXPECT_EQ(b[2], h);
}

TEST(float16_round_trips_and_bool_is_nonzero)
{
	float f[4] = { 1.5f, -65504.0f, 0x1p-24f, 1e6f }, back[4];
	uint16_t h[4];
	double d[3] = { 0, -0.5, 2 };
	uint8_t p[3];

	ASSERT_EQ(0, vtpu_elem_convert(VTPU_ELEM_FLOAT, f, 4, VTPU_ELEM_FLOAT16,
				       h, NULL, 0));
	ASSERT_EQ(0, vtpu_elem_convert(VTPU_ELEM_FLOAT16, h, 4, VTPU_ELEM_FLOAT,
				       back, NULL, 0));
	EXPECT_EQ(1.5f, back[0]);
	EXPECT_EQ(-65504.0f, back[1]);
	EXPECT_EQ(0x1p-24f, back[2]);
	EXPECT_TRUE(isinf(back[3]));
	ASSERT_EQ(0, vtpu_elem_convert(VTPU_ELEM_DOUBLE, d, 3, VTPU_ELEM_BOOL,
				       p, NULL, 0));
	EXPECT_EQ(0, p[0]);
	EXPECT_EQ(1, p[1]);
	EXPECT_EQ(1, p[2]);
}

TEST(npy_written_reads_back)
{
	char path[] = "/tmp/vtpu-rt-tensor-XXXXXX.npy";
	int64_t v[6] = { 1, -2, 3, -4, 5, 1LL << 40 };
	struct vtpu_tensor t = { .dtype = VTPU_ELEM_INT64, .rank = 2,
				 .dims = { 2, 3 }, .n = 6, .data = v }, u;
	char err[256];
	int fd = mkstemps(path, 4);

	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, vtpu_tensor_save_npy(path, &t, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(0, vtpu_tensor_load(path, &u, err, sizeof(err)))
		TH_LOG("%s", err);
	unlink(path);
	EXPECT_EQ(VTPU_ELEM_INT64, u.dtype);
	EXPECT_EQ(2, u.rank);
	EXPECT_EQ(3, u.dims[1]);
	ASSERT_EQ(6, u.n);
	EXPECT_EQ(0, memcmp(v, u.data, sizeof(v)));
	vtpu_tensor_free(&u);
}

TEST(bad_files_are_errors_with_messages)
{
	static const unsigned char junk[] = "\x93NUMPY\x01\x00\x03\x00{}\n";
	struct vtpu_tensor t;
	char err[256] = "";

	EXPECT_EQ(-EOPNOTSUPP, vtpu_tensor_decode_npy(junk, sizeof(junk) - 1,
						      &t, err, sizeof(err)));
	EXPECT_NE(0, err[0]);
	EXPECT_EQ(NULL, t.data);
	EXPECT_EQ(-ENOENT, vtpu_tensor_load("/nonexistent.pb", &t, err,
					     sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "/nonexistent.pb"));
}

TEST(tensor_proto_typed_fields_decode)
{
	int64_t dims[2] = { 2, 2 }, vals[4] = { 7, -8, 9, -10 };
	Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
	struct vtpu_tensor t;
	uint8_t buf[256];
	size_t len;

	tp.has_data_type = 1;
	tp.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	tp.n_dims = 2;
	tp.dims = dims;
	tp.n_int64_data = 4;
	tp.int64_data = vals;
	tp.name = "x";
	len = onnx__tensor_proto__pack(&tp, buf);
	ASSERT_EQ(0, vtpu_tensor_decode_pb(buf, len, &t, NULL, 0));
	EXPECT_EQ(VTPU_ELEM_INT64, t.dtype);
	EXPECT_EQ(4, t.n);
	EXPECT_EQ(0, memcmp(vals, t.data, sizeof(vals)));
	EXPECT_STREQ("x", t.name);
	vtpu_tensor_free(&t);
	tp.n_int64_data = 3;	/* fewer than the dims say */
	len = onnx__tensor_proto__pack(&tp, buf);
	EXPECT_EQ(-EINVAL, vtpu_tensor_decode_pb(buf, len, &t, NULL, 0));
}

#define DATA	"/usr/share/libonnx-testdata/data/"

TEST(model_signature_and_bindings)
{
	const char *path = DATA "simple/test_expand_shape_model1/model.onnx";
	struct vtpu_onnx_binding b[2];
	struct vtpu_model_info *m;
	struct vtpu_tensor t[2] = { 0 };
	int64_t shape[2] = { 3, 1 };
	void *values = NULL;
	char *buf;
	long len;
	FILE *f = fopen(path, "rb");

	if (!f)
		SKIP(return, "%s is not installed", path);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc(len);
	ASSERT_EQ(1, fread(buf, len, 1, f));
	fclose(f);
	ASSERT_EQ(0, vtpu_model_info(buf, len, &m, NULL, 0));
	ASSERT_EQ(2, m->ninputs);
	EXPECT_STREQ("X", m->inputs[0].name);
	EXPECT_EQ(VTPU_ELEM_FLOAT, m->inputs[0].dtype);
	EXPECT_EQ(VTPU_ELEM_INT64, m->inputs[1].dtype);
	ASSERT_EQ(1, m->noutputs);
	t[0] = (struct vtpu_tensor){ .dtype = VTPU_ELEM_BOOL, .rank = 3,
				     .dims = { 1, 3, 1 }, .n = 3 };
	t[1] = (struct vtpu_tensor){ .dtype = VTPU_ELEM_INT64, .rank = 1,
				     .dims = { 2 }, .n = 2, .data = shape,
				     .name = "shape" };
	ASSERT_EQ(2, vtpu_model_bind(m, t, 2, b, &values, NULL, 0));
	EXPECT_STREQ("X", b[0].name);
	EXPECT_EQ(NULL, b[0].values);	/* bool: by dims only */
	EXPECT_STREQ("shape", b[1].name);
	ASSERT_NE(NULL, b[1].values);
	EXPECT_EQ(3, b[1].values[0]);
	free(values);
	vtpu_model_info_free(m);
	EXPECT_EQ(-EINVAL, vtpu_model_info("\x01\x02", 2, &m, NULL, 0));
	free(buf);
}

/*
 * The signature skips what initializers feed, read from the graph
 * without their data: inputs X, W and S where W is an initializer of
 * 1024 floats and S a sparse initializer's values; X alone is fed. The
 * same with the initializers before the inputs, and the model packed
 * with a field the reader does not know.
 */
TEST(model_signature_skips_initializers_without_reading_them)
{
	Onnx__ValueInfoProto vx = ONNX__VALUE_INFO_PROTO__INIT;
	Onnx__ValueInfoProto vw = ONNX__VALUE_INFO_PROTO__INIT;
	Onnx__ValueInfoProto vs = ONNX__VALUE_INFO_PROTO__INIT;
	Onnx__ValueInfoProto vy = ONNX__VALUE_INFO_PROTO__INIT;
	Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT;
	Onnx__TensorProto sv = ONNX__TENSOR_PROTO__INIT;
	Onnx__SparseTensorProto sp = ONNX__SPARSE_TENSOR_PROTO__INIT;
	Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
	Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
	Onnx__ValueInfoProto *in[] = { &vx, &vw, &vs }, *out[] = { &vy };
	Onnx__TensorProto *inits[] = { &w };
	Onnx__SparseTensorProto *sparse[] = { &sp };
	static float data[1024];
	struct vtpu_model_info *m;
	size_t len, glen;
	uint8_t *buf;

	vx.name = "X";
	vw.name = "W";
	vs.name = "S";
	vy.name = "Y";
	w.name = "W";
	w.n_float_data = 1024;
	w.float_data = data;
	sv.name = "S";
	sp.values = &sv;
	g.n_input = 3;
	g.input = in;
	g.n_output = 1;
	g.output = out;
	g.n_initializer = 1;
	g.initializer = inits;
	g.n_sparse_initializer = 1;
	g.sparse_initializer = sparse;
	g.name = "g";
	mp.ir_version = 8;
	mp.has_ir_version = 1;
	mp.producer_name = "test";
	mp.graph = &g;
	len = onnx__model_proto__get_packed_size(&mp);
	buf = malloc(len + 8);
	ASSERT_NE(NULL, buf);
	onnx__model_proto__pack(&mp, buf);
	ASSERT_EQ(0, vtpu_model_info(buf, len, &m, NULL, 0));
	ASSERT_EQ(1, m->ninputs);
	EXPECT_STREQ("X", m->inputs[0].name);
	ASSERT_EQ(1, m->noutputs);
	EXPECT_STREQ("Y", m->outputs[0].name);
	vtpu_model_info_free(m);
	/* field 99, a varint, after the graph: skipped */
	buf[len] = (99 << 3 & 0x7f) | 0x80;
	buf[len + 1] = 99 << 3 >> 7;
	buf[len + 2] = 5;
	ASSERT_EQ(0, vtpu_model_info(buf, len + 3, &m, NULL, 0));
	EXPECT_EQ(1, m->ninputs);
	vtpu_model_info_free(m);
	/* a graph cut short: no signature */
	EXPECT_EQ(-EINVAL, vtpu_model_info(buf, len - 100, &m, NULL, 0));
	free(buf);

	/*
	 * A node that does not decode, which only the parse reads: the
	 * signature is still there, so it was read without unpacking all.
	 */
	glen = onnx__graph_proto__get_packed_size(&g);
	buf = malloc(glen + 16);
	ASSERT_NE(NULL, buf);
	buf[0] = 7 << 3 | 2;
	buf[1] = (uint8_t)((glen + 4) | 0x80);
	buf[2] = (uint8_t)((glen + 4) >> 7);
	ASSERT_LT(glen + 4, 1u << 14);
	onnx__graph_proto__pack(&g, buf + 3);
	memcpy(buf + 3 + glen, "\x0a\x02\x0f\xff", 4);	/* node: bad */
	len = 3 + glen + 4;
	EXPECT_EQ(NULL, onnx__model_proto__unpack(NULL, len, buf));
	ASSERT_EQ(0, vtpu_model_info(buf, len, &m, NULL, 0));
	EXPECT_EQ(1, m->ninputs);
	vtpu_model_info_free(m);
	free(buf);
}

TEST_HARNESS_MAIN
