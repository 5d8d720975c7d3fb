"""Choosing the executor: in this process, or the Dask cluster `--scheduler` names."""

from __future__ import annotations

from irkit.distributed.executor import LocalExecutor, scheduler_address


def get_executor(scheduler: str | None = None, host: str | None = None):
    """The executor for `--scheduler` (or `$IRKIT_SCHEDULER`): a `DaskExecutor` measuring on the
    host class `host` (default: the first with a measuring worker), else a `LocalExecutor`."""
    address = scheduler_address(scheduler)
    if address is None:
        return LocalExecutor()
    from irkit.distributed.dask_executor import DaskExecutor

    return DaskExecutor(address, host_key=host)
