"""`irkit calibrate`'s parts without running benchmarks: detection, sizes, units, the written description."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from irkit.calibrate import CalibrateError, detect, measure, writer
from irkit.calibrate.detect import CacheLevel, Host
from irkit.dialects import design as d
from irkit.frontend import parse_design
from irkit.units import to_base

KiB, MiB, GiB = 1024, 1024**2, 1024**3

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse sse2 avx avx2 fma
processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse sse2 avx avx2 fma avx512f
"""


def fake_sys(root: Path, caches: list[tuple[int, str, str, str]], siblings: str = "0") -> Path:
    """A /sys/devices/system/cpu tree: caches are (level, type, size, shared_cpu_list)."""
    cache = root / "cpu0" / "cache"
    for i, (level, kind, size, shared) in enumerate(caches):
        entry = cache / f"index{i}"
        entry.mkdir(parents=True)
        (entry / "level").write_text(f"{level}\n")
        (entry / "type").write_text(f"{kind}\n")
        (entry / "size").write_text(f"{size}\n")
        (entry / "coherency_line_size").write_text("64\n")
        (entry / "shared_cpu_list").write_text(f"{shared}\n")
    topology = root / "cpu0" / "topology"
    topology.mkdir(parents=True)
    (topology / "thread_siblings_list").write_text(siblings + "\n")
    return root


def fake_topology(root: Path, cores: dict[int, int]) -> None:
    """cpuN/topology/{core_id,physical_package_id} for CPU -> core."""
    for cpu, core in cores.items():
        topology = root / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True, exist_ok=True)
        (topology / "core_id").write_text(f"{core}\n")
        (topology / "physical_package_id").write_text("0\n")


ZEN3 = [
    (1, "Data", "32K", "0"),
    (1, "Instruction", "32K", "0"),
    (2, "Unified", "512K", "0"),
    (3, "Unified", "32768K", "0-1"),
]


# ------------------------------------------------------------------ detection


def test_detect_reads_a_fake_sys_tree(tmp_path):
    root = fake_sys(tmp_path / "sys", ZEN3, siblings="0,8")
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    (tmp_path / "meminfo").write_text("MemTotal:       24684092 kB\nMemAvailable:   24208516 kB\n")
    host = detect.detect(root, tmp_path / "cpuinfo", tmp_path / "meminfo", environ={"OMP_NUM_THREADS": "3"})
    assert [(c.name, c.size, c.line, c.shared) for c in host.caches] == [
        ("L1", 32 * KiB, 64, 1),
        ("L2", 512 * KiB, 64, 1),
        ("L3", 32 * MiB, 64, 2),
    ]
    assert host.model == "AMD EPYC 7B13"
    assert host.simd == 256  # the first CPU's flags
    assert (host.threads, host.threads_source) == (3, "OMP_NUM_THREADS")
    assert host.threads_per_core == 2
    assert host.memory == 24684092 * 1024 and host.available == 24208516 * 1024


def test_smt_siblings_share_a_level_as_one_core(tmp_path):
    # 2 cores x 2 threads: cpu0/cpu2 are core 0, cpu1/cpu3 core 1.
    caches = [(1, "Data", "48K", "0,2"), (2, "Unified", "2048K", "0,2"), (3, "Unified", "32M", "0-3")]
    root = fake_sys(tmp_path, caches, siblings="0,2")
    fake_topology(root, {0: 0, 1: 1, 2: 0, 3: 1})
    assert [(c.name, c.shared) for c in detect.detect_caches(root / "cpu0" / "cache")] == [
        ("L1", 1),
        ("L2", 1),
        ("L3", 2),
    ]
    assert detect.threads_per_core(root / "cpu0" / "topology") == 2
    assert detect.count_cores([0, 1, 7], root) == 3  # cpu7 has no topology: a core of its own


def test_missing_sys_tree_is_a_clear_error(tmp_path):
    with pytest.raises(CalibrateError, match=r"cannot read the cache hierarchy from .*cpu0/cache"):
        detect.detect(tmp_path / "nowhere", tmp_path / "cpuinfo", tmp_path / "meminfo", environ={})


