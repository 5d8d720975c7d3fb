"""`irkit.validate.host`: warnings when the description given with --hw is not of this host or build.

No timing; the compiler is asked only for its predefined macros.
"""

import argparse
import platform
import shutil
import sys
import types
from types import SimpleNamespace

import pytest

from irkit.dialects import design
from irkit.tools import validate as tool
from irkit.tools.opt import UsageError
from irkit.validate import host


def hw(simd=512, march=None, source="nowhere.hw", name="h"):
    """A description as `irkit.perf.load_hardware` gives it: numbers in `values`, text fields in `text`."""
    text = {} if march is None else {"march": march}
    return SimpleNamespace(name=name, source=str(source), values={"simd": float(simd)}, text=text)


def test_simd_bits_of_macros():
    assert host.simd_bits_of_macros("#define __AVX512F__ 1\n#define __AVX__ 1\n#define __SSE2__ 1\n") == 512
    assert host.simd_bits_of_macros("#define __AVX2__ 1\n#define __AVX__ 1\n") == 256
    assert host.simd_bits_of_macros("#define __SSE2__ 1\n") == 128
    assert host.simd_bits_of_macros("#define __ARM_NEON 1\n") == 128
    assert host.simd_bits_of_macros("#define __x86_64__ 1\n") is None


@pytest.mark.skipif(platform.machine() != "x86_64" or not shutil.which("cc"), reason="an x86-64 compiler")
def test_build_simd_bits_asks_the_compiler():
    assert host.build_simd_bits(("-O2", "-march=x86-64-v3")) == 256
    assert host.build_simd_bits(("-O2", "-march=x86-64-v4", "-mprefer-vector-width=512")) == 512
    assert host.build_simd_bits(("-O2", "-march=x86-64-v4", "-mprefer-vector-width=256")) == 256
    assert host.build_simd_bits(("-O2", "-march=x86-64")) == 128
    assert host.build_simd_bits(("-march=no-such-isa",)) is None  # the build reports it, not the check


def test_march_field_decides_when_the_description_has_one(monkeypatch):
    monkeypatch.setattr(host, "build_simd_bits", lambda cflags: pytest.fail("the march field is enough"))
    assert host.march_mismatch(hw(256, "x86-64-v3"), "x86-64-v3", ["-march=x86-64-v3"]) is None
    assert host.march_mismatch(hw(512, "native"), None, None) is None
    w = host.march_mismatch(hw(512, "native"), "x86-64-v3", ["-march=x86-64-v3"])
    assert "made for --march native" in w and "builds for x86-64-v3" in w
    assert "irkit calibrate --march x86-64-v3" in w
    assert host.description_march(SimpleNamespace(text={"march": "znver3"}, values={}, source="")) == "znver3"


def test_without_a_march_field_the_simd_width_is_compared(monkeypatch):
    monkeypatch.setattr(host, "build_simd_bits", lambda cflags: 256 if cflags and "-march=x86-64-v3" in cflags else 512)
    w = host.march_mismatch(hw(512, name="big", source="big.hw"), "x86-64-v3", ["-O3", "-march=x86-64-v3"])
    assert w.startswith("hardware description 'big' (big.hw) has simd 512 bits")
    assert "built for x86-64-v3 uses 256-bit vectors" in w
    assert host.march_mismatch(hw(256), "x86-64-v3", ["-O3", "-march=x86-64-v3"]) is None
    assert host.march_mismatch(hw(512), None, None) is None
    w = host.march_mismatch(hw(256), None, None)
    assert "built for native uses 512-bit" in w and w.endswith("calibrate with `irkit calibrate`")
    monkeypatch.setattr(host, "build_simd_bits", lambda cflags: None)  # no compiler: nothing to say
    assert host.march_mismatch(hw(256), None, None) is None


def test_fallback_compares_the_recorded_cpu_and_simd(tmp_path):
    desc = tmp_path / "other.hw"
    desc.write_text("# Hardware description 'other'\n# CPU: Intel Xeon Gold; 2 threads (affinity mask).\nhardware other {}\n")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nmodel name : AMD EPYC\nflags : fpu sse2 avx avx2\n")
    w = host.fallback_mismatch(hw(512, source=desc, name="other"), cpuinfo)
    assert "'other'" in w and "measured on 'Intel Xeon Gold', this host is 'AMD EPYC'" in w
    assert "512-bit vectors, this host has at most 256-bit" in w
    cpuinfo.write_text("model name : Intel Xeon Gold\nflags : avx512f avx2\n")
    assert host.fallback_mismatch(hw(512, source=desc), cpuinfo) is None
    assert host.fallback_mismatch(hw(256, source=tmp_path / "gone.hw"), cpuinfo) is None  # no record: no claim


