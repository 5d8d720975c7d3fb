"""Measuring the tuner's best candidates on this host: build, probe, check, time.

1. **Build** every candidate, two compiles at a time (the C compiler is a
   separate process, so threads overlap them).
2. **Probe** at a quarter of the first size set in every dimension (or a
   half, or the set itself, whichever the document's assumptions accept):
   check the result against the numpy oracle there, where the oracle is
   cheap, and time a few calls.  A candidate slower than `SLOW` times the
   fastest probe is dropped before it is ever run at full size: a
   schedule the models misjudge (a register block that spills, a stride
   that folds onto one cache set) can be a hundred times slower, and one
   call of it at full size could take the whole budget.
3. **Time** the rest at every size set together, as `irkit validate` does
   (`irkit.validate.measure.time_together`: steady state, rounds
   alternated, the median of each round's batch), `passes` times; a
   candidate's time at a size is the fastest pass.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from irkit.timing import Plan

SLOW = 4.0  # probe time over the fastest probe beyond which a candidate is not timed at full size
PROBE_CALLS = 3


def probe_sizes(text: str, name: str, sizes: dict[str, int]) -> dict[str, int]:
    """`sizes` scaled down by 4 (or 2) where the document accepts it, else `sizes`."""
    from irkit.frontend import parse_design
    from irkit.sizes import SizeError, document_sizes

    module = parse_design(text, name)
    for k in (4, 2):
        small = {n: max(1, v // k) for n, v in sizes.items()}
        try:
            return document_sizes(module, small)
        except SizeError:
            continue
    return dict(sizes)


def _probe(call) -> float:
    """Seconds a call, over PROBE_CALLS calls."""
    t = time.perf_counter()
    for _ in range(PROBE_CALLS):
        call()
    return (time.perf_counter() - t) / PROBE_CALLS


def measure_with(executor, todo: list, text: str, name: str, sizes: list[dict[str, int]], options) -> None:
    """`measure`, through `executor` (`irkit.distributed`): in this process, or on a cluster --
    the compiles fanned out to the measuring host's class, then one job on the measuring host that
    builds (from its cache), probes, checks and times them together.  A job the cluster could not
    finish is every one of its candidates' error."""
    from irkit.distributed.executor import ExecutorError
    from irkit.distributed.jobs import compile_job

    if executor is None or not executor.remote:
        measure(todo, text, name, sizes, options)
        return
    if not todo:
        return
    try:
        built = executor.map(compile_job, [(c.text, name, options.cflags) for c in todo])
    except ExecutorError as exc:
        for c in todo:
            c.error = str(exc)
        return
    for c, result in zip(todo, built):
        c.error, c.compile_seconds = result["error"], result["seconds"] or 0.0
    ready = [c for c in todo if c.error is None]
    if not ready:
        return
    try:
        out = executor.measure(measure_job, [c.text for c in ready], text, name, sizes, options.cflags,
                               options.plan, options.passes)  # fmt: skip
    except ExecutorError as exc:
        for c in ready:
            c.error = str(exc)
        return
    if out["host"]["key"] != executor.host().key:  # never rank times of two host classes together
        for c in ready:
            c.error = f"measured on another host class ({out['host']['cpu']})"
        return
    for c, (measured, error, _) in zip(ready, out["results"]):
        c.measured, c.error = measured, error


def measure_job(texts: list[str], doc_text: str, name: str, sizes: list[dict[str, int]], cflags, plan, passes: int) -> dict:
    """`measure` on a cluster's worker (`irkit.distributed`), under the host's measurement lock,
    for candidates given by their texts: each one's `(measured, error, compile_seconds)`, in
    order, and the host's fingerprint."""
    from types import SimpleNamespace

    from irkit.distributed.host import measure_lock, this_host

    todo = [SimpleNamespace(text=t, error=None, measured=None, compile_seconds=0.0) for t in texts]
    options = SimpleNamespace(cflags=cflags, plan=plan, passes=passes)
    with measure_lock():
        measure(todo, doc_text, name, sizes, options)
    return {"results": [(c.measured, c.error, c.compile_seconds) for c in todo], "host": this_host().as_dict()}


def measure(todo: list, text: str, name: str, sizes: list[dict[str, int]], options) -> None:
    """Fill each candidate's `measured` (seconds per size set) or its `error`."""
    import irkit
    from irkit.validate.measure import FULL_PLAN, check_output, prepare, time_together

    if not todo:
        return
    kernels: dict[int, object] = {}

    def build(c) -> None:
        t = time.perf_counter()
        try:
            kernels[id(c)] = irkit.compile(c.text, name=name, cflags=options.cflags)
        except Exception as exc:  # noqa: BLE001 -- reported on the candidate, the others go on
            c.error = f"compile: {exc}"[:300]
            return
        c.compile_seconds = time.perf_counter() - t

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(build, todo))
    ready = [c for c in todo if id(c) in kernels]
    small = probe_sizes(text, name, sizes[0])
    probes: dict[int, float] = {}
    probe_calls: dict[int, object] = {}
    inputs = None
    # every candidate checked first, then every one probed: the oracle's numpy (and its BLAS
    # threads, which spin for a while after a call) never runs between two probes
    for c in ready:
        k = kernels[id(c)]
        try:
            if inputs is None:
                inputs = k.random_inputs(small)
            p = prepare(k, small, inputs)
            checked = check_output(k, small, inputs, p)
            if not checked["ok"]:
                c.error = f"wrong result at {small}: {checked['message']}"
                continue
            probe_calls[id(c)] = p.call
        except Exception as exc:  # noqa: BLE001
            c.error = f"run: {exc}"[:300]
    for c in ready:
        call = probe_calls.get(id(c))
        if call is None:
            continue
        try:
            call()
            probes[id(c)] = _probe(call)
        except Exception as exc:  # noqa: BLE001
            c.error = f"run: {exc}"[:300]
    if not probes:
        return
    fastest = min(probes.values())
    for c in ready:
        got = probes.get(id(c))
        if got is not None and got > SLOW * fastest:
            got = min(got, _probe(probe_calls[id(c)]))  # once more: a probe the host interrupted is no verdict
        if got is not None and got > SLOW * fastest:
            c.error = f"{got / fastest:.1f}x slower than the fastest candidate at {small}; not timed at full size"
    ready = [c for c in ready if c.error is None]
    plan = options.plan if options.plan is not None else FULL_PLAN
    if not isinstance(plan, Plan):
        raise TypeError("options.plan must be an irkit.timing.Plan")
    runs: dict[int, list[list[float]]] = {id(c): [[] for _ in sizes] for c in ready}
    for i, s in enumerate(sizes):
        calls, alive, data = [], [], None
        for c in ready:
            k = kernels[id(c)]
            try:
                resolved = k.resolve_sizes(s)
                data = data if data is not None else k.random_inputs(resolved)
                calls.append(prepare(k, resolved, data).call)
                alive.append(c)
            except Exception as exc:  # noqa: BLE001
                c.error = f"run: {exc}"[:300]
        for _ in range(max(1, options.passes)):
            for c, t in zip(alive, time_together(calls, plan)):
                runs[id(c)][i].append(sorted(t)[len(t) // 2])
    for c in ready:
        if c.error is None and all(runs[id(c)]):
            c.measured = [min(r) for r in runs[id(c)]]
