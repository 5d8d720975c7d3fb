"""Piecewise tensors: several `=` statements, each writing the part of one tensor its `where`
selects (a stencil's interior and border), and temporaries written on a domain only (a causal
mask).  The checker proves the parts disjoint and an output covered (a temporary: every element
read), for every value of the sizes, with a counterexample when not; C, the numpy oracle and the
loop interpreter agree; raising gives the parts back and `irkit verify` compares their domains."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irkit
from irkit.frontend import parse_design
from tests.unit.oracle_agreement import (
    agrees_with_the_oracle,
    builds_clean_and_runs_asan_clean,
    example_text,
    irkit_says,
    raised_document,
    semantic_check_agrees,
)

INTERIOR = "i >= 1, i <= N - 2, j >= 1, j <= N - 2"
BORDER = """  B[i, j] = A[i, j] where i == 0
  B[i, j] = A[i, j] where i == N - 1, i >= 1
  B[i, j] = A[i, j] where j == 0, i >= 1, i <= N - 2
  B[i, j] = A[i, j] where j == N - 1, j >= 1, i >= 1, i <= N - 2
"""

JACOBI = f"""design jacobi_step {{
  sizes {{ N = 30 }}
  tensor A : f32[N, N] input
  tensor B : f32[N, N] output
  B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1]) where {INTERIOR}
{BORDER}  schedule B {{
    SCHEDULE
  }}
}}
"""

ATTENTION = """design causal {
  sizes { S = 19, D = 5 }
  tensor Q : f32[S, D] input
  tensor K : f32[S, D] input
  tensor V : f32[S, D] input
  tensor O : f32[S, D] output
  tensor L : f32[S, S] temp
  tensor m : f32[S] temp
  tensor E : f32[S, S] temp
  tensor l : f32[S] temp
  tensor U : f32[S, D] temp
  L[i, j] += Q[i, c] * K[j, c] / sqrt(D) where j <= i
  m[i] max= L[i, j] where j <= i
  E[i, j] = exp(L[i, j] - m[i]) where j <= i
  l[i] += E[i, j] where j <= i
  U[i, c] += E[i, j] * V[j, c] where j <= i
  O[i, c] = U[i, c] / l[i]
}
"""

SCHEDULES = [
    "parallel i\n    vectorize j by 8",
    "tile i, j by 8, 16 -> io, jo, ii, ji\n    parallel io\n    vectorize ji",
    "split i by 4 -> io, ii\n    unroll ii by 2\n    vectorize j by 4",
]


def jacobi(schedule: str = SCHEDULES[0]) -> str:
    return JACOBI.replace("SCHEDULE", schedule)


def jacobi_numpy(a: np.ndarray) -> np.ndarray:
    b = a.astype(np.float64).copy()
    b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
    return b


def attention_numpy(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q.astype(np.float64) @ k.T.astype(np.float64) / np.sqrt(q.shape[1])
    s[np.triu_indices(len(s), 1)] = -np.inf
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [1, 2, 3, 17])
def test_a_stencil_with_its_border_runs_as_numpy_says(schedule, n):
    kernel = irkit.compile(jacobi(schedule), name="jacobi.design")
    a = np.random.default_rng(n).standard_normal((n, n)).astype(np.float32)
    np.testing.assert_allclose(kernel({"N": n}, A=a)["B"], jacobi_numpy(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kernel.reference({"A": a}, {"N": n})["B"], jacobi_numpy(a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sizes", [{"S": 19, "D": 5}, {"S": 1, "D": 3}, {"S": 8, "D": 16}])
def test_causal_attention_runs_as_numpy_says(sizes):
    kernel = irkit.compile(ATTENTION, name="causal.design")
    inputs = kernel.random_inputs(sizes, seed=2)
    expected = attention_numpy(inputs["Q"], inputs["K"], inputs["V"])
    np.testing.assert_allclose(kernel(sizes, **inputs)["O"], expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(kernel.reference(inputs, sizes)["O"], expected, rtol=1e-4, atol=1e-5)
    agrees_with_the_oracle(ATTENTION, sizes, name="causal.design")


@pytest.mark.parametrize("text", [jacobi(s) for s in SCHEDULES] + [ATTENTION])
def test_parts_print_back_and_verify(text):
    from irkit.backends.design_text import print_design
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(text, "parts.design")
    printed = print_design(module)
    assert print_design(parse_design(printed, "printed.design")) == printed
    assert printed.count("B[i, j] = ") == (5 if "jacobi" in text else 0)
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []


def test_raising_gives_the_parts_back():
    from irkit.raising.verify import compare_modules, lowered_loops

    printed = raised_document(jacobi())
    assert printed.count("where") == 5, printed
    again = parse_design(printed, "raised.design")
    assert [d.message for d in compare_modules(again, lowered_loops(parse_design(jacobi(), "j.design")))] == []


def test_verify_reports_a_part_whose_loop_lost_its_bound():
    """The border row `i == 0` made to run every row: the raised domain is not the document's."""
    from xdsl.ir.affine import AffineExpr, AffineMap

    from irkit.dialects import loop as lp
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(jacobi(), "j.design")
    loops = lowered_loops(module)
    rows = [op for op in loops.walk() if isinstance(op, lp.ForOp) and op.loop_name.data == "i"]
    second = rows[1]  # the part `where i == 0`: i < min(N, 1)
    second.properties["upper"] = type(second.upper)(AffineMap(1, 0, (AffineExpr.dimension(0),)))
    messages = [d.message for d in compare_modules(module, loops)]
    assert messages, "a part running every row verified"


