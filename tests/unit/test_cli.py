"""The `irkit` front door in-process: check, fmt, --version, error conventions."""

import json
from pathlib import Path

import pytest

from irkit.frontend import parse_design
from irkit.tools.cli import main

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.design"))

SCALE = """design scale {
  sizes { N = 64 }
  tensor a : f32[N] input
  tensor b : f32[N] output
  b[i] = 2 * a[i]
  schedule b {   split i by 16 -> io, ii
    parallel io }
}
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_check_ok(tmp_path, capsys):
    path = write(tmp_path, "scale.design", SCALE)
    assert run(capsys, "check", path) == (0, f"{path}: ok\n", "")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_check_examples(capsys, example):
    status, out, err = run(capsys, "check", str(example))
    assert status == 0, err
    assert out.startswith(f"{example}: ok")


def test_check_reports_errors_with_carets(tmp_path, capsys):
    path = write(tmp_path, "bad.design", SCALE.replace("2 * a[i]", "2 * q[i]"))
    status, out, err = run(capsys, "check", path)
    assert status == 1 and out == ""
    assert f"{path}:5:14: error: undefined tensor 'q'" in err
    assert "    b[i] = 2 * q[i]" in err and "^" in err


def test_check_warnings_only_is_ok(tmp_path, capsys):
    text = SCALE.replace("  tensor b", "  tensor c : f32[N] input\n  tensor b")
    path = write(tmp_path, "warn.design", text)
    status, out, err = run(capsys, "check", path)
    assert status == 0
    assert out == f"{path}: ok (1 warning)\n"
    assert "warning: input 'c' is never read" in err


def test_check_json(tmp_path, capsys):
    path = write(tmp_path, "bad.design", SCALE.replace("2 * a[i]", "2 * q[i]"))
    status, out, err = run(capsys, "check", path, "--diagnostics-format", "json")
    assert status == 1 and out == ""
    objects = [json.loads(line) for line in err.splitlines()]
    assert objects and all({"file", "line", "col", "end", "severity", "message", "notes"} <= set(o) for o in objects)
    (error,) = [o for o in objects if o["severity"] == "error"]
    assert (error["file"], error["line"], error["col"]) == (path, 5, 14)
    assert error["end"]["col"] == 15


def test_fmt_prints_canonical_text(tmp_path, capsys):
    status, out, err = run(capsys, "fmt", write(tmp_path, "scale.design", SCALE))
    assert (status, err) == (0, "")
    assert "  schedule b {\n    split i by 16 -> io, ii\n    parallel io\n  }\n" in out
    parse_design(out, "formatted.design")
    status, again, _ = run(capsys, "fmt", write(tmp_path, "formatted.design", out))
    assert status == 0 and again == out  # idempotent


def test_fmt_syntax_error(tmp_path, capsys):
    path = write(tmp_path, "bad.design", "design d {\n  sizes { N = }\n}\n")
    status, out, err = run(capsys, "fmt", path)
    assert status == 1 and out == "" and err.startswith(f"{path}:2:")


@pytest.mark.parametrize("command", ["check", "fmt", "run", "predict", "verify"])
def test_missing_file_is_one_line_exit_2(tmp_path, capsys, command):
    status, out, err = run(capsys, command, str(tmp_path / "nope.design"))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("irkit: error: no such file")


def test_not_a_design_file(tmp_path, capsys):
    status, _, err = run(capsys, "check", write(tmp_path, "x.mlir", "builtin.module {}\n"))
    assert status == 2 and "is not a design document" in err


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["check"], ["check", "a.design", "--diagnostics-format", "xml"]])
def test_usage_errors(capsys, argv):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("irkit: error: ")


def test_version(capsys):
    status, out, _ = run(capsys, "--version")
    assert status == 0 and out.startswith("irkit ") and "xdsl" in out


def test_help_exits_zero(capsys):
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "check" in out and "fmt" in out
