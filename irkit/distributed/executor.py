"""The seam: where compile and measure jobs run.

`map(fn, calls)` runs independent jobs (compiles) on any worker of the measuring host's class;
`measure(fn, *args)` runs one measurement job on the measuring host, one at a time there;
`host()` says which host that is.  `LocalExecutor` does both in this process (compiles two at a
time: the compiler is a process of its own, so threads overlap them) and is what every command
uses without `--scheduler`; nothing about it needs Dask.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from irkit.distributed.host import HostInfo, description_text, this_host

SCHEDULER_ENV = "IRKIT_SCHEDULER"


class ExecutorError(RuntimeError):
    """A cluster that cannot do the job: unreachable, no worker to measure, a lost measurement."""


class LocalExecutor:
    """Jobs in this process."""

    name = "in-process"
    remote = False

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(lambda args: fn(*args), calls))

    def measure(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)

    def host(self) -> HostInfo:
        return this_host()

    def description(self) -> tuple[HostInfo, str]:
        return description_text()

    def hosts(self) -> list[HostInfo]:
        return [this_host()]

    def for_host(self, key: str) -> LocalExecutor:
        return self

    def close(self) -> None:
        pass


def scheduler_address(given: str | None) -> str | None:
    """`--scheduler`, else `$IRKIT_SCHEDULER`, else None (in-process)."""
    return given or os.environ.get(SCHEDULER_ENV) or None
