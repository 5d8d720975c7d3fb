"""`irkit calibrate --quick`: measures this host, writes a description `irkit check` accepts, fails cleanly.

The figures are real measurements on whatever machine runs the tests, so the
assertions are only those no sane host breaks: L1 is faster than DRAM, and all
cores together reach at least 0.9 x one core.  That last one needs the cores:
on a host whose other CPUs are busy it is retried (a busy moment passes).
"""

from __future__ import annotations

import json
import re

import pytest

from irkit.tools.cli import main

PROGRESS = re.compile(r"^\[ *(\d+)/(\d+)\] .+ \.\.\. .+$")
ATTEMPTS = 3  # runs of the all-cores check before it fails


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("IRKIT_CFLAGS", raising=False)
    monkeypatch.delenv("CC", raising=False)
    return tmp_path / "cache"


def calibrate(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(["calibrate", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def figure(report: dict, key: str) -> float:
    return report["measurements"][key]["value"]


def test_quick_calibration_writes_a_checked_description(cache, tmp_path, capsys):
    path = tmp_path / "box.hw"
    status, out, err = calibrate(capsys, "--quick", "-o", str(path), "--json")
    assert status == 0, err
    assert "Traceback" not in err

    # progress: one line per step on stderr, numbered 1..N
    steps = [PROGRESS.match(line) for line in err.splitlines() if line.startswith("[")]
    assert steps and all(steps), err
    total = int(steps[0].group(2))
    assert [int(m.group(1)) for m in steps] == list(range(1, total + 1))
    assert any("L1 bandwidth, 1 core, 3 x" in line and line.endswith("GB/s") for line in err.splitlines())

    # the file: hardware box { ... }, accepted by `irkit check`
    text = path.read_text()
    assert "\nhardware box {\n" in text and "# " in text
    report = json.loads(out)
    assert report["hw"] == text and report["name"] == "box" and report["quick"] is True
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: ok\n"
    keys = ("flops_f32", "flops_f64_all", "div_f32", "sqrt_f32", "exp_f32", "fp_latency", "parallel_overhead")
    for key in (*keys, "call_overhead"):
        assert re.search(rf"^  {key} [0-9.]+ ", text, re.M), key
    assert re.search(r"^  dram \{ .*bandwidth_core [0-9.]+ GB/s", text, re.M)

    # sanity of the figures
    assert figure(report, "L1.bandwidth") > figure(report, "dram.bandwidth")
    assert figure(report, "L1.bandwidth") > figure(report, "dram.bandwidth_core")
    for attempt in range(ATTEMPTS):
        one, every = figure(report, "flops_f32"), figure(report, "flops_f32_all")
        if every >= 0.9 * one:
            break
        if attempt + 1 < ATTEMPTS:
            status, out, err = calibrate(capsys, "--quick", "--json")
            assert status == 0, err
            report = json.loads(out)
    assert every >= 0.9 * one, (
        f"all cores {every:.3g} FLOP/s < 0.9 x one core {one:.3g}; warnings: {report['warnings']}"
    )


def test_without_output_the_description_goes_to_stdout(cache, monkeypatch, capsys):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # also: the thread count comes from OMP_NUM_THREADS
    status, out, err = calibrate(capsys, "--quick", "--name", "here")
    assert status == 0, err
    assert "\nhardware here {\n" in out and out.rstrip().endswith("}")
    assert re.search(r"^  cores 1 +# threads \(OMP_NUM_THREADS\)$", out, re.M)
    assert "wrote" not in err


def test_a_failing_compiler_is_one_line_without_traceback(cache, monkeypatch, capsys):
    monkeypatch.setenv("CC", "false")
    status, out, err = calibrate(capsys, "--quick")
    assert status == 1
    assert out == ""
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1, err
    assert errors[0].startswith("irkit calibrate: error: cannot build the microbenchmarks: the C compiler failed")
    assert "Traceback" not in err


def test_an_unusable_file_name_is_a_usage_error(tmp_path, capsys):
    status, _, err = calibrate(capsys, "--quick", "-o", str(tmp_path / "my-host.hw"))
    assert status == 2 and err.startswith("irkit: error: the file name 'my-host.hw'")
    status, _, err = calibrate(capsys, "--quick", "-o", str(tmp_path / "missing" / "host.hw"))
    assert status == 1 and "does not exist" in err and "Traceback" not in err
