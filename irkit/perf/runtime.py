"""Pricing cost terms on a hardware description: the model's equations, in one place.

This module is deliberately standalone -- the standard library and numpy
only, no irkit import -- because `--emit python` copies its source into the
emitted module verbatim: the in-process model (`irkit.perf.predict`) and
the emitted one run the same code, so they agree to the last bit.

The model (docs/perf-model.md): for each loop nest, per core (the busiest),

    compute  = sum over instruction kinds of count x seconds per instruction, at least the
               front end's slots / (ISSUE_WIDTH x frequency) (`front_end_seconds`)
    chain    = max(accumulation iterations x fp_latency / frequency,
                   strided L1 misses x strided_miss,
                   conflict misses / sets their column reaches x conflict_miss)
    L1       = (loads + STORE_WEIGHT x stores) x 3 / (2 + STORE_WEIGHT) x vector bytes / L1 bandwidth
               + (carried adds x fp_latency + carried entries x store_forward) / frequency
    level l  = lines moved into the level above l x line / bandwidth of l
    DRAM     = lines moved out of the last cache x line x busy cores / DRAM bandwidth
    core     = max(compute, chain, L1)
    memory   = max(each level, DRAM)
    exposed  = max over cache levels of (1 - overlap_l) x level l, and DRAM's window waits
               beyond its transfers x (1 - dram overlap) (`exposed_dram`)
    time     = max(core + exposed, memory) + parallel-loop entries x fork/join

summed over the nests, plus one call overhead.  Instruction seconds come
from the measured throughputs: an FP instruction (add, mul, FMA, max ...)
costs 2 x lanes / flops_f32 (the peak is FMA lanes x 2); a division,
square root or exp instruction costs lanes / div_f32 (sqrt_f32, exp_f32).
The nest's data is assumed to stay in cache across calls when all the
kernel's buffers fit the level (`WARM`), as in a benchmark's repeated
calls; `cold=True` prices a first call.
"""

from __future__ import annotations

import numpy as np

# ---- the model (everything below is copied into emitted modules) ----

# How much of a memory level's transfer time hides under the core's own work
# (compute, latency chains, L1): 0 is ECM's non-overlapping level, 1 a
# roofline's.  A hardware figure: `irkit calibrate` measures it per level
# (`overlap` in each cache level, `dram { overlap }`); a description without
# it gets this default, half way between the two.
MEMORY_OVERLAP = 0.5

# What a store costs the L1 in load slots.  A hardware figure too (`store_weight`
# in `cache L1`, measured by `irkit calibrate`); without it, 2: a core with two
# load ports and one store port takes one store in the time of two loads.
STORE_WEIGHT = 2.0

# The extra L1 time of a vector access that crosses a cache line, in aligned
# accesses (both lines are read).  A hardware figure (`split_load`, fitted by
# `irkit calibrate` on a stream of misaligned loads); without it, 1.
SPLIT_LOAD = 1.0
# A column walk whose rows share a few L1 sets misses on some of its accesses, more the more rows
# it cycles through those sets' ways: the share that miss (each then costs `conflict_miss`) at 2,
# 4 and 8 x the ways, measured by `irkit calibrate` (hardware figures of those names); between
# them the model interpolates, from none at 1 x to all at 16 x and beyond.  Without the figures,
# these: a walk of R rows over W ways keeping W / R of its lines (1 - W / R at those points).
CONFLICT_SHARES = {"conflict_share_2": 0.5, "conflict_share_4": 0.75, "conflict_share_8": 0.875}

# Core terms that are priced per innermost loop when a nest has several (`part<k>_<term>`, made by
# irkit.perf.analysis.part_terms): each loop runs at its own bottleneck, one after the other
# (softmax's max pass is a chain, its exp pass compute), so the nest's in-core time is the sum of
# their maxima, not the maximum of their sums.
PART_PREFIX = "part"
# `wait<g>_lines` and `wait<g>_windows`: a group of a nest's buffers, the DRAM lines they bring and
# the out-of-order windows of the innermost loops that touch them (irkit.perf.analysis.wait_groups)
WAIT_PREFIX = "wait"


def is_core_count(key):
    """Is `key` a count the in-core time is priced from (and kept per innermost loop)?"""
    return key.startswith(("instr_", "chain_", "loop_steps")) or key in ("carry", "carry_steps", "vector_setups")
# Instruction kinds that are L1 accesses (the L1 term prices them, not the FP pipes);
# `mis`: the vector accesses among them that may start off their vector's alignment
MEMORY_KINDS = ("mem", "store", "mem64", "store64", "mis", "mis64")

# The share of a cache the model counts on holding a working set: caches are
# not fully associative and hold other data too.  An assumption of the model,
# not a hardware figure.
CACHE_SHARE = 0.5
# A measured capacity (`effective_size`: where a streaming sweep's speed ends) already holds what
# the other data and the associativity take: all of it is the usable capacity (CACHE_SHARE
# stands in for that measurement where a description has only the reported size).
MEASURED_SHARE = 1.0

# Rows the hardware prefetchers follow side by side, where the description does not say
# (`dram { streams }`, measured by `irkit calibrate`): 16, where a read of rows side by side
# slowed on the Zen 4 guest (16 rows 21.7 GB/s, 32 rows 12.5).
DRAM_STREAMS = 16.0

PAGE_BYTES = 4096.0  # the pages a TLB entry maps (4 KiB: what malloc'd arrays get without huge pages)


