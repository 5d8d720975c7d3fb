"""`compute_at S.l` and `compute_root`: where a producer stage is computed.

`compute_at C.l` on stage P (a temporary) moves P's nests (fills included,
after P's own loop-shaping directives) into loop `l` of its consumer C
(after C's directives), Halide style.  In each iteration of `l`, P is
computed over exactly the part of it that the rest of that iteration reads
-- the *footprint* -- so halos shared by neighbouring tiles are recomputed:

    loop.for %yo = 0 to H step 32 {parallel}                 (stage out)
      %bx = loop.alloc() {shape = () -> (34, 256)}           P's private tile
      loop.for %xo = 0 to W step 256                         l = out.xo
        loop.for %y = yo to min(yo + 34, H + 2)              (stage bx)
          loop.for %x = xo to min(xo + 256, W) {vector = 16}
            loop.store .., %bx[y - yo, x - xo]
        loop.for %yi = yo to min(yo + 32, H)                 (stage out)
          loop.for %xi = xo to min(xo + 256, W)
            loop.load %bx[yi + 2 - yo, xi - xo] ..
      loop.free %bx

The algorithm, all of it reading only loop IR:

1. **Footprint.**  Every load of P inside `l` (C's own, or those of stages
   placed in `l` before: placements run consumers first, so for a chain
   t1 -> t2 -> out both at out.jo, t2 is placed first and t1's footprint
   comes from t2's loads over t2's new ranges) gives, per dimension, an
   affine index over loop variables.  The variables of loops inside `l` are
   eliminated innermost first by their bounds (`irkit.affine.prove.Ranges`): a loop runs from
   the max of its lower-bound results to the min of its upper-bound results,
   so a lower bound of an index is a max of affine terms and an upper bound
   a min, over the variables of `l` and the loops around it and the sizes
   (`floordiv`/`ceildiv` by constants are monotone; `mod k` is in
   [0, k-1]).  Several loads are joined by taking the one whose bounds are
   provably outermost; when none is (the bounds cross), that dimension falls
   back to P's whole extent (correct, only slower).  Bounds are then clipped
   to P's domain, and terms implied by others are dropped (`irkit.affine.prove.Prover`:
   sizes are >= 1, loop variables range over their bounds).
2. **Restriction.**  For each dimension, P's store index is `v + rest` with
   `v` the variable of a step-1 loop of P's nest (after a split of P, the
   inner loop); `v` gets the footprint (minus `rest`) as extra lower/upper
   bound terms, which keeps exactly the iterations storing inside the
   footprint.  A loop `u` of a split around `v` (`v` runs over
   `[u + a, u + a + step(u))`) is restarted at the footprint (`u` from
   `max(lb, lo - a)` to `min(ub, hi - a)`) so no empty blocks run.  Loops
   left with one iteration (`i` from `i_out` to `min(M, i_out + 1)`) stay:
   a producer placed later may be computed at them (`compute_at t2.i`),
   as the document's checker allowed.
3. **Buffer.**  P's full-size buffer becomes a *tile buffer*: per dimension
   an offset `t` (a lower-bound term of the footprint) and an extent `u - t`
   that is constant or over sizes only (`u` an upper-bound term); accesses
   are rewritten to `[index - t]`.  A dimension with no such pair keeps its
   full extent, offset 0.  If `l` or a loop around it is `parallel`, the
   buffer is allocated at the start of the body of the innermost such loop
   and freed at its end: it is private to that loop's iterations (threads),
   so overlapping halos written by two tiles never race.  Otherwise the
   tile buffer replaces the kernel-level allocation (or, if no dimension
   shrank, nothing changes).

Refused, with a diagnostic at the directive: P not a temporary (an input or
output, or a stage writing several buffers); `l` not a loop of C; C not
reading P inside `l` (directly or through stages placed there); P read
outside `l` (by another stage, or by a stage of the chain left outside); a
footprint that is not affine (an index computed by arithmetic ops); P
computed after its consumer; P reading a buffer that is written inside `l`
or between P's nests and C's -- e.g. `l` is a reduction loop accumulating
into an output that P reads, so P would see partial sums (a write inside
`l` is accepted only when it follows P in the iteration and every loop
around P separates the elements written and read into disjoint windows);
a parallel loop of P inside a parallel loop of C (nested parallelism).

`compute_root` checks that P is computed in full at the kernel's top level
before every nest that reads it (which `lower-tensorop` guarantees); it
moves nothing.

`fuse_stage` (for stages with several nests, i.e. a generalized `softmax`:
row max, exp, row sum, divide, and the fills of `<stage>_max`/`<stage>_sum`)
places every nest but the last, last first, into the outermost loop of the
last nest with the same machinery, so the whole computation runs row block
by row block (the temporaries become private per-row buffers); the moved
nests' own row loops, left with one iteration, are removed (their variable
replaced by the bound's value), so no parallel loop ends up nested in
another.  It is an
optimization: if any step would be refused it leaves the stage unchanged
(it is tried on a clone first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    IndexType,
    ModuleOp,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import (
    AffineExpr,
    AffineMap,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irkit.affine.bounds import access_forms, lower_terms, set_bounds, upper_terms
from irkit.affine.linear import Lin, NotAffine, build_map, expr_of, lin_of
from irkit.affine.prove import Prover, Ranges, depth
from irkit.diagnostics import DiagnosticError
from irkit.dialects import loop as lp
from irkit.kernel_abi import SHAPE, value_name
from irkit.passes.options import option
from irkit.passes.schedule import directive
from irkit.passes.schedule.helpers import (
    NestIndex,
    access_text,
    active_index,
    fail,
    get_str,
    indexed,
    kernels,
    make_directive,
    name,
    nest_loops,
    stage_nests,
)

# ================================================================ the IR around a placement


def loops_between(op: Operation, outer: Operation) -> list[lp.ForOp]:
    """The loops enclosing `op` strictly inside `outer`."""
    return [loop for loop in lp.enclosing_loops(op) if loop is not outer and outer.is_ancestor(loop)]


def ops_between(nests: Sequence[Operation], root: Operation) -> list[Operation] | None:
    """The ops after the last of `nests` (in program order) and before `root`, in their block,
    or None if `root` does not follow them there.  Costs the distance, not the block."""
    out: list[Operation] = []
    op = nests[-1].next_op
    mine = set(nests)
    while op is not None and op is not root:
        if op not in mine:
            out.append(op)
        op = op.next_op
    return out if op is root else None


def child_of(block: Block, op: Operation) -> Operation | None:
    """The op of `block` that is `op` or holds it."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()  # type: ignore[assignment]
    return op


