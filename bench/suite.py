"""The benchmarks: irkit's document and its peers for each kernel, checked, then timed alternately.

Every benchmark builds *contenders* that each run the same computation on
preallocated buffers -- irkit's compiled kernel (called through its C entry
point with the arguments prepared once, after one checked call) and each
peer.  A contender that cannot be built or run keeps its error, which the
report prints in its row; nothing is skipped silently.
"""

from __future__ import annotations

import datetime
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench import machine
from bench.timing import Plan, alternate, summary, time_call

DOCUMENTS = Path(__file__).resolve().parent / "documents"
SOFTMAX_REL_TARGET = 1e-5


@dataclass
class Contender:
    name: str
    call: Callable[[], object] | None = None
    output: Callable[[], np.ndarray] | None = None  # the result after a call, for the check
    prepare: Callable[[], None] | None = None  # restores inputs before the check call (in-place peers)
    error: str | None = None
    nbytes: int | None = None  # traffic, when it differs from the document's compulsory bytes
    note: str = ""


@dataclass
class Case:
    kernel: str
    size: str
    document: str
    sizes: dict[str, int]
    output: str  # irkit's output tensor to check
    reduction_length: int  # for the tolerance of the check
    peers: list[Callable[[dict[str, np.ndarray]], Contender]]  # built from irkit's arrays (inputs are shared)
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    rel_target: float | None = None  # also require max relative error <= this


