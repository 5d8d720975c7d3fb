"""Chapter 6 of the tutorial: the `tutorial-interchange` loop pass (examples/tutorial/ch6/).

The pass must keep results bit-identical (loop interpreter before/after, and
`irkit-opt --check-semantics` on the demo), never make the predicted time
worse, and leave bands it refuses or cannot improve exactly as they were.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irkit.api import lower
from irkit.context import make_context
from irkit.extend import load_plugin
from irkit.frontend import parse_design
from irkit.kernel_abi import find_kernels, kernel_args
from irkit.oracle.loop_interp import run_loop_kernel
from irkit.perf.hardware import load_hardware
from irkit.reference import random_inputs

ROOT = Path(__file__).resolve().parents[2]
CH6 = ROOT / "examples" / "tutorial" / "ch6"
PLUGIN = str(CH6 / "interchange.py")
DEMO = CH6 / "matmul_jki.design"


@pytest.fixture(scope="module")
def ch6():
    """The plugin module (loaded once, as irkit-opt --plugin would)."""
    from irkit.passes.registry import PLUGIN_PASSES

    load_plugin(PLUGIN)
    return sys.modules[PLUGIN_PASSES["tutorial-interchange"]().__module__]


@pytest.fixture(scope="module")
def hw():
    return load_hardware("generic")


def loop_ir(text: str, name: str = "<test>"):
    return lower(parse_design(text, name))["loop"]


def order(module) -> list[str]:
    return [op.loop_name.data for op in find_kernels(module)[0].walk() if op.name == "loop.for"]


def interchanged(ch6, module, **options):
    after = module.clone()
    ch6.LoopInterchangePass(**options).apply(make_context(), after)
    after.verify()
    return after


def same_results(before, after, sizes: dict[str, int]) -> bool:
    inputs = random_inputs(before, sizes, seed=0)
    out_before = run_loop_kernel(before, inputs, sizes)
    out_after = run_loop_kernel(after, inputs, sizes)
    return all(np.array_equal(out_before[k], out_after[k], equal_nan=True) for k in out_before)


def seconds(ch6, module, hw, sizes=None) -> float:
    kernel = find_kernels(module)[0]
    values = {s.name: s.default for s in kernel_args(kernel)[0]} | (sizes or {})
    return ch6.predicted_seconds(kernel, values, hw)


def test_demo_is_interchanged_bit_identically_and_predicted_faster(ch6, hw):
    before = loop_ir(DEMO.read_text(), str(DEMO))
    after = interchanged(ch6, before)
    assert order(before) == ["d0", "d1", "j", "k", "i"]
    assert order(after) == ["d0", "d1", "i", "k", "j"]
    assert seconds(ch6, after, hw) < seconds(ch6, before, hw) / 10
    assert same_results(before, after, {"M": 5, "N": 7, "K": 6})
    # the choice is a fixed point: a second run changes nothing
    assert str(interchanged(ch6, after)) == str(after)


def test_demo_passes_check_semantics_with_compiled_c():
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    pipeline = "lower-design,lower-tensorop,apply-schedule,tutorial-interchange"
    cmd = ["irkit-opt", str(DEMO), "--plugin", PLUGIN, "-p", pipeline, "--check-semantics"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "results agree after passes" in proc.stderr and "'tutorial-interchange'" in proc.stderr


def test_best_order_is_left_unchanged(ch6):
    text = DEMO.read_text().replace("reorder j, k, i", "reorder i, k, j")
    before = loop_ir(text)
    after = interchanged(ch6, before)
    assert str(after) == str(before)


def test_legal_orders_keep_reduction_loops_in_order(ch6):
    text = DEMO.read_text().replace("reorder j, k, i", "reorder k, i, j")
    band = ch6.bands(find_kernels(loop_ir(text))[0])[1]
    assert [loop.loop_name.data for loop in band] == ["k", "i", "j"]
    assert ch6.illegal(band) is None
    # C[i, j]'s only reduction loop is k: all 6 orders are legal.
    assert len(ch6.legal_orders(band)) == 6
    assert ch6.legal_orders(band)[0] == (0, 1, 2)


# Small kernels for the property: (statement, tensors), loops named after the statement's indices.
KERNELS = {
    "matmul": ("C[i, j] += A[i, k] * B[k, j]", "A : f32[M, K] input\n tensor B : f32[K, N] input"),
    "transposed": ("C[i, j] += A[k, i] * B[j, k]", "A : f32[K, M] input\n tensor B : f32[N, K] input"),
    "two_reductions": ("C[i, j] += A[i, k, l] * B[l, j]", "A : f32[M, K, K] input\n tensor B : f32[K, N] input"),
    "copy_t": ("C[i, j] = A[j, i] * 2.0", "A : f32[N, M] input"),
}
LOOPS = {"matmul": "ijk", "transposed": "ijk", "two_reductions": "ijkl", "copy_t": "ij"}


def design(kind: str, loops: tuple[str, ...]) -> str:
    stmt, tensors = KERNELS[kind]
    return f"""design prop {{
  sizes {{ M = 48, N = 40, K = 24 }}
  tensor {tensors}
  tensor C : f32[M, N] output
  {stmt}
  schedule C {{ reorder {", ".join(loops)} }}
  hardware generic
}}
"""


@st.composite
def kernels(draw):
    kind = draw(st.sampled_from(sorted(KERNELS)))
    loops = draw(st.permutations(list(LOOPS[kind])))
    return kind, tuple(loops)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kernels())
def test_random_loop_orders(ch6, hw, case):
    kind, loops = case
    before = loop_ir(design(kind, loops))
    after = interchanged(ch6, before)
    assert sorted(order(after)) == sorted(order(before))
    assert seconds(ch6, after, hw) <= seconds(ch6, before, hw)
    assert same_results(before, after, {"M": 5, "N": 7, "K": 6})
    # reduction loops (k, l) keep their relative order
    reductions = [n for n in order(after) if n in "kl"]
    assert reductions == [n for n in loops if n in "kl"]


def test_every_order_of_the_matmul_band_is_priced(ch6, hw):
    """The pass's choice is the best of all six orders of the demo's band."""
    times = {}
    for perm in itertools.permutations("ijk"):
        times[perm] = seconds(
            ch6, loop_ir(DEMO.read_text().replace("reorder j, k, i", f"reorder {', '.join(perm)}")), hw
        )
    assert min(times, key=times.get) == ("i", "k", "j")
