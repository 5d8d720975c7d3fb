"""`python -m bench --only scale`: how the cost of each phase grows with the document.

Documents of 100, 1,000 and 10,000 statements (`--scale-sizes`) are generated
(`chain_document`), and each phase a user's `irkit run --check` goes through is
timed once per size, every size in a fresh process (so one size's garbage and
caches do not slow the next), with the process's peak memory:

- `check`: parse and check the document (`irkit check`);
- `lower`: lower-design, lower-tensorop, apply-schedule, with the IR verified
  after each (`irkit.api.lower`);
- `emit-c`: the C source (`irkit run --emit c`);
- `build`: the C compiler on that source, in an empty cache;
- `run --check`: random inputs, one call of the kernel, the numpy oracle and
  the comparison;
- `model-perf`: the cost terms (`irkit predict`, `--emit python`).

Two shapes of document: `chain`, a chain of one-line statements with no
schedule (`t{i}[x] = t{i-1}[x] + 1`, every tensor but the last a `temp`), and
`scheduled`, the same chain over 2-D tensors where every stage is scheduled
(odd stages: tile, split, vectorize, parallel; even stages: `compute_at` the
next one's tile loop, vectorized).

The growth exponent of a phase is the slope of log(time) against
log(statements), a least-squares fit over the sizes: 1 is linear, 2 quadratic
(target: <= 1.2).  A phase under `FLOOR_S` at every size is too fast to fit
and reported as such.  The section between the markers in BENCHMARKS.md is
replaced; the other benchmarks' tables are left as they are.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- scale: begin (python -m bench --only scale) -->"
END = "<!-- scale: end -->"
SIZES = (100, 1_000, 10_000)
SHAPES = ("chain", "scheduled")
PHASES = ("check", "lower", "emit-c", "build", "run --check", "model-perf")
# The cost model prices each scheduled nest with tens of milliseconds of symbolic work
# (linear, but 10,000 of them take many minutes): the scheduled shape leaves it out.
SKIP = {"scheduled": ("model-perf",)}
TARGET_EXPONENT = 1.2
FLOOR_S = 0.05  # below this at every size, a phase's times are noise, not growth


def chain_document(n: int, scheduled: bool = False) -> str:
    """A chain of `n` one-line statements; `scheduled`: 2-D, every stage scheduled."""
    if scheduled:
        sizes, shape, idx = "H = 8, W = 32", "[H, W]", "[y, x]"
    else:
        sizes, shape, idx = "N = 64", "[N]", "[x]"
    lines = ["design chain {", f"  sizes {{ {sizes} }}", f"  tensor a : f32{shape} input"]
    lines += [f"  tensor t{i} : f32{shape} temp" for i in range(n - 1)]
    lines.append(f"  tensor t{n - 1} : f32{shape} output")
    lines.append(f"  t0{idx} = a{idx} + 1")
    lines += [f"  t{i}{idx} = t{i - 1}{idx} + 1" for i in range(1, n)]
    if scheduled:
        for i in range(n):
            if i % 2 == 1 or i == n - 1:
                lines.append(
                    f"  schedule t{i} {{ tile y, x by 4, 16 -> yo, xo, yi, xi; split xi by 8 -> xv, xw; "
                    "vectorize xw by 8; parallel yo }"
                )
            else:
                lines.append(f"  schedule t{i} {{ compute_at t{i + 1}.xo; vectorize x by 8 }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---- one size, in a child process --------------------------------------------------------


def measure_one(n: int, shape: str, phases: list[str]) -> dict:
    """Time each phase once on a document of `n` statements (called in a fresh process)."""
    import resource

    import numpy as np

    from irkit.api import lower
    from irkit.backends.target import target
    from irkit.context import make_context
    from irkit.frontend import parse_design
    from irkit.kernel_abi import find_kernels
    from irkit.oracle import compare, evaluate_design, random_inputs, reduction_lengths
    from irkit.passes.model_perf import ModelPerfPass

    text = chain_document(n, scheduled=shape == "scheduled")
    times: dict[str, float] = {}

    def timed(phase: str, fn):
        t0 = time.perf_counter()
        out = fn()
        times[phase] = time.perf_counter() - t0
        return out

    module = timed("check", lambda: parse_design(text, f"<{shape}-{n}>"))
    levels = timed("lower", lambda: lower(module))
    if "model-perf" in phases:
        loop_copy = levels["loop"].clone()
        timed("model-perf", lambda: ModelPerfPass().apply(make_context(), loop_copy))
        del loop_copy
    c = target("c")
    source = timed("emit-c", lambda: c.emit(levels["loop"]))
    ok = None
    if "build" in phases or "run --check" in phases:
        with tempfile.TemporaryDirectory() as cache:
            os.environ["IRKIT_CACHE_DIR"] = cache
            artifact = timed("build", lambda: c.build(source))
            (func,) = find_kernels(levels["loop"])
            kernel = c.load(artifact, func)
            if "run --check" in phases:

                def run_check() -> bool:
                    design = levels["design"]
                    sizes = kernel.resolve_sizes({})
                    inputs = random_inputs(design, sizes, seed=0)
                    got = kernel.run(inputs, sizes)
                    want = evaluate_design(design, inputs, sizes)
                    lengths = reduction_lengths(design, sizes)
                    return all(
                        compare(arr, want[k], arr.dtype, lengths.get(k, 1)).ok for k, arr in got.items()
                    ) and bool(np.all([np.isfinite(a).all() for a in got.values()]))

                ok = timed("run --check", run_check)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "statements": n,
        "shape": shape,
        "bytes": len(text),
        "times": {p: times[p] for p in PHASES if p in times and p in phases},
        "check_ok": ok,
        "peak_mib": peak_kib / 1024,
    }


def run_child(n: int, shape: str, phases: list[str], timeout: float) -> dict:
    """`measure_one` in a fresh interpreter; an error or timeout is recorded, not raised."""
    cmd = [sys.executable, "-m", "bench.scale", "--one", str(n), "--shape", shape, "--phases", ",".join(phases)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"statements": n, "shape": shape, "error": f"timed out after {timeout:g} s"}
    if proc.returncode != 0:
        tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        return {"statements": n, "shape": shape, "error": tail[:400] or f"exit {proc.returncode}"}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall_s"] = time.perf_counter() - t0
    return out


# ---- the fit and the report --------------------------------------------------------------


def growth_exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(time) on log(n); None with fewer than two points or all under FLOOR_S."""
    pts = [(n, t) for n, t in points if t > 0]
    if len(pts) < 2 or all(t < FLOOR_S for _, t in pts):
        return None
    xs = [math.log(n) for n, _ in pts]
    ys = [math.log(t) for _, t in pts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else None


def fmt_s(s: float | None) -> str:
    if s is None:
        return "—"
    return f"{s:.3g} s" if s >= 0.1 else f"{s * 1e3:.3g} ms"


def section(results: dict) -> str:
    m = results["machine"]
    lines = [
        BEGIN,
        "## Scale: cost against the size of the document",
        "",
        f"This run: `{results['command']}` on {results['date']}, {m['cpu']} ({m['cores']} cores visible), "
        f"Python {m['python']}, irkit commit {m['commit']}.",
        "",
        "Generated documents (`bench/scale.py`, `chain_document`): *chain* is a chain of one-line statements",
        "`t{i}[x] = t{i-1}[x] + 1` (N = 64, every tensor but the last a temp, no schedule); *scheduled* is the",
        "same chain over `[H, W] = [8, 32]` with every stage scheduled (odd stages `tile`, `split`, `vectorize`,",
        "`parallel`; even stages `compute_at` the next stage's `xo`, vectorized). Each size runs in a fresh",
        "process; each phase is timed once. *exponent* is the slope of log(time) on log(statements), a",
        f"least-squares fit over the sizes (1 = linear, 2 = quadratic; target <= {TARGET_EXPONENT}); *last two",
        "sizes* is the slope between the two largest alone (growth that sets in late shows there); a phase",
        f"under {FLOOR_S * 1e3:g} ms at every size is too fast to fit (—). `run --check` is random inputs, one",
        "call, the numpy oracle and the comparison; `build` is the C compiler in an empty cache.",
        "",
    ]
    for shape in results["shapes"]:
        rows = [r for r in results["runs"] if r["shape"] == shape]
        sizes = [r["statements"] for r in rows]
        lines += [
            f"### {shape}",
            "",
            "| phase | " + " | ".join(f"{n:,} statements" for n in sizes) + " | exponent | last two sizes |",
            "|---|" + "---|" * len(sizes) + "---|---|",
        ]
        for phase in results["phases"]:
            cells, pts = [], []
            for r in rows:
                t = r.get("times", {}).get(phase)
                cells.append("**error**" if "error" in r else fmt_s(t))
                if t is not None:
                    pts.append((r["statements"], t))
            e = growth_exponent(pts)
            mark = "" if e is None or e <= TARGET_EXPONENT else " (**over target**)"
            last = growth_exponent(pts[-2:]) if len(pts) > 2 else None
            lines.append(
                f"| {phase} | " + " | ".join(cells) + f" | {'—' if e is None else f'{e:.2f}'}{mark} | "
                f"{'—' if last is None else f'{last:.2f}'} |"
            )
        peak = [f"{r['peak_mib']:.0f} MiB" if "peak_mib" in r else "—" for r in rows]
        lines.append("| peak memory | " + " | ".join(peak) + " | | |")
        checks = ["ok" if r.get("check_ok") else ("—" if r.get("check_ok") is None else "**MISMATCH**") for r in rows]
        lines.append("| check result | " + " | ".join(checks) + " | | |")
        for r in rows:
            if "error" in r:
                lines.append(f"\n{r['statements']:,} statements: {r['error']}")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def write_section(text: str, md_path: Path) -> None:
    """Replace the scale section of `md_path` (or append it), leaving the rest as it is."""
    from bench.report import replace_section

    replace_section(md_path, text, BEGIN, END)


def machine() -> dict:
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "commit": commit}


