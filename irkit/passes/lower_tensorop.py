"""`lower-tensorop`: tensorop IR to loop IR, schedule not yet applied.

The pass first generalizes named ops (the same code as
`generalize-tensorop`), then rewrites every kernel function's tensorop ops
in place; the kernel's arguments and attributes are unchanged.

- `tensorop.generic` becomes a perfect loop nest, one `loop.for` per
  domain dimension in `loop_names` order (outermost first):

      loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1
          {loop_name = "i", stage = "C"} { ... }

  Lower bound 0, step 1; the upper bound is the domain's extent with the
  size symbols it uses turned into map dimensions, in symbol order, whose
  operands are those size values, simplified (`(s0 + 2)` over `%H` becomes
  `affine_map<(d0) -> (d0 + 2)>(%H)`; a constant extent has no operands).
  No `parallel`/`vector`/`unroll` facts.  The induction variables are named
  after the loops.  The innermost body loads one element of every input
  (`loop.load %A[indexing map](all ivs, outermost first)`), loads the
  output element too when the body reads it (reductions), clones the
  scalar body, and stores each yielded value with the output's indexing
  map.  Loads and stores use logical indices; a memref's layout (row- or
  column-major) is applied by the C backend.
- Schedule directives travel as the discardable attribute `irkit.schedule`
  (the generic's `schedule` array, unchanged: dictionaries with `kind`,
  the directive's operands and `loc`) on the outermost `loop.for` of the
  nest, for a later `apply-schedule`.  A nest without it is unscheduled.
  Several nests of one stage may carry it (a generalized softmax: four).
- `tensorop.fill` becomes a nest over the buffer's shape (a kernel
  argument's `irkit.shape`, an alloc's `shape`), loops named `d0, d1, ...`
  with the fill's stage, whose innermost body is `arith.constant` +
  `loop.store` (the constant inside, so every nest is self-contained).
- `tensorop.alloc` becomes `loop.alloc` (same sizes, name, shape map,
  align, type); every allocation is freed (`loop.free`, in reverse order)
  just before the kernel's `func.return`.

Rank-0 domains produce no loops: the body is emitted where the op was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irkit.affine.linear import Lin, NotAffine, build_map, lin_of
from irkit.dialects import loop as lp
from irkit.dialects import tensorop as t
from irkit.kernel_abi import value_name
from irkit.passes.generalize import buffer_shape, checked_kernels, fail, generalize_module, symbols_in

PASS = "lower-tensorop"
SCHEDULE_ATTR = "irkit.schedule"


def extent_bound(expr: AffineExpr, sizes: Sequence[SSAValue]) -> tuple[AffineMap, list[SSAValue]]:
    """An extent over size symbols as a bound map whose dims are the sizes it uses."""
    used = sorted(symbols_in(expr))
    new_symbols = [AffineExpr.dimension(used.index(s)) if s in used else AffineExpr.constant(0) for s in range(len(sizes))]
    bound = AffineMap(len(used), 0, (expr.replace_dims_and_symbols((), new_symbols).simplify(len(used), 0),))
    return bound, [sizes[s] for s in used]


READ_ATTR = "irkit.read"  # on a load of a tensor its statement reads more than once: the read, `A[j, k]`


def read_text(buf: SSAValue, amap: AffineMap, loops: list[str], op: t.GenericOp) -> str:
    """`A[j, k]`: a read of buffer `buf` as the document writes it, over the loop names (and the sizes)."""
    from irkit.affine.printer import affine_text

    syms = [value_name(v) for v in op.sizes]
    return f"{value_name(buf)}[{', '.join(affine_text(r, loops, syms) for r in amap.results)}]"


TIME_LOOP = "t"  # the name of a `repeat`'s loop (it indexes nothing; a statement's own `t` is another loop)


@dataclass
class Nest:
    """A perfect nest under construction: its outermost loop and innermost block."""

    loops: list[lp.ForOp]
    ivs: list[SSAValue]
    inner: Block | None  # None: no loops, the body goes where the op was

    @property
    def outer(self) -> lp.ForOp | None:
        return self.loops[0] if self.loops else None


def with_sizes_as_dims(
    amap: AffineMap, ivs: Sequence[SSAValue], sizes: Sequence[SSAValue]
) -> tuple[AffineMap, list[SSAValue]]:
    """An indexing map over the loops and the sizes (`A[N - 1 - i]`) as a loop-level access map:
    the sizes it uses become dimensions after the loops', the size arguments their operands."""
    if amap.num_symbols == 0:
        return amap, list(ivs)
    used = sorted({s for r in amap.results for s in symbols_in(r)})
    symbols = [AffineExpr.dimension(len(ivs) + used.index(s)) if s in used else AffineExpr.constant(0)
               for s in range(amap.num_symbols)]  # fmt: skip
    dims = [AffineExpr.dimension(i) for i in range(len(ivs))]
    results = tuple(r.replace_dims_and_symbols(dims, symbols) for r in amap.results)
    return AffineMap(len(ivs) + len(used), 0, results), [*ivs, *(sizes[s] for s in used)]


