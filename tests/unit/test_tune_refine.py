"""Measured refinement (irkit.tune.refine): the neighbours of a schedule differ in one decision, are
legal as the checker sees them, and a neighbour measured faster than the incumbent by more than the
tie replaces it (with the measurements faked: times belong in bench/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irkit.tune import tuner
from irkit.tune.candidate import extend, start
from irkit.tune.refine import neighbours
from irkit.tune.stages import read_kernel
from irkit.validate.suite import replace_schedules

REPO = Path(__file__).resolve().parents[2]
ROWSUM = REPO / "examples" / "rowsum.design"
TEXTS = ["split i by 8 -> io, ii", "parallel io", "vectorize j by 8"]


@pytest.fixture(scope="module")
def stage():
    kernel = read_kernel(ROWSUM.read_text(), str(ROWSUM), {"M": 64, "N": 128})
    return kernel.stages["s"], kernel.reads["s"]


def _candidate(stage, texts):
    from test_tune import _entries

    info, reads = stage
    c = start(info, reads)
    for e in _entries(*texts):
        c = extend(c, e, info)
        assert c is not None, texts
    return c


def _errors(texts: list[str]) -> list[str]:
    from test_tune import document_errors

    return document_errors(replace_schedules(ROWSUM.read_text(), {"s": texts}))


def test_neighbours_change_one_decision_and_pass_the_checker(stage):
    c = _candidate(stage, TEXTS)
    found = neighbours(c, stage[0], lanes=8, registers=16)
    texts = [n.texts for n in found]
    assert ["split i by 8 -> io, ii", "parallel io"] in texts  # vectorize left out
    assert ["parallel io", "vectorize j by 8"] not in texts  # parallel io needs the split: not replayed
    assert any(t[0] != TEXTS[0] and t[0].startswith("split i by ") and t[1:] == TEXTS[1:] for t in texts)  # another factor
    assert any(t[:2] == TEXTS[:2] and t[2] != TEXTS[2] and t[2].startswith("vectorize j by ") for t in texts)  # another width
    assert TEXTS not in texts
    for t in texts:
        differing = sum(1 for a, b in zip(t, TEXTS) if a != b) + abs(len(t) - len(TEXTS))
        assert differing >= 1
        assert not _errors(t), t
    assert len({n.key() for n in found}) == len(found)


def test_neighbours_are_deterministic(stage):
    c = _candidate(stage, TEXTS)
    assert [n.texts for n in neighbours(c, stage[0], 8, 16)] == [n.texts for n in neighbours(c, stage[0], 8, 16)]


def test_no_directives_has_one_directive_neighbours(stage):
    from irkit.tune.candidate import next_entries

    info, reads = stage
    empty = start(info, reads)
    found = neighbours(empty, info, 8, 16)
    assert found and all(len(n.entries) == 1 for n in found)
    assert {tuple(n.texts) for n in found} <= {tuple(extend(empty, e, info).texts) for e in next_entries(empty, info, 8, 16) if extend(empty, e, info)}


def _fake_measure(times):
    """measure.measure with times from `times(contender)`: faster for some neighbours."""

    def measure(todo, text, name, sizes, options):
        for c in todo:
            c.measured = [times(c) for _ in sizes]

    return measure


def test_a_faster_neighbour_replaces_the_incumbent_and_slower_ones_do_not(monkeypatch):
    from irkit.tune import measure

    def times(c):  # a narrower vector is what the measurement likes; say the model does not see it
        text = " ".join(" ".join(d) for d in c.schedules.values())
        return 1.0e-3 if "vectorize j by 8" in text else 2.0e-3

    monkeypatch.setattr(measure, "measure", _fake_measure(times))
    monkeypatch.setattr(tuner, "REFINE_MEASURE", 1000)  # every neighbour in one batch: the model's order aside
    text = ROWSUM.read_text()
    options = tuner.Options(sizes=[{"M": 64, "N": 128}], top_k=2, width=8, depth=3, rerank=8)
    result = tuner.tune(replace_schedules(text, {}), str(ROWSUM), options)
    chosen = " ".join(" ".join(d) for d in result.chosen.schedules.values())
    assert "vectorize j by 8" in chosen, result.chosen.schedules
    assert result.chosen.origin == "refined"
    assert result.chosen.measured == [1.0e-3]
    assert not tuner.unverified(result.text)


def test_without_refinement_or_a_better_neighbour_the_measured_best_stays(monkeypatch):
    from irkit.tune import measure

    monkeypatch.setattr(measure, "measure", _fake_measure(lambda c: 1.0e-3))  # all tie
    text = replace_schedules(ROWSUM.read_text(), {})
    options = tuner.Options(sizes=[{"M": 64, "N": 128}], top_k=2, width=8, depth=3, rerank=8)
    tied = tuner.tune(text, str(ROWSUM), options)
    assert tied.chosen is tuner.timed_in_model_order(tied.contenders)[0]  # ties go to the full model's order
    assert all(c.origin != "incumbent" for c in tied.contenders)
    options.refine = False
    plain = tuner.tune(text, str(ROWSUM), options)
    assert plain.chosen is tuner.timed_in_model_order(plain.contenders)[0]
    assert plain.measured_count < tied.measured_count  # the rounds measured neighbours


def test_trials_caps_the_refinement(monkeypatch):
    from irkit.tune import measure

    monkeypatch.setattr(measure, "measure", _fake_measure(lambda c: 1.0e-3))
    text = replace_schedules(ROWSUM.read_text(), {})
    options = tuner.Options(sizes=[{"M": 64, "N": 128}], top_k=2, trials=2, width=8, depth=3, rerank=8)
    assert tuner.tune(text, str(ROWSUM), options).measured_count <= 2


def test_refinement_logs_each_measured_neighbour_once_and_a_resumed_run_measures_nothing(monkeypatch, tmp_path):
    from irkit.tune import measure

    measured: list[list[str]] = []

    def fake(todo, text, name, sizes, options):
        measured.append([c.origin for c in todo])
        for c in todo:
            t = " ".join(" ".join(d) for d in c.schedules.values())
            c.measured = [1.0e-3 if "vectorize j by 8" in t else 2.0e-3 for _ in sizes]

    monkeypatch.setattr(measure, "measure", fake)
    log = tmp_path / "tune.jsonl"
    text = replace_schedules(ROWSUM.read_text(), {})
    options = dict(sizes=[{"M": 64, "N": 128}], top_k=2, width=8, depth=3, rerank=8, log=log)
    first = tuner.tune(text, str(ROWSUM), tuner.Options(**options))
    rows = log.read_text().splitlines()
    own = [r for r in map(json.loads, rows) if "batch" not in r]  # the re-timed incumbents aside
    keys = [json.dumps([r["schedules"], r["sizes"]], sort_keys=True) for r in own]
    assert len(keys) == len(set(keys)) == first.measured_count
    measured.clear()
    again = tuner.tune(text, str(ROWSUM), tuner.Options(**options))
    assert again.chosen.key == first.chosen.key
    assert all(batch == [] for batch in measured)  # the incumbents' re-timings come from the log too
    assert again.measured_count == 0
    assert log.read_text().splitlines() == rows


def _with_moves(moves: list[str]) -> list:
    """Refined contenders, one a move, each with its own schedule (so that no two compare equal)."""
    made = []
    for n, move in enumerate(moves):
        c = tuner.Contender({"out": [f"split y by {n + 2}"]}, "", "refined")
        c.move = move
        made.append(c)
    return made


def test_a_batch_measures_the_best_of_each_move_first():
    made = _with_moves(["out: change split", "out: change split", "out: add vectorize", "bx: drop unroll", "out: change split"])
    picked, rest = tuner._one_per_move(made, 3)
    assert picked == [made[0], made[2], made[3]]  # in the model's order, one per move
    assert rest == [made[1], made[4]]
    picked, rest = tuner._one_per_move(made, 4)
    assert picked == [made[0], made[2], made[3], made[1]] and rest == [made[4]]


def test_from_log_takes_each_schedule_at_its_best_timing(tmp_path):
    """An incumbent re-timed slower in a later batch keeps its best time: the host's noise only slows."""
    from irkit.frontend import parse_design
    from irkit.perf.hardware import hardware_of_module
    from irkit.tune import log as tlog

    text = ROWSUM.read_text()
    hw = hardware_of_module(parse_design(text, str(ROWSUM)), str(ROWSUM))
    doc, host, sizes = tlog.document_hash(text), tlog.host_of(hw), {"M": 64, "N": 128}
    log = tmp_path / "tune.jsonl"
    a, b = {"s": ["vectorize j by 16"]}, {"s": ["vectorize j by 8"]}
    tlog.append(log, tlog.Entry(doc, sizes, a, 1e-3, 1.0e-3, 0.1, host))
    tlog.append(log, tlog.Entry(doc, sizes, b, 1e-3, 1.1e-3, 0.1, host))
    tlog.append(log, tlog.Entry(doc, sizes, a, 1e-3, 1.5e-3, 0.1, host, batch=1))  # a slow re-timing
    known = tuner.from_log(text, str(ROWSUM), log, [sizes], hw)
    assert known.chosen.schedules == a and known.chosen.measured == [1.0e-3]


