"""The `loopstats` dialect: a static summary of the loop nests of one kernel.

    loopstats.summary @gemm nests 2 loops 27 max_depth 7 loads 44 stores 38

One `loopstats.summary` per kernel, at the start of the module, written by
the `loopstats-annotate` pass.  `kernel` names the kernel's `func.func`;
`nests` counts the loop nests (top-level `loop.for` ops of its body) that
were counted, `loops` every `loop.for` in them, `max_depth` the deepest
nesting among them (1: a single loop), `loads` and `stores` the `loop.load`
and `loop.store` ops in them (ops in the IR, not executions).  With
`min_depth N` only nests at least N deep were counted.
"""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, SymbolRefAttr, i64
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_prop_def, prop_def
from xdsl.utils.exceptions import VerifyException

COUNTS = ("nests", "loops", "max_depth", "loads", "stores")


@irdl_op_definition
class SummaryOp(IRDLOperation):
    """Loop statistics of one kernel (see the module docstring)."""

    name = "loopstats.summary"
    kernel = prop_def(SymbolRefAttr)
    nests = prop_def(IntegerAttr[I64])
    loops = prop_def(IntegerAttr[I64])
    max_depth = prop_def(IntegerAttr[I64])
    loads = prop_def(IntegerAttr[I64])
    stores = prop_def(IntegerAttr[I64])
    min_depth = opt_prop_def(IntegerAttr[I64])
    assembly_format = (
        "$kernel `nests` $nests `loops` $loops `max_depth` $max_depth `loads` $loads `stores` $stores"
        " (`min_depth` $min_depth^)? attr-dict"
    )

    def __init__(self, kernel: str, counts: dict[str, int], min_depth: int | None = None):
        props: dict[str, Attribute] = {"kernel": SymbolRefAttr(StringAttr(kernel))}
        props.update({name: IntegerAttr(counts[name], i64) for name in COUNTS})
        if min_depth is not None:
            props["min_depth"] = IntegerAttr(min_depth, i64)
        super().__init__(properties=props)

    def count(self, name: str) -> int:
        return getattr(self, name).value.data

    def verify_(self) -> None:
        c = {name: self.count(name) for name in COUNTS}
        for name, value in c.items():
            if value < 0:
                raise VerifyException(f"{name} must be non-negative, got {value}")
        if (c["nests"] == 0) != (c["max_depth"] == 0):
            raise VerifyException(
                f"max_depth is 0 exactly when there are no nests (nests {c['nests']}, max_depth {c['max_depth']})"
            )
        if c["loops"] < c["nests"] or c["loops"] < c["max_depth"]:
            raise VerifyException(
                f"loops ({c['loops']}) cannot be fewer than nests ({c['nests']}) or max_depth ({c['max_depth']})"
            )
        if self.min_depth is not None and self.min_depth.value.data < 1:
            raise VerifyException(f"min_depth must be at least 1, got {self.min_depth.value.data}")


LoopStats = Dialect("loopstats", [SummaryOp], [])
