"""`irkit matrix FILES...`: a measured compatibility matrix, kernel x target (irkit.matrix).

    irkit matrix examples/*.design                                   native, x86-64-v3, x86-64-v2; 1 and all threads
    irkit matrix gemm.design --targets native,x86-64-v3 --threads 1 --max-rel-err 1e-5 --out-dir out/
    irkit matrix examples/*.design --scheduler tcp://HOST:8786       and every measuring host of the cluster

Writes DIR/matrix.csv, DIR/matrix.md, DIR/matrix.png (with matplotlib) and, with --max-rel-err,
DIR/precision.md (the worst elements of every cell beyond the bound); prints the markdown table.
Exit status 1 when a cell is ❌.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    from irkit.tools.tune import add_cluster_arguments

    p = sub.add_parser("matrix", help="build and run each document for each target: a compatibility matrix")
    p.add_argument("files", nargs="+", metavar="FILE", help="design documents")
    p.add_argument("--targets", metavar="ISA,ISA", help="ISAs to build for (default: native,x86-64-v3,x86-64-v2)")
    p.add_argument("--threads", metavar="N,N", help="thread counts to run on (default: 1 and all this process may use)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE", help="a size for every document that has it (repeatable)")
    p.add_argument("--max-rel-err", type=float, metavar="X", help="also fail a cell whose element is further than X (relative) from a float64 evaluation")
    p.add_argument("--min-time", type=float, default=0.3, metavar="S", help="least timed seconds a cell (default 0.3)")
    p.add_argument("--out-dir", default="matrix", metavar="DIR", help="where the CSV, markdown and picture go (default: matrix/)")
    add_cluster_arguments(p)


def run(args: argparse.Namespace) -> int:
    from irkit.matrix import report
    from irkit.matrix.fill import fill
    from irkit.matrix.targets import TargetError, parse_isas, parse_threads
    from irkit.tools.opt import EXIT_INPUT, EXIT_OK, UsageError
    from irkit.tools.tune import open_executor

    documents = [Path(f) for f in args.files]
    for doc in documents:
        if not doc.is_file() or doc.suffix != ".design":
            raise UsageError(f"'{doc}' is not a design document (expected an existing .design file)")
    try:
        isas, threads = parse_isas(args.targets), parse_threads(args.threads)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    if args.max_rel_err is not None and not args.max_rel_err > 0:
        raise UsageError(f"--max-rel-err must be positive, got {args.max_rel_err}")
    executor = open_executor(args)

    def log(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    try:
        cells = fill(documents, isas, threads, args.size, executor, args.max_rel_err, args.min_time, log)
    finally:
        executor.close()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "matrix.csv").write_text(report.to_csv(cells))
    table = report.to_markdown(cells, args.max_rel_err)
    (out / "matrix.md").write_text(table)
    if args.max_rel_err is not None:
        (out / "precision.md").write_text(report.diff_report(cells, args.max_rel_err))
    pictured = report.heat_map(cells, out / "matrix.png")
    log(f"irkit matrix: wrote {out / 'matrix.csv'}, {out / 'matrix.md'}" + (f", {out / 'matrix.png'}" if pictured else
        " (no picture: pip install 'irkit[plot]')") + (f", {out / 'precision.md'}" if args.max_rel_err is not None else ""))  # fmt: skip
    sys.stdout.write(table)
    return EXIT_INPUT if any(c.status == "fail" for c in cells) else EXIT_OK
