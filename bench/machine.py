"""What the benchmarks ran on, and the machine's measured limits.

- Description: CPU model, cores and SIMD flags (/proc/cpuinfo), the C
  compiler and irkit's flags, numpy and the BLAS threadpoolctl reports
  (its kernel, e.g. Haswell or SkylakeX), Halide's version and JIT target.
- Probes (bench/peers.c, built with irkit's flags): the FP32 FMA peak at the
  benchmark's thread count (independent FMA chains on every thread; best of
  several runs) and the STREAM-style triad bandwidth (c = a*b + c in place,
  arrays far larger than the caches; best of several runs).  The peak and the
  bandwidth are the denominators of "irkit % of peak".
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import platform
import subprocess
from functools import cache
from pathlib import Path

import numpy as np

from bench.blas_env import OVERRIDES, removed

HERE = Path(__file__).resolve().parent
FLOAT_P = ctypes.POINTER(ctypes.c_float)


@cache
def peers_library() -> ctypes.CDLL:
    """bench/peers.c, built and loaded through irkit's build module (same compiler and flags)."""
    from irkit.backends.build import build_shared, load_library

    lib = load_library(build_shared((HERE / "peers.c").read_text()))
    lib.bench_triad_inplace.restype = None
    lib.bench_triad_inplace.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.bench_triad4.restype = None
    lib.bench_triad4.argtypes = [ctypes.c_int64, *[ctypes.c_void_p] * 4]
    lib.bench_fma_peak.restype = ctypes.c_double
    lib.bench_fma_peak.argtypes = [ctypes.c_int64, ctypes.c_int, FLOAT_P]
    lib.bench_simd_lanes.restype = ctypes.c_int
    lib.bench_simd_lanes.argtypes = []
    return lib


def aligned_empty(shape: tuple[int, ...] | int, dtype=np.float32, align: int = 64) -> np.ndarray:
    from irkit.backends.runner import empty_tensor

    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    name = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.int32): "i32"}[np.dtype(dtype)]
    return empty_tensor(name, shape, align=align)


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                key = key.strip()
                if sep and key not in info:
                    info[key] = value.strip()
    except OSError:
        pass
    return info


def _git_commit() -> str:
    root = HERE.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "irkit"], cwd=root, capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + (" (irkit/ has uncommitted changes)" if dirty.stdout.strip() else "")


def blas_info() -> dict:
    try:
        from threadpoolctl import threadpool_info
    except ImportError as exc:
        return {"error": f"threadpoolctl not installed ({exc}); pip install -e '.[bench]'"}
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not blas:
        return {"error": "threadpoolctl found no BLAS library"}
    b = blas[0]
    return {k: b.get(k) for k in ("internal_api", "version", "architecture", "num_threads", "threading_layer")}


def halide_info() -> dict:
    try:
        import halide as hl
    except Exception as exc:  # noqa: BLE001 - any import failure is reported, not raised
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"version": importlib.metadata.version("halide"), "target": str(hl.get_jit_target_from_environment())}


