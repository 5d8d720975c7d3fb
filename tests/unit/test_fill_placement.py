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


def constant_stores(loop: lp.ForOp) -> list[lp.StoreOp]:
    return [op for op in loop.walk() if isinstance(op, lp.StoreOp) and op.value.owner.name == "arith.constant"]


def block_loop(update: lp.ForOp) -> lp.ForOp:
    """The fill's loop over one block of the parallel loop: the loop starting at its variable
    around the constant stores."""
    (store,) = constant_stores(update)
    (loop,) = [lo for lo in lp.enclosing_loops(store) if update.induction_var in lo.lower_operands]
    return loop


def test_gemm_fill_runs_block_by_block_inside_the_parallel_loop():
    (update,) = top_nests(scheduled(GEMM))  # no fill nest of its own left
    assert update.parallel is not None and update.loop_name.data == "jo"
    first = next(op for op in update.body.block.ops)
    assert isinstance(first, lp.ForOp) and constant_stores(first), "the block's fill comes first"
    block = block_loop(update)
    assert block.loop_name.data == "d1i"
    # from jo to min(jo + 512, N): the block of jo, the last one cut at N
    assert list(block.lower_operands) == [update.induction_var]
    assert str(block.upper.data) == "(d0, d1) -> ((d0 + 512), d1)"
    assert block.upper_operands[1] is update.upper_operands[0]
    assert all(lo.parallel is None for lo in update.walk() if isinstance(lo, lp.ForOp) and lo is not update)


def test_serial_update_leaves_the_fill_alone():
    fill, update = top_nests(scheduled(ROWSUM.format(schedule="split i by 8 -> io, ii"), "rowsum.design"))
    assert update.parallel is None
    assert fill.parallel is None and fill.loop_name.data == "d0" and constant_stores(fill)
    assert not constant_stores(update)


def test_rows_on_the_cores_fill_their_rows():
    # `parallel io` over blocks of 8 rows: each iteration zeroes s[io : io + 8] first
    (update,) = top_nests(scheduled(ROWSUM.format(schedule="split i by 8 -> io, ii\n parallel io"), "rowsum.design"))
    block = block_loop(update)
    assert str(block.upper.data) == "(d0, d1) -> ((d0 + 8), d1)"
    # its origin is the split that made the blocks (diagnostics point at it), as the update's `ii`
    (ii,) = [lo for lo in update.walk() if isinstance(lo, lp.ForOp) and lo.loop_name.data == "ii"]
    assert block.origin is not None and ii.origin is not None
    assert block.origin.data == ii.origin.data != update.origin.data


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 600), k=st.integers(1, 40))
def test_gemm_with_split_fill_is_exact_at_any_size(m: int, n: int, k: int):
    run_and_check(str(GEMM), {"M": m, "N": n, "K": k})


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 90), n=st.integers(1, 40), block=st.sampled_from([1, 3, 8, 32]))
def test_rowsum_with_split_fill_is_exact(m: int, n: int, block: int):
    text = ROWSUM.format(schedule=f"split i by {block} -> io, ii\n parallel io")
    run_and_check(text, {"M": m, "N": n})
