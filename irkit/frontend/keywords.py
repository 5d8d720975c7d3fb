"""Names spelled like a keyword of the language, where the lexer reads them as the keyword.

The lexer is contextual: a word is a keyword only where the grammar
allows that keyword, so `tensor align : ...` and `y[i] = align[i]` are
fine.  Where both a keyword and a name may come next, the keyword wins:

- `layout { A : row_major  align : col_major }` reads `align` as the
  keyword (`;` after `row_major` makes it a name again);
- `hardware h { x 1  us 2 }` reads `us` as the unit of `x` (again `;`);
- a statement writing a tensor named `layout`, `tensor`, `schedule`, ...
  (`layout[i] = ...`), a hardware field named `cache` or `dram`, an
  assumption about a size named `aligned`, `noalias` or `relaxed_math`:
  these names can never be read there.

The printer writes the `;` where it is needed (irkit.backends.design_text);
for text that does not parse, `keyword_collision` turns the syntax error
that follows such a word into one that says why, at the word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from lark import Token
from lark.exceptions import UnexpectedInput

from irkit.frontend.grammar import design_parser

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Collision:
    message: str
    line: int
    col: int


@cache
def _terminal_regex(name: str) -> re.Pattern[str] | None:
    try:
        return re.compile(design_parser().get_terminal(name).pattern.to_regexp())
    except KeyError:
        return None


def keyword_words() -> frozenset[str]:
    """Every word that some terminal of the grammar other than NAME reads (keywords, element types, roles, units)."""
    words = set()
    for terminal in design_parser().terminals:
        if terminal.name == "NAME":
            continue
        if terminal.pattern.type == "str" and NAME_RE.fullmatch(terminal.pattern.value):
            words.add(terminal.pattern.value)
    for terminal in ("DTYPE", "ROLE"):
        pattern = design_parser().get_terminal(terminal).pattern.value
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", pattern))
    words.update(("B", "KB", "MB", "GB", "KiB", "MiB", "GiB", "bits", "Hz", "kHz", "MHz", "GHz", "ns", "us", "cycles"))
    return frozenset(words)


def _accepts_text(parser, text: str, terminal_type: str) -> bool:
    """Whether the state of `parser` takes a token spelled `text` (the end of input for '$END')."""
    accepted = parser.accepts()
    if terminal_type == "$END":
        return "$END" in accepted
    for name in accepted:
        regex = _terminal_regex(name)
        if regex is not None and regex.fullmatch(text):
            return True
    return False


def _is_word(tok: Token) -> bool:
    """A token spelled like a name that the lexer read as something else."""
    return tok.type not in ("NAME", "$END") and NAME_RE.fullmatch(str(tok)) is not None


def keyword_collision(text: str, failing: Token, at_error=None) -> Collision | None:
    """If `failing` is unexpected only because a word was read as a keyword, a diagnostic saying so, at the word.

    Two cases.  The word is `failing` itself: the parser (`at_error`, its
    state at the error) wanted a name, but LALR states shared between
    blocks let the lexer read the keyword (`dram { x 1  cache 2 }`: after
    a field, `cache` may start a level at the top of a hardware block).
    Or the word is the token before `failing`: the parse is replayed up to
    the word, and asked whether a name was allowed there and whether,
    had the word been a name, `failing` could have followed it.
    """
    if at_error is not None and _is_word(failing) and "NAME" in at_error.accepts():
        return Collision(_message(str(failing), failing.type, at_error, set()), failing.line, failing.column)
    parser = design_parser()
    previous: Token | None = None
    before = None  # the parser just before `previous`, when `previous` is a word read as a keyword
    interactive = parser.parse_interactive(text, start="start")
    reached = False  # the replay got to `failing` (an earlier error, recovered from, would stop it sooner)
    names: set[str] = set()  # the words read as names before
    try:
        for tok in interactive.iter_parse():
            if failing.type != "$END" and tok.start_pos is not None and tok.start_pos >= failing.start_pos:
                reached = tok.start_pos == failing.start_pos
                break
            if previous is not None and previous.type == "NAME":
                names.add(str(previous))
            previous = tok
            before = interactive.copy() if _is_word(tok) else None
        else:
            reached = failing.type == "$END"
    except UnexpectedInput as exc:
        reached = getattr(exc, "pos_in_stream", None) == failing.start_pos or (
            getattr(getattr(exc, "token", None), "start_pos", None) == failing.start_pos
        )
    if not reached:
        return None
    if previous is None or before is None or "NAME" not in before.accepts():
        return None
    as_name = before.copy()
    try:
        as_name.feed_token(Token("NAME", str(previous)))
    except UnexpectedInput:
        return None
    if not _accepts_text(as_name, str(failing), failing.type):
        return None
    message = _message(str(previous), previous.type, before, names)
    return Collision(message, previous.line, previous.column)


def _message(word: str, terminal: str, state, names: set[str]) -> str:
    """What to say of `word`, read as `terminal` where the parser, in `state`, also took a name."""
    what = "a unit" if terminal == "UNIT" else "a keyword"
    message = f"'{word}' is read as {what} here, not as a name"
    if _semicolon_makes_it_a_name(state, terminal):
        return message + f"; write ';' before it to make '{word}' a name"
    if word in names:  # declared (or used) as a name before: surely meant as one here too
        return message + f": a name spelled '{word}' cannot stand here, rename it"
    # perhaps a keyword missing what follows it (`tensor [4]`)
    return message + f": a name spelled '{word}' cannot stand here, so if it is meant as a name, rename it"


def _semicolon_makes_it_a_name(before, terminal: str) -> bool:
    """Whether, after a `;` where the word stood, the lexer would read the word as a name."""
    if "SEMICOLON" not in before.accepts():
        return False
    after = before.copy()
    after.feed_token(Token("SEMICOLON", ";"))
    accepted = after.accepts()
    return terminal not in accepted and "NAME" in accepted
