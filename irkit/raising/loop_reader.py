"""Reading a loop-level kernel back into statements: what each store computes, over which domain.

This is the structural half of `raise-loop`.  It reads only what the IR
says -- loop bounds and steps, the schedule facts of loops (`parallel`,
`vector`, `unroll`), access maps, buffer allocations and the scalar ops of
bodies -- never the provenance attributes (`stage`, `origin`), which may
name or locate things but decide nothing.  Loop names are used only to
name the raised loops.

The patterns it undoes, and how it recognises them from structure:

- **split / tile**: a loop `T` of step `F > 1` whose variable is the lower
  bound of an inner loop that runs `[T, min(T + F, ...))`: the inner loop
  walks the same dimension, the tile `T` only bounds it.  Nested splits
  chain (`jo` step 512 > `jr` step 16 > `jv`).  An inner window that does
  not match its tile's step (gaps or overlaps) is reported.
- **point loops** (step 1) are the dimensions of a statement: the loops
  whose variables appear in its (resolved) indices.  A dimension's extent is
  its upper bound with the tile terms removed: `min(yo + 32, H)` is `H`.
- **compute_at**: a producer's loops nested in a consumer's loop, writing a
  temporary allocated inside that loop at indices relative to the tile
  (`bx[y - yo, x - xo]`).  Each temporary's *origin* is read off its stores
  (index = own point loops - origin) and added back to every access, so
  `bx[yi - yo + 1, xi - xo]` reads `bx[yi + 1, xi]` of the whole tensor.
- **reductions**: a store of `combine(load of the same element, value)`
  where some dimension does not index the stored element.

Register tiles of `unroll_jam` (`loop.local`), jammed copies, the tails of
register blocks and packed copies (`pack`) are undone before this reading
(`unjam`, `unpack`); met here they are a clear error, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Operation, SSAValue

from irkit.affine.linear import Div, Lin, try_lin_of
from irkit.affine.printer import DESIGN_TEXT
from irkit.dialects import loop as lp
from irkit.kernel_abi import kernel_args
from irkit.raising.linear import map_results, provably_at_most


class RaiseError(Exception):
    """The loop IR has a construct raising cannot undo (or is inconsistent); `op` locates it, and
    `stage` names the document's stage it concerns when there is one (to locate it there)."""

    def __init__(self, message: str, op: Operation | None = None, stage: str | None = None):
        super().__init__(message)
        self.op = op
        self.stage = stage


@dataclass
class LoopFacts:
    """One loop of the IR, as raising sees it."""

    op: lp.ForOp
    name: str
    step: int
    lower: list[Lin]
    upper: list[Lin]
    parallel: bool
    vector: int | None
    unroll: int | None
    parent: LoopFacts | None

    @property
    def var(self) -> SSAValue:
        return self.op.induction_var


@dataclass
class Buffer:
    """A tensor of the kernel (argument) or a temporary (`loop.alloc`)."""

    name: str
    value: SSAValue
    rank: int
    temp: bool
    alloc: lp.AllocOp | None = None
    origin: list[Lin] | None = None  # added to every access (tile-relative temporaries)
    shape: list[Lin | None] | None = None  # its extents over the size arguments


@dataclass
class Dim:
    """A dimension of a statement: a point loop and the tile loops that split it, outermost first."""

    var: SSAValue
    name: str
    extent: Lin  # over the size arguments
    chain: list[LoopFacts]  # tile loops then the point loop


@dataclass
class Access:
    buffer: Buffer
    index: list[Lin]  # over the statement's dimension variables (and sizes)
    op: Operation


