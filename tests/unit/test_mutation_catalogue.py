"""The mutation catalogue of reverse verification (`irkit verify`, `verify-roundtrip`).

Each entry corrupts the loop IR irkit generates for an example -- swaps two
indices of a load, shifts a stencil offset, changes or drops a tile factor,
drops a parallel, vector or unroll mark, changes a layout, drops a
reduction's initialisation, changes the reduction operator, drops a stage,
shrinks a halo, swaps the operands of a non-commutative operation, ... --
and checks that the round trip (raise the loops, compare with the
document) reports it: at least one error, every error located in the
document, one of them on the line of the statement, tensor, layout entry or
schedule directive the corruption contradicts, with a message naming the
right thing.  The lines are found by searching the document's text, never
hard-coded.

Corruptions are precise text edits of the printed loop IR (an anchor that
is not found, or found more than once, fails the test: an edit cannot
silently do nothing) or edits of the parsed IR (layouts, loop marks); the
result is always printed and parsed again, so it is well-formed loop IR.

The unmodified IR of every raisable example must verify with no error (no
false alarm).  gemm, batch_matmul and conv2d (pack, unroll_jam) are
grouped under REGISTER_BLOCKED.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.parser import Parser

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.dialects import loop as lp
from irkit.frontend import parse_design
from irkit.kernel_abi import kernel_args, memref_type
from irkit.raising.verify import compare_modules, lowered_loops, verify_document
from irkit.tools.opt import make_full_context

EXAMPLES = Path(__file__).parents[2] / "examples"
RAISABLE = ("blur", "elementwise", "rowsum", "softmax", "transpose")
# pack / unroll_jam are not raised yet: flip these to RAISABLE when they are.
REGISTER_BLOCKED = ("gemm", "batch_matmul", "conv2d")


# ---- documents ---------------------------------------------------------------------------


def _without_schedule(text: str, stage: str) -> str:
    out, n = re.subn(rf"^  schedule {stage} \{{\n.*?^  \}}\n", "", text, flags=re.S | re.M)
    assert n == 1, f"no schedule section for {stage}"
    return out


# Document variants that are not examples: name -> (file name, text).
VARIANTS: dict[str, Callable[[], str]] = {
    # blur with bx computed at the root (no compute_at): bx is a whole temporary.
    "blur_root": lambda: _without_schedule((EXAMPLES / "blur.design").read_text(), "bx"),
}


@functools.cache
def document(name: str) -> tuple[str, str]:
    """(file name as given to the frontend, text) of an example or a variant."""
    if name in VARIANTS:
        return f"{name}.design", VARIANTS[name]()
    path = EXAMPLES / f"{name}.design"
    return str(path), path.read_text()


def design_module(name: str) -> ModuleOp:
    filename, text = document(name)
    return parse_design(text, filename)


@functools.cache
def lowered_text(name: str) -> str:
    """The loop IR irkit generates for the document, printed."""
    return str(lowered_loops(design_module(name)))


def parse_loops(text: str) -> ModuleOp:
    return Parser(make_full_context(), text).parse_module()


def round_trip(name: str, loops: ModuleOp) -> list[Diagnostic]:
    """The diagnostics of comparing `loops` with the document (a raise error counts as one)."""
    try:
        return compare_modules(design_module(name), loops)
    except DiagnosticError as exc:
        return list(exc.diagnostics)


# ---- where in the document ------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    """A place in the document: a statement (by target), a tensor declaration, a layout entry,
    or a schedule directive (a regex on the line, searched within `schedule <name> { ... }`)."""

    kind: str  # stmt | tensor | layout | directive
    name: str
    pattern: str = ""

    def find(self, text: str) -> tuple[int, int]:
        """(line, column), 1-based; fails unless exactly one line matches."""
        hits: list[tuple[int, int]] = []
        block: str | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            code = line.split("#", 1)[0]
            if m := re.match(r"\s*schedule\s+(\w+)\s*\{", code):
                block = f"schedule {m.group(1)}"
                continue
            if re.match(r"\s*layout\s*\{", code):
                block = "layout"
                continue
            if re.match(r"\s*\}\s*$", code):
                block = None
                continue
            indent = len(code) - len(code.lstrip()) + 1
            if self.kind == "stmt":
                if re.match(rf"\s*{re.escape(self.name)}\s*(\[[^\]]*\])?\s*(=|\+=|max=|min=)", code):
                    hits.append((number, indent))
            elif self.kind == "tensor":
                if re.match(rf"\s*tensor\s+{re.escape(self.name)}\s*:", code):
                    hits.append((number, indent))
            elif self.kind == "layout":
                if block == "layout" and (m := re.search(rf"(?:^|;)\s*({re.escape(self.name)})\s*:", code)):
                    hits.append((number, m.start(1) + 1))
            elif self.kind == "directive":
                if block == f"schedule {self.name}" and re.match(rf"\s*{self.pattern}", code):
                    hits.append((number, indent))
            else:
                raise AssertionError(f"unknown place kind {self.kind}")
        assert len(hits) == 1, f"{self} is found {len(hits)} times in the document, not once"
        return hits[0]


def stmt(target: str) -> Where:
    return Where("stmt", target)


def tensor(name: str) -> Where:
    return Where("tensor", name)


def layout(name: str) -> Where:
    return Where("layout", name)


def directive(stage: str, pattern: str) -> Where:
    return Where("directive", stage, pattern)


# ---- edits of the loop IR (each fails loudly when its anchor is missing) -------------------

Edit = Callable[[str], str]


def replace(old: str, new: str, count: int = 1) -> Edit:
    """Replace `old`, which must occur exactly `count` times."""

    def edit(text: str) -> str:
        found = text.count(old)
        assert found == count, f"anchor {old!r} occurs {found} times in the loop IR, expected {count}"
        return text.replace(old, new)

    return edit


def _header(lines: list[str], var: str) -> int:
    found = [k for k, line in enumerate(lines) if line.lstrip().startswith(f"loop.for %{var} ")]
    assert len(found) == 1, f"loop %{var} has {len(found)} headers in the loop IR"
    return found[0]


def _closing(lines: list[str], start: int) -> int:
    indent = len(lines[start]) - len(lines[start].lstrip())
    for k in range(start + 1, len(lines)):
        if lines[k] == " " * indent + "}":
            return k
    raise AssertionError(f"no closing brace for {lines[start].strip()[:60]!r}")


def on_loop(var: str, old: str, new: str) -> Edit:
    """Replace `old` (exactly once) in the header line of loop `%var`."""

    def edit(text: str) -> str:
        lines = text.split("\n")
        k = _header(lines, var)
        assert lines[k].count(old) == 1, f"anchor {old!r} is not once in the header of %{var}: {lines[k].strip()}"
        lines[k] = lines[k].replace(old, new)
        return "\n".join(lines)

    return edit


def drop_nest(var: str) -> Edit:
    """Remove loop `%var` and everything in it."""

    def edit(text: str) -> str:
        lines = text.split("\n")
        k = _header(lines, var)
        del lines[k : _closing(lines, k) + 1]
        return "\n".join(lines)

    return edit


def unwrap(var: str, into: str) -> Edit:
    """Remove loop `%var` but keep its body, its variable replaced by `%into` (an enclosing loop)."""

    def edit(text: str) -> str:
        lines = text.split("\n")
        k = _header(lines, var)
        end = _closing(lines, k)
        del lines[end]
        del lines[k]
        out, n = re.subn(rf"%{re.escape(var)}\b", f"%{into}", "\n".join(lines))
        assert n > 0, f"%{var} is never used"
        return out

    return edit


def swap_headers(a: str, b: str) -> Edit:
    """Exchange the headers of two perfectly nested loops (an interchange)."""

    def edit(text: str) -> str:
        lines = text.split("\n")
        i, j = _header(lines, a), _header(lines, b)
        ia, ib = (len(lines[x]) - len(lines[x].lstrip()) for x in (i, j))
        lines[i], lines[j] = " " * ia + lines[j].lstrip(), " " * ib + lines[i].lstrip()
        return "\n".join(lines)

    return edit


def compose(*edits: Edit) -> Edit:
    def edit(text: str) -> str:
        for e in edits:
            text = e(text)
        return text

    return edit


def on_module(change: Callable[[ModuleOp], None]) -> Edit:
    """Edit the parsed IR, then print it."""

    def edit(text: str) -> str:
        module = parse_loops(text)
        change(module)
        module.verify()
        return str(module)

    return edit


def loops_named(module: ModuleOp, name: str) -> list[lp.ForOp]:
    found = [op for op in module.walk() if isinstance(op, lp.ForOp) and op.loop_name.data == name]
    assert found, f"no loop named {name!r}"
    return found


def drop_mark(loop_name: str, mark: str) -> Edit:
    """Remove the `parallel`, `vector` or `unroll` fact of every loop called `loop_name` that has it."""

    def change(module: ModuleOp) -> None:
        marked = [loop for loop in loops_named(module, loop_name) if mark in loop.properties]
        assert marked, f"no loop {loop_name} has a {mark} mark"
        for loop in marked:
            del loop.properties[mark]

    return on_module(change)


def set_layout(tensor_name: str, order: list[int]) -> Edit:
    """Give a tensor argument another storage order: the block argument and the function type change
    together, so the IR stays well-formed and only the layout differs."""

    def change(module: ModuleOp) -> None:
        kernel = next(op for op in module.walk() if isinstance(op, func.FuncOp))
        _, tensors = kernel_args(kernel)
        arg = next(t for t in tensors if t.name == tensor_name)
        old = arg.value
        new_type = memref_type("f32", len(order), order)
        assert old.type != new_type, "the tensor has that layout already"
        block = kernel.body.block
        new = block.insert_arg(new_type, old.index)
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
        block.erase_arg(old)
        kernel.function_type = FunctionType.from_lists(
            [a.type for a in block.args], list(kernel.function_type.outputs.data)
        )

    return on_module(change)


# ---- the catalogue ------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    id: str
    kind: str  # which corruption of the issue's list
    example: str
    edit: Edit
    where: tuple[Where, ...]  # the error must be on one of these lines
    mentions: tuple[str, ...]  # ... with a message containing all of these


CATALOGUE = [
    # blur: a two-stage stencil, bx computed per 32 x 256 tile of out.
    Mutation("blur-swap-load-indices", "swap indices", "blur",
             replace("%inp[affine_map<(d0, d1) -> (d0, (d1 + 1))>]", "%inp[affine_map<(d0, d1) -> ((d1 + 1), d0)>]"),
             (stmt("bx"),), ("inp",)),
    Mutation("blur-shift-stencil-offset", "stencil offset", "blur",
             replace("%inp[affine_map<(d0, d1) -> (d0, (d1 + 2))>]", "%inp[affine_map<(d0, d1) -> (d0, (d1 + 3))>]"),
             (stmt("bx"),), ("inp", "x + 3")),
    Mutation("blur-shift-consumer-offset", "stencil offset", "blur",
             replace("%bx[affine_map<(d0, d1, d2, d3) -> (((d0 + (d2 * -1)) + 2)",
                     "%bx[affine_map<(d0, d1, d2, d3) -> (((d0 + (d2 * -1)) + 3)"),
             (stmt("out"),), ("bx", "y + 3")),
    Mutation("blur-change-tile-factor", "tile factor", "blur",
             compose(on_loop("yo", "step 32", "step 16"), on_loop("yi", "(d0 + 32)", "(d0 + 16)")),
             (directive("out", r"tile y, x\b"),), ("y", "16")),
    Mutation("blur-change-tile-step-only", "tile factor", "blur",
             on_loop("yo", "step 32", "step 16"),
             (directive("out", r"tile y, x\b"),), ("yo", "16")),
    Mutation("blur-drop-parallel", "parallel mark", "blur", drop_mark("yo", "parallel"),
             (directive("out", r"parallel yo\b"),), ("yo", "parallel")),
    Mutation("blur-drop-vector", "vector mark", "blur", drop_mark("xi", "vector"),
             (directive("out", r"vectorize xi\b"),), ("xi", "vectoriz")),
    Mutation("blur-input-col-major", "layout", "blur", set_layout("inp", [1, 0]),
             (layout("inp"),), ("inp", "col_major")),
    Mutation("blur-change-alignment", "layout", "blur",
             replace("irkit.align = 64 : i64}, %out", "irkit.align = 32 : i64}, %out"),
             (layout("inp"),), ("inp", "32")),
    Mutation("blur-shrink-halo", "halo", "blur",
             on_loop("y", "((d0 + 2), (d1 + 34))", "((d0 + 1), (d1 + 34))"),
             (tensor("bx"), stmt("bx")), ("bx", "H + 1")),
    Mutation("blur-swap-division", "non-commutative operands", "blur",
             replace("arith.divf %1, %2", "arith.divf %2, %1"),
             (stmt("bx"),), ("inp", "/")),
    Mutation("blur-add-becomes-sub", "operator", "blur",
             replace("%4 = arith.addf %bx_1, %bx_2", "%4 = arith.subf %bx_1, %bx_2"),
             (stmt("out"),), ("bx", "-(")),
    Mutation("blur-change-constant", "constant", "blur",
             replace("%2 = arith.constant 3.000000e+00 : f32", "%2 = arith.constant 4.000000e+00 : f32"),
             (stmt("bx"),), ("4",)),
    Mutation("blur-interchange-points", "loop order", "blur", swap_headers("yi", "xi"),
             (directive("out", r"tile y, x\b"),), ("order", "xi")),
    Mutation("blur-extra-parallel", "parallel mark", "blur",
             on_module(lambda m: loops_named(m, "xo")[0].properties.__setitem__(
                 "parallel", loops_named(m, "yo")[0].properties["parallel"])),
             (stmt("out"),), ("xo", "parallel")),
    # rowsum: a reduction with an initialisation.
    Mutation("rowsum-drop-init", "reduction init", "rowsum", drop_nest("d0i"),  # the fill, run block by block inside `parallel io`
             (stmt("s"),), ("initialisation", "'s'")),
    Mutation("rowsum-change-init", "reduction init", "rowsum",
             replace("%0 = arith.constant 0.000000e+00 : f32", "%0 = arith.constant 1.000000e+00 : f32"),
             (stmt("s"),), ("s", "1")),
    Mutation("rowsum-sum-becomes-max", "reduction operator", "rowsum",
             replace("arith.addf %s_1, %X_1", "arith.maximumf %s_1, %X_1"),
             (stmt("s"),), ("max", "X[i, j]")),
    Mutation("rowsum-drop-split", "drop tile", "rowsum",
             compose(on_loop("io", "step 32", "step 1"), unwrap("ii", "io")),
             (directive("s", r"split i by 32\b"),), ("i", "32")),
    Mutation("rowsum-drop-vector", "vector mark", "rowsum", drop_mark("j", "vector"),
             (directive("s", r"vectorize j\b"),), ("j", "vectoriz")),
    # softmax: a named operation, four nests per row block, two reductions.
    Mutation("softmax-swap-subtraction", "non-commutative operands", "softmax",
             replace("arith.subf %X_2, %P_max_2", "arith.subf %P_max_2, %X_2"),
             (stmt("P"),), ("P_max",)),
    Mutation("softmax-max-becomes-min", "reduction operator", "softmax",
             replace("arith.maximumf %P_max_1, %X_1", "arith.minimumf %P_max_1, %X_1"),
             (stmt("P"),), ("min",)),
    Mutation("softmax-swap-division", "non-commutative operands", "softmax",
             replace("arith.divf %P_2, %P_sum_2", "arith.divf %P_sum_2, %P_2"),
             (stmt("P"),), ("P_sum",)),
    Mutation("softmax-drop-sum-stage", "drop stage", "softmax", drop_nest("ii_2"),
             (stmt("P"),), ("P_sum",)),
    Mutation("softmax-drop-max-init", "reduction init", "softmax", drop_nest("d0_1"),
             (stmt("P"),), ("initialisation", "P_max")),
    # transpose: a 32 x 32 tiled copy with unroll and vector marks.
    Mutation("transpose-swap-load-indices", "swap indices", "transpose",
             replace("%A[affine_map<(d0, d1) -> (d1, d0)>]", "%A[affine_map<(d0, d1) -> (d0, d1)>]"),
             (stmt("B"),), ("A[j, i]",)),
    Mutation("transpose-change-tile-factor", "tile factor", "transpose",
             compose(on_loop("jo", "step 32", "step 64"), on_loop("ji", "(d0 + 32)", "(d0 + 64)")),
             (directive("B", r"tile i, j\b"),), ("j", "64")),
    Mutation("transpose-drop-tile", "drop tile", "transpose",
             compose(on_loop("io", "step 32", "step 1"), unwrap("ii", "io")),
             (directive("B", r"tile i, j\b"),), ("i", "32")),
    Mutation("transpose-change-unroll", "unroll mark", "transpose",
             on_loop("ii", "unroll = 4 : i64", "unroll = 2 : i64"),
             (directive("B", r"unroll ii\b"),), ("ii", "2")),
    Mutation("transpose-drop-unroll", "unroll mark", "transpose", drop_mark("ii", "unroll"),
             (directive("B", r"unroll ii\b"),), ("ii", "unroll")),
    Mutation("transpose-interchange-tiles", "loop order", "transpose", swap_headers("jo", "ii"),
             (directive("B", r"tile i, j\b"),), ("order", "jo")),
    Mutation("transpose-output-col-major", "layout", "transpose", set_layout("B", [1, 0]),
             (layout("B"),), ("B", "col_major")),
    # elementwise: three stages, two temporaries computed per 1024-chunk of out.
    Mutation("elementwise-swap-load-indices", "swap indices", "elementwise",
             replace("%a[affine_map<(d0, d1) -> (d0, d1)>]", "%a[affine_map<(d0, d1) -> (d1, d0)>]"),
             (stmt("t1"),), ("a[",)),
    Mutation("elementwise-swap-division", "non-commutative operands", "elementwise",
             replace("arith.divf %9, %10", "arith.divf %10, %9"),
             (stmt("out"),), ("sqrt",)),
    Mutation("elementwise-change-clamp", "constant", "elementwise",
             replace("%4 = arith.constant 6.000000e+00", "%4 = arith.constant 7.000000e+00"),
             (stmt("t2"),), ("7",)),
    Mutation("elementwise-drop-parallel", "parallel mark", "elementwise", drop_mark("i", "parallel"),
             (directive("out", r"parallel i\b"),), ("i", "parallel")),
    Mutation("elementwise-drop-fused-vector", "vector mark", "elementwise",
             on_loop("j", "vector = 16 : i64, ", ""),  # the j loop of t1 (t2's is %j_1)
             (directive("t1", r"vectorize j\b"),), ("t1", "vectoriz")),
    Mutation("elementwise-change-split-factor", "tile factor", "elementwise",
             compose(on_loop("jo", "step 1024", "step 512"), on_loop("ji", "(d0 + 1024)", "(d0 + 512)")),
             (directive("out", r"split j by 1024\b"),), ("1024", "512")),
    Mutation("elementwise-input-col-major", "layout", "elementwise", set_layout("c", [1, 0]),
             (layout("c"),), ("c", "col_major")),
]  # fmt: skip

# Corruptions of fused stages (compute_at): windows that are too small for what the consumer reads
# in a tile (found by following the tiles' indices), and dropped producers.
FUSION_CATALOGUE = [
    Mutation("blur-shrink-fused-window", "halo", "blur",
                 on_loop("y", "((d0 + 2), (d1 + 34))", "((d0 + 2), (d1 + 33))"),
                 (tensor("bx"), stmt("bx"), directive("bx", r"compute_at\b")), ("bx",)),
    Mutation("blur-shrink-fused-columns", "halo", "blur",
                 on_loop("x", "(d0, (d1 + 256))", "(d0, (d1 + 255))"),
                 (tensor("bx"), stmt("bx"), directive("bx", r"compute_at\b")), ("bx",)),
    Mutation("elementwise-shrink-fused-chunk", "halo", "elementwise",
                 on_loop("j", "(d0, (d1 + 1024))", "(d0, (d1 + 1000))"),
                 (stmt("t1"), directive("t1", r"compute_at\b")), ("t1",)),
    Mutation("blur-drop-fused-stage", "drop stage", "blur", drop_nest("y"),
                 (stmt("bx"), tensor("bx"), directive("bx", r"compute_at\b")), ("bx",)),
    Mutation("elementwise-drop-fused-stage", "drop stage", "elementwise", drop_nest("i_1"),
                 (stmt("t1"), tensor("t1"), directive("t1", r"compute_at\b")), ("t1",)),
    Mutation("blur-root-drop-stage", "drop stage", "blur_root", drop_nest("y"),
                 (stmt("bx"), tensor("bx")), ("bx",)),
]  # fmt: skip

# Corruptions of the examples with packs and register blocks (gemm, batch_matmul, conv2d).
REGISTER_BLOCKED_CATALOGUE = [
    Mutation("gemm-drop-parallel", "parallel mark", "gemm", drop_mark("jo", "parallel"),
             (directive("C", r"parallel jo\b"),), ("jo", "parallel")),
    Mutation("gemm-drop-vector", "vector mark", "gemm", drop_mark("jv", "vector"),
             (directive("C", r"vectorize jv\b"),), ("jv", "vectoriz")),
    Mutation("gemm-drop-init", "reduction init", "gemm", drop_nest("d0"),
             (stmt("C"),), ("initialisation", "C")),
    Mutation("batch_matmul-drop-parallel", "parallel mark", "batch_matmul", drop_mark("b", "parallel"),
             (directive("C", r"parallel b\b"),), ("b", "parallel")),
    Mutation("gemm-drop-jammed-copy", "unroll_jam", "gemm", replace("loop.store %4, %C_acc1", "// "),
             (directive("C", r"unroll_jam ii\b"),), ("ii", "copies")),
    Mutation("gemm-drop-tile-write-back", "unroll_jam", "gemm", replace("loop.store %C_13, %C", "// "),
             (directive("C", r"unroll_jam ii\b"),), ("C_acc0", "never stored back")),
    Mutation("conv2d-drop-parallel", "parallel mark", "conv2d", drop_mark("fo", "parallel"),
             (directive("O", r"parallel fo\b"),), ("fo", "parallel")),
]  # fmt: skip


def _render(diags: list[Diagnostic]) -> str:
    return "\n".join(f"  {d.file}:{d.line}:{d.col}: {d.severity}: {d.message}" for d in diags) or "  (none)"


def check_reported(m: Mutation) -> None:
    """The mutation is reported, in the document, at one of `m.where`, naming `m.mentions`."""
    filename, text = document(m.example)
    original = lowered_text(m.example)
    mutated = m.edit(original)
    assert mutated != original, f"{m.id}: the edit changed nothing"
    diags = round_trip(m.example, parse_loops(mutated))
    report = f"{m.id}:\n{_render(diags)}"
    assert diags, f"{m.id}: the corruption is not reported"
    for diag in diags:
        assert diag.severity == "error", report
        assert diag.file == filename and diag.line >= 1 and diag.col >= 1, f"not located in the document\n{report}"
        assert "cannot raise" not in diag.message, f"a raising limitation, not a detection\n{report}"
    expected = {w.find(text) for w in m.where}
    on_line = [diag for diag in diags if (diag.line, diag.col) in expected]
    assert on_line, f"no error at {sorted(expected)}\n{report}"
    assert any(all(word in diag.message for word in m.mentions) for diag in on_line), (
        f"no error at {sorted(expected)} mentions {m.mentions}\n{report}"
    )


@pytest.mark.parametrize("m", CATALOGUE, ids=lambda m: m.id)
def test_mutation_is_reported_in_the_document(m: Mutation):
    check_reported(m)


@pytest.mark.parametrize("m", FUSION_CATALOGUE, ids=lambda m: m.id)
def test_fusion_mutation_is_reported(m: Mutation):
    check_reported(m)


@pytest.mark.parametrize("m", REGISTER_BLOCKED_CATALOGUE, ids=lambda m: m.id)
def test_mutation_of_register_blocked_example(m: Mutation):
    check_reported(m)


def test_catalogue_covers_the_issue():
    """At least ten kinds of corruption (every one the issue names), on several examples."""
    kinds = {m.kind for m in CATALOGUE}
    named = {"swap indices", "stencil offset", "tile factor", "drop tile", "parallel mark", "vector mark",
             "layout", "reduction init", "reduction operator", "drop stage", "halo",
             "non-commutative operands"}  # fmt: skip
    assert named <= kinds, named - kinds
    assert len(CATALOGUE) >= 12
    assert {m.example for m in CATALOGUE} == set(RAISABLE)
    assert len({m.id for m in CATALOGUE}) == len(CATALOGUE)


# ---- no false alarm ---------------------------------------------------------------------------


@pytest.mark.parametrize("example", RAISABLE)
def test_generated_code_verifies(example):
    assert verify_document(design_module(example)) == []


@pytest.mark.parametrize("example", RAISABLE)
def test_printed_and_parsed_generated_code_verifies(example):
    """The baseline every mutation starts from: the generated loop IR, through text."""
    assert round_trip(example, parse_loops(lowered_text(example))) == []


def test_variant_without_compute_at_verifies():
    assert round_trip("blur_root", parse_loops(lowered_text("blur_root"))) == []


@pytest.mark.parametrize("example", REGISTER_BLOCKED)
def test_register_blocked_example_verifies(example):
    assert verify_document(design_module(example)) == []


# ---- the helpers themselves ---------------------------------------------------------------------


def test_edit_with_missing_anchor_fails_loudly():
    text = lowered_text("rowsum")
    with pytest.raises(AssertionError, match="occurs 0 times"):
        replace("arith.mulf %s_1", "arith.addf %s_1")(text)
    with pytest.raises(AssertionError, match="0 headers"):
        drop_nest("nosuchloop")(text)
    with pytest.raises(AssertionError, match="is not once"):
        on_loop("io", "step 64", "step 1")(text)
    with pytest.raises(AssertionError, match="found 0 times"):
        stmt("nosuchtensor").find(document("rowsum")[1])


def test_places_are_found_in_their_blocks():
    _, text = document("elementwise")
    lines = text.splitlines()
    line, col = directive("t1", r"vectorize j\b").find(text)
    assert lines[line - 1].strip() == "vectorize j by 16"
    assert any(lines[k].strip() == "schedule t1 {" for k in range(line - 4, line - 1))
    line, col = layout("c").find(text)
    assert lines[line - 1][col - 1 :].startswith("c : row_major")
    line, col = stmt("out").find(text)
    assert lines[line - 1][col - 1 :].startswith("out[i, j] =")
