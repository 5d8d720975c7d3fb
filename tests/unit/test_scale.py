"""Cost must grow linearly with the document (issue 14, section 5).

Growth is asserted by counting work, never by timing: the ops visited by xDSL's
walks (each `Operation.walk` call visits one op) while a phase runs, on documents
of n and 4n statements.  Linear work gives a ratio near 4, quadratic near 16; the
bound is 6.  Results are checked too: the chains still compute what numpy does,
with the C outlining (`irkit.backends.c_outline`) that large kernels get, and
with and without schedules.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest
from xdsl.ir import Operation

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/ is not installed

from bench.scale import chain_document, growth_exponent  # noqa: E402
from irkit import progress  # noqa: E402
from irkit.api import compile as irkit_compile
from irkit.api import lower
from irkit.backends import c_outline
from irkit.backends.c import emit_c
from irkit.context import make_context
from irkit.frontend import parse_design
from irkit.passes.apply_schedule import ApplySchedulePass
from irkit.passes.lower_design import LowerDesignPass
from irkit.passes.lower_tensorop import LowerTensorOpPass
from irkit.passes.schedule import helpers as h
from irkit.reference import compare, evaluate_design, reduction_lengths

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.design"))
RATIO_BOUND = 6.0  # work(4n) / work(n): 4 when linear, 16 when quadratic


class WalkCounter:
    """Counts the ops xDSL's walks visit (calls of `Operation.walk`, which recurses per op)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.count = 0
        original = Operation.walk

        def walk(op, *args, **kwargs):
            self.count += 1
            return original(op, *args, **kwargs)

        monkeypatch.setattr(Operation, "walk", walk)


def _loop_module(text: str):
    module = parse_design(text, "<scale>")
    ctx = make_context()
    LowerDesignPass().apply(ctx, module)
    LowerTensorOpPass().apply(ctx, module)
    return module


def _apply_schedule_work(monkeypatch: pytest.MonkeyPatch, n: int, scheduled: bool) -> int:
    module = _loop_module(chain_document(n, scheduled))
    counter = WalkCounter(monkeypatch)
    ApplySchedulePass().apply(make_context(), module)
    work = counter.count
    monkeypatch.undo()
    return work


@pytest.mark.parametrize("scheduled", [False, True], ids=["no-schedule", "scheduled"])
def test_apply_schedule_work_grows_linearly(monkeypatch: pytest.MonkeyPatch, scheduled: bool):
    """Before the nest index, every stage walked the whole kernel (ratio ~16)."""
    n = 20 if scheduled else 40
    small = _apply_schedule_work(monkeypatch, n, scheduled)
    large = _apply_schedule_work(monkeypatch, 4 * n, scheduled)
    assert large / small <= RATIO_BOUND, (small, large)


def test_lowering_and_emission_work_grows_linearly(monkeypatch: pytest.MonkeyPatch):
    def work(n: int) -> int:
        module = parse_design(chain_document(n), "<scale>")
        counter = WalkCounter(monkeypatch)
        emit_c(lower(module)["loop"])
        count = counter.count
        monkeypatch.undo()
        return count

    small, large = work(50), work(200)
    assert large / small <= RATIO_BOUND, (small, large)


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_nest_index_answers_as_a_full_walk(monkeypatch: pytest.MonkeyPatch, example: Path):
    """Every answer the index gives during apply-schedule equals a walk of the kernel."""
    original = h.NestIndex.nests
    asked: list[str] = []

    def checked(self, stage):
        got = original(self, stage)
        assert [id(x) for x in got] == [id(x) for x in h.walk_nests(self.kernel, stage)], stage
        asked.append(stage)
        return got

    monkeypatch.setattr(h.NestIndex, "nests", checked)
    module = _loop_module(example.read_text())
    ApplySchedulePass().apply(make_context(), module)
    module.verify()


def _check(text: str) -> None:
    kernel = irkit_compile(text)
    design = kernel.levels["design"]
    sizes = kernel.resolve_sizes()
    inputs = kernel.random_inputs(seed=1)
    got = kernel(**inputs)
    want = evaluate_design(design, inputs, sizes)
    lengths = reduction_lengths(design, sizes)
    for name, arr in got.items():
        assert compare(arr, want[name], arr.dtype, lengths.get(name, 1)).ok, name


def test_chain_of_1000_statements_computes_correctly(tmp_path, monkeypatch):
    """The no-schedule chain of the issue, end to end (its kernel is outlined into parts)."""
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path))
    text = chain_document(1000)
    source = emit_c(lower(parse_design(text, "<scale>"))["loop"])
    assert "__part0(" in source and "irkit_tmp[" in source
    _check(text)


@pytest.mark.parametrize("scheduled", [False, True], ids=["no-schedule", "scheduled"])
def test_outlined_chains_compute_correctly(tmp_path, monkeypatch, scheduled: bool):
    """Outlining as a large kernel gets it, on small chains (thresholds lowered)."""
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(c_outline, "MIN_LINES", 40)
    monkeypatch.setattr(c_outline, "PART_LINES", 30)
    text = chain_document(60 if scheduled else 120, scheduled)
    source = emit_c(lower(parse_design(text, "<scale>"))["loop"])
    assert "__part1(" in source
    _check(text)


def test_small_kernels_are_not_outlined():
    source = emit_c(lower(parse_design(chain_document(20), "<scale>"))["loop"])
    assert "__part" not in source and "irkit_tmp" not in source


def test_reference_frees_temps_per_stage():
    """The oracle of a long chain gives the chain's value (each temp freed after its last read)."""
    design = parse_design(chain_document(500), "<scale>")
    a = np.arange(64, dtype=np.float32)
    out = evaluate_design(design, {"a": a}, {})
    np.testing.assert_array_equal(out["t499"], a + 500)


def test_growth_exponent_fit():
    assert growth_exponent([(100, 1.0), (1000, 10.0), (10000, 100.0)]) == pytest.approx(1.0)
    assert growth_exponent([(100, 1.0), (1000, 100.0)]) == pytest.approx(2.0)
    assert growth_exponent([(100, 0.001), (1000, 0.002)]) is None  # under the floor: noise


def test_progress_shows_phases_on_stderr_when_asked(monkeypatch, capsys):
    monkeypatch.setenv(progress.ENV, "1")
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "TICK_S", 0.05)
    with progress.phase("lower-tensorop"):
        progress.advance(3, 10)
        time.sleep(0.3)
    out, err = capsys.readouterr()
    assert out == ""
    assert "irkit: lower-tensorop 3/10" in err


def test_progress_is_silent_when_off(monkeypatch, capsys):
    monkeypatch.setenv(progress.ENV, "0")
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    with progress.phase("check"):
        time.sleep(0.1)
    assert capsys.readouterr() == ("", "")