@dataclass
class Write:
    """One store op of the kernel, raised: `buffer[index] (=|combine=) body(loads)` over `dims`."""

    buffer: Buffer
    store: lp.StoreOp
    dims: list[Dim]
    index: list[Lin]
    loads: list[Access]
    combiner: str | None  # "add", "max", ... when the store accumulates into the element it reads
    accumulator: lp.LoadOp | None  # a load of the element being stored (the generic's output argument)
    body: list[Operation]  # the scalar ops from the loads to the stored value, in order
    constant: Operation | None  # the stored value when it is a constant (a fill)
    loops: list[LoopFacts]  # every loop enclosing the store, outermost first
    where: list[Lin] = field(default_factory=list)  # the domain's constraints, each `form >= 0`

    @property
    def repeat(self) -> LoopFacts | None:
        """The time loop around the store (`repeat T`): a loop whose variable nothing uses, so
        that its iterations run the same statements again; None when there is none."""
        steps = [f for f in self.loops if not f.op.induction_var.uses]
        if not steps:
            return None
        if len(steps) > 1:
            raise RaiseError(
                f"cannot raise the store to '{self.buffer.name}': it is inside {len(steps)} loops whose variables "
                f"nothing uses ({', '.join(f.name for f in steps)}); one repeat is all a document writes",
                self.store,
            )
        return steps[0]

    @property
    def reductions(self) -> list[Dim]:
        used = set().union(*(set(i.terms) for i in self.index)) if self.index else set()
        return [d for d in self.dims if d.var not in used]


COMBINERS = {"arith.addf": "add", "arith.addi": "add", "arith.maximumf": "max", "arith.minimumf": "min",
             "arith.mulf": "mul", "arith.maxsi": "max", "arith.minsi": "min", "arith.muli": "mul"}  # fmt: skip


@dataclass
class KernelReading:
    """Everything `raise-loop` needs from one kernel function."""

    kernel: func.FuncOp
    sizes: dict[SSAValue, str]
    buffers: dict[SSAValue, Buffer]
    writes: list[Write] = field(default_factory=list)
    loops: dict[lp.ForOp, LoopFacts] = field(default_factory=dict)
    owner: dict[lp.ForOp, SSAValue] = field(default_factory=dict)  # the buffer of the last store inside

    def names(self) -> dict[SSAValue, str]:
        """Names of sizes and loop variables, for text."""
        out = dict(self.sizes)
        for facts in self.loops.values():
            out[facts.var] = facts.name
        return out


def read_kernel(kernel: func.FuncOp) -> KernelReading:
    """Read every store of `kernel` into a `Write`; raises `RaiseError` on what cannot be raised."""
    sizes, tensors = kernel_args(kernel)
    reading = KernelReading(kernel, {s.value: s.name for s in sizes}, {})
    for t in tensors:
        reading.buffers[t.value] = Buffer(t.name, t.value, len(t.memref.get_shape()), temp=False)
        reading.buffers[t.value].shape = [try_lin_of(r, [], [s.value for s in sizes]) for r in t.shape.results]
    for op in kernel.body.walk():
        if isinstance(op, lp.LocalOp):
            raise RaiseError(
                f"cannot raise register tile '{op.tensor_name.data}' (loop.local, from unroll_jam): "
                "raising register tiles is not built yet",
                op,
            )
        if isinstance(op, lp.AllocOp):
            reading.buffers[op.results[0]] = Buffer(
                op.tensor_name.data, op.results[0], len(op.results[0].type.get_shape()), temp=True, alloc=op,
                shape=[try_lin_of(r, [], list(op.sizes)) for r in op.shape.data.results],
            )  # fmt: skip
        if isinstance(op, lp.ForOp):
            reading.loops[op] = _loop_facts(op, reading)
    for loop_op in reading.loops:
        last = None
        for op in loop_op.walk():
            if isinstance(op, lp.StoreOp):
                last = op.memref
        if last is not None:
            reading.owner[loop_op] = last
    for buf in reading.buffers.values():
        if buf.temp:
            buf.origin = _origin(buf, reading)
    for op in kernel.body.walk():
        if isinstance(op, lp.StoreOp):
            reading.writes.append(_write(op, reading))
    return reading


