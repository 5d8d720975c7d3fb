"""Does each tile of a fused stage compute every element its consumer reads in that tile?

A stage fused into its consumer (`compute_at`) writes a tile-sized
temporary afresh for every tile of the consumer; the consumer then reads it
at indices relative to the tile.  The raised computation cannot see a
window that is one row too short -- the union of the tiles' windows still
covers the tensor -- but the consumer would read an element its tile never
computed.  This check runs the loops at sample sizes, following only the
indices of the temporaries (no values): each allocation starts an empty
set of computed elements, each store adds one, each load must find its
element there.  Loops that touch no such temporary are skipped, and the
tiles around an allocation are taken at their first and last values only
(the ones between repeat the first), so the check stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from irkit.affine.linear import Lin
from irkit.dialects import loop as lp
from irkit.raising.linear import map_results

BUDGET = 400_000  # accesses followed per sample size before the check gives up (it then passes)


@dataclass
class Uncomputed:
    """A read of a temporary's element its tile did not compute."""

    buffer: str
    index: tuple[int, ...]
    sizes: dict[str, int]
    load: lp.LoadOp


class _OutOfBudget(Exception):
    pass


def first_uncomputed(
    kernel: func.FuncOp, temps: set[SSAValue], sizes: dict[SSAValue, str], tiles: set[SSAValue] | None = None
) -> Uncomputed | None:
    """The first read of an element no store of its tile wrote, at sample sizes; None if none.
    `tiles`: variables of the loops that pick a tile (the temporaries' origins); like the loops
    around an allocation, they are taken at their first and last values only."""
    if not temps:
        return None
    touching = _touching(kernel, temps)
    steps = [op.step_value for op in kernel.walk() if isinstance(op, lp.ForOp)]
    n = max(steps, default=1) + 7
    for value in (n, 5):
        env: dict[SSAValue, int] = {s: value for s in sizes}
        runner = _Runner(temps, touching, tiles or set())
        try:
            found = runner.block(kernel.body.block, env, set())
        except _OutOfBudget:
            continue
        if found is not None:
            buf, index, load = found
            name = buf.owner.tensor_name.data if isinstance(buf.owner, lp.AllocOp) else "?"  # type: ignore[union-attr]
            return Uncomputed(name, index, {sizes[s]: value for s in sizes}, load)
    return None


def _touching(kernel: func.FuncOp, temps: set[SSAValue]) -> set[Operation]:
    """Loops with an access to one of `temps` inside."""
    out: set[Operation] = set()
    for op in kernel.walk():
        if isinstance(op, lp.LoadOp | lp.StoreOp) and op.memref in temps:
            parent = op.parent_op()
            while isinstance(parent, lp.ForOp) and parent not in out:
                out.add(parent)
                parent = parent.parent_op()
    return out


class _Runner:
    def __init__(self, temps: set[SSAValue], touching: set[Operation], tiles: set[SSAValue]):
        self.temps, self.touching, self.tiles = temps, touching, tiles
        self.computed: dict[SSAValue, set[tuple[int, ...]]] = {}
        self.steps = 0
        self.maps: dict[tuple[Operation, str], list[Lin]] = {}

    def forms(self, op: Operation, amap, operands, which: str = "") -> list[Lin]:
        got = self.maps.get((op, which))
        if got is None:
            got = [x if x is not None else Lin() for x in map_results(amap, list(operands))]
            self.maps[(op, which)] = got
        return got

    def block(self, block: Block, env: dict, allocs_above: set) -> tuple | None:
        for op in block.ops:
            if isinstance(op, lp.AllocOp | lp.LocalOp) and op.results[0] in self.temps:
                self.computed[op.results[0]] = set()
            elif isinstance(op, lp.StoreOp) and op.memref in self.temps:
                self.tick()
                index = tuple(f.evaluate(env) for f in self.forms(op, op.map.data, op.indices))
                self.computed.setdefault(op.memref, set()).add(index)
            elif isinstance(op, lp.LoadOp) and op.memref in self.temps:
                self.tick()
                index = tuple(f.evaluate(env) for f in self.forms(op, op.map.data, op.indices))
                if index not in self.computed.get(op.memref, set()):
                    return op.memref, index, op
            elif isinstance(op, lp.ForOp) and op in self.touching:
                found = self.loop(op, env, allocs_above)
                if found is not None:
                    return found
        return None

    def loop(self, op: lp.ForOp, env: dict, allocs_above: set) -> tuple | None:
        values = list(self.range(op, env))
        holds_alloc = any(isinstance(o, lp.AllocOp) and o.results[0] in self.temps for o in op.body.block.ops)
        if (holds_alloc or op.induction_var in self.tiles) and len(
            values
        ) > 2:  # tiles repeat: the first and the last show every case
            values = [values[0], values[-1]]
        for v in values:
            found = self.block(op.body.block, {**env, op.induction_var: v}, allocs_above)
            if found is not None:
                return found
        return None

    def range(self, op: lp.ForOp, env: dict) -> Iterator[int]:
        lo = max(f.evaluate(env) for f in self.forms(op, op.lower.data, op.lower_operands, "lower"))
        hi = min(f.evaluate(env) for f in self.forms(op, op.upper.data, op.upper_operands, "upper"))
        return iter(range(lo, hi, op.step_value))

    def tick(self) -> None:
        self.steps += 1
        if self.steps > BUDGET:
            raise _OutOfBudget
