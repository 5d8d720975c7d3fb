"""`lower-design`: design IR to tensorop IR (a kernel `func.func`).

Each `design.design` becomes a kernel function (`irkit.kernel_abi`):
sizes and input/output tensors become arguments, temporaries become
`tensorop.alloc`, layouts become memref layouts, and each statement
becomes one tensorop op -- an index statement a `tensorop.generic` (after
a `tensorop.fill` with the reduction's identity for `+=` / `max=`), a named
statement the named tensorop op.  The stage's schedule directives travel
along on the op, the hardware, assumptions and metric on the function.

The pass expects checked design IR (`check-design`): it reports what it
cannot lower as a located diagnostic, not a traceback, but it does not
repeat the checker's work.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineConstraintExpr, AffineConstraintKind, AffineExpr, AffineMap, AffineSet
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from irkit.affine.where import normal_form
from irkit.affine_text import Expr, Var, names_in, parse_affine, to_affine_expr
from irkit.diagnostics import DiagnosticError, at_op
from irkit.dialects import design as d
from irkit.dialects import tensorop as t
from irkit.frontend.build import is_float
from irkit.kernel_abi import kernel_function, memref_type
from irkit.named_ops import get_named_op
from irkit.units import CACHE_FIELDS, DRAM_FIELDS, TOP_FIELDS, to_base


def location_text(op: Operation) -> str:
    loc = op.location
    if hasattr(loc, "filename"):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"  # type: ignore[attr-defined]
    return ""


def storage_order(layout: d.LayoutOp | None, rank: int) -> list[int] | None:
    if layout is None or layout.kind is None or layout.kind.data == "row_major":
        return None
    if layout.kind.data == "col_major":
        return list(reversed(range(rank)))
    return layout.order_list


def schedule_attr(sched: d.ScheduleOp | None) -> ArrayAttr | None:
    """The stage's directives as dictionaries: kind, operands, and where they were written."""
    if sched is None:
        return None
    rows: list[Attribute] = []
    for op in sched.body.block.ops:
        entry: dict[str, Attribute] = {"kind": StringAttr(op.name.removeprefix("design."))}
        for key, value in op.properties.items():
            entry[key] = value
        entry["loc"] = StringAttr(location_text(op))
        rows.append(DictionaryAttr(entry))
    return ArrayAttr(rows)


def hardware_attr(ops: list[Operation]) -> Attribute | None:
    """The hardware section: a description name, or the inline block in base units."""
    for op in ops:
        if isinstance(op, d.HardwareRefOp):
            return op.ref
        if isinstance(op, d.HardwareOp):
            return DictionaryAttr(_hw_fields(op, TOP_FIELDS) | {"levels": ArrayAttr(_hw_levels(op))})
    return None


def _hw_fields(owner: Operation, table: dict) -> dict[str, Attribute]:
    out: dict[str, Attribute] = {}
    for op in owner.regions[0].block.ops:
        if isinstance(op, d.HwFieldOp) and op.key.data in table:
            unit = None if op.unit is None else op.unit.data
            value = to_base(op.value.value.data, unit)
            out[op.key.data] = IntegerAttr(int(value), i64) if value == int(value) else FloatAttr(value, 64)
    return out


def _hw_levels(hw: d.HardwareOp) -> list[Attribute]:
    levels: list[Attribute] = []
    for op in hw.body.block.ops:
        if isinstance(op, d.HwLevelOp):
            table = DRAM_FIELDS if op.is_dram else CACHE_FIELDS
            levels.append(DictionaryAttr({"name": op.level} | _hw_fields(op, table)))
    return levels


def assume_attr(ops: list[Operation]) -> DictionaryAttr:
    divisible: dict[str, Attribute] = {}
    aligned: dict[str, Attribute] = {}
    noalias: list[Attribute] = []
    relaxed = False
    definite: list[Attribute] = []
    for op in ops:
        if isinstance(op, d.AssumeDivisibleOp):
            divisible[op.size.data] = op.divisor
        elif isinstance(op, d.AssumeAlignedOp):
            aligned[op.tensor.data] = op.alignment
        elif isinstance(op, d.AssumeNoAliasOp):
            noalias.append(op.tensors)
        elif isinstance(op, d.AssumeRelaxedMathOp):
            relaxed = True
        elif isinstance(op, d.AssumePositiveDefiniteOp):
            definite.extend(op.tensors.data)
    attrs: dict[str, Attribute] = {
        "divisible": DictionaryAttr(divisible),
        "aligned": DictionaryAttr(aligned),
        "noalias": ArrayAttr(noalias),
    }
    if relaxed:
        attrs["relaxed_math"] = UnitAttr()
    if definite:
        attrs["positive_definite"] = ArrayAttr(definite)
    return DictionaryAttr(attrs)


