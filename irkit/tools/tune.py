"""`irkit tune FILE`: find a schedule with the cost model, confirm it by measurement, write it into the document.

    irkit tune examples/gemm.design -o gemm.tuned.design
    irkit tune doc.design --size M=512,N=512 --size M=4096,N=4096 --budget 5m --log tune.jsonl
    irkit tune doc.design --from-log tune.jsonl -o doc.tuned.design     # the best known, nothing measured
    irkit tune doc.design --no-measure --json                            # the model's choice only

Each `--size` is one set of sizes (`M=512,N=512`); repeated `--size`
options that name different sizes make one set, as in `irkit run`
(`--size M=512 --size N=512`), and naming a size again starts the next set.
`--sizes FILE` reads sets from a file, one per line.  With several sets the
schedule chosen is the one with the best geometric mean of time over them;
`--json` gives, per set, the loss against the best measured at that set
alone.  Sizes stay symbolic: the tuned kernel runs at any size.

The search (docs/tuning.md) scores candidates with a fast screening model,
prices the best with the full cost model (`irkit predict`), and measures
the best `--top-k` on this host (`--trials` caps the measurements), with
`irkit validate`'s protocol.  Without `-o` the tuned document is printed.
Progress goes to stderr; Ctrl-C stops and still writes the best found.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|min)?\s*$")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="find a schedule with the cost model, measure the best, write the document")
    p.add_argument("file", metavar="FILE", help="the .design document (its schedule blocks are replaced)")
    p.add_argument("-o", "--output", metavar="TUNED.design", help="write the tuned document here (default: stdout)")
    p.add_argument("--size", action="append", default=[], metavar="N=V[,N=V...]", help="a set of sizes to tune for (repeatable)")
    p.add_argument("--sizes", metavar="FILE", help="sets of sizes, one per line (N=V,N=V)")
    p.add_argument("--hw", metavar="SPEC", help="hardware: a .hw file or a profile name (default: the document's own)")
    p.add_argument("--top-k", type=int, metavar="K", help="candidates compiled and measured (default 8; 4 with --quick)")
    p.add_argument("--trials", type=int, metavar="N", help="at most N measurements in all, refinement included (default: --top-k, plus 3 a refinement round)")
    p.add_argument("--budget", metavar="TIME", help="stop searching after TIME (90s, 5m, 1h); measuring still runs")
    p.add_argument("--seed", type=int, default=0, help="seed of the search's sampling (default 0)")
    p.add_argument("--log", metavar="FILE.jsonl", help="append each measurement here; candidates in it are not measured again")
    p.add_argument("--from-log", metavar="FILE.jsonl", help="write the best schedule the log knows, measuring nothing")
    p.add_argument("--no-measure", action="store_true", help="choose by the full cost model alone")
    p.add_argument(
        "--no-refine", action="store_true",
        help="measure the top k only: no rounds of measured refinement around the best measured",
    )  # fmt: skip
    p.add_argument("--quick", action="store_true", help="a small search and short timing (a smoke test)")
    p.add_argument("--cflags", help="C compiler flags replacing the defaults")
    p.add_argument("--json", action="store_true", help="print the result as JSON (the document goes to -o)")
    add_cluster_arguments(p)


def add_cluster_arguments(p: argparse.ArgumentParser) -> None:
    """`--scheduler` and `--host`, shared by tune, validate and matrix."""
    p.add_argument(
        "--scheduler", metavar="tcp://HOST:8786",
        help="compile and measure on this Dask cluster (default: $IRKIT_SCHEDULER, else in this process); "
        "see docs/distributed.md",
    )  # fmt: skip
    p.add_argument("--host", metavar="CLASS", help="with --scheduler: measure on this host class (irkit cluster status lists them)")


def open_executor(args: argparse.Namespace):
    """The executor `--scheduler`/`--host` ask for (in-process without them); a cluster that cannot
    serve is a usage error naming why."""
    from irkit.distributed.connect import get_executor
    from irkit.distributed.executor import ExecutorError
    from irkit.tools.opt import UsageError

    if args.host and not args.scheduler:
        from irkit.distributed.executor import scheduler_address

        if scheduler_address(None) is None:
            raise UsageError("--host names a host class of a cluster: give --scheduler (or set IRKIT_SCHEDULER) too")
    try:
        return get_executor(args.scheduler, args.host)
    except ExecutorError as exc:
        raise UsageError(str(exc)) from None


def cluster_hardware(executor):
    """The measuring host's description (calibrated there once, if it had none), loaded here."""
    import tempfile

    from irkit.perf import load_hardware

    info, text = executor.description()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{info.key}.hw"
        path.write_text(text)
        return load_hardware(str(path), document=None)


