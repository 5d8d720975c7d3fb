"""What `unroll_jam` and `pack` share: linear index arithmetic over SSA values,
loop windows, peeling a loop into full blocks and remainders, and cloning.

A *linear form* is the affine core's `Lin` (`irkit.affine.linear`) over index
values (loop variables, kernel sizes): a map result that is linear in its
dimensions, with the dimensions replaced by the operands they stand for, so
that the bounds of different loops and the indices of different accesses
can be compared and combined (`lin_over`).

A loop's *window* is a lower-bound result `l` and an upper-bound result
`l + E` with a constant `E`: every value of the variable lies in
`[l, l + E)` (a lower bound is the max of its results and an upper bound
the min, so any one pair bounds the range).  Tiled and split loops have
one (`ii` runs from `io` to `min(io + 64, M)`: window `[io, io + 64)`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from irkit.affine.linear import POSITIONS, Lin, no_div, try_lin_of
from irkit.dialects import loop as lp
from irkit.passes.lower_tensorop import SCHEDULE_ATTR
from irkit.passes.schedule.helpers import fail, get_str, name, nest_loops, stage_nests

# Directive kinds that may follow `unroll_jam` and `pack` in a schedule: they
# restructure the nest (remainder loops, copies), so a loop name no longer
# names one loop and loop-shaping directives must come first.
MAY_FOLLOW = frozenset({"unroll_jam", "pack", "compute_at", "compute_root"})


# ------------------------------------------------------------ linear forms


def lin_over(expr: AffineExpr, operands: Sequence[SSAValue]) -> Lin | None:
    """`expr` as a form over map positions (no divisions), renamed to the operands (repeats merged)."""
    form = try_lin_of(expr, POSITIONS, div=no_div)
    return None if form is None else form.renamed(operands.__getitem__)


def results(loop: lp.ForOp, upper: bool) -> list[tuple[AffineExpr, list[SSAValue]]]:
    amap = loop.upper.data if upper else loop.lower.data
    ops = list(loop.upper_operands if upper else loop.lower_operands)
    return [(r, ops) for r in amap.results]


def bound_lins(loop: lp.ForOp, upper: bool) -> list[Lin | None]:
    return [lin_over(r, ops) for r, ops in results(loop, upper)]


def single_lower(loop: lp.ForOp) -> Lin | None:
    lows = bound_lins(loop, False)
    return lows[0] if len(lows) == 1 else None


def window(loop: lp.ForOp) -> tuple[Lin, int] | None:
    """The narrowest window `[l, l + E)` of the loop's variable (see the module doc), or None."""
    best: tuple[Lin, int] | None = None
    for lo in bound_lins(loop, False):
        if lo is None:
            continue
        for hi in bound_lins(loop, True):
            if hi is None:
                continue
            extent = (hi - lo).as_const()
            if extent is not None and extent > 0 and (best is None or extent < best[1]):
                best = (lo, extent)
    return best


def loop_of(value: SSAValue) -> lp.ForOp | None:
    """The loop whose variable `value` is, if any."""
    owner = value.owner
    if isinstance(owner, Block):
        parent = owner.parent_op()
        if isinstance(parent, lp.ForOp) and parent.induction_var is value:
            return parent
    return None


def used_operands(op: lp.LoadOp | lp.StoreOp) -> list[SSAValue]:
    amap = op.map.data
    used = set().union(*(r.used_dims() for r in amap.results)) if amap.results else set()
    out: list[SSAValue] = []
    for pos, v in enumerate(op.indices):
        if pos in used and v not in out:
            out.append(v)
    return out


def same_access(a: lp.LoadOp | lp.StoreOp, b: lp.LoadOp | lp.StoreOp) -> bool:
    return a.memref is b.memref and a.map.data == b.map.data and list(a.indices) == list(b.indices)


# ------------------------------------------------------------- map builder


class MapBuilder:
    """Builds affine maps over a growing list of SSA operands (one dimension each)."""

    def __init__(self, operands: Iterable[SSAValue] = ()) -> None:
        self.values: list[SSAValue] = []
        for v in operands:
            self.dim(v)

    def dim(self, v: SSAValue) -> AffineExpr:
        for i, u in enumerate(self.values):
            if u is v:
                return AffineExpr.dimension(i)
        self.values.append(v)
        return AffineExpr.dimension(len(self.values) - 1)

    def lin(self, a: Lin) -> AffineExpr:
        out = AffineExpr.constant(a.const)
        for v, k in a.terms.items():
            out = out + self.dim(v) * k
        return out

    def expr(self, e: AffineExpr, operands: Sequence[SSAValue]) -> AffineExpr:
        used = e.used_dims()
        dims = [self.dim(v) if k in used else AffineExpr.constant(0) for k, v in enumerate(operands)]
        return e.replace_dims_and_symbols(dims, [])

    def build(self, exprs: Sequence[AffineExpr]) -> tuple[AffineMap, list[SSAValue]]:
        n = len(self.values)
        return AffineMap(n, 0, tuple(e.simplify(n, 0) for e in exprs)), list(self.values)


