"""`irkit-opt`: irkit's pass runner, in the manner of `mlir-opt` and `xdsl-opt`.

    irkit-opt [FILE|-] [-p PIPELINE] [-o OUT] [--emit mlir|design|c] ...

Reads `.design`/`.hw` documents (through the Lark frontend, semantic checker
included) or MLIR text (`.mlir`: xDSL's parser with irkit's dialects and
every dialect of xDSL's plugin multiverse; stdin is a design document if it
starts with `design` or `hardware`, else MLIR, unless `--input-format` says
which), verifies the module, runs the
pipeline (xDSL syntax; irkit's passes and xDSL's), verifies after every pass,
and prints MLIR or `.design` text.  Built from xDSL's pieces (Context,
Parser, passes, Printer) rather than by subclassing `xDSLOptMain`, whose
error handling (tracebacks, output mixed into stdout) is what this replaces.

Exit status: 0 ok, 1 a problem in the input (diagnostics printed), 2 a usage
error (one line `irkit-opt: error: ...`), 3 an internal error (a bug:
`irkit-opt: internal error in pass 'x': ...`; `IRKIT_TRACEBACK=1` shows the
traceback).  With `--split-input-file` the status is the worst chunk's.

Where diagnostics point.  Ops built from a document carry
`loc("doc.design":L:C)`; a verifier error points there, so a bug is reported
at the document line it concerns even when the input is printed IR.  An op
with no location is reported where it is written in the `.mlir` input (the
parser here records where each op starts).  Everything else without a
location is reported against the input file with no line.

`--verify-diagnostics` (see `irkit.tools.verify_diagnostics`) matches a
diagnostic on the line of the input it belongs to: the line of its location
if that is in the input; if the location is in another file (design IR that
remembers its document), the input line(s) of the ops carrying that location
-- so expectations are written next to the op in the file under test, and
the test does not depend on the line numbers of a document it does not
contain.  Diagnostics on no input line are matched with `@unknown`.  The
notes irkit-opt adds itself (`while running pass 'x'`) are context and need
no annotation.

`--check-semantics` (see `irkit.checks.semantics`) runs the program before
the first pass and after every pass on small random inputs -- the numpy
oracle for design and tensorop IR, compiled C (or `irkit.oracle.loop_interp`
without a compiler, or with `--check-semantics=interp`) for loop IR -- and
compares the outputs.  A pass that changes them is an error at the statement
computing the output, naming the pass, the first differing element and the
sizes; what was checked, and which passes were not (perf IR cannot run), are
notes.

Output chunks of `--split-input-file` are separated by `// -----` for MLIR
and by `# -----` for `--emit design`, the separator a `.design` file splits on
(`// -----` is not a comment in the design language).
"""

from __future__ import annotations

import argparse
import bisect
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from io import StringIO
from typing import TYPE_CHECKING, TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, MultipleSpansParseError, ParseError, VerifyException

from irkit.diagnostics import Diagnostic, DiagnosticError, SourceManager, render_json, render_text
from irkit.progress import phase
from irkit.tools import pipeline as pipeline_mod
from irkit.tools import verify_diagnostics as vd

if TYPE_CHECKING:
    from irkit.checks.semantics import Finding, SemanticCheck

T = TypeVar("T")

PROG = "irkit-opt"
EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
DESIGN_SUFFIXES = (".design", ".hw")
_MLIR_SPLIT = re.compile(r"^\s*// -----\s*$")
_DESIGN_SPLIT = re.compile(r"^\s*(?://|#) -----\s*$")
CHECK_ENGINES = ("auto", "c", "interp")  # irkit.checks.semantics.ENGINES, without importing it for --help


class UsageError(Exception):
    """A command-line problem: reported as one line, exit status 2."""


class InternalError(Exception):
    """A bug in irkit or a pass: reported briefly, exit status 3."""

    def __init__(self, message: str, cause: BaseException | None = None):
        super().__init__(message)
        self.cause = cause


