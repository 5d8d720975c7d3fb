"""Design IR back to canonical `.design` text.

`print_design` is the inverse of the frontend: for any module the frontend
builds, parsing the printed text gives the same IR (compared without
locations).  The text is canonical -- one spelling per IR -- so printing is
idempotent: consecutive sizes, layout entries and assumptions are grouped
into one section each, statement bodies are printed back from their
`arith`/`math` ops with the fewest parentheses that keep the tree, and
numbers take their shortest spelling that reads back to the same value.

A module holding a single `hardware NAME { ... }` block prints as a `.hw`
file.
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue

from irkit.dialects import design as d

INDENT = "  "

# Precedence of the expression grammar: higher binds tighter.
_ADD, _MUL, _UNARY, _ATOM = 1, 2, 3, 4
_BINARY = {
    "arith.addf": ("+", _ADD),
    "arith.addi": ("+", _ADD),
    "arith.subf": ("-", _ADD),
    "arith.subi": ("-", _ADD),
    "arith.mulf": ("*", _MUL),
    "arith.muli": ("*", _MUL),
    "arith.divf": ("/", _MUL),
    "arith.divsi": ("/", _MUL),
}
_CALLS = {
    "arith.maximumf": "max",
    "arith.maxsi": "max",
    "arith.minimumf": "min",
    "arith.minsi": "min",
    "math.exp": "exp",
    "math.sqrt": "sqrt",
}


# The grammar's UNIT words.  The lexer reads a unit wherever one may follow a
# number, even as the start of a longer word: after a unit-less value, the
# next line's key `B2` (or `Bytes`) would read as the unit `B`, so such a
# value is closed with `;`.
UNITS = ("bits", "B", "KiB", "MiB", "GiB", "KB", "MB", "GB", "Hz", "kHz", "MHz", "GHz", "ns", "cycles")


def _unit_prefixed(key: str) -> bool:
    return key.startswith(UNITS)


class DesignPrintError(ValueError):
    """IR that has no `.design` spelling (an op the language cannot express)."""


# --- numbers and strings -------------------------------------------------------


def _shortest(value: float, bits: int = 64) -> str:
    """Fewest characters that read back as `value` at this precision: positional or scientific."""
    import numpy as np

    x = (np.float32 if bits == 32 else np.float64)(value)
    positional = np.format_float_positional(x, unique=True, trim="-")
    scientific = np.format_float_scientific(x, unique=True, trim="-")
    return min(positional, scientific, key=len)


def format_number(value: float) -> str:
    """A non-negative float in the grammar's NUMBER form, as short as possible: 2.0 -> 2, 2.9 -> 2.9."""
    if pymath.isnan(value) or value < 0 or (value == 0 and pymath.copysign(1.0, value) < 0):
        raise DesignPrintError(f"{value!r} has no spelling as a design-language number")
    if pymath.isinf(value):
        return "1e999"  # reads back as infinity, as any overflowing literal does
    text = _shortest(value)
    return text if float(text) == value else repr(value)


def _float_constant(value: float, type_: Attribute) -> str:
    """The shortest spelling whose value, rounded to `type_` as the frontend does, is `value`."""
    rounder = getattr(type_, "round", None)
    if rounder is None or pymath.isinf(value) or pymath.isnan(value):
        return format_number(value)
    text = _shortest(value, getattr(type_, "bitwidth", 64))
    if rounder(float(text)) == value:
        return text
    return repr(value)  # exact as a double, so it rounds to itself


