"""One stage's candidate schedule while the tuner builds it: directive entries and the nest they make.

A candidate grows one directive at a time.  Each step replays the
directive's record on a copy of the nest (`irkit.directives.nest.Nest`,
the replayer the checker uses), so a directive the checker would refuse
there is refused here too, and the final-nest checks the checker makes
(`irkit.checks.schedule.check_final`) run on every candidate.  What the
records offer next is asked of them with the nest as it is now
(`next_entries`): the tuner itself knows no directive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from irkit.checks.schedule import check_final
from irkit.directives import PLACE, Entry, Space
from irkit.directives.nest import Nest
from irkit.directives.unroll_jam import bounds_inside
from irkit.passes.schedule._blocking import MAY_FOLLOW
from irkit.registry import DIRECTIVE_RECORDS
from irkit.tune.stages import StageInfo

# Kinds the search uses once per stage: a second unroll_jam meets the copies and remainder loops of
# the first (lowering refuses it in most nests), a second parallel loop nests OpenMP regions, a
# second vectorize cannot apply (only the innermost loop vectorizes).
ONCE = frozenset({"unroll_jam", "parallel", "vectorize"})


class Probe(Nest):
    """A nest whose replays record the first refusal instead of a diagnostic."""

    refused: str | None = None

    def error(self, message: str, at: object, focus: str | None = None) -> None:
        if self.refused is None:
            self.refused = message

    def copy(self) -> Probe:
        new = Probe.__new__(Probe)
        d = self.__dict__
        new.__dict__ = {
            **d,
            "loops": list(d["loops"]),  # (name, root, step) tuples: a replay replaces them, never changes one
            "reductions": set(d["reductions"]),
            "gone": dict(d["gone"]),
            "marks": dict(d["marks"]),  # each loop's marks are replaced, never changed (`Nest.mark`)
            "locs": {},  # where directives were written: a probe's refusals have no place to point to
            "packs": dict(d["packs"]),
            "vectorized": list(d["vectorized"]),
            "deps": dict(d["deps"]),
            "diags": [],
            "refused": None,
        }
        return new


@dataclass(frozen=True)
class Candidate:
    stage: str
    entries: tuple[Entry, ...]
    nest: Probe
    text: str = ""  # the directives' texts joined by "; " (built one directive at a time by `extend`)

    @property
    def texts(self) -> list[str]:
        return [DIRECTIVE_RECORDS[e["kind"]].text(e) for e in self.entries]

    def key(self) -> tuple:
        """What the nest is (loops, marks, packs): two orders of the same directives are one candidate."""
        n = self.nest
        return (
            tuple(n.loops),
            tuple(sorted((k, tuple(sorted(v.items()))) for k, v in n.marks.items())),
            tuple(sorted(n.packs.items())),
        )


def start(stage: StageInfo, reads: tuple[str, ...]) -> Candidate:
    """The unscheduled stage; a triangle's loops start with their bounds' loops (`where j <= i`: j's
    bounds use i), so that no candidate moves one outside the other or jams across it."""
    probe = Probe(stage.name, stage.loops, stage.reductions, reads)
    probe.deps = dict(stage.bounds)
    return Candidate(stage.name, (), probe)


def extend(c: Candidate, entry: Entry, stage: StageInfo | None = None) -> Candidate | None:
    """`c` with one more directive, or None when its record (or the final-nest check) refuses it there,
    or when lowering would: a loop moved outside a loop its bounds use (`Nest.bounds_outside`), a
    pack it cannot make (`packable`, which needs the stage's accesses), an `unroll_jam` of a loop
    with a pack at it or inside it (`_packed_inside`)."""
    record = DIRECTIVE_RECORDS.get(entry["kind"])
    if record is None:
        return None
    if entry["kind"] == "pack" and stage is not None and not packable(c.nest, stage, entry["tensor"], entry["loop"]):
        return None
    if entry["kind"] == "unroll_jam" and (_packed_inside(c.nest, entry["loop"]) or _bounds_use(c.nest, entry["loop"])):
        return None
    nest = c.nest.copy()
    record.replay(nest, entry, entry)
    check_final(nest)
    if nest.refused is None and nest.bounds_outside() is not None:
        nest.refused = "a loop runs outside a loop its bounds use"
    if nest.refused is not None:
        return None
    text = record.text(entry)
    return Candidate(c.stage, (*c.entries, entry), nest, f"{c.text}; {text}" if c.entries else text)


def _bounds_use(nest: Nest, loop: str) -> bool:
    """Does a loop inside `loop`, of another root, have bounds that use it (`unroll_jam.bounds_inside`)?"""
    names = nest.names
    return loop in names and bounds_inside(names, names.index(loop), nest.deps, {n: r for n, r, _ in nest.loops})


def space_of(c: Candidate, stage: StageInfo, lanes: int, registers: int) -> Space:
    """The records' view of the candidate's nest now: its loops and their trip counts."""
    extents: dict[str, int] = {}
    outer: dict[str, int] = {}
    for name, root, step in c.nest.loops:
        rng = outer.get(root, stage.extents.get(root, 1))
        extents[name] = max(1, math.ceil(rng / step))
        outer[root] = step
    return Space(
        stage=c.stage,
        loops=tuple(c.nest.names),
        extents=extents,
        reductions=frozenset(c.nest.reductions),
        reads=tuple(c.nest.reads),
        lanes=lanes,
        registers=registers,
        roots={name: root for name, root, _ in c.nest.loops},
        outside={loop: frozenset(used) for loop, used in c.nest.deps.items() if used},
        innermost=frozenset(loop for loop, _ in c.nest.vectorized if loop in extents),
    )


def _target(e: Entry) -> tuple:
    """What an entry acts on: its tensor (pack), else its loop."""
    return (e["kind"], e["tensor"]) if "tensor" in e else (e["kind"], e.get("loop"))


def _used(c: Candidate) -> set[tuple]:
    return {_target(e) for e in c.entries}


def next_entries(c: Candidate, stage: StageInfo, lanes: int, registers: int) -> list[Entry]:
    """What every record offers on the candidate's nest now, without a second of a kind on the same
    loop (a loop is marked, split or packed once), only what may follow `unroll_jam` and `pack` once
    one is there (they restructure the nest; lowering refuses loop-shaping after them), and without
    placements (`irkit.tune.tuner` chooses those with the full model, which prices fusion)."""
    s = space_of(c, stage, lanes, registers)
    used = _used(c)
    marked = set(c.nest.marks)
    blocked = any(e["kind"] in MAY_FOLLOW for e in c.entries)  # lowering: only these may follow them
    kinds = {e["kind"] for e in c.entries}
    # a reorder right after a reorder or interchange makes a nest one reorder of the nest before
    # them makes, and that nest's reorders were offered a step earlier: on conv2d 56^2, 23,587 of
    # the 24,711 such offers made a nest the search had already seen
    reordered = bool(c.entries) and c.entries[-1]["kind"] in ("reorder", "interchange")
    out = []
    for record in DIRECTIVE_RECORDS.values():
        if record.phase == PLACE or (blocked and record.kind not in MAY_FOLLOW):
            continue
        if stage.ordered and record.kind not in ("split", "unroll"):  # a recurrence keeps its order
            continue
        for e in record.space(s):
            if _target(e) in used and e["kind"] not in ("reorder", "interchange"):
                continue
            if e["kind"] in ONCE and e["kind"] in kinds:
                continue
            if reordered and e["kind"] == "reorder":
                continue
            if e["kind"] in ("split", "tile") and any(loop in marked for loop in e.get("loops", [e.get("loop")])):
                continue
            out.append(e)
    return out


def _packed_inside(nest: Nest, loop: str) -> bool:
    """Is a tensor packed at `loop` or inside it?  Lowering packs in document order, so an
    `unroll_jam` of that loop after the pack meets the copy loop beside the compute loop: not one
    nest to jam into (the other order is fine, as in examples/gemm.design)."""
    names = nest.names
    return loop in names and any(at in names and names.index(at) >= names.index(loop) for at in nest.packs.values())


def packable(nest: Nest, stage: StageInfo, tensor: str, loop: str) -> bool:
    """Would `pack TENSOR at LOOP` lower?  The pack pass copies the tile of the tensor the loops inside
    LOOP read; that tile must have a constant extent in every dimension but the outermost of the
    layout, so each stage loop indexing those dimensions must have a loop at or outside LOOP (the
    loops inside then run over its step, not over a size).  The one extent that may depend on the
    sizes must also be the outermost part of the packed copy, which is ordered by the loops inside
    LOOP: that stage loop's loop must come first of those that may index the tensor (a loop the
    stage's bodies do not show, as an unrolled constant one, may).  `pack Wt at fo` with the loops
    `c, r, s, fv` inside packs `[c][r][s][8 filters]`: `c` spans its size, the outermost part."""
    names = nest.names
    if loop not in names:
        return False
    at = names.index(loop)
    outside = {root for _, root, _ in nest.loops[: at + 1]}
    inside = {root for _, root, _ in nest.loops[at + 1 :]}
    loads = [a for body in stage.bodies for a in body.accesses if a.tensor == tensor and not a.store]
    if not loads:
        return False  # the loops load another buffer (conv2d's padded copy of its input): nothing to pack
    indexing = {root for a in loads for dim in a.coeffs for root, _ in dim}
    jammed = {root for name, root, _ in nest.loops[at + 1 :] if "unroll_jam" in nest.marks.get(name, {})}
    if any(root in indexing and root not in outside for root in jammed):
        return False  # a jammed loop's remainder runs over what is left of a size: no constant window
    unseen = set(stage.loops) - {root for body in stage.bodies for root in body.roots}
    sized = {root for root in indexing & inside if root not in outside and root not in stage.constant}
    if len(sized) > 1:
        return False
    if sized:
        first = next(r for _, r, _ in nest.loops[at + 1 :] if r in indexing or r in unseen)
        if first not in sized:
            return False
    return True
