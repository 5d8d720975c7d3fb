"""Vector code of the C backend: the `#pragma omp simd` loops really vectorize (gcc's
-fopt-info-vec report, mapped back to the loops), unsafe loops get no pragma, the
relaxed_math exp (`irkit.backends.c_math`) is accurate against numpy and is used only
under relaxed_math, float max/min reductions keep NaNs, and the kernels are -Werror and
AddressSanitizer clean."""

from __future__ import annotations

import ctypes
import math
import platform
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from irkit import api
from irkit.backends import build, c_math
from irkit.backends.c import emit_c
from irkit.backends.harness import ASAN_FLAGS, run_harness
from irkit.backends.runner import CompiledKernel
from irkit.context import make_context
from irkit.frontend import parse_design

ROOT = Path(__file__).resolve().parents[2]
WERROR = [*build.DEFAULT_CFLAGS, "-Wall", "-Wextra", "-Werror"]
X86 = platform.machine() in ("x86_64", "AMD64")


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IRKIT_CACHE_DIR", str(tmp_path_factory.mktemp("irkit-cache")))
        mp.delenv("IRKIT_CFLAGS", raising=False)
        yield


# ------------------------------------------------------------------ documents

SOFTMAX = """
design softmax {
  sizes { M = 64, N = 1024 }
  tensor X : f32[M, N] input
  tensor P : f32[M, N] output
  P = softmax(X, axis = 1)
  layout { X : row_major align 64; P : row_major align 64 }
  schedule P { split i by 16 -> io, ii; parallel io; vectorize j by 16 }
  assume { aligned(X, 64); aligned(P, 64)RELAXED }
}
"""
TRIAD = """
design triad {
  sizes { N = 100000 }
  tensor a : f32[N] input
  tensor b : f32[N] input
  tensor c : f32[N] input
  tensor d : f32[N] output
  d[i] = a[i] * b[i] + c[i]
  layout { a : align 64; b : align 64; c : align 64; d : align 64 }
  schedule d { split i by 4096 -> io, ii; parallel io; vectorize ii by 16 }
  assume { aligned(a, 64); aligned(b, 64); aligned(c, 64); aligned(d, 64) }
}
"""
# sqrt vectorizes with the default -fno-math-errno; f64 exp with relaxed_math.
MATH = """
design m {
  sizes { M = 33, N = 70 }
  tensor x : f32[M, N] input
  tensor z : f64[M, N] input
  tensor y : f32[M, N] output
  tensor w : f64[M, N] output
  y[i, j] = sqrt(x[i, j] * x[i, j] + 1)
  w[i, j] = exp(z[i, j]) - 1
  schedule y { vectorize j by 16 }
  schedule w { vectorize j by 8 }
  assume { relaxed_math }
}
"""


def softmax(relaxed: bool) -> str:
    return SOFTMAX.replace("RELAXED", "; relaxed_math" if relaxed else "")


def loop_ir(document: str) -> ModuleOp:
    return api.lower(parse_design(document, "t.design"))["loop"]


def c_of(document: str) -> str:
    return emit_c(loop_ir(document))


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text, "t.mlir").parse_module()
    module.verify()
    return module


# ------------------------------------------------------- the vectorization report


def simd_loops(source: str) -> dict[tuple[int, int], str]:
    """(first, last) line of every loop under a `#pragma omp ... simd`, to the comment above it."""
    lines = source.splitlines()
    loops: dict[tuple[int, int], str] = {}
    for k, line in enumerate(lines):
        text = line.strip()
        if not (text.startswith("#pragma omp") and re.search(r"\bsimd\b", text)) or "declare" in text:
            continue
        first = next(j for j in range(k + 1, len(lines)) if lines[j].strip().startswith("for ("))
        depth = 0
        for last in range(first, len(lines)):
            depth += lines[last].count("{") - lines[last].count("}")
            if depth == 0:
                break
        loops[(first + 1, last + 1)] = lines[k - 1].strip()
    return loops


