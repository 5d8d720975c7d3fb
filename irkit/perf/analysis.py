"""From a loop-level kernel to cost terms: counts, footprints and cache traffic as expressions.

This is the analysis behind `model-perf` (docs/perf-model.md states the
model).  It reads the loop IR exactly as the C backend will emit it and
derives, per top-level loop nest, expressions of the symbolic sizes:

- **work**: floating-point instructions by kind (add-class, fma, div, sqrt,
  exp), counted per *core* (the busiest one: a parallel loop of n
  iterations gives each core at most ceil(n / cores) of them), in vector
  instructions where the loop is vectorised (explicitly, or -- for an
  innermost loop with unit-stride accesses and no carried dependence --
  by gcc's auto-vectoriser), and the flops they perform;
- **latency chains**: steps of loops that accumulate into (per vector chunk when vectorised)
  one location, which cannot go faster than the add latency;
- **L1 bytes**: the bytes every load and store instruction moves;
- **cache traffic** (`irkit.perf.footprint`): lines moved into a cache of `cap` lines, as one
  expression with the capacity left symbolic, so the runtime evaluates it
  for each level of whatever hardware it is given;
- **parallelism**: how many cores are busy, and how often a parallel loop
  is entered (fork/join).

Sums over loops whose bounds depend on outer loops (tiles with tails) use
the *first/last* rule: n iterations are n - 1 copies of the first and one
of the last.  It is exact for what the schedule passes produce (only the
last tile is partial), so flop counts match hand formulas exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DictionaryAttr, Float32Type, Float64Type, IndexType, IntegerType, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from irkit.affine.printer import AffinePrinter
from irkit.dialects import loop as lp
from irkit.kernel_abi import kernel_args, layout_order
from irkit.perf import expr as ex
from irkit.perf.expr import Expr
from irkit.perf.footprint import traffic
from irkit.perf.loop_tree import (
    CAP,
    CORES,
    HUGE_PAGE,
    LANES32,
    LANES64,
    LINE,
    SETS,
    STREAMS,
    WAYS,
    WINDOW,
    Access,
    Buffer,
    Loop,
    ModelError,
    total_over,
    unit_or_invariant,
)
from irkit.perf.runtime import CONFLICT_SHARES, PART_PREFIX, is_core_count

LOOP_CONTROL = 2  # instructions of a loop's own per iteration (the increment, the compare-and-branch)

MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: larger blocks are always mmapped

# Instruction counts carry the width of their instructions in the key's suffix, which the
# pricing turns into bits with the hardware's vector width: `instr_fp` full-width vectors (gcc's
# own vectorisation), `instr_fp_v8` chunks of a `vectorize ... by 8` loop (8 lanes, or as many
# full vectors as 8 lanes take), `instr_fp_s` scalar instructions.  `64` after the kind marks f64.
SCALAR = "_s"
VECTOR_MARK = "_vec"  # while a vector loop's own counts wait to be counted in chunks

ADD_CLASS = {"arith.addf", "arith.subf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.negf",
             "arith.cmpf", "arith.select", "arith.maxnumf", "arith.minnumf", "math.absf"}  # fmt: skip
KIND_OF = {"arith.divf": "div", "math.sqrt": "sqrt", "math.exp": "exp"}


# What every scalar op the C backend emits costs, by the unit that runs it (irkit.perf.runtime
# prices the kinds): `fp`, an instruction of the FP pipes (adds, multiplies, FMAs, min/max,
# compares, selects, roundings, conversions); `int`, a vector integer instruction (priced like
# `fp`); `div`, `sqrt`, `exp` (irkit's polynomial exp under relaxed_math), on the divider or the
# FP pipes; `idiv`, an integer division (x86 has no vector one: a scalar division); `libm`, a
# call of the C library (every math function without a fast path, priced like expf, the one
# calibrated); `exp_libm`, expf itself.  The second item is the flops an element counts.
FP_OPS = {
    "arith.addf": 1, "arith.subf": 1, "arith.mulf": 1, "arith.maximumf": 1, "arith.minimumf": 1,
    "arith.maxnumf": 1, "arith.minnumf": 1, "arith.negf": 0, "arith.select": 0, "arith.cmpf": 0,
    "math.absf": 0, "math.fma": 2, "math.floor": 0, "math.ceil": 0, "math.round": 0, "math.trunc": 0,
    "math.copysign": 0, "arith.extf": 0, "arith.truncf": 0, "arith.sitofp": 0, "arith.fptosi": 0,
}  # fmt: skip
INT_OPS = {
    "arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori", "arith.xori", "arith.maxsi",
    "arith.minsi", "arith.cmpi", "arith.extsi", "arith.trunci",
}  # fmt: skip
OWN_KIND = {"arith.divf": ("div", 1), "math.sqrt": ("sqrt", 1), "math.rsqrt": ("sqrt", 2), "math.exp": ("exp", 1)}
IDIV_OPS = {"arith.divsi", "arith.remsi"}
LIBM_OPS = {
    "math.exp2", "math.expm1", "math.log", "math.log2", "math.log10", "math.log1p", "math.cbrt",
    "math.tanh", "math.sin", "math.cos", "math.tan", "math.erf", "math.powf", "math.atan2", "arith.remf",
}  # fmt: skip


def price_class(op: Operation) -> tuple[str, int, bool] | None:
    """(kind, flops an element, 64-bit) of a scalar op that does work the model prices; None for
    ops that cost nothing (constants, index arithmetic) or do not compute on data."""
    name = op.name
    operand_types = [v.type for v in op.operands] + [r.type for r in op.results]
    wide = any(isinstance(t, Float64Type) for t in operand_types) or any(
        isinstance(t, IntegerType) and t.width.data == 64 for t in operand_types
    )
    if name in FP_OPS:
        return "fp", FP_OPS[name], wide
    if name in OWN_KIND:
        kind, flops = OWN_KIND[name]
        return kind, flops, wide
    if name in LIBM_OPS:
        return "libm", 1, wide
    if name in INT_OPS or name in IDIV_OPS:
        if any(isinstance(t, IndexType) for t in operand_types):
            return None  # address arithmetic: free, as loop control is
        return ("idiv" if name in IDIV_OPS else "int"), 0, wide
    if name.startswith(("arith.", "math.")) and name not in ("arith.constant", "arith.index_cast"):
        raise ModelError(f"'{name}' has no cost in the model yet")
    return None


# ---- reading the IR ----------------------------------------------------------


def _in_registers(local: lp.LocalOp) -> bool:
    """Does the C backend keep this local in vector registers (`irkit.backends.c_simd`'s register
    tiles)?  The same decision, so that the model prices what the compiler is given."""
    from irkit.backends.c_simd import plan_tile

    return plan_tile(local, {}) is not None


class Reader:
    """Builds the loop tree of one kernel."""

    def __init__(self, kernel: func.FuncOp, stream_threshold: int):
        self.kernel = kernel
        self.stream_threshold = stream_threshold
        self.values: dict[SSAValue, Expr] = {}
        self.buffers: dict[SSAValue, Buffer] = {}
        self.used_names: set[str] = set()
        self._next_suffix: dict[str, int] = {}  # fresh(): the next number to try per base
        self.loops: dict[str, Loop] = {}
        self.top_allocs: list[Buffer] = []  # temporaries allocated once per call
        self.relaxed = _relaxed(kernel)
        sizes, tensors = kernel_args(kernel)
        self.size_names = {s.name for s in sizes}
        for s in sizes:
            self.values[s.value] = ex.sym(s.name)
            self.used_names.add(s.name)
        size_syms = [ex.sym(s.name) for s in sizes]
        for t in tensors:
            shape = [COST_EXPR.print(r, [], size_syms) for r in t.shape.results]
            self.buffers[t.value] = Buffer(t.name, _elem_bytes(t.memref), shape, t.order, t.role)
        self.used_names |= {CAP, SETS, WAYS, LINE, LANES32, LANES64, CORES, WINDOW, STREAMS, HUGE_PAGE, *CONFLICT_SHARES}
        for op in kernel.body.walk():
            if isinstance(op, lp.LoadOp | lp.StoreOp) and op.memref in self.buffers:
                b = self.buffers[op.memref]
                if isinstance(op, lp.LoadOp):
                    b.loaded = True
                else:
                    b.stored = True

    def fresh(self, name: str) -> str:
        """A name not used yet, `name` itself if it is free, else `name_2`, `name_3`, ... (the next
        number is remembered per base, so a loop name every stage reuses costs O(1) each time)."""
        base = f"{name}_" if name in self.used_names or not name.isidentifier() else name
        k = self._next_suffix.get(base, 1)
        out = base if k == 1 else f"{base}{k}"
        while out in self.used_names:
            k += 1
            out = f"{base}{k}"
        self._next_suffix[base] = k + 1
        self.used_names.add(out)
        return out

    def expr_of(self, v: SSAValue) -> Expr:
        got = self.values.get(v)
        if got is None:
            raise ModelError(f"an index operand is not a size or a loop variable ({v})")
        return got

    def map_exprs(self, amap, operands) -> list[Expr]:
        dims = [self.expr_of(v) for v in operands]
        return [COST_EXPR.print(r, dims, []) for r in amap.results]

    def read_block(self, block: Block, parent: Loop | None, top: list[Loop]) -> None:
        for op in block.ops:
            if isinstance(op, lp.ForOp):
                top.append(self.read_loop(op, parent))
            elif isinstance(op, lp.AllocOp):
                sizes = [self.expr_of(v) for v in op.sizes]
                shape = [COST_EXPR.print(r, [], sizes) for r in op.shape.data.results]
                mt = op.result.type
                assert isinstance(mt, MemRefType)
                self.buffers[op.result] = Buffer(op.tensor_name.data, _elem_bytes(mt), shape, layout_order(mt), "temp")
                if parent is None:
                    self.top_allocs.append(self.buffers[op.result])
            elif isinstance(op, lp.LocalOp):
                mt = op.result.type
                assert isinstance(mt, MemRefType)
                shape = [ex.const(n) for n in mt.get_shape()]
                self.buffers[op.result] = Buffer(
                    op.tensor_name.data,
                    _elem_bytes(mt),
                    shape,
                    layout_order(mt),
                    "temp",
                    local=True,
                    registers=_in_registers(op),
                )
            elif parent is not None:
                self.read_op(op, parent)
            elif isinstance(op, lp.LoadOp | lp.StoreOp):
                raise ModelError("a load or store outside every loop is not modelled")

    def read_loop(self, op: lp.ForOp, parent: Loop | None) -> Loop:
        lbs = self.map_exprs(op.lower.data, op.lower_operands)
        ubs = self.map_exprs(op.upper.data, op.upper_operands)
        var = self.fresh(op.loop_name.data)
        loop = Loop(
            var=var,
            name=op.loop_name.data,
            lb=ex.max_(*lbs),
            ub=ex.min_(*ubs),
            step=op.step_value,
            parallel=op.parallel is not None,
            vector=op.vector.value.data if op.vector is not None else None,
            parent=parent,
        )
        self.values[op.induction_var] = ex.sym(var)
        self.loops[var] = loop
        self.read_block(op.body.block, loop, loop.loops)
        self.classify(op, loop)
        if parent is None:  # the nest is whole: what gcc's complete unrolling makes of short chains
            for inner in list(loop.walk()):
                if inner.chain:
                    _unroll_short_chain(inner)
        return loop

    def read_op(self, op: Operation, loop: Loop) -> None:
        if isinstance(op, lp.LoadOp | lp.StoreOp):
            buf = self.buffers.get(op.memref)
            if buf is None:
                raise ModelError(f"access to an unknown buffer ({op.memref})")
            dims: list[tuple[dict[str, int], Expr] | None] = []
            operands = [self.expr_of(v) for v in op.indices]
            for result in op.map.data.results:
                form = lp.linear_form(result, rounded=True)
                if form is None:
                    dims.append(None)
                    continue
                coeffs: dict[str, int] = {}
                rest = ex.const(form[1])
                for pos, k in form[0].items():
                    e = operands[pos]
                    if e.op == "sym" and self._is_loop_var(e.value):  # type: ignore[arg-type]
                        coeffs[e.value] = coeffs.get(e.value, 0) + k  # type: ignore[index]
                    else:
                        rest = rest + e * k
                dims.append((self.effective({v: k for v, k in coeffs.items() if k}), rest))
            loop.accesses.append(Access(buf, isinstance(op, lp.StoreOp), dims, loop))
            return
        name = op.name
        priced = price_class(op)
        if priced is None:
            return
        kind, flops, wide = priced
        if kind == "exp" and not self.relaxed:
            kind = "exp_libm"  # the C library's expf, one call per element: the loop stays scalar
        loop.flops += flops
        if name == "arith.addf" and self._fused(op):
            return  # one FMA with its multiply: that counted the instruction, this the flop
        key = kind + ("64" if wide else "")
        loop.ops[key] = loop.ops.get(key, 0) + 1

    def effective(self, coeffs: dict[str, int]) -> dict[str, int]:
        """Coefficients of the loop variables, including through the lower bounds of windows:
        `a[ii]` with `ii` from `io` moves with `io` too."""
        out = dict(coeffs)
        pending = list(coeffs.items())
        while pending:
            var, k = pending.pop()
            loop = self.loops.get(var)
            if loop is None:
                continue
            node = loop.parent
            while node is not None:
                c = ex.slope(loop.lb, node.var)
                if c:
                    out[node.var] = out.get(node.var, 0) + k * c
                    pending.append((node.var, k * c))
                node = node.parent
        return {v: k for v, k in out.items() if k}

    def _is_loop_var(self, name: str) -> bool:
        return name not in self.size_names

    def _fused(self, add: Operation) -> bool:
        """An addf of a mulf's only use: one FMA when the C contracts it (relaxed_math, or a
        register-tile accumulation, which the vector emitter writes as an FMA)."""
        for operand in add.operands:
            owner = operand.owner
            if isinstance(owner, arith.MulfOp) and len(list(operand.uses)) == 1:
                if self.relaxed:
                    return True
                result = add.results[0]
                for use in result.uses:
                    st = use.operation
                    if isinstance(st, lp.StoreOp) and isinstance(st.memref.owner, lp.LocalOp):
                        return True
        return False

    def _reloaded_by_parent(self, loop: Loop) -> bool:
        """Does the loop read, modify and write locations its parent's next iteration
        reads again (an accumulator kept in memory across an outer reduction loop)?"""
        parent = loop.parent
        if parent is None:
            return False
        for st in loop.accesses:
            if not st.store or st.buf.registers:
                continue
            if not any(not a.store and a.buf is st.buf and a.dims == st.dims for a in loop.accesses):
                continue
            if all(d is not None and parent.var not in d[0] for d in st.dims):
                return True
        return False

    def classify(self, op: lp.ForOp, loop: Loop) -> None:
        """Accumulation chains, gcc's auto-vectorisation and streaming stores of an innermost loop."""
        if loop.loops:
            return
        iv = loop.var
        stores = [a for a in loop.accesses if a.store]
        carried = False
        for st in stores:
            if st.buf.local and loop.vector is not None:
                continue
            invariant = all(d is not None and iv not in d[0] for d in st.dims)
            reloaded = any(not a.store and a.buf is st.buf and a.dims == st.dims for a in loop.accesses)
            if invariant and reloaded:
                carried = True
                loop.chain_store = st
        if carried and (loop.ops.get("fp") or loop.ops.get("fp64")):
            kinds = _chain_kinds(op, self._fused)
            loop.chain = max(1, sum(kinds.values()))
            loop.chain_kinds = kinds or {"add": 1}
        elif self._reloaded_by_parent(loop) and (loop.ops.get("fp") or loop.ops.get("fp64")):
            loop.carry = max(1, _chain_length(op))
        if any(loop.ops.get(k) for k in ("exp_libm", "exp_libm64", "libm", "libm64")):
            loop.vector = None  # gcc cannot vectorise a call of the C library (no fast-math): scalar code
            return
        if loop.vector is None and not carried and loop.step == 1:
            loop.auto_vector = all(unit_or_invariant(a, iv) for a in loop.accesses) and bool(loop.accesses)
        if loop.vector is not None:
            from irkit.backends.c_simd import plan_loop

            # the C backend writes it as explicit vectors (a constant trip count), or leaves it to
            # gcc's `omp simd` loop, whose every entry sets up its trip count and remainder
            loop.simd_entries = plan_loop(op) is None
        from irkit.backends.c_plan import stream_candidate

        st_op = stream_candidate(self.kernel, op)
        if st_op is not None and st_op.memref in self.buffers:
            loop.streamed.add(self.buffers[st_op.memref].name)


