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


def maxpool_ref(x, k, s, d, lo, hi, ceil, order="C"):
    """MaxPool's values and Indices (position in x of each window's first
    maximum, row-major or, order "F", column-major), by loops over the
    ONNX definition."""
    sp = x.shape[2:]
    nd = len(sp)
    out = []
    for a in range(nd):
        span = sp[a] + lo[a] + hi[a] - ((k[a] - 1) * d[a] + 1)
        o = (-(-span // s[a]) if ceil else span // s[a]) + 1
        # ceil_mode: a window must start inside the input or its pads
        if ceil and (o - 1) * s[a] >= sp[a] + lo[a]:
            o -= 1
        out.append(o)
    y = np.zeros(x.shape[:2] + tuple(out), np.float32)
    ind = np.zeros(y.shape, np.int64)
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for o in np.ndindex(*out):
                best, at = -np.inf, -1
                for t in np.ndindex(*k):
                    p = [o[a] * s[a] + t[a] * d[a] - lo[a] for a in range(nd)]
                    if any(p[a] < 0 or p[a] >= sp[a] for a in range(nd)):
                        continue
                    v = x[(n, c) + tuple(p)]
                    if v > best:
                        best = v
                        at = (n * x.shape[1] + c) * int(np.prod(sp)) + \
                            int(np.ravel_multi_index(p, sp, order=order))
                y[(n, c) + o], ind[(n, c) + o] = best, at
    return y, ind


@pytest.mark.parametrize("shape,k,s,d,pads,ceil,order", [
    ((1, 2, 7, 9), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 0, 0),
    ((2, 3, 8, 8), (2, 3), (2, 1), (1, 2), (0, 1, 1, 0), 1, 0),
    ((1, 1, 11), (4,), (3,), (1,), (2, 1), 1, 0),
    ((1, 2, 4, 5, 6), (2, 2, 3), (1, 2, 2), (1, 1, 1), (0, 1, 1, 1, 0, 1),
     0, 0),
    ((1, 2, 6, 7), (3, 2), (1, 2), (1, 1), (1, 0, 1, 1), 0, 1),
])
def test_maxpool_indices_are_the_first_maximum(shape, k, s, d, pads, ceil,
                                               order):
    # small integers: ties in most windows, so "first" matters
    x = np.random.default_rng(7).integers(-3, 4, shape).astype(np.float32)
    nd = len(k)
    want_y, want_i = maxpool_ref(x, k, s, d, pads[:nd], pads[nd:], ceil,
                                 "F" if order else "C")
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=k,
                            strides=s, dilations=d, pads=pads,
                            ceil_mode=ceil, storage_order=order)
    m = make_model([node], [("x", TensorProto.FLOAT, list(shape))],
                   [("y", TensorProto.FLOAT, list(want_y.shape)),
                    ("i", TensorProto.INT64, list(want_i.shape))])
    y, i = vtpu.InferenceSession(m, backend="host").run(None, {"x": x})
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(i, want_i)


def grid_sample_ref(x, grid, mode, pad, align):
    """GridSample by the ONNX definition (PyTorch's formulas), float64."""
    n_, c_, h, w = x.shape
    _, ho, wo, _ = grid.shape

    def unnorm(g, size):
        return (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2

    def padded(v, size):
        if pad == "reflection":
            lo, span = (0.0, size - 1) if align else (-0.5, float(size))
            if span <= 0:
                return 0.0
            a = abs(v - lo)
            flips = np.floor(a / span)
            extra = a - flips * span
            v = extra + lo if flips % 2 == 0 else span - extra + lo
        if pad in ("border", "reflection"):
            v = min(max(v, 0.0), size - 1.0)
        return v

    def coord(g, size):
        return padded(unnorm(g, size), size)

    def cubic(t):
        a = -0.75

        def near(u):
            return ((a + 2) * u - (a + 3)) * u * u + 1

        def far(u):
            return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]

    def at(n, c, yy, xx):
        return x[n, c, yy, xx] if 0 <= yy < h and 0 <= xx < w else 0.0

    y = np.zeros((n_, c_, ho, wo))
    for n in range(n_):
        for i in range(ho):
            for j in range(wo):
                ix = coord(float(grid[n, i, j, 0]), w)
                iy = coord(float(grid[n, i, j, 1]), h)
                if mode == "bicubic":
                    ux = unnorm(float(grid[n, i, j, 0]), w)
                    uy = unnorm(float(grid[n, i, j, 1]), h)
                    x0, y0 = np.floor(ux), np.floor(uy)
                    wx, wy = cubic(ux - x0), cubic(uy - y0)
                    for c in range(c_):
                        y[n, c, i, j] = sum(
                            wy[a] * wx[b] *
                            at(n, c, int(padded(y0 - 1 + a, h)),
                               int(padded(x0 - 1 + b, w)))
                            for a in range(4) for b in range(4))
                    continue
                for c in range(c_):
                    if mode == "nearest":
                        y[n, c, i, j] = at(n, c, int(np.rint(iy)),
                                           int(np.rint(ix)))
                        continue
                    x0, y0 = int(np.floor(ix)), int(np.floor(iy))
                    fx, fy = ix - x0, iy - y0
                    y[n, c, i, j] = (
                        at(n, c, y0, x0) * (1 - fy) * (1 - fx) +
                        at(n, c, y0, x0 + 1) * (1 - fy) * fx +
                        at(n, c, y0 + 1, x0) * fy * (1 - fx) +
                        at(n, c, y0 + 1, x0 + 1) * fy * fx)
    return y


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_matches_the_definition(mode, pad, align):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    # past [-1, 1] too, and exact halves (ties for nearest)
    grid = rng.uniform(-1.6, 1.6, (2, 4, 7, 2)).astype(np.float32)
    grid[0, 0, :4] = [[0.25, -0.5], [-1, 1], [1, -1], [0, 0]]
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode,
                            padding_mode=pad, align_corners=align)
    m = make_model([node], [("x", TensorProto.FLOAT, [2, 3, 5, 6]),
                            ("g", TensorProto.FLOAT, [2, 4, 7, 2])],
                   [("y", TensorProto.FLOAT, [2, 3, 4, 7])], opset=16)
    y, = vtpu.InferenceSession(m, backend="host").run(None,
                                                     {"x": x, "g": grid})
    np.testing.assert_allclose(y, grid_sample_ref(x, grid, mode, pad, align),
                               rtol=1e-5, atol=1e-5)


