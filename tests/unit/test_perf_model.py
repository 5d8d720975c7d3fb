"""The cost model: exact counts against hand-derived formulas, and the emitted module.

Hardware figures here are a test description (not measurements); the counts
checked (flops, DRAM bytes of cold and streaming cases) do not depend on
them except through cache sizes, which each test states.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irkit.perf import load_hardware, predict
from irkit.perf.predict import cost_model

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

HW_TEXT = """hardware testhw {
  cores 2
  simd 256 bits
  frequency 3 GHz
  flops_f32 96 GFLOP/s
  flops_f64 48 GFLOP/s
  div_f32 16 GFLOP/s
  sqrt_f32 16 GFLOP/s
  exp_f32 8 GFLOP/s
  libm_exp_f32 0.2 GFLOP/s
  fp_latency 4 cycles
  parallel_overhead 2 us
  call_overhead 1 us
  page_fault 3 us
  strided_miss 1 ns
  cache L1 { size 32 KiB; line 64 B; bandwidth 200 GB/s; ways 8 }
  cache L2 { size 512 KiB; line 64 B; bandwidth 100 GB/s; ways 8 }
  cache L3 { size 16 MiB; line 64 B; bandwidth 50 GB/s; shared 2; ways 16 }
  dram { bandwidth 40 GB/s; bandwidth_core 25 GB/s }
}
"""


@pytest.fixture(scope="module")
def hw(tmp_path_factory):
    path = tmp_path_factory.mktemp("hw") / "testhw.hw"
    path.write_text(HW_TEXT)
    return load_hardware(path)


def with_schedule(doc: Path, schedule: str | None) -> str:
    """The document's text with every schedule section replaced (None: removed)."""
    text = doc.read_text()
    text = re.sub(r"\n  schedule \w+ \{.*?\n  \}\n", "\n", text, flags=re.S)
    if schedule:
        text = text.replace("\n  hardware", "\n" + schedule + "\n\n  hardware", 1)
    return text


def test_gemm_flops_are_exact_at_sizes_that_do_not_divide(hw):
    for m, n, k in [(37, 53, 29), (96, 512, 256), (101, 515, 257)]:
        p = predict(EXAMPLES / "gemm.design", {"M": m, "N": n, "K": k}, hw)
        assert p.flops == 2 * m * n * k


def test_triad_moves_16_bytes_per_element_with_streaming_stores(hw):
    n = 1 << 25  # 128 MiB per array: above the 32 MiB streaming threshold
    p = predict(ROOT / "bench" / "documents" / "triad.design", {"N": n}, hw, cold=True)
    assert p.dram_bytes == 16 * n  # a, b, c read; d written once, around the caches
    assert p.bound == "DRAM"


def test_small_triad_writes_back_and_stays_in_cache_when_warm(hw):
    n = 4096  # 64 KiB in all: fits L2 (half of 512 KiB is counted on)
    doc = ROOT / "bench" / "documents" / "triad.design"
    cold = predict(doc, {"N": n}, hw, cold=True)
    assert cold.dram_bytes == 20 * n  # 12 B read, d's line filled then written back: 8 B
    warm = predict(doc, {"N": n}, hw)
    assert warm.dram_bytes == 0 and warm.breakdown["L3"] == 0


def test_transpose_reads_a_once_and_streams_b(hw):
    m = n = 4096
    p = predict(EXAMPLES / "transpose.design", {"M": m, "N": n}, hw, cold=True)
    assert p.dram_bytes == 8 * m * n
    assert p.flops == 0


def test_blur_flops_count_the_recomputed_halo(hw):
    h, w = 64, 512
    p = predict(EXAMPLES / "blur.design", {"H": h, "W": w}, hw)
    tiles = h // 32
    bx_rows = tiles * 34  # compute_at: each 32-row tile of out computes 34 rows of bx
    assert p.flops == 3 * w * bx_rows + 3 * h * w  # 2 adds and a division per element, per stage


