"""The loop tree the cost model reads a kernel into: buffers, their accesses, and loops.

`irkit.perf.reader` builds it from the loop IR, `irkit.perf.footprint` prices
its cache traffic and `irkit.perf.analysis` its per-nest terms; all sizes in
it are expressions (`irkit.perf.expr`) of the kernel's symbolic sizes.  The
names of the hardware's symbols the terms leave free are here too, so that
the reader can name loop variables clear of them.

Sums over loops whose bounds depend on outer loops (tiles with tails) use
the *first/last* rule (`total_over`): n iterations are n - 1 copies of the
first and one of the last.  It is exact for what the schedule passes produce
(only the last tile is partial), so flop counts match hand formulas exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irkit.perf import expr as ex
from irkit.perf.expr import Expr

# The hardware's numbers the terms leave symbolic (irkit.perf.runtime binds them for each
# description and cache level).
CAP = "cap"  # the capacity of the cache being priced, in lines
KEEP = "keep"  # its random-replacement capacity in lines (0: it replaces the least recently used line)
SETS = "sets"  # its number of sets (lines / ways): strided rows may crowd into a few of them
WAYS = "ways"  # its associativity: lines a set holds (all of them: crowding is a hard limit)
LINE = "line"  # the line size, bytes
LANES32 = "lanes32"  # f32 lanes of the hardware's vectors
LANES64 = "lanes64"
CORES = "cores"
WINDOW = "window"  # instructions the out-of-order core looks ahead (0: none; the description's `ooo_window`)
STREAMS = "streams"  # rows the prefetchers follow at once (the description's `dram { streams }`)
HUGE_PAGE = "huge_page"  # bytes of the pages large arrays get (transparent huge pages; else PAGE)


class ModelError(Exception):
    """The loop IR has something the model cannot price (said plainly, with the op)."""


@dataclass
class Buffer:
    name: str
    elem: int  # bytes
    shape: list[Expr]  # logical extents
    order: list[int]  # storage order, outermost first
    role: str  # input | output | temp
    local: bool = False  # a loop.local: registers or stack, never priced as cache traffic
    registers: bool = False  # a local the C backend keeps in vector registers (a register tile);
    # a local it cannot (a tail's variable trip count) is a stack array: its loads and stores are
    # L1 accesses, and an accumulator kept there is reloaded across the loops around it
    loaded: bool = False
    stored: bool = False

    def lines(self) -> Expr:
        total = ex.ONE
        for x in self.shape:
            total = total * x
        return ex.cdiv(total * self.elem, ex.sym(LINE))

    def bytes(self) -> Expr:
        total = ex.const(self.elem)
        for x in self.shape:
            total = total * x
        return total


@dataclass
class Access:
    buf: Buffer
    store: bool
    dims: list[tuple[dict[str, int], Expr] | None]  # per logical dim: loop-var coefficients, the rest
    owner: Loop | None = None
    hoisted: bool = False  # loop-invariant after gcc's complete unrolling: no instruction per iteration
    prefetched: bool = False  # a register block's fill the C backend prefetches an iteration ahead


@dataclass
class Loop:
    var: str
    name: str
    lb: Expr
    ub: Expr
    step: int
    parallel: bool
    vector: int | None
    loops: list[Loop] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)  # directly in the body
    ops: dict[str, int] = field(default_factory=dict)  # instruction kind -> count per iteration (direct)
    # ops in one arm of a select on an index comparison in a scalar loop (a branch): kind -> their
    # expected count an iteration (`irkit.perf.guards`); not in `ops`
    guarded: dict[str, Expr] = field(default_factory=dict)
    flops: int = 0  # per iteration (direct)
    chain: int = 0  # an accumulation into one location: dependent FP ops per step of its chain
    chain_kinds: dict[str, int] = field(default_factory=dict)  # those ops by latency class (add, fma, max ...)
    chain_expected: dict[str, Expr] | None = None  # the same through guarded selects, arms by their fractions
    chain_store: Access | None = None  # the accumulator's store
    carry: int = 0  # read-modify-writes the parent loop repeats: dependent FP ops from reload to store
    # a register tile's accumulation (a vector loop updating a local the backend keeps in registers):
    # its chain's ops by latency class; each run of the loop is one step of all its accumulators'
    # chains side by side, the next run (the reduction loop around) the next step
    tile_chain: dict[str, int] = field(default_factory=dict)
    # the bounds of a loop inside depend on this loop's variable alone (a `where` triangle, not a
    # tile's tail or a compute_at window): sums over it take the middle iteration, not the first
    shapes_inner: bool = False
    auto_vector: bool = False
    fold_left: bool = False  # gcc's in-order vector reduction: vector loads and ops, one scalar add a lane
    simd_entries: bool = False  # a vector loop gcc gets as `#pragma omp simd` with a runtime trip count
    streamed: set[str] = field(default_factory=set)  # buffers this (vector) loop stores with streaming stores
    parent: Loop | None = None
    stream_rows: dict[str, Expr | None] = field(default_factory=dict, repr=False, compare=False)  # `_stream_rows` by buffer

    def trips(self) -> Expr:
        return ex.max_(ex.ZERO, ex.cdiv(self.ub - self.lb, self.step))

    def core_trips(self) -> Expr:
        """Iterations one core runs: all, or its static share of a parallel loop."""
        n = self.trips()
        return ex.cdiv(n, ex.sym(CORES)) if self.parallel else n

    def walk(self):
        yield self
        for child in self.loops:
            yield from child.walk()


def total_over(loop: Loop, body: Expr, per_core: bool = True) -> Expr:
    """Sum of `body` (which may use the loop's variable) over the loop's iterations (first/last rule)."""
    n = loop.core_trips() if per_core else loop.trips()
    if loop.var not in body.free():
        return n * body
    if loop.shapes_inner:
        return _trapezoid(loop, body, n, per_core)
    first = ex.subs(body, {loop.var: loop.lb})
    last = ex.subs(body, {loop.var: loop.lb + (n - 1) * loop.step})
    return ex.max_(n - 1, 0) * first + ex.min_(n, 1) * last


def _trapezoid(loop: Loop, body: Expr, n: Expr, per_core: bool) -> Expr:
    """The sum of a body that grows or shrinks with the loop (a triangle's rows): the middle
    iteration's times the count.  A parallel loop's cores take equal, contiguous chunks (static
    schedule), so the slowest core runs the heavier end: the middle of the first or of the last
    chunk, whichever is larger."""
    total = loop.trips()

    def at(k: Expr) -> Expr:
        return ex.subs(body, {loop.var: loop.lb + k * loop.step})

    if not (per_core and loop.parallel):
        return n * at(ex.fdiv(total - 1, 2))
    first_chunk = at(ex.fdiv(n - 1, 2))
    last_chunk = at(ex.max_(total - n, 0) + ex.fdiv(n - 1, 2))
    return n * ex.max_(first_chunk, last_chunk)


def invariant(a: Access, iv: str) -> bool:
    """Does the access stay put as `iv` moves (every index known and free of it)?"""
    return all(dim is not None and not dim[0].get(iv) for dim in a.dims)


def unit_or_invariant(a: Access, iv: str) -> bool:
    """Does the access move with `iv` by single elements along its innermost storage dimension,
    or not at all (every index known)?  What vectorising a loop without gathers needs."""
    inner = a.buf.order[-1] if a.buf.order else 0
    for d, dim in enumerate(a.dims):
        if dim is None:
            return False
        k = dim[0].get(iv, 0)
        if k == 0:
            continue
        if d != inner or abs(k) != 1:
            return False
    return True
