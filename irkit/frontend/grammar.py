"""Loading the Lark grammar of the design language (once per process)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from lark import Lark


def grammar_text() -> str:
    """The text of `grammars/design.lark`, installed as the `irkit.grammars` package."""
    try:
        return resources.files("irkit.grammars").joinpath("design.lark").read_text()
    except (ModuleNotFoundError, FileNotFoundError):
        # Running from a source tree that was never installed.
        return (Path(__file__).resolve().parents[2] / "grammars" / "design.lark").read_text()


@cache
def design_parser() -> Lark:
    """An LALR parser with a contextual lexer, so keywords stay usable as names where unambiguous."""
    return Lark(grammar_text(), parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=True)
