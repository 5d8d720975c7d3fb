"""The xDSL context with every dialect irkit reads and writes."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.math import Math
from xdsl.ir import Dialect

from irkit import registry


def _design():
    import irkit.directives  # noqa: F401 -- registers the directive records, whose ops the dialect holds
    from irkit.dialects.design import design_dialect

    return design_dialect()


def _tensorop():
    from irkit.dialects.tensorop import tensorop_dialect

    return tensorop_dialect()


def _loop():
    from irkit.dialects.loop import Loop

    return Loop


def _perf():
    from irkit.dialects.perf import Perf

    return Perf


# Lazy factories, shared with the xDSL plugin universe (`irkit.universe`).
IRKIT_DIALECTS: dict[str, Callable[[], Dialect]] = registry.DIALECTS
IRKIT_DIALECTS |= {"design": _design, "tensorop": _tensorop, "loop": _loop, "perf": _perf}

# Dialects added with irkit.extend.register_dialect (irkit plugins, `--plugin FILE`).
PLUGIN_DIALECTS: dict[str, Callable[[], Dialect]] = registry.PLUGIN_DIALECTS


def make_context() -> Context:
    """A context that knows builtin, arith, math, func, irkit's dialects and the loaded plugins'
    (the entry points load installed `irkit.plugins` packages, once per process)."""
    ctx = Context()
    for dialect in (Builtin, Arith, Math, Func):
        ctx.load_dialect(dialect)
    for name, factory in {**registry.DIALECTS, **registry.PLUGIN_DIALECTS}.items():
        ctx.register_dialect(name, factory)
    return ctx
