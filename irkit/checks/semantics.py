"""Semantic checks: run the program before and after a pass on small random inputs and compare.

Contract 2 of the design: every pass is verifiable on its own.  Verifiers
check what is local; this module checks what a pass *means*: that the
program computes the same outputs after it as before.  `irkit-opt
--check-semantics` uses `SemanticCheck` after every pass of a pipeline.

What runs.  A module is classified (`classify`) as

- `design`: one `design.design` op, run by the numpy oracle
  (`irkit.oracle.evaluate_design`);
- `tensorop`: one kernel `func.func` (`irkit.kernel_abi`) holding tensorop
  ops, run by the oracle (`evaluate_tensorop`);
- `loop`: one kernel holding loop ops, compiled by the C backend with the
  system compiler and run (in a child process, so that a pass that makes
  the kernel write out of bounds is reported, not a crash of irkit-opt), or
  run by the interpreter `irkit.oracle.loop_interp` when there is no C
  compiler or when asked (`engine="interp"`);
- anything else -- perf IR (a cost model, not a program), IR that is not an
  irkit kernel, a kernel mixing tensorop and loop ops -- cannot run: the
  pass after which it appears is *not checked*, which is reported as a
  note, never as an error.  A later state that can run is compared with the
  last one that could, naming every pass in between.

Sizes (`choose_sizes`).  When the states run as compiled C, each size that a
stepped loop of the schedule runs up to is chosen to cross every tile edge,
register block and tail (`irkit.checks.crossing_sizes`: gemm's M = 96 + 6 + 1,
a full tile, one more block and a row of tail), so a fault of the full-tile
path shows.  Every other size, and every size for the interpreter, gets a
small value, so that even the interpreter runs a kernel in well under a
second: the k-th size declared
takes the k-th of `SIZE_TARGETS` (5, 7, 6, 9, 4, ...), capped by its
default (a batch of 1 stays 1), then rounded up to a multiple of its
divisor when the document assumes `SIZE % D == 0` (the schedule may rely on
it).  Distinct values make a transposed index change the result instead
of hiding in a square matrix, and values that are no multiple of common
tile and vector widths send kernels through their tail loops.  The sizes
must give every tensor a positive extent (`H - 2` needs H >= 3, a
convolution's output needs the image at least as large as the filter);
if they do not, every size is doubled (ignoring the defaults) until they do,
at most `MAX_DOUBLINGS` times.  Sizes given explicitly
(`--check-semantics-size`) are used as they are, but must keep the
divisibility assumptions.  The sizes are chosen once,
from the first state that can run, and used for every later state.

Inputs are `irkit.oracle.random_inputs` (floats uniform in [-1, 1),
`i32` in [-8, 8], seed `SEED`), the same arrays for every state.  Outputs
that a kernel never writes stay *poison* (NaN, or 0x5A5A5A5A for `i32`) in
compiled C and the interpreter alike, while the oracle's start at zero: an
element a lowering forgets shows up as a difference.

Tolerance.  Integers must be equal.  Floats pass where
`|after - before| <= atol + rtol * |before|` with `irkit.oracle.tolerance`
for the output's dtype and reduction length (`rtol = max(16 eps, 4 eps
sqrt(n))`, `atol = rtol * max|before|`): that bound is made for a compiled
kernel against the oracle, which sums in float64 and rounds once.  When
neither side is the oracle (compiled C against C or the interpreter) both
sides carry their own rounding, so the tolerance is doubled.  The
reduction lengths come from the first design or tensorop state; for an
input that is already loop IR they are unknown and the product of all the
sizes stands in for them (an upper bound for every kernel irkit writes).

A state that cannot be evaluated *after* a pass although the state before
could (an access out of bounds, a crash of the compiled kernel, an
interface whose inputs or outputs changed) is a failure of that pass too.
The first state failing so is an error of the input itself (exit 1, no pass
blamed): loop IR that reads out of bounds or memory nothing wrote is wrong
before anything runs, and saying so only in a note would let it pass.

Compiled C runs through undefined behaviour that the interpreter stops at,
so the interpreter gives a second opinion where C is in doubt: when the
compiled kernel crashes or its results differ, it names the access out of
bounds (or notes that it gets yet another result, the sign of a read of
memory nothing wrote); and when the input itself is loop IR, it must agree
with compiled C before any pass is judged against it, since a kernel that
reads garbage would otherwise get a correct pass blamed for its results.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation, SSAValue

from irkit.diagnostics import DiagnosticError
from irkit.dialects import design as d
from irkit.kernel_abi import find_kernels, kernel_args, kernel_scalars
from irkit.oracle import PLUGIN_MARK, ReferenceEvalError

__all__ = [
    "ENGINES",
    "SIZE_TARGETS",
    "CheckSetupError",
    "Difference",
    "Finding",
    "Program",
    "Run",
    "SemanticCheck",
    "choose_sizes",
    "classify",
    "first_difference",
    "run_compiled",
]

ENGINES = ("auto", "c", "interp")
"""How loop IR runs: `auto` compiled C when a compiler is found, else the interpreter; `c`; `interp`."""

SIZE_TARGETS = (5, 7, 6, 9, 4, 8, 3, 10, 11, 12, 13, 14)
MAX_DOUBLINGS = 6
SEED = 0
RUN_TIMEOUT = 120  # seconds for one compiled run of a tiny kernel: anything longer is a runaway loop

ORACLE, COMPILED, INTERPRETER = "the numpy oracle", "compiled C", "the loop interpreter"


class CheckSetupError(Exception):
    """The check cannot be set up as asked (an unknown size, `engine="c"` without a compiler): an error."""


# --- what a module holds -------------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """A module as the check sees it: its level and the op to run, or why it cannot run."""

    level: str | None
    target: Operation | None = None
    reason: str = ""


def _kernel_level(kernel: func.FuncOp) -> Program:
    if kernel.is_declaration:
        return Program(None, reason=f"@{kernel.sym_name.data} has no body")
    try:
        sizes, tensors = kernel_args(kernel)
    except (DiagnosticError, KeyError, AttributeError, IndexError, ValueError):
        sizes, tensors = [], []
    scalars = kernel_scalars(kernel) if tensors else []
    if len(sizes) + len(tensors) + len(scalars) != len(kernel.body.block.args) or not tensors:
        return Program(None, reason=f"@{kernel.sym_name.data} is not an irkit kernel (no irkit.name/irkit.role)")
    names = {op.name.split(".", 1)[0] for op in kernel.walk()}
    if "tensorop" in names and "loop" in names:
        return Program(None, reason="the kernel mixes tensorop and loop ops")
    return Program("loop" if "loop" in names else "tensorop", kernel)


def classify(module: ModuleOp) -> Program:
    """The level of `module` (design, tensorop, loop), or None with the reason it cannot run."""
    top = list(module.body.block.ops)
    if any(op.name.startswith("perf.") for op in top):
        return Program(None, reason="perf IR is a cost model, not a program to run")
    designs = [op for op in top if isinstance(op, d.DesignOp)]
    kernels = find_kernels(module)
    if designs and kernels:
        return Program(None, reason="the module holds both a design and a kernel")
    if len(designs) == 1:
        return Program("design", designs[0])
    if designs:
        return Program(None, reason=f"the module holds {len(designs)} designs")
    if len(kernels) != 1:
        what = "no design or kernel" if not kernels else f"{len(kernels)} functions"
        return Program(None, reason=f"the module holds {what}")
    return _kernel_level(kernels[0])


# --- sizes ---------------------------------------------------------------------------------------


def _size_facts(program: Program) -> tuple[list[tuple[str, int | None]], dict[str, int]]:
    """(sizes with their defaults, in declaration order; divisors assumed by the document)."""
    from irkit.backends.runner import divisibility

    target = program.target
    if isinstance(target, d.DesignOp):
        ops = list(target.body.block.ops)
        sizes = [
            (op.sym_name.data, None if op.default is None else op.default.value.data)
            for op in ops
            if isinstance(op, d.SizeOp)
        ]
        divisors = {op.size.data: op.divisor.value.data for op in ops if isinstance(op, d.AssumeDivisibleOp)}
        return sizes, divisors
    assert isinstance(target, func.FuncOp)
    size_args, _ = kernel_args(target)
    return [(s.name, s.default) for s in size_args], divisibility(target)


def _round_up(value: int, multiple: int) -> int:
    multiple = max(1, multiple)
    return max(multiple, -(-value // multiple) * multiple)


def _shape_problem(program: Program, sizes: Mapping[str, int]) -> str | None:
    """Why the program's tensors cannot exist at `sizes` (a non-positive extent...), or None."""
    from irkit.oracle import random_inputs

    try:
        random_inputs(program.target, sizes)  # type: ignore[arg-type]
    except ReferenceEvalError as exc:
        return str(exc)
    return None


