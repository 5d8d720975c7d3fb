"""The `tensorop` dialect: what is computed, at tensor level.

A kernel is a `func.func` whose arguments are the symbolic sizes (`index`)
and the tensors (`memref<?x...xT>`, layout in the type); its body is a
sequence of tensorop ops in destination-passing style, like linalg on
buffers:

- `tensorop.generic`: the structured form.  An iteration domain (extents
  as an affine map over the size operands), one indexing map per operand
  (loop dims to tensor dims), iterator kinds (parallel / reduction) and a
  scalar body of `arith`/`math` ops.  The body's block arguments are the
  elements of the inputs, then the current elements of the outputs; it
  yields the new output elements, so a reduction's combiner (`+`, `max`)
  is the last op of the body, exactly as in `linalg.generic`.
- `tensorop.index`: inside a generic body, the value of one of its loops
  (`linalg.index`), for a statement that computes with its indices
  (`select(k < j, ...)`).
- `tensorop.fill`: set a buffer to a constant (the start of a reduction).
- `tensorop.alloc`: a temporary buffer.
- Named ops (`matmul`, `batch_matmul`, `conv2d`, `softmax`, `transpose`,
  `reduce`, `elementwise`) say what they are; each can be generalised to
  fills and generics (`irkit.passes.generalize`).

Every op takes all kernel sizes as its `sizes` operands, and maps use
symbols s0, s1, ... for them in that order.  The stage name, the document's
loop names and its schedule directives travel along as properties, not
applied yet.  Layouts: a memref without layout is row-major; a permutation
map layout (`affine_map<(d0, d1) -> (d1, d0)>`) gives the storage order,
outermost first, as in MLIR's multi-result layout maps.

Memory effects (xDSL traits): generic and named ops read their inputs and
write their outputs, `fill` writes, `alloc` allocates, `yield` is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.ir.affine import AffineConstraintKind, AffineExpr
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import (
    HasParent,
    IsTerminator,
    MemoryAllocEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    NoTerminator,
    Pure,
)
from xdsl.utils.exceptions import VerifyException

from irkit import registry

PARALLEL = "parallel"
REDUCTION = "reduction"


def memref_rank(value: SSAValue) -> int:
    assert isinstance(value.type, MemRefType)
    return len(value.type.get_shape())


def element_type(value: SSAValue) -> Attribute:
    assert isinstance(value.type, MemRefType)
    return value.type.element_type


class TensorOpBase(IRDLOperation):
    """Operands and properties shared by generic and named ops."""

    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    sizes = var_operand_def(IndexType)
    stage = prop_def(StringAttr)
    loop_names = prop_def(ArrayAttr[StringAttr])
    domain = prop_def(AffineMapAttr)
    schedule = opt_prop_def(ArrayAttr)
    # Destination-passing style: reads its inputs, writes its outputs.
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())

    def verify_common(self) -> None:
        domain = self.domain.data
        if domain.num_dims != 0 or domain.num_symbols != len(self.sizes):
            raise VerifyException(
                f"domain must be a map ()[s0..s{len(self.sizes) - 1}] over the {len(self.sizes)} size operands, "
                f"got {domain}"
            )
        if len(domain.results) != len(self.loop_names.data):
            raise VerifyException(
                f"{len(self.loop_names.data)} loop names for a domain of {len(domain.results)} loops"
            )


# --- structured form -----------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a generic body with the new output elements."""

    name = "tensorop.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(GenericOp), Pure()))
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class GenericOp(TensorOpBase):
    """A structured op: domain, indexing maps, iterator kinds, scalar body."""

    name = "tensorop.generic"
    indexing_maps = prop_def(ArrayAttr[AffineMapAttr])
    iterators = prop_def(ArrayAttr[StringAttr])
    # The points of the domain box that are computed: a set over the loops (dims) and the sizes
    # (symbols), `(d0, d1)[s0] : (d0 - d1 >= 0)` for `where j <= i`; every point when absent.
    where = opt_prop_def(AffineSetAttr)
    # A recurrence (`carry` in the document): the loops run in their order, each point reading what
    # the earlier points wrote (the output buffer may also be an input); absent: points independent.
    ordered = opt_prop_def(UnitAttr)
    body = region_def("single_block")
    assembly_format = (
        "(`ins` `(` $ins^ `:` type($ins) `)`)? `outs` `(` $outs `:` type($outs) `)` "
        "`sizes` `(` $sizes `)` attr-dict-with-keyword $body"
    )

    def __init__(
        self,
        ins: Sequence[SSAValue],
        outs: Sequence[SSAValue],
        sizes: Sequence[SSAValue],
        *,
        stage: str,
        loop_names: Sequence[str],
        domain: AffineMapAttr,
        indexing_maps: Sequence[AffineMapAttr],
        iterators: Sequence[str],
        body: Region,
        schedule: ArrayAttr | None = None,
        where: AffineSetAttr | None = None,
        ordered: bool = False,
    ):
        props: dict[str, Attribute] = {
            "stage": StringAttr(stage),
            "loop_names": ArrayAttr([StringAttr(n) for n in loop_names]),
            "domain": domain,
            "indexing_maps": ArrayAttr(list(indexing_maps)),
            "iterators": ArrayAttr([StringAttr(k) for k in iterators]),
        }
        if schedule is not None:
            props["schedule"] = schedule
        if where is not None:
            props["where"] = where
        if ordered:
            props["ordered"] = UnitAttr()
        super().__init__(operands=[list(ins), list(outs), list(sizes)], properties=props, regions=[body])

    @property
    def maps(self) -> list:
        return [m.data for m in self.indexing_maps.data]

    @property
    def iterator_kinds(self) -> list[str]:
        return [k.data for k in self.iterators.data]

    def where_forms(self) -> list[tuple[AffineExpr, bool]]:
        """The domain's constraints as `(e, equal)`: `e >= 0`, or `e == 0` when `equal`."""
        if self.where is None:
            return []
        return [
            (c.rhs - c.lhs if c.kind == AffineConstraintKind.le else c.lhs - c.rhs, c.kind == AffineConstraintKind.eq)
            for c in self.where.data.constraints
        ]

    def verify_(self) -> None:
        self.verify_common()
        n_loops = len(self.domain.data.results)
        operands = [*self.ins, *self.outs]
        if len(self.maps) != len(operands):
            raise VerifyException(f"{len(operands)} operands need {len(operands)} indexing maps, got {len(self.maps)}")
        for i, (value, amap) in enumerate(zip(operands, self.maps)):
            if amap.num_dims != n_loops:
                raise VerifyException(f"indexing map {i} has {amap.num_dims} dims for a {n_loops}-loop domain")
            if len(amap.results) != memref_rank(value):
                raise VerifyException(
                    f"indexing map {i} gives {len(amap.results)} indices for an operand of rank {memref_rank(value)}"
                )
        if self.where is not None:
            where = self.where.data
            if where.num_dims != n_loops or where.num_symbols != len(self.sizes):
                raise VerifyException(
                    f"where set must be over the {n_loops} loops and the {len(self.sizes)} sizes, got {where}"
                )
        kinds = self.iterator_kinds
        if len(kinds) != n_loops or any(k not in (PARALLEL, REDUCTION) for k in kinds):
            raise VerifyException(f"need {n_loops} iterator kinds, each 'parallel' or 'reduction', got {kinds}")
        block = self.body.block
        expected = [element_type(v) for v in operands]
        if [a.type for a in block.args] != expected:
            raise VerifyException(f"body arguments must be the operands' element types {expected}")
        last = block.last_op
        if not isinstance(last, YieldOp) or len(last.values) != len(self.outs):
            raise VerifyException("body must end with tensorop.yield of one value per output")


