"""Figures the cost model needs that no single throughput gives, fitted on microbenchmark documents.

Some of the model's figures are not a rate a loop can run at but a
property of how the core combines work: how long one op of an accumulation
chain takes (by latency class), how far the out-of-order window reaches
across independent chains, what a store costs the L1 in load slots, and how
much of each memory level's transfer time hides under the core's work
(ECM's overlap).  Each is measured here the way the model will use it: a
small design document whose cost the figure decides is compiled by irkit,
timed, and the figure is solved for (by bisection) so that irkit's own
prediction of that document matches the measured time.  The model and the
figure then agree by construction on these kernels -- and only on these:
they are calibration microbenchmarks, never the validation suite, so the
suite stays an independent test (issue 15: "fit them per host on
calibration microbenchmarks, never on the validate suite").

A figure whose fit lands on the edge of its range (the prediction cannot
reach the measured time with any plausible value: the benchmark is bound by
something else) is reported and left out, so the model keeps its default.

Each document is timed by a small C wrapper compiled with the kernel that
calls it `reps` times between two clock reads, so even an L1-resident
kernel of a microsecond is timed without the Python call in the way.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

# ---- the documents -------------------------------------------------------------------


@dataclass(frozen=True)
class FitCase:
    """One figure, the document whose predicted time it decides, and where to look for it."""

    figure: str  # a key of the hardware values (`fma_latency`) or `L1.store_weight`, `L2.overlap`, `dram.overlap`
    document: str
    sizes: dict[str, int]
    lo: float
    hi: float
    why: str  # what the benchmark is, for the description's comment
    bounded: bool = False  # a share: a measurement beyond what [lo, hi] can reach takes the nearer bound
    near: float = 0.0  # ... or only when within this share of the nearer bound's prediction


def _chain_doc(name: str, statement: str, relaxed: bool, schedule: str = "") -> str:
    assume = "  assume { relaxed_math }\n" if relaxed else ""
    schedule = f"  schedule o {{ {schedule} }}\n" if schedule else ""
    return (
        f"design {name} {{\n  sizes {{ E = 8, L = 64 }}\n  tensor a : f32[E, L] input\n  tensor b : f32[L] input\n"
        f"  tensor o : f32[E] output\n  {statement}\n{schedule}{assume}}}\n"
    )


CHAIN_DEPTH = 8  # FMAs at most on one dependent chain of the stream's polynomial


def _stream_doc(name: str, flops: int) -> str:
    """`y[i] = p(x[i], z[i])`: `flops` FMAs an element (each chain's first one `x * c + z`, a triad),
    vectorised: FP ops only, so the compute side is the FMA peak's.

    The FMAs form independent chains of at most CHAIN_DEPTH, summed: one chain of 48 dependent
    FMAs an element is latency-bound, not throughput-bound (on a Xeon model 167, 3.1x the FMA
    peak's time with every array in L1: the scheduler holds the waiting FMAs of about two
    elements' chains), and the fit would then read the core's stall as the level's overlap."""
    chains = max(1, math.ceil(flops / CHAIN_DEPTH))
    terms = []
    for j in range(chains):
        length = flops // chains + (1 if j < flops % chains else 0)
        expr = f"x[r, i] * {1.5 + j / 16:.6f} + z[r, i]"
        for k in range(1, length):
            expr = f"({expr}) * {1 + (k + j) / 64:.6f} + {0.5 + (k + j) / 128:.6f}"
        terms.append(expr)
    while len(terms) > 1:  # a balanced tree of adds
        terms = [f"({a}) + ({b})" if b else a for a, b in zip(terms[::2], [*terms[1::2], None])]
    return (
        f"design {name} {{\n  sizes {{ R = 8, N = 1024 }}\n  tensor x : f32[R, N] input\n  tensor z : f32[R, N] input\n"
        f"  tensor y : f32[R, N] output\n  y[r, i] = {terms[0]}\n  schedule y {{ vectorize i }}\n"
        "  assume { relaxed_math }\n}\n"
    )


def chain_cases() -> list[FitCase]:
    """Latencies of chain ops (long chains: the window's overlap is negligible) and the window."""
    fma = _chain_doc("cal_fma_chain", "o[e] += a[e, k] * b[k]", relaxed=True)
    add = _chain_doc("cal_add_chain", "o[e] += a[e, k]", relaxed=False)
    mx = _chain_doc("cal_max_chain", "o[e] max= a[e, k]", relaxed=False)
    vmx = _chain_doc("cal_vmax_chain", "o[e] max= a[e, k]", relaxed=False, schedule="vectorize k")
    return [
        FitCase("add_latency", add, {"E": 4, "L": 16384}, 0.5, 40, "o[e] += a[e, k]: one chain of dependent adds"),
        FitCase(
            "fold_latency", fma, {"E": 4, "L": 16384}, 0.5, 40,
            "o[e] += a[e, k] * b[k]: gcc's in-order vector reduction, one add a lane after a vector multiply",
        ),  # fmt: skip
        FitCase("max_latency", mx, {"E": 4, "L": 16384}, 0.5, 40, "o[e] max= a[e, k]: dependent NaN-correct maxima"),
        FitCase(
            "vmax_latency", vmx, {"E": 4, "L": 16384}, 0.5, 40,
            "o[e] max= a[e, k], vectorize k: one NaN-correct vector maximum (compares and a blend) a vector",
        ),  # fmt: skip
        FitCase(
            "ooo_window", fma, {"E": 512, "L": 128}, 0.0, 4096,
            "o[e] += a[e, k] * b[k] with entries of 128: chains of successive entries overlap",
        ),  # fmt: skip
    ]


def forward_case(levels: list[dict], simd: float) -> FitCase:
    """Store-to-load forwarding as irkit's kernels meet it: an accumulator kept in memory across
    an outer loop (`o[x] += a[k, x]`, k outside, x one full-width vector inside), so that each
    entry of the inner loop reloads the vector the entry before stored.  Fitted through the model
    (its L1 term: the entry's loads and stores plus the carried add and forwarding), so the figure
    is what a carried entry of irkit's C costs beyond them; the C microbenchmark's figure (a loop
    with its prologue and tails) is the starting value and stays where the fit fails."""
    lanes = max(1, int(simd) // 32)
    k = max(64, int(_capacity(levels[0]) * 0.5 / (lanes * 4)))
    doc = (
        "design cal_forward {\n  sizes { K = 256, X = 16 }\n  tensor a : f32[K, X] input\n  tensor o : f32[X] output\n"
        "  o[x] += a[k, x]\n  schedule o {\n    reorder k, x\n    vectorize x\n  }\n}\n"
    )
    return FitCase(
        "store_forward", doc, {"K": k, "X": lanes}, 0.0, 40.0,
        "o[x] += a[k, x], k outside, one vector of x inside: each entry reloads what the one before stored",
    )  # fmt: skip


CONFLICT_ROW_FLOATS = 1024  # a row of the conflicting walk: 4 KiB, so every row starts in the same L1 set
CONFLICT_WALK_COLUMNS = 64  # columns walked: 4 lines a row, a footprint well inside L2 at 16 x the ways


def _conflict_doc() -> str:
    """A column walk down P rows exactly 4 KiB apart (as a power-of-two matrix's transpose or a
    naive matmul's B reads), Q columns in turn: the P lines of a column share one L1 set."""
    return (
        f"design cal_conflict {{\n  sizes {{ P = 64, Q = {CONFLICT_WALK_COLUMNS} }}\n"
        f"  tensor a : f32[P, Q + {CONFLICT_ROW_FLOATS - CONFLICT_WALK_COLUMNS}] input\n  tensor o : f32[Q, P] output\n"
        "  o[q, p] = a[p, q] * 1.5\n}\n"
    )


def conflict_cases(ways: int) -> list[FitCase]:
    """The set-conflict miss and the share of a walk's accesses that pay it: first the walk of
    16 x the L1's ways (every access misses: `conflict_miss`), then 8, 4 and 2 x (each share fitted
    with the price fixed), so that the model's walk of any length through a set interpolates
    measured points (on the Zen 4 host, 8 ways: 0.25 of the accesses at 16 rows, 0.6 at 32, all
    from 64, where a walk keeping ways / rows of its lines would miss 0.5, 0.75, 0.875)."""
    doc = _conflict_doc()
    q = CONFLICT_WALK_COLUMNS
    cases = [
        FitCase(
            "conflict_miss", doc, {"P": 16 * ways, "Q": q}, 0.0, 1e-6,
            f"{q} columns of {16 * ways} rows 4 KiB apart: every access an L1 miss queued on one set",
        )  # fmt: skip
    ]
    for times in (8, 4, 2):
        cases.append(
            FitCase(
                f"conflict_share_{times}", doc, {"P": times * ways, "Q": q}, 0.0, 1.0,
                f"{q} columns of {times * ways} rows 4 KiB apart ({times} x the {ways} ways): the share that misses",
                bounded=True,
            )  # fmt: skip
        )
    return cases


def _column_doc(columns: int = 1024) -> str:
    """A column of a matrix whose rows are `columns` floats apart (1024: a page, every line in the
    few sets a page stride reaches; 1040: a page and a line, every access a page of its own with
    the lines spread over the sets): one access, one line and one page an element."""
    return (
        f"design cal_pages {{\n  sizes {{ P = 64 }}\n  tensor a : f32[P, {columns}] input\n  tensor o : f32[P] output\n"
        "  o[p] = a[p, 0] * 1.5\n}\n"
    )


def tlb_entries(cflags: list[str] | None = None, largest: int = 1 << 15) -> tuple[int | None, str]:
    """The pages the TLB holds: the time an element of a page-strided column, against the pages it
    covers (64 to `largest`), jumps where the pages stop fitting; None if it never does."""
    times: list[tuple[int, float]] = []
    pages = 64
    while pages <= largest:
        timed = compile_timed(_column_doc(BAND_COLUMNS), {"P": pages}, cflags)
        per = seconds_per_call(timed, target=0.01, trials=3) / pages
        times.append((pages, per))
        pages *= 2
        if len(times) < 3:
            continue
        base = min(t for _, t in times[:3])
        for at, t in times:  # the first jump ends the sweep (the larger columns cost the most)
            if t > 1.6 * base:
                knee = at // 2
                return knee, f"page-strided column: {base * 1e9:.2g} ns an element up to {knee} pages, {t * 1e9:.2g} at {at}"
    return None, f"page-strided column: no jump up to {largest} pages"


def tlb_case(entries: int) -> FitCase:
    return FitCase(
        "tlb_miss", _column_doc(BAND_COLUMNS), {"P": 8 * entries}, 0.0, 2e-7,
        f"a page-strided column over {8 * entries} pages (8 x the TLB): every element a TLB miss",
    )  # fmt: skip


def split_case(lanes: int | None = None) -> FitCase:
    """Vector loads that start off their vector's alignment (`x[r, i + 1]`, rows of N + 8): each
    costs `split_load` aligned loads more (`lanes`: f32 lanes of explicit narrower vectors, whose
    figure is `split_load_<bits>`; None: the full width)."""
    vector = f"vectorize i by {lanes}" if lanes else "vectorize i"
    doc = (
        "design cal_split {\n  sizes { R = 2, N = 512 }\n  tensor x : f32[R, N + 8] input\n"
        "  tensor y : f32[R, N] output\n  y[r, i] = x[r, i + 1] + x[r, i + 2] + x[r, i + 3] + x[r, i + 5]\n"
        f"  layout {{ x : row_major align 64; y : row_major align 64 }}\n  schedule y {{ {vector} }}\n}}\n"
    )
    figure = f"split_load_{lanes * 32}" if lanes else "split_load"
    width = f"{lanes * 32}-bit" if lanes else "full-width"
    return FitCase(
        figure, doc, {"R": 2, "N": 512}, 0.0, 16.0,
        f"4 misaligned {width} vector loads and an aligned store an element, in L1",
    )  # fmt: skip


def gather_case() -> FitCase:
    """A column read by vectors (rows a line apart, 8 lanes, in L1): every lane its own load and
    its own insert, at the fitted `gather_lane` (hardware gathers or inserts, whichever gcc uses).

    The row length is a size, known at run time only, as a transpose's or a column walk's is: with
    a constant 16 gcc 12 built for AVX2 left the `omp simd` loop scalar (a `vmulss` an element,
    1.6 cycles on the Xeon model 167 guest) and for AVX-512 permuted whole-line loads, neither
    what a document's column read compiles to (a `vmovss` and a `vinsertps` a lane); the figure
    then priced the AVX2 build's transposes at L2 size 57-91% slow."""
    doc = (
        "design cal_gather {\n  sizes { N = 256, K = 16 }\n  tensor x : f32[N, K] input\n  tensor y : f32[N] output\n"
        "  y[i] = x[i, 0] * 1.5\n  schedule y { vectorize i by 8 }\n}\n"
    )
    return FitCase(
        "gather_lane", doc, {"N": 256, "K": 16}, 0.0, 1e-7, "a column of 256 rows a line apart read 8 lanes a vector, in L1"
    )


def exp_case() -> FitCase:
    """irkit's exp (`relaxed_math`) as kernels compile it: `y = exp(x - 1.5)` in a vector loop whose
    length is a size, 4 rows of 4096 (128 KiB, in L2; the exp's arithmetic, not the transfers, sets
    the time).  It replaces the microbenchmark's `exp_f32` (`x = exp(-x)` over a constant 1024, in
    place), which ran 8% faster native and 13% faster built for AVX2 on the Xeon model 167 guest
    than the same exp in a document's loop: softmax and elementwise priced fast by that much."""
    doc = (
        "design cal_exp {\n  sizes { R = 4, N = 4096 }\n  tensor x : f32[R, N] input\n  tensor y : f32[R, N] output\n"
        "  y[r, i] = exp(x[r, i] - 1.5)\n  schedule y { vectorize i }\n  assume { relaxed_math }\n}\n"
    )
    return FitCase("exp_f32", doc, {"R": 4, "N": 4096}, 1e7, 1e12, "y = exp(x - 1.5), 4 rows of 4096, in L2")


def entry_case(simd: float) -> FitCase:
    """A vector loop entered for one vector at a time (`split j by W`, `vectorize ji by W`, W = 8
    f32 lanes, 4 on a 128-bit core: a trip count `min(W, N - jo)` that gcc's `omp simd` loop
    works out at every entry), in L1 (2 x 12 KiB): what an entry's set-up costs, per slot (one and
    one per access: here 3), on top of its load and store."""
    lanes = max(4, min(8, int(simd) // 32))  # tiles of 8 are what documents write (8 x 8 transposes)
    doc = (
        "design cal_entry {\n  sizes { M = 12, N = 256 }\n  tensor a : f32[M, N] input\n  tensor o : f32[M, N] output\n"
        f"  o[i, j] = a[i, j] * 1.5\n  schedule o {{\n    split j by {lanes} -> jo, ji\n    vectorize ji by {lanes}\n  }}\n}}\n"
    )
    return FitCase(
        "vector_entry", doc, {"M": 12, "N": 256}, 0.0, 1e-7,
        f"rows of 256 read by a vector loop entered for one vector of {lanes} lanes at a time, in L1",
    )  # fmt: skip


BAND_COLUMNS = 1040  # floats a row of the band walk: 4160 B, a page and a line (no set crowding)


def _band_doc() -> str:
    """Columns walked element by element over rows 4160 B apart (at Q = 64: a page and a line):
    every access a line of its own, spread over the sets (a gather's or a tiled transpose's
    misses, without set conflicts)."""
    return (
        "design cal_band {\n  sizes { P = 64, Q = 64 }\n  tensor a : f32[P, 16 * Q + 16] input\n"
        "  tensor o : f32[Q, P] output\n  o[q, p] = a[p, 16 * q] * 1.5\n}\n"
    )


def deep_miss_cases(levels: list[dict]) -> list[FitCase]:
    """What a strided miss costs when L3 (each level beyond L2) or DRAM serves it: band walks
    whose lines miss the level above and stay in the serving one (DRAM: four times the last
    level).  A set-conflict miss beyond L2 (`conflict_miss` in a level's block) is not fitted:
    priced like L1's, set by set, a column of 2048 rows 4 KiB apart fits it at 80 ns, and the
    transposes it then prices come out 1.5-2.7x slow -- L2's misses overlap across sets."""
    cases = []
    served = [*levels[2:], None]  # None: DRAM
    for j, level in enumerate(served, start=2):
        above = levels[j - 1]
        name = level["name"] if level is not None else "dram"
        if level is not None:
            lines = min(4 * _capacity(above), 0.5 * _capacity(level)) / 64
        else:
            lines = 4 * _capacity(above) / 64
        q = 64
        p = max(64, int(lines / q) // 64 * 64)
        cases.append(
            FitCase(
                f"{name}.strided_miss", _band_doc(), {"P": p, "Q": q}, 0.0, 2e-6,
                f"{q} columns of {p} rows 4160 B apart: each access a line from {name.upper() if level is None else name}",
            )  # fmt: skip
        )
    return cases


def stream_cases(levels: list[dict], flops_for: Callable[[dict], int]) -> list[FitCase]:
    """The L1's store weight, and each cache level's overlap (L2 and beyond), from streams
    resident in that level."""
    cases = []
    l1 = levels[0]
    n1 = max(256, int(_capacity(l1) * 0.5 / 8))  # two f32 arrays in half the L1
    cases.append(
        FitCase(
            "L1.store_weight", _scale_doc(), {"R": 4, "N": _round(n1 // 4, 64)}, 0.25, 8.0,
            "y[i] = x[i] * 1.5 in L1: one load and one store an element, against the triad's bandwidth",
        )  # fmt: skip
    )
    for level in levels[1:]:
        n = max(1024, int(_capacity(level) * 0.3 / 12))
        cases.append(_overlap_case(level["name"] + ".overlap", n, flops_for(level), level["name"]))
    # No DRAM case: `dram.overlap` is not fitted (see below).
    return cases


# Why `irkit calibrate` does not fit `dram { overlap }`.  A DRAM stream with K dependent FMAs an
# element sits on a cliff: on the Xeon model 167 guest it took its compute plus its whole transfer
# at K = 32, part of it at 16 and none at 64, and the fit's stream (49-64 FMAs, sized to balance
# compute and transfer) lands on the cliff's edge.  Four calibrations in a row on that host
# (2026-12-03) gave: left out (the stream 14% slower than no overlap allows), 0.0-0.02, left out
# (35% faster than full overlap allows), 1.0 -- noise, not a figure; the fitted 0.02 priced the
# fused blur at 4096^2 63% slow (measured: its arithmetic's time).  On the Zen 3 host it fitted
# 0.40-0.53.  The model uses its documented constant (irkit.perf.runtime.MEMORY_OVERLAP, 0.5)
# unless a description states `dram { overlap }`; leaving the fit out also saves 2-3 s of the
# calibration's 30.


def _scale_doc() -> str:
    return (
        "design cal_scale {\n  sizes { R = 1, N = 1024 }\n  tensor x : f32[R, N] input\n  tensor y : f32[R, N] output\n"
        "  y[r, i] = x[r, i] * 1.5\n  schedule y { vectorize i }\n}\n"
    )


# An overlap's stream measured a little slower than no overlap at all predicts (or faster than a full
# one) is at that bound, within the noise of these streams on a shared host (a level's stream swings
# up to 30% between runs); further out, the model's structure misses something and the figure is
# left out.  A model constant.
OVERLAP_NEAR = 0.10


def _overlap_case(figure: str, n: int, flops: int, level: str) -> FitCase:
    rows = 8
    return FitCase(
        figure, _stream_doc(f"cal_overlap_{level.lower()}", flops), {"R": rows, "N": _round(n // rows, 64)}, 0.0, 1.0,
        f"a stream of 3 arrays resident in {level} with {flops} FMAs an element: compute and transfer about equal",
        near=OVERLAP_NEAR,
    )  # fmt: skip


def _capacity(level: dict) -> float:
    return float(level.get("effective_size") or level["size"])


def _round(n: int, multiple: int) -> int:
    return max(multiple, n // multiple * multiple)


# ---- timing ---------------------------------------------------------------------------------


@dataclass
class Timed:
    """A document compiled with a repeat wrapper: `seconds(reps)` times `reps` calls in C."""

    kernel: object  # irkit.api.Kernel
    wrapper: object
    args: list[object] = field(default_factory=list)
    keep: list[np.ndarray] = field(default_factory=list)
    raws: list[np.ndarray] = field(default_factory=list)  # the memory under `keep`, for the spare pool

    def seconds(self, reps: int) -> float:
        return float(self.wrapper(ctypes.c_int64(reps), *self.args))


_TIMED: dict[tuple, Timed] = {}  # the last few built cases (a median of 5 fits builds one once)
TIMED_KEPT = 2  # DRAM-sized cases hold hundreds of MiB: only the last two stay


def compile_timed(document: str, sizes: dict[str, int], cflags: list[str] | None = None) -> Timed:
    """The document's kernel, built with a C function that calls it `reps` times and returns the
    seconds; the same case asked for again (the repeated fits of a noisy figure) is not rebuilt."""
    key = (document, tuple(sorted(sizes.items())), tuple(cflags or ()))
    if key in _TIMED:
        return _TIMED[key]
    while len(_TIMED) >= TIMED_KEPT:
        _spare(_TIMED.pop(next(iter(_TIMED))))
    for held in [k for k, t in _TIMED.items() if any(raw.size >= SPARE_FROM for raw in t.raws)]:
        _spare(_TIMED.pop(held))  # a large case is done when another is built: its memory serves the new one
    timed = _build_timed(document, sizes, cflags)
    _TIMED[key] = timed
    return timed


def release_built() -> None:
    """Drop the built cases compile_timed keeps and the spare memory (after the DRAM fits,
    hundreds of MiB of arrays)."""
    _TIMED.clear()
    _SPARE.clear()
    _LIBRARIES.clear()


# Memory of dropped DRAM-sized cases, kept for the next ones: a fresh array's first touch faults
# in every page (0.2 s for 512 MiB of 4 KiB pages here, over a second when the kernel compacts
# memory for huge pages), and the DRAM fits build a dozen such arrays.
_SPARE: list[np.ndarray] = []
SPARE_FROM = 16 << 20  # bytes: smaller arrays fault in quickly enough
SPARE_MOST = 1 << 30  # bytes kept spare at most


def _spare(timed: Timed) -> None:
    """Keep the large buffers of a case no longer timed (none of its arrays is used again)."""
    timed.keep.clear()
    timed.args.clear()
    _SPARE.extend(raw for raw in timed.raws if raw.size >= SPARE_FROM)
    timed.raws.clear()
    _SPARE.sort(key=lambda raw: raw.size)
    while sum(raw.size for raw in _SPARE) > SPARE_MOST:  # the largest serve the most cases
        _SPARE.pop(0)


SPARE_STEP = 64 << 20  # bytes: a fresh large buffer is a whole number of these


def _spare_size(nbytes: int) -> int:
    """The bytes to allocate for a buffer of `nbytes`: a large one rounded up to SPARE_STEP, so
    that a case a little larger than a spare one still reuses it (the streams' 488 MiB after the
    strided misses' 480 on the Xeon model 167 guest: 1.2 s of first touches saved)."""
    if nbytes < SPARE_FROM:
        return nbytes
    return -(-nbytes // SPARE_STEP) * SPARE_STEP


def _spare_buffer(nbytes: int) -> np.ndarray | None:
    """The smallest spare buffer that holds `nbytes` (taken out of the pool), or None."""
    if nbytes < SPARE_FROM:
        return None
    fitting = [raw for raw in _SPARE if raw.size >= nbytes]
    if not fitting:
        return None
    best = min(fitting, key=lambda raw: raw.size)
    return _SPARE.pop(next(i for i, raw in enumerate(_SPARE) if raw is best))


# A document's built kernel, whatever its sizes (they are the C function's arguments): the case at
# size 1 each fit takes off as its baseline, and the walks and sweeps of several lengths, share
# one lowering and one compile (about 4 s of a first calibration on the Xeon model 167 guest).
_LIBRARIES: dict[tuple, tuple] = {}


def _library(document: str, sizes: dict[str, int], cflags: list[str] | None) -> tuple:
    """(kernel, func, size args, tensors, compiled, timing function) of the document, built once."""
    key = (document, tuple(cflags or ()))
    if key in _LIBRARIES:
        return _LIBRARIES[key]
    import irkit
    from irkit.backends.target import target
    from irkit.kernel_abi import find_kernels, kernel_args

    c = target("c")

    kernel = irkit.compile(document, sizes=sizes, cflags=cflags, build=False, name="<calibration>")
    (func,) = find_kernels(kernel.levels["loop"])
    sizes_list, tensors = kernel_args(func)
    size_values = {s.value for s in sizes_list}
    params, call = [], []
    for k, arg in enumerate(func.body.block.args):
        if arg in size_values:
            params.append(f"int64_t s{k}")
        else:
            params.append(f"void *p{k}")
        call.append(f"s{k}" if arg in size_values else f"p{k}")
    wrapper = f"""
#include <time.h>
double irkit_cal_repeat(int64_t reps, {", ".join(params)})
{{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t r = 0; r < reps; r++) {{
        {c.symbol(func.sym_name.data)}({", ".join(call)});
        __asm__ volatile("" ::: "memory");
    }}
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}}
"""
    compiled = c.load(c.build(kernel.c_source + wrapper, cflags), func)
    fn = compiled.library.irkit_cal_repeat
    fn.restype = ctypes.c_double
    _LIBRARIES[key] = (kernel, func, sizes_list, tensors, compiled, fn)
    return _LIBRARIES[key]


def _build_timed(document: str, sizes: dict[str, int], cflags: list[str] | None) -> Timed:
    kernel, func, sizes_list, tensors, compiled, fn = _library(document, sizes, cflags)
    resolved = compiled.resolve_sizes(sizes)
    arrays = {}
    raws: list[np.ndarray] = []
    rng = np.random.default_rng(0)
    for t in tensors:
        nbytes = compiled.empty_bytes(t.name, resolved)
        raw = _spare_buffer(nbytes)
        if raw is None:
            raw = np.empty(_spare_size(nbytes), dtype=np.uint8)
        buf = compiled.empty(t.name, resolved, raw)
        raws.append(raw)
        _fill(buf, rng)
        arrays[t.name] = buf
    args: list[object] = []
    by_value = {s.value: s.name for s in sizes_list}
    tensors_by_value = {t.value: t.name for t in tensors}
    argtypes = [ctypes.c_int64]
    for arg in func.body.block.args:
        if arg in by_value:
            args.append(ctypes.c_int64(resolved[by_value[arg]]))
            argtypes.append(ctypes.c_int64)
        else:
            args.append(ctypes.c_void_p(arrays[tensors_by_value[arg]].ctypes.data))
            argtypes.append(ctypes.c_void_p)
    fn.argtypes = argtypes
    return Timed(kernel, fn, args, list(arrays.values()), raws)


FILL_PATTERN = 4096  # elements of the random pattern a case's arrays repeat


def _fill(buf: np.ndarray, rng: np.random.Generator) -> None:
    """Values in [0.5, 1.5) (no zeros, denormals or NaNs to slow a kernel down): a random pattern
    repeated, since drawing every element of a DRAM-sized case took a second or more."""
    flat = buf.reshape(-1)
    pattern = rng.uniform(0.5, 1.5, size=min(FILL_PATTERN, flat.size)).astype(buf.dtype)
    whole = flat.size // pattern.size * pattern.size
    flat[:whole].reshape(-1, pattern.size)[...] = pattern
    flat[whole:] = pattern[: flat.size - whole]


LONG_TRIALS = 3  # trials of a call twice the target or longer: each is a long sample already


def seconds_per_call(timed: Timed, target: float = 0.02, trials: int = 7) -> float:
    """The best of `trials` timings of enough calls to take about `target` seconds, per call."""
    timed.seconds(1)  # warm: page faults, thread start
    reps = 1
    while True:
        t = timed.seconds(reps)
        if t >= target / 4 or reps >= 1 << 24:
            break
        reps *= 4
    if reps == 1 and t >= 2 * target:  # one call is already long (DRAM-sized): the sizing call is a trial
        return min([t] + [timed.seconds(1) for _ in range(min(trials, LONG_TRIALS) - 1)])
    reps = max(1, int(reps * target / max(t, 1e-9)))
    return min(timed.seconds(reps) for _ in range(trials)) / reps


# ---- solving --------------------------------------------------------------------------------


@dataclass
class Fitted:
    figure: str
    value: float | None  # None: left out (see `note`)
    measured: float  # seconds per call
    note: str


def solve(predicted: Callable[[float], float], measured: float, lo: float, hi: float, steps: int = 40) -> float | None:
    """The value in [lo, hi] at which `predicted` (monotone) meets `measured`; None if it does not
    cross it inside the range (the benchmark is bound by something the figure does not decide)."""
    f_lo, f_hi = predicted(lo) - measured, predicted(hi) - measured
    if f_lo == 0:
        return lo
    if f_hi == 0:
        return hi
    if (f_lo > 0) == (f_hi > 0):
        return None
    a, b = lo, hi
    for _ in range(steps):
        mid = (a + b) / 2
        f_mid = predicted(mid) - measured
        if (f_mid > 0) == (f_lo > 0):
            a, f_lo = mid, f_mid
        else:
            b = mid
        if b - a <= 1e-3 * max(abs(b), 1e-9):
            break
    return (a + b) / 2


def _setter(values: dict, figure: str) -> Callable[[float | None], None]:
    """Set `figure` in the hardware values (None removes it)."""
    if "." in figure:
        level_name, key = figure.split(".", 1)
        if level_name == "dram":
            target, key = values, "dram_" + key
        else:
            target = next(lv for lv in values["levels"] if lv["name"] == level_name)
    else:
        target, key = values, figure

    def put(value: float | None) -> None:
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value

    return put


_BASELINES: dict[tuple, float] = {}


def _baseline(document: str, names: tuple[str, ...], cflags: list[str] | None) -> float:
    """What a call costs beyond its work (the call, the loops' setup): the same kernel at its
    smallest size, taken off, so that short L1-resident benchmarks measure their work only.
    Measured once per document in a process (the repeated fits of a figure and the walks of
    several lengths share it: a second or so of calibration)."""
    key = (document, names, tuple(cflags or ()))
    if key not in _BASELINES:  # microseconds a call, cache-resident: a shorter timing is as sure
        _BASELINES[key] = seconds_per_call(compile_timed(document, {name: 1 for name in names}, cflags), 0.005, 5)
    return _BASELINES[key]


def fit_case(case: FitCase, hardware, cflags: list[str] | None = None) -> Fitted:
    """Measure the case's document and solve for its figure in `hardware` (whose values it leaves
    set to the fitted value, or without the figure if the fit failed)."""
    from irkit.perf.predict import predict

    timed = compile_timed(case.document, case.sizes, cflags)
    measured = seconds_per_call(timed) - _baseline(case.document, tuple(case.sizes), cflags)
    put = _setter(hardware.values, case.figure)
    # The wrapper calls the kernel from C: no ctypes call, and the calls' data stays warm.
    call_overhead = hardware.values.pop("call_overhead", None)
    try:
        return _solve_case(case, hardware, measured, put, predict)
    finally:
        if call_overhead is not None:
            hardware.values["call_overhead"] = call_overhead


def _solve_case(case: FitCase, hardware, measured: float, put, predict) -> Fitted:

    def predicted(value: float) -> float:
        put(value)
        return predict(case.document, sizes=case.sizes, hw=hardware).seconds

    value = solve(predicted, measured, case.lo, case.hi)
    put(value)
    if value is None:
        at_lo, at_hi = predicted(case.lo), predicted(case.hi)
        nearer = case.lo if abs(measured - at_lo) <= abs(measured - at_hi) else case.hi
        at_nearer = at_lo if nearer == case.lo else at_hi
        if case.bounded or abs(measured - at_nearer) <= case.near * at_nearer:
            # a share can be no less than none and no more than all
            value = nearer
            put(value)
            note = f"{case.why}: {measured * 1e6:.3g} us a call, at the bound (the model's {at_lo * 1e6:.3g}-{at_hi * 1e6:.3g} us)"
            return Fitted(case.figure, value, measured, note)
        put(None)
        note = (
            f"left out: measured {measured * 1e6:.3g} us a call, but the model predicts {at_lo * 1e6:.3g} to "
            f"{at_hi * 1e6:.3g} us for any {case.figure} in [{case.lo:g}, {case.hi:g}] ({case.why})"
        )
        return Fitted(case.figure, None, measured, note)
    return Fitted(case.figure, value, measured, f"{case.why}: {measured * 1e6:.3g} us a call")


MEDIAN_AGREES = 0.05  # a majority of repeated fits this close (relative): their median is the figure


def _majority_agrees(fits: list[Fitted], runs: int, share: bool = False) -> bool:
    """Whether more than half of `runs` fits kept a value and those values agree within
    MEDIAN_AGREES (the figure is then kept, and its median lies among them): of the value, or
    for a `share` (a figure in [0, 1], an overlap) of the whole range, so that a share near 0
    is not held to a hundredth."""
    values = [f.value for f in fits if f.value is not None]
    if len(values) * 2 <= runs:
        return False
    middle = sorted(values)[len(values) // 2]
    return max(values) - min(values) <= MEDIAN_AGREES * (1.0 if share else abs(middle))


def balanced_flops(hardware) -> Callable[[dict], int]:
    """For a stream resident in a level, the FMAs an element that make the model's compute time about
    equal to the level's transfer time, so that how the two combine shows in the measured time."""
    flops_f32 = hardware.values["flops_f32"]

    def count(level: dict) -> int:
        transfer = 16.0 / level["bandwidth"]  # 3 arrays an element, the stored line moved twice: 16 B
        per_fma = 2.0 / flops_f32  # one lane of a full-width FMA
        return int(min(64, max(1, round(transfer / per_fma))))

    return count


def longer_entries(case: FitCase) -> FitCase:
    """The window's case with entries twice as long (half as many): fewer chains overlap, so the
    chains, not the core's arithmetic, set the time."""
    sizes = {"E": max(1, case.sizes["E"] // 2), "L": case.sizes["L"] * 2}
    return replace(case, sizes=sizes, why=case.why.replace("entries of 128", f"entries of {sizes['L']}"))


def window_fit(first, fallback):
    """The window from entries of 128, or, where those overlap until the core's arithmetic bounds
    the loop and no window reaches the time (gcc's fold-left loop built for AVX2 on the Xeon model
    167 guest: 19.5 us measured, 19.8 at any window; the window then went unwritten and every
    chain was priced alone, unscheduled batch_matmul +203%), from entries of 256."""

    def run(hw, cflags) -> list[Fitted]:
        got = first(hw, cflags)
        if got[0].value is not None:
            return got
        again = fallback(hw, cflags)
        if again[0].value is None:
            return got
        return [replace(again[0], note=f"{again[0].note}; entries of 128: {got[0].note}")]

    return run


@dataclass
class FitStep:
    """A step of `irkit calibrate` that fits one or more figures (shown as one progress line)."""

    label: str
    run: Callable[[object, list[str] | None], list[Fitted]]


def plan(hardware, quick: bool = False) -> list[FitStep]:
    """The fitting steps, in an order where each fit sees the ones before it (the latencies before
    the window, the store weight before the overlaps, the TLB's reach before its miss)."""
    values = hardware.values
    chains = chain_cases()
    streams = stream_cases(values["levels"], balanced_flops(hardware))

    def cases(*picked: FitCase) -> Callable[[object, list[str] | None], list[Fitted]]:
        return lambda hw, cflags: [fit_case(c, hw, cflags) for c in picked]

    def median_of(*picked: FitCase, runs: int = 3) -> Callable[[object, list[str] | None], list[Fitted]]:
        """Noisy figures (an overlap moves by 0.2 between runs of a shared host): each the median
        of `runs` fits; left out if most of them are. Both are decided early, since a DRAM
        stream's fit costs most of a second a run: a leave-out once the rest could not outvote
        it, the median once a majority of fits agree (the median of all `runs` lies between the
        least and the greatest of any majority, so the rest could not move it by more than
        that majority's spread)."""

        def one(case: FitCase, hw, cflags) -> Fitted:
            fits: list[Fitted] = []
            while len(fits) < runs:
                fits.append(fit_case(case, hw, cflags))
                possible = sum(f.value is not None for f in fits) + runs - len(fits)
                if possible * 2 <= runs or _majority_agrees(fits, runs, (case.lo, case.hi) == (0.0, 1.0)):
                    break
            kept = sorted((f for f in fits if f.value is not None), key=lambda f: f.value)
            chosen = kept[len(kept) // 2] if len(kept) * 2 > runs else next(f for f in fits if f.value is None)
            _setter(hw.values, case.figure)(chosen.value)
            spread = f" (of {', '.join(f'{f.value:.3g}' for f in kept)})" if len(kept) > 1 else ""
            return Fitted(chosen.figure, chosen.value, chosen.measured, chosen.note + spread)

        return lambda hw, cflags: [one(case, hw, cflags) for case in picked]

    # The L1's store weight is not fitted: the triad-normalised L1 term moves by a quarter over
    # weights 1 to 4, within this host's run-to-run noise, so a fit says more about the noise
    # than about the store port (stream_cases' first case; the model keeps its documented 2).
    steps = [
        FitStep("chain latencies (add, fold-left, max, vector max)", median_of(*chains[:4])),
        FitStep(
            "out-of-order window, overlapping chains",
            window_fit(median_of(chains[4]), median_of(longer_entries(chains[4]))),
        ),
        FitStep("store forwarding, an accumulator in memory", median_of(forward_case(values["levels"], values["simd"]))),
    ]
    # the overlaps are the noisiest fits (a level's stream swings 30% between runs on a shared
    # host, and the figure with it): the median of 5 (DRAM's is not fitted: see stream_cases)
    steps += [FitStep(f"{c.figure.split('.')[0]} overlap with the core's work", median_of(c, runs=5)) for c in streams[1:]]
    splits = [split_case()] + ([split_case(8)] if values["simd"] > 256 else [])
    steps.append(FitStep("misaligned vector loads", median_of(*splits)))
    steps.append(FitStep("gathered lanes", median_of(gather_case())))
    steps.append(FitStep("irkit's exp in a vector loop", median_of(exp_case())))
    steps.append(FitStep("vector loops entered for one vector", median_of(entry_case(values["simd"]))))
    ways = values["levels"][0].get("ways")
    if ways:  # a walk's share of misses needs the L1's associativity
        steps.append(FitStep("set-conflicting column walks", cases(*conflict_cases(int(ways)))))
    deep = deep_miss_cases(values["levels"])
    if not quick and deep:
        steps.append(FitStep("strided misses beyond L2", lambda hw, cflags: _deep_step(deep, hw, cflags)))
    if not quick:
        steps.append(FitStep("TLB reach and miss", _tlb_step))
        steps.append(FitStep("DRAM rows the prefetchers follow", _streams_step))
    return steps


def planned(cache_levels: int, quick: bool = False, ways: bool = True) -> int:
    """How many steps `plan` makes for a host with that many cache levels (`ways`: /sys gives the
    L1's associativity, so the conflict walks are fitted)."""
    return 6 + cache_levels + int(ways) + (0 if quick else 3)


NO_SLOWER = 1.5  # a level whose strided miss fits within this of the level above's is as fast (L3 serves a
# latency-bound miss 3-4x slower than L2; within 1.5x, prefetching and overlap hide the difference)


def _deep_step(deep: list[FitCase], hardware, cflags: list[str] | None) -> list[Fitted]:
    """Each deeper level's strided miss, in order; a level that is not clearly slower than the
    one above it (within NO_SLOWER: run-to-run noise) is left out, so the model prices its misses
    at the level above's and need not count them separately."""
    from irkit.perf.runtime import miss_price

    out = []
    for i, case in enumerate(deep, start=1):
        got = fit_case(case, hardware, cflags)
        above = miss_price("strided_miss", i - 1, hardware.values)
        if got.value is not None and above is not None and got.value <= NO_SLOWER * above:
            _setter(hardware.values, case.figure)(None)
            got = Fitted(
                got.figure, None, got.measured,
                f"left out: fits {got.value * 1e9:.3g} ns, no slower than the level above's {above * 1e9:.3g} ns "
                f"(within {NO_SLOWER:g}x) ({case.why})",
            )  # fmt: skip
        out.append(got)
    return out


STREAM_ROWS = (8, 16, 32, 64)  # rows read side by side in the prefetcher sweep
STREAM_SLOWER = 1.3  # a sweep point this much slower than the fastest: its rows are past what the prefetchers follow
STREAM_SEGMENT = 64  # floats of each row a step reads (4 lines)


def _side_by_side_doc(rows: int) -> str:
    """Rows read side by side, each going on where it left off: `rows` rows at a time, 4 lines of
    each a step (`tile i, j by rows, 64`), summed."""
    return (
        "design cal_streams {\n  sizes { M = 8192, N = 2048 }\n  tensor X : f32[M, N] input\n  tensor s : f32[M] output\n"
        f"  s[i] += X[i, j]\n  layout {{ X : row_major align 64; s : row_major align 64 }}\n"
        f"  schedule s {{\n    tile i, j by {rows}, {STREAM_SEGMENT} -> io, jo, ii, ji\n    vectorize ji\n  }}\n}}\n"
    )


def stream_sizes(levels: list[dict]) -> dict[str, int]:
    """A matrix four times the last level's capacity (at least 64 MiB), rows of 2048 floats."""
    n = 2048
    last = _capacity(levels[-1]) if levels else 0.0
    total = max(64 * 1024 * 1024, int(4 * last))
    return {"M": max(256, total // (4 * n) // 256 * 256), "N": n}


def stream_count(sizes: dict[str, int], cflags: list[str] | None) -> tuple[int | None, list[float], str]:
    """The rows the prefetchers follow side by side: the largest of STREAM_ROWS whose sweep point
    is within STREAM_SLOWER of the fastest; None when even the first is (no limit seen)."""
    times = []
    for rows in STREAM_ROWS:
        timed = compile_timed(_side_by_side_doc(rows), sizes, cflags)
        times.append(seconds_per_call(timed, target=0.01, trials=3))
    fastest = min(times)
    within = [rows for rows, t in zip(STREAM_ROWS, times) if t <= STREAM_SLOWER * fastest]
    shown = ", ".join(f"{rows} rows {t * 1e3:.3g} ms" for rows, t in zip(STREAM_ROWS, times))
    if within[-1] == STREAM_ROWS[-1]:
        return None, times, f"rows read side by side from DRAM: {shown}; no slow-down up to {STREAM_ROWS[-1]}"
    return within[-1], times, f"rows read side by side from DRAM: {shown}"


def unstreamed_case(streams: int, sizes: dict[str, int]) -> FitCase:
    rows = STREAM_ROWS[-1]
    return FitCase(
        "dram.unstreamed", _side_by_side_doc(rows), sizes, 0.0, 2e-7,
        f"{rows} rows read side by side ({rows // streams} x what the prefetchers follow): each line a miss of its own",
    )  # fmt: skip


def _streams_step(hardware, cflags: list[str] | None) -> list[Fitted]:
    """`dram.streams` from the sweep, then `dram.unstreamed` fitted on its last point."""
    sizes = stream_sizes(hardware.values["levels"])
    streams, times, how = stream_count(sizes, cflags)
    out = [Fitted("dram.streams", None if streams is None else float(streams), min(times), how)]
    if streams is not None:
        hardware.values["dram_streams"] = float(streams)
        out.append(fit_case(unstreamed_case(streams, sizes), hardware, cflags))
    return out


def _tlb_step(hardware, cflags: list[str] | None) -> list[Fitted]:
    entries, how = tlb_entries(cflags)
    out = [Fitted("tlb_entries", None if entries is None else float(entries), 0.0, how)]
    if entries is not None:
        hardware.values["tlb_entries"] = float(entries)
        out.append(fit_case(tlb_case(entries), hardware, cflags))
    return out


def describe(fits: list[Fitted]) -> str:
    """One progress line: the fitted values, or what was left out."""
    parts = []
    for f in fits:
        if f.value is None:
            parts.append(f"{f.figure} left out")
        elif f.figure.endswith("_latency") or f.figure == "store_forward":
            parts.append(f"{f.figure} {f.value:.3g} cycles")
        elif f.figure.startswith("exp_"):
            parts.append(f"{f.figure} {f.value / 1e9:.4g} G/s")
        elif f.figure in ("tlb_miss", "gather_lane", "vector_entry", "conflict_miss", "dram.unstreamed") or f.figure.endswith(
            "strided_miss"
        ):
            parts.append(f"{f.figure} {f.value * 1e9:.3g} ns")
        else:
            parts.append(f"{f.figure} {f.value:.3g}")
    return ", ".join(parts)


def summary(fits: list[Fitted]) -> str:
    kept = [f for f in fits if f.value is not None]
    return ", ".join(f"{f.figure} {f.value:.3g}" for f in kept) + (
        f"; left out: {', '.join(f.figure for f in fits if f.value is None)}" if len(kept) < len(fits) else ""
    )


