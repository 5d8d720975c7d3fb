"""The cost model's memory-side terms added for hosts it had not seen (issue 15, item 4).

- misaligned vector loads: a stencil's `x + 1` or rows of `W + 2` elements cross lines;
- locals: a register tile costs no loads, a tail's stack array is L1 traffic and a carried
  accumulator;
- the divider works beside a C library call;
- huge pages: numpy's large arrays let an L2 see a power-of-two stride;
- misses beyond L2: a column walk's lines served by L3 or DRAM cost those levels' figures;
- the description fields these need, printed, parsed and checked.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from irkit.calibrate import fit
from irkit.calibrate.detect import huge_page_bytes
from irkit.perf import load_hardware, predict, runtime
from irkit.perf.predict import cost_model

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# A 256-bit core with every figure these terms use (built from a table: each test edits a line)
FIGURES = {
    "cores": "2", "simd": "256 bits", "frequency": "3 GHz",
    "flops_f32": "96 GFLOP/s", "flops_f64": "48 GFLOP/s", "div_f32": "16 GFLOP/s", "sqrt_f32": "16 GFLOP/s",
    "sqrt_f32_scalar": "1 GFLOP/s", "exp_f32": "8 GFLOP/s", "libm_exp_f32": "0.5 GFLOP/s",
    "fp_latency": "4 cycles", "store_forward": "10 cycles", "strided_miss": "1 ns", "conflict_miss": "3 ns",
}  # fmt: skip
LEVELS = (
    "  cache L1 { size 32 KiB; line 64 B; bandwidth 200 GB/s; ways 8 }\n"
    "  cache L2 { size 1 MiB; line 64 B; bandwidth 100 GB/s; ways 8 }\n"
    "  cache L3 { size 32 MiB; line 64 B; bandwidth 50 GB/s; shared 2; ways 16 }\n"
    "  dram { bandwidth 40 GB/s; bandwidth_core 25 GB/s }\n"
)
HW_TEXT = "hardware memhw {\n" + "".join(f"  {k} {v}\n" for k, v in FIGURES.items()) + LEVELS + "}\n"


@pytest.fixture(scope="module")
def hw(tmp_path_factory):
    path = tmp_path_factory.mktemp("hw") / "memhw.hw"
    path.write_text(HW_TEXT)
    return load_hardware(path)


def with_values(hw, **values):
    return dataclasses.replace(hw, values={**hw.values, **values})


def core_terms(text: str, tmp_path: Path, sizes: dict[str, int]) -> dict[str, float]:
    """The summed core terms (instruction counts) of a document's nests at `sizes`."""
    doc = tmp_path / "doc.design"
    doc.write_text(text)
    model, _, _ = cost_model(doc)
    env = {k: np.float64(v) for k, v in sizes.items()}
    env.update(line=64.0, lanes32=8.0, lanes64=4.0, cores=2.0, window=0.0, huge_page=4096.0)
    out: dict[str, float] = {}
    for _, core, *_ in model._nests:
        for k, v in core(env).items():
            out[k] = out.get(k, 0.0) + float(np.asarray(v))
    return out


def _stencil(offset: str, columns: str) -> str:
    return (
        "design st {\n  sizes { R = 4, N = 256 }\n"
        f"  tensor x : f32[R, {columns}] input\n  tensor y : f32[R, N] output\n"
        f"  y[r, i] = x[r, i{offset}] * 2\n"
        "  layout { x : row_major align 64; y : row_major align 64 }\n"
        "  schedule y { vectorize i by 8 }\n}\n"
    )


def test_offsets_off_the_vector_make_loads_misaligned(tmp_path):
    aligned = core_terms(_stencil("", "N"), tmp_path, {"R": 4, "N": 256})
    shifted = core_terms(_stencil(" + 1", "N + 8"), tmp_path, {"R": 4, "N": 256})
    odd_rows = core_terms(_stencil("", "N + 2"), tmp_path, {"R": 4, "N": 256})
    assert sum(v for k, v in aligned.items() if k.startswith("instr_mis")) == 0
    assert shifted["instr_mis_v8"] == pytest.approx(4 * 256 / 8)  # every load of x
    assert odd_rows["instr_mis_v8"] == pytest.approx(4 * 256 / 8)  # rows of N + 2 floats
    # rows of N + 8: aligned again at N = 256 (the gcd is evaluated at the sizes)
    eight = core_terms(_stencil("", "N + 8"), tmp_path, {"R": 4, "N": 256})
    assert eight["instr_mis_v8"] == 0


