"""Dataflow of loop IR: every element a kernel reads from a buffer it writes was written before.

Inputs are the caller's; everything else a kernel reads -- temporaries
(`loop.alloc`: compute_at tiles, compute_root stages, packed copies),
register tiles (`loop.local`) and outputs it accumulates into -- must have
been written earlier in the same call.  For each `loop.load` of such a
buffer:

1. **Order.**  Some store to the buffer must come before the load in program
   order: in the innermost block holding both, the store's op comes first.
   A store that only follows it (the same loop nest, later in the block, or
   a loop around both) writes for a *later* iteration, so the first read
   finds nothing written: a pack copy moved after the loop that reads it, a
   consumer before its producer, a register tile read before its
   initialisation.
2. **Stage order.**  No store after the load may overwrite what it reads
   with a value that does not come from it (followed forward through SSA and
   buffers) when nothing reads the buffer after that store: that store wrote
   what this load should have read (nests of a stage swapped, the max read
   before the nest computing it).  Stores that provably write other elements
   in the same iteration (the other rows of a register block) are not in the
   way, and a store some later load reads starts a new use of the buffer (a
   pack refilled for the next stage).
3. **Window.**  When one store precedes the load, or the one that runs last
   before it (the innermost in the block it shares with the load, and there
   the latest) is the only update of what it writes among them (a reduction
   after its fill: the load must read the completed reduction; a register
   block and its tail are two updates, each of a part), and it writes a box -- each
   index of it one loop variable of its own nest (step 1) plus a form over
   the loops it shares with the load -- the elements the load reads in that
   shared iteration must lie in the box, proved for every size and iteration
   as the bounds proof does (`irkit.checks.bounds`).  A compute_at tile
   copied over a shorter window than its consumer reads, a reduction over
   part of the rows read, are errors.
4. **Copy-out.**  A register tile (`loop.local`) read once after all its
   stores (the copy back to the output) must read every element its last
   store writes: a copy-out over half the block drops the other half.

What the check cannot decide it does not report: a read covered only by
several stores together (an interior and its border), or written through a
linearised index (packs), is left to the order rule and to raising.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from irkit.affine.bounds import access_forms, lower_terms, upper_terms
from irkit.affine.linear import Lin, NotAffine
from irkit.checks.bounds import (
    BoundsProver,
    StatementOf,
    _buffer_name,
    _fault_loop,
    _origin,
    _show,
    _size_names,
    _statement,
)
from irkit.diagnostics import Diagnostic
from irkit.dialects import loop as lp
from irkit.kernel_abi import kernel_args


def check_dataflow(module: ModuleOp, statement_of: StatementOf | None = None) -> list[Diagnostic]:
    """`check_kernel_dataflow` for every loop-level kernel of the module."""
    diags: list[Diagnostic] = []
    for f in module.body.block.ops:
        if isinstance(f, func.FuncOp) and any(isinstance(o, lp.LoadOp) for o in f.walk()):
            diags.extend(check_kernel_dataflow(f, statement_of))
    return diags


def check_kernel_dataflow(kernel: func.FuncOp, statement_of: StatementOf | None = None) -> list[Diagnostic]:
    """An error for each buffer some load reads before it is written (one per buffer)."""
    _, tensors = kernel_args(kernel)
    inputs = {t.value for t in tensors if t.role in ("input", "inout")}  # hold values on entry
    stores: dict[SSAValue, list[lp.StoreOp]] = {}
    loads: list[lp.LoadOp] = []
    for op in kernel.walk():
        if isinstance(op, lp.StoreOp):
            stores.setdefault(op.memref, []).append(op)
        elif isinstance(op, lp.LoadOp) and op.memref not in inputs:
            loads.append(op)
    prover = BoundsProver(kernel)
    names = _size_names(kernel)
    reported: set[SSAValue] = set()
    diags: list[Diagnostic] = []
    for load in loads:
        if load.memref in reported:
            continue
        problem = _read_problem(kernel, load, stores.get(load.memref, []), loads, prover, names)
        if problem is None:
            continue
        reported.add(load.memref)
        message, store = problem
        diags.append(_located(message, load, store, statement_of))
    dropped: dict[object, tuple[Diagnostic, list[str]]] = {}  # one error per copy-out loop
    for memref, written in stores.items():  # register tiles: every result read back out
        if memref in reported or not isinstance(memref.owner, lp.LocalOp):
            continue
        problem = _unread_problem(memref, written, [ld for ld in loads if ld.memref is memref], prover, names)
        if problem is None:
            continue
        message, load, store = problem
        key = load.parent_op() or load
        if key in dropped:
            dropped[key][1].append(_buffer_name(memref, names))
            continue
        dropped[key] = (_located(message, load, store, statement_of), [])
    for diag, more in dropped.values():
        if more:
            diag.with_note(f"and the same for {', '.join(more)}")
        diags.append(diag)
    return diags


def _unread_problem(
    memref: SSAValue, stores: list[lp.StoreOp], loads: list[lp.LoadOp], prover: BoundsProver, names: dict
) -> tuple[str, lp.LoadOp, lp.StoreOp] | None:
    """A register tile whose last store writes elements the load after it (the copy out) never
    reads: results computed and dropped."""
    outs = [ld for ld in loads if all(_before(s, ld) for s in stores)]
    if len(outs) != 1:
        return None
    out = outs[0]
    last = _last_writers(stores, out)
    if len(last) != 1:
        return None
    written, read = _write_box(last[0], out, prover), _write_box(out, last[0], prover)
    if written is None or read is None:
        return None
    for d, ((w_lo, w_hi), (r_lo, r_hi)) in enumerate(zip(written, read)):
        try:
            covered = all(any(prover.nonneg(w - r) for w in w_lo) for r in r_lo) and all(
                any(prover.nonneg(r - w) for w in w_hi) for r in r_hi
            )
        except NotAffine:
            return None
        if covered:
            continue
        buffer = _buffer_name(memref, names)
        return (
            (
                f"load from {buffer}[{', '.join(_show(i, names) for i in _forms(out))}] copies out the window "
                f"[{_bound(r_lo, names, 'max')}, {_bound(r_hi, names, 'min')}) of index {d}, but the store before it "
                f"writes [{_bound(w_lo, names, 'max')}, {_bound(w_hi, names, 'min')}): results are dropped"
            ),
            out,
            last[0],
        )
    return None


def _located(message: str, load: lp.LoadOp, store: lp.StoreOp | None, statement_of: StatementOf | None) -> Diagnostic:
    """At the statement the load belongs to (else the directive of its loop), with a note at the
    directive that made the loop of the store involved."""
    statement = _statement(load, statement_of)
    where = statement or _origin(_fault_loop(load, None))
    diag = Diagnostic("error", message, *where[:3]) if where else Diagnostic("error", message, f"<{load.name}>")
    origin = _origin(_fault_loop(store, None)) if store is not None else None
    if origin is not None:
        diag.with_note(f"the store is in loop '{origin[3]}', made by this directive", origin[1], origin[2], origin[0])
    return diag


def _read_problem(
    kernel: func.FuncOp,
    load: lp.LoadOp,
    stores: list[lp.StoreOp],
    loads: list[lp.LoadOp],
    prover: BoundsProver,
    names: dict,
) -> tuple[str, lp.StoreOp | None] | None:
    buffer = _buffer_name(load.memref, names)
    shown = f"{buffer}[{', '.join(_show(i, names) for i in _forms(load))}]"
    before = [s for s in stores if _before(s, load)]
    if not before:
        why = "no store to it comes before this load" if stores else "nothing in the kernel writes it"
        return f"load from {shown} reads elements before they are written: {why}", (stores[0] if stores else None)
    after = [s for s in stores if _before(load, s) and not _disjoint(load, s, prover)]
    if after:
        flows = _stores_fed_by(kernel, load)
        readers = [ld for ld in loads if ld.memref is load.memref]
        # a later store that some load reads again starts a new use of the buffer (a pack reused by
        # the next stage); one nothing reads after it wrote what this load should have read
        late = next((s for s in after if s not in flows and not any(_before(s, ld) for ld in readers)), None)
        if late is not None:
            return (
                f"load from {shown} reads {buffer} before a later store writes it (with a value that does not come "
                "from this load): the stages run out of the order their dependences need"
            ), late
    before = [s for s in before if not _disjoint(load, s, prover)]  # another row of a block: not a writer of this
    if not before:
        return None
    last = _last_writers(before, load)
    if len(before) == 1:
        store = before[0]
    elif len(last) == 1 and [s for s in before if _updates(s)] == last:
        store = last[0]  # the one reduction after its fill: read only once it is complete
    else:  # several stores may each write part of what is read (a fill then the interior, a block then its tail)
        return None
    box = _write_box(store, load, prover)
    if box is None:
        return None
    try:
        reads = access_forms(load)
    except NotAffine:
        return None
    for d, (index, (lows, highs)) in enumerate(zip(reads, box)):
        try:
            inside = all(prover.nonneg(index - lo) for lo in lows) and all(
                prover.nonneg(hi - 1 - index) for hi in highs
            )
        except NotAffine:
            return None
        if inside:
            continue
        window = f"[{_bound(lows, names, 'max')}, {_bound(highs, names, 'min')})"
        return (
            f"load from {shown} may read elements that are not written: index {d} ({_show(index, names)}) can "
            f"leave the window {window} that the store before it writes"
        ), store
    return None


def _updates(store: lp.StoreOp) -> bool:
    """Is the store an update `X[f] = ... X[f] ...` (its value reads the element it writes)?"""
    try:
        index = access_forms(store)
    except NotAffine:
        return False
    seen: set[SSAValue] = set()
    todo = [store.value]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        if isinstance(owner, lp.LoadOp):
            if owner.memref is store.memref and _forms(owner) == index:
                return True
        elif isinstance(owner, Operation):
            todo.extend(owner.operands)
    return False


def _last_writers(stores: list[lp.StoreOp], load: lp.LoadOp) -> list[lp.StoreOp]:
    """Of the stores before `load`, those that run last before it: the ones whose block in common
    with the load is innermost, and there the latest (the reduction after its fill, the
    accumulation after the copy into a register tile)."""

    def place(store: lp.StoreOp) -> tuple[int, int]:
        chain = _ancestors(load)
        for op in _ancestors(store):
            block = op.parent_block()
            mine = next((x for x in chain if block is not None and x.parent_block() is block), None)
            if mine is not None and block is not None:
                return len(_ancestors(op)), block.get_operation_index(op)
        return 0, 0

    if not stores:
        return []
    places = {s: place(s) for s in stores}
    best = max(places.values())
    return [s for s in stores if places[s] == best]


def _disjoint(load: lp.LoadOp, store: lp.StoreOp, prover: BoundsProver) -> bool:
    """Do `load` and `store` touch different elements in every iteration of the loops around both
    (one index apart in a way the loops cannot close: row `ii` and row `ii + 1`)?"""
    try:
        reads, writes = access_forms(load), access_forms(store)
        return any(prover.nonneg(w - r - 1) or prover.nonneg(r - w - 1) for r, w in zip(reads, writes))
    except NotAffine:
        return False


def _stores_fed_by(kernel: func.FuncOp, load: lp.LoadOp) -> set[lp.StoreOp]:
    """The stores whose value comes from `load`'s, forward in program order: through the ops that
    use it, and through a buffer it is stored in and loaded from again after that store (a
    register tile read from C, accumulated and written back)."""
    values: set[SSAValue] = {load.result}
    fed: set[lp.StoreOp] = set()
    changed = True
    while changed:
        changed = False
        for op in kernel.walk():
            if isinstance(op, lp.StoreOp):
                if op.value in values and op not in fed:
                    fed.add(op)
                    changed = True
            elif isinstance(op, lp.LoadOp):
                if op.result not in values and any(s.memref is op.memref and _before(s, op) for s in fed):
                    values.add(op.result)
                    changed = True
            elif any(v in values for v in op.operands) and not all(r in values for r in op.results):
                values.update(op.results)
                changed = True
    return fed


def _write_box(
    store: lp.StoreOp | lp.LoadOp, load: lp.LoadOp | lp.StoreOp, prover: BoundsProver
) -> list[tuple[list[Lin], list[Lin]]] | None:
    """Per index of `store` (or of any access), the forms whose maximum is the first element it
    touches and whose minimum is one past the last, over the loops it shares with `load` (the
    other access); None when it does not touch a box (an index over several of its own loops, a
    step, a bound over its own loops), or one of its own loops may run no iteration."""
    own = [loop for loop in lp.enclosing_loops(store) if not loop.is_ancestor(load)]
    own_vars = {loop.induction_var: loop for loop in own}
    try:
        forms = access_forms(store)
    except NotAffine:
        return None
    used: set[SSAValue] = set()
    box: list[tuple[list[Lin], list[Lin]]] = []
    for form in forms:
        mine = [a for a in form.values() if isinstance(a, SSAValue) and a in own_vars]
        if not mine:
            box.append(([form], [form + 1]))
            continue
        if len(mine) != 1 or form.terms.get(mine[0]) != 1 or mine[0] in used:
            return None
        v = mine[0]
        loop = own_vars[v]
        lows, highs = lower_terms(loop), upper_terms(loop)
        if loop.step_value != 1 or any(a in own_vars for t in lows + highs for a in t.values()):
            return None
        used.add(v)
        rest = form.without(v)
        box.append(([t + rest for t in lows], [t + rest for t in highs]))
    for loop in own:  # a loop of the nest that indexes nothing must run, or nothing is written
        if loop.induction_var in used:
            continue
        try:
            if not all(prover.nonneg(u - 1 - lo) for u in upper_terms(loop) for lo in lower_terms(loop)):
                return None
        except NotAffine:
            return None
    return box


def _before(first: Operation, second: Operation) -> bool:
    """Does `first` come before `second` in the innermost block holding both (its op there
    earlier than `second`'s)?"""
    chain = _ancestors(second)
    for op in _ancestors(first):
        block = op.parent_block()
        if block is None:
            continue
        mine = next((x for x in chain if x.parent_block() is block), None)
        if mine is None:
            continue
        return mine is not op and block.get_operation_index(op) < block.get_operation_index(mine)
    return False


def _ancestors(op: Operation) -> list[Operation]:
    """`op` and the ops around it, innermost first."""
    out: list[Operation] = []
    cur: Operation | None = op
    while cur is not None:
        out.append(cur)
        cur = cur.parent_op()
    return out


def _forms(op: lp.LoadOp | lp.StoreOp) -> list[Lin]:
    try:
        return access_forms(op)
    except NotAffine:
        return []


def _bound(forms: list[Lin], names: dict, kind: str) -> str:
    shown = sorted({_show(f, names) for f in forms}, key=lambda t: (len(t), t))
    return shown[0] if len(shown) == 1 else f"{kind}({', '.join(shown)})"
