"""`irkit fmt`: design documents in canonical form, every comment kept where it was.

    irkit fmt FILE...             print the formatted documents, one after another
    irkit fmt --check FILE...     exit 1 if one is not in canonical form, naming it
    irkit fmt --check --diff ...  the same, with a unified diff of what would change
    irkit fmt -i FILE...          rewrite the files that are not in canonical form
    irkit fmt --strip-comments F  the canonical text without comments (what raising prints back)

`--check` prints, on stderr, one line per file that `-i` would change
(`gemm.design: not formatted; 'irkit fmt -i gemm.design' rewrites it`)
and nothing for the others; `--diff` adds the diff on stdout.  `-i`
writes a temporary file beside the original and renames it over it, so a
file is either the old text or the new one, never a part; it leaves
unchanged files untouched.  A document with a syntax error (or anything
the frontend refuses) is never rewritten: its diagnostics are printed and
the exit status is 1, after the other files are done.  The formatted text
is read back before it is printed or written: it must build to the same
IR with the same comments, or fmt stops with an internal error (exit 3)
and writes nothing.

Formatting needs a well-formed document, not a semantically valid one:
the semantic checker does not run (`irkit check` does that).
"""

from __future__ import annotations

import argparse
import difflib
import os
import stat
import sys
import tempfile

from irkit.diagnostics import DiagnosticError, SourceManager, render_text
from irkit.tools.opt import DESIGN_SUFFIXES, EXIT_INPUT, EXIT_OK, InternalError, UsageError, check_input_path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fmt",
        help="print design documents in canonical form, comments kept",
        description="Print design documents in canonical form, every comment kept where it was.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help=".design or .hw files ('-' = stdin)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="print nothing; exit 1 naming each file that is not in canonical form"
    )
    mode.add_argument(
        "-i", "--in-place", dest="in_place", action="store_true", help="rewrite each file that is not in canonical form"
    )
    p.add_argument("--diff", action="store_true", help="with --check: also print a unified diff of the changes")
    p.add_argument(
        "--strip-comments",
        action="store_true",
        help="leave the comments out (the text raising prints back from the loops); not with -i or --check",
    )


def run(args: argparse.Namespace) -> int:
    files: list[str] = args.files
    if args.diff and not args.check:
        raise UsageError("--diff goes with --check")
    if args.strip_comments and (args.in_place or args.check):
        raise UsageError("--strip-comments only prints: it does not go with -i or --check")
    if args.in_place and "-" in files:
        raise UsageError("-i rewrites files; it cannot rewrite stdin ('-')")
    if files.count("-") > 1:
        raise UsageError("stdin ('-') can be read only once")
    for path in files:  # every usage error before any file is touched
        _check_path(path)
    status = EXIT_OK
    for path in files:
        text, name = _read(path)
        formatted = _format(text, name, keep_comments=not args.strip_comments)
        if formatted is None:
            status = EXIT_INPUT
        elif args.check:
            if formatted != text:
                sys.stderr.write(f"{name}: not formatted; 'irkit fmt -i {name}' rewrites it\n")
                if args.diff:
                    sys.stdout.write(_diff(text, formatted, name))
                status = EXIT_INPUT
        elif args.in_place:
            if formatted != text:
                write_atomically(path, formatted)
        else:
            sys.stdout.write(formatted)
    return status


def _check_path(path: str) -> None:
    if path != "-" and not path.endswith(DESIGN_SUFFIXES):
        raise UsageError(f"'{path}' is not a design document (expected a .design or .hw file)")
    check_input_path(path)


def _read(path: str) -> tuple[str, str]:
    """The text exactly as stored (line ends kept, so `--check` sees what `-i` would change)."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read(), path
    except UnicodeDecodeError:
        raise UsageError(f"'{path}' is not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"cannot read '{path}': {exc.strerror or exc}") from None


def _format(text: str, name: str, keep_comments: bool = True) -> str | None:
    """The formatted text, or None after printing the diagnostics of a document fmt cannot format."""
    from irkit.frontend.comments import DocumentComments
    from irkit.frontend.document import parse_document

    try:
        doc = parse_document(text, name)
    except DiagnosticError as exc:
        sources = SourceManager()
        sources.add(name, text)
        for diag in exc.diagnostics:
            sys.stderr.write(render_text(diag, sources) + "\n")
        return None
    except RecursionError as exc:
        raise InternalError(f"{name}: the design frontend ran out of stack", exc) from exc
    if not keep_comments:
        doc.comments = DocumentComments()
    try:
        formatted = doc.format()
    except Exception as exc:
        raise InternalError(f"internal error in the design printer on {name}: {type(exc).__name__}: {exc}", exc) from exc
    _check_read_back(doc, formatted, keep_comments)
    return formatted


def _check_read_back(doc, formatted: str, keep_comments: bool) -> None:
    """The formatted text must mean what the original did and hold the same comments, or nothing is written."""
    from irkit.frontend.comments import scan_comments
    from irkit.frontend.document import parse_document

    try:
        again = parse_document(formatted, doc.filename)
    except DiagnosticError as exc:
        first = exc.diagnostics[0].message if exc.diagnostics else "?"
        raise InternalError(f"internal error: the formatted text of {doc.filename} does not parse ({first})") from None
    if str(again.module) != str(doc.module):
        raise InternalError(f"internal error: the formatted text of {doc.filename} does not build to the same IR")
    expected = [c.text for c in scan_comments(doc.text)] if keep_comments else []
    if [c.text for c in scan_comments(formatted)] != expected:
        raise InternalError(f"internal error: formatting {doc.filename} would lose or reorder comments")


def _lines(text: str) -> list[str]:
    """Lines with their ends, split at '\\n' only (as the grammar does)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _diff(old: str, new: str, name: str) -> str:
    out = "".join(difflib.unified_diff(_lines(old), _lines(new), fromfile=name, tofile=f"{name} (formatted)"))
    return out if out.endswith("\n") or not out else out + "\n"


def write_atomically(path: str, text: str) -> None:
    """Replace the file at `path` (through symlinks) by `text`: a temporary file beside it, then a rename.

    A failure at any point leaves the original as it was and removes the
    temporary file; the new file keeps the original's permission bits.
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target) or "."
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
        fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".fmt", dir=directory)
    except OSError as exc:
        raise UsageError(f"cannot write '{path}': {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write '{path}': {exc.strerror or exc}") from None
        raise