class ArgParser(argparse.ArgumentParser):
    """argparse, but a bad command line raises `UsageError` (one line, exit 2) instead of exiting,
    an unknown option gets the nearest known one suggested, and options are never abbreviated
    (`--no-verify` silently meaning `--no-verify-each` hides typos)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message + self._suggestion(message))

    def _suggestion(self, message: str) -> str:
        import difflib

        match = re.match(r"unrecognized arguments: (\S+)", message)
        if match is None or not match.group(1).startswith("-"):
            return ""
        word = match.group(1).split("=", 1)[0]
        parsers = [self] + [
            sub for action in self._actions if isinstance(action, argparse._SubParsersAction) for sub in action.choices.values()
        ]
        known = sorted({s for p in parsers for action in p._actions for s in action.option_strings if s.startswith("--")})
        longer = [k for k in known if k.startswith(word)]  # what an abbreviation would have meant
        close = longer if len(longer) == 1 else difflib.get_close_matches(word, known, n=1, cutoff=0.6)
        return f"; did you mean '{close[0]}'?" if close else ""


def build_arg_parser() -> argparse.ArgumentParser:
    p = ArgParser(prog=PROG, description="Run irkit and xDSL passes over design documents and MLIR.")
    p.add_argument(
        "input", nargs="?", default="-", metavar="FILE", help=".design/.hw document or .mlir file; '-' = stdin (see --input-format)"
    )
    p.add_argument(
        "-p", "--passes", default="", metavar="PIPELINE", help="pass pipeline, e.g. 'check-design,canonicalize'"
    )
    p.add_argument("-o", "--output", metavar="OUT", help="write the output here instead of stdout")
    p.add_argument(
        "--input-format",
        choices=("auto", "design", "mlir"),
        default="auto",
        help="how to read the input: auto (default: .design/.hw are design documents, .mlir is MLIR, "
        "stdin and other files by what they start with), design, or mlir",
    )
    p.add_argument(
        "--emit",
        default="mlir",
        metavar="FORMAT",
        help="output format: mlir (default), design, c (loop IR as C), python (perf IR as a standalone "
        "cost-model module), or a plugin's backend",
    )
    p.add_argument("--print-op-generic", action="store_true", help="print MLIR in generic form")
    p.add_argument("--print-debuginfo", action="store_true", help="print op locations")
    p.add_argument(
        "--no-verify-each", action="store_true", help="verify only after parsing and after the whole pipeline"
    )
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (to stderr)")
    p.add_argument(
        "--print-ir-after-failure", action="store_true", help="print the IR as the failing pass received it (to stderr)"
    )
    p.add_argument("--time-passes", action="store_true", help="print a timing table (to stderr)")
    p.add_argument(
        "--check-semantics",
        action="store_true",
        help="after every pass, run the program before and after it on small random inputs and compare the "
        "outputs (numpy oracle for design/tensorop IR; compiled C, or the loop interpreter without a C "
        "compiler, for loop IR); a pass that changes the results is an error naming the pass and the first "
        "differing element.  --check-semantics=ENGINE is short for --check-semantics "
        "--check-semantics-engine=ENGINE",
    )
    p.add_argument(
        "--check-semantics-engine",
        choices=CHECK_ENGINES,
        default="auto",
        help="how --check-semantics runs loop IR: auto (compiled C if $CC or cc is found, else the "
        "interpreter; default), c (compiled C only), interp (irkit's loop interpreter, no compiler needed)",
    )
    p.add_argument(
        "--check-semantics-size",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="run --check-semantics at this size instead of the small one it picks (repeatable)",
    )
    p.add_argument("--split-input-file", action="store_true", help="process '// -----'-separated chunks independently")
    p.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check diagnostics against expected-* annotations in the input",
    )
    p.add_argument("--diagnostics-format", choices=("text", "json"), default="text", help="how diagnostics are printed")
    p.add_argument("--allow-unregistered-dialect", action="store_true", help="accept ops of unknown dialects")
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="FILE.py|MODULE",
        help="load a plugin (irkit.extend) before running; may be repeated",
    )
    p.add_argument("--list-passes", action="store_true", help="list every pass with its options and summary, then exit")
    p.add_argument("--list-dialects", action="store_true", help="list every dialect with its summary, then exit")
    p.add_argument("--list-backends", action="store_true", help="list every --emit format, then exit")
    p.add_argument("--help-pass", metavar="NAME", help="print a pass's full description and options, then exit")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    return p


def version_string() -> str:
    """irkit's and xDSL's versions."""
    from importlib.metadata import PackageNotFoundError, version

    def v(pkg: str) -> str:
        try:
            return version(pkg)
        except PackageNotFoundError:
            return "unknown"

    return f"{v('irkit')} (xdsl {v('xdsl')})"


def make_full_context(allow_unregistered: bool = False) -> Context:
    """irkit's context plus every dialect of xDSL's multiverse not registered yet."""
    from xdsl.universe import Universe

    from irkit.context import make_context

    ctx = make_context()
    known = set(ctx.registered_dialect_names)
    for name, factory in Universe.get_multiverse().all_dialects.items():
        if name not in known:
            ctx.register_dialect(name, factory)
    ctx.allow_unregistered = allow_unregistered
    return ctx


# --------------------------------------------------------------------- input


def split_chunks(text: str, design: bool) -> list[tuple[str, int]]:
    """`(chunk text, number of lines before it)` for each `// -----`-separated chunk."""
    sep = _DESIGN_SPLIT if design else _MLIR_SPLIT
    lines = text.splitlines(keepends=True)
    chunks: list[tuple[str, int]] = []
    start = 0
    for i, line in enumerate(lines):
        if sep.match(line):
            chunks.append(("".join(lines[start:i]), start))
            start = i + 1
    chunks.append(("".join(lines[start:]), start))
    return chunks


_MLIR_ALIAS = re.compile(r"#[\w.$-]+\s*=")  # `#map = affine_map<...>` starts MLIR; `# text` is a design comment
_DESIGN_START = re.compile(r"(design|hardware)\b")


def looks_like_design(text: str) -> bool:
    """True if `text` starts (after blank lines and comments) with `design` or `hardware`: how
    stdin, which has no file suffix, is told apart from MLIR."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        if stripped.startswith("#") and not _MLIR_ALIAS.match(stripped):
            continue
        return _DESIGN_START.match(stripped) is not None
    return False