def buffer_domain(buf: SSAValue, where: str) -> list[Lin]:
    """The extents of a buffer (a loop.alloc or a kernel argument) over the kernel's sizes."""
    if isinstance(buf, OpResult) and isinstance(buf.op, lp.AllocOp):
        shape, over = buf.op.shape.data, list(buf.op.sizes)
    elif isinstance(buf, BlockArgument) and isinstance(buf.owner.parent_op(), func.FuncOp):
        kernel = buf.owner.parent_op()
        assert isinstance(kernel, func.FuncOp)
        attrs = kernel.arg_attrs.data[buf.index].data if kernel.arg_attrs is not None else {}
        attr = attrs.get(SHAPE)
        if not isinstance(attr, AffineMapAttr):
            raise fail(where, f"the shape of '{value_name(buf)}' is unknown (no '{SHAPE}')")
        shape = attr.data
        over = [a for a in kernel.body.block.args if isinstance(a.type, IndexType)]
    else:
        raise fail(where, f"the shape of '{value_name(buf)}' is unknown")
    dims = shape.replace_dims_and_symbols([], [AffineExpr.dimension(i) for i in range(len(over))], len(over), 0)
    return [lin_of(r, over) for r in dims.results]


def is_private_to(buf: SSAValue, loop: lp.ForOp) -> bool:
    return isinstance(buf, OpResult) and isinstance(buf.op, lp.AllocOp) and loop.is_ancestor(buf.op)


@dataclass
class Footprint:
    """Per dimension of a buffer: max-form lower bounds and min-form exclusive upper bounds,
    over the variables of a loop and the loops around it, clipped to the buffer's domain."""

    lo: list[list[Lin]]
    hi: list[list[Lin]]


