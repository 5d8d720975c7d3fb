"""`check-design`: the semantic checker as a pass over design IR.

Reading `.design` text runs the checker already; this pass is for design
IR that arrives as `.mlir` (hand-written, or edited between passes), so
the same diagnostics come out at the locations the ops carry.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from irkit.checks.document import check_document
from irkit.diagnostics import DiagnosticError


@dataclass(frozen=True)
class CheckDesignPass(ModulePass):
    """Check design IR for every semantic mistake (undefined names, ranks, shapes,
    bounds, unused tensors, conflicting layouts, schedules naming loops that do not
    exist, incomplete hardware blocks) and fail with all of them, each located.
    The IR is left unchanged."""

    name = "check-design"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        diagnostics = check_document(op)
        if any(diag.severity == "error" for diag in diagnostics):
            raise DiagnosticError(diagnostics)
