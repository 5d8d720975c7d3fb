"""`irkit.perf.predict`: a document's predicted time on a hardware description.

The document is lowered to loop IR and `model-perf` turns it into perf IR;
the perf IR's expressions become Python functions (`irkit.perf.codegen`),
priced by `irkit.perf.runtime` -- the same code the module `--emit python`
writes, so the two agree exactly.  A `CostModel` is built once per document
and evaluates any number of sizes at once (numpy arrays of sizes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.perf import runtime
from irkit.perf.codegen import function_source
from irkit.perf.hardware import Hardware, hardware_of_module, load_hardware


@dataclass
class Prediction:
    seconds: float
    breakdown: dict[str, float]
    bound: str
    flops: float
    dram_bytes: float
    peak_flops: float
    dram_bandwidth: float
    sizes: dict[str, int]
    hardware: str
    notes: list[str] = field(default_factory=list)
    nests: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "seconds": self.seconds,
            "breakdown": self.breakdown,
            "bound": self.bound,
            "flops": self.flops,
            "dram_bytes": self.dram_bytes,
            "peak_flops": self.peak_flops,
            "dram_bandwidth": self.dram_bandwidth,
            "sizes": self.sizes,
            "hardware": self.hardware,
            "notes": self.notes,
            "nests": self.nests,
        }


class CostModel:
    """The compiled cost terms of one kernel; `evaluate` prices them for many sizes at once."""

    def __init__(self, perf_module, name: str = "<document>"):
        from irkit.dialects.perf import KernelOp

        kernels = [op for op in perf_module.body.block.ops if isinstance(op, KernelOp)]
        if len(kernels) != 1:
            raise DiagnosticError([Diagnostic("error", f"{name}: expected one kernel, found {len(kernels)}")])
        self.kernel = kernels[0]
        self.name = name
        self.sizes = self.kernel.size_names
        self.source = module_functions(self.kernel)
        namespace: dict = {"np": np, "fits": runtime.fits}
        exec(compile(self.source, f"<cost model of {self.kernel.sym_name.data}>", "exec"), namespace)  # noqa: S102
        self._nests = namespace["NESTS"]
        self._kernel_terms = namespace["kernel_terms"]

    def evaluate(self, sizes: Mapping[str, object], hw: Hardware, cold: bool = False) -> dict:
        missing = [s for s in self.sizes if s not in sizes]
        if missing:
            raise DiagnosticError([Diagnostic("error", f"{self.name}: no value for size(s) {', '.join(missing)}")])
        env = {k: np.asarray(sizes[k], dtype=np.float64) for k in self.sizes}
        try:
            return runtime.price(self._nests, self._kernel_terms, env, hw.values, cold)
        except KeyError as exc:
            raise DiagnosticError(
                [Diagnostic("error", f"{self.name}: {exc.args[0]} ({hw.source}); `irkit calibrate` measures it")]
            ) from None


def module_functions(kernel) -> str:
    """Python source: one function per nest, `NESTS`, and `kernel_terms`."""
    from irkit.perf import expr as ex

    parts: list[str] = []
    names: list[tuple[str, list[str]]] = []
    for i, nest in enumerate(kernel.body.block.ops):
        where = f" ({nest.origin.data})" if nest.origin is not None else ""
        terms = nest.expressions()
        fnames = []
        # four functions, so that pricing evaluates each term only where it is needed: the core
        # terms once, the fills at every cache level, the latencies of misses at L1, the lines no
        # prefetch stream brings at the last level
        for group in runtime.TERM_GROUPS:
            chosen = {k: v for k, v in terms.items() if runtime.term_group(k) == group}
            fname = f"nest_{i}_{group}"
            doc = f"Terms ({group}) of loop nest '{nest.nest_name.data}'{where}."
            parts.append(function_source(fname, chosen, doc, runtime.LEVEL_SYMBOLS if group in ("fills", "misses") else frozenset()))
            fnames.append(fname)
        names.append((nest.nest_name.data, fnames))
    kernel_wide = {"kernel_bytes": ex.parse(kernel.kernel_bytes.data)}
    if kernel.fresh_pages is not None:
        kernel_wide["fresh_pages"] = ex.parse(kernel.fresh_pages.data)
    parts.append(function_source("kernel_terms", kernel_wide, "Kernel-wide terms."))
    parts.append("NESTS = [" + ", ".join(f"({n!r}, {', '.join(fs)})" for n, fs in names) + "]\n")
    return "\n\n".join(parts)


def perf_module(source: str | Path):
    """(perf IR module, document module, name) of a document: path or text."""
    from irkit.frontend.source import read_document

    return _perf_of(*read_document(source))


def _perf_of(text: str, name: str):
    from irkit.api import lower
    from irkit.context import make_context
    from irkit.frontend import parse_design
    from irkit.passes.model_perf import ModelPerfPass

    module = parse_design(text, name)
    loop = lower(module)["loop"]
    ModelPerfPass().apply(make_context(), loop)
    loop.verify()
    return loop, module, name


_MODELS: dict[tuple[str, str], tuple[CostModel, object]] = {}


def cost_model(source: str | Path) -> tuple[CostModel, object, str]:
    """The (cached) cost model of a document, with its parsed document module and name."""
    from irkit.frontend.source import read_document

    text, name = read_document(source)
    key = (name, text)
    got = _MODELS.get(key)
    if got is None:
        perf, module, name = _perf_of(text, name)
        got = (CostModel(perf, name), module)
        _MODELS[key] = got
    return got[0], got[1], name


def predict(
    source: str | Path, sizes: Mapping[str, int] | None = None, hw: Hardware | None = None, cold: bool = False
) -> Prediction:
    """Predicted seconds per call of a document at `sizes` (defaults from the document) on `hw`
    (default: the document's own hardware section)."""
    model, module, name = cost_model(source)
    if hw is None:
        hw = hardware_of_module(module, name)
    unknown = [s for s in (sizes or {}) if s not in model.sizes]
    if unknown:
        raise DiagnosticError(
            [
                Diagnostic(
                    "error",
                    f"{name}: unknown size {', '.join(repr(s) for s in unknown)}; "
                    f"the sizes are {', '.join(model.sizes)}",
                )
            ]  # fmt: skip
        )
    resolved = default_sizes(model, module)
    resolved.update(sizes or {})
    out = model.evaluate(resolved, hw, cold)
    parts = {k: float(v) for k, v in out["breakdown"].items()}
    timing = {k: v for k, v in parts.items() if k != "overhead"}
    bound = max(timing, key=lambda k: timing[k]) if timing else "compute"
    values = hw.values
    return Prediction(
        seconds=float(out["seconds"]),
        breakdown=parts,
        bound=bound,
        flops=float(out["flops"]),
        dram_bytes=float(out["dram_bytes"]),
        peak_flops=float(values.get("flops_f32_all", values["flops_f32"] * values["cores"])),
        dram_bandwidth=float(values["dram_bandwidth"]),
        sizes={k: int(v) for k, v in resolved.items()},
        hardware=f"{hw.name} ({hw.source})",
        notes=list(hw.notes),
        nests=[{k: (float(v) if not isinstance(v, str) else v) for k, v in row.items()} for row in out["nests"]],
    )


def default_sizes(model: CostModel, module) -> dict[str, int]:
    from irkit.dialects import design as d

    out: dict[str, int] = {}
    for op in module.walk():
        if isinstance(op, d.SizeOp) and op.default is not None:
            out[op.sym_name.data] = op.default.value.data
    return out


__all__ = ["CostModel", "Prediction", "cost_model", "load_hardware", "predict"]
