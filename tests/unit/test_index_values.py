"""Indices as values (`select(k < j, ...)`, `S[i, j] * (i - j)`) and `assume { positive_definite(A) }`:
through the checker, tensorop (`tensorop.index`), the loops under schedules, C, the numpy oracle at
both levels, raising and verify; and the in-place Cholesky example they make expressible."""

from __future__ import annotations

import contextlib
import io
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

CHOLESKY = (Path(__file__).parents[2] / "examples" / "cholesky.design").read_text()
OWN_SCHEDULE = "    unroll k by 4\n"
SCHEDULES = {
    "own": CHOLESKY,
    "none": CHOLESKY.replace(OWN_SCHEDULE, ""),
    "split": CHOLESKY.replace(OWN_SCHEDULE, "    split k by 8 -> ko, ki\n    unroll ki by 2\n    split j by 4 -> jo, ji\n"),
}

MASK = """design mask {
  sizes { N = 37 }
  tensor S : f32[N, N] input
  tensor P : f32[N, N] output
  P[i, j] = select(j <= i, S[i, j] * (i - j), 0.0)
SCHEDULE}
"""
MASK_SCHEDULES = [
    "",
    "vectorize j",
    "split j by 8 -> jo, ji\n    vectorize ji",
    "tile i, j by 8, 8",
    "unroll_jam i by 4",
    "tile i, j by 8, 8\n    unroll_jam ii by 4",
    "parallel i\n    unroll j by 4",
    "reorder j, i",
]


def mask_text(schedule: str) -> str:
    block = f"  schedule P {{\n    {schedule}\n  }}\n" if schedule else ""
    return MASK.replace("SCHEDULE", block)


def mask_numpy(s: np.ndarray) -> np.ndarray:
    i, j = np.indices(s.shape)
    return np.where(j <= i, s * (i - j).astype(np.float32), np.float32(0)).astype(np.float32)


# --- the Cholesky example ---------------------------------------------------------------------


@pytest.mark.parametrize("schedule", list(SCHEDULES))
@pytest.mark.parametrize("n", [1, 2, 7, 13, 31])
def test_cholesky_factors_as_numpy_does(schedule, n):
    kernel = irkit.compile(SCHEDULES[schedule], name="cholesky.design")
    inputs = kernel.random_inputs({"N": n}, seed=n)
    a = inputs["A"].copy()
    got = kernel({"N": n}, **inputs)["A"]
    want = np.linalg.cholesky(a)
    np.testing.assert_allclose(np.tril(got), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.triu(got, 1), np.triu(a, 1))  # the upper triangle is untouched
    np.testing.assert_allclose(kernel.reference(inputs, {"N": n})["A"], got, rtol=1e-13, atol=1e-13)


def test_cholesky_runs_alike_at_the_tensorop_level():
    from irkit.api import lower
    from irkit.oracle.levels import evaluate_design, evaluate_tensorop

    module = parse_design(SCHEDULES["split"], "cholesky.design")
    inputs = irkit.compile(SCHEDULES["split"], name="c.design").random_inputs({"N": 9})
    design = evaluate_design(module, inputs, {"N": 9})["A"]
    tensorop = evaluate_tensorop(lower(module)["tensorop"], inputs, {"N": 9})["A"]
    np.testing.assert_array_equal(design, tensorop)
    np.testing.assert_allclose(np.tril(design), np.linalg.cholesky(inputs["A"]), rtol=1e-12)


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_cholesky_raises_back_and_verifies(schedule):
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(SCHEDULES[schedule], "cholesky.design")
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []
    raised = raised_document(SCHEDULES[schedule])
    assert "select(k < j, A[i, j] - A[i, k] * A[j, k], select(i == j, sqrt(A[i, j])" in raised, raised
    assert "carry i, j, k" in raised and "positive_definite(A)" in raised, raised


@pytest.mark.parametrize("engine", ["c", "interp"])
def test_the_semantic_check_agrees_on_cholesky(engine, tmp_path):
    assert "results agree" in semantic_check_agrees(SCHEDULES["split"], engine, tmp_path)


def test_index_values_build_warning_free_and_run_clean_under_asan():
    builds_clean_and_runs_asan_clean(
        [CHOLESKY, mask_text("vectorize j")], [(CHOLESKY, {"N": 9}), (mask_text("unroll_jam i by 4"), {"N": 11})]
    )


def test_cholesky_is_priced():
    from irkit.perf import load_hardware, predict

    small, large = (predict(CHOLESKY, {"N": n}, load_hardware("generic", document=None)) for n in (100, 200))
    assert 0 < small.seconds < large.seconds  # a tetrahedron: about eight times the work at twice N
    assert 4 < large.seconds / small.seconds < 12, (small.seconds, large.seconds)


# --- indices as values under schedules ----------------------------------------------------------


@pytest.mark.parametrize("schedule", MASK_SCHEDULES)
def test_an_index_read_as_a_value_survives_every_schedule(schedule):
    from irkit.raising.verify import compare_modules, lowered_loops

    text = mask_text(schedule)
    kernel = irkit.compile(text, name="mask.design")
    for n in (5, 37):
        s = kernel.random_inputs({"N": n})["S"]
        np.testing.assert_array_equal(kernel({"N": n}, S=s)["P"], mask_numpy(s))
    module = parse_design(text, "mask.design")
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []


