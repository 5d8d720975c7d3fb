"""What the schedule directives share: finding a stage's loops, splitting and
permuting loops, the legality analyses, and located diagnostics.

Terms.  A *nest* of a stage is an outermost `loop.for` whose `stage` is the
stage's name (its parent is not a loop of the same stage) with everything
inside it.  A *chain* is a perfectly nested run of loops: each holds exactly
one op, the next loop.  A *band* is the part of a chain that a directive
permutes.  Loop variables are found by the loops' `loop_name`.

Dependence rules (`check_permutation`, `check_parallel`) are conservative
and read only the IR: index maps, loop bounds, the ops of a body.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.dialects import loop as lp
from irkit.dialects.loop import determined_by, enclosing_loops, linear_form, store_depends_on
from irkit.kernel_abi import arg_names, value_name
from irkit.passes.lower_tensorop import SCHEDULE_ATTR

# Combiners whose accumulation order may change (associative and commutative;
# floating-point sums then differ by rounding only, as with any blocking).
REDUCTION_OPS = frozenset(
    {
        "arith.addf",
        "arith.addi",
        "arith.mulf",
        "arith.muli",
        "arith.maximumf",
        "arith.maxnumf",
        "arith.maxsi",
        "arith.maxui",
        "arith.minimumf",
        "arith.minnumf",
        "arith.minsi",
        "arith.minui",
    }
)
DEFAULT_SIMD_BITS = 512
# Buffers created inside a loop are private to each of its iterations.
PRIVATE_BUFFERS = (lp.AllocOp, lp.LocalOp)


# ------------------------------------------------------------ diagnostics


def parse_where(where: str) -> tuple[str, int, int]:
    """("file", line, col) of a "file:line:col" location; line 0 if it has none."""
    parts = where.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    return where or "<schedule>", 0, 0


def diagnostic(where: str, message: str, focus: str | None = None, severity: str = "error") -> Diagnostic:
    file, line, col = parse_where(where)
    return Diagnostic(severity, message, file, line, col, focus=focus if line else None)


def fail(where: str, message: str, focus: str | None = None) -> DiagnosticError:
    """An error at the directive's location (`raise fail(...)`); `focus` is the word to underline."""
    return DiagnosticError([diagnostic(where, message, focus)])


# ------------------------------------------------------ directive operands


def _value(d: Mapping[str, object], key: str) -> object:
    if key not in d:
        raise KeyError(key)
    return d[key]


def get_str(d: Mapping[str, object], key: str, default: str | None = None) -> str:
    if key not in d:
        if default is None:
            raise KeyError(key)
        return default
    v = d[key]
    return v.data if isinstance(v, StringAttr) else str(v)


def get_int(d: Mapping[str, object], key: str, default: int | None = None) -> int | None:
    if key not in d:
        return default
    v = d[key]
    if isinstance(v, IntegerAttr):
        return v.value.data
    if isinstance(v, IntAttr):
        return v.data
    assert isinstance(v, int), f"directive operand '{key}' is not an integer: {v}"
    return v


def get_strs(d: Mapping[str, object], key: str) -> list[str]:
    v = _value(d, key)
    if isinstance(v, ArrayAttr):
        return [x.data if isinstance(x, StringAttr) else str(x) for x in v.data]
    if isinstance(v, str):
        return [v]
    return [str(x) for x in v]  # type: ignore[union-attr]


def get_ints(d: Mapping[str, object], key: str) -> list[int]:
    v = _value(d, key)
    if isinstance(v, DenseArrayBase):
        return [int(x) for x in v.get_values()]
    if isinstance(v, ArrayAttr):
        return [x.value.data if isinstance(x, IntegerAttr) else int(x.data) for x in v.data]  # type: ignore[attr-defined]
    if isinstance(v, int):
        return [v]
    return [int(x) for x in v]  # type: ignore[union-attr]


