"""`generalize-tensorop`: named tensorop ops become fills, allocs and generics.

Every named op is replaced, in place, by `tensorop.fill` / `tensorop.alloc` /
`tensorop.generic` ops that compute exactly the same thing.  The *main*
generic (the one iterating the op's own domain) keeps the op's stage name,
loop names, domain, schedule and location; auxiliary ops (fills, the
padding copy, temporaries) get the op's stage name and location but no
schedule.  Every generated op takes the named op's `sizes` operands, and
every map is over them as symbols, as in the named op.

Semantics (loops `dK` are the domain's dimensions, in `loop_names` order):

- `matmul` (loops i, j, k): fill C with 0; generic
  `C[i, j] = C[i, j] + A[i, k] * B[k, j]` (i, j parallel, k reduction).
  The combiner is `arith.addf`/`mulf` for floats, `addi`/`muli` for integers.
- `batch_matmul` (loops b, i, j, k): fill 0;
  `C[b, i, j] += A[b, i, k] * B[b, k, j]`.
- `conv2d` (cross-correlation; params stride `st`, padding `p`, layout):
  with `p > 0` an input temporary `<input>_pad` is allocated first
  (`tensorop.alloc`, row-major, the input's shape with `H + 2p` and
  `W + 2p`), filled with 0, and the input copied into its interior by a
  generic over the input's shape (loops d0..d3) whose output map adds `p`
  to the two spatial indices; the convolution then reads the temporary.
  Then: fill O with 0, and the main generic
  - nchw (loops n, f, y, x, c, r, s):
    `O[n, f, y, x] += I[n, c, y*st + r, x*st + s] * W[f, c, r, s]`;
  - nhwc (loops n, y, x, f, r, s, c):
    `O[n, y, x, f] += I[n, y*st + r, x*st + s, c] * W[r, s, c, f]`.
- `softmax(axis)` (loops = the output's dims; floats only): two
  temporaries of the shape without `axis`, `<stage>_max` and `<stage>_sum`
  (allocs whose shape map is over the size operands), then four generics
  over the op's domain:
  fill max with -inf, `max[..] = maximumf(max[..], X[..])` (axis loop a
  reduction); `P = exp(X - max)` (`arith.subf`, `math.exp`); fill sum
  with 0, `sum[..] = sum[..] + P[..]`; `P = P / sum` (`arith.divf`).
  All four iterate the stage's own loops, so each keeps the stage's loop
  names *and schedule*: a softmax is scheduled as a whole.
- `transpose(perm)` (default: reversed dims; loops = the output's dims):
  output dimension d is input dimension `perm[d]`, i.e.
  `out[d0, ..] = in[e0, ..]` with `e[perm[d]] = d_d`.
- `reduce(dims, kind)` (loops: the kept input dims in order, then the
  reduced dims in increasing order): fill out with the identity (0, or
  -inf / INT32_MIN for max), `out[kept] = combine(out[kept], in[..])` with
  `arith.addf`/`addi` or `arith.maximumf`/`maxsi`.
- `elementwise(fn)` (loops = the output's dims, identity maps):
  `out = fn(ins...)` with add/sub/mul/div/max/min -> `arith.{add,sub,mul,
  div}f`, `maximumf`, `minimumf` (integers: `addi`, `subi`, `muli`,
  `divsi`, `maxsi`, `minsi`), neg -> `arith.negf` (integers: `0 - x`),
  exp/sqrt -> `math.exp`/`math.sqrt` (floats only).

tensorop has no `free`: temporaries live to the end of the kernel, and
`lower-tensorop` frees every allocation before the kernel returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap, AffineSymExpr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irkit import registry
from irkit.diagnostics import DiagnosticError, at_op
from irkit.dialects import loop as lp
from irkit.dialects import tensorop as t
from irkit.frontend.build import is_float
from irkit.kernel_abi import NAME, SHAPE, find_kernels

# --- helpers shared with lower-tensorop ----------------------------------------------


def fail(pass_name: str, message: str, op: Operation) -> DiagnosticError:
    return DiagnosticError([at_op("error", f"{pass_name}: {message}", op)])


def checked_kernels(module: ModuleOp, pass_name: str) -> list[func.FuncOp]:
    """The module's kernel functions; a located diagnostic if there is nothing to work on."""
    for op in module.body.block.ops:
        if op.dialect_name() == "design":
            raise fail(pass_name, "the module holds design IR; run lower-design first", op)
    kernels = find_kernels(module)
    if not kernels:
        raise fail(pass_name, "the module holds no kernel function (func.func) to lower", module)
    return kernels


