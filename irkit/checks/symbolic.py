"""Deciding relations between shape and index expressions for all sizes.

Sizes stay symbolic (M, N, H + 2, W / 2), so the checker must decide
`a <= b` and `a == b` for every value of the sizes the document allows
(each size at least 1, a multiple of its divisor when `assume { N % k == 0 }`
says so), and that an index stays inside its dimension for every point of
the loops around it.  "Cannot tell" must never pass for "holds": a relation
is either *proven*, *refuted* with a counterexample, or *undecided*, and the
checker reports the last two alike (with what would help).

The proof.  Expressions are affine (`to_lin`): sums of integer multiples of
sizes, loop variables and `floor(L / c)` terms with a positive constant `c`
(`L % c` is `L - c * floor(L / c)`); products of two names and division by a
name are refused (`NotAffine`) because irkit's affine maps cannot express
them.  A floor term is an integer `q` with `c*q <= L <= c*q + c - 1`.  To
prove `E >= 0`, the facts (sizes >= 1, divisibility, loop ranges, floor
definitions) are joined with `E <= -1` and Fourier-Motzkin elimination looks
for a contradiction; after every step each inequality is divided by the gcd
of its coefficients and its constant rounded down, which is valid because
every variable is an integer (`2*q <= 2*x + 1` becomes `q <= x`).  A
contradiction is a proof; no contradiction proves nothing, and then
counterexamples are searched for.

Counterexamples (`Samples`) are size assignments -- the document's
defaults first, then small values, all ones, large and seeded random ones,
rounded up to the divisors -- at which the relation is evaluated exactly
(over the whole loop box for an index).  They explain a failure; they are
never the proof of success.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from math import gcd

from irkit.affine_text import BinOp, Const, Expr, Var, format_affine

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


class NotAffine(ValueError):
    """An expression irkit's affine maps cannot express; `focus` is the word to point at."""

    def __init__(self, message: str, focus: str | None = None):
        super().__init__(message)
        self.focus = focus


# --- affine forms -------------------------------------------------------------------


@dataclass(frozen=True)
class Floor:
    """`floor(arg / div)` with `div >= 2`: an integer unknown of its own."""

    arg: Lin
    div: int

    def text(self) -> str:
        inner = self.arg.text()
        return f"({inner}) / {self.div}" if " " in inner else f"{inner} / {self.div}"


Atom = str | Floor


def _key(atom: Atom) -> tuple[int, str]:
    return (0, atom) if isinstance(atom, str) else (1, atom.text())


