"""`irkit predict FILE`: the cost model's predicted time of a kernel, its breakdown, and its place on the roofline.

    irkit predict examples/gemm.design
    irkit predict examples/gemm.design --hw host.hw --size M=2048 --size N=2048 --size K=2048
    irkit predict doc.design --json        # one JSON object for scripts

`--hw` names the hardware to price the kernel for: a `.hw` file, or a name
looked up like a document's `hardware NAME` (next to the document, then
`$IRKIT_HW_PATH`, then irkit's bundled profiles); without it, the
document's own hardware section.  Nothing is compiled or run.

The report gives the predicted seconds per call, each term of the model
(compute, every cache level, DRAM, fixed overheads) with its share of the
predicted time, the term that bounds the kernel, and the roofline: the
operational intensity (floating-point operations per byte of DRAM
traffic), the attainable rate min(peak, intensity x DRAM bandwidth), and
the predicted rate as a fraction of it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from irkit.tools.run import parse_sizes, size_usage_error


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="predict a kernel's time with the cost model (no compiling or running)")
    p.add_argument("file", metavar="FILE", help="the .design document")
    p.add_argument("--hw", metavar="SPEC", help="hardware: a .hw file or a profile name (default: the document's own)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE", help="set a size (repeatable)")
    p.add_argument("--json", action="store_true", help="print the prediction as one JSON object")


def run(args: argparse.Namespace) -> int:
    from irkit.frontend import parse_design
    from irkit.perf import load_hardware, predict
    from irkit.sizes import SizeError, document_sizes
    from irkit.tools.opt import EXIT_OK, read_input

    sizes = parse_sizes(args.size)
    text, name = read_input(args.file)  # a missing file is reported before anything else; '-' is stdin
    try:
        resolved = document_sizes(parse_design(text, name), sizes)
    except SizeError as exc:
        raise size_usage_error(exc) from None
    hw = load_hardware(args.hw, document=Path(args.file)) if args.hw else None
    _warn_if_foreign(hw, text, name)
    p = predict(Path(args.file) if args.file != "-" else text, sizes=sizes or None, hw=hw)
    report = prediction_report(p, args.file, resolved, args.hw)
    sys.stdout.write(json.dumps(report) + "\n" if args.json else format_report(report))
    return EXIT_OK


def _warn_if_foreign(hw, text: str, name: str) -> None:
    """A warning on stderr when the description was measured on another CPU or ISA (irkit.calibrate.fingerprint)."""
    from irkit.calibrate.fingerprint import warning
    from irkit.diagnostics import DiagnosticError
    from irkit.frontend import parse_design
    from irkit.perf.hardware import hardware_of_module

    if hw is None:
        try:
            hw = hardware_of_module(parse_design(text, name), name)
        except DiagnosticError:
            return  # no hardware to compare: predict says so itself
    message = warning(hw)
    if message:
        sys.stderr.write(f"irkit predict: warning: {message}\n")


def roofline(flops: float, dram_bytes: float, seconds: float, peak_flops: float, dram_bandwidth: float) -> dict:
    """Where a kernel sits on the roofline: intensity, attainable and achieved FLOP/s, and their ratio.

    Values that do not exist (no DRAM traffic, no floating-point work) are None.
    """
    intensity = flops / dram_bytes if dram_bytes > 0 else None
    if flops <= 0:
        attainable = None  # data movement only: the bandwidth is the roof (`achieved_dram_bandwidth`)
    elif intensity is None:
        attainable = peak_flops
    else:
        attainable = min(peak_flops, intensity * dram_bandwidth)
    achieved = flops / seconds if seconds > 0 and flops > 0 else None
    fraction = achieved / attainable if achieved is not None and attainable else None
    ridge = peak_flops / dram_bandwidth if dram_bandwidth > 0 else None
    side = None
    if intensity is not None and ridge is not None:
        side = "memory" if intensity < ridge else "compute"
    elif flops > 0:
        side = "compute"
    return {
        "operational_intensity": intensity,  # FLOP per byte of DRAM traffic
        "ridge_intensity": ridge,  # where the bandwidth roof meets the compute roof
        "side": side,  # of the ridge the kernel's intensity lies on
        "peak_flops": peak_flops,
        "dram_bandwidth": dram_bandwidth,
        "attainable_flops": attainable,
        "achieved_flops": achieved,
        "fraction_of_roofline": fraction,
        "achieved_dram_bandwidth": dram_bytes / seconds if seconds > 0 else None,
    }


def _finite(v):
    """JSON has no infinities or NaNs: those become None."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_finite(x) for x in v]
    return v


