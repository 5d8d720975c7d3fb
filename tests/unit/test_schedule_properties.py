"""Property: every example with its own schedule replaced by a RANDOM LEGAL one
(splits and tiles by 1..17, legal reorders, parallel on a loop that is not a
reduction, unroll, vectorize of the final innermost loop), compiled to C and
run at random small sizes, agrees with the numpy oracle.

The generator replays the directives on the stage's loop names as the
checker does and keeps only reorders (and tiles, which reorder) that leave
every loop inside the loops its bounds depend on (the inner loop of a split
inside its outer loop and inside the loops its original bounds used).
Examples are derandomized, so a rerun builds nothing new: compiled kernels
are cached (~/.cache/irkit).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import irkit
from irkit.affine.where import bounded_index, linear, normal_form
from irkit.backends.design_text import print_design
from irkit.checks.design import DesignChecker
from irkit.dialects import design as d
from irkit.frontend import parse_design
from irkit.named_ops import get_named_op
from irkit.reference import compare, reduction_lengths

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.design"))


def unscheduled(path: Path) -> tuple[str, dict[str, tuple[list[str], set[str]]], list[str]]:
    """(document text without schedules, stage -> (loops, reduction loops), size names)."""
    module = parse_design(path.read_text(), str(path))
    design = next(op for op in module.walk() if isinstance(op, d.DesignOp))
    for op in list(design.body.block.ops):
        if isinstance(op, d.ScheduleOp):
            op.detach()
            op.erase()
    checker = DesignChecker(design)
    assert not [x for x in checker.run() if x.severity == "error"]
    stages: dict[str, tuple[list[str], set[str]]] = {}
    for name, stage in checker.stages.items():
        reductions = set(stage.reduction_loops)
        if isinstance(stage.op, d.NamedOp) and stage.op.op_name.data == "softmax":
            axis = int(get_named_op("softmax").values(dict(stage.op.params.data))["axis"])  # type: ignore[arg-type]
            reductions.add(stage.loops[axis])  # the max and sum nests reduce along it
        deps: dict[str, set[str]] = {}
        if isinstance(stage.op, d.StmtOp):
            for text_ in stage.op.where_texts:
                constraint = normal_form(text_)
                inner = bounded_index(constraint, stage.loops)
                if inner is not None:
                    deps.setdefault(inner, set()).update(v for v in stage.loops if v in linear(constraint.expr)[0])
                    deps[inner].discard(inner)
        ordered = isinstance(stage.op, d.StmtOp) and bool(stage.op.carry_loops)  # a recurrence: split, unroll
        stages[name] = (list(stage.loops), reductions, deps, ordered)
    sizes = [op.sym_name.data for op in design.body.block.ops if isinstance(op, d.SizeOp)]
    return print_design(module), stages, sizes


class Nest:
    """A stage's loops while a random schedule is built (outermost first)."""

    def __init__(self, loops: list[str], reductions: set[str], deps: dict[str, set[str]] | None = None):
        self.loops = list(loops)
        self.reductions = set(reductions)
        self.deps: dict[str, set[str]] = {v: set() for v in loops}  # loops whose variables a bound uses
        for v, used in (deps or {}).items():  # a `where` bounds its innermost index by the others
            self.deps[v] |= used
        self.count = 0

    def fresh(self) -> tuple[str, str]:
        self.count += 1
        return f"s{self.count}o", f"s{self.count}i"

    def split(self, v: str) -> tuple[str, str]:
        o, i = self.fresh()
        pos = self.loops.index(v)
        self.loops[pos : pos + 1] = [o, i]
        self.deps[o] = set(self.deps[v])
        self.deps[i] = {o} | self.deps[v]
        for w, used in self.deps.items():  # v's value is now o's and i's
            if v in used:
                self.deps[w] = (used - {v}) | {o, i}
        if v in self.reductions:
            self.reductions |= {o, i}
        return o, i

    def legal(self, order: list[str]) -> bool:
        return all(self.deps[v] <= set(order[: order.index(v)]) for v in order)


