"""Chapter 6 of the irkit tutorial: a loop-level pass that interchanges loops.

Load it with `irkit-opt --plugin examples/tutorial/ch6/interchange.py` and
run it on loop IR:

    irkit-opt examples/tutorial/ch6/matmul_jki.design \\
        --plugin examples/tutorial/ch6/interchange.py \\
        -p 'lower-design,lower-tensorop,apply-schedule,tutorial-interchange{report=true}'

For every *band* of a kernel -- a chain of perfectly nested `loop.for` ops
without schedule facts -- the pass prices each legal order of the band's
loops with irkit's cost model (`model-perf` plus the runtime `irkit
predict` uses) and keeps the order predicted fastest.  If no order beats
the current one, the band is left as it is.  docs/tutorial/ch6-loop-pass.md
explains the legality rule.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from irkit.diagnostics import DiagnosticError
from irkit.dialects import loop as lp
from irkit.extend import IrkitPass, option, register_pass
from irkit.kernel_abi import find_kernels, kernel_args

# Schedule facts: a loop carrying one of them is never moved (it ends a band).
FACTS = ("parallel", "vector", "unroll")
# Loop properties copied when a loop header is rebuilt at another position.
HEADER_PROPS = ("loop_name", "stage", "parallel", "vector", "unroll", "origin")
# What a band's body may contain: loops, element accesses and scalar math.
ALLOWED_BODY = (lp.ForOp, lp.LoadOp, lp.StoreOp)
ALLOWED_DIALECTS = ("arith.", "math.")


# --- bands -----------------------------------------------------------------------------------


def is_plain(op: Operation) -> bool:
    """A loop the pass may move: no parallel/vector/unroll fact, no unapplied schedule."""
    return (
        isinstance(op, lp.ForOp)
        and all(getattr(op, f) is None for f in FACTS)
        and "irkit.schedule" not in op.attributes
    )


def only_child(loop: lp.ForOp) -> Operation | None:
    ops = list(loop.body.block.ops)
    return ops[0] if len(ops) == 1 else None


def bands(kernel: func.FuncOp) -> list[list[lp.ForOp]]:
    """Maximal chains of perfectly nested plain loops (two or more), outermost first, in walk order."""
    out = []
    for op in kernel.body.walk():
        if not is_plain(op):
            continue
        parent = op.parent_op()
        if is_plain(parent) and only_child(parent) is op:
            continue  # not the top of its chain
        band = [op]
        while is_plain(child := only_child(band[-1])):
            band.append(child)
        if len(band) >= 2:
            out.append(band)
    return out


def band_names(band: list[lp.ForOp]) -> str:
    return ", ".join(loop.loop_name.data for loop in band)


# --- legality --------------------------------------------------------------------------------


def access_key(op: lp.LoadOp | lp.StoreOp) -> tuple:
    return (op.map.data, tuple(op.indices))


def illegal(band: list[lp.ForOp]) -> str | None:
    """Why the band may not be permuted at all, or None."""
    outer = band[0].parent_op()
    while outer is not None:
        if "irkit.schedule" in outer.attributes:
            return "the nest has schedule directives still to apply; run apply-schedule first"
        outer = outer.parent_op()
    ivs = {loop.induction_var for loop in band}
    for loop in band:
        for value in (*loop.lower_operands, *loop.upper_operands):
            if value in ivs:
                return f"the bounds of loop '{loop.loop_name.data}' depend on another loop of the band"
    body = list(band[-1].body.block.walk())
    for op in body:
        if not (isinstance(op, ALLOWED_BODY) or op.name.startswith(ALLOWED_DIALECTS)):
            return f"the body holds '{op.name}' (only loops, loop.load, loop.store, arith and math are understood)"
    stored: dict[SSAValue, set[tuple]] = {}
    for op in body:
        if isinstance(op, lp.StoreOp):
            stored.setdefault(op.memref, set()).add(access_key(op))
    for buf, keys in stored.items():
        name = buffer_name(buf)
        if len(keys) > 1:
            return f"buffer '{name}' is stored at more than one index"
        for op in body:
            if isinstance(op, lp.LoadOp) and op.memref == buf and access_key(op) not in keys:
                return f"buffer '{name}' is stored and also read at another index"
        (key,) = keys
        if index_loops(key, band) is None:
            return f"the index buffer '{name}' is stored at does not name each loop of the band on its own"
    return None


def index_loops(key: tuple, band: list[lp.ForOp]) -> set[int] | None:
    """The positions in `band` of the loops a stored element's index depends on, if every
    coordinate is `a * v + (something the band does not change)` for one band loop `v`, or
    free of band loops; None otherwise (then two iterations could meet at one element in
    an order a permutation changes)."""
    amap, indices = key
    position = {loop.induction_var: p for p, loop in enumerate(band)}
    inside = {op.induction_var for op in band[-1].body.block.walk() if isinstance(op, lp.ForOp)}
    used: set[int] = set()
    for result in amap.results:
        dims = result.used_dims()
        band_dims = {d for d in dims if indices[d] in position}
        if not band_dims:
            continue
        form = lp.linear_form(result)
        if form is None or len(band_dims) != 1 or any(indices[d] in inside for d in dims):
            return None
        (d,) = band_dims
        if form[0].get(d, 0) == 0:
            return None
        used.add(position[indices[d]])
    return used


def buffer_name(buf: SSAValue) -> str:
    return buf.name_hint or "?"


def reduction_groups(band: list[lp.ForOp]) -> list[list[int]]:
    """For each stored buffer, the band positions its index does not use (its reduction loops):
    a permutation must keep each group in its current relative order."""
    body = list(band[-1].body.block.walk())
    groups = []
    for op in body:
        if isinstance(op, lp.StoreOp):
            used = index_loops(access_key(op), band)
            assert used is not None
            groups.append([p for p in range(len(band)) if p not in used])
    return groups


def legal_orders(band: list[lp.ForOp]) -> list[tuple[int, ...]]:
    """Every permutation (a tuple of old positions, outermost first) that keeps each
    buffer's reduction loops in their relative order; the identity comes first."""
    groups = reduction_groups(band)
    out = []
    for perm in itertools.permutations(range(len(band))):
        where = {p: n for n, p in enumerate(perm)}
        if all(all(where[a] < where[b] for a, b in itertools.pairwise(g)) for g in groups):
            out.append(perm)
    return out


