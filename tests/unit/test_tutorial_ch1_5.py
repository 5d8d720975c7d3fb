"""Tutorial chapters 1-5 (docs/tutorial/ch1..ch5): `depthwise_conv2d` through irkit.extend.

The chapters' code is literal: every ```python block of chapter N is an excerpt of a file
in examples/tutorial/chN/.  Each snapshot is then loaded in a subprocess of its own
(registrations are global, so two snapshots never share an interpreter) and its
registrations are checked; a hypothesis property checks the lowered loops of chapter 3's
plugin against its reference at random sizes, paddings and schedules.
(test_tutorial_docs.py runs the chapters' console commands.)
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "tutorial"
SNAPSHOTS = ROOT / "examples" / "tutorial"
CHAPTERS = {
    1: "ch1-named-op.md",
    2: "ch2-tensorop-form.md",
    3: "ch3-reference-semantics.md",
    4: "ch4-cost-terms.md",
    5: "ch5-raising.md",
}


def python_blocks(doc: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", doc.read_text(encoding="utf-8"), re.S | re.M)


def run_python(code: str, *args: str, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def plugin(chapter: int, name: str = "depthwise.py") -> str:
    return str(SNAPSHOTS / f"ch{chapter}" / name)


# --- the text shows the snapshots' code ------------------------------------------------------


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_python_blocks_are_excerpts_of_the_snapshot(chapter: int):
    doc = DOCS / CHAPTERS[chapter]
    sources = {p.name: p.read_text(encoding="utf-8") for p in (SNAPSHOTS / f"ch{chapter}").glob("*.py")}
    blocks = python_blocks(doc)
    assert blocks, f"{doc.name} shows no code"
    for block in blocks:
        assert any(block in src for src in sources.values()), (
            f"{doc.name}: this block is not an excerpt of examples/tutorial/ch{chapter}/*.py:\n{block}"
        )


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_chapter_files_named_in_the_text_exist(chapter: int):
    text = (DOCS / CHAPTERS[chapter]).read_text(encoding="utf-8")
    for path in set(re.findall(r"examples/tutorial/ch\d/[\w.]+", text)):
        assert (ROOT / path).is_file(), f"{CHAPTERS[chapter]} names {path}, which does not exist"


def test_each_snapshot_extends_the_one_before():
    """A chapter's plugin keeps every line of the previous one's code (docstrings aside)."""

    def code_lines(chapter: int) -> list[str]:
        src = (SNAPSHOTS / f"ch{chapter}" / "depthwise.py").read_text(encoding="utf-8")
        body = src.split('"""', 2)[2]  # drop the module docstring
        return [line for line in body.splitlines() if line.strip()]

    for chapter in range(2, 6):
        now = code_lines(chapter)
        missing = [line for line in code_lines(chapter - 1) if line not in now]
        # chapter 2 rewrites the registration, chapter 5 the padding parameter
        allowed = {
            "register_named_op(NamedOperation(SPEC))",
            "register_named_op(NamedOperation(SPEC, generalize=generalize))",
        }
        missing = [m for m in missing if m not in allowed and '"padding": Param(' not in m]
        assert not missing, f"ch{chapter}/depthwise.py dropped lines of ch{chapter - 1}: {missing}"


# --- what each snapshot registers ------------------------------------------------------------

_PROBE = textwrap.dedent(
    """
    import sys
    from irkit.extend import load_plugin
    load_plugin(sys.argv[1])
    from irkit.dialects.tensorop import NAMED_TENSOR_OPS
    from irkit.named_ops import NAMED_OPS
    from irkit.passes.generalize import GENERALIZERS
    from irkit.reference import REFERENCE_SEMANTICS
    spec = NAMED_OPS["depthwise_conv2d"]
    has = {
        "tensor_op": "depthwise_conv2d" in NAMED_TENSOR_OPS,
        "generalize": "depthwise_conv2d" in GENERALIZERS,
        "reference": "depthwise_conv2d" in REFERENCE_SEMANTICS,
    }
    print(has["tensor_op"], has["generalize"], has["reference"], spec.flops_per_point)
    """
)


