"""Legal edits of generated loop IR are not differences (`irkit verify --loops`).

Raising compares bodies by their dataflow, not their text: independent loads
in either order and the operands of a commutative operation either way, in
the jammed copies of a register block and in its tails as anywhere else.
The property draws such edits at random positions of the loops irkit
generates for the examples (register-blocked ones included) and checks that
verification still finds nothing.  The controls check that the comparison
still sees what is not legal: a non-commutative operation's operands
swapped, a load moved past the store of what it reads.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from search_candidates import candidate_documents
from xdsl.parser import Parser

from irkit.frontend import parse_design
from irkit.raising.verify import compare_modules, lowered_loops
from irkit.tools.opt import make_full_context

EXAMPLES = Path(__file__).parents[2] / "examples"
EDITED = ("gemm", "conv2d", "batch_matmul", "blur", "softmax", "rowsum")
COMMUTATIVE = re.compile(r"^(\s*%\S+ = arith\.(?:addf|mulf|maximumf|minimumf) )(%\S+), (%\S+)( : \S+)$")
LOAD = re.compile(r"^\s*(%\S+) = loop\.load (%\S+)\[")
STORE = re.compile(r"^\s*loop\.store (%\S+), (%\S+)\[")


@cache
def _document(example: str):
    path = EXAMPLES / f"{example}.design"
    return parse_design(path.read_text(), str(path))


@cache
def _loops(example: str) -> str:
    return str(lowered_loops(_document(example)))


def _verify(example: str, text: str) -> list[str]:
    module = Parser(make_full_context(), text, "edited.mlir").parse_module()
    return [d.message for d in compare_modules(_document(example), module)]


def _swappable(lines: list[str]) -> list[int]:
    """Lines i where lines i and i + 1 are loads of which the second does not use the first."""
    out = []
    for i in range(len(lines) - 1):
        a, b = LOAD.match(lines[i]), LOAD.match(lines[i + 1])
        if a and b and a.group(1) not in lines[i + 1]:
            out.append(i)
    return out


def _commutable(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if COMMUTATIVE.match(line)]


def _swap(lines: list[str], i: int) -> list[str]:
    return lines[:i] + [lines[i + 1], lines[i]] + lines[i + 2 :]


def _commute(lines: list[str], i: int) -> list[str]:
    m = COMMUTATIVE.match(lines[i])
    assert m is not None
    return lines[:i] + [f"{m.group(1)}{m.group(3)}, {m.group(2)}{m.group(4)}"] + lines[i + 1 :]


@pytest.mark.parametrize("example", ["gemm", "conv2d"])
def test_the_edits_that_were_false_alarms_verify(example):
    """The first jammed copy of the micro-kernel with its two loads swapped, then with its
    product's operands commuted (both reported as differences before)."""
    lines = _loops(example).splitlines()
    first_swap = _swappable(lines)[0]
    assert _verify(example, "\n".join(_swap(lines, first_swap))) == []
    first_product = next(i for i in _commutable(lines) if "arith.mulf" in lines[i])
    assert _verify(example, "\n".join(_commute(lines, first_product))) == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(example=st.sampled_from(EDITED), data=st.data())
def test_random_legal_edits_verify(example, data):
    lines = _loops(example).splitlines()
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        kinds = [k for k, found in (("swap", _swappable(lines)), ("commute", _commutable(lines))) if found]
        kind = data.draw(st.sampled_from(kinds), label="kind")
        if kind == "swap":
            i = data.draw(st.sampled_from(_swappable(lines)), label="swap at")
            lines = _swap(lines, i)
        else:
            i = data.draw(st.sampled_from(_commutable(lines)), label="commute at")
            lines = _commute(lines, i)
        note(f"{kind} at line {i + 1}: {lines[i].strip()[:90]}")
    assert _verify(example, "\n".join(lines)) == []


@pytest.mark.parametrize("op", ["subf", "divf"])
def test_a_non_commutative_operation_with_its_operands_swapped_is_a_difference(op):
    """softmax's `x - max` and `e / sum` with their operands the other way round."""
    lines = _loops("softmax").splitlines()
    pattern = re.compile(rf"^(\s*%\S+ = arith\.{op} )(%\S+), (%\S+)( : \S+)$")
    i = next(i for i, line in enumerate(lines) if pattern.match(line))
    m = pattern.match(lines[i])
    assert m is not None
    lines[i] = f"{m.group(1)}{m.group(3)}, {m.group(2)}{m.group(4)}"
    assert _verify("softmax", "\n".join(lines)) != []


LOOP_PAIR = """
func.func @k(%N: index {irkit.name = "N"}, %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %t = loop.alloc(%N) {tensor_name = "t", shape = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i"} {
    BODY_A
  }
  loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j"} {
    BODY_B
  }
  func.return
}
"""


def _same(body_a: list[str], body_b: list[str]) -> bool:
    from irkit.dialects import loop as lp
    from irkit.raising.unjam import _same_body

    text = LOOP_PAIR.replace("BODY_A", "\n    ".join(body_a)).replace(
        "BODY_B", "\n    ".join(body_b).replace("%i", "%j")
    )
    module = Parser(make_full_context(), text, "pair.mlir").parse_module()
    a, b = [op for op in module.walk() if isinstance(op, lp.ForOp)]
    return _same_body(a, b)


LOAD_T = "%v = loop.load %t[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32"
LOAD_Y = "%w = loop.load %y[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32"
ONE = "%c = arith.constant 1.0 : f32"
STORE_T = "loop.store %c, %t[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>"
SUM = "%s = arith.addf %v, %w : f32"
STORE_Y = "loop.store %s, %y[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>"


def test_loads_compare_by_the_stores_they_follow_not_by_their_place():
    """Two independent loads either way, the sum's operands either way: the same loop.  The load
    of t moved past the store to t reads what that store wrote: another loop."""
    base = [LOAD_T, LOAD_Y, ONE, STORE_T, SUM, STORE_Y]
    assert _same(base, base)
    assert _same(base, [LOAD_Y, LOAD_T, ONE, STORE_T, SUM, STORE_Y])
    assert _same(base, [LOAD_T, LOAD_Y, ONE, STORE_T, SUM.replace("%v, %w", "%w, %v"), STORE_Y])
    assert not _same(base, [LOAD_Y, ONE, STORE_T, LOAD_T, SUM, STORE_Y])
    assert not _same(base, [LOAD_T, LOAD_Y, ONE, STORE_T, SUM.replace("addf", "subf"), STORE_Y])


REGISTER_BLOCKED = {
    "gemm": {"M": 40, "N": 40, "K": 40},
    "conv2d": {"N": 1, "C": 16, "F": 10, "H": 12, "W": 20},  # jams beside a vector loop with a remainder
    "batch_matmul": {"NB": 2, "M": 16, "N": 16, "K": 16},
}


@pytest.mark.parametrize("example", sorted(REGISTER_BLOCKED))
def test_the_schedules_the_search_proposes_verify(example):
    """Register blocks, packs and their tails in every form the tuner's records produce: raising
    (with its bound comparisons of a block and its remainder) finds no difference."""
    from irkit.raising.verify import verify_document

    path = EXAMPLES / f"{example}.design"
    found = candidate_documents(path, REGISTER_BLOCKED[example], width=8, depth=8, keep=10, seed=5)
    for _, schedule, document in found:
        assert [d.message for d in verify_document(parse_design(document, str(path)))] == [], schedule
    assert any("unroll_jam" in schedule for _, schedule, _ in found), "no register block: nothing checked"
