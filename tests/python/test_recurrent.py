# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""RNN, GRU and LSTM with the activations, activation_alpha/beta and clip
attributes, against numpy written from the ONNX operator definitions."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import vtpu
from conftest import make_model


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (takes alpha, takes beta, default alpha, default beta, f(x, a, b))
FUNCS = {
    "Sigmoid": (False, False, 0, 0, lambda x, a, b: sigmoid(x)),
    "Tanh": (False, False, 0, 0, lambda x, a, b: np.tanh(x)),
    "Relu": (False, False, 0, 0, lambda x, a, b: np.maximum(x, 0)),
    "Affine": (True, True, 1.0, 0.0, lambda x, a, b: a * x + b),
    "LeakyRelu": (True, False, 0.01, 0,
                  lambda x, a, b: np.where(x > 0, x, a * x)),
    "ThresholdedRelu": (True, False, 1.0, 0,
                        lambda x, a, b: np.where(x > a, x, 0)),
    "ScaledTanh": (True, True, 1.0, 1.0, lambda x, a, b: a * np.tanh(b * x)),
    "HardSigmoid": (True, True, 0.2, 0.5,
                    lambda x, a, b: np.clip(a * x + b, 0, 1)),
    "Elu": (True, False, 1.0, 0,
            lambda x, a, b: np.where(x > 0, x, a * (np.exp(x) - 1))),
    "Softsign": (False, False, 0, 0, lambda x, a, b: x / (1 + np.abs(x))),
    "Softplus": (False, False, 0, 0, lambda x, a, b: np.log1p(np.exp(x))),
}


def bind(names, alphas, betas):
    """The functions with their parameters, alphas and betas taken in
    order by the functions that have such a parameter."""
    alphas, betas, out = list(alphas), list(betas), []
    for n in names:
        ta, tb, da, db, f = FUNCS[n]
        a = alphas.pop(0) if ta and alphas else da
        b = betas.pop(0) if tb and betas else db
        out.append(lambda x, f=f, a=a, b=b: f(x, a, b))
    return out


def reference(cell, x, w, r, bias, hs, acts, clip, lbr, reverse,
              coupled=False):
    """Y [seq, dirs, batch, H] of the ONNX formulas, in float64."""
    seq, batch, _ = x.shape
    nd = w.shape[0]
    per = {"RNN": 1, "GRU": 2, "LSTM": 3}[cell]
    ys = np.zeros((seq, nd, batch, hs))
    for d in range(nd):
        f = acts[d * per:(d + 1) * per]
        if clip:
            f = [lambda v, g=g: g(np.clip(v, -clip, clip)) for g in f]
        W, R = w[d].astype(np.float64), r[d].astype(np.float64)
        wb, rb = np.split(bias[d].astype(np.float64), 2)
        h = np.zeros((batch, hs))
        c = np.zeros((batch, hs))
        order = reversed(range(seq)) if d == 1 or reverse else range(seq)
        for t in order:
            xt = x[t].astype(np.float64)
            if cell == "RNN":
                h = f[0](xt @ W.T + h @ R.T + wb + rb)
            elif cell == "GRU":
                gx = xt @ W.T + wb
                gh = h @ R.T + rb
                z = f[0](gx[:, :hs] + gh[:, :hs])
                rg = f[0](gx[:, hs:2 * hs] + gh[:, hs:2 * hs])
                if lbr:
                    hh = f[1](gx[:, 2 * hs:] + rg * gh[:, 2 * hs:])
                else:
                    hh = f[1](gx[:, 2 * hs:] + (rg * h) @ R[2 * hs:].T +
                              rb[2 * hs:])
                h = (1 - z) * hh + z * h
            else:
                g = xt @ W.T + h @ R.T + wb + rb
                i, o, fg, cg = np.split(g, 4, axis=1)
                ia = f[0](i)
                # input_forget: the forget gate is 1 - the input gate
                fa = 1 - ia if coupled else f[0](fg)
                c = fa * c + ia * f[1](cg)
                h = f[0](o) * f[2](c)
            ys[t, d] = h
    return ys


CASES = [
    # cell, direction, activations, alphas, betas, clip, linear_before_reset
    ("RNN", "forward", ["Relu"], [], [], 0, 0),
    ("RNN", "bidirectional", ["LeakyRelu", "Softsign"], [0.2], [], 0, 0),
    ("RNN", "reverse", ["ThresholdedRelu"], [0.1], [], 1.5, 0),
    ("GRU", "forward", ["HardSigmoid", "Affine"], [0.3, 0.8], [0.4, 0.1],
     0, 1),
    ("GRU", "bidirectional", ["Sigmoid", "Elu", "HardSigmoid", "Tanh"],
     [0.7], [], 0, 0),
    ("LSTM", "forward", ["Sigmoid", "ScaledTanh", "Softsign"], [1.5], [0.7],
     2.0, 0),
    ("LSTM", "bidirectional",
     ["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Elu", "Softplus"],
     [0.25, 0.9], [0.6], 0, 0),
]


