"""`python -m bench.tune`: `irkit tune` on the benchmark kernels, against the hand schedules and the peers.

    python -m bench.tune                              # every kernel, 10 minutes of tuning each (~40 min)
    python -m bench.tune --quick --only softmax,blur  # tiny sizes, a 20 s budget: a smoke test
    python -m bench.tune --hw host.hw --budget 5m --log tune.jsonl

For each kernel (gemm 2048^3, blur 4096^2, softmax 4096x1024, conv2d
64->64 channels at 56x56: the sizes of `python -m bench`'s cases; `--quick`
takes its quick sizes) the hand-scheduled document of `bench/documents/`
has its schedule blocks removed and is tuned by `irkit tune` for those
sizes (`irkit.tune.tuner.tune`, progress on stderr), with the hardware
description `--hw` (a calibrated one: `irkit calibrate -o host.hw`) or, by
default, the document's own section.  The tuned document is written to
`bench/tuned/KERNEL.design` (with `--out` elsewhere, `tuned/` next to it)
and kept: it is the result.

Then one alternated measurement (`bench.suite.run_case`: every contender
checked against the tuned kernel, then timed in turn) puts side by side
the tuned document, the hand-scheduled one ("irkit hand schedule", its own
build and its own copies of the inputs), the kernel's peers of `python -m
bench` and, for the blur, Halide's three autoschedulers (Mullapudi2016,
Adams2019, Li2018; one that cannot load or schedule is reported with its
error).  The report (`TUNING.md` and `bench/tune.json`) gives each
contender's median and its ratio to the tuned kernel, whether each target
is met, and what the tuner did: its time, the candidates the screening
model scored (and how many a second), those the full cost model priced,
those measured, and how far the full model's first choice was from the
measured best.

Targets (ratio = peer median / tuned median, so above 1 the tuned kernel
is faster): gemm >= 0.9x numpy (OpenBLAS); blur >= 1.5x Halide's classic
schedule and >= 1.2x the best autoscheduler; softmax >= 5x numpy; conv2d
>= 1.2x numpy im2col + matmul; every kernel >= 0.95x its hand schedule.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ("gemm", "blur", "softmax", "conv2d")
DEFAULT_OUT = ROOT / "TUNING.md"
DEFAULT_JSON = ROOT / "bench" / "tune.json"
DEFAULT_TUNED = ROOT / "bench" / "tuned"
QUICK_BUDGET = 20.0
FULL_BUDGET = 600.0
HAND = "irkit hand schedule"
TUNED = "irkit tuned"
AUTOSCHEDULERS = ("Mullapudi2016", "Adams2019", "Li2018")
AUTOSCHEDULER = "Halide autoscheduler"

# (what, the peer's name prefix, or BEST_AUTOSCHEDULER; the least ratio peer/tuned)
BEST_AUTOSCHEDULER = "best autoscheduler"
TARGETS: dict[str, list[tuple[str, str, float]]] = {
    "gemm": [("numpy matmul (OpenBLAS)", "numpy matmul", 0.9)],
    "blur": [
        ("Halide classic schedule", "Halide (classic schedule", 1.5),
        ("best Halide autoscheduler", BEST_AUTOSCHEDULER, 1.2),
    ],
    "softmax": [("numpy (max-subtracted)", "numpy (max-subtracted)", 5.0)],
    "conv2d": [("numpy im2col + matmul", "numpy im2col", 1.2)],
}
EVERY_TARGET = ("hand schedule", HAND, 0.95)


# ---- arguments --------------------------------------------------------------


def duration(text: str) -> float:
    from irkit.tools.opt import UsageError
    from irkit.tools.tune import parse_duration

    try:
        return parse_duration(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.tune",
        description="Tune the benchmark kernels with irkit tune (from their documents without schedules), then time "
        "the tuned kernels against the hand schedules and the peers; write TUNING.md and bench/tune.json.",
    )
    p.add_argument(
        "--budget",
        type=duration,
        metavar="TIME",
        help=f"tuning budget per kernel (90s, 10m; default {FULL_BUDGET / 60:g}m, quick {QUICK_BUDGET:g}s); "
        "measuring the finalists still runs after it",
    )
    p.add_argument("--hw", metavar="SPEC", help="hardware for the tuner: a .hw file (irkit calibrate -o host.hw) or a "
                   "profile name (default: each document's own section)")  # fmt: skip
    p.add_argument("--only", metavar="NAMES", help=f"comma-separated subset of: {', '.join(KERNELS)}")
    p.add_argument("--quick", action="store_true", help="tiny sizes, a short search and short timing (a smoke test)")
    p.add_argument("--top-k", type=int, default=None, metavar="K", help="candidates the tuner measures (default: irkit tune's, 8)")
    p.add_argument("--threads", type=int, default=2, help="threads for irkit and every peer (default 2)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="the Markdown report (default TUNING.md)")
    p.add_argument("--json", default=str(DEFAULT_JSON), help="raw results (default bench/tune.json)")
    p.add_argument(
        "--tuned-dir",
        metavar="DIR",
        help="where the tuned documents go (default bench/tuned; with --out elsewhere, tuned/ next to it)",
    )
    p.add_argument("--log", metavar="FILE.jsonl", help="the tuner's measurement log (candidates in it are not measured again)")  # fmt: skip
    args = p.parse_args(argv)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in KERNELS]
        if unknown:
            p.error(f"unknown kernel(s) {', '.join(unknown)}; choose from {', '.join(KERNELS)}")
        args.only = names
    else:
        args.only = list(KERNELS)
    if args.budget is None:
        args.budget = QUICK_BUDGET if args.quick else FULL_BUDGET
    if args.top_k is None:  # as `irkit tune`
        from irkit.tune.tuner import default_top_k

        args.top_k = default_top_k(args.quick)
    if args.threads < 1 or args.top_k < 1:
        p.error("--threads and --top-k must be positive")
    if args.tuned_dir is None:
        out = Path(args.out).resolve()
        args.tuned_dir = str(DEFAULT_TUNED if out == DEFAULT_OUT else out.parent / "tuned")
    return args


# ---- extra peers ------------------------------------------------------------


def hand_schedule(case, document: Path):
    """A peer: the hand-scheduled document at the case's sizes, its own build and its own copies of the inputs."""
    from bench.suite import irkit_contender

    def factory(arrays: dict):
        inputs = {k: arrays.get(k, v) for k, v in case.inputs.items()}  # copied into the kernel's own buffers
        con, _, _ = irkit_contender(dataclasses.replace(case, document=str(document), inputs=inputs, peers=[]))
        con.name = HAND
        con.note = f"{rel(document)} as written"
        return con

    factory.__name__ = HAND
    return factory


