"""The design printer is not bounded by Python's recursion limit.

A statement the frontend accepts (a long sum, many nested minuses) must
print: the printer walks expressions with an explicit stack.  The IR is
built directly here, so the test does not depend on how deep the frontend
itself can go; `test_deep_documents_format` goes through the frontend.
"""

import sys

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, FloatAttr, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, Region

from irkit.backends.design_text import print_design
from irkit.dialects import design as d
from irkit.frontend import build_design

DEPTH = 3 * sys.getrecursionlimit()  # well past any recursive walk


def _document(block: Block, dtype: str = "f32") -> ModuleOp:
    stmt = d.StmtOp("y", ["i"], "=", Region(block))
    tensors = [d.TensorOp("x", dtype, ["4"], "input"), d.TensorOp("y", dtype, ["4"], "output")]
    return ModuleOp([d.DesignOp("t", [*tensors, stmt])])


def _read(block: Block, etype) -> object:
    op = d.ReadOp("x", ["i"], etype)
    block.add_op(op)
    return op.results[0]


def test_a_long_left_nested_sum_prints():
    block = Block()
    value = _read(block, Float32Type())
    for _ in range(DEPTH):
        add = arith.AddfOp(value, _read(block, Float32Type()))
        block.add_op(add)
        value = add.results[0]
    block.add_op(d.YieldOp(value))
    text = print_design(_document(block))
    assert f"y[i] = {' + '.join(['x[i]'] * (DEPTH + 1))}\n" in text


def test_a_long_right_nested_difference_prints_with_parentheses():
    block = Block()
    value = _read(block, Float32Type())
    for _ in range(DEPTH):
        sub = arith.SubfOp(_read(block, Float32Type()), value)
        block.add_op(sub)
        value = sub.results[0]
    block.add_op(d.YieldOp(value))
    line = next(x for x in print_design(_document(block)).split("\n") if x.strip().startswith("y[i]"))
    assert line.count("(") == DEPTH - 1 and line.endswith("x[i] - x[i]" + ")" * (DEPTH - 1))


def test_many_nested_float_negations_print():
    block = Block()
    value = _read(block, Float32Type())
    for _ in range(DEPTH):
        neg = arith.NegfOp(value)
        block.add_op(neg)
        value = neg.results[0]
    block.add_op(d.YieldOp(value))
    assert f"y[i] = {'- ' * (DEPTH - 1)}-x[i]\n" in print_design(_document(block))


def test_many_nested_integer_negations_print():
    i32 = IntegerType(32)
    block = Block()
    value = _read(block, i32)
    for _ in range(DEPTH):
        zero = arith.ConstantOp(IntegerAttr(0, i32))
        sub = arith.SubiOp(zero.results[0], value)
        block.add_ops([zero, sub])
        value = sub.results[0]
    block.add_op(d.YieldOp(value))
    assert f"y[i] = {'- ' * (DEPTH - 1)}-x[i]\n" in print_design(_document(block, "i32"))


def test_deeply_nested_calls_print():
    block = Block()
    value = _read(block, Float32Type())
    for _ in range(DEPTH):
        one = arith.ConstantOp(FloatAttr(1.0, Float32Type()))
        call = arith.MaximumfOp(value, one.results[0])
        block.add_ops([one, call])
        value = call.results[0]
    block.add_op(d.YieldOp(value))
    assert "max(" * DEPTH + "x[i]" + ", 1)" * DEPTH in print_design(_document(block))


@pytest.mark.parametrize(
    "rhs",
    [" + ".join(["x[i]"] * 1000), "-" * 1000 + "x[i]", "(" * 300 + "x[i]" + ")" * 300],
    ids=["sum1000", "neg1000", "parens300"],
)
def test_deep_documents_format(rhs):
    """Through the frontend: whatever it builds, the printer prints and the print builds back the same."""
    text = f"design t {{ tensor x : f32[4] input\n tensor y : f32[4] output\n y[i] = {rhs} }}\n"
    try:
        module, diagnostics = build_design(text, "deep.design")
    except RecursionError:  # the frontend's own limit (irkit/frontend/build.py), not the printer's
        pytest.skip("the frontend does not build this depth yet")
    if module is None or any(x.severity == "error" for x in diagnostics):
        pytest.skip("the frontend refuses this depth")
    printed = print_design(module)
    again, _ = build_design(printed, "deep.design")
    assert again is not None and str(again) == str(module)
