"""`irkit.compile`: a kernel object called with numpy arrays, exposing its C and IR."""

import numpy as np
import pytest

import irkit
from irkit.diagnostics import DiagnosticError

GEMM_COLB = """design gemm {
  sizes { M = 16, N = 12, K = 8 }
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output
  C[i, j] += A[i, k] * B[k, j]
  layout { B : col_major; C : row_major align 64 }
}
"""


@pytest.fixture(scope="module")
def gemm():
    return irkit.compile(GEMM_COLB)


def test_call_returns_outputs_by_name(gemm):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 8), dtype=np.float32)
    b = rng.standard_normal((8, 12), dtype=np.float32)
    out = gemm(A=a, B=b)  # B given row-major: run() lays it out column-major
    assert set(out) == {"C"}
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-5, atol=1e-5)


def test_sizes_per_call_and_reference(gemm):
    inputs = gemm.random_inputs({"M": 5, "N": 7, "K": 3}, seed=3)
    out = gemm(sizes={"M": 5, "N": 7, "K": 3}, **inputs)
    np.testing.assert_allclose(out["C"], gemm.reference(inputs, {"M": 5, "N": 7, "K": 3})["C"], rtol=1e-5, atol=1e-6)


def test_exposes_c_and_every_level(gemm):
    assert "void irkit_gemm(" in gemm.c_source
    assert "design.stmt" in gemm.ir("design")
    assert "tensorop.generic" in gemm.ir("tensorop")
    assert "loop.for" in gemm.ir("loop")
    # the column-major layout of B is in its type at the lower levels
    assert "affine_map<(d0, d1) -> (d1, d0)>" in gemm.ir("loop")
    with pytest.raises(ValueError, match="no IR level 'perf'"):
        gemm.ir("perf")


def test_strict_call_checks_dtype_shape_and_layout(gemm):
    sizes = {"M": 16, "N": 12, "K": 8}
    good = {name: gemm.compiled.empty(name, sizes) for name in ("A", "B", "C")}
    for arr in good.values():
        arr[...] = 1
    gemm.run_into(good)
    assert np.all(good["C"] == 8)
    wrong_dtype = dict(good, A=good["A"].astype(np.float64))
    with pytest.raises(DiagnosticError, match="tensor 'A': dtype float64, expected float32"):
        gemm.run_into(wrong_dtype)
    wrong_shape = dict(good, A=np.ones((8, 16), np.float32))
    with pytest.raises(DiagnosticError, match=r"tensor 'A': shape \(8, 16\), expected \(16, 8\)"):
        gemm.run_into(wrong_shape)
    wrong_layout = dict(good, B=np.ascontiguousarray(good["B"]))
    with pytest.raises(DiagnosticError, match="tensor 'B' is not column-major"):
        gemm.run_into(wrong_layout)


def test_compile_from_path_and_unknown_size(tmp_path):
    path = tmp_path / "g.design"
    path.write_text(GEMM_COLB)
    kernel = irkit.compile(path, sizes={"M": 4})
    assert kernel.resolve_sizes() == {"M": 4, "N": 12, "K": 8}
    with pytest.raises(DiagnosticError, match="unknown size 'Z'"):
        irkit.compile(path, sizes={"Z": 4})


def test_bad_document_raises_diagnostics():
    with pytest.raises(DiagnosticError, match="undefined tensor 'Q'"):
        irkit.compile(GEMM_COLB.replace("B[k, j]", "Q[k, j]"))


def test_hardware_override_is_loaded():
    kernel = irkit.compile(GEMM_COLB, hw="generic")
    assert kernel.hardware is not None and "design.hardware" in str(kernel.hardware)
    with pytest.raises(DiagnosticError, match="hardware description 'nonesuch' not found"):
        irkit.compile(GEMM_COLB, hw="nonesuch")
