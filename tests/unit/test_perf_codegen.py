"""The cost model's generated Python: quotients done the fast way (a true quotient's floor and
ceiling, not numpy's exact-remainder floor_divide), with integer arithmetic's results."""

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
    # exact multiples too, kept below 2**53 as the numerators are (k up to 2**40 times a divisor
    # up to 2**20 is not, and a float64 does not hold it exactly)
    values = numerators + [k * divisor for k in numerators[:5] if k * divisor < 1 << 53]
    got = fn({"n": np.array(values, dtype=np.float64), "d": float(divisor)})
    assert list(got["f"]) == [v // divisor for v in values]
    assert list(got["c"]) == [-(-v // divisor) for v in values]
    assert list(got["m"]) == [v % divisor for v in values]
