"""The `design` dialect: a design document as IR, one op per section.

Each op mirrors a piece of the `.design` text and keeps the source location
of that text (`op.location`, a `FileLineColLoc`), so that every later
diagnostic can point back at the document line whose intent it concerns.

Verifiers here check only what is local to one op (positive factors, a
permutation that is one, arity of a statement against its own indices).
Everything that needs the whole document -- undefined names, rank
mismatches, schedule loops that do not exist -- is the semantic checker's
job (`irkit.checks.design`), which reports all problems at once with
source spans instead of stopping at the first failing op.

Names (tensors, sizes, loops) are plain strings; index and shape
expressions are stored in their canonical text form (see
`irkit.affine_text`), which keeps the IR readable and the round trip to
`.design` text exact.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.traits import HasParent, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

from irkit import registry
from irkit.affine_text import AffineTextError, parse_affine

DTYPES = ("f32", "f64", "i32")
ROLES = ("input", "output", "inout", "temp")
ASSIGN_KINDS = ("=", "+=", "max=")
LAYOUT_KINDS = ("row_major", "col_major", "order")
METRICS = ("latency", "throughput")


def str_array(values: list[str] | tuple[str, ...]) -> ArrayAttr[StringAttr]:
    return ArrayAttr([StringAttr(v) for v in values])


def int_array(values: list[int] | tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def str_list(attr: ArrayAttr) -> list[str]:
    """The Python strings of an `ArrayAttr[StringAttr]`."""
    return [a.data for a in attr.data]  # type: ignore[attr-defined]


def int_list(attr: DenseArrayBase) -> list[int]:
    """The Python ints of an i64 dense array."""
    return [int(v) for v in attr.get_values()]


def _check_affine_list(what: str, exprs: list[str]) -> None:
    for text in exprs:
        try:
            parse_affine(text)
        except AffineTextError as err:
            raise VerifyException(f"{what}: '{text}' is not an affine expression: {err}") from None


def check_positive(what: str, value: int) -> None:
    if value <= 0:
        raise VerifyException(f"{what} must be positive, got {value}")


# --- document ----------------------------------------------------------------


@irdl_op_definition
class DesignOp(IRDLOperation):
    """The whole document: `design NAME { ... }`."""

    name = "design.design"
    sym_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, sym_name: str, ops: list | None = None):
        super().__init__(
            properties={"sym_name": StringAttr(sym_name)},
            regions=[Region(Block(ops or []))],
        )

    @property
    def design_name(self) -> str:
        return self.sym_name.data


@irdl_op_definition
class DocOp(IRDLOperation):
    """`doc "text"`: what the kernel is for, in words."""

    name = "design.doc"
    text = prop_def(StringAttr)
    assembly_format = "$text attr-dict"

    def __init__(self, text: str):
        super().__init__(properties={"text": StringAttr(text)})


@irdl_op_definition
class SizeOp(IRDLOperation):
    """One entry of `sizes { ... }`: a symbolic size with an optional default."""

    name = "design.size"
    sym_name = prop_def(StringAttr)
    default = opt_prop_def(IntegerAttr[I64])
    assembly_format = "$sym_name (`=` $default^)? attr-dict"

    def __init__(self, sym_name: str, default: int | None = None):
        props: dict[str, Attribute] = {"sym_name": StringAttr(sym_name)}
        if default is not None:
            props["default"] = IntegerAttr(default, i64)
        super().__init__(properties=props)

    def verify_(self) -> None:
        if self.default is not None:
            check_positive(f"default of size '{self.sym_name.data}'", self.default.value.data)


@irdl_op_definition
class TensorOp(IRDLOperation):
    """`tensor A : f32[M, K + 2] input`."""

    name = "design.tensor"
    sym_name = prop_def(StringAttr)
    dtype = prop_def(StringAttr)
    shape = prop_def(ArrayAttr[StringAttr])
    role = prop_def(StringAttr)
    assembly_format = "$sym_name `:` $dtype $shape $role attr-dict"

    def __init__(self, sym_name: str, dtype: str, shape: list[str], role: str):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "dtype": StringAttr(dtype),
                "shape": str_array(shape),
                "role": StringAttr(role),
            }
        )

    @property
    def shape_exprs(self) -> list[str]:
        return str_list(self.shape)

    def verify_(self) -> None:
        if self.dtype.data not in DTYPES:
            raise VerifyException(f"element type must be one of {', '.join(DTYPES)}, got '{self.dtype.data}'")
        if self.role.data not in ROLES:
            raise VerifyException(f"role must be one of {', '.join(ROLES)}, got '{self.role.data}'")
        if not self.shape.data:
            raise VerifyException(f"tensor '{self.sym_name.data}' needs at least one dimension")
        _check_affine_list(f"shape of '{self.sym_name.data}'", self.shape_exprs)


@irdl_op_definition
class ScalarOp(IRDLOperation):
    """`scalar alpha : f32 input`: one value passed to the kernel by value, read as `alpha`."""

    name = "design.scalar"
    sym_name = prop_def(StringAttr)
    dtype = prop_def(StringAttr)
    role = prop_def(StringAttr)
    assembly_format = "$sym_name `:` $dtype $role attr-dict"

    def __init__(self, sym_name: str, dtype: str, role: str):
        super().__init__(
            properties={"sym_name": StringAttr(sym_name), "dtype": StringAttr(dtype), "role": StringAttr(role)}
        )

    def verify_(self) -> None:
        if self.dtype.data not in DTYPES:
            raise VerifyException(f"element type must be one of {', '.join(DTYPES)}, got '{self.dtype.data}'")
        if self.role.data not in ROLES:
            raise VerifyException(f"role must be one of {', '.join(ROLES)}, got '{self.role.data}'")


# --- statements --------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a statement body with the value written to the target."""

    name = "design.yield"
    value = operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(StmtOp)))
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


