"""The Python API: `irkit.compile(document)` gives a kernel you call with numpy arrays.

    import irkit, numpy as np
    k = irkit.compile("examples/gemm.design", sizes={"M": 256, "N": 256, "K": 256})
    out = k(A=a, B=b)              # {"C": array}; inputs in any layout are copied to the document's
    k.c_source                     # the generated C
    k.ir("loop")                   # the IR at a level: design, tensorop, loop

The CLI (`irkit run`) is built on this.  Every step is an xDSL pass over IR:
the document is parsed and checked, then lowered design → tensorop → loop
(the schedule is applied at the loop level), the loop IR becomes C, and the
C is built once per source and flags (cached) and loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from irkit.frontend.source import read_document
from irkit.passes.pipeline import lowering_pipeline
from irkit.progress import phase

__all__ = ["Kernel", "compile", "load_hardware", "lower", "lowering_pipeline", "read_document"]

LEVELS = ("design", "tensorop", "loop")


@dataclass
class Kernel:
    """A compiled document: call it with numpy arrays by tensor name."""

    name: str
    levels: dict[str, ModuleOp]
    c_source: str
    sizes: dict[str, int] = field(default_factory=dict)
    hardware: ModuleOp | None = None
    _compiled: object = None

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        built = "built" if self._compiled is not None else "not built"
        return (
            f"<irkit.Kernel {self.name}({', '.join(self.tensor_names())}){f' at {sizes}' if sizes else ''}, {built}; "
            "k.ir(level), k.c_source>"
        )

    def tensor_names(self) -> list[str]:
        """The kernel's tensors in argument order (inputs and outputs)."""
        if self._compiled is None:
            return []
        return [t.name for t in self.compiled.tensor_args]

    def ir(self, level: str = "loop") -> str:
        """The IR at `level` (design, tensorop or loop), in MLIR syntax."""
        if level not in self.levels:
            raise ValueError(f"no IR level '{level}'; levels are: {', '.join(self.levels)}")
        return str(self.levels[level])

    @property
    def compiled(self):
        from irkit.backends.runner import CompiledKernel

        if self._compiled is None:
            raise RuntimeError("the kernel was not built (irkit.compile(..., build=False)): it cannot be called")
        assert isinstance(self._compiled, CompiledKernel)
        return self._compiled

    def resolve_sizes(self, sizes: Mapping[str, int] | None = None) -> dict[str, int]:
        return self.compiled.resolve_sizes({**self.sizes, **(sizes or {})})

    def inputs(self) -> list[str]:
        """The input tensors and scalars, by name, in argument order."""
        names = {t.value: t.name for t in self.compiled.tensor_args if t.role in ("input", "inout")}
        names |= {s.value: s.name for s in self.compiled.scalar_args}
        return [names[a] for a in self.compiled.kernel.body.block.args if a in names]

    def outputs(self) -> list[str]:
        return [t.name for t in self.compiled.tensor_args if t.role in ("output", "inout")]

    def __call__(self, sizes: Mapping[str, int] | None = None, **arrays: np.ndarray) -> dict[str, np.ndarray]:
        """Run on the input arrays (by tensor name); returns the outputs by name."""
        return self.compiled.run(arrays, self.resolve_sizes(sizes))

    def run_into(self, arrays: Mapping[str, np.ndarray], sizes: Mapping[str, int] | None = None) -> None:
        """Run with every tensor given (outputs written in place); the arrays are checked strictly."""
        self.compiled(arrays, self.resolve_sizes(sizes))

    def reference(
        self, inputs: Mapping[str, np.ndarray] | None = None, sizes: Mapping[str, int] | None = None, **arrays: np.ndarray
    ) -> dict[str, np.ndarray]:
        """The numpy oracle's outputs for the same inputs (from the design IR), given as the kernel
        takes them (`k.reference(A=a, B=b)`) or as one mapping (`k.reference(k.random_inputs())`)."""
        from irkit.oracle import evaluate_design

        return evaluate_design(self.levels["design"], {**(inputs or {}), **arrays}, self.resolve_sizes(sizes))

    def random_inputs(self, sizes: Mapping[str, int] | None = None, seed: int = 0) -> dict[str, np.ndarray]:
        from irkit.oracle import random_inputs

        return random_inputs(self.levels["design"], self.resolve_sizes(sizes), seed=seed)


def lower(module: ModuleOp) -> dict[str, ModuleOp]:
    """The IR at each level: design (as given), tensorop, loop."""
    from irkit.context import make_context
    from irkit.passes.lower_design import LowerDesignPass

    ctx = make_context()
    levels = {"design": module.clone()}
    current = module.clone()
    passes = lowering_pipeline()
    for i, p in enumerate(passes):
        with phase(p.name):
            p.apply(ctx, current)
            current.verify()
        if isinstance(p, LowerDesignPass):
            levels["tensorop"] = current.clone()
        if i == len(passes) - 1:
            levels["loop"] = current
    return levels


def compile(
    path_or_text: str | Path,
    sizes: Mapping[str, int] | None = None,
    hw: str | Path | None = None,
    cflags: list[str] | None = None,
    *,
    name: str | None = None,
    build: bool = True,
) -> Kernel:
    """Parse, check, lower, generate C, build and load a design document.

    `sizes` become the defaults for calls; `hw` names or points to a hardware
    description (`.hw`) that replaces the document's own for cost modelling.
    `path_or_text` is a file or the document's text (see `read_document`;
    `name` names text in diagnostics).  With `build=False` the C is generated
    but not compiled (for tools that only print it): the kernel cannot be
    called.  Raises `DiagnosticError` for any problem in the document or the
    build.
    """
    from irkit.backends.target import target
    from irkit.extend import load_installed_plugins
    from irkit.frontend import parse_design
    from irkit.kernel_abi import find_kernels
    from irkit.sizes import document_sizes

    load_installed_plugins()  # named operations of installed packages (irkit.plugins entry points)
    text, name = read_document(path_or_text, name)
    with phase("check"):
        module = parse_design(text, name)
    document_sizes(module, sizes)  # sizes that do not fit the document fail before anything is built
    hardware = load_hardware(hw, name) if hw is not None else None
    levels = lower(module)
    c = target("c")
    with phase("emit C"):
        source = c.emit(levels["loop"], cflags)
    (kernel_func,) = find_kernels(levels["loop"])
    if not build:
        return Kernel(kernel_func.sym_name.data, levels, source, dict(sizes or {}), hardware)
    with phase("build C"):
        compiled = c.load(c.build(source, cflags), kernel_func)
    kernel = Kernel(compiled.name, levels, source, dict(sizes or {}), hardware, compiled)
    kernel.resolve_sizes()  # unknown or non-positive sizes fail here, not at the first call
    return kernel


def load_hardware(hw: str | Path, document: str) -> ModuleOp:
    """A hardware description by path, or by name as `hardware NAME` finds it."""
    from irkit.frontend import parse_design
    from irkit.hardware_files import resolve_hardware

    path = resolve_hardware(hw, document)
    return parse_design(path.read_text(), str(path))
