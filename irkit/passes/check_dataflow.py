"""`check-dataflow`: nothing read before it is written, stages in order (irkit.checks.dataflow)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from irkit.checks.dataflow import check_dataflow
from irkit.diagnostics import DiagnosticError


@dataclass(frozen=True)
class CheckDataflowPass(ModulePass):
    """Check that every load of a temporary, register tile or output reads what an earlier store
    wrote: some store to the buffer comes before it, no later store overwrites what it reads with
    a value that does not come from it (stages in order), and a single box-shaped store before it
    covers the window it reads (proved for every size).  Fails with a located error for each
    buffer read too early; the IR is left unchanged."""

    name = "check-dataflow"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        errors = check_dataflow(op)
        if errors:
            raise DiagnosticError(errors)
