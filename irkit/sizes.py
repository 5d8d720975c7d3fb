"""Size values (`--size N=64`, `sizes=` of a call) checked against what the document declares.

One set of rules for every tool that takes sizes (`irkit run`, `irkit
predict`, the Python API), so that the same value is refused the same way
everywhere and before anything is built: every size the document declares
has a value (given, or its default), no other size is given, each value is a
positive integer small enough for the kernel's 64-bit index arithmetic, the
document's divisibility assumptions hold, and every tensor gets at least one
element along each dimension (`f32[N - 2]` at `N = 2` has none: the kernel
would have nothing to compute and the oracle nothing to compare).

A problem raises `SizeError`, a `DiagnosticError` whose diagnostics are
located at the document's `design` line; command-line tools report it as a
usage error (exit 2), since the value came from the command line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from irkit.diagnostics import Diagnostic, DiagnosticError

# Sizes and extents multiply into offsets of 64-bit signed C arithmetic.
MAX_SIZE = 2**62


class SizeError(DiagnosticError):
    """Size values that do not fit the document."""


@dataclass(frozen=True)
class TensorShape:
    """A tensor's name and how its shape follows from the sizes."""

    name: str
    shape: Callable[[Mapping[str, int]], tuple[int, ...]]


def size_problems(
    declared: list[tuple[str, int | None]],
    given: Mapping[str, object],
    divisors: Mapping[str, int] | None = None,
    tensors: list[TensorShape] | None = None,
) -> tuple[dict[str, int], list[str]]:
    """(every size's value, what is wrong): `given` over the defaults of `declared`."""
    names = [name for name, _ in declared]
    problems = [
        f"unknown size '{name}' (the document's sizes: {', '.join(names) or 'none'})" for name in given if name not in names
    ]
    out: dict[str, int] = {}
    for name, default in declared:
        value = given.get(name, default)
        if value is None:
            problems.append(f"size '{name}' is not given and has no default")
            continue
        if isinstance(value, bool) or not isinstance(value, int) and not _is_numpy_int(value):
            problems.append(f"size '{name}' must be an integer, got {value!r}")
            continue
        value = int(value)  # type: ignore[arg-type]
        if value <= 0:
            problems.append(f"size '{name}' must be positive, got {value}")
        elif value >= MAX_SIZE:
            problems.append(f"size '{name}' = {value} is too large (sizes are below 2**62)")
        else:
            out[name] = value
    for name, divisor in (divisors or {}).items():
        if name in out and divisor > 0 and out[name] % divisor:
            problems.append(
                f"size '{name}' = {out[name]} breaks the document's assumption {name} % {divisor} == 0 "
                "(the kernel may rely on it)"
            )
    if problems or len(out) != len(declared):
        return out, problems
    at = ", ".join(f"{k}={v}" for k, v in out.items())
    for tensor in tensors or []:
        shape = tensor.shape(out)
        empty = [pos for pos, extent in enumerate(shape) if extent <= 0]
        if empty:
            problems.append(
                f"at {at}, tensor '{tensor.name}' would have shape {list(shape)}: dimension {empty[0] + 1} has "
                "no element; every extent must be at least 1"
            )
            continue
        elements = 1
        for extent in shape:
            elements *= extent
        if elements >= MAX_SIZE:
            problems.append(f"at {at}, tensor '{tensor.name}' would have {elements} elements, more than 2**62")
    return out, problems


def _is_numpy_int(value: object) -> bool:
    import numpy as np

    return isinstance(value, np.integer)


def raise_if(
    problems: list[str], kernel: str, file: str, line: int = 0, col: int = 0, error: type[SizeError] = SizeError
) -> None:
    """`error` (a `SizeError`) with one diagnostic a problem, at the document's `design` line."""
    if problems:
        raise error([Diagnostic("error", f"kernel '{kernel}': {p}", file, line, col) for p in problems])


def document_sizes(module, given: Mapping[str, object] | None = None) -> dict[str, int]:
    """Every size of the (checked) design document in `module`: `given` over its defaults;
    `SizeError` if they do not fit it.  For tools that take sizes before anything is lowered."""
    from xdsl.dialects.builtin import FileLineColLoc

    from irkit.affine_text import evaluate, parse_affine
    from irkit.dialects import design as d

    design = next(op for op in module.body.block.ops if isinstance(op, d.DesignOp))
    ops = list(design.body.block.ops)
    declared = [(op.sym_name.data, None if op.default is None else op.default.value.data) for op in ops if isinstance(op, d.SizeOp)]
    divisors = {op.size.data: op.divisor.value.data for op in ops if isinstance(op, d.AssumeDivisibleOp)}

    def shape_of(tensor: d.TensorOp) -> Callable[[Mapping[str, int]], tuple[int, ...]]:
        dims = [parse_affine(text) for text in tensor.shape_exprs]
        return lambda sizes: tuple(int(evaluate(dim, sizes)) for dim in dims)

    tensors = [TensorShape(op.sym_name.data, shape_of(op)) for op in ops if isinstance(op, d.TensorOp)]
    out, problems = size_problems(declared, dict(given or {}), divisors, tensors)
    loc = design.location
    where = (loc.filename.data, loc.line.data, loc.column.data) if isinstance(loc, FileLineColLoc) else ("<document>", 0, 0)
    raise_if(problems, design.sym_name.data, *where)
    return out
