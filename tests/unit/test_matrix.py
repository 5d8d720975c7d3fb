"""`irkit matrix`: each document built for each ISA and thread count, judged against the oracle,
the unscheduled baseline and (with --max-rel-err) a float64 evaluation; CSV, markdown, picture."""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path

import numpy as np
import pytest

from irkit.matrix.cell import Cell, Run, judge
from irkit.matrix.precision import float64_text, relative_errors, worst_elements
from irkit.matrix.targets import Target, parse_threads

ROOT = Path(__file__).parents[2]
ROWSUM = """design rowsum {
  sizes { M = 7, N = 3000 }
  tensor X : f32[M, N] input
  tensor s : f32[M] output
  s[i] += X[i, j] * X[i, j] - 0.33
  schedule s {
    vectorize j
  }
}
"""


def matrix(args: list[str]) -> tuple[int, str, str]:
    from irkit.tools.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["matrix", *args])
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return status, out.getvalue(), err.getvalue()


def test_a_document_for_two_isas_and_two_thread_counts(tmp_path):
    doc = tmp_path / "rowsum.design"
    doc.write_text(ROWSUM)
    status, table, _ = matrix([str(doc), "--targets", "native,x86-64-v2", "--threads", "1,2", "--min-time", "0.01",
                               "--out-dir", str(tmp_path / "m")])  # fmt: skip
    assert status == 0, table
    rows = list(csv.DictReader((tmp_path / "m" / "matrix.csv").open()))
    assert [(r["isa"], r["threads"]) for r in rows] == [("native", "1"), ("native", "2"), ("x86-64-v2", "1"), ("x86-64-v2", "2")]
    assert all(r["status"] in ("ok", "warn") and float(r["seconds"]) > 0 and float(r["baseline_seconds"]) > 0 for r in rows)
    assert "| kernel | native, 1 thread | native, 2 threads | x86-64-v2, 1 thread | x86-64-v2, 2 threads |" in table
    assert (tmp_path / "m" / "matrix.md").read_text() == table
    assert (tmp_path / "m" / "matrix.png").stat().st_size > 1000


def test_an_isa_the_compiler_refuses_is_a_failed_cell_with_its_message(tmp_path):
    doc = tmp_path / "rowsum.design"
    doc.write_text(ROWSUM)
    status, table, _ = matrix([str(doc), "--targets", "no-such-cpu", "--threads", "1", "--min-time", "0.01",
                               "--out-dir", str(tmp_path / "m")])  # fmt: skip
    assert status == 1
    assert "| rowsum | ❌ |" in table and "no-such-cpu" in table.split("Why:")[1], table


def test_the_precision_gate_names_the_worst_elements(tmp_path):
    doc = tmp_path / "rowsum.design"
    doc.write_text(ROWSUM)
    base = [str(doc), "--targets", "native", "--threads", "1", "--min-time", "0.01"]
    status, table, _ = matrix([*base, "--max-rel-err", "1e-12", "--out-dir", str(tmp_path / "strict")])
    assert status == 1 and "against float64 > --max-rel-err 1e-12" in table, table
    diff = (tmp_path / "strict" / "precision.md").read_text()
    assert "| element | got | float64 | relative error |" in diff and "| s[" in diff
    status, table, _ = matrix([*base, "--max-rel-err", "0.5", "--out-dir", str(tmp_path / "loose")])
    assert status == 0 and "❌" not in table.split("\n\n")[0], table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threads", "0"], "--threads 0: at least one thread"),
        (["--threads", "two"], "--threads 'two' is not a number of threads"),
        (["--max-rel-err", "0"], "--max-rel-err must be positive"),
        (["--host", "abc"], "--host names a host class of a cluster"),
    ],
)
def test_wrong_options_are_one_line_usage_errors(args, message, tmp_path, monkeypatch):
    monkeypatch.delenv("IRKIT_SCHEDULER", raising=False)
    doc = tmp_path / "rowsum.design"
    doc.write_text(ROWSUM)
    status, _, err = matrix([str(doc), *args])
    assert status == 2 and message in err, err


def test_a_missing_document_is_a_usage_error(tmp_path):
    status, _, err = matrix([str(tmp_path / "nothing.design")])
    assert status == 2 and "is not a design document" in err


# --- the parts ----------------------------------------------------------------------------


def test_float64_text_widens_declarations_only():
    text = "tensor A : f32[N] input\n  scalar eps:f32 input\n  tensor f32x : f64[N] output\n  B[i] = A[i] # f32\n"
    wide = float64_text(text)
    assert "tensor A : f64[N]" in wide and "scalar eps:f64" in wide and "tensor f32x : f64[N]" in wide
    assert wide.endswith("# f32\n")


def test_relative_errors_judge_elements_near_zero_against_the_output_scale():
    exact = np.array([100.0, 1e-9, -2.0])
    got = np.array([100.01, 2e-9, -2.0], dtype=np.float32)
    rel = relative_errors(got, exact)
    assert rel[0] == pytest.approx(1e-4, rel=1e-2)
    assert rel[1] < 1e-7  # 1e-9 off, against a floor of 0.1: not a 100% error
    assert rel[2] == 0.0
    worst = worst_elements("y", got, exact, rel, count=1)
    assert worst[0]["index"] == [0] and worst[0]["tensor"] == "y"


def test_a_crash_and_a_slow_cell_are_said_so():
    target = Target("x86-64-v4", 1)
    crashed = judge(Run(None, -4, "the kernel's process died of SIGILL (an instruction this CPU does not have?)"), None, "k", target)
    assert crashed.status == "fail" and "SIGILL" in crashed.why
    report = {"bench": {"median_s": 2.0}, "check": {"ok": True, "outputs": {}}}
    slow = judge(Run(report, 0), Run({"bench": {"median_s": 1.0}}, 0), "k", target)
    assert slow.status == "warn" and "2.00x the time of the unscheduled baseline" in slow.why
    close = judge(Run(report, 0), Run({"bench": {"median_s": 1.9}}, 0), "k", target)
    assert close.status == "ok"  # within the 10% two separate timings differ by
    assert isinstance(close, Cell) and close.mark == "✅"


def test_threads_default_to_one_and_all():
    assert parse_threads(None)[0] == 1 and parse_threads("2,1,2") == [1, 2]
