"""unroll_jam: register blocking with remainder loops, full-tile peeling and
register tiles; the explicit-SIMD C it leads to; and a property: random
unroll_jam factors and pack placements on small GEMMs at random odd sizes
agree with the numpy oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import irkit
from irkit.diagnostics import DiagnosticError
from irkit.dialects import loop as lp
from irkit.passes.registry import IRKIT_PASSES
from irkit.passes.schedule import load
from irkit.reference import compare, reduction_lengths

GEMM = """design gemm {{
  sizes {{ M = 37, N = 53, K = 29 }}
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output
  C[i, j] += A[i, k] * B[k, j]
  schedule C {{
{schedule}
  }}
}}
"""

FAST = """    tile i, j by 24, 64 -> io, jo, ii, ji
    split k by 16 -> ko, ki
    split ji by 16 -> jr, jv
    reorder jo, ko, io, jr, ii, ki, jv
    parallel jo
    vectorize jv by 8
    unroll_jam ii by 6
    pack B at ko
    pack A at io"""


def gemm(schedule: str) -> str:
    return GEMM.format(schedule=schedule)


def check(kernel: irkit.api.Kernel, sizes: dict[str, int], seed: int = 0) -> None:
    inputs = kernel.random_inputs(sizes, seed=seed)
    got = kernel(sizes, **inputs)
    expected = kernel.reference(inputs, sizes)
    lengths = reduction_lengths(kernel.levels["design"], kernel.resolve_sizes(sizes))
    for name, value in expected.items():
        report = compare(got[name], value, value.dtype, lengths.get(name, 1))
        assert report.ok, f"{name} at {sizes}: {report}"


def test_registered():
    assert load("unroll_jam") is not None
    assert "schedule-unroll-jam" in IRKIT_PASSES
    assert IRKIT_PASSES["schedule-unroll-jam"]().name == "schedule-unroll-jam"


@pytest.fixture(scope="module")
def fast_kernel() -> irkit.api.Kernel:
    return irkit.compile(gemm(FAST))


@pytest.mark.parametrize(
    "sizes",
    [
        {"M": 37, "N": 53, "K": 29},
        {"M": 1, "N": 1, "K": 1},
        {"M": 6, "N": 16, "K": 16},
        {"M": 48, "N": 128, "K": 33},
        {"M": 5, "N": 15, "K": 2},
    ],
)
def test_register_blocked_gemm_agrees(fast_kernel, sizes):
    check(fast_kernel, sizes)


def test_register_tile_in_c(fast_kernel):
    """The main nest's accumulators are vector variables, loaded before ki and stored after it."""
    c = fast_kernel.c_source
    assert "typedef float irkit_f32x8 __attribute__((vector_size(32)));" in c
    assert c.count("vector registers of 8") >= 6
    micro = c[c.index("for (int64_t ki = ko;") :]
    micro = micro[: micro.index("\n                        }\n")]  # the ki loop of the main nest
    assert "C_acc0_0 = " in micro and "C_acc5_1 = " in micro
    assert "C[" not in micro  # C is not touched inside the reduction loop
    assert "A_pack[" in micro and "B_pack[" in micro


def test_loop_structure(fast_kernel):
    module = fast_kernel.levels["loop"]
    names = [op.loop_name.data for op in module.walk() if isinstance(op, lp.ForOp)]
    assert "ii_tail" in names and "jr_tail" in names
    locals_ = [op for op in module.walk() if isinstance(op, lp.LocalOp)]
    assert {op.result.type.get_shape() for op in locals_} == {(16,)}
    main = next(op for op in module.walk() if isinstance(op, lp.ForOp) and op.loop_name.data == "ii")
    assert main.step_value == 6


def test_factor_one_is_scalar_replacement_only():
    kernel = irkit.compile(gemm(FAST.replace("unroll_jam ii by 6", "unroll_jam ii by 1")))
    names = [op.loop_name.data for op in kernel.levels["loop"].walk() if isinstance(op, lp.ForOp)]
    assert "ii_tail" not in names
    assert any(isinstance(op, lp.LocalOp) for op in kernel.levels["loop"].walk())
    check(kernel, {"M": 13, "N": 21, "K": 17})


CONV = """design conv {{
  sizes {{ N = 1, C = 5, F = {F}, H = 9, W = 29 }}
  tensor I : f32[N, C, H, W] input
  tensor Wt : f32[F, C, 3, 3] input
  tensor O : f32[N, F, H, W] output
  O = conv2d(I, Wt, stride = 1, padding = 1, layout = nchw)
  schedule O {{
{schedule}
  }}
}}"""


