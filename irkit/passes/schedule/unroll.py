"""`unroll v by F`: mark loop `v` with `unroll = F` (the C backend's
`#pragma GCC unroll F`).  The loop is not rewritten; unrolling an outer loop
into the loops it holds is `unroll_jam`.  `origin` becomes the directive's
location.
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
from irkit.passes.schedule.helpers import fail, get_int, get_str, make_directive, set_fact, set_origin, targets


@directive("unroll")
def apply(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    name = get_str(d, "loop")
    factor = get_int(d, "factor")
    if factor is None or factor <= 0:
        raise fail(where, f"unroll factor must be positive, got {factor}", str(factor))
    for _, (loop,) in targets(kernel, stage, [name], where):
        set_fact(loop, "unroll", factor)
        set_origin(loop, where)


@dataclass(frozen=True)
class ScheduleUnrollPass(ModulePass):
    """Unroll loop `loop` of stage `stage` by `factor`."""

    name = "schedule-unroll"
    stage: str = option(help="the stage (the tensor a statement writes) whose loops are transformed")
    loop: str = option(help="the loop, by its name in the stage's nest")
    factor: int = option(help="how many copies of the body one iteration runs")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        d = make_directive("unroll", self.loc, loop=self.loop, factor=self.factor)
        run_directive(op, "unroll", self.stage, d, self.loc)
