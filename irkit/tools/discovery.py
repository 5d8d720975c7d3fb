"""What `irkit-opt --list-passes`, `--list-dialects` and `--help-pass NAME` print.

Passes and dialects come from the same registries the pass runner uses
(irkit's own plus xDSL's multiverse, so installed plugins are listed too).
A pass is described by its class: the pipeline name, the options (dataclass
fields: name, type, default) and the docstring, whose first sentence is the
one-line summary.  A dialect is described by the docstring of the module
that defines its operations.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from irkit.tools import pipeline as pipeline_mod


def description(cls: type) -> str | None:
    """A class's own docstring (not the signature dataclasses write when there is none)."""
    doc = cls.__doc__
    if doc is None or doc.startswith(f"{cls.__name__}("):
        return None
    return doc


def summary(doc: str | None) -> str:
    """The first sentence of a docstring, on one line."""
    text = " ".join(inspect.cleandoc(doc or "").split())
    if not text:
        return "(no description)"
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        return repr(field.default)
    if field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return repr(field.default_factory())  # type: ignore[misc]
    return "required"


def options(cls: type, with_help: bool = False) -> list[str]:
    """`name: type = default` for each option of a pass class; with `with_help`, followed
    by the help text of fields declared with irkit.extend.option."""
    hints = pipeline_mod._option_fields(cls)
    out = []
    for field in dataclasses.fields(cls):
        if field.name not in hints:
            continue
        text = f"{field.name.replace('_', '-')}: {pipeline_mod.type_repr(hints[field.name])} = {_default(field)}"
        help_text = field.metadata.get("help") if with_help else None
        out.append(f"{text}\n      {help_text}" if help_text else text)
    return out


# irkit's passes by what they are for, in pipeline order.
IRKIT_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("checking", ("check-design",)),
    ("lowering (design -> tensorop -> loop)", ("lower-design", "generalize-tensorop", "lower-tensorop", "apply-schedule")),
    ("one schedule directive at a time (what apply-schedule runs)", ()),  # the schedule-* passes
    ("the cost model", ("model-perf",)),
    ("raising and verification (loop -> tensorop -> design)", ("check-bounds", "check-dataflow", "raise-loop", "raise-tensorop", "verify-roundtrip")),
)


def _pass_entry(name: str, factory: Callable[[], type]) -> tuple[list[str], str]:
    """The lines listing one pass, and where its class lives ('irkit', 'xdsl' or 'plugin')."""
    try:
        cls = factory()
    except Exception as exc:  # a plugin that fails to import is listed, not fatal
        return [name, f"    (cannot load: {type(exc).__name__}: {exc})"], "plugin"
    opts = options(cls)
    module = (getattr(cls, "__module__", "") or "").split(".")[0]
    origin = module if module in ("irkit", "xdsl") else "plugin"
    return [name + ("{" + ", ".join(opts) + "}" if opts else ""), "    " + summary(description(cls))], origin


def list_passes(passes: dict[str, Callable[[], type]]) -> str:
    """Every pass, irkit's first (grouped by what they are for, in pipeline order), then plugins',
    then xDSL's: each its name with options, then its summary indented."""
    from irkit.passes.registry import IRKIT_PASSES

    entries = {name: _pass_entry(name, passes[name]) for name in passes}
    lines: list[str] = []
    listed: set[str] = set()
    for title, names in IRKIT_GROUPS:
        group = list(names) or sorted(n for n in IRKIT_PASSES if n.startswith("schedule-"))
        group = [n for n in group if n in entries]
        if group:
            lines += [f"-- irkit: {title}"] + [line for n in group for line in entries[n][0]]
            listed |= set(group)
    for title, origin in (("irkit: other passes", "irkit"), ("plugins", "plugin"), ("xDSL", "xdsl")):
        group = [n for n in sorted(entries) if n not in listed and entries[n][1] == origin]
        if group:
            lines += [f"-- {title}"] + [line for n in group for line in entries[n][0]]
    return "\n".join(lines) + "\n"


def help_pass(name: str, passes: dict[str, Callable[[], type]]) -> str:
    """The full description of one pass."""
    cls = passes[name]()
    lines = [name, "", inspect.cleandoc(description(cls) or "(no description)"), ""]
    opts = options(cls, with_help=True)
    lines.append("Options:" if opts else "Options: none")
    lines += [f"  {o}" for o in opts]
    module = inspect.getmodule(cls)
    lines += ["", f"Defined in {module.__name__ if module else '?'} ({cls.__name__})."]
    return "\n".join(lines) + "\n"


def list_backends() -> str:
    """Every `--emit` format: irkit's own, then plugins'."""
    import irkit.backends.registry  # noqa: F401 -- puts irkit's own formats in the registry
    from irkit.registry import BACKENDS, BUILTIN_BACKENDS

    rows = [*BUILTIN_BACKENDS.items(), *((n, s) for n, (_, s) in sorted(BACKENDS.items()))]
    return "".join(f"{name}\n    {text}\n" for name, text in rows)


def list_dialects(ctx: Any) -> str:
    """Every registered dialect: its name and the summary of the module that defines it."""
    lines = []
    for name in sorted(ctx.registered_dialect_names):
        try:
            dialect = ctx.get_optional_dialect(name)
        except Exception as exc:
            lines += [name, f"    (cannot load: {type(exc).__name__}: {exc})"]
            continue
        ops = list(dialect.operations) if dialect is not None else []
        module = inspect.getmodule(ops[0]) if ops else None
        lines.append(f"{name} ({len(ops)} operation{'s' if len(ops) != 1 else ''})")
        lines.append("    " + summary(module.__doc__ if module else None))
    return "\n".join(lines) + "\n"
