"""The `raise-tensorop` pass: a tensorop kernel back to a design document (irkit/raising/to_design.py)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from irkit.diagnostics import DiagnosticError
from irkit.passes.raise_loop import located
from irkit.raising.loop_reader import RaiseError
from irkit.raising.to_design import raise_module


@dataclass(frozen=True)
class RaiseTensorOpPass(ModulePass):
    """Rebuild the design document from a tensorop kernel: sizes and tensors from the function's
    arguments, layout from memref layouts, named operations recognised by lowering each
    candidate and comparing, other writes as index statements (`+=`/`max=` when a fill starts
    a reduction), schedules from each stage's `schedule`, hardware, assumptions and metric from
    the function's attributes.  Print it with `--emit design`."""

    name = "raise-tensorop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            design = raise_module(op)
        except RaiseError as err:
            raise DiagnosticError(
                [located(str(err) if str(err).startswith(self.name) else f"{self.name}: {err}", err.op or op)]
            ) from None
        for old in list(op.body.block.ops):
            old.detach()
            old.erase()
        op.body.block.add_op(design.body.block.detach_op(design.body.block.first_op))  # type: ignore[arg-type]
