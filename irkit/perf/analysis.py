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
- **cache traffic**: lines moved into a cache of `cap` lines, as one
  expression with the capacity left symbolic, so the runtime evaluates it
  for each level of whatever hardware it is given;
- **parallelism**: how many cores are busy, and how often a parallel loop
  is entered (fork/join).

Sums over loops whose bounds depend on outer loops (tiles with tails) use
the *first/last* rule: n iterations are n - 1 copies of the first and one
of the last.  It is exact for what the schedule passes produce (only the
last tile is partial), so flop counts match hand formulas exactly.

The traffic model is the classic reuse analysis of affine accesses, at
cache-line granularity (so layout and strides matter): the data a loop
touches (its footprint: per buffer a box of indices, in lines of the
storage order) either fits in the cache -- then it is loaded once per
execution of the loop -- or it does not, and then each iteration of the
loop reloads what its body needs except what the previous iteration left
behind (data the body reads that does not move with the loop variable,
or the overlap of a stencil), provided one iteration's footprint fits.
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
LINE_BYTES_MIN = 64  # the shortest line of the hosts irkit models (x86: 64 B)
PAGE = 4096  # bytes of a page: the part of an address that is the same virtually and physically

# numpy asks the kernel for huge pages for the arrays it allocates of at least 4 MiB (its own
# threshold): the inputs and outputs a kernel is called with
NUMPY_HUGE_MIN = 4 << 20
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


# ---- footprints --------------------------------------------------------------


def _spans(root: Loop, include_root: bool) -> dict[str, Expr]:
    """For every loop var inside `root`: how far it moves during one execution of `root`
    (or of one iteration, when include_root is False), taking inner bounds at their first
    (full) iterations."""
    spans: dict[str, Expr] = {}
    env: dict[str, Expr] = {}

    def visit(loop: Loop, is_root: bool) -> None:
        lb = ex.subs(loop.lb, env)
        n = ex.subs(loop.core_trips(), env)
        if not is_root or include_root:
            spans[loop.var] = ex.max_(ex.ZERO, (n - 1) * loop.step)
        env[loop.var] = lb
        for child in loop.loops:
            visit(child, False)
        del env[loop.var]

    visit(root, True)
    return spans


def _accesses_under(root: Loop) -> list[Access]:
    return [a for loop in root.walk() for a in loop.accesses if not a.buf.local]


def _group_key(a: Access) -> tuple:
    key = []
    for dim in a.dims:
        key.append(None if dim is None else tuple(sorted(dim[0].items())))
    return (id(a.buf), tuple(key))


@dataclass
class Box:
    buf: Buffer
    widths: list[Expr]
    stored: bool
    coeffs: list[dict[str, int] | None]
    present: Expr = ex.ONE  # 1 if any of its accesses runs (its loops below the root have iterations), else 0


def boxes(root: Loop, include_root: bool) -> list[Box]:
    """The index boxes the loop's accesses touch, one per buffer and access pattern."""
    spans = _spans(root, include_root)
    groups: dict[tuple, list[Access]] = {}
    for a in _accesses_under(root):
        groups.setdefault(_group_key(a), []).append(a)
    out: list[Box] = []
    for members in groups.values():
        a0 = members[0]
        widths: list[Expr] = []
        for d, dim in enumerate(a0.dims):
            extent = a0.buf.shape[d]
            if dim is None:
                widths.append(extent)
                continue
            w = ex.ONE
            for v, k in dim[0].items():
                if v in spans:
                    w = w + abs(k) * spans[v]
            rests = [m.dims[d][1] for m in members]  # type: ignore[index]
            offsets = [r - rests[0] for r in rests]
            if all(o.is_const for o in offsets):
                vals = [o.value for o in offsets]
                w = w + (max(vals) - min(vals))  # type: ignore[operator]
            elif len(members) > 1:
                w = extent
            widths.append(w if w is ex.ONE else ex.min_(w, extent))  # a single index: extents are >= 1
        present = ex.max_(*[_runs(m, root) for m in members]) if len(members) > 1 else _runs(a0, root)
        out.append(
            Box(
                a0.buf,
                widths,
                any(m.store for m in members),
                [None if dd is None else dd[0] for dd in a0.dims],
                present,
            )
        )
    return _merge_same(out, spans)


