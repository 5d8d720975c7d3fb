"""The Lark frontend: design IR with locations, syntax errors, recovery."""

from pathlib import Path

import pytest
from xdsl.dialects.builtin import FileLineColLoc

import irkit.directives as dv
from irkit.diagnostics import DiagnosticError
from irkit.dialects import design as d
from irkit.frontend import build_design, parse_design

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.design"))

GEMM = """design gemm {
  sizes { M = 64, N = 32, K = 16 }
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output
  C[i, j] += A[i, k] * B[k, j]
  schedule C { split k by 4 -> ko, ki; parallel i }
}
"""


def ops_of(module, kind):
    return [op for op in module.walk() if isinstance(op, kind)]


def test_every_op_carries_its_source_location():
    module = parse_design(GEMM, "gemm.design")
    for op in module.walk():
        if op.name == "builtin.module":
            continue
        assert isinstance(op.location, FileLineColLoc), op.name
        assert op.location.filename.data == "gemm.design"
    (stmt,) = ops_of(module, d.StmtOp)
    assert (stmt.location.line.data, stmt.location.column.data) == (6, 3)
    reads = ops_of(module, d.ReadOp)
    assert [(r.tensor.data, r.location.column.data) for r in reads] == [("A", 14), ("B", 24)]


def test_statement_body_uses_arith():
    module = parse_design(GEMM, "gemm.design")
    names = [op.name for op in ops_of(module, d.StmtOp)[0].body.block.ops]
    assert names == ["design.read", "design.read", "arith.mulf", "design.yield"]


def test_integer_statement_uses_integer_arith():
    doc = """design ints { sizes { N = 4 } tensor a : i32[N] input tensor b : i32[N] output
      b[i] = max(a[i] * 2, -a[i]) }"""
    module = parse_design(doc, "i.design")
    names = {op.name for op in module.walk()}
    assert {"arith.muli", "arith.maxsi", "arith.subi"} <= names
    assert "arith.mulf" not in names


def test_exp_of_integer_is_reported():
    doc = "design e { sizes { N = 4 } tensor a : i32[N] input tensor b : i32[N] output b[i] = exp(a[i]) }"
    with pytest.raises(DiagnosticError, match="'exp' needs a floating-point statement"):
        parse_design(doc, "e.design")


def test_unknown_function_and_bare_name():
    doc = "design e { sizes { N = 4 } tensor a : f32[N] input tensor b : f32[N] output b[i] = tanh(a[i]) + n + a }"
    with pytest.raises(DiagnosticError) as info:
        parse_design(doc, "e.design")
    messages = [diag.message for diag in info.value.diagnostics]
    assert any("unknown function 'tanh'" in m for m in messages)
    assert any("'n' is not a value here" in m and "did you mean 'N'" in m for m in messages), messages
    assert any("'a' is a tensor: read its elements as a[indices]" in m for m in messages)


def test_syntax_error_is_located_with_expectation():
    with pytest.raises(DiagnosticError) as info:
        parse_design("design g {\n  tensor A : f32[M] inptu\n}\n", "g.design")
    (diag,) = info.value.diagnostics
    assert (diag.file, diag.line, diag.col) == ("g.design", 2, 21)
    assert "expected a role (input, output, temp)" in diag.message


def test_missing_brace_is_recovered_and_semantics_still_checked():
    doc = GEMM.replace("C[i, j] += A[i, k] * B[k, j]", "C[i, j] += A[i, k] * Q[k, j]").rstrip().rstrip("}")
    with pytest.raises(DiagnosticError) as info:
        parse_design(doc, "g.design")
    messages = [diag.message for diag in info.value.diagnostics]
    assert any("expected '}' before end of input" in m for m in messages)
    assert any("undefined tensor 'Q'" in m for m in messages)


def test_tile_default_names_and_split_defaults():
    doc = GEMM.replace("split k by 4 -> ko, ki; parallel i", "tile i, j by 8, 8; split k by 4; parallel io")
    module = parse_design(doc, "g.design")
    (tile,) = ops_of(module, dv.TileOp)
    assert d.str_list(tile.outer) == ["io", "jo"] and d.str_list(tile.inner) == ["ii", "ji"]
    (split,) = ops_of(module, dv.SplitOp)
    assert (split.outer.data, split.inner.data) == ("ko", "ki")


def test_hardware_file_parses_to_a_hardware_op():
    text = (Path(__file__).parents[2] / "irkit" / "hw" / "generic.hw").read_text()
    module = parse_design(text, "generic.hw")
    (hw,) = module.body.block.ops
    assert isinstance(hw, d.HardwareOp) and hw.hw_name.data == "generic"


def test_build_without_check_keeps_semantic_errors_for_later():
    module, diags = build_design(GEMM.replace("B[k, j]", "Q[k, j]"), "g.design")
    assert module is not None and diags == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_are_clean(path):
    module = parse_design(path.read_text(), str(path))
    from irkit.checks.document import check_document

    assert check_document(module) == []  # no warnings either
    assert ops_of(module, d.ScheduleOp) and (ops_of(module, d.HardwareOp) or ops_of(module, d.HardwareRefOp))
    assert ops_of(module, d.LayoutOp)


def test_there_are_eight_examples():
    assert {p.stem for p in EXAMPLES} >= {
        "gemm", "blur", "softmax", "conv2d", "elementwise", "rowsum", "transpose", "batch_matmul",
    }
