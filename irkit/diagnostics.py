"""Compiler-style diagnostics: `file:line:col: error: message`, the line, a caret.

Every user-facing problem in irkit becomes a `Diagnostic`.  They are
collected (a document's errors are all reported, not only the first),
raised together as `DiagnosticError`, and rendered either as text for a
person or as JSON objects for a program that writes documents and wants to
fix them.  Locations are 1-based; `end_col` is exclusive.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation

SEVERITIES = ("error", "warning", "note")


@dataclass
class Diagnostic:
    severity: str
    message: str
    file: str = "<unknown>"
    line: int = 0  # 0: no location
    col: int = 0
    end_col: int | None = None
    notes: list[Diagnostic] = field(default_factory=list)
    # A word to point at on the located line (e.g. the misspelled loop name
    # in `vectorize jx by 8`): IR locations mark where an op starts, and the
    # renderer, which has the source text, narrows the span to this word.
    focus: str | None = None

    def with_note(self, message: str, line: int = 0, col: int = 0, file: str | None = None) -> Diagnostic:
        """Attach a note; without a line of its own it shares this diagnostic's location."""
        if line <= 0:
            line, col = self.line, self.col
        self.notes.append(Diagnostic("note", message, file or self.file, line, col))
        return self

    @property
    def location(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


def error(message: str, file: str = "<unknown>", line: int = 0, col: int = 0, end_col: int | None = None) -> Diagnostic:
    return Diagnostic("error", message, file, line, col, end_col)


def at_op(severity: str, message: str, op: Operation, focus: str | None = None) -> Diagnostic:
    """A diagnostic at the source location an op carries (or unlocated)."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return Diagnostic(severity, message, loc.filename.data, loc.line.data, loc.column.data, focus=focus)
    return Diagnostic(severity, message, f"<{op.name}>", focus=focus)


class DiagnosticError(Exception):
    """One or more diagnostics that stop the current job (exit status 1)."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("; ".join(f"{d.location}: {d.severity}: {d.message}" for d in diagnostics))


class SourceManager:
    """The text of every file diagnostics may point into, for carets and spans."""

    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}

    def add(self, name: str, text: str) -> None:
        self._files[name] = text.splitlines()

    def line(self, name: str, line: int) -> str | None:
        lines = self._files.get(name)
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1]


_TOKEN_AT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(\.\d+)?|\+=|max=|->|\S")


def resolve_focus(diag: Diagnostic, sources: SourceManager) -> None:
    """Move `diag` onto its focus word, searching from its column, then the whole line."""
    if diag.focus is None:
        return
    text = sources.line(diag.file, diag.line)
    if text is None:
        return
    pattern = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(diag.focus) + r"(?![A-Za-z0-9_])")
    m = pattern.search(text, max(diag.col - 1, 0)) or pattern.search(text)
    if m is not None:
        diag.col, diag.end_col = m.start() + 1, m.end() + 1
    diag.focus = None


def span_end(diag: Diagnostic, sources: SourceManager) -> int | None:
    """The exclusive end column: given, else the end of the token at `col`."""
    if diag.end_col is not None:
        return diag.end_col
    text = sources.line(diag.file, diag.line)
    if text is None or diag.col <= 0:
        return None
    if diag.col > len(text):
        return diag.col + 1
    m = _TOKEN_AT.match(text, diag.col - 1)
    return diag.col + (len(m.group(0)) if m else 1)


EXCERPT_WIDTH = 100  # characters of a source line shown under a diagnostic


def source_excerpt(text: str, col: int, width: int) -> tuple[str, str]:
    """The source line and the caret line under it, clipped to about `EXCERPT_WIDTH` characters
    around the span (a generated document may have lines of megabytes), with tabs kept in the
    caret line's indentation so that the caret lines up in a terminal."""
    start, stop = 0, len(text)
    width = min(width, EXCERPT_WIDTH)
    if len(text) > EXCERPT_WIDTH:
        start = max(0, min(col - 1 - EXCERPT_WIDTH // 3, len(text) - EXCERPT_WIDTH))
        stop = start + EXCERPT_WIDTH
    prefix = "... " if start > 0 else ""
    suffix = " ..." if stop < len(text) else ""
    shown = prefix + text[start:stop] + suffix
    lead = "".join(ch if ch == "\t" else " " for ch in text[start : col - 1])
    caret = " " * len(prefix) + lead + "^" + "~" * (min(width, stop - col + 1) - 1)
    return shown, caret


def render_text(diag: Diagnostic, sources: SourceManager) -> str:
    """`file:line:col: severity: message`, then the source line and a caret."""
    resolve_focus(diag, sources)
    where = f"{diag.location}: " if diag.line > 0 else ""
    out = [f"{where}{diag.severity}: {diag.message}"]
    text = sources.line(diag.file, diag.line)
    if text is not None and diag.col > 0:
        end = span_end(diag, sources) or diag.col + 1
        shown, caret = source_excerpt(text, diag.col, max(1, end - diag.col))
        out.append(f"  {shown}")
        out.append(f"  {caret}")
    for note in diag.notes:
        out.append(render_text(note, sources))
    return "\n".join(out)


def to_json(diag: Diagnostic, sources: SourceManager) -> dict:
    resolve_focus(diag, sources)
    data = asdict(diag)
    del data["focus"]
    data["end_col"] = span_end(diag, sources) if diag.line > 0 else None
    data["end"] = {"line": diag.line, "col": data["end_col"]} if data["end_col"] else None
    data["notes"] = [to_json(n, sources) for n in diag.notes]
    return data


def render_json(diags: list[Diagnostic], sources: SourceManager) -> str:
    """One JSON object per line, so a reader can stream them."""
    return "\n".join(json.dumps(to_json(d, sources)) for d in diags)