def _merge_same(out: list[Box], spans: dict[str, Expr]) -> list[Box]:
    """One box for the accesses of sibling loops that cover the same elements (softmax's passes
    over a row: each pass's `j` is its own variable, so their groups differ, but the boxes have
    the same widths and move with the same outer variables): counting each would move the row
    once per pass."""
    merged: dict[tuple, Box] = {}
    for b in out:
        outer = tuple(
            None if c is None else tuple(sorted((v, k) for v, k in c.items() if v not in spans)) for c in b.coeffs
        )
        if any(c is None for c in b.coeffs):
            merged[(id(b), None)] = b
            continue
        key = (id(b.buf), tuple(ex.to_text(w) for w in b.widths), outer)
        seen = merged.get(key)
        if seen is None:
            merged[key] = b
            continue
        merged[key] = Box(b.buf, b.widths, b.stored or seen.stored, seen.coeffs, ex.max_(seen.present, b.present))
    return list(merged.values())


def _runs(a: Access, root: Loop) -> Expr:
    """1 if every loop between the access and `root` has an iteration (the loops around each taken
    at their first iteration, as `_spans` does), else 0: the tails of tiles and register blocks
    are often empty at a given size."""
    path: list[Loop] = []
    node = a.owner
    while node is not None and node is not root:
        path.append(node)
        node = node.parent
    if node is not root:
        return ex.ONE
    env: dict[str, Expr] = {root.var: root.lb}  # the root at its first iteration
    present = ex.ONE
    for loop in reversed(path):
        trips = ex.subs(loop.trips(), env)
        if trips.is_const:
            if trips.value == 0:
                return ex.ZERO
        else:
            present = present * ex.min_(ex.ONE, trips)
        env[loop.var] = ex.subs(loop.lb, env)
    return present


def _run_lines(elements: Expr, elem: int, fractional: bool) -> Expr:
    """Lines a run of contiguous elements touches: whole lines from an aligned start; or, for
    differences between boxes, the expected count 1 + (n - 1) x elem / line (0 for no elements)."""
    line = ex.sym(LINE)
    if not fractional:
        return ex.cdiv(elements * elem, line)
    return ex.le(elements, 0, 0, 1 + ex.rdiv((elements - 1) * elem, line))


def box_lines(box: Box, widths: list[Expr] | None = None, fractional: bool = False) -> Expr:
    """Cache lines of the box in the buffer's storage order (a full innermost row merges with the next);
    none when no access of the box runs (all of them in loops of no iterations: a tail the sizes
    leave empty)."""
    lines = _box_lines(box, widths, fractional)
    return lines if box.present is ex.ONE else lines * box.present


def _box_lines(box: Box, widths: list[Expr] | None, fractional: bool) -> Expr:
    buf = box.buf
    ws = box.widths if widths is None else widths
    order = buf.order or list(range(len(ws)))
    if not order:
        return ex.ONE
    inner = order[-1]
    outer = ex.ONE
    for d in order[:-1]:
        outer = outer * ws[d]
    plain = _run_lines(ws[inner], buf.elem, fractional) * outer
    if len(order) < 2:
        return plain
    nxt = order[-2]
    rest = ex.ONE
    for d in order[:-2]:
        rest = rest * ws[d]
    merged = _run_lines(ws[inner] * ws[nxt], buf.elem, fractional) * rest
    return ex.le(buf.shape[inner], ws[inner], merged, plain)


