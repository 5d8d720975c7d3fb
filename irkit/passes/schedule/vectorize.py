"""`vectorize v [by W]`: mark loop `v` with `vector = W` (the C backend's
`#pragma omp simd simdlen(W)`, tails included, so W need not divide the
trip count).  The default W is the kernel's SIMD width (`simd` of an inline
`irkit.hardware`, else 512 bits) over the bits of the element the loop
stores: 16 for f32, 8 for f64.

`v` must be the innermost loop of its nest once the stage's schedule is
applied: the single-directive pass checks it at once; `apply-schedule`
checks it after all of the stage's loop-shaping directives, since a later
`reorder` may make `v` innermost (`check_vectorized`).
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
    check_innermost,
    default_vector_width,
    fail,
    get_int,
    get_str,
    make_directive,
    set_fact,
    set_origin,
    targets,
)


@directive("vectorize")
def apply(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    name = get_str(d, "loop")
    width = get_int(d, "width")
    if width is not None and width <= 0:
        raise fail(where, f"vector width must be positive, got {width}", str(width))
    for _, (loop,) in targets(kernel, stage, [name], where):
        set_fact(loop, "vector", width if width is not None else default_vector_width(kernel, loop))
        set_origin(loop, where)


def check_vectorized(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    """The loop a `vectorize` directive names must be innermost (in every nest of the stage)."""
    for _, (loop,) in targets(kernel, stage, [get_str(d, "loop")], where):
        check_innermost(loop, where)


@dataclass(frozen=True)
class ScheduleVectorizePass(ModulePass):
    """Vectorize the innermost loop `loop` of stage `stage`, `width` lanes (default: from the hardware)."""

    name = "schedule-vectorize"
    stage: str = option(help="the stage (the tensor a statement writes) whose loops are transformed")
    loop: str = option(help="the innermost loop to run in vector lanes")
    width: int | None = option(None, help="lanes per vector (default: the hardware's vector width for the element type)")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        d = make_directive("vectorize", self.loc, loop=self.loop, width=self.width)
        for kernel in run_directive(op, "vectorize", self.stage, d, self.loc):
            check_vectorized(kernel, self.stage, d, self.loc)
