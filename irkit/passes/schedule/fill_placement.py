"""Fills run on the cores that use what they fill, block by block.

An accumulation (`C[i, j] += ...`) lowers to a fill nest (`C = 0`) and the
update nest.  When the update's outermost loop is `parallel`, a serial fill
leaves every filled line in the cache of the one core that ran it, and the
other cores then fetch their part of the output from that core's cache
before they can add to it.  Measured on the Xeon model 167 guest (2 cores,
2 MiB L2 each): `examples/gemm.design`'s schedule at M = 64, N = 1024,
K = 64 takes 77-86 us with the serial fill, 47 us with the fill moved into
the parallel loop -- the difference is the cross-core fetch.

So after the schedule is applied, a top-level fill nest followed by a
parallel nest of the same buffer is fused into that nest: the fill's loop
over the dimension the parallel loop walks (`jo`, step 512) is split by the
parallel loop's step, and the block loop's body -- the fill of one block,
`C[0:M, jo:min(jo + 512, N)] = 0` -- moves to the start of the parallel
loop's body.  Iteration `jo` then fills its block and updates it, on one
core, with no second parallel region.  (One kernel measured slower: rowsum
at 256 x 512, a fill of 1 KiB, 4.1-4.3 us a call through `irkit run`
against 3.5-3.6 us with the serial fill, though a C harness times the two
builds alike; see BENCHMARKS.md, 2026-12-03 late.)

This is legal because every access of the buffer inside an iteration of the
parallel loop is proved to lie in that iteration's block (`_walked_dim`,
over the loops in between, as `compute_at` proves footprints): no iteration
reads a block another one fills, and the blocks together are the whole
range the fill covered.  Nothing changes when that is not proved, when the
parallel loop does not start at 0 or ends elsewhere than the fill's loop,
or when something else uses the buffer in between.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from irkit.affine.bounds import access_forms
from irkit.affine.linear import Lin, NotAffine
from irkit.affine.prove import Prover, Ranges
from irkit.dialects import loop as lp
from irkit.passes.schedule.compute_at import loops_between
from irkit.passes.schedule.helpers import (
    chain_below,
    loop_names,
    name,
    permute,
    split_loop,
    stage_nests,
    stage_of,
)


def distribute_fills(kernel: func.FuncOp) -> list[str]:
    """Fuse every top-level fill nest followed by a parallel nest of its buffer into that nest,
    block by block (see the module docstring); the names of the fills' block loops."""
    done: list[str] = []
    ops = list(kernel.body.block.ops)
    for at, fill in enumerate(ops):
        filled = _fill_target(fill)
        if filled is None:
            continue
        buf, loops = filled
        user = next((op for op in ops[at + 1 :] if _touches(op, buf)), None)
        if not isinstance(user, lp.ForOp) or user.parallel is None or stage_of(user) != stage_of(fill):
            continue
        dim = _walked_dim(kernel, user, buf)
        if dim is None or not _same_range(loops[dim], user):
            continue
        new = _split_for(kernel, loops, dim, user)
        if new is not None:
            done.append(new)
    return done


def _fill_target(op: Operation) -> tuple[SSAValue, list[lp.ForOp]] | None:
    """(buffer, loops by dimension) when `op` is a serial perfect nest storing one constant into
    every element of a buffer: loop d from 0 to the buffer's extent d, step 1, index (d0, d1, ...)."""
    if not isinstance(op, lp.ForOp):
        return None
    chain = chain_below(op)
    body = list(chain[-1].body.block.ops)
    if len(body) != 2 or not isinstance(body[0], arith.ConstantOp) or not isinstance(body[1], lp.StoreOp):
        return None
    store = body[1]
    if store.value is not body[0].result:
        return None
    ivs = [loop.induction_var for loop in chain]
    if list(store.indices) != ivs or store.map.data != AffineMap.identity(len(ivs)):
        return None
    for loop in chain:
        if loop.parallel is not None or loop.vector is not None or loop.step_value != 1:
            return None
        if not _starts_at_zero(loop):
            return None
    return store.memref, chain


