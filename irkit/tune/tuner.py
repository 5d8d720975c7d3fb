"""`irkit tune`: search with the screening model, re-rank with the full model, measure the best.

Three tiers, each cheaper per candidate than the next and each seeing fewer:

1. **Search** (`irkit.tune.search.beam_search`): every stage's shape
   directives, thousands of candidates a second on the screening model
   (`irkit.tune.estimate`), at every size at once.
2. **Re-rank**: the best few of each stage, combined across stages and with
   every placement the records offer for each temporary (`compute_at` in
   each loop of its consumer, `compute_root`, none), and the document's own
   schedule, are priced by the full cost model (`irkit.perf.predict`, what
   `irkit predict` says).  A candidate the checker or the lowering refuses
   is dropped here, so nothing later can be illegal.
3. **Measure**: the `top_k` best by the full model are compiled (in
   parallel) and timed on this host with `irkit validate`'s protocol
   (steady state, rounds alternated, the median of each round's batch, the
   fastest of `passes` independent measurements), the first size checked
   against the numpy oracle.  The measured best wins; schedules measured
   within `TIE` of the best are ties, and the one the full model ranks
   first among them is chosen, so two runs choose the same.

The objective over several sizes is the geometric mean of seconds (the sum
of their logs): relative to each size's best, no size dominates.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.directives import PLACE, Space
from irkit.registry import DIRECTIVE_RECORDS
from irkit.tune import log as tlog
from irkit.tune.estimate import Machine
from irkit.tune.search import Scored, SearchStats, beam_search
from irkit.tune.stages import KernelInfo, read_kernels

TIE = 0.02  # measured times within 2% of the best are one measurement apart on this kind of host
WORKERS = 2  # processes scoring (screening model) and pricing (full model) candidates: the cores of this machine kind


@dataclass
class Options:
    sizes: list[dict[str, int]] = field(default_factory=list)  # empty: the document's defaults
    hw: object = None  # irkit.perf.hardware.Hardware; None: the document's own section
    # candidates measured before refinement.  8: on the Zen 3 host (bench.tune, 2026-12-05) 4 met 6
    # of the 9 targets and 6 met all 9 (the full model's first choice was 1.05-1.36x slower than the
    # measured best); a candidate costs a compile and 1-30 s, so 8 fit the benchmark's 10 minutes
    top_k: int = 8
    finalists: int = 4  # at least this many candidates of each stage combined and re-ranked by the full model
    rerank: int = 48  # at most this many combinations priced by the full model
    sweep: int = 16  # factor neighbours of each of the full model's best SWEEP_SHAPES shapes it prices too
    width: int = 128
    depth: int = 10
    seed: int = 0
    budget: float | None = None  # seconds for the whole run
    measure: bool = True
    refine: bool = True  # rounds of measured refinement around the best measured (irkit.tune.refine)
    trials: int | None = None  # candidates measured at most, refinement included (None: top_k + the rounds')
    passes: int = 2
    plan: object = None  # irkit.timing.Plan; None: irkit validate's full plan
    cflags: list[str] | None = None
    executor: object = None  # irkit.distributed executor; None: compile and measure in this process
    log: Path | None = None
    report: Callable[[str], None] = lambda line: None
    progress: Callable[[str], None] = lambda line: None  # a status line that changes (a terminal rewrites it)


QUICK_TOP_K = 4  # candidates a `--quick` run measures: it is a smoke test


def default_top_k(quick: bool) -> int:
    """The candidates measured when `--top-k` is not given (`irkit tune` and `bench.tune` alike)."""
    return QUICK_TOP_K if quick else Options.top_k


@dataclass
class Contender:
    schedules: dict[str, list[str]]
    text: str
    origin: str  # "search", "document", "factors" (the factor sweep), "refined" or INCUMBENT
    predicted: list[float] = field(default_factory=list)  # full model, per size
    measured: list[float | None] = field(default_factory=list)
    compile_seconds: float = 0.0
    error: str | None = None
    # what the schedules were made of, so that refinement can change one decision: each stage's
    # candidate and the placements of the temporaries (None: the document's own, or no directives)
    bases: dict | None = None
    placed: dict[str, list[str]] = field(default_factory=dict)
    batch: int | None = None  # an incumbent's copy: the refinement batch it is re-timed in
    move: str = ""  # a refinement neighbour: what changed (`out: add vectorize`)
    raced: bool = False  # timed in the final race (`_retime`): that timing is its time
    screened: int | None = None  # its place in the screening model's order (None: not from the search)

    @property
    def key(self) -> str:
        return tlog.schedule_key(self.schedules)

    def objective(self, values: list[float | None]) -> float:
        if not values or any(v is None or v <= 0 for v in values):
            return math.inf
        return sum(math.log(v) for v in values)  # type: ignore[arg-type]


@dataclass
class Result:
    chosen: Contender
    text: str
    sizes: list[dict[str, int]]
    contenders: list[Contender]
    evaluated: int
    rate: float
    predicted_count: int
    measured_count: int
    seconds: float
    model_first: Contender | None
    notes: list[str] = field(default_factory=list)
    seconds_a_measurement: float = 0.0  # wall seconds a candidate took to compile and time, the latest batch's

    def to_json(self) -> dict:
        per_size = []
        measured = [c for c in self.contenders if c.measured and all(v is not None for v in c.measured)]
        for i, sizes in enumerate(self.sizes):
            best_alone = min((c.measured[i] for c in measured), default=None)
            mine = self.chosen.measured[i] if self.chosen.measured else None
            per_size.append(
                {
                    "sizes": sizes,
                    "predicted_s": self.chosen.predicted[i] if self.chosen.predicted else None,
                    "measured_s": mine,
                    "loss_vs_best_alone": None if (mine is None or not best_alone) else mine / best_alone - 1.0,
                }
            )
        first = self.model_first
        return {
            "schedules": self.chosen.schedules,
            "origin": self.chosen.origin,
            "per_size": per_size,
            "candidates_evaluated": self.evaluated,
            "candidates_per_second": self.rate,
            "candidates_predicted": self.predicted_count,
            "candidates_measured": self.measured_count,
            "seconds": self.seconds,
            "model_first_vs_best": None
            if first is None or not first.measured or not self.chosen.measured
            else math.exp(first.objective(first.measured) - self.chosen.objective(self.chosen.measured)),
            "notes": self.notes,
        }


def tune(text: str, name: str, options: Options) -> Result:
    from irkit.perf.hardware import hardware_of_module

    t0 = time.perf_counter()
    deadline = None if options.budget is None else t0 + options.budget
    say = options.report
    kernels = read_kernels(text, name, options.sizes or [{}])
    sizes = [k.sizes for k in kernels]
    hw = options.hw
    if hw is None:
        from irkit.frontend import parse_design

        hw = hardware_of_module(parse_design(text, name), name)
    machine = Machine.of(hw)
    stats = SearchStats()
    found: dict[str, list[Scored]] = {}
    for i, stage in enumerate(kernels[0].stages):
        stage_deadline = None if deadline is None else t0 + (deadline - t0) * 0.4 * (i + 1) / len(kernels[0].stages)
        found[stage] = beam_search(
            stage, kernels, kernels[0].reads.get(stage, ()), machine,
            width=options.width, depth=options.depth, keep=max(options.finalists, options.rerank), seed=options.seed,
            deadline=stage_deadline, stats=stats, workers=WORKERS,
            progress=lambda st, best, stage=stage: options.progress(
                f"irkit tune: stage {stage}: {st.evaluated:,} scored ({st.rate:,.0f}/s), best screened {_ms(best.seconds)}"
            ),
        )  # fmt: skip
        best = found[stage][0]
        say(
            f"irkit tune: stage {stage}: {stats.evaluated} candidates scored ({stats.rate:,.0f}/s), "
            f"best screened {_ms(best.seconds)}: {best.text or '(no directives)'}"
        )
    contenders = _combine(text, kernels[0], found, options)
    say(f"irkit tune: {len(contenders)} schedules to price with the full cost model")
    try:
        priced = _rerank(contenders, sizes, hw, deadline, say)
    except KeyboardInterrupt:
        say("irkit tune: interrupted: choosing among the schedules priced so far")
        priced = sorted((c for c in contenders if c.predicted), key=lambda c: (c.objective(c.predicted), c.key))
        options.measure = False
    if not priced:
        raise DiagnosticError([Diagnostic("error", f"{name}: no candidate schedule could be priced by the cost model")])
    try:
        priced = _sweep_factors(priced, kernels[0], machine, text, sizes, hw, options, sweep_deadline(deadline, t0))
    except KeyboardInterrupt:
        say("irkit tune: interrupted: choosing among the schedules priced so far")
        options.measure = False
    result = Result(priced[0], "", sizes, priced, stats.evaluated, stats.rate, len(priced), 0, 0.0, priced[0])
    if options.measure:
        interrupted = False
        try:
            _measure(finalists(priced, options.top_k), sizes, hw, text, name, options, result)
        except KeyboardInterrupt:
            say("irkit tune: interrupted: choosing among the schedules measured so far")
            interrupted = True
        ok = [c for c in priced if c.measured and all(v is not None for v in c.measured)]
        if not ok:
            raise DiagnosticError([Diagnostic("error", f"{name}: no candidate could be measured: {priced[0].error}")])
        result.chosen = choose(ok)
        if not interrupted and options.refine:
            _refine(result.chosen, kernels[0], machine, text, name, sizes, hw, options, result, deadline, t0)
        if not interrupted:
            _retime(result, sizes, hw, text, name, options)
            result.chosen = choose(finalists_of(timed_in_model_order(result.contenders)))
    result.text = _write(text, result)
    result.seconds = time.perf_counter() - t0
    return result


def from_log(text: str, name: str, path: Path, size_sets: list[dict[str, int]], hw=None, measured_on=None) -> Result:
    """The best schedule the log measured for this document and host (this one, or `measured_on`, a
    cluster's) at every one of the sizes; nothing is measured."""
    from irkit.frontend import parse_design
    from irkit.perf.hardware import hardware_of_module
    from irkit.sizes import document_sizes
    from irkit.validate.suite import own_schedules, replace_schedules

    module = parse_design(text, name)
    hw = hw if hw is not None else hardware_of_module(module, name)
    sizes = [document_sizes(module, s) for s in (size_sets or [{}])]
    doc, host = tlog.document_hash(text), tlog.host_of(hw, measured_on)
    entries = tlog.read_log(path)
    known = tlog.known(entries, doc, host)
    own = tlog.schedule_key(own_schedules(text))
    by_schedule: dict[str, Contender] = {}
    for (key, _), entry in sorted(known.items()):
        if key not in by_schedule:
            origin = "document" if key == own else "search"
            by_schedule[key] = Contender(entry.schedules, replace_schedules(text, entry.schedules), origin)
    for c in by_schedule.values():
        rows = [known.get((c.key, tlog.sizes_key(s))) for s in sizes]
        if all(r is not None and r.measured is not None for r in rows):  # not dropped
            c.measured = [r.measured for r in rows]  # type: ignore[union-attr]
            c.predicted = [r.predicted for r in rows]  # type: ignore[union-attr,misc]
    fastest: dict[tuple[str, str], float] = {}
    race: dict[tuple[str, str], float] = {}
    for (key, at, batch), entry in tlog.retimed(entries, doc, host).items():
        if entry.measured is None:
            continue
        if batch == RACE:  # the final race: that timing decides, as in the run
            race[(key, at)] = entry.measured
        else:  # the incumbents' re-timings: each schedule at its best, as in the run
            fastest[(key, at)] = min(entry.measured, fastest.get((key, at), entry.measured))
    for c in by_schedule.values():
        if c.measured:
            c.measured = [min(v, fastest.get((c.key, tlog.sizes_key(s)), v)) for v, s in zip(c.measured, sizes)]  # type: ignore[type-var]
            raced = [race.get((c.key, tlog.sizes_key(s))) for s in sizes]
            if all(v is not None for v in raced):
                c.measured, c.raced = raced, True  # type: ignore[assignment]
    ok = [c for c in by_schedule.values() if c.measured]
    if not ok:
        at = "; ".join(tlog.sizes_key(s) for s in sizes)
        raise DiagnosticError(
            [Diagnostic("error", f"{path}: no schedule of this document measured on this host at {at} "
                        f"({len(known)} entries for it, {len(entries)} in all); run `irkit tune --log {path}` first")]
        )
    ok = timed_in_model_order(ok)  # as `tune` breaks ties
    result = Result(choose(finalists_of(ok)), "", sizes, ok, 0, 0.0, 0, 0, 0.0, None)
    result.text = _write(text, result)
    return result


def timed_in_model_order(contenders: list[Contender]) -> list[Contender]:
    """Those measured at every size, in the full model's order (then by key): the order `choose`
    gives ties to, the same for a run and for `--from-log`."""
    ok = [c for c in contenders if c.measured and all(v is not None for v in c.measured)]
    return sorted(ok, key=lambda c: (c.objective(c.predicted), c.key))


def finalists_of(measured: list[Contender]) -> list[Contender]:
    """Those that ran in the final race, when some did (`_retime`): the race is the one time they
    were timed side by side; else all."""
    raced = [c for c in measured if c.raced]
    return raced or measured


def choose(measured: list[Contender]) -> Contender:
    """The measured best; those within TIE of it are ties, won by the full model's order (the list's)."""
    best = min(c.objective(c.measured) for c in measured)
    return next(c for c in measured if c.objective(c.measured) <= best + math.log1p(TIE))


def _ms(seconds: tuple[float, ...] | list[float]) -> str:
    return ", ".join(f"{s * 1e3:.3g} ms" for s in seconds)


def _combine(text: str, kernel: KernelInfo, found: dict[str, list[Scored]], options: Options) -> list[Contender]:
    """Stage finalists combined, each temporary with every placement, and the document's own.  First
    each stage's every finalist with the other stages' best (so a shape that pays off only with a
    producer computed inside it, as blur's row strips, reaches the full model however late the
    screening model ranks it), then the rest by best rank sums, up to the cap."""
    from irkit.validate.suite import own_schedules, replace_schedules

    stages = list(found)
    per_stage = max(options.finalists, round(options.rerank ** (1.0 / max(1, len(stages)))))
    choices = [_shapes_first(found[s], per_stage) for s in stages]
    everything = sorted(itertools.product(*[list(enumerate(c)) for c in choices]), key=lambda combo: (sum(i for i, _ in combo), [i for i, _ in combo]))
    one_varied = [combo for combo in everything if sum(1 for i, _ in combo if i) <= 1]
    combos = one_varied + [combo for combo in everything if sum(1 for i, _ in combo if i) > 1]
    covered = len(one_varied)
    out: dict[str, Contender] = {}
    own = own_schedules(text)
    if own:
        out[tlog.schedule_key(own)] = Contender(own, text, "document")
    out.setdefault(tlog.schedule_key({}), Contender({}, replace_schedules(text, {}), "search"))  # always legal
    for n, combo in enumerate(combos):
        base = {s: choice.candidate for s, (_, choice) in zip(stages, combo)}
        for placed in _placements(kernel, base):
            schedules = schedules_of(base, placed)
            key = tlog.schedule_key(schedules)
            if key not in out:
                out[key] = Contender(
                    schedules, replace_schedules(text, schedules), "search", bases=base, placed=placed, screened=len(out)
                )
        if n + 1 >= covered and len(out) >= options.rerank * len(stages):  # each stage's shapes, and the placements
            return list(out.values())
    return list(out.values())


# A stage placed inside its consumer runs in the consumer's loops, which own the cores: its own
# `parallel` would nest a parallel region (lowering refuses it), so a placed stage drops it.
NOT_PLACED = frozenset({"parallel"})


def schedules_of(bases: dict, placed: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each stage's directive texts: its candidate's (without `parallel` where the stage is placed
    in its consumer) and its placement; stages without directives left out."""
    schedules = {s: [*_placed_texts(c, s in placed), *placed.get(s, [])] for s, c in bases.items()}
    return {s: d for s, d in schedules.items() if d}


def _placed_texts(c, placed: bool) -> list[str]:
    return [DIRECTIVE_RECORDS[e["kind"]].text(e) for e in c.entries if not (placed and e["kind"] in NOT_PLACED)]


def _shapes_first(ranked: list[Scored], n: int) -> list[Scored]:
    """The best `n` of a stage, one per shape (directive kinds and loops, factors aside) first: the
    screening model prices each stage alone, so the shapes that only pay off combined with the other
    stages (a tile a producer is computed at) must reach the full model."""
    from irkit.tune.search import signature

    out, seen = [], set()
    for s in ranked:
        sig = signature(s.candidate.entries)
        if sig not in seen:
            seen.add(sig)
            out.append(s)
    out += [s for s in ranked if s not in out]
    return sorted(out[:n], key=ranked.index)


DISTINCT_WITHIN = 2.0  # shapes priced more than this over the best (geometric mean over the sizes) are not measured for being another shape


def distinct(ranked: list[Contender], k: int, coarse: bool = True) -> list[Contender]:
    """The best k by the full model, one per shape first: a schedule that only adds directives to a
    chosen one, or changes its factors, is measured only when there are not k shapes.  The full
    model often prices such variants alike, and measuring k of them would spend the measurements
    on one idea.  `coarse` shapes leave plain `unroll` out: the model prices an unrolled loop as
    the loop (gcc unrolls on its own), and on softmax (Zen 3) five of the eight measured were
    unroll variants of one schedule, within the host's noise of each other."""
    out: list[Contender] = []
    shapes: set[tuple] = set()
    best = ranked[0] if ranked and ranked[0].predicted else None
    limit = math.inf if best is None else best.objective(best.predicted) + len(best.predicted) * math.log(DISTINCT_WITHIN)
    for c in ranked:
        if c.predicted and c.objective(c.predicted) > limit:
            break  # a shape priced far off the best waits for the fill, in the model's order
        shape = _shape(c, coarse)
        extends = any(_extends(c, o) for o in out)
        if shape in shapes or extends:
            continue
        shapes.add(shape)
        out.append(c)
        if len(out) == k:
            return out
    return out + [c for c in ranked if c not in out][: k - len(out)]


def _shape(c: Contender, coarse: bool = False) -> tuple:
    """Each stage's directives without their factors; `coarse`: without plain `unroll` either."""
    return tuple(sorted(
        (stage, tuple(sorted(d.split(" by ")[0] for d in dirs if not (coarse and d.startswith("unroll ")))))
        for stage, dirs in c.schedules.items()
    ))  # fmt: skip


def _extends(c: Contender, other: Contender) -> bool:
    """Does `c` only add directives to `other` (stage by stage)?"""
    return c.schedules != other.schedules and all(
        c.schedules.get(stage, [])[: len(dirs)] == dirs for stage, dirs in other.schedules.items()
    ) and set(other.schedules) <= set(c.schedules)


def _placements(kernel: KernelInfo, nests: dict) -> list[dict[str, list[str]]]:
    """Every combination of the placements the records offer each temporary (none among them)."""
    per_temp: list[list[tuple[str, str | None]]] = []
    for temp in sorted(kernel.temps):
        consumers = {c: tuple(nests[c].nest.names) for c, reads in kernel.reads.items() if temp in reads and c in nests and c != temp}
        space = Space(stage=temp, loops=tuple(nests[temp].nest.names), extents={}, consumers=consumers, temp=True)
        texts = [DIRECTIVE_RECORDS[e["kind"]].text(e) for r in DIRECTIVE_RECORDS.values() if r.phase == PLACE for e in r.space(space)]
        per_temp.append([(temp, None)] + [(temp, t) for t in texts])
    out = []
    for combo in itertools.product(*per_temp):
        out.append({temp: [t] for temp, t in combo if t is not None})
    return out or [{}]


def price(text: str, sizes: list[dict[str, int]], hw) -> tuple[list[float] | None, str | None]:
    """The full model's seconds at each size set, or why it cannot price the document (it is refused)."""
    from irkit.perf.predict import _MODELS, predict

    try:
        seconds = [predict(text, sizes=s, hw=hw).seconds for s in sizes]
        problem = unverified(text)
        return (None, problem) if problem else (seconds, None)
    except DiagnosticError as exc:
        return None, "; ".join(d.message for d in exc.diagnostics)[:300]
    except Exception as exc:  # noqa: BLE001 -- a candidate the model cannot price is dropped, with why
        return None, f"{type(exc).__name__}: {exc}"[:300]
    finally:
        _MODELS.clear()  # one document each: the cache would only grow


def unverified(text: str) -> str | None:
    """Why `irkit verify` does not accept the document's generated code (None: it does).  The tuner
    writes only schedules that verify: its output is reviewed like any document."""
    from irkit.frontend import parse_design
    from irkit.raising.verify import compare_modules, lowered_loops

    design = parse_design(text, "<candidate>")
    errors = [d for d in compare_modules(design, lowered_loops(design)) if d.severity == "error"]
    return f"irkit verify: {errors[0].message}"[:300] if errors else None


def _rerank(contenders: list[Contender], sizes: list[dict[str, int]], hw, deadline: float | None, say) -> list[Contender]:
    """Price every contender with the full model, two processes at a time (its analysis is Python)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    priced = []
    workers = max(1, min(WORKERS, len(contenders)))
    context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(price, c.text, sizes, hw) for c in contenders]
        for n, (c, f) in enumerate(zip(contenders, futures)):
            if deadline is not None and time.perf_counter() > deadline and priced:
                say(f"irkit tune: budget: stopped pricing after {n} of {len(contenders)}")
                for rest in futures[n:]:
                    rest.cancel()
                break
            c.predicted, c.error = f.result()
            if c.predicted is None:
                c.predicted = []
                continue
            priced.append(c)
    priced.sort(key=lambda c: (c.objective(c.predicted), c.key))
    refused = [c for c in contenders if c.error]
    if refused:
        say(f"irkit tune: {len(refused)} of {len(contenders)} refused by the checker or lowering, e.g.: {refused[0].error}")
    if priced:
        say(f"irkit tune: full model: best {_ms(priced[0].predicted)} ({priced[0].origin})")
    return priced


SWEEP_SHAPES = 2  # the full model's best shapes whose factors it prices (Options.sweep of each) before measuring
SWEEP_SHARE = 0.6  # ... and only while this share of the budget is unspent


def sweep_deadline(deadline: float | None, t0: float) -> float | None:
    """When the factor sweep stops pricing: SWEEP_SHARE of the budget."""
    return None if deadline is None else t0 + SWEEP_SHARE * (deadline - t0)


def _sweep_factors(priced: list[Contender], kernel: KernelInfo, machine: Machine, text: str, sizes, hw,
                   options: Options, deadline: float | None) -> list[Contender]:  # fmt: skip
    """`priced` with the factor neighbours of its best SWEEP_SHAPES shapes priced too (other factors
    and widths the records offer for one of their directives, `options.sweep` of each, spread over
    the moves and their ranges), re-sorted by the full model.

    The search ranks factors with the screening model, and the full model sees only the factors the
    search kept: on softmax 4096x1024 (Zen 3) the search kept rows grouped by 64 to 2048, the full
    model's best grouping (by 2, measured 2.33 ms against 2.50 for 64 and 2.60 ungrouped) was never
    priced, and the measured top k was five unroll variants of the ungrouped rows."""
    if options.sweep <= 0 or (deadline is not None and time.perf_counter() > deadline):
        return priced
    seen = {c.key for c in priced}
    new: list[Contender] = []
    for best in distinct(priced, SWEEP_SHAPES):
        if best.bases is None:
            continue
        moved = [c for c in _neighbour_contenders(best, kernel, machine, text, seen) if c.move.endswith((" up", " down"))]
        moved = _spread_moves(moved)[: options.sweep]
        for c in moved:
            c.origin = "factors"
        new += moved
    if not new:
        return priced
    swept = _rerank(new, sizes, hw, deadline, lambda line: None)
    options.report(f"irkit tune: {len(swept)} factor variants of the best {SWEEP_SHAPES} shapes priced"
                   + (f", best {_ms(swept[0].predicted)}: {swept[0].key}" if swept else ""))  # fmt: skip
    return sorted(priced + swept, key=lambda c: (c.objective(c.predicted), c.key))


def _spread_moves(moved: list[Contender]) -> list[Contender]:
    """Factor neighbours in an order that spreads any prefix over the moves (each factor up and
    down) and over each move's range (its ends first, then the middles): a tile's offers start with
    its smallest pairs, and a prefix of them would sweep one corner."""
    groups: dict[str, list[Contender]] = {}
    for c in moved:
        groups.setdefault(c.move, []).append(c)
    spread = [_ends_first(g) for g in groups.values()]
    return [g[i] for i in range(max(map(len, spread), default=0)) for g in spread if i < len(g)]


def _ends_first(items: list) -> list:
    """`items` reordered: the first, the last, then the middles of the gaps left, recursively."""
    if len(items) <= 2:
        return list(items)
    order, spans = [0, len(items) - 1], [(0, len(items) - 1)]
    while spans:
        next_spans = []
        for a, b in spans:
            if b - a < 2:
                continue
            m = (a + b) // 2
            order.append(m)
            next_spans += [(a, m), (m, b)]
        spans = next_spans
    return [items[i] for i in order]


def finalists(priced: list[Contender], k: int) -> list[Contender]:
    """What is measured first: the top k - k // 3 by the full model (`distinct`), the screening
    model's best k // 3 of the others (one per shape), and the document's own schedule.

    The two models are built differently (the full one reads the loop IR lowering makes, the
    screening one the nest's names) and are wrong in different places: on conv2d 56x56 (Zen 3) the
    full model priced `unroll_jam f by 4` at 1.25 ms, measured 3.3-3.6 ms, and its `by 8` variant
    (measured 1.95 ms) was a factor change of it, so never measured; the screening model ranked
    that variant second.  Measuring both models' picks is what protects the result from either."""
    chosen = distinct(priced, k - k // 3)
    shapes: set[tuple] = set()
    for c in sorted((c for c in priced if c.screened is not None and c not in chosen), key=lambda c: c.screened):
        if len(chosen) >= k:
            break
        if _shape(c, True) not in shapes:
            shapes.add(_shape(c, True))
            chosen.append(c)
    chosen += [c for c in priced if c not in chosen][: k - len(chosen)]
    own = next((c for c in priced if c.origin == "document"), None)
    if own is not None and own not in chosen:
        chosen.append(own)
    return chosen


def _measure(chosen: list[Contender], sizes, hw, text: str, name: str, options: Options, result: Result) -> None:
    """Compile the candidates in parallel, probe, then time them together; the log's are not
    measured again.  An incumbent's copy (`INCUMBENT`, re-timed beside its neighbours) is looked up
    and logged under its batch's number, and not counted as a measured candidate."""
    from irkit.tune import measure

    doc = tlog.document_hash(text)
    host = tlog.host_of(hw, _measuring_host(options))
    entries = tlog.read_log(options.log) if options.log else []
    known = tlog.known(entries, doc, host)
    again = tlog.retimed(entries, doc, host)
    todo = []
    for c in chosen:
        if c.origin == INCUMBENT:
            logged = [again.get((c.key, tlog.sizes_key(s), c.batch)) for s in sizes]
            if all(e is not None and e.measured is not None for e in logged):
                c.measured = [e.measured for e in logged]  # type: ignore[union-attr]
                continue
        else:
            logged = [known.get((c.key, tlog.sizes_key(s))) for s in sizes]
        if all(e is not None for e in logged):
            dropped = next((e for e in logged if e.measured is None), None)  # type: ignore[union-attr]
            if dropped is not None:
                c.error = dropped.error or "dropped"
                options.report(f"irkit tune: in the log: dropped ({c.error}): {c.key}")
                continue
            c.measured = [e.measured for e in logged]  # type: ignore[union-attr]
            options.report(f"irkit tune: in the log: {_ms(c.measured)} {c.origin}: {c.key}")
            continue
        todo.append(c)
    started = time.perf_counter()
    measure.measure_with(options.executor, todo, text, name, sizes, options)
    if todo:
        result.seconds_a_measurement = (time.perf_counter() - started) / len(todo)
    for c in todo:
        if c.error is not None or not c.measured:
            if c.error:
                options.report(f"irkit tune: dropped ({c.error}): {c.key}")
                if options.log and c.origin != INCUMBENT:  # so that a resumed run does not try it again
                    for s, pred in zip(sizes, c.predicted):
                        tlog.append(options.log, tlog.Entry(doc, s, c.schedules, pred, None, c.compile_seconds, host, c.error))
            continue
        options.report(f"irkit tune: measured {_ms(c.measured)} (predicted {_ms(c.predicted)}) {c.origin}: {c.key}")
        if c.origin != INCUMBENT:
            result.measured_count += 1
        if options.log:
            for s, pred, meas in zip(sizes, c.predicted, c.measured):
                tlog.append(options.log, tlog.Entry(doc, s, c.schedules, pred, meas, c.compile_seconds, host, batch=c.batch))


def _measuring_host(options: Options):
    """The host the executor measures on (`irkit.distributed`); None: this one."""
    return options.executor.host() if options.executor is not None else None


INCUMBENT = "incumbent"  # the origin of a best schedule's copy re-measured beside its neighbours
REFINE_BATCHES = 5  # batches of neighbours measured at most, in all
REFINE_PATIENCE = 2  # batches measured around one incumbent before the rounds give up
REFINE_PRICE = 96  # neighbours the full model prices around one incumbent at most
REFINE_MEASURE = 3  # neighbours measured a batch: the full model's best of those not yet measured
# With a budget mostly unspent (tuning takes about a tenth of the default 600 s), refinement goes
# further: more batches, and one more batch around an incumbent before it gives up
SPARE_SHARE = 0.25  # budget used below this share: the rounds get the spare figures
SPARE_BATCHES = 8
SPARE_PATIENCE = 3
RETIME = 3  # the fastest schedules re-timed side by side at the end: that race decides between them
RACE = 0  # the log's batch number of the race's timings
RETIME_WITHIN = 0.15  # ... those within this of the fastest


def _spare(deadline: float | None, t0: float | None) -> bool:
    """Whether less than SPARE_SHARE of the budget is used (never without a budget)."""
    if deadline is None or t0 is None:
        return False
    now = time.perf_counter()
    return now - t0 < SPARE_SHARE * (deadline - t0)


PLACEMENT_MOVE = ": placement"  # the move of a neighbour that places a temporary elsewhere


def _neighbour_contenders(best: Contender, kernel: KernelInfo, machine: Machine, text: str, seen: set[str],
                          timed: set[str] | None = None) -> list[Contender]:  # fmt: skip
    """The schedules one decision away from `best`: in one stage (irkit.tune.refine), placements kept,
    or one temporary's placement, the stages kept; without those already priced (`seen`, which they
    join) -- for a placement, without those already measured (`timed`; default `seen`)."""
    from irkit.tune.refine import moves
    from irkit.validate.suite import replace_schedules

    out: list[Contender] = []
    for stage, cand in (best.bases or {}).items():
        info = kernel.stages[stage]
        lanes = machine.lanes(info.bodies[0].dtype_bits if info.bodies else 32)
        for move, nb in moves(cand, info, lanes, machine.registers):
            bases = {**best.bases, stage: nb}  # type: ignore[dict-item]
            schedules = schedules_of(bases, best.placed)
            key = tlog.schedule_key(schedules)
            if key in seen:
                continue
            seen.add(key)
            c = Contender(schedules, replace_schedules(text, schedules), "refined", bases=bases, placed=best.placed)
            c.move = f"{stage}: {move}"
            out.append(c)
    # a temporary placed elsewhere, the stages' decisions kept: the full model ranks placements of
    # blur's row strip (at the strip of rows, at the tile inside it) the wrong way round on a Xeon
    # with 2 MiB of L2, and the search measured only its first choice
    placements: set[str] = set()
    moved: list[Contender] = []
    for placed in _placements(kernel, best.bases or {}):
        changed = [t for t in set(placed) | set(best.placed) if placed.get(t) != best.placed.get(t)]
        if len(changed) != 1:
            continue
        schedules = schedules_of(best.bases or {}, placed)
        key = tlog.schedule_key(schedules)
        if key in (timed if timed is not None else seen) or key in placements:
            continue  # (one the full model priced but the search did not measure is a neighbour)
        placements.add(key)
        seen.add(key)
        c = Contender(schedules, replace_schedules(text, schedules), "refined", bases=best.bases, placed=placed)
        c.move = f"{changed[0]}{PLACEMENT_MOVE}"
        moved.append(c)
    return moved + out  # the few placements first: REFINE_PRICE cuts the list


def _room_for_a_batch(n: int, result: Result, deadline: float | None) -> bool:
    """Whether a batch of `n` neighbours and the incumbent's copy, then the final race (RETIME
    schedules), fit in the budget at the latest batch's seconds a measurement.  The race runs
    whatever the budget says; without this, gemm's tuning (a measurement 10-15 s) ended 30 s past
    its 600 s budget on the Zen 3 host."""
    if deadline is None:
        return True
    return time.perf_counter() + _reserve(n, result) <= deadline


# A batch costs more a candidate than the top k: compiles go two at a time, and a batch of three
# and a copy, or a race of three, wait for an odd compile (gemm on the Zen 3 host: 5.5 s a candidate
# in the top k, 6-8 s in a batch or the race; with the reserve at 1x, run R ended at 614 s of 600)
RESERVE = 1.5


def _reserve(n: int, result: Result) -> float:
    """Seconds a batch of `n` neighbours, its incumbent's copy and the final race are given."""
    return RESERVE * (n + 1 + RETIME) * result.seconds_a_measurement


def _pricing_deadline(n: int, result: Result, deadline: float | None) -> float | None:
    """When pricing neighbours must stop so that their batch and the final race still fit: the full
    model prices a gemm in 6 s, and 96 neighbours took the rest of its budget before the batch."""
    return None if deadline is None else deadline - _reserve(n, result)


def _as_neighbour(c: Contender, move: str) -> Contender:
    """An already priced contender taken as a neighbour: it gets the neighbour's move."""
    c.move = move
    return c


def _one_per_move(pending: list[Contender], n: int) -> tuple[list[Contender], list[Contender]]:
    """The next `n` neighbours to measure, and the rest: the full model's best of each move first
    (a factor changed, a directive dropped, one added), then in its order.  The full model prices
    many neighbours alike (blur's strip heights within 2%), and measuring its three best would
    spend a batch on one move."""
    picked: list[Contender] = []
    moved: set[str] = set()
    # A placement first: the full model's ranking of where a temporary is computed is the least
    # sure (it is reuse across cache levels; blur's strip at the tile measured 1.25x faster than at
    # the row strip the model put first, on a Xeon with 2 MiB of L2)
    placement = next((c for c in pending if c.move.endswith(PLACEMENT_MOVE)), None)
    if placement is not None and n > 0:
        picked.append(placement)
        moved.add(placement.move)
    for c in pending:
        if len(picked) == n:
            break
        if c.move not in moved:
            moved.add(c.move)
            picked.append(c)
    for c in pending:
        if len(picked) == n:
            break
        if c not in picked:
            picked.append(c)
    return picked, [c for c in pending if c not in picked]


def _refine(best: Contender, kernel: KernelInfo, machine: Machine, text: str, name: str, sizes, hw, options: Options,
            result: Result, deadline: float | None, t0: float | None = None) -> None:  # fmt: skip
    """Measured refinement: the neighbours of the best measured schedule, priced by the full model,
    measured a few at a time (the model's best first) beside a copy of the incumbent, so that both
    are timed in one run.  A neighbour faster than the copy by more than TIE becomes the incumbent
    (and its neighbours are next); REFINE_PATIENCE batches without one end the rounds, as do
    REFINE_BATCHES batches in all, `--trials` and the budget.  While most of the budget is unspent
    (`_spare`, from `t0`), SPARE_PATIENCE and SPARE_BATCHES stand for the two."""
    say = options.report
    # a neighbour the full model priced before (the search's, the factor sweep's) but nobody measured
    # is still a neighbour: it is taken as priced, not priced again
    priced = {c.key: c for c in result.contenders if c.predicted and not c.measured and c.origin != INCUMBENT}
    seen = {c.key for c in result.contenders if c.key not in priced}
    pending: list[Contender] = []
    batches = tries = 0
    fresh = True
    while batches < (SPARE_BATCHES if _spare(deadline, t0) else REFINE_BATCHES):
        if best.bases is None:
            return  # the document's own schedule or no directives: no decisions to change
        if deadline is not None and time.perf_counter() > deadline:
            say("irkit tune: budget: refinement stopped")
            return
        left = REFINE_MEASURE if options.trials is None else min(REFINE_MEASURE, options.trials - result.measured_count)
        if left <= 0:
            return
        if not _room_for_a_batch(left, result, deadline):
            say("irkit tune: budget: refinement stopped (the rest is kept for the final race)")
            return
        try:
            if fresh:
                timed = {c.key for c in result.contenders if c.measured}
                new = _neighbour_contenders(best, kernel, machine, text, seen, timed)[:REFINE_PRICE]
                known = [_as_neighbour(priced.pop(c.key), c.move) for c in new if c.key in priced]
                known_keys = {c.key for c in known}
                unknown = [c for c in new if c.key not in known_keys]
                fresh_priced = _rerank(unknown, sizes, hw, _pricing_deadline(left, result, deadline), lambda line: None)
                result.contenders.extend(fresh_priced)
                result.predicted_count += len(fresh_priced)
                pending = sorted(known + fresh_priced, key=lambda c: (c.objective(c.predicted), c.key))
                fresh, tries = False, 0
            picked, pending = _one_per_move(pending, left)
            if not picked:
                return
            copy = Contender(
                best.schedules, best.text, INCUMBENT, predicted=best.predicted, bases=best.bases, placed=best.placed,
                batch=batches + 1,
            )  # fmt: skip
            _measure([copy, *picked], sizes, hw, text, name, options, result)
        except KeyboardInterrupt:
            say("irkit tune: interrupted: keeping the best measured so far")
            return
        batches += 1
        tries += 1
        timed = [c for c in picked if c.measured and all(v is not None for v in c.measured)]
        if not copy.measured or any(v is None for v in copy.measured):
            return  # the incumbent itself could not be timed again: no fair comparison
        # its best time: the host's noise only ever slows a run down (as `from_log` reads it back)
        best.measured = [min(a, b) for a, b in zip(best.measured, copy.measured)]  # type: ignore[type-var]
        winner = min(timed, key=lambda c: (c.objective(c.measured), c.key)) if timed else None
        if winner is not None:
            gain = math.exp(copy.objective(copy.measured) - winner.objective(winner.measured))
            say(f"irkit tune: refinement batch {batches}: best of {len(timed)} neighbours {_ms(winner.measured)} "
                f"against the incumbent's {_ms(copy.measured)} ({gain:.3g}x)")  # fmt: skip
        if winner is not None and winner.objective(winner.measured) < copy.objective(copy.measured) - math.log1p(TIE):
            best, fresh = winner, True
        elif tries >= (SPARE_PATIENCE if _spare(deadline, t0) else REFINE_PATIENCE):
            return


def _retime(result: Result, sizes, hw, text: str, name: str, options: Options) -> None:
    """The fastest few schedules (RETIME, within RETIME_WITHIN of the fastest) timed again side by
    side, and that race decides between them: each one's earlier timings were taken at other
    moments, and on a shared host the moments differ more than close schedules do.  Taking each
    at its best timing instead chose, on the Zen 3 host, a gemm whose packed panel of B (8 MiB)
    lives in the shared L3: timed at 102 ms in a quiet moment, then 117 and 119 beside its
    neighbours.  The race runs even when the budget is
    spent: it is measuring, which the budget lets finish, not searching."""
    ok = timed_in_model_order(result.contenders)
    if len(ok) < 2:
        return
    fastest = min(c.objective(c.measured) for c in ok)
    # ties in the full model's order (`ok`'s; a stable sort keeps it), as `choose` breaks them
    close = sorted((c for c in ok if c.objective(c.measured) <= fastest + math.log1p(RETIME_WITHIN)),
                   key=lambda c: c.objective(c.measured))[:RETIME]  # fmt: skip
    if len(close) < 2:
        return
    copies = [
        Contender(c.schedules, c.text, INCUMBENT, predicted=c.predicted, bases=c.bases, placed=c.placed, batch=RACE)
        for c in close
    ]
    try:
        _measure(copies, sizes, hw, text, name, options, result)
    except KeyboardInterrupt:
        options.report("irkit tune: interrupted: keeping the times measured so far")
        return
    if not all(copy.measured and all(v is not None for v in copy.measured) for copy in copies):
        return  # a schedule the race could not time: the earlier timings decide
    for c, copy in zip(close, copies):
        c.measured, c.raced = list(copy.measured), True
    options.report("irkit tune: the fastest timed again side by side: " + ", ".join(f"{_ms(c.measured)}" for c in close))


def _write(text: str, result: Result) -> str:
    from irkit.tune.document import annotated_text, tuned_text

    c = result.chosen
    how = "irkit tune: the document's own schedule" if c.origin == "document" else "irkit tune"
    what = f"measured {_ms(c.measured)}" if c.measured and all(v is not None for v in c.measured) else f"predicted {_ms(c.predicted)}"
    at = "; ".join(tlog.sizes_key(s) for s in result.sizes)
    notes = {stage: f"{how}: {what} at {at} (full model: {_ms(c.predicted)})" for stage in c.schedules}
    notes[""] = f"{how}: no directives; {what} at {at}"
    if c.origin == "document":
        return annotated_text(text, notes)
    return tuned_text(text, c.schedules, notes)
