"""The cost model reads short constant nests as gcc compiles them: a producer computed at its
consumer's innermost loop (blur's `compute_at out.x`) is unrolled into that loop, its small
temporary kept in registers, and the loop vectorised."""

from __future__ import annotations

from pathlib import Path

from xdsl.dialects import func

from irkit import api
from irkit.frontend import parse_design
from irkit.perf import load_hardware, predict
from irkit.perf.reader import Reader
from irkit.validate.suite import replace_schedules

REPO = Path(__file__).resolve().parents[2]
BLUR = (REPO / "examples" / "blur.design").read_text()
INLINE = {"bx": ["compute_at out.x"], "out": ["parallel y", "vectorize x by 16"]}


def _nests(text: str) -> list:
    module = api.lower(parse_design(text, "blur.design"))["loop"]
    kernel = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    top: list = []
    Reader(kernel, 1 << 40).read_block(kernel.body.block, None, top)
    return top


def test_a_producer_at_a_point_is_unrolled_into_the_point_loop():
    (nest,) = _nests(replace_schedules(BLUR, INLINE))
    x = next(lp for lp in nest.walk() if lp.name == "x" and lp.parent is not None and lp.parent.name == "y")
    assert x.loops == []  # the producer's y and x loops (3 and 1 trips) unrolled into it
    assert {a.buf.name for a in x.accesses} == {"inp", "out"}  # bx: registers
    loads = [a for a in x.accesses if a.buf.name == "inp"]
    assert len(loads) == 9  # three rows of three columns, one load each
    assert x.vector or x.auto_vector
    assert x.flops > 0 and x.ops


def test_an_accumulation_or_a_vector_loop_is_not_a_point_producer(monkeypatch):
    """gemm's register block: its rows (16 trips; the row tail's tile has 16 elements) are vector
    loops that read and write the tile, not producers to unroll: the price does not move."""
    from irkit.perf import reader
    from irkit.perf.predict import _MODELS

    gemm = REPO / "examples" / "gemm.design"
    hw = load_hardware("generic", document=None)
    sizes = [{"M": 200, "N": 136, "K": 64}]  # a row tail and a column tail
    _MODELS.clear()
    found = [predict(gemm, s, hw).seconds for s in sizes]
    monkeypatch.setattr(reader, "_unroll_point_producer", lambda loop: None)
    _MODELS.clear()
    assert found == [predict(gemm, s, hw).seconds for s in sizes]
    _MODELS.clear()


def test_the_inline_blur_is_priced_near_the_row_strip_not_ten_times_over():
    """Zen 3 (bench run P): the inline schedule measured 4.4-5.5 ms, the strip at `out.y` 7.6-8.1 ms;
    the model priced the inline one 57 ms before it read the producer as gcc compiles it."""
    hw = load_hardware("generic", document=None)
    sizes = {"H": 1024, "W": 1024}
    inline = predict(replace_schedules(BLUR, INLINE), sizes, hw).seconds
    strip = predict(replace_schedules(BLUR, {**INLINE, "bx": ["compute_at out.y"]}), sizes, hw).seconds
    assert inline < 2 * strip