def vector_report(source: str, tmp_path: Path, flags: list[str] | None = None) -> tuple[set[int], str]:
    """Lines gcc reports 'loop vectorized' at, compiling `source` with irkit's flags."""
    c_file = tmp_path / "kernel.c"
    c_file.write_text(source)
    argv = [
        *build.find_compiler(),
        *build.BASE_FLAGS,
        *(flags or build.DEFAULT_CFLAGS),
        "-c",
        str(c_file),
        "-o",
        str(tmp_path / "kernel.o"),
        "-fopt-info-vec-optimized",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    found = {int(m.group(1)) for m in re.finditer(r"kernel\.c:(\d+):\d+: optimized: loop vectorized", done.stderr)}
    return found, done.stderr


def vectorized(source: str, tmp_path: Path) -> dict[str, bool]:
    """For every simd loop (by its comment and first line): did gcc vectorize it?"""
    report, _ = vector_report(source, tmp_path)
    return {
        f"{first}: {what}": any(first <= line <= last for line in report)
        for (first, last), what in simd_loops(source).items()
    }


def gcc_or_skip() -> None:
    version = build.compiler_version(build.find_compiler())
    if "gcc" not in version.lower() and "GCC" not in version:
        pytest.skip(f"the vectorization report is gcc's; the compiler is {version}")


def test_report_lines_map_to_loops(tmp_path):
    """The mapping itself: a loop that gcc must not vectorize (a recurrence) is not reported."""
    gcc_or_skip()
    source = (
        "#include <stdint.h>\n"
        "void f(int64_t n, float *restrict a, const float *restrict b)\n{\n"
        "    /* loop i */\n    #pragma omp simd\n"
        "    for (int64_t i = 0; i < n; i += 1) {\n        a[i] = 2.0f * b[i];\n    }\n"
        "    /* loop k */\n    #pragma omp parallel for\n"
        "    for (int64_t k = 1; k < n; k += 1) {\n        a[k] = a[k - 1] * b[k];\n    }\n}\n"
    )
    assert simd_loops(source) == {(6, 8): "/* loop i */"}
    assert vectorized(source, tmp_path) == {"6: /* loop i */": True}


@pytest.mark.parametrize(
    "name, document",
    [("softmax relaxed", softmax(True)), ("triad", TRIAD), ("sqrt and f64 exp", MATH)],
)
def test_every_simd_loop_vectorizes(name, document, tmp_path):
    gcc_or_skip()
    source = c_of(document)
    result = vectorized(source, tmp_path)
    assert result and all(result.values()), (name, result)


def test_the_example_softmax_vectorizes(tmp_path):
    gcc_or_skip()
    source = c_of((ROOT / "examples" / "softmax.design").read_text())
    result = vectorized(source, tmp_path)
    assert len(result) == 4 and all(result.values()), result
    assert "irkit_fast_expf(" in source


def test_libm_exp_loop_is_not_vectorized_without_relaxed_math(tmp_path):
    """Without relaxed_math exp stays libm's expf, which gcc cannot vectorize (the rest can)."""
    gcc_or_skip()
    source = c_of(softmax(False))
    assert "irkit_fast_expf" not in source and "expf(" in source
    result = vectorized(source, tmp_path)
    assert sorted(result.values()) == [False, True, True, True], result


# ------------------------------------------------------------------- emitted text

EXP_KERNEL = """
func.func @k(%N: index {irkit.name = "N", irkit.default = 9 : i64},
    %x: memref<?xT> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>, irkit.align = 64 : i64},
    %y: memref<?xT> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) ATTRS {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "y", vector = 8 : i64} {
    %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xT> -> T
    %e = math.exp %v : T
    loop.store %e, %y[affine_map<(d0) -> (d0)>] (%i) : T, memref<?xT>
  }
  func.return
}
"""
RELAXED = "attributes {irkit.assume = {divisible = {}, aligned = {}, noalias = [], relaxed_math}}"


def exp_kernel(t: str, relaxed: bool) -> ModuleOp:
    return parse(EXP_KERNEL.replace("ATTRS", RELAXED if relaxed else "").replace("T", t))


@pytest.mark.parametrize("t, fast, libm", [("f32", "irkit_fast_expf", "expf"), ("f64", "irkit_fast_exp", "exp")])
def test_relaxed_math_selects_the_fast_exp(t, fast, libm):
    relaxed = emit_c(exp_kernel(t, True))
    assert f"= {fast}(v);" in relaxed
    assert relaxed.count(f"static inline IRKIT_ALWAYS_INLINE {'float' if t == 'f32' else 'double'} {fast}(") == 1
    assert "#pragma omp simd simdlen(8) aligned(x: 64)\n" in relaxed
    assert "/* loop i, stage y, vector 8 */" in relaxed
    strict = emit_c(exp_kernel(t, False))
    assert f"= {libm}(v);" in strict and "irkit_fast" not in strict and "IRKIT_FMA" not in strict


DIVIDE = """
design d {
  sizes { M = 37, N = 64 }
  tensor x : f32[M, N] input
  tensor s : f32[M] input
  tensor y : f32[M, N] output
  tensor z : f32[M, N] output
  y[i, j] = x[i, j] / s[i]
  z[i, j] = x[i, j] / (x[i, j] + 2)
  schedule y { SCHEDULE }
  schedule z { vectorize j by 16 }
  assume { noalias(x, s, y, z)RELAXED }
}
"""


@pytest.mark.parametrize("schedule", ["vectorize j by 16", "split j by 16 -> jo, ji; vectorize ji by 16"])
def test_relaxed_math_multiplies_by_the_reciprocal_of_a_divisor_the_loop_does_not_change(schedule):
    """`y = x / s[i]` in a loop over j: one division a row, a multiplication an element (an
    `omp simd` loop over N, or explicit vectors over 16); `z = x / (x + 2)` changes with j and
    stays a division; without relaxed_math every division stays."""
    from irkit.perf import load_hardware, predict

    doc = DIVIDE.replace("SCHEDULE", schedule)
    relaxed, strict = doc.replace("RELAXED", "; relaxed_math"), doc.replace("RELAXED", "")
    divisions = [line.strip() for line in c_of(relaxed).splitlines() if " / " in line and "=" in line]
    assert not any(re.search(r"x_\w* / s_", line) for line in divisions), divisions
    assert any("* (1.0f / s_" in line for line in divisions), divisions
    assert any(re.search(r"= x_\w* / v\w*;", line) for line in divisions), divisions  # z's stays
    assert "* (1.0f / " not in c_of(strict)
    build.build_shared(c_of(relaxed), WERROR)
    kernel = api.compile(relaxed)
    inputs = kernel.random_inputs()
    got, want = kernel(**inputs), kernel.reference(inputs)
    for name in ("y", "z"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6)
    # the model prices a multiplication where the C has one
    hw = load_hardware("generic")
    assert predict(relaxed, hw=hw).breakdown["compute"] < predict(strict, hw=hw).breakdown["compute"]


def test_fast_exp_kernels_compile_with_werror():
    for t in ("f32", "f64"):
        build.build_shared(emit_c(exp_kernel(t, True)), WERROR)
    for document in (softmax(True), TRIAD, MATH):
        build.build_shared(c_of(document), WERROR)


# Stores whose element repeats across iterations: `y[i floordiv 2]` (two iterations, one
# element) and `y[i - i]`; a store at `y[2 * i + 1]` is fine.
STORE_KERNEL = """
func.func @s(%N: index {irkit.name = "N", irkit.default = 9 : i64},
    %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0 * 2 + 2)>},
    %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0 * 2 + 2)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", vector = 8 : i64} {
    %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
    loop.store %v, %y[affine_map<(d0) -> (MAP)>] (%i) : f32, memref<?xf32>
  }
  func.return
}
"""


@pytest.mark.parametrize("amap, safe", [("d0 floordiv 2", False), ("d0 - d0", False), ("d0 * 2 + 1", True)])
def test_no_simd_pragma_where_iterations_write_one_element(amap, safe):
    source = emit_c(parse(STORE_KERNEL.replace("MAP", amap)))
    assert ("#pragma omp simd" in source) == safe
    if not safe:
        assert "vectorize 8 not asserted" in source


def test_aligned_clause_names_only_aligned_buffers_the_loop_walks():
    """`aligned` lists the buffers whose address varies with the vector loop and whose first
    element has a known alignment: arguments with `align`, temporaries (allocated aligned)."""
    source = c_of(softmax(True))
    pragmas = [line.strip() for line in source.splitlines() if "#pragma omp simd" in line]
    assert pragmas == [
        "#pragma omp simd reduction(irkit_maximumf:P_max_acc) simdlen(16) aligned(X: 64)",
        "#pragma omp simd simdlen(16) aligned(X, P: 64)",
        "#pragma omp simd reduction(+:P_sum_acc) simdlen(16) aligned(P: 64)",
        "#pragma omp simd simdlen(16) aligned(P: 64)",
    ]
    unaligned = c_of(
        TRIAD.replace("layout { a : align 64; b : align 64; c : align 64; d : align 64 }", "").replace(
            "assume { aligned(a, 64); aligned(b, 64); aligned(c, 64); aligned(d, 64) }", ""
        )
    )
    assert "simd simdlen(16) aligned(" not in unaligned and "#pragma omp simd simdlen(16)\n" in unaligned


# ------------------------------------------------------------- streaming stores

FORCE_STREAMING = [*build.DEFAULT_CFLAGS, "-DIRKIT_NT_MIN_BYTES=0", "-Wall", "-Wextra", "-Werror"]
# A 2-D f64 output whose rows start at every alignment (N odd), the loop parallel over rows.
ROWS = """
design rows {
  sizes { M = 37, N = 53 }
  tensor x : f64[M, N] input
  tensor y : f64[M, N] output
  y[i, j] = 2 * x[i, j] + 1
  schedule y { parallel i; vectorize j by 8 }
}
"""


def test_streaming_stores_only_for_outputs_nobody_reads():
    triad = c_of(TRIAD)
    assert "irkit_stream_f32(&d[ii_c], d_v);" in triad and "irkit_stream_fence();" in triad
    assert (
        "if (ii_skip >= 0 && (ii_hi - ii_lo) * (int64_t)sizeof(float) >= IRKIT_NT_MIN_RUN"
        " && N * (int64_t)sizeof(float) >= IRKIT_NT_THRESHOLD(INT64_C(33554432))) {"
    ) in triad
    # one fence an iteration of the parallel loop, after its streaming loop -- not one a chunk
    assert triad.count("irkit_stream_fence();") == 1
    assert "        }\n#if IRKIT_VEC_BYTES\n        irkit_stream_fence();\n#endif\n    }" in triad
    assert (
        "#pragma omp simd simdlen(16) aligned(a, b, c, d: 64)\n            for (int64_t ii = ii_lo; ii < ii_a;" in triad
    )
    assert "irkit_stream_f64(&y[i*y_s0 + j_c], y_v);" in c_of(ROWS)
    # softmax reads P back (sum, divide); a loop that is parallel and vector at once; a column walk
    assert "irkit_stream_f32(" not in c_of(softmax(True))
    assert "irkit_stream_f" not in c_of(
        TRIAD.replace("split i by 4096 -> io, ii; parallel io; vectorize ii", "parallel i; vectorize i")
    )
    column = ROWS.replace("tensor y : f64[M, N] output", "tensor y : f64[M, N] output\n  layout { y : col_major }")
    assert "irkit_stream_f" not in c_of(column)


def test_streaming_threshold_is_the_inline_hardware_last_cache():
    hw = (
        "hardware { cores 2; simd 256 bits; frequency 3 GHz\n"
        "  cache L1 { size 32 KiB; line 64 B; bandwidth 100 GB/s }\n"
        "  cache L3 { size 8 MiB; line 64 B; bandwidth 50 GB/s }\n  dram { bandwidth 20 GB/s } }\n"
    )
    source = c_of(TRIAD.replace("  assume {", hw + "  assume {"))
    assert f"N * (int64_t)sizeof(float) >= IRKIT_NT_THRESHOLD(INT64_C({8 * 2**20}))" in source


@pytest.mark.parametrize("n", [1, 7, 4095, 4097, 20011])
def test_streamed_triad_equals_the_plain_one(n):
    x = api.compile(TRIAD, sizes={"N": n}).random_inputs()
    plain = api.compile(TRIAD, sizes={"N": n})(**x)["d"]
    streamed = api.compile(TRIAD, sizes={"N": n}, cflags=FORCE_STREAMING)(**x)["d"]
    np.testing.assert_array_equal(streamed, plain)


@pytest.mark.parametrize("sizes", [{"M": 37, "N": 53}, {"M": 3, "N": 1}, {"M": 5, "N": 64}])
def test_streamed_rows_equal_the_oracle(sizes):
    kernel = api.compile(ROWS, sizes=sizes, cflags=FORCE_STREAMING)
    x = kernel.random_inputs()
    np.testing.assert_array_equal(kernel(**x)["y"], kernel.reference(x)["y"])


@pytest.mark.skipif(not X86, reason="streaming stores are x86 instructions")
def test_streaming_stores_are_emitted_and_vectorized(tmp_path):
    gcc_or_skip()
    source = c_of(TRIAD)
    result = vectorized(source, tmp_path)
    assert len(result) == 2 and all(result.values()), result  # the chunk loop and the plain loop
    asm = tmp_path / "triad.s"
    argv = [*build.find_compiler(), *build.BASE_FLAGS, *build.DEFAULT_CFLAGS, "-S", "-o", str(asm), "-x", "c", "-"]
    subprocess.run(argv, input=source, text=True, check=True)
    assert re.search(r"\bv?movntps\b", asm.read_text())


# ------------------------------------------------------- max/min reductions and NaN

REDUCE = """
func.func @r(%M: index {irkit.name = "M", irkit.default = 3 : i64}, %N: index {irkit.name = "N", irkit.default = 40 : i64},
    %X: memref<?x?xT> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
    %m: memref<?xT> {irkit.name = "m", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i"} {
    %init = arith.constant INIT : T
    loop.store %init, %m[affine_map<(d0) -> (d0)>] (%i) : T, memref<?xT>
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", vector = 16 : i64} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xT> -> T
      %acc = loop.load %m[affine_map<(d0) -> (d0)>] (%i) : memref<?xT> -> T
      %r = arith.OP %acc, %x : T
      loop.store %r, %m[affine_map<(d0) -> (d0)>] (%i) : T, memref<?xT>
    }
  }
  func.return
}
"""


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("op", ["maximumf", "minimumf", "maxnumf", "minnumf"])
def test_float_max_min_reductions_keep_their_nan_semantics(op, t):
    """OpenMP's built-in max loses a NaN a lane holds (gcc 12 even returns -inf); the
    declared reductions combine lanes as the loop body does.  Checked against numpy at every
    NaN position of a row (the lanes differ), with the kernel at -O3."""
    init = "0xFF800000" if "max" in op else "0x7F800000"
    if t == "f64":
        init = "0xFFF0000000000000" if "max" in op else "0x7FF0000000000000"
    module = parse(REDUCE.replace("OP", op).replace("INIT", init).replace("T", t))
    source = emit_c(module)
    fn = {"maximumf": "irkit_maximum", "minimumf": "irkit_minimum", "maxnumf": "fmax", "minnumf": "fmin"}[op]
    fn += "f" if t == "f32" else ""
    assert f"reduction({fn}:m_acc)" in source and f"#pragma omp declare reduction({fn} :" in source
    kernel = CompiledKernel.build(module, "r", WERROR)
    dtype = np.float32 if t == "f32" else np.float64
    n = 40
    X = np.tile(np.arange(n, dtype=dtype), (n, 1))
    X[np.arange(n), np.arange(n)] = np.nan  # row r has its NaN at column r
    X[-1, :] = np.nan
    got = kernel.run({"X": X}, {"M": n, "N": n})["m"]
    ufunc = {"maximumf": np.maximum, "minimumf": np.minimum, "maxnumf": np.fmax, "minnumf": np.fmin}[op]
    start = np.full((n, 1), -np.inf if "max" in op else np.inf, dtype=dtype)
    want = ufunc.reduce(np.concatenate([start, X], axis=1), axis=1)  # in order, from the initial value
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------- fast exp accuracy

EXP_LIB = """
#include <stdint.h>
#include <math.h>
{helpers}
void vexpf(int64_t n, const float *restrict x, float *restrict y)
{{
    #pragma omp simd
    for (int64_t i = 0; i < n; i += 1) y[i] = irkit_fast_expf(x[i]);
}}
void vexp(int64_t n, const double *restrict x, double *restrict y)
{{
    #pragma omp simd
    for (int64_t i = 0; i < n; i += 1) y[i] = irkit_fast_exp(x[i]);
}}
"""

FLT_MAX = float(np.finfo(np.float32).max)
FLT_MIN = float(np.finfo(np.float32).tiny)
# Error bounds the tests hold the fast exp to (measured: 8.5e-8 f32 exhaustively, 1.6e-16 f64).
F32_MAX_REL = 1.0e-7
F64_MAX_REL = 2.5e-16
MODES = {
    "vector": list(build.DEFAULT_CFLAGS),
    "scalar": ["-O2", "-fno-tree-vectorize", "-march=native", "-Wno-unknown-pragmas"],
    **({"no-fma vector": [*build.DEFAULT_CFLAGS, "-mno-fma"]} if X86 else {}),
}


def exp_lib(mode: str):
    source = EXP_LIB.format(helpers="\n".join(c_math.helper_texts({"irkit_fast_expf", "irkit_fast_exp"})))
    return build.compile_and_load(source, [*MODES[mode], "-Wall", "-Wextra", "-Werror"])


def call(fn, x: np.ndarray) -> np.ndarray:
    y = np.empty_like(x)
    fn(ctypes.c_int64(x.size), ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data))
    return y


