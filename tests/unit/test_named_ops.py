"""The registry of named operations: signatures, shapes, loop names."""

import pytest
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64

from irkit.affine_text import evaluate, parse_affine
from irkit.named_ops import NAMED_OPS, NamedOpError, get_named_op


def shape(*dims):
    return [parse_affine(d) for d in dims]


def test_known_operations():
    assert {"matmul", "batch_matmul", "conv2d", "softmax", "transpose"} <= set(NAMED_OPS)


def test_unknown_operation_lists_the_known_ones():
    with pytest.raises(NamedOpError, match="unknown operation 'matmull'; expected one of .*matmul"):
        get_named_op("matmull")


def test_arity_and_parameters_are_checked():
    conv = get_named_op("conv2d")
    with pytest.raises(NamedOpError, match="takes 2 operand tensors, got 1"):
        conv.check_call(["I"], {})
    with pytest.raises(NamedOpError, match="has no parameter 'strides'"):
        conv.check_call(["I", "W"], {"strides": IntegerAttr(1, i64)})
    with pytest.raises(NamedOpError, match="must be one of nchw, nhwc"):
        conv.check_call(["I", "W"], {"layout": StringAttr("chwn")})
    with pytest.raises(NamedOpError, match="must be positive"):
        conv.check_call(["I", "W"], {"stride": IntegerAttr(0, i64)})


def test_conv2d_output_shape_follows_stride_and_padding():
    conv = get_named_op("conv2d")
    params = {"stride": IntegerAttr(2, i64), "padding": IntegerAttr(1, i64)}
    out, agree = conv.result_shape([shape("N", "C", "H", "W"), shape("F", "C", "3", "3")], params)
    env = {"N": 1, "C": 64, "H": 56, "W": 56, "F": 64}
    assert [evaluate(e, env) for e in out] == [1, 64, 28, 28]
    assert len(agree) == 1
    assert conv.loops(4, params) == ["n", "f", "y", "x", "c", "r", "s"]


def test_matmul_requires_rank_two():
    with pytest.raises(NamedOpError, match="operand 1 of 'matmul' must have rank 2"):
        get_named_op("matmul").result_shape([shape("M"), shape("K", "N")], {})


def test_transpose_permutation():
    t = get_named_op("transpose")
    out, _ = t.result_shape([shape("A", "B", "C")], {})
    assert [str(e.name) for e in out] == ["C", "B", "A"]
