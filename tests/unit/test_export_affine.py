"""export-affine and affine-for-to-scf: irkit's loops in upstream dialects, run by xDSL's interpreter.

The check that matters is semantic: an exported kernel, lowered by xDSL's own
`lower-affine` and run in xDSL's interpreter, computes what irkit's loop
interpreter computes on the same inputs -- at sizes that are and are not
multiples of the schedule's tiles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import affine, scf
from xdsl.transforms.lower_affine import LowerAffinePass

from irkit.frontend import parse_design
from irkit.interop.xdsl_interp import run_kernel
from irkit.oracle import random_inputs
from irkit.oracle.loop_interp import run_loop_kernel
from irkit.oracle.tolerance import compare
from irkit.passes.affine_for_to_scf import AffineForToScfPass
from irkit.passes.export_affine import FACT_PREFIX, export_affine
from irkit.raising.verify import lowered_loops

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KERNELS = ["batch_matmul", "blur", "conv2d", "elementwise", "gemm", "rowsum", "softmax", "transpose"]


def _loops(kernel: str):
    path = EXAMPLES / f"{kernel}.design"
    return lowered_loops(parse_design(path.read_text(), str(path)))


def _lowered(loops):
    module = loops.clone()
    export_affine(module)
    module.verify()
    AffineForToScfPass().apply(Context(), module)
    LowerAffinePass().apply(Context(), module)
    module.verify()
    return module


def _agree(loops, sizes: dict[str, int]) -> None:
    inputs = random_inputs(loops, sizes)
    expected = run_loop_kernel(loops, inputs, sizes)
    got = run_kernel(_lowered(loops), inputs, sizes)
    assert set(got) == set(expected)
    for name, value in expected.items():
        result = compare(got[name], value)
        assert result.ok, f"{name}: {result}"


@pytest.mark.parametrize("kernel", KERNELS)
def test_export_leaves_only_upstream_dialects_and_keeps_every_fact(kernel: str) -> None:
    loops = _loops(kernel)
    facts = [
        (op.loop_name.data, op.parallel is not None, op.vector.value.data if op.vector else None)
        for op in loops.walk()
        if op.name == "loop.for"
    ]
    module = loops.clone()
    export_affine(module)
    module.verify()
    assert not [op.name for op in module.walk() if op.dialect_name() == "loop"]
    exported = [
        (
            op.attributes[FACT_PREFIX + "loop_name"].data,
            FACT_PREFIX + "parallel" in op.attributes,
            op.attributes[FACT_PREFIX + "vector"].value.data if FACT_PREFIX + "vector" in op.attributes else None,
        )
        for op in module.walk()
        if isinstance(op, affine.ForOp)
    ]
    assert exported == facts


def test_affine_for_to_scf_leaves_no_affine_for() -> None:
    module = _loops("gemm").clone()
    export_affine(module)
    AffineForToScfPass().apply(Context(), module)
    module.verify()
    assert not any(isinstance(op, affine.ForOp) for op in module.walk())
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    assert loops and all(FACT_PREFIX + "loop_name" in op.attributes for op in loops)


@pytest.mark.parametrize(
    "kernel,sizes",
    [
        ("rowsum", {"M": 9, "N": 21}),
        ("transpose", {"M": 9, "N": 21}),
        ("elementwise", {"M": 9, "N": 21}),
        ("softmax", {"M": 5, "N": 21}),
        ("blur", {"H": 9, "W": 21}),
        ("batch_matmul", {"NB": 2, "M": 5, "N": 7, "K": 3}),
    ],
)
def test_xdsl_interpreter_agrees_with_irkit(kernel: str, sizes: dict[str, int]) -> None:
    _agree(_loops(kernel), sizes)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 40), n=st.integers(1, 40))
def test_tiled_tails_agree_at_any_size(m: int, n: int) -> None:
    """Transpose's tiles leave tails at sizes that are not multiples of the tile: the exported
    min/max bounds must cut them exactly as irkit's loops do."""
    _agree(_loops("transpose"), {"M": m, "N": n})


def test_outputs_come_back_in_logical_shape() -> None:
    loops = _loops("transpose")
    sizes = {"M": 3, "N": 5}
    inputs = random_inputs(loops, sizes)
    out = run_kernel(_lowered(loops), inputs, sizes)
    np.testing.assert_array_equal(out["B"], inputs["A"].T)


# ---- irkit interpret: bad input is a located diagnostic, never a traceback ----------------------


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from irkit.tools.cli import main

    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _lowered_file(tmp_path: Path, kernel: str) -> str:
    path = tmp_path / f"{kernel}.mlir"
    path.write_text(str(_lowered(_loops(kernel))))
    return str(path)


def test_interpret_against_the_document(tmp_path: Path, capsys) -> None:
    path = _lowered_file(tmp_path, "rowsum")
    doc = str(EXAMPLES / "rowsum.design")
    status, out, _ = _cli(capsys, "interpret", path, "--against", doc, "--size", "M=6", "--size", "N=10")
    assert status == 0, out
    assert "@rowsum in xDSL's interpreter at M=6, N=10" in out
    assert "ok: xDSL's interpreter agrees" in out


def test_interpret_refuses_unlowered_input_at_its_line(tmp_path: Path, capsys) -> None:
    module = _loops("rowsum").clone()
    export_affine(module)
    path = tmp_path / "affine.mlir"
    path.write_text(str(module))
    status, _, err = _cli(capsys, "interpret", str(path))
    assert status == 1
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:") and "'affine.for' is not lowered" in first
    assert "Traceback" not in err


def test_interpret_unknown_size_is_a_usage_error(tmp_path: Path, capsys) -> None:
    status, _, err = _cli(capsys, "interpret", _lowered_file(tmp_path, "rowsum"), "--size", "Q=3")
    assert status == 2
    assert "--size: unknown size Q" in err


@settings(max_examples=25, deadline=None)
@given(text=st.text(max_size=200))
def test_interpret_on_arbitrary_text_never_crashes(tmp_path_factory, text: str) -> None:
    import contextlib
    import io

    from irkit.tools.cli import main

    path = tmp_path_factory.mktemp("junk") / "junk.mlir"
    path.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["interpret", str(path)])
    assert status in (0, 1, 2), err.getvalue()
    assert "internal error" not in err.getvalue() and "Traceback" not in err.getvalue()
