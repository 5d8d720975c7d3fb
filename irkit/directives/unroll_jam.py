"""`unroll_jam ii by 4`: register blocking, an outer loop unrolled and jammed into the loops inside it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from xdsl.irdl import irdl_op_definition

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register


@irdl_op_definition
class UnrollJamOp(d.LoopFactorDirective):
    """`unroll_jam ii by 4`: register blocking of an outer loop into the loops inside it."""

    name = "design.unroll_jam"
    WHAT: ClassVar[str] = "unroll_jam factor"


def build(b, ch) -> UnrollJamOp:
    return UnrollJamOp(str(ch[0]), b.int_(ch[1]))


def text(e: Entry) -> str:
    return f"unroll_jam {e['loop']} by {e['factor']}"


def from_entry(e: Entry) -> UnrollJamOp:
    return UnrollJamOp(e["loop"], e["factor"])


def replay(nest, e: Entry, at: object) -> None:
    """Also refused here, as lowering refuses them: a loop inside it split from the same loop (its
    bounds depend on the jammed loop), and loops inside it that an earlier unroll_jam already
    turned into copies and remainder loops (the nest below is no longer one chain of loops)."""
    loop = e["loop"]
    earlier = [name for name, marks in nest.marks.items() if "unroll_jam" in marks and name != loop]
    nest.mark(loop, "unroll_jam", e["factor"], e.get("loc"))
    if not (nest.positive("unroll_jam factor", e["factor"], at) and nest.require(loop, at)):
        return
    if nest.names[-1] == loop:
        nest.error(
            f"unroll_jam '{loop}': '{loop}' is the innermost loop, so there is nothing to jam it into; use unroll",
            at,
            loop,
        )
        return
    position = nest.names.index(loop)
    root = nest.key(loop)[0]
    inside = nest.loops[position + 1 :]
    for name, inner_root, _ in inside:
        if inner_root == root:
            nest.error(
                f"unroll_jam '{loop}': the bounds of '{name}' depend on '{loop}' (both come from loop '{root}'), "
                "so the copies cannot share its iterations; jam the inner one",
                at,
                loop,
            )
            return
    for name in earlier:
        if name in (n for n, _, _ in inside):
            nest.error(
                f"unroll_jam '{loop}': 'unroll_jam {name}' already made copies and remainder loops inside it, so "
                f"the loops below '{loop}' are no longer one nest to jam into; jam one loop of the stage",
                at,
                loop,
            )
            return


def space(s: Space) -> list[Entry]:
    """Outer loops, by factors that leave half the vector registers for the jammed copies' accumulators."""
    limit = max(2, s.registers // 2)
    return [
        {"kind": "unroll_jam", "loop": loop, "factor": f}
        for k, loop in enumerate(s.loops[:-1])
        if not _same_root_inside(s, k) and not bounds_inside(list(s.loops), k, s.outside, s.roots)
        for f in range(2, limit + 1)
        if f <= s.extents.get(loop, 1)
    ]


def _same_root_inside(s: Space, k: int) -> bool:
    """Is a loop inside the k-th split from the same loop (its bounds depend on it: `replay` refuses)?"""
    root = s.roots.get(s.loops[k])
    return root is not None and any(s.roots.get(inner) == root for inner in s.loops[k + 1 :])


def bounds_inside(loops: list[str], k: int, deps: Mapping[str, Iterable[str]], roots: Mapping[str, str]) -> bool:
    """Does a loop inside the k-th of `loops`, of another root, have bounds that use it (a triangle's
    `j` inside `i`), directly or through the loops its bounds use (`deps`)?  The jammed copies of
    the k-th would then hold loops of different trip counts (the pass refuses them)."""
    loop = loops[k]
    for inner in loops[k + 1 :]:
        seen: set[str] = set()
        todo = list(deps.get(inner, ()))
        while todo:
            used = todo.pop()
            if used not in seen:
                seen.add(used)
                todo.extend(deps.get(used, ()))
        if loop in seen and roots.get(inner, inner) != roots.get(loop, loop):
            return True
    return False


RECORD = register(
    Directive(
        kind="unroll_jam",
        op=UnrollJamOp,
        summary="unroll an outer loop and jam the copies into the loops inside it",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.unroll_jam",
        pass_class="ScheduleUnrollJamPass",
    )
)
