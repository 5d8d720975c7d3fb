"""`irkit run FILE`: compile a document, run it, check it against numpy, time it.

    irkit run examples/gemm.design --check --bench
    irkit run doc.design --size M=2048 --size N=512 --inputs in.npz --outputs out.npz
    irkit run doc.design --emit c          # print the generated C and stop
    irkit run doc.design --check --json    # one JSON object for scripts

Inputs come from `--inputs` (an `.npz` keyed by tensor name, arrays in the
tensors' logical shapes; any memory layout) or are random (`--seed`).
`--check` compares every output with the numpy oracle, with a tolerance
set by the dtype and the reduction length, and fails (exit 1) on a
mismatch.  `--bench` times the kernel alone: warm-up runs, then repeated
runs (at least `--repeat`, and at least `--min-time` seconds), reporting
the median, the spread and the rate (GFLOP/s, or GB/s for memory-bound
kernels).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.progress import phase
from irkit.sizes import SizeError

# Warm-up before timing: the first call pays for page faults and thread start;
# a second warm-up run is added when a call is short enough to be cheap.
WARMUP_SECONDS = 0.2


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="compile a document to C, run it, check and time it")
    p.add_argument("file", metavar="FILE", help="the .design document ('-' = stdin)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE", help="set a size (repeatable)")
    p.add_argument("--check", action="store_true", help="compare the outputs with the numpy oracle")
    p.add_argument("--bench", action="store_true", help="time the kernel (median of repeated runs)")
    p.add_argument("--inputs", metavar="IN.npz", help="input arrays by tensor name (default: random)")
    p.add_argument("--outputs", metavar="OUT.npz", help="save the outputs by tensor name")
    p.add_argument("--emit", choices=("c", "mlir"), help="print the generated C or the loop IR and stop")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--repeat", type=int, default=3, help="least number of timed runs (default 3)")
    p.add_argument("--min-time", type=float, default=1.0, help="least total timed seconds (default 1.0)")
    p.add_argument("--cflags", help="C compiler flags replacing the defaults, e.g. '-O2 -fopenmp'")
    p.add_argument(
        "--march",
        metavar="ISA",
        help="build for this ISA instead of the host's (-march=ISA in irkit's default flags), e.g. x86-64-v3 "
        "for AVX2 without AVX-512",
    )


def parse_sizes(items: list[str]) -> dict[str, int]:
    from irkit.tools.opt import UsageError

    sizes: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--size expects NAME=VALUE, got '{item}'")
        try:
            sizes[name] = int(value)
        except ValueError:
            raise UsageError(f"--size {name}: '{value}' is not an integer") from None
    return sizes


def size_usage_error(exc: DiagnosticError):
    """A `--size` value that does not fit the document: a usage error (exit 2), one line a problem."""
    from irkit.tools.opt import UsageError

    messages = [diag.message.split(": ", 1)[-1] if diag.message.startswith("kernel '") else diag.message for diag in exc.diagnostics]
    return UsageError("--size: " + "; ".join(messages))


def load_inputs(path: str, kernel) -> dict[str, np.ndarray]:
    """Arrays of an `.npz` by tensor name; every input must be there, nothing else."""
    try:
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise DiagnosticError([Diagnostic("error", f"cannot read inputs from {path}: {exc}", path)]) from None
    inputs = kernel.inputs()
    problems = [f"'{k}' is not an input tensor (inputs: {', '.join(inputs)})" for k in arrays if k not in inputs]
    problems += [f"no array for input '{k}'" for k in inputs if k not in arrays]
    if problems:
        raise DiagnosticError([Diagnostic("error", f"{path}: {p}", path) for p in problems])
    return arrays


def time_kernel(kernel, inputs: dict[str, np.ndarray], sizes: dict[str, int], repeat: int, min_time: float) -> list[float]:
    """Seconds per call, after warm-up, with buffers allocated once.  After one checked call the
    kernel is called bare (its C function with the arguments ready, as `irkit validate` and the
    cost model's call_overhead count it): the checked call's argument work took 37 us of a 54 us
    kernel."""
    from irkit.validate.measure import prepare

    call = prepare(kernel, sizes, inputs).call  # (the call keeps the arrays its pointers point to)
    t0 = time.perf_counter()
    call()
    if time.perf_counter() - t0 < WARMUP_SECONDS:
        call()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeat or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
        if len(times) >= 10_000:
            break
    return times


def run(args: argparse.Namespace) -> int:
    from irkit.api import compile
    from irkit.backends.build import march_cflags
    from irkit.metrics import work
    from irkit.oracle import ReferenceEvalError, compare, reduction_lengths
    from irkit.tools.opt import EXIT_INPUT, EXIT_OK, UsageError, read_input

    sizes = parse_sizes(args.size)
    if args.cflags is not None and args.march is not None:
        raise UsageError("--cflags and --march both set the compiler flags; give one (--cflags '... -march=ISA')")
    try:
        cflags = args.cflags.split() if args.cflags is not None else march_cflags(args.march)
    except DiagnosticError as exc:
        raise UsageError(exc.diagnostics[0].message) from None
    text, name = read_input(args.file)  # a missing file is reported before anything else; '-' is stdin
    try:
        kernel = compile(text, sizes=sizes, cflags=cflags, name=name, build=args.emit is None)
    except SizeError as exc:
        raise size_usage_error(exc) from None
    if args.emit == "c":
        sys.stdout.write(kernel.c_source)
        return EXIT_OK
    if args.emit == "mlir":
        sys.stdout.write(kernel.ir("loop") + "\n")
        return EXIT_OK
    resolved = kernel.resolve_sizes()
    with phase("inputs"):
        inputs = load_inputs(args.inputs, kernel) if args.inputs else kernel.random_inputs(seed=args.seed)
    with phase("run"):
        outputs = kernel(**inputs)
    report: dict = {
        "document": name,
        "kernel": kernel.name,
        "sizes": resolved,
        "threads": int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)),
        "inputs": "file " + args.inputs if args.inputs else f"random (seed {args.seed})",
        "outputs": {name: list(arr.shape) for name, arr in outputs.items()},
    }
    ok = True
    if args.check:
        try:
            with phase("numpy reference"):
                expected = kernel.reference(inputs)
        except ReferenceEvalError as exc:  # the document's (or a plugin's) semantics, not a bug of irkit
            raise DiagnosticError(
                [Diagnostic("error", f"--check: the numpy reference cannot evaluate the document: {exc}", args.file)]
            ) from None
        lengths = reduction_lengths(kernel.levels["design"], resolved)
        checks = {}
        for name, arr in outputs.items():
            result = compare(arr, expected[name], arr.dtype, lengths.get(name, 1))
            checks[name] = comparison_dict(result) | {
                "reduction_length": lengths.get(name, 1),
                "tolerance_used": tolerance_used(arr, expected[name], result.atol, result.rtol),
                "reference_non_finite": non_finite(expected[name]),
            }
            ok = ok and checks[name]["ok"]
        report["check"] = {"outputs": checks, "ok": ok}
    if args.bench:
        times = time_kernel(kernel, inputs, resolved, args.repeat, args.min_time)
        amount = work(kernel.levels["design"], resolved)
        median = statistics.median(times)
        rate, unit = amount.rate(median)
        q = statistics.quantiles(times, n=4) if len(times) >= 2 else [median, median, median]
        report["bench"] = {
            "runs": len(times),
            "median_s": median,
            "min_s": min(times),
            "max_s": max(times),
            "iqr_s": q[2] - q[0],
            "flops": amount.flops,
            "bytes": amount.bytes,
            "rate": rate,
            "rate_unit": unit,
        }
    if args.outputs:
        np.savez(args.outputs, **outputs)
        report["saved"] = args.outputs
    sys.stdout.write(json.dumps(report) + "\n" if args.json else format_report(report))
    return EXIT_OK if ok else EXIT_INPUT


def tolerance_used(actual: np.ndarray, expected: np.ndarray, atol: float, rtol: float, chunk: int = 1 << 22) -> float | None:
    """The largest |error| / (atol + rtol * |expected|) over the elements: what the check judged
    (1 is the limit).  None for an exact comparison (integers: no tolerance)."""
    if atol <= 0 and rtol <= 0:
        return None
    a, e = np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1)
    worst = 0.0
    with np.errstate(all="ignore"):
        for i in range(0, e.size, chunk):
            y = e[i : i + chunk].astype(np.float64)
            ratio = np.abs(a[i : i + chunk].astype(np.float64) - y) / (atol + rtol * np.abs(y))
            ratio = ratio[np.isfinite(ratio)]
            worst = max(worst, float(ratio.max(initial=0.0)))
    return worst


def non_finite(expected: np.ndarray) -> dict | None:
    """Where the reference itself gives NaN or an infinity: a check that agrees there shows little
    (both sides computing garbage alike), so the report says so.  None when every element is finite."""
    arr = np.asarray(expected)
    if arr.dtype.kind != "f":
        return None
    bad = ~np.isfinite(arr)
    count = int(bad.sum())
    if not count:
        return None
    first = np.unravel_index(int(np.flatnonzero(bad.reshape(-1))[0]), arr.shape)
    return {"count": count, "first_index": [int(i) for i in first], "value": float(arr[first])}


def comparison_dict(result) -> dict:
    """A `reference.Comparison` as plain JSON values."""
    return {
        "ok": bool(result.ok),
        "max_abs": float(result.max_abs),
        "max_rel": float(result.max_rel),
        "atol": float(result.atol),
        "rtol": float(result.rtol),
        "bad_elements": int(result.n_bad),
        "worst_index": None if result.worst is None else [int(i) for i in result.worst],
        "actual": None if result.actual_at_worst is None else float(result.actual_at_worst),
        "expected": None if result.expected_at_worst is None else float(result.expected_at_worst),
    }


def format_report(r: dict) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
    lines = [f"{r['document']}: kernel {r['kernel']} at {sizes} ({r['threads']} threads, inputs {r['inputs']})"]
    if "check" in r:
        c = r["check"]
        for name, res in c["outputs"].items():
            verdict = "ok" if res["ok"] else "MISMATCH"
            used = res.get("tolerance_used")
            if used is None:
                judged = "every element equal" if res["ok"] else "elements differ"
            else:
                judged = f"worst element at {used:.0%} of its tolerance" if used <= 1 else f"worst element {used:.3g}x its tolerance"
            lines.append(
                f"  check {name}: {verdict}  {judged}: |err| <= {res['atol']:.3g} + {res['rtol']:.3g}*|expected| "
                f"(reduction length {res['reduction_length']}); max abs err {res['max_abs']:.3g}"
            )
            odd = res.get("reference_non_finite")
            if odd:
                lines.append(
                    f"    warning: the reference itself gives {odd['value']} at {name}{odd['first_index']} and "
                    f"{odd['count'] - 1} more elements; agreeing there shows little.  Are the inputs in the kernel's "
                    "domain (a square root's, a division's)?  Give them with --inputs, or state them "
                    "(assume { positive_definite(A) })"
                )
            if not res["ok"] and res["worst_index"] is not None:
                lines.append(
                    f"    {res['bad_elements']} elements off; worst {name}{res['worst_index']}: "
                    f"got {res['actual']:.6g}, expected {res['expected']:.6g}"
                )
    if "bench" in r:
        b = r["bench"]
        lines.append(
            f"  time: median {b['median_s'] * 1e3:.3f} ms over {b['runs']} runs "
            f"(min {b['min_s'] * 1e3:.3f}, max {b['max_s'] * 1e3:.3f}, IQR {b['iqr_s'] * 1e3:.3f} ms); "
            f"{b['rate']:.2f} {b['rate_unit']}"
        )
    if "saved" in r:
        lines.append(f"  outputs saved to {r['saved']}")
    return "\n".join(lines) + "\n"