@dataclass
class Placement:
    """Moving `nests` (which write `buf`) into loop `target`, once per iteration, for the part
    of `buf` read inside `target`."""

    kernel: func.FuncOp
    nests: list[lp.ForOp]
    buf: SSAValue
    target: lp.ForOp
    where: str
    what: str  # names the producer in messages: "'bx'"
    consumer: str  # names the consumer loop: "'out.xo'"
    collapse: bool = False  # remove the moved loops that run once
    prover: Prover = field(init=False)

    def __post_init__(self) -> None:
        self.prover = Prover(self.kernel)

    def fail(self, message: str, focus: str | None = None) -> DiagnosticError:
        return fail(self.where, f"compute_at {self.consumer}: {message}", focus)

    def in_nests(self, op: Operation) -> bool:
        return any(n.is_ancestor(op) for n in self.nests)

    # ---------------------------------------------------------- checks before moving

    def readers(self) -> list[lp.LoadOp]:
        out: list[lp.LoadOp] = []
        for use in self.buf.uses:
            op = use.operation
            if isinstance(op, lp.LoadOp) and not self.in_nests(op):
                out.append(op)
        return out

    def check(self) -> list[lp.LoadOp]:
        root = self.target
        while root.parent_block() is not self.nests[0].parent_block():
            parent = root.parent_op()
            if not isinstance(parent, lp.ForOp):
                raise self.fail(f"{self.what} and {self.consumer} are not in the same block of the kernel")
            root = parent
        block = root.parent_block()
        assert block is not None
        between = ops_between(self.nests, root)
        for nest in self.nests:
            if nest.parent_block() is not block or between is None:
                raise self.fail(f"{self.what} is computed after {self.consumer}, which reads it")
            if nest.is_ancestor(self.target) or self.target.is_ancestor(nest):
                raise self.fail(f"{self.what} and {self.consumer} are the same loop nest")
        readers = self.readers()
        inside = [r for r in readers if self.target.is_ancestor(r)]
        outside = [r for r in readers if not self.target.is_ancestor(r)]
        if outside:
            r = outside[0]
            who = _stage_text(r)
            raise self.fail(
                f"{self.what} is also read outside loop '{name(self.target)}' ({who} reads {access_text(r)}); "
                f"it must be computed where every reader can see it: place {who} inside too, or compute "
                f"{self.what} at a loop around all its readers"
            )
        if not inside:
            who = f"'{self.target.stage.data}'" if self.target.stage is not None else self.consumer
            raise self.fail(
                f"{who} does not read {self.what} inside loop '{name(self.target)}', directly or through "
                "stages computed there"
            )
        for use in self.buf.uses:
            op = use.operation
            if isinstance(op, lp.StoreOp) and not self.in_nests(op) and not self.target.is_ancestor(op):
                raise self.fail(f"{self.what} is also written by {_stage_text(op)}, outside loop '{name(self.target)}'")
        # Buffers the nests read must not change between where the nests were and the target's nest.
        reads = {a.memref for n in self.nests for a in n.walk() if isinstance(a, lp.LoadOp) and a.memref is not self.buf}
        for op in between:
            for st in op.walk():
                if isinstance(st, lp.StoreOp) and (st.memref in reads or st.memref is self.buf):
                    raise self.fail(
                        f"{self.what} reads '{value_name(st.memref)}', which {_stage_text(st)} writes between "
                        f"{self.what} and {self.consumer}: moving {self.what} would read the new values"
                        if st.memref in reads
                        else f"{self.what} is also written by {_stage_text(st)}"
                    )
        return inside

    # ---------------------------------------------------------- footprint

    def footprint(self, readers: Sequence[lp.LoadOp]) -> Footprint:
        domain = buffer_domain(self.buf, self.where)
        lows: list[list[list[Lin]]] = [[] for _ in domain]
        highs: list[list[list[Lin]]] = [[] for _ in domain]
        allowed = set(self.prover.sizes) | {loop.induction_var for loop in [*lp.enclosing_loops(self.target), self.target]}
        for load in readers:
            ranges = Ranges(loops_between(load, self.target))
            try:
                forms = access_forms(load)
                for k, form in enumerate(forms):
                    lo, hi = ranges.lo(form), ranges.hi(form)
                    for t in (*lo, *hi):
                        bad = [v for v in t.atoms() if v not in allowed]
                        if bad:
                            raise NotAffine(f"index uses '{value_name(bad[0])}', which is not a loop variable or size")
                    lows[k].append(lo)
                    highs[k].append([h + 1 for h in hi])
            except NotAffine as exc:
                raise self.fail(
                    f"the part of {self.what} read by {access_text(load)} is not computable ({exc}); "
                    "compute_at needs affine indices"
                ) from None
        lo_out: list[list[Lin]] = []
        hi_out: list[list[Lin]] = []
        for k, extent in enumerate(domain):
            lo = self.prover.tightest(lows[k], True) or []
            hi = self.prover.tightest(highs[k], False) or []
            lo_out.append(self.prover.prune([*lo, Lin()], True))
            hi_out.append(self.prover.prune([*hi, extent], False))
        return Footprint(lo_out, hi_out)

    # ---------------------------------------------------------- restricting the nests

    def restrictions(self, fp: Footprint) -> dict[lp.ForOp, tuple[list[Lin], list[Lin]]]:
        """New (lower, upper) bound terms of the nests' loops that keep the footprint only."""
        plan: dict[lp.ForOp, tuple[list[Lin], list[Lin]]] = {}

        def add(loop: lp.ForOp, lower: Iterable[Lin], upper: Iterable[Lin]) -> None:
            lo, hi = plan.get(loop) or (lower_terms(loop), upper_terms(loop))
            plan[loop] = (lo + list(lower), hi + list(upper))

        for nest in self.nests:
            loops = [op for op in nest.walk() if isinstance(op, lp.ForOp)]
            loop_of = {loop.induction_var: loop for loop in loops}
            stores = [op for op in nest.walk() if isinstance(op, lp.StoreOp)]
            if any(st.memref is not self.buf for st in stores):
                other = next(st for st in stores if st.memref is not self.buf)
                raise self.fail(f"{self.what} also writes '{value_name(other.memref)}'")
            keyed = {(str(st.map.data), tuple(id(v) for v in st.indices)) for st in stores}
            if len(keyed) > 1:
                raise self.fail(f"{self.what} writes its buffer at several indices in one nest")
            if not stores:
                continue
            try:
                forms = access_forms(stores[0])
            except NotAffine as exc:
                raise self.fail(f"{self.what} writes {access_text(stores[0])}, which is not affine ({exc})") from None
            for k, s in enumerate(forms):
                v = self._index_loop(s, loop_of)
                if v is None:
                    raise self.fail(
                        f"cannot restrict {self.what} to the part that is read: its index "
                        f"{access_text(stores[0])} (dimension {k}) is not a loop variable plus outer terms"
                    )
                rest = s.without(v.induction_var)
                add(v, [t - rest for t in fp.lo[k]], [t - rest for t in fp.hi[k]])
                self._restart_block_loop(v, rest, fp.lo[k], fp.hi[k], loop_of, add)
        return plan

    @staticmethod
    def _index_loop(s: Lin, loop_of: Mapping[SSAValue, lp.ForOp]) -> lp.ForOp | None:
        """The deepest step-1 loop `v` with s = v + (terms of loops around v and sizes)."""
        best: lp.ForOp | None = None
        for atom, k in s.terms.items():
            loop = loop_of.get(atom) if isinstance(atom, SSAValue) else None
            if loop is None or k != 1 or loop.step_value != 1:
                continue
            around = {o.induction_var for o in lp.enclosing_loops(loop)}
            rest = s.without(atom)
            if any(v in loop_of and v not in around for v in rest.atoms()):
                continue
            if best is None or depth(loop) > depth(best):
                best = loop
        return best

    def _restart_block_loop(
        self,
        v: lp.ForOp,
        rest: Lin,
        lo: Sequence[Lin],
        hi: Sequence[Lin],
        loop_of: Mapping[SSAValue, lp.ForOp],
        add: Callable[[lp.ForOp, Iterable[Lin], Iterable[Lin]], None],
    ) -> None:
        """If `v` runs over blocks `[u + a, u + a + step(u))` of an outer loop `u` (a split),
        start `u` at the footprint and stop it at its end, so no empty blocks run."""
        s_lo = [rest + t for t in lower_terms(v)]
        s_hi = [rest + t for t in upper_terms(v)]
        for u_iv, u in loop_of.items():
            if u is v or not u.is_ancestor(v):
                continue
            unit = Lin.of(u_iv)
            a = next(((t - unit).const for t in s_lo if (t - unit).is_const), None)
            b = next(((t - unit).const for t in s_hi if (t - unit).is_const), None)
            if a is None or b is None or b - a != u.step_value:
                continue
            others = [t for t in (*s_lo, *s_hi) if not (t - unit).is_const]
            if any(x in loop_of for t in others for x in t.atoms()):
                continue
            if not all(t + a in s_hi for t in upper_terms(u)):
                continue
            add(u, [t - a for t in lo], [t - a for t in hi])
            return

    # ---------------------------------------------------------- moving

    def apply(self) -> Footprint:
        readers = self.check()
        fp = self.footprint(readers)
        plan = self.restrictions(fp)
        body = self.target.body.block
        order = {op: k for k, op in enumerate(body.ops)}
        first = min((child_of(body, r) for r in readers), key=lambda op: order[op])  # type: ignore[index]
        for nest in self.nests:
            nest.detach()
            Rewriter.insert_op(nest, InsertPoint.before(first))  # type: ignore[arg-type]
        for loop, (lower, upper) in plan.items():
            set_bounds(loop, lower, upper)
        for nest in self.nests:
            for loop in [op for op in nest.walk() if isinstance(op, lp.ForOp)]:
                set_bounds(loop, self.prover.prune(lower_terms(loop), True), self.prover.prune(upper_terms(loop), False))
        if self.collapse:
            self.nests = [n for nest in self.nests for n in collapse_single_iterations(nest, self.prover)]
        self.check_hazards()
        return fp

    def moved_ops(self) -> list[Operation]:
        return [op for n in self.nests for op in n.walk()] if self.nests else []

    def check_hazards(self) -> None:
        """Writes inside the target to buffers the moved nests read, or to their own buffer, must
        come after them in the iteration and touch other elements in every other iteration."""
        moved = self.moved_ops()
        moved_ids = {id(op) for op in moved}
        mine = [op for op in moved if isinstance(op, lp.LoadOp | lp.StoreOp)]
        reads = {op.memref for op in mine if isinstance(op, lp.LoadOp) and op.memref is not self.buf}
        body = self.target.body.block
        order = {op: k for k, op in enumerate(body.ops)}
        first = min(order[child_of(body, n)] for n in self.nests) if self.nests else 0  # type: ignore[index]
        for st in self.target.walk():
            if not isinstance(st, lp.StoreOp) or id(st) in moved_ids:
                continue
            if st.memref is self.buf or st.memref in reads:
                if is_private_to(st.memref, self.target):
                    continue
                if order[child_of(body, st)] < first:  # type: ignore[index]
                    raise self.fail(
                        f"{self.what} reads '{value_name(st.memref)}', which is written earlier in loop "
                        f"'{name(self.target)}' by {_stage_text(st)}"
                    )
                related = [a for a in mine if a.memref is st.memref]
                if not self.separated(related, st):
                    verb = "reads" if st.memref in reads else "writes"
                    raise self.fail(
                        f"{self.what} {verb} '{value_name(st.memref)}', which {_stage_text(st)} writes at "
                        f"{access_text(st)} inside loop '{name(self.target)}': other iterations would see "
                        "partial or overwritten values"
                    )

    def separated(self, accesses: Sequence[lp.LoadOp | lp.StoreOp], other: lp.StoreOp) -> bool:
        """Do two iterations of the target (or of a loop around it) never touch the same element
        through `accesses` and `other`?  Each such loop `u` needs a dimension in which every
        access stays within a window [u + c, u + c + step(u))."""
        for u in [*lp.enclosing_loops(self.target), self.target]:
            if not any(self._window(u, k, [*accesses, other]) for k in range(len(access_forms(other)))):
                return False
        return True

    def _window(self, u: lp.ForOp, k: int, accesses: Sequence[lp.LoadOp | lp.StoreOp]) -> bool:
        unit = Lin.of(u.induction_var)
        lows: list[int] = []
        highs: list[int] = []
        try:
            for acc in accesses:
                form = access_forms(acc)[k]
                ranges = Ranges(loops_between(acc, u))
                lo = [(t - unit).const for t in ranges.lo(form) if (t - unit).is_const]
                hi = [(t - unit).const for t in ranges.hi(form) if (t - unit).is_const]
                if not lo or not hi:
                    return False
                lows.append(max(lo))
                highs.append(min(hi))
        except NotAffine:
            return False
        return max(highs) - min(lows) < u.step_value


