"""irkit's passes by pipeline name, each behind a zero-argument factory.

The factories import lazily, so listing the passes (as `xdsl-opt --help`
does through the plugin universe) never imports a pass module.  A factory
returns the pass *class*; the driver instantiates it from the options in
the pipeline string.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


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


IRKIT_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "check-design": _check_design,
    "lower-design": _lower_design,
    "generalize-tensorop": _generalize_tensorop,
    "lower-tensorop": _lower_tensorop,
}


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """irkit's passes plus every pass of xDSL's multiverse (installed plugins).

    When irkit is installed, the multiverse already holds irkit's passes
    through the `xdsl.universe` entry point; a name is added only if it is
    not there yet, so nothing is registered twice.
    """
    from xdsl.universe import Universe

    passes = dict(Universe.get_multiverse().all_passes)
    for name, factory in IRKIT_PASSES.items():
        passes.setdefault(name, factory)
    return passes
