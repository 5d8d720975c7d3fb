"""Which packages the distribution holds; the rest of the metadata is in pyproject.toml.

The packages under `irkit/` are found, not listed, so a new subpackage can
never be left out of the wheel.  Two folders outside `irkit/` are installed
as packages too because the installed tool reads them: `grammars/` (the
design language, as `irkit.grammars`) and the example documents
(`examples/*.design` and `*.hw`, as `irkit.examples`: `irkit validate` builds
its suite from them).  `tests/unit/test_packaging.py` checks the wheel.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["irkit", "irkit.*"]), "irkit.grammars", "irkit.examples"],
    package_dir={"irkit.grammars": "grammars", "irkit.examples": "examples"},
)
