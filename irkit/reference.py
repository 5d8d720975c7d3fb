"""The reference semantics: a numpy oracle for design documents and tensorop kernels.

Every correctness check in irkit compares against this module.  It runs a
checked design document (`evaluate_design`) or a tensorop kernel
(`evaluate_tensorop`) with numpy, for any sizes, and returns the output
tensors as row-major (C-order) arrays of their *logical* shapes; memory
layouts are the runner's business.

Both levels go through one engine, a *loop nest*: a domain (loop names and
extents, each loop parallel or reduction), accesses (a tensor and one
index expression per dimension, over the loops), a scalar body of
`arith`/`math` ops, and how the body's value meets the output element
(assign, or a combiner: add, max, min, mul, or a general fold).  An index
statement and a `tensorop.generic` both become such a nest; named
operations share one numpy implementation per operation.

Semantics decided here (see also docs/architecture.md):

- Statements run in document order.  Left-hand indices range over the
  target's dimensions; an index only on the right is a reduction index
  ranging over the dimensions it indexes directly (einsum style).
- `=` assigns; `+=` is a sum starting from 0; `max=` a maximum starting
  from -inf (`f32`, `f64`) or the lowest `int32`.  The maximum propagates
  NaN, as `arith.maximumf` does.
- The body is computed in the element type of the statement: `f32` stays
  `f32` op by op, constants take the element type, `exp`/`sqrt` are
  numpy's.  `i32` arithmetic wraps (two's complement); `/` on integers is
  `arith.divsi`, truncating toward zero like C (`-7 / 2 == -3`), and a
  division by zero raises `ReferenceEvalError` (C would trap).
- **Accumulation precision.**  A reduction sums the body values in float64
  (`f32`, `f64`) or int64 (`i32`) and rounds once to the element type at
  the end.  For `f32` the oracle is therefore close to the exactly rounded
  result and its own error is negligible against a compiled kernel's; the
  tolerance (`tolerance`) only has to bound the kernel's error.  Integer
  sums are exact modulo 2**32, the same as a wrapping `int32` loop in any
  order.  The einsum fast path (below) forms the products in float64 as
  well: a product of two `f32` values is exact there, so it differs from
  the `f32` body by at most half an ulp per term.  `f64` reductions sum in
  float64 (no extra precision).  `softmax` computes in float64 and rounds
  at the end; `matmul`, `batch_matmul` and `conv2d` accumulate like `+=`.
- Index expressions are evaluated per element, with floor division and
  a non-negative remainder (as in affine maps); an access out of bounds
  raises `ReferenceEvalError` rather than wrapping around as numpy would.
- Named operations overwrite their target (`tensorop.matmul` etc. are not
  accumulating, unlike `linalg.matmul`).

Efficiency: a statement that is a sum of products of plain-variable reads
(`C[i, j] += A[i, k] * B[k, j]`) runs as one `np.einsum(optimize=True)`
(BLAS); named operations use `@`, shifted-slice convolution and so on;
any other statement is evaluated over its whole index grid by
broadcasting open grids, reading tensors through strided views where the
indices allow (`x + 1`, `2 * y`) and fancy indexing otherwise, in chunks of
at most `CHUNK_ELEMENTS` grid points.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineSymExpr,
)

from irkit import registry
from irkit.affine_text import BinOp, Const, Expr, Var, evaluate, format_affine, names_in, parse_affine
from irkit.dialects import design as d
from irkit.dialects import tensorop as t
from irkit.kernel_abi import dtype_name, find_kernels, kernel_args
from irkit.named_ops import NAMED_OPS, get_named_op, param_value

__all__ = [
    "CHUNK_ELEMENTS",
    "Comparison",
    "ReferenceEvalError",
    "compare",
    "default_sizes",
    "evaluate_design",
    "evaluate_tensorop",
    "random_inputs",
    "reduction_lengths",
    "resolve_sizes",
    "tolerance",
]

CHUNK_ELEMENTS = 1 << 20
"""Largest index grid (points) evaluated at once.  It bounds the oracle's working memory, and blocks of
at most 8 MiB per temporary stay under glibc's mmap threshold (32 MiB), so they reuse heap memory
instead of faulting in fresh pages for every operation (5-10x faster on large grids)."""

NUMPY_DTYPES: dict[str, type[np.generic]] = {"f32": np.float32, "f64": np.float64, "i32": np.int32}


class ReferenceEvalError(ValueError):
    """The program cannot be evaluated: a missing size or input, an access out of bounds, a division by zero..."""


# --- sizes and inputs ------------------------------------------------------------------


def _find_design(obj: ModuleOp | d.DesignOp) -> d.DesignOp:
    if isinstance(obj, d.DesignOp):
        return obj
    if isinstance(obj, ModuleOp):
        designs = [op for op in obj.body.block.ops if isinstance(op, d.DesignOp)]
        if len(designs) == 1:
            return designs[0]
        raise ReferenceEvalError(f"expected one design.design in the module, found {len(designs)}")
    raise TypeError(f"expected a module or a design.design, got {type(obj).__name__}")


def _find_kernel(obj: ModuleOp | func.FuncOp) -> func.FuncOp:
    if isinstance(obj, func.FuncOp):
        return obj
    if isinstance(obj, ModuleOp):
        kernels = find_kernels(obj)
        if len(kernels) == 1:
            return kernels[0]
        raise ReferenceEvalError(f"expected one kernel func.func in the module, found {len(kernels)}")
    raise TypeError(f"expected a module or a func.func, got {type(obj).__name__}")


def _is_kernel(obj: object) -> bool:
    if isinstance(obj, func.FuncOp):
        return True
    return isinstance(obj, ModuleOp) and any(isinstance(op, func.FuncOp) for op in obj.body.block.ops)


def _size_decls(obj: ModuleOp | d.DesignOp | func.FuncOp) -> list[tuple[str, int | None]]:
    if _is_kernel(obj):
        sizes, _ = kernel_args(_find_kernel(obj))  # type: ignore[arg-type]
        return [(s.name, s.default) for s in sizes]
    design = _find_design(obj)  # type: ignore[arg-type]
    return [
        (op.sym_name.data, None if op.default is None else op.default.value.data)
        for op in design.body.block.ops
        if isinstance(op, d.SizeOp)
    ]


def default_sizes(obj: ModuleOp | d.DesignOp | func.FuncOp) -> dict[str, int]:
    """The sizes that have a default in the document (or kernel), with their defaults."""
    return {name: default for name, default in _size_decls(obj) if default is not None}


def resolve_sizes(obj: ModuleOp | d.DesignOp | func.FuncOp, sizes: Mapping[str, int] | None = None) -> dict[str, int]:
    """Every size's value: `sizes` over the defaults; `ValueError` for a missing, unknown or non-positive size."""
    decls = _size_decls(obj)
    names = [n for n, _ in decls]
    given = dict(sizes or {})
    unknown = [n for n in given if n not in names]
    if unknown:
        raise ReferenceEvalError(
            f"unknown size{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"the sizes are {', '.join(names) or 'none'}"
        )
    out: dict[str, int] = {}
    missing = []
    for name, default in decls:
        value = given.get(name, default)
        if value is None:
            missing.append(name)
            continue
        if int(value) != value or value <= 0:
            raise ReferenceEvalError(f"size {name} must be a positive integer, got {value!r}")
        out[name] = int(value)
    if missing:
        raise ReferenceEvalError(
            f"no value for size{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            "(no default in the document): pass it in `sizes`"
        )
    return out


@dataclass(frozen=True)
class _TensorDecl:
    name: str
    dtype: str
    role: str
    shape: tuple[int, ...]


