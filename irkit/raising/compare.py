"""Comparing a raised kernel with the document's, both as tensorop (named ops generalized).

What is compared, per buffer (document tensor or temporary):

- **the tensors**: role, shape, element type, layout (storage order) and
  alignment of every argument, and the whole shape of every temporary;
- **the writes**: the sequence of fills and generics into the buffer.  A
  generic is compared up to renaming of its loops: its loops are matched
  through the stored index (position by position), reduction loops by trying
  their orders; then extents, iterator kinds, the stored index and the body
  must agree, the body as an expression tree whose `+`, `*`, `max` and `min`
  operands are sorted (commutativity; nested chains of one of them are
  flattened, so associativity is accepted too), whose leaves are the
  elements read (`inp[y, x + 1]`) and constants.  Each read must also see
  the same number of earlier writes to its buffer (dataflow order);
- **the schedule** of each stage's last write: its loops after replaying
  the document's directives (each loop a dimension and a step), the
  parallel, vector and unroll marks on them, and where a fused stage sits
  in its consumer's loops.

Every difference is a `Difference` naming the stage and, for schedule
differences, the directive (its `loc`), so that the caller can put the
diagnostic on the document line whose intent was lost.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
from dataclasses import dataclass, field

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
)

from irkit.affine.linear import lin_of, split_floordiv
from irkit.affine.printer import affine_text
from irkit.affine.where import as_expr, bound_text, normal_form
from irkit.affine_text import AffineTextError, format_affine, parse_affine
from irkit.checks.symbolic import Facts, Lin, NotAffine, constraint_rows, to_lin
from irkit.dialects import tensorop as t
from irkit.directives import entry_of_row, record_of
from irkit.directives.nest import Nest
from irkit.kernel_abi import kernel_args, layout_order, scalar_of, size_of

COMMUTATIVE = {"arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.addi", "arith.muli",
               "arith.maxsi", "arith.minsi", "arith.maxnumf", "arith.minnumf"}  # fmt: skip
SYMBOL = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/", "arith.addi": "+",
          "arith.subi": "-", "arith.muli": "*", "arith.divsi": "/", "arith.maximumf": "max",
          "arith.minimumf": "min", "arith.negf": "neg", "math.exp": "exp", "math.sqrt": "sqrt"}  # fmt: skip


LOOP_MAP: dict[int, dict[str, str]] = {}  # raised generic (id) -> its loop names as the document's


@dataclass
class Difference:
    """One way the generated code departs from the document."""

    stage: str  # the document stage (or tensor) it concerns
    aspect: str  # computation | tensor | schedule | layout | shape
    message: str
    loc: str | None = None  # "file:line:col" of the directive, when it is one


# ---- a kernel's writes --------------------------------------------------------------


@dataclass
class WriteForm:
    """A fill or generic into one buffer, ready to compare."""

    op: Operation
    buffer: str
    stage: str
    reads_before: dict[str, int] = field(default_factory=dict)  # per buffer read: writes to it before this one
    steps: str | None = None  # the size its `repeat` runs to (None: it runs once)


@dataclass
class KernelForm:
    kernel: func.FuncOp
    sizes: list[str]
    buffer_names: dict[SSAValue, str]
    writes: list[WriteForm]
    temps: dict[str, t.AllocOp]


def kernel_form(kernel: func.FuncOp) -> KernelForm:
    sizes, tensors = kernel_args(kernel)
    names: dict[SSAValue, str] = {x.value: x.name for x in tensors}
    temps: dict[str, t.AllocOp] = {}
    writes: list[WriteForm] = []
    count: dict[str, int] = {}
    size_names = {s.value: s.name for s in sizes}
    for op in in_order(kernel.body.block.ops):
        if isinstance(op, t.AllocOp):
            names[op.results[0]] = op.tensor_name.data
            temps[op.tensor_name.data] = op
        elif isinstance(op, t.NamedTensorOp):
            count[names[op.outs[0]]] = count.get(names[op.outs[0]], 0) + 1
        elif isinstance(op, t.FillOp | t.GenericOp):
            out = op.out[0] if isinstance(op, t.FillOp) else op.outs[0]
            buf = names[out]
            reads = [names[v] for v in op.ins] if isinstance(op, t.GenericOp) else []
            steps = op.parent_op()
            repeat = size_names.get(steps.count) if isinstance(steps, t.RepeatOp) else None
            writes.append(WriteForm(op, buf, op.stage.data, {r: count.get(r, 0) for r in reads}, repeat))
            count[buf] = count.get(buf, 0) + 1
    return KernelForm(kernel, [s.name for s in sizes], names, writes, temps)


def in_order(ops) -> list[Operation]:
    """A kernel's top-level ops, those of `repeat` blocks in place."""
    out: list[Operation] = []
    for op in ops:
        out += list(op.body.block.ops) if isinstance(op, t.RepeatOp) else [op]
    return out


