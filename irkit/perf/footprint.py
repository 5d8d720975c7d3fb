"""Footprints and cache traffic of a loop nest: lines moved into a cache of `cap` lines.

The traffic model is the classic reuse analysis of affine accesses, at
cache-line granularity (so layout and strides matter): the data a loop
touches (its footprint: per buffer a box of indices, in lines of the
storage order) either fits in the cache -- then it is loaded once per
execution of the loop -- or it does not, and then each iteration of the
loop reloads what its body needs except what the previous iteration left
behind (data the body reads that does not move with the loop variable,
or the overlap of a stencil), provided one iteration's footprint fits.

Traffic is one expression with the capacity (and the cache's sets, ways and
line) left symbolic, so the runtime evaluates it for each level of whatever
hardware it is given.  docs/perf-model.md states the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from irkit.perf import expr as ex
from irkit.perf.expr import Expr
from irkit.perf.loop_tree import CAP, HUGE_PAGE, KEEP, LINE, SETS, STREAMS, WAYS, Access, Buffer, Loop, total_over
from irkit.perf.runtime import CONFLICT_SHARES

LINE_BYTES_MIN = 64  # the shortest line of the hosts irkit models (x86: 64 B)
PAGE = 4096  # bytes of a page: the part of an address that is the same virtually and physically

# numpy asks the kernel for huge pages for the arrays it allocates of at least 4 MiB (its own
# threshold): the inputs and outputs a kernel is called with
NUMPY_HUGE_MIN = 4 << 20


def _spans(root: Loop, include_root: bool) -> dict[str, Expr]:
    """For every loop var inside `root`: how far it moves during one execution of `root`
    (or of one iteration, when include_root is False), taking inner bounds at their first
    (full) iterations."""
    spans: dict[str, Expr] = {}
    env: dict[str, Expr] = {}

    def visit(loop: Loop, is_root: bool) -> None:
        lb = ex.subs(loop.lb, env)
        n = ex.subs(loop.core_trips(), env)
        if not is_root or include_root:
            spans[loop.var] = ex.max_(ex.ZERO, (n - 1) * loop.step)
        env[loop.var] = representative(loop, lb, env)
        for child in loop.loops:
            visit(child, False)
        del env[loop.var]

    visit(root, True)
    return spans


def representative(loop: Loop, lb: Expr, env: dict[str, Expr]) -> Expr:
    """The iteration of `loop` the loops inside it are sized at: the first (a tile's full
    iterations), or the middle one when it shapes a triangle (its rows grow or shrink with it,
    and the first row is the smallest or the largest)."""
    if not loop.shapes_inner:
        return lb
    return lb + ex.fdiv(ex.subs(loop.trips(), env) - 1, 2) * loop.step


def _accesses_under(root: Loop) -> list[Access]:
    return [a for loop in root.walk() for a in loop.accesses if not a.buf.local]


def _group_key(a: Access) -> tuple:
    key = []
    for dim in a.dims:
        key.append(None if dim is None else tuple(sorted(dim[0].items())))
    return (id(a.buf), tuple(key))


@dataclass
class Box:
    buf: Buffer
    widths: list[Expr]
    stored: bool
    coeffs: list[dict[str, int] | None]
    present: Expr = ex.ONE  # 1 if any of its accesses runs (its loops below the root have iterations), else 0
    # how its loads get their lines: "prefetched" (register-block fills the backend prefetches), "waited",
    # or "none" (a box of stores only: a dense stream of store misses fills the store buffer and
    # waits as loads do); and the share of its lines the window waits for (`waited` traffic): none
    # of a prefetched block's, or, where a block's fill and a tail's unprefetched fill of the same
    # rows are one box, as much as the tail runs
    loads: str = "waited"
    waited: Expr = ex.ONE


def boxes(root: Loop, include_root: bool) -> list[Box]:
    """The index boxes the loop's accesses touch, one per buffer and access pattern."""
    spans = _spans(root, include_root)
    groups: dict[tuple, list[Access]] = {}
    for a in _accesses_under(root):
        groups.setdefault(_group_key(a), []).append(a)
    out: list[Box] = []
    for members in groups.values():
        a0 = members[0]
        widths: list[Expr] = []
        for d, dim in enumerate(a0.dims):
            extent = a0.buf.shape[d]
            if dim is None:
                widths.append(extent)
                continue
            w = ex.ONE
            for v, k in dim[0].items():
                if v in spans:
                    w = w + abs(k) * spans[v]
            rests = [m.dims[d][1] for m in members]  # type: ignore[index]
            offsets = [r - rests[0] for r in rests]
            if all(o.is_const for o in offsets):
                vals = [o.value for o in offsets]
                w = w + (max(vals) - min(vals))  # type: ignore[operator]
            elif len(members) > 1:
                w = extent
            widths.append(w if w is ex.ONE else ex.min_(w, extent))  # a single index: extents are >= 1
        present = ex.max_(*[_runs(m, root) for m in members]) if len(members) > 1 else _runs(a0, root)
        kind = _loads_kind(members)
        out.append(
            Box(
                a0.buf,
                widths,
                any(m.store for m in members),
                [None if dd is None else dd[0] for dd in a0.dims],
                present,
                kind,
                ex.ZERO if kind == "prefetched" else ex.ONE,
            )
        )
    return _merge_same(out, spans)