def input_is_design(input_format: str, filename: str, text: str) -> bool:
    """Whether to read the input as a design document (else MLIR): `--input-format`, else the
    file's suffix (`.design`, `.hw`), else (stdin, other suffixes) what the text starts with."""
    if input_format != "auto":
        return input_format == "design"
    if filename.endswith(DESIGN_SUFFIXES):
        return True
    if filename.endswith(".mlir"):
        return False
    return looks_like_design(text)


def _is_blank_mlir(text: str) -> bool:
    """Only whitespace and `//` comments (MLIR reads that as an empty module; xDSL does not)."""
    return all(not line.strip() or line.lstrip().startswith("//") for line in text.splitlines())


class _LocatingParser(Parser):
    """xDSL's parser, remembering where in the text each op starts."""

    def __init__(self, ctx: Context, text: str, name: str):
        super().__init__(ctx, text, name)
        self.op_starts: dict[Operation, int] = {}

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        self.op_starts[op] = start
        return op


class _LineIndex:
    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(self, pos: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, pos)
        return line, pos - self.starts[line - 1] + 1


def _parse_error_diagnostic(err: ParseError) -> Diagnostic:
    def located(severity: str, message: str, span) -> Diagnostic:
        loc = span.get_location()
        line, col = loc.line, loc.col
        text = span.input.content
        end = span.end if "\n" not in text[span.start : span.end] else span.start + 1
        return Diagnostic(severity, message, span.input.name, line, col, col + max(1, end - span.start))

    diag = located("error", err.msg, err.span)
    if isinstance(err, MultipleSpansParseError):
        for span, msg in err.refs:
            diag.notes.append(located("note", msg or err.ref_text or "see here", span))
    return diag


# -------------------------------------------------------------------- timing


@dataclass
class Timer:
    rows: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def add(self, label: str, seconds: float) -> None:
        self.rows[label] = self.rows.get(label, 0.0) + seconds

    def report(self, pass_labels: list[str]) -> str:
        total = time.perf_counter() - self.started
        out = ["===- irkit-opt timing report (wall clock) -===", f"{'seconds':>10}  step"]
        checks = ["check semantics"] if "check semantics" in self.rows else []
        order = ["parse", *(f"pass {label}" for label in pass_labels), "verify", *checks, "print"]
        for label in order:
            out.append(f"{self.rows.get(label, 0.0):10.4f}  {label}")
        out.append(f"{total:10.4f}  total")
        return "\n".join(out)


