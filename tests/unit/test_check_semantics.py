"""`irkit-opt --check-semantics`, the semantic check behind it and the loop interpreter.

(a) the normal pipeline keeps every example's results, with compiled C and
with the interpreter; (b) deliberately wrong passes are named, with the
first differing element; (c) the interpreter agrees with compiled C;
(d) a missing compiler, non-kernel IR and bad options give notes or
located errors, never a traceback.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp
from xdsl.ir.affine import AffineMap
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from irkit.api import lower
from irkit.backends.build import find_compiler
from irkit.checks.semantics import (
    SIZE_TARGETS,
    CheckSetupError,
    choose_sizes,
    classify,
    first_difference,
    run_compiled,
)
from irkit.context import make_context
from irkit.diagnostics import DiagnosticError
from irkit.dialects.loop import StoreOp
from irkit.frontend import parse_design
from irkit.oracle.loop_interp import LoopInterpError, UnsupportedIR, run_loop_kernel
from irkit.passes import registry
from irkit.reference import evaluate_design, random_inputs, reduction_lengths, resolve_sizes
from irkit.tools.opt import expand_check_option, main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.design"))
PIPELINE = "lower-design,lower-tensorop,apply-schedule"


def _has_compiler() -> bool:
    try:
        find_compiler()
    except DiagnosticError:
        return False
    return True


HAS_CC = _has_compiler()
needs_cc = pytest.mark.skipif(not HAS_CC, reason="no C compiler")


@pytest.fixture(scope="module", autouse=True)
def _environment(tmp_path_factory):
    """A private build cache (compiled once for the module) and no tracebacks from irkit-opt."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IRKIT_CACHE_DIR", str(tmp_path_factory.mktemp("irkit-cache")))
        mp.delenv("IRKIT_TRACEBACK", raising=False)
        yield


