"""Measured refinement: the schedules one decision away from the best measured one.

The full model ranks what the search found and the top k are measured, so
the measurement decides only among what was measured.  Where the model is
blind to a difference -- softmax's rows grouped by 16 or by 512 move the
same DRAM traffic, yet differ by 5-10% measured on the Zen 5 guest -- the
best schedule can sit one decision away from the measured best.  A
refinement round changes one decision of one stage of the best measured
schedule: another value the directive's record offers for the same target
at that point of the schedule (a factor, a width, an order), the directive
left out, or one directive more at the end (what the records offer there).
The tuner prices those neighbours with the full model and measures the best
few beside the incumbent (Ansor's measured rounds,
with the records' spaces as the mutations and the beam's result as the
start).

Every neighbour is replayed through the records (`candidate.extend`), so it
is as legal as anything the search proposes.
"""

from __future__ import annotations

from irkit.tune.candidate import Candidate, _target, extend, next_entries, start
from irkit.tune.search import _replay_all as _replay
from irkit.tune.stages import StageInfo


def neighbours(c: Candidate, info: StageInfo, lanes: int, registers: int) -> list[Candidate]:
    """`moves` without the moves."""
    return [n for _, n in moves(c, info, lanes, registers)]


def moves(c: Candidate, info: StageInfo, lanes: int, registers: int) -> list[tuple[str, Candidate]]:
    """The candidates that differ from `c` in one entry, each with its move (`change split`,
    `drop vectorize`, `add vectorize`): each other offer of the same record for
    the same target where that entry stands, then the entry left out, the entries after it replayed
    (a neighbour whose later entries no longer apply is no neighbour); then `c` with one offer more
    at its end.  In entry order, then in the records' order of offers: deterministic."""
    root = start(info, tuple(c.nest.reads))
    out: dict[tuple, tuple[str, Candidate]] = {}
    prefix: Candidate | None = root
    for p, entry in enumerate(c.entries):
        if prefix is None:
            break
        rest = c.entries[p + 1 :]
        offers = [
            e for e in next_entries(prefix, info, lanes, registers)
            if e["kind"] == entry["kind"] and _target(e) == _target(entry) and e != entry
        ]  # fmt: skip
        for alt in offers:
            moved = extend(prefix, alt, info)
            got = None if moved is None else _replay(moved, list(rest), info)
            if got is not None and got.key() != c.key():
                out.setdefault(got.key(), (change_move(entry, alt), got))
        dropped = _replay(prefix, list(rest), info)
        if dropped is not None and dropped.key() != c.key():
            out.setdefault(dropped.key(), (f"drop {entry['kind']}", dropped))
        prefix = extend(prefix, entry, info)
    for e in next_entries(c, info, lanes, registers):  # one directive more, at the end
        got = extend(c, e, info)
        if got is not None and got.key() != c.key():
            out.setdefault(got.key(), (f"add {e['kind']}", got))
    return list(out.values())


def change_move(entry: dict, alt: dict) -> str:
    """The move of replacing `entry` by `alt`: `change split`, with the loops and the direction its
    numbers went for a factor or a width (`change split k up`, `change tile i j down`).  The tuner measures the full
    model's best neighbour of each move, so a larger factor is measured as well as a smaller one:
    the model's slope along a factor is where it errs most -- on the Zen 3 host it priced gemm's K
    block 128 < 256 < 512 (106, 120, 124 ms), measured 113 > 101 > 96.5."""
    before, after = _size(entry), _size(alt)
    if before is None or after is None or before == after:
        return f"change {entry['kind']}"
    loops = entry.get("loops") or [entry.get("loop")]
    on = " ".join(str(loop) for loop in loops if loop is not None)
    return f"change {entry['kind']} {on} {'up' if after > before else 'down'}".replace("  ", " ")


def _size(entry: dict) -> int | None:
    """An entry's number (a split's factor, a vector width), or the product of its factors (a tile)."""
    if isinstance(entry.get("factor"), int):
        return entry["factor"]
    if isinstance(entry.get("width"), int):
        return entry["width"]
    factors = entry.get("factors")
    if isinstance(factors, (list, tuple)) and factors and all(isinstance(f, int) for f in factors):
        size = 1
        for f in factors:
            size *= f
        return size
    return None
