"""`select(a OP b, x, y)` through every level: parsed and checked, printed back, lowered to C that
agrees with the numpy oracle (NaN included, by C's rules), raised back by `irkit verify`, priced,
and refused with a located message where a comparison is not a select's condition."""

from __future__ import annotations

import numpy as np
import pytest

import irkit
from irkit.frontend import parse_design
from irkit.perf import load_hardware, predict
from tests.unit.oracle_agreement import agrees_with_the_oracle

LEAKY = """design leaky {
  sizes { N = 1000 }
  tensor X : f32[N] input
  tensor Y : f32[N] output
  Y[i] = select(X[i] > 0, X[i], 0.01 * X[i])
}
"""

CLAMPED = """design clamp {
  sizes { M = 37, N = 61 }
  tensor A : f32[M, N] input
  tensor B : f32[M, N] input
  tensor C : f32[M, N] output
  C[i, j] = select(A[i, j] + B[i, j] >= 1, 1, A[i, j] + B[i, j]) + select(A[i, j] != B[i, j], 0, -1)
  schedule C {
    parallel i
    vectorize j by 8
  }
}
"""

MASKED_SUM = """design masked {
  sizes { M = 19, N = 45 }
  tensor X : f32[M, N] input
  tensor s : f32[M] output
  s[i] += select(X[i, j] <= 0.5, X[i, j], 0)
}
"""

INTEGERS = """design imax {
  sizes { N = 77 }
  tensor a : i32[N] input
  tensor b : i32[N] input
  tensor c : i32[N] output
  c[i] = select(a[i] < b[i], b[i] - a[i], a[i] * 2)
}
"""


@pytest.mark.parametrize("text, sizes", [(LEAKY, {"N": 1000}), (LEAKY, {"N": 13}), (CLAMPED, {"M": 37, "N": 61}),
                                         (MASKED_SUM, {"M": 19, "N": 45}), (INTEGERS, {"N": 77})])  # fmt: skip
def test_select_runs_as_the_oracle_says(text, sizes):
    agrees_with_the_oracle(text, sizes, name="select.design")


def test_a_comparison_with_nan_is_false_but_not_equal_is_true():
    text = LEAKY.replace("select(X[i] > 0, X[i], 0.01 * X[i])", "select(X[i] > 0, 1, 0) + select(X[i] != X[i], 10, 0)")
    kernel = irkit.compile(text, name="nan.design")
    x = np.array([np.nan, 2.0, -1.0, 0.0], dtype=np.float32)
    got = kernel({"N": 4}, X=x)["Y"]
    np.testing.assert_array_equal(got, [10.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(kernel.reference({"X": x}, {"N": 4})["Y"], got)


def test_the_c_is_a_conditional_and_the_vector_loop_keeps_its_pragma():
    c = irkit.compile(CLAMPED, name="clamp.design", build=False).c_source
    assert " ? " in c and " >= " in c
    assert "#pragma omp simd" in c


@pytest.mark.parametrize("text", [LEAKY, CLAMPED, MASKED_SUM, INTEGERS])
def test_select_prints_back_as_written_and_verifies(text):
    from irkit.backends.design_text import print_design
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(text, "select.design")
    printed = print_design(module)
    statement = next(line.strip() for line in text.splitlines() if "select(" in line)
    assert statement in [line.strip() for line in printed.splitlines()]
    assert print_design(parse_design(printed, "printed.design")) == printed
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []


def test_select_is_priced():
    hw = load_hardware("generic", document=None)
    assert predict(CLAMPED, {"M": 512, "N": 512}, hw).seconds > 0


@pytest.mark.parametrize(
    "expr, message",
    [
        ("select(X[i], 1, 0)", "the condition of 'select' is a comparison"),
        ("max(X[i] > 0, 1)", "a comparison is a value only as the condition of 'select(cond, a, b)'"),
        ("select(X[i] > 0, X[i] < 1, 0)", "not as an argument of 'select'"),
        ("select(X[i] > 0, 1)", "'select' takes 3 arguments, got 2"),
    ],
)
def test_a_misplaced_comparison_is_a_located_error(expr, message, capsys, tmp_path):
    from irkit.tools.cli import main

    path = tmp_path / "bad.design"
    path.write_text(LEAKY.replace("select(X[i] > 0, X[i], 0.01 * X[i])", expr))
    assert main(["check", str(path)]) != 0
    err = capsys.readouterr().err
    assert message in err and f"{path}:5:" in err
    assert "Traceback" not in err


def test_select_builds_warning_free_and_runs_asan_clean():
    """-Wall -Wextra -Werror at -O3, and AddressSanitizer with the vector loop and its tails running."""
    from irkit.backends.harness import ASAN_FLAGS, run_harness
    from tests.unit.test_c_vector import WERROR, asan_or_skip, loop_ir

    irkit.compile(CLAMPED, name="clamp.design", cflags=WERROR)
    irkit.compile(INTEGERS, name="imax.design", cflags=WERROR)
    asan_or_skip()
    flags = [*ASAN_FLAGS, "-O3", "-march=native", "-fno-math-errno", "-DIRKIT_NT_MIN_BYTES=0"]
    for text, sizes in ((CLAMPED, {"M": 5, "N": 37}), (INTEGERS, {"N": 77})):
        result = run_harness(loop_ir(text), None, sizes, flags)
        assert result.returncode == 0, result.stderr[-3000:]
