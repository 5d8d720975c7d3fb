"""Reading a loop-level kernel into the loop tree (`irkit.perf.loop_tree`), as gcc will compile it.

The model prices the C the backend emits, so the reader takes the same
decisions the backend and gcc take: which locals stay in vector registers,
which loops gcc auto-vectorises (an innermost loop with unit-stride accesses
and no carried dependence) or unrolls completely (short constant chains),
which adds contract into FMAs, which loops write with streaming stores.
It records what each loop's body does: instructions by kind (`price_class`),
flops, accesses with their affine indices, and accumulation chains by the
latency class of their ops.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DictionaryAttr, Float64Type, IndexType, IntegerType, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from irkit.affine.printer import AffinePrinter
from irkit.backends.c_plan import plan_prefetch, reciprocal_divisor
from irkit.dialects import loop as lp
from irkit.kernel_abi import element_bytes, kernel_args, layout_order
from irkit.perf import expr as ex
from irkit.perf.expr import Expr
from irkit.perf.guards import arm_weights, expected_chain, guarded_selects
from irkit.perf.loop_tree import (
    CAP,
    CORES,
    HUGE_PAGE,
    KEEP,
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
    invariant,
    unit_or_invariant,
)
from irkit.perf.runtime import CONFLICT_SHARES

# ---- what each op costs ------------------------------------------------------


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


# ---- the reader --------------------------------------------------------------


def _in_registers(local: lp.LocalOp) -> bool:
    """Does the C backend keep this local in vector registers (`irkit.backends.c_simd`'s register
    tiles)?  The same decision, so that the model prices what the compiler is given."""
    from irkit.backends.c_simd import plan_tile

    return plan_tile(local, {}) is not None


def _step_in(e: Expr, v: str) -> float:
    """How much `e` changes when `v` grows by one (at sample values of the other names)."""
    env = {name: 1000 + 37 * k for k, name in enumerate(sorted(e.free()))}
    before = ex.evaluate({"e": e}, env)["e"]
    after = ex.evaluate({"e": e}, env | {v: env[v] + 1})["e"]
    return float(after) - float(before)  # type: ignore[arg-type]


class Reader:
    """Builds the loop tree of one kernel."""

    def __init__(self, kernel: func.FuncOp, stream_threshold: int):
        self.kernel = kernel
        self.stream_threshold = stream_threshold
        self.values: dict[SSAValue, Expr] = {}
        self.buffers: dict[SSAValue, Buffer] = {}
        self.prefetched: set[Operation] = set()  # loads the C backend prefetches (`c_plan.plan_prefetch`)
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
            self.buffers[t.value] = Buffer(t.name, element_bytes(t.memref), shape, t.order, t.role)
        self.used_names |= {CAP, KEEP, SETS, WAYS, LINE, LANES32, LANES64, CORES, WINDOW, STREAMS, HUGE_PAGE, *CONFLICT_SHARES}
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
                self.buffers[op.result] = Buffer(op.tensor_name.data, element_bytes(mt), shape, layout_order(mt), "temp")
                if parent is None:
                    self.top_allocs.append(self.buffers[op.result])
            elif isinstance(op, lp.LocalOp):
                mt = op.result.type
                assert isinstance(mt, MemRefType)
                shape = [ex.const(n) for n in mt.get_shape()]
                self.buffers[op.result] = Buffer(
                    op.tensor_name.data,
                    element_bytes(mt),
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
        self.mark_shaping(lbs, ubs)
        for plan in plan_prefetch(op):  # the backend prefetches these a step ahead (not waited for)
            self.prefetched.update(plan.loads)
        self.read_block(op.body.block, loop, loop.loops)
        self.classify(op, loop)
        self.apply_guards(op, loop)
        if parent is None:  # the nest is whole: what gcc's complete unrolling makes of short chains
            for inner in list(loop.walk()):
                if inner.chain:
                    _unroll_short_chain(inner)
                elif not inner.loops:
                    _unroll_point_producer(inner)
        return loop

    def mark_shaping(self, lbs: list[Expr], ubs: list[Expr]) -> None:
        """An enclosing unit-step loop that only one side of these bounds names (`j < i + 1`) makes
        the trip count vary with it; naming both (`[y, y + 3)`, a window; `[io, io + 16)`, a tile)
        does not."""
        lower = set().union(*(e.free() for e in lbs)) if lbs else set()
        upper = set().union(*(e.free() for e in ubs)) if ubs else set()
        for v in lower ^ upper:
            outer = self.loops.get(v)
            if outer is None or outer.step != 1:
                continue
            # by one per iteration (`i + 1`), not by a panel (`N - 16 * p`: a pack's tail)
            if any(v in e.free() and abs(_step_in(e, v)) == 1 for e in lbs + ubs):
                self.mark_up(outer)

    def mark_up(self, loop: Loop) -> None:
        """`loop` sums a triangle's rows, and so do the loops its own bounds follow (the tiles of a
        split triangle: `ii` runs from `io`, so the rows vary with `io` too)."""
        todo = [loop]
        while todo:
            current = todo.pop()
            if current.shapes_inner:
                continue
            current.shapes_inner = True
            todo += [self.loops[v] for v in (current.lb.free() | current.ub.free()) if v in self.loops]

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
            loop.accesses.append(Access(buf, isinstance(op, lp.StoreOp), dims, loop, prefetched=op in self.prefetched))
            return
        priced = price_class(op)
        if priced is None:
            return
        loop.flops += priced[1]
        key = self.op_key(op)
        if key is not None:
            loop.ops[key] = loop.ops.get(key, 0) + 1

    def op_key(self, op: Operation) -> str | None:
        """The instruction kind an op is counted as (`fp`, `div64`, ...), None when it costs no
        instruction of its own (an add fused with its multiply, an op of no cost)."""
        priced = price_class(op)
        if priced is None:
            return None
        kind, _, wide = priced
        if kind == "exp" and not self.relaxed:
            kind = "exp_libm"  # the C library's expf, one call per element: the loop stays scalar
        if kind == "div" and self.relaxed and reciprocal_divisor(op):
            kind = "fp"  # a multiplication by the reciprocal gcc hoists (`irkit.backends.c_plan.reciprocal_divisor`)
        if op.name == "arith.addf" and self._fused(op):
            return None  # one FMA with its multiply: that counted the instruction, this the flop
        return kind + ("64" if wide else "")

    def apply_guards(self, op: lp.ForOp, loop: Loop) -> None:
        """A scalar innermost loop's selects on index comparisons are branches: each arm's ops
        count where the arm is taken, and an accumulation chain through them takes the arms by
        their fractions (`irkit.perf.guards`)."""
        if loop.loops or loop.vector is not None or loop.auto_vector or loop.step != 1:
            return
        block = op.body.block
        guards = guarded_selects(block, loop.var, loop.lb, loop.trips(), self.values.get)
        if not guards:
            return
        for guarded, weight in arm_weights(block, guards).items():
            key = self.op_key(guarded)
            if key is None or not loop.ops.get(key):
                continue
            loop.ops[key] -= 1
            if not loop.ops[key]:
                del loop.ops[key]
            loop.guarded[key] = loop.guarded.get(key, ex.ZERO) + weight
        if loop.chain and loop.chain_store is not None:
            loop.chain_expected = _expected_chain(op, guards, self._fused)

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
        accumulator = _accumulator(loop)
        carried = accumulator is not None
        if carried:
            loop.chain_store = accumulator
        recurrence = {} if carried else _recurrence_kinds(op, self._fused)
        if recurrence:  # a recurrence through memory (`carry`): each iteration waits for the one before,
            loop.chain = sum(recurrence.values()) + 1  # its ops and the forwarding of the stored value
            loop.chain_kinds = {**recurrence, "forward": 1}
            carried = True
        elif carried and (loop.ops.get("fp") or loop.ops.get("fp64")):
            kinds = _chain_kinds(op, self._fused)
            loop.chain = max(1, sum(kinds.values()))
            loop.chain_kinds = kinds or {"add": 1}
        elif self._reloaded_by_parent(loop) and (loop.ops.get("fp") or loop.ops.get("fp64")):
            loop.carry = max(1, _chain_length(op))
        elif loop.vector is not None and any(a.store and a.buf.registers for a in loop.accesses):
            loop.tile_chain = _chain_kinds(op, self._fused)  # empty for the tile's copies in and out
        if any(loop.ops.get(k) for k in ("exp_libm", "exp_libm64", "libm", "libm64")):
            loop.vector = None  # gcc cannot vectorise a call of the C library (no fast-math): scalar code
            return
        if loop.vector is not None and _pragma_dropped(op):
            loop.vector = None  # the backend leaves the loop to gcc without its `omp simd` (see below)
        if loop.vector is None and not carried and loop.step == 1:
            loop.auto_vector = (
                all(unit_or_invariant(a, iv) for a in loop.accesses) and bool(loop.accesses) and not _alias_bound(loop)
            )
        if loop.vector is None and carried and loop.step == 1:
            loop.fold_left = _fold_left(loop)
            loop.auto_vector = loop.fold_left
            if loop.fold_left:
                # no FMA on the chain: a vector multiply, then one add a lane (`fold_latency`)
                _relabel(loop, "fma", "fold")
        if loop.vector is not None:
            # a vector maximum that keeps NaN: compare, compare, or, blend on the accumulator each
            # step, not one `maxss` (`vmax_latency`)
            _relabel(loop, "max", "vmax")
            from irkit.backends.c_simd import plan_loop

            # the C backend writes it as explicit vectors (a constant trip count), or leaves it to
            # gcc's `omp simd` loop, whose every entry sets up its trip count and remainder
            loop.simd_entries = plan_loop(op) is None
        from irkit.backends.c_plan import stream_candidate

        st_op = stream_candidate(self.kernel, op)
        if st_op is not None and st_op.memref in self.buffers:
            loop.streamed.add(self.buffers[st_op.memref].name)


# gcc 12 vectorises a loop that stores one buffer at two index patterns (jammed copies of a row
# update, `C[i, j]` and `C[i + 1, j]`) by versioning it for aliasing; at three patterns and more it
# does not (too many runtime alias checks; `-fopt-info-vec` says "couldn't vectorize loop").
ALIAS_PATTERNS = 3


def _pragma_dropped(op: lp.ForOp) -> bool:
    """Does the C backend drop this vector loop's SIMD pragma?  It writes no explicit vectors for it
    (`c_simd.plan_loop`) and `c_plan.plan_vector` finds the pragma wrong (one buffer accessed at two
    elements an iteration, as jammed copies of a row update are): gcc alone then decides."""
    from irkit.backends.c_plan import plan_vector
    from irkit.backends.c_simd import plan_loop

    if plan_loop(op) is not None:
        return False
    return plan_vector(op, lambda st: "buffer").problem is not None


def _alias_bound(loop: Loop) -> bool:
    """Does the loop store a buffer it accesses at ALIAS_PATTERNS or more index patterns?"""
    for st in loop.accesses:
        if not st.store or st.buf.local:
            continue
        patterns = {repr(a.dims) for a in loop.accesses if a.buf is st.buf}
        if len(patterns) >= ALIAS_PATTERNS:
            return True
    return False


def _accumulator(loop: Loop) -> Access | None:
    """The store of an accumulation the innermost `loop` carries from one iteration to the next:
    a store to an element that does not move with the loop, which the loop also loads (the last
    such store; stores to a local of a vector loop left out)."""
    found = None
    for st in (a for a in loop.accesses if a.store):
        if st.buf.local and loop.vector is not None:
            continue
        invariant = all(d is not None and loop.var not in d[0] for d in st.dims)
        reloaded = any(not a.store and a.buf is st.buf and a.dims == st.dims for a in loop.accesses)
        if invariant and reloaded:
            found = st
    return found


def _relabel(loop: Loop, cls: str, new: str) -> None:
    """The ops of `loop`'s chain in latency class `cls` counted as class `new`."""
    loop.chain_kinds = {(new if k == cls else k): n for k, n in loop.chain_kinds.items()}


