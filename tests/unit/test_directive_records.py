"""The directive records: complete, round-tripping, and offering only legal choices."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irkit.directives as dv
from irkit.checks.design import DesignChecker
from irkit.checks.schedule import replay
from irkit.diagnostics import DiagnosticError
from irkit.dialects import design as d
from irkit.directives import directive_op, entry_of, record_for, record_of
from irkit.directives.nest import Nest
from irkit.frontend import parse_design
from irkit.passes.registry import IRKIT_PASSES
from irkit.registry import DIRECTIVE_RECORDS
from irkit.tune.space import candidates, stage_spaces

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.design"))
GRAMMAR = (REPO / "grammars" / "design.lark").read_text()


def _design(path: Path) -> d.DesignOp:
    module = parse_design(path.read_text(), str(path))
    return next(op for op in module.walk() if isinstance(op, d.DesignOp))


def _design_of(text: str) -> d.DesignOp:
    module = parse_design(text, "printed.design")
    return next(op for op in module.walk() if isinstance(op, d.DesignOp))


def test_every_directive_of_the_grammar_has_a_record_and_every_record_a_rule():
    rule = re.search(r"^_directive:(.*?)\n(?!\s*\|)", GRAMMAR, re.S | re.M)
    assert rule is not None
    kinds = {k.strip() for k in rule.group(1).replace("\n", " ").split("|")}
    assert kinds == set(DIRECTIVE_RECORDS)


def test_every_record_has_its_pass_and_its_transform():
    for record in DIRECTIVE_RECORDS.values():
        cls = IRKIT_PASSES[record.pass_name]()
        assert cls.__name__ == record.pass_class and cls.name == record.pass_name
        record.load_transform()
        from irkit.passes.schedule import load

        assert callable(load(record.kind)), record.kind


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_records_read_back_and_print_what_the_document_says(path):
    """entry -> op gives the op back, and op -> text -> op too: each stage's schedule printed by
    the records and parsed again has the same directives."""
    design = _design(path)
    for sched in (op for op in design.body.block.ops if isinstance(op, d.ScheduleOp)):
        entries = [entry_of(op) for op in sched.body.block.ops]
        for op, entry in zip(sched.body.block.ops, entries):
            again = directive_op(entry)
            assert type(again) is type(op) and again.properties == op.properties
        lines = "\n    ".join(record_of(e["kind"]).text(e) for e in entries)
        printed = _document_with(path, sched.stage.data, lines, keep=True)
        reparsed = _design_of(printed)
        (same,) = [o for o in reparsed.body.block.ops if isinstance(o, d.ScheduleOp) and o.stage.data == sched.stage.data]
        assert [entry_of(op) for op in same.body.block.ops] == entries


def test_an_unknown_kind_reads_back_as_nothing():
    assert directive_op({"kind": "no_such_directive"}) is None and record_of("no_such_directive") is None


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_checker_and_the_comparison_replay_alike(path):
    """Both replay through the records: the checker's (checking) and the comparison's (quiet)
    nests end with the same loops, steps and marks."""
    design = _design(path)
    checker = DesignChecker(design)
    checker.run()
    for sched in (op for op in design.body.block.ops if isinstance(op, d.ScheduleOp)):
        stage = checker.stages[sched.stage.data]
        loud = Nest(stage.target, stage.loops, stage.reduction_loops, stage.reads)
        quiet = Nest(stage.target, stage.loops, stage.reduction_loops, stage.reads, quiet=True)
        for op in sched.body.block.ops:
            replay(loud, op)
            record = record_for(op)
            record.replay(quiet, entry_of(op), None)
        assert loud.diags == []
        assert loud.loops == quiet.loops and loud.marks == quiet.marks and loud.packs == quiet.packs


def test_a_checking_replay_reports_and_a_quiet_one_does_not():
    split = dv.SplitOp("q", 4, "qo", "qi")
    loud, quiet = Nest("C", ["i", "j"]), Nest("C", ["i", "j"], quiet=True)
    replay(loud, split)
    record_of("split").replay(quiet, entry_of(split), None)
    assert [x.message for x in loud.diags] == ["unknown loop 'q' in the schedule of 'C'; its loops are: i, j"]
    assert quiet.diags == [] and quiet.names == ["i", "j"]


SPACES = {path.stem: stage_spaces(_design(path)) for path in EXAMPLES}


@pytest.mark.parametrize("name", sorted(SPACES))
def test_every_choice_of_every_space_replays_without_a_complaint(name):
    assert SPACES[name], "every example has a stage whose extents are known"
    for space in SPACES[name].values():
        found = candidates(space)
        kinds = {e["kind"] for e in found}
        assert {"split", "tile", "parallel"} <= kinds, space.stage
        for entry in found:
            nest = Nest(space.stage, space.loops, space.reductions, space.reads)
            record_of(entry["kind"]).replay(nest, entry, dv.ParallelOp("unused"))  # an op to locate at
            assert nest.diags == [], (entry, [x.message for x in nest.diags])


def test_a_space_follows_the_hardware_and_the_sizes():
    gemm = _design(REPO / "examples" / "gemm.design")
    small = stage_spaces(gemm, {"M": 64, "N": 64, "K": 64}, lanes=16)["C"]
    assert small.extents == {"i": 64, "j": 64, "k": 64}
    widths = sorted(e["width"] for e in candidates(small) if e["kind"] == "vectorize")
    assert widths == [4, 8, 16, 32, 64]  # a quarter and a half of the lanes too: short rows of a register block
    assert all(e["loop"] != "k" for e in candidates(small) if e["kind"] == "parallel"), "k is a reduction"
    assert all(e["factor"] < 64 for e in candidates(small) if e["kind"] == "split")


def _document_with(path: Path, stage: str, line: str, keep: bool = False) -> str:
    """The document with the schedule of `stage` (every schedule, unless `keep`) removed and
    `line` as the directives of `stage`."""
    which = re.escape(stage) if keep else r"\w+"
    body = re.sub(rf"\n\s*schedule {which} \{{[^}}]*\}}", "", path.read_text()).rstrip()
    assert body.endswith("}")
    return body[:-1] + f"  schedule {stage} {{ {line} }}\n}}\n"


CHECKED = ["gemm", "blur", "softmax", "rowsum"]
CHOICES = [
    (name, stage, entry)
    for name in CHECKED
    for stage, space in SPACES[name].items()
    for entry in candidates(space)
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CHOICES))
def test_the_checker_accepts_what_the_space_offers(choice):
    """The full checker (lowering included) accepts a choice; `pack` may be refused where the
    tile it would copy depends on the sizes, which only lowering can tell, with a located
    diagnostic, never a crash."""
    name, stage, entry = choice
    line = record_of(entry["kind"]).text(entry)
    text = _document_with(REPO / "examples" / f"{name}.design", stage, line)
    try:
        parse_design(text, "choice.design")
    except DiagnosticError as err:
        assert entry["kind"] == "pack", (line, [x.message for x in err.diagnostics])
        assert all(x.line > 0 for x in err.diagnostics)


def test_loop_marks_are_read_back_by_their_records():
    """Raising reads `parallel`, `unroll` and `vectorize` from a loop's marks through the
    records' `from_loop`; an unmarked loop gives no entry from any record."""
    from types import SimpleNamespace

    from irkit.directives.record import RECORDS

    marked = SimpleNamespace(name="jo", parallel=True, unroll=4, vector=16)
    plain = SimpleNamespace(name="k", parallel=False, unroll=None, vector=None)
    readers = {kind: r.from_loop for kind, r in RECORDS.items() if r.from_loop is not None}
    assert set(readers) >= {"parallel", "unroll", "vectorize"}
    got = {kind: read(marked) for kind, read in readers.items()}
    assert got["parallel"] == {"kind": "parallel", "loop": "jo"}
    assert got["unroll"] == {"kind": "unroll", "loop": "jo", "factor": 4}
    assert got["vectorize"] == {"kind": "vectorize", "loop": "jo", "width": 16}
    assert all(read(plain) is None for read in readers.values())
    for kind, entry in got.items():  # what is read back prints as the directive it is
        assert RECORDS[kind].text(entry).startswith(kind)