def crowded_lines(box: Box) -> Expr:
    """The box's lines as the cache sees them when its rows crowd into few sets.

    Rows of a strided box start `stride` bytes apart; with a stride that shares a
    large power of two with the cache's set span (sets x line), they all map to a few
    sets, and only `ways` lines a set can stay -- all of them, not the share of the
    cache the model counts on elsewhere.  The box then needs as much of the capacity
    as (lines per reached set / ways) of it: a column of a 4 KiB-strided matrix longer
    than the ways does not fit an 8-way L1 however short it is, a column of 8 lines
    does.  A box of whole rows is contiguous: no crowding.
    Only caches whose sets span at most a page are affected (see below)."""
    buf = box.buf
    order = buf.order or list(range(len(box.widths)))
    lines = box_lines(box)
    if len(order) < 2:
        return lines
    inner = order[-1]
    rows = ex.ONE
    for d in order[:-1]:
        rows = rows * box.widths[d]
    line, sets = ex.sym(LINE), ex.sym(SETS)
    span = sets * line
    row_sets = _row_sets(buf)
    reach = ex.max_(ex.ONE, ex.min_(sets, ex.cdiv(box.widths[inner] * buf.elem, line) * ex.min_(rows, row_sets)))
    # In the sets it reaches the box needs lines / reach of their `ways` each.  A set is a hard
    # limit, not a share: within the ways, the box needs just its lines (8 rows of a 4 KiB-strided
    # matrix in one set of an 8-way cache stay); beyond them it cannot stay at all, which counts
    # as `cap` x lines / (reach x ways) of the capacity: more than all of it.
    crowded = ex.le(lines, reach * ex.sym(WAYS), lines, ex.rdiv(lines * ex.sym(CAP), reach * ex.sym(WAYS)))
    # Only a cache whose sets span at most a page (L1: virtually indexed) sees the stride as
    # written; beyond a page, physical pages land anywhere and strided rows spread out.
    crowded = ex.le(span, page_bytes(buf), crowded, lines)
    return ex.le(buf.shape[inner], box.widths[inner], lines, crowded)


def page_bytes(buf: Buffer) -> Expr:
    """The pages `buf` lives on: huge pages (the description's `huge_page`, where the host gives
    them) for an input or output numpy allocates with at least NUMPY_HUGE_MIN bytes, else 4 KiB
    (irkit's temporaries come from malloc: huge pages only where the host gives them to all).
    Within a page, addresses keep their low bits physically: a cache whose sets span at most a
    page sees a power-of-two stride crowd its rows into few sets."""
    if buf.role == "temp" or buf.local:
        return ex.const(PAGE)
    return ex.le(buf.bytes(), NUMPY_HUGE_MIN - 1, PAGE, ex.max_(PAGE, ex.sym(HUGE_PAGE)))


def _row_sets(buf: Buffer) -> Expr:
    """Sets (of `sets` x `line`) that rows of `buf` a row stride apart start in: a stride that
    shares the set span's power of two keeps them in few sets."""
    order = buf.order or list(range(len(buf.shape)))
    line, span = ex.sym(LINE), ex.sym(SETS) * ex.sym(LINE)
    stride = buf.shape[order[-1]] * buf.elem
    return ex.fdiv(span, ex.max_(ex.gcd(stride, span), line))


def column_sets(buf: Buffer) -> Expr:
    """How many sets of a cache the rows of a column of `buf` reach; all of them for a cache
    whose sets span more than a page (physical pages land anywhere)."""
    order = buf.order or list(range(len(buf.shape)))
    if len(order) < 2:
        return ex.sym(SETS)
    return ex.le(ex.sym(SETS) * ex.sym(LINE), page_bytes(buf), _row_sets(buf), ex.sym(SETS))


def _weight(buf: Buffer, select: str, rows: Expr | None = None) -> Expr:
    """A line's weight in a traffic figure: 1, or for `serial` (strided misses that queue on
    the sets they share) 1 / the sets a column of the buffer reaches, less the share of the
    column those sets' ways keep (`conflict_share` of the rows over the ways).  `rows`: the rows
    the column walk cycles through before it comes back to a line (a tile's height; default the
    buffer's)."""
    if select != "serial":
        return ex.ONE
    reach = column_sets(buf)
    if rows is None:
        order = buf.order or list(range(len(buf.shape)))
        rows = ex.ONE
        for d in order[:-1]:
            rows = rows * buf.shape[d]
    return ex.rdiv(ex.ONE, reach) * conflict_share(ex.rdiv(rows, ex.sym(WAYS) * reach))


