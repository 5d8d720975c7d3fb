"""Checking `schedule` sections against the loops each stage really has.

A stage's loops start as its statement's index variables (left-hand ones,
then reductions; for a named operation, its canonical loop names).  The
directives are replayed in order -- split and tile replace a loop by new
ones, reorder permutes -- so that every directive is checked against the
loops that exist at that point, and `vectorize`/`compute_at` against the
final nest.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation

from irkit.diagnostics import Diagnostic, at_op
from irkit.dialects import design as d
from irkit.directives import ComputeAtOp, ComputeRootOp, entry_of, record_for
from irkit.directives.nest import Nest
from irkit.suggest import suggest  # noqa: F401 -- re-exported for the checker

if TYPE_CHECKING:
    from irkit.checks.design import Stage


def _line(op: Operation) -> int:
    return op.location.line.data if isinstance(op.location, FileLineColLoc) else 0


def check_schedules(
    schedules: list[d.ScheduleOp], stages: dict[str, Stage], tensors: dict[str, d.TensorOp]
) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    finals: dict[str, list[str]] = {name: list(stage.loops) for name, stage in stages.items()}
    seen: dict[str, d.ScheduleOp] = {}
    placements: list[tuple[str, ComputeAtOp]] = []
    for sched in schedules:
        name = sched.stage.data
        if name not in stages:
            if name in tensors and tensors[name].role.data == "input":
                msg = f"'{name}' is an input; only tensors written by a statement have a schedule"
            else:
                msg = f"schedule for unknown stage '{name}'; stages are: {', '.join(stages) or 'none'}" + suggest(name, list(stages))
            diags.append(at_op("error", msg, sched, name))
            continue
        if name in seen:
            diags.append(at_op("error", f"stage '{name}' has two schedules (first at line {_line(seen[name])})", sched, name))
            continue
        seen[name] = sched
        nest = Nest(name, stages[name].loops, stages[name].reduction_loops, stages[name].reads)
        root: ComputeRootOp | None = None
        at: ComputeAtOp | None = None
        for op in sched.body.block.ops:
            replay(nest, op)
            if isinstance(op, ComputeRootOp):
                root = op
            if isinstance(op, ComputeAtOp):
                if at is not None:
                    nest.error(f"stage '{name}' is placed twice (compute_at at line {_line(at)})", op)
                at = op
                placements.append((name, op))
        if root is not None and at is not None:
            nest.error(f"stage '{name}' cannot be both compute_root and compute_at {at.stage.data}.{at.loop.data}", root)
        check_final(nest)
        if (root is not None or at is not None) and tensors.get(name) is not None and tensors[name].role.data != "temp":
            nest.error(
                f"'{name}' is an {tensors[name].role.data}; compute_root and compute_at place temps inside their consumers",
                root or at,  # type: ignore[arg-type]
            )
        finals[name] = nest.names
        diags.extend(nest.diags)
    for producer, op in placements:
        consumer = op.stage.data
        if consumer not in stages:
            diags.append(
                at_op("error", f"compute_at names unknown stage '{consumer}'" + suggest(consumer, list(stages)), op, consumer)
            )
            continue
        if consumer == producer:
            diags.append(at_op("error", f"stage '{producer}' cannot be computed inside itself", op, consumer))
            continue
        if not reads_through(consumer, producer, stages):
            diags.append(
                at_op(
                    "error",
                    f"compute_at places '{producer}' inside '{consumer}', but '{consumer}' does not use '{producer}', "
                    "directly or through other stages",
                    op,
                    consumer,
                )
            )
            continue
        loop = op.loop.data
        if loop not in finals[consumer]:
            diags.append(
                at_op(
                    "error",
                    f"compute_at on loop '{loop}', which '{consumer}' does not have; its loops are: "
                    f"{', '.join(finals[consumer])}" + suggest(loop, finals[consumer]),
                    op,
                    loop,
                )
            )
    return diags


def check_final(nest: Nest) -> None:
    """What can only be checked on the final nest: a vectorized loop must be the innermost one."""
    if not nest.vectorized:
        return
    names = nest.names
    for loop, op in nest.vectorized:
        if loop in names and names[-1] != loop:
            nest.error(
                f"vectorize '{loop}': only the innermost loop can be vectorized, and the innermost loop of "
                f"'{nest.stage}' is '{names[-1]}' (order: {', '.join(names)}); reorder first",
                op,
                loop,
            )


def reads_through(stage: str, tensor: str, stages: dict[str, Stage]) -> bool:
    """Whether `stage` reads `tensor`, directly or through the stages that produce what it reads.

    Breadth first with an early exit: a producer placed in its consumer is
    usually read directly, so a chain of n placements costs O(n), not the
    O(n^2) of computing every stage's whole upstream."""
    seen: set[str] = set()
    todo = deque(stages[stage].reads)
    while todo:
        name = todo.popleft()
        if name == tensor:
            return True
        if name in seen:
            continue
        seen.add(name)
        if name in stages:
            todo.extend(stages[name].reads)
    return False


def replay(nest: Nest, op: Operation) -> None:
    """Apply one directive to `nest` by its record, reporting what does not fit."""
    record = record_for(op)
    if record is not None:
        record.replay(nest, entry_of(op), op)