def _stage_text(op: Operation) -> str:
    loops = lp.enclosing_loops(op)
    stage = next((lo.stage.data for lo in reversed(loops) if lo.stage is not None), None)
    return f"stage '{stage}'" if stage else "an operation"


def collapse_single_iterations(nest: lp.ForOp, prover: Prover) -> list[Operation]:
    """Replace each loop of `nest` that runs exactly once, from a plain value `w`
    (`for i = w to min(w + 1, M)` with `w < M`), by its body with `i` replaced by `w`.
    Returns what stands in the nest's place (the nest, or its body's ops)."""
    for loop in [op for op in nest.walk() if isinstance(op, lp.ForOp)]:
        lower = lower_terms(loop)
        if len(lower) != 1 or len(lower[0].terms) != 1 or lower[0].const != 0:
            continue
        (atom, k), = lower[0].terms.items()
        if k != 1 or not isinstance(atom, SSAValue):
            continue
        uppers = upper_terms(loop)
        once = any((u - lower[0]).is_const and (u - lower[0]).const <= loop.step_value for u in uppers)
        if not once or not all(prover.nonneg(u - lower[0] - 1) for u in uppers):
            continue
        iv = loop.induction_var
        iv.replace_all_uses_with(atom)
        ops = list(loop.body.block.ops)
        for op in ops:
            op.detach()
        Rewriter.insert_op(ops, InsertPoint.before(loop))
        loop.detach()
        loop.erase()
        if loop is nest:
            return [r for op in ops for r in (collapse_single_iterations(op, prover) if isinstance(op, lp.ForOp) else [op])]
    return [nest]


