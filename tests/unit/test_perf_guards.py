"""The cost model's branches on index comparisons (`irkit.perf.guards`): how many iterations of a
loop take each arm, against counting them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from irkit.perf import expr as ex
from irkit.perf.guards import true_count


def value(e, env) -> float:
    return float(ex.evaluate({"x": e}, env)["x"])


OPS = {"lt": int.__lt__, "le": int.__le__, "gt": int.__gt__, "ge": int.__ge__, "eq": int.__eq__, "ne": int.__ne__}


@settings(max_examples=300, deadline=None)
@given(
    pred=st.sampled_from(list(OPS)),
    lb=st.integers(-5, 5),
    n=st.integers(0, 12),
    other=st.integers(-8, 20),
    var_left=st.booleans(),
)
def test_a_comparison_with_the_loop_variable_counts_exactly(pred, lb, n, other, var_left):
    a, b = (ex.sym("k"), ex.sym("j")) if var_left else (ex.sym("j"), ex.sym("k"))
    count = true_count(pred, a, b, "k", ex.sym("lb"), ex.sym("n"))
    assert count is not None
    got = value(count, {"j": other, "lb": lb, "n": n})
    values = range(lb, lb + n)
    want = sum(OPS[pred](k, other) if var_left else OPS[pred](other, k) for k in values)
    assert got == want


@settings(max_examples=100, deadline=None)
@given(pred=st.sampled_from(list(OPS)), i=st.integers(-4, 4), j=st.integers(-4, 4), n=st.integers(0, 9))
def test_a_comparison_the_loop_does_not_move_holds_on_all_or_none_of_it(pred, i, j, n):
    count = true_count(pred, ex.sym("i"), ex.sym("j"), "k", ex.ZERO, ex.sym("n"))
    assert value(count, {"i": i, "j": j, "n": n}) == (n if OPS[pred](i, j) else 0)


def test_both_sides_moving_with_the_loop_is_not_counted():
    k = ex.sym("k")
    assert true_count("lt", k, k + 1, "k", ex.ZERO, ex.sym("n")) is None
    assert true_count("lt", k * 2, ex.sym("j"), "k", ex.ZERO, ex.sym("n")) is None