@irdl_op_definition
class ReadOp(IRDLOperation):
    """`A[i, k + 1]` on the right of a statement: one element of a tensor."""

    name = "design.read"
    tensor = prop_def(StringAttr)
    indices = prop_def(ArrayAttr[StringAttr])
    result = result_def()
    assembly_format = "$tensor $indices attr-dict `:` type($result)"

    def __init__(self, tensor: str, indices: list[str], result_type: Attribute):
        super().__init__(
            properties={"tensor": StringAttr(tensor), "indices": str_array(indices)},
            result_types=[result_type],
        )

    @property
    def index_exprs(self) -> list[str]:
        return str_list(self.indices)

    def verify_(self) -> None:
        if not self.indices.data:
            raise VerifyException(f"read of '{self.tensor.data}' has no indices")
        _check_affine_list(f"index of '{self.tensor.data}'", self.index_exprs)


@irdl_op_definition
class ValueOp(IRDLOperation):
    """`alpha` or `N` on the right of a statement: a scalar's value, or a size's value
    converted to the statement's element type (`X[i] / N`)."""

    name = "design.value"
    ref = prop_def(StringAttr)
    result = result_def()
    assembly_format = "$ref attr-dict `:` type($result)"

    def __init__(self, ref: str, result_type: Attribute):
        super().__init__(properties={"ref": StringAttr(ref)}, result_types=[result_type])


@irdl_op_definition
class StmtOp(IRDLOperation):
    """An index-expression statement: `C[i, j] += A[i, k] * B[k, j]`.

    `target` and `indices` are the left-hand side, `kind` is the assignment
    (`=`, `+=`, `max=`), and the body computes the right-hand side from
    `design.read` and `arith`/`math` ops, ending in `design.yield`.
    """

    name = "design.stmt"
    target = prop_def(StringAttr)
    indices = prop_def(ArrayAttr[StringAttr])
    kind = prop_def(StringAttr)
    where = opt_prop_def(ArrayAttr[StringAttr])  # the domain's constraints, `j <= i` (irkit.affine.where)
    carry = opt_prop_def(ArrayAttr[StringAttr])  # a recurrence: its loops in the order they run
    body = region_def("single_block")
    assembly_format = "$target $indices $kind (`where` $where^)? (`carry` $carry^)? attr-dict-with-keyword $body"

    def __init__(
        self,
        target: str,
        indices: list[str],
        kind: str,
        body: Region,
        where: list[str] | None = None,
        carry: list[str] | None = None,
    ):
        props: dict[str, Attribute] = {
            "target": StringAttr(target),
            "indices": str_array(indices),
            "kind": StringAttr(kind),
        }
        if where:
            props["where"] = str_array(where)
        if carry:
            props["carry"] = str_array(carry)
        super().__init__(properties=props, regions=[body])

    @property
    def carry_loops(self) -> list[str]:
        """The loops of a recurrence in the order they run (empty: not a recurrence)."""
        return str_list(self.carry) if self.carry is not None else []

    @property
    def where_texts(self) -> list[str]:
        return str_list(self.where) if self.where is not None else []

    @property
    def index_exprs(self) -> list[str]:
        return str_list(self.indices)

    def verify_(self) -> None:
        if self.kind.data not in ASSIGN_KINDS:
            raise VerifyException(f"assignment must be one of {', '.join(ASSIGN_KINDS)}, got '{self.kind.data}'")
        if not self.indices.data:
            raise VerifyException(f"statement writing '{self.target.data}' has no indices")
        _check_affine_list(f"index of '{self.target.data}'", self.index_exprs)
        block = self.body.block
        if not block.ops or not isinstance(block.last_op, YieldOp):
            raise VerifyException("statement body must end with design.yield")