def symbols_in(expr: AffineExpr) -> set[int]:
    return {e.position for e in expr.dfs() if isinstance(e, AffineSymExpr)}


def buffer_shape(buf: SSAValue, sizes: Sequence[SSAValue], user: Operation, pass_name: str) -> AffineMap:
    """The shape of `buf` as a map `()[s0, ...]` over `sizes` (the user op's size operands).

    A kernel argument's shape is its `irkit.shape` attribute (symbols: the
    kernel's `index` arguments in order); a temporary's is its alloc's
    `shape` (symbols: the alloc's size operands; tensorop or loop alloc).
    """
    if isinstance(buf, OpResult) and isinstance(buf.op, (t.AllocOp, lp.AllocOp)):
        shape, over = buf.op.shape.data, list(buf.op.sizes)
    elif isinstance(buf, BlockArgument) and isinstance(buf.owner.parent_op(), func.FuncOp):
        kernel = buf.owner.parent_op()
        assert isinstance(kernel, func.FuncOp)
        attrs = kernel.arg_attrs.data[buf.index].data if kernel.arg_attrs is not None else {}
        if SHAPE not in attrs or not isinstance(attrs[SHAPE], AffineMapAttr):
            raise fail(pass_name, f"kernel argument {buf.index} has no '{SHAPE}' attribute: its shape is unknown", user)
        shape = attrs[SHAPE].data  # type: ignore[attr-defined]
        over = [a for a in kernel.body.block.args if isinstance(a.type, IndexType)]
    else:
        raise fail(pass_name, "a buffer that is neither a kernel argument nor a tensorop.alloc has no known shape", user)
    if shape.num_dims != 0 or shape.num_symbols != len(over):
        raise fail(pass_name, f"shape map {shape} does not match the {len(over)} sizes it is over", user)
    replacements: list[AffineExpr] = []
    for pos, value in enumerate(over):
        where = [i for i, s in enumerate(sizes) if s is value]
        if where:
            replacements.append(AffineExpr.symbol(where[0]))
        elif any(pos in symbols_in(r) for r in shape.results):
            raise fail(pass_name, "the buffer's shape uses a size that is not among the op's size operands", user)
        else:
            replacements.append(AffineExpr.constant(0))
    return shape.replace_dims_and_symbols((), replacements, 0, len(sizes))


def kernel_of(op: Operation) -> func.FuncOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent


def taken_names(kernel: func.FuncOp | None) -> set[str]:
    """Tensor names in a kernel: arguments' `irkit.name` and allocations' names."""
    if kernel is None:
        return set()
    names: set[str] = set()
    for d in kernel.arg_attrs.data if kernel.arg_attrs is not None else []:
        if NAME in d.data and isinstance(d.data[NAME], StringAttr):
            names.add(d.data[NAME].data)  # type: ignore[attr-defined]
    for op in kernel.walk():
        name = op.properties.get("tensor_name")
        if isinstance(name, StringAttr):
            names.add(name.data)
    return names


def tensor_name(buf: SSAValue) -> str | None:
    if isinstance(buf, OpResult) and isinstance(buf.op, t.AllocOp):
        return buf.op.tensor_name.data
    if isinstance(buf, BlockArgument) and isinstance(buf.owner.parent_op(), func.FuncOp):
        kernel = buf.owner.parent_op()
        attrs = kernel.arg_attrs.data[buf.index].data if kernel.arg_attrs is not None else {}  # type: ignore[union-attr]
        name = attrs.get(NAME)
        if isinstance(name, StringAttr):
            return name.data
    return None


# --- building blocks -----------------------------------------------------------


def _dims(*positions: int) -> list[AffineExpr]:
    return [AffineExpr.dimension(p) for p in positions]


def loop_dims(n: int) -> list[AffineExpr]:
    """The loop variables d0 .. d(n-1) of a named op's domain, for its indexing maps."""
    return _dims(*range(n))


def _map(n_loops: int, results: Sequence[AffineExpr]) -> AffineMapAttr:
    return AffineMapAttr(AffineMap(n_loops, 0, tuple(results)))


def _identity_value(kind: str, etype: Attribute) -> Attribute:
    if kind == "add":
        return FloatAttr(0.0, etype) if is_float(etype) else IntegerAttr(0, etype)  # type: ignore[arg-type]
    if is_float(etype):
        return FloatAttr(float("-inf"), etype)  # type: ignore[arg-type]
    return IntegerAttr(-(2 ** (etype.width.data - 1)), etype)  # type: ignore[attr-defined, arg-type]