# gcc unrolls a loop of a constant trip count completely when it runs at most 16
# times (`max-completely-peel-times`) and the straight-line code stays within about
# 200 instructions (`max-completely-peeled-insns`); instructions per unrolled step
# are counted as the loop body's accesses and floating-point operations.
UNROLLED_TRIPS = 16
UNROLLED_INSNS = 200


def _unroll_short_chain(loop: Loop) -> None:
    """A short accumulation chain in loops gcc unrolls completely, over an element that changes
    with the first loop around that is not unrolled (`top`: a 3x3 filter's r, s inside an output
    pixel loop x), as gcc compiles it: the unrolled loops become straight-line code in `top`,
    which is then the innermost loop (auto-vectorised when its accesses allow); the accumulator is
    loaded and stored once per iteration of `top` (the reloads and stores in between forwarded),
    loads invariant in `top` are hoisted, and the chain overlaps the next iteration's in the
    out-of-order window, so it costs throughput, not latency."""
    unrolled, points, top = [], [{}], loop
    while top.trips().op == "const" and top.lb.op == "const":
        n = int(top.trips().value)  # type: ignore[arg-type]
        if n > UNROLLED_TRIPS or top.parent is None or len(top.parent.loops) != 1:
            return
        if top is not loop and (top.accesses or top.ops):
            return
        values = [int(top.lb.value) + k * top.step for k in range(n)]  # type: ignore[arg-type]
        points = [{**p, top.var: v} for p in points for v in values]
        unrolled.append(top)
        top = top.parent
    if not unrolled or len(points) * (len(loop.accesses) + sum(loop.ops.values())) > UNROLLED_INSNS:
        return
    inner = {u.var for u in unrolled}
    accumulators = [
        a for a in loop.accesses if a.store and all(d is not None and not inner & d[0].keys() for d in a.dims)
    ]
    if not accumulators or not all(any(top.var in d[0] for d in a.dims if d is not None) for a in accumulators):
        return
    top.loops = []
    top.chain = 0
    for kind, count in loop.ops.items():
        top.ops[kind] = top.ops.get(kind, 0) + count * len(points)
    top.flops += loop.flops * len(points)
    seen: set[tuple] = set()
    for a in loop.accesses:
        for point in points:
            dims = [None if d is None else _at_point(d, point) for d in a.dims]
            key = (id(a.buf), a.store, tuple(None if d is None else (tuple(sorted(d[0].items())), d[1]) for d in dims))
            if key in seen:  # the accumulator's reloads and stores, and repeats: once
                continue
            seen.add(key)
            hoisted = not a.store and all(d is not None and top.var not in d[0] for d in dims)
            top.accesses.append(Access(a.buf, a.store, dims, top, hoisted))  # type: ignore[arg-type]
    top.auto_vector = top.vector is None and top.step == 1 and all(unit_or_invariant(a, top.var) for a in top.accesses)


