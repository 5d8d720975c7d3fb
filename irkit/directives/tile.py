"""`tile i, j by 64, 256 -> io, jo, ii, ji`: split several loops at once, outer loops first."""

from __future__ import annotations

from itertools import product

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, StringAttr, i64
from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def, prop_def
from xdsl.utils.exceptions import VerifyException

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, powers_of_two, register


@irdl_op_definition
class TileOp(IRDLOperation):
    """`tile i, j by 64, 256 -> io, jo, ii, ji` (outer loops, then inner)."""

    name = "design.tile"
    loops = prop_def(ArrayAttr[StringAttr])
    factors = prop_def(DenseArrayBase.constr(i64))
    outer = prop_def(ArrayAttr[StringAttr])
    inner = prop_def(ArrayAttr[StringAttr])
    traits = lazy_traits_def(d.in_schedule)
    assembly_format = "$loops `by` $factors `->` $outer $inner attr-dict"

    def __init__(self, loops: list[str], factors: list[int], outer: list[str], inner: list[str]):
        super().__init__(
            properties={
                "loops": d.str_array(loops),
                "factors": d.int_array(factors),
                "outer": d.str_array(outer),
                "inner": d.str_array(inner),
            }
        )

    def verify_(self) -> None:
        n = len(self.loops.data)
        factors = d.int_list(self.factors)
        if not (len(factors) == len(self.outer.data) == len(self.inner.data) == n):
            raise VerifyException(
                f"tile of {n} loops needs {n} factors and {n} outer and {n} inner names, got "
                f"{len(factors)}, {len(self.outer.data)} and {len(self.inner.data)}"
            )
        for f in factors:
            d.check_positive("tile factor", f)


FACTORS = (8, 512)  # powers of two offered, when smaller than the loop


def build(b, ch) -> TileOp:
    loops = [str(t) for t in ch[0].children]
    factors = [b.int_(t) for t in ch[1].children]
    if ch[2] is None:
        outer, inner = [f"{v}o" for v in loops], [f"{v}i" for v in loops]
    else:
        names = [str(t) for t in ch[2].children]
        if len(names) != 2 * len(loops):
            b.report(
                f"tile of {len(loops)} loop{'s' if len(loops) != 1 else ''} names {len(names)} new loops; "
                f"give {2 * len(loops)}: the {len(loops)} outer loops, then the {len(loops)} inner ones",
                ch[2],
            )
        half = len(names) // 2
        outer, inner = names[:half], names[half:]
    return TileOp(loops, factors, outer, inner)


def text(e: Entry) -> str:
    factors = ", ".join(str(f) for f in e["factors"])
    return f"tile {', '.join(e['loops'])} by {factors} -> {', '.join(e['outer'] + e['inner'])}"


def from_entry(e: Entry) -> TileOp:
    return TileOp(list(e["loops"]), list(e["factors"]), list(e["outer"]), list(e["inner"]))


def replay(nest, e: Entry, at: object) -> None:
    loops, factors, outer, inner = list(e["loops"]), list(e["factors"]), list(e["outer"]), list(e["inner"])
    if not nest.quiet and not (len(factors) == len(outer) == len(inner) == len(loops)):
        nest.error(
            f"tile of {len(loops)} loops needs {len(loops)} factors and {2 * len(loops)} new loop names, got "
            f"{len(factors)} and {len(outer) + len(inner)}",
            at,
        )
        return
    if not all(nest.positive("tile factor", f, at) for f in factors):
        return
    if len(set(loops)) != len(loops):
        nest.error(f"tile names a loop twice: {', '.join(loops)}", at)
        return
    if all(nest.require(v, at) for v in loops) and nest.fresh(outer + inner, at):
        roots = [nest.key(v)[0] for v in loops]
        nest.split(loops, outer, inner, factors, at, "tiled")
        for v, o, i in zip(loops, outer, inner):
            if v in nest.reductions:
                nest.reductions |= {o, i}
        for root in roots:
            nest.locs[f"split:{root}"] = e.get("loc")


def space(s: Space) -> list[Entry]:
    """Two adjacent loops tiled by powers of two smaller than their extents."""
    out = []
    for a, b in zip(s.loops, s.loops[1:]):
        fa = powers_of_two(FACTORS[0], min(FACTORS[1], s.extents.get(a, 1) - 1))
        fb = powers_of_two(FACTORS[0], min(FACTORS[1], s.extents.get(b, 1) - 1))
        outer = (s.fresh(f"{a}o"), s.fresh(f"{b}o"))
        inner = (s.fresh(f"{a}i"), s.fresh(f"{b}i"))
        for x, y in product(fa, fb):
            out.append({"kind": "tile", "loops": [a, b], "factors": [x, y], "outer": list(outer), "inner": list(inner)})
    return out


RECORD = register(
    Directive(
        kind="tile",
        op=TileOp,
        summary="split several loops at once and put their outer loops outside the inner ones",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.tile",
        pass_class="ScheduleTilePass",
    )
)
