"""The extension API (irkit.extend): registration rules, plugin loading, and what the tools show of plugins."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import irkit.extend as ext
from irkit.affine_text import Const
from irkit.dialects import tensorop as t
from irkit.named_ops import NAMED_OPS
from irkit.passes.generalize import GENERALIZERS
from irkit.passes.registry import PLUGIN_PASSES
from irkit.reference import REFERENCE_SEMANTICS

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples" / "gemm.design"


@pytest.fixture
def clean_tables():
    """Registrations are global: put every table back as it was."""
    saved = [
        dict(NAMED_OPS),
        dict(t.NAMED_TENSOR_OPS),
        dict(GENERALIZERS),
        dict(REFERENCE_SEMANTICS),
        dict(PLUGIN_PASSES),
    ]
    yield
    for table, old in zip([NAMED_OPS, t.NAMED_TENSOR_OPS, GENERALIZERS, REFERENCE_SEMANTICS, PLUGIN_PASSES], saved):
        table.clear()
        table.update(old)


def _spec(name: str) -> ext.NamedOpSpec:
    return ext.NamedOpSpec(name, 1, "copy", lambda shapes, p: (list(shapes[0]), []), ranks=(2,))


def test_named_op_names_are_checked(clean_tables):
    with pytest.raises(ext.PluginError, match="lower-case identifiers"):
        ext.register_named_op(ext.NamedOperation(_spec("Bad-Name")))


def test_a_named_op_is_not_replaced_by_accident(clean_tables):
    with pytest.raises(ext.PluginError, match="'matmul' is registered already"):
        ext.register_named_op(ext.NamedOperation(_spec("matmul")))


def test_register_named_op_fills_every_level(clean_tables):
    def generalize(gen):
        raise AssertionError("not called here")

    def reference(args, params, acc):
        return args[0]

    ext.register_named_op(ext.NamedOperation(_spec("copy2d"), generalize=generalize, reference=reference))
    assert NAMED_OPS["copy2d"].summary == "copy"
    cls = t.NAMED_TENSOR_OPS["copy2d"]
    assert cls.name == "tensorop.copy2d" and cls.ARITY == 1
    assert "tensorop.copy2d" in [op.name for op in t.tensorop_dialect().operations]
    assert GENERALIZERS["copy2d"] is generalize and REFERENCE_SEMANTICS["copy2d"] is reference


def test_a_tensor_op_class_must_carry_the_operation_name(clean_tables):
    with pytest.raises(ext.PluginError, match="must be named 'tensorop.copy3'"):
        ext.register_named_op(ext.NamedOperation(_spec("copy3"), tensor_op=t.MatmulOp))


def test_param_minimum_is_enforced_with_the_parameter_name():
    from xdsl.dialects.builtin import IntegerAttr, i64

    with pytest.raises(ext.NamedOpError, match="parameter 'stride' of 'conv2d' must be positive, got 0"):
        NAMED_OPS["conv2d"].check_call(["I", "W"], {"stride": IntegerAttr(0, i64)})
    with pytest.raises(ext.NamedOpError, match="'padding' of 'conv2d' must not be negative, got -1"):
        NAMED_OPS["conv2d"].check_call(["I", "W"], {"padding": IntegerAttr(-1, i64)})


def test_terms_per_element_follows_the_reduction_loops():
    assert NAMED_OPS["matmul"].terms_per_element([(4, 7), (7, 5)], {}) == 7
    assert NAMED_OPS["conv2d"].terms_per_element([(1, 3, 8, 8), (4, 3, 3, 3)], {"padding": 1}) == 27
    assert NAMED_OPS["softmax"].terms_per_element([(6, 9)], {"axis": 0}) == 6
    assert NAMED_OPS["transpose"].terms_per_element([(6, 9)], {}) == 1


def test_flops_per_point_prices_named_ops():
    assert NAMED_OPS["matmul"].flops_per_point == 2 and NAMED_OPS["transpose"].flops_per_point == 0
    # the domain is what flops multiply: matmul over (i, j, k)
    assert [e for e in NAMED_OPS["matmul"].domain([[Const(4), Const(7)], [Const(7), Const(5)]], {})] == [
        Const(4),
        Const(5),
        Const(7),
    ]


def test_pass_conventions_are_checked_when_the_class_is_defined():
    with pytest.raises(ext.PluginError, match="must be lower-case words joined by '-'"):

        class Bad(ext.IrkitPass):
            """Doc."""

            name = "Bad_Name"

    with pytest.raises(ext.PluginError, match="needs a docstring"):

        class NoDoc(ext.IrkitPass):
            name = "no-doc"


def test_register_pass_refuses_clashes_and_non_passes(clean_tables):
    @dataclass(frozen=True)
    class Shadow(ext.IrkitPass):
        """Shadows an irkit pass."""

        name = "lower-design"

        def apply(self, ctx, op):
            pass

    with pytest.raises(ext.PluginError, match="'lower-design' is registered already"):
        ext.register_pass(Shadow)
    with pytest.raises(ext.PluginError, match="expects a ModulePass subclass"):
        ext.register_pass(object)  # type: ignore[arg-type]


def test_options_are_immutable():
    with pytest.raises(TypeError, match="use a tuple"):
        ext.option([1, 2], help="no lists")


def test_installed_plugins_are_loaded_and_their_failures_named(monkeypatch):
    calls = []

    class EP:
        def __init__(self, name, target):
            self.name, self.value, self._target = name, f"pkg.{name}:register", target

        def load(self):
            if isinstance(self._target, Exception):
                raise self._target
            return self._target

    monkeypatch.setattr(ext, "entry_points", lambda group: [EP("good", lambda: calls.append("good"))])
    monkeypatch.setattr(ext, "_loaded", set())
    monkeypatch.setattr(ext, "_installed", None)
    assert ext.load_installed_plugins() == ["good"] and calls == ["good"]
    assert ext.load_installed_plugins() == ["good"] and calls == ["good"], "loaded once"
    monkeypatch.setattr(ext, "entry_points", lambda group: [EP("broken", ImportError("no module named zzz"))])
    monkeypatch.setattr(ext, "_installed", None)
    with pytest.raises(
        ext.PluginError, match=r"installed plugin 'broken' \(pkg.broken:register\) failed while loading"
    ):
        ext.load_installed_plugins()
    assert ext._installed is None, "a failed load is not cached as done"


def test_a_plugin_that_makes_a_context_while_loading_does_not_recurse(monkeypatch):
    from irkit.context import make_context

    made = []

    class EP:
        name, value = "nested", "pkg.nested:register"

        def load(self):
            return lambda: made.append(make_context())

    monkeypatch.setattr(ext, "entry_points", lambda group: [EP()])
    monkeypatch.setattr(ext, "_loaded", set())
    monkeypatch.setattr(ext, "_installed", None)
    assert ext.load_installed_plugins() == ["nested"] and len(made) == 1


# --- through the tools -----------------------------------------------------------------------

PLUGIN = '''
from dataclasses import dataclass

from xdsl.irdl import IRDLOperation, irdl_op_definition
from xdsl.ir import Dialect

from irkit.extend import IrkitPass, option, register_backend, register_dialect, register_pass
from irkit.diagnostics import DiagnosticError


@dataclass(frozen=True)
class CountStoresPass(IrkitPass):
    """Count the stores of every loop-level kernel and fail above a limit.

    The whole text is what --help-pass prints.
    """

    name = "count-stores"

    limit: int = option(1000, help="the most stores a kernel may have")

    def apply(self, ctx, op):
        stores = [o for o in op.walk() if o.name == "loop.store"]
        if len(stores) > self.limit:
            raise self.fail(f"{len(stores)} stores, more than limit={self.limit}", stores[0])


@irdl_op_definition
class MarkOp(IRDLOperation):
    name = "marks.mark"


register_pass(CountStoresPass)
register_dialect(Dialect("marks", [MarkOp], []))


def count_ops(module):
    if not any(o.name == "loop.for" for o in module.walk()):
        raise DiagnosticError([])
    return f"{sum(1 for _ in module.walk())} ops\\n"


register_backend("opcount", count_ops, "the number of operations")
'''


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("IRKIT_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plugin") / "count_stores.py"
    path.write_text(textwrap.dedent(PLUGIN))
    return path


def test_a_plugin_pass_is_listed_with_its_option_and_help(plugin):
    listed = run("irkit.tools.opt", "--plugin", str(plugin), "--list-passes")
    assert listed.returncode == 0, listed.stderr
    assert "count-stores{limit: int = 1000}\n    Count the stores of every loop-level kernel" in listed.stdout
    helped = run("irkit.tools.opt", "--plugin", str(plugin), "--help-pass", "count-stores")
    assert "limit: int = 1000\n      the most stores a kernel may have" in helped.stdout
    assert "The whole text is what --help-pass prints." in helped.stdout
    dialects = run("irkit.tools.opt", "--plugin", str(plugin), "--list-dialects")
    assert "marks (1 operation)" in dialects.stdout
    backends = run("irkit.tools.opt", "--plugin", str(plugin), "--list-backends")
    assert "opcount\n    the number of operations" in backends.stdout


def test_a_plugin_pass_runs_and_fails_located(plugin):
    lower = "lower-design,lower-tensorop"
    ok = run("irkit.tools.opt", "--plugin", str(plugin), str(GEMM), "-p", f"{lower},count-stores", "--emit", "opcount")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip().endswith(" ops")
    bad = run("irkit.tools.opt", "--plugin", str(plugin), str(GEMM), "-p", f"{lower},count-stores{{limit=0}}")
    assert bad.returncode == 1
    assert "gemm.design:" in bad.stderr and "error: count-stores: " in bad.stderr and "more than limit=0" in bad.stderr
    assert "Traceback" not in bad.stderr
    typo = run("irkit.tools.opt", "--plugin", str(plugin), str(GEMM), "-p", "count-stores{limit=many}")
    assert typo.returncode == 2 and "limit" in typo.stderr and "int" in typo.stderr


def test_plugins_are_per_run(plugin):
    listed = run("irkit.tools.opt", "--list-passes")
    assert "count-stores" not in listed.stdout


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (None, "plugin file '{path}' does not exist"),
        ("raise RuntimeError('boom')", "plugin '{path}' failed while loading: RuntimeError: boom"),
        ("import no_such_module_xyz", "no module named 'no_such_module_xyz'"),
    ],
)
def test_a_broken_plugin_is_a_usage_error(tmp_path, source, message):
    path = tmp_path / "broken.py"
    if source is not None:
        path.write_text(source + "\n")
    for tool in ("irkit.tools.opt", "irkit.tools.cli"):
        args = (
            ["--plugin", str(path), "--list-passes"]
            if tool.endswith("opt")
            else ["--plugin", str(path), "check", str(GEMM)]
        )
        proc = run(tool, *args)
        assert proc.returncode == 2, proc.stderr
        assert message.format(path=path) in proc.stderr
        assert "Traceback" not in proc.stderr


def test_an_unknown_emit_format_lists_the_known_ones():
    proc = run("irkit.tools.opt", str(GEMM), "--emit", "fortran")
    assert proc.returncode == 2
    assert "unknown --emit format 'fortran'; expected one of mlir, design, c, python" in proc.stderr


def test_a_named_op_without_a_tensorop_form_stops_lowering_at_the_call(tmp_path):
    plugin = tmp_path / "rowcopy.py"
    plugin.write_text(
        textwrap.dedent(
            """
            from irkit.extend import NamedOperation, NamedOpSpec, register_named_op

            register_named_op(NamedOperation(NamedOpSpec(
                "rowcopy", 1, "copy a matrix", lambda shapes, p: (list(shapes[0]), []), ranks=(2,))))
            """
        )
    )
    doc = tmp_path / "copy.design"
    doc.write_text(
        "design copy {\n  sizes { M = 4, N = 5 }\n  tensor A : f32[M, N] input\n  tensor B : f32[M, N] output\n"
        "  B = rowcopy(A)\n}\n"
    )
    checked = run("irkit.tools.cli", "--plugin", str(plugin), "check", str(doc))
    assert checked.returncode == 0, checked.stderr
    lowered = run("irkit.tools.opt", "--plugin", str(plugin), str(doc), "-p", "lower-design")
    assert lowered.returncode == 1
    assert "copy.design:5:3: error: lower-design: 'rowcopy' has no tensorop form yet" in lowered.stderr


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "return operands[0][:, :, 1:-1, 1:-1]",
            "(registered by a plugin) returned shape (1, 2, 4, 4), but its shape rule gives (1, 2, 6, 6)",
        ),
        ("raise KeyError('strid')", "the reference semantics of 'depthwise_conv2d' (registered by a plugin) failed"),
    ],
)
def test_a_broken_plugin_reference_is_an_error_of_the_check_not_a_crash(tmp_path, body, message):
    """A plugin's numpy semantics that return the wrong shape or raise: `run --check` says so and exits 1."""
    plugin = tmp_path / "bad_reference.py"
    plugin.write_text(
        textwrap.dedent(
            f"""
            import importlib.util
            from pathlib import Path

            from irkit.extend import NamedOperation, register_named_op

            spec = importlib.util.spec_from_file_location("ch3", {str(ROOT / "examples/tutorial/ch3/depthwise.py")!r})
            ch3 = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(ch3)


            def bad(operands, p, acc):
                {body}


            register_named_op(NamedOperation(ch3.SPEC, generalize=ch3.generalize, reference=bad), replace=True)
            """
        )
    )
    doc = ROOT / "examples/tutorial/ch3/dw.design"
    proc = run(
        "irkit.tools.cli",
        "--plugin",
        str(plugin),
        "run",
        "--check",
        "--size",
        "C=2",
        "--size",
        "H=6",
        "--size",
        "W=6",
        str(doc),
    )
    assert proc.returncode == 1, proc.stderr
    assert "--check: the numpy reference cannot evaluate the document" in proc.stderr and message in proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    # --check-semantics cannot check anything against broken semantics: an error, not a note
    checked = run("irkit.tools.opt", "--plugin", str(plugin), str(doc), "-p", "lower-design", "--check-semantics")
    assert checked.returncode == 1, checked.stderr
    assert "error: --check-semantics: " in checked.stderr
    assert "the reference semantics of 'depthwise_conv2d' (registered by a plugin)" in checked.stderr
    assert "Traceback" not in checked.stderr


def test_dialect_and_backend_names_are_checked(monkeypatch):
    from xdsl.ir import Dialect

    from irkit import registry
    from irkit.context import make_context

    monkeypatch.setattr(registry, "PLUGIN_DIALECTS", dict(registry.PLUGIN_DIALECTS))
    monkeypatch.setattr(registry, "BACKENDS", dict(registry.BACKENDS))
    with pytest.raises(ext.PluginError, match="needs the dialect's name"):
        ext.register_dialect(lambda: Dialect("late", [], []))
    with pytest.raises(ext.PluginError, match="'loop' is one of irkit's own"):
        ext.register_dialect(Dialect("loop", [], []))
    ext.register_dialect(lambda: Dialect("late", [], []), name="late")
    assert "late" in make_context().registered_dialect_names
    with pytest.raises(ext.PluginError, match="'c' is one of irkit's own"):
        ext.register_backend("c", lambda m: "", "shadows the C backend")
    with pytest.raises(ext.PluginError, match="lower-case identifiers"):
        ext.register_backend("Bad Name", lambda m: "", "no")
