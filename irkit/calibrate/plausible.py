"""Calibration that checks itself: the written figures derived from the raw ones, and checked.

Every figure `irkit calibrate` writes is checked against a second way of
measuring it or a physical bound before it is written (`check`).  A figure
that fails is measured again (`irkit.calibrate.checked`); one that still
fails is left out with a warning naming it, never written wrong.  These
checks are tighter than the description checker's
(`irkit.checks.hardware_bounds`), which refuses only what no machine has:
here a figure outside them is measured again, which costs a second.

`derive` turns the steps' raw results into the written values (base units;
latencies in cycles), so a test can inject raw measurements (a 20 GHz
clock) and see what would be written.

**The clock** (`frequency`) is a chain of dependent 64-bit imuls at 3
cycles each (x86-64; elsewhere a chain of register adds at 1 cycle).  It
must be within 0.3-7 GHz, within 0.25-4 x every clock the system states
(the TSC's rate when `constant_tsc`, /proc/cpuinfo "cpu MHz", cpufreq's
`cpuinfo_max_freq` and `base_frequency`: a VM states the nominal clock, a
core turbos up to about 3.6 x its nominal one on low-power parts), and at
least one of its two cross-checks must agree: the clock from dependent
register adds within 10%, or an L1 pointer chase at 3-6 cycles a load (4-5
on current cores) -- a clock that disagrees with both is not a clock.
**FMA**: one core's f32 peak over clock x lanes x 2 flops must be within
0.6-2.3 (1 or 2 FMA units, an AVX-512 clock offset, the 15% a noisy trial
loses); each narrower width within 0.4-2.3; f64 per instruction within
0.7-1.4 x f32's; all cores at most 1.15 x the cores x one core.
**Latencies**: an f32/f64 add 1.6-6 cycles (2 on Zen 5, 3-4 elsewhere), store forwarding 3-20 cycles, a
strided miss 1-200 cycles, a conflict miss 2-400 cycles.  **Throughputs**
of division, square root and exp: at most clock x lanes x 2 x 1.15 and at
least one result every 1000 cycles.  **Bandwidths**: L1 at most clock x
(simd / 8) x 4 accesses x 1.15; a narrower L1 triad at most 1.25 x the next
wider; each level at most 1.1 x the level above (DRAM's one-core figure
against the last cache, DRAM's all-core one against its `bandwidth_all`); a
read-only stream's (`bandwidth_read`, DRAM's `bandwidth_read_core`)
0.5-3 x its level's triad.
**Capacities**: a private level's effective size at least half its reported
size.  `docs/calibrate.md` has the table.
"""

from __future__ import annotations

import math
import platform
from dataclasses import dataclass, field

from irkit.calibrate import sweep
from irkit.calibrate.detect import CacheLevel, CpuFreq
from irkit.calibrate.kernels import width_name

