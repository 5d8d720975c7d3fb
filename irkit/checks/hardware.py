"""Checking hardware descriptions: every required field present, each with a unit of the right kind,
text fields (`cpu "..."`) where text belongs, and -- once all that holds -- figures a real machine
can have (`irkit.checks.hardware_bounds`)."""

from __future__ import annotations

import math
from pathlib import Path

from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation

from irkit.checks.schedule import suggest
from irkit.diagnostics import Diagnostic, at_op
from irkit.dialects import design as d
from irkit.frontend.build import build_design, verify_errors
from irkit.hardware_files import find_hardware, search_dirs
from irkit.units import (
    CACHE_FIELDS,
    CONFLICT_SHARE_KEYS,
    DRAM_FIELDS,
    FAMILY_EXAMPLES,
    TEXT_FIELDS,
    TOP_FIELDS,
    UNIT_SCALE,
    to_base,
    unit_family,
)

WHOLE_COUNTS = ("cores", "fma_units", "threads_per_core", "shared", "ways")
# Fitted figures whose 0 means something: no transfer hidden (ECM), no look-ahead.
MAY_BE_ZERO = ("overlap", "ooo_window", "split_load", "split_load_256", "split_load_128", *CONFLICT_SHARE_KEYS)


def _fields(owner: Operation, what: str, ops: list[Operation], table: dict[str, tuple[str, bool]]) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    seen: dict[str, Operation] = {}
    texts = TEXT_FIELDS if table is TOP_FIELDS else {}
    for op in ops:
        if isinstance(op, d.HwTextOp):
            diags += _text_field(op, what, texts, table, seen)
            continue
        if not isinstance(op, d.HwFieldOp):
            continue
        key = op.key.data
        if key in texts:
            diags.append(at_op("error", f"'{key}' in {what} is text ({texts[key]}): write {key} \"...\"", op, key))
            continue
        if key not in table:
            diags.append(
                at_op(
                    "error",
                    f"unknown field '{key}' in {what}; fields are: {', '.join(table)}" + suggest(key, list(table)),
                    op,
                    key,
                )
            )
            continue
        if key in seen:
            diags.append(at_op("error", f"field '{key}' is given twice in {what}", op, key))
            continue
        seen[key] = op
        family, _ = table[key]
        unit = None if op.unit is None else op.unit.data
        if unit is not None and unit not in UNIT_SCALE:
            diags.append(at_op("error", f"unknown unit '{unit}'", op, unit))
            continue
        if unit_family(unit) != family:
            written = f"'{unit}'" if unit else "no unit"
            diags.append(
                at_op(
                    "error",
                    f"'{key}' in {what} is a {family if family != 'count' else 'plain number'}, so its unit must be "
                    f"{FAMILY_EXAMPLES[family]}; got {written}",
                    op,
                    unit or key,
                )
            )
            continue
        value = op.value.value.data
        if not math.isfinite(value):
            diags.append(at_op("error", f"'{key}' must be a finite number, got {value:g}", op, key))
        elif value < 0 or (value == 0 and key not in MAY_BE_ZERO):
            diags.append(at_op("error", f"'{key}' must be positive, got {value:g}", op, key))
        elif (family in ("bits", "bytes") or key in WHOLE_COUNTS) and not to_base(value, unit).is_integer():
            what = family if family != "count" else "units"
            diags.append(at_op("error", f"'{key}' must be a whole number of {what}, got {value:g}", op, key))
    for key, (family, required) in table.items():
        if required and key not in seen:
            example = (
                f"{key} <value> {FAMILY_EXAMPLES[family].split(',')[0]}" if family != "count" else f"{key} <number>"
            )
            diags.append(at_op("error", f"{what} is missing '{key}' (write: {example})", owner))
    return diags


def _text_field(
    op: d.HwTextOp, what: str, texts: dict[str, str], table: dict[str, tuple[str, bool]], seen: dict[str, Operation]
) -> list[Diagnostic]:
    key = op.key.data
    if key in table:
        family = table[key][0]
        unit = FAMILY_EXAMPLES[family].split(",")[0]
        example = f"{key} <value> {unit}" if family != "count" else f"{key} <number>"
        return [at_op("error", f"'{key}' in {what} is a number, not text: write {example}", op, key)]
    if key not in texts:
        known = list(texts)
        message = f"unknown text field '{key}' in {what}; text fields are: {', '.join(known)}" + suggest(key, known)
        return [at_op("error", message, op, key)]
    if key in seen:
        return [at_op("error", f"field '{key}' is given twice in {what}", op, key)]
    seen[key] = op
    return []


def check_hardware_block(hw: d.HardwareOp) -> list[Diagnostic]:
    """Fields, units and memory levels of an inline hardware block."""
    ops = list(hw.body.block.ops)
    diags = _fields(hw, "the hardware block", ops, TOP_FIELDS)
    levels = [op for op in ops if isinstance(op, d.HwLevelOp)]
    caches = [lv for lv in levels if not lv.is_dram]
    drams = [lv for lv in levels if lv.is_dram]
    names: set[str] = set()
    for level in caches:
        name = level.level.data
        if name in names:
            diags.append(at_op("error", f"cache level '{name}' is described twice", level, name))
        names.add(name)
        diags += _fields(level, f"cache {name}", list(level.body.block.ops), CACHE_FIELDS)
    for level in drams:
        diags += _fields(level, "dram", list(level.body.block.ops), DRAM_FIELDS)
    if not caches:
        diags.append(
            at_op(
                "error",
                "the hardware block describes no cache level (cache L1 { size ...; line ...; bandwidth ... })",
                hw,
            )
        )
    if not drams:
        diags.append(at_op("error", "the hardware block has no dram { bandwidth ... } level", hw))
    if len(drams) > 1:
        diags.append(at_op("error", "the hardware block describes dram twice", drams[1]))
    if not diags:  # figures compared with each other only once each is well-formed
        from irkit.checks.hardware_bounds import check_plausible

        diags += check_plausible(hw)
    return diags


def check_hardware_ref(op: d.HardwareRefOp) -> list[Diagnostic]:
    """A named description must exist and be a valid hardware file."""
    document = op.location.filename.data if isinstance(op.location, FileLineColLoc) else None
    name = op.ref.data
    path = find_hardware(name, document)
    if path is None:
        looked = ", ".join(str(p) for p in search_dirs(document))
        diag = at_op("error", f"hardware description '{name}' not found: no {name}.hw in {looked}", op, name)
        diag.with_note(f"write one with `irkit calibrate -o {name}.hw`, or use an inline hardware {{ ... }} block")
        return [diag]
    module, errors = _read_hardware_file(path)
    if errors:
        diag = at_op("error", f"hardware description '{name}' ({path}) has errors", op, name)
        return [diag, *errors]
    assert module is not None
    if not any(isinstance(o, d.HardwareOp) for o in module.body.block.ops):
        return [at_op("error", f"{path} is not a hardware description (expected hardware {name} {{ ... }})", op, name)]
    return []


def _read_hardware_file(path: Path) -> tuple[ModuleOp | None, list[Diagnostic]]:
    """A `.hw` file's IR and its errors: syntax, building, each hardware block's checks and
    the op verifiers (what `parse_design` would report, without the frontend's package)."""
    module, diags = build_design(Path(path).read_text(), str(path))
    if module is not None:
        for block in module.body.block.ops:
            if isinstance(block, d.HardwareOp):
                diags += check_hardware_block(block)
    errors = [diag for diag in diags if diag.severity == "error"]
    if module is not None and not errors:
        errors = verify_errors(module, str(path))
    return module, sorted(errors, key=lambda diag: (diag.line, diag.col))
