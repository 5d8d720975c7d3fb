"""ruff keeps the code base clean; a finding fails the suite."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.fail("ruff is not installed; install the test extra: pip install -e '.[test]'")
    result = subprocess.run([ruff, "check", "irkit", "tests", "bench", "tools", "setup.py"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