GHZ = 1e9
CLOCK_RANGE = (0.3 * GHZ, 7.0 * GHZ)
REFERENCE_RATIO = (0.25, 4.0)  # measured clock over a stated one
CROSS_CHECK = 0.10  # the register-add clock within this of the imul clock
CHASE_CYCLES = (3.0, 6.0)  # an L1 load-to-use in cycles
FMA_RATIO = (0.6, 2.3)  # flops_f32 / (clock x lanes x 2): 1 or 2 FMA units
WIDTH_RATIO = (0.4, 2.3)
F64_PER_INSTRUCTION = (0.7, 1.4)
MARGIN = 1.15
ALL_CORES = 1.15
UNARY_MIN_PER_CYCLE = 1e-3
# A read-only stream's rate over the same level's triad's (both in the bytes of the lines they move):
# at least the triad's fills alone (3 of its 4 lines: 0.75, less a noisy trial), at most what a
# write-back as dear as a few fills leaves (the Zen 4 guest's DRAM: 1.46)
READ_RATIO = (0.5, 3.0)
FP_LATENCY = (1.6, 6.0)  # Zen 5 adds in 2 cycles; 1.6 leaves the clock's own error room
STORE_FORWARD = (3.0, 20.0)
FMA_LATENCY = (2.5, 8.0)  # x86 FMAs: 4 cycles (Intel since Skylake, Zen 3+), 5 on older cores
STRIDED_MISS = (1.0, 200.0)
CONFLICT_MISS = (2.0, 400.0)
OVERHEADS = {  # seconds
    "page_fault": (50e-9, 100e-6),
    "parallel_overhead": (20e-9, 0.1),  # a busy host's fork/join waits for a time slice: 8 ms seen
    "call_overhead": (50e-9, 1e-3),
}
DRAM_LATENCY = (30e-9, 2e-6)  # seconds (the description checker's bound is 2 us too)
L1_ACCESSES = 4  # full-width accesses a cycle
NARROWER = 1.25  # a narrower L1 triad over the next wider one
ORDER = 1.1  # a level over the level above it
NOISE = 1.5  # beyond this an inverted pair is refused by the description checker too
PRIVATE_EFFECTIVE = 0.5  # a private level's effective size over its reported one

CLOCK_STEPS = ("clock_imul", "clock_add", "clock_chase", "tsc")


@dataclass
class Context:
    """What the checks compare the figures with: the build's widths, the threads, the stated clocks."""

    widths: list[int]  # the build's vector widths in bits, widest first (32: scalar)
    threads: int
    cpus: int
    caches: list[CacheLevel]
    cpuinfo_hz: float | None = None  # /proc/cpuinfo "cpu MHz"
    cpufreq: CpuFreq = field(default_factory=CpuFreq)
    x86: bool = field(default_factory=lambda: platform.machine() in ("x86_64", "AMD64", "i686", "i386"))

    @property
    def simd(self) -> int:
        return self.widths[0]


@dataclass
class Problem:
    """A figure that fails a check: which, why, and what to measure again."""

    figure: str  # the written value's key (`frequency`, `flops_f32_256`, `L2.bandwidth`)
    message: str
    again: tuple[str, ...]  # steps to run again
    hard: bool = True  # false: within the description checker's noise margin (a required figure may stay)


# ------------------------------------------------------------------ derived values

CYCLE_FIGURES = ("fp_latency", "fp_latency_f64", "fma_latency", "store_forward")
COPIED = (
    "flops_f32", "flops_f64", "flops_f32_all", "flops_f64_all",
    *(f"flops_{t}_{n}" for t in ("f32", "f64") for n in ("512", "256", "128", "scalar")),
    *(f"{op}_{t}" for op in ("div", "sqrt", "exp", "libm_exp") for t in ("f32", "f64")),
    *(f"{op}_{t}_scalar" for op in ("div", "sqrt") for t in ("f32", "f64")),
    "strided_miss", "conflict_miss", "page_fault", "parallel_overhead", "call_overhead",
    "clock_imul", "clock_add", "tsc", "dram.latency",
)  # fmt: skip


def primary_clock(ctx: Context) -> str:
    """The step whose clock is written: imuls on x86-64, register adds elsewhere."""
    return "clock_imul" if ctx.x86 else "clock_add"


