"""Effective capacities: where each cache level's speed actually ends, from a working-set sweep.

`/sys` reports a cache's size, and in a VM a shared level's size is the
host's: a guest on a Xeon that reports 480 MiB of L3 keeps L3 speed only up
to some tens of MiB, the rest belongs to other guests.  A cost model that
believes the reported size prices every kernel between the two as if it ran
from L3.  So `irkit calibrate` measures one core's STREAM triad on working
sets from 8 KiB up to DRAM (`footprints`: 4 a factor of two up to twice the
last private level, 3 beyond), and this module reads the curve:

1. The curve is made non-increasing from the right (`envelope`: each point
   the best of itself and every larger footprint).  A larger working set is
   never faster, so a dip is noise -- another guest's episode -- and goes.
2. Level i's speed is its **plateau**: the best bandwidth of the points
   between 1.5 x the end of the level before and half the level's reported
   size (a level's first footprints; a shared level's far end may already be
   DRAM in a VM).  After the last cache comes DRAM: the last point.
3. Level i **ends** where the envelope falls below the geometric mean of its
   plateau and the next level's; the footprint there, interpolated in
   log-log between the two points around the crossing, is `effective_size`,
   rounded to 8 steps an octave (`round_size`) and never more than the
   reported size (a crossing past it is the prefetchers hiding the next
   level).
4. A level whose plateau is not at least 1.1 x the next one's has no step
   to find (two levels that run at one speed): its effective size is left
   out, with the reason.  So is one that ends before half a private level's
   reported size, or within 1.5 x the level before's (`_doubtful`): a slow
   build of the loop or a noisy sweep, not the cache.

Footprints count the triad's three arrays (12 bytes an element), the curve
its bytes in that convention throughout (`TRIAD_BYTES`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from irkit.calibrate.detect import CacheLevel

ELEMENT = 12  # bytes of a triad element: b, c read and a written, 4 bytes each
ALIGN = 256  # elements: arrays are a whole number of these
FIRST = 8 * 1024  # the smallest footprint
FINE = 4  # points an octave up to twice the last private level
COARSE = 3  # points an octave beyond
DISTINCT = 1.1  # a level's plateau over the next one's for a step to be found
FLAT = 0.10  # spread of the points an octave wide that say the sweep is in DRAM
DRAM_LIKE = 0.6  # ... and below this fraction of the best beyond the private levels


def elements(footprint: int) -> int:
    """Elements per array for 3 f32 arrays of `footprint` bytes in all (a multiple of 256, at least 256)."""
    return max(ALIGN, footprint // ELEMENT // ALIGN * ALIGN)


def private_end(caches: list[CacheLevel]) -> int:
    """Twice the largest level one core has alone (the fine part of the sweep ends there)."""
    private = [c.size for c in caches if c.shared <= 1]
    return 2 * max(private or [caches[0].size])


def footprints(caches: list[CacheLevel], largest: int) -> list[int]:
    """The sweep's footprints in bytes, ascending, each a whole number of triad elements, up to `largest`."""
    fine_end = min(private_end(caches), largest)
    out: list[int] = []
    f = float(FIRST)
    while f < largest:
        size = elements(int(f)) * ELEMENT
        if not out or size > out[-1]:
            out.append(size)
        f = f * 2 ** (1 / (FINE if f < fine_end else COARSE))
    last = elements(largest) * ELEMENT
    if not out or last > out[-1]:
        out.append(last)
    return out


def in_dram(curve: list[tuple[int, float]], caches: list[CacheLevel]) -> bool:
    """Whether the sweep's last octave is flat and well below the best beyond the private levels: DRAM.

    The sweep stops there (the last footprint is still measured, for DRAM's figure).
    """
    if len(curve) < 2:
        return False
    top = curve[-1][0]
    octave = [bw for f, bw in curve if f >= top / 2]
    if len(octave) < 3 or curve[0][0] > top / 2:
        return False
    beyond = [bw for f, bw in curve if f > private_end(caches)]
    if not beyond or top <= 2 * private_end(caches):
        return False
    spread = max(octave) / min(octave) - 1
    return spread <= FLAT and max(octave) <= DRAM_LIKE * max(beyond)


