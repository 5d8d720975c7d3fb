"""How a kernel looks as a `func.func`, at the tensorop and loop levels.

The arguments are the symbolic sizes (`index`, in document order), then
the input and output tensors (`memref<?x...xT>`) and the scalars (`f32`,
`f64` or `i32`, passed by value), in declaration order; temporaries are
allocated inside.  Statement bodies read a scalar as the argument itself
and a size as a conversion of its argument (`arith.index_cast`, then
`arith.sitofp` for a float), values from above their loops as in MLIR.  Argument attributes carry what the
types cannot:

- sizes: `irkit.name` and, when the document gives one, `irkit.default`;
- tensors: `irkit.name`, `irkit.role` (input | output), `irkit.shape` (an
  affine map `()[s0, ...] -> (...)` over the sizes, in argument order) and
  optionally `irkit.align` (bytes);
- scalars: `irkit.name` and `irkit.role` (input).

Function attributes carry the rest of the document, not yet applied:
`irkit.hardware` (a dictionary of the inline block in base units, or the
name of a description), `irkit.assume` and `irkit.metric`; and for
readers only (raising prints them back), `irkit.doc` and `irkit.hardware_name`.

The C backend, the numpy oracle and the lowering passes all read kernels
through this module, so the convention lives in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from irkit.dialects import loop as lp

NAME = "irkit.name"
ROLE = "irkit.role"
SHAPE = "irkit.shape"
ALIGN = "irkit.align"
DEFAULT = "irkit.default"

DTYPE_OF = {"f32": Float32Type(), "f64": Float64Type(), "i32": IntegerType(32)}


def dtype_name(t: Attribute) -> str:
    for name, typ in DTYPE_OF.items():
        if t == typ:
            return name
    raise ValueError(f"unsupported element type {t}")


@dataclass
class SizeArg:
    name: str
    default: int | None
    value: BlockArgument


@dataclass
class ScalarArg:
    name: str
    value: BlockArgument

    @property
    def dtype(self) -> str:
        return dtype_name(self.value.type)


@dataclass
class TensorArg:
    name: str
    role: str
    shape: AffineMap  # ()[sizes...] -> (dims...)
    align: int | None
    value: BlockArgument

    @property
    def memref(self) -> MemRefType:
        assert isinstance(self.value.type, MemRefType)
        return self.value.type

    @property
    def dtype(self) -> str:
        return dtype_name(self.memref.element_type)

    @property
    def order(self) -> list[int]:
        """Storage order, outermost dimension first (identity when row-major)."""
        return layout_order(self.memref)


def layout_order(t: MemRefType) -> list[int]:
    """The dimension order a memref's layout gives, outermost first."""
    rank = len(t.get_shape())
    layout = t.layout
    if isinstance(layout, AffineMapAttr):
        return [r.position for r in layout.data.results]  # type: ignore[attr-defined]
    return list(range(rank))


def memref_type(dtype: str, rank: int, order: list[int] | None = None) -> MemRefType:
    """`memref<?x...xT>`, with a permutation layout unless `order` is row-major."""
    layout: Attribute = NoneAttr()
    if order is not None and order != list(range(rank)):
        layout = AffineMapAttr(permutation_map(order))
    return MemRefType(DTYPE_OF[dtype], [DYNAMIC_INDEX] * rank, layout)


def permutation_map(order: list[int]) -> AffineMap:
    """`(d0, ..., dn) -> (d_order[0], ...)`: MLIR's layout map for a storage order."""
    return AffineMap(len(order), 0, tuple(AffineExpr.dimension(d) for d in order))


def size_attrs(name: str, default: int | None) -> DictionaryAttr:
    attrs: dict[str, Attribute] = {NAME: StringAttr(name)}
    if default is not None:
        attrs[DEFAULT] = IntegerAttr(default, i64)
    return DictionaryAttr(attrs)


def tensor_attrs(name: str, role: str, shape: AffineMap, align: int | None) -> DictionaryAttr:
    attrs: dict[str, Attribute] = {NAME: StringAttr(name), ROLE: StringAttr(role), SHAPE: AffineMapAttr(shape)}
    if align is not None:
        attrs[ALIGN] = IntegerAttr(align, i64)
    return DictionaryAttr(attrs)


def kernel_args(kernel: func.FuncOp) -> tuple[list[SizeArg], list[TensorArg]]:
    """The sizes and tensors of a kernel function, from its argument attributes."""
    sizes: list[SizeArg] = []
    tensors: list[TensorArg] = []
    attrs = kernel.arg_attrs.data if kernel.arg_attrs is not None else []
    if len(attrs) != len(kernel.body.block.args) or any(NAME not in a.data for a in attrs):
        from irkit.diagnostics import DiagnosticError, at_op

        raise DiagnosticError([at_op(
            "error",
            f"function @{kernel.sym_name.data} is not an irkit kernel: every argument needs an '{NAME}' "
            "attribute (and tensors 'irkit.role' and 'irkit.shape'); see irkit/kernel_abi.py",
            kernel,
        )])  # fmt: skip
    for arg, dattr in zip(kernel.body.block.args, attrs):
        d = dattr.data
        name = d[NAME].data  # type: ignore[attr-defined]
        if isinstance(arg.type, IndexType):
            default = d[DEFAULT].value.data if DEFAULT in d else None  # type: ignore[attr-defined]
            sizes.append(SizeArg(name, default, arg))
        elif isinstance(arg.type, MemRefType):
            align = d[ALIGN].value.data if ALIGN in d else None  # type: ignore[attr-defined]
            tensors.append(TensorArg(name, d[ROLE].data, d[SHAPE].data, align, arg))  # type: ignore[attr-defined]
    return sizes, tensors


