"""`pack T at v`: before the body of loop `v`, copy the tile of `T` that one
iteration of `v` reads into a contiguous buffer laid out in the order the
loops inside `v` traverse it, and read the buffer instead.

GEMM, after `unroll_jam ii by 6` (loops jo, ko, io, jr, ii, ki, jv), `pack B at ko`
and `pack A at io`:

    B_pack = loop.alloc : memref<65536xf32>               (before the nest: no parallel loop
    for jo ...                                             around ko, so one buffer serves all)
      for ko ...
        for B_p0 = 0 to min(16, ceildiv(N - jo, 16))       (copy: jr's blocks,
          for B_p1 = 0 to min(256, K - ko)                  k,
            for B_p2 = 0 to min(16, N - jo - 16*B_p0)       and j within a block)
              B_pack[4096*B_p0 + 16*B_p1 + B_p2] = B[ko + B_p1, jo + 16*B_p0 + B_p2]
        for io ... {parallel}
          A_pack = loop.alloc : memref<24576xf32>          (inside the parallel loop: private)
          (copy A[io .. io+96, ko .. ko+256] as [ii block][k][row in block])
          ...  A[ii + r, ki]  ->  A_pack[256*(ii - io) + 6*(ki - ko) + r]
               B[ki, jv]      ->  B_pack[256*(jr - jo) + 16*(ki - ko) + (jv - jr)]
          loop.free A_pack

**The tile.**  Every index of a load of `T` inside `v` must be linear in the
loop variables; replacing each variable of a loop inside `v` by its window
(`[l, l + E)`, see `_blocking`) -- recursively, as `l` may name an outer
loop inside `v` (`jv` runs in `[jr, jr + 16)`, `jr` in `[jo, jo + 256)`) --
gives each index a range `lo + [0, E)` with `lo` fixed during an iteration of
`v`; all loads must agree on `lo` up to a constant.

**The layout.**  Each dimension of the tile is cut into mixed-radix digits:
the radices are the strides the loops inside `v` step that index by (`jr`:
16, `jv`: 1; the main `ii` loop after `unroll_jam`: 6), and the digits of
all dimensions are ordered by the depth of their loop inside `v`; the unit
digit of a dimension whose loads differ by constants (the rows of jammed
copies) goes innermost.  So B becomes `[jr block][k][j in block]` (each
micro-kernel reads one contiguous panel) and A `[ii block][k][row]` (the
rows of a register block are adjacent for each k).  The buffer is 1-D;
a load whose indices step exactly through the digits (the main nest) reads
it at a linear address, any other load (remainder loops) through the
general `floordiv`/`mod` form of the same layout.

**The copy** runs over the digits in buffer order (so it writes the buffer
sequentially), clipped to `T`'s shape; elements of the buffer outside `T`
are never read.

**Where.**  The buffer is allocated at the start of the body of the parallel
loop around (or at) `v`, so that every thread has its own, and freed at the
end of that body; with no parallel loop, once before the stage's nest and
freed after it.  The copy is the first thing in `v`'s body.

Legal when `T` is not written inside `v` (an input, or a temporary written
elsewhere).  `pack` must come after the loop-shaping directives (like
`unroll_jam`); it packs every loop named `v` in the stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass

from irkit.affine.linear import Lin
from irkit.dialects import loop as lp
from irkit.dialects.loop import enclosing_loops
from irkit.kernel_abi import kernel_args, value_name
from irkit.passes.options import option
from irkit.passes.schedule import directive
from irkit.passes.schedule._blocking import (
    MapBuilder,
    check_last,
    lin_over,
    loop_of,
    new_loop,
    single_lower,
    unique_name,
    window,
)
from irkit.passes.schedule._pass import run_directive
from irkit.passes.schedule.helpers import (
    access_text,
    fail,
    get_str,
    is_nest_root,
    make_directive,
    name,
    nest_loops,
    range_text,
    scheduled_nests,
)

INNERMOST = 1 << 30  # depth of the unit digit of jammed copies: innermost


@directive("pack")
def apply(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    tensor = get_str(d, "tensor")
    loop_name = get_str(d, "loop")
    indices = [x.data for x in d["indices"].data] if "indices" in d else None  # type: ignore[attr-defined]
    check_last(kernel, stage, "pack", where)
    found = [lo for root in scheduled_nests(kernel, stage) for lo in nest_loops(root) if name(lo) == loop_name]
    if not found:
        known = ", ".join(dict.fromkeys(name(lo) for root in scheduled_nests(kernel, stage) for lo in nest_loops(root)))
        raise fail(where, f"unknown loop '{loop_name}' in stage '{stage}'; its loops are: {known}", loop_name)
    # Loops of that name that do not read the tensor (copies of a tile loop made by
    # unroll_jam, say) are left alone; if none reads it, `pack` says so.
    reading = [v for v in found if any(_reads(op, tensor) for op in v.walk())]
    for v in reading or found[:1]:
        pack(kernel, stage, v, tensor, where, indices)


def _reads(op: Operation, tensor: str) -> bool:
    return isinstance(op, lp.LoadOp) and value_name(op.memref) == tensor


def _read_of(op: lp.LoadOp) -> str | None:
    from irkit.passes.lower_tensorop import READ_ATTR

    attr = op.attributes.get(READ_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def _same_read(text: str, tensor: str, indices: list[str]) -> bool:
    """Is the load's read `text` (`A[j, k]`) the directive's `tensor[indices]`, up to spelling?"""
    from irkit.affine.where import linear
    from irkit.affine_text import AffineTextError, parse_affine

    inner = text.removeprefix(f"{tensor}[").removesuffix("]")
    got = [x.strip() for x in inner.split(",")] if inner != text else []
    if len(got) != len(indices):
        return False
    try:
        return all(linear(parse_affine(a)) == linear(parse_affine(b)) for a, b in zip(got, indices))
    except (AffineTextError, ValueError):
        return False


# ------------------------------------------------------------------ tiles


@dataclass
class Term:
    """One loop variable substituted away: `coeff * (iv - lower)`, iv = lower + step*t."""

    loop: lp.ForOp
    coeff: int
    lower: Lin
    trips: int | None  # None: a number of iterations fixed only by the kernel's sizes
    exact: bool  # the loop's lower bound is `lower` itself (so t is an integer from 0)


@dataclass
class DimAccess:
    """One index of one load, expanded over the loops inside `v`: `sym + const + [cmin, cmax] (+ span)`."""

    sym: Lin  # the part fixed during an iteration of v (constant 0)
    const: int
    cmin: int
    cmax: int
    terms: list[Term] = field(default_factory=list)
    span: Lin = field(default_factory=Lin)  # size-dependent part of the range (one loop over sizes)


def _is_size(value: SSAValue) -> bool:
    """Is `value` an argument of the kernel function (a size)?"""
    owner = value.owner
    return not isinstance(owner, Operation) and isinstance(owner.parent_op(), func.FuncOp)


def _size_range(lo: lp.ForOp) -> tuple[Lin, Lin] | None:
    """(lower, extent) of a loop whose bounds are single linear expressions of sizes only."""
    low = single_lower(lo)
    ups = [lin_over(r, list(lo.upper_operands)) for r in lo.upper.data.results]
    if low is None or len(ups) != 1 or ups[0] is None:
        return None
    if not all(_is_size(u) for u in (*low.terms, *ups[0].terms)):
        return None
    return low, ups[0] - low


def _depth(loop: lp.ForOp, v: lp.ForOp) -> int:
    return len(enclosing_loops(loop)) - len(enclosing_loops(v))


def _expand(form: Lin, ld: lp.LoadOp, v: lp.ForOp, tensor: str, where: str) -> DimAccess:
    cmin = cmax = 0
    span = Lin()
    out: list[Term] = []
    guard = 0
    while True:
        inner = next((u for u in form.terms if (lo := loop_of(u)) is not None and v.is_ancestor(lo) and lo is not v), None)
        if inner is None:
            break
        guard += 1
        if guard > 64:
            raise fail(where, f"pack {tensor}: the loop bounds inside '{name(v)}' are too deeply chained", tensor)
        lo = loop_of(inner)
        assert lo is not None
        a = form.terms[inner]
        form = form.without(inner)
        win = window(lo)
        sized = _size_range(lo) if win is None else None
        if win is None and (sized is None or a <= 0 or span.terms):
            raise fail(
                where,
                f"pack {tensor} at {name(v)}: {access_text(ld)} uses '{name(lo)}', which does not run over a window "
                f"of constant size ({range_text(lo)}); split or tile it first",
                tensor,
            )
        trips: int | None = None
        if win is not None:
            low, extent = win
            trips = -(-extent // lo.step_value)
            delta = a * lo.step_value * (trips - 1)
            cmin, cmax = (cmin, cmax + delta) if a > 0 else (cmin + delta, cmax)
        else:
            assert sized is not None
            low, size = sized  # iv runs in [low, low + size): the range grows by at most a * (size - 1)
            span = Lin(size.terms).scale(a)
            cmax += a * (size.const - 1)
        form = form + low.scale(a)
        single = single_lower(lo)
        out.append(Term(lo, a, low, trips, single is not None and single == low))
    for u in form.terms:
        owner = u.owner
        op = owner if isinstance(owner, Operation) else owner.parent_op()
        if op is not None and (op is v or v.is_ancestor(op)) and loop_of(u) is not v:
            raise fail(where, f"pack {tensor}: {access_text(ld)} uses a value computed inside '{name(v)}'", tensor)
    const = form.const
    return DimAccess(Lin(form.terms), const, const + cmin, const + cmax, out, span)


@dataclass
class Digit:
    dim: int
    radix: int
    extent: int
    depth: int
    stride: int = 0
    sized: Lin | None = None  # a size-dependent extent, ceildiv(sized, radix) (then `extent` is 0)


def _digits(dim: int, accs: list[DimAccess], v: lp.ForOp, extent: int, span: Lin) -> list[Digit]:
    """The mixed-radix digits of one tile dimension (of extent `span + extent`), largest
    radix first, leaving out digits that are always 0 (extent 1)."""
    depth_of: dict[int, int] = {}
    for acc in accs:
        for t in acc.terms:
            r = abs(t.coeff) * t.loop.step_value
            depth_of[r] = max(depth_of.get(r, 0), _depth(t.loop, v))
    if len({acc.const for acc in accs}) > 1:
        depth_of[1] = INNERMOST  # jammed copies: the unit digit is traversed innermost
    depth_of.setdefault(1, INNERMOST)
    chain: list[int] = []
    for r in sorted(depth_of, reverse=True):
        if not chain or chain[-1] % r == 0:
            chain.append(r)
    if chain[-1] != 1:
        chain.append(1)
    digits = []
    for k, r in enumerate(chain):
        if k == 0 and span.terms:
            digits.append(Digit(dim, r, 0, depth_of.get(r, INNERMOST), sized=span + extent))
            continue
        ext = -(-extent // r) if k == 0 else chain[k - 1] // r
        if ext > 1:
            digits.append(Digit(dim, r, ext, depth_of.get(r, INNERMOST)))
    return digits or [Digit(dim, 1, 1, INNERMOST)]


# ---------------------------------------------------------------- addresses


def _general(b: MapBuilder, o: AffineExpr, digits: list[Digit]) -> AffineExpr:
    """sum over digits of ((o mod R_{k-1}) floordiv R_k) * stride."""
    out = AffineExpr.constant(0)
    prev: int | None = None
    for dg in digits:
        part = o if prev is None else o % prev
        if dg.radix != 1:
            part = part // dg.radix
        out = out + part * dg.stride
        prev = dg.radix
    return out


def _exact(b: MapBuilder, acc: DimAccess, lo_const: int, digits: list[Digit]) -> AffineExpr | None:
    """The address part of one index when its loop terms step exactly through the digits."""
    by_radix = {dg.radix: k for k, dg in enumerate(digits)}
    used: set[int] = set()
    out = AffineExpr.constant(0)
    terms = [t for t in acc.terms if t.trips != 1]  # a loop of one iteration adds nothing: iv == lower
    for t in terms:
        r = t.coeff * t.loop.step_value
        if t.coeff <= 0 or not t.exact or r not in by_radix or by_radix[r] in used:
            return None
        k = by_radix[r]
        used.add(k)
        if k > 0 and (t.trips is None or t.trips > digits[k].extent):
            return None
        rel = b.dim(t.loop.induction_var) - b.lin(t.lower)
        step = t.loop.step_value
        stride = digits[k].stride * t.coeff
        # t.coeff * (iv - lower) = r * t_L with t_L = (iv - lower) / step
        out = out + (rel * (stride // step) if stride % step == 0 else (rel // step) * digits[k].stride)
    c = acc.const - lo_const
    smallest = min((t.coeff * t.loop.step_value for t in terms), default=None)
    if c < 0 or (smallest is not None and c >= smallest):
        return None
    for k, dg in enumerate(digits):
        if k in used:
            continue
        prev = digits[k - 1].radix if k > 0 else None
        value = (c % prev if prev is not None else c) // dg.radix
        if value and smallest is not None and dg.radix >= smallest:
            return None
        out = out + value * dg.stride
    return out


# --------------------------------------------------------------------- pack


def _tensor_shape(kernel: func.FuncOp, buf: SSAValue) -> tuple[AffineMap, list[SSAValue]] | None:
    """T's extents as a map ()[s...] -> (...) and the size values of its symbols."""
    owner = buf.owner
    if isinstance(owner, lp.AllocOp):
        return owner.shape.data, list(owner.sizes)
    try:
        sizes, tensors = kernel_args(kernel)
    except (KeyError, IndexError, AttributeError):
        return None
    for t in tensors:
        if t.value is buf:
            return t.shape, [s.value for s in sizes]
    return None