def test_unparsable_cache_size_is_a_clear_error(tmp_path):
    root = fake_sys(tmp_path, [(1, "Data", "lots", "0")])
    with pytest.raises(CalibrateError, match="cannot parse the cache description"):
        detect.detect_caches(root / "cpu0" / "cache")


def test_only_instruction_caches_is_an_error(tmp_path):
    root = fake_sys(tmp_path, [(1, "Instruction", "32K", "0")])
    with pytest.raises(CalibrateError, match="no data cache levels"):
        detect.detect_caches(root / "cpu0" / "cache")


@pytest.mark.parametrize(
    "text, expected", [("32K", 32 * KiB), ("16384K", 16 * MiB), ("2M", 2 * MiB), ("512", 512), ("1G", GiB)]
)
def test_parse_size(text, expected):
    assert detect.parse_size(text) == expected


def test_parse_cpu_list():
    assert detect.parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert len(detect.parse_cpu_list("0")) == 1


@pytest.mark.parametrize(
    "flags, bits", [({"avx512f", "avx2"}, 512), ({"avx2", "fma"}, 256), ({"avx"}, 256), ({"sse2"}, 128), (set(), 128)]
)
def test_simd_width_from_flags(flags, bits):
    assert detect.simd_bits(flags) == bits


def test_thread_count():
    assert detect.thread_count({"OMP_NUM_THREADS": "4,2"}) == (4, "OMP_NUM_THREADS")
    threads, source = detect.thread_count({})
    assert threads >= 1 and source in ("affinity mask", "CPU count")
    for bad in ("0", "two", "-1"):
        with pytest.raises(CalibrateError, match="OMP_NUM_THREADS"):
            detect.thread_count({"OMP_NUM_THREADS": bad})


def test_cpuinfo_without_model_or_flags(tmp_path):
    (tmp_path / "cpuinfo").write_text("processor : 0\nFeatures : fp asimd\n")
    model, flags = detect.read_cpuinfo(tmp_path / "cpuinfo")
    assert model == "unknown CPU" and "asimd" in flags and detect.simd_bits(flags) == 128


# ------------------------------------------------------------------ sizes


def test_footprints_are_half_a_level_or_half_a_cores_share():
    caches = [CacheLevel(1, 32 * KiB, 64), CacheLevel(2, 512 * KiB, 64), CacheLevel(3, 32 * MiB, 64, shared=2)]
    plan = measure.cache_footprints(caches, threads=2)
    assert [(lv.name, one, every) for lv, one, every in plan] == [
        ("L1", 16 * KiB, None),
        ("L2", 256 * KiB, None),
        ("L3", 8 * MiB, 8 * MiB),
    ]


def test_a_small_l3_share_still_measures_beyond_l2():
    # Skylake-SP-like: 1 MiB private L2, 1.375 MiB of L3 per core.
    caches = [CacheLevel(2, MiB, 64), CacheLevel(3, 28 * 1408 * KiB, 64, shared=28)]
    (_, _, _), (_, one, every) = measure.cache_footprints(caches, threads=28)
    assert one >= 2 * MiB
    assert every is not None and every * 28 <= 28 * 1408 * KiB


def test_dram_footprint():
    caches = [CacheLevel(3, 32 * MiB, 64, shared=2)]
    assert measure.dram_footprint(caches, threads=2, available=None) == 128 * MiB
    assert measure.dram_footprint(caches, threads=4, available=None) == 256 * MiB  # two L3 instances
    assert measure.dram_footprint(caches, threads=2, available=100 * MiB) == 50 * MiB
    assert measure.dram_footprint([CacheLevel(2, MiB, 64)], 1, None) == measure.MIN_DRAM
    assert measure.dram_footprint([], 1, None) == measure.MIN_DRAM  # no level known: the floor