def transfer_seconds(fills, writebacks, bandwidth, read=None):
    """Seconds to move `fills` bytes into the level above and `writebacks` bytes back out.

    `bandwidth` is the STREAM triad's, counted as 16 bytes an element: three lines filled (b, c,
    and a's before its write) and one written back.  Where the description also has the rate of
    a read-only stream (`read`, in the bytes of the lines it fills), the two say what each
    direction costs: a fill `1 / read` a byte and a write-back what is left of the triad's time,
    `4 / bandwidth - 3 / read` (none when the triad's fills alone take its time: the Xeon model 167
    guest's L3 fills 29.5 GB/s read-only, 29.6 in the triad and 29.8 in a copy, write-backs beside
    them).  Write-backs alone go no faster than the faster of the two rates.  Without `read`,
    every byte costs `1 / bandwidth`.
    """
    if not read:
        return (fills + writebacks) / bandwidth
    per_writeback = max(4.0 / bandwidth - 3.0 / read, 0.0)
    return np.maximum(fills / read + writebacks * per_writeback, writebacks / max(bandwidth, read))


def resident_share(footprint, capacity, faster, slower):
    """The share of a repeatedly swept `footprint` a last-level cache keeps between sweeps.

    A guest's share of a host's shared cache is not a cliff: the working-set sweep of `irkit
    calibrate` slows gradually past it, as a cache with random replacement does.  In the steady
    state of a cyclic sweep over `F` bytes of a randomly replacing cache of `C` bytes, a line
    survives the `F (1 - h)` misses of one sweep with probability `h = exp(-F / C (1 - h))`: all of
    it for `F <= C`, the smaller root beyond.  `capacity` is the description's `effective_size`,
    where the sweep's bandwidth crossed the geometric mean of this level's (`faster`) and the next
    one's (`slower`): a mixture with the share `sqrt(r) / (1 + sqrt(r))` resident (`r = faster /
    slower`), which fixes `C`.  On the Xeon model 167 guest (L3 plateau 27.5, DRAM 15.6 GB/s in the
    triad's bytes, effective 96 MiB) this reads 24.5, 20.1, 17.9 and 16.8 GB/s at 80, 100, 127 and
    160 MiB, where the sweep measured 25.9, 21.4, 18.1 and 16.6.
    """
    return _random_share(np.asarray(footprint, dtype=float) / random_capacity(capacity, faster, slower))


def random_capacity(effective, faster, slower):
    """The capacity C of a randomly replacing cache whose sweep crossed the geometric mean of its
    bandwidth (`faster`) and the next level's (`slower`) at `effective`: there a mixture holds the
    share `sqrt(r) / (1 + sqrt(r))` resident (`r = faster / slower`), which `_random_share` reaches
    at `effective / C` (in the units of `effective`)."""
    r = max(float(faster) / float(slower), 1.0 + 1e-6) if slower else 1.0 + 1e-6
    mid = np.sqrt(r) / (1.0 + np.sqrt(r))
    return float(effective) * (1.0 - mid) / -np.log(mid)


def _random_share(x):
    """The share a randomly replacing cache of C lines keeps of a footprint of x C lines swept again
    and again: the smaller root of h = exp(-x (1 - h)), all of it up to x = 1."""
    x = np.asarray(x, dtype=float)
    h = np.zeros_like(x)
    for _ in range(40):  # Newton on g(h) = h - exp(-x (1 - h)) from 0: concave, so it climbs to the smaller root
        e = np.exp(-x * (1.0 - h))
        h = np.clip(h - (h - e) / np.maximum(1.0 - x * e, 1e-9), 0.0, 1.0)
    return np.where(x <= 1.0, 1.0, h)


# h at x = 1..64 for interpolation (within 0.002 of it): 0.82 at 1.1, 0.42 at 1.5, 0.20 at 2, 0.06 at 3
KEPT_X = np.concatenate([np.linspace(1.0, 1.2, 41), np.linspace(1.205, 3.0, 360), np.geomspace(3.01, 64.0, 80)])
KEPT_H = _random_share(KEPT_X)


def fits(lines, cap, keep, then, other):
    """`then` for the share of a footprint of `lines` that a cache keeps between two sweeps of it,
    `other` for the rest: the traffic model's fit test (irkit.perf.footprint.traffic).

    A cache that replaces its least recently used line (`keep` 0; an L1) keeps all of a footprint
    within `cap` and none of a larger one: a step.  One that replaces lines at random, or nearly
    (`keep` its capacity in that model, `keep_lines`), loses a growing share past `keep`: a read
    swept again and again over 1.5, 1.75, 2, 2.5, 3 and 4 MiB on the Xeon model 167 guest (L2 2
    MiB) kept 97, 82, 70, 44, 23 and 7% of it in L2, which this share reads with `keep` 1.6 MiB."""
    random = keep > 0
    within = np.less_equal(lines, keep if random else cap)
    if within.all():  # all of it kept, at every size priced (the common case: a loop's body)
        return then
    if not random:
        return np.where(within, then, other)
    h = np.interp(np.divide(lines, keep), KEPT_X, KEPT_H, left=1.0, right=0.0)
    return h * then + (1.0 - h) * other


def keep_lines(levels, i, hw, cap_lines):
    """The random-replacement capacity (`keep`, in lines) of cache level `i`, or 0 for a step at
    its capacity.

    A private level past the first whose end a sweep measured (`effective_size`) keeps a share of
    a larger footprint as a randomly replacing cache of `keep` lines does (`random_capacity`, as
    the last cache's `resident_share` reads its measured end).  The L1 keeps nothing past its size (a read swept over 47 and
    52 KiB on the Xeon model 167 guest: 236 and 158 GB/s, a cliff), and the last level's share is
    priced kernel-wide, between calls (`resident_share` there)."""
    lv = levels[i]
    if i == 0 or i + 1 >= len(levels) or not lv.get("measured_capacity"):
        return 0.0
    slower = levels[i + 1].get("bandwidth") or hw.get("dram_bandwidth_core", hw["dram_bandwidth"])
    return random_capacity(cap_lines, lv["bandwidth"], slower)


