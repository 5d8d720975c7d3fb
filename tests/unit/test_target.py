"""The target interface: emit, build, load, used by every place that compiles a kernel."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import irkit
from irkit.backends.target import CTarget, target
from irkit.diagnostics import DiagnosticError
from irkit.kernel_abi import find_kernels

REPO = Path(__file__).resolve().parents[2]
DOC = """design axpy {
  sizes { N = 37 }
  tensor x : f32[N] input
  tensor y : f32[N] input
  tensor z : f32[N] output
  z[i] = 2.0 * x[i] + y[i]
  schedule z { vectorize i }
}
"""


def test_the_c_target_emits_builds_and_loads_a_callable_kernel():
    kernel = irkit.compile(DOC, build=False)
    c = target("c")
    assert isinstance(c, CTarget) and c.name == "c"
    source = c.emit(kernel.levels["loop"])
    assert source == kernel.c_source and c.symbol("axpy") in source
    (func,) = find_kernels(kernel.levels["loop"])
    compiled = c.load(c.build(source), func)
    x, y = np.arange(37, dtype=np.float32), np.ones(37, dtype=np.float32)
    z = np.zeros(37, dtype=np.float32)
    compiled({"x": x, "y": y, "z": z}, {"N": 37})
    np.testing.assert_allclose(z, 2 * x + y)
    again, z2 = c.compile(kernel.levels["loop"], func), np.zeros_like(z)
    again({"x": x, "y": y, "z": z2}, {"N": 37})
    np.testing.assert_array_equal(z2, z)


def test_an_unknown_target_is_a_diagnostic_naming_the_known_ones():
    with pytest.raises(DiagnosticError) as exc:
        target("ispc")
    assert exc.value.diagnostics[0].message == "unknown target 'ispc'; the targets are: c"


CALLERS = ["irkit/api.py", "irkit/checks/semantics.py", "irkit/backends/harness.py", "irkit/calibrate/fit.py",
           "irkit/tools/opt.py", "bench/scale.py"]  # fmt: skip


@pytest.mark.parametrize("path", CALLERS)
def test_callers_reach_the_c_backend_only_through_the_target(path):
    """No caller imports the emitter or the builder's compile-and-load directly."""
    tree = ast.parse((REPO / path).read_text())
    imported = {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert ("irkit.backends.c", "emit_c") not in imported
    assert ("irkit.backends.build", "compile_and_load") not in imported
    assert ("irkit.backends.build", "build_shared") not in imported
    assert ("irkit.backends.target", "target") in imported