def _tune_with_looks(monkeypatch, first: float, later: float, others: float):
    """Tune rowsum with fake timings: the first schedule timed takes `first` seconds at its first
    look and `later` at every other; every other schedule `others`.  (result, looks per schedule,
    that schedule's key)."""
    from irkit.tune import measure

    looks: dict[str, int] = {}
    marked: list[str] = []

    def fake(todo, text, name, sizes, options):
        for c in todo:
            looks[c.key] = looks.get(c.key, 0) + 1
            if not marked and c.origin != tuner.INCUMBENT:
                marked.append(c.key)
            if c.key == marked[0]:
                t = first if looks[c.key] == 1 else later
            else:
                t = others
            c.measured = [t for _ in sizes]

    monkeypatch.setattr(measure, "measure", fake)
    text = replace_schedules(ROWSUM.read_text(), {})
    options = tuner.Options(sizes=[{"M": 64, "N": 128}], top_k=3, width=8, depth=3, rerank=8, refine=False)
    return tuner.tune(text, str(ROWSUM), options), looks, marked[0]


def test_the_fastest_few_are_timed_again_and_a_slow_first_look_does_not_lose(monkeypatch):
    """A schedule whose first timing a noisy moment slowed is within RETIME_WITHIN of the fastest:
    the last re-timing measures it again, side by side with the others, and it wins that race."""
    result, looks, unlucky = _tune_with_looks(monkeypatch, first=1.10e-3, later=0.90e-3, others=1.0e-3)
    assert result.chosen.key == unlucky
    assert result.chosen.measured == [0.90e-3]
    assert looks[unlucky] == 2
    assert sum(1 for n in looks.values() if n == 2) <= tuner.RETIME