def test_dram_arrays_follow_the_effective_last_level_not_the_reported_one():
    """A guest on a Xeon reporting 480 MiB of L3 keeps L3 speed to ~100 MiB: DRAM's arrays are 4 x
    what the sweep found (seconds of calibration saved), not 4 x 480 MiB."""
    from irkit.calibrate.sweep import Capacity

    caches = [CacheLevel(1, 48 * KiB, 64), CacheLevel(2, 2 * MiB, 64), CacheLevel(3, 480 * MiB, 64, shared=2)]
    host = Host("cpu", 512, 2, "affinity mask", caches)
    m = measure.Calibrator.__new__(measure.Calibrator)
    m.host = host
    m.capacities = [Capacity("L3", 480 * MiB, 100 * MiB, 1.0, 1.0)]
    effective = m.effective_caches()
    assert effective[-1].size == 100 * MiB and effective[1].size == 2 * MiB
    assert measure.dram_footprint(effective, 2, None) == 400 * MiB


def test_triad_elements_fill_the_footprint_in_whole_kib():
    n = measure.triad_elements(16 * KiB)
    assert n % 256 == 0 and 3 * 4 * n <= 16 * KiB < 3 * 4 * (n + 256)
    assert measure.triad_elements(10) == 256
    assert measure.arrays_text(21760) == "3 x 85 KiB"


# ------------------------------------------------------------------ units and numbers


@pytest.mark.parametrize(
    "value, text",
    [(112.6349, "112.6"), (0.98765, "0.9877"), (2.5, "2.5"), (3.0, "3"), (24105.0, "24105"), (1234.6, "1235")],
)
def test_number(value, text):
    assert writer.number(value) == text


@pytest.mark.parametrize(
    "value, family, text",
    [
        (1.126e11, "rate", "112.6 GFLOP/s"),
        (3.1e11, "bandwidth", "310 GB/s"),
        (3.148e9, "frequency", "3.148 GHz"),
        (8.75e-7, "latency", "875 ns"),
        (3.5e-5, "latency", "35 us"),
        (32 * KiB, "bytes", "32 KiB"),
        (32 * MiB, "bytes", "32 MiB"),
        (1536 * KiB, "bytes", "1.5 MiB"),
        (1000, "bytes", "1000 B"),
        (2, "count", "2"),
        (4.02, "cycles", "4.02 cycles"),
    ],
)
def test_quantities_are_written_in_their_units(value, family, text):
    assert writer.describe(value, family) == text
    number, unit = text.split(" ") if " " in text else (text, None)
    assert to_base(float(number), unit) == pytest.approx(value, rel=1e-3)


def test_from_base():
    assert writer.from_base(2.5e9, "GHz") == 2.5
    assert writer.from_base(1.5e-6, "us") == pytest.approx(1.5)
    assert writer.approx_bytes(2730 * KiB) == "2.67 MiB"


def test_fma_units():
    assert writer.fma_units(100.3e9, 3.14e9, 8) == 2
    assert writer.fma_units(1e9, 3e9, 8) == 1  # never 0


# ------------------------------------------------------------------ the written description

VALUES = {
    "frequency": 3.14e9,
    "flops_f32": 100.3e9,
    "flops_f32_all": 198.1e9,
    "flops_f64": 51.0e9,
    "flops_f64_all": 99.9e9,
    "div_f32": 7.26e9,
    "sqrt_f32": 5.06e9,
    "exp_f32": 1.65e9,
    "fp_latency": 4.02,
    "parallel_overhead": 875e-9,
    "call_overhead": 58.4e-6,
    "L1.bandwidth": 142.3e9,
    "L2.bandwidth": 81.2e9,
    "L3.bandwidth": 55.0e9,
    "L3.bandwidth_all": 86.8e9,
    "dram.bandwidth": 22.9e9,
    "dram.bandwidth_core": 18.1e9,
}


def zen3_host(**kw) -> Host:
    caches = [CacheLevel(1, 32 * KiB, 64), CacheLevel(2, 512 * KiB, 64), CacheLevel(3, 32 * MiB, 64, shared=2)]
    return Host("AMD EPYC", 256, 2, "affinity mask", caches, memory=24684092 * 1024, **kw)


