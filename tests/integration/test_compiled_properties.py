"""Property: random elementwise and reduction statements over random shapes and
layouts, reading tensors, a scalar and sizes as values, compiled to C, agree
with the numpy oracle."""

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import irkit
from irkit.reference import compare, reduction_lengths

READS = {  # tensor -> index texts, over loops i, j (left) and k (reduction)
    "a": ["i", "j"],
    "h": ["i + 1", "2 * j"],
    "v": ["j"],
}
REDUCTION_READS = {"b": ["i", "k"], "c": ["k", "j"]}


@st.composite
def statement(draw):
    dtype = draw(st.sampled_from(["f32", "f64", "i32"]))
    kind = draw(st.sampled_from(["=", "+=", "max="]))
    role = draw(st.sampled_from(["output", "inout"]))  # inout: `+=` adds to its value, `=` may read it
    reads = dict(READS) | (REDUCTION_READS if kind != "=" else {})
    if role == "inout" and kind == "=":
        reads["out"] = ["i", "j"]
    floats = dtype != "i32"

    def leaf():
        choice = draw(st.integers(0, 6))
        if choice == 0:
            return str(draw(st.sampled_from(["0.5", "2", "3"]) if floats else st.sampled_from(["2", "3", "7"])))
        if choice == 1:  # a scalar passed by value, or a size read as a value
            return draw(st.sampled_from(["s", "N", "M"]))
        name = draw(st.sampled_from(sorted(reads)))
        return f"{name}[{', '.join(reads[name])}]"

    def expr(depth):
        if depth == 0 or draw(st.integers(0, 2)) == 0:
            return leaf()
        op = draw(st.sampled_from(["+", "-", "*", "max", "min", "neg"] + (["/", "exp"] if floats else [])))
        if op == "neg":
            return f"-{expr(depth - 1)}"
        if op in ("max", "min"):
            return f"{op}({expr(depth - 1)}, {expr(depth - 1)})"
        if op == "exp":
            return f"exp(min({expr(depth - 1)}, 2))"
        if op == "/":
            return f"({expr(depth - 1)}) / (2 + max({expr(depth - 1)}, 0))"
        return f"({expr(depth - 1)} {op} {expr(depth - 1)})"

    rhs = expr(3)
    if kind != "=":
        rhs = f"({rhs}) * b[i, k]" if draw(st.booleans()) else f"({rhs}) + c[k, j]"
    # a domain: on the output's indices where the rest is defined (a reduction's start value, or an
    # in-out tensor's own value), on the reduction index for any reduction
    wheres = [""]
    if kind != "=" or role == "inout":
        wheres += [" where j <= i", " where j > i", " where j >= i - 1, j <= i + 1", " where j == i"]
    if kind != "=":
        wheres += [" where k <= i", " where k >= j - 2"]
    rhs += draw(st.sampled_from(wheres))
    layouts = {t: draw(st.sampled_from(["row_major", "col_major"])) for t in ("a", "h", "b", "c", "out")}
    sizes = {"N": draw(st.integers(1, 9)), "M": draw(st.integers(1, 9)), "K": draw(st.integers(1, 7))}
    return dtype, kind, rhs, layouts, sizes, role


def document(dtype, kind, rhs, layouts, role="output"):
    layout = "; ".join(f"{t} : {layouts[t]}" for t in layouts)
    return f"""design prop {{
  sizes {{ N = 4, M = 4, K = 4 }}
  tensor a : {dtype}[N, M] input
  tensor h : {dtype}[N + 1, 2 * M] input
  tensor v : {dtype}[M] input
  tensor b : {dtype}[N, K] input
  tensor c : {dtype}[K, M] input
  scalar s : {dtype} input
  tensor out : {dtype}[N, M] {role}
  out[i, j] {kind} {rhs}
  layout {{ {layout} }}
}}"""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(statement(), st.integers(0, 1000))
def test_compiled_statement_agrees_with_numpy(case, seed):
    dtype, kind, rhs, layouts, sizes, role = case
    text = document(dtype, kind, rhs, layouts, role)
    note(text)
    note(str(sizes))
    try:
        kernel = irkit.compile(text, sizes=sizes)
    except Exception as err:  # an unused input is only a warning; anything else is a failure
        raise AssertionError(f"did not compile:\n{text}") from err
    inputs = kernel.random_inputs(seed=seed)
    with np.errstate(all="ignore"):
        got = kernel(**inputs)["out"]
        expected = kernel.reference(inputs)["out"]
    length = reduction_lengths(kernel.levels["design"], kernel.resolve_sizes())["out"]
    report = compare(got, expected, dtype, length)
    assert report.ok, f"{text}\n{sizes}\n{report}"
