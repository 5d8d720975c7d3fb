"""`vectorize ji by 16`: SIMD over the innermost loop, `width` lanes (the hardware's by default)."""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def, opt_prop_def, prop_def

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register


@irdl_op_definition
class VectorizeOp(IRDLOperation):
    """`vectorize ji by 16`: SIMD over the innermost loop, `width` lanes."""

    name = "design.vectorize"
    loop = prop_def(StringAttr)
    width = opt_prop_def(IntegerAttr[I64])
    traits = lazy_traits_def(d.in_schedule)
    assembly_format = "$loop (`by` $width^)? attr-dict"

    def __init__(self, loop: str, width: int | None):
        props: dict[str, Attribute] = {"loop": StringAttr(loop)}
        if width is not None:
            props["width"] = IntegerAttr(width, i64)
        super().__init__(properties=props)

    def verify_(self) -> None:
        if self.width is not None:
            d.check_positive("vector width", self.width.value.data)


def build(b, ch) -> VectorizeOp:
    return VectorizeOp(str(ch[0]), None if ch[1] is None else b.int_(ch[1]))


def text(e: Entry) -> str:
    width = "" if e.get("width") is None else f" by {e['width']}"
    return f"vectorize {e['loop']}{width}"


def from_entry(e: Entry) -> VectorizeOp:
    return VectorizeOp(e["loop"], e.get("width"))


def replay(nest, e: Entry, at: object) -> None:
    width = e.get("width")
    nest.mark(e["loop"], "vectorize", width if width is not None else True, e.get("loc"))
    if width is not None and not nest.positive("vector width", width, at):
        return
    if nest.require(e["loop"], at):
        nest.vectorized.append((e["loop"], at))


def space(s: Space) -> list[Entry]:
    """The innermost loop, at the hardware's width, at two and four times it, and at a half and a
    quarter of it (a short row of a register block: 8 pixels on 16-lane hardware)."""
    if not s.loops:
        return []
    loop = s.loops[-1]
    extent = s.extents.get(loop, 1)
    widths = [w for w in (s.lanes, 2 * s.lanes, 4 * s.lanes, s.lanes // 2, s.lanes // 4) if 2 <= w <= extent]
    return [{"kind": "vectorize", "loop": loop, "width": w} for w in widths]


def from_loop(facts) -> Entry | None:
    """A loop marked `vector = W` is `vectorize LOOP by W` (raising)."""
    return {"kind": "vectorize", "loop": facts.name, "width": facts.vector} if facts.vector else None


RECORD = register(
    Directive(
        kind="vectorize",
        op=VectorizeOp,
        summary="compute the innermost loop with SIMD instructions",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.vectorize",
        pass_class="ScheduleVectorizePass",
        from_loop=from_loop,
    )
)
