"""`irkit calibrate [-o host.hw]`: measure this machine and write its hardware description.

    irkit calibrate                   # print the description of this host (hardware host { ... })
    irkit calibrate -o lab.hw         # write it as lab.hw (hardware lab { ... })
    irkit calibrate --quick --json    # a few seconds, rough figures, and the measurements as JSON

Why a command: the cost model is only as good as the figures it prices
with, and the bundled `generic` profile is a guess.  This measures peak
FP32/FP64 FMA throughput (one core, all cores), vector division, square
root and exp, the triad bandwidth of every cache level and of DRAM, the
clock, and the fixed costs of a parallel loop and of a kernel call -- with
microbenchmarks built by irkit's own C backend -- and writes them in the
language's hardware syntax, so a document says `hardware host` and is
priced for the machine it runs on.  How each figure is measured and
counted: `irkit.calibrate.measure` and docs/calibrate.md.

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

from irkit.calibrate import CalibrateError, measure
from irkit.calibrate.detect import Host
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


def run(args: argparse.Namespace) -> int:
    from irkit.tools.opt import EXIT_INPUT

    progress = Progress(sys.stderr)
    try:
        return _calibrate(args, progress)
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
    """A build failure as one error line, then the compiler's own output (if any), indented."""
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
    warnings: list[str] = field(default_factory=list)


def _calibrate(args: argparse.Namespace, progress: Progress) -> int:
    from irkit.backends import build as backend
    from irkit.calibrate import detect, kernels, writer
    from irkit.tools.opt import EXIT_OK

    name = _name(args)
    if args.output:
        _check_output(args.output)
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
    progress.total = len(steps) + 1
    progress.start("building the microbenchmarks (irkit's C backend)")
    t0 = time.perf_counter()
    lib = kernels.build()
    if not lib.openmp:
        raise CalibrateError(
            "the microbenchmarks were built without OpenMP (IRKIT_CFLAGS lacks -fopenmp?); the all-core figures need it"
        )
    calibrator.lib = lib
    progress.finish(f"{lib.vector_bytes * 8}-bit vectors, {time.perf_counter() - t0:.1f} s")
    results = measure.run_steps(steps, progress)

    run = Run(
        name=name,
        quick=bool(args.quick),
        host=host,
        settings=settings,
        calibrator=calibrator,
        results=results,
        stamp=stamp,
        seconds=time.perf_counter() - began,
        compiler=backend.compiler_version(backend.find_compiler()),
        flags=backend.default_cflags(),
        load=load,
        warnings=_warnings(results, host),
    )
    for w in run.warnings:
        err.write(f"{PROG}: warning: {w}\n")
    values = {key: r.value for key, r in results.items()}
    spec = writer.hardware_spec(
        name, host, values, lanes=lib.vector_bytes // 4, comments=_comments(run), notes=_notes(run)
    )
    text = writer.render(spec)
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
            "vector_bytes": lib.vector_bytes,
            "openmp": lib.openmp,
        },
        "measurements": {key: r.as_json() for key, r in run.results.items()},
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
    lines = [
        f"Hardware description '{run.name}', measured by `irkit calibrate{' --quick' if run.quick else ''}`",
        f"on {run.stamp:%Y-%m-%d %H:%M} UTC in {run.seconds:.1f} s.",
        f"CPU: {host.model}; {host.threads} threads ({host.threads_source}); caches from /sys/devices/system/cpu.",
        f"Compiler: {run.compiler}",
        f"  flags {' '.join(run.flags)} (irkit's C backend), {bits}-bit vectors, OpenMP {lib.openmp}.",
    ]
    if run.load is not None:
        lines.append(
            f"Load average before the run: {run.load:.2f} (a busy host lowers the figures, all-core ones most)."
        )
    if run.quick:
        lines.append("--quick: short trials, rough figures (for tests, not for pricing).")
    lines += [
        "",
        "How (docs/calibrate.md):",
        f"- flops_*: {CHAINS} independent chains of {bits}-bit FMAs, an FMA counted as 2 flops;",
        f"  *_all: every thread at once ({host.threads}, OpenMP).",
        f"- div_f32, sqrt_f32, exp_f32: f32 results per second, one core, vector loops over {ARRAY} floats",
        "  in L1 (exp: irkit's relaxed_math irkit_fast_expf).",
        f"- bandwidth: STREAM triad a[i] = b[i] * s + c[i] on f32, counted as {measure.TRIAD_BYTES} B per element",
        "  (2 loads + 1 store; the write-allocate read is not counted, so DRAM moves 4/3 of it);",
        "  one core on 3 arrays totalling half the level (half one core's share of a shared level);",
        "  bandwidth_all and dram bandwidth: all threads at once, each on its own arrays;",
        "  DRAM arrays are 4 x the last-level cache.",
        "- frequency: a chain of dependent integer adds, one a cycle.",
        "- fp_latency: a chain of dependent f32 adds, in cycles of that clock.",
        "- store_forward: a vector accumulated in memory across an outer loop, cycles an entry less one add.",
        "- page_fault: malloc and first write of 64 MiB, less a second write, per 4 KiB page.",
        "- parallel_overhead: one empty `omp parallel for schedule(static)` on all threads.",
        f"- call_overhead: an empty kernel's bare ctypes call, as benchmarks time kernels{bare_text}.",
        f"- Throughputs: the best of {run.settings.trials} trials of ~{run.settings.target * 1e3:.0f} ms; "
        "overheads: the median.",
    ]
    lines += [f"WARNING: {w}" for w in run.warnings]
    return lines


def _notes(run: Run) -> dict[str, str]:
    """Trailing comments: where `cores` came from, and the triad arrays behind each level's figures."""
    host, arrays = run.host, run.calibrator.arrays
    notes: dict[str, str] = {"cores": f"threads ({host.threads_source})"}
    for level in [c.name for c in host.caches] + ["dram"]:
        one = arrays.get(f"{level}.bandwidth" if level != "dram" else "dram.bandwidth_core")
        every = arrays.get(f"{level}.bandwidth_all" if level != "dram" else "dram.bandwidth")
        parts = []
        if one:
            parts.append(f"1 core: {measure.arrays_text(one)}")
        if every:
            parts.append(f"all: {measure.arrays_text(every)} per thread")
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
