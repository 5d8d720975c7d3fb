"""`unroll ii by 4`: repeat a loop's body 4 times per iteration."""

from __future__ import annotations

from typing import ClassVar

from xdsl.irdl import irdl_op_definition

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register


@irdl_op_definition
class UnrollOp(d.LoopFactorDirective):
    """`unroll ii by 4`."""

    name = "design.unroll"
    WHAT: ClassVar[str] = "unroll factor"


FACTORS = (2, 4, 8)


def build(b, ch) -> UnrollOp:
    return UnrollOp(str(ch[0]), b.int_(ch[1]))


def text(e: Entry) -> str:
    return f"unroll {e['loop']} by {e['factor']}"


def from_entry(e: Entry) -> UnrollOp:
    return UnrollOp(e["loop"], e["factor"])


def replay(nest, e: Entry, at: object) -> None:
    nest.mark(e["loop"], "unroll", e["factor"], e.get("loc"))
    if nest.positive("unroll factor", e["factor"], at):
        nest.require(e["loop"], at)


def space(s: Space) -> list[Entry]:
    return [
        {"kind": "unroll", "loop": loop, "factor": f}
        for loop in s.loops
        for f in FACTORS
        if f <= s.extents.get(loop, 1)
    ]


def from_loop(facts) -> Entry | None:
    """A loop marked `unroll = U` is `unroll LOOP by U` (raising)."""
    return {"kind": "unroll", "loop": facts.name, "factor": facts.unroll} if facts.unroll else None


RECORD = register(
    Directive(
        kind="unroll",
        op=UnrollOp,
        summary="repeat a loop's body F times per iteration",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.unroll",
        pass_class="ScheduleUnrollPass",
        from_loop=from_loop,
    )
)
