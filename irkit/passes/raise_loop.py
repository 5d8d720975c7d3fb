"""The `raise-loop` pass: loop-level kernels back to tensorop (irkit/raising/)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from irkit.diagnostics import Diagnostic, DiagnosticError, at_op
from irkit.dialects import loop as lp
from irkit.raising.loop_reader import RaiseError
from irkit.raising.to_tensorop import raise_kernel


def loop_kernels(module: ModuleOp) -> list[func.FuncOp]:
    """The module's functions that hold loop-level code."""
    return [
        f
        for f in module.body.block.ops
        if isinstance(f, func.FuncOp) and any(isinstance(o, lp.ForOp | lp.StoreOp) for o in f.walk())
    ]


def located(message: str, op: Operation) -> Diagnostic:
    """A diagnostic at `op`, or -- when the IR was parsed without locations -- at the document
    directive that made the nearest enclosing loop (its `origin`), so the message still points
    at a line a person can fix."""
    if isinstance(op.location, FileLineColLoc):
        return at_op("error", message, op)
    cur: Operation | None = op
    while cur is not None:
        where = lp.origin_location(cur) if isinstance(cur, lp.ForOp) else None
        if where is not None:
            return Diagnostic("error", message, *where)
        cur = cur.parent_op()
    return at_op("error", message, op)


@dataclass(frozen=True)
class RaiseLoopPass(ModulePass):
    """Rebuild each loop-level kernel as tensorop: every store becomes a fill or a generic whose
    domain, indexing maps, iterator kinds and body are read from the loops' bounds and steps,
    the access maps and the scalar ops (packs, register blocks and their tails, splits, tiles
    and compute_at temporaries undone); the schedule the loops implement is recovered into each
    generic's `schedule`.  What cannot be raised is a located error (docs/raising.md)."""

    name = "raise-loop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            raise_module(op)
        except RaiseError as err:
            raise DiagnosticError([located(f"{self.name}: {err}", err.op or op)]) from None


def raise_module(op: ModuleOp) -> None:
    """Replace each loop-level kernel of `op` by its tensorop form; raises `RaiseError`."""
    kernels = loop_kernels(op)
    if not kernels:
        raise RaiseError("the module holds no loop-level kernel", op)
    for kernel in kernels:
        raised = raise_kernel(kernel)
        raised.location = kernel.location
        kernel.parent_block().insert_op_before(raised, kernel)  # type: ignore[union-attr]
        kernel.detach()
        kernel.erase()