def make_directive(kind: str, where: str = "", **operands: object) -> dict[str, Attribute]:
    """A directive dictionary as `lower-tensorop` writes it, from Python values."""
    out: dict[str, Attribute] = {"kind": StringAttr(kind)}
    for key, value in operands.items():
        if value is None:
            continue
        if isinstance(value, str):
            out[key] = StringAttr(value)
        elif isinstance(value, bool):
            raise TypeError(key)
        elif isinstance(value, int):
            out[key] = IntegerAttr(value, i64)
        elif key == "factors":
            out[key] = DenseArrayBase.from_list(i64, [int(v) for v in value])  # type: ignore[union-attr]
        else:
            out[key] = ArrayAttr([StringAttr(str(v)) for v in value])  # type: ignore[union-attr]
    if where:
        out["loc"] = StringAttr(where)
    return out


def directive_of(attr: Attribute) -> dict[str, Attribute]:
    assert isinstance(attr, DictionaryAttr), f"a schedule directive must be a dictionary, got {attr}"
    return dict(attr.data)


# ---------------------------------------------------------- finding loops


def kernels(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.walk() if isinstance(op, func.FuncOp)]


def is_nest_root(loop: lp.ForOp) -> bool:
    parent = loop.parent_op()
    return not (isinstance(parent, lp.ForOp) and parent.stage == loop.stage)


def stage_of(loop: lp.ForOp) -> str | None:
    return loop.stage.data if loop.stage is not None else None


def stage_nests(kernel: Operation, stage: str) -> list[lp.ForOp]:
    """The outermost loops of `stage`'s nests, in program order (fill nests included).

    Inside `indexed(kernel)` (apply-schedule) this costs the size of the stage;
    otherwise it walks the whole kernel."""
    index = active_index(kernel)
    if index is not None:
        return index.nests(stage)
    return walk_nests(kernel, stage)


def walk_nests(kernel: Operation, stage: str) -> list[lp.ForOp]:
    """`stage_nests` by walking the whole kernel."""
    return [op for op in kernel.walk() if isinstance(op, lp.ForOp) and stage_of(op) == stage and is_nest_root(op)]


def scheduled_nests(kernel: Operation, stage: str) -> list[lp.ForOp]:
    """The nests a stage's schedule applies to: those carrying `irkit.schedule`, or, if
    none does (the schedule was removed, or the IR is hand-written), all of them."""
    nests = stage_nests(kernel, stage)
    marked = [n for n in nests if SCHEDULE_ATTR in n.attributes]
    return marked or nests


# ------------------------------------------------------------ the nest index

_INDEXES: ContextVar[tuple[NestIndex, ...]] = ContextVar("irkit_nest_indexes", default=())


