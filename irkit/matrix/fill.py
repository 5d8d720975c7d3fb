"""Filling the matrix: every document, built for every target, run where the executor says."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from irkit.matrix.cell import Cell, Run, cell_job, judge
from irkit.matrix.precision import float64_outputs, relative_errors, worst_elements
from irkit.matrix.targets import Target


def fill(
    documents: list[Path],
    isas: list[str],
    threads: list[int],
    sizes: list[str],
    executor,
    max_rel_err: float | None = None,
    min_time: float = 0.3,
    log: Callable[[str], None] = lambda line: None,
) -> list[Cell]:
    """The cells, document by document; on a cluster, for each host class that measures."""
    from irkit.validate.suite import replace_schedules

    hosts = executor.hosts() if executor.remote else [None]
    cells: list[Cell] = []
    for host in hosts:
        on = executor.for_host(host.key) if host is not None else executor
        where = f"{host.hostname} [{host.key}]" if host is not None and len(hosts) > 1 else ""
        for path in documents:
            text, name, label = path.read_text(), path.name, path.stem
            baseline_text = replace_schedules(text, {})
            exact: dict[str, np.ndarray] | str | None = None
            for isa in isas:
                baseline = _run(on, baseline_text, name, isa, 1, sizes, False, False, min_time)
                for n in threads:
                    run, outputs = _run_with_outputs(on, text, name, isa, n, sizes, max_rel_err is not None, min_time)
                    cell = judge(run, baseline, label, Target(isa, n, where))
                    if max_rel_err is not None and cell.status != "fail" and outputs:
                        if exact is None:
                            exact = _float64(text, name, run.report["sizes"])  # type: ignore[index]
                        if isinstance(exact, str):
                            cell.status, cell.why = "warn", exact
                        else:
                            _gate(cell, outputs, exact, max_rel_err)
                    cells.append(cell)
                    log(f"irkit matrix: {label} x {cell.target.label}: {cell.mark} {cell.why}".rstrip())
    return cells


def _float64(text: str, name: str, sizes: dict[str, int]) -> dict[str, np.ndarray] | str:
    """The float64 evaluation, or why there is none (the cell is then a warning: not gated)."""
    from irkit.oracle.common import ReferenceEvalError

    try:
        return float64_outputs(text, name, sizes)
    except ReferenceEvalError as exc:
        return f"no float64 evaluation to gate against: {exc}"


def _run(on, text, name, isa, threads, sizes, check, want, min_time) -> Run:
    return _run_with_outputs(on, text, name, isa, threads, sizes, want, min_time, check)[0]


def _run_with_outputs(on, text, name, isa, threads, sizes, want, min_time, check=True):
    from irkit.distributed.executor import ExecutorError

    try:
        got = on.measure(cell_job, text, name, isa, threads, sizes, check, want, min_time)
    except ExecutorError as exc:
        return Run(None, -1, f"cluster: {exc}"), None
    return Run(got["report"], got["status"], got["problem"]), got["outputs"]


def _gate(cell: Cell, outputs: dict[str, np.ndarray], exact: dict[str, np.ndarray], bound: float) -> None:
    """`--max-rel-err`: the cell fails when an element is further than `bound` from float64."""
    worst: list[dict] = []
    largest = 0.0
    for name, got in outputs.items():
        if name not in exact or got.dtype.kind != "f":
            continue
        rel = relative_errors(got, exact[name])
        largest = max(largest, float(rel.max(initial=0.0)))
        worst += worst_elements(name, got, exact[name], rel)
    worst.sort(key=lambda w: w["rel_err"], reverse=True)
    cell.max_rel_err = largest
    cell.worst = worst[:5]
    if largest > bound:
        w = worst[0]
        index = ", ".join(str(i) for i in w["index"])
        beyond = (
            f"max relative error {largest:.3g} against float64 > --max-rel-err {bound:g} (worst {w['tensor']}[{index}]: "
            f"got {w['got']:.9g}, float64 {w['float64']:.17g}); the document's own tolerance accepts it"
        )
        cell.status, cell.why = "fail", beyond if not cell.why else f"{beyond}; {cell.why}"