def _fold_left(loop: Loop) -> bool:
    """Does gcc vectorise this scalar accumulation as an in-order ("fold-left") reduction?

    gcc 12 keeps the accumulator in a register and vectorises everything that feeds it when the
    other accesses move by single elements: full-width vector loads and multiplies, then the
    products added to the accumulator one lane at a time, in order, so the result is the scalar
    loop's to the last bit (`o[e] += a[e, k] * b[k]` built for AVX-512 and for AVX2: one
    `vmulps` of two vector loads, then 16 or 8 `vaddss` on one register, the lanes taken out by
    `valignd` / `vextract`).  The chain stays one dependent add an element; the loads and the
    other arithmetic are vectors.  Adds only: a maximum's chain and the C library's calls stay
    scalar; so does a loop of a constant trip count gcc unrolls completely (conv2d's `s` of 3
    inside `r` of 3: straight-line `vfmadd231ss` on the chain of the loop around them)."""
    if set(loop.chain_kinds or {"add": 1}) - {"add", "fma"} or not loop.accesses:
        return False
    trips = loop.trips()
    if trips.op == "const" and trips.value <= UNROLLED_TRIPS:
        return False  # unrolled completely before the vectoriser sees it (a 3x3 filter's taps): scalar FMAs
    acc = loop.chain_store
    others = [a for a in loop.accesses if acc is None or a.buf is not acc.buf]
    moving = [a for a in others if not a.store and not invariant(a, loop.var)]
    return bool(moving) and all(not a.store and unit_or_invariant(a, loop.var) for a in others) and not _alias_bound(loop)


