"""Undoing `unroll_jam`: register tiles, jammed copies and the tails of register blocks.

`unroll_jam ii by 6` leaves three marks in the loops, undone here in turn:

1. **register tiles**: `loop.local` buffers loaded from a tensor before a
   reduction (copy-in), updated in it, and stored back after (copy-out).
   Each becomes a *view* of the tensor: the copy-in says which element a
   tile element holds (`C_acc0[jv - jr] = C[ii, jv]`: element `l` is
   `C[ii, jr + l]`), every update of the tile becomes an update of that
   element, and the copies go.  A tile never stored back, or stored back
   elsewhere than it was loaded from, is an error: the kernel would lose or
   misplace its results.
2. **jammed copies**: the jammed loop steps by 6 and its body holds six
   copies of each statement, at `ii`, `ii + 1`, ... `ii + 5`.  Each copy must
   be the first one shifted; the first is kept and the loop steps by 1 over
   the rows the blocks covered (`ceildiv` of the block starts).
3. **tails**: a register block runs only where a whole block fits, and a
   sibling loop right after it runs the rest, one row at a time.  The two
   must compute the same (up to their bounds) and cover the whole range
   together, without overlap -- checked by enumerating both loops' rows at a
   few sample sizes -- and become one loop.

What is left is a plain tiled nest `raise-loop` reads as usual.  The jam
factors are returned as `unroll_jam` directives.
"""

from __future__ import annotations

import itertools

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap

from irkit.affine.linear import Div, Lin, floordiv_atom
from irkit.dialects import loop as lp
from irkit.raising.linear import affine_map_of, has_floordiv, map_results
from irkit.raising.loop_reader import RaiseError
from irkit.raising.recovered import Found, Rebuilt


def unjam(kernel: func.FuncOp) -> list[dict]:
    """Undo register tiles, jammed copies and block tails in place; returns unroll_jam directives."""
    return [f.directive for f in find_jams(kernel, Rebuilt())]


def find_jams(kernel: func.FuncOp, rebuilt: Rebuilt) -> list[Found]:
    """`unjam`, with each directive's loop; every loop it replaces is recorded in `rebuilt`."""
    for local in [op for op in kernel.walk() if isinstance(op, lp.LocalOp)]:
        _untile(local)
    found: list[Found] = []
    for loop in [op for op in kernel.walk() if isinstance(op, lp.ForOp)]:
        rerolled = _reroll(loop, rebuilt)
        if rerolled is not None:
            new, factor = rerolled
            found.append(Found({"kind": "unroll_jam", "loop": new.loop_name.data, "factor": factor}, new))
    _merge_tails(kernel, rebuilt)
    return rebuilt.update(found)


# ---- helpers ------------------------------------------------------------------------


def _forms(amap, operands) -> list[Lin]:
    out = map_results(amap, list(operands))
    if any(x is None for x in out):
        raise RaiseError("cannot raise an access at a non-affine index")
    return out  # type: ignore[return-value]


def _subst(form: Lin, var: SSAValue, by: Lin) -> Lin:
    k = form.terms.get(var, 0)
    if not k:
        return form
    return form - Lin({var: k}) + by.scale(k)


def _map_of(forms: list[Lin]) -> tuple[AffineMap, list[SSAValue]]:
    if has_floordiv(forms):
        raise RaiseError("cannot raise an access whose index keeps a floordiv")
    return affine_map_of(forms)


def _erase_store(st: lp.StoreOp) -> None:
    """Erase a store, the load feeding it when nothing else reads it, and loops left empty."""
    value = st.value.owner
    parent = st.parent_op()
    st.detach()
    st.erase()
    if isinstance(value, lp.LoadOp) and not value.results[0].uses:
        value.detach()
        value.erase()
    while isinstance(parent, lp.ForOp) and not list(parent.body.block.ops):
        up = parent.parent_op()
        parent.detach()
        parent.erase()
        parent = up


