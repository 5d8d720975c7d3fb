"""`split v by F -> vo, vi`: one loop becomes an outer loop of blocks and an inner loop.

    for k = 0 to K step 1                  for ko = 0 to K step 128              {loop_name = "ko"}
      body(k)                       ==>      for k = ko to min(ko + 128, K) step 1   {loop_name = "ki"}
                                               body(k)

The inner loop's variable *is* the original index (the old loop's block
argument), so loads and stores are unchanged; the last block is cut by the
`min`, which is left out when the range is known to be a whole number of
blocks (constant bounds, or an `assume { K % 128 == 0 }`).  A split of a
loop with step s (an outer loop of an earlier split) steps by s*F outside
and s inside.  See `helpers.split_loop` for facts and `origin`.
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
from irkit.passes.schedule.helpers import (
    check_fresh,
    divisors,
    fail,
    get_int,
    get_str,
    make_directive,
    split_loop,
    targets,
)


@directive("split")
def apply(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    loop = get_str(d, "loop")
    factor = get_int(d, "factor")
    outer = get_str(d, "outer", "") or f"{loop}o"
    inner = get_str(d, "inner", "") or f"{loop}i"
    if factor is None or factor <= 0:
        raise fail(where, f"split factor must be positive, got {factor}", str(factor))
    found = targets(kernel, stage, [loop], where)
    check_fresh(kernel, stage, [outer, inner], where)
    div = divisors(kernel)
    for _, (target,) in found:
        split_loop(target, factor, outer, inner, where, div)


@dataclass(frozen=True)
class ScheduleSplitPass(ModulePass):
    """Split loop `loop` of stage `stage` by `factor` into `outer` and `inner`
    (default names: loop + "o", loop + "i").  `loc` ("file:line:col") locates
    diagnostics and becomes the new loops' `origin`."""

    name = "schedule-split"
    stage: str = option(help="the stage (the tensor a statement writes) whose loops are transformed")
    loop: str = option(help="the loop, by its name in the stage's nest")
    factor: int = option(help="the number of iterations of the inner loop (the last outer iteration may run fewer)")
    outer: str = option("", help="name of the outer loop (default: loop + 'o')")
    inner: str = option("", help="name of the inner loop (default: loop + 'i')")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        d = make_directive("split", self.loc, loop=self.loop, factor=self.factor, outer=self.outer, inner=self.inner)
        run_directive(op, "split", self.stage, d, self.loc)
