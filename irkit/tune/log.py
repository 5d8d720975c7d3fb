"""The tuning log: one JSON line per measured candidate, appended as it is measured.

A line holds the document's hash (its text without schedule blocks, so the
tuned document and the one it came from share it), the sizes, the schedule
(stage -> directives) and its text, the predicted and measured seconds, the
compile time, and the host's fingerprint (CPU, ISA, the hardware
description's hash).  A candidate the measurement dropped (it did not
compile, its result was wrong, or its probe was far slower than the
fastest) has a line too, with `"measured": null` and the `"error"`.  A
refinement batch re-times its incumbent beside its neighbours; that line
carries the batch's number (`"batch"`), and a resumed run reads it back for
the same batch instead of timing again.
`irkit tune --log FILE` reads it first: a candidate already measured (or
dropped) for this document, these sizes and this host is not measured
again, and `--from-log` picks the best known schedule without
measuring anything.  Lines from other documents or hosts are kept and
ignored; a line that is not JSON is reported with its line number.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from irkit.diagnostics import Diagnostic, DiagnosticError


def document_hash(text: str) -> str:
    from irkit.validate.suite import replace_schedules

    return hashlib.sha256(replace_schedules(text, {}).encode()).hexdigest()[:16]


def sizes_key(sizes: dict[str, int]) -> str:
    return ",".join(f"{k}={sizes[k]}" for k in sorted(sizes))


def schedule_key(schedules: dict[str, list[str]]) -> str:
    return " | ".join(f"{stage}: " + "; ".join(dirs) for stage, dirs in sorted(schedules.items()))


def host_of(hw, measured_on=None) -> dict:
    """CPU model, ISA and the hash of the hardware description the predictions used; the CPU is
    this host's, or `measured_on`'s (an `irkit.distributed.host.HostInfo`: a cluster's host)."""
    from irkit.distributed.host import this_host

    info = measured_on if measured_on is not None else this_host()
    cpu, isa = info.cpu, info.isa
    values = json.dumps(hw.values, sort_keys=True, default=str)
    return {"cpu": cpu, "isa": isa, "hw": hashlib.sha256(values.encode()).hexdigest()[:16]}


@dataclass
class Entry:
    document: str
    sizes: dict[str, int]
    schedules: dict[str, list[str]]
    predicted: float | None
    measured: float | None  # None: dropped, for `error`
    compile_seconds: float
    host: dict
    error: str | None = None
    # A refinement batch's re-timing of the incumbent (its number in the run), not a candidate's
    # own measurement: a resumed run reads it back for the same batch, so it decides as the first.
    batch: int | None = None

    @property
    def schedule(self) -> str:
        return schedule_key(self.schedules)

    def to_json(self) -> dict:
        extra = {} if self.error is None else {"error": self.error}
        if self.batch is not None:
            extra["batch"] = self.batch
        return {
            "document": self.document,
            "sizes": self.sizes,
            "schedule": self.schedule,
            "schedules": self.schedules,
            "predicted": self.predicted,
            "measured": self.measured,
            "compile_seconds": self.compile_seconds,
            "host": self.host,
            **extra,
        }


def read_log(path: Path) -> list[Entry]:
    """Every entry of the log (none if it does not exist)."""
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out.append(
                Entry(
                    str(row["document"]),
                    {k: int(v) for k, v in row["sizes"].items()},
                    {k: [str(d) for d in v] for k, v in row["schedules"].items()},
                    None if row.get("predicted") is None else float(row["predicted"]),
                    None if row["measured"] is None else float(row["measured"]),
                    float(row.get("compile_seconds", 0.0)),
                    dict(row.get("host", {})),
                    None if row.get("error") is None else str(row["error"]),
                    None if row.get("batch") is None else int(row["batch"]),
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DiagnosticError(
                [Diagnostic("error", f"{path}:{n}: not a tuning-log line ({type(exc).__name__}: {exc}); "
                            "each line is one JSON object that `irkit tune --log` wrote")]
            ) from None
    return out


def append(path: Path, entry: Entry) -> None:
    with path.open("a") as f:
        f.write(json.dumps(entry.to_json(), sort_keys=True) + "\n")


def same_host(a: dict, b: dict) -> bool:
    return a.get("cpu") == b.get("cpu") and a.get("isa") == b.get("isa") and a.get("hw") == b.get("hw")


def known(entries: list[Entry], document: str, host: dict) -> dict[tuple[str, str], Entry]:
    """(schedule, sizes) -> the entry, for this document and host (the last one wins); the
    incumbents' re-timings are not among them (`retimed`)."""
    out = {}
    for e in entries:
        if e.batch is None and e.document == document and same_host(e.host, host):
            out[(e.schedule, sizes_key(e.sizes))] = e
    return out


def retimed(entries: list[Entry], document: str, host: dict) -> dict[tuple[str, str, int], Entry]:
    """(schedule, sizes, batch) -> a refinement batch's re-timing of its incumbent."""
    return {
        (e.schedule, sizes_key(e.sizes), e.batch): e
        for e in entries
        if e.batch is not None and e.document == document and same_host(e.host, host)
    }
