"""`irkit calibrate --check host.hw`: does a description still fit this host?

A description is measured once and used for months, on machines whose CPU
changes under the same name.  `--check` measures six figures again in a few
seconds -- the clock (dependent imuls), one core's f32 FMA peak at the full
width, the f32 add latency, one core's L1, L2 and DRAM triad bandwidths, each
at the footprint `irkit calibrate` would use for that description -- and
compares each with the description (`compare`): a figure **moved** when the
new measurement is further from the described one than its tolerance
(`TOLERANCES`, relative).  Throughputs are the best of their trials; one
outside its tolerance is measured twice more (noise only slows a run down,
so a second look catches a quiet moment) before it counts as moved.

The tolerances are the run-to-run spread of a shared host (docs/calibrate.md,
"How long it takes"), with room: the clock and the FMA peak hold within 2%,
so 10% and 15% say the machine changed; L1 bandwidth swings by 2 x on the
2-vCPU VM in episodes, so 35%.

The verdict also says whether the description was measured on this CPU
(`irkit.calibrate.fingerprint.mismatch`).  Exit 0 when every figure is
within its tolerance and the CPU is this one, 1 otherwise.  The
microbenchmarks are built for the `march` the description records, so a
256-bit description is checked with 256-bit code.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace
from pathlib import Path

from irkit.calibrate import CalibrateError
from irkit.calibrate.detect import CacheLevel
from irkit.calibrate.measure import QUICK, Calibrator, Progress, Result, Step, _doubles, triad_elements
from irkit.calibrate.writer import describe

# figure -> (relative tolerance, how it reads, unit family)
TOLERANCES: dict[str, tuple[float, str, str]] = {
    "frequency": (0.10, "clock", "frequency"),
    "flops_f32": (0.15, "F32 FMA peak, 1 core", "rate"),
    "fp_latency": (0.20, "F32 add latency", "cycles"),
    "L1.bandwidth": (0.35, "L1 bandwidth, 1 core", "bandwidth"),
    "L2.bandwidth": (0.30, "L2 bandwidth, 1 core", "bandwidth"),
    "dram.bandwidth_core": (0.30, "DRAM bandwidth, 1 core", "bandwidth"),
}
RETRIES = 2  # further measurements of a figure outside its tolerance
CHECK = replace(QUICK, target=0.01, trials=5)  # about 0.1 s a figure: well under the 5 s budget
LOWER_IS_BETTER = {"fp_latency"}


@dataclass
class Figure:
    """One figure compared: the description's, the new measurement, and whether it moved."""

    key: str
    label: str
    family: str
    described: float
    measured: float
    tolerance: float

    @property
    def change(self) -> float:
        return self.measured / self.described - 1

    @property
    def moved(self) -> bool:
        return abs(self.change) > self.tolerance

    def line(self) -> str:
        verdict = "MOVED" if self.moved else "ok"
        return (
            f"  {self.label:<24} {describe(self.described, self.family):>14} now {describe(self.measured, self.family):>14}"
            f" {self.change * 100:+7.1f}%  (tolerance {self.tolerance * 100:.0f}%)  {verdict}"
        )

    def as_json(self) -> dict:
        return {
            "figure": self.key,
            "described": self.described,
            "measured": self.measured,
            "change": self.change,
            "tolerance": self.tolerance,
            "moved": self.moved,
        }


@dataclass
class Verdict:
    figures: list[Figure]
    cpu: str | None  # how the recorded CPU/ISA/march differs from this host (None: the same, or not recorded)
    skipped: list[str] = field(default_factory=list)  # figures the description does not give

    @property
    def moved(self) -> list[Figure]:
        return [f for f in self.figures if f.moved]

    @property
    def fits(self) -> bool:
        return not self.moved and self.cpu is None


def described_figures(values: dict) -> dict[str, float]:
    """The figures `--check` compares, from a description's pricing values (`irkit.perf.hardware`)."""
    out: dict[str, float] = {"frequency": values["frequency"]}
    if "flops_f32" in values:
        out["flops_f32"] = values["flops_f32"]
    if "fp_latency" in values:
        out["fp_latency"] = values["fp_latency"]
    levels = values.get("levels", [])
    for i, name in ((0, "L1"), (1, "L2")):
        if i < len(levels):
            out[f"{name}.bandwidth"] = levels[i]["bandwidth"]
    if values.get("dram_bandwidth_core"):
        out["dram.bandwidth_core"] = values["dram_bandwidth_core"]
    return out


def compare(described: dict[str, float], measured: dict[str, float]) -> list[Figure]:
    """Each figure measured against the description's, with its tolerance (no measuring: a test feeds both)."""
    out = []
    for key, (tolerance, label, family) in TOLERANCES.items():
        if key in described and key in measured and described[key] > 0:
            out.append(Figure(key, label, family, described[key], measured[key], tolerance))
    return out


