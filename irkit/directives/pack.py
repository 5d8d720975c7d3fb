"""`pack B at ko`: copy the tile of B read inside loop ko into a contiguous buffer, once per iteration.

`pack A[j, k] at jo` packs one read of a tensor the stage reads more than once (`A[i, k] * A[j, k]`):
the other reads stay reads of `A`."""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, lazy_traits_def, opt_prop_def, prop_def

from irkit.affine_text import format_affine
from irkit.dialects import design as d
from irkit.directives.record import Directive, Entry, Space, register


@irdl_op_definition
class PackOp(IRDLOperation):
    """`pack B at ko`: copy the tile of B read inside loop ko into a contiguous buffer."""

    name = "design.pack"
    tensor = prop_def(StringAttr)
    loop = prop_def(StringAttr)
    indices = opt_prop_def(ArrayAttr[StringAttr])  # which read, when the stage reads the tensor more than once
    traits = lazy_traits_def(d.in_schedule)
    assembly_format = "$tensor (`read` $indices^)? `at` $loop attr-dict"

    def __init__(self, tensor: str, loop: str, indices: list[str] | None = None):
        props = {"tensor": StringAttr(tensor), "loop": StringAttr(loop)}
        if indices:
            props["indices"] = ArrayAttr([StringAttr(i) for i in indices])
        super().__init__(properties=props)


def build(b, ch) -> PackOp:
    tensor, read, loop = ch
    indices = [format_affine(b.affine(x)) for x in read.children] if read is not None else None
    return PackOp(str(tensor), str(loop), indices)


def read_text(e: Entry) -> str:
    """`A[j, k]` for a pack of one read, `A` for a pack of every read of the tensor."""
    indices = e.get("indices")
    return f"{e['tensor']}[{', '.join(indices)}]" if indices else str(e["tensor"])


def text(e: Entry) -> str:
    return f"pack {read_text(e)} at {e['loop']}"


def from_entry(e: Entry) -> PackOp:
    return PackOp(e["tensor"], e["loop"], e.get("indices"))


def replay(nest, e: Entry, at: object) -> None:
    tensor = e["tensor"]
    key = read_text(e)  # two reads of one tensor may each have a pack
    nest.packs[key] = e["loop"]
    nest.locs[f"pack:{key}"] = e.get("loc")
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