def _at_point(dim: tuple[dict[str, int], Expr], point: dict[str, int]) -> tuple[dict[str, int], Expr]:
    """A dimension of an access with the unrolled loops' variables set to `point`."""
    coeffs, rest = dim
    shift = sum(k * point[v] for v, k in coeffs.items() if v in point)
    return {v: k for v, k in coeffs.items() if v not in point}, rest + shift


# The latency class of each op on an accumulation chain (the description gives a latency per
# class: `fp_latency` for adds, `fma_latency`, `mul_latency`, `max_latency`, `div_latency`).
LATENCY_CLASS = {
    "arith.addf": "add", "arith.subf": "add", "arith.negf": "add", "math.absf": "add",
    "arith.mulf": "mul", "arith.maximumf": "max", "arith.minimumf": "max", "arith.maxnumf": "max",
    "arith.minnumf": "max", "arith.cmpf": "max", "arith.select": "max", "arith.divf": "div",
    "math.sqrt": "div", "math.exp": "fma",
}  # fmt: skip


def _chain_kinds(op: lp.ForOp, fused) -> dict[str, int]:
    """The ops of the longest accumulation chain of an innermost loop (from the load of an
    accumulator to its store), counted by latency class; an add fused with its multiply into an
    FMA (`fused(add)`) counts as `fma`."""
    body = list(op.body.block.ops)
    loads = [o for o in body if isinstance(o, lp.LoadOp)]
    best: list[Operation] = []
    for st in (o for o in body if isinstance(o, lp.StoreOp)):
        sources = {ld.results[0] for ld in loads if ld.memref is st.memref and list(ld.indices) == list(st.indices)}
        if sources:
            path = _longest_path(st.value, sources, op.body.block, {})
            if path is not None and _path_weight(path) > _path_weight(best):
                best = path
    kinds: dict[str, int] = {}
    for o in best:
        cls = LATENCY_CLASS.get(o.name, "add")
        if cls == "add" and o.name == "arith.addf" and fused(o):
            cls = "fma"
        kinds[cls] = kinds.get(cls, 0) + 1
    return kinds


