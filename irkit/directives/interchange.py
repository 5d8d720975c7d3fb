"""`interchange jo, ko`: swap two loops of a stage, each taking the other's place.

The smallest directive, and the one docs/extending.md adds end to end: the
grammar rule `interchange`, this record (its design op is defined here too),
and the loop transform `irkit.passes.schedule.interchange`.  Where the two
loops are, whether they may be swapped and what the nest looks like after
are `reorder`'s answers: `interchange a, b` is `reorder b, a`.
"""

from __future__ import annotations

from itertools import combinations

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def, prop_def
from xdsl.traits import HasParent
from xdsl.utils.exceptions import VerifyException

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register


@irdl_op_definition
class InterchangeOp(IRDLOperation):
    """`interchange jo, ko`: swap two loops."""

    name = "design.interchange"
    loops = prop_def(ArrayAttr[StringAttr])
    traits = lazy_traits_def(lambda: (HasParent(d.ScheduleOp),))
    assembly_format = "$loops attr-dict"

    def __init__(self, first: str, second: str):
        super().__init__(properties={"loops": ArrayAttr([StringAttr(first), StringAttr(second)])})

    def verify_(self) -> None:
        names = d.str_list(self.loops)
        if len(names) != 2 or names[0] == names[1]:
            raise VerifyException(f"interchange swaps two different loops, got {', '.join(names)}")


def build(b, ch) -> InterchangeOp:
    return InterchangeOp(str(ch[0]), str(ch[1]))


def text(e: Entry) -> str:
    return f"interchange {e['loops'][0]}, {e['loops'][1]}"


def from_entry(e: Entry) -> InterchangeOp:
    return InterchangeOp(e["loops"][0], e["loops"][1])


def replay(nest, e: Entry, at: object) -> None:
    first, second = e["loops"]
    if first == second:
        nest.error(f"interchange names loop '{first}' twice; it swaps two different loops", at, first)
        return
    if nest.require(first, at) and nest.require(second, at):
        nest.reorder([second, first])
        nest.locs["reorder"] = e.get("loc")
        nest.check_order(text(e), at)


def space(s: Space) -> list[Entry]:
    """Every pair whose swap leaves an order the nest keeps (`Space.allows`)."""
    out = []
    for a, b in combinations(s.loops, 2):
        order = [b if v == a else a if v == b else v for v in s.loops]
        if s.allows(order):
            out.append({"kind": "interchange", "loops": [a, b]})
    return out


RECORD = register(
    Directive(
        kind="interchange",
        op=InterchangeOp,
        summary="swap two loops of a stage",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.interchange",
        pass_class="ScheduleInterchangePass",
    )
)
