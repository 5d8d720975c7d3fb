"""The matrix written out: CSV (one row a cell), a markdown table with every ⚠️ and ❌ explained,
a heat map when matplotlib is installed, and the diff report of the precision gate."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from irkit.matrix.cell import Cell
from irkit.matrix.targets import Target

CSV_FIELDS = ("kernel", "isa", "threads", "host", "status", "seconds", "baseline_seconds", "max_rel_err", "why")


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def to_csv(cells: list[Cell]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for c in cells:
        writer.writerow([c.document, c.target.isa, c.target.threads, c.target.host, c.status,
                         "" if c.seconds is None else f"{c.seconds:.6g}",
                         "" if c.baseline_seconds is None else f"{c.baseline_seconds:.6g}",
                         "" if c.max_rel_err is None else f"{c.max_rel_err:.3g}", c.why])  # fmt: skip
    return out.getvalue()


def _columns(cells: list[Cell]) -> list[Target]:
    return list(dict.fromkeys(c.target for c in cells))


def _rows(cells: list[Cell]) -> list[str]:
    return list(dict.fromkeys(c.document for c in cells))


def to_markdown(cells: list[Cell], max_rel_err: float | None = None) -> str:
    columns, rows = _columns(cells), _rows(cells)
    at = {(c.document, c.target): c for c in cells}
    lines = ["| kernel | " + " | ".join(t.label for t in columns) + " |", "|---|" + "---|" * len(columns)]
    for doc in rows:
        marks = []
        for t in columns:
            c = at.get((doc, t))
            marks.append("" if c is None else f"{c.mark} {_ms(c.seconds)}".rstrip())
        lines.append(f"| {doc} | " + " | ".join(marks) + " |")
    counts = {s: sum(c.status == s for c in cells) for s in ("ok", "warn", "fail")}
    lines += ["", f"{counts['ok']} ✅, {counts['warn']} ⚠️, {counts['fail']} ❌ of {len(cells)} cells. Times are "
              "medians a call; ✅: correct against the numpy oracle within the document's tolerance"
              + (f" and within a relative error of {max_rel_err:g} of a float64 evaluation" if max_rel_err else "")
              + "; ⚠️: correct but more than 10% slower than the unscheduled baseline (the document without its schedules, "
              "1 thread, the same ISA), or the oracle itself not finite; ❌: wrong, beyond the bound, not built "
              "or crashed."]  # fmt: skip
    notes = [c for c in cells if c.status != "ok"]
    if notes:
        lines += ["", "Why:", ""]
        lines += [f"- {c.document} × {c.target.label}: {c.mark} {c.why}" for c in notes]
    return "\n".join(lines) + "\n"


def diff_report(cells: list[Cell], max_rel_err: float) -> str:
    """The worst elements of every cell beyond `--max-rel-err`, against the float64 evaluation."""
    flagged = [c for c in cells if c.worst and c.max_rel_err is not None and c.max_rel_err > max_rel_err]
    lines = [f"# Elements beyond a relative error of {max_rel_err:g} against float64", ""]
    if not flagged:
        return "\n".join(lines + ["None."]) + "\n"
    for c in flagged:
        lines += [f"## {c.document} × {c.target.label}: max relative error {c.max_rel_err:.3g}", "",
                  "| element | got | float64 | relative error |", "|---|---:|---:|---:|"]  # fmt: skip
        for w in c.worst:
            index = ", ".join(str(i) for i in w["index"])
            lines.append(f"| {w['tensor']}[{index}] | {w['got']:.9g} | {w['float64']:.17g} | {w['rel_err']:.3g} |")
        lines.append("")
    return "\n".join(lines)


def heat_map(cells: list[Cell], path: Path) -> bool:
    """A picture of the matrix (green, amber, red), when matplotlib is installed; False when not."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap
    except ImportError:
        return False
    columns, rows = _columns(cells), _rows(cells)
    code = {"ok": 0, "warn": 1, "fail": 2}
    grid = [[code[next((c.status for c in cells if c.document == d and c.target == t), "fail")] for t in columns] for d in rows]
    fig, ax = plt.subplots(figsize=(1.6 + 1.5 * len(columns), 0.8 + 0.45 * len(rows)))
    ax.imshow(grid, cmap=ListedColormap(["#4caf50", "#ffb300", "#e53935"]), vmin=0, vmax=2, aspect="auto")
    ax.set_xticks(range(len(columns)), [t.label for t in columns], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for i, d in enumerate(rows):
        for j, t in enumerate(columns):
            c = next((c for c in cells if c.document == d and c.target == t), None)
            if c is not None and c.seconds is not None:
                ax.text(j, i, _ms(c.seconds), ha="center", va="center", fontsize=7)
    ax.set_title("irkit matrix: green ok, amber slower than the baseline, red wrong or not built", fontsize=9)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return True
