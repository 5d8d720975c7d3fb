"""Does the description given with `--hw` describe this host, and the ISA the suite is built for?

A validation priced with another machine's figures, or with 512-bit
vectors for code built for AVX2, measures the description, not the model.
Neither stops the run (comparing on purpose is legitimate); each is a
warning on stderr and at the top of the report.

- `host_mismatch`: the CPU and ISA recorded in the description against
  this host's.  The check is the calibration's own
  (`irkit.calibrate.fingerprint.mismatch`); where that module is missing
  (an older irkit), or the description records no text fields (an older
  description), a fallback compares the CPU model the description
  records (its `cpu "..."` field, else the `# CPU:` comment `irkit
  calibrate` writes) with /proc/cpuinfo, and the description's SIMD width
  with the widest this host's flags allow.
- `march_mismatch`: the ISA the description was made for (its `march
  "..."` field, when it has one) against `--march`; without that
  field, the description's `simd` width against the vector width of the
  build -- what the compiler defines for the flags the suite is built with
  (`__AVX512F__` 512 bits, `__AVX__` 256, else 128, at most a
  `-mprefer-vector-width`), so `x86-64-v3` means 256 bits and `native` the
  host's own.
"""

from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from pathlib import Path

_CPU_COMMENT = re.compile(r"^#\s*CPU:\s*(.+?)(?:;|$)", re.MULTILINE)


def host_mismatch(hw) -> str | None:
    """Why the description `hw` (an `irkit.perf.Hardware`) is not of this host, or None."""
    try:
        from irkit.calibrate.fingerprint import mismatch
    except ImportError:  # the calibration's check is not in this irkit: the fallback below
        return fallback_mismatch(hw)
    found = mismatch(hw)
    if found is None and not description_texts(hw):  # a description from before its text fields
        return fallback_mismatch(hw)
    return None if found is None else f"hardware description '{hw.name}' ({hw.source}) is not this host's: {found}"


def fallback_mismatch(hw, cpuinfo: Path | None = None) -> str | None:
    """The recorded CPU model and SIMD width against /proc/cpuinfo (see the module's docstring)."""
    from irkit.calibrate import detect

    model, flags = detect.read_cpuinfo(cpuinfo) if cpuinfo is not None else detect.read_cpuinfo()
    problems = []
    recorded = recorded_cpu(hw)
    if recorded is not None and model != "unknown CPU" and recorded != model:
        problems.append(f"it was measured on '{recorded}', this host is '{model}'")
    simd = hw.values.get("simd")
    widest = detect.simd_bits(flags) if flags else None
    if simd is not None and widest is not None and simd > widest:
        problems.append(f"it describes {simd:g}-bit vectors, this host has at most {widest}-bit")
    if not problems:
        return None
    return f"hardware description '{hw.name}' ({hw.source}) is not this host's: " + "; ".join(problems)


def recorded_cpu(hw) -> str | None:
    """The CPU model the description records: its `cpu "..."` field, else the `# CPU: ...;` comment
    `irkit calibrate` writes; None when it records none."""
    cpu = description_texts(hw).get("cpu")
    if cpu:
        return cpu
    try:
        text = Path(hw.source).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = _CPU_COMMENT.search(text)
    return m.group(1).strip() if m else None


def description_march(hw) -> str | None:
    """The ISA a description says it was made for (its `march "..."` field), or None when it says nothing."""
    march = description_texts(hw).get("march")
    return march if isinstance(march, str) and march else None


def description_texts(hw) -> dict[str, str]:
    """The text fields (`cpu "..."`, `march "..."`) of a description; {} if it has none.

    `Hardware.text` holds them where irkit.perf keeps them; otherwise they
    are read again from the file the description was loaded from (the
    pricing dictionary carries numbers only).
    """
    from irkit.dialects import design as d

    kept = getattr(hw, "text", None)
    if isinstance(kept, dict) and kept:
        return {str(k): str(v) for k, v in kept.items()}
    text_op = getattr(d, "HwTextOp", None)
    path = Path(getattr(hw, "source", "") or "")
    if text_op is None or not path.is_file():
        return {}
    try:
        from irkit.frontend import parse_design

        module = parse_design(path.read_text(encoding="utf-8"), str(path))
    except Exception:  # noqa: BLE001 -- it was loaded once already; a second reading only adds text
        return {}
    return {op.key.data: op.text.data for op in module.walk() if isinstance(op, text_op)}


def march_mismatch(hw, march: str | None, cflags: list[str] | None) -> str | None:
    """Why `hw` does not describe a build for `march` (None: `native`) with `cflags`, or None."""
    target = march or "native"
    recorded = description_march(hw)
    if recorded is not None:
        if recorded == target:
            return None
        return (
            f"hardware description '{hw.name}' ({hw.source}) was made for --march {recorded}, "
            f"this run builds for {target}: calibrate with `{_calibrate_command(march)}`"
        )
    simd = hw.values.get("simd")
    bits = build_simd_bits(tuple(cflags) if cflags is not None else None)
    if simd is None or bits is None or simd == bits:
        return None
    return (
        f"hardware description '{hw.name}' ({hw.source}) has simd {simd:g} bits, but the suite built for "
        f"{target} uses {bits}-bit vectors: calibrate with `{_calibrate_command(march)}`"
    )


def _calibrate_command(march: str | None) -> str:
    return "irkit calibrate" if march in (None, "native") else f"irkit calibrate --march {march}"


@lru_cache(maxsize=8)
def build_simd_bits(cflags: tuple[str, ...] | None) -> int | None:
    """The widest vectors the compiler targets with these flags (None: irkit's defaults), or None if unknown."""
    from irkit.backends.build import DEFAULT_CFLAGS, find_compiler

    flags = list(cflags if cflags is not None else DEFAULT_CFLAGS)
    try:
        cc = find_compiler()
        out = subprocess.run(
            [*cc, *flags, "-dM", "-E", "-x", "c", "-"],
            input="",
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except Exception:  # noqa: BLE001 -- no compiler, or one refusing the flags: the build will say so
        return None
    bits = simd_bits_of_macros(out)
    preferred = [int(f.split("=", 1)[1]) for f in flags if re.fullmatch(r"-mprefer-vector-width=\d+", f)]
    if bits is not None and preferred:  # gcc keeps to the preferred width (the last flag wins)
        return min(bits, preferred[-1])
    return bits


def simd_bits_of_macros(text: str) -> int | None:
    """512, 256 or 128 from the compiler's predefined macros; None when it defines no vector ISA."""
    names = set(re.findall(r"#define (\w+)", text))
    if "__AVX512F__" in names:
        return 512
    if "__AVX__" in names:
        return 256
    if names & {"__SSE2__", "__ARM_NEON", "__ALTIVEC__"}:
        return 128
    return None
