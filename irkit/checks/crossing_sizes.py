"""Sizes that send a kernel through every tile, register block and tail its schedule makes.

`--check-semantics` runs a pipeline's states at small sizes (5, 7, 6, ...) so
that even the loop interpreter is fast; but a tile of 96 rows is then never
full, a register block of 6 rows under a tile of 96 never runs next to its
tail, and a corruption of the full-tile path goes unseen.  When the states
run as compiled C, the check can afford larger sizes: for each size, the
loops whose upper bound is that size (`io` to M by 96, a register block `ii`
by 6 up to `M - 5`) give their steps, and the size becomes the largest step
plus the smallest one plus one (M = 96 + 6 + 1 = 103: a full tile, one more
block and a row of tail), or the step and a half when it has one step only
(K = 256 + 129), moved up until no step divides it.  Sizes assumed divisible stay multiples of their divisor.

The steps are read from the loop IR the document lowers to (a design or
tensorop state is lowered on a copy); a state that cannot be lowered gives
no sizes here, and the small ones are used.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from irkit.affine.bounds import upper_terms
from irkit.dialects import loop as lp
from irkit.kernel_abi import kernel_args


def crossing_sizes(module: ModuleOp, divisors: dict[str, int]) -> dict[str, int]:
    """Size name -> a value crossing every tile edge, block and tail the schedule makes, for the
    sizes some stepped loop runs up to; {} when the module cannot be lowered to loops."""
    loops = _loop_module(module)
    if loops is None:
        return {}
    steps: dict[str, set[int]] = {}
    for kernel in (op for op in loops.body.block.ops if isinstance(op, func.FuncOp)):
        names = {s.value: s.name for s in kernel_args(kernel)[0]}
        for loop in kernel.walk():
            if not isinstance(loop, lp.ForOp) or loop.step_value <= 1:
                continue
            for term in upper_terms(loop):
                if len(term.terms) != 1:
                    continue
                ((atom, k),) = term.terms.items()
                if k == 1 and atom in names:  # the loop runs up to a size
                    steps.setdefault(names[atom], set()).add(loop.step_value)
    out: dict[str, int] = {}
    for name, found in steps.items():
        big, small = max(found), min(found)
        d = max(1, divisors.get(name, 1))
        value = big + (small + 1 if small < big else big // 2 + 1)
        value = -(-value // d) * d
        # no step may divide it (a tail for each), unless the document's divisor makes one
        while any(value % step == 0 for step in found) and value < 4 * big + d and d == 1:
            value += 1
        out[name] = value
    return out


def _loop_module(module: ModuleOp) -> ModuleOp | None:
    """`module` lowered to loop IR on a copy (as it is when it holds loops already), or None."""
    from irkit.context import make_context
    from irkit.passes.pipeline import lowering_pipeline

    if any(isinstance(op, lp.ForOp) for op in module.walk()):
        return module
    copy = module.clone()
    passes = lowering_pipeline()  # from design IR; tensorop IR starts after lower-design
    if not any(op.name.startswith("design.") for op in copy.walk()):
        passes = passes[1:]
    try:
        for p in passes:
            p.apply(make_context(), copy)
    except Exception:  # a state the lowering refuses: the small sizes will do
        return None
    return copy
