"""Bad input gets a diagnostic, never a traceback (DESIGN.md, contract 5).

Properties: on any text -- arbitrary, nearly a document, or a valid
document with tokens deleted, duplicated or swapped -- the frontend with
the semantic checker either returns a module or raises `DiagnosticError`,
and `irkit-opt` exits 0 or 1 (never 3, its status for an internal error).
"""

import contextlib
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from strategies import documents, hardware_files, mutated, tokenize
from xdsl.dialects.builtin import ModuleOp

from irkit.diagnostics import DiagnosticError
from irkit.frontend import parse_design

ROOT = Path(__file__).parents[2]
EXAMPLE_FILES = sorted((ROOT / "examples").glob("*.design")) + sorted((ROOT / "irkit" / "hw").glob("*.hw"))
EXAMPLE_TOKENS = [tokenize(p.read_text()) for p in EXAMPLE_FILES]

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def parse_or_diagnose(text: str) -> None:
    """parse_design either returns a module or raises DiagnosticError (anything else propagates)."""
    note(f"input:\n{text}")
    try:
        module = parse_design(text, "fuzz.design", check=True)
    except DiagnosticError as err:
        assert err.diagnostics, "DiagnosticError without a diagnostic"
        return
    assert isinstance(module, ModuleOp)


# --- (a) arbitrary text ------------------------------------------------------------------

# Characters the language uses, so that random text gets past the first token more often.
LANGUAGE_CHARS = 'design{}[]()<>=+-*/%.,;:#"\\ \t\n\rabcdefijkmnorstuxyzABCKMNOW_0123456789'
language_words = st.sampled_from(
    "design doc sizes tensor f32 i32 input output temp layout row_major order align schedule split tile by "
    "reorder parallel vectorize unroll compute_at compute_root hardware cache dram assume aligned noalias "
    "metric latency max= += -> == max exp matmul conv2d stride perm A B C M N i j k 0 1 64 -1 2.5 1e9".split()
)


@SETTINGS
@given(st.text())
def test_arbitrary_text(text):
    parse_or_diagnose(text)


@SETTINGS
@given(st.text(alphabet=LANGUAGE_CHARS, max_size=200))
def test_text_from_the_languages_characters(text):
    parse_or_diagnose(text)


@SETTINGS
@given(st.lists(language_words | st.text(alphabet=LANGUAGE_CHARS, max_size=3), max_size=40))
def test_inside_a_design_block(words):
    parse_or_diagnose("design fuzz {\n" + " ".join(words) + "\n}\n")


# --- (b) valid documents, mutated ----------------------------------------------------------------


@st.composite
def mutated_documents(draw) -> str:
    """A generated document, `.hw` file or an example, with a few tokens deleted, duplicated or swapped."""
    source = draw(st.integers(0, 5))
    if source <= 1 and EXAMPLE_TOKENS:
        tokens = draw(st.sampled_from(EXAMPLE_TOKENS))
    elif source == 2:
        tokens = tokenize(draw(hardware_files()))
    else:
        tokens = tokenize(draw(documents()))
    return draw(mutated(tokens))


@SETTINGS
@given(documents())
def test_generated_documents(text):
    parse_or_diagnose(text)


@SETTINGS
@given(mutated_documents())
def test_mutated_documents(text):
    parse_or_diagnose(text)


def test_examples_parse_before_mutation():
    assert len([p for p in EXAMPLE_FILES if p.suffix == ".design"]) >= 8
    for path in EXAMPLE_FILES:
        assert isinstance(parse_design(path.read_text(), path.name), ModuleOp)


# --- (c) the same through irkit-opt -------------------------------------------------------------------


def run_opt(text: str, *options: str) -> tuple[int, str]:
    from irkit.tools.opt import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.design"
        path.write_text(text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([str(path), *options])
    return status, err.getvalue()


@settings(SETTINGS, max_examples=100)
@given(mutated_documents(), st.sampled_from([(), ("--emit", "design"), ("--diagnostics-format", "json")]))
def test_opt_exits_0_or_1_on_mutated_documents(text, options):
    pytest.importorskip("irkit.tools.opt")
    note(f"input:\n{text}")
    status, stderr = run_opt(text, *options)
    assert status in (0, 1), stderr


# --- inputs that once crashed the frontend; each must now be a diagnostic ------------------------------

KNOWN_CRASHES = {
    # ZeroDivisionError in checks/symbolic.py: the divisor is user input.
    "assume divisible by zero": "design x { sizes { N = 8 } assume { N % 0 == 0 } }",
    # OverflowError in checks/hardware.py: int(inf) in the whole-number test.
    "infinitely many cores": "design x { hardware { cores 1e999; simd 512 bits; frequency 2 GHz"
    " cache L1 { size 48 KiB; line 64 B; bandwidth 400 GB/s } dram { bandwidth 20 GB/s } } }",
    # IntegerAttr refuses a value out of range: the builder should report it.
    "i32 constant out of range": "design x { tensor A : i32[N] output\n A[i] = 99999999999 }",
    "size default beyond i64": "design x { sizes { M = 99999999999999999999 } }",
    "split factor beyond i64": "design x { schedule A { split i by 99999999999999999999 } }",
    "layout order beyond i64": "design x { layout { A : order(99999999999999999999) } }",
    "named-op parameter beyond i64": "design x { O = conv2d(I, W, stride = 99999999999999999999) }",
    "tile factor beyond i64": "design x { schedule A { tile i by 99999999999999999999 } }",
    # A left-hand index that is not a plain variable leaves None among the
    # stage's loops; the unknown-loop message then joins them (schedule.py).
    "unknown loop, non-variable lhs index": "design A { tensor T : f32[N] output T[i + 1] = 1 schedule T { parallel q } }",
    "unknown loop, size as lhs index": "design x { sizes { N } tensor T : f32[N] output T[N] = 1 schedule T { parallel i } }",
}

@pytest.mark.parametrize("text", KNOWN_CRASHES.values(), ids=KNOWN_CRASHES.keys())
def test_former_crashes_are_diagnosed(text):
    with pytest.raises(DiagnosticError) as info:
        parse_design(text, "fuzz.design")
    assert all(diag.line > 0 for diag in info.value.diagnostics)


def test_raw_tab_in_a_doc_string_is_kept():
    module = parse_design('design x { doc "a\tb" }', "tab.design")
    (doc,) = [op for op in module.walk() if op.name == "design.doc"]
    assert doc.text.data == "a\tb"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hardware x { size 48 Bytes 3 }", "unknown field 'Bytes'"),
        ("hardware x { cores 2.5; simd 0.5 bits; frequency 2 GHz; cache L1 { size 48 KiB; line 0.5 B; "
         "bandwidth 4 GB/s } dram { bandwidth 1e999 GB/s } }", "whole number"),
    ],
)
def test_hardware_quantities_must_make_sense(text, message):
    with pytest.raises(DiagnosticError, match=message):
        parse_design(text, "x.hw")