# ---- loops -----------------------------------------------------------------


def _loop_facts(op: lp.ForOp, reading: KernelReading) -> LoopFacts:
    lower = map_results(op.lower.data, list(op.lower_operands))
    upper = map_results(op.upper.data, list(op.upper_operands))
    name = op.loop_name.data
    if any(x is None for x in lower) or any(x is None for x in upper):
        raise RaiseError(f"cannot raise loop '{name}': its bounds are not linear (a tail of a register block?)", op)
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, lp.ForOp):
        parent = parent.parent_op()
    return LoopFacts(
        op,
        name,
        op.step_value,
        lower,  # type: ignore[arg-type]
        upper,  # type: ignore[arg-type]
        op.parallel is not None,
        op.vector.value.data if op.vector is not None else None,
        op.unroll.value.data if op.unroll is not None else None,
        reading.loops.get(parent) if isinstance(parent, lp.ForOp) else None,
    )


def enclosing(op: Operation, reading: KernelReading) -> list[LoopFacts]:
    """The loops around `op`, outermost first."""
    return [reading.loops[f] for f in lp.enclosing_loops(op)]


def _over_sizes(form: Lin, size_vars: set) -> bool:
    """Is `form` an expression of the sizes only?  A floordiv or mod of sizes counts: a strided
    convolution's output extent is `(H + 2p - r) floordiv s + 1`."""
    return all(_over_sizes(v.arg, size_vars) if isinstance(v, Div) else v in size_vars for v in set(form.terms))


def extent_of(
    facts: LoopFacts,
    reading: KernelReading,
    dimension: Lin | None = None,
    also: list[Lin] | None = None,
    where: list[Lin] | None = None,
) -> tuple[Lin, list[LoopFacts]]:
    """The extent of the dimension a point (or tile) loop walks, over the sizes, and the loops of
    its own stage that split it (outermost first, ending with `facts`).

    The lower bound is 0, or an enclosing loop's variable `T`:
    - `T` of the same stage with step `F` (a split): the loop must run the window
      `[T, T + F)`, and the dimension is `T`'s;
    - `T` of another stage (compute_at): the loop runs a window of the producer's
      dimension, whose extent is the size-only upper bound, or `T`'s extent widened
      by the window.
    """
    size_vars = set(reading.sizes)
    lowers = _distinct(facts.lower)
    moved = [f for f in lowers if f != Lin() and _over_sizes(f, size_vars)] if Lin() in lowers else []
    if where is not None and moved and len(lowers) == len(moved) + 1:  # a tile loop of `i >= 1`: its tiles
        where += moved  # start there (`max(0, 1)`), and so does the dimension: `point - f >= 0`, f kept here
        lowers = [Lin()]
    if len(lowers) != 1:
        raise RaiseError(f"cannot raise loop '{facts.name}': its lower bound is a maximum", facts.op)
    lower = lowers[0]
    sized = [u for u in facts.upper if _over_sizes(u, size_vars)]
    if dimension is not None and dimension in sized and also:  # a tile loop of a `where`-bounded point loop:
        sized = [u for u in sized if u not in also]  # its bound by the `where` is the point loop's too
    free = _tightest(sized)
    if lower == Lin():
        if len(free) != 1:
            raise RaiseError(f"cannot raise loop '{facts.name}': no single size-only upper bound", facts.op)
        return free[0], [facts]
    if lower.is_const:  # a loop of the whole dimension that does not start at its start
        what = (
            f"elements [0, {lower.const}) of its dimension are skipped"
            if lower.const > 0
            else (f"it runs {-lower.const} before its dimension starts")
        )
        raise RaiseError(f"loop '{facts.name}' starts at {lower.const}, not 0: {what}", facts.op)
    outer = _var_loop(lower, reading)
    if outer is None:
        shifted = _var_loop(Lin(lower.terms), reading)  # a window's start, shifted
        if shifted is not None and lower.const:
            raise RaiseError(
                f"loop '{facts.name}' starts at {DESIGN_TEXT.lin_text(lower, reading.names())}, not at the start of "
                f"'{shifted.name}''s window: {abs(lower.const)} element(s) of every window are "
                + ("skipped" if lower.const > 0 else "run twice or before the dimension"),
                facts.op,
            )
        raise RaiseError(f"cannot raise loop '{facts.name}': lower bound is not 0 or an outer loop", facts.op)
    outer_extent, outer_chain = extent_of(outer, reading, dimension, also, where)
    windows = [(u - lower).const for u in facts.upper if not set((u - lower).terms)]
    width = min(windows) if windows else None
    if reading.owner.get(outer.op) is reading.owner.get(facts.op):  # a split of this stage's dimension
        if width != outer.step:
            got = width if width is not None else "an unbounded window"
            raise RaiseError(
                f"loop '{facts.name}' runs {got} iterations from tile loop '{outer.name}', whose step is "
                f"{outer.step}: the split leaves gaps or overlaps",
                facts.op,
            )
        if not free and not _whole_blocks(outer_extent, outer.step, reading):
            extent = DESIGN_TEXT.lin_text(outer_extent, reading.names())
            raise RaiseError(
                f"loop '{facts.name}' runs a whole window of {width} from tile loop '{outer.name}' with no bound at "
                f"{extent}: where {extent} is not a multiple of {outer.step}, the last tile runs past it (the split's "
                "tail is lost)",
                facts.op,
            )
        if len(free) > 1 or (free and free[0] != outer_extent):
            raise RaiseError(
                f"loop '{facts.name}' is bounded by {DESIGN_TEXT.lin_text(free[0], reading.names())}, its tile loop "
                f"'{outer.name}' by {DESIGN_TEXT.lin_text(outer_extent, reading.names())}",
                facts.op,
            )
        return outer_extent, outer_chain + [facts]
    if len(free) == 1:  # compute_at: the producer's whole dimension bounds the window
        return free[0], [facts]
    if width is None:
        raise RaiseError(f"cannot raise loop '{facts.name}': its window has no constant width", facts.op)
    return outer_extent + Lin({}, width - outer.step), [facts]


