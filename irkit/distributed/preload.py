"""`dask worker --preload irkit.distributed.preload`: the worker's host calibrates itself.

At the worker's start, in a thread of its own, the host's description is made if it has none
(`irkit calibrate`, about half a minute, under the host's measurement lock, so no measurement
runs meanwhile; a second worker of the host waits and then finds it).  Without the preload the
first job that needs the description makes it the same way.
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("irkit.distributed")


def _calibrate() -> None:
    from irkit.distributed.host import ensure_description

    try:
        info = ensure_description()
        logger.info("irkit: this host's description: %s", info.description)
    except Exception as exc:  # noqa: BLE001 -- a worker keeps serving; the job that needs it reports
        logger.warning("irkit: calibrating this host failed: %s", exc)


def dask_setup(worker) -> None:  # the hook Dask calls for a --preload module
    threading.Thread(target=_calibrate, name="irkit-calibrate", daemon=True).start()
