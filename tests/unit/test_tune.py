"""`irkit tune`'s parts that need no search: size sets, durations, the document rewriting, the log,
the tie rule, the candidates' replay (refusals lowering would make), and the command line's errors.

End-to-end runs are in test_tune_end_to_end.py, properties of the search in test_tune_properties.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irkit.diagnostics import DiagnosticError
from irkit.frontend import parse_design
from irkit.tools.cli import main
from irkit.tools.opt import UsageError
from irkit.tools.tune import parse_duration, size_sets
from irkit.tune import log as tlog
from irkit.tune.candidate import extend, start
from irkit.tune.document import annotated_text, tuned_text
from irkit.tune.stages import read_kernel
from irkit.tune.tuner import TIE, Contender, choose
from irkit.validate.suite import own_schedules, schedule_blocks

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
ROWSUM = EXAMPLES / "rowsum.design"
ELEMENTWISE = EXAMPLES / "elementwise.design"


# --- size sets and durations -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["M=1,N=2"], [{"M": 1, "N": 2}]),
        (["M=1", "N=2"], [{"M": 1, "N": 2}]),  # different sizes: one set, as `irkit run --size` reads them
        (["M=1", "M=2"], [{"M": 1}, {"M": 2}]),  # a size named again starts the next set
        (["M=1,N=2", "M=3,N=4"], [{"M": 1, "N": 2}, {"M": 3, "N": 4}]),
        (["M=1", "N=2", "M=3", "N=4"], [{"M": 1, "N": 2}, {"M": 3, "N": 4}]),
        (["M=1, N=2"], [{"M": 1, "N": 2}]),
        ([], []),
    ],
)
def test_size_sets(items, expected):
    assert size_sets(items, None) == expected


def test_size_sets_from_a_file_are_one_set_a_line(tmp_path):
    path = tmp_path / "sizes.txt"
    path.write_text("# sets to tune for\nM=1,N=2\n\nM=3  # a set of one size\nN=4\n")
    assert size_sets([], str(path)) == [{"M": 1, "N": 2}, {"M": 3}, {"N": 4}]  # lines are never merged
    assert size_sets(["M=9,N=9"], str(path))[0] == {"M": 9, "N": 9}


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["M=x"], "--size M: 'x' is not an integer"),
        (["M"], "--size expects NAME=VALUE, got 'M'"),
        (["=3"], "--size expects NAME=VALUE, got '=3'"),
        (["M=1,N"], "--size expects NAME=VALUE, got 'N'"),
        (["1M=2"], "--size expects NAME=VALUE"),
    ],
)
def test_bad_size_sets_are_usage_errors(items, message):
    with pytest.raises(UsageError, match="^" + message.replace("(", r"\(")):
        size_sets(items, None)


def test_an_unreadable_sizes_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="--sizes: cannot read .*nothing.txt"):
        size_sets([], str(tmp_path / "nothing.txt"))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90.0), ("5m", 300.0), ("1h", 3600.0), ("2", 2.0), ("1.5min", 90.0), (" 30 s ", 30.0), ("0.5h", 1800.0)],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["abc", "", "5x", "-3s", "1e3s", "m", "5 m s", "1,5m"])
def test_bad_durations_are_usage_errors(text):
    with pytest.raises(UsageError, match=f"--budget expects a duration such as 90s, 5m or 1h, got '{text}'"):
        parse_duration(text)


# --- writing the tuned document ------------------------------------------------------------------


def _outside_blocks(text: str) -> list[str]:
    """The lines outside every schedule block and the comment lines directly above one."""
    out, pos = [], 0
    for block in schedule_blocks(text):
        out.append(text[pos : block.start])
        pos = block.end
    out.append(text[pos:])
    return "".join(out).splitlines()


def _in_order(needles: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(line == got for got in it) for line in needles)


NEW = {"out": ["split j by 64 -> jo, ji", "vectorize ji by 8"], "t1": ["vectorize j by 8"]}


def test_tuned_text_keeps_every_line_but_the_schedules_and_notes_each_block():
    text = ELEMENTWISE.read_text()
    notes = {"out": "irkit tune: note for out", "t1": "irkit tune: note for t1", "": "unused"}
    tuned = tuned_text(text, NEW, notes)
    lines = tuned.splitlines()
    assert _in_order(_outside_blocks(text), lines)  # docs, layout, hardware, assumptions: all kept, in order
    assert own_schedules(tuned) == NEW
    for stage in NEW:
        at = lines.index(f"  schedule {stage} {{")
        assert lines[at - 1] == f"  # {notes[stage]}"
    assert [ln for ln in lines if ln.lstrip().startswith("# irkit tune")] == [f"  # {notes[s]}" for s in NEW]
    assert "unused" not in tuned
    assert "compute_at" not in tuned  # the old blocks are gone
    parse_design(tuned, "tuned.design")


def test_tuned_text_of_no_directives_drops_the_blocks_with_one_note():
    text = ELEMENTWISE.read_text()
    tuned = tuned_text(text, {}, {"": "irkit tune: no directives"})
    assert own_schedules(tuned) == {}
    assert tuned.count("# irkit tune: no directives") == 1
    assert _in_order(_outside_blocks(text), tuned.splitlines())
    parse_design(tuned, "tuned.design")


def test_tuned_text_of_a_document_without_schedules_adds_the_blocks_inside_the_design():
    text = "design d {\n  sizes { N = 8 }\n  tensor a : f32[N] input\n  tensor b : f32[N] output\n  b[i] = 2 * a[i]\n}\n"
    tuned = tuned_text(text, {"b": ["vectorize i by 4"]}, {"b": "note"})
    assert own_schedules(tuned) == {"b": ["vectorize i by 4"]}
    assert "  # note\n  schedule b {\n    vectorize i by 4\n  }\n" in tuned and tuned.rstrip().endswith("}")
    parse_design(tuned, "tuned.design")


@pytest.mark.parametrize("path", [ROWSUM, ELEMENTWISE, EXAMPLES / "gemm.design"], ids=lambda p: p.stem)
def test_annotated_text_adds_one_note_line_above_each_schedule_line(path):
    text = path.read_text()
    stages = list(own_schedules(text))
    notes = {s: f"irkit tune: kept {s}" for s in stages}
    out = annotated_text(text, notes)
    lines = out.splitlines()
    for s in stages:
        at = next(i for i, ln in enumerate(lines) if ln.strip().startswith(f"schedule {s} "))
        assert lines[at - 1].strip() == f"# irkit tune: kept {s}"
        assert lines[at - 1].index("#") == lines[at].index("schedule")  # indented like the block
    removed = "".join(ln + "\n" for ln in lines if not ln.strip().startswith("# irkit tune: kept"))
    assert removed == text if text.endswith("\n") else removed.rstrip("\n") == text.rstrip("\n")
    assert annotated_text(text, {}) == text


def test_annotated_text_with_the_word_schedule_in_the_comment_above():
    """Regression: the note went inside a comment line that says "schedule" (`# The schedule: ...`)."""
    text = ROWSUM.read_text().replace("# Loops of s:", "# The schedule: loops of s:")
    lines = annotated_text(text, {"s": "NOTE"}).splitlines()
    at = lines.index("  schedule s {")
    assert lines[at - 1] == "  # NOTE"
    assert "  # The schedule: loops of s: i (over s), then j (the reduction).  Blocks of 32 rows" in lines
    assert sum("NOTE" in ln for ln in lines) == 1


# --- the log -----------------------------------------------------------------------------------


HOST = {"cpu": "test cpu", "isa": "avx2", "hw": "0123"}


def _entry(schedules, measured, sizes=None, document="doc", host=HOST, error=None) -> tlog.Entry:
    return tlog.Entry(document, sizes or {"M": 8}, schedules, 2e-6, measured, 0.1, host, error)


def test_the_log_round_trips_and_knows_this_document_and_host_only(tmp_path):
    path = tmp_path / "tune.jsonl"
    assert tlog.read_log(path) == []  # none yet
    rows = [
        _entry({"s": ["parallel i"]}, 1e-6),
        _entry({}, 3e-6, sizes={"N": 4, "M": 8}),
        _entry({"s": ["parallel i"]}, 9e-6, document="other"),
        _entry({"s": ["parallel i"]}, 8e-6, host={**HOST, "cpu": "elsewhere"}),
        _entry({"s": ["vectorize j by 8"]}, None, error="wrong result"),
        _entry({"s": ["parallel i"]}, 0.9e-6),  # measured again: the last one wins
    ]
    for row in rows:
        tlog.append(path, row)
    assert len(path.read_text().splitlines()) == len(rows)
    assert all(json.loads(line) for line in path.read_text().splitlines())
    back = tlog.read_log(path)
    assert back == rows
    known = tlog.known(back, "doc", dict(HOST))
    assert set(known) == {("s: parallel i", "M=8"), ("", "M=8,N=4"), ("s: vectorize j by 8", "M=8")}
    assert known[("s: parallel i", "M=8")].measured == 0.9e-6
    dropped = known[("s: vectorize j by 8", "M=8")]
    assert dropped.measured is None and dropped.error == "wrong result"
    assert "error" not in json.loads(path.read_text().splitlines()[0])  # measured lines carry no error key


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("not json", "JSONDecodeError"),
        ('{"document": "doc"}', "KeyError"),
        ('{"document": "d", "sizes": {"M": "x"}, "schedules": {}, "measured": 1}', "ValueError"),
        ('{"document": "d", "sizes": [], "schedules": {}, "measured": 1}', "AttributeError"),
        ("[1, 2]", "TypeError"),
    ],
)
def test_a_malformed_log_line_is_reported_with_its_path_and_line(tmp_path, line, why):
    path = tmp_path / "tune.jsonl"
    tlog.append(path, _entry({}, 1e-6))
    path.write_text(path.read_text() + "\n" + line + "\n")  # a blank line is skipped, but counted
    with pytest.raises(DiagnosticError) as info:
        tlog.read_log(path)
    (diag,) = info.value.diagnostics
    assert diag.severity == "error"
    assert diag.message.startswith(f"{path}:3: not a tuning-log line ({why}")


def test_the_document_hash_ignores_the_schedules_only():
    text = ROWSUM.read_text()
    h = tlog.document_hash(text)
    assert len(h) == 16
    assert tlog.document_hash(tuned_text(text, {"s": ["parallel i"]}, {"s": "a note"})) == h
    assert tlog.document_hash(annotated_text(text, {"s": "a note"})) == h
    assert tlog.document_hash(text.replace("M = 4096", "M = 4095")) != h


def test_schedule_and_sizes_keys_do_not_depend_on_order():
    assert tlog.sizes_key({"N": 2, "M": 1}) == tlog.sizes_key({"M": 1, "N": 2}) == "M=1,N=2"
    a = {"t": ["vectorize j"], "out": ["parallel i", "vectorize j"]}
    assert tlog.schedule_key(a) == tlog.schedule_key(dict(reversed(a.items())))
    assert tlog.schedule_key(a) == "out: parallel i; vectorize j | t: vectorize j"


# --- the tie rule ------------------------------------------------------------------------------


def _contender(name: str, *measured: float | None) -> Contender:
    return Contender({"s": [name]}, "", "search", measured=list(measured))


def test_choose_gives_ties_to_the_earlier_in_the_list():
    first, second = _contender("a", 1.0), _contender("b", 0.99)  # 1% apart: one measurement apart
    assert choose([first, second]) is first
    assert choose([second, first]) is second
    edge = _contender("c", 1.0 / (1 + TIE) * 1.0001)  # just inside the 2%
    assert choose([first, edge]) is first


def test_choose_takes_the_measured_best_beyond_the_tie():
    a, b, c = _contender("a", 1.0), _contender("b", 0.99), _contender("c", 0.95)
    assert choose([a, b, c]) is c  # a and b are within 2% of each other, not of c
    assert choose([a, _contender("d", 0.97)]).schedules == {"s": ["d"]}


def test_choose_over_several_sizes_uses_every_size():
    slow_at_one = _contender("a", 1.0, 10.0)
    even = _contender("b", 2.0, 2.0)
    assert choose([slow_at_one, even]) is even  # geometric mean 3.2 against 2
    unmeasured = _contender("c", 0.1, None)
    assert choose([unmeasured, even]) is even  # a size without a measurement never wins


# --- the candidates' replay refuses what lowering refuses ---------------------------------------


def document_errors(text: str) -> list[str]:
    """The error messages of the real checker (`irkit check`: the checker, then the lowering check)."""
    from irkit.checks.document import check_document
    from irkit.frontend import build_design

    module, diagnostics = build_design(text, "candidate.design")
    assert module is not None, [x.message for x in diagnostics]
    return [x.message for x in diagnostics + check_document(module) if x.severity == "error"]


@pytest.fixture(scope="module")
def rowsum_stage():
    kernel = read_kernel(ROWSUM.read_text(), str(ROWSUM), {"M": 16, "N": 32})
    return kernel.stages["s"], kernel.reads["s"]


def _entries(*texts: str) -> list[dict]:
    """Directive texts as record entries, read back from the document they are written into."""
    from irkit.dialects import design as d
    from irkit.directives import entry_of
    from irkit.validate.suite import replace_schedules

    module = parse_design(replace_schedules(ROWSUM.read_text(), {"s": list(texts)}), "x.design", check=False)
    (sched,) = [op for op in module.walk() if isinstance(op, d.ScheduleOp)]
    return [entry_of(op) for op in sched.body.block.ops]


@pytest.mark.parametrize(
    ("texts", "accepted"),
    [
        (["split j by 16 -> jo, ji", "interchange i, jo"], True),
        (["split j by 16 -> jo, ji", "interchange jo, ji"], False),  # ji's bounds use jo
        (["split j by 16 -> jo, ji", "reorder i, ji, jo"], False),
        (["split j by 16 -> jo, ji", "split ji by 2 -> jio, jii", "interchange jo, jii"], False),  # jii inside jio
        (["split j by 16 -> jo, ji", "split jo by 2 -> joo, joi", "interchange joi, ji"], False),  # ji inside joi
        (["split j by 16 -> jo, ji", "split jo by 2 -> joo, joi", "interchange joo, i"], True),
        (["tile i, j by 4, 8 -> io, jo, ii, ji", "interchange jo, ii"], True),
        (["tile i, j by 4, 8 -> io, jo, ii, ji", "interchange io, ii"], False),
    ],
)
def test_extend_refuses_a_loop_moved_outside_a_loop_its_bounds_use(rowsum_stage, texts, accepted):
    """Regression: the names-only replay let `interchange jo, ji` through, which the checker (lowering) refuses."""
    from irkit.validate.suite import replace_schedules

    info, reads = rowsum_stage
    c = start(info, reads)
    for entry in _entries(*texts):
        c = extend(c, entry, info)
        if c is None:
            break
    assert (c is not None) == accepted
    assert (not document_errors(replace_schedules(ROWSUM.read_text(), {"s": texts}))) == accepted  # as the checker


CONTRACT = (
    "design contract {\n  sizes { M = 9, N = 14, K = 5 }\n  tensor a : f32[M, K] input\n  tensor b : f32[K, N] input\n"
    "  tensor out : f32[M, N] output\n  out[i, j] += a[i, k] * b[k, j]\n  hardware generic\n}\n"
)
COLSUM = (
    "design colsum {\n  sizes { M = 3, N = 14 }\n  tensor a : f32[M, N] input\n  tensor out : f32[N] output\n"
    "  out[j] += a[i, j]\n  hardware generic\n}\n"
)


@pytest.mark.parametrize(
    ("text", "texts", "accepted"),
    [
        (CONTRACT, ["split k by 4 -> ko, ki", "pack b at j"], True),
        (CONTRACT, ["split k by 4 -> ko, ki", "unroll_jam i by 2", "pack b at j"], True),  # gemm's order
        (CONTRACT, ["split k by 4 -> ko, ki", "pack b at j", "unroll_jam i by 2"], False),  # a copy beside the nest
        (CONTRACT, ["split k by 4 -> ko, ki", "pack a at i", "unroll_jam i by 2"], False),
        (CONTRACT, ["split k by 4 -> ko, ki", "pack a at ko", "unroll_jam j by 2"], False),
        (CONTRACT, ["split k by 4 -> ko, ki", "reorder i, ko, j, ki", "pack a at ko", "unroll_jam j by 2"], True),
        (COLSUM, ["split j by 4 -> jo, ji", "pack a at jo"], False),  # the size-dependent i after ji
        (COLSUM, ["split j by 4 -> jo, ji", "split i by 2 -> io, ii", "pack a at jo"], False),
        (COLSUM, ["split j by 2 -> jo, ji", "pack a at ji", "unroll_jam ji by 2"], False),
        (CONTRACT, ["split j by 4 -> jo, ji", "interchange ji, k", "pack b at jo"], True),  # k (a size) first inside
        (CONTRACT, ["split j by 4 -> jo, ji", "pack b at jo"], False),  # ji first, k after it
        # a's k spans its size but is the copy's outermost part (not a's layout's): [k][4 rows of i]
        (CONTRACT, ["split i by 4 -> io, ii", "reorder io, k, j, ii", "pack a at io"], True),
        (CONTRACT, ["split i by 4 -> io, ii", "reorder io, j, ii, k", "pack a at io"], False),  # k after ii
    ],
)
def test_extend_refuses_packs_lowering_refuses(text, texts, accepted):
    """Regressions: `unroll_jam L` after a `pack` at L or inside it, and a pack whose one size-dependent
    extent is not the outermost loop inside the pack's loop, passed the replay but not lowering."""
    from irkit.dialects import design as d
    from irkit.directives import entry_of
    from irkit.validate.suite import replace_schedules

    stage = "out"
    document = replace_schedules(text, {stage: texts})
    kernel = read_kernel(text, "x.design", {})
    info = kernel.stages[stage]
    module = parse_design(document, "x.design", check=False)
    (sched,) = [op for op in module.walk() if isinstance(op, d.ScheduleOp)]
    c = start(info, kernel.reads[stage])
    for op in sched.body.block.ops:
        c = extend(c, entry_of(op), info)
        if c is None:
            break
    assert (c is not None) == accepted
    assert (not document_errors(document)) == accepted, document_errors(document)  # as the checker