def test_an_accumulator_is_not_a_misaligned_load(tmp_path):
    terms = core_terms((EXAMPLES / "rowsum.design").read_text(), tmp_path, {"M": 64, "N": 256})
    assert terms.get("instr_mis_v16", 0.0) == 0


def test_misaligned_loads_cost_split_load_in_l1(hw, tmp_path):
    doc = tmp_path / "s.design"
    doc.write_text(_stencil(" + 1", "N + 8"))
    sizes = {"R": 4, "N": 256}
    none = predict(doc, sizes, with_values(hw, split_load=0.0)).breakdown["L1"]
    two = predict(doc, sizes, with_values(hw, split_load=2.0)).breakdown["L1"]
    # 128 misaligned loads of a full (256-bit) vector, each 2 more loads' time
    one_load = 32 / hw.values["levels"][0]["bandwidth"]
    assert two - none == pytest.approx(128 * 2 * one_load, rel=1e-6)


def test_a_narrower_misaligned_load_costs_its_own_figure_or_its_crossings(hw):
    wide = {**hw.values, "simd": 512.0, "split_load": 1.0}
    assert runtime.split_cost(512, wide) == 1.0
    assert runtime.split_cost(256, wide) == pytest.approx(0.5)  # crosses a line half the time
    assert runtime.split_cost(256, {**wide, "split_load_256": 0.7}) == 0.7


def test_a_tail_stack_local_is_l1_traffic_but_a_register_tile_is_not(tmp_path):
    conv = (EXAMPLES / "conv2d.design").read_text()
    tiled = core_terms(conv, tmp_path, {"N": 1, "C": 8, "F": 4, "H": 8, "W": 56})
    tail = core_terms(conv, tmp_path, {"N": 1, "C": 8, "F": 4, "H": 8, "W": 28})
    assert tiled.get("carry", 0.0) == 0  # 56 columns: 7 vector registers of 8, no reloads
    assert tail["carry"] > 0  # 28 columns: the tail's O_acc arrays, reloaded every (c, r, s)


def test_the_divider_runs_beside_a_library_call(hw, tmp_path):
    doc = tmp_path / "e.design"
    doc.write_text(
        "design e {\n  sizes { N = 4096 }\n  tensor x : f32[N] input\n  tensor y : f32[N] output\n"
        "  y[i] = exp(x[i]) + sqrt(x[i])\n}\n"
    )
    p = predict(doc, {"N": 4096}, hw)
    calls = 4096 / hw.values["libm_exp_f32"]
    roots = 4096 / hw.values["sqrt_f32_w"][32]
    assert calls > roots
    assert calls <= p.breakdown["compute"] < calls + roots


def test_huge_pages_let_l2_see_a_power_of_two_stride(hw, tmp_path):
    text = (EXAMPLES / "transpose.design").read_text()
    doc = tmp_path / "t.design"
    doc.write_text(text.split("  # Loops of transpose")[0] + "  hardware generic\n}\n")
    sizes = {"M": 4096, "N": 4096}
    deep = with_values(hw, dram_strided_miss=8e-9)
    small = predict(doc, sizes, deep)
    huge = predict(doc, sizes, with_values(deep, huge_page=2.0 * 1024 * 1024))
    assert huge.seconds > 1.5 * small.seconds  # A's column crowds L2's and L3's sets: DRAM waits


def test_a_miss_price_falls_back_to_the_level_above(hw):
    values = {**hw.values, "dram_strided_miss": 9e-9}
    assert runtime.miss_price("strided_miss", 0, values) == 1e-9  # L1's misses, served by L2
    assert runtime.miss_price("strided_miss", 1, values) == 1e-9  # L3 has no figure: L2's
    assert runtime.miss_price("strided_miss", 2, values) == 9e-9  # the last level's: DRAM's
    mm = {"strided_lines": 100.0, "serial_lines": 0.0}
    assert runtime.deeper_misses(mm, 2, values) == pytest.approx(100 * 8e-9)
    assert runtime.deeper_misses(mm, 1, values) == 0.0


def test_new_fields_parse_print_and_are_checked(tmp_path):
    from irkit.calibrate import writer

    text = HW_TEXT.replace("  strided_miss 1 ns\n", "  strided_miss 1 ns\n  split_load 1.3\n  huge_page 2 MiB\n")
    text = text.replace("ways 16 }", "ways 16; strided_miss 2 ns; conflict_miss 40 ns }")
    text = text.replace("bandwidth_core 25 GB/s }", "bandwidth_core 25 GB/s; strided_miss 7 ns }")
    path = tmp_path / "new.hw"
    path.write_text(text)
    v = load_hardware(path).values
    assert v["split_load"] == 1.3 and v["huge_page"] == 2 * 1024 * 1024
    l3 = v["levels"][2]
    assert l3["strided_miss"] == pytest.approx(2e-9) and l3["conflict_miss"] == pytest.approx(40e-9)
    assert v["dram_strided_miss"] == pytest.approx(7e-9)
    assert writer.describe(1.25, writer.FIELD_FAMILY["split_load"]) == "1.25"


