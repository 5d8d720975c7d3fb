"""Scalars (`scalar alpha : f32 input`, passed by value) and sizes read as values (`X[i] / N`)
through every level: checked with located errors, printed back, lowered to C that takes the
scalar by value and agrees with the numpy oracle, raised back by `irkit verify`, run by both
engines of the semantic check, fed from `--inputs`, and priced."""

from __future__ import annotations

import numpy as np
import pytest

import irkit
from irkit.frontend import parse_design
from irkit.perf import load_hardware, predict
from tests.unit.oracle_agreement import (
    agrees_with_the_oracle,
    builds_clean_and_runs_asan_clean,
    irkit_says,
    raised_document,
    semantic_check_agrees,
)

AXPBY = """design axpby {
  sizes { N = 1000 }
  scalar alpha : f32 input
  tensor X : f32[N] input
  scalar beta : f32 input
  tensor Y : f32[N] input
  tensor Z : f32[N] output
  Z[i] = alpha * X[i] + beta * Y[i]
}
"""

ROW_NORM = """design rownorm {
  sizes { M = 37, N = 61 }
  tensor X : f32[M, N] input
  scalar eps : f32 input
  tensor mu : f32[M] temp
  tensor var : f32[M] temp
  tensor Y : f32[M, N] output
  mu[i] += X[i, j] / N
  var[i] += (X[i, j] - mu[i]) * (X[i, j] - mu[i]) / N
  Y[i, j] = (X[i, j] - mu[i]) / sqrt(var[i] + eps)
  schedule Y {
    parallel i
    vectorize j by 8
  }
}
"""

SCALED_GEMM = """design sgemm {
  sizes { M = 24, N = 40, K = 33 }
  scalar alpha : f64 input
  tensor A : f64[M, K] input
  tensor B : f64[K, N] input
  tensor C : f64[M, N] output
  C[i, j] += alpha * A[i, k] * B[k, j]
  schedule C {
    tile i, j by 8, 8
    parallel io
  }
}
"""

INTEGERS = """design ishift {
  sizes { N = 77 }
  scalar step : i32 input
  tensor a : i32[N] input
  tensor b : i32[N] output
  b[i] = a[i] * step + N - max(step, 3)
}
"""

ALL = [AXPBY, ROW_NORM, SCALED_GEMM, INTEGERS]


@pytest.mark.parametrize(
    "text, sizes",
    [(AXPBY, {"N": 1000}), (AXPBY, {"N": 7}), (ROW_NORM, {"M": 37, "N": 61}), (ROW_NORM, {"M": 3, "N": 130}),
     (SCALED_GEMM, {"M": 24, "N": 40, "K": 33}), (SCALED_GEMM, {"M": 9, "N": 17, "K": 5}), (INTEGERS, {"N": 77})],
)  # fmt: skip
def test_scalars_and_sizes_run_as_the_oracle_says(text, sizes):
    agrees_with_the_oracle(text, sizes, name="scalars.design")


def test_a_scalar_is_passed_by_value_and_given_by_keyword():
    kernel = irkit.compile(AXPBY, name="axpby.design")
    assert "const float alpha" in kernel.c_source and "const float beta" in kernel.c_source
    assert kernel.inputs() == ["alpha", "X", "beta", "Y"]  # argument order: declaration order
    x = np.arange(5, dtype=np.float32)
    y = np.ones(5, dtype=np.float32)
    got = kernel({"N": 5}, alpha=2.0, X=x, beta=np.float32(-3), Y=y)["Z"]
    np.testing.assert_array_equal(got, 2 * x - 3)
    np.testing.assert_array_equal(kernel.reference({"alpha": 2.0, "X": x, "beta": -3, "Y": y}, {"N": 5})["Z"], got)


def test_a_size_is_a_value_in_the_statement_type():
    kernel = irkit.compile(INTEGERS, name="ishift.design")
    a = np.arange(4, dtype=np.int32)
    got = kernel({"N": 4}, step=5, a=a)["b"]
    np.testing.assert_array_equal(got, a * 5 + 4 - 5)


def test_a_scalar_that_is_not_a_number_is_refused_by_name():
    from irkit.diagnostics import DiagnosticError

    kernel = irkit.compile(AXPBY, name="axpby.design")
    x = np.zeros(3, dtype=np.float32)
    with pytest.raises(DiagnosticError, match="scalar 'alpha': expected one f32 number, got an array of shape"):
        kernel({"N": 3}, alpha=np.ones(3), X=x, beta=1.0, Y=x)
    with pytest.raises(DiagnosticError, match="no value for scalar 'beta'"):
        kernel({"N": 3}, alpha=1.0, X=x, Y=x)


def test_random_scalars_are_positive_numbers():
    from irkit.oracle import random_inputs

    inputs = random_inputs(parse_design(ROW_NORM, "rownorm.design"), seed=1)
    assert inputs["eps"].shape == () and inputs["eps"].dtype == np.float32
    assert 0.5 <= float(inputs["eps"]) < 1.5


@pytest.mark.parametrize("text", ALL)
def test_scalars_print_back_as_written_and_verify(text):
    from irkit.backends.design_text import print_design
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(text, "scalars.design")
    printed = print_design(module)
    for line in text.splitlines():
        if line.strip().startswith("scalar") or "=" in line and "[" in line:
            assert line.strip() in [p.strip() for p in printed.splitlines()]
    assert print_design(parse_design(printed, "printed.design")) == printed
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []


@pytest.mark.parametrize("text", ALL)
def test_raising_the_loops_gives_the_scalars_and_sizes_back(text):
    printed = raised_document(text)
    for line in text.splitlines():
        if line.strip().startswith("scalar"):
            assert line.strip() in printed
    statements = [line.strip() for line in text.splitlines() if "] = " in line or "] += " in line]
    assert all(s in printed for s in statements), printed


@pytest.mark.parametrize("engine", ["c", "interp"])
def test_the_semantic_check_runs_scalars_on_both_engines(engine, tmp_path):
    semantic_check_agrees(ROW_NORM, engine, tmp_path)


def test_inputs_file_gives_the_scalars(tmp_path, capsys):
    from irkit.tools.cli import main

    path = tmp_path / "axpby.design"
    path.write_text(AXPBY)
    x = np.arange(6, dtype=np.float32)
    np.savez(tmp_path / "in.npz", alpha=np.float32(0.5), X=x, beta=np.float32(2), Y=x)
    assert main(["run", str(path), "--size", "N=6", "--inputs", str(tmp_path / "in.npz"), "--check",
                 "--outputs", str(tmp_path / "out.npz")]) == 0  # fmt: skip
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_array_equal(out["Z"], 2.5 * x)


def test_scalars_are_priced():
    hw = load_hardware("generic", document=None)
    assert predict(ROW_NORM, {"M": 512, "N": 512}, hw).seconds > 0


BAD = [
    ("scalar alpha : f32 input", "scalar alpha : f32 output", 3,
     "scalar 'alpha' is output, but a scalar is an input"),
    ("Z[i] = alpha * X[i] + beta * Y[i]", "Z[i] = alpha * X + beta * Y[i]", 8,
     "'X' is a tensor: read its elements as X[indices]"),
    ("Z[i] = alpha * X[i] + beta * Y[i]", "Z[i] = alph * X[i] + beta * Y[i]", 8,
     "'alph' is not a value here"),
    ("scalar beta : f32 input", "scalar beta : f64 input", 8,
     "scalar 'beta' is f64 but the statement computes f32"),
    ("scalar beta : f32 input", "scalar X : f32 input", 5, "'X' is declared twice (first as a tensor"),
    ("scalar beta : f32 input", "scalar N : f32 input", 5, "'N' is declared twice (first as a size"),
]  # fmt: skip


@pytest.mark.parametrize("old, new, line, message", BAD)
def test_a_wrong_scalar_is_a_located_error(old, new, line, message, capsys, tmp_path):
    status, err, path = irkit_says(AXPBY.replace(old, new), tmp_path)
    assert status != 0 and message in err and f"{path}:{line}:" in err, err


def test_an_unused_scalar_is_a_warning(capsys, tmp_path):
    from irkit.tools.cli import main

    path = tmp_path / "unused.design"
    path.write_text(AXPBY.replace("alpha * X[i]", "X[i]"))
    assert main(["check", str(path)]) == 0
    assert "scalar 'alpha' is never read" in capsys.readouterr().err


def test_scalars_build_warning_free_and_run_asan_clean():
    builds_clean_and_runs_asan_clean(ALL, [(ROW_NORM, {"M": 5, "N": 37}), (AXPBY, {"N": 77})])

REVERSED = """design flip {
  sizes { N = 13, M = 5 }
  tensor X : f32[N, M] input
  tensor Y : f32[N, M] output
  tensor last : f32[M] output
  Y[i, j] = X[N - 1 - i, j] + X[i, M - 1 - j] / M
  last[j] = X[N - 1, j]
  schedule Y {
    parallel i
    vectorize j by 4
  }
}
"""


@pytest.mark.parametrize("sizes", [{"N": 13, "M": 5}, {"N": 1, "M": 1}, {"N": 2, "M": 33}])
def test_size_dependent_indices_run_as_the_oracle_says(sizes):
    agrees_with_the_oracle(REVERSED, sizes, name="flip.design")


def test_a_reversed_read_reverses():
    kernel = irkit.compile(REVERSED, name="flip.design")
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = kernel({"N": 3, "M": 2}, X=x)
    np.testing.assert_array_equal(out["Y"], x[::-1, :] + x[:, ::-1] / 2)
    np.testing.assert_array_equal(out["last"], x[2])


def test_size_dependent_indices_print_back_verify_and_raise():
    from irkit.backends.design_text import print_design
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(REVERSED, "flip.design")
    assert "Y[i, j] = X[N - 1 - i, j] + X[i, M - 1 - j] / M" in print_design(module)
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []
    raised = parse_design(raised_document(REVERSED), "raised.design")
    assert [d.message for d in compare_modules(raised, lowered_loops(module))] == []


def test_a_size_dependent_index_past_the_end_is_a_located_error(capsys, tmp_path):
    from irkit.tools.cli import main

    path = tmp_path / "bad.design"
    path.write_text(REVERSED.replace("X[N - 1 - i, j] +", "X[N - i, j] +"))
    assert main(["check", str(path)]) != 0
    err = capsys.readouterr().err
    assert "index 'N - i' of 'X' (dimension 1) reaches N, past the last element N - 1" in err and f"{path}:6:" in err