def test_conv2d_offers_no_pack_of_the_input_it_reads_through_a_padded_copy():
    """Regression: conv2d's loops read `I_pad`, so `pack I at ...` is refused by lowering (not read inside)."""
    from irkit.tune.candidate import next_entries

    path = EXAMPLES / "conv2d.design"
    kernel = read_kernel(path.read_text(), str(path), {"N": 1, "C": 4, "F": 4, "H": 8, "W": 8})
    (stage,) = kernel.stages
    info = kernel.stages[stage]
    c = start(info, kernel.reads[stage])
    packs = [e for e in next_entries(c, info, 8, 16) if e["kind"] == "pack"]
    assert {e["tensor"] for e in packs} >= {"I"}  # the records offer it ...
    assert not [e for e in packs if e["tensor"] == "I" and extend(c, e, info) is not None]  # ... the replay refuses it


def test_conv2d_seeds_lanes_along_the_output_channels():
    """`lane_blocks`: vectors along `f` (the output is strided in it), pixels jammed, the weights
    packed at the outer lane loop; each seed is a schedule the checker accepts."""
    from irkit.tune.search import lane_blocks
    from irkit.validate.suite import replace_schedules

    path = EXAMPLES / "conv2d.design"
    kernel = read_kernel(path.read_text(), str(path), {"N": 1, "C": 4, "F": 32, "H": 8, "W": 16})
    (stage,) = kernel.stages
    info = kernel.stages[stage]
    seeds = lane_blocks(start(info, kernel.reads[stage]), info, 8, 16, 2, {"x"})
    texts = [c.text for c in seeds]
    assert "split f by 8 -> fo, fv; reorder fo, n, y, x, c, r, s, fv; parallel fo; vectorize fv by 8; unroll_jam x by 8; pack Wt at fo" in texts
    assert not [t for t in texts if "vectorize x" in t or "vectorize y" in t]  # x is the output's own (done)
    from irkit.raising.verify import verify_document

    for c in seeds[:3]:
        document = replace_schedules(path.read_text(), {stage: c.text.split("; ")})
        assert not document_errors(document), c.text
        # raised back, the lanes, the jammed pixels and the packed weights are the document's
        assert [x.message for x in verify_document(parse_design(document, str(path)))] == [], c.text


