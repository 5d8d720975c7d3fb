"""The oracle's engine: index expressions, scalar bodies, and loop nests run with numpy."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue

from irkit.affine_text import BinOp, Const, Expr, Var, evaluate, format_affine, names_in
from irkit.oracle.common import CHUNK_ELEMENTS, ReferenceEvalError, numpy_dtype

# --- index expressions ----------------------------------------------------------------------


def _linear(expr: Expr) -> tuple[dict[str, int], int] | None:
    """`expr` as (coefficients, constant) if it is linear in its names, else None."""
    if isinstance(expr, Var):
        return {expr.name: 1}, 0
    if isinstance(expr, Const):
        return {}, expr.value
    a, b = _linear(expr.lhs), _linear(expr.rhs)
    if a is None or b is None:
        return None
    (ca, ka), (cb, kb) = a, b
    if expr.op in ("+", "-"):
        sign = 1 if expr.op == "+" else -1
        coeffs = dict(ca)
        for name, c in cb.items():
            coeffs[name] = coeffs.get(name, 0) + sign * c
        return {n: c for n, c in coeffs.items() if c}, ka + sign * kb
    if expr.op == "*":
        if not ca:
            return {n: ka * c for n, c in cb.items() if ka * c}, ka * kb
        if not cb:
            return {n: kb * c for n, c in ca.items() if kb * c}, ka * kb
        return None
    if not ca and not cb and kb != 0:  # constant / or %
        return {}, (ka // kb if expr.op == "/" else ka % kb)
    return None


# --- scalar bodies -----------------------------------------------------------------------------


def _np_dtype(t: Attribute) -> np.dtype:
    dt = numpy_dtype(t)
    if dt is None:
        raise ReferenceEvalError(f"no numpy type for {t}")
    return dt


def _divsi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division: the quotient truncated toward zero (`arith.divsi`)."""
    a, b = np.asarray(a), np.asarray(b)
    if np.any(b == 0):
        raise ReferenceEvalError("integer division by zero (arith.divsi): C would trap here")
    q = np.floor_divide(a, b)
    q = q + ((q * b != a) & ((a < 0) != (b < 0))).astype(q.dtype)
    return q


def _remsi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(np.asarray(b) == 0):
        raise ReferenceEvalError("integer remainder by zero (arith.remsi): C would trap here")
    return np.fmod(a, b)  # sign of the dividend, like C's %


_CMPI = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal}


def _cmpf(pred: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    unordered = np.isnan(a) | np.isnan(b)
    base = {1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less, 5: np.less_equal, 6: np.not_equal}
    if pred == 0:
        return np.zeros(np.broadcast(a, b).shape, bool)
    if pred == 15:
        return np.ones(np.broadcast(a, b).shape, bool)
    if pred == 7:
        return ~unordered
    if pred == 14:
        return unordered
    if pred in base:  # ordered: false if either is NaN
        return base[pred](a, b) & ~unordered
    return base[pred - 7](a, b) | unordered  # 8..13: unordered or ...


_UNARY: dict[str, Callable] = {
    "arith.negf": np.negative,
    "math.exp": np.exp,
    "math.exp2": np.exp2,
    "math.log": np.log,
    "math.log2": np.log2,
    "math.sqrt": np.sqrt,
    "math.rsqrt": lambda x: np.reciprocal(np.sqrt(x)),
    "math.absf": np.abs,
    "math.absi": np.abs,
    "math.tanh": np.tanh,
    "math.sin": np.sin,
    "math.cos": np.cos,
    "math.floor": np.floor,
    "math.ceil": np.ceil,
}
_BINARY: dict[str, Callable] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.remf": np.fmod,
    "arith.maximumf": np.maximum,  # NaN-propagating, like arith.maximumf
    "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax,  # NaN-ignoring
    "arith.minnumf": np.fmin,
    "math.powf": np.power,
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.divsi": _divsi,
    "arith.remsi": _remsi,
    "arith.floordivsi": lambda a, b: np.floor_divide(a, b) if not np.any(np.asarray(b) == 0) else _divsi(a, b),
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
}
_CASTS = ("arith.sitofp", "arith.fptosi", "arith.extf", "arith.truncf", "arith.extsi", "arith.trunci",
          "arith.index_cast")  # fmt: skip