def _merge_same(out: list[Box], spans: dict[str, Expr]) -> list[Box]:
    """One box for the accesses of sibling loops that cover the same elements (softmax's passes
    over a row: each pass's `j` is its own variable, so their groups differ, but the boxes have
    the same widths and move with the same outer variables): counting each would move the row
    once per pass."""
    merged: dict[tuple, Box] = {}
    for b in out:
        outer = tuple(
            None if c is None else tuple(sorted((v, k) for v, k in c.items() if v not in spans)) for c in b.coeffs
        )
        if any(c is None for c in b.coeffs):
            merged[(id(b), None)] = b
            continue
        key = (id(b.buf), tuple(ex.to_text(w) for w in b.widths), outer)
        seen = merged.get(key)
        if seen is None:
            merged[key] = b
            continue
        merged[key] = Box(
            b.buf, b.widths, b.stored or seen.stored, seen.coeffs, ex.max_(seen.present, b.present),
            *_merged_loads(b, seen),
        )  # fmt: skip
    return list(merged.values())


def _loads_kind(members: list[Access]) -> str:
    """How a box's loads get their lines (`Box.loads`): prefetched when every load among its
    accesses is a prefetched fill (its stores write the block back to the lines the fill brought)."""
    loads = [m for m in members if not m.store]
    if not loads:
        return "none"
    return "prefetched" if all(m.prefetched for m in loads) else "waited"


def _merged_loads(a: Box, b: Box) -> tuple[str, Expr]:
    """The `loads` and `waited` of one box made of two (`_merge_same`).  A prefetched block's box
    keeps its stores (the block written back to the lines its fill brought) unwaited, and waits for
    the lines of a waited part only as much as that part runs: a column tail's unprefetched fill
    of the same rows does not run at a size the tiles divide."""
    kinds = {a.loads, b.loads}
    kind = "waited" if "waited" in kinds else "prefetched" if "prefetched" in kinds else "none"
    if "prefetched" not in kinds:
        return kind, ex.max_(a.waited, b.waited)
    parts = [x.waited * x.present for x in (a, b) if x.loads == "waited"]
    return kind, ex.ZERO if not parts else parts[0] if len(parts) == 1 else ex.max_(*parts)