@pytest.mark.parametrize(
    "edit, refusal",
    [
        (("  strided_miss 1 ns\n", "  strided_miss 1 ns\n  split_load 40\n"), "split_load"),
        (("  strided_miss 1 ns\n", "  strided_miss 1 ns\n  huge_page 3000 B\n"), "huge_page"),
        (("bandwidth_core 25 GB/s }", "bandwidth_core 25 GB/s; strided_miss 5 us }"), "strided_miss"),
        (("  strided_miss 1 ns\n", "  strided_miss 1 ns\n  conflict_share_4 1.5\n"), "conflict_share_4"),
    ],
)
def test_the_checker_refuses_implausible_new_fields(tmp_path, edit, refusal):
    from irkit.diagnostics import DiagnosticError

    path = tmp_path / "bad.hw"
    path.write_text(HW_TEXT.replace(*edit))
    with pytest.raises(DiagnosticError) as err:
        load_hardware(path)
    assert refusal in str(err.value)


def test_huge_pages_are_read_from_the_kernel_settings(tmp_path):
    thp, meminfo = tmp_path / "enabled", tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nHugepagesize:    2048 kB\n")
    thp.write_text("always [madvise] never\n")
    assert huge_page_bytes(thp, meminfo) == 2 * 1024 * 1024
    thp.write_text("always madvise [never]\n")
    assert huge_page_bytes(thp, meminfo) is None
    assert huge_page_bytes(tmp_path / "missing", meminfo) is None


def test_the_fit_documents_price_what_they_measure(hw, tmp_path):
    """split_load's document is all misaligned loads; the band walk's lines are strided at
    every level it misses; the deep-miss cases size themselves to the levels."""
    split = fit.split_case()
    terms = core_terms(split.document, tmp_path, split.sizes)
    assert sum(v for k, v in terms.items() if k.startswith("instr_mis")) > 0
    cases = fit.deep_miss_cases(hw.values["levels"])
    assert [c.figure for c in cases] == ["L3.strided_miss", "dram.strided_miss"]
    l3, dram = cases
    assert l3.sizes["P"] * l3.sizes["Q"] * 64 <= 0.5 * 32 * 1024 * 1024  # stays in L3 ...
    assert l3.sizes["P"] * l3.sizes["Q"] * 64 >= 2 * 1024 * 1024  # ... not in L2
    assert dram.sizes["P"] * dram.sizes["Q"] * 64 >= 4 * 32 * 1024 * 1024 * 0.99
    band = tmp_path / "band.design"
    band.write_text(dram.document)
    p = predict(band, dram.sizes, with_values(hw, dram_strided_miss=1e-8))
    q = predict(band, dram.sizes, with_values(hw, dram_strided_miss=2e-8))
    assert q.seconds - p.seconds == pytest.approx(dram.sizes["P"] * dram.sizes["Q"] * 1e-8, rel=0.05)


def test_the_loops_of_a_nest_run_at_their_own_bottlenecks(hw, tmp_path):
    """softmax's passes over a row: the max pass is a chain, the exp pass compute.  Priced apart
    they add up (the sum of the maxima), which is more than the maximum of the sums."""
    text = (EXAMPLES / "softmax.design").read_text()
    terms = core_terms(text, tmp_path, {"M": 64, "N": 1024})
    parts = {key.split("_", 1)[0] for key in terms if key.startswith(runtime.PART_PREFIX)}
    assert len(parts) >= 3  # max, exp + sum, divide
    doc = tmp_path / "softmax.design"
    doc.write_text(text)
    p = predict(doc, {"M": 64, "N": 1024}, hw)
    b = p.breakdown
    assert p.seconds > max(b["compute"], b["chain"], b["L1"]) + b["overhead"]
    # a nest of one innermost loop has no parts (rowsum run serially: with `parallel io` its
    # zero fill runs inside the parallel loop, a second innermost loop)
    serial = (EXAMPLES / "rowsum.design").read_text().replace("parallel io", "")
    assert serial != (EXAMPLES / "rowsum.design").read_text()
    triad = core_terms(serial, tmp_path, {"M": 64, "N": 256})
    assert not any(key.startswith(runtime.PART_PREFIX) for key in triad)