def test_grid_sample_unknown_mode_is_refused():
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode="lanczos")
    m = make_model([node], [("x", TensorProto.FLOAT, [1, 1, 4, 4]),
                            ("g", TensorProto.FLOAT, [1, 2, 2, 2])],
                   [("y", TensorProto.FLOAT, [1, 1, 2, 2])], opset=16)
    with pytest.raises(vtpu.Error, match="unsupported mode"):
        vtpu.InferenceSession(m, backend="host")


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_far_and_nan_points_read_nothing(mode):
    """A coordinate far outside samples zeros, as PyTorch does; an
    infinite or NaN one (PyTorch gives NaN or 0) must not fail the run:
    no index leaves the input."""
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3) + 1
    grid = np.array([[[[1e30, 0], [-1e30, 5], [0, np.inf], [np.nan, 0],
                       [0, 0]]]], np.float32)
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode)
    m = make_model([node], [("x", TensorProto.FLOAT, [1, 1, 3, 3]),
                            ("g", TensorProto.FLOAT, [1, 1, 5, 2])],
                   [("y", TensorProto.FLOAT, [1, 1, 1, 5])], opset=16)
    y, = vtpu.InferenceSession(m, backend="host").run(None,
                                                     {"x": x, "g": grid})
    np.testing.assert_array_equal(y[0, 0, 0, :2], [0, 0])
    want = grid_sample_ref(x, grid[:, :, 4:], mode, "zeros", 0)
    np.testing.assert_allclose(y[0, 0, 0, 4], want[0, 0, 0, 0], rtol=1e-5)


