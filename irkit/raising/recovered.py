"""Directives recovered from the loops before they are read, and the loops they were found on.

`unpack` and `unjam` undo what `pack` and `unroll_jam` did and return what they
undid as directives.  A directive belongs to one stage's schedule, and which one
is a fact of structure: the stage whose store comes last inside the loop the
directive was found on (the same rule that gives every loop its stage).  A
loop's *name* cannot decide it: stages reuse names (`ii` of T and `ii` of D in
a chain of matmuls).  So each directive travels with its loop, and the loops
that `unjam` rebuilds (new bounds, a remainder merged in) are followed to the
loop that now stands for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from irkit.dialects import loop as lp


@dataclass
class Found:
    """A directive recovered from the loops, and the loop it was found on (as the IR now has
    it): `raise_kernel` gives it to the stage whose store is last in that loop -- by nesting,
    never by the loop's name, which several stages may use (`ii` of T and of D)."""

    directive: dict
    loop: lp.ForOp | None


class Rebuilt:
    """Loops replaced while undoing register blocks (new bounds, a tail merged in): old -> new,
    so that a `Found` still points at its loop after the loop was rebuilt."""

    def __init__(self) -> None:
        self._to: dict[lp.ForOp, lp.ForOp] = {}

    def record(self, old: lp.ForOp, new: lp.ForOp) -> None:
        self._to[old] = new

    def now(self, loop: lp.ForOp | None) -> lp.ForOp | None:
        while loop is not None and loop in self._to:
            loop = self._to[loop]
        return loop

    def update(self, found: list[Found]) -> list[Found]:
        return [Found(f.directive, self.now(f.loop)) for f in found]
