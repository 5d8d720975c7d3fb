"""Sizes and inputs: default and given sizes resolved, random inputs made, given ones bound."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from irkit.affine_text import evaluate, parse_affine
from irkit.dialects import design as d
from irkit.kernel_abi import find_kernels, kernel_args, kernel_scalars, positive_definite
from irkit.oracle.common import NUMPY_DTYPES, ReferenceEvalError

# --- sizes and inputs ------------------------------------------------------------------


def _find_design(obj: ModuleOp | d.DesignOp) -> d.DesignOp:
    if isinstance(obj, d.DesignOp):
        return obj
    if isinstance(obj, ModuleOp):
        designs = [op for op in obj.body.block.ops if isinstance(op, d.DesignOp)]
        if len(designs) == 1:
            return designs[0]
        raise ReferenceEvalError(f"expected one design.design in the module, found {len(designs)}")
    raise TypeError(f"expected a module or a design.design, got {type(obj).__name__}")


def _find_kernel(obj: ModuleOp | func.FuncOp) -> func.FuncOp:
    if isinstance(obj, func.FuncOp):
        return obj
    if isinstance(obj, ModuleOp):
        kernels = find_kernels(obj)
        if len(kernels) == 1:
            return kernels[0]
        raise ReferenceEvalError(f"expected one kernel func.func in the module, found {len(kernels)}")
    raise TypeError(f"expected a module or a func.func, got {type(obj).__name__}")


def _is_kernel(obj: object) -> bool:
    if isinstance(obj, func.FuncOp):
        return True
    return isinstance(obj, ModuleOp) and any(isinstance(op, func.FuncOp) for op in obj.body.block.ops)


def _size_decls(obj: ModuleOp | d.DesignOp | func.FuncOp) -> list[tuple[str, int | None]]:
    if _is_kernel(obj):
        sizes, _ = kernel_args(_find_kernel(obj))  # type: ignore[arg-type]
        return [(s.name, s.default) for s in sizes]
    design = _find_design(obj)  # type: ignore[arg-type]
    return [
        (op.sym_name.data, None if op.default is None else op.default.value.data)
        for op in design.body.block.ops
        if isinstance(op, d.SizeOp)
    ]


def default_sizes(obj: ModuleOp | d.DesignOp | func.FuncOp) -> dict[str, int]:
    """The sizes that have a default in the document (or kernel), with their defaults."""
    return {name: default for name, default in _size_decls(obj) if default is not None}


def resolve_sizes(obj: ModuleOp | d.DesignOp | func.FuncOp, sizes: Mapping[str, int] | None = None) -> dict[str, int]:
    """Every size's value: `sizes` over the defaults; `ValueError` for a missing, unknown or non-positive size."""
    decls = _size_decls(obj)
    names = [n for n, _ in decls]
    given = dict(sizes or {})
    unknown = [n for n in given if n not in names]
    if unknown:
        raise ReferenceEvalError(
            f"unknown size{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"the sizes are {', '.join(names) or 'none'}"
        )
    out: dict[str, int] = {}
    missing = []
    for name, default in decls:
        value = given.get(name, default)
        if value is None:
            missing.append(name)
            continue
        if int(value) != value or value <= 0:
            raise ReferenceEvalError(f"size {name} must be a positive integer, got {value!r}")
        out[name] = int(value)
    if missing:
        raise ReferenceEvalError(
            f"no value for size{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            "(no default in the document): pass it in `sizes`"
        )
    return out


@dataclass(frozen=True)
class _TensorDecl:
    name: str
    dtype: str
    role: str
    shape: tuple[int, ...]


def _design_tensors(design: d.DesignOp, sizes: dict[str, int]) -> dict[str, _TensorDecl]:
    out: dict[str, _TensorDecl] = {}
    for op in design.body.block.ops:
        if isinstance(op, d.TensorOp):
            name = op.sym_name.data
            shape = tuple(_shape_value(name, e, sizes) for e in op.shape_exprs)
            out[name] = _TensorDecl(name, op.dtype.data, op.role.data, shape)
        elif isinstance(op, d.ScalarOp):  # a value: a 0-d array
            out[op.sym_name.data] = _TensorDecl(op.sym_name.data, op.dtype.data, op.role.data, ())
    return out


def _shape_value(name: str, text: str, sizes: Mapping[str, int]) -> int:
    try:
        value = evaluate(parse_affine(text), sizes)
    except KeyError as err:
        raise ReferenceEvalError(f"shape of '{name}' uses {err.args[0]}, which is not a size") from None
    if value <= 0:
        raise ReferenceEvalError(f"dimension '{text}' of '{name}' is {value} with these sizes; it must be positive")
    return value


