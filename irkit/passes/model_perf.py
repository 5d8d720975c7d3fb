"""`model-perf`: loop IR -> perf IR, the cost terms of each kernel (see irkit.perf.analysis).

Each loop-level `func.func` kernel is replaced by a `perf.kernel` whose
`perf.nest` ops hold the terms of its top-level loop nests, as expressions
of the sizes; pricing them on a hardware description is the runtime's job
(`irkit predict`, or the module `--emit python` writes).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass

from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.dialects import perf
from irkit.dialects.loop import ForOp
from irkit.kernel_abi import kernel_args
from irkit.perf import expr as ex
from irkit.perf.analysis import kernel_terms
from irkit.perf.loop_tree import ModelError


def assumptions_of(kernel: func.FuncOp) -> list[str]:
    """The document's assumptions as text, for the perf IR and the emitted module's docstring."""
    out: list[str] = []
    assume = kernel.attributes.get("irkit.assume")
    if not isinstance(assume, DictionaryAttr):
        return out
    data = assume.data
    for name, value in getattr(data.get("divisible"), "data", {}).items():
        out.append(f"{name} % {value.value.data} == 0")
    for name, value in getattr(data.get("aligned"), "data", {}).items():
        out.append(f"aligned({name}, {value.value.data})")
    for group in getattr(data.get("noalias"), "data", ()):
        out.append("noalias(" + ", ".join(s.data for s in group.data) + ")")
    if "relaxed_math" in data:
        out.append("relaxed_math")
    return out


def _not_loop_level(kernel: func.FuncOp) -> str | None:
    """The name of the first op that has no place at the loop level (a tensorop op), or None."""
    for op in kernel.body.walk():
        if op.name.startswith(("tensorop.", "design.")):
            return op.name
    return None


def perf_kernel(kernel: func.FuncOp) -> perf.KernelOp:
    """The perf.kernel of one loop-level kernel."""
    try:
        nests, kernel_wide, _ = kernel_terms(kernel)
    except ModelError as exc:
        raise DiagnosticError([Diagnostic("error", f"model-perf: kernel '{kernel.sym_name.data}': {exc}")]) from None
    sizes = [s.name for s in kernel_args(kernel)[0]]
    ops = []
    for loop_op, nest in zip([o for o in kernel.body.block.ops if isinstance(o, ForOp)], nests):
        origin = loop_op.origin.data if loop_op.origin is not None else None
        defs, texts = ex.to_text_shared(nest.terms)
        ops.append(perf.NestOp(nest.name, texts, origin, defs))
    hw = kernel.attributes.get("irkit.hardware")
    hardware = hw if isinstance(hw, DictionaryAttr) else None
    if isinstance(hw, StringAttr):
        hardware = DictionaryAttr({"name": hw})
    return perf.KernelOp(
        kernel.sym_name.data,
        sizes,
        ex.to_text(kernel_wide["kernel_bytes"]),
        ex.to_text(kernel_wide["fresh_pages"]),
        ops,
        hardware,
        assumptions_of(kernel),
    )


@dataclass(frozen=True)
class ModelPerfPass(ModulePass):
    """Replace every loop-level kernel by its cost terms (perf.kernel with one perf.nest per loop nest)."""

    name = "model-perf"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = [k for k in op.body.block.ops if isinstance(k, func.FuncOp)]
        if not kernels:
            raise DiagnosticError(
                [
                    Diagnostic(
                        "error",
                        "model-perf expects loop-level kernels (func.func); lower the document first: "
                        "-p lower-design,lower-tensorop,apply-schedule,model-perf",
                    )
                ]  # fmt: skip
            )
        for kernel in kernels:
            level = _not_loop_level(kernel)
            if level is not None:
                raise DiagnosticError(
                    [
                        Diagnostic(
                            "error",
                            f"model-perf expects loop-level IR, but kernel '{kernel.sym_name.data}' "
                            f"still has '{level}'; run lower-tensorop (and apply-schedule) before it",
                        )
                    ]  # fmt: skip
                )
        for kernel in kernels:
            new = perf_kernel(kernel)
            op.body.block.insert_op_before(new, kernel)
            op.body.block.detach_op(kernel)
            kernel.erase()
