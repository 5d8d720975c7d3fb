"""A statement's `where` constraints: text, the normal form `e >= 0` / `e == 0`, and loop bounds.

The design IR stores each constraint as canonical text, `lhs OP rhs` with
`OP` one of `<`, `<=`, `>`, `>=`, `==` (`!=` is not convex: no loop nest
has it as bounds).  Everything downstream works on the normal form: an
affine expression `e` over index variables and sizes with `e >= 0` (or
`e == 0`), integer strictness folded in (`a < b` is `b - a - 1 >= 0`).

A constraint bounds the *innermost* of its variables in the loop order
(`j <= i` bounds `j` by `i`, `bounded_index`); lower-tensorop turns it into
that loop's bound over the loops outside it and the sizes.  A variable with
a coefficient other than 1 or -1 in its own constraint would need a floor
or ceiling division; those are refused with a reason (`Unsupported`).
"""

from __future__ import annotations

from dataclasses import dataclass

from irkit.affine_text import BinOp, Const, Expr, Var, format_affine, parse_affine

OPERATORS = ("<=", ">=", "==", "<", ">")


class Unsupported(ValueError):
    """A constraint irkit cannot turn into loop bounds (said why)."""


@dataclass(frozen=True)
class Constraint:
    """`expr >= 0`, or `expr == 0` when `equal`; `text` is what the document wrote."""

    expr: Expr
    equal: bool
    text: str


def split_text(text: str) -> tuple[str, str, str]:
    """(lhs, operator, rhs) of a stored constraint."""
    for op in OPERATORS:  # two-character operators first
        left, found, right = text.partition(f" {op} ")
        if found:
            return left, op, right
    raise ValueError(f"'{text}' is not a constraint (expected 'a OP b' with OP one of {', '.join(OPERATORS)})")


def constraint_text(lhs: Expr, op: str, rhs: Expr) -> str:
    return f"{format_affine(lhs)} {op} {format_affine(rhs)}"


def normal_form(text: str) -> Constraint:
    left, op, right = split_text(text)
    a, b = parse_affine(left), parse_affine(right)
    if op == "<=":
        return Constraint(BinOp("-", b, a), False, text)
    if op == "<":
        return Constraint(BinOp("-", BinOp("-", b, a), Const(1)), False, text)
    if op == ">=":
        return Constraint(BinOp("-", a, b), False, text)
    if op == ">":
        return Constraint(BinOp("-", BinOp("-", a, b), Const(1)), False, text)
    return Constraint(BinOp("-", a, b), True, text)


def linear(expr: Expr) -> tuple[dict[str, int], int]:
    """Coefficients by name and the constant of an affine expression (products by constants only)."""
    if isinstance(expr, Const):
        return {}, expr.value
    if isinstance(expr, Var):
        return {expr.name: 1}, 0
    lhs, rhs = linear(expr.lhs), linear(expr.rhs)
    if expr.op in "+-":
        sign = 1 if expr.op == "+" else -1
        coeffs = dict(lhs[0])
        for name, c in rhs[0].items():
            coeffs[name] = coeffs.get(name, 0) + sign * c
        return {n: c for n, c in coeffs.items() if c}, lhs[1] + sign * rhs[1]
    if expr.op == "*" and (not lhs[0] or not rhs[0]):
        k, (coeffs, const) = (lhs[1], rhs) if not lhs[0] else (rhs[1], lhs)
        return {n: c * k for n, c in coeffs.items() if c * k}, const * k
    raise Unsupported(f"'{format_affine(expr)}' is not affine without division (a sum of constant multiples)")


def as_expr(coeffs: dict[str, int], const: int) -> Expr:
    """The canonical expression of a linear form."""
    out: Expr | None = None
    for name, c in coeffs.items():
        term: Expr = Var(name) if abs(c) == 1 else BinOp("*", Const(abs(c)), Var(name))
        if out is None:
            out = term if c > 0 else BinOp("-", Const(0), term)
        else:
            out = BinOp("+" if c > 0 else "-", out, term)
    if out is None:
        return Const(const)
    if const:
        out = BinOp("+" if const > 0 else "-", out, Const(abs(const)))
    return out


def bounded_index(constraint: Constraint, order: list[str]) -> str | None:
    """The index `constraint` bounds: the innermost of `order` it names (None if it names none);
    `Unsupported` when that index's coefficient is not 1 or -1 (its bound would need a division)."""
    coeffs, _ = linear(constraint.expr)
    inner = [v for v in order if v in coeffs]
    if not inner:
        return None
    v = inner[-1]
    if abs(coeffs[v]) != 1:
        raise Unsupported(
            f"'{constraint.text}': {v} has the coefficient {abs(coeffs[v])}; a bound on {v} would need a division "
            f"(write the constraint with {v} alone on one side)"
        )
    return v


def holds(constraints: list[Constraint], env) -> object:
    """Whether every constraint holds at `env` (names to ints or numpy arrays; an array broadcasts)."""
    from irkit.affine_text import evaluate

    result: object = True
    for c in constraints:
        value = evaluate(c.expr, env)
        ok = value == 0 if c.equal else value >= 0
        result = ok if result is True else result & ok
    return result


def bound_text(coeffs: dict[str, int], const: int, order: list[str]) -> str:
    """`sum(coeffs) + const >= 0` spelled as a bound on its innermost variable of `order`
    (`i - j >= 0` is `j <= i`); one spelling for each form, so equal forms print equal."""
    inner = [v for v in order if coeffs.get(v)]
    if not inner or abs(coeffs[inner[-1]]) != 1:
        return f"{format_affine(as_expr(dict(sorted(coeffs.items())), const))} >= 0"
    v = inner[-1]
    k = coeffs[v]
    rest = dict(sorted({n: -c * k for n, c in coeffs.items() if n != v}.items()))
    bound = -const * k
    if rest and bound == k:  # `k >= i + 1` reads `k > i`, `j <= i - 1` reads `j < i`
        return f"{v} {'>' if k == 1 else '<'} {format_affine(as_expr(rest, 0))}"
    rest_text = format_affine(as_expr(rest, bound))
    return f"{v} >= {rest_text}" if k == 1 else f"{v} <= {rest_text}"
