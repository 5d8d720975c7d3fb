"""Text to Lark tree, with syntax errors as located diagnostics.

The parser recovers from a missing `}` (the commonest slip when a document
is edited) by inserting it and carrying on, so that the semantic checker
can still report its own findings; any other syntax error stops after the
parse, with every syntax error found reported.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from irkit.diagnostics import Diagnostic, error
from irkit.frontend.grammar import design_parser
from irkit.frontend.keywords import keyword_collision

# Readable names for the grammar's pattern terminals.
_FRIENDLY = {
    "NAME": "a name",
    "SIGNED_INT": "an integer",
    "NUMBER": "a number",
    "STRING": 'a string in double quotes',
    "UNIT": "a unit (bits, B, KiB, MiB, GB/s, GHz, ...)",
    "DTYPE": "an element type (f32, f64, i32)",
    "ROLE": "a role (input, output, temp)",
    "ASSIGN": "'=', '+=' or 'max='",
    "CMP": "a comparison (<, <=, >, >=, ==, !=)",
    "_SEP": "',' or ';'",
    "$END": "end of input",
}
_MAX_ERRORS = 10


@dataclass
class SyntaxResult:
    tree: Tree | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    only_missing_braces: bool = True  # every error was a '}' we could insert


def describe_expected(names: set[str]) -> str:
    parser = design_parser()
    words: list[str] = []
    for name in sorted(names):
        if name in _FRIENDLY:
            words.append(_FRIENDLY[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            words.append(name)
            continue
        if pattern.type == "str":
            words.append(f"'{pattern.value}'")
        else:
            words.append(name.lower())
    words = sorted(set(words), key=lambda w: (not w.startswith("'"), w))
    if len(words) == 1:
        return words[0]
    return "one of " + ", ".join(words)


# The words of pattern terminals that are keywords too (DTYPE, ROLE), for "did you mean".
_PATTERN_WORDS = {"DTYPE": ("f32", "f64", "i32"), "ROLE": ("input", "output", "inout", "temp")}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NUMBER_RUN = re.compile(r"[+-]?[0-9][A-Za-z0-9_.]*")


def keywords_of(terminals: set[str]) -> dict[str, str]:
    """keyword -> terminal, for the terminals that are words (`schedule`, `by`, `f32`, `input`)."""
    parser = design_parser()
    out: dict[str, str] = {}
    for name in terminals:
        for word in _PATTERN_WORDS.get(name, ()):
            out[word] = name
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            continue
        if pattern.type == "str" and _WORD.match(pattern.value):
            out[pattern.value] = name
    return out


def closest_keyword(word: str, terminals: set[str]) -> str | None:
    """The keyword among `terminals` that `word` is most likely a misspelling of, if any is close."""
    keywords = keywords_of(terminals)
    if len(word) < 3 or not _WORD.match(word) or word in keywords:
        return None
    close = difflib.get_close_matches(word, list(keywords), n=1, cutoff=0.6)
    return close[0] if close else None


def _previous_word(text: str, pos: int) -> tuple[str, int] | None:
    """The word (and its offset) just before offset `pos`, skipping blanks and `#` comments."""
    before = text[:pos]
    while True:
        stripped = before.rstrip()
        line_start = stripped.rfind("\n") + 1
        line = stripped[line_start:]
        hash_at = line.find("#")
        if hash_at >= 0 and '"' not in line[:hash_at]:
            before = stripped[: line_start + hash_at]
            if hash_at == 0:
                before = stripped[:line_start]
            continue
        match = re.search(r"[A-Za-z_][A-Za-z0-9_]*\Z", stripped)
        if match is None:
            return None
        return match.group(), match.start()


def _keywords_accepted_at(text: str, pos: int) -> set[str]:
    """The terminals the parser accepts at the token starting at offset `pos` (re-parsing up to it)."""
    ip = design_parser().parse_interactive(text)
    try:
        for tok in ip.iter_parse():
            if tok.start_pos >= pos:
                return set(ip.accepts())
    except UnexpectedInput:
        pass
    return set()


def _misspelled_previous(text: str, tok: Token) -> tuple[str, str, int] | None:
    """(word, keyword, offset) when the word before `tok` is a misspelled keyword that fits there
    (`shedule C {`: 'shedule' was read as a statement's target, and 'C' is the unexpected token)."""
    if tok.type == "$END" or tok.start_pos is None:
        return None
    found = _previous_word(text, tok.start_pos)
    if found is None:
        return None
    word, offset = found
    # Cheap test first: close to any keyword at all?
    if closest_keyword(word, {t.name for t in design_parser().terminals}) is None:
        return None
    keyword = closest_keyword(word, _keywords_accepted_at(text, offset))
    return (word, keyword, offset) if keyword else None


def _not_an_integer(text: str, tok: Token) -> str | None:
    """Why the number-like text at `tok` is not an integer, when it is one glued to something."""
    if tok.type == "$END" or tok.start_pos is None:
        return None
    match = _NUMBER_RUN.match(text, tok.start_pos)
    if match is None:
        return None
    run = match.group()
    if "." in run and re.fullmatch(r"[+-]?[0-9_]+\.[0-9_]*([eE][+-]?[0-9]+)?", run):
        return f"'{run}' is not an integer: sizes, extents, factors and indices are whole numbers"
    if re.search(r"[A-Za-z]", run):
        return f"'{run}' is not a number: a number cannot run straight into a name; put a space or an operator between them"
    if "_" in run:
        return f"'{run}' is not an integer: an underscore may only separate two digits (1_000)"
    return None


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    return len(lines), len(lines[-1]) + 1


def _token_text(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    return f"'{tok.value}'"


def _unclosed_brace(text: str) -> tuple[int, int] | None:
    """Line and column of the first line holding the innermost '{' never closed."""
    stack: list[tuple[int, int]] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        in_string = False
        for ch in line:
            if ch == '"':
                in_string = not in_string
            elif in_string:
                continue
            elif ch == "#":
                break
            elif ch == "{":
                stack.append((lineno, len(line) - len(line.lstrip()) + 1))
            elif ch == "}" and stack:
                stack.pop()
    return stack[-1] if stack else None


_ITEM_WORDS = frozenset(("doc", "sizes", "tensor", "scalar", "layout", "schedule", "hardware", "assume", "metric", "repeat"))
_REPEAT = re.compile(r"\brepeat\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{")


def _inside_repeat(text: str, pos: int) -> str | None:
    """The count of the `repeat COUNT {` block that is still open at `pos` (comments aside), if any."""
    code = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), text[:pos])
    found = None
    for m in _REPEAT.finditer(code):
        depth = code.count("{", m.end(), pos) - code.count("}", m.end(), pos)
        found = m.group(1) if depth >= 0 else found
    return found


