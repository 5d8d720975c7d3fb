"""What a code-generation target provides: emit source, build it, load the kernel.

Why an interface: the API (`irkit.compile`), `--check-semantics`, the
harness, calibration and the benchmarks all need the same three steps, and
a second backend (ISPC, OpenCL C, CUDA) must not be wired into each of them.
A target is looked up by name (`target("c")`) in `irkit.registry.TARGETS`;
irkit's own is `CTarget`, C with OpenMP built by the system compiler; its
`language` (`irkit.backends.c_language.CLanguage`) holds the hooks a C-like
target (ISPC, OpenCL C, CUDA) overrides to print its own dialect.

- `emit(module, flags)`: the source text of a loop-level module for a
  build with `flags` (DiagnosticError on IR the target cannot express);
- `build(source, flags)`: a loadable artifact, a path (cached by source and
  flags; DiagnosticError when the tool chain fails, saying whose fault);
- `load(artifact, kernel)`: a callable `CompiledKernel` for one kernel
  `func.func` of the module;
- `compile(module, kernel, flags)`: the three in a row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from irkit import registry
from irkit.backends.c_language import CLanguage
from irkit.backends.c_syntax import c_symbol
from irkit.diagnostics import Diagnostic, DiagnosticError


class Target(Protocol):
    name: str

    def emit(self, module: ModuleOp, cflags: list[str] | None = None) -> str: ...

    def build(self, source: str, flags: list[str] | None = None) -> Path: ...

    def load(self, artifact: Path, kernel: func.FuncOp): ...

    def compile(self, module: ModuleOp, kernel: func.FuncOp, flags: list[str] | None = None): ...


class CTarget:
    """C99 with OpenMP, built into a shared library by the system compiler (`$CC`, else `cc`)."""

    name = "c"

    def __init__(self, language: CLanguage | None = None):
        self.language = language if language is not None else CLanguage()

    def emit(self, module: ModuleOp, cflags: list[str] | None = None) -> str:
        """The C for a build with `cflags` (None: the defaults): vectors as wide as its target's."""
        from irkit.backends.c import emit_c

        return emit_c(module, self.language, cflags)

    def build(self, source: str, flags: list[str] | None = None) -> Path:
        from irkit.backends.build import build_shared

        return build_shared(source, flags)

    def load(self, artifact: Path, kernel: func.FuncOp):
        from irkit.backends.build import load_library
        from irkit.backends.runner import CompiledKernel

        return CompiledKernel(kernel, load_library(artifact))

    def compile(self, module: ModuleOp, kernel: func.FuncOp, flags: list[str] | None = None):
        return self.load(self.build(self.emit(module, flags), flags), kernel)

    def symbol(self, kernel_name: str) -> str:
        """The C entry point of a kernel (what a harness or a wrapper calls)."""
        return c_symbol(kernel_name)


TARGETS: dict[str, Target] = registry.TARGETS
TARGETS["c"] = CTarget()


def target(name: str = "c") -> Target:
    """The target `name`; a DiagnosticError naming the known ones when there is none."""
    found = TARGETS.get(name)
    if found is None:
        known = ", ".join(sorted(TARGETS))
        raise DiagnosticError([Diagnostic("error", f"unknown target '{name}'; the targets are: {known}")])
    return found