def cache_levels(values: dict) -> list[CacheLevel]:
    """The description's cache levels, sized by their effective capacity (as calibrate measured them)."""
    return [
        CacheLevel(i + 1, int(lv.get("effective_size") or lv["size"]), int(lv["line"]), int(lv.get("shared", 1)))
        for i, lv in enumerate(values.get("levels", []))
    ]


class Checker:
    """Measures the `--check` figures for a description's values with the quick settings."""

    def __init__(self, calibrator: Calibrator, values: dict):
        self.c = calibrator
        self.values = values
        self.caches = cache_levels(values)

    def steps(self, wanted: set[str]) -> list[Step]:
        from irkit.calibrate.measure import cache_footprints

        c = self.c
        plan = [
            Step("frequency", "clock", "dependent imuls", lambda: c.clock("imul")),
            Step("flops_f32", "F32 FMA, full width, 1 core", "", lambda: c.flops("f32", 1)),
            Step("fp_latency", "F32 add latency", "", lambda: c.fp_latency("f32")),
        ]
        footprints = cache_footprints(self.caches, c.threads)
        for i, name in ((0, "L1"), (1, "L2")):
            if i < len(footprints):
                n = triad_elements(footprints[i][1])
                plan.append(Step(f"{name}.bandwidth", f"{name} bandwidth, 1 core", "", self._triad(name, n)))
        last = self.caches[-1].size if self.caches else 0
        n = triad_elements(max(4 * last, 64 * 1024**2))
        plan.append(Step("dram.bandwidth_core", "DRAM bandwidth, 1 core", "", lambda: self.dram(n)))
        return [s for s in plan if s.key in wanted]

    def _triad(self, name: str, n: int):
        return lambda: self.c.triad(f"{name}.bandwidth", f"{name} bandwidth, 1 core", n, 1)

    def dram(self, n: int) -> Result:
        """One core's triad on arrays of n, allocated and touched once (16 B an element, as calibrate counts)."""
        from irkit.calibrate.measure import TRIAD_LINE_BYTES

        lib = self.c.lib.lib
        handle = lib.irkit_cal_sweep_alloc(n)
        if not handle:
            raise CalibrateError("DRAM bandwidth: cannot allocate its arrays")
        try:

            def run(reps: int, trials: int) -> list[float]:
                times, sink = _doubles(trials), ctypes.c_double()
                lib.irkit_cal_sweep_run(handle, n, reps, trials, times, ctypes.byref(sink))
                return list(times[:trials])

            return self.c._rate("dram.bandwidth_core", "DRAM bandwidth", "", "bandwidth", run, TRIAD_LINE_BYTES * n)
        finally:
            lib.irkit_cal_sweep_free(handle)

    def value(self, key: str, result: Result) -> float:
        if key == "fp_latency":
            clock = self.c.measured.get("clock_imul")
            return result.value * (clock.value if clock else self.values["frequency"])
        return result.value


def measure_figures(checker: Checker, described: dict[str, float], progress: Progress) -> dict[str, float]:
    """Measure every described figure; one outside its tolerance up to RETRIES times more (the best kept)."""
    steps = checker.steps(set(described))
    progress.total = len(steps)
    measured: dict[str, float] = {}
    for step in steps:
        progress.start(step.text)
        result = step.run()
        assert isinstance(result, Result)
        measured[step.key] = checker.value(step.key, result)
        progress.finish(describe(measured[step.key], TOLERANCES[step.key][2]))
    for step in steps:
        for _ in range(RETRIES):
            figures = compare({step.key: described[step.key]}, {step.key: measured[step.key]})
            if not figures or not figures[0].moved:
                break
            progress.again(step.text)
            result = step.run()
            assert isinstance(result, Result)
            new = checker.value(step.key, result)
            better = min if step.key in LOWER_IS_BETTER else max
            measured[step.key] = better(measured[step.key], new)
            progress.finish(describe(new, TOLERANCES[step.key][2]))
    return measured


def report_text(path: str, verdict: Verdict, seconds: float) -> str:
    lines = [f"{path}: {len(verdict.figures)} figures measured again in {seconds:.1f} s"]
    lines += [f.line() for f in verdict.figures]
    lines += [f"  ({key} not in the description: not compared)" for key in verdict.skipped]
    if verdict.cpu:
        lines.append(f"  the CPU differs: {verdict.cpu}")
    if verdict.fits:
        lines.append(f"{path} fits this host: every figure within its tolerance")
    else:
        why = []
        if verdict.moved:
            why.append(
                "moved: "
                + ", ".join(f"{f.key} {f.change * 100:+.0f}% (tolerance {f.tolerance * 100:.0f}%)" for f in verdict.moved)
            )
        if verdict.cpu:
            why.append("measured on another CPU")
        lines.append(f"{path} does not fit this host ({'; '.join(why)}): run `irkit calibrate -o {Path(path).name}` again")
    return "\n".join(lines) + "\n"


def load_description(spec: str):
    """The description to check (a DiagnosticError, reported with its location, when it does not parse)."""
    from irkit.perf.hardware import load_hardware

    return load_hardware(spec)
