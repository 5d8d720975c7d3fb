"""The output formats of `irkit-opt --emit`: irkit's own, and those plugins add.

irkit's own are printed by the driver (irkit/tools/opt.py); a plugin's is a
function from the module to text, registered with irkit.extend.register_backend.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from irkit import registry

BUILTIN_BACKENDS: dict[str, str] = registry.BUILTIN_BACKENDS
BUILTIN_BACKENDS |= {
    "mlir": "the IR as MLIR text (the default)",
    "design": "design IR as a .design document",
    "c": "loop IR as C with OpenMP",
    "python": "perf IR as a standalone Python cost-model module",
}

# name -> (emit function, one-line summary)
BACKENDS: dict[str, tuple[Callable[[ModuleOp], str], str]] = registry.BACKENDS


def backend_names() -> list[str]:
    return [*registry.BUILTIN_BACKENDS, *sorted(registry.BACKENDS)]