# ================================================================ the tile buffer


def localize(kernel: func.FuncOp, buf: SSAValue, fp: Footprint, target: lp.ForOp, prover: Prover) -> SSAValue:
    """Give `buf` (a loop.alloc) a tile-sized buffer indexed relative to the footprint, private
    to the innermost parallel loop around `target` (or `target` itself) if there is one."""
    alloc = buf.owner
    assert isinstance(alloc, lp.AllocOp)
    domain = buffer_domain(buf, "")
    offsets: list[Lin] = []
    extents: list[Lin] = []
    for k, full in enumerate(domain):
        best: tuple[Lin, Lin] | None = None
        for t in fp.lo[k]:
            for u in fp.hi[k]:
                e = u - t
                if not all(v in prover.sizes for v in e.atoms()) or (e.is_const and e.const <= 0):
                    continue
                if best is None or _smaller(e, best[1]):
                    best = (t, e)
        if best is None or (not best[1].is_const and prover.le(full, best[1])):
            best = (Lin(), full)
        offsets.append(best[0])
        extents.append(best[1])
    parallel = [lo for lo in [*lp.enclosing_loops(target), target] if lo.parallel is not None]
    home = parallel[-1] if parallel else None
    if home is None and all(o == Lin() for o in offsets):
        return buf  # the whole buffer is needed: keep the kernel-level allocation
    sizes = list(dict.fromkeys(v for e in extents for v in e.atoms()))
    pos = {v: i for i, v in enumerate(sizes)}
    dims = [expr_of(e, pos) for e in extents]
    syms = [AffineExpr.symbol(i) for i in range(len(sizes))]
    shape = AffineMap(0, len(sizes), tuple(d.replace_dims_and_symbols(syms, []) for d in dims))
    align = alloc.align.value.data if alloc.align is not None else None
    new = lp.AllocOp(sizes, alloc.tensor_name.data, shape, alloc.result.type, align)  # type: ignore[arg-type]
    new.location = alloc.location
    new.result.name_hint = buf.name_hint
    frees = [use.operation for use in buf.uses if isinstance(use.operation, lp.FreeOp)]
    if home is None:
        Rewriter.insert_op(new, InsertPoint.before(alloc))
        for f in frees:
            f.operands = [new.result]
    else:
        block = home.body.block
        Rewriter.insert_op(new, InsertPoint.at_start(block))
        free = lp.FreeOp(new.result)
        free.location = alloc.location
        block.add_op(free)
        for f in frees:
            f.detach()
            f.erase()
    for use in list(buf.uses):
        op = use.operation
        if isinstance(op, lp.LoadOp | lp.StoreOp):
            _rebase(op, new.result, offsets)
    alloc.detach()
    alloc.erase()
    return new.result