# The throughput figure of each instruction kind, and the work one lane of it counts there
# (an FMA lane is 2 flops; a division, a root or an exp one result).
_THROUGHPUT = {
    "fp": ("flops_f32", 2.0),
    "fp64": ("flops_f64", 2.0),
    "div": ("div_f32", 1.0),
    "div64": ("div_f64", 1.0),
    "sqrt": ("sqrt_f32", 1.0),
    "sqrt64": ("sqrt_f64", 1.0),
    "exp": ("exp_f32", 1.0),
    "exp64": ("exp_f64", 1.0),
    "int": ("flops_f32", 2.0),  # a vector integer instruction: priced as an FP one of its width
    "int64": ("flops_f64", 2.0),
}
# One call of the C library an element (no vector form): expf as calibrated, and every other
# math function without a fast path at the same price (documented: only expf is measured).
_LIBM = {"exp_libm": "libm_exp_f32", "exp_libm64": "libm_exp_f64", "libm": "libm_exp_f32", "libm64": "libm_exp_f64"}
UNIT_OF = {kind: "divider" for kind in ("div", "div64", "sqrt", "sqrt64", "idiv", "idiv64")} | {
    kind: "call" for kind in _LIBM
}


def latency_cycles(cls, hw):
    """The latency in cycles of one op of a latency class on a chain: the description's figure for
    the class (`add_latency`, `fma_latency`, `fold_latency`, `mul_latency`, `max_latency`,
    `vmax_latency`, `div_latency`), else `fp_latency`.  A fold-left step without its own figure is
    an add's: its chain is gcc's `vaddss`, the multiply is off it.  `forward` is the store-to-load
    forwarding a recurrence waits on between its iterations (`store_forward`)."""
    if cls == "forward":
        return hw.get("store_forward", 0.0)
    own = hw.get(cls + "_latency")
    if not own and cls in FALLBACK_CLASS:
        own = hw.get(FALLBACK_CLASS[cls] + "_latency")
    return own if own else hw.get("fp_latency", 0.0)


# A class a description may lack, priced as the class its chain is closest to: a fold-left step is an
# add, a vector maximum's step a scalar maximum's
FALLBACK_CLASS = {"fold": "add", "vmax": "max"}


def instruction_key(key):
    """(kind, element bits, width) of an instruction-count term, or None for other terms.

    `width` is 'full' (full hardware vectors), 'scalar', or the lanes W of a
    `vectorize ... by W` loop (`instr_fp_v8`): see irkit.perf.analysis."""
    if not key.startswith("instr_"):
        return None
    rest = key[len("instr_") :]
    width = "full"
    if rest.endswith("_s"):
        rest, width = rest[:-2], "scalar"
    else:
        head, sep, lanes = rest.rpartition("_v")
        if sep and lanes.isdigit():
            rest, width = head, int(lanes)
    elem_bits = 64 if rest.endswith("64") else 32
    return rest, elem_bits, width


def width_bits(elem_bits, width, hw):
    """The bits of one instruction: full vectors, one element, or W lanes (at most a full vector)."""
    if width == "full":
        return float(hw["simd"])
    if width == "scalar":
        return float(elem_bits)
    return float(min(width * elem_bits, hw["simd"]))


def instruction_seconds(kind, elem_bits, width, hw):
    """Seconds one instruction of `kind` takes at its width, from the description's throughputs.

    A figure measured at the instruction's width (`flops_f32_w[256]`, ...) prices it by its lanes;
    without one the instruction costs what a full-width one does (a core whose units run any
    width at the same instruction rate, as Intel's do; Zen 4 runs 256-bit FMAs twice as often
    as 512-bit ones, which its per-width figures say)."""
    if kind in ("gather", "gather64"):
        # a lane of a gather or scatter (a strided vector access): its insert or extract, at the
        # fitted `gather_lane` where measured (hardware gathers are slower on some cores), else
        # one scalar FP instruction
        if hw.get("gather_lane"):
            return hw["gather_lane"]
        kind = "fp" if kind == "gather" else "fp64"
        width = "scalar"
    if kind in _LIBM:
        rate = hw.get(_LIBM[kind])
        if not rate:
            raise KeyError(f"the hardware description has no '{_LIBM[kind]}', the throughput of the C library's exp")
        return 1.0 / rate
    if kind in ("idiv", "idiv64"):
        # x86 has no vector integer division: one scalar division an element, at the scalar f32
        # division's rate where measured, else a full-width division's time each (pessimistic)
        lanes = 1.0 if width == "scalar" else width_bits(elem_bits, width, hw) / elem_bits
        scalar = (hw.get("div_f32_w") or {}).get(32)
        if scalar:
            return lanes / scalar
        if not hw.get("div_f32"):
            raise KeyError("the hardware description has no 'div_f32', the throughput of divisions")
        return lanes * (hw["simd"] / 32.0) / hw["div_f32"]
    if kind not in _THROUGHPUT:
        raise KeyError(f"the model has no price for '{kind}' instructions")
    name, per_lane = _THROUGHPUT[kind]
    full = hw.get(name)
    if not full:
        raise KeyError(f"the hardware description has no '{name}', the throughput of {kind} instructions")
    bits = width_bits(elem_bits, width, hw)
    if width != "full":
        measured = (hw.get(name + "_w") or {}).get(int(bits))
        if measured:
            return per_lane * (bits / elem_bits) / measured
    return per_lane * (hw["simd"] / elem_bits) / full


def l1_seconds(elem_bits, width, hw):
    """Seconds of L1 bandwidth one load (weighted as a triad's) of that width takes: its bytes at the
    bandwidth measured at its width, else a full vector's bytes at the full-width bandwidth."""
    l1 = hw["levels"][0]
    bits = width_bits(elem_bits, width, hw)
    if width != "full":
        measured = (l1.get("bandwidth_w") or {}).get(int(bits))
        if measured:
            return bits / 8.0 / measured
    return hw["simd"] / 8.0 / l1["bandwidth"]