def parse_duration(text: str) -> float:
    from irkit.tools.opt import UsageError

    m = _DURATION.match(text)
    if not m:
        raise UsageError(f"--budget expects a duration such as 90s, 5m or 1h, got '{text}'")
    scale = {"s": 1, None: 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]
    return float(m.group(1)) * scale


def size_sets(items: list[str], path: str | None) -> list[dict[str, int]]:
    """The --size options (and --sizes file) as sets of sizes."""
    from irkit.tools.opt import UsageError
    from irkit.tools.run import parse_sizes

    lines = list(items)
    if path:
        try:
            lines += [ln.split("#", 1)[0].strip() for ln in Path(path).read_text().splitlines()]
        except OSError as exc:
            raise UsageError(f"--sizes: cannot read {path}: {exc.strerror}") from None
    sets: list[dict[str, int]] = []
    for i, line in enumerate(x for x in lines if x):
        one = parse_sizes([part.strip() for part in line.split(",") if part.strip()])
        merge = i < len(items) and sets and "," not in line and not (set(one) & set(sets[-1]))
        if merge:
            sets[-1].update(one)
        else:
            sets.append(one)
    return sets


def run(args: argparse.Namespace) -> int:
    from irkit.frontend import parse_design
    from irkit.perf import load_hardware
    from irkit.sizes import SizeError, document_sizes
    from irkit.tools.opt import UsageError, read_input
    from irkit.tools.run import size_usage_error

    text, name = read_input(args.file)
    sets = size_sets(args.size, args.sizes)
    module = parse_design(text, name)  # a malformed document is reported before anything is searched
    try:
        for s in sets:
            document_sizes(module, s)
    except SizeError as exc:
        raise size_usage_error(exc) from None
    for flag in ("top_k", "trials"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise UsageError(f"--{flag.replace('_', '-')} must be at least 1, got {value}")
    hw = load_hardware(args.hw, document=Path(args.file)) if args.hw else None
    executor = open_executor(args)
    try:
        if hw is None and executor.remote:  # predictions for the host that measures
            hw = cluster_hardware(executor)
        return _tune(args, text, name, sets, hw, executor)
    finally:
        executor.close()


def _tune(args: argparse.Namespace, text: str, name: str, sets, hw, executor) -> int:
    from irkit.tools.opt import EXIT_OK
    from irkit.tune import tuner

    tty = sys.stderr.isatty()
    status = {"shown": False}

    def say(line: str) -> None:
        if status["shown"]:
            sys.stderr.write("\r\x1b[K")
            status["shown"] = False
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def progress(line: str) -> None:
        """A terminal gets one status line rewritten in place; a log gets nothing (`say` reports each stage)."""
        if tty:
            sys.stderr.write("\r\x1b[K" + line[: 150])
            sys.stderr.flush()
            status["shown"] = True

    if args.from_log:
        result = tuner.from_log(text, name, Path(args.from_log), sets, hw, executor.host())
    else:
        top_k = args.top_k or tuner.default_top_k(args.quick)
        options = tuner.Options(
            sizes=sets,
            hw=hw,
            top_k=min(top_k, args.trials or top_k),
            trials=args.trials or None,
            seed=args.seed,
            budget=parse_duration(args.budget) if args.budget else None,
            measure=not args.no_measure,
            refine=not args.no_refine,
            log=Path(args.log) if args.log else None,
            cflags=args.cflags.split() if args.cflags else None,
            executor=executor,
            report=say,
            progress=progress,
        )
        if args.quick:
            from irkit.validate.measure import QUICK_PLAN

            options.width, options.depth, options.rerank, options.sweep, options.plan = 8, 6, 12, 4, QUICK_PLAN
        result = tuner.tune(text, name, options)
    if args.output:
        Path(args.output).write_text(result.text)
        say(f"irkit tune: wrote {args.output}")
    if args.json:
        sys.stdout.write(json.dumps(result.to_json(), indent=1) + "\n")
    elif not args.output:
        sys.stdout.write(result.text)
    return EXIT_OK