def test_the_race_decides_and_a_lucky_first_look_does_not_win(monkeypatch):
    """The fastest few are timed again side by side and that race decides: a schedule timed once
    in a quiet moment (its best time the fastest of all) loses to one faster beside it in the race."""
    result, looks, lucky = _tune_with_looks(monkeypatch, first=0.80e-3, later=1.10e-3, others=0.90e-3)
    assert looks[lucky] == 2  # it ran in the race
    assert result.chosen.key != lucky
    assert result.chosen.measured == [0.90e-3] and result.chosen.raced


def test_from_log_lets_the_logged_race_decide(tmp_path):
    """`--from-log` reads a race's timings (batch 0) as the run used them: they decide between the
    schedules that ran in it, whatever their earlier timings."""
    from irkit.frontend import parse_design
    from irkit.perf.hardware import hardware_of_module
    from irkit.tune import log as tlog

    text = ROWSUM.read_text()
    hw = hardware_of_module(parse_design(text, str(ROWSUM)), str(ROWSUM))
    doc, host, sizes = tlog.document_hash(text), tlog.host_of(hw), {"M": 64, "N": 128}
    log = tmp_path / "tune.jsonl"
    a, b = {"s": ["vectorize j by 16"]}, {"s": ["vectorize j by 8"]}
    tlog.append(log, tlog.Entry(doc, sizes, a, 1e-3, 0.8e-3, 0.1, host))  # a lucky first look
    tlog.append(log, tlog.Entry(doc, sizes, b, 1e-3, 0.9e-3, 0.1, host))
    tlog.append(log, tlog.Entry(doc, sizes, a, 1e-3, 1.1e-3, 0.1, host, batch=tuner.RACE))
    tlog.append(log, tlog.Entry(doc, sizes, b, 1e-3, 0.9e-3, 0.1, host, batch=tuner.RACE))
    known = tuner.from_log(text, str(ROWSUM), log, [sizes], hw)
    assert known.chosen.schedules == b and known.chosen.measured == [0.9e-3]