def split_cost(bits, hw):
    """Extra aligned accesses a misaligned vector access of `bits` costs: the figure measured at
    that width (`split_load` at the full width, `split_load_256` ...), else the full width's
    scaled by the share of such accesses that cross a line (a b-byte vector at a random element
    offset crosses in b / line of its executions; a full 64-byte one always), else SPLIT_LOAD."""
    if bits >= hw["simd"] and "split_load" in hw:
        return hw["split_load"]
    measured = hw.get(f"split_load_{int(bits)}")
    if measured is not None:
        return measured
    full = hw.get("split_load", SPLIT_LOAD)
    line = float(hw["line"])
    return full * min(1.0, bits / 8.0 / line) / min(1.0, hw["simd"] / 8.0 / line)


def miss_price(kind, i, hw):
    """Seconds a `kind` miss ("strided_miss" or "conflict_miss") of level i costs when the level
    below serves it: the top-level figure for L1's misses (served by L2), else the figure in the
    serving level's block (`cache L3 { strided_miss ... }`, `dram { ... }`); None if unmeasured."""
    levels = hw["levels"]
    if i == 0:
        return hw.get(kind)
    own = levels[i + 1].get(kind) if i + 1 < len(levels) else hw.get("dram_" + kind)
    # unmeasured (or no slower than the level above's, as a fit leaves out): the level above's
    return own if own is not None else miss_price(kind, i - 1, hw)


MISS_LINES = {"strided_miss": "strided_lines", "conflict_miss": "serial_lines"}  # a miss kind's lines


def deeper_rises(i, hw):
    """kind -> how much more a miss of that kind costs past level i than past the level above, for
    the kinds whose price rises (only those need level i's misses counted)."""
    out = {}
    for kind in MISS_LINES:
        here, above = miss_price(kind, i, hw), miss_price(kind, i - 1, hw)
        if here is not None and above is not None and here > above:
            out[kind] = here - above
    return out


def deeper_kinds(i, hw):
    """The miss kinds whose price rises past level i."""
    return set(deeper_rises(i, hw))


def deeper_misses(mm, i, hw):
    """The extra wait of the lines a column walk misses at level i (i >= 1): each costs the next
    level's miss figure instead of this level's.  Levels without the figures add nothing."""
    return sum(mm.get(MISS_LINES[kind], 0.0) * rise for kind, rise in deeper_rises(i, hw).items())


def _sets(level, line):
    """Sets of a cache level: lines / ways (a description without `ways`: fully associative)."""
    if level.get("ways"):
        return max(1.0, level["size"] / line / level["ways"])
    return level["size"] / line


# A nest's terms come in four functions (see `price`), so that each term is evaluated only where
# it is needed: the fills at every cache level, the waiting L1 misses at L1, the lines no prefetch
# stream brings at the last level (from DRAM), every other term (instructions, flops, chains,
# cores busy) once.
FILL_TERMS = ("lines", "stored_lines", "streamed_lines", "strided_lines")
MISS_TERMS = ("serial_lines",)
LAST_TERMS = ("untracked_lines", "waited_lines")
TERM_GROUPS = ("core", "fills", "misses", "last")
# the symbols of the environment that change from one cache level (or the TLB) to the next: a nest's
# fills and misses are priced at several, so their functions keep what uses none of these between
# the calls of one pricing (`shared`, irkit.perf.codegen)
LEVEL_SYMBOLS = frozenset({"cap", "sets", "ways", "keep", "line"})


def term_group(key):
    """Which of a nest's functions computes term `key`."""
    if key in FILL_TERMS:
        return "fills"
    if key in MISS_TERMS:
        return "misses"
    if key in LAST_TERMS or (key.startswith(WAIT_PREFIX) and key.endswith("_lines")):
        return "last"
    return "core"


def fp_pipes(hw):
    """The FP pipes of a core: its f32 peak over one FMA of full vectors a cycle (Zen 3,
    Skylake: 2)."""
    lanes = hw.get("simd", 256.0) / 32.0
    return max(1.0, hw["flops_f32"] / (hw["frequency"] * lanes * 2.0))


_CONTENTION = {}


def _contention_table(depth):
    """(chains in flight, slowdown, the most slowdown from each point on) points of `contended` for
    a pipeline `depth` ops deep."""
    key = round(float(depth), 4)
    if key not in _CONTENTION:
        ns, fs = [0.0, 1.0], [1.0, 1.0]
        queue = 0.0
        for k in range(1, int(np.ceil(4.0 * key)) + 2):
            wait = 1.0 + queue  # at the pipes: its own issue slot and the ops queued before it
            rate = k / (wait + key - 1.0)  # ops a slot: k chains, each an op per wait + latency
            queue = rate * wait
            ns.append(float(k))
            fs.append(min(1.0, k / key) / rate)
        fs_a = np.array(fs)
        # with the most of the table from each point on (`_monotone_slowdown`'s envelope)
        _CONTENTION[key] = (np.array(ns), fs_a, np.maximum.accumulate(fs_a[::-1])[::-1])
    return _CONTENTION[key]


