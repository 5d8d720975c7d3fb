"""BENCHMARKS.md and bench/results.json from a run's results."""

from __future__ import annotations

import json
from pathlib import Path


def fmt_time(s: float | None) -> str:
    if s is None:
        return "—"
    if s >= 10:
        return f"{s:.1f} s"
    if s >= 1:
        return f"{s:.2f} s"
    ms = s * 1e3
    return f"{ms:.3g} ms" if ms >= 0.1 else f"{s * 1e6:.3g} µs"


def fmt_rate(e: dict) -> str:
    r = e.get("rate")
    return "—" if r is None else f"{r:.3g} {e['rate_unit']}"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def check_cell(c: dict | None, irkit_failed: bool, peer_failed: bool) -> str:
    if peer_failed or irkit_failed:
        return "not checked"
    if c is None:
        return "—"
    rel = f"max rel err {c['max_rel']:.2g}"
    if c.get("rel_target") is not None:
        rel += f" (target {c['rel_target']:g})"
    return f"ok, {rel}" if c["ok"] else f"**MISMATCH**: {c['message']}; {rel}"


def table(results: dict) -> list[str]:
    lines = [
        "| kernel | size | peer | irkit median | peer median | ratio (peer/irkit) | irkit rate | peer rate "
        "| irkit % of peak | check vs peer | runs | other load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for b in results["benchmarks"]:
        irk = b["irkit"]
        irk_time = f"**FAILED**: {irk['error']}" if irk.get("error") else fmt_time(irk.get("median_s"))
        pct = irk.get("pct_of_peak")
        basis = {"FP32 FMA peak": "FMA peak", "STREAM triad bandwidth": "triad BW"}.get(irk.get("peak_basis", ""), "")
        pct_text = "—" if pct is None else f"{pct:.1f}% of {basis}"
        peers = b["peers"] or [{"name": "—"}]
        for p in peers:
            if p.get("error"):
                peer_time = f"**unavailable**: {p['error']}"
            else:
                peer_time = fmt_time(p.get("median_s"))
            ratio = p.get("ratio")
            ratio_text = "—" if ratio is None else f"{ratio:.3g}"
            runs = f"{irk.get('runs', 0)} / {p.get('runs', 0)}"
            other = b.get("load", {}).get("other_cores")
            other_text = "—" if other is None else f"{other:.2f} cores"
            row = [
                b["kernel"],
                b["size"],
                p["name"],
                irk_time,
                peer_time,
                ratio_text,
                fmt_rate(irk),
                fmt_rate(p),
                pct_text,
                check_cell(p.get("check"), bool(irk.get("error")), bool(p.get("error"))),
                runs,
                other_text,
            ]
            lines.append("| " + " | ".join(cell(str(x)) for x in row) + " |")
    return lines


def machine_lines(results: dict) -> list[str]:
    m, lim = results["machine"], results["limits"]
    blas = m["blas"]
    blas_text = (
        f"not reported: {blas['error']}"
        if "error" in blas
        else f"{blas['internal_api']} {blas['version']}, kernel **{blas['architecture']}**, "
        f"{blas['num_threads']} threads ({blas['threading_layer']})"
    )
    hal = m["halide"]
    hal_text = f"not available: {hal['error']}" if "error" in hal else f"{hal['version']}, JIT target `{hal['target']}`"
    fma, triad = lim["fma_peak"], lim["triad"]
    lines = [
        f"- CPU: {m['cpu']} ({m['cpu_vendor']}), {m['cores']} cores visible, widest SIMD: {m['simd']}",
        f"- threads: {m['threads']} for irkit and every peer (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and "
        "threadpoolctl, HL_NUM_THREADS)",
        f"- compiler: {m['compiler']}; irkit's flags (also the C peers'): `{m['cflags']}`",
        f"- Python {m['python']}, numpy {m['numpy']}; BLAS: {blas_text}",
        f"- Halide: {hal_text}",
        f"- irkit commit: {m['irkit_commit']}",
        f"- measured FP32 FMA peak, {m['threads']} threads: **{fma['flops_per_s'] / 1e9:.1f} GFLOP/s** "
        f"({fma['simd_lanes']} f32 lanes per FMA, ~{fma.get('implied_ghz', 0):.2f} GHz with 2 FMA units; "
        f"the larger of {m['threads']} threads together, "
        f"{fma.get('all_threads_flops_per_s', 0) / 1e9:.1f}, and {m['threads']} x one thread, "
        f"{fma.get('one_thread_flops_per_s', 0) / 1e9:.1f}; best of {fma['runs']} runs of independent "
        "FMA chains, probed before and after the benchmarks)",
        f"- measured STREAM triad (`c = a*b + c`, 2^{triad['elements'].bit_length() - 1} floats, 16 B/element), "
        f"{m['threads']} threads: **{triad['bytes_per_s'] / 1e9:.1f} GB/s** (best of {triad['runs']} runs, "
        "before and after the benchmarks)",
    ]
    load = results.get("load", {})
    if "other_cores" in load:
        la0, la1 = load["loadavg_start"][0], load["loadavg_end"][0]
        lines.append(
            f"- other processes during the run: {load['other_cores']:.2f} of {m['cores']} cores busy on average "
            f"(load average {la0:.2f} at the start, {la1:.2f} at the end; the host is shared, so figures are noisy)"
        )
    if m.get("openblas_env"):
        lines.append(f"- OpenBLAS environment overrides in force: {m['openblas_env']}")
    if m.get("openblas_env_removed"):
        lines.append(
            f"- OpenBLAS environment overrides removed for this run (numpy runs its own kernel; "
            f"IRKIT_BENCH_BLAS_ENV=keep keeps them): {m['openblas_env_removed']}"
        )
    declared = {(d["name"], d["flops_per_s"]) for b in results["benchmarks"] if (d := b.get("declared_peak"))}
    for name, flops in sorted(declared):
        lines.append(
            f"- FP32 peak declared by the documents' hardware description `{name}` "
            f"(cores x lanes x 2 FMA units x 2 x frequency): {flops / 1e9:.0f} GFLOP/s (not used for %; "
            "the measured peak is)"
        )
    return lines


def markdown(results: dict) -> str:
    o = results["options"]
    lines = [
        "# Benchmarks",
        "",
        "```sh",
        "pip install -e '.[bench]' && python -m bench",
        "```",
        "",
        "writes this file (do not edit it: rerun the command) and the raw results, `bench/results.json`.",
        "The `bench` extra brings Halide and threadpoolctl. Options: `--quick` (tiny sizes, a smoke",
        "test), `--only gemm,blur,softmax,triad,conv2d`, `--repeat N`, `--threads N` (default 2),",
        "`--out FILE`, `--json FILE`. The full run takes a few minutes. `--only scale` (not part of the",
        "default run) measures how each phase's cost grows with the document's size: its own section below.",
        "",
        f"This run: `{results['command']}` on {results['date']}"
        + (" — **quick mode: tiny sizes, not a measurement**" if o["quick"] else "")
        + ".",
        "",
        "## Machine",
        "",
        *machine_lines(results),
        "",
        "## Results",
        "",
        *table(results),
        "",
        "## How to read it",
        "",
        "- Times are medians. irkit and its peers run alternately (irkit, peer, irkit, peer, ...) on",
        "  preallocated buffers after one checked warm-up call each (two when a call is under 0.2 s),",
        f"  in rounds: in each, a contender first runs untimed for {o.get('settle', 0) * 1e3:g} ms, then a batch of",
        "  its calls is timed (up to 20, about as long as the settling). The settling matters on this host:",
        "  after a call OpenBLAS's idle threads spin for 2^28 cycles (~84 ms) and take the cores from what",
        "  runs next, and after an idle pause a 3 ms kernel runs at less than half its steady speed. Timed",
        "  straight after the other contender, GEMM 2048 read 0.67x numpy and conv2d 0.47x; each in its",
        "  steady state, 0.9x and 1.26x.",
        f"  at least {o['repeat']} rounds, more for short kernels (at least {o['min_time']:g} s timed each),",
        f"  fewer (never under 3) when a round would push a benchmark past {o['budget']:g} s. `runs` is irkit / peer.",
        "- ratio = peer median / irkit median: above 1, irkit is faster.",
        "- other load: CPU time other processes took while that benchmark ran (from /proc/stat, in",
        "  cores out of the machine's); with both cores asked for, any of it stretches 2-thread runs.",
        "- rate: GFLOP/s for compute-bound kernels, GB/s of compulsory traffic (every input read once,",
        "  every output written once, temporaries excluded: `irkit.metrics`) for memory-bound ones.",
        "  % of peak is against the measured FMA peak or the measured triad bandwidth above.",
        "- The check compares irkit's output with each peer's, with irkit's tolerance for the",
        "  dtype and reduction length (`irkit.reference.compare`); softmax must also be within a",
        "  relative error of 1e-5 of numpy. A mismatch is printed as **MISMATCH**.",
        "- triad: irkit's language forbids reading the tensor a statement writes, so its document",
        "  is `d = a*b + c` (4 arrays); the in-place STREAM peer and the same 4-array form in C are",
        "  both timed. Bytes are counted STREAM's way, every load and store stream: 16 B/element for",
        "  both forms (counting the in-place `c` once would give 12 B/element and 3/4 of its GB/s).",
        "  The 4-array form also pays a write-allocate read of `d` the count leaves out.",
        "- conv2d's peer time includes the padding and the im2col copy as well as the matmul.",
        "- Peers that could not be installed or run say so in their row, with the error.",
    ]
    notes = sorted({f"{p['name']}: {p['note']}" for b in results["benchmarks"] for p in b["peers"] if p.get("note")})
    if notes:
        lines += ["", "Peer notes:", "", *[f"- {n}" for n in notes]]
    return "\n".join(lines) + "\n"


def kept_sections(md_path: Path) -> str:
    """Sections other commands own (`<!-- NAME: begin ... -->` to `<!-- NAME: end -->`, e.g. the
    cost model's speed and accuracy), carried over when the benchmarks rewrite the file."""
    import re

    old = md_path.read_text() if md_path.is_file() else ""
    blocks = [m.group(0) for m in re.finditer(r"<!-- ([\w-]+): begin.*?<!-- \1: end -->", old, flags=re.S)]
    return "".join("\n" + b + "\n" for b in blocks)


def write_reports(results: dict, md_path: Path, json_path: Path) -> None:
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(markdown(results) + kept_sections(md_path))
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=1, default=str) + "\n")


def replace_section(md_path: Path, text: str, begin: str, end: str) -> None:
    """Replace the section of `md_path` between the markers `begin` and `end` by `text` (which holds
    them), or append it; the rest of the file is left as it is."""
    old = md_path.read_text() if md_path.is_file() else ""
    if begin in old and end in old:
        new = old[: old.index(begin)] + text + old[old.index(end) + len(end) :]
    else:
        new = old.rstrip("\n") + ("\n\n" if old else "") + text + "\n"
    md_path.write_text(new)
