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
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap

from irkit.dialects import loop as lp
from irkit.raising.linear import Atom, Linear, affine_map_of, evaluate, has_floordiv, map_results
from irkit.raising.loop_reader import RaiseError


def unjam(kernel: func.FuncOp) -> list[dict]:
    """Undo register tiles, jammed copies and block tails in place; returns unroll_jam directives."""
    for local in [op for op in kernel.walk() if isinstance(op, lp.LocalOp)]:
        _untile(local)
    directives: list[dict] = []
    for loop in [op for op in kernel.walk() if isinstance(op, lp.ForOp)]:
        factor = _reroll(loop)
        if factor:
            directives.append({"kind": "unroll_jam", "loop": loop.loop_name.data, "factor": factor})
    _merge_tails(kernel)
    return directives


# ---- helpers ------------------------------------------------------------------------


def _forms(amap, operands) -> list[Linear]:
    out = map_results(amap, list(operands))
    if any(x is None for x in out):
        raise RaiseError("cannot raise an access at a non-affine index")
    return out  # type: ignore[return-value]


def _subst(form: Linear, var: SSAValue, by: Linear) -> Linear:
    k = form.coeffs.get(var, 0)
    if not k:
        return form
    return form - Linear({var: k}) + by.scale(k)


def _map_of(forms: list[Linear]) -> tuple[AffineMap, list[SSAValue]]:
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
    view = _view(cin, source, name)

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


def _view(cin: lp.StoreOp, source: lp.LoadOp, name: str):
    """The tensor element a tile element holds, from the copy-in `tile[l(w)] = X[x(w)]`."""
    (l_in,) = _forms(cin.map.data, cin.indices) if len(cin.indices) else [Linear()]
    x_in = _forms(source.map.data, source.indices)
    loop = cin.parent_op()
    if not isinstance(loop, lp.ForOp) or l_in.coeffs.get(loop.induction_var) != 1:
        raise RaiseError(f"cannot raise register tile '{name}': its copy-in is not along its loop", cin)
    w = loop.induction_var
    rest = l_in - Linear({w: 1})

    def view(index: list[Linear]) -> list[Linear]:
        (elem,) = index
        by = elem - rest  # w = elem - rest
        return [_subst(x, w, by) for x in x_in]

    return view


# ---- 2. jammed copies -------------------------------------------------------------------


def _reroll(loop: lp.ForOp) -> int | None:
    """If `loop` steps by U and its body holds U shifted copies of its stores, keep one, step by 1."""
    step = loop.step_value
    v = loop.induction_var
    if step == 1:
        return None
    stores = [op for op in loop.walk() if isinstance(op, lp.StoreOp)]
    uses = [st for st in stores if any(v in f.coeffs for f in _forms(st.map.data, st.indices))]
    if not uses:
        return None  # a tile loop: its variable only bounds inner loops
    groups: dict[str, list[tuple[int, lp.StoreOp]]] = {}
    for st in uses:
        shift = _shift(st, v)
        groups.setdefault(_signature(st, v, shift), []).append((shift, st))
    if all(len(members) == 1 for members in groups.values()):
        return None  # no copies: a tile loop whose start offsets a tile-sized temporary
    for members in groups.values():
        shifts = sorted(s for s, _ in members)
        if shifts != list(range(step)):
            raise RaiseError(
                f"loop '{loop.loop_name.data}' steps by {step} but its body holds {len(shifts)} copies of a "
                f"statement (at offsets {shifts}): a jammed copy is missing or changed",
                loop,
            )
    for members in groups.values():
        for shift, st in members:
            if shift:
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
    _set_bounds(loop, lower, new_upper, step=1)
    return step


def _ceil_steps(width: Linear, step: int) -> Linear:
    """`step * ceildiv(width, step)` as a linear form with a floordiv atom."""
    from irkit.raising.linear import floordiv

    return floordiv(width + Linear({}, step - 1), step).scale(step)


def _shift(st: lp.StoreOp, v: SSAValue) -> int:
    """The constant offset of the first index that uses `v` (0 for the first copy)."""
    for f in _forms(st.map.data, st.indices):
        if v in f.coeffs:
            return f.const
    return 0


def _signature(st: lp.StoreOp, v: SSAValue, shift: int) -> str:
    """The store's value tree, with `v + shift` read as `v`: equal for shifted copies."""
    memo: dict[SSAValue, str] = {}

    def index_text(forms: list[Linear]) -> str:
        parts = []
        for f in forms:
            if v in f.coeffs:
                f = f - Linear({}, shift * 1)  # the copy's offset
            parts.append(repr(sorted((id(k), c) for k, c in f.coeffs.items())) + f"+{f.const}")
        return ";".join(parts)

    def text(x: SSAValue) -> str:
        if x in memo:
            return memo[x]
        owner = x.owner
        if isinstance(owner, lp.LoadOp):
            out = f"load {id(owner.memref)}[{index_text(_forms(owner.map.data, owner.indices))}]"
        elif isinstance(owner, Operation):
            props = ",".join(f"{k}={val}" for k, val in sorted(owner.properties.items()))
            out = f"{owner.name}<{props}>(" + ",".join(text(o) for o in owner.operands) + ")"
        else:
            out = f"arg{id(x)}"
        memo[x] = out
        return out

    return f"store {id(st.memref)}[{index_text(_forms(st.map.data, st.indices))}] = {text(st.value)}"


def _set_bounds(loop: lp.ForOp, lower: list[Linear], upper: list[Linear], step: int | None = None) -> lp.ForOp:
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


