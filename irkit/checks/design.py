"""The semantic checker of design IR: every mistake of a document, each located.

It reads only IR (op locations give the source positions) and returns a
list of diagnostics instead of stopping at the first: undefined names,
names the generated C cannot use, rank and shape mismatches, left-hand
indices that no loop binds, reductions written with `=`, outputs never
written and temps never read, accesses it cannot prove in bounds, layouts
that conflict, and -- through `irkit.checks.schedule`,
`irkit.checks.hardware` and `irkit.checks.lowering` -- schedules and
hardware descriptions.  Local well-formedness (positive factors, valid
permutations) is re-checked here too, so that a document gets all its
errors in one report rather than one verifier error at a time.

Shapes and indices are decided for every value of the sizes
(`irkit.checks.symbolic`): what is not proven is an error, with a
counterexample where one is found.  One mistake gives one diagnostic: a
tensor read three times before it is written is one error (with a note).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, StringAttr
from xdsl.ir import Operation

from irkit.affine.where import Unsupported, bounded_index, linear, normal_form
from irkit.affine_text import AffineTextError, Expr, Var, names_in, parse_affine
from irkit.checks.hardware import check_hardware_block, check_hardware_ref
from irkit.checks.pieces import Gap, Overlap, Part, box, overlaps, part_of, position, uncovered
from irkit.checks.schedule import check_schedules, suggest
from irkit.checks.symbolic import (
    INT64_MAX,
    Facts,
    Lin,
    NotAffine,
    Samples,
    Verdict,
    box_points,
    constraint_rows,
    decide_eq,
    decide_le,
    describe_env,
    extremes,
    lin_outside_int64,
    outside_int64,
    search,
    text,
    to_lin,
)
from irkit.diagnostics import Diagnostic, at_op
from irkit.dialects import design as d
from irkit.named_ops import NamedOpError, get_named_op
from irkit.names import name_diagnostic


def check_module(
    module: ModuleOp, then: Callable[[d.DesignOp], list[Diagnostic]] | None = None
) -> list[Diagnostic]:
    """The semantic problems of the designs and hardware blocks in `module` that the checker
    finds by itself; `then` adds more for each design without errors (the lowering check:
    `irkit.checks.document.check_document`, which this module cannot import)."""
    diags: list[Diagnostic] = []
    for op in module.body.block.ops:
        if isinstance(op, d.DesignOp):
            found = DesignChecker(op).run()
            if then is not None and not any(x.severity == "error" for x in found):
                found += then(op)
            diags.extend(found)
        elif isinstance(op, d.HardwareOp):
            diags.extend(check_hardware_block(op))
    return diags


def line_of(op: Operation) -> int:
    loc = op.location
    return loc.line.data if isinstance(loc, FileLineColLoc) else 0


@dataclass
class Stage:
    """A statement (index form or named) and what the checker learns of it."""

    op: d.StmtOp | d.NamedOp
    target: str
    loops: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    reduction_loops: set[str] = field(default_factory=set)
    extents: dict[str, Expr] = field(default_factory=dict)  # loop -> its extent over the sizes
    facts: Facts | None = None  # its loops' ranges and its `where` (index statements)
    domain: list[tuple[Lin, bool]] = field(default_factory=list)  # its `where`: forms >= 0 (== 0 if True)
    accesses: list[tuple[d.ReadOp, list[Expr]]] = field(default_factory=list)  # reads of other tensors


Extents = dict[str, list[tuple[Expr, str, Operation]]]  # loop variable -> (extent, where, which op)


class DesignChecker:
    def __init__(self, design: d.DesignOp):
        self.design = design
        self.diags: list[Diagnostic] = []
        self.sizes: dict[str, d.SizeOp] = {}
        self.tensors: dict[str, d.TensorOp] = {}
        self.scalars: dict[str, d.ScalarOp] = {}
        self.scalar_readers: set[str] = set()
        self.shapes: dict[str, list[Expr] | None] = {}
        self.stages: dict[str, Stage] = {}  # tensor -> its (first) writer
        self.parts: dict[str, list[Stage]] = {}  # tensor -> every index statement that writes it
        self.unproved: set[str] = set()  # tensors with a part refused (their cover is not checked)
        self.order: list[Stage] = []
        self.read_by: dict[str, list[Stage]] = {}
        self.samples = Samples.build({}, {})
        self.facts = Facts({})
        self.defaults: dict[str, int] = {}  # sizes with a default

    def error(self, message: str, op: Operation, focus: str | None = None) -> Diagnostic:
        diag = at_op("error", message, op, focus)
        self.diags.append(diag)
        return diag

    def warning(self, message: str, op: Operation, focus: str | None = None) -> None:
        self.diags.append(at_op("warning", message, op, focus))

    def c_name(self, name: str, what: str, op: Operation, focus: str | None = None) -> None:
        """Report `name` if the generated C could not use it (irkit.names)."""
        diag = name_diagnostic(name, what, op, focus)
        if diag is not None:
            self.diags.append(diag)

    def run(self) -> list[Diagnostic]:
        ops = list(self.design.body.block.ops)
        self.c_name(self.design.design_name, "kernel", self.design)
        divisors = {
            op.size.data: op.divisor.value.data
            for op in ops
            if isinstance(op, d.AssumeDivisibleOp) and op.divisor.value.data > 0
        }
        self.declarations(ops)
        self.facts = Facts({n: divisors.get(n, 1) for n in self.sizes})
        self.defaults = {n: op.default.value.data for n, op in self.sizes.items() if op.default is not None}
        self.samples = Samples.build({n: self.defaults.get(n) for n in self.sizes}, divisors)
        for op in ops:
            if isinstance(op, d.TensorOp) and self.shapes.get(op.sym_name.data) is not None:
                self.shape_at_defaults(op)
        for op in ops:
            if isinstance(op, d.RepeatOp):
                self.repeat(op)
        for op in d.statements(ops):
            if isinstance(op, d.StmtOp):
                self.index_stmt(op)
            elif isinstance(op, d.NamedOp):
                self.named_stmt(op)
        self.piecewise()
        self.usage()
        self.layouts([op for op in ops if isinstance(op, d.LayoutOp)])
        schedules = [op for op in ops if isinstance(op, d.ScheduleOp)]
        self.diags.extend(check_schedules(schedules, self.stages, self.tensors))
        self.carried_schedules(schedules)
        self.sections(ops)
        return _unique(self.diags)

    # --- declarations ----------------------------------------------------

    def declarations(self, ops: list[Operation]) -> None:
        for op in ops:
            if isinstance(op, d.SizeOp):
                name = op.sym_name.data
                if name in self.sizes:
                    self.error(f"size '{name}' is declared twice (first at line {line_of(self.sizes[name])})", op, name)
                    continue
                self.sizes[name] = op
                self.c_name(name, "size", op, name)
                if op.default is not None and op.default.value.data <= 0:
                    self.error(f"default of size '{name}' must be positive, got {op.default.value.data}", op, name)
        for op in ops:
            if not isinstance(op, d.TensorOp):
                continue
            name = op.sym_name.data
            if name in self.tensors:
                self.error(f"tensor '{name}' is declared twice (first at line {line_of(self.tensors[name])})", op, name)
                continue
            if name in self.sizes:
                self.error(f"'{name}' is declared both as a size and as a tensor", op, name)
            self.tensors[name] = op
            self.c_name(name, "tensor" if op.role.data != "temp" else "temporary", op, name)
            self.shapes[name] = self.shape_of(op)
        for op in ops:
            if isinstance(op, d.ScalarOp):
                self.scalar(op)

    def positive_definite(self, op: d.AssumePositiveDefiniteOp, name: str) -> None:
        """`positive_definite(A)`: A is a square float matrix whose value comes from the caller."""
        tensor = self.tensors.get(name)
        if tensor is None:
            self.error(f"assumption about undefined tensor '{name}'" + suggest(name, list(self.tensors)), op, name)
            return
        if tensor.role.data not in ("input", "inout"):
            self.error(
                f"'{name}' is {tensor.role.data}: positive_definite is about a value the caller gives, "
                "an input or in-out tensor's",
                op,
                name,
            )
        shape = self.shapes.get(name)
        if shape is not None and (len(shape) != 2 or str(shape[0]) != str(shape[1])):
            dims = ", ".join(tensor.shape_exprs)
            self.error(f"positive_definite needs a square matrix; '{name}' is [{dims}]", op, name)
        if tensor.dtype.data not in ("f32", "f64"):
            self.error(f"positive_definite needs a float matrix; '{name}' holds {tensor.dtype.data}", op, name)

    def scalar(self, op: d.ScalarOp) -> None:
        name = op.sym_name.data
        first = self.scalars.get(name) or self.tensors.get(name) or self.sizes.get(name)
        if first is not None:
            what = "a scalar" if name in self.scalars else "a tensor" if name in self.tensors else "a size"
            self.error(f"'{name}' is declared twice (first as {what}, at line {line_of(first)})", op, name)
            return
        if op.role.data != "input":
            self.error(
                f"scalar '{name}' is {op.role.data}, but a scalar is an input: its value is passed to the kernel "
                f"(a computed value is a tensor: tensor {name} : {op.dtype.data}[1] {op.role.data})",
                op,
                op.role.data,
            )
        self.scalars[name] = op
        self.c_name(name, "scalar", op, name)

    def shape_of(self, op: d.TensorOp) -> list[Expr] | None:
        shape: list[Expr] = []
        ok = True
        for dim in op.shape_exprs:
            try:
                expr = parse_affine(dim)
            except AffineTextError as err:
                self.error(f"shape of '{op.sym_name.data}': {err}", op)
                ok = False
                continue
            undefined = [name for name in names_in(expr) if name not in self.sizes]
            for name in undefined:
                self.error(
                    f"undefined size '{name}' in the shape of '{op.sym_name.data}'"
                    + (f"; sizes are: {', '.join(self.sizes)}" if self.sizes else "; declare it in sizes { ... }"),
                    op,
                    name,
                )
            if undefined or self.affine(expr, f"shape of '{op.sym_name.data}'", op) is None:
                ok = False
            shape.append(expr)
        return shape if ok else None

    def affine(self, expr: Expr, what: str, op: Operation) -> Lin | None:
        """`expr` as an affine form, or None after reporting why the generated code cannot compute it."""
        try:
            lin = to_lin(expr)
        except NotAffine as err:
            self.error(f"{what}: {err}", op, err.focus)
            return None
        bad = outside_int64(expr, {}) or lin_outside_int64(lin)
        if bad is not None:
            self.error(
                f"{what}: '{text(expr)}' holds the integer {bad}, which does not fit the 64 bits the generated C "
                "computes indices in",
                op,
            )
            return None
        return lin

    def shape_at_defaults(self, op: d.TensorOp) -> None:
        """At the document's default sizes every dimension is at least 1 and the element count fits 64 bits."""
        name = op.sym_name.data
        shape = self.shapes[name]
        assert shape is not None
        used = sorted({n for e in shape for n in names_in(e)})
        if not all(n in self.defaults for n in used):
            return
        count = 1
        for pos, dim in enumerate(shape):
            value = to_lin(dim).evaluate(self.defaults)
            if value < 1:
                self.error(
                    f"dimension {pos + 1} of '{name}' ({text(dim)}) is {value} at the default sizes "
                    f"({describe_env(self.defaults, used)}); every dimension must be at least 1",
                    op,
                    name,
                )
                return
            count *= value
        if count > INT64_MAX:
            self.error(
                f"'{name}' has {count} elements at the default sizes ({describe_env(self.defaults, used)}), more than "
                "64-bit indices can address",
                op,
                name,
            )

    # --- index statements ---------------------------------------------------

    def writable(self, name: str, op: Operation) -> bool:
        """The target exists, is not an input, and has no other writer."""
        tensor = self.tensors.get(name)
        if tensor is None:
            self.error(f"undefined tensor '{name}'{self.tensor_hint()}", op, name)
            return False
        if tensor.role.data == "input":
            self.error(f"'{name}' is an input and cannot be written; declare it output, inout or temp", op, name)
            return False
        first = self.stages.get(name)
        if first is None:
            return True
        if _is_part(op) and _is_part(first.op):
            return True  # one part of a piecewise tensor; `parts` proves them disjoint
        self.error(
            f"'{name}' is written by two statements (first at line {line_of(first.op)}); a tensor has one "
            "defining statement, or several '=' statements that each write a part of it "
            f"({name}[...] = ... where ...), parts the checker proves disjoint",
            op,
            name,
        )
        return False

    def carried_schedules(self, schedules: list[d.ScheduleOp]) -> None:
        """A recurrence's iterations read each other's results in the order `carry` gives: only
        directives that keep that order (split, unroll) apply to it, and nothing is computed inside
        its loops (compute_at)."""
        carried = {
            name: stage for name, stage in self.stages.items()
            if isinstance(stage.op, d.StmtOp) and stage.op.carry_loops
        }  # fmt: skip
        if not carried:
            return
        for schedule in schedules:
            for op in schedule.body.block.ops:
                kind = op.name.removeprefix("design.")
                into = op.properties.get("stage")
                into_name = into.data if isinstance(into, StringAttr) else None
                if schedule.stage.data in carried and kind not in ("split", "unroll"):
                    stage = carried[schedule.stage.data]
                    self.error(
                        f"{kind}: '{stage.target}' is a recurrence (carry {', '.join(stage.op.carry_loops)}, line "
                        f"{line_of(stage.op)}): its iterations read what earlier ones wrote, so only split and unroll, "
                        "which keep their order, apply",
                        op,
                    )
                elif kind == "compute_at" and into_name in carried:
                    self.error(
                        f"compute_at {into_name}.{_prop_text(op, 'loop')}: '{into_name}' is a recurrence (line "
                        f"{line_of(carried[into_name].op)}); "
                        "nothing is computed inside its loops",
                        op,
                    )

    def repeat(self, op: d.RepeatOp) -> None:
        """`repeat T { ... }`: T is a size (so at least 1), and the block holds a statement."""
        count = op.count.data
        if count not in self.sizes:
            self.error(
                f"repeat {count}: '{count}' is not a size; the number of steps is a size, declared in "
                f"sizes {{ {count} = ... }} and passed like the others" + suggest(count, list(self.sizes)),
                op,
                count,
            )
        if not list(op.body.block.ops):
            self.warning(f"repeat {count} holds no statement", op, count)

    def tensor_hint(self) -> str:
        if not self.tensors:
            return "; declare it with tensor NAME : f32[...] input"
        return f"; tensors are: {', '.join(self.tensors)}"

    def index_stmt(self, op: d.StmtOp) -> None:
        target = op.target.data
        stage = Stage(op, target)
        ok = self.writable(target, op)
        lhs_vars = self.lhs_indices(op)
        stage.loops = [v for v in lhs_vars if v is not None]
        # Extents of each loop variable: a left index ranges over the output's
        # dimension; a reduction index over the dimensions it indexes directly.
        extents: Extents = {}
        out_shape = self.shapes.get(target) if ok else None
        if ok and out_shape is not None and len(op.index_exprs) != len(out_shape):
            self.error(
                f"'{target}' has rank {len(out_shape)} but is written with {len(op.index_exprs)} "
                f"ind{'ices' if len(op.index_exprs) != 1 else 'ex'}",
                op,
                target,
            )
            out_shape = None
        if out_shape is not None:
            for pos, var in enumerate(lhs_vars):
                if var is not None:
                    extents.setdefault(var, []).append((out_shape[pos], f"dimension {pos + 1} of '{target}'", op))
        reads = [r for r in op.body.walk() if isinstance(r, d.ReadOp)]
        stmt_dtype = self.tensors[target].dtype.data if target in self.tensors else None
        accesses: list[tuple[d.ReadOp, list[Expr]]] = []
        undefined: set[str] = set()
        reported: set[tuple] = set()  # one diagnostic per mistake: (kind, tensor, ...)
        for read in reads:
            indices = self.read_indices(read)
            if indices is None:
                continue
            name = read.tensor.data
            stage.reads.append(name)
            if name == target and op.carry_loops:  # a recurrence reads what earlier iterations wrote
                if self.tensors.get(name) is not None and self.tensors[name].role.data != "inout" and (
                    ("carried", name) not in reported
                ):
                    reported.add(("carried", name))
                    self.error(
                        f"reads {name}[{', '.join(read.index_exprs)}], its own target: an element no earlier iteration "
                        f"wrote holds {name}'s value on entry, so declare '{name}' inout",
                        read,
                        name,
                    )
            elif name == target:
                if self.reads_own_element(op, read, indices, lhs_vars) or ("self", name) in reported:
                    continue
                reported.add(("self", name))
                self.self_read_error(op, read)
                continue
            tensor = self.tensors.get(name)
            if tensor is None:
                if name not in undefined:  # once per statement
                    self.error(f"undefined tensor '{name}'{self.tensor_hint()}" + suggest(name, list(self.tensors)), read, name)
                undefined.add(name)
                continue
            if stmt_dtype is not None and tensor.dtype.data != stmt_dtype and ("dtype", name) not in reported:
                reported.add(("dtype", name))
                self.error(
                    f"'{name}' holds {tensor.dtype.data} but the statement computes {stmt_dtype} ('{target}'); "
                    "irkit does not convert types implicitly",
                    read,
                    name,
                )
            shape = self.shapes.get(name)
            if shape is None:
                continue
            if len(indices) != len(shape):
                if ("rank", name, len(indices)) not in reported:
                    self.error(
                        f"'{name}' has rank {len(shape)} but is read with {len(indices)} "
                        f"ind{'ices' if len(indices) != 1 else 'ex'}",
                        read,
                        name,
                    )
                reported.add(("rank", name, len(indices)))
                continue
            if any(self.affine(idx, f"index of '{name}'", read) is None for idx in indices):
                continue
            accesses.append((read, indices))
            for pos, idx in enumerate(indices):
                if isinstance(idx, Var):
                    extents.setdefault(idx.name, []).append((shape[pos], f"dimension {pos + 1} of '{name}'", read))
        left = [v for v in lhs_vars if v is not None]
        self.values(op, stmt_dtype, set(left) | set(extents))
        order = self.carry(op, lhs_vars, list(extents)) or left + [v for v in extents if v not in left]
        stage.domain = self.domain(op, order)
        stage.extents = {var: uses[0][0] for var, uses in extents.items()}
        facts = self.statement_facts(extents).with_domain([r for f, eq in stage.domain for r in constraint_rows(f, eq)])
        stage.facts = facts
        stage.accesses = accesses
        self.bind_variables(op, stage, lhs_vars, accesses, extents, facts)
        self.bounds(accesses, extents, facts)
        if ok:
            self.add_part(stage)
        self.order.append(stage)
        for name in dict.fromkeys(stage.reads):
            self.read_by.setdefault(name, []).append(stage)

    def add_part(self, stage: Stage) -> None:
        """Record a statement as the writer (or a further part) of its target; the parts of one
        tensor name their indices alike, so that one schedule applies to each of them."""
        parts = self.parts.setdefault(stage.target, [])
        if parts and d.repeat_of(parts[0].op) is not d.repeat_of(stage.op):
            self.error(
                f"this part of '{stage.target}' and the part at line {line_of(parts[0].op)} are not in the same "
                "repeat block; the parts of a tensor are written together, in one step",
                stage.op,
                stage.target,
            )
            self.unproved.add(stage.target)  # its parts are not all known: no cover to prove
            return
        if parts and parts[0].loops != stage.loops:
            first = parts[0]
            self.error(
                f"this part of '{stage.target}' indexes it as {stage.target}[{', '.join(stage.loops)}], the part at "
                f"line {line_of(first.op)} as {stage.target}[{', '.join(first.loops)}]; name the indices of every part "
                "alike, so that the tensor's schedule applies to each",
                stage.op,
                stage.target,
            )
            self.unproved.add(stage.target)
            return
        parts.append(stage)
        self.stages.setdefault(stage.target, stage)

    def carry(self, op: d.StmtOp, lhs: list[str | None], variables: list[str]) -> list[str] | None:
        """A recurrence's `carry` list: every loop of the statement once, and an '=' statement; the
        loop order it gives (None when the statement has none, or it is wrong: reported)."""
        order = op.carry_loops
        if not order:
            return None
        loops = list(dict.fromkeys([v for v in lhs if v is not None] + variables))
        twice = [v for k, v in enumerate(order) if v in order[:k]]
        if op.kind.data != "=":
            self.error(
                f"carry with '{op.kind.data}': a recurrence is an '=' statement that reads its own earlier results "
                f"({op.target.data}[...] = ... {op.target.data}[...] ...)",
                op,
                "carry",
            )
            return None
        if twice or set(order) != set(loops):
            missing = [v for v in loops if v not in order]
            extra = [v for v in order if v not in loops]
            why = (
                f"'{twice[0]}' is listed twice" if twice
                else f"'{missing[0]}' is missing" if missing
                else f"'{extra[0]}' is not an index of the statement"
            )  # fmt: skip
            self.error(
                f"carry {', '.join(order)}: {why}; list every loop of the statement ({', '.join(loops)}) once, "
                "outermost first: they run in that order",
                op,
                "carry",
            )
            return None
        return list(order)

    def reads_own_element(self, op: d.StmtOp, read: d.ReadOp, indices: list[Expr], lhs: list[str | None]) -> bool:
        """An `=` statement into an in-out tensor may read the element it writes (`C[i, j] = beta * C[i, j]`):
        each iteration reads only what it writes itself, so the iterations stay independent."""
        tensor = self.tensors.get(op.target.data)
        if tensor is None or tensor.role.data != "inout" or op.kind.data != "=":
            return False
        return len(indices) == len(lhs) and all(isinstance(e, Var) and e.name == v for e, v in zip(indices, lhs))

    def self_read_error(self, op: d.StmtOp, read: d.ReadOp) -> None:
        name = op.target.data
        tensor = self.tensors.get(name)
        own = f"{name}[{', '.join(op.index_exprs)}]"
        here = f"{name}[{', '.join(read.index_exprs)}]"
        if tensor is None or tensor.role.data != "inout":
            message = (
                f"statement reads '{name}', the tensor it writes; use '+=' or 'max=' to accumulate, or declare it "
                f"inout to update it in place ({own} = ... {own} ...)"
            )
        elif op.kind.data != "=":
            message = (
                f"a '{op.kind.data}' into in-out '{name}' reads {here}; the reduction starts from {name}'s current "
                f"value already ({own} {op.kind.data} ...), so leave {name} out of the right-hand side"
            )
        else:
            message = (
                f"reads {here}, but a statement may read its in-out target only at the element it writes ({own}): "
                "other iterations write the rest, so the result would depend on their order"
            )
        self.error(message, read, name)

    def domain(self, op: d.StmtOp, order: list[str]) -> list[tuple[Lin, bool]]:
        """The `where` constraints, as forms that are >= 0 (or == 0: True): affine over the
        statement's indices and the sizes, each bounding the innermost index it names in the loop
        order lowering gives the statement (`order`: left-hand indices first, or a `carry`'s)."""
        forms: list[tuple[Lin, bool]] = []
        if not op.where_texts:
            return forms
        for text_ in op.where_texts:
            try:
                constraint = normal_form(text_)
                coeffs, _ = linear(constraint.expr)
            except (AffineTextError, ValueError, Unsupported) as err:
                self.error(f"where {text_}: {err}", op, text_)
                continue
            unknown = [n for n in coeffs if n not in order and n not in self.sizes]
            if unknown:
                self.error(
                    f"where {text_}: '{unknown[0]}' is neither an index of this statement ({', '.join(order)}) "
                    "nor a size",
                    op,
                    unknown[0],
                )
                continue
            if not any(n in order for n in coeffs):
                self.error(f"where {text_}: constrains no index of the statement ({', '.join(order)})", op, text_)
                continue
            try:
                bounded_index(constraint, order)
            except Unsupported as err:
                self.error(f"where {err}", op, text_)
                continue
            forms.append((to_lin(constraint.expr), constraint.equal))
        return forms

    def values(self, op: d.StmtOp, stmt_dtype: str | None, indices: set[str]) -> None:
        """Scalars, sizes and the statement's indices read by name: declared, and a scalar of the
        statement's type.  A size or an index converts to the statement's type."""
        reported: set[str] = set()
        for value in op.body.walk():
            if not isinstance(value, d.ValueOp) or value.ref.data in reported:
                continue
            name = value.ref.data
            if name in indices and name in self.scalars:
                reported.add(name)
                self.error(
                    f"'{name}' is both an index of this statement and a scalar; rename the index or the scalar",
                    value,
                    name,
                )
                continue
            if name in self.sizes or name in indices:
                continue
            scalar = self.scalars.get(name)
            if scalar is None:
                reported.add(name)
                if name in self.tensors:
                    self.error(f"'{name}' is a tensor: read its elements as {name}[indices]", value, name)
                    continue
                known = list(self.scalars) + list(self.sizes) + list(self.tensors)
                self.error(
                    f"'{name}' is not a value here: a statement reads tensor elements (A[i, j]), scalars and sizes "
                    "(declared with 'scalar NAME : f32 input' and in 'sizes { ... }'), the indices it runs over "
                    "(those in its tensors' brackets) and constants"
                    + suggest(name, known + sorted(indices)),
                    value,
                    name,
                )
                continue
            self.scalar_readers.add(name)
            if stmt_dtype is not None and scalar.dtype.data != stmt_dtype:
                reported.add(name)
                self.error(
                    f"scalar '{name}' is {scalar.dtype.data} but the statement computes {stmt_dtype} "
                    f"('{op.target.data}'); irkit does not convert types implicitly",
                    value,
                    name,
                )

    def statement_facts(self, extents: Extents) -> Facts:
        """The sizes' facts and, for every loop of the statement, its range (from its first use)."""
        loops = {}
        for var, uses in extents.items():
            try:
                loops[var] = to_lin(uses[0][0])
            except NotAffine:  # reported at the shape
                continue
        return self.facts.with_loops(loops)

    def lhs_indices(self, op: d.StmtOp) -> list[str | None]:
        """The left-hand loop variables; `None` where an index is not a plain, fresh variable."""
        out: list[str | None] = []
        for text_ in op.index_exprs:
            try:
                expr = parse_affine(text_)
            except AffineTextError as err:
                self.error(f"index '{text_}': {err}", op)
                out.append(None)
                continue
            if not isinstance(expr, Var):
                self.error(
                    f"index '{text_}' on the left is not a loop variable: each left-hand index must be a "
                    "distinct variable that ranges over one dimension of the output",
                    op,
                    names_in(expr)[0] if names_in(expr) else None,
                )
                out.append(None)
            elif expr.name in out:
                self.error(
                    f"index '{expr.name}' appears twice on the left; no loop binds the second dimension, "
                    "use a distinct variable for each dimension",
                    op,
                    expr.name,
                )
                out.append(None)
            elif expr.name in self.sizes:
                self.error(f"index '{expr.name}' on the left is a size, not a loop variable", op, expr.name)
                out.append(None)
            else:
                self.c_name(expr.name, "loop", op, expr.name)
                out.append(expr.name)
        return out

    def read_indices(self, read: d.ReadOp) -> list[Expr] | None:
        try:
            return [parse_affine(t) for t in read.index_exprs]
        except AffineTextError as err:
            self.error(f"index of '{read.tensor.data}': {err}", read)
            return None

    def bind_variables(
        self,
        op: d.StmtOp,
        stage: Stage,
        lhs_vars: list[str | None],
        accesses: list[tuple[d.ReadOp, list[Expr]]],
        extents: Extents,
        facts: Facts,
    ) -> None:
        reported: set[str] = set()
        for read, indices in accesses:
            for idx in indices:
                for var in names_in(idx):
                    if var in extents or var in reported or var in self.sizes:  # `A[N - 1 - i]` reads by a size
                        continue
                    reported.add(var)
                    self.error(
                        f"undefined index variable '{var}': it is not on the left and never indexes a "
                        "dimension directly, so nothing gives its range",
                        read,
                        var,
                    )
        on_left = {v for t in op.index_exprs for v in _names(t)}
        for var, uses in extents.items():
            if var in lhs_vars or var in on_left:  # a malformed left index is reported already
                continue
            stage.loops.append(var)
            stage.reduction_loops.add(var)
            self.c_name(var, "loop", uses[0][2], var)
            if op.kind.data == "=" and not op.carry_loops:  # a recurrence's other loops run in order
                self.error(
                    f"reduction index '{var}' is used with '='; it does not appear on the left, so the statement "
                    "combines many values into one element: write '+=' (sum) or 'max=' (maximum)",
                    op,
                    "=",
                )
            first_extent, first_where, _ = uses[0]
            for extent, where, user in uses[1:]:
                verdict = self.relation(decide_eq, first_extent, extent, facts)
                if verdict is None or verdict.proven:
                    continue
                if verdict.undecided:
                    self.error(
                        f"cannot prove that index '{var}' ranges over equal extents in {first_where} "
                        f"({text(first_extent)}) and {where} ({text(extent)}) for every value of the sizes"
                        + self.help_for([first_extent, extent]),
                        user,
                        var,
                    )
                else:
                    self.error(
                        f"index '{var}' ranges over {first_where} ({text(first_extent)}) and {where} "
                        f"({text(extent)}), which differ",
                        user,
                        var,
                    )
                break
        for var, uses in extents.items():
            if var not in lhs_vars:
                continue
            first_extent, first_where, _ = uses[0]
            for extent, where, user in uses[1:]:
                # A direct use of a left index must fit inside the dimension it indexes.
                verdict = self.relation(decide_le, first_extent, extent, facts)
                if verdict is None or verdict.proven:
                    continue
                used = sorted(set(names_in(first_extent)) | set(names_in(extent)))
                if verdict.example is None:
                    self.error(
                        f"cannot prove that index '{var}', which ranges over {first_where} ({text(first_extent)}), "
                        f"stays inside {where} ({text(extent)}) for every value of the sizes"
                        + self.help_for([first_extent, extent]),
                        user,
                        var,
                    )
                else:
                    self.error(
                        f"index '{var}' ranges over {first_where} ({text(first_extent)}) but indexes {where} "
                        f"({text(extent)}), which is smaller when {describe_env(verdict.example, used)}",
                        user,
                        var,
                    )

    def relation(self, decide, a: Expr, b: Expr, facts: Facts) -> Verdict | None:
        """`decide(a, b)` on affine forms; None if one of them is not affine (reported already)."""
        try:
            la, lb = to_lin(a), to_lin(b)
        except NotAffine:
            return None
        return decide(la, lb, facts, self.samples)

    def help_for(self, exprs: list[Expr | Lin]) -> str:
        """What would let the checker prove a relation over `exprs`: divisibility of the sizes that
        floor divisions divide."""
        hints: list[str] = []
        for e in exprs:
            try:
                lin = e if isinstance(e, Lin) else to_lin(e)
            except NotAffine:
                continue
            for f in lin.floors():
                for name in sorted(f.arg.names() & set(self.sizes)):
                    hint = f"{name} % {f.div} == 0"
                    if hint not in hints:
                        hints.append(hint)
        if hints:
            return f"; if the sizes always allow it, say so (assume {{ {'; '.join(hints)} }})"
        return "; write the shapes so that it follows from them"

    def bounds(self, accesses: list[tuple[d.ReadOp, list[Expr]]], extents: Extents, facts: Facts) -> None:
        """Every access that is not a loop variable on its own (`bind_variables` checks those)
        stays inside its tensor for every value of the sizes and every point of its loops."""
        seen: set[tuple[str, int, str]] = set()
        for read, indices in accesses:
            name = read.tensor.data
            shape = self.shapes[name]
            assert shape is not None
            for pos, idx in enumerate(indices):
                key = (name, pos, text(idx))
                if isinstance(idx, Var) or key in seen or not all(
                    v in facts.loops or v in self.sizes for v in names_in(idx)  # `N - 1 - i` too
                ):
                    continue
                seen.add(key)
                if self.too_wide(idx, facts, read, name, pos):
                    continue
                lin, size = to_lin(idx), to_lin(shape[pos])
                last = size.plus(-1)
                below = not facts.proves(lin)
                above = not facts.proves(last - lin)
                if below or above:
                    self.out_of_bounds(read, name, pos, idx, lin, last, facts, below, above)

    def too_wide(self, idx: Expr, facts: Facts, read: d.ReadOp, name: str, pos: int) -> bool:
        """Report an index whose value (or a part of it) leaves the 64-bit integers at the
        document's default sizes."""
        used = names_in(idx)
        sizes = {n for v in used if v in facts.loops for n in facts.loops[v].names()} | {n for n in used if n in self.sizes}
        if not all(n in self.defaults for n in sizes):
            return False
        ranges: dict[str, tuple[int, int]] = {n: (self.defaults[n], self.defaults[n]) for n in sizes}
        for v in used:
            if v in facts.loops:
                ranges[v] = (0, max(facts.loops[v].evaluate(self.defaults) - 1, 0))
        bad = outside_int64(idx, ranges)
        if bad is None:
            return False
        self.error(
            f"index '{text(idx)}' of '{name}' (dimension {pos + 1}) reaches {bad} at the default sizes "
            f"({describe_env(self.defaults, sorted(sizes))}), outside the 64-bit integers the generated C "
            "computes indices in",
            read,
            name,
        )
        return True

    def out_of_bounds(
        self, read: d.ReadOp, name: str, pos: int, idx: Expr, lin: Lin, last: Lin, facts: Facts, below: bool, above: bool
    ) -> None:
        """Report an access not proven in bounds: with a counterexample where one is found."""
        loops = {v: facts.loops[v] for v in lin.names() if v in facts.loops}
        used = sorted((lin.names() | last.names() | {n for e in loops.values() for n in e.names()}) - set(loops))

        def fits(env: dict[str, int]) -> bool | None:
            counts = {v: e.evaluate(env) for v, e in facts.loops.items()}
            if any(n < 1 for n in counts.values()):
                return None  # a loop of the statement is empty: nothing is read
            found = _extremes(lin, facts, env)
            if found is None:
                return None  # the statement's domain is empty there
            (lo, _), (hi, _) = found
            return lo >= 0 and hi <= last.evaluate(env)

        if facts.domain:  # the constraints may bound more sizes than the index names
            used = sorted(set(used) | {n for f in facts.domain for n in f.names() if n in self.sizes})
        env = search(fits, self.samples.around(set(used)))
        where = f"index '{text(idx)}' of '{name}' (dimension {pos + 1})"
        if env is None:
            self.error(
                f"cannot prove that {where} stays within 0 .. {last.text()} for every value of the sizes"
                + (f" (its loops: {', '.join(f'{v} < {e.text()}' for v, e in loops.items())})" if loops else "")
                + self.help_for([lin, last, *loops.values()]),
                read,
                name,
            )
            return
        found = _extremes(lin, facts, env)
        assert found is not None  # `fits` was False there, not None
        (lo, lo_at), (hi, hi_at) = found
        sizes = describe_env(env, used)
        if lo < 0:
            bound = facts.bound(lin, lowest=True) if not facts.domain else None  # the box's corner, outside a where
            what = f"can be {bound.text()}, below 0" if bound is not None else "can be negative"
            self.error(f"{where} {what}" + _example(sizes, lo_at, lo, bound is not None), read, name)
            return
        bound = facts.bound(lin, lowest=False) if not facts.domain else None
        what = f"reaches {bound.text()}, past" if bound is not None else "goes past"
        self.error(
            f"{where} {what} the last element {last.text()}" + _example(sizes, hi_at, hi, bound is not None), read, name
        )

    # --- named statements ----------------------------------------------------

    def named_stmt(self, op: d.NamedOp) -> None:
        target = op.target.data
        stage = Stage(op, target)
        ok = self.writable(target, op)
        if ok:
            self.stages[target] = stage
        self.order.append(stage)
        try:
            spec = get_named_op(op.op_name.data)
            spec.check_call(op.operand_names, dict(op.params.data))
        except NamedOpError as err:
            self.error(str(err), op, op.op_name.data)
            for name in dict.fromkeys(op.operand_names):  # still read: no second, misleading "never read" warning
                self.read_by.setdefault(name, []).append(stage)
            return
        shapes: list[list[Expr]] = []
        for name in dict.fromkeys(op.operand_names):
            self.read_by.setdefault(name, []).append(stage)
        for name in op.operand_names:
            stage.reads.append(name)
        if target in op.operand_names:
            self.self_operand(op, spec.name, target)
            return
        for name in op.operand_names:
            if name not in self.tensors:
                self.error(f"undefined tensor '{name}'{self.tensor_hint()}", op, name)
                continue
            if ok and self.tensors[name].dtype.data != self.tensors[target].dtype.data:
                self.error(
                    f"'{name}' holds {self.tensors[name].dtype.data} but '{target}' is {self.tensors[target].dtype.data}",
                    op,
                    name,
                )
            shape = self.shapes.get(name)
            if shape is not None:
                shapes.append(shape)
        if len(shapes) != len(op.operand_names):
            return
        try:
            result, agree = spec.result_shape(shapes, dict(op.params.data))
        except NamedOpError as err:
            self.error(str(err), op, op.op_name.data)
            return
        stage.loops = spec.loops(len(result), dict(op.params.data))
        stage.reduction_loops = spec.reduction_loops(len(result), dict(op.params.data))
        stage.extents = dict(zip(stage.loops, spec.domain(shapes, dict(op.params.data))))
        for loop in stage.loops:
            self.c_name(loop, "loop", op, op.op_name.data)
        if any(self.named_affine(e, op) is None for pair in agree for e in pair[:2]):
            return
        if any(self.named_affine(e, op) is None for e in result):
            return
        for a, b, what in agree:
            verdict = self.relation(decide_eq, a, b, self.facts)
            if verdict is not None and not verdict.proven:
                self.error(
                    (
                        f"cannot prove that '{op.op_name.data}' gets equal sizes for {what} ({text(a)} and {text(b)}) "
                        "for every value of the sizes" + self.help_for([a, b])
                    )
                    if verdict.undecided
                    else f"'{op.op_name.data}' needs equal sizes for {what}, got {text(a)} and {text(b)}",
                    op,
                    op.op_name.data,
                )
                return
        declared = self.shapes.get(target) if ok else None
        if declared is None:
            return
        if len(declared) != len(result):
            self.error(
                f"'{op.op_name.data}' gives a result of rank {len(result)} but '{target}' has rank {len(declared)}",
                op,
                target,
            )
            return
        for pos, (want, got) in enumerate(zip(result, declared)):
            verdict = self.relation(decide_eq, want, got, self.facts)
            if verdict is None or verdict.proven:
                continue
            if verdict.undecided:
                self.error(
                    f"cannot prove that '{target}', declared with dimension {pos + 1} = {text(got)}, has the size "
                    f"'{op.op_name.data}' gives ({text(want)}) for every value of the sizes" + self.help_for([want, got]),
                    op,
                    target,
                )
            else:
                self.error(
                    f"'{target}' is declared with dimension {pos + 1} = {text(got)}, but "
                    f"'{op.op_name.data}' gives {text(want)}",
                    op,
                    target,
                )

    def named_affine(self, e: Expr, op: d.NamedOp) -> Lin | None:
        return self.affine(e, f"a size '{op.op_name.data}' computes", op)

    def self_operand(self, op: d.NamedOp, op_name: str, target: str) -> None:
        """A named operation that reads the tensor it writes: the result overwrites its own operand
        while it is still being read (matmul would read partial sums, softmax a half-normalised row)."""
        diag = at_op(
            "error",
            f"'{op_name}' reads '{target}', the tensor it writes: the result would overwrite its operand while it is "
            f"still being read; write the result to a new tensor (declare it output or temp, e.g. "
            f"'{target}_out = {op_name}(...)') and read '{target}' from there",
            op,
            target,
        )
        # The focus is searched from the column on: start after the target so that the
        # caret lands on the operand, not on the left-hand side.
        diag.col += len(target)
        self.diags.append(diag)

    # --- document-wide facts ----------------------------------------------------

    def piecewise(self) -> None:
        """Tensors written by `=` statements with a `where`: the parts are disjoint, an output's parts
        cover it, and a temporary's cover every element a statement reads of it."""
        for name, stages in self.parts.items():
            shape = self._shape_lin(name)
            if shape is None or name in self.unproved or not all(_is_part(s.op) and s.facts is not None for s in stages):
                continue
            parts = [part_of(s.loops, s.domain, line_of(s.op)) for s in stages]
            for clash in overlaps(parts, shape, self.facts, self.samples):
                self.overlap_error(name, stages[parts.index(clash.second)], clash)
            if not any(s.domain for s in stages):
                continue  # one statement without a where writes every element
            role = self.tensors[name].role.data
            if role == "output":
                gap = self.whole_gap(parts, shape)
                if gap is not None:
                    self.gap_error(name, stages, gap, None)
            elif role == "temp":
                self.reads_covered(name, stages, parts, shape)

    def reads_covered(self, name: str, stages: list[Stage], parts: list[Part], shape: list[Lin]) -> None:
        """Every element read of a piecewise temporary is written by one of its parts."""
        for reader in self.read_by.get(name, []):
            if isinstance(reader.op, d.NamedOp) or reader.facts is None:  # reads the whole tensor
                gap = self.whole_gap(parts, shape)
                if gap is not None:
                    self.gap_error(name, stages, gap, reader.op)
                continue
            for read, indices in reader.accesses:
                if read.tensor.data != name:
                    continue
                try:
                    at = [to_lin(e) for e in indices]
                except NotAffine:
                    continue
                gap = uncovered(parts, reader.facts, at, self.samples)
                if gap is not None:
                    self.gap_error(name, stages, gap, read, indices)
                    break

    def whole_gap(self, parts: list[Part], shape: list[Lin]) -> Gap | None:
        """Where the parts leave an element of the whole tensor unwritten (None: they cover it)."""
        whole = self.facts.with_loops(box(shape))
        return uncovered(parts, whole, [Lin.of(position(p)) for p in range(len(shape))], self.samples)

    def _shape_lin(self, name: str) -> list[Lin] | None:
        shape = self.shapes.get(name)
        try:
            return None if shape is None else [to_lin(e) for e in shape]
        except NotAffine:
            return None

    def overlap_error(self, name: str, stage: Stage, clash: Overlap) -> None:
        other = f"the statement at line {clash.first.line}"
        if clash.point is None or clash.sizes is None:
            self.error(
                f"cannot prove that this part of '{name}' and {other} write different elements; make their "
                "where clauses exclude each other (e.g. i == 0 and i >= 1)",
                stage.op,
                name,
            )
            return
        cell = ", ".join(str(clash.point[position(p)]) for p in range(len(clash.point)))
        self.error(
            f"this part of '{name}' and {other} both write {name}[{cell}] (e.g. when "
            f"{describe_env(clash.sizes, clash.used)}); "
            "the parts of a tensor must be disjoint, or the result depends on their order",
            stage.op,
            name,
        )

    def gap_error(
        self, name: str, stages: list[Stage], gap: Gap, reader: Operation | None, indices: list[Expr] | None = None
    ) -> None:
        """An output element no part writes, or a read of a temporary outside what its parts write."""
        written = "; ".join(
            f"line {line_of(s.op)}: {name}[{', '.join(s.loops)}] where {', '.join(s.op.where_texts)}"  # type: ignore[union-attr]
            if s.op.where_texts  # type: ignore[union-attr]
            else f"line {line_of(s.op)}: all of {name}"
            for s in stages
        )
        example = ""
        if gap.point is not None and gap.sizes is not None:
            when = describe_env(gap.sizes, gap.used)
            if indices is None:
                example = f" (e.g. at {name}[{', '.join(str(k) for k in gap.point.values())}] when {when})"
            else:  # the reader's indices at that point
                shown = sorted({n for e in indices for n in names_in(e)} & set(gap.point))
                example = f" (e.g. at {', '.join(f'{v} = {gap.point[v]}' for v in shown)} when {when})"
        if reader is None:
            last = stages[-1]
            self.error(
                f"output '{name}' has elements no statement writes{example}; written: {written}. Add a part for the "
                f"rest, or declare '{name}' inout so that the rest keeps its value",
                last.op,
                name,
            )
            return
        shown = f"{name}[{', '.join(text(e) for e in indices)}]" if indices is not None else f"all of '{name}'"
        self.error(
            f"reads {shown} outside the elements of temp '{name}' that are written{example}; written: {written}",
            reader,
            name,
        )

    def usage(self) -> None:
        position = {id(stage): i for i, stage in enumerate(self.order)}
        for name, scalar in self.scalars.items():
            if name not in self.scalar_readers:
                self.warning(f"scalar '{name}' is never read", scalar, name)
        for name, tensor in self.tensors.items():
            role = tensor.role.data
            readers = self.read_by.get(name, [])
            writer = self.parts[name][-1] if self.parts.get(name) else self.stages.get(name)  # the last part
            if role == "output" and writer is None:
                self.error(f"output '{name}' is never written", tensor, name)
            if role == "temp" and not readers:
                self.error(f"temp '{name}' is never read; remove it or declare it output", tensor, name)
            if role == "temp" and writer is None and readers:
                self.error(f"temp '{name}' is read but never written", tensor, name)
            if role == "input" and not readers:
                self.warning(f"input '{name}' is never read", tensor, name)
            if role == "inout" and writer is None:
                self.warning(f"inout '{name}' is never written; declare it input", tensor, name)
            if writer is None or role == "inout":  # an in-out tensor has a value before its statement
                continue
            steps = d.repeat_of(writer.op)
            for reader in readers:  # one reader stage per statement (read_by holds each once)
                if reader is writer or position[id(reader)] >= position[id(writer)]:
                    continue
                if steps is not None and d.repeat_of(reader.op) is steps:
                    self.error(
                        f"'{name}' is read here before the statement that writes it (line {line_of(writer.op)}): a "
                        f"step reads the value the step before wrote, but the first step of repeat "
                        f"{steps.count.data} has none; declare '{name}' inout, so that its value on entry is the "
                        "first step's",
                        reader.op,
                        name,
                    )
                    continue
                diag = self.error(
                    f"'{name}' is read here before the statement that writes it (line {line_of(writer.op)})",
                    reader.op,
                    name,
                )
                more = reader.reads.count(name) - 1
                if more > 0:
                    diag.with_note(f"and {more} more read{'s' if more > 1 else ''} of '{name}' in this statement")

    def layouts(self, ops: list[d.LayoutOp]) -> None:
        seen: dict[str, d.LayoutOp] = {}
        for op in ops:
            name = op.tensor.data
            tensor = self.tensors.get(name)
            if tensor is None:
                self.error(f"layout for undefined tensor '{name}'{self.tensor_hint()}", op, name)
                continue
            rank = len(tensor.shape.data)
            order = op.order_list
            if order is not None and sorted(order) != list(range(rank)):
                self.error(
                    f"order({', '.join(map(str, order))}) is not a permutation of the {rank} dimensions of '{name}' "
                    f"(0 to {rank - 1})",
                    op,
                    "order",
                )
            if op.kind is None and op.align is None:
                self.error(f"layout of '{name}' says nothing: give row_major, col_major, order(...) or align N", op, name)
            if op.align is not None:
                align = op.align.value.data
                if align <= 0 or align & (align - 1):
                    self.error(f"alignment must be a positive power of two, got {align}", op, "align")
            previous = seen.get(name)
            if previous is None:
                seen[name] = op
                continue
            if describe_layout(previous, rank) != describe_layout(op, rank):
                self.error(
                    f"conflicting layouts for '{name}': {describe_layout(op, rank)} here, "
                    f"{describe_layout(previous, rank)} at line {line_of(previous)}",
                    op,
                    name,
                )
            else:
                self.warning(f"layout of '{name}' is given twice (also at line {line_of(previous)})", op, name)

    def sections(self, ops: list[Operation]) -> None:
        """Assumptions, hardware, metric, doc: each once and naming what exists."""
        singles: dict[str, Operation] = {}
        for op in ops:
            kind = {
                d.MetricOp: "metric",
                d.DocOp: "doc",
                d.HardwareOp: "hardware",
                d.HardwareRefOp: "hardware",
            }.get(type(op))
            if kind is not None:
                if kind in singles:
                    self.error(f"a document has one {kind} section (first at line {line_of(singles[kind])})", op)
                singles.setdefault(kind, op)
            if isinstance(op, d.MetricOp) and op.metric.data not in d.METRICS:
                self.error(
                    f"unknown metric '{op.metric.data}'; expected one of {', '.join(d.METRICS)}"
                    + suggest(op.metric.data, list(d.METRICS)),
                    op,
                    op.metric.data,
                )
            elif isinstance(op, d.HardwareOp):
                self.diags.extend(check_hardware_block(op))
            elif isinstance(op, d.HardwareRefOp):
                self.diags.extend(check_hardware_ref(op))
            elif isinstance(op, d.AssumeDivisibleOp):
                if op.size.data not in self.sizes:
                    self.error(f"assumption about undefined size '{op.size.data}'", op, op.size.data)
                if op.divisor.value.data <= 0:
                    self.error(f"divisor must be positive, got {op.divisor.value.data}", op)
            elif isinstance(op, d.AssumeAlignedOp):
                if op.tensor.data not in self.tensors:
                    self.error(f"assumption about undefined tensor '{op.tensor.data}'", op, op.tensor.data)
                n = op.alignment.value.data
                if n <= 0 or n & (n - 1):
                    self.error(f"alignment must be a positive power of two, got {n}", op, str(n))
            elif isinstance(op, d.AssumeNoAliasOp):
                names = [name.data for name in op.tensors.data]
                if len(names) < 2:
                    self.error(
                        "noalias needs at least two tensors: it says that they do not overlap in memory",
                        op,
                        names[0] if names else "noalias",
                    )
                for name in names:
                    if name not in self.tensors:
                        self.error(f"assumption about undefined tensor '{name}'", op, name)
            elif isinstance(op, d.AssumePositiveDefiniteOp):
                for name in d.str_list(op.tensors):
                    self.positive_definite(op, name)


