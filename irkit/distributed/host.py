"""What a host is to the cluster: its CPU fingerprint, its calibrated description, its lock.

A *host class* is a CPU model with its ISA (`HostInfo.key`): binaries built with
`-march=native` on one host of a class run on every other, and a measurement on
one stands for all.  A host's description (`irkit calibrate`) is kept in the
build cache directory under its class (`hosts/<key>.hw`), made once by the first
job that needs it and reused by every later one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CALIBRATE_TIMEOUT = 900.0


@dataclass(frozen=True)
class HostInfo:
    hostname: str
    cpu: str  # the fingerprint's description: vendor, model, family/model/stepping
    isa: str
    key: str  # the host class: a hash of cpu and isa
    description: str | None = None  # the calibrated .hw on that host (its path there), None if not made yet

    def as_dict(self) -> dict:
        return {"hostname": self.hostname, "cpu": self.cpu, "isa": self.isa, "key": self.key,
                "description": self.description}  # fmt: skip


def this_host() -> HostInfo:
    from irkit.calibrate.fingerprint import this_host as fingerprint

    try:
        fp = fingerprint()
        cpu, isa = fp.describe(), fp.isa_text
    except (OSError, ValueError):
        cpu, isa = "unknown", ""
    key = hashlib.sha256(f"{cpu}\n{isa}".encode()).hexdigest()[:12]
    path = description_path(key)
    return HostInfo(socket.gethostname(), cpu, isa, key, str(path) if path.exists() else None)


def description_path(key: str) -> Path:
    from irkit.backends.build import cache_dir

    return cache_dir() / "hosts" / f"{key}.hw"


def ensure_description() -> HostInfo:
    """This host with its description, calibrating it first when it has none (once: a second
    worker of the host waits on the lock and then finds the file)."""
    info = this_host()
    if info.description is not None:
        return info
    path = description_path(info.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with measure_lock():  # calibrating is measuring: nothing else measures meanwhile
        if not path.exists():
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            done = subprocess.run(
                [sys.executable, "-m", "irkit", "calibrate", "-o", str(partial)],
                capture_output=True,
                text=True,
                timeout=CALIBRATE_TIMEOUT,
            )
            if done.returncode != 0 or not partial.exists():
                partial.unlink(missing_ok=True)
                raise RuntimeError(f"irkit calibrate failed on {info.hostname}: {done.stderr.strip()[-400:]}")
            os.replace(partial, path)
    return this_host()


def description_text() -> tuple[HostInfo, str]:
    """This host and the text of its description (calibrated first if need be)."""
    info = ensure_description()
    assert info.description is not None
    return info, Path(info.description).read_text()


MEASURE_THREADS_ENV = "IRKIT_MEASURE_THREADS"


def measuring_threads() -> int:
    """The OpenMP threads a measurement runs kernels on: `$IRKIT_MEASURE_THREADS`, else every core
    this process may use -- what `irkit tune` and `irkit validate` use on the machine itself."""
    given = os.environ.get(MEASURE_THREADS_ENV)
    return int(given) if given else len(os.sched_getaffinity(0))


def use_threads(n: int) -> None:
    """Run this thread's OpenMP regions on `n` threads.  A Dask nanny starts its worker with
    OMP_NUM_THREADS=1 (`distributed.nanny.pre-spawn-environ`, so that numpy does not oversubscribe
    a worker's threads); a kernel measured that way would time one core, not the host.  The
    variable is set for libraries loaded later, and libgomp's own setting for this thread."""
    import ctypes

    os.environ["OMP_NUM_THREADS"] = str(n)
    try:
        ctypes.CDLL("libgomp.so.1").omp_set_num_threads(ctypes.c_int(n))
    except OSError:
        pass  # no libgomp: no kernel uses OpenMP here either


@contextlib.contextmanager
def measure_lock():
    """Hold the host's measurement lock: one measurement at a time on a host, however many
    workers (or irkit processes under a cluster) it runs.  The OS drops it when its holder dies.
    Kernels measured under it run on `measuring_threads()` OpenMP threads."""
    from irkit.backends.build import cache_dir

    path = cache_dir() / "measure.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    use_threads(measuring_threads())
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
