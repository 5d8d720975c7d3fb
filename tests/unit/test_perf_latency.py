"""DRAM's latency where the out-of-order window, not the prefetchers, finds a kernel's misses.

On the Xeon model 167 guest a DRAM-resident stream with 32 multiply-adds an element runs at
24 ns a line, 2.4 x its time from L3, while its bandwidth alone would take 4 ns: a core busy
between its loads holds few of them in its window, and each window waits about one DRAM latency
(measured by `irkit calibrate`: 165-213 ns there).
"""

from __future__ import annotations

import numpy as np
import pytest

from irkit.perf import load_hardware, predict, runtime

MIB = 2**20


def hw_text(dram_extra: str = "", window: str = "  ooo_window 512\n") -> str:
    return (
        "hardware lathw {\n  cores 1\n  simd 512 bits\n  frequency 3 GHz\n  flops_f32 192 GFLOP/s\n"
        f"  flops_f64 96 GFLOP/s\n  fp_latency 4 cycles\n{window}"
        "  cache L1 { size 48 KiB; line 64 B; bandwidth 300 GB/s; ways 12 }\n"
        "  cache L2 { size 2 MiB; line 64 B; bandwidth 150 GB/s; ways 16 }\n"
        "  cache L3 { size 32 MiB; line 64 B; bandwidth 40 GB/s; ways 16 }\n"
        f"  dram {{ bandwidth 40 GB/s; bandwidth_core 20 GB/s; {dram_extra}}}\n}}\n"
    )


def busy(terms: int) -> str:
    product = " * ".join(["(X[i, j] + 1.5)"] * terms) if terms else "X[i, j]"
    return (
        "design busy {\n  sizes { M = 8192, N = 1024 }\n  tensor X : f32[M, N] input\n  tensor s : f32[M] output\n"
        f"  s[i] += {product}\n  schedule s {{\n    vectorize j by 16\n  }}\n}}\n"
    )


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    d = tmp_path_factory.mktemp("lat")
    (d / "plain.hw").write_text(hw_text())
    (d / "latency.hw").write_text(hw_text("latency 170 ns; "))
    (d / "nowindow.hw").write_text(hw_text("latency 170 ns; ", window=""))
    for terms in (0, 32):
        (d / f"busy{terms}.design").write_text(busy(terms))
    return d


