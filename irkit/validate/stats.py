"""The numbers `irkit validate` reports: percentage errors, percentiles, Kendall's tau-b, a summary.

The tuner's numbers per kernel and size (top-1 score, pairwise ordering,
noise) are `irkit.validate.ranking`'s; the targets are
`irkit.validate.targets`'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from irkit.validate import ranking
from irkit.validate.targets import NATIVE, Targets

# Two times closer than this (relative) are a tie for `tau_tol`: medians of the same kernel on
# this shared host move by a few percent from run to run, so an order inside that is noise.
TIE_TOLERANCE = 0.05


def signed_pct_error(predicted: float, measured: float) -> float:
    """(predicted - measured) / measured, in percent: positive when the model is pessimistic."""
    if measured <= 0:
        raise ValueError("measured time must be positive")
    return (predicted - measured) / measured * 100.0


def abs_pct_error(predicted: float, measured: float) -> float:
    """|predicted - measured| / measured, in percent."""
    return abs(signed_pct_error(predicted, measured))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100), linearly interpolated between order statistics.

    The same definition as numpy's default (`linear`): rank q/100 * (n - 1)
    in the sorted values.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is not within [0, 100]")
    xs = sorted(values)
    rank = q / 100 * (len(xs) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def kendall_tau_b(x: Sequence[float], y: Sequence[float], rel_tol: float = 0.0) -> float | None:
    """Kendall's tau-b between two rankings of the same items, or None when it is undefined.

    tau_b = (C - D) / sqrt((P - Tx) (P - Ty)), where over the P = n(n-1)/2
    pairs, C are concordant (both orders agree), D discordant, Tx the pairs
    tied in x and Ty those tied in y (a pair tied in both counts in both).
    Undefined for fewer than two items or when either side is all ties.
    With `rel_tol`, two values of one side within that fraction of the
    larger are a tie.
    """
    if len(x) != len(y):
        raise ValueError("kendall_tau_b needs two sequences of the same length")
    n = len(x)
    concordant = discordant = tied_x = tied_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = _order(x[i], x[j], rel_tol)
            dy = _order(y[i], y[j], rel_tol)
            if dx == 0:
                tied_x += 1
            if dy == 0:
                tied_y += 1
            if dx and dy:
                if dx == dy:
                    concordant += 1
                else:
                    discordant += 1
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    if denominator == 0:
        return None
    return (concordant - discordant) / denominator


def _order(a: float, b: float, rel_tol: float) -> int:
    if abs(a - b) <= rel_tol * max(abs(a), abs(b)):
        return 0
    return (a > b) - (a < b)


def compared(rows: list[dict]) -> list[dict]:
    """The rows with both a measurement and a prediction."""
    return [r for r in rows if r.get("measured_s") is not None and r.get("predicted_s") is not None]


def group_rows(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """(kernel, size) -> its rows, in the order they came."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["kernel"], r["size"]), []).append(r)
    return groups


def group_summary(group: list[dict]) -> dict:
    """One kernel at one size: tau (exact and with ties), the top-1 score, pairwise ordering accuracy.

    Tau compares the order of its schedules by predicted time with their
    order by measured time.  Every figure is None where it is undefined
    (fewer than two schedules, all tied).
    """
    predicted, measured = [r["predicted_s"] for r in group], [r["measured_s"] for r in group]
    out = {
        "kernel": group[0]["kernel"],
        "size": group[0]["size"],
        "sizes": group[0]["sizes"],
        "schedules": [r["schedule"] for r in group],
        "tau": kendall_tau_b(predicted, measured),
        "tau_tol": kendall_tau_b(predicted, measured, TIE_TOLERANCE),
        "measured_order": [r["schedule"] for r in sorted(group, key=lambda r: r["measured_s"])],
        "predicted_order": [r["schedule"] for r in sorted(group, key=lambda r: r["predicted_s"])],
    }
    empty_top1 = {"top1": None, "pick": None, "best": None, "pick_within_noise": None}
    empty_pairs = {"pairs": 0, "pairs_agreeing": 0.0, "pairs_within_noise": 0, "pairwise": None, "pairwise_noise": None}
    out |= ranking.top1(group) or empty_top1
    out |= ranking.pairwise(group) or empty_pairs
    return out