class NestIndex:
    """Every stage's nest roots in one kernel, found by one walk, so that a lookup during
    apply-schedule costs the size of the stage instead of the kernel (one walk per lookup
    made a document of 1,000 one-line statements spend 20 s in apply-schedule).

    Roots are held by identity.  What keeps them right while directives run:

    * A stage being shaped is *open* (`open(stage)`): each lookup re-finds its roots by
      walking only the ops between two anchors, the ops just before and after its nests
      in their block.  Its directives transform only its own loops (the directive
      contract, `irkit.passes.schedule`), so the anchors stay where they are.
    * Placements (compute_at) and fusion move nests, the same ops, into other loops, where
      they are still roots of their stage; what they erase is caught below.

    Every lookup checks what it returns (attached, inside this kernel, still a root of the
    stage); anything else, or anchors that moved, rebuilds the index with one full walk
    (`rebuilds` counts them: a correct result always, a slow one only when a transformation
    breaks the assumptions above).
    """

    def __init__(self, kernel: Operation):
        self.kernel = kernel
        self.rebuilds = 0
        self._roots: dict[str, list[lp.ForOp]] = {}
        self._open: dict[str, tuple[Block, Operation | None, Operation | None] | None] = {}
        self._build()

    def _build(self) -> None:
        roots: dict[str, list[lp.ForOp]] = {}
        for op in self.kernel.walk():
            if isinstance(op, lp.ForOp) and op.stage is not None and is_nest_root(op):
                roots.setdefault(op.stage.data, []).append(op)
        self._roots = roots

    def _rebuild(self) -> None:
        self.rebuilds += 1
        self._build()
        for stage in list(self._open):
            self._open[stage] = self._anchors(stage)

    def stages(self) -> list[str]:
        """The stages that have nests, in program order of their first nest."""
        return list(self._roots)

    def nests(self, stage: str) -> list[lp.ForOp]:
        if stage in self._open:
            found = self._scan(stage)
            if found is None:
                self._rebuild()
                found = self._scan(stage)
            if found is not None:
                self._roots[stage] = found
                return list(found)
            return walk_nests(self.kernel, stage)
        roots = self._roots.get(stage, [])
        if not all(self._valid(r, stage) for r in roots):
            self._rebuild()
            roots = self._roots.get(stage, [])
        return list(roots)

    def _valid(self, root: lp.ForOp, stage: str) -> bool:
        return (
            root.parent is not None and stage_of(root) == stage and is_nest_root(root) and self.kernel.is_ancestor(root)
        )

    def open(self, stage: str) -> None:
        """`stage` is about to be transformed: look its roots up afresh until `close`."""
        self._open[stage] = self._anchors(stage)

    def close(self, stage: str) -> None:
        if stage in self._open:
            self.nests(stage)
            del self._open[stage]

    def _anchors(self, stage: str) -> tuple[Block, Operation | None, Operation | None] | None:
        """(block, op before the stage's nests, op after them) if the nests are one run of
        ops of a block (no loop of another stage between them), else None."""
        roots = self._roots.get(stage, [])
        if not roots:
            return None
        block = roots[0].parent_block()
        if block is None or any(r.parent_block() is not block for r in roots):
            return None
        mine = set(roots)
        op: Operation | None = roots[0]
        while op is not roots[-1]:
            op = op.next_op if op is not None else None
            if op is None or (isinstance(op, lp.ForOp) and op not in mine):
                return None
        return block, roots[0].prev_op, roots[-1].next_op

    def _scan(self, stage: str) -> list[lp.ForOp] | None:
        """The stage's roots between its anchors; None if the anchors moved."""
        anchors = self._open.get(stage)
        if anchors is None:
            return walk_nests(self.kernel, stage)
        block, before, after = anchors
        if any(a is not None and a.parent_block() is not block for a in (before, after)):
            return None
        op = before.next_op if before is not None else block.first_op
        out: list[lp.ForOp] = []
        while op is not None and op is not after:
            out.extend(x for x in op.walk() if isinstance(x, lp.ForOp) and stage_of(x) == stage and is_nest_root(x))
            op = op.next_op
        if after is not None and op is None:
            return None
        return out


@contextmanager
def indexed(kernel: Operation) -> Iterator[NestIndex]:
    """Within the block, `stage_nests(kernel, ...)` is answered by a `NestIndex` of `kernel`."""
    index = NestIndex(kernel)
    token = _INDEXES.set((*_INDEXES.get(), index))
    try:
        yield index
    finally:
        _INDEXES.reset(token)


def active_index(kernel: Operation) -> NestIndex | None:
    for index in reversed(_INDEXES.get()):
        if index.kernel is kernel:
            return index
    return None


def nest_loops(root: lp.ForOp) -> list[lp.ForOp]:
    """The loops of a nest that belong to its stage, outermost first (pre-order)."""
    return [op for op in root.walk() if isinstance(op, lp.ForOp) and op.stage == root.stage]


def name(loop: lp.ForOp) -> str:
    return loop.loop_name.data


def loop_names(root: lp.ForOp) -> list[str]:
    return [name(loop) for loop in nest_loops(root)]


def find_loop(root: lp.ForOp, loop_name: str) -> lp.ForOp | None:
    for loop in nest_loops(root):
        if name(loop) == loop_name:
            return loop
    return None


def order_text(root: lp.ForOp) -> str:
    return ", ".join(loop_names(root))


