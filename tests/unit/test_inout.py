"""In-out tensors (`tensor C : f32[M, N] inout`) through every level: a `+=` accumulates onto
the tensor's value, an `=` may read the element it writes, anything else that reads the target
is refused at the read; the C updates the caller's buffer in place, the Python call returns an
updated copy, the oracles (numpy, loop interpreter, xDSL's interpreter) agree, and raising
gives the statements back."""

from __future__ import annotations

import numpy as np
import pytest

import irkit
from irkit.frontend import parse_design
from tests.unit.oracle_agreement import (
    agrees_with_the_oracle,
    builds_clean_and_runs_asan_clean,
    irkit_says,
    raised_document,
    semantic_check_agrees,
)

GEMM_UPDATE = """design gemmupd {
  sizes { M = 67, N = 45, K = 33 }
  scalar alpha : f32 input
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] inout
  C[i, j] += alpha * A[i, k] * B[k, j]
  schedule C {
    tile i, j by 8, 16
    reorder io, jo, k, ii, ji
    parallel io
    vectorize ji by 16
    unroll_jam ii by 4
  }
}
"""

SCALE = """design scale {
  sizes { M = 67, N = 45 }
  scalar beta : f64 input
  tensor X : f64[M, N] input
  tensor D : f64[M, N] inout
  D[i, j] = max(beta * D[i, j], X[i, j])
  schedule D {
    split i by 8 -> io, ii
    parallel io
    vectorize j by 8
  }
}
"""

CHAIN = """design chain {
  sizes { N = 50 }
  tensor x : i32[N] input
  tensor s : i32[N] inout
  tensor m : i32[N] inout
  tensor t : i32[N] output
  t[i] = s[i] * 2
  s[i] = s[i] + x[i]
  m[i] max= s[i] + x[j]
}
"""

ALL = [GEMM_UPDATE, SCALE, CHAIN]


@pytest.mark.parametrize(
    "text, sizes",
    [(GEMM_UPDATE, {"M": 67, "N": 45, "K": 33}), (GEMM_UPDATE, {"M": 5, "N": 3, "K": 2}), (SCALE, {"M": 67, "N": 45}),
     (SCALE, {"M": 9, "N": 1}), (CHAIN, {"N": 50}), (CHAIN, {"N": 1})],
)  # fmt: skip
def test_inout_runs_as_the_oracle_says(text, sizes):
    agrees_with_the_oracle(text, sizes, name="inout.design")


def test_an_inout_tensor_is_given_updated_and_returned():
    kernel = irkit.compile(CHAIN, name="chain.design")
    assert "int32_t *restrict s" in kernel.c_source and "const int32_t *restrict s" not in kernel.c_source
    assert kernel.inputs() == ["x", "s", "m"] and kernel.outputs() == ["s", "m", "t"]
    x = np.arange(4, dtype=np.int32)
    s = np.full(4, 10, dtype=np.int32)
    m = np.zeros(4, dtype=np.int32)
    out = kernel({"N": 4}, x=x, s=s, m=m)
    np.testing.assert_array_equal(out["t"], [20, 20, 20, 20])  # s before its statement
    np.testing.assert_array_equal(out["s"], [10, 11, 12, 13])
    np.testing.assert_array_equal(out["m"], [13, 14, 15, 16])  # max of 0 and s[i] + x[j]
    np.testing.assert_array_equal(s, [10, 10, 10, 10])  # the caller's array is not touched


def test_the_kernel_updates_the_buffer_in_place():
    kernel = irkit.compile(SCALE, name="scale.design")
    arrays = {"beta": 0.5, "X": np.zeros((3, 2)), "D": kernel.compiled.empty("D", {"M": 3, "N": 2})}
    arrays["D"][...] = [[2, -2], [4, 6], [-8, 1]]
    kernel.compiled(arrays, {"M": 3, "N": 2})
    np.testing.assert_array_equal(arrays["D"], [[1, 0], [2, 3], [0, 0.5]])


@pytest.mark.parametrize("engine", ["c", "interp"])
def test_the_semantic_check_runs_inout_on_both_engines(engine, tmp_path):
    semantic_check_agrees(GEMM_UPDATE, engine, tmp_path)


def test_xdsl_interpreter_agrees_on_inout_and_scalars():
    from irkit.raising.verify import lowered_loops
    from tests.unit.test_export_affine import _agree

    _agree(lowered_loops(parse_design(GEMM_UPDATE, "gemmupd.design")), {"M": 5, "N": 7, "K": 3})
    _agree(lowered_loops(parse_design(CHAIN, "chain.design")), {"N": 6})


@pytest.mark.parametrize("text", ALL)
def test_inout_prints_back_and_verifies(text):
    from irkit.backends.design_text import print_design
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(text, "inout.design")
    printed = print_design(module)
    assert print_design(parse_design(printed, "printed.design")) == printed
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []


@pytest.mark.parametrize("text", ALL)
def test_raising_gives_the_updates_back(text):
    printed = raised_document(text)
    statements = [line.strip() for line in text.splitlines() if "] = " in line or "+=" in line or "max=" in line]
    assert all(s in printed for s in statements), printed
    assert " inout" in printed


BAD = [
    ("D[i, j] = max(beta * D[i, j], X[i, j])", "D[i, j] = max(beta * D[i, j + 1], X[i, j])",
     "reads D[i, j + 1], but a statement may read its in-out target only at the element it writes (D[i, j])"),
    ("D[i, j] = max(beta * D[i, j], X[i, j])", "D[i, j] = max(beta * D[j, i], X[i, j])",
     "reads D[j, i], but a statement may read its in-out target only"),
    ("D[i, j] = max(beta * D[i, j], X[i, j])", "D[i, j] += beta * D[i, j] * X[i, k]",
     "a '+=' into in-out 'D' reads D[i, j]; the reduction starts from D's current value already"),
    ("tensor D : f64[M, N] inout", "tensor D : f64[M, N] output",
     "statement reads 'D', the tensor it writes; use '+=' or 'max=' to accumulate, or declare it inout"),
]  # fmt: skip


@pytest.mark.parametrize("old, new, message", BAD)
def test_a_read_of_the_target_elsewhere_is_a_located_error(old, new, message, capsys, tmp_path):
    status, err, path = irkit_says(SCALE.replace(old, new), tmp_path)
    assert status != 0 and message in err and f"{path}:6:" in err, err


def test_an_inout_never_written_is_a_warning(capsys, tmp_path):
    from irkit.tools.cli import main

    path = tmp_path / "w.design"
    path.write_text(CHAIN.replace("  m[i] max= s[i] + x[j]\n", "  t2[i] = m[i]\n").replace(
        "tensor t : i32[N] output", "tensor t : i32[N] output\n  tensor t2 : i32[N] output"))  # fmt: skip
    assert main(["check", str(path)]) == 0
    assert "inout 'm' is never written; declare it input" in capsys.readouterr().err


def test_inout_builds_warning_free_and_runs_asan_clean():
    outputs = builds_clean_and_runs_asan_clean(ALL, [(GEMM_UPDATE, {"M": 9, "N": 37, "K": 5}), (CHAIN, {"N": 7})])
    assert "checksum C" in outputs[0] and "checksum s" in outputs[1]
