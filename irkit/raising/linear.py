"""Affine index expressions as linear forms over SSA values, for raising.

Raising reads loop bounds and access indices, which the `loop` dialect
stores as affine maps applied to operands (loop variables and kernel
sizes).  Comparing and rewriting them is easiest as a linear form: a
mapping from each SSA value to its integer coefficient, plus a constant.
Anything that is not linear (`floordiv`, `ceildiv`, `mod`, a product of two
variables) has no linear form; the raising pass then says plainly that it
cannot raise that loop or access.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)


class Atom:
    """`floor(inner / q)` (kind "fd") or `inner mod q` (kind "mod"), q > 0: the quasi-affine
    parts of tile tails and packed indices, kept as opaque terms of a `Linear`."""

    __slots__ = ("kind", "inner", "q")

    def __init__(self, kind: str, inner: Linear, q: int):
        self.kind, self.inner, self.q = kind, inner, q

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Atom) and (self.kind, self.inner, self.q) == (other.kind, other.inner, other.q)

    def __hash__(self) -> int:
        return hash((self.kind, self.inner, self.q))

    def __repr__(self) -> str:
        return f"{self.kind}({self.inner.coeffs}, {self.inner.const}; {self.q})"


class Linear:
    """`sum(coeff[v] * v) + const` over SSA values (and `Atom`s); immutable by convention."""

    __slots__ = ("coeffs", "const")

    def __init__(self, coeffs: dict[SSAValue, int] | None = None, const: int = 0):
        self.coeffs = {v: c for v, c in (coeffs or {}).items() if c != 0}
        self.const = const

    @staticmethod
    def of(value: SSAValue) -> Linear:
        return Linear({value: 1})

    def __add__(self, other: Linear) -> Linear:
        out = dict(self.coeffs)
        for v, c in other.coeffs.items():
            out[v] = out.get(v, 0) + c
        return Linear(out, self.const + other.const)

    def __sub__(self, other: Linear) -> Linear:
        return self + other.scale(-1)

    def scale(self, k: int) -> Linear:
        return Linear({v: c * k for v, c in self.coeffs.items()}, self.const * k)

    def vars(self) -> set[SSAValue]:
        return set(self.coeffs)

    def without(self, drop: Iterable[SSAValue]) -> Linear:
        """The form with the terms of `drop` removed (the constant kept)."""
        dropped = set(drop)
        return Linear({v: c for v, c in self.coeffs.items() if v not in dropped}, self.const)

    def only(self, keep: Iterable[SSAValue]) -> Linear:
        """The terms of `keep` alone, no constant."""
        kept = set(keep)
        return Linear({v: c for v, c in self.coeffs.items() if v in kept}, 0)

    def is_var(self, value: SSAValue) -> bool:
        return self.const == 0 and self.coeffs == {value: 1}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Linear) and self.coeffs == other.coeffs and self.const == other.const

    def __hash__(self) -> int:
        return hash((frozenset(self.coeffs.items()), self.const))

    def text(self, names: dict[SSAValue, str]) -> str:
        """Canonical text (`H + 2`, `x - xo`, `2*k + 1`), variables in name order."""
        parts: list[str] = []
        for v, c in sorted(self.coeffs.items(), key=lambda vc: names.get(vc[0], "?")):
            name = names.get(v, "?")
            term = name if abs(c) == 1 else f"{abs(c)}*{name}"
            parts.append(("- " if c < 0 else "+ ") + term)
        if self.const or not parts:
            parts.append(("- " if self.const < 0 else "+ ") + str(abs(self.const)))
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]


def linear_of(expr: AffineExpr, dims: Sequence[Linear], syms: Sequence[Linear] = ()) -> Linear | None:
    """The linear form of an affine expression whose dimensions are `dims`; None if not linear."""
    if isinstance(expr, AffineConstantExpr):
        return Linear({}, expr.value)
    if isinstance(expr, AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, AffineSymExpr):
        return syms[expr.position] if expr.position < len(syms) else None
    if not isinstance(expr, AffineBinaryOpExpr):
        return None
    lhs = linear_of(expr.lhs, dims, syms)
    rhs = linear_of(expr.rhs, dims, syms)
    if lhs is None or rhs is None:
        return None
    if expr.kind == AffineBinaryOpKind.Add:
        return lhs + rhs
    if expr.kind == AffineBinaryOpKind.Mul:
        if not rhs.coeffs:
            return lhs.scale(rhs.const)
        if not lhs.coeffs:
            return rhs.scale(lhs.const)
        return None
    if rhs.coeffs or rhs.const <= 0:
        return None
    q = rhs.const
    if expr.kind == AffineBinaryOpKind.FloorDiv:
        return floordiv(lhs, q)
    if expr.kind == AffineBinaryOpKind.CeilDiv:  # ceil(e / q) = -floor(-e / q)
        return floordiv(lhs.scale(-1), q).scale(-1)
    if expr.kind == AffineBinaryOpKind.Mod:
        return lhs - floordiv(lhs, q).scale(q)
    return None


def floordiv(e: Linear, q: int) -> Linear:
    """`floor(e / q)`: exact when q divides every term; otherwise the divisible terms come out
    and the rest stays an atom."""
    if q == 1:
        return e
    whole = Linear({v: c // q for v, c in e.coeffs.items() if c % q == 0}, 0)
    rest = Linear({v: c for v, c in e.coeffs.items() if c % q != 0}, e.const)
    if not rest.coeffs:
        return whole + Linear({}, rest.const // q)
    shift = rest.const // q  # floor((r + q*k) / q) = floor(r / q) + k
    rest = Linear(rest.coeffs, rest.const - shift * q)
    return whole + Linear({Atom("fd", rest, q): 1}, shift)


def map_results(amap: AffineMap, operands: Sequence[SSAValue]) -> list[Linear | None]:
    """Each result of `amap` applied to `operands` (the map's dimensions), as a linear form."""
    dims = [Linear.of(v) for v in operands]
    return [linear_of(r, dims) for r in amap.results]


def affine_map_of(forms: Sequence[Linear]) -> tuple[AffineMap, list[SSAValue]]:
    """`forms` as one affine map over the SSA values they use (its operands, in first-use order);
    floordiv atoms become `floordiv` expressions."""
    operands: list[SSAValue] = []

    def collect(f: Linear) -> None:
        for key in f.coeffs:
            if isinstance(key, Atom):
                collect(key.inner)
            elif key not in operands:
                operands.append(key)  # type: ignore[arg-type]

    def expr_of(f: Linear) -> AffineExpr:
        expr = AffineExpr.constant(f.const)
        for key, c in f.coeffs.items():
            term = expr_of(key.inner) // key.q if isinstance(key, Atom) else AffineExpr.dimension(operands.index(key))
            expr = expr + term * c
        return expr

    for f in forms:
        collect(f)
    return AffineMap(len(operands), 0, tuple(expr_of(f) for f in forms)), operands


def has_floordiv(forms: Sequence[Linear]) -> bool:
    return any(isinstance(key, Atom) for f in forms for key in f.coeffs)


def evaluate(form: Linear, env: dict) -> int:
    """The value of `form` with every variable bound in `env` (floordiv atoms rounded down)."""
    total = form.const
    for key, c in form.coeffs.items():
        total += c * (evaluate(key.inner, env) // key.q if isinstance(key, Atom) else env[key])
    return total


def provably_at_most(a: Linear, b: Linear) -> bool:
    """Is `a <= b` for every value of non-negative variables?  Proved by bounding each floordiv
    term of `b - a` from below (`c*floor(e/q) >= c*(e - q + 1)/q` for c > 0, `>= c*e/q` for
    c < 0) until the rest is linear with non-negative coefficients and a constant above -1
    (an integer above -1 is >= 0).  `M <= 11*ceildiv(M, 11)` is proved; False means unproved."""
    from fractions import Fraction

    def lower(form: Linear) -> dict | None:
        out: dict = {1: Fraction(form.const)}
        for key, c in form.coeffs.items():
            if not isinstance(key, Atom):
                out[key] = out.get(key, Fraction(0)) + c
                continue
            if key.kind != "fd":
                return None
            inner = lower(key.inner) if c > 0 else upper(key.inner)
            if inner is None:
                return None
            shift = Fraction(-(key.q - 1)) if c > 0 else Fraction(0)
            for k, v in inner.items():
                out[k] = out.get(k, Fraction(0)) + Fraction(c, key.q) * v
            out[1] += Fraction(c, key.q) * shift
        return out

    def upper(form: Linear) -> dict | None:
        got = lower(form.scale(-1))
        return None if got is None else {k: -v for k, v in got.items()}

    bound = lower(b - a)
    if bound is None:
        return False
    return all(v >= 0 for k, v in bound.items() if k != 1) and bound[1] > -1
