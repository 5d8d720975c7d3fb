"""Run an exported kernel in xDSL's own interpreter (`xdsl.interpreter`).

After `export-affine`, `affine-for-to-scf` and xDSL's `lower-affine`, a
kernel is `func` + `scf` + `memref` + `arith` + `math`: dialects xDSL's
interpreter knows.  It knows most of their ops; `IrkitFunctions` adds the
ones irkit emits that xDSL 0.75 has no implementation for (float division
and negation, integer min/max and ceil-division, the rest of `math`, float
casts, `memref.alloca`) and replaces `memref.alloc`'s, which ignores
dynamic extents.  Each added op is computed as irkit's loop interpreter
computes it (numpy in the element type), so that an exported kernel run
here is a second, independent execution of the same loops.

The kernel ABI is irkit's (`irkit.kernel_abi`): sizes first, then the
tensors; inputs are numpy arrays, outputs are returned by name.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from math import prod
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects import math as xmath
from xdsl.dialects import memref as xmemref
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    MemRefType,
    ModuleOp,
)
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.interpreters import math as xdsl_math
from xdsl.interpreters import register_implementations
from xdsl.interpreters.builtin import scalar_attr, xtype_for_el_type
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr
from xdsl.ir import Attribute
from xdsl.utils.exceptions import InterpretationError

from irkit import kernel_abi
from irkit.oracle.common import numpy_dtype

INDEX_BITWIDTH = 64


def _np_dtype(t: Attribute) -> type[np.generic]:
    dt = numpy_dtype(t)
    if dt is None or dt.kind != "f":
        raise InterpretationError(f"no float type for {t}")
    return dt.type


def _float_unary(fn: Callable[[Any], Any]) -> Callable[..., PythonValues]:
    def run(self: InterpreterFunctions, interpreter: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        dt = _np_dtype(op.result.type)
        return (FloatAttr(float(fn(dt(args[0].value.data))), op.result.type),)

    return run


def _float_binary(fn: Callable[[Any, Any], Any]) -> Callable[..., PythonValues]:
    def run(self: InterpreterFunctions, interpreter: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        dt = _np_dtype(op.result.type)
        with np.errstate(all="ignore"):
            value = fn(dt(args[0].value.data), dt(args[1].value.data))
        return (FloatAttr(float(value), op.result.type),)

    return run


def _int_binary(fn: Callable[[int, int], int]) -> Callable[..., PythonValues]:
    def run(self: InterpreterFunctions, interpreter: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        value = fn(args[0].value.data, args[1].value.data)
        return (scalar_attr(value, op.result.type, interpreter.index_bitwidth),)

    return run


def _ceildiv(a: int, b: int) -> int:
    return -((-a) // b)


def _to_float(self: InterpreterFunctions, interpreter: Interpreter, op: Any, args: PythonValues) -> PythonValues:
    dt = _np_dtype(op.result.type)
    return (FloatAttr(float(dt(args[0].value.data)), op.result.type),)


def _fptosi(self: InterpreterFunctions, interpreter: Interpreter, op: Any, args: PythonValues) -> PythonValues:
    return (scalar_attr(int(math.trunc(args[0].value.data)), op.result.type, interpreter.index_bitwidth),)


def _round_half_away(x: Any) -> Any:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _buffer(memref_type: MemRefType, extents: list[int], bitwidth: int) -> ShapedArray[Any]:
    xtype = xtype_for_el_type(memref_type.get_element_type(), bitwidth)  # type: ignore[arg-type]
    return ShapedArray(TypedPtr[Any].zeros(prod(extents), xtype=xtype), list(extents))


def _extents(op: xmemref.AllocOp | xmemref.AllocaOp, args: PythonValues) -> list[int]:
    """The buffer's shape: static extents from the type, dynamic ones from the operands, in order."""
    dynamic = iter(a.value.data for a in args)
    return [next(dynamic) if n < 0 else n for n in op.memref.type.get_shape()]


