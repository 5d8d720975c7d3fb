"""Comparing shape and index expressions over symbolic sizes.

Sizes stay symbolic (M, N, H + 2), so the checker must decide `a <= b` and
`a == b` for all sizes.  Linear expressions are decided exactly: their
difference is a constant, or a combination of sizes whose sign is fixed
because every size is at least 1.  Anything else (floor division, `%`,
a difference of sizes with mixed signs) is decided on sample sizes: the
document's defaults, all ones, large values, and seeded random points,
rounded to honour the document's divisibility assumptions.  A sample that
violates the relation is a counterexample, reported with its values.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from irkit.affine_text import BinOp, Const, Expr, Var, evaluate, format_affine

Linear = dict[str, int]  # name -> coefficient; "" -> constant term


def linear(e: Expr) -> Linear | None:
    """`e` as a linear form, or None if it is not linear."""
    if isinstance(e, Var):
        return {e.name: 1}
    if isinstance(e, Const):
        return {"": e.value}
    a, b = linear(e.lhs), linear(e.rhs)
    if a is None or b is None:
        return None
    if e.op in ("+", "-"):
        sign = 1 if e.op == "+" else -1
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + sign * v
        return {k: v for k, v in out.items() if v != 0 or k == ""}
    if e.op == "*":
        if set(a) <= {""}:
            return {k: v * a.get("", 0) for k, v in b.items()}
        if set(b) <= {""}:
            return {k: v * b.get("", 0) for k, v in a.items()}
    return None


def from_linear(form: Linear) -> Expr:
    """A canonical expression for a linear form (names sorted, constant last)."""
    expr: Expr | None = None
    for name in sorted(k for k in form if k):
        coeff = form[name]
        if coeff == 0:
            continue
        term: Expr = Var(name) if abs(coeff) == 1 else BinOp("*", Const(abs(coeff)), Var(name))
        if expr is None:
            expr = term if coeff > 0 else BinOp("-", Const(0), term)
        else:
            expr = BinOp("+" if coeff > 0 else "-", expr, term)
    const = form.get("", 0)
    if expr is None:
        return Const(const)
    if const > 0:
        return BinOp("+", expr, Const(const))
    if const < 0:
        return BinOp("-", expr, Const(-const))
    return expr


@dataclass
class Samples:
    """Sample assignments of the sizes, for the relations linear algebra cannot decide."""

    envs: list[dict[str, int]]

    @classmethod
    def build(cls, defaults: dict[str, int | None], divisors: dict[str, int]) -> Samples:
        names = sorted(defaults)
        rng = random.Random(1234)
        raw: list[dict[str, int]] = [
            {n: defaults[n] or 64 for n in names},
            {n: 1 for n in names},
            {n: 1000 for n in names},
        ]
        raw += [{n: rng.randint(1, 4096) for n in names} for _ in range(12)]
        envs = []
        for env in raw:
            envs.append({n: _round_up(v, max(divisors.get(n, 1), 1)) for n, v in env.items()})
        return cls(envs)


def _round_up(value: int, multiple: int) -> int:
    return max(multiple, (value + multiple - 1) // multiple * multiple)


def _counterexample(check, samples: Samples) -> dict[str, int] | None:
    for env in samples.envs:
        try:
            if not check(env):
                return env
        except (KeyError, ZeroDivisionError):
            continue
    return None


def sub(a: Expr, b: Expr) -> Expr:
    return BinOp("-", a, b)


def always_le(a: Expr, b: Expr, samples: Samples) -> dict[str, int] | None:
    """None if `a <= b` for all sizes (>= 1); otherwise a counterexample."""
    diff = linear(sub(b, a))
    if diff is not None:
        const = diff.get("", 0)
        coeffs = [v for k, v in diff.items() if k]
        if all(c >= 0 for c in coeffs) and const + sum(coeffs) >= 0:
            return None  # smallest at all sizes = 1
    return _counterexample(lambda env: evaluate(a, env) <= evaluate(b, env), samples)


def always_eq(a: Expr, b: Expr, samples: Samples) -> dict[str, int] | None:
    """None if `a == b` for all sizes; otherwise a counterexample."""
    diff = linear(sub(a, b))
    if diff is not None and all(v == 0 for v in diff.values()):
        return None
    return _counterexample(lambda env: evaluate(a, env) == evaluate(b, env), samples)


def describe_env(env: dict[str, int], used: list[str]) -> str:
    return ", ".join(f"{n} = {env[n]}" for n in used if n in env)


def text(e: Expr) -> str:
    return format_affine(e)
