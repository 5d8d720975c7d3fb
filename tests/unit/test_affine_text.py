"""Affine expression text: parsing, canonical printing, evaluation."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irkit.affine_text import (
    AffineTextError,
    BinOp,
    Const,
    Var,
    canonical,
    evaluate,
    format_affine,
    is_affine,
    names_in,
    parse_affine,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("H+2", "H + 2"),
        ("(H + 2)", "H + 2"),
        ("a - (b - c)", "a - (b - c)"),
        ("a - b - c", "a - b - c"),
        ("(a + b) * 2", "(a + b) * 2"),
        ("a / (b * 2)", "a / (b * 2)"),
        ("2*x+1", "2 * x + 1"),
        ("x + -1", "x + -1"),
    ],
)
def test_canonical_spelling(text, expected):
    assert canonical(text) == expected


@pytest.mark.parametrize("text", ["", "a +", "a b", "(a", "a $ b", "- x"])
def test_rejects_malformed(text):
    with pytest.raises(AffineTextError):
        parse_affine(text)


def test_evaluate_floor_division_and_names():
    e = parse_affine("(H + 2 * P - R) / S + 1")
    assert evaluate(e, {"H": 56, "P": 1, "R": 3, "S": 1}) == 56
    assert evaluate(e, {"H": 56, "P": 1, "R": 3, "S": 2}) == 28
    assert names_in(e) == ["H", "P", "R", "S"]


def test_is_affine():
    assert is_affine(parse_affine("2 * x + y / 4"))
    assert not is_affine(parse_affine("x * y"))
    assert not is_affine(parse_affine("x / y"))


def exprs():
    leaf = st.one_of(st.sampled_from(["i", "j", "N"]).map(Var), st.integers(-5, 50).map(Const))
    return st.recursive(
        leaf,
        lambda sub: st.builds(BinOp, st.sampled_from("+-*"), sub, sub),
        max_leaves=8,
    )


@given(exprs())
def test_print_parse_roundtrip_preserves_value(e):
    text = format_affine(e)
    again = parse_affine(text)
    env = {"i": 3, "j": 7, "N": 11}
    assert evaluate(again, env) == evaluate(e, env)
    assert format_affine(again) == text