@dataclass
class Lowering:
    """Lowers one `design.design` to a kernel function."""

    design: d.DesignOp

    def __post_init__(self) -> None:
        ops = list(self.design.body.block.ops)
        self.ops = ops
        self.size_ops = [op for op in ops if isinstance(op, d.SizeOp)]
        self.size_names = [op.sym_name.data for op in self.size_ops]
        self.tensor_ops = {op.sym_name.data: op for op in ops if isinstance(op, d.TensorOp)}
        self.layouts = {op.tensor.data: op for op in ops if isinstance(op, d.LayoutOp)}
        self.schedules = {op.stage.data: op for op in ops if isinstance(op, d.ScheduleOp)}
        self.aligned = {op.tensor.data: op.alignment.value.data for op in ops if isinstance(op, d.AssumeAlignedOp)}
        self.shapes = {name: [parse_affine(e) for e in op.shape_exprs] for name, op in self.tensor_ops.items()}
        self.symbols = {name: AffineExpr.symbol(i) for i, name in enumerate(self.size_names)}

    def fail(self, message: str, op: Operation) -> DiagnosticError:
        return DiagnosticError([at_op("error", f"lower-design: {message}", op)])

    def shape_map(self, name: str) -> AffineMap:
        return self.extent_map(self.shapes[name])

    def extent_map(self, exprs: list[Expr]) -> AffineMap:
        results = tuple(to_affine_expr(e, self.symbols) for e in exprs)
        return AffineMap(0, len(self.size_names), results)

    def order(self, name: str) -> list[int] | None:
        return storage_order(self.layouts.get(name), len(self.shapes[name]))

    def align(self, name: str) -> int | None:
        layout = self.layouts.get(name)
        values = [
            v for v in (layout.align.value.data if layout and layout.align else None, self.aligned.get(name)) if v
        ]
        return max(values) if values else None

    def argument(self, op: d.TensorOp | d.ScalarOp) -> tuple:
        """A `kernel_function` row: a tensor's shape, layout and alignment, or a scalar (no shape)."""
        name = op.sym_name.data
        if isinstance(op, d.ScalarOp):
            return (name, op.dtype.data, op.role.data, None, None, None)
        return (name, op.dtype.data, op.role.data, self.shape_map(name), self.order(name), self.align(name))

    def run(self) -> func.FuncOp:
        args = [
            op for op in self.ops if isinstance(op, (d.TensorOp, d.ScalarOp)) and op.role.data != "temp"
        ]
        kernel = kernel_function(
            self.design.design_name,
            [(op.sym_name.data, op.default.value.data if op.default else None) for op in self.size_ops],
            [self.argument(op) for op in args],
        )
        kernel.location = self.design.location
        block = kernel.body.block
        n_sizes = len(self.size_names)
        self.sizes = list(block.args[:n_sizes])
        self.buffers: dict[str, SSAValue] = {
            op.sym_name.data: arg for op, arg in zip(args, block.args[n_sizes:]) if isinstance(op, d.TensorOp)
        }
        self.scalars: dict[str, SSAValue] = {
            op.sym_name.data: arg for op, arg in zip(args, block.args[n_sizes:]) if isinstance(op, d.ScalarOp)
        }
        for name, op in self.tensor_ops.items():
            if op.role.data != "temp":
                continue
            alloc = t.AllocOp(
                self.sizes,
                name,
                AffineMapAttr(self.shape_map(name)),
                memref_type(op.dtype.data, len(self.shapes[name]), self.order(name)),
            )
            if self.align(name):
                alloc.properties["align"] = IntegerAttr(self.align(name), i64)
            alloc.location = op.location
            alloc.result.name_hint = name
            block.add_op(alloc)
            self.buffers[name] = alloc.result
        for op in self.ops:
            block.add_ops(self.statement(op))
        block.add_op(func.ReturnOp())
        hw = hardware_attr(self.ops)
        if hw is not None:
            kernel.attributes["irkit.hardware"] = hw
        for op in self.ops:  # what only a reader needs, kept so raising can print the document back
            if isinstance(op, d.HardwareOp) and op.hw_name is not None:
                kernel.attributes["irkit.hardware_name"] = op.hw_name
            elif isinstance(op, d.DocOp):
                kernel.attributes["irkit.doc"] = op.text
        kernel.attributes["irkit.assume"] = assume_attr(self.ops)
        for op in self.ops:
            if isinstance(op, d.MetricOp):
                kernel.attributes["irkit.metric"] = op.metric
        return kernel

    def statement(self, op: Operation) -> list[Operation]:
        """The tensorop ops of a statement (none for other ops), a `repeat` block's in a repeat."""
        if isinstance(op, d.StmtOp):
            return self.index_stmt(op)
        if isinstance(op, d.NamedOp):
            return [self.named_stmt(op)]
        if isinstance(op, d.RepeatOp):
            count = op.count.data
            if count not in self.size_names:
                raise self.fail(f"repeat {count}: '{count}' is not a size (run check-design)", op)
            body = [new for stmt in op.body.block.ops for new in self.statement(stmt)]
            repeat = t.RepeatOp(self.sizes[self.size_names.index(count)], body)
            repeat.location = op.location
            return [repeat]
        return []

    # --- index statements ----------------------------------------------------

    def index_stmt(self, stmt: d.StmtOp) -> list[Operation]:
        target = stmt.target.data
        lhs = [parse_affine(e) for e in stmt.index_exprs]
        if not all(isinstance(e, Var) for e in lhs):
            raise self.fail("left-hand indices must be plain variables (run check-design)", stmt)
        loops = [e.name for e in lhs]  # type: ignore[union-attr]
        lhs_names = list(loops)
        extents = list(self.shapes[target])
        # An in-out target read at the element written is the generic's output argument (its current value);
        # a recurrence's reads of its target elsewhere are reads of the buffer, made as the loops run.
        written = list(stmt.index_exprs)
        own = [op for op in stmt.body.walk() if isinstance(op, d.ReadOp) and op.tensor.data == target
               and (not stmt.carry_loops or list(op.index_exprs) == written)]  # fmt: skip
        reads = [op for op in stmt.body.walk() if isinstance(op, d.ReadOp) and op not in own]
        accesses = [(r, [parse_affine(e) for e in r.index_exprs]) for r in reads]
        for read, indices in accesses:
            for pos, idx in enumerate(indices):
                if isinstance(idx, Var) and idx.name not in loops:
                    loops.append(idx.name)
                    extents.append(self.shapes[read.tensor.data][pos])
        for read, indices in accesses:
            for idx in indices:
                for name in names_in(idx):
                    if name not in loops and name not in self.size_names:
                        raise self.fail(f"index '{name}' has no range (run check-design)", read)
        if stmt.carry_loops:  # a recurrence runs its loops in the order it gives
            by_name = dict(zip(loops, extents))
            loops = list(stmt.carry_loops)
            extents = [by_name[n] for n in loops]
        dims = {name: AffineExpr.dimension(i) for i, name in enumerate(loops)}
        over = dims | self.symbols  # an index may use the sizes (`A[N - 1 - i]`): map symbols
        maps = []
        for _, idx in accesses:
            uses_sizes = any(n in self.symbols for e in idx for n in names_in(e))
            exprs = tuple(to_affine_expr(e, over if uses_sizes else dims) for e in idx)
            maps.append(AffineMapAttr(AffineMap(len(loops), len(self.size_names) if uses_sizes else 0, exprs)))
        maps.append(AffineMapAttr(AffineMap(len(loops), 0, tuple(dims[n] for n in lhs_names))))
        out = self.buffers[target]
        etype = out.type.element_type  # type: ignore[attr-defined]
        block = Block(arg_types=[etype] * (len(reads) + 1))
        for arg, name in zip(block.args, [r.tensor.data for r in reads] + [target]):
            arg.name_hint = name
        values: dict[SSAValue, SSAValue] = {r.result: a for r, a in zip(reads, block.args)}
        values |= {r.result: block.args[-1] for r in own}
        result: SSAValue | None = None
        for op in stmt.body.block.ops:
            if isinstance(op, d.ReadOp):
                continue
            if isinstance(op, d.ValueOp):
                values[op.result] = self.value(op, block, loops)
                continue
            if isinstance(op, d.YieldOp):
                result = values[op.value]
                continue
            new = op.clone(value_mapper=values)
            block.add_op(new)
            for old_res, new_res in zip(op.results, new.results):
                values[old_res] = new_res
        assert result is not None
        kind = stmt.kind.data
        ops: list[Operation] = []
        if kind != "=":
            if self.tensor_ops[target].role.data != "inout":  # an in-out tensor accumulates onto its value
                identity = _identity(kind, etype)
                fill = t.FillOp(out, self.sizes, identity, target)
                fill.location = stmt.location
                ops.append(fill)
            combine = _combiner(kind, etype)(block.args[-1], result)
            combine.location = stmt.location
            block.add_op(combine)
            result = combine.results[0]
        yield_op = t.YieldOp(result)
        yield_op.location = stmt.location
        block.add_op(yield_op)
        where = self.where_set(stmt, loops)
        generic = t.GenericOp(
            [self.buffers[r.tensor.data] for r in reads],
            [out],
            self.sizes,
            stage=target,
            loop_names=loops,
            domain=AffineMapAttr(self.extent_map(extents)),
            indexing_maps=maps,
            iterators=[t.PARALLEL if n in lhs_names else t.REDUCTION for n in loops],
            body=Region(block),
            schedule=schedule_attr(self.schedules.get(target)),
            where=where,
            ordered=bool(stmt.carry_loops),
        )
        generic.location = stmt.location
        ops.append(generic)
        return ops

    def where_set(self, stmt: d.StmtOp, loops: list[str]) -> AffineSetAttr | None:
        """The statement's `where` as a set over its loops (dims) and the sizes (symbols)."""
        if not stmt.where_texts:
            return None
        env = {name: AffineExpr.dimension(i) for i, name in enumerate(loops)} | self.symbols
        constraints = []
        for text in stmt.where_texts:
            c = normal_form(text)
            kind = AffineConstraintKind.eq if c.equal else AffineConstraintKind.ge
            constraints.append(AffineConstraintExpr(kind, to_affine_expr(c.expr, env), AffineExpr.constant(0)))
        return AffineSetAttr(AffineSet(len(loops), len(self.size_names), tuple(constraints)))

    def value(self, op: d.ValueOp, block: Block, loops: list[str]) -> SSAValue:
        """A scalar (its argument, read from above the loops), or a size or one of the statement's
        indices (`tensorop.index`) converted to the statement's type."""
        name = op.ref.data
        if name in self.scalars:
            return self.scalars[name]
        converted: list[Operation] = []
        if name in loops:
            index = t.IndexOp(loops.index(name))
            index.result.name_hint = name if SSAValue.is_valid_name(name) else None
            converted.append(index)
            integer: SSAValue = index.result
        elif name in self.size_names:
            integer = self.sizes[self.size_names.index(name)]
        else:
            raise self.fail(f"'{name}' is neither a scalar, a size nor an index of the statement (run check-design)", op)
        etype = op.result.type
        as_int = arith.IndexCastOp(integer, etype if not is_float(etype) else i64)
        converted.append(as_int)
        if is_float(etype):
            converted.append(arith.SIToFPOp(as_int.result, etype))
        for new in converted:
            new.location = op.location
            block.add_op(new)
        return converted[-1].results[0]

    # --- named statements ------------------------------------------------------

    def named_stmt(self, stmt: d.NamedOp) -> Operation:
        spec = get_named_op(stmt.op_name.data)
        params = dict(stmt.params.data)
        shapes = [self.shapes[n] for n in stmt.operand_names]
        result_rank = len(self.shapes[stmt.target.data])
        loops = spec.loops(result_rank, params)
        domain = spec.domain(shapes, params)
        cls = t.NAMED_TENSOR_OPS.get(spec.name)
        if cls is None:
            raise self.fail(
                f"'{spec.name}' has no tensorop form yet: register one with irkit.extend.register_named_op "
                "(tensor_op= and generalize=, docs/extending.md)",
                stmt,
            )
        op = cls(
            [self.buffers[n] for n in stmt.operand_names],
            self.buffers[stmt.target.data],
            self.sizes,
            stage=stmt.target.data,
            loop_names=loops,
            domain=AffineMapAttr(self.extent_map(domain)),
            params=params,
            schedule=schedule_attr(self.schedules.get(stmt.target.data)),
        )
        op.location = stmt.location
        return op


