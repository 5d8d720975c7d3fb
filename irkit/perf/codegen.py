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
    if op == "le":
        return f"np.where(np.asarray({a[0]}) <= {a[1]}, {a[2]}, {a[3]})"
    raise ValueError(op)


def function_source(name: str, terms: Mapping[str, Expr], doc: str = "", varying: frozenset[str] = frozenset()) -> str:
    """`def name(e): ... return {term: value}` over an environment `e` of sizes and model symbols.

    With `varying` (symbols that change between calls, e.g. a cache level's capacity), the
    function takes a second argument, a dict shared by calls whose other symbols are the same:
    the subterms that read none of `varying` are computed by the first such call and kept there
    for the others (pricing calls a nest's fills at every level of the hierarchy)."""
    roots = list(terms.values())
    names: dict[int, str] = {}
    order = ex.topological(roots)
    if not varying:
        lines = [f"def {name}(e):"]
        if doc:
            lines.append(f'    """{doc}"""')
        for i, node in enumerate(order):
            var = f"t{i}"
            lines.append(f"    {var} = {_node(node, names)}")
            names[id(node)] = var
        items = ", ".join(f"{k!r}: {_atom(v, names)}" for k, v in terms.items())
        lines.append(f"    return {{{items}}}")
        return "\n".join(lines) + "\n"
    varies: dict[int, bool] = {}

    def moves(e: Expr) -> bool:
        if e.op == "sym":
            return str(e.value) in varying
        if e.op == "const":
            return False
        return varies[id(e)]

    for node in order:
        varies[id(node)] = any(moves(a) for a in node.args)
    fixed = [n for n in order if not varies[id(n)]]
    for i, node in enumerate(order):
        names[id(node)] = f"t{i}"
    # the fixed subterms the varying part (or the result) reads: what the shared dict keeps
    used = {id(a) for n in order if varies[id(n)] for a in n.args if a.op not in ("const", "sym")}
    used |= {id(v) for v in terms.values()}
    kept = [names[id(n)] for n in fixed if id(n) in used]
    packed = "(" + "".join(f"{v}, " for v in kept) + ")"
    lines = [f"def {name}(e, shared=None):"]
    if doc:
        lines.append(f'    """{doc}"""')
    lines.append(f"    if shared is not None and {name!r} in shared:")
    lines.append(f"        {packed} = shared[{name!r}]" if kept else "        pass")
    lines.append("    else:")
    lines.extend(f"        {names[id(node)]} = {_node(node, names)}" for node in fixed)
    lines.append("        if shared is not None:")
    lines.append(f"            shared[{name!r}] = {packed}")
    lines.extend(f"    {names[id(node)]} = {_node(node, names)}" for node in order if varies[id(node)])
    items = ", ".join(f"{k!r}: {_atom(v, names)}" for k, v in terms.items())
    lines.append(f"    return {{{items}}}")
    return "\n".join(lines) + "\n"
