"""Names spelled like a keyword of the language (`align`, `by`, `input`, `B`, ...).

The lexer is contextual, so most keywords are usable as names; where a
keyword and a name may both come next, the keyword wins.  For every name
position of the grammar and every word some terminal other than NAME
reads (taken from the grammar itself), a document with that name either
prints back to text that builds to the same IR, or is refused with a
located diagnostic that names the word and says it was not read as a name.
A hypothesis property does the same over random documents.
"""

import re

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from strategies import KEYWORDS, document_tokens, hardware_file_tokens

from irkit.backends.design_text import print_design
from irkit.frontend import build_design
from irkit.frontend.document import format_document
from irkit.frontend.keywords import keyword_words

WORDS = sorted(keyword_words())
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# One document per name position of the grammar (and per context that decides
# what may follow the name); `@` stands for the name.
TEMPLATES = {
    "design": "design @ { }",
    "size": "design t { sizes { @ = 4 } }",
    "size-after-size": "design t { sizes { M = 2 @ } }",
    "size-before-size": "design t { sizes { @ M } }",
    "tensor": "design t { tensor @ : f32[4] input }",
    "shape": "design t { sizes { @ } tensor A : f32[@ + 1, 2 * @] input }",
    "target": "design t { tensor @ : f32[4] output\n  @[i] = 1 }",
    "target-after-statement": "design t { tensor y : f32[4] output\n  y[i] = 2\n  @[i] = 3 }",
    "target-after-metric": "design t { metric latency\n  @[i] = 3 }",
    "target-after-hardware-ref": "design t { hardware host\n  @[i] = 3 }",
    "read": "design t { tensor y : f32[4] output\n  y[i] = @[i] + 1 }",
    "index": "design t { tensor y : f32[4] output\n  y[@] = x[@ + 1] }",
    "named-target": "design t { @ = matmul(A, B) }",
    "named-op": "design t { C = @(A, B) }",
    "named-operand": "design t { C = matmul(@, B) }",
    "named-key": "design t { C = conv2d(I, W, @ = 1) }",
    "named-value": "design t { C = conv2d(I, W, layout = @) }",
    "layout-entry": "design t { layout { @ : row_major } }",
    "layout-after-kind": "design t { layout { A : row_major\n  @ : col_major } }",
    "layout-after-order": "design t { layout { A : order(1, 0)\n  @ : align 16 } }",
    "layout-after-empty": "design t { layout { A :\n  @ : align 16 } }",
    "layout-after-align": "design t { layout { A : align 64\n  @ : row_major } }",
    "layout-after-kind-semicolon": "design t { layout { A : row_major; @ : col_major } }",
    "layout-after-empty-semicolon": "design t { layout { A :; @ : align 16 } }",
    "stage": "design t { schedule @ { } }",
    "split": "design t { schedule C { split @ by 4 -> a, b } }",
    "split-outer": "design t { schedule C { split i by 4 -> @, b } }",
    "split-inner": "design t { schedule C { split i by 4 -> a, @ } }",
    "split-default-names": "design t { schedule C { split @ by 4 } }",
    "tile": "design t { schedule C { tile @, j by 4, 8 -> a, b, c, d } }",
    "tile-new": "design t { schedule C { tile i, j by 4, 8 -> a, @, c, d } }",
    "reorder": "design t { schedule C { reorder @, j\n  parallel j } }",
    "parallel": "design t { schedule C { parallel @ } }",
    "vectorize": "design t { schedule C { vectorize @\n  unroll j by 2 } }",
    "vectorize-by": "design t { schedule C { vectorize @ by 8 } }",
    "unroll": "design t { schedule C { unroll @ by 2 } }",
    "unroll-jam": "design t { schedule C { unroll_jam @ by 2 } }",
    "pack-tensor": "design t { schedule C { pack @ at i } }",
    "pack-loop": "design t { schedule C { pack A at @ } }",
    "compute-at-stage": "design t { schedule C { compute_at @.i } }",
    "compute-at-loop": "design t { schedule C { compute_at D.@ } }",
    "hardware-ref": "design t { hardware @ }",
    "hardware-name": "design t { hardware @ { cores 2 } }",
    "hw-field": "design t { hardware { @ 1 } }",
    "hw-field-after-unitless": "design t { hardware { x 1\n  @ 2 } }",
    "hw-field-after-unit": "design t { hardware { x 1 B\n  @ 2 } }",
    "hw-field-after-level": "design t { hardware { cache L { x 1 }\n  @ 2 } }",
    "hw-level": "design t { hardware { cache @ { x 1 } } }",
    "hw-level-field": "design t { hardware { cache L { @ 1 } } }",
    "hw-level-field-after-unitless": "design t { hardware { cache L { x 1\n  @ 2 } } }",
    "dram-field-after-unitless": "design t { hardware { dram { x 1\n  @ 2 } } }",
    "hw-field-after-unitless-semicolon": "design t { hardware { x 1; @ 2 } }",
    "hw-level-field-after-unit-semicolon": "design t { hardware { cache L { x 1 B; @ 2 } } }",
    "dram-field-after-unitless-semicolon": "design t { hardware { dram { x 1; @ 2 } } }",
    "hw-file": "hardware @ { x 1\n  @ 2 }",
    "divisible": "design t { assume { @ % 4 == 0 } }",
    "divisible-after": "design t { assume { relaxed_math\n  @ % 2 == 0 } }",
    "aligned": "design t { assume { aligned(@, 64) } }",
    "noalias": "design t { assume { noalias(@, A) } }",
    "metric": "design t { metric @ }",
}