def _smaller(a: Lin, b: Lin) -> bool:
    if a.is_const != b.is_const:
        return a.is_const
    if a.is_const:
        return a.const < b.const
    return False


def _rebase(op: lp.LoadOp | lp.StoreOp, new: SSAValue, offsets: Sequence[Lin]) -> None:
    forms = [f - t for f, t in zip(access_forms(op), offsets)]
    amap, indices = build_map(forms, list(op.indices))
    if isinstance(op, lp.LoadOp):
        repl: Operation = lp.LoadOp(new, amap, indices)
        repl.results[0].name_hint = op.result.name_hint
    else:
        repl = lp.StoreOp(op.value, new, amap, indices)
    repl.location = op.location
    for key, value in op.attributes.items():
        repl.attributes[key] = value
    Rewriter.replace_op(op, repl)


# ================================================================ the directives


def producer_buffer(kernel: func.FuncOp, stage: str, nests: Sequence[lp.ForOp], where: str) -> SSAValue:
    bufs: list[SSAValue] = []
    for nest in nests:
        for op in nest.walk():
            if isinstance(op, lp.StoreOp) and not any(op.memref is b for b in bufs):
                bufs.append(op.memref)
    if not bufs:
        raise fail(where, f"stage '{stage}' stores nothing", stage)
    if len(bufs) > 1:
        names = ", ".join(f"'{value_name(b)}'" for b in bufs)
        raise fail(where, f"stage '{stage}' writes several buffers ({names}); compute_at places a stage writing one temporary", stage)
    buf = bufs[0]
    if not (isinstance(buf, OpResult) and isinstance(buf.op, lp.AllocOp)):
        raise fail(
            where,
            f"'{stage}' writes '{value_name(buf)}', a kernel argument; compute_at and compute_root place temporaries "
            "(tensors declared `temp`)",
            stage,
        )
    return buf


