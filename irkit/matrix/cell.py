"""One cell of the matrix: a document built for one ISA and run on some threads, in a process
of its own (`irkit run --json`), so that a crash or an illegal instruction costs the cell only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from irkit.matrix.targets import Target

CELL_TIMEOUT = 900.0  # seconds for one cell: build, check and timing
# A cell is slower than its baseline past this ratio: the two are timed apart, minutes apart on a
# shared host, and medians of a few calls taken that way differ by a few percent with no cause
SLOWER = 1.10


@dataclass
class Run:
    """What one `irkit run` process said: its report (None when it printed none) or why not."""

    report: dict | None
    status: int
    problem: str = ""  # the diagnostic, the crash, the timeout: one or a few lines
    outputs: Path | None = None


@dataclass
class Cell:
    document: str
    target: Target
    status: str  # "ok", "warn", "fail"
    why: str = ""
    seconds: float | None = None  # median seconds a call
    baseline_seconds: float | None = None
    max_rel_err: float | None = None  # against the float64 evaluation (with --max-rel-err)
    worst: list[dict] = field(default_factory=list)  # the worst elements, for the diff report

    @property
    def mark(self) -> str:
        return {"ok": "✅", "warn": "⚠️", "fail": "❌"}[self.status]


def run_irkit(
    document: Path,
    isa: str,
    threads: int,
    sizes: list[str],
    *,
    check: bool,
    outputs: Path | None = None,
    min_time: float = 0.3,
    timeout: float = CELL_TIMEOUT,
) -> Run:
    """`irkit run DOCUMENT --json --bench [--check]` built for `isa`, on `threads` OpenMP threads."""
    argv = [sys.executable, "-m", "irkit", "run", str(document), "--json", "--bench", "--repeat", "3",
            "--min-time", str(min_time)]  # fmt: skip
    if check:
        argv.append("--check")
    if isa != "native":
        argv += ["--march", isa]
    for size in sizes:
        argv += ["--size", size]
    if outputs is not None:
        argv += ["--outputs", str(outputs)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Run(None, -1, f"did not finish in {timeout:.0f} s")
    report = _last_json(done.stdout)
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        hint = " (an instruction this CPU does not have?)" if name == "SIGILL" else ""
        return Run(report, done.returncode, f"the kernel's process died of {name}{hint}")
    if report is None:
        return Run(None, done.returncode, _first_lines(done.stderr) or f"irkit run exited with {done.returncode}")
    saved = outputs if outputs is not None and outputs.exists() else None
    return Run(report, done.returncode, _first_lines(done.stderr) if done.returncode else "", saved)


def cell_job(
    text: str, name: str, isa: str, threads: int, sizes: list[str], check: bool, want_outputs: bool, min_time: float
) -> dict:
    """One cell, where the executor runs it (on a cluster: the measuring host, under its lock):
    the `irkit run` report (or why there is none) and, when asked, the outputs (for the precision
    gate)."""
    import tempfile

    import numpy as np

    from irkit.distributed.host import measure_lock, this_host

    with tempfile.TemporaryDirectory(prefix="irkit-matrix-") as tmp:
        document = Path(tmp) / name
        document.write_text(text)
        outputs = Path(tmp) / "outputs.npz" if want_outputs else None
        with measure_lock():
            run = run_irkit(document, isa, threads, sizes, check=check, outputs=outputs, min_time=min_time)
        arrays = None
        if run.outputs is not None:
            with np.load(run.outputs) as saved:
                arrays = {k: saved[k] for k in saved.files}
    return {"report": run.report, "status": run.status, "problem": run.problem, "outputs": arrays,
            "host": this_host().as_dict()}  # fmt: skip


def _last_json(text: str) -> dict | None:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def _first_lines(text: str, lines: int = 3, chars: int = 400) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][:lines]
    out = " / ".join(line.strip() for line in kept)
    return out if len(out) <= chars else out[: chars - 3] + "..."


def judge(run: Run, baseline: Run | None, document: str, target: Target) -> Cell:
    """The cell a run makes: its failure, the worst element of a wrong result, or its time
    against the baseline's."""
    report = run.report
    if report is None or "bench" not in report:
        return Cell(document, target, "fail", run.problem or "no report")
    seconds = report["bench"]["median_s"]
    cell = Cell(document, target, "ok", seconds=seconds)
    check = report.get("check")
    if check is not None and not check["ok"]:
        cell.status = "fail"
        cell.why = "; ".join(_wrong(name, res) for name, res in check["outputs"].items() if not res["ok"])
        return cell
    odd = [f"{name}{res['reference_non_finite']['first_index']}" for name, res in (check or {}).get("outputs", {}).items()
           if res.get("reference_non_finite")]  # fmt: skip
    if odd:
        cell.status = "warn"
        cell.why = f"the reference itself is NaN or infinite at {', '.join(odd)}: the inputs may be outside the kernel's domain"
    base = baseline.report if baseline is not None else None
    if base is not None and "bench" in base:
        cell.baseline_seconds = base["bench"]["median_s"]
        if seconds > SLOWER * cell.baseline_seconds:
            cell.status = "warn"
            ratio = seconds / cell.baseline_seconds
            slower = f"{ratio:.2f}x the time of the unscheduled baseline (its loops in document order, 1 thread, same ISA)"
            cell.why = f"{cell.why}; {slower}" if cell.why else slower
    return cell


def _wrong(name: str, res: dict) -> str:
    where = res.get("worst_index")
    if where is None:
        return f"{name}: {res['bad_elements']} elements wrong"
    return (
        f"{name}: {res['bad_elements']} elements outside the tolerance; worst {name}{where}: got {res['actual']:.6g}, "
        f"expected {res['expected']:.6g}"
    )
