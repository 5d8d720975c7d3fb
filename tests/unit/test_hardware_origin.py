"""Where a description came from (text fields), the new figures reaching `values`, and `--check`'s verdicts.

Nothing is measured: descriptions are written from fixed figures
(irkit.calibrate.writer), fingerprints come from fake /proc/cpuinfo files,
and `--check`'s comparison is fed both sides.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from irkit.calibrate import fingerprint, quickcheck, writer
from irkit.calibrate.detect import CacheLevel, Host, read_cpu
from irkit.dialects import design as d
from irkit.frontend import parse_design
from irkit.perf.hardware import load_hardware

KiB, MiB = 1024, 1024**2
ZEN4 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9R14
stepping\t: 1
cpu MHz\t\t: 2596.140
flags\t\t: fpu sse2 sse4_2 avx avx2 fma constant_tsc avx512f avx512bw avx512dq avx512vl

processor\t: 1
vendor_id\t: AuthenticAMD
"""
XEON = ZEN4.replace("AuthenticAMD", "GenuineIntel").replace("25", "6").replace(": 17", ": 207").replace(
    "AMD EPYC 9R14", "Intel(R) Xeon(R) Platinum 8592+"
)
ZEN3 = ZEN4.replace(": 17", ": 1").replace(" avx512f avx512bw avx512dq avx512vl", "")

VALUES = {
    "frequency": 3.673e9,
    "flops_f32": 117.4e9,
    "flops_f32_512": 117.4e9,
    "flops_f32_256": 117.2e9,
    "flops_f32_128": 58.7e9,
    "flops_f32_scalar": 14.7e9,
    "flops_f64": 58.7e9,
    "flops_f64_scalar": 14.7e9,
    "div_f32": 9.8e9,
    "sqrt_f32": 5.9e9,
    "exp_f32": 2.9e9,
    "libm_exp_f32": 0.40e9,
    "div_f64": 3.25e9,
    "sqrt_f64": 1.82e9,
    "exp_f64": 1.1e9,
    "libm_exp_f64": 0.244e9,
    "fp_latency": 3.0,
    "fp_latency_f64": 4.0,
    "L1.bandwidth": 280e9,
    "L1.effective_size": 32 * KiB,
    "L1.bandwidth_256": 329e9,
    "L1.bandwidth_128": 170e9,
    "L1.bandwidth_scalar": 42.7e9,
    "L2.bandwidth": 152e9,
    "L2.effective_size": 704 * KiB,
    "L3.bandwidth": 127e9,
    "L3.effective_size": 22 * MiB,
    "dram.bandwidth": 58.7e9,
    "dram.bandwidth_core": 27e9,
}


def cpu(tmp_path: Path, text: str) -> fingerprint.Fingerprint:
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return fingerprint.of_cpu(read_cpu(path))


def description(tmp_path: Path, name: str = "box", cpuinfo: str = ZEN4, march: str = "native", **values) -> Path:
    caches = [CacheLevel(1, 32 * KiB, 64), CacheLevel(2, 1 * MiB, 64), CacheLevel(3, 32 * MiB, 64, shared=2)]
    host = Host("AMD EPYC 9R14", 512, 2, "affinity mask", caches, memory=24 * 1024 * MiB)
    texts = fingerprint.text_fields(cpu(tmp_path, cpuinfo), march)
    spec = writer.hardware_spec(name, host, VALUES | values, lanes=16, texts=texts)
    path = tmp_path / f"{name}.hw"
    path.write_text(writer.render(spec))
    return path


# ------------------------------------------------------------------ the record


def test_read_cpu_takes_the_first_processor(tmp_path):
    (tmp_path / "cpuinfo").write_text(ZEN4)
    c = read_cpu(tmp_path / "cpuinfo")
    assert (c.vendor, c.family, c.model, c.stepping, c.name) == ("AuthenticAMD", 25, 17, 1, "AMD EPYC 9R14")
    assert c.mhz == pytest.approx(2596.14e6) and "avx512f" in c.flags


def test_the_record_is_written_parsed_and_read_back(tmp_path):
    path = description(tmp_path)
    text = path.read_text()
    assert '  cpu "AMD EPYC 9R14"' in text
    assert '  cpu_id "AuthenticAMD family 25 model 17 stepping 1"' in text
    assert '  isa "sse4_2 avx avx2 fma avx512f avx512bw avx512dq avx512vl"' in text
    assert '  march "native"' in text
    hw = load_hardware(path)
    assert hw.text == {
        "cpu": "AMD EPYC 9R14",
        "cpu_id": "AuthenticAMD family 25 model 17 stepping 1",
        "isa": "sse4_2 avx avx2 fma avx512f avx512bw avx512dq avx512vl",
        "march": "native",
    }
    assert "cpu" not in hw.values  # nothing is priced with the record


def test_mismatch(tmp_path):
    here = cpu(tmp_path, ZEN4)
    hw = load_hardware(description(tmp_path))
    assert fingerprint.mismatch(hw, host=here) is None
    assert fingerprint.mismatch(hw, host=here, march="native") is None
    other = fingerprint.mismatch(hw, host=cpu(tmp_path, XEON))
    assert other is not None and "measured on AMD EPYC 9R14 (AuthenticAMD family 25 model 17 stepping 1)" in other
    assert "this host is Intel(R) Xeon(R) Platinum 8592+ (GenuineIntel family 6 model 207" in other
    zen3 = fingerprint.mismatch(hw, host=cpu(tmp_path, ZEN3))
    assert "this host lacks avx512f avx512bw avx512dq avx512vl" in zen3
    assert "-march=x86-64-v3" in fingerprint.mismatch(hw, host=here, march="x86-64-v3")
    # a stepping alone is the same microarchitecture
    assert fingerprint.mismatch(hw, host=cpu(tmp_path, ZEN4.replace("stepping\t: 1", "stepping\t: 2"))) is None


