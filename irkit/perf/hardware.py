"""Hardware descriptions as the numbers the model prices with (base units).

Every figure comes from a description in the language's hardware syntax
(DESIGN.md contract 4).  Where a description leaves a figure out, it is
derived from the ones it gives, and the derivation is recorded in `notes`
so `irkit predict` can say so:

- `flops_f32` from frequency x (simd / 32) x 2 x fma_units;
  `flops_f64` from `flops_f32` / 2; `*_all` from the one-core figure x cores;
- DRAM `bandwidth_core` = DRAM `bandwidth` (one core assumed to reach it);
- a cache level's `effective_size` = its `size` (no sweep measured it);
- `fp_latency_f64` = `fp_latency`.

Figures per instruction width come as dictionaries keyed by the width in
bits: `values["flops_f32_w"]` = {512: FLOP/s, 256: ..., 128: ..., 32: ...}
from `flops_f32_512` ... `flops_f32_scalar` (scalar f32 is 32, scalar f64
is 64 in `values["flops_f64_w"]`), and a level's `bandwidth_w` = {bits:
B/s} from `bandwidth_256` ... `bandwidth_scalar` plus its `bandwidth` at
the full `simd` width.  Only the widths a description gives are there, and
the full width always (`flops_f32` / `flops_f64`, `bandwidth`).
The text fields (`cpu`, `cpu_id`, `isa`, `march`: where the description
came from) are in `Hardware.text`, not in `values`.

A figure that cannot be derived (a division throughput, say) is only an
error when a kernel needs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.dialects import design as d
from irkit.perf.runtime import CONFLICT_SHARES
from irkit.units import CLASS_LATENCY_KEYS, to_base


@dataclass
class Hardware:
    name: str
    values: dict  # the pricing dictionary (see irkit.perf.runtime.price)
    source: str  # where it was read from
    notes: list[str] = field(default_factory=list)
    text: dict[str, str] = field(default_factory=dict)  # cpu, cpu_id, isa, march (irkit.calibrate.fingerprint)

    def __getitem__(self, key: str):
        return self.values[key]


def _fields(owner) -> dict[str, tuple[float, str | None]]:
    out: dict[str, tuple[float, str | None]] = {}
    for op in owner.regions[0].block.ops:
        if isinstance(op, d.HwFieldOp):
            out[op.key.data] = (op.value.value.data, None if op.unit is None else op.unit.data)
    return out


def from_op(hw: d.HardwareOp, source: str) -> Hardware:
    """The pricing dictionary of a checked `design.hardware` block."""
    top = _fields(hw)
    notes: list[str] = []
    name = hw.hw_name.data if hw.hw_name is not None else "inline"
    frequency = _base(top, "frequency")
    simd = _base(top, "simd")
    cores = _base(top, "cores")
    assert frequency and simd and cores  # required fields; the checker ran
    values: dict = {"cores": cores, "simd": simd, "frequency": frequency}
    _throughputs(top, values, notes, name, source)
    _op_costs(top, values, notes)
    _overheads(top, values, notes)
    _latencies(top, values, notes)
    levels: list[dict] = []
    for op in hw.body.block.ops:
        if not isinstance(op, d.HwLevelOp):
            continue
        if op.is_dram:
            _dram(_fields(op), values, notes)
        else:
            levels.append(_cache_level(op, simd, frequency))
    values["levels"] = levels
    values["line"] = levels[0]["line"] if levels else 64.0
    text = {op.key.data: op.text.data for op in hw.body.block.ops if isinstance(op, d.HwTextOp)}
    return Hardware(name, values, source, notes, text)


def _base(table: dict, key: str) -> float | None:
    """A field in base units (seconds, bytes, Hz, ...), None if not given."""
    if key not in table:
        return None
    value, unit = table[key]
    return to_base(value, unit)


def _cycles(table: dict, key: str, frequency: float) -> float | None:
    """A latency the model counts in cycles, given in cycles or in a time unit."""
    lat = table.get(key)
    if lat is None:
        return None
    value, unit = lat
    return value if unit == "cycles" else to_base(value, unit) * frequency


def _throughputs(top: dict, values: dict, notes: list[str], name: str, source: str) -> None:
    """FLOP/s in f32 and f64, at the full width and the narrower ones given."""
    frequency, simd = values["frequency"], values["simd"]
    flops = _base(top, "flops_f32")
    if flops is None:
        fma = _base(top, "fma_units")
        if fma is None:
            raise DiagnosticError(
                [
                    Diagnostic(
                        "error",
                        f"hardware '{name}' ({source}) gives neither flops_f32 nor fma_units; the model "
                        "needs one of them (irkit calibrate measures flops_f32)",
                    )
                ]  # fmt: skip
            )
        flops = frequency * simd / 32 * 2 * fma
        notes.append(
            f"flops_f32 derived: frequency x simd/32 lanes x 2 x {fma:g} fma_units = {flops / 1e9:.1f} GFLOP/s"
        )
    values["flops_f32"] = flops
    f64 = _base(top, "flops_f64")
    if f64 is None:
        f64 = flops / 2
        notes.append("flops_f64 derived as flops_f32 / 2")
    values["flops_f64"] = f64
    for dtype, scalar in (("f32", 32), ("f64", 64)):
        widths = {bits: _base(top, f"flops_{dtype}_{w}") for bits, w in ((512, "512"), (256, "256"), (128, "128"), (scalar, "scalar"))}
        given = {bits: v for bits, v in widths.items() if v is not None}
        given.setdefault(int(simd), values[f"flops_{dtype}"])  # the full width is flops_f32 / flops_f64
        values[f"flops_{dtype}_w"] = given


def _op_costs(top: dict, values: dict, notes: list[str]) -> None:
    """Throughputs of division, square root and exp (per dtype, per width)."""
    simd = values["simd"]
    for key in ("div_f32", "sqrt_f32", "exp_f32", "libm_exp_f32", "div_f64", "sqrt_f64", "exp_f64", "libm_exp_f64"):
        v = _base(top, key)
        if v is not None:
            values[key] = v
    for key in ("div", "sqrt", "exp", "libm_exp"):  # an older description: f64 from the f32 figure
        f32, f64_key = values.get(f"{key}_f32"), f"{key}_f64"
        if f32 is not None and f64_key not in values:
            values[f64_key] = f32 / 2
            notes.append(f"{f64_key} derived as {key}_f32 / 2 (half the lanes; irkit calibrate measures it)")
    for op in ("div", "sqrt"):  # per width: the full width (the figure itself) and scalar code's
        for dtype, scalar in (("f32", 32), ("f64", 64)):
            widths = {}
            if f"{op}_{dtype}" in values:
                widths[int(simd)] = values[f"{op}_{dtype}"]
            v = _base(top, f"{op}_{dtype}_scalar")
            if v is not None:
                widths[scalar] = v
            values[f"{op}_{dtype}_w"] = widths


def _overheads(top: dict, values: dict, notes: list[str]) -> None:
    """Fixed costs (in seconds), counts and shares of the core and its caches."""
    frequency = values["frequency"]
    for key in ("parallel_overhead", "call_overhead", "page_fault", "strided_miss", "conflict_miss"):
        v = _seconds(top, key, frequency)
        if v is None:
            notes.append(f"{key} not given: counted as 0")
        else:
            values[key] = v
    for key in ("ooo_window", "tlb_entries"):  # counts
        if key in top:
            values[key] = top[key][0]
    for key in ("tlb_miss", "gather_lane", "vector_entry"):
        figure = _seconds(top, key, frequency)
        if figure is not None:
            values[key] = figure
    for key in (*CONFLICT_SHARES, "split_load", "split_load_256", "split_load_128"):
        if key in top:
            values[key] = top[key][0]
    huge = _base(top, "huge_page")
    if huge is not None:
        values["huge_page"] = huge


def _latencies(top: dict, values: dict, notes: list[str]) -> None:
    """Instruction latencies and store forwarding, in cycles."""
    frequency = values["frequency"]
    for key in CLASS_LATENCY_KEYS:  # cycles
        lat = top.get(key)
        if lat is not None:
            value, unit = lat
            values[key] = value if unit in (None, "cycles") else to_base(value, unit) * frequency
    for key in ("fp_latency", "store_forward"):  # latencies the model counts in cycles
        v = _cycles(top, key, frequency)
        if v is not None:
            values[key] = v
    if "store_forward" not in values:
        notes.append("store_forward not given: counted as 0")
    lat64 = _cycles(top, "fp_latency_f64", frequency)
    if lat64 is not None:
        values["fp_latency_f64"] = lat64
    elif "fp_latency" in values:
        values["fp_latency_f64"] = values["fp_latency"]


def _dram(f: dict, values: dict, notes: list[str]) -> None:
    """The `dram { ... }` block: bandwidths (all cores, one core), overlap, misses it serves."""
    values["dram_bandwidth"] = _base(f, "bandwidth")
    core = _base(f, "bandwidth_core")
    if core is None:
        notes.append("dram bandwidth_core not given: one core assumed to reach the whole bandwidth")
        core = values["dram_bandwidth"]
    values["dram_bandwidth_core"] = core
    if "overlap" in f:
        values["dram_overlap"] = _base(f, "overlap")
    if "bandwidth_read_core" in f:  # one core's read-only stream: what fills cost apart from write-backs
        values["dram_bandwidth_read_core"] = _base(f, "bandwidth_read_core")
    for key in ("latency", "strided_miss", "conflict_miss", "unstreamed"):  # a last level's misses, served by DRAM
        v = _seconds(f, key, values["frequency"])
        if v is not None:
            values["dram_" + key] = v
    if "streams" in f:
        values["dram_streams"] = _base(f, "streams")


def _cache_level(op: d.HwLevelOp, simd: float, frequency: float) -> dict:
    """One `cache NAME { ... }` block as the model's level dictionary."""
    f = _fields(op)
    level = {
        "name": op.level.data,
        "size": _base(f, "size"),
        "bandwidth": _base(f, "bandwidth"),
        "line": _base(f, "line"),
    }
    shared = _base(f, "shared")
    level["shared"] = shared if shared is not None else 1
    for key in ("ways", "bandwidth_all", "bandwidth_read", "store_weight", "overlap"):  # (the last two fitted on calibration documents)
        v = _base(f, key)
        if v is not None:
            level[key] = v
    for key in ("strided_miss", "conflict_miss"):  # the level above's misses, served here
        v = _seconds(f, key, frequency)
        if v is not None:
            level[key] = v
    effective = _base(f, "effective_size")
    level["effective_size"] = effective if effective is not None else level["size"]
    level["measured_capacity"] = effective is not None
    narrower = {bits: _base(f, f"bandwidth_{w}") for bits, w in ((256, "256"), (128, "128"), (32, "scalar"))}
    level["bandwidth_w"] = {int(simd): level["bandwidth"]} | {
        bits: v for bits, v in narrower.items() if v is not None and bits < simd
    }
    return level


