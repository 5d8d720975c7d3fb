"""Pass-pipeline strings (`-p 'pass{opt=v opt2=w},pass2'`) to pass instances.

The syntax is xDSL's (`xdsl.utils.arg_spec`): passes separated by commas,
options in braces separated by spaces, `opt=1,2` a tuple, `-` in option
names read as `_`.  xDSL reports problems as tracebacks (`ArgSpecParseError`
is even a `BaseException`); here every problem becomes one `PipelineError`
whose message fits on one line and says what to change: the column of a
syntax error, the closest pass name, the options a pass does take, the type
an option wants.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Iterable
from typing import Any, get_type_hints

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.utils.hints import type_repr

try:  # private helper of the pinned xDSL; `from_spec` still checks types without it
    from xdsl.utils.arg_spec import _convert_arg_to_type
except ImportError:  # pragma: no cover
    _convert_arg_to_type = None

PassFactory = Callable[[], type[ModulePass]]


class PipelineError(Exception):
    """A pipeline string that cannot be turned into passes (a usage error)."""


class PassLoadError(Exception):
    """A registered pass whose factory failed (an internal error, not the user's)."""


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like `name`, if any is reasonably close."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _syntax_error(spec: str, err: ArgSpecParseError) -> PipelineError:
    text = str(err)
    where = re.search(r"pass-pipeline:\d+:(\d+)", text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reason = lines[-1] if lines else "cannot parse"
    reason = reason[:1].lower() + reason[1:]
    col = f" at column {where.group(1)}" if where else ""
    return PipelineError(f"malformed pass pipeline '{spec}'{col}: {reason}")


def parse_specs(spec: str) -> list[ArgSpec]:
    """The pipeline string as xDSL `ArgSpec`s (names and raw options), syntax-checked."""
    try:
        return list(parse_pipeline(spec))
    except ArgSpecParseError as err:
        raise _syntax_error(spec, err) from None


def _option_fields(cls: type[ModulePass]) -> dict[str, Any]:
    """The options of a pass class: field name -> annotated type."""
    hints = get_type_hints(cls)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls) if f.init and f.name != "name"}


def _describe_options(fields: dict[str, Any]) -> str:
    if not fields:
        return "it takes no options"
    return "options: " + ", ".join(f"{n.replace('_', '-')}: {type_repr(t)}" for n, t in fields.items())


def _show_value(value: tuple) -> str:
    return ",".join(str(v).lower() if isinstance(v, bool) else str(v) for v in value) if value else "<none>"


def instantiate(spec: ArgSpec, passes: dict[str, PassFactory]) -> ModulePass:
    """One pass instance from its spec, with one-line errors for names and options."""
    if spec.name not in passes:
        hint = closest(spec.name, passes)
        suggestion = f"; did you mean '{hint}'?" if hint else " (irkit-opt --list-passes shows them all)"
        raise PipelineError(f"unknown pass '{spec.name}'{suggestion}")
    try:
        cls = passes[spec.name]()
    except Exception as exc:  # a broken registration is our bug, not the user's
        raise PassLoadError(f"cannot load pass '{spec.name}': {type(exc).__name__}: {exc}") from exc

    fields = _option_fields(cls)
    options = spec.normalize_parameter_names().parameters
    for opt, value in options.items():
        if opt not in fields:
            hint = closest(opt, fields)
            did_you_mean = f"; did you mean '{hint.replace('_', '-')}'?" if hint else ""
            raise PipelineError(
                f"pass '{spec.name}' has no option '{opt.replace('_', '-')}'{did_you_mean} ({_describe_options(fields)})"
            )
        if _convert_arg_to_type is None:  # pragma: no cover
            continue
        try:
            _convert_arg_to_type(value, fields[opt])
        except ValueError:
            raise PipelineError(
                f"option '{opt.replace('_', '-')}' of pass '{spec.name}' expects {type_repr(fields[opt])}, "
                f"got '{_show_value(value)}'"
            ) from None
    try:
        return cls.from_spec(spec)
    except (ValueError, TypeError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        required = re.match(r'.* requires argument "(\w+)"', message)
        if required:
            message = f"pass '{spec.name}' requires option '{required.group(1).replace('_', '-')}'"
        else:
            message = f"invalid options for pass '{spec.name}': {message}"
        raise PipelineError(message) from None


def parse(spec: str, passes: dict[str, PassFactory]) -> list[ModulePass]:
    """The pass instances a pipeline string names, in order."""
    return [instantiate(s, passes) for s in parse_specs(spec)]
