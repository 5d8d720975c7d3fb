"""The suite's bounded fuzz campaign (tools/fuzz.py): mutants of every document the project has.

A fixed seed, so a failure reproduces: `python -m tools.fuzz --count 1500 --seed 14 --build 12`
prints the findings with their smallest mutants.  Larger campaigns run from
the same module (`python -m tools.fuzz --seconds 600 --build 200`).
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools import fuzz  # noqa: E402


@pytest.fixture(scope="module")
def campaign() -> fuzz.Campaign:
    return fuzz.run_campaign(count=1500, seed=14, build=12)


def test_no_crash(campaign: fuzz.Campaign):
    crashes = [f for f in campaign.findings.values() if f.kind == "crash"]
    assert not crashes, fuzz.report(campaign, 0)
    assert campaign.counts.get("accepted", 0) >= 50  # the campaign reaches the deep stages


def test_no_wrong_result(campaign: fuzz.Campaign):
    assert campaign.built == 12
    assert not campaign.counts.get("wrong"), fuzz.report(campaign, 0)


def test_what_the_checker_accepts_lowers(campaign: fuzz.Campaign):
    late = [f for f in campaign.findings.values() if f.kind == "refused_late"]
    assert not late, fuzz.report(campaign, 0)


def _cli(main, argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, err.getvalue()


def test_mutants_through_both_command_lines():
    """Exit 0 or 1 and no traceback, for `irkit check` and `irkit-opt` lowering to C."""
    from irkit.tools import cli, opt

    texts = list(fuzz.mutants(count=60, seconds=None, seed=3))
    random.Random(3).shuffle(texts)
    with tempfile.TemporaryDirectory() as tmp:
        for k, text in enumerate(texts):
            path = Path(tmp) / f"m{k}.design"
            path.write_text(text)
            for main, argv in (
                (cli.main, ["check", str(path)]),
                (opt.main, [str(path), "-p", "lower-design,lower-tensorop,apply-schedule", "--emit", "c"]),
            ):
                status, err = _cli(main, argv)
                assert status in (0, 1) and "Traceback (most recent call last)" not in err and "internal error" not in err, (text, err)


def test_mutation_is_deterministic():
    assert list(fuzz.mutants(count=20, seconds=None, seed=5)) == list(fuzz.mutants(count=20, seconds=None, seed=5))