def _path_weight(path: list[Operation]) -> int:
    return sum(2 if o.name in ("arith.maximumf", "arith.minimumf") else 1 for o in path)


def _longest_path(
    v: SSAValue, sources: set[SSAValue], block: Block, memo: dict[SSAValue, list[Operation] | None]
) -> list[Operation] | None:
    """The FP ops on the longest path from one of `sources` to `v` inside `block` (None: no path)."""
    if v in sources:
        return []
    if v in memo:
        return memo[v]
    memo[v] = None
    owner = v.owner
    result = None
    if isinstance(owner, Operation) and owner.parent_block() is block:
        paths = [p for p in (_longest_path(x, sources, block, memo) for x in owner.operands) if p is not None]
        if paths:
            longest = max(paths, key=_path_weight)
            counted = owner.name in ADD_CLASS or owner.name in KIND_OF
            result = [*longest, owner] if counted else longest
    memo[v] = result
    return result


def _chain_length(op: lp.ForOp) -> int:
    """Dependent floating-point ops from the load of an accumulator to its store, the longest
    (a NaN-correct max or min is a compare and a select: 2)."""
    body = list(op.body.block.ops)
    loads = [o for o in body if isinstance(o, lp.LoadOp)]
    best = 0
    for st in (o for o in body if isinstance(o, lp.StoreOp)):
        sources = {ld.results[0] for ld in loads if ld.memref is st.memref and list(ld.indices) == list(st.indices)}
        if sources:
            best = max(best, _path_depth(st.value, sources, op.body.block, {}))
    return best