def _runs(a: Access, root: Loop) -> Expr:
    """1 if every loop between the access and `root` has an iteration (the loops around each taken
    at their first iteration, as `_spans` does), else 0: the tails of tiles and register blocks
    are often empty at a given size."""
    path: list[Loop] = []
    node = a.owner
    while node is not None and node is not root:
        path.append(node)
        node = node.parent
    if node is not root:
        return ex.ONE
    env: dict[str, Expr] = {root.var: root.lb}  # the root at its first iteration
    present = ex.ONE
    for loop in reversed(path):
        trips = ex.subs(loop.trips(), env)
        if trips.is_const:
            if trips.value == 0:
                return ex.ZERO
        else:
            present = present * ex.min_(ex.ONE, trips)
        env[loop.var] = ex.subs(loop.lb, env)
    return present


def _run_lines(elements: Expr, elem: int, fractional: bool) -> Expr:
    """Lines a run of contiguous elements touches: whole lines from an aligned start; or, for
    differences between boxes, the expected count 1 + (n - 1) x elem / line (0 for no elements)."""
    line = ex.sym(LINE)
    if not fractional:
        return ex.cdiv(elements * elem, line)
    return ex.le(elements, 0, 0, 1 + ex.rdiv((elements - 1) * elem, line))


def box_lines(box: Box, widths: list[Expr] | None = None, fractional: bool = False) -> Expr:
    """Cache lines of the box in the buffer's storage order (a full innermost row merges with the next);
    none when no access of the box runs (all of them in loops of no iterations: a tail the sizes
    leave empty)."""
    lines = _box_lines(box, widths, fractional)
    return lines if box.present is ex.ONE else lines * box.present


def _box_lines(box: Box, widths: list[Expr] | None, fractional: bool) -> Expr:
    buf = box.buf
    ws = box.widths if widths is None else widths
    order = buf.order or list(range(len(ws)))
    if not order:
        return ex.ONE
    inner = order[-1]
    outer = ex.ONE
    for d in order[:-1]:
        outer = outer * ws[d]
    plain = _run_lines(ws[inner], buf.elem, fractional) * outer
    if len(order) < 2:
        return plain
    nxt = order[-2]
    rest = ex.ONE
    for d in order[:-2]:
        rest = rest * ws[d]
    merged = _run_lines(ws[inner] * ws[nxt], buf.elem, fractional) * rest
    return ex.le(buf.shape[inner], ws[inner], merged, plain)


def crowded_lines(box: Box) -> Expr:
    """The box's lines as the cache sees them when its rows crowd into few sets.

    Rows of a strided box start `stride` bytes apart; with a stride that shares a
    large power of two with the cache's set span (sets x line), they all map to a few
    sets, and only `ways` lines a set can stay -- all of them, not the share of the
    cache the model counts on elsewhere.  The box then needs as much of the capacity
    as (lines per reached set / ways) of it: a column of a 4 KiB-strided matrix longer
    than the ways does not fit an 8-way L1 however short it is, a column of 8 lines
    does.  A box of whole rows is contiguous: no crowding.
    Only caches whose sets span at most a page are affected (see below)."""
    buf = box.buf
    order = buf.order or list(range(len(box.widths)))
    lines = box_lines(box)
    if len(order) < 2:
        return lines
    inner = order[-1]
    rows = ex.ONE
    for d in order[:-1]:
        rows = rows * box.widths[d]
    line, sets = ex.sym(LINE), ex.sym(SETS)
    span = sets * line
    row_sets = _row_sets(buf)
    reach = ex.max_(ex.ONE, ex.min_(sets, ex.cdiv(box.widths[inner] * buf.elem, line) * ex.min_(rows, row_sets)))
    # In the sets it reaches the box needs lines / reach of their `ways` each.  A set is a hard
    # limit, not a share: within the ways, the box needs just its lines (8 rows of a 4 KiB-strided
    # matrix in one set of an 8-way cache stay); beyond them it cannot stay at all, which counts
    # as `cap` x lines / (reach x ways) of the capacity: more than all of it.
    crowded = ex.le(lines, reach * ex.sym(WAYS), lines, ex.rdiv(lines * ex.sym(CAP), reach * ex.sym(WAYS)))
    # Only a cache whose sets span at most a page (L1: virtually indexed) sees the stride as
    # written; beyond a page, physical pages land anywhere and strided rows spread out.
    crowded = ex.le(span, page_bytes(buf), crowded, lines)
    return ex.le(buf.shape[inner], box.widths[inner], lines, crowded)