def test_layout_changes_the_traffic_of_a_naive_gemm(hw, tmp_path):
    """ijk GEMM: with B row-major the k loop walks down B's columns, one line per element;
    column-major B is read along lines.  The model must see the difference."""
    text = with_schedule(EXAMPLES / "gemm.design", None)
    row = tmp_path / "row.design"
    row.write_text(text)
    col = tmp_path / "col.design"
    col.write_text(text.replace("B : row_major align 64", "B : col_major align 64"))
    sizes = {"M": 512, "N": 512, "K": 512}
    p_row, p_col = predict(row, sizes, hw, cold=True), predict(col, sizes, hw, cold=True)
    assert p_row.flops == p_col.flops
    assert p_row.breakdown["L2"] > 8 * p_col.breakdown["L2"]  # 512 + 32 + 1 lines per (i, j) against 32 + 32 + 1
    assert p_row.seconds >= p_col.seconds


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("example", ["blur", "gemm", "softmax"])
def test_emitted_module_agrees_with_the_in_process_model(example, hw, tmp_path):
    out = tmp_path / f"{example}_model.py"
    cmd = [sys.executable, "-m", "irkit.tools.opt", str(EXAMPLES / f"{example}.design"),
           "-p", "lower-design,lower-tensorop,apply-schedule,model-perf", "--emit", "python", "-o", str(out)]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    source = out.read_text()
    imports = {m.group(1) for m in re.finditer(r"^(?:import|from) (\w+)", source, flags=re.M)}
    assert imports <= {"numpy", "math", "json"}, imports
    module = _load(out)
    model, _, _ = cost_model(EXAMPLES / f"{example}.design")
    rng = np.random.default_rng(1)
    sizes = {s: rng.integers(17, 700, 50) for s in model.sizes}
    emitted = module.predict(**sizes, hw=hw.values)
    in_process = model.evaluate(sizes, hw)
    assert np.array_equal(emitted["seconds"], in_process["seconds"])
    one = {s: int(v[7]) for s, v in sizes.items()}
    assert module.predict(**one, hw=hw.values)["seconds"] == emitted["seconds"][7]
    assert predict(EXAMPLES / f"{example}.design", one, hw).seconds == pytest.approx(emitted["seconds"][7], rel=1e-12)


