"""`irkit verify FILE`: lower the document, raise the generated loops, compare with the document.

Three outcomes, stated: *proved* (exit 0) when the loops pass the IR
verifiers, the bounds and dataflow proofs, and the raised computation,
tensors, layout and schedule are the document's; *different* (exit 1), every
difference an error on the document line whose intent was lost; *undecided*
(exit 1) when what is left is a part verification could not decide (a
construct raising cannot read, an index the proof cannot bound), each said
with why.  `--json` carries the outcome and both lists.  `--loops EDITED.mlir` checks loop IR
from elsewhere (for example edited by hand) against the document instead of
the IR irkit generates.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from irkit.diagnostics import Diagnostic, DiagnosticError, SourceManager, render_text, to_json

EXIT_OK, EXIT_INPUT = 0, 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="check the generated code against the document by raising it back")
    p.add_argument("file", metavar="FILE", help="the .design document ('-' = stdin)")
    p.add_argument(
        "--loops", metavar="LOOPS.mlir", help="loop IR to check instead of the generated one (e.g. edited by hand)"
    )
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from irkit.frontend import parse_design
    from irkit.raising.verify import compare_modules, lowered_loops
    from irkit.tools.opt import read_input

    text, name = read_input(args.file)  # '-' is stdin
    design = parse_design(text, name)
    loops = _read_loops(args.loops) if args.loops else lowered_loops(design)
    diags = [_in_document(diag, name) for diag in compare_modules(design, loops)]
    differences = [d for d in diags if not undecided(d)]
    open_questions = [d for d in diags if undecided(d)]
    outcome = "different" if differences else "undecided" if open_questions else "proved"
    sources = SourceManager()
    sources.add(name, text)
    if args.json:
        payload = {
            "file": name,
            "ok": not diags,
            "outcome": outcome,
            "differences": [to_json(d, sources) for d in differences],
            "undecided": [to_json(d, sources) for d in open_questions],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return EXIT_OK if not diags else EXIT_INPUT
    for diag in differences + open_questions:
        sys.stderr.write(render_text(diag, sources) + "\n")
    what = "the loop IR given" if args.loops else "the generated code"
    if differences:
        n = len(differences)
        more = f" (and {len(open_questions)} it could not decide)" if open_questions else ""
        sys.stderr.write(
            f"{name}: {n} difference{'s' if n != 1 else ''} between the document and the generated code{more}\n"
        )
        return EXIT_INPUT
    if open_questions:
        sys.stderr.write(
            f"{name}: could not decide whether {what} computes what the document asks: "
            f"{len(open_questions)} part{'s' if len(open_questions) != 1 else ''} it cannot prove or raise (above)\n"
        )
        return EXIT_INPUT
    sys.stdout.write(
        f"{name}: ok, {what} computes what the document asks, with its layout and schedule "
        "(proved: IR verifiers, bounds, dataflow; raised and compared)\n"
    )
    return EXIT_OK


# What verification says when it cannot decide, rather than a difference it found: raising that
# cannot read a construct, a proof that cannot bound an index.
UNDECIDED_MARKS = ("cannot raise", "cannot be proved", "could not bound")


def undecided(diag: Diagnostic) -> bool:
    """Is the diagnostic a question verification could not decide, not a difference it found?"""
    return any(mark in diag.message for mark in UNDECIDED_MARKS)


def _in_document(diag: Diagnostic, name: str) -> Diagnostic:
    """The diagnostic (and its notes) pointing at `name` where the loop IR names the same document
    by another path (`origin = "examples/gemm.design:30:5"` written from another directory), so
    the excerpts show."""
    if diag.file != name and Path(diag.file).name == Path(name).name:
        diag.file = name
    for note in diag.notes:
        _in_document(note, name)
    return diag


def _read_loops(path: str):
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    from irkit.tools.opt import make_full_context

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise DiagnosticError([Diagnostic("error", f"cannot read {path}: {exc.strerror or exc}", path)]) from None
    try:
        return Parser(make_full_context(), text, path).parse_module()
    except ParseError as exc:
        raise DiagnosticError([Diagnostic("error", f"cannot parse {path}: {exc}", path)]) from None