def _upsample_ref(x, scales, mode):
    """ONNX Upsample: output index o reads input o / scale (asymmetric),
    nearest by floor, linear between the two neighbours, edge clamped."""
    y = x
    for axis, s in enumerate(scales):
        n_in = y.shape[axis]
        n_out = int(np.floor(n_in * s))
        src = np.arange(n_out) / s
        if mode == "nearest":
            y = np.take(y, np.minimum(np.floor(src).astype(int), n_in - 1),
                        axis=axis)
            continue
        i0 = np.floor(src).astype(int)
        w = (src - i0).astype(np.float64)
        a = np.take(y, np.minimum(i0, n_in - 1), axis=axis)
        b = np.take(y, np.minimum(i0 + 1, n_in - 1), axis=axis)
        shape = [1] * y.ndim
        shape[axis] = n_out
        w = w.reshape(shape)
        y = a * (1 - w) + b * w
    return y


@pytest.mark.parametrize("opset", [7, 9])
@pytest.mark.parametrize("mode,scales", [
    ("nearest", [1.0, 1.0, 2.0, 3.0]),
    ("nearest", [1.0, 2.0, 1.5, 2.5]),
    ("linear", [1.0, 1.0, 2.0, 2.0]),
    ("linear", [1.0, 1.0, 1.5, 3.0]),
])
def test_upsample_as_opsets_7_and_9_define_it(opset, mode, scales):
    """Upsample (deprecated at opset 10, still in older exports): scales
    as an attribute (7) or an input (9), nearest or linear."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    want = _upsample_ref(x.astype(np.float64), scales, mode)
    inits = []
    if opset == 7:
        node = helper.make_node("Upsample", ["x"], ["y"], mode=mode,
                                scales=scales)
    else:
        node = helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)
        inits = [numpy_helper.from_array(np.array(scales, np.float32), "s")]
    m = make_model([node], [("x", TensorProto.FLOAT, list(x.shape))],
                   [("y", TensorProto.FLOAT, list(want.shape))], inits,
                   opset=opset)
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"x": x})
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_upsample_refuses_scales_below_one():
    node = helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 0.5])
    m = make_model([node], [("x", TensorProto.FLOAT, [2, 4])],
                   [("y", TensorProto.FLOAT, [2, 2])], opset=7)
    with pytest.raises(vtpu.Error, match="at least 1"):
        vtpu.InferenceSession(m, backend="host")


def _reverse_sequence_ref(x, lens, time_axis):
    y = x.copy()
    for b, n in enumerate(lens):
        if time_axis == 0:
            y[:n, b] = x[:n, b][::-1]
        else:
            y[b, :n] = x[b, :n][::-1]
    return y


@pytest.mark.parametrize("time_axis", [0, 1])
def test_reverse_sequence_reverses_each_entrys_length(time_axis):
    """ReverseSequence with lengths known only at run time: every length
    from 0 to the whole time axis, in both layouts, one input feeding
    runs with different lengths."""
    rng = np.random.default_rng(11)
    t, b = 6, 7
    shape = [t, b, 3] if time_axis == 0 else [b, t, 3]
    x = rng.standard_normal(shape).astype(np.float32)
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"],
                            time_axis=time_axis, batch_axis=1 - time_axis)
    m = make_model([node], [("x", TensorProto.FLOAT, shape),
                            ("lens", TensorProto.INT64, [b])],
                   [("y", TensorProto.FLOAT, shape)])
    s = vtpu.InferenceSession(m, backend="host")
    for lens in ([0, 1, 2, 3, 4, 5, 6], [6, 6, 1, 0, 3, 2, 5]):
        lens = np.array(lens, np.int64)
        y, = s.run(None, {"x": x, "lens": lens})
        np.testing.assert_array_equal(y, _reverse_sequence_ref(x, lens,
                                                               time_axis))


def test_reverse_sequence_longer_than_the_time_axis_fails_the_run():
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"],
                            time_axis=0, batch_axis=1)
    m = make_model([node], [("x", TensorProto.FLOAT, [4, 2]),
                            ("lens", TensorProto.INT64, [2])],
                   [("y", TensorProto.FLOAT, [4, 2])])
    s = vtpu.InferenceSession(m, backend="host")
    x = np.ones((4, 2), np.float32)
    with pytest.raises(vtpu.Error, match="index is out of range"):
        s.run(None, {"x": x, "lens": np.array([4, 5], np.int64)})


@pytest.mark.parametrize("axes", [None, [2, 3], [1], [0, 1, 2, 3]])
def test_mean_variance_normalization(axes):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 3, 4, 5)) * 3 + 1).astype(np.float32)
    ax = tuple(axes) if axes is not None else (0, 2, 3)
    xd = x.astype(np.float64)
    mean = xd.mean(axis=ax, keepdims=True)
    want = (xd - mean) / (np.sqrt(((xd - mean) ** 2).mean(axis=ax,
                                                         keepdims=True))
                          + 1e-9)
    kw = {"axes": axes} if axes is not None else {}
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **kw)
    m = make_model([node], [("x", TensorProto.FLOAT, list(x.shape))],
                   [("y", TensorProto.FLOAT, list(x.shape))])
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_mean_variance_normalization_refuses_an_axis_named_twice():
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"],
                            axes=[1, -1])
    m = make_model([node], [("x", TensorProto.FLOAT, [2, 3])],
                   [("y", TensorProto.FLOAT, [2, 3])])
    with pytest.raises(vtpu.Error, match="named twice"):
        vtpu.InferenceSession(m, backend="host")


def _dyn_quantize_ref(x):
    """ONNX's reference DynamicQuantizeLinear, in float32."""
    lo = np.minimum(np.float32(0), x.min())
    hi = np.maximum(np.float32(0), x.max())
    scale = np.float32(1.0 if hi == lo else hi - lo) / np.float32(255)
    zp = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
    y = np.clip(np.rint(x / scale) + zp, 0, 255)
    return y.astype(np.uint8), np.float32(scale), zp.astype(np.uint8)


