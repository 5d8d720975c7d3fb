"""irkit-opt in-process: exit codes, error messages, output streams, diagnostics modes."""

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import i32
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.directives import ParallelOp
from irkit.frontend import parse_design
from irkit.passes import registry
from irkit.tools.opt import main, split_chunks

SAXPY = """design saxpy {
  sizes { N = 64 }
  tensor x : f32[N] input
  tensor y : f32[N] input
  tensor z : f32[N] output
  z[i] = 2 * x[i] + y[i]
  schedule z { split i by 16 -> io, ii; parallel io }
}
"""

# Design IR whose only problem is for the checker (an undefined size).
UNDEFINED_SIZE_MLIR = """builtin.module {
  design.design "d" {
    design.size "N" = 8 loc("y.design":2:3)
    design.tensor "a" : "f32" ["N", "Q"] "input" loc("y.design":3:3)
    design.tensor "b" : "f32" ["N"] "output" loc("y.design":4:3)
    design.stmt "b" ["i"] "=" {
      %0 = design.read "a" ["i", "i"] : f32 loc("y.design":5:10)
      design.yield %0 : f32 loc("y.design":5:10)
    } loc("y.design":5:3)
  } loc("y.design":1:1)
}
"""

ARITH_MLIR = """func.func @f(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %x = arith.addi %a, %c0 : i32
  func.return %x : i32
}
"""


# ---------------------------------------------------------------- test passes


@dataclass(frozen=True)
class FailWithDiagnostics(ModulePass):
    name = "test-fail-diagnostics"

    def apply(self, ctx, op):
        raise DiagnosticError([Diagnostic("error", "the pass did not like this", "<test>")])


@dataclass(frozen=True)
class FailWithPassFailed(ModulePass):
    name = "test-fail-xdsl"

    def apply(self, ctx, op):
        raise PassFailedException("cannot lower this")


@dataclass(frozen=True)
class Crash(ModulePass):
    name = "test-crash"

    def apply(self, ctx, op):
        raise ZeroDivisionError("boom in the pass")


@dataclass(frozen=True)
class BreakIR(ModulePass):
    """Leaves an op that does not verify: a schedule directive outside a schedule."""

    name = "test-break-ir"

    def apply(self, ctx, op):
        op.body.block.add_op(ParallelOp("i"))


@dataclass(frozen=True)
class AddConstant(ModulePass):
    name = "test-add-constant"

    def apply(self, ctx, op):
        op.body.block.add_op(arith.ConstantOp.from_int_and_width(7, i32))


@pytest.fixture(autouse=True)
def test_passes(monkeypatch):
    for cls in (FailWithDiagnostics, FailWithPassFailed, Crash, BreakIR, AddConstant):
        monkeypatch.setitem(registry.IRKIT_PASSES, cls.name, lambda cls=cls: cls)
    monkeypatch.delenv("IRKIT_TRACEBACK", raising=False)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_usage_line(err: str) -> None:
    assert err.count("\n") == 1 and err.startswith("irkit-opt: error: ")
    assert "Traceback" not in err


# ------------------------------------------------------------------ basics


def test_design_input_prints_design_ir(tmp_path, capsys):
    status, out, err = run(capsys, write(tmp_path, "saxpy.design", SAXPY))
    assert (status, err) == (0, "")
    assert 'design.design "saxpy"' in out
    assert 'design.split "i" by 16 -> "io", "ii"' in out


def test_mlir_input_and_xdsl_pass(tmp_path, capsys):
    status, out, err = run(capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "-p", "canonicalize")
    assert (status, err) == (0, "")
    assert "arith.addi" not in out and "func.return %a : i32" in out


def test_generic_and_debuginfo_printing(tmp_path, capsys):
    path = write(tmp_path, "saxpy.design", SAXPY)
    _, out, _ = run(capsys, path, "--print-op-generic")
    assert '"design.split"() <{' in out
    _, out, _ = run(capsys, path, "--print-debuginfo")
    assert f'loc("{path}":7:16)' in out


def test_stdin_is_mlir(monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(ARITH_MLIR))
    status, out, _ = run(capsys, "-")
    assert status == 0 and "func.func @f" in out


def test_empty_mlir_is_an_empty_module(tmp_path, capsys):
    status, out, _ = run(capsys, write(tmp_path, "e.mlir", "// nothing here\n\n"))
    assert status == 0 and out.startswith("builtin.module {")