def targets(kernel: Operation, stage: str, names: Sequence[str], where: str) -> list[tuple[lp.ForOp, list[lp.ForOp]]]:
    """For each nest of `stage` that has the named loops: (its root, the loops in `names` order).

    Nests with none of them are left alone (a fill nest); a nest with some of
    them only, or no nest with any, is an error at `where`.
    """
    nests = scheduled_nests(kernel, stage)
    if not nests:
        raise fail(where, f"no loops of stage '{stage}' in function @{_kernel_name(kernel)}", stage)
    out: list[tuple[lp.ForOp, list[lp.ForOp]]] = []
    for root in nests:
        found = [find_loop(root, n) for n in names]
        if all(f is None for f in found):
            continue
        missing = [n for n, f in zip(names, found) if f is None]
        if missing:
            raise fail(
                where,
                f"unknown loop '{missing[0]}' in stage '{stage}'; its loops are: {order_text(root)}",
                missing[0],
            )
        out.append((root, [f for f in found if f is not None]))
    if not out:
        known = order_text(nests[-1])
        raise fail(where, f"unknown loop '{names[0]}' in stage '{stage}'; its loops are: {known}", names[0])
    return out


def _kernel_name(kernel: Operation) -> str:
    return kernel.sym_name.data if isinstance(kernel, func.FuncOp) else kernel.name


def check_fresh(kernel: Operation, stage: str, new: Sequence[str], where: str) -> None:
    """New loop names must not be used in the stage already, nor twice."""
    existing = {name(loop) for root in stage_nests(kernel, stage) for loop in nest_loops(root)}
    for n in new:
        if not n or not SSAValue.is_valid_name(n) or not n.replace("_", "a").isalnum() or n[0].isdigit():
            raise fail(where, f"'{n}' is not a valid loop name", n or None)
        if n in existing or list(new).count(n) > 1:
            raise fail(where, f"new loop name '{n}' is already used in stage '{stage}'", n)


# -------------------------------------------------------------- chains


def chain_below(loop: lp.ForOp) -> list[lp.ForOp]:
    """`loop` and the loops perfectly nested in it, outermost first."""
    chain = [loop]
    while True:
        ops = list(chain[-1].body.block.ops)
        if len(ops) != 1 or not isinstance(ops[0], lp.ForOp):
            return chain
        chain.append(ops[0])


def band(loops: Sequence[lp.ForOp], where: str, what: str) -> list[lp.ForOp]:
    """The chain from the outermost to the innermost of `loops`, which must be perfectly nested."""
    by_depth = sorted(loops, key=lambda lo: len(enclosing_loops(lo)))
    top = by_depth[0]
    chain = chain_below(top)
    members = set(map(id, chain))
    for loop in by_depth[1:]:
        if id(loop) in members:
            continue
        if not top.is_ancestor(loop):
            raise fail(
                where, f"{what}: loops '{name(top)}' and '{name(loop)}' are not nested in one another", name(loop)
            )
        blocker = next(lo for lo in chain if lo.is_ancestor(loop))
        raise fail(
            where,
            f"{what}: '{name(top)}' and '{name(loop)}' are not perfectly nested: '{name(blocker)}' holds other "
            "operations besides the next loop",
            name(loop),
        )
    deepest = max(loops, key=lambda lo: len(enclosing_loops(lo)))
    return chain[: chain.index(deepest) + 1]


def permute(chain: list[lp.ForOp], order: list[lp.ForOp]) -> None:
    """Re-nest the perfectly nested `chain` (outermost first) in `order` (a permutation of it).

    The loops keep their variables, bounds and facts, so the body is unchanged;
    discardable attributes of the outermost loop (`irkit.schedule`) stay outermost.
    """
    if [id(x) for x in chain] == [id(x) for x in order]:
        return
    rest = list(chain[-1].body.block.ops)
    for op in rest:
        op.detach()
    for loop in reversed(chain[1:]):
        loop.detach()
    top = chain[0]
    if order[0] is not top:
        Rewriter.insert_op(order[0], InsertPoint.before(top))
        top.detach()
        for key, value in list(top.attributes.items()):
            order[0].attributes[key] = value
            del top.attributes[key]
    for outer, inner in zip(order, order[1:]):
        outer.body.block.add_op(inner)
    order[-1].body.block.add_ops(rest)