def f32_sample() -> np.ndarray:
    """Every 211th float from -104.5 to 89.5 by bit pattern (about 10 million), and edges."""
    pos = np.arange(0, np.float32(89.5).view(np.uint32), 211, dtype=np.uint32)
    neg = pos[pos <= np.float32(104.5).view(np.uint32)] | np.uint32(0x80000000)
    edges = np.array(
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            88.72283,
            88.72284,
            88.7229,
            89.0,
            100.0,
            FLT_MAX,
            np.inf,
            -np.inf,
            -FLT_MAX,
            -87.33654,
            -87.33655,
            -103.27893,
            -103.97208,
            -103.972084,
            -103.97209,
            -104.0,
            -200.0,
            1e-45,
            -1e-45,
            FLT_MIN,
            0.5 * math.log(2),
            -0.5 * math.log(2),
            1e-8,
            -1e-8,
        ],
        dtype=np.float32,
    )
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF], dtype=np.uint32).view(np.float32)
    return np.concatenate([pos.view(np.float32), neg.view(np.float32), edges, nans])


@pytest.mark.parametrize("mode", sorted(MODES))
def test_fast_expf_accuracy(mode):
    lib = exp_lib(mode)
    x = f32_sample()
    y = call(lib.vexpf, x)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x.astype(np.float64))
    nan = np.isnan(x)
    assert np.isnan(y[nan]).all() and not np.isnan(y[~nan]).any()
    x, y, e = x[~nan], y[~nan].astype(np.float64), e[~nan]
    over = e > FLT_MAX * (1 + 2.0**-25)  # what rounds to +inf in f32
    assert np.isposinf(y[over]).all() and np.isfinite(y[~over]).all()
    normal = ~over & (e >= FLT_MIN)
    rel = np.abs(y[normal] - e[normal]) / e[normal]
    assert rel.max() <= F32_MAX_REL, f"max relative error {rel.max():.3g} at x = {x[normal][rel.argmax()]!r}"
    ulps = np.abs(y[normal] - e[normal]) / np.spacing(e[normal].astype(np.float32)).astype(np.float64)
    assert ulps.max() < 1.0  # and so never more than one ulp from the correctly rounded result
    sub = ~over & ~normal
    assert np.abs(y[sub] - e[sub]).max() <= 2.0**-149  # within one step of the subnormal grid
    assert (y[x < -103.98] == 0).all() and (y[x == 0] == 1).all()
    # the same as libm where libm is exact
    assert call(lib.vexpf, np.array([0.0, -np.inf, np.inf], dtype=np.float32)).tolist() == [1.0, 0.0, math.inf]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_fast_exp_f64_accuracy(mode):
    lib = exp_lib(mode)
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            rng.uniform(-750, 715, 1_000_000),
            rng.uniform(-1, 1, 300_000),
            np.array(
                [
                    0.0,
                    709.782712893384,
                    709.7827128933841,
                    710.0,
                    -708.3964185322641,
                    -745.1332191019411,
                    -745.1332191019412,
                    -746.0,
                    np.inf,
                    -np.inf,
                    np.nan,
                ]
            ),
        ]
    )
    y = call(lib.vexp, x)
    with np.errstate(over="ignore"):
        e = np.exp(x.astype(np.longdouble))
        libm = np.exp(x)
    finite = ~np.isnan(x)
    assert np.isnan(y[~finite]).all()
    assert np.array_equal(np.isinf(y[finite]), np.isinf(libm[finite]))
    normal = finite & np.isfinite(libm) & (e >= np.finfo(np.float64).tiny)
    rel = (np.abs(y[normal].astype(np.longdouble) - e[normal]) / e[normal]).astype(np.float64)
    assert rel.max() <= F64_MAX_REL, f"max relative error {rel.max():.3g} at x = {x[normal][rel.argmax()]!r}"
    sub = finite & np.isfinite(libm) & ~normal
    assert (np.abs(y[sub].astype(np.longdouble) - e[sub]) <= np.longdouble(2.0) ** -1074).all()


