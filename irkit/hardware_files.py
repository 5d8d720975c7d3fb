"""Where a named hardware description (`hardware host`) is found.

`hardware NAME` refers to a file `NAME.hw`, looked up next to the document,
then in each directory of `$IRKIT_HW_PATH` (separated by the OS path
separator), then among the profiles bundled with irkit (`irkit/hw/`).
"""

from __future__ import annotations

import os
from pathlib import Path

BUNDLED_DIR = Path(__file__).resolve().parent / "hw"


def search_dirs(document: str | None) -> list[Path]:
    dirs: list[Path] = []
    if document and not document.startswith("<"):
        dirs.append(Path(document).resolve().parent)
    for entry in os.environ.get("IRKIT_HW_PATH", "").split(os.pathsep):
        if entry:
            dirs.append(Path(entry))
    dirs.append(BUNDLED_DIR)
    return dirs


def find_hardware(name: str, document: str | None) -> Path | None:
    """The path of `name.hw`, or None if no search directory has it."""
    for directory in search_dirs(document):
        candidate = directory / f"{name}.hw"
        if candidate.is_file():
            return candidate
    return None