def pack(kernel: func.FuncOp, stage: str, v: lp.ForOp, tensor: str, where: str, indices: list[str] | None = None) -> None:
    loads = [op for op in v.walk() if isinstance(op, lp.LoadOp) and value_name(op.memref) == tensor]
    reads = list(dict.fromkeys(r for r in map(_read_of, loads) if r is not None))
    shown = f"{tensor}[{', '.join(indices)}]" if indices else tensor
    if indices is not None:  # one read of the tensor: its loads only (every copy unroll_jam made)
        if not reads:
            raise fail(where, f"pack {shown} at {name(v)}: the stage reads '{tensor}' once; write pack {tensor} at "
                       f"{name(v)}", tensor)  # fmt: skip
        loads = [ld for ld in loads if _same_read(_read_of(ld) or "", tensor, indices)]
        if not loads:
            raise fail(where, f"pack {shown} at {name(v)}: the stage reads '{tensor}' as {', '.join(reads)} inside "
                       f"'{name(v)}', not as {shown}", tensor)  # fmt: skip
    if not loads:
        packed = any(isinstance(op, lp.LoadOp) and value_name(op.memref) == f"{tensor}_pack" for op in v.walk())
        hint = f" (an earlier pack made its reads there read {tensor}_pack)" if packed else ""
        raise fail(where, f"pack {tensor} at {name(v)}: '{tensor}' is not read inside '{name(v)}'{hint}", tensor)
    buf = loads[0].memref
    for op in v.walk():
        if isinstance(op, lp.StoreOp) and op.memref is buf:
            raise fail(
                where,
                f"pack {tensor} at {name(v)}: '{tensor}' is written inside '{name(v)}' ({access_text(op)}), "
                "so a copy made before its body would go stale",
                tensor,
            )
    memref = buf.type
    assert isinstance(memref, MemRefType)
    rank = len(memref.get_shape())
    shape = _tensor_shape(kernel, buf)
    if shape is None:
        raise fail(where, f"pack {tensor}: cannot find the shape of '{tensor}'", tensor)
    # Expand every index of every load.
    accs: list[list[DimAccess]] = []
    for ld in loads:
        row = []
        for r in ld.map.data.results:
            form = lin_over(r, list(ld.indices))
            if form is None:
                raise fail(where, f"pack {tensor}: {access_text(ld)} is not linear in the loop variables", tensor)
            row.append(_expand(form, ld, v, tensor, where))
        accs.append(row)
    lows: list[Lin] = []
    extents: list[int] = []
    all_digits: list[Digit] = []
    per_dim: list[list[Digit]] = []
    for dim in range(rank):
        col = [row[dim] for row in accs]
        sym = col[0].sym
        for acc, ld in zip(col, loads):
            if acc.sym != sym:
                hint = f"; pack one of them (pack {reads[-1]} at {name(v)})" if len(reads) > 1 and indices is None else ""
                raise fail(
                    where,
                    f"pack {shown} at {name(v)}: the reads {access_text(loads[0])} and {access_text(ld)} are not "
                    f"offsets of one tile (their indices differ by more than constants){hint}",
                    tensor,
                )
        if len({acc.span for acc in col}) > 1:
            raise fail(
                where,
                f"pack {tensor} at {name(v)}: the reads of '{tensor}' cover ranges of different, size-dependent "
                "lengths; split the loops inside it first",
                tensor,
            )
        lo = min(acc.cmin for acc in col)
        lows.append(sym + lo)
        extents.append(max(acc.cmax for acc in col) - lo + 1)
        digits = _digits(dim, col, v, extents[-1], col[0].span)
        per_dim.append(digits)
        all_digits.extend(digits)
    order = sorted(all_digits, key=lambda dg: (dg.depth, dg.dim))
    sized = [dg for dg in order if dg.sized is not None]
    if sized and (len(sized) > 1 or order[0] is not sized[0]):
        raise fail(
            where,
            f"pack {tensor} at {name(v)}: the tile's extent along dimension {sized[-1].dim + 1} of '{tensor}' depends "
            "on the sizes, which works only for the outermost part of the layout; split or tile that loop first",
            tensor,
        )
    size = 1
    for dg in reversed(order):
        dg.stride = size
        size *= dg.extent if dg.sized is None else 1
    sb = MapBuilder()
    count: AffineExpr = AffineExpr.constant(size)
    if sized:
        count = sb.lin(sized[0].sized).ceil_div(sized[0].radix) * size  # type: ignore[arg-type]
    count_map, size_vals = sb.build([count])
    nsyms = len(size_vals)
    count_map = AffineMap(
        0,
        nsyms,
        tuple(r.replace_dims_and_symbols([AffineExpr.symbol(i) for i in range(nsyms)], []) for r in count_map.results),
    )
    etype = memref.element_type
    ptype = MemRefType(etype, [size if not sized else DYNAMIC_INDEX])
    pname = f"{tensor}_pack"
    # Where the buffer lives.
    host = next((lo for lo in [*enclosing_loops(v), v] if lo.parallel is not None), None)
    alloc = lp.AllocOp(size_vals, pname, count_map, ptype, 64)
    alloc.result.name_hint = pname
    alloc.location = v.location
    free = lp.FreeOp(alloc.result)
    free.location = v.location
    if host is not None:
        block = host.body.block
        first = block.first_op
        assert first is not None
        block.insert_op_before(alloc, first)
        block.add_op(free)
    else:
        root = v
        while not is_nest_root(root):
            parent = root.parent_op()
            assert isinstance(parent, lp.ForOp)
            root = parent
        parent_block = root.parent_block()
        assert parent_block is not None
        parent_block.insert_op_before(alloc, root)
        parent_block.insert_op_after(free, root)
    # Rewrite the loads.
    for ld, row in zip(loads, accs):
        b = MapBuilder(list(ld.indices))
        address = AffineExpr.constant(0)
        for dim, acc in enumerate(row):
            part = _exact(b, acc, lows[dim].const, per_dim[dim])
            if part is None:
                o = b.expr(ld.map.data.results[dim], list(ld.indices)) - b.lin(lows[dim])
                part = _general(b, o, per_dim[dim])
            address = address + part
        amap, ops = b.build([address])
        new = lp.LoadOp(alloc.result, amap, ops)
        new.result.name_hint = ld.result.name_hint
        new.location = ld.location
        new.attributes.update(ld.attributes)  # which read it is (`irkit.read`), for raising
        block = ld.parent_block()
        assert block is not None
        block.insert_op_before(new, ld)
        ld.result.replace_all_uses_with(new.result)
        ld.detach()
        ld.erase()
    _copy_nest(kernel, stage, v, buf, alloc.result, shape, lows, per_dim, order, where)


