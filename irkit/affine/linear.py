"""Linear forms over atoms (map positions, SSA values, size names) with floordiv, ceildiv and mod atoms.

`Lin` is `sum(coefficient * atom) + const`; an atom is whatever the user
works over -- a dimension position of a map (`POSITIONS`), an SSA value, a
name -- or a `Div` (`arg floordiv by`, `arg ceildiv by`, `arg mod by`).
`lin_of` reads an xDSL `AffineExpr` into a form; what it does with a
division by a constant is a *division rule* passed as `div`:

- `div_atom` (the default): constants folded, any other division kept as a
  `Div` atom (what `compute_at` proves footprints with);
- `split_floordiv`: the multiples of the divisor pulled out of a floordiv,
  ceildiv and mod rewritten through it (raising's normal form);
- `exact_div`: only divisions that leave no remainder (canonical design text);
- `no_div`: none (the loop dialect's `linear_form`);
- `rounded_div`: a linear stand-in, not an exact form (the cost model's boxes).

A rule returns None for a division it refuses; `lin_of` then raises
`NotAffine`, as it does for a symbol without a binding or a product of two
non-constant forms; `try_lin_of` returns None instead.  This module depends on xDSL only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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


class NotAffine(Exception):
    """An expression with no linear form (under the division rule in use)."""


@dataclass(frozen=True)
class Div:
    """`arg floordiv by`, `arg ceildiv by` or `arg mod by` (by > 0), an atom of a `Lin`."""

    kind: str
    arg: Lin
    by: int


class Lin:
    """sum(coefficient * atom) + const; no zero coefficients, terms in order of first use."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: Mapping[Any, int] | None = None, const: int = 0):
        self.terms: dict[Any, int] = {a: k for a, k in (terms or {}).items() if k}
        self.const = const

    @staticmethod
    def of(atom: Any) -> Lin:
        return Lin({atom: 1})

    def __add__(self, other: Lin | int) -> Lin:
        if isinstance(other, int):
            return Lin(self.terms, self.const + other)
        terms = dict(self.terms)
        for a, k in other.terms.items():
            terms[a] = terms.get(a, 0) + k
        return Lin(terms, self.const + other.const)

    def __sub__(self, other: Lin | int) -> Lin:
        return self + (other.scale(-1) if isinstance(other, Lin) else -other)

    def scale(self, k: int) -> Lin:
        return Lin({a: c * k for a, c in self.terms.items()}, self.const * k)

    def without(self, *atoms: Any) -> Lin:
        """The form with the terms of `atoms` removed (the constant kept)."""
        return Lin({a: k for a, k in self.terms.items() if not any(a is b or a == b for b in atoms)}, self.const)

    def only(self, *atoms: Any) -> Lin:
        """The terms of `atoms` alone, no constant."""
        return Lin({a: k for a, k in self.terms.items() if any(a is b or a == b for b in atoms)})

    def renamed(self, rename: Callable[[Any], Any]) -> Lin:
        """The form over `rename(atom)` for every atom that is not a `Div` (terms merged in order)."""
        terms: dict[Any, int] = {}
        for a, k in self.terms.items():
            b = Div(a.kind, a.arg.renamed(rename), a.by) if isinstance(a, Div) else rename(a)
            terms[b] = terms.get(b, 0) + k
        return Lin(terms, self.const)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def as_const(self) -> int | None:
        """The constant when the form has no terms, else None (`(hi - lo).as_const()`: a constant difference)."""
        return None if self.terms else self.const

    def is_atom(self, atom: Any) -> bool:
        """Is the form exactly `atom`?"""
        return self.const == 0 and self.terms == {atom: 1}

    def has_div(self) -> bool:
        return any(isinstance(a, Div) for a in self.terms)

    def atoms(self) -> Iterator[Any]:
        """The atoms this form uses, inside `Div`s too, in order of appearance."""
        for a in self.terms:
            if isinstance(a, Div):
                yield from a.arg.atoms()
            else:
                yield a

    def values(self) -> list[Any]:
        """`atoms()` without repeats."""
        out: dict[Any, None] = {}
        for v in self.atoms():
            out.setdefault(v, None)
        return list(out)

    def evaluate(self, env: Mapping[Any, int]) -> int:
        """The value with every atom bound in `env` (divisions as in affine maps: floor, ceil, mod >= 0)."""
        total = self.const
        for a, k in self.terms.items():
            total += k * (_divide(a.kind, a.arg.evaluate(env), a.by) if isinstance(a, Div) else env[a])
        return total

    def _key(self) -> tuple[frozenset[tuple[Any, int]], int]:
        return frozenset(self.terms.items()), self.const

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lin) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = [f"{k}*{(a.name_hint or '?') if isinstance(a, SSAValue) else a}" for a, k in self.terms.items()]
        return " + ".join([*parts, str(self.const)])