def _erase_dead(block: Block) -> None:
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if isinstance(op, lp.LoadOp | arith.ConstantOp) or (op.dialect_name() in ("arith", "math") and op.results):
                if all(not r.uses for r in op.results):
                    op.detach()
                    op.erase()
                    changed = True


# ---- 1. register tiles ------------------------------------------------------------------


def _untile(local: lp.LocalOp) -> None:
    tile = local.results[0]
    name = local.tensor_name.data
    stores = [u.operation for u in tile.uses if isinstance(u.operation, lp.StoreOp) and u.operation.memref is tile]
    loads = [u.operation for u in tile.uses if isinstance(u.operation, lp.LoadOp)]
    copy_in = [s for s in stores if isinstance(s.value.owner, lp.LoadOp) and s.value.owner.memref is not tile]
    copy_out = [
        u.operation
        for ld in loads
        for u in ld.results[0].uses
        if isinstance(u.operation, lp.StoreOp) and u.operation.memref is not tile and u.operation.value is ld.results[0]
    ]
    if len(copy_in) != 1:
        raise RaiseError(f"cannot raise register tile '{name}': it is not loaded from a tensor before use", local)
    if len(copy_out) != 1:
        raise RaiseError(
            f"register tile '{name}' is never stored back to a tensor: the kernel loses what it computes", local
        )
    cin, cout = copy_in[0], copy_out[0]
    source = cin.value.owner
    assert isinstance(source, lp.LoadOp)
    tensor = source.memref
    view = _view(cin, source, local, name)

    element = view
    out_index = _forms(cout.map.data, cout.indices)
    back = _forms(cout.value.owner.map.data, cout.value.owner.indices)  # type: ignore[union-attr]
    if cout.memref is not tensor or element(back) != out_index:
        raise RaiseError(f"register tile '{name}' is stored back elsewhere than it was loaded from", cout)
    for op in list(tile.uses):
        access = op.operation
        if access in (cin, cout.value.owner):
            continue
        index = _forms(access.map.data, access.indices)  # type: ignore[attr-defined]
        amap, operands = _map_of(element(index))
        if isinstance(access, lp.LoadOp):
            new: Operation = lp.LoadOp(tensor, amap, operands)
            access.parent_block().insert_op_before(new, access)  # type: ignore[union-attr]
            access.results[0].replace_all_uses_with(new.results[0])
        else:
            assert isinstance(access, lp.StoreOp)
            new = lp.StoreOp(access.value, tensor, amap, operands)
            access.parent_block().insert_op_before(new, access)  # type: ignore[union-attr]
        new.location = access.location
        access.detach()
        access.erase()
    for copy in (cin, cout):
        _erase_store(copy)
    left = [u.operation for u in tile.uses]
    if left:
        raise RaiseError(f"register tile '{name}' is used in a way raising cannot follow ({left[0].name})", left[0])
    local.detach()
    local.erase()