def choose_sizes(
    program: Program, given: Mapping[str, int] | None = None, crossing: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Small sizes for `program` (the rule is in the module docstring); `given` ones are kept.

    Raises `CheckSetupError` for a given size the program does not have or
    that breaks an assumption, and `ReferenceEvalError` when no small sizes
    give every tensor a positive shape (or a shape uses an undeclared size).
    """
    decls, divisors = _size_facts(program)
    given = dict(given or {})
    unknown = sorted(set(given) - {name for name, _ in decls})
    if unknown:
        known = ", ".join(name for name, _ in decls) or "none"
        raise CheckSetupError(f"--check-semantics-size {unknown[0]}: the program has no such size (its sizes: {known})")
    for name, value in given.items():
        divisor = divisors.get(name, 1)
        if divisor > 1 and value % divisor:
            raise CheckSetupError(
                f"--check-semantics-size {name}={value} breaks the document's assumption {name} % {divisor} == 0"
            )
    for doubling in range(MAX_DOUBLINGS + 1):
        sizes = {}
        for k, (name, default) in enumerate(decls):
            target = SIZE_TARGETS[k % len(SIZE_TARGETS)] << doubling
            if doubling == 0 and default is not None:
                target = min(target, default)
            target = max(target, (crossing or {}).get(name, 0))  # through every tile, block and tail
            sizes[name] = given.get(name, _round_up(target, divisors.get(name, 1)))
        problem = _shape_problem(program, sizes)
        if problem is None:
            return sizes
        if "positive" not in problem:  # not a matter of size (a shape names an undeclared size...)
            break
    raise ReferenceEvalError(f"no small sizes give every tensor a shape: at {format_sizes(sizes)}, {problem}")


def format_sizes(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{name}={value}" for name, value in sizes.items()) or "none"


# --- running a state -----------------------------------------------------------------------------


@dataclass
class Run:
    """The outputs of one state of the program, and what computed them."""

    level: str
    engine: str
    outputs: dict[str, np.ndarray]


class _CannotRun(Exception):
    """This state has no runnable semantics here (unsupported IR): the pass is not checked."""


class _Broken(Exception):
    """This state fails on the check's inputs (out of bounds, a crash): a pass that made it so is wrong."""

    def __init__(self, message: str, op: Operation | None = None, detail: str | None = None):
        super().__init__(message)
        self.op = op
        self.detail = detail


# What the oracle says about a program that is wrong (an access out of bounds, a division by zero,
# inputs, sizes or shapes that no longer fit), as opposed to one it has no semantics for (a body op
# it does not know, an output map that is not a permutation of the loops): the first kind is a
# failure of the pass, the second leaves the pass unchecked.
_BROKEN_MARKS = ("out of bounds", "by zero", "input", "size", "shape")


def _oracle(program: Program, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> Run:
    from irkit.oracle import evaluate_design, evaluate_tensorop

    evaluate = evaluate_design if program.level == "design" else evaluate_tensorop
    try:
        outputs = evaluate(program.target, inputs, sizes)  # type: ignore[arg-type]
    except ReferenceEvalError as exc:
        if any(mark in str(exc) for mark in _BROKEN_MARKS):
            raise _Broken(str(exc)) from None
        raise _CannotRun(f"the numpy oracle cannot run it: {exc}") from None
    return Run(program.level or "", ORACLE, outputs)


def _interpreted(program: Program, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> Run:
    from irkit.oracle.loop_interp import LoopInterpError, UnsupportedIR, run_loop_kernel

    try:
        outputs = run_loop_kernel(program.target, inputs, sizes)  # type: ignore[arg-type]
    except UnsupportedIR as exc:
        raise _CannotRun(str(exc)) from None
    except LoopInterpError as exc:
        raise _Broken(str(exc), exc.op) from None
    except ReferenceEvalError as exc:  # sizes or inputs that do not fit the kernel
        raise _Broken(str(exc)) from None
    return Run("loop", INTERPRETER, outputs)


# The child that runs a compiled kernel: only numpy and ctypes, nothing of irkit, so it starts fast,
# and a kernel that crashes takes only the child down.
_CHILD = r"""
import ctypes, json, sys
import numpy as np

spec = json.load(open(sys.argv[1]))
data = np.load(spec["inputs"])


def aligned(shape, dtype, align):
    dtype = np.dtype(dtype)
    count = 1
    for n in shape:
        count *= n
    raw = np.empty(max(count, 1) * dtype.itemsize + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


fn = getattr(ctypes.CDLL(spec["library"]), spec["symbol"])
fn.restype = None
args, keep, outputs = [], [], {}
for arg in spec["args"]:
    if arg["kind"] == "size":
        args.append(ctypes.c_int64(arg["value"]))
        continue
    if arg["kind"] == "scalar":  # passed by value
        value = data[arg["name"]].item()
        args.append({"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32}[arg["dtype"]](value))
        continue
    buf = aligned(arg["shape"], arg["dtype"], arg["align"])
    if arg["role"] in ("input", "inout"):
        buf[...] = data[arg["name"]]
        if arg["role"] == "inout":
            outputs[arg["name"]] = buf
    else:
        buf[...] = np.nan if buf.dtype.kind == "f" else 0x5A5A5A5A
        outputs[arg["name"]] = buf
    keep.append(buf)
    args.append(ctypes.c_void_p(buf.ctypes.data))
fn(*args)
np.savez(spec["outputs"], **outputs)
"""


def _child_spec(kernel: func.FuncOp, library: Path, sizes: Mapping[str, int], workdir: Path) -> dict:
    """The child's instructions: the library, the symbol, and every argument in order (storage shapes)."""
    from irkit.backends.c import c_symbol
    from irkit.backends.runner import NUMPY_DTYPES

    size_args, tensor_args = kernel_args(kernel)
    symbols = [sizes[s.name] for s in size_args]
    by_value: dict[SSAValue, dict] = {s.value: {"kind": "size", "value": int(sizes[s.name])} for s in size_args}
    by_value |= {sc.value: {"kind": "scalar", "name": sc.name, "dtype": sc.dtype} for sc in kernel_scalars(kernel)}
    for t in tensor_args:
        shape = [int(n) for n in t.shape.eval([], symbols)]
        by_value[t.value] = {
            "kind": "tensor",
            "name": t.name,
            "role": t.role,
            "dtype": np.dtype(NUMPY_DTYPES[t.dtype]).str,
            "shape": [shape[k] for k in t.order],
            "align": max(64, t.align or 0),
        }
    return {
        "library": str(library),
        "symbol": c_symbol(kernel.sym_name.data),
        "inputs": str(workdir / "inputs.npz"),
        "outputs": str(workdir / "outputs.npz"),
        "args": [by_value[arg] for arg in kernel.body.block.args],
    }


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def run_compiled(
    module: ModuleOp, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int], timeout: float = RUN_TIMEOUT
) -> dict[str, np.ndarray]:
    """Compile a loop-level module (C backend, system compiler, build cache) and run it in a child process.

    Returns the outputs in their logical shapes.  Raises `DiagnosticError` when
    C cannot be emitted or built, `_CannotRun` when the child cannot load the
    library, and `_Broken` when the kernel crashes or runs past `timeout`.
    """
    from irkit.backends.runner import inverse
    from irkit.backends.target import target

    (kernel,) = find_kernels(module)
    c = target("c")
    library = c.build(c.emit(module))
    _, tensor_args = kernel_args(kernel)
    with tempfile.TemporaryDirectory(prefix="irkit-check-") as tmp:
        workdir = Path(tmp)
        spec = _child_spec(kernel, library, sizes, workdir)
        stored = {
            t.name: np.array(np.transpose(inputs[t.name], t.order), order="C") for t in tensor_args if t.role in ("input", "inout")
        }
        stored |= {sc.name: np.asarray(inputs[sc.name]) for sc in kernel_scalars(kernel)}
        np.savez(workdir / "inputs.npz", **stored)
        (workdir / "spec.json").write_text(json.dumps(spec))
        try:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, str(workdir / "spec.json")],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                env=os.environ.copy(),
            )
        except subprocess.TimeoutExpired:
            raise _Broken(f"the compiled kernel did not finish in {timeout:g} s") from None
        if done.returncode < 0:
            raise _Broken(f"the compiled kernel crashed ({_signal_name(-done.returncode)})")
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise _CannotRun(f"the compiled kernel could not be run: {last}")
        with np.load(workdir / "outputs.npz") as saved:
            return {
                t.name: np.array(np.transpose(saved[t.name], inverse(t.order)), order="C")
                for t in tensor_args
                if t.role in ("output", "inout")
            }


