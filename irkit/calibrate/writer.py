"""The hardware description text that `irkit calibrate` writes.

Figures are kept in base units while measuring (bytes, bytes/s, Hz,
FLOP/s, seconds; `irkit.units`) and converted only here, each field to the
one unit a reader expects (`UNITS`): rates in GFLOP/s, bandwidths in GB/s
(powers of 1000, as STREAM reports them), the clock in GHz, overheads in ns
below a microsecond and us above (`fp_latency`, `store_forward` in cycles), sizes in the largest binary unit that
holds them exactly (the checker wants whole bytes).  Four significant
digits, never an exponent: the grammar reads one, but a person reads
`112.6 GFLOP/s` faster.  The result is one `hardware NAME { ... }` block in
the language's hardware syntax (docs/design-language.md), `#` comments
first, a trailing comment on lines whose figure needs a word of context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from irkit.units import CACHE_FIELDS, CLASS_LATENCY_KEYS, CONFLICT_SHARE_KEYS, DRAM_FIELDS, TOP_FIELDS, UNIT_SCALE

# unit family -> the unit written for it (latency and bytes choose by size, see `quantity`).
UNITS = {"rate": "GFLOP/s", "bandwidth": "GB/s", "frequency": "GHz", "bits": "bits"}


@dataclass
class Field:
    key: str
    value: float  # base units (irkit.units.to_base)
    note: str = ""  # trailing comment


@dataclass
class Text:
    """A text field (`cpu "AMD EPYC"`): where the description came from."""

    key: str
    text: str
    note: str = ""


@dataclass
class Level:
    name: str
    fields: list[Field]
    note: str = ""


@dataclass
class Spec:
    """A hardware block before it is text."""

    name: str
    comments: list[str] = field(default_factory=list)
    texts: list[Text] = field(default_factory=list)
    top: list[Field] = field(default_factory=list)
    caches: list[Level] = field(default_factory=list)
    dram: Level = field(default_factory=lambda: Level("dram", []))


def number(value: float, digits: int = 4) -> str:
    """`value` to `digits` significant digits, no exponent, no trailing zeros (`112.6`, `0.9876`, `2`)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{round(value, decimals):.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def from_base(value: float, unit: str) -> float:
    """A base-unit value in `unit` (`from_base(2.5e9, "GHz") == 2.5`)."""
    return value / UNIT_SCALE[unit][1]


def byte_quantity(nbytes: float) -> tuple[str, str]:
    """A whole number of bytes in the largest binary unit that holds it exactly (`32 KiB`, `1.5 MiB`)."""
    n = int(nbytes)
    for unit in ("GiB", "MiB", "KiB"):
        scale = int(UNIT_SCALE[unit][1])
        if n >= scale and (n * 1000) % scale == 0:  # exact with at most 3 decimals
            return number(n / scale, 7), unit
    return str(n), "B"


def approx_bytes(nbytes: float) -> str:
    """A size for people, 3 significant digits (`5 KiB`, `2.67 MiB`); not for the file, which wants exact sizes."""
    value, unit = float(nbytes), "B"
    for bigger in ("KiB", "MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{number(value, 3)} {unit}"


def quantity(value: float, family: str) -> tuple[str, str | None]:
    """(number text, unit or None) for a base-unit value of a unit family."""
    if family == "count":
        return str(round(value)), None
    if family == "number":  # a fitted figure with no unit (an overlap, a store's weight)
        return number(value, 3), None
    if family == "bytes":
        return byte_quantity(value)
    if family == "cycles":  # a latency counted in cycles (fp_latency)
        return number(value, 3), "cycles"
    if family == "latency":
        unit = "ns" if value < 1e-6 else "us"
        return number(from_base(value, unit)), unit
    unit = UNITS[family]
    return number(from_base(value, unit)), unit


def describe(value: float, family: str) -> str:
    """`112.6 GFLOP/s`: a base-unit value as the file writes it."""
    text, unit = quantity(value, family)
    return f"{text} {unit}" if unit else text


# Fields written in another unit than their family's usual one (the value is in that unit).
FIELD_FAMILY = {
    "fp_latency": "cycles",
    "fp_latency_f64": "cycles",
    "store_forward": "cycles",
    **{key: "cycles" for key in CLASS_LATENCY_KEYS},
    "store_weight": "number",
    "overlap": "number",
    "split_load": "number",
    "split_load_256": "number",
    "split_load_128": "number",
    **{key: "number" for key in CONFLICT_SHARE_KEYS},
}


def _field_text(f: Field, table: dict[str, tuple[str, bool]]) -> str:
    return f"{f.key} {describe(f.value, FIELD_FAMILY.get(f.key, table[f.key][0]))}"


def _with_note(text: str, note: str, width: int) -> str:
    return f"{text.ljust(width)}  # {note}" if note else text


def render(spec: Spec) -> str:
    """The `.hw` text of `spec`."""
    lines = [f"# {c}" if c else "#" for c in spec.comments]
    if lines:
        lines.append("")
    lines.append(f"hardware {spec.name} {{")
    from irkit.backends.design_text import escape_string

    texts = [(f"  {t.key} {escape_string(t.text)}", t.note) for t in spec.texts]
    width = max((len(t) for t, n in texts if n), default=0)
    lines += [_with_note(t, n, width) for t, n in texts]
    if texts:
        lines.append("")
    top = [("  " + _field_text(f, TOP_FIELDS), f.note) for f in spec.top]
    width = max((len(t) for t, n in top if n), default=0)
    lines += [_with_note(t, n, width) for t, n in top]
    lines.append("")
    levels = []
    for level in spec.caches:
        body = "; ".join(_field_text(f, CACHE_FIELDS) for f in level.fields)
        levels.append((f"  cache {level.name} {{ {body} }}", level.note))
    body = "; ".join(_field_text(f, DRAM_FIELDS) for f in spec.dram.fields)
    levels.append((f"  dram {{ {body} }}", spec.dram.note))
    width = max((len(t) for t, n in levels if n), default=0)
    lines += [_with_note(t, n, width) for t, n in levels]
    lines.append("}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ from measurements

# top-level fields written from measurements, in this order (key -> trailing note)
WIDTH_KEYS = ("512", "256", "128", "scalar")
TOP_MEASURED = (
    "flops_f32",
    "flops_f32_all",
    *(f"flops_f32_{w}" for w in WIDTH_KEYS),
    "flops_f64",
    "flops_f64_all",
    *(f"flops_f64_{w}" for w in WIDTH_KEYS),
    "div_f32",
    "sqrt_f32",
    "exp_f32",
    "libm_exp_f32",
    "div_f64",
    "sqrt_f64",
    "exp_f64",
    "libm_exp_f64",
    "div_f32_scalar",
    "sqrt_f32_scalar",
    "div_f64_scalar",
    "sqrt_f64_scalar",
    "fp_latency",
    "fp_latency_f64",
    "fma_latency",
    "store_forward",
    "parallel_overhead",
    "call_overhead",
    "page_fault",
    "strided_miss",
    "conflict_miss",
    # fitted on calibration documents (irkit.calibrate.fit)
    "add_latency",
    "fold_latency",
    "max_latency",
    "vmax_latency",
    "ooo_window",
    "tlb_entries",
    "tlb_miss",
    "split_load",
    "split_load_256",
    "gather_lane",
    "vector_entry",
    *CONFLICT_SHARE_KEYS,
    "huge_page",
)


def fma_units(flops_f32: float, frequency: float, lanes: int) -> int:
    """FMA pipes per core: the f32 peak over (clock x lanes x 2 flops), 1 to 4."""
    return min(4, max(1, round(flops_f32 / (frequency * lanes * 2))))


F64_LATENCY_DIFFERS = 0.10  # fp_latency_f64 is written when it differs from fp_latency by more than this


def _top_keys(values: dict[str, float]) -> list[str]:
    """The measured top-level fields to write: fp_latency_f64 only where it differs from fp_latency."""
    keys = [key for key in TOP_MEASURED if key in values]
    f32, f64 = values.get("fp_latency"), values.get("fp_latency_f64")
    if f32 and f64 and abs(f64 - f32) <= F64_LATENCY_DIFFERS * f32:
        keys.remove("fp_latency_f64")
    return keys


def hardware_spec(
    name: str,
    host,
    values: dict[str, float],
    *,
    lanes: int,
    comments: list[str] | None = None,
    notes: dict[str, str] | None = None,
    simd: int | None = None,
    texts: list[tuple[str, str]] | None = None,
) -> Spec:
    """The description of `host` (`irkit.calibrate.detect.Host`) with measured `values`.

    `values` maps field keys to base-unit figures (`fp_latency`, `store_forward` in cycles):
    top-level keys as they are (`flops_f32`, `frequency`, ...), cache fields
    as `L2.bandwidth`, DRAM fields as `dram.bandwidth`.  `lanes` is the f32 lanes of the vectors the
    FMA benchmark used (for `fma_units`); `notes` are trailing comments by
    the same keys (a cache level's under its name, `L2`).  `simd` is the
    widest vectors the figures were measured with (default: the host's);
    `texts` are the text fields (`irkit.calibrate.fingerprint.text_fields`).
    A level's `effective_size` is `L2.effective_size`; L1's narrower triads
    `L1.bandwidth_256` and so on.
    """
    notes = notes or {}
    top = [
        Field("cores", host.threads, notes.get("cores", "")),
        Field("simd", simd or host.simd, notes.get("simd", "")),
        Field("frequency", values["frequency"], notes.get("frequency", "")),
    ]
    if "flops_f32" in values:
        derived = f"derived: flops_f32 / (frequency x {lanes} lanes x 2)"
        top.append(Field("fma_units", fma_units(values["flops_f32"], values["frequency"], lanes), derived))
    if host.threads_per_core > 1:
        top.append(Field("threads_per_core", host.threads_per_core))
    top += [Field(key, values[key], notes.get(key, "")) for key in _top_keys(values)]
    caches = []
    for level in host.caches:
        fields = [Field("size", level.size)]
        if f"{level.name}.effective_size" in values:
            fields.append(Field("effective_size", values[f"{level.name}.effective_size"]))
        fields += [Field("line", level.line), Field("bandwidth", values[f"{level.name}.bandwidth"])]
        for width in ("256", "128", "scalar"):
            if f"{level.name}.bandwidth_{width}" in values:
                fields.append(Field(f"bandwidth_{width}", values[f"{level.name}.bandwidth_{width}"]))
        for key in ("bandwidth_read", "bandwidth_all"):
            if f"{level.name}.{key}" in values:
                fields.append(Field(key, values[f"{level.name}.{key}"]))
        if level.shared > 1:
            fields.append(Field("shared", level.shared))
        if level.ways:
            fields.append(Field("ways", level.ways))
        for key in ("store_weight", "overlap", "strided_miss", "conflict_miss"):  # fitted (irkit.calibrate.fit)
            if f"{level.name}.{key}" in values:
                fields.append(Field(key, values[f"{level.name}.{key}"]))
        caches.append(Level(level.name, fields, notes.get(level.name, "")))
    dram = [Field("bandwidth", values["dram.bandwidth"])]
    if "dram.bandwidth_core" in values:
        dram.append(Field("bandwidth_core", values["dram.bandwidth_core"]))
    if "dram.bandwidth_read_core" in values:
        dram.append(Field("bandwidth_read_core", values["dram.bandwidth_read_core"]))
    for key in ("latency", "overlap", "strided_miss", "conflict_miss", "unstreamed", "streams"):  # measured, fitted
        if f"dram.{key}" in values:
            dram.append(Field(key, values[f"dram.{key}"]))
    if host.memory:
        dram.insert(0, Field("size", host.memory // 1024**2 * 1024**2))  # whole MiB
    spec_texts = [Text(key, text, notes.get(key, "")) for key, text in (texts or [])]
    return Spec(name, list(comments or []), spec_texts, top, caches, Level("dram", dram, notes.get("dram", "")))
