# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""The second core's speed-up, one-core and two-core devices in one process.

models.sh times a one-core and a two-core device in separate vtpu-run
processes, rounds apart. On a small shared VM the machine's own speed
drifts by tens of percent within a minute, and that drift lands on the
ratio. Here a host client of one core and one of two run each zoo model
in alternating blocks of a few runs (the first of a block untimed, so
the two-core client's helper is spinning again), and each side's time is
the median over all its blocks: drift falls on both alike. The inputs
are the model's first input set. One figure a line:
  model/<name>/vtpu-2c-vs-1c-paired: R x
  model/geomean/vtpu-2c-vs-1c-paired: R x
Usage: PYTHONPATH=BUILD/python /usr/bin/python3 tools/bench/cores_paired.py
       ZOO_DIR [MODEL...]   (BLOCKS=16, PER=5: runs timed per block)
"""
import glob
import math
import os
import statistics
import sys
import time

import numpy as np
import onnx

import vtpu

BLOCKS = int(os.environ.get("BLOCKS", "16"))
PER = int(os.environ.get("PER", "5"))


def setup(client, d):
    """The model compiled for @client, with its input set uploaded."""
    path = os.path.join(d, "model.onnx")
    files = sorted(glob.glob(os.path.join(d, "test_data_set_0",
                                          "input_*.npy")))
    names = [i.name for i in onnx.load(path).graph.input]
    arrays = [np.load(f) for f in files]
    exe = client.compile(path, feeds=dict(zip(names, arrays)))
    ins = []
    for spec, a in zip(exe.inputs, arrays):
        b = client.empty_for(spec)
        b.upload(a.astype(b.numpy().dtype))
        ins.append(b)
    return exe, ins, [client.empty_for(s) for s in exe.outputs]


def paired(d):
    """Median ms of the one-core and the two-core device on model @d."""
    clients = [vtpu.Client("host", host_cores=n, cache_dir="")
               for n in (1, 2)]
    runs = [setup(c, d) for c in clients]
    times = [[], []]
    for b in range(BLOCKS):
        for k in (0, 1) if b % 2 == 0 else (1, 0):
            c, (exe, ins, outs) = clients[k], runs[k]
            c.execute(exe, ins, outs)
            for _ in range(PER):
                t = time.perf_counter()
                c.execute(exe, ins, outs)
                times[k].append(time.perf_counter() - t)
    return [statistics.median(t) * 1e3 for t in times]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    zoo = sys.argv[1]
    models = sys.argv[2:]
    if not models:
        with open(os.path.join(zoo, "MANIFEST")) as f:
            models = f.read().split()
    logs = []
    for m in models:
        try:
            one, two = paired(os.path.join(zoo, m))
        except vtpu.Error as e:
            print("model/%s/vtpu-2c-vs-1c-paired: FAIL (%s)" % (m, e))
            continue
        print("model/%s/vtpu-2c-vs-1c-paired: %.3f x" % (m, one / two),
              flush=True)
        logs.append(math.log(one / two))
    if logs:
        print("model/geomean/vtpu-2c-vs-1c-paired: %.3f x" %
              math.exp(sum(logs) / len(logs)))


if __name__ == "__main__":
    main()