# --- comparing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """The first element (row-major) of an output outside the tolerance, and how many are."""

    index: tuple[int, ...]
    before: object
    after: object
    n_bad: int
    n_total: int
    atol: float
    rtol: float


def first_difference(
    before: np.ndarray, after: np.ndarray, reduction_length: int = 1, factor: float = 1.0
) -> Difference | None:
    """Where `after` first leaves `before`'s tolerance (see the module docstring), or None.

    NaN matches NaN, an infinity matches the same infinity only; integers
    must be equal.  `factor` scales the float tolerance.
    """
    from irkit.oracle import tolerance

    if before.dtype.kind != "f":
        bad = before.astype(np.int64) != after.astype(np.int64)
        atol = rtol = 0.0
    else:
        b, a = before.astype(np.float64), after.astype(np.float64)
        finite = np.abs(b[np.isfinite(b)])
        atol, rtol = tolerance(before.dtype, reduction_length, float(finite.max(initial=0.0)))
        atol, rtol = atol * factor, rtol * factor
        with np.errstate(all="ignore"):
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            close = np.abs(a - b) <= atol + rtol * np.abs(b)
        bad = ~same & ~close
    if not bad.any():
        return None
    first = int(np.flatnonzero(bad)[0])
    index = tuple(int(k) for k in np.unravel_index(first, bad.shape))
    return Difference(index, before[index], after[index], int(bad.sum()), int(bad.size), atol, rtol)