def escape_string(text: str) -> str:
    """`text` as a STRING token: double quotes, escaping only \\" \\\\ \\n \\t."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


# --- expressions ---------------------------------------------------------------
#
# A statement body is printed without recursion: a depth-first walk with
# an explicit stack, each value's text a tree of fragments joined once at
# the end, so a sum of 100,000 terms or as many nested minuses prints in
# time and memory linear in its size, and never deeper than the parser.


class _Text:
    """The text of a subexpression: fragments (strings or other texts), its precedence and first character."""

    __slots__ = ("parts", "prec", "first")

    def __init__(self, parts: list[str | _Text], prec: int):
        self.parts = parts
        self.prec = prec
        head = parts[0]
        self.first = head[:1] if isinstance(head, str) else head.first


def _join(root: _Text) -> str:
    out: list[str] = []
    stack: list[str | _Text] = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        else:
            stack.extend(reversed(item.parts))
    return "".join(out)


def _is_zero_constant(value: SSAValue) -> bool:
    op = value.owner
    if not isinstance(op, Operation) or op.name != "arith.constant":
        return False
    attr = op.properties.get("value")
    return isinstance(attr, IntegerAttr) and attr.value.data == 0


def _is_int_negation(op: Operation) -> bool:
    """`subi(0, x)` as the frontend builds `-x`: the zero is made right after x, just before the subi."""
    if op.name != "arith.subi":
        return False
    zero = op.operands[0]
    return _is_zero_constant(zero) and zero.owner is op.prev_op and op.operands[1].owner is not zero.owner


def _owner(value: SSAValue) -> Operation:
    op = value.owner
    if not isinstance(op, Operation):
        raise DesignPrintError("a statement body reads a block argument; only design.read and constants are leaves")
    return op


def _printed_operands(op: Operation) -> list[SSAValue]:
    """The operands whose text appears in `op`'s (the zero of an integer negation does not)."""
    if isinstance(op, d.ReadOp) or op.name == "arith.constant":
        return []
    if op.name == "arith.negf":
        return [op.operands[0]]
    if _is_int_negation(op):
        return [op.operands[1]]
    if op.name in _BINARY or op.name in _CALLS:
        return list(op.operands)
    raise DesignPrintError(f"'{op.name}' has no design-language spelling")


def _expr(root: SSAValue) -> tuple[str, int]:
    """Text and precedence of the expression computing `root`."""
    done: dict[SSAValue, _Text] = {}
    stack: list[tuple[SSAValue, bool]] = [(root, False)]
    while stack:
        value, ready = stack.pop()
        if value in done:
            continue
        op = _owner(value)
        operands = _printed_operands(op)
        if not ready:
            stack.append((value, True))
            stack.extend((v, False) for v in reversed(operands) if v not in done)
            continue
        done[value] = _combine(op, [done[v] for v in operands])
    text = done[root]
    return _join(text), text.prec


def _combine(op: Operation, args: list[_Text]) -> _Text:
    """The text of `op` from the texts of its printed operands."""
    name = op.name
    if isinstance(op, d.ReadOp):
        return _Text([f"{op.tensor.data}[{', '.join(op.index_exprs)}]"], _ATOM)
    if name == "arith.constant":
        return _constant(op)
    if name == "arith.negf" or _is_int_negation(op):
        return _negate(args[0])
    if name in _BINARY:
        sym, prec = _BINARY[name]
        return _Text([*_operand(args[0], prec, right=False), f" {sym} ", *_operand(args[1], prec, right=True)], prec)
    if name in _CALLS:
        parts: list[str | _Text] = [f"{_CALLS[name]}("]
        for i, arg in enumerate(args):
            parts += [", ", arg] if i else [arg]
        return _Text([*parts, ")"], _ATOM)
    raise DesignPrintError(f"'{name}' has no design-language spelling")


def _constant(op: Operation) -> _Text:
    attr = op.properties.get("value")
    if isinstance(attr, IntegerAttr):
        number = attr.value.data
        text = str(abs(number))
    elif isinstance(attr, FloatAttr):
        number = attr.value.data
        text = _float_constant(abs(number), attr.type)
    else:
        raise DesignPrintError(f"constant {attr} is neither an integer nor a float")
    if number < 0 or (number == 0 and pymath.copysign(1.0, number) < 0):
        return _Text([f"-{text}"], _UNARY)
    return _Text([text], _ATOM)


def _negate(arg: _Text) -> _Text:
    if arg.prec < _UNARY:
        return _Text(["-(", arg, ")"], _UNARY)
    if arg.first == "-":
        return _Text(["- ", arg], _UNARY)  # `- -x`, not `--x`
    return _Text(["-", arg], _UNARY)


def _operand(arg: _Text, parent: int, right: bool) -> list[str | _Text]:
    # Left-associative: a right operand of equal precedence needs parentheses.
    if arg.prec < parent or (right and arg.prec == parent):
        return ["(", arg, ")"]
    return [arg]


def format_statement(op: d.StmtOp) -> str:
    last = op.body.block.last_op
    if not isinstance(last, d.YieldOp):
        raise DesignPrintError("statement body does not end with design.yield")
    rhs, _ = _expr(last.value)
    return f"{op.target.data}[{', '.join(op.index_exprs)}] {op.kind.data} {rhs}"