def contended(compute, chain, depth):
    """The in-core time of work whose dependence chains go through the pipes that also bound its
    throughput: max(compute, chain) where the two are far apart, more where they are close.

    With n chains in flight, each op of a chain issuing when the one before it is done (its
    latency L), on p pipes: the roofline's max says n = L x p chains run at the peak, but an op
    ready when the pipes are busy waits, and its chain with it.  Mean-value analysis of that
    closed queue (n customers, a delay of L - 1/p, a server of 1/p an op) gives the rate: 82% of
    the peak at n = L x p = 8 (Zen 3's FMA: 4 cycles, 2 pipes), 97% at 12, the peak at 2 L p.
    `depth` is L x p (`chain_depth`); n = depth x compute / chain (the chains the two terms
    imply).  Measured on Zen 3, gemm 2048^3 with 4 rows x 2 vectors of accumulators (8 chains)
    ran 150-160 ms against 100-110 ms for 6 x 2 (12), which the max priced alike."""
    top = np.maximum(compute, chain)
    if depth <= 1.0:
        return top
    ns, fs, suffix = _contention_table(depth)
    chain_a = np.asarray(chain)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        n = np.where(chain_a > 0.0, depth * np.asarray(compute) / np.where(chain_a > 0.0, chain_a, 1.0), np.inf)
        return top * _monotone_slowdown(n, ns, fs, suffix, float(depth))


def _monotone_slowdown(n, ns, fs, suffix, depth):
    """The slowdown at `n` chains, made such that `contended` never falls as the chain term grows:
    non-increasing in n from `depth` on (where compute is the max), and its ratio to n
    non-increasing below (where the chain is).  The table's points are whole chains, so its peak
    can lie past a small depth (at 2 for a depth of 1.25) and the time fell by 1% as the chains
    got longer (found by the property test)."""
    def envelope(x):
        at = np.minimum(np.searchsorted(ns, x, side="left"), len(ns) - 1)
        return np.where(x > ns[-1], 1.0, np.maximum(np.interp(x, ns, fs, right=1.0), suffix[at]))

    at_depth = envelope(np.asarray(depth))
    below = np.maximum(np.interp(n, ns, fs, right=1.0), at_depth * n / depth)
    return np.where(n >= depth, envelope(n), below)


def chain_totals(t, hw):
    """(steps, cycles) of the accumulation chains of `t` (`chain_<class>` counts, each class at
    its latency)."""
    steps = cycles = 0.0
    for key, value in t.items():
        if key.startswith("chain_"):
            steps = steps + value
            cycles = cycles + value * latency_cycles(key[len("chain_") :], hw)
    return steps, cycles


def chain_depth(t, hw):
    """Ops in flight that fill the FP pipes, for the chains of `t`: their mean latency (cycles, by
    latency class) x the pipes; 0 without chains."""
    steps, cycles = chain_totals(t, hw)
    if not np.any(np.asarray(steps) > 0.0):
        return 0.0
    mean = float(np.max(np.asarray(cycles) / np.maximum(np.asarray(steps), 1e-300)))
    return mean * fp_pipes(hw)


def in_core(t, hw):
    """(compute, chain, L1) seconds of a set of instruction counts (a nest's, or one of its loops')."""
    levels = hw["levels"]
    # In-core work by the unit that runs it: the FP pipes (adds, multiplies, FMAs, min/max, and
    # the polynomial exp), the divider (divisions, square roots: a separate, partly pipelined
    # unit the FP pipes work beside), and C library calls (a call serialises its loop and runs
    # on the pipes; the divider goes on beside it: sqrtf(x) next to expf(x) costs the call).
    busy = {"fp": 0.0, "divider": 0.0, "call": 0.0}
    slots = 0.0  # L1 time of the loads and stores, in seconds
    for key, value in t.items():
        parsed = instruction_key(key)
        if parsed is None:
            continue
        kind, elem_bits, width = parsed
        if kind in MEMORY_KINDS:
            continue
        unit = UNIT_OF.get(kind, "fp")
        busy[unit] = busy[unit] + value * instruction_seconds(kind, elem_bits, width, hw)
    compute = np.maximum(busy["fp"] + busy["call"], busy["divider"])
    compute = np.maximum(compute, front_end_seconds(t, hw))
    for key, value in t.items():
        parsed = instruction_key(key)
        if parsed is None or parsed[0] not in ("mem", "mem64"):
            continue
        _, elem_bits, width = parsed
        stores = t.get("instr_store" + key[len("instr_mem") :], 0.0)
        # a store weighs STORE_WEIGHT loads; the calibrated bandwidth is a triad's (2 loads and
        # 1 store a vector, counted as 3 x vector bytes)
        weight = levels[0].get("store_weight", STORE_WEIGHT)
        weighted = (value - stores + weight * stores) * 3.0 / (2.0 + weight)
        slots = slots + weighted * l1_seconds(elem_bits, width, hw)
    # vector accesses that may start off their vector's alignment cost split_load(width) more
    # aligned accesses each
    for key, value in t.items():
        parsed = instruction_key(key)
        if parsed is None or parsed[0] not in ("mis", "mis64"):
            continue
        _, elem_bits, width = parsed
        bits = width_bits(elem_bits, width, hw)
        slots = slots + value * split_cost(bits, hw) * l1_seconds(elem_bits, width, hw)
    chain = chain_totals(t, hw)[1] / hw["frequency"]
    # an accumulator kept in memory across an outer loop: each entry of the inner loop
    # reloads what the entry before stored, so the entries queue on forwarding + the adds
    carry_cycles = t.get("carry", 0.0) * hw.get("fp_latency", 0.0)
    carry = (carry_cycles + t.get("carry_steps", 0.0) * hw.get("store_forward", 0.0)) / hw["frequency"]
    l1 = slots + carry  # the stalled entries do not overlap their own loads and stores
    # the set-up of each entry of gcc's vector loops (`vector_setups` slots at `vector_entry`
    # seconds each, fitted by `irkit calibrate`; none without it) comes before the entry's work,
    # whatever bounds that: measured, an entry of one vector costs its set-up on top of its loads
    # and stores (L1-bound) and of its gathered lanes (compute-bound) alike
    setup = t.get("vector_setups", 0.0) * hw.get("vector_entry", 0.0)
    return compute + setup, chain + setup, l1 + setup


