"""`irkit`: the user's front door.

    irkit check FILE [--diagnostics-format text|json]   parse and check a document
    irkit fmt FILE                                      print it in canonical form
    irkit run FILE [--check] [--bench] ...              compile, run, check, time (see irkit.tools.run)
    irkit --version

Subcommands are registered in `SUBCOMMANDS` (name -> function adding its
parser); each handler takes the parsed arguments and returns an exit status.
The conventions are `irkit-opt`'s: 0 ok, 1 a problem in the document
(diagnostics on stderr), 2 a usage error (one line `irkit: error: ...`), 3 an
internal error (no traceback unless `IRKIT_TRACEBACK=1`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from irkit.diagnostics import Diagnostic, DiagnosticError, SourceManager, render_json, render_text
from irkit.tools.opt import (
    DESIGN_SUFFIXES,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    ArgParser,
    InternalError,
    UsageError,
    broken_pipe,
    check_input_path,
    read_input,
    report_internal,
    version_string,
)

PROG = "irkit"


def _read_document(path: str) -> tuple[str, str]:
    if path != "-" and not path.endswith(DESIGN_SUFFIXES):
        raise UsageError(f"'{path}' is not a design document (expected a .design or .hw file)")
    return read_input(path)


def _print_diagnostics(diags: list[Diagnostic], sources: SourceManager, fmt: str) -> None:
    if not diags:
        return
    if fmt == "json":
        sys.stderr.write(render_json(diags, sources) + "\n")
    else:
        for diag in diags:
            sys.stderr.write(render_text(diag, sources) + "\n")


# ---------------------------------------------------------------- check


def _add_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="parse and check a design document")
    p.add_argument("file", metavar="FILE", help=".design or .hw file ('-' = stdin)")
    p.add_argument("--diagnostics-format", choices=("text", "json"), default="text", help="how diagnostics are printed")
    p.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    from irkit.frontend import parse_design

    text, name = _read_document(args.file)
    sources = SourceManager()
    sources.add(name, text)
    diags: list[Diagnostic] = []
    try:
        parse_design(text, name, warnings=diags)
    except DiagnosticError as exc:
        diags = exc.diagnostics
    except Exception as exc:
        raise InternalError(f"internal error in the design frontend: {type(exc).__name__}: {exc}", exc) from exc
    _print_diagnostics(diags, sources, args.diagnostics_format)
    if any(d.severity == "error" for d in diags):
        return EXIT_INPUT
    warnings = sum(d.severity == "warning" for d in diags)
    suffix = f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else ""
    sys.stdout.write(f"{name}: ok{suffix}\n")
    return EXIT_OK


# ------------------------------------------------------------------ run


def _add_run(sub: argparse._SubParsersAction) -> None:
    from irkit.tools import run

    run.add_parser(sub)
    sub.choices["run"].set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from irkit.tools import run

    try:
        return run.run(args)
    except DiagnosticError as exc:
        return _report(exc, args)


def _report(exc: DiagnosticError, args: argparse.Namespace) -> int:
    """Print a subcommand's diagnostics (with the source lines they point at); the exit status.

    C that irkit generated and the compiler refused is irkit's bug, not the
    document's: exit 3, with the note every internal error carries."""
    from irkit.backends.build import GeneratedCodeError

    sources = SourceManager()
    for diag in exc.diagnostics:
        if diag.file and Path(diag.file).is_file():
            sources.add(diag.file, Path(diag.file).read_text(errors="replace"))
    _print_diagnostics(exc.diagnostics, sources, "json" if getattr(args, "json", False) else "text")
    if isinstance(exc, GeneratedCodeError):
        sys.stderr.write(
            f"{PROG}: note: the document was accepted, so C that does not compile is a bug in irkit, not a "
            "problem with the document; please report it with the generated file named above\n"
        )
        return EXIT_INTERNAL
    return EXIT_INPUT


# ------------------------------------------------------------------ calibrate, predict, validate


def _tool(name: str) -> Callable[[argparse._SubParsersAction], None]:
    """A subcommand whose module `irkit.tools.<name>` has `add_parser(sub)` and `run(args) -> int`."""

    def add(sub: argparse._SubParsersAction) -> None:
        import importlib

        module = importlib.import_module(f"irkit.tools.{name}")
        module.add_parser(sub)

        def handler(args: argparse.Namespace) -> int:
            try:
                return module.run(args)
            except DiagnosticError as exc:
                return _report(exc, args)

        sub.choices[name].set_defaults(handler=handler)

    return add


SUBCOMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {
    "check": _add_check,
    "fmt": _tool("fmt"),
    "run": _add_run,
    "calibrate": _tool("calibrate"),
    "predict": _tool("predict"),
    "validate": _tool("validate"),
    "tune": _tool("tune"),
    "verify": _tool("verify"),
    "interpret": _tool("interpret"),
    "matrix": _tool("matrix"),
    "cluster": _tool("cluster"),
}


def build_arg_parser() -> argparse.ArgumentParser:
    parser = ArgParser(prog=PROG, description="Design documents for compute kernels: check, format, compile, run.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="FILE.py|MODULE",
        help="load a plugin (irkit.extend) first; may be repeated",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgParser)
    for add in SUBCOMMANDS.values():
        add(sub)
    for command in sub.choices.values():  # `irkit check --plugin X.py doc.design` works too
        command.add_argument(
            "--plugin",
            action="append",
            default=[],
            dest="plugin_after",
            metavar="FILE.py|MODULE",
            help="load a plugin (irkit.extend) first; may be repeated",
        )
    return parser


def _load_plugins(specs: list[str]) -> None:
    from irkit.extend import PluginError, load_plugins

    try:
        load_plugins(specs)
    except PluginError as exc:
        raise UsageError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    """Run irkit; returns the exit status (the console script exits with it)."""
    try:
        parser = build_arg_parser()
        args = parser.parse_args(argv)
        if args.version:
            sys.stdout.write(f"{PROG} {version_string()}\n")
            return EXIT_OK
        if args.command is None:
            raise UsageError(f"a command is required ({', '.join(SUBCOMMANDS)}); see 'irkit --help'")
        if getattr(args, "file", None) is not None:  # every subcommand says a missing or wrong FILE alike
            check_input_path(args.file)
            if args.file != "-" and not args.file.endswith(DESIGN_SUFFIXES):
                raise UsageError(f"'{args.file}' is not a design document (expected a .design or .hw file)")
        _load_plugins(args.plugin + getattr(args, "plugin_after", []))
        status = args.handler(args)
        sys.stdout.flush()  # a closed pipe is reported here, not at interpreter exit
        return status
    except UsageError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except BrokenPipeError:
        return broken_pipe()
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # InternalError and anything unforeseen
        report_internal(exc, PROG)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
