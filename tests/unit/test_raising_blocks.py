"""Raising packs and register blocks: the normalisation keeps results, and what it undoes is checked.

`unpack` and `unjam` rewrite loop IR in place before it is read; run on the
examples' own schedules (BLIS-style gemm and batch_matmul, conv2d's
register-blocked rows), they must leave every output bit for bit unchanged
(the loop interpreter, at sizes with and without tails).  The schedule
comparison must then notice a document asking for a different jam factor
or pack placement.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func

from irkit.frontend import parse_design
from irkit.oracle.loop_interp import run_loop_kernel
from irkit.raising.loop_reader import RaiseError
from irkit.raising.unjam import unjam
from irkit.raising.unpack import unpack
from irkit.raising.verify import compare_modules, lowered_loops
from irkit.reference import random_inputs

ROOT = Path(__file__).resolve().parents[2]

CASES = {
    "gemm": [{"M": 13, "N": 37, "K": 9}, {"M": 100, "N": 40, "K": 3}],
    "batch_matmul": [{"NB": 2, "M": 13, "N": 21, "K": 7}],
    "conv2d": [{"N": 1, "C": 3, "F": 5, "H": 6, "W": 9}, {"N": 1, "C": 2, "F": 4, "H": 3, "W": 60}],
}


def _loops(name: str):
    path = ROOT / "examples" / f"{name}.design"
    design = parse_design(path.read_text(), str(path))
    return design, lowered_loops(design)


def _kernel(module) -> func.FuncOp:
    return next(op for op in module.body.block.ops if isinstance(op, func.FuncOp))


@pytest.mark.parametrize("name", sorted(CASES))
def test_undoing_packs_and_register_blocks_keeps_every_result(name):
    design, loops = _loops(name)
    normal = loops.clone()
    kernel = _kernel(normal)
    packs = unpack(kernel)
    jams = unjam(kernel)
    normal.verify()
    assert packs and all(d["kind"] == "pack" for d in packs)
    assert jams and all(d["kind"] == "unroll_jam" for d in jams)
    assert not any(op.name in ("loop.local", "loop.alloc") and "pack" in str(op) for op in kernel.walk())
    for sizes in CASES[name]:
        inputs = random_inputs(design, sizes, seed=3)
        before = run_loop_kernel(loops, inputs, sizes)
        after = run_loop_kernel(normal, inputs, sizes)
        for tensor, value in before.items():
            assert np.array_equal(value, after[tensor]), (name, sizes, tensor)


def test_gemm_directives_come_back():
    _, loops = _loops("gemm")
    kernel = _kernel(loops.clone())
    assert unpack(kernel) == [
        {"kind": "pack", "tensor": "B", "loop": "ko"},
        {"kind": "pack", "tensor": "A", "loop": "io"},
    ]
    assert {d["loop"]: d["factor"] for d in unjam(kernel)} == {"ii": 6}


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "directive", "words"),
    [
        ("unroll_jam ii by 6", "unroll_jam ii by 3", "unroll_jam ii by 6", "jammed by 6, generated code by 3"),
        ("pack A at io", "pack A at jr", "pack A at io", "packs A at io, generated code at jr"),
    ],
)
def test_a_different_jam_or_pack_is_reported_at_its_directive(old, new, directive, words):
    path = ROOT / "examples" / "gemm.design"
    text = path.read_text()
    assert old in text
    design = parse_design(text, str(path))
    variant = parse_design(text.replace(old, new), "variant.design")
    diags = compare_modules(design, lowered_loops(variant))
    assert [d.line for d in diags] == [_line_of(text, directive)]
    assert words in diags[0].message and diags[0].file == str(path)


def test_a_register_tile_never_stored_back_is_an_error():
    _, loops = _loops("gemm")
    module = loops.clone()
    kernel = _kernel(module)
    unpack(kernel)

    def copies_out_c_acc0(op) -> bool:  # C[...] = C_acc0[...]
        source = getattr(op.value, "owner", None) if op.name == "loop.store" else None
        return source is not None and source.name == "loop.load" and source.memref.name_hint == "C_acc0"

    store = next(op for op in kernel.walk() if copies_out_c_acc0(op))
    store.detach()
    store.erase()
    with pytest.raises(RaiseError, match="C_acc0' is never stored back"):
        unjam(kernel)


def test_rowsum_raises_to_a_named_reduce():
    from irkit.raising.to_tensorop import raise_kernel

    _, loops = _loops("rowsum")
    raised = raise_kernel(_kernel(loops.clone()))
    names = [op.name for op in raised.body.block.ops]
    assert "tensorop.reduce" in names and "tensorop.fill" not in names
