"""The validation report: a Markdown table, and a predicted-vs-measured plot when matplotlib is installed."""

from __future__ import annotations

from pathlib import Path

from irkit.validate.stats import TARGET_MEDIAN_ABS_ERROR, TARGET_P90_ABS_ERROR, TARGET_TAU
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


def markdown(result: dict) -> str:
    """The whole report: summary with the targets, tau per kernel and size, then every case."""
    s = result["summary"]
    lines = [
        "# irkit validate: predicted vs measured",
        "",
        f"`{result['command']}` on {result['date']}; hardware description: {result['hardware']}.",
        f"{result['machine']}. Each case: the median of steady-state timed calls (schedules of one kernel "
        "and size alternated); the prediction of `irkit predict` at the same sizes.",
        "",
        _load_text(s.get("other_load")),
        "",
        "| measure | value | target | met |",
        "|---|---:|---:|---|",
        f"| median absolute error | {_pct(s['median_abs_error_pct'])} | <= {TARGET_MEDIAN_ABS_ERROR:g}% "
        f"| {_met(s['met']['median_abs_error_pct'])} |",
        f"| 90th percentile absolute error | {_pct(s['p90_abs_error_pct'])} | <= {TARGET_P90_ABS_ERROR:g}% "
        f"| {_met(s['met']['p90_abs_error_pct'])} |",
        f"| Kendall tau, mean over kernels and sizes | {_tau(s['mean_tau'])} | >= {TARGET_TAU:g} "
        f"| {_met(s['met']['mean_tau'])} |",
        f"| Kendall tau, lowest | {_tau(s['min_tau'])} | | |",
        f"| Kendall tau with times within {100 * s['tie_tolerance']:g}% as ties, mean | {_tau(s['mean_tau_tol'])} | | |",
        f"| largest absolute error | {_pct(s['max_abs_error_pct'])} | | |",
        "",
        f"{s['compared']} of {s['cases']} cases compared"
        + (f"; {s['failed']} failed (below)." if s["failed"] else "."),
        "",
        "## Order of the schedules (Kendall tau-b per kernel and size)",
        "",
        f"Tau compares, for one kernel at one size, the schedules' order by predicted time with their order by "
        f"measured time (1: the same order, -1: reversed).  The second tau counts two times within "
        f"{100 * s['tie_tolerance']:g}% of each other as a tie (an order closer than that is noise on this host).",
        "",
        f"| kernel | size | tau | tau ({100 * s['tie_tolerance']:g}% ties) | measured order (fastest first) "
        "| predicted order |",
        "|---|---|---:|---:|---|---|",
    ]
    for t in s["taus"]:
        sizes = ", ".join(f"{k}={v}" for k, v in t["sizes"].items())
        lines.append(
            f"| {t['kernel']} | {t['size']}: {sizes} | {_tau(t['tau'])} | {_tau(t['tau_tol'])} "
            f"| {' < '.join(t['measured_order'])} "
            f"| {' < '.join(t['predicted_order'])} |"
        )
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
    lines += [
        "",
        "## Every case",
        "",
        "| kernel | schedule | sizes | data | measured | predicted | error | bound | other load |",
        "|---|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for r in result["rows"]:
        sizes = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
        if r.get("error"):
            lines.append(
                f"| {r['kernel']} | {r['schedule']} | {r['size']}: {sizes} | {_mib(r.get('bytes'))} "
                f"| {seconds(r['measured_s'])} | {seconds(r['predicted_s'])} | **failed**: {r['error']} | | |"
            )
            continue
        lines.append(
            f"| {r['kernel']} | {r['schedule']} | {r['size']}: {sizes} | {_mib(r.get('bytes'))} "
            f"| {seconds(r['measured_s'])} | {seconds(r['predicted_s'])} | {_pct(r['error_pct'], signed=True)} "
            f"| {r.get('bound') or '-'} | {_load(r.get('other_load'))} |"
        )
    lines += ["", "Schedules:", ""]
    described = set()
    for r in result["rows"]:
        shared = r["schedule"] in SHARED_VARIANTS  # the same transformation for every kernel
        key = r["schedule"] if shared else f"{r['kernel']} {r['schedule']}"
        if key not in described:
            described.add(key)
            lines.append(f"- `{key}`: {r['description']}")
    if result.get("plot"):
        lines += ["", f"Plot: {result['plot']}"]
    return "\n".join(lines) + "\n"


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
    for f, style in ((1 + TARGET_MEDIAN_ABS_ERROR / 100, "--"), (1 + TARGET_P90_ABS_ERROR / 100, ":")):
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