def _starts_at_zero(loop: lp.ForOp) -> bool:
    lower = loop.lower.data
    return not loop.lower_operands and len(lower.results) == 1 and str(lower.results[0]) == "0"


def _touches(op: Operation, buf: SSAValue) -> bool:
    """Does `op` (or anything inside it) read, write or free `buf`?"""
    return any(buf in inner.operands for inner in op.walk())


def _walked_dim(kernel: func.FuncOp, loop: lp.ForOp, buf: SSAValue) -> int | None:
    """The dimension of `buf` in which every access inside `loop` stays within the block of
    `loop`'s iteration, `[v, v + step)` for its variable v (proved over the loops in between,
    `irkit.affine.prove`); None if no dimension is provably so."""
    iv, step = loop.induction_var, loop.step_value
    prover = Prover(kernel)
    start, end = Lin.of(iv), Lin.of(iv) + (step - 1)
    candidates: set[int] | None = None
    for op in loop.walk():
        if not isinstance(op, lp.LoadOp | lp.StoreOp) or op.memref is not buf:
            continue
        ranges = Ranges(loops_between(op, loop))
        inside: set[int] = set()
        try:
            for d, form in enumerate(access_forms(op)):
                lows, highs = ranges.lo(form), ranges.hi(form)
                if any(prover.le(start, lo) for lo in lows) and any(prover.le(hi, end) for hi in highs):
                    inside.add(d)
        except NotAffine:
            return None
        candidates = inside if candidates is None else candidates & inside
        if not candidates:
            return None
    return min(candidates) if candidates else None


def _same_range(fill_loop: lp.ForOp, user: lp.ForOp) -> bool:
    """Does the user, which starts at 0 as the fill's loops do, end at the fill loop's bound (same
    map, same values) in larger steps?"""
    if not _starts_at_zero(user) or user.step_value <= fill_loop.step_value:
        return False
    if user.upper.data != fill_loop.upper.data:
        return False
    return list(user.upper_operands) == list(fill_loop.upper_operands)


def _split_for(kernel: func.FuncOp, loops: list[lp.ForOp], dim: int, user: lp.ForOp) -> str | None:
    """Split the fill's loop over `dim` by the user's step, move the block loop outermost and fuse
    it into the user; the name of the loop over one block (None if no fresh name was found)."""
    stage = stage_of(loops[0]) or ""
    used = {n for root in stage_nests(kernel, stage) for n in loop_names(root)} if stage else set()
    base = name(loops[dim])
    inner_name = next((f"{base}{s}" for s in ("i", "_i", "_in") if f"{base}{s}" not in used), None)
    if inner_name is None:
        return None
    # the block loop is fused away at once, so its name is never seen
    outer, inner = split_loop(loops[dim], user.step_value, f"{base}_blocks", inner_name, _block_origin(user))
    chain = [*loops[:dim], outer, inner, *loops[dim + 1 :]]
    permute(chain, [outer, *loops[:dim], inner, *loops[dim + 1 :]])
    _fuse_into(outer, user)
    return inner_name


def _block_origin(user: lp.ForOp) -> str:
    """Where the fill's block loop comes from, for diagnostics: the directive that made the
    user's own loop over a block (`ii` from `io`: the split), else the parallel loop's."""
    iv = user.induction_var
    for op in user.walk():
        if op is not user and isinstance(op, lp.ForOp) and iv in op.lower_operands and op.origin is not None:
            return op.origin.data
    return user.origin.data if user.origin is not None else ""


def _fuse_into(blocks: lp.ForOp, user: lp.ForOp) -> None:
    """Move the body of `blocks` (the fill's block loop, bounds and step the user's) to the start
    of `user`'s body, its variable replaced by the user's, and remove it: iteration p then fills
    block p and updates it.  Legal since every iteration of `user` touches only its own block
    (`_walked_dim`), so no iteration reads a block another fills, and the blocks cover the range."""
    first = user.body.block.first_op  # the user holds the buffer's accesses: never empty
    assert first is not None
    for op in list(blocks.body.block.ops):
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(first))
    blocks.induction_var.replace_all_uses_with(user.induction_var)
    blocks.detach()
    blocks.erase()
