"""Linear forms of the loop dialect's bounds and accesses (`irkit.affine.linear` over SSA values)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    i32,
)

from irkit.affine.linear import Lin, build_map, lin_of
from irkit.dialects import loop as lp


def lower_terms(loop: lp.ForOp) -> list[Lin]:
    return [lin_of(r, list(loop.lower_operands)) for r in loop.lower.data.results]


def upper_terms(loop: lp.ForOp) -> list[Lin]:
    """Exclusive upper bounds: the loop runs while its variable is below every one."""
    return [lin_of(r, list(loop.upper_operands)) for r in loop.upper.data.results]


def set_bounds(loop: lp.ForOp, lower: Sequence[Lin], upper: Sequence[Lin]) -> None:
    lmap, lops = build_map(lower)
    umap, uops = build_map(upper)
    loop.operands = [*lops, *uops]
    loop.properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, [len(lops), len(uops)])
    loop.properties["lower"] = AffineMapAttr(lmap)
    loop.properties["upper"] = AffineMapAttr(umap)


def access_forms(op: lp.LoadOp | lp.StoreOp) -> list[Lin]:
    return [lin_of(r, list(op.indices)) for r in op.map.data.results]


def _dedupe(forms: Iterable[Lin], low: bool) -> list[Lin]:
    """Drop repeated terms, and terms a constant away from a tighter one (max-form if `low`)."""
    out: list[Lin] = []
    for f in forms:
        if f in out:
            continue
        beaten = False
        for i, g in enumerate(out):
            diff = f - g
            if not diff.is_const:
                continue
            if (diff.const > 0) == low:  # f is tighter: replace g
                out[i] = f
            beaten = True
            break
        if not beaten:
            out.append(f)
    return _unique(out)


def _unique(forms: Iterable[Lin]) -> list[Lin]:
    out: list[Lin] = []
    for f in forms:
        if f not in out:
            out.append(f)
    return out