# --- named operations ------------------------------------------------------------


def _param(attr: Attribute) -> str:
    if isinstance(attr, IntegerAttr):
        return str(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return "[" + ", ".join(_param(a) for a in attr.data) + "]"
    raise DesignPrintError(f"parameter value {attr} has no design-language spelling")


def format_named(op: d.NamedOp) -> str:
    args = list(op.operand_names)
    args += [f"{key} = {_param(value)}" for key, value in op.params.data.items()]
    return f"{op.target.data} = {op.op_name.data}({', '.join(args)})"


# --- other sections --------------------------------------------------------------


def format_size(op: d.SizeOp) -> str:
    if op.default is None:
        return op.sym_name.data
    return f"{op.sym_name.data} = {op.default.value.data}"


def format_tensor(op: d.TensorOp) -> str:
    return f"tensor {op.sym_name.data} : {op.dtype.data}[{', '.join(op.shape_exprs)}] {op.role.data}"


def format_layout(op: d.LayoutOp) -> str:
    parts = [f"{op.tensor.data} :"]
    kind = None if op.kind is None else op.kind.data
    if kind == "order":
        parts.append(f"order({', '.join(str(v) for v in op.order_list or [])})")
    elif kind is not None:
        parts.append(kind)
    if op.align is not None:
        parts.append(f"align {op.align.value.data}")
    return " ".join(parts)


def format_directive(op: Operation) -> str:
    if isinstance(op, d.SplitOp):
        return f"split {op.loop.data} by {op.factor.value.data} -> {op.outer.data}, {op.inner.data}"
    if isinstance(op, d.TileOp):
        names = d.str_list(op.outer) + d.str_list(op.inner)
        factors = ", ".join(str(f) for f in d.int_list(op.factors))
        return f"tile {', '.join(d.str_list(op.loops))} by {factors} -> {', '.join(names)}"
    if isinstance(op, d.ReorderOp):
        return f"reorder {', '.join(d.str_list(op.loops))}"
    if isinstance(op, d.ParallelOp):
        return f"parallel {op.loop.data}"
    if isinstance(op, d.VectorizeOp):
        width = "" if op.width is None else f" by {op.width.value.data}"
        return f"vectorize {op.loop.data}{width}"
    if isinstance(op, d.UnrollOp):
        return f"unroll {op.loop.data} by {op.factor.value.data}"
    if isinstance(op, d.UnrollJamOp):
        return f"unroll_jam {op.loop.data} by {op.factor.value.data}"
    if isinstance(op, d.PackOp):
        return f"pack {op.tensor.data} at {op.loop.data}"
    if isinstance(op, d.ComputeAtOp):
        return f"compute_at {op.stage.data}.{op.loop.data}"
    if isinstance(op, d.ComputeRootOp):
        return "compute_root"
    raise DesignPrintError(f"'{op.name}' is not a schedule directive")


def format_assumption(op: Operation) -> str:
    if isinstance(op, d.AssumeDivisibleOp):
        return f"{op.size.data} % {op.divisor.value.data} == 0"
    if isinstance(op, d.AssumeAlignedOp):
        return f"aligned({op.tensor.data}, {op.alignment.value.data})"
    if isinstance(op, d.AssumeNoAliasOp):
        return f"noalias({', '.join(d.str_list(op.tensors))})"
    if isinstance(op, d.AssumeRelaxedMathOp):
        return "relaxed_math"
    raise DesignPrintError(f"'{op.name}' is not an assumption")


def format_hw_field(op: d.HwFieldOp) -> str:
    unit = "" if op.unit is None else f" {op.unit.data}"
    return f"{op.key.data} {format_number(op.value.value.data)}{unit}"


def hardware_lines(op: d.HardwareOp, indent: str = "") -> list[str]:
    head = "hardware" if op.hw_name is None else f"hardware {op.hw_name.data}"
    items = list(op.body.block.ops)
    if not items:
        return [f"{indent}{head} {{}}"]
    lines = [f"{indent}{head} {{"]
    inner = indent + INDENT
    for item, after in zip(items, items[1:] + [None]):
        if isinstance(item, d.HwFieldOp):
            sep = ";" if item.unit is None and isinstance(after, d.HwFieldOp) and _unit_prefixed(after.key.data) else ""
            lines.append(inner + format_hw_field(item) + sep)
        elif isinstance(item, d.HwLevelOp):
            head = "dram" if item.is_dram else f"cache {item.level.data}"
            fields = []
            for f in item.body.block.ops:
                if not isinstance(f, d.HwFieldOp):
                    raise DesignPrintError(f"'{f.name}' cannot appear in a memory level")
                fields.append(format_hw_field(f))
            body = f"{{ {'; '.join(fields)} }}" if fields else "{}"
            lines.append(f"{inner}{head} {body}")
        else:
            raise DesignPrintError(f"'{item.name}' cannot appear in a hardware block")
    lines.append(f"{indent}}}")
    return lines


# --- documents -------------------------------------------------------------------

_GROUPED = (d.SizeOp, d.LayoutOp, d.ASSUME_OPS)


def _category(op: Operation) -> str:
    if isinstance(op, (d.StmtOp, d.NamedOp)):
        return "statement"
    if isinstance(op, (d.HardwareRefOp, d.HardwareOp)):
        return "hardware"
    if isinstance(op, d.ASSUME_OPS):
        return "assume"
    return op.name


def _groups(ops: list[Operation]) -> list[list[Operation]]:
    """Ops in order, runs of sizes / layout entries / assumptions together."""
    groups: list[list[Operation]] = []
    for op in ops:
        if groups and any(isinstance(op, g) and isinstance(groups[-1][0], g) for g in _GROUPED):
            groups[-1].append(op)
        else:
            groups.append([op])
    return groups


def _group_lines(group: list[Operation], indent: str) -> list[str]:
    op = group[0]
    inner = indent + INDENT
    if isinstance(op, d.SizeOp):
        return [f"{indent}sizes {{ {', '.join(format_size(s) for s in group)} }}"]  # type: ignore[arg-type]
    if isinstance(op, d.LayoutOp):
        return [f"{indent}layout {{", *(inner + format_layout(e) for e in group), f"{indent}}}"]  # type: ignore[arg-type]
    if isinstance(op, d.ASSUME_OPS):
        return [f"{indent}assume {{ {'; '.join(format_assumption(a) for a in group)} }}"]
    if isinstance(op, d.DocOp):
        return [f"{indent}doc {escape_string(op.text.data)}"]
    if isinstance(op, d.TensorOp):
        return [indent + format_tensor(op)]
    if isinstance(op, d.StmtOp):
        return [indent + format_statement(op)]
    if isinstance(op, d.NamedOp):
        return [indent + format_named(op)]
    if isinstance(op, d.ScheduleOp):
        directives = [format_directive(x) for x in op.body.block.ops]
        if not directives:
            return [f"{indent}schedule {op.stage.data} {{}}"]
        return [f"{indent}schedule {op.stage.data} {{", *(inner + x for x in directives), f"{indent}}}"]
    if isinstance(op, d.HardwareRefOp):
        return [f"{indent}hardware {op.ref.data}"]
    if isinstance(op, d.HardwareOp):
        return hardware_lines(op, indent)
    if isinstance(op, d.MetricOp):
        return [f"{indent}metric {op.metric.data}"]
    raise DesignPrintError(f"'{op.name}' cannot appear in a design document")


def design_lines(op: d.DesignOp) -> list[str]:
    lines = [f"design {op.sym_name.data} {{"]
    previous: str | None = None
    for group in _groups(list(op.body.block.ops)):
        category = _category(group[0])
        if previous is not None and category != previous:
            lines.append("")
        previous = category
        lines.extend(_group_lines(group, INDENT))
    lines.append("}")
    return lines


def print_design(ir: ModuleOp | d.DesignOp | d.HardwareOp) -> str:
    """Canonical `.design` (or `.hw`) text of a design document (or hardware description)."""
    if isinstance(ir, d.DesignOp):
        return "\n".join(design_lines(ir)) + "\n"
    if isinstance(ir, d.HardwareOp):
        return "\n".join(hardware_lines(ir)) + "\n"
    if not isinstance(ir, ModuleOp):
        raise DesignPrintError(f"cannot print '{ir.name}' as a design document")
    chunks = []
    for op in ir.body.block.ops:
        if not isinstance(op, (d.DesignOp, d.HardwareOp)):
            raise DesignPrintError(f"'{op.name}' is neither a design nor a hardware description")
        chunks.append(print_design(op))
    if not chunks:
        raise DesignPrintError("the module holds no design document")
    return "\n".join(chunks)