# ------------------------------------------------------------- splitting


def divisors(kernel: Operation) -> dict[SSAValue, int]:
    """Sizes the document promises to be multiples of something (`assume { M % 64 == 0 }`)."""
    if not isinstance(kernel, func.FuncOp):
        return {}
    assume = kernel.attributes.get("irkit.assume")
    if not isinstance(assume, DictionaryAttr):
        return {}
    div = assume.data.get("divisible")
    if not isinstance(div, DictionaryAttr):
        return {}
    out: dict[SSAValue, int] = {}
    for arg, size in zip(kernel.body.block.args, arg_names(kernel)):
        value = div.data.get(size) if size else None
        if isinstance(value, IntegerAttr) and value.value.data > 0:
            out[arg] = value.value.data
    return out


def _shift(expr: AffineExpr, n_dims: int, by: int) -> AffineExpr:
    return expr.replace_dims_and_symbols([AffineExpr.dimension(i + by) for i in range(n_dims)], [])


def _whole_blocks(loop: lp.ForOp, block: int, divisible: Mapping[SSAValue, int]) -> bool:
    """Is the trip range of `loop` a multiple of `block` for every value of the sizes?"""
    lower, upper = loop.lower.data, loop.upper.data
    if len(lower.results) != 1 or len(upper.results) != 1:
        return False
    lo = linear_form(lower.results[0])
    hi = linear_form(upper.results[0])
    if lo is None or hi is None or lo[0]:
        return False
    if not hi[0]:
        return (hi[1] - lo[1]) % block == 0
    if (hi[1] - lo[1]) % block != 0:
        return False
    for dim, k in hi[0].items():
        d = divisible.get(loop.upper_operands[dim])
        if d is None or (k * d) % block != 0:
            return False
    return True


def split_loop(
    loop: lp.ForOp,
    factor: int,
    outer_name: str,
    inner_name: str,
    where: str,
    divisible: Mapping[SSAValue, int] | None = None,
) -> tuple[lp.ForOp, lp.ForOp]:
    """Replace `for v = LB to UB step s` by

        for vo = LB to UB step s*F            (loop_name outer_name)
          for vi = vo to min(vo + s*F, UB) step s   (loop_name inner_name; vi is v's variable)

    so the body, which still uses `v`'s variable (now `vi`), is unchanged.  The
    `min` is dropped when the range is a whole number of blocks (constant
    bounds, or sizes assumed divisible).  `parallel` stays on the outer loop,
    `vector` and `unroll` go to the inner one; both get `origin = where`.
    """
    step = loop.step_value
    block = step * factor
    stage = stage_of(loop)
    outer = lp.ForOp(
        loop.lower.data,
        list(loop.lower_operands),
        loop.upper.data,
        list(loop.upper_operands),
        block,
        outer_name,
        stage=stage,
        parallel=loop.parallel is not None,
        origin=where or None,
    )
    outer.location = loop.location
    vo = outer.induction_var
    if SSAValue.is_valid_name(outer_name):
        vo.name_hint = outer_name
    upper = loop.upper.data
    n = len(loop.upper_operands)
    d0 = AffineExpr.dimension(0)
    if factor == 1 or _whole_blocks(loop, block, divisible or {}):
        inner_upper, inner_ops = AffineMap(1, 0, (d0 + block,)), [vo]
    else:
        results = (d0 + block, *(_shift(r, n, 1) for r in upper.results))
        inner_upper, inner_ops = AffineMap(n + 1, 0, results), [vo, *loop.upper_operands]
    body = loop.detach_region(loop.body)
    inner = lp.ForOp(
        AffineMap(1, 0, (d0,)),
        [vo],
        inner_upper,
        inner_ops,
        step,
        inner_name,
        body,
        stage=stage,
        vector=loop.vector.value.data if loop.vector is not None else None,
        unroll=loop.unroll.value.data if loop.unroll is not None else None,
        origin=where or None,
    )
    inner.location = loop.location
    if SSAValue.is_valid_name(inner_name):
        inner.induction_var.name_hint = inner_name
    outer.body.block.add_op(inner)
    for key, value in loop.attributes.items():
        outer.attributes[key] = value
    Rewriter.insert_op(outer, InsertPoint.before(loop))
    loop.detach()
    loop.erase()
    return outer, inner