def run_opt(capsys, *args: str) -> tuple[int, str, str]:
    status = main([*args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


# ------------------------------------------------------------------ wrong passes


@dataclass(frozen=True)
class AddBecomesSub(ModulePass):
    """Wrong on purpose: the first `arith.addf` of the module becomes `arith.subf`."""

    name = "test-add-becomes-sub"

    def apply(self, ctx, op):
        for add in op.walk():
            if isinstance(add, arith.AddfOp):
                Rewriter.replace_op(add, arith.SubfOp(add.lhs, add.rhs))
                return


@dataclass(frozen=True)
class SwapStoreIndices(ModulePass):
    """Wrong on purpose: the two indices of the last 2-D `loop.store` trade places."""

    name = "test-swap-store"

    def apply(self, ctx, op):
        stores = [s for s in op.walk() if isinstance(s, StoreOp) and len(s.map.data.results) == 2]
        amap = stores[-1].map.data
        swapped = AffineMap(amap.num_dims, amap.num_symbols, (amap.results[1], amap.results[0]))
        stores[-1].properties["map"] = AffineMapAttr(swapped)


@dataclass(frozen=True)
class SwapFirstStore(SwapStoreIndices):
    """Wrong on purpose: the first 2-D `loop.store` (the zero fill of a `+=` statement)."""

    name = "test-swap-first-store"

    def apply(self, ctx, op):
        store = next(s for s in op.walk() if isinstance(s, StoreOp) and len(s.map.data.results) == 2)
        amap = store.map.data
        store.properties["map"] = AffineMapAttr(AffineMap(amap.num_dims, 0, (amap.results[1], amap.results[0])))


@pytest.fixture
def wrong_passes(monkeypatch):
    """The wrong passes, registered where irkit-opt looks passes up."""
    for cls in (AddBecomesSub, SwapStoreIndices, SwapFirstStore):
        monkeypatch.setitem(registry.IRKIT_PASSES, cls.name, lambda cls=cls: cls)


# ------------------------------------------------------------------ (a) the pipeline


@pytest.mark.parametrize("engine", ["auto", "interp"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_pipeline_keeps_results(path, engine, capsys):
    status, out, err = run_opt(capsys, str(path), "-p", PIPELINE, f"--check-semantics={engine}", "-o", os.devnull)
    assert status == 0, err
    assert "results agree after passes 'lower-design', 'lower-tensorop', 'apply-schedule'" in err
    assert "error" not in err
    expected = "compiled C" if engine == "auto" and HAS_CC else "the loop interpreter"
    assert expected in err


def test_sizes_are_small_and_respect_assumptions():
    text = (ROOT / "examples/gemm.design").read_text().replace("noalias(A, B, C)", "noalias(A, B, C); N % 4 == 0")
    program = classify(parse_design(text, "gemm.design"))
    assert program.level == "design"
    assert choose_sizes(program) == {"M": SIZE_TARGETS[0], "N": 8, "K": SIZE_TARGETS[2]}
    assert choose_sizes(program, {"K": 3})["K"] == 3
    with pytest.raises(CheckSetupError, match="N % 4 == 0"):
        choose_sizes(program, {"N": 6})
    with pytest.raises(CheckSetupError, match="no such size"):
        choose_sizes(program, {"Q": 6})


def test_sizes_grow_until_every_shape_is_positive():
    doc = """design crop {
  sizes { H = 100 }
  tensor a : f32[H] input
  tensor b : f32[H - 8] output
  b[i] = a[i + 8]
}
"""
    program = classify(parse_design(doc, "crop.design"))
    assert choose_sizes(program) == {"H": 10}  # 5 gives b no element, 10 does


# ------------------------------------------------------------------ (b) wrong passes


def _first_bad(expected: np.ndarray, actual: np.ndarray) -> tuple[int, ...]:
    """The first element (row-major) that is not close, computed without the checker."""
    bad = ~np.isclose(actual, expected, rtol=1e-4, atol=1e-5, equal_nan=True)
    return tuple(int(k) for k in np.argwhere(bad)[0])


def test_wrong_pass_is_named_with_the_first_differing_element(capsys, wrong_passes):
    # Square sizes keep the swapped store in bounds: the kernel copies instead of transposing.
    path = ROOT / "examples/transpose.design"
    square = ["--check-semantics-size", "M=6", "--check-semantics-size", "N=6"]
    status, _, err = run_opt(
        capsys, str(path), "-p", f"{PIPELINE},test-swap-store", "--check-semantics=interp", *square, "-o", os.devnull
    )
    assert status == 1
    m = re.search(
        r"(\S+):(\d+):\d+: error: pass 'test-swap-store' changed the results: "
        r"B\[(\d+), (\d+)\] = (\S+) before, (\S+) after \(sizes M=6, N=6\)",
        err,
    )
    assert m, err
    assert m.group(1) == str(path) and int(m.group(2)) == 12  # the line `B = transpose(A, ...)`
    # The same element, found independently: the oracle against the wrong kernel.
    module = parse_design(path.read_text(), str(path))
    levels = lower(module)
    SwapStoreIndices().apply(make_context(), levels["loop"])
    sizes = {"M": 6, "N": 6}
    inputs = random_inputs(module, sizes, seed=0)
    expected = evaluate_design(module, inputs, sizes)["B"]
    actual = run_loop_kernel(levels["loop"], inputs, sizes)["B"]
    index = _first_bad(expected, actual)
    assert (int(m.group(3)), int(m.group(4))) == index == (0, 1)
    assert float(m.group(5)) == pytest.approx(float(expected[index]))
    assert float(m.group(6)) == pytest.approx(float(actual[index]))
    assert "note: the loop interpreter" not in err  # notes say what ran, in their own words
    assert "before: the loop interpreter on loop IR; after: the loop interpreter on loop IR" in err


def _crossing(example: str, *names: str) -> tuple[int, ...]:
    """The sizes the check picks for an example when it runs compiled C: through every tile,
    register block and tail of its schedule (irkit.checks.crossing_sizes)."""
    from irkit.checks.crossing_sizes import crossing_sizes

    path = ROOT / "examples" / f"{example}.design"
    found = crossing_sizes(parse_design(path.read_text(), str(path)), {})
    return tuple(found[n] for n in names)


@pytest.mark.parametrize("engine", ["auto", "interp"])
def test_wrong_arithmetic_is_caught_at_every_level(engine, capsys, wrong_passes):
    blur = str(ROOT / "examples/blur.design")
    status, _, err = run_opt(
        capsys, blur, "-p", f"{PIPELINE},test-add-becomes-sub", f"--check-semantics={engine}", "-o", os.devnull
    )
    assert status == 1
    h, w = (5, 7) if engine == "interp" or not HAS_CC else _crossing("blur", "H", "W")
    assert re.search(
        r"blur\.design:15:3: error: pass 'test-add-becomes-sub' changed the results: out\[0, 0\] = \S+ before, "
        rf"\S+ after \(sizes H={h}, W={w}\)",
        err,
    ), err
    assert f"note: {h * w} of {h * w} elements of 'out' differ" in err
    # At the tensorop level the oracle runs both sides.
    status, _, err = run_opt(
        capsys, blur, "-p", "lower-design,test-add-becomes-sub,lower-tensorop", "--check-semantics", "-o", os.devnull
    )
    assert status == 1
    assert "pass 'test-add-becomes-sub' changed the results: out[0, 0]" in err
    assert "the numpy oracle on tensorop IR" in err


@pytest.mark.parametrize("engine", ["auto", "interp"])
def test_out_of_bounds_store_is_reported_not_a_crash(engine, capsys, wrong_passes):
    gemm = str(ROOT / "examples/gemm.design")
    status, _, err = run_opt(
        capsys, gemm, "-p", "lower-design,lower-tensorop,test-swap-first-store", f"--check-semantics={engine}"
    )
    assert status == 1
    assert "error: pass 'test-swap-first-store' broke the program" in err
    m, n = (5, 7) if engine == "interp" or not HAS_CC else _crossing("gemm", "M", "N")
    assert f"store out of bounds: C[{m}, 0] is outside its shape [{m}, {n}]" in err
    if engine == "auto" and HAS_CC:  # what the compiled C does with the stray store varies from run to run
        assert any(words in err for words in ("the compiled kernel crashed", "changed the results", " before, "))


def test_print_ir_after_failure_shows_both_sides(capsys, wrong_passes):
    status, _, err = run_opt(
        capsys,
        str(ROOT / "examples/rowsum.design"),
        "-p",
        "lower-design,lower-tensorop,test-add-becomes-sub",
        "--check-semantics=interp",
        "--print-ir-after-failure",
    )
    assert status == 1
    assert "IR before test-add-becomes-sub (it changed the results)" in err
    assert "IR after test-add-becomes-sub" in err


# ------------------------------------------------------------------ (c) interpreter and C


@functools.cache
def _loop_level(name: str) -> tuple[ModuleOp, ModuleOp]:
    """An example's design IR and its scheduled loop IR (lowered once)."""
    path = ROOT / "examples" / f"{name}.design"
    module = parse_design(path.read_text(), str(path))
    return module, lower(module)["loop"]


@needs_cc
@pytest.mark.parametrize("name", ["batch_matmul", "blur", "conv2d", "gemm", "softmax"])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_interpreter_agrees_with_compiled_c(name, data):
    design, loop = _loop_level(name)
    sizes = {
        size: data.draw(st.integers(1, 3 if name == "conv2d" else 11), label=size) for size in resolve_sizes(design)
    }
    inputs = random_inputs(design, sizes, seed=data.draw(st.integers(0, 3), label="seed"))
    compiled = run_compiled(loop, inputs, sizes)
    interpreted = run_loop_kernel(loop, inputs, sizes)
    lengths = reduction_lengths(design, sizes)
    for tensor, c_out in compiled.items():
        assert not np.isnan(c_out).any()
        assert first_difference(c_out, interpreted[tensor], lengths[tensor], factor=2.0) is None, tensor


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


# i32 arithmetic that wraps and a tensor stored in order [2, 0, 1] (tests/filecheck/backends/c-kernels.mlir).
INTS = """
func.func @ints(%N: index {irkit.name = "N", irkit.default = 5 : i64}, %K: index {irkit.name = "K", irkit.default = 3 : i64},
    %p: memref<?x?x?xi32, affine_map<(d0, d1, d2) -> (d2, d0, d1)>> {irkit.name = "p", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1, 2)>},
    %q: memref<?x?x?xi32> {irkit.name = "q", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1, 2)>}) {
  %big = arith.constant 2147483647 : i32
  %seven = arith.constant -7 : i32
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", parallel} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "j"} {
      loop.for %l = affine_map<() -> (0)>() to affine_map<() -> (2)>() step 1 {loop_name = "l"} {
        %v = loop.load %p[affine_map<(d0, d1, d2) -> (d0, d1, d2)>] (%i, %j, %l) : memref<?x?x?xi32, affine_map<(d0, d1, d2) -> (d2, d0, d1)>> -> i32
        %w = arith.addi %v, %big : i32
        %m = arith.muli %w, %seven : i32
        %mx = arith.maxsi %m, %v : i32
        %d = arith.divsi %mx, %seven : i32
        %r = arith.remsi %mx, %seven : i32
        %s = arith.subi %d, %r : i32
        loop.store %s, %q[affine_map<(d0, d1, d2) -> (d0, d1, d2)>] (%i, %j, %l) : i32, memref<?x?x?xi32>
      }
    }
  }
  func.return
}
"""


@needs_cc
def test_interpreter_agrees_with_c_on_wrapping_integers_and_layouts():
    module = _parse(INTS)
    rng = np.random.default_rng(1)
    inputs = {"p": rng.integers(-(2**31), 2**31, size=(5, 3, 2), dtype=np.int32)}
    compiled = run_compiled(module, inputs, {"N": 5, "K": 3})
    interpreted = run_loop_kernel(module, inputs, {"N": 5, "K": 3})
    np.testing.assert_array_equal(compiled["q"], interpreted["q"])


# Bounds: the lower bound is the max of its map's results, the upper the min; step 3.
BOUNDS = """
func.func @bounds(%N: index {irkit.name = "N", irkit.default = 12 : i64},
    %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
    %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %two = arith.constant 2.000000e+00 : f32
  loop.for %i = affine_map<(d0) -> (1, d0 - 10)>(%N) to affine_map<(d0) -> (d0, 9)>(%N) step 3 {loop_name = "i"} {
    %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
    %w = arith.mulf %v, %two : f32
    %m = arith.maximumf %w, %v : f32
    loop.store %m, %y[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  }
  func.return
}
"""


@pytest.mark.parametrize(("n", "written"), [(12, [2, 5, 8]), (8, [1, 4, 7]), (14, [4, 7])])
def test_interpreter_bounds_are_max_and_min_of_the_maps(n, written):
    x = np.arange(n, dtype=np.float32)
    y = run_loop_kernel(_parse(BOUNDS), {"x": x}, {"N": n})["y"]
    assert [i for i in range(n) if not np.isnan(y[i])] == written
    assert [float(y[i]) for i in written] == [2.0 * i for i in written]


def test_interpreter_reports_out_of_bounds_with_the_loop_variables():
    text = BOUNDS.replace("affine_map<(d0) -> (d0)>] (%i) : f32", "affine_map<(d0) -> (d0 + 5)>] (%i) : f32")
    with pytest.raises(LoopInterpError, match=r"store out of bounds: y\[9\] is outside its shape \[8\] at i=4"):
        run_loop_kernel(_parse(text), {"x": np.zeros(8, np.float32)}, {"N": 8})


def test_interpreter_refuses_what_it_cannot_run():
    text = BOUNDS.replace("arith.maximumf %w, %v : f32", "math.acos %w : f32")
    with pytest.raises(UnsupportedIR, match="math.acos"):
        run_loop_kernel(_parse(text), {"x": np.zeros(8, np.float32)}, {"N": 8})


@needs_cc
def test_interpreter_agrees_with_c_on_the_bounds_kernel():
    module = _parse(BOUNDS)
    for n in (8, 12, 14):
        x = np.linspace(-1, 1, n, dtype=np.float32)
        c_out = run_compiled(module, {"x": x}, {"N": n})["y"]
        np.testing.assert_array_equal(c_out, run_loop_kernel(module, {"x": x}, {"N": n})["y"])


# ------------------------------------------------------------------ (d) robustness


def test_missing_compiler_falls_back_to_the_interpreter(capsys, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent")
    status, _, err = run_opt(
        capsys, str(ROOT / "examples/rowsum.design"), "-p", PIPELINE, "--check-semantics", "-o", os.devnull
    )
    assert status == 0
    assert "note: semantic check: loop IR runs in the interpreter (no C compiler: CC='/nonexistent'" in err
    assert "results agree after passes 'lower-design', 'lower-tensorop', 'apply-schedule'" in err
    assert "the loop interpreter" in err


def test_forcing_c_without_a_compiler_is_an_error(capsys, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent")
    status, _, err = run_opt(
        capsys, str(ROOT / "examples/rowsum.design"), "-p", PIPELINE, "--check-semantics=c", "-o", os.devnull
    )
    assert status == 1
    assert "error: --check-semantics-engine=c needs a C compiler (no C compiler: CC='/nonexistent'" in err


def test_ir_that_cannot_run_is_not_checked_and_not_an_error(capsys):
    status, _, err = run_opt(
        capsys,
        str(ROOT / "examples/softmax.design"),
        "-p",
        f"{PIPELINE},model-perf",
        "--check-semantics=interp",
        "-o",
        os.devnull,
    )
    assert status == 0
    assert "pass 'model-perf' not checked: perf IR is a cost model, not a program to run" in err
    arith_only = ROOT / "tests/filecheck/opt/print-ir.mlir"
    status, _, err = run_opt(capsys, str(arith_only), "-p", "canonicalize", "--check-semantics", "-o", os.devnull)
    assert status == 0
    assert "pass 'canonicalize' not checked: @f is not an irkit kernel" in err


def test_bad_check_options(capsys):
    rowsum = str(ROOT / "examples/rowsum.design")
    status, _, err = run_opt(capsys, rowsum, "-p", "lower-design", "--check-semantics", "--check-semantics-size", "Q=3")
    assert status == 1
    assert "error: --check-semantics-size Q: the program has no such size (its sizes: M, N)" in err
    status, _, err = run_opt(capsys, rowsum, "--check-semantics-size", "M=x")
    assert status == 2
    assert "irkit-opt: error: --check-semantics-size M: 'x' is not an integer" in err
    status, _, err = run_opt(capsys, "--check-semantics=fast", rowsum)
    assert status == 2
    assert "invalid choice: 'fast'" in err


def test_given_sizes_are_used(capsys):
    status, _, err = run_opt(
        capsys,
        str(ROOT / "examples/rowsum.design"),
        "-p",
        PIPELINE,
        "--check-semantics=interp",
        "--check-semantics-size",
        "M=40",
        "-o",
        os.devnull,
    )
    assert status == 0
    assert "(sizes M=40, N=7;" in err


def test_flag_with_engine_does_not_swallow_the_input():
    assert expand_check_option(["--check-semantics", "a.design"]) == ["--check-semantics", "a.design"]
    assert expand_check_option(["--check-semantics=interp", "a.design"]) == [
        "--check-semantics",
        "--check-semantics-engine=interp",
        "a.design",
    ]
    assert expand_check_option(["--", "--check-semantics=interp"]) == ["--", "--check-semantics=interp"]


def test_first_difference_tolerance_and_nans():
    before = np.array([[1.0, np.nan], [3.0, np.inf]], dtype=np.float32)
    assert first_difference(before, before.copy()) is None
    close = before + np.float32(1e-7)
    assert first_difference(before, close) is None
    after = before.copy()
    after[1, 0] = 3.5
    diff = first_difference(before, after)
    assert diff is not None and diff.index == (1, 0) and diff.n_bad == 1
    after[0, 1] = 0.0  # NaN before, a number after
    assert first_difference(before, after).index == (0, 1)  # type: ignore[union-attr]
    ints = np.array([1, 2, 3], dtype=np.int32)
    assert first_difference(ints, ints + np.array([0, 0, 1], dtype=np.int32)).index == (2,)  # type: ignore[union-attr]


# p is read before anything writes it: C reads garbage, the interpreter NaN.
UNWRITTEN = """
func.func @k(%N: index {irkit.name = "N", irkit.default = 5 : i64},
    %o: memref<?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %p = loop.alloc(%N) {tensor_name = "p", shape = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "l"} {
    %v = loop.load %p[affine_map<(d0) -> (d0)>] (%l) : memref<?xf32> -> f32
    loop.store %v, %o[affine_map<(d0) -> (d0)>] (%l) : f32, memref<?xf32>
  }
  loop.free %p : memref<?xf32>
  func.return
}
"""


@pytest.mark.parametrize("engine", ["auto", "interp"])
def test_an_input_that_reads_unwritten_memory_is_an_error_never_blamed_on_a_pass(engine, capsys, tmp_path):
    """Compiled C reads garbage where the interpreter reads NaN: the input is wrong before any pass
    runs, an error (exit 1) that blames no pass.  The interpreter alone reads NaN both times."""
    path = tmp_path / "unwritten.mlir"
    path.write_text(UNWRITTEN)
    status, _, err = run_opt(capsys, str(path), "-p", "cse", f"--check-semantics={engine}", "-o", os.devnull)
    assert "pass 'cse'" not in err or "not checked" in err or "agree" in err
    if engine == "auto" and HAS_CC:
        assert status == 1
        assert "the input loop IR is wrong at sizes N=5, before any pass runs: its results are not determined" in err
    else:
        assert status == 0
        assert "error" not in err
        assert "results agree after pass 'cse'" in err
