"""`reorder io, jo, ko, ii, ki, ji`: permute loops (the named ones, in the places they hold)."""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def, prop_def
from xdsl.utils.exceptions import VerifyException

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register


@irdl_op_definition
class ReorderOp(IRDLOperation):
    """`reorder io, jo, ko, ii, ki, ji` (outermost first)."""

    name = "design.reorder"
    loops = prop_def(ArrayAttr[StringAttr])
    traits = lazy_traits_def(d.in_schedule)
    assembly_format = "$loops attr-dict"

    def __init__(self, loops: list[str]):
        super().__init__(properties={"loops": d.str_array(loops)})

    def verify_(self) -> None:
        names = d.str_list(self.loops)
        if len(set(names)) != len(names):
            raise VerifyException(f"reorder names a loop twice: {', '.join(names)}")


MAX_CHOICES = 120  # permutations offered (all of them up to 5 loops)


def build(b, ch) -> ReorderOp:
    return ReorderOp([str(t) for t in ch[0].children])


def text(e: Entry) -> str:
    return f"reorder {', '.join(e['loops'])}"


def from_entry(e: Entry) -> ReorderOp:
    return ReorderOp(list(e["loops"]))


def replay(nest, e: Entry, at: object) -> None:
    names = list(e["loops"])
    if len(set(names)) != len(names):
        nest.error(f"reorder names a loop twice: {', '.join(names)}", at)
        return
    present = set(nest.names)
    if all(v in present or nest.require(v, at) for v in names):  # `require` says why a loop is missing
        nest.reorder(names)
        nest.locs["reorder"] = e.get("loc")
        if nest.bounds_outside() is not None:  # the text only for the message (the tuner replays many)
            nest.check_order(text(e), at)


def space(s: Space) -> list[Entry]:
    """The first MAX_CHOICES other orders the nest keeps (`Space.allows`): an order its replay would
    refuse is not offered, so the choices go to legal ones."""
    outside = tuple(sorted((loop, tuple(sorted(used))) for loop, used in s.outside.items()))
    return [{"kind": "reorder", "loops": list(p)} for p in _choices(tuple(s.loops), outside, s.innermost)]


@functools.lru_cache(maxsize=1024)
def _choices(order: tuple[str, ...], outside: tuple, innermost: frozenset[str]) -> tuple[tuple[str, ...], ...]:
    """The first MAX_CHOICES orders `_orders` lists but `order` itself (a search asks again for
    every nest with the same loops)."""
    found = _orders(order, dict(outside), innermost, MAX_CHOICES + 1)
    return tuple([p for p in found if p != order][:MAX_CHOICES])


def _orders(loops: tuple[str, ...], outside: dict, innermost: frozenset[str], limit: int) -> list[tuple[str, ...]]:
    """The first `limit` orders of the loops `Space.allows`, in the order `itertools.permutations`
    lists them, built place by place: a loop is placed once the loops its bounds use are
    (`outside`), and a loop that must stay innermost only last (a prefix no order can complete is
    never extended).  A list, not a generator: nested generators cost a hop per level per order."""
    n = len(loops)
    out: list[tuple[str, ...]] = []
    prefix: list[str] = []
    placed: set[str] = set()

    def grow(left: list[str]) -> None:
        if not left:
            out.append(tuple(prefix))
            return
        for k, loop in enumerate(left):
            if len(out) >= limit:
                return
            if loop in innermost and len(prefix) < n - 1:
                continue
            if any(u in loops and u not in placed for u in outside.get(loop, ())):
                continue
            prefix.append(loop)
            placed.add(loop)
            grow(left[:k] + left[k + 1 :])
            prefix.pop()
            placed.discard(loop)

    grow(list(loops))
    return out


RECORD = register(
    Directive(
        kind="reorder",
        op=ReorderOp,
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
