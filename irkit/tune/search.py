"""Beam search over one stage's schedules, scored by the screening model at every size at once.

The search builds schedules the way Adams et al. (2019) build Halide's:
one decision at a time, every partial schedule a complete, legal one that
the model can price, the best `width` kept after each step.  A step offers
everything the directive records offer on each kept nest
(`irkit.tune.candidate.next_entries`); two different directive orders that
make the same nest are one candidate.  The objective over several sizes is
the sum of log seconds: the geometric mean of the time at each size, so a
schedule is not chosen for its largest size alone.

Deterministic given the seed: candidates are visited in the records'
order, ties in score are broken by the schedule's text, and when a step
offers more than `max_expansions` in all, each beam state's offers are
sampled, seeded by the seed, the step and the state's rank.
"""

from __future__ import annotations

import bisect
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from irkit.passes.schedule._blocking import MAY_FOLLOW
from irkit.tune import batch
from irkit.tune.candidate import Candidate, extend, next_entries, start
from irkit.tune.estimate import Machine
from irkit.tune.stages import KernelInfo


@dataclass
class SearchStats:
    evaluated: int = 0
    refused: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.evaluated / self.seconds if self.seconds > 0 else 0.0


@dataclass(order=True)
class Scored:
    score: float
    text: str
    candidate: Candidate = field(compare=False)
    seconds: tuple[float, ...] = field(compare=False, default=())


# Each directive costs this much in the score (log seconds): between schedules the screening model
# cannot tell apart, the shorter one wins -- a directive the model sees no effect of is as likely
# to cost time (code size, a remainder loop) as to save it.
DIRECTIVE_COST = 0.003


def score_batch(cands: list[Candidate], kernels: list[KernelInfo], m: Machine) -> list[tuple[float, tuple[float, ...]]]:
    """Per candidate (all of one stage): the sum of log seconds over the sizes (plus DIRECTIVE_COST a
    directive), and the seconds at each, priced by the batched screening model (`irkit.tune.batch`)."""
    if not cands:
        return []
    stage = cands[0].stage
    nests = [c.nest for c in cands]
    per_size = [batch.stage_seconds(k.stages[stage], nests, m, k.relaxed).tolist() for k in kernels]
    out = []
    log = math.log
    for c, secs in zip(cands, zip(*per_size)):
        out.append((sum(log(s if s > 1e-12 else 1e-12) for s in secs) + DIRECTIVE_COST * len(c.entries), secs))
    return out