def _view(cin: lp.StoreOp, source: lp.LoadOp, local: lp.LocalOp, name: str):
    """The tensor element a tile element holds, from the copy-in `tile[l(w)] = X[x(w)]`.

    `w` are the loops of the copy-in nest (inside the tile's block; none for a one-element
    tile, the accumulator of a reduction into a 1-D output).  Each has its own index of the
    tile: `w + r` (`jv - jr`, `ji - joi`), or `(w - lower(w)) floordiv step` for a loop that
    steps over blocks (`(joi - joo) floordiv 2`).  Inverting them in nesting order gives the
    `w` an access's index stands for, hence the element of `X`; any other index of the
    copy-in is a constant (a dimension of extent 1), which every access must repeat."""
    l_in = _forms(cin.map.data, cin.indices)
    x_in = _forms(source.map.data, source.indices)
    around = set(lp.enclosing_loops(local))
    nest = [f for f in lp.enclosing_loops(cin) if f not in around]
    along: list[tuple[SSAValue, int, str, Lin]] = []  # (w, tile dimension, kind, rest or lower)
    for loop in nest:
        w = loop.induction_var
        found = _tile_dim(l_in, loop)
        if found is None:
            raise RaiseError(f"cannot raise register tile '{name}': its copy-in is not along its loop", cin)
        along.append((w, *found))
    taken = {d for _, d, _, _ in along}
    fixed = {d: form for d, form in enumerate(l_in) if d not in taken}
    if any(form.terms for form in fixed.values()):
        raise RaiseError(f"cannot raise register tile '{name}': its copy-in is not along its loop", cin)

    def view(index: list[Lin]) -> list[Lin]:
        if len(index) != len(l_in) or any(index[d] != form for d, form in fixed.items()):
            raise RaiseError(f"register tile '{name}' is accessed at an element its copy-in does not fill", cin)
        env: list[tuple[SSAValue, Lin]] = []
        for w, d, kind, form in along:
            known = _subst_all(form, env)
            by = index[d] - known if kind == "unit" else known + index[d].scale(_step(w))
            env.append((w, _exact_blocks(by)))
        return [_exact_blocks(_subst_all(x, env)) for x in x_in]

    return view


def _tile_dim(l_in: list[Lin], loop: lp.ForOp) -> tuple[int, str, Lin] | None:
    """The tile dimension the copy-in loop `loop` walks: ("unit", rest) for an index `w + rest`,
    ("block", lower) for `(w - lower) floordiv step`; None if no index is either."""
    w = loop.induction_var
    lower = _forms(loop.lower.data, loop.lower_operands)
    for d, form in enumerate(l_in):
        if form.terms.get(w) == 1 and not any(isinstance(k, Div) for k in form.terms):
            return d, "unit", form - Lin({w: 1})
        if len(form.terms) != 1 or form.const or len(lower) != 1:
            continue
        ((key, coeff),) = form.terms.items()
        if coeff == 1 and isinstance(key, Div) and key.kind == "floordiv" and key.by == loop.step_value:
            if key.arg == Lin({w: 1}) - lower[0]:
                return d, "block", lower[0]
    return None


def _subst_all(form: Lin, env: list[tuple[SSAValue, Lin]]) -> Lin:
    for var, by in env:
        form = _subst(form, var, by)
    return form


def _step(var: SSAValue) -> int:
    owner = var.owner
    loop = owner.parent_op() if isinstance(owner, Block) else None
    return loop.step_value if isinstance(loop, lp.ForOp) else 1