def _kernel_tensors(kernel: func.FuncOp, sizes: dict[str, int]) -> tuple[list, dict[str, _TensorDecl]]:
    size_args, tensor_args = kernel_args(kernel)
    symbols = [sizes[s.name] for s in size_args]
    decls = {}
    for arg in tensor_args:
        shape = tuple(arg.shape.eval([], symbols))
        if any(n <= 0 for n in shape):
            raise ReferenceEvalError(f"shape of '{arg.name}' is {shape} with these sizes; dimensions must be positive")
        decls[arg.name] = _TensorDecl(arg.name, arg.dtype, arg.role, shape)
    for scalar in kernel_scalars(kernel):
        decls[scalar.name] = _TensorDecl(scalar.name, scalar.dtype, "input", ())
    return tensor_args, decls


def _positive_definite(obj: ModuleOp | d.DesignOp | func.FuncOp) -> set[str]:
    """The tensors assumed symmetric positive definite (`assume { positive_definite(A) }`)."""
    if _is_kernel(obj):
        return positive_definite(_find_kernel(obj))  # type: ignore[arg-type]
    design = _find_design(obj)  # type: ignore[arg-type]
    return {n for op in design.body.block.ops if isinstance(op, d.AssumePositiveDefiniteOp) for n in d.str_list(op.tensors)}


def make_positive_definite(arr: np.ndarray) -> None:
    """In place: (X + X^T) / 2 + n I of a uniform [-1, 1) matrix X.  Every off-diagonal row sum is
    below n - 1 in magnitude and every diagonal element above it, so the matrix is strictly
    diagonally dominant, symmetric, hence positive definite, with eigenvalues in (1, 2n)."""
    n = arr.shape[0]
    arr += arr.T.copy()
    arr *= 0.5
    arr[np.diag_indices(n)] += n


def random_inputs(
    obj: ModuleOp | d.DesignOp | func.FuncOp, sizes: Mapping[str, int] | None = None, seed: int = 0
) -> dict[str, np.ndarray]:
    """Random values for every input tensor, in declaration order from one seeded generator.

    `f32`/`f64`: uniform in [-1, 1); `i32`: integers in [-8, 8].  Arrays are
    row-major of the logical shape.  A scalar is a 0-d array, positive as
    scale factors and epsilons are: uniform in [0.5, 1.5), or 1 to 8.  A
    matrix assumed `positive_definite` is made so (`make_positive_definite`).
    """
    sizes = resolve_sizes(obj, sizes)
    if _is_kernel(obj):
        _, decls = _kernel_tensors(_find_kernel(obj), sizes)  # type: ignore[arg-type]
    else:
        decls = _design_tensors(_find_design(obj), sizes)  # type: ignore[arg-type]
    definite = _positive_definite(obj)
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for decl in decls.values():
        if decl.role not in ("input", "inout"):
            continue
        if decl.shape == ():
            value = rng.integers(1, 9) if decl.dtype == "i32" else rng.random() + 0.5
            out[decl.name] = np.asarray(value, dtype=NUMPY_DTYPES[decl.dtype])
            continue
        if decl.dtype == "i32":
            out[decl.name] = rng.integers(-8, 9, size=decl.shape, dtype=np.int32)
        else:
            arr = rng.random(decl.shape, dtype=NUMPY_DTYPES[decl.dtype])  # [0, 1), no float64 detour
            arr *= 2
            arr -= 1
            if decl.name in definite:
                make_positive_definite(arr)
            out[decl.name] = arr
    return out


def _bind_inputs(decls: Mapping[str, _TensorDecl], inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    wanted = [n for n, t_ in decls.items() if t_.role in ("input", "inout")]
    unknown = [n for n in inputs if n not in wanted]
    if unknown:
        raise ReferenceEvalError(f"'{unknown[0]}' is not an input tensor; the inputs are {', '.join(wanted) or 'none'}")
    missing = [n for n in wanted if n not in inputs]
    if missing:
        raise ReferenceEvalError(
            f"no value given for input tensor{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        )
    out: dict[str, np.ndarray] = {}
    for name in wanted:
        decl = decls[name]
        dt = np.dtype(NUMPY_DTYPES[decl.dtype])
        given = np.asarray(inputs[name])
        if given.shape != decl.shape:
            raise ReferenceEvalError(f"input '{name}' has shape {given.shape}, expected {decl.shape}")
        if given.dtype.kind != dt.kind and not (dt.kind == "f" and given.dtype.kind in "iu"):
            raise ReferenceEvalError(f"input '{name}' has dtype {given.dtype}, expected {decl.dtype}")
        if decl.role == "inout":  # updated in place: a copy, the caller's data stays intact
            out[name] = given.astype(dt, copy=True)
            continue
        arr = given.astype(dt, copy=False).view()
        arr.flags.writeable = False  # a kernel that writes its input fails loudly, the caller's data stays intact
        out[name] = arr
    return out


def _new_buffer(decl: _TensorDecl) -> np.ndarray:
    return np.zeros(decl.shape, dtype=NUMPY_DTYPES[decl.dtype])
