"""`compute_root`: compute this stage in full before its consumers (the default placement, said aloud)."""

from __future__ import annotations

from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def

from irkit.dialects import design as d
from irkit.directives.record import PLACE, Directive, Entry, Space, register


@irdl_op_definition
class ComputeRootOp(IRDLOperation):
    """`compute_root`: compute this stage in full before its consumers."""

    name = "design.compute_root"
    traits = lazy_traits_def(d.in_schedule)
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


def build(b, ch) -> ComputeRootOp:
    return ComputeRootOp()


def text(e: Entry) -> str:
    return "compute_root"


def from_entry(e: Entry) -> ComputeRootOp:
    return ComputeRootOp()


def replay(nest, e: Entry, at: object) -> None:
    """Nothing to the loops; the checker refuses it together with compute_at, and on a non-temp."""


def space(s: Space) -> list[Entry]:
    return [{"kind": "compute_root"}] if s.temp else []


RECORD = register(
    Directive(
        kind="compute_root",
        op=ComputeRootOp,
        summary="compute a temporary stage in full before its consumers",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.compute_at",
        pass_class="ScheduleComputeRootPass",
        phase=PLACE,
    )
)
