"""What the C backend decides about a kernel before it prints it: the plans.

Functions of the loop IR that return plans; the printer (`irkit.backends.c`)
consumes them and prints, and the cost model (`irkit.perf.reader`, `irkit.perf.analysis`) asks
some of the same questions (`stream_candidate`, `stream_threshold`) so that
it predicts the code the backend writes.

- `plan_vector(loop, name_of)`: may a `vector N` loop get `#pragma omp simd`
  (`VectorPlan.problem` is None), and which of its stores are reductions
  (`Reduction`: the accumulated element in a local, a `reduction(op:acc)`
  clause with `reduction_identifier`'s identifier);
- `aligned_buffers(loop, buffers)`: the buffers a vector loop walks whose
  first element has a known alignment (the `aligned(...)` clause);
- `plan_stream(kernel, loop)`: the store of a vector loop that may be a
  streaming (non-temporal) store, with `stream_threshold` the output size
  from which it streams and `fence_anchor` the loop whose iterations end with
  the store fence;
- `plan_prefetch(loop)`: the register block a loop's next iteration fills from memory, whose
  lines the printer prefetches one iteration ahead (`Prefetch`; the cost model does not wait
  for them);
- `relaxed_math(kernel)`: does the kernel allow the fast, vectorizable `exp`
  and FMA contraction;
- `reciprocal_divisor(op)`: is a division's divisor one the innermost loop
  around it does not change (under `relaxed_math` the backend multiplies by
  its reciprocal, and the model prices a multiplication);
- `eliminate_dead_code(kernel)`: xDSL's dead-code elimination (its
  liveness analysis, as `region_dce` runs it), run by the printer on its own
  copy of the module before anything else (pure values nobody uses would be
  -Wunused warnings).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.transforms.dead_code_elimination import LiveSet

from irkit.affine.linear import no_div, try_lin_of
from irkit.backends.c_math import DEFAULT_NT_MIN_BYTES
from irkit.backends.c_syntax import is_f32
from irkit.dialects.loop import AllocOp, ForOp, FreeOp, LoadOp, LocalOp, StoreOp, linear_form, store_depends_on
from irkit.kernel_abi import kernel_args, layout_order

__all__ = [
    "Prefetch",
    "Reduction",
    "VectorPlan",
    "aligned_buffers",
    "eliminate_dead_code",
    "fence_anchor",
    "plan_prefetch",
    "plan_stream",
    "plan_vector",
    "reciprocal_divisor",
    "reduction_identifier",
    "relaxed_math",
    "stream_candidate",
    "stream_threshold",
]

# The combiners of a reduction a vector loop may keep in a local, and OpenMP's operator for each.
REDUCTION_OMP = {
    "arith.addf": "+",
    "arith.addi": "+",
    "arith.mulf": "*",
    "arith.muli": "*",
    "arith.maximumf": "max",
    "arith.maxnumf": "max",
    "arith.maxsi": "max",
    "arith.minimumf": "min",
    "arith.minnumf": "min",
    "arith.minsi": "min",
}
_FLOAT_MAX_MIN = ("arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf")


# ------------------------------------------------------------- vector loops


@dataclass
class Reduction:
    """A store of a vector loop that accumulates into one element: `store(combine(load, x))`."""

    load: LoadOp
    store: StoreOp
    combine: Operation
    omp: str  # the OpenMP reduction identifier (`reduction_identifier`)


@dataclass
class VectorPlan:
    """Whether a `vector N` loop gets `#pragma omp simd` and with which reductions.

    `helpers` are the helper functions (and declared reductions) the reductions'
    identifiers name, and `math` says they need <math.h>; both hold what the
    reductions met before a `problem` named too: the printer declares them
    either way (as it always has)."""

    problem: str | None
    reductions: list[Reduction] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    math: bool = False


def reduction_identifier(comb: Operation) -> tuple[str, list[str]]:
    """The OpenMP reduction identifier for a reduction combined by `comb` and the helpers it
    names: the built-in operator, or for float max/min a declared reduction with the loop's
    own NaN semantics (`irkit_red_<fn>`, over `fn` itself when that is a helper too)."""
    if comb.name in _FLOAT_MAX_MIN:
        f32 = is_f32(comb.results[0].type)
        helpers = []
        if comb.name.endswith("numf"):
            fn = ("fmax" if "max" in comb.name else "fmin") + ("f" if f32 else "")
        else:
            fn = "irkit_" + ("maximum" if "max" in comb.name else "minimum") + ("f" if f32 else "")
            helpers.append(fn)
        helpers.append(f"irkit_red_{fn}")
        return fn, helpers
    return REDUCTION_OMP[comb.name], []


def plan_vector(op: ForOp, name_of: Callable[[StoreOp], str]) -> VectorPlan:
    """Why `#pragma omp simd` would be wrong for loop `op` (None: it is right), and its reductions.

    `name_of` names a stored buffer for the messages (and refuses a buffer the
    printer does not know).  Wrong: a body with loops, allocations or nested
    regions; two iterations that may write one element; one buffer accessed at
    two elements in one iteration; a store whose element does not vary with the
    loop and is not a simple reduction (`X[f] = comb(X[f], v)`, the load before
    the store and used once, the combined value used only by the store)."""
    inner = [o for o in op.walk() if o is not op]
    if any(isinstance(o, ForOp | AllocOp | FreeOp) for o in inner):
        return VectorPlan("its body holds loops or allocations")
    body = list(op.body.block.ops)
    if len(body) != len(inner):
        return VectorPlan("its body holds nested regions")
    iv = op.induction_var
    defined_inside = {r for o in inner for r in o.results}
    accesses = [o for o in body if isinstance(o, LoadOp | StoreOp)]
    plan = VectorPlan(None)

    def refuse(why: str) -> VectorPlan:
        return VectorPlan(why, [], plan.helpers, plan.math)

    for st in (o for o in body if isinstance(o, StoreOp)):
        name = name_of(st)
        others = [a for a in accesses if a is not st and a.memref is st.memref]
        if store_depends_on(st, iv):
            if not _injective(st, iv, defined_inside):
                return refuse(f"two iterations may write the same element of '{name}'")
            if any(not _same_element(a, st) for a in others):
                return refuse(f"'{name}' is accessed at two different elements in one iteration")
            continue
        found = _simple_reduction(st, others, body, inner, defined_inside)
        if found is None:
            return refuse(
                f"every iteration writes the same element of '{name}' in a way that is not a simple reduction"
            )
        ld, comb = found
        omp, helpers = reduction_identifier(comb)
        plan.helpers.extend(helpers)
        plan.math = plan.math or bool(helpers)  # INFINITY, NAN, fmax
        plan.reductions.append(Reduction(ld, st, comb, omp))
    return plan


def _simple_reduction(
    st: StoreOp,
    others: list[LoadOp | StoreOp],
    body: list[Operation],
    inner: list[Operation],
    defined_inside: set[SSAValue],
) -> tuple[LoadOp, Operation] | None:
    """(load, combiner) if store `st`, whose element does not vary with the loop, is `X[f] =
    comb(X[f], v)`: its only other access of the buffer is a load of the same element before
    it, used once, by a combiner of `REDUCTION_OMP` inside the loop whose result only `st` uses."""
    if any(v in defined_inside for v in st.indices) or len(others) != 1:
        return None
    ld = others[0]
    if not isinstance(ld, LoadOp) or not _same_element(ld, st) or body.index(ld) > body.index(st):
        return None
    comb = st.value.owner
    if not isinstance(comb, Operation) or comb not in inner or comb.name not in REDUCTION_OMP:
        return None
    if list(comb.operands).count(ld.result) != 1 or not ld.result.has_one_use():
        return None
    if not comb.results[0].has_one_use():
        return None
    return ld, comb


def _same_element(a: LoadOp | StoreOp, b: LoadOp | StoreOp) -> bool:
    return a.memref is b.memref and a.map.data == b.map.data and list(a.indices) == list(b.indices)


def _injective(store: StoreOp, iv: SSAValue, varying: set[SSAValue]) -> bool:
    """Do different values of `iv` make `store` write different elements?  Yes if one index is
    linear in `iv` with a nonzero coefficient and uses nothing else that varies with it."""
    for result in store.map.data.results:
        form = linear_form(result)
        if form is None:
            continue
        coeff = sum(k for pos, k in form[0].items() if store.indices[pos] is iv)
        others = [store.indices[pos] for pos in form[0] if store.indices[pos] is not iv]
        if coeff != 0 and not any(v in varying for v in others):
            return True
    return False


def aligned_buffers(op: ForOp, buffers: Mapping[SSAValue, tuple[str, int | None]]) -> list[tuple[int, list[str]]]:
    """The buffers (by C name) that vector loop `op` accesses at addresses that vary with it and
    whose first element is aligned to a power of two, grouped by that alignment (ascending).

    `buffers` maps a buffer to its C name and known alignment (bytes; None: unknown).
    OpenMP's `aligned` promises only that the *pointer* (the buffer's first
    element) is aligned, the same promise as the `__builtin_assume_aligned`
    at entry: the document's `align`/`aligned(T, n)` for arguments (the runner
    refuses misaligned arrays) and the allocation's alignment for
    temporaries.  Which accesses are then aligned, gcc works out itself (it
    peels or uses unaligned loads where a row stride or the loop's start
    leave it unknown), so the clause can never make a wrong promise.
    """
    iv = op.induction_var
    by_align: dict[int, list[str]] = {}
    for acc in op.body.block.ops:
        if not isinstance(acc, LoadOp | StoreOp) or acc.memref not in buffers:
            continue
        used = set().union(*(r.used_dims() for r in acc.map.data.results))
        if not any(v is iv and k in used for k, v in enumerate(acc.indices)):
            continue
        name, align = buffers[acc.memref]
        if align and align & (align - 1) == 0 and name not in by_align.get(align, []):
            by_align.setdefault(align, []).append(name)
    return sorted(by_align.items())


# --------------------------------------------------------- streaming stores


def plan_stream(kernel: func.FuncOp, op: ForOp) -> StoreOp | None:
    """The store of a vector loop that may be streaming (non-temporal), or None.

    Streaming stores write whole vectors around the caches: for an output
    that the kernel writes once and never reads, and that is too large to
    stay in cache anyway, they save the read of each line before it is
    written (a triad moves 16 bytes per element instead of 20).  Eligible: a
    vector loop (simd, no reduction, not itself parallel, step 1) with one
    store, to an output argument of f32/f64 that no load in the kernel reads,
    at an element contiguous in the loop (its innermost storage index is the
    loop variable plus loop-invariant terms).  Whether to stream is decided
    at run time, per loop entry: when the output has at least
    `IRKIT_NT_MIN_BYTES` (see `stream_threshold`).
    """
    st = stream_candidate(kernel, op)
    if st is None:
        return None
    if not isinstance(st.memref.type.element_type, Float32Type | Float64Type):  # type: ignore[attr-defined]
        return None
    _, tensors = kernel_args(kernel)
    if not any(t.value is st.memref and t.role in ("output", "inout") for t in tensors):
        return None
    return st


def stream_candidate(kernel: func.FuncOp, op: ForOp) -> StoreOp | None:
    """The store of loop `op` that streaming would write, by the structure alone (see
    `plan_stream`; the cost model asks the same question)."""
    if op.vector is None or op.parallel is not None or op.step_value != 1:
        return None
    body = list(op.body.block.ops)
    stores = [o for o in body if isinstance(o, StoreOp)]
    if len(stores) != 1:
        return None
    st = stores[0]
    if not isinstance(st.memref, BlockArgument) or st.memref.owner is not kernel.body.block:
        return None
    if any(isinstance(o, LoadOp) and o.memref is st.memref for o in kernel.body.walk()):
        return None
    iv = op.induction_var
    inside = {r for o in body for r in o.results}
    if any(v in inside for v in st.indices):
        return None
    inner = layout_order(st.memref.type)[-1]  # type: ignore[arg-type]
    for d, result in enumerate(st.map.data.results):
        used = {pos for pos in result.used_dims() if st.indices[pos] is iv}
        if d != inner:
            if used:
                return None
            continue
        form = linear_form(result)
        if form is None or sum(k for pos, k in form[0].items() if st.indices[pos] is iv) != 1:
            return None
    return st


def stream_threshold(kernel: func.FuncOp) -> int:
    """The least output size (bytes) that vector loops stream: the largest cache of the
    kernel's inline hardware block, else `c_math.DEFAULT_NT_MIN_BYTES` (the `generic`
    profile's last cache level).  `-DIRKIT_NT_MIN_BYTES=n` overrides it in the C."""
    hw = kernel.attributes.get("irkit.hardware")
    sizes = []
    if isinstance(hw, DictionaryAttr) and isinstance(hw.data.get("levels"), ArrayAttr):
        for level in hw.data["levels"].data:  # type: ignore[union-attr]
            if not isinstance(level, DictionaryAttr):
                continue
            name, size = level.data.get("name"), level.data.get("size")
            if isinstance(name, StringAttr) and name.data != "dram" and isinstance(size, IntegerAttr | FloatAttr):
                sizes.append(int(size.value.data))
    return max(sizes) if sizes else DEFAULT_NT_MIN_BYTES


