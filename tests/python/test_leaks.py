# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""Reference counts and memory: loops must not grow the process."""
import gc
import sys

import numpy as np
import pytest

import vtpu
from conftest import ADD_HLO


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_run_keeps_input_refcounts(add_model):
    s = vtpu.InferenceSession(add_model, backend="host")
    a = np.ones((2, 3), np.float32)
    b = np.ones((2, 3), np.float64)     # converted on the way
    ra, rb = sys.getrefcount(a), sys.getrefcount(b)
    for _ in range(100):
        y = s.run(None, {"a": a, "b": b})
    counts = sys.getrefcount(a), sys.getrefcount(b)
    out = sys.getrefcount(y[0])     # outside assert: pytest keeps temps
    assert counts == (ra, rb)
    assert out == 2                 # the list's and the call's


S32_HLO = """HloModule s
ENTRY main {
  x = f32[4] parameter(0)
  i = s32[4] parameter(1)
  c = f32[4] convert(i)
  ROOT s = f32[4] add(x, c)
}
"""


def test_failed_runs_keep_refcounts(client):
    exe = client.compile(S32_HLO)
    a = np.ones(4, np.float32)
    big = np.full(4, 2**40, np.int64)      # fails converting, mid-run
    short = np.ones(3, np.int64)           # fails before the run
    before = [sys.getrefcount(v) for v in (a, big, short)]
    for _ in range(100):
        with pytest.raises(ValueError, match="does not fit"):
            exe.run(a, big)
        with pytest.raises(ValueError, match="elements"):
            exe.run(a, short)
    after = [sys.getrefcount(v) for v in (a, big, short)]
    assert after == before
    np.testing.assert_array_equal(exe.run(a, np.arange(4))[0], a + np.arange(4))


def loop_rss(fn, n):
    for _ in range(n // 4):     # warm up: pools, caches, allocator
        fn()
    gc.collect()
    before = rss_kib()
    for _ in range(n):
        fn()
    gc.collect()
    return rss_kib() - before


def test_session_run_loop_does_not_grow(mlp_model):
    s = vtpu.InferenceSession(mlp_model[0], backend="host")
    x = np.ones((64, 8), np.float32)        # 2 KiB in, 1 KiB out a run
    grown = loop_rss(lambda: s.run(None, {"x": x}), 10000)
    assert grown < 2048, "RSS grew by %d KiB over 10000 runs" % grown


def test_objects_loop_does_not_grow():
    """Clients, executables, buffers and errors made and dropped."""
    def once():
        c = vtpu.Client("host", cache_dir="")
        exe = c.compile(ADD_HLO)
        b = c.put(np.ones(1024, np.float32))
        exe.run(np.ones(4, np.float32), np.ones(4, np.float32))
        b.numpy()
        try:
            exe.run(np.ones(3, np.float32), np.ones(4, np.float32))
        except vtpu.InvalidArgumentError:
            pass
    grown = loop_rss(once, 400)
    assert grown < 4096, "RSS grew by %d KiB over 400 clients" % grown
