"""The out-of-tree plugin example (examples/plugin), installed as a package of its own.

One scratch virtualenv for the module: it sees the packages of the test
environment (irkit, xDSL, numpy, lark, setuptools, pip) through a `.pth`
file, so nothing is downloaded, and the plugin is installed into it alone.
Then `irkit-opt` and `xdsl-opt`, run with that venv's interpreter, must
find the plugin's dialect and pass through its `xdsl.universe` entry point;
the counts its summary op reports are checked against counts taken from
the printed loop IR independently; bad input is a located error; and the
test environment itself never sees the plugin.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN_SRC = REPO / "examples" / "plugin"
GEMM = "examples/gemm.design"  # relative to REPO, the working directory of every run
TO_LOOPS = "lower-design,lower-tensorop,apply-schedule"
PASS = "loopstats-annotate"
TIMEOUT = 180

# Run with the scratch venv's python: what builds the plugin can use offline.
# (pip last: looking it up makes setuptools' distutils hack stand down.)
_PROBE = """
import importlib.util as u
def has(name):
    try:
        return u.find_spec(name) is not None
    except ImportError:
        return False
st = has("setuptools")
wheels = st and (has("wheel") or has("setuptools.command.bdist_wheel"))
print(int(has("pip")), int(st), int(wheels))
"""


@dataclass(frozen=True)
class PluginEnv:
    python: Path
    how: str  # how the plugin was installed: "pip" or "setuptools"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("IRKIT_TRACEBACK", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(var, None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PIP_NO_INDEX"] = "1"  # never the network
    return env


def _run(args: list[str | Path], cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)


def _venv_python(venv_dir: Path) -> Path:
    for candidate in (venv_dir / "bin" / "python", venv_dir / "Scripts" / "python.exe"):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"no python in {venv_dir}")


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> PluginEnv:
    root = tmp_path_factory.mktemp("plugin_example")
    venv_dir = root / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", venv_dir], cwd=root)
    if made.returncode != 0:
        pytest.skip(f"cannot create a virtualenv with {sys.executable} -m venv: {made.stderr.strip()}")
    python = _venv_python(venv_dir)

    # The test environment's site directories, processed like site-packages
    # (addsitedir runs their .pth files: irkit is installed editable).
    parents = [p for p in site.getsitepackages() if Path(p).is_dir()]
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
    Path(purelib).mkdir(parents=True, exist_ok=True)
    (Path(purelib) / "_test_environment.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in parents)
    )

    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
    src = root / "src"
    shutil.copytree(PLUGIN_SRC, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".*"))
    probe = _run([python, "-c", _PROBE])
    assert probe.returncode == 0, f"the scratch venv cannot import the test environment's packages:\n{probe.stderr}"
    has_pip, has_setuptools, builds_wheels = probe.stdout.split()
    if has_pip == "1" and builds_wheels == "1":
        how = "pip"
        done = _run(
            [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index"]
            + ["--disable-pip-version-check", "--no-input", "--quiet", src],
            cwd=root,
        )
    elif has_setuptools == "1":
        # setuptools < 70.1 without the `wheel` package cannot build a wheel, so
        # pip cannot install offline; setuptools' own install command (what pip
        # ran for such environments before PEP 517) installs the same files.
        how = "setuptools"
        done = _run(
            [python, "-c", "import setuptools; setuptools.setup()", "--quiet", "install"]
            + ["--single-version-externally-managed", "--record", root / "installed.txt"],
            cwd=src,
        )
    else:
        pytest.skip("setuptools is not importable from the test environment: the plugin cannot be built offline")
    assert done.returncode == 0, f"installing the plugin ({how}) failed:\n{done.stdout}\n{done.stderr}"
    return PluginEnv(python, how)


def opt(env: PluginEnv, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """irkit-opt, with the plugin's venv (irkit's console script lives in the other venv)."""
    return _run([env.python, "-m", "irkit.tools.opt", *args])


# ------------------------------------------------- counts, independently of the plugin


@dataclass
class Nest:
    depth: int = 0
    loops: int = 0
    loads: int = 0
    stores: int = 0


_OP_LINE = re.compile(r"^( *)(?:%[\w.]+ = )?loop\.(for|load|store)\b")


def nests_of(loop_ir: str) -> list[Nest]:
    """The top-level loop nests of the one kernel of printed loop IR, from the text alone:
    loops by the indentation of `loop.for` lines (the printer indents each region by 2)."""
    nests: list[Nest] = []
    body_indent: int | None = None
    for line in loop_ir.splitlines():
        if body_indent is None:
            if line.lstrip().startswith("func.func "):
                body_indent = len(line) - len(line.lstrip()) + 2
            continue
        m = _OP_LINE.match(line)
        if not m:
            continue
        indent, kind = len(m.group(1)), m.group(2)
        if kind == "for":
            if indent == body_indent:
                nests.append(Nest())
            nests[-1].loops += 1
            nests[-1].depth = max(nests[-1].depth, (indent - body_indent) // 2 + 1)
        elif kind == "load":
            nests[-1].loads += 1
        else:
            nests[-1].stores += 1
    assert body_indent is not None, "no kernel function in the loop IR"
    return nests


def expected_summary(loop_ir: str, kernel: str, min_depth: int = 1) -> str:
    nests = [n for n in nests_of(loop_ir) if n.depth >= min_depth]
    text = (
        f"loopstats.summary @{kernel} nests {len(nests)} loops {sum(n.loops for n in nests)} "
        f"max_depth {max((n.depth for n in nests), default=0)} loads {sum(n.loads for n in nests)} "
        f"stores {sum(n.stores for n in nests)}"
    )
    return text + (f" min_depth {min_depth}" if min_depth > 1 else "")


@pytest.fixture(scope="module")
def loop_ir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gemm at the loop level, printed by irkit-opt of the test environment (no plugin there)."""
    out = tmp_path_factory.mktemp("plugin_example_ir") / "gemm.loop.mlir"
    done = _run([sys.executable, "-m", "irkit.tools.opt", GEMM, "-p", TO_LOOPS, "-o", out])
    assert done.returncode == 0, done.stderr
    return out