def fields_of(module) -> dict[str, tuple[float, str | None]]:
    """Every field of the one hardware block: `key` / `L2.key` / `dram.key` -> (value, unit)."""
    (hw,) = [op for op in module.body.block.ops if isinstance(op, d.HardwareOp)]
    out = {}
    for op in hw.body.block.ops:
        if isinstance(op, d.HwFieldOp):
            out[op.key.data] = (op.value.value.data, op.unit.data if op.unit else None)
        elif isinstance(op, d.HwLevelOp):
            for f in op.body.block.ops:
                out[f"{op.level.data}.{f.key.data}"] = (f.value.value.data, f.unit.data if f.unit else None)
    return out


def test_written_description_parses_checks_and_keeps_the_figures(tmp_path):
    spec = writer.hardware_spec(
        "lab",
        zen3_host(threads_per_core=2),
        VALUES,
        lanes=8,
        comments=["measured today", ""],
        notes={"L1": "3 x 5 KiB"},
    )
    text = writer.render(spec)
    assert text.startswith("# measured today\n#\n\nhardware lab {\n")
    assert re.search(r"^  cache L1 \{ size 32 KiB; line 64 B; bandwidth 142\.3 GB/s \} +# 3 x 5 KiB$", text, re.M)
    assert "  cache L3 { size 32 MiB; line 64 B; bandwidth 55 GB/s; bandwidth_all 86.8 GB/s; shared 2 }" in text
    assert "  dram { size 24105 MiB; bandwidth 22.9 GB/s; bandwidth_core 18.1 GB/s }" in text
    module = parse_design(text, str(tmp_path / "lab.hw"))  # raises on any checker error
    fields = fields_of(module)
    assert fields["cores"] == (2, None) and fields["simd"] == (256, "bits") and fields["threads_per_core"] == (2, None)
    assert fields["fma_units"] == (2, None)
    for key, value in VALUES.items():
        number, unit = fields[key]
        assert to_base(number, unit) == pytest.approx(value, rel=5e-4), key
    assert fields["parallel_overhead"][1] == "ns" and fields["call_overhead"][1] == "us"
    assert fields["fp_latency"] == (4.02, "cycles")


def test_written_description_passes_irkit_check(tmp_path, capsys):
    from irkit.tools.cli import main

    path = tmp_path / "host.hw"
    path.write_text(writer.render(writer.hardware_spec("host", zen3_host(), VALUES, lanes=8)))
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: ok\n"


def test_a_host_with_only_l1_and_l2(tmp_path):
    caches = [CacheLevel(1, 64 * KiB, 64), CacheLevel(2, 4 * MiB, 128, shared=4)]
    host = Host("arm", 128, 4, "affinity mask", caches)
    values = {k: v for k, v in VALUES.items() if not k.startswith(("L1", "L2", "L3"))}
    values |= {"L1.bandwidth": 1e11, "L2.bandwidth": 5e10, "L2.bandwidth_all": 8e10}
    text = writer.render(writer.hardware_spec("arm", host, values, lanes=4))
    fields = fields_of(parse_design(text, "arm.hw"))
    assert fields["L2.shared"] == (4, None) and fields["L2.line"] == (128, "B")
    assert "dram.size" not in fields and "L3.size" not in fields


# ------------------------------------------------------------------ progress and errors


def test_progress_lines():
    out = io.StringIO()
    progress = measure.Progress(out, total=12)
    progress.start("L2 bandwidth, 1 core, 3 x 85 KiB")
    assert progress.open
    progress.finish("310.2 GB/s")
    progress.start("DRAM bandwidth")
    progress.fail()
    assert (
        out.getvalue() == "[ 1/12] L2 bandwidth, 1 core, 3 x 85 KiB ... 310.2 GB/s\n[ 2/12] DRAM bandwidth ... failed\n"
    )