# --- the command line --------------------------------------------------------------------------


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _looks_reported(err: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err
    assert 0 < len(err.splitlines()) <= 24, err


def test_tune_a_missing_file(capsys, tmp_path):
    status, out, err = run(capsys, "tune", str(tmp_path / "nothing.design"))
    assert (status, out) == (2, "")
    _looks_reported(err)
    assert f"no such file: '{tmp_path / 'nothing.design'}'" in err


def test_tune_a_malformed_document(capsys, tmp_path):
    path = tmp_path / "bad.design"
    path.write_text("design bad {\n  sizes { N = 8 }\n  tensor a : f32[N] input\n  tensor b : f32[N] output\n  b[i] = 2 * q[i]\n}\n")
    status, out, err = run(capsys, "tune", str(path), "--quick", "--no-measure")
    assert (status, out) == (1, "")
    _looks_reported(err)
    assert f"{path}:5:14: error: undefined tensor 'q'" in err


def test_tune_a_document_that_does_not_parse(capsys, tmp_path):
    path = tmp_path / "bad.design"
    path.write_text("design x { tensor }\n")
    status, out, err = run(capsys, "tune", str(path))
    assert (status, out) == (1, "")
    _looks_reported(err)
    assert f"{path}:1:19: error:" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "abc"], "--budget expects a duration such as 90s, 5m or 1h, got 'abc'"),
        (["--top-k", "0"], "--top-k must be at least 1, got 0"),
        (["--trials", "-1"], "--trials must be at least 1, got -1"),
        (["--size", "M=abc"], "--size M: 'abc' is not an integer"),
        (["--size", "M"], "--size expects NAME=VALUE, got 'M'"),
        (["--size", "Q=4"], "--size: unknown size 'Q' (the document's sizes: M, N)"),
        (["--size", "M=0"], "--size: size 'M' must be positive, got 0"),
    ],
)
def test_tune_usage_errors(capsys, args, message):
    status, out, err = run(capsys, "tune", str(ROWSUM), "--quick", *args)
    assert (status, out) == (2, ""), err
    _looks_reported(err)
    assert message in err


