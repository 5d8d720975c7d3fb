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
