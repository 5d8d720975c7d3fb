"""Parts of a tensor written by `=` statements with a `where`: disjoint, and covering what is read.

A tensor may be defined piecewise (a stencil's interior and its border, a
matrix's diagonal and the rest): several `=` statements, each writing the
points of its `where`.  Two rules make that well defined, and both are
proved for every value of the sizes, by Fourier-Motzkin elimination over
the integers (`Facts.empty`), with a counterexample at small sizes when the
proof fails:

- the parts are *disjoint*: no element is written twice (otherwise the
  result would depend on the statements' order, which a schedule may not
  keep);
- what is *used* is *covered*: every element of an output (the caller
  reads all of it), and every element a statement reads of a temporary.

A part is described over the tensor's positions (`@0`, `@1`, ...), so that
parts naming their indices differently, and reads at shifted indices
(`E[i, j - 1]`), are compared on one footing.  The union of the parts is
not convex, so "covered" is proved as "no point of the region lies outside
every part": one elimination for each way of picking a violated constraint
in each part (an equality is violated on either side).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from irkit.checks.symbolic import Facts, Lin, Samples, box_points, constraint_rows, search

MAX_CASES = 4096  # ways of violating one constraint per part; beyond this the cover is not proved


@dataclass(frozen=True)
class Part:
    """The points one statement writes: `forms` (each >= 0, or == 0 when `equal`) over positions."""

    forms: tuple[tuple[Lin, bool], ...]
    line: int

    def holds(self, env: Mapping[str, int]) -> bool:
        return all((f.evaluate(env) == 0) if eq else (f.evaluate(env) >= 0) for f, eq in self.forms)

    def rows(self) -> list[Lin]:
        return [r for f, eq in self.forms for r in constraint_rows(f, eq)]

    def violations(self) -> list[Lin]:
        """One form (>= 0) for each way a point can lie outside the part."""
        out: list[Lin] = []
        for f, eq in self.forms:
            out.append(f.scale(-1).plus(-1))  # f <= -1
            if eq:
                out.append(f.plus(-1))  # f >= 1
        return out


def position(p: int) -> str:
    """The name of a tensor's p-th position (not a name a document can write)."""
    return f"@{p}"


def substitute(form: Lin, env: Mapping[str, Lin]) -> Lin:
    """`form` with each variable of `env` replaced by its form."""
    out = Lin.make({}, form.const)
    for atom, k in form.terms:
        out = out + (env[atom].scale(k) if isinstance(atom, str) and atom in env else Lin.make({atom: k}))
    return out


def part_of(lhs: list[str], domain: list[tuple[Lin, bool]], line: int) -> Part:
    """A statement's part, from its `where` over its left indices `lhs`."""
    env = {v: Lin.of(position(p)) for p, v in enumerate(lhs)}
    return Part(tuple((substitute(f, env), eq) for f, eq in domain), line)


def box(shape: list[Lin]) -> dict[str, Lin]:
    """The loops `0 <= @p < shape[p]` of a tensor's positions."""
    return {position(p): extent for p, extent in enumerate(shape)}


@dataclass
class Overlap:
    """Two parts both write `point` at the sizes `sizes` (None: not found, only not proved apart)."""

    first: Part
    second: Part
    point: dict[str, int] | None
    sizes: dict[str, int] | None
    used: list[str]  # the sizes the parts and the shape name


def overlaps(parts: list[Part], shape: list[Lin], facts: Facts, samples: Samples) -> list[Overlap]:
    """Each pair of parts that could not be proved disjoint, with a shared point where one is found."""
    tensor = facts.with_loops(box(shape))
    out: list[Overlap] = []
    for a, b in itertools.combinations(parts, 2):
        if tensor.empty(a.rows() + b.rows()):
            continue
        used = {n for f in a.rows() + b.rows() + shape for n in f.names()} - set(box(shape))
        env = search(lambda env, a=a, b=b: _shared(tensor, a, b, env) is None, samples.around(used))
        out.append(Overlap(a, b, _shared(tensor, a, b, env) if env is not None else None, env, sorted(used)))
    return out


def _shared(tensor: Facts, a: Part, b: Part, sizes: dict[str, int]) -> dict[str, int] | None:
    """A point of the tensor both parts write at `sizes`."""
    for point in _points(tensor, sizes):
        if a.holds(sizes | point) and b.holds(sizes | point):
            return point
    return None


@dataclass
class Gap:
    """A point of the region no part covers (`point` over the region's variables), or None when the
    cover could be neither proved nor refuted at the sizes tried."""

    point: dict[str, int] | None
    sizes: dict[str, int] | None
    used: list[str]  # the sizes the region and the parts name


def uncovered(parts: list[Part], region: Facts, at: list[Lin], samples: Samples) -> Gap | None:
    """None if the parts cover every point of `region` (its loops within their extents and its
    `where`) mapped to the tensor by `at` (a form per position); else where they do not."""
    env = {position(p): form for p, form in enumerate(at)}
    moved = [[substitute(f, env) for f in part.violations()] for part in parts]
    cases = 1
    for ways in moved:
        cases *= len(ways)
    if cases <= MAX_CASES and all(region.empty(list(case)) for case in itertools.product(*moved)):
        return None
    used = {n for f in [*region.domain, *region.loops.values(), *at] for n in f.names()} - set(region.loops)
    used |= {n for part in parts for f in part.rows() for n in f.names() if not n.startswith("@")}
    found: dict[str, dict[str, int]] = {}

    def covered(sizes: dict[str, int]) -> bool | None:
        for point in _points(region, sizes):
            here = sizes | point
            if not region.in_domain(here):
                continue
            cell = {position(p): form.evaluate(here) for p, form in enumerate(at)}
            if not any(part.holds(sizes | cell) for part in parts):
                found["point"] = point
                return False
        return None

    sizes = search(covered, samples.around(used))
    return Gap(found.get("point"), sizes, sorted(used))


def _points(facts: Facts, sizes: dict[str, int]) -> list[dict[str, int]]:
    counts = {v: e.evaluate(sizes) for v, e in facts.loops.items()}
    if any(n < 1 for n in counts.values()):
        return []
    return box_points(counts)
