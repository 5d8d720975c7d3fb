"""generalize-tensorop: named tensorop ops become fills, allocs and generics."""

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from irkit.context import make_context
from irkit.diagnostics import DiagnosticError
from irkit.dialects import tensorop as t
from irkit.frontend import parse_design
from irkit.passes.generalize import GeneralizeTensorOpPass, buffer_shape, generalize_module
from irkit.passes.lower_design import LowerDesignPass
from irkit.passes.registry import IRKIT_PASSES

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.design"))


def tensorop_module(path: Path) -> ModuleOp:
    module = parse_design(path.read_text(), str(path))
    LowerDesignPass().apply(make_context(), module)
    return module


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def ops_of(module: ModuleOp, kind: type) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def test_registered_lazily():
    assert IRKIT_PASSES["generalize-tensorop"]() is GeneralizeTensorOpPass
    assert GeneralizeTensorOpPass.name == "generalize-tensorop"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_generalize_and_verify(path):
    module = tensorop_module(path)
    named = ops_of(module, t.NamedTensorOp)
    before = {(op.stage.data, op.schedule, op.location) for op in named}
    GeneralizeTensorOpPass().apply(make_context(), module)
    module.verify()
    assert not ops_of(module, t.NamedTensorOp)
    for op in module.walk():
        if t.is_tensorop(op):
            assert isinstance(op, (t.GenericOp, t.FillOp, t.AllocOp, t.YieldOp, t.RepeatOp, t.IndexOp)), op.name
    # every named op's stage, schedule and location survive on a generic of its own loops
    generics = {(g.stage.data, g.schedule, g.location) for g in ops_of(module, t.GenericOp)}
    assert before <= generics


MATMUL = """
func.func @mm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
              %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>},
              %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1)>},
              %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) {
  tensorop.matmul ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) sizes(%M, %N, %K) {stage = "C", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>, schedule = [{kind = "parallel", loop = "i"}]} loc("mm.design":3:3)
  func.return
}
"""


def test_matmul_is_fill_then_one_reduction_generic():
    module = parse(MATMUL)
    generalize_module(module)
    fill, generic = [op for op in module.walk() if isinstance(op, (t.FillOp, t.GenericOp))]
    assert isinstance(fill, t.FillOp) and fill.value.value.data == 0.0
    assert isinstance(generic, t.GenericOp)
    assert [m.data for m in generic.indexing_maps.data] == [
        m.data for m in parse_maps("(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)")
    ]
    assert generic.iterator_kinds == ["parallel", "parallel", "reduction"]
    assert [s.data for s in generic.loop_names.data] == ["i", "j", "k"]
    assert generic.schedule is not None and generic.schedule.data[0].data["loop"].data == "i"
    assert [op.name for op in generic.body.block.ops] == ["arith.mulf", "arith.addf", "tensorop.yield"]
    assert fill.location == generic.location and "mm.design" in str(generic.location)


def parse_maps(*texts: str):
    return [Parser(make_context(), f"affine_map<{text}>").parse_attribute() for text in texts]


SOFTMAX = """
func.func @sm(%N: index {irkit.name = "N"},
              %P_max: memref<?xf32> {irkit.name = "P_max", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
              %P: memref<?xf32> {irkit.name = "P", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  tensorop.softmax ins(%P_max : memref<?xf32>) outs(%P : memref<?xf32>) sizes(%N) {stage = "P", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>}
  func.return
}
"""


def test_softmax_temporaries_get_fresh_names_and_rank_zero():
    module = parse(SOFTMAX)
    generalize_module(module)
    module.verify()
    allocs = ops_of(module, t.AllocOp)
    assert [a.tensor_name.data for a in allocs] == ["P_max2", "P_sum"]
    assert all(a.result.type.get_shape() == () for a in allocs)
    generics = ops_of(module, t.GenericOp)
    assert len(generics) == 4
    assert [g.iterator_kinds for g in generics] == [["reduction"], ["parallel"], ["reduction"], ["parallel"]]


def test_buffer_shape_is_over_the_users_sizes():
    module = parse(MATMUL)
    (mm,) = ops_of(module, t.MatmulOp)
    shape = buffer_shape(mm.ins[1], list(mm.sizes), mm, "test")
    assert str(shape) == "()[s0, s1, s2] -> (s2, s1)"
    # over a permuted subset of the sizes: symbols follow the given order
    shape = buffer_shape(mm.ins[1], [mm.sizes[2], mm.sizes[1]], mm, "test")
    assert str(shape) == "()[s0, s1] -> (s0, s1)"
    with pytest.raises(DiagnosticError, match="not among the op's size operands"):
        buffer_shape(mm.ins[1], [mm.sizes[0]], mm, "test")


def test_module_without_kernels_is_a_diagnostic():
    with pytest.raises(DiagnosticError) as err:
        GeneralizeTensorOpPass().apply(make_context(), ModuleOp([]))
    assert "no kernel function" in str(err.value)


def test_design_ir_is_a_diagnostic_pointing_at_the_design():
    module = parse_design((EXAMPLES[0]).read_text(), str(EXAMPLES[0]))
    with pytest.raises(DiagnosticError) as err:
        GeneralizeTensorOpPass().apply(make_context(), module)
    (diag,) = err.value.diagnostics
    assert "run lower-design first" in diag.message and diag.file == str(EXAMPLES[0]) and diag.line > 0


def test_integer_exp_is_a_located_diagnostic():
    text = MATMUL.replace("tensorop.matmul ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)", "tensorop.elementwise ins(%A : memref<?x?xf32>)")
    text = text.replace('schedule = [{kind = "parallel", loop = "i"}]', 'params = {fn = "exp"}').replace("f32", "i32")
    text = text.replace("(s0, s1, s2)>, params", "(s0, s1)>, params").replace('["i", "j", "k"]', '["i", "j"]')
    module = parse(text)
    with pytest.raises(DiagnosticError) as err:
        generalize_module(module)
    (diag,) = err.value.diagnostics
    assert diag.message == "generalize-tensorop: elementwise exp needs floating-point operands, got i32"
    assert (diag.file, diag.line, diag.col) == ("mm.design", 3, 3)
