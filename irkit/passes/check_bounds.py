"""`check-bounds`: prove every load and store of loop IR inside its buffer (irkit.checks.bounds)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from irkit.checks.bounds import check_bounds
from irkit.diagnostics import DiagnosticError


@dataclass(frozen=True)
class CheckBoundsPass(ModulePass):
    """Prove that every `loop.load` and `loop.store` stays inside its buffer for every size the
    document allows (sizes >= 1, multiples of their `assume` divisors) and every iteration of the
    loops around it; fail with an error for each access it cannot prove, located at the
    statement or the directive that made the loop.  The IR is left unchanged."""

    name = "check-bounds"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        errors = check_bounds(op)
        if errors:
            raise DiagnosticError(errors)