def fence_anchor(op: ForOp) -> ForOp | None:
    """The loop whose iterations end with the `sfence` of streaming loop `op`: the nearest
    parallel loop around it (each thread fences its own stores), else the outermost loop
    around it; None when `op` is itself outermost (it fences after itself)."""
    outermost = None
    node = op.parent_op()
    while node is not None:
        if isinstance(node, ForOp):
            if node.parallel is not None:
                return node
            outermost = node
        node = node.parent_op()
    return outermost


# ------------------------------------------------------------ prefetching


@dataclass
class Prefetch:
    """A register block's fill that the next iteration of its loop reads from memory.

    `fill`: the loop that copies memory into the block's locals (the prologue `unroll_jam` writes
    before its reduction loop); `trips`: its constant trip count; `loads`: its loads from memory
    that move with the outer loop; `written`: the buffers of those loads the outer loop's body
    also stores to (a write is coming: prefetch for writing)."""

    fill: ForOp
    trips: int
    loads: list[LoadOp]
    written: set[SSAValue]


def plan_prefetch(op: ForOp) -> list[Prefetch]:
    """The register-block fills of `op`'s next iteration to prefetch during this one (GotoBLAS's
    prefetch of the next tile of C): fill loops directly in `op`'s body, of a constant trip count,
    made only of loads from memory stored into `loop.local` buffers, followed by another loop in
    the body (the work the prefetch hides behind), whose loads move with `op`.

    Why: a 6 x 16 block of C reads six rows a row stride apart at the start of each micro-kernel,
    and the accumulators start from those loads; a hardware prefetcher follows a row only once it
    has seen it walked.  Measured on the Zen 3 guest, irkit against itself with no peer between
    (a numpy call leaves OpenBLAS's threads spinning for 84 ms): neutral there -- gemm 2048 (packed,
    tile 222 x 1024) 111.9 ms with against 109.5 without, 4096 x 4096 x 1024 (C from DRAM at each
    K block) 212.6 against 213.7, conv2d 56^2 1.906 against 1.896: its prefetchers already bring
    the rows.  It makes the lines come ahead on any host, which is what the cost model assumes of
    them (`waited_lines`), for 12 prefetches in 5,000 instructions.
    Not for a parallel loop (its next iteration is another thread's) or a vector one."""
    if op.parallel is not None or op.vector is not None:
        return []
    ops = list(op.body.block.ops)
    loops = [i for i, o in enumerate(ops) if isinstance(o, ForOp)]
    out: list[Prefetch] = []
    for i in loops:
        fill = ops[i]
        assert isinstance(fill, ForOp)
        if i == loops[-1]:
            break  # nothing after it to hide the prefetch behind
        body = list(fill.body.block.ops)
        if not body or not all(isinstance(o, (LoadOp, StoreOp)) for o in body):
            continue
        if not all(isinstance(o.memref.owner, LocalOp) for o in body if isinstance(o, StoreOp)):
            continue
        trips = constant_trips(fill)
        loads = [
            o for o in body if isinstance(o, LoadOp) and not isinstance(o.memref.owner, LocalOp) and _moves_with(o, op)
        ]
        if trips and loads:
            out.append(Prefetch(fill, trips, loads, {o.memref for o in loads}))
    if out:  # the loaded buffers the body also stores to (walked only for a loop with fills)
        stored = {o.memref for o in op.walk() if isinstance(o, StoreOp)}
        for plan in out:
            plan.written &= stored
    return out