# Slots a core issues a cycle, sustained: 4, the decode width of the x86 cores this project has met
# (Zen 3 and Zen 4 decode 4 and dispatch 6; Golden Cove decodes 6 but a loop's taken branch ends
# its fetch block).  A model constant, not fitted.
ISSUE_WIDTH = 4.0
LOOP_CONTROL = 2  # a loop's own instructions a step: the increment, the compare-and-branch


def front_end_seconds(t, hw):
    """The front end's bound: a nest's slots (its operations, each taking one load as its memory
    operand, the loads left over, the stores, and each innermost step's loop control) issued
    ISSUE_WIDTH a cycle.  It binds tight scalar loops (an unscheduled matrix product's inner
    step: two loads, a multiply-add and the loop's two) and register tiles heavy in loads."""
    steps = sum(v for k, v in t.items() if k.startswith("loop_steps"))
    loads, stores, ops = 0.0, 0.0, 0.0
    for key, value in t.items():
        parsed = instruction_key(key)
        if parsed is None or parsed[0] in ("mis", "mis64"):
            continue
        if parsed[0] in ("store", "store64"):
            stores = stores + value
        elif parsed[0] in ("mem", "mem64"):
            loads = loads + value
        else:
            ops = ops + value
    loads = loads - stores  # `instr_mem` counts every access, stores among them
    # an operation takes a load as its memory operand (x86's micro-fusion: one slot for both)
    slots = np.maximum(ops, loads) + stores + LOOP_CONTROL * steps
    return slots / (ISSUE_WIDTH * hw["frequency"])


def instruction_total(t) -> object:
    """The instructions a nest issues (each core's), loads and stores included once."""
    total = 0.0
    for key, value in t.items():
        parsed = instruction_key(key)
        if parsed is None or parsed[0] in ("store", "store64", "mis", "mis64"):
            continue
        total = total + value
    return total


def latency_bound(t, dram_lines, hw, groups=()):
    """Seconds a core waits on DRAM when its out-of-order window, not the prefetchers, finds
    the misses: each window of `ooo_window` instructions holding one or more of its
    `dram_lines` fills waits one `dram { latency }` (the misses in one window overlap, those of
    the next wait for the window to move); no more waits than lines. Zero without the figures.

    `groups`: (lines, windows) of each group of buffers of a nest of several innermost loops
    (`wait_groups`): a group's lines wait only in the windows of the loops that touch them."""
    latency, window = hw.get("dram_latency"), hw.get("ooo_window")
    if not latency or not window:
        return 0.0
    waits = np.minimum(dram_lines, instruction_total(t) / window)
    if groups:
        waits = np.minimum(waits, sum(np.minimum(lines, windows) for lines, windows in groups))
    return waits * latency


def wait_groups_of(t, last_counts, kept) -> list[tuple]:
    """(DRAM lines, windows) of each of a nest's wait groups (`wait<g>_` terms); the lines of a
    group are its fills at the last level, less the share the last cache keeps between calls."""
    out = []
    for key, windows in t.items():
        if key.startswith(WAIT_PREFIX) and key.endswith("_windows"):
            lines = last_counts.get(key[: -len("_windows")] + "_lines", 0.0)
            out.append(((1.0 - kept) * lines, windows))
    return out


def exposed_dram(bandwidth, waits, latency_bound_core, overlap):
    """The part of a nest's DRAM time its core's own work does not hide.

    Two kinds of DRAM time: moving the lines (`bandwidth`: the transfers, and the demand misses
    of lines no prefetcher brings, a throughput measured on a core doing nothing else), which
    overlaps the core's arithmetic entirely, as ECM's data transfers overlap its in-core work;
    and waiting for them (`waits`: the windows of instructions that each wait a DRAM latency).
    Waiting beyond the transfer time is latency the out-of-order window did not cover:
    `1 - overlap` of it (`dram { overlap }`, fitted by `irkit calibrate` on a stream with much
    arithmetic) adds to the core's time.  A core bound by a latency of its own (a dependent
    chain, a strided walk waiting for its lines) issues no loads ahead while it waits, so all of
    its DRAM waits add at that share.  Measured on the Xeon model 167 guest: a fused blur at
    4096^2 runs at its arithmetic's time (3.3 ms, DRAM's transfers 2.8 ms hidden), elementwise's
    exp/sqrt stage and a transpose's strided walk at their sum.
    """
    beyond = np.where(latency_bound_core, waits, np.maximum(waits - bandwidth, 0.0))
    return (1.0 - overlap) * beyond


def loop_parts(t) -> list[dict]:
    """The counts of each innermost loop priced apart (`part<k>_` terms,
    irkit.perf.analysis.part_terms), and what no loop holds (the work between them) as one more
    part; empty when the nest has one innermost loop."""
    parts: dict[str, dict] = {}
    for key, value in t.items():
        if key.startswith(PART_PREFIX):
            k, _, term = key[len(PART_PREFIX) :].partition("_")
            parts.setdefault(k, {})[term] = value
    if not parts:
        return []
    rest = {key: value for key, value in t.items() if is_core_count(key)}
    for counts in parts.values():
        for key, value in counts.items():
            rest[key] = rest.get(key, 0.0) - value
    rest = {key: np.maximum(value, 0.0) for key, value in rest.items()}
    return [*parts.values(), rest]


def part_times(t, hw) -> list[tuple]:
    """(in-core seconds, L1 seconds) of each of `loop_parts(t)`: each at its own bottleneck."""
    out = []
    for counts in loop_parts(t):
        c, ch, l1 = in_core(counts, hw)
        out.append((np.maximum(contended(c, ch, chain_depth(counts, hw)), l1), l1))
    return out