def test_output_file(tmp_path, capsys):
    target = tmp_path / "out.mlir"
    status, out, _ = run(capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "-o", str(target))
    assert status == 0 and out == ""
    assert "func.func @f" in target.read_text()


def test_emit_design(tmp_path, capsys):
    status, out, err = run(capsys, write(tmp_path, "saxpy.design", SAXPY), "--emit", "design")
    assert (status, err) == (0, "")
    assert out.startswith("design saxpy {")
    assert "split i by 16 -> io, ii" in out
    parse_design(out, "again.design")  # the output is a valid document


def test_emit_design_from_mlir_round_trip(tmp_path, capsys):
    _, mlir, _ = run(capsys, write(tmp_path, "saxpy.design", SAXPY), "--print-debuginfo")
    status, out, _ = run(capsys, write(tmp_path, "saxpy.mlir", mlir), "--emit", "design")
    assert status == 0 and "z[i] = 2 * x[i] + y[i]" in out


def test_version_and_list_passes(capsys):
    status, out, _ = run(capsys, "--version")
    assert status == 0 and out.startswith("irkit-opt ")
    status, out, _ = run(capsys, "--list-passes")
    assert status == 0 and "check-design" in out.splitlines() and "canonicalize" in out


# ------------------------------------------------------------ usage errors


def test_unknown_pass_suggests(tmp_path, capsys):
    status, out, err = run(capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "-p", "canonicalise")
    assert status == 2 and out == ""
    assert_one_usage_line(err)
    assert "unknown pass 'canonicalise'; did you mean 'canonicalize'?" in err


def test_check_design_typo_suggests(tmp_path, capsys):
    status, _, err = run(capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "-p", "check-desing")
    assert status == 2 and "did you mean 'check-design'?" in err


@pytest.mark.parametrize(
    "pipeline, fragment",
    [
        ("canonicalize{", "malformed pass pipeline 'canonicalize{' at column"),
        ("cse,,dce", "expected pass name here"),
        ("cse{depth=2}", "pass 'cse' has no option 'depth'"),
        ("scf-parallel-loop-tiling{parallel-loop-tile-sizes=x}", "expects tuple[int, ...], got 'x'"),
    ],
)
def test_bad_pipelines(tmp_path, capsys, pipeline, fragment):
    status, _, err = run(capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "-p", pipeline)
    assert status == 2
    assert_one_usage_line(err)
    assert fragment in err


def test_missing_file(tmp_path, capsys):
    status, out, err = run(capsys, str(tmp_path / "nope.design"))
    assert status == 2 and out == ""
    assert_one_usage_line(err)
    assert "no such file" in err


@pytest.mark.parametrize("argv", [["--frobnicate"], ["--emit", "llvm"], ["--diagnostics-format", "xml"], ["a", "b"]])
def test_bad_command_line(capsys, argv):
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert_one_usage_line(err)


# ------------------------------------------------------ input problems: exit 1


def test_parse_error_is_located(tmp_path, capsys):
    path = write(tmp_path, "p.mlir", 'builtin.module {\n  design.split "i" by x -> "a", "b"\n}\n')
    status, out, err = run(capsys, path)
    assert status == 1 and out == ""
    assert err.startswith(f"{path}:2:23: error: Expected integer literal")
    assert "Traceback" not in err


def test_design_syntax_error(tmp_path, capsys):
    path = write(tmp_path, "bad.design", "design d {\n  sizes { N = }\n}\n")
    status, _, err = run(capsys, path)
    assert status == 1 and err.startswith(f"{path}:2:")


def test_verifier_error_at_the_op_location(tmp_path, capsys):
    text = 'design.schedule "b" {\n  design.split "i" by 0 -> "io", "ii" loc("x.design":3:5)\n}\n'
    status, out, err = run(capsys, write(tmp_path, "v.mlir", text))
    assert status == 1 and out == ""
    assert err.startswith("x.design:3:5: error: split factor must be positive, got 0")


def test_verifier_error_without_location_points_into_the_input(tmp_path, capsys):
    text = 'design.schedule "b" {\n\n  design.split "i" by 0 -> "io", "ii"\n}\n'
    path = write(tmp_path, "v.mlir", text)
    status, _, err = run(capsys, path)
    assert status == 1
    assert err.startswith(f"{path}:3:3: error: split factor must be positive")
    assert '  design.split "i" by 0' in err  # the source line with a caret


