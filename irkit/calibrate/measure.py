"""The measurement driver: which benchmark runs at which size, how long, and what is kept.

**The plan** (`Calibrator.steps`): the clock three ways and the TSC; one
core's FMA throughput at every vector width of the build, f32 and f64;
division, square root and exp, f32 and f64; the latencies; the working-set
sweep (effective capacities, and DRAM beyond them); each cache level's
bandwidth inside its effective capacity (L1 at every width); then, after the
threads settle, the all-core figures; then the call and page-fault costs.
Each step measures raw figures; `irkit.calibrate.plausible` derives the
written ones (cycles from the clock) and checks them, and
`irkit.calibrate.checked` measures again what fails.

**Sizes from the caches.**  A level's bandwidth is measured on STREAM-triad
arrays whose total footprint (3 arrays) is half the level: what one core
can keep there with room for the stack, the page tables and the previous
level's copies.  "The level" is its effective capacity when the sweep found
one (`irkit.calibrate.sweep`), else its reported size.  For a level shared
by N CPUs the one-core footprint is half of one core's share (size / N / 2),
and all cores together (`bandwidth_all`) each run on their own arrays of
that size.  When a share would fit in the level before it (a large private
L2 under a small L3 slice), the footprint grows to twice the previous
level, within the level's half.  DRAM is measured on arrays of at least 4
times all the last-level cache instances the threads see together (at most
half the available memory), split between the threads for the all-core
figure; the one-core DRAM figure is the sweep's last point.

**Counting.**  The triad `a[i] = b[i] * s + c[i]` on f32 is counted the
way the cost model counts traffic.  In L1 that is the bytes of the loads
and stores, 12 an element (STREAM's convention); from L2, L3 and DRAM it is
the lines the caches move, 16 bytes an element: a store that misses first
reads its line (write-allocate) and later writes it back.  The sweep's
curve counts 12 throughout.  An FMA counts 2 flops a lane; division,
square root and exp count one lane result each.

**Timing.**  Each benchmark loops `reps` times inside one C call.  `reps`
is found by probing (doubling a short run until it lasts a quarter of the
target) so that one timed trial takes `target` seconds (25 ms, 4 ms with
`--quick`); then one call runs `trials` trials (9, 3 with `--quick`; 5 for
the cross-checks and the narrower widths).  Throughputs keep the best trial
(on a shared host noise only slows a run down), overheads the median (they
are typical costs, and their best is a lucky cache state).  Every sample is
kept for `--json`.

**All cores.**  The all-core steps run last, after `settle` has kept every
thread busy until they run at one thread's speed (a guest kernel may pack
threads onto few virtual CPUs until the load persists).  The all-core FMA
figure is expected to reach threads x one core; while it does not (another
process holds a CPU), its trials are repeated for up to `patience` seconds
(3 s, 1.5 s with `--quick`) to catch a quiet moment.  `irkit calibrate`
warns when all cores still stay below 0.75 x that.
"""

from __future__ import annotations

import ctypes
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TextIO

from irkit.calibrate import CalibrateError, sweep
from irkit.calibrate.detect import CacheLevel, Host
from irkit.calibrate.kernels import (
    ADD_CYCLES,
    ARRAY,
    CHAIN,
    CHAINS,
    CHASE_L1_BYTES,
    IMUL_CYCLES,
    LATENCY_STEPS,
    Library,
    width_name,
)
from irkit.calibrate.writer import approx_bytes, describe

TRIAD_BYTES = 12  # bytes per triad element in L1: 2 loads + 1 store of f32
PAGE_FAULT_BYTES = 64 << 20  # a temporary this large is fresh memory at every call (glibc mmaps it)
TRIAD_LINE_BYTES = 16  # beyond L1: b and c filled, a filled and written back
READ_BYTES = 12  # a read-only stream over the triad's three arrays: three lines filled an element
TRIAD_ALIGN = 256  # elements: arrays are a whole number of these (1 KiB)
DRAM_FACTOR = 4  # DRAM arrays >= this many times the last-level caches
MIN_DRAM = 64 * 1024**2  # bytes: DRAM arrays at least this large anyway
CHASE_DRAM_MOST = 512 * 1024**2  # bytes: the DRAM latency's ring at most this large
TSC_SECONDS = 0.02  # the wall-clock interval the TSC is counted over


@dataclass(frozen=True)
class Settings:
    target: float  # seconds a timed trial should last
    trials: int  # timed trials per measurement
    calls: int  # calls timed for call_overhead
    settle_limit: float  # seconds at most to wait for the threads to spread over the cores
    patience: float  # seconds an all-core FMA measurement keeps trying to reach threads x one core
    brief_trials: int = 5  # trials of the cross-checks and the narrower widths
    sweep_target: float = 0.002  # seconds a trial of a sweep point lasts
    sweep_trials: int = 3


FULL = Settings(target=0.025, trials=9, calls=3000, settle_limit=3.0, patience=3.0)
QUICK = Settings(
    target=0.004, trials=3, calls=300, settle_limit=1.5, patience=1.5, brief_trials=2, sweep_target=0.001,
    sweep_trials=2,
)  # fmt: skip


@dataclass
class Result:
    """One measured figure (base units: FLOP/s, B/s, Hz, s)."""

    key: str  # the step it comes from: `flops_f32`, `L2.bandwidth`, `clock_imul`, `fp_latency` (seconds), ...
    label: str
    detail: str
    value: float
    family: str  # irkit.units family (rate, bandwidth, frequency, latency), or cycles (a latency in cycles)
    statistic: str  # best or median
    samples: list[float] = field(default_factory=list)
    reps: int = 0
    seconds: float = 0.0  # wall time of the step
    shown: str = ""  # what the progress line says, when not the value itself (a latency in cycles)
    curve: list[tuple[int, float]] = field(default_factory=list)  # the sweep: (footprint bytes, B/s)

    def as_json(self) -> dict:
        out = {
            "label": self.label,
            "detail": self.detail,
            "value": self.value,
            "unit": {"rate": "FLOP/s", "bandwidth": "B/s", "frequency": "Hz", "latency": "s", "cycles": "cycles"}[
                self.family
            ],
            "text": describe(self.value, self.family),
            "statistic": self.statistic,
            "samples": self.samples,
            "reps": self.reps,
            "seconds": round(self.seconds, 3),
        }
        if self.curve:
            out["curve"] = [{"footprint": f, "bandwidth": bw} for f, bw in self.curve]
        return out


