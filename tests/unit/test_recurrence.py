"""Recurrences (`carry i, j`): a statement whose iterations read what earlier ones wrote, in the
order the clause gives.  Checked (every loop listed, '=', the target in-out, only order-keeping
directives), lowered to loops in that order, run by C, the numpy oracle (point by point) and the
loop interpreter alike, raised back with its carry, and refused where a schedule would reorder it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irkit
from irkit.frontend import parse_design
from tests.unit.oracle_agreement import (
    builds_clean_and_runs_asan_clean,
    irkit_says,
    raised_document,
    semantic_check_agrees,
)

SEIDEL = (Path(__file__).parents[2] / "examples" / "seidel_2d.design").read_text()

FLOYD = """design floyd_warshall {
  sizes { N = 30 }
  tensor P : f32[N, N] inout
  P[i, j] = min(P[i, j], P[i, k] + P[k, j]) carry k, i, j
}
"""

SCAN = """design scan {
  sizes { N = 50 }
  tensor a : f64[N] input
  tensor x : f64[N] inout
  x[i] = x[i - 1] + a[i] where i >= 1 carry i
  schedule x {
    split i by 8 -> io, ii
    unroll ii by 2
  }
}
"""


def seidel_numpy(a: np.ndarray, steps: int) -> np.ndarray:
    a = a.astype(np.float64).copy()
    n = len(a)
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                a[i, j] = a[i - 1 : i + 2, j - 1 : j + 2].sum() / 9.0  # the row above is this sweep's
    return a


def floyd_numpy(p: np.ndarray) -> np.ndarray:
    p = p.astype(np.float64).copy()
    for k in range(len(p)):
        for i in range(len(p)):
            for j in range(len(p)):
                p[i, j] = min(p[i, j], p[i, k] + p[k, j])
    return p


@pytest.mark.parametrize("scheduled", [True, False])
@pytest.mark.parametrize("sizes", [{"T": 2, "N": 13}, {"T": 1, "N": 3}, {"T": 3, "N": 2}])
def test_seidel_runs_as_the_loops_of_its_definition(scheduled, sizes):
    text = SEIDEL if scheduled else SEIDEL.replace("    unroll j by 4\n", "")
    kernel = irkit.compile(text, name="seidel_2d.design")
    a = np.random.default_rng(sizes["N"]).standard_normal((sizes["N"],) * 2)
    want = seidel_numpy(a, sizes["T"])
    np.testing.assert_allclose(kernel(sizes, A=a)["A"], want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernel.reference({"A": a}, sizes)["A"], want, rtol=1e-12, atol=1e-12)


def test_floyd_warshall_keeps_k_outermost():
    kernel = irkit.compile(FLOYD, name="fw.design")
    p = (np.random.default_rng(3).random((11, 11)) * 10).astype(np.float32)
    np.testing.assert_allclose(kernel({"N": 11}, P=p)["P"], floyd_numpy(p), rtol=1e-5)
    np.testing.assert_allclose(kernel.reference({"P": p}, {"N": 11})["P"], floyd_numpy(p), rtol=1e-5)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 40))
def test_a_scan_is_a_prefix_sum_at_any_length(n):
    kernel = irkit.compile(SCAN, name="scan.design")
    a = np.random.default_rng(n).standard_normal(n)
    x = np.random.default_rng(n + 1).standard_normal(n)
    want = x[0] + np.concatenate([[0.0], np.cumsum(a[1:])])
    np.testing.assert_allclose(kernel({"N": n}, a=a, x=x)["x"], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("text", [SEIDEL, FLOYD, SCAN])
def test_recurrences_print_back_raise_back_and_verify(text):
    from irkit.backends.design_text import print_design
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(text, "rec.design")
    printed = print_design(module)
    assert " carry " in printed and print_design(parse_design(printed, "p.design")) == printed
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []
    raised = raised_document(text)
    carry = next(line for line in printed.splitlines() if " carry " in line).split(" carry ")[1]
    assert f" carry {carry}" in raised, raised


def test_raising_recognises_a_recurrence_from_the_loops_alone():
    """A store that reads its own buffer at another element raises as an ordered generic (a `carry`);
    the same statement reading another tensor does not."""
    from irkit.dialects import tensorop as t
    from irkit.raising.to_tensorop import raise_kernel
    from irkit.raising.verify import lowered_loops

    plain = SCAN.replace("tensor x : f64[N] inout", "tensor x : f64[N] inout\n  tensor y : f64[N] input")
    plain = plain.replace("x[i] = x[i - 1] + a[i] where i >= 1 carry i", "x[i] = y[i - 1] + a[i] where i >= 1")
    for text, ordered in ((SCAN, True), (plain, False)):
        loops = lowered_loops(parse_design(text, "s.design"))
        kernel = next(op for op in loops.body.block.ops if op.name == "func.func")
        (generic,) = [op for op in raise_kernel(kernel).walk() if isinstance(op, t.GenericOp)]
        assert (generic.ordered is not None) == ordered


@pytest.mark.parametrize("engine", ["c", "interp"])
def test_the_semantic_check_runs_recurrences_on_both_engines(engine, tmp_path):
    semantic_check_agrees(SCAN, engine, tmp_path)


def test_recurrences_build_warning_free_and_run_clean_under_asan():
    builds_clean_and_runs_asan_clean([SEIDEL, FLOYD], [(SEIDEL, {"T": 2, "N": 9}), (FLOYD, {"N": 7})])


def test_the_reference_says_when_a_recurrence_is_too_large_to_run_point_by_point():
    from irkit.oracle.common import ReferenceEvalError
    from irkit.reference import evaluate_design

    with pytest.raises(ReferenceEvalError, match="is a recurrence .* point by point"):
        evaluate_design(parse_design(SEIDEL, "s.design"), {"A": np.zeros((1000, 1000))}, {"T": 1, "N": 1000})


# --- what the checker refuses ---------------------------------------------------------------

ERRORS = [
    (" carry i, j", " carry i", "carry i: 'j' is missing; list every loop of the statement (i, j) once"),
    (" carry i, j", " carry i, j, i", "carry i, j, i: 'i' is listed twice"),
    (" carry i, j", " carry i, q", "carry i, q: 'j' is missing"),
    ("tensor A : f64[N, N] inout", "tensor A : f64[N, N] output",
     "reads A[i - 1, j - 1], its own target: an element no earlier iteration wrote holds A's value on entry, so "
     "declare 'A' inout"),
    ("    unroll j by 4\n", "    parallel i\n",
     "parallel: 'A' is a recurrence (carry i, j, line {line}): its iterations read what earlier ones wrote, so only "
     "split and unroll, which keep their order, apply"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "message"), ERRORS)
def test_a_wrong_recurrence_is_a_located_error(old, new, message, tmp_path):
    line = next(k for k, text in enumerate(SEIDEL.splitlines(), 1) if " carry " in text)
    status, err, _ = irkit_says(SEIDEL.replace(old, new), tmp_path)
    assert status == 1 and message.format(line=line) in err, err


def test_a_reduction_cannot_carry(tmp_path):
    status, err, _ = irkit_says(SCAN.replace("x[i] = x[i - 1] + a[i]", "x[i] += x[i - 1] + a[i]"), tmp_path)
    assert status == 1 and "carry with '+=': a recurrence is an '=' statement" in err, err


def test_a_recurrence_is_priced_as_a_chain_of_its_iterations():
    """Each iteration waits on the one before (its ops and the forwarding of the stored value): the
    same statement reading another tensor is no chain, and is predicted faster."""
    from irkit.perf import load_hardware, predict

    hw = load_hardware("generic", document=None)
    plain = SCAN.replace("tensor x : f64[N] inout", "tensor x : f64[N] inout\n  tensor y : f64[N] input")
    plain = plain.replace("x[i] = x[i - 1] + a[i] where i >= 1 carry i", "x[i] = y[i - 1] + a[i] where i >= 1")
    unsplit = SCAN.replace("    split i by 8 -> io, ii\n    unroll ii by 2\n", "")
    plain = plain.replace("    split i by 8 -> io, ii\n    unroll ii by 2\n", "")
    rec, free = (predict(t, {"N": 1 << 20}, hw) for t in (unsplit, plain))
    assert rec.bound == "chain" and rec.seconds > 1.5 * free.seconds, (rec.seconds, free.seconds)


def test_a_where_bounds_the_innermost_index_in_the_carry_order(tmp_path):
    """`carry k, i, j` runs i inside k: `k <= 2 * i` bounds i (coefficient 2: refused at the check,
    not a failure of the lowering), and `2 * k <= i` bounds i by k (lowered, run as numpy says)."""
    refused = FLOYD.replace(") carry k, i, j", ") where k <= 2 * i carry k, i, j")
    status, err, _ = irkit_says(refused, tmp_path)
    assert status == 1 and "i has the coefficient 2; a bound on i would need a division" in err, err
    kept = FLOYD.replace(") carry k, i, j", ") where 2 * k <= i carry k, i, j")
    kernel = irkit.compile(kept, name="fw.design")
    p = (np.random.default_rng(4).random((9, 9)) * 10).astype(np.float32)
    want = p.astype(np.float64).copy()
    for k in range(9):
        for i in range(2 * k, 9):
            for j in range(9):
                want[i, j] = min(want[i, j], want[i, k] + want[k, j])
    np.testing.assert_allclose(kernel({"N": 9}, P=p)["P"], want, rtol=1e-5)
