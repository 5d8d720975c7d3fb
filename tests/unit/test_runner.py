"""CompiledKernel: argument checks (dtype, shape, layout, alignment, aliasing, sizes), allocation, calls."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from irkit.backends.runner import CompiledKernel, KernelArgumentError, empty_tensor, resolve_sizes
from irkit.context import make_context
from irkit.diagnostics import DiagnosticError
from irkit.kernel_abi import find_kernels

# out[i, j] = A[i, j] + 2 * Bt[i, j] for a row-major A, a column-major Bt; sum[0] = sum of all A.
TEXT = """
func.func @axpy(%M: index {irkit.name = "M", irkit.default = 6 : i64}, %N: index {irkit.name = "N"},
    %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64},
    %Bt: memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>> {irkit.name = "Bt", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
    %out: memref<?x?xf32> {irkit.name = "out", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
    %tot: memref<?xf64> {irkit.name = "tot", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (1)>})
    attributes {irkit.assume = {divisible = {N = 2 : i64}, aligned = {}, noalias = []}} {
  %two = arith.constant 2.0 : f32
  %z = arith.constant 0.0 : f64
  loop.store %z, %tot[affine_map<(d0) -> (0)>] (%M) : f64, memref<?xf64>
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j"} {
      %a = loop.load %A[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %b = loop.load %Bt[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>> -> f32
      %b2 = arith.mulf %b, %two : f32
      %s = arith.addf %a, %b2 : f32
      loop.store %s, %out[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
      %t = loop.load %tot[affine_map<(d0) -> (0)>] (%i) : memref<?xf64> -> f64
      %a64 = arith.extf %a : f32 to f64
      %t2 = arith.addf %t, %a64 : f64
      loop.store %t2, %tot[affine_map<(d0) -> (0)>] (%i) : f64, memref<?xf64>
    }
  }
  func.return
}
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IRKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        module = Parser(make_context(), TEXT).parse_module()
        module.verify()
        yield CompiledKernel.build(module, cflags=["-O1"])


def args(k: CompiledKernel, M=6, N=4, seed=0):
    rng = np.random.default_rng(seed)
    sizes = {"M": M, "N": N}
    A = k.empty("A", sizes)
    A[...] = rng.standard_normal((M, N))
    Bt = np.asfortranarray(rng.standard_normal((M, N)).astype(np.float32))
    return {"A": A, "Bt": Bt, "out": k.empty("out", sizes), "tot": k.empty("tot", sizes)}, sizes


def problems(k, arrays, sizes) -> str:
    with pytest.raises(KernelArgumentError) as info:
        k(arrays, sizes)
    assert isinstance(info.value, DiagnosticError)
    return "\n".join(d.message for d in info.value.diagnostics)


def test_call_writes_outputs_in_place(kernel):
    arrays, sizes = args(kernel)
    kernel(arrays, sizes)
    np.testing.assert_allclose(arrays["out"], arrays["A"] + 2 * arrays["Bt"], rtol=1e-6)
    assert arrays["tot"][0] == pytest.approx(arrays["A"].astype(np.float64).sum())


def unaligned(shape, align=64) -> np.ndarray:
    n = int(np.prod(shape))
    raw = np.zeros(n + 32, np.float32)
    start = next(i for i in range(32) if raw[i:].ctypes.data % align)
    return raw[start : start + n].reshape(shape)


def test_run_allocates_outputs_and_fixes_layout_and_alignment(kernel):
    rng = np.random.default_rng(1)
    A = unaligned((6, 4))
    A[...] = rng.standard_normal((6, 4))
    Bt = rng.standard_normal((6, 4)).astype(np.float32)  # row-major: run() copies it to column-major
    out = kernel.run({"A": A, "Bt": Bt}, {"N": 4})  # M from its default
    np.testing.assert_allclose(out["out"], A + 2 * Bt, rtol=1e-6)
    assert set(out) == {"out", "tot"}
    with pytest.raises(KernelArgumentError, match="dtype float64, expected float32"):
        kernel.run({"A": A.astype(np.float64), "Bt": Bt}, {"N": 4})
    with pytest.raises(KernelArgumentError, match="'out' is an output"):
        kernel.run({"A": A, "Bt": Bt, "out": A}, {"N": 4})


def test_missing_unknown_dtype_shape(kernel):
    arrays, sizes = args(kernel)
    del arrays["Bt"]
    arrays["Q"] = np.zeros(3)
    arrays["A"] = arrays["A"].astype(np.float64)
    arrays["out"] = np.zeros((4, 6), np.float32)
    text = problems(kernel, arrays, sizes)
    assert "unknown tensor 'Q' (the kernel takes A, Bt, out, tot)" in text
    assert "no array for input tensor 'Bt' (f32[6, 4])" in text
    assert "tensor 'A': dtype float64, expected float32 (f32)" in text
    assert "tensor 'out': shape (4, 6), expected (6, 4) (at M=6, N=4)" in text


def test_layouts(kernel):
    arrays, sizes = args(kernel)
    arrays["Bt"] = np.ascontiguousarray(arrays["Bt"])
    text = problems(kernel, arrays, sizes)
    assert "tensor 'Bt' is not column-major (F-contiguous); pass np.asfortranarray(a)" in text
    arrays, sizes = args(kernel)
    arrays["out"] = np.zeros((6, 8), np.float32)[:, ::2]
    assert "tensor 'out' is not row-major (C-contiguous)" in problems(kernel, arrays, sizes)


def test_alignment_readonly_and_aliasing(kernel):
    arrays, sizes = args(kernel)
    arrays["A"] = unaligned((6, 4))
    assert "tensor 'A': data at" in problems(kernel, arrays, sizes)
    assert "64-byte aligned" in problems(kernel, arrays, sizes)
    arrays, sizes = args(kernel)
    arrays["out"].flags.writeable = False
    assert "output tensor 'out' is read-only" in problems(kernel, arrays, sizes)
    arrays, sizes = args(kernel)
    arrays["out"] = arrays["A"]
    assert "tensors 'A' and 'out' share memory" in problems(kernel, arrays, sizes)
    arrays, sizes = args(kernel)
    arrays["Bt"] = arrays["A"].reshape(4, 6).T  # column-major view of A's memory: inputs may share
    kernel(arrays, sizes)
    np.testing.assert_allclose(arrays["out"], arrays["A"] + 2 * arrays["Bt"], rtol=1e-6)


@pytest.mark.parametrize(
    "sizes, message",
    [
        ({"N": 4, "M": 0}, "size 'M' must be positive, got 0"),
        ({"N": 4, "M": 2.5}, "size 'M' must be an integer, got 2.5"),
        ({"N": 4, "M": True}, "size 'M' must be an integer"),
        ({}, "size 'N' is not given and has no default"),
        ({"N": 4, "K": 3}, "unknown size 'K'"),
        ({"N": 3}, "size 'N' = 3 breaks the document's assumption N % 2 == 0"),
    ],
)
def test_size_checks(kernel, sizes, message):
    with pytest.raises(KernelArgumentError) as info:
        resolve_sizes(kernel.kernel, sizes)
    assert message in str(info.value)


def test_sizes_default_and_numpy_ints(kernel):
    assert resolve_sizes(kernel.kernel, {"N": np.int64(4)}) == {"M": 6, "N": 4}


def test_error_is_located_at_the_kernel(kernel):
    with pytest.raises(KernelArgumentError) as info:
        kernel({}, {"N": 4})
    assert info.value.diagnostics[0].file == "<kernel axpy>"
    assert info.value.diagnostics[0].message.startswith("kernel 'axpy': ")


@pytest.mark.parametrize("order", [[0, 1], [1, 0]])
def test_empty_tensor_2d(order):
    a = empty_tensor("f32", (5, 7), order, 64)
    assert a.shape == (5, 7) and a.dtype == np.float32
    assert a.ctypes.data % 64 == 0
    assert np.transpose(a, order).flags.c_contiguous
    assert a.flags.c_contiguous == (order == [0, 1]) and a.flags.f_contiguous == (order == [1, 0])


def test_empty_tensor_3d_permutation():
    order = [2, 0, 1]
    a = empty_tensor("i32", (3, 4, 5), order, 128)
    assert a.shape == (3, 4, 5) and a.dtype == np.int32 and a.ctypes.data % 128 == 0
    assert np.transpose(a, order).flags.c_contiguous
    # element (i, j, k) lives at k*12 + i*4 + j
    a[...] = np.arange(60).reshape(3, 4, 5)
    flat = np.transpose(a, order).ravel()
    assert flat[2 * 12 + 1 * 4 + 3] == a[1, 3, 2]


def test_build_names_the_kernel():
    module = Parser(make_context(), "builtin.module {\n" + TEXT + TEXT.replace("@axpy", "@other") + "}").parse_module()
    with pytest.raises(DiagnosticError, match="name the kernel to run .*axpy, other"):
        CompiledKernel.build(module)
    with pytest.raises(DiagnosticError, match="no kernel 'nope'"):
        CompiledKernel.build(module, "nope")
    assert [k.sym_name.data for k in find_kernels(module)] == ["axpy", "other"]
