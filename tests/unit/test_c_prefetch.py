"""The C backend's prefetch of the next register block (`c_plan.plan_prefetch`), and the cost
model's view of it: the lines a prefetched block brings are not waited for."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func

from irkit import api
from irkit.backends import c_plan
from irkit.backends.c import emit_c
from irkit.backends.harness import ASAN_FLAGS, run_harness
from irkit.dialects.loop import ForOp
from irkit.frontend import parse_design
from irkit.perf import load_hardware, predict, reader
from irkit.perf.predict import _MODELS
from tests.unit.test_c_vector import asan_or_skip

GEMM = """design mm {
  sizes { M = 64, N = 64, K = 64 }
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output
  C[i, j] += A[i, k] * B[k, j]
  schedule C {
    split j by 8 -> jo, jv
    reorder jo, i, k, jv
    parallel jo
    vectorize jv by 8
    unroll_jam i by 4
  }
}
"""

HW = """hardware pf {
  cores 1
  simd 256 bits
  frequency 3 GHz
  flops_f32 96 GFLOP/s
  flops_f64 48 GFLOP/s
  fp_latency 4 cycles
  ooo_window 512
  cache L1 { size 32 KiB; line 64 B; bandwidth 200 GB/s; ways 8 }
  cache L2 { size 512 KiB; line 64 B; bandwidth 100 GB/s; ways 8 }
  cache L3 { size 4 MiB; line 64 B; bandwidth 50 GB/s; ways 16 }
  dram { bandwidth 30 GB/s; bandwidth_core 20 GB/s; latency 150 ns }
}
"""


def loops(document: str) -> dict[str, ForOp]:
    module = api.lower(parse_design(document, "t.design"))["loop"]
    kernel = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    out: dict[str, ForOp] = {}
    for op in kernel.walk():
        if isinstance(op, ForOp):
            out.setdefault(op.loop_name.data, op)  # the first of each name: the full blocks, not the tails
    return out


def test_the_register_blocks_loop_prefetches_its_next_fill():
    by_name = loops(GEMM)
    plans = c_plan.plan_prefetch(by_name["i"])
    assert len(plans) == 1
    plan = plans[0]
    assert plan.trips == 8  # the vector loop of the fill: one block row of 8 lanes
    assert len(plan.loads) == 4  # one load a row of the 4-row block
    assert {load.memref for load in plan.loads} == plan.written  # C: read, then written back


def test_a_parallel_loop_and_a_reduction_loop_prefetch_nothing():
    by_name = loops(GEMM)
    assert c_plan.plan_prefetch(by_name["jo"]) == []  # its next iteration is another thread's
    assert c_plan.plan_prefetch(by_name["k"]) == []  # it fills no register block


def test_a_fill_of_a_variable_trip_count_is_not_planned():
    """The column tail's block (`jo_tail`, at N = 61) fills `min(jo_tail + 8, N) - jo_tail`
    columns: not a constant trip count, so nothing is prefetched there."""
    module = api.lower(parse_design(GEMM.replace("M = 64, N = 64", "M = 64, N = 61"), "t.design"))["loop"]
    kernel = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    tail = next(op for op in kernel.body.block.ops if isinstance(op, ForOp) and op.loop_name.data == "jo_tail")
    block = next(op for op in tail.walk() if isinstance(op, ForOp) and op.loop_name.data == "i")
    fill = next(op for op in block.body.block.ops if isinstance(op, ForOp))
    assert c_plan.constant_trips(fill) is None
    assert c_plan.plan_prefetch(block) == []


def test_prefetched_kernel_computes_the_same_at_odd_sizes():
    kernel = api.compile(GEMM, sizes={"M": 37, "N": 29, "K": 13})
    rng = np.random.default_rng(1)
    a = rng.standard_normal((37, 13), dtype=np.float32)
    b = rng.standard_normal((13, 29), dtype=np.float32)
    got = kernel({"M": 37, "N": 29, "K": 13}, A=a, B=b)["C"]
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sizes", [{"M": 37, "N": 29, "K": 13}, {"M": 4, "N": 8, "K": 3}, {"M": 3, "N": 7, "K": 2}])
def test_prefetches_are_asan_clean(sizes):
    """The guard forms only addresses of an iteration that runs: at sizes where the block loop runs
    once, or never (M < 4: only the row tail), nothing out of bounds is touched."""
    asan_or_skip()
    module = api.lower(parse_design(GEMM, "t.design"))["loop"]
    assert "__builtin_prefetch" in emit_c(module)
    flags = [*ASAN_FLAGS, "-O3", "-march=native", "-fno-math-errno"]
    result = run_harness(module, None, sizes, flags)
    assert result.returncode == 0, result.stderr[-3000:]


def test_the_model_does_not_wait_for_prefetched_blocks(tmp_path, monkeypatch):
    """At a size where C comes from DRAM at every block, the prefetched kernel's DRAM waits are
    smaller than the same kernel's priced as if nothing were prefetched."""
    (tmp_path / "mm.design").write_text(GEMM)
    (tmp_path / "pf.hw").write_text(HW)
    hw = load_hardware(tmp_path / "pf.hw")
    sizes = {"M": 2048, "N": 2048, "K": 64}
    _MODELS.clear()
    with_prefetch = predict(tmp_path / "mm.design", sizes, hw).seconds
    monkeypatch.setattr(reader, "plan_prefetch", lambda op: [])
    _MODELS.clear()
    without = predict(tmp_path / "mm.design", sizes, hw).seconds
    _MODELS.clear()
    assert with_prefetch < 0.9 * without


