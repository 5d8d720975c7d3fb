"""What `irkit verify` proves of loop IR before it raises it: the IR verifiers, then bounds.

Loop IR read from a file (`irkit verify DOC --loops FILE`, edited by hand or
by a tool) has not been through the passes that build it, so nothing has
checked it yet: a `parallel` mark on a reduction loop, a map of the wrong
arity, a local of the wrong shape.  Each op's verifier runs on its own, so
every failing op is reported, located at the op or, for IR printed without
locations, at the directive that made the loop around it; and a `parallel`
loop inside another parallel loop, which the document checker refuses, is an
error too.  Then the bounds
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
from irkit.dialects import loop as lp


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


def nested_parallel_errors(module: ModuleOp) -> list[Diagnostic]:
    """A loop marked parallel inside another parallel loop: the document checker refuses it (only
    one loop of a nest goes to the cores), so generated code never has it, and the C backend would
    start a team of threads for every iteration of the outer loop."""
    from irkit.passes.raise_loop import located

    errors: list[Diagnostic] = []
    for op in module.walk():
        if not isinstance(op, lp.ForOp) or op.parallel is None:
            continue
        outer = next((x for x in reversed(lp.enclosing_loops(op)) if x.parallel is not None), None)
        if outer is not None:
            errors.append(located(
                f"loop '{op.loop_name.data}' is parallel inside the parallel loop '{outer.loop_name.data}': "
                "only one loop of a nest can be distributed over the cores (a nested parallel region)",
                op,
            ))  # fmt: skip
    return errors


def loop_ir_errors(module: ModuleOp, statement_of: StatementOf | None = None) -> list[Diagnostic]:
    """The verifiers' errors; when there are none, the accesses the bounds proof cannot prove
    and the reads the dataflow check finds before their writes (`statement_of`: where a stage's
    statement is, for locations)."""
    errors = verifier_errors(module)
    if errors:
        return errors
    return nested_parallel_errors(module) + check_bounds(module, statement_of) + check_dataflow(module, statement_of)
