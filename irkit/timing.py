"""Steady-state timing: each function settles untimed, then a batch of its calls is timed.

Used by the benchmarks (`python -m bench`, which times irkit against its
peers) and by `irkit validate` (which times kernels against the cost
model's predictions).  With several functions the rounds alternate --
irkit, peer, irkit, peer, ... -- which spreads the host's slow and fast
moments (the machine is shared) over every function alike, instead of
timing one in a quiet minute and the next in a busy one.
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
MAX_BATCH = 20  # most timed calls of one contender in a row


@dataclass
class Plan:
    """How to time: `settle` is the heart of it.

    Measured on this host (2 vCPUs): after a numpy matmul, OpenBLAS's idle
    threads spin for 2^28 cycles (~84 ms) and take the cores from whatever
    runs next; and after an idle pause the cores run a 3 ms kernel at less
    than half its steady speed.  Timing the calls right after another
    contender, or after a sleep, measured those effects instead of the
    kernels (GEMM 2048 read 0.67x numpy instead of 0.9x; conv2d 0.47x
    instead of 1.26x).  So each contender first runs untimed for `settle`
    seconds, then a batch of calls is timed: every contender is timed in its
    own steady state, and alternating the rounds still spreads the shared
    host's slow and fast moments over all of them.
    """

    repeat: int  # least number of rounds
    min_time: float  # least timed seconds per contender
    budget: float  # most seconds for all contenders together (never below MIN_ROUNDS rounds)
    settle: float = 0.0  # untimed calls for this long before each contender's timed batch


def time_call(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def batch_size(estimate: float, plan: Plan) -> int:
    """Timed calls per round: as long as the settling, within [1, MAX_BATCH]; 1 with no settling."""
    if plan.settle <= 0:
        return 1
    return max(1, min(MAX_BATCH, math.ceil(plan.settle / max(estimate, 1e-9))))


def rounds_for(estimates: Sequence[float], plan: Plan) -> int:
    """How many rounds: at least `repeat` and enough for `min_time` each, within `budget`."""
    batches = [batch_size(e, plan) * max(e, 1e-9) for e in estimates]
    rounds = max(plan.repeat, math.ceil(plan.min_time / min(batches)))
    per_round = max(sum(batches) + plan.settle * len(estimates), 1e-9)
    if rounds * per_round > plan.budget:
        rounds = max(min(MIN_ROUNDS, plan.repeat), math.floor(plan.budget / per_round))
    return max(1, min(rounds, MAX_ROUNDS))


def settle(fn: Callable[[], object], seconds: float) -> None:
    """Call `fn` untimed until `seconds` have passed (at least once when seconds > 0)."""
    if seconds <= 0:
        return
    t0 = time.perf_counter()
    fn()
    while time.perf_counter() - t0 < seconds:
        fn()


def alternate(
    fns: Sequence[Callable[[], object]], plan: Plan, first_call: Sequence[float] | None = None
) -> list[list[float]]:
    """Seconds per call of each function: round after round, each settles, then a timed batch.

    `first_call` holds each function's first (already made) call time; a
    function whose first call was short is called once more untimed.
    """
    estimates = []
    for i, fn in enumerate(fns):
        t = first_call[i] if first_call is not None else time_call(fn)
        if t < WARMUP_SECONDS:
            t = time_call(fn)
        estimates.append(t)
    batches = [batch_size(e, plan) for e in estimates]
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds_for(estimates, plan)):
        for i, fn in enumerate(fns):
            settle(fn, plan.settle)
            times[i].extend(time_call(fn) for _ in range(batches[i]))
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