def derive(results: dict, ctx: Context, clock: float | None = None) -> dict[str, float]:
    """The written values (base units, latencies in cycles) from the steps' raw results.

    `results` maps step keys to `irkit.calibrate.measure.Result`s; `clock`
    overrides the measured clock (a fallback to a stated one).
    """
    values: dict[str, float] = {}
    for key, result in results.items():
        if key in COPIED or ".bandwidth" in key:
            values[key] = result.value
    frequency = clock if clock is not None else getattr(results.get(primary_clock(ctx)), "value", None)
    if frequency:
        values["frequency"] = frequency
        if "clock_chase" in results:
            values["chase_cycles"] = results["clock_chase"].value * frequency
        for key in CYCLE_FIGURES:
            if key in results:
                values[key] = results[key].value * frequency
        if "store_forward" in values:
            values["store_forward"] -= values.get("fp_latency", 0.0)
    for dtype in ("f32", "f64"):
        if f"flops_{dtype}" in values and ctx.widths:
            values[f"flops_{dtype}_{width_name(ctx.simd)}"] = values[f"flops_{dtype}"]
    if "sweep" in results:
        values["dram.bandwidth_core"] = results["sweep"].value
        for cap in sweep.effective_sizes(results["sweep"].curve, ctx.caches):
            if cap.effective:
                values[f"{cap.level}.effective_size"] = float(cap.effective)
    return values


# ------------------------------------------------------------------ checks


