"""irkit's passes by pipeline name, each behind a zero-argument factory.

The factories import lazily, so listing the passes (as `xdsl-opt --help`
does through the plugin universe) never imports a pass module.  A factory
returns the pass *class*; the driver instantiates it from the options in
the pipeline string.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

from irkit import registry


def _check_design() -> type[ModulePass]:
    from irkit.passes.check_design import CheckDesignPass

    return CheckDesignPass


def _lower_design() -> type[ModulePass]:
    from irkit.passes.lower_design import LowerDesignPass

    return LowerDesignPass


def _generalize_tensorop() -> type[ModulePass]:
    from irkit.passes.generalize import GeneralizeTensorOpPass

    return GeneralizeTensorOpPass


def _lower_tensorop() -> type[ModulePass]:
    from irkit.passes.lower_tensorop import LowerTensorOpPass

    return LowerTensorOpPass


def _apply_schedule() -> type[ModulePass]:
    from irkit.passes.apply_schedule import ApplySchedulePass

    return ApplySchedulePass


def _model_perf() -> type[ModulePass]:
    from irkit.passes.model_perf import ModelPerfPass

    return ModelPerfPass


def _raise_loop() -> type[ModulePass]:
    from irkit.passes.raise_loop import RaiseLoopPass

    return RaiseLoopPass


def _raise_tensorop() -> type[ModulePass]:
    from irkit.passes.raise_tensorop import RaiseTensorOpPass

    return RaiseTensorOpPass


def _verify_roundtrip() -> type[ModulePass]:
    from irkit.passes.verify_roundtrip import VerifyRoundtripPass

    return VerifyRoundtripPass


def _schedule_pass(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def factory() -> type[ModulePass]:
        import importlib

        return getattr(importlib.import_module(f"irkit.passes.schedule.{module}"), cls)

    return factory


IRKIT_PASSES: dict[str, Callable[[], type[ModulePass]]] = registry.PASSES
IRKIT_PASSES |= {
    "check-design": _check_design,
    "lower-design": _lower_design,
    "generalize-tensorop": _generalize_tensorop,
    "lower-tensorop": _lower_tensorop,
    "apply-schedule": _apply_schedule,
    "model-perf": _model_perf,
    "raise-loop": _raise_loop,
    "raise-tensorop": _raise_tensorop,
    "verify-roundtrip": _verify_roundtrip,
    "schedule-split": _schedule_pass("split", "ScheduleSplitPass"),
    "schedule-tile": _schedule_pass("tile", "ScheduleTilePass"),
    "schedule-reorder": _schedule_pass("reorder", "ScheduleReorderPass"),
    "schedule-parallel": _schedule_pass("parallel", "ScheduleParallelPass"),
    "schedule-vectorize": _schedule_pass("vectorize", "ScheduleVectorizePass"),
    "schedule-unroll": _schedule_pass("unroll", "ScheduleUnrollPass"),
    "schedule-unroll-jam": _schedule_pass("unroll_jam", "ScheduleUnrollJamPass"),
    "schedule-pack": _schedule_pass("pack", "SchedulePackPass"),
    "schedule-compute-at": _schedule_pass("compute_at", "ScheduleComputeAtPass"),
    "schedule-compute-root": _schedule_pass("compute_at", "ScheduleComputeRootPass"),
    "schedule-fuse-stage": _schedule_pass("compute_at", "ScheduleFuseStagePass"),
}


# Passes added with irkit.extend.register_pass (irkit plugins, `--plugin FILE`).
PLUGIN_PASSES: dict[str, Callable[[], type[ModulePass]]] = registry.PLUGIN_PASSES


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """irkit's passes, irkit plugins' passes, and every pass of xDSL's multiverse.

    When irkit is installed, the multiverse already holds irkit's passes
    through the `xdsl.universe` entry point; a name is added only if it is
    not there yet, so nothing is registered twice.
    """
    from xdsl.universe import Universe

    passes = dict(Universe.get_multiverse().all_passes)
    for name, factory in registry.PASSES.items():
        passes.setdefault(name, factory)
    passes.update(registry.PLUGIN_PASSES)
    return passes
