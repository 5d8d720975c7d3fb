"""Smoke test of the benchmark machinery (`python -m bench`) at tiny sizes.

No time is asserted: the host is shared and noisy.  What is checked is that
one command compiles every benchmark document, runs irkit and every peer,
checks them against each other, and writes the Markdown table and the JSON
results -- and that a peer which cannot run is reported in its row.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench import tune as bench_tune  # noqa: E402
from bench.cli import BENCHMARKS, parse_args  # noqa: E402
from bench.timing import Plan, alternate, batch_size, rounds_for  # noqa: E402


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    md, js = out / "BENCHMARKS.md", out / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(md), "--json", str(js)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done, md, js


def test_quick_run_writes_table_and_json(quick_run):
    done, md, js = quick_run
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(js.read_text())
    text = md.read_text()
    assert "python -m bench --quick" in text
    assert "| kernel | size | peer | irkit median | peer median | ratio (peer/irkit)" in text
    kernels = {b["kernel"].split()[0] for b in results["benchmarks"]}
    assert kernels == {"gemm", "blur", "softmax", "triad", "conv2d", "layernorm", "syrk", "jacobi_2d", "causal_attention",
                       "cholesky"}
    assert results["machine"]["threads"] == 2
    for b in results["benchmarks"]:
        assert b["irkit"]["error"] is None, b["irkit"]
        assert b["irkit"]["runs"] >= 1 and b["irkit"]["median_s"] > 0
        assert b["peers"], b["kernel"]
        for p in b["peers"]:
            if p["error"]:  # e.g. Halide not installed: said in the table, not skipped
                assert f"**unavailable**: {p['error']}"[:40] in text
                continue
            assert p["check"]["ok"], (b["kernel"], p["name"], p["check"])
            assert p["ratio"] > 0
    softmax = next(b for b in results["benchmarks"] if b["kernel"].startswith("softmax"))
    assert softmax["peers"][0]["check"]["max_rel"] <= 1e-5


def test_only_and_defaults():
    args = parse_args(["--only", "gemm, triad", "--quick"])
    assert args.only == ["gemm", "triad"] and args.repeat == 3
    assert parse_args([]).only == list(BENCHMARKS)
    with pytest.raises(SystemExit):
        parse_args(["--only", "nope"])


def test_alternation_order_and_rounds():
    calls: list[str] = []
    times = alternate([lambda: calls.append("irkit"), lambda: calls.append("peer")], Plan(4, 0.0, 10.0), [1.0, 1.0])
    assert calls == ["irkit", "peer"] * 4
    assert [len(t) for t in times] == [4, 4]
    assert rounds_for([10.0, 10.0], Plan(7, 0.0, 60.0)) == 3  # slow calls: the budget wins, never under 3
    assert rounds_for([0.001, 0.002], Plan(3, 1.0, 60.0)) == 1000  # short calls: min_time for each


def test_settling_runs_each_contender_untimed_before_a_timed_batch():
    """Each round: one contender's settling calls and its timed batch, then the next's."""
    calls: list[str] = []

    def contender(name: str):
        def call() -> None:
            calls.append(name)
            time.sleep(0.002)

        return call

    plan = Plan(repeat=2, min_time=0.0, budget=10.0, settle=0.01)
    assert batch_size(0.002, plan) == 5 and batch_size(1.0, plan) == 1
    times = alternate([contender("irkit"), contender("peer")], plan, [0.002, 0.002])
    # the batch follows each call's measured time (about 2 ms, more on a busy host): 1 to 5 calls
    assert all(len(t) % 2 == 0 and 2 <= len(t) <= 2 * 5 for t in times)
    runs = [name for i, name in enumerate(calls) if i == 0 or calls[i - 1] != name]
    assert runs == ["irkit", "peer"] * 3  # the warm-up calls, then two rounds, never interleaved
    assert calls.count("irkit") > len(times[0]) + 2  # settling called it untimed beyond the warm-up and the batches


# A machine description and probed limits for reports built from fabricated results.
FAKE_MACHINE = {
    "cpu": "cpu",
    "cpu_vendor": "v",
    "cores": 2,
    "simd": "AVX2",
    "threads": 2,
    "compiler": "cc",
    "cflags": "-O3",
    "python": "3",
    "numpy": "2",
    "blas": {"error": "threadpoolctl not installed"},
    "halide": {"error": "No module named 'halide'"},
    "irkit_commit": "abc",
}
FAKE_LIMITS = {
    "fma_peak": {"flops_per_s": 1e11, "simd_lanes": 8, "runs": 1},
    "triad": {"bytes_per_s": 2e10, "elements": 1 << 20, "runs": 1},
}


def test_failed_peer_and_mismatch_are_loud():
    results = {
        "command": "python -m bench",
        "date": "2026-01-01T00:00:00",
        "options": {"quick": False, "repeat": 7, "min_time": 1.0, "budget": 60.0, "settle": 0.0},
        "machine": dict(FAKE_MACHINE),
        "limits": dict(FAKE_LIMITS),
        "benchmarks": [
            {
                "kernel": "blur 3x3",
                "size": "8x8",
                "irkit": {
                    "name": "irkit",
                    "error": None,
                    "median_s": 0.001,
                    "runs": 3,
                    "rate": 1.0,
                    "rate_unit": "GB/s",
                },
                "peers": [
                    {"name": "Halide", "error": "not available: No module named 'halide'"},
                    {
                        "name": "numpy",
                        "error": None,
                        "median_s": 0.002,
                        "runs": 3,
                        "ratio": 2.0,
                        "check": {"ok": False, "message": "5 elements off", "max_rel": 0.5, "rel_target": None},
                    },
                ],
            }
        ],
    }
    text = report.markdown(results)
    assert "**unavailable**: not available: No module named 'halide'" in text
    assert "**MISMATCH**: 5 elements off" in text


# ---- python -m bench.tune -----------------------------------------------------


def _contender(name: str, median_s: float | None, error: str | None = None, ok: bool = True) -> dict:
    e: dict = {"name": name, "error": error, "note": ""}
    if median_s is not None:
        e |= {"median_s": median_s, "runs": 3, "rate": 1.0, "rate_unit": "GB/s"}
        e["check"] = {"ok": ok, "message": "" if ok else "7 elements off", "max_rel": 0.0, "rel_target": None}
    return e


def _tuned_row(name: str, tuned_s: float | None, peers: list[dict], error: str | None = None) -> dict:
    for p in peers:
        if tuned_s and p.get("median_s"):
            p["ratio"] = p["median_s"] / tuned_s
    tune = {
        "error": error,
        "tuned_document": f"bench/tuned/{name}.design",
        "hand_document": f"bench/documents/{name}.design",
        "schedules": {"P": ["parallel i"]},
        "origin": "search",
        "per_size": [{"sizes": {}, "predicted_s": 0.002, "measured_s": 0.001}],
        "candidates_evaluated": 12345,
        "candidates_per_second": 4000.0,
        "candidates_predicted": 40,
        "candidates_measured": 4,
        "seconds": 600.0,
        "model_first_vs_best": 1.25,
    }
    irkit = {"name": "irkit tuned", "error": error}
    if tuned_s is not None:
        irkit |= {"median_s": tuned_s, "runs": 3, "rate": 1.0, "rate_unit": "GB/s"}
    return {"name": name, "kernel": name, "size": "big", "sizes": {}, "tune": tune, "irkit": irkit, "peers": peers}


def test_tune_report_targets_met_and_not_met():
    hand = bench_tune.HAND
    gemm = _tuned_row("gemm", 1.0, [_contender(hand, 0.96), _contender("numpy matmul (OpenBLAS)", 0.9)])
    blur = _tuned_row(
        "blur",
        1.0,
        [
            _contender(hand, 0.94),  # tuned is 0.94x the hand schedule: not met
            _contender("Halide (classic schedule, JIT)", 1.6),
            _contender("numpy slicing", 5.0),
            _contender("Halide autoscheduler Mullapudi2016", 3.0),
            _contender("Halide autoscheduler Adams2019", 1.1),  # the best autoscheduler: 1.1x < 1.2x
            _contender("Halide autoscheduler Li2018", None, error="cannot load libautoschedule_li2018.so"),
        ],
    )
    softmax = _tuned_row("softmax", 1.0, [_contender(hand, 1.0), _contender("numpy (max-subtracted)", 6.0, ok=False)])
    conv = _tuned_row("conv2d", None, [_contender(hand, None), _contender("numpy im2col + matmul", None)], "no candidate")
    by = {r["name"]: {t["what"]: t for t in bench_tune.targets(r)} for r in (gemm, blur, softmax, conv)}

    assert by["gemm"][">= 0.9x numpy matmul (OpenBLAS)"]["met"] is True  # exactly 0.9: met
    assert by["gemm"][">= 0.95x hand schedule"]["met"] is True
    assert by["blur"][">= 1.5x Halide classic schedule"]["met"] is True
    best = by["blur"][">= 1.2x best Halide autoscheduler"]
    assert best["met"] is False and best["peer"] == "Halide autoscheduler Adams2019"
    assert abs(best["ratio"] - 1.1) < 1e-12
    assert by["blur"][">= 0.95x hand schedule"]["met"] is False
    numpy_softmax = by["softmax"][">= 5x numpy (max-subtracted)"]
    assert numpy_softmax["met"] is False and "results differ" in numpy_softmax["why"]  # fast but wrong: not met
    assert by["softmax"][">= 0.95x hand schedule"]["met"] is True
    assert all(t["met"] is None for t in by["conv2d"].values())  # the tuner failed: nothing measured

    # every autoscheduler failed: the target cannot be judged, and says why
    blur_none = _tuned_row("blur", 1.0, [_contender("Halide autoscheduler Adams2019", None, error="boom")])
    (t,) = [t for t in bench_tune.targets(blur_none) if "autoscheduler" in t["what"]]
    assert t["met"] is None and "boom" in t["why"]

    results = {
        "command": "python -m bench.tune",
        "date": "2026-01-01T00:00:00",
        "options": {"quick": False, "budget": 600.0},
        "hardware": "`host.hw`",
        "machine": dict(FAKE_MACHINE),
        "limits": dict(FAKE_LIMITS),
        "benchmarks": [gemm, blur, softmax, conv],
    }
    text = bench_tune.markdown(results)
    assert "## Targets: 4 of 9 met" in text
    assert "| gemm | big | >= 0.9x numpy matmul (OpenBLAS) | numpy matmul (OpenBLAS) | 0.9x | **yes** |" in text
    assert "| blur | big | >= 1.2x best Halide autoscheduler | Halide autoscheduler Adams2019 | 1.1x | **no** |" in text
    assert "**unavailable**: cannot load libautoschedule_li2018.so" in text
    assert "**tuning FAILED**: no candidate" in text
    assert "12,345 (4,000/s)" in text and "1.25x" in text  # screened, and the model's first vs the best
    assert "`python -m bench.tune`" in text


def test_tune_args():
    args = bench_tune.parse_args(["--quick", "--only", "softmax, blur", "--budget", "90s"])
    assert args.only == ["softmax", "blur"] and args.budget == 90.0
    assert bench_tune.parse_args([]).budget == bench_tune.FULL_BUDGET
    assert bench_tune.parse_args(["--quick"]).budget == bench_tune.QUICK_BUDGET
    assert Path(bench_tune.parse_args([]).tuned_dir) == bench_tune.DEFAULT_TUNED
    assert bench_tune.parse_args(["--out", "/tmp/x/T.md"]).tuned_dir == "/tmp/x/tuned"
    with pytest.raises(SystemExit):
        bench_tune.parse_args(["--only", "triad"])
    with pytest.raises(SystemExit):
        bench_tune.parse_args(["--budget", "soon"])


def test_tune_quick_softmax(tmp_path):
    """`python -m bench.tune --quick --only softmax` (about 10 s): tunes, writes the tuned document, times it."""
    md, js = tmp_path / "TUNING.md", tmp_path / "tune.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.tune", "--quick", "--only", "softmax", "--out", str(md), "--json", str(js)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "irkit tune: stage P:" in done.stderr  # the tuner's progress
    (row,) = json.loads(js.read_text())["benchmarks"]
    tuned = tmp_path / "tuned" / "softmax.design"
    assert tuned.is_file() and tuned.read_text().startswith("# Tuned by `python -m bench.tune` (quick mode")
    assert row["tune"]["error"] is None and row["tune"]["candidates_evaluated"] > 0
    assert row["irkit"]["name"] == "irkit tuned" and row["irkit"]["median_s"] > 0
    names = [p["name"] for p in row["peers"]]
    assert names == [bench_tune.HAND, "numpy (max-subtracted)"]
    assert all(p["check"]["ok"] for p in row["peers"]), row["peers"]
    assert {t["what"] for t in row["targets"]} == {">= 5x numpy (max-subtracted)", ">= 0.95x hand schedule"}
    assert "## Targets:" in md.read_text() and "quick mode" in md.read_text()


def test_search_rate_counts_the_same_candidates_every_run_and_replaces_its_section(tmp_path):
    from bench import search_rate

    kernels = {"rowsum": (ROOT / "examples" / "rowsum.design", {"M": 64, "N": 128})}
    rows = search_rate.measure(kernels, None, 2, width=8, depth=3, workers=1)
    assert len(rows) == 1 and rows[0]["candidates"] > 1
    assert rows[0]["low"] <= rows[0]["rate"] <= rows[0]["high"]
    text = search_rate.table(rows, 2, 1, "a test machine")
    assert "| rowsum | M=64, N=128 |" in text
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(f"# before\n\n{search_rate.BEGIN}\nold\n{search_rate.END}\n\n# after\n")
    report.replace_section(out, text, search_rate.BEGIN, search_rate.END)
    written = out.read_text()
    assert "old" not in written and written.startswith("# before") and written.rstrip().endswith("# after")
    assert written.count(search_rate.BEGIN) == 1


def test_search_rate_refuses_an_unknown_kernel(capsys):
    from bench import search_rate

    with pytest.raises(SystemExit) as e:
        search_rate.main(["--only", "gemm,nosuch"])
    assert e.value.code == 2
    assert "unknown kernel(s) nosuch" in capsys.readouterr().err