@irdl_op_definition
class IndexOp(IRDLOperation):
    """The value of loop `dim` of the enclosing generic (MLIR's `linalg.index`): a statement that
    computes with an index (`select(i == j, ...)`) reads it through this op, so the body stays a
    scalar program over the domain and the lowering gives it the loop's induction variable."""

    name = "tensorop.index"
    dim = prop_def(IntegerAttr)
    result = result_def(IndexType)
    traits = lazy_traits_def(lambda: (HasParent(GenericOp), Pure()))
    assembly_format = "$dim attr-dict"

    def __init__(self, dim: int):
        super().__init__(properties={"dim": IntegerAttr.from_index_int_value(dim)}, result_types=[IndexType()])

    @property
    def loop(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        parent = self.parent_op()
        if not isinstance(parent, GenericOp):
            return  # HasParent says so
        n_loops = len(parent.domain.data.results)
        if not 0 <= self.loop < n_loops:
            raise VerifyException(f"index of loop {self.loop}, but the generic has {n_loops} loops")


# --- buffers -------------------------------------------------------------------


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A temporary buffer, `shape` over the size operands."""

    name = "tensorop.alloc"
    sizes = var_operand_def(IndexType)
    tensor_name = prop_def(StringAttr)
    shape = prop_def(AffineMapAttr)
    align = opt_prop_def(IntegerAttr)
    result = result_def(MemRefType)
    traits = traits_def(MemoryAllocEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`(` $sizes `)` attr-dict `:` type($result)"

    def __init__(self, sizes: Sequence[SSAValue], name: str, shape: AffineMapAttr, result_type: MemRefType):
        super().__init__(
            operands=[list(sizes)],
            properties={"tensor_name": StringAttr(name), "shape": shape},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        shape = self.shape.data
        if shape.num_dims != 0 or shape.num_symbols != len(self.sizes):
            raise VerifyException("shape must be a map over the size operands")
        if len(shape.results) != len(self.result.type.get_shape()):
            raise VerifyException("shape and memref rank differ")


@irdl_op_definition
class FillOp(IRDLOperation):
    """Set every element of `out` to `value` (the identity of a reduction)."""

    name = "tensorop.fill"
    out = var_operand_def(MemRefType)
    sizes = var_operand_def(IndexType)
    value = prop_def(Attribute)
    stage = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = "$out `:` type($out) `sizes` `(` $sizes `)` attr-dict"

    def __init__(self, out: SSAValue, sizes: Sequence[SSAValue], value: Attribute, stage: str):
        super().__init__(operands=[[out], list(sizes)], properties={"value": value, "stage": StringAttr(stage)})

    def verify_(self) -> None:
        if len(self.out) != 1:
            raise VerifyException("fill writes exactly one buffer")
        if not isinstance(self.value, (FloatAttr, IntegerAttr)):
            raise VerifyException("fill value must be a float or integer attribute")


@irdl_op_definition
class RepeatOp(IRDLOperation):
    """Time steps: the ops of the body run `count` times, in order (`repeat T { ... }` of the
    document).  Lowered to a sequential loop around their nests."""

    name = "tensorop.repeat"
    count = operand_def(IndexType)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$count attr-dict-with-keyword $body"

    def __init__(self, count: SSAValue, ops: Sequence[Operation] = ()):
        super().__init__(operands=[count], regions=[Region(Block(list(ops)))])

    def verify_(self) -> None:
        for op in self.body.block.ops:
            if isinstance(op, RepeatOp):
                raise VerifyException("repeat blocks do not nest")


# --- named ops -----------------------------------------------------------------


class NamedTensorOp(TensorOpBase):
    """Base of the named ops: what they are is their name and `params`."""

    params = opt_prop_def(DictionaryAttr)
    assembly_format = (
        "(`ins` `(` $ins^ `:` type($ins) `)`)? `outs` `(` $outs `:` type($outs) `)` `sizes` `(` $sizes `)` attr-dict"
    )
    ARITY: ClassVar[int] = 2

    def __init__(
        self,
        ins: Sequence[SSAValue],
        out: SSAValue,
        sizes: Sequence[SSAValue],
        *,
        stage: str,
        loop_names: Sequence[str],
        domain: AffineMapAttr,
        params: dict[str, Attribute] | None = None,
        schedule: ArrayAttr | None = None,
    ):
        props: dict[str, Attribute] = {
            "stage": StringAttr(stage),
            "loop_names": ArrayAttr([StringAttr(n) for n in loop_names]),
            "domain": domain,
        }
        if params:
            props["params"] = DictionaryAttr(params)
        if schedule is not None:
            props["schedule"] = schedule
        super().__init__(operands=[list(ins), [out], list(sizes)], properties=props)

    def param(self, key: str, default: object = None) -> object:
        if self.params is None or key not in self.params.data:
            return default
        attr = self.params.data[key]
        if isinstance(attr, IntegerAttr):
            return attr.value.data
        if isinstance(attr, StringAttr):
            return attr.data
        if isinstance(attr, ArrayAttr):
            return [a.value.data for a in attr.data]  # type: ignore[attr-defined]
        return attr

    def verify_(self) -> None:
        self.verify_common()
        if len(self.ins) != self.ARITY or len(self.outs) != 1:
            raise VerifyException(f"{self.name} takes {self.ARITY} inputs and 1 output")
        self.verify_ranks()

    def verify_ranks(self) -> None:
        pass


def _ranks(op: NamedTensorOp, *ranks: int) -> None:
    for value, rank in zip([*op.ins, *op.outs], ranks):
        if memref_rank(value) != rank:
            raise VerifyException(f"{op.name} expects operands of ranks {list(ranks)}")


@irdl_op_definition
class MatmulOp(NamedTensorOp):
    """C[i, j] = sum_k A[i, k] * B[k, j]; loops (i, j, k)."""

    name = "tensorop.matmul"

    def verify_ranks(self) -> None:
        _ranks(self, 2, 2, 2)


@irdl_op_definition
class BatchMatmulOp(NamedTensorOp):
    """C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]; loops (b, i, j, k)."""

    name = "tensorop.batch_matmul"

    def verify_ranks(self) -> None:
        _ranks(self, 3, 3, 3)


@irdl_op_definition
class Conv2dOp(NamedTensorOp):
    """2-D convolution (cross-correlation); params stride, padding, layout (nchw | nhwc)."""

    name = "tensorop.conv2d"

    def verify_ranks(self) -> None:
        _ranks(self, 4, 4, 4)
        if self.param("layout", "nchw") not in ("nchw", "nhwc"):
            raise VerifyException("conv2d layout must be nchw or nhwc")
        if int(self.param("stride", 1)) <= 0 or int(self.param("padding", 0)) < 0:  # type: ignore[arg-type]
            raise VerifyException("conv2d needs stride > 0 and padding >= 0")


@irdl_op_definition
class SoftmaxOp(NamedTensorOp):
    """out = exp(x - max) / sum(exp(x - max)) along `axis`."""

    name = "tensorop.softmax"
    ARITY: ClassVar[int] = 1

    def verify_ranks(self) -> None:
        rank = memref_rank(self.ins[0])
        axis = int(self.param("axis", -1))  # type: ignore[arg-type]
        if not -rank <= axis < rank or memref_rank(self.outs[0]) != rank:
            raise VerifyException(f"softmax axis {axis} out of range for rank {rank}, or ranks differ")


@irdl_op_definition
class TransposeOp(NamedTensorOp):
    """out[d...] = in[perm...]; param perm (default: reversed dims)."""

    name = "tensorop.transpose"
    ARITY: ClassVar[int] = 1

    def verify_ranks(self) -> None:
        rank = memref_rank(self.ins[0])
        perm = self.param("perm", list(reversed(range(rank))))
        if sorted(perm) != list(range(rank)) or memref_rank(self.outs[0]) != rank:  # type: ignore[arg-type]
            raise VerifyException(f"transpose perm {perm} is not a permutation of rank {rank}")


REDUCE_KINDS = ("add", "max")
ELEMENTWISE_FNS = {"add": 2, "sub": 2, "mul": 2, "div": 2, "max": 2, "min": 2, "neg": 1, "exp": 1, "sqrt": 1}


@irdl_op_definition
class ReduceOp(NamedTensorOp):
    """out[kept dims] = combine over `dims` of in[...]; params dims (reduced dims of in), kind (add | max).

    Loops: the kept dimensions in order, then the reduced ones.
    """

    name = "tensorop.reduce"
    ARITY: ClassVar[int] = 1

    def verify_ranks(self) -> None:
        rank = memref_rank(self.ins[0])
        dims = self.param("dims", [])
        if not dims or any(not 0 <= d < rank for d in dims) or len(set(dims)) != len(dims):  # type: ignore[union-attr]
            raise VerifyException(f"reduce dims {dims} must be distinct dimensions of the rank-{rank} input")
        if memref_rank(self.outs[0]) != rank - len(dims):  # type: ignore[arg-type]
            raise VerifyException("reduce output rank must be the input rank minus the reduced dims")
        if self.param("kind", "add") not in REDUCE_KINDS:
            raise VerifyException(f"reduce kind must be one of {', '.join(REDUCE_KINDS)}")


@irdl_op_definition
class ElementwiseOp(NamedTensorOp):
    """out = fn(ins...) element by element, all operands of one shape; param fn."""

    name = "tensorop.elementwise"

    def verify_(self) -> None:
        self.verify_common()
        fn = self.param("fn")
        if fn not in ELEMENTWISE_FNS:
            raise VerifyException(f"elementwise fn must be one of {', '.join(ELEMENTWISE_FNS)}, got {fn}")
        if len(self.ins) != ELEMENTWISE_FNS[fn] or len(self.outs) != 1:  # type: ignore[index]
            raise VerifyException(f"elementwise {fn} takes {ELEMENTWISE_FNS[fn]} inputs and 1 output")  # type: ignore[index]
        ranks = {memref_rank(v) for v in [*self.ins, *self.outs]}
        if len(ranks) != 1:
            raise VerifyException("elementwise operands must have one rank")


NAMED_TENSOR_OPS: dict[str, type[NamedTensorOp]] = registry.TENSOR_OPS
NAMED_TENSOR_OPS |= {
    "matmul": MatmulOp,
    "batch_matmul": BatchMatmulOp,
    "conv2d": Conv2dOp,
    "softmax": SoftmaxOp,
    "transpose": TransposeOp,
    "reduce": ReduceOp,
    "elementwise": ElementwiseOp,
}


def is_tensorop(op: Operation) -> bool:
    return op.dialect_name() == "tensorop"


def named_tensor_op_class(name: str, ranks: Sequence[int | None], summary: str) -> type[NamedTensorOp]:
    """A tensorop op class for a named operation whose only extra check is the operand ranks
    (`ranks`: inputs then output, None = any); what `irkit.extend` defines when a plugin's
    operation brings no class of its own."""
    arity = len(ranks) - 1

    def verify_ranks(self: NamedTensorOp) -> None:
        for value, rank in zip([*self.ins, *self.outs], ranks):
            if rank is not None and memref_rank(value) != rank:
                raise VerifyException(f"{self.name} expects operands of ranks {list(ranks)}")

    cls = type(
        f"{''.join(w.title() for w in name.split('_'))}Op",
        (NamedTensorOp,),
        {
            "name": f"tensorop.{name}",
            "ARITY": arity,
            "__annotations__": {"ARITY": ClassVar[int]},
            "verify_ranks": verify_ranks,
            "__doc__": summary,
        },
    )
    return irdl_op_definition(cls)


def register_named_tensor_op(name: str, cls: type[NamedTensorOp]) -> None:
    """Make `cls` the tensorop form of the named operation `name` (see irkit.extend)."""
    if cls.name != f"tensorop.{name}":
        raise ValueError(f"the tensorop form of '{name}' must be named 'tensorop.{name}', not '{cls.name}'")
    NAMED_TENSOR_OPS[name] = cls


def tensorop_dialect() -> Dialect:
    """The tensorop dialect with every registered named op, plugins' included."""
    return Dialect("tensorop", [GenericOp, YieldOp, IndexOp, AllocOp, FillOp, RepeatOp, *NAMED_TENSOR_OPS.values()], [])


TensorOp = tensorop_dialect()  # irkit's own operations only; contexts use tensorop_dialect()
