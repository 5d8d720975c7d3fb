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
import re
from dataclasses import dataclass
from functools import cache

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue

from irkit.dialects import design as d
from irkit.directives import directive_text
from irkit.frontend.comments import Attached, Comment, DocumentComments, Role

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
    "arith.select": "select",
}
# Comparisons (a select's condition only) by arith predicate number, as the frontend builds them
_CMP = 0  # below every arithmetic operator: `a + b < c` compares sums
_CMPF_TEXT = {4: "<", 5: "<=", 2: ">", 3: ">=", 1: "==", 13: "!="}  # olt ole ogt oge oeq une
_CMPI_TEXT = {2: "<", 3: "<=", 4: ">", 5: ">=", 0: "==", 1: "!="}  # slt sle sgt sge eq ne
_COMPARES = {"arith.cmpf": _CMPF_TEXT, "arith.cmpi": _CMPI_TEXT}


# Words the lexer reads as keywords where a name could also follow.  After
# a hardware field's number, a next key spelled like a unit (`B`, `us`,
# `KiB`, the grammar's UNIT token) would read as the field's unit, so such
# a value is closed with `;`; the same for a layout entry named like a
# layout keyword (see `_layout_entries`).
UNITS = ("bits", "B", "KiB", "MiB", "GiB", "KB", "MB", "GB", "Hz", "kHz", "MHz", "GHz", "ns", "us", "cycles")
LAYOUT_WORDS = frozenset({"align", "row_major", "col_major", "order"})
HW_LEVEL_WORDS = frozenset({"cache", "dram"})


def _unit_prefixed(key: str) -> bool:
    return key.startswith(UNITS)


@cache
def _unit_token() -> re.Pattern[str]:
    from irkit.frontend.grammar import design_parser

    return re.compile(design_parser().get_terminal("UNIT").pattern.to_regexp())


def _reads_as_unit(key: str) -> bool:
    """Whether the lexer would take `key`, after a number, for a unit (the grammar's UNIT token)."""
    return _unit_prefixed(key) or _unit_token().match(key) is not None


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
        raise DesignPrintError(
            "a statement body reads a block argument; only design.read, design.value and constants are leaves"
        )
    return op


def _printed_operands(op: Operation) -> list[SSAValue]:
    """The operands whose text appears in `op`'s (the zero of an integer negation does not)."""
    if isinstance(op, (d.ReadOp, d.ValueOp)) or op.name == "arith.constant":
        return []
    if op.name == "arith.negf":
        return [op.operands[0]]
    if _is_int_negation(op):
        return [op.operands[1]]
    if op.name in _BINARY or op.name in _CALLS or op.name in _COMPARES:
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
    if isinstance(op, d.ValueOp):
        return _Text([op.ref.data], _ATOM)
    if name == "arith.constant":
        return _constant(op)
    if name == "arith.negf" or _is_int_negation(op):
        return _negate(args[0])
    if name in _BINARY:
        sym, prec = _BINARY[name]
        return _Text([*_operand(args[0], prec, right=False), f" {sym} ", *_operand(args[1], prec, right=True)], prec)
    if name in _COMPARES:
        sym = _COMPARES[name].get(op.predicate.value.data)  # type: ignore[attr-defined]
        if sym is None:
            raise DesignPrintError(f"'{name}' predicate {op.predicate.value.data} has no design-language spelling")  # type: ignore[attr-defined]
        return _Text([args[0], f" {sym} ", args[1]], _CMP)
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
    where = f" where {', '.join(op.where_texts)}" if op.where_texts else ""
    carry = f" carry {', '.join(op.carry_loops)}" if op.carry_loops else ""
    return f"{op.target.data}[{', '.join(op.index_exprs)}] {op.kind.data} {rhs}{where}{carry}"


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


def format_scalar(op: d.ScalarOp) -> str:
    return f"scalar {op.sym_name.data} : {op.dtype.data} {op.role.data}"


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
    text = directive_text(op)
    if text is None:
        raise DesignPrintError(f"'{op.name}' is not a schedule directive")
    return text


