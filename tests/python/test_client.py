# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""Client, Executable and DeviceBuffer: the lower-level API."""
import json

import numpy as np
import pytest

import vtpu
from conftest import ADD_HLO, matmul_hlo


def test_client_reports_backend_and_devices():
    c = vtpu.Client("host", host_devices=2, host_cores=3, cache_dir="")
    assert c.backend == "host"
    devs = c.devices
    assert [d.name for d in devs] == ["host0", "host1"]
    assert all(d.cores == 3 and d.hbm_total > 0 and d.vmem_size > 0
               for d in devs)
    assert devs[0].hbm_free <= devs[0].hbm_total


def test_compile_cost_counts_matmul_flops(client):
    exe = client.compile(matmul_hlo(8, 16, 4))
    cost = exe.cost()
    assert cost.flops == 2 * 8 * 16 * 4
    assert cost.param_bytes == 4 * (8 * 16 + 16 * 4)
    assert cost.output_bytes == 4 * 8 * 4
    assert cost.insn_count > 0
    assert [s.shape for s in exe.inputs] == [(8, 16), (16, 4)]
    assert exe.outputs[0].dtype == "f32"


def test_executable_run_matches_numpy(client):
    exe = client.compile(matmul_hlo(8, 16, 4))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((16, 4)).astype(np.float32)
    c, = exe.run(a, b)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5,
                               atol=1e-5)


def test_stats_count_executions(client):
    exe = client.compile(ADD_HLO)
    before = client.stats()
    x = np.ones(4, np.float32)
    for _ in range(3):
        exe.run(x, x)
    after = client.stats()
    assert after.executions == before.executions + 3
    assert after.failures == before.failures
    assert after.avg_execution_ns > 0
    assert len(after.devices) == len(client.devices)
    assert after.devices[0].executions >= 3


def test_profile_writes_chrome_trace(client, tmp_path):
    exe = client.compile(ADD_HLO)
    p = tmp_path / "trace.json"
    x = np.ones(4, np.float32)
    with client.profile(p):
        exe.run(x, x)
    trace = json.loads(p.read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert len(events) > 0
    assert any("ph" in e for e in events)


def test_profile_is_written_when_the_block_raises(client, tmp_path):
    p = tmp_path / "t.json"
    with pytest.raises(KeyError):
        with client.profile(p):
            raise KeyError("x")
    assert json.loads(p.read_text())


def test_device_buffers_round_trip(client):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = client.put(a)
    assert b.size == a.nbytes and b.shape == a.shape
    assert b.placement in ("hbm", "host")
    np.testing.assert_array_equal(b.numpy(), a)
    b.upload(a * 2)
    np.testing.assert_array_equal(b.numpy(), a * 2)
    h = client.empty((4,), np.int32, placement="host")
    assert h.placement == "host"


def test_execute_on_device_buffers(client):
    exe = client.compile(ADD_HLO)
    x = client.put(np.array([1, 2, 3, 4], np.float32))
    y = client.put(np.array([10, 20, 30, 40], np.float32))
    out = client.empty_for(exe.outputs[0])
    client.execute(exe, [x, y], [out])
    np.testing.assert_array_equal(out.numpy(), [11, 22, 33, 44])
    with pytest.raises(ValueError):
        client.execute(exe, [x], [out])


def test_compile_onnx_bytes_with_feeds(client, mlp_model):
    data, ref = mlp_model
    x = np.ones((3, 8), np.float32)
    exe = client.compile(data, feeds={"x": x})
    assert exe.inputs[0].shape == (3, 8)
    np.testing.assert_allclose(exe.run(x)[0], ref(x), rtol=1e-5, atol=1e-5)


def test_help_reads_well():
    doc = vtpu.__doc__
    assert "InferenceSession" in doc and "backend" in doc
    for obj in (vtpu.InferenceSession, vtpu.InferenceSession.run,
                vtpu.Client, vtpu.Client.profile, vtpu.Executable.cost,
                vtpu.DeviceBuffer, vtpu.Error, vtpu.UnsupportedError):
        assert obj.__doc__ and len(obj.__doc__) > 20, obj