@irdl_op_definition
class RepeatOp(IRDLOperation):
    """Time steps: `repeat T { ... }` runs its statements `T` times, in order (`T` a size).

    A statement inside reads what the earlier statements of the same step wrote, and what the
    later ones wrote in the step before (the first step: the value on entry, so such a tensor is
    in-out).  Everything else about a statement is as at the top level."""

    name = "design.repeat"
    count = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$count attr-dict-with-keyword $body"

    def __init__(self, count: str, ops: list | None = None):
        super().__init__(properties={"count": StringAttr(count)}, regions=[Region(Block(ops or []))])

    def verify_(self) -> None:
        for op in self.body.block.ops:
            if not isinstance(op, StmtOp | NamedOp):
                raise VerifyException(f"repeat holds statements only, not {op.name}")


def statements(ops) -> list:
    """The statements among `ops` (a design's, or its block's ops), those of `repeat` blocks in
    place: the order they first run in."""
    if isinstance(ops, DesignOp):
        ops = ops.body.block.ops
    out: list = []
    for op in ops:
        if isinstance(op, RepeatOp):
            out.extend(op.body.block.ops)
        elif isinstance(op, StmtOp | NamedOp):
            out.append(op)
    return out


def repeat_of(op: Operation) -> RepeatOp | None:
    """The `repeat` block a statement is in, if any."""
    parent = op.parent_op()
    return parent if isinstance(parent, RepeatOp) else None


@irdl_op_definition
class NamedOp(IRDLOperation):
    """A named operation: `O = conv2d(I, W, stride = 1, padding = 1)`.

    The operation name is checked against the registry of named
    operations (`irkit.named_ops`), which also says how many operands it
    takes and which parameters it accepts.
    """

    name = "design.named"
    target = prop_def(StringAttr)
    op_name = prop_def(StringAttr)
    args = prop_def(ArrayAttr[StringAttr])
    params = prop_def(DictionaryAttr)
    assembly_format = "$target `=` $op_name $args $params attr-dict"

    def __init__(self, target: str, op_name: str, operands: list[str], params: dict[str, Attribute]):
        super().__init__(
            properties={
                "target": StringAttr(target),
                "op_name": StringAttr(op_name),
                "args": str_array(operands),
                "params": DictionaryAttr(params),
            }
        )

    @property
    def operand_names(self) -> list[str]:
        return str_list(self.args)

    def verify_(self) -> None:
        from irkit.named_ops import NamedOpError, get_named_op

        try:
            spec = get_named_op(self.op_name.data)
            spec.check_call(self.operand_names, dict(self.params.data))
        except NamedOpError as err:
            raise VerifyException(str(err)) from None


# --- layout ------------------------------------------------------------------


@irdl_op_definition
class LayoutOp(IRDLOperation):
    """One entry of `layout { ... }`: `B : col_major align 64`.

    `kind` is `row_major`, `col_major` or `order`; for `order` the
    permutation lists the tensor's dimensions from outermost (slowest
    varying) to innermost. `align` is in bytes.
    """

    name = "design.layout"
    tensor = prop_def(StringAttr)
    kind = opt_prop_def(StringAttr)
    order = opt_prop_def(DenseArrayBase.constr(i64))
    align = opt_prop_def(IntegerAttr[I64])
    assembly_format = "$tensor (`kind` $kind^)? (`order` $order^)? (`align` $align^)? attr-dict"

    def __init__(
        self,
        tensor: str,
        kind: str | None,
        order: list[int] | None = None,
        align: int | None = None,
    ):
        props: dict[str, Attribute] = {"tensor": StringAttr(tensor)}
        if kind is not None:
            props["kind"] = StringAttr(kind)
        if order is not None:
            props["order"] = int_array(order)
        if align is not None:
            props["align"] = IntegerAttr(align, i64)
        super().__init__(properties=props)

    @property
    def order_list(self) -> list[int] | None:
        return None if self.order is None else int_list(self.order)

    def verify_(self) -> None:
        kind = None if self.kind is None else self.kind.data
        if kind is not None and kind not in LAYOUT_KINDS:
            raise VerifyException(f"layout must be one of {', '.join(LAYOUT_KINDS)}, got '{kind}'")
        if (kind == "order") != (self.order is not None):
            raise VerifyException("an explicit dimension order goes with kind 'order' and only with it")
        order = self.order_list
        if order is not None and sorted(order) != list(range(len(order))):
            raise VerifyException(f"order {order} is not a permutation of 0..{len(order) - 1}")
        if kind is None and self.align is None:
            raise VerifyException(f"layout of '{self.tensor.data}' says nothing: give a layout or an alignment")
        if self.align is not None:
            align = self.align.value.data
            if align <= 0 or align & (align - 1):
                raise VerifyException(f"alignment must be a positive power of two, got {align}")