def summarize(rows: list[dict], targets: Targets = NATIVE) -> dict:
    """Every figure of the report over the rows that have both numbers, and which targets are met.

    Errors: median, 90th percentile and largest |predicted - measured| /
    measured.  Per kernel and size (a group): tau, top-1, pairwise accuracy
    (`group_summary`); over the groups: their means, and the share of groups
    whose top-1 score reaches `targets.top1_score`.  Noise: each case's
    run-to-run spread (`spread_pct`, when it was measured more than once) and
    how many errors lie within it.
    """
    ok = compared(rows)
    errors = [abs_pct_error(r["predicted_s"], r["measured_s"]) for r in ok]
    groups = [group_summary(g) for g in group_rows(ok).values()]
    spreads = [r["spread_pct"] for r in ok if r.get("spread_pct") is not None]
    floor = [e for r in ok for e in ranking.pass_errors(r.get("runs_s") or [])]
    inside = sum(ranking.within_spread(e, r.get("spread_pct")) for r, e in zip(ok, errors))
    top1s = [g["top1"] for g in groups if g["top1"] is not None]
    good = sum(t >= targets.top1_score for t in top1s)
    good_or_noise = sum(
        g["top1"] >= targets.top1_score or bool(g["pick_within_noise"]) for g in groups if g["top1"] is not None
    )
    out = {
        "cases": len(rows),
        "compared": len(ok),
        "failed": sum(1 for r in rows if r.get("error")),
        "median_abs_error_pct": median(errors) if errors else None,
        "p90_abs_error_pct": percentile(errors, 90) if errors else None,
        "max_abs_error_pct": max(errors) if errors else None,
        "tie_tolerance": TIE_TOLERANCE,
        "groups": groups,
        "top1_groups": len(top1s),
        "top1_good": good,
        "top1_share": good / len(top1s) if top1s else None,
        "top1_good_or_noise": good_or_noise,
        "top1_share_noise": good_or_noise / len(top1s) if top1s else None,
        "mean_top1": _mean(top1s),
        "min_top1": min(top1s) if top1s else None,
        "mean_pairwise": _mean([g["pairwise"] for g in groups if g["pairwise"] is not None]),
        "mean_pairwise_noise": _mean([g["pairwise_noise"] for g in groups if g["pairwise_noise"] is not None]),
        "pairs": sum(g["pairs"] for g in groups),
        "pairs_within_noise": sum(g["pairs_within_noise"] for g in groups),
        "spread_cases": len(spreads),
        "median_spread_pct": median(spreads) if spreads else None,
        "max_spread_pct": max(spreads) if spreads else None,
        "within_spread": inside,
        # the errors one pass scores against the others: what a model exact for a pass would read
        "floor_median_pct": median(floor) if floor else None,
        "floor_p90_pct": percentile(floor, 90) if floor else None,
        "by_kernel": {},
        "by_size": {},
    }
    for key in ("tau", "tau_tol"):
        defined = [g[key] for g in groups if g[key] is not None]
        out[f"mean_{key}"] = _mean(defined)
        out[f"min_{key}"] = min(defined) if defined else None
    for key, field in (("by_kernel", "kernel"), ("by_size", "size")):
        buckets: dict[str, list[float]] = {}
        for r, e in zip(ok, errors):
            buckets.setdefault(r[field], []).append(e)
        out[key] = {k: {"median_abs_error_pct": median(v), "cases": len(v)} for k, v in buckets.items()}
    out["targets"] = targets.as_dict()
    out["met"] = met(out, targets)
    return out


def met(s: dict, targets: Targets) -> dict[str, bool]:
    """Each target: reached (False where the figure is undefined)."""

    def at_most(v: float | None, limit: float) -> bool:
        return v is not None and v <= limit

    def at_least(v: float | None, limit: float) -> bool:
        return v is not None and v >= limit

    return {
        "median_abs_error_pct": at_most(s["median_abs_error_pct"], targets.median_abs_error_pct),
        "p90_abs_error_pct": at_most(s["p90_abs_error_pct"], targets.p90_abs_error_pct),
        "mean_tau": at_least(s["mean_tau"], targets.mean_tau),
        "top1_share": at_least(s["top1_share"], targets.top1_share),
    }


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