COMPARISONS = ["<", "<=", ">", ">=", "==", "!="]
NUMPY_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
                 "!=": np.not_equal}  # fmt: skip


@settings(max_examples=12, deadline=None)
@given(
    op=st.sampled_from(COMPARISONS),
    shift=st.integers(-3, 3),
    scale=st.sampled_from([1, 2]),
    schedule=st.sampled_from(MASK_SCHEDULES[:4]),
    n=st.integers(1, 20),
)
def test_a_comparison_of_indices_selects_as_numpy_does(op, shift, scale, schedule, n):
    """`select(i OP scale * j + shift, S[i, j], i + 0.5)`: C and the oracle agree with numpy for any
    comparison, offset and schedule."""
    rhs = f"{scale} * j + {shift}" if shift >= 0 else f"{scale} * j - {-shift}"
    text = mask_text(schedule).replace("select(j <= i, S[i, j] * (i - j), 0.0)", f"select(i {op} {rhs}, S[i, j], i + 0.5)")
    kernel = irkit.compile(text, name="cmp.design")
    s = kernel.random_inputs({"N": n}, seed=n)["S"]
    i, j = np.indices((n, n))
    want = np.where(NUMPY_COMPARE[op](i, scale * j + shift), s, i + np.float32(0.5)).astype(np.float32)
    np.testing.assert_array_equal(kernel({"N": n}, S=s)["P"], want)
    np.testing.assert_array_equal(kernel.reference({"S": s}, {"N": n})["P"], want)


# --- positive_definite ------------------------------------------------------------------------


def test_positive_definite_inputs_are_symmetric_and_definite_at_every_level():
    from irkit.api import lower
    from irkit.oracle.inputs import random_inputs

    module = parse_design(CHOLESKY, "cholesky.design")
    for obj in (module, lower(module)["tensorop"], lower(module)["loop"]):
        for n in (1, 2, 17):
            a = random_inputs(obj, {"N": n}, seed=n)["A"]
            np.testing.assert_array_equal(a, a.T)
            assert np.linalg.eigvalsh(a).min() > 0.5


def test_without_positive_definite_a_check_warns_that_the_reference_gives_nan(tmp_path):
    from irkit.tools.cli import main

    path = tmp_path / "c.design"
    path.write_text(CHOLESKY.replace("  assume { positive_definite(A) }\n", ""))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["run", str(path), "--check", "--size", "N=12"]) == 0
    assert "warning: the reference itself gives nan at A[" in out.getvalue(), out.getvalue()
    assert "positive_definite(A)" in out.getvalue()


def test_with_positive_definite_the_check_has_no_such_warning(tmp_path):
    from irkit.tools.cli import main

    path = tmp_path / "c.design"
    path.write_text(CHOLESKY)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["run", str(path), "--check", "--size", "N=12"]) == 0
    assert "check A: ok" in out.getvalue() and "warning" not in out.getvalue(), out.getvalue()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("positive_definite(A)", "positive_definite(B)", "assumption about undefined tensor 'B'"),
        ("tensor A : f64[N, N] inout", "tensor A : f64[N, N] inout\n  scalar k : f64 input",
         "'k' is both an index of this statement and a scalar"),
        ("select(k < j", "select(q < j", "'q' is not a value here"),
    ],
)  # fmt: skip
def test_mistakes_are_located_errors(old, new, message, tmp_path):
    status, err, path = irkit_says(CHOLESKY.replace(old, new), tmp_path)
    assert status == 1 and message in err and f"{path}:" in err, err


def test_the_reference_walks_a_recurrence_domain_not_its_box():
    """A tetrahedron of about N^3 / 6 points in a box of N^3: the reference visits (and caps) the
    points of the domain, in the carry order, not those of the box."""
    from irkit.affine_text import parse_affine
    from irkit.oracle.engine import _domain_points, _Nest

    where = [(parse_affine("i - j"), False), (parse_affine("j - k"), False)]
    nest = _Nest("A", ["i", "j", "k"], [30, 30, 30], [True, True, False], [], np.zeros((30, 30)), ["i", "j"],
                 None, "assign", where=where, order=["i", "j", "k"])  # type: ignore[arg-type]  # fmt: skip
    points = list(_domain_points(nest))
    assert len(points) == 30 * 31 * 32 // 6
    assert all(p["k"] <= p["j"] <= p["i"] for p in points) and points[0] == {"i": 0, "j": 0, "k": 0}


def test_the_harness_fills_a_positive_definite_input_as_numpy_says():
    """The standalone harness (sanitizers, command-line runs) makes `positive_definite` inputs the
    same way `fill_values` reports them: its checksum is numpy's Cholesky of those values."""
    from irkit.api import lower
    from irkit.backends.harness import checksum, fill_values, run_harness
    from irkit.kernel_abi import find_kernels

    loops = lower(parse_design(CHOLESKY, "cholesky.design"))["loop"]
    kernel = find_kernels(loops)[0]
    a = fill_values(kernel, "A", {"N": 13})
    assert np.array_equal(a, a.T) and np.linalg.eigvalsh(a).min() > 0.5
    result = run_harness(loops, None, {"N": 13})
    want = checksum(np.tril(np.linalg.cholesky(a)) + np.triu(a, 1))
    np.testing.assert_allclose(result.checksums["A"], want, rtol=1e-12)
