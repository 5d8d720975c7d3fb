"""Where a hardware description came from, and whether this host is that machine.

A description's figures hold for the CPU they were measured on, built for
one ISA.  The machines irkit runs on change CPU from one to the next (a Xeon
model 207, an EPYC Zen 3 with AVX2 only, a Xeon model 167), so a description
carried from one to another silently prices for the wrong machine.
`irkit calibrate` therefore records, as text fields of the hardware block:

    cpu "AMD EPYC 9R14"                                  # /proc/cpuinfo model name
    cpu_id "AuthenticAMD family 25 model 17 stepping 1"  # vendor_id, cpu family, model, stepping
    isa "avx avx2 fma avx512f avx512bw avx512dq avx512vl" # the host's extensions that decide the code
    march "native"                                       # what the microbenchmarks were built for

and `mismatch(hardware)` says how a description's record differs from this
host: another vendor, family or model (a stepping alone is the same
microarchitecture and is not a mismatch), another set of the ISA extensions
in `ISA_FLAGS`, or (when the caller says what it builds for) another
`-march`.  A description that records nothing (the bundled `generic`
profile, one written by hand or by an older irkit) cannot be compared:
`mismatch` returns None for it.  `irkit predict`, `irkit validate` and
`irkit calibrate --check` call it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from irkit.calibrate.detect import PROC_CPUINFO, CpuId, read_cpu

# The extensions that change what the compiler emits for irkit's kernels (vector width, FMA).
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl", "asimd", "sve", "sve2")

_CPU_ID = re.compile(r"^\s*(\S*)\s+family\s+(\d+)\s+model\s+(\d+)(?:\s+stepping\s+(\d+))?\s*$")


@dataclass(frozen=True)
class Fingerprint:
    """A CPU as a description records it."""

    name: str
    vendor: str
    family: int | None
    model: int | None
    stepping: int | None
    isa: frozenset[str]

    @property
    def cpu_id(self) -> str:
        parts = [self.vendor or "unknown"]
        if self.family is not None:
            parts.append(f"family {self.family}")
        if self.model is not None:
            parts.append(f"model {self.model}")
        if self.stepping is not None:
            parts.append(f"stepping {self.stepping}")
        return " ".join(parts)

    @property
    def isa_text(self) -> str:
        return " ".join(f for f in ISA_FLAGS if f in self.isa)

    def describe(self) -> str:
        return f"{self.name} ({self.cpu_id})"


def of_cpu(cpu: CpuId) -> Fingerprint:
    return Fingerprint(
        cpu.name, cpu.vendor, cpu.family, cpu.model, cpu.stepping, frozenset(f for f in ISA_FLAGS if f in cpu.flags)
    )


def this_host(cpuinfo: Path = PROC_CPUINFO) -> Fingerprint:
    """This machine's fingerprint, from /proc/cpuinfo."""
    return of_cpu(read_cpu(cpuinfo))


def text_fields(fingerprint: Fingerprint, march: str) -> list[tuple[str, str]]:
    """The hardware block's text fields for a description measured on `fingerprint`, built for `march`."""
    return [
        ("cpu", fingerprint.name),
        ("cpu_id", fingerprint.cpu_id),
        ("isa", fingerprint.isa_text),
        ("march", march),
    ]


def recorded(texts: dict[str, str]) -> Fingerprint | None:
    """The fingerprint a description's text fields record (None when they record no CPU)."""
    if "cpu" not in texts and "cpu_id" not in texts:
        return None
    vendor, family, model, stepping = "", None, None, None
    m = _CPU_ID.match(texts.get("cpu_id", ""))
    if m:
        vendor = m.group(1)
        family, model = int(m.group(2)), int(m.group(3))
        stepping = int(m.group(4)) if m.group(4) else None
    isa = frozenset(texts["isa"].split()) if "isa" in texts else frozenset()
    return Fingerprint(texts.get("cpu", ""), vendor, family, model, stepping, isa)


def _ordered(flags: frozenset[str]) -> list[str]:
    return sorted(flags, key=lambda f: (ISA_FLAGS.index(f) if f in ISA_FLAGS else len(ISA_FLAGS), f))


def _texts(hardware) -> dict[str, str]:
    """The text fields of an `irkit.perf.hardware.Hardware`, or a dict of them."""
    if isinstance(hardware, dict):
        return hardware
    return dict(getattr(hardware, "text", {}) or {})


def mismatch(hardware, host: Fingerprint | None = None, march: str | None = None) -> str | None:
    """How the CPU/ISA a description records differs from `host` (default: this machine), or None.

    `hardware` is an `irkit.perf.hardware.Hardware` (its `text` fields) or a
    dict of text fields.  With `march`, a description built for another
    `-march` is a mismatch too (`native` and no record count as native).
    """
    texts = _texts(hardware)
    was = recorded(texts)
    problems: list[str] = []
    if was is not None:
        here = host or this_host()
        if "cpu_id" in texts and _CPU_ID.match(texts["cpu_id"]):
            same = (was.vendor, was.family, was.model) == (here.vendor, here.family, here.model)
        else:
            same = was.name.strip() == here.name.strip()
        if not same:
            problems.append(f"it was measured on {was.describe()}, this host is {here.describe()}")
        if "isa" in texts and was.isa != here.isa:
            lacks, extra = _ordered(was.isa - here.isa), _ordered(here.isa - was.isa)
            parts = []
            if lacks:
                parts.append(f"this host lacks {' '.join(lacks)}")
            if extra:
                parts.append(f"this host also has {' '.join(extra)}")
            problems.append(f"its ISA was '{was.isa_text or texts['isa']}' ({'; '.join(parts)})")
    if march is not None:
        built = texts.get("march", "native")
        if (built or "native") != (march or "native"):
            problems.append(f"it was built for -march={built}, this build is for -march={march}")
    return "; ".join(problems) if problems else None


def warning(hardware, march: str | None = None) -> str | None:
    """A one-line warning for a tool about to use a description measured elsewhere, or None."""
    how = mismatch(hardware, march=march)
    if how is None:
        return None
    name = getattr(hardware, "name", "the description")
    source = getattr(hardware, "source", "")
    where = f"hardware '{name}'" + (f" ({source})" if source else "")
    return (
        f"{where} does not describe this host: {how}; its figures may not hold here "
        f"(`irkit calibrate --check {source or name}` measures whether they do)"
    )
