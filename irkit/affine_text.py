"""Affine expressions over names, in the text form the design IR stores.

Shapes (`H + 2`) and accesses (`x + 1`, `2 * y`) are small integer
expressions over size names or index variables.  The design IR keeps them
as canonical text; this module parses that text into a tiny tree, prints a
tree back in the one canonical spelling (so equal expressions compare
equal as strings), lists the names an expression uses, and evaluates it.

Grammar (left-associative, usual precedence):
    expr   := term (('+' | '-') term)*
    term   := factor (('*' | '/' | '%') factor)*
    factor := NAME | INT | '-' INT | '(' expr ')'
`/` is floor division.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


class AffineTextError(ValueError):
    """Text that is not an expression of the grammar above."""


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Const:
    value: int


@dataclass(frozen=True)
class BinOp:
    op: str  # one of + - * / %
    lhs: Expr
    rhs: Expr


Expr = Var | Const | BinOp

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}
_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<int>\d+)|(?P<op>[-+*/%()]))")


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise AffineTextError(f"unexpected character '{text[pos:].strip()[:1]}' at offset {pos}")
        tokens.append(m.group(m.lastgroup or "op"))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise AffineTextError("unexpected end of expression")
        self.pos += 1
        return tok

    def expr(self) -> Expr:
        node = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            node = BinOp(op, node, self.term())
        return node

    def term(self) -> Expr:
        node = self.factor()
        while self.peek() in ("*", "/", "%"):
            op = self.take()
            node = BinOp(op, node, self.factor())
        return node

    def factor(self) -> Expr:
        tok = self.take()
        if tok == "(":
            node = self.expr()
            if self.take() != ")":
                raise AffineTextError("expected ')'")
            return node
        if tok == "-":
            nxt = self.take()
            if not nxt.isdigit():
                raise AffineTextError("'-' may only precede an integer")
            return Const(-int(nxt))
        if tok.isdigit():
            return Const(int(tok))
        if tok[0].isalpha() or tok[0] == "_":
            return Var(tok)
        raise AffineTextError(f"unexpected '{tok}'")


def parse_affine(text: str) -> Expr:
    """Parse `text`; raise `AffineTextError` if it is not an expression."""
    parser = _Parser(text)
    if not parser.tokens:
        raise AffineTextError("empty expression")
    node = parser.expr()
    if parser.peek() is not None:
        raise AffineTextError(f"unexpected '{parser.peek()}'")
    return node


def format_affine(node: Expr) -> str:
    """The canonical spelling: single spaces around operators, minimal parentheses."""
    return _format(node, 0)


def _format(node: Expr, parent_prec: int, right_side: bool = False) -> str:
    if isinstance(node, Var):
        return node.name
    if isinstance(node, Const):
        return str(node.value)
    prec = _PRECEDENCE[node.op]
    text = f"{_format(node.lhs, prec)} {node.op} {_format(node.rhs, prec, True)}"
    # Left-associative: a right operand of equal precedence needs parentheses.
    if prec < parent_prec or (right_side and prec == parent_prec):
        return f"({text})"
    return text


def canonical(text: str) -> str:
    """Reformat expression text into its canonical spelling."""
    return format_affine(parse_affine(text))


def names_in(node: Expr) -> list[str]:
    """The variable names used, in order of first appearance."""
    if isinstance(node, Var):
        return [node.name]
    if isinstance(node, Const):
        return []
    seen = names_in(node.lhs)
    return seen + [n for n in names_in(node.rhs) if n not in seen]


def evaluate(node: Expr, env: Mapping):
    """Value of `node` with names bound by `env` (KeyError if unbound): an int for
    int bindings, an array for numpy index grids (floor division, as in affine maps)."""
    if isinstance(node, Var):
        return env[node.name]
    if isinstance(node, Const):
        return node.value
    a, b = evaluate(node.lhs, env), evaluate(node.rhs, env)
    if node.op == "+":
        return a + b
    if node.op == "-":
        return a - b
    if node.op == "*":
        return a * b
    if node.op == "/":
        return a // b
    return a % b


def fold_linear(node: Expr) -> Expr | None:
    """A linear expression with its terms collected (`N + 1 + 1 + ... + 1` -> `N + 999`), or None
    if `node` is not linear.  Iterative, so it takes trees too deep for the recursive walkers
    here; the result nests once per distinct name."""
    forms: list[dict[str, int]] = []
    stack: list[tuple[Expr, bool]] = [(node, False)]
    while stack:
        current, done = stack.pop()
        if isinstance(current, Var):
            forms.append({current.name: 1})
            continue
        if isinstance(current, Const):
            forms.append({"": current.value})
            continue
        if not done:
            stack += [(current, True), (current.rhs, False), (current.lhs, False)]
            continue
        b, a = forms.pop(), forms.pop()
        if current.op in ("+", "-"):
            sign = 1 if current.op == "+" else -1
            for name, coeff in b.items():
                a[name] = a.get(name, 0) + sign * coeff
            forms.append(a)
        elif current.op == "*" and (set(a) <= {""} or set(b) <= {""}):
            scale, form = (a.get("", 0), b) if set(a) <= {""} else (b.get("", 0), a)
            forms.append({name: coeff * scale for name, coeff in form.items()})
        else:
            return None
    (form,) = forms
    out: Expr | None = None
    for name, coeff in form.items():
        if not name or coeff == 0:
            continue
        term: Expr = Var(name) if abs(coeff) == 1 else BinOp("*", Const(abs(coeff)), Var(name))
        if out is None:
            out = term if coeff > 0 else BinOp("-", Const(0), term)
        else:
            out = BinOp("+" if coeff > 0 else "-", out, term)
    const = form.get("", 0)
    if out is None:
        return Const(const)
    return out if const == 0 else BinOp("+" if const > 0 else "-", out, Const(abs(const)))


def is_affine(node: Expr) -> bool:
    """True if every product has a constant factor and every `/`, `%` a constant divisor."""
    if isinstance(node, (Var, Const)):
        return True
    if not (is_affine(node.lhs) and is_affine(node.rhs)):
        return False
    if node.op == "*":
        return not names_in(node.lhs) or not names_in(node.rhs)
    if node.op in ("/", "%"):
        return not names_in(node.rhs)
    return True


def to_affine_expr(node: Expr, env: Mapping[str, object]):
    """The xDSL `AffineExpr` of `node`, with names bound by `env` to affine expressions.

    Raises `AffineTextError` for products of two names (not affine).
    """
    from xdsl.ir.affine import AffineExpr

    if isinstance(node, Var):
        return env[node.name]
    if isinstance(node, Const):
        return AffineExpr.constant(node.value)
    a, b = to_affine_expr(node.lhs, env), to_affine_expr(node.rhs, env)
    try:
        if node.op == "+":
            return a + b
        if node.op == "-":
            return a - b
        if node.op == "*":
            return a * b
        if node.op == "/":
            return a // b
        return a % b
    except NotImplementedError as err:
        raise AffineTextError(f"'{format_affine(node)}' is not affine: {err}") from None
