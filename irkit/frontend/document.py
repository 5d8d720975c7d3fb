"""A design document as a tool that writes it back sees it: the IR and the comments.

The document is the reviewed artifact, so every tool that writes one
(`irkit fmt`, the tuner) must keep its comments.  The API:

- `parse_document(text, filename)` -> `ParsedDocument`: the design IR
  (built, not semantically checked) and its comments attached to the ops
  (`irkit.frontend.comments`); `DiagnosticError` if the text has syntax
  errors or anything the builder refuses, since writing such a document
  back would change it.
- `ParsedDocument.format()` / `format_document(text, filename)`: the
  canonical text with every comment where it was
  (`irkit.backends.design_text.print_design(module, comments)`).
- `replace_schedule(doc, schedule)`: put a new `schedule` block for a
  stage in place of the old one (or add it), keeping the comments around
  the block and those inside it that still attach to a directive that
  remains; returns the comments dropped with directives that are gone.
- `rewrite_schedule(text, filename, schedule)`: the same on text.

Any other edit of the IR keeps comments by giving a replacement op the
comments of the op it replaces: `doc.comments.move(old, new)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.dialects import design as d
from irkit.directives import ComputeAtOp, ComputeRootOp, ReorderOp
from irkit.frontend.comments import Comment, DocumentComments, read_comments


@dataclass
class ParsedDocument:
    """The IR of a document, its comments, and the warnings building it gave."""

    text: str
    filename: str
    module: ModuleOp
    comments: DocumentComments
    warnings: list[Diagnostic] = field(default_factory=list)

    @property
    def design(self) -> d.DesignOp | None:
        """The `design` block (None for a `.hw` file)."""
        return next((op for op in self.module.body.block.ops if isinstance(op, d.DesignOp)), None)

    def format(self) -> str:
        """The document's canonical text, comments included."""
        from irkit.backends.design_text import print_design

        return print_design(self.module, self.comments)


def parse_document(text: str, filename: str = "<input>") -> ParsedDocument:
    """Build `text` (no semantic check) and attach its comments; `DiagnosticError` on any error."""
    from irkit.frontend.build import build_design

    module, diagnostics = build_design(text, filename)
    errors = [diag for diag in diagnostics if diag.severity == "error"]
    if module is None or errors:
        raise DiagnosticError(errors or diagnostics)
    return ParsedDocument(text, filename, module, read_comments(text, filename, module), diagnostics)


def format_document(text: str, filename: str = "<input>") -> str:
    """The canonical text of a document with every comment kept where it was."""
    return parse_document(text, filename).format()


# --- replacing a schedule ------------------------------------------------------------


def replace_schedule(doc: ParsedDocument, schedule: d.ScheduleOp) -> list[Comment]:
    """Make `schedule` the schedule of its stage in `doc`, keeping comments; the comments dropped are returned.

    The comments before, after and inside the header and the `}` of the
    old block stay with the new one.  A comment of an old directive moves
    to the new directive that prints the same, or else to one of the same
    kind on the same loop (`vectorize jv by 8` -> `vectorize jv by 16`);
    the comments of directives that have no such successor are dropped
    and returned, so that a tool can say so.  With no schedule for the
    stage yet, `schedule` is added after the last schedule (or the last
    statement or layout).
    """
    design = doc.design
    if design is None:
        raise ValueError("a hardware file has no schedules")
    if schedule.parent is not None:
        schedule = schedule.clone()
    block = design.body.block
    old = next((op for op in block.ops if isinstance(op, d.ScheduleOp) and op.stage.data == schedule.stage.data), None)
    if old is None:
        anchor = _insertion_point(design)
        if anchor is None:
            block.add_op(schedule)
        else:
            block.insert_op_after(schedule, anchor)
        return []
    doc.comments.move(old, schedule, ("item", "open", "close"))
    dropped = _move_directive_comments(doc.comments, list(old.body.block.ops), list(schedule.body.block.ops))
    block.insert_op_before(schedule, old)
    old.detach()
    old.erase()
    return dropped


def rewrite_schedule(text: str, filename: str, schedule: d.ScheduleOp) -> tuple[str, list[Comment]]:
    """`text` with `schedule` in place of its stage's schedule: (new text, comments dropped)."""
    doc = parse_document(text, filename)
    dropped = replace_schedule(doc, schedule)
    return doc.format(), dropped


def _insertion_point(design: d.DesignOp) -> Operation | None:
    ops = list(design.body.block.ops)
    for kinds in ((d.ScheduleOp,), (d.LayoutOp, d.StmtOp, d.NamedOp, d.RepeatOp, d.TensorOp)):
        found = [op for op in ops if isinstance(op, kinds)]
        if found:
            return found[-1]
    return None


def _directive_identity(op: Operation) -> tuple:
    """What makes a directive 'the same one' when its factor changes: its kind and the loops (or tensor) it names.

    A schedule has one `reorder` and one `compute_at`/`compute_root`, so
    their kind is enough.
    """
    if isinstance(op, (ReorderOp, ComputeAtOp, ComputeRootOp)):
        return (op.name,)
    for attr in ("loops", "tensor", "loop"):
        value = getattr(op, attr, None)
        if value is not None:
            return (op.name, str(value))
    return (op.name,)


def _move_directive_comments(comments: DocumentComments, old: list[Operation], new: list[Operation]) -> list[Comment]:
    from irkit.backends.design_text import format_directive

    free = list(new)
    pairs: list[tuple[Operation, Operation | None]] = []
    unmatched: list[Operation] = []
    for op in old:
        text = format_directive(op)
        twin = next((n for n in free if format_directive(n) == text), None)
        if twin is None:
            unmatched.append(op)
            continue
        free.remove(twin)
        pairs.append((op, twin))
    for op in unmatched:
        twin = next((n for n in free if _directive_identity(n) == _directive_identity(op)), None)
        if twin is not None:
            free.remove(twin)
        pairs.append((op, twin))
    dropped: list[Comment] = []
    for op, twin in pairs:
        if twin is not None:
            comments.move(op, twin)
            continue
        attached = comments.pop(op, "item")
        if attached:
            dropped.extend(attached.all())
    return sorted(dropped, key=lambda c: c.pos)