# --- schedule ----------------------------------------------------------------


@irdl_op_definition
class ScheduleOp(IRDLOperation):
    """`schedule STAGE { directives }`: how the statement writing STAGE runs."""

    name = "design.schedule"
    stage = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$stage attr-dict-with-keyword $body"

    def __init__(self, stage: str, directives: list[IRDLOperation]):
        super().__init__(properties={"stage": StringAttr(stage)}, regions=[Region(Block(directives))])


def in_schedule():
    return (HasParent(ScheduleOp),)







class LoopFactorDirective(IRDLOperation):
    """A directive of the form `KEYWORD loop by factor` with a positive factor."""

    loop = prop_def(StringAttr)
    factor = prop_def(IntegerAttr[I64])
    traits = lazy_traits_def(in_schedule)
    assembly_format = "$loop `by` $factor attr-dict"
    WHAT: ClassVar[str] = "factor"

    def __init__(self, loop: str, factor: int):
        super().__init__(properties={"loop": StringAttr(loop), "factor": IntegerAttr(factor, i64)})

    def verify_(self) -> None:
        check_positive(self.WHAT, self.factor.value.data)







# --- hardware ----------------------------------------------------------------


@irdl_op_definition
class HardwareRefOp(IRDLOperation):
    """`hardware NAME`: a description in the file NAME.hw (see `irkit.hardware_files`)."""

    name = "design.hardware_ref"
    ref = prop_def(StringAttr)
    assembly_format = "$ref attr-dict"

    def __init__(self, ref: str):
        super().__init__(properties={"ref": StringAttr(ref)})


@irdl_op_definition
class HardwareOp(IRDLOperation):
    """An inline `hardware [NAME] { ... }` block: fields and memory levels."""

    name = "design.hardware"
    hw_name = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "(`named` $hw_name^)? attr-dict-with-keyword $body"

    def __init__(self, hw_name: str | None = None, items: list | None = None):
        props: dict[str, Attribute] = {}
        if hw_name is not None:
            props["hw_name"] = StringAttr(hw_name)
        super().__init__(properties=props, regions=[Region(Block(items or []))])


@irdl_op_definition
class HwLevelOp(IRDLOperation):
    """A memory level of an inline hardware block: `cache L1 { ... }`, `dram { ... }`."""

    name = "design.hw_level"
    level = prop_def(StringAttr)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (NoTerminator(), HasParent(HardwareOp)))
    assembly_format = "$level attr-dict-with-keyword $body"

    def __init__(self, level: str, fields: list):
        super().__init__(properties={"level": StringAttr(level)}, regions=[Region(Block(fields))])

    @property
    def is_dram(self) -> bool:
        return self.level.data == "dram"


@irdl_op_definition
class HwFieldOp(IRDLOperation):
    """One hardware quantity as written: `frequency 2.9 GHz`, `cores 2`."""

    name = "design.hw_field"
    key = prop_def(StringAttr)
    value = prop_def(FloatAttr)
    unit = opt_prop_def(StringAttr)
    assembly_format = "$key `=` $value (`unit` $unit^)? attr-dict"

    def __init__(self, key: str, value: float, unit: str | None):
        props: dict[str, Attribute] = {"key": StringAttr(key), "value": FloatAttr(value, 64)}
        if unit is not None:
            props["unit"] = StringAttr(unit)
        super().__init__(properties=props)


@irdl_op_definition
class HwTextOp(IRDLOperation):
    """A text field of a hardware block, as written: `cpu "AMD EPYC 9R14"`, `march "native"` --
    where a description came from (`irkit calibrate` records it; `irkit.calibrate.fingerprint`
    compares it with the host).  Top level only; the cost model prices nothing with it."""

    name = "design.hw_text"
    key = prop_def(StringAttr)
    text = prop_def(StringAttr)
    assembly_format = "$key `=` $text attr-dict"

    def __init__(self, key: str, text: str):
        super().__init__(properties={"key": StringAttr(key), "text": StringAttr(text)})


