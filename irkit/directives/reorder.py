"""`reorder io, jo, ko, ii, ki, ji`: permute loops (the named ones, in the places they hold)."""

from __future__ import annotations

from itertools import islice, permutations

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register

MAX_CHOICES = 120  # permutations offered (all of them up to 5 loops)


def build(b, ch) -> d.ReorderOp:
    return d.ReorderOp([str(t) for t in ch[0].children])


def text(e: Entry) -> str:
    return f"reorder {', '.join(e['loops'])}"


def from_entry(e: Entry) -> d.ReorderOp:
    return d.ReorderOp(list(e["loops"]))


def replay(nest, e: Entry, at: object) -> None:
    names = list(e["loops"])
    if len(set(names)) != len(names):
        nest.error(f"reorder names a loop twice: {', '.join(names)}", at)
        return
    if all(nest.require(v, at) for v in names):
        nest.reorder(names)
        nest.locs["reorder"] = e.get("loc")


def space(s: Space) -> list[Entry]:
    order = tuple(s.loops)
    others = (p for p in permutations(order) if p != order)
    return [{"kind": "reorder", "loops": list(p)} for p in islice(others, MAX_CHOICES)]


RECORD = register(
    Directive(
        kind="reorder",
        op=d.ReorderOp,
        summary="permute the loops of a stage",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.reorder",
        pass_class="ScheduleReorderPass",
    )
)
