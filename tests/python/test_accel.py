# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""The accel backend, in QEMU with vtpu.ko loaded (tools/python.sh):
the same API must work there and give the host backend's bits."""
import os

import numpy as np
import pytest

import vtpu
from conftest import ADD_HLO, in_threads

pytestmark = pytest.mark.accel


def vm_param(name, default):
    for kv in os.environ.get("VTPU_PARAMS", "").split():
        k, _, v = kv.partition("=")
        if k == name:
            return int(v)
    return default


@pytest.fixture(scope="module")
def accel():
    return vtpu.Client("accel", cache_dir="")


def test_accel_client_lists_the_module_devices(accel):
    assert accel.backend == "accel"
    devs = accel.devices
    assert len(devs) == vm_param("num_devices", 1)
    assert all(d.name.startswith("accel") for d in devs)
    assert all(d.cores == vm_param("num_cores", 4) for d in devs)
    assert devs[0].hbm_total == vm_param("hbm_mib", 64) << 20


def test_accel_session_gives_the_host_bits(accel, mlp_model):
    data, ref = mlp_model
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    y_acc, = vtpu.InferenceSession(data, client=accel).run(None, {"x": x})
    y_host, = vtpu.InferenceSession(data, backend="host").run(None, {"x": x})
    np.testing.assert_array_equal(y_acc, y_host)
    np.testing.assert_allclose(y_acc, ref(x), rtol=1e-5, atol=1e-5)
    assert accel.stats().executions >= 1


def test_accel_buffers_and_execute(accel):
    exe = accel.compile(ADD_HLO)
    x = accel.put(np.array([1, 2, 3, 4], np.float32), placement="hbm")
    assert x.placement == "hbm"
    out = accel.empty_for(exe.outputs[0])
    accel.execute(exe, [x, x], [out])
    np.testing.assert_array_equal(out.numpy(), [2, 4, 6, 8])


def test_accel_threads(accel, mlp_model):
    """Four threads share a session; the references are computed in this
    thread, before: numpy itself crashes under QEMU's TCG when threads
    compute at once (seen with no vtpu module imported at all)."""
    data, ref = mlp_model
    s = vtpu.InferenceSession(data, client=accel)
    xs = [np.full((2, 8), k, np.float32) for k in range(4)]
    want = [ref(x) for x in xs]
    got = {}

    def work(k):
        got[k] = [s.run(None, {"x": xs[k]})[0] for _ in range(5)]

    errors = in_threads(work, 4)
    assert not errors, errors
    for k in range(4):
        for y in got[k]:
            np.testing.assert_allclose(y, want[k], rtol=1e-5, atol=1e-4)
