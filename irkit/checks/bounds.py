"""Proved bounds: every load and store of loop IR stays inside its buffer, at every size.

For each `loop.load` / `loop.store` and each index of it, the check proves
`0 <= index <= extent - 1` for all sizes the document allows (every size at
least 1, and a multiple of its divisor under `assume { M % 16 == 0 }`) and
every iteration of the loops around the access.  The loops' variables are
eliminated innermost first by their bounds (a loop runs from the largest of
its lower bound's results to below the smallest of its upper bound's, so
tails `min(io + 16, M)`, register blocks `min(io + 91, M - 5)` and packs'
`ceildiv` counts are all taken as they are written), with the step known:
a loop whose range is a whole number of steps, `jr` from `jo` to `jo + 512`
by 16, ends at `jo + 496`, not `jo + 511`.  What remains is a form over the
sizes, proved non-negative when every coefficient is and its value at the
sizes' least values is (`irkit.affine.prove`).

Inputs, outputs (their shapes from the kernel's argument attributes),
temporaries (`loop.alloc`'s shape map), packed copies and register tiles
(`loop.local`'s static shape) are checked alike.  The proof is sound, not
complete: an access it cannot prove is reported, at the statement the access
came from, or at the directive that made the innermost loop bounding it,
with the largest (or smallest) index the loops allow, so a person sees what
went wrong.  Every kernel irkit generates passes it (the tests prove the
examples and random schedules).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation, SSAValue

from irkit.affine.bounds import access_forms, lower_terms, upper_terms
from irkit.affine.linear import Div, Lin, NotAffine, lin_of, split_floordiv
from irkit.affine.prove import Prover, Ranges, multiple_of
from irkit.diagnostics import Diagnostic
from irkit.dialects import loop as lp
from irkit.kernel_abi import kernel_args

# Terms kept while eliminating a kernel's loops: a deep register-blocked nest with tails
# multiplies the bound terms of every loop it crosses.
BOUNDS_TERMS = 256
MAX_SHOWN = 3  # terms of a min/max a message shows


class StepRanges(Ranges):
    """`Ranges` over every loop, knowing that a loop whose range is a whole number of its
    steps (sizes taken with their `assume` divisors) ends one step below its upper bound."""

    max_terms = BOUNDS_TERMS

    def __init__(self, divisors: Mapping[SSAValue, int]):
        super().__init__(None)
        self.divisors = divisors

    def last(self, loop: lp.ForOp) -> list[Lin]:
        step = loop.step_value
        lowers = lower_terms(loop)
        out: list[Lin] = []
        for u in upper_terms(loop):
            whole = step > 1 and len(lowers) == 1 and multiple_of(u - lowers[0], step, self.divisors)
            out.append(u - step if whole else u - 1)
        return out


class BoundsProver(Prover):
    """`Prover` knowing the sizes' least values (their `assume` divisors), the loops' steps and
    divisions of sizes; `nonneg` lets `NotAffine` out (too many bound terms), so that the caller
    can say the proof gave up rather than that it failed."""

    def __init__(self, kernel: func.FuncOp):
        from irkit.passes.schedule.helpers import divisors

        super().__init__(kernel)
        self.divisors = divisors(kernel)
        self.least = {s: max(1, self.divisors.get(s, 1)) for s in self.sizes}
        self.ranges = StepRanges(self.divisors)

    def sure(self, form: Lin) -> bool:
        """Non-negative at every value of the sizes: coefficients >= 0, value at their least >= 0,
        once each division of sizes is replaced by the side of its bounds that makes the form
        smaller (`q * (x floordiv q)` lies in [x - q + 1, x], `q * (x ceildiv q)` in
        [x, x + q - 1], `x mod q` in [0, q - 1]; the form scaled by q to stay integral)."""
        div = next((a for a in form.terms if isinstance(a, Div)), None)
        if div is not None:
            return self.sure(_without_div(form, div))
        total = form.const
        for atom, k in form.terms.items():
            if k < 0 or not (isinstance(atom, SSAValue) and atom in self.least):
                return False
            total += k * self.least[atom]
        return total >= 0

    def nonneg(self, form: Lin) -> bool:
        if self.sure(form):
            return True
        return any(self.sure(t) for t in self.ranges.lo(form))

    def reach(self, form: Lin, low: bool) -> list[Lin]:
        """What `form` can reach over the loops (its least values if `low`, else its greatest)."""
        return self.ranges.lo(form) if low else self.ranges.hi(form)


def _without_div(form: Lin, atom: Div) -> Lin:
    """A form no larger than `form` (times `atom.by` for a division), without `atom`."""
    k, q, x = form.terms[atom], atom.by, atom.arg
    rest = form.without(atom)
    if atom.kind == "mod":
        return rest + (0 if k > 0 else k * (q - 1))
    if atom.kind == "floordiv":
        low = x - (q - 1) if k > 0 else x
    else:  # ceildiv
        low = x if k > 0 else x + (q - 1)
    return rest.scale(q) + low.scale(k)


def buffer_extents(kernel: func.FuncOp) -> dict[SSAValue, list[Lin]]:
    """Each buffer's extents as forms over the kernel's sizes: arguments, temporaries, locals."""
    sizes, tensors = kernel_args(kernel)
    size_values = [s.value for s in sizes]
    out: dict[SSAValue, list[Lin]] = {}
    for t in tensors:
        out[t.value] = [lin_of(r, [], size_values) for r in t.shape.results]
    for op in kernel.walk():
        if isinstance(op, lp.AllocOp):
            try:
                out[op.result] = [lin_of(r, [], list(op.sizes)) for r in op.shape.data.results]
            except NotAffine:
                continue
        elif isinstance(op, lp.LocalOp):
            out[op.result] = [Lin(const=n) for n in op.result.type.get_shape()]  # type: ignore[attr-defined]
    return out


# A stage's statement in the document, as (file, line, col); None if unknown.
StatementOf = Callable[[str], "tuple[str, int, int] | None"]


def check_kernel_bounds(kernel: func.FuncOp, statement_of: StatementOf | None = None) -> list[Diagnostic]:
    """An error for each loop whose bounds let accesses out of their buffers: the first such
    access in the message, the others in a note (one screen for one wrong bound).
    `statement_of` finds the document line of a stage's statement (for loop IR read without
    locations)."""
    extents = buffer_extents(kernel)
    prover = BoundsProver(kernel)
    names = _size_names(kernel)
    first: dict[object, Diagnostic] = {}
    others: dict[object, list[str]] = {}
    for op in kernel.walk():
        if not isinstance(op, lp.LoadOp | lp.StoreOp):
            continue
        problem = _access_problem(op, extents, prover, names)
        if problem is None:
            continue
        message, index = problem
        loop = _fault_loop(op, index)
        key = loop if loop is not None else op
        if key in first:
            others[key].append(message.split(" may be ")[0].split(":")[0])
            continue
        first[key] = _locate(message, op, loop, statement_of)
        others[key] = []
    for key, diag in first.items():
        if others[key]:
            more = others[key]
            diag.with_note(
                f"and {len(more)} more access{'es' if len(more) > 1 else ''} in the same loop: {', '.join(more)}"
            )
    return list(first.values())


def check_bounds(module: ModuleOp, statement_of: StatementOf | None = None) -> list[Diagnostic]:
    """`check_kernel_bounds` for every loop-level kernel of the module."""
    diags: list[Diagnostic] = []
    for f in module.body.block.ops:
        if isinstance(f, func.FuncOp) and any(isinstance(o, lp.LoadOp | lp.StoreOp) for o in f.walk()):
            diags.extend(check_kernel_bounds(f, statement_of))
    return diags


def _access_problem(
    op: lp.LoadOp | lp.StoreOp, extents: dict[SSAValue, list[Lin]], prover: BoundsProver, names: dict
) -> tuple[str, Lin | None] | None:
    """What is wrong with the access (and the index at fault), or None when it is proved."""
    what = "load from" if isinstance(op, lp.LoadOp) else "store to"
    buffer = _buffer_name(op.memref, names)
    shape = extents.get(op.memref)
    if shape is None:
        return (
            f"{what} '{buffer}': its extents are not known (not a kernel argument, loop.alloc or loop.local), "
            "so the access cannot be proved inside it"
        ), None
    try:
        indices = access_forms(op)
    except NotAffine as exc:
        return f"{what} '{buffer}': an index is not affine ({exc}), so it cannot be proved inside the buffer", None
    shown = ", ".join(_show(i, names) for i in indices)
    for d, (index, extent) in enumerate(zip(indices, shape)):
        try:
            low_ok = prover.nonneg(index)
            high_ok = prover.nonneg(extent - 1 - index)
            if not (low_ok and high_ok):  # again with the multiples pulled out of each division:
                # `(x - 15 * (x floordiv 15)) floordiv 3` is `(x floordiv 3) - 5 * (x floordiv 15)`
                split = lin_of(op.map.data.results[d], list(op.indices), div=split_floordiv)
                low_ok = low_ok or prover.nonneg(split)
                high_ok = high_ok or prover.nonneg(extent - 1 - split)
        except NotAffine:
            return (
                f"{what} {buffer}[{shown}]: index {d} has too many bound terms through its loops, so it "
                "cannot be proved inside the buffer"
            ), index
        if low_ok and high_ok:
            continue
        if not low_ok:
            reach = _extreme(prover, index, True, names)
            return (
                f"{what} {buffer}[{shown}] may be out of bounds: index {d} ({_show(index, names)}) can be "
                f"{reach}, below 0, for some sizes the document allows"
            ), index
        reach = _extreme(prover, index, False, names)
        return (
            f"{what} {buffer}[{shown}] may be out of bounds: index {d} ({_show(index, names)}) can reach "
            f"{reach}, past its last element {_show(extent - 1, names)}, for some sizes the document allows"
        ), index
    return None


def _extreme(prover: BoundsProver, index: Lin, low: bool, names: dict) -> str:
    try:
        terms = prover.reach(index, low)
    except NotAffine:
        return "a value the proof could not bound"
    kept = prover.prune(terms, low)
    shown = sorted({_show(t, names) for t in kept}, key=lambda t: (len(t), t))[:MAX_SHOWN]
    if len(shown) == 1:
        return shown[0]
    more = ", ..." if len(kept) > MAX_SHOWN else ""
    return ("max(" if low else "min(") + ", ".join(shown) + more + ")"


def _show(form: Lin, names: dict) -> str:
    """The form as text: sizes and tensors by `names`, loop variables by their loop's name."""
    from irkit.kernel_abi import value_name

    parts: list[str] = []
    for atom, k in form.terms.items():
        name = names.get(atom) if isinstance(atom, SSAValue) else None
        if name is None:
            name = (
                value_name(atom) if isinstance(atom, SSAValue) else f"({_show(atom.arg, names)} {atom.kind} {atom.by})"
            )
        coeff = "" if abs(k) == 1 else f"{abs(k)} * "
        sign = "-" if k < 0 else "+"
        parts.append(f"{sign} {coeff}{name}" if parts else f"{'-' if k < 0 else ''}{coeff}{name}")
    if form.const or not parts:
        parts.append(f"{'-' if form.const < 0 else '+'} {abs(form.const)}" if parts else str(form.const))
    return " ".join(parts)


