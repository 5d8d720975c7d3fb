"""`irkit verify FILE`: lower the document, raise the generated loops, compare with the document.

Succeeds (exit 0) when the raised computation, tensors, layout and schedule
are the document's; otherwise every difference is an error on the document
line whose intent was lost (exit 1).  `--loops EDITED.mlir` checks loop IR
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
    if args.json:
        sources = SourceManager()
        sources.add(name, text)
        payload = {"file": name, "ok": not diags, "differences": [to_json(d, sources) for d in diags]}
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return EXIT_OK if not diags else EXIT_INPUT
    if diags:
        sources = SourceManager()
        sources.add(name, text)
        for diag in diags:
            sys.stderr.write(render_text(diag, sources) + "\n")
        sys.stderr.write(
            f"{name}: {len(diags)} difference{'s' if len(diags) != 1 else ''} between the document and the generated code\n"
        )
        return EXIT_INPUT
    what = "the loop IR given" if args.loops else "the generated code"
    sys.stdout.write(f"{name}: ok, {what} computes what the document asks, with its layout and schedule\n")
    return EXIT_OK


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
