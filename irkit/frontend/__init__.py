"""The design-language frontend: `.design` text to verified design IR."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.frontend.build import build_design, verify_errors

__all__ = ["build_design", "parse_design"]


def parse_design(
    text: str, filename: str = "<input>", check: bool = True, warnings: list[Diagnostic] | None = None
) -> ModuleOp:
    """`.design` (or `.hw`) text to design IR.

    Runs the semantic checker unless `check` is false, then the op
    verifiers.  Raises `DiagnosticError` carrying every diagnostic found
    if any is an error; otherwise warnings go to `warnings` when given.
    """
    module, diagnostics = build_design(text, filename)
    if module is not None and check:
        # Imported here: the checker lowers the document, and the passes it runs read the
        # frontend's builder (irkit.frontend.build), whose package this is.
        from irkit.checks.document import check_document

        diagnostics = diagnostics + check_document(module)
    diagnostics.sort(key=lambda diag: (diag.file != filename, diag.line, diag.col))
    if module is None or any(diag.severity == "error" for diag in diagnostics):
        raise DiagnosticError(diagnostics)
    if warnings is not None:
        warnings.extend(diagnostics)
    assert module is not None
    errors = verify_errors(module, filename)
    if errors:
        raise DiagnosticError(errors)
    return module