def prediction_report(p, document: str, sizes: dict[str, int], hw: str | None) -> dict:
    """The prediction as plain JSON values, with the roofline added."""
    data = dict(p.to_json())
    seconds = float(p.seconds)
    data.update(
        {
            "document": document,
            "sizes": data.get("sizes") or sizes,
            "hardware": data.get("hardware") or hw or "the document's own",
            "seconds": seconds,
            "breakdown": {k: float(v) for k, v in p.breakdown.items()},
            "bound": p.bound,
            "flops": float(p.flops),
            "dram_bytes": float(p.dram_bytes),
            "peak_flops": float(p.peak_flops),
            "dram_bandwidth": float(p.dram_bandwidth),
            "notes": list(p.notes),
            "roofline": roofline(
                float(p.flops), float(p.dram_bytes), seconds, float(p.peak_flops), float(p.dram_bandwidth)
            ),
        }
    )
    return _finite(data)


def seconds_text(s: float | None) -> str:
    if s is None:
        return "-"
    if s == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def _rate(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def format_report(r: dict) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
    lines = [
        f"{r['document']}: {sizes or 'no sizes'} (hardware: {r['hardware']})",
        f"  predicted time: {seconds_text(r['seconds'])} per call, bound by {r['bound']}",
        "",
    ]
    breakdown = r["breakdown"]
    width = max([len("term"), *map(len, breakdown)])
    lines.append(f"  {'term':<{width}}  {'seconds':>10}  {'share':>6}")
    for term, s in breakdown.items():
        share = f"{100 * s / r['seconds']:.1f}%" if r["seconds"] else "-"
        mark = "  <- bound" if term == r["bound"] else ""
        lines.append(f"  {term:<{width}}  {seconds_text(s):>10}  {share:>6}{mark}")
    total = sum(breakdown.values())
    if r["seconds"] and abs(total - r["seconds"]) > 0.01 * r["seconds"]:
        lines.append(
            f"  (shares are of the predicted time; the terms add up to {seconds_text(total)} because they overlap)"
        )
    rf = r["roofline"]
    lines += ["", "  roofline:"]
    if rf["operational_intensity"] is None:
        lines.append(f"    operational intensity: no DRAM traffic ({_rate(r['flops'], 'FLOP')} per call)")
    else:
        lines.append(
            f"    operational intensity: {rf['operational_intensity']:.3g} FLOP/B "
            f"({_rate(r['flops'], 'FLOP')} over {_rate(r['dram_bytes'], 'B')} of DRAM traffic per call)"
        )
    if rf["ridge_intensity"] is not None:
        lines.append(
            f"    ridge point:           {rf['ridge_intensity']:.3g} FLOP/B "
            f"(peak {_rate(r['peak_flops'], 'FLOP/s')}, DRAM {_rate(r['dram_bandwidth'], 'B/s')}); "
            f"the kernel is on the {rf['side']} side"
            if rf["side"]
            else f"    ridge point:           {rf['ridge_intensity']:.3g} FLOP/B"
        )
    if rf["attainable_flops"] is not None:
        how = (
            "the compute peak"
            if rf["operational_intensity"] is None or rf["attainable_flops"] >= r["peak_flops"]
            else "intensity x DRAM bandwidth"
        )
        lines.append(f"    attainable:            {_rate(rf['attainable_flops'], 'FLOP/s')} ({how})")
        frac = rf["fraction_of_roofline"]
        lines.append(
            f"    predicted:             {_rate(rf['achieved_flops'], 'FLOP/s')}"
            + (f" = {100 * frac:.1f}% of the roofline" if frac is not None else "")
        )
    else:
        lines.append("    no floating-point work: the FLOP/s roofline does not apply; DRAM bandwidth is the roof")
    if rf["achieved_dram_bandwidth"] and r["dram_bandwidth"]:
        lines.append(
            f"    DRAM traffic rate:     {_rate(rf['achieved_dram_bandwidth'], 'B/s')} "
            f"= {100 * rf['achieved_dram_bandwidth'] / r['dram_bandwidth']:.1f}% of the DRAM bandwidth"
        )
    if r["notes"]:
        lines += ["", "  notes:"]
        lines += [f"    - {n}" for n in r["notes"]]
    return "\n".join(lines) + "\n"
