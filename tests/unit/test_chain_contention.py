"""Chains that share the FP pipes with the work that bounds them (`irkit.perf.runtime.contended`),
and a register tile's accumulators as such chains, in the full model and the screening model.

gemm 2048^3 on Zen 3 (2 threads): a tile of 4 rows x 2 vectors (8 FMA chains of 4 cycles on 2
pipes) ran 150-160 ms, 6 x 2 (12 chains) 100-110 ms.  The roofline's max priced them alike.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from irkit.dialects import design as d
from irkit.directives import entry_of
from irkit.frontend import parse_design
from irkit.perf import load_hardware, predict
from irkit.perf.runtime import contended
from irkit.tune import batch, estimate
from irkit.tune.candidate import extend, start
from irkit.tune.stages import read_kernel
from irkit.validate.suite import replace_schedules

GEMM = Path(__file__).resolve().parents[2] / "bench" / "documents" / "gemm.design"
SIZES = {"M": 2048, "N": 2048, "K": 2048}
HW = (
    "hardware pipes {\n  cores 2\n  simd 256 bits\n  frequency 3.2 GHz\n  flops_f32 102.4 GFLOP/s\n"
    "  flops_f64 51.2 GFLOP/s\n  fp_latency 3 cycles\n  fma_latency 4 cycles\n"
    "  cache L1 { size 32 KiB; line 64 B; bandwidth 260 GB/s; ways 8 }\n"
    "  cache L2 { size 512 KiB; line 64 B; bandwidth 130 GB/s; ways 8 }\n"
    "  cache L3 { size 32 MiB; line 64 B; bandwidth 100 GB/s; ways 16 }\n"
    "  dram { bandwidth 50 GB/s; bandwidth_core 35 GB/s }\n}\n"
)


def tile(rows: int) -> list[str]:
    return [
        f"tile i, j by {rows * 34}, 1024 -> io, jo, ii, ji",
        "split k by 256 -> ko, ki",
        "split ji by 16 -> jr, jv",
        "reorder jo, ko, io, jr, ii, ki, jv",
        "parallel jo",
        "vectorize jv by 16",
        f"unroll_jam ii by {rows}",
        "pack B at ko",
    ]


def test_contended_is_the_max_far_from_the_knee_and_more_near_it():
    depth = 8.0
    assert contended(1.0, 0.0, depth) == 1.0  # no chain
    assert contended(0.0, 2.0, depth) == 2.0  # nothing but the chain
    assert contended(1.0, 100.0, depth) == pytest.approx(100.0, rel=1e-3)  # one chain: its latency
    assert contended(1.0, 1e-3, depth) == pytest.approx(1.0, rel=1e-6)  # many chains: the peak
    assert contended(1.0, 1.0, depth) == pytest.approx(1.0 / 0.821, rel=2e-3)  # n = depth: 82%
    assert contended(1.0, 2.0 / 3.0, depth) == pytest.approx(1.0 / 0.973, rel=2e-3)  # n = 1.5 depth
    assert contended(1.0, 1.0, 1.0) == 1.0  # a pipe one op deep: nothing to wait for
    # arrays as the runtime prices size sweeps
    got = contended(np.array([1.0, 1.0]), np.array([0.0, 1.0]), depth)
    assert got.tolist() == pytest.approx([1.0, 1.0 / 0.821], rel=2e-3)


@settings(max_examples=200, deadline=None)
@given(
    st.floats(1e-9, 1.0),
    st.floats(0.0, 1.0),
    st.floats(1.0, 40.0),
    st.floats(1.0, 4.0),
)
@example(0.875, 0.4375, 1.25, 2.0)  # the table's peak past a small depth: the time fell as the chain grew
def test_contended_lies_between_the_max_and_the_sum_and_grows_with_the_chain(compute, chain, depth, more):
    got = float(contended(compute, chain, depth))
    assert max(compute, chain) * (1 - 1e-12) <= got <= (compute + chain) * (1 + 1e-12)
    assert float(contended(compute, chain * more, depth)) >= got * (1 - 1e-12)


@pytest.fixture(scope="module")
def hw_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pipes") / "pipes.hw"
    path.write_text(HW)
    return path


def test_the_full_model_prices_a_tile_of_8_fma_chains_slower_than_one_of_12(hw_file, tmp_path):
    hw = load_hardware(hw_file)
    seconds = {}
    for rows in (4, 6):
        doc = tmp_path / f"gemm{rows}.design"
        doc.write_text(replace_schedules(GEMM.read_text(), {"C": tile(rows)}))
        p = predict(doc, SIZES, hw)
        seconds[rows] = p.seconds
        assert p.breakdown["chain"] > 0.6 * p.breakdown["compute"]  # the tile's chains are priced
    assert seconds[4] > 1.1 * seconds[6]


def test_the_screening_model_prices_them_alike_and_the_batch_agrees(hw_file):
    kernel = read_kernel(GEMM.read_text(), str(GEMM), SIZES)
    info = kernel.stages["C"]
    m = estimate.Machine.of(load_hardware(hw_file))
    assert m.pipes == pytest.approx(2.0)
    nests = []
    for rows in (4, 6):
        module = parse_design(replace_schedules(GEMM.read_text(), {"C": tile(rows)}), "x.design", check=False)
        (sched,) = [op for op in module.walk() if isinstance(op, d.ScheduleOp)]
        c = start(info, kernel.reads["C"])
        for e in (entry_of(op) for op in sched.body.block.ops):
            c = extend(c, e, info)
            assert c is not None
        nests.append(c.nest)
    ref = [estimate.stage_seconds(info, n, m, kernel.relaxed) for n in nests]
    assert ref[0] > 1.1 * ref[1]
    assert list(batch.stage_seconds(info, nests, m, kernel.relaxed)) == pytest.approx(ref, rel=1e-9)