# ------------------------------------------------------- reading accesses


def expr_text(expr: AffineExpr, names: Sequence[str]) -> str:
    form = linear_form(expr)
    if form is None:
        text = str(expr)
        for i in reversed(range(len(names))):
            text = text.replace(f"d{i}", names[i])
        return text
    terms, const = form
    out = ""
    for dim, k in sorted(terms.items()):
        piece = names[dim] if abs(k) == 1 else f"{abs(k)} * {names[dim]}"
        out = (piece if k > 0 else f"-{piece}") if not out else out + (f" + {piece}" if k > 0 else f" - {piece}")
    if not out:
        return str(const)
    if const:
        out += f" + {const}" if const > 0 else f" - {-const}"
    return out


def access_text(op: lp.LoadOp | lp.StoreOp) -> str:
    names = [value_name(v) for v in op.indices]
    return f"{value_name(op.memref)}[{', '.join(expr_text(r, names) for r in op.map.data.results)}]"


def bound_text(amap: AffineMap, operands: Sequence[SSAValue], fn: str) -> str:
    names = [value_name(v) for v in operands]
    parts = [expr_text(r, names) for r in amap.results]
    return parts[0] if len(parts) == 1 else f"{fn}({', '.join(parts)})"


def range_text(loop: lp.ForOp) -> str:
    lo = bound_text(loop.lower.data, loop.lower_operands, "max")
    hi = bound_text(loop.upper.data, loop.upper_operands, "min")
    return f"'{name(loop)}' runs from {lo} to {hi}"


class AccessKeys:
    """Index maps of accesses made comparable: every distinct index value becomes one
    dimension, so `A[(d0, d1) -> (d0)](i, j)` and `A[(d0) -> (d0)](i)` get the same key."""

    def __init__(self) -> None:
        self.values: list[SSAValue] = []

    def key(self, op: lp.LoadOp | lp.StoreOp) -> tuple[str, ...]:
        dims = []
        for v in op.indices:
            if not any(v is u for u in self.values):
                self.values.append(v)
            dims.append(AffineExpr.dimension(next(i for i, u in enumerate(self.values) if u is v)))
        n = len(self.values)
        return tuple(str(r.replace_dims_and_symbols(dims, []).simplify(n, 0)) for r in op.map.data.results)

    def used_values(self, op: lp.LoadOp | lp.StoreOp) -> list[SSAValue]:
        amap = op.map.data
        return [v for pos, v in enumerate(op.indices) if any(pos in r.used_dims() for r in amap.results)]


def private_buffers(region_op: Operation) -> set[SSAValue]:
    return {op.results[0] for op in region_op.walk() if isinstance(op, PRIVATE_BUFFERS)}


def accesses_in(ops: Iterable[Operation]) -> list[lp.LoadOp | lp.StoreOp]:
    out: list[lp.LoadOp | lp.StoreOp] = []
    for top in ops:
        out.extend(op for op in top.walk() if isinstance(op, lp.LoadOp | lp.StoreOp))
    return out


def is_accumulation(store: lp.StoreOp, load: lp.LoadOp) -> bool:
    """`X[f] = op(X[f], e)` with an associative, commutative `op` and `e` not using the load."""
    comb = store.value.owner
    if not isinstance(comb, Operation) or comb.name not in REDUCTION_OPS or len(comb.operands) != 2:
        return False
    return list(comb.operands).count(load.result) == 1 and load.result.has_one_use() and comb.results[0].has_one_use()


