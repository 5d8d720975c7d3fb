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
from irkit.names import name_diagnostic
from irkit.suggest import suggest  # noqa: F401 -- re-exported for the checker

if TYPE_CHECKING:
    from irkit.checks.design import Stage


def _line(op: Operation) -> int:
    return op.location.line.data if isinstance(op.location, FileLineColLoc) else 0




class LoopNest:
    """The loops of one stage while its directives are replayed."""

    def __init__(self, stage: str, loops: list[str], reductions: set[str], reads: list[str] | None = None):
        self.stage = stage
        self.reads = list(reads or [])
        self.loops = list(loops)
        self.reductions = set(reductions)
        self.gone: dict[str, tuple[str, Operation]] = {}  # loop -> (what replaced it, where)
        self.diags: list[Diagnostic] = []

    def error(self, message: str, op: Operation, focus: str | None = None) -> Diagnostic:
        diag = at_op("error", message, op, focus)
        self.diags.append(diag)
        return diag

    def require(self, name: str, op: Operation) -> bool:
        if name in self.loops:
            return True
        if name in self.gone:
            what, where = self.gone[name]
            self.error(
                f"loop '{name}' of stage '{self.stage}' no longer exists: it was {what} at line {_line(where)}",
                op,
                name,
            )
            return False
        self.error(
            f"unknown loop '{name}' in the schedule of '{self.stage}'; its loops are: {', '.join(self.loops)}"
            + suggest(name, self.loops),
            op,
            name,
        )
        return False

    def fresh(self, names: list[str], op: Operation) -> bool:
        for name in names:
            if name in self.loops or names.count(name) > 1:
                self.error(f"new loop name '{name}' is already used in stage '{self.stage}'", op, name)
                return False
        for name in names:  # a loop the C backend could not name: reported, but the loop exists
            diag = name_diagnostic(name, "loop", op, name)
            if diag is not None:
                self.diags.append(diag)
        return True

    def replace(self, old: list[str], new: list[str], op: Operation, verb: str) -> None:
        position = min(self.loops.index(v) for v in old)
        for v in old:
            self.loops.remove(v)
            self.gone[v] = (f"{verb} into {', '.join(new)}", op)
        for v in old:
            if v in self.reductions:
                self.reductions |= {n for n in new if n.startswith(v) or len(old) == 1}
        self.loops[position:position] = new

    def positive(self, what: str, value: int, op: Operation) -> bool:
        if value > 0:
            return True
        self.error(f"{what} must be positive, got {value}", op, str(value))
        return False


def check_schedules(
    schedules: list[d.ScheduleOp], stages: dict[str, Stage], tensors: dict[str, d.TensorOp]
) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    finals: dict[str, list[str]] = {name: list(stage.loops) for name, stage in stages.items()}
    seen: dict[str, d.ScheduleOp] = {}
    placements: list[tuple[str, d.ComputeAtOp]] = []
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
        nest = LoopNest(name, stages[name].loops, stages[name].reduction_loops, stages[name].reads)
        vectorized: list[d.VectorizeOp] = []
        root: d.ComputeRootOp | None = None
        at: d.ComputeAtOp | None = None
        for op in sched.body.block.ops:
            replay(nest, op, vectorized)
            if isinstance(op, d.ComputeRootOp):
                root = op
            if isinstance(op, d.ComputeAtOp):
                if at is not None:
                    nest.error(f"stage '{name}' is placed twice (compute_at at line {_line(at)})", op)
                at = op
                placements.append((name, op))
        if root is not None and at is not None:
            nest.error(f"stage '{name}' cannot be both compute_root and compute_at {at.stage.data}.{at.loop.data}", root)
        for op in vectorized:
            loop = op.loop.data
            if loop in nest.loops and nest.loops[-1] != loop:
                nest.error(
                    f"vectorize '{loop}': only the innermost loop can be vectorized, and the innermost loop of "
                    f"'{name}' is '{nest.loops[-1]}' (order: {', '.join(nest.loops)}); reorder first",
                    op,
                    loop,
                )
        if (root is not None or at is not None) and tensors.get(name) is not None and tensors[name].role.data != "temp":
            nest.error(
                f"'{name}' is an {tensors[name].role.data}; compute_root and compute_at place temps inside their consumers",
                root or at,  # type: ignore[arg-type]
            )
        finals[name] = nest.loops
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


