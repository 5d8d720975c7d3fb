"""`irkit validate`: run the cost model against measurements over a suite of kernels, schedules and sizes.

    irkit validate --hw host.hw --out VALIDATION.md --plot validation.png
    irkit validate --only gemm,softmax        # some kernels
    irkit validate --quick --json             # a smoke test: 2 kernels, 2 schedules, tiny sizes
    irkit validate --march x86-64-v3 --hw avx2.hw   # the suite built for AVX2 only

Every example in `examples/` is built under several schedules (its own,
none, and alternatives such as no `parallel`, a simple loop order, other
tiles, unfused stages; `irkit.validate.suite`) and timed at sizes from
cache-resident to DRAM-bound, each in its steady state and three times
(three passes over the suite); the cost model predicts each case for the
hardware `--hw` (default: each document's own hardware section).  The
report gives the median and 90th-percentile absolute percentage error
|predicted - measured| / measured, and per kernel and size (a group) the
top-1 score, pairwise ordering accuracy and Kendall's tau-b between the
predicted and the measured order of the schedules, against the targets
for the build (`irkit.validate.targets`); each case's run-to-run spread
marks the errors that lie inside the noise.  A description that is not
this host's, or not made for `--march`, is a warning (stderr and the
report).  Progress goes to stderr.  The full suite takes about two
minutes on a 2-core machine.  docs/validate.md has the details.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import tempfile
import time
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="measure and predict a suite of kernels; report the model's error")
    p.add_argument("--hw", metavar="SPEC", help="hardware: a .hw file or a profile name (default: each document's own)")
    p.add_argument("--quick", action="store_true", help="2 kernels, 2 schedules, tiny sizes (a smoke test)")
    p.add_argument("--only", metavar="KERNELS", help="comma-separated kernels (examples) to validate, e.g. gemm,blur")
    p.add_argument("--json", action="store_true", help="print every row and the summary as one JSON object")
    p.add_argument("--out", metavar="FILE.md", help="write the Markdown report here (default: print it)")
    p.add_argument("--plot", metavar="FILE.png", help="predicted-vs-measured plot (needs matplotlib: pip install 'irkit[plot]')")
    p.add_argument("--examples", metavar="DIR", help="the example documents (default: the ones installed with irkit, examples/ of the source)")
    p.add_argument("--cflags", help="C compiler flags replacing the defaults")
    p.add_argument(
        "--march",
        metavar="ISA",
        help="build the suite for this ISA instead of the host's (-march=ISA in irkit's default flags), e.g. "
        "x86-64-v3 for AVX2 without AVX-512; give --hw a description calibrated for it",
    )
    from irkit.tools.tune import add_cluster_arguments

    add_cluster_arguments(p)


def run(args: argparse.Namespace) -> int:
    from irkit.perf import load_hardware
    from irkit.tools.opt import EXIT_INPUT, EXIT_OK, UsageError
    from irkit.validate import measure, report, stats, suite, targets

    only = [k.strip() for k in args.only.split(",") if k.strip()] if args.only else None
    if args.only is not None and not only:
        raise UsageError("--only expects kernel names, e.g. --only gemm,blur")
    cflags, march = build_flags(args)
    examples = Path(args.examples) if args.examples else suite.EXAMPLES_DIR
    kernels = suite.select(only, args.quick)
    from irkit.tools.tune import cluster_hardware, open_executor

    hw = load_hardware(args.hw) if args.hw else None
    executor = open_executor(args)
    if hw is None and executor.remote:  # predictions for the host that measures
        hw = cluster_hardware(executor)
    predictor = measure.real_predictor()
    plan = measure.QUICK_PLAN if args.quick else measure.FULL_PLAN
    goal = targets.targets_for(march)

    def log(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    warnings = host_warnings(hw, march, cflags)
    for w in warnings:
        log(f"irkit validate: warning: {w}")
    started = datetime.datetime.now().astimezone()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="irkit-validate-") as tmp:
        paths = suite.write_variants(kernels, Path(tmp), examples)
        cases = suite.cases(kernels, paths, examples)
        n_schedules = sum(len(k.variants) for k in kernels)
        n_sizes = sum(len(k.sizes) for k in kernels)
        hardware = args.hw or (f"{executor.host().cpu}'s calibrated description" if executor.remote else "each document's own")
        log(
            f"irkit validate: {len(cases)} cases ({len(kernels)} kernels, {n_schedules} schedules, "
            f"{n_sizes} sizes), each measured {'twice' if measure.PASSES == 2 else f'{measure.PASSES} times'}; "
            f"built for {march or 'native'}; "
            f"hardware: {hardware}"
        )
        with suite.hardware_path(examples):
            try:
                rows = measure.run_cases(
                    cases, plan, hw, predictor, log, cflags, retry_seconds=5 if args.quick else 60, executor=executor
                )
            finally:
                executor.close()
    for row in rows:  # the temporary documents are gone: name the example and the schedule instead
        row["document"] = f"{row.pop('example')} (schedule {row['schedule']})"
    summary = stats.summarize(rows, goal)
    loads = [r["other_load"] for r in rows if r.get("other_load") is not None]
    summary["other_load"] = sum(loads) / len(loads) if loads else None
    result = {
        "command": command_text(args),
        "date": started.isoformat(timespec="seconds"),
        "wall_s": time.perf_counter() - t0,
        "hardware": hardware,
        "measured_on": executor.host().as_dict(),
        "machine": machine_text(),
        "march": march or "native",
        "cflags": cflags,
        "warnings": warnings,
        "passes": measure.PASSES,
        "options": {"quick": args.quick, "only": only, "plan": vars(plan)},
        "summary": summary,
        "rows": rows,
    }
    plot_path = Path(args.plot) if args.plot else (Path(args.out).with_suffix(".png") if args.out else None)
    if plot_path is not None:
        why_not = report.plot(result, plot_path)
        if why_not:
            log(f"irkit validate: {why_not}")
            result["plot_skipped"] = why_not
        else:
            result["plot"] = str(plot_path)
    text = report.markdown(result)
    if args.out:
        Path(args.out).write_text(text)
    for w in warnings:  # again at the end, next to the figures they put in doubt
        log(f"irkit validate: warning: {w}")
    log(summary_line(summary, time.perf_counter() - t0, march or "native"))
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    elif not args.out:
        sys.stdout.write(text)
    return EXIT_INPUT if summary["failed"] else EXIT_OK


def build_flags(args: argparse.Namespace) -> tuple[list[str] | None, str | None]:
    """(the C flags, the ISA built for: None for the host's own) from --cflags / --march."""
    from irkit.backends.build import march_cflags
    from irkit.diagnostics import DiagnosticError
    from irkit.tools.opt import UsageError

    if args.cflags is not None and args.march is not None:
        raise UsageError("--cflags and --march both set the compiler flags; give one (--cflags '... -march=ISA')")
    if args.cflags is not None:
        cflags = args.cflags.split()
        marches = [f.split("=", 1)[1] for f in cflags if f.startswith("-march=")]
        return cflags, (marches[-1] if marches and marches[-1] != "native" else None)
    try:
        cflags = march_cflags(args.march)
    except DiagnosticError as exc:
        raise UsageError(exc.diagnostics[0].message) from None
    return cflags, (None if args.march in (None, "native") else args.march)


def host_warnings(hw, march: str | None, cflags: list[str] | None) -> list[str]:
    """Why the description given with --hw may not fit this host or this build (none without --hw)."""
    from irkit.validate import host

    if hw is None:
        return []
    found = [host.host_mismatch(hw), host.march_mismatch(hw, march, cflags)]
    return [w for w in found if w]


def command_text(args: argparse.Namespace) -> str:
    words = ["irkit validate"]
    for flag in ("hw", "only", "out", "plot", "examples", "cflags", "march"):
        value = getattr(args, flag)
        if value is not None:
            words.append(f"--{flag} {value}")
    words += [f"--{flag}" for flag in ("quick", "json") if getattr(args, flag)]
    return " ".join(words)


def machine_text() -> str:
    import os

    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def summary_line(s: dict, wall: float, march: str = "native") -> str:
    """The last line printed: every summary figure, and the targets missed."""
    from irkit.validate import measure

    def pct(v):
        return "-" if v is None else f"{v:.1f}%"

    def num(v):
        return "-" if v is None else f"{v:.2f}"

    failed = f", {s['failed']} FAILED" if s["failed"] else ""
    share = "-" if s["top1_share"] is None else f"{100 * s['top1_share']:.0f}%"
    t = s["targets"]
    missed = [name for name, ok in s["met"].items() if not ok]
    line = (
        f"irkit validate ({march}): {s['compared']} cases{failed}; median |error| {pct(s['median_abs_error_pct'])}, "
        f"p90 {pct(s['p90_abs_error_pct'])}, Kendall tau mean {num(s['mean_tau'])} (min {num(s['min_tau'])}), "
        f"top-1 >= {t['top1_score']:g} in {share} of {s['top1_groups']} groups (mean {num(s['mean_top1'])}), "
        f"pairwise {num(s['mean_pairwise'])} ({num(s['mean_pairwise_noise'])} with pairs within noise agreeing); "
        f"{s['within_spread']} of {s['compared']} errors within the run-to-run spread "
        f"(median spread {pct(s['median_spread_pct'])}"
        + (
            f"; the host's floor {pct(s['floor_median_pct'])} / p90 {pct(s['floor_p90_pct'])}"
            if s.get("floor_p90_pct") is not None
            else ""
        )
        + "); "
        f"targets ({t['label']}): {'all met' if not missed else 'missed ' + ', '.join(_TARGET_NAMES[m] for m in missed)}; "
        f"{wall:.0f} s"
    )
    load = s.get("other_load")
    if load is not None and load > measure.BUSY_LOAD:
        line += (
            f"\nirkit validate: WARNING: other processes kept {load:.2f} cores busy on average while kernels "
            "were timed; parallel kernels waited for cores. Rerun on a quiet machine."
        )
    return line


_TARGET_NAMES = {"median_abs_error_pct": "median", "p90_abs_error_pct": "p90", "mean_tau": "tau", "top1_share": "top-1"}