def page_bytes(buf: Buffer) -> Expr:
    """The pages `buf` lives on: huge pages (the description's `huge_page`, where the host gives
    them) for an input or output numpy allocates with at least NUMPY_HUGE_MIN bytes, else 4 KiB
    (irkit's temporaries come from malloc: huge pages only where the host gives them to all).
    Within a page, addresses keep their low bits physically: a cache whose sets span at most a
    page sees a power-of-two stride crowd its rows into few sets."""
    if buf.role == "temp" or buf.local:
        return ex.const(PAGE)
    return ex.le(buf.bytes(), NUMPY_HUGE_MIN - 1, PAGE, ex.max_(PAGE, ex.sym(HUGE_PAGE)))


def _row_sets(buf: Buffer) -> Expr:
    """Sets (of `sets` x `line`) that rows of `buf` a row stride apart start in: a stride that
    shares the set span's power of two keeps them in few sets."""
    order = buf.order or list(range(len(buf.shape)))
    line, span = ex.sym(LINE), ex.sym(SETS) * ex.sym(LINE)
    stride = buf.shape[order[-1]] * buf.elem
    return ex.fdiv(span, ex.max_(ex.gcd(stride, span), line))


def column_sets(buf: Buffer) -> Expr:
    """How many sets of a cache the rows of a column of `buf` reach; all of them for a cache
    whose sets span more than a page (physical pages land anywhere)."""
    order = buf.order or list(range(len(buf.shape)))
    if len(order) < 2:
        return ex.sym(SETS)
    return ex.le(ex.sym(SETS) * ex.sym(LINE), page_bytes(buf), _row_sets(buf), ex.sym(SETS))


def _weight(buf: Buffer, select: str, rows: Expr | None = None) -> Expr:
    """A line's weight in a traffic figure: 1, or for `serial` (strided misses that queue on
    the sets they share) 1 / the sets a column of the buffer reaches, less the share of the
    column those sets' ways keep (`conflict_share` of the rows over the ways).  `rows`: the rows
    the column walk cycles through before it comes back to a line (a tile's height; default the
    buffer's)."""
    if select != "serial":
        return ex.ONE
    reach = column_sets(buf)
    if rows is None:
        order = buf.order or list(range(len(buf.shape)))
        rows = ex.ONE
        for d in order[:-1]:
            rows = rows * buf.shape[d]
    return ex.rdiv(ex.ONE, reach) * conflict_share(ex.rdiv(rows, ex.sym(WAYS) * reach))


def conflict_share(cycled: Expr) -> Expr:
    """The share of a column walk's accesses that miss when it cycles `cycled` x the ways of the
    sets it reaches: none at 1 x, the measured `conflict_share_<n>` at 2, 4 and 8 x, all from
    16 x; linear in between (irkit.perf.runtime.CONFLICT_SHARES)."""
    s2, s4, s8 = (ex.sym(key) for key in CONFLICT_SHARES)
    points = [(1, ex.ZERO), (2, s2), (4, s4), (8, s8), (16, ex.ONE)]
    share: Expr = ex.ONE
    for (x0, y0), (x1, y1) in reversed(list(zip(points, points[1:]))):
        share = ex.le(cycled, x1, y0 + (y1 - y0) * ex.rdiv(cycled - x0, x1 - x0), share)
    return ex.le(cycled, 1, ex.ZERO, share)


def fit_footprint(root: Loop, include_root: bool) -> Expr:
    """The footprint a fit test compares with the capacity (crowding counted)."""
    total = ex.ZERO
    for b in boxes(root, include_root):
        total = total + ex.min_(crowded_lines(b), ex.rdiv(b.buf.lines() * ex.sym(CAP), ex.sym(WAYS)))
    return total


