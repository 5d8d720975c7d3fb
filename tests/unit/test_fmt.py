"""`irkit fmt` on the command line: printing, --check, --diff, -i, several files, refusals.

Run in-process through `irkit.tools.cli.main`, plus one run of the
installed console script over every example (`irkit fmt examples/*.design`).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from irkit.frontend.comments import scan_comments
from irkit.frontend.document import format_document
from irkit.tools import fmt as fmt_tool
from irkit.tools.cli import main

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.design"))

MESSY = """# a scale kernel
design scale {  # one line
  sizes { N = 64 }
  tensor a : f32[N] input   # read
  tensor b : f32[N] output
  b[i] = 2 * a[i]
  schedule b {   split i by 16 -> io, ii  # blocks of 16
    parallel io }
}
"""
TIDY = format_document(MESSY, "scale.design")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_fmt_keeps_every_comment(tmp_path, capsys):
    status, out, err = run(capsys, "fmt", str(write(tmp_path, "scale.design", MESSY)))
    assert (status, err) == (0, "")
    assert out == TIDY
    assert [c.text for c in scan_comments(out)] == ["# a scale kernel", "# one line", "# read", "# blocks of 16"]
    assert "    split i by 16 -> io, ii  # blocks of 16\n" in out


def test_fmt_reads_stdin(capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(MESSY))
    assert run(capsys, "fmt", "-") == (0, TIDY, "")


def test_several_files_print_one_after_another(tmp_path, capsys):
    one = write(tmp_path, "one.design", MESSY)
    two = write(tmp_path, "two.design", MESSY.replace("scale", "twice"))
    status, out, err = run(capsys, "fmt", str(one), str(two))
    assert (status, err) == (0, "")
    assert out == TIDY + format_document(two.read_text(), "two.design")


# --- --check ------------------------------------------------------------------------------


def test_check_of_a_formatted_file_prints_nothing(tmp_path, capsys):
    assert run(capsys, "fmt", "--check", str(write(tmp_path, "tidy.design", TIDY))) == (0, "", "")


def test_check_names_each_file_that_is_not_formatted(tmp_path, capsys):
    messy = write(tmp_path, "messy.design", MESSY)
    tidy = write(tmp_path, "tidy.design", TIDY)
    status, out, err = run(capsys, "fmt", "--check", str(messy), str(tidy))
    assert status == 1 and out == ""
    assert err == f"{messy}: not formatted; 'irkit fmt -i {messy}' rewrites it\n"
    assert messy.read_text() == MESSY  # --check writes nothing


def test_check_with_diff_prints_a_unified_diff(tmp_path, capsys):
    messy = write(tmp_path, "messy.design", MESSY)
    status, out, err = run(capsys, "fmt", "--check", "--diff", str(messy))
    assert status == 1 and err.count("\n") == 1
    assert out.startswith(f"--- {messy}\n+++ {messy} (formatted)\n@@")
    assert "-  tensor a : f32[N] input   # read\n" in out and "+  tensor a : f32[N] input  # read\n" in out
    assert "+    parallel io\n" in out


def test_a_crlf_file_is_not_formatted(tmp_path, capsys):
    path = tmp_path / "crlf.design"
    path.write_bytes(TIDY.replace("\n", "\r\n").encode())
    status, _, err = run(capsys, "fmt", "--check", str(path))
    assert status == 1 and "not formatted" in err
    assert run(capsys, "fmt", "-i", str(path))[0] == 0
    assert path.read_bytes() == TIDY.encode()


# --- -i -----------------------------------------------------------------------------------


def test_in_place_rewrites_and_keeps_the_mode(tmp_path, capsys):
    path = write(tmp_path, "scale.design", MESSY)
    path.chmod(0o640)
    assert run(capsys, "fmt", "-i", str(path)) == (0, "", "")
    assert path.read_text() == TIDY
    assert (path.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scale.design"]  # no temporary file left


def test_in_place_leaves_a_formatted_file_untouched(tmp_path, capsys):
    path = write(tmp_path, "tidy.design", TIDY)
    os.utime(path, (1_000_000, 1_000_000))
    assert run(capsys, "fmt", "-i", str(path)) == (0, "", "")
    assert path.stat().st_mtime == 1_000_000


def test_in_place_several_files(tmp_path, capsys):
    paths = [write(tmp_path, f"k{i}.design", MESSY.replace("scale", f"k{i}")) for i in range(3)]
    assert run(capsys, "fmt", "-i", *map(str, paths)) == (0, "", "")
    for i, path in enumerate(paths):
        assert path.read_text() == TIDY.replace("scale", f"k{i}")


def test_in_place_refuses_a_file_with_syntax_errors_and_does_the_others(tmp_path, capsys):
    bad_text = "design d {  # kept\n  sizes { N = }\n}\n"
    bad = write(tmp_path, "bad.design", bad_text)
    good = write(tmp_path, "good.design", MESSY)
    status, out, err = run(capsys, "fmt", "-i", str(bad), str(good))
    assert status == 1 and out == ""
    assert err.startswith(f"{bad}:2:") and "error" in err and "Traceback" not in err
    assert bad.read_text() == bad_text
    assert good.read_text() == TIDY


def test_in_place_refuses_what_the_builder_refuses(tmp_path, capsys):
    text = "design d {\n  tensor y : f32[4] output\n  y[i] = foo(1)\n}\n"
    path = write(tmp_path, "unknown.design", text)
    status, _, err = run(capsys, "fmt", "-i", str(path))
    assert status == 1 and "unknown function 'foo'" in err
    assert path.read_text() == text


def test_in_place_follows_a_symlink(tmp_path, capsys):
    real = write(tmp_path, "real.design", MESSY)
    link = tmp_path / "link.design"
    link.symlink_to(real)
    assert run(capsys, "fmt", "-i", str(link))[0] == 0
    assert link.is_symlink() and real.read_text() == TIDY


def test_a_failed_write_leaves_the_file_and_no_temporary(tmp_path, capsys, monkeypatch):
    path = write(tmp_path, "scale.design", MESSY)

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fmt_tool.os, "replace", broken_replace)
    status, _, err = run(capsys, "fmt", "-i", str(path))
    assert status == 2 and err == f"irkit: error: cannot write '{path}': No space left on device\n"
    assert path.read_text() == MESSY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scale.design"]


def test_a_read_only_directory_is_reported(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    path = write(tmp_path, "scale.design", MESSY)
    tmp_path.chmod(0o500)
    try:
        status, _, err = run(capsys, "fmt", "-i", str(path))
    finally:
        tmp_path.chmod(0o700)
    assert status == 2 and "cannot write" in err
    assert path.read_text() == MESSY


def test_formatted_text_that_would_not_read_back_is_never_written(tmp_path, capsys, monkeypatch):
    """The read-back check: a printer bug is an internal error (exit 3), and the file stays as it was."""
    from irkit.frontend import document

    path = write(tmp_path, "scale.design", MESSY)
    monkeypatch.setattr(document.ParsedDocument, "format", lambda self: TIDY.replace("# read\n", "\n"))
    status, _, err = run(capsys, "fmt", "-i", str(path))
    assert status == 3 and "would lose or reorder comments" in err
    assert path.read_text() == MESSY


# --- usage --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fmt"], "the following arguments are required: FILE"),
        (["fmt", "-i", "--check", "x.design"], "not allowed with argument"),
        (["fmt", "--diff", "x.design"], "--diff goes with --check"),
        (["fmt", "-i", "-"], "cannot rewrite stdin"),
        (["fmt", "-", "-"], "stdin ('-') can be read only once"),
        (["fmt", "--strip-comments", "-i", "x.design"], "--strip-comments only prints"),
        (["fmt", "x.mlir"], "is not a design document"),
    ],
)
def test_usage_errors(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "" and err.count("\n") == 1 and message in err


def test_a_missing_file_stops_before_any_file_is_rewritten(tmp_path, capsys):
    good = write(tmp_path, "good.design", MESSY)
    status, _, err = run(capsys, "fmt", "-i", str(good), str(tmp_path / "nope.design"))
    assert status == 2 and "no such file" in err
    assert good.read_text() == MESSY


def test_strip_comments(tmp_path, capsys):
    status, out, _ = run(capsys, "fmt", "--strip-comments", str(write(tmp_path, "scale.design", MESSY)))
    assert status == 0 and "#" not in out
    assert out == format_document("\n".join(line.split("#")[0] for line in MESSY.split("\n")), "s.design")


# --- the examples ----------------------------------------------------------------------------


def test_fmt_of_every_example_keeps_all_their_comments():
    """`irkit fmt examples/*.design`, as a user runs it."""
    irkit = shutil.which("irkit", path=str(Path(sys.executable).parent))
    if irkit is None:
        pytest.skip(f"irkit is not installed next to {sys.executable}")
    names = [str(p.relative_to(ROOT)) for p in EXAMPLES]
    done = subprocess.run([irkit, "fmt", *names], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    expected = [c.text for p in EXAMPLES for c in scan_comments(p.read_text())]
    assert len(expected) >= 60
    assert [c.text for c in scan_comments(done.stdout)] == expected
    assert done.stdout == "".join(format_document(p.read_text(), str(p)) for p in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_format_idempotently(example):
    once = format_document(example.read_text(), example.name)
    assert format_document(once, example.name) == once
