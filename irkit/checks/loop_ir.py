"""What `irkit verify` proves of loop IR before it raises it: the IR verifiers, then bounds.

Loop IR read from a file (`irkit verify DOC --loops FILE`, edited by hand or
by a tool) has not been through the passes that build it, so nothing has
checked it yet: a `parallel` mark on a reduction loop, a map of the wrong
arity, a local of the wrong shape.  Each op's verifier runs on its own, so
every failing op is reported, located at the op or, for IR printed without
locations, at the directive that made the loop around it.  Then the bounds
proof (`irkit.checks.bounds`): every access inside its buffer for every size;
and the dataflow check (`irkit.checks.dataflow`): nothing read before it is
written, stages in an order their dependences allow.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException

from irkit.checks.bounds import StatementOf, check_bounds
from irkit.checks.dataflow import check_dataflow
from irkit.diagnostics import Diagnostic


def verifier_errors(module: ModuleOp) -> list[Diagnostic]:
    """One error for every op whose own verifier fails (nested ops are checked one by one)."""
    from irkit.passes.raise_loop import located

    try:
        module.verify()
        return []
    except DiagnosticException:
        pass
    errors: list[Diagnostic] = []
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as exc:
            errors.append(located(f"the loop IR does not verify: {exc}", op))
    if not errors:  # a failure only the whole module shows (e.g. a use before its definition)
        try:
            module.verify()
        except DiagnosticException as exc:
            errors.append(located(f"the loop IR does not verify: {exc}", module))
    return errors


def loop_ir_errors(module: ModuleOp, statement_of: StatementOf | None = None) -> list[Diagnostic]:
    """The verifiers' errors; when there are none, the accesses the bounds proof cannot prove
    and the reads the dataflow check finds before their writes (`statement_of`: where a stage's
    statement is, for locations)."""
    errors = verifier_errors(module)
    if errors:
        return errors
    return check_bounds(module, statement_of) + check_dataflow(module, statement_of)