def where_bounds(
    where: list[tuple[AffineExpr, bool]], n_loops: int, p: int, ivs: Sequence[SSAValue], sizes: Sequence[SSAValue]
) -> tuple[list[Lin], list[Lin]]:
    """The lower and upper (exclusive) bounds the domain's constraints (`GenericOp.where_forms`)
    give loop `p`: from each whose innermost loop is `p` (coefficient 1 or -1), over the loops
    outside it and the sizes."""
    later = [f"@loop{q}" for q in range(p, n_loops)]  # stand-ins for the loops not built yet
    lower: list[Lin] = []
    upper: list[Lin] = []
    for expr, equal in where:
        form = lin_of(expr, [*ivs, *later], list(sizes))
        if any(form.terms.get(v, 0) for v in later[1:]) or not form.terms.get(later[0], 0):
            continue  # its innermost loop is another one
        k = form.terms[later[0]]
        if abs(k) != 1:
            raise NotAffine(f"loop {p} has the coefficient {k} in the where constraint {expr} >= 0")
        rest = Lin({v: -c * k for v, c in form.terms.items() if v != later[0]}, -form.const * k)
        if k == 1 or equal:
            lower.append(rest)
        if k == -1 or equal:
            upper.append(rest + Lin(const=1))
    return lower, upper


def build_nest(
    extents: Sequence[AffineExpr],
    sizes: Sequence[SSAValue],
    names: Sequence[str],
    stage: str,
    op: Operation,
    where: list[tuple[AffineExpr, bool]] | None = None,
) -> Nest:
    loops: list[lp.ForOp] = []
    for p, (expr, name) in enumerate(zip(extents, names)):
        upper, operands = extent_bound(expr, sizes)
        lower: AffineMap = AffineMap(0, 0, (AffineExpr.constant(0),))
        lower_operands: list[SSAValue] = []
        if where:
            ivs = [loop.induction_var for loop in loops]
            lows, highs = where_bounds(where, len(extents), p, ivs, sizes)
            if lows:
                lower, lower_operands = build_map([Lin(const=0), *lows])
            if highs:
                upper, operands = build_map([lin_of(expr, [], list(sizes)), *highs])
        loop = lp.ForOp(lower, lower_operands, upper, operands, 1, name, stage=stage)
        loop.location = op.location
        if SSAValue.is_valid_name(name):
            loop.induction_var.name_hint = name
        if loops:
            loops[-1].body.block.add_op(loop)
        loops.append(loop)
    return Nest(loops, [loop.induction_var for loop in loops], loops[-1].body.block if loops else None)


