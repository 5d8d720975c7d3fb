"""lower-tensorop: every example lowers to loop IR that verifies and round-trips."""

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir.affine import AffineExpr, AffineMap

from irkit.context import make_context
from irkit.diagnostics import DiagnosticError
from irkit.dialects import loop as lp
from irkit.dialects import tensorop as t
from irkit.frontend import parse_design
from irkit.passes.generalize import generalize_module
from irkit.passes.lower_design import LowerDesignPass
from irkit.passes.lower_tensorop import SCHEDULE_ATTR, LowerTensorOpPass, extent_bound
from irkit.passes.registry import IRKIT_PASSES
from irkit.tools.opt import main

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.design"))
OPT = Path(sys.executable).parent / "irkit-opt"


def tensorop_module(path: Path) -> ModuleOp:
    module = parse_design(path.read_text(), str(path))
    LowerDesignPass().apply(make_context(), module)
    return module


def lowered(path: Path) -> tuple[ModuleOp, ModuleOp]:
    """(tensorop module, the same lowered to loops)."""
    before = tensorop_module(path)
    after = before.clone()
    LowerTensorOpPass().apply(make_context(), after)
    return before, after


def time_loop(loop: lp.ForOp) -> bool:
    """A `repeat`'s loop: of no stage, its variable used by nothing."""
    return loop.stage is None and not loop.induction_var.uses


def loops_of(module: ModuleOp) -> list[lp.ForOp]:
    """The statements' loops (a repeat's time loop left out)."""
    return [op for op in module.walk() if isinstance(op, lp.ForOp) and not time_loop(op)]


def outermost(module: ModuleOp) -> list[lp.ForOp]:
    """The outermost loop of each statement's nest (inside a time loop, if any)."""
    return [op for op in loops_of(module) if not isinstance(op.parent_op(), lp.ForOp) or time_loop(op.parent_op())]


def nest_of(loop: lp.ForOp) -> list[lp.ForOp]:
    nest = [loop]
    while True:
        inner = [op for op in nest[-1].body.block.ops if isinstance(op, lp.ForOp)]
        if not inner:
            return nest
        (only,) = inner
        nest.append(only)