def compute_at_loop(kernel: func.FuncOp, stage: str, consumer: str, loop_name: str, where: str) -> SSAValue:
    """Place stage `stage` at loop `loop_name` of stage `consumer`; the buffer it now writes."""
    nests = stage_nests(kernel, stage)
    if not nests:
        raise fail(where, f"no loops of stage '{stage}' in function @{kernel.sym_name.data}", stage)
    if consumer == stage:
        raise fail(where, f"stage '{stage}' cannot be computed inside itself", consumer)
    buf = producer_buffer(kernel, stage, nests, where)
    consumer_nests = stage_nests(kernel, consumer)
    if not consumer_nests:
        raise fail(where, f"compute_at names stage '{consumer}', which has no loops here", consumer)
    named = [lo for root in consumer_nests for lo in nest_loops(root) if name(lo) == loop_name]
    if not named:
        known = list(dict.fromkeys(name(lo) for root in consumer_nests for lo in nest_loops(root)))
        raise fail(where, f"compute_at on loop '{loop_name}', which '{consumer}' does not have; its loops are: {', '.join(known)}", loop_name)
    reading = [lo for lo in named if any(lo.is_ancestor(u.operation) for u in buf.uses)]
    if not reading and len(named) == 1:
        reading = named  # the placement says who reads it where
    if not reading:
        raise fail(
            where,
            f"compute_at {consumer}.{loop_name}: '{consumer}' does not read '{stage}' inside loop '{loop_name}', "
            "directly or through stages computed there",
            consumer,
        )
    if len(reading) > 1:
        raise fail(where, f"compute_at {consumer}.{loop_name}: '{consumer}' has {len(reading)} loops '{loop_name}' reading '{stage}'", loop_name)
    target = reading[0]
    placement = Placement(kernel, list(nests), buf, target, where, f"'{stage}'", f"{consumer}.{loop_name}")
    fp = placement.apply()
    outer = [lo for lo in [*lp.enclosing_loops(target), target] if lo.parallel is not None]
    inner = [lo for n in placement.nests for lo in n.walk() if isinstance(lo, lp.ForOp) and lo.parallel is not None]
    if outer and inner:
        raise fail(
            where,
            f"compute_at {consumer}.{loop_name}: loop '{name(inner[0])}' of '{stage}' is parallel, and it would run "
            f"inside the parallel loop '{name(outer[-1])}' of '{consumer}'; only one loop of a nest can be "
            "distributed over the cores",
            consumer,
        )
    return localize(kernel, buf, fp, target, placement.prover)


