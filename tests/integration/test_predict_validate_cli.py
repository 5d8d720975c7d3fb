"""`irkit predict` and `irkit validate`: reports, JSON, progress, failures.

The commands call the cost model (`irkit.perf`).  The plumbing below them
(measuring, the roofline arithmetic, rows for failed cases) is also tested
with a stand-in predictor, so a failure there is told apart from one in
the model.
"""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from irkit.tools.cli import main
from irkit.tools.predict import format_report, prediction_report, roofline
from irkit.validate import host, measure, ranking, stats, suite

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples" / "gemm.design"


def run(capsys, *argv):
    status = main([*map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


# ---- with the cost model ------------------------------------------------------------


# A complete description, with the measured figures `irkit calibrate` writes, so that
# the tests do not depend on which fields the bundled profiles and the examples give.
HOST_HW = """hardware testhost {
  cores 2
  simd 256 bits
  frequency 2.45 GHz
  fma_units 2
  flops_f32 78 GFLOP/s
  flops_f32_all 150 GFLOP/s
  div_f32 10 GFLOP/s
  sqrt_f32 10 GFLOP/s
  exp_f32 5 GFLOP/s
  parallel_overhead 2 us
  call_overhead 100 ns
  cache L1 { size 32 KiB; line 64 B; bandwidth 300 GB/s }
  cache L2 { size 512 KiB; line 64 B; bandwidth 100 GB/s }
  cache L3 { size 32 MiB; line 64 B; bandwidth 50 GB/s; shared 2 }
  dram { bandwidth 20 GB/s }
}
"""


@pytest.fixture
def host_hw(tmp_path):
    path = tmp_path / "testhost.hw"
    path.write_text(HOST_HW)
    return path


def test_predict_text(capsys):
    status, out, err = run(capsys, "predict", GEMM)  # the document's own hardware
    assert status == 0, err
    assert "M=1024, N=1024, K=1024" in out
    assert "predicted time:" in out and "per call, bound by" in out
    assert "term" in out and "share" in out and "compute" in out and "L1" in out
    assert "roofline:" in out and "operational intensity:" in out and "attainable:" in out
    assert "% of the roofline" in out


def test_predict_json(capsys, host_hw):
    sizes = ["--size", "M=2048", "--size", "N=2048", "--size", "K=2048"]  # 48 MiB: past the last cache
    status, out, err = run(capsys, "predict", GEMM, "--json", "--hw", host_hw, *sizes)
    assert status == 0, err
    r = json.loads(out)
    assert r["sizes"] == {"M": 2048, "N": 2048, "K": 2048}
    assert r["seconds"] > 0 and r["flops"] == 2 * 2048**3
    assert r["bound"] in r["breakdown"] and {"compute", "DRAM", "overhead"} <= set(r["breakdown"])
    assert all(v >= 0 for v in r["breakdown"].values())
    assert "testhost" in r["hardware"]
    rf = r["roofline"]
    assert r["dram_bytes"] > 0
    assert rf["operational_intensity"] == pytest.approx(r["flops"] / r["dram_bytes"])
    assert rf["attainable_flops"] == pytest.approx(
        min(r["peak_flops"], rf["operational_intensity"] * r["dram_bandwidth"])
    )
    assert rf["achieved_flops"] == pytest.approx(r["flops"] / r["seconds"])
    assert 0 < rf["fraction_of_roofline"] <= 1.0 + 1e-9


def test_predict_errors(capsys):
    status, _, err = run(capsys, "predict", ROOT / "examples" / "missing.design")
    assert status == 2 and "no such file" in err and "missing.design" in err
    status, _, err = run(capsys, "predict", GEMM, "--size", "M")
    assert status == 2 and "NAME=VALUE" in err
    status, _, err = run(capsys, "predict", GEMM, "--hw", "no_such_machine")
    assert status == 1 and "no_such_machine" in err


def test_validate_quick_json(capsys, tmp_path, host_hw):
    md = tmp_path / "validation.md"
    status, out, err = run(capsys, "validate", "--quick", "--json", "--out", md, "--hw", host_hw)
    assert status == 0, err
    result = json.loads(out)
    rows = result["rows"]
    assert len(rows) == 2 * 2 * 2  # kernels x schedules x sizes
    for row in rows:
        assert row["error"] is None, row
        assert row["measured_s"] > 0 and row["predicted_s"] > 0
        assert row["abs_error_pct"] == pytest.approx(stats.abs_pct_error(row["predicted_s"], row["measured_s"]))
        assert len(row["runs_s"]) == measure.PASSES == 3 and row["measured_s"] == min(row["runs_s"])
        assert row["spread_pct"] == pytest.approx(ranking.spread_pct(row["runs_s"]))
        assert row["within_spread"] == (row["abs_error_pct"] <= row["spread_pct"])
    s = result["summary"]
    assert s["compared"] == 8 and s["median_abs_error_pct"] is not None and len(s["groups"]) == 4
    assert s["top1_groups"] == 4 and 0 < s["mean_top1"] <= 1 and 0 <= s["mean_pairwise"] <= 1
    assert s["spread_cases"] == 8 and s["targets"]["label"] == "native build" and "top1_share" in s["met"]
    assert result["march"] == "native" and result["passes"] == measure.PASSES
    assert "[1/8] gemm" in err and "measured" in err and "predicted" in err  # progress
    assert "pass 3 of 3" in err and "spread" in err
    # the summary line (a busy machine's warning may follow it)
    (last,) = [line for line in err.splitlines() if line.startswith("irkit validate (native): 8 cases")]
    assert "top-1 >= 0.95 in" in last and "pairwise" in last and "within the run-to-run spread" in last
    simd_warned = any("has simd 256 bits" in w for w in result["warnings"])
    assert simd_warned == (host.build_simd_bits(None) not in (None, 256))  # the description is 256-bit
    text = md.read_text()
    assert "| median absolute error |" in text and "| kernel | schedule | sizes |" in text
    assert "## The schedules of each kernel and size" in text and "| errors within the run-to-run spread |" in text
    assert result.get("plot") or "matplotlib" in result.get("plot_skipped", "")


@pytest.mark.skipif(host.build_simd_bits(("-march=x86-64-v3",)) != 256, reason="an x86-64 compiler")
def test_validate_for_another_isa(capsys, tmp_path, host_hw):
    md = tmp_path / "v3.md"
    argv = ["validate", "--quick", "--only", "rowsum", "--march", "x86-64-v3", "--hw", host_hw, "--out", md]
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    result = json.loads(out)
    assert result["march"] == "x86-64-v3" and "-march=x86-64-v3" in result["cflags"]
    assert result["summary"]["targets"]["label"] == "x86-64-v3 build"
    assert not any("simd" in w for w in result["warnings"])  # a 256-bit description for an AVX2 build
    assert "built for x86-64-v3" in err and "irkit validate (x86-64-v3):" in err
    assert "Built for **x86-64-v3**" in md.read_text() and "target (x86-64-v3 build)" in md.read_text()


def test_validate_march_usage_errors(capsys):
    status, _, err = run(capsys, "validate", "--quick", "--march", "x86-64-v3", "--cflags=-O2")
    assert status == 2 and "--cflags and --march" in err
    status, _, err = run(capsys, "validate", "--quick", "--march", "not an isa")
    assert status == 2 and "not an ISA name" in err


def test_validate_unknown_kernel(capsys):
    status, _, err = run(capsys, "validate", "--only", "nope")
    assert status == 1 and "unknown kernel 'nope'" in err


# ---- without it ---------------------------------------------------------------------


def fake_prediction(seconds=2e-3, flops=4e9, dram_bytes=1e7):
    breakdown = {"compute": seconds * 0.9, "L1": seconds * 0.2, "DRAM": dram_bytes / 20e9, "overhead": 1e-6}
    fields = {
        "seconds": seconds,
        "breakdown": breakdown,
        "bound": "compute",
        "flops": flops,
        "dram_bytes": dram_bytes,
        "peak_flops": 2.5e12,
        "dram_bandwidth": 20e9,
        "notes": ["stand-in"],
    }
    return SimpleNamespace(**fields, to_json=lambda: dict(fields))


def test_roofline_arithmetic():
    rf = roofline(flops=4e9, dram_bytes=1e8, seconds=2e-3, peak_flops=2.5e12, dram_bandwidth=20e9)
    assert rf["operational_intensity"] == 40.0
    assert rf["attainable_flops"] == 40.0 * 20e9  # below the compute peak: the bandwidth roof
    assert rf["achieved_flops"] == 2e12 and rf["fraction_of_roofline"] == pytest.approx(2e12 / 8e11)
    assert rf["ridge_intensity"] == 125.0 and rf["side"] == "memory"
    moving = roofline(flops=0, dram_bytes=1e8, seconds=1e-2, peak_flops=1e11, dram_bandwidth=20e9)
    assert moving["attainable_flops"] is None and moving["achieved_dram_bandwidth"] == 1e10
    cached = roofline(flops=1e9, dram_bytes=0, seconds=1e-2, peak_flops=1e11, dram_bandwidth=20e9)
    assert cached["operational_intensity"] is None and cached["attainable_flops"] == 1e11


def test_prediction_report_text():
    r = prediction_report(fake_prediction(), "k.design", {"N": 4}, None)
    json.dumps(r, allow_nan=False)
    text = format_report(r)
    assert "k.design: N=4 (hardware: the document's own)" in text
    assert "predicted time: 2 ms per call, bound by compute" in text
    table = {line.split()[0]: line.split()[1:] for line in text.splitlines()[3:8]}
    assert table["term"] == ["seconds", "share"]
    assert table["compute"] == ["1.8", "ms", "90.0%", "<-", "bound"]
    assert table["DRAM"] == ["500", "us", "25.0%"] and table["overhead"] == ["1", "us", "0.0%"]
    assert "the terms add up to" in text  # they overlap here
    assert "operational intensity: 400 FLOP/B" in text and "- stand-in" in text
    assert "attainable:            2.5 TFLOP/s (the compute peak)" in text
    assert "predicted:             2 TFLOP/s = 80.0% of the roofline" in text


def test_measure_with_a_stand_in_predictor(tmp_path):
    kernels = suite.select(["rowsum"], quick=True)
    cases = suite.cases(kernels, suite.write_variants(kernels, tmp_path))
    lines = []

    def predictor(document, sizes, hw):
        if "naive" in document.name and sizes["M"] > 64:
            raise RuntimeError("no model for this")
        return fake_prediction(seconds=1e-5 * sizes["M"] / 64)

    rows = measure.run_cases(cases, measure.QUICK_PLAN, None, predictor, lines.append)
    assert [(r["schedule"], r["size"]) for r in rows] == [
        ("own", "tiny"),
        ("naive", "tiny"),
        ("own", "small"),
        ("naive", "small"),
    ]
    assert all(r["measured_s"] > 0 for r in rows)
    assert rows[0]["check"]["ok"] and rows[0]["calls"] >= 2 * measure.PASSES  # passes of at least two rounds
    assert all(len(r["runs_s"]) == measure.PASSES for r in rows[:3]) and rows[0]["spread_pct"] is not None
    assert len(rows[3]["runs_s"]) == 1  # failed in the first pass: not measured again
    assert rows[3]["error"] == "predict: RuntimeError: no model for this" and rows[3]["predicted_s"] is None
    assert rows[2]["predicted_s"] == pytest.approx(2e-5)
    assert any(line.startswith("[4/4] rowsum") and "FAILED" in line for line in lines)
    s = stats.summarize(rows)
    assert s["compared"] == 3 and s["failed"] == 1