def test_a_description_without_a_record_cannot_be_compared(tmp_path):
    assert fingerprint.mismatch(load_hardware("generic"), host=cpu(tmp_path, XEON)) is None


def test_predict_warns_about_a_description_from_another_cpu(tmp_path, capsys, monkeypatch):
    from irkit.tools.cli import main

    here = cpu(tmp_path, ZEN4)
    monkeypatch.setattr(fingerprint, "this_host", lambda *a: here)
    doc = Path(__file__).resolve().parents[2] / "examples" / "elementwise.design"
    assert main(["predict", str(doc), "--hw", str(description(tmp_path, "same"))]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["predict", str(doc), "--hw", str(description(tmp_path, "xeon", cpuinfo=XEON))]) == 0
    err = capsys.readouterr().err
    assert err.startswith("irkit predict: warning: hardware 'xeon'") and "GenuineIntel family 6 model 207" in err
    assert "irkit calibrate --check" in err


# ------------------------------------------------------------------ figures reach values


def test_the_new_figures_reach_values(tmp_path):
    hw = load_hardware(description(tmp_path))
    v = hw.values
    assert v["flops_f32_w"] == {512: 117.4e9, 256: 117.2e9, 128: 58.7e9, 32: 14.7e9}
    assert v["flops_f64_w"] == {512: 58.7e9, 64: 14.7e9}  # the full width, and what the description gives
    for key in ("div_f64", "sqrt_f64", "exp_f64", "libm_exp_f64"):
        assert v[key] == pytest.approx(VALUES[key], rel=1e-3)
    assert v["fp_latency_f64"] == 4.0  # written: it differs from fp_latency
    l1, l2, l3 = v["levels"]
    assert l1["bandwidth_w"] == {512: 280e9, 256: 329e9, 128: 170e9, 32: 42.7e9}
    assert (l2["effective_size"], l2["size"]) == (704 * KiB, 1 * MiB)
    assert l3["effective_size"] == 22 * MiB and l2["bandwidth_w"] == {512: 152e9}


def test_older_descriptions_get_defaults(tmp_path):
    v = load_hardware("generic").values
    assert v["levels"][0]["effective_size"] == v["levels"][0]["size"]
    assert v["fp_latency_f64"] == v["fp_latency"]
    assert v["flops_f32_w"][512] == v["flops_f32"]


# ------------------------------------------------------------------ text fields in the language


def test_text_fields_print_back_and_keep_their_comments():
    from irkit.tools.fmt import _format

    text = (
        'hardware t {\n  cpu "A \\"quoted\\" name"  # why\n  march "x86-64-v3"\n\n  cores 1\n  simd 256 bits\n'
        "  frequency 3 GHz\n\n  cache L1 { size 32 KiB; line 64 B; bandwidth 100 GB/s }\n  dram { bandwidth 10 GB/s }\n}\n"
    )
    module = parse_design(text, "t.hw")
    (hw,) = [op for op in module.body.block.ops if isinstance(op, d.HardwareOp)]
    texts = [(op.key.data, op.text.data) for op in hw.body.block.ops if isinstance(op, d.HwTextOp)]
    assert texts == [("cpu", 'A "quoted" name'), ("march", "x86-64-v3")]
    printed = _format(text, "t.hw")
    assert printed is not None and '  cpu "A \\"quoted\\" name"  # why\n  march "x86-64-v3"\n' in printed
    assert _format(printed, "t.hw") == printed


def test_a_text_field_before_a_key_named_like_a_level_is_closed():
    """`cache` after a field would start a level: the printer ends the field with `;`."""
    from irkit.backends.design_text import print_design

    hw = d.HardwareOp("t", [d.HwTextOp("march", "native"), d.HwTextOp("cache", "x")])
    assert 'march "native";' in print_design(hw)


# ------------------------------------------------------------------ --check's verdict


def test_check_compares_within_tolerances():
    described = {"frequency": 3.67e9, "flops_f32": 117e9, "fp_latency": 3.0, "L1.bandwidth": 280e9}
    same = quickcheck.compare(described, {"frequency": 3.70e9, "flops_f32": 110e9, "fp_latency": 3.1, "L1.bandwidth": 190e9})
    assert [f.moved for f in same] == [False, False, False, False]
    moved = quickcheck.compare(described, {"frequency": 5.5e9, "flops_f32": 117e9, "fp_latency": 3.0, "L1.bandwidth": 150e9})
    assert [f.key for f in moved if f.moved] == ["frequency", "L1.bandwidth"]
    verdict = quickcheck.Verdict(moved, None)
    text = quickcheck.report_text("box.hw", verdict, 0.4)
    assert "box.hw does not fit this host (moved: frequency +50% (tolerance 10%), L1.bandwidth -46% (tolerance 35%))" in text
    assert quickcheck.Verdict(same, None).fits
    assert not quickcheck.Verdict(same, "it was measured on X").fits


def test_check_reads_the_figures_of_a_description(tmp_path):
    hw = load_hardware(description(tmp_path))
    figures = quickcheck.described_figures(hw.values)
    assert set(figures) == set(quickcheck.TOLERANCES)
    assert figures["dram.bandwidth_core"] == pytest.approx(27e9) and figures["fp_latency"] == 3.0
    levels = quickcheck.cache_levels(hw.values)
    assert [c.size for c in levels] == [32 * KiB, 704 * KiB, 22 * MiB]  # effective sizes: where calibrate measured