def _relaxed(kernel: func.FuncOp) -> bool:
    assume = kernel.attributes.get("irkit.assume")
    return isinstance(assume, DictionaryAttr) and "relaxed_math" in assume.data


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


# ---- gcc's complete unrolling ------------------------------------------------


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
    if loop.guarded:
        return  # its branches' counts are over its own variable: left as a loop
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
            key = _access_key(a, dims)
            if key in seen:  # the accumulator's reloads and stores, and repeats: once
                continue
            seen.add(key)
            hoisted = not a.store and all(d is not None and top.var not in d[0] for d in dims)
            top.accesses.append(Access(a.buf, a.store, dims, top, hoisted, a.prefetched))  # type: ignore[arg-type]
    top.auto_vector = top.vector is None and top.step == 1 and all(unit_or_invariant(a, top.var) for a in top.accesses)


def _unroll_point_producer(loop: Loop) -> None:
    """A short nest of constant trip counts that fills a small temporary array a point of the loop
    around it (`top`), as gcc compiles it: a producer computed at its consumer's innermost loop
    (blur's `compute_at out.x`: three values of one column a pixel).  gcc unrolls the nest
    completely, the array's indices become constants and scalar replacement keeps its elements in
    registers, so the stores into it and `top`'s loads of them are no memory accesses; `top` is
    then the innermost loop, auto-vectorised when its accesses allow.  Priced as the nest it is
    written as, blur's inline schedule was 57 ms (scalar, and a DRAM wait an entry of the tiny
    inner loops) where it measured 4.5 ms on the Zen 3 host."""
    if loop.chain or loop.carry or loop.tile_chain or loop.guarded or not loop.accesses:
        return
    # the cheap tests first, before any expression is built: building one changes the order in
    # which the perf IR prints the terms of a product
    stores = [a for a in loop.accesses if a.store]
    registers = {id(a.buf) for a in stores}
    if not stores or not all(_scalar_replaceable(a.buf) for a in stores):
        return
    if any(id(a.buf) in registers for a in loop.accesses if not a.store):
        return  # it reads what it writes (an accumulation): a producer only writes
    points: list[dict[str, int]] = [{}]
    unrolled = False
    top: Loop | None = loop
    while top is not None and top.trips().op == "const":
        trips = int(top.trips().value)  # type: ignore[arg-type]
        if trips > UNROLLED_TRIPS or top.parent is None or len(top.parent.loops) != 1:
            return
        if top.vector is not None:
            return  # a vector loop (a register tile's row): gcc vectorises it, it does not unroll it
        if top is not loop and (top.accesses or top.ops):
            return
        # a variable's coefficients are per unit it moves from its loop's start
        points = [{**p, top.var: k * top.step} for p in points for k in range(trips)]
        unrolled, top = True, top.parent
    if not unrolled or top is None:
        return
    if len(points) * (len(loop.accesses) + sum(loop.ops.values())) > UNROLLED_INSNS:
        return
    placed = {id(a): [[None if d is None else _at_point(d, p) for d in a.dims] for p in points] for a in loop.accesses}
    if not all(_constant_index(dims) for a in stores for dims in placed[id(a)]):
        return
    if not all(_constant_index(a.dims) for a in top.accesses if id(a.buf) in registers):
        return
    top.loops = []
    for kind, count in loop.ops.items():
        top.ops[kind] = top.ops.get(kind, 0) + count * len(points)
    top.flops += loop.flops * len(points)
    kept = [a for a in top.accesses if id(a.buf) not in registers]
    seen: set[tuple] = set()
    for a in loop.accesses:
        if id(a.buf) in registers:
            continue  # scalar-replaced: registers
        for dims in placed[id(a)]:
            key = _access_key(a, dims)
            if key not in seen:
                seen.add(key)
                kept.append(Access(a.buf, a.store, dims, top, False, a.prefetched))
    top.accesses = kept
    if top.vector is None and top.step == 1:
        top.auto_vector = all(unit_or_invariant(a, top.var) for a in top.accesses)