def describe(threads: int) -> dict:
    from irkit.backends.build import compiler_version, default_cflags, find_compiler

    cpu = _cpuinfo()
    flags = set(cpu.get("flags", "").split())
    simd = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE/other"
    try:
        cc = find_compiler()
        compiler = compiler_version(cc)
    except Exception as exc:  # noqa: BLE001
        compiler = f"unavailable: {exc}"
    return {
        "cpu": cpu.get("model name", platform.processor() or "unknown"),
        "cpu_vendor": cpu.get("vendor_id", ""),
        "cores": os.cpu_count(),
        "simd": simd,
        "threads": threads,
        "compiler": compiler,
        "cflags": " ".join(default_cflags()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas_info(),
        "halide": halide_info(),
        "irkit_commit": _git_commit(),
        "openblas_env": {k: os.environ[k] for k in OVERRIDES if k in os.environ},
        "openblas_env_removed": removed(),
    }


def _fma_rate(threads: int, seconds: float, runs: int) -> float:
    """Best FLOP/s of `runs` runs of independent FMA chains on `threads` threads, each about `seconds` long."""
    import time

    lib = peers_library()
    sink = ctypes.c_float(0.0)
    iters = 100_000
    while True:  # grow to about `seconds` per run (this also warms up the threads and the clock)
        t0 = time.perf_counter()
        lib.bench_fma_peak(iters, threads, ctypes.byref(sink))
        dt = time.perf_counter() - t0
        if dt >= seconds / 2 or iters > 1 << 34:
            break
        iters *= 2
    best = 0.0
    for _ in range(runs):
        t0 = time.perf_counter()
        flops = lib.bench_fma_peak(iters, threads, ctypes.byref(sink))
        best = max(best, flops / (time.perf_counter() - t0))
    return best


def measure_fma_peak(threads: int, seconds: float = 0.1, runs: int = 10) -> dict:
    """The FP32 FMA peak of `threads` threads, in FLOP/s.

    The larger of the all-threads rate and `threads` x the one-thread rate:
    on a shared host another process often holds a core for a while, which
    the one-thread run is less exposed to.  Also the clock it implies,
    assuming two FMA units per core.
    """
    lanes = peers_library().bench_simd_lanes()
    together = _fma_rate(threads, seconds, runs)
    single = _fma_rate(1, seconds, runs)
    best = max(together, threads * single)
    return {
        "flops_per_s": best,
        "all_threads_flops_per_s": together,
        "one_thread_flops_per_s": single,
        "implied_ghz": single / (lanes * 2 * 2) / 1e9,
        "simd_lanes": lanes,
        "runs": runs,
    }


def measure_triad_bandwidth(n: int, runs: int = 5) -> dict:
    """In-place triad c = a*b + c over n floats; bytes counted STREAM's way: 3 reads + 1 write = 16 B/element."""
    import time

    lib = peers_library()
    a, b, c = (aligned_empty(n) for _ in range(3))
    a.fill(0.5)
    b.fill(0.5)
    c.fill(0.0)
    lib.bench_triad_inplace(n, a.ctypes.data, b.ctypes.data, c.ctypes.data)  # first touch
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        lib.bench_triad_inplace(n, a.ctypes.data, b.ctypes.data, c.ctypes.data)
        best = min(best, time.perf_counter() - t0)
    return {"bytes_per_s": 16 * n / best, "elements": n, "best_s": best, "runs": runs}


def cpu_snapshot() -> dict:
    """Busy CPU seconds of the whole machine (/proc/stat) and of this process, now."""
    import resource
    import time

    busy = None
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]  # guest time is already in user
        ticks = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields) - fields[3] - fields[4]) / ticks  # all but idle and iowait (steal counts as busy)
    except (OSError, ValueError, IndexError):
        pass
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    mine = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    return {"wall": time.perf_counter(), "machine_busy_s": busy, "own_s": mine, "loadavg": os.getloadavg()}


def other_load(start: dict, end: dict) -> dict:
    """How busy other processes kept the machine between two snapshots, in cores (0 = quiet)."""
    wall = end["wall"] - start["wall"]
    out = {"wall_s": wall, "loadavg_start": start["loadavg"], "loadavg_end": end["loadavg"]}
    if start["machine_busy_s"] is not None and end["machine_busy_s"] is not None and wall > 0:
        others = (end["machine_busy_s"] - start["machine_busy_s"]) - (end["own_s"] - start["own_s"])
        out["other_cores"] = max(0.0, others / wall)
    return out


def declared_peak(hardware) -> dict | None:
    """cores x SIMD lanes (f32) x 2 FMA units x 2 flops x frequency, from a kernel's `irkit.hardware` attribute."""
    from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, StringAttr

    name = "inline"
    if isinstance(hardware, StringAttr):
        name = hardware.data
        hardware = _named_hardware(name)
    if not isinstance(hardware, DictionaryAttr):
        return None

    def num(key: str) -> float | None:
        v = hardware.data.get(key)
        return float(v.value.data) if isinstance(v, IntegerAttr | FloatAttr) else None

    cores, simd, freq = num("cores"), num("simd"), num("frequency")
    if None in (cores, simd, freq):
        return None
    lanes = simd / 32
    return {
        "name": name,
        "cores": cores,
        "simd_bits": simd,
        "frequency_hz": freq,
        "flops_per_s": cores * lanes * 2 * 2 * freq,
    }


@cache
def _named_hardware(name: str):
    from irkit.frontend import parse_design
    from irkit.hardware_files import find_hardware
    from irkit.passes.lower_design import hardware_attr

    path = find_hardware(name, str(HERE / "documents" / "x.design"))
    if path is None:
        return None
    module = parse_design(path.read_text(), str(path))
    return hardware_attr(list(module.body.block.ops))
