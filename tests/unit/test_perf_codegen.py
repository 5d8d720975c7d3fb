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


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 10_000), st.integers(1, 10_000), st.lists(st.integers(1, 1 << 20), min_size=1, max_size=4))
def test_a_shared_part_is_computed_once_and_gives_the_same_terms(n, m, caps):
    """With varying symbols (a cache level's `cap`), the subterms free of them are computed at the
    first call that passes `shared` and reused at the next: every call gives what a function
    without sharing gives, and a call with the shared part filled reads it instead of `e`."""
    n_, m_, cap = ex.sym("n"), ex.sym("m"), ex.sym("cap")
    fixed = ex.add(ex.mul(n_, m_), ex.cdiv(n_, ex.const(16)))  # no cap in it
    terms = {"lines": ex.min_(fixed, cap), "trips": fixed, "mixed": ex.add(ex.mul(fixed, cap), n_)}
    source = function_source("f", terms)
    assert "del t" in source  # n * m and ceil(n / 16) are dead once added: not held to the end
    plain = compiled(source, "f")
    split = compiled(function_source("g", terms, varying=frozenset({"cap"})), "g")
    shared: dict = {}
    for c in caps:
        env = {"n": float(n), "m": float(m), "cap": float(c)}
        assert split(env, shared) == plain(env) == split(env)
    assert "v" in shared
    # the shared part is read, not recomputed: n and m changed, cap the same, the fixed terms stay
    env = {"n": float(n + 1), "m": float(m + 1), "cap": float(caps[0])}
    got = split(env, shared)
    assert got["trips"] == plain({"n": float(n), "m": float(m), "cap": 0.0})["trips"]
    assert split(env) == plain(env)
