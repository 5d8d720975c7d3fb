"""The schedule choices a document offers, stage by stage, from the directive records.

`stage_spaces(design, sizes)` runs the checker on a design op to learn each
stage's loops, reduction loops, reads, extents and consumers, evaluates the
extents at `sizes` (the document's defaults filled in), and returns a
`Space` per stage; `candidates(space)` asks every directive record for its
legal choices there.  The tuner adds no directive knowledge of its own: a
directive a plugin registers is searched the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from irkit.affine_text import evaluate
from irkit.checks.design import DesignChecker
from irkit.dialects import design as d
from irkit.directives import Entry, Space
from irkit.registry import DIRECTIVE_RECORDS


def stage_spaces(design: d.DesignOp, sizes: Mapping[str, int] | None = None, lanes: int = 8, registers: int = 16) -> dict[str, Space]:
    """Each stage's `Space` at `sizes` (defaults for the rest); a stage whose extents cannot be
    evaluated (a size without a value) is left out."""
    checker = DesignChecker(design)
    checker.run()
    values = {**checker.defaults, **dict(sizes or {})}
    roles = {name: t.role.data for name, t in checker.tensors.items()}
    readers: dict[str, dict[str, tuple[str, ...]]] = {}
    for name, stage in checker.stages.items():
        for read in stage.reads:
            if read in checker.stages and read != name:
                readers.setdefault(read, {})[name] = tuple(stage.loops)
    out: dict[str, Space] = {}
    for name, stage in checker.stages.items():
        try:
            extents = {loop: int(evaluate(e, values)) for loop, e in stage.extents.items()}
        except KeyError:
            continue
        out[name] = Space(
            stage=name,
            loops=tuple(stage.loops),
            extents=extents,
            reductions=frozenset(stage.reduction_loops),
            reads=tuple(stage.reads),
            lanes=lanes,
            registers=registers,
            consumers=readers.get(name, {}),
            temp=roles.get(name) == "temp",
        )
    return out


def candidates(space: Space) -> list[Entry]:
    """Every registered directive's legal choices for one stage, in registration order."""
    return [entry for record in DIRECTIVE_RECORDS.values() for entry in record.space(space)]
