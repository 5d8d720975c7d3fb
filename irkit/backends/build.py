"""Compile generated C with the system compiler, through a content-addressed cache.

- **Compiler:** `$CC` (split like a shell word list, so `CC="ccache gcc"`
  works), else `cc`.  Missing: `DiagnosticError` "no C compiler: set CC or
  install cc".
- **Flags:** the optimisation flags default to `-O3 -march=native -fopenmp
  -fno-math-errno`, plus `-mprefer-vector-width=512` on x86-64;
  a `cflags` argument or the environment variable `IRKIT_CFLAGS` (shell
  words; an empty value counts as unset) *replaces* them.  The flags that
  make the output what irkit needs are always added before them:
  `-std=c99` (which the generated C is written in; a later `-std=` in
  `cflags` wins) and, for libraries, `-fPIC -shared`; `-lm` is linked last.
  So `IRKIT_CFLAGS="-O0 -g"` is a debug build, not a broken link.
  Why the two extra defaults: `-fno-math-errno` lets gcc vectorize `sqrt`
  (and inline other math builtins) and changes no value -- only whether libm
  sets `errno`, which no kernel reads; gcc for x86 with `-march=native` uses
  256-bit vectors even where AVX-512 exists unless told
  `-mprefer-vector-width=512` (no effect on a CPU without AVX-512).
- **Cache:** `$IRKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/irkit`, else
  `~/.cache/irkit`.  An artefact's key is the sha256 of the source(s), the
  compiler's resolved path, its `--version` first line (asked once per
  process), the full flag list, the kind (library or executable) and the
  machine (`platform.machine()`, plus the CPU's flags when `-march=native`
  is used, so a shared cache directory never serves a binary built for
  another CPU).  Files: `<key>.c` next to `<key>.so` (an executable:
  `<key>.<stem>.c` per source and `<key>.exe`).
- **Concurrency:** sources are written to a temporary file and renamed; the
  compiler writes a temporary output in the same directory, renamed over
  `<key>.so` with `os.replace`.  Processes building the same source at once
  each compile, and the last rename wins atomically: nobody ever loads a
  half-written library.
- **Failure:** a `CompileError` (a `DiagnosticError`) whose location is
  the generated `.c` file and whose message carries the compiler's stderr
  (trimmed to a screen).  Whose fault it is decides its class: C that
  irkit generated and built with its own flags must compile, so a failure
  there is a `GeneratedCodeError` (a bug in irkit: the tools exit 3); with
  flags the user gave (`cflags`, `IRKIT_CFLAGS`) the code is built again
  with irkit's defaults, and if that succeeds the flags are to blame (a
  plain `CompileError`, with a note saying so).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from irkit.backends.c_language import C_STD
from irkit.diagnostics import Diagnostic, DiagnosticError

DEFAULT_CFLAGS: tuple[str, ...] = ("-O3", "-march=native", "-fopenmp", "-fno-math-errno") + (
    ("-mprefer-vector-width=512",) if platform.machine() in ("x86_64", "AMD64") else ()
)
_MARCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*\Z")


def march_cflags(march: str | None) -> list[str] | None:
    """The flags for building for another ISA of this host's family (`--march x86-64-v3`: AVX2,
    no AVX-512), or None for the defaults (`native`, or no `--march`): irkit's default flags
    with `-march=native` replaced, so the same code is measured for either target."""
    if march is None or march == "native":
        return None
    if not _MARCH.match(march):
        raise _fail(f"--march '{march}' is not an ISA name (expected e.g. x86-64-v3, x86-64-v4, haswell, znver3)")
    return [f"-march={march}" if flag == "-march=native" else flag for flag in DEFAULT_CFLAGS]


BASE_FLAGS: tuple[str, ...] = (f"-std={C_STD}",)
SHARED_FLAGS: tuple[str, ...] = ("-fPIC", "-shared")
LIBS: tuple[str, ...] = ("-lm",)
COMPILE_TIMEOUT = 600  # seconds
MAX_ERROR_LINES = 40
MAX_ERROR_CHARS = 4000

_VERSIONS: dict[tuple[str, ...], str] = {}


class BuildError(DiagnosticError):
    """Building a kernel failed: no compiler, a compiler that cannot run, or one that refused the C."""


class CompileError(BuildError):
    """The compiler refused generated C (its message is the diagnostic)."""


class GeneratedCodeError(CompileError):
    """The compiler refused the C irkit generated with irkit's own flags: a bug in irkit, not in
    the document (the command-line tools exit 3 for it, with the generated file named)."""


def _fail(message: str, file: str = "<cc>") -> BuildError:
    return BuildError([Diagnostic("error", message, file)])


def find_compiler() -> list[str]:
    """The compiler command (argv prefix) from `$CC`, else `cc`, resolved to a path."""
    env = os.environ.get("CC", "").strip()
    try:
        words = shlex.split(env) if env else ["cc"]
    except ValueError as exc:
        raise _fail(f"no C compiler: CC={env!r} cannot be split into words ({exc}); set CC or install cc") from None
    path = shutil.which(words[0])
    if path is None:
        what = f"CC={env!r} is not found" if env else "'cc' is not on PATH"
        raise _fail(f"no C compiler: {what}; set CC or install cc")
    return [os.path.realpath(path), *words[1:]]


def compiler_version(cc: list[str]) -> str:
    """The first line of `cc --version`, asked once per process and compiler."""
    key = tuple(cc)
    if key not in _VERSIONS:
        try:
            done = subprocess.run([*cc, "--version"], capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _fail(f"the C compiler {' '.join(cc)} does not run: {exc}") from None
        lines = (done.stdout or done.stderr).strip().splitlines()
        _VERSIONS[key] = lines[0] if lines else "unknown"
    return _VERSIONS[key]


# The widest vector register each x86 extension gives (bytes), widest first: what the predefined
# macros of a build say its target has.
_VECTOR_MACROS = (("__AVX512F__", 64), ("__AVX__", 32), ("__SSE2__", 16))
WIDEST_VECTOR_BYTES = 64  # a target the macros say nothing of (not x86): the widest irkit writes
_VECTOR_BYTES: dict[tuple, int] = {}


def vector_bytes(cflags: list[str] | None = None) -> int:
    """The widest vector register (bytes) of the target a build with `cflags` (None: the defaults)
    is for, from the compiler's predefined macros (`cc FLAGS -dM -E`): 64 with AVX-512, 32 with
    AVX, 16 with SSE2 only.  The C backend writes no vector wider than this: gcc keeps a GNU vector
    wider than every register of its target in stack memory (`vectorize jv by 16` on f32 ran 9x
    slower than two vectors of 8 on an AVX2 host).  Asked once per process and flag list; a
    compiler that does not answer (or a target that is not x86) gives WIDEST_VECTOR_BYTES."""
    flags = default_cflags() if cflags is None else list(cflags)
    key = (os.environ.get("CC", ""), *flags)
    if key not in _VECTOR_BYTES:
        try:
            _VECTOR_BYTES[key] = _ask_vector_bytes(find_compiler(), flags)
        except BuildError:
            return WIDEST_VECTOR_BYTES
    return _VECTOR_BYTES[key]


def _ask_vector_bytes(cc: list[str], flags: list[str]) -> int:
    try:
        done = subprocess.run(
            [*cc, *flags, "-dM", "-E", "-x", "c", "-"], input="", capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return WIDEST_VECTOR_BYTES
    if done.returncode != 0:
        return WIDEST_VECTOR_BYTES
    defined = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("#define ") and len(line.split()) > 1}
    return next((size for macro, size in _VECTOR_MACROS if macro in defined), WIDEST_VECTOR_BYTES)


def default_cflags() -> list[str]:
    """`$IRKIT_CFLAGS` (shell words) if set and non-empty, else `DEFAULT_CFLAGS`."""
    env = os.environ.get("IRKIT_CFLAGS", "")
    if env.strip():
        try:
            return shlex.split(env)
        except ValueError as exc:
            raise _fail(f"IRKIT_CFLAGS={env!r} cannot be split into words: {exc}") from None
    return list(DEFAULT_CFLAGS)


def cache_dir() -> Path:
    """`$IRKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/irkit`, else `~/.cache/irkit`."""
    if os.environ.get("IRKIT_CACHE_DIR"):
        return Path(os.environ["IRKIT_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "irkit"
    return Path.home() / ".cache" / "irkit"


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def cache_key(sources: list[str], cc: list[str], flags: list[str], kind: str) -> str:
    machine = platform.machine()
    if any(f.startswith(("-march=native", "-mcpu=native", "-mtune=native")) for f in flags):
        machine += " " + hashlib.sha256(_cpu_flags().encode()).hexdigest()[:16]
    blob = json.dumps(
        {
            "sources": sources,
            "cc": cc,
            "version": compiler_version(cc),
            "flags": flags,
            "kind": kind,
            "machine": machine,
        }
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path: str | Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def trim_output(text: str) -> str:
    """Compiler output cut to a screen: at most MAX_ERROR_LINES lines and MAX_ERROR_CHARS characters."""
    lines = text.rstrip().splitlines()
    out = lines[:MAX_ERROR_LINES]
    body = "\n".join(out)
    if len(body) > MAX_ERROR_CHARS:
        body = body[:MAX_ERROR_CHARS] + " ..."
    if len(lines) > len(out):
        body += f"\n... ({len(lines) - len(out)} more lines)"
    return body


def _compile(cc: list[str], argv_tail: list[str], inputs: list[Path], output: Path, flags: list[str]) -> None:
    """Run the compiler into a temporary file next to `output`, then rename it there."""
    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=output.name + ".", suffix=".tmp")
    os.close(fd)
    argv = [*cc, *flags, "-o", tmp, *map(str, inputs), *argv_tail]
    try:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise _fail(f"the C compiler took more than {COMPILE_TIMEOUT} s on {inputs[0]}", str(inputs[0])) from None
        except OSError as exc:
            raise _fail(f"the C compiler {cc[0]} does not run: {exc}", str(inputs[0])) from None
        if done.returncode != 0:
            shown = trim_output(done.stderr or done.stdout) or "(no output)"
            files = " and ".join(str(p) for p in inputs)
            message = f"the C compiler failed (exit {done.returncode}) on the generated {files}\ncommand: {shlex.join(argv)}\n{shown}"
            raise CompileError([Diagnostic("error", message, str(inputs[0]))])
        os.replace(tmp, output)
    finally:
        _unlink(tmp)


def build_shared(source: str, cflags: list[str] | None = None, *, directory: Path | None = None) -> Path:
    """The path of a shared library built from `source` (from the cache when it is there)."""
    try:
        return _build_shared(source, cflags, directory)
    except CompileError as exc:
        raise _whose_fault(exc, cflags, lambda flags: _build_shared(source, flags, directory)) from None


def _build_shared(source: str, cflags: list[str] | None, directory: Path | None) -> Path:
    cc = find_compiler()
    flags = [*BASE_FLAGS, *SHARED_FLAGS, *(default_cflags() if cflags is None else cflags)]
    key = cache_key([source], cc, flags, "shared")
    where = directory or cache_dir()
    _mkdir(where)
    lib = where / f"{key}.so"
    if lib.exists():
        return lib
    c_file = where / f"{key}.c"
    _write_atomic(c_file, source)
    _compile(cc, list(LIBS), [c_file], lib, flags)
    return lib


def build_executable(
    sources: dict[str, str], cflags: list[str] | None = None, *, directory: Path | None = None
) -> Path:
    """An executable from several C sources (`stem -> text`), cached like libraries."""
    try:
        return _build_executable(sources, cflags, directory)
    except CompileError as exc:
        raise _whose_fault(exc, cflags, lambda flags: _build_executable(sources, flags, directory)) from None


def _build_executable(sources: dict[str, str], cflags: list[str] | None, directory: Path | None) -> Path:
    cc = find_compiler()
    flags = [*BASE_FLAGS, *(default_cflags() if cflags is None else cflags)]
    stems = sorted(sources)
    key = cache_key([f"{s}\n{sources[s]}" for s in stems], cc, flags, "exe")
    where = directory or cache_dir()
    _mkdir(where)
    exe = where / f"{key}.exe"
    if exe.exists():
        return exe
    files = []
    for stem in stems:
        path = where / f"{key}.{stem}.c"
        _write_atomic(path, sources[stem])
        files.append(path)
    _compile(cc, list(LIBS), files, exe, flags)
    return exe


TRIVIAL_C = "int irkit_probe(void);\nint irkit_probe(void) { return 0; }\n"


def _whose_fault(exc: CompileError, cflags: list[str] | None, build_with: Callable[[list[str] | None], Path]) -> CompileError:
    """Who is to blame for `exc`.  The compiler or its flags, if they fail on a trivial file too, or
    if the code builds with irkit's default flags instead of the ones given: `exc` itself (a plain
    `CompileError`), with a note saying so.  Otherwise the generated code: a `GeneratedCodeError`."""

    def blame(note: str) -> CompileError:
        for diag in exc.diagnostics:
            diag.notes.append(Diagnostic("note", note, diag.file))
        return exc

    with tempfile.TemporaryDirectory(prefix="irkit-probe-") as scratch:
        try:
            _build_shared(TRIVIAL_C, cflags, Path(scratch))
        except CompileError:
            return blame(
                "the compiler fails on a trivial C file with the same flags too: the compiler or its flags are "
                "the problem, not the generated code"
            )
    if cflags is not None or os.environ.get("IRKIT_CFLAGS", "").strip():
        try:
            build_with(list(DEFAULT_CFLAGS))
        except CompileError:
            pass
        else:
            given = shlex.join(cflags if cflags is not None else default_cflags())
            return blame(
                "the same code builds with irkit's default flags: the flags given (--cflags or IRKIT_CFLAGS: "
                f"{given}) are what the compiler refuses"
            )
    return GeneratedCodeError(exc.diagnostics)


def _mkdir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _fail(f"cannot create the build cache directory {path}: {exc.strerror or exc}", str(path)) from None


def load_library(path: Path) -> ctypes.CDLL:
    fix_allocator()
    try:
        return ctypes.CDLL(str(path))
    except OSError as exc:
        raise _fail(f"cannot load the compiled kernel {path}: {exc}", str(path)) from None


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20  # what the cost model assumes (irkit.perf.analysis.MMAP_THRESHOLD)
_allocator_fixed = False


def fix_allocator() -> None:
    """Make a kernel's temporaries cost the same at every call, as the cost model assumes.

    A kernel allocates its temporaries at each call.  glibc serves a block
    above its mmap threshold (128 KiB at first) with fresh pages, and moves
    the threshold up, and the heap's trim threshold with it, only after such
    a block is freed: the same kernel then costs a page fault per 4 KiB of
    temporaries, or nothing, depending on what the process allocated before
    (a 2-stage elementwise kernel measured 3.4 ms alone and 2.3 ms after a
    blur).  Fixing both thresholds (once per process, glibc only) gives the
    behaviour the model prices: blocks of 32 MiB or more are fresh memory at
    every call, smaller ones reused heap memory."""
    global _allocator_fixed
    if _allocator_fixed:
        return
    _allocator_fixed = True
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: its allocator decides
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD)


def compile_and_load(source: str, cflags: list[str] | None = None) -> ctypes.CDLL:
    return load_library(build_shared(source, cflags))
