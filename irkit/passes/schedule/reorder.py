"""`reorder a, b, c`: put the named loops in this order, outermost first, in the
positions they occupy (loops not named stay where they are).

The named loops must be perfectly nested (from the outermost to the
innermost named one, each loop holds only the next), and the new order must
not change results (`helpers.check_permutation`: bounds that use an outer
loop's variable, a buffer written and read at different indices, the order
of non-associative updates of one element).
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
from irkit.passes.schedule.helpers import band, check_permutation, fail, get_strs, make_directive, permute, targets


@directive("reorder")
def apply(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    names = get_strs(d, "loops")
    if len(set(names)) != len(names):
        raise fail(where, f"reorder names a loop twice: {', '.join(names)}")
    what = f"reorder {', '.join(names)}"
    for _, loops in targets(kernel, stage, names, where):
        chain = band(loops, where, what)
        positions = sorted(chain.index(loop) for loop in loops)
        order = list(chain)
        for pos, loop in zip(positions, loops):
            order[pos] = loop
        check_permutation(chain, order, where, what)
        permute(chain, order)


@dataclass(frozen=True)
class ScheduleReorderPass(ModulePass):
    """Reorder loops `loops` of stage `stage` (`loops=io,jo,ii,ji`, outermost first)."""

    name = "schedule-reorder"
    stage: str = option(help="the stage (the tensor a statement writes) whose loops are transformed")
    loops: tuple[str, ...] = option(help="the new order of the loops, outermost first, e.g. loops=io,jo,ii,ji")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_directive(op, "reorder", self.stage, make_directive("reorder", self.loc, loops=list(self.loops)), self.loc)