def figure(key: str, value: float, family: str, label: str = "", **kw) -> Result:
    """A Result from a value alone (tests inject measurements with it)."""
    return Result(key, label or key, "", value, family, "best", [value], **kw)


@dataclass
class Step:
    key: str
    label: str
    detail: str | Callable[[], str]  # a callable when it depends on an earlier step (the sweep's sizes)
    run: Callable[[], Result | str]  # a figure, or a note (a step that measures nothing)

    @property
    def text(self) -> str:
        detail = self.detail() if callable(self.detail) else self.detail
        return f"{self.label}, {detail}" if detail else self.label


# ------------------------------------------------------------------ sizes


def triad_elements(footprint: int) -> int:
    """Elements per array for 3 f32 arrays of `footprint` bytes in all (a multiple of 256, at least 256)."""
    return max(TRIAD_ALIGN, footprint // TRIAD_BYTES // TRIAD_ALIGN * TRIAD_ALIGN)


def cache_footprints(caches: list[CacheLevel], threads: int) -> list[tuple[CacheLevel, int, int | None]]:
    """(level, one-core footprint, per-thread all-core footprint or None) for each level, in bytes.

    The all-core footprint is given for levels shared by more than one CPU.
    Pass levels whose `size` is the effective capacity to measure inside it.
    """
    out = []
    previous = 0
    for level in caches:
        half = level.size // 2
        one = half // level.shared if level.shared > 1 else half
        if one < 2 * previous:
            one = min(half, 2 * previous)
        every = None
        if level.shared > 1:
            sharers = max(1, min(level.shared, threads))
            every = half // sharers
            if every < 2 * previous:
                every = max(every, min(2 * previous, level.size * 3 // 4 // sharers))
        out.append((level, one, every))
        previous = level.size // level.shared if level.shared > 1 else level.size
    return out


def dram_footprint(caches: list[CacheLevel], threads: int, available: int | None) -> int:
    """Total bytes of the DRAM arrays: 4 x the last-level caches the threads see (their effective
    capacities once the sweep has found them), at least MIN_DRAM, within half the free memory."""
    if not caches:
        return MIN_DRAM
    last = caches[-1]
    instances = max(1, math.ceil(threads / last.shared))
    want = max(DRAM_FACTOR * last.size * instances, MIN_DRAM)
    if available:
        want = min(want, available // 2)
    return want


def arrays_text(n: int) -> str:
    """`3 x 85 KiB`: the triad's arrays of n f32 elements."""
    return f"3 x {approx_bytes(n * 4)}"


def host_widths(host: Host) -> list[int]:
    """The vector widths (bits, widest first, 32 scalar) the host's ISA has: what a native build measures."""
    widths = [128, 32]
    if "avx" in host.flags or "avx2" in host.flags:
        widths.insert(0, 256)
    if "avx512f" in host.flags:
        widths.insert(0, 512)
    return widths


# ------------------------------------------------------------------ progress


class Progress:
    """`[ 3/12] L2 bandwidth, 1 core, 3 x 85 KiB ... 310.2 GB/s` on a stream, one line per step.

    The label is written when the step starts and the figure when it ends, so a
    terminal shows what is running.  A step measured again (`again`) is
    written `  again: ...`, outside the numbering.
    """

    def __init__(self, stream: TextIO | None, total: int = 0):
        self.stream = stream
        self.total = total
        self.index = 0
        self.open = False  # a step has started and not finished

    def start(self, text: str) -> None:
        self.index += 1
        self.open = True
        if self.stream is not None:
            width = len(str(self.total))
            self.stream.write(f"[{self.index:>{width}}/{self.total}] {text} ... ")
            self.stream.flush()

    def again(self, text: str) -> None:
        self.open = True
        if self.stream is not None:
            self.stream.write(f"  again: {text} ... ")
            self.stream.flush()

    def note(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(f"  {text}\n")
            self.stream.flush()

    def finish(self, text: str) -> None:
        self.open = False
        if self.stream is not None:
            self.stream.write(text + "\n")
            self.stream.flush()

    def fail(self) -> None:
        """End an open step's line (before an error message)."""
        if self.open:
            self.finish("failed")


# ------------------------------------------------------------------ driver


def _doubles(n: int) -> ctypes.Array:
    return (ctypes.c_double * max(n, 1))()


class Calibrator:
    """Runs the microbenchmarks of `lib` on `host` with `settings`."""

    def __init__(self, host: Host, settings: Settings, lib: Library | None = None):
        self.host = host
        self.lib = lib  # set before the steps run; the plan (`steps`) needs only the host
        self.settings = settings
        self.threads = host.threads
        self.call_ctypes: float | None = None  # a call through irkit's runner, seconds (a side result)
        self.arrays: dict[str, int] = {}  # triad key -> elements per array (per thread)
        self.measured: dict[str, Result] = {}  # the figures measured so far, by key
        self.capacities: list[sweep.Capacity] = []  # the sweep's reading (empty before it ran)

    # ---- timing
    def _fit(self, probe: Callable[[int, int], list[float]], target: float) -> int:
        """Repetitions for a trial of about `target` seconds, from short probe runs (the faster of two)."""
        reps = 1
        while True:
            t = min(probe(reps, 2))
            if t >= target / 4 or reps >= 1 << 40:
                break
            grow = target / 4 / t if t > 0 else 64.0
            reps *= int(min(64.0, max(2.0, grow * 1.2)))
        return max(1, math.ceil(reps * target / t)) if t > 0 else reps

    def _times(
        self,
        call: Callable[[int, int], list[float]],
        probe: Callable[[int, int], list[float]] | None = None,
        trials: int | None = None,
        target: float | None = None,
    ) -> tuple[int, list[float]]:
        """(reps, seconds of each trial) with reps fitted to the target time.

        `probe` (default `call`) times the short runs that fit `reps`; the
        parallel benchmarks are probed on one thread, whose work per thread is
        the same, so that a slow start of the threads (see `settle`) does not
        pass for the work.
        """
        reps = self._fit(probe or call, target or self.settings.target)
        return reps, call(reps, trials or self.settings.trials)

    def settle(self) -> str:
        """Keep every thread busy until the threads run as fast as one thread alone (or a time limit).

        A guest kernel may pack runnable threads onto few virtual CPUs and
        spread them only under sustained load (Linux guests with vCPU packing
        take about half a second); an all-core figure measured before that is
        the packing, not the machine.  This runs the all-core FMA loop in 2 ms
        trials until the last ones take at most 1.25 x a single thread's time
        (times the threads per CPU, with more threads than CPUs), for at most
        `settle_limit` seconds.  Steady state is also what a
        benchmark of a kernel measures (`irkit run --bench` warms up first).
        """
        if self.threads == 1:
            return "1 thread, nothing to settle"
        fn = self.lib.lib.irkit_cal_fma_f32
        one, every = self._threaded(fn, 1), self._threaded(fn, self.threads)
        reps = self._fit(one, 0.002)
        # With more threads than CPUs, a CPU runs several threads one after another.
        alone = min(one(reps, 3)) * math.ceil(self.threads / (self.host.cpus or self.threads))
        start = time.perf_counter()
        while True:
            recent = statistics.median(every(reps, 10)[-5:])
            elapsed = time.perf_counter() - start
            if recent <= 1.25 * alone:
                return f"{self.threads} threads at full speed after {elapsed:.2f} s"
            if elapsed >= self.settings.settle_limit:
                return f"still {recent / alone:.1f} x slower than 1 thread after {elapsed:.1f} s; going on"

    @staticmethod
    def _plain(fn) -> Callable[[int, int], list[float]]:
        def call(reps: int, trials: int) -> list[float]:
            times, sink = _doubles(trials), ctypes.c_double()
            fn(reps, trials, times, ctypes.byref(sink))
            return list(times[:trials])

        return call

    def _threaded(self, fn, threads: int) -> Callable[[int, int], list[float]]:
        def call(reps: int, trials: int) -> list[float]:
            times, sink = _doubles(trials), ctypes.c_double()
            status = fn(reps, threads, trials, times, ctypes.byref(sink))
            if status is not None and status != 0:
                raise CalibrateError("a microbenchmark could not allocate its memory")
            return list(times[:trials])

        return call

    def _rate(
        self, key, label, detail, family, call, work_per_rep, probe=None, expect=None, trials=None, target=None
    ) -> Result:
        """Best rate of `work_per_rep` per repetition over the trials of one call.

        With `expect` (a rate the hardware should reach), calls repeat until a
        trial reaches 90% of it or `settings.patience` runs out: on a shared
        host other processes come and go, and a peak is measured in a quiet
        moment.
        """
        start = time.perf_counter()
        reps, times = self._times(call, probe, trials, target)
        samples = [reps * work_per_rep / t for t in times if t > 0]
        while expect and samples and max(samples) < 0.9 * expect:
            if time.perf_counter() - start >= self.settings.patience:
                break
            samples += [reps * work_per_rep / t for t in call(reps, self.settings.trials) if t > 0]
        if not samples:
            raise CalibrateError(f"{label}: the timer did not advance")
        result = Result(key, label, detail, max(samples), family, "best", samples, reps, time.perf_counter() - start)
        self.measured[key] = result
        return result

    def _latency(
        self, key: str, label: str, detail: str, call, steps: int, trials: int | None = None, target: float | None = None
    ) -> Result:
        """Seconds a step of a chain of `steps` dependent steps a repetition takes (the best trial).

        The progress line shows it in cycles of the clock measured before, when there is one;
        the written figure is derived after the clock is settled (`irkit.calibrate.plausible`)."""
        start = time.perf_counter()
        reps, times = self._times(call, trials=trials, target=target)
        samples = [t / (reps * steps) for t in times if t > 0]
        if not samples:
            raise CalibrateError(f"{label}: the timer did not advance")
        clock = self.measured.get("clock_imul") or self.measured.get("clock_add")
        best = min(samples)
        shown = f"{describe(best, 'latency')}" + (f" ({best * clock.value:.3g} cycles)" if clock else "")
        result = Result(
            key, label, detail, best, "latency", "best", samples, reps, time.perf_counter() - start, shown
        )  # fmt: skip
        self.measured[key] = result
        return result

    def fma_latency(self) -> Result:
        """Seconds of one dependent scalar f32 FMA: the step of an `o += a * b` chain gcc leaves
        scalar (the fold-left reductions it vectorises are priced by the fitted `fold_latency`)."""
        fn = self.lib.lib.irkit_cal_fma_latency_f32
        return self._latency(
            "fma_latency", "F32 FMA latency", f"a chain of {LATENCY_STEPS} dependent FMAs", self._plain(fn),
            LATENCY_STEPS, self.settings.brief_trials,
        )  # fmt: skip

    # ---- the clock
    # Chains are timed in short trials, many of them: on a host whose CPU another process shares,
    # the scheduler's slices are a few ms, and a trial within one slice runs at the full clock.
    CLOCK_TARGET = 0.002
    CLOCK_TRIALS = 15

    def clock(self, kind: str) -> Result:
        """The clock from a chain of dependent imuls (3 cycles each) or register adds (1 cycle each)."""
        fn = self.lib.lib.irkit_cal_imul if kind == "imul" else self.lib.lib.irkit_cal_addreg
        cycles = IMUL_CYCLES if kind == "imul" else ADD_CYCLES
        what = f"{CHAIN} dependent {'imuls' if kind == 'imul' else 'register adds'}, {cycles} cycle{'s' * (cycles > 1)} each"
        return self._rate(
            f"clock_{kind}", "clock", what, "frequency", self._plain(fn), CHAIN * cycles, trials=self.CLOCK_TRIALS,
            target=min(self.settings.target, self.CLOCK_TARGET),
        )  # fmt: skip

    def chase(self, key: str, label: str, nbytes: int, trials: int | None = None) -> Result:
        """Seconds a load of a pointer ring of `nbytes` in random order takes (its level's latency)."""
        fn = self.lib.lib.irkit_cal_chase

        def call(reps: int, trials: int) -> list[float]:
            times, sink = _doubles(trials), ctypes.c_double()
            if fn(nbytes, reps, trials, times, ctypes.byref(sink)) != 0:
                raise CalibrateError(f"{label}: cannot allocate {approx_bytes(nbytes)}")
            return list(times[:trials])

        return self._latency(
            key, label, f"a ring of {approx_bytes(nbytes)} in random order", call, CHAIN, trials,
            min(self.settings.target, self.CLOCK_TARGET) if trials else None,
        )  # fmt: skip

    def tsc(self) -> Result | str:
        """The TSC's rate over a wall-clock interval (x86 with `constant_tsc`: a fixed rate, usually the nominal clock)."""
        if "constant_tsc" not in self.host.flags:
            return "no constant_tsc flag: not a clock reference"
        start = time.perf_counter()
        fn = self.lib.lib.irkit_cal_tsc_rate
        samples = [float(fn(TSC_SECONDS)) for _ in range(2 if self.settings is QUICK else 3)]
        if not all(s > 0 for s in samples):
            return "no TSC on this architecture"
        value = statistics.median(samples)
        result = Result(
            "tsc", "TSC rate", f"rdtsc over {TSC_SECONDS * 1e3:.0f} ms", value, "frequency", "median", samples, 1,
            time.perf_counter() - start,
        )  # fmt: skip
        self.measured["tsc"] = result
        return result

    # ---- compute
    def widest(self) -> int:
        return self.lib.widths[0] if self.lib else host_widths(self.host)[0]

    def flops(self, dtype: str, threads: int, bits: int | None = None) -> Result | str:
        """One core's (or every thread's) FMA throughput at `bits` (None: the widest of the build)."""
        widest = self.widest()
        if bits is not None and bits not in self.lib.widths:
            return f"not in this build's ISA ({_march_text(self.lib)}): left out"
        if bits is not None and bits == widest:
            return f"the build's full width: flops_{dtype}"
        bits = bits or widest
        lane = 32 if dtype == "f32" else 64
        lanes = max(1, bits // lane)
        suffix = "" if bits == widest else f"_{width_name(bits)}"
        fn = getattr(self.lib.lib, f"irkit_cal_fma_{dtype}_{width_name(bits)}")
        key = f"flops_{dtype}{suffix}" + ("_all" if threads > 1 else "")
        label = f"{dtype.upper()} FMA, {width_name(bits)}{'-bit' if bits > 32 else ''}, {_cores(threads)}"
        detail = f"{CHAINS} chains x {lanes} lane{'s' * (lanes > 1)}"
        work = CHAINS * lanes * 2 * threads
        alone = self.measured.get(f"flops_{dtype}")
        # What the threads reach on separate cores: threads x one core, at most one thread a CPU.
        expect = alone.value * min(threads, self.host.cpus or threads) if alone and threads > 1 else None
        call, probe = self._threaded(fn, threads), self._threaded(fn, 1)
        trials = None if suffix == "" else self.settings.brief_trials
        return self._rate(key, label, detail, "rate", call, work, probe, expect, trials)

    def unary(self, name: str, dtype: str, what: str, scalar: bool = False) -> Result:
        suffix = "_scalar" if scalar else ""
        fn = getattr(self.lib.lib, f"irkit_cal_{name}_{dtype}{suffix}")
        detail = f"{ARRAY} {'scalar elements' if scalar else 'lanes'} in L1"
        trials = self.settings.trials if dtype == "f32" and not scalar else self.settings.brief_trials
        label = f"{dtype.upper()} {what}{', scalar' if scalar else ''}, 1 core"
        return self._rate(f"{name}_{dtype}{suffix}", label, detail, "rate", self._plain(fn), ARRAY, trials=trials)

    def fp_latency(self, dtype: str) -> Result:
        """Seconds of one dependent add (the step of an accumulation chain)."""
        key = "fp_latency" if dtype == "f32" else "fp_latency_f64"
        fn = getattr(self.lib.lib, f"irkit_cal_fp_latency_{dtype}")
        trials = None if dtype == "f32" else self.settings.brief_trials
        return self._latency(
            key, f"{dtype.upper()} add latency", f"a chain of {LATENCY_STEPS} dependent adds", self._plain(fn),
            LATENCY_STEPS, trials,
        )  # fmt: skip

    def store_forward(self) -> Result:
        """Seconds an entry of an inner loop takes when it waits for the vector the entry before
        stored (an accumulator kept in memory across an outer loop); the written figure is that in
        cycles less one add (`irkit.calibrate.plausible.derive`)."""
        from irkit.calibrate.kernels import FORWARD_STEPS

        return self._latency(
            "store_forward", "store-to-load forwarding", "a vector accumulated in memory across an outer loop",
            self._plain(self.lib.lib.irkit_cal_store_forward), FORWARD_STEPS,
        )  # fmt: skip

    # ---- bandwidths
    def triad(self, key: str, label: str, n: int, threads: int) -> Result:
        def runner(threads: int) -> Callable[[int, int], list[float]]:
            def run(reps: int, trials: int) -> list[float]:
                times, sink = _doubles(trials), ctypes.c_double()
                status = self.lib.lib.irkit_cal_triad(n, reps, threads, trials, times, ctypes.byref(sink))
                if status != 0:
                    raise CalibrateError(f"{label}: cannot allocate {arrays_text(n)} per thread")
                return list(times[:trials])

            return run

        detail = arrays_text(n) + (f" per thread, {threads} threads" if threads > 1 else "")
        per_element = TRIAD_BYTES if key.startswith("L1") else TRIAD_LINE_BYTES
        return self._rate(key, label, detail, "bandwidth", runner(threads), per_element * n * threads, runner(1))

    def triad_width(self, bits: int) -> Result | str:
        """One core's L1 triad with explicit vectors of `bits` (32: scalar)."""
        if bits not in self.lib.widths:
            return f"not in this build's ISA ({_march_text(self.lib)}): left out"
        if bits == self.widest():
            return "the build's full width: L1 bandwidth"
        key = f"L1.bandwidth_{width_name(bits)}"
        n = self.arrays.get("L1.bandwidth") or triad_elements(self.host.caches[0].size // 2)
        n = max(64, n // 64 * 64)
        fn = self.lib.lib.irkit_cal_triad_w

        def run(reps: int, trials: int) -> list[float]:
            times, sink = _doubles(trials), ctypes.c_double()
            if fn(bits, n, reps, trials, times, ctypes.byref(sink)) != 0:
                raise CalibrateError(f"L1 triad at {bits} bits: cannot run")
            return list(times[:trials])

        label = f"L1 bandwidth, {width_name(bits)}{'-bit vectors' if bits > 32 else ' (not vectorised)'}"
        return self._rate(
            key, label, arrays_text(n), "bandwidth", run, TRIAD_BYTES * n, trials=self.settings.brief_trials
        )  # fmt: skip

    def sweep(self) -> Result:
        """One core's triad against footprint, 8 KiB up to DRAM: effective capacities, and DRAM's figure.

        One allocation of the largest footprint serves every point.  Points
        are short (`sweep_target`, `sweep_trials`); the sweep stops once its
        last octave is flat well below L3 speed (`sweep.in_dram`), and the
        largest footprint -- DRAM, beyond every effective capacity -- is then
        measured like any bandwidth (`target`, `trials`): it is
        `dram.bandwidth_core`, counted at 16 B an element.
        """
        start = time.perf_counter()
        host = self.host
        largest = dram_footprint(host.caches, 1, host.available)
        points = sweep.footprints(host.caches, largest)
        lib = self.lib.lib
        n_max = sweep.elements(points[-1])
        handle = lib.irkit_cal_sweep_alloc(n_max)
        if not handle:
            raise CalibrateError(f"the working-set sweep: cannot allocate {arrays_text(n_max)}")
        curve: list[tuple[int, float]] = []
        try:

            def runner(n: int) -> Callable[[int, int], list[float]]:
                def run(reps: int, trials: int) -> list[float]:
                    times, sink = _doubles(trials), ctypes.c_double()
                    if lib.irkit_cal_sweep_run(handle, n, reps, trials, times, ctypes.byref(sink)) != 0:
                        raise CalibrateError("the working-set sweep failed")
                    return list(times[:trials])

                return run

            for footprint in points[:-1]:
                n = sweep.elements(footprint)
                run = runner(n)
                reps = self._fit(run, self.settings.sweep_target)
                best = min(t for t in run(reps, self.settings.sweep_trials))
                curve.append((footprint, sweep.ELEMENT * n * reps / best))
                if sweep.in_dram(curve, host.caches):
                    # DRAM's figure at this footprint, not at 4 x a reported last level that a
                    # guest never has (a Xeon reporting 480 MiB: 1.9 GiB of arrays, seconds a pass)
                    n_max = max(n, min(n_max, sweep.elements(MIN_DRAM)))
                    break
            n = n_max
            reps, times = self._times(runner(n))
            samples = [TRIAD_LINE_BYTES * n * reps / t for t in times if t > 0]
            if curve and curve[-1][0] == n * sweep.ELEMENT:  # the point the sweep stopped at, timed again
                curve.pop()
            curve.append((n * sweep.ELEMENT, max(samples) * sweep.ELEMENT / TRIAD_LINE_BYTES))
        finally:
            lib.irkit_cal_sweep_free(handle)
        self.capacities = sweep.effective_sizes(curve, host.caches)
        self.arrays["dram.bandwidth_core"] = n
        found = ", ".join(
            f"{c.level} {approx_bytes(c.effective)}" if c.effective else f"{c.level} ?" for c in self.capacities
        )
        result = Result(
            "sweep", "working-set sweep, 1 core", f"{len(curve)} footprints up to {approx_bytes(n * sweep.ELEMENT)}",
            max(samples), "bandwidth", "best", samples, reps, time.perf_counter() - start,
            shown=f"{found}; DRAM {describe(max(samples), 'bandwidth')}", curve=curve,
        )  # fmt: skip
        self.measured["sweep"] = result
        return result

    def effective_caches(self) -> list[CacheLevel]:
        """The cache levels with `size` the effective capacity where the sweep found one."""
        found = {c.level: c.effective for c in self.capacities if c.effective}
        return [replace(c, size=found.get(c.name, c.size)) for c in self.host.caches]

    def level_footprints(self, threads: int) -> dict[str, tuple[int, int | None]]:
        """Level name -> (one-core footprint, per-thread all-core footprint), inside the effective capacities."""
        return {lv.name: (one, every) for lv, one, every in cache_footprints(self.effective_caches(), threads)}

    def level_triad(self, level: str, threads: int) -> Result:
        one, every = self.level_footprints(self.threads)[level]
        if threads == 1:
            key, n = f"{level}.bandwidth", triad_elements(one)
        else:
            key, n = f"{level}.bandwidth_all", triad_elements(every or one)
        self.arrays[key] = n
        return self.triad(key, f"{level} bandwidth, {_cores(threads)}", n, threads)

    def read_stream(self, key: str, label: str, n: int) -> Result:
        """One core's read-only stream over three arrays of `n` floats (the triad's footprint), in the
        bytes of the lines it fills (12 an element): with the triad's figure, what a fill and a
        write-back each cost (irkit.perf.runtime.transfer_seconds)."""

        def run(reps: int, trials: int) -> list[float]:
            times, sink = _doubles(trials), ctypes.c_double()
            if self.lib.lib.irkit_cal_read(n, reps, 1, trials, times, ctypes.byref(sink)) != 0:
                raise CalibrateError(f"{label}: cannot allocate {arrays_text(n)}")
            return list(times[:trials])

        return self._rate(key, label, arrays_text(n) + ", read only", "bandwidth", run, READ_BYTES * n)

    def level_read(self, level: str) -> Result:
        n = triad_elements(self.level_footprints(self.threads)[level][0])
        return self.read_stream(f"{level}.bandwidth_read", f"{level} read-only bandwidth, 1 core", n)

    def dram_read(self) -> Result | str:
        n = self.arrays.get("dram.bandwidth_core")
        if not n:
            return "the sweep found no DRAM footprint: left out"
        return self.read_stream("dram.bandwidth_read_core", "DRAM read-only bandwidth, 1 core", n)

    # A DRAM chase's trials: CHASE_DRAM_REPS x CHAIN loads each (64,000: ~10 ms at 150 ns), timed
    # in one call, since every call builds its ring anew (a fraction of a second at these sizes)
    CHASE_DRAM_REPS = 1000
    CHASE_DRAM_TRIALS = 5

    def dram_latency(self) -> Result:
        """The load-to-use latency of DRAM: a random ring over twice the last level's effective
        capacity (at least 64 MiB, at most 512 MiB: building the ring takes 0.6 s at 288 MiB),
        which no prefetcher follows and the cache holds little of (a random walk's lines are
        evicted before their turn comes again). What a core busy between its misses waits for
        each window of them (the model's `latency_bound`)."""
        caches = self.effective_caches()
        reach = 2 * caches[-1].size if caches else MIN_DRAM
        nbytes = min(max(reach, MIN_DRAM), CHASE_DRAM_MOST)
        if self.host.available:
            nbytes = min(nbytes, self.host.available // 4)
        label = "DRAM latency"
        reps, trials = self.CHASE_DRAM_REPS, self.CHASE_DRAM_TRIALS
        start = time.perf_counter()
        times, sink = _doubles(trials), ctypes.c_double()
        if self.lib.lib.irkit_cal_chase(nbytes, reps, trials, times, ctypes.byref(sink)) != 0:
            raise CalibrateError(f"{label}: cannot allocate {approx_bytes(nbytes)}")
        samples = [t / (reps * CHAIN) for t in times[:trials] if t > 0]
        if not samples:
            raise CalibrateError(f"{label}: the timer did not advance")
        best = min(samples)
        detail = f"a ring of {approx_bytes(nbytes)} in random order"
        result = Result(
            "dram.latency", label, detail, best, "latency", "best", samples, reps, time.perf_counter() - start,
            describe(best, "latency"),
        )  # fmt: skip
        self.measured["dram.latency"] = result
        return result

    def dram_all(self) -> Result:
        total = dram_footprint(self.effective_caches(), self.threads, self.host.available)
        n = triad_elements(total // self.threads)
        self.arrays["dram.bandwidth"] = n
        return self.triad("dram.bandwidth", f"DRAM bandwidth, {_cores(self.threads)}", n, self.threads)

    # ---- overheads
    def parallel_overhead(self) -> Result:
        start = time.perf_counter()
        reps, times = self._times(self._threaded(self.lib.lib.irkit_cal_parallel, self.threads))
        samples = [t / reps for t in times]
        return Result(
            "parallel_overhead",
            f"parallel loop fork/join, {_cores(self.threads)}",
            "empty omp parallel for",
            statistics.median(samples),
            "latency",
            "median",
            samples,
            reps,
            time.perf_counter() - start,
        )

    def _per_access(self, key: str, label: str, detail: str, fn, accesses: float) -> Result:
        """The median seconds an access of a microbenchmark making `accesses` of them a repetition."""
        start = time.perf_counter()
        reps, times = self._times(self._plain(fn))
        samples = [t / (reps * accesses) for t in times]
        return Result(
            key, label, detail, statistics.median(samples), "latency", "median", samples, reps,
            time.perf_counter() - start,
        )  # fmt: skip

    def conflict_miss(self) -> Result:
        """Seconds one miss of a column whose lines share an L1 set costs: misses queued on one set.

        The walk cycles its rows through the set's ways, which keep about ways / rows of its lines
        (what the model's default shares, irkit.perf.runtime.CONFLICT_SHARES, count for this walk
        on an 8-way L1): the time an access is divided by the share that misses, so the figure is
        a miss's (an L1 of unknown ways: the time an access).  It is the starting value of the fit
        on irkit's own walks (irkit.calibrate.fit.conflict_cases)."""
        from irkit.calibrate.kernels import CONFLICT_COLUMNS, CONFLICT_ROWS

        ways = self.host.caches[0].ways if self.host.caches else None
        missing = 1.0 - ways / CONFLICT_ROWS if ways and ways < CONFLICT_ROWS else 1.0
        return self._per_access(
            "conflict_miss",
            "L1 miss within one set, from L2",
            f"columns of {CONFLICT_ROWS} rows, 4096 B apart" + (f"; {missing:.3g} of the accesses miss {ways} ways" if missing < 1 else ""),
            self.lib.lib.irkit_cal_conflict,
            CONFLICT_ROWS * CONFLICT_COLUMNS * missing,
        )

    def strided_miss(self) -> Result:
        """Seconds one strided L1 miss costs, served by L2 with a gather's worth in flight."""
        from irkit.calibrate.kernels import STRIDED_COLUMNS, STRIDED_ROWS

        return self._per_access(
            "strided_miss",
            "strided L1 miss, from L2",
            f"{STRIDED_COLUMNS} columns of {STRIDED_ROWS} rows, 4160 B apart",
            self.lib.lib.irkit_cal_strided,
            STRIDED_ROWS * STRIDED_COLUMNS,
        )

    def page_fault(self) -> Result | str:
        """Seconds a fresh 4 KiB page costs at its first write: a 64 MiB temporary (larger than
        glibc's largest mmap threshold, so it is fresh memory every time), less a second write.

        The size is the same with `--quick`: below the threshold glibc's dynamic threshold
        keeps freed blocks, the second trial's memory is not fresh, and the figure reads 0.
        When no trial's first write is slower than its second (a very noisy host), the field
        is left out (the model then counts no page faults) rather than written as 0."""
        start = time.perf_counter()
        size = PAGE_FAULT_BYTES
        trials = 2 if self.settings is QUICK else 5
        times = _doubles(trials)
        if self.lib.lib.irkit_cal_page_fault(size, trials, times, ctypes.byref(ctypes.c_double())) != 0:
            raise CalibrateError(f"page fault cost: cannot allocate {size >> 20} MiB")
        samples = [max(t, 0.0) / (size / 4096) for t in times[:trials]]
        if statistics.median(samples) <= 0:
            return "not measurable (first writes no slower than second ones): page_fault left out"
        return Result(
            "page_fault",
            "first touch of a fresh page",
            f"{size >> 20} MiB, per 4 KiB page",
            statistics.median(samples),
            "latency",
            "median",
            samples,
            1,
            time.perf_counter() - start,
        )

    def call_overhead(self) -> Result:
        """An empty kernel's bare ctypes call: what a timed kernel call costs beyond the kernel
        (the cost model predicts the kernel as benchmarks and `irkit validate` call it).  The
        checked call through irkit's runner is measured too, for the file's comment."""
        start = time.perf_counter()
        compiled, arrays, sizes = _empty_kernel(self.lib.cflags if self.lib else None)
        bare = self.lib.lib.irkit_cal_empty
        args = (1, arrays["x"].ctypes.data, arrays["y"].ctypes.data)
        for _ in range(min(100, self.settings.calls)):
            compiled(arrays, sizes)
            bare(*args)
        runner, plain = [], []
        clock = time.perf_counter
        for _ in range(self.settings.calls):
            t0 = clock()
            compiled(arrays, sizes)
            t1 = clock()
            bare(*args)
            t2 = clock()
            runner.append(t1 - t0)
            plain.append(t2 - t1)
        self.call_ctypes = statistics.median(runner)
        return Result(
            "call_overhead",
            "bare kernel call (ctypes)",
            "empty kernel",
            statistics.median(plain),
            "latency",
            "median",
            [],
            len(runner),
            time.perf_counter() - start,
        )

    # ---- the plan
    def steps(self) -> list[Step]:
        """Every measurement in order: one-core figures first, then the threads settle and the all-core ones run.

        The per-width steps cover the widths of the host's ISA; a width the
        build lacks (`--march x86-64-v3` on an AVX-512 host) says so and
        measures nothing.
        """
        host, threads = self.host, self.threads
        widths = host_widths(host)
        narrower = widths[1:]  # the full width is flops_f32 / L1 bandwidth (or, for a narrower build, says so)
        alone = [
            Step("clock_imul", "clock", "dependent imuls", lambda: self.clock("imul")),
            Step("clock_add", "clock cross-check", "dependent register adds", lambda: self.clock("add")),
            Step(
                "clock_chase", "clock cross-check, L1 pointer chase", "",
                lambda: self.chase("clock_chase", "L1 load latency", CHASE_L1_BYTES, self.CLOCK_TRIALS),
            ),  # fmt: skip
            Step("tsc", "TSC rate over wall-clock time", "", self.tsc),
        ]
        for dtype in ("f32", "f64"):
            alone.append(Step(f"flops_{dtype}", f"{dtype.upper()} FMA, full width, 1 core", "", self._bind_flops(dtype, None)))
            for bits in narrower:
                key = f"flops_{dtype}_{width_name(bits)}"
                label = f"{dtype.upper()} FMA, {width_name(bits)}{'-bit' if bits > 32 else ''}, 1 core"
                alone.append(Step(key, label, "", self._bind_flops(dtype, bits)))
        for dtype in ("f32", "f64"):
            for name, what in (("div", "division"), ("sqrt", "square root"), ("exp", "exp (irkit fast exp)"), ("libm_exp", "exp (C library)")):
                alone.append(Step(f"{name}_{dtype}", f"{dtype.upper()} {what}, 1 core", "", self._bind_unary(name, dtype, what)))
            for name, what in (("div", "division"), ("sqrt", "square root")):  # scalar code's (not vectorised)
                alone.append(
                    Step(f"{name}_{dtype}_scalar", f"{dtype.upper()} {what}, scalar, 1 core", "", self._bind_unary(name, dtype, what, True))
                )
        alone += [
            Step("fp_latency", "F32 add latency, dependent chain", "", lambda: self.fp_latency("f32")),
            Step("fp_latency_f64", "F64 add latency, dependent chain", "", lambda: self.fp_latency("f64")),
            Step("fma_latency", "F32 FMA latency, dependent chain", "", self.fma_latency),
            Step("store_forward", "store-to-load forwarding, an accumulator in memory", "", self.store_forward),
            Step("strided_miss", "strided L1 miss (a column), 1 core", "", self.strided_miss),
            Step("conflict_miss", "L1 miss within one set (a 4 KiB-strided column), 1 core", "", self.conflict_miss),
            Step("sweep", "working-set sweep, 1 core, 8 KiB to DRAM", "", self.sweep),
        ]
        for level in host.caches:
            alone.append(
                Step(
                    f"{level.name}.bandwidth", f"{level.name} bandwidth, 1 core",
                    self._bind_detail(level.name, 1), self._bind_level(level.name, 1),
                )  # fmt: skip
            )
            if level is not host.caches[0]:
                alone.append(
                    Step(
                        f"{level.name}.bandwidth_read", f"{level.name} read-only bandwidth, 1 core",
                        self._bind_detail(level.name, 1), self._bind_read(level.name),
                    )  # fmt: skip
                )
            if level is host.caches[0]:
                for bits in narrower:
                    key = f"L1.bandwidth_{width_name(bits)}"
                    alone.append(Step(key, f"L1 bandwidth, {width_name(bits)}", "", self._bind_triad_width(bits)))
        alone.append(Step("dram.bandwidth_read_core", "DRAM read-only bandwidth, 1 core", "", self.dram_read))
        alone.append(Step("dram.latency", "DRAM latency, a pointer chase beyond the last cache", "", self.dram_latency))
        together = [
            Step("flops_f32_all", f"F32 FMA, {_cores(threads)}", "", lambda: self.flops("f32", threads)),
            Step("flops_f64_all", f"F64 FMA, {_cores(threads)}", "", lambda: self.flops("f64", threads)),
        ]
        for level in host.caches:
            if level.shared > 1:
                together.append(
                    Step(
                        f"{level.name}.bandwidth_all", f"{level.name} bandwidth, {_cores(threads)}",
                        self._bind_detail(level.name, threads), self._bind_level(level.name, threads),
                    )  # fmt: skip
                )
        together.append(Step("dram.bandwidth", f"DRAM bandwidth, {_cores(threads)}", "", self.dram_all))
        together.append(
            Step("parallel_overhead", f"parallel loop overhead, {_cores(threads)}", "", self.parallel_overhead)
        )
        settle = Step("settle", f"settling {_cores(threads)} under load", "", self.settle)
        call = Step("call_overhead", "kernel call overhead (bare ctypes call)", "", self.call_overhead)
        fault = Step("page_fault", "page fault of a fresh temporary", "", self.page_fault)
        return [*alone, settle, *together, call, fault]

    # Closures bound per step (a lambda in a loop would see the loop's last value).
    def _bind_flops(self, dtype: str, bits: int | None) -> Callable[[], Result | str]:
        return lambda: self.flops(dtype, 1, bits)

    def _bind_unary(self, name: str, dtype: str, what: str, scalar: bool = False) -> Callable[[], Result]:
        return lambda: self.unary(name, dtype, what, scalar)

    def _bind_triad_width(self, bits: int) -> Callable[[], Result | str]:
        return lambda: self.triad_width(bits)

    def _bind_read(self, level: str) -> Callable[[], Result]:
        return lambda: self.level_read(level)

    def _bind_level(self, level: str, threads: int) -> Callable[[], Result]:
        return lambda: self.level_triad(level, threads)

    def _bind_detail(self, level: str, threads: int) -> Callable[[], str]:
        def detail() -> str:
            one, every = self.level_footprints(self.threads)[level]
            n = triad_elements(one if threads == 1 else (every or one))
            return arrays_text(n) + (" per thread" if threads > 1 else "")

        return detail


def _cores(n: int) -> str:
    return "1 core" if n == 1 else f"{n} cores"


def _march_text(lib: Library | None) -> str:
    flags = (lib.cflags if lib else None) or []
    march = next((f.split("=", 1)[1] for f in flags if f.startswith("-march=")), "native")
    return f"-march={march}"


_EMPTY_DOC = """design calibrate_empty {
  sizes { N = 1 }
  tensor x : f32[N] input
  tensor y : f32[N] output
  y[i] = x[i]
}
"""


def _empty_kernel(cflags: list[str] | None = None):
    """A one-element copy kernel compiled by irkit, with its arrays and sizes (as `irkit run --bench` uses them)."""
    from irkit.api import compile as compile_document

    kernel = compile_document(_EMPTY_DOC, cflags=cflags)
    compiled = kernel.compiled
    sizes = kernel.resolve_sizes()
    arrays = {name: compiled.empty(name, sizes) for name in ("x", "y")}
    arrays["x"][...] = 1.0
    return compiled, arrays, sizes


def run_step(step: Step, progress: Progress, results: dict[str, Result], again: bool = False) -> None:
    """Run one step, reporting it on `progress`; its figure goes into `results` (a note only to the progress)."""
    (progress.again if again else progress.start)(step.text)
    result = step.run()
    if isinstance(result, Result):
        results[step.key] = result
        progress.finish(result.shown or describe(result.value, result.family))
    else:
        results.pop(step.key, None) if again else None
        progress.finish(result)


def run_steps(steps: list[Step], progress: Progress) -> dict[str, Result]:
    """Run every step, reporting each on `progress`; the figures by key."""
    results: dict[str, Result] = {}
    for step in steps:
        run_step(step, progress, results)
    return results
