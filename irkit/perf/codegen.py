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


def function_source(name: str, terms: Mapping[str, Expr], doc: str = "", varying: frozenset[str] = frozenset()) -> str:
    """`def name(e): ... return {term: value}` over an environment `e` of sizes and model symbols.

    With `varying` (symbols whose values change between calls of one pricing, as a cache level's
    `cap`), the function is `name(e, shared=None)`: the subterms that use none of them are
    computed at the first call that passes a `shared` dict and taken from it at the next ones
    (a nest's fills are priced at every cache level; most of their terms are trip counts and
    footprints that do not depend on the level)."""
    roots = list(terms.values())
    names: dict[int, str] = {}
    order = ex.topological(roots)
    for i, node in enumerate(order):
        names[id(node)] = f"t{i}"
    lines = [f"def {name}(e{', shared=None' if varying else ''}):"]
    if doc:
        lines.append(f'    """{doc}"""')
    if not varying:
        lines += _statements(order, names, "    ", {id(r) for r in roots})
    else:
        lines += _split_body(order, roots, names, varying)
    items = ", ".join(f"{k!r}: {_atom(v, names)}" for k, v in terms.items())
    lines.append(f"    return {{{items}}}")
    return "\n".join(lines) + "\n"


def _split_body(order: list[Expr], roots: list[Expr], names: dict[int, str], varying: frozenset[str]) -> list[str]:
    """The body of a function with a shared part: the subterms free of `varying` first (computed
    once and kept in `shared["v"]`), then the others."""
    moves: dict[int, bool] = {}  # node -> uses a varying symbol
    for node in order:
        moves[id(node)] = any((a.op == "sym" and str(a.value) in varying) or moves.get(id(a), False) for a in node.args)
    fixed = [n for n in order if not moves[id(n)]]
    moving = [n for n in order if moves[id(n)]]
    # the fixed subterms the rest of the function reads: those the moving ones or the result use
    used = {id(a) for n in moving for a in n.args} | {id(r) for r in roots}
    kept = [names[id(n)] for n in fixed if id(n) in used]
    results = {id(r) for r in roots}
    if not kept:
        return _statements(order, names, "    ", results)
    pack = ", ".join(kept) + ("," if len(kept) == 1 else "")
    lines = ["    if shared:", f"        ({pack}) = shared['v']", "    else:"]
    lines += _statements(fixed, names, "        ", used)
    lines += ["        if shared is not None:", f"            shared['v'] = ({pack})"]
    lines += _statements(moving, names, "    ", results)
    return lines


def _statements(nodes: list[Expr], names: dict[int, str], indent: str, keep: set[int]) -> list[str]:
    """One assignment a node, each temporary deleted after its last use among `nodes` unless it is
    in `keep` (read later: a result, a shared subterm).  A model's terms run to thousands of
    subterms over arrays of every size asked for; holding them all to the end of the function
    took 0.7 GB for 10,000 sizes of batch_matmul, and allocating it most of the time."""
    last: dict[int, int] = {}
    for k, node in enumerate(nodes):
        for a in node.args:
            if a.op not in ("const", "sym"):
                last[id(a)] = k
    dead: dict[int, list[str]] = {}
    for ident, k in last.items():
        if ident not in keep and ident in names:
            dead.setdefault(k, []).append(names[ident])
    lines = []
    for k, node in enumerate(nodes):
        lines.append(f"{indent}{names[id(node)]} = {_node(node, names)}")
        if k in dead:
            lines.append(f"{indent}del {', '.join(sorted(dead[k]))}")
    return lines
