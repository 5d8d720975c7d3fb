"""What keeps `irkit calibrate` within its 30 s: repeated fits that stop once a majority agrees,
and DRAM-sized cases that reuse the memory of the ones before them (no page faults twice)."""

from __future__ import annotations

import numpy as np
import pytest

from irkit.calibrate import fit
from irkit.perf import load_hardware

HW = (
    "hardware speedhw {\n  cores 1\n  simd 256 bits\n  frequency 3 GHz\n  flops_f32 96 GFLOP/s\n"
    "  flops_f64 48 GFLOP/s\n  fp_latency 4 cycles\n"
    "  cache L1 { size 32 KiB; line 64 B; bandwidth 200 GB/s; ways 8 }\n"
    "  cache L2 { size 1 MiB; line 64 B; bandwidth 100 GB/s; ways 8 }\n"
    "  cache L3 { size 32 MiB; line 64 B; bandwidth 40 GB/s; ways 16 }\n"
    "  dram { bandwidth 40 GB/s; bandwidth_core 20 GB/s }\n}\n"
)

SCALE = (
    "design cal_scale_t {\n  sizes { N = 1024 }\n  tensor x : f32[N] input\n  tensor y : f32[N] output\n"
    "  y[i] = x[i] * 1.5\n}\n"
)


@pytest.fixture()
def hw(tmp_path):
    (tmp_path / "speed.hw").write_text(HW)
    return load_hardware(tmp_path / "speed.hw")


def scripted_step(hw, monkeypatch, label: str, outcomes: list[float | None]):
    """Run the fit step labelled `label` with each fit returning the next of `outcomes` (None: a
    fit left out); (the step's figures, the outcomes used)."""
    calls = iter(outcomes)
    seen: list[float | None] = []

    def fitted(case, hardware, cflags=None):
        v = next(calls)
        seen.append(v)
        return fit.Fitted(case.figure, v, 1e-3, "left out" if v is None else "")

    monkeypatch.setattr(fit, "fit_case", fitted)
    step = next(s for s in fit.plan(hw) if s.label.startswith(label))
    return step.run(hw, None), seen


@pytest.mark.parametrize(
    ("outcomes", "runs", "value"),
    [
        ([0.80, 0.81, 0.82], 5, 0.81),  # three of five within 5%: the median of five lies among them
        ([0.80, 0.81], 3, 0.81),  # two of three
        ([0.5, 0.8, 0.81, 0.6, 0.9], 5, 0.8),  # no three agree: all five run
        ([0.80, None, 0.81, 0.82], 5, 0.81),  # a leave-out among them: three kept values agree
        ([0.07, 0.10, 0.09], 5, 0.09),  # an overlap near 0: within 5% of its 0-1 range
    ],
)
def test_repeated_fits_stop_once_a_majority_agrees(hw, monkeypatch, outcomes, runs, value):
    label = "L2 overlap" if runs == 5 else "out-of-order window"
    got, seen = scripted_step(hw, monkeypatch, label, outcomes)
    assert len(seen) == len(outcomes)
    assert got[0].value == value


@pytest.mark.parametrize(
    ("outcomes", "runs", "value"),
    [
        ([None, None, None], 3, None),  # three leave-outs of five decide
        ([0.5, None, None, None], 4, None),
        ([0.5, 0.7, 0.6, 0.9, 0.4], 5, 0.6),  # no three agree: all five run, the median kept
    ],
)
def test_a_noisy_fit_stops_when_the_rest_could_not_outvote_a_leave_out(hw, monkeypatch, outcomes, runs, value):
    (got,), seen = scripted_step(hw, monkeypatch, "L2 overlap", outcomes)
    assert len(seen) == runs and got.value == value


def test_a_dropped_case_lends_its_memory_to_the_next(monkeypatch):
    """A case pushed out of the built cases leaves its large buffers for the next case, which
    gets them filled with its own values and still times correctly."""
    monkeypatch.setattr(fit, "SPARE_FROM", 1024)
    monkeypatch.setattr(fit, "TIMED_KEPT", 1)
    fit.release_built()
    first = fit.compile_timed(SCALE, {"N": 4096})
    first_raws = list(first.raws)
    assert len(first_raws) == 2 and all(raw.size >= 4096 * 4 for raw in first_raws)
    second = fit.compile_timed(SCALE, {"N": 2048})  # drops the first: its buffers are spare
    x, y = second.keep
    assert any(np.shares_memory(x, raw) for raw in first_raws)
    assert np.all((x >= 0.5) & (x < 1.5))
    assert second.seconds(3) > 0.0
    np.testing.assert_allclose(y, x * np.float32(1.5))
    fit.release_built()
    assert not fit._SPARE


