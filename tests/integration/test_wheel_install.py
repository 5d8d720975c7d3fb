"""What users get: the built wheel, installed into a fresh virtualenv, run from outside the source tree.

The editable install the rest of the suite uses reads every module and data
file straight from the source tree, so it cannot notice a subpackage or a
data file the wheel leaves out.  This module builds the wheel (offline, with
the test environment's setuptools), checks that it holds every package of
the source tree and every data file the tools read, installs it into a
scratch venv and runs the user's commands there from a directory that is not
the source tree.  The scratch venv reaches irkit's dependencies (xDSL, lark,
numpy) through a `.pth` file naming the test environment's site-packages, so
nothing is downloaded; the `.pth` files of that directory (the editable
irkit among them) are not processed, so `import irkit` can only find the
wheel's copy, and the first test checks that it does.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 300


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("IRKIT_TRACEBACK", "PYTHONHOME", "PYTHONPATH", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(var, None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PIP_NO_INDEX"] = "1"  # never the network
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)


def _ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy of the source (what git tracks, or would track): building in place would
    # leave build/ and *.egg-info in the tree.
    src = out / "src"
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO)
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.split("\0")):
            if (REPO / name).is_file():
                (src / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / name, src / name)
    else:  # not a git checkout (an unpacked source archive)
        junk = shutil.ignore_patterns(".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "Output")
        shutil.copytree(REPO, src, ignore=junk)
    _ok(_run([sys.executable, "-m", "pip", "wheel", src, "--no-deps", "--no-build-isolation", "-w", out / "dist"], cwd=out))
    wheels = list((out / "dist").glob("irkit-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    _ok(_run([sys.executable, "-m", "venv", root], cwd=root))
    python = root / "bin" / "python"
    purelib = _ok(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root)).stdout.strip()
    deps = [p for p in site.getsitepackages() if Path(p, "xdsl").is_dir()]
    assert deps, "the test environment's site-packages with xdsl"
    Path(purelib, "irkit_test_deps.pth").write_text("\n".join(deps) + "\n")
    _ok(_run([python, "-m", "pip", "install", "--no-deps", "--no-index", wheel], cwd=root))
    return root


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the source tree holding copies of two example documents."""
    work = tmp_path_factory.mktemp("user")
    for name in ("gemm.design", "blur.design"):
        shutil.copy(REPO / "examples" / name, work / name)
    return work


def _source_packages() -> set[str]:
    found = {
        ".".join(init.parent.relative_to(REPO).parts)
        for init in (REPO / "irkit").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    return found | {"irkit.grammars", "irkit.examples"}


def test_wheel_holds_every_package_and_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {str(Path(n).parent).replace("/", ".") for n in names if n.endswith("/__init__.py")}
    assert _source_packages() <= packages, f"missing from the wheel: {sorted(_source_packages() - packages)}"
    assert "irkit/grammars/design.lark" in names
    assert "irkit/hw/generic.hw" in names
    assert "irkit/__main__.py" in names
    examples = {Path(n).name for n in names if n.startswith("irkit/examples/") and n.endswith(".design")}
    assert examples == {p.name for p in (REPO / "examples").glob("*.design")}


def test_installed_irkit_is_the_wheel(venv: Path, workdir: Path) -> None:
    where = _ok(_run([venv / "bin" / "python", "-c", "import irkit; print(irkit.__file__)"], cwd=workdir)).stdout
    assert Path(where.strip()).is_relative_to(venv), where


def test_run_check(venv: Path, workdir: Path) -> None:
    sizes = ["--size", "M=48", "--size", "N=40", "--size", "K=24"]
    out = _ok(_run([venv / "bin" / "irkit", "run", "gemm.design", *sizes, "--check"], cwd=workdir)).stdout
    assert "check C: ok" in out


def test_python_dash_m(venv: Path, workdir: Path) -> None:
    assert _ok(_run([venv / "bin" / "python", "-m", "irkit", "check", "gemm.design"], cwd=workdir)).stdout == "gemm.design: ok\n"


def test_verify(venv: Path, workdir: Path) -> None:
    out = _ok(_run([venv / "bin" / "irkit", "verify", "blur.design"], cwd=workdir)).stdout
    assert "ok, the generated code computes what the document asks" in out


def test_validate_quick(venv: Path, workdir: Path) -> None:
    # The suite is built from the example documents installed as package data, not from a source tree.
    proc = _ok(_run([venv / "bin" / "irkit", "validate", "--quick"], cwd=workdir))
    assert "8 cases; median |error|" in proc.stdout + proc.stderr


def test_irkit_opt_raises(venv: Path, workdir: Path) -> None:
    passes = "lower-design,lower-tensorop,apply-schedule,raise-loop,raise-tensorop"
    out = _ok(_run([venv / "bin" / "irkit-opt", "blur.design", "-p", passes, "--emit", "design"], cwd=workdir)).stdout
    assert "schedule out {" in out and "compute_at out." in out
