# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""Errors: Python exceptions of the right class with libvtpu's message."""
import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import vtpu
from conftest import ADD_HLO, make_model


def test_unsupported_operator_is_not_implemented():
    nodes = [helper.make_node("StringNormalizer", ["s"], ["t"])]
    m = make_model(nodes, [("s", TensorProto.STRING, [2])],
                   [("t", TensorProto.STRING, [2])], opset=10)
    with pytest.raises(vtpu.UnsupportedError) as e:
        vtpu.InferenceSession(m, backend="host")
    assert isinstance(e.value, NotImplementedError)
    assert isinstance(e.value, vtpu.Error)
    assert "StringNormalizer" in str(e.value) or "string" in str(e.value).lower()
    assert e.value.errno == 95      # EOPNOTSUPP


def test_bad_shape_is_a_value_error(add_model):
    s = vtpu.InferenceSession(add_model, backend="host")
    with pytest.raises(vtpu.InvalidArgumentError, match=r"shape \[3, 2\]") as e:
        s.run(None, {"a": np.ones((3, 2), np.float32),
                     "b": np.ones((2, 3), np.float32)})
    assert isinstance(e.value, ValueError)


def test_missing_and_unknown_inputs_are_named(add_model):
    s = vtpu.InferenceSession(add_model, backend="host")
    with pytest.raises(ValueError, match="unknown c.*missing b"):
        s.run(None, {"a": np.ones((2, 3), np.float32), "c": 1})


def test_bad_hlo_carries_the_parser_message(client):
    with pytest.raises(vtpu.Error) as e:
        client.compile("HloModule m\nENTRY e { x = f32[4] bogus(1) }")
    assert str(e.value)


def test_not_a_model_is_a_value_error():
    with pytest.raises(vtpu.InvalidArgumentError, match="not an ONNX model"):
        vtpu.InferenceSession(b"\x01\x02garbage", backend="host")


def test_wrong_element_count_on_executable_run(client):
    exe = client.compile(ADD_HLO)
    with pytest.raises(ValueError, match="elements"):
        exe.run(np.ones(5, np.float32), np.ones(4, np.float32))


def test_no_device_says_how_to_fix_it():
    if os.path.isdir("/sys/class/accel") and os.listdir("/sys/class/accel"):
        pytest.skip("an accel device exists here")
    with pytest.raises(vtpu.DeviceNotFoundError) as e:
        vtpu.Client("accel")
    msg = str(e.value)
    assert "vtpu.ko" in msg and 'backend="host"' in msg


def test_bad_backend_name():
    with pytest.raises(ValueError, match="backend"):
        vtpu.Client("gpu")


def test_load_tensor_errors_name_the_file(tmp_path):
    p = tmp_path / "x.npy"
    p.write_bytes(b"not numpy")
    with pytest.raises(vtpu.InvalidArgumentError, match="x.npy"):
        vtpu.load_tensor(str(p))
    with pytest.raises(vtpu.Error, match="cannot read"):
        vtpu.load_tensor(str(tmp_path / "missing.pb"))


def test_load_tensor_reads_npy(tmp_path):
    for dt in (np.float32, np.float64, np.int64, np.bool_, np.uint8, np.float16):
        a = (np.arange(6).reshape(2, 3) % 2).astype(dt)
        np.save(tmp_path / "a.npy", a)
        b, name = vtpu.load_tensor(str(tmp_path / "a.npy"))
        assert b.dtype == a.dtype and name is None
        np.testing.assert_array_equal(a, b)
