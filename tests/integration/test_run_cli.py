"""`irkit run`: reports, JSON, inputs and outputs files, emitted code, failures as diagnostics."""

import json
import os

import numpy as np
import pytest

from irkit.tools.cli import main

DOC = """design saxpy {
  sizes { N = 100 }
  tensor x : f32[N] input
  tensor y : f32[N] input
  tensor z : f32[N] output
  z[i] = 2 * x[i] + y[i]
}
"""


@pytest.fixture
def doc(tmp_path):
    path = tmp_path / "saxpy.design"
    path.write_text(DOC)
    return path


def run(capsys, *argv):
    status = main(["run", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


def test_check_report_is_readable(doc, capsys):
    status, out, err = run(capsys, doc, "--check", "--size", "N=1000")
    assert status == 0, err
    assert "kernel saxpy at N=1000" in out
    assert "check z: ok  worst element at " in out and "% of its tolerance: |err| <= " in out
    assert "max rel err" not in out  # relative errors of near-zero elements mean nothing here


def test_json_report_has_sizes_checks_and_times(doc, capsys):
    status, out, _ = run(capsys, doc, "--check", "--bench", "--json", "--repeat", "3", "--min-time", "0")
    assert status == 0
    report = json.loads(out)
    assert report["sizes"] == {"N": 100}
    assert report["check"]["outputs"]["z"]["ok"] is True
    bench = report["bench"]
    assert bench["runs"] >= 3 and 0 < bench["min_s"] <= bench["median_s"] <= bench["max_s"]
    assert bench["rate_unit"] in ("GFLOP/s", "GB/s") and bench["bytes"] == 3 * 100 * 4


def test_inputs_and_outputs_files(doc, tmp_path, capsys):
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    np.savez(tmp_path / "in.npz", x=x, y=y)
    status, _, err = run(capsys, doc, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz", "--check")
    assert status == 0, err
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_array_equal(out["z"], 2 * x + y)


def test_inputs_file_missing_a_tensor(doc, tmp_path, capsys):
    np.savez(tmp_path / "in.npz", x=np.zeros(100, np.float32))
    status, _, err = run(capsys, doc, "--inputs", tmp_path / "in.npz")
    assert status == 1 and "no array for input 'y'" in err and "Traceback" not in err


def test_emit_c_and_mlir(doc, capsys):
    status, out, _ = run(capsys, doc, "--emit", "c")
    assert status == 0 and "void irkit_saxpy(" in out
    status, out, _ = run(capsys, doc, "--emit", "mlir")
    assert status == 0 and "loop.for" in out and "loop.store" in out


def test_bad_size_is_a_usage_error(doc, capsys):
    status, _, err = run(capsys, doc, "--size", "N=ten")
    assert status == 2 and "not an integer" in err
    status, _, err = run(capsys, doc, "--size", "Q=3")
    assert status == 2 and "unknown size 'Q'" in err


def test_failing_compiler_is_a_diagnostic(doc, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "false")
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path / "cache"))
    status, _, err = run(capsys, doc, "--check")
    assert status == 1
    assert "error" in err and ".c" in err and "Traceback" not in err


def test_missing_compiler_is_a_clear_error(doc, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path / "cache"))
    status, _, err = run(capsys, doc)
    assert status == 1 and "compiler" in err and "Traceback" not in err


def test_document_errors_are_located(tmp_path, capsys):
    bad = tmp_path / "bad.design"
    bad.write_text(DOC.replace("y[i]", "q[i]"))
    status, _, err = run(capsys, bad, "--check")
    assert status == 1 and f"{bad}:6:" in err and "undefined tensor 'q'" in err


def test_missing_file(capsys, tmp_path):
    status, _, err = run(capsys, tmp_path / "nope.design")
    assert status == 2 and "no such file: " in err and "nope.design" in err and "Traceback" not in err


def test_wrong_results_fail_the_check(doc, tmp_path, capsys, monkeypatch):
    """The check can fail: a kernel whose C computes something else is caught."""
    import irkit.backends.c as c

    real = c.emit_c

    def corrupted(module, *args, **kwargs):
        source = real(module, *args, **kwargs)
        assert "2.0f * " in source, source
        return source.replace("2.0f * ", "2.5f * ")

    monkeypatch.setattr(c, "emit_c", corrupted)
    status, out, _ = run(capsys, doc, "--check")
    assert status == 1 and "MISMATCH" in out and "worst z[" in out


@pytest.mark.skipif(os.cpu_count() == 1, reason="one core")
def test_threads_reported(doc, capsys):
    status, out, _ = run(capsys, doc, "--json")
    assert status == 0 and json.loads(out)["threads"] >= 1


def test_bench_times_the_bare_call(doc, monkeypatch):
    """`--bench` times the C function with its arguments ready (the call `irkit validate` times and
    the cost model's call_overhead counts), not the checked Python call around it."""
    import irkit
    import irkit.validate.measure as measure
    from irkit.tools.run import time_kernel

    calls = []
    real = measure.prepare

    def counting(kernel, sizes, inputs):
        prepared = real(kernel, sizes, inputs)
        bare = prepared.call
        prepared.call = lambda: (calls.append(1), bare())
        return prepared

    monkeypatch.setattr(measure, "prepare", counting)
    kernel = irkit.compile(doc, sizes={"N": 64})
    inputs = {name: np.ones(64, dtype=np.float32) for name in kernel.inputs()}
    times = time_kernel(kernel, inputs, kernel.resolve_sizes({"N": 64}), repeat=5, min_time=0.0)
    assert len(times) >= 5 and len(calls) >= len(times)