# ---- generics as text ---------------------------------------------------------------


def _body_tree(op: t.GenericOp, operand_names: list[str], dims: list[str], syms: list[str]) -> str:
    block = op.body.block
    leaves: dict[SSAValue, str] = {}
    for k, arg in enumerate(block.args):
        if k == len(block.args) - 1:
            leaves[arg] = "out"
            continue
        amap = op.maps[k]
        index = ", ".join(affine_text(r, dims, syms) for r in amap.results)
        leaves[arg] = f"{operand_names[k]}[{index}]"

    # Post-order with an explicit stack (a statement may sum thousands of terms); each value's text
    # is kept, and for a commutative op also its flattened, sorted arguments, so that a chain of
    # the same op reads as one call whatever its association.
    texts: dict[SSAValue, str] = dict(leaves)
    flats: dict[SSAValue, list[str]] = {}
    yielded = block.last_op
    assert yielded is not None
    root = yielded.operands[0]
    stack: list[tuple[SSAValue, bool]] = [(root, False)]
    while stack:
        v, ready = stack.pop()
        if v in texts:
            continue
        owner = v.owner
        if isinstance(owner, arith.ConstantOp):
            value = owner.value
            texts[v] = _number(value.value.data) if isinstance(value, FloatAttr | IntegerAttr) else str(value)
            continue
        if not isinstance(owner, Operation):  # a kernel argument read from above: a scalar or a size
            texts[v] = scalar_of(v) or size_of(v) or "?"
            continue
        if not ready:
            stack.append((v, True))
            stack.extend((x, False) for x in owner.operands if x not in texts)
            continue
        name = owner.name
        args = [texts[x] for x in owner.operands]
        if name in COMMUTATIVE:
            flat: list[str] = []
            for x, sub in zip(owner.operands, args):
                inner = x.owner
                if isinstance(inner, Operation) and inner.name == name and x not in leaves and x in flats:
                    flat += flats[x]
                else:
                    flat.append(sub)
            args = sorted(flat)
            flats[v] = args
        extra = ""
        if isinstance(owner, arith.CmpfOp | arith.CmpiOp):
            extra = f"<{owner.predicate.value.data}>"
        texts[v] = f"{SYMBOL.get(name, name)}{extra}({', '.join(args)})"
    return texts[root]


def _number(x: float | int) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return repr(x)


@dataclass
class GenericText:
    extents: list[str]
    kinds: list[str]
    out_index: list[str]
    body: str
    reads: list[str]  # the elements read, sorted
    where: list[str] = dataclasses.field(default_factory=list)  # the domain's constraints, `... >= 0`, sorted


def generic_text(op: t.GenericOp, form: KernelForm, dims: list[str]) -> GenericText:
    """The generic with its loops called `dims` (by position)."""
    syms = form.sizes
    names = [form.buffer_names[v] for v in [*op.ins, *op.outs]]
    extents = [affine_text(fold_floordiv(r), [], syms) for r in op.domain.data.results]
    out_map = op.maps[-1]
    out_index = [affine_text(r, dims, syms) for r in out_map.results]
    body = _body_tree(op, names, dims, syms)
    reads = sorted(
        f"{names[k]}[{', '.join(affine_text(r, dims, syms) for r in op.maps[k].results)}]" for k in range(len(op.ins))
    )
    return GenericText(extents, op.iterator_kinds, out_index, body, reads, where_text(op, dims, syms))


