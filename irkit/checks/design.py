"""The semantic checker of design IR: every mistake of a document, each located.

It reads only IR (op locations give the source positions) and returns a
list of diagnostics instead of stopping at the first: undefined names,
rank and shape mismatches, left-hand indices that no loop binds,
reductions written with `=`, outputs never written and temps never read,
out-of-bounds accesses, layouts that conflict, and -- through
`irkit.checks.schedule` and `irkit.checks.hardware` -- schedules and
hardware descriptions.  Local well-formedness (positive factors, valid
permutations) is re-checked here too, so that a document gets all its
errors in one report rather than one verifier error at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation

from irkit.affine_text import AffineTextError, Expr, Var, names_in, parse_affine
from irkit.checks.hardware import check_hardware_block, check_hardware_ref
from irkit.checks.schedule import check_schedules, suggest
from irkit.checks.symbolic import Samples, always_eq, always_le, describe_env, from_linear, linear, sub, text
from irkit.diagnostics import Diagnostic, at_op
from irkit.dialects import design as d
from irkit.named_ops import NamedOpError, get_named_op


def check_module(module: ModuleOp) -> list[Diagnostic]:
    """All semantic problems of the designs and hardware blocks in `module`."""
    diags: list[Diagnostic] = []
    for op in module.body.block.ops:
        if isinstance(op, d.DesignOp):
            diags.extend(DesignChecker(op).run())
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


class DesignChecker:
    def __init__(self, design: d.DesignOp):
        self.design = design
        self.diags: list[Diagnostic] = []
        self.sizes: dict[str, d.SizeOp] = {}
        self.tensors: dict[str, d.TensorOp] = {}
        self.shapes: dict[str, list[Expr] | None] = {}
        self.stages: dict[str, Stage] = {}
        self.order: list[Stage] = []
        self.read_by: dict[str, list[Stage]] = {}
        self.samples = Samples([])

    def error(self, message: str, op: Operation, focus: str | None = None) -> Diagnostic:
        diag = at_op("error", message, op, focus)
        self.diags.append(diag)
        return diag

    def warning(self, message: str, op: Operation, focus: str | None = None) -> None:
        self.diags.append(at_op("warning", message, op, focus))

    def run(self) -> list[Diagnostic]:
        ops = list(self.design.body.block.ops)
        self.declarations(ops)
        divisors = {op.size.data: op.divisor.value.data for op in ops if isinstance(op, d.AssumeDivisibleOp)}
        self.samples = Samples.build({n: (op.default.value.data if op.default else None) for n, op in self.sizes.items()}, divisors)
        for op in ops:
            if isinstance(op, d.StmtOp):
                self.index_stmt(op)
            elif isinstance(op, d.NamedOp):
                self.named_stmt(op)
        self.usage()
        self.layouts([op for op in ops if isinstance(op, d.LayoutOp)])
        schedules = [op for op in ops if isinstance(op, d.ScheduleOp)]
        self.diags.extend(check_schedules(schedules, self.stages, self.tensors))
        self.sections(ops)
        return self.diags

    # --- declarations ----------------------------------------------------

    def declarations(self, ops: list[Operation]) -> None:
        for op in ops:
            if isinstance(op, d.SizeOp):
                name = op.sym_name.data
                if name in self.sizes:
                    self.error(f"size '{name}' is declared twice (first at line {line_of(self.sizes[name])})", op, name)
                    continue
                self.sizes[name] = op
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
            self.shapes[name] = self.shape_of(op)

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
            for name in names_in(expr):
                if name not in self.sizes:
                    self.error(
                        f"undefined size '{name}' in the shape of '{op.sym_name.data}'"
                        + (f"; sizes are: {', '.join(self.sizes)}" if self.sizes else "; declare it in sizes { ... }"),
                        op,
                        name,
                    )
                    ok = False
            shape.append(expr)
        return shape if ok else None

    # --- index statements ---------------------------------------------------

    def writable(self, name: str, op: Operation) -> bool:
        """The target exists, is not an input, and has no other writer."""
        tensor = self.tensors.get(name)
        if tensor is None:
            self.error(f"undefined tensor '{name}'{self.tensor_hint()}", op, name)
            return False
        if tensor.role.data == "input":
            self.error(f"'{name}' is an input and cannot be written; declare it output or temp", op, name)
            return False
        if name in self.stages:
            self.error(
                f"'{name}' is written by two statements (first at line {line_of(self.stages[name].op)}); "
                "each tensor has one defining statement",
                op,
                name,
            )
            return False
        return True

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
        extents: dict[str, list[tuple[Expr, str, Operation]]] = {}
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
        for read in reads:
            indices = self.read_indices(read)
            if indices is None:
                continue
            name = read.tensor.data
            stage.reads.append(name)
            if name == target:
                self.error(f"statement reads '{name}', the tensor it writes; use '+=' or 'max=' to accumulate", read, name)
                continue
            tensor = self.tensors.get(name)
            if tensor is None:
                if name not in undefined:  # once per statement
                    self.error(f"undefined tensor '{name}'{self.tensor_hint()}" + suggest(name, list(self.tensors)), read, name)
                undefined.add(name)
                continue
            if stmt_dtype is not None and tensor.dtype.data != stmt_dtype:
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
                self.error(
                    f"'{name}' has rank {len(shape)} but is read with {len(indices)} ind{'ices' if len(indices) != 1 else 'ex'}",
                    read,
                    name,
                )
                continue
            accesses.append((read, indices))
            for pos, idx in enumerate(indices):
                if isinstance(idx, Var):
                    extents.setdefault(idx.name, []).append((shape[pos], f"dimension {pos + 1} of '{name}'", read))
        self.bind_variables(op, stage, lhs_vars, accesses, extents)
        self.bounds(accesses, extents)
        if ok:
            self.stages[target] = stage
        self.order.append(stage)
        for name in stage.reads:
            self.read_by.setdefault(name, []).append(stage)

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
        extents: dict[str, list[tuple[Expr, str, Operation]]],
    ) -> None:
        reported: set[str] = set()
        for read, indices in accesses:
            for idx in indices:
                for var in names_in(idx):
                    if var in extents or var in reported:
                        continue
                    reported.add(var)
                    if var in self.sizes:
                        self.error(
                            f"size '{var}' used as an index of '{read.tensor.data}'; indices are loop variables",
                            read,
                            var,
                        )
                    else:
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
            if op.kind.data == "=":
                self.error(
                    f"reduction index '{var}' is used with '='; it does not appear on the left, so the statement "
                    "combines many values into one element: write '+=' (sum) or 'max=' (maximum)",
                    op,
                    "=",
                )
            first_extent, first_where, _ = uses[0]
            for extent, where, user in uses[1:]:
                env = always_eq(first_extent, extent, self.samples)
                if env is not None:
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
                env = always_le(first_extent, extent, self.samples)
                if env is not None:
                    self.error(
                        f"index '{var}' ranges over {first_where} ({text(first_extent)}) but indexes {where} "
                        f"({text(extent)}), which is smaller when {describe_env(env, sorted(self.sizes))}",
                        user,
                        var,
                    )

    def bounds(
        self, accesses: list[tuple[d.ReadOp, list[Expr]]], extents: dict[str, list[tuple[Expr, str, Operation]]]
    ) -> None:
        """Every access with an offset or stride stays inside its tensor."""
        for read, indices in accesses:
            name = read.tensor.data
            shape = self.shapes[name]
            assert shape is not None
            for pos, idx in enumerate(indices):
                if isinstance(idx, Var) or not all(v in extents for v in names_in(idx)):
                    continue
                lo, hi = index_range(idx, {v: extents[v][0][0] for v in names_in(idx)})
                if lo is None or hi is None:
                    continue
                last = parse_affine(f"({text(shape[pos])}) - 1")
                env = always_le(hi, last, self.samples)
                if env is None:
                    env = always_le(parse_affine("0"), lo, self.samples)
                    if env is None:
                        continue
                    self.error(
                        f"index '{text(idx)}' of '{name}' (dimension {pos + 1}) can be {text(lo)}, below 0",
                        read,
                        name,
                    )
                    continue
                diff = linear(sub(hi, last))
                example = diff is None or any(k for k in diff)  # symbolic: show the sizes that break it
                self.error(
                    f"index '{text(idx)}' of '{name}' (dimension {pos + 1}) reaches {text(hi)}, past the last "
                    f"element {text(last)}" + (f" (e.g. when {describe_env(env, sorted(self.sizes))})" if example else ""),
                    read,
                    name,
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
            for name in op.operand_names:  # still read: no second, misleading "never read" warning
                self.read_by.setdefault(name, []).append(stage)
            return
        shapes: list[list[Expr]] = []
        for name in op.operand_names:
            stage.reads.append(name)
            self.read_by.setdefault(name, []).append(stage)
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
        for a, b, what in agree:
            env = always_eq(a, b, self.samples)
            if env is not None:
                self.error(f"'{op.op_name.data}' needs equal sizes for {what}, got {text(a)} and {text(b)}", op, op.op_name.data)
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
            env = always_eq(want, got, self.samples)
            if env is not None:
                self.error(
                    f"'{target}' is declared with dimension {pos + 1} = {text(got)}, but "
                    f"'{op.op_name.data}' gives {text(want)}",
                    op,
                    target,
                )

    # --- document-wide facts ----------------------------------------------------

    def usage(self) -> None:
        position = {id(stage): i for i, stage in enumerate(self.order)}
        for name, tensor in self.tensors.items():
            role = tensor.role.data
            readers = self.read_by.get(name, [])
            writer = self.stages.get(name)
            if role == "output" and writer is None:
                self.error(f"output '{name}' is never written", tensor, name)
            if role == "temp" and not readers:
                self.error(f"temp '{name}' is never read; remove it or declare it output", tensor, name)
            if role == "temp" and writer is None and readers:
                self.error(f"temp '{name}' is read but never written", tensor, name)
            if role == "input" and not readers:
                self.warning(f"input '{name}' is never read", tensor, name)
            if writer is None:
                continue
            for reader in readers:
                if reader is not writer and position[id(reader)] < position[id(writer)]:
                    self.error(
                        f"'{name}' is read here before the statement that writes it (line {line_of(writer.op)})",
                        reader.op,
                        name,
                    )

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
                self.error(f"unknown metric '{op.metric.data}'; expected one of {', '.join(d.METRICS)}", op, op.metric.data)
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
                for name in op.tensors.data:
                    if name.data not in self.tensors:
                        self.error(f"assumption about undefined tensor '{name.data}'", op, name.data)


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


def index_range(idx: Expr, extents: dict[str, Expr]) -> tuple[Expr | None, Expr | None]:
    """Smallest and largest value of a linear index as loop variables range over [0, extent)."""
    form = linear(idx)
    if form is None:
        return None, None
    lo: dict[str, int] = {"": form.get("", 0)}
    hi: dict[str, int] = {"": form.get("", 0)}
    for var, coeff in form.items():
        if not var:
            continue
        ext = linear(extents[var])
        if ext is None:
            return None, None
        target = hi if coeff > 0 else lo
        for k, v in ext.items():
            target[k] = target.get(k, 0) + coeff * v
        target[""] = target.get("", 0) - coeff
    return from_linear(lo), from_linear(hi)
