"""compute_at / compute_root (irkit/passes/schedule/compute_at.py): the bound analysis,
placements of blur, chains and reductions compiled and compared with the numpy oracle
(hypothesis over consumer tilings and compute_at loops), refusals, and softmax fusion."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block
from xdsl.ir.affine import AffineExpr, AffineMap

import irkit
from irkit.affine.linear import Div, Lin, NotAffine, build_map, div_atom, lin_of
from irkit.affine.prove import Ranges
from irkit.diagnostics import DiagnosticError
from irkit.dialects import loop as lp
from irkit.passes.schedule import compute_at as ca
from irkit.reference import compare, reduction_lengths

# ------------------------------------------------------------------ linear forms and bounds


def _sizes(n: int) -> tuple[Block, list]:
    block = Block(arg_types=[IndexType()] * n)
    return block, list(block.args)


def _loop(lower: AffineMap, lops: list, upper: AffineMap, uops: list, step: int, parent: Block | None) -> lp.ForOp:
    loop = lp.ForOp(lower, lops, upper, uops, step, "l")
    if parent is not None:
        parent.add_op(loop)
    return loop


d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)


def test_lin_roundtrip_and_arithmetic():
    _, (h, w) = _sizes(2)
    e = (d0 * 2 + d1 + 3) // 4
    form = lin_of(e, [h, w])
    (atom,) = form.terms
    assert isinstance(atom, Div) and atom.by == 4
    amap, ops = build_map([form, Lin.of(w) - Lin.of(h) + 1])
    assert ops == [h, w]
    assert amap.eval([5, 7], []) == ((2 * 5 + 7 + 3) // 4, 7 - 5 + 1)
    assert Lin.of(h) + 2 - Lin.of(h) == Lin(const=2)
    assert div_atom("ceildiv", Lin(const=-7), 2) == Lin(const=-3)
    with pytest.raises(NotAffine):
        lin_of(AffineExpr.symbol(0), [h])


def test_ranges_of_a_tiled_loop():
    # yo = 0..H step 32; yi = yo..min(yo + 32, H): yi + 2 ranges over [yo + 2, min(yo + 33, H + 1)]
    block, (h,) = _sizes(1)
    yo = _loop(AffineMap.constant_map(0), [], AffineMap(1, 0, (d0,)), [h], 32, block)
    yi = _loop(AffineMap(1, 0, (d0,)), [yo.induction_var], AffineMap(2, 0, (d0 + 32, d1)), [yo.induction_var, h], 1,
               yo.body.block)
    ranges = Ranges([yi])
    e = Lin.of(yi.induction_var) + 2
    assert ranges.lo(e) == [Lin.of(yo.induction_var) + 2]
    assert set(ranges.hi(e)) == {Lin.of(yo.induction_var) + 33, Lin.of(h) + 1}
    # eliminating yo too: [2, H + 1]
    both = Ranges([yo, yi])
    assert both.lo(e) == [Lin(const=2)]
    assert Lin.of(h) + 1 in both.hi(e)
    # mod is bounded by its divisor, floordiv follows its argument
    m = Lin.of(Div("mod", Lin.of(yi.induction_var), 4))
    assert ranges.lo(m) == [Lin()] and ranges.hi(m) == [Lin(const=3)]


# ------------------------------------------------------------------ compiled placements

BLUR = """design blur {{
  sizes {{ H = 16, W = 16 }}
  tensor inp : f32[H + 2, W + 2] input
  tensor bx  : f32[H + 2, W] temp
  tensor out : f32[H, W] output
  bx[y, x]  = (inp[y, x] + inp[y, x + 1] + inp[y, x + 2]) / 3
  out[y, x] = (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3
  schedule out {{ {out} }}
  schedule bx {{ {bx} }}
}}
"""

CHAIN = """design chain {{
  sizes {{ M = 8, N = 8 }}
  tensor a   : f32[M + 2, N + 1] input
  tensor t1  : f32[M + 2, N + 1] temp
  tensor t2  : f32[M + 1, N] temp
  tensor out : f32[M, N] output
  t1[i, j]  = a[i, j] * 2 + 1
  t2[i, j]  = t1[i, j] + t1[i + 1, j + 1]
  out[i, j] = t2[i, j] * t2[i + 1, j]
  schedule out {{ {out} }}
  schedule t2 {{ {t2} }}
  schedule t1 {{ {t1} }}
}}
"""

REDUCE = """design red {{
  sizes {{ M = 8, N = 8, K = 5 }}
  tensor X   : f32[M, K] input
  tensor Y   : f32[M, N] input
  tensor s   : f32[M] temp
  tensor out : f32[M, N] output
  s[i] += X[i, k] * X[i, k]
  out[i, j] = Y[i, j] / (1 + s[i])
  schedule out {{ {out} }}
  schedule s {{ {s} }}
}}
"""


def run_and_check(text: str, sizes: dict[str, int]) -> irkit.Kernel:
    kernel = irkit.compile(text, sizes=sizes)
    inputs = kernel.random_inputs(sizes, seed=1)
    got = kernel(sizes, **inputs)
    want = kernel.reference(inputs, sizes)
    lengths = reduction_lengths(kernel.levels["design"], kernel.resolve_sizes(sizes))
    for name, value in want.items():
        result = compare(got[name], value, reduction_length=lengths.get(name, 1))
        assert result.ok, f"{name}: {result.message}\n{kernel.ir('loop')}"
    return kernel


def test_blur_example_small_and_odd_sizes():
    for sizes in ({"H": 64, "W": 300}, {"H": 37, "W": 53}, {"H": 1, "W": 1}):
        k = run_and_check("examples/blur.design", sizes)
    loop_ir = k.ir("loop")
    assert 'shape = affine_map<() -> (34, 256)>' in loop_ir  # a private tile buffer
    assert "irkit_alloc" in k.c_source and "#pragma omp parallel for" in k.c_source


def test_elementwise_example_chain():
    k = run_and_check("examples/elementwise.design", {"M": 5, "N": 1500})
    ir = k.ir("loop")
    assert 'tensor_name = "t1", shape = affine_map<() -> (1, 1024)>' in ir
    assert 'tensor_name = "t2", shape = affine_map<() -> (1, 1024)>' in ir


def test_producer_schedule_kept_and_split_restarted():
    text = BLUR.format(out="tile y, x by 8, 8 -> yo, xo, yi, xi; parallel yo",
                       bx="compute_at out.xo; split x by 4 -> xa, xb; vectorize xb by 4")
    k = run_and_check(text, {"H": 19, "W": 21})
    ir = k.ir("loop")
    assert re.search(r'loop_name = "xb", stage = "bx", origin = "[^"]*", vector = 4', ir)
    # the split's outer loop restarts at the tile: xa = xo to min(W, xo + 8) step 4
    assert re.search(r'%xa = affine_map<\(d0\) -> \(d0\)>\(%xo\) to .*\(%W, %xo\) step 4', ir)


def test_reduction_producer_per_row():
    text = REDUCE.format(out="parallel i; vectorize j by 4", s="compute_at out.i")
    k = run_and_check(text, {"M": 7, "N": 9, "K": 5})
    ir = k.ir("loop")
    assert 'tensor_name = "s", shape = affine_map<() -> (1)>' in ir
    # the producer's row loop runs once per row of out; it stays, so it can be a compute_at target
    assert re.search(r'loop_name = "i", stage = "s"', ir)
    assert "affine_map<(d0) -> ((d0 + 1))>(%i)" in ir


def test_compute_at_a_placed_producers_loop():
    # t2 at out.jo, t1 at t2.i: t2's row loop runs once per row of out
    text = CHAIN.format(out="split j by 4 -> jo, ji; parallel i", t2="compute_at out.jo", t1="compute_at t2.i")
    run_and_check(text, {"M": 6, "N": 11})


def test_compute_root_is_a_no_op():
    text = BLUR.format(out="tile y, x by 8, 8 -> yo, xo, yi, xi", bx="compute_root")
    k = run_and_check(text, {"H": 9, "W": 10})
    assert 'shape = affine_map<()[s0, s1] -> ((s0 + 2), s1)>' in k.ir("loop")


# ------------------------------------------------------------------ refusals


def _error(text: str) -> str:
    with pytest.raises(DiagnosticError) as info:
        irkit.compile(text, sizes={})
    return str(info.value)


def test_nested_parallel_is_refused():
    msg = _error(BLUR.format(out="tile y, x by 8, 8 -> yo, xo, yi, xi; parallel yo", bx="compute_at out.xo; parallel y"))
    assert "only one loop of a nest can be distributed" in msg and ":9:" in msg


def test_reader_outside_the_loop_is_refused():
    # t1 at out.jo but its reader t2 at out.i (outside jo)
    text = CHAIN.format(out="split j by 4 -> jo, ji", t2="compute_at out.i", t1="compute_at out.jo")
    msg = _error(text)
    assert "'t1' is also read outside loop 'jo'" in msg and "stage 't2'" in msg


# ------------------------------------------------------------------ properties

CONSUMER = st.sampled_from(["none", "split", "tile", "tile_reorder"])


def consumer_schedule(draw, y: str, x: str) -> tuple[str, list[str]]:
    kind = draw(CONSUMER)
    fy, fx = draw(st.integers(1, 9)), draw(st.integers(1, 12))
    par = draw(st.booleans())
    if kind == "none":
        return (f"parallel {y}" if par else ""), [y, x]
    if kind == "split":
        d = f"split {x} by {fx} -> {x}o, {x}i"
        return d + (f"; parallel {y}" if par else ""), [y, f"{x}o", f"{x}i"]
    d = f"tile {y}, {x} by {fy}, {fx} -> {y}o, {x}o, {y}i, {x}i"
    loops = [f"{y}o", f"{x}o", f"{y}i", f"{x}i"]
    if kind == "tile_reorder":
        d += f"; reorder {x}o, {y}o"
        loops = [f"{x}o", f"{y}o", f"{y}i", f"{x}i"]
    if par:
        d += f"; parallel {loops[0]}"
    return d + f"; vectorize {x}i by 4", loops


@st.composite
def blur_case(draw):
    out, loops = consumer_schedule(draw, "y", "x")
    at = draw(st.sampled_from(loops))
    extra = draw(st.sampled_from(["", "vectorize x by 8", "split x by 3 -> xa, xb", "reorder x, y"]))
    bx = f"compute_at out.{at}" + (f"; {extra}" if extra else "")
    sizes = {"H": draw(st.integers(1, 21)), "W": draw(st.integers(1, 23))}
    return BLUR.format(out=out, bx=bx), sizes


@st.composite
def chain_case(draw):
    out, loops = consumer_schedule(draw, "i", "j")
    p2 = draw(st.integers(0, len(loops) - 1))
    t2 = draw(st.sampled_from(["compute_root", f"compute_at out.{loops[p2]}"]))
    if t2 == "compute_root":
        t1 = draw(st.sampled_from(["compute_root", "compute_at t2.i", "compute_at t2.j"]))
    else:
        p1 = draw(st.integers(0, p2))  # t1 at or outside t2's loop, or inside t2: legal
        t1 = draw(st.sampled_from([f"compute_at out.{loops[p1]}", "compute_root", "compute_at t2.i", "compute_at t2.j"]))
    sizes = {"M": draw(st.integers(1, 13)), "N": draw(st.integers(1, 17))}
    return CHAIN.format(out=out, t2=t2, t1=t1), sizes


@settings(max_examples=14, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blur_case())
def test_blur_placements_match_numpy(case):
    text, sizes = case
    note(text)
    run_and_check(text, sizes)


@settings(max_examples=14, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain_case())
def test_chain_placements_match_numpy(case):
    text, sizes = case
    note(text)
    run_and_check(text, sizes)


# ------------------------------------------------------------------ softmax fusion

SOFTMAX = """design sm {{
  sizes {{ M = 6, N = 37 }}
  tensor X : f32[M, N] input
  tensor P : f32[M, N] output
  P = softmax(X, axis = 1)
  schedule P {{ {p} }}
}}
"""


@pytest.mark.parametrize("sched", ["parallel i; vectorize j by 8", "split i by 4 -> io, ii; parallel io", "vectorize j by 4"])
def test_softmax_fused_per_row(sched):
    from irkit.api import lower
    from irkit.backends.runner import CompiledKernel
    from irkit.frontend import parse_design
    from irkit.reference import evaluate_design

    module = parse_design(SOFTMAX.format(p=sched), "sm.design")
    levels = lower(module)
    loop_module = levels["loop"]
    (kernel,) = [op for op in loop_module.walk() if op.name == "func.func"]
    # apply-schedule fused the stage already: nothing is left to fuse
    assert ca.fuse_stages(kernel) == []
    loop_module.verify()
    nests = [op for op in kernel.body.block.ops if isinstance(op, lp.ForOp)]
    assert len(nests) == 1  # one pass over the rows
    compiled = CompiledKernel.build(loop_module)
    sizes = {"M": 7, "N": 37}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 37)).astype(np.float32)
    got = compiled.run({"X": x}, sizes)["P"]
    want = evaluate_design(levels["design"], {"X": x}, sizes)["P"]
    assert compare(got, want, reduction_length=37).ok


def test_fusion_leaves_single_nest_stages_alone():
    from irkit.api import lower
    from irkit.frontend import parse_design

    text = REDUCE.format(out="parallel i", s="compute_root")
    levels = lower(parse_design(text, "r.design"))
    (kernel,) = [op for op in levels["loop"].walk() if op.name == "func.func"]
    before = str(kernel)
    assert ca.fuse_stages(kernel) == []
    assert str(kernel) == before
