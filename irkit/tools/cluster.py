"""`irkit cluster status|calibrate`: what a Dask cluster offers irkit.

    irkit cluster status --scheduler tcp://HOST:8786       a row a worker: host, CPU, measures?, description
    irkit cluster calibrate --scheduler tcp://HOST:8786    every measuring host class calibrates (once)

The scheduler is `--scheduler`, else `$IRKIT_SCHEDULER`.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="the Dask cluster's hosts, their descriptions (see docs/distributed.md)")
    p.add_argument("action", choices=("status", "calibrate"), help="status: list the workers; calibrate: make each "
                   "measuring host's description where it has none")  # fmt: skip
    p.add_argument("--scheduler", metavar="tcp://HOST:8786", help="the Dask scheduler (default: $IRKIT_SCHEDULER)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


def run(args: argparse.Namespace) -> int:
    from irkit.distributed.executor import ExecutorError, scheduler_address
    from irkit.tools.opt import EXIT_OK, UsageError

    address = scheduler_address(args.scheduler)
    if address is None:
        raise UsageError("irkit cluster needs a scheduler: --scheduler tcp://HOST:8786 or IRKIT_SCHEDULER")
    from irkit.distributed.dask_executor import DaskExecutor

    try:
        executor = DaskExecutor(address)
    except ExecutorError as exc:
        raise UsageError(str(exc)) from None
    try:
        if args.action == "calibrate":
            for host in executor.hosts():
                sys.stderr.write(f"irkit cluster: calibrating {host.cpu} ({host.key}) if it has no description ...\n")
                executor.for_host(host.key).description()
            executor = DaskExecutor(address, client=executor.client)  # the survey again: with the descriptions
        rows = executor.status()
    except ExecutorError as exc:
        raise UsageError(str(exc)) from None
    finally:
        executor.close()
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return EXIT_OK
    sys.stdout.write(f"{len(rows)} workers at {address}\n")
    for r in rows:
        measures = "measures" if r["measures"] else "compiles only"
        described = r["description"] or "no description yet (irkit cluster calibrate)"
        sys.stdout.write(f"  {r['worker']}  {r['hostname']}  {r['cpu']}  [{r['key']}]  {measures}\n    description: {described}\n")
    return EXIT_OK
