"""Symbolic cost expressions: functions of a kernel's sizes (and a cache capacity).

The cost model is one model for many sizes (DESIGN.md): every count it
derives -- trip counts, operations, cache lines -- is an expression of the
document's symbolic sizes, printed into the `perf` IR and evaluated later,
vectorised with numpy over many sizes at once.

Expressions are immutable and *interned*: building the same expression
twice gives the same object, so the trees the analysis builds (which
repeat subterms a lot: the first and last iteration of every tiled loop)
are DAGs, evaluated once per node.

The text form is a subset of Python that the runtime evaluates directly:
integers, floats, names, `+ - * //`, `%`, and the functions `cdiv(a, b)`
(ceiling division), `min(...)`, `max(...)` and `where(a <= b, x, y)`
(written `le(a, b, x, y)`: x when a <= b, else y), and `fits(lines, cap,
keep, x, y)`: x for the share of a footprint a cache keeps, y for the rest
(`irkit.perf.runtime.fits`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

_INTERN: dict[tuple, Expr] = {}


class Expr:
    """A node: op is one of const, sym, add, mul, fdiv, cdiv, mod, min, max, le, fdivr (real division), fits."""

    __slots__ = ("op", "args", "value", "_hash", "_free", "serial", "__weakref__")

    op: str
    args: tuple[Expr, ...]
    value: float | int | str | None

    def __new__(cls, op: str, args: tuple[Expr, ...] = (), value: float | int | str | None = None) -> Expr:
        key = (op, tuple(id(a) for a in args), value if op != "const" else (type(value).__name__, value))
        node = _INTERN.get(key)
        if node is not None:
            return node
        node = super().__new__(cls)
        node.op, node.args, node.value = op, args, value
        node._hash = hash(key)
        node._free = None
        node.serial = len(_INTERN)
        _INTERN[key] = node
        return node

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other

    # -- building, with constant folding ---------------------------------

    def __add__(self, other: Expr | int | float) -> Expr:
        return add(self, lift(other))

    __radd__ = __add__

    def __sub__(self, other: Expr | int | float) -> Expr:
        return add(self, mul(const(-1), lift(other)))

    def __rsub__(self, other: Expr | int | float) -> Expr:
        return add(lift(other), mul(const(-1), self))

    def __mul__(self, other: Expr | int | float) -> Expr:
        return mul(self, lift(other))

    __rmul__ = __mul__

    @property
    def is_const(self) -> bool:
        return self.op == "const"

    def free(self) -> frozenset[str]:
        """Names the expression depends on."""
        return _free(self)

    def __repr__(self) -> str:
        return f"Expr({to_text(self)})"


def const(v: int | float) -> Expr:
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        v = int(v)
    return Expr("const", (), v)


def sym(name: str) -> Expr:
    return Expr("sym", (), name)


def lift(v: Expr | int | float) -> Expr:
    return v if isinstance(v, Expr) else const(v)


ZERO = const(0)
ONE = const(1)


def add(*xs: Expr) -> Expr:
    terms: list[Expr] = []
    total: int | float = 0
    for x in xs:
        for t in x.args if x.op == "add" else (x,):
            if t.is_const:
                total += t.value  # type: ignore[operator]
            else:
                terms.append(t)
    # collect c*t + d*t
    coeffs: dict[Expr, int | float] = {}
    order: list[Expr] = []
    for t in terms:
        c, base = _split_coeff(t)
        if base not in coeffs:
            order.append(base)
            coeffs[base] = 0
        coeffs[base] += c
    out = [mul(const(coeffs[b]), b) for b in order if coeffs[b] != 0]
    if total != 0 or not out:
        out.append(const(total))
    if len(out) == 1:
        return out[0]
    return Expr("add", tuple(out))


def _split_coeff(t: Expr) -> tuple[int | float, Expr]:
    if t.op == "mul" and t.args[0].is_const:
        rest = t.args[1:]
        return t.args[0].value, rest[0] if len(rest) == 1 else Expr("mul", rest)  # type: ignore[return-value]
    return 1, t


def mul(*xs: Expr) -> Expr:
    factors: list[Expr] = []
    c: int | float = 1
    for x in xs:
        for f in x.args if x.op == "mul" else (x,):
            if f.is_const:
                c *= f.value  # type: ignore[operator]
            else:
                factors.append(f)
    if c == 0:
        return ZERO
    if not factors:
        return const(c)
    if c == 1 and len(factors) == 1:
        return factors[0]
    factors.sort(key=_order)
    if c != 1:
        factors.insert(0, const(c))
    if len(factors) == 1:
        return factors[0]
    return Expr("mul", tuple(factors))


def _both_const(a: Expr, b: Expr) -> bool:
    return a.is_const and b.is_const


def fdiv(a: Expr | int, b: Expr | int) -> Expr:
    """Floor division (integers)."""
    a, b = lift(a), lift(b)
    if b.is_const and b.value == 1:
        return a
    if _both_const(a, b) and b.value != 0:
        return const(a.value // b.value)  # type: ignore[operator]
    return Expr("fdiv", (a, b))


def cdiv(a: Expr | int, b: Expr | int) -> Expr:
    """Ceiling division (integers)."""
    a, b = lift(a), lift(b)
    if b.is_const and b.value == 1:
        return a
    if _both_const(a, b) and b.value != 0:
        return const(-(-a.value // b.value))  # type: ignore[operator]
    return Expr("cdiv", (a, b))


def rdiv(a: Expr | int | float, b: Expr | int | float) -> Expr:
    """Real division."""
    a, b = lift(a), lift(b)
    if b.is_const and b.value == 1:
        return a
    if _both_const(a, b) and b.value != 0:
        return const(a.value / b.value)  # type: ignore[operator]
    return Expr("rdiv", (a, b))


def mod(a: Expr | int, b: Expr | int) -> Expr:
    a, b = lift(a), lift(b)
    if _both_const(a, b) and b.value != 0:
        return const(a.value % b.value)  # type: ignore[operator]
    return Expr("mod", (a, b))


def _minmax(op: str, xs: tuple[Expr | int | float, ...]) -> Expr:
    items: list[Expr] = []
    consts: list[int | float] = []
    for x in map(lift, xs):
        for t in x.args if x.op == op else (x,):
            if t.is_const:
                consts.append(t.value)  # type: ignore[arg-type]
            elif t not in items:
                items.append(t)
    if consts:
        items.append(const(min(consts) if op == "min" else max(consts)))
    if len(items) == 1:
        return items[0]
    items.sort(key=_order)
    return Expr(op, tuple(items))


def min_(*xs: Expr | int | float) -> Expr:
    return _minmax("min", xs)


def max_(*xs: Expr | int | float) -> Expr:
    return _minmax("max", xs)


def gcd(a: Expr | int, b: Expr | int) -> Expr:
    """Greatest common divisor (integers)."""
    a, b = lift(a), lift(b)
    if _both_const(a, b):
        return const(math.gcd(int(a.value), int(b.value)))  # type: ignore[arg-type]
    if (a.is_const and abs(a.value) == 1) or (b.is_const and abs(b.value) == 1):
        return const(1)
    if a.is_const and a.value == 0:
        return b
    if b.is_const and b.value == 0:
        return a
    if a is b or (b.op == "gcd" and a in b.args) or (a.op == "gcd" and b in a.args):
        return b if b.op == "gcd" else a
    return Expr("gcd", (a, b))


def le(a: Expr | int | float, b: Expr | int | float, then: Expr | int | float, other: Expr | int | float) -> Expr:
    """`then` where a <= b, else `other`."""
    a, b, then, other = lift(a), lift(b), lift(then), lift(other)
    if then is other:
        return then
    if _both_const(a, b):
        return then if a.value <= b.value else other  # type: ignore[operator]
    return Expr("le", (a, b, then, other))


def fits(lines: Expr, cap: Expr, keep: Expr, then: Expr, other: Expr) -> Expr:
    """`then` for the share of a footprint of `lines` a cache of `cap` lines keeps (a step at
    `cap`, or past a random-replacement capacity `keep` > 0 a gradual share), `other` for the rest
    (irkit.perf.runtime.fits prices it)."""
    return Expr("fits", tuple(lift(x) for x in (lines, cap, keep, then, other)))


def _order(e: Expr) -> tuple:
    """A deterministic order for the operands of commutative nodes: names, then by creation."""
    return (0, str(e.value), 0) if e.op == "sym" else (1, "", e.serial)


def _free(e: Expr) -> frozenset[str]:
    if e._free is not None:
        return e._free
    stack = [e]
    while stack:  # compute children first, without deep recursion
        node = stack[-1]
        pending = [a for a in node.args if a._free is None]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        if node._free is not None:
            continue
        if node.op == "sym":
            node._free = frozenset([node.value])  # type: ignore[list-item]
        elif node.op == "const":
            node._free = frozenset()
        else:
            node._free = frozenset().union(*(a._free for a in node.args))  # type: ignore[misc]
    return e._free  # type: ignore[return-value]


def subs(e: Expr, env: Mapping[str, Expr], memo: dict | None = None) -> Expr:
    """Replace names by expressions (folding again)."""
    if not env:
        return e
    memo = {} if memo is None else memo
    got = memo.get(e)
    if got is not None:
        return got
    if e.op == "sym":
        out = env.get(e.value, e)  # type: ignore[arg-type]
    elif e.op == "const" or not (_free(e) & env.keys()):
        out = e
    else:
        args = [subs(a, env, memo) for a in e.args]
        out = rebuild(e.op, args, e.value)
    memo[e] = out
    return out


def rebuild(op: str, args: list[Expr], value=None) -> Expr:
    builders: dict[str, Callable[..., Expr]] = {
        "add": add,
        "mul": mul,
        "fdiv": fdiv,
        "cdiv": cdiv,
        "rdiv": rdiv,
        "mod": mod,
        "min": min_,
        "max": max_,
        "le": le,
        "gcd": gcd,
        "fits": fits,
    }
    return builders[op](*args)


# ---- text ---------------------------------------------------------------------

_PREC = {"add": 1, "mul": 2, "fdiv": 2, "mod": 2, "rdiv": 2}


def to_text(e: Expr) -> str:
    """Python-syntax text of the expression (see the module docstring)."""
    return _text(e, 0)


def _num(v: int | float) -> str:
    if isinstance(v, int):
        return str(v)
    if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
        return f"{int(v)}.0"
    return repr(v)


def _text(e: Expr, parent: int, root: bool = True) -> str:
    named = _text_hook.get("named")
    if not root and named and e in named:  # type: ignore[operator]
        return named[e]  # type: ignore[index]
    op = e.op
    if op == "const":
        s = _num(e.value)  # type: ignore[arg-type]
        return f"({s})" if s.startswith("-") and parent > 0 else s
    if op == "sym":
        return str(e.value)
    if op == "add":
        parts = [_text(e.args[0], 1, False)]
        for t in e.args[1:]:
            c, base = _split_coeff(t)
            if isinstance(c, int | float) and c < 0:
                mag = -c
                body = _text(base, 2, False) if mag == 1 else f"{_num(mag)} * {_text(base, 2, False)}"
                parts.append(f"- {body}")
            else:
                parts.append(f"+ {_text(t, 1, False)}")
        s = " ".join(parts)
        return f"({s})" if parent > 1 else s
    if op == "mul":
        s = " * ".join(_text(a, 2, False) for a in e.args)
        return f"({s})" if parent > 2 else s
    if op in ("fdiv", "mod", "rdiv"):
        sym_ = {"fdiv": "//", "mod": "%", "rdiv": "/"}[op]
        s = f"{_text(e.args[0], 2, False)} {sym_} {_text(e.args[1], 3, False)}"
        return f"({s})" if parent >= 2 else s
    if op in ("cdiv", "min", "max", "le", "gcd", "fits"):
        return f"{op}({', '.join(_text(a, 0, False) for a in e.args)})"
    raise ValueError(f"unknown expression node {op}")


def parse(text: str) -> Expr:
    """Read the text form back (used by the perf dialect's verifier and tests)."""
    import ast

    tree = ast.parse(text, mode="eval").body
    return _from_ast(tree)


def _from_ast(node) -> Expr:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return const(node.value)
    if isinstance(node, ast.Name):
        return sym(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return mul(const(-1), _from_ast(node.operand))
    if isinstance(node, ast.BinOp):
        a, b = _from_ast(node.left), _from_ast(node.right)
        ops = {ast.Add: add, ast.Mult: mul, ast.FloorDiv: fdiv, ast.Mod: mod, ast.Div: rdiv}
        if isinstance(node.op, ast.Sub):
            return a - b
        for k, f in ops.items():
            if isinstance(node.op, k):
                return f(a, b)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        args = [_from_ast(a) for a in node.args]
        fns = {"cdiv": cdiv, "min": min_, "max": max_, "le": le, "gcd": gcd, "fits": fits}
        if node.func.id in fns:
            return fns[node.func.id](*args)
    raise ValueError(f"not a cost expression: {ast.unparse(node)}")


# ---- evaluation --------------------------------------------------------------


def evaluate(roots: Mapping[str, Expr], env: Mapping[str, object], np_module=None) -> dict[str, object]:
    """Values of several expressions, sharing subterms; env values may be numpy arrays."""
    import numpy as np

    from irkit.perf.runtime import fits as fits_

    xp = np if np_module is None else np_module
    memo: dict[Expr, object] = {}

    def ev(e: Expr):
        got = memo.get(e)
        if got is not None:
            return got
        op = e.op
        if op == "const":
            v = e.value
        elif op == "sym":
            v = env[e.value]  # type: ignore[index]
        else:
            a = [ev(x) for x in e.args]
            if op == "add":
                v = a[0]
                for x in a[1:]:
                    v = v + x
            elif op == "mul":
                v = a[0]
                for x in a[1:]:
                    v = v * x
            elif op == "fdiv":
                v = a[0] // a[1]
            elif op == "cdiv":
                v = -((-a[0]) // a[1])
            elif op == "rdiv":
                v = a[0] / a[1]
            elif op == "mod":
                v = a[0] % a[1]
            elif op == "min":
                v = a[0]
                for x in a[1:]:
                    v = xp.minimum(v, x)
            elif op == "max":
                v = a[0]
                for x in a[1:]:
                    v = xp.maximum(v, x)
            elif op == "le":
                v = xp.where(xp.asarray(a[0]) <= a[1], a[2], a[3])
            elif op == "gcd":
                v = xp.gcd(xp.asarray(a[0]).astype(xp.int64), xp.asarray(a[1]).astype(xp.int64))
            elif op == "fits":
                v = fits_(*a)
            else:
                raise ValueError(op)
        memo[e] = v
        return v

    return {k: ev(e) for k, e in roots.items()}


def topological(roots: list[Expr]) -> list[Expr]:
    """Every non-leaf node under the roots, each after its arguments (for emitting code)."""
    seen: set[int] = set()
    order: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        e, done = stack.pop()
        if done:
            order.append(e)
            continue
        if id(e) in seen or e.op in ("const", "sym"):
            continue
        seen.add(id(e))
        stack.append((e, True))
        for a in reversed(e.args):
            if id(a) not in seen and a.op not in ("const", "sym"):
                stack.append((a, False))
    return order


def to_text_shared(roots: Mapping[str, Expr], prefix: str = "s") -> tuple[dict[str, str], dict[str, str]]:
    """Texts of several expressions with their shared subterms named once.

    Returns (defs, texts): `defs` in dependency order, name -> text (a text
    may use earlier names), and each root's text.  A subterm is named when
    it is used more than once and is not a leaf.
    """
    uses: dict[Expr, int] = {}
    for node in topological(list(roots.values())):
        for a in node.args:
            if a.op not in ("const", "sym"):
                uses[a] = uses.get(a, 0) + 1
    for r in roots.values():
        if r.op not in ("const", "sym"):
            uses[r] = uses.get(r, 0) + 1
    named: dict[Expr, str] = {}
    defs: dict[str, str] = {}
    for node in topological(list(roots.values())):
        if uses.get(node, 0) > 1:
            text = _text_with(node, named, 0, top=True)
            name = f"{prefix}{len(defs)}"
            defs[name] = text
            named[node] = name
    texts = {k: _text_with(v, named, 0, top=False) for k, v in roots.items()}
    return defs, texts


def _text_with(e: Expr, named: Mapping[Expr, str], parent: int, top: bool) -> str:
    if not top and e in named:
        return named[e]
    saved = _text_hook.get("named")
    _text_hook["named"] = named
    try:
        return _text(e, parent)
    finally:
        _text_hook["named"] = saved


_text_hook: dict[str, object] = {}


def slope(e: Expr, var: str) -> int | float:
    """How much `e` grows when `var` grows by one, where that is fixed (affine pieces);
    for min/max/le the largest slope of the alternatives (the window that moves)."""
    if var not in e.free():
        return 0
    if e.op == "sym":
        return 1
    if e.op == "add":
        return sum(slope(a, var) for a in e.args)
    if e.op == "mul":
        consts = [a for a in e.args if a.is_const]
        rest = [a for a in e.args if not a.is_const]
        if len(rest) == 1:
            c = consts[0].value if consts else 1
            return c * slope(rest[0], var)  # type: ignore[operator]
        return 0
    if e.op in ("min", "max"):
        return max((slope(a, var) for a in e.args), key=abs)
    return 0
