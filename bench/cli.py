"""`python -m bench`: argument parsing, thread counts, then the run.

Thread counts are fixed here, before numpy (OpenBLAS), libgomp or Halide is
loaded, since each reads its variable once at start-up.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ("gemm", "blur", "softmax", "triad", "conv2d", "layernorm", "syrk", "jacobi_2d", "causal_attention", "cholesky")
EXTRA = ("scale",)  # run only when named in --only: minutes of compiling large generated documents
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "HL_NUM_THREADS")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Time irkit's kernels against their peers (alternated, same thread count) "
        "and write BENCHMARKS.md and bench/results.json.",
    )
    p.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (a smoke test, not a measurement)")
    p.add_argument(
        "--only",
        metavar="NAMES",
        help=f"comma-separated subset of: {', '.join(BENCHMARKS)}, or scale (how each phase's cost grows "
        "with the document: bench/scale.py; not run by default)",
    )
    p.add_argument("--scale-sizes", default="100,1000,10000", metavar="N,N,...", help="statement counts for scale")
    p.add_argument("--repeat", type=int, metavar="N", help="least number of alternated rounds (default 7; quick 3)")
    p.add_argument(
        "--min-time",
        type=float,
        metavar="S",
        help="least timed seconds per contender; short kernels get more rounds (default 1.0; quick 0)",
    )
    p.add_argument(
        "--budget",
        type=float,
        metavar="S",
        help="seconds of timed rounds per benchmark; slow kernels get fewer rounds, never fewer than 3 "
        "(default 150; quick 5)",
    )
    p.add_argument(
        "--settle",
        type=float,
        metavar="S",
        help="in each round, call each contender untimed for S seconds before timing a batch of its calls, so "
        "that the previous contender's idle threads have stopped spinning (OpenBLAS's spin ~84 ms) and the "
        "cores are in their steady state (default 0.15; quick 0)",
    )
    p.add_argument("--threads", type=int, default=2, help="threads for irkit and every peer (default 2)")
    p.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="the Markdown report (default BENCHMARKS.md)")
    p.add_argument(
        "--json", default=str(ROOT / "bench" / "results.json"), help="raw results (default bench/results.json)"
    )
    args = p.parse_args(argv)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in BENCHMARKS + EXTRA]
        if unknown:
            p.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS + EXTRA)}")
        args.only = names
    else:
        args.only = list(BENCHMARKS)
    if args.repeat is None:
        args.repeat = 3 if args.quick else 7
    if args.min_time is None:
        args.min_time = 0.0 if args.quick else 1.0
    if args.settle is None:
        args.settle = 0.0 if args.quick else 0.15
    if args.budget is None:
        args.budget = 5.0 if args.quick else 150.0
    if args.repeat < 1 or args.threads < 1:
        p.error("--repeat and --threads must be positive")
    return args


def set_threads(n: int) -> None:
    for var in THREAD_VARS:
        os.environ[var] = str(n)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    set_threads(args.threads)
    if "numpy" in sys.modules:
        # OpenBLAS already read its thread count; threadpoolctl (if present) limits it at run time.
        print("bench: numpy was imported before the thread counts were set", file=sys.stderr)

    command = "python -m bench" + ("" if not argv else " " + " ".join(argv))
    status = 0
    if "scale" in args.only:
        from bench import scale

        args.only = [n for n in args.only if n != "scale"]
        sizes = [int(x) for x in args.scale_sizes.split(",") if x.strip()]
        results = scale.run_scale(sizes, list(scale.SHAPES), list(scale.PHASES), command)
        status = scale.report(results, Path(args.out), Path(args.json).with_name("scale.json"))
        if not args.only:
            return status

    from bench.report import write_reports
    from bench.suite import run_all

    results = run_all(args, command)
    write_reports(results, Path(args.out), Path(args.json))
    failed = [
        f"{b['kernel']} {b['size']} vs {p['name']}"
        for b in results["benchmarks"]
        for p in b["peers"]
        if p.get("check") and not p["check"]["ok"]
    ]
    failed += [f"{b['kernel']} {b['size']}: irkit failed" for b in results["benchmarks"] if b["irkit"].get("error")]
    print(f"wrote {args.out} and {args.json}")
    if failed:
        print("MISMATCH or FAILURE: " + "; ".join(failed), file=sys.stderr)
        return 1
    return status