@pytest.mark.parametrize(
    ("chapter", "expected"),
    [
        (1, "False False False 0"),
        (2, "True True False 0"),
        (3, "True True True 0"),
        (4, "True True True 2"),
        (5, "True True True 2"),
    ],
)
def test_snapshot_registers_one_level_more_per_chapter(chapter: int, expected: str):
    proc = run_python(_PROBE, plugin(chapter))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == expected


def test_chapter1_spec_shapes_loops_and_diagnostics():
    code = textwrap.dedent(
        """
        import sys
        from xdsl.dialects.builtin import IntegerAttr, i64
        from irkit.affine_text import Const, Var, evaluate, format_affine
        from irkit.extend import NamedOpError, PluginError, load_plugin, register_named_op, NamedOperation
        load_plugin(sys.argv[1])
        from irkit.named_ops import NAMED_OPS
        spec = NAMED_OPS["depthwise_conv2d"]
        shapes = [[Var("N"), Var("C"), Var("H"), Var("W")], [Var("C"), Const(5), Const(5)]]
        result, agree = spec.result_shape(shapes, {"padding": IntegerAttr(2, i64), "stride": IntegerAttr(2, i64)})
        sizes = {"N": 1, "C": 3, "H": 9, "W": 10}
        assert [evaluate(e, sizes) for e in result] == [1, 3, 5, 5], result
        assert [(format_affine(a), format_affine(b)) for a, b, _ in agree] == [("C", "C")]
        assert spec.loops(4, {}) == ["n", "c", "y", "x", "r", "s"]
        assert spec.reduction_loops(4, {}) == {"r", "s"}
        assert spec.terms_per_element([(1, 3, 9, 10), (3, 5, 5)], {"padding": 2}) == 25
        for params, words in [
            ({"stride": IntegerAttr(0, i64)}, "must be positive"),
            ({"padding": IntegerAttr(-1, i64)}, "must not be negative"),
            ({"dilation": IntegerAttr(2, i64)}, "has no parameter 'dilation'"),
        ]:
            try:
                spec.check_call(["I", "K"], params)
            except NamedOpError as exc:
                assert words in str(exc), exc
            else:
                raise AssertionError(params)
        try:
            register_named_op(NamedOperation(spec))
        except PluginError as exc:
            assert "registered already" in str(exc)
        else:
            raise AssertionError("registered twice")
        print("ok")
        """
    )
    proc = run_python(code, plugin(1))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_chapter2_own_tensor_op_class_replaces_the_generated_one():
    code = textwrap.dedent(
        """
        import sys
        from irkit.extend import load_plugin
        load_plugin(sys.argv[1])
        from irkit.dialects.tensorop import NAMED_TENSOR_OPS
        cls = NAMED_TENSOR_OPS["depthwise_conv2d"]
        print(cls.__name__, cls.name, cls.ARITY)
        """
    )
    proc = run_python(code, plugin(2, "own_tensor_op.py"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["DepthwiseConv2dOp", "tensorop.depthwise_conv2d", "2"]


def test_chapter3_reference_agrees_with_a_direct_loop_nest():
    code = textwrap.dedent(
        """
        import sys
        import numpy as np
        from irkit.extend import load_plugin
        load_plugin(sys.argv[1])
        from irkit.reference import named_op
        rng = np.random.default_rng(1)
        for stride, padding, (h, w), (r, s) in [(1, 0, (5, 6), (3, 3)), (1, 2, (4, 7), (3, 2)), (2, 1, (7, 8), (3, 3))]:
            img = rng.standard_normal((2, 3, h, w)).astype(np.float32)
            k = rng.standard_normal((3, r, s)).astype(np.float32)
            got = named_op("depthwise_conv2d", [img, k], {"stride": stride, "padding": padding}, np.float32)
            p = np.pad(img.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
            oh, ow = (h + 2 * padding - r) // stride + 1, (w + 2 * padding - s) // stride + 1
            want = np.zeros((2, 3, oh, ow))
            for n in range(2):
                for c in range(3):
                    for y in range(oh):
                        for x in range(ow):
                            want[n, c, y, x] = sum(
                                p[n, c, stride * y + i, stride * x + j] * k[c, i, j] for i in range(r) for j in range(s)
                            )
            assert got.dtype == np.float32 and got.shape == want.shape, (got.shape, want.shape)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        print("ok")
        """
    )
    proc = run_python(code, plugin(3))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_chapter5_candidates_widen_the_paddings_raising_tries():
    code = textwrap.dedent(
        """
        import sys
        from irkit.extend import load_plugin
        load_plugin(sys.argv[1])
        from irkit.named_ops import NAMED_OPS
        params = NAMED_OPS["depthwise_conv2d"].params
        print(params["stride"].candidates, params["padding"].candidates(4))
        """
    )
    proc = run_python(code, plugin(5))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None [0, 1, 2, 3, 4, 5, 6, 7]"


# --- property: lowered loops compute the reference --------------------------------------------

_PROPERTY = textwrap.dedent(
    """
    import contextlib, io, pathlib, sys, tempfile
    from hypothesis import HealthCheck, Phase, assume, given, settings, strategies as st
    from irkit.tools.opt import main

    PLUGIN, EXAMPLES, EXPECT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    SCHEDULES = [
        "",
        "schedule O { reorder n, c, y, r, s, x; vectorize x }",
        "schedule O { split x by 4 -> xo, xi; parallel c }",
        "schedule O { reorder n, y, x, r, s, c }",
    ]
    failures = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(n=st.integers(1, 2), c=st.integers(1, 4), h=st.integers(1, 9), w=st.integers(1, 9),
           r=st.integers(1, 4), s=st.integers(1, 4), pad=st.integers(0, 3), sched=st.sampled_from(SCHEDULES))
    def prop(n, c, h, w, r, s, pad, sched):
        assume(h + 2 * pad >= r and w + 2 * pad >= s)
        doc = f'''design p {{
      sizes {{ N = {n}, C = {c}, H = {h}, W = {w} }}
      tensor I : f32[N, C, H, W] input
      tensor K : f32[C, {r}, {s}] input
      tensor O : f32[N, C, (H + {2 * pad} - {r}) / 1 + 1, (W + {2 * pad} - {s}) / 1 + 1] output
      O = depthwise_conv2d(I, K, padding = {pad})
      {sched}
    }}
    '''
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "p.design"
            path.write_text(doc)
            sizes = [a for k, v in dict(N=n, C=c, H=h, W=w).items() for a in ("--check-semantics-size", f"{k}={v}")]
            out = io.StringIO()
            with contextlib.redirect_stderr(out), contextlib.redirect_stdout(out):
                rc = main(["--plugin", PLUGIN, str(path), "-p", "lower-design,lower-tensorop,apply-schedule",
                           "-o", str(pathlib.Path(tmp) / "out.mlir"), "--check-semantics=interp", *sizes])
        agree = rc == 0 and "results agree after passes 'lower-design', 'lower-tensorop', 'apply-schedule'" in out.getvalue()
        if not agree:
            failures.append(doc + out.getvalue())

    prop()
    print("failures:", len(failures))
    if EXPECT == "agree" and failures:
        print(failures[0])
        sys.exit(1)
    if EXPECT == "differ" and not failures:
        sys.exit(1)
    """
)


def test_property_lowered_loops_match_the_reference():
    """Random sizes, filters, paddings (stride 1) and schedules: the loops agree with numpy."""
    proc = run_python(_PROPERTY, plugin(3), "30", "agree", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "failures: 0" in proc.stdout


def test_property_catches_the_flipped_reference():
    """The same property fails with chapter 3's deliberately wrong reference."""
    proc = run_python(_PROPERTY, plugin(3, "wrong_reference.py"), "8", "differ", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
