"""Affine index expressions as linear forms over SSA values, for raising.

Raising reads loop bounds and access indices, which the `loop` dialect
stores as affine maps applied to operands (loop variables and kernel
sizes).  Comparing and rewriting them is easiest as a linear form
(`irkit.affine.linear.Lin` over SSA values) in raising's normal form
(`split_floordiv`): the quasi-affine parts of tile tails and packed indices
are floordiv atoms (`Div`), a ceildiv and a mod are rewritten through them.
A product of two variables has no linear form; the raising pass then says
plainly that it cannot raise that loop or access.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from irkit.affine.linear import Div, Lin, split_floordiv, try_lin_of


def map_results(amap: AffineMap, operands: Sequence[SSAValue]) -> list[Lin | None]:
    """Each result of `amap` applied to `operands` (the map's dimensions), as a linear form."""
    return [try_lin_of(r, operands, div=split_floordiv) for r in amap.results]


def affine_map_of(forms: Sequence[Lin]) -> tuple[AffineMap, list[SSAValue]]:
    """`forms` as one affine map over the SSA values they use (its operands, in first-use order);
    floordiv atoms become `floordiv` expressions."""
    operands: list[SSAValue] = []

    def collect(f: Lin) -> None:
        for key in f.terms:
            if isinstance(key, Div):
                collect(key.arg)
            elif key not in operands:
                operands.append(key)  # type: ignore[arg-type]

    def expr_of(f: Lin) -> AffineExpr:
        expr = AffineExpr.constant(f.const)
        for key, c in f.terms.items():
            term = expr_of(key.arg) // key.by if isinstance(key, Div) else AffineExpr.dimension(operands.index(key))
            expr = expr + term * c
        return expr

    for f in forms:
        collect(f)
    return AffineMap(len(operands), 0, tuple(expr_of(f) for f in forms)), operands


def has_floordiv(forms: Sequence[Lin]) -> bool:
    return any(isinstance(key, Div) for f in forms for key in f.terms)


def provably_at_most(a: Lin, b: Lin) -> bool:
    """Is `a <= b` for every value of non-negative variables?  Proved by bounding each floordiv
    term of `b - a` from below (`c*floor(e/q) >= c*(e - q + 1)/q` for c > 0, `>= c*e/q` for
    c < 0) until the rest is linear with non-negative coefficients and a constant above -1
    (an integer above -1 is >= 0).  `M <= 11*ceildiv(M, 11)` is proved; False means unproved."""
    from fractions import Fraction

    def lower(form: Lin) -> dict | None:
        out: dict = {1: Fraction(form.const)}
        for key, c in form.terms.items():
            if not isinstance(key, Div):
                out[key] = out.get(key, Fraction(0)) + c
                continue
            if key.kind != "floordiv":
                return None
            inner = lower(key.arg) if c > 0 else upper(key.arg)
            if inner is None:
                return None
            shift = Fraction(-(key.by - 1)) if c > 0 else Fraction(0)
            for k, v in inner.items():
                out[k] = out.get(k, Fraction(0)) + Fraction(c, key.by) * v
            out[1] += Fraction(c, key.by) * shift
        return out

    def upper(form: Lin) -> dict | None:
        got = lower(form.scale(-1))
        return None if got is None else {k: -v for k, v in got.items()}

    bound = lower(b - a)
    if bound is None:
        return False
    return all(v >= 0 for k, v in bound.items() if k != 1) and bound[1] > -1
