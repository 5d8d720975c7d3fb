"""`interchange a, b`: swap two loops; legal exactly when `reorder b, a` is (see reorder.py)."""

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
from irkit.passes.schedule.helpers import fail, get_strs, make_directive
from irkit.passes.schedule.reorder import apply as reorder


@directive("interchange")
def apply(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    names = get_strs(d, "loops")
    if len(names) != 2 or names[0] == names[1]:
        raise fail(where, f"interchange swaps two different loops, got {', '.join(names)}")
    reorder(kernel, stage, make_directive("reorder", where, loops=[names[1], names[0]]), where)


@dataclass(frozen=True)
class ScheduleInterchangePass(ModulePass):
    """Swap loops `first` and `second` of stage `stage`."""

    name = "schedule-interchange"
    stage: str = option(help="the stage (the tensor a statement writes) whose loops are transformed")
    first: str = option(help="one of the two loops")
    second: str = option(help="the other loop")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        d = make_directive("interchange", self.loc, loops=[self.first, self.second])
        run_directive(op, "interchange", self.stage, d, self.loc)
