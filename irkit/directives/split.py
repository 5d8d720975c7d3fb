"""`split k by 128 -> ko, ki`: one loop becomes an outer loop of step 128 and an inner one."""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, i64
from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def, prop_def

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, powers_of_two, register


@irdl_op_definition
class SplitOp(IRDLOperation):
    """`split k by 128 -> ko, ki`."""

    name = "design.split"
    loop = prop_def(StringAttr)
    factor = prop_def(IntegerAttr[I64])
    outer = prop_def(StringAttr)
    inner = prop_def(StringAttr)
    traits = lazy_traits_def(d.in_schedule)
    assembly_format = "$loop `by` $factor `->` $outer `,` $inner attr-dict"

    def __init__(self, loop: str, factor: int, outer: str, inner: str):
        super().__init__(
            properties={
                "loop": StringAttr(loop),
                "factor": IntegerAttr(factor, i64),
                "outer": StringAttr(outer),
                "inner": StringAttr(inner),
            }
        )

    def verify_(self) -> None:
        d.check_positive("split factor", self.factor.value.data)


MAX_CHOICES = 12  # factors offered per loop


def build(b, ch) -> SplitOp:
    loop, factor, outer, inner = ch
    return SplitOp(str(loop), b.int_(factor), str(outer or f"{loop}o"), str(inner or f"{loop}i"))


def text(e: Entry) -> str:
    return f"split {e['loop']} by {e['factor']} -> {e['outer']}, {e['inner']}"


def from_entry(e: Entry) -> SplitOp:
    return SplitOp(e["loop"], e["factor"], e["outer"], e["inner"])


def replay(nest, e: Entry, at: object) -> None:
    loop, new = e["loop"], [e["outer"], e["inner"]]
    if nest.positive("split factor", e["factor"], at) and nest.require(loop, at) and nest.fresh(new, at):
        root = nest.key(loop)[0]
        nest.split([loop], [e["outer"]], [e["inner"]], [e["factor"]], at, "split")
        nest.locs[f"split:{root}"] = e.get("loc")


def factors(extent: int) -> list[int]:
    """Powers of two and divisors of the extent, between 2 and extent - 1 (at most MAX_CHOICES)."""
    return list(_factors(extent))


@functools.lru_cache(maxsize=4096)
def _factors(extent: int) -> tuple[int, ...]:
    """`factors`, kept: the tuner asks for the same extents at every step of its search."""
    found = set(powers_of_two(2, extent - 1)) | {f for f in range(2, min(extent, 4097)) if extent % f == 0}
    ordered = sorted(found)
    if len(ordered) <= MAX_CHOICES:
        return tuple(ordered)
    step = len(ordered) / MAX_CHOICES
    return tuple(sorted({ordered[int(i * step)] for i in range(MAX_CHOICES)}))


def space(s: Space) -> list[Entry]:
    out = []
    for loop in s.loops:
        outer, inner = s.fresh(f"{loop}o"), s.fresh(f"{loop}i")
        for f in _factors(s.extents.get(loop, 1)):
            out.append({"kind": "split", "loop": loop, "factor": f, "outer": outer, "inner": inner})
    return out


RECORD = register(
    Directive(
        kind="split",
        op=SplitOp,
        summary="split a loop into an outer loop of step F and an inner loop",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.split",
        pass_class="ScheduleSplitPass",
    )
)
