"""Cost-term expressions as Python source: one function per nest, shared subterms computed once.

The in-process model and the emitted module (`--emit python`) both run code
made here, so they compute the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping

from irkit.perf import expr as ex
from irkit.perf.expr import Expr


def _atom(e: Expr, names: dict[int, str]) -> str:
    if e.op == "const":
        v = e.value
        return repr(float(v)) if not isinstance(v, str) else v  # type: ignore[arg-type]
    if e.op == "sym":
        return f"e[{str(e.value)!r}]"
    return names[id(e)]


def _node(e: Expr, names: dict[int, str]) -> str:
    a = [_atom(x, names) for x in e.args]
    op = e.op
    if op == "add":
        return " + ".join(a)
    if op == "mul":
        return " * ".join(a)
    # floor and ceiling of a true quotient, not np.floor_divide / np.mod: those compute an exact
    # remainder first, 20x slower on float64 arrays, and the model's operands are whole numbers
    # far below 2**53, whose quotient rounds to a whole number only when it is one
    if op == "fdiv":
        return f"np.floor({a[0]} / {a[1]})"
    if op == "cdiv":
        return f"np.ceil({a[0]} / {a[1]})"
    if op == "rdiv":
        return f"{a[0]} / {a[1]}"
    if op == "mod":
        return f"({a[0]} - {a[1]} * np.floor({a[0]} / {a[1]}))"
    if op in ("min", "max"):
        fn = "np.minimum" if op == "min" else "np.maximum"
        out = a[0]
        for x in a[1:]:
            out = f"{fn}({out}, {x})"
        return out
    if op == "gcd":
        return f"np.gcd(np.asarray({a[0]}).astype(np.int64), np.asarray({a[1]}).astype(np.int64))"
    if op == "fits":  # irkit.perf.runtime.fits, defined in the module that runs this code
        return f"fits({', '.join(a)})"
    if op == "le":
        return f"np.where(np.asarray({a[0]}) <= {a[1]}, {a[2]}, {a[3]})"
    raise ValueError(op)


def function_source(name: str, terms: Mapping[str, Expr], doc: str = "") -> str:
    """`def name(e): ... return {term: value}` over an environment `e` of sizes and model symbols."""
    roots = list(terms.values())
    names: dict[int, str] = {}
    lines = [f"def {name}(e):"]
    if doc:
        lines.append(f'    """{doc}"""')
    for i, node in enumerate(ex.topological(roots)):
        var = f"t{i}"
        lines.append(f"    {var} = {_node(node, names)}")
        names[id(node)] = var
    items = ", ".join(f"{k!r}: {_atom(v, names)}" for k, v in terms.items())
    lines.append(f"    return {{{items}}}")
    return "\n".join(lines) + "\n"
