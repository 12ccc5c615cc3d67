# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""Fixtures of the python suite: models built with onnx.helper (ONNX's
own Python package, independent of libvtpu) and HLO text, and clients.

Tests run on the host backend unless they are marked ``accel``; those
run only in the VM (tools/python.sh sets VTPU_TEST_ACCEL=1 there)."""
import os
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vtpu

TESTDATA = "/usr/share/libonnx-testdata/data"


def pytest_configure(config):
    config.addinivalue_line("markers", "accel: runs on /dev/accel (VM only)")


def pytest_collection_modifyitems(config, items):
    in_vm = os.environ.get("VTPU_TEST_ACCEL") == "1"
    for item in items:
        if ("accel" in item.keywords) != in_vm:
            item.add_marker(pytest.mark.skip(
                reason="accel tests run in the VM only" if not in_vm
                else "host-only test (this is the accel run in the VM)"))


def make_model(nodes, inputs, outputs, initializers=(), opset=13):
    """Serialized ModelProto: inputs/outputs are (name, elem, dims)."""
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
        [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs],
        list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m.SerializeToString()


def in_threads(fn, n):
    """Runs fn(0) .. fn(n - 1) in n threads at once; returns what they
    raised (for the test's own thread to assert on)."""
    errors = []

    def wrap(k):
        try:
            fn(k)
        except Exception as e:
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


@pytest.fixture(scope="session")
def client():
    return vtpu.Client("host", cache_dir="")


@pytest.fixture(scope="session")
def mlp_model():
    """x[N,8] -> relu(x @ w1 + b1) @ w2: N symbolic; weights seeded."""
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((8, 16)).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    inits = [numpy_helper.from_array(w1, "w1"),
             numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(w2, "w2")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    data = make_model(nodes, [("x", TensorProto.FLOAT, ["N", 8])],
                      [("y", TensorProto.FLOAT, ["N", 4])], inits)

    def ref(x):
        return np.maximum(x @ w1 + b1, 0) @ w2
    return data, ref


@pytest.fixture(scope="session")
def add_model():
    """a[2,3] + b[2,3] -> s, and a * 2 -> d: static shapes."""
    two = numpy_helper.from_array(np.array(2, np.float32), "two")
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("Mul", ["a", "two"], ["d"])]
    return make_model(nodes, [("a", TensorProto.FLOAT, [2, 3]),
                              ("b", TensorProto.FLOAT, [2, 3])],
                      [("s", TensorProto.FLOAT, [2, 3]),
                       ("d", TensorProto.FLOAT, [2, 3])], [two])


ADD_HLO = """HloModule add
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  ROOT s = f32[4] add(x, y)
}
"""


def matmul_hlo(m, k, n):
    return """HloModule mm
ENTRY main {
  a = f32[%d,%d] parameter(0)
  b = f32[%d,%d] parameter(1)
  ROOT c = f32[%d,%d] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""" % (m, k, k, n, m, n)