def test_a_deeper_level_no_slower_than_the_one_above_is_left_out(hw, monkeypatch):
    """The fit of L3's strided miss is dropped when it is within NO_SLOWER of L2's: the model then
    prices L2's misses at L2's figure and need not count them (10,000 predictions stay fast)."""
    values = {**hw.values, "levels": [dict(lv) for lv in hw.values["levels"]]}
    fake = dataclasses.replace(hw, values=values)
    got = iter([1.2e-9, 8e-9])  # L3: 1.2 x L2's 1 ns; DRAM: 8 ns

    def fitted(case, hardware, cflags=None):
        value = next(got)
        fit._setter(hardware.values, case.figure)(value)
        return fit.Fitted(case.figure, value, 1e-6, case.why)

    monkeypatch.setattr(fit, "fit_case", fitted)
    out = fit._deep_step(fit.deep_miss_cases(values["levels"]), fake, None)
    assert [f.value for f in out] == [None, 8e-9]
    assert "strided_miss" not in values["levels"][2] and values["dram_strided_miss"] == 8e-9
    assert runtime.deeper_kinds(1, values) == set() and runtime.deeper_kinds(2, values) == {"strided_miss"}


def _column_vector_doc() -> str:
    return fit.gather_case().document


def test_a_gathered_lane_costs_gather_lane(hw, tmp_path):
    doc = tmp_path / "g.design"
    doc.write_text(_column_vector_doc())
    sizes = {"N": 4096}  # 256 KiB: not L1-resident, so the column's misses count too
    base = predict(doc, sizes, hw).breakdown["compute"]  # a lane: one scalar FP instruction
    free = predict(doc, sizes, with_values(hw, gather_lane=1e-15)).breakdown["compute"]
    slow = predict(doc, sizes, with_values(hw, gather_lane=1e-9)).breakdown["compute"]
    slower = predict(doc, sizes, with_values(hw, gather_lane=2e-9)).breakdown["compute"]
    # one lane an element, one core (above the front end's floor, which a free lane sits on)
    assert slower - slow == pytest.approx(4096 * 1e-9, rel=0.01)
    assert free <= base < slow


def test_a_load_the_vector_loop_does_not_move_is_hoisted(tmp_path):
    """batch_matmul's b, i, k, j order: A[b, i, k] is the same for every j -- one scalar load an
    entry of the j loop, not one a vector."""
    text = (EXAMPLES / "batch_matmul.design").read_text()
    text = text.split("  schedule")[0] + "  schedule C {\n    reorder b, i, k, j\n    vectorize j by 8\n  }\n}\n"
    terms = core_terms(text, tmp_path, {"NB": 1, "M": 8, "N": 64, "K": 8})
    assert terms["instr_mem_s"] == pytest.approx(8 * 8)  # one A load per (i, k)
    assert terms["instr_mem_v8"] == pytest.approx(8 * 8 * 8 * 3)  # C, B and the store of C, 8 vectors each


def test_an_l1_resident_kernel_has_no_strided_misses(hw, tmp_path):
    doc = tmp_path / "g.design"
    doc.write_text(_column_vector_doc())
    small = predict(doc, {"N": 64}, hw).breakdown["chain"]
    large = predict(doc, {"N": 4096}, hw).breakdown["chain"]
    assert small == 0 and large > 0


def test_a_tile_short_of_registers_loads_once_per_fma(tmp_path):
    """conv2d's 2 x 7-vector tile: 14 accumulators and 7 input vectors do not fit 16 registers, so
    gcc folds each input load into both FMAs that use it (twice the loads); gemm's 6 x 2 tile
    (12 accumulators, 2 B vectors and a broadcast) keeps its vectors."""
    conv = core_terms((EXAMPLES / "conv2d.design").read_text(), tmp_path, {"N": 1, "C": 4, "F": 4, "H": 4, "W": 56})
    gemm = core_terms((EXAMPLES / "gemm.design").read_text(), tmp_path, {"M": 96, "N": 512, "K": 256})
    conv_tile = next(k for k in conv if k.startswith("part") and k.endswith("_instr_fp_v8") and conv[k] > 0)
    part = conv_tile.split("_", 1)[0]
    assert conv[f"{part}_instr_mis_v8"] == pytest.approx(conv[conv_tile])  # one (misaligned) load an FMA
    gemm_tile = max((k for k in gemm if k.startswith("part") and k.endswith("_instr_fp_v8")), key=gemm.get)
    part = gemm_tile.split("_", 1)[0]
    assert gemm[f"{part}_instr_mem_v8"] < gemm[gemm_tile] / 4  # B's 2 vectors feed 12 FMAs


