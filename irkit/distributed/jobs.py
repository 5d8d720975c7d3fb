"""The functions a worker runs for any command: its host, its description, a compile.  Like the
measuring jobs (`irkit.tune.measure.measure_job`, `irkit.validate.measure.group_job`,
`irkit.matrix.cell.cell_job`), plain module-level functions of plain arguments, so that Dask sends
them by name and the worker imports them from its own irkit; each returns plain values and the
`HostInfo` of the host that ran it, so that a result never loses where it was made."""

from __future__ import annotations

import time

from irkit.distributed.host import description_text, ensure_description, measure_lock, this_host


def host_job() -> dict:
    return this_host().as_dict()


def calibrate_job() -> dict:
    """Make this host's description if it has none (`irkit calibrate`, once a host class)."""
    return ensure_description().as_dict()


def description_job() -> tuple[dict, str]:
    info, text = description_text()
    return info.as_dict(), text


def compile_job(text: str, name: str, cflags: list[str] | None, sizes: dict[str, int] | None = None) -> dict:
    """Build a kernel into this host's cache (a later job on the host loads it without compiling)."""
    import irkit

    started = time.perf_counter()
    try:
        irkit.compile(text, name=name, sizes=sizes, cflags=cflags)
    except Exception as exc:  # noqa: BLE001 -- the candidate's error, reported with it
        return {"seconds": None, "error": f"compile: {exc}"[:300], "host": this_host().as_dict()}
    return {"seconds": time.perf_counter() - started, "error": None, "host": this_host().as_dict()}


def threads_job() -> dict:
    """The OpenMP threads a measurement on this host runs kernels on (what `measure_lock` sets)."""
    import os

    with measure_lock():
        return {"omp_num_threads": int(os.environ["OMP_NUM_THREADS"]), "host": this_host().as_dict()}
