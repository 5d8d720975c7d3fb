"""How a nest's terms combine (ECM, docs/perf-model.md "How the terms combine").

Each memory level's transfer time hides under the core's work by the level's `overlap`; what
each level leaves unhidden adds to the core's time -- summed over the levels, as ECM sums the
transfers a line makes on its way in -- and no level runs faster than its own transfer.
"""

from __future__ import annotations

import pytest

from irkit.perf import load_hardware, predict

HW = (
    "hardware ecm {{\n  cores 1\n  simd 256 bits\n  frequency 3 GHz\n  flops_f32 96 GFLOP/s\n"
    "  flops_f64 48 GFLOP/s\n  fp_latency 4 cycles\n"
    "  cache L1 {{ size 32 KiB; line 64 B; bandwidth 200 GB/s; ways 8 }}\n"
    "  cache L2 {{ size 1 MiB; line 64 B; bandwidth 60 GB/s; ways 16; overlap {l2} }}\n"
    "  cache L3 {{ size 64 MiB; line 64 B; bandwidth 20 GB/s; ways 16; overlap {l3} }}\n"
    "  dram {{ bandwidth 10 GB/s }}\n}}\n"
)

# every row of C re-reads all of B (8 MiB: beyond L2, within L3)
SWEEP = (
    "design sweep {\n  sizes { M = 16, N = 1024, K = 2048 }\n  tensor A : f32[M, K] input\n"
    "  tensor B : f32[K, N] input\n  tensor C : f32[M, N] output\n  C[i, j] += A[i, k] * B[k, j]\n"
    "  schedule C {\n    reorder i, k, j\n    vectorize j\n  }\n}\n"
)


@pytest.mark.parametrize(("l2", "l3"), [(0.0, 0.0), (0.5, 0.5), (0.8, 0.3), (1.0, 1.0)])
def test_the_unhidden_parts_of_every_level_add_to_the_core(tmp_path, l2, l3):
    (tmp_path / "ecm.hw").write_text(HW.format(l2=l2, l3=l3))
    (tmp_path / "sweep.design").write_text(SWEEP)
    p = predict(tmp_path / "sweep.design", {}, load_hardware(tmp_path / "ecm.hw"))
    assert p.breakdown["L2"] > 0 and p.breakdown["L3"] > 0  # both levels move data here
    for n in p.nests:  # C's zeroing, then the update
        n = {k: float(v) for k, v in n.items() if k != "nest"}
        core = max(n["compute"], n["chain"], n["L1"])
        expected = max(core + (1 - l2) * n["L2"] + (1 - l3) * n["L3"], n["L2"], n["L3"])
        assert n["seconds"] - n["overhead"] == pytest.approx(expected, rel=1e-9)


# a row softmax in blocks of B rows: four passes over each block (max, exp, sum, divide), of which
# only the exp pass computes; 16 rows (64 KiB) stay in L2, 2048 rows (8 MiB) do not
SOFTMAX = (
    "design softmax {{\n  sizes {{ M = 4096, N = 1024 }}\n  tensor X : f32[M, N] input\n"
    "  tensor P : f32[M, N] output\n  P = softmax(X, axis = 1)\n"
    "  schedule P {{\n    split i by {rows} -> io, ii\n    vectorize j by 8\n  }}\n"
    "  assume {{ relaxed_math }}\n}}\n"
)


# fast caches and DRAM, fully overlapped (a roofline's composition), and a slow exp: the nest's
# arithmetic outweighs all of its memory time
FAST = (
    "hardware fast {\n  cores 1\n  simd 256 bits\n  frequency 3 GHz\n  flops_f32 96 GFLOP/s\n"
    "  flops_f64 48 GFLOP/s\n  exp_f32 2.5 GFLOP/s\n  fp_latency 4 cycles\n"
    "  cache L1 { size 32 KiB; line 64 B; bandwidth 400 GB/s; ways 8 }\n"
    "  cache L2 { size 1 MiB; line 64 B; bandwidth 200 GB/s; ways 16; overlap 1 }\n"
    "  cache L3 { size 64 MiB; line 64 B; bandwidth 100 GB/s; ways 16; overlap 1 }\n"
    "  dram { bandwidth 60 GB/s }\n}\n"
)


def _softmax(tmp_path, rows: int):
    (tmp_path / "fast.hw").write_text(FAST)
    path = tmp_path / f"softmax{rows}.design"
    path.write_text(SOFTMAX.format(rows=rows))
    return predict(path, {}, load_hardware(tmp_path / "fast.hw"))


def test_passes_that_only_move_data_are_not_hidden_by_another_pass_arithmetic(tmp_path):
    """A nest's innermost loops run one after another: each waits for its share of the nest's
    memory time, which the exp pass's arithmetic cannot hide (docs/perf-model.md "Loops of a nest,
    one after another").  Priced as one nest, the 2048-row blocks' larger traffic hid under the
    exp pass and they came out faster than the 16-row blocks (Zen 3: measured 2.5-3.2 ms against 2.2)."""
    small, large = _softmax(tmp_path, 16), _softmax(tmp_path, 2048)
    assert large.breakdown["L3"] > 2 * small.breakdown["L3"]  # the large blocks move more
    for p in (small, large):  # ... and all of either's memory time is less than its arithmetic
        assert max(p.breakdown[k] for k in ("L2", "L3", "DRAM")) < p.breakdown["compute"]
    # one nest's maximum hid the difference: both came out 3.36 ms here
    assert large.seconds > 1.01 * small.seconds
