"""Jobs on a Dask cluster (`distributed`), for `--scheduler tcp://HOST:8786`.

Workers are grouped by host class (`HostInfo.key`).  A run measures on one class: compiles go to
any worker of it (a `-march=native` binary runs on every host of the class, and each host's
build cache serves the measuring job), measurements to a worker of it that holds the `measure`
resource (`dask worker --resources measure=1`), and the job takes the host's measurement lock, so
two measuring workers on one host still measure one at a time.  A worker that dies during a job:
the scheduler runs the job again on another worker of the class (`retries` for a job that raised,
Dask's `allowed-failures` for a lost worker); a job that cannot finish raises `ExecutorError`
naming it, and the caller records it as that candidate's failure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from irkit.distributed.executor import ExecutorError
from irkit.distributed.host import HostInfo

MEASURE = "measure"  # the worker resource a measuring worker offers
RETRIES = 2
CONNECT_TIMEOUT = "20s"


def _client(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise ExecutorError(
            "--scheduler needs Dask's distributed package: pip install 'irkit[distributed]'"
        ) from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except OSError as exc:
        raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


class DaskExecutor:
    remote = True

    def __init__(self, address: str, host_key: str | None = None, client=None):
        self.address = address
        self.client = client if client is not None else _client(address)
        self._owns_client = client is None
        self.workers = self._survey()
        keys = sorted({info.key for info, measures in self.workers.values() if measures})
        if not keys:
            raise ExecutorError(
                f"no worker of the cluster at {address} offers the '{MEASURE}' resource; start one a host with "
                f"`dask worker {address} --resources {MEASURE}=1`"
            )
        if host_key is not None and host_key not in keys:
            known = ", ".join(f"{k} ({self._info(k).cpu})" for k in keys)
            raise ExecutorError(f"no measuring worker of host class '{host_key}'; the classes are: {known}")
        self.key = host_key or keys[0]
        self.name = f"Dask at {address}"

    def _survey(self) -> dict[str, tuple[HostInfo, bool]]:
        from irkit.distributed.jobs import host_job

        infos = self.client.run(host_job)
        resources = {addr: w.get("resources", {}) for addr, w in self.client.scheduler_info(n_workers=-1)["workers"].items()}
        return {addr: (HostInfo(**info), resources.get(addr, {}).get(MEASURE, 0) >= 1) for addr, info in infos.items()}

    def _info(self, key: str) -> HostInfo:
        return next(info for info, _ in self.workers.values() if info.key == key)

    def _of_class(self, measuring: bool) -> list[str]:
        return sorted(addr for addr, (info, m) in self.workers.items() if info.key == self.key and (m or not measuring))

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        if not calls:
            return []
        futures = [
            self.client.submit(fn, *args, workers=self._of_class(False), allow_other_workers=False, pure=False,
                               retries=RETRIES)  # fmt: skip
            for args in calls
        ]
        try:
            return self.client.gather(futures)
        except Exception as exc:  # noqa: BLE001 -- whatever the cluster raised, said as the job's failure
            raise ExecutorError(f"a compile job failed on the cluster: {type(exc).__name__}: {exc}") from None

    def measure(self, fn: Callable[..., Any], *args: Any) -> Any:
        future = self.client.submit(
            fn, *args, resources={MEASURE: 1}, workers=self._of_class(True), allow_other_workers=False, pure=False,
            retries=RETRIES,
        )  # fmt: skip
        try:
            return future.result()
        except Exception as exc:  # noqa: BLE001
            raise ExecutorError(f"a measurement failed on the cluster: {type(exc).__name__}: {exc}") from None

    def host(self) -> HostInfo:
        return self._info(self.key)

    def description(self) -> tuple[HostInfo, str]:
        """The measuring host's description, calibrated there first if it has none."""
        from irkit.distributed.jobs import description_job

        info, text = self.measure(description_job)
        return HostInfo(**info), text

    def hosts(self) -> list[HostInfo]:
        """One `HostInfo` a host class that has a measuring worker."""
        keys = sorted({info.key for info, measures in self.workers.values() if measures})
        return [self._info(k) for k in keys]

    def for_host(self, key: str) -> DaskExecutor:
        """The same cluster, measuring on host class `key`."""
        return DaskExecutor(self.address, host_key=key, client=self.client)

    def status(self) -> list[dict]:
        """A row a worker: its address, host, CPU, whether it measures, its description."""
        return [
            {"worker": addr, **info.as_dict(), "measures": measures}
            for addr, (info, measures) in sorted(self.workers.items())
        ]

    def close(self) -> None:
        if self._owns_client:
            self.client.close()
