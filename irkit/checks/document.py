"""Every problem of a document: the checker's own findings, then what lowering refuses.

Why a module of its own: the checker (`irkit.checks.design`) sits below the
passes (`lower-design` runs it), while the lowering check
(`irkit.checks.lowering`) runs the passes; composing the two here keeps the
import graph a hierarchy.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from irkit.checks.design import check_module
from irkit.checks.lowering import check_lowering
from irkit.diagnostics import Diagnostic


def check_document(module: ModuleOp) -> list[Diagnostic]:
    """All semantic problems of the designs and hardware blocks in `module`.

    A design without other errors is also lowered the way `irkit run` lowers
    it, so that whatever a schedule pass refuses is refused here first."""
    return check_module(module, then=check_lowering)