# ------------------------------------------------------------------ end to end


@pytest.mark.parametrize("sizes", [{"M": 64, "N": 1024}, {"M": 37, "N": 53}, {"M": 1, "N": 1}])
def test_relaxed_softmax_matches_the_oracle(sizes):
    kernel = api.compile(softmax(True), sizes=sizes)
    inputs = kernel.random_inputs()
    inputs["X"] = inputs["X"] * 30  # exponents over a wide range, some rows underflow to 0
    got = kernel(**inputs)["P"]
    want = kernel.reference(inputs)["P"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(got.sum(axis=1), 1, rtol=1e-5)


def asan_or_skip() -> None:
    try:
        exe = build.build_executable({"main": "int main(void) { return 0; }\n"}, ASAN_FLAGS)
    except Exception as exc:  # noqa: BLE001 - any failure means: no ASan here
        pytest.skip(f"the C compiler cannot build with -fsanitize=address: {exc}")
    if subprocess.run([str(exe)], capture_output=True, check=False).returncode != 0:
        pytest.skip("AddressSanitizer programs do not run here")


@pytest.mark.parametrize(
    "name, document, sizes",
    [
        ("softmax", softmax(True), {"M": 37, "N": 53}),
        ("triad", TRIAD, {"N": 4099}),
        ("math", MATH, {"M": 5, "N": 37}),
        ("rows", ROWS, {"M": 9, "N": 29}),
    ],
)
def test_vector_kernels_are_asan_clean_at_O3(name, document, sizes):
    """At -O3 -march=native, so the vectorized loops and their tails are what runs, and with
    every output large enough to be streamed."""
    asan_or_skip()
    flags = [*ASAN_FLAGS, "-O3", "-march=native", "-fno-math-errno", "-DIRKIT_NT_MIN_BYTES=0"]
    result = run_harness(loop_ir(document), None, sizes, flags)
    assert result.returncode == 0, result.stderr[-3000:]


# ------------------------------------------------------------------ vector width of the target

WIDE_BLOCK = """
design wide {
  sizes { M = 12, N = 32, K = 8 }
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output
  C[i, j] += A[i, k] * B[k, j]
  layout { A : row_major align 64; B : row_major align 64; C : row_major align 64 }
  schedule C { split j by 16 -> jo, jv; reorder jo, i, k, jv; vectorize jv by 16; unroll_jam i by 3 }
  assume { aligned(A, 64); aligned(B, 64); aligned(C, 64); relaxed_math }
}
"""


@pytest.mark.skipif(not X86, reason="x86 -march names")
@pytest.mark.parametrize("march, widest", [("x86-64-v2", 16), ("x86-64-v3", 32), ("x86-64-v4", 64)])
def test_vector_bytes_follow_the_build_target(march, widest):
    """The compiler's predefined macros for the build's -march give its widest vector register."""
    assert build.vector_bytes(build.march_cflags(march)) == widest


@pytest.mark.skipif(not X86, reason="x86 -march names")
def test_no_vector_wider_than_the_targets_registers():
    """`vectorize jv by 16` on f32 is one 64-byte vector for AVX-512 and two of 32 bytes for AVX2:
    gcc keeps a GNU vector wider than every register in stack memory."""
    v4 = api.compile(WIDE_BLOCK, cflags=build.march_cflags("x86-64-v4"), build=False).c_source
    v3 = api.compile(WIDE_BLOCK, cflags=build.march_cflags("x86-64-v3"), build=False).c_source
    assert "vector_size(64)" in v4 and "1 vector registers of 16" in v4
    assert "vector_size(64)" not in v3 and "irkit_f32x16" not in v3
    assert "2 vector registers of 8" in v3


@pytest.mark.skipif(not X86, reason="x86 -march names")
@pytest.mark.parametrize("march", ["x86-64-v3", "native"])
def test_split_vectors_compute_the_same(march):
    """The register block written as vectors of the target's width runs correct against the oracle."""
    kernel = api.compile(WIDE_BLOCK, cflags=build.march_cflags(march))
    rng = np.random.default_rng(3)
    for sizes in ({"M": 12, "N": 32, "K": 8}, {"M": 7, "N": 48, "K": 5}):
        a = rng.standard_normal((sizes["M"], sizes["K"])).astype(np.float32)
        b = rng.standard_normal((sizes["K"], sizes["N"])).astype(np.float32)
        out = kernel(A=a, B=b, sizes=sizes)
        np.testing.assert_allclose(out["C"], a @ b, rtol=1e-4, atol=1e-4)