@pytest.mark.parametrize("cell,direction,names,alphas,betas,clip,lbr", CASES)
def test_recurrent_activations_match_the_formulas(cell, direction, names,
                                                  alphas, betas, clip, lbr):
    seq, batch, inp, hs = 5, 2, 3, 4
    nd = 2 if direction == "bidirectional" else 1
    ng = {"RNN": 1, "GRU": 3, "LSTM": 4}[cell]
    rng = np.random.default_rng(len(names) * 7 + ng)
    x = rng.standard_normal((seq, batch, inp)).astype(np.float32)
    w = (rng.standard_normal((nd, ng * hs, inp)) * 0.6).astype(np.float32)
    r = (rng.standard_normal((nd, ng * hs, hs)) * 0.6).astype(np.float32)
    b = (rng.standard_normal((nd, 2 * ng * hs)) * 0.3).astype(np.float32)
    attrs = dict(hidden_size=hs, direction=direction, activations=names)
    if alphas:
        attrs["activation_alpha"] = alphas
    if betas:
        attrs["activation_beta"] = betas
    if clip:
        attrs["clip"] = clip
    if cell == "GRU":
        attrs["linear_before_reset"] = lbr
    node = helper.make_node(cell, ["x", "w", "r", "b"], ["y"], **attrs)
    m = make_model([node], [("x", TensorProto.FLOAT, [seq, batch, inp])],
                   [("y", TensorProto.FLOAT, [seq, nd, batch, hs])],
                   [numpy_helper.from_array(w, "w"),
                    numpy_helper.from_array(r, "r"),
                    numpy_helper.from_array(b, "b")])
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"x": x})
    want = reference(cell, x, w, r, b, hs, bind(names, alphas, betas), clip,
                     lbr, direction == "reverse")
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_unknown_activation_is_refused_by_name():
    node = helper.make_node("RNN", ["x", "w", "r"], ["y"], hidden_size=2,
                            activations=["Swish"])
    m = make_model([node], [("x", TensorProto.FLOAT, [3, 1, 2])],
                   [("y", TensorProto.FLOAT, [3, 1, 1, 2])],
                   [numpy_helper.from_array(np.ones((1, 2, 2), np.float32),
                                            "w"),
                    numpy_helper.from_array(np.ones((1, 2, 2), np.float32),
                                            "r")])
    with pytest.raises(vtpu.Error, match="unsupported activation Swish"):
        vtpu.InferenceSession(m, backend="host")


@pytest.mark.parametrize("which,shape,want", [
    ("b", (1, 2, 8 * 3), r"B must be \[24\] per direction"),
    ("b", (1, 8 * 3 + 1), r"B must be \[24\] per direction"),
    ("w", (1, 4 * 3, 5), r"W must be \[12, 4\] per direction"),
    ("r", (1, 4 * 3), r"R must be \[12, 3\] per direction"),
    ("h", (1, 2, 3), r"initial_h must be \[1, 3\] per direction"),
    ("p", (1, 3, 3), r"P must be \[9\] per direction"),
])
def test_lstm_operands_of_the_wrong_shape_are_refused(which, shape, want):
    """W, R, B, initial_h and P as the operator defines them, or an error
    (a B of rank 2 per direction was read as rank 1: found by onnx-fuzz
    under ASan)."""
    hs, inp = 3, 4
    shapes = {"w": (1, 4 * hs, inp), "r": (1, 4 * hs, hs), "b": (1, 8 * hs),
              "l": (1,), "h": (1, 1, hs), "c": (1, 1, hs), "p": (1, 3 * hs)}
    shapes[which] = shape
    inits = [numpy_helper.from_array(np.ones(shapes[k], np.float32), k)
             for k in "wrbhcp"]
    node = helper.make_node("LSTM", ["x", "w", "r", "b", "", "h", "c", "p"],
                            ["y"], hidden_size=hs)
    m = make_model([node], [("x", TensorProto.FLOAT, [2, 1, inp])],
                   [("y", TensorProto.FLOAT, [2, 1, 1, hs])], inits)
    with pytest.raises(vtpu.Error, match=want):
        vtpu.InferenceSession(m, backend="host")


def lstm_model(seq, hs=8, inp=4, direction="forward", seed=3, **attrs):
    nd = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((nd, 4 * hs, inp)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((nd, 4 * hs, hs)) * 0.5).astype(np.float32)
    b = (rng.standard_normal((nd, 8 * hs)) * 0.2).astype(np.float32)
    node = helper.make_node("LSTM", ["x", "w", "r", "b"], ["y"],
                            hidden_size=hs, direction=direction, **attrs)
    m = make_model([node], [("x", TensorProto.FLOAT, [seq, 1, inp])],
                   [("y", TensorProto.FLOAT, [seq, nd, 1, hs])],
                   [numpy_helper.from_array(w, "w"),
                    numpy_helper.from_array(r, "r"),
                    numpy_helper.from_array(b, "b")])
    return m, w, r, b


def test_long_sequence_unrolls():
    """600 steps each way: past the old limit of 256, every step kept."""
    seq, hs = 600, 8
    m, w, r, b = lstm_model(seq, hs, direction="bidirectional")
    x = np.random.default_rng(4).standard_normal((seq, 1, 4)).astype(
        np.float32)
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"x": x})
    acts = bind(["Sigmoid", "Tanh", "Tanh"] * 2, [], [])
    want = reference("LSTM", x, w, r, b, hs, acts, 0, 0, False)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_too_long_a_sequence_is_refused_with_the_limit():
    m, _, _, _ = lstm_model(1025)
    with pytest.raises(vtpu.Error, match="1025 steps.*at most 1024"):
        vtpu.InferenceSession(m, backend="host")


def test_lstm_input_forget_couples_the_gates():
    seq, hs = 6, 5
    m, w, r, b = lstm_model(seq, hs, direction="bidirectional",
                            input_forget=1)
    x = np.random.default_rng(6).standard_normal((seq, 1, 4)).astype(
        np.float32)
    y, = vtpu.InferenceSession(m, backend="host").run(None, {"x": x})
    acts = bind(["Sigmoid", "Tanh", "Tanh"] * 2, [], [])
    want = reference("LSTM", x, w, r, b, hs, acts, 0, 0, False, True)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
