"""Naming raised generics that are tensorop's `reduce` and `elementwise`.

`raise-loop` produces fills and generics; the two named forms that exist
only at tensorop level (the design language writes them as index
statements) are recognised here from the generic's structure, exactly as
`irkit.passes.generalize` would expand them:

- `reduce(dims, kind)`: a fill with the combiner's identity, then a generic
  with one input whose body is `combine(out, in)` (`addf` or `maximumf`),
  every index a plain loop, the kept input dimensions stored in order;
- `elementwise(fn)`: a generic over all-parallel loops, every operand of one
  rank at the identity map, whose body is one op (`addf`, `subf`, `mulf`,
  `divf`, `maximumf`, `minimumf`, `negf`, `exp`, `sqrt`) of the inputs in
  order.

Matmul, conv2d, softmax and transpose are recognised at design level, where
the language has them (`irkit.raising.to_design`).
"""

from __future__ import annotations

import math

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Operation
from xdsl.ir.affine import AffineDimExpr

from irkit.dialects import tensorop as t

REDUCE = {"arith.addf": ("add", 0.0), "arith.maximumf": ("max", -math.inf)}
ELEMENTWISE = {"arith.addf": "add", "arith.subf": "sub", "arith.mulf": "mul", "arith.divf": "div",
               "arith.maximumf": "max", "arith.minimumf": "min", "arith.negf": "neg", "math.exp": "exp",
               "math.sqrt": "sqrt"}  # fmt: skip


def name_generics(kernel: func.FuncOp) -> None:
    """Replace recognisable fills + generics of `kernel` by `tensorop.reduce` / `tensorop.elementwise`."""
    ops = list(kernel.body.block.ops)
    for k, op in enumerate(ops):
        if not isinstance(op, t.GenericOp) or op.where is not None:  # named ops run their whole box
            continue
        named = _elementwise(op)
        fill = None
        if named is None:
            fill = _start_fill(ops, k)
            named = _reduce(op, fill) if fill is not None else None
        if named is None:
            continue
        named.location = op.location
        kernel.body.block.insert_op_before(named, op)
        for old in (fill, op):
            if old is not None:
                old.detach()
                old.erase()


def _body_op(op: t.GenericOp) -> Operation | None:
    """The one computing op of a body (constants aside), yielded."""
    block = op.body.block
    ops = [o for o in block.ops if not isinstance(o, t.YieldOp)]
    if len(ops) != 1 or block.last_op is None or block.last_op.operands[0] is not ops[0].results[0]:
        return None
    return ops[0]


def _plain_dims(amap) -> list[int] | None:
    dims = []
    for r in amap.results:
        if not isinstance(r, AffineDimExpr):
            return None
        dims.append(r.position)
    return dims


def _elementwise(op: t.GenericOp) -> t.ElementwiseOp | None:
    body = _body_op(op)
    if body is None or body.name not in ELEMENTWISE or t.REDUCTION in op.iterator_kinds:
        return None
    rank = len(op.iterator_kinds)
    if any(_plain_dims(m) != list(range(rank)) for m in op.maps):
        return None
    args = list(op.body.block.args[: len(op.ins)])
    if list(body.operands) != args:
        return None
    fn = ELEMENTWISE[body.name]
    if len(args) != t.ELEMENTWISE_FNS[fn]:
        return None
    return t.ElementwiseOp(
        list(op.ins), op.outs[0], list(op.sizes), stage=op.stage.data,
        loop_names=[n.data for n in op.loop_names.data], domain=op.domain,
        params={"fn": StringAttr(fn)}, schedule=op.schedule,
    )  # fmt: skip


def _start_fill(ops: list[Operation], k: int) -> t.FillOp | None:
    """The fill of the generic's output right before it (no other write of that buffer between)."""
    out = ops[k].outs[0]  # type: ignore[attr-defined]
    for prev in reversed(ops[:k]):
        if isinstance(prev, t.FillOp) and prev.out[0] is out:
            return prev
        if isinstance(prev, t.GenericOp | t.NamedTensorOp) and prev.outs[0] is out:
            return None
    return None


def _reduce(op: t.GenericOp, fill: t.FillOp) -> t.ReduceOp | None:
    body = _body_op(op)
    if body is None or body.name not in REDUCE or len(op.ins) != 1:
        return None
    kind, identity = REDUCE[body.name]
    value = fill.value
    if not isinstance(value, FloatAttr) or float(value.value.data) != identity:
        return None
    block = op.body.block
    if set(body.operands) != {block.args[0], block.args[1]} or len(body.operands) != 2:
        return None
    in_dims, out_dims = _plain_dims(op.maps[0]), _plain_dims(op.maps[1])
    if in_dims is None or out_dims is None or len(set(in_dims)) != len(in_dims):
        return None
    kinds = op.iterator_kinds
    reduced = [e for e, loop in enumerate(in_dims) if kinds[loop] == t.REDUCTION]
    kept = [loop for loop in in_dims if kinds[loop] == t.PARALLEL]
    if not reduced or kept != out_dims or len(in_dims) != len(kinds):
        return None
    if [in_dims[e] for e in reduced] != list(range(len(kept), len(kinds))):
        return None  # reduce's loops are the kept dimensions, then the reduced ones in order
    return t.ReduceOp(
        list(op.ins), op.outs[0], list(op.sizes), stage=op.stage.data,
        loop_names=[n.data for n in op.loop_names.data], domain=op.domain,
        params={"dims": ArrayAttr([IntegerAttr(d, i64) for d in reduced]), "kind": StringAttr(kind)},
        schedule=op.schedule,
    )  # fmt: skip
