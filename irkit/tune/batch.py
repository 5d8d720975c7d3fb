"""The screening model over many candidates at once: numpy arrays, one row a candidate.

`irkit.tune.estimate` prices one candidate at a time and is the reference:
it reads as the model is explained.  The search prices a whole step's
expansions (hundreds to thousands of nests) and would spend most of its time
in that function's Python, so this module computes the same figures for a
batch: each body's loops become integer arrays (candidates x loop depth,
padded on the outside with one-trip loops that move nothing), and every rule
of `estimate.body_seconds` (the width, in-core and memory time, cores,
parallel regions, the remainders' parts) becomes an array expression over
the batch.

The two must agree: `tests/unit/test_tune_batch.py` checks every candidate a
search scores against the reference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from irkit.backends.c_simd import MAX_GROUPS
from irkit.perf.reader import ALIAS_PATTERNS
from irkit.perf.runtime import contended
from irkit.tune.estimate import (
    AUTO_VECTOR,
    ISSUE_WIDTH,
    LOOP_CYCLES,
    SHORT_LOOP,
    Machine,
    body_points,
    chain_cycles,
    chain_depth,
    distinct_accesses,
    dram_share,
    loop_fields,
    row_sets,
    sibling_instructions,
)  # fmt: skip
from irkit.tune.stages import Access, Body, StageInfo

FILLER = (1, 1, 1, 0, 0, 0, 0, 0)  # a loop of one trip, unmarked (after its root)


class Loops:
    """Loops of a batch: (candidates, depth) arrays, innermost loop last.

    Rows shorter than the deepest are padded on the outside with loops of one trip over a root
    no access uses (index `pad`, one past the stage's loops), which change no rule: nothing
    varies in them, they multiply nothing and they are not marked."""

    def __init__(self, a: np.ndarray, pad: int) -> None:
        self.a, self.pad = a, pad
        self.root, self.step, self.trips, self.range = a[:, :, 0], a[:, :, 1], a[:, :, 2], a[:, :, 3]
        self.vector, self.jam, self.unroll = a[:, :, 4], a[:, :, 5], a[:, :, 6]
        self.parallel, self.constant = a[:, :, 7].astype(bool), a[:, :, 8].astype(bool)
        self.depth = a.shape[1]
        self.first = (self.root == pad).sum(axis=1)  # each row's outermost loop of its own (after the padding)

    @classmethod
    def of_nests(cls, nests: Sequence, stage: StageInfo, index: dict[str, int]) -> tuple[Loops, dict[str, np.ndarray]]:
        """The nests' loops, as `estimate.nest_loops` gives them, and per packed tensor the depth of
        the loop its copy is made in (-1 in rows that do not pack it)."""
        depth = max((len(nest.loops) for nest in nests), default=0)
        filler = (len(index), *FILLER)
        rows, packs = [], {}
        for j, nest in enumerate(nests):
            row = [filler] * (depth - len(nest.loops))
            row.extend(loop_fields(nest, stage, index))
            rows.append(row)
            if nest.packs:
                names = [loop[0] for loop in nest.loops]
                for tensor, loop in nest.packs.items():
                    if loop in names:
                        packs.setdefault(tensor, np.full(len(nests), -1, dtype=np.int64))[j] = (
                            depth - len(names) + names.index(loop)
                        )
        a = np.array(rows, dtype=np.int64).reshape(len(nests), depth, 9)
        return cls(a, len(index)), packs

    def only(self, roots: np.ndarray, packs: dict[str, np.ndarray]) -> tuple[np.ndarray, Loops, dict[str, np.ndarray]]:
        """The loops over `roots` (a table by root index), as `estimate.stage_seconds` hands a body
        its own: (the rows that have any, their loops, the packs at those loops, by their new depth)."""
        keep = roots[self.root]
        kept = keep.sum(axis=1)
        rows = kept > 0
        keep, kept = keep[rows], kept[rows]
        depth = int(kept.max()) if len(kept) else 0
        order = np.argsort(keep, axis=1, kind="stable")  # the body's loops last, in their order
        a = np.take_along_axis(self.a[rows], order[:, :, None], axis=1)[:, self.depth - depth :]
        outside = np.arange(depth)[None, :] < (depth - kept)[:, None]
        a[outside] = (self.pad, *FILLER)
        new_at = (depth - kept)[:, None] + np.cumsum(keep, axis=1) - 1  # a kept loop's depth among the body's
        moved = {}
        for tensor, at in packs.items():
            at = at[rows]
            safe = np.maximum(at, 0)
            here = (at >= 0) & np.take_along_axis(keep, safe[:, None], axis=1)[:, 0]
            moved[tensor] = np.where(here, np.take_along_axis(new_at, safe[:, None], axis=1)[:, 0], -1)
        return rows, Loops(a, self.pad), moved


def _table(values: np.ndarray, f) -> np.ndarray:
    """f at every element of an integer array, called once per distinct value."""
    distinct, where = np.unique(values, return_inverse=True)
    return np.array([f(int(x)) for x in distinct], dtype=float)[where.reshape(values.shape)]


class _Roots:
    """The roots of a batch by index (the pad last, `Loops`), and tables over them: per access, the
    roots it varies in and moves by single elements along; the stage's reductions."""

    def __init__(self, index: dict[str, int], stage: StageInfo) -> None:
        self.index = index
        self.names = sorted(index, key=index.get)  # type: ignore[arg-type]
        self.reduction = self.table(lambda r: r in stage.reductions)
        self._varies: dict[int, np.ndarray] = {}
        self._unit: dict[int, np.ndarray] = {}

    def table(self, test, pad: bool = False) -> np.ndarray:
        """`test` of each root, by index; `pad` for the padding loops."""
        return np.array([test(r) for r in self.names] + [pad])

    def varies(self, a: Access) -> np.ndarray:
        got = self._varies.get(id(a))
        if got is None:
            got = self._varies[id(a)] = self.table(a.varies)
        return got

    def unit(self, a: Access) -> np.ndarray:
        got = self._unit.get(id(a))
        if got is None:
            got = self._unit[id(a)] = self.table(a.unit, pad=True)
        return got


def _width(body: Body, b: Loops, roots: _Roots, m: Machine, relaxed: bool) -> np.ndarray:
    """`estimate._width` for every row: lanes, negative for gcc's own vectorisation."""
    lanes = m.lanes(body.dtype_bits)
    v_root, v_vec, v_range = b.root[:, -1], b.vector[:, -1], b.range[:, -1]
    jammed = b.jam > 1
    copies = np.ones(len(v_root), dtype=np.int64)
    if jammed.any():
        stores = [a for a in body.accesses if a.store]
        if stores:
            copies = np.max([np.where(jammed & roots.varies(a)[b.root], b.jam, 1).prod(axis=1) for a in stores], axis=0)
    width = np.where(v_vec < 0, lanes, v_vec)
    safe = np.maximum(width, 1)
    explicit = b.constant[:, -1] & (v_range % safe == 0) & (v_range // safe <= MAX_GROUPS)
    directive = (v_vec != 0) & (explicit | (copies < 2))
    auto = (b.step[:, -1] == 1) & (b.trips[:, -1] >= lanes)
    for a in body.accesses:
        auto &= roots.unit(a)[v_root]
    if body.chain and not relaxed:
        stored_moves = np.zeros(len(v_root), dtype=bool)
        for a in body.accesses:
            if a.store:
                stored_moves |= roots.varies(a)[v_root]
        auto &= stored_moves
    gcc = np.where((copies < ALIAS_PATTERNS) & auto, -lanes, 1)
    remainder = (v_vec != 0) & ~b.constant[:, -1] & (b.trips[:, -1] < width)  # gcc's scalar epilogue alone
    return np.where(remainder, 1, np.where(directive, width, gcc))


def _after(varies: np.ndarray) -> np.ndarray:
    """Per row and loop i: whether the access varies in a loop strictly between i and the innermost."""
    out = np.zeros_like(varies)
    if varies.shape[1] > 2:
        middle = varies[:, 1:-1]  # loops 1 .. depth-2
        out[:, :-2] = np.logical_or.accumulate(middle[:, ::-1], axis=1)[:, ::-1]
    return out


def core_seconds(
    body: Body,
    b: Loops,
    roots: _Roots,
    m: Machine,
    points: int,
    relaxed: bool,
    others: np.ndarray,
    packed: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """`estimate._core_seconds` for every row; `others` as `estimate.body_seconds` has it, a row's;
    `packed[tensor]` the depth of its pack loop (-1: none)."""
    bits = body.dtype_bits
    lanes = m.lanes(bits)
    signed = _width(body, b, roots, m, relaxed)
    auto = np.where(signed < 0, AUTO_VECTOR, 1.0)
    w = np.abs(signed)
    v_root, v_vec, v_range = b.root[:, -1], b.vector[:, -1], b.range[:, -1]
    block = (b.jam > 1) & ~roots.reduction[b.root]  # the register block's jammed loops (`jam_at`)
    jam = np.where(block, b.jam, 1)
    copies = jam.prod(axis=1)
    fp = points * body.flops / _table(w, lambda x: m.flops(bits, x)) if body.flops else np.zeros(len(w))
    ops = body.op_table
    if ops.get("div", 0):
        fp = fp + points * ops["div"] / (m.div_rate[bits] * (np.minimum(w, lanes) / lanes))
    exps = ops.get("exp", 0) + ops.get("exp_libm", 0) * 4
    if exps:
        fp = fp + points * exps / (m.exp_rate[bits] * (np.minimum(w, lanes) / lanes))
    vectors = np.maximum(1.0, np.ceil(v_range * bits / m.simd_bits))
    safe = np.maximum(w, 1)
    in_registers = b.constant[:, -1] & (
        ((v_vec != 0) & (v_range % safe == 0) & (v_range // safe <= MAX_GROUPS)) | ((w == 1) & (v_range <= SHORT_LOOP))
    )
    n = len(w)
    loads, stores, l1, held = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    around = ~block[:, :-1]
    cols = np.arange(b.depth)[None, :]
    tiles: dict[str, np.ndarray] = {}  # stored tensor -> rows holding its register tile
    for a in body.loads_first:
        varies = roots.varies(a)[b.root]
        share = np.where(block & ~varies, b.jam, 1).prod(axis=1)
        inner = varies[:, -1]
        unit = roots.unit(a)[v_root]
        at = (packed or {}).get(a.tensor)
        if at is not None:  # a packed copy made outside the innermost loop is contiguous along it
            unit = unit | (inner & (at >= 0) & (at < b.depth - 1))
        count = np.where(unit, 1.0 / w, 1.0) / share
        reuse = np.ones(n)
        open_ = np.ones(n, dtype=bool)
        for col in range(b.depth - 2, -1, -1):
            step = open_ & around[:, col]
            open_ &= ~(step & varies[:, col])
            grow = step & ~varies[:, col]
            reuse = np.where(grow, reuse * b.trips[:, col], reuse)
            open_ &= ~(grow & (b.trips[:, col] > 1))
        regs = vectors * np.where(block & varies, b.jam, 1).prod(axis=1)
        already = tiles.get(a.tensor, np.zeros(n, dtype=bool))
        if a.tensor in body.stored:
            # a register tile (`estimate._core_seconds.tile`), loaded and stored once across every
            # loop between the jammed loop and the innermost one
            tile_at = block & ~_after(varies)
            has_tile = tile_at.any(axis=1)
            between = (cols > np.argmax(tile_at, axis=1)[:, None]) & (cols < b.depth - 1)
            reuse = np.where(has_tile, np.where(between, b.trips, 1).prod(axis=1), reuse)
        take = inner & (reuse > 1) & in_registers & (already | (held + regs <= m.registers - 2))
        if a.tensor in body.stored:
            take &= has_tile
            tiles[a.tensor] = already | take
        held = np.where(take & ~already, held + regs, held)
        count = np.where(inner, np.where(take, count / reuse, count), 1.0 / (v_range * share))
        nbytes = np.where(inner & (w > 1) & unit, a.elem * w, a.elem)
        l1 = l1 + count * nbytes / _table(nbytes * 8, m.l1)
        if a.store:
            stores = stores + count
        else:
            loads = loads + count
    mem = points * l1
    per_point = loads + stores + body.op_total / w + LOOP_CYCLES / (w * copies * np.maximum(1, b.unroll[:, -1]))
    front = points * per_point / ISSUE_WIDTH / m.frequency
    chain = np.zeros(n)
    if body.chain:
        chains = np.ones(n)
        in_flight = np.ones(n)
        acc = next((a for a in body.accesses if a.store), None)
        if acc is not None:
            varies = roots.varies(acc)[b.root]
            chains = np.where(varies[:, -1], np.maximum(w, v_range), np.where(w > 1, w, 1)).astype(float)
            chains = chains * np.where(block & varies, b.jam, 1).prod(axis=1)
            # the loops whose iterations start a new chain (`estimate._in_flight`); not the padding
            starts = (varies | ~roots.reduction[b.root]) & (b.root != b.pad)
            in_flight = np.where(varies[:, -1], 1.0, _in_flight(starts, block, b, m, per_point, others / w))
        chain = points * chain_cycles(body, m) / (chains * in_flight * m.frequency)
    out = np.maximum(contended(np.maximum(fp, front), chain, chain_depth(body, m)), mem) * auto
    return np.where(copies > m.registers, math.inf, out)


def _in_flight(
    starts: np.ndarray, block: np.ndarray, b: Loops, m: Machine, per_point: np.ndarray, others: np.ndarray
) -> np.ndarray:
    """`estimate._in_flight` for every row (`starts`: the loops whose iterations start a new chain)."""
    n = len(per_point)
    if m.window <= 0.0:
        return np.ones(n)
    rows = np.arange(n)
    inner = starts[:, :-1]
    entry = np.where(inner.any(axis=1), b.depth - 2 - np.argmax(inner[:, ::-1], axis=1), -1)
    cols = np.arange(b.depth)[None, :]
    points = np.where(cols > entry[:, None], b.trips, 1).prod(axis=1).astype(float)
    at = np.maximum(entry, 0)
    jammed = (entry >= 0) & block[rows, at]
    points = np.where(jammed, points * b.jam[rows, at], points)
    between = np.where(entry == b.first, others / b.trips[rows, at], 0.0)
    return 1.0 + m.window / np.maximum(points * per_point + between, 1.0)


def cores(b: Loops, m: Machine) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`estimate._cores` and `estimate._regions` for every row: (cores used, speed-up, regions started)."""
    n = len(b.root)
    parallel = b.parallel
    has = parallel.any(axis=1)
    first = np.argmax(parallel, axis=1)
    outside = np.arange(b.depth)[None, :] < first[:, None]
    regions = np.where(has, np.where(outside, b.trips, 1).prod(axis=1).astype(float), 0.0)
    if m.cores <= 1:
        return np.ones(n, dtype=np.int64), np.ones(n), regions
    trips = b.trips[np.arange(n), first]
    per = -(-trips // m.cores)
    used = np.where(has, m.cores, 1)
    speed = np.where(has & (per > 0), trips / np.maximum(per, 1), 1.0)
    return used, speed, regions


def _moves(varies: np.ndarray, b: Loops) -> np.ndarray:
    """`estimate._moves` for every row: (candidates, depth + 1)."""
    n, depth = b.trips.shape
    prefix = np.cumprod(b.trips, axis=1).astype(float)
    last = np.maximum.accumulate(np.where(varies, np.arange(depth), -1), axis=1)
    out = np.ones((n, depth + 1))
    out[:, 1:] = np.where(last >= 0, np.take_along_axis(prefix, np.maximum(last, 0), axis=1), 1.0)
    return out


def _footprints(
    a: Access, b: Loops, index: dict[str, int], line: float, packed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`estimate._footprints` for every row: (rows, lines per row), each (candidates, depth + 1)."""
    n, depth = b.trips.shape
    rows_out, per_row_out = np.ones((n, depth + 1)), np.ones((n, depth + 1))
    dims, inner = a.abs_coeffs, a.inner_dim
    if not dims:
        return rows_out, per_row_out
    extent = [np.ones(n, dtype=np.int64) for _ in dims]
    others = [i for i in range(len(dims)) if i != inner]
    hits = [(index[r], pairs) for r, pairs in a.dims_of.items()]
    span = {at: np.ones(n, dtype=np.int64) for at, _ in hits}
    for d in range(depth, -1, -1):
        if d < depth:
            root, rng = b.root[:, d], b.range[:, d]
            for at, pairs in hits:
                here = root == at
                if not here.any():
                    continue
                delta = np.where(here, rng - span[at], 0)
                span[at] = np.where(here, rng, span[at])
                for i, k in pairs:
                    extent[i] = extent[i] + k * delta
        rows = np.ones(n, dtype=np.int64)
        for i in others:
            rows = rows * extent[i]
        per_row = np.ceil(extent[inner] * a.elem / line)
        whole = packed < d  # a packed copy: one row
        rows_out[:, d] = np.where(whole, 1.0, rows)
        per_row_out[:, d] = np.where(whole, np.ceil(rows * extent[inner] * a.elem / line), per_row)
    return rows_out, per_row_out


class MemoryTables(NamedTuple):
    """What a body's memory terms are computed from (`estimate._memory_tables`), for every row."""

    accesses: list[Access]
    moves: list[np.ndarray]
    pack: list[np.ndarray | None]  # per access: the depth of its pack loop (-1: none), or None
    shapes: dict[float, list[tuple[np.ndarray, np.ndarray]]]  # line -> per access (rows, lines per row)


def memory_tables(body: Body, b: Loops, roots: _Roots, packed: dict[str, np.ndarray], m: Machine) -> MemoryTables:
    accesses = distinct_accesses(body.accesses)
    n, depth = b.trips.shape
    moves = [_moves(roots.varies(a)[b.root], b) for a in accesses]
    pack = [packed.get(a.tensor) for a in accesses]
    shapes: dict[float, list] = {}
    for _, line, *_ in m.levels:
        if line not in shapes:
            shapes[line] = [
                _footprints(a, b, roots.index, line, np.where(p >= 0, p, depth) if p is not None else np.full(n, depth))
                for a, p in zip(accesses, pack)
            ]
    return MemoryTables(accesses, moves, pack, shapes)


def level_times(
    tables: MemoryTables, b: Loops, m: Machine, used: np.ndarray, factors: list[list[np.ndarray] | None] | None = None
) -> list[tuple[np.ndarray, float]]:
    """`estimate._level_times` for every row; `factors[level]`, when given, one array an access
    (`estimate._reuse_factor` in each row)."""
    accesses, moves, pack, shapes = tables
    n, depth = b.trips.shape
    rows_at = np.arange(n)
    times = []
    last = len(m.levels) - 1
    for level, (size, line, next_bw, ways, overlap) in enumerate(m.levels):
        table = shapes[line]
        sets = max(1, int(size // (line * ways)))
        starts = [row_sets(a, line, sets) for a in accesses]
        lines_at = []
        for (rows, per_row), start in zip(table, starts):
            lines = rows * per_row
            if start:  # folded onto the sets its rows start in (`estimate.row_sets`)
                covered = np.minimum(sets, start * per_row)
                folded = (rows > 1) & (covered < sets) & (lines > covered * ways)
                lines = np.where(folded, lines * sets / covered, lines)
            lines_at.append(lines)
        total = np.sum(lines_at, axis=0)
        fits = total[:, : depth - 1] * line <= size  # depths 0 .. depth-2; the innermost always streams
        run = np.logical_and.accumulate(fits[:, ::-1], axis=1).sum(axis=1) if depth > 1 else np.zeros(n, dtype=np.int64)
        fit = depth - 1 - run
        traffic = np.zeros(n)
        here = factors[level] if factors is not None else None
        for i, (a, (rows, per_row), move, p) in enumerate(zip(accesses, table, moves, pack)):
            factor = here[i] if here is not None else (2 if a.store else 1)
            traffic += rows[rows_at, fit] * per_row[rows_at, fit] * line * move[rows_at, fit] * factor
            if p is not None:  # the copy, made at every iteration of its loop
                at = np.maximum(p, 0)
                copies = np.where(np.arange(depth)[None, :] <= at[:, None], b.trips, 1).prod(axis=1)
                tile = rows[rows_at, at + 1] * per_row[rows_at, at + 1]
                traffic += np.where(p >= 0, 2.0 * tile * line * copies, 0.0)
        bw = next_bw if level < last else np.array([dram_share(m, int(c)) for c in used])
        times.append((traffic / used / bw, overlap))
    return times


def compose(times: list[tuple[np.ndarray, float]], n: int) -> np.ndarray:
    """`estimate._compose` for every row."""
    if not times:
        return np.zeros(n)
    rows_at = np.arange(n)
    seconds = np.array([t for t, _ in times])
    top = np.argmax(seconds, axis=0)
    out = seconds[top, rows_at]
    for i, (t, o) in enumerate(times):
        out = out + np.where(top != i, t * (1.0 - o) * 0.5, 0.0)
    return out


def memory_seconds(
    body: Body, b: Loops, roots: _Roots, packed: dict[str, np.ndarray], m: Machine, used: np.ndarray
) -> np.ndarray:
    """`estimate`'s memory time of a body alone, for every row; `packed[tensor]` the depth of its pack loop (-1: none)."""
    return compose(level_times(memory_tables(body, b, roots, packed, m), b, m, used), len(used))


def body_seconds(
    body: Body,
    b: Loops,
    packed: dict[str, np.ndarray],
    roots: _Roots,
    stage: StageInfo,
    m: Machine,
    relaxed: bool,
    others: np.ndarray,
) -> np.ndarray:
    """`estimate.body_seconds` for every row of `b`, the body's own loops."""
    used, speed, regions = cores(b, m)
    core = body_core(body, b, roots, stage, m, relaxed, others, packed)
    mem = memory_seconds(body, b, roots, packed, m, used) / speed
    return np.maximum(core / speed, mem) + regions * m.parallel_overhead * (used > 1)


def body_core(
    body: Body,
    b: Loops,
    roots: _Roots,
    stage: StageInfo,
    m: Machine,
    relaxed: bool,
    others: np.ndarray,
    packed: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """The body's in-core seconds on one core, its parts (`parts`) each at its own bottleneck."""
    points = body_points(body, stage)
    core = np.zeros(len(b.root))
    with np.errstate(invalid="ignore"):  # 0 x inf in a part no row runs
        for share, part in parts(b, roots):
            if not (share > 0.0).any():
                continue
            core = core + np.where(share > 0.0, share * core_seconds(body, part, roots, m, points, relaxed, others, packed), 0.0)
    return core


def parts(b: Loops, roots: _Roots) -> list[tuple[np.ndarray, Loops]]:
    """`estimate.parts` for every row: (share of the points, the nests they run in), in the
    reference's order; a row without a remainder has share 0 in the parts of that remainder."""
    v_root = b.root[:, -1]
    applies = (b.vector[:, -1] != 0) & b.constant[:, -1]
    whole = np.ones(len(v_root))
    left = b.range[:, -1].copy()
    for col in range(b.depth - 1):
        rng, step = b.range[:, col], b.step[:, col]
        cut = applies & (b.root[:, col] == v_root) & (rng % step != 0)
        whole = np.where(cut, whole * ((rng // step) * step / rng), whole)
        left = np.where(cut, np.minimum(left, rng % step), left)
    out = [(np.ones(len(v_root)), b)]
    if (whole < 1.0).any():
        a = b.a.copy()
        a[:, -1, 2] = a[:, -1, 3] = np.where(whole < 1.0, left, a[:, -1, 3])  # trips and range: what is left
        a[:, -1, 8] &= whole == 1.0  # a run-time trip count
        out = [(whole, b), (1.0 - whole, Loops(a, b.pad))]
    jam, trips = b.jam, b.trips
    cut = (jam > 1) & ~roots.reduction[b.root] & (trips % np.maximum(jam, 1) != 0)
    rows = np.arange(len(v_root))
    order = np.cumsum(cut, axis=1)
    # the reference splits at each row's cut loops in loop order: the k-th of each row here
    for k in range(int(order[:, -1].max()) if b.depth else 0):
        here = cut & (order == k + 1)
        has = here.any(axis=1)
        col = np.argmax(here, axis=1)
        t, j = trips[rows, col], np.maximum(jam[rows, col], 1)
        kept = np.where(has, (t - t % j) / t, 1.0)
        alone = []
        for share, part in out:
            a = part.a.copy()
            a[rows[has], col[has], 5] = 0
            alone.append((share * (1.0 - kept), Loops(a, part.pad)))
        out = [(share * kept, part) for share, part in out] + alone
    return out


def stage_seconds(stage: StageInfo, nests: Sequence, m: Machine, relaxed: bool = True) -> np.ndarray:
    """`estimate.stage_seconds` of every nest in `nests`."""
    n = len(nests)
    total = np.zeros(n)
    if not nests:
        return total
    index = {r: i for i, r in enumerate(stage.loops)}
    for nest in nests:
        for _, root, _ in nest.loops:
            index.setdefault(root, len(index))
    loops, packs = Loops.of_nests(nests, stage, index)
    roots = _Roots(index, stage)
    if not loops.depth:
        return total
    outer = loops.root[np.arange(n), loops.first]  # each nest's outermost loop's root
    mine_of = [roots.table(body.roots.__contains__) for body in stage.bodies]
    fused_of = [mine[outer] for mine in mine_of]  # the rows where the body runs inside the outermost loop
    grouped = np.sum(fused_of, axis=0) >= 2
    group = _Group(n, m)
    prepared = []
    for body, mine_roots, fused in zip(stage.bodies, mine_of, fused_of):
        rows, mine, packed = loops.only(mine_roots, packs)
        if not rows.any():
            continue
        others = roots.table(lambda r, body=body: sibling_instructions(stage, body, r))
        others = np.where(fused, others[outer], 0.0)[rows]
        in_group = (fused & grouped)[rows]
        alone = ~in_group
        if alone.any():
            total[rows] += np.where(alone, body_seconds(body, mine, packed, roots, stage, m, relaxed, others), 0.0)
        if in_group.any():
            prepared.append((body, rows, mine, in_group, others, memory_tables(body, mine, roots, packed, m), packed))
    if prepared:
        group.lines(prepared)
        for body, rows, mine, in_group, others, tables, packed in prepared:
            group.add(body, rows, mine, in_group, body_core(body, mine, roots, stage, m, relaxed, others, packed), tables)
        total += np.where(grouped, group.seconds(), 0.0)
    return total


class _Group:
    """`estimate.fused_seconds` for the rows whose bodies run inside one outermost loop."""

    def __init__(self, n: int, m: Machine) -> None:
        self.n, self.m = n, m
        self.core = np.zeros(n)
        self.levels = [np.zeros(n) for _ in m.levels]
        self.shared, self.separate = np.zeros(n), np.zeros(n)
        self.seen: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # key -> (touched, stored), by row
        self.fit: list[np.ndarray] = []

    def lines(self, prepared: list) -> None:
        """`estimate._group_lines`, and whether each level holds them, in every row."""
        for size, line, *_ in self.m.levels:
            touched: dict[tuple, np.ndarray] = {}
            lines = np.zeros(self.n)
            for _, rows, mine, in_group, _, tables, _ in prepared:
                inside = mine.first + 1  # the depth inside the body's outermost loop
                at = np.arange(len(rows))
                for a, (r, per_row) in zip(tables.accesses, tables.shapes[line]):
                    key = (a.tensor, a.coeffs)
                    before = touched.get(key, np.zeros(self.n, dtype=bool))
                    here = np.zeros(self.n, dtype=bool)
                    here[rows] = in_group
                    new = here & ~before
                    add = np.zeros(self.n)
                    add[rows] = r[at, inside] * per_row[at, inside]
                    lines += np.where(new, add, 0.0)
                    touched[key] = before | here
            self.fit.append(lines * line <= size)

    def add(self, body: Body, rows: np.ndarray, mine: Loops, in_group: np.ndarray, core: np.ndarray, tables: MemoryTables) -> None:
        m = self.m
        used, speed, regions = cores(mine, m)
        factors = []
        for level in range(len(m.levels)):
            fits = self.fit[level][rows]
            out = []
            for a in tables.accesses:
                touched, stored = self.seen.get((a.tensor, a.coeffs), (None, None))
                plain = 2.0 if a.store else 1.0
                if touched is None:
                    out.append(np.full(len(rows), plain))
                    continue
                t, st = touched[rows], stored[rows]
                reused = np.where(a.store & ~st, 1.0, 0.0)
                out.append(np.where(t & fits, reused, plain))
            factors.append(out)
        times = level_times(tables, mine, m, used, factors)
        self.core[rows] += np.where(in_group, core / speed, 0.0)
        for level, (t, _) in enumerate(times):
            self.levels[level][rows] += np.where(in_group, t / speed, 0.0)
        overhead = regions * m.parallel_overhead * (used > 1)
        outer_parallel = mine.parallel[np.arange(len(rows)), mine.first]
        self.shared[rows] = np.where(in_group & outer_parallel, np.maximum(self.shared[rows], overhead), self.shared[rows])
        self.separate[rows] += np.where(in_group & ~outer_parallel, overhead, 0.0)
        for a in tables.accesses:
            touched, stored = self.seen.setdefault((a.tensor, a.coeffs), (np.zeros(self.n, dtype=bool), np.zeros(self.n, dtype=bool)))
            touched[rows] |= in_group
            stored[rows] |= in_group & a.store

    def seconds(self) -> np.ndarray:
        mem = compose([(t, lv[4]) for t, lv in zip(self.levels, self.m.levels)], self.n)
        return np.maximum(self.core, mem) + self.shared + self.separate
