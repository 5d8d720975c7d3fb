"""Loop IR to C99 with OpenMP pragmas: `emit_c(module) -> str`.

Each kernel `func.func` (see `irkit.kernel_abi`) becomes

    void irkit_<kernel>(int64_t <size>..., const T *restrict <input>..., T *restrict <output>...)

with the arguments in the function's order.  Conventions, and why:

- **Names.**  Sizes, tensors, temporaries and loops keep their document
  names; every such name is checked by `irkit.names` first and a bad one is
  a located `DiagnosticError`.  Generated names are derived from them
  (`A_s0` a stride, `s_acc` an accumulator) or from SSA name hints, made
  unique without shadowing.  Helpers are `static inline irkit_*`.
- **restrict on every tensor.**  In the design language every tensor is
  its own buffer (inputs, outputs and temporaries never overlap), so every
  pointer is `restrict`; inputs are `const`.  The runner refuses arrays that
  share memory, which is what makes the promise true at run time.  The
  document's `noalias` assumption is therefore implied, not needed.
- **Addresses.**  Loads and stores give logical indices; the address is
  their dot product with the buffer's strides, which follow its storage
  order (`irkit.shape` extents over the size arguments).  Non-unit strides
  are `const int64_t` locals computed once (at entry for arguments, after
  the allocation for temporaries); all index arithmetic is `int64_t`.
  `floordiv`/`ceildiv`/`mod` have floor semantics (helpers).
- **Loops.**  `for (int64_t i = lb; i < ub; i += step)`, max/min bounds via
  helpers.  `parallel` -> `#pragma omp parallel for schedule(static)`;
  `vector N` -> `#pragma omp simd simdlen(N)` (simdlen only for powers of
  two) with `aligned(...)` for the buffers it walks whose first element has
  a known alignment, under a `/* loop j, ..., vector N */` comment.  A
  vectorized loop that accumulates into one element (a reduction,
  `s[i] += X[i, j]` along j) gets the element in a local with a
  `reduction(op:acc)` clause (float max/min: a declared reduction, since
  OpenMP's `max` drops NaNs); a vector loop whose iterations might depend on
  each other (two elements of one buffer, a store whose element may repeat
  across iterations, a non-simple reduction) gets no pragma and a comment
  saying why.  gcc vectorizes every loop that gets the pragma unless its body
  calls a libm function without a vector version (`exp` without
  `relaxed_math`): `tests/unit/test_c_vector.py` checks its
  `-fopt-info-vec` report.  Under `relaxed_math` `exp` is `irkit_fast_expf`
  / `irkit_fast_exp` (`irkit.backends.c_math`); vector loops that write an
  output nobody reads contiguously may use streaming stores
  (`irkit.backends.c_plan.plan_stream`).
  `unroll N` -> `#pragma GCC unroll N`, except on a loop that already has an
  OpenMP pragma (GCC cannot combine them; a comment says so).
- **Values.**  Every SSA value is a `const` local; constants are inlined
  as literals (`INFINITY` for infinities); unused pure values are dropped
  (they would be -Wunused warnings): the kernels are written from a copy of
  the module that xDSL's dead-code elimination has pruned
  (`c_plan.eliminate_dead_code`).  i32 add/sub/mul wrap (helpers), as
  arith's do.
- **Temporaries.**  `loop.alloc` -> `posix_memalign` of exactly
  count*sizeof(T) bytes (alignment: the op's or 64), `loop.free` -> `free`.
  Exact sizes let AddressSanitizer see a one-element overrun, which
  `aligned_alloc`'s rounded-up size would hide; posix_memalign is why the
  file defines `_POSIX_C_SOURCE`.  The output is C99 (`-std=c99`) and
  compiles warning-free under `-Wall -Wextra -Werror` with `-fopenmp`.

The module is split along its jobs: `c_plan` decides (vector and reduction
plans, streaming stores, alignment, dead code), `c_language.CLanguage`
says what is C99/OpenMP-specific in the text (`restrict`, the pragmas, the
signature, the headers; another C-like target subclasses it), `c_syntax`
spells types and literals, `c_simd` writes explicit vectors and register
tiles, `c_outline` cuts large kernels into functions; `KernelEmitter` here
names, lays out buffers and prints statements.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineExpr,
    AffineMap,
)

from irkit.affine.linear import Lin
from irkit.affine.printer import AffinePrinter as BaseAffinePrinter
from irkit.affine.printer import SumPrinter
from irkit.backends import c_math, c_outline, c_plan, c_simd
from irkit.backends.c_language import C_STD as C_STD  # re-exported: the C standard the build uses
from irkit.backends.c_language import CLanguage
from irkit.backends.c_plan import Reduction, reciprocal_divisor, relaxed_math
from irkit.backends.c_syntax import c_symbol, c_type, float_literal, int_literal
from irkit.backends.c_syntax import comment as _comment
from irkit.backends.c_syntax import is_f32 as _is_f32
from irkit.diagnostics import Diagnostic, DiagnosticError, at_op
from irkit.dialects.loop import AllocOp, ForOp, FreeOp, LoadOp, StoreOp
from irkit.kernel_abi import DTYPE_OF, element_bytes, kernel_args, kernel_scalars, layout_order
from irkit.names import check_name, is_c_name

INDENT = "    "
DEFAULT_TEMP_ALIGN = 64
STACK_TEMP_BYTES = 4096  # a temporary of a constant size up to this allocated inside a loop goes on the stack
MAX_UNROLL = 65534  # GCC's limit for `#pragma GCC unroll`
PREFETCH_LINE = 64  # the bytes one prefetch asks for: a cache line on every host irkit targets


# ----------------------------------------------------------------- helpers

_HELPERS: dict[str, str] = {
    "irkit_min_i64": "static inline int64_t irkit_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }",
    "irkit_max_i64": "static inline int64_t irkit_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }",
    "irkit_min_i32": "static inline int32_t irkit_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }",
    "irkit_max_i32": "static inline int32_t irkit_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }",
    "irkit_floordiv": (
        "/* Integer division rounding toward minus infinity (affine floordiv). */\n"
        "static inline int64_t irkit_floordiv(int64_t a, int64_t b)\n"
        "{\n"
        "    const int64_t q = a / b;\n"
        "    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n"
        "}"
    ),
    "irkit_ceildiv": (
        "/* Integer division rounding toward plus infinity (affine ceildiv). */\n"
        "static inline int64_t irkit_ceildiv(int64_t a, int64_t b)\n"
        "{\n"
        "    const int64_t q = a / b;\n"
        "    return (a % b != 0 && (a < 0) == (b < 0)) ? q + 1 : q;\n"
        "}"
    ),
    "irkit_mod": (
        "/* Remainder with the sign of the divisor (affine mod). */\n"
        "static inline int64_t irkit_mod(int64_t a, int64_t b)\n"
        "{\n"
        "    const int64_t r = a % b;\n"
        "    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n"
        "}"
    ),
    "irkit_maximumf": (
        "/* arith.maximumf: the larger value, NaN if either is NaN. */\n"
        "static inline float irkit_maximumf(float a, float b) { return (a > b || a != a) ? a : b; }"
    ),
    "irkit_minimumf": (
        "/* arith.minimumf: the smaller value, NaN if either is NaN. */\n"
        "static inline float irkit_minimumf(float a, float b) { return (a < b || a != a) ? a : b; }"
    ),
    "irkit_maximum": "static inline double irkit_maximum(double a, double b) { return (a > b || a != a) ? a : b; }",
    "irkit_minimum": "static inline double irkit_minimum(double a, double b) { return (a < b || a != a) ? a : b; }",
    # Float max/min reductions of vector loops: OpenMP's built-in `max`/`min` combine the
    # lanes' partial results with an operator whose NaN behaviour is unspecified (gcc
    # loses the NaN and can even return the identity); these combine them as the loop does.
    # Identities: -inf/+inf for the NaN-propagating helpers, NaN for fmax/fmin.
    **{
        f"irkit_red_{fn}": (
            f"#pragma omp declare reduction({fn} : {t} : omp_out = {fn}(omp_out, omp_in)) "
            f"initializer(omp_priv = {init})"
        )
        for fn, t, init in (
            ("irkit_maximumf", "float", "(-INFINITY)"),
            ("irkit_minimumf", "float", "INFINITY"),
            ("irkit_maximum", "double", "(-INFINITY)"),
            ("irkit_minimum", "double", "INFINITY"),
            ("fmaxf", "float", "NAN"),
            ("fminf", "float", "NAN"),
            ("fmax", "double", "NAN"),
            ("fmin", "double", "NAN"),
        )
    },
    "irkit_add_i32": (
        "/* Wrapping i32 arithmetic, as arith's (signed overflow is undefined in C). */\n"
        "static inline int32_t irkit_add_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }"
    ),
    "irkit_sub_i32": (
        "static inline int32_t irkit_sub_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }"
    ),
    "irkit_mul_i32": (
        "static inline int32_t irkit_mul_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }"
    ),
    "irkit_alloc": (
        "/* A temporary of `count` elements of `size` bytes, exactly, aligned to `align`. */\n"
        "static void *irkit_alloc(int64_t count, size_t size, size_t align, const char *name)\n"
        "{\n"
        "    void *p = NULL;\n"
        "    const size_t bytes = (count > 0 ? (size_t)count : 1) * size;\n"
        "    if (posix_memalign(&p, align, bytes) != 0) {\n"
        "        fprintf(stderr, \"irkit: cannot allocate %lu bytes for temporary '%s'\\n\", (unsigned long)bytes, name);\n"
        "        abort();\n"
        "    }\n"
        "    return p;\n"
        "}"
    ),
}


# ------------------------------------------------------------------- types


# ---------------------------------------------------------- affine printing

def _is_sum(text: str) -> bool:
    """Does C text have a top-level + or - (so it needs parentheses as a factor)?"""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch in "+-" and depth == 0 and i > 0:
            return True
    return False


def paren(text: str) -> str:
    return f"({text})" if _is_sum(text) or text.startswith("-") else text


class _CSum(SumPrinter):
    """A linear form over C atom texts as a C sum: `2*i + (a - b)*c - 1`."""

    def scaled(self, mag: int, atom: str) -> str:
        return f"{mag}*{paren(atom)}"

    def negated(self, piece: str, atom: str, mag: int) -> str:
        return f"-{paren(atom) if mag == 1 else piece}"

    def lone_const(self, const: int) -> str:
        return str(const) if const >= 0 else f"({const})"


C_SUM = _CSum()

_DIV_HELPERS = {"floordiv": "irkit_floordiv", "ceildiv": "irkit_ceildiv", "mod": "irkit_mod"}


class AffinePrinter(BaseAffinePrinter[Lin]):
    """Affine expressions as C `int64_t` expressions; dims and symbols are C texts or known integers.

    The walk is the affine core's (`irkit.affine.printer`); each node is a linear form over C
    atom texts, so constants fold and terms collect before anything is printed.  C's own rules:
    a product of two non-constant forms is one opaque atom, and a division that does not fold
    (constant operands, floor semantics as Python's; a divisor of 1) calls a helper that floors
    for negative operands too (`irkit_floordiv`, `irkit_ceildiv`, `irkit_mod`)."""

    def __init__(self, use_helper: Callable[[str], None]):
        self.use_helper = use_helper

    def dim(self, d: str | int) -> Lin:
        return Lin(const=d) if isinstance(d, int) else Lin.of(d)

    sym = dim

    def const(self, value: int) -> Lin:
        return Lin(const=value)

    def add(self, a: Lin, b: Lin) -> Lin:
        return a + b

    def mul(self, a: Lin, b: Lin) -> Lin:
        if b.is_const:
            return a.scale(b.const)
        if a.is_const:
            return b.scale(a.const)
        return Lin.of(f"{paren(self.text(a))}*{paren(self.text(b))}")

    def floordiv(self, a: Lin, b: Lin) -> Lin:
        return self._divide("floordiv", a, b)

    def ceildiv(self, a: Lin, b: Lin) -> Lin:
        return self._divide("ceildiv", a, b)

    def mod(self, a: Lin, b: Lin) -> Lin:
        return self._divide("mod", a, b)

    def _divide(self, kind: str, a: Lin, b: Lin) -> Lin:
        if a.is_const and b.is_const and b.const != 0:
            q, r = a.const // b.const, a.const % b.const
            return Lin(const={"floordiv": q, "mod": r}.get(kind, -((-a.const) // b.const)))
        if b.is_const and b.const == 1:
            return Lin() if kind == "mod" else a
        helper = _DIV_HELPERS[kind]
        self.use_helper(helper)
        return Lin.of(f"{helper}({self.text(a)}, {self.text(b)})")

    @staticmethod
    def text(lin: Lin) -> str:
        return C_SUM.sum_text(lin.terms.items(), lin.const)

    def expr(self, e: AffineExpr, dims: Sequence[str | int], syms: Sequence[str | int] = ()) -> str:
        return self.text(self.print(e, dims, syms))

    def const_value(self, e: AffineExpr, dims: Sequence[str | int], syms: Sequence[str | int] = ()) -> int | None:
        form = self.print(e, dims, syms)
        return form.const if form.is_const else None


# ------------------------------------------------------------ the emitter


@dataclass
class _Buffer:
    name: str
    ctype: str
    strides: list[str | None]  # per logical dim: the stride variable, None for unit stride
    stride_exprs: list[str | None]  # their definitions
    used: set[int] = field(default_factory=set)
    align: int | None = None  # bytes the first element is known to be aligned to (vector loops' `aligned`)
    elements: str | None = None  # an output argument's element count (C text over the sizes), for streaming


class _Deferred:
    """Lines whose text is known only once the rest of the function is written."""

    def __init__(self, render: Callable[[], list[str]]):
        self.render = render


# arith ops written as C operators.
_BINARY = {
    "arith.addf": "{a} + {b}",
    "arith.subf": "{a} - {b}",
    "arith.mulf": "{a} * {b}",
    "arith.divf": "{a} / {b}",
    "arith.divsi": "{a} / {b}",
    "arith.remsi": "{a} % {b}",
    "arith.andi": "{a} & {b}",
    "arith.ori": "{a} | {b}",
    "arith.xori": "{a} ^ {b}",
}
# math.<name> -> C function for double (f32 adds the `f` suffix).
_MATH = {
    "math.exp": "exp",
    "math.exp2": "exp2",
    "math.expm1": "expm1",
    "math.log": "log",
    "math.log2": "log2",
    "math.log10": "log10",
    "math.log1p": "log1p",
    "math.sqrt": "sqrt",
    "math.cbrt": "cbrt",
    "math.absf": "fabs",
    "math.tanh": "tanh",
    "math.sin": "sin",
    "math.cos": "cos",
    "math.tan": "tan",
    "math.erf": "erf",
    "math.floor": "floor",
    "math.ceil": "ceil",
    "math.round": "round",
    "math.trunc": "trunc",
    "math.powf": "pow",
    "math.atan2": "atan2",
    "math.copysign": "copysign",
    "math.fma": "fma",
}
_CMPF = {
    "oeq": "{a} == {b}",
    "ogt": "{a} > {b}",
    "oge": "{a} >= {b}",
    "olt": "{a} < {b}",
    "ole": "{a} <= {b}",
    "one": "({a} < {b} || {a} > {b})",
    "ord": "({a} == {a} && {b} == {b})",
    "ueq": "!({a} < {b} || {a} > {b})",
    "ugt": "!({a} <= {b})",
    "uge": "!({a} < {b})",
    "ult": "!({a} >= {b})",
    "ule": "!({a} > {b})",
    "une": "{a} != {b}",
    "uno": "({a} != {a} || {b} != {b})",
    "false": "0",
    "true": "1",
}
_CMPI = {
    "eq": "{a} == {b}",
    "ne": "{a} != {b}",
    "slt": "{a} < {b}",
    "sle": "{a} <= {b}",
    "sgt": "{a} > {b}",
    "sge": "{a} >= {b}",
    "ult": "({u}){a} < ({u}){b}",
    "ule": "({u}){a} <= ({u}){b}",
    "ugt": "({u}){a} > ({u}){b}",
    "uge": "({u}){a} >= ({u}){b}",
}
_CASTS = (
    "arith.sitofp",
    "arith.fptosi",
    "arith.extf",
    "arith.truncf",
    "arith.index_cast",
    "arith.extsi",
    "arith.trunci",
)


class _Module:
    """What the kernels of one module share: helpers and headers."""

    def __init__(self) -> None:
        self.helpers: set[str] = set()
        self.math = False
        self.alloc = False

    def use(self, helper: str) -> None:
        self.helpers.add(helper)
        if helper == "irkit_alloc":
            self.alloc = True


class KernelEmitter:
    """Writes one kernel function."""

    def __init__(self, kernel: func.FuncOp, shared: _Module, lang: CLanguage, vector_bytes: int = c_simd.MAX_VECTOR_BYTES):
        self.kernel = kernel
        self.shared = shared
        self.lang = lang
        self.vector_bytes = vector_bytes  # the widest vector register of the build's target
        self.affine = AffinePrinter(shared.use)
        self.lines: list[str | _Deferred] = []
        self.scopes: list[set[str]] = [set()]
        self.values: dict[SSAValue, str] = {}
        self.consts: dict[SSAValue, int] = {}
        self.buffers: dict[SSAValue, _Buffer] = {}
        self.stack: set[SSAValue] = set()  # temporaries on the stack: no free
        self.used_params: set[SSAValue] = set()
        self.skip: set[Operation] = set()
        self.assign: dict[Operation, str] = {}
        self.counter = 0
        self.relaxed = relaxed_math(kernel)
        self.redirect: dict[StoreOp, str] = {}  # stores written elsewhere (a streaming chunk)
        self.fence_in: set[ForOp] = set()  # loops whose body ends with `irkit_stream_fence()`
        self.simd = c_simd.SimdEmitter(self)  # explicit vector loops and register tiles
        self.top_starts: list[tuple[int, bool]] = []  # (index in lines, is a loop nest)

    # ---- diagnostics and names
    def fail(self, message: str, op: Operation) -> DiagnosticError:
        return DiagnosticError([at_op("error", f"C backend: {message}", op)])

    def taken(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def fresh(self, base: str) -> str:
        """An unused name in the current scope chain, derived from `base`."""
        if not is_c_name(base):
            base = "v"
        name, n = base, 0
        while self.taken(name) or not is_c_name(name):
            n += 1
            name = f"{base}_{n}"
        self.scopes[-1].add(name)
        return name

    def value_name(self, value: SSAValue, fallback: str = "v") -> str:
        hint = value.name_hint
        if hint and is_c_name(hint):
            return self.fresh(hint)
        if fallback == "v":
            self.counter += 1
            return self.fresh(f"v{self.counter}")
        return self.fresh(fallback)

    # ---- references
    def ref(self, value: SSAValue) -> str:
        if value not in self.values:
            owner = value.owner
            where = owner if isinstance(owner, Operation) else self.kernel
            raise self.fail("a value is used that the C backend has not defined (unsupported IR)", where)
        if value.owner is self.kernel.body.block:
            self.used_params.add(value)
        return self.values[value]

    def index_operand(self, value: SSAValue) -> str | int:
        if value in self.consts:
            return self.consts[value]
        return self.ref(value)

    def emit(self, indent: int, text: str) -> None:
        self.lines.append(INDENT * indent + text)

    # ---- buffers
    def make_buffer(
        self, name: str, memref: MemRefType, shape: AffineMap, syms: list[str | int], op: Operation
    ) -> _Buffer:
        ctype = c_type(memref.element_type)
        if ctype is None or ctype == "int":
            raise self.fail(f"tensor '{name}': element type {memref.element_type} has no C type here", op)
        order = layout_order(memref)
        rank = len(memref.get_shape())
        if sorted(order) != list(range(rank)):
            raise self.fail(f"tensor '{name}': its layout is not a permutation of its {rank} dimensions", op)
        if shape.num_dims != 0 or shape.num_symbols != len(syms) or len(shape.results) != rank:
            raise self.fail(
                f"tensor '{name}': shape map {shape} must be ()[sizes] -> ({rank} extents) over {len(syms)} sizes", op
            )
        extents = [self.affine.expr(e, [], syms) for e in shape.results]
        strides: list[str | None] = [None] * rank
        exprs: list[str | None] = [None] * rank
        for k, dim in enumerate(order[:-1]):
            inner = [extents[d] for d in order[k + 1 :]]
            if all(e.isdigit() for e in inner):  # a constant stride is written in place
                strides[dim] = str(math.prod(int(e) for e in inner))
                continue
            strides[dim] = f"{name}_s{dim}"
            exprs[dim] = inner[0] if len(inner) == 1 else " * ".join(paren(e) for e in inner)
        return _Buffer(name, ctype, strides, exprs)

    def name_strides(self, buf: _Buffer) -> None:
        for d, stride in enumerate(buf.strides):
            if stride is not None and buf.stride_exprs[d] is not None:
                buf.strides[d] = self.fresh(stride)

    def stride_lines(self, buf: _Buffer) -> list[str]:
        return [f"const int64_t {buf.strides[d]} = {buf.stride_exprs[d]};" for d in sorted(buf.used)]

    def address(self, memref: SSAValue, amap: AffineMap, indices: Sequence[SSAValue]) -> str:
        buf = self.buffers[memref]
        self.ref(memref)
        # Only the indices the map uses are referenced: a reduction's accumulator is
        # addressed before its loop, whose variable is an (unused) operand of the map.
        used = set().union(*(r.used_dims() for r in amap.results))
        dims = [self.index_operand(v) if k in used else 0 for k, v in enumerate(indices)]
        parts: list[str] = []
        for d in layout_order(memref.type):  # type: ignore[arg-type]
            idx = self.affine.expr(amap.results[d], dims)
            if idx == "0":
                continue
            stride = buf.strides[d]
            if stride is None:
                parts.append(idx)
            elif buf.stride_exprs[d] is None:  # constant
                parts.append(f"{stride}*{paren(idx)}" if stride != "1" else idx)
            else:
                buf.used.add(d)
                parts.append(f"{paren(idx)}*{stride}")
        text = ""
        for part in parts:
            if not text:
                text = part
            elif part.startswith("-"):
                text += f" - {part[1:]}"
            else:
                text += f" + {part}"
        return f"{buf.name}[{text or '0'}]"

    # ---- the function
    def run(self) -> list[str]:
        k = self.kernel
        kname = check_name(k.sym_name.data, "kernel", k)
        sizes, tensors, params = self.arguments(kname)
        size_names = [s.name for s in sizes]
        self.scopes[0].update(self.values[a] for a in k.body.block.args)
        self.scopes[0].add(c_symbol(kname))
        for t in tensors:
            buf = self.make_buffer(t.name, t.memref, t.shape, list(size_names), k)
            buf.align = t.align
            if t.role in ("output", "inout"):
                buf.elements = " * ".join(paren(self.affine.expr(e, [], size_names)) for e in t.shape.results) or "1"
            self.name_strides(buf)
            self.buffers[t.value] = buf
            self.used_params.discard(t.value)
        # Stride definitions name sizes directly; they mark sizes used when rendered.
        size_values = {self.values[a]: a for a in k.body.block.args if isinstance(a.type, IndexType)}

        header = _Deferred(lambda: self.entry_lines(tensors, size_values))
        self.lines.append(header)
        self.emit_block(k.body.block, 1)
        return self.render(kname, sizes, tensors, params)

    def arguments(self, kname: str):
        """The kernel's sizes and tensors (`kernel_abi.kernel_args`), checked, named in
        `values`, and its C parameters in argument order."""
        k = self.kernel
        try:
            sizes, tensors = kernel_args(k)
        except DiagnosticError:  # an argument without its irkit.* attributes
            raise self.fail(
                f"function @{kname}: every argument needs irkit.name (and irkit.role/shape for tensors)", k
            ) from None
        except (KeyError, IndexError, AttributeError) as exc:
            raise self.fail(f"function @{kname} is not an irkit kernel (argument attributes: {exc})", k) from None
        scalars = {sc.value: sc for sc in kernel_scalars(k)}
        if len(sizes) + len(tensors) + len(scalars) != len(k.body.block.args):
            raise self.fail(f"function @{kname}: every argument needs irkit.name (and irkit.role/shape for tensors)", k)
        if k.function_type.outputs.data:
            raise self.fail(f"function @{kname}: a kernel returns nothing (it writes its outputs)", k)
        params: list[str] = []
        by_value = {t.value: t for t in tensors}
        for arg in k.body.block.args:
            if isinstance(arg.type, IndexType):
                s = next(s for s in sizes if s.value is arg)
                self.values[arg] = check_name(s.name, "size", k)
                params.append(self.lang.size_param(s.name))
            elif arg in scalars:
                name = check_name(scalars[arg].name, "scalar", k)
                ctype = c_type(arg.type)
                if ctype is None:
                    raise self.fail(f"scalar '{name}': type {arg.type} is not f32, f64 or i32", k)
                self.values[arg] = name
                params.append(self.lang.scalar_param(ctype, name))
            else:
                t = by_value[arg]
                name = check_name(t.name, "tensor", k)
                if not isinstance(arg.type, MemRefType) or arg.type.element_type not in DTYPE_OF.values():
                    raise self.fail(f"tensor '{name}': type {arg.type} is not a memref of f32, f64 or i32", k)
                if t.role not in ("input", "output", "inout"):
                    raise self.fail(f"tensor '{name}': role must be input, output or inout, not '{t.role}'", k)
                self.values[arg] = name
                ctype = c_type(t.memref.element_type)
                params.append(self.lang.tensor_param(ctype or "", name, readonly=t.role == "input"))
        all_names = [self.values[a] for a in k.body.block.args]
        dup = {n for n in all_names if all_names.count(n) > 1}
        if dup:
            raise self.fail(f"kernel '{kname}': the name '{sorted(dup)[0]}' is given to two arguments", k)
        return sizes, tensors, params

    def render(self, kname: str, sizes, tensors, params: list[str]) -> list[str]:
        """The function's text: the written lines with the deferred ones rendered, large
        kernels outlined (`c_outline`)."""
        out = [self.comment_line(kname, sizes, tensors)]
        out.append(self.lang.kernel_signature(c_symbol(kname), params))
        out.append("{")
        body: list[str] = []
        rendered: dict[int, list[str]] = {}
        for item in reversed(self.lines):  # the entry block renders last: the others mark what it needs
            if isinstance(item, _Deferred):
                rendered[id(item)] = item.render()
        positions: list[int] = []  # line of the body where each item starts
        for item in self.lines:
            positions.append(len(body))
            if isinstance(item, _Deferred):
                body.extend(rendered[id(item)])
            else:
                body.append(item)
        positions.append(len(body))
        ends = [s for s, _ in self.top_starts[1:]] + [len(self.lines)]
        nests = [(positions[s], positions[e]) for (s, loop), e in zip(self.top_starts, ends) if loop]
        parts, body = c_outline.outline(  # big kernels only
            c_symbol(kname), params, body, nests, self.lang.restrict, self.lang.part_qualifier
        )
        out[0:0] = parts
        out.extend(body)
        out.append("}")
        return out

    def comment_line(self, kname: str, sizes, tensors) -> str:
        loc = self.kernel.location
        where = f" ({loc.filename.data}:{loc.line.data})" if isinstance(loc, FileLineColLoc) else ""
        parts = []
        for t in tensors:
            dims = ", ".join(self.affine.expr(e, [], [s.name for s in sizes]) for e in t.shape.results)
            order = t.order
            lay = (
                ""
                if order == sorted(order)
                else " col_major"
                if order == sorted(order, reverse=True)
                else f" order {order}"
            )
            parts.append(f"{t.name}[{dims}] {t.dtype} {t.role}{lay}")
        parts += [f"{sc.name} {sc.dtype} scalar" for sc in kernel_scalars(self.kernel)]
        return "/* " + _comment(f"kernel {kname}{where}: {'; '.join(parts)}") + " */"

    def entry_lines(self, tensors, size_values: dict[str, SSAValue]) -> list[str]:
        lines: list[str] = []
        for t in tensors:
            buf = self.buffers[t.value]
            for d in sorted(buf.used):
                lines.append(INDENT + f"const int64_t {buf.strides[d]} = {buf.stride_exprs[d]};")
                for name, v in size_values.items():
                    if _mentions(buf.stride_exprs[d] or "", name):
                        self.used_params.add(v)
        for t in tensors:
            align = t.align
            if t.value in self.used_params and align and align & (align - 1) == 0:
                ctype = self.buffers[t.value].ctype
                const = "const " if t.role == "input" else ""
                lines.append(INDENT + self.lang.assume_aligned(t.name, f"{const}{ctype} *", align))
        for arg in self.kernel.body.block.args:
            if arg not in self.used_params:
                lines.append(INDENT + f"(void){self.values[arg]};")
        return lines

    # ---- blocks and ops
    def emit_block(self, block: Block, indent: int) -> None:
        for op in block.ops:
            if op in self.skip:
                continue
            if block is self.kernel.body.block:  # where each top-level op's lines start (c_outline)
                self.top_starts.append((len(self.lines), isinstance(op, ForOp)))
            if self.simd.emit_op(op, indent):
                continue
            if isinstance(op, ForOp):
                self.emit_for(op, indent)
            elif isinstance(op, LoadOp):
                name = self.value_name(op.result, f"{self.buffers_name(op.memref, op)}_v")
                addr = self.address(op.memref, op.map.data, op.indices)
                self.emit(indent, f"const {self.scalar_type(op.result, op)} {name} = {addr};")
                self.values[op.result] = name
            elif isinstance(op, StoreOp):
                self.buffers_name(op.memref, op)
                addr = self.redirect.get(op) or self.address(op.memref, op.map.data, op.indices)
                self.emit(indent, f"{addr} = {self.ref(op.value)};")
            elif isinstance(op, AllocOp):
                self.emit_alloc(op, indent)
            elif isinstance(op, FreeOp):
                if op.memref not in self.stack:
                    self.emit(indent, f"free({self.ref(op.memref)});")
            elif isinstance(op, func.ReturnOp):
                if op.operands:
                    raise self.fail("a kernel returns nothing", op)
            else:
                self.emit_scalar(op, indent)

    def buffers_name(self, memref: SSAValue, op: Operation) -> str:
        if memref not in self.buffers:
            raise self.fail("access to a buffer that is neither a kernel argument nor a loop.alloc", op)
        return self.buffers[memref].name

    def scalar_type(self, value: SSAValue, op: Operation) -> str:
        ctype = c_type(value.type)
        if ctype is None:
            raise self.fail(f"type {value.type} has no C equivalent", op)
        return ctype

    def emit_alloc(self, op: AllocOp, indent: int) -> None:
        name = check_name(op.tensor_name.data, "temporary", op)
        memref = op.result.type
        assert isinstance(memref, MemRefType)
        syms = [self.index_operand(v) for v in op.sizes]
        var = self.fresh(name)
        buf = self.make_buffer(var, memref, op.shape.data, syms, op)
        self.name_strides(buf)
        self.buffers[op.result] = buf
        self.values[op.result] = var
        align = op.align.value.data if op.align is not None else DEFAULT_TEMP_ALIGN
        if align <= 0 or align & (align - 1):
            raise self.fail(f"temporary '{name}': alignment {align} is not a power of two", op)
        align = max(align, 8)  # posix_memalign wants a multiple of sizeof(void *)
        buf.align = align
        count = " * ".join(paren(self.affine.expr(e, [], syms)) for e in op.shape.data.results) or "1"
        elements = 1
        for e in op.shape.data.results:
            value = self.affine.const_value(e, [], syms)
            elements = elements * value if value is not None and elements is not None else None
        if indent > 1 and elements is not None and 0 < elements * element_bytes(memref) <= STACK_TEMP_BYTES:
            # a small temporary inside a loop (a row's running max, a register block's spill): on
            # the stack, not one posix_memalign and free per iteration (measured: a softmax whose
            # rows each allocated two floats ran 5x slower than with them on the stack)
            self.stack.add(op.result)
            self.emit(indent, f"{buf.ctype} {var}_s[{elements}] __attribute__((aligned({align})));")
            self.emit(indent, f"{buf.ctype} *{self.lang.restrict} {var} = {var}_s;")
            self.lines.append(_Deferred(lambda: [INDENT * indent + line for line in self.stride_lines(buf)]))
            return
        self.shared.use("irkit_alloc")
        self.emit(
            indent,
            f"{buf.ctype} *{self.lang.restrict} {var} = ({buf.ctype} *)irkit_alloc({count}, sizeof({buf.ctype}), {align}, "
            f'"{name}");',
        )
        self.lines.append(_Deferred(lambda: [INDENT * indent + line for line in self.stride_lines(buf)]))

    # ---- loops
    def bound(self, amap: AffineMap, operands: Sequence[SSAValue], helper: str) -> str:
        dims = [self.index_operand(v) for v in operands]
        parts = [self.affine.expr(e, dims) for e in amap.results]
        consts = [self.affine.const_value(e, dims) for e in amap.results]
        if all(c is not None for c in consts):
            value = max(consts) if helper.startswith("irkit_max") else min(consts)  # type: ignore[type-var]
            return str(value) if value >= 0 else f"({value})"  # type: ignore[operator]
        text = parts[0]
        for part in parts[1:]:
            self.shared.use(helper)
            text = f"{helper}({text}, {part})"
        return text

    def vector_plan(self, op: ForOp, vector: int, notes: list[str]) -> list[Reduction] | None:
        """The reductions of a `vector` loop that gets a SIMD pragma (`c_plan.plan_vector`), or
        None (not a vector loop, or a note saying why not)."""
        if vector <= 1:
            return None
        plan = c_plan.plan_vector(op, lambda st: self.buffers_name(st.memref, st))
        for helper in plan.helpers:
            self.shared.use(helper)
        self.shared.math = self.shared.math or plan.math
        if plan.problem is not None:
            notes.append(f"vectorize {vector} not asserted: {plan.problem}")
            return None
        return plan.reductions

    def aligned(self, op: ForOp) -> list[tuple[int, list[str]]]:
        known = {v: (b.name, b.align) for v, b in self.buffers.items()}
        return c_plan.aligned_buffers(op, known)

    def open_reduction(self, red: Reduction, indent: int) -> tuple[Reduction, str, str]:
        """The accumulated element of a reduction in a local across the loop: (red, local, address)."""
        buf = self.buffers[red.store.memref]
        acc = self.fresh(f"{buf.name}_acc")
        addr = self.address(red.load.memref, red.load.map.data, red.load.indices)
        self.emit(indent, f"{buf.ctype} {acc} = {addr};")
        self.skip.update((red.load, red.store))
        self.values[red.load.result] = acc
        self.assign[red.combine] = acc
        return red, acc, addr

    def loop_comments(self, op: ForOp, lname: str, iv: str, vector: int, notes: list[str], indent: int) -> None:
        """`/* loop j, stage s, vector 8 (origin) */` where it says something, then the notes."""
        facts = [f"stage {op.stage.data}"] if op.stage is not None else []
        if vector > 1:
            facts.append(f"vector {vector}")
        origin = f" ({op.origin.data})" if op.origin is not None else ""
        parent = op.parent_op()
        starts_stage = op.stage is not None and not (isinstance(parent, ForOp) and parent.stage == op.stage)
        if origin or starts_stage or iv != lname or vector > 1:
            self.emit(indent, "/* " + _comment(", ".join([f"loop {lname}", *facts]) + origin) + " */")
        for note in notes:
            self.emit(indent, "/* " + _comment(note) + " */")

    def emit_for(self, op: ForOp, indent: int) -> None:
        lname = check_name(op.loop_name.data, "loop", op)
        lb = self.bound(op.lower.data, op.lower_operands, "irkit_max_i64")
        ub = self.bound(op.upper.data, op.upper_operands, "irkit_min_i64")
        step = op.step_value
        notes: list[str] = []
        vector = op.vector.value.data if op.vector is not None else 1
        reductions = self.vector_plan(op, vector, notes)
        simd = reductions is not None
        reductions = reductions or []
        aligned = self.aligned(op) if simd else []
        unroll = op.unroll.value.data if op.unroll is not None else 1
        annotated = simd or op.parallel is not None  # an OpenMP loop pragma
        if unroll > 1 and annotated:
            notes.append(f"unroll {unroll} not applied: GCC cannot combine it with an OpenMP loop pragma")
        accs = [self.open_reduction(red, indent) for red in reductions]
        self.scopes.append(set())  # the loop variable's scope
        iv = self.fresh(lname)
        self.values[op.induction_var] = iv
        self.loop_comments(op, lname, iv, vector, notes, indent)
        pragmas: list[str] = []
        if annotated:
            simdlen = vector if simd and vector & (vector - 1) == 0 else None
            red_clauses = [(red.omp, acc) for red, acc, _ in accs]
            pragmas.append(self.lang.loop_pragma(op.parallel is not None, simd, red_clauses, simdlen, aligned))
        elif unroll > 1:
            pragmas.append(self.lang.unroll_pragma(min(unroll, MAX_UNROLL)))
        stream = c_plan.plan_stream(self.kernel, op) if simd and not reductions else None
        if stream is not None:
            self.emit_streaming(op, indent, iv, lb, ub, pragmas, stream)
            self.scopes.pop()
            return
        for p in pragmas:
            self.emit(indent, p)
        self.emit(indent, f"for (int64_t {iv} = {lb}; {iv} < {ub}; {iv} += {step}) {{")
        self.scopes.append(set())
        self.emit_prefetches(op, iv, ub, indent + 1)
        self.emit_block(op.body.block, indent + 1)
        if op in self.fence_in:  # streaming stores inside: one fence an iteration (see emit_streaming)
            self.lines.append("#if IRKIT_VEC_BYTES")
            self.emit(indent + 1, "irkit_stream_fence();")
            self.lines.append("#endif")
        self.scopes.pop()
        self.scopes.pop()
        self.emit(indent, "}")
        for _, acc, addr in accs:
            self.emit(indent, f"{addr} = {acc};")

    def emit_prefetches(self, op: ForOp, iv: str, ub: str, indent: int) -> None:
        """Prefetch the lines the next iteration's register blocks load (`c_plan.plan_prefetch`):
        each load's address with `op`'s variable one step on and its fill loop's variable at each
        line of its range, when there is a next iteration (the addresses are then in bounds)."""
        plans = c_plan.plan_prefetch(op)
        if not plans:
            return
        ahead = f"{iv} + {op.step_value}"
        saved = self.values.get(op.induction_var)
        self.values[op.induction_var] = ahead
        lines: list[str] = []
        try:
            for plan in plans:
                start = self.bound(plan.fill.lower.data, plan.fill.lower_operands, "irkit_max_i64")
                for load in plan.loads:
                    elem = element_bytes(load.memref.type)  # type: ignore[arg-type]
                    per_line = max(1, PREFETCH_LINE // (elem * plan.fill.step_value))
                    steps = sorted({*range(0, plan.trips, per_line), plan.trips - 1})
                    for k in steps:
                        at = start if k == 0 else f"{paren(start)} + {k * plan.fill.step_value}"
                        self.values[plan.fill.induction_var] = at
                        text = self.lang.prefetch(self.address(load.memref, load.map.data, load.indices), load.memref in plan.written)
                        if text not in lines:
                            lines.append(text)
                    self.values.pop(plan.fill.induction_var, None)
        finally:
            self.values[op.induction_var] = saved  # type: ignore[assignment]
        if not lines:
            return
        self.emit(indent, f"/* prefetch the next iteration's register blocks ({len(lines)} addresses: each line of each row) */")
        self.emit(indent, f"if ({ahead} < {ub}) {{")
        for text in lines:
            self.emit(indent + 1, text)
        self.emit(indent, "}")

    def emit_streaming(
        self, op: ForOp, indent: int, iv: str, lb: str, ub: str, pragmas: list[str], st: StoreOp
    ) -> None:
        """A vector loop whose output may be streamed: at run time, when the output is large,
        the iterations from the first vector-aligned element on go in chunks of one vector,
        computed into an aligned local (a register) and stored with a streaming store; the
        iterations before and after them, or all when not streaming, run as the plain loop."""
        buf = self.buffers[st.memref]
        f32 = buf.ctype == "float"
        lanes = "IRKIT_LANES_F32" if f32 else "IRKIT_LANES_F64"
        self.shared.use("irkit_stream")
        self.shared.use("irkit_min_i64")
        for arg in self.kernel.body.block.args:
            if isinstance(arg.type, IndexType) and _mentions(buf.elements or "", self.values[arg]):
                self.used_params.add(arg)
        threshold = c_plan.stream_threshold(self.kernel)
        self.scopes.append(set())
        lo, hi, a, b, v, c = (self.fresh(f"{iv}_{x}") for x in ("lo", "hi", "a", "b", "skip", "c"))
        chunk = self.fresh(f"{buf.name}_v")

        def address(at: str) -> str:
            self.values[op.induction_var] = at
            return self.address(st.memref, st.map.data, st.indices)

        def body(start: str, stop: str, lines: list[str], at: int) -> None:
            for p in lines:
                self.emit(at, p)
            self.scopes.append({iv})
            self.values[op.induction_var] = iv
            self.emit(at, f"for (int64_t {iv} = {start}; {iv} < {stop}; {iv} += 1) {{")
            self.scopes.append(set())
            self.emit_block(op.body.block, at + 1)
            self.scopes.pop()
            self.scopes.pop()
            self.emit(at, "}")

        note = (
            f"streaming stores to '{buf.name}' if it has at least {threshold} bytes, the last cache "
            "(-DIRKIT_NT_MIN_BYTES=n overrides; irkit/backends/c_math.py)"
        )
        self.emit(indent, "/* " + _comment(note) + " */")
        self.emit(indent, "{")
        i1, i2 = indent + 1, indent + 2
        self.emit(i1, f"const int64_t {lo} = {lb};")
        self.emit(i1, f"const int64_t {hi} = {ub};")
        self.emit(i1, f"int64_t {a} = {hi};")
        self.emit(i1, f"int64_t {b} = {hi};")
        self.lines.append("#if IRKIT_VEC_BYTES")
        first = address(lo)
        size = f"(int64_t)sizeof({buf.ctype})"
        self.emit(i1, f"const int64_t {v} = irkit_stream_skip(&{first}, {size});")
        self.emit(
            i1,
            f"if ({v} >= 0 && ({hi} - {lo}) * {size} >= IRKIT_NT_MIN_RUN"
            f" && {paren(buf.elements or '1')} * {size} >= IRKIT_NT_THRESHOLD(INT64_C({threshold}))) {{",
        )
        self.emit(i2, f"{a} = irkit_min_i64({lo} + {v}, {hi});")
        self.emit(i2, f"{b} = {a} + ({hi} - {a}) / {lanes} * {lanes};")
        self.emit(i2, f"for (int64_t {c} = {a}; {c} < {b}; {c} += {lanes}) {{")
        self.emit(i2 + 1, f"{buf.ctype} {chunk}[{lanes}] IRKIT_VEC_ALIGNED;")
        self.redirect[st] = f"{chunk}[{iv} - {c}]"
        body(c, f"{c} + {lanes}", [self.lang.loop_pragma(parallel=False, simd=True)], i2 + 1)
        del self.redirect[st]
        self.emit(i2 + 1, f"irkit_stream_{'f32' if f32 else 'f64'}(&{address(c)}, {chunk});")
        self.emit(i2, "}")
        anchor = c_plan.fence_anchor(op)
        if anchor is None:
            self.emit(i2, "irkit_stream_fence();")
        else:
            self.fence_in.add(anchor)
        self.emit(i1, "}")
        self.lines.append("#endif")
        body(lo, a, pragmas, i1)
        body(b, hi, [], i1)
        self.emit(indent, "}")
        self.scopes.pop()

    # ---- scalar ops
    def emit_scalar(self, op: Operation, indent: int) -> None:
        name = op.name
        if name == "arith.constant":
            self.emit_constant(op)
            return
        if len(op.results) != 1:
            raise self.fail(f"no C translation for '{name}'", op)
        result = op.results[0]
        rtype = result.type
        ctype = self.scalar_type(result, op)
        args = [self.ref(v) for v in op.operands]
        f32 = _is_f32(rtype)
        expr: str
        if name == "arith.divf" and self.relaxed and reciprocal_divisor(op):
            # a * (1 / b): gcc hoists the reciprocal of a divisor the loop does not change
            expr = f"{args[0]} * ({'1.0f' if f32 else '1.0'} / {args[1]})"
        elif name in _BINARY:
            expr = _BINARY[name].format(a=args[0], b=args[1])
        elif name in ("arith.addi", "arith.subi", "arith.muli"):
            if ctype == "int32_t":
                helper = {"arith.addi": "irkit_add_i32", "arith.subi": "irkit_sub_i32", "arith.muli": "irkit_mul_i32"}[
                    name
                ]
                self.shared.use(helper)
                expr = f"{helper}({args[0]}, {args[1]})"
            else:
                sym = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*"}[name]
                expr = f"{args[0]} {sym} {args[1]}"
        elif name == "arith.negf":
            expr = f"-{paren(args[0])}" if not args[0].startswith("(") else f"-{args[0]}"
        elif name in ("arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf"):
            if name.endswith("numf"):
                fn = ("fmax" if "max" in name else "fmin") + ("f" if f32 else "")
                self.shared.math = True
            else:
                fn = "irkit_" + ("maximum" if "max" in name else "minimum") + ("f" if f32 else "")
                self.shared.use(fn)
            expr = f"{fn}({args[0]}, {args[1]})"
        elif name in ("arith.maxsi", "arith.minsi"):
            width = "i32" if ctype == "int32_t" else "i64"
            fn = f"irkit_{'max' if name == 'arith.maxsi' else 'min'}_{width}"
            self.shared.use(fn)
            expr = f"{fn}({args[0]}, {args[1]})"
        elif name in _MATH:
            fn = _MATH[name] + ("f" if f32 else "")
            fast = c_math.relaxed_function(name, ctype) if self.relaxed else None
            if fast is not None:
                fn = fast
                self.shared.use(fast)
            self.shared.math = True
            expr = f"{fn}({', '.join(args)})"
        elif name == "math.rsqrt":
            self.shared.math = True
            expr = f"{'1.0f' if f32 else '1.0'} / {'sqrtf' if f32 else 'sqrt'}({args[0]})"
        elif name == "arith.cmpf":
            pred = _cmp_name(op, "f")
            expr = _CMPF[pred].format(a=args[0], b=args[1])
        elif name == "arith.cmpi":
            pred = _cmp_name(op, "i")
            unsigned = "uint32_t" if c_type(op.operands[0].type) == "int32_t" else "uint64_t"
            expr = _CMPI[pred].format(a=args[0], b=args[1], u=unsigned)
        elif name == "arith.select":
            expr = f"{args[0]} ? {args[1]} : {args[2]}"
        elif name in _CASTS:
            expr = f"({ctype}){args[0]}"
        else:
            raise self.fail(f"no C translation for '{name}'", op)
        if op in self.assign:
            acc = self.assign[op]
            self.emit(indent, f"{acc} = {expr};")
            self.values[result] = acc
            return
        var = self.value_name(result)
        self.emit(indent, f"const {ctype} {var} = {expr};")
        self.values[result] = var

    def emit_constant(self, op: Operation) -> None:
        value = op.properties.get("value")
        if value is None:
            value = op.attributes.get("value")
        result = op.results[0]
        if isinstance(value, FloatAttr):
            text = float_literal(value.value.data, result.type)
            if "INFINITY" in text or "NAN" in text:
                self.shared.math = True
        elif isinstance(value, IntegerAttr):
            text = int_literal(value.value.data, result.type)
            if isinstance(result.type, IndexType | IntegerType):
                self.consts[result] = value.value.data
        else:
            raise self.fail(f"unsupported constant {value}", op)
        self.values[result] = text


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def _cmp_name(op: Operation, kind: str) -> str:
    table = CMPF_COMPARISON_OPERATIONS if kind == "f" else CMPI_COMPARISON_OPERATIONS
    pred = op.properties["predicate"]
    assert isinstance(pred, IntegerAttr)
    return table[pred.value.data]


# ------------------------------------------------------------------ module


def check_loop_level(module: ModuleOp) -> None:
    """A located `DiagnosticError` unless `module` is kernels of loop-level IR, each with a body
    and its own name."""
    kernels: list[func.FuncOp] = []
    for op in module.body.block.ops:
        if isinstance(op, func.FuncOp):
            if op.is_declaration:
                raise DiagnosticError([at_op("error", "C backend: a kernel declaration has no body", op)])
            kernels.append(op)
        else:
            raise DiagnosticError(
                [
                    at_op(
                        "error",
                        f"C backend: '{op.name}' is not loop-level IR; lower it first "
                        "(irkit-opt -p lower-design,lower-tensorop)",
                        op,
                    )
                ]
            )
    for kernel in kernels:
        for op in kernel.body.walk():
            if op.name.startswith(("design.", "tensorop.")):
                raise DiagnosticError(
                    [at_op("error", f"C backend: '{op.name}' is not loop-level IR; run lower-tensorop first", op)]
                )
    if not kernels:
        raise DiagnosticError([Diagnostic("error", "C backend: the module holds no kernel function", "<module>")])
    seen: set[str] = set()
    for kernel in kernels:
        name = kernel.sym_name.data
        if name in seen:
            raise DiagnosticError([at_op("error", f"C backend: two kernels are called '{name}'", kernel)])
        seen.add(name)


def emit_c(module: ModuleOp, language: CLanguage | None = None, cflags: list[str] | None = None) -> str:
    """C99 source for every kernel of a loop-level module; `DiagnosticError` for what C cannot hold.

    `language`: the hooks for what a C-like language spells differently (`c_language`).  `cflags`:
    the flags it will be built with (None: the defaults); no explicit vector is wider than the
    registers of their target (`irkit.backends.build.vector_bytes`)."""
    from irkit.backends.build import vector_bytes

    lang = language if language is not None else CLanguage()
    widest = vector_bytes(cflags)
    check_loop_level(module)
    # The kernels are written without dead code, from a pruned copy when there is any (the
    # caller's module stays as it is); lowering leaves none, and then no copy is made.
    kernels = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    if any(c_plan.has_dead_code(kernel) for kernel in kernels):
        module = module.clone()
        kernels = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
        for kernel in kernels:
            c_plan.eliminate_dead_code(kernel)
    shared = _Module()
    bodies: list[list[str]] = []
    for kernel in kernels:
        bodies.append(KernelEmitter(kernel, shared, lang, widest).run())
    return assemble(kernels, shared, bodies, lang)


def assemble(kernels: list[func.FuncOp], shared: _Module, bodies: list[list[str]], lang: CLanguage) -> str:
    names = ", ".join(k.sym_name.data for k in kernels)
    docs = sorted({k.location.filename.data for k in kernels if isinstance(k.location, FileLineColLoc)})
    source = f" from {', '.join(docs)}" if docs else ""
    out = [
        "/* " + _comment(f"Generated by irkit{source}: kernel{'s' if len(kernels) > 1 else ''} {names}.") + " */",
        "/* " + _comment(lang.banner()) + " */",
        *lang.prelude(shared.alloc, shared.math),
        "",
    ]
    for helper in _HELPERS:
        if helper in shared.helpers:
            out.append(_HELPERS[helper])
    out.extend(c_math.helper_texts(shared.helpers))
    out.extend(c_simd.helper_texts(shared.helpers, lang))
    if shared.helpers:
        out.append("")
    for i, (kernel, body) in enumerate(zip(kernels, bodies)):
        if i:
            out.append("")
        out.extend(lang.relaxed_math_region(body) if relaxed_math(kernel) else body)
    return "\n".join(out) + "\n"