@directive("compute_at")
def apply_compute_at(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    compute_at_loop(kernel, stage, get_str(d, "stage"), get_str(d, "loop"), where)


@directive("compute_root")
def apply_compute_root(kernel: func.FuncOp, stage: str, d: Mapping[str, Attribute], where: str) -> None:
    """Check that `stage` is computed in full, at the kernel's top level, before its readers."""
    nests = stage_nests(kernel, stage)
    if not nests:
        raise fail(where, f"no loops of stage '{stage}' in function @{kernel.sym_name.data}", stage)
    block = kernel.body.block
    for nest in nests:
        if nest.parent_block() is not block:
            outer = lp.enclosing_loops(nest)
            raise fail(where, f"compute_root: '{stage}' is computed inside loop '{name(outer[-1])}'", stage)
    buf = producer_buffer(kernel, stage, nests, where)
    ops = list(block.ops)
    last = max(ops.index(n) for n in nests)
    for use in buf.uses:
        op = use.operation
        if not isinstance(op, lp.LoadOp) or any(n.is_ancestor(op) for n in nests):
            continue
        top = child_of(block, op)
        if top is None or ops.index(top) < last:
            raise fail(where, f"compute_root: {_stage_text(op)} reads '{stage}' before it is computed", stage)


# ================================================================ fusing a stage's nests


def fuse_stage(kernel: func.FuncOp, stage: str) -> bool:
    """Compute every nest of `stage` but the last inside the outermost loop of the last
    (a generalized softmax: all per row block).  Tried on a clone first; False (and no
    change) if it would be refused or there is nothing to fuse."""
    return bool(fuse_stages(kernel, [stage]))


def _fuse(kernel: func.FuncOp, stage: str) -> lp.ForOp | None:
    """Fuse `stage`'s nests into its last; that nest, or None if there is nothing to fuse."""
    nests = stage_nests(kernel, stage)
    block = kernel.body.block
    if len(nests) < 2 or any(n.parent_block() is not block for n in nests):
        return None
    target = nests[-1]
    groups: list[tuple[SSAValue, list[lp.ForOp]]] = []
    for nest in reversed(nests[:-1]):
        stores = [op.memref for op in nest.walk() if isinstance(op, lp.StoreOp)]
        if not stores or any(s is not stores[0] for s in stores):
            return None
        if groups and groups[-1][0] is stores[0]:
            groups[-1][1].insert(0, nest)
        else:
            groups.append((stores[0], [nest]))
    if not groups:
        return None
    for buf, group in groups:
        placement = Placement(
            kernel, group, buf, target, "", f"'{value_name(buf)}'", f"{stage}.{name(target)}", collapse=True
        )
        fp = placement.apply()
        if isinstance(buf, OpResult) and isinstance(buf.op, lp.AllocOp):
            localize(kernel, buf, fp, target, placement.prover)
    # Only the target's nest changed: a parallel loop nested in another can only be there.
    for loop in target.walk():
        if isinstance(loop, lp.ForOp) and loop.parallel is not None:
            if any(o.parallel is not None for o in lp.enclosing_loops(loop)):
                raise DiagnosticError([])
    return target


def multi_nest_stages(kernel: func.FuncOp) -> list[str]:
    """Stages with several nests over the same loops as their last nest (a generalized softmax
    has four; a reduction's fill nest alone does not count)."""
    out: list[str] = []
    with _index_of(kernel) as index:
        for stage in index.stages():
            nests = stage_nests(kernel, stage)
            names = [[name(lo) for lo in nest_loops(n)] for n in nests]
            if sum(1 for n in names if n == names[-1]) >= 2:
                out.append(stage)
    return out


def fuse_stages(kernel: func.FuncOp, stages: Sequence[str] | None = None) -> list[str]:
    """`fuse_stage` for each of `stages` (default: every stage of `multi_nest_stages`); the
    stages fused.

    Each fusion is tried first on a probe, a clone of the kernel kept equal to it: a
    fusion that succeeds there and leaves the fused nest valid is repeated on the kernel;
    one that fails leaves the kernel as it is, and only then is the (possibly half
    changed) probe cloned afresh.  One clone for the whole kernel, not one per stage,
    keeps a document of many softmax stages linear.
    """
    todo = multi_nest_stages(kernel) if stages is None else list(stages)
    if not todo:
        return []
    fused: list[str] = []
    probe: ExitStack | None = None
    with _index_of(kernel):
        for stage in todo:
            if probe is None:
                probe = ExitStack()
                copy = kernel.clone()
                probe.enter_context(indexed(copy))
            try:
                nest = _fuse(copy, stage)
                if nest is None:
                    continue
                nest.verify()
            except Exception:  # an optimization: whatever would fail leaves the stage as it is
                probe.close()
                probe = None
                continue
            if _fuse(kernel, stage) is not None:
                fused.append(stage)
        if probe is not None:
            probe.close()
    return fused


@contextmanager
def _index_of(kernel: func.FuncOp) -> Iterator[NestIndex]:
    """The active `NestIndex` of `kernel`, or a new one for the duration."""
    active = active_index(kernel)
    if active is not None:
        yield active
        return
    with indexed(kernel) as index:
        yield index


# ================================================================ passes


def _run(module: ModuleOp, stage: str, fn: Callable[..., None], d: dict[str, Attribute], where: str) -> None:
    touched = [k for k in kernels(module) if stage_nests(k, stage)]
    if not touched:
        raise fail(where, f"no loops of stage '{stage}' in the module", stage)
    for kernel in touched:
        fn(kernel, stage, d, where)


@dataclass(frozen=True)
class ScheduleComputeAtPass(ModulePass):
    """Compute stage `stage` (a temporary) inside loop `loop` of stage `at`, per iteration, for
    the part of it read there (see `irkit.passes.schedule.compute_at`).  `loc`
    ("file:line:col") locates diagnostics."""

    name = "schedule-compute-at"
    stage: str = option(help="the temporary stage to compute inside another stage's loop")
    at: str = option(help="the stage that reads it")
    loop: str = option(help="the loop of `at` at which one tile of `stage` is computed per iteration")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        d = make_directive("compute_at", self.loc, stage=self.at, loop=self.loop)
        _run(op, self.stage, apply_compute_at, d, self.loc)


@dataclass(frozen=True)
class ScheduleComputeRootPass(ModulePass):
    """Check that stage `stage` is computed in full before the stages that read it."""

    name = "schedule-compute-root"
    stage: str = option(help="the temporary stage that must be computed in full first")
    loc: str = option("", help="where the directive was written ('file:line:col'), to locate diagnostics; apply-schedule sets it")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _run(op, self.stage, apply_compute_root, make_directive("compute_root", self.loc), self.loc)


@dataclass(frozen=True)
class ScheduleFuseStagePass(ModulePass):
    """Fuse the nests of `stage` (all stages with several nests if empty) at the outermost loop
    of its last nest, where legal (`fuse_stage`)."""

    name = "schedule-fuse-stage"
    stage: str = option("", help="the stage whose nests are fused; empty: every stage with several nests")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in kernels(op):
            if self.stage:
                fuse_stage(kernel, self.stage)
            else:
                fuse_stages(kernel)
