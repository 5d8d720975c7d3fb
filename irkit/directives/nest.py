"""A stage's loops while its schedule directives are replayed by name: the one replayer.

The checker (`irkit.checks.schedule`) replays a document's directives to
check each against the loops that exist at that point; raising's comparison
(`irkit.raising.compare`) replays the document's and the generated code's
to compare the nests they make.  Both replay with the same functions (each
directive record's `replay`) on this class.

A loop is `[name, root, step]`: its name, the dimension it walks (the name
of the loop it was split from, through any number of splits) and its step
in that dimension.  Marks (`parallel`, `vectorize`, `unroll`, `unroll_jam`)
follow a split loop where the lowering puts them.  `locs` says which
directive made what (`split:<root>`, `reorder`, `<mark>:<loop>`,
`pack:<tensor>`, `compute_at`), for locating a difference.

`quiet` replays (the comparison's) report nothing and check only that the
loops a directive names exist; a checking replay reports every problem as a
located diagnostic on the directive's op.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation

from irkit.diagnostics import Diagnostic, at_op
from irkit.names import name_diagnostic
from irkit.suggest import suggest


def _line(op: object) -> int:
    loc = getattr(op, "location", None)
    return loc.line.data if isinstance(loc, FileLineColLoc) else 0


class Nest:
    """The loops of one stage while its directives are replayed."""

    def __init__(
        self,
        stage: str,
        loops: Iterable[str],
        reductions: Iterable[str] = (),
        reads: Iterable[str] = (),
        roots: dict[str, str] | None = None,
        quiet: bool = False,
    ):
        roots = roots or {}
        self.stage = stage
        self.loops: list[tuple[str, str, int]] = [(name, roots.get(name, name), 1) for name in loops]  # (name, root, step)
        self.reductions = set(reductions)
        self.reads = list(reads)
        self.quiet = quiet
        self.gone: dict[str, tuple[str, object]] = {}  # loop -> (what replaced it, where)
        self.diags: list[Diagnostic] = []
        # loop -> {mark kind: value}; a loop's dict is replaced, never changed, so copies may share it
        self.marks: dict[str, dict[str, object]] = {}
        self.locs: dict[str, str | None] = {}
        self.packs: dict[str, str] = {}  # tensor -> the loop its packed copy is made in
        self.where: tuple[str, str] | None = None  # compute_at (stage, loop)
        self.vectorized: list[tuple[str, object]] = []  # (loop, where): checked against the final nest
        self.deps: dict[str, frozenset[str]] = {}  # split loop -> the loops its bounds use

    # --- the loops -----------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return [loop[0] for loop in self.loops]

    def key(self, name: str) -> tuple[str, int] | None:
        """(dimension, step) of the loop `name`."""
        for loop in self.loops:
            if loop[0] == name:
                return loop[1], loop[2]
        return None

    def name_of(self, key: tuple[str, int]) -> str | None:
        for loop in self.loops:
            if (loop[1], loop[2]) == key:
                return loop[0]
        return None

    # --- checks a directive makes ------------------------------------------------------------

    def error(self, message: str, at: object, focus: str | None = None) -> None:
        if self.quiet or not isinstance(at, Operation):
            return
        self.diags.append(at_op("error", message, at, focus))

    def require(self, name: str, at: object) -> bool:
        """Does loop `name` exist now?  (Said why not, when it does not.)"""
        for loop in self.loops:
            if loop[0] == name:
                return True
        if name in self.gone:
            what, where = self.gone[name]
            self.error(
                f"loop '{name}' of stage '{self.stage}' no longer exists: it was {what} at line {_line(where)}",
                at,
                name,
            )
            return False
        self.error(
            f"unknown loop '{name}' in the schedule of '{self.stage}'; its loops are: {', '.join(self.names)}"
            + suggest(name, self.names),
            at,
            name,
        )
        return False

    def fresh(self, names: list[str], at: object) -> bool:
        """Are the new loop names unused (and nameable in C)?"""
        if self.quiet:
            return True
        taken = set(self.names)
        for name in names:
            if name in taken or names.count(name) > 1:
                self.error(f"new loop name '{name}' is already used in stage '{self.stage}'", at, name)
                return False
        if isinstance(at, Operation):
            for name in names:  # a loop the C backend could not name: reported, but the loop exists
                diag = name_diagnostic(name, "loop", at, name)
                if diag is not None:
                    self.diags.append(diag)
        return True

    def positive(self, what: str, value: int, at: object) -> bool:
        if value > 0 or self.quiet:
            return True
        self.error(f"{what} must be positive, got {value}", at, str(value))
        return False

    # --- changes a directive makes -------------------------------------------------------------

    def split(self, old: list[str], outer: list[str], inner: list[str], factors: list[int], at: object, verb: str) -> None:
        """Replace loops `old` by `outer` (steps times `factors`) then `inner`, at the first's place."""
        position = min(self.names.index(v) for v in old)
        by_name = {loop[0]: loop for loop in self.loops}
        new = [(o, by_name[v][1], by_name[v][2] * f) for v, o, f in zip(old, outer, factors)]
        new += [(i, by_name[v][1], by_name[v][2]) for v, i in zip(old, inner)]
        self.loops = [loop for loop in self.loops if loop[0] not in old]
        self.loops[position:position] = new
        new_names = outer + inner
        for v in old:
            self.gone[v] = (f"{verb} into {', '.join(new_names)}", at)
            if v in self.reductions:
                self.reductions |= {n for n in new_names if n.startswith(v) or len(old) == 1}
        for v, o, i in zip(old, outer, inner):
            self._move_marks(v, o, i)
            above = self.deps.pop(v, frozenset())
            for w, used in list(self.deps.items()):
                if v in used:  # a loop inside `v` now runs within its inner part
                    self.deps[w] = (used - {v}) | {i}
            self.deps[o] = above
            self.deps[i] = above | {o}

    def reorder(self, names: list[str]) -> None:
        index = {loop[0]: k for k, loop in enumerate(self.loops)}
        positions = sorted(index[v] for v in names)
        moved = [self.loops[index[name]] for name in names]
        for position, loop in zip(positions, moved):
            self.loops[position] = loop

    def bounds_outside(self) -> tuple[str, str] | None:
        """(loop, a loop its bounds use that now runs inside it), if the order has one."""
        if not self.deps:
            return None
        at = {loop[0]: k for k, loop in enumerate(self.loops)}
        if not any(loop in at and u in at and at[u] > at[loop] for loop, used in self.deps.items() for u in used):
            return None  # the common case, without sorting: which one comes first only matters for the message
        for loop, used in sorted(self.deps.items()):
            for u in sorted(used):
                if loop in at and u in at and at[u] > at[loop]:
                    return loop, u
        return None

    def check_order(self, what: str, at: object) -> None:
        """Each split loop inside the loops its bounds use (`split k by 4 -> ko, ki`: ki runs from ko
        to ko + 4), as lowering needs; `what` is the directive, for the message."""
        bad = self.bounds_outside()
        if bad is not None:
            loop, used = bad
            self.error(f"{what} would move '{loop}' outside '{used}', but the bounds of '{loop}' depend on '{used}'", at, loop)

    def mark(self, loop: str, kind: str, value: object, loc: str | None) -> None:
        self.marks[loop] = {**self.marks.get(loop, {}), kind: value}  # a new dict: copies share the old one
        self.locs[f"{kind}:{loop}"] = loc

    def _move_marks(self, old: str, outer: str, inner: str) -> None:
        """A split loop's marks go where the lowering puts them: `parallel` on the outer loop,
        `vectorize` and `unroll` (and `unroll_jam`) on the inner one."""
        marks = self.marks.pop(old, None)
        if not marks:
            return
        for kind, value in marks.items():
            target = outer if kind == "parallel" else inner
            self.marks[target] = {**self.marks.get(target, {}), kind: value}
            key = f"{kind}:{old}"
            if key in self.locs:
                self.locs[f"{kind}:{target}"] = self.locs[key]