def envelope(curve: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The curve made non-increasing: each point the best of itself and every larger footprint."""
    out: list[tuple[int, float]] = []
    best = 0.0
    for f, bw in reversed(curve):
        best = max(best, bw)
        out.append((f, best))
    return out[::-1]


def round_size(nbytes: float) -> int:
    """To 8 steps an octave: a multiple of 2^(floor(log2 n) - 3) bytes (30.4 KiB -> 30 KiB)."""
    if nbytes < 16:
        return max(1, int(nbytes))
    step = 2 ** (math.floor(math.log2(nbytes)) - 3)
    return int(round(nbytes / step) * step)


@dataclass
class Capacity:
    """One level's effective capacity as the sweep found it."""

    level: str
    size: int  # reported
    effective: int | None  # measured (None: no step found)
    plateau: float  # B/s (12 B an element)
    threshold: float  # where its speed ends
    note: str = ""  # why it is missing, or that it was held to the reported size


def _crossing(env: list[tuple[int, float]], start: int, threshold: float) -> float | None:
    """The footprint where the non-increasing `env` falls below `threshold`, after index `start`."""
    for j in range(max(start, 1), len(env)):
        (f0, b0), (f1, b1) = env[j - 1], env[j]
        if b1 < threshold <= b0:
            if b0 == b1:
                return float(f1)
            t = (math.log(b0) - math.log(threshold)) / (math.log(b0) - math.log(b1))
            return math.exp(math.log(f0) + t * (math.log(f1) - math.log(f0)))
    return None


PRIVATE_SHARE = 0.5  # a private level's effective size is at least this much of its reported one
BEYOND_PREVIOUS = 1.5  # any level's effective size is at least this many times the reported level before it


def _doubtful(level: CacheLevel, before: CacheLevel | None, effective: int) -> str:
    """Why an effective size cannot be believed ('' when it can): a core has its private levels whole
    (a much earlier end is a slow build or a noisy sweep, not the cache), and a level that ends
    within the one before it measured that one."""
    if level.shared <= 1 and effective < PRIVATE_SHARE * level.size:
        return f"the speed fell at {effective // 1024} KiB, less than half a private level: not believed"
    if before is not None and effective < BEYOND_PREVIOUS * before.size:
        return f"the speed fell at {effective // 1024} KiB, within reach of {before.name}: not believed"
    return ""


def effective_sizes(curve: list[tuple[int, float]], caches: list[CacheLevel]) -> list[Capacity]:
    """Each cache level's effective capacity from the sweep's (footprint, bandwidth) points."""
    if not curve:
        return [Capacity(c.name, c.size, None, 0.0, 0.0, "no sweep") for c in caches]
    curve = sorted(curve)
    env = envelope(curve)
    dram = env[-1][1]
    out: list[Capacity] = []
    start = 0.0  # footprints above this belong to the level being read
    plateaus: list[tuple[float, int]] = []  # (bandwidth, index of the plateau's point)
    for c in caches:
        window = [(bw, j) for j, (f, bw) in enumerate(curve) if start < f <= c.size / 2]
        if not window:  # a level whose half is below what the sweep reached: its first point after start
            window = [(env[j][1], j) for j in range(len(env)) if env[j][0] > start][:1]
        plateaus.append(max(window) if window else (0.0, len(env) - 1))
        start = 1.5 * c.size
    for i, c in enumerate(caches):
        plateau, at = plateaus[i]
        following = plateaus[i + 1][0] if i + 1 < len(caches) else dram
        threshold = math.sqrt(plateau * following) if plateau > 0 and following > 0 else 0.0
        if plateau < DISTINCT * following:
            note = (
                f"{c.name} runs at {plateau / 1e9:.3g} GB/s and what follows at {following / 1e9:.3g}: "
                "no step to find"
            )
            out.append(Capacity(c.name, c.size, None, plateau, threshold, note))
            continue
        crossing = _crossing(env, at + 1, threshold)
        if crossing is None:
            out.append(Capacity(c.name, c.size, None, plateau, threshold, "the speed did not fall within the sweep"))
            continue
        effective, note = round_size(crossing), ""
        if effective > c.size:
            effective, note = c.size, f"the speed held to {round_size(crossing) / 1024:.0f} KiB: held to the reported size"
        previous = next((p.effective for p in reversed(out) if p.effective), None)
        if previous is not None and effective < previous:
            out.append(Capacity(c.name, c.size, None, plateau, threshold, "ends before the level above it: left out"))
            continue
        doubt = _doubtful(c, caches[i - 1] if i else None, effective)
        if doubt:
            out.append(Capacity(c.name, c.size, None, plateau, threshold, doubt))
            continue
        out.append(Capacity(c.name, c.size, effective, plateau, threshold, note))
    return out