def where_text(op: t.GenericOp, dims: list[str], syms: list[str]) -> list[str]:
    """The generic's domain constraints as `form >= 0` texts over the loop names, one spelling for
    each (an equality is two inequalities), sorted: equal domains give equal lists."""
    out: set[str] = set()
    for expr, equal in op.where_forms():
        form = lin_of(expr, dims, syms, div=split_floordiv)
        forms = [form, form.scale(-1)] if equal else [form]
        for f in forms:
            out.add(bound_text({str(v): k for v, k in f.terms.items()}, f.const, dims))
    return sorted(out)


def where_in_order(op: t.GenericOp, dims: list[str], syms: list[str]) -> list[str]:
    """The generic's domain constraints as a document writes them, in the generic's order: each a
    bound on its innermost loop (`j <= i`), an equality as one (`i == N - 1`)."""
    out: list[str] = []
    for expr, equal in op.where_forms():
        form = lin_of(expr, dims, syms, div=split_floordiv)
        coeffs = {str(v): k for v, k in form.terms.items()}
        text = bound_text(coeffs, form.const, dims)
        inner = [v for v in dims if coeffs.get(v) in (1, -1)]
        if equal and inner:
            v = inner[-1]
            k = coeffs[v]
            rest = {n: -c * k for n, c in coeffs.items() if n != v}
            text = f"{v} == {format_affine(as_expr(rest, -form.const * k))}"
        if text not in out:
            out.append(text)
    return out


def fold_floordiv(expr: AffineExpr) -> AffineExpr:
    """`(x floordiv q) + c` as `(x + c*q) floordiv q`, recursively: one spelling of a strided
    extent, so `((H - 1) floordiv 2) + 1` (the document's) equals `(H + 1) floordiv 2` (raised)."""
    if not isinstance(expr, AffineBinaryOpExpr):
        return expr
    lhs, rhs = fold_floordiv(expr.lhs), fold_floordiv(expr.rhs)
    if expr.kind == AffineBinaryOpKind.Add:
        for a, b in ((lhs, rhs), (rhs, lhs)):
            if (
                isinstance(a, AffineBinaryOpExpr)
                and a.kind == AffineBinaryOpKind.FloorDiv
                and isinstance(a.rhs, AffineConstantExpr)
                and isinstance(b, AffineConstantExpr)
            ):
                return (a.lhs + b.value * a.rhs.value) // a.rhs.value
    return AffineBinaryOpExpr(expr.kind, lhs, rhs)


def _dim_of(expr: AffineExpr) -> int | None:
    return expr.position if isinstance(expr, AffineDimExpr) else None


def match_loops(doc: t.GenericOp, gen: t.GenericOp) -> list[list[int]]:
    """Candidate assignments of the generated generic's loops to the document's (gen k -> doc m):
    stored-to loops by their position in the stored index, the rest in every order."""
    n = len(doc.iterator_kinds)
    if len(gen.iterator_kinds) != n:
        return []
    base: dict[int, int] = {}
    for rd, rg in zip(doc.maps[-1].results, gen.maps[-1].results):
        a, b = _dim_of(rd), _dim_of(rg)
        if a is not None and b is not None and b not in base and a not in base.values():
            base[b] = a
    rest_gen = [k for k in range(n) if k not in base]
    rest_doc = [m for m in range(n) if m not in base.values()]
    out = []
    for perm in itertools.permutations(rest_doc):
        assign = dict(base)
        assign.update(zip(rest_gen, perm))
        out.append([assign[k] for k in range(n)])
        if len(out) >= 120:
            break
    return out


# ---- comparing -------------------------------------------------------------------


