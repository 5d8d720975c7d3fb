"""The proofs of loop IR `irkit verify` runs: bounds (`irkit.checks.bounds`, the `check-bounds`
pass) and dataflow (`irkit.checks.dataflow`, the `check-dataflow` pass).

- no false alarm: the loops irkit generates for every example and benchmark
  document, and for every candidate schedule the tuner's search proposes on
  the examples (tiles, tails, packs, register blocks), are proved, bounds and
  dataflow;
- soundness (hypothesis): on random split nests with or without their tail
  clause, random offsets and strides, and sizes assumed divisible or not,
  whatever the proof accepts runs inside its buffers at every size from 1 to
  40, enumerated iteration by iteration;
- the bound of a division the proof uses (`q * (x floordiv q) >= x - q + 1`, ...)
  is a bound at every value;
- corruptions of generated loops (a lost tail clause, a register block one
  row too long, a pack one element too small) are errors at the directive
  that made the loop, naming the index and how far it can reach;
- dataflow corruptions (a compute_at window copied shorter than its consumer
  reads, a pack copy moved after the loop that reads it, two nests of a stage
  swapped) are errors at the statement that reads, with a note at the store.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from search_candidates import candidate_documents
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.parser import Parser

from irkit.affine.bounds import access_forms, lower_terms, upper_terms
from irkit.affine.linear import Div, Lin
from irkit.checks.bounds import _without_div, buffer_extents, check_bounds
from irkit.checks.dataflow import check_dataflow
from irkit.dialects import loop as lp
from irkit.frontend import parse_design
from irkit.raising.verify import lowered_loops
from irkit.tools.opt import make_full_context
from tools.loop_mutants import nest_lines

ROOT = Path(__file__).parents[2]
DOCUMENTS = sorted((ROOT / "examples").glob("*.design")) + sorted((ROOT / "bench" / "documents").glob("*.design"))


def parse(text: str) -> ModuleOp:
    return Parser(make_full_context(), text, "k.mlir").parse_module()


def loops_of(path: Path, text: str | None = None) -> ModuleOp:
    return lowered_loops(parse_design(text if text is not None else path.read_text(), str(path)))


# ---- no false alarm -------------------------------------------------------------------------


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_loops_irkit_generates_are_proved(path):
    loops = loops_of(path)
    assert [d.message for d in check_bounds(loops) + check_dataflow(loops)] == []


SEARCHED = {
    "gemm": {"M": 16, "N": 16, "K": 16},
    "conv2d": {"N": 1, "C": 4, "F": 4, "H": 8, "W": 8},
    "blur": {"H": 16, "W": 16},
    "softmax": {"M": 8, "N": 16},
    "batch_matmul": {"NB": 2, "M": 8, "N": 8, "K": 8},
}


@pytest.mark.parametrize("example", sorted(SEARCHED))
def test_every_schedule_the_search_proposes_is_proved(example):
    """The tuner's candidates are legal schedules of every kind the records offer: none may be a false alarm."""
    path = ROOT / "examples" / f"{example}.design"
    found = candidate_documents(path, SEARCHED[example], width=8, depth=8, keep=16, seed=3)
    assert found
    for stage, schedule, document in found:
        loops = loops_of(path, document)
        assert [d.message for d in check_bounds(loops) + check_dataflow(loops)] == [], f"{stage}: {schedule}"


# ---- soundness against enumeration ---------------------------------------------------------


def out_of_bounds(kernel: func.FuncOp, sizes: dict[str, int]) -> list[str]:
    """Every access outside its buffer when the kernel runs at `sizes`, found by running its loops."""
    env: dict = {}
    for arg, attrs in zip(kernel.body.block.args, kernel.arg_attrs.data):  # type: ignore[union-attr]
        if isinstance(arg.type, IndexType):
            env[arg] = sizes[attrs.data["irkit.name"].data]  # type: ignore[attr-defined]
    extents = buffer_extents(kernel)
    found: list[str] = []

    def run(block) -> None:
        for op in block.ops:
            if isinstance(op, lp.ForOp):
                lo = max(t.evaluate(env) for t in lower_terms(op))
                hi = min(t.evaluate(env) for t in upper_terms(op))
                for v in range(lo, hi, op.step_value):
                    env[op.induction_var] = v
                    run(op.body.block)
            elif isinstance(op, lp.LoadOp | lp.StoreOp):
                at = [f.evaluate(env) for f in access_forms(op)]
                shape = [e.evaluate(env) for e in extents[op.memref]]
                if any(not 0 <= i < n for i, n in zip(at, shape)):
                    found.append(f"{op.name} at {at} of {shape}")

    run(kernel.body.block)
    return found