def test_a_large_case_gives_way_to_the_next_one_and_sizes_share_one_build(monkeypatch):
    """The stream sweep's four documents of one size each reuse the previous one's memory (with
    two built cases kept, the second used to fault in hundreds of MiB afresh); and a document at a
    second size (its baseline at size 1) is not lowered or compiled again."""
    monkeypatch.setattr(fit, "SPARE_FROM", 1024)
    monkeypatch.setattr(fit, "SPARE_STEP", 4096)
    fit.release_built()
    builds = []
    import irkit

    original = irkit.compile
    monkeypatch.setattr(irkit, "compile", lambda *a, **k: builds.append(a[0]) or original(*a, **k))
    first = fit.compile_timed(SCALE, {"N": 4096})
    first_raws = list(first.raws)
    other = SCALE.replace("* 1.5", "* 2.5")
    second = fit.compile_timed(other, {"N": 4096})  # a different document: the first is done
    assert any(np.shares_memory(second.keep[0], raw) for raw in first_raws)
    fit.compile_timed(SCALE, {"N": 1})
    fit.compile_timed(SCALE, {"N": 2048})
    assert builds == [SCALE, other]
    fit.release_built()


def test_a_fresh_large_buffer_is_rounded_up_so_a_slightly_larger_case_reuses_it():
    assert fit._spare_size(100) == 100
    step = fit.SPARE_STEP
    assert fit._spare_size(fit.SPARE_FROM + 1) == step
    assert fit._spare_size(7 * step + 1) == 8 * step
    assert fit._spare_size(8 * step) == 8 * step


def test_a_spare_buffer_is_the_smallest_that_fits(monkeypatch):
    monkeypatch.setattr(fit, "SPARE_FROM", 16)
    monkeypatch.setattr(fit, "_SPARE", [np.empty(n, np.uint8) for n in (400, 100, 200)])
    assert fit._spare_buffer(150).size == 200
    assert fit._spare_buffer(500) is None
    assert fit._spare_buffer(8) is None  # small arrays are not pooled
    assert sorted(raw.size for raw in fit._SPARE) == [100, 400]


def test_the_window_falls_back_to_longer_entries_only_when_entries_of_128_reach_no_time():
    """gcc's fold-left loop built for AVX2 overlapped its 128-element chains until the core's
    arithmetic bounded it (19.5 us measured, 19.8 at any window): the window went unwritten and
    every chain was priced alone. Entries of 256 expose the chains again."""
    calls = []

    def step(value, note):
        def run(hw, cflags):
            calls.append(note)
            return [fit.Fitted("ooo_window", value, 1e-5, note)]

        return run

    got = fit.window_fit(step(None, "left out"), step(540.0, "entries of 256"))(None, None)
    assert got[0].value == 540.0 and calls == ["left out", "entries of 256"]
    assert "entries of 128: left out" in got[0].note
    calls.clear()
    got = fit.window_fit(step(640.0, "fitted"), step(540.0, "entries of 256"))(None, None)
    assert got[0].value == 640.0 and calls == ["fitted"]
    longer = fit.longer_entries(fit.chain_cases()[4])
    assert longer.sizes == {"E": 256, "L": 256} and "entries of 256" in longer.why


def test_dram_overlap_is_not_fitted_and_the_plan_counts_its_steps(hw):
    """`dram.overlap` measured noise on the Xeon model 167 guest (left out, 0.02, left out, 1.0
    in four calibrations): the plan fits the caches' overlaps only, and the step count the
    progress line announces is the plan's."""
    labels = [step.label for step in fit.plan(hw)]
    assert [label for label in labels if "overlap with the core" in label] == [
        "L2 overlap with the core's work",
        "L3 overlap with the core's work",
    ]
    assert len(labels) == fit.planned(len(hw.values["levels"]), quick=False, ways=True)
