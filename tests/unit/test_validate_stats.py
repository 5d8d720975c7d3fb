"""`irkit.validate.stats`: percentage errors, percentiles and Kendall's tau-b, against values worked by hand."""

import math

import numpy as np
import pytest

from irkit.validate import stats


def test_percentage_errors():
    assert stats.signed_pct_error(1.1, 1.0) == pytest.approx(10.0)
    assert stats.signed_pct_error(0.5, 2.0) == pytest.approx(-75.0)
    assert stats.abs_pct_error(0.5, 2.0) == pytest.approx(75.0)
    assert stats.abs_pct_error(3.0, 3.0) == 0.0
    with pytest.raises(ValueError):
        stats.abs_pct_error(1.0, 0.0)


def test_percentiles_interpolate_linearly():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert stats.percentile([1, 2, 3, 4], 90) == pytest.approx(3.7)  # rank 0.9 * 3 = 2.7
    assert stats.percentile([5], 90) == 5
    assert stats.percentile([1, 2, 3, 4], 0) == 1 and stats.percentile([1, 2, 3, 4], 100) == 4
    rng = np.random.default_rng(1)
    for n in (2, 7, 60):
        xs = list(rng.random(n))
        for q in (10, 50, 90, 99):
            assert stats.percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)))
    with pytest.raises(ValueError):
        stats.percentile([], 50)
    with pytest.raises(ValueError):
        stats.percentile([1.0], 101)


def test_kendall_tau_without_ties():
    assert stats.kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert stats.kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # one swapped pair of six: (5 - 1) / 6
    assert stats.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # only the order matters, not the values
    assert stats.kendall_tau_b([0.001, 0.5, 7.0], [3e-6, 2e-6, 9.0]) == pytest.approx(1 / 3)


def test_kendall_tau_b_with_ties():
    # x ties one pair: C = 5, D = 0, Tx = 1, Ty = 0 -> 5 / sqrt(5 * 6)
    assert stats.kendall_tau_b([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(5 / math.sqrt(30))
    # a pair tied in both counts in both: C = 4, D = 1, Tx = Ty = 1 -> 3 / sqrt(5 * 5)
    assert stats.kendall_tau_b([1, 1, 2, 3], [1, 1, 3, 2]) == pytest.approx(0.6)
    # scipy.stats.kendalltau's documented example (tau-b): -0.47140452079103173
    assert stats.kendall_tau_b([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) == pytest.approx(-0.47140452079103173)


def test_kendall_tau_undefined():
    assert stats.kendall_tau_b([], []) is None
    assert stats.kendall_tau_b([1.0], [2.0]) is None
    assert stats.kendall_tau_b([1, 1, 1], [1, 2, 3]) is None  # no order on one side
    with pytest.raises(ValueError):
        stats.kendall_tau_b([1, 2], [1])


def _row(kernel, size, schedule, measured, predicted):
    return {
        "kernel": kernel,
        "size": size,
        "sizes": {"N": 1},
        "schedule": schedule,
        "measured_s": measured,
        "predicted_s": predicted,
        "error": None,
    }


def test_summary_over_rows():
    rows = [
        _row("a", "L2", "own", 1.0, 1.1),  # +10%
        _row("a", "L2", "naive", 4.0, 3.0),  # -25%
        _row("a", "L2", "serial", 2.0, 2.0),  # 0%
        _row("b", "DRAM", "own", 1.0, 2.0),  # +100%
        _row("b", "DRAM", "naive", 2.0, 1.5),  # -25%
        {**_row("b", "DRAM", "serial", None, None), "error": "compile: boom"},
    ]
    s = stats.summarize(rows)
    assert s["cases"] == 6 and s["compared"] == 5 and s["failed"] == 1
    assert s["median_abs_error_pct"] == pytest.approx(25.0)
    assert s["p90_abs_error_pct"] == pytest.approx(float(np.percentile([10, 25, 0, 100, 25], 90)))
    assert s["max_abs_error_pct"] == pytest.approx(100.0)
    taus = {(t["kernel"], t["size"]): t for t in s["groups"]}
    assert taus[("a", "L2")]["tau"] == 1.0
    assert taus[("a", "L2")]["measured_order"] == ["own", "serial", "naive"]
    assert taus[("b", "DRAM")]["tau"] == -1.0
    assert taus[("b", "DRAM")]["predicted_order"] == ["naive", "own"]
    assert s["mean_tau"] == 0.0 and s["min_tau"] == -1.0
    assert taus[("a", "L2")]["tau_tol"] == 1.0 and s["tie_tolerance"] == stats.TIE_TOLERANCE
    assert s["by_kernel"]["a"] == {"median_abs_error_pct": pytest.approx(10.0), "cases": 3}
    assert s["met"] == {
        "median_abs_error_pct": False,
        "p90_abs_error_pct": False,
        "mean_tau": False,
        "top1_share": False,
    }
    # a: the model ranks own first, the fastest (1.0); b: it ranks naive first, which takes twice own's time
    assert taus[("a", "L2")]["top1"] == 1.0 and taus[("a", "L2")]["pick"] == "own"
    assert taus[("b", "DRAM")]["pick"] == "naive" and taus[("b", "DRAM")]["top1"] == pytest.approx(0.5)
    assert s["top1_groups"] == 2 and s["top1_good"] == 1 and s["top1_share"] == 0.5
    assert s["mean_pairwise"] == pytest.approx(0.5)  # a: 3 of 3 pairs, b: 0 of 1
    assert s["spread_cases"] == 0 and s["within_spread"] == 0 and s["median_spread_pct"] is None


def test_summary_of_nothing():
    s = stats.summarize([])
    assert s["median_abs_error_pct"] is None and s["mean_tau"] is None and s["groups"] == []
    assert s["top1_share"] is None and s["mean_pairwise"] is None and not any(s["met"].values())


def test_kendall_tau_with_a_tie_tolerance():
    measured = [1.00, 1.03, 2.0, 4.0]  # the first two within 5%: their order is noise
    predicted = [1.2, 1.1, 2.5, 3.0]
    assert stats.kendall_tau_b(predicted, measured) == pytest.approx(4 / 6)
    # measured pair (0, 1) tied: C = 5, D = 0, Tx = 0, Ty = 1 -> 5 / sqrt(6 * 5)
    assert stats.kendall_tau_b(predicted, measured, 0.05) == pytest.approx(5 / math.sqrt(30))
    # both sides tied on that pair: 5 / sqrt(5 * 5)
    assert stats.kendall_tau_b([1.0, 1.01, 2.5, 3.0], measured, 0.05) == 1.0
    assert stats.kendall_tau_b([1, 2], [3, 3.1], 0.05) is None