def test_spare_budget_lets_refinement_go_further(monkeypatch):
    import time

    now = time.perf_counter()
    assert tuner._spare(now + 600, now)  # nothing used yet
    assert not tuner._spare(now + 1, now - 10)  # most of it gone
    assert not tuner._spare(None, now)  # no budget: the plain limits


def test_a_temporary_placed_elsewhere_is_a_neighbour(monkeypatch):
    """Refinement also moves a temporary's placement (the stages' decisions kept): the full model
    can rank placements wrongly, and only a measurement tells them apart."""
    from test_tune import document_errors

    from irkit.tune import measure
    from irkit.tune.stages import read_kernels

    monkeypatch.setattr(measure, "measure", _fake_measure(lambda c: 1.0e-3))
    blur = REPO / "examples" / "blur.design"
    text = replace_schedules(blur.read_text(), {})
    sizes = {"H": 64, "W": 256}
    options = tuner.Options(sizes=[sizes], top_k=2, width=8, depth=3, rerank=16, refine=False)
    result = tuner.tune(text, str(blur), options)
    best = result.chosen
    assert best.bases
    kernel = read_kernels(text, str(blur), [sizes])[0]
    machine = tuner.Machine.of(options.hw if options.hw is not None else _hw_of(text, str(blur)))
    found = tuner._neighbour_contenders(best, kernel, machine, text, {best.key})
    moved = [c for c in found if c.move.endswith(": placement")]
    assert moved, [c.move for c in found]
    for c in moved:
        assert c.bases == best.bases
        differ = {t for t in set(c.placed) | set(best.placed) if c.placed.get(t) != best.placed.get(t)}
        assert len(differ) == 1
        assert not document_errors(c.text), c.key
    assert len({c.key for c in found}) == len(found)


def _hw_of(text, name):
    from irkit.frontend import parse_design
    from irkit.perf.hardware import hardware_of_module

    return hardware_of_module(parse_design(text, name), name)


def test_a_batch_measures_a_placement_first():
    made = _with_moves(["out: change split", "out: add vectorize", "bx: drop unroll", "bx: placement", "bx: placement"])
    picked, rest = tuner._one_per_move(made, 3)
    assert picked[0] is made[3]  # the model's best placement, however late the model ranks it
    assert picked[1:] == made[:2]
    assert rest == [made[2], made[4]]


def test_the_screening_models_best_are_measured_beside_the_full_models():
    """A third of the top k goes to the screening model's best that the full model's picks leave
    out: a factor change of a full-model pick (`unroll_jam f by 8` beside `by 4`, measured 1.95
    against 3.3 ms on conv2d) is otherwise never measured."""

    def c(directive: str, screened: int) -> tuner.Contender:
        return tuner.Contender({"O": [directive]}, directive, "search", predicted=[1.0], screened=screened)

    jam4, jam8 = c("unroll_jam f by 4", 5), c("unroll_jam f by 8", 0)
    par, vec, split = c("parallel y", 3), c("vectorize x", 1), c("split x by 8 -> xo, xi", 2)
    priced = [jam4, jam8, par, vec, split]  # the full model's order
    assert tuner.finalists(priced, 3) == [jam4, par, jam8]
    assert tuner.finalists(priced, 6) == [jam4, par, vec, split, jam8]  # all there are
    assert tuner.finalists(priced, 2) == [jam4, par]  # k // 3 = 0: the full model's alone
    own = tuner.Contender({}, "", "document", predicted=[2.0])
    assert tuner.finalists([*priced, own], 3)[-1] is own


def test_a_changed_factor_says_its_loop_and_direction():
    """The tuner measures the full model's best of each move: a larger factor and a smaller one are
    two moves, so the model's preferred direction does not hide the other."""
    from irkit.tune.refine import change_move

    k256 = {"kind": "split", "loop": "k", "factor": 256, "outer": "ko", "inner": "ki"}
    assert change_move(k256, {**k256, "factor": 512}) == "change split k up"
    assert change_move(k256, {**k256, "factor": 128}) == "change split k down"
    tile = {"kind": "tile", "loops": ["i", "j"], "factors": [96, 1024], "outer": ["io", "jo"], "inner": ["ii", "ji"]}
    assert change_move(tile, {**tile, "factors": [222, 1024]}) == "change tile i j up"
    vec = {"kind": "vectorize", "loop": "jv", "width": 16}
    assert change_move(vec, {**vec, "width": 8}) == "change vectorize jv down"
    order = {"kind": "reorder", "order": ["i", "j"]}
    assert change_move(order, {**order, "order": ["j", "i"]}) == "change reorder"