def compare_kernels(doc: func.FuncOp, gen: func.FuncOp) -> list[Difference]:
    """Every difference between the document's kernel and the raised one (both tensorop, generic)."""
    dform, gform = kernel_form(doc), kernel_form(gen)
    diffs = _compare_tensors(dform, gform)
    stages = {w.buffer: w.stage for w in dform.writes}
    by_doc = _group(dform)
    by_gen = _group(gform)
    for buf, dwrites in by_doc.items():
        stage = stages.get(buf, buf)
        gwrites = by_gen.get(buf, [])
        if not gwrites:
            diffs.append(Difference(stage, "computation", f"the generated code never writes '{buf}'"))
            continue
        diffs += _compare_writes(stage, buf, dwrites, gwrites, dform, gform)
    for buf in by_gen:
        if buf not in by_doc:
            diffs.append(
                Difference(buf, "computation", f"the generated code writes '{buf}', which the document does not")
            )
    if not diffs:
        diffs += compare_schedules(by_doc, by_gen)
    return diffs


def _group(form: KernelForm) -> dict[str, list[WriteForm]]:
    out: dict[str, list[WriteForm]] = {}
    for w in form.writes:
        out.setdefault(w.buffer, []).append(w)
    return out


def _compare_tensors(dform: KernelForm, gform: KernelForm) -> list[Difference]:
    diffs: list[Difference] = []
    _, dts = kernel_args(dform.kernel)
    _, gts = kernel_args(gform.kernel)
    gen_by_name = {x.name: x for x in gts}
    for d in dts:
        g = gen_by_name.get(d.name)
        if g is None:
            diffs.append(Difference(d.name, "tensor", f"the generated kernel has no argument '{d.name}'"))
            continue
        if d.role != g.role:
            diffs.append(
                Difference(d.name, "tensor", f"role of {d.name}: document says {d.role}, generated code {g.role}")
            )
        dshape = ", ".join(affine_text(r, [], dform.sizes) for r in d.shape.results)
        gshape = ", ".join(affine_text(r, [], gform.sizes) for r in g.shape.results)
        if dshape != gshape:
            diffs.append(
                Difference(d.name, "shape", f"shape of {d.name}: document says [{dshape}], generated code [{gshape}]")
            )
        if d.memref.element_type != g.memref.element_type:
            diffs.append(
                Difference(
                    d.name,
                    "tensor",
                    f"element type of {d.name}: document says {d.dtype}, generated code {g.memref.element_type}",
                )
            )
        if d.order != g.order:
            diffs.append(
                Difference(
                    d.name,
                    "layout",
                    f"layout of {d.name}: document says {_layout_name(d.order)}, generated code reads {_layout_name(g.order)}",
                )
            )
        if d.align != g.align:
            diffs.append(
                Difference(
                    d.name,
                    "layout",
                    f"alignment of {d.name}: document says {d.align}, generated code assumes {g.align}",
                )
            )
    for name, dalloc in dform.temps.items():
        galloc = gform.temps.get(name)
        if galloc is None:
            continue
        dshape = ", ".join(affine_text(r, [], dform.sizes) for r in dalloc.shape.data.results)
        gshape = ", ".join(affine_text(r, [], gform.sizes) for r in galloc.shape.data.results)
        if dshape != gshape:
            diffs.append(
                Difference(
                    name, "shape", f"temporary {name}: document's is [{dshape}], the generated code computes [{gshape}]"
                )
            )
        if layout_order(dalloc.results[0].type) != layout_order(galloc.results[0].type):  # type: ignore[arg-type]
            diffs.append(Difference(name, "layout", f"layout of temporary {name} differs"))
    return diffs


def _layout_name(order: list[int]) -> str:
    if order == list(range(len(order))):
        return "row_major"
    if order == list(reversed(range(len(order)))):
        return "col_major"
    return "order [" + ", ".join(str(o) for o in order) + "]"


def _signature(w: WriteForm) -> str:
    if isinstance(w.op, t.FillOp):
        return f"fill {w.op.value}"
    return "generic " + ",".join(w.op.iterator_kinds)  # type: ignore[attr-defined]


