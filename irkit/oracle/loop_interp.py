"""A Python interpreter of loop-level kernels, for checks on tiny inputs.

`run_loop_kernel(module, inputs, sizes)` runs the kernel `func.func` of a
loop-level module (see `irkit.kernel_abi`) on numpy arrays and returns its
output tensors, as the compiled C would compute them.  It exists so that
the semantic check (`irkit.checks.semantics`) can run loop IR on a machine
without a C compiler, and so that the C backend has an independent
implementation to be compared with.  Correctness over speed: every
iteration of every loop runs one Python closure per op, a few hundred
thousand ops a second, which is plenty for the sizes a check uses (5 to 10
per dimension) and hopeless for real ones.

Semantics, as `irkit.dialects.loop` defines them and `irkit.backends.c`
writes them in C:

- `loop.for`: the lower bound is the *maximum* of the lower map's results,
  the upper bound (exclusive) the *minimum* of the upper map's results, the
  step a positive constant; an empty range runs nothing.  `parallel`,
  `vector` and `unroll` facts change nothing here: iterations run in order.
- Affine maps use floor division and a remainder with the divisor's sign
  (`floordiv`, `mod`), `ceildiv` rounds up: Python's `//` and `%`.
- `loop.load`/`loop.store` address one element by logical indices (the
  layout is the C backend's business); an index outside the buffer's shape
  is a `LoopInterpError` naming the buffer, the element and the loop
  variables, where C would read or corrupt memory.
- `loop.alloc` and `loop.local` give fresh buffers filled with a *poison*
  value (NaN for floats, 0x5A5A5A5A for `i32`), as are the output tensors
  on entry: C leaves them uninitialised, and a kernel that reads an element
  before writing it, or never writes an output element, shows as NaN
  instead of a plausible number.  `loop.free` makes later accesses an error.
- Scalars are numpy scalars of the op's element type for floats (`f32`
  arithmetic rounds to `f32` op by op, as C does without contraction) and
  Python integers wrapped to the type's width for integers (`i32` wraps
  like the C backend's helpers; `divsi`/`remsi` truncate toward zero like
  C, and a division by zero is an error, where C would trap).
  `maximumf`/`minimumf` propagate NaN like the C helpers, `maxnumf`/`minnumf`
  are `fmax`/`fmin`.  `math.*` ops are numpy's functions in the element type
  (libm may differ by an ulp; the check's tolerance covers that).

Runaway loops are stopped: a run may execute at most `max_iterations` loop
iterations in all (`DEFAULT_MAX_ITERATIONS`), then `LoopInterpError` says
the sizes are too large for an interpreter.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineMap,
)

from irkit.affine.printer import PYTHON
from irkit.dialects.loop import AllocOp, ForOp, FreeOp, LoadOp, LocalOp, StoreOp, enclosing_loops
from irkit.kernel_abi import find_kernels, kernel_args, kernel_scalars
from irkit.oracle.common import ReferenceEvalError, numpy_dtype
from irkit.oracle.inputs import resolve_sizes

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "LoopInterpError",
    "UnsupportedIR",
    "new_buffer",
    "poison_value",
    "run_loop_kernel",
]

DEFAULT_MAX_ITERATIONS = 5_000_000
"""Loop iterations one run may execute: about a minute of interpretation at worst."""

I32_POISON = 0x5A5A5A5A

Env = list
"""The values of a run, one slot per SSA value (index values and scalars, buffers as numpy arrays)."""
Step = Callable[[Env], None]


class LoopInterpError(ReferenceEvalError):
    """The kernel cannot be run: unsupported IR, an access out of bounds, a division by zero, too much work."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


class UnsupportedIR(LoopInterpError):
    """IR the interpreter has no semantics for (found before anything runs)."""


# --- buffers ------------------------------------------------------------------------------------