def format_value(value: object) -> str:
    """A scalar as people write it: `0.25`, `nan`, `-3` (numpy's shortest round-tripping form)."""
    if isinstance(value, np.generic):
        return str(value.item()) if value.dtype.kind in "iub" else str(value)
    return str(value)


# --- the check -----------------------------------------------------------------------------------


@dataclass
class Finding:
    """A pass that changed the results: the message, notes, and the op to point at (or None)."""

    message: str
    notes: list[str] = field(default_factory=list)
    op: Operation | None = None


def _located(op: Operation) -> bool:
    return isinstance(op.location, FileLineColLoc)


def _writer(program: Program, tensor: str) -> Operation | None:
    """The first located op that computes `tensor`: the statement of the document it comes from."""
    target = program.target
    if target is None:
        return None
    if isinstance(target, d.DesignOp):
        for op in d.statements(target):
            if op.target.data == tensor and _located(op):
                return op
        return target if _located(target) else None
    assert isinstance(target, func.FuncOp)
    values = {t.value for t in kernel_args(target)[1] if t.name == tensor}
    for op in target.walk():
        writes = list(getattr(op, "outs", ())) + list(getattr(op, "out", ()))
        if op.name == "loop.store":
            writes = [op.operands[1]]
        if _located(op) and any(v in values for v in writes):
            return op
    return target if _located(target) else None


