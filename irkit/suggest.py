"""'did you mean ...?' for a word that is not one of the words a place accepts."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def suggest(word: str, candidates: Iterable[str]) -> str:
    """`"; did you mean 'X'?"` for the candidate closest to `word`, or "" if none is close."""
    words = list(candidates)
    same = [c for c in words if c.lower() == word.lower() and c != word]  # `n` for `N`: no ratio sees it
    if same:
        return f"; did you mean '{same[0]}'?"
    close = difflib.get_close_matches(word, words, n=1, cutoff=0.5)
    return f"; did you mean '{close[0]}'?" if close else ""