def test_check_design_pass_failure_has_a_pass_note(tmp_path, capsys):
    status, out, err = run(capsys, write(tmp_path, "u.mlir", UNDEFINED_SIZE_MLIR), "-p", "check-design")
    assert status == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == "note: while running pass 'check-design'"
    assert lines[1].startswith("y.design:3:3: error: undefined size 'Q'")


def test_xdsl_pass_failure(tmp_path, capsys):
    status, _, err = run(capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "-p", "test-fail-xdsl")
    assert status == 1
    assert "note: while running pass 'test-fail-xdsl'" in err and "cannot lower this" in err


def test_pass_breaking_the_ir_is_caught_by_verification(tmp_path, capsys):
    path = write(tmp_path, "f.mlir", ARITH_MLIR)
    status, out, err = run(capsys, path, "-p", "test-break-ir,canonicalize")
    assert status == 1 and out == ""
    assert "the IR produced by pass 'test-break-ir' does not verify" in err
    # Without per-pass verification the next pass runs, and the end result is still verified.
    status, _, err = run(capsys, path, "-p", "test-break-ir,test-add-constant", "--no-verify-each")
    assert status == 1 and "test-add-constant' does not verify" in err


def test_internal_error_in_a_pass(tmp_path, capsys, monkeypatch):
    path = write(tmp_path, "f.mlir", ARITH_MLIR)
    status, out, err = run(capsys, path, "-p", "test-crash")
    assert status == 3 and out == ""
    assert err.startswith("irkit-opt: internal error in pass 'test-crash': ZeroDivisionError: boom in the pass\n")
    assert "Traceback" not in err and len(err.splitlines()) <= 25
    monkeypatch.setenv("IRKIT_TRACEBACK", "1")
    status, _, err = run(capsys, path, "-p", "test-crash")
    assert status == 3 and "Traceback" in err


def test_allow_unregistered_dialect(tmp_path, capsys):
    path = write(tmp_path, "u.mlir", '"foo.bar"() : () -> ()\n')
    status, _, err = run(capsys, path)
    assert status == 1 and "foo.bar" in err
    status, out, _ = run(capsys, path, "--allow-unregistered-dialect")
    assert status == 0 and '"foo.bar"() : () -> ()' in out


# ------------------------------------------------------------ diagnostics


def test_json_diagnostics(tmp_path, capsys):
    path = write(tmp_path, "u.mlir", UNDEFINED_SIZE_MLIR)
    status, _, err = run(capsys, path, "-p", "check-design", "--diagnostics-format", "json")
    assert status == 1
    objects = [json.loads(line) for line in err.splitlines()]
    assert len(objects) >= 2
    for obj in objects:
        assert {"file", "line", "col", "end", "severity", "message", "notes"} <= set(obj)
    assert objects[0]["severity"] == "note" and "check-design" in objects[0]["message"]
    assert any(o["file"] == "y.design" and o["line"] == 3 and o["severity"] == "error" for o in objects)


def test_json_diagnostics_of_a_design_file(tmp_path, capsys):
    path = write(tmp_path, "bad.design", SAXPY.replace("x[i] + y[i]", "x[i] + w[i]"))
    status, _, err = run(capsys, path, "--diagnostics-format", "json")
    assert status == 1
    (obj,) = [json.loads(line) for line in err.splitlines() if '"error"' in line]
    assert (obj["file"], obj["line"]) == (path, 6)
    assert obj["end"]["col"] > obj["col"]


# --------------------------------------------------------- split input file


def test_split_chunks_keeps_line_offsets():
    chunks = split_chunks("a\n// -----\nb\nc\n// -----\nd\n", design=False)
    assert chunks == [("a\n", 0), ("b\nc\n", 2), ("d\n", 5)]
    assert len(split_chunks("a\n# -----\nb\n", design=True)) == 2
    assert len(split_chunks("a\n# -----\nb\n", design=False)) == 1


def test_split_input_file(tmp_path, capsys):
    text = (
        ARITH_MLIR
        + "// -----\n"
        + 'builtin.module {\n  design.split "i" by x -> "a", "b"\n}\n'
        + "// -----\n"
        + ARITH_MLIR
    )
    path = write(tmp_path, "s.mlir", text)
    status, out, err = run(capsys, path, "--split-input-file")
    assert status == 1  # the worst chunk
    assert out.count("// -----\n") == 2 and out.count("func.func @f") == 2
    bad_line = ARITH_MLIR.count("\n") + 3
    assert err.startswith(f"{path}:{bad_line}:23: error: Expected integer literal")


