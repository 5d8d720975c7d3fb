"""Schedule legality by the schedule passes themselves.

Whether a schedule is legal is decided, in the end, by the passes that
apply it: `pack` needs the tile of one loop iteration to be a box of
constant size, `compute_at` that no write inside the target loop races
the moved stage, `unroll_jam` that the jammed loop's bounds do not depend
on the loops it moves across, and so on -- facts about the loops *after*
the directives before them, which only the passes compute.  Re-deriving
them in the checker would be a second implementation that drifts from the
first.  So the checker lowers the document the way `irkit run` does
(`lower-design`, `lower-tensorop`, `apply-schedule`, with the sizes still
symbolic) and reports whatever those passes refuse as its own diagnostic:
the same message at the same line, before anything is compiled.  On
success it also checks the names the passes generated (`B_pack`, the
loops of a packing copy) against what the C backend accepts.

Only what can fail is lowered: the statements whose stage has a schedule,
the named operations (their generalization is operation specific; those a
plugin registered without a tensorop form check but do not lower), and,
for a stage placed with `compute_at`/`compute_root`, every stage that reads
it directly or through others.  The passes treat the other statements (an
unscheduled index statement becomes one plain nest) in a way that cannot
fail, so a big document with a few schedules costs a few statements'
lowering.  `tests/unit/test_checker_soundness.py` checks the claim: for
random schedules of the examples, the checker accepts exactly when the full
lowering succeeds.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.dialects import design as d
from irkit.directives import ComputeAtOp, ComputeRootOp
from irkit.names import name_diagnostic

STATEMENTS = (d.StmtOp, d.NamedOp)


def check_lowering(design: d.DesignOp) -> list[Diagnostic]:
    """What lowering and scheduling `design` refuses (its checker found nothing else)."""
    sub = relevant_design(design)
    if sub is None:
        return []
    from irkit.dialects import loop as lp
    from irkit.passes.apply_schedule import ApplySchedulePass
    from irkit.passes.lower_design import Lowering
    from irkit.passes.lower_tensorop import LowerTensorOpPass

    try:
        module = ModuleOp([Lowering(sub).run()])
        ctx = _context()
        LowerTensorOpPass().apply(ctx, module)
        ApplySchedulePass().apply(ctx, module)
    except DiagnosticError as exc:
        return list(exc.diagnostics)
    diags: list[Diagnostic] = []
    for op in module.walk():
        if isinstance(op, lp.ForOp):
            _name(diags, op.loop_name.data, "loop", op)
        elif isinstance(op, lp.AllocOp | lp.LocalOp):
            _name(diags, op.tensor_name.data, "temporary", op)
    return diags


def _name(diags: list[Diagnostic], name: str, what: str, op: Operation) -> None:
    diag = name_diagnostic(name, what, op)
    if diag is not None and all(x.message != diag.message for x in diags):
        diags.append(diag)


_CTX = None


def _context():
    global _CTX
    if _CTX is None:
        from irkit.context import make_context

        _CTX = make_context()
    return _CTX


def relevant_design(design: d.DesignOp) -> d.DesignOp | None:
    """A copy of `design` with only the statements whose lowering can fail (see the module
    docstring), or None if there are none."""
    ops = list(design.body.block.ops)
    statements = d.statements(ops)
    scheduled = {op.stage.data for op in ops if isinstance(op, d.ScheduleOp) and op.body.block.first_op is not None}
    placed = {
        op.stage.data
        for op in ops
        if isinstance(op, d.ScheduleOp)
        and any(isinstance(x, ComputeAtOp | ComputeRootOp) for x in op.body.block.ops)
    }
    keep = scheduled | {op.target.data for op in statements if isinstance(op, d.NamedOp)}
    readers = _readers(statements)
    todo = list(placed)
    while todo:  # every stage downstream of a placed one
        for reader in readers.get(todo.pop(), []):
            if reader not in keep:
                keep.add(reader)
                todo.append(reader)
    keep -= {op.target.data for op in statements if isinstance(op, d.NamedOp) and not _lowerable(op.op_name.data)}
    if not keep:
        return None
    kept: list[Operation] = []
    for op in ops:
        if isinstance(op, STATEMENTS) and op.target.data not in keep:
            continue
        if isinstance(op, d.RepeatOp) and not any(s.target.data in keep for s in op.body.block.ops):
            continue  # a repeat is kept whole: its statements read each other's results
        if isinstance(op, d.ScheduleOp) and op.stage.data not in keep:
            continue
        kept.append(op.clone())
    sub = d.DesignOp(design.design_name, kept)
    sub.location = design.location
    return sub


def _lowerable(op_name: str) -> bool:
    """Has the named operation a tensorop form and a generalization?  A plugin may register
    only the design level (docs/tutorial ch. 1): its documents check but do not lower, and
    there are no passes whose refusals to report."""
    from irkit.dialects import tensorop as t
    from irkit.passes.generalize import GENERALIZERS

    return op_name in t.NAMED_TENSOR_OPS and op_name in GENERALIZERS


def _readers(statements: list[Operation]) -> dict[str, list[str]]:
    """Tensor -> the stages (targets) whose statements read it."""
    out: dict[str, list[str]] = {}
    for op in statements:
        if isinstance(op, d.NamedOp):
            names = op.operand_names
        else:
            names = [r.tensor.data for r in op.walk() if isinstance(r, d.ReadOp)]
        for name in dict.fromkeys(names):
            out.setdefault(name, []).append(op.target.data)  # type: ignore[attr-defined]
    return out
