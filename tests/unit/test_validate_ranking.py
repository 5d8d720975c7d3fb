"""`irkit.validate.ranking` and the summary built on it: top-1, pairwise ordering, run-to-run noise.

Hand-made measurement tables, worked by hand: no timing.
"""

import pytest

from irkit.validate import measure, ranking, stats, targets


def row(schedule, runs, predicted, kernel="k", size="L2"):
    """A case as `measure` leaves it: its runs, the time used (the fastest) and the spread."""
    return {
        "kernel": kernel,
        "size": size,
        "sizes": {"N": 1},
        "schedule": schedule,
        "runs_s": list(runs),
        "measured_s": ranking.measured_time(runs),
        "spread_pct": ranking.spread_pct(runs),
        "predicted_s": predicted,
        "error": None,
    }


def test_measured_time_and_spread():
    assert ranking.measured_time([2.0, 1.0]) == 1.0  # the less disturbed run
    assert ranking.spread_pct([1.0, 1.1]) == pytest.approx(10.0)  # relative to the fastest
    assert ranking.spread_pct([1.1, 1.0]) == pytest.approx(10.0)
    assert ranking.spread_pct([3.0, 3.0]) == 0.0
    assert ranking.spread_pct([1.0, 1.2, 1.1]) == pytest.approx(20.0)
    assert ranking.spread_pct([1.0]) is None
    with pytest.raises(ValueError):
        ranking.measured_time([])
    with pytest.raises(ValueError):
        ranking.spread_pct([0.0, 1.0])


def test_error_within_spread():
    assert ranking.within_spread(4.0, 5.0) and ranking.within_spread(5.0, 5.0)
    assert not ranking.within_spread(5.1, 5.0)
    assert not ranking.within_spread(1.0, None)  # measured once: no noise known
    assert not ranking.within_spread(None, 5.0)


def test_pair_within_noise():
    a = row("a", [1.00, 1.10], 1.0)  # spread 10%
    b = row("b", [1.05, 1.06], 1.0)  # 5% slower than a, within a's 10%
    c = row("c", [1.20, 1.21], 1.0)  # 20% slower than a: outside both spreads
    assert ranking.pair_within_noise(a, b) and ranking.pair_within_noise(b, a)
    assert not ranking.pair_within_noise(a, c)
    once = {**a, "spread_pct": None}
    assert not ranking.pair_within_noise(once, {**b, "spread_pct": None})
    assert ranking.pair_within_noise(once, {**b, "spread_pct": 6.0})  # the larger spread known counts


def test_runs_that_disagree_on_the_order_are_within_noise():
    # run 1 says a < b, run 2 says b < a: whatever the times, the pair is inside the noise
    a = row("a", [1.00, 1.30], 1.0)
    b = row("b", [1.20, 1.10], 2.0)
    assert ranking.pair_within_noise(a, b)


def test_top1_scores():
    group = [row("own", [1.0, 1.0], 2.0), row("naive", [4.0, 4.0], 1.0), row("alt", [2.0, 2.0], 3.0)]
    t = ranking.top1(group)
    # the model ranks naive first (predicted 1.0); the fastest is own: 1.0 / 4.0
    assert t == {"top1": 0.25, "pick": "naive", "best": "own", "pick_within_noise": False}
    right = [row("own", [1.0, 1.0], 1.0), row("naive", [4.0, 4.0], 2.0)]
    assert ranking.top1(right)["top1"] == 1.0 and ranking.top1(right)["pick_within_noise"]
    assert ranking.top1([row("own", [1.0, 1.0], 1.0)]) is None  # nothing to choose from


def test_top1_with_a_tie_in_the_prediction_counts_the_slower():
    group = [row("own", [1.0, 1.0], 1.0), row("naive", [2.0, 2.0], 1.0)]
    t = ranking.top1(group)
    assert t["pick"] == "naive" and t["top1"] == 0.5


def test_top1_pick_within_noise_of_the_fastest():
    group = [row("own", [1.00, 1.08], 2.0), row("alt", [1.04, 1.05], 1.0)]  # 4% apart, own's spread 8%
    t = ranking.top1(group)
    assert t["pick"] == "alt" and t["top1"] == pytest.approx(1.0 / 1.04) and t["pick_within_noise"]