def _merge_tails(kernel: func.FuncOp) -> None:
    """Merge each loop with the sibling right after it that runs its remainder (innermost first)."""
    changed = True
    while changed:
        changed = False
        loops = [op for op in kernel.walk() if isinstance(op, lp.ForOp)]
        for loop in reversed(loops):
            tail = loop.next_op
            if not isinstance(tail, lp.ForOp) or tail.step_value != loop.step_value:
                continue
            if not _same_body(loop, tail):
                continue
            if not _covers(loop, tail, kernel):
                continue
            _merge(loop, tail)
            changed = True
            break


def _same_body(a: lp.ForOp, b: lp.ForOp) -> bool:
    """Do the two loops compute the same, with their variables matched (inner bounds may differ)?"""
    mapping: dict[SSAValue, SSAValue] = {a.induction_var: b.induction_var}
    return _same_block(a.body.block, b.body.block, mapping)


def _same_block(x: Block, y: Block, mapping: dict[SSAValue, SSAValue]) -> bool:
    xs, ys = list(x.ops), list(y.ops)
    if len(xs) != len(ys):
        return False
    for p, q in zip(xs, ys):
        if p.name != q.name:
            return False
        if isinstance(p, lp.ForOp):
            assert isinstance(q, lp.ForOp)
            if p.step_value != q.step_value or (p.vector is None) != (q.vector is None):
                return False
            mapping[p.induction_var] = q.induction_var
            if not _same_block(p.body.block, q.body.block, mapping):
                return False
            continue
        if isinstance(p, lp.LoadOp | lp.StoreOp):
            fp = [_rename(f, mapping) for f in _forms(p.map.data, p.indices)]
            fq = _forms(q.map.data, q.indices)  # type: ignore[attr-defined]
            if fp != fq or mapping.get(p.memref, p.memref) is not q.memref:  # type: ignore[attr-defined]
                return False
        else:
            if dict(p.properties) != dict(q.properties) or p.attributes != q.attributes:
                return False
        for o, r in zip(p.operands, q.operands):
            if isinstance(p, lp.LoadOp | lp.StoreOp) and o in (p.indices if hasattr(p, "indices") else ()):
                continue
            if mapping.get(o, o) is not r:
                return False
        for o, r in zip(p.results, q.results):
            mapping[o] = r
    return True


def _rename(form: Linear, mapping: dict[SSAValue, SSAValue]) -> Linear:
    out: dict = {}
    for k, c in form.coeffs.items():
        key = mapping.get(k, k) if not isinstance(k, Atom) else Atom(k.kind, _rename(k.inner, mapping), k.q)
        out[key] = out.get(key, 0) + c
    return Linear(out, form.const)


SAMPLE_SIZES = (1, 2, 5, 7, 13, 31, 97)


def _covers(main: lp.ForOp, tail: lp.ForOp, kernel: func.FuncOp) -> bool:
    """Do `main` and `tail` together run exactly the range [main's lower, tail's upper), each value
    once?  Checked by enumeration at sample sizes, for every value of the loops around them."""
    from irkit.kernel_abi import kernel_args

    sizes = [s.value for s in kernel_args(kernel)[0]]
    outer = lp.enclosing_loops(main)
    bounds = _Bounds()
    lower = _forms(main.lower.data, main.lower_operands)
    upper = _forms(tail.upper.data, tail.upper_operands)
    for n in SAMPLE_SIZES:
        env0 = {s: n for s in sizes}
        for count, env in enumerate(_enumerate(outer, env0, bounds)):
            a = list(bounds.range(main, env))
            b = list(bounds.range(tail, env))
            lo = max(evaluate(f, env) for f in lower)
            hi = min(evaluate(f, env) for f in upper)
            if sorted(a + b) != list(range(lo, hi, main.step_value)) or len(set(a) & set(b)):
                return False
            if count > 2000:
                break
    return True


class _Bounds:
    """Loop ranges at given values of the variables, each loop's bound forms read once."""

    def __init__(self) -> None:
        self.forms: dict[lp.ForOp, tuple[list[Linear], list[Linear]]] = {}

    def range(self, loop: lp.ForOp, env: dict) -> range:
        got = self.forms.get(loop)
        if got is None:
            got = (_forms(loop.lower.data, loop.lower_operands), _forms(loop.upper.data, loop.upper_operands))
            self.forms[loop] = got
        lo = max(evaluate(f, env) for f in got[0])
        hi = min(evaluate(f, env) for f in got[1])
        return range(lo, hi, loop.step_value)


def _enumerate(loops: list[lp.ForOp], env: dict, bounds: _Bounds):
    if not loops:
        yield env
        return
    first, rest = loops[0], loops[1:]
    for value in itertools.islice(bounds.range(first, env), 64):
        yield from _enumerate(rest, {**env, first.induction_var: value}, bounds)


def _merge(main: lp.ForOp, tail: lp.ForOp) -> None:
    """One loop: main's lower bound, tail's upper bound, the tail's body (its bounds are general)."""
    lower = _forms(main.lower.data, main.lower_operands)
    upper = _forms(tail.upper.data, tail.upper_operands)
    for key in ("loop_name", "origin", "parallel", "vector", "unroll"):
        if key in main.properties:
            tail.properties[key] = main.properties[key]
        elif key in tail.properties:
            del tail.properties[key]
    _set_bounds(tail, lower, upper)
    main.detach()
    main.erase()
