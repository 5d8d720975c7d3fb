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
        if _is_file(candidate):
            return candidate
    return None


def _is_file(path: Path) -> bool:
    """`path.is_file()`, False where the file system cannot even look (a name too long for it)."""
    try:
        return path.is_file()
    except OSError:
        return False


def resolve_hardware(spec: str | Path, document: str | None) -> Path:
    """The file of a description given as a `.hw` path or as a name (searched as above);
    a DiagnosticError saying where it looked when there is none."""
    from irkit.diagnostics import Diagnostic, DiagnosticError

    text = str(spec)
    path = Path(text)
    if not (text.endswith(".hw") or _is_file(path)):
        found = find_hardware(text, document)
        if found is None:
            looked = ", ".join(str(p) for p in search_dirs(document))
            raise DiagnosticError(
                [Diagnostic("error", f"hardware description '{text}' not found: no {text}.hw in {looked}")]
            )
        path = found
    if not _is_file(path):
        raise DiagnosticError([Diagnostic("error", f"hardware description file '{path}' does not exist")])
    return path
