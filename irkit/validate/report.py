"""The validation report: a Markdown table, and a predicted-vs-measured plot when matplotlib is installed."""

from __future__ import annotations

from pathlib import Path

from irkit.validate.suite import SHARED_VARIANTS


def seconds(s: float | None) -> str:
    if s is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def _pct(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.1f}%" if signed else f"{v:.1f}%"


def _tau(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _load(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _mib(nbytes: float | None) -> str:
    if nbytes is None:
        return "-"
    mib = nbytes / 2**20
    return f"{mib:.3g} MiB" if mib >= 0.1 else f"{nbytes / 1024:.3g} KiB"


def _load_text(load: float | None) -> str:
    if load is None:
        return "How busy other processes kept the machine is unknown (no /proc/stat)."
    text = f"Other processes kept {load:.2f} cores busy on average while the kernels were timed"
    if load > 0.25:
        return text + " -- **a busy machine**: parallel kernels wait for cores, measurements are pessimistic."
    return text + "."


def _share(good: int, total: int) -> str:
    return "-" if not total else f"{100 * good / total:.0f}% ({good} of {total})"


def _mark(ok: bool | None) -> str:
    return "yes" if ok else ""


def markdown(result: dict) -> str:
    """The whole report: warnings, summary with the targets, each kernel and size, then every case."""
    s = result["summary"]
    t = s["targets"]
    passes = result.get("passes", 1)
    lines = [
        "# irkit validate: predicted vs measured",
        "",
        f"`{result['command']}` on {result['date']}; hardware description: {result['hardware']}.",
        f"{result['machine']}. Built for **{result.get('march', 'native')}**"
        + (f" (`{' '.join(result['cflags'])}`)" if result.get("cflags") else " (irkit's default flags)")
        + f"; held to the targets for the {t['label']}.",
        "",
        f"Each case is measured {'twice' if passes == 2 else f'{passes} times'}, pass after pass over the whole suite (each pass: the median of "
        "steady-state timed calls, the schedules of one kernel and size alternated); the time compared with the "
        "prediction of `irkit predict` at the same sizes is the fastest pass, and the run-to-run spread is "
        "(slowest - fastest) / fastest pass.  The host's floor (three passes or more) is the error each "
        "pass scores against the fastest of the others: a model exact for one pass would read it, so "
        "targets below it cannot be told from the host's noise.",
        "",
        _load_text(s.get("other_load")),
        "",
    ]
    for w in result.get("warnings", []):
        lines += [f"**Warning:** {w}", ""]
    lines += summary_table(s)
    lines += [
        "",
        f"{s['compared']} of {s['cases']} cases compared"
        + (f"; {s['failed']} failed (below)." if s["failed"] else "."),
        "",
    ]
    lines += groups_section(s)
    lines += [
        "",
        "## Median absolute error by kernel and by size",
        "",
        "| kernel | median abs error | cases |",
        "|---|---:|---:|",
    ]
    lines += [f"| {k} | {_pct(v['median_abs_error_pct'])} | {v['cases']} |" for k, v in s["by_kernel"].items()]
    lines += ["", "| size | median abs error | cases |", "|---|---:|---:|"]
    lines += [f"| {k} | {_pct(v['median_abs_error_pct'])} | {v['cases']} |" for k, v in s["by_size"].items()]
    lines += cases_section(result["rows"])
    if result.get("plot"):
        lines += ["", f"Plot: {result['plot']}"]
    return "\n".join(lines) + "\n"


def summary_table(s: dict) -> list[str]:
    """The figures with their targets (`stats.summarize`'s `targets` and `met`)."""
    t, met = s["targets"], s["met"]
    tol = f"{100 * s['tie_tolerance']:g}%"
    spread = "-" if s["median_spread_pct"] is None else f"{_pct(s['median_spread_pct'])} / {_pct(s['max_spread_pct'])}"
    floor = "-" if s.get("floor_median_pct") is None else f"{_pct(s['floor_median_pct'])} / {_pct(s['floor_p90_pct'])}"
    return [
        f"| measure | value | target ({t['label']}) | met |",
        "|---|---:|---:|---|",
        f"| median absolute error | {_pct(s['median_abs_error_pct'])} | <= {t['median_abs_error_pct']:g}% "
        f"| {_met(met['median_abs_error_pct'])} |",
        f"| 90th percentile absolute error | {_pct(s['p90_abs_error_pct'])} | <= {t['p90_abs_error_pct']:g}% "
        f"| {_met(met['p90_abs_error_pct'])} |",
        f"| Kendall tau, mean over kernels and sizes | {_tau(s['mean_tau'])} | >= {t['mean_tau']:g} "
        f"| {_met(met['mean_tau'])} |",
        f"| groups (kernel x size) with top-1 >= {t['top1_score']:g} | {_share(s['top1_good'], s['top1_groups'])} "
        f"| >= {100 * t['top1_share']:g}% | {_met(met['top1_share'])} |",
        f"| ... or whose pick is within the noise of the fastest | "
        f"{_share(s['top1_good_or_noise'], s['top1_groups'])} | | |",
        f"| top-1 score, mean / lowest | {_tau(s['mean_top1'])} / {_tau(s['min_top1'])} | | |",
        f"| pairwise ordering accuracy, mean over groups | {_tau(s['mean_pairwise'])} | | |",
        f"| pairwise, pairs within the noise as agreeing ({s['pairs_within_noise']} of {s['pairs']} pairs) "
        f"| {_tau(s['mean_pairwise_noise'])} | | |",
        f"| errors within the run-to-run spread | {s['within_spread']} of {s['compared']} | | |",
        f"| run-to-run spread, median / largest | {spread} | | |",
        f"| the host's floor: one pass against the others, median / p90 | {floor} | | |",
        f"| Kendall tau, lowest | {_tau(s['min_tau'])} | | |",
        f"| Kendall tau with times within {tol} as ties, mean | {_tau(s['mean_tau_tol'])} | | |",
        f"| largest absolute error | {_pct(s['max_abs_error_pct'])} | | |",
    ]


def groups_section(s: dict) -> list[str]:
    """Per kernel and size: tau, the model's pick against the fastest, pairwise accuracy, both orders."""
    tol = f"{100 * s['tie_tolerance']:g}%"
    lines = [
        "## The schedules of each kernel and size",
        "",
        "Top-1: the fastest measured time of the group / the measured time of the schedule the model ranks "
        'first (1: the model picks the fastest; "in noise": its pick and the fastest differ by no more than '
        "their run-to-run spread).  Pairwise: the share of schedule pairs the model orders as measured -- "
        "strict, then with the pairs whose measured times differ by no more than either's run-to-run spread "
        "counted as agreeing (the measurement cannot order them).  Tau compares the two orders (1: the same, "
        f"-1: reversed); the second tau counts two times within {tol} of each other as a tie.",
        "",
        f"| kernel | size | top-1 | model's pick | fastest | pick in noise | pairwise | pairwise (noise agrees) "
        f"| tau | tau ({tol} ties) | measured order (fastest first) | predicted order |",
        "|---|---|---:|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    for g in s["groups"]:
        sizes = ", ".join(f"{k}={v}" for k, v in g["sizes"].items())
        lines.append(
            f"| {g['kernel']} | {g['size']}: {sizes} | {_tau(g['top1'])} | {g['pick'] or '-'} | {g['best'] or '-'} "
            f"| {_mark(g['pick_within_noise'] and g['pick'] != g['best'])} "
            f"| {_tau(g['pairwise'])} | {_tau(g['pairwise_noise'])} | {_tau(g['tau'])} | {_tau(g['tau_tol'])} "
            f"| {' < '.join(g['measured_order'])} | {' < '.join(g['predicted_order'])} |"
        )
    return lines


def _runs(r: dict) -> str:
    return ", ".join(seconds(t) for t in r.get("runs_s") or []) or "-"


def cases_section(rows: list[dict]) -> list[str]:
    """Every case: its measurements, spread, prediction and error ("in noise": the error is within the spread)."""
    lines = [
        "",
        "## Every case",
        "",
        "Runs: each pass's measurement; measured: the fastest; spread: (slowest - fastest) / fastest; "
        '"in noise": the error is no larger than the spread.',
        "",
        "| kernel | schedule | sizes | data | runs | measured | spread | predicted | error | in noise | bound "
        "| other load |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        sizes = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
        head = f"| {r['kernel']} | {r['schedule']} | {r['size']}: {sizes} | {_mib(r.get('bytes'))} | {_runs(r)} "
        if r.get("error"):
            lines.append(
                head
                + f"| {seconds(r['measured_s'])} | | {seconds(r['predicted_s'])} | **failed**: {r['error']} | | | |"
            )
            continue
        lines.append(
            head + f"| {seconds(r['measured_s'])} | {_pct(r.get('spread_pct'))} | {seconds(r['predicted_s'])} "
            f"| {_pct(r['error_pct'], signed=True)} | {_mark(r.get('within_spread'))} | {r.get('bound') or '-'} "
            f"| {_load(r.get('other_load'))} |"
        )
    lines += ["", "Schedules:", ""]
    described = set()
    for r in rows:
        shared = r["schedule"] in SHARED_VARIANTS  # the same transformation for every kernel
        key = r["schedule"] if shared else f"{r['kernel']} {r['schedule']}"
        if key not in described:
            described.add(key)
            lines.append(f"- `{key}`: {r['description']}")
    return lines


def plot(result: dict, path: Path) -> str | None:
    """Predicted against measured time, log-log, one colour per kernel; None, or why no plot was drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plot: matplotlib is not installed (pip install 'irkit[plot]')"
    rows = [r for r in result["rows"] if r.get("measured_s") and r.get("predicted_s")]
    if not rows:
        return "no plot: no case has both a measurement and a prediction"
    fig, ax = plt.subplots(figsize=(7, 6.5))
    markers = {"own": "o", "naive": "x", "serial": "s"}
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    cmap = plt.get_cmap("tab10")
    for i, kernel in enumerate(kernels):
        for schedule in dict.fromkeys(r["schedule"] for r in rows if r["kernel"] == kernel):
            pts = [r for r in rows if r["kernel"] == kernel and r["schedule"] == schedule]
            ax.scatter(
                [r["measured_s"] for r in pts],
                [r["predicted_s"] for r in pts],
                color=cmap(i % 10),
                marker=markers.get(schedule, "^"),
                label=kernel if schedule == "own" else None,
                alpha=0.85,
            )
    values = [v for r in rows for v in (r["measured_s"], r["predicted_s"])]
    lo, hi = min(values) / 2, max(values) * 2
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="predicted = measured")
    t = result["summary"]["targets"]
    for f, style in ((1 + t["median_abs_error_pct"] / 100, "--"), (1 + t["p90_abs_error_pct"] / 100, ":")):
        ax.plot([lo, hi], [lo * f, hi * f], color="grey", linestyle=style, linewidth=0.8)
        ax.plot([lo, hi], [lo / f, hi / f], color="grey", linestyle=style, linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured seconds per call")
    ax.set_ylabel("predicted seconds per call")
    s = result["summary"]
    med = s["median_abs_error_pct"]
    ax.set_title(
        f"irkit predict vs measured: median |error| {med:.1f}%, tau {s['mean_tau'] or 0:.2f}"
        if med is not None
        else "irkit predict vs measured"
    )
    ax.legend(fontsize="small", title="o own, x naive, s serial, ^ other", title_fontsize="small")
    ax.grid(True, which="both", linewidth=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
