"""The C backend: emitted text, warning-free compilation of every construct, numerics through
ctypes, name validation, the harness, and AddressSanitizer runs of every example."""

from __future__ import annotations

import functools
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir.affine import AffineExpr
from xdsl.parser import Parser

from irkit.backends import build
from irkit.backends.c import AffinePrinter, emit_c, float_literal, int_literal
from irkit.backends.harness import ASAN_FLAGS, checksum, emit_harness, fill_values, run_harness
from irkit.backends.runner import CompiledKernel, divisibility
from irkit.context import make_context
from irkit.diagnostics import DiagnosticError
from irkit.kernel_abi import find_kernels
from irkit.names import MAX_LENGTH, name_problem

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.design"))
WERROR = ["-O3", "-march=native", "-fopenmp", "-Wall", "-Wextra", "-Werror"]


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """Every build of this module goes to a private cache directory."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IRKIT_CACHE_DIR", str(tmp_path_factory.mktemp("irkit-cache")))
        mp.delenv("IRKIT_CFLAGS", raising=False)
        yield


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text, "t.mlir").parse_module()
    module.verify()
    return module


def compile_werror(source: str) -> Path:
    return build.build_shared(source, WERROR)


def size(name: str, default: int | None = None) -> str:
    d = f", irkit.default = {default} : i64" if default is not None else ""
    return f'%{name}: index {{irkit.name = "{name}"{d}}}'


def tensor(name: str, role: str, shape: str, t: str = "memref<?x?xf32>", extra: str = "") -> str:
    return f'%{name}: {t} {{irkit.name = "{name}", irkit.role = "{role}", irkit.shape = {shape}{extra}}}'


ZERO = "affine_map<() -> (0)>()"
ID1 = "affine_map<(d0) -> (d0)>"

# Row sums, i tiled by 32 with a min() tail, the reduction loop vectorized.
ROWSUM = f"""
func.func @rowsum({size("M", 8)}, {size("N", 8)},
    {tensor("X", "input", "affine_map<()[s0, s1] -> (s0, s1)>", extra=", irkit.align = 64 : i64")},
    {tensor("s", "output", "affine_map<()[s0, s1] -> (s0)>", "memref<?xf32>")}) {{
  loop.for %io = {ZERO} to {ID1}(%M) step 32 {{loop_name = "io", stage = "s", parallel, origin = "r.design:3:4"}} {{
    loop.for %ii = {ZERO} to affine_map<(d0, d1) -> (32, d1 - d0)>(%io, %M) step 1 {{loop_name = "ii", stage = "s"}} {{
      %z = arith.constant 0.000000e+00 : f32
      loop.store %z, %s[affine_map<(d0, d1) -> (d0 + d1)>] (%io, %ii) : f32, memref<?xf32>
      loop.for %j = {ZERO} to {ID1}(%N) step 1 {{loop_name = "j", stage = "s", vector = 16 : i64}} {{
        %x = loop.load %X[affine_map<(d0, d1, d2) -> (d0 + d1, d2)>] (%io, %ii, %j) : memref<?x?xf32> -> f32
        %acc = loop.load %s[affine_map<(d0, d1) -> (d0 + d1)>] (%io, %ii) : memref<?xf32> -> f32
        %sum = arith.addf %acc, %x : f32
        loop.store %sum, %s[affine_map<(d0, d1) -> (d0 + d1)>] (%io, %ii) : f32, memref<?xf32>
      }}
    }}
  }}
  func.return
}}
"""

# A two-stage pipeline with a temporary, a column-major input, a parallel loop, a tiled
# vector loop, exp/sqrt/negf/maximumf, and a max reduction starting from -inf.
BLURMAX = f"""
func.func @blurmax({size("H", 8)}, {size("W", 16)},
    {tensor("inp", "input", "affine_map<()[s0, s1] -> (s0 + 2, s1 + 2)>")},
    {tensor("B", "input", "affine_map<()[s0, s1] -> (s0, s1)>", "memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>>")},
    {tensor("out", "output", "affine_map<()[s0, s1] -> (s0, s1)>", extra=", irkit.align = 64 : i64")},
    {tensor("m", "output", "affine_map<()[s0, s1] -> (s0)>", "memref<?xf32>")}) {{
  %bx = loop.alloc(%H, %W) {{tensor_name = "bx", shape = affine_map<()[s0, s1] -> (s0 + 2, s1)>}} : memref<?x?xf32>
  %three = arith.constant 3.000000e+00 : f32
  loop.for %y = {ZERO} to affine_map<(d0) -> (d0 + 2)>(%H) step 1 {{loop_name = "y", stage = "bx", unroll = 4 : i64}} {{
    loop.for %x = {ZERO} to {ID1}(%W) step 1 {{loop_name = "x", stage = "bx", vector = 8 : i64}} {{
      %a = loop.load %inp[affine_map<(d0, d1) -> (d0, d1)>] (%y, %x) : memref<?x?xf32> -> f32
      %b = loop.load %inp[affine_map<(d0, d1) -> (d0, d1 + 1)>] (%y, %x) : memref<?x?xf32> -> f32
      %c = loop.load %inp[affine_map<(d0, d1) -> (d0, d1 + 2)>] (%y, %x) : memref<?x?xf32> -> f32
      %s1 = arith.addf %a, %b : f32
      %s2 = arith.addf %s1, %c : f32
      %v = arith.divf %s2, %three : f32
      loop.store %v, %bx[affine_map<(d0, d1) -> (d0, d1)>] (%y, %x) : f32, memref<?x?xf32>
    }}
  }}
  loop.for %y = {ZERO} to {ID1}(%H) step 1 {{loop_name = "y", stage = "out", parallel, unroll = 2 : i64}} {{
    loop.for %xo = {ZERO} to {ID1}(%W) step 16 {{loop_name = "xo", stage = "out"}} {{
      loop.for %xi = {ZERO} to affine_map<(d0, d1) -> (16, d1 - d0)>(%xo, %W) step 1 {{loop_name = "xi", stage = "out", vector = 16 : i64}} {{
        %p = loop.load %bx[affine_map<(d0, d1, d2) -> (d0, d1 + d2)>] (%y, %xo, %xi) : memref<?x?xf32> -> f32
        %q = loop.load %bx[affine_map<(d0, d1, d2) -> (d0 + 1, d1 + d2)>] (%y, %xo, %xi) : memref<?x?xf32> -> f32
        %r = loop.load %bx[affine_map<(d0, d1, d2) -> (d0 + 2, d1 + d2)>] (%y, %xo, %xi) : memref<?x?xf32> -> f32
        %t = loop.load %B[affine_map<(d0, d1, d2) -> (d0, d1 + d2)>] (%y, %xo, %xi) : memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>> -> f32
        %u1 = arith.addf %p, %q : f32
        %u2 = arith.addf %u1, %r : f32
        %e = math.exp %u2 : f32
        %sq = math.sqrt %e : f32
        %n = arith.negf %sq : f32
        %mx = arith.maximumf %n, %t : f32
        loop.store %mx, %out[affine_map<(d0, d1, d2) -> (d0, d1 + d2)>] (%y, %xo, %xi) : f32, memref<?x?xf32>
      }}
    }}
  }}
  %ninf = arith.constant 0xFF800000 : f32
  loop.for %i = {ZERO} to {ID1}(%H) step 1 {{loop_name = "i", stage = "m", parallel}} {{
    loop.store %ninf, %m[{ID1}] (%i) : f32, memref<?xf32>
    loop.for %j = {ZERO} to {ID1}(%W) step 1 {{loop_name = "j", stage = "m", vector = 16 : i64}} {{
      %old = loop.load %m[{ID1}] (%i) : memref<?xf32> -> f32
      %o = loop.load %out[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %new = arith.maximumf %old, %o : f32
      loop.store %new, %m[{ID1}] (%i) : f32, memref<?xf32>
    }}
  }}
  loop.free %bx : memref<?x?xf32>
  func.return
}}
"""

# Floor semantics of floordiv / ceildiv / mod on negative numerators, and a lower bound max().
AFFINE = f"""
func.func @affine({size("N", 12)},
    {tensor("inp", "input", "affine_map<()[s0] -> (s0)>", "memref<?xf32>")},
    {tensor("a", "output", "affine_map<()[s0] -> (s0)>", "memref<?xf32>")},
    {tensor("b", "output", "affine_map<()[s0] -> (s0)>", "memref<?xf32>")},
    {tensor("c", "output", "affine_map<()[s0] -> (s0)>", "memref<?xf32>")}) {{
  loop.for %i = {ZERO} to {ID1}(%N) step 1 {{loop_name = "i"}} {{
    %x = loop.load %inp[affine_map<(d0) -> ((d0 - 3) mod 4)>] (%i) : memref<?xf32> -> f32
    loop.store %x, %a[{ID1}] (%i) : f32, memref<?xf32>
    %y = loop.load %inp[affine_map<(d0) -> ((d0 - 6) floordiv 4 + 2)>] (%i) : memref<?xf32> -> f32
    loop.store %y, %b[{ID1}] (%i) : f32, memref<?xf32>
    %z = loop.load %inp[affine_map<(d0) -> ((d0 - 6) ceildiv 4 + 1)>] (%i) : memref<?xf32> -> f32
    loop.store %z, %c[{ID1}] (%i) : f32, memref<?xf32>
  }}
  loop.for %k = affine_map<(d0) -> (0, d0 - 4)>(%N) to {ID1}(%N) step 1 {{loop_name = "k"}} {{
    %w = loop.load %inp[{ID1}] (%k) : memref<?xf32> -> f32
    %w2 = arith.addf %w, %w : f32
    loop.store %w2, %c[{ID1}] (%k) : f32, memref<?xf32>
  }}
  func.return
}}
"""

# i32 arithmetic (wrapping), max/min, an unused size, a 3-D tensor stored in order [2, 0, 1].
INTS = f"""
func.func @ints({size("N", 5)}, {size("K", 3)}, {size("Unused", 1)},
    {tensor("p", "input", "affine_map<()[s0, s1, s2] -> (s0, s1, 2)>", "memref<?x?x?xi32, affine_map<(d0, d1, d2) -> (d2, d0, d1)>>")},
    {tensor("q", "output", "affine_map<()[s0, s1, s2] -> (s0, s1, 2)>", "memref<?x?x?xi32>")}) {{
  %big = arith.constant 2147483647 : i32
  %seven = arith.constant -7 : i32
  loop.for %i = {ZERO} to {ID1}(%N) step 1 {{loop_name = "i", parallel}} {{
    loop.for %j = {ZERO} to {ID1}(%K) step 1 {{loop_name = "j", unroll = 2 : i64}} {{
      loop.for %l = {ZERO} to affine_map<() -> (2)>() step 1 {{loop_name = "l"}} {{
        %v = loop.load %p[affine_map<(d0, d1, d2) -> (d0, d1, d2)>] (%i, %j, %l) : memref<?x?x?xi32, affine_map<(d0, d1, d2) -> (d2, d0, d1)>> -> i32
        %w = arith.addi %v, %big : i32
        %m = arith.muli %w, %seven : i32
        %mx = arith.maxsi %m, %v : i32
        %d = arith.divsi %mx, %seven : i32
        %s = arith.subi %d, %v : i32
        loop.store %s, %q[affine_map<(d0, d1, d2) -> (d0, d1, d2)>] (%i, %j, %l) : i32, memref<?x?x?xi32>
      }}
    }}
  }}
  func.return
}}
"""

# f64 math, a vector loop whose iterations depend on each other (no simd pragma), vector + unroll.
F64 = f"""
func.func @dbl({size("N", 9)},
    {tensor("x", "input", "affine_map<()[s0] -> (s0)>", "memref<?xf64>")},
    {tensor("y", "output", "affine_map<()[s0] -> (s0 + 1)>", "memref<?xf64>")}) {{
  %half = arith.constant 5.000000e-01 : f64
  %zero = arith.constant 0.000000e+00 : f64
  loop.store %zero, %y[affine_map<(d0) -> (0)>] (%N) : f64, memref<?xf64>
  loop.for %i = {ZERO} to {ID1}(%N) step 1 {{loop_name = "i", vector = 4 : i64, unroll = 2 : i64}} {{
    %prev = loop.load %y[{ID1}] (%i) : memref<?xf64> -> f64
    %v = loop.load %x[{ID1}] (%i) : memref<?xf64> -> f64
    %e = math.exp %v : f64
    %s = math.sqrt %e : f64
    %t = arith.mulf %s, %half : f64
    %u = arith.addf %prev, %t : f64
    loop.store %u, %y[affine_map<(d0) -> (d0 + 1)>] (%i) : f64, memref<?xf64>
  }}
  func.return
}}
"""

KERNELS = {"rowsum": ROWSUM, "blurmax": BLURMAX, "affine": AFFINE, "ints": INTS, "dbl": F64}


def one_kernel(text: str) -> tuple[ModuleOp, CompiledKernel]:
    module = parse(text)
    return module, CompiledKernel(find_kernels(module)[0], build.load_library(compile_werror(emit_c(module))))


# ---------------------------------------------------------------- C text


def test_signature_restrict_const_and_strides():
    src = emit_c(parse(BLURMAX))
    assert (
        "void irkit_blurmax(int64_t H, int64_t W, const float *restrict inp, const float *restrict B, "
        "float *restrict out, float *restrict m)" in src
    )
    assert "const int64_t inp_s0 = W + 2;" in src
    assert "const int64_t B_s1 = H;" in src  # column-major: element (y, x) at x*H + y
    assert "B[(xo + xi)*B_s1 + y]" in src
    assert "out = (float *)__builtin_assume_aligned(out, 64);" in src
    assert src.startswith("/* Generated by irkit")


def test_loops_pragmas_and_reductions():
    src = emit_c(parse(BLURMAX))
    assert "#pragma omp parallel for schedule(static)\n    for (int64_t y = 0; y < H; y += 1) {" in src
    assert "#pragma omp simd simdlen(16)" in src
    assert "xi < irkit_min_i64(16, W - xo)" in src
    assert "#pragma GCC unroll 4\n    for (int64_t y = 0; y < H + 2; y += 1) {" in src
    assert "/* unroll 2 not applied: GCC cannot combine it with an OpenMP loop pragma */" in src
    assert "float m_acc = m[i];" in src
    assert "#pragma omp simd reduction(irkit_maximumf:m_acc) simdlen(16)" in src
    assert "m_acc = irkit_maximumf(m_acc, o);" in src
    assert "m[i] = m_acc;" in src
    assert "m[i] = (-INFINITY);" in src
    assert "const float e = expf(u2);" in src and "sqrtf(e)" in src


def test_temporaries_are_exactly_sized_and_freed():
    src = emit_c(parse(BLURMAX))
    assert 'float *restrict bx = (float *)irkit_alloc((H + 2) * W, sizeof(float), 64, "bx");' in src
    assert "free(bx);" in src
    assert "posix_memalign" in src and src.index("#define _POSIX_C_SOURCE") < src.index("#include")


def test_dependent_vector_loop_gets_no_simd():
    src = emit_c(parse(F64))
    assert "#pragma omp simd" not in src
    assert "vectorize 4 not asserted" in src
    assert "#pragma GCC unroll 2" in src  # no OpenMP pragma, so the unroll stays
    assert "exp(v)" in src and "expf" not in src


def test_unused_size_is_voided_and_ints_wrap():
    src = emit_c(parse(INTS))
    assert "(void)Unused;" in src
    assert "irkit_add_i32(v, 2147483647)" in src
    assert "irkit_mul_i32(w, (-7))" in src
    assert "irkit_max_i32(m, v)" in src


def test_unused_pure_values_are_dropped():
    text = ROWSUM.replace(
        "%sum = arith.addf %acc, %x : f32", "%sum = arith.addf %acc, %x : f32\n        %dead = arith.mulf %x, %x : f32"
    )
    src = emit_c(parse(text))
    assert "dead" not in src and "x * x" not in src


def test_dead_code_goes_before_planning_and_the_module_is_not_touched():
    """xDSL's dead-code elimination prunes a copy of the module: an unused load, an unused chain
    of arith ops (one of them, arith.extsi, without effect traits in xDSL) go, and the plans see
    the pruned IR (the reduction stays a reduction, whatever the dead load)."""
    text = ROWSUM.replace(
        "%sum = arith.addf %acc, %x : f32",
        "%sum = arith.addf %acc, %x : f32\n"
        "        %again = loop.load %s[affine_map<(d0, d1) -> (d0 + d1)>] (%io, %ii) : memref<?xf32> -> f32\n"
        "        %deadi = arith.fptosi %again : f32 to i32\n"
        "        %deadw = arith.extsi %deadi : i32 to i64",
    )
    module = parse(text)
    before = str(module)
    src = emit_c(module)
    assert str(module) == before
    assert src == emit_c(parse(ROWSUM))
    assert "#pragma omp simd reduction(+:s_acc)" in src


def test_a_kernel_without_dead_code_is_written_as_it_is():
    """Lowering leaves no dead code: the emitter then writes the caller's module without copying
    it, and must leave it as it was (the same IR, the same C a second time)."""
    from irkit.backends.c_plan import has_dead_code

    module = parse(ROWSUM)
    kernels = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    assert not any(has_dead_code(k) for k in kernels)
    before = str(module)
    first = emit_c(module)
    assert str(module) == before
    assert emit_c(module) == first


def test_an_unused_op_the_backend_cannot_write_is_still_refused():
    """xDSL knows `affine.apply` is pure, but the dead-code elimination keeps ops of dialects
    the C backend does not write, so they are refused rather than silently dropped."""
    from irkit.tools.opt import make_full_context

    text = ROWSUM.replace(
        "%sum = arith.addf %acc, %x : f32",
        "%sum = arith.addf %acc, %x : f32\n        %k = affine.apply affine_map<(d0) -> (d0 + 1)>(%j)",
    )
    module = Parser(make_full_context(), text, "t.mlir").parse_module()
    with pytest.raises(DiagnosticError, match="no C translation for 'affine.apply'"):
        emit_c(module)


def test_loop_ops_declare_their_memory_effects():
    """What xDSL's `dce` may remove: an unused load; never a loop, a store, an allocation."""
    from xdsl.context import Context
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    text = f"""
func.func @k({size("N", 4)}, {tensor("a", "input", "affine_map<()[s0] -> (s0)>", "memref<?xf32>")},
    {tensor("b", "output", "affine_map<()[s0] -> (s0)>", "memref<?xf32>")}) {{
  %t = loop.alloc(%N) {{tensor_name = "t", shape = affine_map<()[s0] -> (s0)>}} : memref<?xf32>
  %l = loop.local {{tensor_name = "l"}} : memref<4xf32>
  loop.for %i = {ZERO} to {ID1}(%N) step 1 {{loop_name = "i"}} {{
    %x = loop.load %a[{ID1}] (%i) : memref<?xf32> -> f32
    %y = arith.addf %x, %x : f32
  }}
  loop.for %j = {ZERO} to {ID1}(%N) step 1 {{loop_name = "j"}} {{
    %z = loop.load %a[{ID1}] (%j) : memref<?xf32> -> f32
    loop.store %z, %b[{ID1}] (%j) : f32, memref<?xf32>
  }}
  loop.free %t : memref<?xf32>
  func.return
}}
"""
    module = parse(text)
    DeadCodeElimination().apply(Context(), module)
    names = [op.name for op in module.walk()]
    assert names.count("loop.load") == 1 and "arith.addf" not in names
    assert names.count("loop.for") == 2 and {"loop.store", "loop.alloc", "loop.local", "loop.free"} <= set(names)


def test_language_hooks_change_the_text_exactly_where_they_print():
    """Another C-like target is a `CLanguage` subclass: overriding a hook changes those lines only."""
    from irkit.backends.c_language import CLanguage

    class Restrict(CLanguage):
        restrict = "__restrict__"

    class Acc(CLanguage):
        def pragma(self, directive: str) -> str:
            return f"#pragma acc {directive}"

    class Global(CLanguage):
        def kernel_signature(self, symbol, params):
            return "__global__ " + super().kernel_signature(symbol, params)

    module = parse(BLURMAX)
    plain = emit_c(module)
    assert emit_c(module, language=CLanguage()) == plain
    restricted = emit_c(module, language=Restrict())
    assert plain.count("*restrict ") == 5  # four arguments and the temporary
    assert restricted == plain.replace("*restrict ", "*__restrict__ ")
    rowsum = emit_c(parse(ROWSUM))
    assert rowsum.count("#pragma omp ") == 2 and "declare reduction" not in rowsum
    assert emit_c(parse(ROWSUM), language=Acc()) == rowsum.replace("#pragma omp ", "#pragma acc ")
    changed = [
        (a, b) for a, b in zip(plain.splitlines(), emit_c(module, language=Global()).splitlines()) if a != b
    ]
    assert [b for _, b in changed] == ["__global__ " + changed[0][0]] and changed[0][0].startswith("void irkit_blurmax(")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_construct_compiles_warning_free(name):
    compile_werror(emit_c(parse(KERNELS[name])))


def test_several_kernels_in_one_module():
    text = "builtin.module {\n" + ROWSUM + AFFINE + "}\n"
    src = emit_c(parse(text))
    assert src.count("void irkit_") == 2
    compile_werror(src)


# ---------------------------------------------------------------- affine and literals


def test_affine_printer():
    used: list[str] = []
    p = AffinePrinter(used.append)
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    assert p.expr(d0 + d1 * 4 - 3, ["i", "j"]) == "i + 4*j - 3"
    assert p.expr(d0 * -1 + d1, ["i", "j"]) == "-i + j"
    assert p.expr(d0 + d1, ["i", 5]) == "i + 5"
    assert p.expr((d0 - 1) // 4, ["i"]) == "irkit_floordiv(i - 1, 4)"
    assert p.expr(d0 % 3, [7]) == "1"
    assert p.expr((d0 * 0) + 0, ["i"]) == "0"
    assert used == ["irkit_floordiv"]


def test_literals():
    from xdsl.dialects.builtin import IndexType, f32, f64, i32

    assert float_literal(3.0, f32) == "3.0f"
    assert float_literal(-0.5, f64) == "(-0.5)"
    assert float_literal(math.inf, f32) == "INFINITY"
    assert float_literal(-math.inf, f64) == "(-INFINITY)"
    assert float_literal(math.nan, f32) == "NAN"
    assert float_literal(1e-40, f64) == "1e-40"
    assert int_literal(-(2**31), i32) == "INT32_MIN"
    assert int_literal(2**40, IndexType()) == "INT64_C(1099511627776)"
    assert int_literal(-3, i32) == "(-3)"


# ---------------------------------------------------------------- numerics via ctypes


def test_rowsum_runs():
    _, k = one_kernel(ROWSUM)
    X = np.random.default_rng(0).standard_normal((37, 53)).astype(np.float32)
    out = k.run({"X": X}, {"M": 37, "N": 53})
    np.testing.assert_allclose(out["s"], X.sum(axis=1, dtype=np.float64), rtol=1e-5, atol=1e-5)


def test_blurmax_runs():
    _, k = one_kernel(BLURMAX)
    H, W = 13, 37
    rng = np.random.default_rng(1)
    inp = rng.uniform(-1, 1, (H + 2, W + 2)).astype(np.float32)
    B = np.asfortranarray(rng.uniform(-1, 1, (H, W)).astype(np.float32))
    out = k.run({"inp": inp, "B": B}, {"H": H, "W": W})
    bx = (inp[:, :-2] + inp[:, 1:-1] + inp[:, 2:]) / np.float32(3)
    expect = np.maximum(-np.sqrt(np.exp(bx[:-2] + bx[1:-1] + bx[2:])), B)
    np.testing.assert_allclose(out["out"], expect, rtol=1e-5)
    np.testing.assert_allclose(out["m"], expect.max(axis=1), rtol=1e-5)


def test_affine_floor_semantics_run():
    _, k = one_kernel(AFFINE)
    n = 12
    inp = np.arange(n, dtype=np.float32) * 10
    out = k.run({"inp": inp}, {"N": n})
    i = np.arange(n)
    np.testing.assert_array_equal(out["a"], inp[(i - 3) % 4])
    np.testing.assert_array_equal(out["b"], inp[(i - 6) // 4 + 2])
    c = inp[-((6 - i) // 4) + 1]
    c[n - 4 :] = 2 * inp[n - 4 :]
    np.testing.assert_array_equal(out["c"], c)


def test_ints_run_with_wrapping_and_permuted_layout():
    _, k = one_kernel(INTS)
    N, K = 5, 3
    p_store = np.random.default_rng(2).integers(-50, 50, (2, N, K)).astype(np.int32)
    p = p_store.transpose(1, 2, 0)  # logical (N, K, 2), stored with dimension 2 outermost
    out = k.run({"p": p}, {"N": N, "K": K})
    with np.errstate(over="ignore"):
        w = p + np.int32(2**31 - 1)
        m = w * np.int32(-7)
    mx = np.maximum(m, p)
    d = np.trunc(mx.astype(np.float64) / -7).astype(np.int32)
    np.testing.assert_array_equal(out["q"], d - p)


def test_f64_dependent_loop_runs():
    _, k = one_kernel(F64)
    x = np.linspace(-1, 1, 9)
    out = k.run({"x": x}, {"N": 9})
    np.testing.assert_allclose(out["y"], np.concatenate([[0], np.cumsum(np.sqrt(np.exp(x)) * 0.5)]), rtol=1e-12)


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    "name, problem",
    [
        ("A", None),
        ("x_1", None),
        ("int", "keyword"),
        ("restrict", "keyword"),
        ("_x", "reserved"),
        ("__x", "reserved"),
        ("free", "standard header"),
        ("expf", "standard header"),
        ("INFINITY", "standard header"),
        ("int64_t", "standard header"),
        ("irkit_gemm", "reserved for generated code"),
        ("a-b", "letter followed by"),
        ("1a", "letter followed by"),
        ("é", "letter followed by"),
        ("", "empty"),
        ("a" * (MAX_LENGTH + 1), "characters"),
    ],
)
def test_name_rules(name, problem):
    found = name_problem(name)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


@pytest.mark.parametrize(
    "old, new, what",
    [
        ('irkit.name = "X"', 'irkit.name = "int"', "tensor name 'int'"),
        ("@rowsum(", "@_rowsum(", "kernel name '_rowsum'"),
        ('loop_name = "j"', 'loop_name = "free"', "loop name 'free'"),
        ('irkit.name = "M"', 'irkit.name = "M N"', "size name 'M N'"),
    ],
)
def test_bad_names_are_located_diagnostics(old, new, what):
    text = ROWSUM.replace(old, new, 1).replace("func.return\n}", 'func.return\n} loc("doc.design":7:3)')
    with pytest.raises(DiagnosticError) as info:
        emit_c(parse(text))
    diag = info.value.diagnostics[0]
    assert what in diag.message and "cannot be used in C" in diag.message
    if "loop" not in what:
        assert (diag.file, diag.line) == ("doc.design", 7)


def test_bad_temporary_name():
    with pytest.raises(DiagnosticError, match="temporary name 'b x'"):
        emit_c(parse(BLURMAX.replace('tensor_name = "bx"', 'tensor_name = "b x"')))


def test_unlowered_ir_is_refused():
    text = 'builtin.module {\n  "test.op"() : () -> ()\n}'
    ctx = make_context()
    ctx.allow_unregistered = True
    with pytest.raises(DiagnosticError, match="not loop-level IR"):
        emit_c(Parser(ctx, text).parse_module())
    with pytest.raises(DiagnosticError, match="no kernel"):
        emit_c(parse("builtin.module {}"))


# ---------------------------------------------------------------- harness


def test_harness_checksums_match_a_ctypes_run():
    module, k = one_kernel(BLURMAX)
    sizes = {"H": 11, "W": 29}
    result = run_harness(module, "blurmax", sizes, ["-O2", "-fopenmp"])
    assert result.returncode == 0, result.stderr
    inputs = {name: fill_values(k.kernel, name, sizes) for name in ("inp", "B")}
    out = k.run(inputs, sizes)
    for name in ("out", "m"):
        want = checksum(out[name])
        got = result.checksums[name]
        assert got == pytest.approx(want, rel=1e-5), name


def test_harness_source_compiles_warning_free():
    module = parse(INTS)
    src = emit_harness(module, None, {"N": 4, "K": 3})
    build.build_executable({"kernel": emit_c(module), "main": src}, WERROR)
    assert "irkit_poison_i32(buf_q, n_buf_q);" in src


@functools.cache
def asan_available() -> str | None:
    """None if the compiler builds and runs an AddressSanitizer program, else why not."""
    try:
        exe = build.build_executable({"main": "int main(void) { return 0; }\n"}, ASAN_FLAGS)
    except DiagnosticError as exc:
        return f"the C compiler cannot build with -fsanitize=address: {exc}"
    done = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    return None if done.returncode == 0 else f"AddressSanitizer programs do not run here: {done.stderr[:200]}"


def asan_or_skip() -> None:
    if shutil.which("cc") is None and not build.os.environ.get("CC"):
        pytest.skip("no C compiler")
    reason = asan_available()
    if reason:
        pytest.skip(reason)


def test_asan_catches_an_off_by_one():
    """The ASan run can fail: a store one element past the end of an output is reported."""
    asan_or_skip()
    bad = ROWSUM.replace(
        "loop.store %z, %s[affine_map<(d0, d1) -> (d0 + d1)>]",
        "loop.store %z, %s[affine_map<(d0, d1) -> (d0 + d1 + 1)>]",
    )
    result = run_harness(parse(bad), "rowsum", {"M": 37, "N": 5}, ASAN_FLAGS)
    assert result.returncode != 0
    assert "AddressSanitizer" in result.stderr and "heap-buffer-overflow" in result.stderr


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_asan_hand_written_kernels(name):
    asan_or_skip()
    module = parse(KERNELS[name])
    result = run_harness(module, None, None, ASAN_FLAGS)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.checksums and all(math.isfinite(v) for s in result.checksums.values() for v in s)


# ---------------------------------------------------------------- the examples


def _lower(path: Path) -> ModuleOp:
    from irkit.frontend import parse_design
    from irkit.passes.registry import all_passes
    from irkit.tools.opt import make_full_context
    from irkit.tools.pipeline import parse as parse_pipeline

    passes = all_passes()
    if "lower-tensorop" not in passes:
        pytest.skip("lower-tensorop is not available yet")
    module = parse_design(path.read_text(), str(path.relative_to(ROOT)))
    ctx = make_full_context()
    for p in parse_pipeline("lower-design,lower-tensorop", passes):
        p.apply(ctx, module)
    module.verify()
    return module


_LOWERED: dict[str, ModuleOp] = {}


def lowered(path: Path) -> ModuleOp:
    if path.name not in _LOWERED:
        _LOWERED[path.name] = _lower(path)
    return _LOWERED[path.name]


ODD_SIZES = [37, 53, 29, 11, 7, 5, 3]


def small_sizes(module: ModuleOp) -> dict[str, int]:
    """Small odd sizes, in the order the document declares them, rounded up to its divisibility assumptions."""
    from irkit.kernel_abi import kernel_args

    kernel = find_kernels(module)[0]
    sizes, _ = kernel_args(kernel)
    div = divisibility(kernel)
    out = {}
    for i, s in enumerate(sizes):
        v = ODD_SIZES[i % len(ODD_SIZES)] if (s.default or 2) > 1 else 1
        d = div.get(s.name, 1)
        out[s.name] = -(-v // d) * d
    return out


def test_examples_exist():
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_compiles_warning_free(path):
    src = emit_c(lowered(path))
    assert f"void irkit_{path.stem}(" in src
    compile_werror(src)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_under_address_sanitizer(path):
    asan_or_skip()
    module = lowered(path)
    result = run_harness(module, None, small_sizes(module), ASAN_FLAGS)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "AddressSanitizer" not in result.stderr
    # Every output element was written (the harness poisons outputs with NaN first).
    assert result.checksums and all(math.isfinite(v) for s in result.checksums.values() for v in s)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_numpy_reference(path):
    reference = pytest.importorskip("irkit.reference")
    module = lowered(path)
    design = parse_design_module(path)
    sizes = small_sizes(module)
    inputs = reference.random_inputs(design, sizes, seed=3)
    expect = reference.evaluate_design(design, inputs, sizes)
    kernel = CompiledKernel.build(module)
    got = kernel.run(inputs, sizes)
    lengths = reference.reduction_lengths(design, sizes)
    for name, want in expect.items():
        atol, rtol = reference.tolerance(want.dtype, lengths.get(name, 1))
        np.testing.assert_allclose(got[name], want, atol=atol, rtol=rtol, err_msg=name)


def parse_design_module(path: Path) -> ModuleOp:
    from irkit.frontend import parse_design

    return parse_design(path.read_text(), str(path))
