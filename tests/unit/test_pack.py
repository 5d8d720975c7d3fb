"""pack: the layout of packed tiles, where the buffer lives, what is refused,
and packed kernels (layouts, temporaries, stencils, size-dependent tiles)
agreeing with the numpy oracle."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX

import irkit
from irkit.diagnostics import DiagnosticError
from irkit.dialects import loop as lp
from irkit.passes.registry import IRKIT_PASSES
from irkit.passes.schedule import load
from irkit.reference import compare, reduction_lengths


def check(kernel: irkit.api.Kernel, sizes: dict[str, int], seed: int = 0) -> None:
    inputs = kernel.random_inputs(sizes, seed=seed)
    got = kernel(sizes, **inputs)
    expected = kernel.reference(inputs, sizes)
    lengths = reduction_lengths(kernel.levels["design"], kernel.resolve_sizes(sizes))
    for name, value in expected.items():
        report = compare(got[name], value, value.dtype, lengths.get(name, 1))
        assert report.ok, f"{name} at {sizes}: {report}"


def gemm(schedule: str, layout: str = "") -> str:
    return f"""design gemm {{
  sizes {{ M = 37, N = 53, K = 29 }}
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output
  C[i, j] += A[i, k] * B[k, j]
  {layout}
  schedule C {{ {schedule} }}
}}
"""


BLOCKED = "tile i, j by 8, 32 -> io, jo, ii, ji; split k by 16 -> ko, ki; reorder jo, ko, io, ii, ki, ji; "


def allocs(kernel: irkit.api.Kernel) -> list[lp.AllocOp]:
    return [op for op in kernel.levels["loop"].walk() if isinstance(op, lp.AllocOp)]


def test_registered():
    assert load("pack") is not None
    assert IRKIT_PASSES["schedule-pack"]().name == "schedule-pack"


def test_pack_b_serial_is_hoisted_and_agrees():
    kernel = irkit.compile(gemm(BLOCKED + "pack B at ko"))
    (alloc,) = allocs(kernel)
    assert alloc.tensor_name.data == "B_pack"
    assert isinstance(alloc.parent_op(), type(kernel.levels["loop"].body.block.first_op))  # the kernel, not a loop
    assert alloc.result.type.get_shape() == (16 * 32,)  # [k][j]
    for sizes in ({}, {"M": 1, "N": 1, "K": 1}, {"M": 16, "N": 64, "K": 32}):
        check(kernel, sizes)


def test_pack_in_parallel_loop_is_private():
    kernel = irkit.compile(gemm(BLOCKED + "parallel io; pack A at io; pack B at io"))
    for alloc in allocs(kernel):
        parent = alloc.parent_op()
        assert isinstance(parent, lp.ForOp) and parent.loop_name.data == "io" and parent.parallel is not None
        assert alloc.result.type.get_shape() == (8 * 16,) if alloc.tensor_name.data == "A_pack" else (16 * 32,)
    check(kernel, {"M": 19, "N": 41, "K": 35})


def test_pack_column_major_operand():
    kernel = irkit.compile(gemm(BLOCKED + "pack B at ko; pack A at io", "layout { B : col_major }"))
    check(kernel, {"M": 9, "N": 33, "K": 17})


def test_size_dependent_tile_outermost():
    """Without a split of k, A's tile at io spans all of K: the buffer's length is a size."""
    kernel = irkit.compile(gemm("tile i, j by 8, 32 -> io, jo, ii, ji; reorder io, jo, k, ii, ji; pack A at io"))
    (alloc,) = allocs(kernel)
    assert list(alloc.sizes) and alloc.result.type.get_shape() == (DYNAMIC_INDEX,)
    check(kernel, {"M": 11, "N": 40, "K": 7})


def test_pack_temporary_and_stencil():
    doc = """design blur {
      sizes { H = 20, W = 37 }
      tensor inp : f32[H + 2, W] input
      tensor t : f32[H + 2, W] temp
      tensor out : f32[H, W] output
      t[y, x] = 2 * inp[y, x]
      out[y, x] = t[y, x] + t[y + 1, x] + t[y + 2, x]
      schedule out { split y by 4 -> yo, yi; split x by 8 -> xo, xi; reorder yo, xo, yi, xi; pack t at xo }
    }"""
    kernel = irkit.compile(doc)
    (packed,) = [a for a in allocs(kernel) if a.tensor_name.data == "t_pack"]
    assert packed.result.type.get_shape() == (6 * 8,)  # rows yo .. yo + 5, columns xo .. xo + 7
    for sizes in ({}, {"H": 1, "W": 1}, {"H": 9, "W": 8}):
        check(kernel, sizes)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (BLOCKED + "pack C at ko", "stage 'C' does not read 'C'"),  # the checker; IR level: pack-errors.mlir
        ("reorder i, j, k; pack B at i", "of 'B' depends on the sizes, which works only for the outermost part"),
        (BLOCKED + "pack B at ko; pack B at io", "an earlier pack made its reads there read B_pack"),
        (BLOCKED + "pack B at ko; parallel io", "pack must come after the loop-shaping directives"),
    ],
)
def test_refused(schedule, message):
    with pytest.raises(DiagnosticError) as info:
        irkit.compile(gemm(schedule))
    assert message in info.value.diagnostics[0].message
