"""Recovering a stage's schedule from the loops that run it.

The loops around a stage's last store say everything a schedule section
says: a tile loop of step F above a point loop is `split d by F` (two such
dimensions with both tiles above both points is `tile`), the nesting order
is `reorder` (emitted only when it differs from the order the splits leave),
loops of another stage around the store are `compute_at`, and the loop
marks (`parallel`, `vectorize ... by W`, `unroll ... by U`) are read back by
their directive records' `from_loop`.

Directives come out as plain dictionaries in the shape `lower-design` gives
the tensorop `schedule` property (`kind`, `loop`, `factor`, ...), so the
raised kernel and the lowered document can be compared directive by
directive, and printed back as a schedule section.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from irkit.directives.record import RECORDS
from irkit.raising.loop_reader import Dim, KernelReading, LoopFacts, Write


@dataclass
class RaisedLoop:
    """A loop of the raised nest: the dimension it walks (position in the domain) and its step."""

    facts: LoopFacts
    dim: int
    step: int  # 1 for the point loop; a tile loop's step otherwise


def dim_name(dim: Dim) -> str:
    """A name for the whole dimension: `y` for the split `yo`/`yi`, else the point loop's name."""
    point = dim.chain[-1].name
    if len(dim.chain) == 1:
        return point
    outer = dim.chain[0].name
    common = ""
    for a, b in zip(outer, point):
        if a != b:
            break
        common += a
    if common and common not in (outer, point):
        return common
    return f"{point}_all"


def stage_loops(write: Write, reading: KernelReading) -> list[RaisedLoop]:
    """The loops of the write's own stage around it, outermost first, each tied to a dimension."""
    owner = write.buffer.value
    by_loop: dict[SSAValue, tuple[int, int]] = {}
    for k, dim in enumerate(write.dims):
        for facts in dim.chain:
            by_loop[facts.var] = (k, facts.step)
    out: list[RaisedLoop] = []
    for facts in write.loops:
        if reading.owner.get(facts.op) is not owner and facts.var not in by_loop:
            continue
        if facts.var in by_loop:
            k, step = by_loop[facts.var]
            out.append(RaisedLoop(facts, k, step))
    return out


def placement(write: Write, reading: KernelReading) -> tuple[str, str] | None:
    """(stage, loop) of the innermost loop of another stage around the write: its compute_at."""
    owner = write.buffer.value
    own = {f.var for d in write.dims for f in d.chain}
    steps = write.repeat
    for facts in reversed(write.loops):
        holder = reading.owner.get(facts.op)
        if facts.var in own or holder is owner or holder is None or facts is steps:  # a time loop is no stage's
            continue
        return reading.buffers[holder].name, facts.name
    return None


def schedule_of(write: Write, reading: KernelReading, order: list[int]) -> list[dict]:
    """The directives that make the write's loops from a domain in `order` (dims by position)."""
    loops = stage_loops(write, reading)
    names = {k: dim_name(d) for k, d in enumerate(write.dims)}
    directives: list[dict] = []
    split_dims = [k for k in order if len(write.dims[k].chain) > 1]
    final = [_label(rl, write, names) for rl in loops]
    default: list[str] = [names[k] for k in order]
    tiled = _tile_pair(split_dims, write, loops)
    for k in split_dims:
        chain = write.dims[k].chain
        if tiled and k == tiled[1]:
            continue
        if tiled and k == tiled[0]:
            a, b = (write.dims[j].chain for j in tiled)
            directives.append(
                {
                    "kind": "tile",
                    "loops": [names[j] for j in tiled],
                    "factors": [a[0].step, b[0].step],
                    "outer": [a[0].name, b[0].name],
                    "inner": [a[1].name, b[1].name],
                }  # fmt: skip
            )
            pos = default.index(names[tiled[0]])
            default[pos : pos + 1] = []
            default.remove(names[tiled[1]])
            default[pos:pos] = [a[0].name, b[0].name, a[1].name, b[1].name]
            continue
        current = names[k]
        taken = {f.name for f in write.loops} | set(names.values())
        for depth, facts in enumerate(chain[:-1]):
            inner = chain[depth + 1].name
            if depth + 1 < len(chain) - 1:  # an intermediate loop of nested splits: `ji` of `j`
                inner = names[k] + "i" if names[k] + "i" not in taken else f"{chain[-1].name}_{depth + 1}"
            directives.append({"kind": "split", "loop": current, "factor": facts.step, "outer": facts.name,
                               "inner": inner})  # fmt: skip
            pos = default.index(current)
            default[pos : pos + 1] = [facts.name, inner]
            current = inner
    if final != default:
        directives.append({"kind": "reorder", "loops": final})
    where = placement(write, reading)
    if where is not None:
        directives.append({"kind": "compute_at", "stage": where[0], "loop": where[1]})
    for record in RECORDS.values():  # the loop marks: each record reads its own back
        if record.from_loop is None:
            continue
        for rl in loops:
            entry = record.from_loop(rl.facts)
            if entry is not None:
                directives.append(entry)
    return directives


def _label(rl: RaisedLoop, write: Write, names: dict[int, str]) -> str:
    chain = write.dims[rl.dim].chain
    if len(chain) == 1:
        return names[rl.dim]
    return rl.facts.name


def _tile_pair(split_dims: list[int], write: Write, loops: list[RaisedLoop]) -> tuple[int, int] | None:
    """Two dimensions split once each whose loops nest as outer, outer, inner, inner: a `tile`."""
    once = [k for k in split_dims if len(write.dims[k].chain) == 2]
    if len(once) != 2:
        return None
    a, b = (write.dims[k].chain for k in once)
    vars_in_order = [rl.facts.var for rl in loops]
    try:
        pos = [vars_in_order.index(f.var) for f in (a[0], b[0], a[1], b[1])]
    except ValueError:
        return None
    if pos == [pos[0], pos[0] + 1, pos[0] + 2, pos[0] + 3]:
        return once[0], once[1]
    return None