def _path_depth(v: SSAValue, sources: set[SSAValue], block: Block, memo: dict[SSAValue, int]) -> int:
    """FP ops on the longest path from one of `sources` to `v` inside `block`; -1 if none."""
    if v in sources:
        return 0
    if v in memo:
        return memo[v]
    memo[v] = -1
    owner = v.owner
    result = -1
    if isinstance(owner, Operation) and owner.parent_block() is block:
        inner = max((_path_depth(x, sources, block, memo) for x in owner.operands), default=-1)
        if inner >= 0:
            step = 2 if owner.name in ("arith.maximumf", "arith.minimumf") else 1
            result = inner + (step if owner.name in ADD_CLASS or owner.name in KIND_OF else 0)
    memo[v] = result
    return result


# The vector registers gcc allocates a register tile from: 16 (AVX2's ymm0-15; with AVX-512's 32,
# gcc's choices on irkit's tiles were seen to match 16 too).  A model constant.
VECTOR_REGISTERS = 16


def _folded_loads(loop: Loop) -> float:
    """How many times each vector load of a register tile's loop is made: 1, or -- when the
    tile's accumulators, its loaded vectors and a broadcast need more than VECTOR_REGISTERS --
    once per FP op that uses it (gcc folds the load into each FMA as a memory operand rather
    than keep the vector: conv2d's 14 accumulators and 7 input vectors load each input twice,
    once per output channel; gemm's 12 accumulators and 2 B vectors keep them)."""
    if loop.loops or not loop.vector:
        return 1.0
    chunks = loop.trips()
    if not chunks.is_const:
        return 1.0
    per_chunk = max(1, int(chunks.value) // loop.vector)  # type: ignore[operator]
    registers = sum(
        max(1, math.prod(int(d.value) for d in b.shape if d.is_const) // loop.vector)  # type: ignore[arg-type]
        for b in {id(a.buf): a.buf for a in loop.accesses if a.buf.registers}.values()
    )
    loads = [a for a in loop.accesses if not a.store and not a.buf.local and not _invariant(a, loop.var)]
    if not loads or registers + len(loads) * per_chunk + 1 <= VECTOR_REGISTERS:
        return 1.0
    fp = loop.ops.get("fp", 0) + loop.ops.get("fp64", 0)
    return max(1.0, fp / len(loads))


def _invariant(a: Access, iv: str) -> bool:
    """Does the access stay put as `iv` moves (every index known and free of it)?"""
    return all(dim is not None and not dim[0].get(iv) for dim in a.dims)


def _strides(buf: Buffer) -> list[Expr]:
    """Each logical dimension's stride in elements (storage order outermost first)."""
    strides: list[Expr] = [ex.ONE] * len(buf.shape)
    step = ex.ONE
    for d in reversed(buf.order):
        strides[d] = step
        step = step * buf.shape[d]
    return strides


def _misaligned(a: Access, loop: Loop) -> Expr:
    """1 where a vector access of `loop` may start off a multiple of its vector's size, else 0.

    The first lane's offset in elements moves by (each loop variable's coefficient x its step x
    the dimension's stride) and sits at (the constant and size terms x stride); if the gcd of all
    of those is a multiple of the vector's lanes every access is aligned (the buffers themselves
    are: irkit aligns temporaries and packs to 64 bytes, and documents say `align`).  A stencil's
    `x + 1`, a row of `W + 2` elements or a tap loop's `x + s` make it 1."""
    if not any(dim is not None and dim[0].get(loop.var) for dim in a.dims):
        return ex.ZERO  # the same element every lane (an accumulator, a broadcast): no vector load
    strides = _strides(a.buf)
    g: Expr = ex.ZERO  # (gcd with 0 is the other side: terms that are 0 drop out)
    for d, dim in enumerate(a.dims):
        if dim is None:
            return ex.ONE
        coeffs, rest = dim
        for var, k in coeffs.items():
            owner = _loop_of(loop, var)
            if var != loop.var:  # the vector loop's own steps are the lanes
                g = ex.gcd(g, ex.const(abs(k * (owner.step if owner is not None else 1))) * strides[d])
            if owner is not None:  # where the variable starts (a tail's first tile, a stencil's 1)
                g = ex.gcd(g, _start(owner) * strides[d] * abs(k))
        g = ex.gcd(g, rest * strides[d])
    if g.is_const and g.value == 0:
        return ex.ZERO
    hw_lanes = ex.sym(LANES64 if a.buf.elem == 8 else LANES32)
    lanes = ex.min_(ex.const(loop.vector), hw_lanes) if loop.vector else hw_lanes
    return ex.le(ex.mod(g, lanes), 0, 0, 1)


def _loop_of(loop: Loop, var: str) -> Loop | None:
    node: Loop | None = loop
    while node is not None:
        if node.var == var:
            return node
        node = node.parent
    return None


def _start(loop: Loop) -> Expr:
    """Where `loop` starts apart from the loops around it (their variables taken as 0)."""
    outer = {}
    node = loop.parent
    while node is not None:
        outer[node.var] = ex.ZERO
        node = node.parent
    return ex.subs(loop.lb, outer)


def _relaxed(kernel: func.FuncOp) -> bool:
    assume = kernel.attributes.get("irkit.assume")
    return isinstance(assume, DictionaryAttr) and "relaxed_math" in assume.data


def _elem_bytes(t: MemRefType) -> int:
    et = t.element_type
    width = getattr(et, "bitwidth", None) or getattr(et, "width", None)
    if isinstance(et, Float32Type):
        return 4
    if isinstance(et, Float64Type):
        return 8
    if isinstance(et, IndexType):
        return 8
    if isinstance(width, int):
        return max(1, width // 8)
    if hasattr(width, "data"):
        return max(1, width.data // 8)
    return 4


class _CostExprPrinter(AffinePrinter[Expr]):
    """Affine expressions as the cost model's expressions (`irkit.perf.expr`)."""

    def const(self, value: int) -> Expr:
        return ex.const(value)

    def add(self, a: Expr, b: Expr) -> Expr:
        return a + b

    def mul(self, a: Expr, b: Expr) -> Expr:
        return a * b

    def floordiv(self, a: Expr, b: Expr) -> Expr:
        return ex.fdiv(a, b)

    def ceildiv(self, a: Expr, b: Expr) -> Expr:
        return ex.cdiv(a, b)

    def mod(self, a: Expr, b: Expr) -> Expr:
        return ex.mod(a, b)


COST_EXPR = _CostExprPrinter()


# ---- per-nest terms ----------------------------------------------------------


@dataclass
class NestTerms:
    name: str
    terms: dict[str, Expr]


def instr_count(root: Loop, per_core: bool = True, only: Loop | None = None) -> dict[str, Expr]:
    """Totals of one execution of `root`: instructions by kind, flops, L1 bytes and chain
    iterations -- for the busiest core, or (per_core False) for all cores together.  `only`: the
    work of that one loop alone (its own body, as many times as the loops around it run it)."""

    def body(loop: Loop) -> dict[str, Expr]:
        res: dict[str, Expr] = {}

        def put(key: str, value: Expr) -> None:
            res[key] = res.get(key, ex.ZERO) + value

        for child in loop.loops:
            if only is not None and not _holds(child, only):
                continue
            for k, v in body(child).items():
                put(k, v)
        direct = only is None or loop is only
        vectorised = not loop.loops and bool(loop.vector or loop.auto_vector)
        # The direct work of one iteration.  Instructions of a vector loop are marked `_vec` until
        # they are counted in chunks below; all others are scalar (`_s`).
        mark = VECTOR_MARK if vectorised else SCALAR
        fold = _folded_loads(loop) if vectorised else 1.0
        for kind, count in loop.ops.items() if direct else ():
            put("instr_" + kind + mark, ex.const(count))
        if direct and loop.flops:
            put("flop_lanes", ex.const(loop.flops))
        for a in loop.accesses if direct else ():
            if a.buf.registers or a.hoisted:
                continue
            put("l1_bytes", ex.const(a.buf.elem))
            wide = "64" if a.buf.elem == 8 else ""
            if vectorised and not unit_or_invariant(a, loop.var):
                put("elem_mem" + wide, ex.ONE)  # gathered or scattered: one scalar access a lane ...
                put("elem_gather" + wide, ex.ONE)  # ... and its lane's insert or extract
                if a.store:
                    put("elem_store" + wide, ex.ONE)
            elif vectorised and not a.store and _invariant(a, loop.var):
                # a load the vector loop does not move (a row's scalar, a broadcast): gcc hoists
                # it, one scalar load an entry
                put("entry_mem" + wide, ex.ONE)
            else:
                times = ex.const(fold) if vectorised and not a.store and not a.buf.local else ex.ONE
                put("instr_mem" + wide + mark, times)
                if a.store:
                    put("instr_store" + wide + mark, ex.ONE)
                if vectorised and not a.buf.local:
                    off = _misaligned(a, loop)
                    if not (off.is_const and off.value == 0):
                        put("instr_mis" + wide + mark, off * times)
        if direct and loop.chain:
            # Chains of successive entries are independent: the out-of-order window (`window`
            # instructions) runs 1 + window / (instructions of one entry's chain) of them at once.
            steps = _chain_steps(loop)
            per_step = sum(loop.ops.values()) + len([a for a in loop.accesses if not a.buf.local]) + LOOP_CONTROL
            in_flight = ex.ONE + ex.rdiv(ex.sym(WINDOW), ex.max_(steps * per_step, 1))
            for cls, count in (loop.chain_kinds or {"add": loop.chain}).items():
                put("chain_" + cls, ex.rdiv(ex.const(count), in_flight))
        if direct and loop.simd_entries and not loop.loops and _one_vector(loop):
            # Every entry of gcc's vector loop works out its trip count, its start addresses and
            # its remainder before the first vector: `vector_setups` slots an entry, one plus
            # one an access (a vector loop entered for one vector of 8 lanes, 1 load and 1
            # store, costs 5 cycles more an entry on Zen 4 than in a long loop; with 4 loads
            # and a store, 10).  Only an entry of one vector: one of several hides its set-up
            # behind them (batch_matmul's `bikj`, 8 vectors an entry, measured no slower)
            accesses = [a for a in loop.accesses if not a.buf.local and not a.hoisted and not a.buf.registers]
            res["vector_setups"] = ex.const(1 + len(accesses))
        n = loop.core_trips() if per_core else loop.trips()
        if direct and loop.carry:
            res["carry"] = ex.const(loop.carry)
            res["carry_steps"] = ex.ONE
        summed: dict[str, Expr] = {}
        for k, v in res.items():
            if k.startswith("elem_"):
                summed[k] = total_over(loop, v, per_core)
            elif k in ("carry", "carry_steps", "vector_setups") or k.startswith("entry_"):  # once an entry of the innermost loop
                summed[k] = v if not loop.loops else total_over(loop, v, per_core)
            elif k.startswith("chain_") and loop.vector and not loop.loops:  # a step a chunk or a vector
                summed[k] = _sum_with(loop, v, _vector_chain_steps(loop, n))
            elif k.endswith(VECTOR_MARK):
                base = k[: -len(VECTOR_MARK)]
                hw_lanes = ex.sym(LANES64 if base.endswith("64") else LANES32)
                if loop.vector:  # W-wide chunks, each as many hardware vectors as it takes
                    chunks = ex.cdiv(n, loop.vector) * ex.cdiv(loop.vector, hw_lanes)
                    summed[f"{base}_v{loop.vector}"] = _sum_with(loop, v, chunks)
                else:  # gcc's own vectorisation: full-width vectors
                    summed[base] = _sum_with(loop, v, ex.cdiv(n, hw_lanes))
            else:
                summed[k] = total_over(loop, v, per_core)
        return summed

    out = body(root)
    for kind in ("mem", "fp", "store", "gather", "mem64", "fp64", "store64", "gather64"):  # gathers' lanes,
        for prefix in ("elem_", "entry_"):  # and hoisted loads: scalar
            extra = out.pop(prefix + kind, None)
            if extra is not None:
                key = "instr_" + kind + SCALAR
                out[key] = out.get(key, ex.ZERO) + extra
    return out


def _one_vector(loop: Loop) -> bool:
    """Does each entry of the vector loop run at most one vector (a tile's `min(8, N - jo)` with
    vector 8), when the sizes are large?"""
    if not loop.vector:
        return False
    enclosing: set[str] = set()
    node: Loop | None = loop.parent
    while node is not None:
        enclosing.add(node.var)
        node = node.parent
    trips = loop.trips()
    big = ex.const(1 << 40)  # sizes large, the loops around at their first iteration
    value = ex.subs(trips, {name: ex.ZERO if name in enclosing else big for name in trips.free()})
    return value.is_const and value.value <= loop.vector  # type: ignore[operator]


def _holds(loop: Loop, inner: Loop) -> bool:
    """Is `inner` the loop itself or inside it?"""
    node: Loop | None = inner
    while node is not None:
        if node is loop:
            return True
        node = node.parent
    return False


def part_terms(root: Loop) -> dict[str, Expr]:
    """`part<k>_<term>` for each innermost loop with work, where the nest has more than one."""
    leaves = [lp_ for lp_ in root.walk() if not lp_.loops and (lp_.ops or lp_.accesses)]
    if len(leaves) < 2:
        return {}
    out: dict[str, Expr] = {}
    for k, leaf in enumerate(leaves):
        for key, value in instr_count(root, only=leaf).items():
            if is_core_count(key):
                out[f"{PART_PREFIX}{k}_{key}"] = value
    return out


def _chain_steps(loop: Loop) -> Expr:
    """Steps of one chain of an accumulating innermost loop: its own (W-wide chunks when vectorised),
    times those of the loops around it that leave the accumulator where it is (a convolution's
    c, r, s around its innermost s: the chain runs over all three, one chain an output element).
    Each such loop must hold nothing but the next one in, or its other work breaks the chain."""
    steps = _vector_chain_steps(loop, loop.trips()) if loop.vector else loop.trips()
    st = loop.chain_store
    if st is None:
        return steps
    used = {v for d in st.dims if d is not None for v in d[0]}
    node = loop
    while node.parent is not None and node.parent.var not in used and len(node.parent.loops) == 1:
        node = node.parent
        if node.accesses or node.ops:
            break
        steps = steps * node.trips()
    return steps


def _vector_chain_steps(loop: Loop, n: Expr) -> Expr:
    """Dependent steps of a vector loop's accumulation over `n` iterations: one a W-wide chunk for
    explicit vectors (the C backend's W / lanes accumulators are independent chains); for gcc's
    `omp simd reduction` one a hardware vector, since gcc keeps a single accumulator register
    whatever the simdlen (`vectorize j by 16` built for AVX2: one ymm, N / 8 dependent adds,
    measured 39-44% slower at L2 and L3 size than one a 16-wide chunk predicts)."""
    chunks = ex.cdiv(n, loop.vector)
    if not loop.simd_entries:
        return chunks
    lanes = ex.sym(LANES64 if loop.ops.get("fp64") else LANES32)
    return chunks * ex.cdiv(loop.vector, lanes)


def _sum_with(loop: Loop, body: Expr, count: Expr) -> Expr:
    if loop.var not in body.free():
        return count * body
    return count * ex.subs(body, {loop.var: loop.lb})


def kernel_terms(kernel: func.FuncOp) -> tuple[list[NestTerms], dict[str, Expr], list[Buffer]]:
    """The cost terms of every top-level nest of a loop-level kernel, and kernel-wide terms."""
    from irkit.backends.c_plan import stream_threshold

    reader = Reader(kernel, stream_threshold(kernel))
    top: list[Loop] = []
    reader.read_block(kernel.body.block, None, top)
    nests: list[NestTerms] = []
    for root in top:
        terms: dict[str, Expr] = instr_count(root)
        terms.update(part_terms(root))
        terms["flops"] = instr_count(root, per_core=False).get("flop_lanes", ex.ZERO)
        parallel = [lp_ for lp_ in root.walk() if lp_.parallel]
        if parallel:
            par = parallel[0]
            terms["active"] = ex.min_(par.trips(), ex.sym(CORES))
            terms["regions"] = _entries(par)
        else:
            terms["active"] = ex.ONE
            terms["regions"] = ex.ZERO
        terms["lines"] = traffic(root)
        terms["stored_lines"] = traffic(root, "stored")
        terms["strided_lines"] = traffic(root, "strided")
        terms["serial_lines"] = traffic(root, "serial")
        terms["untracked_lines"] = traffic(root, "untracked")
        streamed = _streamed_lines(root, reader.stream_threshold)
        if streamed is not None:
            terms["streamed_lines"] = streamed
        nests.append(NestTerms(root.name, terms))
    buffers = [b for b in reader.buffers.values() if not b.local]
    kernel_bytes = ex.ZERO
    for b in buffers:
        kernel_bytes = kernel_bytes + b.bytes()
    # A temporary larger than glibc's largest mmap threshold (32 MiB) is fresh memory from the
    # system at every call: each of its 4 KiB pages faults at its first write.
    pages = ex.ZERO
    for b in reader.top_allocs:
        pages = pages + ex.le(MMAP_THRESHOLD, b.bytes(), ex.cdiv(b.bytes(), 4096), 0)
    return nests, {"kernel_bytes": kernel_bytes, "fresh_pages": pages}, buffers


def _entries(loop: Loop) -> Expr:
    """How many times `loop` is entered: the iterations of the loops around it (all cores)."""
    count = ex.ONE
    node = loop.parent
    while node is not None:
        count = total_over(node, count, per_core=False)
        node = node.parent
    return count


def _streamed_lines(root: Loop, threshold: int) -> Expr | None:
    """Lines of outputs written with streaming stores (no read before the write, no write-back
    through the caches), when the output is at least `threshold` bytes."""
    from irkit.backends.c_math import NT_MIN_RUN_BYTES

    total = ex.ZERO
    found = False
    for loop in root.walk():
        for name in loop.streamed:
            buf = next(a.buf for a in loop.accesses if a.buf.name == name)
            found = True
            # the C backend streams a loop entry only when it writes at least NT_MIN_RUN_BYTES
            # (c_math's IRKIT_NT_MIN_RUN); the first entry's run stands for all of them
            run = _first_entry(loop, loop.trips()) * buf.elem
            total = total + ex.le(threshold, buf.bytes(), ex.le(NT_MIN_RUN_BYTES, run, buf.lines(), 0), 0)
    return total if found else None


def _first_entry(loop: Loop, e: Expr) -> Expr:
    """`e` with the variables of the loops around `loop` at their lower bounds."""
    node = loop.parent
    while node is not None:
        if node.var in e.free():
            e = ex.subs(e, {node.var: node.lb})
        node = node.parent
    return e