def test_tune_an_unknown_hardware_description(capsys):
    status, out, err = run(capsys, "tune", str(ROWSUM), "--quick", "--hw", "no-such-profile")
    assert (status, out) == (1, ""), err  # as `irkit predict --hw` reports it
    _looks_reported(err)
    assert "hardware description 'no-such-profile' not found" in err


def test_tune_from_a_log_without_this_document(capsys, tmp_path):
    path = tmp_path / "tune.jsonl"
    tlog.append(path, _entry({"s": ["parallel i"]}, 1e-6, document="another document"))
    status, out, err = run(capsys, "tune", str(ROWSUM), "--from-log", str(path), "--size", "M=64,N=128")
    assert (status, out) == (1, "")
    _looks_reported(err)
    assert (
        f"{path}: no schedule of this document measured on this host at M=64,N=128 (0 entries for it, 1 in all); "
        f"run `irkit tune --log {path}` first" in err
    )


def test_tune_from_a_log_with_dropped_candidates_only(capsys, tmp_path):
    """A log whose only line for the document is a dropped candidate knows no measured schedule."""
    from irkit.perf import load_hardware

    path = tmp_path / "tune.jsonl"
    doc = tlog.document_hash(ROWSUM.read_text())
    host = tlog.host_of(load_hardware("generic"))
    tlog.append(path, tlog.Entry(doc, {"M": 64, "N": 128}, {"s": ["parallel i"]}, 1e-6, None, 0.1, host, "wrong result"))
    status, out, err = run(capsys, "tune", str(ROWSUM), "--from-log", str(path), "--size", "M=64,N=128")
    assert (status, out) == (1, "")
    _looks_reported(err)
    assert "(1 entries for it, 1 in all)" in err


