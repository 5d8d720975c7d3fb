"""`compute_at out.xo`: compute this stage inside loop xo of its consumer `out`, as needed there.

Which stage and loop may be named is a fact about the whole document (the
consumer must read this stage, and have that loop once its own directives
ran), so the checker decides it after every schedule is replayed
(`irkit.checks.schedule.check_placements`); the replay only records it.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def, prop_def

from irkit.dialects import design as d
from irkit.directives.record import PLACE, Directive, Entry, Space, register


@irdl_op_definition
class ComputeAtOp(IRDLOperation):
    """`compute_at out.xo`: compute this stage inside a loop of a consumer."""

    name = "design.compute_at"
    stage = prop_def(StringAttr)
    loop = prop_def(StringAttr)
    traits = lazy_traits_def(d.in_schedule)
    assembly_format = "$stage `,` $loop attr-dict"

    def __init__(self, stage: str, loop: str):
        super().__init__(properties={"stage": StringAttr(stage), "loop": StringAttr(loop)})


def build(b, ch) -> ComputeAtOp:
    return ComputeAtOp(str(ch[0]), str(ch[1]))


def text(e: Entry) -> str:
    return f"compute_at {e['stage']}.{e['loop']}"


def from_entry(e: Entry) -> ComputeAtOp:
    return ComputeAtOp(e["stage"], e["loop"])


def replay(nest, e: Entry, at: object) -> None:
    nest.where = (e["stage"], e["loop"])
    nest.locs["compute_at"] = e.get("loc")


def space(s: Space) -> list[Entry]:
    if not s.temp:
        return []
    return [{"kind": "compute_at", "stage": c, "loop": loop} for c, loops in s.consumers.items() for loop in loops]


RECORD = register(
    Directive(
        kind="compute_at",
        op=ComputeAtOp,
        summary="compute a temporary stage inside a loop of its consumer",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.compute_at",
        pass_class="ScheduleComputeAtPass",
        phase=PLACE,
    )
)
