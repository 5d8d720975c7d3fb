"""What a tuner needs from the model: does it pick the fastest schedule, does it order them right.

A *group* is one kernel at one size with its schedules (rows with
`measured_s`, `predicted_s`, `schedule` and, when the case was measured
more than once, `spread_pct`).  Two numbers per group:

- the **top-1 score**: the fastest measured time of the group divided by
  the measured time of the schedule the model ranks first -- 1.0 when the
  model picks the fastest, 0.5 when its pick takes twice as long.  Schedules
  the model predicts exactly alike are one pick it cannot break: the
  slowest of them counts (a tuner could have taken any of them).
- **pairwise ordering accuracy**: the share of the group's schedule pairs
  the model orders as measured.  Counted two ways: *strict* -- every pair
  by its measured order (a pair tied exactly on either side counts 1/2);
  and *within noise as agreeing* -- a pair whose measured times differ by
  no more than the run-to-run spread of either of its two cases counts as
  agreeing whatever the model says, since the measurement itself cannot
  tell their order.

The run-to-run spread of a case is (slowest - fastest) / fastest of its
independent measurements, in percent: the same scale as its error, which
is taken against the fastest measurement (`measured_time`).
"""

from __future__ import annotations

from collections.abc import Sequence


def measured_time(runs: Sequence[float]) -> float:
    """The time a case's error is taken against: the fastest of its independent measurements.

    On a shared host interference only slows a run, so the faster run is the
    less disturbed one (calibration keeps its best trial for the same reason).
    """
    if not runs:
        raise ValueError("a case needs at least one measurement")
    return min(runs)


def spread_pct(runs: Sequence[float]) -> float | None:
    """(slowest - fastest) / fastest of a case's independent measurements, in percent; None for one run."""
    if len(runs) < 2:
        return None
    fastest = min(runs)
    if fastest <= 0:
        raise ValueError("measured times must be positive")
    return (max(runs) - fastest) / fastest * 100.0


def pass_errors(runs: Sequence[float]) -> list[float]:
    """|one pass - the measured time of the others| / the latter, in percent, for each pass.

    The error a model that predicted one pass exactly would score against the time
    `irkit validate` compares with (the fastest of the other passes): the host's own floor
    under the median and p90 errors.  Empty for fewer than three passes (with two, the
    other pass is a single run and the floor would be the spread itself).
    """
    if len(runs) < 3:
        return []
    out = []
    for i, run in enumerate(runs):
        others = measured_time([r for j, r in enumerate(runs) if j != i])
        out.append(abs(run - others) / others * 100.0)
    return out


def within_spread(abs_error_pct: float | None, spread: float | None) -> bool:
    """True when a prediction is no further from the measurement than the runs are from each other."""
    return abs_error_pct is not None and spread is not None and abs_error_pct <= spread


def pair_within_noise(a: dict, b: dict) -> bool:
    """True when two cases' measured times differ by no more than the larger of their spreads.

    Cases measured once have no spread: their pairs are never within noise.
    """
    spreads = [s for s in (a.get("spread_pct"), b.get("spread_pct")) if s is not None]
    if not spreads:
        return False
    ta, tb = a["measured_s"], b["measured_s"]
    return abs(ta - tb) / min(ta, tb) * 100.0 <= max(spreads)


def top1(group: Sequence[dict]) -> dict | None:
    """The model's pick against the fastest schedule; None for fewer than two schedules."""
    if len(group) < 2:
        return None
    best = min(group, key=lambda r: r["measured_s"])
    first = min(r["predicted_s"] for r in group)
    pick = max((r for r in group if r["predicted_s"] == first), key=lambda r: r["measured_s"])
    return {
        "top1": best["measured_s"] / pick["measured_s"],
        "pick": pick["schedule"],
        "best": best["schedule"],
        "pick_within_noise": pick is best or pair_within_noise(pick, best),
    }


def pairwise(group: Sequence[dict]) -> dict | None:
    """Pairwise ordering accuracy, strict and with pairs inside the noise as agreeing; None without pairs."""
    pairs = 0
    agreeing = 0.0
    noisy = 0
    agreeing_noise = 0.0
    for i, a in enumerate(group):
        for b in group[i + 1 :]:
            pairs += 1
            measured = _sign(a["measured_s"] - b["measured_s"])
            predicted = _sign(a["predicted_s"] - b["predicted_s"])
            score = 0.5 if measured == 0 or predicted == 0 else float(measured == predicted)
            agreeing += score
            if pair_within_noise(a, b):
                noisy += 1
                agreeing_noise += 1.0
            else:
                agreeing_noise += score
    if pairs == 0:
        return None
    return {
        "pairs": pairs,
        "pairs_agreeing": agreeing,
        "pairs_within_noise": noisy,
        "pairwise": agreeing / pairs,
        "pairwise_noise": agreeing_noise / pairs,
    }


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)