def _constant(op: Operation) -> np.ndarray:
    attr = op.value  # type: ignore[attr-defined]
    dt = _np_dtype(op.results[0].type)
    if isinstance(attr, (FloatAttr, IntegerAttr)):
        return np.asarray(attr.value.data, dtype=dt)
    raise ReferenceEvalError(f"unsupported constant {attr}")


def _apply(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    name = op.name
    if name == "arith.constant":
        return _constant(op)
    dt = _np_dtype(op.results[0].type)
    if name in _UNARY:
        out = _UNARY[name](args[0])
    elif name in _BINARY:
        out = _BINARY[name](args[0], args[1])
    elif name == "math.fma":
        out = args[0] * args[1] + args[2]
    elif name == "arith.select":
        out = np.where(args[0], args[1], args[2])
    elif name == "arith.cmpi":
        out = _CMPI[op.predicate.value.data](args[0], args[1])  # type: ignore[attr-defined]
    elif name == "arith.cmpf":
        out = _cmpf(op.predicate.value.data, args[0], args[1])  # type: ignore[attr-defined]
    elif name in _CASTS:
        out = np.trunc(args[0]) if name == "arith.fptosi" else args[0]
    else:
        raise ReferenceEvalError(f"the reference has no semantics for '{name}' in a body")
    return np.asarray(out).astype(dt, copy=False)


@dataclass
class _Body:
    """A scalar program: `ops` in order compute `result` from the `leaves` (value -> read position)."""

    ops: list[Operation]
    leaves: dict[SSAValue, int]
    result: SSAValue
    out_leaf: SSAValue | None = None  # stands for the current output element (tensorop bodies)
    outer: Mapping[SSAValue, np.ndarray] = field(default_factory=dict)  # values from above: scalars, sizes

    def run(self, reads: Callable[[int], np.ndarray], out_value: Callable[[], np.ndarray] | None = None) -> np.ndarray:
        env: dict[SSAValue, np.ndarray] = {}

        def value(v: SSAValue) -> np.ndarray:
            if v in env:
                return env[v]
            if v in self.leaves:
                env[v] = reads(self.leaves[v])
            elif v is self.out_leaf and out_value is not None:
                env[v] = out_value()
            elif v in self.outer:
                env[v] = self.outer[v]
            else:
                raise ReferenceEvalError(f"a body uses {v}, which it does not define")
            return env[v]

        for op in self.ops:
            args = [value(o) for o in op.operands]
            env[op.results[0]] = _apply(op, args)
        return value(self.result)

    def depends_on(self, value: SSAValue, leaf: SSAValue) -> bool:
        if value is leaf:
            return True
        owner = value.owner
        if isinstance(owner, Operation) and owner in self.ops:
            return any(self.depends_on(o, leaf) for o in owner.operands)
        return False


# --- the engine: loop nests ------------------------------------------------------------------


@dataclass
class _Access:
    name: str  # the tensor, for messages
    array: np.ndarray
    indices: list[Expr]


@dataclass
class _Nest:
    """Domain + accesses + scalar body: one index statement or one tensorop.generic."""

    stage: str
    loops: list[str]
    extents: list[int]
    parallel: list[bool]
    reads: list[_Access]
    out: np.ndarray
    out_loops: list[str]  # the loop indexing each output dimension
    body: _Body
    combine: str  # assign | add | max | min | mul | fold
    loop_labels: list[str] = field(default_factory=list)  # names for messages
    where: list[tuple[Expr, bool]] = field(default_factory=list)  # the domain: each `e >= 0` (`e == 0` if True)
    order: list[str] | None = None  # a recurrence: its loops in the order they run, point by point

    def label(self, expr: Expr) -> str:
        if not self.loop_labels:
            return format_affine(expr)
        rename = dict(zip(self.loops, self.loop_labels))
        return format_affine(_rename(expr, rename))


def _rename(expr: Expr, names: Mapping[str, str]) -> Expr:
    if isinstance(expr, Var):
        return Var(names.get(expr.name, expr.name))
    if isinstance(expr, Const):
        return expr
    return BinOp(expr.op, _rename(expr.lhs, names), _rename(expr.rhs, names))


_REDUCE = {"add": np.sum, "max": np.max, "min": np.min, "mul": np.prod}
_COMBINE = {"add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply}


def _acc_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dt.kind == "f" else np.dtype(np.int64)


def _chunk_sizes(extents: list[int], budget: int) -> list[int]:
    """Per-loop block sizes, innermost loops whole first, so that a block has at most `budget` points."""
    sizes = [1] * len(extents)
    points = 1
    for i in reversed(range(len(extents))):
        sizes[i] = max(1, min(extents[i], budget // points))
        points *= sizes[i]
    return sizes


def _blocks(extent: int, size: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + size, extent)) for lo in range(0, extent, size)]


def _gather(nest: _Nest, access: _Access, ranges: list[tuple[int, int]], inside: np.ndarray | None = None) -> np.ndarray:
    """The accessed elements over the block `ranges`, as an array broadcastable to the block (one axis per loop);
    `inside` is the block's domain mask when the statement has a `where` (`_mask`)."""
    loops = nest.loops
    arr = access.array
    if inside is not None:
        return _gather_in_domain(nest, access, ranges, inside)
    lin = [_linear(e) for e in access.indices]
    # Fast path: every index is `a * v + b` (a > 0) or a constant, each loop at most once: a strided view.
    if all(x is not None and len(x[0]) <= 1 and all(c > 0 for c in x[0].values()) for x in lin):
        used = [next(iter(x[0])) for x in lin if x[0]]  # type: ignore[index]
        if len(used) == len(set(used)):
            index: list[slice | int] = []
            dim_loops: list[int] = []
            for dim, (coeffs, const) in enumerate(lin):  # type: ignore[misc]
                if not coeffs:
                    _check_bounds(nest, access, dim, const, const)
                    index.append(const)
                    continue
                ((var, a),) = coeffs.items()
                pos = loops.index(var)
                lo, hi = ranges[pos]
                first, last = a * lo + const, a * (hi - 1) + const
                _check_bounds(nest, access, dim, first, last)
                index.append(slice(first, last + 1, a))
                dim_loops.append(pos)
            view = arr[tuple(index)]
            order = sorted(range(len(dim_loops)), key=lambda k: dim_loops[k])
            view = view.transpose(order)
            present = set(dim_loops)
            return view[tuple(slice(None) if p in present else None for p in range(len(loops)))]
    grid = _grid(loops, ranges)
    idx = []
    for dim, expr in enumerate(access.indices):
        value = evaluate(expr, grid)
        if isinstance(value, np.ndarray):
            _check_bounds(nest, access, dim, int(value.min()), int(value.max()))
        else:
            _check_bounds(nest, access, dim, value, value)
        idx.append(value)
    out = np.asarray(arr[tuple(idx)])
    return out.reshape((1,) * len(loops)) if out.ndim == 0 else out


def _gather_in_domain(nest: _Nest, access: _Access, ranges: list[tuple[int, int]], inside: np.ndarray) -> np.ndarray:
    """`_gather` for a statement with a `where`: an index need stay in bounds only at the points of
    the domain (a stencil's interior reads `A[i - 1, j]` where i >= 1); elsewhere it is clamped, and
    the value read there is masked out by the caller."""
    grid = _grid(nest.loops, ranges)
    idx = []
    for dim, expr in enumerate(access.indices):
        value = np.broadcast_to(np.asarray(evaluate(expr, grid), dtype=np.int64), inside.shape)
        if inside.any():
            used = value[inside]
            _check_bounds(nest, access, dim, int(used.min()), int(used.max()))
        idx.append(np.clip(value, 0, access.array.shape[dim] - 1))
    return np.asarray(access.array[tuple(idx)])


def _grid(loops: list[str], ranges: list[tuple[int, int]]) -> dict[str, np.ndarray]:
    """Each loop's values over the block, as an open grid (one axis per loop)."""
    grid = {}
    for pos, name in enumerate(loops):
        shape = [1] * len(loops)
        lo, hi = ranges[pos]
        shape[pos] = hi - lo
        grid[name] = np.arange(lo, hi, dtype=np.int64).reshape(shape)
    return grid


def _mask(nest: _Nest, ranges: list[tuple[int, int]]) -> np.ndarray | None:
    """Where the block's points are in the statement's domain (None: all of them), one axis per loop."""
    if not nest.where:
        return None
    grid = _grid(nest.loops, ranges)
    mask = np.ones([hi - lo for lo, hi in ranges], dtype=bool)
    for expr, equal in nest.where:
        value = evaluate(expr, grid)
        mask &= (value == 0) if equal else (value >= 0)
    return mask


def _identity(combine: str, dt: np.dtype) -> object:
    if combine == "add":
        return 0
    if combine == "mul":
        return 1
    if dt.kind == "f":
        return -np.inf if combine == "max" else np.inf
    return np.iinfo(dt).min if combine == "max" else np.iinfo(dt).max


def _check_bounds(nest: _Nest, access: _Access, dim: int, lo: int, hi: int) -> None:
    size = access.array.shape[dim]
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise ReferenceEvalError(
            f"stage '{nest.stage}': {access.name}[{', '.join(nest.label(e) for e in access.indices)}] is out of "
            f"bounds: index {nest.label(access.indices[dim])} of dimension {dim + 1} reaches {bad}, "
            f"but the dimension has size {size}"
        )


def _out_perm(nest: _Nest) -> tuple[list[int], list[int]]:
    """(parallel loop positions in loop order, permutation from that order to the output's dimension order)."""
    par = [i for i, p in enumerate(nest.parallel) if p]
    par_names = [nest.loops[i] for i in par]
    return par, [par_names.index(name) for name in nest.out_loops]


def _check_out(nest: _Nest) -> None:
    par = [nest.loops[i] for i, p in enumerate(nest.parallel) if p]
    if sorted(nest.out_loops) != sorted(par) or len(set(nest.out_loops)) != len(nest.out_loops):
        raise ReferenceEvalError(
            f"stage '{nest.stage}': the output must be indexed by each parallel loop exactly once "
            f"(loops {', '.join(par)}; output indices {', '.join(nest.out_loops)})"
        )
    if nest.out.ndim != len(nest.out_loops):
        raise ReferenceEvalError(
            f"stage '{nest.stage}': {len(nest.out_loops)} indices for a rank-{nest.out.ndim} output"
        )
    for dim, name in enumerate(nest.out_loops):
        ext = nest.extents[nest.loops.index(name)]
        if ext > nest.out.shape[dim]:
            raise ReferenceEvalError(
                f"stage '{nest.stage}': loop {name} runs to {ext} but output dimension {dim + 1} has size {nest.out.shape[dim]}"
            )


def run_nest(nest: _Nest, budget: int | None = None) -> None:
    """Execute a loop nest, writing its output in place, in blocks of at most `budget` (default `CHUNK_ELEMENTS`) points."""
    budget = budget or CHUNK_ELEMENTS
    _check_out(nest)
    if nest.order is not None:
        _run_in_order(nest)
        return
    if any(e <= 0 for e, p in zip(nest.extents, nest.parallel) if p):
        return
    if any(e <= 0 for e in nest.extents):  # an empty reduction leaves the start value
        return
    if _try_einsum(nest):
        return
    par, perm = _out_perm(nest)
    red = [i for i, p in enumerate(nest.parallel) if not p]
    n = len(nest.loops)
    dt = nest.out.dtype
    inv = list(np.argsort(perm))  # output dims -> parallel loop order

    def out_slices(ranges: list[tuple[int, int]]) -> tuple[slice, ...]:
        return tuple(slice(*ranges[nest.loops.index(name)]) for name in nest.out_loops)

    def current(ranges: list[tuple[int, int]]) -> np.ndarray:
        """The output block with one axis per loop (size 1 on reduction loops), in loop order."""
        block = nest.out[out_slices(ranges)].transpose(inv)
        shape = [1] * n
        for k, pos in enumerate(par):
            shape[pos] = block.shape[k]
        return block.reshape(shape)

    def store(ranges: list[tuple[int, int]], value: np.ndarray) -> None:
        """Write a block given with one axis per loop (size 1 on reduction loops) into the output."""
        value = value.reshape([value.shape[i] for i in par])
        nest.out[out_slices(ranges)] = value.transpose(perm)

    def evaluate_block(ranges: list[tuple[int, int]], inside: np.ndarray | None, out_value=None) -> np.ndarray:
        cache: dict[int, np.ndarray] = {}

        def read(k: int) -> np.ndarray:
            if k not in cache:
                cache[k] = _gather(nest, nest.reads[k], ranges, inside)
            return cache[k]

        value = nest.body.run(read, out_value)
        value = np.asarray(value)
        if value.ndim < n:
            value = value.reshape((1,) * (n - value.ndim) + value.shape)
        return value

    if nest.combine == "fold":
        extents = [e if p else 1 for e, p in zip(nest.extents, nest.parallel)]
        sizes = _chunk_sizes(extents, budget)
        for pblock in itertools.product(*[_blocks(nest.extents[i], sizes[i]) for i in par]):
            ranges = [(0, 1)] * n
            for i, r in zip(par, pblock):
                ranges[i] = r
            cur = current(ranges)
            for point in itertools.product(*[range(nest.extents[i]) for i in red]):
                for i, v in zip(red, point):
                    ranges[i] = (v, v + 1)
                shape = tuple(hi - lo for lo, hi in ranges)
                inside = _mask(nest, ranges)
                new = np.broadcast_to(evaluate_block(ranges, inside, lambda c=cur: c), shape).astype(dt)
                cur = new if inside is None else np.where(inside, new, cur)
            store(ranges, cur)
        return

    sizes = _chunk_sizes(nest.extents, budget)
    acc_dt = _acc_dtype(dt)
    red_axes = tuple(red)
    for pblock in itertools.product(*[_blocks(nest.extents[i], sizes[i]) for i in par]):
        ranges = [(0, 1)] * n
        for i, r in zip(par, pblock):
            ranges[i] = r
        if nest.combine == "assign":
            inside = _mask(nest, ranges)
            value = evaluate_block(ranges, inside, lambda r=list(ranges): current(r))
            shape = tuple(hi - lo for lo, hi in ranges)
            if inside is not None:  # the points outside keep their value
                value = np.where(inside, value, current(ranges))
            store(ranges, np.broadcast_to(value, shape).astype(dt, copy=False))
            continue
        acc = None
        for rblock in itertools.product(*[_blocks(nest.extents[i], sizes[i]) for i in red]):
            for i, r in zip(red, rblock):
                ranges[i] = r
            shape = tuple(hi - lo for lo, hi in ranges)
            inside = _mask(nest, ranges)
            value = np.broadcast_to(evaluate_block(ranges, inside), shape)
            if inside is not None:  # the points outside add nothing
                value = np.where(inside, value, np.asarray(_identity(nest.combine, value.dtype), dtype=value.dtype))
            if nest.combine in ("add", "mul"):
                part = _REDUCE[nest.combine](value, axis=red_axes, dtype=acc_dt, keepdims=True)
            else:
                part = _REDUCE[nest.combine](value, axis=red_axes, keepdims=True)
            acc = part if acc is None else _COMBINE[nest.combine](acc, part)
        assert acc is not None
        cur = current(ranges)
        if nest.combine in ("add", "mul"):
            new = _COMBINE[nest.combine](cur.astype(acc_dt), acc)
        else:
            new = _COMBINE[nest.combine](cur, acc)
        store(ranges, new.astype(dt))


ORDERED_MAX_POINTS = 400_000  # a recurrence runs point by point in Python: ~50 us a point (seidel's 9 reads)


def _run_in_order(nest: _Nest) -> None:
    """A recurrence: every point in the order of `nest.order`, each reading the output as the earlier
    points left it (the reads of the written tensor are views of `nest.out`).  Point by point, with
    Python integers for the indices: exact, and slow, so its size is capped."""
    assert nest.order is not None
    points = list(itertools.islice(_domain_points(nest), ORDERED_MAX_POINTS + 1))
    if len(points) > ORDERED_MAX_POINTS:
        raise ReferenceEvalError(
            f"stage '{nest.stage}' is a recurrence (carry {', '.join(nest.order)}): the reference runs it point by "
            f"point, and it has more than {ORDERED_MAX_POINTS:,} points; check at smaller sizes (--size)"
        )
    for env in points:
        out_index = tuple(env[v] for v in nest.out_loops)

        def read(k: int, env: dict[str, int] = env) -> np.ndarray:
            access = nest.reads[k]
            if not access.indices:
                return access.array
            index = tuple(int(evaluate(e, env)) for e in access.indices)
            for dim, i in enumerate(index):
                if not 0 <= i < access.array.shape[dim]:
                    _check_bounds(nest, access, dim, i, i)
            return access.array[index]

        nest.out[out_index] = nest.body.run(read, lambda out_index=out_index: nest.out[out_index])


def _domain_points(nest: _Nest):
    """The points of an ordered nest's domain, in its order, as {loop: value}: a constraint is
    tested as soon as the loops it names have values, so a triangle's or a tetrahedron's points
    cost what they are, not what their box is."""
    assert nest.order is not None
    order = nest.order
    extents = [nest.extents[nest.loops.index(v)] for v in order]
    tests: list[list[tuple[Expr, bool]]] = [[] for _ in order]
    for expr, equal in nest.where:
        depth = max((order.index(n) for n in names_in(expr) if n in order), default=0)
        tests[depth].append((expr, equal))

    def holds(depth: int, env: dict[str, int]) -> bool:
        return all((evaluate(e, env) == 0) if eq else (evaluate(e, env) >= 0) for e, eq in tests[depth])

    def points(depth: int, env: dict[str, int]):
        if depth == len(order):
            yield dict(env)
            return
        for value in range(extents[depth]):
            env[order[depth]] = value
            if holds(depth, env):
                yield from points(depth + 1, env)
        env.pop(order[depth], None)

    yield from points(0, {})


def _product_factors(nest: _Nest) -> tuple[list[int], list[np.ndarray]] | None:
    """If the body is a product of reads and constants: (read positions, constants)."""
    reads: list[int] = []
    consts: list[np.ndarray] = []
    body = nest.body

    def walk(v: SSAValue) -> bool:
        if v in body.leaves:
            reads.append(body.leaves[v])
            return True
        owner = v.owner
        if not isinstance(owner, Operation) or owner not in body.ops:
            return False
        if owner.name == "arith.constant":
            consts.append(_constant(owner))
            return True
        if owner.name in ("arith.mulf", "arith.muli"):
            return all(walk(o) for o in owner.operands)
        return False

    return (reads, consts) if walk(body.result) and reads else None


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _try_einsum(nest: _Nest) -> bool:
    """`C[i, j] += A[i, k] * B[k, j]`-like nests as one np.einsum; False if the nest is not of that form."""
    if nest.combine != "add" or all(nest.parallel) or len(nest.loops) > len(_LETTERS) or nest.where:
        return False
    found = _product_factors(nest)
    if found is None:
        return False
    positions, consts = found
    if not all(all(isinstance(e, Var) for e in nest.reads[k].indices) for k in positions):
        return False
    used = {e.name for k in positions for e in nest.reads[k].indices}  # type: ignore[union-attr]
    if used != set(nest.loops):
        return False
    dt = nest.out.dtype
    acc_dt = _acc_dtype(dt)
    letter = dict(zip(nest.loops, _LETTERS))
    extent = dict(zip(nest.loops, nest.extents))
    operands = []
    subscripts = []
    for k in positions:
        access = nest.reads[k]
        names = [e.name for e in access.indices]  # type: ignore[union-attr]
        for dim, name in enumerate(names):
            _check_bounds(nest, access, dim, 0, extent[name] - 1)
        view = access.array[tuple(slice(0, extent[name]) for name in names)]
        operands.append(view.astype(acc_dt))
        subscripts.append("".join(letter[name] for name in names))
    spec = ",".join(subscripts) + "->" + "".join(letter[name] for name in nest.out_loops)
    result = np.einsum(spec, *operands, optimize=True)
    for c in consts:
        result = result * c.astype(acc_dt)
    region = tuple(slice(0, extent[name]) for name in nest.out_loops)
    nest.out[region] = (nest.out[region].astype(acc_dt) + result).astype(dt)
    return True