def _copy_nest(
    kernel: func.FuncOp,
    stage: str,
    v: lp.ForOp,
    buf: SSAValue,
    packed: SSAValue,
    shape: tuple[AffineMap, list[SSAValue]],
    lows: list[Lin],
    per_dim: list[list[Digit]],
    order: list[Digit],
    where: str,
) -> None:
    shape_map, shape_vals = shape
    ivs: dict[int, SSAValue] = {}
    outer: lp.ForOp | None = None
    last: lp.ForOp | None = None
    tensor = value_name(buf)
    for n, dg in enumerate(order):
        b = MapBuilder()
        dim_digits = per_dim[dg.dim]
        k = dim_digits.index(dg)
        nsym = len(shape_vals)
        over_dims = shape_map.results[dg.dim].replace_dims_and_symbols(
            [], [AffineExpr.dimension(i) for i in range(nsym)]
        )
        extent = b.expr(over_dims, shape_vals)
        base = b.lin(lows[dg.dim])
        for j in range(k):
            base = base + b.dim(ivs[id(dim_digits[j])]) * dim_digits[j].radix
        room = extent - base
        bound = room if dg.radix == 1 else room.ceil_div(dg.radix)
        if dg.sized is None:
            most = AffineExpr.constant(dg.extent)
        else:
            most = b.lin(dg.sized) if dg.radix == 1 else b.lin(dg.sized).ceil_div(dg.radix)
        upper = b.build([most] if str(most) == str(bound) else [most, bound])
        lname = unique_name(kernel, stage, f"{tensor}_p{n}")
        loop = new_loop(v, (AffineMap(0, 0, (AffineExpr.constant(0),)), []), upper, 1, lname, None, where)
        for fact in ("parallel", "vector", "unroll"):
            if fact in loop.properties:
                del loop.properties[fact]
        ivs[id(dg)] = loop.induction_var
        if last is None:
            outer = loop
        else:
            last.body.block.add_op(loop)
        last = loop
    assert outer is not None and last is not None
    b = MapBuilder()
    index = []
    for dim, digits in enumerate(per_dim):
        e = b.lin(lows[dim])
        for dg in digits:
            e = e + b.dim(ivs[id(dg)]) * dg.radix
        index.append(e)
    smap, sops = b.build(index)
    pb = MapBuilder()
    addr = AffineExpr.constant(0)
    for dg in order:
        addr = addr + pb.dim(ivs[id(dg)]) * dg.stride
    pmap, pops = pb.build([addr])
    get = lp.LoadOp(buf, smap, sops)
    get.result.name_hint = f"{tensor}_v"
    put = lp.StoreOp(get.result, packed, pmap, pops)
    get.location = put.location = v.location
    last.body.block.add_ops([get, put])
    block = v.body.block
    first = block.first_op
    if isinstance(first, lp.AllocOp) and first.result is packed:
        block.insert_op_after(outer, first)
    elif first is not None:
        block.insert_op_before(outer, first)
    else:
        block.add_op(outer)


@dataclass(frozen=True)
class SchedulePackPass(ModulePass):
    """Pack tensor `tensor` at loop `loop` of stage `stage`: copy the tile of it that one
    iteration of the loop reads into a contiguous buffer and read that instead."""

    name = "schedule-pack"
    stage: str = option(help="the stage (the tensor a statement writes) whose loops are transformed")
    tensor: str = option(help="the tensor read by the stage whose tile is copied")
    loop: str = option(help="the loop one iteration of which reads the tile")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        d = make_directive("pack", self.loc, tensor=self.tensor, loop=self.loop)
        run_directive(op, "pack", self.stage, d, self.loc)