def _lanes(bits: int, dtype: str) -> int:
    return max(1, bits // (32 if dtype == "f32" else 64))


def _g(value: float) -> str:
    return f"{value / GHZ:.4g} GHz"


def stated_clocks(values: dict[str, float], ctx: Context) -> list[tuple[str, float]]:
    """(where, Hz) of every clock the system states: the TSC's measured rate, cpuinfo, cpufreq."""
    out = []
    if values.get("tsc"):
        out.append(("the TSC", values["tsc"]))
    if ctx.cpuinfo_hz:
        out.append(("/proc/cpuinfo 'cpu MHz'", ctx.cpuinfo_hz))
    if ctx.cpufreq.max:
        out.append(("cpufreq cpuinfo_max_freq", ctx.cpufreq.max))
    if ctx.cpufreq.base:
        out.append(("cpufreq base_frequency", ctx.cpufreq.base))
    return out


def clock_problems(values: dict[str, float], ctx: Context) -> list[Problem]:
    f = values.get("frequency")
    if f is None:
        return []
    out = []
    name = "dependent imuls" if ctx.x86 else "dependent register adds"
    if not CLOCK_RANGE[0] <= f <= CLOCK_RANGE[1]:
        out.append(Problem("frequency", f"the clock from {name}, {_g(f)}, is outside 0.3-7 GHz", CLOCK_STEPS))
    for where, hz in stated_clocks(values, ctx):
        ratio = f / hz
        if not REFERENCE_RATIO[0] <= ratio <= REFERENCE_RATIO[1]:
            out.append(
                Problem(
                    "frequency",
                    f"the clock from {name}, {_g(f)}, is {ratio:.2f} x what {where} states ({_g(hz)}; "
                    f"0.25-4 x is plausible)",
                    CLOCK_STEPS,
                )
            )
    agree = []
    if ctx.x86 and values.get("clock_add"):
        agree.append(abs(values["clock_add"] / f - 1) <= CROSS_CHECK)
    if values.get("chase_cycles"):
        agree.append(CHASE_CYCLES[0] <= values["chase_cycles"] <= CHASE_CYCLES[1])
    if agree and not any(agree):
        add = f"register adds read {_g(values['clock_add'])}" if ctx.x86 and values.get("clock_add") else ""
        chase = f"an L1 load takes {values['chase_cycles']:.2f} cycles of it" if values.get("chase_cycles") else ""
        both = " and ".join(x for x in (add, chase) if x)
        out.append(Problem("frequency", f"the clock from {name}, {_g(f)}, disagrees with both cross-checks: {both}", CLOCK_STEPS))
    return out


def compute_problems(values: dict[str, float], ctx: Context) -> list[Problem]:
    f = values.get("frequency")
    out: list[Problem] = []
    if not f:
        return out
    for dtype in ("f32", "f64"):
        full = values.get(f"flops_{dtype}")
        if full is not None and dtype == "f32":
            r = full / (f * _lanes(ctx.simd, dtype) * 2)
            if not FMA_RATIO[0] <= r <= FMA_RATIO[1]:
                out.append(
                    Problem(
                        "flops_f32",
                        f"flops_f32 {full / 1e9:.4g} GFLOP/s is {r:.2f} x clock x {_lanes(ctx.simd, dtype)} lanes x 2 "
                        "(1 or 2 FMA units: 0.6-2.3)",
                        ("flops_f32", *CLOCK_STEPS),
                    )
                )
        for bits in ctx.widths[1:]:
            key = f"flops_{dtype}_{width_name(bits)}"
            v = values.get(key)
            if v is None:
                continue
            r = v / (f * _lanes(bits, dtype) * 2)
            if not WIDTH_RATIO[0] <= r <= WIDTH_RATIO[1]:
                out.append(
                    Problem(key, f"{key} {v / 1e9:.4g} GFLOP/s is {r:.2f} x clock x {_lanes(bits, dtype)} lanes x 2 (0.4-2.3)", (key,))
                )
        every, one = values.get(f"flops_{dtype}_all"), values.get(f"flops_{dtype}")
        cores = min(ctx.threads, ctx.cpus or ctx.threads)
        if every is not None and one is not None and every > ALL_CORES * cores * one:
            out.append(
                Problem(
                    f"flops_{dtype}_all",
                    f"flops_{dtype}_all {every / 1e9:.4g} GFLOP/s is more than {cores} cores x one core's {one / 1e9:.4g}",
                    (f"flops_{dtype}_all", f"flops_{dtype}"),
                )
            )
    failed = {p.figure for p in out}
    for suffix, bits in [("", ctx.simd)] + [(f"_{width_name(b)}", b) for b in ctx.widths[1:]]:
        f32, f64 = values.get(f"flops_f32{suffix}"), values.get(f"flops_f64{suffix}")
        if f32 and f64 and f"flops_f32{suffix}" not in failed:  # f64 is judged against an f32 that holds
            ratio = (f64 / _lanes(bits, "f64")) / (f32 / _lanes(bits, "f32"))
            if not F64_PER_INSTRUCTION[0] <= ratio <= F64_PER_INSTRUCTION[1]:
                key = f"flops_f64{suffix}"
                out.append(
                    Problem(
                        key,
                        f"{key} {f64 / 1e9:.4g} GFLOP/s is {ratio:.2f} x flops_f32{suffix} per instruction (an f64 FMA "
                        "issues like an f32 one: 0.7-1.4)",
                        (key, f"flops_f32{suffix}"),
                    )
                )
    for dtype in ("f32", "f64"):
        lanes = _lanes(ctx.simd, dtype)
        for op in ("div", "sqrt", "exp", "libm_exp"):
            key = f"{op}_{dtype}"
            v = values.get(key)
            if v is None:
                continue
            if v > f * lanes * 2 * MARGIN or v < f * UNARY_MIN_PER_CYCLE:
                out.append(
                    Problem(
                        key,
                        f"{key} {v / 1e9:.4g} G/s is {v / f:.3g} results a cycle (plausible: 0.001 to 2 x {lanes} lanes)",
                        (key,),
                    )
                )
    return out


def latency_problems(values: dict[str, float], ctx: Context) -> list[Problem]:
    out = []
    bounds = {
        "fp_latency": (FP_LATENCY, "an f32 add"),
        "fp_latency_f64": (FP_LATENCY, "an f64 add"),
        "fma_latency": (FMA_LATENCY, "an f32 FMA"),
        "store_forward": (STORE_FORWARD, "store-to-load forwarding"),
    }
    for key, ((lo, hi), what) in bounds.items():
        v = values.get(key)
        if v is not None and not lo <= v <= hi:
            again = (key, "fp_latency") if key == "store_forward" else (key,)
            out.append(Problem(key, f"{key} {v:.3g} cycles: {what} takes {lo:g}-{hi:g} cycles", again))
    f = values.get("frequency")
    for key, (lo, hi) in (("strided_miss", STRIDED_MISS), ("conflict_miss", CONFLICT_MISS)):
        v = values.get(key)
        if v is not None and f and not lo <= v * f <= hi:
            out.append(Problem(key, f"{key} {v * 1e9:.3g} ns is {v * f:.3g} cycles (plausible: {lo:g}-{hi:g})", (key,)))
    for key, (lo, hi) in OVERHEADS.items():
        v = values.get(key)
        if v is not None and not lo <= v <= hi:
            out.append(Problem(key, f"{key} {v * 1e6:.3g} us is outside {lo * 1e6:g}-{hi * 1e6:g} us", (key,)))
    v = values.get("dram.latency")
    lo, hi = DRAM_LATENCY
    if v is not None and not lo <= v <= hi:
        out.append(
            Problem(
                "dram.latency",
                f"dram.latency {v * 1e9:.3g} ns is outside {lo * 1e9:g}-{hi * 1e9:g} ns (a DRAM access: "
                "tens to hundreds of ns; less, a cache answered)",
                ("dram.latency",),
            )
        )
    return out


def sweep_steps(ctx: Context) -> tuple[str, ...]:
    """The sweep and the steps whose footprints come from it (measured again together)."""
    levels = [f"{c.name}.bandwidth" for c in ctx.caches] + [f"{c.name}.bandwidth_all" for c in ctx.caches if c.shared > 1]
    return ("sweep", *levels)


def memory_problems(values: dict[str, float], ctx: Context) -> list[Problem]:
    out = []
    names = [c.name for c in ctx.caches]
    f = values.get("frequency")
    l1 = values.get(f"{names[0]}.bandwidth") if names else None
    if l1 is not None and f:
        peak = f * ctx.simd / 8 * L1_ACCESSES * MARGIN
        if l1 > peak:
            out.append(
                Problem(
                    f"{names[0]}.bandwidth",
                    f"{names[0]} bandwidth {l1 / 1e9:.4g} GB/s is more than {L1_ACCESSES} accesses of {ctx.simd} bits a cycle",
                    (f"{names[0]}.bandwidth",),
                )
            )
    wider_key, wider = f"{names[0]}.bandwidth", l1
    for bits in ctx.widths[1:]:
        key = f"{names[0]}.bandwidth_{width_name(bits)}"
        v = values.get(key)
        if v is None:
            continue
        if wider is not None and v > NARROWER * wider:
            out.append(Problem(key, f"{key} {v / 1e9:.4g} GB/s is {v / wider:.2f} x {wider_key}", (key, wider_key)))
        wider_key, wider = key, v
    pairs = [(f"{a}.bandwidth", f"{b}.bandwidth") for a, b in zip(names, names[1:])]
    if names:
        pairs.append((f"{names[-1]}.bandwidth", "dram.bandwidth_core"))
        pairs.append((f"{names[-1]}.bandwidth_all", "dram.bandwidth"))
    for upper, lower in pairs:
        a, b = values.get(upper), values.get(lower)
        if a is None or b is None or b <= ORDER * a:
            continue
        again = sweep_steps(ctx) if lower == "dram.bandwidth_core" else (upper, lower)
        out.append(
            Problem(
                upper,
                f"{lower} {b / 1e9:.4g} GB/s is {b / a:.2f} x {upper} {a / 1e9:.4g} GB/s: a level further out is slower",
                again,
                hard=b > NOISE * a,
            )
        )
    reads = [(f"{c.name}.bandwidth_read", f"{c.name}.bandwidth") for c in ctx.caches[1:]]
    for read, triad in [*reads, ("dram.bandwidth_read_core", "dram.bandwidth_core")]:
        r, t = values.get(read), values.get(triad)
        if r is not None and t is not None and not READ_RATIO[0] <= r / t <= READ_RATIO[1]:
            out.append(
                Problem(
                    read,
                    f"{read} {r / 1e9:.4g} GB/s is {r / t:.2f} x {triad} {t / 1e9:.4g} GB/s (plausible: "
                    f"{READ_RATIO[0]:g}-{READ_RATIO[1]:g}: the triad's three fills alone take at most its time, "
                    "and a write-back costs a few fills at most)",
                    (read,),
                )
            )
    core, every = values.get("dram.bandwidth_core"), values.get("dram.bandwidth")
    if core is not None and every is not None and core > NOISE * every:
        # One core cannot get more than all of them: one of the two was measured on a busy host.
        # Both are measured again; if it persists the one-core figure (not required) is left out,
        # never written for the description checker to refuse.
        out.append(
            Problem(
                "dram.bandwidth_core",
                f"dram.bandwidth_core {core / 1e9:.4g} GB/s is {core / every:.2f} x the all-core dram.bandwidth "
                f"{every / 1e9:.4g} GB/s: one core gets at most all of it",
                ("dram.bandwidth", *sweep_steps(ctx)),
            )
        )
    for c in ctx.caches:
        key = f"{c.name}.effective_size"
        v = values.get(key)
        if v is not None and c.shared <= 1 and v < PRIVATE_EFFECTIVE * c.size:
            out.append(
                Problem(
                    key, f"{key} {v / 1024:.0f} KiB is less than half the private level's {c.size // 1024} KiB",
                    sweep_steps(ctx),
                )  # fmt: skip
            )
    return out


def check(values: dict[str, float], ctx: Context) -> list[Problem]:
    """Every figure of `values` (as `derive` makes them) that fails its check."""
    return [
        *clock_problems(values, ctx),
        *compute_problems(values, ctx),
        *latency_problems(values, ctx),
        *memory_problems(values, ctx),
    ]


def dependents(figure: str, ctx: Context) -> list[str]:
    """Figures derived from `figure`, which go with it when it is left out."""
    if figure in ("flops_f32", "flops_f64") and ctx.widths:
        return [f"{figure}_{width_name(ctx.simd)}"]
    if figure == "fp_latency":
        return ["store_forward"]  # measured less one add
    return []


def required(ctx: Context) -> set[str]:
    """Figures a description cannot leave out."""
    return {"frequency", "dram.bandwidth", *(f"{c.name}.bandwidth" for c in ctx.caches)}


def clock_summary(values: dict[str, float], ctx: Context, source: str = "") -> str:
    """One comment line on where `frequency` came from and how it agreed with the rest."""
    f = values.get("frequency")
    if f is None:
        return ""
    parts = []
    if source:
        parts.append(f"frequency {_g(f)} is {source}")
    else:
        parts.append(f"frequency {_g(f)} from {'dependent imuls (3 cycles each)' if ctx.x86 else 'dependent register adds'}")
    checks = []
    if ctx.x86 and values.get("clock_add"):
        checks.append(f"register adds {_g(values['clock_add'])}")
    if values.get("chase_cycles"):
        checks.append(f"an L1 pointer chase {values['chase_cycles']:.2f} cycles a load")
    if checks:
        parts.append("cross-checks: " + ", ".join(checks))
    stated = stated_clocks(values, ctx)
    if stated:
        parts.append("stated: " + ", ".join(f"{w} {_g(hz)}" for w, hz in stated))
        if not source and all(abs(f / hz - 1) > 0.05 for _, hz in stated):
            parts.append(
                "the stated clocks are nominal (a VM states its host's nominal clock, a CPU its base), not the clock "
                "a busy core runs at: the measured one is kept, since kernels run at it"
            )
    return "; ".join(parts)


def fallback_clock(values: dict[str, float], ctx: Context) -> tuple[str, float] | None:
    """A clock to write when the measured one fails: the first stated one within 0.3-7 GHz."""
    for where, hz in stated_clocks(values, ctx):
        if CLOCK_RANGE[0] <= hz <= CLOCK_RANGE[1] and math.isfinite(hz):
            return where, hz
    return None
