"""Explicit SIMD code for the C backend: vector loops of constant trip count, and
register tiles (`loop.local`).

`#pragma omp simd` leaves it to gcc to keep a register tile in registers, and
it does not reliably: the accumulators of a GEMM micro-kernel end up in stack
memory and the kernel runs at a fraction of the machine's FMA rate.  Where the
IR says exactly what the registers are, the backend writes them with GCC's
vector extensions (also understood by clang):

    typedef float irkit_f32x8 __attribute__((vector_size(32)));

**Explicit vector loops.**  A `loop.for` with `vector = W` (a power of two,
at least 2), step 1, a trip count `T` known to be a multiple of `W` (one
lower-bound result `l`, one upper-bound result `l + T`, `T / W <= 16`), and a
body of loads, stores, constants and `f32`/`f64` `addf`/`subf`/`mulf`/`divf`/
`negf` becomes a block that computes all `T/W` groups of `W` lanes at once:

    {   /* loop jv, vector 8: 16 iterations as 2 vectors */
        const int64_t jv = jr;
        const float A_v = Ap[...];                      (does not vary with jv: one scalar)
        irkit_f32x8 B_v; __builtin_memcpy(&B_v, &Bp[... + jv], sizeof B_v);
        irkit_f32x8 B_v_1; __builtin_memcpy(&B_v_1, &Bp[... + jv + 8], sizeof B_v_1);
        C_acc_0 = C_acc_0 + A_v * B_v; ...
    }

provided every access whose address varies with the loop is contiguous in it
(the loop variable appears, with coefficient 1, only in the index of the
buffer's innermost storage dimension) or strided (any other constant
coefficients: written one lane at a time, `{X[i], X[i + n], ...}` and
`X[i] = v[0]; ...`, as gcc writes them under `omp simd`; a register tile of
output channels in lanes loads and stores its accumulators this way, outside
the reduction) and every stored buffer is accessed at
the stored element only, or at elements that differ by a constant in an
outer dimension (the rows of a register tile), so the lanes are independent.
An accumulation `X[f] = X[f] + a * b` is one fused multiply-add per vector
(`irkit_fma_f32x8`: the FMA intrinsic where the target has it, else
`a * b + c`): the build's `-std=c99` does not let gcc contract `a * b + c`
by itself, and contracting everywhere (`-ffp-contract=fast`) would change
elementwise results beyond the oracle's tolerance (a product cancelled by an
addend); a reduction already differs from the oracle by reassociation.  Values that do not
vary with the loop are scalars (C converts a scalar operand of a vector
operation to a vector).  Loads and stores are `__builtin_memcpy`, so no
alignment is assumed (gcc makes them plain vector moves).  Other vector loops keep the `#pragma omp simd`
path of `irkit.backends.c`.

**Register tiles.**  A `loop.local` whose accesses are all either in explicit
vector loops, at a constant index except for the innermost dimension, whose
index is the loop variable plus a constant multiple of `W` once the loop
starts (`acc[jv - jr]` in a loop from `jr`), or elsewhere at constant
indices, becomes one vector variable per `W` elements (`C_acc_0`, `C_acc_1`)
that gcc keeps in registers; a constant-index access outside a vector loop
reads or writes one lane (`C_acc_1[3]`).  Any other local is a flat C array.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import Float32Type, Float64Type, MemRefType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from irkit.affine.linear import Lin, no_div, try_lin_of
from irkit.backends.build import WIDEST_VECTOR_BYTES
from irkit.backends.c_language import CLanguage
from irkit.backends.c_plan import reciprocal_divisor
from irkit.backends.c_syntax import c_type
from irkit.backends.c_syntax import comment as _comment
from irkit.dialects.loop import ForOp, LoadOp, LocalOp, StoreOp

MAX_GROUPS = 16  # most vectors one explicit loop is unrolled into
# The widest vector register of the targets irkit builds for (AVX-512: 64 bytes), the default of
# `vector_bytes`.  A vector loop wider than the target's registers (`vectorize jv by 32` on f32 with
# AVX-512, `by 16` with AVX2) is written as groups of vectors as wide as they are: gcc keeps a GNU
# vector wider than any register in stack memory (a 2 x 16 f32 register block ran 3x slower than
# the 1 x 16 one on the Zen 5 guest, with 876 stack accesses; 16-lane vectors ran 9x slower than
# two of 8 on the AVX2 Zen 3 guest), and finds no FMA for it.  The emitter is given the width of
# the build's target (`irkit.backends.build.vector_bytes`).
MAX_VECTOR_BYTES = WIDEST_VECTOR_BYTES
_BYTES = {"f32": 4, "f64": 8}
_ARITH = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}

# ------------------------------------------------------------------ C text


def _short(t: Attribute) -> str | None:
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    return None


def vector_type(t: Attribute, width: int) -> str:
    return f"irkit_{_short(t)}x{width}"


def helper_texts(helpers: set[str], lang: CLanguage | None = None) -> list[str]:
    """The typedefs of the vector types in `helpers` (sorted; `lang.vector_typedef`).

    Loads and stores are `__builtin_memcpy` at the use (no helper functions: a
    function taking a vector wider than the target's registers draws gcc's
    -Wpsabi warning, and the kernels build with -Werror in the tests)."""
    out: list[str] = []
    for h in sorted(helpers):
        if not h.startswith(("irkit_f32x", "irkit_f64x")):
            continue
        short, width = h[len("irkit_") :].split("x")
        ctype = "float" if short == "f32" else "double"
        size = int(width) * (4 if short == "f32" else 8)
        out.append((lang or CLanguage()).vector_typedef(ctype, h, size))
    for h in sorted(helpers):
        if h.startswith("irkit_fma_"):
            out += _fma_text(h)
    return out


# (element, lanes) -> (condition, intrinsic, intrinsic vector type) of a fused multiply-add
_FMA_INTRINSICS = {
    ("f32", 4): ("defined(__FMA__)", "_mm_fmadd_ps", "__m128"),
    ("f32", 8): ("defined(__FMA__) && defined(__AVX__)", "_mm256_fmadd_ps", "__m256"),
    ("f32", 16): ("defined(__AVX512F__)", "_mm512_fmadd_ps", "__m512"),
    ("f64", 2): ("defined(__FMA__)", "_mm_fmadd_pd", "__m128d"),
    ("f64", 4): ("defined(__FMA__) && defined(__AVX__)", "_mm256_fmadd_pd", "__m256d"),
    ("f64", 8): ("defined(__AVX512F__)", "_mm512_fmadd_pd", "__m512d"),
}


def _fma_text(helper: str) -> list[str]:
    """`irkit_fma_f32x8(a, b, c)`: a * b + c rounded once where the target has the instruction."""
    vt = "irkit_" + helper[len("irkit_fma_") :]
    short, width = vt[len("irkit_") :].split("x")
    plain = f"#define {helper}(a, b, c) ((a) * (b) + (c))"
    found = _FMA_INTRINSICS.get((short, int(width)))
    if found is None:
        return [f"/* {vt}: no fused multiply-add instruction of this width is known; two roundings. */", plain]
    cond, fn, it = found
    return [
        f"#if (defined(__x86_64__) || defined(__i386__)) && {cond}",
        "#include <immintrin.h>",
        f"#define {helper}(a, b, c) (({vt}){fn}(({it})(a), ({it})(b), ({it})(c)))",
        "#else",
        plain + "  /* no FMA instruction: two roundings */",
        "#endif",
    ]


# ------------------------------------------------------------ linear forms


def _lin(expr: AffineExpr, operands: Sequence[SSAValue]) -> Lin | None:
    """The index as a linear form over the access's operands (no divisions), or None."""
    return try_lin_of(expr, operands, div=no_div)