@st.composite
def split_nests(draw) -> tuple[str, int | None]:
    """A split of N by F, the inner loop's bound `io + W` with or without its `N` clause, reading
    x[a * ii + c] from x of N + h elements (and writing y[ii]); sometimes N assumed a multiple of D."""
    f = draw(st.sampled_from([2, 3, 4, 8]))
    w = f + draw(st.sampled_from([-1, 0, 0, 0, 1]))
    tail = draw(st.booleans())
    a = draw(st.sampled_from([1, 1, 2]))
    c = draw(st.integers(-1, 3))
    h = draw(st.integers(0, 4))
    divisor = draw(st.sampled_from([None, None, f, 2 * f, 2]))
    upper = f"affine_map<(d0, d1) -> ((d0 + {w}), d1)>(%io, %N)" if tail else f"affine_map<(d0) -> ((d0 + {w}))>(%io)"
    assume = (
        ""
        if divisor is None
        else (f" attributes {{irkit.assume = {{divisible = {{N = {divisor} : i64}}, aligned = {{}}, noalias = []}}}}")
    )
    text = f"""
func.func @k(%N: index {{irkit.name = "N"}},
             %x: memref<?xf32> {{irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> ((s0 + {h}))>}},
             %y: memref<?xf32> {{irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}}){assume} {{
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step {f} {{loop_name = "io", stage = "y", origin = "k.design:3:5"}} {{
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to {upper} step 1 {{loop_name = "ii", stage = "y", origin = "k.design:3:5"}} {{
      %v = loop.load %x[affine_map<(d0) -> ((d0 * {a} + {c}))>] (%ii) : memref<?xf32> -> f32
      loop.store %v, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }}
  }}
  func.return
}}
"""
    return text, divisor


@settings(max_examples=150, deadline=None)
@given(nest=split_nests())
def test_what_the_proof_accepts_stays_inside_its_buffers_at_every_size(nest):
    text, divisor = nest
    note(text)
    module = parse(text)
    kernel = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    proved = not check_bounds(module)
    sizes = [n for n in range(1, 41) if divisor is None or n % divisor == 0]
    faults = {n: out_of_bounds(kernel, {"N": n}) for n in sizes}
    if proved:
        assert not any(faults.values()), {n: f for n, f in faults.items() if f}


def test_a_correct_split_with_its_tail_is_proved_and_one_without_is_not():
    """The two ends of the property above, as a check that it can fail either way."""
    tail = re.sub(
        r"\s+",
        " ",
        """
func.func @k(%N: index {irkit.name = "N"}, %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 8 {loop_name = "io"} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to UPPER step 1 {loop_name = "ii"} {
      %c = arith.constant 1.0 : f32
      loop.store %c, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
  }
  func.return
}""",
    )
    good = parse(tail.replace("UPPER", "affine_map<(d0, d1) -> ((d0 + 8), d1)>(%io, %N)"))
    bad = parse(tail.replace("UPPER", "affine_map<(d0) -> ((d0 + 8))>(%io)"))
    assert check_bounds(good) == []
    kernel = next(op for op in bad.walk() if isinstance(op, func.FuncOp))
    assert out_of_bounds(kernel, {"N": 12})
    [diag] = check_bounds(bad)
    assert "store to y[ii] may be out of bounds: index 0 (ii) can reach N + 6" in diag.message


# ---- the bounds of divisions ---------------------------------------------------------------


class _Size:
    """An atom standing for a size."""


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["floordiv", "ceildiv", "mod"]),
    q=st.integers(1, 9),
    k=st.integers(-5, 5).filter(bool),
    a=st.integers(-3, 3),
    b=st.integers(-20, 20),
    rest=st.integers(-4, 4),
    const=st.integers(-30, 30),
    x=st.integers(-60, 60),
)
def test_a_division_is_replaced_by_a_bound_at_every_value(kind, q, k, a, b, rest, const, x):
    """`_without_div(form)` is at most `form` (times q for a floordiv or ceildiv) at every value."""
    n = _Size()
    arg = Lin({n: a}, b)
    atom = Div(kind, arg, q)
    form = Lin({atom: k, n: rest}, const)
    bound = _without_div(form, atom)
    scale = 1 if kind == "mod" else q
    assert bound.evaluate({n: x}) <= scale * form.evaluate({n: x})


# ---- corruptions of generated loops --------------------------------------------------------


def _gemm_loops() -> tuple[str, str]:
    path = ROOT / "examples" / "gemm.design"
    return str(loops_of(path)), path.read_text()


