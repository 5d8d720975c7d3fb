"""irkit-opt --list-passes, --list-dialects and --help-pass: what a newcomer uses to find things."""

from __future__ import annotations

from irkit.passes.registry import IRKIT_PASSES
from irkit.tools.opt import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_every_irkit_pass_is_listed_with_its_summary(capsys):
    status, out, _ = run(capsys, "--list-passes")
    lines = out.splitlines()
    assert status == 0
    for name in IRKIT_PASSES:
        header = next(i for i, line in enumerate(lines) if line == name or line.startswith(name + "{"))
        summary = lines[header + 1]
        assert summary.startswith("    ") and summary.strip() != "(no description)", name
    assert "verify-roundtrip{document: str = ''}" in lines
    assert "canonicalize" in lines  # xDSL's passes too


def test_irkit_dialects_are_listed_with_their_summary(capsys):
    status, out, _ = run(capsys, "--list-dialects")
    lines = out.splitlines()
    assert status == 0
    for name in ("design", "tensorop", "loop", "perf"):
        header = next(i for i, line in enumerate(lines) if line.startswith(name + " ("))
        assert lines[header + 1].strip().startswith(f"The `{name}` dialect")
    assert any(line.startswith("arith (") for line in lines)


def test_help_pass_prints_the_whole_docstring_and_the_options(capsys):
    status, out, _ = run(capsys, "--help-pass", "verify-roundtrip")
    assert status == 0
    assert out.startswith("verify-roundtrip\n")
    assert 'document="FILE.design"' in out and "The module is left as is." in out
    assert "Options:\n  document: str = ''" in out


def test_help_for_an_unknown_pass_suggests_one(capsys):
    status, out, err = run(capsys, "--help-pass", "raise-lop")
    assert status == 2 and out == ""
    assert "unknown pass 'raise-lop'; did you mean 'raise-loop'?" in err


def test_every_option_of_an_irkit_pass_has_help_text(capsys):
    """--help-pass prints each option's help; irkit's own passes give one for every option."""
    import dataclasses

    from irkit.tools.pipeline import _option_fields

    for name, factory in IRKIT_PASSES.items():
        cls = factory()
        for field in dataclasses.fields(cls):
            if field.name in _option_fields(cls):
                assert field.metadata.get("help"), f"{name}: option {field.name} has no help text"
    status, out, _ = run(capsys, "--help-pass", "schedule-tile")
    assert status == 0
    assert "  factors: tuple[int, ...] = required\n      one tile size per loop" in out


def test_backends_are_listed(capsys):
    status, out, _ = run(capsys, "--list-backends")
    assert status == 0
    assert [line for line in out.splitlines() if not line.startswith(" ")] == ["mlir", "design", "c", "python"]
