"""The common body of the one-directive passes (`schedule-split{...}` and friends)."""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute

from irkit.passes.schedule import load, unknown
from irkit.passes.schedule.helpers import fail, kernels, stage_nests


def run_directive(module: ModuleOp, kind: str, stage: str, d: Mapping[str, Attribute], where: str) -> list:
    """Apply one directive to `stage` in every kernel that has it; the kernels it changed."""
    fn = load(kind)
    if fn is None:
        raise fail(where, unknown(kind), kind)
    touched = [k for k in kernels(module) if stage_nests(k, stage)]
    if not touched:
        raise fail(where, f"no loops of stage '{stage}' in the module", stage)
    for kernel in touched:
        fn(kernel, stage, d, where)
    return touched
