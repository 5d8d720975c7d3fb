"""Run the benchmarks against numpy's own BLAS kernel, not one an environment variable forces.

Some machines set `OPENBLAS_CORETYPE` (e.g. `Haswell` on an AVX-512 host) or `OPENBLAS_L2_SIZE`:
OpenBLAS then runs a slower kernel than the host's (on the Zen 5 guest: sgemm 2048 in 76.7 ms with
`Haswell` forced, 43.0 ms with its own `SkylakeX` kernel).  A peer hobbled that way would flatter
irkit, so the benchmark commands re-run themselves without those variables before OpenBLAS is loaded
(it reads them once, when numpy is imported).  `IRKIT_BENCH_BLAS_ENV=keep` keeps them; the report
says which overrides were removed either way.
"""

from __future__ import annotations

import os
import sys

OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
REMOVED = "IRKIT_BENCH_BLAS_REMOVED"  # what the re-run removed, for the report: "NAME=value;..."


def native_blas(module: str) -> None:
    """Re-execute `python -m module ARGS` without the OpenBLAS overrides (no return), unless none is
    set or the user keeps them."""
    found = {k: os.environ[k] for k in OVERRIDES if k in os.environ}
    if not found or os.environ.get("IRKIT_BENCH_BLAS_ENV") == "keep":
        return
    env = {k: v for k, v in os.environ.items() if k not in OVERRIDES}
    env[REMOVED] = ";".join(f"{k}={v}" for k, v in found.items())
    shown = ", ".join(f"{k}={v}" for k, v in found.items())
    print(f"bench: running numpy with its own BLAS kernel (removed {shown}; IRKIT_BENCH_BLAS_ENV=keep keeps them)", file=sys.stderr)
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]], env)


def removed() -> dict[str, str]:
    """The overrides a re-run removed (empty if none was)."""
    text = os.environ.get(REMOVED, "")
    return dict(item.split("=", 1) for item in text.split(";") if "=" in item)