def _tiled_transpose(rows: int) -> str:
    """B = A^T over 1024 x 1024 in tiles whose column walks cycle `rows` rows of A, 4 KiB apart:
    every row of a column in one L1 set."""
    return (
        "design tt {\n  sizes { M = 1024, N = 1024 }\n  tensor A : f32[M, N] input\n  tensor B : f32[N, M] output\n"
        "  B[i, j] = A[j, i]\n"
        f"  schedule B {{ tile i, j by 32, {rows} -> io, jo, ii, ji }}\n}}\n"
    )


def test_a_column_walk_misses_by_the_rows_it_cycles_through_the_ways(hw, tmp_path):
    """A tile column of R rows in one set of W ways keeps about W / R of its lines: the conflict
    misses (the chain they set) go as 1 - W / R, the tile's rows and not the matrix's."""
    chains = {}
    for rows in (16, 32, 64):
        doc = tmp_path / f"t{rows}.design"
        doc.write_text(_tiled_transpose(rows))
        chains[rows] = predict(doc, {"M": 1024, "N": 1024}, with_values(hw, strided_miss=0.0)).breakdown["chain"]
    assert chains[32] / chains[64] == pytest.approx((1 - 8 / 32) / (1 - 8 / 64), rel=0.05)
    assert chains[16] / chains[64] == pytest.approx((1 - 8 / 16) / (1 - 8 / 64), rel=0.05)


def test_the_conflict_figure_is_a_miss_not_an_access():
    """The calibration's column walk (64 rows in 8 ways) misses 7 accesses in 8: the figure is
    the time an access over that share, so the model, counting the walk's misses the same way,
    prices it at what was measured (an L1 of unknown ways: the time an access)."""
    from types import SimpleNamespace

    from irkit.calibrate import measure
    from irkit.calibrate.detect import CacheLevel
    from irkit.calibrate.kernels import CONFLICT_COLUMNS, CONFLICT_ROWS

    def counted(ways):
        seen = []
        cal = SimpleNamespace(
            host=SimpleNamespace(caches=[CacheLevel(1, 32768, 64, 1, ways)]),
            lib=SimpleNamespace(lib=SimpleNamespace(irkit_cal_conflict=None)),
            _per_access=lambda key, label, detail, fn, accesses: seen.append(accesses),
        )
        measure.Calibrator.conflict_miss(cal)
        return seen[0]

    walk = CONFLICT_ROWS * CONFLICT_COLUMNS
    assert counted(8) == pytest.approx(walk * (1 - 8 / CONFLICT_ROWS))
    assert counted(None) == walk


def test_store_forwarding_is_fitted_on_an_accumulator_kept_in_memory(hw, tmp_path):
    """The forwarding document carries one full-width vector in memory across its outer loop:
    every entry of the inner loop is a carried step, and a cycle more of `store_forward` costs
    every entry a cycle."""
    case = fit.forward_case(hw.values["levels"], hw.values["simd"])
    assert case.sizes["X"] == 8  # one 256-bit vector of f32
    assert case.sizes["K"] * case.sizes["X"] * 4 <= 0.5 * 32 * 1024  # in half the L1
    terms = core_terms(case.document, tmp_path, case.sizes)
    assert terms["carry_steps"] == case.sizes["K"]
    doc = tmp_path / "forward.design"
    doc.write_text(case.document)
    base = with_values(hw, call_overhead=0.0)
    p = predict(doc, case.sizes, with_values(base, store_forward=4.0)).seconds
    q = predict(doc, case.sizes, with_values(base, store_forward=5.0)).seconds
    assert q - p == pytest.approx(case.sizes["K"] / 3e9, rel=0.05)  # a cycle at 3 GHz an entry


def test_a_walks_share_of_misses_interpolates_the_measured_points(hw, tmp_path):
    """With `conflict_share_<n>` measured, a walk of 2, 4, 8 x the ways misses those shares of its
    accesses, all from 16 x, linearly in between."""
    measured = with_values(hw, strided_miss=0.0, conflict_share_2=0.25, conflict_share_4=0.6, conflict_share_8=1.0)
    chains = {}
    for rows in (16, 24, 32, 64, 128):
        doc = tmp_path / f"t{rows}.design"
        doc.write_text(_tiled_transpose(rows))
        chains[rows] = predict(doc, {"M": 1024, "N": 1024}, measured).breakdown["chain"]
    full = chains[128]
    assert chains[16] / full == pytest.approx(0.25, rel=0.02)
    assert chains[24] / full == pytest.approx((0.25 + 0.6) / 2, rel=0.02)
    assert chains[32] / full == pytest.approx(0.6, rel=0.02)
    assert chains[64] / full == pytest.approx(1.0, rel=0.02)


