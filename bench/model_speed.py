"""`python -m bench.model_speed`: how fast the cost model predicts (target: 10,000 predictions < 1 s).

For every example, the cost model is built once, then evaluated on 10,000
random size vectors in one vectorised call (numpy arrays of sizes), with the
bundled `generic` hardware.  The median of 5 such calls is reported, and
the table replaces the section between the markers in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- model-speed: begin (python -m bench.model_speed) -->"
END = "<!-- model-speed: end -->"


def measure(count: int, repeat: int) -> list[dict]:
    from irkit.perf import cost_model, load_hardware

    hw = load_hardware("generic")
    rows = []
    rng = np.random.default_rng(0)
    for doc in sorted((ROOT / "examples").glob("*.design")):
        t0 = time.perf_counter()
        model, _, _ = cost_model(doc)
        build = time.perf_counter() - t0
        sizes = {s: rng.integers(16, 4097, count) for s in model.sizes}
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            out = model.evaluate(sizes, hw)
            times.append(time.perf_counter() - t)
        assert np.shape(out["seconds"]) == (count,)
        rows.append({"kernel": doc.stem, "build_s": build, "median_s": statistics.median(times)})
    return rows


def machine() -> str:
    """The CPU, as /proc/cpuinfo names it (model name, family and model), and its CPU count."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or platform.machine()
    name = fields.get("model name", platform.machine())
    return f"{name} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}), {os.cpu_count()} CPUs"


def table(rows: list[dict], count: int) -> str:
    lines = [
        BEGIN,
        "## Cost-model speed",
        "",
        f"{count:,} predictions of one kernel at random sizes (16..4096 per size), one vectorised call,",
        "median of 5; `build` is lowering the document and deriving the cost terms, once per document.",
        f"Machine: {machine()}; {datetime.date.today().isoformat()}.",
        "",
        "| kernel | build | 10,000 predictions |",
        "|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['build_s'] * 1e3:.0f} ms | {r['median_s'] * 1e3:.1f} ms |")
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.model_speed", description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=10_000)
    p.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="Markdown file whose section is replaced")
    args = p.parse_args(argv)
    rows = measure(args.count, 5)
    text = table(rows, args.count)
    print(text)
    from bench.report import replace_section

    replace_section(Path(args.out), text, BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
