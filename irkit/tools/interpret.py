"""`irkit interpret FILE.mlir`: run a kernel in xDSL's interpreter, optionally against irkit's.

FILE is a kernel in dialects xDSL's interpreter executes: irkit's loops after
`export-affine`, `affine-for-to-scf` and xDSL's `lower-affine`, e.g.

    irkit-opt doc.design -p check-design,lower-design,lower-tensorop,apply-schedule,export-affine \\
        --print-op-generic | xdsl-opt -p affine-for-to-scf,lower-affine | \\
        irkit interpret - --against doc.design --size M=13

The inputs are the oracle's seeded random inputs.  With `--against DOC`, the
document is lowered by irkit and run by irkit's own loop interpreter on the
same inputs, and every output is compared within the oracle's tolerance
(exit 1 on a mismatch, naming the worst element).  docs/interop.md says why
the generic form: xDSL 0.75 re-reads `affine.load`'s custom form with its
indices as symbols, which its own `lower-affine` cannot lower.
"""

from __future__ import annotations

import argparse
import sys
import time

from irkit.diagnostics import Diagnostic, DiagnosticError

EXIT_OK, EXIT_MISMATCH = 0, 1

# Dialects xDSL 0.75's interpreter cannot run as irkit emits them (affine.for with bound operands).
_UNLOWERED = ("affine", "loop")
_LOWERING = "check-design,lower-design,lower-tensorop,apply-schedule,export-affine"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("interpret", help="run a kernel in xDSL's interpreter and compare it with irkit's")
    # (`mlir`, not `file`: the CLI's shared check of FILE expects a design document)
    p.add_argument("mlir", metavar="FILE", help="MLIR of the kernel in func/scf/memref/arith/math ('-' = stdin)")
    p.add_argument(
        "--against", metavar="DOC", help="a .design document: compare with irkit's loop interpreter on its loops"
    )
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE", help="set a size (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")


def run(args: argparse.Namespace) -> int:
    from irkit.oracle import ReferenceEvalError, random_inputs, resolve_sizes
    from irkit.tools.opt import UsageError
    from irkit.tools.run import parse_sizes

    module, text, name = _read_module(args.mlir)
    kernel = _kernel(module, name)
    try:
        sizes = resolve_sizes(kernel, parse_sizes(args.size))
    except ReferenceEvalError as exc:
        raise UsageError(f"--size: {exc}") from None
    _check_lowered(module, text, name)
    inputs = random_inputs(kernel, sizes, seed=args.seed)
    start = time.perf_counter()
    outputs = _interpret(module, inputs, sizes, name)
    seconds = time.perf_counter() - start
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
    sys.stdout.write(f"@{kernel.sym_name.data} in xDSL's interpreter at {shown}: {seconds:.2f} s\n")
    if not args.against:
        for name, value in outputs.items():
            sys.stdout.write(f"  {name}: shape {list(value.shape)}, sum {float(value.astype('float64').sum()):.6g}\n")
        return EXIT_OK
    return _compare(outputs, _irkit_outputs(args.against, inputs, sizes))


def _read_module(path: str):
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    from irkit.tools.opt import make_full_context, read_input

    text, name = read_input(path)
    try:
        return Parser(make_full_context(), text, name).parse_module(), text, name
    except ParseError as exc:
        raise DiagnosticError([Diagnostic("error", f"cannot parse {name}: {exc}", name)]) from None


def _kernel(module, path: str):
    from xdsl.utils.exceptions import InterpretationError

    from irkit.interop.xdsl_interp import kernel_function

    try:
        return kernel_function(module)
    except InterpretationError as exc:
        raise DiagnosticError([Diagnostic("error", str(exc), path)]) from None


def _check_lowered(module, text: str, name: str) -> None:
    """An `affine` or `loop` op left is an error at the first line that names it."""
    unlowered = next((op for op in module.walk() if op.dialect_name() in _UNLOWERED), None)
    if unlowered is None:
        return
    line = next((n for n, row in enumerate(text.splitlines(), 1) if unlowered.name in row), 0)
    col = text.splitlines()[line - 1].find(unlowered.name) + 1 if line else 0
    raise DiagnosticError([Diagnostic(
        "error",
        f"'{unlowered.name}' is not lowered: xDSL's interpreter runs func, scf, memref, arith and math; "
        f"lower the kernel first: irkit-opt ... -p {_LOWERING} --print-op-generic | xdsl-opt -p "
        "affine-for-to-scf,lower-affine",
        name,
        line,
        col,
    )])  # fmt: skip


def _interpret(module, inputs, sizes, path: str):
    from xdsl.utils.exceptions import InterpretationError

    from irkit.interop.xdsl_interp import run_kernel

    try:
        return run_kernel(module, inputs, sizes)
    except InterpretationError as exc:
        raise DiagnosticError([Diagnostic("error", f"xDSL's interpreter: {exc}", path)]) from None


def _irkit_outputs(doc: str, inputs, sizes):
    from irkit.frontend import parse_design
    from irkit.oracle.loop_interp import run_loop_kernel
    from irkit.raising.verify import lowered_loops
    from irkit.tools.opt import read_input

    text, name = read_input(doc)
    return run_loop_kernel(lowered_loops(parse_design(text, name)), inputs, sizes)


def _compare(ours, theirs) -> int:
    from irkit.oracle.tolerance import compare

    bad = 0
    for name, expected in theirs.items():
        if name not in ours:
            sys.stdout.write(f"  {name}: MISSING from the interpreted kernel's outputs\n")
            bad += 1
            continue
        result = compare(ours[name], expected)
        sys.stdout.write(f"  {name}: {result}\n")
        bad += not result.ok
    if bad:
        sys.stdout.write(f"MISMATCH: {bad} output(s) differ from irkit's loop interpreter\n")
        return EXIT_MISMATCH
    sys.stdout.write("ok: xDSL's interpreter agrees with irkit's loop interpreter on every output\n")
    return EXIT_OK
