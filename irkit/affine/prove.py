"""What is known of loop variables (their ranges) and what can be proved of linear forms over them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    IndexType,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from irkit.affine.bounds import _dedupe, lower_terms, upper_terms
from irkit.affine.linear import Div, Lin, NotAffine, div_atom
from irkit.dialects import loop as lp

MAX_TERMS = 48  # bound terms kept while eliminating loops (more: the footprint is refused)


def depth(op: Operation) -> int:
    return len(lp.enclosing_loops(op))


class AnyLoop(Mapping[SSAValue, lp.ForOp]):
    """Loop variable -> its loop, for every loop there is, without listing them."""

    def __getitem__(self, value: SSAValue) -> lp.ForOp:
        owner = value.owner if isinstance(value, BlockArgument) else None
        loop = owner.parent_op() if isinstance(owner, Block) else None
        if isinstance(loop, lp.ForOp) and value is loop.induction_var:
            return loop
        raise KeyError(value)

    def __contains__(self, value: object) -> bool:
        try:
            self[value]  # type: ignore[index]
        except (KeyError, TypeError):
            return False
        return True

    def __iter__(self) -> Iterator[SSAValue]:
        raise TypeError("AnyLoop is not enumerable")

    def __len__(self) -> int:
        raise TypeError("AnyLoop is not enumerable")


class Ranges:
    """Bounds of linear forms over the iterations of `loops`, whose variables are eliminated.

    `lo(e)` is a list of terms whose maximum is <= e at every iteration (a max-form);
    `hi(e)` a list whose minimum is >= e (a min-form, inclusive).  Other atoms are kept.
    """

    def __init__(self, loops: Iterable[lp.ForOp] | None):
        """Over `loops`, or over every loop (`None`: a variable's loop is its block's owner)."""
        self.loop_of: Mapping[SSAValue, lp.ForOp] = (
            AnyLoop() if loops is None else {loop.induction_var: loop for loop in loops}
        )

    def involves(self, form: Lin) -> bool:
        return any(v in self.loop_of for v in form.atoms())

    def lo(self, form: Lin) -> list[Lin]:
        return self._extreme(form, True)

    def hi(self, form: Lin) -> list[Lin]:
        return self._extreme(form, False)

    def _extreme(self, form: Lin, low: bool) -> list[Lin]:
        for atom, k in form.terms.items():
            if isinstance(atom, Div) and self.involves(atom.arg):
                rest = self._extreme(form.without(atom), low)
                parts = self._div(atom, (k > 0) == low)
                return self._limit(_dedupe([r + p.scale(k) for r in rest for p in parts], low))
        ivs = [a for a in form.terms if isinstance(a, SSAValue) and a in self.loop_of]
        if not ivs:
            return [form]
        v = max(ivs, key=lambda a: depth(self.loop_of[a]))
        k = form.terms[v]
        rest = form.without(v)
        loop = self.loop_of[v]
        bounds = self.first(loop) if (k > 0) == low else self.last(loop)
        out: list[Lin] = []
        for b in bounds:
            out.extend(self._extreme(rest + b.scale(k), low))
        return self._limit(_dedupe(out, low))

    def first(self, loop: lp.ForOp) -> list[Lin]:
        """Terms whose maximum is the loop's first value."""
        return lower_terms(loop)

    def last(self, loop: lp.ForOp) -> list[Lin]:
        """Terms whose minimum is at least the loop's last value: one below each upper bound."""
        return [u - 1 for u in upper_terms(loop)]

    def _div(self, atom: Div, low: bool) -> list[Lin]:
        if atom.kind == "mod":
            return [Lin(const=0 if low else atom.by - 1)]
        return [div_atom(atom.kind, p, atom.by) for p in self._extreme(atom.arg, low)]

    max_terms = MAX_TERMS  # bound terms kept while eliminating (more: NotAffine)

    def _limit(self, forms: list[Lin]) -> list[Lin]:
        if len(forms) > self.max_terms:
            raise NotAffine("too many bound terms")
        return forms


class Prover:
    """Decides `e >= 0` for linear forms over a kernel's sizes (all >= 1) and loop variables
    (which range over their bounds), soundly but not completely."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.sizes = {a for a in kernel.body.block.args if isinstance(a.type, IndexType)}

    def _obviously_nonneg(self, form: Lin) -> bool:
        if any(not (isinstance(a, SSAValue) and a in self.sizes) or k < 0 for a, k in form.terms.items()):
            return False
        return form.const + sum(form.terms.values()) >= 0

    def nonneg(self, form: Lin) -> bool:
        if self._obviously_nonneg(form):
            return True
        ranges = Ranges(None)  # every loop, found from its variable: no walk of the kernel
        try:
            return any(self._obviously_nonneg(t) for t in ranges.lo(form))
        except NotAffine:
            return False

    def le(self, a: Lin, b: Lin) -> bool:
        return self.nonneg(b - a)

    def prune(self, forms: Sequence[Lin], low: bool) -> list[Lin]:
        """Drop the terms of a max-form (`low`) or min-form that another term implies."""
        kept = _dedupe(forms, low)
        for f in list(kept):
            others = [g for g in kept if g is not f]
            if any(self.le(f, g) if low else self.le(g, f) for g in others):
                kept = others
        return kept

    def tightest(self, forms: Sequence[list[Lin]], low: bool) -> list[Lin] | None:
        """The bound among several (one per access) that holds for all of them: the smallest
        max-form (`low`) or the largest min-form; None if none is provably so."""
        for cand in forms:
            if all(self.form_le(cand, other, low) for other in forms if other is not cand):
                return cand
        return None

    def form_le(self, a: list[Lin], b: list[Lin], low: bool) -> bool:
        """max(a) <= max(b) (`low`), else min(a) >= min(b), provably."""
        if low:  # max(a) <= max(b): every a-term is below some b-term
            return all(any(self.le(x, y) for y in b) for x in a)
        return all(any(self.le(y, x) for y in b) for x in a)  # min(a) >= min(b)


def multiple_of(form: Lin, step: int, divisors: Mapping[SSAValue, int]) -> bool:
    """Is `form` a multiple of `step` at every value of its atoms, sizes being multiples of their
    `divisors` (`assume { M % 64 == 0 }`)?  A tile loop's range over such a form is a whole
    number of tiles."""
    if form.const % step:
        return False
    for atom, k in form.terms.items():
        if k % step == 0:
            continue
        d = divisors.get(atom) if isinstance(atom, SSAValue) else None
        if d is None or (k * d) % step:
            return False
    return True