def _design_tensors(design: d.DesignOp, sizes: dict[str, int]) -> dict[str, _TensorDecl]:
    out: dict[str, _TensorDecl] = {}
    for op in design.body.block.ops:
        if isinstance(op, d.TensorOp):
            name = op.sym_name.data
            shape = tuple(_shape_value(name, e, sizes) for e in op.shape_exprs)
            out[name] = _TensorDecl(name, op.dtype.data, op.role.data, shape)
    return out


def _shape_value(name: str, text: str, sizes: Mapping[str, int]) -> int:
    try:
        value = evaluate(parse_affine(text), sizes)
    except KeyError as err:
        raise ReferenceEvalError(f"shape of '{name}' uses {err.args[0]}, which is not a size") from None
    if value <= 0:
        raise ReferenceEvalError(f"dimension '{text}' of '{name}' is {value} with these sizes; it must be positive")
    return value


def _kernel_tensors(kernel: func.FuncOp, sizes: dict[str, int]) -> tuple[list, dict[str, _TensorDecl]]:
    size_args, tensor_args = kernel_args(kernel)
    symbols = [sizes[s.name] for s in size_args]
    decls = {}
    for arg in tensor_args:
        shape = tuple(arg.shape.eval([], symbols))
        if any(n <= 0 for n in shape):
            raise ReferenceEvalError(f"shape of '{arg.name}' is {shape} with these sizes; dimensions must be positive")
        decls[arg.name] = _TensorDecl(arg.name, arg.dtype, arg.role, shape)
    return tensor_args, decls


def random_inputs(
    obj: ModuleOp | d.DesignOp | func.FuncOp, sizes: Mapping[str, int] | None = None, seed: int = 0
) -> dict[str, np.ndarray]:
    """Random values for every input tensor, in declaration order from one seeded generator.

    `f32`/`f64`: uniform in [-1, 1); `i32`: integers in [-8, 8].  Arrays are
    row-major of the logical shape.
    """
    sizes = resolve_sizes(obj, sizes)
    if _is_kernel(obj):
        _, decls = _kernel_tensors(_find_kernel(obj), sizes)  # type: ignore[arg-type]
    else:
        decls = _design_tensors(_find_design(obj), sizes)  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for decl in decls.values():
        if decl.role != "input":
            continue
        if decl.dtype == "i32":
            out[decl.name] = rng.integers(-8, 9, size=decl.shape, dtype=np.int32)
        else:
            arr = rng.random(decl.shape, dtype=NUMPY_DTYPES[decl.dtype])  # [0, 1), no float64 detour
            arr *= 2
            arr -= 1
            out[decl.name] = arr
    return out


