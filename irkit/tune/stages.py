"""What the tuner's screening model needs to know of each stage, read once per document.

The unscheduled document is lowered to loop IR and read with the cost
model's own reader (`irkit.perf.reader`), so the tuner sees the accesses,
flops and accumulation chains the backend really emits -- for a named
operation too, whose body the tuner knows nothing about.  Each innermost
loop body becomes a `Body`: the stage loops (by their names in the
document) it runs over, its accesses as coefficients of those loops, its
flops and instruction kinds per point, and its accumulation chain.  A
schedule only reorders and blocks these loops, so the bodies stay valid for
every candidate; `irkit.tune.estimate` prices them under a candidate's nest.

Loop nests that run over loops no schedule names (the zero-fill of an
accumulated output, the padding copy of a convolution) are `fixed` work,
priced once: no candidate changes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from irkit.affine_text import evaluate
from irkit.perf import expr as ex


@dataclass(frozen=True)
class Access:
    tensor: str
    store: bool
    elem: int  # bytes
    coeffs: tuple[tuple[tuple[str, int], ...], ...]  # per logical dim: (stage loop, coefficient) pairs
    order: tuple[int, ...]  # storage order, outermost first
    shape: tuple[int, ...]  # logical extents at the tuned sizes
    temp: bool = False
    roots: frozenset[str] = frozenset()  # the stage loops its index uses (set from `coeffs`)

    strided: frozenset[str] = frozenset()  # the loops it does not move with by single elements
    # per logical dim: (stage loop, |coefficient|) pairs, and the dim stored innermost (set from
    # `coeffs` and `order`: the screening model's footprints read them for every candidate)
    abs_coeffs: tuple[tuple[tuple[str, int], ...], ...] = field(default=(), compare=False)
    inner_dim: int = field(default=0, compare=False)
    # per stage loop: the (dim, |coefficient|) pairs it appears in (`abs_coeffs` by loop)
    dims_of: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roots", frozenset(loop for dim in self.coeffs for loop, _ in dim))
        object.__setattr__(self, "abs_coeffs", tuple(tuple((r, abs(k)) for r, k in dim) for dim in self.coeffs))
        object.__setattr__(self, "inner_dim", self.order[-1] if self.order else len(self.coeffs) - 1)
        dims_of: dict[str, list[tuple[int, int]]] = {}
        for i, dim in enumerate(self.abs_coeffs):
            for r, k in dim:
                dims_of.setdefault(r, []).append((i, k))
        object.__setattr__(self, "dims_of", {r: tuple(v) for r, v in dims_of.items()})
        inner = self.order[-1] if self.order else 0
        strided = {loop for d, dim in enumerate(self.coeffs) for loop, k in dim if d != inner or abs(k) != 1}
        object.__setattr__(self, "strided", frozenset(strided))

    def varies(self, root: str) -> bool:
        return root in self.roots

    def unit(self, root: str) -> bool:
        """Moves by single elements along its innermost storage dimension with `root` (or not at all)."""
        return root not in self.strided

    def row_stride(self) -> int:
        """Bytes between consecutive positions of the next-to-innermost storage dimension."""
        if len(self.order) < 2:
            return 0
        return self.elem * self.shape[self.order[-1]]


@dataclass(frozen=True)
class Body:
    stage: str
    roots: tuple[str, ...]  # stage loops it runs over, outermost first
    accesses: tuple[Access, ...]
    flops: int  # per point
    ops: tuple[tuple[str, int], ...]  # instruction kind -> count per point
    chain: int  # dependent FP ops an accumulation carries per point (0: none)
    dtype_bits: int = 32
    chain_kinds: tuple[tuple[str, int], ...] = ()  # those ops by latency class (`irkit.perf.reader.LATENCY_CLASS`)

    @property
    def loads_first(self) -> tuple[Access, ...]:
        """The accesses, loads before stores (stores get registers last)."""
        return self._once("_loads_first", lambda: tuple(sorted(self.accesses, key=lambda a: a.store)))

    @property
    def op_table(self) -> dict[str, int]:
        """`ops` as a table (the screening model looks kinds up for every candidate)."""
        return self._once("_op_table", lambda: dict(self.ops))

    @property
    def op_total(self) -> int:
        return self._once("_op_total", lambda: sum(n for _, n in self.ops))

    @property
    def stored(self) -> frozenset[str]:
        """The tensors it stores to."""
        return self._once("_stored", lambda: frozenset(a.tensor for a in self.accesses if a.store))

    def _once(self, name: str, make):
        """A value derived from the fields, computed on first use and kept (the body is frozen)."""
        got = self.__dict__.get(name)
        if got is None:
            got = make()
            object.__setattr__(self, name, got)
        return got


@dataclass
class StageInfo:
    name: str
    loops: tuple[str, ...]
    extents: dict[str, int]
    reductions: frozenset[str]
    bodies: list[Body] = field(default_factory=list)
    constant: frozenset[str] = frozenset()  # loops whose extent is a number in the document, not a size
    bounds: dict[str, frozenset[str]] = field(default_factory=dict)  # loop -> the loops its `where` bounds use
    ordered: bool = False  # a recurrence (`carry`): only split and unroll keep its order


@dataclass
class KernelInfo:
    stages: dict[str, StageInfo]
    fixed_bytes: float  # bytes the nests no schedule changes move
    relaxed: bool
    sizes: dict[str, int] = field(default_factory=dict)  # every size, the document's defaults filled in
    reads: dict[str, tuple[str, ...]] = field(default_factory=dict)  # stage -> the tensors it reads
    temps: frozenset[str] = frozenset()  # stages that are temporaries (placed by compute_at / compute_root)


def _value(e: ex.Expr, sizes: Mapping[str, int]) -> int:
    got = ex.subs(e, {k: ex.const(v) for k, v in sizes.items()})
    return int(got.value) if got.op == "const" else 1


def read_kernel(text: str, name: str, sizes: Mapping[str, int]) -> KernelInfo:
    """The stages of the document `text` (its schedules removed) at `sizes`."""
    return read_kernels(text, name, [sizes])[0]


def read_kernels(text: str, name: str, size_sets: list[Mapping[str, int]]) -> list[KernelInfo]:
    """The stages of the document `text` (its schedules removed) at each of `size_sets`: the document
    is checked, lowered and read once, then evaluated at each set."""
    from xdsl.dialects import func

    from irkit.api import lower
    from irkit.backends.c_plan import stream_threshold
    from irkit.checks.design import DesignChecker
    from irkit.dialects import design as d
    from irkit.frontend import parse_design
    from irkit.perf.reader import Reader
    from irkit.validate.suite import replace_schedules

    module = parse_design(replace_schedules(text, {}), name)
    design = next(op for op in module.walk() if isinstance(op, d.DesignOp))
    checker = DesignChecker(design)
    checker.run()
    kernel = next(op for op in lower(module)["loop"].walk() if isinstance(op, func.FuncOp))
    reader = Reader(kernel, stream_threshold(kernel))
    top: list = []
    reader.read_block(kernel.body.block, None, top)
    reads = {n: tuple(st.reads) for n, st in checker.stages.items()}
    temps = frozenset(n for n, t in checker.tensors.items() if t.role.data == "temp" and n in checker.stages)
    out = []
    for sizes in size_sets:
        values = {**checker.defaults, **dict(sizes)}
        stages: dict[str, StageInfo] = {}
        for sname, st in checker.stages.items():
            extents = {loop: int(evaluate(e, values)) for loop, e in st.extents.items()}
            constant = frozenset(loop for loop, e in st.extents.items() if _is_constant(e))
            stages[sname] = StageInfo(sname, tuple(st.loops), extents, frozenset(st.reduction_loops), constant=constant,
                                      bounds=where_bounds(st.loops, st.domain),
                                      ordered=isinstance(st.op, d.StmtOp) and bool(st.op.carry_loops))  # fmt: skip
        fixed = 0.0
        for root in top:
            stored = [a.buf.name for lp in root.walk() for a in lp.accesses if a.store and not a.buf.local]
            stage = next((stages[s] for s in stored if s in stages), None)
            for path in _paths(root, []):
                fixed += _add_body(path, stage, values)
        out.append(KernelInfo(stages, fixed, reader.relaxed, {k: int(v) for k, v in values.items()}, reads, temps))
    return out


def where_bounds(loops: list[str], domain: list) -> dict[str, frozenset[str]]:
    """Each loop a `where` constraint bounds (its innermost index, in the stage's loop order) and the
    other loops that constraint names: they must stay outside it (`j <= i`: `j` inside `i`)."""
    out: dict[str, frozenset[str]] = {}
    for form, _ in domain:
        named = [v for v in loops if v in form.names()]
        if len(named) > 1:
            out[named[-1]] = out.get(named[-1], frozenset()) | frozenset(named[:-1])
    return out


def _is_constant(e) -> bool:
    try:
        evaluate(e, {})
    except KeyError:
        return False
    return True


def _paths(loop, prefix: list) -> list[list]:
    """Root-to-loop paths of every loop with work in its body."""
    here = [*prefix, loop]
    out = [here] if loop.accesses or loop.flops else []
    for child in loop.loops:
        out.extend(_paths(child, here))
    return out


def _add_body(path: list, stage: StageInfo | None, sizes: Mapping[str, int]) -> float:
    """Record the body at the end of `path` in its stage; its bytes when no schedule shapes it."""
    inner = path[-1]
    by_var = {lp.var: lp.name for lp in path}
    roots = tuple(by_var[lp.var] for lp in path)
    accesses = []
    for a in inner.accesses:
        if a.buf.local:
            continue
        dims = []
        for dim in a.dims:
            if dim is None:
                dims.append(())
                continue
            dims.append(tuple((by_var.get(v, v), k) for v, k in dim[0].items() if k))
        shape = tuple(_value(s, sizes) for s in a.buf.shape)
        accesses.append(Access(a.buf.name, a.store, a.buf.elem, tuple(dims), tuple(a.buf.order), shape, a.buf.role == "temp"))
    if stage is None or not set(roots) <= set(stage.loops) or len(set(roots)) != len(roots):
        points = 1
        for lp in path:
            points *= max(1, _value(lp.trips(), sizes))
        return float(points * sum(a.elem for a in accesses))
    bits = 64 if any(a.elem == 8 for a in accesses) else 32
    stage.bodies.append(
        Body(
            stage.name, roots, tuple(accesses), inner.flops, tuple(sorted(inner.ops.items())), inner.chain, bits,
            tuple(sorted((inner.chain_kinds or {}).items())),
        )  # fmt: skip
    )
    return 0.0
