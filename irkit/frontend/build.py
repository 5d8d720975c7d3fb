"""Lark tree to design IR: one op per section, each with its source location.

The builder is deliberately forgiving: it turns whatever parsed into IR
and leaves judgement to the semantic checker, so that all of a document's
mistakes are reported together.  It reports only what the IR cannot hold
(an unknown function, `exp` of an integer, a constant of the wrong kind),
and builds a harmless stand-in so that building can go on.
"""

from __future__ import annotations

import json

from lark import Token, Tree
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    ArrayAttr,
    FileLineColLoc,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from irkit.affine.where import constraint_text
from irkit.affine_text import BinOp, Const, Expr, Var, fold_linear, format_affine
from irkit.diagnostics import Diagnostic, at_op, error
from irkit.dialects import design as d
from irkit.directives import record_of
from irkit.frontend.syntax import parse_syntax
from irkit.suggest import suggest

ELEMENT_TYPES: dict[str, Attribute] = {"f32": Float32Type(), "f64": Float64Type(), "i32": IntegerType(32)}
_FLOAT_BINOPS = {"add": arith.AddfOp, "sub": arith.SubfOp, "mul": arith.MulfOp, "div": arith.DivfOp}
_INT_BINOPS = {"add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp, "div": arith.DivSIOp}
FUNCTIONS = {"max": 2, "min": 2, "exp": 1, "sqrt": 1, "select": 3}
# `a OP b` as arith's predicates: ordered for floats (false when either is NaN, as C's `<`), but
# `!=` unordered (true when either is NaN, as C's `!=`); signed for integers
_CMPF = {"<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "==": "oeq", "!=": "une"}
_CMPI = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}
# Shapes and indices are short; the checker, the printers and the lowering walk them recursively.
MAX_AFFINE_DEPTH = 64


def _is_compare(node: Tree | Token) -> bool:
    return isinstance(node, Tree) and node.data == "compare"


def _depth(node: Tree | Token) -> int:
    """How deeply an affine parse tree nests (iteratively: the tree may be deep)."""
    deepest = 0
    stack: list[tuple[Tree | Token, int]] = [(node, 1)]
    while stack:
        current, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(current, Tree):
            stack.extend((child, depth + 1) for child in current.children if isinstance(child, Tree))
    return deepest


def element_type(dtype: str) -> Attribute:
    return ELEMENT_TYPES.get(dtype, Float32Type())


def is_float(t: Attribute) -> bool:
    return isinstance(t, (Float32Type, Float64Type))


class DesignBuilder:
    def __init__(self, filename: str):
        self.filename = filename
        self.diagnostics: list[Diagnostic] = []
        self.tensor_types: dict[str, str] = {}

    # --- helpers ---------------------------------------------------------

    def loc(self, node: Tree | Token) -> FileLineColLoc:
        if isinstance(node, Token):
            line, col = node.line, node.column
        else:
            line, col = node.meta.line, node.meta.column
        return FileLineColLoc(StringAttr(self.filename), IntAttr(line or 0), IntAttr(col or 0))

    def located(self, op: Operation, node: Tree | Token) -> Operation:
        op.location = self.loc(node)
        return op

    def int_(self, tok: Token, bits: int = 64) -> int:
        """An integer token, reported (and replaced by 1) if it does not fit `bits` bits.

        The digits are counted before `int()` sees them: Python refuses to
        convert more than 4,300 digits, and nothing that long fits anyway."""
        text = str(tok).replace("_", "")
        digits = len(text.lstrip("+-"))
        value = int(text) if digits <= 40 else None
        limit = 1 << (bits - 1)
        if value is None or not -limit <= value < limit:
            shown = text if len(text) <= 30 else f"{text[:12]}...{text[-6:]} ({digits} digits)"
            self.report(f"integer {shown} does not fit in {bits} bits (at most {limit - 1:_})", tok)
            return 1
        return value

    def report(self, message: str, node: Tree | Token) -> None:
        loc = self.loc(node)
        self.diagnostics.append(error(message, self.filename, loc.line.data, loc.column.data))

    # --- document --------------------------------------------------------

    def build_module(self, tree: Tree) -> ModuleOp:
        top = tree.children[0]
        if top.data == "hardware_file":
            return ModuleOp([self.hardware_block(top.children[0])])
        return ModuleOp([self.design(top)])

    def design(self, node: Tree) -> d.DesignOp:
        name, *items = node.children
        # Tensor types first: statements may read tensors declared after them.
        for item in items:
            if isinstance(item, Tree) and item.data == "tensor":
                self.tensor_types.setdefault(str(item.children[0]), str(item.children[1]))
        ops: list[Operation] = []
        for item in items:
            if isinstance(item, Tree):
                ops.extend(self.item(item))
        return self.located(d.DesignOp(str(name), ops), node)  # type: ignore[return-value]

    def item(self, node: Tree) -> list[Operation]:
        kind = node.data
        if kind == "doc":
            return [self.located(d.DocOp(json.loads(str(node.children[0]), strict=False)), node)]
        if kind == "sizes":
            return [self.size(s) for s in node.children if isinstance(s, Tree)]
        if kind == "tensor":
            return [self.tensor(node)]
        if kind == "scalar":
            name, dtype, role = node.children
            return [self.located(d.ScalarOp(str(name), str(dtype), str(role)), node)]
        if kind == "index_stmt":
            return [self.index_stmt(node)]
        if kind == "named_stmt":
            return [self.named_stmt(node)]
        if kind == "repeat":
            count, *body = node.children
            inner = [op for item in body if isinstance(item, Tree) for op in self.item(item)]
            return [self.located(d.RepeatOp(str(count), inner), node)]
        if kind == "layout":
            return [self.layout_entry(e) for e in node.children if isinstance(e, Tree)]
        if kind == "schedule":
            return [self.schedule(node)]
        if kind == "hardware_ref":
            return [self.located(d.HardwareRefOp(str(node.children[0])), node)]
        if kind == "hardware_block":
            return [self.hardware_block(node)]
        if kind == "assume":
            return [self.assumption(a) for a in node.children if isinstance(a, Tree)]
        if kind == "metric":
            return [self.located(d.MetricOp(str(node.children[0])), node)]
        raise AssertionError(f"grammar rule without a builder: {kind}")

    def size(self, node: Tree) -> Operation:
        name, default = node.children
        return self.located(d.SizeOp(str(name), None if default is None else self.int_(default)), node)

    def tensor(self, node: Tree) -> Operation:
        name, dtype, *dims, role = node.children
        shape = [format_affine(self.affine(e)) for e in dims]
        return self.located(d.TensorOp(str(name), str(dtype), shape, str(role)), node)

    # --- affine expressions ------------------------------------------------

    def affine(self, node: Tree | Token) -> Expr:
        """A shape or index expression.

        Every later stage walks these trees recursively, so one nested deeper
        than `MAX_AFFINE_DEPTH` (a generated `N + 1 + 1 + ...`) has its terms
        collected (`N + 999`), and is reported if it is not linear."""
        expr = self._affine(node)
        if _depth(node) <= MAX_AFFINE_DEPTH:
            return expr
        folded = fold_linear(expr)
        if folded is None:
            self.report(
                f"expression nested more than {MAX_AFFINE_DEPTH} deep; shapes and indices are short affine "
                "expressions (name the value as a size, or split the computation into stages)",
                node,
            )
            return Const(1)
        return folded

    def _affine(self, root: Tree | Token) -> Expr:
        """The expression tree of an affine parse tree (iterative: the parse tree may be deep)."""
        built: list[Expr] = []
        stack: list[tuple[Tree | Token, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            if isinstance(node, Token):
                built.append(Var(str(node)) if node.type == "NAME" else Const(self.int_(node)))
            elif node.data == "a_var":
                built.append(Var(str(node.children[0])))
            elif node.data == "a_const":
                built.append(Const(self.int_(node.children[0])))
            elif not done:
                stack += [(node, True), (node.children[1], False), (node.children[0], False)]
            else:
                rhs, lhs = built.pop(), built.pop()
                op = {"a_add": "+", "a_sub": "-", "a_mul": "*", "a_div": "/", "a_mod": "%"}[node.data]
                built.append(BinOp(op, lhs, rhs))
        return built[0]

    def access(self, node: Tree) -> tuple[str, list[str]]:
        name, *idx = node.children
        return str(name), [format_affine(self.affine(e)) for e in idx]

    # --- statements --------------------------------------------------------

    def index_stmt(self, node: Tree) -> Operation:
        lhs, assign, rhs, where, carry = node.children
        target, indices = self.access(lhs)
        dtype = self.tensor_types.get(target, "f32")
        block = Block()
        value = self.expr(rhs, block, element_type(dtype))
        block.add_op(self.located(d.YieldOp(value), rhs))
        constraints = self.where(where) if where is not None else None
        order = [str(n) for n in carry.children] if carry is not None else None
        return self.located(d.StmtOp(target, indices, str(assign), Region(block), constraints, order), node)

    def where(self, node: Tree) -> list[str]:
        out: list[str] = []
        for c in node.children:
            left, op, right = c.children
            if str(op) == "!=":
                self.report(
                    "'!=' cannot bound a loop (its points are not one range); split the statement's domain "
                    "with '<' and '>', or use select(a != b, x, y) in the expression",
                    op,
                )
                continue
            out.append(constraint_text(self.affine(left), str(op), self.affine(right)))
        return out

    def expr(self, root: Tree | Token, block: Block, etype: Attribute) -> SSAValue:
        """The ops computing a statement's right-hand side, appended to `block` operands first.

        Iterative (an explicit stack, operands before the op that combines
        them), so a sum of thousands of terms, which the LALR parser accepts
        as a tree that deep, does not exhaust Python's recursion limit."""
        values: list[SSAValue] = []
        stack: list[tuple[Tree | Token, bool]] = [(root, False)]
        while stack:
            node, operands_done = stack.pop()
            operands = [] if operands_done else self.operands(node)
            if operands:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(operands))
                continue
            count = len(self.operands(node)) if operands_done else 0
            args = values[len(values) - count :] if count else []
            del values[len(values) - count :]
            values.append(self.combine(node, args, block, etype))
        assert len(values) == 1
        return values[0]

    def operands(self, node: Tree | Token) -> list[Tree | Token]:
        """The sub-expressions evaluated before `node` (none for leaves and for calls that are wrong)."""
        if isinstance(node, Token):
            return []
        if node.data in _FLOAT_BINOPS or node.data == "neg":
            return list(node.children)
        if node.data == "call":
            fname, *args = node.children
            args = [a for a in args if a is not None]
            return args if FUNCTIONS.get(str(fname)) == len(args) else []
        if node.data == "compare":
            return [node.children[0], node.children[2]]
        return []

    def combine(self, node: Tree | Token, args: list[SSAValue], block: Block, etype: Attribute) -> SSAValue:
        """The op for `node`, its operands' values being `args`."""

        def add(op: Operation, where: Tree | Token) -> SSAValue:
            block.add_op(self.located(op, where))
            return op.results[0]

        if isinstance(node, Token):  # a lone NAME never reaches here; constants are trees
            return self.constant(node, block, etype)
        kind = node.data
        if kind == "const":
            return self.constant(node.children[0], block, etype)
        if kind == "access":
            name, indices = self.access(node)
            return add(d.ReadOp(name, indices, etype), node)
        if kind in _FLOAT_BINOPS:
            table = _FLOAT_BINOPS if is_float(etype) else _INT_BINOPS
            return add(table[kind](*args), node)
        if kind == "neg":
            if is_float(etype):
                return add(arith.NegfOp(args[0]), node)
            zero = add(arith.ConstantOp(IntegerAttr(0, etype)), node)
            return add(arith.SubiOp(zero, args[0]), node)
        if kind == "call":
            return self.call(node, args, block, etype)
        if kind == "compare":
            op_text = str(node.children[1])
            if is_float(etype):
                return add(arith.CmpfOp(args[0], args[1], _CMPF[op_text]), node)
            return add(arith.CmpiOp(args[0], args[1], _CMPI[op_text]), node)
        if kind == "bare_name":  # a scalar or a size; the checker judges the name
            return add(d.ValueOp(str(node.children[0]), etype), node)
        raise AssertionError(f"expression rule without a builder: {kind}")

    def zero(self, block: Block, etype: Attribute, where: Tree | Token) -> SSAValue:
        attr = FloatAttr(0.0, etype) if is_float(etype) else IntegerAttr(0, etype)  # type: ignore[arg-type]
        op = self.located(arith.ConstantOp(attr), where)
        block.add_op(op)
        return op.results[0]

    def constant(self, tok: Token, block: Block, etype: Attribute) -> SSAValue:
        text = str(tok)
        if is_float(etype):
            attr: Attribute = FloatAttr(float(text), etype)  # type: ignore[arg-type]
        else:
            if not text.lstrip("-").isdigit():
                self.report(f"constant {text} is not an integer, but this statement computes i32", tok)
                return self.zero(block, etype, tok)
            attr = IntegerAttr(self.int_(tok, 32), etype)  # type: ignore[arg-type]
        op = self.located(arith.ConstantOp(attr), tok)
        block.add_op(op)
        return op.results[0]

    def call(self, node: Tree, values: list[SSAValue], block: Block, etype: Attribute) -> SSAValue:
        fname, *args = node.children
        name = str(fname)
        args = [a for a in args if a is not None]
        if name not in FUNCTIONS:
            self.report(f"unknown function '{name}'; expected one of {', '.join(FUNCTIONS)}" + suggest(name, FUNCTIONS), fname)
            return self.zero(block, etype, node)
        if len(args) != FUNCTIONS[name]:
            n = FUNCTIONS[name]
            self.report(f"'{name}' takes {n} argument{'s' if n != 1 else ''}, got {len(args)}", fname)
            return self.zero(block, etype, node)
        compares = [_is_compare(a) for a in args]
        if name == "select" and not compares[0]:
            self.report("the condition of 'select' is a comparison: select(a < b, x, y) (<, <=, >, >=, ==, !=)", args[0])
            return self.zero(block, etype, node)
        first_value = 1 if name == "select" else 0
        misplaced = next((a for a, c in zip(args[first_value:], compares[first_value:]) if c), None)
        if misplaced is not None:
            self.report(f"a comparison is a value only as the condition of 'select(cond, a, b)', not as an argument of '{name}'", misplaced)
            return self.zero(block, etype, node)
        if name == "select":
            op_select = arith.SelectOp(values[0], values[1], values[2])
            block.add_op(self.located(op_select, node))
            return op_select.results[0]
        if name in ("exp", "sqrt") and not is_float(etype):
            self.report(f"'{name}' needs a floating-point statement (f32 or f64), but this one computes i32", fname)
            return values[0]
        if name == "exp":
            op: Operation = math.ExpOp(values[0])
        elif name == "sqrt":
            op = math.SqrtOp(values[0])
        elif is_float(etype):
            op = (arith.MaximumfOp if name == "max" else arith.MinimumfOp)(*values)
        else:
            op = (arith.MaxSIOp if name == "max" else arith.MinSIOp)(*values)
        block.add_op(self.located(op, node))
        return op.results[0]

    def named_stmt(self, node: Tree) -> Operation:
        target, op_name, args = node.children
        operands: list[str] = []
        params: dict[str, Attribute] = {}
        for arg in args.children:
            if arg.data == "pos_arg":
                if params:
                    self.report("operand tensors come before parameters", arg)
                operands.append(str(arg.children[0]))
                continue
            key, value = arg.children
            if str(key) in params:
                self.report(f"parameter '{key}' is given twice", key)
            params[str(key)] = self.param(value)
        return self.located(d.NamedOp(str(target), str(op_name), operands, params), node)

    def param(self, node: Tree) -> Attribute:
        if node.data == "p_int":
            return IntegerAttr(self.int_(node.children[0]), i64)
        if node.data == "p_name":
            return StringAttr(str(node.children[0]))
        return ArrayAttr([IntegerAttr(self.int_(v), i64) for v in node.children if v is not None])

    # --- layout, schedule ----------------------------------------------------

    def layout_entry(self, node: Tree) -> Operation:
        name, kind, align = node.children
        order = None
        kind_name = None
        if kind is not None:
            kind_name = kind.data
            if kind_name == "order":
                order = [self.int_(v) for v in kind.children]
        return self.located(
            d.LayoutOp(str(name), kind_name, order, None if align is None else self.int_(align)),
            node,
        )

    def schedule(self, node: Tree) -> Operation:
        stage, *directives = node.children
        ops = [self.directive(x) for x in directives if isinstance(x, Tree)]
        return self.located(d.ScheduleOp(str(stage), ops), node)

    def directive(self, node: Tree) -> Operation:
        """A schedule directive, built by its record (`irkit.directives`) from its grammar rule."""
        record = record_of(node.data)
        if record is None:
            raise AssertionError(f"directive without a record: {node.data}")
        return self.located(record.build(self, node.children), node)

    # --- hardware, assumptions ----------------------------------------------

    def hardware_block(self, node: Tree) -> Operation:
        hw_name, *items = node.children
        ops: list[Operation] = []
        for item in items:
            if not isinstance(item, Tree):
                continue
            if item.data == "hw_field":
                ops.append(self.hw_field(item))
            elif item.data == "hw_text":
                key, text = item.children
                ops.append(self.located(d.HwTextOp(str(key), json.loads(str(text), strict=False)), item))
            elif item.data == "hw_cache":
                level, *fields = item.children
                ops.append(self.located(d.HwLevelOp(str(level), self.hw_fields(fields)), item))
            else:  # hw_dram
                ops.append(self.located(d.HwLevelOp("dram", self.hw_fields(item.children)), item))
        name = None if hw_name is None else str(hw_name)
        return self.located(d.HardwareOp(hw_name=name, items=ops), node)

    def hw_fields(self, items: list) -> list[Operation]:
        return [self.hw_field(f) for f in items if isinstance(f, Tree)]

    def hw_field(self, node: Tree) -> Operation:
        key, value, unit = node.children
        return self.located(d.HwFieldOp(str(key), float(value), None if unit is None else str(unit)), node)

    def assumption(self, node: Tree) -> Operation:
        ch = node.children
        if node.data == "divisible":
            size, divisor, rest = ch
            if self.int_(rest) != 0:
                self.report(f"only divisibility can be assumed: write {size} % {divisor} == 0", rest)
            op: Operation = d.AssumeDivisibleOp(str(size), self.int_(divisor))
        elif node.data == "aligned":
            op = d.AssumeAlignedOp(str(ch[0]), self.int_(ch[1]))
        elif node.data == "relaxed_math":
            op = d.AssumeRelaxedMathOp()
        elif node.data == "positive_definite":
            op = d.AssumePositiveDefiniteOp([str(t) for t in ch])
        else:
            op = d.AssumeNoAliasOp([str(t) for t in ch])
        return self.located(op, node)


def verify_errors(module: ModuleOp, filename: str) -> list[Diagnostic]:
    """The op verifiers' complaint about `module`, as a located diagnostic (none when it verifies)."""
    try:
        module.verify()
    except DiagnosticException as exc:
        bad = getattr(exc, "op", None)
        return [at_op("error", str(exc), bad) if bad is not None else error(str(exc), filename)]
    return []


def build_design(text: str, filename: str = "<input>") -> tuple[ModuleOp | None, list]:
    """Parse and build IR without semantic checks; returns (module or None, diagnostics)."""
    syntax = parse_syntax(text, filename)
    if syntax.tree is None:
        return None, syntax.diagnostics
    builder = DesignBuilder(filename)
    module = builder.build_module(syntax.tree)
    return module, syntax.diagnostics + builder.diagnostics
