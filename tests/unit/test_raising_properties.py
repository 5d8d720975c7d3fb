"""Property: for RANDOM VALID schedules, the round trip preserves the document.

Each document is an example (blur, rowsum, transpose, elementwise) with its
schedules replaced by random ones: splits and tiles by random factors,
a reorder by a random permutation (the inner loop of a split kept inside
its outer loop), parallel on a loop that is not a reduction and has no
reduction loop around it, unroll, vectorize of the innermost loop by an
explicit width, and for producers sometimes compute_at a loop of their
consumer (in the forms `scheduled_document` describes; documents the
checker rejects are skipped).  Directives come in the order the raised
schedule prints them (splits, reorder, compute_at, parallel, unroll,
vectorize).  Then:

- `verify_document` finds no difference (no false alarm);
- raising the generated loops back to a document (`raise-loop`,
  `raise-tensorop`) and lowering that document again gives the same loop
  IR, up to the `origin` attributes that point at document lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from irkit.backends.design_text import print_design
from irkit.checks.design import DesignChecker
from irkit.context import make_context
from irkit.diagnostics import DiagnosticError
from irkit.dialects import design as d
from irkit.frontend import parse_design
from irkit.passes.raise_loop import RaiseLoopPass
from irkit.passes.raise_tensorop import RaiseTensorOpPass
from irkit.raising.verify import lowered_loops, verify_document

EXAMPLES = Path(__file__).parents[2] / "examples"
PROPERTY_EXAMPLES = ("blur", "rowsum", "transpose", "elementwise")


def unscheduled(name: str) -> tuple[str, dict[str, tuple[list[str], set[str]]], dict[str, list[str]]]:
    """(document text without schedules, stage -> (loops, reduction loops), stage -> the stages reading it)."""
    path = EXAMPLES / f"{name}.design"
    module = parse_design(path.read_text(), str(path))
    design = next(op for op in module.walk() if isinstance(op, d.DesignOp))
    for op in list(design.body.block.ops):
        if isinstance(op, d.ScheduleOp):
            op.detach()
            op.erase()
    checker = DesignChecker(design)
    assert not [x for x in checker.run() if x.severity == "error"]
    stages = {n: (list(s.loops), set(s.reduction_loops)) for n, s in checker.stages.items()}
    text = print_design(module)
    consumers: dict[str, list[str]] = {}
    for target in stages:
        for other in stages:
            if other != target and re.search(rf"^\s*{other}\b[^\n]*=[^\n]*\b{target}\[", text, re.M):
                consumers.setdefault(target, []).append(other)
    return text, stages, consumers


CASES = {name: unscheduled(name) for name in PROPERTY_EXAMPLES}


@st.composite
def stage_schedule(draw, loops: list[str], reductions: set[str]) -> tuple[list[str], list[str], list[str]]:
    """(splits, tiles and reorder; parallel, unroll and vectorize; the final loop order) of one stage."""
    nest = list(loops)
    reduction = set(reductions)
    outer_of: dict[str, str] = {}
    splits: list[str] = []
    chosen = draw(st.lists(st.sampled_from(loops), unique=True, max_size=len(loops)))
    chosen = [v for v in loops if v in chosen]  # in nest order
    if len(chosen) >= 2 and draw(st.booleans()):
        a, b = chosen[:2]
        fa, fb = draw(st.integers(2, 48)), draw(st.integers(2, 48))
        splits.append(f"tile {a}, {b} by {fa}, {fb} -> {a}o, {b}o, {a}i, {b}i")
        first = min(nest.index(a), nest.index(b))
        rest = [v for v in nest if v not in (a, b)]
        nest = rest[:first] + [f"{a}o", f"{b}o", f"{a}i", f"{b}i"] + rest[first:]
        for v in (a, b):
            outer_of[f"{v}i"] = f"{v}o"
            if v in reduction:
                reduction |= {f"{v}o", f"{v}i"}
        chosen = chosen[2:]
    for v in chosen:
        splits.append(f"split {v} by {draw(st.integers(2, 48))} -> {v}o, {v}i")
        pos = nest.index(v)
        nest[pos : pos + 1] = [f"{v}o", f"{v}i"]
        outer_of[f"{v}i"] = f"{v}o"
        if v in reduction:
            reduction |= {f"{v}o", f"{v}i"}
    order = list(draw(st.permutations(nest)))
    for inner, outer in outer_of.items():  # keep every inner loop inside its outer loop
        i, o = order.index(inner), order.index(outer)
        if i < o:
            order[i], order[o] = order[o], order[i]
    if order != nest:
        splits.append(f"reorder {', '.join(order)}")
    marks: list[str] = []
    outer_points = []
    for v in order:
        if v in reduction:
            break
        outer_points.append(v)
    if outer_points and draw(st.booleans()):
        marks.append(f"parallel {draw(st.sampled_from(outer_points))}")
    if len(order) >= 2 and draw(st.booleans()):
        marks.append(f"unroll {draw(st.sampled_from(order[:-1]))} by {draw(st.integers(2, 8))}")
    if draw(st.booleans()):
        marks.append(f"vectorize {order[-1]} by {draw(st.sampled_from([2, 4, 8, 16]))}")
    return splits, marks, order


@st.composite
def scheduled_document(draw, name: str) -> str:
    """The example with a random schedule for every stage.

    A producer is sometimes computed at a loop of its consumer (compute_at).  Raising reads a fused
    temporary only when its allocation sits in the consumer's loop nest at the compute_at loop or
    above it with only tile loops in between (see test_raising.py for the forms it cannot read
    yet), and the allocation goes inside the innermost parallel loop: so the consumer's outermost
    loop is made parallel, the compute_at loop is that loop or a tile loop (an outer loop of a
    split) nested in it with only tile loops between, and the producer keeps its own loops
    (only unroll and vectorize marks).
    """
    text, stages, consumers = CASES[name]
    chosen = {stage: draw(stage_schedule(*stages[stage])) for stage in stages}
    placements: dict[str, str] = {}
    for stage in reversed(list(stages)):  # consumers first
        if stage not in consumers or not draw(st.booleans()):
            continue
        consumer = draw(st.sampled_from(consumers[stage]))
        if consumer in placements:
            continue  # one level of fusion
        order = chosen[consumer][2]
        candidates = [order[0]]
        for loop in order[1:-1]:
            if not loop.endswith("o"):
                break
            candidates.append(loop)
        placements[stage] = f"compute_at {consumer}.{draw(st.sampled_from(candidates))}"
        consumer_marks = chosen[consumer][1]
        consumer_marks[:] = [f"parallel {order[0]}"] + [m for m in consumer_marks if not m.startswith("parallel ")]
        loops = stages[stage][0]  # the producer keeps its own loops, with unroll and vectorize marks
        marks = []
        if len(loops) >= 2 and draw(st.booleans()):
            marks.append(f"unroll {draw(st.sampled_from(loops[:-1]))} by {draw(st.integers(2, 8))}")
        if draw(st.booleans()):
            marks.append(f"vectorize {loops[-1]} by {draw(st.sampled_from([2, 4, 8, 16]))}")
        chosen[stage] = ([], marks, list(loops))
    sections = []
    for stage, (splits, marks, _) in chosen.items():
        lines = splits + ([placements[stage]] if stage in placements else []) + marks
        if lines:
            sections.append(f"  schedule {stage} {{\n" + "".join(f"    {line}\n" for line in lines) + "  }\n")
    body = text.rstrip()
    assert body.endswith("}")
    return body[:-1] + "".join(sections) + "}\n"


def _without_origins(loop_ir: str) -> str:
    return re.sub(r',? origin = "[^"]*"', "", loop_ir)


def raised_document(module) -> str:
    loops = lowered_loops(module)
    ctx = make_context()
    RaiseLoopPass().apply(ctx, loops)
    RaiseTensorOpPass().apply(ctx, loops)
    return print_design(loops)


@pytest.mark.parametrize("example", PROPERTY_EXAMPLES)
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_random_valid_schedule_round_trips(example, data):
    document = data.draw(scheduled_document(example), label="document")
    note(document)
    try:
        module = parse_design(document, "random.design")
    except DiagnosticError as exc:
        note(str(exc))
        assume(False)  # a combination the checker rejects
        return
    assert verify_document(module) == []
    raised = raised_document(module)
    note(raised)
    again = parse_design(raised, "raised.design")
    assert _without_origins(str(lowered_loops(again))) == _without_origins(str(lowered_loops(module)))