def test_split_design_file_emits_design_chunks(tmp_path, capsys):
    other = SAXPY.replace("saxpy", "other")
    path = write(tmp_path, "two.design", SAXPY + "# -----\n" + other)
    status, out, _ = run(capsys, path, "--split-input-file", "--emit", "design")
    assert status == 0
    first, second = out.split("# -----\n")
    assert first.startswith("design saxpy {") and second.startswith("design other {")


def test_split_design_file_errors_have_file_lines(tmp_path, capsys):
    bad = SAXPY.replace("y[i]", "w[i]", 1)
    path = write(tmp_path, "two.design", SAXPY + "# -----\n" + bad)
    status, _, err = run(capsys, path, "--split-input-file")
    assert status == 1
    error_line = SAXPY.count("\n") + 1 + 6  # the chunk's line 6, after the first chunk and the separator
    assert f"{path}:{error_line}:21: error: undefined tensor 'w'" in err


# ------------------------------------------------------ verify-diagnostics


VERIFY_OK = """builtin.module {
  design.schedule "b" {
    // expected-error@+1 {{split factor must be positive}}
    design.split "i" by 0 -> "io", "ii"
  }
}
// -----
design.schedule "b" {
  design.unroll "i" by 0 loc("doc.design":9:3) // expected-error {{unroll factor must be positive}}
}
// -----
// expected-error@below {{expects parent op 'design.schedule'}}
design.parallel "i"
"""


def test_verify_diagnostics_all_matched(tmp_path, capsys):
    status, out, err = run(capsys, write(tmp_path, "v.mlir", VERIFY_OK), "--split-input-file", "--verify-diagnostics")
    assert (status, out, err) == (0, "", "")


def test_verify_diagnostics_mismatch(tmp_path, capsys):
    text = VERIFY_OK.replace("@+1 {{split factor", "@+2 {{split factor").replace("{{unroll factor", "{{unrol factor")
    path = write(tmp_path, "v.mlir", text)
    status, out, err = run(capsys, path, "--split-input-file", "--verify-diagnostics")
    assert status == 1 and out == ""
    assert f"{path}:4:5: error: unexpected error: split factor must be positive, got 0" in err
    assert f"{path}:3:5: error: expected error on line 5 was not produced: {{{{split factor must be positive}}}}" in err
    # The op located in another file is reported on its input line.
    assert (
        f"{path}:9:1: error: unexpected error: unroll factor must be positive, got 0 (reported at doc.design:9:3)"
        in err
    )
    assert "unrol factor" in err


def test_verify_diagnostics_severity_must_match(tmp_path, capsys):
    text = VERIFY_OK.split("// -----")[0].replace("expected-error", "expected-warning")
    status, _, err = run(capsys, write(tmp_path, "v.mlir", text), "--verify-diagnostics")
    assert status == 1 and "unexpected error" in err and "expected warning on line 4" in err


def test_verify_diagnostics_with_a_failing_pass_and_unknown_location(tmp_path, capsys):
    text = "// expected-error@unknown {{cannot lower this}}\n" + ARITH_MLIR
    status, out, err = run(capsys, write(tmp_path, "f.mlir", text), "-p", "test-fail-xdsl", "--verify-diagnostics")
    assert (status, out, err) == (0, "", "")


def test_verify_diagnostics_checker_errors_on_op_lines(tmp_path, capsys):
    lines = UNDEFINED_SIZE_MLIR.splitlines()
    lines.insert(3, "    // expected-error@+1 {{undefined size 'Q'}}")
    path = write(tmp_path, "u.mlir", "\n".join(lines) + "\n")
    status, _, err = run(capsys, path, "-p", "check-design", "--verify-diagnostics")
    assert (status, err) == (0, "")


def test_verify_diagnostics_in_design_files(tmp_path, capsys):
    text = SAXPY.replace(
        "  z[i] = 2 * x[i] + y[i]\n", "  # expected-error@+1 {{undefined tensor 'w'}}\n  z[i] = 2 * x[i] + w[i]\n"
    )
    text = text.replace("  tensor y", "  # expected-warning@+1 {{never read}}\n  tensor y")
    status, out, err = run(capsys, write(tmp_path, "v.design", text), "--verify-diagnostics")
    assert (status, out, err) == (0, "", "")