def _combine(kind: str, etype: Attribute, acc: SSAValue, value: SSAValue) -> Operation:
    floats = is_float(etype)
    cls = {
        "add": (arith.AddfOp, arith.AddiOp),
        "sub": (arith.SubfOp, arith.SubiOp),
        "mul": (arith.MulfOp, arith.MuliOp),
        "div": (arith.DivfOp, arith.DivSIOp),
        "max": (arith.MaximumfOp, arith.MaxSIOp),
        "min": (arith.MinimumfOp, arith.MinSIOp),
    }[kind][0 if floats else 1]
    return cls(acc, value)


BodyFn = Callable[[Sequence[BlockArgument]], list[Operation]]


@dataclass
class Gen:
    """Builds the replacement ops of one named op."""

    op: t.NamedTensorOp
    pass_name: str = "generalize-tensorop"

    def __post_init__(self) -> None:
        self.ops: list[Operation] = []
        self.sizes = list(self.op.sizes)
        self.stage = self.op.stage.data

    def fail(self, message: str) -> DiagnosticError:
        return fail(self.pass_name, message, self.op)

    def located(self, op: Operation) -> Operation:
        op.location = self.op.location
        self.ops.append(op)
        return op

    def fill(self, buf: SSAValue, value: Attribute) -> None:
        self.located(t.FillOp(buf, self.sizes, value, self.stage))

    def alloc(self, base: str, shape: AffineMap, etype: Attribute) -> SSAValue:
        taken = taken_names(kernel_of(self.op)) | {
            o.tensor_name.data for o in self.ops if isinstance(o, t.AllocOp)
        }
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}{n}"
        rtype = MemRefType(etype, [DYNAMIC_INDEX] * len(shape.results))
        alloc = t.AllocOp(self.sizes, name, AffineMapAttr(shape), rtype)
        alloc.result.name_hint = name
        self.located(alloc)
        return alloc.result

    def generic(
        self,
        ins: Sequence[SSAValue],
        out: SSAValue,
        maps: Sequence[AffineMapAttr],
        iterators: Sequence[str],
        body: BodyFn,
        *,
        domain: AffineMap | None = None,
        loop_names: Sequence[str] | None = None,
        main: bool = True,
    ) -> None:
        """A generic; without `domain`/`loop_names` it iterates the named op's own loops."""
        types = [t.element_type(v) for v in [*ins, out]]
        block = Block(arg_types=types)
        for arg, value in zip(block.args, [*ins, out]):
            name = tensor_name(value)
            if name is not None:
                arg.name_hint = name
        body_ops = body(block.args)
        for body_op in body_ops:
            body_op.location = self.op.location
        block.add_ops(body_ops)
        result = body_ops[-1].results[0] if body_ops else block.args[0]
        yield_op = t.YieldOp(result)
        yield_op.location = self.op.location
        block.add_op(yield_op)
        gen = t.GenericOp(
            ins,
            [out],
            self.sizes,
            stage=self.stage,
            loop_names=[s.data for s in self.op.loop_names.data] if loop_names is None else loop_names,
            domain=self.op.domain if domain is None else AffineMapAttr(domain),
            indexing_maps=maps,
            iterators=iterators,
            body=Region(block),
            schedule=self.op.schedule if main else None,
        )
        self.located(gen)

    # --- the named ops ------------------------------------------------------------

    @property
    def n_loops(self) -> int:
        return len(self.op.domain.data.results)

    def expect_loops(self, n: int) -> None:
        if self.n_loops != n:
            raise self.fail(f"{self.op.name} needs a domain of {n} loops, got {self.n_loops}")

    @property
    def etype(self) -> Attribute:
        return t.element_type(self.op.outs[0])

    def check_types(self) -> None:
        types = {t.element_type(v) for v in [*self.op.ins, *self.op.outs]}
        if len(types) != 1:
            raise self.fail("operands of different element types")

    def multiply_accumulate(self, args: Sequence[BlockArgument]) -> list[Operation]:
        a, b, c = args
        mul = _combine("mul", self.etype, a, b)
        return [mul, _combine("add", self.etype, c, mul.results[0])]

    def contraction(self, in_maps: Sequence[Sequence[AffineExpr]], out_map: Sequence[AffineExpr], n_red: int,
                    ins: Sequence[SSAValue] | None = None) -> None:
        n = self.n_loops
        out = self.op.outs[0]
        self.fill(out, _identity_value("add", self.etype))
        self.generic(
            list(self.op.ins) if ins is None else ins,
            out,
            [_map(n, m) for m in in_maps] + [_map(n, out_map)],
            [t.PARALLEL] * (n - n_red) + [t.REDUCTION] * n_red,
            self.multiply_accumulate,
        )

    def matmul(self) -> None:
        self.expect_loops(3)
        i, j, k = _dims(0, 1, 2)
        self.contraction([[i, k], [k, j]], [i, j], 1)

    def batch_matmul(self) -> None:
        self.expect_loops(4)
        b, i, j, k = _dims(0, 1, 2, 3)
        self.contraction([[b, i, k], [b, k, j]], [b, i, j], 1)

    def conv2d(self) -> None:
        op = self.op
        self.expect_loops(7)
        stride = int(op.param("stride", 1))  # type: ignore[arg-type]
        pad = int(op.param("padding", 0))  # type: ignore[arg-type]
        nchw = op.param("layout", "nchw") == "nchw"
        image = op.ins[0]
        if pad > 0:
            image = self.pad_input(image, pad, [2, 3] if nchw else [1, 2])
        if nchw:  # n, f, y, x, c, r, s
            n, f, y, x, c, r, s = _dims(*range(7))
            in_map = [n, c, y * stride + r, x * stride + s]
            w_map, out_map = [f, c, r, s], [n, f, y, x]
        else:  # n, y, x, f, r, s, c
            n, y, x, f, r, s, c = _dims(*range(7))
            in_map = [n, y * stride + r, x * stride + s, c]
            w_map, out_map = [r, s, c, f], [n, y, x, f]
        self.contraction([in_map, w_map], out_map, 3, ins=[image, op.ins[1]])

    def pad_input(self, image: SSAValue, pad: int, spatial: list[int]) -> SSAValue:
        shape = buffer_shape(image, self.sizes, self.op, self.pass_name)
        padded = AffineMap(0, len(self.sizes), tuple(
            e + 2 * pad if i in spatial else e for i, e in enumerate(shape.results)
        ))
        etype = t.element_type(image)
        temp = self.alloc(f"{tensor_name(image) or self.stage}_pad", padded, etype)
        self.fill(temp, _identity_value("add", etype))
        dims = _dims(0, 1, 2, 3)
        self.generic(
            [image], temp,
            [_map(4, dims), _map(4, [d + pad if i in spatial else d for i, d in enumerate(dims)])],
            [t.PARALLEL] * 4,
            lambda args: [],
            domain=shape, loop_names=[f"d{i}" for i in range(4)], main=False,
        )
        return temp

    def softmax(self) -> None:
        op = self.op
        rank = t.memref_rank(op.outs[0])
        self.expect_loops(rank)
        if not is_float(self.etype):
            raise self.fail(f"softmax needs floating-point operands, got {self.etype}")
        axis = int(op.param("axis", -1)) % rank  # type: ignore[arg-type]
        x, out = op.ins[0], op.outs[0]
        dims = _dims(*range(rank))
        kept = [d for i, d in enumerate(dims) if i != axis]
        domain = op.domain.data
        reduced = AffineMap(0, len(self.sizes), tuple(e for i, e in enumerate(domain.results) if i != axis))
        mx = self.alloc(f"{self.stage}_max", reduced, self.etype)
        sm = self.alloc(f"{self.stage}_sum", reduced, self.etype)
        full, part = _map(rank, dims), _map(rank, kept)
        reduce_kinds = [t.REDUCTION if i == axis else t.PARALLEL for i in range(rank)]
        et = self.etype

        def exp_diff(args: Sequence[BlockArgument]) -> list[Operation]:
            sub = arith.SubfOp(args[0], args[1])
            return [sub, math.ExpOp(sub.results[0])]

        self.fill(mx, _identity_value("max", et))
        self.generic([x], mx, [full, part], reduce_kinds, lambda a: [_combine("max", et, a[1], a[0])])
        self.generic([x, mx], out, [full, part, full], [t.PARALLEL] * rank, exp_diff)
        self.fill(sm, _identity_value("add", et))
        self.generic([out], sm, [full, part], reduce_kinds, lambda a: [_combine("add", et, a[1], a[0])])
        self.generic([sm], out, [part, full], [t.PARALLEL] * rank, lambda a: [arith.DivfOp(a[1], a[0])])

    def transpose(self) -> None:
        rank = t.memref_rank(self.op.outs[0])
        self.expect_loops(rank)
        perm = [int(p) for p in self.op.param("perm", list(reversed(range(rank))))]  # type: ignore[union-attr]
        inverse = [perm.index(e) for e in range(rank)]
        self.generic(
            [self.op.ins[0]], self.op.outs[0],
            [_map(rank, _dims(*inverse)), _map(rank, _dims(*range(rank)))],
            [t.PARALLEL] * rank,
            lambda args: [],
        )

    def reduce(self) -> None:
        rank = t.memref_rank(self.op.ins[0])
        self.expect_loops(rank)
        reduced = sorted(int(d) for d in self.op.param("dims", []))  # type: ignore[union-attr]
        kept = [e for e in range(rank) if e not in reduced]
        loop_of = {e: pos for pos, e in enumerate(kept + reduced)}
        kind = str(self.op.param("kind", "add"))
        et = self.etype
        self.fill(self.op.outs[0], _identity_value(kind, et))
        self.generic(
            [self.op.ins[0]], self.op.outs[0],
            [_map(rank, _dims(*(loop_of[e] for e in range(rank)))), _map(rank, _dims(*range(len(kept))))],
            [t.PARALLEL] * len(kept) + [t.REDUCTION] * len(reduced),
            lambda a: [_combine(kind, et, a[1], a[0])],
        )

    def elementwise(self) -> None:
        rank = t.memref_rank(self.op.outs[0])
        self.expect_loops(rank)
        fn = str(self.op.param("fn"))
        et = self.etype
        if fn in ("exp", "sqrt") and not is_float(et):
            raise self.fail(f"elementwise {fn} needs floating-point operands, got {et}")

        def body(args: Sequence[BlockArgument]) -> list[Operation]:
            if fn in ("exp", "sqrt"):
                return [(math.ExpOp if fn == "exp" else math.SqrtOp)(args[0])]
            if fn == "neg":
                if is_float(et):
                    return [arith.NegfOp(args[0])]
                zero = arith.ConstantOp(IntegerAttr(0, et))  # type: ignore[arg-type]
                return [zero, arith.SubiOp(zero.results[0], args[0])]
            return [_combine(fn, et, args[0], args[1])]

        n_in = len(self.op.ins)
        self.generic(
            list(self.op.ins), self.op.outs[0],
            [_map(rank, _dims(*range(rank)))] * (n_in + 1),
            [t.PARALLEL] * rank,
            body,
        )

    def run(self) -> list[Operation]:
        self.check_types()
        kind = self.op.name.removeprefix("tensorop.")
        form = GENERALIZERS.get(kind)
        if form is None:
            raise self.fail(
                f"no generic form is registered for {self.op.name}; give its named operation a "
                "`generalize` function (see docs/extending.md)"
            )
        form(self)
        return self.ops