# --- the transformation ------------------------------------------------------------------------


def permute(band: list[lp.ForOp], perm: tuple[int, ...]) -> None:
    """Rebuild the band with loop `band[perm[0]]` outermost, `band[perm[1]]` next, ...: each
    loop keeps its bounds, step and facts; the innermost body moves unchanged."""
    new = []
    for p in perm:
        old = band[p]
        loop = lp.ForOp(
            old.lower.data,
            list(old.lower_operands),
            old.upper.data,
            list(old.upper_operands),
            old.step_value,
            old.loop_name.data,
        )
        for key in HEADER_PROPS:
            if key in old.properties:
                loop.properties[key] = old.properties[key]
        loop.attributes.update(old.attributes)
        loop.induction_var.name_hint = old.induction_var.name_hint
        new.append(loop)
    for outer, inner in itertools.pairwise(new):
        outer.body.block.add_op(inner)
    body: Block = band[-1].body.block
    for op in list(body.ops):
        op.detach()
        new[-1].body.block.add_op(op)
    for p, old in enumerate(band):
        old.induction_var.replace_all_uses_with(new[perm.index(p)].induction_var)
    top = band[0]
    block = top.parent_block()
    assert block is not None
    block.insert_op_before(new[0], top)
    block.detach_op(top)
    top.erase(safe_erase=False)


# --- asking the cost model -----------------------------------------------------------------------


def predicted_seconds(kernel: func.FuncOp, sizes: dict[str, int], hw) -> float:
    """The cost model's time for one call of `kernel` (what `irkit predict` reports)."""
    from irkit.passes.model_perf import ModelPerfPass
    from irkit.perf.predict import CostModel

    module = ModuleOp([kernel.clone()])
    ModelPerfPass().apply(Context(), module)
    return float(CostModel(module, kernel.sym_name.data).evaluate(sizes, hw)["seconds"])


