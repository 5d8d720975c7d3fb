"""irkit's extension API: the one module a plugin imports to add to irkit.

Four kinds of addition, each registered by one call:

- `register_named_op(NamedOperation(...))`: a named operation of the design
  language (`Y = depthwise_conv2d(X, W, stride=1)`), with everything each
  level needs in one record: the call's signature and shape rule (design
  level, `NamedOpSpec`), its tensorop op and generic form (tensorop level,
  `generalize`), its numpy semantics (`reference`) and its operation count
  (`NamedOpSpec.flops_per_point`).  Lowering to loops, C, the cost model and
  raising then need nothing more: they work on generics and loops.
- `register_pass(PassClass)`: a pass for `irkit-opt -p NAME`.
- `register_dialect(dialect)`: a dialect whose IR `irkit-opt` parses and prints.
- `register_backend(name, emit, summary)`: an output format for `irkit-opt --emit NAME`.

A plugin is a Python module or file that makes these calls when imported.
Three ways to load one:

- `irkit-opt --plugin FILE.py|MODULE` (and `irkit --plugin ...`) for one run;
- an installed package declaring an entry point in the group `irkit.plugins`
  (`[project.entry-points."irkit.plugins"] name = "pkg.module"` or
  `"pkg.module:register"`, a function called with no arguments): irkit's
  tools load every one at start-up;
- dialects and passes only: xDSL's own `xdsl.universe` entry point, which
  `xdsl-opt` reads too (irkit registers itself this way).

docs/extending.md describes the contracts; docs/tutorial/ walks through them.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Dialect
from xdsl.passes import ModulePass

# The levels whose tables a plugin adds to: importing them puts irkit's own entries in the
# registry, so that a plugin's name is checked against them.
import irkit.backends.registry  # noqa: F401
import irkit.context  # noqa: F401
import irkit.passes.registry  # noqa: F401
from irkit import registry
from irkit.diagnostics import DiagnosticError, at_op
from irkit.dialects import tensorop as t
from irkit.named_ops import NAMED_OPS, NamedOpError, NamedOpSpec, Param, register_spec
from irkit.passes.options import option

__all__ = [
    "ENTRY_POINT_GROUP",
    "IrkitPass",
    "NamedOpError",
    "NamedOpSpec",
    "NamedOperation",
    "Param",
    "PluginError",
    "load_installed_plugins",
    "load_plugin",
    "option",
    "register_backend",
    "register_dialect",
    "register_named_op",
    "register_pass",
]

ENTRY_POINT_GROUP = "irkit.plugins"
_PASS_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_OP_NAME = re.compile(r"[a-z][a-z0-9_]*$")


class PluginError(Exception):
    """A plugin that cannot be loaded or registers something malformed (a usage error)."""


# --- named operations ------------------------------------------------------------------------


@dataclass(frozen=True)
class NamedOperation:
    """Everything irkit needs to know about one named operation, level by level.

    - `spec` (design level): name, operand count, parameters, shape rule,
      loop names and extents, reduction loops, `flops_per_point`.
    - `generalize` (tensorop level): `fn(gen)` builds the fills, allocs and
      generics that compute `gen.op` (see `irkit.passes.generalize.Gen`).
      Without it, documents using the operation parse and check but do not lower.
    - `tensor_op`: the tensorop op class, named `tensorop.<name>`.  By
      default one is made that checks the operand ranks in `spec.ranks`.
    - `reference`: `fn(operands, params, acc_dtype) -> ndarray`, the numpy
      semantics `irkit run` and `--check-semantics` compare generated code with.
    """

    spec: NamedOpSpec
    generalize: Callable[[Any], None] | None = None
    tensor_op: type | None = None
    reference: Callable[..., Any] | None = None


def register_named_op(op: NamedOperation, *, replace: bool = False) -> None:
    """Add `op` to every level at once; `replace=True` lets a plugin override an operation."""
    name = op.spec.name
    if not _OP_NAME.match(name):
        raise PluginError(f"named operation '{name}': names are lower-case identifiers like 'depthwise_conv2d'")
    if name in NAMED_OPS and not replace:
        raise PluginError(f"named operation '{name}' is registered already (pass replace=True to override it)")
    tensor_op = op.tensor_op
    if tensor_op is None and op.generalize is not None:
        ranks = (*op.spec.ranks, None) if op.spec.ranks else (None,) * (op.spec.arity + 1)
        tensor_op = t.named_tensor_op_class(name, ranks, op.spec.summary)
    register_spec(op.spec)
    if tensor_op is not None:
        try:
            t.register_named_tensor_op(name, tensor_op)
        except ValueError as exc:
            raise PluginError(str(exc)) from None
    if op.generalize is not None:
        registry.GENERALIZERS[name] = op.generalize
    if op.reference is not None:
        registry.REFERENCE_SEMANTICS[name] = op.reference


# --- passes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class IrkitPass(ModulePass):
    """Base of passes that follow irkit's conventions.

    A subclass is a frozen dataclass with:
    - `name`: the pipeline flag, lower-case words joined by '-';
    - options as typed fields declared with `option(default, help)`;
    - a docstring whose first sentence is the one-line summary `--list-passes` shows.

    `fail(message, op)` makes the located error a pass raises on bad input:
    irkit-opt prints it at the source line `op` came from, prefixed with the
    pass name, and exits with status 1 (never a traceback).
    """

    name: ClassVar[str] = "irkit-pass"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not _PASS_NAME.match(cls.name):
            raise PluginError(f"pass class {cls.__name__}: name '{cls.name}' must be lower-case words joined by '-'")
        if not (cls.__doc__ or "").strip():
            raise PluginError(f"pass class {cls.__name__} ('{cls.name}') needs a docstring: its summary and options")

    def fail(self, message: str, op: Any) -> DiagnosticError:
        return DiagnosticError([at_op("error", f"{self.name}: {message}", op)])


def register_pass(cls: type[ModulePass], *, replace: bool = False) -> None:
    """Make `cls` available as `irkit-opt -p <cls.name>`."""
    if not (isinstance(cls, type) and issubclass(cls, ModulePass)):
        raise PluginError(f"register_pass expects a ModulePass subclass, got {cls!r}")
    if not _PASS_NAME.match(cls.name):
        raise PluginError(f"pass {cls.__name__}: name '{cls.name}' must be lower-case words joined by '-'")
    if (cls.name in registry.PASSES or cls.name in registry.PLUGIN_PASSES) and not replace:
        raise PluginError(f"a pass named '{cls.name}' is registered already (pass replace=True to override it)")
    registry.PLUGIN_PASSES[cls.name] = lambda: cls


# --- dialects and backends ----------------------------------------------------------------------


def register_dialect(dialect: Dialect | Callable[[], Dialect], name: str | None = None) -> None:
    """Make a dialect (or a zero-argument factory of one, with `name`) known to irkit's contexts."""
    if isinstance(dialect, Dialect):
        name, factory = dialect.name, (lambda: dialect)
    elif name is None:
        raise PluginError("register_dialect with a factory needs the dialect's name")
    else:
        factory = dialect
    if name in registry.DIALECTS:
        raise PluginError(f"dialect '{name}' is one of irkit's own; choose another name")
    registry.PLUGIN_DIALECTS[name] = factory