def _box_selected(b: Box, select: str, loop: Loop | None = None) -> bool:
    """Which boxes a traffic figure counts: all; the stored ones (their write-backs); or the
    strided ones -- a column, one element wide, spanning rows or moving across them with
    `loop`: every line is its own miss (`serial` weighs them by `_weight`)."""
    if select == "stored":
        return b.stored
    if select == "untracked":
        return True  # weighed by `_untracked`
    if select == "waited":
        return not b.waited.is_const or b.waited.value != 0  # weighed by `waited`
    if select in ("strided", "serial"):
        order = b.buf.order or list(range(len(b.widths)))
        inner = b.widths[order[-1]]
        # a column, or a band at most half a line wide (a tile's edge, min(8, N - io)): each
        # row's piece is a line of its own
        widest = _const_bound(inner, b.buf)
        if widest is None or widest * b.buf.elem * 2 > LINE_BYTES_MIN:
            return False
        row = b.buf.shape[order[-1]]
        if widest > 1 and row.is_const and row.value * b.buf.elem < LINE_BYTES_MIN:
            return False  # rows shorter than a line share lines (a 3 x 3 filter): not a band
        if any(not (b.widths[d].is_const and b.widths[d].value == 1) for d in order[:-1]):
            return True
        moving = loop is not None and any(c is not None and c.get(loop.var) for c in b.coeffs)
        return moving and not (b.coeffs[order[-1]] or {}).get(loop.var if loop else "", 0)
    return True


def _const_bound(e: Expr, buf: Buffer) -> float | None:
    """The width `e` of a box of `buf` when the sizes are large and the loops at their first
    iteration -- a tile's edge `min(8, N - io)` is 8 -- if that is a constant, else None (the
    width grows with a size)."""
    if e.is_const:
        return e.value  # type: ignore[return-value]
    sizes: set[str] = set()
    for extent in buf.shape:
        sizes |= extent.free()
    big = ex.const(1 << 40)
    value = ex.subs(e, {name: big if name in sizes else ex.ZERO for name in e.free()})
    if not value.is_const or value.value >= 1 << 39:  # type: ignore[operator]
        return None
    return value.value  # type: ignore[return-value]


def _access_selected(a: Access, loop: Loop, select: str) -> bool:
    if select == "waited":
        return not a.prefetched
    if select == "untracked":
        return False  # an innermost loop's own stream, or a column walk (priced by its misses)
    if select == "stored":
        return a.store
    if select in ("strided", "serial"):
        order = a.buf.order or list(range(len(a.dims)))
        moves = [d for d, dim in enumerate(a.dims) if dim is not None and dim[0].get(loop.var)]
        return bool(moves) and order[-1] not in moves
    return True


def _walked_rows(a: Access, loop: Loop) -> Expr:
    """The rows an access walks down in one run of `loop` (which moves it across rows): the
    loop's trips times its coefficient in the row dimension it moves."""
    order = a.buf.order or list(range(len(a.dims)))
    rows = ex.ONE
    for d, dim in enumerate(a.dims):
        if d == order[-1] or dim is None:
            continue
        k = abs(dim[0].get(loop.var, 0))
        if k:
            rows = rows * ex.min_(loop.trips() * (k * loop.step), a.buf.shape[d])
    return rows


def _walked_box_rows(b: Box, loop: Loop) -> Expr | None:
    """The rows a box of one iteration walks down over a run of `loop`: its own rows plus the
    loop's trips times its shift across rows; None (the buffer's rows) if the loop does not move
    it across rows (a loop along a row: the lines it comes back to compete with the rest of the
    column's, as a narrow tile's rows with the next tile's, measured on 8 x 8 transposes)."""
    order = b.buf.order or list(range(len(b.widths)))
    rows = ex.ONE
    moved = False
    for d in order[:-1]:
        k = abs((b.coeffs[d] or {}).get(loop.var, 0)) if b.coeffs[d] is not None else 0
        if k:
            moved = True
            rows = rows * ex.min_(b.widths[d] + ex.max_(loop.trips() - 1, 0) * (k * loop.step), b.buf.shape[d])
        else:
            rows = rows * b.widths[d]
    return rows if moved else None


