# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""Threads: one session from many threads; the GIL is released in run()."""
import threading
import time

import numpy as np

import vtpu
from conftest import in_threads, matmul_hlo


def test_one_session_from_many_threads(mlp_model):
    data, ref = mlp_model
    s = vtpu.InferenceSession(data, backend="host")
    results = {}

    def work(k):
        rng = np.random.default_rng(k)
        for it in range(20):
            x = rng.standard_normal((1 + (k + it) % 4, 8)).astype(np.float32)
            y, = s.run(None, {"x": x})
            np.testing.assert_allclose(y, ref(x), rtol=1e-5, atol=1e-5)
        results[k] = True

    errors = in_threads(work, 6)
    assert not errors, errors
    assert len(results) == 6


RUNS = 6


def test_run_releases_the_gil():
    """While runs go on in one thread, this one is never held up long.

    One host core computes, so the other CPU is free for this thread: a
    gap between its ticks as long as a run would mean the run held the
    interpreter lock."""
    c = vtpu.Client("host", host_cores=1, cache_dir="")
    # Big enough for a run to be told from scheduling noise, however fast
    # this CPU multiplies.
    for n in (768, 1536, 3072):
        exe = c.compile(matmul_hlo(n, n, n))
        a = np.ones((n, n), np.float32)
        t0 = time.perf_counter()
        exe.run(a, a)
        single = time.perf_counter() - t0
        if single > 0.05:
            break
    done = threading.Event()
    stamps = []

    def runs():
        for _ in range(RUNS):
            exe.run(a, a)
        done.set()

    t = threading.Thread(target=runs)
    t.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
        time.sleep(0)
    t.join()
    # Held, each run would stop this thread for about a run's time; the
    # scheduler alone (another busy process) may now and then.
    gaps = np.diff(stamps) if len(stamps) > 1 else [single] * RUNS
    held = sum(g > 0.8 * single for g in gaps)
    assert single > 0.01, "the model is too fast to tell (%.4f s)" % single
    assert held < RUNS // 2, "held up %d times as long as a run (%.4f s)" % (
        held, single)
