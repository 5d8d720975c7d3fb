"""`pack B at ko`: copy the tile of B read inside loop ko into a contiguous buffer, once per iteration."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def, prop_def

from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register


@irdl_op_definition
class PackOp(IRDLOperation):
    """`pack B at ko`: copy the tile of B read inside loop ko into a contiguous buffer."""

    name = "design.pack"
    tensor = prop_def(StringAttr)
    loop = prop_def(StringAttr)
    traits = lazy_traits_def(d.in_schedule)
    assembly_format = "$tensor `at` $loop attr-dict"

    def __init__(self, tensor: str, loop: str):
        super().__init__(properties={"tensor": StringAttr(tensor), "loop": StringAttr(loop)})


def build(b, ch) -> PackOp:
    return PackOp(str(ch[0]), str(ch[1]))


def text(e: Entry) -> str:
    return f"pack {e['tensor']} at {e['loop']}"


def from_entry(e: Entry) -> PackOp:
    return PackOp(e["tensor"], e["loop"])


def replay(nest, e: Entry, at: object) -> None:
    tensor = e["tensor"]
    nest.packs[tensor] = e["loop"]
    nest.locs[f"pack:{tensor}"] = e.get("loc")
    nest.require(e["loop"], at)
    if tensor not in nest.reads:
        nest.error(
            f"pack '{tensor}': stage '{nest.stage}' does not read '{tensor}'"
            + (f"; it reads: {', '.join(sorted(set(nest.reads)))}" if nest.reads else ""),
            at,
            tensor,
        )


def space(s: Space) -> list[Entry]:
    return [{"kind": "pack", "tensor": t, "loop": loop} for t in dict.fromkeys(s.reads) for loop in s.loops[:-1]]


RECORD = register(
    Directive(
        kind="pack",
        op=PackOp,
        summary="copy the tile of a tensor read inside a loop into a contiguous buffer",
        build=build,
        text=text,
        from_entry=from_entry,
        replay=replay,
        space=space,
        transform="irkit.passes.schedule.pack",
        pass_class="SchedulePackPass",
    )
)