def core_seconds(t, hw, totals, parts):
    """The nest's in-core time: where its innermost loops are priced apart (`parts`, from
    `part_times`), each runs at its own bottleneck and they add up; else the largest of the
    nest's (compute, chain, L1)."""
    whole = np.maximum(contended(totals[0], totals[1], chain_depth(t, hw)), totals[2])
    summed = 0.0
    for core, _ in parts:
        summed = summed + core
    return np.maximum(whole, summed)


def parts_with_memory(parts, exposed, memory):
    """The nest's time when its innermost loops (`parts`, from `part_times`) run one after the
    other, each with its share of the nest's memory time (by its share of the nest's L1 accesses):
    a loop that does little besides moving data waits for it, and the arithmetic of another loop
    cannot hide that.  Softmax in blocks of 2048 rows (Zen 3): its max, sum and divide passes each
    stream 8 MB from L3 while only the exp pass computes; priced as one nest, the passes' memory
    hid under the exp pass and the blocks of 2048 rows were predicted faster (1.94 ms) than those
    of 16 (2.05 ms), measured 2.5-3.2 against 2.2.  0 when the nest has one innermost loop."""
    if not parts:
        return 0.0
    total_l1 = sum(l1 for _, l1 in parts)
    if not np.any(np.asarray(total_l1) > 0.0):
        return 0.0
    out = 0.0
    for core, l1 in parts:
        share = l1 / np.where(total_l1 > 0.0, total_l1, 1.0)
        out = out + np.maximum(core + exposed * share, memory * share)
    return out