def test_counting_from_text_sees_gemm_schedule(loop_ir: Path):
    # The independent count itself: gemm's scheduled nest jo > ko > io > jr > ii > ki > jv
    # (7 deep); its zero fill runs block by block inside the parallel `jo` (jo > d0 > d1i),
    # so it is no nest of its own.
    depths = [n.depth for n in nests_of(loop_ir.read_text())]
    assert depths == [7]


# ------------------------------------------------------------------------ irkit-opt


def test_list_passes_shows_the_pass_with_options_and_summary(plugin_env: PluginEnv):
    done = opt(plugin_env, "--list-passes")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = f"{PASS}{{min-depth: int = 1, kernel: str = ''}}"
    assert header in lines
    summary = lines[lines.index(header) + 1]
    assert summary.startswith("    Summarise each kernel's loop nests")
    assert "lower-design" in lines  # irkit's own passes are still there


def test_list_dialects_shows_the_dialect(plugin_env: PluginEnv):
    done = opt(plugin_env, "--list-dialects")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "loopstats (1 operation)" in lines
    assert lines[lines.index("loopstats (1 operation)") + 1].startswith("    The `loopstats` dialect")


def test_help_pass_shows_the_option_help(plugin_env: PluginEnv):
    done = opt(plugin_env, "--help-pass", PASS)
    assert done.returncode == 0, done.stderr
    assert "  min-depth: int = 1\n      count only the loop nests at least this deep" in done.stdout
    assert "  kernel: str = ''\n      annotate only the kernel function of this name" in done.stdout
    assert "Defined in irkit_loopstats.annotate (LoopStatsAnnotatePass)." in done.stdout