def _line_of(document: str, pattern: str) -> int:
    lines = [i + 1 for i, line in enumerate(document.splitlines()) if re.search(pattern, line)]
    assert len(lines) == 1, pattern
    return lines[0]


@pytest.mark.parametrize(
    ("edit", "directive", "expected"),
    [
        # the column tail of C's zero fill (its loops made by unroll_jam's split of the fill): C
        # written past column N - 1
        (
            (r"(to affine_map<\(d0, d1\) -> \(\(d0 \+ 512\)), d1\)>\(%jo, %N\)", r"\1)>(%jo, %N)"),
            r"^\s*unroll_jam ii by 6",
            "can reach N + 510",
        ),
        # the register block of `unroll_jam ii by 6` one row too long: row ii + 5 reaches M
        ((r"\(d0 \+ 91\), \(d1 \+ -5\)", "(d0 + 91), (d1 + -4)"), r"^\s*unroll_jam ii by 6", "can reach M,"),
        # the packed copy of A one element short
        (
            (r"affine_map<\(\) -> \(24576\)>", "affine_map<() -> (24575)>"),
            r"^\s*pack A at io",
            "past its last element 24574",
        ),
    ],
    ids=["lost-tail", "register-block", "small-pack"],
)
def test_a_corrupted_bound_is_an_error_at_its_directive(edit, directive, expected):
    loops, document = _gemm_loops()
    pattern, replacement = edit
    corrupted, n = re.subn(pattern, replacement, loops, count=1)
    assert n == 1, pattern
    diags = check_bounds(parse(corrupted))
    assert diags, "the corruption went unseen"
    line = _line_of(document, directive)
    assert any(d.line == line and expected in d.message for d in diags), [(d.line, d.message) for d in diags]


# ---- dataflow corruptions ------------------------------------------------------------------


def _swapped(text: str, first: str, second: str) -> str:
    """`text` with the loop nest whose header holds `first` and the one right after it (holding
    `second`) in the other order."""
    lines = text.splitlines(keepends=True)
    a = nest_lines(lines, next(i for i, line in enumerate(lines) if first in line))
    b = nest_lines(lines, a[1])
    assert second in lines[b[0]], lines[b[0]]
    return "".join(lines[: a[0]] + lines[b[0] : b[1]] + lines[a[0] : a[1]] + lines[b[1] :])


def _dataflow_of(example: str, edit) -> tuple[list, str]:
    path = ROOT / "examples" / f"{example}.design"
    corrupted = edit(str(loops_of(path)))
    module = parse(corrupted)
    assert check_bounds(module) == []  # in bounds: only the dataflow is wrong
    return check_dataflow(module), path.read_text()


def test_a_compute_at_window_shorter_than_its_consumer_reads_is_an_error():
    """blur's bx copied over 128 columns of the 256 a tile of out reads."""
    old = "affine_map<(d0, d1) -> (d0, (d1 + 256))>(%W, %xo)"
    diags, _ = _dataflow_of("blur", lambda t: t.replace(old, old.replace("256", "128"), 1))
    [diag] = diags
    assert "load from bx[yi - yo, xi - xo] may read elements that are not written: index 1" in diag.message
    assert "can leave the window [0, min(128, W - xo))" in diag.message


def test_a_pack_copy_moved_after_the_loop_that_reads_it_is_an_error():
    diags, document = _dataflow_of("gemm", lambda t: _swapped(t, 'loop_name = "B_p0"', 'loop_name = "io"'))
    [diag] = diags
    assert diag.message.startswith("load from B_pack[")
    assert "reads elements before they are written: no store to it comes before this load" in diag.message
    assert [n.line for n in diag.notes] == [_line_of(document, r"^\s*pack B at ko")]


def test_two_nests_of_a_stage_swapped_is_an_error():
    """softmax: the exponentials read the row maxima before the nest computing them has run (its
    fill to -inf came first, so the order rule alone would pass it)."""
    diags, _ = _dataflow_of("softmax", lambda t: _swapped(t, 'loop_name = "ii"', 'loop_name = "ii"'))
    [diag] = diags
    assert "reads P_max before a later store writes it" in diag.message