def restrict(amap: AffineMap, operands: Sequence[SSAValue]) -> tuple[AffineMap, list[SSAValue]]:
    """The same map over only the operands its results use (so it can move out of loops)."""
    b = MapBuilder()
    exprs = []
    used = set().union(*(r.used_dims() for r in amap.results)) if amap.results else set()
    for r in amap.results:
        dims = [b.dim(v) if k in used else AffineExpr.constant(0) for k, v in enumerate(operands)]
        exprs.append(r.replace_dims_and_symbols(dims, []))
    return b.build(exprs)


# ------------------------------------------------------------------ loops


def new_loop(
    like: lp.ForOp,
    lower: tuple[AffineMap, list[SSAValue]],
    upper: tuple[AffineMap, list[SSAValue]],
    step: int,
    loop_name: str,
    body,
    where: str,
) -> lp.ForOp:
    """A loop with `like`'s facts (stage, parallel, vector, unroll) and the given bounds and body."""
    loop = lp.ForOp(
        lower[0],
        lower[1],
        upper[0],
        upper[1],
        step,
        loop_name,
        body,
        stage=like.stage.data if like.stage is not None else None,
        parallel=like.parallel is not None,
        vector=like.vector.value.data if like.vector is not None else None,
        unroll=like.unroll.value.data if like.unroll is not None else None,
        origin=where or (like.origin.data if like.origin is not None else None),
    )
    loop.location = like.location
    if SSAValue.is_valid_name(loop_name):
        loop.induction_var.name_hint = loop_name
    return loop


def set_bounds(
    loop: lp.ForOp, lower: tuple[AffineMap, list[SSAValue]] | None, upper: tuple[AffineMap, list[SSAValue]] | None
) -> lp.ForOp:
    """Replace `loop` by one with new bounds (None: keep), the same body and attributes; returns it."""
    lo = lower or (loop.lower.data, list(loop.lower_operands))
    hi = upper or (loop.upper.data, list(loop.upper_operands))
    body = loop.detach_region(loop.body)
    new = new_loop(loop, lo, hi, loop.step_value, name(loop), body, "")
    for key, value in loop.attributes.items():
        new.attributes[key] = value
    parent = loop.parent_block()
    assert parent is not None
    parent.insert_op_before(new, loop)
    loop.detach()
    loop.erase()
    return new


def unique_name(kernel: Operation, stage: str, base: str) -> str:
    taken = {name(lo) for root in stage_nests(kernel, stage) for lo in nest_loops(root)}
    taken |= {name(op) for op in kernel.walk() if isinstance(op, lp.ForOp)}
    if base not in taken:
        return base
    n = 2
    while f"{base}{n}" in taken:
        n += 1
    return f"{base}{n}"


def grid_start(b: MapBuilder, low: AffineExpr, cut: AffineExpr, grid: int) -> AffineExpr:
    """The first point `low + grid * t` (t an integer) at or above `cut`."""
    if grid == 1:
        return cut
    return low + (cut - low).ceil_div(grid) * grid


