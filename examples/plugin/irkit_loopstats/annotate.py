"""The `loopstats-annotate` pass: one `loopstats.summary` per loop-level kernel.

Written against irkit's extension API (`irkit.extend`): the pass is an
`IrkitPass` (a frozen dataclass whose fields are its pipeline options,
declared with `option(default, help=...)`), and bad input is reported with
`self.fail(message, op)`, a located error irkit-opt prints on one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from irkit.dialects.loop import ForOp, LoadOp, StoreOp
from irkit.extend import IrkitPass, option
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.rewriter import InsertPoint, Rewriter

from irkit_loopstats.dialect import COUNTS, SummaryOp

# Ops that mean the module has not been lowered to loops yet.
_NOT_LOOP_LEVEL = ("design.", "tensorop.")


def child_loops(op: Operation) -> Iterator[ForOp]:
    """The loops directly inside `op`: in its regions, not inside another loop there."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                if isinstance(inner, ForOp):
                    yield inner
                else:
                    yield from child_loops(inner)


def nest_depth(loop: ForOp) -> int:
    """Loops on the deepest path of the nest rooted at `loop` (1 for a single loop)."""
    return 1 + max((nest_depth(inner) for inner in child_loops(loop)), default=0)


def kernel_counts(body: Block, min_depth: int = 1) -> dict[str, int]:
    """The counts of `loopstats.summary` for a kernel body, over the nests at least `min_depth` deep."""
    counts = dict.fromkeys(COUNTS, 0)
    for nest in body.ops:
        if not isinstance(nest, ForOp):
            continue
        depth = nest_depth(nest)
        if depth < min_depth:
            continue
        counts["nests"] += 1
        counts["max_depth"] = max(counts["max_depth"], depth)
        for op in nest.walk():
            if isinstance(op, ForOp):
                counts["loops"] += 1
            elif isinstance(op, LoadOp):
                counts["loads"] += 1
            elif isinstance(op, StoreOp):
                counts["stores"] += 1
    return counts


@dataclass(frozen=True)
class LoopStatsAnnotatePass(IrkitPass):
    """Summarise each kernel's loop nests (loops, deepest nesting, loads, stores) in a `loopstats.summary` op.

    The summaries go at the start of the module, one per kernel, in kernel order.

    Runs on loop-level IR (after `lower-tensorop`, and after `apply-schedule`
    to see the scheduled nests).  The counts are of ops in the IR, not of
    executions: an unrolled body counts every copy, a loop of a million
    iterations counts once.  Summaries a previous run inserted for the same
    kernels are replaced.  The summaries are for reading: irkit's backends
    expect kernels only, so run this pass last.
    """

    name = "loopstats-annotate"
    min_depth: int = option(1, help="count only the loop nests at least this deep (1: every nest)")
    kernel: str = option("", help="annotate only the kernel function of this name; empty: every kernel")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.min_depth < 1:
            raise self.fail(f"option min-depth must be at least 1, got {self.min_depth}", op)
        block = op.body.block
        for top in block.ops:
            if top.name.startswith(_NOT_LOOP_LEVEL):
                raise self.fail(
                    f"'{top.name}' is not loop-level IR; lower it first (-p lower-design,lower-tensorop)",
                    top,
                )
        kernels = [k for k in block.ops if isinstance(k, func.FuncOp) and not k.is_declaration]
        if not kernels:
            raise self.fail("the module holds no kernel function: nothing to annotate", op)
        for kernel in kernels:
            for inner in kernel.body.walk():
                if inner.name.startswith(_NOT_LOOP_LEVEL):
                    raise self.fail(
                        f"kernel @{kernel.sym_name.data} is not loop-level IR yet ('{inner.name}'); "
                        "run lower-tensorop first",
                        inner,
                    )
        if self.kernel:
            kernels = [k for k in kernels if k.sym_name.data == self.kernel]
            if not kernels:
                names = ", ".join(k.sym_name.data for k in block.ops if isinstance(k, func.FuncOp))
                raise self.fail(f"no kernel named '{self.kernel}' (the module has: {names})", op)

        names = {k.sym_name.data for k in kernels}
        for old in [s for s in block.ops if isinstance(s, SummaryOp)]:
            if old.kernel.root_reference.data in names:
                Rewriter.erase_op(old)
        summaries = [
            SummaryOp(
                k.sym_name.data,
                kernel_counts(k.body.block, self.min_depth),
                self.min_depth if self.min_depth > 1 else None,
            )
            for k in kernels
        ]
        Rewriter.insert_op(summaries, InsertPoint.at_start(block))
