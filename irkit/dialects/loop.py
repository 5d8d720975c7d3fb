"""The `loop` dialect: how a kernel runs, as affine loop nests.

- `loop.for %i = LB(ops) to UB(ops) step S {facts} { body }`: the lower
  bound is the maximum of the results of the affine map LB applied to its
  operands, the upper bound (exclusive) the minimum of UB's results, so
  tails of tiled loops are `min(io + 64, M)`.  Operands are outer loop
  variables and kernel sizes, all as map dimensions.  Schedule facts are
  properties: the document's loop name and stage, `parallel`, `vector`
  width, `unroll` factor, and `origin` ("file:line:col" of the directive
  that made the loop).
- `loop.load` / `loop.store`: one element, at an affine map of index values.
- `loop.alloc` / `loop.free`: temporaries, shape a map over size operands.
- `loop.local`: a small buffer of static shape (`memref<6x16xf32>`), fresh
  and uninitialised each time the op runs, live until the end of its block
  and private to it (no free).  Register tiles of `unroll_jam`'s scalar
  replacement are locals; the C backend makes one a local array, or vector
  variables when every access is at constant indices or contiguous in a
  vector loop.
- Scalar math is `arith`/`math`.

Memory effects, as xDSL's traits say them (so its `dce`, `canonicalize` and
the C backend's dead-code elimination know what may go): `loop.load` reads
(unused, it may be removed), `loop.store` writes, `loop.alloc` and
`loop.local` allocate (an effect xDSL ties to no value, so an unused one
stays), `loop.free` frees.  `loop.for` declares none, so it
counts as having unknown effects and is never removed, even when its body
is empty (the C backend writes every loop the IR holds).

A kernel is a `func.func` (see `irkit.kernel_abi`) whose body holds these
ops.  Verifiers check map arity against operands and buffer rank, positive
steps, widths and factors, and that a parallel loop does not make two of
its iterations write the same element (every store outside a buffer
private to the iteration must depend on the loop variable, directly or
through the inner loop of a split, whose windows `[io, min(io + F, M))`
are disjoint for different `io`: `store_depends_on`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AffineMapAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineExpr,
    AffineMap,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    MemoryAllocEffect,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    NoTerminator,
)
from xdsl.utils.exceptions import VerifyException

from irkit.affine.linear import POSITIONS, no_div, rounded_div, try_lin_of

# Properties of loop.for that print in its attribute dictionary (the schedule facts).
FACTS = ("loop_name", "stage", "parallel", "vector", "unroll", "origin")


def _check_map(what: str, amap: AffineMap, n_operands: int) -> None:
    if amap.num_symbols != 0 or amap.num_dims != n_operands:
        raise VerifyException(f"{what} map {amap} must have one dimension per operand ({n_operands}) and no symbols")
    if not amap.results:
        raise VerifyException(f"{what} map {amap} has no results")


@irdl_op_definition
class ForOp(IRDLOperation):
    name = "loop.for"
    lower_operands = var_operand_def(IndexType)
    upper_operands = var_operand_def(IndexType)
    lower = prop_def(AffineMapAttr)
    upper = prop_def(AffineMapAttr)
    step = prop_def(IntegerAttr)
    loop_name = prop_def(StringAttr)
    stage = opt_prop_def(StringAttr)
    parallel = opt_prop_def(UnitAttr)
    vector = opt_prop_def(IntegerAttr)
    unroll = opt_prop_def(IntegerAttr)
    origin = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        lower: AffineMap,
        lower_operands: Sequence[SSAValue],
        upper: AffineMap,
        upper_operands: Sequence[SSAValue],
        step: int,
        loop_name: str,
        body: Region | None = None,
        *,
        stage: str | None = None,
        parallel: bool = False,
        vector: int | None = None,
        unroll: int | None = None,
        origin: str | None = None,
    ):
        props: dict[str, Attribute] = {
            "lower": AffineMapAttr(lower),
            "upper": AffineMapAttr(upper),
            "step": IntegerAttr(step, i64),
            "loop_name": StringAttr(loop_name),
        }
        if stage is not None:
            props["stage"] = StringAttr(stage)
        if parallel:
            props["parallel"] = UnitAttr()
        if vector is not None:
            props["vector"] = IntegerAttr(vector, i64)
        if unroll is not None:
            props["unroll"] = IntegerAttr(unroll, i64)
        if origin is not None:
            props["origin"] = StringAttr(origin)
        if body is None:
            body = Region(Block(arg_types=[IndexType()]))
        super().__init__(
            operands=[list(lower_operands), list(upper_operands)],
            properties=props,
            regions=[body],
        )

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    @property
    def step_value(self) -> int:
        return self.step.value.data

    def verify_(self) -> None:
        _check_map("lower bound", self.lower.data, len(self.lower_operands))
        _check_map("upper bound", self.upper.data, len(self.upper_operands))
        if self.step_value <= 0:
            raise VerifyException(f"loop '{self.loop_name.data}': step must be positive, got {self.step_value}")
        for fact in ("vector", "unroll"):
            attr = getattr(self, fact)
            if attr is not None and attr.value.data <= 0:
                raise VerifyException(f"loop '{self.loop_name.data}': {fact} must be positive, got {attr.value.data}")
        block = self.body.block
        if len(block.args) != 1 or not isinstance(block.args[0].type, IndexType):
            raise VerifyException("loop body must have one index argument, the induction variable")
        if self.parallel is not None:
            self.verify_no_write_conflict()

    def verify_no_write_conflict(self) -> None:
        """Two iterations of a parallel loop must not store to the same element."""
        iv = self.induction_var
        private = {op.results[0] for op in self.walk() if isinstance(op, AllocOp | LocalOp)}
        for op in self.walk():
            if not isinstance(op, StoreOp) or op.memref in private:
                continue
            if not store_depends_on(op, iv):
                raise VerifyException(
                    f"loop '{self.loop_name.data}' is parallel, but a store to a buffer it does not own does not "
                    "depend on its induction variable: two iterations would write the same element"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(" = ")
        _print_bound(printer, self.lower, self.lower_operands)
        printer.print_string(" to ")
        _print_bound(printer, self.upper, self.upper_operands)
        printer.print_string(f" step {self.step_value}")
        facts = {k: v for k, v in self.properties.items() if k in FACTS}
        facts.update(self.attributes)  # discardable attributes (e.g. irkit.schedule) print too
        printer.print_op_attributes(facts)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lower, lower_ops = _parse_bound(parser)
        parser.parse_keyword("to")
        upper, upper_ops = _parse_bound(parser)
        parser.parse_keyword("step")
        step = parser.parse_integer()
        facts = parser.parse_optional_attr_dict()
        body = parser.parse_region((iv.resolve(IndexType()),))
        op = cls(lower, lower_ops, upper, upper_ops, step, "", body)
        for key, value in facts.items():
            if key in FACTS:
                op.properties[key] = value
            else:
                op.attributes[key] = value
        return op


def _print_bound(printer: Printer, amap: AffineMapAttr, operands: Sequence[SSAValue]) -> None:
    printer.print_attribute(amap)
    printer.print_string("(")
    printer.print_list(operands, printer.print_ssa_value)
    printer.print_string(")")


def _parse_bound(parser: Parser) -> tuple[AffineMap, list[SSAValue]]:
    attr = parser.parse_attribute()
    if not isinstance(attr, AffineMapAttr):
        parser.raise_error("expected an affine map for a loop bound")
    unresolved: list[UnresolvedOperand] = parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, parser.parse_unresolved_operand
    )
    return attr.data, [parser.resolve_operand(u, IndexType()) for u in unresolved]


def store_depends_on(store: StoreOp, iv: SSAValue) -> bool:
    """True if the stored element's address uses `iv`: directly as a map operand, or
    through the variable of a loop whose ranges for different values of `iv` are
    disjoint windows (`determined_by`): after `split i by 32 -> io, ii` a store at
    `[ii]` depends on `io`, since `ii` runs over `[io, min(io + 32, M))`."""
    amap = store.map.data
    for pos, value in enumerate(store.indices):
        if any(result.used_dims() & {pos} for result in amap.results) and determined_by(value, iv):
            return True
    return False


def linear_form(expr: AffineExpr, rounded: bool = False) -> tuple[dict[int, int], int] | None:
    """`expr` as (dimension -> coefficient, constant) if it is linear in dims, else None.

    `rounded`: a linear stand-in for floor/ceil divisions and remainders by constants too
    (`irkit.affine.linear.rounded_div`: the cost model's boxes), not an exact form."""
    form = try_lin_of(expr, POSITIONS, div=rounded_div if rounded else no_div)
    return None if form is None else (form.terms, form.const)


def window_parent(loop: ForOp) -> SSAValue | None:
    """The variable `w` of an enclosing loop such that every range of `loop` lies in a
    window `[a*w + c1, a*w + c2)` (a lower bound result `a*w + c1`, an upper bound result
    `a*w + c2`, a > 0) no wider than `a` times the step of `w`'s loop: different values
    of `w` then give `loop` disjoint ranges.  None if there is no such variable."""
    lowers: dict[SSAValue, list[tuple[int, int]]] = {}
    for result in loop.lower.data.results:
        form = linear_form(result)
        if form is not None and len(form[0]) == 1:
            ((dim, a),) = form[0].items()
            lowers.setdefault(loop.lower_operands[dim], []).append((a, form[1]))
    for result in loop.upper.data.results:
        form = linear_form(result)
        if form is None or len(form[0]) != 1:
            continue
        ((dim, a),) = form[0].items()
        w = loop.upper_operands[dim]
        owner = w.owner
        outer = owner.parent_op() if isinstance(owner, Block) else None
        if a <= 0 or not isinstance(outer, ForOp) or w is not outer.induction_var or not outer.is_ancestor(loop):
            continue
        for a_low, c1 in lowers.get(w, []):
            if a_low == a and form[1] - c1 <= a * outer.step_value:
                return w
    return None


def determined_by(value: SSAValue, iv: SSAValue) -> bool:
    """Do different values of the loop variable `iv` give `value` disjoint sets of values?
    True for `iv` itself and, through `window_parent`, for the variables of loops that
    run over windows of it (the inner loops of its splits)."""
    seen = 0
    while value is not iv:
        owner = value.owner
        loop = owner.parent_op() if isinstance(owner, Block) else None
        if not isinstance(loop, ForOp) or value is not loop.induction_var or seen > 64:
            return False
        parent = window_parent(loop)
        if parent is None:
            return False
        value, seen = parent, seen + 1
    return True


@irdl_op_definition
class LoadOp(IRDLOperation):
    """One element: `%v = loop.load %A[map](%i, %j) : memref<?x?xf32> -> f32`."""

    name = "loop.load"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)
    result = result_def()
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$memref `[` $map `]` `(` $indices `)` attr-dict `:` type($memref) `->` type($result)"

    def __init__(self, memref: SSAValue, amap: AffineMap, indices: Sequence[SSAValue]):
        assert isinstance(memref.type, MemRefType)
        super().__init__(
            operands=[memref, list(indices)],
            properties={"map": AffineMapAttr(amap)},
            result_types=[memref.type.element_type],
        )

    def verify_(self) -> None:
        _verify_access(self.map.data, self.indices, self.memref)
        if self.result.type != self.memref.type.element_type:
            raise VerifyException("load result type must be the buffer's element type")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`loop.store %v, %A[map](%i, %j) : f32, memref<?x?xf32>`."""

    name = "loop.store"
    value = operand_def()
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "$value `,` $memref `[` $map `]` `(` $indices `)` attr-dict `:` type($value) `,` type($memref)"
    )

    def __init__(self, value: SSAValue, memref: SSAValue, amap: AffineMap, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, memref, list(indices)], properties={"map": AffineMapAttr(amap)})

    def verify_(self) -> None:
        _verify_access(self.map.data, self.indices, self.memref)
        if self.value.type != self.memref.type.element_type:
            raise VerifyException("stored value type must be the buffer's element type")


def _verify_access(amap: AffineMap, indices: Sequence[SSAValue], memref: SSAValue) -> None:
    rank = len(memref.type.get_shape())  # type: ignore[attr-defined]
    if amap.num_symbols != 0 or amap.num_dims != len(indices):
        raise VerifyException(f"access map {amap} must have one dimension per index operand ({len(indices)})")
    if len(amap.results) != rank:
        raise VerifyException(f"access map {amap} gives {len(amap.results)} indices for a buffer of rank {rank}")


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A temporary buffer: `%t = loop.alloc(%H, %W) {shape = ..., tensor_name = "bx"} : memref<?x?xf32>`."""

    name = "loop.alloc"
    sizes = var_operand_def(IndexType)
    tensor_name = prop_def(StringAttr)
    shape = prop_def(AffineMapAttr)
    align = opt_prop_def(IntegerAttr)
    result = result_def(MemRefType)
    traits = traits_def(MemoryAllocEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`(` $sizes `)` attr-dict `:` type($result)"

    def __init__(
        self, sizes: Sequence[SSAValue], name: str, shape: AffineMap, result_type: MemRefType, align: int | None = None
    ):
        props: dict[str, Attribute] = {"tensor_name": StringAttr(name), "shape": AffineMapAttr(shape)}
        if align is not None:
            props["align"] = IntegerAttr(align, i64)
        super().__init__(operands=[list(sizes)], properties=props, result_types=[result_type])

    def verify_(self) -> None:
        shape = self.shape.data
        if shape.num_dims != 0 or shape.num_symbols != len(self.sizes):
            raise VerifyException("shape must be a map ()[s0, ...] over the size operands")
        if len(shape.results) != len(self.result.type.get_shape()):
            raise VerifyException("shape and buffer rank differ")


@irdl_op_definition
class FreeOp(IRDLOperation):
    """Release a temporary: `loop.free %t : memref<?x?xf32>`."""

    name = "loop.free"
    memref = operand_def(MemRefType)
    traits = traits_def(MemoryFreeEffect())
    assembly_format = "$memref attr-dict `:` type($memref)"

    def __init__(self, memref: SSAValue):
        super().__init__(operands=[memref])


# Largest number of elements a loop.local may hold (it lives on the C stack or in registers).
MAX_LOCAL_ELEMENTS = 1 << 16


@irdl_op_definition
class LocalOp(IRDLOperation):
    """A block-local buffer of static shape: `%acc = loop.local {tensor_name = "C_acc"} : memref<16xf32>`.

    Each execution gives a fresh, uninitialised buffer that lives until the end
    of the enclosing block; nothing frees it.  Stores to it are private to the
    iteration of every loop around it (the parallel-loop check treats it as an
    allocation inside the loop).
    """

    name = "loop.local"
    tensor_name = prop_def(StringAttr)
    result = result_def(MemRefType)
    traits = traits_def(MemoryAllocEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, name: str, result_type: MemRefType):
        super().__init__(properties={"tensor_name": StringAttr(name)}, result_types=[result_type])

    def verify_(self) -> None:
        memref = self.result.type
        assert isinstance(memref, MemRefType)
        shape = memref.get_shape()
        if not shape or any(n <= 0 for n in shape):
            raise VerifyException(f"loop.local needs a static shape of positive extents, got {list(shape)}")
        count = 1
        for n in shape:
            count *= n
        if count > MAX_LOCAL_ELEMENTS:
            raise VerifyException(f"loop.local of {count} elements is larger than {MAX_LOCAL_ELEMENTS}")
        if not isinstance(memref.layout, NoneAttr):
            raise VerifyException("loop.local is row-major: its type must not carry a layout")


def origin_location(loop: ForOp) -> tuple[str, int, int] | None:
    """(file, line, col) of the directive that made `loop` (its `origin` fact), or None."""
    if loop.origin is None:
        return None
    parts = loop.origin.data.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    return None


def enclosing_loops(op: Operation) -> list[ForOp]:
    """The loops around `op`, outermost first."""
    loops: list[ForOp] = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    return list(reversed(loops))


Loop = Dialect("loop", [ForOp, LoadOp, StoreOp, AllocOp, FreeOp, LocalOp], [])