def _passes(labels: list[str]) -> str:
    if len(labels) == 1:
        return f"pass '{labels[0]}'"
    return "passes " + ", ".join(f"'{label}'" for label in labels)


def _poison_hint(before: object, after: object) -> str | None:
    if isinstance(after, np.floating) and np.isnan(after) and not np.isnan(before):  # type: ignore[arg-type]
        return "NaN after the pass: the element is never written, or is computed from one never written"
    if isinstance(after, np.integer) and int(after) == 0x5A5A5A5A:
        return "0x5A5A5A5A after the pass: the element is never written, or is computed from one never written"
    return None


class SemanticCheck:
    """Runs every state of a module through a pipeline and compares each with the last one.

    `start(module)` before the first pass, `after_pass(label, module)` after
    each; a `Finding` means the pass changed the results.  Notes for the
    user (the engine used, passes not checked) collect in `take_notes()`;
    `summary()` says what was checked.  `CheckSetupError` is raised for a
    request that cannot be honoured.
    """

    def __init__(self, engine: str = "auto", sizes: Mapping[str, int] | None = None, seed: int = SEED):
        if engine not in ENGINES:
            raise CheckSetupError(
                f"--check-semantics-engine: unknown engine '{engine}' (choose from {', '.join(ENGINES)})"
            )
        self.engine = engine
        self.given_sizes = dict(sizes or {})
        self.seed = seed
        self.sizes: dict[str, int] = {}
        self.inputs: dict[str, np.ndarray] = {}
        self.lengths: dict[str, int] = {}
        self.last: Run | None = None
        self.pending: list[str] = []
        self.checked: list[str] = []
        self.engines: list[str] = []
        self.unchecked: list[tuple[str, str]] = []
        self.disabled = False
        self.before_reason = ""
        self._notes: list[str] = []
        self._use_c: bool | None = None

    # ---- notes
    def note(self, message: str) -> None:
        self._notes.append(f"semantic check: {message}")

    def take_notes(self) -> list[str]:
        notes, self._notes = self._notes, []
        return notes

    def summary(self) -> list[str]:
        """What was checked and what was not, as notes (after the whole pipeline)."""
        out = []
        if self.checked:
            how = ", ".join(dict.fromkeys(self.engines))
            out.append(
                f"semantic check: results agree after {_passes(self.checked)} "
                f"(sizes {format_sizes(self.sizes)}; random inputs, seed {self.seed}; {how})"
            )
        by_reason: dict[str, list[str]] = {}
        for label, reason in self.unchecked:
            by_reason.setdefault(reason, []).append(label)
        for reason, labels in by_reason.items():
            out.append(f"semantic check: {_passes(labels)} not checked: {reason}")
        return out

    # ---- states
    def start(self, module: ModuleOp) -> None:
        """Evaluate the input; the first pass is compared with it."""
        program = classify(module)
        if program.level is None:
            self.before_reason = f"the IR before it cannot run ({program.reason})"
            return
        self._begin(program)

    def after_pass(self, label: str, module: ModuleOp) -> Finding | None:
        """Evaluate the module after pass `label` and compare it with the last state that ran."""
        self.pending.append(label)
        if self.disabled:
            self.unchecked.append((label, "the check is off (see above)"))
            return None
        program = classify(module)
        if program.level is None:
            self.unchecked.append((label, program.reason))
            return None
        if self.last is None:
            self.unchecked.extend((p, self.before_reason or "nothing ran before it") for p in self.pending)
            self.pending = []
            self._begin(program)
            return None
        try:
            run = self._evaluate(program)
        except _CannotRun as exc:
            self.unchecked.append((label, str(exc)))
            return None
        except _Broken as exc:
            return self._broken(program, exc)
        finding = self._compare(program, run)
        if finding is not None and run.engine == COMPILED:
            finding = self._explain(program, finding, run)
        if finding is None:
            self.checked.extend(self.pending)
            self.engines.extend([self.last.engine, run.engine])
            self.pending = []
            self.last = run
        return finding

    def _begin(self, program: Program) -> None:
        from irkit.oracle import random_inputs, reduction_lengths

        crossing: dict[str, int] = {}
        if self._compiler_available():  # compiled C runs sizes that fill the schedule's tiles quickly
            from irkit.checks.crossing_sizes import crossing_sizes

            module = program.target.parent_op()  # type: ignore[union-attr]
            while module is not None and not isinstance(module, ModuleOp):
                module = module.parent_op()
            if module is not None:
                crossing = crossing_sizes(module, _size_facts(program)[1])
        try:
            self.sizes = choose_sizes(program, self.given_sizes, crossing)
        except ReferenceEvalError as exc:
            self.disabled = True
            self.note(f"cannot run the {program.level} IR: {exc}; no pass is checked")
            return
        self.inputs = random_inputs(program.target, self.sizes, seed=self.seed)  # type: ignore[arg-type]
        if program.level != "loop":
            try:
                self.lengths = reduction_lengths(program.target, self.sizes)  # type: ignore[arg-type]
            except (ReferenceEvalError, KeyError, ValueError):
                self.lengths = {}
        try:
            self.last = self._evaluate(program)
            if self.last.engine == COMPILED:
                self._validate(program)
        except (_CannotRun, _Broken) as exc:
            if PLUGIN_MARK in str(exc):  # a plugin's numpy semantics are broken: nothing can be checked
                raise CheckSetupError(f"--check-semantics: {exc}") from None
            if isinstance(exc, _Broken):  # the input itself is wrong (out of bounds, garbage read): an error
                detail = f" ({exc.detail})" if exc.detail else ""
                raise CheckSetupError(
                    f"--check-semantics: the input {program.level} IR is wrong at sizes "
                    f"{format_sizes(self.sizes)}, before any pass runs: {exc}{detail}"
                ) from None
            self.last = None
            self.disabled = True
            self.note(
                f"cannot run the {program.level} IR at sizes {format_sizes(self.sizes)}: {exc}; no pass is checked"
            )

    def _validate(self, program: Program) -> None:
        """Raise `_Broken` if the first state, run as compiled C, is not determined by its inputs.

        An access out of bounds (the interpreter stops there) or a read of memory nothing wrote
        (the interpreter reads NaN where C reads garbage, so the two disagree) gives arbitrary
        results in C: every later comparison would blame a pass for the input's fault.
        """
        assert self.last is not None
        try:
            interpreted = _interpreted(program, self.inputs, self.sizes)
        except _CannotRun:
            return
        disagreement = self._disagreement(self.last, interpreted)
        if disagreement is not None:
            raise _Broken(
                f"its results are not determined by its inputs: {disagreement} (does it read memory nothing wrote?)"
            )

    def _disagreement(self, compiled: Run, interpreted: Run) -> str | None:
        """Where the two runs of one state differ beyond the doubled tolerance, as `name[i, j] = c vs i`."""
        for name, c_out in compiled.outputs.items():
            other = interpreted.outputs.get(name)
            if other is None or other.shape != c_out.shape:
                return f"output '{name}'"
            diff = first_difference(c_out, other, self._length(name), 2.0)
            if diff is not None:
                element = ", ".join(str(k) for k in diff.index)
                return f"{name}[{element}] = {format_value(diff.before)} in C, {format_value(diff.after)} interpreted"
        return None

    # ---- evaluation
    def _evaluate(self, program: Program) -> Run:
        if program.level in ("design", "tensorop"):
            return _guarded(_oracle, program, self.inputs, self.sizes)
        if self._compiler_available():
            try:
                module = program.target.parent_op()  # type: ignore[union-attr]
                assert isinstance(module, ModuleOp)
                return Run("loop", COMPILED, _guarded(run_compiled, module, self.inputs, self.sizes))
            except DiagnosticError as exc:
                first = str(exc.diagnostics[0].message).splitlines()[0] if exc.diagnostics else str(exc)
                self.note(f"the loop IR cannot be built as C ({first}); it runs in the interpreter instead")
            except _Broken as exc:
                raise self._second_opinion(program, exc) from None
            except _CannotRun as exc:
                self.note(f"{exc}; the loop IR runs in the interpreter instead")
        return _guarded(_interpreted, program, self.inputs, self.sizes)

    def _second_opinion(self, program: Program, crash: _Broken) -> _Broken:
        """`crash` (of the compiled kernel), with what the interpreter finds: usually the access out of bounds."""
        try:
            _interpreted(program, self.inputs, self.sizes)
        except _Broken as exc:
            return _Broken(str(crash), exc.op, f"the interpreter finds: {exc}")
        except Exception:  # a second opinion only: it must not hide the crash
            return crash
        return crash

    def _explain(self, program: Program, finding: Finding, run: Run) -> Finding:
        """A difference in compiled C, with the interpreter's second opinion: the access out of bounds
        that C ran past, or a note when the interpreter gets yet another result (a read of memory
        nothing wrote, which C fills with garbage and the interpreter with NaN)."""
        try:
            interpreted = _interpreted(program, self.inputs, self.sizes)
        except _Broken as exc:
            seen = finding.message.split(": ", 1)[-1]
            return self._broken(program, _Broken(str(exc), exc.op, f"compiled C runs past it, and gives {seen}"))
        except Exception:  # a second opinion only: the difference stands
            return finding
        disagreement = self._disagreement(run, interpreted)
        if disagreement is not None:
            finding.notes.append(
                f"compiled C and the interpreter disagree after the pass ({disagreement}): "
                "it may read memory it never wrote"
            )
        return finding

    def _compiler_available(self) -> bool:
        if self._use_c is not None:
            return self._use_c
        if self.engine == "interp":
            self._use_c = False
            return False
        from irkit.backends.build import find_compiler

        try:
            find_compiler()
            self._use_c = True
        except DiagnosticError as exc:
            reason = (exc.diagnostics[0].message if exc.diagnostics else str(exc)).split("; set CC")[0]
            if self.engine == "c":
                raise CheckSetupError(f"--check-semantics-engine=c needs a C compiler ({reason})") from None
            self.note(f"loop IR runs in the interpreter ({reason})")
            self._use_c = False
        return self._use_c

    # ---- judging
    def _broken(self, program: Program, exc: _Broken) -> Finding:
        notes = [] if exc.detail is None else [exc.detail]
        if self.last is not None:
            notes.append(f"before, the program ran: {self.last.engine} on {self.last.level} IR")
        return Finding(
            f"{_passes(self.pending)} broke the program: on the check's inputs, {exc} "
            f"(sizes {format_sizes(self.sizes)})",
            notes,
            exc.op,
        )

    def _length(self, tensor: str) -> int:
        if tensor in self.lengths:
            return self.lengths[tensor]
        return max(1, math.prod(self.sizes.values()))

    def _compare(self, program: Program, run: Run) -> Finding | None:
        assert self.last is not None
        before, after = self.last.outputs, run.outputs
        who = _passes(self.pending)
        if set(before) != set(after):
            return Finding(
                f"{who} changed the program's outputs: {', '.join(before) or 'none'} before, "
                f"{', '.join(after) or 'none'} after",
                op=program.target if program.target is not None and _located(program.target) else None,
            )
        factor = 1.0 if ORACLE in (self.last.engine, run.engine) else 2.0
        for name, b in before.items():
            a = after[name]
            if a.shape != b.shape or a.dtype != b.dtype:
                return Finding(
                    f"{who} changed output '{name}' from {b.dtype}{list(b.shape)} to {a.dtype}{list(a.shape)} "
                    f"(sizes {format_sizes(self.sizes)})",
                    op=_writer(program, name),
                )
            diff = first_difference(b, a, self._length(name), factor)
            if diff is not None:
                return self._mismatch(program, run, name, diff)
        return None

    def _mismatch(self, program: Program, run: Run, name: str, diff: Difference) -> Finding:
        assert self.last is not None
        element = ", ".join(str(k) for k in diff.index)
        message = (
            f"{_passes(self.pending)} changed the results: {name}[{element}] = {format_value(diff.before)} before, "
            f"{format_value(diff.after)} after (sizes {format_sizes(self.sizes)})"
        )
        limit = (
            "" if diff.atol == diff.rtol == 0 else f" (beyond atol {diff.atol:.3g} + rtol {diff.rtol:.3g} * |before|)"
        )
        notes = [
            f"{diff.n_bad} of {diff.n_total} elements of '{name}' differ{limit}",
            f"before: {self.last.engine} on {self.last.level} IR; after: {run.engine} on {run.level} IR; "
            f"random inputs, seed {self.seed}",
        ]
        hint = _poison_hint(diff.before, diff.after)
        if hint is not None:
            notes.append(hint)
        return Finding(message, notes, _writer(program, name))


def _guarded(fn, *args):
    """Call an evaluator; an unexpected exception (a bug in it, IR it never met) means it cannot run."""
    try:
        return fn(*args)
    except (_CannotRun, _Broken, DiagnosticError):
        raise
    except Exception as exc:
        raise _CannotRun(f"internal error while running it: {type(exc).__name__}: {exc}") from exc
