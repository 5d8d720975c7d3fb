"""The measurement driver: which benchmark runs at which size, how long, and what is kept.

**Sizes from the caches.**  A level's bandwidth is measured on STREAM-triad
arrays whose total footprint (3 arrays) is half the level: what one core
can keep there with room for the stack, the page tables and the previous
level's copies.  For a level shared by N CPUs the one-core footprint is
half of one core's share (size / N / 2), and all cores together
(`bandwidth_all`) each run on their own arrays of that size.  When a share
would fit in the level before it (a large private L2 under a small L3
slice), the footprint grows to twice the previous level, within the
level's half.  DRAM is measured on arrays of at least 4 times all the
last-level cache instances the threads see together (at most half the
available memory), split between the threads for the all-core figure.

**Counting.**  The triad `a[i] = b[i] * s + c[i]` on f32 is counted the
way the cost model counts traffic.  In L1 that is the bytes of the loads
and stores, 12 an element (STREAM's convention); from L2, L3 and DRAM it is
the lines the caches move, 16 bytes an element: a store that misses first
reads its line (write-allocate) and later writes it back.  An FMA counts 2 flops a lane; division, square root and exp count
one lane result each.  `fp_latency` is in cycles: a dependent add's time
times the measured clock.

**Timing.**  Each benchmark loops `reps` times inside one C call.  `reps`
is found by probing (doubling a short run until it lasts a quarter of the
target) so that one timed trial takes `target` seconds (25 ms, 4 ms with
`--quick`); then one call runs `trials` trials (9, 3 with `--quick`).
Throughputs keep the best trial (on a shared host noise only slows a run
down), overheads the median (they are typical costs, and their best is a
lucky cache state).  Every sample is kept for `--json`.

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
from dataclasses import dataclass, field
from typing import TextIO

from irkit.calibrate import CalibrateError
from irkit.calibrate.detect import CacheLevel, Host
from irkit.calibrate.kernels import ADDS, ARRAY, CHAINS, LATENCY_STEPS, Library
from irkit.calibrate.writer import approx_bytes, describe

TRIAD_BYTES = 12  # bytes per triad element in L1: 2 loads + 1 store of f32
PAGE_FAULT_BYTES = 64 << 20  # a temporary this large is fresh memory at every call (glibc mmaps it)
TRIAD_LINE_BYTES = 16  # beyond L1: b and c filled, a filled and written back
TRIAD_ALIGN = 256  # elements: arrays are a whole number of these (1 KiB)
DRAM_FACTOR = 4  # DRAM arrays >= this many times the last-level caches
MIN_DRAM = 64 * 1024**2  # bytes: DRAM arrays at least this large anyway


@dataclass(frozen=True)
class Settings:
    target: float  # seconds a timed trial should last
    trials: int  # timed trials per measurement
    calls: int  # calls timed for call_overhead
    settle_limit: float  # seconds at most to wait for the threads to spread over the cores
    patience: float  # seconds an all-core FMA measurement keeps trying to reach threads x one core


FULL = Settings(target=0.025, trials=9, calls=3000, settle_limit=3.0, patience=3.0)
QUICK = Settings(target=0.004, trials=3, calls=300, settle_limit=1.5, patience=1.5)


@dataclass
class Result:
    """One measured figure (base units: FLOP/s, B/s, Hz, s)."""

    key: str  # the field it fills: `flops_f32`, `L2.bandwidth`, `dram.bandwidth_core`, ...
    label: str
    detail: str
    value: float
    family: str  # irkit.units family (rate, bandwidth, frequency, latency), or cycles (a latency in cycles)
    statistic: str  # best or median
    samples: list[float] = field(default_factory=list)
    reps: int = 0
    seconds: float = 0.0  # wall time of the step

    def as_json(self) -> dict:
        return {
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


@dataclass
class Step:
    key: str
    label: str
    detail: str
    run: Callable[[], Result | str]  # a figure, or a note (a step that measures nothing)


# ------------------------------------------------------------------ sizes


def triad_elements(footprint: int) -> int:
    """Elements per array for 3 f32 arrays of `footprint` bytes in all (a multiple of 256, at least 256)."""
    return max(TRIAD_ALIGN, footprint // TRIAD_BYTES // TRIAD_ALIGN * TRIAD_ALIGN)


def cache_footprints(caches: list[CacheLevel], threads: int) -> list[tuple[CacheLevel, int, int | None]]:
    """(level, one-core footprint, per-thread all-core footprint or None) for each level, in bytes.

    The all-core footprint is given for levels shared by more than one CPU.
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
    """Total bytes of the DRAM arrays: 4 x the last-level caches the threads see, within half the free memory."""
    last = caches[-1]
    instances = max(1, math.ceil(threads / last.shared))
    want = max(DRAM_FACTOR * last.size * instances, MIN_DRAM)
    if available:
        want = min(want, available // 2)
    return want


def arrays_text(n: int) -> str:
    """`3 x 85 KiB`: the triad's arrays of n f32 elements."""
    return f"3 x {approx_bytes(n * 4)}"


# ------------------------------------------------------------------ progress


class Progress:
    """`[ 3/12] L2 bandwidth, 1 core, 3 x 85 KiB ... 310.2 GB/s` on a stream, one line per step.

    The label is written when the step starts and the figure when it ends, so a
    terminal shows what is running.
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
        self.measured: dict[str, Result] = {}  # the rates measured so far, by key

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
        self, call: Callable[[int, int], list[float]], probe: Callable[[int, int], list[float]] | None = None
    ) -> tuple[int, list[float]]:
        """(reps, seconds of each trial) with reps fitted to the target time.

        `probe` (default `call`) times the short runs that fit `reps`; the
        parallel benchmarks are probed on one thread, whose work per thread is
        the same, so that a slow start of the threads (see `settle`) does not
        pass for the work.
        """
        reps = self._fit(probe or call, self.settings.target)
        return reps, call(reps, self.settings.trials)

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

    def _rate(self, key, label, detail, family, call, work_per_rep, probe=None, expect=None) -> Result:
        """Best rate of `work_per_rep` per repetition over the trials of one call.

        With `expect` (a rate the hardware should reach), calls repeat until a
        trial reaches 90% of it or `settings.patience` runs out: on a shared
        host other processes come and go, and a peak is measured in a quiet
        moment.
        """
        start = time.perf_counter()
        reps, times = self._times(call, probe)
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

    # ---- benchmarks
    def frequency(self) -> Result:
        return self._rate(
            "frequency", "clock", f"{ADDS} dependent adds", "frequency", self._plain(self.lib.lib.irkit_cal_adds), ADDS
        )

    def flops(self, dtype: str, threads: int) -> Result:
        lanes = self.lib.vector_bytes // (4 if dtype == "f32" else 8)
        fn = getattr(self.lib.lib, f"irkit_cal_fma_{dtype}")
        key = f"flops_{dtype}" + ("_all" if threads > 1 else "")
        label = f"{dtype.upper()} FMA, {_cores(threads)}"
        detail = f"{CHAINS} chains x {lanes} lanes"
        work = CHAINS * lanes * 2 * threads
        alone = self.measured.get(f"flops_{dtype}")
        # What the threads reach on separate cores: threads x one core, at most one thread a CPU.
        expect = alone.value * min(threads, self.host.cpus or threads) if alone and threads > 1 else None
        call, probe = self._threaded(fn, threads), self._threaded(fn, 1)
        return self._rate(key, label, detail, "rate", call, work, probe, expect)

    def _cycles(self, key: str, label: str, detail: str, fn, steps: int, less: float = 0.0) -> Result:
        """Cycles a step of a microbenchmark making `steps` dependent steps a repetition, less
        `less` cycles, at the measured clock (the best trial: the fewest cycles)."""
        start = time.perf_counter()
        frequency = self.measured["frequency"].value
        reps, times = self._times(self._plain(fn))
        samples = [max(0.0, t * frequency / (reps * steps) - less) for t in times]
        result = Result(
            key, label, detail, min(samples), "cycles", "best", samples, reps, time.perf_counter() - start
        )  # fmt: skip
        self.measured[key] = result
        return result

    def fp_latency(self) -> Result:
        """Cycles of one dependent f32 add."""
        return self._cycles(
            "fp_latency", "F32 add latency", f"a chain of {LATENCY_STEPS} dependent adds",
            self.lib.lib.irkit_cal_fma_latency, LATENCY_STEPS,
        )  # fmt: skip

    def store_forward(self) -> Result:
        """Cycles an entry of an inner loop waits for the vector the entry before stored, beyond its
        one add: an accumulator kept in memory across an outer loop."""
        from irkit.calibrate.kernels import FORWARD_STEPS

        return self._cycles(
            "store_forward", "store-to-load forwarding",
            "a vector accumulated in memory across an outer loop, less one add",
            self.lib.lib.irkit_cal_store_forward, FORWARD_STEPS, less=self.measured["fp_latency"].value,
        )  # fmt: skip

    def unary(self, name: str, what: str) -> Result:
        fn = getattr(self.lib.lib, f"irkit_cal_{name}_f32")
        detail = f"{ARRAY} lanes in L1"
        return self._rate(f"{name}_f32", f"F32 {what}, 1 core", detail, "rate", self._plain(fn), ARRAY)

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

    def _per_access(self, key: str, label: str, detail: str, fn, accesses: int) -> Result:
        """The median seconds an access of a microbenchmark making `accesses` of them a repetition."""
        start = time.perf_counter()
        reps, times = self._times(self._plain(fn))
        samples = [t / (reps * accesses) for t in times]
        return Result(
            key, label, detail, statistics.median(samples), "latency", "median", samples, reps,
            time.perf_counter() - start,
        )  # fmt: skip

    def conflict_miss(self) -> Result:
        """Seconds one access of a column whose lines share an L1 set costs: misses queued on one set."""
        from irkit.calibrate.kernels import CONFLICT_COLUMNS, CONFLICT_ROWS

        return self._per_access(
            "conflict_miss",
            "L1 miss within one set, from L2",
            f"columns of {CONFLICT_ROWS} rows, 4096 B apart",
            self.lib.lib.irkit_cal_conflict,
            CONFLICT_ROWS * CONFLICT_COLUMNS,
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
        compiled, arrays, sizes = _empty_kernel()
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
        """Every measurement in order: one-core figures first, then the threads settle and the all-core ones run."""
        host, threads = self.host, self.threads
        alone = [
            Step("frequency", "clock frequency", "dependent integer adds", self.frequency),
            Step("flops_f32", "F32 FMA, 1 core", "", lambda: self.flops("f32", 1)),
            Step("flops_f64", "F64 FMA, 1 core", "", lambda: self.flops("f64", 1)),
            Step("div_f32", "F32 division, 1 core", "", lambda: self.unary("div", "division")),
            Step("sqrt_f32", "F32 square root, 1 core", "", lambda: self.unary("sqrt", "square root")),
            Step("exp_f32", "F32 exp (irkit fast expf), 1 core", "", lambda: self.unary("exp", "exp")),
            Step("libm_exp_f32", "F32 exp (C library expf), 1 core", "", lambda: self.unary("libm_exp", "libm exp")),
            Step("fp_latency", "F32 add latency, dependent chain", "", self.fp_latency),
            Step("store_forward", "store-to-load forwarding, an accumulator in memory", "", self.store_forward),
            Step("strided_miss", "strided L1 miss (a column), 1 core", "", self.strided_miss),
            Step("conflict_miss", "L1 miss within one set (a 4 KiB-strided column), 1 core", "", self.conflict_miss),
        ]
        together = [
            Step("flops_f32_all", f"F32 FMA, {_cores(threads)}", "", lambda: self.flops("f32", threads)),
            Step("flops_f64_all", f"F64 FMA, {_cores(threads)}", "", lambda: self.flops("f64", threads)),
        ]
        for level, one, every in cache_footprints(host.caches, threads):
            alone.append(
                self._triad_step(f"{level.name}.bandwidth", f"{level.name} bandwidth, 1 core", triad_elements(one), 1)
            )
            if every is not None:
                label = f"{level.name} bandwidth, {_cores(threads)}"
                together.append(self._triad_step(f"{level.name}.bandwidth_all", label, triad_elements(every), threads))
        total = dram_footprint(host.caches, threads, host.available)
        alone.append(self._triad_step("dram.bandwidth_core", "DRAM bandwidth, 1 core", triad_elements(total), 1))
        per_thread = triad_elements(total // threads)
        together.append(self._triad_step("dram.bandwidth", f"DRAM bandwidth, {_cores(threads)}", per_thread, threads))
        together.append(
            Step("parallel_overhead", f"parallel loop overhead, {_cores(threads)}", "", self.parallel_overhead)
        )
        settle = Step("settle", f"settling {_cores(threads)} under load", "", self.settle)
        call = Step("call_overhead", "kernel call overhead (bare ctypes call)", "", self.call_overhead)
        fault = Step("page_fault", "page fault of a fresh temporary", "", self.page_fault)
        return [*alone, settle, *together, call, fault]

    def _triad_step(self, key: str, label: str, n: int, threads: int) -> Step:
        self.arrays[key] = n
        detail = arrays_text(n) + (" per thread" if threads > 1 else "")
        return Step(key, label, detail, lambda: self.triad(key, label, n, threads))


def _cores(n: int) -> str:
    return "1 core" if n == 1 else f"{n} cores"


_EMPTY_DOC = """design calibrate_empty {
  sizes { N = 1 }
  tensor x : f32[N] input
  tensor y : f32[N] output
  y[i] = x[i]
}
"""


def _empty_kernel():
    """A one-element copy kernel compiled by irkit, with its arrays and sizes (as `irkit run --bench` uses them)."""
    from irkit.api import compile as compile_document

    kernel = compile_document(_EMPTY_DOC)
    compiled = kernel.compiled
    sizes = kernel.resolve_sizes()
    arrays = {name: compiled.empty(name, sizes) for name in ("x", "y")}
    arrays["x"][...] = 1.0
    return compiled, arrays, sizes


def run_steps(steps: list[Step], progress: Progress) -> dict[str, Result]:
    """Run every step, reporting each on `progress`; the figures by key."""
    results: dict[str, Result] = {}
    for step in steps:
        progress.start(f"{step.label}, {step.detail}" if step.detail else step.label)
        result = step.run()
        if isinstance(result, Result):
            results[step.key] = result
            progress.finish(describe(result.value, result.family))
        else:
            progress.finish(result)
    return results