def format_assumption(op: Operation) -> str:
    if isinstance(op, d.AssumeDivisibleOp):
        return f"{op.size.data} % {op.divisor.value.data} == 0"
    if isinstance(op, d.AssumeAlignedOp):
        return f"aligned({op.tensor.data}, {op.alignment.value.data})"
    if isinstance(op, d.AssumeNoAliasOp):
        return f"noalias({', '.join(d.str_list(op.tensors))})"
    if isinstance(op, d.AssumeRelaxedMathOp):
        return "relaxed_math"
    if isinstance(op, d.AssumePositiveDefiniteOp):
        return f"positive_definite({', '.join(d.str_list(op.tensors))})"
    raise DesignPrintError(f"'{op.name}' is not an assumption")


def format_hw_field(op: d.HwFieldOp) -> str:
    unit = "" if op.unit is None else f" {op.unit.data}"
    return f"{op.key.data} {format_number(op.value.value.data)}{unit}"


def format_hw_text(op: d.HwTextOp) -> str:
    return f"{op.key.data} {escape_string(op.text.data)}"


# --- placing comments ------------------------------------------------------------
#
# The printer writes `_Line`s: code with an optional trailing comment, an
# own-line comment, or a blank.  `_render` then aligns the trailing
# comments of consecutive code lines at one indentation (a blank line, a
# comment line or a change of indentation ends such a run), so the
# result depends only on the IR and where its comments attach: printing
# is idempotent with comments too.


@dataclass
class _Line:
    indent: str
    code: str = ""  # empty: a blank line
    comment: str | None = None  # trailing comment of a code line
    own_comment: bool = False  # `code` is a comment on a line of its own


class _Writer:
    def __init__(self, comments: DocumentComments | None):
        self.comments = comments
        self.lines: list[_Line] = []

    def attached(self, op: Operation, role: Role = "item") -> Attached:
        found = self.comments.get(op, role) if self.comments is not None else None
        return found if found is not None else Attached()

    def blank(self) -> None:
        if self.lines and self.lines[-1].code and not self._opens_block(self.lines[-1]):
            self.lines.append(_Line(""))

    @staticmethod
    def _opens_block(line: _Line) -> bool:
        return not line.own_comment and line.code.endswith("{")

    def own_comments(self, indent: str, comments: list[Comment]) -> None:
        for comment in comments:
            if comment.blank_before:
                self.blank()
            self.lines.append(_Line(indent, comment.text, own_comment=True))

    def leading(self, indent: str, attached: Attached) -> None:
        self.own_comments(indent, attached.leading)
        if attached.leading and attached.gap_after:
            self.blank()

    def code(self, indent: str, text: str, trailing: Comment | None = None) -> None:
        self.lines.append(_Line(indent, text, None if trailing is None else trailing.text))

    def piece(self, indent: str, text: str, op: Operation, role: Role = "item") -> None:
        """A piece on a line of its own: its leading comments, then it with its trailing one."""
        attached = self.attached(op, role)
        self.leading(indent, attached)
        self.code(indent, text, attached.trailing)

    def block(
        self,
        indent: str,
        header: str,
        opened: Attached,
        closed: Attached,
        entries: list[tuple[str, Operation]],
        one_line: str | None = None,
    ) -> None:
        """`header { entries }`: on one line joined by `one_line` when no comment falls inside it, else a line each.

        `opened` holds the comments of the header, `closed` those of the `}`.
        """
        inner_comments = (
            opened.trailing is not None or bool(closed.leading) or any(self.attached(op) for _, op in entries)
        )
        self.leading(indent, opened)
        if not inner_comments and not entries:
            self.code(indent, f"{header} {{}}", closed.trailing)
            return
        if not inner_comments and one_line is not None:
            # The `;` that ends an entry a line before a name that would read as a keyword is the separator here.
            texts = [text.removesuffix(";") for text, _ in entries]
            self.code(indent, f"{header} {{ {one_line.join(texts)} }}", closed.trailing)
            return
        self.code(indent, f"{header} {{", opened.trailing)
        inner = indent + INDENT
        for text, op in entries:
            self.piece(inner, text, op)
        self.own_comments(inner, closed.leading)
        self.code(indent, "}", closed.trailing)


def _render(lines: list[_Line]) -> str:
    out: list[str] = []
    run: list[_Line] = []

    def flush() -> None:
        width = max((len(x.indent) + len(x.code) for x in run if x.comment is not None), default=0)
        for x in run:
            head = x.indent + x.code
            out.append(head if x.comment is None else f"{head.ljust(width)}  {x.comment}")
        run.clear()

    for line in lines:
        if line.code and not line.own_comment and (not run or run[-1].indent == line.indent):
            run.append(line)
            continue
        flush()
        if line.code and not line.own_comment:
            run.append(line)
        else:
            out.append(line.indent + line.code if line.code else "")
    flush()
    return "\n".join(out) + "\n"