def _pass_labels(passes: list[ModulePass]) -> list[str]:
    names = [p.name for p in passes]
    labels, seen = [], {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(f"{name} #{seen[name]}" if names.count(name) > 1 else name)
    return labels


# -------------------------------------------------------------------- driver


class _ChunkFailed(Exception):
    """The current chunk stops here (diagnostics have been recorded)."""


@dataclass
class Options:
    emit: str = "mlir"
    generic: bool = False
    debuginfo: bool = False
    verify_each: bool = True
    print_after_all: bool = False
    print_after_failure: bool = False
    verify_diagnostics: bool = False
    json: bool = False
    check_semantics: bool = False
    check_engine: str = "auto"
    check_sizes: dict[str, int] = field(default_factory=dict)


class Driver:
    """Processes one input (chunk by chunk) and reports to `err`."""

    def __init__(
        self,
        filename: str,
        design: bool,
        passes: list[ModulePass],
        options: Options,
        ctx_factory: Callable[[], Context],
        sources: SourceManager,
        timer: Timer | None,
        err,
    ):
        self.filename = filename
        self.design = design
        self.passes = passes
        self.labels = _pass_labels(passes)
        self.opts = options
        self.ctx_factory = ctx_factory
        self.sources = sources
        self.timer = timer
        self.err = err
        # per chunk
        self.emitted: list[Diagnostic] = []
        self.context_notes: set[int] = set()
        self.extra_lines: dict[int, set[int]] = {}
        self.loc_lines: dict[tuple[str, int, int], set[int]] = {}
        self.loc_lines_by_line: dict[tuple[str, int], set[int]] = {}
        self.op_lines: dict[Operation, tuple[int, int]] = {}
        self.checker: SemanticCheck | None = None  # the chunk's semantic check, with --check-semantics

    # ---- small helpers
    def _time(self, label: str, start: float) -> None:
        if self.timer is not None:
            self.timer.add(label, time.perf_counter() - start)

    def _emit(self, diags: list[Diagnostic], context: str | None = None) -> None:
        """Record diagnostics of the current chunk, optionally after a context note."""
        if context is not None:
            note = Diagnostic("note", context, self.filename)
            self.context_notes.add(id(note))
            self.emitted.append(note)
        self.emitted.extend(diags)

    def _render(self, diags: list[Diagnostic]) -> None:
        if not diags:
            return
        if self.opts.json:
            self.err.write(render_json(diags, self.sources) + "\n")
        else:
            for d in diags:
                self.err.write(render_text(d, self.sources) + "\n")

    def _print_ir(self, module: ModuleOp, generic: bool | None = None) -> str:
        out = StringIO()
        Printer(
            stream=out,
            print_generic_format=self.opts.generic if generic is None else generic,
            print_debuginfo=self.opts.debuginfo,
        ).print_op(module)
        out.write("\n")
        return out.getvalue()

    def _dump(self, header: str, module: ModuleOp) -> None:
        try:
            text = self._print_ir(module)
        except Exception:
            try:
                text = self._print_ir(module, generic=True)
            except Exception as exc:
                text = f"<the IR cannot be printed: {type(exc).__name__}: {exc}>\n"
        self.err.write(f"// -----// {header} //----- //\n{text}\n")

    # ---- locating verifier errors
    def _op_diagnostic(self, op: Operation, message: str) -> Diagnostic:
        loc = op.location
        written = self.op_lines.get(op)
        if isinstance(loc, FileLineColLoc):
            diag = Diagnostic("error", message, loc.filename.data, loc.line.data, loc.column.data)
        elif written is not None:
            diag = Diagnostic("error", message, self.filename, written[0], written[1])
        else:
            diag = Diagnostic("error", f"in '{op.name}': {message}", self.filename)
        if written is not None:
            self.extra_lines[id(diag)] = {written[0]}
        return diag

    def _verify(self, module: ModuleOp) -> Diagnostic | None:
        """None if the module verifies, else a diagnostic at the first failing op."""
        start = time.perf_counter()
        try:
            module.verify()
            return None
        except DiagnosticException as exc:
            whole = exc
        finally:
            self._time("verify", start)
        for op in module.walk():
            try:
                op.verify(verify_nested_ops=False)
            except DiagnosticException as exc:
                return self._op_diagnostic(op, str(exc))
        for op in module.walk(region_first=True):
            try:
                op.verify()
            except DiagnosticException as exc:
                return self._op_diagnostic(op, str(exc))
        return Diagnostic("error", str(whole), self.filename)

    # ---- stages
    def _parse(self, text: str) -> ModuleOp:
        start = time.perf_counter()
        try:
            if self.design:
                from irkit.frontend import parse_design

                warnings: list[Diagnostic] = []
                try:
                    with phase("check"):
                        module = parse_design(text, self.filename, warnings=warnings)
                    self._emit(warnings)
                    return module
                except DiagnosticError as exc:
                    self._emit(exc.diagnostics)
                    raise _ChunkFailed() from None
            if _is_blank_mlir(text):
                return ModuleOp([])
            try:
                parser = _LocatingParser(self.ctx_factory(), text, self.filename)  # lexes the first token
                module = parser.parse_module()
            except ParseError as exc:
                diag = _parse_error_diagnostic(exc)
                if looks_like_design(text):
                    diag.notes.append(
                        Diagnostic(
                            "note",
                            "the input was read as MLIR, but it starts like a design document: give it a .design "
                            "name or --input-format=design",
                            self.filename,
                        )
                    )
                self._emit([diag])
                raise _ChunkFailed() from None
            except DiagnosticException as exc:
                self._emit([Diagnostic("error", str(exc), self.filename)])
                raise _ChunkFailed() from None
            self._index_locations(module, parser, text)
            return module
        except (_ChunkFailed, InternalError):
            raise
        except Exception as exc:
            what = "the design frontend" if self.design else "the MLIR parser"
            raise InternalError(f"internal error in {what}: {type(exc).__name__}: {exc}", exc) from exc
        finally:
            self._time("parse", start)

    def _index_locations(self, module: ModuleOp, parser: _LocatingParser, text: str) -> None:
        lines = _LineIndex(text)
        for op, pos in parser.op_starts.items():
            self.op_lines[op] = lines.line_col(pos)
        for op in module.walk():
            loc = op.location
            written = self.op_lines.get(op)
            if written is not None and isinstance(loc, FileLineColLoc):
                key = (loc.filename.data, loc.line.data)
                self.loc_lines.setdefault((*key, loc.column.data), set()).add(written[0])
                self.loc_lines_by_line.setdefault(key, set()).add(written[0])

    # ---- --check-semantics
    def _start_check(self, module: ModuleOp) -> None:
        """A fresh semantic check for this chunk, started on the input (nothing without the flag)."""
        self.checker = None
        if not self.opts.check_semantics:
            return
        from irkit.checks.semantics import SemanticCheck

        checker = SemanticCheck(self.opts.check_engine, self.opts.check_sizes)
        self.checker = checker
        self._checking(lambda: checker.start(module))

    def _checking(self, step: Callable[[], T]) -> T:
        """Run one step of the check: timed, its notes emitted, a setup problem an error of the chunk."""
        from irkit.checks.semantics import CheckSetupError

        start = time.perf_counter()
        try:
            return step()
        except CheckSetupError as exc:
            self._emit([Diagnostic("error", str(exc), self.filename)])
            raise _ChunkFailed() from None
        except Exception as exc:
            raise InternalError(f"internal error in the semantic check: {type(exc).__name__}: {exc}", exc) from exc
        finally:
            self._time("check semantics", start)
            if self.checker is not None:
                for note in self.checker.take_notes():
                    self._emit([], note)

    def _check_pass(self, index: int, module: ModuleOp, before: ModuleOp | None) -> None:
        """Compare the program after pass `index` with the one before it; a difference ends the chunk."""
        checker = self.checker
        if checker is None:
            return
        label = self.labels[index]
        finding = self._checking(lambda: checker.after_pass(label, module))
        if finding is None:
            return
        if before is not None:
            self._dump(f"IR before {label} (it changed the results)", before)
            self._dump(f"IR after {label}", module)
        self._emit([self._finding_diagnostic(finding)])
        raise _ChunkFailed()

    def _finding_diagnostic(self, finding: Finding) -> Diagnostic:
        """The error for a pass that changed the results: at the statement computing the tensor, if known."""
        op = finding.op
        if op is not None and (isinstance(op.location, FileLineColLoc) or op in self.op_lines):
            diag = self._op_diagnostic(op, finding.message)
        else:
            diag = Diagnostic("error", finding.message, self.filename)
        diag.notes.extend(Diagnostic("note", n, self.filename) for n in finding.notes)
        return diag

    def _run_pass(self, index: int, p: ModulePass, module: ModuleOp) -> None:
        label = self.labels[index]
        before = module.clone() if self.opts.print_after_failure else None
        ctx = self.ctx_factory()
        start = time.perf_counter()
        failed: list[Diagnostic] | None = None
        try:
            with phase(p.name):
                p.apply(ctx, module)
        except DiagnosticError as exc:
            failed = exc.diagnostics
        except VerifyException as exc:
            located = self._verify(module)
            failed = [located if located is not None else Diagnostic("error", str(exc), self.filename)]
        except DiagnosticException as exc:  # PassFailedException and friends
            failed = [Diagnostic("error", str(exc).strip() or type(exc).__name__, self.filename)]
        except Exception as exc:
            if before is not None:
                self._dump(f"IR at the start of failing pass {p.name}", before)
            raise InternalError(f"internal error in pass '{p.name}': {type(exc).__name__}: {exc}", exc) from exc
        finally:
            self._time(f"pass {label}", start)
        if failed is not None:
            if before is not None:
                self._dump(f"IR at the start of failing pass {p.name}", before)
            self._emit(failed, f"while running pass '{p.name}'")
            raise _ChunkFailed()
        if self.opts.print_after_all:
            self._dump(f"IR after {p.name}", module)
        if self.opts.verify_each or index == len(self.passes) - 1:
            bad = self._verify(module)
            if bad is not None:
                if self.opts.print_after_failure:
                    self._dump(f"IR after {p.name} (does not verify)", module)
                self._emit([bad], f"the IR produced by pass '{p.name}' does not verify")
                raise _ChunkFailed()
        self._check_pass(index, module, before)

    def _output(self, module: ModuleOp) -> str:
        start = time.perf_counter()
        try:
            if self.opts.emit == "design":
                from irkit.backends import design_text

                try:
                    return design_text.print_design(module)
                except DiagnosticError as exc:
                    self._emit(exc.diagnostics, "while printing the module as a design document")
                    raise _ChunkFailed() from None
                except design_text.DesignPrintError as exc:
                    # IR with no `.design` spelling: a problem with the input, not a bug.
                    self._emit([Diagnostic("error", f"cannot print as a design document: {exc}", self.filename)])
                    raise _ChunkFailed() from None
            if self.opts.emit == "c":
                from irkit.backends.target import target

                try:
                    return target("c").emit(module)
                except DiagnosticError as exc:
                    self._emit(exc.diagnostics, "while emitting C")
                    raise _ChunkFailed() from None
            if self.opts.emit == "python":
                return self._emit_python(module)
            if self.opts.emit != "mlir":
                return self._emit_plugin(module)
            return self._print_ir(module)
        except (_ChunkFailed, InternalError):
            raise
        except Exception as exc:
            what = {"design": "the design printer", "c": "the C backend", "mlir": "the MLIR printer"}.get(
                self.opts.emit, f"the '{self.opts.emit}' backend"
            )
            raise InternalError(f"internal error in {what}: {type(exc).__name__}: {exc}", exc) from exc
        finally:
            self._time("print", start)

    def _emit_plugin(self, module: ModuleOp) -> str:
        """A plugin's backend (irkit.extend.register_backend); its DiagnosticErrors are the input's fault."""
        from irkit.registry import BACKENDS

        emit, _ = BACKENDS[self.opts.emit]
        try:
            return emit(module)
        except DiagnosticError as exc:
            self._emit(exc.diagnostics, f"while emitting {self.opts.emit}")
            raise _ChunkFailed() from None

    def _emit_python(self, module: ModuleOp) -> str:
        """The cost-model module of perf IR (run model-perf first); priced by default with the
        document's hardware when it names one that can be found."""
        from irkit.backends.python_model import emit_python
        from irkit.dialects.perf import KernelOp

        kernels = [op for op in module.body.block.ops if isinstance(op, KernelOp)]
        if len(kernels) != 1:
            self._emit(
                [
                    Diagnostic(
                        "error",
                        "--emit python needs perf IR with one perf.kernel: add model-perf to the pipeline "
                        f"(found {len(kernels)} perf.kernel ops)",
                        self.filename,
                    )
                ]  # fmt: skip
            )
            raise _ChunkFailed()
        hardware = None
        hw = kernels[0].hardware
        if hw is not None:
            from irkit.perf.hardware import load_hardware

            name = hw.data.get("name")
            try:
                if name is not None and len(hw.data) == 1:
                    hardware = load_hardware(name.data, self.filename)  # type: ignore[union-attr]
                else:
                    from irkit.frontend import parse_design
                    from irkit.perf.hardware import hardware_of_module

                    with open(self.filename) as document:
                        text = document.read()
                    hardware = hardware_of_module(parse_design(text, self.filename), self.filename)
            except (DiagnosticError, OSError):
                hardware = None
        return emit_python(module, self.filename, hardware, kernels[0].sym_name.data + "_model")

    def _lines_of(self, diag: Diagnostic) -> set[int]:
        lines = set(self.extra_lines.get(id(diag), ()))
        if diag.line > 0:
            if diag.file == self.filename:
                lines.add(diag.line)
            else:
                key = (diag.file, diag.line)
                lines |= self.loc_lines.get((*key, diag.col)) or self.loc_lines_by_line.get(key, set())
        return lines

    def run_chunk(self, text: str) -> tuple[int, str | None]:
        """(status, output text or None) for one chunk (`text` padded to its real lines)."""
        self.emitted, self.context_notes, self.extra_lines = [], set(), {}
        self.loc_lines, self.loc_lines_by_line, self.op_lines = {}, {}, {}
        self.checker = None
        output: str | None = None
        status = EXIT_OK
        try:
            module = self._parse(text)
            bad = self._verify(module)
            if bad is not None:
                self._emit([bad])
                raise _ChunkFailed()
            self._start_check(module)
            for index, p in enumerate(self.passes):
                self._run_pass(index, p, module)
            if self.checker is not None:
                for note in self.checker.summary():
                    self._emit([], note)
            if not self.opts.verify_diagnostics:
                output = self._output(module)
        except _ChunkFailed:
            status = EXIT_INPUT
        if self.opts.verify_diagnostics:
            expectations, malformed = vd.parse_expectations(text, self.filename)
            real = [d for d in self.emitted if id(d) not in self.context_notes]
            problems = malformed + vd.check(real, expectations, self._lines_of, self.filename)
            self._render(problems)
            return (EXIT_INPUT if problems else EXIT_OK), None
        self._render(self.emitted)
        return status, output


# ---------------------------------------------------------------------- main


def check_input_path(path: str) -> None:
    """A missing input file, or a directory, is a `UsageError` (stdin, '-', is always there)."""
    if path == "-":
        return
    if not os.path.exists(path):
        raise UsageError(f"no such file: '{path}'")
    if os.path.isdir(path):
        raise UsageError(f"'{path}' is a directory, not an input file")


def read_input(path: str) -> tuple[str, str]:
    """(text, name) of a file, or of stdin for '-'; unreadable input is a `UsageError`."""
    check_input_path(path)
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except UnicodeDecodeError:
        raise UsageError(f"'{path}' is not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"cannot read '{path}': {exc.strerror or exc}") from None


def _discovery(args: argparse.Namespace, available: dict[str, pipeline_mod.PassFactory]) -> int:
    """--list-passes, --list-dialects, --help-pass (irkit/tools/discovery.py)."""
    from irkit.tools import discovery

    if args.help_pass:
        if args.help_pass not in available:
            near = pipeline_mod.closest(args.help_pass, available)
            hint = f"; did you mean '{near}'?" if near else "; see --list-passes"
            raise UsageError(f"unknown pass '{args.help_pass}'{hint}")
        sys.stdout.write(discovery.help_pass(args.help_pass, available))
    if args.list_passes:
        sys.stdout.write(discovery.list_passes(available))
    if args.list_dialects:
        sys.stdout.write(discovery.list_dialects(make_full_context()))
    if args.list_backends:
        sys.stdout.write(discovery.list_backends())
    return EXIT_OK


# mlir-opt's spellings of irkit-opt's options (mlir-opt also takes them with one dash).
MLIR_ALIASES = {
    "--mlir-timing": "--time-passes",
    "--mlir-print-ir-after-all": "--print-ir-after-all",
    "--mlir-print-ir-after-failure": "--print-ir-after-failure",
    "--mlir-print-debuginfo": "--print-debuginfo",
    "--mlir-print-op-generic": "--print-op-generic",
}
_SINGLE_DASH = re.compile(r"-[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?:=.*)?\Z")  # -split-input-file, -pass-pipeline=...


def mlir_pipeline(text: str) -> str:
    """The pass list of an MLIR `--pass-pipeline` (`builtin.module(a,b{x=1})`, or bare `a,b`)."""
    text = text.strip()
    for anchor in ("builtin.module(", "any("):
        if text.startswith(anchor) and text.endswith(")"):
            return mlir_pipeline(text[len(anchor) : -1])
    if re.search(r"[\w.]+\(", text):
        raise UsageError(
            f"--pass-pipeline '{text}': irkit-opt runs module passes only; nested pipelines on other "
            "operations (func.func(...)) are not supported: write the passes as -p 'a,b'"
        )
    return text


def expand_check_option(argv: list[str]) -> list[str]:
    """Rewrite the command line into the spellings argparse knows.

    - `--check-semantics=ENGINE` as `--check-semantics --check-semantics-engine=ENGINE`:
      argparse cannot give a flag an optional value without the flag swallowing
      the input file written after it (`irkit-opt --check-semantics doc.design`).
    - mlir-opt's spellings: one-dash long options (`-split-input-file`), `--mlir-timing`
      and the other `MLIR_ALIASES`, `--verify-each[=true|false]`, and
      `--pass-pipeline='builtin.module(a,b)'` (as `-p a,b`).
    """
    out: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--":
            out += [arg, *args]
            break
        if _SINGLE_DASH.match(arg):
            arg = "-" + arg
        name, eq, value = arg.partition("=")
        if name in MLIR_ALIASES:
            out.append(MLIR_ALIASES[name] + (eq + value if eq else ""))
        elif name == "--verify-each":
            if eq and value.lower() in ("false", "0", "off", "no"):
                out.append("--no-verify-each")
            elif eq and value.lower() not in ("true", "1", "on", "yes"):
                raise UsageError(f"--verify-each expects true or false, got '{value}'")
        elif name == "--pass-pipeline":
            if not eq:
                if not args:
                    raise UsageError("--pass-pipeline expects a pipeline, e.g. 'builtin.module(canonicalize)'")
                value = args.pop(0)
            out += ["-p", mlir_pipeline(value)]
        elif name == "--check-semantics" and eq:
            out += ["--check-semantics", "--check-semantics-engine=" + value]
        else:
            out.append(arg)
    return out


def parse_check_sizes(items: list[str]) -> dict[str, int]:
    """`--check-semantics-size NAME=VALUE` options as a dict; a malformed one is a `UsageError`."""
    sizes: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--check-semantics-size expects NAME=VALUE, got '{item}'")
        try:
            sizes[name] = int(value)
        except ValueError:
            raise UsageError(f"--check-semantics-size {name}: '{value}' is not an integer") from None
        if sizes[name] <= 0:
            raise UsageError(f"--check-semantics-size {name}: sizes are positive, got {sizes[name]}")
    return sizes


def _run(argv: list[str] | None) -> int:
    args = build_arg_parser().parse_args(expand_check_option(sys.argv[1:] if argv is None else list(argv)))
    if args.version:
        sys.stdout.write(f"{PROG} {version_string()}\n")
        return EXIT_OK

    from irkit.backends.registry import backend_names
    from irkit.extend import PluginError, load_plugins
    from irkit.passes.registry import all_passes

    try:
        load_plugins(args.plugin)
    except PluginError as exc:
        raise UsageError(str(exc)) from None
    if args.emit not in backend_names():
        raise UsageError(f"unknown --emit format '{args.emit}'; expected one of {', '.join(backend_names())}")
    available = all_passes()
    if args.list_passes or args.list_dialects or args.list_backends or args.help_pass:
        return _discovery(args, available)
    try:
        passes = pipeline_mod.parse(args.passes, available)
    except pipeline_mod.PipelineError as exc:
        raise UsageError(str(exc)) from None
    except pipeline_mod.PassLoadError as exc:
        raise InternalError(str(exc), exc.__cause__) from None
    if args.emit == "design":
        try:
            from irkit.backends.design_text import print_design  # noqa: F401
        except ImportError as exc:
            raise UsageError(f"--emit design is not available: {exc}") from None

    text, filename = read_input(args.input)
    sources = SourceManager()
    sources.add(filename, text)
    timer = Timer() if args.time_passes else None
    options = Options(
        emit=args.emit,
        generic=args.print_op_generic,
        debuginfo=args.print_debuginfo,
        verify_each=not args.no_verify_each,
        print_after_all=args.print_ir_after_all,
        print_after_failure=args.print_ir_after_failure,
        verify_diagnostics=args.verify_diagnostics,
        json=args.diagnostics_format == "json",
        check_semantics=args.check_semantics,
        check_engine=args.check_semantics_engine,
        check_sizes=parse_check_sizes(args.check_semantics_size),
    )
    ctx = None

    def ctx_factory() -> Context:
        nonlocal ctx
        if ctx is None:
            ctx = make_full_context(args.allow_unregistered_dialect)
        return ctx

    design = input_is_design(args.input_format, filename, text)
    driver = Driver(filename, design, passes, options, ctx_factory, sources, timer, sys.stderr)
    chunks = split_chunks(text, design) if args.split_input_file else [(text, 0)]
    status, outputs = EXIT_OK, []
    for chunk, offset in chunks:
        # Leading newlines keep every line number (and caret) true to the whole file.
        chunk_status, out = driver.run_chunk("\n" * offset + chunk)
        status = max(status, chunk_status)
        outputs.append(out or "")
    separator = "# -----\n" if args.emit == "design" else "// -----\n"

    if timer is not None:
        sys.stderr.write(timer.report(driver.labels) + "\n")
    if args.verify_diagnostics:
        return status
    result = separator.join(o if o.endswith("\n") or not o else o + "\n" for o in outputs)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(result)
        except OSError as exc:
            raise UsageError(f"cannot write '{args.output}': {exc.strerror or exc}") from None
    else:
        sys.stdout.write(result)
    return status


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader went away


def broken_pipe() -> int:
    """The reader of stdout went away (`irkit-opt ... | head`): the output is cut short, so the status
    is not 0; stdout is pointed at /dev/null so that Python's exit flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


def report_internal(exc: InternalError | BaseException, prog: str = PROG) -> None:
    message = str(exc) if isinstance(exc, InternalError) else f"internal error: {type(exc).__name__}: {exc}"
    lines = message.splitlines() or [message]
    if len(lines) > 20:
        lines = lines[:20] + [f"... ({len(lines) - 20} more lines)"]
    sys.stderr.write(f"{prog}: " + "\n".join(lines) + "\n")
    cause = exc.cause if isinstance(exc, InternalError) else exc
    if os.environ.get("IRKIT_TRACEBACK") == "1" and cause is not None:
        traceback.print_exception(cause, file=sys.stderr)
    else:
        sys.stderr.write(
            f"{prog}: note: this is a bug, not a problem with the input; set IRKIT_TRACEBACK=1 to see the traceback\n"
        )


def main(argv: list[str] | None = None) -> int:
    """Run irkit-opt; returns the exit status (the console script exits with it)."""
    try:
        status = _run(argv)
        sys.stdout.flush()  # a closed pipe is reported here, not at interpreter exit
        return status
    except UsageError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except InternalError as exc:
        report_internal(exc)
        return EXIT_INTERNAL
    except BrokenPipeError:
        return broken_pipe()
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        report_internal(exc)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