def _identity(kind: str, etype: Attribute) -> Attribute:
    if kind == "+=":
        return FloatAttr(0.0, etype) if is_float(etype) else IntegerAttr(0, etype)  # type: ignore[arg-type]
    if is_float(etype):
        return FloatAttr(float("-inf"), etype)  # type: ignore[arg-type]
    return IntegerAttr(-(2**31), etype)  # type: ignore[arg-type]


def _combiner(kind: str, etype: Attribute):
    if kind == "+=":
        return arith.AddfOp if is_float(etype) else arith.AddiOp
    return arith.MaximumfOp if is_float(etype) else arith.MaxSIOp


@dataclass(frozen=True)
class LowerDesignPass(ModulePass):
    """Lower each design document to a tensorop kernel function: sizes and tensors become
    arguments (layouts as memref layouts), temporaries become allocations, each statement a
    structured or named tensorop op carrying its stage's schedule."""

    name = "lower-design"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        designs = [o for o in op.body.block.ops if isinstance(o, d.DesignOp)]
        if not designs:
            raise DiagnosticError([at_op("error", "lower-design: the module holds no design.design to lower", op)])
        from irkit.checks.design import check_module

        # Not the checker's lowering (checks.document): the passes after this one report
        # the same diagnostics, and lowering twice would double the cost of `irkit run`.
        errors = [diag for diag in check_module(op) if diag.severity == "error"]
        if errors:  # a document the checker rejects has no meaning to lower
            raise DiagnosticError(errors)
        rewriter = Rewriter()
        for design in designs:
            rewriter.replace_op(design, Lowering(design).run())
