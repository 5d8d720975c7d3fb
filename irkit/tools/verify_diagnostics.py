"""`--verify-diagnostics`: check emitted diagnostics against annotations in the input.

In the manner of MLIR.  An annotation is a comment (`//`, or `#` in
`.design`/`.hw` files):

    // expected-error {{message}}          on this line
    // expected-error@+1 {{message}}       N lines below (`@-N`: above)
    // expected-warning@above {{message}}  the line above (`@below`: below)
    # expected-note@unknown {{message}}    a diagnostic with no line in this input

`message` is a substring of the diagnostic's message; the severity must be
the same.  Each annotation matches exactly one diagnostic and each
diagnostic needs one annotation; what is left over on either side is
reported (unmatched annotations at the annotation, unexpected diagnostics at
their location) and the run fails.

Which line a diagnostic is "on" is decided by the driver (`irkit.tools.opt`):
the line of its location when that points into the input being processed;
for a location in another file (design IR in `.mlir` form carries
`loc("x.design":3:5)` from the document it was built from), the line(s) of the
input where ops carrying that location are written, so that expectations sit
next to the text the test author reads.  Diagnostics that fall on no input
line are matched by `@unknown`.  Notes need an annotation only when they fall
on an input line; other notes are context.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from irkit.diagnostics import Diagnostic

_ANNOTATION = re.compile(
    r"(?://|#)\s*expected-(?P<sev>error|warning|note)"
    r"(?:@(?P<where>above|below|unknown|[+-]\d+))?"
    r"\s*\{\{(?P<msg>.*?)\}\}"
)
_LOOKS_LIKE_ANNOTATION = re.compile(r"(?://|#)\s*expected-(error|warning|note)\b")


@dataclass
class Expectation:
    severity: str
    message: str
    file: str
    line: int  # the line a matching diagnostic must be on; 0 for @unknown
    at_line: int  # where the annotation is written
    col: int
    matched: bool = False


def parse_expectations(text: str, filename: str) -> tuple[list[Expectation], list[Diagnostic]]:
    """The annotations in `text` (line numbers as in `text`), and errors for malformed ones."""
    expectations: list[Expectation] = []
    errors: list[Diagnostic] = []
    for number, line in enumerate(text.splitlines(), start=1):
        found = False
        for m in _ANNOTATION.finditer(line):
            found = True
            where = m.group("where")
            if where is None:
                target = number
            elif where == "above":
                target = number - 1
            elif where == "below":
                target = number + 1
            elif where == "unknown":
                target = 0
            else:
                target = number + int(where)
            expectations.append(Expectation(m.group("sev"), m.group("msg"), filename, target, number, m.start() + 1))
        if not found and (bad := _LOOKS_LIKE_ANNOTATION.search(line)):
            errors.append(
                Diagnostic(
                    "error",
                    "malformed diagnostic annotation: expected 'expected-<severity>[@+N|@-N|@above|@below|@unknown] {{message}}'",
                    filename,
                    number,
                    bad.start() + 1,
                )
            )
    return expectations, errors


def _flatten(diags: list[Diagnostic]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for diag in diags:
        out.append(diag)
        out.extend(_flatten(diag.notes))
    return out


def check(
    diagnostics: list[Diagnostic],
    expectations: list[Expectation],
    lines_of: Callable[[Diagnostic], set[int]],
    filename: str,
) -> list[Diagnostic]:
    """Match diagnostics (and their notes) to expectations; the mismatches as diagnostics.

    `lines_of(diag)` gives the lines of the input `filename` a diagnostic is on
    (empty: none).
    """
    problems: list[Diagnostic] = []
    top_level = {id(d) for d in diagnostics}
    for diag in _flatten(diagnostics):
        lines = lines_of(diag)
        if not lines and id(diag) not in top_level:
            continue  # a note off the input: context, needs no annotation
        wanted = lines or {0}
        hit = next(
            (
                e
                for e in expectations
                if not e.matched and e.severity == diag.severity and e.line in wanted and e.message in diag.message
            ),
            None,
        )
        if hit is not None:
            hit.matched = True
            continue
        message = f"unexpected {diag.severity}: {diag.message}"
        if lines and not (diag.file == filename and diag.line in lines):
            # Located in another file: report it on the input line it belongs to.
            problems.append(Diagnostic("error", f"{message} (reported at {diag.location})", filename, min(lines), 1))
        else:
            problems.append(Diagnostic("error", message, diag.file, diag.line, diag.col, diag.end_col))
    for e in expectations:
        if not e.matched:
            where = "@unknown" if e.line == 0 else f"on line {e.line}"
            problems.append(
                Diagnostic(
                    "error",
                    f"expected {e.severity} {where} was not produced: {{{{{e.message}}}}}",
                    e.file,
                    e.at_line,
                    e.col,
                )
            )
    return problems