def test_perf_ir_prints_and_parses_back(tmp_path):
    run = [sys.executable, "-m", "irkit.tools.opt"]
    first = subprocess.run(
        [*run, str(EXAMPLES / "softmax.design"), "-p", "lower-design,lower-tensorop,apply-schedule,model-perf"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert "perf.kernel" in first.stdout and "perf.nest" in first.stdout
    path = tmp_path / "softmax.mlir"
    path.write_text(first.stdout)
    second = subprocess.run([*run, str(path)], check=True, capture_output=True, text=True)
    assert second.stdout == first.stdout


def test_missing_throughput_is_a_clear_error(tmp_path):
    text = HW_TEXT.replace("  div_f32 16 GFLOP/s\n", "").replace("testhw", "nodiv")
    path = tmp_path / "nodiv.hw"
    path.write_text(text)
    from irkit.diagnostics import DiagnosticError

    with pytest.raises(DiagnosticError, match="div"):
        predict(EXAMPLES / "blur.design", {"H": 64, "W": 64}, load_hardware(path))


def test_a_strided_column_crowds_l1_but_whole_rows_do_not(hw, tmp_path):
    """The example's 32 x 32 tiles at 1024 x 1024: the 32 rows of A a tile reads, 4 KiB apart,
    map to one set of the 8-way L1, so the tile is re-read from L2 for every row of B; at
    1000 x 1000 (rows 4000 B apart) they spread over the sets and L1 keeps the tile."""
    doc = EXAMPLES / "transpose.design"
    crowded = predict(doc, {"M": 1024, "N": 1024}, hw)
    spread = predict(doc, {"M": 1000, "N": 1000}, hw)
    per_element = crowded.breakdown["L2"] / 1024**2, spread.breakdown["L2"] / 1000**2
    assert per_element[0] > 4 * per_element[1]


def test_large_temporaries_pay_their_page_faults(hw, tmp_path):
    """Blur without a schedule computes bx in full: at 4096 x 4096 that is 64 MiB, fresh
    memory at every call (16385 x 4 KiB pages, 4096 + 2 rows); at 512 x 512 it is reused heap."""
    text = with_schedule(EXAMPLES / "blur.design", None)
    doc = tmp_path / "b.design"
    doc.write_text(text)
    from irkit.perf.predict import cost_model as model_of

    model, _, _ = model_of(doc)
    big = model.evaluate({"H": 4096, "W": 4096}, hw)
    small = model.evaluate({"H": 512, "W": 512}, hw)
    pages = -(-((4096 + 2) * 4096 * 4) // 4096)
    fault = hw.values["page_fault"] / hw.values["cores"]
    call = hw.values["call_overhead"]
    nests_overhead = sum(row["overhead"] for row in big["nests"])
    assert big["breakdown"]["overhead"] == pytest.approx(call + nests_overhead + pages * fault)
    assert small["breakdown"]["overhead"] == pytest.approx(call + sum(row["overhead"] for row in small["nests"]))


def test_exp_without_relaxed_math_is_a_scalar_library_call(hw, tmp_path):
    """The same softmax, relaxed and strict: strict calls the C library's expf per element
    (priced at libm_exp_f32), relaxed uses irkit's vector exp (exp_f32)."""
    relaxed_text = (EXAMPLES / "softmax.design").read_text()
    assert "relaxed_math" in relaxed_text
    strict = tmp_path / "strict.design"
    strict.write_text(relaxed_text.replace("    relaxed_math\n", ""))
    relaxed = tmp_path / "relaxed.design"
    relaxed.write_text(relaxed_text)
    sizes = {"M": 256, "N": 1024}
    p_strict, p_relaxed = predict(strict, sizes, hw), predict(relaxed, sizes, hw)
    assert p_strict.flops == p_relaxed.flops
    exps_per_core = 256 * 1024 / 2
    assert p_strict.breakdown["compute"] >= exps_per_core / hw.values["libm_exp_f32"]
    assert p_relaxed.breakdown["compute"] < exps_per_core / hw.values["libm_exp_f32"] / 4


def test_strided_reads_pay_for_their_misses(hw, tmp_path):
    """Naive transpose: A is read down its columns.  With strided_miss 0 the misses cost
    only bandwidth; with it, at least one strided miss per element of B."""
    import dataclasses

    text = with_schedule(EXAMPLES / "transpose.design", None)
    doc = tmp_path / "t.design"
    doc.write_text(text)
    sizes = {"M": 1024, "N": 1024}
    free = dataclasses.replace(hw, values={**hw.values, "strided_miss": 0.0})
    with_cost = predict(doc, sizes, hw)
    without = predict(doc, sizes, free)
    assert with_cost.breakdown["chain"] - without.breakdown["chain"] >= 1024 * 1024 * hw.values["strided_miss"]


def test_columns_in_one_set_queue_their_misses(hw, tmp_path):
    """Naive transpose: at 1024 x 1024 the rows of A are 4 KiB apart, so a column's lines all
    fall in one L1 set and its misses are served one after another (conflict_miss each); at
    1040 x 1040 (rows 4160 B apart) a column spreads over all 64 sets and its misses overlap."""
    import dataclasses

    text = with_schedule(EXAMPLES / "transpose.design", None)
    doc = tmp_path / "t.design"
    doc.write_text(text)
    only_conflicts = dataclasses.replace(hw, values={**hw.values, "strided_miss": 0.0, "conflict_miss": 4e-9})
    one_set = predict(doc, {"M": 1024, "N": 1024}, only_conflicts)
    spread = predict(doc, {"M": 1040, "N": 1040}, only_conflicts)
    kept = 4 / 1024  # of a 1024-line column, one set keeps its ways' share (4 of 8 ways counted on)
    assert one_set.breakdown["chain"] == pytest.approx(1024 * 1024 * 4e-9 * (1 - kept), rel=0.01)
    assert spread.breakdown["chain"] < one_set.breakdown["chain"] / 40


def test_stores_weigh_more_than_loads_in_l1(hw):
    """Triad in L1: per 8-lane vector, 3 loads and 1 store; a store counts STORE_WEIGHT load
    slots, and the L1 bandwidth is a triad's (3 instructions a vector)."""
    from irkit.perf.runtime import STORE_WEIGHT

    n = 8192  # two halves of 4096, one a core
    p = predict(ROOT / "bench" / "documents" / "triad.design", {"N": n}, hw)
    vectors_per_core = n / 8 / 2
    slots = (3 + STORE_WEIGHT) * 3 / (2 + STORE_WEIGHT)
    assert p.breakdown["L1"] == pytest.approx(vectors_per_core * slots * 32 / hw.values["levels"][0]["bandwidth"])


def test_a_column_that_fits_its_sets_ways_stays(hw, tmp_path):
    """Naive transpose of an R x 1024 matrix: a column of A is R lines 4 KiB apart, all in one
    set of the 8-way L1.  With R = 6 the set's ways hold the column (all 8 ways count, not the
    half of the cache the model otherwise counts on) and each line of A is fetched once; with
    R = 16 they cannot, and every element waits for its line."""
    text = with_schedule(EXAMPLES / "transpose.design", None)
    doc = tmp_path / "t.design"
    doc.write_text(text)
    fits = predict(doc, {"M": 6, "N": 1024}, hw, cold=True)
    spills = predict(doc, {"M": 16, "N": 1024}, hw, cold=True)
    per_row = fits.breakdown["chain"] / 6, spills.breakdown["chain"] / 16  # misses waited for
    assert per_row[0] < per_row[1] / 10
    assert spills.breakdown["L2"] / 16 > 2 * fits.breakdown["L2"] / 6


def test_short_runs_are_not_streamed(hw):
    """The C backend streams a loop entry only when it writes at least 128 contiguous bytes
    (c_math's IRKIT_NT_MIN_RUN): the example's 32 x 32 transpose tiles write rows of 128 B and
    stream B (8 bytes an element at DRAM: A read, B written once); 8 x 8 tiles write rows of
    32 B, which go through the cache: B's lines are filled, then written back (12 bytes)."""
    text = (EXAMPLES / "transpose.design").read_text()
    tile8 = (
        text.replace("tile i, j by 32, 32", "tile i, j by 8, 8")
        .replace("unroll ii by 4\n", "")
        .replace("vectorize ji by 16", "vectorize ji by 8")
    )
    assert tile8 != text
    sizes = {"M": 4096, "N": 4096}
    assert predict(text, sizes, hw, cold=True).dram_bytes == 8 * 4096**2
    assert predict(tile8, sizes, hw, cold=True).dram_bytes == pytest.approx(12 * 4096**2, rel=0.01)


def test_an_accumulator_kept_in_memory_waits_once_an_entry(hw, tmp_path):
    """GEMM in i, k, j order with j vectorised: every entry of the j loop reloads the row of C
    the entry before (the previous k) stored.  The L1 term grows by exactly the entries of j a
    core runs (M / cores x K) x (store_forward + one dependent add's fp_latency) / frequency;
    the entries' count does not depend on N, their own loads and stores do."""
    import dataclasses

    text = with_schedule(
        EXAMPLES / "gemm.design", "  schedule C {\n    reorder i, k, j\n    parallel i\n    vectorize j by 8\n  }"
    )
    sizes = {"M": 64, "N": 256, "K": 32}
    forward = dataclasses.replace(hw, values={**hw.values, "store_forward": 10.0})
    without = predict(text, sizes, dataclasses.replace(hw, values={**hw.values, "fp_latency": 0.0}))
    with_wait = predict(text, sizes, forward)
    entries = 64 / 2 * 32
    cycles = entries * (10.0 + hw.values["fp_latency"])
    assert with_wait.breakdown["L1"] - without.breakdown["L1"] == pytest.approx(cycles / hw.values["frequency"])
    # in the example's order (i, j, k: k innermost, a chain in a register) nothing waits on memory
    plain = (EXAMPLES / "gemm.design").read_text()
    assert predict(plain, sizes, forward).breakdown["L1"] == pytest.approx(predict(plain, sizes, hw).breakdown["L1"])


BOX = """design box {
  sizes { H = 64, W = 64 }
  tensor I : f32[H + 2, W + 2] input
  tensor K : f32[KH, KW] input
  tensor O : f32[OUT] output
  O[y, x] += I[y + r, x + s] * K[r, s]
}
"""


def _box(kh: int = 3, kw: int = 3, out: str = "H, W") -> str:
    return BOX.replace("KH", str(kh)).replace("KW", str(kw)).replace("OUT", out)


def test_a_short_filter_loop_is_unrolled_and_the_pixel_loop_vectorised(hw):
    """`O[y, x] += I[y + r, x + s] * K[r, s]` over a 3x3 filter: gcc unrolls r and s completely
    and vectorises x, the accumulator staying in a register for the 9 updates: no latency chain
    (it was 3.94 ms predicted, chain-bound, at 512 x 512, where 0.21 ms was measured)."""
    sizes = {"H": 64, "W": 64}
    assert predict(_box(), sizes, hw).breakdown["chain"] == 0
    # 5x5 still unrolls (gcc: 0.62 ms at 512 x 512, vectorised); 7x7 is past gcc's budget of
    # straight-line code (measured: 8.1 ms, 3 GFLOP/s, scalar), so its chain stays
    assert predict(_box(5, 5, "H - 2, W - 2"), sizes, hw).breakdown["chain"] == 0
    assert predict(_box(7, 7, "H - 4, W - 4"), sizes, hw).breakdown["chain"] > 0
    # summed over channels too (loops y, x, c, r, s): the loop around r, s is c, which does not
    # move the accumulator O[y, x], so the chain runs on through c (conv2d's naive nest)
    channels = (
        "design chans {\n  sizes { C = 4, H = 64, W = 64 }\n  tensor I : f32[C, H + 2, W + 2] input\n"
        "  tensor K : f32[C, 3, 3] input\n  tensor O : f32[H, W] output\n"
        "  O[y, x] += I[c, y + r, x + s] * K[c, r, s]\n}\n"
    )
    assert predict(channels, {"C": 4, **sizes}, hw).breakdown["chain"] > 0


def test_the_unrolled_filter_loop_costs_what_its_straight_line_code_does(hw):
    """The 3x3 box's pixel loop is priced as the same work written out as 9 terms: the same
    vector instructions and L1 accesses (I nine times, O once each way, K hoisted)."""
    sizes = {"H": 256, "W": 256}
    taps = " + ".join(f"I[y + {r}, x + {s}] * K[{r}, {s}]" for r in range(3) for s in range(3))
    flat = (
        "design flat {\n  sizes { H = 64, W = 64 }\n  tensor I : f32[H + 2, W + 2] input\n"
        "  tensor K : f32[3, 3] input\n  tensor O : f32[H, W] output\n"
        f"  O[y, x] = {taps}\n}}\n"
    )
    unrolled = predict(_box(), sizes, hw).breakdown
    straight = predict(flat, sizes, hw).breakdown
    # the box also fills O with zeros first (`+=`): one more vector store per pixel
    assert unrolled["compute"] == pytest.approx(straight["compute"], rel=0.25)
    assert unrolled["compute"] >= straight["compute"]


def test_a_parallel_loop_inside_a_tile_loop_counts_its_mean_share_of_cores(hw, tmp_path):
    """`parallel ii` under `split i by 2048`: ii's trips depend on io (the tail), and the cores it
    keeps busy are their mean over io's iterations, not a term that names io (which the perf IR's
    verifier refused: the tuner met it)."""
    text = (EXAMPLES / "softmax.design").read_text()
    text = text.replace("split i by 16 -> io, ii\n    parallel io", "split i by 2048 -> io, ii\n    parallel ii")
    assert "parallel ii" in text
    doc = tmp_path / "inner_parallel.design"
    doc.write_text(text)
    one = predict(doc, sizes={"M": 4096, "N": 1024}, hw=hw)  # builds: no VerifyException
    serial = doc.read_text().replace("    parallel ii\n", "")
    doc.write_text(serial)
    assert predict(doc, sizes={"M": 4096, "N": 1024}, hw=hw).seconds > 1.3 * one.seconds
