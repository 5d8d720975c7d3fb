"""Index-dependent domains (`... where j <= i`) through every level: checked (affine, each
constraint bounding an index, no element of an output left unwritten), printed back, lowered to
loops whose bounds follow the constraints (a triangle is half a square), run by C, the numpy
oracle and the loop interpreter alike, raised back with their constraints (a lost constraint is a
difference `irkit verify` reports), scheduled where legal and refused at the directive where not,
and priced with exact trip counts."""

from __future__ import annotations

import numpy as np
import pytest

import irkit
from irkit.frontend import parse_design
from irkit.perf import load_hardware, predict
from tests.unit.oracle_agreement import (
    agrees_with_the_oracle,
    builds_clean_and_runs_asan_clean,
    irkit_says,
    raised_document,
    semantic_check_agrees,
)

SYRK = """design syrk {
  sizes { N = 37, K = 11 }
  scalar alpha : f32 input
  tensor A : f32[N, K] input
  tensor C : f32[N, N] inout
  C[i, j] += alpha * A[i, k] * A[j, k] where j <= i
  schedule C {
    reorder i, k, j
    parallel i
    vectorize j by 8
  }
}
"""

TRMM = """design trmm {
  sizes { M = 23, N = 17 }
  tensor A : f64[M, M] input
  tensor B : f64[M, N] input
  tensor C : f64[M, N] output
  C[i, j] += A[k, i] * B[k, j] where k > i
  schedule C {
    split j by 4 -> jo, ji
    parallel i
  }
}
"""

BAND = """design band {
  sizes { N = 40 }
  tensor A : f32[N, N] input
  tensor D : f32[N, N] inout
  tensor s : f32[N] output
  D[i, j] = D[i, j] + A[i, j] where j == i
  s[i] max= A[i, j] where j >= i - 2, j <= i + 2
}
"""

ALL = [SYRK, TRMM, BAND]


@pytest.mark.parametrize(
    "text, sizes",
    [(SYRK, {"N": 37, "K": 11}), (SYRK, {"N": 1, "K": 3}), (SYRK, {"N": 9, "K": 1}), (TRMM, {"M": 23, "N": 17}),
     (TRMM, {"M": 2, "N": 5}), (BAND, {"N": 40}), (BAND, {"N": 3})],
)  # fmt: skip
def test_where_runs_as_the_oracle_says(text, sizes):
    agrees_with_the_oracle(text, sizes, name="where.design")