@pytest.mark.parametrize("case", ["mixed", "positive", "negative", "zeros"])
def test_dynamic_quantize_linear(case):
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((3, 50)) * 4).astype(np.float32)
    x = {"mixed": x, "positive": np.abs(x) + 0.5,
         "negative": -np.abs(x) - 0.5, "zeros": 0 * x}[case]
    node = helper.make_node("DynamicQuantizeLinear", ["x"],
                            ["y", "s", "z"])
    m = make_model([node], [("x", TensorProto.FLOAT, list(x.shape))],
                   [("y", TensorProto.UINT8, list(x.shape)),
                    ("s", TensorProto.FLOAT, []),
                    ("z", TensorProto.UINT8, [])])
    y, s, z = vtpu.InferenceSession(m, backend="host").run(None, {"x": x})
    wy, ws, wz = _dyn_quantize_ref(x)
    assert s == ws and z == wz
    np.testing.assert_array_equal(y, wy)


@pytest.mark.parametrize("zp", ["none", "scalar", "per-row-and-column"])
def test_matmul_integer_is_exact_int32(zp):
    """MatMulInteger of uint8 A and int8 B: exact, products of 255 and
    -128 over K = 258 included (sums up to 2^23.98)."""
    rng = np.random.default_rng(4)
    m, k, n = 5, 258, 7
    a = rng.integers(0, 256, (2, m, k)).astype(np.uint8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    a[0, 0, :] = 255
    b[:, 0] = -128
    inputs = [("a", TensorProto.UINT8, list(a.shape)),
              ("b", TensorProto.INT8, list(b.shape))]
    feeds = {"a": a, "b": b}
    names = ["a", "b"]
    az, bz = np.zeros((1, m, 1), np.int64), np.zeros((n,), np.int64)
    if zp == "scalar":
        az, bz = np.full((1, 1, 1), 3), np.full((n,), -2)
        inputs += [("az", TensorProto.UINT8, []), ("bz", TensorProto.INT8, [])]
        feeds.update(az=np.array(3, np.uint8), bz=np.array(-2, np.int8))
        names += ["az", "bz"]
    elif zp == "per-row-and-column":
        azv = rng.integers(0, 256, (2, m, 1)).astype(np.uint8)
        bzv = rng.integers(-128, 128, (n,)).astype(np.int8)
        az, bz = azv.astype(np.int64), bzv.astype(np.int64)
        inputs += [("az", TensorProto.UINT8, [2, m, 1]),
                   ("bz", TensorProto.INT8, [n])]
        feeds.update(az=azv, bz=bzv)
        names += ["az", "bz"]
    want = (a.astype(np.int64) - az) @ (b.astype(np.int64) - bz)
    node = helper.make_node("MatMulInteger", names, ["y"])
    mdl = make_model([node], inputs, [("y", TensorProto.INT32, [2, m, n])])
    y, = vtpu.InferenceSession(mdl, backend="host").run(None, feeds)
    np.testing.assert_array_equal(y, want.astype(np.int32))


def _conv_int_ref(x, w, pads, group):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads, pads), (pads, pads)))
    oh, ow = h + 2 * pads - kh + 1, wd + 2 * pads - kw + 1
    y = np.zeros((n, m, oh, ow), np.int64)
    for o in range(m):
        g = o // (m // group)
        for i in range(oh):
            for j in range(ow):
                win = xp[:, g * cg:(g + 1) * cg, i:i + kh, j:j + kw]
                y[:, o, i, j] = (win * w[o]).sum(axis=(1, 2, 3))
    return y


