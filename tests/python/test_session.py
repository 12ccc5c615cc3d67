# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""InferenceSession: the ONNX Runtime API, dtype conversion at the
boundary, symbolic dims, HLO sessions and ONNX's own test data."""
import glob
import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import vtpu
from conftest import ADD_HLO, TESTDATA, make_model


def test_session_lists_inputs_and_outputs_like_ort(add_model):
    s = vtpu.InferenceSession(add_model, backend="host")
    ins, outs = s.get_inputs(), s.get_outputs()
    assert [a.name for a in ins] == ["a", "b"]
    assert [a.name for a in outs] == ["s", "d"]
    assert ins[0].shape == [2, 3] and ins[0].type == "tensor(float)"
    assert s.get_providers() == ["host"]


def test_session_symbolic_dims_are_strings(mlp_model):
    s = vtpu.InferenceSession(mlp_model[0], backend="host")
    assert s.get_inputs()[0].shape == ["N", 8]
    assert s.get_outputs()[0].shape == ["N", 4]


def test_session_run_matches_numpy(add_model):
    s = vtpu.InferenceSession(add_model, backend="host")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2, 3)).astype(np.float32)
    y, d = s.run(None, {"a": a, "b": b})
    assert y.dtype == np.float32 and y.shape == (2, 3)
    np.testing.assert_array_equal(y, a + b)
    np.testing.assert_array_equal(d, a * 2)


def test_session_run_selects_outputs_by_name(add_model):
    s = vtpu.InferenceSession(add_model, backend="host")
    a = np.ones((2, 3), np.float32)
    d, = s.run(["d"], {"a": a, "b": a})
    np.testing.assert_array_equal(d, a * 2)
    with pytest.raises(vtpu.InvalidArgumentError, match="no output"):
        s.run(["nope"], {"a": a, "b": a})


def test_session_binds_symbolic_dims_from_inputs(mlp_model):
    data, ref = mlp_model
    s = vtpu.InferenceSession(data, backend="host")
    rng = np.random.default_rng(2)
    for n in (1, 5, 3, 5):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        y, = s.run(None, {"x": x})
        assert y.shape == (n, 4)
        np.testing.assert_allclose(y, ref(x), rtol=1e-5, atol=1e-5)


def test_session_reads_a_path(tmp_path, add_model):
    p = tmp_path / "m.onnx"
    p.write_bytes(add_model)
    s = vtpu.InferenceSession(str(p), backend="host")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(s.run(["s"], {"a": a, "b": a})[0], 2 * a)


def test_float64_inputs_round_to_float32(add_model):
    s = vtpu.InferenceSession(add_model, backend="host")
    a = np.full((2, 3), 1 / 3)                      # float64
    y, _ = s.run(None, {"a": a, "b": np.zeros((2, 3))})
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, np.float32(1 / 3))


def int_model(elem):
    nodes = [helper.make_node("Add", ["i", "j"], ["k"])]
    return make_model(nodes, [("i", elem, [3]), ("j", elem, [3])],
                      [("k", elem, [3])])


def test_int64_computes_in_int32_and_returns_int64():
    s = vtpu.InferenceSession(int_model(TensorProto.INT64), backend="host")
    assert s.get_inputs()[0].type == "tensor(int64)"
    i = np.array([1, -2, 2**31 - 10], np.int64)
    k, = s.run(None, {"i": i, "j": np.array([1, 1, 9], np.int64)})
    assert k.dtype == np.int64
    np.testing.assert_array_equal(k, [2, -1, 2**31 - 1])


def test_int64_beyond_int32_is_refused_not_wrapped():
    s = vtpu.InferenceSession(int_model(TensorProto.INT64), backend="host")
    with pytest.raises(vtpu.InvalidArgumentError, match="does not fit"):
        s.run(None, {"i": np.array([2**31, 0, 0]), "j": np.zeros(3, np.int64)})
    with pytest.raises(ValueError):
        s.run(None, {"i": np.array([0, -2**31 - 1, 0]),
                     "j": np.zeros(3, np.int64)})


def test_bool_inputs_and_outputs():
    nodes = [helper.make_node("And", ["p", "q"], ["r"])]
    m = make_model(nodes, [("p", TensorProto.BOOL, [4]),
                           ("q", TensorProto.BOOL, [4])],
                   [("r", TensorProto.BOOL, [4])])
    s = vtpu.InferenceSession(m, backend="host")
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    r, = s.run(None, {"p": p, "q": q})
    assert r.dtype == np.bool_
    np.testing.assert_array_equal(r, p & q)


def test_shape_input_needed_at_compile_time():
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"])]
    m = make_model(nodes, [("x", TensorProto.FLOAT, [2, 6]),
                           ("shape", TensorProto.INT64, [2])],
                   [("y", TensorProto.FLOAT, [None, None])])
    s = vtpu.InferenceSession(m, backend="host")
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for shape in ([3, 4], [4, 3], [3, 4]):
        y, = s.run(None, {"x": x, "shape": np.array(shape)})
        np.testing.assert_array_equal(y, x.reshape(shape))


def test_hlo_session(client):
    s = vtpu.InferenceSession.from_hlo(ADD_HLO, client=client)
    assert [a.name for a in s.get_inputs()] == ["input_0", "input_1"]
    assert s.get_inputs()[0].shape == [4]
    assert s.get_outputs()[0].type == "tensor(float)"
    x = np.array([1, 2, 3, 4], np.float32)
    y, = s.run(None, {"input_0": x, "input_1": x})
    np.testing.assert_array_equal(y, 2 * x)


def load_data_set(d):
    def files(prefix):
        fs = sorted(glob.glob(os.path.join(d, prefix + "_*.pb")) +
                    glob.glob(os.path.join(d, prefix + "_*.npy")),
                    key=lambda f: int(f.rsplit("_", 1)[1].split(".")[0]))
        return [vtpu.load_tensor(f)[0] for f in fs]
    return files("input"), files("output")


@pytest.mark.parametrize("test", [
    "node/test_add", "node/test_softmax_axis_1", "node/test_conv_with_strides_padding",
    "node/test_argmax_keepdims_example", "node/test_expand_dim_changed",
    "pytorch-converted/test_Linear", "simple/test_expand_shape_model1",
])
def test_onnx_test_data_model_matches_expected(test):
    """ONNX's backend test data: expected outputs computed by ONNX."""
    tdir = os.path.join(TESTDATA, test)
    s = vtpu.InferenceSession(os.path.join(tdir, "model.onnx"), backend="host")
    for d in sorted(glob.glob(os.path.join(tdir, "test_data_set_*"))):
        ins, want = load_data_set(d)
        feed = {a.name: x for a, x in zip(s.get_inputs(), ins)}
        got = s.run(None, feed)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)


def test_zoo_model_matches_pytorch():
    """The zoo's MLP (tools/zoo, exported by torch.onnx) when exported."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    build = os.environ.get("VTPU_BUILD", os.path.join(top, "build"))
    found = glob.glob(os.path.join(build, "zoo", "export-*", "mlp", "model.onnx"))
    if not found:
        pytest.skip("no zoo export in %s/zoo (make zoo makes it)" % build)
    m = os.path.dirname(found[0])
    s = vtpu.InferenceSession(os.path.join(m, "model.onnx"), backend="host")
    ins, want = load_data_set(sorted(glob.glob(os.path.join(m, "test_data_set_*")))[0])
    got = s.run(None, {a.name: x for a, x in zip(s.get_inputs(), ins)})
    for g, w in zip(got, want):
        assert np.abs(g - w).max() <= 1e-3 * np.abs(w).max()