def _used(op: LoadOp | StoreOp) -> set[int]:
    return set().union(*(r.used_dims() for r in op.map.data.results)) if op.map.data.results else set()


def _uses(op: LoadOp | StoreOp, value: SSAValue) -> bool:
    used = _used(op)
    return any(v is value and k in used for k, v in enumerate(op.indices))


def _order(memref: Attribute) -> list[int]:
    from irkit.kernel_abi import layout_order

    assert isinstance(memref, MemRefType)
    return layout_order(memref)


# ------------------------------------------------------------------ plans


@dataclass
class LoopPlan:
    width: int
    groups: int
    lower: Lin  # the loop variable's first value
    varying: set[SSAValue] = field(default_factory=set)
    strided: set[int] = field(default_factory=set)  # id() of accesses written one lane at a time


def plan_loop(loop: ForOp, vector_bytes: int = MAX_VECTOR_BYTES) -> LoopPlan | None:
    """How `loop` is written as explicit vectors of at most `vector_bytes`, or None (see the module doc)."""
    if loop.vector is None or loop.step_value != 1:
        return None
    width = loop.vector.value.data
    if width < 2 or width & (width - 1):
        return None
    if len(loop.lower.data.results) != 1 or len(loop.upper.data.results) != 1:
        return None
    lo = _lin(loop.lower.data.results[0], list(loop.lower_operands))
    hi = _lin(loop.upper.data.results[0], list(loop.upper_operands))
    if lo is None or hi is None:
        return None
    diff = hi - lo
    body = list(loop.body.block.ops)
    widest = max((_BYTES.get(_short(t) or "", 0) for op in body for t in (*op.result_types, *op.operand_types)), default=0)
    if widest:
        width = min(width, max(2, vector_bytes // widest))
    if diff.terms or diff.const <= 0 or diff.const % width or diff.const // width > MAX_GROUPS:
        return None
    iv = loop.induction_var
    varying: set[SSAValue] = {iv}
    strided: set[int] = set()

    def walkable(op: LoadOp | StoreOp) -> bool:
        """Contiguous in the loop, or strided (then written one lane at a time)."""
        if _contiguous(op, iv):
            return True
        if _strided(op, iv):
            strided.add(id(op))
            return True
        return False

    for op in body:
        if op.regions:
            return None
        if isinstance(op, LoadOp):
            if any(v in varying and v is not iv for v in op.indices):
                return None
            if _uses(op, iv):
                if _short(op.result.type) is None or not walkable(op):
                    return None
                varying.add(op.result)
        elif isinstance(op, StoreOp):
            if any(v in varying and v is not iv for v in op.indices):
                return None
            if not _uses(op, iv) or _short(op.value.type) is None or not walkable(op):
                return None
        elif any(v in varying for v in op.operands):
            if op.name not in _ARITH and op.name != "arith.negf":
                return None
            if len(op.results) != 1 or _short(op.results[0].type) is None:
                return None
            varying.add(op.results[0])
    stores = [o for o in body if isinstance(o, StoreOp)]
    for st in stores:
        for o in body:
            if isinstance(o, LoadOp | StoreOp) and o is not st and o.memref is st.memref:
                same = o.map.data == st.map.data and list(o.indices) == list(st.indices)
                if not same and not _apart(o, st, iv):
                    return None
    return LoopPlan(width, diff.const // width, lo, varying, strided)


def _apart(a: LoadOp | StoreOp, b: LoadOp | StoreOp, iv: SSAValue) -> bool:
    """Do `a` and `b` never touch the same element, whatever the lanes: the index of a dimension
    that the lanes do not move (the loop variable `iv` is not in it) differs by a nonzero constant."""
    for ra, rb in zip(a.map.data.results, b.map.data.results):
        la, lb = _lin(ra, list(a.indices)), _lin(rb, list(b.indices))
        if la is not None and lb is not None and iv not in la.terms and iv not in lb.terms:
            diff = la - lb
            if diff.is_const and diff.const != 0:
                return True
    return False


def _contiguous(op: LoadOp | StoreOp, iv: SSAValue) -> bool:
    """The loop variable appears with coefficient 1 in the innermost storage dimension's index only."""
    order = _order(op.memref.type)
    for d, r in enumerate(op.map.data.results):
        lin = _lin(r, list(op.indices))
        k = lin.terms.get(iv, 0) if lin is not None else None
        if d == order[-1]:
            if k != 1:
                return False
        elif k is None or k != 0:
            return False
    return True


def _strided(op: LoadOp | StoreOp, iv: SSAValue) -> bool:
    """The loop variable appears in the indices, with constant coefficients, and moves the
    access by a nonzero number of elements (a column of a row-major tensor): written one lane
    at a time, as gcc writes such an access under `omp simd`.  Register tiles of
    lanes across rows (`vectorize fv`, output channels in lanes) load and store their
    accumulators this way, outside the reduction."""
    moved = False
    for r in op.map.data.results:
        lin = _lin(r, list(op.indices))
        if lin is None:
            return False
        if lin.terms.get(iv, 0) != 0:
            moved = True
    return moved


@dataclass
class Tile:
    """A register tile: one vector variable per `width` elements (row-major chunks)."""

    width: int
    vtype: str
    names: dict[int, str] = field(default_factory=dict)  # chunk -> C variable


def _chunk(
    op: LoadOp | StoreOp, shape: list[int], width: int, plan: LoopPlan | None, iv: SSAValue | None
) -> int | None:
    """The chunk (and, outside vector loops, lane) an access to a register tile touches."""
    flat = 0
    for d, r in enumerate(op.map.data.results):
        lin = _lin(r, list(op.indices))
        if lin is None:
            return None
        if plan is not None and iv is not None and iv in lin.terms:
            k = lin.terms[iv]
            # iv = lower + lane: index = k*lower + rest + k*lane
            total = lin.without(iv) + plan.lower.scale(k)
            if total.terms or k != 1 or d != len(shape) - 1 or total.const % width:
                return None
            index = total.const
        else:
            if lin.terms:
                return None
            index = lin.const
        if not 0 <= index < shape[d]:
            return None
        flat = flat * shape[d] + index
    return flat


def plan_tile(local: LocalOp, plans: dict[int, LoopPlan | None], vector_bytes: int = MAX_VECTOR_BYTES) -> Tile | None:
    memref = local.result.type
    assert isinstance(memref, MemRefType)
    shape = list(memref.get_shape())
    short = _short(memref.element_type)
    if short is None:
        return None
    width: int | None = None
    for use in local.result.uses:
        op = use.operation
        if not isinstance(op, LoadOp | StoreOp) or (isinstance(op, StoreOp) and use.index != 1):
            return None
        parent = op.parent_op()
        plan = None
        if isinstance(parent, ForOp) and parent.vector is not None:
            if id(parent) not in plans:
                plans[id(parent)] = plan_loop(parent, vector_bytes)
            plan = plans[id(parent)]
            if plan is None:
                return None
            if width is None:
                width = plan.width
            elif width != plan.width:
                return None
    if width is None or shape[-1] % width:
        return None
    for use in local.result.uses:
        op = use.operation
        assert isinstance(op, LoadOp | StoreOp)
        parent = op.parent_op()
        plan = plans.get(id(parent)) if isinstance(parent, ForOp) else None
        iv = parent.induction_var if plan is not None and isinstance(parent, ForOp) else None
        if _chunk(op, shape, width, plan, iv) is None:
            return None
    return Tile(width, vector_type(memref.element_type, width))


# ------------------------------------------------------------------ emitter


class SimdEmitter:
    """The explicit-SIMD part of a `KernelEmitter` (`em`): locals and vector loops."""

    def __init__(self, em) -> None:
        self.em = em
        self.plans: dict[int, LoopPlan | None] = {}
        self.tiles: dict[SSAValue, Tile] = {}

    def plan(self, loop: ForOp) -> LoopPlan | None:
        if id(loop) not in self.plans:
            self.plans[id(loop)] = plan_loop(loop, self.em.vector_bytes)
        return self.plans[id(loop)]

    def emit_op(self, op: Operation, indent: int) -> bool:
        """Write `op` if it is this module's business; False to let the caller write it."""
        if isinstance(op, LocalOp):
            self.emit_local(op, indent)
            return True
        if isinstance(op, ForOp) and op.vector is not None and self.plan(op) is not None:
            self.emit_loop(op, indent)
            return True
        if isinstance(op, LoadOp | StoreOp) and op.memref in self.tiles:
            self.emit_lane(op, indent)
            return True
        return False

    # ---- locals
    def emit_local(self, op: LocalOp, indent: int) -> None:
        em = self.em
        name = op.tensor_name.data
        from irkit.names import check_name

        check_name(name, "temporary", op)
        memref = op.result.type
        assert isinstance(memref, MemRefType)
        shape = list(memref.get_shape())
        ctype = _ctype(memref.element_type)
        if ctype is None:
            raise em.fail(f"local '{name}': element type {memref.element_type} has no C type here", op)
        tile = plan_tile(op, self.plans, self.em.vector_bytes)
        if tile is not None:
            count = 1
            for n in shape:
                count *= n
            em.shared.use(tile.vtype)
            names = []
            for chunk in range(count // tile.width):
                var = em.fresh(f"{name}_{chunk}")
                tile.names[chunk] = var
                names.append(f"{var} = {{0}}")
            em.emit(indent, f"/* local {name}{list(shape)}: {len(names)} vector registers of {tile.width} */")
            em.emit(indent, f"{tile.vtype} {', '.join(names)};")
            self.tiles[op.result] = tile
            em.values[op.result] = name
            return
        var = em.fresh(name)
        count = 1
        for n in shape:
            count *= n
        # One flat C array: accesses are addressed row-major through `make_buffer`'s strides
        # (`C_acc0[2*r + c]`), so a `[16][2]` declaration would make `C_acc0[..]` a row.
        em.emit(indent, f"{ctype} {var}[{count}];")
        buf = em.make_buffer(var, memref, AffineMap(0, 0, tuple(AffineExpr.constant(n) for n in shape)), [], op)
        em.buffers[op.result] = buf
        em.values[op.result] = var

    def emit_lane(self, op: LoadOp | StoreOp, indent: int) -> None:
        """A constant-index access to a register tile outside a vector loop: one lane."""
        em = self.em
        tile = self.tiles[op.memref]
        memref = op.memref.type
        assert isinstance(memref, MemRefType)
        flat = _chunk(op, list(memref.get_shape()), tile.width, None, None)
        assert flat is not None
        lane = f"{tile.names[flat // tile.width]}[{flat % tile.width}]"
        if isinstance(op, LoadOp):
            name = em.value_name(op.result, f"{op.memref.owner.tensor_name.data}_v")  # type: ignore[union-attr]
            em.emit(indent, f"const {_ctype(op.result.type)} {name} = {lane};")
            em.values[op.result] = name
        else:
            em.emit(indent, f"{lane} = {em.ref(op.value)};")

    # ---- loops
    def emit_loop(self, loop: ForOp, indent: int) -> None:
        em = self.em
        plan = self.plan(loop)
        assert plan is not None
        from irkit.names import check_name

        lname = check_name(loop.loop_name.data, "loop", loop)
        lb = em.bound(loop.lower.data, loop.lower_operands, "irkit_max_i64")
        origin = f" ({loop.origin.data})" if loop.origin is not None else ""
        stage = f", stage {loop.stage.data}" if loop.stage is not None else ""
        lanes = f"{plan.groups} vector{'s' if plan.groups > 1 else ''} of {plan.width}"
        em.emit(indent, "/* " + _comment(f"loop {lname}{stage}, vector {plan.width}: {lanes}{origin}") + " */")
        em.emit(indent, "{")
        em.scopes.append(set())
        inner = indent + 1
        iv = em.fresh(lname)
        em.values[loop.induction_var] = iv
        em.emit(inner, f"const int64_t {iv} = {lb};")
        vals: dict[tuple[SSAValue, int], str] = {}
        ivv = loop.induction_var
        fused = _fusions(loop, plan)
        splats: dict[SSAValue, str] = {}
        for op in loop.body.block.ops:
            if op in em.skip or any(op is m for m, _ in fused.values()):
                continue
            if id(op) in fused:
                self._emit_fma(op, fused[id(op)], plan, vals, splats, inner)
                continue
            if isinstance(op, LoadOp):
                if op.result not in plan.varying:
                    self._scalar_load(op, inner)
                    continue
                vt = vector_type(op.result.type, plan.width)
                em.shared.use(vt)
                for g in range(plan.groups):
                    name = em.value_name(op.result, f"{em.values[op.memref]}_v")
                    if op.memref in self.tiles:
                        em.emit(inner, f"const {vt} {name} = {self._tile_var(op, g, plan, ivv)};")
                    elif id(op) in plan.strided:
                        em.emit(inner, f"const {vt} {name} = {{{', '.join(self._lanes(op, g, plan, ivv))}}};")
                    else:
                        addr = em.address(op.memref, self._shifted(op, g * plan.width, ivv), op.indices)
                        em.emit(inner, f"{vt} {name};")
                        em.emit(inner, f"__builtin_memcpy(&{name}, &{addr}, sizeof {name});")
                    vals[(op.result, g)] = name
            elif isinstance(op, StoreOp):
                vt = vector_type(op.value.type, plan.width)
                em.shared.use(vt)
                if op.memref not in self.tiles:
                    em.buffers_name(op.memref, op)
                for g in range(plan.groups):
                    value = self._operand(op.value, g, plan, vals)
                    if op.value not in plan.varying:  # the same value in every lane
                        lanes = em.fresh(f"{em.values[op.memref]}_b")
                        em.emit(inner, f"const {vt} {lanes} = {{{', '.join([value] * plan.width)}}};")
                        value = lanes
                    if op.memref in self.tiles:
                        em.emit(inner, f"{self._tile_var(op, g, plan, ivv)} = {value};")
                    elif id(op) in plan.strided:
                        for lane, addr in enumerate(self._lanes(op, g, plan, ivv)):
                            em.emit(inner, f"{addr} = {value}[{lane}];")
                    else:
                        addr = em.address(op.memref, self._shifted(op, g * plan.width, ivv), op.indices)
                        em.emit(inner, f"__builtin_memcpy(&{addr}, &{value}, sizeof {value});")
            elif op.results and op.results[0] in plan.varying:
                result = op.results[0]
                vt = vector_type(result.type, plan.width)
                for g in range(plan.groups):
                    args = [self._operand(v, g, plan, vals) for v in op.operands]
                    if op.name == "arith.negf":
                        expr = f"-{args[0]}"
                    elif em.relaxed and op.operands[1] not in plan.varying and reciprocal_divisor(op):
                        one = "1.0f" if _short(result.type) == "f32" else "1.0"
                        expr = f"{args[0]} * ({one} / {args[1]})"  # as `irkit.backends.c` writes it
                    else:
                        expr = f"{args[0]} {_ARITH[op.name]} {args[1]}"
                    name = em.value_name(result)
                    em.emit(inner, f"const {vt} {name} = {expr};")
                    vals[(result, g)] = name
            elif op.name == "arith.constant":
                em.emit_constant(op)
            else:
                em.emit_scalar(op, inner)
        em.scopes.pop()
        em.emit(indent, "}")

    def _emit_fma(
        self,
        add: Operation,
        fusion: tuple[Operation, SSAValue],
        plan: LoopPlan,
        vals: dict[tuple[SSAValue, int], str],
        splats: dict[SSAValue, str],
        indent: int,
    ) -> None:
        """`acc + a * b` of an accumulation, as one fused multiply-add per vector."""
        em = self.em
        mul, acc = fusion
        result = add.results[0]
        vt = vector_type(result.type, plan.width)
        helper = "irkit_fma_" + vt[len("irkit_") :]
        em.shared.use(helper)
        for v in mul.operands:
            if v not in plan.varying and v not in splats:
                text = self._operand(v, 0, plan, vals)
                name = em.fresh(f"{text}_s" if text.isidentifier() else "splat")
                em.emit(indent, f"const {vt} {name} = {{{', '.join([text] * plan.width)}}};")
                splats[v] = name
        for g in range(plan.groups):
            a, b = (splats[v] if v in splats else self._operand(v, g, plan, vals) for v in mul.operands)
            name = em.value_name(result)
            em.emit(indent, f"const {vt} {name} = {helper}({a}, {b}, {self._operand(acc, g, plan, vals)});")
            vals[(result, g)] = name

    def _scalar_load(self, op: LoadOp, indent: int) -> None:
        em = self.em
        if op.memref in self.tiles:
            self.emit_lane(op, indent)
            return
        name = em.value_name(op.result, f"{em.buffers_name(op.memref, op)}_v")
        addr = em.address(op.memref, op.map.data, op.indices)
        em.emit(indent, f"const {em.scalar_type(op.result, op)} {name} = {addr};")
        em.values[op.result] = name

    def _operand(self, value: SSAValue, g: int, plan: LoopPlan, vals: dict[tuple[SSAValue, int], str]) -> str:
        if value in plan.varying:
            return vals[(value, g)]
        text = self.em.ref(value)
        return f"({text})" if text.startswith("-") else text

    def _shifted(self, op: LoadOp | StoreOp, offset: int, iv: SSAValue) -> AffineMap:
        amap = op.map.data
        n = len(op.indices)
        dims = [
            AffineExpr.dimension(k) + offset if v is iv else AffineExpr.dimension(k) for k, v in enumerate(op.indices)
        ]
        return AffineMap(n, 0, tuple(r.replace_dims_and_symbols(dims, []) for r in amap.results))

    def _lanes(self, op: LoadOp | StoreOp, g: int, plan: LoopPlan, iv: SSAValue) -> list[str]:
        """The element each lane of group `g` of a strided access reads or writes."""
        first = g * plan.width
        return [self.em.address(op.memref, self._shifted(op, first + lane, iv), op.indices) for lane in range(plan.width)]

    def _tile_var(self, op: LoadOp | StoreOp, g: int, plan: LoopPlan, iv: SSAValue) -> str:
        tile = self.tiles[op.memref]
        memref = op.memref.type
        assert isinstance(memref, MemRefType)
        flat = _chunk(op, list(memref.get_shape()), tile.width, plan, iv)
        assert flat is not None
        return tile.names[flat // tile.width + g]


def _fusions(loop: ForOp, plan: LoopPlan) -> dict[int, tuple[Operation, SSAValue]]:
    """The accumulations of the loop body to write as fused multiply-adds: id(addf) -> (the
    mulf, the accumulator operand) for `X[f] = X[f] + a * b` (a stored value that adds a
    single-use product to the element just loaded from the same place).  Only there: a
    reduction's result may differ from the oracle's by its reassociation already, and
    fusing is one rounding fewer; elsewhere the kernel rounds as the document says."""
    out: dict[int, tuple[Operation, SSAValue]] = {}
    for st in loop.body.block.ops:
        if not isinstance(st, StoreOp) or st.value not in plan.varying:
            continue
        add = st.value.owner
        if not isinstance(add, Operation) or add.name != "arith.addf" or not st.value.has_one_use():
            continue
        for acc, prod in (add.operands, tuple(reversed(add.operands))):
            ld = acc.owner
            mul = prod.owner
            if (
                isinstance(ld, LoadOp)
                and ld.memref is st.memref
                and ld.map.data == st.map.data
                and list(ld.indices) == list(st.indices)
                and isinstance(mul, Operation)
                and mul.name == "arith.mulf"
                and prod.has_one_use()
                and mul.parent_block() is add.parent_block()
                and any(v in plan.varying for v in mul.operands)
            ):
                out[id(add)] = (mul, acc)
                break
    return out


def _ctype(t: Attribute) -> str | None:
    return c_type(t)
