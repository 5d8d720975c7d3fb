"""Run the lit suite (tests/filecheck) as one pytest test.

Uses the `lit`, `filecheck`, `irkit-opt` and `xdsl-opt` next to the running
Python (the venv's bin directory), which is put first on PATH.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).parent / "filecheck"
BIN = Path(sys.executable).parent


def test_lit_suite():
    for tool in ("irkit-opt", "filecheck", "xdsl-opt"):
        if shutil.which(tool, path=str(BIN)) is None:
            pytest.skip(f"{tool} is not installed next to {sys.executable} (pip install -e '.[test]')")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    lit = shutil.which("lit", path=str(BIN))
    command = [lit] if lit else [sys.executable, "-m", "lit"]
    result = subprocess.run([*command, "-v", str(SUITE)], capture_output=True, text=True, env=env, check=False)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    passed = re.search(r"Passed\s*:\s*(\d+)", report)
    assert passed is not None and int(passed.group(1)) >= 1, report
    assert not re.search(r"^(FAIL|XPASS|UNRESOLVED):", report, re.MULTILINE), report