def random_schedule(
    draw, loops: list[str], reductions: set[str], deps: dict[str, set[str]], ordered: bool = False
) -> list[str]:
    nest = Nest(loops, reductions, deps)
    out: list[str] = []
    parallel_done = False
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["split", "unroll"] if ordered else ["split", "tile", "reorder", "parallel", "unroll"]))
        if kind == "split":
            v = draw(st.sampled_from(nest.loops))
            f = draw(st.integers(1, 17))
            o, i = nest.split(v)
            out.append(f"split {v} by {f} -> {o}, {i}")
        elif kind == "tile" and len(nest.loops) >= 2:
            tiled = draw(
                st.lists(st.sampled_from(nest.loops), min_size=2, max_size=min(3, len(nest.loops)), unique=True)
            )
            factors = [draw(st.integers(1, 17)) for _ in tiled]
            saved = (list(nest.loops), {k: set(v) for k, v in nest.deps.items()}, set(nest.reductions), nest.count)
            first = min(nest.loops.index(v) for v in tiled)
            pairs = [nest.split(v) for v in tiled]
            outer, inner = [p[0] for p in pairs], [p[1] for p in pairs]
            rest = [v for v in nest.loops if v not in outer + inner]
            order = rest[:first] + outer + inner + rest[first:]
            if not nest.legal(order):
                nest.loops, nest.deps, nest.reductions, nest.count = saved
                continue
            nest.loops = order
            out.append(f"tile {', '.join(tiled)} by {', '.join(map(str, factors))} -> {', '.join(outer + inner)}")
        elif kind == "reorder" and len(nest.loops) >= 2:
            named = draw(st.lists(st.sampled_from(nest.loops), min_size=2, max_size=len(nest.loops), unique=True))
            positions = sorted(nest.loops.index(v) for v in named)
            order = list(nest.loops)
            for p, v in zip(positions, named):
                order[p] = v
            if not nest.legal(order):
                continue
            nest.loops = order
            out.append(f"reorder {', '.join(named)}")
        elif kind == "parallel" and not parallel_done:
            candidates = [v for v in nest.loops if v not in nest.reductions]
            if candidates:
                out.append(f"parallel {draw(st.sampled_from(candidates))}")
                parallel_done = True
        elif kind == "unroll":
            out.append(f"unroll {draw(st.sampled_from(nest.loops))} by {draw(st.integers(1, 8))}")
    if not ordered and draw(st.booleans()):
        width = draw(st.sampled_from([None, 2, 3, 4, 8, 16]))
        out.append(f"vectorize {nest.loops[-1]}" + (f" by {width}" if width else ""))
    return out


def with_schedules(text: str, schedules: dict[str, list[str]]) -> str:
    blocks = "".join(
        f"  schedule {stage} {{\n" + "".join(f"    {line}\n" for line in lines) + "  }\n"
        for stage, lines in schedules.items()
        if lines
    )
    body = text.rstrip()
    assert body.endswith("}")
    return body[:-1] + blocks + "}\n"


CASES = {path.stem: unscheduled(path) for path in EXAMPLES}


@pytest.mark.parametrize("example", sorted(CASES))
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,  # the same schedules every run: their kernels come from the build cache
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_random_legal_schedule_agrees_with_numpy(example, data):
    text, stages, size_names = CASES[example]
    schedules = {stage: random_schedule(data.draw, *stages[stage]) for stage in stages}
    document = with_schedules(text, schedules)
    note(document)
    kernel = irkit.compile(document)
    for _ in range(2):
        sizes = {s: data.draw(st.integers(1, 13), label=s) for s in size_names}
        inputs = kernel.random_inputs(sizes, seed=data.draw(st.integers(0, 100), label="seed"))
        with np.errstate(all="ignore"):
            got = kernel(sizes, **inputs)
            expected = kernel.reference(inputs, sizes)
        lengths = reduction_lengths(kernel.levels["design"], kernel.resolve_sizes(sizes))
        for name, value in expected.items():
            report = compare(got[name], value, value.dtype, lengths.get(name, 1))
            assert report.ok, f"{name} at {sizes}: {report}"