def conflict_share(cycled: Expr) -> Expr:
    """The share of a column walk's accesses that miss when it cycles `cycled` x the ways of the
    sets it reaches: none at 1 x, the measured `conflict_share_<n>` at 2, 4 and 8 x, all from
    16 x; linear in between (irkit.perf.runtime.CONFLICT_SHARES)."""
    s2, s4, s8 = (ex.sym(key) for key in CONFLICT_SHARES)
    points = [(1, ex.ZERO), (2, s2), (4, s4), (8, s8), (16, ex.ONE)]
    share: Expr = ex.ONE
    for (x0, y0), (x1, y1) in reversed(list(zip(points, points[1:]))):
        share = ex.le(cycled, x1, y0 + (y1 - y0) * ex.rdiv(cycled - x0, x1 - x0), share)
    return ex.le(cycled, 1, ex.ZERO, share)


def fit_footprint(root: Loop, include_root: bool) -> Expr:
    """The footprint a fit test compares with the capacity (crowding counted)."""
    total = ex.ZERO
    for b in boxes(root, include_root):
        total = total + ex.min_(crowded_lines(b), ex.rdiv(b.buf.lines() * ex.sym(CAP), ex.sym(WAYS)))
    return total


def _box_selected(b: Box, select: str, loop: Loop | None = None) -> bool:
    """Which boxes a traffic figure counts: all; the stored ones (their write-backs); or the
    strided ones -- a column, one element wide, spanning rows or moving across them with
    `loop`: every line is its own miss (`serial` weighs them by `_weight`)."""
    if select == "stored":
        return b.stored
    if select == "untracked":
        return True  # weighed by `_untracked`
    if select in ("strided", "serial"):
        order = b.buf.order or list(range(len(b.widths)))
        inner = b.widths[order[-1]]
        # a column, or a band at most half a line wide (a tile's edge, min(8, N - io)): each
        # row's piece is a line of its own
        widest = _const_bound(inner, b.buf)
        if widest is None or widest * b.buf.elem * 2 > LINE_BYTES_MIN:
            return False
        row = b.buf.shape[order[-1]]
        if widest > 1 and row.is_const and row.value * b.buf.elem < LINE_BYTES_MIN:
            return False  # rows shorter than a line share lines (a 3 x 3 filter): not a band
        if any(not (b.widths[d].is_const and b.widths[d].value == 1) for d in order[:-1]):
            return True
        moving = loop is not None and any(c is not None and c.get(loop.var) for c in b.coeffs)
        return moving and not (b.coeffs[order[-1]] or {}).get(loop.var if loop else "", 0)
    return True


def _const_bound(e: Expr, buf: Buffer) -> float | None:
    """The width `e` of a box of `buf` when the sizes are large and the loops at their first
    iteration -- a tile's edge `min(8, N - io)` is 8 -- if that is a constant, else None (the
    width grows with a size)."""
    if e.is_const:
        return e.value  # type: ignore[return-value]
    sizes: set[str] = set()
    for extent in buf.shape:
        sizes |= extent.free()
    big = ex.const(1 << 40)
    value = ex.subs(e, {name: big if name in sizes else ex.ZERO for name in e.free()})
    if not value.is_const or value.value >= 1 << 39:  # type: ignore[operator]
        return None
    return value.value  # type: ignore[return-value]


def _access_selected(a: Access, loop: Loop, select: str) -> bool:
    if select == "untracked":
        return False  # an innermost loop's own stream, or a column walk (priced by its misses)
    if select == "stored":
        return a.store
    if select in ("strided", "serial"):
        order = a.buf.order or list(range(len(a.dims)))
        moves = [d for d, dim in enumerate(a.dims) if dim is not None and dim[0].get(loop.var)]
        return bool(moves) and order[-1] not in moves
    return True


