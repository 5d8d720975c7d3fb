"""Every `design` code block of the language reference parses and checks cleanly."""

import re
from pathlib import Path

import pytest

from irkit.diagnostics import DiagnosticError
from irkit.frontend import parse_design

DOC = Path(__file__).parents[2] / "docs" / "design-language.md"
BLOCKS = re.findall(r"```design\n(.*?)```", DOC.read_text(), re.S)


def test_the_reference_has_examples():
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_block_is_a_valid_document(block):
    if not block.lstrip().startswith(("design", "hardware")):
        block = "design wrap {\n" + block + "}\n"
    warnings = []
    try:
        parse_design(block, "doc.design", warnings=warnings)
    except DiagnosticError as err:
        pytest.fail(f"{err}")
    assert warnings == []
