"""Properties of `irkit fmt` (format_document) over random documents with random comments.

For every document the strategies generate, with numbered comments in
random gaps between tokens (on lines of their own or after code, inside
every kind of block, before the first token and after the last):

- every comment comes out, in the same order;
- each is attached to the same piece of the same op after formatting as
  before (the op found by its position in the IR, which formatting does
  not change) -- "near the same item";
- the formatted text builds to the same IR;
- formatting is idempotent;
- the comments fmt finds are the lexer's COMMENT tokens.
"""

from functools import cache

from hypothesis import HealthCheck, given, note, settings
from lark import Lark
from strategies import commented_documents, documents, hardware_files
from xdsl.ir import Operation

from irkit.frontend.comments import DocumentComments, scan_comments
from irkit.frontend.document import ParsedDocument, format_document, parse_document
from irkit.frontend.grammar import grammar_text

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def op_paths(doc: ParsedDocument) -> dict[Operation, tuple[int, ...]]:
    """Each op that can hold comments, by its path of indices from the module."""
    paths: dict[Operation, tuple[int, ...]] = {}

    def walk(op: Operation, path: tuple[int, ...]) -> None:
        paths[op] = path
        if op.regions and op.name in ("design.design", "design.schedule", "design.hardware", "design.hw_level"):
            for i, child in enumerate(op.regions[0].block.ops):
                walk(child, (*path, i))

    for i, top in enumerate(doc.module.body.block.ops):
        walk(top, (i,))
    return paths


def placements(doc: ParsedDocument) -> dict[str, tuple]:
    """comment text -> (op path, role, leading or trailing), or 'tail'."""
    comments: DocumentComments = doc.comments
    paths = op_paths(doc)
    found: dict[str, tuple] = {}
    for op, role in comments.keys():
        attached = comments.get(op, role)
        assert attached is not None
        for c in attached.leading:
            found[c.text] = (paths[op], role, "leading")
        if attached.trailing is not None:
            found[attached.trailing.text] = (paths[op], role, "trailing")
    for c in comments.tail:
        found[c.text] = ("tail",)
    return found


@SETTINGS
@given(commented_documents())
def test_every_comment_comes_out_in_order(case):
    text, comments = case
    note(text)
    formatted = format_document(text, "c.design")
    note(formatted)
    assert [c.text for c in scan_comments(formatted)] == [c.rstrip() for c in comments]


@SETTINGS
@given(commented_documents())
def test_comments_stay_with_their_item(case):
    text, comments = case
    note(text)
    before = parse_document(text, "c.design")
    assert len(before.comments) == len(comments)
    formatted = before.format()
    note(formatted)
    after = parse_document(formatted, "c.design")
    assert placements(after) == placements(before)


@SETTINGS
@given(commented_documents())
def test_formatting_keeps_the_ir_and_is_idempotent(case):
    text, _ = case
    note(text)
    before = parse_document(text, "c.design")
    formatted = before.format()
    note(formatted)
    after = parse_document(formatted, "c.design")
    assert str(after.module) == str(before.module)
    assert after.module.is_structurally_equivalent(before.module)
    assert after.format() == formatted


@SETTINGS
@given(documents())
def test_documents_of_the_round_trip_strategy_format_idempotently(text):
    """The older strategy puts comments between any two tokens too (with repeated texts)."""
    note(text)
    formatted = format_document(text, "c.design")
    assert [c.text for c in scan_comments(formatted)] == [c.text for c in scan_comments(text)]
    assert format_document(formatted, "c.design") == formatted


@SETTINGS
@given(hardware_files())
def test_hardware_files_format_idempotently(text):
    formatted = format_document(text, "c.hw")
    assert [c.text for c in scan_comments(formatted)] == [c.text for c in scan_comments(text)]
    assert format_document(formatted, "c.hw") == formatted


@cache
def comment_lexer() -> tuple[Lark, list]:
    """The grammar with a lexer callback on COMMENT: what the lexer itself calls a comment."""
    seen: list = []
    parser = Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
        lexer_callbacks={"COMMENT": seen.append},
    )
    return parser, seen


@SETTINGS
@given(commented_documents())
def test_the_comment_scan_finds_what_the_lexer_finds(case):
    text, _ = case
    parser, seen = comment_lexer()
    seen.clear()
    parser.parse(text)
    lexed = [(tok.start_pos, str(tok).rstrip()) for tok in seen]
    assert [(c.pos, c.text) for c in scan_comments(text)] == lexed