def _whole_blocks(extent: Lin, step: int, reading: KernelReading) -> bool:
    """Is `extent` a multiple of `step` at every size the document allows (its `assume` divisors)?"""
    from irkit.affine.prove import multiple_of
    from irkit.passes.schedule.helpers import divisors

    return multiple_of(extent, step, divisors(reading.kernel))


def _tightest(bounds: list[Lin]) -> list[Lin]:
    """The size-only upper bounds without those provably no tighter than another: a fused stage's
    rows run to `min(M, 11*ceildiv(M + 10, 11), ...)` when its consumer's tiles round up, which is `M`."""
    out: list[Lin] = []
    for k, b in enumerate(bounds):
        if any(j != k and provably_at_most(a, b) and (j < k or not provably_at_most(b, a))
               for j, a in enumerate(bounds)):  # fmt: skip
            continue
        out.append(b)
    return out


def _var_loop(form: Lin, reading: KernelReading) -> LoopFacts | None:
    if form.const != 0 or len(form.terms) != 1:
        return None
    ((var, coeff),) = form.terms.items()
    if coeff != 1:
        return None
    for facts in reading.loops.values():
        if facts.var is var:
            return facts
    return None


# ---- temporaries relative to a tile ----------------------------------------


def _origin(buf: Buffer, reading: KernelReading) -> list[Lin]:
    """The offset of a temporary's indices from the whole tensor's, per dimension.

    A temporary allocated inside loops holds one tile; its stores index it as
    `own point loops - origin`, the origin made of tile loops and loops around
    the allocation.  Every store must agree; a temporary written nowhere, or
    at an index with no point loop of its own, has origin 0.
    """
    zero = [Lin() for _ in range(buf.rank)]
    if buf.alloc is None:
        return zero
    found: list[Lin] | None = None
    for use in buf.value.uses:
        st = use.operation
        if not isinstance(st, lp.StoreOp) or st.memref is not buf.value:
            continue
        index = map_results(st.map.data, list(st.indices))
        if any(i is None for i in index):
            raise RaiseError(f"cannot raise the store to '{buf.name}': its index is not linear", st)
        origin = []
        for i in index:
            assert i is not None
            own = [v for v in set(i.terms) if _is_own_point(v, buf, reading)]
            origin.append(i.only(*own) - i.only(*i.terms))  # constants are offsets, not the tile
        if found is None:
            found = origin
        elif found != origin:
            raise RaiseError(f"stores to temporary '{buf.name}' disagree on which tile they hold", st)
    if found is None and any(isinstance(u.operation, lp.LoadOp) for u in buf.value.uses):
        raise RaiseError(
            f"the generated code reads temporary '{buf.name}' but never writes it (a stage was dropped?)",
            buf.alloc,
            stage=buf.name,
        )
    if found is not None:
        found = _contracted(buf, found, reading)
    if found is not None and any(o.terms or o.const for o in found):
        for o, i in zip(found, range(buf.rank)):
            if any(abs(c) != 1 for c in o.terms.values()):
                raise RaiseError(
                    f"cannot raise temporary '{buf.name}': dimension {i} is written at a scaled index "
                    "(a packed copy?); raising packs is not built yet",
                    buf.alloc,
                )
    return found if found is not None else zero


