"""The numbers `irkit validate` reports: percentage errors, percentiles, Kendall's tau-b, a summary."""

from __future__ import annotations

import math
from collections.abc import Sequence

# The targets the model is judged by (issue 5).
TARGET_MEDIAN_ABS_ERROR = 15.0  # percent
TARGET_P90_ABS_ERROR = 35.0  # percent
TARGET_TAU = 0.8

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


def summarize(rows: list[dict]) -> dict:
    """Median and 90th percentile absolute error over every row with both numbers; tau per kernel and size.

    Tau compares, for one kernel at one size, the order of its schedules by
    predicted time with their order by measured time.
    """
    ok = [r for r in rows if r.get("measured_s") is not None and r.get("predicted_s") is not None]
    errors = [abs_pct_error(r["predicted_s"], r["measured_s"]) for r in ok]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in ok:
        groups.setdefault((r["kernel"], r["size"]), []).append(r)
    taus = []
    for (kernel, size), group in groups.items():
        predicted, measured = [r["predicted_s"] for r in group], [r["measured_s"] for r in group]
        taus.append(
            {
                "kernel": kernel,
                "size": size,
                "sizes": group[0]["sizes"],
                "schedules": [r["schedule"] for r in group],
                "tau": kendall_tau_b(predicted, measured),
                "tau_tol": kendall_tau_b(predicted, measured, TIE_TOLERANCE),
                "measured_order": [r["schedule"] for r in sorted(group, key=lambda r: r["measured_s"])],
                "predicted_order": [r["schedule"] for r in sorted(group, key=lambda r: r["predicted_s"])],
            }
        )
    defined = [t["tau"] for t in taus if t["tau"] is not None]
    defined_tol = [t["tau_tol"] for t in taus if t["tau_tol"] is not None]
    out = {
        "cases": len(rows),
        "compared": len(ok),
        "failed": sum(1 for r in rows if r.get("error")),
        "median_abs_error_pct": median(errors) if errors else None,
        "p90_abs_error_pct": percentile(errors, 90) if errors else None,
        "max_abs_error_pct": max(errors) if errors else None,
        "mean_tau": sum(defined) / len(defined) if defined else None,
        "min_tau": min(defined) if defined else None,
        "mean_tau_tol": sum(defined_tol) / len(defined_tol) if defined_tol else None,
        "min_tau_tol": min(defined_tol) if defined_tol else None,
        "tie_tolerance": TIE_TOLERANCE,
        "taus": taus,
        "by_kernel": {},
        "by_size": {},
    }
    for key, field in (("by_kernel", "kernel"), ("by_size", "size")):
        buckets: dict[str, list[float]] = {}
        for r, e in zip(ok, errors):
            buckets.setdefault(r[field], []).append(e)
        out[key] = {k: {"median_abs_error_pct": median(v), "cases": len(v)} for k, v in buckets.items()}
    out["targets"] = {
        "median_abs_error_pct": TARGET_MEDIAN_ABS_ERROR,
        "p90_abs_error_pct": TARGET_P90_ABS_ERROR,
        "mean_tau": TARGET_TAU,
    }
    out["met"] = {
        "median_abs_error_pct": out["median_abs_error_pct"] is not None
        and out["median_abs_error_pct"] <= TARGET_MEDIAN_ABS_ERROR,
        "p90_abs_error_pct": out["p90_abs_error_pct"] is not None and out["p90_abs_error_pct"] <= TARGET_P90_ABS_ERROR,
        "mean_tau": out["mean_tau"] is not None and out["mean_tau"] >= TARGET_TAU,
    }
    return out
