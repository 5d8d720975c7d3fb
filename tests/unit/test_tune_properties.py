"""Properties of the tuner's search on random documents: every candidate the beam search returns is
one the real checker (`irkit check`: the checker, then lowering) accepts, and a sample of them, compiled
and run at small sizes, agrees with the numpy oracle.

The documents are small elementwise, reduction (`+=`, `max=`, along either loop), transposing and
contracting (`out[i, j] += f(a[i, k]) * b[k, j]`) statements, f32 or f64, sometimes through a
temporary stage.  The search runs with a
random seed and a small `max_expansions`, so that the seed's sampling matters.  Examples are
derandomized (the compiled kernels come from the build cache on a rerun) and few: the module takes
well under a minute.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st
from oracle_agreement import agrees_with_the_oracle

from irkit.checks.document import check_document
from irkit.frontend import build_design
from irkit.perf.hardware import hardware_of_module
from irkit.tune.estimate import Machine
from irkit.tune.search import beam_search
from irkit.tune.stages import read_kernel
from irkit.validate.suite import replace_schedules

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

PROPERTY = settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example costs compiles, and it prints whole
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def document_errors(text: str) -> list[str]:
    module, diagnostics = build_design(text, "random.design")
    assert module is not None, [x.message for x in diagnostics]
    return [x.message for x in diagnostics + check_document(module) if x.severity == "error"]



# --- random documents --------------------------------------------------------------------------


@st.composite
def expressions(draw, leaves: list[str], depth: int = 2) -> str:
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(leaves))
    a = draw(expressions(leaves, depth - 1))
    b = draw(expressions(leaves + ["2", "0.5"], depth - 1))
    op = draw(st.sampled_from(["+", "-", "*", "min", "max"]))
    return f"{op}({a}, {b})" if op in ("min", "max") else f"({a} {op} {b})"


@st.composite
def documents(draw) -> str:
    """A small random document over loops i (M) and j (N) (and k (K), contracted), the sizes its defaults."""
    dtype = draw(st.sampled_from(["f32", "f64"]))
    kind = draw(st.sampled_from(["map", "rowsum", "colsum", "rowmax", "transpose", "contract"]))
    m, n, kk = draw(st.integers(3, 24)), draw(st.integers(3, 40)), draw(st.integers(2, 12))
    inputs = [f"a{x}" for x in range(draw(st.integers(1, 3)))]
    inner = "i, k" if kind == "contract" else "i, j"
    decls = [f"  tensor {a} : {dtype}[M, {'K' if kind == 'contract' else 'N'}] input" for a in inputs]
    leaves = [f"{a}[{inner}]" for a in inputs]
    if kind == "transpose":
        decls.append(f"  tensor at : {dtype}[N, M] input")
        leaves.append("at[j, i]")
    body = []
    if draw(st.booleans()):  # a temporary stage in between
        decls.append(f"  tensor t : {dtype}[M, {'K' if kind == 'contract' else 'N'}] temp")
        body.append(f"  t[{inner}] = {draw(expressions(leaves))}")
        leaves = [f"t[{inner}]"] + leaves[: draw(st.integers(0, len(leaves)))]
    value = draw(expressions(leaves))
    if body and f"t[{inner}]" not in value:
        value = f"(t[{inner}] - {value})"  # a temporary is read, or the checker refuses it
    if kind == "contract":
        decls.append(f"  tensor b : {dtype}[K, N] input")
        decls.append(f"  tensor out : {dtype}[M, N] output")
        body.append(f"  out[i, j] += {value} * b[k, j]")
    elif kind in ("map", "transpose"):
        decls.append(f"  tensor out : {dtype}[M, N] output")
        body.append(f"  out[i, j] = {value}")
    elif kind == "colsum":  # the reduction loop outside the stored one: a strided walk
        decls.append(f"  tensor out : {dtype}[N] output")
        body.append(f"  out[j] += {value}")
    else:
        decls.append(f"  tensor out : {dtype}[M] output")
        body.append(f"  out[i] {'+=' if kind == 'rowsum' else 'max='} {value}")
    sizes = f"M = {m}, N = {n}" + (f", K = {kk}" if kind == "contract" else "")
    return (
        f"design random {{\n  sizes {{ {sizes} }}\n"
        + "\n".join(decls)
        + "\n\n"
        + "\n".join(body)
        + "\n\n  hardware generic\n}\n"
    )


# --- properties --------------------------------------------------------------------------------


def search(text: str, seed: int, expansions: int) -> tuple[dict, dict[str, list]]:
    kernel = read_kernel(text, "random.design", {})
    module, _ = build_design(text, "random.design")
    machine = Machine.of(hardware_of_module(module, "random.design"))
    found = {
        stage: beam_search(
            stage, [kernel], kernel.reads.get(stage, ()), machine,
            width=6, depth=5, keep=6, seed=seed, max_expansions=expansions,
        )  # fmt: skip
        for stage in kernel.stages
    }
    return kernel.sizes, found


@settings(PROPERTY, max_examples=20)
@given(text=documents(), seed=st.integers(0, 2**16), expansions=st.integers(8, 200), data=st.data())
def test_every_candidate_of_the_search_passes_the_checker_and_a_sample_runs_correct(text, seed, expansions, data):
    note(text)
    assert document_errors(text) == []  # the generator's own documents are legal
    sizes, found = search(text, seed, expansions)
    for stage, scored in found.items():
        assert scored, stage
        for s in scored:
            assert s.text == "; ".join(s.candidate.texts)
            candidate = replace_schedules(text, {stage: s.candidate.texts})
            assert document_errors(candidate) == [], f"{stage}: {s.text}"
    # a sample runs correct: the best non-empty schedule of every stage together, and one drawn at random
    best = {stage: next((s.candidate.texts for s in scored if s.text), []) for stage, scored in found.items()}
    stage = data.draw(st.sampled_from(sorted(found)), label="stage")
    drawn = {stage: data.draw(st.sampled_from(found[stage]), label="candidate").candidate.texts}
    for schedules in (best, drawn):
        schedules = {k: v for k, v in schedules.items() if v}
        document = replace_schedules(text, schedules)
        note(document)
        assert document_errors(document) == []
        odd = {name: max(1, v - 1 - v // 3) for name, v in sizes.items()}  # a size the search did not see
        for at in (sizes, odd):
            agrees_with_the_oracle(document, at, seed % 100)


@PROPERTY
@given(text=documents(), seed=st.integers(0, 2**16))
def test_the_search_is_deterministic_given_the_seed(text, seed):
    _, a = search(text, seed, 24)
    _, b = search(text, seed, 24)
    assert {k: [(s.text, s.score) for s in v] for k, v in a.items()} == {k: [(s.text, s.score) for s in v] for k, v in b.items()}


SMALL_SIZES = {
    "rowsum": {"M": 16, "N": 32},
    "elementwise": {"M": 8, "N": 32},
    "transpose": {"M": 16, "N": 16},
    "blur": {"H": 16, "W": 16},
    "softmax": {"M": 8, "N": 16},
    "gemm": {"M": 16, "N": 16, "K": 16},
    "batch_matmul": {"NB": 2, "M": 8, "N": 8, "K": 8},
    "conv2d": {"N": 1, "C": 4, "F": 4, "H": 8, "W": 8},
}


@pytest.mark.parametrize("example", sorted(SMALL_SIZES))
def test_every_candidate_of_the_search_on_an_example_passes_the_checker(example):
    """The bundled examples, named operations included (regressions: a split loop moved outside its outer
    loop; conv2d's `pack I`, whose loops read the padded copy of I)."""
    path = EXAMPLES / f"{example}.design"
    text = path.read_text()
    kernel = read_kernel(text, str(path), SMALL_SIZES[example])
    module, _ = build_design(text, str(path))
    machine = Machine.of(hardware_of_module(module, str(path)))
    for stage in kernel.stages:
        scored = beam_search(stage, [kernel], kernel.reads.get(stage, ()), machine, width=6, depth=5, keep=5, seed=1)
        for s in scored:
            assert document_errors(replace_schedules(text, {stage: s.candidate.texts})) == [], f"{stage}: {s.text}"


@PROPERTY
@given(text=documents(), seed=st.integers(0, 2**16))
def test_worker_processes_find_what_one_process_finds(text, seed):
    """The workers score chunks of the beam and send back digests of the nests, not the nests: the
    merged result is still the one-process search's, order and scores included."""
    kernel = read_kernel(text, "random.design", {})
    module, _ = build_design(text, "random.design")
    machine = Machine.of(hardware_of_module(module, "random.design"))
    for stage in kernel.stages:
        runs = [
            beam_search(stage, [kernel], kernel.reads.get(stage, ()), machine, width=6, depth=4, keep=6, seed=seed, workers=w)
            for w in (1, 2)
        ]
        assert [(s.text, s.score) for s in runs[0]] == [(s.text, s.score) for s in runs[1]]


def _footprints_directly(a, loops, line: float, packed: int) -> list[tuple[float, float]]:
    """The footprints by their definition, each depth on its own: every root spans the range of its
    outermost loop in loops[d:]."""
    out = []
    for d in range(len(loops) + 1):
        spans = {}
        for lp in reversed(loops[d:]):
            spans[lp.root] = lp.range
        extents = [1 + sum(k * (spans[r] - 1) for r, k in dim if r in spans) for dim in a.abs_coeffs]
        inner = extents[a.inner_dim]
        rows = 1
        for i, e in enumerate(extents):
            rows *= e if i != a.inner_dim else 1
        if packed < d:
            out.append((1.0, -(-rows * inner * a.elem // int(line))))
        else:
            out.append((float(rows), -(-inner * a.elem // int(line))))
    return out


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_footprints_built_outward_are_the_footprints_of_each_depth(data):
    from irkit.tune.estimate import NestLoop, _footprints
    from irkit.tune.stages import Access

    roots = ["i", "j", "k"]
    dims = data.draw(st.lists(st.lists(st.tuples(st.sampled_from(roots), st.integers(-2, 3)), max_size=2), min_size=1, max_size=3))
    order = tuple(data.draw(st.permutations(range(len(dims)))))
    a = Access("A", data.draw(st.booleans()), data.draw(st.sampled_from([4, 8])), tuple(tuple(d) for d in dims), order, (64,) * len(dims))
    loops = [
        NestLoop(f"l{n}", data.draw(st.sampled_from(roots)), 1, 1, data.draw(st.integers(1, 300)), 0, 0, 0, False)
        for n in range(data.draw(st.integers(0, 6)))
    ]
    packed = data.draw(st.integers(0, len(loops)))
    assert _footprints(a, loops, 64.0, packed) == _footprints_directly(a, loops, 64.0, packed)