def _conv3d_ref(x, w, strides, pads, dils, group):
    """Conv over 3 spatial axes from the ONNX definition, in float64."""
    m, cg = w.shape[:2]
    xp = np.pad(x.astype(np.float64),
                [(0, 0), (0, 0)] + [(pads[a], pads[a + 3]) for a in range(3)])
    out = [(xp.shape[2 + a] - dils[a] * (w.shape[2 + a] - 1) - 1)
           // strides[a] + 1 for a in range(3)]
    y = np.zeros((x.shape[0], m) + tuple(out))
    for o in range(m):
        g = o // (m // group)
        for kd in range(w.shape[2]):
            for kh in range(w.shape[3]):
                for kw in range(w.shape[4]):
                    at = [k * d for k, d in zip((kd, kh, kw), dils)]
                    win = xp[:, g * cg:(g + 1) * cg,
                             at[0]:at[0] + strides[0] * (out[0] - 1) + 1:
                             strides[0],
                             at[1]:at[1] + strides[1] * (out[1] - 1) + 1:
                             strides[1],
                             at[2]:at[2] + strides[2] * (out[2] - 1) + 1:
                             strides[2]]
                    y[:, o] += np.einsum("ncdhw,c->ndhw", win,
                                         w[o, :, kd, kh, kw])
    return y


@pytest.mark.parametrize("mult", [1, 2])
@pytest.mark.parametrize("strides,pads,dils", [
    ([1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1]),
    ([1, 2, 2], [1, 1, 1, 1, 1, 1], [1, 1, 1]),     # MViT's pooling
    ([2, 1, 2], [0, 1, 0, 2, 1, 1], [2, 1, 1]),
])
def test_depthwise_conv3d_matches_the_definition(mult, strides, pads, dils):
    """Conv3d with a kernel per channel (group = C), as MViT pools: run as
    a sum of depthwise 2-D convolutions, one per depth tap; with two
    kernels per channel, as the grouped 3-D convolution."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4, 6, 7, 8)).astype(np.float32)
    w = rng.standard_normal((4 * mult, 1, 3, 3, 2)).astype(np.float32)
    b = rng.standard_normal(4 * mult).astype(np.float32)
    want = _conv3d_ref(x, w, strides, pads, dils, 4) + \
        b.reshape(1, -1, 1, 1, 1)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], group=4,
                            strides=strides, pads=pads, dilations=dils)
    m = make_model([node], [("x", TensorProto.FLOAT, list(x.shape))],
                   [("y", TensorProto.FLOAT, list(want.shape))],
                   [numpy_helper.from_array(w, "w"),
                    numpy_helper.from_array(b, "b")])
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("group", [1, 2])
def test_conv_integer_pads_with_the_zero_point(group):
    """ConvInteger: uint8 x, int8 w with a zero point per output channel,
    padding counted as x's zero point (0 once shifted), exact int32."""
    rng = np.random.default_rng(6)
    x = rng.integers(0, 256, (1, 4, 5, 6)).astype(np.uint8)
    w = rng.integers(-128, 128, (6, 4 // group, 3, 3)).astype(np.int8)
    xz = np.array(131, np.uint8)
    wz = rng.integers(-5, 5, (6,)).astype(np.int8)
    want = _conv_int_ref(x.astype(np.int64) - 131,
                         w.astype(np.int64) - wz.reshape(6, 1, 1, 1), 1,
                         group)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"],
                            pads=[1, 1, 1, 1], group=group)
    m = make_model([node], [("x", TensorProto.UINT8, list(x.shape)),
                            ("w", TensorProto.INT8, list(w.shape)),
                            ("xz", TensorProto.UINT8, []),
                            ("wz", TensorProto.INT8, [6])],
                   [("y", TensorProto.INT32, list(want.shape))])
    y, = vtpu.InferenceSession(m, backend="host").run(
        None, {"x": x, "w": w, "xz": xz, "wz": wz})
    np.testing.assert_array_equal(y, want.astype(np.int32))


def _requant(acc, mult, zp, lo, hi):
    return np.clip(np.rint(acc * mult) + zp, lo, hi)


@pytest.mark.parametrize("ytype", ["uint8", "int8"])
def test_qlinear_matmul_requantizes_exactly(ytype):
    """QLinearMatMul with scales whose products are exact (powers of
    two): every output, ties rounded to even, bit for bit."""
    rng = np.random.default_rng(8)
    a = rng.integers(0, 256, (4, 30)).astype(np.uint8)
    b = rng.integers(-128, 128, (30, 6)).astype(np.int8)
    yz = np.array(10 if ytype == "uint8" else -3, ytype)
    lo, hi = (0, 255) if ytype == "uint8" else (-128, 127)
    acc = (a.astype(np.int64) - 120) @ (b.astype(np.int64) - 1)
    want = _requant(acc, 0.5 * 0.25 / 64, int(yz), lo, hi).astype(ytype)
    tp = TensorProto.UINT8 if ytype == "uint8" else TensorProto.INT8
    inits = [numpy_helper.from_array(np.array(v, t), nm) for v, t, nm in [
        (0.5, np.float32, "as"), (120, np.uint8, "az"),
        (0.25, np.float32, "bs"), (1, np.int8, "bz"),
        (64.0, np.float32, "ys")]] + [numpy_helper.from_array(yz, "yz")]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs",
                                              "bz", "ys", "yz"], ["y"])
    m = make_model([node], [("a", TensorProto.UINT8, [4, 30]),
                            ("b", TensorProto.INT8, [30, 6])],
                   [("y", tp, [4, 6])], inits)
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(y, want)


