"""The directive record and what records share (see `irkit.directives`).

Schedule directives, one record each: everything irkit knows about a directive kind.

A `Directive` record (in the manner of `irkit.extend.NamedOperation`) holds,
for one kind (`split`, `tile`, ...):

- `op`: its design op class (`irkit.dialects.design`);
- `build(builder, children)`: the op from the Lark tree of the grammar rule
  of the same name (`grammars/design.lark`), reporting with `builder.report`;
- `text(entry)`: the directive as `.design` text;
- `from_entry(entry)`: the design op back from its dictionary (raising);
- `replay(nest, entry, at)`: the names-only replay on an
  `irkit.directives.nest.Nest`, used by the checker and by raising's
  comparison alike;
- `space(space)`: the legal choices of the directive for one stage's nest
  and hardware (`Space`), as entries: what a tuner enumerates;
- `transform` and `pass_class`: the module applying it to loop IR (imported
  on first use) and the class of its stand-alone pass `schedule-<kind>`;
- `phase`: `SHAPE` directives run first, stage by stage; `PLACE` ones
  (compute_at, compute_root) afterwards (see `irkit.passes.apply_schedule`);
- `from_loop(facts)`: how raising reads the directive back from one loop's
  facts (`irkit.raising.loop_reader.LoopFacts`: its name and `parallel`,
  `vector`, `unroll` marks), as an entry or None.  Directives that shape the
  nest instead (split, tile, reorder, compute_at) are read from the nest's
  structure by `irkit.raising.schedule_of`, pack and unroll_jam by undoing
  their copies and blocks (`raising/unpack.py`, `raising/unjam.py`); their
  `from_loop` is None.

An *entry* is a directive as a dictionary of Python values: `kind`, the
op's properties (`loop`, `factor`, `outer`, ...: strings, ints, lists) and,
when it came from a document, `loc`.  `entry_of(op)` and `entry_of_row(row)`
make one from a design op and from the `irkit.schedule` dictionary that
lowering writes.

The records live in `irkit.registry.DIRECTIVE_RECORDS`; irkit's own are the
modules of this package, each registering itself when imported.
`docs/extending.md` adds one end to end.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, DictionaryAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Operation

from irkit import registry

SHAPE = "shape"
PLACE = "place"

Entry = dict[str, Any]


@dataclass(frozen=True)
class Space:
    """What one stage's directive choices depend on, at the sizes being tuned for.

    `loops` is the stage's nest now (outermost first), `extents` each loop's
    trip count, `reductions` its reduction loops, `reads` the tensors it
    reads, `lanes` the SIMD lanes of its element type on the hardware,
    `registers` the vector registers, `consumers` the stages that read it
    with their loops (the places `compute_at` may put it), and `temp`
    whether it is a temporary (only those are placed)."""

    stage: str
    loops: tuple[str, ...]
    extents: dict[str, int]
    reductions: frozenset[str] = frozenset()
    reads: tuple[str, ...] = ()
    lanes: int = 8
    registers: int = 16
    consumers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    temp: bool = False
    # what the nest's directives so far fix, so that a record offers only what its replay keeps:
    # each loop's root (the loop it was split from), the loops each loop's bounds use (they must
    # stay outside it), and the loops that must stay innermost (a vectorized one)
    roots: dict[str, str] = field(default_factory=dict)
    outside: dict[str, frozenset[str]] = field(default_factory=dict)
    innermost: frozenset[str] = frozenset()

    def allows(self, order: tuple[str, ...] | list[str]) -> bool:
        """Would the nest keep a loop order `order` (outermost first)?  Each loop inside the loops its
        bounds use, and a loop that must stay innermost last -- what replaying a reorder then checks
        (`Nest.check_order`, `irkit.checks.schedule.check_final`)."""
        at = {name: k for k, name in enumerate(order)}
        for loop, used in self.outside.items():
            if loop in at and any(u in at and at[u] > at[loop] for u in used):
                return False
        return all(order[-1] == loop for loop in self.innermost if loop in at)

    def fresh(self, base: str) -> str:
        """A loop name based on `base` that the nest does not use."""
        name, n = base, 1
        while name in self.loops:
            n += 1
            name = f"{base}{n}"
        return name


@dataclass(frozen=True)
class Directive:
    """Everything irkit knows about one schedule-directive kind (see the module docstring)."""

    kind: str
    op: type
    summary: str
    build: Callable[[Any, list], Operation]
    text: Callable[[Entry], str]
    from_entry: Callable[[Entry], Operation]
    replay: Callable[[Any, Entry, object], None]
    space: Callable[[Space], list[Entry]]
    transform: str
    pass_class: str
    phase: str = SHAPE
    from_loop: Callable[[Any], Entry | None] | None = None

    @property
    def pass_name(self) -> str:
        return f"schedule-{self.kind.replace('_', '-')}"

    def load_transform(self) -> Any:
        """Import the module applying this kind to loop IR (it registers its function)."""
        return importlib.import_module(self.transform)


RECORDS: dict[str, Directive] = registry.DIRECTIVE_RECORDS


def register(record: Directive, *, replace: bool = False) -> Directive:
    """Make `record` the directive of its kind."""
    if record.kind in RECORDS and not replace:
        raise ValueError(f"directive '{record.kind}' is registered already")
    RECORDS[record.kind] = record
    return record


def record_of(kind: str) -> Directive | None:
    return RECORDS.get(kind)


def record_for(op: Operation) -> Directive | None:
    """The record of a design directive op (None for an op that is not one)."""
    kind = op.name.removeprefix("design.")
    record = RECORDS.get(kind)
    return record if record is not None and isinstance(op, record.op) else None


def value_of(attr: object) -> object:
    """A property or dictionary value as Python: ints, strings, lists of them."""
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, DenseArrayBase):
        return [int(x) for x in attr.get_values()]
    if isinstance(attr, ArrayAttr):
        return [value_of(x) for x in attr.data]
    if isinstance(attr, StringAttr):
        return attr.data
    return getattr(attr, "data", attr)


def entry_of(op: Operation) -> Entry:
    """A design directive op as an entry (no `loc`)."""
    entry: Entry = {"kind": op.name.removeprefix("design.")}
    for key, value in op.properties.items():
        entry[key] = value_of(value)
    return entry


def entry_of_row(row: Attribute) -> Entry:
    """An `irkit.schedule` dictionary (as lowering writes it) as an entry, `loc` included."""
    assert isinstance(row, DictionaryAttr), f"a schedule directive must be a dictionary, got {row}"
    return {key: value_of(value) for key, value in row.data.items()}


def directive_op(entry: Entry) -> Operation | None:
    """The design op of an entry; None for a kind irkit does not know."""
    record = record_of(str(entry.get("kind")))
    return None if record is None else record.from_entry(entry)


def directive_text(op: Operation) -> str | None:
    """The `.design` text of a directive op; None for an op that is not one."""
    record = record_for(op)
    return None if record is None else record.text(entry_of(op))


def powers_of_two(low: int, high: int) -> list[int]:
    """2^k with low <= 2^k <= high."""
    out, p = [], 1
    while p <= high:
        if p >= low:
            out.append(p)
        p *= 2
    return out
