"""Where a document's text comes from: a file, or the text itself."""

from __future__ import annotations

from pathlib import Path

from irkit.diagnostics import Diagnostic, DiagnosticError


def read_document(path_or_text: str | Path, name: str | None = None) -> tuple[str, str]:
    """(text, name): the document itself if `path_or_text` is its text, else the file it names.

    A `Path` is always a file.  A string is document text if it holds a `{`
    (every document has one: `design NAME {`, `hardware {`); otherwise it is
    a file name, so that a misspelt path (`gemm.desing`) is reported as a
    missing file instead of being parsed as a document.  `name` names text
    in diagnostics (default `<document>`)."""
    if isinstance(path_or_text, str) and "{" in path_or_text:
        return path_or_text, name or "<document>"
    path = Path(path_or_text)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except FileNotFoundError:
        hint = "" if str(path).endswith((".design", ".hw")) else " (a document's text holds 'design NAME {')"
        raise DiagnosticError([Diagnostic("error", f"no such document file '{path}'{hint}", str(path))]) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DiagnosticError([Diagnostic("error", f"cannot read {path}: {reason}", str(path))]) from None
