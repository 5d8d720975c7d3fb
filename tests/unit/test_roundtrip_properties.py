"""Properties of the pretty-printer over random valid documents.

For every document the strategies generate (every construct, odd spacing,
comments, `;` separators), printing the built IR and building the print
gives the same IR, and printing is idempotent.  Built without the
semantic checker: a random document need not make sense to be printable.
"""

from pathlib import Path

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from strategies import documents, hardware_files, mutated, tokenize

from irkit.backends.design_text import print_design
from irkit.frontend import build_design

EXAMPLES = [tokenize(p.read_text()) for p in sorted((Path(__file__).parents[2] / "examples").glob("*.design"))]

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def build_clean(text: str):
    module, diagnostics = build_design(text, "random.design")
    errors = [x for x in diagnostics if x.severity == "error"]
    assert module is not None and not errors, f"generated text does not build:\n{text}\n{errors}"
    return module


def check_round_trip(text: str) -> None:
    note(f"document:\n{text}")
    module = build_clean(text)
    printed = print_design(module)
    note(f"printed:\n{printed}")
    again = build_clean(printed)
    assert str(again) == str(module)
    assert again.is_structurally_equivalent(module)
    assert print_design(again) == printed


@SETTINGS
@given(documents())
def test_print_then_build_gives_the_same_ir(text):
    check_round_trip(text)


@SETTINGS
@given(hardware_files())
def test_hardware_files_round_trip(text):
    check_round_trip(text)


@SETTINGS
@given(documents())
def test_printing_is_idempotent(text):
    note(f"document:\n{text}")
    once = print_design(build_clean(text))
    twice = print_design(build_clean(once))
    assert twice == once


@st.composite
def mutated_buildable(draw) -> str:
    """A document or example with tokens deleted, duplicated or swapped: odd documents that still build."""
    if EXAMPLES and draw(st.booleans()):
        tokens = draw(st.sampled_from(EXAMPLES))
    else:
        tokens = tokenize(draw(documents()))
    return draw(mutated(tokens))


@SETTINGS
@given(mutated_buildable())
def test_mutated_documents_that_build_round_trip(text):
    module, diagnostics = build_design(text, "mutated.design")
    if module is None or any(x.severity == "error" for x in diagnostics):
        return  # not a document any more: test_robustness's business
    check_round_trip(text)
