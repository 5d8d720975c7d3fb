"""The Dask executor against a real `distributed.LocalCluster` of two worker processes (no mocks):
the cluster's view, compiles fanned out, a small tune and a small validate agreeing with the same
runs in this process, and a measuring worker killed mid-measurement losing nothing."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shutil
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")  # the test extra installs it; a core install has no Dask

from irkit.distributed.dask_executor import DaskExecutor  # noqa: E402
from irkit.distributed.executor import ExecutorError, LocalExecutor  # noqa: E402
from irkit.distributed.host import this_host  # noqa: E402

ROOT = Path(__file__).parents[2]
GEMM = (ROOT / "examples" / "gemm.design").read_text()
GENERIC_HW = ROOT / "irkit" / "hw" / "generic.hw"
TINY = {"M": 24, "N": 32, "K": 16}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """The cluster's build cache, with this host's description already made (the calibration
    itself is `irkit calibrate`'s, tested apart): a worker must find and reuse it."""
    path = tmp_path_factory.mktemp("dask-cache")
    described = path / "hosts" / f"{this_host().key}.hw"
    described.parent.mkdir(parents=True)
    shutil.copy(GENERIC_HW, described)
    return path


@pytest.fixture(scope="module")
def cluster(cache):
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        resources={"measure": 1},
        dashboard_address=":0",
        silence_logs=logging.ERROR,
        env={"IRKIT_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"},  # as Dask's nanny sets it anyway
    ) as running:
        yield running


@pytest.fixture(scope="module")
def executor(cluster):
    ex = DaskExecutor(cluster.scheduler_address)
    yield ex
    ex.close()


def tune_options(executor, log: Path | None = None):
    from irkit.perf import load_hardware
    from irkit.tune.tuner import Options
    from irkit.validate.measure import QUICK_PLAN

    options = Options(sizes=[TINY], hw=load_hardware("generic", document=None), top_k=3, refine=False, passes=1,
                      plan=QUICK_PLAN, executor=executor, log=log)  # fmt: skip
    options.width, options.depth, options.rerank, options.sweep = 8, 6, 12, 4
    return options


def logged(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_cluster_lists_its_workers_hosts_and_descriptions(cluster, cache):
    from irkit.tools.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["cluster", "status", "--scheduler", cluster.scheduler_address, "--json"]) == 0
    rows = json.loads(out.getvalue())
    assert len(rows) == 2 and all(r["measures"] for r in rows)
    assert {r["key"] for r in rows} == {this_host().key}
    assert {r["description"] for r in rows} == {str(cache / "hosts" / f"{this_host().key}.hw")}


def test_the_measuring_hosts_description_comes_from_the_host(executor):
    info, text = executor.description()
    assert info.key == this_host().key and text == GENERIC_HW.read_text()


def test_a_measurement_runs_on_every_core_not_on_the_workers_one_thread(executor, cluster):
    """Dask starts its workers with OMP_NUM_THREADS=1; a measuring job sets the host's cores back
    (a parallel kernel timed on one thread would rank schedules for another machine)."""
    from irkit.distributed.jobs import threads_job

    assert executor.measure(threads_job)["omp_num_threads"] == len(os.sched_getaffinity(0))


def test_compiles_fan_out_over_both_workers(executor, cluster):
    from irkit.distributed.jobs import compile_job

    texts = [GEMM.replace("unroll_jam ii by 6 ", f"unroll_jam ii by {u} ") for u in (2, 3, 4, 6)]
    assert len(set(texts)) == 4
    with distributed.get_task_stream(executor.client) as stream:
        results = executor.map(compile_job, [(t, "gemm.design", None, TINY) for t in texts])
    assert [r["error"] for r in results] == [None] * 4 and all(r["seconds"] > 0 for r in results)
    assert len({task["worker"] for task in stream.data}) == 2


