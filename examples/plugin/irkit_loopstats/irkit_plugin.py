"""What this package adds through irkit's own entry point group, `irkit.plugins`.

xDSL's `xdsl.universe` carries dialects and passes only; an output format
for `irkit-opt --emit` is irkit's own concept, so it is registered here,
by a function irkit calls once at start-up (see pyproject.toml).
"""

from __future__ import annotations

from irkit.diagnostics import DiagnosticError, at_op
from irkit.extend import register_backend
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from irkit_loopstats.annotate import kernel_counts
from irkit_loopstats.dialect import COUNTS


def emit_table(module: ModuleOp) -> str:
    """One row per loop-level kernel: its name and the counts `loopstats.summary` would hold."""
    kernels = [k for k in module.body.block.ops if isinstance(k, func.FuncOp) and not k.is_declaration]
    if not kernels:
        raise DiagnosticError([at_op("error", "--emit loopstats: the module holds no kernel function", module)])
    for kernel in kernels:
        for op in kernel.body.walk():
            if op.name.startswith(("design.", "tensorop.")):
                raise DiagnosticError(
                    [at_op("error", f"--emit loopstats: kernel @{kernel.sym_name.data} is not loop-level IR yet", op)]
                )
    rows = [("kernel", *COUNTS)]
    for kernel in kernels:
        counts = kernel_counts(kernel.body.block)
        rows.append((kernel.sym_name.data, *(str(counts[c]) for c in COUNTS)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n" for row in rows)


def register() -> None:
    register_backend("loopstats", emit_table, "a table of each kernel's loop nests, loops, depth, loads and stores")