def seconds(docs, doc: str, hw: str, mib: int) -> float:
    return float(predict(docs / doc, {"M": mib * MIB // 4096, "N": 1024}, load_hardware(docs / hw)).seconds)


def test_a_busy_dram_stream_waits_for_dram(docs):
    without = seconds(docs, "busy32.design", "plain.hw", 256)
    with_latency = seconds(docs, "busy32.design", "latency.hw", 256)
    assert with_latency > 1.5 * without
    # each window of instructions waits one latency: about the instructions / 512 x 170 ns
    lines = 256 * MIB / 64
    assert with_latency > lines * 170e-9 * 60 / 512 * 0.8


def test_a_plain_stream_and_a_cache_resident_kernel_are_not_priced_again(docs):
    """A read-only stream has hundreds of lines in its window: its bandwidth sets its pace; and
    a kernel the caches hold waits for no DRAM at all."""
    assert seconds(docs, "busy0.design", "latency.hw", 256) == pytest.approx(seconds(docs, "busy0.design", "plain.hw", 256))
    assert seconds(docs, "busy32.design", "latency.hw", 1) == pytest.approx(seconds(docs, "busy32.design", "plain.hw", 1))


def test_without_a_window_or_a_latency_nothing_changes(docs):
    assert seconds(docs, "busy32.design", "nowindow.hw", 256) == pytest.approx(seconds(docs, "busy32.design", "plain.hw", 256))


def test_no_more_waits_than_lines():
    hw = {"dram_latency": 100e-9, "ooo_window": 100.0}
    t = {"instr_fp_f32": np.array([1e6, 1e9]), "instr_mem_f32": np.array([1e6, 1e6])}
    waits = runtime.latency_bound(t, np.array([1e3, 1e3]), hw)
    # 2e6 instructions: 2e4 windows but only 1e3 lines to wait for; 1e9: still 1e3 lines
    np.testing.assert_allclose(waits, [1e3 * 100e-9, 1e3 * 100e-9])
    np.testing.assert_allclose(runtime.latency_bound(t, np.array([1e9, 1e9]), hw), [2e4 * 100e-9, (1e9 + 1e6) / 100 * 100e-9])


def test_transfers_hide_under_arithmetic_waits_beyond_them_do_not():
    """DRAM's transfers overlap the core's arithmetic entirely; of the window's waits, only the
    part beyond the transfer time adds (at 1 - overlap), and all of it behind a latency-bound core."""
    got = runtime.exposed_dram(np.array([2.0, 1.0, 1.0]), np.array([1.8, 5.0, 5.0]), np.array([False, False, True]), 0.2)
    np.testing.assert_allclose(got, [0.0, 0.8 * 4.0, 0.8 * 5.0])


def test_a_dram_stream_slower_to_compute_than_to_move_runs_at_its_arithmetic(docs):
    """A square root an element (4 ns a line of 16 at 4 G/s) over a stream DRAM moves in 3.2 ns a
    line: the transfers hide under the divider (a fused blur at 4096^2 on the Xeon model 167
    guest: 3.3 ms measured, its arithmetic 3.05 ms, DRAM's transfers 2.8 ms)."""
    hw_file = docs / "sqrt.hw"
    text = hw_text("latency 170 ns; overlap 0.1; ").replace("  fp_latency", "  sqrt_f32 4 GFLOP/s\n  fp_latency")
    hw_file.write_text(text.replace("ways 16 }", "ways 16; overlap 1 }"))  # the caches' transfers hidden too
    doc = docs / "sqrt.design"
    doc.write_text(busy(0).replace("s[i] += X[i, j]", "s[i] += sqrt(X[i, j])"))
    p = predict(doc, {"M": 256 * MIB // 4096, "N": 1024}, load_hardware(hw_file))
    assert p.breakdown["DRAM"] > 0.5 * p.breakdown["compute"]
    assert float(p.seconds) == pytest.approx(max(p.breakdown["compute"], p.breakdown["DRAM"]), rel=0.05)


def test_a_group_of_buffers_waits_only_in_the_windows_of_its_loops():
    """Two groups: one touched by a long loop (1e6 windows) with 1e3 lines, one by a short pack
    loop (10 windows) with 1e5 lines: 1e3 + 10 waits, not the 1e5 + 1e3 lines the nest's 1e6
    windows would allow."""
    hw = {"dram_latency": 100e-9, "ooo_window": 100.0}
    t = {"instr_fp_f32": np.array([1e8])}
    groups = [(np.array([1e3]), np.array([1e6])), (np.array([1e5]), np.array([10.0]))]
    np.testing.assert_allclose(runtime.latency_bound(t, np.array([1e5 + 1e3]), hw, groups), [(1e3 + 10) * 100e-9])
    # never more than without the groups
    many = [(np.array([1e9]), np.array([1e9]))]
    np.testing.assert_allclose(runtime.latency_bound(t, np.array([1e5]), hw, many), runtime.latency_bound(t, np.array([1e5]), hw))


def test_packed_operands_wait_only_in_their_pack_loops():
    """A packed GEMM's operands are read from DRAM by the pack loops' few instructions: their
    groups span few windows, and the reduction loop's many windows wait only for what it reads."""
    from xdsl.dialects import func

    from irkit.frontend import parse_design
    from irkit.perf.analysis import wait_groups
    from irkit.perf.reader import Reader
    from irkit.raising.verify import lowered_loops
    from tests.unit.test_c_prefetch import PACKED

    module = lowered_loops(parse_design(PACKED, "mm.design"))
    kernel = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    top = []
    Reader(kernel, 1 << 40).read_block(kernel.body.block, None, top)
    groups = {names: windows for names, windows in wait_groups(top[0])}
    assert frozenset({"A"}) in groups and frozenset({"B"}) in groups  # each read by its pack loop only
    assert any("A_pack" in names for names in groups)


def test_a_nest_of_one_innermost_loop_has_no_wait_groups(docs):
    from irkit.perf.predict import cost_model

    model, _, _ = cost_model(docs / "busy32.design")
    assert "wait0_lines" not in model.source and "waited_lines" not in model.source
