"""Every table irkit looks things up in, in one leaf module.

Why a leaf: a lookup must never have to import the level that fills its
table (that is how import cycles and plugin loads inside verifiers come
about).  This module imports nothing from irkit; each level puts its own
entries here when it is imported, plugins add theirs through `irkit.extend`,
and installed plugins are loaded once, by the entry points (`irkit`,
`irkit-opt`, `irkit.compile`), never by a lookup.

The tables, by level:

- `NAMED_OPS`: name -> `irkit.named_ops.NamedOpSpec` (design level: call
  signature, shape rule, operation count);
- `TENSOR_OPS`: name -> the tensorop op class of a named operation;
- `GENERALIZERS`: name -> `fn(gen)` building its generic form;
- `REFERENCE_SEMANTICS`: name -> the numpy semantics of a plugin's operation;
- `DIRECTIVE_RECORDS`: schedule-directive kind -> its record
  (`irkit.directives.record.Directive`: op, builder, printer, replay,
  parameter space, where its loop transform lives);
- `DIRECTIVES`: schedule-directive kind -> its loop transform (filled by
  `irkit.passes.schedule`'s modules when imported);
- `PASSES` / `PLUGIN_PASSES`: pipeline name -> zero-argument factory of the
  pass class (irkit's own, then plugins');
- `DIALECTS` / `PLUGIN_DIALECTS`: dialect name -> zero-argument factory;
- `TARGETS`: code-generation targets by name (`irkit.backends.target`: emit, build, load);
- `BUILTIN_BACKENDS` / `BACKENDS`: `irkit-opt --emit` formats: irkit's own
  (name -> summary) and plugins' (name -> (emit function, summary)).

Bundled hardware profiles are files, not a table: `irkit.hardware_files`
finds them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NAMED_OPS: dict[str, Any] = {}
TENSOR_OPS: dict[str, type] = {}
GENERALIZERS: dict[str, Callable[[Any], None]] = {}
REFERENCE_SEMANTICS: dict[str, Callable[..., Any]] = {}
DIRECTIVE_RECORDS: dict[str, Any] = {}
DIRECTIVES: dict[str, Callable[..., None]] = {}

PASSES: dict[str, Callable[[], type]] = {}
PLUGIN_PASSES: dict[str, Callable[[], type]] = {}

DIALECTS: dict[str, Callable[[], Any]] = {}
PLUGIN_DIALECTS: dict[str, Callable[[], Any]] = {}

TARGETS: dict[str, Any] = {}

BUILTIN_BACKENDS: dict[str, str] = {}
BACKENDS: dict[str, tuple[Callable[[Any], str], str]] = {}
