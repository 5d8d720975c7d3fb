"""The affine core (irkit.affine.linear, irkit.affine.printer) against direct evaluation of random AffineExprs."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.ir.affine import AffineExpr, AffineMap

from irkit.affine.linear import (
    POSITIONS,
    Div,
    Lin,
    div_atom,
    exact_div,
    lin_of,
    no_div,
    rounded_div,
    split_floordiv,
    try_lin_of,
)
from irkit.affine.printer import DESIGN_TEXT, PYTHON, TEXT_TREE, affine_text
from irkit.affine_text import evaluate, parse_affine
from irkit.dialects.loop import linear_form

N_DIMS, N_SYMS = 3, 2
DIMS = ["d0", "d1", "d2"]
SYMS = ["s0", "s1"]


def _exprs() -> st.SearchStrategy[AffineExpr]:
    leaves = st.one_of(
        st.integers(-20, 20).map(AffineExpr.constant),
        st.integers(0, N_DIMS - 1).map(AffineExpr.dimension),
        st.integers(0, N_SYMS - 1).map(AffineExpr.symbol),
    )

    def grow(children: st.SearchStrategy[AffineExpr]) -> st.SearchStrategy[AffineExpr]:
        const = st.integers(-7, 7)
        divisor = st.integers(1, 7)
        return st.one_of(
            st.tuples(children, children).map(lambda ab: ab[0] + ab[1]),
            st.tuples(children, const).map(lambda ac: ac[0] * ac[1]),
            st.tuples(const, children).map(lambda ca: AffineExpr.constant(ca[0]) * ca[1]),
            st.tuples(children, divisor).map(lambda ad: ad[0] // ad[1]),
            st.tuples(children, divisor).map(lambda ad: ad[0].ceil_div(ad[1])),
            st.tuples(children, divisor).map(lambda ad: ad[0] % ad[1]),
        )

    return st.recursive(leaves, grow, max_leaves=8)


POINT = st.tuples(st.lists(st.integers(-30, 30), min_size=N_DIMS, max_size=N_DIMS),
                  st.lists(st.integers(-30, 30), min_size=N_SYMS, max_size=N_SYMS))  # fmt: skip


def _direct(e: AffineExpr, dims: list[int], syms: list[int]) -> int:
    return AffineMap(N_DIMS, N_SYMS, (e,)).eval(dims, syms)[0]


def _env(dims: list[int], syms: list[int]) -> dict[str, int]:
    return {**dict(zip(DIMS, dims)), **dict(zip(SYMS, syms))}


@settings(max_examples=300, deadline=None)
@given(_exprs(), POINT)
def test_exact_division_rules_agree_with_evaluation(e, point):
    dims, syms = point
    env = _env(dims, syms)
    want = _direct(e, dims, syms)
    for rule in (div_atom, split_floordiv, exact_div, no_div):
        form = try_lin_of(e, DIMS, SYMS, rule)
        if form is not None:
            assert form.evaluate(env) == want, rule.__name__
    assert lin_of(e, DIMS, SYMS).evaluate(env) == want  # the default rule takes every affine expression


@settings(max_examples=300, deadline=None)
@given(_exprs(), POINT)
def test_printers_agree_with_evaluation(e, point):
    dims, syms = point
    env = _env(dims, syms)
    want = _direct(e, dims, syms)
    assert eval(PYTHON.print(e, DIMS, SYMS), {"__builtins__": {}}, dict(env)) == want  # noqa: S307
    tree = TEXT_TREE.print(e, DIMS, syms)  # the oracle binds symbols to their values
    assert evaluate(tree, env) == want
    text = affine_text(e, DIMS, SYMS)  # design text; `/` floors (a leading `-x` is not in the document grammar)
    assert eval(text.replace("/", "//"), {"__builtins__": {}}, dict(env)) == want, text  # noqa: S307
    if not re.search(r"-[A-Za-z_(]", text):  # no unary minus of a name: the document grammar reads it back
        assert evaluate(parse_affine(text), env) == want, text


@settings(max_examples=200, deadline=None)
@given(_exprs(), POINT)
def test_positions_and_rounded_forms(e, point):
    dims, _ = point
    e = e.replace_dims_and_symbols([AffineExpr.dimension(i) for i in range(N_DIMS)], [AffineExpr.constant(3)] * N_SYMS)
    form = linear_form(e)
    if form is not None:
        terms, const = form
        assert sum(k * dims[p] for p, k in terms.items()) + const == _direct(e, dims, [0, 0])
    rounded = linear_form(e, rounded=True)
    assert (rounded is None) == (try_lin_of(e, POSITIONS, div=rounded_div) is None)
    if form is not None:
        assert rounded == form  # rounding changes only divisions


def test_exact_text():
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    s0 = AffineExpr.symbol(0)
    assert affine_text(d1 + d0 * 2 + 3, ["y", "x"], []) == "x + 2*y + 3"
    assert affine_text(d0 * -1 + s0, ["x"], ["H"]) == "H - x"
    assert affine_text(d0 * -1 + -2, ["x"], []) == "-x - 2"
    assert affine_text(AffineExpr.constant(-4), [], []) == "-4"
    assert affine_text((s0 + -1) // 2 + 1, [], ["H"]) == "(H - 1) / 2 + 1"
    assert affine_text(s0.ceil_div(4), [], ["H"]) == "(H + 3) / 4"
    assert affine_text((d0 * 4) // 2, ["x"], []) == "2*x"
    assert PYTHON.print(d0.ceil_div(3) + -1, ["i"], []) == "((-((-i) // (3))) + (-1))"
    assert DESIGN_TEXT.sum_text([("x", -2), ("y", 1)], -1) == "-2*x + y - 1"


def test_division_rules():
    x = Lin.of("x")
    assert div_atom("floordiv", x, 4) == Lin.of(Div("floordiv", x, 4))
    assert div_atom("mod", Lin(const=-7), 3) == Lin(const=2)
    assert split_floordiv("floordiv", x.scale(8) + Lin.of("y") + 9, 4) == x.scale(2) + Lin.of(Div("floordiv", Lin.of("y") + 1, 4)) + 2
    assert exact_div("ceildiv", x.scale(6) + 3, 3) == x.scale(2) + 1
    assert exact_div("ceildiv", x.scale(6) + 2, 3) is None
    assert rounded_div("floordiv", x.scale(1530) + 7, 6) == x.scale(255) + 1
    assert rounded_div("mod", x + 5, 6) == x
    assert Lin({"x": 1, "y": 2}, 3).renamed(lambda a: "z") == Lin.of("z").scale(3) + 3


@settings(max_examples=300, deadline=None)
@given(e=_exprs(), point=POINT, known=st.lists(st.booleans(), min_size=N_DIMS, max_size=N_DIMS))
def test_the_c_printer_computes_the_expression(e: AffineExpr, point, known) -> None:
    """The C backend's printer (the core's walk over C atom texts) evaluates, with its helpers'
    C semantics, to the map's value: dims given as C names or as known integers alike."""
    from irkit.backends.c import AffinePrinter as CPrinter

    dims, syms = point
    used: set[str] = set()
    printer = CPrinter(used.add)
    dim_args = [v if k else f"d{i}" for i, (v, k) in enumerate(zip(dims, known))]
    text = printer.expr(e, dim_args, SYMS)
    env = {f"d{i}": v for i, v in enumerate(dims)} | {f"s{j}": v for j, v in enumerate(syms)}
    env |= {"irkit_floordiv": lambda a, b: a // b, "irkit_ceildiv": lambda a, b: -((-a) // b),
            "irkit_mod": lambda a, b: a % b}  # fmt: skip
    assert eval(text, {}, env) == _direct(e, dims, syms), text
    assert used <= {"irkit_floordiv", "irkit_ceildiv", "irkit_mod"}


def test_as_const():
    x, y = Lin.of("x"), Lin.of("y")
    assert (x + 5 - x).as_const() == 5
    assert (x + 5 - x).is_const
    assert Lin().as_const() == 0
    assert (x.scale(2) + y - x).as_const() is None
    assert Lin({"x": 0}, -3).as_const() == -3  # zero coefficients are dropped
