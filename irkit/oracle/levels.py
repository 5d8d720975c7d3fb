"""The two levels the oracle evaluates: a design document's statements, a tensorop kernel's ops."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Operation, SSAValue

from irkit.affine.printer import TEXT_TREE
from irkit.affine.where import normal_form
from irkit.affine_text import Var, names_in, parse_affine
from irkit.dialects import design as d
from irkit.dialects import tensorop as t
from irkit.kernel_abi import kernel_args, kernel_scalars
from irkit.named_ops import get_named_op, param_value
from irkit.oracle.common import NUMPY_DTYPES, ReferenceEvalError
from irkit.oracle.engine import _Access, _Body, _Nest, _np_dtype, run_nest
from irkit.oracle.inputs import (
    _bind_inputs,
    _design_tensors,
    _find_design,
    _find_kernel,
    _kernel_tensors,
    _new_buffer,
    _TensorDecl,
    resolve_sizes,
)
from irkit.oracle.named import _check_named_shape, named_op

# --- design level --------------------------------------------------------------------------


def _stmt_domain(
    stmt: d.StmtOp, shapes: Mapping[str, tuple[int, ...]], sizes: Mapping[str, int] | None = None
) -> tuple[list[str], list[int], int]:
    """(loops, extents, number of left-hand loops) of an index statement, einsum style."""
    target = stmt.target.data
    lhs = [parse_affine(e) for e in stmt.index_exprs]
    if not all(isinstance(e, Var) for e in lhs) or len({e.name for e in lhs}) != len(lhs):  # type: ignore[union-attr]
        raise ReferenceEvalError(f"stage '{target}': left-hand indices must be distinct plain variables")
    if target not in shapes:
        raise ReferenceEvalError(f"stage '{target}': '{target}' is not a declared tensor")
    if len(lhs) != len(shapes[target]):
        raise ReferenceEvalError(f"stage '{target}': {len(lhs)} indices for a rank-{len(shapes[target])} tensor")
    loops = [e.name for e in lhs]  # type: ignore[union-attr]
    extents = list(shapes[target])
    ranges: dict[str, set[int]] = {}
    sizes = sizes or {}
    reads = [op for op in stmt.body.walk() if isinstance(op, d.ReadOp)]
    for read in reads:
        name = read.tensor.data
        if name not in shapes:
            raise ReferenceEvalError(f"stage '{target}' reads '{name}', which is not a declared tensor")
        for pos, text in enumerate(read.index_exprs):
            idx = parse_affine(text)
            if isinstance(idx, Var) and idx.name in sizes:
                continue  # `A[N]`: a size read as a constant index, not a loop
            if isinstance(idx, Var) and idx.name not in loops[: len(lhs)]:
                if pos >= len(shapes[name]):
                    raise ReferenceEvalError(f"stage '{target}': too many indices for '{name}'")
                ranges.setdefault(idx.name, set()).add(shapes[name][pos])
                if idx.name not in loops:
                    loops.append(idx.name)
                    extents.append(shapes[name][pos])
    for name, values in ranges.items():
        if len(values) > 1:
            raise ReferenceEvalError(
                f"stage '{target}': reduction index {name} indexes dimensions of different sizes {sorted(values)}"
            )
    for read in reads:
        for text in read.index_exprs:
            for name in names_in(parse_affine(text)):
                if name not in loops and name not in sizes:
                    raise ReferenceEvalError(
                        f"stage '{target}': index {name} has no range (it never indexes a dimension directly)"
                    )
    return loops, extents, len(lhs)


def _stmt_nest(
    stmt: d.StmtOp, arrays: Mapping[str, np.ndarray], out: np.ndarray, sizes: Mapping[str, int] | None = None
) -> _Nest:
    target = stmt.target.data
    shapes = {name: a.shape for name, a in arrays.items()}
    shapes[target] = out.shape
    loops, extents, n_lhs = _stmt_domain(stmt, shapes, sizes)
    reads = [op for op in stmt.body.block.ops if isinstance(op, (d.ReadOp, d.ValueOp))]
    accesses = []
    for read in reads:
        if isinstance(read, d.ValueOp) and read.ref.data in loops:  # an index: a read of 0, 1, 2, ... along it
            index = read.ref.data
            values = np.arange(extents[loops.index(index)]).astype(_np_dtype(read.result.type))
            accesses.append(_Access(index, values, [Var(index)]))
            continue
        if isinstance(read, d.ValueOp):  # a scalar, or a size in the statement's type: a 0-d read
            accesses.append(_Access(read.ref.data, _named_value(read, arrays, sizes or {}), []))
            continue
        name = read.tensor.data
        if name not in arrays:
            raise ReferenceEvalError(f"stage '{target}' reads '{name}' before any statement writes it")
        if len(read.index_exprs) != arrays[name].ndim:
            raise ReferenceEvalError(
                f"stage '{target}': {len(read.index_exprs)} indices for the rank-{arrays[name].ndim} tensor '{name}'"
            )
        indices = [_substitute(parse_affine(e), sizes or {}) for e in read.index_exprs]  # sizes are constants here
        accesses.append(_Access(name, arrays[name], indices))
    block_ops = list(stmt.body.block.ops)
    terminator = block_ops[-1]
    assert isinstance(terminator, d.YieldOp)
    body = _Body(
        [op for op in block_ops if not isinstance(op, (d.ReadOp, d.ValueOp, d.YieldOp))],
        {r.result: k for k, r in enumerate(reads)},
        terminator.value,
    )
    combine = {"=": "assign", "+=": "add", "max=": "max"}[stmt.kind.data]
    nest = _Nest(
        target, loops, extents, [k < n_lhs for k in range(len(loops))], accesses, out, loops[:n_lhs], body, combine
    )
    for text in stmt.where_texts:  # over the loops and the sizes: the sizes are known numbers here
        c = normal_form(text)
        nest.where.append((_substitute(c.expr, sizes or {}), c.equal))
    if stmt.carry_loops:  # a recurrence: point by point, in its loops' order
        nest.order = list(stmt.carry_loops)
    return nest


def _substitute(expr, values: Mapping[str, int]):
    """`expr` with the names in `values` replaced by their constants."""
    from irkit.affine_text import BinOp, Const

    if isinstance(expr, Var):
        return Const(values[expr.name]) if expr.name in values else expr
    if isinstance(expr, BinOp):
        return BinOp(expr.op, _substitute(expr.lhs, values), _substitute(expr.rhs, values))
    return expr


def _named_value(op: d.ValueOp, arrays: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> np.ndarray:
    name = op.ref.data
    dt = _np_dtype(op.result.type)
    if name in sizes:
        return np.asarray(sizes[name]).astype(dt)  # rounded to nearest, as C's conversion
    if name in arrays and arrays[name].ndim == 0:
        return arrays[name]
    raise ReferenceEvalError(f"'{name}' is neither a scalar input nor a size")


def _start_value(kind: str, dt: np.dtype) -> object:
    if kind == "+=":
        return 0
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


class _BufferPool:
    """Buffers of dead temporaries, handed out again: fresh pages are slow to fault in on large tensors."""

    def __init__(self) -> None:
        self.free: dict[int, list[np.ndarray]] = {}  # by size in bytes: a take costs O(1)

    def give(self, arr: np.ndarray) -> None:
        if arr.flags.c_contiguous:
            self.free.setdefault(arr.nbytes, []).append(arr)

    def take(self, decl: _TensorDecl) -> np.ndarray:
        dt = np.dtype(NUMPY_DTYPES[decl.dtype])
        nbytes = math.prod(decl.shape) * dt.itemsize
        same = self.free.get(nbytes)
        if same:
            return same.pop().view(dt).reshape(decl.shape)
        return np.empty(decl.shape, dtype=dt)


def _stage_reads(op: Operation) -> set[str]:
    if isinstance(op, d.StmtOp):
        return {r.tensor.data for r in op.body.walk() if isinstance(r, d.ReadOp)}
    if isinstance(op, d.NamedOp):
        return set(op.operand_names)
    return set()


def evaluate_design(
    obj: ModuleOp | d.DesignOp,
    inputs: Mapping[str, np.ndarray],
    sizes: Mapping[str, int] | None = None,
    *,
    include_temps: bool = False,
) -> dict[str, np.ndarray]:
    """Run a (checked) design document with numpy; returns every output tensor (and temps if asked).

    `sizes` override the document's defaults; a size without either raises
    `ReferenceEvalError` (a `ValueError`).  Inputs must have the declared
    shapes; they are read, never written.  See the module docstring for the
    semantics.
    """
    design = _find_design(obj)
    sizes = resolve_sizes(design, sizes)
    decls = _design_tensors(design, sizes)
    arrays: dict[str, np.ndarray] = dict(_bind_inputs(decls, inputs))
    stages = d.statements(design)
    last_read = {name: k for k, op in enumerate(stages) for name in _stage_reads(op)}
    dying: dict[int, list[str]] = {}  # stage -> the temps it reads for the last time
    for name, k in last_read.items():
        dying.setdefault(k, []).append(name)
    pool = _BufferPool()

    def run(op: d.StmtOp | d.NamedOp) -> None:
        target = op.target.data
        decl = decls.get(target)
        if decl is None:
            raise ReferenceEvalError(f"stage '{target}' writes an undeclared tensor")
        if decl.role == "input":
            raise ReferenceEvalError(f"stage '{target}' writes an input tensor")
        dt = np.dtype(NUMPY_DTYPES[decl.dtype])
        if isinstance(op, d.StmtOp) and decl.role == "inout":  # updated in place, from its current value
            out = arrays[target]
            run_nest(_stmt_nest(op, arrays, out, sizes))
        elif isinstance(op, d.StmtOp) and target in arrays and op.kind.data == "=":  # a further part, or a step
            out = arrays[target]  # of a repeat (its parts keep the elements the step does not write)
            run_nest(_stmt_nest(op, arrays, out, sizes))
        elif isinstance(op, d.StmtOp):
            out = arrays[target] if target in arrays else pool.take(decl)  # `=` (or its parts) writes it all
            if op.kind.data != "=":
                out.fill(_start_value(op.kind.data, dt))
            run_nest(_stmt_nest(op, arrays, out, sizes))
        else:
            missing = [n for n in op.operand_names if n not in arrays]
            if missing:
                raise ReferenceEvalError(f"stage '{target}' reads '{missing[0]}' before any statement writes it")
            spec = get_named_op(op.op_name.data)
            params = spec.values(dict(op.params.data))
            out = np.ascontiguousarray(named_op(spec.name, [arrays[n] for n in op.operand_names], params, dt))
            _check_named_shape(target, out.shape, decl.shape)  # a fresh array: used as it is, no copy
        arrays[target] = out

    def free(upto: int, names: list[str]) -> None:
        """Give back the temps nobody reads after statement `upto` (per stage: linear in the document)."""
        if include_temps:
            return
        for name in names:
            decl_ = decls.get(name)
            if decl_ is not None and decl_.role == "temp" and name in arrays and last_read.get(name, -1) <= upto:
                pool.give(arrays.pop(name))

    with np.errstate(all="ignore"):
        k = 0
        for item in design.body.block.ops:
            if isinstance(item, d.RepeatOp):  # every step in order; its temps are freed after the last
                body = list(item.body.block.ops)
                for _ in range(sizes[item.count.data]):
                    for op in body:
                        run(op)
                first, k = k, k + len(body)
                for j in range(first, k):
                    free(k - 1, [*dying.get(j, ()), stages[j].target.data])
            elif isinstance(item, d.StmtOp | d.NamedOp):
                run(item)
                free(k, [*dying.get(k, ()), item.target.data])
                k += 1
    return {
        name: arrays[name]
        for name, decl in decls.items()
        if name in arrays and (decl.role in ("output", "inout") or (include_temps and decl.role == "temp"))
    }


# --- tensorop level --------------------------------------------------------------------------


def _generic_nest(
    op: t.GenericOp,
    buffers: Mapping[SSAValue, np.ndarray],
    names: Mapping[SSAValue, str],
    symbols: list[int],
    outer: Mapping[SSAValue, np.ndarray] | None = None,
) -> _Nest:
    stage = op.stage.data
    n_loops = len(op.domain.data.results)
    loops = [f"d{i}" for i in range(n_loops)]
    extents = list(op.domain.data.eval([], symbols))
    if len(op.outs) != 1:
        raise ReferenceEvalError(
            f"stage '{stage}': the reference evaluates generics with one output, this one has {len(op.outs)}"
        )
    maps = op.maps
    operands = [*op.ins, *op.outs]
    for v in operands:
        if v not in buffers:
            raise ReferenceEvalError(f"stage '{stage}': an operand is not a kernel tensor or an allocation")
    exprs = [[TEXT_TREE.print(e, loops, symbols) for e in m.results] for m in maps]
    out_exprs = exprs[-1]
    if not all(isinstance(e, Var) for e in out_exprs):
        raise ReferenceEvalError(
            f"stage '{stage}': the output's indexing map must be a permutation of loops, got {maps[-1]}"
        )
    accesses = [_Access(names.get(v, "?"), buffers[v], exprs[k]) for k, v in enumerate(op.ins)]
    block = op.body.block
    terminator = block.last_op
    assert isinstance(terminator, t.YieldOp)
    args = list(block.args)
    out_leaf = args[-1]
    leaves: dict[SSAValue, int] = {a: k for k, a in enumerate(args[:-1])}
    for index in [o for o in block.ops if isinstance(o, t.IndexOp)]:  # a loop's value: a read of 0, 1, 2, ... along it
        leaves[index.result] = len(accesses)
        accesses.append(_Access(loops[index.loop], np.arange(extents[index.loop]), [Var(loops[index.loop])]))
    body = _Body(
        [o for o in block.ops if o is not terminator and not isinstance(o, t.IndexOp)],
        leaves,
        terminator.values[0],
        out_leaf,
        outer or {},
    )
    parallel = [kind == t.PARALLEL for kind in op.iterator_kinds]
    combine = "assign"
    if not all(parallel):
        combine = "fold"
        owner = body.result.owner
        kinds = {
            "arith.addf": "add",
            "arith.addi": "add",
            "arith.maximumf": "max",
            "arith.maxsi": "max",
            "arith.minimumf": "min",
            "arith.minsi": "min",
            "arith.mulf": "mul",
            "arith.muli": "mul",
        }
        if isinstance(owner, Operation) and owner.name in kinds and out_leaf.uses.get_length() == 1 and op.ordered is None:
            a, b = owner.operands
            other = b if a is out_leaf else a if b is out_leaf else None
            if other is not None and not body.depends_on(other, out_leaf):
                combine = kinds[owner.name]
                body = _Body([o for o in body.ops if o is not owner], body.leaves, other, out_leaf, body.outer)
    labels = [n.data for n in op.loop_names.data]
    where = [(TEXT_TREE.print(expr, loops, symbols), equal) for expr, equal in op.where_forms()]
    return _Nest(
        stage,
        loops,
        extents,
        parallel,
        accesses,
        buffers[op.outs[0]],
        [e.name for e in out_exprs],
        body,
        "assign" if op.ordered is not None else combine,  # a recurrence's body is its whole update
        labels,
        where,
        list(loops) if op.ordered is not None else None,
    )  # type: ignore[union-attr]


def _named_params(op: t.NamedTensorOp) -> dict[str, object]:
    if op.params is None:
        return {}
    return {key: param_value(value) for key, value in op.params.data.items()}


def evaluate_tensorop(
    obj: ModuleOp | func.FuncOp,
    inputs: Mapping[str, np.ndarray],
    sizes: Mapping[str, int] | None = None,
    *,
    include_temps: bool = False,
) -> dict[str, np.ndarray]:
    """Run a tensorop kernel (`func.func`, see `irkit.kernel_abi`) with numpy; returns its output tensors.

    Output buffers start zeroed, temporaries (`tensorop.alloc`) too; named
    ops overwrite their output; a `tensorop.generic` evaluates its body per
    point of its domain, with the output's block argument bound to the
    current element (a reduction combines through the body, as linalg does).
    """
    kernel = _find_kernel(obj)
    sizes = resolve_sizes(kernel, sizes)
    size_args, _ = kernel_args(kernel)
    tensor_args, decls = _kernel_tensors(kernel, sizes)
    bound = _bind_inputs(decls, inputs)
    ints: dict[SSAValue, int] = {s.value: sizes[s.name] for s in size_args}
    outer: dict[SSAValue, np.ndarray] = {s.value: np.asarray(sizes[s.name], dtype=np.int64) for s in size_args}
    outer.update((s.value, bound[s.name]) for s in kernel_scalars(kernel))
    buffers: dict[SSAValue, np.ndarray] = {}
    names: dict[SSAValue, str] = {}
    result: dict[str, np.ndarray] = {}
    for arg in tensor_args:
        buffers[arg.value] = bound[arg.name] if arg.role in ("input", "inout") else _new_buffer(decls[arg.name])
        names[arg.value] = arg.name
        if arg.role in ("output", "inout"):
            result[arg.name] = buffers[arg.value]

    def symbols_of(op: Operation, values) -> list[int]:
        try:
            return [ints[v] for v in values]
        except KeyError:
            raise ReferenceEvalError(f"'{op.name}' takes a size that is not a kernel argument") from None

    def run(op: Operation) -> None:
        if isinstance(op, t.AllocOp):
            syms = symbols_of(op, op.sizes)
            shape = tuple(op.shape.data.eval([], syms))
            assert isinstance(op.result.type, MemRefType)
            buffers[op.result] = np.zeros(shape, dtype=_np_dtype(op.result.type.element_type))
            names[op.result] = op.tensor_name.data
            if include_temps:
                result[op.tensor_name.data] = buffers[op.result]
        elif isinstance(op, t.FillOp):
            target = buffers[op.out[0]]
            value = op.value
            if not isinstance(value, (FloatAttr, IntegerAttr)):
                raise ReferenceEvalError(f"stage '{op.stage.data}': fill value {value} is not a number")
            target[...] = np.asarray(value.value.data).astype(target.dtype)
        elif isinstance(op, t.GenericOp):
            run_nest(_generic_nest(op, buffers, names, symbols_of(op, op.sizes), outer))
        elif isinstance(op, t.NamedTensorOp):
            name = op.name.removeprefix("tensorop.")
            out = buffers[op.outs[0]]
            value = named_op(name, [buffers[v] for v in op.ins], _named_params(op), out.dtype)
            _check_named_shape(op.stage.data, value.shape, out.shape)
            np.copyto(out, value)
        elif isinstance(op, t.RepeatOp):  # the body's ops, count times in order
            (steps,) = symbols_of(op, [op.count])
            for _ in range(steps):
                for inner in op.body.block.ops:
                    run(inner)
        else:
            raise ReferenceEvalError(f"the reference has no semantics for '{op.name}' in a kernel")

    with np.errstate(all="ignore"):
        for op in kernel.body.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            run(op)
    return result