def _contracted(buf: Buffer, origin: list[Lin], reading: KernelReading) -> list[Lin]:
    """A dimension of extent 1 that every access indexes by a constant holds one element per
    iteration of the innermost step-1 loop around all the accesses (a per-row maximum of an
    unscheduled softmax): that loop's variable is its origin."""
    assert buf.alloc is not None
    shape = buf.alloc.shape.data.results
    accesses = [u.operation for u in buf.value.uses if isinstance(u.operation, lp.LoadOp | lp.StoreOp)]
    indices = [map_results(a.map.data, list(a.indices)) for a in accesses]
    common: list[LoopFacts] | None = None
    for a in accesses:
        loops = enclosing(a, reading)
        common = loops if common is None else [x for x, y in zip(common, loops) if x is y]
    rows = [f for f in (common or []) if f.step == 1]
    out = list(origin)
    for d in range(buf.rank):
        if origin[d].terms or not rows or str(shape[d]) != "1":
            continue
        if all(index[d] is not None and not index[d].terms for index in indices):  # type: ignore[union-attr]
            out[d] = Lin.of(rows[-1].var)
    return out


def _is_own_point(var: SSAValue, buf: Buffer, reading: KernelReading) -> bool:
    """A step-1 loop of the temporary's own stage (its last store inside is to the temporary):
    the loops of a consumer around it, even step-1 ones, give the tile's origin."""
    for facts in reading.loops.values():
        if facts.var is var:
            return facts.step == 1 and reading.owner.get(facts.op) is buf.value
    return False


def check_tiles(reading: KernelReading) -> None:
    """Every element a consumer reads from a tile-sized temporary must be computed in its tile
    (raises `RaiseError` naming the stage when one is not)."""
    from irkit.raising.coverage import first_uncomputed

    tiled = {b.value for b in reading.buffers.values() if b.temp and b.origin and any(o.terms for o in b.origin)}
    tiles = {v for b in reading.buffers.values() if b.value in tiled for o in b.origin or [] for v in o.terms}
    found = first_uncomputed(reading.kernel, tiled, reading.sizes, tiles)  # type: ignore[arg-type]
    if found is None:
        return
    at = ", ".join(str(i) for i in found.index)
    sizes = ", ".join(f"{k}={v}" for k, v in found.sizes.items())
    raise RaiseError(
        f"the fused stage '{found.buffer}' does not compute all its consumer reads: at {sizes}, a tile reads "
        f"element [{at}] of its {found.buffer} tile, which that tile's loops never write (a window too small?)",
        found.load,
        stage=found.buffer,
    )