def element_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype of a scalar or element type."""
    dt = numpy_dtype(t)
    if dt is None:
        raise UnsupportedIR(f"the interpreter has no values of type {t}")
    return dt


def poison_value(dtype: np.dtype) -> object:
    """What an element holds before anything writes it: NaN for floats, 0x5A5A5A5A (or 0x5A...) for integers."""
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "b":
        return True
    return int.from_bytes(b"\x5a" * dtype.itemsize, "little", signed=True)


def new_buffer(shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """A buffer of logical `shape` filled with the poison value."""
    return np.full(tuple(shape), poison_value(np.dtype(dtype)), dtype=dtype)


# --- affine maps as Python -----------------------------------------------------------------------


def _map_function(amap: AffineMap, dims: Sequence[str], syms: Sequence[str], combine: str) -> Callable[[Env], object]:
    """A function of the environment giving the map's results: combined by `max`/`min`, or as a tuple.

    The source is built from integers and slot numbers only (nothing user-written), then
    evaluated without builtins: one Python expression per map instead of a tree walk per use.
    """
    results = [PYTHON.print(r, dims, syms) for r in amap.results]
    if combine == "tuple":
        body = f"({', '.join(results)},)"
    elif len(results) == 1:
        body = results[0]
    else:
        body = f"{combine}({', '.join(results)})"
    return eval(f"lambda env: {body}", {"__builtins__": {}, "max": max, "min": min})  # noqa: S307


# --- scalar semantics ------------------------------------------------------------------------------


def _width(t: Attribute) -> int:
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType):
        return t.width.data
    raise UnsupportedIR(f"{t} is not an integer type")


def _wrapper(bits: int) -> Callable[[int], int]:
    """Two's complement wrap-around to `bits` bits (i1 is 0 or 1)."""
    if bits == 1:
        return lambda x: int(x) & 1
    half, mask = 1 << (bits - 1), (1 << bits) - 1
    return lambda x: ((int(x) + half) & mask) - half


def _unsigned(bits: int) -> Callable[[int], int]:
    mask = (1 << bits) - 1
    return lambda x: int(x) & mask