def error_text(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if not isinstance(exc, ImportError | OSError) and "DiagnosticError" not in type(exc).__name__:
        text = f"{type(exc).__name__}: {text}"
    return " ".join(text.split())[:500]


# ---- irkit ------------------------------------------------------------------


def irkit_contender(case: Case) -> tuple[Contender, dict[str, np.ndarray], object]:
    """Compile the document, fill its buffers with the case's inputs; (contender, arrays, kernel)."""
    import irkit

    kernel = irkit.compile(DOCUMENTS / case.document, sizes=case.sizes)
    compiled = kernel.compiled
    sizes = kernel.resolve_sizes()
    arrays: dict[str, np.ndarray] = {}
    for t in compiled.tensor_args:
        arrays[t.name] = compiled.empty(t.name, sizes)
        if t.role in ("input", "inout"):  # an in-out tensor starts from the case's values
            arrays[t.name][...] = case.inputs[t.name]
    checked = {"done": False}

    def first_call() -> None:
        compiled(arrays, sizes)  # every argument checked once
        checked["done"] = True

    for sc in compiled.scalar_args:  # passed by value
        arrays[sc.name] = np.asarray(case.inputs[sc.name])
    args = compiled.arguments(arrays, sizes)
    fn = compiled.fn

    def call() -> None:
        if not checked["done"]:
            first_call()
        else:
            fn(*args)  # the kernel alone: the checks cost ~0.2 ms a call

    out = arrays[case.output]
    return Contender("irkit", call, lambda: out), arrays, kernel


# ---- peers ------------------------------------------------------------------


def numpy_gemm(arrays: dict[str, np.ndarray]) -> Contender:
    a, b = arrays["A"], arrays["B"]
    c = machine.aligned_empty((a.shape[0], b.shape[1]))
    return Contender("numpy matmul (OpenBLAS)", lambda: np.matmul(a, b, out=c), lambda: c)


def halide_blur(arrays: dict[str, np.ndarray]) -> Contender:
    try:
        import halide as hl
    except Exception as exc:  # noqa: BLE001
        return Contender(
            "Halide (classic schedule, JIT)", error=f"not available: {error_text(exc)} (pip install -e '.[bench]')"
        )
    inp_np = arrays["inp"]
    out_np = machine.aligned_empty((inp_np.shape[0] - 2, inp_np.shape[1] - 2))
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    blur_x, blur_y = hl.Func("blur_x"), hl.Func("blur_y")
    blur_x[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
    blur_y[x, y] = (blur_x[x, y] + blur_x[x, y + 1] + blur_x[x, y + 2]) / 3
    blur_y.tile(x, y, xi, yi, 256, 32).vectorize(xi, 8).parallel(y)
    blur_x.compute_at(blur_y, x).vectorize(x, 8)
    target = hl.get_jit_target_from_environment()
    blur_y.compile_jit(target)
    in_buf, out_buf = hl.Buffer(inp_np), hl.Buffer(out_np)  # numpy's last axis is Halide's x; no copies
    inp.set(in_buf)
    return Contender(
        "Halide (classic schedule, JIT)", lambda: blur_y.realize(out_buf), lambda: out_np, note=f"target {target}"
    )


def numpy_blur(arrays: dict[str, np.ndarray]) -> Contender:
    a = arrays["inp"]
    out = machine.aligned_empty((a.shape[0] - 2, a.shape[1] - 2))

    def call() -> None:
        bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
        np.divide(bx[:-2] + bx[1:-1] + bx[2:], 3, out=out)

    return Contender("numpy slicing", call, lambda: out)


def numpy_softmax(arrays: dict[str, np.ndarray]) -> Contender:
    x = arrays["X"]
    p = machine.aligned_empty(x.shape)

    def call() -> None:
        np.subtract(x, x.max(axis=1, keepdims=True), out=p)
        np.exp(p, out=p)
        np.divide(p, p.sum(axis=1, keepdims=True), out=p)

    return Contender("numpy (max-subtracted)", call, lambda: p)


def numpy_layernorm(arrays: dict[str, np.ndarray]) -> Contender:
    x, gamma, beta, eps = arrays["X"], arrays["gamma"], arrays["beta"], arrays["eps"]
    y = machine.aligned_empty(x.shape)
    centred = np.empty_like(x)
    scale = np.empty((x.shape[0], 1), np.float32)

    def call() -> None:
        np.subtract(x, x.mean(axis=1, keepdims=True), out=centred)
        np.multiply(centred, centred, out=y)
        np.add(y.mean(axis=1, keepdims=True), eps, out=scale)
        np.sqrt(scale, out=scale)
        np.divide(centred, scale, out=y)
        np.multiply(y, gamma, out=y)
        np.add(y, beta, out=y)

    return Contender("numpy (two passes, in place)", call, lambda: y)


def numpy_syrk(arrays: dict[str, np.ndarray]) -> Contender:
    a, alpha, c0 = arrays["A"], arrays["alpha"], arrays["C"].copy()
    c = machine.aligned_empty(c0.shape)
    square = np.empty_like(c)

    def call() -> None:
        np.matmul(a, a.T, out=square)  # BLAS sgemm: the whole square, twice the triangle's flops
        np.multiply(square, alpha, out=square)
        np.add(c0, np.tril(square), out=c)

    return Contender("numpy A @ A.T (OpenBLAS), lower triangle", call, lambda: c)


def numpy_jacobi(steps: int) -> Callable[[dict[str, np.ndarray]], Contender]:
    """`steps` Jacobi sweeps A -> B -> A on the interior, in place with slices (no temporaries);
    B's border is A's, which no sweep changes (the document's fixed border)."""

    def make(arrays: dict[str, np.ndarray]) -> Contender:
        a0 = arrays["A"].copy()
        a, b = machine.aligned_empty(a0.shape), machine.aligned_empty(a0.shape)

        def sweep(src: np.ndarray, dst: np.ndarray) -> None:
            t = dst[1:-1, 1:-1]
            np.add(src[1:-1, 1:-1], src[:-2, 1:-1], out=t)
            t += src[2:, 1:-1]
            t += src[1:-1, :-2]
            t += src[1:-1, 2:]
            t *= np.float32(0.2)

        def call() -> None:
            for _ in range(steps):
                sweep(a, b)
                sweep(b, a)

        def prepare() -> None:
            np.copyto(a, a0)
            np.copyto(b, a0)

        prepare()
        return Contender("numpy slices, in place", call, lambda: a, prepare=prepare)

    make.__name__ = "numpy_jacobi"
    return make


def numpy_causal_attention(arrays: dict[str, np.ndarray]) -> Contender:
    """The square of scores by BLAS, the mask, a row softmax and the product with V, in place."""
    q, k, v = arrays["Q"], arrays["K"], arrays["V"]
    s_len, d = q.shape
    scores = np.empty((s_len, s_len), np.float32)
    rowmax = np.empty((s_len, 1), np.float32)
    o = machine.aligned_empty((s_len, d))
    upper = np.triu(np.ones((s_len, s_len), bool), 1)
    scale = np.float32(1 / np.sqrt(d))

    def call() -> None:
        np.matmul(q, k.T, out=scores)  # OpenBLAS sgemm: the whole square, twice the triangle's work
        np.multiply(scores, scale, out=scores)
        np.putmask(scores, upper, -np.inf)
        np.max(scores, axis=1, keepdims=True, out=rowmax)
        np.subtract(scores, rowmax, out=scores)
        np.exp(scores, out=scores)
        np.divide(scores, scores.sum(axis=1, keepdims=True), out=scores)
        np.matmul(scores, v, out=o)

    return Contender("numpy (BLAS square, masked softmax)", call, lambda: o)


def numpy_cholesky(arrays: dict[str, np.ndarray]) -> Contender:
    """LAPACK's dpotrf through numpy (blocked, BLAS-3 updates); the result is compared as irkit
    leaves it: L in the lower triangle, A's upper triangle untouched."""
    a = arrays["A"].copy()
    factor = {"L": np.empty_like(a)}

    def call() -> None:
        factor["L"] = np.linalg.cholesky(a)

    return Contender("numpy linalg.cholesky (LAPACK)", call, lambda: np.tril(factor["L"]) + np.triu(a, 1))


def c_triad_inplace(arrays: dict[str, np.ndarray]) -> Contender:
    lib = machine.peers_library()
    a, b, c0 = arrays["a"], arrays["b"], arrays["c"]
    n = a.size
    c = machine.aligned_empty(n)
    c[...] = c0
    args = (n, a.ctypes.data, b.ctypes.data, c.ctypes.data)
    return Contender(
        "C STREAM triad, in place c = a*b + c",
        lambda: lib.bench_triad_inplace(*args),
        lambda: c,
        prepare=lambda: np.copyto(c, c0),
        nbytes=16 * n,
        note="16 B/element (3 loads + 1 store); counting c once (12 B) gives 3/4 of the GB/s",
    )


def c_triad4(arrays: dict[str, np.ndarray]) -> Contender:
    lib = machine.peers_library()
    a, b, c = arrays["a"], arrays["b"], arrays["c"]
    n = a.size
    d = machine.aligned_empty(n)
    args = (n, a.ctypes.data, b.ctypes.data, c.ctypes.data, d.ctypes.data)
    return Contender(
        "C STREAM triad, 4 arrays d = a*b + c",
        lambda: lib.bench_triad4(*args),
        lambda: d,
        nbytes=16 * n,
        note="16 B/element, like irkit's",
    )


def numpy_im2col(arrays: dict[str, np.ndarray]) -> Contender:
    from numpy.lib.stride_tricks import sliding_window_view

    img, wt = arrays["I"], arrays["Wt"]
    n, c, h, w = img.shape
    f = wt.shape[0]
    padded = np.zeros((c, h + 2, w + 2), np.float32)
    cols = np.empty((c * 9, h * w), np.float32)
    cols5 = cols.reshape(c, 3, 3, h, w)
    wmat = np.ascontiguousarray(wt.reshape(f, c * 9))
    out = machine.aligned_empty((n, f, h, w))

    def call() -> None:
        for i in range(n):
            padded[:, 1:-1, 1:-1] = img[i]  # padding 1
            windows = sliding_window_view(padded, (3, 3), axis=(1, 2))  # (c, h, w, 3, 3), a view
            np.copyto(cols5, windows.transpose(0, 3, 4, 1, 2))  # im2col: (c*3*3, h*w)
            np.matmul(wmat, cols, out=out[i].reshape(f, h * w))

    return Contender("numpy im2col + matmul", call, lambda: out, note="time includes padding and im2col")


# ---- the cases --------------------------------------------------------------


def cases(names: list[str], quick: bool, rng: np.random.Generator) -> list[Case]:
    def uniform(*shape: int) -> np.ndarray:
        return rng.random(shape, dtype=np.float32)

    out: list[Case] = []
    if "gemm" in names:
        for n in (64, 96) if quick else (1024, 2048):
            case = Case("gemm", f"{n}x{n}x{n}", "gemm.design", {"M": n, "N": n, "K": n}, "C", n, [numpy_gemm])
            case.inputs = {"A": uniform(n, n), "B": uniform(n, n)}
            out.append(case)
    if "blur" in names:
        s = 256 if quick else 4096
        case = Case("blur 3x3", f"{s}x{s}", "blur.design", {"H": s, "W": s}, "out", 9, [halide_blur, numpy_blur])
        case.inputs = {"inp": uniform(s + 2, s + 2)}
        out.append(case)
    if "softmax" in names:
        m, n = (64, 256) if quick else (4096, 1024)
        case = Case("softmax (rows)", f"{m}x{n}", "softmax.design", {"M": m, "N": n}, "P", n, [numpy_softmax])
        case.inputs = {"X": (rng.standard_normal((m, n), dtype=np.float32) * 4)}
        case.rel_target = SOFTMAX_REL_TARGET
        out.append(case)
    if "triad" in names:
        n = 1 << (16 if quick else 26)
        case = Case("triad", f"2^{n.bit_length() - 1}", "triad.design", {"N": n}, "d", 1, [c_triad_inplace, c_triad4])
        case.inputs = {"a": uniform(n), "b": uniform(n), "c": uniform(n)}
        out.append(case)
    if "conv2d" in names:
        n, c, f, h, w = (1, 8, 8, 16, 16) if quick else (1, 64, 64, 56, 56)
        sizes = {"N": n, "C": c, "F": f, "H": h, "W": w}
        case = Case("conv2d 3x3", f"{c}->{f}, {h}x{w}", "conv2d.design", sizes, "O", c * 9, [numpy_im2col])
        case.inputs = {"I": uniform(n, c, h, w), "Wt": uniform(f, c, 3, 3)}
        out.append(case)
    if "layernorm" in names:
        m, n = (64, 256) if quick else (4096, 1024)
        case = Case("layernorm (rows)", f"{m}x{n}", "layernorm.design", {"M": m, "N": n}, "Y", 2 * n + 1,
                    [numpy_layernorm])  # fmt: skip
        case.inputs = {"X": rng.standard_normal((m, n), dtype=np.float32), "gamma": uniform(n), "beta": uniform(n),
                       "eps": np.asarray(1e-5, np.float32)}  # fmt: skip
        out.append(case)
    if "syrk" in names:
        n, k = (64, 48) if quick else (1024, 1024)
        case = Case("syrk (lower triangle)", f"{n}x{k}", "syrk.design", {"N": n, "K": k}, "C", k, [numpy_syrk])
        case.inputs = {"A": uniform(n, k), "C": uniform(n, n), "alpha": np.asarray(0.5, np.float32)}
        out.append(case)
    if "jacobi_2d" in names:
        steps, n = (4, 64) if quick else (100, 1024)
        case = Case("jacobi_2d (fixed border)", f"{steps} x {n}^2", "jacobi_2d.design", {"T": steps, "N": n}, "A",
                    2 * steps, [numpy_jacobi(steps)])  # fmt: skip
        case.inputs = {"A": uniform(n, n)}
        out.append(case)
    if "causal_attention" in names:
        s_len, d = (64, 16) if quick else (2048, 64)
        case = Case("causal_attention (one head)", f"S={s_len}, D={d}", "causal_attention.design",
                    {"S": s_len, "D": d}, "O", 2 * s_len + d, [numpy_causal_attention])  # fmt: skip
        case.inputs = {k: rng.standard_normal((s_len, d), dtype=np.float32) for k in ("Q", "K", "V")}
        out.append(case)
    if "cholesky" in names:
        n = 96 if quick else 1000
        case = Case("cholesky (in place)", f"N={n}", "cholesky.design", {"N": n}, "A", n, [numpy_cholesky])
        x = uniform(n, n).astype(np.float64)
        case.inputs = {"A": (x + x.T) / 2 + n * np.eye(n)}  # symmetric, diagonally dominant: positive definite
        out.append(case)
    return out


# ---- running a case ---------------------------------------------------------


def check(actual: np.ndarray, expected: np.ndarray, reduction_length: int, rel_target: float | None) -> dict:
    from irkit.oracle import compare

    res = compare(actual, expected, np.float32, reduction_length)
    with np.errstate(all="ignore"):
        x, y = actual.astype(np.float64), expected.astype(np.float64)
        nz = y != 0
        max_rel = float(np.max(np.abs(x - y)[nz] / np.abs(y[nz]), initial=0.0))
    ok = bool(res.ok)
    message = "" if ok else f"{int(res.n_bad)} elements outside |err| <= {res.atol:.3g} + {res.rtol:.3g}*|expected|"
    if rel_target is not None and not max_rel <= rel_target:
        ok = False
        message = (message + "; " if message else "") + f"max relative error {max_rel:.3g} > target {rel_target:g}"
    return {
        "ok": ok,
        "max_abs": float(res.max_abs),
        "max_rel": max_rel,
        "atol": float(res.atol),
        "rtol": float(res.rtol),
        "rel_target": rel_target,
        "message": message,
    }


def run_case(case: Case, plan: Plan, log: Callable[[str], None]) -> dict:
    from irkit.metrics import work

    row: dict = {
        "kernel": case.kernel,
        "size": case.size,
        "sizes": case.sizes,
        "document": f"bench/documents/{case.document}",
    }
    # irkit
    try:
        irk, arrays, kernel = irkit_contender(case)
        amount = work(kernel.levels["design"], kernel.resolve_sizes())
        row["work"] = {
            "flops": amount.flops,
            "bytes": amount.bytes,
            "bound": "compute" if amount.intensity >= 1 else "memory",
        }
        from irkit.kernel_abi import find_kernels

        (func,) = find_kernels(kernel.levels["loop"])
        row["declared_peak"] = machine.declared_peak(func.attributes.get("irkit.hardware"))
    except Exception as exc:  # noqa: BLE001
        log(f"  irkit FAILED: {error_text(exc)}")
        irk, amount = Contender("irkit", error=error_text(exc)), None
        arrays = {k: v.copy() for k, v in case.inputs.items()}
    contenders = [irk]
    for factory in case.peers:
        try:
            contenders.append(factory(arrays))
        except Exception as exc:  # noqa: BLE001
            contenders.append(Contender(getattr(factory, "__name__", "peer"), error=error_text(exc)))
            traceback.print_exc()
    # one checked call each (also the first warm-up)
    first: dict[int, float] = {}
    for i, con in enumerate(contenders):
        if con.error is None:
            try:
                if con.prepare:
                    con.prepare()
                first[i] = time_call(con.call)
            except Exception as exc:  # noqa: BLE001
                con.error = error_text(exc)
                log(f"  {con.name} FAILED: {con.error}")
    checks: dict[int, dict] = {}
    if irk.error is None:
        for i, con in enumerate(contenders[1:], start=1):
            if con.error is None:
                checks[i] = check(irk.output(), con.output(), case.reduction_length, case.rel_target)
                if not checks[i]["ok"]:
                    log(f"  MISMATCH irkit vs {con.name}: {checks[i]['message']}")
    # alternated timing
    live = [i for i, con in enumerate(contenders) if con.error is None]
    times: dict[int, list[float]] = {}
    if live:
        try:
            timed = alternate([contenders[i].call for i in live], plan, [first[i] for i in live])
            times = dict(zip(live, timed))
        except Exception as exc:  # noqa: BLE001
            for i in live:
                contenders[i].error = f"failed while timing: {error_text(exc)}"

    def rate(i: int, seconds: float) -> tuple[float | None, str]:
        if amount is None:
            return None, ""
        if row["work"]["bound"] == "compute":
            return amount.flops / seconds / 1e9, "GFLOP/s"
        nbytes = contenders[i].nbytes or amount.bytes
        return nbytes / seconds / 1e9, "GB/s"

    def entry(i: int) -> dict:
        con = contenders[i]
        e: dict = {"name": con.name, "error": con.error, "note": con.note}
        if i in times:
            e |= summary(times[i])
            e["rate"], e["rate_unit"] = rate(i, e["median_s"])
        return e

    row["irkit"] = entry(0)
    row["peers"] = []
    for i in range(1, len(contenders)):
        e = entry(i)
        e["check"] = checks.get(i)
        if "median_s" in e and "median_s" in row["irkit"]:
            e["ratio"] = e["median_s"] / row["irkit"]["median_s"]
        row["peers"].append(e)
    return row


def add_pct_of_peak(row: dict, limits: dict) -> None:
    """irkit's rate as a percentage of the FMA peak (compute-bound) or the triad bandwidth (memory-bound)."""
    irk = row["irkit"]
    if irk.get("rate") is None:
        return
    if row["work"]["bound"] == "compute":
        irk["pct_of_peak"] = 100 * irk["rate"] / (limits["fma_peak"]["flops_per_s"] / 1e9)
        irk["peak_basis"] = "FP32 FMA peak"
    else:
        irk["pct_of_peak"] = 100 * irk["rate"] / (limits["triad"]["bytes_per_s"] / 1e9)
        irk["peak_basis"] = "STREAM triad bandwidth"


def probe(args, before: dict | None = None) -> dict:
    """The FMA peak and the triad bandwidth; probed before and after the benchmarks, the best is kept."""
    print(("re-" if before else "") + "probing the FP32 FMA peak and the STREAM triad bandwidth ...")
    seconds, runs = (0.01, 2) if args.quick else (0.1, 10)
    fma = machine.measure_fma_peak(args.threads, seconds, runs)
    triad = machine.measure_triad_bandwidth(1 << (20 if args.quick else 26), 2 if args.quick else 5)
    if before:
        fma = max(fma, before["fma_peak"], key=lambda p: p["flops_per_s"])
        triad = max(triad, before["triad"], key=lambda p: p["bytes_per_s"])
    print(
        f"  FMA peak {fma['flops_per_s'] / 1e9:.1f} GFLOP/s ({fma['simd_lanes']} f32 lanes, "
        f"~{fma['implied_ghz']:.2f} GHz), triad {triad['bytes_per_s'] / 1e9:.1f} GB/s"
    )
    return {"fma_peak": fma, "triad": triad}


def run_all(args, command: str) -> dict:
    started = datetime.datetime.now().astimezone()
    snap = machine.cpu_snapshot()
    log = print
    limits_ctx = None
    try:
        from threadpoolctl import threadpool_limits

        limits_ctx = threadpool_limits(limits=args.threads)
    except ImportError:
        pass
    desc = machine.describe(args.threads)
    log(f"machine: {desc['cpu']}, {desc['cores']} cores, {desc['simd']}, {desc['compiler']}")
    limits = probe(args)
    plan = Plan(args.repeat, args.min_time, args.budget, args.settle)
    rows = []
    rng = np.random.default_rng(0)
    for case in cases(args.only, args.quick, rng):
        log(f"{case.kernel} {case.size} ...")
        t0, before = time.perf_counter(), machine.cpu_snapshot()
        row = run_case(case, plan, log)
        row["wall_s"] = time.perf_counter() - t0
        row["load"] = machine.other_load(before, machine.cpu_snapshot())
        for p in [row["irkit"], *row["peers"]]:
            if "median_s" in p:
                log(f"  {p['name']}: median {p['median_s'] * 1e3:.3f} ms over {p['runs']} runs")
        rows.append(row)
        case.inputs.clear()
    del limits_ctx
    load = machine.other_load(snap, machine.cpu_snapshot())
    limits = probe(args, limits)
    for row in rows:
        add_pct_of_peak(row, limits)
    return {
        "command": command,
        "date": started.isoformat(timespec="seconds"),
        "options": {
            "quick": args.quick,
            "only": args.only,
            "repeat": args.repeat,
            "min_time": args.min_time,
            "budget": args.budget,
            "settle": args.settle,
            "threads": args.threads,
        },
        "machine": desc,
        "limits": limits,
        "load": load,
        "benchmarks": rows,
    }
