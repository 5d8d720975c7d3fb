"""`irkit.validate.report` and validate's last line: the sections and figures, from a hand-made table."""

from irkit.tools.validate import summary_line
from irkit.validate import ranking, report, stats, targets


def row(schedule, runs, predicted, size="L2"):
    r = {
        "kernel": "k",
        "size": size,
        "sizes": {"N": 64},
        "schedule": schedule,
        "description": f"the {schedule} schedule",
        "runs_s": list(runs),
        "measured_s": ranking.measured_time(runs),
        "spread_pct": ranking.spread_pct(runs),
        "predicted_s": predicted,
        "bytes": 4096.0,
        "bound": "L1",
        "other_load": 0.01,
        "error": None,
    }
    r["error_pct"] = stats.signed_pct_error(predicted, r["measured_s"])
    r["within_spread"] = ranking.within_spread(abs(r["error_pct"]), r["spread_pct"])
    return r


def result(goal=targets.NATIVE, march="native", warnings=()):
    rows = [
        row("own", [1.0e-3, 1.1e-3], 1.05e-3),  # +5.0%, spread 10%: within it
        row("naive", [4.0e-3, 4.04e-3], 3.0e-3),  # -25%
        row("own", [2.0e-3, 2.02e-3], 3.0e-3, size="DRAM"),  # the model ranks own second
        row("naive", [2.5e-3, 2.52e-3], 2.6e-3, size="DRAM"),
        {**row("alt", [1e-3], 1e-3), "measured_s": None, "predicted_s": None, "runs_s": [], "error": "compile: boom"},
    ]
    return {
        "command": "irkit validate --hw h.hw",
        "date": "2026-12-01T12:00:00+00:00",
        "hardware": "h.hw",
        "machine": "Some CPU, 2 cores",
        "march": march,
        "cflags": None if march == "native" else ["-O3", f"-march={march}"],
        "warnings": list(warnings),
        "passes": 2,
        "summary": {**stats.summarize(rows, goal), "other_load": 0.01},
        "rows": rows,
    }


def test_report_sections_and_figures():
    text = report.markdown(result(warnings=["hardware description 'h' (h.hw) is not this host's: x"]))
    assert "Built for **native** (irkit's default flags); held to the targets for the native build." in text
    assert "**Warning:** hardware description 'h' (h.hw) is not this host's: x" in text
    assert "Each case is measured twice" in text and "the fastest pass" in text
    lines = text.splitlines()
    assert "| measure | value | target (native build) | met |" in lines
    assert "| median absolute error | 15.0% | <= 12% | **no** |" in lines  # 5, 25, 50, 4: median 15
    assert "| Kendall tau, mean over kernels and sizes | 0.00 | >= 0.85 | **no** |" in lines
    assert "| groups (kernel x size) with top-1 >= 0.95 | 50% (1 of 2) | >= 90% | **no** |" in lines
    assert "| top-1 score, mean / lowest | 0.90 / 0.80 | | |" in lines
    assert "| pairwise ordering accuracy, mean over groups | 0.50 | | |" in lines
    assert "| errors within the run-to-run spread | 1 of 4 | | |" in lines
    assert "| the host's floor: one pass against the others, median / p90 | - | | |" in lines  # two passes
    assert "## The schedules of each kernel and size" in text
    group = next(ln for ln in lines if ln.startswith("| k | DRAM: N=64 |"))
    cells = [c.strip() for c in group.split("|")[1:-1]]
    assert cells[2:8] == ["0.80", "naive", "own", "", "0.00", "0.00"]
    case = next(ln for ln in lines if ln.startswith("| k | own | L2: N=64 |"))
    cells = [c.strip() for c in case.split("|")[1:-1]]
    assert cells[4:10] == ["1 ms, 1.1 ms", "1 ms", "10.0%", "1.05 ms", "+5.0%", "yes"]
    failed = next(ln for ln in lines if ln.startswith("| k | alt |"))
    assert "**failed**: compile: boom" in failed
    assert "- `own`: the own schedule" in lines


def test_report_for_another_isa():
    goal = targets.targets_for("x86-64-v3")
    text = report.markdown(result(goal, "x86-64-v3"))
    assert "Built for **x86-64-v3** (`-O3 -march=x86-64-v3`); held to the targets for the x86-64-v3 build." in text
    assert "| median absolute error | 15.0% | <= 15% | yes |" in text
    assert "| groups (kernel x size) with top-1 >= 0.95 | 50% (1 of 2) | >= 85% | **no** |" in text


def test_summary_line():
    s = result()["summary"]
    line = summary_line(s, 93.6, "native")
    assert line.startswith("irkit validate (native): 4 cases, 1 FAILED; median |error| 15.0%")
    assert "top-1 >= 0.95 in 50% of 2 groups (mean 0.90)" in line
    assert "pairwise 0.50" in line and "1 of 4 errors within the run-to-run spread" in line
    assert "targets (native build): missed median, p90, tau, top-1; 94 s" in line
    assert "\n" not in line  # one line (a busy machine's warning is a second one)