def _stored_buffers(accs: Sequence[lp.LoadOp | lp.StoreOp], private: set[SSAValue]) -> list[SSAValue]:
    out: list[SSAValue] = []
    for a in accs:
        if isinstance(a, lp.StoreOp) and a.memref not in private and not any(a.memref is b for b in out):
            out.append(a.memref)
    return out


def _first_conflict(
    accs: Sequence[lp.LoadOp | lp.StoreOp], keys: AccessKeys
) -> tuple[lp.LoadOp | lp.StoreOp, lp.LoadOp | lp.StoreOp] | None:
    """Two accesses to one buffer at different indices (the first a store), if any."""
    store = next(a for a in accs if isinstance(a, lp.StoreOp))
    k = keys.key(store)
    for a in accs:
        if keys.key(a) != k:
            return store, a
    return None


# ------------------------------------------------------------- legality


def check_permutation(chain: list[lp.ForOp], order: list[lp.ForOp], where: str, what: str) -> None:
    """Refuse a re-nesting of the perfectly nested `chain` in `order` that could change results.

    1. Bounds: a loop whose bounds use another loop's variable must stay inside it
       (`ki` runs from `ko` to `min(ko + 128, K)`: `ki` cannot move outside `ko`).
    2. A buffer written in the band and also read or written at another index
       there: iterations depend on each other (one reads what another wrote),
       and any change of their order is refused.
    3. A buffer written at one index only, by loops that do not all appear in it
       (the others, "free" loops, revisit the element): the order of two free
       loops may change only if the element is accumulated with an
       associative, commutative operation (`+`, `*`, max, min), whose result
       does not depend on the order (floating-point sums up to rounding).
    """
    pos = {id(loop): k for k, loop in enumerate(order)}
    band_ivs = {loop.induction_var: loop for loop in chain}
    for loop in order:
        for v in (*loop.lower_operands, *loop.upper_operands):
            other = band_ivs.get(v)
            if other is not None and pos[id(other)] > pos[id(loop)]:
                raise fail(
                    where,
                    f"{what} would move '{name(loop)}' outside '{name(other)}', but the bounds of '{name(loop)}' "
                    f"depend on '{name(other)}' ({range_text(loop)})",
                    name(loop),
                )
    swapped = [(a, b) for i, a in enumerate(chain) for b in chain[i + 1 :] if pos[id(a)] > pos[id(b)]]
    if not swapped:
        return
    body = list(chain[-1].body.block.ops)
    accs = accesses_in(body)
    private = {op.results[0] for top in body for op in top.walk() if isinstance(op, PRIVATE_BUFFERS)}
    keys = AccessKeys()
    for buf in _stored_buffers(accs, private):
        mine = [a for a in accs if a.memref is buf]
        conflict = _first_conflict(mine, keys)
        if conflict is not None:
            st, other = conflict
            verb = "read" if isinstance(other, lp.LoadOp) else "written"
            raise fail(
                where,
                f"{what} would reorder dependent iterations: '{value_name(buf)}' is written at {access_text(st)} "
                f"and {verb} at {access_text(other)} inside the loops being reordered, so changing their order "
                "could change which values are read",
                name(swapped[0][0]),
            )
        stores = [a for a in mine if isinstance(a, lp.StoreOp)]
        loads = [a for a in mine if isinstance(a, lp.LoadOp)]
        used = keys.used_values(stores[0])
        free = {id(loop) for loop in chain if not any(determined_by(v, loop.induction_var) for v in used)}
        pair = next(((a, b) for a, b in swapped if id(a) in free and id(b) in free), None)
        if pair is None:
            continue
        if len(stores) == 1 and len(loads) == 1 and is_accumulation(stores[0], loads[0]):
            continue
        a, b = pair
        raise fail(
            where,
            f"{what} would swap '{name(a)}' and '{name(b)}', which both revisit the element "
            f"{access_text(stores[0])}, and its update is not an associative reduction (+, *, max, min): "
            "the order of the updates matters",
            name(a),
        )


