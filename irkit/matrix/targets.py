"""The columns of the matrix: an ISA to build for and a number of threads to run on."""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_ISAS = ("native", "x86-64-v3", "x86-64-v2")
ISA_NOTES = {"native": "the host's own ISA", "x86-64-v3": "AVX2, FMA", "x86-64-v2": "SSE4.2", "x86-64-v4": "AVX-512"}


class TargetError(ValueError):
    """A --targets or --threads value that names no target."""


@dataclass(frozen=True)
class Target:
    isa: str  # `native` or a -march name
    threads: int
    host: str = ""  # the worker host measuring it, on a cluster ("" = this process's host)

    @property
    def label(self) -> str:
        where = f" @ {self.host}" if self.host else ""
        return f"{self.isa}, {self.threads} thread{'s' if self.threads != 1 else ''}{where}"


def parse_isas(text: str | None) -> list[str]:
    if not text:
        return list(DEFAULT_ISAS)
    isas = [t.strip() for t in text.split(",") if t.strip()]
    if not isas:
        raise TargetError("--targets names no ISA (expected e.g. native,x86-64-v3,x86-64-v2)")
    return list(dict.fromkeys(isas))


def parse_threads(text: str | None) -> list[int]:
    """`1,2` (the default: one thread and every core this process may use)."""
    if not text:
        return sorted({1, max(1, len(os.sched_getaffinity(0)))})
    out = []
    for part in text.split(","):
        try:
            n = int(part)
        except ValueError:
            raise TargetError(f"--threads '{part}' is not a number of threads") from None
        if n < 1:
            raise TargetError(f"--threads {n}: at least one thread")
        out.append(n)
    return sorted(set(out))


def targets(isas: list[str], threads: list[int], hosts: list[str] | None = None) -> list[Target]:
    return [Target(isa, n, host) for host in (hosts or [""]) for isa in isas for n in threads]