def price(nests, kernel_terms, env, hw, cold=False):
    """Seconds and breakdown for evaluated terms.

    `nests`: list of (name, core, fills, misses, last) where each function maps an
    environment to a dict of term values (`TERM_GROUPS`): `core` once, `fills`
    for every cache level (with that level's `cap`, `sets` and `ways` in the
    environment; the strided lines among them: a column walk's misses), `misses` (set-conflict
    lines) for L1 and the levels whose conflict misses cost more than the level above's, `last` (the
    lines no prefetch stream brings) for the last level; `hw`:
    the hardware dictionary (see
    `irkit.perf.hardware`).
    """
    levels = hw["levels"]
    line = float(hw["line"])
    lanes32 = hw["simd"] / 32.0
    base = dict(env)
    base.update({"line": line, "lanes32": lanes32, "lanes64": hw["simd"] / 64.0, "cores": float(hw["cores"])})
    base["window"] = float(hw.get("ooo_window", 0.0))
    base["huge_page"] = float(hw.get("huge_page", PAGE_BYTES))  # the pages large numpy arrays get
    base["streams"] = float(hw.get("dram_streams", DRAM_STREAMS))
    base["keep"] = 0.0  # caches replace their least recently used line unless `keep_lines` says
    base.update({key: float(hw.get(key, default)) for key, default in CONFLICT_SHARES.items()})
    kernel_wide = kernel_terms(base)
    kernel_bytes = kernel_wide["kernel_bytes"]
    overlap = {lv["name"]: lv["overlap"] for lv in levels[1:] if "overlap" in lv}
    if "dram_overlap" in hw:
        overlap["DRAM"] = hw["dram_overlap"]
    total = 0.0
    parts = {"compute": 0.0, "chain": 0.0, "L1": 0.0}
    for lv in levels[1:]:
        parts[lv["name"]] = 0.0
    parts["DRAM"] = 0.0
    parts["overhead"] = float(hw.get("call_overhead", 0.0))
    flops = 0.0
    dram_bytes = 0.0
    nest_rows = []
    # the share of the kernel the last cache keeps between calls (kernel-wide: once, not per nest)
    last_kept = None
    last = levels[-1]
    if not cold and last.get("measured_capacity") and last["effective_size"] < last["size"]:
        slower = hw.get("dram_bandwidth_core", hw["dram_bandwidth"])
        last_kept = resident_share(kernel_bytes, last["effective_size"], last["bandwidth"], slower)
    for name, core_terms, fill_terms, miss_terms, last_terms in nests:
        t = core_terms(base)
        active = np.maximum(t.get("active", 1.0), 1.0)
        compute, chain, l1 = in_core(t, hw)
        terms = {"compute": compute, "chain": chain, "L1": l1}
        strided = 0.0
        shared_fills: dict = {}  # what the fill terms share between the levels (LEVEL_SYMBOLS)
        shared_misses: dict = {}
        # traffic into each level from the one below it
        dram_exposed = 0.0
        for i, lv in enumerate(levels):
            below = levels[i + 1] if i + 1 < len(levels) else None
            shared = lv.get("shared", 1) > 1
            # the capacity a core can count on: the measured one (a VM's share of a host's L3)
            share = MEASURED_SHARE if lv.get("measured_capacity") else CACHE_SHARE
            cap_bytes = lv.get("effective_size", lv["size"]) * share / (active if shared else 1.0)
            sets = _sets(lv, line)
            level_env = dict(base, cap=cap_bytes / line, sets=sets, ways=lv["size"] / line / sets)
            level_env["keep"] = keep_lines(levels, i, hw, cap_bytes / line)
            tt = fill_terms(level_env, shared_fills)
            # a kernel this level holds whole moves and misses nothing here between warm calls
            warm = (not cold) & (kernel_bytes <= lv.get("effective_size", lv["size"]) * share)
            # ... and the last cache, where a sweep measured its end, keeps a share of a larger kernel
            kept = last_kept if below is None and last_kept is not None else np.where(warm, 1.0, 0.0)
            if i == 0:  # strided misses (a column read element by element) wait for their lines
                mm = {**miss_terms(level_env, shared_misses), "strided_lines": tt.get("strided_lines", 0.0)}
                serial = mm.get("serial_lines", 0.0) * hw.get("conflict_miss", 0.0)
                strided = np.maximum(mm.get("strided_lines", 0.0) * hw.get("strided_miss", 0.0), serial)
                strided = np.where(warm, 0.0, strided)
            else:
                kinds = deeper_kinds(i, hw)
                if kinds and not np.all(warm):
                    mm = {"strided_lines": tt.get("strided_lines", 0.0)}
                    if kinds != {"strided_miss"}:
                        mm.update(miss_terms(level_env, shared_misses))
                    strided = strided + (1.0 - kept) * deeper_misses(mm, i, hw)
            # fills, and write-backs of stored lines; streamed lines skip the caches and
            # reach DRAM once
            streamed = tt.get("streamed_lines", 0.0) / active
            fills = np.maximum(tt["lines"] - streamed, 0.0)
            writebacks = np.maximum(tt.get("stored_lines", 0.0) - streamed, 0.0)
            lines = fills + writebacks
            if below is None:
                writebacks = writebacks + streamed
                lines = lines + streamed
                moved = (1.0 - kept) * lines * line
                core_bw = hw.get("dram_bandwidth_core", hw["dram_bandwidth"])
                read = hw.get("dram_bandwidth_read_core")
                # one core's rates; all cores' in the same proportion
                scale = np.where(active > 1, hw["dram_bandwidth"] / core_bw, 1.0)
                share = (1.0 - kept) * line * active
                seconds = transfer_seconds(fills * share, writebacks * share, core_bw, read) / scale
                # lines no prefetch stream brings wait for DRAM one core's misses at a time: each
                # core's at `dram { unstreamed }` a line, when that is slower than the bandwidth
                last_counts = last_terms(level_env)
                untracked = (1.0 - kept) * np.minimum(last_counts.get("untracked_lines", 0.0), lines)
                seconds = np.maximum(seconds, untracked * hw.get("dram_unstreamed", 0.0))
                # a core busy between its loads has few of them in its window: each window's
                # worth of instructions waits about one DRAM latency (memory-level parallelism);
                # the register blocks the backend prefetches an iteration ahead are not waited for
                waited = np.minimum(fills, last_counts.get("waited_lines", fills))
                waits = latency_bound(t, (1.0 - kept) * waited, hw, wait_groups_of(t, last_counts, kept))
                dram_exposed = exposed_dram(seconds, waits, np.maximum(chain, strided) > compute,
                                            overlap.get("DRAM", MEMORY_OVERLAP))
                seconds = np.maximum(seconds, waits)
                terms["DRAM"] = seconds
                dram_bytes = dram_bytes + moved * active
            else:
                bw = below["bandwidth"]
                scale = 1.0  # a shared level's all-core limit, each rate in the same proportion
                if below.get("shared", 1) > 1 and below.get("bandwidth_all"):
                    scale = np.minimum(1.0, below["bandwidth_all"] / active / bw)
                per_line = np.where(warm, 0.0, line)  # bytes a line moves (none when the level holds the kernel)
                seconds = transfer_seconds(fills * per_line, writebacks * per_line, bw, below.get("bandwidth_read"))
                terms[below["name"]] = seconds / scale
        # TLB misses: the pages each access brings into a TLB of `tlb_entries` pages (the traffic
        # model again, with a page for a line and the TLB for a fully associative cache); each
        # waits `tlb_miss` for its page walk, on top of the strided misses it comes with
        tlb = 0.0
        entries = hw.get("tlb_entries")
        if entries and hw.get("tlb_miss"):
            page_env = dict(base, line=PAGE_BYTES, cap=float(entries), sets=1.0, ways=float(entries))
            pages = fill_terms(page_env, shared_fills)["lines"]
            resident = (not cold) & (kernel_bytes <= entries * PAGE_BYTES)
            tlb = np.where(resident, 0.0, pages) * hw["tlb_miss"]
        terms["chain"] = np.maximum(terms["chain"], strided + tlb)  # latencies: the longer one sets the pace
        apart = part_times(t, hw)  # the nest's innermost loops, each priced apart (none for one loop)
        core = core_seconds(t, hw, (terms["compute"], terms["chain"], terms["L1"]), apart)
        # ECM-style composition: each level's transfer time hides under the core's work by that
        # level's overlap (1: fully, a roofline; 0: not at all, ECM's non-overlapping levels); what
        # each level leaves unhidden adds to the core's time -- a line from L3 crosses L3 -> L2
        # and L2 -> L1 in turn, as ECM sums its transfers -- and no level can be faster than its own.
        memory = 0.0
        exposed = 0.0
        for key, v in terms.items():
            if key in ("compute", "chain", "L1"):
                continue
            memory = np.maximum(memory, v)
            hidden = overlap.get(key, MEMORY_OVERLAP)
            exposed = exposed + (dram_exposed if key == "DRAM" else (1.0 - hidden) * v)
        nest_time = np.maximum(np.maximum(core + exposed, memory), parts_with_memory(apart, exposed, memory))
        overhead = t.get("regions", 0.0) * hw.get("parallel_overhead", 0.0)
        nest_time = nest_time + overhead
        total = total + nest_time
        for k, v in terms.items():
            parts[k] = parts.get(k, 0.0) + v
        parts["overhead"] = parts["overhead"] + overhead
        flops = flops + t.get("flops", 0.0)
        nest_rows.append({"nest": name, "seconds": nest_time, **terms, "overhead": overhead})
    total = total + float(hw.get("call_overhead", 0.0))
    # fresh pages of large temporaries fault at their first write, on the cores that write them
    faults = kernel_wide.get("fresh_pages", 0.0) * hw.get("page_fault", 0.0) / float(hw["cores"])
    total = total + faults
    parts["overhead"] = parts["overhead"] + faults
    return {"seconds": total, "breakdown": parts, "flops": flops, "dram_bytes": dram_bytes, "nests": nest_rows}
