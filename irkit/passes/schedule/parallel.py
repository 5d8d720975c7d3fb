"""`parallel v`: mark loop `v` `parallel` (the C backend's `#pragma omp parallel
for schedule(static)`), after `helpers.check_parallel`: not a reduction loop
(every store must depend on `v`, directly or through the inner loop of a
split), not nested in or around another parallel loop, no buffer written at
one index and accessed at another inside it.  `origin` becomes the
directive's location.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass

from irkit.passes.options import option
from irkit.passes.schedule import directive
from irkit.passes.schedule._pass import run_directive
from irkit.passes.schedule.helpers import check_parallel, get_str, make_directive, set_fact, set_origin, targets


@directive("parallel")
def apply(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    name = get_str(d, "loop")
    found = targets(kernel, stage, [name], where)
    for _, (loop,) in found:
        check_parallel(loop, where)
    for _, (loop,) in found:
        set_fact(loop, "parallel", None)
        set_origin(loop, where)


@dataclass(frozen=True)
class ScheduleParallelPass(ModulePass):
    """Run loop `loop` of stage `stage` on all cores (refused where iterations would race)."""

    name = "schedule-parallel"
    stage: str = option(help="the stage (the tensor a statement writes) whose loops are transformed")
    loop: str = option(help="the loop whose iterations run on all cores")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_directive(op, "parallel", self.stage, make_directive("parallel", self.loc, loop=self.loop), self.loc)