# ---- raising: a split's tail ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (
            1,
            "loop 'ki' inside 'ii' runs from ko to ko + 256, but in its remainder 'ii_tail' from ko to min(ko + 256, K)",
        ),
        (4, "loop 'ki' runs a whole window of 256 from tile loop 'ko' with no bound at K"),
    ],
    ids=["register-block-only", "every-copy"],
)
def test_a_reduction_split_that_lost_its_tail_is_a_difference(count, expected):
    """gemm's `ki` loops lose `min(.., K)`: in bounds (the packs are 256 deep) and every read was
    written once, but the sums run past K.  Raising refuses the split, at `split k by 256`."""
    from irkit.raising.verify import compare_modules

    path = ROOT / "examples" / "gemm.design"
    loops, document = _gemm_loops()
    old = "affine_map<(d0, d1) -> ((d0 + 256), d1)>(%ko, %K)"
    assert loops.count(old) == 4
    corrupted = loops.replace(old, "affine_map<(d0, d1) -> ((d0 + 256))>(%ko, %K)", count)
    diags = compare_modules(parse_design(document, str(path)), parse(corrupted))
    line = _line_of(document, r"^\s*split k by 256")
    assert any(d.line == line and expected in d.message for d in diags), [(d.line, d.message) for d in diags]


def test_a_read_of_a_reduction_over_part_of_its_rows_is_an_error():
    """softmax: the row maxima computed for 8 rows of the 16 a block reads (the other 8 keep the
    fill's -inf): the reduction runs last before the read, so it must cover what is read."""
    old = 'to affine_map<(d0, d1) -> (d0, (d1 + 16))>(%M, %io) step 1 {loop_name = "ii"'
    diags, _ = _dataflow_of("softmax", lambda t: t.replace(old, old.replace("16", "8"), 1))
    [diag] = diags
    assert "load from P_max[ii - io] may read elements that are not written" in diag.message
    assert "[0, min(8, M - io))" in diag.message


def test_a_register_tile_copied_out_over_part_of_its_block_is_an_error():
    """gemm: the copy of C_acc0 back to C over 8 of the 16 columns the block accumulates."""

    def edit(text: str) -> str:
        lines = text.splitlines(keepends=True)
        ki = next(i for i, line in enumerate(lines) if 'loop_name = "ki"' in line)
        start, end = nest_lines(lines, ki)
        out = next(i for i in range(end, len(lines)) if 'loop_name = "jv"' in lines[i])
        lines[out] = lines[out].replace("((d0 + 16))", "((d0 + 8))", 1)
        return "".join(lines)

    diags, _ = _dataflow_of("gemm", edit)
    [diag] = diags
    assert diag.message.startswith("load from C_acc0[jv - jr] copies out the window [0, 8) of index 0")
    assert diag.notes[-1].message == "and the same for C_acc1, C_acc2, C_acc3, C_acc4, C_acc5"
    assert "results are dropped" in diag.message


@pytest.mark.parametrize(
    ("example", "loop", "expected"),
    [
        ("rowsum", "io", "loop 'io' starts at 1, not 0: elements [0, 1) of its dimension are skipped"),
        ("gemm", "A_p1", "the pack copy's loop 'A_p1' starts at 1, not 0: rows [0, 1) of the block are never copied"),
    ],
)
def test_a_loop_that_skips_its_first_element_is_a_located_difference(example, loop, expected):
    """Not 'cannot raise': what is wrong, at the directive that made the loop."""
    from irkit.raising.verify import compare_modules

    path = ROOT / "examples" / f"{example}.design"
    document = path.read_text()
    loops = str(loops_of(path))
    header = re.compile(rf'(loop\.for %\w+ = )affine_map<\(\) -> \(0\)>\(\)( to [^\n]*loop_name = "{loop}")')
    corrupted, n = header.subn(r"\1affine_map<() -> (1)>()\2", loops, count=1)
    assert n == 1
    diags = compare_modules(parse_design(document, str(path)), parse(corrupted))
    assert any(expected in d.message and d.line > 0 for d in diags), [d.message for d in diags]
    assert not any("cannot raise" in d.message for d in diags)


def test_a_parallel_loop_inside_a_parallel_loop_is_an_error():
    """The document checker refuses it (one loop of a nest goes to the cores), so loop IR that has
    it did not come from the document: located at the directive that made the inner loop."""
    from irkit.raising.verify import compare_modules

    path = ROOT / "examples" / "rowsum.design"
    document = path.read_text()
    loops = str(loops_of(path))
    anchor = 'loop_name = "ii", stage = "s", origin = "'
    assert loops.count(anchor) == 1
    start = loops.index(anchor)
    end = loops.index("}", start)
    corrupted = loops[:end] + ", parallel" + loops[end:]
    diags = compare_modules(parse_design(document, str(path)), parse(corrupted))
    line = _line_of(document, r"^\s*split i by 32")
    assert any(d.line == line and "loop 'ii' is parallel inside the parallel loop 'io'" in d.message for d in diags), [
        (d.line, d.message) for d in diags
    ]