def check_parallel(loop: lp.ForOp, where: str) -> None:
    """Refuse `parallel` where iterations would race: a nested parallel loop, a store that
    does not depend on the loop (a reduction loop), or a buffer written at one index and
    accessed at another inside the loop (one iteration would read another's result)."""
    lname = name(loop)
    for outer in enclosing_loops(loop):
        if outer.parallel is not None:
            raise fail(
                where,
                f"parallel '{lname}': '{lname}' is nested inside the parallel loop '{name(outer)}'; "
                "only one loop of a nest can be distributed over the cores",
                lname,
            )
    for inner in loop.body.walk():
        if isinstance(inner, lp.ForOp) and inner.parallel is not None:
            raise fail(
                where,
                f"parallel '{lname}': the parallel loop '{name(inner)}' is nested inside '{lname}'; "
                "only one loop of a nest can be distributed over the cores",
                lname,
            )
    private = private_buffers(loop)
    accs = accesses_in(loop.body.block.ops)
    iv = loop.induction_var
    for st in accs:
        if isinstance(st, lp.StoreOp) and st.memref not in private and not store_depends_on(st, iv):
            stage = f" of '{stage_of(loop)}'" if loop.stage is not None else ""
            raise fail(
                where,
                f"parallel '{lname}': '{lname}' is a reduction loop{stage} (the store to {access_text(st)} does not "
                f"depend on it), and running its iterations on several cores would race on the accumulated "
                "element; parallelise a loop of the output instead",
                lname,
            )
    keys = AccessKeys()
    for buf in _stored_buffers(accs, private):
        conflict = _first_conflict([a for a in accs if a.memref is buf], keys)
        if conflict is not None:
            st, other = conflict
            verb = "reads" if isinstance(other, lp.LoadOp) else "writes"
            raise fail(
                where,
                f"parallel '{lname}': an iteration writes {access_text(st)} and {verb} {access_text(other)}, which "
                "another iteration may write: running them on several cores would race",
                lname,
            )


def check_innermost(loop: lp.ForOp, where: str, what: str = "vectorize") -> None:
    inner = [op for op in loop.body.walk() if isinstance(op, lp.ForOp)]
    if inner:
        root = loop
        while not is_nest_root(root):
            parent = root.parent_op()
            assert isinstance(parent, lp.ForOp)
            root = parent
        raise fail(
            where,
            f"{what} '{name(loop)}': only the innermost loop can be vectorized, and '{name(loop)}' contains "
            f"'{name(inner[0])}' (order: {order_text(root)}); reorder first",
            name(loop),
        )


# ---------------------------------------------------------------- facts


def set_origin(loop: lp.ForOp, where: str) -> None:
    if where:
        loop.properties["origin"] = StringAttr(where)


def set_fact(loop: lp.ForOp, fact: str, value: int | None) -> None:
    """Set `parallel` (value None) or an integer fact (`vector`, `unroll`)."""
    loop.properties[fact] = UnitAttr() if value is None else IntegerAttr(value, i64)


def element_bits(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    bits = getattr(t, "bitwidth", None)
    return int(bits) if isinstance(bits, int) else 32


def simd_bits(kernel: Operation) -> int:
    hw = kernel.attributes.get("irkit.hardware") if isinstance(kernel, func.FuncOp) else None
    if isinstance(hw, DictionaryAttr):
        simd = hw.data.get("simd")
        if isinstance(simd, IntegerAttr) and simd.value.data > 0:
            return simd.value.data
        if isinstance(simd, FloatAttr) and simd.value.data > 0:
            return int(simd.value.data)
    return DEFAULT_SIMD_BITS


def default_vector_width(kernel: Operation, loop: lp.ForOp) -> int:
    """SIMD bits of the kernel's inline hardware (512 otherwise) over the stored element's bits."""
    stores = [op for op in loop.walk() if isinstance(op, lp.StoreOp)]
    memref = stores[0].memref.type if stores else None
    bits = element_bits(memref.element_type) if isinstance(memref, MemRefType) else 32
    return max(1, simd_bits(kernel) // max(1, bits))
