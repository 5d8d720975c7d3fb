"""Reduction lengths, the tolerance a compiled kernel is held to, and the comparison with it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ModuleOp,
)
from xdsl.ir import Attribute, Operation

from irkit.dialects import design as d
from irkit.dialects import tensorop as t
from irkit.kernel_abi import dtype_name, kernel_args
from irkit.named_ops import NAMED_OPS, get_named_op
from irkit.oracle.common import NUMPY_DTYPES
from irkit.oracle.inputs import _design_tensors, _find_design, _find_kernel, _is_kernel, _kernel_tensors, resolve_sizes
from irkit.oracle.levels import _named_params, _stage_reads, _stmt_domain

# --- reduction lengths, tolerances, comparison -----------------------------------------------


def _named_length(name: str, shapes: list[tuple[int, ...]], params: Mapping[str, object]) -> int:
    if name == "reduce":  # tensorop-only
        return math.prod(shapes[0][k] for k in (params.get("dims") or ()))  # type: ignore[union-attr]
    spec = NAMED_OPS.get(name)
    if spec is None:  # elementwise, or a tensorop-only operation of a plugin
        return 1
    return spec.terms_per_element(shapes, dict(params))


def reduction_lengths(
    obj: ModuleOp | d.DesignOp | func.FuncOp, sizes: Mapping[str, int] | None = None
) -> dict[str, int]:
    """For every computed tensor, the longest chain of accumulated terms behind an element.

    A stage's own length is the number of terms it reduces per element (1
    for elementwise work); through a pipeline the lengths of what it reads
    add up.  This is the `reduction_length` to give `tolerance`/`compare`.
    """
    sizes = resolve_sizes(obj, sizes)
    lengths: dict[str, int] = {}
    if _is_kernel(obj):
        kernel = _find_kernel(obj)  # type: ignore[arg-type]
        tensor_args, decls = _kernel_tensors(kernel, sizes)
        names = {arg.value: arg.name for arg in tensor_args}
        shapes = {arg.value: decls[arg.name].shape for arg in tensor_args}
        syms = [sizes[s.name] for s in kernel_args(kernel)[0]]
        count = {s.value: sizes[s.name] for s in kernel_args(kernel)[0]}

        def kernel_op(op: Operation) -> None:
            if isinstance(op, t.AllocOp):
                names[op.result] = op.tensor_name.data
                shapes[op.result] = tuple(op.shape.data.eval([], syms))
            elif isinstance(op, t.GenericOp):
                ext = op.domain.data.eval([], syms)
                own = math.prod(e for e, k in zip(ext, op.iterator_kinds) if k == t.REDUCTION or op.ordered is not None)
                before = max([lengths.get(names.get(v, ""), 0) for v in op.ins], default=0)
                target = names.get(op.outs[0], "?")
                lengths[target] = max(lengths.get(target, 0), max(1, own) + before)
            elif isinstance(op, t.NamedTensorOp):
                own = _named_length(op.name.removeprefix("tensorop."), [shapes[v] for v in op.ins], _named_params(op))
                before = max([lengths.get(names.get(v, ""), 0) for v in op.ins], default=0)
                lengths[names.get(op.outs[0], "?")] = max(1, own) + before
            elif isinstance(op, t.RepeatOp):
                for _ in range(min(count.get(op.count, 1), MAX_STEPS)):
                    for inner in op.body.block.ops:
                        kernel_op(inner)

        for op in kernel.body.block.ops:
            kernel_op(op)
        return lengths
    design = _find_design(obj)  # type: ignore[arg-type]
    decls = _design_tensors(design, sizes)
    shapes = {n: decl.shape for n, decl in decls.items()}

    def statement(op: Operation) -> None:
        if isinstance(op, d.StmtOp):
            loops, extents, n_lhs = _stmt_domain(op, shapes, sizes)
            own = math.prod(extents if op.carry_loops else extents[n_lhs:])  # a recurrence chains every point
        elif isinstance(op, d.NamedOp):
            spec = get_named_op(op.op_name.data)
            own = _named_length(spec.name, [shapes[n] for n in op.operand_names], spec.values(dict(op.params.data)))
        elif isinstance(op, d.RepeatOp):  # each step's terms add to the last step's: the chain grows with T
            for _ in range(min(sizes.get(op.count.data, 1), MAX_STEPS)):
                for inner in op.body.block.ops:
                    statement(inner)
            return
        else:
            return
        before = max([lengths.get(n, 0) for n in _stage_reads(op)], default=0)
        lengths[op.target.data] = max(1, own) + before

    for op in design.body.block.ops:
        statement(op)
    return lengths


MAX_STEPS = 100_000  # steps of a repeat followed when summing chains (beyond, the tolerance is loose anyway)


def _dtype_of(dtype: object) -> np.dtype:
    if isinstance(dtype, str) and dtype in NUMPY_DTYPES:
        return np.dtype(NUMPY_DTYPES[dtype])
    if isinstance(dtype, Attribute):
        return np.dtype(NUMPY_DTYPES[dtype_name(dtype)])
    return np.dtype(dtype)  # type: ignore[call-overload]


def tolerance(dtype: object, reduction_length: int = 1, scale: float = 1.0) -> tuple[float, float]:
    """(atol, rtol) for comparing a compiled kernel's output with this oracle: pass if
    `|actual - expected| <= atol + rtol * |expected|` element by element.

    Integers (`i32`): (0, 0), exact; wrapping integer arithmetic does not
    depend on the order of operations.

    Floats, with eps the machine epsilon (2**-23 for `f32`) and n the
    reduction length: `rtol = atol / scale = max(16 eps, 4 eps sqrt(n))`.

    Why.  The oracle sums in float64 and rounds once (module docstring),
    so the difference is the kernel's own rounding error.  Elementwise
    work (n = 1) is a chain of a few correctly rounded ops plus `exp` or
    `sqrt` within a few ulps, and a compiler may contract `a * b + c` into
    an FMA: 16 eps relative covers that.  A reduction of n terms in the
    element type, in any order the schedule picks (sequential, blocked,
    SIMD lanes), has an error that grows like eps * sqrt(n) times the size
    of its partial sums when rounding errors are random -- the
    deterministic worst case, n eps, is a bound nobody meets on data
    like `random_inputs`.  The relative part covers elements of ordinary
    size; where the sum cancels (an element near 0 among elements of size
    `scale`), the error is still of the size of the partial sums, so the
    absolute part is taken relative to `scale`, the largest magnitude in
    the expected output (`compare` passes it).  For a 1024-long f32 dot
    product of values in [-1, 1], the largest error over a million
    elements is about 0.6 eps n, against a bound of about 6.7 eps n: a
    margin of ten, while a dropped or duplicated term (an error of the size
    of one product, ~1/3) is a thousand times the bound.  The same
    reasoning holds for `f64` with its eps, where the oracle itself sums in
    float64; the margin covers both errors.
    """
    dt = _dtype_of(dtype)
    if dt.kind != "f":
        return 0.0, 0.0
    eps = float(np.finfo(dt).eps)
    n = max(1, int(reduction_length))
    rtol = max(16 * eps, 4 * eps * math.sqrt(n))
    return rtol * float(scale), rtol


@dataclass
class Comparison:
    """What `compare` found: the largest errors and whether they are within tolerance."""

    ok: bool
    max_abs: float
    max_rel: float
    atol: float
    rtol: float
    n_bad: int = 0
    worst: tuple[int, ...] | None = None  # index of the element furthest outside the tolerance
    actual_at_worst: float | None = None
    expected_at_worst: float | None = None
    message: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.message and not self.n_bad:
            return self.message
        head = "ok" if self.ok else f"MISMATCH in {self.n_bad} element{'s' if self.n_bad != 1 else ''}"
        text = (
            f"{head}: max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g} "
            f"(atol {self.atol:.3g}, rtol {self.rtol:.3g})"
        )
        if not self.ok and self.worst is not None:
            text += f"; worst at {list(self.worst)}: got {self.actual_at_worst!r}, expected {self.expected_at_worst!r}"
        return text


def compare(
    actual: np.ndarray, expected: np.ndarray, dtype: object = None, reduction_length: int = 1, chunk: int = 1 << 22
) -> Comparison:
    """Compare a kernel's output with the oracle's under `tolerance(dtype, reduction_length, max|expected|)`.

    NaNs must match NaNs and infinities must be equal; integer outputs
    must be equal.  Works in blocks, so comparing large outputs stays
    within a little memory.
    """
    a, e = np.asarray(actual), np.asarray(expected)
    dt = _dtype_of(dtype if dtype is not None else e.dtype)
    if a.shape != e.shape:
        return Comparison(False, math.inf, math.inf, 0.0, 0.0, message=f"MISMATCH: shape {a.shape}, expected {e.shape}")
    flat_a, flat_e = a.reshape(-1), e.reshape(-1)
    if dt.kind != "f":
        diff = np.abs(flat_a.astype(np.int64) - flat_e.astype(np.int64))
        bad = np.flatnonzero(diff)
        max_abs = float(diff.max(initial=0))
        nz = flat_e != 0
        max_rel = float((diff[nz] / np.abs(flat_e[nz].astype(np.float64))).max(initial=0.0))
        worst = int(bad[np.argmax(diff[bad])]) if bad.size else None
        return _report(a, e, bad.size, max_abs, max_rel, 0.0, 0.0, worst)
    finite = [
        np.abs(flat_e[i : i + chunk][np.isfinite(flat_e[i : i + chunk])]).max(initial=0.0)
        for i in range(0, flat_e.size, chunk)
    ]
    scale = float(max(finite, default=0.0))
    atol, rtol = tolerance(dt, reduction_length, scale)
    n_bad, max_abs, max_rel, worst, worst_excess = 0, 0.0, 0.0, None, -math.inf
    with np.errstate(all="ignore"):
        for i in range(0, flat_e.size, chunk):
            x = flat_a[i : i + chunk].astype(np.float64)
            y = flat_e[i : i + chunk].astype(np.float64)
            diff = np.abs(x - y)
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            diff[same] = 0.0
            bad = ~same & ~(diff <= atol + rtol * np.abs(y))  # NaN differences are bad
            bad |= ~same & ~(np.isfinite(x) & np.isfinite(y))  # so is any other non-finite mismatch
            n_bad += int(bad.sum())
            finite_diff = diff[np.isfinite(diff)]
            max_abs = max(max_abs, float(finite_diff.max(initial=0.0)))
            if finite_diff.size < diff.size:
                max_abs = math.inf
            rel = diff / np.abs(y)
            rel = rel[(y != 0) & ~np.isnan(rel)]
            max_rel = max(max_rel, float(rel.max(initial=0.0)))
            excess = np.where(bad, np.nan_to_num(diff - (atol + rtol * np.abs(y)), nan=np.inf, posinf=np.inf), -np.inf)
            k = int(np.argmax(excess))
            if bad.any() and excess[k] > worst_excess:
                worst_excess, worst = float(excess[k]), i + k
    return _report(a, e, n_bad, max_abs, max_rel, atol, rtol, worst)


def _report(
    a: np.ndarray,
    e: np.ndarray,
    n_bad: int,
    max_abs: float,
    max_rel: float,
    atol: float,
    rtol: float,
    worst: int | None,
) -> Comparison:
    where = None if worst is None else tuple(int(v) for v in np.unravel_index(worst, e.shape))
    return Comparison(
        ok=n_bad == 0,
        max_abs=max_abs,
        max_rel=max_rel,
        atol=atol,
        rtol=rtol,
        n_bad=n_bad,
        worst=where,
        actual_at_worst=None if where is None else a[where].item(),
        expected_at_worst=None if where is None else e[where].item(),
    )