def run_scale(sizes: list[int], shapes: list[str], phases: list[str], command: str, timeout: float = 1800.0) -> dict:
    runs = []
    for shape in shapes:
        for n in sizes:
            print(f"scale: {shape}, {n:,} statements ...", file=sys.stderr, flush=True)
            r = run_child(n, shape, [p for p in phases if p not in SKIP.get(shape, ())], timeout)
            runs.append(r)
            if "error" in r:
                print(f"scale: {shape} {n}: {r['error']}", file=sys.stderr)
            else:
                took = ", ".join(f"{p} {fmt_s(t)}" for p, t in r["times"].items())
                print(f"scale:   {took}; peak {r['peak_mib']:.0f} MiB", file=sys.stderr, flush=True)
    return {
        "command": command,
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "sizes": sizes,
        "shapes": shapes,
        "phases": phases,
        "runs": runs,
    }


def exponents(results: dict) -> dict[str, dict[str, float | None]]:
    """shape -> phase -> growth exponent."""
    out: dict[str, dict[str, float | None]] = {}
    for shape in results["shapes"]:
        rows = [r for r in results["runs"] if r["shape"] == shape and "error" not in r]
        out[shape] = {
            p: growth_exponent([(r["statements"], r["times"][p]) for r in rows if p in r["times"]])
            for p in results["phases"]
        }
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.splitlines()[0])
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child: measure one size, print JSON
    p.add_argument("--shape", default="chain", choices=SHAPES, help=argparse.SUPPRESS)
    p.add_argument("--phases", default=",".join(PHASES), help="comma-separated phases (default: all)")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated statement counts")
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated document shapes")
    p.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    p.add_argument("--json", default=str(ROOT / "bench" / "scale.json"))
    args = p.parse_args(argv)
    phases = [x for x in args.phases.split(",") if x]
    if args.one is not None:
        print(json.dumps(measure_one(args.one, args.shape, phases)))
        return 0
    results = run_scale(
        [int(x) for x in args.sizes.split(",")], args.shapes.split(","), phases, "python -m bench.scale"
    )
    return report(results, Path(args.out), Path(args.json))


def report(results: dict, md_path: Path, json_path: Path) -> int:
    text = section(results)
    print(text)
    write_section(text, md_path)
    json_path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote the scale section of {md_path} and {json_path}", file=sys.stderr)
    failed = [r for r in results["runs"] if "error" in r or r.get("check_ok") is False]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