SCALAR_REPLACED = 16  # elements of a temporary gcc keeps in registers when every index is a constant


def _scalar_replaceable(buf: Buffer) -> bool:
    """A temporary of a few elements and a constant shape (a `compute_at` buffer at a point)."""
    if buf.role != "temp" or not all(x.op == "const" for x in buf.shape):
        return False
    return math.prod(int(x.value) for x in buf.shape) <= SCALAR_REPLACED  # type: ignore[arg-type]


def _constant_index(dims) -> bool:
    """Every dimension a known constant: an element a register can hold."""
    return all(d is not None and not d[0] and d[1].op == "const" for d in dims)


def _access_key(a: Access, dims) -> tuple:
    """What makes two unrolled copies of an access one access: its buffer, load or store, and dims."""
    return id(a.buf), a.store, tuple(None if d is None else (tuple(sorted(d[0].items())), d[1]) for d in dims)


def _at_point(dim: tuple[dict[str, int], Expr], point: dict[str, int]) -> tuple[dict[str, int], Expr]:
    """A dimension of an access with the unrolled loops' variables set to `point`."""
    coeffs, rest = dim
    shift = sum(k * point[v] for v, k in coeffs.items() if v in point)
    return {v: k for v, k in coeffs.items() if v not in point}, rest + shift


