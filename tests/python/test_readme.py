# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""The README's Python example (cut out by make), on each backend."""
import os
import subprocess
import sys

import numpy as np
import pytest


def run_example(backend):
    top = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    build = os.environ.get("VTPU_BUILD", os.path.join(top, "build"))
    path = os.environ.get("VTPU_README_EXAMPLE",
                          os.path.join(build, "examples", "readme_python.py"))
    if not os.path.exists(path):
        pytest.fail("no %s: make cuts it out of README.md" % path)
    env = dict(os.environ, VTPU_BACKEND=backend)
    out = subprocess.run([sys.executable, path], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    who, _, values = out.strip().partition(" ")
    got = np.array(values.replace("[", " ").replace("]", " ").split(),
                   dtype=np.float64)
    x = np.array([-1.0, 0.0, 1.0])
    want = np.exp(x) / np.exp(x).sum()
    return who, got, want


def test_readme_example_on_host():
    who, got, want = run_example("host")
    assert who == "host"
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.accel
def test_readme_example_on_accel():
    who, got, want = run_example("auto")     # the device is preferred
    assert who == "accel"
    np.testing.assert_allclose(got, want, rtol=1e-6)