def test_qlinear_conv_with_bias_and_a_scale_per_channel():
    rng = np.random.default_rng(10)
    x = rng.integers(0, 256, (1, 3, 5, 5)).astype(np.uint8)
    w = rng.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    bias = rng.integers(-2000, 2000, (4,)).astype(np.int32)
    ws = np.array([0.5, 0.25, 0.125, 1.0], np.float32)
    acc = _conv_int_ref(x.astype(np.int64) - 128, w.astype(np.int64), 0, 1)
    acc = acc + bias.reshape(1, 4, 1, 1)
    want = _requant(acc, (0.25 * ws / 128).reshape(1, 4, 1, 1), 5, 0,
                    255).astype(np.uint8)
    inits = [numpy_helper.from_array(np.array(v, t), nm) for v, t, nm in [
        (0.25, np.float32, "xs"), (128, np.uint8, "xz"),
        (0, np.int8, "wz"), (128.0, np.float32, "ys"),
        (5, np.uint8, "yz")]] + [numpy_helper.from_array(ws, "ws"),
                                 numpy_helper.from_array(bias, "bias")]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz",
                                            "ys", "yz", "bias"], ["y"])
    m = make_model([node], [("x", TensorProto.UINT8, [1, 3, 5, 5]),
                            ("w", TensorProto.INT8, [4, 3, 3, 3])],
                   [("y", TensorProto.UINT8, list(want.shape))], inits)
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"x": x, "w": w})
    np.testing.assert_array_equal(y, want)