def test_pairwise_strict_and_with_noise():
    group = [
        row("a", [1.00, 1.02], 1.0),  # spread 2%
        row("b", [1.03, 1.035], 0.9),  # 3% slower than a: outside both spreads; the model says faster
        row("c", [2.00, 2.01], 3.0),
        row("d", [4.00, 4.40], 2.5),  # spread 10%
    ]
    p = ranking.pairwise(group)
    # pairs: ab wrong, ac right, ad right, bc right, bd right, cd wrong -> 4 of 6
    assert p["pairs"] == 6 and p["pairs_agreeing"] == 4.0 and p["pairs_within_noise"] == 0
    assert p["pairwise"] == pytest.approx(4 / 6) and p["pairwise_noise"] == pytest.approx(4 / 6)
    # a spread of 5% on a puts the ab pair inside the noise: it agrees either way
    noisy = [{**group[0], "spread_pct": 5.0}, *group[1:]]
    p = ranking.pairwise(noisy)
    assert p["pairs_within_noise"] == 1 and p["pairwise"] == pytest.approx(4 / 6)
    assert p["pairwise_noise"] == pytest.approx(5 / 6)
    # a pair the noise covers and the model orders right counts once, not twice
    right = [row("a", [1.0, 1.1], 1.0), row("b", [1.05, 1.05], 2.0)]
    assert ranking.pairwise(right)["pairwise_noise"] == 1.0 and ranking.pairwise(right)["pairwise"] == 1.0


def test_pairwise_ties_count_half():
    group = [row("a", [1.0, 1.0], 1.0), row("b", [2.0, 2.0], 1.0)]  # the model cannot order them
    assert ranking.pairwise(group)["pairwise"] == 0.5
    same = [row("a", [1.0], 1.0), row("b", [1.0], 2.0)]  # measured exactly alike, once
    assert ranking.pairwise(same)["pairwise"] == 0.5
    assert ranking.pairwise([row("a", [1.0], 1.0)]) is None


def test_summary_of_a_measured_table():
    rows = [
        # group k/L2: the model ranks all three right
        row("own", [1.00, 1.10], 1.05),  # error +5%, spread 10%: inside the noise
        row("naive", [3.00, 3.03], 2.50),  # -16.7%
        row("alt", [2.00, 2.02], 2.10),  # +5%, spread 1%: outside
        # group k/DRAM: the model picks alt, 10% slower than own; their pair is not inside the noise
        row("own", [1.00, 1.01], 1.50, size="DRAM"),  # +50%
        row("naive", [5.00, 5.00], 6.00, size="DRAM"),  # +20%
        row("alt", [1.10, 1.12], 1.00, size="DRAM"),  # -9.1%
        # another kernel, one schedule left: no top-1, no pairs
        row("own", [1.0, 1.0], 1.0, kernel="z"),
        {**row("naive", [1.0], 1.0, kernel="z"), "measured_s": None, "predicted_s": None, "error": "compile: x"},
    ]
    s = stats.summarize(rows)
    groups = {(g["kernel"], g["size"]): g for g in s["groups"]}
    assert groups[("k", "L2")]["top1"] == 1.0 and groups[("k", "L2")]["pairwise"] == 1.0
    dram = groups[("k", "DRAM")]
    assert dram["pick"] == "alt" and dram["best"] == "own" and dram["top1"] == pytest.approx(1 / 1.1)
    assert not dram["pick_within_noise"]
    assert dram["pairwise"] == pytest.approx(2 / 3)  # own-alt reversed
    assert groups[("z", "L2")]["top1"] is None and groups[("z", "L2")]["pairwise"] is None
    assert s["top1_groups"] == 2 and s["top1_good"] == 1 and s["top1_share"] == 0.5
    assert s["top1_good_or_noise"] == 1
    assert s["mean_top1"] == pytest.approx((1 + 1 / 1.1) / 2) and s["min_top1"] == pytest.approx(1 / 1.1)
    assert s["mean_pairwise"] == pytest.approx((1 + 2 / 3) / 2)
    assert s["pairs"] == 6 and s["pairs_within_noise"] == 0
    assert s["spread_cases"] == 7 and s["within_spread"] == 2  # own at L2 (5% <= 10%), z own (0% <= 0%)
    assert s["max_spread_pct"] == pytest.approx(10.0)
    assert s["targets"] == targets.NATIVE.as_dict()
    assert s["met"]["top1_share"] is False