_PLUGINS: dict[str, str | None] = {}  # autoscheduler -> why it cannot load (None: loaded); each loaded once


def load_autoscheduler(hl, name: str) -> None:
    if name not in _PLUGINS:
        base = Path(hl.__file__).parent
        lib = f"libautoschedule_{name.lower()}.so"
        found = [p for p in (base / "lib64" / lib, base / "lib" / lib) if p.is_file()]
        if not found:
            _PLUGINS[name] = f"{lib} not found in {base}/lib64 or lib"
        else:
            try:
                hl.load_plugin(str(found[0]))
                _PLUGINS[name] = None
            except Exception as exc:  # noqa: BLE001
                from bench.suite import error_text

                _PLUGINS[name] = f"cannot load {lib}: {error_text(exc)}"
    if _PLUGINS[name] is not None:
        raise RuntimeError(_PLUGINS[name])


def halide_autoscheduled_blur(name: str, threads: int):
    """A peer: the blur's Halide pipeline scheduled by the autoscheduler `name` (a failure is its Contender's error)."""
    label = f"{AUTOSCHEDULER} {name}"

    def factory(arrays: dict):
        from bench import machine
        from bench.suite import Contender, error_text

        try:
            import halide as hl

            load_autoscheduler(hl, name)
            inp_np = arrays["inp"]
            h, w = inp_np.shape[0] - 2, inp_np.shape[1] - 2
            out_np = machine.aligned_empty((h, w))
            tag = name.lower()
            inp = hl.ImageParam(hl.Float(32), 2, f"inp_{tag}")
            x, y = hl.Var("x"), hl.Var("y")
            blur_x, blur_y = hl.Func(f"blur_x_{tag}"), hl.Func(f"blur_y_{tag}")
            blur_x[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
            blur_y[x, y] = (blur_x[x, y] + blur_x[x, y + 1] + blur_x[x, y + 2]) / 3
            inp.set_estimates([(0, w + 2), (0, h + 2)])  # Halide's x is numpy's last axis
            blur_y.set_estimates([(0, w), (0, h)])
            pipeline = hl.Pipeline(blur_y)
            target = hl.get_jit_target_from_environment()
            t0 = time.perf_counter()
            pipeline.apply_autoscheduler(target, hl.AutoschedulerParams(name, {"parallelism": str(threads)}))
            pipeline.compile_jit(target)
            seconds = time.perf_counter() - t0
            in_buf, out_buf = hl.Buffer(inp_np), hl.Buffer(out_np)
            inp.set(in_buf)
        except Exception as exc:  # noqa: BLE001 -- reported in its row
            return Contender(label, error=error_text(exc))
        return Contender(
            label,
            lambda: pipeline.realize(out_buf),
            lambda: out_np,
            note=f"parallelism {threads}, estimates at the case's size; scheduled and JIT-compiled in {seconds:.1f} s",
        )

    factory.__name__ = label
    return factory


# ---- the run ----------------------------------------------------------------


def rel(path: Path | str) -> str:
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def tuner_options(args, case, hw, say):
    from irkit.tune.tuner import Options

    options = Options(
        sizes=[dict(case.sizes)],
        hw=hw,
        budget=args.budget,
        top_k=args.top_k,
        log=Path(args.log) if args.log else None,
        report=say,
    )
    if args.quick:  # as `irkit tune --quick`
        from irkit.validate.measure import QUICK_PLAN

        options.width, options.depth, options.rerank, options.plan = 8, 6, 12, QUICK_PLAN
    return options


def tune_kernel(kernel: str, case, args, hw, say) -> dict:
    """Tune the document without its schedules; write the tuned document; {"tuned_document", "seconds", ...}."""
    from bench.suite import DOCUMENTS, error_text
    from irkit.tune.tuner import tune
    from irkit.validate.suite import replace_schedules

    hand = DOCUMENTS / f"{kernel}.design"
    text = replace_schedules(hand.read_text(), {})
    out = Path(args.tuned_dir) / f"{kernel}.design"
    info: dict = {"hand_document": rel(hand), "tuned_document": rel(out), "budget_s": args.budget, "error": None}
    t0 = time.perf_counter()
    try:
        result = tune(text, str(hand), tuner_options(args, case, hw, say))
    except Exception as exc:  # noqa: BLE001 -- said in the report; the other kernels still run
        info["error"] = error_text(exc)
        info["seconds"] = time.perf_counter() - t0
        return info
    out.parent.mkdir(parents=True, exist_ok=True)
    at = ", ".join(f"{k}={v}" for k, v in case.sizes.items())
    header = (
        f"# Tuned by `python -m bench.tune` ({'quick mode, ' if args.quick else ''}budget {args.budget:g} s, at {at}) "
        f"from {rel(hand)} without its schedule blocks;\n# the comments below are that document's.\n"
    )
    out.write_text(header + result.text)
    info |= result.to_json()
    info["wall_s"] = time.perf_counter() - t0
    return info


def run_kernel(kernel: str, args, hw, plan, log, say) -> dict:
    import numpy as np

    from bench import machine
    from bench.suite import DOCUMENTS, cases, run_case

    rng = np.random.default_rng(0)
    case = cases([kernel], args.quick, rng)[-1]  # gemm: the larger of the suite's two sizes
    log(f"{kernel} {case.size}: tuning for {args.budget:g} s ...")
    tuned = tune_kernel(kernel, case, args, hw, say)
    base: dict = {"name": kernel, "kernel": case.kernel, "size": case.size, "sizes": case.sizes, "tune": tuned}
    if tuned["error"]:
        log(f"  tuning FAILED: {tuned['error']}")
        return base | {"document": tuned["tuned_document"], "irkit": {"name": TUNED, "error": tuned["error"]}, "peers": []}
    log(f"  tuned in {tuned['seconds']:.0f} s: wrote {tuned['tuned_document']}; measuring ...")
    case.document = str((ROOT / tuned["tuned_document"]).resolve())  # DOCUMENTS / an absolute path is that path
    peers = [hand_schedule(case, DOCUMENTS / f"{kernel}.design"), *case.peers]
    if kernel == "blur":
        peers += [halide_autoscheduled_blur(name, args.threads) for name in AUTOSCHEDULERS]
    case.peers = peers
    t0, before = time.perf_counter(), machine.cpu_snapshot()
    row = run_case(case, plan, log)
    row["wall_s"] = time.perf_counter() - t0
    row["load"] = machine.other_load(before, machine.cpu_snapshot())
    row |= {"name": kernel, "tune": tuned, "document": tuned["tuned_document"]}
    row["irkit"]["name"] = TUNED
    for p in [row["irkit"], *row["peers"]]:
        if "median_s" in p:
            log(f"  {p['name']}: median {p['median_s'] * 1e3:.3f} ms over {p['runs']} runs")
        elif p.get("error"):
            log(f"  {p['name']}: {p['error']}")
    case.inputs.clear()
    return row


def run_all(args, command: str) -> dict:
    from bench import machine
    from bench.suite import add_pct_of_peak, probe
    from bench.timing import Plan

    started = datetime.datetime.now().astimezone()
    snap = machine.cpu_snapshot()
    log = print

    def say(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    limits_ctx = None
    try:
        from threadpoolctl import threadpool_limits

        limits_ctx = threadpool_limits(limits=args.threads)
    except ImportError:
        pass
    hw, hw_text = None, "each document's own hardware section"
    if args.hw:
        from irkit.perf import load_hardware

        hw, hw_text = load_hardware(args.hw), f"`{args.hw}`"
    desc = machine.describe(args.threads)
    log(f"machine: {desc['cpu']}, {desc['cores']} cores, {desc['simd']}, {desc['compiler']}")
    limits = probe(args)
    plan = Plan(3, 0.0, 5.0, 0.0) if args.quick else Plan(7, 1.0, 150.0, 0.15)  # python -m bench's plans
    rows = [run_kernel(kernel, args, hw, plan, log, say) for kernel in args.only]
    del limits_ctx
    load = machine.other_load(snap, machine.cpu_snapshot())
    limits = probe(args, limits)
    for row in rows:
        if "work" in row:
            add_pct_of_peak(row, limits)
        row["targets"] = targets(row)
    return {
        "command": command,
        "date": started.isoformat(timespec="seconds"),
        "options": {
            "quick": args.quick,
            "only": args.only,
            "budget": args.budget,
            "top_k": args.top_k,
            "threads": args.threads,
            "hw": args.hw,
            "log": args.log,
            "plan": dataclasses.asdict(plan),
        },
        "hardware": hw_text,
        "machine": desc,
        "limits": limits,
        "load": load,
        "benchmarks": rows,
    }


# ---- targets ----------------------------------------------------------------


def targets(row: dict) -> list[dict]:
    """Each target of the row's kernel: {"what", "threshold", "peer", "ratio", "met", "why"}; met is None when
    it could not be measured (the tuned kernel or the peer failed), False when the results disagree."""
    tuned = row.get("irkit", {})
    out = []
    for what, prefix, threshold in [*TARGETS.get(row.get("name", ""), []), EVERY_TARGET]:
        t: dict = {"what": f">= {threshold:g}x {what}", "threshold": threshold, "peer": None, "ratio": None}
        if prefix == BEST_AUTOSCHEDULER:
            candidates = [p for p in row.get("peers", []) if p["name"].startswith(AUTOSCHEDULER)]
            timed = [p for p in candidates if p.get("median_s")]
            peer = min(timed, key=lambda p: p["median_s"]) if timed else None
            missing = "; ".join(f"{p['name']}: {p.get('error')}" for p in candidates) or "no autoscheduler ran"
        else:
            peer = next((p for p in row.get("peers", []) if p["name"].startswith(prefix)), None)
            missing = f"{prefix}: " + ((peer.get("error") or "not timed") if peer else "not run")
        if tuned.get("error") or not tuned.get("median_s"):
            t |= {"met": None, "why": f"the tuned kernel failed: {tuned.get('error') or 'not timed'}"}
        elif peer is None or not peer.get("median_s"):
            t |= {"met": None, "why": missing}
        else:
            ratio = peer["median_s"] / tuned["median_s"]
            t |= {"peer": peer["name"], "ratio": ratio}
            check = peer.get("check")
            if check is not None and not check.get("ok"):
                t |= {"met": False, "why": f"results differ from {peer['name']}: {check.get('message')}"}
            else:
                t |= {"met": ratio >= threshold, "why": ""}
        out.append(t)
    return out


# ---- the report -------------------------------------------------------------


def met_text(t: dict) -> str:
    return {True: "**yes**", False: "**no**", None: "not measured"}[t["met"]] + (f": {t['why']}" if t["why"] else "")


def ratio_text(r: float | None) -> str:
    return "—" if r is None else f"{r:.3g}x"


def count_text(n) -> str:
    return "—" if n is None else f"{n:,}"


def targets_table(results: dict) -> list[str]:
    from bench.report import cell

    lines = ["| kernel | size | target | peer | peer / tuned | met |", "|---|---|---|---|---|---|"]
    for b in results["benchmarks"]:
        for t in targets(b):
            row = [b["name"], b["size"], t["what"], t["peer"] or "—", ratio_text(t["ratio"]), met_text(t)]
            lines.append("| " + " | ".join(cell(str(x)) for x in row) + " |")
    return lines


def contenders_table(b: dict) -> list[str]:
    from bench.report import cell, check_cell, fmt_rate, fmt_time

    irk = b["irkit"]
    lines = ["| contender | median | peer / tuned | rate | runs | check vs tuned |", "|---|---|---|---|---|---|"]
    for p in [irk, *b["peers"]]:
        if p.get("error"):
            time_text = f"**{'FAILED' if p is irk else 'unavailable'}**: {p['error']}"
        else:
            time_text = fmt_time(p.get("median_s"))
        ratio = "1 (the reference)" if p is irk else ratio_text(p.get("ratio"))
        check = "—" if p is irk else check_cell(p.get("check"), bool(irk.get("error")), bool(p.get("error")))
        name = p["name"]
        if p is irk and irk.get("pct_of_peak") is not None:
            name += f" ({irk['pct_of_peak']:.1f}% of the {irk['peak_basis']})"
        row = [name, time_text, ratio, fmt_rate(p), p.get("runs", 0), check]
        lines.append("| " + " | ".join(cell(str(x)) for x in row) + " |")
    return lines


def tuning_table(results: dict) -> list[str]:
    from bench.report import cell, fmt_time

    lines = [
        "| kernel | tuning time | screened by the search model | priced by the full model | measured "
        "| model's first / measured best | tuner's time of its choice (predicted) | chosen |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for b in results["benchmarks"]:
        t = b["tune"]
        if t.get("error"):
            lines.append(f"| {b['name']} | {fmt_time(t.get('seconds'))} | **tuning FAILED**: {cell(t['error'])} |||||| ")
            continue
        rate = t.get("candidates_per_second")
        screened = count_text(t.get("candidates_evaluated")) + ("" if not rate else f" ({rate:,.0f}/s)")
        first = t.get("model_first_vs_best")
        first_text = "—" if first is None else ("the same" if math.isclose(first, 1.0) else f"{first:.3g}x")
        per = (t.get("per_size") or [{}])[0]
        timed = f"{fmt_time(per.get('measured_s'))} ({fmt_time(per.get('predicted_s'))})"
        row = [
            b["name"],
            fmt_time(t.get("seconds")),
            screened,
            count_text(t.get("candidates_predicted")),
            count_text(t.get("candidates_measured")),
            first_text,
            timed,
            t.get("origin", "—"),
        ]
        lines.append("| " + " | ".join(cell(str(x)) for x in row) + " |")
    return lines


def schedules_block(t: dict) -> list[str]:
    schedules = t.get("schedules")
    if schedules is None:
        return []
    body = [f"schedule {stage} {{ {'; '.join(ds)} }}" for stage, ds in schedules.items()] or ["(no directives)"]
    return ["```", *body, "```"]


def markdown(results: dict) -> str:
    from bench.report import machine_lines

    o = results["options"]
    all_targets = [t for b in results["benchmarks"] for t in targets(b)]
    met = sum(t["met"] is True for t in all_targets)
    lines = [
        "# Tuning: `irkit tune` against the hand schedules and the peers",
        "",
        "```sh",
        "pip install -e '.[bench]' && python -m bench.tune",
        "```",
        "",
        "writes this file (do not edit it: rerun the command), the raw results (`bench/tune.json`) and the",
        "tuned documents (`bench/tuned/KERNEL.design`). Each kernel's document of `bench/documents/` has its",
        "schedule blocks removed and is tuned by `irkit tune` for the benchmark's size, then the tuned kernel,",
        "the hand-scheduled document, the peers of `python -m bench` and (blur) Halide's autoschedulers are",
        "checked against each other and timed alternately in one run. Options: `--budget 10m` (tuning per",
        "kernel), `--hw host.hw` (`irkit calibrate -o host.hw`; default: the documents' own hardware),",
        "`--only gemm,blur,softmax,conv2d`, `--quick`, `--threads N`, `--log tune.jsonl`, `--out`, `--json`.",
        "",
        f"This run: `{results['command']}` on {results['date']}"
        + (" — **quick mode: tiny sizes and budget, not a measurement**" if o["quick"] else "")
        + f". Tuning budget {o['budget']:g} s per kernel; the tuner's hardware: {results['hardware']}.",
        "",
        "## Machine",
        "",
        *machine_lines(results),
        "",
        f"## Targets: {met} of {len(all_targets)} met",
        "",
        "ratio = peer median / tuned median (above 1, the tuned kernel is faster).",
        "",
        *targets_table(results),
        "",
        "## The tuner",
        "",
        *tuning_table(results),
        "",
        "- screened: candidates the search scored with the screening model (and how many a second);",
        "  priced: those the full cost model (`irkit predict`) priced; measured: those compiled and timed.",
        "- model's first / measured best: the measured time of the full model's first choice over that of",
        "  the schedule chosen (the measured best); 1 (the same) when the model's first choice won.",
        "",
    ]
    for b in results["benchmarks"]:
        t = b["tune"]
        lines += [f"## {b['name']} {b['size']}", ""]
        if not t.get("error"):
            lines += [f"Tuned document: `{t['tuned_document']}` (from `{t['hand_document']}` without its schedules):", ""]
            lines += [*schedules_block(t), ""]
        lines += [*contenders_table(b), ""]
        other = b.get("load", {}).get("other_cores")
        if other is not None:
            lines += [f"Other processes took {other:.2f} cores while this kernel was timed.", ""]
    lines += [
        "## How to read it",
        "",
        "- Times are medians of `python -m bench`'s alternated protocol (`bench/suite.py`'s `run_case`):",
        "  one checked call each, then rounds in which each contender settles untimed and a batch of its",
        "  calls is timed. The tuner's own time of its choice (above) is from its shorter measurement.",
        "- check: each peer's output against the tuned kernel's, with irkit's tolerance (softmax also",
        "  within 1e-5 relative error); a target whose peer disagrees is not met.",
        "- irkit hand schedule: the document of `bench/documents/` as written, compiled and run on its own",
        "  copies of the inputs.",
    ]
    notes = sorted({f"{p['name']}: {p['note']}" for b in results["benchmarks"] for p in b["peers"] if p.get("note")})
    if notes:
        lines += ["", "Peer notes:", "", *[f"- {n}" for n in notes]]
    return "\n".join(lines) + "\n"


def write_reports(results: dict, md_path: Path, json_path: Path) -> None:
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(markdown(results))
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=1, default=str) + "\n")


def main(argv: list[str] | None = None) -> int:
    from bench.cli import set_threads

    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    set_threads(args.threads)
    if "numpy" in sys.modules:
        print("bench.tune: numpy was imported before the thread counts were set", file=sys.stderr)
    command = "python -m bench.tune" + ("" if not argv else " " + " ".join(argv))
    results = run_all(args, command)
    write_reports(results, Path(args.out), Path(args.json))
    print(f"wrote {args.out}, {args.json} and {args.tuned_dir}/")
    failed = [f"{b['name']}: tuned kernel failed" for b in results["benchmarks"] if b["irkit"].get("error")]
    failed += [
        f"{b['name']} vs {p['name']}" for b in results["benchmarks"] for p in b["peers"] if p.get("check") and not p["check"]["ok"]
    ]
    if failed:
        print("MISMATCH or FAILURE: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    from bench.blas_env import native_blas

    native_blas("bench.tune")
    sys.exit(main())