@dataclass(frozen=True)
class Lin:
    """`sum(coeff * atom) + const`, the atoms sorted, no zero coefficients."""

    terms: tuple[tuple[Atom, int], ...] = ()
    const: int = 0

    @staticmethod
    def make(terms: Mapping[Atom, int], const: int = 0) -> Lin:
        return Lin(tuple(sorted(((a, k) for a, k in terms.items() if k), key=lambda t: _key(t[0]))), const)

    @staticmethod
    def of(atom: Atom) -> Lin:
        return Lin(((atom, 1),), 0)

    def coeffs(self) -> dict[Atom, int]:
        return dict(self.terms)

    def __add__(self, other: Lin) -> Lin:
        out = self.coeffs()
        for a, k in other.terms:
            out[a] = out.get(a, 0) + k
        return Lin.make(out, self.const + other.const)

    def __sub__(self, other: Lin) -> Lin:
        return self + other.scale(-1)

    def scale(self, k: int) -> Lin:
        return Lin.make({a: c * k for a, c in self.terms}, self.const * k)

    def plus(self, c: int) -> Lin:
        return Lin(self.terms, self.const + c)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def atoms(self) -> list[Atom]:
        return [a for a, _ in self.terms]

    def names(self) -> set[str]:
        """Every size or loop variable used, also inside floor terms."""
        out: set[str] = set()
        for a, _ in self.terms:
            out |= {a} if isinstance(a, str) else a.arg.names()
        return out

    def floors(self) -> list[Floor]:
        """Every floor term, inner ones first."""
        out: list[Floor] = []
        for a, _ in self.terms:
            if isinstance(a, Floor):
                out += [f for f in a.arg.floors() if f not in out]
                if a not in out:
                    out.append(a)
        return out

    def evaluate(self, env: Mapping[str, int]) -> int:
        total = self.const
        for a, k in self.terms:
            total += k * (env[a] if isinstance(a, str) else a.arg.evaluate(env) // a.div)
        return total

    def text(self) -> str:
        parts: list[str] = []
        for a, k in self.terms:
            word = a if isinstance(a, str) else f"({a.text()})"
            mag = abs(k)
            term = word if mag == 1 else f"{mag} * {word}"
            if not parts:
                parts.append(term if k > 0 else f"-{term}" if mag != 1 else f"-{word}")
            else:
                parts.append(f"{'+' if k > 0 else '-'} {term}")
        if self.const or not parts:
            if not parts:
                parts.append(str(self.const))
            else:
                parts.append(f"{'+' if self.const > 0 else '-'} {abs(self.const)}")
        return " ".join(parts)


def floor_div(lin: Lin, c: int) -> Lin:
    """`floor(lin / c)` for `c >= 1`, with the multiples of `c` taken out of the floor."""
    if c == 1:
        return lin
    pulled: dict[Atom, int] = {}
    rest: dict[Atom, int] = {}
    for a, k in lin.terms:
        q, r = divmod(k, c)
        if q:
            pulled[a] = q
        if r:
            rest[a] = r
    qc, rc = divmod(lin.const, c)
    outer = Lin.make(pulled, qc)
    if not rest:
        return outer  # 0 <= rc < c
    # floor((g*Y + r) / c) == floor((Y + floor(r / g)) / (c / g)) when g divides c
    g = gcd(c, *rest.values())
    if g > 1:
        rest = {a: k // g for a, k in rest.items()}
        rc //= g
        c //= g
    if c == 1:
        return outer + Lin.make(rest, rc)
    return outer + Lin.of(Floor(Lin.make(rest, rc), c))


def to_lin(e: Expr) -> Lin:
    """`e` as an affine form; `NotAffine` for what irkit's affine maps cannot express."""
    if isinstance(e, Var):
        return Lin.of(e.name)
    if isinstance(e, Const):
        return Lin((), e.value)
    a, b = to_lin(e.lhs), to_lin(e.rhs)
    if e.op == "+":
        return a + b
    if e.op == "-":
        return a - b
    if e.op == "*":
        if a.is_const:
            return b.scale(a.const)
        if b.is_const:
            return a.scale(b.const)
        raise NotAffine(
            f"'{format_affine(e)}' multiplies two non-constant terms ('{format_affine(e.lhs)}' and "
            f"'{format_affine(e.rhs)}'); shapes and indices must be affine (a constant times a name)",
            _first_name(e.rhs),
        )
    if not b.is_const:
        raise NotAffine(
            f"'{format_affine(e)}' divides by '{format_affine(e.rhs)}'; '{e.op}' needs a constant divisor",
            _first_name(e.rhs),
        )
    c = b.const
    if c <= 0:
        raise NotAffine(f"'{format_affine(e)}' divides by {c}; '{e.op}' needs a positive divisor", str(c).lstrip("-"))
    if a.is_const:
        return Lin((), a.const // c if e.op == "/" else a.const % c)
    q = floor_div(a, c)
    return q if e.op == "/" else a - q.scale(c)


def _first_name(e: Expr) -> str | None:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, BinOp):
        return _first_name(e.lhs) or _first_name(e.rhs)
    return None


# --- the prover -------------------------------------------------------------------------

Row = tuple[tuple[tuple[Atom, int], ...], int]  # sum(coeff * atom) + const >= 0
ROW_BUDGET = 600  # Fourier-Motzkin gives up (proves nothing) beyond this many inequalities


def _row(terms: Mapping[Atom, int], const: int) -> Row | None:
    """The normalized inequality: coefficients divided by their gcd, the constant floored;
    None for one that always holds."""
    items = [(a, k) for a, k in terms.items() if k]
    if not items:
        return None if const >= 0 else ((), -1)
    g = gcd(*(k for _, k in items))
    if g > 1:
        items = [(a, k // g) for a, k in items]
        const //= g
    return tuple(sorted(items, key=lambda t: _key(t[0]))), const


def _infeasible(rows: list[Row]) -> bool:
    """True if the inequalities have no integer solution (found by elimination)."""
    table: dict[tuple, int] = {}

    def add(row: Row | None) -> bool:
        if row is None:
            return False
        terms, const = row
        if not terms:
            return const < 0
        if terms not in table or const < table[terms]:
            table[terms] = const
        return False

    for r in rows:
        if add(r):
            return True
    while table:
        counts: dict[Atom, list[int]] = {}
        for terms in table:
            for a, k in terms:
                counts.setdefault(a, [0, 0])[k < 0] += 1
        var = min(counts, key=lambda a: (counts[a][0] * counts[a][1] - counts[a][0] - counts[a][1], _key(a)))
        pos = [(t, c) for t, c in table.items() if dict(t).get(var, 0) > 0]
        neg = [(t, c) for t, c in table.items() if dict(t).get(var, 0) < 0]
        for t, _ in pos + neg:
            del table[t]
        for (tp, cp), (tn, cn) in itertools.product(pos, neg):
            dp, dn = dict(tp), dict(tn)
            kp, kn = dp[var], -dn[var]
            merged: dict[Atom, int] = {}
            for a, k in tp:
                merged[a] = merged.get(a, 0) + kn * k
            for a, k in tn:
                merged[a] = merged.get(a, 0) + kp * k
            merged.pop(var, None)
            if add(_row(merged, kn * cp + kp * cn)):
                return True
        if len(table) > ROW_BUDGET:
            return False
    return False


def _floor_rows(floors: list[Floor]) -> list[Row | None]:
    out: list[Row | None] = []
    for f in floors:
        q = Lin.of(f)
        low = f.arg - q.scale(f.div)  # arg - c*q >= 0
        high = q.scale(f.div).plus(f.div - 1) - f.arg  # c*q + c - 1 - arg >= 0
        out += [_row(low.coeffs(), low.const), _row(high.coeffs(), high.const)]
    return out


def constraint_rows(form: Lin, equal: bool) -> list[Lin]:
    """A constraint `form >= 0` (`form == 0` when `equal`) as forms that are each >= 0."""
    return [form, form.scale(-1)] if equal else [form]


@dataclass
class Facts:
    """What holds of the sizes and the loop variables of one statement."""

    sizes: dict[str, int]  # size -> its divisor (1: none)
    loops: dict[str, Lin] = field(default_factory=dict)  # loop variable -> extent
    domain: list[Lin] = field(default_factory=list)  # the statement's `where`, as forms that are >= 0

    def with_loops(self, loops: Mapping[str, Lin]) -> Facts:
        return Facts(self.sizes, dict(loops))

    def with_domain(self, forms: list[Lin]) -> Facts:
        return Facts(self.sizes, self.loops, list(forms))

    def in_domain(self, env: Mapping[str, int]) -> bool:
        """Whether a point (loop variables and sizes) satisfies the `where` constraints."""
        return all(f.evaluate(env) >= 0 for f in self.domain)

    def lower_bound(self, size: str) -> int:
        return max(self.sizes.get(size, 1), 1)

    def rows(self) -> list[Lin]:
        """The facts as forms that are >= 0."""
        out: list[Lin] = []
        for s, k in self.sizes.items():
            out.append(Lin.of(s).plus(-1))
            if k > 1:
                q = Lin.of(Floor(Lin.of(s), k))
                out += [Lin.of(s) - q.scale(k), q.scale(k) - Lin.of(s)]
        for v, extent in self.loops.items():
            out += [Lin.of(v), extent.plus(-1) - Lin.of(v), extent.plus(-1)]
        return out + self.domain

    def proves(self, e: Lin) -> bool:
        """Is `e >= 0` for every integer point the facts allow?"""
        if self.domain:  # the box's corners may lie outside the domain: eliminate with its constraints
            return self._refutes(e, self.rows())
        e = self.bound(e, lowest=True) or e
        if not any(isinstance(a, Floor) for a in e.atoms()) and all(k > 0 and a in self.sizes for a, k in e.terms):
            if e.const + sum(k * self.lower_bound(a) for a, k in e.terms) >= 0:  # type: ignore[arg-type]
                return True
        facts = self.rows()
        loops = set(self.loops)
        if not e.names() & loops:  # then the loops matter only through being non-empty
            facts = [f for f in facts if not f.names() & loops]
        return self._refutes(e, facts)

    def empty(self, forms: list[Lin]) -> bool:
        """Is there no integer point where the facts and every form `>= 0` hold?"""
        return self._refutes(None, self.rows() + forms)

    @staticmethod
    def _refutes(e: Lin | None, facts: list[Lin]) -> bool:
        forms = [*facts] + ([e.scale(-1).plus(-1)] if e is not None else [])  # e <= -1: a contradiction proves e >= 0
        floors: list[Floor] = []
        for f in forms:
            floors += [x for x in f.floors() if x not in floors]
        rows = [_row(f.coeffs(), f.const) for f in forms] + _floor_rows(floors)
        return _infeasible([r for r in rows if r is not None])

    def bound(self, e: Lin, lowest: bool) -> Lin | None:
        """The smallest (or largest) value of `e` over the loop box, as a form over the sizes:
        each loop variable at 0 or at its extent - 1 by the sign of its coefficient.  None when a
        loop variable appears inside a floor term (the extreme is not at a corner then)."""
        inside = {n for f in e.floors() for n in f.arg.names()}
        if inside & set(self.loops):
            return None
        out = Lin.make({a: k for a, k in e.terms if a not in self.loops}, e.const)
        for a, k in e.terms:
            if a in self.loops and (k < 0 if lowest else k > 0):
                out = out + self.loops[a].plus(-1).scale(k)  # type: ignore[index]
        return out


# --- counterexamples ------------------------------------------------------------------


@dataclass
class Samples:
    """Size assignments at which a relation that could not be proven is evaluated."""

    defaults: dict[str, int]
    divisors: dict[str, int]
    envs: list[dict[str, int]] = field(default_factory=list)

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
        div = {n: max(divisors.get(n, 1), 1) for n in names}
        envs = [{n: _round_up(v, div[n]) for n, v in env.items()} for env in raw]
        base = {n: _round_up(defaults[n] or 64, div[n]) for n in names}
        return cls(base, div, envs)

    def around(self, used: set[str]) -> list[dict[str, int]]:
        """The assignments to try for a relation over `used`: the defaults, then small
        values of the used sizes (the others at their defaults), then the wide ones."""
        names = sorted(used & set(self.defaults))
        small = {2: range(1, 17), 3: range(1, 7)}.get(len(names), range(1, 5) if len(names) > 3 else range(1, 65))
        out = [dict(self.defaults)]
        if len(names) <= 4:
            for values in itertools.product(small, repeat=len(names)):
                env = dict(self.defaults)
                env.update({n: _round_up(v * self.divisors[n], self.divisors[n]) for n, v in zip(names, values)})
                out.append(env)
        return out + self.envs


def _round_up(value: int, multiple: int) -> int:
    return max(multiple, (value + multiple - 1) // multiple * multiple)


def search(holds: Callable[[dict[str, int]], bool | None], envs: list[dict[str, int]]) -> dict[str, int] | None:
    """The first assignment at which `holds` is False (None from `holds`: not applicable there)."""
    for env in envs:
        try:
            if holds(env) is False:
                return env
        except (KeyError, ZeroDivisionError):
            continue
    return None


BOX_POINTS = 4096  # beyond this many points, a loop box is probed at corners and random points only


def box_points(extents: dict[str, int], seed: int = 0) -> list[dict[str, int]]:
    """Points of the loop box `0 <= v < extent`: all of it when small, else corners and samples."""
    names = sorted(extents)
    total = 1
    for n in names:
        total *= extents[n]
    if total <= BOX_POINTS:
        return [dict(zip(names, p)) for p in itertools.product(*(range(extents[n]) for n in names))]
    corners = [dict(zip(names, p)) for p in itertools.product(*({0, extents[n] - 1} for n in names))][:BOX_POINTS]
    rng = random.Random(seed)
    return corners + [{n: rng.randrange(extents[n]) for n in names} for _ in range(256)]


# --- relations between two expressions -------------------------------------------------


@dataclass
class Verdict:
    """The outcome of a relation: proven, refuted (`example`), or undecided (neither)."""

    proven: bool
    example: dict[str, int] | None = None

    @property
    def undecided(self) -> bool:
        return not self.proven and self.example is None


def decide_le(a: Lin, b: Lin, facts: Facts, samples: Samples) -> Verdict:
    """`a <= b` for every allowed assignment of the sizes?"""
    if facts.proves(b - a):
        return Verdict(True)
    return Verdict(False, search(lambda env: a.evaluate(env) <= b.evaluate(env), samples.around((a - b).names())))


def decide_eq(a: Lin, b: Lin, facts: Facts, samples: Samples) -> Verdict:
    """`a == b` for every allowed assignment of the sizes?"""
    diff = a - b
    if diff.is_const and diff.const == 0:
        return Verdict(True)
    if facts.proves(diff) and facts.proves(diff.scale(-1)):
        return Verdict(True)
    return Verdict(False, search(lambda env: a.evaluate(env) == b.evaluate(env), samples.around(diff.names())))


def describe_env(env: dict[str, int], used: list[str]) -> str:
    return ", ".join(f"{n} = {env[n]}" for n in used if n in env)


def text(e: Expr) -> str:
    return format_affine(e)


# --- 64-bit arithmetic ----------------------------------------------------------------


def outside_int64(e: Expr, ranges: Mapping[str, tuple[int, int]]) -> int | None:
    """A value outside the 64-bit integers that `e` or one of its parts reaches while every
    name ranges over `ranges` (closed intervals), or None.  Constants are checked even when a
    name is unbound; parts over unbound names are not evaluated."""
    found: list[int] = []

    def walk(node: Expr) -> tuple[int, int] | None:
        if found:
            return None
        if isinstance(node, Const):
            if not INT64_MIN <= node.value <= INT64_MAX:
                found.append(node.value)
            return node.value, node.value
        if isinstance(node, Var):
            return ranges.get(node.name)
        a, b = walk(node.lhs), walk(node.rhs)
        if found or a is None or b is None:
            return None
        if node.op == "+":
            lo, hi = a[0] + b[0], a[1] + b[1]
        elif node.op == "-":
            lo, hi = a[0] - b[1], a[1] - b[0]
        elif node.op == "*":
            corners = [x * y for x in a for y in b]
            lo, hi = min(corners), max(corners)
        elif b[0] <= 0:  # a divisor that is not a positive constant is reported elsewhere
            return None
        elif node.op == "/":
            lo, hi = min(a[0] // b[0], a[0] // b[1]), max(a[1] // b[0], a[1] // b[1])
        else:
            lo, hi = 0, b[1] - 1
        for v in (lo, hi):
            if not INT64_MIN <= v <= INT64_MAX:
                found.append(v)
                return None
        return lo, hi

    walk(e)
    return found[0] if found else None


def lin_outside_int64(lin: Lin) -> int | None:
    """A coefficient or constant of the affine form (as the generated C spells it) that does
    not fit 64 bits, or None."""
    for k in [lin.const, *(k for _, k in lin.terms)]:
        if not INT64_MIN <= k <= INT64_MAX:
            return k
    for f in lin.floors():
        bad = lin_outside_int64(f.arg)
        if bad is not None:
            return bad
    return None


def extremes(idx: Lin, loops: Mapping[str, int], env: Mapping[str, int]) -> tuple[tuple[int, dict], tuple[int, dict]]:
    """((smallest value, loop point), (largest value, loop point)) of `idx` over the box
    `0 <= v < loops[v]` at sizes `env`: exact when the loop variables appear outside floor
    terms only or the box is small, else over its corners and random points."""
    used = {v: n for v, n in loops.items() if v in idx.names()}
    inside = {n for f in idx.floors() for n in f.arg.names()} & set(used)
    if not inside:
        coeffs = idx.coeffs()
        low = {v: 0 if coeffs.get(v, 0) > 0 else n - 1 for v, n in used.items()}
        high = {v: n - 1 if coeffs.get(v, 0) > 0 else 0 for v, n in used.items()}
        points = [low, high]
    else:
        points = box_points(used)
    scored = [(idx.evaluate({**env, **p}), p) for p in points]
    return min(scored, key=lambda t: t[0]), max(scored, key=lambda t: t[0])