def peel(
    loop: lp.ForOp,
    cuts: list[tuple[AffineExpr, list[SSAValue]]],
    grid: int,
    main_upper: list[tuple[AffineExpr, list[SSAValue]]] | None,
    tail_name: str,
    where: str,
) -> tuple[lp.ForOp, list[lp.ForOp]]:
    """Split `loop` (one lower-bound result `l`, step `s`) into a main loop and remainders.

    The main loop runs `for v = l to min(U..., cuts...) step grid` (or `min(main_upper...)`
    when given), so it takes the grid points `l + grid*t` below every cut.  The rest of
    the original range `[l, min U)` on the original step -- from the first grid point
    at or above the lowest cut -- is covered by one remainder loop per cut `c_k`
    (clones of the original loop), disjoint by construction:

        R_k: for v = max(l, G_k) to min(U..., G_1, ..., G_{k-1}) step s,
             G_k = l + grid * ceildiv(c_k - l, grid)

    (the union of the R_k is `[min_k G_k, min U)`).  A remainder that is provably
    empty (its start is a known constant at or above an upper result) is left out.
    Returns (main, remainders); the main loop is `loop` itself, re-bounded.
    """
    lows = results(loop, False)
    assert len(lows) == 1
    low_expr, low_ops = lows[0]
    low_lin = lin_over(low_expr, low_ops)
    uppers = results(loop, True)
    step = loop.step_value
    # Remainders, made from clones of the untouched loop.
    b = MapBuilder()
    lo = b.expr(low_expr, low_ops)
    ups = [b.expr(r, ops) for r, ops in uppers]
    up_lins = [lin_over(r, ops) for r, ops in uppers]
    starts: list[tuple[AffineExpr, Lin | None]] = []
    for cut, ops in cuts:
        c = b.expr(cut, ops)
        c_lin = lin_over(cut, ops)
        start_lin: Lin | None = None
        if c_lin is not None and low_lin is not None:
            diff = (c_lin - low_lin).as_const()
            if diff is not None:
                start_lin = low_lin + (grid * -(-diff // grid) if diff > 0 else 0)
        starts.append((b.lin(start_lin) if start_lin is not None else grid_start(b, lo, c, grid), start_lin))
    tails: list[lp.ForOp] = []
    kept: list[tuple[AffineExpr, Lin | None]] = []
    for start, start_lin in starts:
        if start_lin is not None and any(
            u is not None and (d := (u - start_lin).as_const()) is not None and d <= 0
            for u in [*up_lins, *(k for _, k in kept)]
        ):
            continue  # provably empty
        if any(str(start) == str(k) for k, _ in kept):
            continue
        above = None if start_lin is None or low_lin is None else (start_lin - low_lin).as_const()
        lower_exprs = [start] if above is not None and above >= 0 else [lo, start]
        lower = b.build(lower_exprs)
        upper = b.build([*ups, *(k for k, _ in kept)])
        clone = loop.clone()
        body = clone.detach_region(clone.body)
        clone.erase()
        nm = tail_name if not tails else f"{tail_name}{len(tails) + 1}"
        tail = new_loop(loop, lower, upper, step, nm, body, where)
        for key, value in loop.attributes.items():
            tail.attributes[key] = value
        tails.append(tail)
        kept.append((start, start_lin))
    # The main loop.
    mb = MapBuilder()
    if main_upper is None:
        main_exprs = [mb.expr(r, ops) for r, ops in uppers] + [mb.expr(c, ops) for c, ops in cuts]
    else:
        main_exprs = [mb.expr(r, ops) for r, ops in main_upper]
    main = new_loop(
        loop,
        (AffineMap(len(low_ops), 0, (low_expr,)), list(low_ops)),
        mb.build(main_exprs),
        grid,
        name(loop),
        loop.detach_region(loop.body),
        where,
    )  # an `unroll` mark stays: the document unrolls this loop, blocks and remainders alike
    for key, value in loop.attributes.items():
        main.attributes[key] = value
    parent = loop.parent_block()
    assert parent is not None
    parent.insert_op_before(main, loop)
    anchor: Operation = main
    for tail in tails:
        parent.insert_op_after(tail, anchor)
        anchor = tail
    loop.detach()
    loop.erase()
    return main, tails


def paired_walk(a: Operation, b: Operation) -> dict[int, Operation]:
    """Map id(op of a) -> the op at the same place in b (a and b have the same structure)."""
    return {id(x): y for x, y in zip(a.walk(), b.walk(), strict=True)}


# ------------------------------------------------------------ directives


def check_last(kernel: func.FuncOp, stage: str, kind: str, where: str) -> None:
    """`kind` must come after the loop-shaping directives of its stage's schedule."""
    if not where:
        return
    for root in stage_nests(kernel, stage):
        sched = root.attributes.get(SCHEDULE_ATTR)
        if not isinstance(sched, ArrayAttr):
            continue
        rows = [dict(e.data) for e in sched.data if isinstance(e, DictionaryAttr)]
        locs = [get_str(r, "loc", "") for r in rows]
        if where not in locs:
            continue
        for row in rows[locs.index(where) + 1 :]:
            later = get_str(row, "kind", "")
            if later not in MAY_FOLLOW:
                what = later
                for key in ("loop", "loops"):
                    v = row.get(key)
                    if isinstance(v, StringAttr):
                        what += f" {v.data}"
                    elif isinstance(v, ArrayAttr):
                        what += " " + ", ".join(x.data for x in v.data if isinstance(x, StringAttr))
                raise fail(
                    where,
                    f"{kind} must come after the loop-shaping directives of schedule {stage} (it adds remainder "
                    f"loops and copies, so a loop name would no longer name one loop); move '{what}' "
                    f"({get_str(row, 'loc', '?')}) before it",
                    kind,
                )
        return