def test_a_compiler_failure_is_one_line():
    from irkit.backends.build import CompileError
    from irkit.diagnostics import Diagnostic
    from irkit.tools.calibrate import _diagnostic_text

    exc = CompileError(
        [
            Diagnostic(
                "error",
                "the C compiler failed (exit 1) on the generated x.c\ncommand: /usr/bin/false -O3 x.c\n(no output)",
            )
        ]
    )
    assert _diagnostic_text(exc) == (
        "irkit calibrate: error: cannot build the microbenchmarks: the C compiler failed (exit 1) "
        "on the generated x.c (compiler /usr/bin/false)\n"
    )


def test_a_problem_that_is_not_a_build_is_not_called_one():
    from irkit.diagnostics import Diagnostic, DiagnosticError
    from irkit.tools.calibrate import _diagnostic_text

    exc = DiagnosticError([Diagnostic("error", "frequency 20.7 GHz is not a clock of this century", "host.hw", 3, 5)])
    text = _diagnostic_text(exc)
    assert "cannot build" not in text
    assert text == "irkit calibrate: host.hw:3:5: error: frequency 20.7 GHz is not a clock of this century\n"


@pytest.mark.parametrize(
    "argv, name",
    [([], "host"), (["-o", "out/lab.hw"], "lab"), (["-o", "x.hw", "--name", "box"], "box"), (["--name", "_a1"], "_a1")],
)
def test_hardware_name(argv, name):
    from irkit.tools.calibrate import _name
    from irkit.tools.cli import build_arg_parser

    args = build_arg_parser().parse_args(["calibrate", *argv])
    assert _name(args) == name


@pytest.mark.parametrize("argv", [["-o", "my-host.hw"], ["--name", "1x"]])
def test_bad_hardware_name_is_a_usage_error(argv):
    from irkit.tools.calibrate import _name
    from irkit.tools.cli import build_arg_parser
    from irkit.tools.opt import UsageError

    with pytest.raises(UsageError, match="hardware name"):
        _name(build_arg_parser().parse_args(["calibrate", *argv]))


class _NoFaults:
    """A microbenchmark library whose page-fault benchmark reports first writes no slower than
    second ones (what a very noisy host, or reused memory, would show)."""

    class lib:  # noqa: N801 - mirrors `Library.lib`, the ctypes CDLL
        @staticmethod
        def irkit_cal_page_fault(size, trials, times, sink):
            for i in range(trials):
                times[i] = -1e-6 if i % 2 else 0.0
            return 0


def test_an_unmeasurable_page_fault_is_left_out_not_written_as_zero():
    from irkit.calibrate.detect import detect
    from irkit.calibrate.measure import FULL, Calibrator, Result

    outcome = Calibrator(detect(), FULL, _NoFaults()).page_fault()  # type: ignore[arg-type]
    assert not isinstance(outcome, Result)
    assert "page_fault left out" in outcome


@pytest.mark.parametrize("flops", [1, 7, 8, 9, 44, 64])
def test_the_overlap_stream_is_throughput_bound(flops):
    """The overlap fits' polynomial: `flops` FMAs an element in independent chains of at most
    CHAIN_DEPTH (one 64-deep chain is latency-bound, and its stall was read as the level's overlap)."""
    from irkit.calibrate import fit

    doc = fit._stream_doc("cal_overlap_test", flops)
    expr = doc.split("y[r, i] = ", 1)[1].split("\n", 1)[0]
    assert expr.count("*") == flops  # one multiply an FMA
    chains = expr.count("x[r, i]")
    assert chains == max(1, -(-flops // fit.CHAIN_DEPTH))
    assert expr.count("+") == flops + chains - 1  # an add an FMA, and the adds that sum the chains
    parse_design(doc)  # a valid document


def test_calibration_arrays_are_filled_without_zeros_or_denormals():
    import numpy as np

    from irkit.calibrate import fit

    for n in (1, 4095, 4096, 10_000):
        buf = np.zeros(n, dtype=np.float32)
        fit._fill(buf, np.random.default_rng(0))
        assert buf.min() >= 0.5 and buf.max() < 1.5
    big = np.zeros((3, 5000), dtype=np.float64)
    fit._fill(big, np.random.default_rng(0))
    assert big.min() >= 0.5 and len(np.unique(big)) > 1000
