"""Building generated C: compiler lookup, flags, the cache, concurrent builds, failures."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
from pathlib import Path

import pytest

from irkit.backends import build
from irkit.diagnostics import DiagnosticError
from irkit.tools.opt import main as opt_main

SOURCE = """#include <stdint.h>
int64_t irkit_twice(int64_t x) { return 2 * x + OFFSET; }
"""


def source(offset: int = 0) -> str:
    return f"#define OFFSET {offset}\n" + SOURCE


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("IRKIT_CFLAGS", raising=False)
    return tmp_path / "cache"


def call_twice(lib_path: Path, x: int) -> int:
    fn = ctypes.CDLL(str(lib_path)).irkit_twice
    fn.restype, fn.argtypes = ctypes.c_int64, [ctypes.c_int64]
    return fn(x)


# ------------------------------------------------------------------ settings


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("IRKIT_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert build.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("IRKIT_CACHE_DIR")
    assert build.cache_dir() == tmp_path / "x" / "irkit"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert build.cache_dir() == tmp_path / "home" / ".cache" / "irkit"


def test_cflags_from_environment(monkeypatch):
    monkeypatch.delenv("IRKIT_CFLAGS", raising=False)
    assert build.default_cflags() == list(build.DEFAULT_CFLAGS)
    monkeypatch.setenv("IRKIT_CFLAGS", "-O1 -g '-DNAME=a b'")
    assert build.default_cflags() == ["-O1", "-g", "-DNAME=a b"]
    monkeypatch.setenv("IRKIT_CFLAGS", "   ")
    assert build.default_cflags() == list(build.DEFAULT_CFLAGS)
    monkeypatch.setenv("IRKIT_CFLAGS", "'unclosed")
    with pytest.raises(DiagnosticError, match="IRKIT_CFLAGS"):
        build.default_cflags()


def test_missing_compiler(monkeypatch, cache):
    monkeypatch.setenv("CC", "/nonexistent/irkit-cc")
    with pytest.raises(DiagnosticError, match="no C compiler: .* set CC or install cc"):
        build.build_shared(source())
    monkeypatch.delenv("CC")
    monkeypatch.setenv("PATH", str(cache))  # an empty directory: no cc
    with pytest.raises(DiagnosticError, match="no C compiler: 'cc' is not on PATH; set CC or install cc"):
        build.find_compiler()


def test_cc_with_arguments(monkeypatch, cache):
    monkeypatch.setenv("CC", "cc -DOFFSET_FROM_CC=1")
    cc = build.find_compiler()
    assert Path(cc[0]).is_absolute() and cc[1:] == ["-DOFFSET_FROM_CC=1"]
    lib = build.build_shared("#include <stdint.h>\nint64_t irkit_twice(int64_t x) { return 2 * x + OFFSET_FROM_CC; }\n")
    assert call_twice(lib, 20) == 41


def test_compiler_version_is_asked_once(monkeypatch, cache):
    build._VERSIONS.clear()
    calls = []
    real_run = build.subprocess.run

    def counting(argv, *args, **kwargs):
        if "--version" in argv:
            calls.append(argv)
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(build.subprocess, "run", counting)
    build.build_shared(source(1))
    build.build_shared(source(2))
    assert len(calls) == 1
    assert build.compiler_version(build.find_compiler())


# ------------------------------------------------------------------ the cache


def test_build_and_cache_hit(cache, monkeypatch):
    lib = build.build_shared(source(3))
    assert lib.parent == cache and lib.suffix == ".so"
    assert (cache / f"{lib.stem}.c").read_text() == source(3)
    assert call_twice(lib, 4) == 11
    compiles = []
    real = build._compile
    monkeypatch.setattr(build, "_compile", lambda *a, **k: compiles.append(a) or real(*a, **k))
    assert build.build_shared(source(3)) == lib
    assert compiles == []
    assert not list(cache.glob("*.tmp"))


def test_key_depends_on_source_and_flags(cache):
    a = build.build_shared(source(5), ["-O1"])
    b = build.build_shared(source(5), ["-O2"])
    c = build.build_shared(source(6), ["-O1"])
    assert len({a, b, c}) == 3
    assert build.build_shared(source(5), ["-O1"]) == a


def test_environment_flags_are_used(cache, monkeypatch):
    monkeypatch.setenv("IRKIT_CFLAGS", "-O0 -DOFFSET_EXTRA=1")
    lib = build.build_shared("#include <stdint.h>\nint64_t irkit_twice(int64_t x) { return 2 * x + OFFSET_EXTRA; }\n")
    assert call_twice(lib, 1) == 3


def _build_in_child(args):
    cache_dir, text, x = args
    os.environ["IRKIT_CACHE_DIR"] = cache_dir
    lib = build.build_shared(text, ["-O1"])
    return str(lib), call_twice(lib, x)


def test_concurrent_builds_of_one_source(cache):
    text = source(7) + "/* " + "padding " * 2000 + "*/\n"
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:
        results = pool.map(_build_in_child, [(str(cache), text, i) for i in range(4)])
    assert len({path for path, _ in results}) == 1
    assert [value for _, value in results] == [2 * i + 7 for i in range(4)]
    assert len(list(cache.glob("*.so"))) == 1 and len(list(cache.glob("*.c"))) == 1
    assert not list(cache.glob("*.tmp"))


def test_executable(cache):
    exe = build.build_executable({"main": "int main(void) { return 3; }\n", "other": "int other(void);\n"}, ["-O0"])
    assert exe.suffix == ".exe" and os.access(exe, os.X_OK)
    assert sorted(p.name.split(".", 1)[1] for p in cache.glob("*.c")) == ["main.c", "other.c"]


# ------------------------------------------------------------------ failures


def test_compiler_error_names_the_file_and_shows_stderr(cache):
    with pytest.raises(DiagnosticError) as info:
        build.build_shared("int irkit_broken(void) { return undeclared_thing; }\n")
    diag = info.value.diagnostics[0]
    c_files = list(cache.glob("*.c"))
    assert len(c_files) == 1 and diag.file == str(c_files[0])
    assert str(c_files[0]) in diag.message
    assert "undeclared_thing" in diag.message and "error" in diag.message
    assert not list(cache.glob("*.so")) and not list(cache.glob("*.tmp"))


def test_compiler_output_is_trimmed():
    text = "\n".join(f"line {i}" for i in range(500))
    out = build.trim_output(text)
    assert out.count("\n") <= build.MAX_ERROR_LINES + 1
    assert "more lines" in out
    assert len(build.trim_output("x" * 10000)) < build.MAX_ERROR_CHARS + 100


def test_load_failure_is_a_diagnostic(tmp_path):
    bogus = tmp_path / "bogus.so"
    bogus.write_text("not a library")
    with pytest.raises(DiagnosticError, match="cannot load the compiled kernel"):
        build.load_library(bogus)


# ------------------------------------------------------------------ irkit-opt --emit c

LOOP_IR = """func.func @{name}(%N: index {{irkit.name = "{size}"}}, %x: memref<?xf32> {{irkit.name = "x", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}}) {{
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {{loop_name = "i"}} {{
    %c = arith.constant 1.0 : f32
    loop.store %c, %x[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  }}
  func.return
}}
"""


def test_opt_emits_c(tmp_path, capsys):
    f = tmp_path / "k.mlir"
    f.write_text(LOOP_IR.format(name="ones", size="N"))
    assert opt_main([str(f), "--emit", "c"]) == 0
    out = capsys.readouterr().out
    assert "void irkit_ones(int64_t N, float *restrict x)" in out
    assert "x[i] = 1.0f;" in out


def test_opt_c_emission_error_is_exit_1(tmp_path, capsys):
    f = tmp_path / "k.mlir"
    f.write_text(LOOP_IR.format(name="ones", size="double"))
    assert opt_main([str(f), "--emit", "c"]) == 1
    err = capsys.readouterr().err
    assert "size name 'double' cannot be used in C: it is a C keyword" in err
    assert "Traceback" not in err