def test_host_mismatch_uses_the_calibration_check_when_there(monkeypatch):
    fake = types.ModuleType("irkit.calibrate.fingerprint")
    fake.mismatch = lambda hardware: None if hardware.name == "same" else f"checked {hardware.name}"
    monkeypatch.setitem(sys.modules, "irkit.calibrate.fingerprint", fake)
    assert host.host_mismatch(hw(name="h1")) == (
        "hardware description 'h1' (nowhere.hw) is not this host's: checked h1"
    )
    assert host.host_mismatch(hw(name="same", march="native")) is None  # it records where it came from: fine
    monkeypatch.setattr(host, "fallback_mismatch", lambda hardware: "old description")
    assert host.host_mismatch(hw(name="same")) == "old description"  # it records nothing: the fallback
    monkeypatch.setitem(sys.modules, "irkit.calibrate.fingerprint", None)  # not in this irkit: the fallback
    monkeypatch.setattr(host, "fallback_mismatch", lambda hardware: "fallback")
    assert host.host_mismatch(hw(march="native")) == "fallback"
    assert host.host_mismatch(hw()) == "fallback"


def args(**kw):
    base = {"cflags": None, "march": None}
    return argparse.Namespace(**(base | kw))


def test_build_flags():
    assert tool.build_flags(args()) == (None, None)
    assert tool.build_flags(args(march="native")) == (None, None)
    cflags, march = tool.build_flags(args(march="x86-64-v3"))
    assert march == "x86-64-v3" and "-march=x86-64-v3" in cflags and "-march=native" not in cflags
    assert tool.build_flags(args(cflags="-O2 -march=x86-64-v3 -fopenmp")) == (
        ["-O2", "-march=x86-64-v3", "-fopenmp"],
        "x86-64-v3",
    )
    assert tool.build_flags(args(cflags="-O2 -march=native"))[1] is None
    with pytest.raises(UsageError, match="--cflags and --march"):
        tool.build_flags(args(cflags="-O2", march="x86-64-v3"))
    with pytest.raises(UsageError, match="not an ISA name"):
        tool.build_flags(args(march="-O3;rm"))


def test_no_checks_without_a_description(monkeypatch):
    monkeypatch.setattr(host, "host_mismatch", lambda hardware: pytest.fail("no --hw: nothing to check"))
    assert tool.host_warnings(None, "x86-64-v3", None) == []
    monkeypatch.setattr(host, "host_mismatch", lambda hardware: "other CPU")
    monkeypatch.setattr(host, "march_mismatch", lambda hardware, march, cflags: None)
    assert tool.host_warnings(hw(), None, None) == ["other CPU"]


TEXT_FIELDS = """hardware t3 {
  cpu "Intel Xeon Gold"
  march "x86-64-v3"
  cores 2
  simd 256 bits
  frequency 2 GHz
  fma_units 2
  cache L1 { size 32 KiB; line 64 B; bandwidth 100 GB/s }
  dram { bandwidth 10 GB/s }
}
"""


@pytest.mark.skipif(not hasattr(design, "HwTextOp"), reason="descriptions without text fields")
def test_text_fields_of_the_description(tmp_path, monkeypatch):
    from irkit.perf import load_hardware

    path = tmp_path / "t3.hw"
    path.write_text(TEXT_FIELDS)
    h = load_hardware(str(path))
    assert host.description_texts(h) == {"cpu": "Intel Xeon Gold", "march": "x86-64-v3"}
    assert host.description_march(h) == "x86-64-v3" and host.recorded_cpu(h) == "Intel Xeon Gold"
    numbers_only = SimpleNamespace(name="t3", source=str(path), values={"simd": 256.0})  # no `text`: read the file
    assert host.description_texts(numbers_only) == {"cpu": "Intel Xeon Gold", "march": "x86-64-v3"}
    monkeypatch.setattr(host, "build_simd_bits", lambda cflags: pytest.fail("the march field is enough"))
    assert host.march_mismatch(h, "x86-64-v3", ["-march=x86-64-v3"]) is None
    assert "was made for --march x86-64-v3, this run builds for native" in host.march_mismatch(h, None, None)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name : AMD EPYC\nflags : avx2\n")
    assert "measured on 'Intel Xeon Gold', this host is 'AMD EPYC'" in host.fallback_mismatch(h, cpuinfo)