def test_a_small_tune_measures_what_it_measures_in_process(executor, tmp_path):
    """The same seed, the same candidates measured (each logged once, with the cluster host's
    fingerprint), and a best schedule among them."""
    from irkit.tune import tuner

    runs = {}
    for where, ex in (("here", LocalExecutor()), ("cluster", executor)):
        log = tmp_path / f"{where}.jsonl"
        result = tuner.tune(GEMM, "gemm.design", tune_options(ex, log))
        runs[where] = (result, logged(log))
    here, there = ({e["schedule"] for e in lines} for _, lines in runs.values())
    assert here == there and len(here) >= 2
    for _, lines in runs.values():
        assert len(lines) == len({(e["schedule"], e.get("batch")) for e in lines})  # each measured once
        assert all(e["measured"] is not None or "slower than the fastest" in e["error"] for e in lines)
    assert {e["host"]["cpu"] for e in runs["cluster"][1]} == {this_host().cpu}
    best = runs["cluster"][0].text
    assert any(e["schedule"].split(": ", 1)[1].split("; ")[0] in best for e in runs["cluster"][1])


def test_a_small_validate_agrees_with_the_same_run_here(executor, tmp_path):
    from irkit.perf import load_hardware
    from irkit.validate import measure, suite

    kernels = [k for k in suite.select(["gemm"], True)]
    paths = suite.write_variants(kernels, tmp_path, suite.EXAMPLES_DIR)
    cases = suite.cases(kernels, paths, suite.EXAMPLES_DIR)[:2]
    hw = load_hardware("generic", document=None)
    rows = {}
    for where, ex in (("here", None), ("cluster", executor)):
        rows[where] = measure.run_cases(cases, measure.QUICK_PLAN, hw, measure.real_predictor(), lambda line: None,
                                        passes=2, executor=ex)  # fmt: skip
    for a, b in zip(rows["here"], rows["cluster"]):
        assert (a["kernel"], a["schedule"], a["size"]) == (b["kernel"], b["schedule"], b["size"])
        assert a["error"] is None and b["error"] is None, (a["error"], b["error"])
        assert len(a["runs_s"]) == len(b["runs_s"]) == 2
        assert a["predicted_s"] == b["predicted_s"]  # the same description: the same prediction
        assert b["check"]["ok"] or "check" not in b


def test_killing_the_measuring_worker_loses_no_result(executor, tmp_path):
    """The worker measuring is killed (SIGKILL) while it measures: the scheduler gives the job to
    the other worker, every candidate is measured, and the log holds each exactly once."""
    from irkit.tune import tuner

    log = tmp_path / "killed.jsonl"
    client = executor.client
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(tuner.tune, GEMM, "gemm.design", tune_options(executor, log))
        victim = None
        deadline = time.monotonic() + 120
        while victim is None and time.monotonic() < deadline and not running.done():
            for worker, keys in client.processing().items():
                if any(str(k).startswith("measure_job") for k in keys):
                    victim = worker
            time.sleep(0.05)
        assert victim is not None, "no measurement was seen running"
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        result = running.result(timeout=300)
    lines = logged(log)
    lost = [e["error"] for e in lines if e["measured"] is None and "slower than the fastest" not in e["error"]]
    assert lines and not lost, lost  # a probe far slower than the fastest is dropped, as in any run
    assert len(lines) == len({(e["schedule"], e.get("batch")) for e in lines})  # none twice
    assert result.measured_count == len([e for e in lines if e.get("batch") is None and e["measured"] is not None])


def test_a_cluster_without_a_measuring_worker_says_how_to_start_one():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as bare:  # fmt: skip
        with pytest.raises(ExecutorError, match="offers the 'measure' resource.*--resources measure=1"):
            DaskExecutor(bare.scheduler_address)


def test_an_unreachable_scheduler_is_a_one_line_usage_error(tmp_path):
    from irkit.tools.cli import main

    doc = tmp_path / "gemm.design"
    doc.write_text(GEMM)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["tune", str(doc), "--scheduler", "tcp://127.0.0.1:9", "--quick"])
    assert status == 2 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err.getvalue(), err.getvalue()
    assert "Traceback" not in err.getvalue()


def test_the_matrix_runs_its_cells_on_the_cluster(cluster, tmp_path):
    from irkit.tools.cli import main

    doc = tmp_path / "rowsum.design"
    doc.write_text((ROOT / "examples" / "rowsum.design").read_text())
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(["matrix", str(doc), "--targets", "native", "--threads", "1", "--size", "M=64", "--size", "N=96",
                       "--min-time", "0.01", "--scheduler", cluster.scheduler_address, "--out-dir", str(tmp_path / "m")])  # fmt: skip
    assert status == 0, out.getvalue()
    assert "| rowsum | ✅" in out.getvalue() or "| rowsum | ⚠️" in out.getvalue()
