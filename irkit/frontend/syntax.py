"""Text to Lark tree, with syntax errors as located diagnostics.

The parser recovers from a missing `}` (the commonest slip when a document
is edited) by inserting it and carrying on, so that the semantic checker
can still report its own findings; any other syntax error stops after the
parse, with every syntax error found reported.
"""

from __future__ import annotations

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
        if "RBRACE" in accepts:
            # Insert the missing '}' (as many as needed) and retry the token.
            diag = error(f"expected '}}' before {_token_text(tok)}: a block is not closed", filename, line, col)
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
