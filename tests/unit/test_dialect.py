"""Local verifiers of the design dialect, and its textual round trip."""

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import irkit.directives as dv
from irkit.context import make_context
from irkit.dialects import design as d


def verify_one(op):
    d.ScheduleOp("s", [op]).verify()


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (dv.SplitOp("k", 0, "ko", "ki"), "split factor must be positive"),
        (dv.UnrollOp("i", -1), "unroll factor must be positive"),
        (dv.VectorizeOp("x", 0), "vector width must be positive"),
        (dv.TileOp(["i", "j"], [4], ["io", "jo"], ["ii", "ji"]), "needs 2 factors"),
        (dv.ReorderOp(["i", "i"]), "names a loop twice"),
    ],
)
def test_directive_verifiers(op, message):
    with pytest.raises(VerifyException, match=message):
        verify_one(op)


def test_layout_verifier():
    with pytest.raises(VerifyException, match="not a permutation"):
        d.LayoutOp("A", "order", [0, 2]).verify()
    with pytest.raises(VerifyException, match="power of two"):
        d.LayoutOp("A", "row_major", align=48).verify()
    d.LayoutOp("A", "order", [1, 0], 64).verify()


def test_tensor_verifier():
    with pytest.raises(VerifyException, match="element type must be one of"):
        d.TensorOp("A", "f16", ["N"], "input").verify()
    with pytest.raises(VerifyException, match="not an affine expression"):
        d.TensorOp("A", "f32", ["N +"], "input").verify()


def test_named_op_verifier_uses_the_registry():
    with pytest.raises(VerifyException, match="unknown operation 'matmull'"):
        d.NamedOp("C", "matmull", ["A", "B"], {}).verify()


def test_directive_must_live_in_a_schedule():
    with pytest.raises(VerifyException, match="expects parent op 'design.schedule'"):
        d.DesignOp("x", [dv.ParallelOp("i")]).verify()


def test_custom_syntax_round_trips():
    text = """builtin.module {
  design.design "k" {
    design.size "N" = 8
    design.tensor "a" : "f32" ["N + 2"] "input"
    design.tensor "b" : "f32" ["N"] "output"
    design.stmt "b" ["i"] "=" {
      %0 = design.read "a" ["i + 2"] : f32
      design.yield %0 : f32
    }
    design.layout "a" kind "order" order [0] align 64
    design.schedule "b" {
      design.tile ["i"] by [4] -> ["io"] ["ii"]
      design.vectorize "ii" by 4
    }
    design.metric "latency"
  }
}"""
    module = Parser(make_context(), text, "k.mlir").parse_module()
    module.verify()
    assert str(module) == text
