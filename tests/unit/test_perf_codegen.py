"""The cost model's generated Python: the same numbers as the expression evaluator, with the
quotients done the fast way and a level's fills sharing the subterms no level changes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from irkit.perf import expr as ex
from irkit.perf.codegen import function_source


def compiled(source: str, name: str):
    namespace: dict = {"np": np}
    exec(compile(source, "<test>", "exec"), namespace)  # noqa: S102
    return namespace[name]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 1 << 40), min_size=1, max_size=50),
    st.integers(1, 1 << 20),
)
def test_quotients_match_integer_arithmetic(numerators, divisor):
    """Whole numbers below 2**53: floor, ceiling and remainder as Python's integers give them,
    exact multiples included (the case a rounded quotient could get wrong)."""
    n, d = ex.sym("n"), ex.sym("d")
    terms = {"f": ex.fdiv(n, d), "c": ex.cdiv(n, d), "m": ex.mod(n, d)}
    fn = compiled(function_source("q", terms), "q")
    values = numerators + [k * divisor for k in numerators[:5]]
    got = fn({"n": np.array(values, dtype=np.float64), "d": float(divisor)})
    assert list(got["f"]) == [v // divisor for v in values]
    assert list(got["c"]) == [-(-v // divisor) for v in values]
    assert list(got["m"]) == [v % divisor for v in values]


def test_a_level_independent_part_is_computed_once_and_shared():
    n, cap = ex.sym("N"), ex.sym("cap")
    heavy = ex.mul(ex.add(n, ex.const(3)), ex.cdiv(n, 16))  # reads no level symbol
    terms = {"lines": ex.le(heavy, cap, heavy, ex.mul(heavy, ex.const(2))), "fixed": heavy}
    source = function_source("fills", terms, varying=frozenset({"cap"}))
    fn = compiled(source, "fills")
    sizes = np.array([16.0, 100.0, 4096.0])
    shared: dict = {}
    first = fn({"N": sizes, "cap": 1000.0}, shared)
    assert "fills" in shared
    second = fn({"N": sizes, "cap": 10.0}, shared)  # another level: the shared part reused
    alone = fn({"N": sizes, "cap": 10.0})
    for key in terms:
        np.testing.assert_array_equal(second[key], alone[key])
        np.testing.assert_array_equal(
            first[key], ex.evaluate(terms, {"N": sizes, "cap": 1000.0}, np)[key]
        )
    np.testing.assert_array_equal(second["lines"], np.where(alone["fixed"] <= 10.0, alone["fixed"], 2 * alone["fixed"]))
