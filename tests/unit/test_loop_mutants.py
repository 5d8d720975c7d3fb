"""The suite's bounded campaign of the loop-IR mutation catalogue (tools/loop_mutants.py).

A fixed seed, so a failure reproduces with
`python -m tools.loop_mutants --per-kind 2 --seed 11 --only blur,gemm,rowsum,softmax`;
larger campaigns run from the same module (`python -m tools.loop_mutants --per-kind 40`).
Every mutant that changes the results at the catalogue's sizes must be reported by
`irkit verify --loops`, and no legal edit may be.
"""

from __future__ import annotations

from tools import loop_mutants


def test_every_result_changing_mutant_is_caught_and_no_legal_edit_is_flagged():
    report = loop_mutants.campaign(["blur", "gemm", "rowsum", "softmax"], per_kind=2, seed=11, legal=4)
    changed = sum(report.counts[(k, "changed")] for k in loop_mutants.KINDS)
    assert changed >= 12, report.table()  # the campaign exercises what it claims to
    assert report.counts[("legal", "n")] >= 12, report.table()
    assert report.misses == [], report.table()
    assert report.false_alarms == [], report.table()