def test_tune_from_a_malformed_log(capsys, tmp_path):
    path = tmp_path / "tune.jsonl"
    path.write_text("{}\n")
    status, out, err = run(capsys, "tune", str(ROWSUM), "--from-log", str(path))
    assert (status, out) == (1, "")
    _looks_reported(err)
    assert f"{path}:1: not a tuning-log line (KeyError" in err


# --- the BLIS-shaped seeds: cache blocks around the register block ----------------------------------


def test_cache_blocks_size_the_blocks_from_the_caches_and_pass_the_checker():
    """Each seed's reduction panel keeps the micro-kernel's slice of B in half the L1, its row block
    the packed panel of A in half or a quarter of the L2, its column block goes to the cores; the
    seeds differ by the caches they are sized for, and the checker accepts every one."""
    import re

    from irkit.tune.search import cache_blocks
    from irkit.validate.suite import replace_schedules

    gemm = (EXAMPLES / "gemm.design").read_text()
    kernel = read_kernel(gemm, "gemm.design", {"M": 2048, "N": 2048, "K": 2048})
    info = kernel.stages["C"]
    root = start(info, kernel.reads["C"])
    small = cache_blocks(root, info, 8, 16, 2, [32 * 1024, 512 * 1024, 16 << 20])
    large = cache_blocks(root, info, 16, 32, 2, [48 * 1024, 2 << 20, 64 << 20])
    assert small and large
    for seeds, l1, l2 in ((small, 32 * 1024, 512 * 1024), (large, 48 * 1024, 2 << 20)):
        for c in seeds:
            text = "; ".join(c.texts)
            mc, nc = map(int, re.search(r"tile i, j by (\d+), (\d+)", text).groups())
            kc = int(re.search(r"split k by (\d+)", text).group(1))
            width = int(re.search(r"split ji by (\d+)", text).group(1))
            assert kc * width * 4 <= l1 / 2 and mc * kc * 4 <= l2 / 2 and 2048 // nc >= 2
            assert "reorder jo, ko, io, jr, ii, ki, jv" in text and "parallel jo" in text
        assert any("pack B at ko; pack A at io" in "; ".join(c.texts) for c in seeds)
    assert {"; ".join(c.texts) for c in small}.isdisjoint({"; ".join(c.texts) for c in large})
    for c in small[:3] + large[:3]:
        assert document_errors(replace_schedules(gemm, {"C": c.texts})) == []