def _prop_text(op: Operation, key: str) -> str:
    value = op.properties.get(key)
    return value.data if isinstance(value, StringAttr) else "?"


def _is_part(op: Operation) -> bool:
    """An `=` index statement (not a recurrence): one that may write a part of its tensor."""
    return isinstance(op, d.StmtOp) and op.kind.data == "=" and not op.carry_loops


def _extremes(lin: Lin, facts: Facts, env: dict[str, int]) -> tuple[tuple[int, dict], tuple[int, dict]] | None:
    """The least and greatest value of `lin` over the statement's points at the sizes `env` (with
    where each is reached); None when no point of the box satisfies the `where`."""
    loops = {v: facts.loops[v] for v in lin.names() if v in facts.loops}
    if not facts.domain:
        return extremes(lin, {v: e.evaluate(env) for v, e in loops.items()}, env)
    counts = {v: e.evaluate(env) for v, e in facts.loops.items()}
    values = [(lin.evaluate(env | p), p) for p in box_points(counts) if facts.in_domain(env | p)]
    if not values:
        return None
    low, high = min(values, key=lambda t: t[0]), max(values, key=lambda t: t[0])
    return (low[0], {v: low[1][v] for v in loops}), (high[0], {v: high[1][v] for v in loops})


def _unique(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Drop exact repeats (same place, same message): they say nothing new."""
    seen: set[tuple] = set()
    out = []
    for diag in diags:
        key = (diag.severity, diag.message, diag.file, diag.line, diag.col, diag.focus)
        if key in seen:
            continue
        seen.add(key)
        out.append(diag)
    return out


def _example(sizes: str, point: dict[str, int], value: int, symbolic: bool) -> str:
    """The counterexample part of a bounds message: the sizes, and for a bound that has no
    formula over the sizes, the loop point and the value there."""
    if symbolic or not point:
        return f" (e.g. when {sizes})" if sizes else ""
    at = describe_env(point, sorted(point))
    return f" (e.g. when {sizes + ' and ' if sizes else ''}{at}: the index is {value})"


def _names(expr_text: str) -> list[str]:
    try:
        return names_in(parse_affine(expr_text))
    except AffineTextError:
        return []


def describe_layout(op: d.LayoutOp, rank: int) -> str:
    """A layout in words, normalised so that equivalent spellings compare equal."""
    kind = None if op.kind is None else op.kind.data
    order = op.order_list
    if kind == "row_major" or (kind is None and op.align is not None):
        order = list(range(rank))
    elif kind == "col_major":
        order = list(reversed(range(rank)))
    words = "row_major" if order == list(range(rank)) else "col_major" if order == list(reversed(range(rank))) else f"order({', '.join(map(str, order or []))})"
    if op.align is not None:
        words += f" align {op.align.value.data}"
    return words
