"""The last cache keeps a share of a kernel larger than its measured capacity (issue 15, item 2).

A guest's share of a shared L3 is not a cliff: `irkit calibrate`'s working-set sweep slows
gradually past it.  `runtime.resident_share` is a randomly replacing cache's steady state for a
repeated sweep, anchored where the description's `effective_size` says the speed crossed the
geometric mean of the level's and DRAM's.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from irkit.perf import load_hardware, predict, runtime

MIB = 2**20


def hw_text(l3: str) -> str:
    return (
        "hardware reshw {\n  cores 1\n  simd 256 bits\n  frequency 3 GHz\n  flops_f32 96 GFLOP/s\n"
        "  flops_f64 48 GFLOP/s\n  fp_latency 4 cycles\n"
        "  cache L1 { size 32 KiB; line 64 B; bandwidth 200 GB/s; ways 8 }\n"
        "  cache L2 { size 1 MiB; line 64 B; bandwidth 100 GB/s; ways 8 }\n"
        f"  cache L3 {{ size 480 MiB; {l3}line 64 B; bandwidth 40 GB/s; shared 2; ways 16 }}\n"
        "  dram { bandwidth 40 GB/s; bandwidth_core 20 GB/s }\n}\n"
    )


ROWS = (
    "design rows {\n  sizes { M = 8192, N = 2048 }\n  tensor X : f32[M, N] input\n  tensor s : f32[M] output\n"
    "  s[i] += X[i, j]\n  schedule s {\n    vectorize j\n  }\n}\n"
)


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    d = tmp_path_factory.mktemp("res")
    (d / "rows.design").write_text(ROWS)
    (d / "measured.hw").write_text(hw_text("effective_size 32 MiB; "))
    (d / "reported.hw").write_text(hw_text(""))
    return d


def dram_seconds(docs, hw_name: str, mib: int, cold: bool = False) -> float:
    sizes = {"M": mib * MIB // (2048 * 4), "N": 2048}
    hw = load_hardware(docs / hw_name)
    return float(predict(docs / "rows.design", sizes, hw, cold=cold).breakdown["DRAM"])


def test_the_share_at_the_measured_capacity_is_the_sweeps_crossing():
    """At `effective_size` the bandwidth of the mixture is the geometric mean of the two levels'."""
    h = float(runtime.resident_share(96 * MIB, 96 * MIB, 27.5, 15.6))
    mixed = 1.0 / (h / 27.5 + (1 - h) / 15.6)
    assert mixed == pytest.approx(np.sqrt(27.5 * 15.6), rel=1e-3)


def test_the_xeon_guests_sweep_is_reproduced():
    """The sweep of the Xeon model 167 guest (2026-12-03): GB/s at 63, 80, 100, 127, 160, 200 MiB."""
    measured = {63: 27.1, 80: 25.9, 100: 21.4, 127: 18.1, 160: 16.6, 200: 15.8}
    for mib, bw in measured.items():
        h = float(runtime.resident_share(mib * MIB, 96 * MIB, 27.5, 15.6))
        assert 1.0 / (h / 27.5 + (1 - h) / 15.6) == pytest.approx(bw, rel=0.08)


@given(
    st.floats(0.01, 50.0),
    st.floats(0.01, 50.0),
    st.floats(1.0, 8.0),
)
def test_the_share_falls_with_the_footprint_and_stays_a_share(a, b, ratio):
    small, large = sorted((a, b))
    hs = runtime.resident_share(np.array([small, large]) * MIB, 4 * MIB, 20.0 * ratio, 20.0)
    assert np.all((hs >= 0.0) & (hs <= 1.0))
    assert hs[0] >= hs[1] - 1e-9


def test_a_kernel_well_inside_is_kept_whole_and_one_far_beyond_is_not():
    h = runtime.resident_share(np.array([1.0, 10_000.0]) * MIB, 32 * MIB, 40.0, 20.0)
    assert h[0] == 1.0 and h[1] < 1e-3


def test_dram_traffic_grows_smoothly_past_a_measured_capacity(docs):
    """64 MiB against an effective 32 MiB: some of it stays; 4x beyond: little does."""
    cold64 = dram_seconds(docs, "measured.hw", 64, cold=True)
    kept64 = dram_seconds(docs, "measured.hw", 64)
    assert dram_seconds(docs, "measured.hw", 16) == 0.0
    assert 0.05 * cold64 < kept64 < 0.95 * cold64
    assert dram_seconds(docs, "measured.hw", 256) > 0.9 * dram_seconds(docs, "measured.hw", 256, cold=True)