def test_registered_lazily():
    assert IRKIT_PASSES["lower-tensorop"]() is LowerTensorOpPass


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_lowers_and_verifies(path):
    before, after = lowered(path)
    after.verify()
    assert not [op for op in after.walk() if t.is_tensorop(op)]
    (k0,) = [op for op in before.body.block.ops if isinstance(op, func.FuncOp)]
    (k1,) = [op for op in after.body.block.ops if isinstance(op, func.FuncOp)]
    assert k0.function_type == k1.function_type and k0.arg_attrs == k1.arg_attrs
    assert k0.attributes == k1.attributes and k0.sym_name == k1.sym_name
    for steps in [op for op in after.walk() if isinstance(op, lp.ForOp) and time_loop(op)]:
        assert steps.parent_op() is k1 and steps.step_value == 1  # a repeat: 0 to a size, at the top
        assert [v.owner for v in steps.upper_operands] == [k1.body.block]
    for loop in loops_of(after):
        outer = {o.induction_var for o in lp.enclosing_loops(loop)}  # a `where` bounds by outer loops
        assert (loop.lower.data == AffineMap.constant_map(0) and not loop.lower_operands) or outer
        assert loop.step_value == 1 and loop.stage is not None
        assert loop.parallel is None and loop.vector is None and loop.unroll is None
        assert all(v.owner is k1.body.block or v in outer for v in loop.upper_operands)  # sizes, outer loops


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_schedule_sits_on_the_outermost_loop_of_its_nest(path):
    before, after = lowered(path)
    schedules = {g.stage.data: g.schedule for g in before.walk() if isinstance(g, (t.GenericOp, t.NamedTensorOp))}
    carriers = [loop for loop in loops_of(after) if SCHEDULE_ATTR in loop.attributes]
    assert {loop.stage.data for loop in carriers} == {s for s, sched in schedules.items() if sched is not None}
    for loop in carriers:
        assert not isinstance(loop.parent_op(), lp.ForOp) or time_loop(loop.parent_op())
        assert loop.attributes[SCHEDULE_ATTR] == schedules[loop.stage.data]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_loop_order_is_the_domain_order(path):
    module = tensorop_module(path)
    generalize_module(module)
    generics = [g for g in module.walk() if isinstance(g, t.GenericOp)]
    LowerTensorOpPass().apply(make_context(), module)
    # fills are nests too (loops d0, d1, ...); compare the generics' nests
    nests = [nest_of(loop) for loop in outermost(module)]
    names = [[loop.loop_name.data for loop in nest] for nest in nests]
    expected = [[s.data for s in g.loop_names.data] for g in generics]
    assert [n for n in names if n[0] != "d0"] == [n for n in expected if n[0] != "d0"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_allocs_are_freed_before_return(path):
    _, after = lowered(path)
    (kernel,) = [op for op in after.body.block.ops if isinstance(op, func.FuncOp)]
    ops = list(kernel.body.block.ops)
    allocs = [op for op in ops if isinstance(op, lp.AllocOp)]
    frees = [op for op in ops if isinstance(op, lp.FreeOp)]
    assert [f.memref for f in frees] == [a.result for a in reversed(allocs)]
    if frees:
        assert ops[-len(frees) - 1 : -1] == frees
    assert isinstance(ops[-1], func.ReturnOp)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_round_trip_through_irkit_opt(path, tmp_path):
    if not OPT.exists():
        pytest.skip("irkit-opt is not installed next to the running Python")
    first = subprocess.run([str(OPT), str(path), "-p", "lower-design,lower-tensorop"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    again = subprocess.run([str(OPT), "-"], input=first.stdout, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    generic = subprocess.run([str(OPT), "-", "--print-op-generic"], input=first.stdout, capture_output=True, text=True)
    back = subprocess.run([str(OPT), "-"], input=generic.stdout, capture_output=True, text=True)
    assert back.returncode == 0, back.stderr
    assert back.stdout == first.stdout


def test_extent_bound_uses_only_the_sizes_it_needs():
    sizes = ["M", "N", "K"]
    s0, s2 = AffineExpr.symbol(0), AffineExpr.symbol(2)
    bound, operands = extent_bound(s2 + s0 * 2, sizes)  # type: ignore[arg-type]
    assert str(bound) == "(d0, d1) -> (((d0 * 2) + d1))" and operands == ["M", "K"]
    bound, operands = extent_bound(AffineExpr.constant(3), sizes)  # type: ignore[arg-type]
    assert str(bound) == "() -> (3)" and operands == []


def test_no_kernel_is_a_diagnostic_and_exit_1(tmp_path, capsys):
    with pytest.raises(DiagnosticError, match="lower-tensorop: the module holds no kernel function"):
        LowerTensorOpPass().apply(make_context(), ModuleOp([]))
    empty = tmp_path / "empty.mlir"
    empty.write_text("builtin.module {\n}\n")
    assert main([str(empty), "-p", "lower-tensorop"]) == 1
    err = capsys.readouterr().err
    assert "no kernel function" in err and "Traceback" not in err


def test_lowering_twice_is_a_no_op():
    _, after = lowered(EXAMPLES[0])
    text = str(after)
    LowerTensorOpPass().apply(make_context(), after)
    assert str(after) == text


def test_alloc_alignment_is_kept():
    path = next(p for p in EXAMPLES if p.stem == "blur")
    module = tensorop_module(path)
    (alloc,) = [op for op in module.walk() if isinstance(op, t.AllocOp)]
    alloc.properties["align"] = IntegerAttr(32, 64)
    LowerTensorOpPass().apply(make_context(), module)
    (new,) = [op for op in module.walk() if isinstance(op, lp.AllocOp)]
    assert new.align is not None and new.align.value.data == 32
    assert new.tensor_name.data == "bx" and new.shape == alloc.shape