def test_conv2d_register_blocked_agrees():
    schedule = """    split f by 4 -> fo, fi
    split x by 16 -> xo, xv
    reorder n, fo, y, xo, fi, c, r, s, xv
    parallel fo
    vectorize xv by 8
    unroll_jam fi by 4
    pack Wt at fo"""
    kernel = irkit.compile(CONV.format(F=7, schedule=schedule))
    for sizes in ({}, {"F": 8, "W": 32, "H": 3}, {"F": 1, "W": 1, "H": 1, "C": 1}):
        check(kernel, sizes)


CONV_LANES = CONV.format(
    F=16,
    schedule="""    split f by 8 -> fo, fv
    reorder fo, n, y, x, c, r, s, fv
    parallel fo
    vectorize fv by 8
    unroll_jam x by 8
    pack Wt at fo""",
)


def test_conv2d_with_output_channels_in_lanes():
    """Lanes along `f`, which the output is strided in: the accumulators of 8 pixels are vector
    registers across c, r, s, loaded and stored one lane at a time outside the reduction, each
    update one broadcast pixel times one vector of packed weights."""
    kernel = irkit.compile(CONV_LANES)
    c = kernel.c_source
    assert c.count("/* local O_acc0[8]: 1 vector registers of 8 */") == 1
    start = c.index("for (int64_t c = 0;")
    indent = start - c.rindex("\n", 0, start) - 1
    micro = c[start : c.index("\n" + " " * indent + "}\n", start)]  # the first nest's c loop
    assert "O[" not in micro  # the tile is not in memory inside the reduction
    assert "irkit_fma_f32x8(" in micro and "Wt_pack[" in micro
    assert "O[n*O_s0 + (fv + 7)*O_s1" in c  # the eighth lane of a strided store
    for sizes in ({}, {"F": 8, "W": 8, "H": 1}, {"F": 3, "W": 30, "H": 2, "C": 2}):
        check(kernel, sizes)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("unroll_jam j by 2", "'j' is the innermost loop, so there is nothing to jam it into"),
        ("unroll_jam i by 0", "unroll_jam factor must be positive"),
        (
            "split i by 2 -> io, ii\n    reorder io, ii, k, j\n    unroll_jam ii by 3",
            "unroll_jam 'ii' by 3: 'ii' runs at most 2 iterations (its tile or split), so no block of 3 would ever run",
        ),
        ("unroll_jam i by 2\n    vectorize j by 8", "unroll_jam must come after the loop-shaping directives"),
    ],
)
def test_refused(schedule, message):
    doc = gemm("    reorder i, k, j\n    " + schedule)
    with pytest.raises(DiagnosticError) as info:
        irkit.compile(doc)
    assert message in str(info.value.diagnostics[0].message)


# ---------------------------------------------------------------- property


@st.composite
def gemm_schedules(draw) -> str:
    mi = draw(st.integers(1, 20), label="tile i")
    nj = draw(st.sampled_from([8, 12, 16, 32]), label="tile j")
    kk = draw(st.integers(1, 12), label="split k")
    width = draw(st.sampled_from([4, 8]), label="vector width")
    jv = draw(st.sampled_from([width, 2 * width, 3 * width]), label="split ji")
    factor = draw(st.integers(1, min(7, mi)), label="unroll_jam factor")  # more than the tile's rows is refused
    par = draw(st.sampled_from(["io", "jo", None]), label="parallel")
    lines = [
        f"tile i, j by {mi}, {nj} -> io, jo, ii, ji",
        f"split k by {kk} -> ko, ki",
        f"split ji by {jv} -> jr, jv",
        "reorder jo, ko, io, jr, ii, ki, jv",
    ]
    if par:
        lines.append(f"parallel {par}")
    lines.append(f"vectorize jv by {width}")
    lines.append(f"unroll_jam ii by {factor}")
    for tensor, loops in (("B", ["ko", "jr", "io"]), ("A", ["io", "ko"])):
        at = draw(st.sampled_from([None, *loops]), label=f"pack {tensor} at")
        if at is not None:
            lines.append(f"pack {tensor} at {at}")
    return "\n".join("    " + line for line in lines)


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,  # the same schedules every run: their kernels come from the build cache
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(schedule=gemm_schedules(), data=st.data())
def test_random_unroll_jam_and_pack_agree_with_numpy(schedule, data):
    note(schedule)
    kernel = irkit.compile(gemm(schedule))
    for _ in range(2):
        sizes = {s: data.draw(st.integers(0, 20).map(lambda v: 2 * v + 1), label=s) for s in ("M", "N", "K")}
        with np.errstate(all="ignore"):
            check(kernel, sizes, seed=data.draw(st.integers(0, 100), label="seed"))