def _exact_blocks(form: Lin) -> Lin:
    """`c * floor((v - lower(v)) / q)` is `(c / q) * (v - lower(v))` when loop `v` steps by a
    multiple of `q` from `lower(v)` and `q` divides `c`: the block an access's loop is in."""
    for key, c in list(form.terms.items()):
        if not isinstance(key, Div) or key.kind != "floordiv" or c % key.by:
            continue
        for v in set(key.arg.terms):
            owner = v.owner if not isinstance(v, Div) else None
            loop = owner.parent_op() if isinstance(owner, Block) else None
            if not isinstance(loop, lp.ForOp) or loop.induction_var is not v or loop.step_value % key.by:
                continue
            lower = _forms(loop.lower.data, loop.lower_operands)
            if len(lower) == 1 and key.arg == Lin({v: 1}) - lower[0]:
                form = form - Lin({key: c}) + key.arg.scale(c // key.by)
                break
    return form


# ---- 2. jammed copies -------------------------------------------------------------------


def _reroll(loop: lp.ForOp, rebuilt: Rebuilt) -> tuple[lp.ForOp, int] | None:
    """If `loop` steps by U and its body holds U shifted copies of its stores, keep one, step by 1
    (the loop is rebuilt: the new one and U are returned)."""
    step = loop.step_value
    v = loop.induction_var
    if step == 1:
        return None
    stores = [op for op in loop.walk() if isinstance(op, lp.StoreOp)]
    uses = [st for st in stores if any(v in f.terms for f in _forms(st.map.data, st.indices))]
    if not uses:  # a jammed reduction loop: the copies accumulate into one element, reading v + r
        uses = [st for st in stores if _accumulates(st) and _read_shift(st, v) is not None]
    if not uses:
        return None  # a tile loop: its variable only bounds inner loops
    groups: dict[str, list[tuple[int, lp.StoreOp]]] = {}
    for st in uses:
        shift = _shift(st, v)
        groups.setdefault(_signature(st, v, shift), []).append((shift, st))
    if all(len(members) == 1 for members in groups.values()):
        return None  # no copies: a tile loop whose start offsets a tile-sized temporary
    for members in groups.values():
        first = min(s for s, _ in members)  # copy 0 may read v + c itself (a stencil's x + 1)
        shifts = sorted(s - first for s, _ in members)
        if shifts != list(range(step)):
            raise RaiseError(
                f"loop '{loop.loop_name.data}' steps by {step} but its body holds {len(shifts)} copies of a "
                f"statement (at offsets {shifts}): a jammed copy is missing or changed",
                loop,
            )
    for members in groups.values():
        first = min(s for s, _ in members)
        for shift, st in members:
            if shift != first:
                block = st.parent_block()
                st.detach()
                st.erase()
                if block is not None:
                    _erase_dead(block)
    lower = _forms(loop.lower.data, loop.lower_operands)
    upper = _forms(loop.upper.data, loop.upper_operands)
    if len(lower) != 1:
        raise RaiseError(f"cannot raise jammed loop '{loop.loop_name.data}': its lower bound is a maximum", loop)
    lb = lower[0]
    new_upper = [lb + _ceil_steps(u - lb, step) for u in upper]  # the rows the blocks covered
    new = _set_bounds(loop, lower, new_upper, step=1)
    rebuilt.record(loop, new)
    return new, step


def _ceil_steps(width: Lin, step: int) -> Lin:
    """`step * ceildiv(width, step)` as a linear form with a floordiv atom."""
    return floordiv_atom(width + Lin({}, step - 1), step).scale(step)


def _shift(st: lp.StoreOp, v: SSAValue) -> int:
    """The constant offset of the first index that uses `v`: the stored one, else the first read
    of the value (a jammed reduction's copy `r` reads `A[i, k + r]`); 0 for the first copy."""
    for f in _forms(st.map.data, st.indices):
        if v in f.terms:
            return f.const
    read = _read_shift(st, v)
    return read if read is not None else 0


def _read_shift(st: lp.StoreOp, v: SSAValue) -> int | None:
    """The constant of the first index that uses `v` among the reads of the stored value, in
    operand order (the same order in every copy), or None when no read uses `v`."""
    seen: set[SSAValue] = set()

    def visit(x: SSAValue) -> int | None:
        if x in seen:
            return None
        seen.add(x)
        owner = x.owner
        if isinstance(owner, lp.LoadOp):
            for f in _forms(owner.map.data, owner.indices):
                if v in f.terms:
                    return f.const
            return None
        if not isinstance(owner, Operation):
            return None
        for operand in owner.operands:
            got = visit(operand)
            if got is not None:
                return got
        return None

    return visit(st.value)


def _accumulates(st: lp.StoreOp) -> bool:
    """Is the store `X[f] = X[f] op e` with an associative `op` (what jamming a reduction leaves)?"""
    from irkit.raising.loop_reader import COMBINERS

    value = st.value.owner
    if not isinstance(value, Operation) or value.name not in COMBINERS:
        return False
    index = _forms(st.map.data, st.indices)
    for operand in value.operands:
        ld = operand.owner
        if isinstance(ld, lp.LoadOp) and ld.memref is st.memref and _forms(ld.map.data, ld.indices) == index:
            return True
    return False


def _signature(st: lp.StoreOp, v: SSAValue, shift: int) -> str:
    """The store's value tree, with `v + shift` read as `v`: equal for shifted copies."""
    memo: dict[SSAValue, str] = {}

    def index_text(forms: list[Lin]) -> str:
        parts = []
        for f in forms:
            if v in f.terms:
                f = f - Lin({}, shift * 1)  # the copy's offset
            parts.append(repr(sorted((id(k), c) for k, c in f.terms.items())) + f"+{f.const}")
        return ";".join(parts)

    def text(x: SSAValue) -> str:
        if x in memo:
            return memo[x]
        owner = x.owner
        offset = _offset_from(x, v)
        if offset is not None:  # the copy's own index as a value (`select(i == j, ...)`), `v + shift` in it
            out = f"iv{offset - shift:+d}"
        elif isinstance(owner, lp.LoadOp):
            out = f"load {id(owner.memref)}[{index_text(_forms(owner.map.data, owner.indices))}]"
        elif isinstance(owner, Operation):
            props = ",".join(f"{k}={val}" for k, val in sorted(owner.properties.items()))
            out = f"{owner.name}<{props}>(" + ",".join(_operand_order(owner, [text(o) for o in owner.operands])) + ")"
        else:
            out = f"arg{id(x)}"
        memo[x] = out
        return out

    return f"store {id(st.memref)}[{index_text(_forms(st.map.data, st.indices))}] = {text(st.value)}"


def _offset_from(x: SSAValue, v: SSAValue) -> int | None:
    """`c` when `x` is `v + c` (`v` itself, or `arith.addi` of `v` and a constant), else None."""
    if x is v:
        return 0
    owner = x.owner
    if not isinstance(owner, arith.AddiOp):
        return None
    for a, b in (owner.operands, reversed(owner.operands)):
        if a is v and isinstance(b.owner, arith.ConstantOp) and isinstance(b.owner.value, IntegerAttr):
            return b.owner.value.value.data
    return None


def _set_bounds(loop: lp.ForOp, lower: list[Lin], upper: list[Lin], step: int | None = None) -> lp.ForOp:
    """A copy of `loop` with new bounds (and step), its body moved over; the old loop is erased."""
    lo_map, lo_ops = affine_map_of(lower)
    up_map, up_ops = affine_map_of(upper)
    new = lp.ForOp(lo_map, lo_ops, up_map, up_ops, step or loop.step_value, loop.loop_name.data, Region())
    for key, value in loop.properties.items():
        if key not in ("lower", "upper", "step", "operandSegmentSizes"):
            new.properties[key] = value
    loop.body.move_blocks(new.body)
    new.location = loop.location
    block = loop.parent_block()
    assert block is not None
    block.insert_op_before(new, loop)
    loop.detach()
    loop.erase()
    return new


# ---- 3. tails ---------------------------------------------------------------------------


def _merge_tails(kernel: func.FuncOp, rebuilt: Rebuilt) -> None:
    """Merge each loop with the siblings right after it that run its remainder (innermost first).

    A block whose bound is a minimum of several (`min(io + 6, M - 2)` of a tile of 8 jammed by
    3) has a remainder per bound, so the tail may be several loops; they are merged together."""
    changed = True
    while changed:
        changed = False
        loops = [op for op in kernel.walk() if isinstance(op, lp.ForOp)]
        for loop in reversed(loops):
            run = _tail_run(loop, kernel)
            merge = next(((run[:k], u) for k in range(len(run), 0, -1) for u in run[:k]
                          if _covers(loop, run[:k], u, kernel)), None)  # fmt: skip
            if merge is None:
                continue
            _merge(loop, *merge, rebuilt)
            changed = True
            break


def _tail_run(loop: lp.ForOp, kernel: func.FuncOp) -> list[lp.ForOp]:
    """The sibling loops right after `loop` with its step and the same computation."""
    run: list[lp.ForOp] = []
    tail = loop.next_op
    while isinstance(tail, lp.ForOp) and tail.step_value == loop.step_value:
        differ: list[tuple[lp.ForOp, lp.ForOp]] = []
        if not _same_body(loop, tail, differ):
            # The same computation, but a loop inside runs another range: a remainder whose block
            # was changed (say which), unless `tail` does not continue `loop`'s range at all (two
            # parts of a piecewise tensor computing alike, `B = A where i == 0` and `where i == N - 1`).
            if differ and _covers(loop, [*run, tail], tail, kernel):
                mine, theirs = differ[0]
                raise RaiseError(
                    f"loop '{mine.loop_name.data}' inside '{loop.loop_name.data}' runs "
                    f"{_range_text(mine)}, but in its remainder '{tail.loop_name.data}' {_range_text(theirs)}: "
                    "a bound of the block was changed",
                    mine,
                )
            break
        run.append(tail)
        tail = tail.next_op
    return run


def _range_text(loop: lp.ForOp) -> str:
    from irkit.raising.loop_reader import DESIGN_TEXT

    names = _names_around(loop)
    lower = [DESIGN_TEXT.lin_text(f, names) for f in _forms(loop.lower.data, loop.lower_operands)]
    upper = [DESIGN_TEXT.lin_text(f, names) for f in _forms(loop.upper.data, loop.upper_operands)]
    low = lower[0] if len(lower) == 1 else f"max({', '.join(lower)})"
    high = upper[0] if len(upper) == 1 else f"min({', '.join(upper)})"
    return f"from {low} to {high}"


def _names_around(loop: lp.ForOp) -> dict[SSAValue, str]:
    """Names of the kernel's sizes and of the loop variables around `loop`, for text."""
    from irkit.kernel_abi import kernel_args
    from irkit.passes.generalize import kernel_of

    names: dict[SSAValue, str] = {}
    for outer in lp.enclosing_loops(loop):
        names[outer.induction_var] = outer.loop_name.data
    kernel = kernel_of(loop)
    if kernel is not None:
        names.update({s.value: s.name for s in kernel_args(kernel)[0]})
    return names


def _same_body(a: lp.ForOp, b: lp.ForOp, differ: list | None = None) -> bool:
    """Do the two loops compute the same, with their variables matched (inner bounds written
    differently where they run the same range: `_same_bounds`)?
    Compared by dataflow, not by text: the same loops and stores in the same order, each store's
    value the same tree of operations (commutative operands either way, loads anywhere between
    the same stores)."""
    mapping: dict[SSAValue, SSAValue] = {a.induction_var: b.induction_var}
    return _same_block(a.body.block, b.body.block, mapping, differ)


def _same_block(x: Block, y: Block, mapping: dict[SSAValue, SSAValue], differ: list | None = None) -> bool:
    """`_same_body` of two blocks; a pair of loops that differ only in their range goes to `differ`."""
    xs, ys = _effects(x), _effects(y)
    if len(xs) != len(ys):
        return False
    for p, q in zip(xs, ys):
        if p.name != q.name:
            return False
        if isinstance(p, lp.ForOp):
            assert isinstance(q, lp.ForOp)
            if p.step_value != q.step_value or (p.vector is None) != (q.vector is None):
                return False
            bounded = _same_bounds(p, q, mapping)
            mapping[p.induction_var] = q.induction_var
            if not _same_block(p.body.block, q.body.block, mapping, differ):
                return False
            if not bounded:
                if differ is not None:
                    differ.append((p, q))
                return False
            continue
        if isinstance(p, lp.StoreOp):
            assert isinstance(q, lp.StoreOp)
            fp = [_rename(f, mapping) for f in _forms(p.map.data, p.indices)]
            if fp != _forms(q.map.data, q.indices) or mapping.get(p.memref, p.memref) is not q.memref:
                return False
            if _tree(p.value, xs, mapping) != _tree(q.value, ys, {}):
                return False
            continue
        if dict(p.properties) != dict(q.properties) or p.attributes != q.attributes:
            return False
        if any(mapping.get(o, o) is not r for o, r in zip(p.operands, q.operands)):
            return False
        for o, r in zip(p.results, q.results):
            mapping[o] = r
    return True


def _same_bounds(p: lp.ForOp, q: lp.ForOp, mapping: dict[SSAValue, SSAValue]) -> bool:
    """Do `p` (in the block) and `q` (in its remainder) run the same range wherever `p` runs?
    Their bounds may be written differently -- a block's inner loop made exact for whole blocks,
    `jv < jr + 16` where the remainder has `jv < min(jr + 16, N)` -- but must be equal at every
    iteration of the loops around `p` (`irkit.checks.bounds`), or a loop of the block that lost a
    bound would be merged away with the remainder's."""
    from irkit.affine.bounds import lower_terms, upper_terms
    from irkit.affine.linear import NotAffine
    from irkit.checks.bounds import BoundsProver
    from irkit.passes.generalize import kernel_of

    inverse = {theirs: mine for mine, theirs in mapping.items()}
    pairs = ((lower_terms(p), lower_terms(q), True), (upper_terms(p), upper_terms(q), False))
    prover: BoundsProver | None = None
    for mine, theirs, low in pairs:
        theirs = [_rename(t, inverse) for t in theirs]
        if set(mine) == set(theirs):
            continue
        if prover is None:
            kernel = kernel_of(p)
            if kernel is None:
                return False
            prover = BoundsProver(kernel)
        try:  # the max (lower) or min (upper) of each side no larger than the other's
            if not (prover.form_le(mine, theirs, low) and prover.form_le(theirs, mine, low)):
                return False
        except NotAffine:
            return False
    return True


def _effects(block: Block) -> list[Operation]:
    """The ops of `block` whose order matters: loops, stores, and ops that allocate or free."""
    return [op for op in block.ops if isinstance(op, lp.ForOp | lp.StoreOp | lp.LocalOp | lp.AllocOp | lp.FreeOp)]


def _tree(value: SSAValue, effects: list[Operation], mapping: dict[SSAValue, SSAValue]) -> str:
    """`value` as a tree of operations down to loads and values from outside the block (renamed by
    `mapping`); a load with the stores of its buffer before it in the block (`effects`), so that a
    load moved past a store of what it reads is a different tree."""

    def name(v: SSAValue) -> str:
        return str(id(mapping.get(v, v)))

    def text(v: SSAValue) -> str:
        owner = v.owner
        if isinstance(owner, lp.LoadOp):
            forms = [_rename(f, mapping) for f in _forms(owner.map.data, owner.indices)]
            index = ";".join(repr(sorted((id(k), c) for k, c in f.terms.items())) + f"+{f.const}" for f in forms)
            return f"load {name(owner.memref)}[{index}]@{_epoch(owner, effects)}"
        if isinstance(owner, Operation) and owner.parent_block() is not None and not isinstance(owner, lp.ForOp):
            if mapping.get(v) is not None:
                return name(v)
            props = ",".join(f"{k}={val}" for k, val in sorted(owner.properties.items()))
            return f"{owner.name}<{props}>(" + ",".join(_operand_order(owner, [text(o) for o in owner.operands])) + ")"
        return name(v)

    return text(value)


def _epoch(load: lp.LoadOp, effects: list[Operation]) -> int:
    """How many of `effects` before `load` in its block may write the buffer it reads."""
    block = load.parent_block()
    if block is None:
        return 0
    at = block.get_operation_index(load)
    count = 0
    for op in effects:
        if op.parent_block() is not block or block.get_operation_index(op) > at:
            continue
        writes = [op] if isinstance(op, lp.StoreOp) else [s for s in op.walk() if isinstance(s, lp.StoreOp)]
        if any(w.memref is load.memref for w in writes):
            count += 1
    return count


# Operations whose operands may come in either order (xDSL marks only the integer ones).
COMMUTATIVE = frozenset(
    {"arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf"}
)


def _operand_order(op: Operation, texts: list[str]) -> list[str]:
    """The operand texts of `op`, sorted where its operands commute."""
    from xdsl.traits import Commutative

    if len(texts) == 2 and (op.name in COMMUTATIVE or op.has_trait(Commutative)):
        return sorted(texts)
    return texts


def _rename(form: Lin, mapping: dict[SSAValue, SSAValue]) -> Lin:
    out: dict = {}
    for k, c in form.terms.items():
        key = mapping.get(k, k) if not isinstance(k, Div) else Div(k.kind, _rename(k.arg, mapping), k.by)
        out[key] = out.get(key, 0) + c
    return Lin(out, form.const)


SAMPLE_SIZES = (1, 2, 5, 7, 13, 31, 97)


def _covers(main: lp.ForOp, tails: list[lp.ForOp], last: lp.ForOp, kernel: func.FuncOp) -> bool:
    """Do `main` and `tails` together run exactly the range [main's lower, `last`'s upper), each
    value once?  Checked by enumeration at sample sizes, for every value of the loops around them."""
    from irkit.kernel_abi import kernel_args

    sizes = [s.value for s in kernel_args(kernel)[0]]
    outer = lp.enclosing_loops(main)
    bounds = _Bounds()
    lower = _forms(main.lower.data, main.lower_operands)
    upper = _forms(last.upper.data, last.upper_operands)
    for n in SAMPLE_SIZES:
        env0 = {s: n for s in sizes}
        for count, env in enumerate(_enumerate(outer, env0, bounds)):
            ran = list(bounds.range(main, env))
            for tail in tails:
                ran += bounds.range(tail, env)
            lo = max(f.evaluate(env) for f in lower)
            hi = min(f.evaluate(env) for f in upper)
            if sorted(ran) != list(range(lo, hi, main.step_value)):  # a value twice makes it longer
                return False
            if count > 2000:
                break
    return True


class _Bounds:
    """Loop ranges at given values of the variables, each loop's bound forms read once."""

    def __init__(self) -> None:
        self.forms: dict[lp.ForOp, tuple[list[Lin], list[Lin]]] = {}

    def range(self, loop: lp.ForOp, env: dict) -> range:
        got = self.forms.get(loop)
        if got is None:
            got = (_forms(loop.lower.data, loop.lower_operands), _forms(loop.upper.data, loop.upper_operands))
            self.forms[loop] = got
        lo = max(f.evaluate(env) for f in got[0])
        hi = min(f.evaluate(env) for f in got[1])
        return range(lo, hi, loop.step_value)


def _enumerate(loops: list[lp.ForOp], env: dict, bounds: _Bounds):
    if not loops:
        yield env
        return
    first, rest = loops[0], loops[1:]
    for value in itertools.islice(bounds.range(first, env), 64):
        yield from _enumerate(rest, {**env, first.induction_var: value}, bounds)


def _merge(main: lp.ForOp, tails: list[lp.ForOp], last: lp.ForOp, rebuilt: Rebuilt) -> None:
    """One loop: main's lower bound, `last`'s upper bound and body (a remainder's bounds are
    general: main's inner loops may have been made exact for whole blocks)."""
    lower = _forms(main.lower.data, main.lower_operands)
    upper = _forms(last.upper.data, last.upper_operands)
    for key in ("loop_name", "origin", "parallel", "vector", "unroll"):
        if key in main.properties:
            last.properties[key] = main.properties[key]
        elif key in last.properties:
            del last.properties[key]
    merged = _set_bounds(last, lower, upper)
    for old in (main, *tails):
        rebuilt.record(old, merged)
        if old is not last:
            old.detach()
            old.erase()
