"""The fill of an accumulation is split like the parallel nest that updates it
(irkit/passes/schedule/fill_placement.py): each core fills what it then
updates; results stay exact, and nothing changes where the pattern is not
there."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from test_compute_at import run_and_check
from test_schedule_apply import scheduled

from irkit.dialects import loop as lp

GEMM = Path(__file__).parents[2] / "examples" / "gemm.design"

ROWSUM = """design rowsum {{
  sizes {{ M = 64, N = 48 }}
  tensor X : f32[M, N] input
  tensor s : f32[M] output
  s[i] += X[i, j]
  schedule s {{ {schedule} }}
}}
"""


def top_nests(module) -> list[lp.ForOp]:
    (kernel,) = [op for op in module.walk() if op.name == "func.func"]
    return [op for op in kernel.body.block.ops if isinstance(op, lp.ForOp)]


def header(loop: lp.ForOp) -> tuple:
    return (str(loop.lower.data), str(loop.upper.data), list(loop.upper_operands), loop.step_value)


def test_gemm_fill_runs_on_the_cores_like_its_update():
    fill, update = top_nests(scheduled(GEMM))
    assert update.parallel is not None and update.loop_name.data == "jo"
    assert fill.parallel is not None, "the fill stays serial"
    assert fill.loop_name.data == "d1o"
    # the same bounds and step as `jo`: OpenMP's static schedule gives each core the same blocks
    assert header(fill) == header(update)
    assert fill.origin is not None and fill.origin == update.origin


def test_serial_update_leaves_the_fill_alone():
    fill, update = top_nests(scheduled(ROWSUM.format(schedule="split i by 8 -> io, ii"), "rowsum.design"))
    assert update.parallel is None
    assert fill.parallel is None and fill.loop_name.data == "d0"


def test_parallel_over_another_dimension_than_the_fill_blocks():
    # `parallel io` over rows: the fill is split by 8 along its rows too
    fill, update = top_nests(scheduled(ROWSUM.format(schedule="split i by 8 -> io, ii\n parallel io"), "rowsum.design"))
    assert fill.parallel is not None and header(fill) == header(update)


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 600), k=st.integers(1, 40))
def test_gemm_with_split_fill_is_exact_at_any_size(m: int, n: int, k: int):
    run_and_check(str(GEMM), {"M": m, "N": n, "K": k})


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 90), n=st.integers(1, 40), block=st.sampled_from([1, 3, 8, 32]))
def test_rowsum_with_split_fill_is_exact(m: int, n: int, block: int):
    text = ROWSUM.format(schedule=f"split i by {block} -> io, ii\n parallel io")
    run_and_check(text, {"M": m, "N": n})