def constant_trips(op: ForOp) -> int | None:
    """The trip count of a loop whose bounds differ by a constant (`[jr, jr + 16)`), else None."""
    lower, upper = op.lower.data, op.upper.data
    if len(lower.results) != 1 or len(upper.results) != 1:
        return None
    lo = try_lin_of(lower.results[0], list(op.lower_operands), div=no_div)
    hi = try_lin_of(upper.results[0], list(op.upper_operands), div=no_div)
    span = None if lo is None or hi is None else (hi - lo).as_const()
    return -(-span // op.step_value) if span is not None and span > 0 else None


def _moves_with(load: LoadOp, loop: ForOp) -> bool:
    """Does `load`'s address use `loop`'s variable (the next iteration reads other elements)?"""
    amap = load.map.data
    return any(
        value is loop.induction_var and any(pos in r.used_dims() for r in amap.results)
        for pos, value in enumerate(load.indices)
    )


# ------------------------------------------------------------------ kernel


def relaxed_math(kernel: func.FuncOp) -> bool:
    """Does the kernel's `irkit.assume` hold `relaxed_math` (fast, vectorizable exp; see `c_math`)?"""
    assume = kernel.attributes.get("irkit.assume")
    return isinstance(assume, DictionaryAttr) and "relaxed_math" in assume.data


def reciprocal_divisor(op: Operation) -> bool:
    """Is `op` an `arith.divf` whose divisor the innermost loop around it does not change?

    Under `relaxed_math` the backend writes such a division `a * (1 / b)`: gcc computes the
    reciprocal once, outside the loop, and the loop multiplies (a divider runs 8 to 14 times
    slower than the FP pipes: softmax's last pass, `P[i, j] / sum[i]`).  The result may differ
    from the division by an ulp, which `relaxed_math` allows."""
    if op.name != "arith.divf":
        return False
    loop = op.parent_op()
    while loop is not None and not isinstance(loop, ForOp):
        loop = loop.parent_op()
    return loop is not None and _invariant(op.operands[1], loop)


def _invariant(value: SSAValue, loop: ForOp) -> bool:
    """Does `value` stay the same across the iterations of `loop`: defined outside it, or computed
    in it by pure arithmetic or by a load of an address it does not move from a buffer it does not
    store to?"""
    if isinstance(value, BlockArgument):
        return not loop.is_ancestor(value.owner.parent_op() or loop)  # the loop's variable or a nested one
    op = value.owner
    if not loop.is_ancestor(op):
        return True
    if isinstance(op, LoadOp):
        stored = any(isinstance(o, StoreOp) and o.memref is op.memref for o in loop.walk())
        used = op.map.data.used_dims()  # the indices its map reads (`x[i]` may list j too)
        return not stored and all(_invariant(v, loop) for k, v in enumerate(op.indices) if k in used)
    if op.regions or not op.name.startswith(("arith.", "math.")):
        return False
    return all(_invariant(o, loop) for o in op.operands)


# Side-effect-free ops that xDSL 0.75 declares no memory effect for (every other arith and
# math op is `Pure` there), so its dead-code elimination would keep them.
UNTRAITED_PURE = frozenset({"arith.extsi", "arith.remui"})
# The dialects the C backend writes; an op of any other stays, used or not, so that it is
# refused ("no C translation") rather than dropped because xDSL knows it to be pure.
WRITTEN_DIALECTS = ("loop.", "arith.", "math.", "func.")


class _KernelLiveSet(LiveSet):
    """xDSL's liveness for dead-code elimination (`region_dce`'s), with the two exceptions
    above: an unused `UNTRAITED_PURE` op is dead, an op outside `WRITTEN_DIALECTS` is live."""

    def propagate_op_liveness(self, op: Operation) -> None:
        if op.name in UNTRAITED_PURE:
            if any(self.is_live(use.operation) for r in op.results for use in r.uses):
                self.set_live(op)
            return
        if not op.name.startswith(WRITTEN_DIALECTS):
            self.set_live(op)
        super().propagate_op_liveness(op)


def _liveness(kernel: func.FuncOp) -> _KernelLiveSet:
    live = _KernelLiveSet()
    while live.changed:
        live.changed = False
        live.propagate_region_liveness(kernel.body)
    return live


def has_dead_code(kernel: func.FuncOp) -> bool:
    """Would `eliminate_dead_code` remove anything?  (Lowering makes none, so the emitter can
    usually write the caller's kernel as it is, without copying it first.)"""
    live = _liveness(kernel)
    return any(not live.is_live(op) for op in kernel.body.walk())


def eliminate_dead_code(kernel: func.FuncOp) -> None:
    """Remove, in place, the ops of `kernel` whose results nobody needs and that have no other
    effect, as xDSL's `region_dce` does: what the ops' traits say is pure, or only reads (an
    unused `loop.load`), goes; loops, stores, allocations and frees stay (see
    `irkit.dialects.loop`).  Two exceptions (`_KernelLiveSet`)."""
    _liveness(kernel).delete_dead(kernel.body, None)