@register_impls
class IrkitFunctions(InterpreterFunctions):
    """Implementations of the ops irkit emits that xDSL 0.75's interpreter lacks or gets wrong."""

    run_divf = impl(arith.DivfOp)(_float_binary(operator.truediv))
    run_maxnumf = impl(arith.MaxnumfOp)(_float_binary(np.fmax))
    run_minnumf = impl(arith.MinnumfOp)(_float_binary(np.fmin))
    run_negf = impl(arith.NegfOp)(_float_unary(operator.neg))
    run_maxsi = impl(arith.MaxSIOp)(_int_binary(max))
    run_minsi = impl(arith.MinSIOp)(_int_binary(min))
    run_ceildivsi = impl(arith.CeilDivSIOp)(_int_binary(_ceildiv))
    run_extf = impl(arith.ExtFOp)(_to_float)
    run_truncf = impl(arith.TruncFOp)(_to_float)
    run_sitofp = impl(arith.SIToFPOp)(_to_float)
    run_fptosi = impl(arith.FPToSIOp)(_fptosi)
    run_powf = impl(xmath.PowFOp)(_float_binary(np.power))
    run_atan2 = impl(xmath.Atan2Op)(_float_binary(np.arctan2))
    run_copysign = impl(xmath.CopySignOp)(_float_binary(np.copysign))
    run_exp2 = impl(xmath.Exp2Op)(_float_unary(np.exp2))
    run_expm1 = impl(xmath.ExpM1Op)(_float_unary(np.expm1))
    run_log2 = impl(xmath.Log2Op)(_float_unary(np.log2))
    run_log10 = impl(xmath.Log10Op)(_float_unary(np.log10))
    run_log1p = impl(xmath.Log1pOp)(_float_unary(np.log1p))
    run_cbrt = impl(xmath.CbrtOp)(_float_unary(np.cbrt))
    run_absf = impl(xmath.AbsFOp)(_float_unary(np.abs))
    run_tanh = impl(xmath.TanhOp)(_float_unary(np.tanh))
    run_sin = impl(xmath.SinOp)(_float_unary(np.sin))
    run_cos = impl(xmath.CosOp)(_float_unary(np.cos))
    run_tan = impl(xmath.TanOp)(_float_unary(np.tan))
    run_floor = impl(xmath.FloorOp)(_float_unary(np.floor))
    run_ceil = impl(xmath.CeilOp)(_float_unary(np.ceil))
    run_trunc = impl(xmath.TruncOp)(_float_unary(np.trunc))
    run_round = impl(xmath.RoundOp)(_float_unary(_round_half_away))
    run_rsqrt = impl(xmath.RsqrtOp)(_float_unary(lambda x: 1 / np.sqrt(x)))
    run_erf = impl(xmath.ErfOp)(_float_unary(lambda x: math.erf(float(x))))

    @impl(xmath.FmaOp)
    def run_fma(self, interpreter: Interpreter, op: xmath.FmaOp, args: PythonValues) -> PythonValues:
        a, b, c = (x.value.data for x in args)
        return (FloatAttr(a * b + c, op.result.type),)

    @impl(xmemref.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: xmemref.AllocOp, args: PythonValues) -> PythonValues:
        return (_buffer(op.memref.type, _extents(op, args), interpreter.index_bitwidth),)

    @impl(xmemref.AllocaOp)
    def run_alloca(self, interpreter: Interpreter, op: xmemref.AllocaOp, args: PythonValues) -> PythonValues:
        return (_buffer(op.memref.type, _extents(op, args), interpreter.index_bitwidth),)


def make_interpreter(module: ModuleOp) -> Interpreter:
    """xDSL's interpreter over `module` with xDSL's implementations and irkit's additions."""
    interpreter = Interpreter(module, index_bitwidth=INDEX_BITWIDTH)
    register_implementations(interpreter, Context())
    interpreter.register_implementations(xdsl_math.MathFunctions())  # not in xDSL's default set
    interpreter.register_implementations(IrkitFunctions(), override=True)
    return interpreter


def kernel_function(module: ModuleOp) -> func.FuncOp:
    """The module's one kernel (irkit modules hold one)."""
    kernels = [op for op in kernel_abi.find_kernels(module) if op.body.blocks]
    if len(kernels) != 1:
        raise InterpretationError(f"expected one kernel function, found {len(kernels)}")
    return kernels[0]


def _shaped(array: np.ndarray, memref_type: MemRefType) -> ShapedArray[Any]:
    xtype = xtype_for_el_type(memref_type.get_element_type(), INDEX_BITWIDTH)  # type: ignore[arg-type]
    flat = [v.item() for v in np.ascontiguousarray(array).ravel()]
    return ShapedArray(TypedPtr[Any].new(flat, xtype=xtype), list(array.shape))


def _array(shaped: ShapedArray[Any], element: Attribute) -> np.ndarray:
    dtype = np.dtype(_np_dtype(element)) if isinstance(element, AnyFloat) else np.int64
    return np.array(shaped.data, dtype=dtype).reshape(shaped.shape)


def run_kernel(
    module: ModuleOp, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]
) -> dict[str, np.ndarray]:
    """Call the module's kernel in xDSL's interpreter; returns its outputs by tensor name.

    `inputs` holds every input tensor by name (logical shape), `sizes` every size; output
    buffers start at zero.  Layouts do not matter here: xDSL's buffers are indexed by the
    logical indices the loads and stores compute."""
    kernel = kernel_function(module)
    size_args, tensor_args = kernel_abi.kernel_args(kernel)
    symbols = [int(sizes[s.name]) for s in size_args]
    args: dict[Any, Any] = {s.value: scalar_attr(v, IndexType(), INDEX_BITWIDTH) for s, v in zip(size_args, symbols)}
    outputs: dict[str, ShapedArray[Any]] = {}
    for t in tensor_args:
        memref_type = t.value.type
        assert isinstance(memref_type, MemRefType)
        if t.role == "input":
            args[t.value] = _shaped(np.asarray(inputs[t.name]), memref_type)
            continue
        if t.role == "inout":  # a copy: the caller's array stays as it was
            outputs[t.name] = args[t.value] = _shaped(np.array(inputs[t.name]), memref_type)
            continue
        shape = [int(n) for n in t.shape.eval([], symbols)]
        outputs[t.name] = args[t.value] = _buffer(memref_type, shape, INDEX_BITWIDTH)
    for sc in kernel_abi.kernel_scalars(kernel):  # by value
        value = np.asarray(inputs[sc.name]).astype(np.float64 if sc.dtype != "i32" else np.int64).item()
        args[sc.value] = scalar_attr(value, sc.value.type, INDEX_BITWIDTH)
    ordered = tuple(args[a] for a in kernel.body.block.args)
    make_interpreter(module).call_op(kernel.sym_name.data, ordered)
    element = {t.name: t.value.type.get_element_type() for t in tensor_args}  # type: ignore[attr-defined]
    return {name: _array(buf, element[name]) for name, buf in outputs.items()}