def beam_search(
    stage: str,
    kernels: list[KernelInfo],
    reads: tuple[str, ...],
    m: Machine,
    *,
    width: int = 24,
    depth: int = 10,
    keep: int = 16,
    seed: int = 0,
    max_expansions: int = 16000,
    deadline: float | None = None,
    stats: SearchStats | None = None,
    progress: Callable[[SearchStats, Scored], None] | None = None,
    workers: int = 1,
) -> list[Scored]:
    """The `keep` best schedules found for `stage`, best first (the empty schedule among them if it is).

    `workers` > 1 scores each step's expansions in that many forked processes; the result is the
    same as with one (each beam state's sample is seeded by the step and its rank, and the merged
    expansions are ordered by score and text before anything is chosen)."""
    stats = stats if stats is not None else SearchStats()
    info = kernels[0].stages[stage]
    lanes = m.lanes(info.bodies[0].dtype_bits if info.bodies else 32)
    t0 = time.perf_counter()
    before = stats.seconds  # the stages searched before this one, whose candidates `stats` counts too
    root = start(info, reads)
    seen = {_digest(root.key())}
    first = [root]
    for seed_c in [
        *register_blocks(root, info, lanes, m.registers, m.cores),
        *cache_blocks(root, info, lanes, m.registers, m.cores, [size for size, *_ in m.levels]),
        *cache_tiles(root, info, m.cores),
    ]:
        digest = _digest(seed_c.key())
        if digest not in seen:
            seen.add(digest)
            first.append(seed_c)
    stats.evaluated += len(first) - 1  # the seeds
    beam = sorted(Scored(sc, c.text, c, secs) for c, (sc, secs) in zip(first, score_batch(first, kernels, m)))
    best: list[Scored] = list(beam)
    _CONTEXT.update(kernels=kernels, machine=m, info=info, lanes=lanes)
    _SCORED.clear()
    pool = _pool(workers)
    try:
        for step in range(depth):
            quota = max(1, max_expansions // max(1, len(beam)))
            items = [(i, b.candidate) for i, b in enumerate(beam)]
            jobs = [(seed, step, quota, chunk) for chunk in _chunks(items, workers)]
            results = list(pool.map(_expand, jobs)) if pool is not None else [_expand(j) for j in jobs]
            rows = sorted(row for found, _ in results for row in found)
            stats.refused += sum(refused for _, refused in results)
            grown: list[Scored] = []
            for sc, text, bi, _, key, secs, entry, shape in rows:
                if key in seen:
                    continue
                seen.add(key)
                stats.evaluated += 1
                grown.append(Scored(sc, text, _Pending(bi, entry, shape), secs))  # type: ignore[arg-type]
            if not grown:
                break
            chosen = _diverse_pending(grown, width, beam, info)
            best = sorted(best + chosen[: keep * 2])[: keep * 4]
            beam = chosen
            stats.seconds = before + time.perf_counter() - t0
            if progress is not None:
                progress(stats, best[0])
            if deadline is not None and time.perf_counter() > deadline:
                break
    finally:
        if pool is not None:
            pool.shutdown()
        _CONTEXT.clear()
        _SCORED.clear()
    stats.seconds = before + time.perf_counter() - t0
    return _diverse(sorted(best), keep)


_CONTEXT: dict = {}  # what `_expand` needs, set before the workers fork
# nest key -> (score, seconds) of the nests this process scored in this search: beam states of one
# step, and of the steps before, reach the same nest by different directive orders
_SCORED: dict[tuple, tuple[float, tuple[float, ...]]] = {}


@dataclass(frozen=True)
class _Pending:
    """An expansion scored but not rebuilt: beam state `beam` extended by `entry`; `shape` is
    `_shape` of the nest it makes."""

    beam: int
    entry: dict
    shape: int


def _chunks(items: list, workers: int) -> list[list]:
    """The beam states in one chunk a worker, interleaved so each holds states of every rank (the
    offers of a state vary in number and cost).  One chunk, not several, a worker: each chunk's
    offers are priced in one call of the batched model, whose fixed cost (8 ms for softmax's three
    bodies on the Zen 3 host) four chunks a worker paid four times, as much as the parallel work saved."""
    if workers <= 1:
        return [items]
    n = min(len(items), workers)
    return [items[w::n] for w in range(n)]


def _pool(workers: int):
    if workers <= 1:
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))


def _digest(key: tuple) -> int:
    """A nest's key as one integer, the same in every worker (they are forked from this process, so
    they share its hash seed): what the workers send back to tell nests apart (the keys themselves
    made most of the bytes, and unpickling them was serial work).  Two nests of one step sharing a
    64-bit hash is a chance of about one in 10^10; it never decides an order (rows sort by score,
    text, beam state and offer first)."""
    return hash(key)


def _offers(c: Candidate, info, lanes: int, registers: int, seed: int, step: int, rank: int, quota: int) -> list:
    entries = next_entries(c, info, lanes, registers)
    if len(entries) > quota:
        entries = random.Random(f"{seed}:{step}:{rank}").sample(entries, quota)
    return entries


def _expand(job) -> tuple[list[tuple], int]:
    """Score the offers of some beam states: rows (score, text, state, offer's index, the nest's
    `_digest`, seconds, offer), refusals."""
    seed, step, quota, items = job
    kernels, m, info, lanes = (_CONTEXT[k] for k in ("kernels", "machine", "info", "lanes"))
    found, refused = [], 0
    bases = {}
    for rank, cand in items:
        local: set = set()
        bases[rank] = sorted(_sig_item(e) for e in cand.entries)
        for i, e in enumerate(_offers(cand, info, lanes, m.registers, seed, step, rank, quota)):
            c = extend(cand, e, info)
            if c is None:
                refused += 1
                continue
            key = c.key()
            if key in local:
                continue
            local.add(key)
            found.append((c, key, rank, i, e))
    fresh = {}
    for c, key, *_ in found:
        if key not in _SCORED:
            fresh.setdefault(key, c)
    _SCORED.update(zip(fresh, score_batch(list(fresh.values()), kernels, m)))
    rows = []
    for c, key, rank, i, e in found:
        sc, secs = _SCORED[key]
        items = list(bases[rank])
        bisect.insort(items, _sig_item(e))  # `signature(c.entries)`, from the state's without sorting again
        rows.append((sc, c.text, rank, i, _digest(key), secs, e, _shape_of(c.nest, tuple(items))))
    return rows, refused


