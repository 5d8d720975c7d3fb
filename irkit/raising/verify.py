"""Reverse verification: lower a document, raise what was generated, compare, locate the differences.

`verify_document` runs the whole round trip from design IR;
`verify_loop_module` starts from loop IR someone may have edited by hand
and compares it with the document it claims to implement.  Both compare at
the tensorop level (`irkit.raising.compare`), with the document's named
operations generalized, and turn each difference into a diagnostic on the
document line whose intent was lost: the statement (computation), the
tensor declaration or its layout entry (tensors), or the schedule
directive (schedule).
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation

from irkit.diagnostics import Diagnostic, DiagnosticError, at_op
from irkit.dialects import design as d
from irkit.raising.compare import Difference, compare_kernels


def _context() -> Context:
    from irkit.context import make_context

    return make_context()


def document_tensorop(design_module: ModuleOp) -> ModuleOp:
    """The document's kernel at tensorop level, named ops generalized (what the raised kernel must equal)."""
    from irkit.passes.generalize import generalize_module
    from irkit.passes.lower_design import LowerDesignPass

    module = design_module.clone()
    LowerDesignPass().apply(_context(), module)
    generalize_module(module)
    return module


def lowered_loops(design_module: ModuleOp) -> ModuleOp:
    """The document lowered all the way to loop IR."""
    from irkit.passes.pipeline import lowering_pipeline

    module = design_module.clone()
    ctx = _context()
    for p in lowering_pipeline():
        p.apply(ctx, module)
    return module


def raised_tensorop(loop_module: ModuleOp) -> ModuleOp:
    """Loop IR raised to tensorop (raise-loop), on a copy; tensorop IR (edited between the
    lowering passes) is taken as it is."""
    from irkit.dialects import tensorop as t
    from irkit.passes.generalize import generalize_module
    from irkit.passes.raise_loop import loop_kernels, raise_module

    module = loop_module.clone()
    if loop_kernels(module) or not any(t.is_tensorop(op) for op in module.walk()):
        raise_module(module)
    generalize_module(module)  # reduce / elementwise, named by raise-loop
    return module


def _kernel(module: ModuleOp) -> func.FuncOp:
    for op in module.body.block.ops:
        if isinstance(op, func.FuncOp):
            return op
    raise DiagnosticError([at_op("error", "verify: the module holds no kernel function", module)])


def compare_modules(design_module: ModuleOp, loop_module: ModuleOp) -> list[Diagnostic]:
    """Diagnostics, located in the document, for every way `loop_module` departs from it: what
    the IR verifiers and the bounds proof find (`irkit.checks.loop_ir`), then the differences
    raising finds.  Where the proofs found something, raising's "cannot raise ..." adds nothing
    and is left out: a corrupted nest often cannot be raised."""
    from irkit.checks.loop_ir import loop_ir_errors

    proved = loop_ir_errors(loop_module, _statement_finder(design_module))
    try:
        found = _raised_differences(design_module, loop_module)
    except Exception:
        if not proved:
            raise
        return proved  # IR the verifiers refuse may be past what raising can read
    if proved:
        return _merged(proved, [d for d in found if "cannot raise" not in d.message])
    return found


def _raised_differences(design_module: ModuleOp, loop_module: ModuleOp) -> list[Diagnostic]:
    """Raise the loops and compare with the document; then check each fused tile's coverage."""
    from irkit.raising.loop_reader import RaiseError

    doc = document_tensorop(design_module)
    try:
        raised = raised_tensorop(loop_module)
    except RaiseError as err:  # what raising found wrong, at the stage's line when it names one
        return [_raise_diagnostic(err, design_module)]
    diffs = compare_kernels(_kernel(doc), _kernel(raised))
    if diffs:
        return [locate(diff, design_module) for diff in diffs]
    try:  # the same computation; does each fused tile compute all its consumer reads?
        tile_coverage(loop_module)
    except RaiseError as err:
        return [_raise_diagnostic(err, design_module)]
    return []


def _merged(first: list[Diagnostic], more: list[Diagnostic]) -> list[Diagnostic]:
    """`first`, then those of `more` at a place and with a message not already there."""
    seen = {(d.file, d.line, d.col, d.message) for d in first}
    return first + [d for d in more if (d.file, d.line, d.col, d.message) not in seen]


def _statement_finder(design_module: ModuleOp):
    """stage name -> (file, line, col) of its statement in the document, or None."""
    design = _design(design_module)

    def statement_of(stage: str) -> tuple[str, int, int] | None:
        if design is None:
            return None
        target = _target_op(design, Difference(stage, "computation", ""))
        loc = target.location if target is not None else None
        if isinstance(loc, FileLineColLoc):
            return loc.filename.data, loc.line.data, loc.column.data
        return None

    return statement_of


def tile_coverage(loop_module: ModuleOp) -> None:
    """Follow the indices of tile-sized temporaries at sample sizes (`irkit.raising.coverage`)."""
    from irkit.passes.raise_loop import loop_kernels
    from irkit.raising.loop_reader import check_tiles, read_kernel
    from irkit.raising.unjam import unjam
    from irkit.raising.unpack import unpack

    module = loop_module.clone()
    for kernel in loop_kernels(module):
        unpack(kernel)
        unjam(kernel)
        check_tiles(read_kernel(kernel))


def verify_document(design_module: ModuleOp) -> list[Diagnostic]:
    """Lower the document, raise the loops, compare: [] when the generated code is what was asked."""
    return compare_modules(design_module, lowered_loops(design_module))


# ---- locating a difference in the document --------------------------------------


def _raise_diagnostic(err, design_module: ModuleOp) -> Diagnostic:
    from irkit.passes.raise_loop import located

    message = f"raise-loop: {err}"
    design = _design(design_module)
    if err.stage and design is not None:
        target = _target_op(design, Difference(err.stage, "computation", message))
        if target is not None:
            return at_op("error", message, target)
    return located(message, err.op or design_module)


def _design(module: ModuleOp) -> d.DesignOp | None:
    for op in module.walk():
        if isinstance(op, d.DesignOp):
            return op
    return None


def locate(diff: Difference, design_module: ModuleOp) -> Diagnostic:
    """The difference as an error on the document line it concerns."""
    if diff.loc:
        parts = diff.loc.rsplit(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            return Diagnostic("error", diff.message, parts[0], int(parts[1]), int(parts[2]))
    design = _design(design_module)
    target = _target_op(design, diff) if design is not None else None
    if target is None:
        target = design if design is not None else design_module
    return at_op("error", diff.message, target)


def _target_op(design: d.DesignOp, diff: Difference) -> Operation | None:
    """The statement of the stage, or the tensor's layout entry / declaration."""
    stmt = tensor = layout = None
    for op in design.walk():
        if isinstance(op, d.StmtOp | d.NamedOp) and _target_name(op) == diff.stage:
            stmt = op
        elif isinstance(op, d.TensorOp) and op.sym_name.data == diff.stage:
            tensor = op
        elif isinstance(op, d.LayoutOp) and op.tensor.data == diff.stage:
            layout = op
    if diff.aspect == "layout":
        return layout or tensor or stmt
    if diff.aspect in ("tensor", "shape"):
        return tensor or stmt
    return stmt or tensor


def _target_name(op: Operation) -> str | None:
    target = getattr(op, "target", None)
    if target is None:
        return None
    return target.data if hasattr(target, "data") else str(target)
