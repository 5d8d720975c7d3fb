"""`parallel io`: run the iterations of a loop on all cores."""

from __future__ import annotations

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register


def build(b, ch) -> d.ParallelOp:
    return d.ParallelOp(str(ch[0]))


def text(e: Entry) -> str:
    return f"parallel {e['loop']}"


def from_entry(e: Entry) -> d.ParallelOp:
    return d.ParallelOp(e["loop"])


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


RECORD = register(
    Directive(
        kind="parallel",
        op=d.ParallelOp,
        summary="run the iterations of a loop on all cores",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.parallel",
        pass_class="ScheduleParallelPass",
    )
)