def test_targets_per_build():
    assert targets.targets_for(None) is targets.NATIVE and targets.targets_for("native") is targets.NATIVE
    v3 = targets.targets_for("x86-64-v3")
    assert (v3.median_abs_error_pct, v3.p90_abs_error_pct, v3.mean_tau, v3.top1_share) == (15, 35, 0.85, 0.85)
    n = targets.NATIVE
    assert (n.median_abs_error_pct, n.p90_abs_error_pct, n.mean_tau, n.top1_share) == (12, 30, 0.85, 0.90)
    other = targets.targets_for("znver3")
    assert "znver3" in other.label and other.top1_share == v3.top1_share
    rows = [row("a", [1.0, 1.0], 1.13), row("b", [2.0, 2.0], 2.2)]  # 13% and 10%: median 11.5%
    assert stats.summarize(rows, targets.NATIVE)["met"]["median_abs_error_pct"]
    met = stats.summarize([row("a", [1.0, 1.0], 1.14), row("b", [2.0, 2.0], 2.28)], targets.NATIVE)["met"]
    assert not met["median_abs_error_pct"]
    assert stats.summarize([row("a", [1.0, 1.0], 1.14), row("b", [2.0, 2.0], 2.28)], v3)["met"]["median_abs_error_pct"]


def test_finish_row_uses_the_fastest_run():
    r = measure.new_row(
        measure.Case("k", "own", "L2", {"N": 1}, document=__import__("pathlib").Path("k.design"), example=None)
    )
    for median in (2.2e-3, 2.0e-3):
        r["measurements"].append({"median_s": median, "calls": 10, "iqr_s": 1e-5, "min_s": median * 0.9, "other_load": 0.1})
        r["runs_s"].append(median)
    r["predicted_s"] = 2.1e-3
    measure.finish_row(r)
    assert r["measured_s"] == 2.0e-3 and r["spread_pct"] == pytest.approx(10.0)
    assert r["error_pct"] == pytest.approx(5.0) and r["within_spread"]
    assert r["calls"] == 20 and r["min_s"] == pytest.approx(1.8e-3) and r["other_load"] == pytest.approx(0.1)
    line = measure.progress_line(1, 1, r, 2, 2)
    assert "measured      2 ms" in line and "(+5.0%)" in line and "spread 10.0%, error within it" in line


def test_pass_errors_are_each_pass_against_the_fastest_other():
    # passes 1.0, 1.2, 1.5: 1.0 against 1.2 (16.7%), 1.2 against 1.0 (20%), 1.5 against 1.0 (50%)
    assert ranking.pass_errors([1.0, 1.2, 1.5]) == pytest.approx([100 * 0.2 / 1.2, 20.0, 50.0])
    assert ranking.pass_errors([2.0, 2.0, 2.0]) == [0.0, 0.0, 0.0]
    assert ranking.pass_errors([1.0, 1.1]) == []  # two passes: the floor would be the spread itself


def test_summary_reports_the_hosts_floor():
    rows = [row("a", [1.0, 1.2, 1.5], 1.0), row("b", [2.0, 2.0, 2.0], 2.0)]
    s = stats.summarize(rows)
    floor = sorted([100 * 0.2 / 1.2, 20.0, 50.0, 0.0, 0.0, 0.0])
    assert s["floor_median_pct"] == pytest.approx(stats.median(floor))
    assert s["floor_p90_pct"] == pytest.approx(stats.percentile(floor, 90))
    quiet = stats.summarize([row("a", [1.0, 1.1], 1.0)])
    assert quiet["floor_median_pct"] is None and quiet["floor_p90_pct"] is None