def kernel_scalars(kernel: func.FuncOp) -> list[ScalarArg]:
    """The scalar arguments of a kernel function (values, neither sizes nor buffers)."""
    attrs = kernel.arg_attrs.data if kernel.arg_attrs is not None else []
    return [
        ScalarArg(dattr.data[NAME].data, arg)  # type: ignore[attr-defined]
        for arg, dattr in zip(kernel.body.block.args, attrs)
        if not isinstance(arg.type, (IndexType, MemRefType)) and NAME in dattr.data
    ]


def scalar_of(value: SSAValue) -> str | None:
    """The scalar's name when `value` is a kernel's scalar argument (a body reads it from above)."""
    return None if isinstance(value.type, (IndexType, MemRefType)) else _argument_name(value)


def size_of(value: SSAValue) -> str | None:
    """The size's name when `value` is a kernel's size argument."""
    return _argument_name(value) if isinstance(value.type, IndexType) else None


def _argument_name(value: SSAValue) -> str | None:
    """The `irkit.name` of a kernel function's argument (None for any other value)."""
    if not isinstance(value, BlockArgument) or value.owner is None:
        return None
    kernel = value.owner.parent_op()
    if not isinstance(kernel, func.FuncOp) or kernel.arg_attrs is None or value.owner is not kernel.body.block:
        return None
    attr = kernel.arg_attrs.data[value.index].data
    return attr[NAME].data if NAME in attr else None  # type: ignore[attr-defined]


def find_kernels(module) -> list[func.FuncOp]:
    return [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]


def kernel_function(
    name: str,
    sizes: list[tuple[str, int | None]],
    tensors: list[tuple[str, str, str, AffineMap | None, list[int] | None, int | None]],
) -> func.FuncOp:
    """An empty kernel `func.func` (body without terminator) for the given sizes and tensors.

    `tensors` rows are (name, dtype, role, shape map, storage order or None, align or None);
    a row whose shape is None is a scalar, passed by value.
    """
    types: list[Attribute] = [IndexType()] * len(sizes)
    attrs = [size_attrs(n, dflt) for n, dflt in sizes]
    for tname, dtype, role, shape, order, align in tensors:
        if shape is None:
            types.append(DTYPE_OF[dtype])
            attrs.append(DictionaryAttr({NAME: StringAttr(tname), ROLE: StringAttr(role)}))
            continue
        types.append(memref_type(dtype, len(shape.results), order))
        attrs.append(tensor_attrs(tname, role, shape, align))
    kernel = func.FuncOp(name, (types, []), arg_attrs=ArrayAttr(attrs))
    names = [n for n, _ in sizes] + [t[0] for t in tensors]
    for arg, arg_name in zip(kernel.body.block.args, names):
        arg.name_hint = arg_name  # readable IR: %M, %A instead of %0, %3
    return kernel


def element_bytes(t: MemRefType) -> int:
    """Bytes of one element of a buffer (index: 8; an unknown element type: 4)."""
    et = t.element_type
    if isinstance(et, Float32Type):
        return 4
    if isinstance(et, Float64Type) or isinstance(et, IndexType):
        return 8
    width = getattr(et, "bitwidth", None) or getattr(et, "width", None)
    if isinstance(width, int):
        return max(1, width // 8)
    if hasattr(width, "data"):
        return max(1, width.data // 8)
    return 4


def arg_names(kernel: func.FuncOp) -> list[str | None]:
    """Each argument's `irkit.name` (None where it has none)."""
    names: list[str | None] = []
    attrs = kernel.arg_attrs.data if kernel.arg_attrs is not None else ()
    for i in range(len(kernel.body.block.args)):
        entry = attrs[i] if i < len(attrs) else None
        n = entry.data.get("irkit.name") if isinstance(entry, DictionaryAttr) else None
        names.append(n.data if isinstance(n, StringAttr) else None)
    return names


def value_name(value: SSAValue) -> str:
    """A value's name in the document: a kernel argument's, a loop variable's, a buffer's."""
    owner = value.owner
    if isinstance(owner, Block):
        parent = owner.parent_op()
        if isinstance(parent, lp.ForOp) and value is parent.induction_var:
            return parent.loop_name.data
        if isinstance(parent, func.FuncOp):
            names = arg_names(parent)
            idx = value.index  # type: ignore[attr-defined]
            if idx < len(names) and names[idx]:
                return names[idx]  # type: ignore[return-value]
    if isinstance(owner, lp.AllocOp):
        return owner.tensor_name.data
    return value.name_hint or "?"


def positive_definite(kernel: func.FuncOp) -> set[str]:
    """The tensors the document assumes symmetric positive definite (`irkit.assume`)."""
    assume = kernel.attributes.get("irkit.assume")
    if not isinstance(assume, DictionaryAttr) or "positive_definite" not in assume.data:
        return set()
    return {s.data for s in assume.data["positive_definite"].data}  # type: ignore[attr-defined]
