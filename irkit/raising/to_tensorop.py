"""Building the tensorop kernel a loop kernel implements, from `loop_reader`'s reading.

Each store becomes one tensorop op, in program order: a store of a constant
over a whole buffer is `tensorop.fill`; any other store is a
`tensorop.generic` whose domain is the store's dimensions (the point loops
its indices use: stored-to dimensions first, in index order, then the
reduction dimensions in nesting order), whose indexing maps are the
resolved accesses, and whose body is the scalar ops between the loads and
the stored value.  A load of the element being stored into a combiner op
(`addf`, `maximumf`, ...) becomes the body's output argument, as in
`linalg.generic`.  Temporaries become `tensorop.alloc` of their whole
shape (a tile-sized temporary of a fused stage is raised to the whole
tensor).  The recovered schedule rides along in each generic's `schedule`
property.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineConstraintExpr, AffineConstraintKind, AffineExpr, AffineMap, AffineSet

from irkit.affine.linear import Div, Lin
from irkit.dialects import loop as lp
from irkit.dialects import tensorop as t
from irkit.kernel_abi import kernel_args
from irkit.raising.linear import map_results
from irkit.raising.loop_reader import Buffer, KernelReading, LoopFacts, RaiseError, Write, read_kernel
from irkit.raising.schedule_of import dim_name, schedule_of


def raise_kernel(kernel: func.FuncOp) -> func.FuncOp:
    """A tensorop kernel computing what the loop kernel `kernel` computes (same signature).

    Packs and register blocks are undone first, in place (`unpack`, `unjam`); what they were
    comes back as `pack` and `unroll_jam` directives of the stage whose loops they name."""
    from irkit.raising.recovered import Rebuilt
    from irkit.raising.unjam import find_jams
    from irkit.raising.unpack import find_packs

    rebuilt = Rebuilt()
    packs = find_packs(kernel)
    extra = find_jams(kernel, rebuilt) + rebuilt.update(packs)  # the order documents write them in
    reading = read_kernel(kernel)
    sizes = list(reading.sizes)
    new = func.FuncOp(kernel.sym_name.data, kernel.function_type, Region(Block(arg_types=kernel.function_type.inputs)))
    new.arg_attrs = kernel.arg_attrs
    for key, value in kernel.attributes.items():
        if key not in ("sym_name", "function_type", "arg_attrs"):
            new.attributes[key] = value
    block = new.body.block
    old_args = list(kernel.body.block.args)
    remap: dict[SSAValue, SSAValue] = dict(zip(old_args, block.args))
    for buf in reading.buffers.values():
        if buf.temp:
            alloc = _alloc(buf, reading, [remap[s] for s in sizes])
            block.add_op(alloc)
            remap[buf.value] = alloc.results[0]
    last_with = _owners(extra, reading)
    steps: tuple[LoopFacts, t.RepeatOp] | None = None  # the repeat being filled, and its loop
    for k, write in enumerate(reading.writes):
        mine = [f.directive for i, f in enumerate(extra) if last_with.get(i) == k]
        unique = [d for i, d in enumerate(mine) if d not in mine[:i]]
        op = _tensor_op(write, reading, remap, sizes, unique)
        loop = write.repeat
        if loop is None:
            steps = None
            block.add_op(op)
            continue
        if steps is None or steps[0] is not loop:
            steps = (loop, t.RepeatOp(remap[_step_count(loop, reading)]))
            block.add_op(steps[1])
        steps[1].body.block.add_op(op)
    block.add_op(func.ReturnOp())
    from irkit.raising.name_ops import name_generics

    name_generics(new)
    return new


def _step_count(loop: LoopFacts, reading: KernelReading) -> SSAValue:
    """The size a time loop runs to: it runs from 0 to a size, step 1, as `repeat T` lowers."""
    upper = loop.upper[0] if len(loop.upper) == 1 else None
    count = next(iter(upper.terms), None) if upper is not None and upper.const == 0 and len(upper.terms) == 1 else None
    if (
        loop.lower != [Lin()] or loop.step != 1 or count is None or upper.terms[count] != 1  # type: ignore[union-attr]
        or count not in reading.sizes
    ):  # fmt: skip
        raise RaiseError(
            f"cannot raise loop '{loop.name}': nothing uses its variable, so it repeats the statements inside, but a "
            "repeat runs from 0 to a size with step 1",
            loop.op,
        )
    return count  # type: ignore[return-value]


def _owners(extra: list, reading: KernelReading) -> dict[int, int]:
    """Which write each recovered directive belongs to: the last store inside the loop it was
    found on (that loop's stage, by nesting).  A loop name would be ambiguous: two stages
    may both have an `ii`, and a pack or jam found on one is not the other's."""
    out: dict[int, int] = {}
    for k, write in enumerate(reading.writes):
        around = {f.op for f in write.loops}
        for i, found in enumerate(extra):
            if found.loop is not None and found.loop in around:
                out[i] = k
    return out


def _size_expr(form: Lin, sizes: list[SSAValue]) -> AffineExpr:
    """`form` over the sizes as symbols; floordiv/mod atoms (strided extents) nest."""
    expr = AffineExpr.constant(form.const)
    for v, c in form.terms.items():
        if isinstance(v, Div):
            inner = _size_expr(v.arg, sizes)
            term = inner // v.by if v.kind == "floordiv" else inner % v.by
        else:
            term = AffineExpr.symbol(sizes.index(v))
        expr = expr + term * c
    return expr


def _alloc(buf: Buffer, reading: KernelReading, size_args: list[SSAValue]) -> t.AllocOp:
    """The whole temporary: each dimension's extent from the dimension that indexes it in its writes."""
    sizes = list(reading.sizes)
    extents: list[Lin | None] = [None] * buf.rank
    for w in reading.writes:
        if w.buffer is not buf:
            continue
        for p, index in enumerate(w.index):
            dim = next((d for d in w.dims if index.terms == {d.var: 1}), None)
            if dim is None:
                continue
            extent = dim.extent + Lin({}, index.const)
            if extents[p] is None or extent.const > extents[p].const:  # type: ignore[union-attr]
                extents[p] = extent
    if any(e is None for e in extents):
        raise RaiseError(f"cannot raise temporary '{buf.name}': a dimension is never written along a loop", buf.alloc)
    shape = AffineMap(0, len(sizes), tuple(_size_expr(e, sizes) for e in extents))  # type: ignore[arg-type]
    assert isinstance(buf.value.type, MemRefType)
    alloc = t.AllocOp(size_args, buf.name, AffineMapAttr(shape), buf.value.type)
    if buf.alloc is not None and buf.alloc.align is not None:
        alloc.align = buf.alloc.align
    return alloc


def domain_order(write: Write) -> list[int]:
    """Dimensions by position: those the store indexes, in index order, then reductions in nesting order."""
    order: list[int] = []
    for index in write.index:
        for k, d in enumerate(write.dims):
            if d.var in set(index.terms) and k not in order:
                order.append(k)
    order += [k for k in range(len(write.dims)) if k not in order]
    return order


def _index_map(index: list[Lin], dim_vars: list[SSAValue], sizes: list[SSAValue]) -> AffineMapAttr:
    results = []
    for form in index:
        expr = AffineExpr.constant(form.const)
        for v, c in form.terms.items():
            if v in dim_vars:
                expr = expr + AffineExpr.dimension(dim_vars.index(v)) * c
            else:
                expr = expr + AffineExpr.symbol(sizes.index(v)) * c
        results.append(expr)
    return AffineMapAttr(AffineMap(len(dim_vars), len(sizes) if any(
        v in sizes for f in index for v in f.terms) else 0, tuple(results)))  # fmt: skip


def _is_fill(write: Write, reading: KernelReading) -> bool:
    if write.constant is None or write.loads:
        return False
    if len(write.index) != len(write.dims):
        return False
    if not all(i.is_atom(d.var) for i, d in zip(write.index, write.dims)):
        return False
    return write.buffer.temp or _covers_argument(write, reading)


def _covers_argument(write: Write, reading: KernelReading) -> bool:
    """Does a constant store into a kernel argument run over its whole declared shape?  One that
    misses a row is not a fill: raised as a generic, it differs from the document's fill.
    Compared at a few size values, since extents may be spelled differently (floordiv)."""
    _, tensors = kernel_args(reading.kernel)
    arg = next((a for a in tensors if a.value == write.buffer.value), None)
    if arg is None:
        return True
    size_values = list(reading.sizes)
    as_dims = [AffineExpr.dimension(i) for i in range(len(size_values))]
    shape = map_results(arg.shape.replace_dims_and_symbols([], as_dims, len(size_values), 0), size_values)
    if any(form is None for form in shape):
        return True  # a shape raising cannot read: leave it to the comparison
    extents = {d.var: d.extent for d in write.dims}
    by_position = [extents[next(iter(i.terms))] for i in write.index]
    for trial in (0, 1, 2, 3):
        env = {v: 5 + 7 * trial + 3 * k for k, v in enumerate(size_values)}
        if [f.evaluate(env) for f in shape] != [f.evaluate(env) for f in by_position]:  # type: ignore[arg-type]
            return False
    return True


def _tensor_op(
    write: Write, reading: KernelReading, remap: dict[SSAValue, SSAValue], sizes: list[SSAValue], extra: list[dict]
):
    size_args = [remap[s] for s in sizes]
    out = remap[write.buffer.value]
    stage = write.buffer.name
    if _is_fill(write, reading):
        return t.FillOp(out, size_args, write.constant.value, stage)  # type: ignore[union-attr]
    ordered = is_recurrence(write)
    order = list(range(len(write.dims))) if ordered else domain_order(write)  # a recurrence keeps its nest order
    dims = [write.dims[k] for k in order]
    dim_vars = [d.var for d in dims]
    ins = [a for a in write.loads if a.op is not write.accumulator]
    maps = [_index_map(a.index, dim_vars, sizes) for a in ins]
    maps.append(_index_map(write.index, dim_vars, sizes))
    stored = {d.var for i in write.index for d in dims if d.var in set(i.terms)}
    iterators = [t.PARALLEL if d.var in stored else t.REDUCTION for d in dims]
    out_type = write.buffer.value.type
    assert isinstance(out_type, MemRefType)
    arg_types = [a.buffer.value.type.element_type for a in ins] + [out_type.element_type]  # type: ignore[attr-defined]
    body = Block(arg_types=arg_types)
    values: dict[SSAValue, SSAValue] = {a.op.results[0]: arg for a, arg in zip(ins, body.args)}
    if write.accumulator is not None:
        values[write.accumulator.results[0]] = body.args[-1]
    for op in write.body:
        for x in op.operands:
            if x in values or not isinstance(x.owner, Block) or not isinstance(x.owner.parent_op(), lp.ForOp):
                continue
            if x not in dim_vars:  # a tile loop's or a time loop's variable: not one of the statement's indices
                raise RaiseError(
                    f"cannot raise the store to '{stage}': its value uses the variable of a loop that is not one of its "
                    "dimensions",
                    write.store,
                )
            index = t.IndexOp(dim_vars.index(x))  # a value computed from the loop's variable: `select(k < j, ...)`
            body.add_op(index)
            values[x] = index.result
        clone = op.clone(value_mapper={**remap, **values})  # scalars and sizes come from above
        body.add_op(clone)
        for old, new in zip(op.results, clone.results):
            values[old] = new
    body.add_op(t.YieldOp(values.get(write.store.value, write.store.value)))
    if write.store.value not in values:
        raise RaiseError(
            f"cannot raise the store to '{stage}': its value is not computed in the loop body", write.store
        )
    domain = AffineMapAttr(AffineMap(0, len(sizes), tuple(_size_expr(d.extent, sizes) for d in dims)))
    schedule = schedule_attr(schedule_of(write, reading, order) + extra)
    where = None
    if write.where:
        constraints = tuple(
            AffineConstraintExpr(AffineConstraintKind.ge, _form_expr(f, dim_vars, sizes, write), AffineExpr.constant(0))
            for f in write.where
        )
        where = AffineSetAttr(AffineSet(len(dim_vars), len(sizes), constraints))
    return t.GenericOp(
        [remap[a.buffer.value] for a in ins],
        [out],
        size_args,
        stage=stage,
        loop_names=[dim_name(d) for d in dims],
        domain=domain,
        indexing_maps=maps,
        iterators=iterators,
        body=Region(body),
        schedule=schedule,
        where=where,
        ordered=ordered,
    )


def is_recurrence(write: Write) -> bool:
    """Does the store read its own buffer at another element (a recurrence, `carry` in the document):
    its loops then run in order, each iteration reading what the earlier ones wrote."""
    return any(a.buffer is write.buffer and a.op is not write.accumulator for a in write.loads)


def _form_expr(form: Lin, dim_vars: list[SSAValue], sizes: list[SSAValue], write: Write) -> AffineExpr:
    """A `where` form over the point loops (dims) and the sizes (symbols)."""
    expr = AffineExpr.constant(form.const)
    for v, c in form.terms.items():
        if v in dim_vars:
            term = AffineExpr.dimension(dim_vars.index(v))
        elif v in sizes:
            term = AffineExpr.symbol(sizes.index(v))
        else:
            raise RaiseError(f"cannot raise the store to '{write.buffer.name}': a loop bound names a loop of another statement", write.store)
        expr = expr + term * c
    return expr


def schedule_attr(directives: list[dict]) -> ArrayAttr:
    """Directive dictionaries as the `schedule` property (lower-design's shape, without `loc`)."""
    rows: list[Attribute] = []
    for entry in directives:
        props: dict[str, Attribute] = {}
        for key, value in entry.items():
            props[key] = _attr(key, value)
        rows.append(DictionaryAttr(props))
    return ArrayAttr(rows)


def _attr(key: str, value: object) -> Attribute:
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, list) and key == "factors":
        return DenseArrayBase.from_list(i64, value)
    if isinstance(value, list):
        return ArrayAttr([StringAttr(v) for v in value])
    raise TypeError(f"no attribute for {key}={value!r}")
