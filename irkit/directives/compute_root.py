"""`compute_root`: compute this stage in full before its consumers (the default placement, said aloud)."""

from __future__ import annotations

from irkit.dialects import design as d
from irkit.directives.record import PLACE, Directive, Entry, Space, register


def build(b, ch) -> d.ComputeRootOp:
    return d.ComputeRootOp()


def text(e: Entry) -> str:
    return "compute_root"


def from_entry(e: Entry) -> d.ComputeRootOp:
    return d.ComputeRootOp()


def replay(nest, e: Entry, at: object) -> None:
    """Nothing to the loops; the checker refuses it together with compute_at, and on a non-temp."""


def space(s: Space) -> list[Entry]:
    return [{"kind": "compute_root"}] if s.temp else []


RECORD = register(
    Directive(
        kind="compute_root",
        op=d.ComputeRootOp,
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