# ---- stores ----------------------------------------------------------------


def _resolved(buf: Buffer, amap, operands, op: Operation) -> list[Lin]:
    index = map_results(amap, operands)
    if any(i is None for i in index):
        raise RaiseError(f"cannot raise an access to '{buf.name}': its index is not linear", op)
    origin = buf.origin or [Lin() for _ in index]
    return [i + o for i, o in zip(index, origin)]  # type: ignore[operator]


def _write(st: lp.StoreOp, reading: KernelReading) -> Write:
    buf = reading.buffers.get(st.memref)
    if buf is None:
        raise RaiseError("cannot raise a store to a buffer that is neither a tensor nor a temporary", st)
    loops = enclosing(st, reading)
    index = _resolved(buf, st.map.data, list(st.indices), st)
    body, loads, constant = _value_tree(st.value, st, reading)
    accumulator, combiner = None, None
    for a in loads:  # a read of the element being stored is the body's output argument
        if a.buffer is buf and a.index == index and isinstance(a.op, lp.LoadOp):
            accumulator = a.op
            break
    value_op = st.value.owner
    if accumulator is not None and isinstance(value_op, Operation) and value_op.name in COMBINERS:
        if any(operand.owner is accumulator for operand in value_op.operands):
            combiner = COMBINERS[value_op.name]
    used: set[SSAValue] = set()
    for i in index:
        used |= set(i.terms)
    for a in loads:
        for i in a.index:
            used |= set(i.terms)
    dims: list[Dim] = []
    where: list[Lin] = []
    for facts in loops:
        if facts.step != 1 or facts.var not in used:
            continue
        dimension = _dimension(facts.var, buf, index, loads)
        box, constraints, also = _split_domain(facts, used - set(reading.sizes), dimension, reading)
        where += constraints
        starts: list[Lin] = []
        extent, chain = extent_of(box, reading, dimension, also, starts)
        where += [Lin.of(facts.var) - f for f in starts]
        dims.append(Dim(facts.var, facts.name, extent, chain[:-1] + [facts]))
    stray = used - {d.var for d in dims} - set(reading.sizes)
    if stray:
        names = reading.names()
        raise RaiseError(
            f"cannot raise the store to '{buf.name}': its indices use loop variables that are not "
            f"point loops ({', '.join(sorted(names.get(v, '?') for v in stray))})",
            st,
        )
    return Write(buf, st, dims, index, loads, combiner, accumulator, body, constant, loops, where)


def _dimension(var: SSAValue, buf: Buffer, index: list[Lin], loads: list[Access]) -> Lin | None:
    """The extent of the tensor dimension `var` indexes on its own (the stored element's first,
    then a read's), over the sizes; None if it indexes none (or only a tile-relative temporary)."""
    for b, idx in [(buf, index)] + [(a.buffer, a.index) for a in loads]:
        if b.origin is not None or b.shape is None:
            continue
        for pos, form in enumerate(idx):
            if form == Lin.of(var) and b.shape[pos] is not None:
                return b.shape[pos]
    return None


