"""Every example, compiled to C and run, agrees with the numpy oracle (issue 3's acceptance).

At sizes that are multiples of nothing (37, 53, 29, ...) and at the
documents' default sizes, through the `irkit run --check` command itself.
"""

import json
from pathlib import Path

import pytest

from irkit.dialects import design as d
from irkit.frontend import parse_design
from irkit.tools.cli import main

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.design"))
ODD = [37, 53, 29, 31, 23, 19, 17]


def odd_sizes(path: Path) -> list[str]:
    module = parse_design(path.read_text(), str(path))
    names = [op.sym_name.data for op in module.walk() if isinstance(op, d.SizeOp)]
    return [arg for i, name in enumerate(names) for arg in ("--size", f"{name}={ODD[i % len(ODD)]}")]


def run_check(path: Path, extra: list[str], capsys) -> dict:
    status = main(["run", str(path), "--check", "--json", *extra])
    out, err = capsys.readouterr()
    assert status == 0, err + out
    report = json.loads(out)
    assert report["check"]["ok"] and report["check"]["outputs"]
    return report


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_at_odd_sizes(path, capsys):
    report = run_check(path, odd_sizes(path), capsys)
    assert set(report["sizes"].values()) <= set(ODD)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_at_default_sizes(path, capsys):
    report = run_check(path, [], capsys)
    module = parse_design(path.read_text(), str(path))
    defaults = {op.sym_name.data: op.default.value.data for op in module.walk() if isinstance(op, d.SizeOp)}
    assert report["sizes"] == defaults
