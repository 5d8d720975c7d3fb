"""The numpy oracle (`irkit.reference`): each example against hand-written numpy, the statement
semantics (reductions, integer division, offsets and strides, bounds), the engine's fast and
chunked paths against its plain path, design against tensorop, tolerances and comparison, and a
property: random index statements agree with a naive pure-Python loop evaluator."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

from irkit import reference as R
from irkit.context import make_context
from irkit.frontend import parse_design
from irkit.oracle import engine as E  # the engine's switches are patched where they are read
from irkit.oracle.engine import _chunk_sizes
from irkit.passes.lower_design import LowerDesignPass

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SMALL = {
    "gemm": {"M": 7, "N": 5, "K": 3},
    "blur": {"H": 13, "W": 11},
    "softmax": {"M": 7, "N": 5},
    "conv2d": {"N": 2, "C": 3, "F": 5, "H": 7, "W": 6},
    "rowsum": {"M": 7, "N": 5},
    "transpose": {"M": 7, "N": 5},
    "batch_matmul": {"NB": 3, "M": 7, "N": 5, "K": 3},
    "elementwise": {"M": 13, "N": 11},
    "layernorm": {"M": 7, "N": 13},
    "syrk": {"N": 9, "K": 5},
    "trmm": {"M": 9, "N": 7},
    "jacobi_2d": {"T": 3, "N": 9},
    "causal_attention": {"S": 11, "D": 5},
    "seidel_2d": {"T": 2, "N": 9},
    "cholesky": {"N": 11},
}


def example(name: str) -> ModuleOp:
    return parse_design((EXAMPLES / f"{name}.design").read_text(), f"{name}.design")


def lowered(module: ModuleOp) -> ModuleOp:
    module = module.clone()
    LowerDesignPass().apply(make_context(), module)
    return module


def assert_close(actual, expected, dtype="f32", n=1):
    report = R.compare(actual, expected, dtype, n)
    assert report.ok, str(report)


def f64(x):
    return np.asarray(x, dtype=np.float64)


# --- the examples against hand-written numpy --------------------------------------------------


def test_all_examples_are_covered():
    assert sorted(p.stem for p in EXAMPLES.glob("*.design")) == sorted(SMALL)


def test_gemm():
    x = R.random_inputs(example("gemm"), SMALL["gemm"])
    out = R.evaluate_design(example("gemm"), x, SMALL["gemm"])
    assert set(out) == {"C"} and out["C"].dtype == np.float32 and out["C"].shape == (7, 5)
    assert_close(out["C"], f64(x["A"]) @ f64(x["B"]), n=3)


def test_blur_two_stages():
    x = R.random_inputs(example("blur"), SMALL["blur"])
    out = R.evaluate_design(example("blur"), x, SMALL["blur"], include_temps=True)
    inp = x["inp"]
    bx = (inp[:, :-2] + inp[:, 1:-1] + inp[:, 2:]) / np.float32(3)
    expected = (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)
    assert out["bx"].shape == (15, 11) and out["out"].shape == (13, 11)
    np.testing.assert_array_equal(out["bx"], bx)  # the same f32 operations in the same order
    np.testing.assert_array_equal(out["out"], expected)
    assert "bx" not in R.evaluate_design(example("blur"), x, SMALL["blur"])  # temps only on request


def np_softmax(x, axis):
    e = np.exp(f64(x) - f64(x).max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_layernorm():
    x = R.random_inputs(example("layernorm"), SMALL["layernorm"])
    y = R.evaluate_design(example("layernorm"), x, SMALL["layernorm"])["Y"]
    a = f64(x["X"])
    mu = a.mean(axis=1, keepdims=True)
    var = ((a - mu) ** 2).mean(axis=1, keepdims=True)
    expected = (a - mu) / np.sqrt(var + float(x["eps"])) * f64(x["gamma"]) + f64(x["beta"])
    assert_close(y, expected, n=2 * 13 + 1)


def test_syrk():
    x = R.random_inputs(example("syrk"), SMALL["syrk"])
    c = R.evaluate_design(example("syrk"), x, SMALL["syrk"])["C"]
    a = f64(x["A"])
    assert_close(c, f64(x["C"]) + float(x["alpha"]) * np.tril(a @ a.T), n=5)


def test_trmm():
    x = R.random_inputs(example("trmm"), SMALL["trmm"])
    c = R.evaluate_design(example("trmm"), x, SMALL["trmm"])["C"]
    a, b = f64(x["A"]), f64(x["B"])
    assert_close(c, float(x["alpha"]) * (b + np.tril(a, -1).T @ b), n=10)


def test_jacobi_2d():
    x = R.random_inputs(example("jacobi_2d"), SMALL["jacobi_2d"])
    got = R.evaluate_design(example("jacobi_2d"), x, SMALL["jacobi_2d"])["A"]
    a = f64(x["A"])
    for _ in range(3):
        b = a.copy()
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        a = b.copy()
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[:-2, 1:-1] + b[2:, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:])
    assert_close(got, a, n=6)


def test_seidel_2d():
    x = R.random_inputs(example("seidel_2d"), SMALL["seidel_2d"])
    got = R.evaluate_design(example("seidel_2d"), x, SMALL["seidel_2d"])["A"]
    a = f64(x["A"])
    for _ in range(2):
        for i in range(1, 8):
            for j in range(1, 8):
                a[i, j] = a[i - 1 : i + 2, j - 1 : j + 2].sum() / 9.0
    assert_close(got, a, n=2 * 81)


def test_cholesky():
    x = R.random_inputs(example("cholesky"), SMALL["cholesky"])
    got = R.evaluate_design(example("cholesky"), x, SMALL["cholesky"])["A"]
    assert_close(np.tril(got), np.linalg.cholesky(f64(x["A"])), dtype="f64", n=11)
    assert_close(np.triu(got, 1), np.triu(x["A"], 1), dtype="f64")


def test_causal_attention():
    x = R.random_inputs(example("causal_attention"), SMALL["causal_attention"])
    got = R.evaluate_design(example("causal_attention"), x, SMALL["causal_attention"])["O"]
    q, k, v = f64(x["Q"]), f64(x["K"]), f64(x["V"])
    s = q @ k.T / np.sqrt(q.shape[1])
    s[np.triu_indices(len(s), 1)] = -np.inf
    p = np.exp(s - s.max(axis=1, keepdims=True))
    assert_close(got, (p / p.sum(axis=1, keepdims=True)) @ v, n=2 * 11 + 5)


def test_softmax():
    x = R.random_inputs(example("softmax"), SMALL["softmax"])
    p = R.evaluate_design(example("softmax"), x, SMALL["softmax"])["P"]
    assert_close(p, np_softmax(x["X"], 1), n=5)
    np.testing.assert_allclose(p.sum(axis=1), 1, rtol=1e-6)


SOFTMAX_AXES = """design sm {
  sizes { A = 3, B = 4, C = 5 }
  tensor X : f32[A, B, C] input
  tensor P0 : f32[A, B, C] output
  tensor P1 : f32[A, B, C] output
  tensor PL : f32[A, B, C] output
  P0 = softmax(X, axis = 0)
  P1 = softmax(X, axis = -2)
  PL = softmax(X)
}"""


def test_softmax_axes():
    doc = parse_design(SOFTMAX_AXES)
    x = R.random_inputs(doc, seed=3)
    out = R.evaluate_design(doc, x)
    assert_close(out["P0"], np_softmax(x["X"], 0), n=3)
    assert_close(out["P1"], np_softmax(x["X"], 1), n=4)
    assert_close(out["PL"], np_softmax(x["X"], 2), n=5)


def test_softmax_is_stable_for_large_inputs():
    x = {"X": np.array([[1000, 999, -1000, 0, 1], [-3000, -3001, -3000, -2999, -3002]], np.float32)}
    p = R.evaluate_design(example("softmax"), x, {"M": 2, "N": 5})["P"]
    assert np.isfinite(p).all()
    assert_close(p, np_softmax(x["X"] - x["X"].max(axis=1, keepdims=True), 1), n=5)


def naive_conv_nchw(image, weights, stride, padding):
    """Direct definition: O[n, f, y, x] = sum_{c,r,s} I[n, c, st*y + r - p, st*x + s - p] * W[f, c, r, s], 0 outside."""
    n_, c_, h, w = image.shape
    f_, _, r_, s_ = weights.shape
    oh, ow = (h + 2 * padding - r_) // stride + 1, (w + 2 * padding - s_) // stride + 1
    out = np.zeros((n_, f_, oh, ow))
    for n, f, y, x in itertools.product(range(n_), range(f_), range(oh), range(ow)):
        total = 0.0
        for c, r, s in itertools.product(range(c_), range(r_), range(s_)):
            yy, xx = stride * y + r - padding, stride * x + s - padding
            if 0 <= yy < h and 0 <= xx < w:
                total += float(image[n, c, yy, xx]) * float(weights[f, c, r, s])
        out[n, f, y, x] = total
    return out


def test_conv2d_nchw_padding_1():
    x = R.random_inputs(example("conv2d"), SMALL["conv2d"])
    out = R.evaluate_design(example("conv2d"), x, SMALL["conv2d"])["O"]
    assert out.shape == (2, 5, 7, 6)
    assert_close(out, naive_conv_nchw(x["I"], x["Wt"], 1, 1), n=27)


# The same convolution in NHWC: image I[n, y, x, c], filters Wt[r, s, c, f], output O[n, y, x, f].
CONV_NHWC = """design conv_nhwc {
  sizes { N = 2, C = 3, F = 5, H = 7, W = 6 }
  tensor I  : f32[N, H, W, C] input
  tensor Wt : f32[3, 3, C, F] input
  tensor O  : f32[N, H, W, F] output
  O = conv2d(I, Wt, stride = 1, padding = 1, layout = nhwc)
}"""


def test_conv2d_nhwc_is_nchw_with_transposed_operands():
    doc = parse_design(CONV_NHWC)
    x = R.random_inputs(doc, seed=1)
    out = R.evaluate_design(doc, x)["O"]
    expected = naive_conv_nchw(x["I"].transpose(0, 3, 1, 2), x["Wt"].transpose(3, 2, 0, 1), 1, 1)
    assert_close(out, expected.transpose(0, 2, 3, 1), n=27)


CONV_STRIDE2 = """design conv_s2 {
  sizes { N = 1, C = 2, F = 3, H = 9, W = 8 }
  tensor I  : f32[N, C, H, W] input
  tensor Wt : f32[F, C, 3, 3] input
  tensor Wn : f32[3, 3, C, F] input
  tensor Ih : f32[N, H, W, C] input
  tensor O  : f32[N, F, (H + 2 - 3) / 2 + 1, (W + 2 - 3) / 2 + 1] output
  tensor O0 : f32[N, F, (H - 3) / 2 + 1, (W - 3) / 2 + 1] output
  tensor Oh : f32[N, (H + 2 - 3) / 2 + 1, (W + 2 - 3) / 2 + 1, F] output
  O  = conv2d(I, Wt, stride = 2, padding = 1)
  O0 = conv2d(I, Wt, stride = 2)
  Oh = conv2d(Ih, Wn, stride = 2, padding = 1, layout = nhwc)
}"""


def test_conv2d_stride_2():
    doc = parse_design(CONV_STRIDE2)
    x = R.random_inputs(doc, seed=2)
    out = R.evaluate_design(doc, x)
    assert out["O"].shape == (1, 3, 5, 4) and out["O0"].shape == (1, 3, 4, 3)
    assert_close(out["O"], naive_conv_nchw(x["I"], x["Wt"], 2, 1), n=18)
    assert_close(out["O0"], naive_conv_nchw(x["I"], x["Wt"], 2, 0), n=18)
    expected_h = naive_conv_nchw(x["Ih"].transpose(0, 3, 1, 2), x["Wn"].transpose(3, 2, 0, 1), 2, 1)
    assert_close(out["Oh"], expected_h.transpose(0, 2, 3, 1), n=18)


def test_rowsum():
    x = R.random_inputs(example("rowsum"), SMALL["rowsum"])
    out = R.evaluate_design(example("rowsum"), x, SMALL["rowsum"])["s"]
    assert out.shape == (7,)
    assert_close(out, f64(x["X"]).sum(axis=1), n=5)


def test_transpose():
    x = R.random_inputs(example("transpose"), SMALL["transpose"])
    out = R.evaluate_design(example("transpose"), x, SMALL["transpose"])["B"]
    np.testing.assert_array_equal(out, x["A"].T)


TRANSPOSE3 = """design t3 {
  sizes { A = 2, B = 3, C = 4 }
  tensor X : i32[A, B, C] input
  tensor P : i32[C, A, B] output
  tensor D : i32[C, B, A] output
  P = transpose(X, perm = [2, 0, 1])
  D = transpose(X)
}"""


def test_transpose_perm_and_default_reversal():
    doc = parse_design(TRANSPOSE3)
    x = R.random_inputs(doc)
    out = R.evaluate_design(doc, x)
    np.testing.assert_array_equal(out["P"], np.transpose(x["X"], (2, 0, 1)))
    np.testing.assert_array_equal(out["D"], np.transpose(x["X"], (2, 1, 0)))
    assert out["P"].flags.c_contiguous


def test_batch_matmul():
    x = R.random_inputs(example("batch_matmul"), SMALL["batch_matmul"])
    out = R.evaluate_design(example("batch_matmul"), x, SMALL["batch_matmul"])["C"]
    expected = np.stack([f64(a) @ f64(b) for a, b in zip(x["A"], x["B"])])
    assert_close(out, expected, n=3)


def test_elementwise_chain():
    x = R.random_inputs(example("elementwise"), SMALL["elementwise"], seed=5)
    x = {k: v * np.float32(4) for k, v in x.items()}  # so that the clamp to [0, 6] bites on both sides
    out = R.evaluate_design(example("elementwise"), x, SMALL["elementwise"], include_temps=True)
    t1 = x["a"] * x["b"] + x["c"]
    t2 = np.minimum(np.maximum(t1, np.float32(0)), np.float32(6))
    expected = t2 * np.exp(-t2) + np.sqrt(t2) / np.float32(2)
    assert (t1 < 0).any() and (t1 > 6).any()
    np.testing.assert_array_equal(out["t1"], t1)
    np.testing.assert_array_equal(out["t2"], t2)
    assert_close(out["out"], expected)
    assert out["out"].dtype == np.float32


# --- statement semantics ---------------------------------------------------------------------------

REDUCTIONS = """design reductions {
  sizes { M = 6, N = 9 }
  tensor X : f32[M, N] input
  tensor m : f32[M] output
  tensor s : f32[M] output
  m[i] max= X[i, j]
  s[i] += exp(X[i, j] - m[i])
}"""


def test_max_reduction_and_a_reduction_reading_it():
    doc = parse_design(REDUCTIONS)
    x = R.random_inputs(doc)
    out = R.evaluate_design(doc, x)
    np.testing.assert_array_equal(out["m"], x["X"].max(axis=1))
    assert_close(out["s"], np.exp(f64(x["X"]) - f64(x["X"]).max(axis=1, keepdims=True)).sum(axis=1), n=9)


def test_max_propagates_nan():
    doc = parse_design(REDUCTIONS)
    x = R.random_inputs(doc)
    x["X"][2, 4] = np.nan
    m = R.evaluate_design(doc, x)["m"]
    assert np.isnan(m[2]) and not np.isnan(np.delete(m, 2)).any()


NANS = """design nans { sizes { N = 4 }
  tensor x : f32[N] input  tensor hi : f32[N] output  tensor lo : f32[N] output
  hi[i] = max(x[i], 0)
  lo[i] = min(0, x[i]) }"""


def test_elementwise_max_and_min_propagate_nan_like_arith():
    x = np.array([np.nan, -1, 2, np.nan], np.float32)
    out = R.evaluate_design(parse_design(NANS), {"x": x})
    np.testing.assert_array_equal(out["hi"], [np.nan, 0, 2, np.nan])
    np.testing.assert_array_equal(out["lo"], [np.nan, -1, 0, np.nan])


IMAX = """design imax {
  sizes { M = 3, N = 4 }
  tensor X : i32[M, N] input
  tensor m : i32[M] output
  tensor e : i32[M] output
  m[i] max= X[i, j] - 100
  e[i] max= X[i, j] * 0 - 2147483647 - 1
}"""


def test_integer_max_starts_at_the_lowest_int():
    doc = parse_design(IMAX)
    x = {"X": np.array([[-5, -9, -7, -6], [1, 2, 3, 4], [-8, -8, -8, -8]], np.int32)}
    out = R.evaluate_design(doc, x)
    np.testing.assert_array_equal(out["m"], [-105, -96, -108])
    np.testing.assert_array_equal(out["e"], [np.iinfo(np.int32).min] * 3)
    assert out["m"].dtype == np.int32


INTDIV = """design intdiv {
  sizes { N = 8 }
  tensor a : i32[N] input
  tensor b : i32[N] input
  tensor q : i32[N] output
  tensor h : i32[N] output
  tensor r : i32[N] output
  tensor w : i32[N] output
  q[i] = a[i] / b[i]
  h[i] = a[i] / (0 - 2) + 7 / 2
  r[i] = a[i] - a[i] / b[i] * b[i]
  w[i] = a[i] * 65536 * 32768
}"""


def test_integer_division_truncates_toward_zero_like_c():
    doc = parse_design(INTDIV)
    a = np.array([-7, 7, -7, 7, 0, -1, 5, -2147483647 - 1], np.int32)
    b = np.array([2, 2, -2, -2, 3, 2, -5, 1], np.int32)
    out = R.evaluate_design(doc, {"a": a, "b": b})
    np.testing.assert_array_equal(out["q"], [-3, 3, 3, -3, 0, 0, -1, -2147483648])
    np.testing.assert_array_equal(out["h"], [3 + 3, -3 + 3, 3 + 3, -3 + 3, 0 + 3, 0 + 3, -2 + 3, 1073741824 + 3])
    np.testing.assert_array_equal(out["r"], [-1, 1, -1, 1, 0, -1, 0, 0])  # C's %: the sign of the dividend
    np.testing.assert_array_equal(out["w"], [-(2**31), -(2**31), -(2**31), -(2**31), 0, -(2**31), -(2**31), 0])


def test_integer_division_by_zero_is_an_error():
    doc = parse_design(INTDIV)
    a = np.arange(8, dtype=np.int32)
    with pytest.raises(R.ReferenceEvalError, match="division by zero"):
        R.evaluate_design(doc, {"a": a, "b": np.zeros(8, np.int32)})


OFFSETS = """design offsets {
  sizes { H = 5, W = 7, K = 4 }
  tensor inp : f32[2 * H + 2, 3 * W] input
  tensor A   : f32[H, K] input
  tensor v   : f32[K + 2] input
  tensor out : f32[H, W] output
  tensor red : f32[H] output
  tensor one : f32[H] output
  out[y, x] = inp[2 * y + 1, 3 * x + 2] - inp[y + 2, x / 2] * inp[y, x % 3] + inp[0, 1]
  red[y] += A[y, k] * v[k + 2] - v[k + 1]
  one[y] max= A[y, k] - A[y, k / 2]
}"""


def test_offsets_strides_division_and_remainder_in_indices():
    doc = parse_design(OFFSETS)
    x = R.random_inputs(doc, seed=4)
    out = R.evaluate_design(doc, x)
    inp, a, v = x["inp"], x["A"], x["v"]
    xs = np.arange(7)
    expected = inp[1:10:2, 2:21:3] - inp[2:7][:, xs // 2] * inp[:5][:, xs % 3] + inp[0, 1]
    np.testing.assert_array_equal(out["out"], expected)
    red = (f64(a) * f64(v[2:6]) - f64(v[1:5])).sum(axis=1)
    assert_close(out["red"], red, n=4)
    np.testing.assert_array_equal(out["one"], (a - a[:, np.arange(4) // 2]).max(axis=1))


def test_out_of_bounds_access_is_reported_not_wrapped():
    text = """design oob { sizes { N = 4 } tensor x : f32[N] input tensor y : f32[N] output
      y[i] = x[i + 1] }"""
    doc = parse_design(text, check=False)  # the checker would refuse it
    with pytest.raises(R.ReferenceEvalError, match=r"x\[i \+ 1\] is out of bounds.*reaches 4"):
        R.evaluate_design(doc, {"x": np.zeros(4, np.float32)})
    neg = parse_design(text.replace("x[i + 1]", "x[i - 1]"), check=False)
    with pytest.raises(R.ReferenceEvalError, match="reaches -1"):
        R.evaluate_design(neg, {"x": np.zeros(4, np.float32)})


# --- sizes and inputs --------------------------------------------------------------------------------

NODEFAULT = """design nd { sizes { N = 3, K }
  tensor x : f32[N, K] input
  tensor y : f32[N] output
  y[i] += x[i, k] }"""


def test_sizes_default_and_missing():
    doc = parse_design(NODEFAULT)
    assert R.default_sizes(doc) == {"N": 3}
    with pytest.raises(ValueError, match="no value for size K"):
        R.evaluate_design(doc, {"x": np.zeros((3, 2), np.float32)})
    with pytest.raises(ValueError, match="unknown size Q"):
        R.resolve_sizes(doc, {"K": 2, "Q": 1})
    with pytest.raises(ValueError, match="positive"):
        R.resolve_sizes(doc, {"K": 0})
    out = R.evaluate_design(doc, {"x": np.ones((3, 2), np.float32)}, {"K": 2})
    np.testing.assert_array_equal(out["y"], [2, 2, 2])
    out = R.evaluate_design(doc, {"x": np.ones((5, 2), np.float32)}, {"K": 2, "N": 5})
    assert out["y"].shape == (5,)


def test_inputs_are_checked_and_never_written():
    doc = example("gemm")
    sizes = SMALL["gemm"]
    x = R.random_inputs(doc, sizes)
    with pytest.raises(ValueError, match="no value given for input tensor B"):
        R.evaluate_design(doc, {"A": x["A"]}, sizes)
    with pytest.raises(ValueError, match=r"input 'A' has shape \(3, 7\), expected \(7, 3\)"):
        R.evaluate_design(doc, {"A": x["A"].T, "B": x["B"]}, sizes)
    with pytest.raises(ValueError, match="'C' is not an input"):
        R.evaluate_design(doc, {**x, "C": x["A"]}, sizes)
    before = {k: v.copy() for k, v in x.items()}
    R.evaluate_design(doc, x, sizes)
    for k in x:
        np.testing.assert_array_equal(x[k], before[k])


def test_random_inputs():
    doc = parse_design(INTDIV)
    x = R.random_inputs(doc, seed=7)
    assert set(x) == {"a", "b"} and x["a"].dtype == np.int32
    big = R.random_inputs(parse_design(INTDIV.replace("N = 8", "N = 4000")), seed=7)["a"]
    assert big.min() == -8 and big.max() == 8
    f = R.random_inputs(example("gemm"), {"M": 64, "N": 8, "K": 64}, seed=7)
    assert f["A"].dtype == np.float32 and f["A"].shape == (64, 64) and f["B"].shape == (64, 8)
    assert -1 <= f["A"].min() < -0.9 and 0.9 < f["A"].max() <= 1
    assert f["A"].flags.c_contiguous
    again = R.random_inputs(example("gemm"), {"M": 64, "N": 8, "K": 64}, seed=7)
    np.testing.assert_array_equal(f["A"], again["A"])
    other = R.random_inputs(example("gemm"), {"M": 64, "N": 8, "K": 64}, seed=8)
    assert not np.array_equal(f["A"], other["A"])


def test_reduction_lengths():
    assert R.reduction_lengths(example("gemm")) == {"C": 1024}
    assert R.reduction_lengths(example("blur"), {"H": 8, "W": 8}) == {"bx": 1, "out": 2}
    assert R.reduction_lengths(example("conv2d")) == {"O": 64 * 9}
    assert R.reduction_lengths(example("softmax")) == {"P": 1024}
    assert R.reduction_lengths(example("elementwise")) == {"t1": 1, "t2": 2, "out": 3}
    kernel = lowered(example("gemm"))
    assert R.reduction_lengths(kernel, {"K": 17}) == {"C": 17}


# --- the engine's paths agree ----------------------------------------------------------------------


def test_einsum_fast_path_agrees_with_the_grid_path(monkeypatch):
    doc = example("gemm")
    sizes = {"M": 9, "N": 6, "K": 11}
    x = R.random_inputs(doc, sizes)
    fast = R.evaluate_design(doc, x, sizes)["C"]
    monkeypatch.setattr(E, "_try_einsum", lambda nest: False)
    slow = R.evaluate_design(doc, x, sizes)["C"]
    assert_close(fast, slow, n=11)


@pytest.mark.parametrize("name", ["blur", "rowsum", "gemm", "elementwise"])
def test_chunked_evaluation_agrees(monkeypatch, name):
    doc = example(name)
    x = R.random_inputs(doc, SMALL[name])
    whole = R.evaluate_design(doc, x, SMALL[name])
    monkeypatch.setattr(E, "_try_einsum", lambda nest: False)
    monkeypatch.setattr(E, "CHUNK_ELEMENTS", 4)  # blocks of a few points: every loop is split
    chunked = R.evaluate_design(doc, x, SMALL[name])
    for k in whole:
        assert_close(chunked[k], whole[k], n=8)


def test_chunked_max_and_offsets(monkeypatch):
    doc = parse_design(OFFSETS)
    x = R.random_inputs(doc, seed=4)
    whole = R.evaluate_design(doc, x)
    monkeypatch.setattr(E, "CHUNK_ELEMENTS", 3)
    chunked = R.evaluate_design(doc, x)
    for k in whole:
        assert_close(chunked[k], whole[k], n=4)


# --- design == tensorop ------------------------------------------------------------------------------

EXTRA_DOCS = {"reductions": REDUCTIONS, "imax": IMAX, "offsets": OFFSETS, "conv_nhwc": CONV_NHWC,
              "conv_s2": CONV_STRIDE2, "t3": TRANSPOSE3, "sm": SOFTMAX_AXES}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SMALL) + sorted(EXTRA_DOCS))
def test_design_and_lowered_tensorop_agree(name):
    doc = example(name) if name in SMALL else parse_design(EXTRA_DOCS[name])
    sizes = SMALL.get(name)
    kernel = lowered(doc)
    x = R.random_inputs(doc, sizes, seed=11)
    assert x.keys() == R.random_inputs(kernel, sizes, seed=11).keys()
    expected = R.evaluate_design(doc, x, sizes)
    actual = R.evaluate_tensorop(kernel, x, sizes)
    assert actual.keys() == expected.keys()
    for k in expected:
        assert actual[k].dtype == expected[k].dtype
        np.testing.assert_array_equal(actual[k], expected[k])


def test_tensorop_temps_on_request():
    kernel = lowered(example("blur"))
    x = R.random_inputs(kernel, SMALL["blur"])
    out = R.evaluate_tensorop(kernel, x, SMALL["blur"], include_temps=True)
    assert set(out) == {"out", "bx"}
    assert set(R.evaluate_tensorop(kernel, x, SMALL["blur"])) == {"out"}


def test_tensorop_generic_with_a_general_fold():
    """A body that is not `out <combine> f(inputs)` runs sequentially over the reduction loop."""
    kernel = lowered(example("rowsum"))
    text = str(kernel)
    assert "%0 = arith.addf %s_1, %X_1 : f32" in text
    text = text.replace(
        "%0 = arith.addf %s_1, %X_1 : f32",
        "%h = arith.constant 5.000000e-01 : f32\n      %m = arith.mulf %s_1, %h : f32\n"
        "      %0 = arith.addf %m, %X_1 : f32",
    )
    module = Parser(make_context(), text).parse_module()
    x = R.random_inputs(module, {"M": 4, "N": 6})
    out = R.evaluate_tensorop(module, x, {"M": 4, "N": 6})["s"]
    expected = np.zeros(4, np.float32)
    for j in range(6):
        expected = expected * np.float32(0.5) + x["X"][:, j]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("name", ["rowsum", "gemm"])
@pytest.mark.parametrize("einsum", [True, False])
def test_tensorop_reduction_combines_with_what_the_output_held(monkeypatch, name, einsum):
    """A generic reduces into the output's current elements: the fill's value is where the sum starts."""
    if not einsum:
        monkeypatch.setattr(E, "_try_einsum", lambda nest: False)
    text = str(lowered(example(name)))
    assert "value = 0.000000e+00 : f32" in text
    module = Parser(
        make_context(), text.replace("value = 0.000000e+00 : f32", "value = 2.500000e+00 : f32")
    ).parse_module()
    sizes = {"rowsum": {"M": 4, "N": 6}, "gemm": {"M": 3, "N": 4, "K": 5}}[name]
    x = R.random_inputs(module, sizes)
    out = R.evaluate_tensorop(module, x, sizes)
    expected = f64(x["X"]).sum(axis=1) if name == "rowsum" else f64(x["A"]) @ f64(x["B"])
    assert_close(next(iter(out.values())), expected + 2.5, n=6)


def test_chunk_sizes_keep_inner_loops_whole():
    assert _chunk_sizes([10, 20, 30], 100) == [1, 3, 30]
    assert _chunk_sizes([10, 20, 30], 10**6) == [10, 20, 30]
    assert _chunk_sizes([5, 1000], 10) == [1, 10]


def test_tensorop_output_map_may_permute_loops():
    kernel = lowered(
        parse_design("""design tr { sizes { M = 3, N = 4 }
      tensor A : f32[M, N] input  tensor B : f32[N, M] output  B[j, i] = A[i, j] * 2 }""")
    )
    text = str(kernel)
    assert "affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>" in text
    # Swap the loop order: loops (i, j) now, the output indexed (j, i) by a permuted map.
    text = text.replace(
        "domain = affine_map<()[s0, s1] -> (s1, s0)>", "domain = affine_map<()[s0, s1] -> (s0, s1)>"
    ).replace(
        "affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>",
        "affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>",
    )
    module = Parser(make_context(), text).parse_module()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(R.evaluate_tensorop(module, {"A": a})["B"], 2 * a.T)


def test_printed_kernel_round_trips_through_the_oracle():
    kernel = lowered(example("conv2d"))
    buf = __import__("io").StringIO()
    Printer(stream=buf).print_op(kernel)
    again = Parser(make_context(), buf.getvalue()).parse_module()
    x = R.random_inputs(again, SMALL["conv2d"])
    np.testing.assert_array_equal(
        R.evaluate_tensorop(again, x, SMALL["conv2d"])["O"],
        R.evaluate_design(example("conv2d"), x, SMALL["conv2d"])["O"],
    )


# --- tolerance and comparison ------------------------------------------------------------------------


def test_tolerance():
    assert R.tolerance("i32", 1000) == (0.0, 0.0)
    eps = np.finfo(np.float32).eps
    assert R.tolerance("f32", 1) == pytest.approx((16 * eps, 16 * eps))
    atol, rtol = R.tolerance("f32", 1024, scale=10.0)
    assert rtol == pytest.approx(4 * eps * 32) and atol == pytest.approx(10 * rtol)
    assert R.tolerance("f64", 1024)[1] < 1e-13


def test_compare_accepts_a_sequential_f32_sum_and_rejects_a_dropped_term():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(256, 4096)).astype(np.float32)
    expected = f64(x).sum(axis=1).astype(np.float32)
    sequential = np.cumsum(x, axis=1, dtype=np.float32)[:, -1]  # the worst ordinary order
    assert R.compare(sequential, expected, "f32", 4096).ok
    dropped = sequential.copy()
    dropped[17] -= x[17, 100]
    report = R.compare(dropped, expected, "f32", 4096)
    assert not report.ok and report.n_bad == 1 and report.worst == (17,)
    assert "MISMATCH in 1 element" in str(report)


def test_compare_accepts_f32_blas_gemm_and_rejects_an_off_by_one():
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, size=(128, 1024)).astype(np.float32)
    b = rng.uniform(-1, 1, size=(1024, 96)).astype(np.float32)
    expected = (f64(a) @ f64(b)).astype(np.float32)
    assert R.compare(a @ b, expected, "f32", 1024).ok
    shifted = a[:, :-1] @ b[1:]  # a wrong index: k paired with k + 1
    assert not R.compare(shifted, expected, "f32", 1024).ok
    wrong = (a @ b).copy()
    wrong[5, 7] *= 1 + 1e-3
    assert not R.compare(wrong, expected, "f32", 1024).ok


def test_compare_nans_infs_integers_and_shapes():
    e = np.array([1.0, np.nan, np.inf, 0.0], np.float32)
    assert R.compare(e.copy(), e, "f32").ok
    assert not R.compare(np.array([1.0, 2.0, np.inf, 0.0], np.float32), e, "f32").ok
    assert not R.compare(np.array([1.0, np.nan, -np.inf, 0.0], np.float32), e, "f32").ok
    i = np.array([1, -2, 3], np.int32)
    assert R.compare(i.copy(), i, "i32", 100).ok
    off = R.compare(i + np.array([0, 1, 0], np.int32), i, "i32", 100)
    assert not off.ok and off.max_abs == 1 and off.worst == (1,)
    assert "shape" in str(R.compare(i[:2], i, "i32"))


def test_compare_is_scale_invariant():
    rng = np.random.default_rng(2)
    e = rng.uniform(-1, 1, 1000).astype(np.float32)
    a = e + np.float32(1e-6)
    for scale in (1e-20, 1.0, 1e20):
        assert R.compare(a * np.float32(scale), e * np.float32(scale), "f32", 100).ok == R.compare(a, e, "f32", 100).ok


# --- property: random statements against a naive loop evaluator --------------------------------------

I32_MIN = -(2**31)


def wrap32(v: int) -> int:
    return (v - I32_MIN) % 2**32 + I32_MIN


class Naive:
    """A pure-Python evaluator of generated expression trees, element by element."""

    def __init__(self, dtype: str, arrays: dict[str, np.ndarray]):
        self.dtype, self.arrays = dtype, arrays
        self.scalar = {"f32": np.float32, "f64": np.float64}.get(dtype)

    def ev(self, node, env):
        kind = node[0]
        if kind == "read":
            _, name, index_fns, _texts = node
            return self.cast(self.arrays[name][tuple(fn(env) for fn in index_fns)])
        if kind == "const":
            return self.cast(node[1])
        if kind == "neg":
            v = self.ev(node[1], env)
            return -v if self.scalar else wrap32(-v)
        if kind == "call":
            args = [self.ev(a, env) for a in node[2]]
            fn = node[1]
            if fn in ("max", "min"):
                return (
                    (np.maximum if fn == "max" else np.minimum)(*args)
                    if self.scalar
                    else (max if fn == "max" else min)(*args)
                )
            return np.exp(args[0]) if fn == "exp" else np.sqrt(args[0])
        op, a, b = node[1], self.ev(node[2], env), self.ev(node[3], env)
        if self.scalar:
            return {"+": a + b, "-": a - b, "*": a * b}[op] if op != "/" else a / b
        if op == "/":
            q = abs(a) // abs(b)
            return wrap32(q if (a < 0) == (b < 0) else -q)
        return wrap32({"+": a + b, "-": a - b, "*": a * b}[op])

    def cast(self, v):
        return self.scalar(v) if self.scalar else int(v)


def text_of(node) -> str:
    kind = node[0]
    if kind == "read":
        return node[1] + "[" + ", ".join(t for t, _ in node[3]) + "]" if len(node) > 3 else node[1]
    if kind == "const":
        return repr(node[1]) if not isinstance(node[1], int) or node[1] >= 0 else f"(0 - {-node[1]})"
    if kind == "neg":
        return f"-({text_of(node[1])})"
    if kind == "call":
        return f"{node[1]}({', '.join(text_of(a) for a in node[2])})"
    return f"({text_of(node[2])} {node[1]} {text_of(node[3])})"


# Reads over loops i, j (the target's) and k (a reduction index): (tensor, index texts).  `k` ranges
# over the dimensions it indexes directly, all of size K; `w` (size K + 1) is read only through expressions.
READS_IJ = [
    ("a", ["i", "j"]),
    ("p", ["i + 2", "2 * j + 1"]),
    ("p", ["i", "j / 2"]),
    ("p", ["i + 1", "j % 2"]),
]
READS_K = [("b", ["i", "k"]), ("c", ["k", "j"]), ("v", ["k"]), ("w", ["k + 1"]), ("w", ["k / 2"])]
DIRECT_K = [("b", ["i", "k"]), ("c", ["k", "j"]), ("v", ["k"])]  # of size K


def index_fn(text: str):
    code = compile(text.replace("/", "//"), text, "eval")
    return lambda env: eval(code, {}, env)


def read_node(name: str, texts: list[str]):
    return ("read", name, [index_fn(t_) for t_ in texts], [(t_, None) for t_ in texts])


@st.composite
def statements(draw):
    dtype = draw(st.sampled_from(["f32", "f64", "i32"]))
    kind = draw(st.sampled_from(["=", "+=", "max="]))
    use_k = kind != "=" and draw(st.booleans())
    pool = READS_IJ + (READS_K if use_k else [])
    floats = dtype != "i32"

    def leaf():
        if draw(st.integers(0, 3)) == 0:
            value = draw(st.sampled_from([0.5, 2.0, 3.0, 1.5]) if floats else st.integers(-3, 5))
            return ("const", value)
        return read_node(*draw(st.sampled_from(pool)))

    def expr(depth):
        if depth == 0 or draw(st.integers(0, 2)) == 0:
            return leaf()
        choice = draw(st.sampled_from(["+", "-", "*", "/", "max", "min", "neg"] + (["exp", "sqrt"] if floats else [])))
        if choice == "neg":
            return ("neg", expr(depth - 1))
        if choice == "/":  # a divisor that is never zero: e * e + 1 (no int32 square is -1)
            e = expr(depth - 1)
            one = ("const", 1.0 if floats else 1)
            return ("bin", "/", expr(depth - 1), ("bin", "+", ("bin", "*", e, e), one))
        if choice in ("max", "min"):
            return ("call", choice, [expr(depth - 1), expr(depth - 1)])
        if choice == "exp":  # capped, so that nothing overflows
            return ("call", "exp", [("call", "min", [expr(depth - 1), ("const", 3.0)])])
        if choice == "sqrt":
            return ("call", "sqrt", [("call", "max", [expr(depth - 1), ("const", 0.0)])])
        return ("bin", choice, expr(depth - 1), expr(depth - 1))

    tree = expr(3)
    if use_k:  # k must index some dimension directly to have a range
        tree = ("bin", draw(st.sampled_from(["*", "+", "-"])), tree, read_node(*draw(st.sampled_from(DIRECT_K))))
    sizes = {"N": draw(st.integers(1, 4)), "M": draw(st.integers(1, 4)), "K": draw(st.integers(1, 4))}
    return dtype, kind, tree, sizes, draw(st.integers(0, 2**16))


def document(dtype: str, kind: str, tree) -> str:
    return f"""design prop {{
  sizes {{ N = 3, M = 3, K = 3 }}
  tensor a : {dtype}[N, M] input
  tensor b : {dtype}[N, K] input
  tensor c : {dtype}[K, M] input
  tensor p : {dtype}[N + 2, 2 * M + 1] input
  tensor v : {dtype}[K] input
  tensor w : {dtype}[K + 1] input
  tensor out : {dtype}[N, M] output
  out[i, j] {kind} {text_of(tree)}
}}"""


def uses_k(tree) -> bool:
    if tree[0] == "read":
        return any("k" in t_ for t_, _ in tree[3])
    if tree[0] == "const":
        return False
    children = tree[2] if tree[0] == "call" else [tree[1]] if tree[0] == "neg" else [tree[2], tree[3]]
    return any(uses_k(c) for c in children)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(statements())
def test_random_statements_agree_with_a_naive_loop_evaluator(case):
    dtype, kind, tree, sizes, seed = case
    doc = parse_design(document(dtype, kind, tree))
    x = R.random_inputs(doc, sizes, seed=seed)
    with np.errstate(all="ignore"):
        got = R.evaluate_design(doc, x, sizes)["out"]
        naive = Naive(dtype, x)
        expected = np.zeros((sizes["N"], sizes["M"]), dtype=got.dtype)
        ks = range(sizes["K"]) if uses_k(tree) else [None]
        for i, j in itertools.product(range(sizes["N"]), range(sizes["M"])):
            values = [naive.ev(tree, {"i": i, "j": j, "k": k}) for k in ks]
            if kind == "=":
                (value,) = values
            elif kind == "+=":
                value = wrap32(sum(values)) if dtype == "i32" else sum(float(v) for v in values)
            else:
                value = max(values) if dtype == "i32" else values[0]
                if dtype != "i32":
                    for v in values[1:]:
                        value = np.maximum(value, v)
            expected[i, j] = value
    n = sizes["K"] if uses_k(tree) else 1
    report = R.compare(got, expected, dtype, n)
    assert report.ok, f"{document(dtype, kind, tree)}\n{sizes}\n{report}"
    kernel = R.evaluate_tensorop(lowered(doc), x, sizes)["out"]
    np.testing.assert_array_equal(kernel, got)


def test_naive_evaluator_sanity():
    """The property's evaluator itself: C division and wrapping."""
    naive = Naive("i32", {})
    assert naive.ev(("bin", "/", ("const", -7), ("const", 2)), {}) == -3
    assert naive.ev(("bin", "*", ("const", 65536), ("const", 32768)), {}) == I32_MIN
    assert math.isclose(Naive("f32", {}).ev(("bin", "/", ("const", 1.0), ("const", 3.0)), {}), 1 / 3, rel_tol=1e-7)
