"""`parallel io`: run the iterations of a loop on all cores."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def, prop_def

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register


@irdl_op_definition
class ParallelOp(IRDLOperation):
    """`parallel io`: run the iterations of a loop on all cores."""

    name = "design.parallel"
    loop = prop_def(StringAttr)
    traits = lazy_traits_def(d.in_schedule)
    assembly_format = "$loop attr-dict"

    def __init__(self, loop: str):
        super().__init__(properties={"loop": StringAttr(loop)})


def build(b, ch) -> ParallelOp:
    return ParallelOp(str(ch[0]))


def text(e: Entry) -> str:
    return f"parallel {e['loop']}"


def from_entry(e: Entry) -> ParallelOp:
    return ParallelOp(e["loop"])


def replay(nest, e: Entry, at: object) -> None:
    loop = e["loop"]
    if nest.require(loop, at) and loop in nest.reductions:
        nest.error(
            f"parallel '{loop}': '{loop}' is a reduction loop of '{nest.stage}', and running it on several cores "
            "would race on the accumulated element; parallelise a loop of the output instead",
            at,
            loop,
        )
    nest.mark(loop, "parallel", True, e.get("loc"))


def space(s: Space) -> list[Entry]:
    return [{"kind": "parallel", "loop": loop} for loop in s.loops if loop not in s.reductions]


def from_loop(facts) -> Entry | None:
    """A loop marked parallel is `parallel LOOP` (raising)."""
    return {"kind": "parallel", "loop": facts.name} if facts.parallel else None


RECORD = register(
    Directive(
        kind="parallel",
        op=ParallelOp,
        summary="run the iterations of a loop on all cores",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.parallel",
        pass_class="ScheduleParallelPass",
        from_loop=from_loop,
    )
)
