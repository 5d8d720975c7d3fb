"""The cost terms of a loop-level kernel, per top-level nest: counts, chains, traffic, parallelism.

This is the analysis behind `model-perf` (docs/perf-model.md states the
model).  `kernel_terms` reads the loop IR (`irkit.perf.reader`) exactly as
the C backend will emit it and derives, per top-level loop nest,
expressions of the symbolic sizes:

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

Sums over loops whose bounds depend on outer loops use the first/last rule
(`irkit.perf.loop_tree.total_over`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import func

from irkit.perf import expr as ex
from irkit.perf.expr import Expr
from irkit.perf.footprint import traffic
from irkit.perf.loop_tree import (
    CORES,
    LANES32,
    LANES64,
    WINDOW,
    Access,
    Buffer,
    Loop,
    invariant,
    total_over,
    unit_or_invariant,
)
from irkit.perf.reader import Reader
from irkit.perf.runtime import LOOP_CONTROL, PART_PREFIX, WAIT_PREFIX, instruction_total, is_core_count

MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: larger blocks are always mmapped

# Instruction counts carry the width of their instructions in the key's suffix, which the
# pricing turns into bits with the hardware's vector width: `instr_fp` full-width vectors (gcc's
# own vectorisation), `instr_fp_v8` chunks of a `vectorize ... by 8` loop (8 lanes, or as many
# full vectors as 8 lanes take), `instr_fp_s` scalar instructions.  `64` after the kind marks f64.
SCALAR = "_s"
VECTOR_MARK = "_vec"  # while a vector loop's own counts wait to be counted in chunks


# ---- per-nest terms ----------------------------------------------------------


@dataclass
class NestTerms:
    name: str
    terms: dict[str, Expr]


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
            terms["active"] = ex.min_(_mean_trips(par), ex.sym(CORES))
            terms["regions"] = _entries(par)
        else:
            terms["active"] = ex.ONE
            terms["regions"] = ex.ZERO
        terms["lines"] = traffic(root)
        terms["stored_lines"] = traffic(root, "stored")
        terms["strided_lines"] = traffic(root, "strided")
        terms["serial_lines"] = traffic(root, "serial")
        terms["untracked_lines"] = traffic(root, "untracked")
        if any(a.prefetched for lp_ in root.walk() for a in lp_.accesses):
            terms["waited_lines"] = traffic(root, "waited")
        for g, (names, windows) in enumerate(wait_groups(root)):
            terms[f"{WAIT_PREFIX}{g}_lines"] = traffic(root, "waited", names)
            terms[f"{WAIT_PREFIX}{g}_windows"] = windows
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


def _mean_trips(loop: Loop) -> Expr:
    """The iterations of `loop` an entry runs, on average over its entries: its trips, or where
    they depend on the loops around it (a parallel loop inside a tile loop, with a tail), their
    sum over those loops over the entries, so that no loop variable is left in the term."""
    trips = loop.trips()
    outer = []
    node = loop.parent
    while node is not None:
        outer.append(node)
        node = node.parent
    if not trips.free() & {n.var for n in outer}:
        return trips
    total = trips
    for node in outer:
        total = total_over(node, total, per_core=False)
    return ex.rdiv(total, ex.max_(_entries(loop), 1))


def _entries(loop: Loop, per_core: bool = False) -> Expr:
    """How many times `loop` is entered: the iterations of the loops around it (all cores, or
    the busiest core's)."""
    count = ex.ONE
    node = loop.parent
    while node is not None:
        count = total_over(node, count, per_core=per_core)
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


def _leaves(root: Loop) -> list[Loop]:
    """The innermost loops with work under `root` (each priced apart, `part_terms`)."""
    return [lp_ for lp_ in root.walk() if not lp_.loops and (lp_.ops or lp_.accesses)]


def wait_groups(root: Loop) -> list[tuple[frozenset[str], Expr]]:
    """Where a nest of several innermost loops finds its DRAM misses: its buffers grouped by the
    innermost loops that touch them, each group with the out-of-order windows those loops span.

    A line is missed by the code that touches it, so only those loops' windows can wait for it:
    a pack loop copies its operand in a few instructions a line (few windows, its misses overlap),
    and a register block's fill, entered once between two runs of a long reduction loop, is a
    window of its own at each entry.  So an innermost loop spans the more of its instructions /
    `window` and the entries of its region (the outermost loop around it holding no other
    innermost loop).  Empty for a nest of one innermost loop: all its windows can wait for all
    its lines (`runtime.latency_bound`)."""
    leaves = _leaves(root)
    if len(leaves) < 2:
        return []
    index = {id(leaf): k for k, leaf in enumerate(leaves)}
    under: dict[int, frozenset[int]] = {}
    for lp_ in reversed(list(root.walk())):
        own = {index[id(lp_)]} if id(lp_) in index else set()
        under[id(lp_)] = frozenset(own.union(*(under[id(c)] for c in lp_.loops)))
    touched: dict[str, set[int]] = {}
    for lp_ in root.walk():
        for a in lp_.accesses:
            if not a.buf.local:
                touched.setdefault(a.buf.name, set()).update(under[id(lp_)])
    groups: dict[frozenset[int], set[str]] = {}
    for name, ks in touched.items():
        groups.setdefault(frozenset(ks), set()).add(name)
    window = ex.max_(ex.sym(WINDOW), ex.ONE)  # (no window in the description: no waits at all)
    spans = [ex.max_(ex.rdiv(instruction_total(instr_count(root, only=leaf)), window), _region_entries(leaf, under)) for leaf in leaves]
    out = []
    for ks, names in sorted(groups.items(), key=lambda item: sorted(item[1])):
        total = ex.ZERO
        for k in sorted(ks):
            total = total + spans[k]
        out.append((frozenset(names), total))
    return out


def _region_entries(leaf: Loop, under: dict[int, frozenset[int]]) -> Expr:
    """How many times (each core) the outermost loop around `leaf` that holds no other innermost
    loop is entered."""
    region = leaf
    while region.parent is not None and len(under[id(region.parent)]) == 1:
        region = region.parent
    return _entries(region, per_core=True)


def part_terms(root: Loop) -> dict[str, Expr]:
    """`part<k>_<term>` for each innermost loop with work, where the nest has more than one."""
    leaves = _leaves(root)
    if len(leaves) < 2:
        return {}
    out: dict[str, Expr] = {}
    for k, leaf in enumerate(leaves):
        for key, value in instr_count(root, only=leaf).items():
            if is_core_count(key):
                out[f"{PART_PREFIX}{k}_{key}"] = value
    return out


# ---- instruction counts ------------------------------------------------------


def instr_count(root: Loop, per_core: bool = True, only: Loop | None = None) -> dict[str, Expr]:
    """Totals of one execution of `root`: instructions by kind, flops, L1 bytes and chain
    iterations -- for the busiest core, or (per_core False) for all cores together.  `only`: the
    work of that one loop alone (its own body, as many times as the loops around it run it)."""

    def body(loop: Loop) -> dict[str, Expr]:
        res: dict[str, Expr] = {}
        for child in loop.loops:
            if only is not None and not _holds(child, only):
                continue
            for k, v in body(child).items():
                _put(res, k, v)
        vectorised = not loop.loops and bool(loop.vector or loop.auto_vector)
        fold = _folded_loads(loop) if vectorised else 1.0
        if only is None or loop is only:
            _direct_counts(loop, vectorised, fold, res)
        return _summed(loop, res, per_core)

    out = body(root)
    for kind in ("mem", "fp", "store", "gather", "mem64", "fp64", "store64", "gather64"):  # gathers' lanes,
        for prefix in ("elem_", "entry_"):  # and hoisted loads: scalar
            extra = out.pop(prefix + kind, None)
            if extra is not None:
                key = "instr_" + kind + SCALAR
                out[key] = out.get(key, ex.ZERO) + extra
    return out


def _put(res: dict[str, Expr], key: str, value: Expr) -> None:
    res[key] = res.get(key, ex.ZERO) + value


def _direct_counts(loop: Loop, vectorised: bool, fold: float, res: dict[str, Expr]) -> None:
    """The direct work of one iteration of `loop` (not its inner loops'), added to `res`.
    Instructions of a vector loop are marked `_vec` until `_summed` counts them in chunks; all
    others are scalar (`_s`).  `fold`: how many times each vector load is made (`_folded_loads`)."""
    mark = VECTOR_MARK if vectorised else SCALAR
    for kind, count in loop.ops.items():
        _put(res, "instr_" + kind + mark, ex.const(count))
    for kind, expected in loop.guarded.items():  # an arm of a branch: where it is taken
        _put(res, "instr_" + kind + mark, expected)
    if loop.fold_left:
        # the in-order reduction's lanes: each taken out of its vector and added on its own
        fp = "fp64" if loop.ops.get("fp64") else "fp"
        _put(res, "instr_" + fp + SCALAR, ex.const(2 * loop.chain))
    if loop.flops:
        _put(res, "flop_lanes", ex.const(loop.flops))
    acc = loop.chain_store if loop.chain and not loop.vector else None
    for a in loop.accesses:
        if a.buf.registers or a.hoisted:
            continue
        if acc is not None and a.buf is acc.buf and a.dims == acc.dims:
            # a scalar accumulator gcc keeps in a register: loaded and stored once an entry
            wide = "64" if a.buf.elem == 8 else ""
            _put(res, "entry_mem" + wide, ex.ONE)
            if a.store:
                _put(res, "entry_store" + wide, ex.ONE)
            continue
        _access_counts(a, loop, vectorised, mark, fold, res)
    if loop.chain:
        # Chains of successive entries are independent: the out-of-order window (`window`
        # instructions) runs 1 + window / (instructions of one entry's chain) of them at once.
        # Successive entries are a whole iteration of the loop around the chain apart: when that
        # loop holds other loops too (softmax's row: its max, exp, sum and divide passes), their
        # work sits between two entries and fills the window (one row's chains, 2.67 ms, against
        # rows in blocks of 16 with each pass over the block, 2.32 ms, measured on Zen 3).
        steps = _chain_steps(loop)
        per_step = _step_instructions(loop)
        entry = steps * per_step + _between_entries(_chain_top(loop))
        in_flight = ex.ONE + ex.rdiv(ex.sym(WINDOW), ex.max_(entry, 1))
        kinds = loop.chain_expected or {cls: ex.const(n) for cls, n in (loop.chain_kinds or {"add": loop.chain}).items()}
        for cls, count in kinds.items():
            _put(res, "chain_" + cls, ex.rdiv(count, in_flight))
    if loop.tile_chain:
        # A register tile's accumulators (`unroll_jam`): a run of the loop takes each of them one
        # step, side by side, and the next run (the reduction loop around) the next step, so a
        # run adds one step's latency whatever the tile's size; how close that comes to the
        # pipes' throughput is `runtime.contended`'s (4 rows x 2 vectors of FMAs on Zen 3: 8
        # chains of 4 cycles on 2 pipes, measured 1.4-1.5x slower than 6 x 2)
        for cls, count in loop.tile_chain.items():
            _put(res, "chain_" + cls, ex.rdiv(ex.const(count), _vector_chain_steps(loop, loop.trips())))  # `_summed`: a step a chunk
    if loop.simd_entries and not loop.loops and _one_vector(loop):
        # Every entry of gcc's vector loop works out its trip count, its start addresses and
        # its remainder before the first vector: `vector_setups` slots an entry, one plus
        # one an access (a vector loop entered for one vector of 8 lanes, 1 load and 1
        # store, costs 5 cycles more an entry on Zen 4 than in a long loop; with 4 loads
        # and a store, 10).  Only an entry of one vector: one of several hides its set-up
        # behind them (batch_matmul's `bikj`, 8 vectors an entry, measured no slower)
        accesses = [a for a in loop.accesses if not a.buf.local and not a.hoisted and not a.buf.registers]
        res["vector_setups"] = ex.const(1 + len(accesses))
    if loop.carry:
        res["carry"] = ex.const(loop.carry)
        res["carry_steps"] = ex.ONE
    if not loop.loops:
        _put(res, "loop_steps" + mark, ex.ONE)  # the front end's: one loop control a step (a chunk)


def _access_counts(a: Access, loop: Loop, vectorised: bool, mark: str, fold: float, res: dict[str, Expr]) -> None:
    """What one load or store of an iteration of `loop` counts: its L1 bytes and its instructions."""
    _put(res, "l1_bytes", ex.const(a.buf.elem))
    wide = "64" if a.buf.elem == 8 else ""
    if vectorised and not unit_or_invariant(a, loop.var):
        _put(res, "elem_mem" + wide, ex.ONE)  # gathered or scattered: one scalar access a lane ...
        _put(res, "elem_gather" + wide, ex.ONE)  # ... and its lane's insert or extract
        if a.store:
            _put(res, "elem_store" + wide, ex.ONE)
    elif vectorised and not a.store and invariant(a, loop.var):
        # a load the vector loop does not move (a row's scalar, a broadcast): gcc hoists
        # it, one scalar load an entry
        _put(res, "entry_mem" + wide, ex.ONE)
    else:
        times = ex.const(fold) if vectorised and not a.store and not a.buf.local else ex.ONE
        _put(res, "instr_mem" + wide + mark, times)
        if a.store:
            _put(res, "instr_store" + wide + mark, ex.ONE)
        if vectorised and not a.buf.local:
            off = _misaligned(a, loop)
            if not (off.is_const and off.value == 0):
                _put(res, "instr_mis" + wide + mark, off * times)


def _summed(loop: Loop, res: dict[str, Expr], per_core: bool) -> dict[str, Expr]:
    """One iteration's counts of `loop` (its inner loops' totals and its direct work) summed over
    its iterations, each kind by its own rule."""
    n = loop.core_trips() if per_core else loop.trips()
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


def _chain_steps(loop: Loop) -> Expr:
    """Steps of one chain of an accumulating innermost loop: its own (W-wide chunks when vectorised),
    times those of the loops around it that leave the accumulator where it is (a convolution's
    c, r, s around its innermost s: the chain runs over all three, one chain an output element).
    Each such loop must hold nothing but the next one in, or its other work breaks the chain."""
    steps = _vector_chain_steps(loop, loop.trips()) if loop.vector else loop.trips()
    top = _chain_top(loop)
    node = loop
    while node is not top and node.parent is not None:
        node = node.parent
        steps = steps * node.trips()
    return steps


def _chain_top(loop: Loop) -> Loop:
    """The outermost loop of the chain `_chain_steps` counts (the loop itself, or the loops
    around it that leave its accumulator where it is)."""
    st = loop.chain_store
    if st is None:
        return loop
    used = {v for d in st.dims if d is not None for v in d[0]}
    node = loop
    while node.parent is not None and node.parent.var not in used and len(node.parent.loops) == 1:
        if node.parent.accesses or node.parent.ops:
            break
        node = node.parent
    return node


def _step_instructions(loop: Loop) -> int:
    """Instructions of one step of `loop`'s own body: its ops, its accesses to memory, its control."""
    return sum(loop.ops.values()) + len([a for a in loop.accesses if not a.buf.local]) + LOOP_CONTROL


def _loop_instructions(loop: Loop) -> Expr:
    """Instructions of one whole run of `loop` (its steps, in hardware vectors when vectorised,
    and the loops inside it, whose bounds may use its variable: summed by `total_over`)."""
    inner = ex.const(_step_instructions(loop))
    for child in loop.loops:
        inner = inner + _loop_instructions(child)
    if loop.vector:
        inner = ex.rdiv(inner, ex.sym(LANES64 if loop.ops.get("fp64") else LANES32))  # an element's share
    return total_over(loop, inner, per_core=False)


def _between_entries(top: Loop) -> Expr:
    """Instructions the other loops of `top`'s parent run between two successive entries of `top`."""
    parent = top.parent
    if parent is None or len(parent.loops) < 2:
        return ex.ZERO
    total = ex.ZERO
    for sibling in parent.loops:
        if sibling is not top:
            total = total + _loop_instructions(sibling)
    return total


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


# ---- the loads and misalignment of vector loops ------------------------------


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
    loads = [a for a in loop.accesses if not a.store and not a.buf.local and not invariant(a, loop.var)]
    if not loads or registers + len(loads) * per_chunk + 1 <= VECTOR_REGISTERS:
        return 1.0
    fp = loop.ops.get("fp", 0) + loop.ops.get("fp64", 0)
    return max(1.0, fp / len(loads))


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


def _strides(buf: Buffer) -> list[Expr]:
    """Each logical dimension's stride in elements (storage order outermost first)."""
    strides: list[Expr] = [ex.ONE] * len(buf.shape)
    step = ex.ONE
    for d in reversed(buf.order):
        strides[d] = step
        step = step * buf.shape[d]
    return strides


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