def _split_domain(
    facts: LoopFacts, points: set[SSAValue], dimension: Lin | None, reading: KernelReading
) -> tuple[LoopFacts, list[Lin], list[Lin]]:
    """A point loop's bounds that are a `where` of the statement (each as `form >= 0`), the loop's
    facts without them (its box, as `extent_of` reads it), and the size-only upper bounds moved.

    A `where` bound is one that names another point loop (`j < i + 1`), or, beside the box's own
    bound, a constant or a form of the sizes: a lower bound in a maximum with 0 (`max(0, 1)` of
    `i >= 1`), an upper bound in a minimum with the extent of the dimension the loop indexes
    (`min(N, N - 1)` of `i <= N - 2`).  Upper bounds provably at or above that extent are no
    constraint (a fused stage's rounded-up rows) and stay in the box."""
    others = points - {facts.var}
    size_vars = set(reading.sizes)
    var = Lin.of(facts.var)

    def names_other(form: Lin) -> bool:
        return any(v in others for v in form.atoms())

    lower = _distinct([f for f in facts.lower if not names_other(f)]) or [Lin()]
    upper = [f for f in facts.upper if not names_other(f)]
    constraints = [var - f for f in facts.lower if names_other(f)]
    constraints += [f - var - 1 for f in facts.upper if names_other(f)]
    if len(lower) > 1 and Lin() in lower:
        moved = [f for f in lower if f != Lin() and _over_sizes(f, size_vars)]
        constraints += [var - f for f in moved]
        lower = [f for f in lower if f not in moved]
    also: list[Lin] = []
    if dimension is not None and dimension in upper:
        also = [f for f in upper if f != dimension and _over_sizes(f, size_vars) and not provably_at_most(dimension, f)]
        constraints += [f - var - 1 for f in also]
        upper = [f for f in upper if f not in also]
    if not constraints:
        return facts, [], []
    if not any(_over_sizes(f, size_vars) for f in upper) and dimension is not None:
        # every upper bound names another loop (`k < i + 1`, the `min(N, ...)` simplified away under a
        # compute_at): the loop runs inside the dimension it indexes (the loop-level bounds check
        # proves every access in bounds), which is the box the constraints cut
        upper = [dimension, *upper]
    box = LoopFacts(facts.op, facts.name, facts.step, lower, upper, facts.parallel, facts.vector, facts.unroll,
                    facts.parent)  # fmt: skip
    return box, constraints, also


def _distinct(forms: list[Lin]) -> list[Lin]:
    out: list[Lin] = []
    for f in forms:
        if f not in out:
            out.append(f)
    return out


def _value_tree(
    value: SSAValue, st: lp.StoreOp, reading: KernelReading
) -> tuple[list[Operation], list[Access], Operation | None]:
    """The scalar ops computing `value` (in program order) and the loads they read."""
    seen: set[Operation] = set()
    ops: list[Operation] = []
    loads: list[Access] = []

    # An explicit stack: a statement may sum thousands of terms (the order is restored by sorting).
    stack: list[SSAValue] = [value]
    while stack:
        owner = stack.pop().owner
        if not isinstance(owner, Operation) or owner in seen:
            continue
        seen.add(owner)
        if isinstance(owner, lp.LoadOp):
            buf = reading.buffers.get(owner.memref)
            if buf is None:
                raise RaiseError("cannot raise a load from a buffer that is neither a tensor nor a temporary", owner)
            loads.append(Access(buf, _resolved(buf, owner.map.data, list(owner.indices), owner), owner))
            continue
        if isinstance(owner, lp.ForOp):
            raise RaiseError("cannot raise a value computed by a loop", owner)
        stack.extend(owner.operands)
        ops.append(owner)

    ops.sort(key=lambda o: _position(o))
    loads.sort(key=lambda a: _position(a.op))
    constant = value.owner if isinstance(value.owner, arith.ConstantOp) else None
    if constant is not None and not isinstance(constant.value, FloatAttr | IntegerAttr):
        constant = None
    return ops, loads, constant


def _position(op: Operation) -> tuple[int, ...]:
    """Program order of ops in one kernel: the path of block positions from the function."""
    path: list[int] = []
    cur: Operation | None = op
    while cur is not None and not isinstance(cur, func.FuncOp):
        block = cur.parent_block()
        if block is None:
            break
        path.append(block.get_operation_index(cur))
        cur = block.parent_op()
    return tuple(reversed(path))