def register_backend(name: str, emit: Callable[[ModuleOp], str], summary: str) -> None:
    """Make `irkit-opt --emit NAME` print `emit(module)`; `emit` raises DiagnosticError on bad IR."""
    if not _OP_NAME.match(name):
        raise PluginError(f"backend '{name}': names are lower-case identifiers")
    if name in registry.BUILTIN_BACKENDS:
        raise PluginError(f"backend '{name}' is one of irkit's own; choose another name")
    registry.BACKENDS[name] = (emit, summary)


# --- loading ------------------------------------------------------------------------------------

_loaded: set[str] = set()


def load_plugin(spec: str) -> None:
    """Import a plugin given as a `.py` file or a module name; every problem is a `PluginError`."""
    if spec in _loaded:
        return
    path = Path(spec)
    try:
        if spec.endswith(".py"):
            if not path.is_file():
                raise PluginError(f"plugin file '{spec}' does not exist")
            module_name = f"irkit_plugin_{re.sub(r'[^0-9A-Za-z_]', '_', str(path.resolve()))}"
            loader = importlib.util.spec_from_file_location(module_name, path)
            if loader is None or loader.loader is None:
                raise PluginError(f"cannot load '{spec}' as a Python file")
            module = importlib.util.module_from_spec(loader)
            sys.modules[module_name] = module
            loader.loader.exec_module(module)
        else:
            importlib.import_module(spec)
    except PluginError:
        raise
    except ModuleNotFoundError as exc:
        raise PluginError(f"cannot load plugin '{spec}': no module named '{exc.name}'") from None
    except Exception as exc:
        raise PluginError(f"plugin '{spec}' failed while loading: {type(exc).__name__}: {exc}") from exc
    _loaded.add(spec)


_installed: list[str] | None = None  # the installed plugins, once they have all loaded


def load_installed_plugins() -> list[str]:
    """Load every `irkit.plugins` entry point of the installed packages, once per process; their
    names, in order.  The tools, `irkit.compile`, contexts and named-operation lookups call it."""
    global _installed, _loading
    if _installed is not None:
        return list(_installed)
    if _loading:  # a plugin being loaded made a context or looked an operation up
        return []
    _loading = True
    try:
        _installed = _load_entry_points()
    finally:
        _loading = False
    return list(_installed)


_loading = False


def _load_entry_points() -> list[str]:
    names = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        key = f"entry-point:{ep.name}={ep.value}"
        if key in _loaded:
            names.append(ep.name)
            continue
        try:
            target = ep.load()
            if callable(target) and not isinstance(target, type(sys)):
                target()
        except PluginError as exc:
            raise PluginError(f"installed plugin '{ep.name}' ({ep.value}): {exc}") from None
        except Exception as exc:
            raise PluginError(
                f"installed plugin '{ep.name}' ({ep.value}) failed while loading: {type(exc).__name__}: {exc}"
            ) from exc
        _loaded.add(key)
        names.append(ep.name)
    return names


def load_plugins(specs: list[str] | None) -> None:
    """What the command-line tools call first: installed plugins, then each `--plugin`."""
    load_installed_plugins()
    for spec in specs or []:
        load_plugin(spec)