def test_a_reported_size_alone_is_still_a_cliff(docs):
    """Without a measured end the description says nothing of how the speed falls: fit or not."""
    assert dram_seconds(docs, "reported.hw", 64) == 0.0  # within half of 480 MiB
    full = dram_seconds(docs, "reported.hw", 512, cold=True)
    assert dram_seconds(docs, "reported.hw", 512) == pytest.approx(full)


# ---- fills and write-backs priced apart (a read-only stream beside the triad) ----------------------


def test_without_a_read_figure_every_byte_costs_the_triads_rate():
    assert runtime.transfer_seconds(12.0, 4.0, 40.0) == pytest.approx(16.0 / 40.0)


@given(st.floats(10.0, 100.0), st.floats(0.76, 2.9))
def test_the_triad_itself_is_priced_at_its_own_rate(triad, ratio):
    """Three fills and a write-back an element take the triad's time whatever the read rate."""
    assert runtime.transfer_seconds(12.0, 4.0, triad, triad * ratio) == pytest.approx(16.0 / triad)


def test_a_read_only_stream_is_priced_at_the_read_rate_and_write_backs_beside_fills_are_free():
    """The Xeon model 167 guest's L3: 29.5 GB/s read-only, 39.5 in the triad's bytes."""
    assert runtime.transfer_seconds(1.0, 0.0, 39.5, 29.5) == pytest.approx(1.0 / 29.5)
    assert runtime.transfer_seconds(8.0, 4.0, 39.5, 29.5) == pytest.approx(8.0 / 29.5, rel=0.01)
    # ... and where write-backs are dear (the Zen 4 guest's DRAM: 41 read-only, 28 triad) they cost more
    assert runtime.transfer_seconds(1.0, 0.0, 28.0, 41.0) == pytest.approx(1.0 / 41.0)
    assert runtime.transfer_seconds(0.0, 1.0, 28.0, 41.0) == pytest.approx(4.0 / 28.0 - 3.0 / 41.0)
    # write-backs alone are not free
    assert runtime.transfer_seconds(0.0, 1.0, 39.5, 29.5) == pytest.approx(1.0 / 39.5)


def test_a_read_only_kernel_from_l3_is_priced_at_the_read_rate(docs, tmp_path):
    """8 MiB summed from L3 (one core): the L3 term scales by triad / read."""
    (tmp_path / "plain.hw").write_text(hw_text(""))
    (tmp_path / "read.hw").write_text(hw_text("bandwidth_read 20 GB/s; "))
    sizes = {"M": 8 * MIB // (2048 * 4), "N": 2048}
    plain = predict(docs / "rows.design", sizes, load_hardware(tmp_path / "plain.hw")).breakdown["L3"]
    read = predict(docs / "rows.design", sizes, load_hardware(tmp_path / "read.hw")).breakdown["L3"]
    assert plain > 0 and read == pytest.approx(plain * 40.0 / 20.0, rel=0.01)  # (s's few write-backs)


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("size 480 MiB; ", "size 480 MiB; bandwidth_read 400 GB/s; "), "bandwidth_read"),
        (("bandwidth_core 20 GB/s", "bandwidth_core 20 GB/s; bandwidth_read_core 2 GB/s"), "bandwidth_read_core"),
    ],
)
def test_the_checker_refuses_a_read_rate_far_from_its_triad(tmp_path, edit, field):
    from irkit.diagnostics import DiagnosticError

    path = tmp_path / "bad.hw"
    path.write_text(hw_text("").replace(*edit))
    with pytest.raises(DiagnosticError) as err:
        load_hardware(path)
    assert field in str(err.value) and "read-only stream" in str(err.value)
    assert "bad.hw:" in str(err.value)  # located


def test_read_rates_parse(tmp_path):
    path = tmp_path / "ok.hw"
    text = hw_text("bandwidth_read 30 GB/s; ").replace("bandwidth_core 20 GB/s", "bandwidth_core 20 GB/s; bandwidth_read_core 16 GB/s")
    path.write_text(text)
    v = load_hardware(path).values
    assert v["levels"][2]["bandwidth_read"] == pytest.approx(30e9) and v["dram_bandwidth_read_core"] == pytest.approx(16e9)


def test_calibration_checks_a_read_rate_against_its_triad():
    from irkit.calibrate import plausible
    from irkit.calibrate.detect import CacheLevel

    caches = [CacheLevel(1, 48 * 1024, 64, 1, 12), CacheLevel(2, 2 * MIB, 64, 1, 16)]
    ctx = plausible.Context(widths=[512], threads=1, cpus=1, caches=caches)
    values = {"L2.bandwidth": 160e9, "L2.bandwidth_read": 20e9, "dram.bandwidth_core": 20e9, "dram.bandwidth_read_core": 16e9}
    problems = {p.figure for p in plausible.memory_problems(values, ctx)}
    assert "L2.bandwidth_read" in problems and "dram.bandwidth_read_core" not in problems