@pytest.mark.parametrize("engine", ["c", "interp"])
def test_the_semantic_check_runs_parts_on_both_engines(engine, tmp_path):
    semantic_check_agrees(jacobi(SCHEDULES[1]), engine, tmp_path)


def test_xdsl_interpreter_agrees_on_parts():
    from irkit.raising.verify import lowered_loops
    from tests.unit.test_export_affine import _agree

    _agree(lowered_loops(parse_design(jacobi(), "j.design")), {"N": 6})


def test_parts_build_warning_free_and_run_clean_under_asan():
    builds_clean_and_runs_asan_clean([jacobi(), ATTENTION], [(jacobi(SCHEDULES[1]), {"N": 13}), (ATTENTION, {"S": 7, "D": 3})])


# --- what the checker refuses, and how it says so ---------------------------------------


def test_overlapping_parts_are_refused_with_the_element_both_write(tmp_path):
    text = jacobi().replace("where i == N - 1, i >= 1", "where i == N - 1")
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1
    assert "both write B[0, 0] (e.g. when N = 1)" in err, err
    assert ":7:3:" in err  # at the later part


def test_an_output_part_left_out_is_refused_with_an_element_no_part_writes(tmp_path):
    text = jacobi().replace("  B[i, j] = A[i, j] where i == 0\n", "")
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1
    assert "output 'B' has elements no statement writes (e.g. at B[0, " in err, err
    assert "declare 'B' inout" in err


def test_one_part_alone_is_refused_for_an_output(tmp_path):
    text = "design d {\n  sizes { N = 8 }\n  tensor A : f32[N] input\n  tensor B : f32[N] output\n  B[i] = A[i] where i >= 1\n}\n"
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1 and "(e.g. at B[0] when N = " in err, err


def test_a_temporary_read_outside_what_is_written_is_refused_at_the_read(tmp_path):
    text = ATTENTION.replace("E[i, j] = exp(L[i, j] - m[i]) where j <= i", "E[i, j] = exp(L[i, j] - m[i]) where j < i")
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1
    assert "reads E[i, j] outside the elements of temp 'E' that are written (e.g. at i = 0, j = 0 when" in err, err
    assert "written: line 14: E[i, j] where j < i" in err


