"""Schedule directives applied to loop IR: one module per directive kind.

`lower-tensorop` leaves a stage's directives, unapplied, as the discardable
attribute `irkit.schedule` on the outermost `loop.for` of each of the
stage's nests: an array of dictionaries with `kind`, the directive's
operands (as the design op's properties: `loop`, `factor`, `outer`,
`inner`, `loops`, `factors`, `width`, `stage`, ...) and `loc`, the
"file:line:col" of the directive in the document.  `apply-schedule`
(`irkit.passes.apply_schedule`) applies them; each kind is also a pass of
its own (`schedule-split{...}` and so on) for testing from hand-written IR.

The interface every directive module implements:

    @directive("split")                      # its phase is its record's (irkit.directives)
    def apply(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None

It transforms the loops of `stage` inside `kernel` in place, or raises
`DiagnosticError` located at `where` (`helpers.fail(where, message, focus)`)
saying what is illegal and why.  `d` is the directive's dictionary
(`DictionaryAttr.data`, or any mapping of the same keys).

Modules register themselves when imported; `load(kind)` imports the module
its directive record names (`irkit.directives`, `Directive.transform`) on
demand: `compute_root` lives in `compute_at`.

Phases: `SHAPE` directives (split, tile, reorder, parallel, vectorize,
unroll, and by default any other kind) run first, stage by stage, each
stage's in document order; `PLACE` directives (compute_at, compute_root)
run afterwards, consumers before producers, once every stage has its final
loops.  When a placement runs, `irkit.schedule` has been removed already,
so `helpers.stage_nests` gives all of a stage's nests (fills included).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from xdsl.dialects import func
from xdsl.ir import Attribute

from irkit import registry
from irkit.directives import record_of
from irkit.directives.record import PLACE, SHAPE  # noqa: F401 -- re-exported for the transforms

Directive = Callable[[func.FuncOp, str, Mapping[str, Attribute], str], None]

DIRECTIVES: dict[str, Directive] = registry.DIRECTIVES


def directive(kind: str) -> Callable[[Directive], Directive]:
    """Register `apply` for directives of `kind` (decorator)."""

    def register(fn: Directive) -> Directive:
        DIRECTIVES[kind] = fn
        return fn

    return register


def phase_of(kind: str) -> str:
    """The phase a directive runs in: its record's (SHAPE for a kind without one)."""
    record = record_of(kind)
    return record.phase if record is not None else SHAPE


def load(kind: str) -> Directive | None:
    """The function applying `kind`, importing the module its record names if needed; None for a
    kind without a record (IR written by hand or by a tool can hold any `kind`).  A transform
    module that fails to import is a bug, and its error propagates."""
    if kind in DIRECTIVES:
        return DIRECTIVES[kind]
    record = record_of(kind)
    if record is None:
        return None
    record.load_transform()
    return DIRECTIVES.get(kind)


def unknown(kind: str) -> str:
    """The message for a directive `kind` irkit does not know."""
    return f"unknown schedule directive '{kind}'; the directives are: {', '.join(sorted(registry.DIRECTIVE_RECORDS))}"