@dataclass
class KernelLowering:
    kernel: func.FuncOp

    def __post_init__(self) -> None:
        self.rewriter = Rewriter()
        self.allocs: list[lp.AllocOp] = []

    def emit(self, nest: Nest, anchor: Operation, ops: list[Operation]) -> None:
        """Put `ops` in the nest's innermost block, and the nest (or the ops) before `anchor`."""
        if nest.inner is None:
            self.rewriter.insert_op(ops, InsertPoint.before(anchor))
            return
        nest.inner.add_ops(ops)
        assert nest.outer is not None
        self.rewriter.insert_op(nest.outer, InsertPoint.before(anchor))

    def generic(self, op: t.GenericOp) -> None:
        names = [s.data for s in op.loop_names.data]
        nest = build_nest(op.domain.data.results, list(op.sizes), names, op.stage.data, op, op.where_forms())
        if op.schedule is not None and nest.outer is not None:
            nest.outer.attributes[SCHEDULE_ATTR] = op.schedule
        block = op.body.block
        operands = [*op.ins, *op.outs]
        n_in = len(op.ins)
        ops: list[Operation] = []
        values: dict[SSAValue, SSAValue] = {}
        for pos, (arg, buf, amap) in enumerate(zip(block.args, operands, op.maps)):
            if pos >= n_in and not arg.uses:
                continue  # the output element is read only if the body uses it
            read = read_text(buf, amap, names, op) if list(op.ins).count(buf) > 1 else None
            amap, indices = with_sizes_as_dims(amap, nest.ivs, list(op.sizes))
            load = lp.LoadOp(buf, amap, indices)
            if read is not None:  # which of the tensor's reads, for `pack A[j, k] at jo`
                load.attributes[READ_ATTR] = StringAttr(read)
            load.location = op.location
            if arg.name_hint is not None:
                load.result.name_hint = arg.name_hint
            values[arg] = load.result
            ops.append(load)
        terminator = block.last_op
        assert isinstance(terminator, t.YieldOp)
        for body_op in block.ops:
            if body_op is terminator:
                continue
            if isinstance(body_op, t.IndexOp):  # the loop's own variable: a split keeps it, as the inner loop's
                values[body_op.result] = nest.ivs[body_op.loop]
                continue
            new = body_op.clone(value_mapper=values)
            for old_res, new_res in zip(body_op.results, new.results):
                values[old_res] = new_res
            ops.append(new)
        for value, buf, amap in zip(terminator.values, op.outs, op.maps[n_in:]):
            store = lp.StoreOp(values.get(value, value), buf, amap, nest.ivs)
            store.location = op.location
            ops.append(store)
        self.emit(nest, op, ops)
        self.rewriter.erase_op(op)

    def fill(self, op: t.FillOp) -> None:
        buf = op.out[0]
        etype = t.element_type(buf)
        if getattr(op.value, "type", None) != etype:
            raise fail(PASS, f"fill value {op.value} does not have the buffer's element type {etype}", op)
        shape = buffer_shape(buf, list(op.sizes), op, PASS)
        names = [f"d{i}" for i in range(len(shape.results))]
        nest = build_nest(shape.results, list(op.sizes), names, op.stage.data, op)
        const = arith.ConstantOp(op.value)  # type: ignore[arg-type]
        store = lp.StoreOp(const.result, buf, AffineMap.identity(len(shape.results)), nest.ivs)
        const.location = store.location = op.location
        self.emit(nest, op, [const, store])
        self.rewriter.erase_op(op)

    def alloc(self, op: t.AllocOp) -> None:
        align = op.align.value.data if op.align is not None else None
        new = lp.AllocOp(list(op.sizes), op.tensor_name.data, op.shape.data, op.result.type, align)
        new.location = op.location
        self.rewriter.replace_op(op, new)
        self.allocs.append(new)

    def lower(self, op: Operation) -> None:
        if isinstance(op, t.GenericOp):
            self.generic(op)
        elif isinstance(op, t.FillOp):
            self.fill(op)
        elif isinstance(op, t.AllocOp):
            self.alloc(op)
        elif isinstance(op, t.RepeatOp):
            self.repeat(op)
        elif t.is_tensorop(op):
            raise fail(PASS, f"cannot lower {op.name} here", op)

    def repeat(self, op: t.RepeatOp) -> None:
        """A time loop `t` from 0 to the count, sequential, of no stage, around the body's nests."""
        loop = lp.ForOp(
            AffineMap(0, 0, (AffineExpr.constant(0),)), [], AffineMap(1, 0, (AffineExpr.dimension(0),)), [op.count],
            1, TIME_LOOP,
        )  # fmt: skip
        loop.location = op.location
        loop.induction_var.name_hint = TIME_LOOP
        self.rewriter.insert_op(loop, InsertPoint.before(op))
        inner = list(op.body.block.ops)
        for child in inner:
            child.detach()
            if isinstance(child, t.AllocOp):  # a generalized op's temporary: one buffer for every step
                self.rewriter.insert_op(child, InsertPoint.before(loop))
            else:
                loop.body.block.add_op(child)
        for child in inner:
            self.lower(child)
        self.rewriter.erase_op(op)

    def run(self) -> None:
        block = self.kernel.body.block
        for op in list(block.ops):
            self.lower(op)
        for op in self.kernel.walk():
            if t.is_tensorop(op):
                raise fail(PASS, f"{op.name} is not at the top level of the kernel function", op)
        if not self.allocs:
            return
        last = block.last_op
        frees: list[Operation] = []
        for alloc in reversed(self.allocs):
            free = lp.FreeOp(alloc.result)
            free.location = alloc.location
            frees.append(free)
        if isinstance(last, func.ReturnOp):
            self.rewriter.insert_op(frees, InsertPoint.before(last))
        else:
            block.add_ops(frees)


@dataclass(frozen=True)
class LowerTensorOpPass(ModulePass):
    """Lower each kernel's tensorop ops (named ops generalized first) to loop nests in the
    ops' loop order: bounds 0 to the domain extent, step 1, loads/stores through the
    indexing maps, allocs freed before returning.  The schedule is not applied; it
    travels as the `irkit.schedule` attribute of each nest's outermost loop."""

    name = "lower-tensorop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = checked_kernels(op, self.name)
        generalize_module(op, self.name)
        for kernel in kernels:
            KernelLowering(kernel).run()
