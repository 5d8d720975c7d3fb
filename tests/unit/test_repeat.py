"""Time steps (`repeat T { ... }`) through every level: parsed and printed back, checked (the count
is a size; a tensor a step reads before the step writes it is in-out), lowered to a sequential
time loop around the statements' nests, run by C, the numpy oracle (design and tensorop levels),
the loop interpreter and the xDSL interpreter alike, raised back into a repeat (a lost or changed
time loop is a difference `irkit verify` reports), and priced T times one step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
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

# PolyBench's jacobi-2d: both grids are the caller's; each step writes their interiors.
POLYBENCH = f"""design jacobi_2d {{
  sizes {{ T = 4, N = 21 }}
  tensor A : f64[N, N] inout
  tensor B : f64[N, N] inout
  repeat T {{
    B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1]) where {INTERIOR}
    A[i, j] = 0.2 * (B[i, j] + B[i - 1, j] + B[i + 1, j] + B[i, j - 1] + B[i, j + 1]) where {INTERIOR}
  }}
  schedule B {{
    SCHEDULE
  }}
}}
"""

# The border held fixed: B is the kernel's own, its border copied from A in four parts.
BORDERED = f"""design jacobi_border {{
  sizes {{ T = 3, N = 19 }}
  tensor A : f32[N, N] inout
  tensor B : f32[N, N] temp
  repeat T {{
    B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1]) where {INTERIOR}
    B[i, j] = A[i, j] where i == 0
    B[i, j] = A[i, j] where i == N - 1, i >= 1
    B[i, j] = A[i, j] where j == 0, i >= 1, i <= N - 2
    B[i, j] = A[i, j] where j == N - 1, j >= 1, i >= 1, i <= N - 2
    A[i, j] = 0.2 * (B[i, j] + B[i - 1, j] + B[i + 1, j] + B[i, j - 1] + B[i, j + 1]) where {INTERIOR}
  }}
  schedule A {{
    parallel i
    vectorize j by 8
  }}
}}
"""

# A reduction and a temporary inside the steps, a statement after them: heat that decays by its mean.
MIXED = """design decay {
  sizes { T = 3, N = 13 }
  tensor x : f32[N] inout
  tensor s : f32[1] temp
  tensor y : f32[N] output
  repeat T {
    s[z] += x[i] / N
    x[i] = x[i] - 0.5 * s[0]
  }
  y[i] = 2.0 * x[i]
}
"""

SCHEDULES = ["parallel i\n    vectorize j by 4", "tile i, j by 8, 8 -> io, jo, ii, ji\n    parallel io", "split j by 4 -> jo, ji"]


def polybench(schedule: str = SCHEDULES[0]) -> str:
    return POLYBENCH.replace("SCHEDULE", schedule)


def jacobi_numpy(a: np.ndarray, b: np.ndarray | None, steps: int) -> tuple[np.ndarray, np.ndarray]:
    a = a.astype(np.float64).copy()
    b = a.copy() if b is None else b.astype(np.float64).copy()
    for _ in range(steps):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[:-2, 1:-1] + b[2:, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:])
    return a, b


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("sizes", [{"T": 4, "N": 21}, {"T": 1, "N": 3}, {"T": 7, "N": 2}, {"T": 2, "N": 1}])
def test_polybench_jacobi_runs_as_numpy_says(schedule, sizes):
    kernel = irkit.compile(polybench(schedule), name="jacobi.design")
    rng = np.random.default_rng(sizes["N"])
    a, b = (rng.standard_normal((sizes["N"],) * 2) for _ in range(2))
    want_a, want_b = jacobi_numpy(a, b, sizes["T"])
    got = kernel(sizes, A=a, B=b)
    np.testing.assert_allclose(got["A"], want_a, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got["B"], want_b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernel.reference({"A": a, "B": b}, sizes)["A"], want_a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sizes", [{"T": 3, "N": 19}, {"T": 1, "N": 1}, {"T": 5, "N": 4}])
def test_a_bordered_stencil_over_steps_runs_as_numpy_says(sizes):
    kernel = irkit.compile(BORDERED, name="jacobi.design")
    a = np.random.default_rng(1).standard_normal((sizes["N"],) * 2).astype(np.float32)
    want, _ = jacobi_numpy(a, None, sizes["T"])
    np.testing.assert_allclose(kernel(sizes, A=a)["A"], want, rtol=1e-5, atol=1e-6)
    agrees_with_the_oracle(BORDERED, sizes, name="jacobi.design")


def test_a_reduction_inside_the_steps_starts_again_each_step():
    kernel = irkit.compile(MIXED, name="decay.design")
    x = np.arange(13, dtype=np.float32)
    want = x.astype(np.float64)
    for _ in range(3):
        want = want - 0.5 * want.mean()
    out = kernel({"T": 3, "N": 13}, x=x)
    np.testing.assert_allclose(out["x"], want, rtol=1e-5)
    np.testing.assert_allclose(out["y"], 2 * want, rtol=1e-5)
    agrees_with_the_oracle(MIXED, {"T": 3, "N": 13}, name="decay.design")


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.integers(1, 9), st.sampled_from(SCHEDULES))
def test_steps_preserve_the_semantics_at_any_size(steps, n, schedule):
    """Generated code, the design-level oracle and numpy agree for every T and N tried."""
    kernel = irkit.compile(polybench(schedule), name="jacobi.design")
    rng = np.random.default_rng(steps * 31 + n)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    want_a, _ = jacobi_numpy(a, b, steps)
    np.testing.assert_allclose(kernel({"T": steps, "N": n}, A=a, B=b)["A"], want_a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("text", [polybench(), BORDERED, MIXED])
def test_repeat_prints_back_and_verifies(text):
    from irkit.backends.design_text import print_design
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(text, "steps.design")
    printed = print_design(module)
    assert "  repeat T {\n    " in printed
    assert print_design(parse_design(printed, "printed.design")) == printed
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []


@pytest.mark.parametrize("text", [polybench(SCHEDULES[1]), BORDERED, MIXED])
def test_raising_gives_the_repeat_back(text):
    from irkit.raising.verify import compare_modules, lowered_loops

    printed = raised_document(text)
    assert "repeat T {" in printed, printed
    again = parse_design(printed, "raised.design")
    assert [d.message for d in compare_modules(again, lowered_loops(parse_design(text, "j.design")))] == []


def test_verify_reports_a_time_loop_that_runs_another_count():
    """The time loop made to run N steps instead of T: a difference, named."""
    from irkit.dialects import loop as lp
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(polybench(), "j.design")
    loops = lowered_loops(module)
    time = next(op for op in loops.walk() if isinstance(op, lp.ForOp) and op.loop_name.data == "t")
    kernel = time.parent_op()
    while kernel is not None and kernel.name != "func.func":
        kernel = kernel.parent_op()
    n = next(a for a in kernel.body.block.args if a.name_hint == "N")  # type: ignore[union-attr]
    time.operands = [n]  # the upper bound's one operand: T, now N
    messages = [d.message for d in compare_modules(module, loops)]
    assert any("in each of T steps (repeat T) in the document, in each of N steps" in m for m in messages), messages


def test_verify_reports_a_lost_time_loop():
    from irkit.dialects import loop as lp
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(polybench(), "j.design")
    loops = lowered_loops(module)
    time = next(op for op in loops.walk() if isinstance(op, lp.ForOp) and op.loop_name.data == "t")
    for inner in list(time.body.block.ops):
        inner.detach()
        time.parent_block().insert_op_before(inner, time)  # type: ignore[union-attr]
    time.detach()
    messages = [d.message for d in compare_modules(module, loops)]
    assert any("once (no repeat) in the generated code" in m for m in messages), messages


@pytest.mark.parametrize("engine", ["c", "interp"])
def test_the_semantic_check_runs_steps_on_both_engines(engine, tmp_path):
    semantic_check_agrees(BORDERED, engine, tmp_path)


def test_xdsl_interpreter_agrees_on_steps():
    from irkit.raising.verify import lowered_loops
    from tests.unit.test_export_affine import _agree

    _agree(lowered_loops(parse_design(polybench(), "j.design")), {"T": 3, "N": 6})


def test_steps_build_warning_free_and_run_clean_under_asan():
    builds_clean_and_runs_asan_clean([polybench(), BORDERED], [(BORDERED, {"T": 2, "N": 9}), (MIXED, {"T": 2, "N": 5})])


def test_the_time_loop_is_sequential_around_the_parallel_nests():
    c = irkit.compile(polybench(), name="j.design", build=False).c_source
    time = c.index("for (int64_t t = 0; t < T; t += 1)")
    assert c.index("#pragma omp parallel for") > time, c


def test_a_step_is_priced_t_times():
    from irkit.perf import load_hardware, predict

    hw = load_hardware("generic", document=None)
    one, ten = (predict(BORDERED, {"T": t, "N": 512}, hw).seconds for t in (1, 10))
    assert 8.0 < ten / one < 10.5, (one, ten)


def test_work_counts_every_step():
    from irkit.metrics import work

    module = parse_design(polybench(), "j.design")
    assert work(module, {"T": 4, "N": 12}).flops == 4 * work(module, {"T": 1, "N": 12}).flops > 0


# --- what the checker refuses ---------------------------------------------------------------


def test_a_count_that_is_not_a_size_is_refused_with_the_sizes(tmp_path):
    status, err, _ = irkit_says(polybench().replace("repeat T {", "repeat Tt {"), tmp_path)
    assert status == 1 and "repeat Tt: 'Tt' is not a size" in err and "did you mean 'T'?" in err, err


def test_a_tensor_carried_across_steps_must_be_inout(tmp_path):
    text = polybench().replace("tensor B : f64[N, N] inout", "tensor B : f64[N, N] temp").replace(
        "tensor A : f64[N, N] inout", "tensor A : f64[N, N] output"
    )
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1
    assert "'A' is read here before the statement that writes it (line 7): a step reads the value the step before" in err
    assert "declare 'A' inout" in err


def test_parts_of_one_tensor_stay_in_one_repeat(tmp_path):
    text = BORDERED.replace("    B[i, j] = A[i, j] where i == 0\n", "").replace(
        "  schedule A {", "  B[i, j] = A[i, j] where i == 0\n  schedule A {"
    )
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1 and "are not in the same repeat block" in err, err


FUSED = """design steps_fused {
  sizes { T = 3, N = 40 }
  tensor x : f32[N] inout
  tensor y : f32[N] temp
  tensor z : f32[N] temp
  repeat T {
    y[i] = 2.0 * x[i]
    z[i] = y[i] + 1.0
    x[i] = 0.5 * z[i]
  }
  schedule z {
    split i by 8 -> io, ii
  }
  schedule y {
    compute_at z.io
  }
}
"""


def test_compute_at_between_statements_of_one_step():
    from irkit.raising.verify import compare_modules, lowered_loops

    kernel = irkit.compile(FUSED, name="fused.design")
    x = np.linspace(-1, 1, 37).astype(np.float32)
    want = x.astype(np.float64)
    for _ in range(3):
        want = 0.5 * (2.0 * want + 1.0)
    np.testing.assert_allclose(kernel({"T": 3, "N": 37}, x=x)["x"], want, rtol=1e-6)
    module = parse_design(FUSED, "fused.design")
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []


@pytest.mark.parametrize("scheduled", [True, False])
@pytest.mark.parametrize("sizes", [{"T": 3, "N": 37}, {"T": 1, "N": 2}, {"T": 6, "N": 17}])
def test_the_jacobi_2d_example_runs_as_numpy_says(scheduled, sizes):
    """examples/jacobi_2d.design under its own schedule and under none, at odd sizes."""
    kernel = irkit.compile(example_text("jacobi_2d", scheduled), name="jacobi_2d.design")
    a = np.random.default_rng(sizes["N"]).standard_normal((sizes["N"],) * 2).astype(np.float32)
    want, _ = jacobi_numpy(a, None, sizes["T"])
    np.testing.assert_allclose(kernel(sizes, A=a)["A"], want, rtol=1e-5, atol=1e-6)


def test_a_schedule_inside_a_repeat_block_says_where_it_belongs(tmp_path):
    text = polybench().replace("  }\n  schedule B {", "    schedule B { parallel i }\n  }\n  schedule B {", 1)
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1
    assert "'schedule' inside repeat T { ... }: a repeat block holds statements only; close it with '}'" in err, err
