"""`irkit calibrate --quick`: measures this host, writes a description `irkit check` accepts, fails cleanly.

The figures are real measurements on whatever machine runs the tests, so the
assertions are only those no sane host breaks: L1 is faster than DRAM, and all
cores together reach at least 0.9 x one core.  That last one needs the cores:
on a host whose other CPUs are busy it is retried (a busy moment passes).
One quick calibration (a module fixture) serves the tests of the written
file and of `--check`; `--check`'s verdicts asserted here are the ones no
noise changes (another CPU recorded, a clock 60% off).
"""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from irkit.tools.cli import main


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, module_cache):
    """One `irkit calibrate --quick -o box.hw --json`: (status, stdout, stderr, path)."""
    path = tmp_path_factory.mktemp("quick") / "box.hw"
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IRKIT_CACHE_DIR", str(module_cache))
        for name in ("IRKIT_CFLAGS", "CC", "OMP_NUM_THREADS"):
            mp.delenv(name, raising=False)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["calibrate", "--quick", "-o", str(path), "--json"])
    return status, out.getvalue(), err.getvalue(), path

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
    """A figure as written (base units): the checked values, derived from the measurements."""
    return report["values"][key]


def test_quick_calibration_writes_a_checked_description(quick_run, module_cache, monkeypatch, capsys):
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(module_cache))
    status, out, err, path = quick_run
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
    # read-only streams beside the triads: every level beyond L1 and DRAM (or the warning leaving it out)
    for level in re.findall(r"^  cache (L[2-9]) \{", text, re.M):
        key = f"{level}.bandwidth_read"
        assert re.search(rf"^  cache {level} \{{.*bandwidth_read [0-9.]+ GB/s", text, re.M) or key in report["checks"]["left_out"], key
    read_core = re.search(r"^  dram \{ .*bandwidth_read_core [0-9.]+ GB/s", text, re.M)
    assert read_core or "dram.bandwidth_read_core" in report["checks"]["left_out"]
    # where it came from, the figures per width and for f64, the effective capacities
    assert re.search(r'^  cpu "[^"]+"', text, re.M) and re.search(r'^  march "native"', text, re.M)
    assert re.search(r'^  cpu_id "\S+ family \d+ model \d+', text, re.M)
    for key in ("flops_f32_128", "flops_f32_scalar", "flops_f64_scalar", "div_f64", "sqrt_f64", "exp_f64"):
        assert re.search(rf"^  {key} [0-9.]+ GFLOP/s", text, re.M) or key in report["checks"]["left_out"], key
    assert re.search(r"^  cache L1 \{ size \d+ KiB; (effective_size \S+ \S+; )?line", text, re.M)
    assert re.search(r"^  cache L1 \{.*bandwidth_scalar [0-9.]+ GB/s", text, re.M)
    assert report["capacities"] and all(c["effective_size"] is None or c["effective_size"] <= c["size"]
                                        for c in report["capacities"])  # fmt: skip
    assert 0.3e9 <= report["values"]["frequency"] <= 7e9

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


def _has(flag: str) -> bool:
    from irkit.calibrate.detect import read_cpuinfo

    return flag in read_cpuinfo()[1]


def test_without_output_the_description_goes_to_stdout(module_cache, monkeypatch, capsys):
    """Also: the thread count comes from OMP_NUM_THREADS, and --march x86-64-v3 makes a 256-bit description."""
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(module_cache))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    march = ["--march", "x86-64-v3"] if _has("avx2") and _has("fma") else []
    status, out, err = calibrate(capsys, "--quick", "--name", "here", *march)
    assert status == 0, err
    assert "\nhardware here {\n" in out and out.rstrip().endswith("}")
    assert re.search(r"^  cores 1 +# threads \(OMP_NUM_THREADS\)$", out, re.M)
    assert "wrote" not in err
    if march:
        assert re.search(r"^  simd 256 bits\b", out, re.M)
        assert re.search(r'^  march "x86-64-v3"', out, re.M)
        assert "-march=x86-64-v3" in err
        assert "flops_f32_512" not in out and "flops_f64_512" not in out  # only the widths the ISA has
        assert re.search(r"^  flops_f32_256 [0-9.]+ GFLOP/s", out, re.M)
        assert not re.search(r"^  cache L1 .*bandwidth_256", out, re.M)  # 256 bits is the full width: `bandwidth`


def _edited(path, tmp_path, name: str, edit) -> str:
    text = edit(path.read_text()).replace("hardware box {", f"hardware {name} {{")
    out = tmp_path / f"{name}.hw"
    out.write_text(text)
    return str(out)


def test_check_a_description_from_another_cpu(quick_run, module_cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(module_cache))
    status, _, err, path = quick_run
    assert status == 0, err
    other = _edited(path, tmp_path, "other", lambda t: re.sub(r'(cpu_id "\S+ family \d+ model )(\d+)', r"\g<1>9999", t))
    status, out, err = calibrate(capsys, "--check", other)
    assert status == 1, out + err
    assert "model 9999" in out and "measured on another CPU" in out
    assert "Traceback" not in err


def test_check_a_description_whose_clock_moved(quick_run, module_cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(module_cache))
    status, _, err, path = quick_run
    assert status == 0, err

    def faster(text: str) -> str:
        m = re.search(r"^  frequency ([0-9.]+) GHz", text, re.M)
        return text.replace(m.group(0), f"  frequency {float(m.group(1)) * 1.6:.4g} GHz")

    moved = _edited(path, tmp_path, "moved", faster)
    status, out, err = calibrate(capsys, "--check", moved)
    assert status == 1, out + err
    assert re.search(r"^  clock .* MOVED$", out, re.M)
    assert re.search(r"does not fit this host \(moved: frequency -\d+%", out)
    started = [line for line in err.splitlines() if line.startswith("[")]
    assert started and all(re.match(r"^\[\d/\d\] ", line) for line in started)


def test_check_of_a_broken_description_is_located(tmp_path, capsys):
    bad = tmp_path / "bad.hw"
    bad.write_text("hardware bad {\n  cores 2\n  simd 512 bits\n  frequency 20.71 GHz\n"
                   "  cache L1 { size 32 KiB; line 64 B; bandwidth 100 GB/s }\n  dram { bandwidth 10 GB/s }\n}\n")  # fmt: skip
    status, out, err = calibrate(capsys, "--check", str(bad))
    assert status == 1 and out == ""
    assert f"{bad}:4:3: error: the hardware block: frequency 20.71 GHz is not plausible" in err


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