def _untracked(root: Loop, b: Box) -> Expr:
    """1 when the lines `root`'s steps bring of box `b` come on no prefetch stream, else 0.

    A hardware prefetcher follows a stream that goes on where it left off, and only so many at
    once.  Measured on the Zen 4 guest (64 MiB read from DRAM by one core): a sequential pass
    33.6 GB/s; row segments of 4 to 128 lines the walk jumps between (`split j by W`, `reorder
    jo, i, ji`) 11-12 GB/s whatever their length; 8 or 16 rows read side by side, each going
    on, 20-22 GB/s, 32 and more 11-12.5 GB/s.  So a box's new lines are untracked when `root`
    moves it across rows and its rows are narrower than the buffer's (each row a jump), or when
    the loop that sweeps it along its rows reads more rows at once than `streams`.  A column
    walk (a strided box) is priced by its misses instead, and an output written with streaming
    stores needs no prefetching."""
    order = b.buf.order or list(range(len(b.widths)))
    if len(order) < 2 or _box_selected(b, "strided", root):
        return ex.ZERO
    if b.stored and any(b.buf.name in loop.streamed for loop in root.walk()):
        return ex.ZERO  # streaming stores: written line by line through write-combining, no prefetch
    inner = order[-1]
    across = any(b.coeffs[d] is not None and b.coeffs[d].get(root.var) for d in order[:-1])  # type: ignore[union-attr]
    jumped = ex.le(b.buf.shape[inner], b.widths[inner], ex.ZERO, ex.ONE) if across else ex.ZERO
    rows = _stream_rows(root, b.buf)
    crowded = ex.ZERO if rows is None else ex.le(rows, ex.sym(STREAMS), ex.ZERO, ex.ONE)
    return ex.max_(jumped, crowded)


def _stream_rows(root: Loop, buf: Buffer) -> Expr | None:
    """The rows of `buf` read side by side by the outermost loop at or under `root` that moves
    along them (the rows of one iteration's box); None if no loop does."""
    if buf.name not in root.stream_rows:
        root.stream_rows[buf.name] = _find_stream_rows(root, buf)
    return root.stream_rows[buf.name]


def _find_stream_rows(root: Loop, buf: Buffer) -> Expr | None:
    order = buf.order or list(range(len(buf.shape)))
    inner = order[-1]
    for loop in root.walk():
        for bb in boxes(loop, False):
            if bb.buf is not buf or bb.coeffs[inner] is None or not bb.coeffs[inner].get(loop.var):
                continue
            rows = ex.ONE
            for d in order[:-1]:
                rows = rows * bb.widths[d]
            # rows as wide as the buffer's follow one another: one stream
            return _at_first(loop, ex.le(buf.shape[inner], bb.widths[inner], ex.ONE, rows))
    return None


def _at_first(loop: Loop, e: Expr) -> Expr:
    """`e` at the first iteration of `loop` and of every loop around it (a tile's rows
    `min(M, io + 8) - io` are 8)."""
    node: Loop | None = loop
    while node is not None:
        if node.var in e.free():
            e = ex.subs(e, {node.var: representative(node, node.lb, {})})
        node = node.parent
    return e


def footprint(root: Loop, include_root: bool = True, select: str = "all", only: frozenset[str] | None = None) -> Expr:
    total = ex.ZERO
    for b in boxes(root, include_root):
        if not _box_selected(b, select) or (only is not None and b.buf.name not in only):
            continue
        weight = b.waited if select == "waited" else _weight(b.buf, select)
        total = total + ex.min_(box_lines(b), b.buf.lines()) * weight
    return total