# --- the pass ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopInterchangePass(IrkitPass):
    """Reorder each band of perfectly nested loops into the order the cost model predicts fastest.

    A band is a chain of perfectly nested loop.for ops without parallel,
    vector or unroll facts; it is permuted only when every loop's bounds are
    independent of the band and each stored buffer is accessed at one index
    that names band loops one per coordinate (the loops missing from it, its
    reduction loops, keep their relative order), so that results stay
    bit-identical.  Bands the model does not predict faster stay unchanged.
    """

    name: ClassVar[str] = "tutorial-interchange"

    hardware: str = option("generic", help="hardware to price the orders on: a profile name or a .hw file")
    sizes: str = option("", help='sizes to price at, e.g. sizes="M=256,N=64" (default: the sizes\' defaults)')
    max_band: int = option(4, help="bands of more loops than this (1 to 6) are left alone")
    report: bool = option(False, help="print each band's decision and predicted times to stderr")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from irkit.perf.hardware import load_hardware

        if not 1 <= self.max_band <= 6:
            raise self.fail(f"max-band must be between 1 and 6 (6! = 720 orders), got {self.max_band}", op)
        overrides = self.parse_sizes(op)
        try:
            hw = load_hardware(self.hardware)
        except DiagnosticError as exc:
            raise self.fail(f"hardware: {exc.diagnostics[0].message}", op) from None
        for kernel in find_kernels(op):
            for inner in kernel.body.walk():
                if inner.name.startswith(("tensorop.", "design.")):
                    raise self.fail(f"expects loop-level IR; run lower-tensorop first (found '{inner.name}')", inner)
            sizes = self.kernel_sizes(kernel, overrides)
            for n in range(len(bands(kernel))):
                self.interchange(kernel, n, sizes, hw)

    def parse_sizes(self, op: ModuleOp) -> dict[str, int]:
        out = {}
        for item in filter(None, (s.strip() for s in self.sizes.split(","))):
            name, eq, value = item.partition("=")
            if not eq or not value.strip().isdigit() or int(value) < 1:
                raise self.fail(f"sizes: expected NAME=VALUE with a positive integer VALUE, got '{item}'", op)
            out[name.strip()] = int(value)
        return out

    def kernel_sizes(self, kernel: func.FuncOp, overrides: dict[str, int]) -> dict[str, int]:
        names = [s.name for s in kernel_args(kernel)[0]]
        unknown = sorted(set(overrides) - set(names))
        if unknown:
            raise self.fail(f"sizes: kernel has no size {', '.join(unknown)} (its sizes: {', '.join(names)})", kernel)
        sizes = {s.name: s.default for s in kernel_args(kernel)[0] if s.default is not None}
        sizes.update(overrides)
        missing = [n for n in names if n not in sizes]
        if missing:
            raise self.fail(f'size {", ".join(missing)} has no default; give it with sizes="NAME=VALUE"', kernel)
        return sizes

    def say(self, text: str) -> None:
        if self.report:
            print(f"{self.name}: {text}", file=sys.stderr)

    def interchange(self, kernel: func.FuncOp, n: int, sizes: dict[str, int], hw) -> None:
        band = bands(kernel)[n]
        names = band_names(band)
        if len(band) > self.max_band:
            self.say(f"band ({names}): {len(band)} loops, more than max-band={self.max_band}; left alone")
            return
        why = illegal(band)
        if why is not None:
            self.say(f"band ({names}): not permuted: {why}")
            return
        best, best_time = None, predicted_seconds(kernel, sizes, hw)
        start_time = best_time
        for perm in legal_orders(band)[1:]:
            trial = kernel.clone()
            permute(bands(trial)[n], perm)
            seconds = predicted_seconds(trial, sizes, hw)
            if seconds < best_time * (1 - 1e-9):
                best, best_time = perm, seconds
        if best is None:
            self.say(f"band ({names}): kept, no order is predicted faster than its {start_time:.3g} s")
            return
        permute(band, best)
        chosen = ", ".join(band[p].loop_name.data for p in best)
        self.say(f"band ({names}) -> ({chosen}): kernel predicted {start_time:.3g} s -> {best_time:.3g} s")


register_pass(LoopInterchangePass)
