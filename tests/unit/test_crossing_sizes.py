"""`--check-semantics` sizes from the schedule (irkit.checks.crossing_sizes): with compiled C, each
size a stepped loop runs up to is chosen so that every tile, register block and tail runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from irkit.affine.bounds import upper_terms
from irkit.checks.crossing_sizes import crossing_sizes
from irkit.dialects import loop as lp
from irkit.frontend import parse_design
from irkit.kernel_abi import kernel_args
from irkit.raising.verify import lowered_loops

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.design")), ids=lambda p: p.stem)
def test_every_stepped_loop_runs_a_full_step_and_a_tail(path):
    design = parse_design(path.read_text(), str(path))
    sizes = crossing_sizes(design, {})
    loops = lowered_loops(design)
    kernel = next(op for op in loops.walk() if op.name == "func.func")
    names = {s.value: s.name for s in kernel_args(kernel)[0]}
    checked = 0
    for loop in (op for op in kernel.walk() if isinstance(op, lp.ForOp) and op.step_value > 1):
        for term in upper_terms(loop):
            size = next(iter(term.terms), None)
            if len(term.terms) != 1 or term.terms.get(size) != 1 or size not in names:
                continue
            value = sizes[names[size]]
            assert value > loop.step_value and value % loop.step_value, (loop.loop_name.data, value)
            checked += 1
    assert checked or not sizes


def test_gemm_gets_a_full_tile_a_block_and_a_row_of_tail():
    path = EXAMPLES / "gemm.design"
    assert crossing_sizes(parse_design(path.read_text(), str(path)), {}) == {
        "M": 96 + 6 + 1,
        "N": 512 + 16 + 1,
        "K": 256 + 129,
    }


def test_divisible_sizes_stay_multiples_of_their_divisor():
    path = EXAMPLES / "gemm.design"
    assert crossing_sizes(parse_design(path.read_text(), str(path)), {"M": 32})["M"] == 128