# ---- accumulation chains -----------------------------------------------------


# The ops a chain's length counts, on its path from the reload of an accumulator to its store
ADD_CLASS = {"arith.addf", "arith.subf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.negf",
             "arith.cmpf", "arith.select", "arith.maxnumf", "arith.minnumf", "math.absf"}  # fmt: skip
KIND_OF = {"arith.divf": "div", "math.sqrt": "sqrt", "math.exp": "exp"}

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
    return _by_latency_class(best, fused)


def _expected_chain(op: lp.ForOp, guards, fused) -> dict[str, Expr] | None:
    """`_chain_kinds` through guarded selects: each arm's ops by the fraction of iterations taking it."""
    body = list(op.body.block.ops)
    loads = [o for o in body if isinstance(o, lp.LoadOp)]

    def kind_of(o: Operation) -> str | None:
        if o.name not in ADD_CLASS and o.name not in KIND_OF:
            return None
        return _by_latency_class([o], fused).popitem()[0]

    best: dict[str, Expr] | None = None
    for st in (o for o in body if isinstance(o, lp.StoreOp)):
        sources = {ld.results[0] for ld in loads if ld.memref is st.memref and list(ld.indices) == list(st.indices)}
        if sources:
            found = expected_chain(st, sources, guards, kind_of)
            if found is not None and (best is None or len(found) > len(best)):
                best = found
    return best


def _by_latency_class(path: list[Operation], fused) -> dict[str, int]:
    """The ops of a chain counted by latency class; an add fused with its multiply counts as `fma`."""
    kinds: dict[str, int] = {}
    for o in path:
        cls = LATENCY_CLASS.get(o.name, "add")
        if cls == "add" and o.name == "arith.addf" and fused(o):
            cls = "fma"
        kinds[cls] = kinds.get(cls, 0) + 1
    return kinds


def _recurrence_kinds(op: lp.ForOp, fused) -> dict[str, int]:
    """A store that a later iteration of the innermost loop reads back (`A[i, j]` stored, `A[i, j - 1]`
    loaded: a recurrence, `carry`): the FP ops on the longest path from such a load to the stored
    value, by latency class (empty when there is none); the caller adds the forwarding."""
    body = list(op.body.block.ops)
    iv = op.induction_var
    best: list[Operation] = []
    for st in (o for o in body if isinstance(o, lp.StoreOp)):
        sources = set()
        for ld in (o for o in body if isinstance(o, lp.LoadOp) and o.memref is st.memref):
            if list(ld.indices) == list(st.indices) and ld.map == st.map:
                continue  # the element itself: read before it is written
            if iv in ld.indices and iv in st.indices:
                sources.add(ld.results[0])
        if sources:
            path = _longest_path(st.value, sources, op.body.block, {})
            if path is not None and _path_weight(path) > _path_weight(best):
                best = path
    return _by_latency_class(best, fused)


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
