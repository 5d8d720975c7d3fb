"""The `affine-for-to-scf` pass: `affine.for` with operand and min/max bounds to `scf.for`.

xDSL 0.75's `lower-affine` and its interpreter take an `affine.for`'s
bounds to be constants: they evaluate the bound maps with no operands and
assert a single result.  Every loop irkit exports has operands (the sizes,
the outer loop variables of a tile) and tiled loops have `min` bounds, so
this pass fills that gap the way MLIR's `lower-affine` does: each bound
result becomes an `affine.apply` of its map result over the bound operands,
several results fold with `arith.maxsi` (lower) or `arith.minsi` (upper),
and the loop becomes an `scf.for` with the same body and attributes.  Run
`lower-affine` after it for the loads, stores and applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, scf
from xdsl.dialects.builtin import AffineMapAttr, IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


def bound_ops(amap: AffineMap, operands: Sequence[SSAValue], lower: bool) -> tuple[list[Operation], SSAValue]:
    """Ops computing a loop bound: the max (lower) or min (upper) of the map's results."""
    ops: list[Operation] = []
    value: SSAValue | None = None
    for result in amap.results:
        one = AffineMap(amap.num_dims, amap.num_symbols, (result,))
        apply = affine.ApplyOp(list(operands), AffineMapAttr(one))
        ops.append(apply)
        if value is None:
            value = apply.result
            continue
        combine = arith.MaxSIOp(value, apply.result) if lower else arith.MinSIOp(value, apply.result)
        ops.append(combine)
        value = combine.result
    assert value is not None, "an affine.for bound map has at least one result (the verifier says so)"
    return ops, value


class AffineForToScf(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ForOp, rewriter: PatternRewriter) -> None:
        if op.inits:
            return  # loop-carried values: not produced by irkit, left for lower-affine to refuse
        low_ops, low = bound_ops(op.lowerBoundMap.data, op.lowerBoundOperands, lower=True)
        up_ops, up = bound_ops(op.upperBoundMap.data, op.upperBoundOperands, lower=False)
        step = arith.ConstantOp(IntegerAttr(op.step.value.data, IndexType()))
        rewriter.insert([*low_ops, *up_ops, step])
        body = rewriter.move_region_contents_to_new_regions(op.body)
        terminator = body.block.last_op
        if isinstance(terminator, affine.YieldOp):
            rewriter.replace(terminator, scf.YieldOp())
        else:
            body.block.add_op(scf.YieldOp())
        new = scf.ForOp(low, up, step.result, [], body)
        new.attributes.update(op.attributes)
        rewriter.replace(op, new)


@dataclass(frozen=True)
class AffineForToScfPass(ModulePass):
    """`affine.for` -> `scf.for` with bounds computed by `affine.apply` and `arith.maxsi`/`minsi`,
    so xDSL's `lower-affine` and interpreter can take loops whose bounds have operands."""

    name = "affine-for-to-scf"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(AffineForToScf()).rewrite_module(op)