def test_pipeline_from_design_inserts_the_summary(plugin_env: PluginEnv, loop_ir: Path):
    done = opt(plugin_env, GEMM, "-p", f"{TO_LOOPS},{PASS}")
    assert done.returncode == 0, done.stderr
    baseline = loop_ir.read_text()
    summary = expected_summary(baseline, "gemm")
    lines = done.stdout.splitlines()
    assert lines[1] == "  " + summary  # first op of the module
    # The pass adds the summary and changes nothing else.
    assert "\n".join(lines[:1] + lines[2:]) + "\n" == baseline


def test_min_depth_option(plugin_env: PluginEnv, loop_ir: Path):
    done = opt(plugin_env, loop_ir, "-p", f"{PASS}{{min-depth=8}}")
    assert done.returncode == 0, done.stderr
    summary = expected_summary(loop_ir.read_text(), "gemm", min_depth=8)
    assert done.stdout.splitlines()[1] == "  " + summary
    assert " nests 0 " in summary  # the one nest, 7 deep, is left out


def test_design_level_input_is_a_located_error(plugin_env: PluginEnv):
    done = opt(plugin_env, GEMM, "-p", PASS)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    line = next(i for i, text in enumerate((REPO / GEMM).read_text().splitlines(), 1) if text.startswith("design "))
    assert f"{GEMM}:{line}:1: error: {PASS}: 'design.design' is not loop-level IR" in done.stderr


# ------------------------------------------------------------------------- xdsl-opt


def test_xdsl_opt_runs_the_pass(plugin_env: PluginEnv, loop_ir: Path):
    done = _run([plugin_env.python, "-m", "xdsl.tools.xdsl_opt", loop_ir, "-p", PASS])
    assert done.returncode == 0, done.stderr
    assert "  " + expected_summary(loop_ir.read_text(), "gemm") + "\n" in done.stdout


# ----------------------------------------------------------------------- isolation


def test_plugin_did_not_leak_into_the_test_environment(plugin_env: PluginEnv):
    from xdsl.universe import Universe

    from irkit.passes.registry import all_passes

    assert plugin_env.how in ("pip", "setuptools")
    assert importlib.util.find_spec("irkit_loopstats") is None
    assert "irkit_loopstats" not in {ep.name for ep in entry_points(group="xdsl.universe")}
    assert "loopstats" not in {ep.name for ep in entry_points(group="irkit.plugins")}
    assert PASS not in all_passes()
    assert "loopstats" not in Universe.get_multiverse().all_dialects


# ------------------------------------------------- irkit's own entry point group


def test_irkit_plugins_entry_point_adds_a_backend(plugin_env: PluginEnv, loop_ir: Path):
    listed = opt(plugin_env, "--list-backends")
    assert listed.returncode == 0, listed.stderr
    assert "loopstats\n    a table of each kernel's loop nests" in listed.stdout
    done = opt(plugin_env, loop_ir, "--emit", "loopstats")
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split() == ["kernel", "nests", "loops", "max_depth", "loads", "stores"]
    nests = nests_of(loop_ir.read_text())
    expected = ["gemm", len(nests), sum(n.loops for n in nests), max(n.depth for n in nests)]
    expected += [sum(n.loads for n in nests), sum(n.stores for n in nests)]
    assert row.split() == [str(x) for x in expected]


def test_the_backend_refuses_ir_that_is_not_loop_level(plugin_env: PluginEnv):
    done = opt(plugin_env, GEMM, "-p", "lower-design", "--emit", "loopstats")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "error: --emit loopstats: kernel @gemm is not loop-level IR yet" in done.stderr


def test_the_python_api_loads_installed_plugins_too(plugin_env: PluginEnv):
    """`irkit.compile` is an entry point: it loads installed plugins.  A lookup or a context
    never does (that would import plugins from inside a verifier)."""
    code = (
        "import irkit\n"
        "from irkit.context import make_context\n"
        "from irkit.registry import BACKENDS\n"
        "before = sorted(BACKENDS)\n"
        "make_context()\n"
        "after_context = sorted(BACKENDS)\n"
        f"irkit.compile({GEMM!r}, build=False)\n"
        "print(before, after_context, sorted(BACKENDS))\n"
    )
    done = _run([plugin_env.python, "-c", code])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] [] ['loopstats']"