# --- blocks --------------------------------------------------------------------------


def _hw_entries(items: list[Operation]) -> list[tuple[str, Operation]]:
    """Fields (and levels) of a hardware block, one a line, with `;` where the next key would not read as a name.

    After a unit-less value a key spelled like a unit would be its unit;
    after any field a key `cache` or `dram` would start a level (the
    parser's states after a field are shared by all hardware blocks, so
    even inside a `cache { ... }` the lexer reads the keyword).
    """
    entries = []
    for item, after in zip(items, items[1:] + [None]):
        if not isinstance(item, d.HwFieldOp | d.HwTextOp):
            entries.append(("", item))
            continue
        unitless = isinstance(item, d.HwFieldOp) and item.unit is None
        close = isinstance(after, d.HwFieldOp | d.HwTextOp) and (
            after.key.data in HW_LEVEL_WORDS or (unitless and _reads_as_unit(after.key.data))
        )
        text = format_hw_field(item) if isinstance(item, d.HwFieldOp) else format_hw_text(item)
        entries.append((text + (";" if close else ""), item))
    return entries


def _hw_level(w: _Writer, indent: str, op: d.HwLevelOp) -> None:
    head = "dram" if op.is_dram else f"cache {op.level.data}"
    fields = list(op.body.block.ops)
    for f in fields:
        if not isinstance(f, d.HwFieldOp):
            raise DesignPrintError(f"'{f.name}' cannot appear in a memory level")
    w.block(indent, head, w.attached(op, "open"), w.attached(op, "close"), _hw_entries(fields), one_line="; ")


def _hardware(w: _Writer, indent: str, op: d.HardwareOp) -> None:
    head = "hardware" if op.hw_name is None else f"hardware {op.hw_name.data}"
    items = list(op.body.block.ops)
    for item in items:
        if not isinstance(item, (d.HwFieldOp, d.HwTextOp, d.HwLevelOp)):
            raise DesignPrintError(f"'{item.name}' cannot appear in a hardware block")
    opened, closed = w.attached(op, "open"), w.attached(op, "close")
    if not items:
        w.block(indent, head, opened, closed, [])
        return
    w.leading(indent, opened)
    w.code(indent, f"{head} {{", opened.trailing)
    inner = indent + INDENT
    for text, item in _hw_entries(items):
        if isinstance(item, d.HwLevelOp):
            _hw_level(w, inner, item)
        else:
            w.piece(inner, text, item)
    w.own_comments(inner, closed.leading)
    w.code(indent, "}", closed.trailing)


def _layout_entries(group: list[d.LayoutOp]) -> list[tuple[str, Operation]]:
    """Layout entries, one a line; `;` ends an entry without `align N` before an entry named like a layout keyword.

    After `A : row_major` the lexer would read a next entry `align : ...`
    (or `order`, `row_major`, `col_major` after `A :`) as the keyword.
    """
    entries: list[tuple[str, Operation]] = []
    for entry, after in zip(group, [*group[1:], None]):
        close = entry.align is None and after is not None and after.tensor.data in LAYOUT_WORDS
        entries.append((format_layout(entry) + (";" if close else ""), entry))
    return entries


def _schedule(w: _Writer, indent: str, op: d.ScheduleOp) -> None:
    entries = [(format_directive(x), x) for x in op.body.block.ops]
    w.block(indent, f"schedule {op.stage.data}", w.attached(op, "open"), w.attached(op, "close"), entries)


# --- documents -------------------------------------------------------------------

_GROUPED = (d.SizeOp, d.LayoutOp, d.ASSUME_OPS)


def _category(op: Operation) -> str:
    if isinstance(op, (d.StmtOp, d.NamedOp, d.RepeatOp)):
        return "statement"
    if isinstance(op, (d.HardwareRefOp, d.HardwareOp)):
        return "hardware"
    if isinstance(op, d.ASSUME_OPS):
        return "assume"
    if isinstance(op, d.ScalarOp):
        return d.TensorOp.name  # declarations together
    return op.name