def _walked_rows(a: Access, loop: Loop) -> Expr:
    """The rows an access walks down in one run of `loop` (which moves it across rows): the
    loop's trips times its coefficient in the row dimension it moves."""
    order = a.buf.order or list(range(len(a.dims)))
    rows = ex.ONE
    for d, dim in enumerate(a.dims):
        if d == order[-1] or dim is None:
            continue
        k = abs(dim[0].get(loop.var, 0))
        if k:
            rows = rows * ex.min_(loop.trips() * (k * loop.step), a.buf.shape[d])
    return rows


def _walked_box_rows(b: Box, loop: Loop) -> Expr | None:
    """The rows a box of one iteration walks down over a run of `loop`: its own rows plus the
    loop's trips times its shift across rows; None (the buffer's rows) if the loop does not move
    it across rows (a loop along a row: the lines it comes back to compete with the rest of the
    column's, as a narrow tile's rows with the next tile's, measured on 8 x 8 transposes)."""
    order = b.buf.order or list(range(len(b.widths)))
    rows = ex.ONE
    moved = False
    for d in order[:-1]:
        k = abs((b.coeffs[d] or {}).get(loop.var, 0)) if b.coeffs[d] is not None else 0
        if k:
            moved = True
            rows = rows * ex.min_(b.widths[d] + ex.max_(loop.trips() - 1, 0) * (k * loop.step), b.buf.shape[d])
        else:
            rows = rows * b.widths[d]
    return rows if moved else None


def _untracked(root: Loop, b: Box) -> Expr:
    """1 when the lines `root`'s steps bring of box `b` come on no prefetch stream, else 0.

    A hardware prefetcher follows a stream that goes on where it left off, and only so many at
    once.  Measured on the Zen 4 guest (64 MiB read from DRAM by one core): a sequential pass
    33.6 GB/s; row segments of 4 to 128 lines the walk jumps between (`split j by W`, `reorder
    jo, i, ji`) 11-12 GB/s whatever their length; 8 or 16 rows read side by side, each going
    on, 20-22 GB/s, 32 and more 11-12.5 GB/s.  So a box's new lines are untracked when `root`
    moves it across rows and its rows are narrower than the buffer's (each row a jump), or when
    the loop that sweeps it along its rows reads more rows at once than `streams`.  A column
    walk (a strided box) is priced by its misses instead, and an output written with streaming
    stores needs no prefetching."""
    order = b.buf.order or list(range(len(b.widths)))
    if len(order) < 2 or _box_selected(b, "strided", root):
        return ex.ZERO
    if b.stored and any(b.buf.name in loop.streamed for loop in root.walk()):
        return ex.ZERO  # streaming stores: written line by line through write-combining, no prefetch
    inner = order[-1]
    across = any(b.coeffs[d] is not None and b.coeffs[d].get(root.var) for d in order[:-1])  # type: ignore[union-attr]
    jumped = ex.le(b.buf.shape[inner], b.widths[inner], ex.ZERO, ex.ONE) if across else ex.ZERO
    rows = _stream_rows(root, b.buf)
    crowded = ex.ZERO if rows is None else ex.le(rows, ex.sym(STREAMS), ex.ZERO, ex.ONE)
    return ex.max_(jumped, crowded)


def _stream_rows(root: Loop, buf: Buffer) -> Expr | None:
    """The rows of `buf` read side by side by the outermost loop at or under `root` that moves
    along them (the rows of one iteration's box); None if no loop does."""
    if buf.name not in root.stream_rows:
        root.stream_rows[buf.name] = _find_stream_rows(root, buf)
    return root.stream_rows[buf.name]


def _find_stream_rows(root: Loop, buf: Buffer) -> Expr | None:
    order = buf.order or list(range(len(buf.shape)))
    inner = order[-1]
    for loop in root.walk():
        for bb in boxes(loop, False):
            if bb.buf is not buf or bb.coeffs[inner] is None or not bb.coeffs[inner].get(loop.var):
                continue
            rows = ex.ONE
            for d in order[:-1]:
                rows = rows * bb.widths[d]
            # rows as wide as the buffer's follow one another: one stream
            return _at_first(loop, ex.le(buf.shape[inner], bb.widths[inner], ex.ONE, rows))
    return None


