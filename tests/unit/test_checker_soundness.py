"""The checker refuses what is wrong (issue 14, section 2): what `irkit check` accepts, `irkit run`
lowers, compiles and runs without reading past a buffer.

- bounds are proven for every size the document allows, or reported (floor division and
  modulo, strides, 64-bit overflow, products of sizes, divisors that are not positive);
- a named operation may not read the tensor it writes;
- a schedule a pass would refuse is refused by the checker first, same line, same message
  (property: for random schedules of the examples, check accepts <=> the lowering succeeds);
- names the C backend would refuse are reported by the checker, where they are written;
- one mistake, one diagnostic; `noalias` diagnostics are located.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from strategies import stage_schedule

from irkit.affine_text import parse_affine
from irkit.api import lowering_pipeline
from irkit.backends.design_text import print_design
from irkit.checks.design import DesignChecker
from irkit.context import make_context
from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.dialects import design as d
from irkit.frontend import build_design, parse_design
from irkit.tools.cli import main

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.design"))


def errors(text: str, name: str = "doc.design") -> list[Diagnostic]:
    """The errors `irkit check` reports for `text` (parse, check, verify)."""
    try:
        parse_design(text, name)
    except DiagnosticError as exc:
        return [x for x in exc.diagnostics if x.severity == "error"]
    return []


def one_error(text: str, fragment: str) -> Diagnostic:
    found = errors(text)
    assert [x for x in found if fragment in x.message], [x.message for x in found]
    return next(x for x in found if fragment in x.message)


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# ------------------------------------------------------------------ bounds

OOB = "design d { sizes { W = 8 }  tensor a : f32[W] input  tensor b : f32[W / 2] output  b[x] = a[3 * x] }"


def test_floor_division_extent_out_of_bounds_is_refused_at_the_access():
    diag = one_error(OOB, "index '3 * x' of 'a'")
    assert (diag.line, diag.col) == (1, OOB.index("a[3") + 1)
    assert "past the last element W - 1" in diag.message and "W = 8" in diag.message


def test_strided_read_past_floor_extents_is_refused():
    doc = (
        "design d { sizes { W = 64 } tensor inp : f32[W, W] input tensor P : f32[W / 2, W / 17] output "
        "P[x, y] = inp[2 * y, 17 * x] }"
    )
    one_error(doc, "index '17 * x' of 'inp' (dimension 2)")
    assert not [e for e in errors(doc) if "'2 * y'" in e.message]  # 2 * (W/17 - 1) <= W - 1: proven


def test_a_dimension_that_is_zero_at_the_defaults_is_refused():
    doc = "design d { sizes { W = 8 } tensor a : f32[W] input tensor b : f32[W / 17] output b[x] = a[x] }"
    one_error(doc, "dimension 1 of 'b' (W / 17) is 0 at the default sizes (W = 8)")


@pytest.mark.parametrize(
    "index",
    [
        "(i * -9223372036854775808) % 8",
        "(i * 4611686018427387904) / 4611686018427387904",
        "i + 9223372036854775807 - 9223372036854775807",
    ],
)
def test_indices_that_overflow_64_bits_at_the_defaults_are_refused(index):
    doc = f"design d {{ sizes {{ N = 8 }} tensor X : f32[N] input tensor P : f32[N] output P[i] = X[{index}] }}"
    one_error(doc, "outside the 64-bit integers")


def test_constants_beyond_64_bits_are_refused_even_without_defaults():
    doc = "design d { sizes { N } tensor X : f32[N] input tensor P : f32[N] output P[i] = X[i * 36893488147419103232 / 36893488147419103232] }"
    one_error(doc, "does not fit in 64 bits")  # the builder refuses the token itself
    one_error("design d { sizes { N = 8 } tensor X : f32[99999999999999999999999] input tensor P : f32[N] output P[i] = X[i] }", "does not fit")


@pytest.mark.parametrize(
    ("shape", "index", "fragment"),
    [
        ("N * N", "i", "multiplies two non-constant terms"),
        ("N / M", "i", "'/' needs a constant divisor"),
        ("N", "i / 0", "'/' needs a positive divisor"),
        ("N", "i / -2", "'/' needs a positive divisor"),
        ("N", "i % -3", "'%' needs a positive divisor"),
        ("N", "i * i", "multiplies two non-constant terms"),
    ],
)
def test_what_affine_maps_cannot_express_is_refused(shape, index, fragment):
    doc = (
        f"design d {{ sizes {{ N = 8, M = 4 }} tensor X : f32[N] input tensor P : f32[{shape}] output "
        f"P[i] = X[{index}] }}"
    )
    one_error(doc, fragment)


def test_a_relation_samples_cannot_refute_is_not_accepted():
    # The extents differ only when N % 4097 == 4096; no sample hits that, and no proof exists.
    doc = """design d { sizes { N = 8192 }
      tensor a : f32[(N + 1) / 4097, N] input
      tensor b : f32[N / 4097, N] input
      tensor s : f32[N] output
      s[j] += a[k, j] * b[k, j] }"""
    assert [e.message for e in errors(doc)] == [
        "cannot prove that index 'k' ranges over equal extents in dimension 1 of 'a' ((N + 1) / 4097) and "
        "dimension 1 of 'b' (N / 4097) for every value of the sizes; if the sizes always allow it, say so "
        "(assume { N % 4097 == 0 })"
    ]


def test_accesses_the_floors_allow_are_proven():
    ok = [
        "tensor X : f32[2 * N] input tensor P : f32[N] output P[i] = X[2 * i + 1]",
        "tensor X : f32[N] input tensor P : f32[N / 2] output P[i] = X[2 * i + 1]",
        "tensor X : f32[N + 1] input tensor P : f32[N / 2] output P[i] = X[2 * i + 2]",
        "tensor X : f32[8] input tensor P : f32[N] output P[i] = X[(i + 3) % 8]",
        "tensor X : f32[(N + 3) / 4] input tensor P : f32[N] output P[i] = X[i / 4]",
        "tensor X : f32[N / 4] input tensor P : f32[N] output P[i] = X[i / 4] assume { N % 4 == 0 }",
    ]
    for body in ok:
        assert errors(f"design d {{ sizes {{ N = 8 }} {body} }}") == [], body


def test_an_access_only_an_assumption_makes_safe_says_which():
    doc = "design d { sizes { N = 8 } tensor X : f32[N / 4] input tensor P : f32[N] output P[i] = X[i / 4] }"
    diag = one_error(doc, "index 'i / 4' of 'X'")
    assert "N = 1" in diag.message  # N = 1: X is empty, i = 0 reads X[0]


def test_floor_forms_are_canonical_and_decided_exactly():
    from irkit.checks.symbolic import Facts, Lin, Samples, decide_eq, to_lin

    lin = lambda text: to_lin(parse_affine(text))  # noqa: E731
    assert lin("(2 * x + 1) / 4") == lin("x / 2")
    assert lin("(H + 2 - 3) / 1 + 1") == lin("H")
    facts, samples = Facts({"H": 1}), Samples.build({"H": 56}, {})
    assert decide_eq(lin("(H - 3) / 2 + 1"), lin("(H - 1) / 2"), facts, samples).proven
    verdict = decide_eq(lin("H / 2"), lin("(H + 1) / 2"), facts, samples)
    assert not verdict.proven and verdict.example is not None and verdict.example["H"] % 2 == 1
    assert Facts({"N": 4}).proves(lin("N / 4 * 4 - N") + Lin((), 0))


# ------------------------------------------------------------ named operations


@pytest.mark.parametrize(
    "stmt",
    ["C = matmul(C, A)", "C = matmul(A, C)", "C = softmax(C)", "C = transpose(C)"],
)
def test_a_named_operation_may_not_read_its_target(stmt):
    doc = f"design d {{ sizes {{ M = 8 }} tensor A : f32[M, M] input tensor C : f32[M, M] output {stmt} }}"
    diag = one_error(doc, "reads 'C', the tensor it writes")
    assert "write the result to a new tensor" in diag.message


def test_the_self_read_is_located_at_the_operand(capsys, tmp_path):
    path = tmp_path / "self.design"
    text = "design d { sizes { M = 8 } tensor A : f32[M, M] input tensor C : f32[M, M] output C = matmul(C, A) }\n"
    path.write_text(text)
    status, _, err = cli(capsys, "check", str(path), "--diagnostics-format", "json")
    (row,) = [json.loads(line) for line in err.splitlines()]
    assert status == 1 and row["col"] == text.index("(C, A)") + 2


def test_a_plugin_named_operation_may_not_read_its_target():
    from irkit.extend import NamedOperation, register_named_op
    from irkit.named_ops import NAMED_OPS, NamedOpSpec

    spec = NamedOpSpec("soundness_negate", 1, "Y = -X", lambda shapes, p: (list(shapes[0]), []))
    register_named_op(NamedOperation(spec), replace=True)
    try:
        doc = "design d { sizes { N = 8 } tensor X : f32[N] output X = soundness_negate(X) }"
        one_error(doc, "'soundness_negate' reads 'X', the tensor it writes")
    finally:
        NAMED_OPS.pop("soundness_negate", None)


def test_a_named_operation_the_passes_cannot_lower_is_refused():
    doc = "design d { sizes { N = 8 } tensor X : i32[N, N] input tensor P : i32[N, N] output P = softmax(X) }"
    one_error(doc, "softmax needs floating-point operands")


# ------------------------------------------------------------ schedules

MM2 = """design mm2 {
  sizes { M = 64, N = 64, K = 64, L = 64 }
  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[N, L] input
  tensor T : f32[M, N] temp
  tensor D : f32[M, L] output
  T[i, j] += A[i, k] * B[k, j]
  D[i, j] += T[i, k] * C[k, j]
  schedule T { tile i, j by 16, 32 -> io, jo, ii, ji; pack B at jo }
}
"""

PACK_TWO_TILES = """design p {
  sizes { M = 64, K = 64, N = 64 }
  tensor A : f32[M, K] input
  tensor C : f32[M, M] output
  C[i, j] += A[i, k] * A[j, k]
  schedule C { tile i, j by 16, 16 -> io, jo, ii, ji; split k by 16 -> ko, ki; reorder io, jo, ko, ii, ji, ki; pack A at jo }
}
"""


def lowering_error(text: str) -> Diagnostic:
    """The first diagnostic of the lowering `irkit run` does, on the unchecked document."""
    module, diags = build_design(text, "doc.design")
    assert module is not None and not diags
    with pytest.raises(DiagnosticError) as info:
        for p in lowering_pipeline():
            p.apply(make_context(), module)
    return info.value.diagnostics[0]


@pytest.mark.parametrize("text", [MM2, PACK_TWO_TILES], ids=["size-dependent-tile", "not-one-tile"])
def test_a_pack_the_pass_refuses_is_refused_by_the_checker_first(text):
    want = lowering_error(text)
    found = errors(text)
    assert [(x.message, x.line, x.col) for x in found] == [(want.message, want.line, want.col)]


def test_a_schedule_refusal_is_printed_once(capsys, tmp_path):
    path = tmp_path / "mm2.design"
    path.write_text(MM2)
    for argv in (["check", str(path)], ["run", str(path)]):
        status, _, err = cli(capsys, *argv)
        assert status == 1 and err.count("error:") == 1, err


def test_new_loop_names_are_checked():
    doc = """design d { sizes { N = 8 } tensor a : f32[N] input tensor b : f32[N] output b[i] = a[i]
      schedule b { split i by 4 -> while, i_in } }"""
    diag = one_error(doc, "loop name 'while' cannot be used in C: it is a C keyword")
    assert diag.focus == "while" and diag.line == 2


def test_generated_names_are_checked():
    long = "B" + "x" * 59
    doc = f"""design g {{ sizes {{ M = 64, N = 64, K = 64 }}
      tensor A : f32[M, K] input  tensor {long} : f32[K, N] input  tensor C : f32[M, N] output
      C[i, j] += A[i, k] * {long}[k, j]
      schedule C {{ tile i, j by 16, 32 -> io, jo, ii, ji; split k by 16 -> ko, ki; reorder io, jo, ko, ii, ki, ji; pack {long} at ko }} }}"""
    one_error(doc, f"temporary name '{long}_pack' cannot be used in C")


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("decl", "fragment"),
    [
        ("design int { sizes { N = 8 } tensor a : f32[N] input tensor b : f32[N] output b[i] = a[i] }", "kernel name 'int'"),
        ("design d { sizes { N = 8, for = 2 } tensor a : f32[N] input tensor b : f32[N] output b[i] = a[i] }", "size name 'for'"),
        ("design d { sizes { N = 8 } tensor _x : f32[N] input tensor b : f32[N] output b[i] = _x[i] }", "tensor name '_x'"),
        ("design d { sizes { N = 8 } tensor a : f32[N] input tensor sqrtf : f32[N] output sqrtf[i] = a[i] }", "tensor name 'sqrtf'"),
        ("design d { sizes { N = 8 } tensor a : f32[N] input tensor free : f32[N] temp tensor b : f32[N] output free[i] = a[i] b[i] = free[i] }", "temporary name 'free'"),
        ("design d { sizes { N = 8 } tensor a : f32[N] input tensor b : f32[N] output b[_i] = a[_i] }", "loop name '_i'"),
        ("design d { sizes { N = 8 } tensor a : f32[N, N] input tensor b : f32[N] output b[i] += a[i, double] }", "loop name 'double'"),
        (f"design d {{ sizes {{ N = 8 }} tensor {'a' * 64} : f32[N] input tensor b : f32[N] output b[i] = {'a' * 64}[i] }}", "64 characters"),
    ],
)
def test_names_the_c_backend_refuses_are_reported_by_the_checker(decl, fragment):
    diag = one_error(decl, fragment)
    assert diag.line == 1 and diag.focus is not None


# ------------------------------------------------------------- one mistake, one diagnostic

READ_EARLY = """design d {
  sizes { N = 8 }
  tensor a : f32[N] input
  tensor t : f32[N] temp
  tensor b : f32[N] output
  b[i] = t[i] + t[i] * t[i]
  t[i] = a[i] * 2
}
"""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_tensor_read_before_it_is_written_is_one_error(capsys, tmp_path, fmt):
    path = tmp_path / "early.design"
    path.write_text(READ_EARLY)
    status, _, err = cli(capsys, "check", str(path), "--diagnostics-format", fmt)
    assert status == 1
    if fmt == "json":
        rows = [json.loads(line) for line in err.splitlines()]
        assert len(rows) == 1 and "read here before" in rows[0]["message"]
        assert "2 more reads" in rows[0]["notes"][0]["message"]
    else:
        assert err.count("error:") == 1 and "note: and 2 more reads of 't'" in err


def test_a_type_mismatch_read_twice_is_one_error():
    doc = "design d { sizes { N = 8 } tensor a : i32[N] input tensor b : f32[N] output b[i] = a[i] + a[i] }"
    assert len([e for e in errors(doc) if "holds i32" in e.message]) == 1


def test_noalias_of_one_tensor_is_located(capsys, tmp_path):
    path = tmp_path / "na.design"
    text = "design d { sizes { N = 8 } tensor A : f32[N] input tensor o : f32[N] output o[i] = A[i] assume { noalias(A) } }\n"
    path.write_text(text)
    status, _, err = cli(capsys, "check", str(path), "--diagnostics-format", "json")
    (row,) = [json.loads(line) for line in err.splitlines()]
    assert status == 1 and row["line"] == 1 and row["col"] == text.index("A) }") + 1
    assert "noalias needs at least two tensors" in row["message"]


# -------------------------------------------------- nothing that was accepted is refused


DOCUMENTS = sorted(
    p
    for pattern in ("examples/*.design", "bench/documents/*.design")
    for p in ROOT.glob(pattern)
)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_documents_still_check(path):
    assert errors(path.read_text(), str(path)) == []


# ---------------------------------------------------- property: check <=> lowering


def stage_table(path: Path) -> tuple[str, dict[str, tuple[list[str], list[str]]]]:
    """(the example without schedules, stage -> (its loops, the tensors it reads))."""
    module = parse_design(path.read_text(), str(path))
    design = next(op for op in module.walk() if isinstance(op, d.DesignOp))
    for op in list(design.body.block.ops):
        if isinstance(op, d.ScheduleOp):
            op.detach()
            op.erase()
    checker = DesignChecker(design)
    checker.run()
    stages = {n: (list(s.loops), list(dict.fromkeys(s.reads))) for n, s in checker.stages.items()}
    return print_design(module), stages


CASES = {path.stem: stage_table(path) for path in EXAMPLES}


def with_schedules(text: str, schedules: dict[str, list[str]]) -> str:
    blocks = "".join(
        f"  schedule {stage} {{\n" + "".join(f"    {line}\n" for line in lines) + "  }\n"
        for stage, lines in schedules.items()
        if lines
    )
    body = text.rstrip()
    return body[:-1] + blocks + "}\n"


def lowering_outcome(text: str) -> list[Diagnostic]:
    """[] if lower-design, lower-tensorop and apply-schedule lower the document (as `irkit run`
    does, then verifying), else the diagnostics of the pass that refused it."""
    module, diags = build_design(text, "doc.design")
    assert module is not None and not [x for x in diags if x.severity == "error"]
    try:
        for p in lowering_pipeline():
            p.apply(make_context(), module)
            module.verify()
    except DiagnosticError as exc:
        return exc.diagnostics
    return []


@pytest.mark.parametrize("example", sorted(CASES))
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_check_accepts_exactly_what_lowers(example, data):
    text, stages = CASES[example]
    schedules = {}
    for stage, (loops, reads) in stages.items():
        if data.draw(st.booleans(), label=f"schedule {stage}"):
            consumers = {s: stages[s][0] for s in stages if s != stage}
            schedules[stage] = data.draw(stage_schedule(loops, reads, consumers), label=stage)
    document = with_schedules(text, schedules)
    note(document)
    refused = errors(document)
    failed = lowering_outcome(document)
    assert bool(refused) == bool(failed), (refused, failed)
    if failed:  # and the pass's refusal is among the checker's, at the same place
        first = failed[0]
        assert (first.message, first.line) in {(x.message, x.line) for x in refused}, (first, refused)