def _seconds(table, key: str, frequency: float) -> float | None:
    if key not in table:
        return None
    value, unit = table[key]
    if unit == "cycles":
        return value / frequency
    return to_base(value, unit)


def load_hardware(spec: str | Path | None, document: str | Path | None = None) -> Hardware:
    """A description: a `.hw` path, a name (searched like `hardware NAME`), or, with spec None,
    the document's own hardware section."""
    from irkit.frontend import parse_design
    from irkit.hardware_files import resolve_hardware

    if spec is None:
        if document is None:
            raise DiagnosticError([Diagnostic("error", "no hardware given and no document to take it from")])
        path = Path(document)
        module = parse_design(path.read_text(), str(path))
        return hardware_of_module(module, str(path))
    path = resolve_hardware(spec, None if document is None else str(document))
    module = parse_design(path.read_text(), str(path))
    return hardware_of_module(module, str(path))


def hardware_of_module(module, source: str) -> Hardware:
    """The hardware of a parsed document or `.hw` file (a reference is resolved)."""
    from irkit.hardware_files import find_hardware

    for op in module.walk():
        if isinstance(op, d.HardwareOp):
            return from_op(op, source)
        if isinstance(op, d.HardwareRefOp):
            path = find_hardware(op.ref.data, source)
            if path is None:
                raise DiagnosticError([Diagnostic("error", f"hardware description '{op.ref.data}' not found")])
            return load_hardware(path)
    raise DiagnosticError(
        [Diagnostic("error", f"{source} has no hardware section; give one with --hw (a .hw file or a name)")]
    )
