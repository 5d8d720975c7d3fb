"""The lowering pipeline: the passes `irkit run`, `irkit.compile` and verification lower with."""

from __future__ import annotations

from xdsl.passes import ModulePass

from irkit.passes.apply_schedule import ApplySchedulePass
from irkit.passes.lower_design import LowerDesignPass
from irkit.passes.lower_tensorop import LowerTensorOpPass


def lowering_pipeline() -> list[ModulePass]:
    """The passes from checked design IR to loop IR, in order."""
    return [LowerDesignPass(), LowerTensorOpPass(), ApplySchedulePass()]
