"""Linear forms over index values (loop variables, sizes) with floordiv, ceildiv and mod atoms."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    i32,
)
from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)

from irkit.dialects import loop as lp
from irkit.passes.schedule.helpers import (
    value_name,
)


class NotAffine(Exception):
    """An index or bound that the footprint analysis cannot follow."""


@dataclass(frozen=True)
class Div:
    """`arg floordiv by`, `arg ceildiv by` or `arg mod by` (by > 0), an atom of a `Lin`."""

    kind: str
    arg: Lin
    by: int


Atom = SSAValue | Div


class Lin:
    """sum(coefficient * atom) + const; atoms are index values (loop variables, sizes) or `Div`s."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: Mapping[Atom, int] | None = None, const: int = 0):
        self.terms: dict[Atom, int] = {a: k for a, k in (terms or {}).items() if k}
        self.const = const

    @staticmethod
    def of(atom: Atom) -> Lin:
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

    def without(self, atom: Atom) -> Lin:
        return Lin({a: k for a, k in self.terms.items() if a is not atom and a != atom}, self.const)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def atoms(self) -> Iterator[SSAValue]:
        """The values this form uses, inside `Div`s too, in order of appearance."""
        for a in self.terms:
            if isinstance(a, Div):
                yield from a.arg.atoms()
            else:
                yield a

    def values(self) -> list[SSAValue]:
        out: dict[SSAValue, None] = {}
        for v in self.atoms():
            out.setdefault(v, None)
        return list(out)

    def _key(self) -> tuple[frozenset[tuple[Atom, int]], int]:
        return frozenset(self.terms.items()), self.const

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lin) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = [f"{k}*{value_name(a) if isinstance(a, SSAValue) else a}" for a, k in self.terms.items()]
        return " + ".join([*parts, str(self.const)])


_KINDS = {
    AffineBinaryOpKind.FloorDiv: "floordiv",
    AffineBinaryOpKind.CeilDiv: "ceildiv",
    AffineBinaryOpKind.Mod: "mod",
}


def div_lin(kind: str, arg: Lin, by: int) -> Lin:
    if arg.is_const:
        a = arg.const
        return Lin(const={"floordiv": a // by, "ceildiv": -((-a) // by), "mod": a % by}[kind])
    if by == 1:
        return Lin() if kind == "mod" else arg
    return Lin.of(Div(kind, arg, by))


def lin_of(expr: AffineExpr, dims: Sequence[SSAValue]) -> Lin:
    """An affine expression over `dims` (the operands of a map) as a `Lin`."""
    if isinstance(expr, AffineConstantExpr):
        return Lin(const=expr.value)
    if isinstance(expr, AffineDimExpr):
        return Lin.of(dims[expr.position])
    if not isinstance(expr, AffineBinaryOpExpr):
        raise NotAffine(f"symbol in {expr}")
    lhs, rhs = lin_of(expr.lhs, dims), lin_of(expr.rhs, dims)
    if expr.kind == AffineBinaryOpKind.Add:
        return lhs + rhs
    if expr.kind == AffineBinaryOpKind.Mul:
        if rhs.is_const:
            return lhs.scale(rhs.const)
        if lhs.is_const:
            return rhs.scale(lhs.const)
        raise NotAffine(f"product of variables in {expr}")
    if not rhs.is_const or rhs.const <= 0:
        raise NotAffine(f"division by a non-constant in {expr}")
    return div_lin(_KINDS[expr.kind], lhs, rhs.const)


def expr_of(form: Lin, pos: Mapping[SSAValue, int]) -> AffineExpr:
    """`form` as an affine expression whose dimension `pos[v]` is the value v."""

    def order(item: tuple[Atom, int]) -> int:
        a = item[0]
        return pos[a] if isinstance(a, SSAValue) else len(pos) + min((pos[v] for v in a.arg.atoms()), default=0)

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


def build_map(forms: Sequence[Lin], first: Sequence[SSAValue] = ()) -> tuple[AffineMap, list[SSAValue]]:
    """A map with one result per form and its operands: those of `first` that are used, in
    that order, then the other values in order of use."""
    used = {v for f in forms for v in f.atoms()}
    operands: dict[SSAValue, None] = dict.fromkeys(v for v in first if v in used)
    for f in forms:
        for v in f.atoms():
            operands.setdefault(v, None)
    pos = {v: i for i, v in enumerate(operands)}
    return AffineMap(len(pos), 0, tuple(expr_of(f, pos) for f in forms)), list(operands)


def lower_terms(loop: lp.ForOp) -> list[Lin]:
    return [lin_of(r, list(loop.lower_operands)) for r in loop.lower.data.results]


def upper_terms(loop: lp.ForOp) -> list[Lin]:
    """Exclusive upper bounds: the loop runs while its variable is below every one."""
    return [lin_of(r, list(loop.upper_operands)) for r in loop.upper.data.results]


def set_bounds(loop: lp.ForOp, lower: Sequence[Lin], upper: Sequence[Lin]) -> None:
    lmap, lops = build_map(lower)
    umap, uops = build_map(upper)
    loop.operands = [*lops, *uops]
    loop.properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, [len(lops), len(uops)])
    loop.properties["lower"] = AffineMapAttr(lmap)
    loop.properties["upper"] = AffineMapAttr(umap)


def access_forms(op: lp.LoadOp | lp.StoreOp) -> list[Lin]:
    return [lin_of(r, list(op.indices)) for r in op.map.data.results]


def _dedupe(forms: Iterable[Lin], low: bool) -> list[Lin]:
    """Drop repeated terms, and terms a constant away from a tighter one (max-form if `low`)."""
    out: list[Lin] = []
    for f in forms:
        if f in out:
            continue
        beaten = False
        for i, g in enumerate(out):
            diff = f - g
            if not diff.is_const:
                continue
            if (diff.const > 0) == low:  # f is tighter: replace g
                out[i] = f
            beaten = True
            break
        if not beaten:
            out.append(f)
    return _unique(out)


def _unique(forms: Iterable[Lin]) -> list[Lin]:
    out: list[Lin] = []
    for f in forms:
        if f not in out:
            out.append(f)
    return out
