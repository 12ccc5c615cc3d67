# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""Operators against numpy written from their ONNX definitions."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import vtpu
from conftest import make_model

NP_MODE = {"constant": "constant", "reflect": "reflect", "edge": "edge"}


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads", [
    [0, -1, 0, -2],           # crop both ends of axis 1
    [-1, 2, 1, -3],           # crop and pad on the same axes
    [2, -2, -1, 1],
])
def test_pad_with_negative_pads_crops_then_pads(mode, pads):
    x = np.arange(5 * 7, dtype=np.float32).reshape(5, 7) - 11
    node = helper.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)
    lo, hi = pads[:2], pads[2:]
    crop = x[max(-lo[0], 0):x.shape[0] - max(-hi[0], 0),
             max(-lo[1], 0):x.shape[1] - max(-hi[1], 0)]
    width = [(max(lo[a], 0), max(hi[a], 0)) for a in range(2)]
    kw = {"constant_values": 2.5} if mode == "constant" else {}
    want = np.pad(crop, width, mode=NP_MODE[mode], **kw)
    m = make_model([node], [("x", TensorProto.FLOAT, [5, 7])],
                   [("y", TensorProto.FLOAT, list(want.shape))],
                   [numpy_helper.from_array(np.array(pads, np.int64), "p"),
                    numpy_helper.from_array(np.array(2.5, np.float32), "v")])
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"x": x})
    np.testing.assert_array_equal(y, want)


def test_pads_that_remove_a_whole_axis_are_refused():
    node = helper.make_node("Pad", ["x", "p"], ["y"])
    m = make_model([node], [("x", TensorProto.FLOAT, [2, 3])],
                   [("y", TensorProto.FLOAT, [2, 0])],
                   [numpy_helper.from_array(np.array([0, -2, 0, -1],
                                                     np.int64), "p")])
    with pytest.raises(vtpu.Error, match="remove all 3 elements of axis 1"):
        vtpu.InferenceSession(m, backend="host")


def test_integer_div_truncates_toward_zero():
    """ONNX Div of int32 (the device divides f32 only): every sign pair,
    quotients just below and at integers, magnitudes up to 2^24 - 1."""
    rng = np.random.default_rng(5)
    a = np.concatenate([rng.integers(-(1 << 24) + 1, 1 << 24, 4000),
                        [-7, 7, -7, 7, 0, 16777215, -16777215, 16777214,
                         6, -6, 12, 1]]).astype(np.int32)
    b = np.concatenate([rng.integers(1, 5000, 4000) *
                        rng.choice([-1, 1], 4000),
                        [2, 2, -2, -2, 5, 16777215, 3, 16777215,
                         3, 3, -4, 16777215]]).astype(np.int32)
    node = helper.make_node("Div", ["a", "b"], ["y"])
    m = make_model([node], [("a", TensorProto.INT32, [a.size]),
                            ("b", TensorProto.INT32, [b.size])],
                   [("y", TensorProto.INT32, [a.size])])
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"a": a, "b": b})
    want = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
    np.testing.assert_array_equal(y, want.astype(np.int32))


def test_integer_div_broadcasts():
    a = np.arange(-12, 12, dtype=np.int32).reshape(4, 6)
    b = np.array([5], np.int32)
    node = helper.make_node("Div", ["a", "b"], ["y"])
    m = make_model([node], [("a", TensorProto.INT32, [4, 6])],
                   [("y", TensorProto.INT32, [4, 6])],
                   [numpy_helper.from_array(b, "b")])
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"a": a})
    np.testing.assert_array_equal(y, (np.abs(a) // 5 * np.sign(a)))
