"""Undoing `pack`: reads of a packed copy become reads of the tensor it copies.

A *pack* is a temporary written by exactly one store, a plain copy
`P[c0*p0 + c1*p1 + ... ] = X[f(p, outer)]` from a loop nest whose loops
`p_k` start at 0 and run at most `E_k` times, with coefficients that form a
mixed radix (`c_last = 1`, `c_k = c_{k+1} * E_{k+1}`), so the copy is
one-to-one.  A read `P[g]` is resolved by writing `g` as digits of that
radix -- `g = sum c_k d_k` -- and reading `X[f(d, outer)]` instead.

To find the digits, `g` is rewritten over the *offsets* of the loops around
the read (`o_v = v - lower(v)`, and `o_v = s * u_v` for a loop of step
`s`), where the terms of one digit show themselves by their coefficients:
`256*ii + 6*ki - 256*io - 6*ko + 1` (a row of a 6-row register block of
A_pack, `ii` stepping by 6 from `io`) is `1536*u_ii + 6*o_ki + 1`, digits
`(u_ii, o_ki, 1)`, and `A[io + 6*d0 + d2, ko + d1]` is `A[ii + 1, ki]`.  The
tails of register blocks read with `floordiv`: `floor(o / 6)` and
`o - 6*floor(o / 6)` are digits of their own.

Reading structure only (bounds, steps, maps), this changes nothing a
kernel computes; the packing itself is returned as a `pack` directive (the
tensor, and the loop the copy nest sits in) for the schedule comparison.
"""

from __future__ import annotations

from fractions import Fraction

from xdsl.dialects import func
from xdsl.dialects.builtin import AffineMapAttr, StringAttr
from xdsl.ir import Operation, SSAValue

from irkit.affine.linear import Div, Lin, floordiv_atom
from irkit.dialects import loop as lp
from irkit.raising.linear import affine_map_of, has_floordiv, map_results
from irkit.raising.loop_reader import RaiseError
from irkit.raising.recovered import Found

Key = object  # SSAValue, Div, or a tagged tuple ("o" | "u" | "mod", ...)
Poly = dict[Key, Fraction]  # with the constant under the key 1


def unpack(kernel: func.FuncOp) -> list[dict]:
    """Replace every read of a packed copy by a read of its source; returns the pack directives."""
    return [f.directive for f in find_packs(kernel)]


def find_packs(kernel: func.FuncOp) -> list[Found]:
    """`unpack`, with the loop each packed copy was made in (the directive's stage owns it)."""
    found: list[tuple[int, Found]] = []
    for alloc in [op for op in kernel.walk() if isinstance(op, lp.AllocOp)]:
        for directive, where in _unpack_one(alloc, kernel) or []:
            found.append((directive.pop("depth"), Found(directive, where)))
    return [f for _, f in sorted(found, key=lambda pair: pair[0])]  # outermost pack first


def _name_of(buf: SSAValue, kernel: func.FuncOp) -> str:
    from irkit.kernel_abi import kernel_args

    owner = buf.owner
    if isinstance(owner, lp.AllocOp):
        return owner.tensor_name.data
    _, tensors = kernel_args(kernel)
    return next((t.name for t in tensors if t.value is buf), "?")


def _unpack_one(alloc: lp.AllocOp, kernel: func.FuncOp) -> list[tuple[dict, lp.ForOp | None]] | None:
    """Undo one packed buffer: (directive with its depth, the loop the copy is made in) per copy.

    A buffer may have several copies of the same tensor: an `unroll_jam` after the `pack`
    peels a loop around the copy into whole blocks and a remainder, each with its own copy.
    Each read is served by the copy made before it in a block around it (the innermost)."""
    buf = alloc.results[0]
    stores = [u.operation for u in buf.uses if isinstance(u.operation, lp.StoreOp) and u.operation.memref is buf]
    loads = [u.operation for u in buf.uses if isinstance(u.operation, lp.LoadOp)]
    if not stores or not loads or len(buf.type.get_shape()) != 1:  # type: ignore[attr-defined]
        return None
    sources = [st.value.owner for st in stores]
    if not all(isinstance(src, lp.LoadOp) and src.memref is not buf for src in sources):
        return None
    if len({src.memref for src in sources}) != 1:  # type: ignore[union-attr]
        return None
    name = alloc.tensor_name.data
    copies = [_Copy(st, alloc, name) for st in stores]
    reads = {_read(ld) for ld in loads}
    for ld in loads:
        copy = _serving(ld, copies, name)
        _redirect(ld, copy.source_buffer, copy.digits, copy.source, name)
    out: list[tuple[dict, lp.ForOp | None]] = []
    tensor = _name_of(copies[0].source_buffer, kernel)
    for copy in copies:
        where = copy.root.parent_op()
        while where is not None and not isinstance(where, lp.ForOp):
            where = where.parent_op()
        depth = len(lp.enclosing_loops(copy.root))
        copy.root.detach()
        copy.root.erase()
        loop = where if isinstance(where, lp.ForOp) else None
        directive = {"kind": "pack", "tensor": tensor, "loop": loop.loop_name.data if loop else "", "depth": depth}
        (read,) = reads if len(reads) == 1 else (None,)
        if read is not None:  # one of several reads of the tensor: which one (its loads say, `irkit.read`)
            directive["indices"] = [x.strip() for x in read[read.index("[") + 1 : -1].split(",")]
        out.append((directive, loop))
    for use in list(buf.uses):
        if isinstance(use.operation, lp.FreeOp):
            use.operation.detach()
            use.operation.erase()
    alloc.detach()
    alloc.erase()
    return out