def test_the_oracle_computes_the_triangle():
    kernel = irkit.compile(SYRK, name="syrk.design")
    inputs = kernel.random_inputs({"N": 6, "K": 4}, seed=1)
    a = inputs["A"].astype(np.float64)
    expected = inputs["C"] + float(inputs["alpha"]) * np.tril(a @ a.T)
    np.testing.assert_allclose(kernel.reference(inputs, {"N": 6, "K": 4})["C"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kernel({"N": 6, "K": 4}, **inputs)["C"], expected, rtol=1e-5, atol=1e-6)


def test_a_banded_maximum_and_a_diagonal():
    kernel = irkit.compile(BAND, name="band.design")
    a = np.arange(25, dtype=np.float32).reshape(5, 5)
    d = np.zeros((5, 5), dtype=np.float32)
    out = kernel({"N": 5}, A=a, D=d)
    np.testing.assert_array_equal(out["D"], np.diag(np.diag(a)))
    np.testing.assert_array_equal(out["s"], [a[i, min(i + 2, 4)] for i in range(5)])


def test_the_loops_follow_the_constraints():
    c = irkit.compile(TRMM, name="trmm.design", build=False).c_source
    assert "for (int64_t k = i + 1;" in c or "irkit_max_i64(0, i + 1)" in c or "k = i + 1" in c, c


@pytest.mark.parametrize("text", ALL)
def test_where_prints_back_and_verifies(text):
    from irkit.backends.design_text import print_design
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(text, "where.design")
    printed = print_design(module)
    assert print_design(parse_design(printed, "printed.design")) == printed
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []


@pytest.mark.parametrize("text", ALL)
def test_raising_gives_the_domain_back(text):
    from irkit.raising.verify import compare_modules, lowered_loops

    printed = raised_document(text)
    again = parse_design(printed, "raised.design")
    assert [d.message for d in compare_modules(again, lowered_loops(parse_design(text, "w.design")))] == []
    assert "where" in printed


def test_verify_reports_a_lost_constraint():
    """The generated loops run the whole square: the raised domain differs from the document's."""
    from irkit.dialects import loop as lp
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(SYRK.replace("    reorder i, k, j\n    parallel i\n    vectorize j by 8\n", ""), "syrk.design")
    loops = lowered_loops(module)
    j = next(op for op in loops.walk() if isinstance(op, lp.ForOp) and op.loop_name.data == "j")
    from xdsl.ir.affine import AffineExpr, AffineMap

    j.properties["upper"] = type(j.upper)(AffineMap(2, 0, (AffineExpr.dimension(0),)))
    messages = [d.message for d in compare_modules(module, loops)]
    assert any("the document's domain is j <= i, the generated code's every point of the box" in m for m in messages)


@pytest.mark.parametrize("engine", ["c", "interp"])
def test_the_semantic_check_runs_triangles_on_both_engines(engine, tmp_path):
    semantic_check_agrees(TRMM, engine, tmp_path)


def test_xdsl_interpreter_agrees_on_triangles():
    from irkit.raising.verify import lowered_loops
    from tests.unit.test_export_affine import _agree

    _agree(lowered_loops(parse_design(SYRK, "syrk.design")), {"N": 7, "K": 3})
    _agree(lowered_loops(parse_design(TRMM, "trmm.design")), {"M": 6, "N": 5})


def test_a_triangle_is_priced_as_half_a_square():
    hw = load_hardware("generic", document=None)
    plain = SYRK.replace("    reorder i, k, j\n    parallel i\n    vectorize j by 8\n", "")  # k innermost: a chain
    sizes = {"N": 512, "K": 256}
    serial = [plain, plain.replace(" where j <= i", "")]
    tri, box = (predict(t, sizes, hw).seconds for t in serial)
    assert 0.4 < tri / box < 0.6, (tri, box)


SCHEDULE_ERRORS = [
    ("interchange i, j", "would move 'j' outside 'i', but the bounds of 'j' depend on 'i'"),
    ("reorder j, i, k", "would move 'j' outside 'i', but the bounds of 'j' depend on 'i'"),
    ("unroll_jam i by 2", "the bounds of 'j' depend on 'i'"),
]


@pytest.mark.parametrize("directive, message", SCHEDULE_ERRORS)
def test_a_schedule_that_breaks_the_triangle_is_refused_at_its_line(directive, message, capsys, tmp_path):
    from irkit.tools.cli import main

    text = SYRK.replace("    reorder i, k, j\n    parallel i\n    vectorize j by 8\n", f"    {directive}\n")
    path = tmp_path / "bad.design"
    path.write_text(text)
    assert main(["run", str(path)]) != 0
    err = capsys.readouterr().err
    assert message in err and f"{path}:8:" in err, err
    assert "Traceback" not in err


BAD = [
    ("where j <= i", "where j <= i + k * k", "where j <= i + k * k: 'k * k' is not affine"),
    ("where j <= i", "where q < i", "where q < i: 'q' is neither an index of this statement (i, j, k) nor a size"),
    ("where j <= i", "where N > 3", "where N > 3: constrains no index of the statement"),
    ("where j <= i", "where 2 * j <= i", "j has the coefficient 2; a bound on j would need a division"),
    ("where j <= i", "where j != i", "'!=' cannot bound a loop"),
    ("tensor C : f32[N, N] inout\n  C[i, j] += alpha * A[i, k] * A[j, k] where j <= i",
     "tensor C : f32[N, N] output\n  C[i, j] = alpha * A[i, 0] * A[j, 0] where j <= i",
     "output 'C' has elements no statement writes (e.g. at C[0, 1] when N = "),
]  # fmt: skip


@pytest.mark.parametrize("old, new, message", BAD)
def test_a_wrong_constraint_is_a_located_error(old, new, message, capsys, tmp_path):
    status, err, path = irkit_says(SYRK.replace(old, new), tmp_path)
    assert status != 0 and message in err and f"{path}:6:" in err, err


def test_triangles_build_warning_free_and_run_asan_clean():
    builds_clean_and_runs_asan_clean(ALL, [(SYRK, {"N": 19, "K": 5}), (TRMM, {"M": 9, "N": 7}), (BAND, {"N": 6})])


def test_work_counts_the_points_of_the_domain():
    from irkit.metrics import work

    flops = work(parse_design(SYRK, "syrk.design"), {"N": 100, "K": 7}).flops
    assert flops == 100 * 101 // 2 * 7 * 3  # alpha * A * A, then the add: 3 per point of the triangle
    band = work(parse_design(BAND, "band.design"), {"N": 10}).flops
    assert band == 10 * 1 + (10 * 5 - 2 * 3)  # the diagonal's add; the band's points (each a max)


def test_the_tuner_offers_no_schedule_a_triangle_refuses():
    """A triangle's loops start with their bounds' loops (j's bounds use i): the tuner never offers
    moving j outside i or jamming i, the directives the passes refuse, and still offers the rest."""
    from irkit.tune.candidate import extend, next_entries, start
    from irkit.tune.stages import read_kernel

    info = read_kernel(SYRK, "syrk.design", {"N": 64, "K": 32})
    stage = info.stages["C"]
    assert stage.bounds == {"j": frozenset({"i"})}
    c = start(stage, info.reads["C"])
    offered = next_entries(c, stage, 8, 16)
    kinds = {(e["kind"], tuple(e.get("loops") or [e.get("loop")])) for e in offered}
    assert ("interchange", ("i", "j")) not in kinds and not any(k == "unroll_jam" and lp == ("i",) for k, lp in kinds)
    assert not any(e["kind"] == "tile" and e["loops"] == ["i", "j"] and extend(c, e, stage) for e in offered)
    assert ("parallel", ("i",)) in kinds and ("interchange", ("j", "k")) in kinds
    for e in offered:
        if e["kind"] in ("reorder", "interchange", "unroll_jam"):
            assert extend(c, e, stage) is not None, e
    split = extend(c, {"kind": "split", "loop": "i", "factor": 4, "outer": "io", "inner": "ii"}, stage)
    assert split is not None
    assert extend(split, {"kind": "unroll_jam", "loop": "io", "factor": 2}, stage) is None  # j's bounds use ii, inside io


def test_a_where_producer_computed_at_its_consumer_verifies():
    """Under compute_at the lowering drops `min(N, i + 1)`'s N (i < N already): raising takes the
    dimension the loop indexes as its box, the constraint as its domain."""
    from irkit.raising.verify import compare_modules, lowered_loops

    text = """design caw {
  sizes { N = 24 }
  tensor A : f32[N, N] input
  tensor T : f32[N, N] temp
  tensor C : f32[N, N] output
  T[i, j] += A[i, k] where k <= i
  C[i, j] = 2.0 * T[i, j]
  schedule C { split i by 8 -> io, ii }
  schedule T { compute_at C.io }
}
"""
    module = parse_design(text, "caw.design")
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []
    agrees_with_the_oracle(text, {"N": 21}, name="caw.design")