def _at_first(loop: Loop, e: Expr) -> Expr:
    """`e` at the first iteration of `loop` and of every loop around it (a tile's rows
    `min(M, io + 8) - io` are 8)."""
    node: Loop | None = loop
    while node is not None:
        if node.var in e.free():
            e = ex.subs(e, {node.var: node.lb})
        node = node.parent
    return e


def footprint(root: Loop, include_root: bool = True, select: str = "all") -> Expr:
    total = ex.ZERO
    for b in boxes(root, include_root):
        if not _box_selected(b, select):
            continue
        total = total + ex.min_(box_lines(b), b.buf.lines()) * _weight(b.buf, select)
    return total


def _delta(root: Loop, b: Box) -> Expr:
    """New lines per step of the root's variable, for a box of one iteration: the slab the
    box moves into (along the innermost storage dimension, a fraction of a line per element)."""
    moved = [d for d, c in enumerate(b.coeffs) if c is not None and c.get(root.var)]
    if not moved:
        if any(c is None for c in b.coeffs):
            return box_lines(b, fractional=True)
        return ex.ZERO
    order = b.buf.order or list(range(len(b.widths)))
    inner = order[-1]
    total = ex.ZERO
    for d in moved:
        shift = abs(b.coeffs[d][root.var]) * root.step  # type: ignore[index]
        others = ex.ONE
        for o in order[:-1]:
            if o != d:
                others = others * b.widths[o]
        run = _run_lines(b.widths[inner], b.buf.elem, True)
        if d == inner:
            total = total + others * ex.min_(run, ex.rdiv(shift * b.buf.elem, ex.sym(LINE)))
        else:
            total = total + others * ex.min_(b.widths[d], shift) * run
    return total


def _step_lines(a: Access, loop: Loop) -> Expr:
    """New lines one access touches per iteration of `loop`, with no reuse beyond the line:
    a fraction of a line when it moves along the innermost storage dimension."""
    order = a.buf.order or list(range(len(a.dims)))
    inner = order[-1] if order else 0
    step = ex.ZERO
    for d, dim in enumerate(a.dims):
        if dim is None:
            return ex.ONE
        k = dim[0].get(loop.var, 0)
        if not k:
            continue
        if d != inner:
            return ex.ONE
        step = ex.min_(ex.ONE, ex.rdiv(abs(k) * loop.step * a.buf.elem, ex.sym(LINE)))
    return step


def traffic(root: Loop, select: str = "all") -> Expr:
    """Lines moved into a cache of `cap` lines by one execution of `root` (outer vars free), of
    the boxes `select` picks (see `_box_selected`).

    Stores count like loads here; the caller adds their write-back."""
    cap = ex.sym(CAP)
    # untracked lines: only those a loop's steps bring in (a kernel a level holds whole is read once)
    whole = ex.ZERO if select == "untracked" else footprint(root, True, select)
    all_whole = fit_footprint(root, True)
    body_boxes = boxes(root, False)
    body_fit = fit_footprint(root, False)
    body_all = ex.ZERO
    reuse = ex.ZERO
    n = root.core_trips()
    for b in body_boxes:
        lines = ex.min_(box_lines(b), b.buf.lines())
        body_all = body_all + lines
        if not _box_selected(b, select, root):
            continue
        if select == "untracked":
            weight = _untracked(root, b)
        else:
            weight = _weight(b.buf, select, _walked_box_rows(b, root) if select == "serial" else None)
        reuse = reuse + (lines + ex.max_(n - 1, 0) * ex.min_(lines, _delta(root, b))) * weight
    per_iter = ex.ZERO
    for child in root.loops:
        per_iter = per_iter + traffic(child, select)
    first = ex.ZERO
    for a in root.accesses:
        if not a.buf.local and _access_selected(a, root, select):
            weight = _weight(a.buf, select, _walked_rows(a, root) if select == "serial" else None)
            per_iter = per_iter + _step_lines(a, root) * weight
            first = first + weight
    nofit = total_over(root, per_iter) + first
    return ex.le(all_whole, cap, whole, ex.le(body_fit, cap, reuse, nofit))


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
