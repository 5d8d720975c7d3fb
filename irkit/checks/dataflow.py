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
   finds nothing written: a pack copy moved after the loop that reads it,
   two stages swapped, a register tile read before its initialisation.
2. **Window.**  When exactly one store precedes the load and it writes a box
   -- each index of it one loop variable of its own nest (step 1) plus a
   form over the loops it shares with the load -- the elements the load
   reads in that shared iteration must lie in the box, proved for every size
   and iteration as the bounds proof does (`irkit.checks.bounds`).  A
   compute_at tile copied over a shorter window than its consumer reads, an
   accumulator initialised over part of its block, are errors.

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
from irkit.checks.bounds import BoundsProver, StatementOf, _fault_loop, _origin, _show, _size_names, _statement
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
    inputs = {t.value for t in tensors if t.role == "input"}
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
        problem = _read_problem(kernel, load, stores.get(load.memref, []), prover, names)
        if problem is None:
            continue
        reported.add(load.memref)
        message, store = problem
        diags.append(_located(message, load, store, statement_of))
    return diags


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
    kernel: func.FuncOp, load: lp.LoadOp, stores: list[lp.StoreOp], prover: BoundsProver, names: dict
) -> tuple[str, lp.StoreOp | None] | None:
    buffer = _buffer_name(load.memref, names)
    shown = f"{buffer}[{', '.join(_show(i, names) for i in _forms(load))}]"
    before = [s for s in stores if _before(s, load)]
    if not before:
        why = "no store to it comes before this load" if stores else "nothing in the kernel writes it"
        return f"load from {shown} reads elements before they are written: {why}", (stores[0] if stores else None)
    after = [s for s in stores if _before(load, s)]
    if after:
        flows = _stores_fed_by(kernel, load)
        late = next((s for s in after if s not in flows), None)
        if late is not None:
            return (
                f"load from {shown} reads {buffer} before a later store writes it (with a value that does not come "
                "from this load): the stages run out of the order their dependences need"
            ), late
    if len(before) != 1:
        return None
    store = before[0]
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


def _stores_fed_by(kernel: func.FuncOp, load: lp.LoadOp) -> set[lp.StoreOp]:
    """The stores whose value comes from `load`'s, through the ops that use it and through the
    buffers it is stored in and loaded from again (a register tile read from C and written back)."""
    values: set[SSAValue] = {load.result}
    buffers: set[SSAValue] = set()
    fed: set[lp.StoreOp] = set()
    changed = True
    while changed:
        changed = False
        for op in kernel.walk():
            if isinstance(op, lp.StoreOp):
                if op.value in values and op not in fed:
                    fed.add(op)
                    buffers.add(op.memref)
                    changed = True
            elif isinstance(op, lp.LoadOp):
                if op.memref in buffers and op.result not in values:
                    values.add(op.result)
                    changed = True
            elif any(v in values for v in op.operands) and not all(r in values for r in op.results):
                values.update(op.results)
                changed = True
    return fed


def _write_box(store: lp.StoreOp, load: lp.LoadOp, prover: BoundsProver) -> list[tuple[list[Lin], list[Lin]]] | None:
    """Per index of `store`, the forms whose maximum is the first element it writes and whose
    minimum is one past the last, over the loops it shares with `load`; None when the store does
    not write a box (an index over several of its own loops, a step, a bound over its own loops),
    or one of its own loops may run no iteration."""
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


def _buffer_name(memref: SSAValue, names: dict) -> str:
    owner = memref.owner
    if isinstance(owner, lp.AllocOp | lp.LocalOp):
        return owner.tensor_name.data
    if memref in names:
        return names[memref]
    return memref.name_hint or "?"
