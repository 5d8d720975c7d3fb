"""The `export-affine` pass: irkit's `loop` dialect as upstream `affine` / `memref`.

After it, a kernel is written only in dialects every MLIR-style tool knows
(`func`, `affine`, `memref`, `arith`, `math`), so xDSL's own passes and its
interpreter run on irkit's loops (docs/interop.md):

- `loop.for` -> `affine.for`, same bound maps and operands (a multi-result
  lower bound is `max`, an upper one `min`: the semantics are the same) and
  step; the schedule facts (`loop_name`, `stage`, `parallel`, `vector`,
  `unroll`, `origin`) become discardable `irkit.*` attributes, so nothing the
  document said is lost;
- `loop.load` / `loop.store` -> `affine.load` / `affine.store`, same maps;
- `loop.alloc` -> `memref.alloc`, each dynamic extent an `affine.apply` of the
  shape's result over the size operands; `loop.free` -> `memref.dealloc`;
- `loop.local` -> `memref.alloca` (a fresh buffer each time its block runs).

Scalar ops are already `arith` / `math`; the kernel ABI's argument and
function attributes stay as they are.  The export is one way: irkit's own
passes and backends read `loop`, not `affine`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, AffineMapAttr, IntegerAttr, MemRefType, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, Operation
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from irkit.dialects import loop as lp

# Schedule facts of loop.for (`loop.FACTS`), exported as `irkit.<fact>` attributes of affine.for.
FACT_PREFIX = "irkit."


def exported_facts(op: lp.ForOp) -> dict[str, Attribute]:
    """The loop's schedule facts and discardable attributes, as affine.for attributes."""
    facts: dict[str, Attribute] = {FACT_PREFIX + k: v for k, v in op.properties.items() if k in lp.FACTS}
    facts.update(op.attributes)
    return facts


class ExportFor(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lp.ForOp, rewriter: PatternRewriter) -> None:
        body = rewriter.move_region_contents_to_new_regions(op.body)
        body.block.add_op(affine.YieldOp.get())
        new = affine.ForOp.from_region(
            list(op.lower_operands),
            list(op.upper_operands),
            [],
            [],
            AffineMapAttr(op.lower.data),
            AffineMapAttr(op.upper.data),
            body,
            op.step_value,
        )
        new.attributes.update(exported_facts(op))
        rewriter.replace(op, new)


class ExportLoad(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lp.LoadOp, rewriter: PatternRewriter) -> None:
        new = affine.LoadOp(op.memref, list(op.indices), AffineMapAttr(op.map.data), op.result.type)
        rewriter.replace(op, new)


class ExportStore(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lp.StoreOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, affine.StoreOp(op.value, op.memref, list(op.indices), AffineMapAttr(op.map.data)))


def dynamic_extents(op: lp.AllocOp) -> list[Operation]:
    """One `affine.apply` per dynamic extent of the buffer: the shape map's result over the sizes."""
    shape: AffineMap = op.shape.data
    memref_type = op.result.type
    assert isinstance(memref_type, MemRefType)
    applies: list[Operation] = []
    for extent, result in zip(memref_type.get_shape(), shape.results):
        if extent != DYNAMIC_INDEX:
            continue
        one = AffineMap(0, shape.num_symbols, (result,))
        applies.append(affine.ApplyOp(list(op.sizes), AffineMapAttr(one)))
    return applies


class ExportAlloc(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lp.AllocOp, rewriter: PatternRewriter) -> None:
        applies = dynamic_extents(op)
        align = IntegerAttr(op.align.value.data, i64) if op.align is not None else None
        new = memref.AllocOp([a.results[0] for a in applies], [], op.result.type, align)
        new.attributes[FACT_PREFIX + "name"] = StringAttr(op.tensor_name.data)
        rewriter.insert(applies)
        rewriter.replace(op, new)


class ExportFree(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lp.FreeOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, memref.DeallocOp.get(op.memref))


class ExportLocal(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lp.LocalOp, rewriter: PatternRewriter) -> None:
        memref_type = op.result.type
        assert isinstance(memref_type, MemRefType)
        new = memref.AllocaOp.get(memref_type.element_type, shape=memref_type.get_shape())
        new.attributes[FACT_PREFIX + "name"] = StringAttr(op.tensor_name.data)
        rewriter.replace(op, new)


def export_affine(module: ModuleOp) -> None:
    """Rewrite every `loop` op of the module into `affine` / `memref` (in place)."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier(
            [ExportFor(), ExportLoad(), ExportStore(), ExportAlloc(), ExportFree(), ExportLocal()]
        ),
        apply_recursively=False,
    ).rewrite_module(module)


@dataclass(frozen=True)
class ExportAffinePass(ModulePass):
    """Loop-level kernels in upstream `affine` / `memref` / `arith` / `math`; the schedule facts
    ride along as `irkit.*` attributes.  Run after `apply-schedule` (or on loop-level MLIR)."""

    name = "export-affine"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        export_affine(op)

