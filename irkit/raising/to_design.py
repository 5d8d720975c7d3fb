"""tensorop back to a design document (`raise-tensorop`).

The kernel function's arguments give the sizes and tensors, its attributes
the hardware, assumptions, metric and doc line; memref layouts and
alignment give the layout section.  The writes become statements:

- a **named operation** when a run of writes (into one tensor, with the
  temporaries only that run uses) is exactly what the operation generalizes
  to: each registered operation is tried, with its operands and a small set
  of parameter values, by lowering a one-statement document and comparing
  (`irkit.raising.compare`), so recognition needs no pattern of its own per
  operation;
- otherwise an **index statement** per generic: `out[i, j] = body`, or `+=`
  / `max=` when a fill with the combiner's identity precedes a reduction.

Each stage's `schedule` property (recovered by `raise-loop`, or carried from
the document) becomes its schedule section.
"""

from __future__ import annotations

import itertools
import math

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
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

from irkit.affine.printer import affine_text
from irkit.affine.where import split_text
from irkit.dialects import design as d
from irkit.dialects import tensorop as t
from irkit.directives import directive_op, entry_of_row
from irkit.kernel_abi import dtype_name, kernel_args, kernel_scalars, layout_order, scalar_of, size_of
from irkit.named_ops import NAMED_OPS
from irkit.raising.compare import WriteForm, _compare_pair, in_order, kernel_form, where_in_order
from irkit.raising.loop_reader import RaiseError
from irkit.units import CACHE_FIELDS, DRAM_FIELDS, TOP_FIELDS

IDENTITY = {"add": 0.0, "max": -math.inf, "min": math.inf}
COMBINE = {"arith.addf": "add", "arith.addi": "add", "arith.maximumf": "max", "arith.maxsi": "max",
           "arith.minimumf": "min", "arith.minsi": "min"}  # fmt: skip
ASSIGN = {"add": "+=", "max": "max="}


def raise_module(module: ModuleOp) -> ModuleOp:
    """The design document of the module's (first) tensorop kernel."""
    kernel = next((op for op in module.body.block.ops if isinstance(op, func.FuncOp)), None)
    if kernel is None:
        raise RaiseError("raise-tensorop: the module holds no kernel function", module)
    for op in kernel.body.block.ops:
        if op.dialect_name() == "loop":
            raise RaiseError("raise-tensorop: the kernel holds loop IR; run raise-loop first", op)
    _expand_tensor_level_names(kernel)
    return ModuleOp([DesignBuilder(kernel).build()])


def _expand_tensor_level_names(kernel: func.FuncOp) -> None:
    """`reduce` and `elementwise` exist only at tensorop level: the document writes them as index
    statements, so they are printed from their generalization."""
    from irkit.passes.generalize import generalize_op

    for op in list(kernel.walk()):
        if isinstance(op, t.ReduceOp | t.ElementwiseOp):
            block = op.parent_block()
            assert block is not None
            for new in generalize_op(op, "raise-tensorop"):
                block.insert_op_before(new, op)
            op.detach()
            op.erase()


