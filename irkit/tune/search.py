"""Beam search over one stage's schedules, scored by the screening model at every size at once.

The search builds schedules the way Adams et al. (2019) build Halide's:
one decision at a time, every partial schedule a complete, legal one that
the model can price, the best `width` kept after each step.  A step offers
everything the directive records offer on each kept nest
(`irkit.tune.candidate.next_entries`); two different directive orders that
make the same nest are one candidate.  The objective over several sizes is
the sum of log seconds: the geometric mean of the time at each size, so a
schedule is not chosen for its largest size alone.

Deterministic given the seed: candidates are visited in the records'
order, ties in score are broken by the schedule's text, and when a step
offers more expansions than `max_expansions` a seeded sample is taken.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from irkit.tune.candidate import Candidate, extend, next_entries, start
from irkit.tune.estimate import Machine, stage_seconds
from irkit.tune.stages import KernelInfo


@dataclass
class SearchStats:
    evaluated: int = 0
    refused: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.evaluated / self.seconds if self.seconds > 0 else 0.0


@dataclass(order=True)
class Scored:
    score: float
    text: str
    candidate: Candidate = field(compare=False)
    seconds: tuple[float, ...] = field(compare=False, default=())


def score(c: Candidate, kernels: list[KernelInfo], m: Machine) -> tuple[float, tuple[float, ...]]:
    """Sum of log seconds over the sizes, and the seconds at each."""
    secs = tuple(stage_seconds(k.stages[c.stage], c.nest, m, k.relaxed) for k in kernels)
    return sum(math.log(max(s, 1e-12)) for s in secs), secs


def beam_search(
    stage: str,
    kernels: list[KernelInfo],
    reads: tuple[str, ...],
    m: Machine,
    *,
    width: int = 24,
    depth: int = 10,
    keep: int = 16,
    seed: int = 0,
    max_expansions: int = 6000,
    deadline: float | None = None,
    stats: SearchStats | None = None,
    progress: Callable[[SearchStats, Scored], None] | None = None,
) -> list[Scored]:
    """The `keep` best schedules found for `stage`, best first (the empty schedule among them if it is)."""
    stats = stats if stats is not None else SearchStats()
    rng = random.Random(seed)
    info = kernels[0].stages[stage]
    lanes = m.lanes(info.bodies[0].dtype_bits if info.bodies else 32)
    t0 = time.perf_counter()
    root = start(info, reads)
    s, secs = score(root, kernels, m)
    seen = {root.key()}
    beam = [Scored(s, "", root, secs)]
    best: list[Scored] = list(beam)
    for _ in range(depth):
        expansions = [(b, e) for b in beam for e in next_entries(b.candidate, info, lanes, m.registers)]
        if len(expansions) > max_expansions:
            expansions = rng.sample(expansions, max_expansions)
        grown: list[Scored] = []
        for b, e in expansions:
            c = extend(b.candidate, e, info)
            if c is None:
                stats.refused += 1
                continue
            k = c.key()
            if k in seen:
                continue
            seen.add(k)
            s, secs = score(c, kernels, m)
            stats.evaluated += 1
            grown.append(Scored(s, "; ".join(c.texts), c, secs))
        if not grown:
            break
        grown.sort()
        beam = _diverse(grown, width)
        best = sorted(best + grown[: keep * 2])[: keep * 4]
        stats.seconds = time.perf_counter() - t0
        if progress is not None:
            progress(stats, best[0])
        if deadline is not None and time.perf_counter() > deadline:
            break
    stats.seconds = time.perf_counter() - t0
    return _diverse(sorted(best), keep)


def _diverse(ranked: list[Scored], n: int) -> list[Scored]:
    """The best `n`, at most half of them sharing their loop order with a better one (a beam of one
    order's factor variants would stop exploring orders)."""
    out: list[Scored] = []
    orders: dict[tuple, int] = {}
    later: list[Scored] = []
    for s in ranked:
        order = tuple(loop[0] for loop in s.candidate.nest.loops)
        if orders.get(order, 0) >= max(1, n // 4):
            later.append(s)
            continue
        orders[order] = orders.get(order, 0) + 1
        out.append(s)
        if len(out) == n:
            return out
    return (out + later)[:n]