def parse_syntax(text: str, filename: str, start: str = "start") -> SyntaxResult:
    """Parse `text`; collect syntax diagnostics instead of raising."""
    result = SyntaxResult(tree=None)

    def on_error(exc: UnexpectedInput) -> bool:
        if len(result.diagnostics) >= _MAX_ERRORS:
            return False
        if isinstance(exc, UnexpectedCharacters):
            result.only_missing_braces = False
            ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else "?"
            msg = f"unexpected character '{ch}'"
            if exc.allowed:
                msg += f"; expected {describe_expected(set(exc.allowed))}"
            result.diagnostics.append(error(msg, filename, exc.line, exc.column))
            return False
        if not isinstance(exc, UnexpectedToken):
            return False
        tok = exc.token
        ip = exc.interactive_parser
        item = tok.type not in ("$END", "NAME") and str(tok.value) in _ITEM_WORDS  # read as a keyword
        steps = _inside_repeat(text, tok.start_pos) if item else None
        if steps is not None:  # an item of the design written inside a repeat block
            result.only_missing_braces = False
            result.diagnostics.append(
                error(
                    f"'{tok.value}' inside repeat {steps} {{ ... }}: a repeat block holds statements only; close it with "
                    f"'}}' before '{tok.value}' ({tok.value} belongs at the top level of the design)",
                    filename,
                    tok.line,
                    tok.column,
                    tok.column + len(str(tok.value)),
                )
            )
            return False
        collision = keyword_collision(text, tok, ip)  # a name the lexer read as a keyword: say so, at the word
        if collision is not None:
            result.only_missing_braces = False
            result.diagnostics.append(error(collision.message, filename, collision.line, collision.col))
            return False
        if tok.type == "$END":
            line, col = _end_position(text)
        else:
            line, col = tok.line, tok.column
        accepts = ip.accepts()
        expected = set(exc.expected)
        if "SIGNED_INT" in expected or "NUMBER" in expected:
            why = _not_an_integer(text, tok)
            if why is not None:
                result.only_missing_braces = False
                result.diagnostics.append(error(why, filename, line, col, col + len(_NUMBER_RUN.match(text, tok.start_pos).group())))
                return False
        keyword = closest_keyword(str(tok.value), accepts) if tok.type != "$END" else None
        if keyword is not None:
            result.only_missing_braces = False
            result.diagnostics.append(
                error(
                    f"unexpected '{tok.value}'; did you mean '{keyword}'? (expected {describe_expected(expected)})",
                    filename,
                    line,
                    col,
                    col + len(str(tok.value)),
                )
            )
            return False
        previous = _misspelled_previous(text, tok)
        if previous is not None:
            word, keyword, offset = previous
            result.only_missing_braces = False
            pline, pcol = _line_col(text, offset)
            result.diagnostics.append(
                error(f"unknown word '{word}'; did you mean '{keyword}'?", filename, pline, pcol, pcol + len(word))
            )
            return False
        words = keywords_of(accepts)
        at_line_start = tok.type == "$END" or not text[text.rfind("\n", 0, tok.start_pos) + 1 : tok.start_pos].strip()
        if "RBRACE" in accepts and tok.type == "NAME" and words and not at_line_start:
            # `schedule C { foo i }`: a word the block does not know, not a block left open.
            result.only_missing_braces = False
            result.diagnostics.append(
                error(
                    f"unexpected '{tok.value}'; expected {describe_expected(expected)}",
                    filename,
                    line,
                    col,
                    col + len(str(tok.value)),
                )
            )
            return False
        if "RBRACE" in accepts:
            # Insert the missing '}' (as many as needed) and retry the token.
            message = f"expected '}}' before {_token_text(tok)}: a block is not closed"
            if tok.type == "NAME" and words:
                message += f" (or '{tok.value}' is a mistake: this block takes {', '.join(sorted(words))})"
            diag = error(message, filename, line, col)
            opener = _unclosed_brace(text) if tok.type == "$END" else None
            if opener is not None:
                diag.with_note("the block opened here is not closed", opener[0], opener[1])
            result.diagnostics.append(diag)
            try:
                ip.feed_token(Token("RBRACE", "}"))
                while tok.type == "$END" and "$END" not in ip.accepts() and "RBRACE" in ip.accepts():
                    ip.feed_token(Token("RBRACE", "}"))
                if tok.type != "$END":
                    ip.feed_token(tok)
            except UnexpectedInput:
                result.only_missing_braces = False
            return True
        # Anything else: report it and stop, since what follows would cascade.
        result.only_missing_braces = False
        result.diagnostics.append(
            error(f"unexpected {_token_text(tok)}; expected {describe_expected(set(exc.expected))}", filename, line, col)
        )
        return False

    try:
        result.tree = design_parser().parse(text, start=start, on_error=on_error)
    except UnexpectedEOF as exc:
        line, col = _end_position(text)
        result.diagnostics.append(error(f"unexpected end of input; expected {describe_expected(set(exc.expected))}", filename, line, col))
        result.only_missing_braces = False
    except UnexpectedInput as exc:
        if not any(d.line == getattr(exc, "line", -1) for d in result.diagnostics):
            result.diagnostics.append(error(f"syntax error: {exc}", filename, getattr(exc, "line", 0), getattr(exc, "column", 0)))
        result.only_missing_braces = False
    if result.diagnostics and not result.only_missing_braces:
        result.tree = None
    return result
