"""Alternated timing: irkit, peer, irkit, peer, ... then medians.

Alternating spreads the host's slow and fast moments (the machine is shared)
over every contender alike, instead of timing one in a quiet minute and the
next in a busy one.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# A call shorter than this gets a second warm-up call (page faults, thread start, caches).
WARMUP_SECONDS = 0.2
MAX_ROUNDS = 2000
MIN_ROUNDS = 3


@dataclass
class Plan:
    repeat: int  # least number of rounds
    min_time: float  # least timed seconds per contender
    budget: float  # most timed seconds for all contenders together (never below MIN_ROUNDS rounds)
    gap: float = 0.0  # untimed pause before each call: the previous runtime's spinning threads settle


def time_call(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def rounds_for(estimates: Sequence[float], plan: Plan) -> int:
    """How many rounds: at least `repeat` and enough for `min_time` each, within `budget`."""
    slowest = max(max(estimates), 1e-9)
    rounds = max(plan.repeat, math.ceil(plan.min_time / slowest))
    per_round = max(sum(estimates) + plan.gap * len(estimates), 1e-9)
    if rounds * per_round > plan.budget:
        rounds = max(min(MIN_ROUNDS, plan.repeat), math.floor(plan.budget / per_round))
    return max(1, min(rounds, MAX_ROUNDS))


def alternate(
    fns: Sequence[Callable[[], object]], plan: Plan, first_call: Sequence[float] | None = None
) -> list[list[float]]:
    """Seconds per call of each function, timed in turn round after round.

    `first_call` holds each function's first (already made) call time; a
    function whose first call was short is called once more untimed.
    """
    estimates = []
    for i, fn in enumerate(fns):
        t = first_call[i] if first_call is not None else time_call(fn)
        if t < WARMUP_SECONDS:
            t = time_call(fn)
        estimates.append(t)
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds_for(estimates, plan)):
        for i, fn in enumerate(fns):
            if plan.gap > 0:
                time.sleep(plan.gap)
            times[i].append(time_call(fn))
    return times


def summary(times: list[float]) -> dict:
    q = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "iqr_s": q[2] - q[0],
        "runs": len(times),
        "times_s": times,
    }