# --- assumptions and metric --------------------------------------------------


@irdl_op_definition
class AssumeDivisibleOp(IRDLOperation):
    """`assume { M % 64 == 0 }`."""

    name = "design.assume_divisible"
    size = prop_def(StringAttr)
    divisor = prop_def(IntegerAttr[I64])
    assembly_format = "$size `by` $divisor attr-dict"

    def __init__(self, size: str, divisor: int):
        super().__init__(properties={"size": StringAttr(size), "divisor": IntegerAttr(divisor, i64)})

    def verify_(self) -> None:
        check_positive("divisor", self.divisor.value.data)


@irdl_op_definition
class AssumeAlignedOp(IRDLOperation):
    """`assume { aligned(A, 64) }`: A's base address is a multiple of 64 bytes."""

    name = "design.assume_aligned"
    tensor = prop_def(StringAttr)
    alignment = prop_def(IntegerAttr[I64])
    assembly_format = "$tensor `to` $alignment attr-dict"

    def __init__(self, tensor: str, nbytes: int):
        super().__init__(properties={"tensor": StringAttr(tensor), "alignment": IntegerAttr(nbytes, i64)})

    def verify_(self) -> None:
        n = self.alignment.value.data
        if n <= 0 or n & (n - 1):
            raise VerifyException(f"alignment must be a positive power of two, got {n}")


@irdl_op_definition
class AssumeNoAliasOp(IRDLOperation):
    """`assume { noalias(A, B) }`: the tensors share no memory."""

    name = "design.assume_noalias"
    tensors = prop_def(ArrayAttr[StringAttr])
    assembly_format = "$tensors attr-dict"

    def __init__(self, tensors: list[str]):
        super().__init__(properties={"tensors": str_array(tensors)})

    def verify_(self) -> None:
        if len(self.tensors.data) < 2:
            raise VerifyException("noalias needs at least two tensors")


@irdl_op_definition
class AssumeRelaxedMathOp(IRDLOperation):
    """`assume { relaxed_math }`: a few ulps of error buy fast exp/sqrt and reassociation."""

    name = "design.assume_relaxed_math"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class AssumePositiveDefiniteOp(IRDLOperation):
    """`assume { positive_definite(A) }`: A's value on entry is a symmetric positive definite
    matrix (what a Cholesky factorisation needs).  The kernel may rely on it; the random inputs
    irkit makes for a check, a validation or a tuning run keep it."""

    name = "design.assume_positive_definite"
    tensors = prop_def(ArrayAttr[StringAttr])
    assembly_format = "$tensors attr-dict"

    def __init__(self, tensors: list[str]):
        super().__init__(properties={"tensors": str_array(tensors)})


@irdl_op_definition
class MetricOp(IRDLOperation):
    """`metric latency`: what the schedule is meant to optimise."""

    name = "design.metric"
    metric = prop_def(StringAttr)
    assembly_format = "$metric attr-dict"

    def __init__(self, metric: str):
        super().__init__(properties={"metric": StringAttr(metric)})

    def verify_(self) -> None:
        if self.metric.data not in METRICS:
            raise VerifyException(f"metric must be one of {', '.join(METRICS)}, got '{self.metric.data}'")


ASSUME_OPS = (AssumeDivisibleOp, AssumeAlignedOp, AssumeNoAliasOp, AssumeRelaxedMathOp, AssumePositiveDefiniteOp)

Design = Dialect(
    "design",
    [
        DesignOp,
        DocOp,
        SizeOp,
        TensorOp,
        ScalarOp,
        StmtOp,
        RepeatOp,
        ReadOp,
        ValueOp,
        YieldOp,
        NamedOp,
        LayoutOp,
        ScheduleOp,
        HardwareRefOp,
        HardwareOp,
        HwLevelOp,
        HwFieldOp,
        HwTextOp,
        AssumeDivisibleOp,
        AssumeAlignedOp,
        AssumeNoAliasOp,
        AssumeRelaxedMathOp,
        AssumePositiveDefiniteOp,
        MetricOp,
    ],
    [],
)


def design_dialect() -> Dialect:
    """The design dialect with the op of every registered directive record: each directive's op is
    defined beside its record (`irkit.directives`, which `irkit.context` imports first); contexts use
    this, `Design` holds the document's other ops."""
    ops = dict.fromkeys(r.op for r in registry.DIRECTIVE_RECORDS.values())
    return Dialect("design", [*Design.operations, *ops], [*Design.attributes])