def _delta(root: Loop, b: Box) -> Expr:
    """New lines per step of the root's variable, for a box of one iteration: the slab the
    box moves into (along the innermost storage dimension, a fraction of a line per element)."""
    moved = [d for d, c in enumerate(b.coeffs) if c is not None and c.get(root.var)]
    if not moved:
        if any(c is None for c in b.coeffs):
            return box_lines(b, fractional=True)
        return ex.ZERO
    order = b.buf.order or list(range(len(b.widths)))
    inner = order[-1]
    total = ex.ZERO
    for d in moved:
        shift = abs(b.coeffs[d][root.var]) * root.step  # type: ignore[index]
        others = ex.ONE
        for o in order[:-1]:
            if o != d:
                others = others * b.widths[o]
        run = _run_lines(b.widths[inner], b.buf.elem, True)
        if d == inner:
            total = total + others * ex.min_(run, ex.rdiv(shift * b.buf.elem, ex.sym(LINE)))
        else:
            total = total + others * ex.min_(b.widths[d], shift) * run
    return total


def _step_lines(a: Access, loop: Loop) -> Expr:
    """New lines one access touches per iteration of `loop`, with no reuse beyond the line:
    a fraction of a line when it moves along the innermost storage dimension."""
    order = a.buf.order or list(range(len(a.dims)))
    inner = order[-1] if order else 0
    step = ex.ZERO
    for d, dim in enumerate(a.dims):
        if dim is None:
            return ex.ONE
        k = dim[0].get(loop.var, 0)
        if not k:
            continue
        if d != inner:
            return ex.ONE
        step = ex.min_(ex.ONE, ex.rdiv(abs(k) * loop.step * a.buf.elem, ex.sym(LINE)))
    return step


def traffic(root: Loop, select: str = "all", only: frozenset[str] | None = None) -> Expr:
    """Lines moved into a cache of `cap` lines by one execution of `root` (outer vars free), of
    the boxes `select` picks (see `_box_selected`), of the buffers named in `only` (default all).

    Stores count like loads here; the caller adds their write-back.  Whether a footprint fits is
    the share of it the cache keeps (`runtime.fits`): a step at `cap`, or gradual past `keep`."""
    # untracked lines: only those a loop's steps bring in (a kernel a level holds whole is read once)
    whole = ex.ZERO if select == "untracked" else footprint(root, True, select, only)
    all_whole = fit_footprint(root, True)
    body_boxes = boxes(root, False)
    body_fit = fit_footprint(root, False)
    body_all = ex.ZERO
    reuse = ex.ZERO
    n = root.core_trips()
    for b in body_boxes:
        lines = ex.min_(box_lines(b), b.buf.lines())
        body_all = body_all + lines
        if not _box_selected(b, select, root) or (only is not None and b.buf.name not in only):
            continue
        if select == "untracked":
            weight = _untracked(root, b)
        else:
            weight = b.waited if select == "waited" else _weight(b.buf, select, _walked_box_rows(b, root) if select == "serial" else None)
        reuse = reuse + (lines + ex.max_(n - 1, 0) * ex.min_(lines, _delta(root, b))) * weight
    per_iter = ex.ZERO
    for child in root.loops:
        per_iter = per_iter + traffic(child, select, only)
    first = ex.ZERO
    for a in root.accesses:
        if only is not None and a.buf.name not in only:
            continue
        if not a.buf.local and _access_selected(a, root, select):
            weight = _weight(a.buf, select, _walked_rows(a, root) if select == "serial" else None)
            per_iter = per_iter + _step_lines(a, root) * weight
            first = first + weight
    nofit = total_over(root, per_iter) + first
    cap, keep = ex.sym(CAP), ex.sym(KEEP)
    return ex.fits(all_whole, cap, keep, whole, ex.fits(body_fit, cap, keep, reuse, nofit))
