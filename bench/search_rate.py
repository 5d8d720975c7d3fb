"""`python -m bench.search_rate`: candidates a second that `irkit tune`'s search scores (target: 10,000).

For each benchmark document of `bench/documents/`, at the size `python -m
bench.tune` tunes it for, the tuner's beam search runs over every stage with
the tuner's settings (width 128, depth 10, `irkit.tune.tuner.WORKERS` worker
processes, seed 0), `--repeat` times.  The search is deterministic, so every
run scores the same candidates; the median of the runs' rates is reported.
This is the search alone: the full model's re-ranking and the measurements
of `irkit tune` are not in it (`python -m bench.tune` reports the rate inside
a whole tuning run).  The table replaces the section between the markers in
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ROOT / "bench" / "documents"
BEGIN = "<!-- search-rate: begin (python -m bench.search_rate) -->"
END = "<!-- search-rate: end -->"
TARGET = 10_000

# the sizes `python -m bench.tune` tunes each document for (bench.suite's cases, the larger gemm)
SIZES = {
    "gemm": {"M": 2048, "N": 2048, "K": 2048},
    "blur": {"H": 4096, "W": 4096},
    "softmax": {"M": 4096, "N": 1024},
    "conv2d": {"N": 1, "C": 64, "F": 64, "H": 56, "W": 56},
}


def search_once(path: Path, sizes: dict[str, int], hw, *, width: int, depth: int, workers: int) -> tuple[int, float]:
    """(candidates scored, seconds) of one search over every stage of the document."""
    from irkit.tune.estimate import Machine
    from irkit.tune.search import SearchStats, beam_search
    from irkit.tune.stages import read_kernels
    from irkit.tune.tuner import Options

    kernels = read_kernels(path.read_text(), str(path), [sizes])
    machine = Machine.of(hw)
    options = Options()
    stats = SearchStats()
    for stage in kernels[0].stages:
        beam_search(
            stage, kernels, kernels[0].reads.get(stage, ()), machine,
            width=width, depth=depth, keep=max(options.finalists, options.rerank), seed=options.seed,
            stats=stats, workers=workers,
        )  # fmt: skip
    return stats.evaluated, stats.seconds


def measure(kernels: dict[str, tuple[Path, dict[str, int]]], hw_spec: str | None, repeat: int, *,
            width: int = 128, depth: int = 10, workers: int | None = None) -> list[dict]:  # fmt: skip
    """One row per kernel: candidates, the median rate of `repeat` searches and their range."""
    from irkit.perf.hardware import load_hardware
    from irkit.tune.tuner import WORKERS

    rows = []
    for name, (path, sizes) in kernels.items():
        hw = load_hardware(hw_spec, path)
        runs = [search_once(path, sizes, hw, width=width, depth=depth, workers=workers or WORKERS) for _ in range(repeat)]
        counts = {n for n, _ in runs}
        if len(counts) != 1:
            raise RuntimeError(f"{name}: the search scored {sorted(counts)} candidates in runs that should be the same")
        rates = [n / s for n, s in runs if s > 0]
        rows.append({
            "kernel": name,
            "sizes": sizes,
            "candidates": runs[0][0],
            "rate": statistics.median(rates),
            "low": min(rates),
            "high": max(rates),
            "hardware": hw.name,
        })  # fmt: skip
    return rows


def table(rows: list[dict], repeat: int, workers: int, machine: str, command: str = "python -m bench.search_rate") -> str:
    lines = [
        BEGIN,
        "## Search rate",
        "",
        f"`{command}`:",
        f"The tuner's beam search alone (width 128, depth 10, {workers} worker processes, seed 0) on each",
        f"benchmark document at the size `python -m bench.tune` tunes it for; median of {repeat} runs, and",
        f"their range. Target: {TARGET:,} candidates a second. Machine: {machine}; {datetime.date.today().isoformat()}.",
        "",
        "| kernel | sizes | candidates | candidates / s (median) | range | hardware |",
        "|---|---|---:|---:|---|---|",
    ]
    for r in rows:
        sizes = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
        lines.append(
            f"| {r['kernel']} | {sizes} | {r['candidates']:,} | {r['rate']:,.0f} | "
            f"{r['low']:,.0f}-{r['high']:,.0f} | {r['hardware']} |"
        )
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from bench.model_speed import machine
    from bench.report import replace_section
    from irkit.tune.tuner import WORKERS

    p = argparse.ArgumentParser(prog="python -m bench.search_rate", description=__doc__.splitlines()[0])
    p.add_argument("--hw", default=None, help="a .hw file or profile name (default: the documents' own)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", default=",".join(SIZES), help="kernels, comma-separated")
    p.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="Markdown file whose section is replaced")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SIZES]
    if unknown:
        p.error(f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(SIZES)}")
    kernels = {n: (DOCUMENTS / f"{n}.design", SIZES[n]) for n in names}
    rows = measure(kernels, args.hw, args.repeat)
    command = " ".join(["python -m bench.search_rate", *(argv if argv is not None else sys.argv[1:])])
    text = table(rows, args.repeat, WORKERS, machine(), command)
    print(text)
    replace_section(Path(args.out), text, BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