def _trunc_div(a: int, b: int) -> int:
    """C division: the quotient rounded toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _maximumf(a, b):
    return a if (a > b or a != a) else b


def _minimumf(a, b):
    return a if (a < b or a != a) else b


def _round_half_away(x):
    """C `round`: halves go away from zero (numpy's `round` goes to even)."""
    if not np.isfinite(x):
        return x
    r = np.floor(np.abs(x))
    if np.abs(x) - r >= 0.5:
        r = r + 1
    return np.copysign(r, x)


_FLOAT_BINARY: dict[str, Callable] = {
    "arith.addf": operator.add,
    "arith.subf": operator.sub,
    "arith.mulf": operator.mul,
    "arith.divf": operator.truediv,
    "arith.maximumf": _maximumf,
    "arith.minimumf": _minimumf,
    "arith.maxnumf": np.fmax,
    "arith.minnumf": np.fmin,
    "math.powf": np.power,
    "math.atan2": np.arctan2,
    "math.copysign": np.copysign,
}
_FLOAT_UNARY: dict[str, Callable] = {
    "arith.negf": operator.neg,
    "math.exp": np.exp,
    "math.exp2": np.exp2,
    "math.expm1": np.expm1,
    "math.log": np.log,
    "math.log2": np.log2,
    "math.log10": np.log10,
    "math.log1p": np.log1p,
    "math.sqrt": np.sqrt,
    "math.cbrt": np.cbrt,
    "math.absf": np.abs,
    "math.tanh": np.tanh,
    "math.sin": np.sin,
    "math.cos": np.cos,
    "math.tan": np.tan,
    "math.floor": np.floor,
    "math.ceil": np.ceil,
    "math.trunc": np.trunc,
    "math.round": _round_half_away,
}
_INT_BINARY: dict[str, Callable[[int, int], int]] = {
    "arith.addi": operator.add,
    "arith.subi": operator.sub,
    "arith.muli": operator.mul,
    "arith.andi": operator.and_,
    "arith.ori": operator.or_,
    "arith.xori": operator.xor,
    "arith.maxsi": max,
    "arith.minsi": min,
}
_CMPF: dict[str, Callable[[object, object], bool]] = {
    "false": lambda a, b: False,
    "oeq": lambda a, b: a == b,
    "ogt": lambda a, b: a > b,
    "oge": lambda a, b: a >= b,
    "olt": lambda a, b: a < b,
    "ole": lambda a, b: a <= b,
    "one": lambda a, b: a < b or a > b,
    "ord": lambda a, b: a == a and b == b,
    "ueq": lambda a, b: not (a < b or a > b),
    "ugt": lambda a, b: not (a <= b),
    "uge": lambda a, b: not (a < b),
    "ult": lambda a, b: not (a >= b),
    "ule": lambda a, b: not (a > b),
    "une": lambda a, b: a != b,
    "uno": lambda a, b: a != a or b != b,
    "true": lambda a, b: True,
}
_CMPI: dict[str, Callable[[int, int], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "slt": operator.lt,
    "sle": operator.le,
    "sgt": operator.gt,
    "sge": operator.ge,
    "ult": operator.lt,
    "ule": operator.le,
    "ugt": operator.gt,
    "uge": operator.ge,
}
_INT_CASTS = ("arith.index_cast", "arith.extsi", "arith.trunci")
_FLOAT_CASTS = ("arith.extf", "arith.truncf")


def _predicate(op: Operation, table: list[str]) -> str:
    pred = op.properties.get("predicate")
    if not isinstance(pred, IntegerAttr) or not 0 <= pred.value.data < len(table):
        raise UnsupportedIR(f"'{op.name}' has no valid predicate", op)
    return table[pred.value.data]


# --- the compiler to closures ----------------------------------------------------------------------


class _Compiler:
    """Turns a kernel body into closures over an environment list, one slot per SSA value."""

    def __init__(self, budget: list[int]):
        self.slots: dict[SSAValue, int] = {}
        self.names: dict[SSAValue, str] = {}
        self.budget = budget

    def slot(self, value: SSAValue) -> int:
        if value not in self.slots:
            self.slots[value] = len(self.slots)
        return self.slots[value]

    def ref(self, value: SSAValue) -> str:
        return f"env[{self.slot(value)}]"

    # ---- blocks and structure
    def block(self, block: Block) -> list[Step]:
        steps = []
        for op in block.ops:
            step = self.op(op)
            if step is not None:
                steps.append(step)
        return steps

    def op(self, op: Operation) -> Step | None:
        if isinstance(op, ForOp):
            return self.for_(op)
        if isinstance(op, LoadOp):
            return self.load(op)
        if isinstance(op, StoreOp):
            return self.store(op)
        if isinstance(op, AllocOp):
            return self.alloc(op)
        if isinstance(op, LocalOp):
            return self.local(op)
        if isinstance(op, FreeOp):
            return self.free(op)
        if isinstance(op, func.ReturnOp):
            if op.operands:
                raise LoopInterpError("a kernel returns nothing (it writes its outputs)", op)
            return None
        if op.regions:
            raise UnsupportedIR(f"the interpreter has no semantics for '{op.name}'", op)
        return self.scalar(op)

    def for_(self, op: ForOp) -> Step:
        lower = _map_function(op.lower.data, [self.ref(v) for v in op.lower_operands], [], "max")
        upper = _map_function(op.upper.data, [self.ref(v) for v in op.upper_operands], [], "min")
        step = op.step_value
        iv = self.slot(op.induction_var)
        body = self.block(op.body.block)
        budget = self.budget

        def run(env: Env) -> None:
            lo, hi = lower(env), upper(env)
            if hi <= lo:
                return
            budget[0] -= (hi - lo + step - 1) // step
            if budget[0] < 0:
                raise LoopInterpError(
                    f"loop '{op.loop_name.data}' would exceed the interpreter's budget of loop iterations: "
                    "the sizes are too large for an interpreter",
                    op,
                )
            for i in range(lo, hi, step):
                env[iv] = i
                for s in body:
                    s(env)

        return run

    # ---- memory
    def buffer_name(self, value: SSAValue) -> str:
        return self.names.get(value, "a buffer")

    def out_of_bounds(self, op: Operation, env: Env, what: str, buf: np.ndarray | None, idx: tuple) -> LoopInterpError:
        name = self.buffer_name(op.operands[1] if isinstance(op, StoreOp) else op.operands[0])
        loops = ", ".join(
            f"{loop.loop_name.data}={env[self.slots[loop.induction_var]]}" for loop in enclosing_loops(op)
        )
        where = f" at {loops}" if loops else ""
        if buf is None:
            return LoopInterpError(f"{what} of '{name}' after loop.free{where}", op)
        element = ", ".join(str(k) for k in idx)
        return LoopInterpError(
            f"{what} out of bounds: {name}[{element}] is outside its shape {list(buf.shape)}{where}", op
        )

    def access(self, op: LoadOp | StoreOp) -> Callable[[Env], tuple]:
        return _map_function(op.map.data, [self.ref(v) for v in op.indices], [], "tuple")

    def load(self, op: LoadOp) -> Step:
        index = self.access(op)
        buf_slot, out = self.slot(op.memref), self.slot(op.result)
        conv = int if element_dtype(op.result.type).kind in "iub" else None

        def run(env: Env) -> None:
            buf, idx = env[buf_slot], index(env)
            if buf is None or not _inside(idx, buf.shape):
                raise self.out_of_bounds(op, env, "load", buf, idx)
            env[out] = buf[idx] if conv is None else conv(buf[idx])

        return run

    def store(self, op: StoreOp) -> Step:
        index = self.access(op)
        buf_slot, value = self.slot(op.memref), self.slot(op.value)

        def run(env: Env) -> None:
            buf, idx = env[buf_slot], index(env)
            if buf is None or not _inside(idx, buf.shape):
                raise self.out_of_bounds(op, env, "store", buf, idx)
            buf[idx] = env[value]

        return run

    def alloc(self, op: AllocOp) -> Step:
        shape = _map_function(op.shape.data, [], [self.ref(v) for v in op.sizes], "tuple")
        assert isinstance(op.result.type, MemRefType)
        dtype = element_dtype(op.result.type.element_type)
        out = self.slot(op.result)
        self.names[op.result] = op.tensor_name.data

        def run(env: Env) -> None:
            extents = shape(env)
            if any(n < 0 for n in extents):
                raise LoopInterpError(f"temporary '{op.tensor_name.data}' has a negative extent: {list(extents)}", op)
            env[out] = new_buffer(extents, dtype)

        return run

    def local(self, op: LocalOp) -> Step:
        assert isinstance(op.result.type, MemRefType)
        shape = tuple(op.result.type.get_shape())
        dtype = element_dtype(op.result.type.element_type)
        out = self.slot(op.result)
        self.names[op.result] = op.tensor_name.data

        def run(env: Env) -> None:
            env[out] = new_buffer(shape, dtype)

        return run

    def free(self, op: FreeOp) -> Step:
        buf = self.slot(op.memref)

        def run(env: Env) -> None:
            env[buf] = None

        return run

    # ---- scalars
    def scalar(self, op: Operation) -> Step:
        if len(op.results) != 1:
            raise UnsupportedIR(f"the interpreter has no semantics for '{op.name}'", op)
        out = self.slot(op.results[0])
        args = [self.slot(v) for v in op.operands]
        if op.name == "arith.constant":
            value = self.constant(op)

            def const(env: Env) -> None:
                env[out] = value

            return const
        fn = self.scalar_function(op)
        if len(args) == 1:
            (a,) = args

            def unary(env: Env) -> None:
                env[out] = fn(env[a])

            return unary
        if len(args) == 2:
            a, b = args

            def binary(env: Env) -> None:
                env[out] = fn(env[a], env[b])

            return binary

        def nary(env: Env) -> None:
            env[out] = fn(*[env[k] for k in args])

        return nary

    def constant(self, op: Operation) -> object:
        attr = op.properties.get("value")
        if attr is None:
            attr = op.attributes.get("value")
        rtype = op.results[0].type
        if isinstance(attr, FloatAttr):
            return element_dtype(rtype).type(attr.value.data)
        if isinstance(attr, IntegerAttr):
            return _wrapper(_width(rtype))(attr.value.data)
        raise UnsupportedIR(f"unsupported constant {attr}", op)

    def scalar_function(self, op: Operation) -> Callable:
        """The Python function computing `op`'s result from its operands' values."""
        name, rtype = op.name, op.results[0].type
        if name in _FLOAT_BINARY:
            return _FLOAT_BINARY[name]
        if name in _FLOAT_UNARY:
            return _FLOAT_UNARY[name]
        if name in _INT_BINARY:
            wrap, fn = _wrapper(_width(rtype)), _INT_BINARY[name]
            return lambda a, b: wrap(fn(a, b))
        if name in ("arith.divsi", "arith.remsi"):
            return self.division(op)
        if name in ("arith.maxui", "arith.minui"):
            u, pick = _unsigned(_width(rtype)), max if name == "arith.maxui" else min
            return lambda a, b: pick(a, b, key=u)
        if name == "arith.cmpf":
            test = _CMPF[_predicate(op, CMPF_COMPARISON_OPERATIONS)]
            return lambda a, b: int(bool(test(a, b)))
        if name == "arith.cmpi":
            pred = _predicate(op, CMPI_COMPARISON_OPERATIONS)
            test_i = _CMPI[pred]
            if pred.startswith("u"):
                u = _unsigned(_width(op.operands[0].type))
                return lambda a, b: int(test_i(u(a), u(b)))
            return lambda a, b: int(test_i(a, b))
        if name == "arith.select":
            return lambda c, a, b: a if c else b
        return self.cast_or_math(op)

    def division(self, op: Operation) -> Callable[[int, int], int]:
        wrap = _wrapper(_width(op.results[0].type))
        remainder = op.name == "arith.remsi"

        def divide(a: int, b: int) -> int:
            if b == 0:
                raise LoopInterpError(f"division by zero in '{op.name}'", op)
            q = _trunc_div(a, b)
            return wrap(a - b * q if remainder else q)

        return divide

    def cast_or_math(self, op: Operation) -> Callable:
        name, rtype = op.name, op.results[0].type
        if name in _INT_CASTS:
            return _wrapper(_width(rtype))
        if name in _FLOAT_CASTS or name == "arith.sitofp":
            return element_dtype(rtype).type
        if name == "arith.fptosi":
            wrap = _wrapper(_width(rtype))

            def to_int(x) -> int:
                if not np.isfinite(x):
                    raise LoopInterpError(f"'{name}' of {x}: C leaves this undefined", op)
                return wrap(int(x))

            return to_int
        dt = element_dtype(rtype).type
        if name == "math.rsqrt":
            return lambda x: dt(1) / np.sqrt(x)
        if name == "math.erf":
            return lambda x: dt(math.erf(float(x)))
        if name == "math.fma":
            return lambda a, b, c: dt(np.longdouble(a) * np.longdouble(b) + np.longdouble(c))
        raise UnsupportedIR(f"the interpreter has no semantics for '{name}'", op)


def _inside(idx: tuple, shape: tuple) -> bool:
    for k, n in zip(idx, shape):
        if k < 0 or k >= n:
            return False
    return True


# --- running a kernel ------------------------------------------------------------------------------


def _kernel(obj: ModuleOp | func.FuncOp) -> func.FuncOp:
    if isinstance(obj, func.FuncOp):
        return obj
    kernels = find_kernels(obj)
    if len(kernels) != 1:
        raise UnsupportedIR(f"expected one kernel func.func in the module, found {len(kernels)}")
    return kernels[0]


def _bind_input(name: str, given: object, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    arr = np.asarray(given)
    if arr.shape != shape:
        raise LoopInterpError(f"input '{name}' has shape {arr.shape}, expected {shape}")
    if arr.dtype.kind != dtype.kind and not (dtype.kind == "f" and arr.dtype.kind in "iu"):
        raise LoopInterpError(f"input '{name}' has dtype {arr.dtype}, expected {dtype}")
    out = arr.astype(dtype, copy=True)
    out.flags.writeable = False  # a kernel that stores to an input fails loudly
    return out


def run_loop_kernel(
    obj: ModuleOp | func.FuncOp,
    inputs: Mapping[str, np.ndarray],
    sizes: Mapping[str, int] | None = None,
    *,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
) -> dict[str, np.ndarray]:
    """Run a loop-level kernel on `inputs` (logical shapes, by tensor name); returns its outputs.

    `sizes` override the document's defaults.  Outputs start as poison (see
    the module docstring) and come back row-major in their logical shapes.
    Raises `LoopInterpError` (a `ReferenceEvalError`) for anything that
    cannot run: unsupported ops, missing inputs, accesses out of bounds.
    """
    kernel = _kernel(obj)
    try:
        size_args, tensor_args = kernel_args(kernel)
    except (KeyError, AttributeError, IndexError) as exc:
        raise UnsupportedIR(f"@{kernel.sym_name.data} is not an irkit kernel (argument attributes: {exc})") from None
    values = resolve_sizes(kernel, sizes)
    symbols = [values[s.name] for s in size_args]
    scalars = kernel_scalars(kernel)
    input_names = {t.name for t in tensor_args if t.role in ("input", "inout")} | {sc.name for sc in scalars}
    unknown = [n for n in inputs if n not in input_names]
    if unknown:
        raise LoopInterpError(f"'{unknown[0]}' is not an input tensor of @{kernel.sym_name.data}")
    budget = [max_iterations]
    compiler = _Compiler(budget)
    bound: dict[SSAValue, object] = {s.value: values[s.name] for s in size_args}
    for sc in scalars:  # passed by value: one number of the scalar's type
        if sc.name not in inputs:
            raise LoopInterpError(f"no value given for scalar '{sc.name}'")
        bound[sc.value] = np.asarray(inputs[sc.name]).astype(element_dtype(sc.value.type))[()]
    outputs: dict[str, np.ndarray] = {}
    for t in tensor_args:
        shape = tuple(int(n) for n in t.shape.eval([], symbols))
        dtype = element_dtype(t.memref.element_type)
        compiler.names[t.value] = t.name
        if t.role == "input":
            if t.name not in inputs:
                raise LoopInterpError(f"no value given for input tensor '{t.name}'")
            bound[t.value] = _bind_input(t.name, inputs[t.name], shape, dtype)
        elif t.role == "output":
            bound[t.value] = outputs.setdefault(t.name, new_buffer(shape, dtype))
        elif t.role == "inout":  # its value on entry, updated in a copy
            if t.name not in inputs:
                raise LoopInterpError(f"no value given for in-out tensor '{t.name}'")
            bound[t.value] = outputs.setdefault(t.name, _bind_input(t.name, inputs[t.name], shape, dtype).copy())
        else:  # a tensor argument that is neither (the C backend refuses it; the oracle ignores it)
            bound[t.value] = new_buffer(shape, dtype)
    steps = compiler.block(kernel.body.block)
    env: Env = [None] * len(compiler.slots)
    for value, data in bound.items():
        if value in compiler.slots:
            env[compiler.slots[value]] = data
    with np.errstate(all="ignore"):
        try:
            for step in steps:
                step(env)
        except ZeroDivisionError:
            raise LoopInterpError("division by zero in an affine map") from None
    return outputs