def _read(ld: lp.LoadOp) -> str | None:
    """The document's read a load comes from, when its statement reads the tensor more than once."""
    from irkit.passes.lower_tensorop import READ_ATTR

    attr = ld.attributes.get(READ_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


class _Copy:
    """One copy nest of a pack: `P[c0*p0 + ...] = X[f(p)]`, its radix digits and its root loop."""

    def __init__(self, st: lp.StoreOp, alloc: lp.AllocOp, name: str):
        src = st.value.owner
        assert isinstance(src, lp.LoadOp)
        (index,) = map_results(st.map.data, list(st.indices))
        if index is None or index.const != 0:
            raise RaiseError(f"cannot raise pack '{name}': its copy is stored at a non-linear index", st)
        loops = {f.induction_var: f for f in lp.enclosing_loops(st)}
        digits: list[tuple[int, SSAValue, int]] = []  # (coefficient, loop variable, extent)
        for var, coeff in index.terms.items():
            loop = loops.get(var) if isinstance(var, SSAValue) else None
            if loop is None or coeff <= 0:
                raise RaiseError(f"cannot raise pack '{name}': its copy index is not over its own loops", st)
            digits.append((coeff, var, _static_extent(loop)))  # type: ignore[arg-type]
        digits.sort(key=lambda d: -d[0])
        for _, var, extent in digits[1:]:  # the outermost digit may run over a size
            if extent is None:
                loop = loops[var]
                raise RaiseError(
                    f"cannot raise pack '{name}': loop '{loop.loop_name.data}' has no constant extent", loop
                )
        for (c, _, _), (c_next, _, e_next) in zip(digits, digits[1:]):
            if c != c_next * e_next:
                raise RaiseError(f"cannot raise pack '{name}': its copy index is not one-to-one (a mixed radix)", st)
        if digits[-1][0] != 1:
            raise RaiseError(f"cannot raise pack '{name}': its copy index skips elements", st)
        source = map_results(src.map.data, list(src.indices))
        if any(x is None for x in source):
            raise RaiseError(f"cannot raise pack '{name}': it copies from a non-linear index", src)
        self.digits = digits
        self.source: list[Lin] = source  # type: ignore[assignment]
        self.source_buffer: SSAValue = src.memref
        self.root = _copy_nest(st, alloc)


def _serving(ld: lp.LoadOp, copies: list[_Copy], name: str) -> _Copy:
    """The copy a read sees: made earlier in a block around the read, the innermost such."""
    best: tuple[int, _Copy] | None = None
    for copy in copies:
        block = copy.root.parent_block()
        at: Operation | None = ld
        while at is not None and at.parent_block() is not block:
            at = at.parent_op()
        if at is None or block is None or block.get_operation_index(at) <= block.get_operation_index(copy.root):
            continue
        depth = len(lp.enclosing_loops(copy.root))
        if best is None or depth > best[0]:
            best = (depth, copy)
    if best is None:
        raise RaiseError(f"cannot raise a read of pack '{name}': no copy of the pack is made before it", ld)
    return best[1]


def _static_extent(loop: lp.ForOp) -> int | None:
    lower = map_results(loop.lower.data, list(loop.lower_operands))
    upper = map_results(loop.upper.data, list(loop.upper_operands))
    if len(lower) == 1 and lower[0] is not None and lower[0].is_const and lower[0].const != 0:
        start = lower[0].const
        raise RaiseError(
            f"the pack copy's loop '{loop.loop_name.data}' starts at {start}, not 0: "
            + (f"rows [0, {start}) of the block are never copied" if start > 0 else "it copies from before the block"),
            loop,
        )
    if len(lower) != 1 or lower[0] != Lin() or loop.step_value != 1:
        raise RaiseError(
            f"cannot raise a pack copy: loop '{loop.loop_name.data}' does not start at 0 by steps of 1", loop
        )
    consts = [u.const for u in upper if u is not None and not u.terms]
    return min(consts) if consts else None


def _copy_nest(st: lp.StoreOp, alloc: lp.AllocOp) -> Operation:
    """The outermost loop around the copy that holds nothing but the copy."""
    root: Operation = st
    parent = st.parent_op()
    while isinstance(parent, lp.ForOp):
        if any(isinstance(o, lp.StoreOp) and o is not st for o in parent.walk()):
            break
        root = parent
        parent = parent.parent_op()
    if root is st:
        raise RaiseError(f"cannot raise pack '{alloc.tensor_name.data}': its copy is not in a loop nest of its own", st)
    return root


# ---- the digits of a read ------------------------------------------------------------


def _poly(form: Lin) -> Poly:
    out: Poly = {k: Fraction(c) for k, c in form.terms.items()}
    if form.const:
        out[1] = Fraction(form.const)
    return out


def _add(a: Poly, b: Poly, k: Fraction = Fraction(1)) -> Poly:
    out = dict(a)
    for key, c in b.items():
        out[key] = out.get(key, Fraction(0)) + k * c
        if out[key] == 0:
            del out[key]
    return out


class _Offsets:
    """Loop variables as sums of offsets: `v = o_v + lower(v)`, `o_v = step * u_v`."""

    def __init__(self, op: Operation):
        self.loops = {f.induction_var: f for f in lp.enclosing_loops(op)}
        self.memo: dict[SSAValue, Poly] = {}

    def base(self, loop: lp.ForOp) -> Lin:
        lower = [x for x in map_results(loop.lower.data, list(loop.lower_operands)) if x is not None]
        if not lower:
            raise RaiseError(f"cannot raise loop '{loop.loop_name.data}': its lower bound is not linear", loop)
        plain = [x for x in lower if not any(isinstance(k, Div) for k in x.terms)]
        return min(plain or lower, key=lambda x: len(x.terms))

    def of_var(self, v: SSAValue) -> Poly:
        if v in self.memo:
            return self.memo[v]
        loop = self.loops.get(v)
        if loop is None:  # a size, or a loop around the pack's scope: itself
            return {v: Fraction(1)}
        step = loop.step_value
        unit: Poly = {("u", v): Fraction(step)} if step > 1 else {("o", v): Fraction(1)}
        out = _add(unit, self.of(self.base(loop)))
        self.memo[v] = out
        return out

    def of(self, form: Lin) -> Poly:
        out: Poly = {1: Fraction(form.const)} if form.const else {}
        for key, c in form.terms.items():
            if isinstance(key, Div):
                out = _add(out, {("fd", _freeze(self.of(key.arg)), key.by): Fraction(1)}, Fraction(c))
            else:
                out = _add(out, self.of_var(key), Fraction(c))  # type: ignore[arg-type]
        return out

    def back(self, p: Poly) -> Lin:
        """A polynomial over offsets back to a linear form over the loop variables."""
        out: Poly = {}
        for key, c in p.items():
            out = _add(out, self._back_key(key), c)
        coeffs: dict = {}
        const = 0
        for key, c in out.items():
            if c.denominator != 1:
                raise RaiseError("cannot raise a packed read: its index is not integral in the loops")
            if key == 1:
                const = int(c)
            else:
                coeffs[key] = int(c)
        return Lin(coeffs, const)

    def _back_key(self, key: Key) -> Poly:
        if key == 1:
            return {1: Fraction(1)}
        if isinstance(key, tuple) and key[0] in ("o", "u"):
            v = key[1]
            loop = self.loops[v]
            diff = _add({v: Fraction(1)}, _poly(self.base(loop)), Fraction(-1))
            return {k: c / (loop.step_value if key[0] == "u" else 1) for k, c in diff.items()}
        if isinstance(key, tuple) and key[0] == "fd":
            inner = self.back(dict(key[1]))
            return _poly(floordiv_atom(inner, key[2]))
        if isinstance(key, tuple) and key[0] == "mod":
            inner = self.back(dict(key[1]))
            return _poly(inner - floordiv_atom(inner, key[2]).scale(key[2]))
        return {key: Fraction(1)}


def _freeze(p: Poly) -> tuple:
    return tuple(sorted(p.items(), key=lambda kv: repr(kv[0])))


def _split_mods(g: Poly) -> Poly:
    """`a*floor(E/q) + b*E` -> `(a + b*q)*floor(E/q) + b*(E mod q)`: the two digits a tail's
    read combines (`floor` for the block, `mod` for the row in it)."""
    for key in [k for k in g if isinstance(k, tuple) and k[0] == "fd"]:
        inner: Poly = dict(key[1])
        q = key[2]
        ratios = {g.get(k, Fraction(0)) / c for k, c in inner.items() if k != 1}
        if len(ratios) != 1:
            continue
        (b,) = ratios
        if b == 0:
            continue
        g = _add(g, {k: c for k, c in inner.items()}, -b)
        g = _add(g, {key: Fraction(q) * b, ("mod", key[1], q): b})
    return g


def _digits(g: Poly, radix: list[int]) -> list[Poly]:
    """`g` as `sum radix[k] * d_k`: each term to the largest radix dividing its coefficient."""
    out: list[Poly] = [{} for _ in radix]
    const = g.get(1, Fraction(0))
    for key, c in g.items():
        if key == 1:
            continue
        for k, r in enumerate(radix):
            if c % r == 0:
                out[k] = _add(out[k], {key: c / r})
                break
        else:
            raise RaiseError("cannot raise a packed read: a term of its index fits no digit")
    for k, r in enumerate(radix):
        whole = Fraction(const // r)
        if whole:
            out[k] = _add(out[k], {1: whole})
        const -= whole * r
    return out


def _prefer_inner(form: Lin, op: Operation) -> Lin:
    """Name a tile start by the loop that runs exactly once from it: a jammed loop `fi` from `fo`
    with a window of at most its step is `fo` itself, and the read is `Wt[fi + 1]`, as the
    document's loops have it, not `Wt[fo + 1]`; a remainder row `ji_tail` from `jo + 14` that runs
    once is `jo + 14`, and `B[k, jo + 14]` is `B[k, ji_tail]`."""
    for loop in reversed(lp.enclosing_loops(op)):
        lower = map_results(loop.lower.data, list(loop.lower_operands))
        upper = map_results(loop.upper.data, list(loop.upper_operands))
        if len(lower) != 1 or lower[0] is None or len(lower[0].terms) != 1:
            continue
        ((start, coeff),) = lower[0].terms.items()
        windows = [(u - lower[0]).const for u in upper if u is not None and not (u - lower[0]).terms]
        if coeff != 1 or not windows or min(windows) > loop.step_value or start not in form.terms:
            continue
        k = form.terms[start]  # the loop runs once, at v = start + c (the last row of a block: jo + 14)
        form = form - Lin({start: k}) + Lin({loop.induction_var: k}, -k * lower[0].const)
    return form


def _redirect(ld: lp.LoadOp, source: SSAValue, digits, source_index: list[Lin], name: str) -> None:
    (g_form,) = map_results(ld.map.data, list(ld.indices))
    if g_form is None:
        raise RaiseError(f"cannot raise a read of pack '{name}': its index is not quasi-affine", ld)
    offsets = _Offsets(ld)
    g = _split_mods(offsets.of(g_form))
    parts = _digits(g, [c for c, _, _ in digits])
    by_var = {var: part for (_, var, _), part in zip(digits, parts)}
    new_index: list[Lin] = []
    for form in source_index:
        p: Poly = {1: Fraction(form.const)} if form.const else {}
        for key, c in form.terms.items():
            if key in by_var:
                p = _add(p, by_var[key], Fraction(c))  # type: ignore[index]
            else:
                p = _add(p, offsets.of_var(key), Fraction(c))  # type: ignore[arg-type]
        new_index.append(_prefer_inner(offsets.back(p), ld))
    if has_floordiv(new_index):
        raise RaiseError(f"cannot raise a read of pack '{name}': it resolves to a non-affine index", ld)
    amap, operands = affine_map_of(new_index)
    new = lp.LoadOp(source, amap, operands)
    new.location = ld.location
    new.attributes.update(ld.attributes)
    block = ld.parent_block()
    assert block is not None
    block.insert_op_before(new, ld)
    ld.results[0].replace_all_uses_with(new.results[0])
    ld.detach()
    ld.erase()
    _ = AffineMapAttr