class DesignBuilder:
    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.form = kernel_form(kernel)
        self.sizes, self.tensors = kernel_args(kernel)
        self.size_names = [s.name for s in self.sizes]

    # ---- the whole document ------------------------------------------------------

    def build(self) -> d.DesignOp:
        ops: list[Operation] = []
        doc = self.kernel.attributes.get("irkit.doc")
        if isinstance(doc, StringAttr):
            ops.append(d.DocOp(doc.data))
        ops += [d.SizeOp(s.name, s.default) for s in self.sizes]
        statements, hidden = self.statements()
        inputs = [x for x in self.tensors if x.role == "input"]
        outputs = [x for x in self.tensors if x.role != "input"]
        scalars = {sc.value: sc for sc in kernel_scalars(self.kernel)}
        input_args = {x.value: x for x in inputs}
        for arg in self.kernel.body.block.args:  # inputs and scalars in argument (declaration) order
            if arg in scalars:
                ops.append(d.ScalarOp(scalars[arg].name, scalars[arg].dtype, "input"))
            elif arg in input_args:
                ops.append(self._tensor_decl(input_args[arg].name))
        ops += [self._tensor_decl(name) for name in self.form.temps if name not in hidden]
        for x in outputs:
            ops.append(self._tensor_decl(x.name))
        ops += statements
        ops += self.layout(hidden)
        ops += self.schedules(hidden)
        ops += self.hardware()
        ops += self.assumptions()
        metric = self.kernel.attributes.get("irkit.metric")
        if isinstance(metric, StringAttr):
            ops.append(d.MetricOp(metric.data))
        return d.DesignOp(self.kernel.sym_name.data, ops)

    # ---- statements ----------------------------------------------------------------

    def statements(self) -> tuple[list[Operation], set[str]]:
        """The statements, and the temporaries that belong to a recognised named operation.

        Named operations are tried from the last-written buffer back, so an output claims
        the temporaries of its run before any of them is tried on its own."""
        writes = list(self.form.writes)
        last: dict[str, int] = {w.buffer: i for i, w in enumerate(writes)}
        named_at: dict[int, Operation] = {}
        claimed: set[int] = set()
        hidden: set[str] = set()
        for buf in sorted(last, key=lambda b: -last[b]):
            if last[buf] in claimed:
                continue
            group = [i for i in self._group(buf, writes) if i not in claimed]
            named = self._recognise(buf, [writes[i] for i in group]) if group else None
            if named is None:
                continue
            named_at[max(group)] = named
            claimed |= set(group)
            hidden |= {writes[i].buffer for i in group if writes[i].buffer != buf}
        keyed: list[tuple[tuple[int, int], Operation]] = []
        for op in self.kernel.body.walk():  # named operations as the document gave them (raise-tensorop after lower-design)
            if isinstance(op, t.NamedTensorOp):
                target = self.form.buffer_names[op.outs[0]]
                operands = [self.form.buffer_names[v] for v in op.ins]
                params = dict(op.params.data) if op.params is not None else {}
                keyed.append(
                    (
                        self._position(op),
                        d.NamedOp(target, op.name.removeprefix("tensorop."), operands, params),
                    )
                )
        for k, w in enumerate(writes):
            at = self._position(w.op)
            if k in named_at:
                keyed.append((at, named_at[k]))
                continue
            if k in claimed:
                continue
            if isinstance(w.op, t.FillOp):
                nxt = next((writes[i] for i in range(k + 1, len(writes)) if writes[i].buffer == w.buffer), None)
                if nxt is not None and self._reduction_of(nxt, w) is not None:
                    continue  # the start of the `+=` that follows
                hint = (
                    "; a temporary like this (a padded copy) is part of a named operation, and comes back only "
                    "when that operation is recognised: if it is a plugin's, check its spec and Param.candidates"
                    if w.buffer in self.form.temps
                    else ""
                )
                raise RaiseError(f"cannot print '{w.buffer}': a fill that starts no reduction{hint}", w.op)
            keyed.append((at, self.index_statement(w, k, writes)))
        keyed.sort(key=lambda pair: pair[0])
        return self._in_repeats(keyed), hidden

    def _position(self, op: Operation) -> tuple[int, int]:
        """Where `op` runs: its (top-level) index in the kernel, and its index in a repeat's body."""
        block = self.kernel.body.block
        parent = op.parent_op()
        if isinstance(parent, t.RepeatOp):
            return block.get_operation_index(parent), parent.body.block.get_operation_index(op)
        return block.get_operation_index(op), -1

    def _in_repeats(self, keyed: list[tuple[tuple[int, int], Operation]]) -> list[Operation]:
        """The statements in order, those from one tensorop.repeat together in a `repeat` block."""
        block = self.kernel.body.block
        names = {s.value: s.name for s in self.sizes}
        out: list[Operation] = []
        current: tuple[int, d.RepeatOp] | None = None
        for (top, inner), op in keyed:
            if inner < 0:
                out.append(op)
                current = None
                continue
            if current is None or current[0] != top:
                repeat = list(block.ops)[top]
                assert isinstance(repeat, t.RepeatOp)
                current = (top, d.RepeatOp(names[repeat.count]))
                out.append(current[1])
            current[1].body.block.add_op(op)
        return out

    def _group(self, target: str, writes: list[WriteForm]) -> list[int]:
        """Writes into `target` and into temporaries read only within the group (a named op's run)."""
        temps = set(self.form.temps)
        members = {target}
        changed = True
        while changed:
            changed = False
            for w in writes:
                if w.buffer in members:
                    for r in w.reads_before:
                        if r in temps and r not in members:
                            members.add(r)
                            changed = True
        for w in writes:  # a member temp read from outside the group: not a private run
            if w.buffer not in members and any(r in members and r != target for r in w.reads_before):
                return []
        return [i for i, w in enumerate(writes) if w.buffer in members]

    def _recognise(self, target: str, group: list[WriteForm]) -> Operation | None:
        inputs: list[str] = []
        temps = {w.buffer for w in group} - {target}
        for w in group:
            for r in w.reads_before:
                if r != target and r not in temps and r not in inputs:
                    inputs.append(r)
        if not any(isinstance(w.op, t.GenericOp) for w in group):
            return None
        if any(isinstance(w.op, t.GenericOp) and w.op.where is not None for w in group):
            return None  # a named operation runs its whole box
        for spec in NAMED_OPS.values():
            if spec.arity != len(inputs):
                continue
            for operands in itertools.permutations(inputs):
                for params in self._param_choices(spec, list(operands), target):
                    if self._same(target, list(operands), spec.name, params, group):
                        return d.NamedOp(target, spec.name, list(operands), params)
        return None

    def _rank(self, name: str) -> int:
        for x in self.tensors:
            if x.name == name:
                return len(x.shape.results)
        alloc = self.form.temps.get(name)
        return len(alloc.shape.data.results) if alloc is not None else 0

    def _param_choices(self, spec, operands: list[str], target: str) -> list[dict[str, Attribute]]:
        choices: list[list[tuple[str, Attribute]]] = []
        for key, p in spec.params.items():
            if p.candidates is not None:
                values: list[Attribute] = [_param_attr(v) for v in p.candidates(self._rank(target))]
            elif p.kind == "int":
                values = [IntegerAttr(v, i64) for v in range(0, 4)]
            elif p.kind == "name":
                values = [StringAttr(c) for c in p.choices]
            else:
                rank = self._rank(operands[0])
                values = [
                    ArrayAttr([IntegerAttr(x, i64) for x in perm]) for perm in itertools.permutations(range(rank))
                ]
            choices.append([(key, v) for v in values])
        return [dict(combo) for combo in itertools.product(*choices)] if choices else [{}]

    def _same(
        self, target: str, operands: list[str], op_name: str, params: dict[str, Attribute], group: list[WriteForm]
    ) -> bool:
        """Does the one-statement document `target = op_name(operands, params)` lower to `group`?"""
        from irkit.raising.verify import document_tensorop

        items: list[Operation] = [d.SizeOp(s.name, s.default) for s in self.sizes]
        declared = set()
        for name in [*operands, target]:
            if name in declared:
                continue
            declared.add(name)
            items.append(self._tensor_decl(name))
        items.append(d.NamedOp(target, op_name, operands, params))
        try:
            trial = document_tensorop(ModuleOp([d.DesignOp("trial", items)]))
        except Exception:  # a candidate that does not fit the shapes (a diagnostic, or worse)
            return False
        kernel = next(op for op in trial.body.block.ops if isinstance(op, func.FuncOp))
        tform = kernel_form(kernel)
        mine: dict[str, list[WriteForm]] = {}
        for w in group:
            mine.setdefault(w.buffer, []).append(w)
        theirs: dict[str, list[WriteForm]] = {}
        for w in tform.writes:
            theirs.setdefault(w.buffer, []).append(w)
        if set(mine) != set(theirs):
            return False
        for buf, ws in mine.items():
            if len(ws) != len(theirs[buf]):
                return False
            for a, b in zip(theirs[buf], ws):
                if _compare_pair(buf, buf, a, b, tform, self.form):
                    return False
        return True

    def _tensor_decl(self, name: str) -> d.TensorOp:
        for x in self.tensors:
            if x.name == name:
                return d.TensorOp(name, x.dtype, [affine_text(r, [], self.size_names) for r in x.shape.results], x.role)
        alloc = self.form.temps[name]
        shape = [affine_text(r, [], self.size_names) for r in alloc.shape.data.results]
        return d.TensorOp(name, dtype_name(alloc.results[0].type.element_type), shape, "temp")  # type: ignore[attr-defined]

    def _role(self, name: str) -> str | None:
        return next((x.role for x in self.tensors if x.name == name), None)

    def _reduction_of(self, w: WriteForm, fill: WriteForm | None) -> str | None:
        """The combiner kind when `w` is `out = combine(out, x)` started by `fill` at its identity,
        or, with no fill, accumulating onto an in-out tensor's value."""
        op = w.op
        if not isinstance(op, t.GenericOp) or t.REDUCTION not in op.iterator_kinds:
            return None
        last = op.body.block.last_op
        value = last.operands[0] if last is not None and last.operands else None
        owner = value.owner if value is not None else None
        if not isinstance(owner, Operation) or owner.name not in COMBINE:
            return None
        out_arg = op.body.block.args[-1]
        if out_arg not in owner.operands:
            return None
        kind = COMBINE[owner.name]
        if fill is None:
            return kind if kind in ASSIGN and self._role(w.buffer) == "inout" else None
        start = fill.op.value  # type: ignore[attr-defined]
        if not isinstance(start, FloatAttr | IntegerAttr) or float(start.value.data) != IDENTITY.get(kind):
            return None
        return kind if kind in ASSIGN else None

    def index_statement(self, w: WriteForm, k: int, writes: list[WriteForm]) -> d.StmtOp:
        op = w.op
        assert isinstance(op, t.GenericOp)
        names = [n.data for n in op.loop_names.data]
        out_map = op.maps[-1]
        lhs: list[str] = []
        for r in out_map.results:
            text = affine_text(r, names, self.size_names)
            if text not in names:
                raise RaiseError(f"cannot print the write to '{w.buffer}' as a statement: it writes at {text}", op)
            lhs.append(text)
        prev = next((writes[i] for i in range(k - 1, -1, -1) if writes[i].buffer == w.buffer), None)
        kind = self._reduction_of(w, prev if prev is not None and isinstance(prev.op, t.FillOp) else None)
        block = Block()
        values: dict[SSAValue, SSAValue] = {}
        operand_names = [self.form.buffer_names[v] for v in op.ins]
        out_arg = op.body.block.args[-1]
        skip: Operation | None = None
        if kind is not None:
            last = op.body.block.last_op.operands[0].owner  # type: ignore[union-attr]
            skip = last  # type: ignore[assignment]
        for i, arg in enumerate(op.body.block.args[:-1]):
            if not arg.uses:
                continue
            index = [affine_text(r, names, self.size_names) for r in op.maps[i].results]
            read = d.ReadOp(operand_names[i], index, arg.type)
            block.add_op(read)
            values[arg] = read.results[0]
        result: SSAValue | None = None
        converting: dict[SSAValue, str] = {}  # `arith.index_cast` of a size, before its `arith.sitofp`
        for body_op in op.body.block.ops:
            if isinstance(body_op, t.YieldOp):
                result = body_op.operands[0]
                break
            named = self._named_value(body_op, converting, names)
            if named is not None:
                if named:
                    value = d.ValueOp(named, body_op.results[0].type)
                    block.add_op(value)
                    values[body_op.results[0]] = value.result
                continue
            for x in body_op.operands:
                if x in converting:
                    raise RaiseError(f"cannot print the write to '{w.buffer}': '{converting[x]}' is used as an integer value", op)
                name = scalar_of(x)
                if name is not None and x not in values:
                    value = d.ValueOp(name, x.type)
                    block.add_op(value)
                    values[x] = value.result
            if body_op is skip:
                other = [x for x in body_op.operands if x is not out_arg]
                values[body_op.results[0]] = values.get(other[0], other[0])
                continue
            if out_arg in body_op.operands and out_arg not in values:
                reduction = t.REDUCTION in op.iterator_kinds and op.ordered is None  # a recurrence's k runs in order
                if kind is not None or self._role(w.buffer) != "inout" or reduction:
                    raise RaiseError(f"cannot print the write to '{w.buffer}' as a statement: it reads its own target", op)
                own = d.ReadOp(w.buffer, lhs, out_arg.type)  # an in-out tensor's element, read where it is written
                block.add_op(own)
                values[out_arg] = own.result
            clone = body_op.clone(value_mapper=dict(values))
            block.add_op(clone)
            for a, b in zip(body_op.results, clone.results):
                values[a] = b
        assert result is not None
        block.add_op(d.YieldOp(values.get(result, result)))
        where = _equalities(where_in_order(op, names, self.size_names)) if op.where is not None else None
        carry = list(names) if op.ordered is not None else None  # a recurrence: its loops in their order
        return d.StmtOp(w.buffer, lhs, ASSIGN[kind] if kind else "=", Region(block), where, carry)

    def _named_value(self, op: Operation, converting: dict[SSAValue, str], names: list[str]) -> str | None:
        """A size or an index read as a value: '' for its `tensorop.index` and `index_cast` (held in
        `converting`), its name for the op whose result is the value in the statement's type; None
        for any other op."""
        if isinstance(op, t.IndexOp):
            converting[op.result] = names[op.loop]
            return ""
        if isinstance(op, arith.IndexCastOp):
            size = converting.get(op.input) or size_of(op.input)
            if size is None:
                return None
            if op.result.type == i64:
                converting[op.result] = size
                return ""
            return size
        if isinstance(op, arith.SIToFPOp) and op.input in converting:
            return converting[op.input]
        return None

    # ---- layout, schedule, hardware, assumptions ------------------------------------

    def layout(self, hidden: set[str]) -> list[Operation]:
        """Inputs, temporaries, outputs: the order documents declare them in."""
        out: list[Operation] = [_layout_op(x.name, x.order, x.align) for x in self.tensors if x.role == "input"]
        for name, alloc in self.form.temps.items():
            if name not in hidden:
                align = alloc.align.value.data if alloc.align is not None else None
                out.append(_layout_op(name, layout_order(alloc.results[0].type), align))  # type: ignore[arg-type]
        out += [_layout_op(x.name, x.order, x.align) for x in self.tensors if x.role != "input"]
        return out

    def schedules(self, hidden: set[str]) -> list[Operation]:
        out: list[Operation] = []
        last: dict[str, t.GenericOp | t.NamedTensorOp] = {}
        for op in in_order(self.kernel.body.block.ops):
            if isinstance(op, t.GenericOp | t.NamedTensorOp):
                buf = self.form.buffer_names[op.outs[0]]
                if buf not in hidden:
                    last[buf] = op
        for stage, op in reversed(list(last.items())):
            rows = op.schedule.data if op.schedule is not None else ()
            directives = [_directive(row) for row in rows]  # type: ignore[arg-type]
            directives = [x for x in directives if x is not None]
            if directives:
                out.append(d.ScheduleOp(stage, directives))
        return out

    def hardware(self) -> list[Operation]:
        hw = self.kernel.attributes.get("irkit.hardware")
        if isinstance(hw, StringAttr):
            return [d.HardwareRefOp(hw.data)]
        if not isinstance(hw, DictionaryAttr):
            return []
        from irkit.calibrate.writer import FIELD_FAMILY, quantity

        def fields(values: dict[str, Attribute], table: dict) -> list[Operation]:
            out: list[Operation] = []
            for key, attr in values.items():
                if key not in table or not isinstance(attr, IntegerAttr | FloatAttr):
                    continue
                family = FIELD_FAMILY.get(key, table[key][0])
                text, unit = quantity(float(attr.value.data), family)
                out.append(d.HwFieldOp(key, float(text), unit))
            return out

        items = fields(dict(hw.data), TOP_FIELDS)
        levels = hw.data.get("levels")
        for level in levels.data if isinstance(levels, ArrayAttr) else ():
            data = dict(level.data)  # type: ignore[attr-defined]
            name = data.pop("name").data
            items.append(d.HwLevelOp(name, fields(data, DRAM_FIELDS if name == "dram" else CACHE_FIELDS)))
        name = self.kernel.attributes.get("irkit.hardware_name")
        return [d.HardwareOp(name.data if isinstance(name, StringAttr) else None, items)]

    def assumptions(self) -> list[Operation]:
        attr = self.kernel.attributes.get("irkit.assume")
        if not isinstance(attr, DictionaryAttr):
            return []
        out: list[Operation] = []
        data = attr.data
        for size, divisor in data["divisible"].data.items() if "divisible" in data else ():  # type: ignore[attr-defined]
            out.append(d.AssumeDivisibleOp(size, divisor.value.data))
        for tensor, nbytes in data["aligned"].data.items() if "aligned" in data else ():  # type: ignore[attr-defined]
            out.append(d.AssumeAlignedOp(tensor, nbytes.value.data))
        for group in data["noalias"].data if "noalias" in data else ():  # type: ignore[attr-defined]
            out.append(d.AssumeNoAliasOp([s.data for s in group.data]))
        if isinstance(data.get("relaxed_math"), UnitAttr):
            out.append(d.AssumeRelaxedMathOp())
        if "positive_definite" in data:
            out.append(d.AssumePositiveDefiniteOp([s.data for s in data["positive_definite"].data]))  # type: ignore[attr-defined]
        return out


def _equalities(texts: list[str]) -> list[str]:
    """`v >= e` and `v <= e` as the one constraint `v == e`."""
    out: list[str] = []
    for text in texts:
        var, op, rest = split_text(text)
        if op == ">=" and f"{var} <= {rest}" in texts:
            out.append(f"{var} == {rest}")
        elif not (op == "<=" and f"{var} >= {rest}" in texts):
            out.append(text)
    return out


def _layout_op(name: str, order: list[int], align: int | None) -> d.LayoutOp:
    rank = len(order)
    if order == list(range(rank)):
        return d.LayoutOp(name, "row_major", None, align)
    if order == list(reversed(range(rank))):
        return d.LayoutOp(name, "col_major", None, align)
    return d.LayoutOp(name, "order", order, align)


def _directive(row: DictionaryAttr) -> Operation | None:
    """The design op of a schedule dictionary, by its directive's record (None for an unknown kind)."""
    return directive_op(entry_of_row(row))


def _param_attr(value: object) -> Attribute:
    """A parameter value (int, name or list of ints) as the attribute a design op holds."""
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, str):
        return StringAttr(value)
    return ArrayAttr([IntegerAttr(int(v), i64) for v in value])  # type: ignore[attr-defined]
