"""Cost expressions: the text form reads back to the same expression, and evaluates the same."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from irkit.perf import expr as ex

NAMES = ("M", "N", "K", "cap")


def expressions(depth: int = 3):
    leaf = st.one_of(st.integers(-20, 300).map(ex.const), st.sampled_from(NAMES).map(ex.sym))
    if depth == 0:
        return leaf
    sub = expressions(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, sub).map(lambda ab: ab[0] + ab[1]),
        st.tuples(sub, sub).map(lambda ab: ab[0] - ab[1]),
        st.tuples(sub, sub).map(lambda ab: ab[0] * ab[1]),
        st.tuples(sub, st.integers(1, 64)).map(lambda ab: ex.cdiv(ab[0], ab[1])),
        st.tuples(sub, st.integers(1, 64)).map(lambda ab: ex.fdiv(ab[0], ab[1])),
        st.tuples(sub, st.integers(1, 64)).map(lambda ab: ex.mod(ab[0], ab[1])),
        st.tuples(sub, sub).map(lambda ab: ex.min_(ab[0], ab[1])),
        st.tuples(sub, sub).map(lambda ab: ex.max_(ab[0], ab[1])),
        st.tuples(sub, sub, sub, sub).map(lambda t: ex.le(*t)),
        st.tuples(sub, st.integers(1, 4096)).map(lambda ab: ex.gcd(ex.max_(ab[0], 1), ab[1])),
    )


ENV = {"M": np.array([1.0, 7.0, 64.0, 1000.0]), "N": np.array([3.0, 5.0, 96.0, 4096.0]),
       "K": np.array([2.0, 29.0, 1.0, 513.0]), "cap": np.array([256.0, 8.0, 4096.0, 16.0])}  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(expressions())
def test_text_round_trip_keeps_the_expression_and_its_values(e):
    text = ex.to_text(e)
    back = ex.parse(text)
    assert ex.to_text(back) == text
    a = ex.evaluate({"v": e}, ENV)["v"]
    b = ex.evaluate({"v": back}, ENV)["v"]
    assert np.array_equal(np.broadcast_to(a, (4,)), np.broadcast_to(b, (4,)))


@settings(max_examples=200, deadline=None)
@given(expressions())
def test_shared_text_defines_the_same_values(e):
    roots = {"a": e, "b": e * 2 + 1}
    defs, texts = ex.to_text_shared(roots)
    env: dict = {}
    for name, text in defs.items():
        env[name] = ex.subs(ex.parse(text), env)
    for key, root in roots.items():
        rebuilt = ex.subs(ex.parse(texts[key]), env)
        want = ex.evaluate({"v": root}, ENV)["v"]
        got = ex.evaluate({"v": rebuilt}, ENV)["v"]
        assert np.array_equal(np.broadcast_to(want, (4,)), np.broadcast_to(got, (4,)))


def test_interning_makes_equal_expressions_identical():
    a = ex.cdiv(ex.sym("N") + 3, 8) * ex.sym("M")
    b = ex.sym("M") * ex.cdiv(3 + ex.sym("N"), 8)
    assert a is b
    assert ex.slope(ex.min_(ex.sym("io") + 96, ex.sym("M")), "io") == 1