def test_verify_diagnostics_no_diagnostics_expected(tmp_path, capsys):
    status, out, err = run(capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "--verify-diagnostics")
    assert (status, out, err) == (0, "", "")
    text = "// expected-error {{something}}\n" + ARITH_MLIR
    status, _, err = run(capsys, write(tmp_path, "g.mlir", text), "--verify-diagnostics")
    assert status == 1 and "was not produced" in err


def test_malformed_annotation_is_reported(tmp_path, capsys):
    text = "// expected-error@+1 {{never closed\n" + ARITH_MLIR
    status, _, err = run(capsys, write(tmp_path, "f.mlir", text), "--verify-diagnostics")
    assert status == 1 and "malformed diagnostic annotation" in err


# --------------------------------------------------------- printing IR, timing


def test_print_ir_after_all_goes_to_stderr(tmp_path, capsys):
    status, out, err = run(
        capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "-p", "canonicalize,cse", "--print-ir-after-all"
    )
    assert status == 0
    assert "IR after" not in out and out.count("func.func @f") == 1
    assert "// -----// IR after canonicalize //----- //" in err
    assert "// -----// IR after cse //----- //" in err
    assert err.count("func.func @f") == 2


def test_print_ir_after_failure_shows_the_input_of_the_failing_pass(tmp_path, capsys):
    path = write(tmp_path, "f.mlir", ARITH_MLIR)
    status, out, err = run(capsys, path, "-p", "test-add-constant,test-fail-xdsl", "--print-ir-after-failure")
    assert status == 1 and out == ""
    assert "IR at the start of failing pass test-fail-xdsl" in err
    assert "arith.constant 7 : i32" in err  # what the previous pass did is visible
    status, _, err = run(capsys, path, "-p", "test-add-constant,test-fail-xdsl")
    assert "IR at the start" not in err


def test_time_passes_table(tmp_path, capsys):
    status, out, err = run(capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "-p", "cse,canonicalize,cse", "--time-passes")
    assert status == 0 and "timing" not in out
    rows = [line.split() for line in err.splitlines()[2:]]
    steps = [" ".join(r[1:]) for r in rows]
    assert steps == ["parse", "pass cse #1", "pass canonicalize", "pass cse #2", "verify", "print", "total"]
    for row in rows:
        assert float(row[0]) >= 0.0


# ------------------------------------------------- installed: xdsl-opt plugin


def test_universe_factories():
    from irkit.universe import IRKIT_UNIVERSE

    assert IRKIT_UNIVERSE.all_dialects["design"]().name == "design"
    assert IRKIT_UNIVERSE.all_passes["check-design"]().name == "check-design"


@pytest.mark.skipif(
    shutil.which("xdsl-opt", path=str(Path(sys.executable).parent)) is None, reason="xdsl-opt not installed"
)
def test_stock_xdsl_opt_reads_design_ir(tmp_path, capsys):
    from importlib.metadata import entry_points

    if "irkit" not in {e.name for e in entry_points(group="xdsl.universe")}:
        pytest.skip("irkit is not installed (pip install -e .)")
    _, mlir, _ = run(capsys, write(tmp_path, "saxpy.design", SAXPY))
    xdsl_opt = shutil.which("xdsl-opt", path=str(Path(sys.executable).parent))
    result = subprocess.run([xdsl_opt, "-p", "check-design"], input=mlir, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == mlir.strip()


def test_design_warnings_are_printed_and_not_fatal(tmp_path, capsys):
    text = SAXPY.replace("  tensor z", "  tensor unused : f32[N] input\n  tensor z")
    path = write(tmp_path, "w.design", text)
    status, out, err = run(capsys, path)
    assert status == 0 and 'design.design "saxpy"' in out
    assert f"{path}:5:10: warning: input 'unused' is never read" in err
    annotated = text.replace("  tensor unused", "  # expected-warning@+1 {{never read}}\n  tensor unused")
    status, out, err = run(capsys, write(tmp_path, "v.design", annotated), "--verify-diagnostics")
    assert (status, out, err) == (0, "", "")


def test_emit_design_of_non_design_ir_is_an_input_error(tmp_path, capsys):
    status, out, err = run(capsys, write(tmp_path, "f.mlir", ARITH_MLIR), "--emit", "design")
    assert status == 1 and out == ""
    assert err.startswith("error: cannot print as a design document: ")