def replay(nest: LoopNest, op: Operation, vectorized: list[d.VectorizeOp]) -> None:
    """Apply one directive to `nest`, reporting what does not fit."""
    if isinstance(op, d.SplitOp):
        loop = op.loop.data
        new = [op.outer.data, op.inner.data]
        if nest.positive("split factor", op.factor.value.data, op) and nest.require(loop, op) and nest.fresh(new, op):
            nest.replace([loop], new, op, "split")
    elif isinstance(op, d.TileOp):
        loops = d.str_list(op.loops)
        factors = d.int_list(op.factors)
        outer, inner = d.str_list(op.outer), d.str_list(op.inner)
        if len(factors) != len(loops) or len(outer) != len(loops) or len(inner) != len(loops):
            nest.error(
                f"tile of {len(loops)} loops needs {len(loops)} factors and {2 * len(loops)} new loop names, got "
                f"{len(factors)} and {len(outer) + len(inner)}",
                op,
            )
            return
        if not all(nest.positive("tile factor", f, op) for f in factors):
            return
        if len(set(loops)) != len(loops):
            nest.error(f"tile names a loop twice: {', '.join(loops)}", op)
            return
        if all(nest.require(v, op) for v in loops) and nest.fresh(outer + inner, op):
            nest.replace(loops, outer + inner, op, "tiled")
            for v, o, i in zip(loops, outer, inner):
                if v in nest.reductions:
                    nest.reductions |= {o, i}
    elif isinstance(op, d.ReorderOp):
        names = d.str_list(op.loops)
        if len(set(names)) != len(names):
            nest.error(f"reorder names a loop twice: {', '.join(names)}", op)
            return
        if all(nest.require(v, op) for v in names):
            positions = sorted(nest.loops.index(v) for v in names)
            for pos, v in zip(positions, names):
                nest.loops[pos] = v
    elif isinstance(op, d.ParallelOp):
        loop = op.loop.data
        if nest.require(loop, op) and loop in nest.reductions:
            nest.error(
                f"parallel '{loop}': '{loop}' is a reduction loop of '{nest.stage}', and running it on several cores "
                "would race on the accumulated element; parallelise a loop of the output instead",
                op,
                loop,
            )
    elif isinstance(op, d.VectorizeOp):
        if op.width is not None and not nest.positive("vector width", op.width.value.data, op):
            return
        if nest.require(op.loop.data, op):
            vectorized.append(op)
    elif isinstance(op, d.UnrollOp):
        if nest.positive("unroll factor", op.factor.value.data, op):
            nest.require(op.loop.data, op)
    elif isinstance(op, d.UnrollJamOp):
        loop = op.loop.data
        if nest.positive("unroll_jam factor", op.factor.value.data, op) and nest.require(loop, op):
            if nest.loops[-1] == loop:
                nest.error(
                    f"unroll_jam '{loop}': '{loop}' is the innermost loop, so there is nothing to jam it into; "
                    "use unroll",
                    op,
                    loop,
                )
    elif isinstance(op, d.PackOp):
        nest.require(op.loop.data, op)
        if op.tensor.data not in nest.reads:
            nest.error(
                f"pack '{op.tensor.data}': stage '{nest.stage}' does not read '{op.tensor.data}'"
                + (f"; it reads: {', '.join(sorted(set(nest.reads)))}" if nest.reads else ""),
                op,
                op.tensor.data,
            )