def _divide(kind: str, a: int, by: int) -> int:
    return {"floordiv": a // by, "ceildiv": -((-a) // by), "mod": a % by}[kind]


KINDS = {
    AffineBinaryOpKind.FloorDiv: "floordiv",
    AffineBinaryOpKind.CeilDiv: "ceildiv",
    AffineBinaryOpKind.Mod: "mod",
}

DivRule = Callable[[str, Lin, int], "Lin | None"]


def div_atom(kind: str, arg: Lin, by: int) -> Lin | None:
    """A constant folded; a division by 1 dropped; any other division a `Div` atom."""
    if by <= 0:
        return None
    if arg.is_const:
        return Lin(const=_divide(kind, arg.const, by))
    if by == 1:
        return Lin() if kind == "mod" else arg
    return Lin.of(Div(kind, arg, by))


def floordiv_atom(e: Lin, q: int) -> Lin:
    """`floor(e / q)`: exact when q divides every term; otherwise the divisible terms come out
    and the rest stays a floordiv atom (its constant in [0, q))."""
    if q == 1:
        return e
    whole = Lin({v: c // q for v, c in e.terms.items() if c % q == 0}, 0)
    rest = Lin({v: c for v, c in e.terms.items() if c % q != 0}, e.const)
    if not rest.terms:
        return whole + Lin({}, rest.const // q)
    shift = rest.const // q  # floor((r + q*k) / q) = floor(r / q) + k
    rest = Lin(rest.terms, rest.const - shift * q)
    return whole + Lin({Div("floordiv", rest, q): 1}, shift)


def split_floordiv(kind: str, arg: Lin, by: int) -> Lin | None:
    """Every division through `floordiv_atom`: ceil(e / q) = -floor(-e / q), e mod q = e - q*floor(e / q)."""
    if by <= 0:
        return None
    if kind == "floordiv":
        return floordiv_atom(arg, by)
    if kind == "ceildiv":
        return floordiv_atom(arg.scale(-1), by).scale(-1)
    return arg - floordiv_atom(arg, by).scale(by)


def exact_div(kind: str, arg: Lin, by: int) -> Lin | None:
    """A floordiv or ceildiv whose divisor (non-zero, of either sign) divides every coefficient,
    and for a ceildiv the constant too; nothing else."""
    if kind == "mod" or by == 0 or any(k % by for k in arg.terms.values()):
        return None
    if kind == "ceildiv" and arg.const % by:
        return None
    const = arg.const // by if kind == "floordiv" else -((-arg.const) // by)
    return Lin({a: k // by for a, k in arg.terms.items()}, const)


def no_div(kind: str, arg: Lin, by: int) -> Lin | None:
    return None


def rounded_div(kind: str, arg: Lin, by: int) -> Lin | None:
    """A linear stand-in for a division by a constant (a packed panel's `1530 * ((ii - io) floordiv 6)`):
    `e floordiv c` and `e ceildiv c` as e / c (coefficients rounded, at least 1 where e's is not 0,
    the constant rounded down), `e mod c` as e without its constant -- an index that spans about
    what the real one does (the cost model's boxes), not an exact form."""
    if by <= 0:
        return None
    if kind == "mod":
        return Lin(arg.terms, 0)
    return Lin({a: (round(k / by) or (1 if k > 0 else -1)) for a, k in arg.terms.items()}, arg.const // by)


class _Positions(Sequence[int]):
    """Dimension i of any map is the atom i."""

    def __getitem__(self, i):  # type: ignore[override]
        return i

    def __len__(self) -> int:
        return 1 << 62


POSITIONS: Sequence[int] = _Positions()


def lin_of(
    expr: AffineExpr,
    dims: Sequence[Any],
    syms: Sequence[Any] | None = None,
    div: DivRule = div_atom,
) -> Lin:
    """`expr` as a `Lin` whose dimension i is `dims[i]` and symbol j `syms[j]` (atoms, or forms
    themselves); `NotAffine` if it has none under the division rule `div`."""
    if isinstance(expr, AffineConstantExpr):
        return Lin(const=expr.value)
    if isinstance(expr, AffineDimExpr):
        d = dims[expr.position]
        return d if isinstance(d, Lin) else Lin.of(d)
    if isinstance(expr, AffineSymExpr):
        if syms is None or expr.position >= len(syms):
            raise NotAffine(f"symbol in {expr}")
        s = syms[expr.position]
        return s if isinstance(s, Lin) else Lin.of(s)
    if not isinstance(expr, AffineBinaryOpExpr):
        raise NotAffine(f"unknown affine expression {expr}")
    lhs, rhs = lin_of(expr.lhs, dims, syms, div), lin_of(expr.rhs, dims, syms, div)
    if expr.kind == AffineBinaryOpKind.Add:
        return lhs + rhs
    if expr.kind == AffineBinaryOpKind.Mul:
        if rhs.is_const:
            return lhs.scale(rhs.const)
        if lhs.is_const:
            return rhs.scale(lhs.const)
        raise NotAffine(f"product of variables in {expr}")
    got = div(KINDS[expr.kind], lhs, rhs.const) if rhs.is_const else None
    if got is None:
        raise NotAffine(f"division by a non-constant in {expr}")
    return got


def try_lin_of(
    expr: AffineExpr, dims: Sequence[Any], syms: Sequence[Any] | None = None, div: DivRule = div_atom
) -> Lin | None:
    """`lin_of`, None where it raises `NotAffine`."""
    try:
        return lin_of(expr, dims, syms, div)
    except NotAffine:
        return None


def expr_of(form: Lin, pos: Mapping[Any, int]) -> AffineExpr:
    """`form` as an affine expression whose dimension `pos[v]` is the atom v."""

    def order(item: tuple[Any, int]) -> int:
        a = item[0]
        return len(pos) + min((pos[v] for v in a.arg.atoms()), default=0) if isinstance(a, Div) else pos[a]

    out: AffineExpr | None = None
    for atom, k in sorted(form.terms.items(), key=order):
        if isinstance(atom, Div):
            inner = expr_of(atom.arg, pos)
            base = {"floordiv": inner // atom.by, "ceildiv": inner.ceil_div(atom.by), "mod": inner % atom.by}[atom.kind]
        else:
            base = AffineExpr.dimension(pos[atom])
        term = base if k == 1 else base * k
        out = term if out is None else out + term
    if out is None:
        return AffineExpr.constant(form.const)
    return out + form.const if form.const else out


def build_map(forms: Sequence[Lin], first: Sequence[Any] = ()) -> tuple[AffineMap, list[Any]]:
    """A map with one result per form and its operands: those of `first` that are used, in
    that order, then the other atoms in order of use."""
    used = {v for f in forms for v in f.atoms()}
    operands: dict[Any, None] = dict.fromkeys(v for v in first if v in used)
    for f in forms:
        for v in f.atoms():
            operands.setdefault(v, None)
    pos = {v: i for i, v in enumerate(operands)}
    return AffineMap(len(pos), 0, tuple(expr_of(f, pos) for f in forms)), list(operands)
