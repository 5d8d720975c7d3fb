"""irkit's passes by pipeline name, each behind a zero-argument factory.

The factories import lazily, so listing the passes (as `xdsl-opt --help`
does through the plugin universe) never imports a pass module.  A factory
returns the pass *class*; the driver instantiates it from the options in
the pipeline string.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

import irkit.directives  # noqa: F401 -- registers the directive records
from irkit import registry


def _check_design() -> type[ModulePass]:
    from irkit.passes.check_design import CheckDesignPass

    return CheckDesignPass


def _check_bounds() -> type[ModulePass]:
    from irkit.passes.check_bounds import CheckBoundsPass

    return CheckBoundsPass


def _check_dataflow() -> type[ModulePass]:
    from irkit.passes.check_dataflow import CheckDataflowPass

    return CheckDataflowPass


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


def _export_affine() -> type[ModulePass]:
    from irkit.passes.export_affine import ExportAffinePass

    return ExportAffinePass


def _affine_for_to_scf() -> type[ModulePass]:
    from irkit.passes.affine_for_to_scf import AffineForToScfPass

    return AffineForToScfPass


def _schedule_pass(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def factory() -> type[ModulePass]:
        import importlib

        return getattr(importlib.import_module(module), cls)

    return factory


IRKIT_PASSES: dict[str, Callable[[], type[ModulePass]]] = registry.PASSES
IRKIT_PASSES |= {
    "check-design": _check_design,
    "check-bounds": _check_bounds,
    "check-dataflow": _check_dataflow,
    "lower-design": _lower_design,
    "generalize-tensorop": _generalize_tensorop,
    "lower-tensorop": _lower_tensorop,
    "apply-schedule": _apply_schedule,
    "model-perf": _model_perf,
    "raise-loop": _raise_loop,
    "raise-tensorop": _raise_tensorop,
    "verify-roundtrip": _verify_roundtrip,
    "export-affine": _export_affine,
    "affine-for-to-scf": _affine_for_to_scf,
    "schedule-fuse-stage": _schedule_pass("irkit.passes.schedule.compute_at", "ScheduleFuseStagePass"),
}


# Each schedule directive's stand-alone pass (`schedule-split`, ...), named by its record.
for _record in registry.DIRECTIVE_RECORDS.values():
    IRKIT_PASSES.setdefault(_record.pass_name, _schedule_pass(_record.transform, _record.pass_class))


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
