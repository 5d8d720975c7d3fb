"""apply-schedule and the schedule directive registry: the interface other
directive modules plug into, the order of the phases, agreement with the
checker's replay of every example's schedule, and diagnostics of whole
documents through `irkit run`."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import irkit.directives as dv
from irkit.checks.schedule import replay
from irkit.context import make_context
from irkit.diagnostics import DiagnosticError
from irkit.dialects import design as d
from irkit.dialects import loop as lp
from irkit.directives.nest import Nest
from irkit.frontend import parse_design
from irkit.passes import apply_schedule as aps
from irkit.passes import schedule as sched
from irkit.passes.apply_schedule import ApplySchedulePass
from irkit.passes.lower_design import LowerDesignPass
from irkit.passes.lower_tensorop import SCHEDULE_ATTR, LowerTensorOpPass
from irkit.passes.registry import IRKIT_PASSES
from irkit.passes.schedule import helpers as h
from irkit.tools.cli import main

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.design"))
SHAPING = ("split", "tile", "reorder", "parallel", "vectorize", "unroll")


def loop_ir(path_or_text: Path | str, name: str = "doc.design") -> ModuleOp:
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    module = parse_design(text, str(path_or_text) if isinstance(path_or_text, Path) else name)
    for p in (LowerDesignPass(), LowerTensorOpPass()):
        p.apply(make_context(), module)
    return module


def scheduled(path_or_text: Path | str, name: str = "doc.design") -> ModuleOp:
    module = loop_ir(path_or_text, name)
    ApplySchedulePass().apply(make_context(), module)
    module.verify()
    return module


def parse_mlir(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


# ------------------------------------------------------------------ registry


def test_passes_are_registered():
    assert IRKIT_PASSES["apply-schedule"]() is ApplySchedulePass
    for kind in SHAPING:
        cls = IRKIT_PASSES[f"schedule-{kind}"]()
        assert cls.name == f"schedule-{kind}"


def test_every_shaping_directive_registers_itself():
    for kind in SHAPING:
        fn = sched.load(kind)
        assert fn is not None and sched.DIRECTIVES[kind] is fn
        assert sched.phase_of(kind) == sched.SHAPE
    assert sched.phase_of("compute_at") == sched.PLACE == sched.phase_of("compute_root")
    assert sched.load("no_such_directive") is None


def test_where_is_parsed_into_a_located_diagnostic():
    err = h.fail("dir/x.design:12:7", "nope", "k")
    (diag,) = err.diagnostics
    assert (diag.file, diag.line, diag.col, diag.focus) == ("dir/x.design", 12, 7, "k")
    (unlocated,) = h.fail("", "nope").diagnostics
    assert unlocated.line == 0


# ------------------------------------------------------------- the phases


def test_placement_runs_after_shaping_consumers_first(monkeypatch):
    calls: list[tuple[str, str, bool, list[str]]] = []

    def fake(kernel, stage, directive, where):
        left = any(SCHEDULE_ATTR in op.attributes for op in kernel.walk())
        out_loops = [n for root in h.stage_nests(kernel, "out") for n in h.loop_names(root)]
        calls.append((stage, h.get_str(directive, "loop"), left, out_loops))

    module = loop_ir(Path(__file__).parents[2] / "examples" / "elementwise.design")  # the checker schedules too
    monkeypatch.setitem(sched.DIRECTIVES, "compute_at", fake)
    ApplySchedulePass().apply(make_context(), module)
    # t1 is written first, then t2, then out: consumers (t2) are placed before producers (t1).
    assert [c[0] for c in calls] == ["t2", "t1"]
    assert all(c[1] == "jo" and not c[2] and c[3] == ["i", "jo", "ji"] for c in calls)


def test_a_placement_without_its_transform_is_an_error_at_its_line(monkeypatch):
    """No silent fallback to compute_root: every directive is applied or refused."""
    real = aps.load
    monkeypatch.setattr(aps, "load", lambda kind: None if sched.phase_of(kind) == sched.PLACE else real(kind))
    path = Path(__file__).parents[2] / "examples" / "blur.design"
    with pytest.raises(DiagnosticError) as exc:
        scheduled(path)
    (diag,) = exc.value.diagnostics
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith("compute_at "))
    assert diag.message.startswith("unknown schedule directive 'compute_at'; the directives are: ") and diag.line == line


def test_a_shaping_directive_without_its_transform_is_an_error_at_its_line(monkeypatch):
    monkeypatch.setattr(aps, "load", lambda kind: None)
    path = Path(__file__).parents[2] / "examples" / "gemm.design"
    with pytest.raises(DiagnosticError) as exc:
        scheduled(path)
    (diag,) = exc.value.diagnostics
    tile_line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith("tile "))
    assert diag.message.startswith("unknown schedule directive 'tile'; the directives are: compute_at, ")
    assert diag.line == tile_line


# --------------------------------------------------- agreement with the checker


def replayed(path: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """stage -> (final loop order by the checker's replay, loop -> loc of the last directive on it)."""
    module = parse_design(path.read_text(), str(path))
    from irkit.checks.design import DesignChecker

    design = next(op for op in module.walk() if isinstance(op, d.DesignOp))
    checker = DesignChecker(design)
    checker.run()
    out = {}
    for op in design.body.block.ops:
        if not isinstance(op, d.ScheduleOp):
            continue
        stage = checker.stages[op.stage.data]
        nest = Nest(op.stage.data, stage.loops, stage.reduction_loops)
        origins: dict[str, str] = {}
        for directive in op.body.block.ops:
            replay(nest, directive)
            where = f"{path}:{directive.location.line.data}:{directive.location.column.data}"
            if isinstance(directive, dv.SplitOp):
                origins.update({directive.outer.data: where, directive.inner.data: where})
            elif isinstance(directive, dv.TileOp):
                origins.update({n: where for n in d.str_list(directive.outer) + d.str_list(directive.inner)})
            elif isinstance(directive, dv.ParallelOp | dv.VectorizeOp | dv.UnrollOp):
                origins[directive.loop.data] = where
        out[op.stage.data] = (nest.names, origins)
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_end_with_the_loops_the_checker_replays(path, monkeypatch):
    real = aps.load  # loop shaping only: placements move nests and are another module's business
    monkeypatch.setattr(aps, "load", lambda kind: (lambda *a: None) if sched.phase_of(kind) == sched.PLACE else real(kind))
    monkeypatch.setattr("irkit.passes.schedule.compute_at.fuse_stages", lambda kernel: [])
    monkeypatch.setattr("irkit.passes.schedule.fill_placement.distribute_fills", lambda kernel: [])
    if any(word in path.read_text() for word in ("unroll_jam ", "pack ")):
        pytest.skip("register blocking and packing restructure the nest beyond the checker's replay")
    module = scheduled(path)
    (kernel,) = h.kernels(module)
    assert not any(SCHEDULE_ATTR in op.attributes for op in module.walk())
    for stage, (order, origins) in replayed(path).items():
        nests = [root for root in h.stage_nests(kernel, stage) if set(h.loop_names(root)) == set(order)]
        assert nests, f"{stage}: no nest with loops {order}"
        for root in nests:
            assert h.loop_names(root) == order
            for loop in h.nest_loops(root):
                expected = origins.get(h.name(loop))
                assert (loop.origin.data if loop.origin is not None else None) == expected, h.name(loop)


GEMM_CLASSIC = """design gemm {
  sizes { M = 1024, N = 1024, K = 1024 }
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output
  C[i, j] += A[i, k] * B[k, j]
  schedule C {
    tile i, j by 64, 256 -> io, jo, ii, ji
    split k by 128 -> ko, ki
    reorder io, jo, ko, ii, ki, ji
    parallel io
    unroll ii by 4
    vectorize ji by 16
  }
}
"""


def test_parallel_facts_of_the_examples(tmp_path):
    (tmp_path / "gemm.design").write_text(GEMM_CLASSIC)
    module = scheduled(tmp_path / "gemm.design")
    facts = {h.name(loop): loop for loop in module.walk() if isinstance(loop, lp.ForOp)}
    assert facts["io"].parallel is not None and facts["io"].step_value == 64
    assert facts["ji"].vector.value.data == 16 and facts["ii"].unroll.value.data == 4
    # the zero fill of C runs first in each iteration of io, on the rows io updates
    fill, update = list(facts["io"].body.block.ops)
    assert h.name(fill) == "d0i" and h.name(update) == "jo"
    assert [h.name(x) for x in h.chain_below(update)] == ["jo", "ko", "ii", "ki", "ji"]


# ------------------------------------------------------ the parallel verifier


RACE = """
func.func @k(%M: index, %X: memref<?xf32>) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 32 {loop_name = "io", parallel} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> (d0 + WIDTH, d1)>(%io, %M) step 1 {loop_name = "ii"} {
      %c = arith.constant 1.0 : f32
      loop.store %c, %X[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
  }
  func.return
}
"""


def test_a_store_through_a_split_window_depends_on_the_outer_loop():
    parse_mlir(RACE.replace("WIDTH", "32")).verify()  # disjoint windows [io, io + 32)


def test_overlapping_windows_are_a_write_conflict():
    with pytest.raises(VerifyException, match="two iterations would write the same element"):
        parse_mlir(RACE.replace("WIDTH", "34")).verify()  # [io, io + 34) overlaps the next window


# ---------------------------------------------------- documents, via irkit run


GEMM = """design g {
  sizes { M = 8, N = 8, K = 8 }
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output
  C[i, j] += A[i, k] * B[k, j]
  schedule C {
SCHEDULE
  }
}
"""


def run_document(tmp_path, capsys, text: str) -> tuple[int, str]:
    path = tmp_path / "doc.design"
    path.write_text(text)
    status = main(["run", str(path), "--check"])
    out, err = capsys.readouterr()
    return status, err + out


@pytest.mark.parametrize(
    "schedule, line, message, caret",
    [
        (
            "    split k by 4 -> ko, ki\n    reorder ki, ko",
            9,
            "reorder ki, ko would move 'ki' outside 'ko', but the bounds of 'ki' depend on 'ko'",
            "      reorder ki, ko\n              ^~",
        ),
        (
            "    parallel i\n    split j by 2 -> jo, ji\n    parallel ji",
            10,
            "parallel 'ji': 'ji' is nested inside the parallel loop 'i'",
            "      parallel ji\n               ^~",
        ),
        (
            "    tile i, k by 2, 2 -> io, ko, ii, ki\n    reorder ki, ko",
            9,
            "reorder ki, ko would move 'ki' outside 'ko'",
            None,
        ),
    ],
)
def test_illegal_schedules_are_reported_at_the_schedule_line(tmp_path, capsys, schedule, line, message, caret):
    status, output = run_document(tmp_path, capsys, GEMM.replace("SCHEDULE", schedule))
    assert status == 1
    assert f"doc.design:{line}:" in output and message in output, output
    if caret is not None:
        assert caret in output


def test_softmax_axis_loop_is_a_reduction_loop(tmp_path, capsys):
    text = """design s {
  sizes { M = 8, N = 8 }
  tensor X : f32[M, N] input
  tensor P : f32[M, N] output
  P = softmax(X, axis = 1)
  schedule P { parallel j }
}
"""
    status, output = run_document(tmp_path, capsys, text)
    assert status == 1 and "doc.design:6:25: error: parallel 'j': 'j' is a reduction loop of 'P'" in output, output


def test_legal_schedules_run_and_check(tmp_path, capsys):
    schedule = "    tile i, j by 3, 5 -> io, jo, ii, ji\n    split k by 2 -> ko, ki\n    reorder jo, io, ko, ii, ki, ji\n    parallel jo\n    vectorize ji by 4\n    unroll ki by 2"
    status, output = run_document(tmp_path, capsys, GEMM.replace("SCHEDULE", schedule))
    assert status == 0, output


# ------------------------------------------------------------ one-directive passes


def test_single_directive_pass_reports_an_unknown_stage():
    from irkit.passes.schedule.split import ScheduleSplitPass

    module = loop_ir(Path(__file__).parents[2] / "examples" / "gemm.design")
    with pytest.raises(DiagnosticError, match="no loops of stage 'Z'"):
        ScheduleSplitPass(stage="Z", loop="i", factor=2).apply(make_context(), module)


def test_single_vectorize_pass_checks_innermost_at_once():
    from irkit.passes.schedule.vectorize import ScheduleVectorizePass

    module = loop_ir(Path(__file__).parents[2] / "examples" / "gemm.design")
    with pytest.raises(DiagnosticError, match="only the innermost loop can be vectorized, and 'j' contains 'k'"):
        ScheduleVectorizePass(stage="C", loop="j", loc="g.design:3:4").apply(make_context(), module)
