"""Issue 14's repros for the frontend and the command-line tools: each failed before its fix.

Internal errors on input (exit 3), inputs read as something else than they
were (`N = 1_000` as `N = 1` and a size `_000`), and conventions a user
trips over (exit codes, stdin, spellings of other tools, what `--check`
prints).  The schedule/checker and raising repros have their own files.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irkit
from irkit.diagnostics import DiagnosticError
from irkit.frontend import parse_design
from irkit.tools import cli, opt

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples" / "gemm.design"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_opt(capsys, *argv: str) -> tuple[int, str, str]:
    status = opt.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def errors_of(text: str) -> list[str]:
    with pytest.raises(DiagnosticError) as info:
        parse_design(text, "t.design")
    return [d.message for d in info.value.diagnostics if d.severity == "error"]


COPY = "design d {{ sizes {{ N = {n} }} tensor a : f32[N] input tensor b : f32[N] output b[i] = {rhs} }}\n"

# ---------------------------------------------------------------- numbers


def test_digit_groups_are_one_number():
    module = parse_design(COPY.format(n="1_000", rhs="a[i] * 1_0.5"))
    assert "design.size \"N\" = 1000" in str(module)
    assert "1.050000e+01" in str(module)


@pytest.mark.parametrize(
    "value, message",
    [
        ("1abc", "'1abc' is not a number: a number cannot run straight into a name"),
        ("2.5", "'2.5' is not an integer"),
        ("1__0", "'1__0' is not an integer: an underscore may only separate two digits"),
    ],
)
def test_a_number_glued_to_something_is_refused(value, message):
    assert any(message in m for m in errors_of(COPY.format(n=value, rhs="a[i]")))


def test_integers_longer_than_python_converts():
    big = "9" * 5000
    messages = errors_of(COPY.format(n=big, rhs="a[i]"))
    assert any("(5000 digits) does not fit in 64 bits" in m for m in messages)
    messages = errors_of(f"design d {{ sizes {{ N = 8 }} tensor a : f32[N + {big}] input tensor b : f32[N] output b[i] = a[i] }}")
    assert any("does not fit in 64 bits" in m for m in messages)


def test_an_index_constant_over_64_bits_is_refused():
    messages = errors_of(COPY.format(n="8", rhs="a[i + 9223372036854775808]"))
    assert any("integer 9223372036854775808 does not fit in 64 bits" in m for m in messages)


# ---------------------------------------------------------------- deep expressions


def test_a_thousand_term_sum_and_a_thousand_minuses(tmp_path, capsys):
    terms = " + ".join("a[i]" for _ in range(1000))
    for rhs in (terms, "-" * 1000 + "a[i]"):
        path = write(tmp_path, "deep.design", COPY.format(n="8", rhs=rhs))
        status, out, err = run_cli(capsys, "run", path, "--check")
        assert status == 0, err
        assert "check b: ok" in out
        status, out, err = run_cli(capsys, "verify", path)  # raising walks the expression too
        assert status == 0 and "ok, the generated code computes" in out, err
        status, out, err = run_cli(capsys, "fmt", path)
        assert status == 0 and out.count("a[i]") == (1000 if "+" in rhs else 1), err


def test_a_deep_affine_sum_is_folded():
    ones = " + ".join("1" for _ in range(1000))
    module = parse_design(f"design d {{ sizes {{ N = 8 }} tensor a : f32[N + {ones}] input tensor b : f32[N] output b[i] = a[i + {ones}] }}")
    text = str(module)
    assert '["N + 1000"]' in text and '["i + 1000"]' in text


def test_a_deep_non_linear_expression_is_reported():
    nested = "N" + " / 2" * 100  # floor divisions do not fold into a linear form
    messages = errors_of(f"design d {{ sizes {{ N = 8 }} tensor a : f32[{nested}] input tensor b : f32[N] output b[i] = a[i] }}")
    assert any("nested more than 64 deep" in m for m in messages)


# ---------------------------------------------------------------- hardware names, long lines


def test_a_hardware_name_too_long_for_a_file_name(tmp_path, capsys):
    path = write(tmp_path, "hw.design", COPY.format(n="8", rhs="a[i]").replace("}\n", f" hardware {'h' * 300} }}\n"))
    status, _, err = run_cli(capsys, "check", path)
    assert status == 1 and "hardware description 'hhh" in err and "Traceback" not in err


def test_a_diagnostic_on_a_very_long_line_fits_a_screen(tmp_path, capsys):
    path = write(tmp_path, "long.design", COPY.format(n="9" * 5000, rhs="a[i]"))
    status, _, err = run_cli(capsys, "check", path)
    assert status == 1
    assert max(len(line) for line in err.splitlines()) < 220


# ---------------------------------------------------------------- misspelled keywords


@pytest.mark.parametrize(
    "item, message",
    [
        ("shedule b { parallel i }", "unknown word 'shedule'; did you mean 'schedule'?"),
        ("schedule b { paralel i }", "unexpected 'paralel'; did you mean 'parallel'?"),
        ("tensr c : f32[N] temp", "unknown word 'tensr'; did you mean 'tensor'?"),
        ("schedule b { foo i }", "unexpected 'foo'; expected one of"),
    ],
)
def test_misspelled_keywords_get_a_suggestion(item, message):
    text = COPY.format(n="8", rhs="a[i]").replace(" }\n", f" {item} }}\n")
    messages = errors_of(text)
    assert any(message in m for m in messages), messages
    assert not any("a block is not closed" in m for m in messages)


# ---------------------------------------------------------------- run: sizes


SHRINK = """design d {
  sizes { N = 8 }
  tensor a : f32[N] input
  tensor b : f32[N - 2] output
  b[i] = a[i] + a[i + 2]
}
"""


@pytest.mark.parametrize(
    "size, message",
    [
        ("N=2", "tensor 'b' would have shape [0]"),
        ("N=1", "tensor 'b' would have shape [-1]"),
        ("N=0", "size 'N' must be positive, got 0"),
        ("Q=3", "unknown size 'Q'"),
        ("N=abc", "'abc' is not an integer"),
    ],
)
def test_size_problems_are_usage_errors(tmp_path, capsys, size, message):
    path = write(tmp_path, "shrink.design", SHRINK)
    for command in ("run", "predict"):
        extra = ["--hw", "generic"] if command == "predict" else []
        status, _, err = run_cli(capsys, command, path, "--size", size, *extra)
        assert status == 2, (command, err)
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_api_refuses_sizes_before_building(tmp_path):
    with pytest.raises(DiagnosticError, match="tensor 'b' would have shape"):
        irkit.compile(SHRINK, sizes={"N": 2})


# ---------------------------------------------------------------- inputs: stdin, suffixes, paths


def test_stdin_is_read_by_run_and_verify(monkeypatch, capsys):
    for command in ("run", "verify"):
        monkeypatch.setattr(sys, "stdin", io.StringIO(SHRINK))
        status, out, err = run_cli(capsys, command, "-")
        assert status == 0, err
        assert "<stdin>" in out


def test_a_file_that_is_not_a_document_is_a_usage_error(capsys):
    for command in ("run", "check", "verify", "predict"):
        status, _, err = run_cli(capsys, command, str(ROOT / "README.md"))
        assert status == 2 and "is not a design document" in err, command


def test_irkit_opt_sniffs_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(GEMM.read_text()))
    status, out, err = run_opt(capsys, "-")
    assert status == 0, err
    assert 'design.design "gemm"' in out
    monkeypatch.setattr(sys, "stdin", io.StringIO(GEMM.read_text()))
    status, _, err = run_opt(capsys, "-", "--input-format=mlir")
    assert status == 1 and "internal error" not in err
    assert "starts like a design document" in err


def test_a_misspelt_path_is_not_parsed_as_a_document():
    with pytest.raises(DiagnosticError, match="no such document file 'examples/gemm.desing'"):
        irkit.compile("examples/gemm.desing")


# ---------------------------------------------------------------- plugins, options


def test_plugin_after_the_subcommand(tmp_path, capsys):
    plugin = write(tmp_path, "noop_plugin.py", "LOADED = True\n")
    status, out, err = run_cli(capsys, "check", "--plugin", plugin, str(GEMM))
    assert status == 0, err
    status, _, err = run_cli(capsys, "check", "--plugin", str(tmp_path / "missing.py"), str(GEMM))
    assert status == 2 and "plugin file" in err and "does not exist" in err


def test_options_are_not_abbreviated_and_typos_get_a_suggestion(capsys):
    status, _, err = run_opt(capsys, str(GEMM), "--no-verify")
    assert status == 2 and "did you mean '--no-verify-each'?" in err
    status, _, err = run_cli(capsys, "check", "--diag=json", str(GEMM))
    assert status == 2 and "did you mean '--diagnostics-format'?" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--pass-pipeline=builtin.module(lower-design,lower-tensorop)", "--mlir-timing"],
        ["-pass-pipeline", "builtin.module(lower-design)", "--verify-each=false", "--mlir-print-ir-after-all"],
    ],
)
def test_mlir_opt_spellings(capsys, argv):
    status, out, err = run_opt(capsys, str(ROOT / "examples" / "blur.design"), *argv)
    assert status == 0, err
    assert "func.func @blur" in out


def test_nested_mlir_pipelines_are_refused_with_the_spelling(capsys):
    status, _, err = run_opt(capsys, str(GEMM), "--pass-pipeline=builtin.module(func.func(canonicalize))")
    assert status == 2 and "write the passes as -p" in err


def test_list_passes_puts_irkit_first_grouped(capsys):
    status, out, _ = run_opt(capsys, "--list-passes")
    lines = out.splitlines()
    assert status == 0 and lines[0] == "-- irkit: checking"
    headings = [line for line in lines if line.startswith("-- ")]
    assert headings.index("-- xDSL") == len(headings) - 1
    assert lines.index("lower-design") < lines.index("-- xDSL") < lines.index("canonicalize")


def test_a_closed_pipe_is_not_success():
    proc = subprocess.Popen(
        [sys.executable, "-m", "irkit.tools.opt", str(GEMM), "-p", "lower-design,lower-tensorop,apply-schedule"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == opt.EXIT_BROKEN_PIPE
    assert "Traceback" not in err and "Exception ignored" not in err


# ---------------------------------------------------------------- run --check and the API


def test_check_reports_what_the_tolerance_judged(capsys):
    status, out, _ = run_cli(capsys, "run", str(GEMM), "--size", "M=37", "--size", "N=53", "--size", "K=29", "--check")
    assert status == 0
    assert "check C: ok  worst element at " in out and "% of its tolerance" in out
    assert "max rel err" not in out


def test_kernel_reference_takes_keywords_and_a_short_repr():
    k = irkit.compile(SHRINK)
    a = np.arange(8, dtype=np.float32)
    by_keyword = k.reference(a=a)["b"]
    by_mapping = k.reference({"a": a})["b"]
    np.testing.assert_array_equal(by_keyword, by_mapping)
    np.testing.assert_allclose(k(a=a)["b"], by_keyword)
    assert repr(k) == "<irkit.Kernel d(a, b), built; k.ir(level), k.c_source>"


# ---------------------------------------------------------------- C that does not compile


def test_generated_c_that_does_not_compile_is_an_internal_error(tmp_path, capsys, monkeypatch):
    """Simulated with a compiler wrapper that refuses the kernel but builds anything else, so the
    test does not depend on a code-generation bug staying unfixed."""
    wrapper = tmp_path / "cc-refusing-kernels"
    wrapper.write_text(
        "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.c) grep -q irkit_probe \"$a\" || "
        "{ echo \"$a:1:1: error: refused\" >&2; exit 1; };; esac; done\nexec cc \"$@\"\n"
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path / "cache"))
    status, _, err = run_cli(capsys, "run", write(tmp_path, "s.design", SHRINK))
    assert status == 3, err
    assert "a bug in irkit, not a problem with the document" in err


def test_a_compiler_that_fails_on_everything_is_not_irkits_bug(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CC", "false")
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path / "cache"))
    status, _, err = run_cli(capsys, "run", write(tmp_path, "s.design", SHRINK))
    assert status == 1
    assert "fails on a trivial C file with the same flags too" in err


def test_flags_the_compiler_refuses_are_blamed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path / "cache"))
    status, _, err = run_cli(capsys, "run", write(tmp_path, "s.design", SHRINK), "--cflags", "-O2 -std=c89 -Werror=declaration-after-statement")
    assert status == 1, err
    assert "the same code builds with irkit's default flags" in err


@pytest.mark.parametrize(
    "item, message",
    [
        ("c[i] = a[i] metric latncy", "unknown metric 'latncy'; expected one of latency, throughput; did you mean 'latency'?"),
        ("c = matmull(a, a)", "did you mean 'matmul'?"),
        ("c = softmax(a, axsi = 0)", "'softmax' has no parameter 'axsi' (parameters: axis); did you mean 'axis'?"),
        ("c[i] = exq(a[i])", "unknown function 'exq'; expected one of max, min, exp, sqrt, select; did you mean 'exp'?"),
    ],
)
def test_misspelled_words_the_checker_knows(item, message):
    text = "design d { sizes { N = 8 } tensor a : f32[N] input tensor c : f32[N] output " + item + " }"
    messages = errors_of(text)
    assert any(message in m for m in messages), messages


def test_emit_c_does_not_build(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CC", "false")  # no compiler at all: printing the C needs none
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path / "cache"))
    status, out, err = run_cli(capsys, "run", write(tmp_path, "s.design", SHRINK), "--emit", "c")
    assert status == 0, err
    assert "void irkit_d(" in out or "irkit_d" in out


def test_a_name_xdsl_cannot_hint_is_refused_not_crashed(tmp_path, capsys):
    """`_6` once reached xDSL's name hints in lowering (`Invalid BlockArgument name format`)."""
    path = write(tmp_path, "u.design", "design d { sizes { N = 8 } tensor _6 : f32[N] input tensor o : f32[N] output o[i] = _6[i] }\n")
    status, _, err = run_cli(capsys, "run", path)
    assert status == 1 and "tensor name '_6' cannot be used in C" in err
    status, _, err = run_opt(capsys, path, "-p", "lower-design,lower-tensorop")
    assert status == 1 and "internal error" not in err
