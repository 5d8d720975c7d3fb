"""`apply-schedule`: carry out the schedule directives `lower-tensorop` left on the loops.

For every kernel, the directives of each stage are read from `irkit.schedule`
(on the outermost loop of each of the stage's nests) and applied through
`irkit.passes.schedule.DIRECTIVES`:

1. Loop-shaping directives (split, tile, reorder, parallel, vectorize,
   unroll, and any other kind not registered as a placement), stage by
   stage in program order, each stage's in document order.  A stage's
   `vectorize` loops are then checked to be innermost (a later `reorder`
   may have made them so).
2. `irkit.schedule` is removed from every loop.
3. Placement directives (compute_at, compute_root), consumers before
   producers (stages in reverse program order), so that a producer is placed
   into a consumer whose loops are final.

Created and marked loops record the directive's location as `origin`.

Each directive is applied by the transform its record names
(`irkit.directives`); a `kind` without a record (hand-written IR) is an
error at its line that lists the directives there are.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass

from irkit.dialects import loop as lp
from irkit.passes.schedule import SHAPE, load, phase_of, unknown
from irkit.passes.schedule.helpers import SCHEDULE_ATTR, NestIndex, directive_of, fail, get_str, indexed, kernels
from irkit.progress import advance

Row = tuple[str, dict[str, Attribute], str]  # (kind, directive, where)


def read_schedules(kernel: func.FuncOp) -> dict[str, list[Row]]:
    """Each scheduled stage's directives, stages in program order."""
    out: dict[str, list[Row]] = {}
    for op in kernel.walk():
        if not isinstance(op, lp.ForOp) or op.stage is None or SCHEDULE_ATTR not in op.attributes:
            continue
        stage = op.stage.data
        if stage in out:
            continue
        attr = op.attributes[SCHEDULE_ATTR]
        if not isinstance(attr, ArrayAttr):
            raise fail("", f"'{SCHEDULE_ATTR}' of stage '{stage}' must be an array of directives, got {attr}")
        rows: list[Row] = []
        for entry in attr.data:
            d = directive_of(entry)
            rows.append((get_str(d, "kind"), d, get_str(d, "loc", "") if "loc" in d else ""))
        out[stage] = rows
    return out


def apply_kernel(kernel: func.FuncOp) -> None:
    """Apply the kernel's schedules; each stage's loops are found through one `NestIndex`,
    so the cost grows with the document, not with its square."""
    with indexed(kernel) as index:
        _apply(kernel, index)


def _apply(kernel: func.FuncOp, index: NestIndex) -> None:
    from irkit.passes.schedule.vectorize import check_vectorized

    schedules = read_schedules(kernel)
    for done, (stage, rows) in enumerate(schedules.items()):
        advance(done, len(schedules))
        index.open(stage)
        for kind, d, where in rows:
            if phase_of(kind) != SHAPE:
                continue
            fn = load(kind)
            if fn is None:
                raise fail(where, unknown(kind), kind)
            fn(kernel, stage, d, where)
        for kind, d, where in rows:
            if kind == "vectorize":
                check_vectorized(kernel, stage, d, where)
        index.close(stage)
    for op in kernel.walk():
        if isinstance(op, lp.ForOp) and SCHEDULE_ATTR in op.attributes:
            del op.attributes[SCHEDULE_ATTR]
    for stage in reversed(list(schedules)):
        for kind, d, where in schedules[stage]:
            if phase_of(kind) == SHAPE:
                continue
            fn = load(kind)
            if fn is None:
                raise fail(where, unknown(kind), kind)
            fn(kernel, stage, d, where)
    # A stage lowered to several nests over the same loops (a generalized
    # softmax: max, exp, sum, divide) is fused at its outermost loop, with its
    # temporaries private to that loop's iterations.
    from irkit.passes.schedule.compute_at import fuse_stages
    from irkit.passes.schedule.fill_placement import distribute_fills

    fuse_stages(kernel)
    distribute_fills(kernel)


@dataclass(frozen=True)
class ApplySchedulePass(ModulePass):
    """Apply every stage's schedule directives (`irkit.schedule` on its loops) to the loop IR."""

    name = "apply-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in kernels(op):
            apply_kernel(kernel)