def test_unroll_variants_are_one_shape_and_far_off_shapes_wait():
    """Measuring five unroll variants of one schedule spends the top k on noise (softmax, Zen 3):
    plain `unroll` does not make a shape; `unroll_jam` does.  A shape priced over DISTINCT_WITHIN of
    the best is measured only in the model's order."""

    def c(texts: list[str], t: float) -> tuner.Contender:
        return tuner.Contender({"P": texts}, " ".join(texts), "search", predicted=[t])

    par = c(["parallel i", "unroll i by 2", "vectorize j by 32"], 1.00)
    par_j = c(["parallel i", "unroll j by 4", "vectorize j by 32"], 1.00)
    jam = c(["parallel i", "unroll_jam i by 2", "vectorize j by 32"], 1.01)
    split = c(["split i by 2 -> io, ii", "parallel io", "vectorize j by 32"], 1.02)
    bare = c([], 5.0)
    ranked = [par, par_j, jam, split, bare]
    assert tuner.distinct(ranked, 3) == [par, jam, split]
    assert tuner.distinct(ranked, 3, coarse=False) == [par, par_j, jam]
    assert tuner.distinct(ranked, 5) == [par, jam, split, par_j, bare]  # `bare` last: 5x the best


def test_factor_moves_are_spread_over_moves_and_ranges():
    assert tuner._ends_first(list(range(9))) == [0, 8, 4, 2, 6, 1, 3, 5, 7]
    assert tuner._ends_first([1, 2]) == [1, 2]
    made = _with_moves(["P: change tile i j down"] * 5 + ["P: change split i up"] * 2)
    spread = tuner._spread_moves(made)
    assert spread[:4] == [made[0], made[5], made[4], made[6]]  # each move's ends before either's middle
    assert sorted(map(id, spread)) == sorted(map(id, made))


def test_the_best_shapes_factors_are_priced_before_measuring(monkeypatch):
    """The full model prices every factor the records offer for its best shapes' directives (up to
    `Options.sweep` each), so its own best factor can be measured in the top k even where the screening
    model kept others; each such neighbour changes one factor and is legal."""
    from irkit.tune import measure

    monkeypatch.setattr(measure, "measure", _fake_measure(lambda c: 1.0e-3))
    text = replace_schedules(ROWSUM.read_text(), {})
    options = tuner.Options(sizes=[{"M": 64, "N": 128}], top_k=4, width=8, depth=3, rerank=8, refine=False, sweep=4)
    result = tuner.tune(text, str(ROWSUM), options)
    swept = [c for c in result.contenders if c.origin == "factors"]
    assert 0 < len(swept) <= 4 * tuner.SWEEP_SHAPES
    searched = {c.key for c in result.contenders if c.origin == "search"}
    for c in swept:
        assert c.key not in searched and c.predicted
        assert c.move.endswith((" up", " down")), c.move
        assert not tuner.unverified(c.text), c.key
    options.sweep = 0
    assert not [c for c in tuner.tune(text, str(ROWSUM), options).contenders if c.origin == "factors"]


def test_refinement_keeps_room_for_the_final_race():
    """A batch starts only if it and the race after it fit in the budget at the latest batch's
    seconds a measurement (the race runs whatever the budget says)."""
    import time

    result = tuner.Result(tuner.Contender({}, "", "search"), "", [], [], 0, 0.0, 0, 0, 0.0, None)
    assert tuner._room_for_a_batch(3, result, None)
    result.seconds_a_measurement = 6.0
    soon = time.perf_counter() + 100.0
    assert tuner._room_for_a_batch(3, result, soon)  # RESERVE 1.5 x (3 + 1 + RETIME 3) x 6 s = 63 s
    result.seconds_a_measurement = 10.0
    assert not tuner._room_for_a_batch(3, result, soon)  # 105 s
    assert tuner._pricing_deadline(3, result, soon) == pytest.approx(soon - 105.0)  # pricing stops in time
    assert tuner._pricing_deadline(3, result, None) is None
