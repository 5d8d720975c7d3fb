"""Printing xDSL `AffineExpr`s for each target, one walk with per-target hooks.

`AffinePrinter` walks an expression bottom-up: constants, dimensions,
symbols, `+`, `*`, floordiv, ceildiv and mod each call a hook, so a target
says only how a node is spelled (a string, or a tree of its own).
`SumPrinter` prints a linear form (`irkit.affine.linear.Lin`) as a sum --
terms, signs, coefficients, the constant -- with hooks for how a scaled
term, a negated first term and a lone constant are spelled.

Targets here: `PYTHON` (Python source, loop_interp's compiled maps),
`TEXT_TREE` (design-text trees, the oracle's index expressions) and
`DESIGN_TEXT` / `affine_text` (canonical design text, raising and its
comparison).  Two targets subclass `AffinePrinter` where they live: the C
backend's (`irkit.backends.c.AffinePrinter`: linear forms over C atom texts,
floor-division helpers, printed through a `SumPrinter`) and the cost model's
expressions (`irkit.perf.reader`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineSymExpr,
)

from irkit.affine.linear import Lin, exact_div, try_lin_of
from irkit.affine_text import BinOp, Const, Var

T = TypeVar("T")


class AffinePrinter(Generic[T]):
    """An affine expression over `dims` and `syms` (whatever the target names them by) as a `T`."""

    def print(self, e: AffineExpr, dims: Sequence[Any], syms: Sequence[Any] = ()) -> T:
        if isinstance(e, AffineConstantExpr):
            return self.const(e.value)
        if isinstance(e, AffineDimExpr):
            return self.dim(dims[e.position])
        if isinstance(e, AffineSymExpr):
            return self.sym(syms[e.position])
        if not isinstance(e, AffineBinaryOpExpr):
            raise ValueError(f"unknown affine expression {e}")
        a, b = self.print(e.lhs, dims, syms), self.print(e.rhs, dims, syms)
        if e.kind == AffineBinaryOpKind.Add:
            return self.add(a, b)
        if e.kind == AffineBinaryOpKind.Mul:
            return self.mul(a, b)
        if e.kind == AffineBinaryOpKind.FloorDiv:
            return self.floordiv(a, b)
        if e.kind == AffineBinaryOpKind.CeilDiv:
            return self.ceildiv(a, b)
        if e.kind == AffineBinaryOpKind.Mod:
            return self.mod(a, b)
        raise ValueError(f"unknown affine operation {e.kind}")

    def dim(self, d: Any) -> T:
        return d

    def sym(self, s: Any) -> T:
        return s

    def const(self, value: int) -> T:
        raise NotImplementedError

    def add(self, a: T, b: T) -> T:
        raise NotImplementedError

    def mul(self, a: T, b: T) -> T:
        raise NotImplementedError

    def floordiv(self, a: T, b: T) -> T:
        raise NotImplementedError

    def ceildiv(self, a: T, b: T) -> T:
        raise NotImplementedError

    def mod(self, a: T, b: T) -> T:
        raise NotImplementedError


class PythonPrinter(AffinePrinter[str]):
    """Python source, fully parenthesised; `//` and `%` are affine floordiv and mod (Python floors)."""

    def const(self, value: int) -> str:
        return f"({int(value)})"

    def add(self, a: str, b: str) -> str:
        return f"({a} + {b})"

    def mul(self, a: str, b: str) -> str:
        return f"({a} * {b})"

    def floordiv(self, a: str, b: str) -> str:
        return f"({a} // {b})"

    def ceildiv(self, a: str, b: str) -> str:
        return f"(-((-{a}) // {b}))"

    def mod(self, a: str, b: str) -> str:
        return f"({a} % {b})"


class TextTreePrinter(AffinePrinter[Any]):
    """A design-text tree (`irkit.affine_text`): dims are names, symbols their integer values."""

    def dim(self, d: str) -> Var:
        return Var(d)

    def sym(self, s: int) -> Const:
        return Const(s)

    def const(self, value: int) -> Const:
        return Const(value)

    def add(self, a, b) -> BinOp:
        return BinOp("+", a, b)

    def mul(self, a, b) -> BinOp:
        return BinOp("*", a, b)

    def floordiv(self, a, b) -> BinOp:
        return BinOp("/", a, b)

    def ceildiv(self, a, b) -> BinOp:  # ceildiv(a, b) == -floordiv(-a, b)
        return BinOp("-", Const(0), BinOp("/", BinOp("*", Const(-1), a), b))

    def mod(self, a, b) -> BinOp:
        return BinOp("%", a, b)


class SumPrinter(AffinePrinter[str]):
    """Text printers of linear forms: `sum_text` spells the sum once, the hooks its pieces."""

    def scaled(self, mag: int, atom: str) -> str:
        """A term with coefficient `mag` >= 2."""
        return f"{mag}*{atom}"

    def negated(self, piece: str, atom: str, mag: int) -> str:
        """The first term of a sum when its coefficient is negative (`piece` is its magnitude's term)."""
        return f"-{piece}"

    def lone_const(self, const: int) -> str:
        return str(const)

    def sum_text(self, terms: Iterable[tuple[str, int]], const: int) -> str:
        """`sum(k * atom) + const` over (atom text, k) in the given order; zero terms skipped."""
        out = ""
        for atom, k in terms:
            if k == 0:
                continue
            mag = abs(k)
            piece = atom if mag == 1 else self.scaled(mag, atom)
            if not out:
                out = piece if k > 0 else self.negated(piece, atom, mag)
            else:
                out += f" + {piece}" if k > 0 else f" - {piece}"
        if not out:
            return self.lone_const(const)
        if const:
            out += f" + {const}" if const > 0 else f" - {-const}"
        return out


class DesignTextPrinter(SumPrinter):
    """Canonical design text: a linear expression as its terms sorted by name, then the constant
    (`H + 2`, `x - xo`, `2*k + 1`); floordiv, ceildiv and mod in the design language's spelling
    (`(H - 1) / 2 + 1`, which documents parse back)."""

    def print(self, e: AffineExpr, dims: Sequence[Any], syms: Sequence[Any] = ()) -> str:
        form = try_lin_of(e, dims, syms, exact_div)
        if form is None:
            return self._quasi_text(e, dims, syms)
        return self.sum_text(sorted(form.terms.items()), form.const)

    def lin_text(self, form: Lin, names: Mapping[Any, str]) -> str:
        """A linear form over atoms named by `names` (`?` for others), terms in name order."""
        return self.sum_text(sorted(((names.get(a, "?"), k) for a, k in form.terms.items()), key=lambda t: t[0]), form.const)

    @staticmethod
    def _operand(text: str) -> str:
        """`text` as the operand of `/` or `%`: parenthesised unless it is one name or number."""
        return f"({text})" if " " in text or text.startswith("-") else text

    def _quasi_text(self, expr: AffineExpr, dims: Sequence[Any], syms: Sequence[Any]) -> str:
        """Non-linear summands sorted, then the linear rest."""
        linear: AffineExpr = AffineExpr.constant(0)
        others: list[str] = []
        for term in _summands(expr):
            if try_lin_of(term, dims, syms, exact_div) is not None:
                linear = linear + term
            else:
                others.append(self._quasi_term(term, dims, syms))
        rest = self.print(linear, dims, syms)
        text = " + ".join(sorted(others))
        if rest == "0":
            return text
        return f"{text} - {rest[1:]}" if rest.startswith("-") else f"{text} + {rest}"

    def _quasi_term(self, term: AffineExpr, dims: Sequence[Any], syms: Sequence[Any]) -> str:
        """One non-linear summand: `x / q` (floordiv), `(x + q - 1) / q` (ceildiv), `x % q`, `q*(x)`."""
        if not (isinstance(term, AffineBinaryOpExpr) and isinstance(term.rhs, AffineConstantExpr)):
            return str(term)
        q = term.rhs.value
        if term.kind == AffineBinaryOpKind.Mul:
            return f"{q}*({self.print(term.lhs, dims, syms)})"
        inner = term.lhs + (q - 1) if term.kind == AffineBinaryOpKind.CeilDiv else term.lhs
        operator = "%" if term.kind == AffineBinaryOpKind.Mod else "/"
        return f"{self._operand(self.print(inner, dims, syms))} {operator} {q}"


def _summands(expr: AffineExpr) -> list[AffineExpr]:
    if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Add:
        return _summands(expr.lhs) + _summands(expr.rhs)
    return [expr]


PYTHON = PythonPrinter()
TEXT_TREE = TextTreePrinter()
DESIGN_TEXT = DesignTextPrinter()


def affine_text(expr: AffineExpr, dims: Sequence[str], syms: Sequence[str]) -> str:
    """Canonical design text of an affine expression over named dims and symbols."""
    return DESIGN_TEXT.print(expr, dims, syms)
