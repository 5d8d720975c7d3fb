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
    assert kernels == {"gemm", "blur", "softmax", "triad", "conv2d"}
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


def test_failed_peer_and_mismatch_are_loud():
    results = {
        "command": "python -m bench",
        "date": "2026-01-01T00:00:00",
        "options": {"quick": False, "repeat": 7, "min_time": 1.0, "budget": 60.0, "settle": 0.0},
        "machine": {
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
        },
        "limits": {
            "fma_peak": {"flops_per_s": 1e11, "simd_lanes": 8, "runs": 1},
            "triad": {"bytes_per_s": 2e10, "elements": 1 << 20, "runs": 1},
        },
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