def _diverse_pending(grown: list[Scored], n: int, beam: list[Scored], info) -> list[Scored]:
    """`_diverse` over the best scored expansions, by the shapes the workers sent; only those chosen
    are rebuilt from their beam states and offers."""
    # at most half the beam for nests only packs and placements may still follow (after unroll_jam or
    # pack): register-blocked seeds score well early and would otherwise end the search
    closed, open_ = [], []
    for g in grown[: n * 4]:
        p: _Pending = g.candidate  # type: ignore[assignment]
        entries = (*beam[p.beam].candidate.entries, p.entry)
        (closed if any(e["kind"] in MAY_FOLLOW for e in entries) else open_).append(g)
    pending_shape = lambda g: g.candidate.shape  # noqa: E731
    kept = _diverse(closed, n // 2, pending_shape)
    chosen = sorted(kept + _diverse(open_, n - len(kept), pending_shape))
    out: list[Scored] = []
    for g in chosen:
        p = g.candidate  # type: ignore[assignment]
        c = extend(beam[p.beam].candidate, p.entry, info)
        if c is not None:
            out.append(Scored(g.score, g.text, c, g.seconds))
    return out


def register_blocks(root: Candidate, info, lanes: int, registers: int, cores: int) -> list[Candidate]:
    """Seeds of the beam: register-blocked nests, the one shape a step-by-step search does not reach
    (each of its steps alone makes the nest slower; together they are the micro-kernel of BLIS and
    of Ansor's multi-level tiling rule).  For the spatial loop the output is contiguous along (the
    vector loop, split by a vector width) and each other spatial loop (jammed by a few rows): the
    other spatial loops outermost, the outer vector loop, the jammed loop, the reductions, the
    vector loop innermost; the outermost spatial loop to the cores.  Built from the records'
    entries and replayed like any other candidate, so a seed the checker refuses is not kept."""
    stores = [a for b in info.bodies for a in b.accesses if a.store]
    if not stores:
        return []
    out_access = stores[0]
    spatial = [loop for loop in info.loops if loop not in info.reductions]
    inner_dim = out_access.order[-1] if out_access.order else len(out_access.coeffs) - 1
    vector_roots = [r for r, _ in out_access.coeffs[inner_dim]] if out_access.coeffs else []
    seeds: list[Candidate] = []
    for vroot in (r for r in vector_roots if r in spatial):
        # two vectors a row (the wide micro-kernels of BLIS and OpenBLAS: 2 x 16 lanes x 6 rows on
        # AVX-512 loads one B row of two vectors per 12 FMAs), one, or half of one
        for width in sorted({2 * lanes, lanes, max(2, lanes // 2)}, reverse=True):
            if info.extents.get(vroot, 1) < 2 * width:
                continue
            vectors = max(1, width // lanes)
            for jam in (r for r in spatial if r != vroot):
                for factor in (2, 4, 6, 8):
                    if factor * vectors > registers - 4 or factor > info.extents.get(jam, 1):
                        continue
                    for panel in (None, *PANELS):
                        c = _block(root, info, vroot, width, jam, factor, spatial, cores, panel)
                        if c is not None:
                            seeds.append(c)
    return seeds + lane_blocks(root, info, lanes, registers, cores, set(vector_roots))


def lane_blocks(root: Candidate, info, lanes: int, registers: int, cores: int, done: set[str]) -> list[Candidate]:
    """Seeds of the beam: register blocks whose lanes run along a spatial loop the output is
    *strided* in -- a convolution's output channels, with the pixels jammed: each update is one
    broadcast pixel times one vector of weights, where lanes along the pixels need an unaligned
    load of the image for every filter tap.  Each input that moves with the lane loop but not
    contiguously is packed at the outer lane loop, which goes outermost, so that the pack runs once
    a block of lanes (the accumulators are loaded and stored one lane at a time, outside the
    reduction).  Measured on conv2d 64 -> 64 3x3 56^2 (Zen 3, 2 cores): 8 output channels in
    lanes x 8 pixels jammed ran 1.74 ms against 2.0 for 8 pixels in lanes x 8 channels jammed."""
    spatial = [loop for loop in info.loops if loop not in info.reductions]
    reductions = [loop for loop in info.loops if loop in info.reductions]
    stored = {a.tensor for b in info.bodies for a in b.accesses if a.store}
    loads = [a for b in info.bodies for a in b.accesses if not a.store and a.tensor not in stored]
    seeds: list[Candidate] = []
    for vroot in spatial:
        if vroot in done or info.extents.get(vroot, 1) < 2 * lanes or not reductions:
            continue
        moved = [a for a in loads if vroot in a.roots]
        if not moved or any(a.temp for a in moved):
            continue
        packs = sorted({a.tensor for a in moved if not a.unit(vroot)})
        vo, vv = f"{vroot}o", f"{vroot}v"
        for jam in (r for r in spatial if r != vroot):
            for factor in (4, 6, 8, 12):
                if factor + 2 > registers or factor > info.extents.get(jam, 1):
                    continue
                others = [loop for loop in spatial if loop not in (vroot, jam)]
                order = [vo, *others, jam, *reductions, vv]
                outer = next((loop for loop in order[:-1] if _trips(loop, info, lanes, vroot) >= 2 * cores), order[0])
                entries: list[dict] = [
                    {"kind": "split", "loop": vroot, "factor": lanes, "outer": vo, "inner": vv},
                    {"kind": "reorder", "loops": order},
                    {"kind": "parallel", "loop": outer},
                    {"kind": "vectorize", "loop": vv, "width": lanes},
                    {"kind": "unroll_jam", "loop": jam, "factor": factor},
                    *({"kind": "pack", "tensor": t, "loop": vo} for t in packs),
                ]
                c = _replay_all(root, entries, info)
                if c is not None:
                    seeds.append(c)
    return seeds


def _trips(loop: str, info, lanes: int, vroot: str) -> int:
    """Iterations of a loop of `lane_blocks`' order (the outer lane loop runs extent / lanes)."""
    if loop == f"{vroot}o":
        return info.extents.get(vroot, 1) // lanes
    return info.extents.get(loop, 1)


def cache_blocks(root: Candidate, info, lanes: int, registers: int, cores: int, caches: list[float]) -> list[Candidate]:
    """Seeds of the beam: the register block inside three cache blocks, the five loops BLIS puts
    around its micro-kernel (Goto and van de Geijn; Low et al., "Analytical modeling is enough for
    high-performance BLIS", size them from the caches).  A panel of the longest reduction loop as
    long as keeps the micro-kernel's slice of the operand that does not move with the jammed loop
    in half the L1; a block of the jammed loop as tall as keeps the other operand's panel in half
    the L2; a block of the vector loop from the last level's share of a core, which goes to the
    cores.  Each operand is packed at the block it is reused across (the first at the panel loop,
    the second at the jammed block), or not.  A step-by-step search does not reach this nest: each
    of its blocks alone adds loop overhead and packing the screening model sees no gain in, and the
    register block's seeds (`register_blocks`) block one level only.  Built from the records'
    entries and replayed, so a seed the checker or lowering refuses is not kept."""
    stores = [a for b in info.bodies for a in b.accesses if a.store]
    reductions = [loop for loop in info.loops if loop in info.reductions]
    if not stores or not reductions or len(caches) < 2:
        return []
    out_access = stores[0]
    spatial = [loop for loop in info.loops if loop not in info.reductions]
    inner_dim = out_access.order[-1] if out_access.order else len(out_access.coeffs) - 1
    vector_roots = [r for r, _ in out_access.coeffs[inner_dim]] if out_access.coeffs else []
    longest = max(reductions, key=lambda r: info.extents.get(r, 1))
    loads = [a for b in info.bodies for a in b.accesses if not a.store and a.varies(longest)]
    elem = out_access.elem
    last = caches[-1] / max(1, cores)
    seeds: list[Candidate] = []
    for vroot in (r for r in vector_roots if r in spatial):
        for jam in (r for r in spatial if r != vroot):
            b_side = next((a.tensor for a in loads if not a.varies(jam) and a.varies(vroot)), None)
            a_side = next((a.tensor for a in loads if a.varies(jam) and not a.varies(vroot)), None)
            for width in sorted({2 * lanes, lanes}, reverse=True):
                vectors = max(1, width // lanes)
                kc = _power_below(caches[0] / 2 / (width * elem), 64, 512)
                if kc is None or info.extents.get(longest, 1) <= kc:
                    continue
                fitting = [f for f in (4, 6, 8, 12, 14) if f * vectors <= registers - 4 and 2 * f <= info.extents.get(jam, 1)]
                extent = info.extents.get(vroot, 1)
                nc = _power_below(last / 2 / (kc * elem), 2 * width, extent // max(1, cores))
                if nc is None or nc >= extent:
                    continue
                for factor in sorted(set(fitting[-2:])):
                    # the jammed block's panel in half the L2, or in a quarter (beside the other panel)
                    for share in (2, 4):
                        mc = int(caches[1] / share / (kc * elem)) // factor * factor
                        if mc < 2 * factor or mc >= info.extents.get(jam, 1):
                            continue
                        for packs in _pack_choices(b_side, a_side):
                            c = _blocked(root, info, vroot, jam, longest, width, factor, kc, mc, nc, spatial, reductions, packs)
                            if c is not None:
                                seeds.append(c)
    return seeds


def _power_below(limit: float, low: int, high: int) -> int | None:
    """The largest power of two at most `limit`, clamped to [low, high]; None when high < low."""
    if high < low:
        return None
    got = low
    while got * 2 <= min(limit, high):
        got *= 2
    return got


def _pack_choices(panel: str | None, block: str | None) -> list[list[tuple[str, str]]]:
    """(tensor, which block) packs to seed: both operands, the panel's alone, none (each once)."""
    alone = [(panel, "panel")] if panel else []
    both = alone + ([(block, "block")] if block else [])
    return [choice for i, choice in enumerate((both, alone, [])) if choice not in (both, alone, [])[:i]]


def _blocked(
    root: Candidate, info, vroot: str, jam: str, longest: str, width: int, factor: int, kc: int, mc: int, nc: int,
    spatial: list[str], reductions: list[str], packs: list[tuple[str, str]],
) -> Candidate | None:
    jo, ji, io, ii = f"{vroot}o", f"{vroot}i", f"{jam}o", f"{jam}i"
    jr, jv, ko, ki = f"{vroot}r", f"{vroot}v", f"{longest}o", f"{longest}i"
    others = [loop for loop in spatial if loop not in (vroot, jam)]
    rest = [ki if r == longest else r for r in reductions]
    entries: list[dict] = [
        {"kind": "tile", "loops": [jam, vroot], "factors": [mc, nc], "outer": [io, jo], "inner": [ii, ji]},
        {"kind": "split", "loop": longest, "factor": kc, "outer": ko, "inner": ki},
        {"kind": "split", "loop": ji, "factor": width, "outer": jr, "inner": jv},
        {"kind": "reorder", "loops": [*others, jo, ko, io, jr, ii, *rest, jv]},
        {"kind": "parallel", "loop": jo},
        {"kind": "vectorize", "loop": jv, "width": width},
        {"kind": "unroll_jam", "loop": ii, "factor": factor},
    ]
    entries += [{"kind": "pack", "tensor": t, "loop": ko if at == "panel" else io} for t, at in packs]
    return _replay_all(root, entries, info)


TILES = ((8, 256), (32, 256), (32, 512), (64, 512))  # rows x columns of the cache tiles seeded
# Rows of the row strips seeded: whole rows, so a producer computed at the strip (`compute_at
# out.yo`) writes and reads its rows in one sweep each (blur 4096^2 on the Zen 5 guest: 32-row
# strips 3.3-3.8 ms against 3.5-4.8 for 32 x 512 tiles, the full model 2.2 against 3.4 ms).
STRIPS = (8, 32)


def cache_tiles(root: Candidate, info, cores: int) -> list[Candidate]:
    """Seeds of the beam: the two innermost spatial loops tiled (the outer tile loop to the cores),
    and the outer of them split into row strips, which the screening model, pricing each stage
    alone, sees no gain in; they are the loops a producer stage can be computed at (`compute_at`),
    which the full model prices."""
    spatial = [loop for loop in info.loops if loop not in info.reductions]
    if len(spatial) < 2:
        return []
    a, b = spatial[-2], spatial[-1]
    seeds = []
    for fa, fb in TILES:
        if fa >= info.extents.get(a, 1) or fb >= info.extents.get(b, 1):
            continue
        entries = [
            {"kind": "tile", "loops": [a, b], "factors": [fa, fb], "outer": [f"{a}o", f"{b}o"], "inner": [f"{a}i", f"{b}i"]},
            {"kind": "parallel", "loop": f"{a}o"},
        ]
        c = _replay_all(root, entries, info)
        if c is not None:
            seeds.append(c)
    for fa in STRIPS:
        if fa >= info.extents.get(a, 1):
            continue
        entries = [
            {"kind": "split", "loop": a, "factor": fa, "outer": f"{a}o", "inner": f"{a}i"},
            {"kind": "parallel", "loop": f"{a}o"},
        ]
        c = _replay_all(root, entries, info)
        if c is not None:
            seeds.append(c)
    return seeds


PANELS = (128, 256, 512)  # splits of the longest reduction: a panel of it outside the jammed loop, for the caches


def _block(
    root: Candidate, info, vroot: str, width: int, jam: str, factor: int, spatial: list[str], cores: int, panel: int | None
) -> Candidate | None:
    vo, vv = f"{vroot}o", f"{vroot}v"
    others = [loop for loop in spatial if loop not in (vroot, jam)]
    reductions = [loop for loop in info.loops if loop in info.reductions]
    entries: list[dict] = [{"kind": "split", "loop": vroot, "factor": width, "outer": vo, "inner": vv}]
    panels: list[str] = []
    if panel is not None:
        if not reductions:
            return None
        longest = max(reductions, key=lambda r: info.extents.get(r, 1))
        if info.extents.get(longest, 1) <= panel:
            return None
        ro, ri = f"{longest}o", f"{longest}i"
        entries.append({"kind": "split", "loop": longest, "factor": panel, "outer": ro, "inner": ri})
        panels = [ro]
        reductions = [ri if r == longest else r for r in reductions]
    order = [*others, vo, *panels, jam, *reductions, vv]
    outer = next((loop for loop in order if loop != vv and info.extents.get(loop.removesuffix("o"), 1) >= 2 * cores), order[0])
    entries += [
        {"kind": "reorder", "loops": order},
        {"kind": "parallel", "loop": outer},
        {"kind": "vectorize", "loop": vv, "width": width},
        {"kind": "unroll_jam", "loop": jam, "factor": factor},
    ]
    return _replay_all(root, entries, info)


def _replay_all(root: Candidate, entries: list[dict], info) -> Candidate | None:
    """`root` extended by every entry in turn; None as soon as one is refused."""
    c: Candidate | None = root
    for e in entries:
        c = extend(c, e, info)
        if c is None:
            return None
    return c


def signature(entries) -> tuple:
    """A schedule's shape without its factors: which directive kinds act on which loops and tensors."""
    return tuple(sorted(_sig_item(e) for e in entries))


def _sig_item(e: dict) -> tuple[str, str, str]:
    return e["kind"], str(e.get("loop", e.get("loops"))), str(e.get("tensor"))


def _shape(c: Candidate) -> int:
    return _shape_of(c.nest, signature(c.entries))


def _shape_of(nest, sig: tuple) -> int:
    """A nest's shape (loop order and directive kinds, as `_diverse` compares them) as one integer,
    the same in every worker (forked from this process: one hash seed)."""
    return hash((tuple(loop[0] for loop in nest.loops), sig))


def _diverse(ranked: list[Scored], n: int, shape: Callable[[Scored], object] = lambda s: _shape(s.candidate)) -> list[Scored]:
    """The best `n`, at most an eighth of them sharing their shape (loop order and directive kinds)
    with a better one (a beam of one shape's factor variants would stop exploring shapes)."""
    out: list[Scored] = []
    orders: dict[object, int] = {}
    later: list[Scored] = []
    for s in ranked:
        order = shape(s)
        if orders.get(order, 0) >= max(1, n // 8):
            later.append(s)
            continue
        orders[order] = orders.get(order, 0) + 1
        out.append(s)
        if len(out) == n:
            return out
    return (out + later)[:n]