# The generic form of each named op: fn(gen) appends the fills, allocs and generics computing
# gen.op to gen.ops (through gen.fill / gen.alloc / gen.generic / gen.contraction).  irkit's own
# are the Gen methods of the same name; irkit.extend.register_named_op adds plugins'.
GENERALIZERS: dict[str, Callable[[Gen], None]] = registry.GENERALIZERS
GENERALIZERS |= {
    name: getattr(Gen, name)
    for name in ("matmul", "batch_matmul", "conv2d", "softmax", "transpose", "reduce", "elementwise")
}


def generalize_op(op: t.NamedTensorOp, pass_name: str = "generalize-tensorop") -> list[Operation]:
    """The fills, allocs and generics computing what `op` computes (not inserted)."""
    return Gen(op, pass_name).run()


def generalize_module(module: ModuleOp, pass_name: str = "generalize-tensorop") -> None:
    """Replace every named tensorop op in `module` by its generalization, in place.

    `pass_name` prefixes the diagnostics (lower-tensorop runs this too)."""
    rewriter = Rewriter()
    for op in [o for o in module.walk() if isinstance(o, t.NamedTensorOp)]:
        new_ops = generalize_op(op, pass_name)
        rewriter.insert_op(new_ops, InsertPoint.before(op))
        rewriter.erase_op(op)


@dataclass(frozen=True)
class GeneralizeTensorOpPass(ModulePass):
    """Rewrite every named tensorop op (matmul, batch_matmul, conv2d, softmax, transpose,
    reduce, elementwise) as tensorop.fill / tensorop.alloc / tensorop.generic ops computing
    the same thing; the main generic keeps the stage, loop names, schedule and location."""

    name = "generalize-tensorop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        checked_kernels(op, self.name)
        generalize_module(op)