def _compare_writes(
    stage: str, buf: str, dwrites: list[WriteForm], gwrites: list[WriteForm], dform: KernelForm, gform: KernelForm
) -> list[Difference]:
    diffs: list[Difference] = []
    dsig, gsig = [_signature(w) for w in dwrites], [_signature(w) for w in gwrites]
    pairs: list[tuple[WriteForm, WriteForm]] = []
    if len(dwrites) == len(gwrites):
        pairs = list(zip(dwrites, gwrites))
    else:
        matcher = difflib.SequenceMatcher(a=dsig, b=gsig, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                pairs += list(zip(dwrites[i1:i2], gwrites[j1:j2]))
                continue
            for w in dwrites[i1:i2]:
                diffs.append(
                    Difference(
                        stage, "computation", f"{_describe(w, dform)} of '{buf}' is missing from the generated code"
                    )
                )
            for w in gwrites[j1:j2]:
                diffs.append(
                    Difference(
                        stage, "computation", f"the generated code has an extra {_describe(w, gform)} of '{buf}'"
                    )
                )
    for dw, gw in pairs:
        diffs += _compare_pair(stage, buf, dw, gw, dform, gform)
    return diffs


def _times(steps: str | None) -> str:
    return f"in each of {steps} steps (repeat {steps})" if steps is not None else "once (no repeat)"


def _describe(w: WriteForm, form: KernelForm) -> str:
    if isinstance(w.op, t.FillOp):
        value = w.op.value
        number = _number(value.value.data) if isinstance(value, FloatAttr | IntegerAttr) else str(value)
        return f"the initialisation to {number}"
    if isinstance(w.op, t.GenericOp) and not w.op.ins:  # a constant stored over part of the buffer
        ranges = [
            f"{n.data} < {affine_text(fold_floordiv(r), [], form.sizes)}"
            for n, r in zip(w.op.loop_names.data, w.op.domain.data.results)
        ]
        return f"a constant stored over {', '.join(ranges)} only"
    return "the computation"


def _compare_pair(
    stage: str, buf: str, dw: WriteForm, gw: WriteForm, dform: KernelForm, gform: KernelForm
) -> list[Difference]:
    for w, side in ((dw, "the document"), (gw, "the generated code")):
        other = gw if w is dw else dw
        if isinstance(w.op, t.GenericOp) and isinstance(other.op, t.GenericOp) and (
            (w.op.ordered is not None) != (other.op.ordered is not None)
        ):
            if w.op.ordered is not None:
                return [Difference(stage, "computation", f"'{buf}' is a recurrence in {side} (its iterations read "
                                   "what earlier ones wrote, in order), not in the other")]  # fmt: skip
    if dw.steps != gw.steps:
        return [Difference(stage, "computation", f"'{buf}' is computed {_times(dw.steps)} in the document, "
                                                  f"{_times(gw.steps)} in the generated code")]  # fmt: skip
    if isinstance(dw.op, t.FillOp) or isinstance(gw.op, t.FillOp):
        if isinstance(dw.op, t.FillOp) and isinstance(gw.op, t.FillOp):
            if dw.op.value != gw.op.value:
                return [
                    Difference(
                        stage,
                        "computation",
                        f"{buf} starts at {_describe(dw, dform)[22:]} in the document, at {_describe(gw, gform)[22:]} in the generated code",
                    )
                ]
            return []
        return [
            Difference(
                stage,
                "computation",
                f"'{buf}': the document has {_describe(dw, dform)}, the generated code {_describe(gw, gform)}",
            )
        ]
    dop, gop = dw.op, gw.op
    assert isinstance(dop, t.GenericOp) and isinstance(gop, t.GenericOp)
    dnames = [n.data for n in dop.loop_names.data]
    dtext = generic_text(dop, dform, dnames)
    if len(dop.iterator_kinds) != len(gop.iterator_kinds):
        gnames = [n.data for n in gop.loop_names.data]
        return [
            Difference(
                stage,
                "computation",
                f"'{buf}' is computed over {len(dnames)} loops ({', '.join(dnames)}) in the document, {len(gnames)} ({', '.join(gnames)}) in the generated code",
            )
        ]
    best: tuple[int, GenericText, list[str]] | None = None
    for assign in match_loops(dop, gop):
        names = [dnames[m] for m in assign]
        gtext = _in_document_order(generic_text(gop, gform, names), assign)
        score = _score(dtext, gtext, dnames, dform.sizes)
        if best is None or score < best[0]:
            best = (score, gtext, names)
        if score == 0:
            break
    assert best is not None
    gnames = [n.data for n in gop.loop_names.data]
    LOOP_MAP[id(gop)] = dict(zip(gnames, best[2]))
    diffs = _explain(stage, buf, dnames, dtext, best[1], dform.sizes)
    if dw.reads_before != gw.reads_before and not diffs:
        diffs.append(
            Difference(
                stage, "computation", f"'{buf}' is computed before the data it reads is ready (order of stages changed)"
            )
        )
    return diffs


def _in_document_order(g: GenericText, assign: list[int]) -> GenericText:
    """`g` with its loops' extents and kinds listed in the document's loop order (generated loop k
    is the document's `assign[k]`): an interchange of two reduction loops puts them in another order."""
    extents, kinds = list(g.extents), list(g.kinds)
    for k, m in enumerate(assign):
        extents[m], kinds[m] = g.extents[k], g.kinds[k]
    return dataclasses.replace(g, extents=extents, kinds=kinds)


def _score(a: GenericText, b: GenericText, names: list[str], sizes: list[str]) -> int:
    domain = 0
    if not same_domain(a, b, names, sizes):
        domain = sum(x != y for x, y in zip(a.extents, b.extents)) + (a.where != b.where)
    return (
        domain
        + sum(x != y for x, y in zip(a.kinds, b.kinds))
        + sum(x != y for x, y in zip(a.out_index, b.out_index))
        + len(set(a.reads) ^ set(b.reads))
        + (a.body != b.body)
    )


def same_domain(a: GenericText, b: GenericText, names: list[str], sizes: list[str]) -> bool:
    """Do the two generics run the same points: each one's box (`0 <= v < extent`) and `where`
    implied by the other's, for every value of the sizes?  `i == 0` and `i <= 0` over a box that
    starts at 0 are one domain; so are an extent `N - 1` and an extent `N` with `i <= N - 2`."""
    if a.extents == b.extents and a.where == b.where:
        return True
    try:
        (fa, ra), (fb, rb) = _domain_facts(a, names, sizes), _domain_facts(b, names, sizes)
    except (AffineTextError, NotAffine, ValueError):
        return False
    return all(fa.proves(r) for r in rb) and all(fb.proves(r) for r in ra)


def _domain_facts(g: GenericText, names: list[str], sizes: list[str]) -> tuple[Facts, list[Lin]]:
    """The facts of a generic's domain (for `proves`) and its rows, each a form that is >= 0."""
    loops = {n: to_lin(parse_affine(e)) for n, e in zip(names, g.extents)}
    rows = [r for text in g.where for r in _where_rows(text)]
    facts = Facts({s: 1 for s in sizes}, loops, rows)
    box = [r for n, e in loops.items() for r in (Lin.of(n), e.plus(-1) - Lin.of(n))]
    return facts, rows + box


def _where_rows(text: str) -> list[Lin]:
    c = normal_form(text)
    return constraint_rows(to_lin(c.expr), c.equal)


def _explain(
    stage: str, buf: str, names: list[str], d: GenericText, g: GenericText, sizes: list[str]
) -> list[Difference]:
    out: list[Difference] = []
    domain = same_domain(d, g, names, sizes)
    for name, a, b in zip(names, d.extents, g.extents):
        if a != b and not domain:
            out.append(
                Difference(
                    stage, "computation", f"loop {name} of '{buf}': document runs it over {a}, generated code over {b}"
                )
            )
    for name, a, b in zip(names, d.kinds, g.kinds):
        if a != b:
            out.append(
                Difference(
                    stage,
                    "computation",
                    f"loop {name} of '{buf}' is a {a} loop in the document, a {b} loop in the generated code",
                )
            )
    if d.out_index != g.out_index:
        out.append(
            Difference(
                stage,
                "computation",
                f"document writes {buf}[{', '.join(d.out_index)}], generated code writes {buf}[{', '.join(g.out_index)}]",
            )
        )
    missing = [r for r in d.reads if r not in g.reads]
    extra = [r for r in g.reads if r not in d.reads]
    for a, b in itertools.zip_longest(missing, extra):
        if a and b:
            out.append(Difference(stage, "computation", f"document reads {a}, generated code reads {b}"))
        elif a:
            out.append(Difference(stage, "computation", f"document reads {a}, generated code does not"))
        else:
            out.append(Difference(stage, "computation", f"generated code reads {b}, document does not"))
    if not out and d.body != g.body:
        out.append(Difference(stage, "computation", f"document computes {d.body}, generated code computes {g.body}"))
    if d.where != g.where and not domain:
        shown = [", ".join(w) or "every point of the box" for w in (d.where, g.where)]
        out.append(
            Difference(stage, "computation", f"'{buf}': the document's domain is {shown[0]}, the generated code's {shown[1]}")
        )
    return out


def memref_rank(t_: MemRefType) -> int:
    return len(t_.get_shape())


# ---- schedules --------------------------------------------------------------------


def replay(op: t.GenericOp, rename: dict[str, str] | None = None) -> Nest:
    """The loops a generic's `schedule` makes from its domain (names mapped through `rename`),
    replayed by the directives' own records, as the checker replays them."""
    names = [n.data for n in op.loop_names.data]
    nest = Nest("", names, roots=dict(rename or {}), quiet=True)
    for row in op.schedule.data if op.schedule is not None else ():
        entry = entry_of_row(row)
        record = record_of(str(entry.get("kind")))
        if record is not None:
            record.replay(nest, entry, entry.get("loc"))
    return nest


def _schedule_diff(stage: str, message: str, loc: str | None = None) -> Difference:
    return Difference(stage, "schedule", message, loc)


def _last_generic(writes: list[WriteForm]) -> t.GenericOp | None:
    for w in reversed(writes):
        if isinstance(w.op, t.GenericOp):
            return w.op
    return None


def _label(key: tuple[str, int], nest: Nest) -> str:
    name = nest.name_of(key)
    return name if name else f"{key[0]} (step {key[1]})"


def compare_schedules(by_doc: dict[str, list[WriteForm]], by_gen: dict[str, list[WriteForm]]) -> list[Difference]:
    """Each document stage's loops, marks and placement against the raised stage's."""
    diffs: list[Difference] = []
    nests: dict[str, tuple[Nest, Nest]] = {}
    for buf, dwrites in by_doc.items():
        if not dwrites or dwrites[-1].stage != buf:
            continue  # temporaries of a named operation follow their stage's schedule
        dop, gop = _last_generic(dwrites), _last_generic(by_gen.get(buf, []))
        if dop is None or gop is None:
            continue
        nests[buf] = (replay(dop), replay(gop, LOOP_MAP.get(id(gop), {})))
    for buf, (dn, gn) in nests.items():
        diffs += _compare_nest(buf, dn, gn, nests)
    return diffs


def _compare_nest(stage: str, dn: Nest, gn: Nest, nests: dict[str, tuple[Nest, Nest]]) -> list[Difference]:
    out: list[Difference] = []
    dkeys = [(x[1], x[2]) for x in dn.loops]
    gkeys = [(x[1], x[2]) for x in gn.loops]
    for root in dict.fromkeys(k[0] for k in dkeys + gkeys):
        dsteps = sorted((s for r, s in dkeys if r == root), reverse=True)
        gsteps = sorted((s for r, s in gkeys if r == root), reverse=True)
        if dsteps == gsteps:
            continue
        dsplit = " then ".join(str(s) for s in dsteps if s > 1) or "nothing"
        gsplit = " then ".join(str(s) for s in gsteps if s > 1) or "nothing"
        what = f"schedule of {stage}: document splits {root} by {dsplit}, generated code by {gsplit}"
        if dsplit == "nothing":
            what = f"schedule of {stage}: generated code splits {root} by {gsplit}, the document does not split it"
        elif gsplit == "nothing":
            what = f"schedule of {stage}: document splits {root} by {dsplit}, generated code does not split it"
        out.append(Difference(stage, "schedule", what, dn.locs.get(f"split:{root}")))
    if out:
        return out
    if dkeys != gkeys:
        order_d = ", ".join(x[0] for x in dn.loops)
        order_g = ", ".join(_label(k, dn) for k in gkeys)
        loc = dn.locs.get("reorder") or next(iter(dn.locs.values()), None)
        out.append(
            Difference(
                stage, "schedule", f"loop order of {stage}: document runs {order_d}; generated code {order_g}", loc
            )
        )
        return out
    for (name, _, _), (gname, _, _) in zip(dn.loops, gn.loops):
        dm, gm = dn.marks.get(name, {}), gn.marks.get(gname, {})
        for kind, verb in (("parallel", "in parallel"), ("vectorize", "vectorized"), ("unroll", "unrolled"),
                           ("unroll_jam", "unrolled and jammed")):  # fmt: skip
            a, b = dm.get(kind), gm.get(kind)
            if a == b or (kind == "vectorize" and a is True and b):  # no width: the lowering picks one
                continue
            loc = dn.locs.get(f"{kind}:{name}")
            if a and not b:
                out.append(
                    _schedule_diff(
                        stage, f"schedule of {stage}: document runs {name} {verb}, generated code does not", loc
                    )
                )
            elif b and not a:
                out.append(
                    _schedule_diff(
                        stage, f"schedule of {stage}: generated code runs {name} {verb}, the document does not"
                    )
                )
            else:
                out.append(
                    _schedule_diff(
                        stage, f"schedule of {stage}: document runs {name} {verb} by {a}, generated code by {b}", loc
                    )
                )
    for tensor in sorted(set(dn.packs) | set(gn.packs)):
        a = dn.key(dn.packs[tensor]) if tensor in dn.packs else None
        b = gn.key(gn.packs[tensor]) if tensor in gn.packs else None
        if a == b:
            continue
        loc = dn.locs.get(f"pack:{tensor}")
        if a and not b:
            out.append(
                _schedule_diff(
                    stage,
                    f"schedule of {stage}: document packs {tensor} at {dn.packs[tensor]}, generated code does not pack it",
                    loc,
                )
            )
        elif b and not a:
            out.append(
                _schedule_diff(
                    stage,
                    f"schedule of {stage}: generated code packs {tensor} at {_label(b, dn)}, the document does not",
                )
            )
        else:
            out.append(
                _schedule_diff(
                    stage,
                    f"schedule of {stage}: document packs {tensor} at {dn.packs[tensor]}, generated code at {_label(b, dn)}",
                    loc,
                )
            )  # type: ignore[arg-type]
    out += _compare_placement(stage, dn, gn, nests)
    return out


def _compare_placement(stage: str, dn: Nest, gn: Nest, nests: dict[str, tuple[Nest, Nest]]) -> list[Difference]:
    def where(nest: Nest, side: int) -> tuple[str, tuple[str, int] | None] | None:
        if nest.where is None:
            return None
        consumer, loop = nest.where
        pair = nests.get(consumer)
        return consumer, (pair[side].key(loop) if pair else None)

    a, b = where(dn, 0), where(gn, 1)
    if a == b:
        return []
    text_a = f"at {a[0]}.{dn.where[1]}" if a and dn.where else "at the root"
    if b and gn.where:
        consumer = nests.get(b[0])
        label = _label(b[1], consumer[0]) if consumer and b[1] else gn.where[1]
        text_b = f"at {b[0]}.{label}"
    else:
        text_b = "at the root"
    return [
        _schedule_diff(
            stage,
            f"schedule of {stage}: document computes it {text_a}, generated code {text_b}",
            dn.locs.get("compute_at"),
        )
    ]
