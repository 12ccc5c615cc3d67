# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""Threads: one session from many threads; the GIL is released in run()."""
import threading
import time

import numpy as np

import vtpu
from conftest import matmul_hlo


def test_one_session_from_many_threads(mlp_model):
    data, ref = mlp_model
    s = vtpu.InferenceSession(data, backend="host")
    errors, results = [], {}

    def work(k):
        try:
            rng = np.random.default_rng(k)
            for it in range(20):
                x = rng.standard_normal((1 + (k + it) % 4, 8)).astype(np.float32)
                y, = s.run(None, {"x": x})
                np.testing.assert_allclose(y, ref(x), rtol=1e-5, atol=1e-5)
            results[k] = True
        except Exception as e:   # re-raised below, in the test's thread
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert len(results) == 6


def test_run_releases_the_gil():
    """While runs go on in one thread, this one is never held up long.

    One host core computes, so the other CPU is free for this thread: a
    gap between its ticks as long as a run would mean the run held the
    interpreter lock."""
    c = vtpu.Client("host", host_cores=1, cache_dir="")
    exe = c.compile(matmul_hlo(768, 768, 768))
    a = np.ones((768, 768), np.float32)
    t0 = time.perf_counter()
    exe.run(a, a)
    single = time.perf_counter() - t0
    done = threading.Event()
    stamps = []

    def runs():
        for _ in range(3):
            exe.run(a, a)
        done.set()

    t = threading.Thread(target=runs)
    t.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
        time.sleep(0)
    t.join()
    gap = max(np.diff(stamps)) if len(stamps) > 1 else single * 3
    assert single > 0.01, "the model is too fast to tell (%.4f s)" % single
    assert gap < single / 2, "held up %.4f s; a run takes %.4f s" % (gap, single)
