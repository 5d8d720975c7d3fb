"""`unroll_jam v by F`: register blocking.  Loop `v` is unrolled by `F` and the `F`
copies of its body are jammed into the innermost loop, then the accumulated
output elements are kept in a register tile across the reduction loop.

Before (GEMM after `tile`/`split`/`reorder`; `jv` vectorized):

    for ii = io to min(io + 96, M) step 1
      for ki = ko to min(ko + 256, K) step 1
        for jv = jr to min(jr + 16, jo + 256, N) step 1 {vector = 8}
          C[ii, jv] += A[ii, ki] * B[ki, jv]

After `unroll_jam ii by 6`:

    for jr = jo to min(jo + 256, N, N - 15) step 16          (full blocks of jv)
      for ii = io to min(io + 91, M - 5) step 6               (main: whole blocks of 6 rows)
        acc0..acc5 = loop.local : memref<16xf32>              (the register tile)
        for jv = jr to jr + 16 {vector = 8}: acc_r[jv - jr] = C[ii + r, jv]     r = 0..5
        for ki = ko to min(ko + 256, K)
          for jv = jr to jr + 16 {vector = 8}
            acc_r[jv - jr] += A[ii + r, ki] * B[ki, jv]                         r = 0..5
        for jv = jr to jr + 16 {vector = 8}: C[ii + r, jv] = acc_r[jv - jr]
      for ii_tail = max(io, io + 6 * floordiv(M - io, 6)) to min(io + 96, M) step 1
        ... the original body, one row, with its own 1-row register tile
    for jr_tail = ... (the last, partial block of jv: same code, tiles of variable width)

1. **Unroll and jam.**  `v` (one lower-bound result `l`, step `s`) becomes a
   main loop over whole blocks, `for v = l to min(u - (F-1)s, ...) step F*s`,
   whose innermost body holds the `F` copies (copy `r` reads and writes with
   `v + r*s` in place of `v`, folded into the access maps), and remainder
   loops `v_tail` over what is left, one per upper-bound result `u` that is
   not a whole number of blocks away from `l` (see `_blocking.peel`; with
   constant or divisible bounds there is none).  Legal when the loops inside
   `v` are perfectly nested, their bounds do not use `v`, and each stored
   element is either different for different copies (an index is
   `a*v + (values fixed inside v)`, a != 0) or accumulated with an
   associative operation (then only the order of a reduction changes).
2. **Full tiles.**  The loops inside the reduction loop that the stored
   element depends on (the *tile loops*, `jv`) must have a constant trip
   count for the tile to live in registers.  When a tile loop's range is a
   window `[w, w + E)` of an enclosing loop `P` outside `v` cut by other
   upper bounds (`min(jr + 16, jo + 256, N)`), `P` is peeled: its main part
   runs only where the window is whole (`jr < N - 15`) and the tile loops in
   it get the bound `w + E`; a remainder `P_tail` keeps the general code.
3. **Scalar replacement.**  In every resulting nest (main and remainders),
   if the innermost body updates elements `X[f]` by `X[f] = X[f] op e`
   (an accumulation) and there is a *reduction loop* `R` below `v` that no
   stored element depends on, with every loop inside `R` either a
   reduction loop or a tile loop of constant extent whose bounds do not use
   `R`: each stored element gets a `loop.local` tile (one per copy) placed
   before `R`, loaded from `X` by a copy of the tile loops before `R`,
   updated inside, and stored back by a copy after `R`.

Loops created here get `origin = where`.  A directive that shapes loops
(split, tile, reorder, parallel, vectorize, unroll) may not follow
`unroll_jam` in a schedule: names would then designate several loops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass

from irkit.affine.linear import Lin
from irkit.dialects import loop as lp
from irkit.kernel_abi import value_name
from irkit.passes.options import option
from irkit.passes.schedule import directive
from irkit.passes.schedule._blocking import (
    MapBuilder,
    check_last,
    lin_over,
    loop_of,
    new_loop,
    paired_walk,
    peel,
    restrict,
    results,
    same_access,
    set_bounds,
    single_lower,
    unique_name,
    used_operands,
    window,
)
from irkit.passes.schedule._pass import run_directive
from irkit.passes.schedule.helpers import (
    access_text,
    chain_below,
    fail,
    get_int,
    get_str,
    is_accumulation,
    make_directive,
    name,
    range_text,
    targets,
)


@directive("unroll_jam")
def apply(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    loop_name = get_str(d, "loop")
    factor = get_int(d, "factor")
    if factor is None or factor <= 0:
        raise fail(where, f"unroll_jam factor must be positive, got {factor}", str(factor))
    check_last(kernel, stage, "unroll_jam", where)
    for _, (loop,) in targets(kernel, stage, [loop_name], where):
        unroll_jam(kernel, stage, loop, factor, where)


# --------------------------------------------------------------- legality


def _inside(value: SSAValue, loop: lp.ForOp) -> bool:
    """Is `value` defined inside `loop` (its variable or anything in its body)?"""
    owner = value.owner
    op = owner.parent_op() if not isinstance(owner, Operation) else owner
    return op is not None and (op is loop or loop.is_ancestor(op))


def _check_jam(v: lp.ForOp, chain: list[lp.ForOp], body: list[Operation], where: str) -> None:
    lname = name(v)
    iv = v.induction_var
    for inner in chain[1:]:
        if iv in (*inner.lower_operands, *inner.upper_operands):
            raise fail(
                where,
                f"unroll_jam '{lname}': the bounds of '{name(inner)}' depend on '{lname}' ({range_text(inner)}), "
                "so the copies cannot share its iterations",
                lname,
            )
    for op in body:
        if op.regions:
            raise fail(where, f"unroll_jam '{lname}': the innermost body holds '{op.name}' with regions", lname)
    for st in (o for o in body if isinstance(o, lp.StoreOp)):
        others = [o for o in body if isinstance(o, lp.LoadOp | lp.StoreOp) and o is not st and o.memref is st.memref]
        for o in others:
            if not (isinstance(o, lp.LoadOp) and same_access(o, st)):
                raise fail(
                    where,
                    f"unroll_jam '{lname}': '{value_name(st.memref)}' is written at {access_text(st)} and accessed "
                    f"at {access_text(o)} in one iteration; jamming copies of '{lname}' could reorder them",
                    lname,
                )
        if _distinct_by(st, iv, v):
            continue
        if len(others) == 1 and is_accumulation(st, others[0]):  # type: ignore[arg-type]
            continue
        raise fail(
            where,
            f"unroll_jam '{lname}': the copies would all write {access_text(st)}, which does not depend on "
            f"'{lname}' and is not an accumulation (+, *, max, min): jamming would reorder its updates",
            lname,
        )


def _distinct_by(st: lp.StoreOp, iv: SSAValue, v: lp.ForOp) -> bool:
    """Does some index of the store read `a*iv + (values fixed inside v)` with a != 0?"""
    for r in st.map.data.results:
        form = lin_over(r, list(st.indices))
        if form is None:
            continue
        if form.terms.get(iv, 0) != 0 and all(u is iv or not _inside(u, v) for u in form.terms):
            return True
    return False


# ----------------------------------------------------------------- jamming


def _shift_map(amap: AffineMap, indices: list[SSAValue], iv: SSAValue, offset: int) -> AffineMap:
    dims = [AffineExpr.dimension(k) + offset if v is iv else AffineExpr.dimension(k) for k, v in enumerate(indices)]
    n = len(indices)
    return AffineMap(n, 0, tuple(r.replace_dims_and_symbols(dims, []).simplify(n, 0) for r in amap.results))


def _jam(main: lp.ForOp, factor: int, step: int) -> None:
    inner = chain_below(main)[-1]
    block = inner.body.block
    ops = list(block.ops)
    iv = main.induction_var
    stored = {o.memref for o in ops if isinstance(o, lp.StoreOp)}
    for r in range(1, factor):
        offset = r * step
        mapper: dict[SSAValue, SSAValue] = {}
        shifted: SSAValue | None = None
        for op in ops:
            if isinstance(op, lp.LoadOp) and iv not in used_operands(op) and op.memref not in stored:
                mapper[op.result] = op.result  # the same element for every copy: load it once
                continue
            if isinstance(op, lp.LoadOp | lp.StoreOp):
                indices = list(op.indices)
                amap = _shift_map(op.map.data, indices, iv, offset)
                if isinstance(op, lp.LoadOp):
                    new: Operation = lp.LoadOp(op.memref, amap, indices)
                    new.results[0].name_hint = op.result.name_hint
                else:
                    new = lp.StoreOp(mapper.get(op.value, op.value), op.memref, amap, indices)
                new.location = op.location
            else:
                if iv in op.operands and shifted is None:
                    c = arith.ConstantOp(IntegerAttr(offset, IndexType()))
                    add = arith.AddiOp(iv, c.result)
                    block.add_ops([c, add])
                    shifted = add.result
                    mapper[iv] = shifted
                new = op.clone(value_mapper=mapper)
                for old_res, new_res in zip(op.results, new.results):
                    mapper[old_res] = new_res
            if isinstance(op, lp.LoadOp):
                mapper[op.result] = new.results[0]
            block.add_op(new)


# -------------------------------------------------------- register tiles


def _affects(loop: lp.ForOp, st: lp.StoreOp) -> bool:
    """Does the element `st` stores change with `loop`'s variable (directly or through the
    bounds of the loops inside it whose variables the store uses)?"""
    iv = loop.induction_var

    def depends(value: SSAValue, depth: int) -> bool:
        if value is iv:
            return True
        inner = loop_of(value)
        if inner is None or depth > 32 or not loop.is_ancestor(inner):
            return False
        return any(depends(o, depth + 1) for o in (*inner.lower_operands, *inner.upper_operands))

    return any(depends(u, 0) for u in used_operands(st))


def _apart(a: lp.StoreOp, b: lp.StoreOp) -> bool:
    """Do the two stores address different elements in every iteration (an index differs by a
    nonzero constant)?"""
    for ra, rb in zip(a.map.data.results, b.map.data.results):
        la, lb = lin_over(ra, list(a.indices)), lin_over(rb, list(b.indices))
        if la is not None and lb is not None and ((la - lb).as_const() or 0) != 0:
            return True
    return False


@dataclass
class TilePlan:
    chain: list[lp.ForOp]
    reduction: lp.ForOp  # R: the tile is held across it
    tile: list[lp.ForOp]  # tile loops inside R, outermost first
    pairs: list[tuple[lp.LoadOp, lp.StoreOp]]


def plan_tile(top: lp.ForOp) -> TilePlan | None:
    """The register tile of the nest below `top` (see step 3 of the module doc), or None."""
    chain = chain_below(top)
    body = list(chain[-1].body.block.ops)
    if len(chain) < 2 or any(isinstance(o, lp.ForOp) or o.regions for o in body):
        return None
    stores = [o for o in body if isinstance(o, lp.StoreOp)]
    if not stores:
        return None
    pairs: list[tuple[lp.LoadOp, lp.StoreOp]] = []
    for st in stores:
        same = [o for o in body if isinstance(o, lp.LoadOp) and same_access(o, st)]
        if len(same) != 1 or body.index(same[0]) > body.index(st) or not is_accumulation(st, same[0]):
            return None
        pairs.append((same[0], st))
    # Every access to a stored buffer is one of the pairs, and pairs on one buffer
    # (the jammed copies) address provably different elements.
    paired = {id(o) for pair in pairs for o in pair}
    for st in stores:
        if any(isinstance(o, lp.LoadOp | lp.StoreOp) and o.memref is st.memref and id(o) not in paired for o in body):
            return None
        for other in stores:
            if other is not st and other.memref is st.memref and not _apart(st, other):
                return None
    k = next((k for k in range(1, len(chain)) if not any(_affects(chain[k], st) for st in stores)), None)
    if k is None:
        return None
    below = chain[k:]
    tile = [lo for lo in below if any(_affects(lo, st) for st in stores)]
    inside = {lo.induction_var for lo in below}
    for n, lo in enumerate(tile):
        allowed = {t.induction_var for t in tile[:n]}
        if any(o in inside and o not in allowed for o in (*lo.lower_operands, *lo.upper_operands)):
            return None
        low = single_lower(lo)
        win = window(lo)
        if low is None or win is None or (win[0] - low).as_const() != 0:
            return None
    tile_ivs = {lo.induction_var for lo in tile}
    for st in stores:
        if any(u in inside and u not in tile_ivs for u in used_operands(st)):
            return None
    return TilePlan(chain, chain[k], tile, pairs)


def _tile_index(tile: list[lp.ForOp], ivs: list[SSAValue]) -> tuple[AffineMap, list[SSAValue]]:
    """Indices into a tile: `(iv - lower) floordiv step` per tile loop, for the given variables."""
    if not tile:  # a one-element tile: the accumulator of a reduction along the innermost loops
        return AffineMap(0, 0, (AffineExpr.constant(0),)), []

    def given(u: SSAValue) -> SSAValue:  # a tile loop's variable -> the given one
        t = loop_of(u)
        return ivs[tile.index(t)] if t in tile else u

    b = MapBuilder()
    exprs = []
    for lo, iv in zip(tile, ivs):
        low = single_lower(lo)
        assert low is not None
        rel = b.dim(iv) - b.lin(low.renamed(given))
        exprs.append(rel if lo.step_value == 1 else rel // lo.step_value)
    return b.build(exprs)


def _extents(tile: list[lp.ForOp]) -> list[int]:
    out = []
    for lo in tile:
        win = window(lo)
        assert win is not None
        out.append(-(-win[1] // lo.step_value))
    return out


def register_tile(top: lp.ForOp, where: str) -> bool:
    plan = plan_tile(top)
    if plan is None:
        return False
    red = plan.reduction
    parent = red.parent_block()
    assert parent is not None
    shape = _extents(plan.tile) or [1]
    locals_: list[lp.LocalOp] = []
    for a, (_ld, st) in enumerate(plan.pairs):
        etype = st.value.type
        tname = f"{value_name(st.memref)}_acc{a if len(plan.pairs) > 1 else ''}"
        local = lp.LocalOp(tname, MemRefType(etype, shape))
        local.result.name_hint = tname
        local.location = st.location
        parent.insert_op_before(local, red)
        locals_.append(local)

    def tile_nest(load_first: bool) -> list[Operation]:
        mapping: dict[SSAValue, SSAValue] = {}
        outer: lp.ForOp | None = None
        last: lp.ForOp | None = None
        ops_out: list[Operation] = []
        for lo in plan.tile:
            lower = (lo.lower.data, [mapping.get(o, o) for o in lo.lower_operands])
            upper = (lo.upper.data, [mapping.get(o, o) for o in lo.upper_operands])
            clone = new_loop(lo, lower, upper, lo.step_value, name(lo), None, where)
            mapping[lo.induction_var] = clone.induction_var
            if last is None:
                outer = clone
            else:
                last.body.block.add_op(clone)
            last = clone
        ivs = [mapping[lo.induction_var] for lo in plan.tile]
        idx_map, idx_ops = _tile_index(plan.tile, ivs)
        for (ld, st), local in zip(plan.pairs, locals_):
            amap, ops = restrict(st.map.data, list(st.indices))
            ops = [mapping.get(o, o) for o in ops]
            if load_first:
                get = lp.LoadOp(st.memref, amap, ops)
                put = lp.StoreOp(get.result, local.result, idx_map, idx_ops)
            else:
                get = lp.LoadOp(local.result, idx_map, idx_ops)
                put = lp.StoreOp(get.result, st.memref, amap, ops)
            get.result.name_hint = ld.result.name_hint
            get.location = put.location = st.location
            if last is None:
                ops_out += [get, put]
            else:
                last.body.block.add_ops([get, put])
        return [outer] if outer is not None else ops_out

    for op in tile_nest(True):
        parent.insert_op_before(op, red)
    anchor: Operation = red
    for op in tile_nest(False):
        parent.insert_op_after(op, anchor)
        anchor = op
    ivs = [lo.induction_var for lo in plan.tile]
    idx_map, idx_ops = _tile_index(plan.tile, ivs)
    for (ld, st), local in zip(plan.pairs, locals_):
        block = st.parent_block()
        assert block is not None
        new_ld = lp.LoadOp(local.result, idx_map, idx_ops)
        new_ld.result.name_hint = ld.result.name_hint
        new_ld.location = ld.location
        block.insert_op_before(new_ld, ld)
        ld.result.replace_all_uses_with(new_ld.result)
        ld.detach()
        ld.erase()
        new_st = lp.StoreOp(st.value, local.result, idx_map, idx_ops)
        new_st.location = st.location
        block.insert_op_before(new_st, st)
        st.detach()
        st.erase()
    return True


# ------------------------------------------------------------- full tiles


def _window_cuts(plan: TilePlan, v: lp.ForOp) -> tuple[lp.ForOp, list[tuple[lp.ForOp, list[int]]], list] | None:
    """For tile loops whose range is a window `[w, w + E)` of a loop P around `v`, cut by
    other upper bounds: (P, [(tile loop, indices of the cut upper results)], cuts over P)."""
    target: lp.ForOp | None = None
    marks: list[tuple[lp.ForOp, list[int]]] = []
    cuts: list[tuple[AffineExpr, list[SSAValue]]] = []
    seen: set[str] = set()
    for lo in plan.tile:
        win = window(lo)
        if win is None:
            continue
        low, extent = win
        vars_ = [u for u in low.terms if loop_of(u) is not None]
        if len(vars_) != 1 or low.terms[vars_[0]] != 1:
            continue
        p = loop_of(vars_[0])
        assert p is not None
        if not p.is_ancestor(v) or single_lower(p) is None or (target is not None and p is not target):
            continue
        piv = p.induction_var
        offset = low - Lin.of(piv)  # low = piv + offset (offset fixed outside P)
        if any(_inside(u, p) for u in offset.terms):
            continue
        cut_idx: list[int] = []
        mine: list[tuple[AffineExpr, list[SSAValue]]] = []
        expressible = True
        for k, (r, ops) in enumerate(results(lo, True)):
            hi = lin_over(r, ops)
            if hi is not None and (hi - low).as_const() == extent:
                continue  # the window's own bound
            if any(_inside(ops[d], p) for d in r.used_dims()):
                expressible = False  # not a bound of P
                break
            # l + E <= u  <=>  piv < u - offset - E + 1
            b = MapBuilder()
            cmap, cops = b.build([b.expr(r, ops) - b.lin(offset) - (extent - 1)])
            mine.append((cmap.results[0], cops))
            cut_idx.append(k)
        if not expressible or not cut_idx:
            continue
        target = p
        marks.append((lo, cut_idx))
        for cut in mine:
            key = f"{cut[0]}{[id(x) for x in cut[1]]}"
            if key not in seen:
                seen.add(key)
                cuts.append(cut)
    if target is None or not cuts:
        return None
    return target, marks, cuts


def _exact(lo: lp.ForOp, cut_idx: list[int]) -> None:
    keep = [(r, ops) for k, (r, ops) in enumerate(results(lo, True)) if k not in cut_idx]
    b = MapBuilder()
    set_bounds(lo, None, b.build([b.expr(r, ops) for r, ops in keep]))


def unroll_jam(kernel: func.FuncOp, stage: str, v: lp.ForOp, factor: int, where: str) -> None:
    lname = name(v)
    chain = chain_below(v)
    if len(chain) == 1:
        raise fail(
            where,
            f"unroll_jam '{lname}': '{lname}' is the innermost loop, so there is nothing to jam it into; use unroll",
            lname,
        )
    innermost = chain[-1]
    body = list(innermost.body.block.ops)
    nested = next((o for o in body if isinstance(o, lp.ForOp)), None)
    if nested is not None:
        raise fail(
            where,
            f"unroll_jam '{lname}': the loops inside '{lname}' are not perfectly nested ('{name(innermost)}' holds "
            f"'{name(nested)}' and other operations)",
            lname,
        )
    if single_lower(v) is None:
        raise fail(
            where, f"unroll_jam '{lname}': its lower bound must be one affine expression ({range_text(v)})", lname
        )
    _check_jam(v, chain, body, where)
    span = window(v)
    if span is not None and factor > span[1]:
        raise fail(
            where,
            f"unroll_jam '{lname}' by {factor}: '{lname}' runs at most {span[1]} iterations (its tile or split), so "
            f"no block of {factor} would ever run; use a factor of at most {span[1]}",
            str(factor),
        )
    family: list[lp.ForOp] = [v]
    if factor > 1:
        step = v.step_value
        cuts = []
        for r, ops in results(v, True):
            b = MapBuilder()
            cmap, cops = b.build([b.expr(r, ops) - (factor - 1) * step])
            cuts.append((cmap.results[0], cops))
        main, tails = peel(v, cuts, factor * step, cuts, unique_name(kernel, stage, f"{lname}_tail"), where)
        _jam(main, factor, step)
        family = [main, *tails]
    plan = plan_tile(family[0])
    cut = _window_cuts(plan, family[0]) if plan is not None else None
    if cut is not None:
        p, marks, cuts = cut
        p_main, p_tails = peel(p, cuts, p.step_value, None, unique_name(kernel, stage, f"{name(p)}_tail"), where)
        pairs = [paired_walk(p_main, t) for t in p_tails]
        extra = [pair[id(f)] for pair in pairs for f in family]
        for lo, idx in marks:
            _exact(lo, idx)
        # Tile loops of the remainders of v inside the main part of P are whole too.
        for f in family[1:]:
            sub = plan_tile(f)
            if sub is None:
                continue
            sub_cut = _window_cuts(sub, f)
            if sub_cut is not None and sub_cut[0] is p_main:
                for lo, idx in sub_cut[1]:
                    _exact(lo, idx)
        family = family + extra  # type: ignore[operator]
    for f in family:
        register_tile(f, where)


@dataclass(frozen=True)
class ScheduleUnrollJamPass(ModulePass):
    """Unroll loop `loop` of stage `stage` by `factor` and jam the copies into the loops
    inside it, with remainder loops and register tiles (scalar replacement)."""

    name = "schedule-unroll-jam"
    stage: str = option(help="the stage (the tensor a statement writes) whose loops are transformed")
    loop: str = option(help="the loop, by its name in the stage's nest")
    factor: int = option(help="how many iterations are jammed into the loops inside (the register tile's size)")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        d = make_directive("unroll_jam", self.loc, loop=self.loop, factor=self.factor)
        run_directive(op, "unroll_jam", self.stage, d, self.loc)