def test_parts_that_name_their_indices_differently_are_refused(tmp_path):
    text = jacobi().replace("B[i, j] = A[i, j] where i == 0", "B[r, c] = A[r, c] where r == 0")
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1 and "name the indices of every part alike" in err, err


def test_an_accumulation_is_not_a_part(tmp_path):
    text = jacobi().replace("B[i, j] = A[i, j] where i == 0", "B[i, j] += A[i, j] where i == 0")
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1 and "written by two statements" in err and "'=' statements that each write a part" in err, err


def test_an_interior_read_needs_no_guard_beyond_its_where(tmp_path):
    """`A[i - 1, j]` is in bounds where `i >= 1`: the bounds proof uses the statement's domain."""
    status, err, _ = irkit_says(jacobi(), tmp_path)
    assert status == 0, err
    status, err, _ = irkit_says(jacobi().replace("where i >= 1, i <= N - 2, j >= 1", "where i >= 0, i <= N - 2, j >= 1"), tmp_path)
    assert status == 1 and "index 'i - 1' of 'A' (dimension 1) can be negative (e.g. when N = " in err, err


# --- the proofs against brute force ---------------------------------------------------------

BOUND = st.sampled_from(["0", "1", "2", "N - 1", "N - 2", "N - 3"])
CONSTRAINT = st.tuples(st.sampled_from(["<=", ">=", "==", "<", ">"]), BOUND)


def _holds(op: str, i: int, bound: int) -> bool:
    return {"<=": i <= bound, ">=": i >= bound, "==": i == bound, "<": i < bound, ">": i > bound}[op]


def _brute(parts: list[list[tuple[str, str]]], n: int) -> tuple[bool, bool]:
    """(some element written twice, some element not written) at N = n."""
    counts = [sum(all(_holds(op, i, eval(b, {"N": n})) for op, b in part) for part in parts) for i in range(n)]
    return any(c > 1 for c in counts), any(c == 0 for c in counts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(CONSTRAINT, min_size=1, max_size=2), min_size=1, max_size=3))
def test_the_checker_agrees_with_brute_force_on_parts_of_a_vector(parts):
    """The checker accepts exactly the parts that are disjoint and cover the vector for every N
    (brute force over N = 1 .. 12 finds no counterexample to an accepted document), and each
    counterexample it gives is one."""
    from irkit.checks.design import check_module
    from irkit.frontend.build import build_design

    lines = [f"  B[i] = A[i] + {k}.0 where " + ", ".join(f"i {op} {b}" for op, b in part) for k, part in enumerate(parts)]
    text = "design d {\n  sizes { N = 8 }\n  tensor A : f32[N] input\n  tensor B : f32[N] output\n" + "\n".join(lines) + "\n}\n"
    module, syntax = build_design(text, "p.design")
    assert module is not None and not syntax, syntax
    errors = [d.message for d in check_module(module) if d.severity == "error"]
    bad = [n for n in range(1, 13) if any(_brute(parts, n))]
    if not errors:
        assert not bad, (text, bad)
        return
    for message in errors:  # intervals of one index: the checker decides, with a counterexample
        assert "both write" in message or "no statement writes" in message, (text, message)
        n = int(message.split("when N = ")[1].split(")")[0])
        twice, gap = _brute(parts, n)
        assert twice if "both write" in message else gap, (text, message)


@pytest.mark.parametrize("scheduled", [True, False])
@pytest.mark.parametrize("sizes", [{"S": 37, "D": 7}, {"S": 1, "D": 1}, {"S": 19, "D": 33}])
def test_the_causal_attention_example_runs_as_numpy_says(scheduled, sizes):
    """examples/causal_attention.design under its own schedule and under none, at odd sizes."""
    kernel = irkit.compile(example_text("causal_attention", scheduled), name="causal_attention.design")
    inputs = kernel.random_inputs(sizes, seed=5)
    want = attention_numpy(inputs["Q"], inputs["K"], inputs["V"])
    np.testing.assert_allclose(kernel(sizes, **inputs)["O"], want, rtol=2e-4, atol=2e-5)