def _size_names(kernel: func.FuncOp) -> dict[SSAValue, str]:
    sizes, tensors = kernel_args(kernel)
    out: dict[SSAValue, str] = {s.value: s.name for s in sizes}
    out.update({t.value: t.name for t in tensors})
    return out


def _buffer_name(memref: SSAValue, names: dict) -> str:
    owner = memref.owner
    if isinstance(owner, lp.AllocOp | lp.LocalOp):
        return owner.tensor_name.data
    return names.get(memref) or memref.name_hint or "?"


def _locate(message: str, op: Operation, loop: lp.ForOp | None, statement_of: StatementOf | None) -> Diagnostic:
    """At the directive that made `loop`, the innermost loop of the index at fault (its bounds
    allow the index), with a note at the statement the access belongs to; at the statement when
    no loop names a directive."""
    origin = _origin(loop)
    statement = _statement(op, statement_of)
    if origin is not None:
        diag = Diagnostic("error", f"{message} (the bounds of loop '{origin[3]}' allow it)", *origin[:3])
        if statement is not None:
            diag.with_note("in this statement", statement[1], statement[2], statement[0])
        return diag
    if statement is not None:
        return Diagnostic("error", message, *statement)
    return Diagnostic("error", message, f"<{op.name}>")


def _statement(op: Operation, statement_of: StatementOf | None) -> tuple[str, int, int] | None:
    """Where the access's statement is: its own location, or its stage's statement."""
    if isinstance(op.location, FileLineColLoc):
        loc = op.location
        return loc.filename.data, loc.line.data, loc.column.data
    if statement_of is None:
        return None
    for loop in reversed(lp.enclosing_loops(op)):
        if loop.stage is not None:
            return statement_of(loop.stage.data)
    return None


def _fault_loop(op: Operation, index: Lin | None) -> lp.ForOp | None:
    """The innermost loop around `op` whose variable the index uses and that names a directive;
    else the innermost loop around `op` that does."""
    loops = [loop for loop in reversed(lp.enclosing_loops(op)) if loop.origin is not None]
    if index is not None:
        used = set(index.values())
        for loop in loops:
            if loop.induction_var in used:
                return loop
    return loops[0] if loops else None


def _origin(loop: lp.ForOp | None) -> tuple[str, int, int, str] | None:
    """Where the directive that made `loop` is, and the loop's name."""
    if loop is None:
        return None
    where = lp.origin_location(loop)
    return None if where is None else (*where, loop.loop_name.data)
