"""Compile each variant, time it in its steady state, and ask the cost model for its prediction.

Kernels are called the way the benchmarks call irkit (`bench/suite.py`):
buffers allocated once in the document's layouts and filled with the same
random inputs for every schedule, one checked call through the runner, then
the C entry point directly with the arguments prepared once (the runner's
argument checks cost ~0.2 ms a call, which would swamp small kernels).

The schedules of one kernel at one size are timed together with
`irkit.timing`: round after round, each settles (untimed calls for
`Plan.settle` seconds), then a batch of its calls is timed; the median is
the measurement.  Alternating them spreads the shared host's slow and fast
moments over all of them, which is what comparing their order needs.  A
call longer than the settling time is its own warm-up and is not settled.

Every case is measured three times (`PASSES`): the whole suite is timed
once, then again and again, so a case's measurements are independent
(prepared and timed afresh, a third of a run apart).  The time compared
with the prediction is the fastest of them (`ranking.measured_time`), and
their difference is the case's run-to-run spread.  Three passes, not two:
on a 2-vCPU guest the host takes a vCPU away for seconds at a time (a
parallel kernel then runs at 1.2-1.5 x its serial time instead of 2 x), and
two passes measured more than 10% apart in 20-53 of the 96 cases over 22
runs; the fastest of three is caught in a quiet stretch more often, the
way calibration keeps a throughput's best trial.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from irkit.timing import WARMUP_SECONDS, Plan, batch_size, rounds_for, settle, summary, time_call
from irkit.validate import ranking, stats
from irkit.validate.report import seconds
from irkit.validate.suite import Case

# Each case is measured PASSES times, pass after pass over the whole suite; each pass's plan is
# for one measurement.  Full runs: 0.1 s of settling, then batches; about 1 s per kernel and
# size for all its schedules a pass (3 s over the three, as two passes of 1.5 s took before).
# At least two rounds a pass: the slowest calls (0.4 s) are then timed six times in all.
PASSES = 3
FULL_PLAN = Plan(repeat=2, min_time=0.1, budget=1.0, settle=0.1)
QUICK_PLAN = Plan(repeat=2, min_time=0.01, budget=0.1, settle=0.01)

# When other processes kept more than this many cores busy while a group was timed, it is timed
# again (at most BUSY_RETRIES more times, and for at most `retry_seconds` over the whole run),
# and the quietest attempt is kept.
BUSY_LOAD = 0.25
BUSY_RETRIES = 2

Predictor = Callable[[Path, dict[str, int], object], object]  # (document, sizes, hw) -> a Prediction


def error_text(exc: BaseException) -> str:
    from irkit.diagnostics import DiagnosticError

    if isinstance(exc, DiagnosticError):
        text = "; ".join(d.message for d in exc.diagnostics) or "diagnostic error"
    else:
        text = f"{type(exc).__name__}: {str(exc).strip()}".rstrip(": ")
    return " ".join(text.split())[:500]


def real_predictor() -> Predictor:
    """The cost model (`irkit.perf.predict`)."""
    from irkit.perf import predict

    def run(document: Path, sizes: dict[str, int], hw: object) -> object:
        return predict(document, sizes=sizes, hw=hw)

    return run


# ---- calling a kernel -------------------------------------------------------------


@dataclass
class Prepared:
    call: Callable[[], None]
    arrays: dict[str, np.ndarray]
    output: str


def prepare(kernel, sizes: dict[str, int], inputs: dict[str, np.ndarray]) -> Prepared:
    """Buffers for every tensor (inputs copied in) and a call of the C function with them."""
    compiled = kernel.compiled
    resolved = kernel.resolve_sizes(sizes)
    arrays: dict[str, np.ndarray] = {}
    for t in compiled.tensor_args:
        arrays[t.name] = compiled.empty(t.name, resolved)
        if t.role in ("input", "inout"):
            arrays[t.name][...] = inputs[t.name]
    for sc in compiled.scalar_args:
        arrays[sc.name] = np.asarray(inputs[sc.name])
    compiled(arrays, resolved)  # one call with every argument checked
    args = compiled.arguments(arrays, resolved)
    fn = compiled.fn

    def call(_alive=arrays) -> None:  # the arrays live as long as the call: args are their addresses
        fn(*args)

    output = next(t.name for t in compiled.tensor_args if t.role in ("output", "inout"))
    return Prepared(call, arrays, output)


def time_together(calls: list[Callable[[], None]], plan: Plan) -> list[list[float]]:
    """Seconds per call of each function, alternated round by round, each timed in its steady state."""
    estimates = []
    for fn in calls:
        t = time_call(fn)
        if t < WARMUP_SECONDS:
            t = time_call(fn)
        estimates.append(t)
    settling = [plan.settle if e < plan.settle else 0.0 for e in estimates]
    batches = [batch_size(e, plan) for e in estimates]
    # rounds_for charges every function the settling time; charge only those that settle
    budget_plan = Plan(plan.repeat, plan.min_time, plan.budget + plan.settle * settling.count(0.0), plan.settle)
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(rounds_for(estimates, budget_plan)):
        for i, fn in enumerate(calls):
            settle(fn, settling[i])
            times[i].extend(time_call(fn) for _ in range(batches[i]))
    return times


# ---- how busy the rest of the machine is -------------------------------------------


def cpu_snapshot() -> dict:
    """Busy CPU seconds of the whole machine (/proc/stat) and of this process, now."""
    import resource

    busy = None
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
        busy = (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    except (OSError, ValueError, IndexError):
        pass
    own = resource.getrusage(resource.RUSAGE_SELF)
    return {"wall": time.perf_counter(), "busy": busy, "own": own.ru_utime + own.ru_stime}


def other_load(start: dict, end: dict) -> float | None:
    """Cores other processes kept busy between two snapshots (0 = a quiet machine), or None if unknown."""
    wall = end["wall"] - start["wall"]
    if start["busy"] is None or end["busy"] is None or wall <= 0:
        return None
    return max(0.0, ((end["busy"] - start["busy"]) - (end["own"] - start["own"])) / wall)


# ---- the run ----------------------------------------------------------------------


def run_cases(
    cases: list[Case],
    plan: Plan,
    hw: object,
    predictor: Predictor,
    log: Callable[[str], None],
    cflags: list[str] | None = None,
    check: bool = True,
    retry_seconds: float = 60.0,
    passes: int = PASSES,
    executor=None,
) -> list[dict]:
    """Measure and predict every case; one row (a dict of plain values) per case, in order.

    Cases of the same kernel and size are measured together, `passes` times:
    pass after pass over every group, each an independent measurement
    (buffers prepared again, estimates and batches chosen again), so that a
    case's two measurements lie half a run apart and the host's slow and fast
    minutes fall on every schedule alike.  The first pass compiles, checks
    results (at each kernel's first size) and predicts.  A case that fails to
    build, run or predict keeps its error in its row and is not measured again.
    """
    import irkit

    if passes < 1:
        raise ValueError("at least one pass")
    if executor is not None and executor.remote:
        return _run_cases_on(executor, cases, plan, hw, predictor, log, cflags, check, passes)
    kernels: dict[Path, object] = {}
    errors: dict[Path, str] = {}
    total = len(cases)
    groups, first_label = _groups(cases)
    retries = {"seconds": retry_seconds}
    group_rows = {key: [new_row(case) for case in group] for key, group in groups.items()}
    for n in range(1, passes + 1):
        if passes > 1:
            log(f"irkit validate: pass {n} of {passes}" + (" (compile, check, predict, measure)" if n == 1 else ""))
        done = 0
        for (kernel_name, label), group in groups.items():
            rows = group_rows[(kernel_name, label)]
            if n == 1:
                compile_group(group, kernels, errors, cflags, log, irkit.compile)
            first = n == 1 and label == first_label[kernel_name]
            measure_group(group, rows, kernels, errors, plan, check and first, log, retries)
            done = _timed(group, rows, n, passes, hw, predictor, log, done, total)
    return [row for rows in group_rows.values() for row in rows]


def _groups(cases: list[Case]) -> tuple[dict[tuple[str, str], list[Case]], dict[str, str]]:
    """The cases by kernel and size (timed together), and each kernel's first size (checked there)."""
    groups: dict[tuple[str, str], list[Case]] = {}
    first_label: dict[str, str] = {}
    for case in cases:
        groups.setdefault((case.kernel, case.size_label), []).append(case)
        first_label.setdefault(case.kernel, case.size_label)
    return groups, first_label


def _timed(group, rows, n: int, passes: int, hw, predictor, log, done: int, total: int) -> int:
    """After a group's timing in pass `n`: predict (first pass), finish (last), report progress."""
    for case, row in zip(group, rows):
        if n == 1 and row["error"] is None:
            predict_row(case, row, hw, predictor)
        if n == passes:
            finish_row(row)
        done += 1
        log(progress_line(done, total, row, n, passes))
    return done


def _run_cases_on(executor, cases, plan, hw, predictor, log, cflags, check: bool, passes: int) -> list[dict]:
    """`run_cases` on a cluster (`irkit.distributed`): every document compiled at once across the
    measuring host's class, then each group's timing a job on the measuring host, pass after pass.
    A timing the cluster lost is the group's error; predictions are made here."""
    from irkit.distributed.executor import ExecutorError
    from irkit.distributed.jobs import compile_job

    texts = {str(case.document): Path(case.document).read_text() for case in cases}
    first_of: dict[str, Case] = {}
    for case in cases:
        first_of.setdefault(str(case.document), case)
    log(f"         compiling {len(first_of)} documents on {executor.name}")
    try:
        built = executor.map(compile_job, [(texts[d], Path(d).name, cflags, c.sizes) for d, c in first_of.items()])
        errors = {d: _named(r["error"], first_of[d]) for d, r in zip(first_of, built) if r["error"]}
    except ExecutorError as exc:
        errors = {d: f"cluster: {exc}" for d in first_of}
    groups, first_label = _groups(cases)
    group_rows = {key: [new_row(case) for case in group] for key, group in groups.items()}
    for key, rows in group_rows.items():
        for case, row in zip(groups[key], rows):
            row["error"] = errors.get(str(case.document))
    host = executor.host()
    for n in range(1, passes + 1):
        log(f"irkit validate: pass {n} of {passes} on {executor.name} ({host.cpu})")
        done = 0
        for key, group in groups.items():
            rows = group_rows[key]
            first = n == 1 and key[1] == first_label[key[0]]
            try:
                out = executor.measure(group_job, group, rows, texts, plan, check and first, cflags)
            except ExecutorError as exc:
                for row in rows:
                    row["error"] = row["error"] or f"cluster: {exc}"
                out = None
            if out is not None and out["host"]["key"] != host.key:
                for row in rows:
                    row["error"] = row["error"] or f"measured on another host class ({out['host']['cpu']})"
            elif out is not None:
                group_rows[key] = rows = out["rows"]
            done = _timed(group, rows, n, passes, hw, predictor, log, done, len(cases))
    return [row for rows in group_rows.values() for row in rows]


def group_job(group: list[Case], rows: list[dict], texts: dict[str, str], plan: Plan, check: bool, cflags) -> dict:
    """One timing of a group (`measure_group`) on a cluster's worker, under the host's measurement
    lock: the rows with this pass's measurement (or error) added, and the host's fingerprint."""
    import irkit
    from irkit.distributed.host import measure_lock, this_host

    kernels: dict = {}
    errors: dict = {}

    def compile_fn(document, sizes, cflags):
        return irkit.compile(texts[str(document)], name=Path(document).name, sizes=sizes, cflags=cflags)

    lines: list[str] = []
    compile_group(group, kernels, errors, cflags, lines.append, compile_fn)
    with measure_lock():
        measure_group(group, rows, kernels, errors, plan, check, lines.append, {"seconds": 60.0})
    return {"rows": rows, "log": lines, "host": this_host().as_dict()}


def compile_group(group: list[Case], kernels: dict, errors: dict, cflags, log, compile_fn) -> None:
    """Compile each document of the group not compiled yet; a failure is kept in `errors`."""
    for case in group:
        if case.document in kernels or case.document in errors:
            continue
        t0 = time.perf_counter()
        try:
            kernels[case.document] = compile_fn(case.document, sizes=case.sizes, cflags=cflags)
            log(f"         compiled {case.kernel} schedule={case.variant} ({time.perf_counter() - t0:.1f} s)")
        except Exception as exc:  # noqa: BLE001
            errors[case.document] = f"compile: {_named(error_text(exc), case)}"
            log(f"         compiling {case.kernel} schedule={case.variant} FAILED: {errors[case.document]}")


def new_row(case: Case) -> dict:
    return {
        "kernel": case.kernel,
        "schedule": case.variant,
        "size": case.size_label,
        "sizes": dict(case.sizes),
        "document": str(case.document),
        "example": str(case.example),
        "description": case.description,
        "measurements": [],  # one per pass: the median of its timed calls, with how it was timed
        "runs_s": [],  # each pass's median seconds per call
        "measured_s": None,
        "spread_pct": None,
        "predicted_s": None,
        "error_pct": None,
        "abs_error_pct": None,
        "within_spread": False,
        "error": None,
    }


def measure_group(
    group: list[Case],
    rows: list[dict],
    kernels: dict,
    errors: dict,
    plan: Plan,
    check: bool,
    log: Callable[[str], None],
    retries: dict | None = None,
) -> None:
    """Time the cases of one kernel and size together once; appends a measurement to each row (or an error).

    Rows that failed before are skipped.  `retries["seconds"]` is what is
    left of the run's time for timing busy groups again.
    """
    from irkit.metrics import work

    prepared: dict[int, Prepared] = {}
    inputs = None
    for i, (case, row) in enumerate(zip(group, rows)):
        if row["error"] is not None:
            continue
        if case.document in errors:
            row["error"] = errors[case.document]
            continue
        kernel = kernels[case.document]
        try:
            sizes = kernel.resolve_sizes(case.sizes)
            if "bytes" not in row:
                amount = work(kernel.levels["design"], sizes)
                row["flops"], row["bytes"] = float(amount.flops), float(amount.bytes)
            if inputs is None:
                inputs = kernel.random_inputs(sizes)  # seed 0: the same data in every pass
            prepared[i] = prepare(kernel, sizes, inputs)
            if check:
                row["check"] = check_output(kernel, sizes, inputs, prepared[i])
                if not row["check"]["ok"]:
                    row["error"] = f"wrong result: {row['check']['message']}"
                    del prepared[i]
        except Exception as exc:  # noqa: BLE001
            row["error"] = f"run: {error_text(exc)}"
            prepared.pop(i, None)
            if _traceback_wanted():
                traceback.print_exc()
    live = sorted(prepared)
    if not live:
        return
    best: tuple[float, list[list[float]]] | None = None
    attempts = 0
    try:
        # A parallel kernel sharing its cores with another busy process waits for it at every
        # barrier (milliseconds a call): when others kept the machine busy, time the group again.
        for attempts in range(1, BUSY_RETRIES + 2):
            before = cpu_snapshot()
            times = time_together([prepared[i].call for i in live], plan)
            after = cpu_snapshot()
            load = other_load(before, after)
            if attempts > 1 and retries is not None:
                retries["seconds"] -= after["wall"] - before["wall"]
            if best is None or (load or 0.0) < best[0]:
                best = (load or 0.0, times)
            if load is None or load <= BUSY_LOAD or attempts > BUSY_RETRIES:
                break
            if retries is not None and retries["seconds"] <= 0:
                break
            log(f"         the machine was busy ({load:.2f} other cores): timing {group[0].kernel} again")
    except Exception as exc:  # noqa: BLE001
        for i in live:
            rows[i]["error"] = f"timing: {error_text(exc)}"
        return
    assert best is not None
    for i, t in zip(live, best[1]):
        s = summary(t)
        rows[i]["measurements"].append(
            {
                "median_s": s["median_s"],
                "calls": s["runs"],
                "iqr_s": s["iqr_s"],
                "min_s": s["min_s"],
                "other_load": best[0],
                "attempts": attempts,
            }
        )
        rows[i]["runs_s"].append(s["median_s"])
        rows[i]["measured_s"] = ranking.measured_time(rows[i]["runs_s"])
    prepared.clear()


def finish_row(row: dict) -> None:
    """After the last pass: the time used (the fastest pass), the spread, the error and whether it is noise."""
    if row["error"] is not None or not row["runs_s"]:
        return
    runs = row["runs_s"]
    row["measured_s"] = ranking.measured_time(runs)
    row["spread_pct"] = ranking.spread_pct(runs)
    ms = row["measurements"]
    row["calls"] = sum(m["calls"] for m in ms)
    row["min_s"] = min(m["min_s"] for m in ms)
    row["iqr_s"] = ms[runs.index(row["measured_s"])]["iqr_s"]
    row["other_load"] = sum(m["other_load"] for m in ms) / len(ms)
    if row["predicted_s"] is not None:
        row["error_pct"] = stats.signed_pct_error(row["predicted_s"], row["measured_s"])
        row["abs_error_pct"] = abs(row["error_pct"])
        row["within_spread"] = ranking.within_spread(row["abs_error_pct"], row["spread_pct"])


def check_output(kernel, sizes: dict[str, int], inputs: dict[str, np.ndarray], prepared: Prepared) -> dict:
    """The first call's output against the numpy oracle (at the smallest size only: the oracle is slow)."""
    from irkit.oracle import compare, reduction_lengths

    expected = kernel.reference(inputs, sizes)
    lengths = reduction_lengths(kernel.levels["design"], sizes)
    name = prepared.output
    res = compare(prepared.arrays[name], expected[name], prepared.arrays[name].dtype, lengths.get(name, 1))
    message = "" if res.ok else f"{int(res.n_bad)} elements of {name} differ from the numpy oracle"
    return {"ok": bool(res.ok), "max_abs": float(res.max_abs), "message": message}


def predict_row(case: Case, row: dict, hw: object, predictor: Predictor) -> None:
    try:
        p = predictor(case.document, dict(case.sizes), hw)
        row["predicted_s"] = float(p.seconds)
        row["bound"] = getattr(p, "bound", None)
        breakdown = getattr(p, "breakdown", None)
        row["breakdown"] = {k: float(v) for k, v in breakdown.items()} if breakdown else {}
    except Exception as exc:  # noqa: BLE001
        row["error"] = f"predict: {_named(error_text(exc), case)}"
        if _traceback_wanted():
            traceback.print_exc()
        return


def _named(message: str, case: Case) -> str:
    """A message naming the example and schedule instead of the temporary variant document."""
    return message.replace(str(case.document), f"{case.example.name} (schedule {case.variant})")


def _traceback_wanted() -> bool:
    import os

    return os.environ.get("IRKIT_TRACEBACK") == "1"


def progress_line(done: int, total: int, row: dict, n: int = 1, passes: int = 1) -> str:
    """One case after pass `n`: its measurement so far and prediction; after the last, spread and error."""
    width = len(str(total))
    sizes = ",".join(f"{k}={v}" for k, v in row["sizes"].items())
    head = f"[{done:>{width}}/{total}] {row['kernel']:<12} schedule={row['schedule']:<8} {sizes:<24}"
    if row["error"]:
        return f"{head} FAILED: {row['error']}"
    if n < passes:
        return f"{head} run {n}: {seconds(row['runs_s'][-1]):>9}  predicted {seconds(row['predicted_s']):>9}"
    line = f"{head} measured {seconds(row['measured_s']):>9}  predicted {seconds(row['predicted_s']):>9}"
    if row["error_pct"] is not None:
        line += f"  ({row['error_pct']:+.1f}%)"
    if row["spread_pct"] is not None:
        line += f"  spread {row['spread_pct']:.1f}%" + (", error within it" if row["within_spread"] else "")
    return line
