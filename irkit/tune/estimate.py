"""The tuner's screening model, one candidate at a time: the reference `irkit.tune.batch` computes over
a batch (the search prices with that one; the tests hold the two equal).

`irkit predict` lowers a document and analyses its loop IR symbolically
(0.2-2.5 s a document); a search that ranks tens of thousands of
candidates cannot afford that.  This model prices a candidate from its
names-only nest (`irkit.directives.nest.Nest`, what replaying the
schedule's directive records gives) and the stage's bodies
(`irkit.tune.stages`), with the same hardware description and the same
structure as the full model, simplified:

- **in core**: the largest of the FP work at the vector width the nest
  runs, the loads and stores the register block leaves (an access invariant
  in the innermost loops stays in a register across them; an access
  invariant in an `unroll_jam` loop is shared by its copies), and the
  latency of accumulation chains (independent chains: the jammed copies and
  the vector lanes);
- **per cache level**: the traffic of the deepest loop whose working set
  fits the level's effective capacity (each access's footprint from the
  spans the inner loops cover, whole lines, and inflated when a power-of-two
  row stride folds it onto few cache sets; a packed tensor is contiguous),
  times the trips of the loops around it that move the access;
- the levels composed as the full model does (the largest, plus the others
  by their overlap), cores from the parallel loop's static share;
- the remainders a split or a register block leaves priced as the nests the
  backend runs them in (`parts`).

It ranks; it does not promise.  The tuner re-ranks its best candidates with
the full model and measures the best of those (`irkit.tune.search`), so an
error here costs search time, not the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from irkit.backends.c_simd import MAX_GROUPS
from irkit.perf.reader import ALIAS_PATTERNS
from irkit.perf.runtime import contended, fp_pipes, latency_cycles
from irkit.tune.stages import Access, Body, StageInfo

LOOP_CYCLES = 2.0  # instructions of loop control per iteration of the innermost loop (increment, compare-branch)
ISSUE_WIDTH = 4.0
SHORT_LOOP = 8
# gcc's own vectorisation of a loop without irkit's pragma or explicit vectors is priced this much
# slower: gcc versions it for aliasing and peels for alignment, and the full model's figures for a
# directive-vectorised loop are the calibrated ones
AUTO_VECTOR = 1.1  # a scalar loop of at most this many iterations gcc unrolls completely  # instructions the front end issues a cycle


_L1: dict[tuple[int, int], float] = {}
# the latency classes a chain's ops fall in (`irkit.perf.reader.LATENCY_CLASS`, gcc's fold-left and vector maximum)
LATENCY_CLASSES = ("add", "fma", "mul", "max", "div", "fold", "vmax")


@dataclass(frozen=True)
class Machine:
    """The figures of a hardware description the screening model uses (base units)."""

    cores: int
    frequency: float
    simd_bits: int
    registers: int
    fp_latency: float
    latency: dict[str, float]  # latency class -> cycles of one op of it on a chain (`irkit.perf.runtime.latency_cycles`)
    flops_w: dict[int, dict[int, float]]  # dtype bits -> instruction bits -> FLOP/s a core
    levels: tuple[tuple[float, float, float, int, float], ...]  # (effective bytes, line, bandwidth of the next, ways, overlap)
    dram_core: float
    dram_all: float
    div_rate: dict[int, float]  # dtype bits -> divisions/s a core (vector)
    exp_rate: dict[int, float]
    l1_w: dict[int, float]  # instruction bits -> L1 bytes/s a core (loads and stores together, as calibrated)
    parallel_overhead: float = 1.5e-6  # seconds to start and join one parallel region
    window: float = 0.0  # instructions the out-of-order core looks ahead (`ooo_window`; 0: chains never overlap)
    pipes: float = 2.0  # FP pipes of a core (`irkit.perf.runtime.fp_pipes`)

    @classmethod
    def of(cls, hw) -> Machine:
        v = hw.values
        simd = int(v.get("simd", 256))
        levels = v.get("levels", [])
        out = []
        for i, lv in enumerate(levels):
            nxt = levels[i + 1]["bandwidth"] if i + 1 < len(levels) else v.get("dram_bandwidth_core", v["dram_bandwidth"])
            size = float(lv.get("effective_size", lv["size"]))
            out.append((size, float(lv.get("line", 64)), float(nxt), int(lv.get("ways", 8)), float(lv.get("overlap", 0.0))))
        return cls(
            cores=int(v.get("cores", 1)),
            frequency=float(v.get("frequency", 3e9)),
            simd_bits=simd,
            registers=32 if simd >= 512 else 16,
            fp_latency=float(v.get("fp_latency", 4.0)),
            latency={cls: float(latency_cycles(cls, v) or v.get("fp_latency", 4.0)) for cls in LATENCY_CLASSES},
            flops_w={32: dict(v.get("flops_f32_w", {simd: v["flops_f32"]})), 64: dict(v.get("flops_f64_w", {simd: v.get("flops_f64", v["flops_f32"] / 2)}))},
            levels=tuple(out),
            dram_core=float(v.get("dram_bandwidth_core", v["dram_bandwidth"])),
            dram_all=float(v["dram_bandwidth"]),
            div_rate={32: float(v.get("div_f32", v["flops_f32"] / 8)), 64: float(v.get("div_f64", v["flops_f32"] / 16))},
            exp_rate={32: float(v.get("exp_f32", v["flops_f32"] / 16)), 64: float(v.get("exp_f64", v["flops_f32"] / 32))},
            l1_w=dict(levels[0].get("bandwidth_w", {simd: levels[0]["bandwidth"]})) if levels else {simd: 64.0 * float(v.get("frequency", 3e9))},
            parallel_overhead=float(v.get("parallel_overhead", 1.5e-6)),
            window=float(v.get("ooo_window", 0.0)),
            pipes=float(fp_pipes(v)),
        )

    def l1(self, bits: int) -> float:
        """L1 bytes/s for accesses `bits` wide (the nearest calibrated width at or below, scaled)."""
        got = _L1.get((id(self), bits))
        if got is None:
            known = sorted(b for b in self.l1_w if b <= bits) or sorted(self.l1_w)
            b = known[-1]
            got = _L1[(id(self), bits)] = float(self.l1_w[b]) * (1.0 if b <= bits else bits / b)
        return got

    def lanes(self, bits: int) -> int:
        return max(1, self.simd_bits // bits)

    def flops(self, dtype_bits: int, width: int) -> float:
        """FLOP/s of one core at `width` lanes (the nearest measured instruction width at or below)."""
        table = self.flops_w[dtype_bits]
        bits = width * dtype_bits
        known = sorted(b for b in table if b <= bits) or sorted(table)
        return float(table[known[-1]]) * (1.0 if known[-1] <= bits else bits / known[-1])


class NestLoop(NamedTuple):
    name: str
    root: str
    step: int
    trips: int
    range: int  # elements of its root the loop runs over (the next outer loop's step, or the extent)
    vector: int  # lanes, -1 for the hardware's width, 0 if not vectorised
    jam: int
    unroll: int
    parallel: bool
    constant: bool = False  # its trip count is a number in the C (a split's inner loop, a literal extent)


def nest_loops(nest, stage: StageInfo) -> list[NestLoop]:
    """The nest's loops with trip counts: a loop runs over its root's range in the next outer loop of the same root."""
    make = tuple.__new__  # NestLoop's fields in order, without its generated __new__ (the search makes millions)
    return [make(NestLoop, fields) for fields in loop_fields(nest, stage)]


def loop_fields(nest, stage: StageInfo, index: dict[str, int] | None = None) -> list[tuple]:
    """NestLoop's fields of each loop of the nest, outermost first (what `nest_loops` and the
    batched model's arrays are made of).  With `index`, the batched model's row instead: the root
    by its index, without the name (the search prices hundreds of thousands of loops)."""
    outer_step: dict[str, int] = {}
    extents, constant, all_marks = stage.extents, stage.constant, nest.marks
    rows = []
    for name, root, step in nest.loops:
        rng = outer_step.get(root)
        fixed = rng is not None or root in constant
        if rng is None:
            rng = extents.get(root, 1)
        marks = all_marks.get(name)
        trips = -(-rng // step)
        if trips < 1:
            trips = 1
        values = mark_values(marks) if marks else (0, 0, 0, False)
        if index is None:
            rows.append((name, root, step, trips, rng, *values, fixed))
        else:
            rows.append((index[root], step, trips, rng, *values, fixed))
        outer_step[root] = step
    return rows


def mark_values(marks: dict) -> tuple[int, int, int, bool]:
    """A loop's marks as NestLoop's (vector, jam, unroll, parallel)."""
    vec = marks.get("vectorize")
    vector = vec if isinstance(vec, int) and type(vec) is not bool else (-1 if vec else 0)
    return vector, int(marks.get("unroll_jam") or 0), int(marks.get("unroll") or 0), bool(marks.get("parallel"))


def stage_seconds(stage: StageInfo, nest, m: Machine, relaxed: bool = True) -> float:
    """Seconds of one stage's nest.  The lowering fuses a stage's nests at the outermost loop only
    (`irkit.passes.schedule.compute_at.fuse_stage`): the bodies with that loop among theirs run in
    it, one after the other each iteration, and are priced together (`fused_seconds`); a body
    without it is a nest of its own."""
    loops = nest_loops(nest, stage)
    owns = [(b, [lp for lp in loops if lp.root in b.roots]) for b in stage.bodies]
    inside = [bool(own) and own[0] is loops[0] for _, own in owns]
    if sum(inside) < 2:
        return sum(body_seconds(b, own, stage, m, nest.packs, relaxed) for b, own in owns)
    alone = sum(body_seconds(b, own, stage, m, nest.packs, relaxed) for (b, own), i in zip(owns, inside) if not i)
    return alone + fused_seconds([o for o, i in zip(owns, inside) if i], stage, m, nest.packs, relaxed)


def fused_seconds(fused: list[tuple[Body, list[NestLoop]]], stage: StageInfo, m: Machine, packs: dict, relaxed: bool) -> float:
    """Bodies run inside one outermost loop, priced as the full model prices one nest: their in-core
    times add up (each part at its own bottleneck), their memory traffic is one nest's, and the
    memory hides under the core or the core under it.  A later body's access to what an earlier one
    touched with the same index pattern is served from a cache level that holds one iteration of
    the outermost loop (every body's footprint in it): softmax's exp, sum and divide passes over a
    row reread the row its max pass brought in."""
    core = 0.0
    shared = separate = 0.0  # parallel overheads: of the outermost loop (once), of loops inside it
    prepared = [(b, own, _cores(own, m), _memory_tables(b, own, m, packs)) for b, own in fused]
    group = _group_lines(prepared, m)
    seen: dict[tuple, bool] = {}  # (tensor, index pattern) of earlier bodies -> stored
    levels = [0.0] * len(m.levels)
    for b, own, (cores, share), tables in prepared:
        core += _body_core(b, own, stage, m, relaxed, sibling_instructions(stage, b, own[0].root), packs) / share
        for level, (t, _) in enumerate(_level_times(tables, own, m, cores, seen, group)):
            levels[level] += t / share
        overhead = _regions(own) * m.parallel_overhead * (cores > 1)
        if own[0].parallel:
            shared = max(shared, overhead)
        else:
            separate += overhead
        for a in tables.accesses:
            key = (a.tensor, a.coeffs)
            seen[key] = seen.get(key, False) or a.store
    mem = _compose([(t, lv[4]) for t, lv in zip(levels, m.levels)])
    return max(core, mem) + shared + separate


def body_points(body: Body, stage: StageInfo) -> int:
    points = 1
    for r in body.roots:
        points *= max(1, stage.extents.get(r, 1))
    return points


def sibling_instructions(stage: StageInfo, body: Body, outer: str) -> float:
    """Instructions, over the whole stage, of the other bodies that share the nest's outermost loop
    (root `outer`) with `body`: the lowering fuses a stage's nests at that loop only, so one
    iteration of it runs each body's own loops one after the other.  Counted roughly, for the
    out-of-order window (`_in_flight`): ops, accesses and loop control a point."""
    total = 0.0
    for other in stage.bodies:
        if other is not body and outer in other.roots:
            total += body_points(other, stage) * (other.op_total + len(other.accesses) + LOOP_CYCLES)
    return total


def body_seconds(
    body: Body, loops: list[NestLoop], stage: StageInfo, m: Machine, packs: dict, relaxed: bool, others: float = 0.0
) -> float:
    """`others`: `sibling_instructions` when the body's first loop is the nest's outermost (else 0)."""
    if not loops:
        return 0.0
    cores, share = _cores(loops, m)
    core = _body_core(body, loops, stage, m, relaxed, others, packs)
    mem = _compose(_level_times(_memory_tables(body, loops, m, packs), loops, m, cores)) / share
    return max(core / share, mem) + _regions(loops) * m.parallel_overhead * (cores > 1)


def _body_core(
    body: Body, loops: list[NestLoop], stage: StageInfo, m: Machine, relaxed: bool, others: float, packs: dict | None = None
) -> float:
    """The body's in-core seconds on one core, its parts (`parts`) each at its own bottleneck."""
    points = body_points(body, stage)
    packed = _packed_depths(loops, packs or {})
    return sum(
        part * _core_seconds(body, nest, stage, m, points, relaxed, others, packed) for part, nest in parts(loops, stage) if part > 0.0
    )


def _packed_depths(loops: list[NestLoop], packs: dict) -> dict[str, int]:
    """Packed tensor -> the depth of the loop its copy is made at, in `loops`."""
    return {t: i for t, loop in packs.items() for i, lp in enumerate(loops) if lp.name == loop}


def parts(loops: list[NestLoop], stage: StageInfo) -> list[tuple[float, list[NestLoop]]]:
    """The nests the backend runs the points in, with the share of the points each runs: the whole
    blocks, and the remainders a split or a register block leaves.

    - The backend writes a vectorized innermost loop of constant trip count as explicit vectors
      with its accumulators in registers; where a loop outside it, of its root, does not divide its
      range by its step, the remainder runs in a copy of the nest whose innermost loop has a
      run-time trip count (what is left) and whose accumulators stay in memory (a `float acc[W]`
      array); with fewer iterations than the vector width its `simdlen` loop is gcc's scalar
      epilogue (`_width`).
    - An `unroll_jam` by J of a loop of T trips (not a reduction's) runs T mod J of them one at a
      time, after the jammed ones: one accumulator, one chain.
    Shares of 0 (a loop shorter than its step or its jam) are listed too; the caller skips them."""
    out = [(1.0, loops)]
    v = loops[-1]
    if v.vector and v.constant:
        whole, left = 1.0, v.range
        for lp in loops[:-1]:
            if lp.root == v.root and lp.range % lp.step:
                whole *= (lp.range // lp.step) * lp.step / lp.range
                left = min(left, lp.range % lp.step)
        if whole < 1.0:
            out = [(whole, loops), (1.0 - whole, [*loops[:-1], v._replace(range=left, trips=left, constant=False)])]
    for i, lp in enumerate(loops):
        if lp.jam > 1 and lp.trips % lp.jam and lp.root not in stage.reductions:
            whole = (lp.trips - lp.trips % lp.jam) / lp.trips
            out = [(share * whole, nest) for share, nest in out] + [
                (share * (1.0 - whole), [*nest[:i], nest[i]._replace(jam=0), *nest[i + 1 :]]) for share, nest in out
            ]
    return out


def _regions(loops: list[NestLoop]) -> float:
    """Parallel regions started: one per iteration of the loops around the parallel loop."""
    regions = 1.0
    for lp in loops:
        if lp.parallel:
            return regions
        regions *= lp.trips
    return 0.0


def _cores(loops: list[NestLoop], m: Machine) -> tuple[int, float]:
    """(cores used, speed-up): the static share of the outermost parallel loop."""
    for lp in loops:
        if lp.parallel and m.cores > 1:
            per = math.ceil(lp.trips / m.cores)
            return m.cores, lp.trips / per if per else 1.0
    return 1, 1.0


def _width(body: Body, loops: list[NestLoop], m: Machine, relaxed: bool) -> int:
    v = loops[-1]
    lanes = m.lanes(body.dtype_bits)
    jammed = [lp for lp in loops if lp.jam > 1]
    copies = max((math.prod(lp.jam for lp in jammed if lp.root in a.roots) for a in body.accesses if a.store), default=1) if jammed else 1
    if v.vector:
        width = lanes if v.vector < 0 else v.vector
        if not v.constant and v.trips < width:
            return 1  # fewer iterations than the vector (a remainder): gcc runs its scalar epilogue alone
        explicit = v.constant and v.range % width == 0 and v.range // width <= MAX_GROUPS
        if explicit or copies < 2:
            return width
        # the backend drops the pragma of a vector loop storing jammed rows it does not write as explicit
        # vectors (irkit.perf.reader._pragma_dropped); gcc alone then decides, as below
    # gcc vectorises an innermost loop whose accesses are unit-stride or invariant; a reduction only under
    # relaxed math; and not when jammed copies store one buffer at ALIAS_PATTERNS rows or more
    if copies >= ALIAS_PATTERNS:
        return 1
    if v.step == 1 and v.trips >= lanes and all(a.unit(v.root) for a in body.accesses):
        if body.chain and not relaxed and not any(a.store and a.varies(v.root) for a in body.accesses):
            return 1
        return -lanes  # negative: gcc's own vectorisation (see AUTO_VECTOR)
    return 1


def _core_seconds(
    body: Body,
    loops: list[NestLoop],
    stage: StageInfo,
    m: Machine,
    points: int,
    relaxed: bool,
    others: float = 0.0,
    packed: dict[str, int] | None = None,
) -> float:
    packed = packed or {}
    w = _width(body, loops, m, relaxed)
    auto = AUTO_VECTOR if w < 0 else 1.0
    w = abs(w)
    v = loops[-1]
    # a jammed copy of a reduction loop updates the same accumulator as the others: no register
    # block, just a longer body (what `unroll` gives)
    jam_at = [i for i, lp in enumerate(loops) if lp.jam > 1 and lp.root not in stage.reductions]
    jams = [loops[i] for i in jam_at]
    if math.prod(lp.jam for lp in jams) > m.registers:
        return math.inf  # more jammed copies than registers: spills and a body gcc will not schedule
    fp = points * body.flops / m.flops(body.dtype_bits, w) if body.flops else 0.0
    ops = body.op_table
    # the divider and the exp polynomial run at their calibrated rate (full hardware vectors) at
    # most: a wider `vectorize` is more instructions of that width, not faster ones
    lanes = m.lanes(body.dtype_bits)
    fp += points * ops.get("div", 0) / (m.div_rate[body.dtype_bits] * (min(w, lanes) / lanes))
    fp += points * (ops.get("exp", 0) + ops.get("exp_libm", 0) * 4) / (m.exp_rate[body.dtype_bits] * (min(w, lanes) / lanes))
    loads = stores = 0.0
    l1 = 0.0  # seconds of L1 traffic a point costs
    held = 0.0  # vector registers the accesses kept across loops hold
    # registers one instance of the innermost loop's values take; they stay in registers across an
    # outer loop only when the backend writes the innermost loop out as explicit vectors (a vectorized
    # loop of constant trip count) or gcc unrolls it completely (a short scalar loop)
    vectors = max(1.0, math.ceil(v.range * body.dtype_bits / m.simd_bits))
    in_registers = v.constant and (
        (v.vector != 0 and v.range % max(w, 1) == 0 and v.range // max(w, 1) <= MAX_GROUPS)
        or (w == 1 and v.range <= SHORT_LOOP)
    )
    stored = body.stored  # an accumulator's load goes with its store

    def tile(a) -> int:
        """unroll_jam makes the register tile (`loop.local`) a stored value stays in, when the value
        does not move in the loops between the jammed loop and the innermost one (what it jams into):
        the tile lives across all of them, so it is loaded and stored once per that many of their
        iterations (the product of their trips; 0 when there is no tile)."""
        return next((math.prod(lp.trips for lp in loops[i + 1 : -1]) for i in jam_at if not any(a.varies(lp.root) for lp in loops[i + 1 : -1])), 0)

    def unit(a) -> bool:
        """Contiguous along the vector loop: in the tensor's layout, or in a packed copy made outside
        the innermost loop (laid out in the order of the loops inside it, so the innermost last)."""
        return a.unit(v.root) or (packed.get(a.tensor, len(loops)) < len(loops) - 1 and v.root in a.roots)

    # the loops outside the innermost one that can keep a value in registers across them, innermost
    # first (a jammed loop of a non-reduction is the register block itself, not a loop around it)
    around = [lp for lp in reversed(loops[:-1]) if not (lp.jam > 1 and lp.root not in stage.reductions)]
    tiles: set[str] = set()  # stored tensors whose register tile is held
    for a in body.loads_first:
        roots = a.roots
        # copies that share the access, and those that do not
        share = math.prod(lp.jam for lp in jams if lp.root not in roots) if jams else 1
        inner = v.root in roots
        if not inner:  # hoisted out of the innermost loop: once per instance of it
            count = 1.0 / (v.range * share)
        else:
            count = (1.0 / w if unit(a) else 1.0) / share
            reuse = 1.0
            for lp in around:  # kept in registers across the innermost loops it is invariant in
                if lp.root in roots:
                    break
                reuse *= lp.trips
                if lp.trips > 1:
                    break
            regs = vectors * (math.prod(lp.jam for lp in jams if lp.root in roots) if jams else 1)
            lifetime = tile(a) if a.tensor in stored else 0
            if lifetime:
                reuse = lifetime
            # an accumulator's load and store are one tile: its registers count once
            already = a.tensor in tiles
            if reuse > 1 and in_registers and (a.tensor not in stored or lifetime) and (already or held + regs <= m.registers - 2):
                if not already:
                    held += regs
                if lifetime:
                    tiles.add(a.tensor)
                count /= reuse
        wide = inner and w > 1 and unit(a)
        nbytes = a.elem * (w if wide else 1)
        l1 += count * nbytes / m.l1(nbytes * 8)
        if a.store:
            stores += count
        else:
            loads += count
    fp_instr = body.op_total / w
    mem = points * l1
    per_point = loads + stores + fp_instr + LOOP_CYCLES / (w * math.prod(lp.jam for lp in jams) * max(1, v.unroll))
    front = points * per_point / ISSUE_WIDTH / m.frequency
    chain = 0.0
    if body.chain:
        acc = next((a for a in body.accesses if a.store), None)
        chains = 1.0
        in_flight = 1.0
        if acc is not None:
            if acc.varies(v.root):
                chains = max(w, v.range)  # every element of the innermost loop is its own chain
            else:
                if w > 1:
                    chains = w  # a vectorised reduction: one chain per lane
                in_flight = _in_flight(acc, loops, stage, m, per_point, others / w)
            chains *= math.prod(lp.jam for lp in jams if acc.varies(lp.root)) or 1
        chain = points * chain_cycles(body, m) / (chains * in_flight * m.frequency)
    return max(float(contended(max(fp, front), chain, chain_depth(body, m))), mem) * auto


def _in_flight(acc: Access, loops: list[NestLoop], stage: StageInfo, m: Machine, per_point: float, others: float) -> float:
    """Chains the out-of-order window overlaps (the full model's `in_flight`): the chain runs over
    the innermost loop and the reduction loops around it that leave the accumulator where it is; successive
    entries of it (iterations of the next loop out, `entry`) are independent, and the window of
    `m.window` instructions holds 1 + window / (instructions from one entry to the next) of them.
    When that loop is the nest's outermost, the stage's other bodies run inside it too
    (`others`: their instructions over the stage, per point of this body's innermost lanes)."""
    if m.window <= 0.0:
        return 1.0
    entry = -1
    for i in range(len(loops) - 2, -1, -1):
        root = loops[i].root
        if acc.varies(root) or root not in stage.reductions:  # a new chain each iteration (a localized
            entry = i  # accumulator has no index: softmax's row maximum is started again each row)
            break
    points = 1.0
    for lp in loops[entry + 1 :]:
        points *= lp.trips
    if entry >= 0 and loops[entry].jam > 1 and loops[entry].root not in stage.reductions:
        points *= loops[entry].jam  # a register block's copies run in one entry
    between = others / loops[0].trips if entry == 0 else 0.0
    return 1.0 + m.window / max(points * per_point + between, 1.0)


class MemoryTables(NamedTuple):
    """What a body's memory terms are computed from (`_memory_tables`)."""

    accesses: list[Access]  # the distinct ones
    moves: list[list[float]]  # per access, `_moves`
    shapes: dict[float, list[list[tuple[float, float]]]]  # line -> per access, `_footprints`
    packed_at: dict[str, int]  # packed tensor -> the depth of its pack loop


def _memory_tables(body: Body, loops: list[NestLoop], m: Machine, packs: dict) -> MemoryTables:
    """What the memory terms of a body's nest are computed from: its distinct accesses, the trips
    of the loops that move each at every depth, and each access's footprint at every depth (per
    line size of the levels), computed once and shared by the levels."""
    accesses = distinct_accesses(body.accesses)
    n = len(loops)
    packed_at = {t: i for t, loop in packs.items() for i, lp in enumerate(loops) if lp.name == loop}
    shapes: dict[float, list[list[tuple[float, float]]]] = {}
    for _, line, *_ in m.levels:
        if line not in shapes:
            shapes[line] = [_footprints(a, loops, line, packed_at.get(a.tensor, n)) for a in accesses]
    return MemoryTables(accesses, [_moves(a, loops) for a in accesses], shapes, packed_at)


def _group_lines(prepared: list, m: Machine) -> list[float]:
    """Per level: the lines one iteration of the outermost loop touches in all the fused bodies
    (each access pattern once, at its first body's footprint inside that loop)."""
    out = []
    for _, line, *_ in m.levels:
        seen: set[tuple] = set()
        lines = 0.0
        for _, _, _, tables in prepared:
            for a, shape in zip(tables.accesses, tables.shapes[line]):
                key = (a.tensor, a.coeffs)
                if key not in seen:
                    seen.add(key)
                    rows, per_row = shape[1]
                    lines += rows * per_row
        out.append(lines)
    return out


def _level_times(
    tables: MemoryTables, loops: list[NestLoop], m: Machine, cores: int,
    seen: dict | None = None, group: list[float] | None = None,
) -> list[tuple[float, float]]:
    """Per cache level: (seconds of the traffic the level below serves, the level's overlap).  With
    `seen` and `group` (`fused_seconds`), an access an earlier body made costs nothing at a level
    that holds `group` lines (a store after a load of it: its write-back)."""
    accesses, moves, shapes, packed_at = tables
    n = len(loops)
    times = []
    last = len(m.levels) - 1
    for level, (size, line, next_bw, ways, overlap) in enumerate(m.levels):
        factors = None
        if seen and group is not None and group[level] * line <= size:
            factors = [_reuse_factor(a, seen) for a in accesses]
        traffic = _traffic(accesses, shapes[line], moves, n, size, line, ways, packed_at, loops, factors)
        bw = next_bw if level < last else dram_share(m, cores)
        times.append((traffic / cores / bw, overlap))
    return times


def _reuse_factor(a: Access, seen: dict) -> float:
    """What an access costs a level holding what earlier bodies touched: a fill and, for a store, a
    write-back (2); nothing for what they touched; a write-back for a store of what they only read."""
    stored = seen.get((a.tensor, a.coeffs))
    if stored is None:
        return 2.0 if a.store else 1.0
    return 1.0 if a.store and not stored else 0.0


def _compose(times: list[tuple[float, float]]) -> float:
    """The levels' times as one: the largest, plus the others by what of them does not overlap."""
    if not times:
        return 0.0
    top = max(range(len(times)), key=lambda i: times[i][0])
    return times[top][0] + sum(t * (1.0 - o) for i, (t, o) in enumerate(times) if i != top) * 0.5


def chain_cycles(body: Body, m: Machine) -> float:
    """Cycles of one point's accumulation chain: its ops by latency class (an FMA's latency is not
    an add's: 4 and 3 cycles on Zen 3), or `fp_latency` each where the body does not say."""
    if not body.chain_kinds:
        return body.chain * m.fp_latency
    return sum(n * m.latency.get(cls, m.fp_latency) for cls, n in body.chain_kinds)


def chain_depth(body: Body, m: Machine) -> float:
    """Ops in flight that fill the FP pipes for the body's chain: its mean latency x the pipes
    (`irkit.perf.runtime.chain_depth`, which `contended` takes); 0 without a chain."""
    if not body.chain:
        return 0.0
    return chain_cycles(body, m) / body.chain * m.pipes


def dram_share(m: Machine, cores: int) -> float:
    """Bytes/s of DRAM the last cache level gets: a core's own, or the socket's shared by `cores`."""
    return m.dram_all / cores if cores > 1 else m.dram_core


def _moves(a: Access, loops: list[NestLoop]) -> list[float]:
    """Per depth d: the product of the trips of loops[:d] from the innermost one `a` varies in outward."""
    out = [1.0] * (len(loops) + 1)
    prefix = 1  # trips of loops[:d + 1], exact in integers
    moved = 1.0
    for d, lp in enumerate(loops):
        prefix *= lp.trips
        if a.varies(lp.root):
            moved = float(prefix)
        out[d + 1] = moved
    return out


def distinct_accesses(accesses: tuple[Access, ...]) -> list[Access]:
    """One access per (tensor, index pattern): reads of neighbours share lines; a store counts twice (fill and write-back)."""
    seen: dict[tuple, Access] = {}
    for a in accesses:
        key = (a.tensor, a.coeffs)
        if key in seen and (seen[key].store or not a.store):
            continue
        seen[key] = a
    return list(seen.values())


def _footprints(a: Access, loops: list[NestLoop], line: float, packed: int) -> list[tuple[float, float]]:
    """Per depth d: (rows, lines per row) of `a` over the loops[d:], each root spanning the range of
    its outermost loop there; a packed copy (d > `packed`) is one row.  Built from the innermost
    depth outward, one loop's span at a time."""
    n = len(loops)
    dims, inner = a.abs_coeffs, a.inner_dim
    if not dims:
        return [(1.0, 1.0)] * (n + 1)
    extent = [1] * len(dims)  # per dim: 1 + sum of |k| * (span - 1) over its roots
    others = [i for i in range(len(dims)) if i != inner]
    span: dict[str, int] = {}
    out: list[tuple[float, float]] = [(1.0, 1.0)] * (n + 1)
    rows, per_row = 1, 1.0
    changed = True
    for d in range(n, -1, -1):
        if d < n:
            lp = loops[d]
            hits = a.dims_of.get(lp.root)
            if hits:
                delta = lp.range - span.get(lp.root, 1)
                span[lp.root] = lp.range
                for i, k in hits:
                    extent[i] += k * delta
                changed = changed or delta != 0
        if changed:
            rows = 1
            for i in others:
                rows *= extent[i]
            per_row = math.ceil(extent[inner] * a.elem / line)
            changed = False
        if packed < d:
            out[d] = (1.0, math.ceil(rows * extent[inner] * a.elem / line))
        else:
            out[d] = (float(rows), per_row)
    return out


def _traffic(
    accesses, table, moves, n: int, size: float, line: float, ways: int, packed_at: dict, loops, factors=None
) -> float:
    """Bytes the level below serves: each access's lines at the outermost depth whose working set
    fits, times the trips of the loops around it that move the access (and by `factors`, one an
    access, when given: `_reuse_factor`; else 2 for a store, its fill and write-back, 1 for a load)."""
    fit = n - 1  # the innermost loop streams: a line at a time of each access, whatever it spans
    sets = max(1, int(size // (line * ways)))
    starts = [row_sets(a, line, sets) for a in accesses]
    for d in range(n - 2, -1, -1):
        total = 0.0
        for shape, start in zip(table, starts):
            rows, per_row = shape[d]
            lines = rows * per_row
            if rows > 1 and start:  # folded onto the sets its rows start in (`row_sets`)
                covered = min(sets, start * per_row)
                if covered < sets and lines > covered * ways:
                    lines *= sets / covered
            total += lines
        if total * line > size:
            break
        fit = d
    out = 0.0
    for i, (a, shape, move) in enumerate(zip(accesses, table, moves)):
        rows, per_row = shape[fit]
        lines = rows * per_row
        out += lines * line * move[fit] * (factors[i] if factors is not None else (2 if a.store else 1))
        at = packed_at.get(a.tensor)
        if at is not None:  # the copy, made at every iteration of its loop: the tile read and written once
            tile_rows, tile_per_row = shape[at + 1]
            copies = math.prod(lp.trips for lp in loops[: at + 1])
            out += 2.0 * tile_rows * tile_per_row * line * copies
    return out


def row_sets(a: Access, line: float, sets: int) -> int:
    """The sets of a cache the rows of `a` start in, 0 without a row stride: rows `stride` bytes
    apart start in sets / gcd(stride in lines, sets) of them.  When an access's lines outnumber
    what the sets its rows cover hold, a power-of-two row stride has folded its working set onto
    them, and it needs the cache as if it had all the sets to itself (`_traffic`)."""
    stride = a.row_stride()
    if stride <= 0:
        return 0
    return max(1, sets // math.gcd(max(1, int(stride // line)), sets))
