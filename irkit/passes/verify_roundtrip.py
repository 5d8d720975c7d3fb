"""The `verify-roundtrip` pass: the module must implement the document it came from."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from irkit.diagnostics import DiagnosticError, at_op
from irkit.passes.options import option


@dataclass(frozen=True)
class VerifyRoundtripPass(ModulePass):
    """Lower a design module all the way (on a copy), raise the loops back and compare with the
    document: computation up to loop renaming and commutativity, shapes, layout, schedule. Every
    difference is an error at the document's line. On tensorop or loop IR (for example edited by
    hand between passes), give the document it must implement with `document="FILE.design"`.
    The module is left as is."""

    name = "verify-roundtrip"

    document: str = option("", help="the .design file the module must implement (needed when the module is loop IR)")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from irkit.dialects import design as d
        from irkit.frontend import parse_design
        from irkit.frontend.source import read_document
        from irkit.raising.verify import compare_modules, lowered_loops

        is_design = any(isinstance(o, d.DesignOp) for o in op.body.block.ops)
        if is_design:
            design, loops = op, lowered_loops(op)
        elif self.document:
            text, name = read_document(self.document)
            design, loops = parse_design(text, name), op
        else:
            raise DiagnosticError([at_op(
                "error",
                f"{self.name}: the module is not a design document; name the document it implements "
                f"with '{self.name}{{document=\"FILE.design\"}}'",
                op,
            )])  # fmt: skip
        diags = compare_modules(design, loops)
        if diags:
            raise DiagnosticError(diags)
