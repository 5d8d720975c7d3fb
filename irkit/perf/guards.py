"""Selects on index comparisons in scalar loops: branches, each arm run where it is taken.

`select(k < j, A[i, j] - A[i, k] * A[j, k], sqrt(A[i, j]))` computes both arms in the IR, and a
vector loop does compute both (a blend).  In a scalar loop gcc keeps the choice as a branch and
sinks the ops only one arm uses into it: the square root runs once a row of `k`, not at every
`k` (the Cholesky example measured 3x faster than both arms priced at every iteration).  When the
condition compares the loop's own variable, a size or an outer loop's variable (no data), the
number of iterations taking each arm is known exactly: `k < j` over `k` in `[lb, lb + n)` holds
`clamp(j - lb, 0, n)` times.  The branch itself is predicted (it changes once a run of the loop).

`arm_weights` gives each op an arm's ops their expected count an iteration (the product of the
fractions of the selects they sit under); `expected_chain` walks an accumulation chain taking
each such select's arms by their fractions.  Conditions on data (`X[i] > 0`) are left alone:
how often they hold is not known, and gcc often if-converts them.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.ir import Block, Operation, SSAValue

from irkit.dialects import loop as lp
from irkit.perf import expr as ex
from irkit.perf.expr import Expr

# cmpf predicates (ordered and unordered alike: the operands are converted integers) and cmpi's
_CMPF = {1: "eq", 2: "gt", 3: "ge", 4: "lt", 5: "le", 6: "ne", 8: "eq", 9: "gt", 10: "ge", 11: "lt", 12: "le", 13: "ne"}
_CMPI = {0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge", 6: "lt", 7: "le", 8: "gt", 9: "ge"}
_SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _index_atom(v: SSAValue, expr_of: Callable[[SSAValue], Expr | None]) -> Expr | None:
    """The integer a value is when it is a converted index (`sitofp(index_cast(i))`), else None."""
    owner = v.owner
    if isinstance(owner, arith.SIToFPOp):
        v = owner.input
        owner = v.owner
    if isinstance(owner, arith.IndexCastOp):
        return expr_of(owner.input)
    return None


def _condition(cond: SSAValue, expr_of) -> tuple[str, Expr, Expr] | None:
    owner = cond.owner
    if isinstance(owner, arith.CmpfOp):
        pred = _CMPF.get(owner.predicate.value.data)
    elif isinstance(owner, arith.CmpiOp):
        pred = _CMPI.get(owner.predicate.value.data)
    else:
        return None
    a, b = (_index_atom(x, expr_of) for x in owner.operands)
    if pred is None or a is None or b is None:
        return None
    return pred, a, b


def _below(e: Expr, lb: Expr, n: Expr) -> Expr:
    """How many of `lb, lb + 1, ..., lb + n - 1` are below `e`."""
    return ex.min_(ex.max_(e - lb, 0), n)


def true_count(pred: str, a: Expr, b: Expr, var: str, lb: Expr, n: Expr) -> Expr | None:
    """Iterations of a unit-step loop over `var` in `[lb, lb + n)` where `a pred b` holds (None:
    both sides move with the loop, or one is not the variable itself)."""
    v = ex.sym(var)
    if var in b.free():
        a, b, pred = b, a, _SWAPPED[pred]
    if var in b.free() or (var in a.free() and a != v):
        return None
    if a == v:
        below = {"lt": _below(b, lb, n), "le": _below(b + 1, lb, n)}
        at = _below(b + 1, lb, n) - _below(b, lb, n)
        counts = {**below, "gt": n - below["le"], "ge": n - below["lt"], "eq": at, "ne": n - at}
        return counts[pred]
    holds = {
        "lt": ex.le(a + 1, b, 1, 0),
        "le": ex.le(a, b, 1, 0),
        "gt": ex.le(b + 1, a, 1, 0),
        "ge": ex.le(b, a, 1, 0),
        "eq": ex.le(a, b, ex.le(b, a, 1, 0), 0),
    }
    holds["ne"] = 1 - holds["eq"]
    return n * holds[pred]


def _exclusive(select: Operation, arm: int, block: Block) -> set[Operation]:
    """The ops of `block` whose results reach nothing but operand `arm` of `select` (loads
    excepted: their accesses are priced apart)."""
    found: set[Operation] = set()
    todo = [select.operands[arm]]
    while todo:
        owner = todo.pop().owner
        if not isinstance(owner, Operation) or owner.parent_block() is not block or owner in found:
            continue
        if isinstance(owner, lp.LoadOp):
            continue
        found.add(owner)
        todo.extend(owner.operands)
    changed = True
    while changed:
        changed = False
        for op in list(found):
            for result in op.results:
                for use in result.uses:
                    inside = use.operation in found or (use.operation is select and use.index == arm)
                    if not inside:
                        found.discard(op)
                        changed = True
                        break
                if op not in found:
                    break
    return found


def guarded_selects(block: Block, var: str, lb: Expr, n: Expr, expr_of) -> dict[Operation, tuple[Expr, Expr]]:
    """Each select of `block` on an index comparison: the fractions of the iterations taking its
    true and its false arm."""
    out: dict[Operation, tuple[Expr, Expr]] = {}
    for op in block.ops:
        if not isinstance(op, arith.SelectOp):
            continue
        cond = _condition(op.cond, expr_of)
        if cond is None:
            continue
        count = true_count(*cond, var, lb, n)
        if count is None:
            continue
        fraction = ex.rdiv(count, ex.max_(n, 1))
        out[op] = (fraction, 1 - fraction)
    return out


def arm_weights(block: Block, guards: dict[Operation, tuple[Expr, Expr]]) -> dict[Operation, Expr]:
    """Ops that run on some iterations only: their expected count an iteration (a guarded select
    itself is a predicted branch: 0)."""
    weights: dict[Operation, Expr] = {select: ex.ZERO for select in guards}
    for select, fractions in guards.items():
        for arm, fraction in zip((1, 2), fractions):
            for op in _exclusive(select, arm, block):
                weights[op] = weights.get(op, ex.ONE) * fraction
    return weights


def expected_chain(
    store: lp.StoreOp,
    sources: set[SSAValue],
    guards: dict[Operation, tuple[Expr, Expr]],
    kind_of: Callable[[Operation], str | None],
) -> dict[str, Expr] | None:
    """The ops of the chain from `sources` to the stored value by latency class, each guarded
    select's arms taken by their fractions (None: no path).  `kind_of` gives an op's latency
    class, None for an op the chain does not count."""
    block = store.parent_block()
    memo: dict[SSAValue, tuple[int, dict[str, Expr]] | None] = {}

    def walk(v: SSAValue) -> tuple[int, dict[str, Expr]] | None:
        if v in sources:
            return 0, {}
        if v in memo:
            return memo[v]
        memo[v] = None
        owner = v.owner
        if not isinstance(owner, Operation) or owner.parent_block() is not block:
            return None
        if owner in guards:
            arms = [(walk(owner.operands[arm]), fraction) for arm, fraction in zip((1, 2), guards[owner])]
            taken = [(found, fraction) for found, fraction in arms if found is not None]
            if not taken:
                return None
            kinds: dict[str, Expr] = {}
            for (_, part), fraction in taken:
                for cls, count in part.items():
                    kinds[cls] = kinds.get(cls, ex.ZERO) + count * fraction
            memo[v] = (max(weight for (weight, _), _ in taken), kinds)
            return memo[v]
        paths = [p for p in (walk(x) for x in owner.operands) if p is not None]
        if not paths:
            return None
        weight, kinds = max(paths, key=lambda p: p[0])
        cls = kind_of(owner)
        if cls is not None:
            kinds = {**kinds, cls: kinds.get(cls, ex.ZERO) + 1}
            weight += 1
        memo[v] = (weight, kinds)
        return memo[v]

    found = walk(store.value)
    return None if found is None else found[1]