def test_cache_blocks_need_a_reduction():
    """A stage without a reduction loop (the triad) gets no such seed."""
    from irkit.tune.search import cache_blocks

    triad = (REPO / "bench" / "documents" / "triad.design").read_text()
    kernel = read_kernel(triad, "triad.design", {})
    (name,) = kernel.stages
    info = kernel.stages[name]
    assert cache_blocks(start(info, kernel.reads[name]), info, 8, 16, 2, [32 * 1024, 512 * 1024, 16 << 20]) == []


@pytest.mark.parametrize(
    "texts",
    [
        [],
        ["split j by 16 -> jo, ji"],
        ["split j by 16 -> jo, ji", "vectorize ji by 8"],
        ["tile i, j by 4, 8 -> io, jo, ii, ji", "split ji by 4 -> jio, jii"],
        ["split j by 16 -> jo, ji", "split jo by 2 -> joo, joi", "vectorize ji by 8"],
    ],
)
def test_order_records_offer_exactly_the_orders_extend_keeps(rowsum_stage, texts):
    """reorder, interchange and unroll_jam offer what their replay keeps (`Space.allows`, the same-root
    rule of unroll_jam) and nothing it refuses: a refused offer is search time spent on nothing, a
    missing one a schedule never tried.  Checked against every permutation, replayed."""
    from itertools import permutations

    from irkit.directives import reorder
    from irkit.tune.candidate import next_entries, space_of

    info, reads = rowsum_stage
    c = start(info, reads)
    for entry in _entries(*texts):
        c = extend(c, entry, info)
    assert c is not None
    names = tuple(c.nest.names)
    kept = [p for p in permutations(names) if p != names and extend(c, {"kind": "reorder", "loops": list(p)}, info)]
    space = space_of(c, info, 8, 16)
    assert [tuple(e["loops"]) for e in reorder.space(space)] == kept[: reorder.MAX_CHOICES]
    offered = next_entries(c, info, 8, 16)
    for e in offered:
        if e["kind"] in ("reorder", "interchange", "unroll_jam"):
            assert extend(c, e, info) is not None, e
    swaps = {tuple(e["loops"]) for e in offered if e["kind"] == "interchange"}
    for a, b in [(a, b) for k, a in enumerate(names) for b in names[k + 1 :]]:
        if (a, b) not in swaps and "interchange" not in {e["kind"] for e in c.entries}:
            assert extend(c, {"kind": "interchange", "loops": [a, b]}, info) is None, (a, b)
