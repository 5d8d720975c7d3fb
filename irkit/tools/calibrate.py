"""`irkit calibrate [-o host.hw]`: measure this machine and write its hardware description.

    irkit calibrate                   # print the description of this host (hardware host { ... })
    irkit calibrate -o lab.hw         # write it as lab.hw (hardware lab { ... })
    irkit calibrate --quick --json    # a few seconds, rough figures, and the measurements as JSON
    irkit calibrate --march x86-64-v3 # the microbenchmarks built for AVX2 (a 256-bit description)
    irkit calibrate --check lab.hw    # does lab.hw still fit this host? (a few figures, < 5 s)

Why a command: the cost model is only as good as the figures it prices
with, and the bundled `generic` profile is a guess.  This measures peak
FP32/FP64 FMA throughput (one core, all cores), vector division, square
root and exp, the triad bandwidth of every cache level and of DRAM, the
clock, and the fixed costs of a parallel loop and of a kernel call -- with
microbenchmarks built by irkit's own C backend -- and writes them in the
language's hardware syntax, so a document says `hardware host` and is
priced for the machine it runs on.  How each figure is measured and
counted: `irkit.calibrate.measure` and docs/calibrate.md.  Every figure is
checked before it is written (`irkit.calibrate.plausible`,
`irkit.calibrate.checked`): one that fails twice is left out with a warning
naming it.  The description records the CPU it was measured on and the
`-march` it was built for (`irkit.calibrate.fingerprint`).

`--check FILE` measures a few figures again and says whether FILE still
fits this host (`irkit.calibrate.quickcheck`): exit 0 if it does, 1 if a
figure moved beyond its tolerance or FILE was measured on another CPU.

Progress goes to stderr, one line per step.  Without `-o` the description
goes to stdout; `--json` prints one JSON object on stdout instead (the
measurements with every sample, the detected host, and the description's
text under "hw").  Problems with the host (no compiler, an unreadable
`/sys`) are one line, `irkit calibrate: error: ...`, exit 1; a bad option
is a usage error, exit 2.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from irkit.calibrate import CalibrateError, fit, measure, plausible
from irkit.calibrate.checked import Checked
from irkit.calibrate.detect import Host
from irkit.calibrate.detect import huge_page_bytes as detect_huge_page
from irkit.calibrate.measure import Calibrator, Progress, Result, Settings
from irkit.diagnostics import DiagnosticError

PROG = "irkit calibrate"
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_COMPILER_LINES = 12


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure this host (flops, bandwidths, overheads) and write a hardware description",
        description="Measure this host with microbenchmarks built by irkit's C backend and write a .hw description.",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write the description to FILE (default: stdout)")
    p.add_argument("--name", help="name of the hardware block (default: the stem of FILE, else 'host')")
    p.add_argument("--quick", action="store_true", help="short runs: a few seconds, rough figures (for tests)")
    p.add_argument("--json", action="store_true", help="print the measurements as one JSON object on stdout")
    p.add_argument(
        "--march",
        metavar="ISA",
        help="build the microbenchmarks for this ISA instead of the host's (-march=ISA in irkit's default flags), "
        "e.g. x86-64-v3 for AVX2 without AVX-512",
    )
    p.add_argument(
        "--check",
        metavar="FILE",
        help="measure a few figures again (under 5 s) and say whether the description FILE still fits this host",
    )


def run(args: argparse.Namespace) -> int:
    progress = Progress(sys.stderr)
    if args.check is not None:
        from irkit.calibrate.quickcheck import load_description
        from irkit.tools.opt import UsageError

        if args.output or args.name:
            raise UsageError("--check compares a description with this host; it writes none (no -o or --name)")
        hardware = load_description(args.check)  # a description with errors is reported with its locations
        return _guarded(lambda: run_check(args, hardware, progress), progress)
    return _guarded(lambda: _calibrate(args, progress), progress)


def _guarded(job, progress: Progress) -> int:
    """Run `job`, a problem with the host or the build reported as one line (exit 1)."""
    from irkit.tools.opt import EXIT_INPUT

    try:
        return job()
    except CalibrateError as exc:
        progress.fail()
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_INPUT
    except DiagnosticError as exc:
        progress.fail()
        sys.stderr.write(_diagnostic_text(exc))
        return EXIT_INPUT
    except BaseException:
        progress.fail()
        raise


def _diagnostic_text(exc: DiagnosticError) -> str:
    """A build failure as one error line, then the compiler's own output (if any), indented.
    Any other problem is its own located diagnostics, not called a build failure."""
    from irkit.backends.build import BuildError
    from irkit.diagnostics import SourceManager, render_text

    if not isinstance(exc, BuildError):
        return "".join(f"{PROG}: {render_text(d, SourceManager())}\n" for d in exc.diagnostics)
    errors = [d for d in exc.diagnostics if d.severity == "error"] or exc.diagnostics
    message = errors[0].message if errors else "unknown error"
    first, *rest = message.splitlines() or [""]
    command = next((line.split()[1] for line in rest if line.startswith("command:") and len(line.split()) > 1), None)
    if command and command not in first:
        first += f" (compiler {command})"
    out = [f"{PROG}: error: cannot build the microbenchmarks: {first}"]
    detail = [line for line in rest if not line.startswith("command:") and line.strip() != "(no output)"]
    out += [f"  {line}" for line in detail[:MAX_COMPILER_LINES]]
    return "\n".join(out) + "\n"


def _name(args: argparse.Namespace) -> str:
    from irkit.tools.opt import UsageError

    if args.name is not None:
        name = args.name
        if not NAME.match(name):
            raise UsageError(f"--name {name!r}: a hardware name is a letter or _ then letters, digits or _")
        return name
    if args.output:
        stem = Path(args.output).stem
        if not NAME.match(stem):
            raise UsageError(
                f"the file name '{Path(args.output).name}' does not make a hardware name ('hardware {stem}' "
                "would not parse); choose another file name or give --name"
            )
        return stem
    return "host"


def _check_output(path: str) -> None:
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise CalibrateError(f"cannot write {path}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise CalibrateError(f"cannot write {path}: the directory {parent} is not writable")


def build_flags(march: str | None) -> tuple[list[str] | None, str]:
    """(the compiler flags, the -march recorded) for `--march` (None: irkit's defaults or $IRKIT_CFLAGS)."""
    from irkit.backends.build import default_cflags, march_cflags
    from irkit.tools.opt import UsageError

    try:
        cflags = march_cflags(march)
    except DiagnosticError as exc:
        raise UsageError(exc.diagnostics[0].message) from None
    flags = cflags if cflags is not None else default_cflags()
    recorded = next((f.split("=", 1)[1] for f in reversed(flags) if f.startswith("-march=")), "(compiler default)")
    return cflags, recorded


def load_library(host: Host, cflags: list[str] | None, march: str):
    """Build the microbenchmarks and make sure this host can run them (no SIGILL later)."""
    from irkit.calibrate import kernels

    lib = kernels.build(cflags)
    missing = sorted(lib.isa - host.flags)
    if missing and host.flags:
        raise CalibrateError(
            f"the microbenchmarks built for -march={march} use {' '.join(missing)}, which this CPU lacks; "
            "choose an ISA this host has (e.g. --march x86-64-v3)"
        )
    if not lib.openmp:
        raise CalibrateError(
            "the microbenchmarks were built without OpenMP (IRKIT_CFLAGS lacks -fopenmp?); the all-core figures need it"
        )
    return lib


def context(host: Host, lib) -> plausible.Context:
    """What the checks compare with: the build's widths, the threads, the clocks the system states."""
    return plausible.Context(
        widths=lib.widths,
        threads=host.threads,
        cpus=host.cpus,
        caches=host.caches,
        cpuinfo_hz=host.cpu.mhz,
        cpufreq=host.cpufreq,
    )


@dataclass
class Run:
    """One calibration: what was detected, built and measured, for the comments and the JSON report."""

    name: str
    quick: bool
    host: Host
    settings: Settings
    calibrator: Calibrator
    results: dict[str, Result]
    stamp: datetime.datetime
    seconds: float
    compiler: str
    flags: list[str]
    load: float | None
    march: str = "native"
    checked: Checked | None = None
    ctx: plausible.Context | None = None
    warnings: list[str] = field(default_factory=list)
    fits: list = field(default_factory=list)  # irkit.calibrate.fit.Fitted


def _calibrate(args: argparse.Namespace, progress: Progress) -> int:
    from irkit.backends import build as backend
    from irkit.calibrate import detect, fingerprint, writer
    from irkit.calibrate.checked import run_checked
    from irkit.tools.opt import EXIT_OK

    name = _name(args)
    if args.output:
        _check_output(args.output)
    cflags, march = build_flags(args.march)
    began = time.perf_counter()
    stamp = datetime.datetime.now(datetime.UTC)
    host = detect.detect()
    load = _load_average()
    settings = measure.QUICK if args.quick else measure.FULL
    caches = ", ".join(
        f"{c.name} {writer.approx_bytes(c.size)}" + (f" (shared by {c.shared})" if c.shared > 1 else "")
        for c in host.caches
    )
    err = sys.stderr
    err.write(f"{PROG}: {host.model}, {host.threads} threads ({host.threads_source}), {host.simd}-bit SIMD; {caches}\n")

    # The plan needs only the host; building the microbenchmarks is its first step.
    calibrator = Calibrator(host, settings)
    steps = calibrator.steps()
    l1_ways = bool(host.caches and host.caches[0].ways)
    progress.total = len(steps) + 1 + fit.planned(len(host.caches), quick=bool(args.quick), ways=l1_ways)
    progress.start(f"building the microbenchmarks (irkit's C backend, -march={march})")
    t0 = time.perf_counter()
    lib = load_library(host, cflags, march)
    calibrator.lib = lib
    progress.finish(f"{lib.vector_bytes * 8}-bit vectors, {time.perf_counter() - t0:.1f} s")
    ctx = context(host, lib)
    checked = run_checked(steps, progress, ctx)

    run = Run(
        name=name,
        quick=bool(args.quick),
        host=host,
        settings=settings,
        calibrator=calibrator,
        results=checked.results,
        stamp=stamp,
        seconds=time.perf_counter() - began,
        compiler=backend.compiler_version(backend.find_compiler()),
        flags=cflags if cflags is not None else backend.default_cflags(),
        load=load,
        march=march,
        checked=checked,
        ctx=ctx,
        warnings=_warnings(checked.results, host) + checked.warnings,
    )
    for w in run.warnings:
        err.write(f"{PROG}: warning: {w}\n")

    def describe(values: dict[str, float], comments: list[str]) -> str:
        spec = writer.hardware_spec(
            name,
            host,
            values,
            lanes=lib.vector_bytes // 4,
            comments=comments,
            notes=_notes(run),
            simd=lib.widths[0],
            texts=fingerprint.text_fields(fingerprint.of_cpu(host.cpu), march),
        )
        return writer.render(spec)

    # The pages numpy's large arrays live on decide which caches see a power-of-two stride
    huge = detect_huge_page()
    if huge is not None:
        checked.values["huge_page"] = float(huge)
    # The figures fitted on calibration documents need the measured ones priced first.
    fits = _fits(describe(checked.values, []), cflags, bool(args.quick), progress)
    for f in fits:
        if f.value is not None:
            checked.values[f.figure] = f.value
        else:
            err.write(f"{PROG}: warning: {f.figure} {f.note}\n")
    run.fits = fits
    run.seconds = time.perf_counter() - began
    text = describe(checked.values, _comments(run))
    _self_check(text, args.output or f"{name}.hw")

    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:
            raise CalibrateError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        err.write(f"{PROG}: wrote {args.output} (hardware {name}) in {run.seconds:.1f} s\n")
    elif not args.json:
        sys.stdout.write(text)
    if args.json:
        sys.stdout.write(json.dumps(_report(run, args.output, text), indent=1) + "\n")
    return EXIT_OK


FIT_SETTLE_SECONDS = 1.0


def _fits(text: str, cflags: list[str] | None, quick: bool, progress: Progress) -> list:
    """The figures irkit.calibrate.fit solves for, against the description measured so far."""
    from irkit.frontend import parse_design
    from irkit.perf.hardware import hardware_of_module

    hardware = hardware_of_module(parse_design(text, "<calibration>"), "<calibration>")
    # The all-core steps leave OpenMP's worker threads spinning for a while (libgomp waits
    # actively before it sleeps); on a VM whose two vCPUs are one core's hyperthreads that slows a
    # single-threaded benchmark by up to 1.7x (a chain of maxima: 62 us a call, 36 us a second
    # later).  The fits are single-threaded: they start once the workers have gone to sleep.
    time.sleep(FIT_SETTLE_SECONDS)
    out = []
    try:
        for case in fit.plan(hardware, quick=quick):
            progress.start(f"fitted: {case.label}")
            got = case.run(hardware, cflags)
            progress.finish(fit.describe(got))
            out.extend(got)
    finally:
        fit.release_built()
    return out


def _report(run: Run, output: str | None, text: str) -> dict:
    """The JSON of `--json`: base units (FLOP/s, B/s, Hz, s), every sample, the detected host, the text."""
    host, lib = run.host, run.calibrator.lib
    assert lib is not None
    return {
        "name": run.name,
        "output": output,
        "quick": run.quick,
        "date": run.stamp.isoformat(timespec="seconds"),
        "seconds": round(run.seconds, 3),
        "host": {
            "model": host.model,
            "simd": host.simd,
            "threads": host.threads,
            "threads_source": host.threads_source,
            "threads_per_core": host.threads_per_core,
            "cpus": host.cpus,
            "memory": host.memory,
            "caches": [{"name": c.name, "size": c.size, "line": c.line, "shared": c.shared} for c in host.caches],
            "load_average": run.load,
        },
        "build": {
            "library": lib.path,
            "compiler": run.compiler,
            "flags": run.flags,
            "march": run.march,
            "vector_bytes": lib.vector_bytes,
            "widths": lib.widths,
            "openmp": lib.openmp,
        },
        "measurements": {key: r.as_json() for key, r in run.results.items()},
        "values": run.checked.values if run.checked else {},
        "checks": {
            "failed_first": [{"figure": p.figure, "message": p.message} for p in run.checked.first_problems]
            if run.checked
            else [],
            "measured_again": run.checked.again if run.checked else [],
            "left_out": run.checked.left_out if run.checked else {},
        },
        "capacities": [
            {"level": c.level, "size": c.size, "effective_size": c.effective, "plateau": c.plateau, "note": c.note}
            for c in run.calibrator.capacities
        ],
        "triad_elements": run.calibrator.arrays,
        "triad_bytes_per_element": measure.TRIAD_BYTES,
        "call_overhead_runner": run.calibrator.call_ctypes,
        "warnings": run.warnings,
        "hw": text,
    }


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _warnings(results, host) -> list[str]:
    """Signs that the host was busy: all cores together well below threads x one core."""
    out = []
    one, every = results.get("flops_f32"), results.get("flops_f32_all")
    cores = min(host.threads, host.cpus or host.threads)
    if one and every and cores > 1 and every.value < 0.75 * cores * one.value:
        out.append(
            f"FP32 on {host.threads} threads reached only {every.value / one.value:.2f} x one core: other processes "
            "were probably using the CPUs, so the all-core figures (flops_*_all, bandwidth_all, dram bandwidth, "
            "parallel_overhead) are pessimistic; rerun on a quiet machine"
        )
    return out


def _comments(run: Run) -> list[str]:
    """The file's header: when, where, with what, how (docs/calibrate.md says it at length)."""
    from irkit.calibrate.kernels import ARRAY, CHAINS
    from irkit.calibrate.writer import describe

    host, lib, calibrator = run.host, run.calibrator.lib, run.calibrator
    assert lib is not None
    bits = lib.vector_bytes * 8
    bare = calibrator.call_ctypes
    bare_text = f"; through irkit's runner (argument checks) a call takes {describe(bare, 'latency')}" if bare else ""
    widths = ", ".join(f"{b}" if b > 32 else "scalar" for b in lib.widths)
    command = "irkit calibrate" + (" --quick" if run.quick else "") + (f" --march {run.march}" if lib.cflags else "")
    lines = [
        f"Hardware description '{run.name}', measured by `{command}`",
        f"on {run.stamp:%Y-%m-%d %H:%M} UTC in {run.seconds:.1f} s.",
        f"CPU: {host.model}; {host.threads} threads ({host.threads_source}); caches from /sys/devices/system/cpu.",
        f"Compiler: {run.compiler}",
        *_wrap(
            f"  flags {' '.join(run.flags)} (irkit's C backend, -march={run.march}), {bits}-bit vectors "
            f"(widths {widths}), OpenMP {lib.openmp}.",
            subsequent="  ",
        ),
    ]
    if run.load is not None:
        lines.append(
            f"Load average before the run: {run.load:.2f} (a busy host lowers the figures, all-core ones most)."
        )
    if run.quick:
        lines.append("--quick: short trials, rough figures (for tests, not for pricing).")
    if run.checked and run.ctx:
        summary = plausible.clock_summary(run.checked.values, run.ctx, run.checked.clock_source)
        lines += ["", *_wrap(summary)]
    lines += [
        "",
        "How (docs/calibrate.md):",
        "- frequency: a chain of dependent imuls (3 cycles each), cross-checked with dependent register adds,",
        "  an L1 pointer chase, the TSC and the clocks /proc/cpuinfo and cpufreq state.",
        f"- flops_*: {CHAINS} independent chains of FMAs, an FMA counted as 2 flops; flops_f32/f64 at {bits} bits,",
        "  flops_*_512/256/128/scalar with explicit vectors of that width; *_all: every thread at once.",
        f"- div, sqrt, exp (irkit's relaxed_math exp), libm_exp: results per second, one core, vector loops over {ARRAY}",
        "  elements in L1, f32 and f64.",
        f"- bandwidth: STREAM triad a[i] = b[i] * s + c[i] on f32, counted as {measure.TRIAD_BYTES} B per element in L1",
        "  (2 loads + 1 store), 16 B beyond (the lines moved: write-allocate and write-back); one core on 3 arrays",
        "  totalling half the level's effective size; L1 bandwidth_256/128/scalar with explicit narrower vectors;",
        "  bandwidth_all and dram bandwidth: all threads at once, each on its own arrays.",
        "- bandwidth_read (dram bandwidth_read_core): one core reading the triad's arrays, writing nothing,",
        "  counted as the 12 B of lines filled per element: with the triad, what a fill and a write-back cost.",
        "- effective_size: where the level's speed ends in a sweep of the triad from 8 KiB to DRAM, one core;",
        "  dram bandwidth_core: that sweep's last point, 4 x the last-level cache (at least 64 MiB).",
        "- fp_latency(_f64): a chain of dependent adds, in cycles of that clock.",
        "- store_forward: a vector accumulated in memory across an outer loop, cycles an entry less one add.",
        "- page_fault: malloc and first write of 64 MiB, less a second write, per 4 KiB page.",
        "- parallel_overhead: one empty `omp parallel for schedule(static)` on all threads.",
        *_wrap(f"- call_overhead: an empty kernel's bare ctypes call, as benchmarks time kernels{bare_text}.", 100, "  "),
        f"- Throughputs: the best of {run.settings.trials} trials of ~{run.settings.target * 1e3:.0f} ms; "
        "overheads: the median.",
        "- Every figure was checked (irkit/calibrate/plausible.py); one failing twice is left out, said below.",
    ]
    if run.fits:
        lines.append(
            "- Fitted (irkit/calibrate/fit.py): each figure solved so that irkit's own prediction of a calibration"
        )
        lines.append("  document matches its measured time:")
        for f in run.fits:
            lines += _wrap(f"  {f.figure}: {f.note}", 100, "    ")
    lines += [f"WARNING: {w}" for w in run.warnings]
    return lines


def _wrap(text: str, width: int = 100, subsequent: str = "") -> list[str]:
    """`text` in lines of `width`, its leading spaces kept on the first line, `subsequent` before the others."""
    import textwrap

    lead = text[: len(text) - len(text.lstrip())]
    return textwrap.wrap(text.strip(), width, initial_indent=lead, subsequent_indent=subsequent) if text else []


def _notes(run: Run) -> dict[str, str]:
    """Trailing comments: where `cores` came from, and the triad arrays behind each level's figures."""
    host, arrays = run.host, run.calibrator.arrays
    notes: dict[str, str] = {"cores": f"threads ({host.threads_source})"}
    lib = run.calibrator.lib
    if lib is not None and lib.widths[0] != host.simd:
        notes["simd"] = f"built for -march={run.march}; the host has {host.simd}-bit vectors"
    texts = {"cpu": "/proc/cpuinfo model name", "march": "what the microbenchmarks were built for"}
    notes.update(texts)
    capacities = {c.level: c for c in run.calibrator.capacities}
    for level in [c.name for c in host.caches] + ["dram"]:
        one = arrays.get(f"{level}.bandwidth" if level != "dram" else "dram.bandwidth_core")
        every = arrays.get(f"{level}.bandwidth_all" if level != "dram" else "dram.bandwidth")
        parts = []
        if one:
            parts.append(f"1 core: {measure.arrays_text(one)}")
        if every:
            parts.append(f"all: {measure.arrays_text(every)} per thread")
        cap = capacities.get(level)
        if cap is not None and cap.note:
            parts.append(f"effective_size: {cap.note}")
        if parts:
            notes[level] = "; ".join(parts)
    return notes


def _self_check(text: str, filename: str) -> None:
    """The description must pass `irkit check`: a failure here is irkit's bug, not the host's."""
    from irkit.frontend import parse_design
    from irkit.tools.opt import InternalError

    try:
        parse_design(text, filename)
    except DiagnosticError as exc:
        problems = "; ".join(d.message for d in exc.diagnostics)
        raise InternalError(f"the written description does not check: {problems}") from None


def run_check(args: argparse.Namespace, hardware, progress: Progress) -> int:
    """`irkit calibrate --check FILE`: 0 when FILE fits this host, 1 when not."""
    from irkit.calibrate import detect, fingerprint
    from irkit.calibrate.quickcheck import (
        CHECK,
        TOLERANCES,
        Checker,
        Verdict,
        compare,
        described_figures,
        measure_figures,
        report_text,
    )

    began = time.perf_counter()
    recorded = hardware.text.get("march", "native")
    march_arg = args.march if args.march is not None else (recorded if recorded not in ("", "(compiler default)") else None)
    cflags, march = build_flags(march_arg)
    host = detect.detect()
    described = described_figures(hardware.values)
    lib = load_library(host, cflags, march)
    calibrator = Calibrator(host, CHECK, lib)
    checker = Checker(calibrator, hardware.values)
    measured = measure_figures(checker, described, progress)
    verdict = Verdict(
        compare(described, measured),
        fingerprint.mismatch(hardware, march=march if args.march is not None else None),
        [key for key in TOLERANCES if key not in described],
    )
    seconds = time.perf_counter() - began
    if args.json:
        data = {
            "description": args.check,
            "fits": verdict.fits,
            "cpu": verdict.cpu,
            "figures": [f.as_json() for f in verdict.figures],
            "seconds": round(seconds, 3),
        }
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        sys.stdout.write(report_text(args.check, verdict, seconds))
    return 0 if verdict.fits else 1