def test_the_conflict_walks_are_sized_to_the_ways():
    """The price at 16 x the ways, then the shares at 8, 4 and 2 x (a 12-way L1: 192 rows ...)."""
    cases = fit.conflict_cases(12)
    assert [c.figure for c in cases] == ["conflict_miss", "conflict_share_8", "conflict_share_4", "conflict_share_2"]
    assert [c.sizes["P"] for c in cases] == [192, 96, 48, 24]
    assert all(c.bounded for c in cases[1:]) and not cases[0].bounded
    assert "Q + 960" in cases[0].document  # rows of 1024 floats at Q = 64: 4 KiB apart


def _entry_doc(split: int) -> str:
    return fit.entry_case(256).document.replace("split j by 8", f"split j by {split}")


def test_a_vector_loop_entered_for_one_vector_pays_its_set_up(tmp_path):
    """gcc's `omp simd` loop of a runtime trip count sets up every entry; an entry of one vector
    (split by the lanes) cannot hide it, one of many vectors can (no term)."""
    sizes = {"M": 12, "N": 256}
    one = core_terms(_entry_doc(8), tmp_path, sizes)
    assert one["vector_setups"] == 12 * (256 // 8) * 3  # entries x (1 + a load + a store)
    long = core_terms(_entry_doc(64), tmp_path, sizes)
    assert "vector_setups" not in long


def test_a_set_up_slot_costs_vector_entry(hw, tmp_path):
    doc = tmp_path / "e.design"
    doc.write_text(fit.entry_case(256).document)
    sizes = {"M": 12, "N": 256}
    free = predict(doc, sizes, with_values(hw, vector_entry=1e-15)).seconds
    slow = predict(doc, sizes, with_values(hw, vector_entry=1e-9)).seconds
    slower = predict(doc, sizes, with_values(hw, vector_entry=2e-9)).seconds
    assert slower - slow == pytest.approx(12 * 32 * 3 * 1e-9, rel=0.01)  # on top of the loads and stores
    assert free < slow
    assert predict(doc, sizes, hw).seconds == pytest.approx(free, rel=1e-6)  # no figure: no set-up priced


@pytest.mark.parametrize(("lanes", "steps"), [(16, 512 // 16), (8, 512 // 8)])
def test_an_omp_simd_reduction_is_one_chain_a_hardware_vector(tmp_path, lanes, steps):
    """`vectorize j by 16` of a row sum: gcc keeps one accumulator register, so on 8-lane vectors
    (AVX2) a 16-wide chunk is two dependent adds, on 16-lane ones (AVX-512) one."""
    doc = tmp_path / "rs.design"
    doc.write_text(
        "design rs {\n  sizes { M = 4, N = 512 }\n  tensor X : f32[M, N] input\n  tensor s : f32[M] output\n"
        "  s[i] += X[i, j]\n  schedule s { vectorize j by 16 }\n}\n"
    )
    model, _, _ = cost_model(doc)
    env = dict(M=np.float64(4), N=np.float64(512), line=64.0, lanes32=float(lanes), lanes64=lanes / 2.0)
    env.update(cores=2.0, window=0.0, huge_page=4096.0)
    chain = sum(float(np.asarray(core(env).get("chain_add", 0.0))) for _, core, *_ in model._nests)
    assert chain == 4 * steps


def test_a_vector_maximum_is_its_own_latency_class(tmp_path):
    """irkit's NaN-keeping maximum in an `omp simd reduction`: gcc compares, compares, ors and
    blends on the one accumulator register each vector (one vector step measured 10.9 cycles built
    for AVX2 on the Xeon model 167 guest, 6.6 for AVX-512, against 1.5 for the scalar `max=`
    chain's step, whose figure priced it before: softmax's own and serial schedules came out
    26-38% fast on the AVX2 build).  It takes `vmax_latency`, or `max_latency` without one."""
    doc = tmp_path / "rm.design"
    doc.write_text(
        "design rm {\n  sizes { M = 4, N = 512 }\n  tensor X : f32[M, N] input\n  tensor m : f32[M] output\n"
        "  m[i] max= X[i, j]\n  schedule m { vectorize j by 16 }\n}\n"
    )
    model, _, _ = cost_model(doc)
    env = dict(M=np.float64(4), N=np.float64(512), line=64.0, lanes32=8.0, lanes64=4.0)
    env.update(cores=2.0, window=0.0, huge_page=4096.0)
    terms = [core(env) for _, core, *_ in model._nests]
    assert sum(float(np.asarray(t.get("chain_vmax", 0.0))) for t in terms) == 4 * 512 // 8
    assert not any(t.get("chain_max") for t in terms)
    assert runtime.latency_cycles("vmax", {"max_latency": 1.5, "fp_latency": 2.0}) == 1.5
    assert runtime.latency_cycles("vmax", {"max_latency": 1.5, "vmax_latency": 10.9}) == 10.9


def test_the_gather_figure_is_fitted_on_a_column_of_run_time_stride():
    """Transposes and column walks read rows whose length is a size; gcc builds that column read as
    a load and an insert a lane. With a constant row length gcc built the fit's loop otherwise
    (scalar for AVX2), and the figure did not price the documents' column reads."""
    case = fit.gather_case()
    assert "tensor x : f32[N, K]" in case.document and case.sizes["K"] == 16


def _rows_doc(schedule: str) -> str:
    return (
        "design rows {\n  sizes { M = 8192, N = 2048 }\n  tensor X : f32[M, N] input\n  tensor s : f32[M] output\n"
        f"  s[i] += X[i, j]\n  schedule s {{\n    {schedule}\n  }}\n}}\n"
    )


@pytest.mark.parametrize(
    ("schedule", "untracked"),
    [
        ("split j by 1024 -> jo, ji\n    reorder jo, i, ji\n    vectorize ji", True),  # a jump every row
        ("vectorize j", False),  # one sequential pass
        ("tile i, j by 32, 64 -> io, jo, ii, ji\n    vectorize ji", True),  # 32 rows side by side
        ("tile i, j by 8, 64 -> io, jo, ii, ji\n    vectorize ji", False),  # 8: the prefetchers follow them
        ("tile i, j by 32, 2048 -> io, jo, ii, ji\n    vectorize ji", False),  # whole rows: one after another
    ],
)
def test_dram_lines_no_prefetch_stream_brings_cost_unstreamed(hw, tmp_path, schedule, untracked):
    """64 MiB read from DRAM: rows the walk jumps between, or more rows side by side than
    `streams`, wait `unstreamed` a line on one core; a sequential walk runs at the bandwidth."""
    doc = tmp_path / "rows.design"
    doc.write_text(_rows_doc(schedule))
    sizes = {"M": 8192, "N": 2048}
    lines = 8192 * 2048 * 4 / 64
    slow = with_values(hw, dram_unstreamed=10e-9, dram_streams=16.0)
    dram = predict(doc, sizes, slow).breakdown["DRAM"]
    plain = predict(doc, sizes, hw).breakdown["DRAM"]
    if untracked:
        assert dram == pytest.approx(lines * 10e-9, rel=0.05) and plain < dram / 2
    else:
        assert dram == pytest.approx(plain, rel=1e-6)


def test_stream_count_is_the_last_sweep_point_near_the_fastest(monkeypatch):
    times = iter([3.4e-3, 3.1e-3, 5.4e-3, 6.2e-3])  # 8, 16, 32, 64 rows (the Zen 4 guest)
    monkeypatch.setattr(fit, "compile_timed", lambda *a, **k: None)
    monkeypatch.setattr(fit, "seconds_per_call", lambda *a, **k: next(times))
    streams, _, how = fit.stream_count({"M": 8192, "N": 2048}, None)
    assert streams == 16 and "32 rows 5.4 ms" in how
    flat = iter([3e-3] * 4)
    monkeypatch.setattr(fit, "seconds_per_call", lambda *a, **k: next(flat))
    assert fit.stream_count({"M": 8192, "N": 2048}, None)[0] is None  # no slow-down seen: not written


def _reduction_doc(statement: str, b_shape: str = "[L]") -> str:
    return (
        f"design r {{\n  sizes {{ E = 4, L = 512 }}\n  tensor a : f32[E, L] input\n  tensor b : f32{b_shape} input\n"
        f"  tensor o : f32[E] output\n  {statement}\n}}\n"
    )


_REDUCTION_SIZES = {"E": 4, "L": 512}


def test_the_products_are_vectors_and_the_accumulator_stays_in_a_register(tmp_path):
    """gcc's in-order ("fold-left") vectorisation of a scalar accumulation, as the model counts it.

    `o[e] += a[e, k] * b[k]` with no schedule: gcc 12 keeps `o[e]` in a register, loads `a` and `b`
    a full vector at a time and multiplies them as vectors, then adds the products to the
    accumulator one lane at a time, in order (the assembly for AVX-512 and for AVX2: one `vmulps`,
    then 16 or 8 `vaddss`, each lane taken out by `valignd` / `vextract`).  Priced as scalar loads
    and the accumulator's load and store every element, the window's calibration loop (512 entries
    of 128) had an L1 term of 28 us where 21.4 us was measured, on the Xeon model 167 guest built
    for AVX2: the window's fit failed there, and every chain was then priced without a window."""
    c = core_terms(_reduction_doc("o[e] += a[e, k] * b[k]"), tmp_path, _REDUCTION_SIZES)
    # a and b: one full-width (8-lane) vector load each per 8 elements (and the zeroing nest's
    # one vector store of o)
    assert c["instr_mem"] == 2 * 4 * 512 / 8 + 1
    # the accumulator: loaded and stored once an entry (4 entries), not once an element
    assert c["instr_store_s"] == 4
    assert c["instr_mem_s"] <= 2 * 4
    # one dependent add an element, and each lane's extract and add as scalar instructions
    assert c["chain_add"] + c.get("chain_fma", 0.0) == 4 * 512
    assert c["instr_fp_s"] == 2 * 4 * 512


def test_a_fold_left_chain_is_no_fma_chain(tmp_path):
    """With FMA contraction allowed, `o[e] += a[e, k] * b[k]` is still gcc's fold-left loop: a
    vector multiply off the chain and one `vaddss` a lane on it, priced by `fold_latency`; with a
    strided operand gcc leaves the loop scalar and its chain is `vfmadd231ss`, priced by
    `fma_latency` (before, the fold-left loop's fitted figure priced both: 1.9 cycles built for
    AVX2 on the Xeon model 167 guest, where a scalar FMA takes 4)."""
    relaxed = "  assume { relaxed_math }\n}\n"
    fold = _reduction_doc("o[e] += a[e, k] * b[k]").removesuffix("}\n") + relaxed
    scalar = _reduction_doc("o[e] += a[e, k] * b[k, e]", "[L, E]").removesuffix("}\n") + relaxed
    c = core_terms(fold, tmp_path, _REDUCTION_SIZES)
    assert c["chain_fold"] == 4 * 512 and "chain_fma" not in c
    c = core_terms(scalar, tmp_path, _REDUCTION_SIZES)
    assert c["chain_fma"] == 4 * 512 and "chain_fold" not in c


def test_a_fold_left_step_without_its_figure_is_an_adds():
    hw = {"fp_latency": 3.0, "add_latency": 2.0, "fma_latency": 4.0}
    assert runtime.latency_cycles("fold", hw) == 2.0
    assert runtime.latency_cycles("fold", {**hw, "fold_latency": 3.5}) == 3.5
    assert runtime.latency_cycles("fma", hw) == 4.0
    assert runtime.latency_cycles("mul", hw) == 3.0


def test_a_maximum_or_a_strided_operand_stays_scalar(tmp_path):
    for text in (_reduction_doc("o[e] max= a[e, k]"), _reduction_doc("o[e] += a[e, k] * b[k, e]", "[L, E]")):
        c = core_terms(text, tmp_path, _REDUCTION_SIZES)
        assert c.get("instr_mem", 0.0) <= 1  # no vector loads (the zeroing nest's store only)
        assert c["instr_mem_s"] >= 4 * 512  # an operand loaded every element


def test_the_front_end_issues_four_slots_a_cycle_a_load_fused_into_its_operation():
    """Two loads, one multiply-add, a store and the loop's two a step: max(2, 1) + 1 + 2 = 5
    slots, 1.25 cycles at ISSUE_WIDTH 4; with one load fewer the multiply-add takes the other
    as its memory operand: 4 slots."""
    hw = {"frequency": 4e9}
    t = {"instr_mem_s": np.array([3.0, 2.0]) * 1000, "instr_store_s": np.array([1.0, 1.0]) * 1000,
         "instr_fp_s": np.array([1.0, 1.0]) * 1000, "loop_steps_s": np.array([1.0, 1.0]) * 1000}
    got = runtime.front_end_seconds(t, hw)
    np.testing.assert_allclose(got, [5000 / 16e9, 4000 / 16e9])


def test_the_exp_figure_is_fitted_on_a_documents_vector_loop(hw, tmp_path):
    """`exp_f32` is solved on `y = exp(x - 1.5)` as irkit compiles it (a vector loop of run-time
    length): its prediction there moves with the exp's rate and little else."""
    case = fit.exp_case()
    assert case.figure == "exp_f32" and "sizes { R = 4, N = 4096 }" in case.document
    doc = tmp_path / "exp.design"
    doc.write_text(case.document)
    slow = predict(doc, case.sizes, with_values(hw, exp_f32=1e9)).seconds
    fast = predict(doc, case.sizes, with_values(hw, exp_f32=2e9)).seconds
    assert slow > 1.8 * fast - 1e-6 and slow == pytest.approx(4 * 4096 / 1e9, rel=0.15)