def _bind_inputs(decls: Mapping[str, _TensorDecl], inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    wanted = [n for n, t_ in decls.items() if t_.role == "input"]
    unknown = [n for n in inputs if n not in wanted]
    if unknown:
        raise ReferenceEvalError(f"'{unknown[0]}' is not an input tensor; the inputs are {', '.join(wanted) or 'none'}")
    missing = [n for n in wanted if n not in inputs]
    if missing:
        raise ReferenceEvalError(
            f"no value given for input tensor{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        )
    out: dict[str, np.ndarray] = {}
    for name in wanted:
        decl = decls[name]
        dt = np.dtype(NUMPY_DTYPES[decl.dtype])
        given = np.asarray(inputs[name])
        if given.shape != decl.shape:
            raise ReferenceEvalError(f"input '{name}' has shape {given.shape}, expected {decl.shape}")
        if given.dtype.kind != dt.kind and not (dt.kind == "f" and given.dtype.kind in "iu"):
            raise ReferenceEvalError(f"input '{name}' has dtype {given.dtype}, expected {decl.dtype}")
        arr = given.astype(dt, copy=False).view()
        arr.flags.writeable = False  # a kernel that writes its input fails loudly, the caller's data stays intact
        out[name] = arr
    return out


def _new_buffer(decl: _TensorDecl) -> np.ndarray:
    return np.zeros(decl.shape, dtype=NUMPY_DTYPES[decl.dtype])


# --- index expressions ----------------------------------------------------------------------


def _linear(expr: Expr) -> tuple[dict[str, int], int] | None:
    """`expr` as (coefficients, constant) if it is linear in its names, else None."""
    if isinstance(expr, Var):
        return {expr.name: 1}, 0
    if isinstance(expr, Const):
        return {}, expr.value
    a, b = _linear(expr.lhs), _linear(expr.rhs)
    if a is None or b is None:
        return None
    (ca, ka), (cb, kb) = a, b
    if expr.op in ("+", "-"):
        sign = 1 if expr.op == "+" else -1
        coeffs = dict(ca)
        for name, c in cb.items():
            coeffs[name] = coeffs.get(name, 0) + sign * c
        return {n: c for n, c in coeffs.items() if c}, ka + sign * kb
    if expr.op == "*":
        if not ca:
            return {n: ka * c for n, c in cb.items() if ka * c}, ka * kb
        if not cb:
            return {n: kb * c for n, c in ca.items() if kb * c}, ka * kb
        return None
    if not ca and not cb and kb != 0:  # constant / or %
        return {}, (ka // kb if expr.op == "/" else ka % kb)
    return None


def _from_affine(expr: AffineExpr, dims: list[str], symbols: list[int]) -> Expr:
    """An xDSL affine expression as an index expression over loop names, symbols replaced by their values."""
    if isinstance(expr, AffineDimExpr):
        return Var(dims[expr.position])
    if isinstance(expr, AffineSymExpr):
        return Const(symbols[expr.position])
    if isinstance(expr, AffineConstantExpr):
        return Const(expr.value)
    assert isinstance(expr, AffineBinaryOpExpr)
    a, b = _from_affine(expr.lhs, dims, symbols), _from_affine(expr.rhs, dims, symbols)
    kind = expr.kind
    if kind == AffineBinaryOpKind.Add:
        return BinOp("+", a, b)
    if kind == AffineBinaryOpKind.Mul:
        return BinOp("*", a, b)
    if kind == AffineBinaryOpKind.FloorDiv:
        return BinOp("/", a, b)
    if kind == AffineBinaryOpKind.Mod:
        return BinOp("%", a, b)
    # ceildiv(a, b) == -floordiv(-a, b)
    return BinOp("-", Const(0), BinOp("/", BinOp("*", Const(-1), a), b))


# --- scalar bodies -----------------------------------------------------------------------------


def _np_dtype(t: Attribute) -> np.dtype:
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, IntegerType):
        width = t.width.data
        return np.dtype({1: np.bool_, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[width])
    raise ReferenceEvalError(f"no numpy type for {t}")


def _divsi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division: the quotient truncated toward zero (`arith.divsi`)."""
    a, b = np.asarray(a), np.asarray(b)
    if np.any(b == 0):
        raise ReferenceEvalError("integer division by zero (arith.divsi): C would trap here")
    q = np.floor_divide(a, b)
    q = q + ((q * b != a) & ((a < 0) != (b < 0))).astype(q.dtype)
    return q


def _remsi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(np.asarray(b) == 0):
        raise ReferenceEvalError("integer remainder by zero (arith.remsi): C would trap here")
    return np.fmod(a, b)  # sign of the dividend, like C's %


_CMPI = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal}


def _cmpf(pred: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    unordered = np.isnan(a) | np.isnan(b)
    base = {1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less, 5: np.less_equal, 6: np.not_equal}
    if pred == 0:
        return np.zeros(np.broadcast(a, b).shape, bool)
    if pred == 15:
        return np.ones(np.broadcast(a, b).shape, bool)
    if pred == 7:
        return ~unordered
    if pred == 14:
        return unordered
    if pred in base:  # ordered: false if either is NaN
        return base[pred](a, b) & ~unordered
    return base[pred - 7](a, b) | unordered  # 8..13: unordered or ...


_UNARY: dict[str, Callable] = {
    "arith.negf": np.negative,
    "math.exp": np.exp,
    "math.exp2": np.exp2,
    "math.log": np.log,
    "math.log2": np.log2,
    "math.sqrt": np.sqrt,
    "math.rsqrt": lambda x: np.reciprocal(np.sqrt(x)),
    "math.absf": np.abs,
    "math.absi": np.abs,
    "math.tanh": np.tanh,
    "math.sin": np.sin,
    "math.cos": np.cos,
    "math.floor": np.floor,
    "math.ceil": np.ceil,
}
_BINARY: dict[str, Callable] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.remf": np.fmod,
    "arith.maximumf": np.maximum,  # NaN-propagating, like arith.maximumf
    "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax,  # NaN-ignoring
    "arith.minnumf": np.fmin,
    "math.powf": np.power,
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.divsi": _divsi,
    "arith.remsi": _remsi,
    "arith.floordivsi": lambda a, b: np.floor_divide(a, b) if not np.any(np.asarray(b) == 0) else _divsi(a, b),
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
}
_CASTS = ("arith.sitofp", "arith.fptosi", "arith.extf", "arith.truncf", "arith.extsi", "arith.trunci",
          "arith.index_cast")  # fmt: skip


def _constant(op: Operation) -> np.ndarray:
    attr = op.value  # type: ignore[attr-defined]
    dt = _np_dtype(op.results[0].type)
    if isinstance(attr, (FloatAttr, IntegerAttr)):
        return np.asarray(attr.value.data, dtype=dt)
    raise ReferenceEvalError(f"unsupported constant {attr}")


def _apply(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    name = op.name
    if name == "arith.constant":
        return _constant(op)
    dt = _np_dtype(op.results[0].type)
    if name in _UNARY:
        out = _UNARY[name](args[0])
    elif name in _BINARY:
        out = _BINARY[name](args[0], args[1])
    elif name == "math.fma":
        out = args[0] * args[1] + args[2]
    elif name == "arith.select":
        out = np.where(args[0], args[1], args[2])
    elif name == "arith.cmpi":
        out = _CMPI[op.predicate.value.data](args[0], args[1])  # type: ignore[attr-defined]
    elif name == "arith.cmpf":
        out = _cmpf(op.predicate.value.data, args[0], args[1])  # type: ignore[attr-defined]
    elif name in _CASTS:
        out = np.trunc(args[0]) if name == "arith.fptosi" else args[0]
    else:
        raise ReferenceEvalError(f"the reference has no semantics for '{name}' in a body")
    return np.asarray(out).astype(dt, copy=False)


@dataclass
class _Body:
    """A scalar program: `ops` in order compute `result` from the `leaves` (value -> read position)."""

    ops: list[Operation]
    leaves: dict[SSAValue, int]
    result: SSAValue
    out_leaf: SSAValue | None = None  # stands for the current output element (tensorop bodies)

    def run(self, reads: Callable[[int], np.ndarray], out_value: Callable[[], np.ndarray] | None = None) -> np.ndarray:
        env: dict[SSAValue, np.ndarray] = {}

        def value(v: SSAValue) -> np.ndarray:
            if v in env:
                return env[v]
            if v in self.leaves:
                env[v] = reads(self.leaves[v])
            elif v is self.out_leaf and out_value is not None:
                env[v] = out_value()
            else:
                raise ReferenceEvalError(f"a body uses {v}, which it does not define")
            return env[v]

        for op in self.ops:
            args = [value(o) for o in op.operands]
            env[op.results[0]] = _apply(op, args)
        return value(self.result)

    def depends_on(self, value: SSAValue, leaf: SSAValue) -> bool:
        if value is leaf:
            return True
        owner = value.owner
        if isinstance(owner, Operation) and owner in self.ops:
            return any(self.depends_on(o, leaf) for o in owner.operands)
        return False


# --- the engine: loop nests ------------------------------------------------------------------


@dataclass
class _Access:
    name: str  # the tensor, for messages
    array: np.ndarray
    indices: list[Expr]


@dataclass
class _Nest:
    """Domain + accesses + scalar body: one index statement or one tensorop.generic."""

    stage: str
    loops: list[str]
    extents: list[int]
    parallel: list[bool]
    reads: list[_Access]
    out: np.ndarray
    out_loops: list[str]  # the loop indexing each output dimension
    body: _Body
    combine: str  # assign | add | max | min | mul | fold
    loop_labels: list[str] = field(default_factory=list)  # names for messages

    def label(self, expr: Expr) -> str:
        if not self.loop_labels:
            return format_affine(expr)
        rename = dict(zip(self.loops, self.loop_labels))
        return format_affine(_rename(expr, rename))


def _rename(expr: Expr, names: Mapping[str, str]) -> Expr:
    if isinstance(expr, Var):
        return Var(names.get(expr.name, expr.name))
    if isinstance(expr, Const):
        return expr
    return BinOp(expr.op, _rename(expr.lhs, names), _rename(expr.rhs, names))


_REDUCE = {"add": np.sum, "max": np.max, "min": np.min, "mul": np.prod}
_COMBINE = {"add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply}


def _acc_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dt.kind == "f" else np.dtype(np.int64)


def _chunk_sizes(extents: list[int], budget: int) -> list[int]:
    """Per-loop block sizes, innermost loops whole first, so that a block has at most `budget` points."""
    sizes = [1] * len(extents)
    points = 1
    for i in reversed(range(len(extents))):
        sizes[i] = max(1, min(extents[i], budget // points))
        points *= sizes[i]
    return sizes


def _blocks(extent: int, size: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + size, extent)) for lo in range(0, extent, size)]


def _gather(nest: _Nest, access: _Access, ranges: list[tuple[int, int]]) -> np.ndarray:
    """The accessed elements over the block `ranges`, as an array broadcastable to the block (one axis per loop)."""
    loops = nest.loops
    arr = access.array
    lin = [_linear(e) for e in access.indices]
    # Fast path: every index is `a * v + b` (a > 0) or a constant, each loop at most once: a strided view.
    if all(x is not None and len(x[0]) <= 1 and all(c > 0 for c in x[0].values()) for x in lin):
        used = [next(iter(x[0])) for x in lin if x[0]]  # type: ignore[index]
        if len(used) == len(set(used)):
            index: list[slice | int] = []
            dim_loops: list[int] = []
            for dim, (coeffs, const) in enumerate(lin):  # type: ignore[misc]
                if not coeffs:
                    _check_bounds(nest, access, dim, const, const)
                    index.append(const)
                    continue
                ((var, a),) = coeffs.items()
                pos = loops.index(var)
                lo, hi = ranges[pos]
                first, last = a * lo + const, a * (hi - 1) + const
                _check_bounds(nest, access, dim, first, last)
                index.append(slice(first, last + 1, a))
                dim_loops.append(pos)
            view = arr[tuple(index)]
            order = sorted(range(len(dim_loops)), key=lambda k: dim_loops[k])
            view = view.transpose(order)
            present = set(dim_loops)
            return view[tuple(slice(None) if p in present else None for p in range(len(loops)))]
    grid = {}
    for pos, name in enumerate(loops):
        shape = [1] * len(loops)
        lo, hi = ranges[pos]
        shape[pos] = hi - lo
        grid[name] = np.arange(lo, hi, dtype=np.int64).reshape(shape)
    idx = []
    for dim, expr in enumerate(access.indices):
        value = evaluate(expr, grid)
        if isinstance(value, np.ndarray):
            _check_bounds(nest, access, dim, int(value.min()), int(value.max()))
        else:
            _check_bounds(nest, access, dim, value, value)
        idx.append(value)
    out = np.asarray(arr[tuple(idx)])
    return out.reshape((1,) * len(loops)) if out.ndim == 0 else out


def _check_bounds(nest: _Nest, access: _Access, dim: int, lo: int, hi: int) -> None:
    size = access.array.shape[dim]
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise ReferenceEvalError(
            f"stage '{nest.stage}': {access.name}[{', '.join(nest.label(e) for e in access.indices)}] is out of "
            f"bounds: index {nest.label(access.indices[dim])} of dimension {dim + 1} reaches {bad}, "
            f"but the dimension has size {size}"
        )


def _out_perm(nest: _Nest) -> tuple[list[int], list[int]]:
    """(parallel loop positions in loop order, permutation from that order to the output's dimension order)."""
    par = [i for i, p in enumerate(nest.parallel) if p]
    par_names = [nest.loops[i] for i in par]
    return par, [par_names.index(name) for name in nest.out_loops]


def _check_out(nest: _Nest) -> None:
    par = [nest.loops[i] for i, p in enumerate(nest.parallel) if p]
    if sorted(nest.out_loops) != sorted(par) or len(set(nest.out_loops)) != len(nest.out_loops):
        raise ReferenceEvalError(
            f"stage '{nest.stage}': the output must be indexed by each parallel loop exactly once "
            f"(loops {', '.join(par)}; output indices {', '.join(nest.out_loops)})"
        )
    if nest.out.ndim != len(nest.out_loops):
        raise ReferenceEvalError(
            f"stage '{nest.stage}': {len(nest.out_loops)} indices for a rank-{nest.out.ndim} output"
        )
    for dim, name in enumerate(nest.out_loops):
        ext = nest.extents[nest.loops.index(name)]
        if ext > nest.out.shape[dim]:
            raise ReferenceEvalError(
                f"stage '{nest.stage}': loop {name} runs to {ext} but output dimension {dim + 1} has size {nest.out.shape[dim]}"
            )


def run_nest(nest: _Nest, budget: int | None = None) -> None:
    """Execute a loop nest, writing its output in place, in blocks of at most `budget` (default `CHUNK_ELEMENTS`) points."""
    budget = budget or CHUNK_ELEMENTS
    _check_out(nest)
    if any(e <= 0 for e, p in zip(nest.extents, nest.parallel) if p):
        return
    if any(e <= 0 for e in nest.extents):  # an empty reduction leaves the start value
        return
    if _try_einsum(nest):
        return
    par, perm = _out_perm(nest)
    red = [i for i, p in enumerate(nest.parallel) if not p]
    n = len(nest.loops)
    dt = nest.out.dtype
    inv = list(np.argsort(perm))  # output dims -> parallel loop order

    def out_slices(ranges: list[tuple[int, int]]) -> tuple[slice, ...]:
        return tuple(slice(*ranges[nest.loops.index(name)]) for name in nest.out_loops)

    def current(ranges: list[tuple[int, int]]) -> np.ndarray:
        """The output block with one axis per loop (size 1 on reduction loops), in loop order."""
        block = nest.out[out_slices(ranges)].transpose(inv)
        shape = [1] * n
        for k, pos in enumerate(par):
            shape[pos] = block.shape[k]
        return block.reshape(shape)

    def store(ranges: list[tuple[int, int]], value: np.ndarray) -> None:
        """Write a block given with one axis per loop (size 1 on reduction loops) into the output."""
        value = value.reshape([value.shape[i] for i in par])
        nest.out[out_slices(ranges)] = value.transpose(perm)

    def evaluate_block(ranges: list[tuple[int, int]], out_value=None) -> np.ndarray:
        cache: dict[int, np.ndarray] = {}

        def read(k: int) -> np.ndarray:
            if k not in cache:
                cache[k] = _gather(nest, nest.reads[k], ranges)
            return cache[k]

        value = nest.body.run(read, out_value)
        value = np.asarray(value)
        if value.ndim < n:
            value = value.reshape((1,) * (n - value.ndim) + value.shape)
        return value

    if nest.combine == "fold":
        extents = [e if p else 1 for e, p in zip(nest.extents, nest.parallel)]
        sizes = _chunk_sizes(extents, budget)
        for pblock in itertools.product(*[_blocks(nest.extents[i], sizes[i]) for i in par]):
            ranges = [(0, 1)] * n
            for i, r in zip(par, pblock):
                ranges[i] = r
            cur = current(ranges)
            for point in itertools.product(*[range(nest.extents[i]) for i in red]):
                for i, v in zip(red, point):
                    ranges[i] = (v, v + 1)
                shape = tuple(hi - lo for lo, hi in ranges)
                cur = np.broadcast_to(evaluate_block(ranges, lambda c=cur: c), shape).astype(dt)
            store(ranges, cur)
        return

    sizes = _chunk_sizes(nest.extents, budget)
    acc_dt = _acc_dtype(dt)
    red_axes = tuple(red)
    for pblock in itertools.product(*[_blocks(nest.extents[i], sizes[i]) for i in par]):
        ranges = [(0, 1)] * n
        for i, r in zip(par, pblock):
            ranges[i] = r
        if nest.combine == "assign":
            value = evaluate_block(ranges, lambda r=list(ranges): current(r))
            shape = tuple(hi - lo for lo, hi in ranges)
            store(ranges, np.broadcast_to(value, shape).astype(dt, copy=False))
            continue
        acc = None
        for rblock in itertools.product(*[_blocks(nest.extents[i], sizes[i]) for i in red]):
            for i, r in zip(red, rblock):
                ranges[i] = r
            shape = tuple(hi - lo for lo, hi in ranges)
            value = np.broadcast_to(evaluate_block(ranges), shape)
            if nest.combine in ("add", "mul"):
                part = _REDUCE[nest.combine](value, axis=red_axes, dtype=acc_dt, keepdims=True)
            else:
                part = _REDUCE[nest.combine](value, axis=red_axes, keepdims=True)
            acc = part if acc is None else _COMBINE[nest.combine](acc, part)
        assert acc is not None
        cur = current(ranges)
        if nest.combine in ("add", "mul"):
            new = _COMBINE[nest.combine](cur.astype(acc_dt), acc)
        else:
            new = _COMBINE[nest.combine](cur, acc)
        store(ranges, new.astype(dt))


def _product_factors(nest: _Nest) -> tuple[list[int], list[np.ndarray]] | None:
    """If the body is a product of reads and constants: (read positions, constants)."""
    reads: list[int] = []
    consts: list[np.ndarray] = []
    body = nest.body

    def walk(v: SSAValue) -> bool:
        if v in body.leaves:
            reads.append(body.leaves[v])
            return True
        owner = v.owner
        if not isinstance(owner, Operation) or owner not in body.ops:
            return False
        if owner.name == "arith.constant":
            consts.append(_constant(owner))
            return True
        if owner.name in ("arith.mulf", "arith.muli"):
            return all(walk(o) for o in owner.operands)
        return False

    return (reads, consts) if walk(body.result) and reads else None


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _try_einsum(nest: _Nest) -> bool:
    """`C[i, j] += A[i, k] * B[k, j]`-like nests as one np.einsum; False if the nest is not of that form."""
    if nest.combine != "add" or all(nest.parallel) or len(nest.loops) > len(_LETTERS):
        return False
    found = _product_factors(nest)
    if found is None:
        return False
    positions, consts = found
    if not all(all(isinstance(e, Var) for e in nest.reads[k].indices) for k in positions):
        return False
    used = {e.name for k in positions for e in nest.reads[k].indices}  # type: ignore[union-attr]
    if used != set(nest.loops):
        return False
    dt = nest.out.dtype
    acc_dt = _acc_dtype(dt)
    letter = dict(zip(nest.loops, _LETTERS))
    extent = dict(zip(nest.loops, nest.extents))
    operands = []
    subscripts = []
    for k in positions:
        access = nest.reads[k]
        names = [e.name for e in access.indices]  # type: ignore[union-attr]
        for dim, name in enumerate(names):
            _check_bounds(nest, access, dim, 0, extent[name] - 1)
        view = access.array[tuple(slice(0, extent[name]) for name in names)]
        operands.append(view.astype(acc_dt))
        subscripts.append("".join(letter[name] for name in names))
    spec = ",".join(subscripts) + "->" + "".join(letter[name] for name in nest.out_loops)
    result = np.einsum(spec, *operands, optimize=True)
    for c in consts:
        result = result * c.astype(acc_dt)
    region = tuple(slice(0, extent[name]) for name in nest.out_loops)
    nest.out[region] = (nest.out[region].astype(acc_dt) + result).astype(dt)
    return True


# --- named operations ----------------------------------------------------------------------


def _conv2d(
    image: np.ndarray, weights: np.ndarray, stride: int, padding: int, layout: str, acc: np.dtype
) -> np.ndarray:
    """Cross-correlation as a sum over the R x S window of shifted image slices times weights (tensordot over C)."""
    if layout == "nchw":
        img = image.transpose(0, 2, 3, 1)  # N, H, W, C
        wt = weights.transpose(2, 3, 1, 0)  # R, S, C, F
    else:
        img, wt = image, weights  # N, H, W, C and R, S, C, F
    n, h, w, c = img.shape
    r_, s_, c2, f = wt.shape
    if c != c2:
        raise ReferenceEvalError(f"conv2d: the image has {c} channels, the weights {c2}")
    oh = (h + 2 * padding - r_) // stride + 1
    ow = (w + 2 * padding - s_) // stride + 1
    if oh <= 0 or ow <= 0:
        raise ReferenceEvalError(f"conv2d: the output would be {oh} x {ow}")
    padded = np.zeros((n, h + 2 * padding, w + 2 * padding, c), dtype=acc)
    padded[:, padding : padding + h, padding : padding + w, :] = img
    wt = wt.astype(acc)
    out = np.zeros((n, oh, ow, f), dtype=acc)
    for r in range(r_):
        for s in range(s_):
            window = padded[:, r : r + stride * (oh - 1) + 1 : stride, s : s + stride * (ow - 1) + 1 : stride, :]
            out += np.tensordot(window, wt[r, s], axes=([3], [0]))
    return out.transpose(0, 3, 1, 2) if layout == "nchw" else out


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if x.dtype.kind != "f":
        raise ReferenceEvalError("softmax needs a floating-point tensor")
    x64 = x.astype(np.float64)
    x64 -= x64.max(axis=axis, keepdims=True)
    np.exp(x64, out=x64)
    x64 /= x64.sum(axis=axis, keepdims=True)
    return x64


def _elementwise(fn: str, args: list[np.ndarray], dt: np.dtype) -> np.ndarray:
    integer = dt.kind != "f"
    table: dict[str, Callable] = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _divsi if integer else np.divide,
        "max": np.maximum, "min": np.minimum, "neg": np.negative, "exp": np.exp, "sqrt": np.sqrt,
    }  # fmt: skip
    if fn not in table:
        raise ReferenceEvalError(f"unknown elementwise function '{fn}'")
    if integer and fn in ("exp", "sqrt"):
        raise ReferenceEvalError(f"elementwise {fn} needs a floating-point tensor")
    return table[fn](*args)


# Semantics of named operations added through `irkit.extend.register_named_op`:
# fn(operands, parameter values with defaults filled in, accumulation dtype) -> result.
ReferenceFn = Callable[[list[np.ndarray], dict[str, object], np.dtype], np.ndarray]
PLUGIN_MARK = "(registered by a plugin)"  # in every error of a plugin's semantics: the checker looks for it
REFERENCE_SEMANTICS: dict[str, ReferenceFn] = registry.REFERENCE_SEMANTICS


def named_op(name: str, args: list[np.ndarray], params: Mapping[str, object], dtype: np.dtype) -> np.ndarray:
    """The numpy value of a named operation (both levels), in `dtype`.

    `params` are Python values (`stride`, `padding`, `layout`, `axis`,
    `perm`, and for tensorop's `reduce`/`elementwise`: `dims`, `kind`, `fn`).
    """
    dt = np.dtype(dtype)
    acc = _acc_dtype(dt)
    if name == "matmul":
        a, b = args
        out = a.astype(acc) @ b.astype(acc)
    elif name == "batch_matmul":
        a, b = args
        if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
            raise ReferenceEvalError(f"batch_matmul of shapes {a.shape} and {b.shape}")
        a, b = a.astype(acc), b.astype(acc)
        out = np.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=acc)
        for k in range(a.shape[0]):  # one BLAS call per product: np.matmul on stacks may not use BLAS
            np.matmul(a[k], b[k], out=out[k])
    elif name == "conv2d":
        stride = int(params.get("stride", 1) or 1)  # type: ignore[arg-type]
        padding = int(params.get("padding", 0) or 0)  # type: ignore[arg-type]
        layout = str(params.get("layout", "nchw") or "nchw")
        out = _conv2d(args[0], args[1], stride, padding, layout, acc)
    elif name == "softmax":
        axis = params.get("axis", -1)
        out = _softmax(args[0], int(-1 if axis is None else axis))  # type: ignore[arg-type]
    elif name == "transpose":
        perm = params.get("perm")
        perm = list(reversed(range(args[0].ndim))) if perm is None else list(perm)  # type: ignore[call-overload]
        out = np.ascontiguousarray(np.transpose(args[0], perm))
    elif name == "reduce":
        dims = tuple(params.get("dims") or ())  # type: ignore[call-overload]
        kind = params.get("kind", "add") or "add"
        out = args[0].sum(axis=dims, dtype=acc) if kind == "add" else args[0].max(axis=dims)
    elif name == "elementwise":
        out = _elementwise(str(params.get("fn")), args, dt)
    elif name in REFERENCE_SEMANTICS:
        values = {k: p.default for k, p in NAMED_OPS[name].params.items()} if name in NAMED_OPS else {}
        values.update({k: v for k, v in params.items() if v is not None})
        try:
            out = REFERENCE_SEMANTICS[name]([np.asarray(a) for a in args], values, acc)
        except Exception as exc:  # a plugin's semantics: say whose code failed
            raise ReferenceEvalError(
                f"the reference semantics of '{name}' {PLUGIN_MARK} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if name in NAMED_OPS:
            _check_plugin_shape(name, [a.shape for a in args], values, np.shape(out))
    else:
        raise ReferenceEvalError(f"the reference has no semantics for the named operation '{name}'")
    return np.asarray(out).astype(dt, copy=False)


def _check_plugin_shape(name: str, shapes: list[tuple[int, ...]], values: dict, produced: tuple[int, ...]) -> None:
    """A plugin's numpy semantics must return the shape its own shape rule promises."""
    spec = NAMED_OPS[name]
    exprs = [[Const(n) for n in shape] for shape in shapes]
    promised = tuple(int(evaluate(e, {})) for e in spec.shape_fn(exprs, values)[0])
    if tuple(produced) != promised:
        raise ReferenceEvalError(
            f"the reference semantics of '{name}' {PLUGIN_MARK} returned shape {tuple(produced)}, "
            f"but its shape rule gives {promised} for operands of shapes {', '.join(str(s) for s in shapes)}"
        )


def _check_named_shape(stage: str, produced: tuple[int, ...], expected: tuple[int, ...]) -> None:
    if produced != expected:
        raise ReferenceEvalError(
            f"stage '{stage}': the operation produces shape {produced}, but the target has shape {expected}"
        )


# --- design level --------------------------------------------------------------------------


def _stmt_domain(stmt: d.StmtOp, shapes: Mapping[str, tuple[int, ...]]) -> tuple[list[str], list[int], int]:
    """(loops, extents, number of left-hand loops) of an index statement, einsum style."""
    target = stmt.target.data
    lhs = [parse_affine(e) for e in stmt.index_exprs]
    if not all(isinstance(e, Var) for e in lhs) or len({e.name for e in lhs}) != len(lhs):  # type: ignore[union-attr]
        raise ReferenceEvalError(f"stage '{target}': left-hand indices must be distinct plain variables")
    if target not in shapes:
        raise ReferenceEvalError(f"stage '{target}': '{target}' is not a declared tensor")
    if len(lhs) != len(shapes[target]):
        raise ReferenceEvalError(f"stage '{target}': {len(lhs)} indices for a rank-{len(shapes[target])} tensor")
    loops = [e.name for e in lhs]  # type: ignore[union-attr]
    extents = list(shapes[target])
    ranges: dict[str, set[int]] = {}
    reads = [op for op in stmt.body.walk() if isinstance(op, d.ReadOp)]
    for read in reads:
        name = read.tensor.data
        if name not in shapes:
            raise ReferenceEvalError(f"stage '{target}' reads '{name}', which is not a declared tensor")
        for pos, text in enumerate(read.index_exprs):
            idx = parse_affine(text)
            if isinstance(idx, Var) and idx.name not in loops[: len(lhs)]:
                if pos >= len(shapes[name]):
                    raise ReferenceEvalError(f"stage '{target}': too many indices for '{name}'")
                ranges.setdefault(idx.name, set()).add(shapes[name][pos])
                if idx.name not in loops:
                    loops.append(idx.name)
                    extents.append(shapes[name][pos])
    for name, values in ranges.items():
        if len(values) > 1:
            raise ReferenceEvalError(
                f"stage '{target}': reduction index {name} indexes dimensions of different sizes {sorted(values)}"
            )
    for read in reads:
        for text in read.index_exprs:
            for name in names_in(parse_affine(text)):
                if name not in loops:
                    raise ReferenceEvalError(
                        f"stage '{target}': index {name} has no range (it never indexes a dimension directly)"
                    )
    return loops, extents, len(lhs)


def _stmt_nest(stmt: d.StmtOp, arrays: Mapping[str, np.ndarray], out: np.ndarray) -> _Nest:
    target = stmt.target.data
    shapes = {name: a.shape for name, a in arrays.items()}
    shapes[target] = out.shape
    loops, extents, n_lhs = _stmt_domain(stmt, shapes)
    reads = [op for op in stmt.body.block.ops if isinstance(op, d.ReadOp)]
    accesses = []
    for read in reads:
        name = read.tensor.data
        if name not in arrays:
            raise ReferenceEvalError(f"stage '{target}' reads '{name}' before any statement writes it")
        if len(read.index_exprs) != arrays[name].ndim:
            raise ReferenceEvalError(
                f"stage '{target}': {len(read.index_exprs)} indices for the rank-{arrays[name].ndim} tensor '{name}'"
            )
        accesses.append(_Access(name, arrays[name], [parse_affine(e) for e in read.index_exprs]))
    block_ops = list(stmt.body.block.ops)
    terminator = block_ops[-1]
    assert isinstance(terminator, d.YieldOp)
    body = _Body(
        [op for op in block_ops if not isinstance(op, (d.ReadOp, d.YieldOp))],
        {r.result: k for k, r in enumerate(reads)},
        terminator.value,
    )
    combine = {"=": "assign", "+=": "add", "max=": "max"}[stmt.kind.data]
    return _Nest(
        target, loops, extents, [k < n_lhs for k in range(len(loops))], accesses, out, loops[:n_lhs], body, combine
    )


def _start_value(kind: str, dt: np.dtype) -> object:
    if kind == "+=":
        return 0
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


class _BufferPool:
    """Buffers of dead temporaries, handed out again: fresh pages are slow to fault in on large tensors."""

    def __init__(self) -> None:
        self.free: dict[int, list[np.ndarray]] = {}  # by size in bytes: a take costs O(1)

    def give(self, arr: np.ndarray) -> None:
        if arr.flags.c_contiguous:
            self.free.setdefault(arr.nbytes, []).append(arr)

    def take(self, decl: _TensorDecl) -> np.ndarray:
        dt = np.dtype(NUMPY_DTYPES[decl.dtype])
        nbytes = math.prod(decl.shape) * dt.itemsize
        same = self.free.get(nbytes)
        if same:
            return same.pop().view(dt).reshape(decl.shape)
        return np.empty(decl.shape, dtype=dt)


def _stage_reads(op: Operation) -> set[str]:
    if isinstance(op, d.StmtOp):
        return {r.tensor.data for r in op.body.walk() if isinstance(r, d.ReadOp)}
    if isinstance(op, d.NamedOp):
        return set(op.operand_names)
    return set()


def evaluate_design(
    obj: ModuleOp | d.DesignOp,
    inputs: Mapping[str, np.ndarray],
    sizes: Mapping[str, int] | None = None,
    *,
    include_temps: bool = False,
) -> dict[str, np.ndarray]:
    """Run a (checked) design document with numpy; returns every output tensor (and temps if asked).

    `sizes` override the document's defaults; a size without either raises
    `ReferenceEvalError` (a `ValueError`).  Inputs must have the declared
    shapes; they are read, never written.  See the module docstring for the
    semantics.
    """
    design = _find_design(obj)
    sizes = resolve_sizes(design, sizes)
    decls = _design_tensors(design, sizes)
    arrays: dict[str, np.ndarray] = dict(_bind_inputs(decls, inputs))
    stages = [op for op in design.body.block.ops if isinstance(op, (d.StmtOp, d.NamedOp))]
    last_read = {name: k for k, op in enumerate(stages) for name in _stage_reads(op)}
    dying: dict[int, list[str]] = {}  # stage -> the temps it reads for the last time
    for name, k in last_read.items():
        dying.setdefault(k, []).append(name)
    pool = _BufferPool()
    with np.errstate(all="ignore"):
        for k, op in enumerate(stages):
            target = op.target.data
            decl = decls.get(target)
            if decl is None:
                raise ReferenceEvalError(f"stage '{target}' writes an undeclared tensor")
            if decl.role == "input":
                raise ReferenceEvalError(f"stage '{target}' writes an input tensor")
            dt = np.dtype(NUMPY_DTYPES[decl.dtype])
            if isinstance(op, d.StmtOp):
                out = pool.take(decl)  # uninitialised: `=` writes every element
                if op.kind.data != "=":
                    out.fill(_start_value(op.kind.data, dt))
                run_nest(_stmt_nest(op, arrays, out))
            else:
                missing = [n for n in op.operand_names if n not in arrays]
                if missing:
                    raise ReferenceEvalError(f"stage '{target}' reads '{missing[0]}' before any statement writes it")
                spec = get_named_op(op.op_name.data)
                params = spec.values(dict(op.params.data))
                out = np.ascontiguousarray(named_op(spec.name, [arrays[n] for n in op.operand_names], params, dt))
                _check_named_shape(target, out.shape, decl.shape)  # a fresh array: used as it is, no copy
            arrays[target] = out
            if not include_temps:  # free temps nobody reads any more (per stage: linear in the document)
                for name in (*dying.get(k, ()), target):
                    decl_ = decls.get(name)
                    if decl_ is not None and decl_.role == "temp" and name in arrays and last_read.get(name, -1) <= k:
                        pool.give(arrays.pop(name))
    return {
        name: arrays[name]
        for name, decl in decls.items()
        if name in arrays and (decl.role == "output" or (include_temps and decl.role == "temp"))
    }


# --- tensorop level --------------------------------------------------------------------------


def _generic_nest(
    op: t.GenericOp, buffers: Mapping[SSAValue, np.ndarray], names: Mapping[SSAValue, str], symbols: list[int]
) -> _Nest:
    stage = op.stage.data
    n_loops = len(op.domain.data.results)
    loops = [f"d{i}" for i in range(n_loops)]
    extents = list(op.domain.data.eval([], symbols))
    if len(op.outs) != 1:
        raise ReferenceEvalError(
            f"stage '{stage}': the reference evaluates generics with one output, this one has {len(op.outs)}"
        )
    maps = op.maps
    operands = [*op.ins, *op.outs]
    for v in operands:
        if v not in buffers:
            raise ReferenceEvalError(f"stage '{stage}': an operand is not a kernel tensor or an allocation")
    exprs = [[_from_affine(e, loops, symbols) for e in m.results] for m in maps]
    out_exprs = exprs[-1]
    if not all(isinstance(e, Var) for e in out_exprs):
        raise ReferenceEvalError(
            f"stage '{stage}': the output's indexing map must be a permutation of loops, got {maps[-1]}"
        )
    accesses = [_Access(names.get(v, "?"), buffers[v], exprs[k]) for k, v in enumerate(op.ins)]
    block = op.body.block
    terminator = block.last_op
    assert isinstance(terminator, t.YieldOp)
    args = list(block.args)
    out_leaf = args[-1]
    body = _Body(
        [o for o in block.ops if o is not terminator],
        {a: k for k, a in enumerate(args[:-1])},
        terminator.values[0],
        out_leaf,
    )
    parallel = [kind == t.PARALLEL for kind in op.iterator_kinds]
    combine = "assign"
    if not all(parallel):
        combine = "fold"
        owner = body.result.owner
        kinds = {
            "arith.addf": "add",
            "arith.addi": "add",
            "arith.maximumf": "max",
            "arith.maxsi": "max",
            "arith.minimumf": "min",
            "arith.minsi": "min",
            "arith.mulf": "mul",
            "arith.muli": "mul",
        }
        if isinstance(owner, Operation) and owner.name in kinds and out_leaf.uses.get_length() == 1:
            a, b = owner.operands
            other = b if a is out_leaf else a if b is out_leaf else None
            if other is not None and not body.depends_on(other, out_leaf):
                combine = kinds[owner.name]
                body = _Body([o for o in body.ops if o is not owner], body.leaves, other, out_leaf)
    labels = [n.data for n in op.loop_names.data]
    return _Nest(
        stage,
        loops,
        extents,
        parallel,
        accesses,
        buffers[op.outs[0]],
        [e.name for e in out_exprs],
        body,
        combine,
        labels,
    )  # type: ignore[union-attr]


def _named_params(op: t.NamedTensorOp) -> dict[str, object]:
    if op.params is None:
        return {}
    return {key: param_value(value) for key, value in op.params.data.items()}


def evaluate_tensorop(
    obj: ModuleOp | func.FuncOp,
    inputs: Mapping[str, np.ndarray],
    sizes: Mapping[str, int] | None = None,
    *,
    include_temps: bool = False,
) -> dict[str, np.ndarray]:
    """Run a tensorop kernel (`func.func`, see `irkit.kernel_abi`) with numpy; returns its output tensors.

    Output buffers start zeroed, temporaries (`tensorop.alloc`) too; named
    ops overwrite their output; a `tensorop.generic` evaluates its body per
    point of its domain, with the output's block argument bound to the
    current element (a reduction combines through the body, as linalg does).
    """
    kernel = _find_kernel(obj)
    sizes = resolve_sizes(kernel, sizes)
    size_args, _ = kernel_args(kernel)
    tensor_args, decls = _kernel_tensors(kernel, sizes)
    bound = _bind_inputs(decls, inputs)
    ints: dict[SSAValue, int] = {s.value: sizes[s.name] for s in size_args}
    buffers: dict[SSAValue, np.ndarray] = {}
    names: dict[SSAValue, str] = {}
    result: dict[str, np.ndarray] = {}
    for arg in tensor_args:
        buffers[arg.value] = bound[arg.name] if arg.role == "input" else _new_buffer(decls[arg.name])
        names[arg.value] = arg.name
        if arg.role == "output":
            result[arg.name] = buffers[arg.value]

    def symbols_of(op: Operation, values) -> list[int]:
        try:
            return [ints[v] for v in values]
        except KeyError:
            raise ReferenceEvalError(f"'{op.name}' takes a size that is not a kernel argument") from None

    with np.errstate(all="ignore"):
        for op in kernel.body.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            if isinstance(op, t.AllocOp):
                syms = symbols_of(op, op.sizes)
                shape = tuple(op.shape.data.eval([], syms))
                assert isinstance(op.result.type, MemRefType)
                buffers[op.result] = np.zeros(shape, dtype=_np_dtype(op.result.type.element_type))
                names[op.result] = op.tensor_name.data
                if include_temps:
                    result[op.tensor_name.data] = buffers[op.result]
            elif isinstance(op, t.FillOp):
                target = buffers[op.out[0]]
                value = op.value
                if not isinstance(value, (FloatAttr, IntegerAttr)):
                    raise ReferenceEvalError(f"stage '{op.stage.data}': fill value {value} is not a number")
                target[...] = np.asarray(value.value.data).astype(target.dtype)
            elif isinstance(op, t.GenericOp):
                run_nest(_generic_nest(op, buffers, names, symbols_of(op, op.sizes)))
            elif isinstance(op, t.NamedTensorOp):
                name = op.name.removeprefix("tensorop.")
                out = buffers[op.outs[0]]
                value = named_op(name, [buffers[v] for v in op.ins], _named_params(op), out.dtype)
                _check_named_shape(op.stage.data, value.shape, out.shape)
                np.copyto(out, value)
            else:
                raise ReferenceEvalError(f"the reference has no semantics for '{op.name}' in a kernel")
    return result


# --- reduction lengths, tolerances, comparison -----------------------------------------------


def _named_length(name: str, shapes: list[tuple[int, ...]], params: Mapping[str, object]) -> int:
    if name == "reduce":  # tensorop-only
        return math.prod(shapes[0][k] for k in (params.get("dims") or ()))  # type: ignore[union-attr]
    spec = NAMED_OPS.get(name)
    if spec is None:  # elementwise, or a tensorop-only operation of a plugin
        return 1
    return spec.terms_per_element(shapes, dict(params))


def reduction_lengths(
    obj: ModuleOp | d.DesignOp | func.FuncOp, sizes: Mapping[str, int] | None = None
) -> dict[str, int]:
    """For every computed tensor, the longest chain of accumulated terms behind an element.

    A stage's own length is the number of terms it reduces per element (1
    for elementwise work); through a pipeline the lengths of what it reads
    add up.  This is the `reduction_length` to give `tolerance`/`compare`.
    """
    sizes = resolve_sizes(obj, sizes)
    lengths: dict[str, int] = {}
    if _is_kernel(obj):
        kernel = _find_kernel(obj)  # type: ignore[arg-type]
        tensor_args, decls = _kernel_tensors(kernel, sizes)
        names = {arg.value: arg.name for arg in tensor_args}
        shapes = {arg.value: decls[arg.name].shape for arg in tensor_args}
        syms = [sizes[s.name] for s in kernel_args(kernel)[0]]
        for op in kernel.body.block.ops:
            if isinstance(op, t.AllocOp):
                names[op.result] = op.tensor_name.data
                shapes[op.result] = tuple(op.shape.data.eval([], syms))
            elif isinstance(op, t.GenericOp):
                ext = op.domain.data.eval([], syms)
                own = math.prod(e for e, k in zip(ext, op.iterator_kinds) if k == t.REDUCTION)
                before = max([lengths.get(names.get(v, ""), 0) for v in op.ins], default=0)
                target = names.get(op.outs[0], "?")
                lengths[target] = max(lengths.get(target, 0), max(1, own) + before)
            elif isinstance(op, t.NamedTensorOp):
                own = _named_length(op.name.removeprefix("tensorop."), [shapes[v] for v in op.ins], _named_params(op))
                before = max([lengths.get(names.get(v, ""), 0) for v in op.ins], default=0)
                lengths[names.get(op.outs[0], "?")] = max(1, own) + before
        return lengths
    design = _find_design(obj)  # type: ignore[arg-type]
    decls = _design_tensors(design, sizes)
    shapes = {n: decl.shape for n, decl in decls.items()}
    for op in design.body.block.ops:
        if isinstance(op, d.StmtOp):
            loops, extents, n_lhs = _stmt_domain(op, shapes)
            own = math.prod(extents[n_lhs:])
        elif isinstance(op, d.NamedOp):
            spec = get_named_op(op.op_name.data)
            own = _named_length(spec.name, [shapes[n] for n in op.operand_names], spec.values(dict(op.params.data)))
        else:
            continue
        before = max([lengths.get(n, 0) for n in _stage_reads(op)], default=0)
        lengths[op.target.data] = max(1, own) + before
    return lengths


def _dtype_of(dtype: object) -> np.dtype:
    if isinstance(dtype, str) and dtype in NUMPY_DTYPES:
        return np.dtype(NUMPY_DTYPES[dtype])
    if isinstance(dtype, Attribute):
        return np.dtype(NUMPY_DTYPES[dtype_name(dtype)])
    return np.dtype(dtype)  # type: ignore[call-overload]


def tolerance(dtype: object, reduction_length: int = 1, scale: float = 1.0) -> tuple[float, float]:
    """(atol, rtol) for comparing a compiled kernel's output with this oracle: pass if
    `|actual - expected| <= atol + rtol * |expected|` element by element.

    Integers (`i32`): (0, 0), exact; wrapping integer arithmetic does not
    depend on the order of operations.

    Floats, with eps the machine epsilon (2**-23 for `f32`) and n the
    reduction length: `rtol = atol / scale = max(16 eps, 4 eps sqrt(n))`.

    Why.  The oracle sums in float64 and rounds once (module docstring),
    so the difference is the kernel's own rounding error.  Elementwise
    work (n = 1) is a chain of a few correctly rounded ops plus `exp` or
    `sqrt` within a few ulps, and a compiler may contract `a * b + c` into
    an FMA: 16 eps relative covers that.  A reduction of n terms in the
    element type, in any order the schedule picks (sequential, blocked,
    SIMD lanes), has an error that grows like eps * sqrt(n) times the size
    of its partial sums when rounding errors are random -- the
    deterministic worst case, n eps, is a bound nobody meets on data
    like `random_inputs`.  The relative part covers elements of ordinary
    size; where the sum cancels (an element near 0 among elements of size
    `scale`), the error is still of the size of the partial sums, so the
    absolute part is taken relative to `scale`, the largest magnitude in
    the expected output (`compare` passes it).  For a 1024-long f32 dot
    product of values in [-1, 1], the largest error over a million
    elements is about 0.6 eps n, against a bound of about 6.7 eps n: a
    margin of ten, while a dropped or duplicated term (an error of the size
    of one product, ~1/3) is a thousand times the bound.  The same
    reasoning holds for `f64` with its eps, where the oracle itself sums in
    float64; the margin covers both errors.
    """
    dt = _dtype_of(dtype)
    if dt.kind != "f":
        return 0.0, 0.0
    eps = float(np.finfo(dt).eps)
    n = max(1, int(reduction_length))
    rtol = max(16 * eps, 4 * eps * math.sqrt(n))
    return rtol * float(scale), rtol


@dataclass
class Comparison:
    """What `compare` found: the largest errors and whether they are within tolerance."""

    ok: bool
    max_abs: float
    max_rel: float
    atol: float
    rtol: float
    n_bad: int = 0
    worst: tuple[int, ...] | None = None  # index of the element furthest outside the tolerance
    actual_at_worst: float | None = None
    expected_at_worst: float | None = None
    message: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.message and not self.n_bad:
            return self.message
        head = "ok" if self.ok else f"MISMATCH in {self.n_bad} element{'s' if self.n_bad != 1 else ''}"
        text = (
            f"{head}: max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g} "
            f"(atol {self.atol:.3g}, rtol {self.rtol:.3g})"
        )
        if not self.ok and self.worst is not None:
            text += f"; worst at {list(self.worst)}: got {self.actual_at_worst!r}, expected {self.expected_at_worst!r}"
        return text


def compare(
    actual: np.ndarray, expected: np.ndarray, dtype: object = None, reduction_length: int = 1, chunk: int = 1 << 22
) -> Comparison:
    """Compare a kernel's output with the oracle's under `tolerance(dtype, reduction_length, max|expected|)`.

    NaNs must match NaNs and infinities must be equal; integer outputs
    must be equal.  Works in blocks, so comparing large outputs stays
    within a little memory.
    """
    a, e = np.asarray(actual), np.asarray(expected)
    dt = _dtype_of(dtype if dtype is not None else e.dtype)
    if a.shape != e.shape:
        return Comparison(False, math.inf, math.inf, 0.0, 0.0, message=f"MISMATCH: shape {a.shape}, expected {e.shape}")
    flat_a, flat_e = a.reshape(-1), e.reshape(-1)
    if dt.kind != "f":
        diff = np.abs(flat_a.astype(np.int64) - flat_e.astype(np.int64))
        bad = np.flatnonzero(diff)
        max_abs = float(diff.max(initial=0))
        nz = flat_e != 0
        max_rel = float((diff[nz] / np.abs(flat_e[nz].astype(np.float64))).max(initial=0.0))
        worst = int(bad[np.argmax(diff[bad])]) if bad.size else None
        return _report(a, e, bad.size, max_abs, max_rel, 0.0, 0.0, worst)
    finite = [
        np.abs(flat_e[i : i + chunk][np.isfinite(flat_e[i : i + chunk])]).max(initial=0.0)
        for i in range(0, flat_e.size, chunk)
    ]
    scale = float(max(finite, default=0.0))
    atol, rtol = tolerance(dt, reduction_length, scale)
    n_bad, max_abs, max_rel, worst, worst_excess = 0, 0.0, 0.0, None, -math.inf
    with np.errstate(all="ignore"):
        for i in range(0, flat_e.size, chunk):
            x = flat_a[i : i + chunk].astype(np.float64)
            y = flat_e[i : i + chunk].astype(np.float64)
            diff = np.abs(x - y)
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            diff[same] = 0.0
            bad = ~same & ~(diff <= atol + rtol * np.abs(y))  # NaN differences are bad
            bad |= ~same & ~(np.isfinite(x) & np.isfinite(y))  # so is any other non-finite mismatch
            n_bad += int(bad.sum())
            finite_diff = diff[np.isfinite(diff)]
            max_abs = max(max_abs, float(finite_diff.max(initial=0.0)))
            if finite_diff.size < diff.size:
                max_abs = math.inf
            rel = diff / np.abs(y)
            rel = rel[(y != 0) & ~np.isnan(rel)]
            max_rel = max(max_rel, float(rel.max(initial=0.0)))
            excess = np.where(bad, np.nan_to_num(diff - (atol + rtol * np.abs(y)), nan=np.inf, posinf=np.inf), -np.inf)
            k = int(np.argmax(excess))
            if bad.any() and excess[k] > worst_excess:
                worst_excess, worst = float(excess[k]), i + k
    return _report(a, e, n_bad, max_abs, max_rel, atol, rtol, worst)


def _report(
    a: np.ndarray,
    e: np.ndarray,
    n_bad: int,
    max_abs: float,
    max_rel: float,
    atol: float,
    rtol: float,
    worst: int | None,
) -> Comparison:
    where = None if worst is None else tuple(int(v) for v in np.unravel_index(worst, e.shape))
    return Comparison(
        ok=n_bad == 0,
        max_abs=max_abs,
        max_rel=max_rel,
        atol=atol,
        rtol=rtol,
        n_bad=n_bad,
        worst=where,
        actual_at_worst=None if where is None else a[where].item(),
        expected_at_worst=None if where is None else e[where].item(),
    )