PACKED = GEMM.replace(
    """    split j by 8 -> jo, jv
    reorder jo, i, k, jv
    parallel jo
    vectorize jv by 8
    unroll_jam i by 4""",
    """    tile i, j by 96, 512 -> io, jo, ii, ji
    split k by 256 -> ko, ki
    split ji by 16 -> jr, jv
    reorder jo, ko, io, jr, ii, ki, jv
    parallel jo
    vectorize jv by 16
    unroll_jam ii by 6
    pack B at ko
    pack A at io""",
)


def _c_boxes(document: str, at: str):
    """The boxes of C at loop `at` of the kernel's nest that has it."""
    from irkit.backends.c_plan import stream_threshold
    from irkit.perf.footprint import boxes
    from irkit.perf.reader import Reader

    module = api.lower(parse_design(document, "t.design"))["loop"]
    kernel = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    top: list = []
    Reader(kernel, stream_threshold(kernel)).read_block(kernel.body.block, None, top)
    loop = next(lp for nest in top for lp in nest.walk() if lp.name == at)
    return [b for b in boxes(loop, True) if b.buf.name == "C"]


def test_the_column_tail_waits_for_its_block_as_much_as_it_runs():
    """The full blocks' fills are prefetched, not waited for; the column tail's (unprefetched: its
    trip count varies) are, where the tail runs."""
    from irkit.perf import expr as ex

    boxes = _c_boxes(PACKED, "io")
    blocks = [b for b in boxes if b.loads == "prefetched"]
    tails = [b for b in boxes if b.loads == "waited"]
    assert blocks and tails
    assert all(b.waited.is_const and b.waited.value == 0 for b in blocks)

    def runs(b, n: int) -> float:  # in the last tile of columns
        env = {name: 0.0 for name in b.present.free()}
        env.update({"M": 2048.0, "N": float(n), "K": 2048.0, "jo": 512.0})
        return float(ex.evaluate({"p": b.present}, env)["p"])

    assert all(runs(b, 1024) == 0.0 for b in tails)  # 16 divides the tile's 512 columns
    assert any(runs(b, 1000) == 1.0 for b in tails)  # 488 columns in the last tile: a tail of 8


def test_a_box_of_stores_alone_is_waited_for_unless_it_writes_a_prefetched_block():
    """A dense stream of store misses fills the store buffer (elementwise's outputs: priced 21%
    fast on the Zen 3 guest when they were not waited for); the block's stores write back the
    lines its fill brought."""
    from irkit.perf.footprint import _loads_kind
    from irkit.perf.loop_tree import Access, Buffer

    buf = Buffer("C", 4, [], [], "output")
    assert _loads_kind([Access(buf, True, [])]) == "none"
    assert _loads_kind([Access(buf, True, []), Access(buf, False, [], prefetched=True)]) == "prefetched"
    assert _loads_kind([Access(buf, False, []), Access(buf, False, [], prefetched=True)]) == "waited"
    (init,) = _c_boxes(GEMM, "d0")  # the output's zero fill: stores alone
    assert init.loads == "none" and init.waited.is_const and init.waited.value == 1
