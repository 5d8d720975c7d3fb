"""The screening model's register tiles (`irkit.tune.estimate`, mirrored in `irkit.tune.batch`).

An `unroll_jam` keeps the accumulators in registers across every loop between the jammed loop and
the innermost one, so they are loaded and stored once per that many iterations, not once per
iteration of the next loop out; an accumulator's load and store are one tile, whose registers count
once.  A packed copy is contiguous along the vector loop when that loop is inside the pack's loop.
conv2d with its output channels in lanes (`vectorize fv`, 8 pixels jammed, `pack Wt at fo`) ran
1.74 ms on Zen 3 against 2.0 ms for the pixels in lanes; before these rules the screening model
priced it at 6-11 ms, so the beam never kept it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from irkit.dialects import design as d
from irkit.directives import entry_of
from irkit.frontend import parse_design
from irkit.perf import load_hardware
from irkit.tune import batch, estimate
from irkit.tune.candidate import extend, start
from irkit.tune.stages import read_kernel
from irkit.validate.suite import replace_schedules

CONV = Path(__file__).resolve().parents[2] / "bench" / "documents" / "conv2d.design"
SIZES = {"N": 1, "C": 64, "F": 64, "H": 56, "W": 56}
HW = (
    "hardware tiles {\n  cores 2\n  simd 256 bits\n  frequency 3.2 GHz\n  flops_f32 100 GFLOP/s\n"
    "  flops_f64 50 GFLOP/s\n  fp_latency 3 cycles\n  fma_latency 4 cycles\n"
    "  cache L1 { size 32 KiB; line 64 B; bandwidth 260 GB/s; ways 8 }\n"
    "  cache L2 { size 512 KiB; line 64 B; bandwidth 130 GB/s; ways 8 }\n"
    "  cache L3 { size 32 MiB; line 64 B; bandwidth 100 GB/s; ways 16 }\n"
    "  dram { bandwidth 50 GB/s; bandwidth_core 35 GB/s }\n}\n"
)


def lanes(jam: int, pack: bool = True) -> list[str]:
    texts = [
        "split f by 8 -> fo, fv",
        "reorder fo, n, y, x, c, r, s, fv",
        "parallel fo",
        "vectorize fv by 8",
        f"unroll_jam x by {jam}",
    ]
    return texts + (["pack Wt at fo"] if pack else [])


PIXELS = [
    "split x by 8 -> xo, xv",
    "reorder n, y, xo, f, c, r, s, xv",
    "parallel y",
    "vectorize xv by 8",
    "unroll_jam f by 8",
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    hw = tmp_path_factory.mktemp("tiles") / "tiles.hw"
    hw.write_text(HW)
    kernel = read_kernel(CONV.read_text(), str(CONV), SIZES)
    return kernel, kernel.stages["O"], estimate.Machine.of(load_hardware(hw))


def _nest(kernel, texts: list[str]):
    info = kernel.stages["O"]
    module = parse_design(replace_schedules(CONV.read_text(), {"O": texts}), "x.design", check=False)
    (sched,) = [op for op in module.walk() if isinstance(op, d.ScheduleOp)]
    c = start(info, kernel.reads["O"])
    for e in (entry_of(op) for op in sched.body.block.ops):
        c = extend(c, e, info)
        assert c is not None, texts
    return c.nest


def test_more_accumulators_hide_the_fma_latency_and_eight_tiles_fit(setup):
    """Jams of 4, 6 and 8 rows: 8 independent accumulators cover the FMA latency on two pipes; the
    8-register tile is held (its load and store once, not 8 + 8 registers that do not fit)."""
    kernel, info, m = setup
    nests = [_nest(kernel, lanes(j)) for j in (4, 6, 8)]
    ref = [estimate.stage_seconds(info, n, m, kernel.relaxed) for n in nests]
    assert ref[2] < ref[1] < ref[0]
    # within a third of the pixels-in-lanes block, as measured (1.74 against 2.0 ms)
    pixels = estimate.stage_seconds(info, _nest(kernel, PIXELS), m, kernel.relaxed)
    assert ref[2] < 1.34 * pixels
    got = batch.stage_seconds(info, nests, m, kernel.relaxed)
    assert list(got) == pytest.approx(ref, rel=1e-9)


def test_an_unpacked_strided_operand_costs_a_load_a_lane(setup):
    """Without `pack Wt at fo` the weights are strided along the lanes: one load per lane."""
    kernel, info, m = setup
    packed, strided = _nest(kernel, lanes(8)), _nest(kernel, lanes(8, pack=False))
    ref = [estimate.stage_seconds(info, n, m, kernel.relaxed) for n in (packed, strided)]
    assert ref[0] < ref[1]
    got = batch.stage_seconds(info, [packed, strided], m, kernel.relaxed)
    assert list(got) == pytest.approx(ref, rel=1e-9)
