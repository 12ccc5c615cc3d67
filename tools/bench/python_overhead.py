# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""What run() costs over the C API on a tiny model, both in one process.

The baseline is Executable._time_c: the same upload, vtpu_execute and
download on the same buffers, in a C loop. Figures, one a line:
python/run-<api>-tiny: <us per call> us, <ratio> x the C API (<us> us).
Usage: PYTHONPATH=build/python /usr/bin/python3 tools/bench/python_overhead.py
"""
import os
import statistics
import sys
import time

import numpy as np

import vtpu

HLO = """HloModule tiny
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  ROOT s = f32[4] add(x, y)
}
"""
N = int(os.environ.get("N", "20000"))


def per_call(fn, n):
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main():
    backend = sys.argv[1] if len(sys.argv) > 1 else "host"
    c = vtpu.Client(backend, cache_dir="")
    sess = vtpu.InferenceSession.from_hlo(HLO, client=c)
    exe = sess._exe
    x = np.arange(4, dtype=np.float32)
    feed = {"input_0": x, "input_1": x}
    rounds = {"c": [], "executable": [], "session": []}
    for _ in range(5):      # interleaved, medians: the machine drifts
        rounds["c"].append(exe._exe._time_c([x, x], N) / N)
        rounds["executable"].append(per_call(lambda: exe.run(x, x), N))
        rounds["session"].append(per_call(lambda: sess.run(None, feed), N))
    base = statistics.median(rounds["c"])
    print("python/%s-c-api-tiny: %.2f us" % (c.backend, base * 1e6))
    for k in ("executable", "session"):
        t = statistics.median(rounds[k])
        print("python/%s-run-%s-tiny: %.2f us, %.2f x the C API (+%.2f us)"
              % (c.backend, k, t * 1e6, t / base, (t - base) * 1e6))


if __name__ == "__main__":
    main()