def build_clean(text: str):
    module, diagnostics = build_design(text, "k.design")
    errors = [x for x in diagnostics if x.severity == "error"]
    return (None, errors) if module is None or errors else (module, [])


def check_name(text: str, word: str, with_comments: bool = True) -> None:
    """`text` (naming something `word`) round-trips through the printer, or is refused saying why."""
    module, errors = build_clean(text)
    if module is None:
        first = errors[0]
        assert first.line >= 1 and first.col >= 1, (text, first)
        assert f"'{word}'" in first.message and "not as a name" in first.message, (text, first.message)
        return
    printed = print_design(module)
    again, errors = build_clean(printed)
    assert again is not None, (text, printed, errors)
    assert str(again) == str(module), (text, printed)
    assert print_design(again) == printed
    assert format_document(text, "k.design") == printed  # no comments: the same text
    if with_comments:
        check_commented(text)


def check_commented(text: str) -> None:
    """With a comment in every block (so blocks print an entry a line) and after every `;`: still the same IR.

    (`text` holds no strings, in which the comments would not be comments.)
    """
    commented = text.replace("{", "{  # open\n").replace(";", ";  # semi\n").replace("\n", "  # eol\n", 1)
    module, errors = build_clean(commented)
    assert module is not None, (commented, errors)
    formatted = format_document(commented, "k.design")
    again, errors = build_clean(formatted)
    assert again is not None, (commented, formatted, errors)
    assert str(again) == str(module), (commented, formatted)
    assert formatted.count("#") == commented.count("#")
    assert format_document(formatted, "k.design") == formatted


def test_the_words_come_from_the_grammar():
    assert {"align", "by", "at", "tile", "row_major", "order", "cache", "input", "f32", "us", "KiB"} <= set(WORDS)
    assert "NAME" not in WORDS and "{" not in WORDS


@pytest.mark.parametrize("position", sorted(TEMPLATES))
def test_every_keyword_in_every_name_position(position):
    template = TEMPLATES[position]
    for word in WORDS:
        check_name(template.replace("@", word), word)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("design t { layout { A : row_major; align : col_major } }", "    A : row_major;\n    align : col_major\n"),
        ("design t { layout { A : ; row_major : col_major } }", "    A :;\n    row_major : col_major\n"),
        ("design t { layout { A : order(1, 0); order : align 8 } }", "    A : order(1, 0);\n    order : align 8\n"),
        ("hardware h { x 1; us 2 }", "  x 1;\n  us 2\n"),
        ("hardware h { cache L { x 1; us 2 } }", "  cache L { x 1; us 2 }\n"),
    ],
)
def test_the_printer_separates_names_the_lexer_would_read_as_keywords(text, expected):
    """Found by the tests above: these printed without the `;` and did not parse back."""
    module, _ = build_clean(text)
    printed = print_design(module)
    assert expected in printed
    assert str(build_clean(printed)[0]) == str(module)


@pytest.mark.parametrize(
    "text, where, message",
    [
        ("design t { layout { A : row_major align : col_major } }", (1, 35), "write ';' before it"),
        ("hardware h { x 1 us 2 }", (1, 18), "'us' is read as a unit here, not as a name; write ';'"),
        ("design t {\n  tensor layout : f32[4] output\n  layout[i] = 1\n}", (3, 3), "cannot stand here, rename it"),
        ("design t { sizes { aligned } assume { aligned % 4 == 0 } }", (1, 39), "cannot stand here, rename it"),
        ("design t { hardware { cache 2 } }", (1, 23), "'cache' is read as a keyword here"),
    ],
)
def test_names_that_cannot_be_read_are_refused_at_the_word(text, where, message):
    _, errors = build_clean(text)
    assert (errors[0].line, errors[0].col) == where and message in errors[0].message, errors


def test_a_keyword_missing_its_operand_is_not_mistaken_for_a_name():
    _, errors = build_clean("design t { schedule C { parallel } }")
    assert errors[0].message == "unexpected '}'; expected a name"


def _parameter_names(tokens: list[str]) -> set[str]:
    """The parameter names of named-operation calls (`stride` in `conv2d(I, W, stride = 1)`):
    words of the operation's signature, not names the document gives, so never renamed (renamed
    to another parameter, `padding` -> `layout`, the call would give that parameter twice)."""
    depth, found = 0, set()
    for i, token in enumerate(tokens):
        depth += {"(": 1, ")": -1}.get(token, 0)
        if depth > 0 and i + 1 < len(tokens) and tokens[i + 1] == "=":
            found.add(token)
    return found


@st.composite
def keyword_named_documents(draw) -> tuple[str, str]:
    """A random document with one of its names (every occurrence) spelled like a keyword."""
    tokens = draw(st.one_of(document_tokens(), hardware_file_tokens()))
    params = _parameter_names(tokens)
    names = sorted({t for t in tokens if NAME.fullmatch(t) and t not in KEYWORDS and t not in params})
    if not names:
        return " ".join(tokens), ""
    victim = draw(st.sampled_from(names))
    word = draw(st.sampled_from(WORDS))
    return " ".join(word if t == victim else t for t in tokens), word


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(keyword_named_documents())
def test_random_documents_with_keyword_names(case):
    text, word = case
    note(text)
    if word:
        check_name(text, word, with_comments=False)
