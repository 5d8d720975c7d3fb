"""Accumulation chains that the out-of-order window overlaps, in both models.

A reduction's successive entries are independent chains; the core runs as many of them at once as
its window holds.  Softmax over rows one at a time puts a row's max, exp, sum and divide passes
between two entries of its max chain, so the window holds little more than one chain; with the
rows split into blocks (`split i by 16`) each pass runs over a block, and the chains of successive
rows sit side by side.  Measured on Zen 3 (4096 x 1024, 2 threads): rows 2.67 ms, blocks of 16
2.32 ms.  Both the full model (`irkit.perf.analysis`) and the tuner's screening model
(`irkit.tune.estimate`, `irkit.tune.batch`) must rank the blocks first, and only where the
hardware has a window.  The test machine has the measured host's latencies (a vector maximum 4.51
cycles, an FMA 4.02): how much the chains of a block wait for the pipes they share with the rest
of the pass (`irkit.perf.runtime.contended`) depends on them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from irkit.dialects import design as d
from irkit.directives import entry_of
from irkit.frontend import parse_design
from irkit.perf import load_hardware, predict
from irkit.tune import batch, estimate
from irkit.tune.candidate import extend, start
from irkit.tune.stages import read_kernel
from irkit.validate.suite import replace_schedules

SOFTMAX = Path(__file__).resolve().parents[2] / "bench" / "documents" / "softmax.design"
SIZES = {"M": 4096, "N": 1024}
ROWS = ["parallel i", "vectorize j by 16"]
BLOCKS = ["split i by 16 -> io, ii", "parallel io", "vectorize j by 16"]
# the row's passes over j in pieces of 384 (the last one shorter: bounds that use jo)
ROW_PIECES = ["parallel i", "split j by 384 -> jo, ji", "vectorize ji by 16"]


def hw_text(window: str) -> str:
    return (
        "hardware win {\n  cores 2\n  simd 256 bits\n  frequency 3.2 GHz\n  flops_f32 100 GFLOP/s\n"
        "  flops_f64 50 GFLOP/s\n  exp_f32 1.5 GFLOP/s\n  div_f32 7 GFLOP/s\n  fp_latency 3 cycles\n"
        "  max_latency 1.96 cycles\n  vmax_latency 4.51 cycles\n  fma_latency 4.02 cycles\n"
        f"{window}"
        "  cache L1 { size 32 KiB; line 64 B; bandwidth 260 GB/s; ways 8 }\n"
        "  cache L2 { size 512 KiB; line 64 B; bandwidth 130 GB/s; ways 8 }\n"
        "  cache L3 { size 32 MiB; line 64 B; bandwidth 100 GB/s; ways 16 }\n"
        "  dram { bandwidth 50 GB/s; bandwidth_core 35 GB/s }\n}\n"
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = tmp_path_factory.mktemp("window")
    (out / "window.hw").write_text(hw_text("  ooo_window 579\n"))
    (out / "none.hw").write_text(hw_text(""))
    for name, texts in (("rows", ROWS), ("blocks", BLOCKS), ("pieces", ROW_PIECES)):
        (out / f"{name}.design").write_text(replace_schedules(SOFTMAX.read_text(), {"P": texts}))
    return out


def _full(files, name: str, hw: str):
    return predict(files / f"{name}.design", SIZES, load_hardware(files / hw))


def test_the_full_model_overlaps_the_chains_of_a_block_of_rows_not_of_single_rows(files):
    rows, blocks = _full(files, "rows", "window.hw"), _full(files, "blocks", "window.hw")
    assert rows.breakdown["chain"] > 1.3 * blocks.breakdown["chain"]
    assert rows.seconds > blocks.seconds
    # without a window no chain overlaps another: the two chains are priced alike
    rows0, blocks0 = _full(files, "rows", "none.hw"), _full(files, "blocks", "none.hw")
    assert rows0.breakdown["chain"] == pytest.approx(blocks0.breakdown["chain"], rel=1e-6)


def test_the_other_loops_between_entries_may_have_bounds_that_use_their_own_variables(files):
    """A row's passes split in pieces of 384: the last piece's bounds use `jo`; the instructions
    between two entries of the max chain are summed over the pieces, and the row is still priced
    as a row (its chains barely overlap), not refused."""
    pieces, blocks = _full(files, "pieces", "window.hw"), _full(files, "blocks", "window.hw")
    assert pieces.breakdown["chain"] > 1.3 * blocks.breakdown["chain"]


def _nest(info, texts: list[str]):
    module = parse_design(replace_schedules(SOFTMAX.read_text(), {"P": texts}), "x.design", check=False)
    (sched,) = [op for op in module.walk() if isinstance(op, d.ScheduleOp)]
    c = start(info, ())
    for e in (entry_of(op) for op in sched.body.block.ops):
        c = extend(c, e, info)
        assert c is not None, texts
    return c.nest


@pytest.mark.parametrize(("hw", "faster"), [("window.hw", True), ("none.hw", False)])
def test_the_screening_model_ranks_blocks_first_only_with_a_window(files, hw, faster):
    kernel = read_kernel(SOFTMAX.read_text(), str(SOFTMAX), SIZES)
    info = kernel.stages["P"]
    m = estimate.Machine.of(load_hardware(files / hw))
    rows, blocks = _nest(info, ROWS), _nest(info, BLOCKS)
    ref_rows = estimate.stage_seconds(info, rows, m, kernel.relaxed)
    ref_blocks = estimate.stage_seconds(info, blocks, m, kernel.relaxed)
    assert (ref_blocks < ref_rows) is faster
    # the batched model gives the same figures, padding the rows' shorter nest
    got = batch.stage_seconds(info, [rows, blocks], m, kernel.relaxed)
    assert got[0] == pytest.approx(ref_rows, rel=1e-9)
    assert got[1] == pytest.approx(ref_blocks, rel=1e-9)