def _groups(ops: list[Operation], w: _Writer) -> list[list[Operation]]:
    """Ops in order, runs of sizes / layout entries / assumptions together.

    A run is cut where the source closed one block and opened the next
    with a comment at the seam, so that the comment keeps its place.
    """
    groups: list[list[Operation]] = []
    for op in ops:
        same = groups and any(isinstance(op, g) and isinstance(groups[-1][0], g) for g in _GROUPED)
        seam = same and (w.attached(groups[-1][-1], "group_close") or w.attached(op, "group_open"))
        if same and not seam:
            groups[-1].append(op)
        else:
            groups.append([op])
    return groups


def _group(w: _Writer, group: list[Operation], indent: str) -> None:
    op = group[0]
    opened, closed = w.attached(group[0], "group_open"), w.attached(group[-1], "group_close")
    if isinstance(op, d.SizeOp):
        w.block(indent, "sizes", opened, closed, [(format_size(s), s) for s in group], one_line=", ")  # type: ignore[arg-type]
    elif isinstance(op, d.LayoutOp):
        w.block(indent, "layout", opened, closed, _layout_entries(group))  # type: ignore[arg-type]
    elif isinstance(op, d.ASSUME_OPS):
        w.block(indent, "assume", opened, closed, [(format_assumption(a), a) for a in group], one_line="; ")
    elif isinstance(op, d.DocOp):
        w.piece(indent, f"doc {escape_string(op.text.data)}", op)
    elif isinstance(op, d.TensorOp):
        w.piece(indent, format_tensor(op), op)
    elif isinstance(op, d.ScalarOp):
        w.piece(indent, format_scalar(op), op)
    elif isinstance(op, d.StmtOp):
        w.piece(indent, format_statement(op), op)
    elif isinstance(op, d.NamedOp):
        w.piece(indent, format_named(op), op)
    elif isinstance(op, d.RepeatOp):
        entries = [(format_statement(s) if isinstance(s, d.StmtOp) else format_named(s), s) for s in op.body.block.ops]
        w.block(indent, f"repeat {op.count.data}", w.attached(op, "open"), w.attached(op, "close"), entries)  # type: ignore[arg-type]
    elif isinstance(op, d.ScheduleOp):
        _schedule(w, indent, op)
    elif isinstance(op, d.HardwareRefOp):
        w.piece(indent, f"hardware {op.ref.data}", op)
    elif isinstance(op, d.HardwareOp):
        _hardware(w, indent, op)
    elif isinstance(op, d.MetricOp):
        w.piece(indent, f"metric {op.metric.data}", op)
    else:
        raise DesignPrintError(f"'{op.name}' cannot appear in a design document")


def _design(w: _Writer, op: d.DesignOp) -> None:
    opened, closed = w.attached(op, "open"), w.attached(op, "close")
    w.leading("", opened)
    w.code("", f"design {op.sym_name.data} {{", opened.trailing)
    previous: str | None = None
    for group in _groups(list(op.body.block.ops), w):
        category = _category(group[0])
        if previous is not None and category != previous:
            w.blank()
        previous = category
        _group(w, group, INDENT)
    w.own_comments(INDENT, closed.leading)
    w.code("", "}", closed.trailing)


def print_design(ir: ModuleOp | d.DesignOp | d.HardwareOp, comments: DocumentComments | None = None) -> str:
    """Canonical `.design` (or `.hw`) text of a design document (or hardware description).

    With `comments` (`irkit.frontend.comments.read_comments`, or
    `irkit.frontend.document.parse_document`), every comment is printed
    at the piece it is attached to: its own lines before it, or the end of
    its line; the comments after the last piece end the text.
    """
    w = _Writer(comments)
    tops = [ir] if isinstance(ir, (d.DesignOp, d.HardwareOp)) else None
    if tops is None:
        if not isinstance(ir, ModuleOp):
            raise DesignPrintError(f"cannot print '{ir.name}' as a design document")
        tops = list(ir.body.block.ops)
        if not tops:
            raise DesignPrintError("the module holds no design document")
    for i, op in enumerate(tops):
        if i:
            w.lines.append(_Line(""))
        if isinstance(op, d.DesignOp):
            _design(w, op)
        elif isinstance(op, d.HardwareOp):
            _hardware(w, "", op)
        else:
            raise DesignPrintError(f"'{op.name}' is neither a design nor a hardware description")
    if comments is not None:
        w.own_comments("", comments.tail)
    return _render(w.lines)
