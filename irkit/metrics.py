"""Work and compulsory traffic of a document, for reporting throughput.

`irkit run --bench` prints GFLOP/s for compute-heavy kernels and GB/s for
memory-bound ones.  The counts come from the design IR at given sizes:
floating-point (or integer) operations per statement instance times the
size of its iteration domain, and the bytes of every input and output
tensor read or written once (temporaries excluded: they are the schedule's
business, not the problem's).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import ModuleOp

from irkit.affine_text import Const, Expr, evaluate, parse_affine
from irkit.dialects import design as d
from irkit.named_ops import get_named_op

ITEMSIZE = {"f32": 4, "f64": 8, "i32": 4}
_NOT_WORK = ("design.read", "design.value", "design.yield", "arith.constant")


@dataclass(frozen=True)
class Work:
    flops: int  # arithmetic operations (an FMA counts two)
    bytes: int  # compulsory traffic: inputs read once, outputs written once

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else float("inf")

    def rate(self, seconds: float) -> tuple[float, str]:
        """(value, unit): GFLOP/s when the kernel does at least one op per byte, else GB/s."""
        if self.flops and self.intensity >= 1.0:
            return self.flops / seconds / 1e9, "GFLOP/s"
        return self.bytes / seconds / 1e9, "GB/s"


def named_domain(op: d.NamedOp, shapes: dict[str, list[int]]) -> list[int]:
    """Loop extents of a named operation at concrete operand shapes."""
    spec = get_named_op(op.op_name.data)
    operand_shapes: list[list[Expr]] = [[Const(n) for n in shapes[a]] for a in op.operand_names]
    return [evaluate(e, {}) for e in spec.domain(operand_shapes, dict(op.params.data))]


def _named_flops(op: d.NamedOp, shapes: dict[str, list[int]]) -> int:
    return get_named_op(op.op_name.data).flops_per_point * prod(named_domain(op, shapes))


def work(module: ModuleOp, sizes: dict[str, int]) -> Work:
    """Operations and compulsory bytes of the (single) design in `module` at `sizes` (a `repeat`'s
    operations once per step; its tensors' compulsory bytes once: each is read and written once)."""
    design = next(op for op in module.body.block.ops if isinstance(op, d.DesignOp))
    ops = list(design.body.block.ops)
    tensors = {op.sym_name.data: op for op in ops if isinstance(op, d.TensorOp)}
    shapes = {n: [evaluate(parse_affine(e), sizes) for e in t.shape_exprs] for n, t in tensors.items()}
    flops = 0
    for op in d.statements(design):
        steps = d.repeat_of(op)
        times = sizes[steps.count.data] if steps is not None else 1  # a repeat's statements run T times
        if isinstance(op, d.NamedOp):
            flops += times * _named_flops(op, shapes)
        elif isinstance(op, d.StmtOp):
            flops += times * _stmt_flops(op, shapes, sizes)
    # compulsory traffic: inputs read, outputs written, in-out tensors both
    passes = {"input": 1, "output": 1, "inout": 2}
    nbytes = sum(prod(shapes[n]) * ITEMSIZE[t.dtype.data] * passes.get(t.role.data, 0) for n, t in tensors.items())
    return Work(flops, nbytes)


def stmt_extents(op: d.StmtOp, shapes: dict[str, list[int]]) -> dict[str, int]:
    """Each loop variable's extent: left indices first, then reduction indices."""
    extents: dict[str, int] = dict(zip(op.index_exprs, shapes[op.target.data]))
    for read in op.body.walk():
        if isinstance(read, d.ReadOp):
            for idx, extent in zip(read.index_exprs, shapes[read.tensor.data]):
                if idx.isidentifier():
                    extents.setdefault(idx, extent)
    return extents


def _stmt_flops(op: d.StmtOp, shapes: dict[str, list[int]], sizes: dict[str, int] | None = None) -> int:
    extents = stmt_extents(op, shapes)
    domain = domain_points(op, extents, sizes or {})
    per_point = sum(1 for o in op.body.block.ops if o.name not in _NOT_WORK) + (op.kind.data != "=")
    return domain * per_point


def domain_points(op: d.StmtOp, extents: dict[str, int], sizes: dict[str, int]) -> int:
    """The points of a statement's domain: its box, or the part of it its `where` keeps (a
    triangle is half a square).  Counted over the indices the constraints name, one row of the
    first of them at a time, the other indices multiplying."""
    import numpy as np

    from irkit.affine.where import holds, linear, normal_form

    box = prod(extents.values())
    if not op.where_texts:
        return box
    constraints = [normal_form(t) for t in op.where_texts]
    named = [v for v in extents if any(v in linear(c.expr)[0] for c in constraints)]
    free = prod(n for v, n in extents.items() if v not in named)
    env: dict[str, object] = dict(sizes)
    rest = named[1:]
    grid = {v: np.arange(extents[v]).reshape([-1 if k == i else 1 for k in range(len(rest))]) for i, v in enumerate(rest)}
    count = 0
    for first in range(extents[named[0]]) if named else []:
        env.update(grid, **{named[0]: first})
        inside = holds(constraints, env)
        count += int(np.broadcast_to(inside, [extents[v] for v in rest]).sum()) if rest else int(bool(inside))
    return count * free
