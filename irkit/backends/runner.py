"""Call a compiled kernel on numpy arrays, checking every argument first.

`CompiledKernel(kernel, library)` pairs the loop-level kernel `func.func`
(its argument metadata, via `irkit.kernel_abi.kernel_args`) with the loaded
library.  `kernel(arrays, sizes)` writes the outputs in place;
`kernel.run(inputs, sizes)` allocates the outputs (and copies inputs whose
layout or alignment does not fit) and returns the outputs.

Before any call every array is checked -- present, dtype, shape (the
`irkit.shape` map at the sizes), layout (row-major: C-contiguous; a storage
order `p`: `np.transpose(arr, p)` C-contiguous, so column-major 2-D is
F-contiguous), alignment (`irkit.align`: the C code assumes it), writable
outputs, and no two tensors sharing memory (the C pointers are `restrict`).
Sizes must be given or have a document default, be positive, and keep
the document's divisibility assumptions (`assume { M % 64 == 0 }`).  Every
problem is a `KernelArgumentError` (a `DiagnosticError`: one line per
problem, no traceback at the command line).
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, FileLineColLoc, IntegerAttr, ModuleOp
from xdsl.ir import SSAValue

from irkit.backends.c import c_symbol, emit_c
from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.kernel_abi import SizeArg, TensorArg, find_kernels, kernel_args, kernel_scalars
from irkit.sizes import SizeError, TensorShape, raise_if, size_problems

NUMPY_DTYPES: dict[str, type[np.generic]] = {"f32": np.float32, "f64": np.float64, "i32": np.int32}
DEFAULT_ALIGN = 64


class KernelArgumentError(DiagnosticError):
    """Arrays or sizes that do not fit a kernel."""


class KernelSizeError(KernelArgumentError, SizeError):
    """Sizes that do not fit a kernel (irkit.sizes' rules)."""


def _kernel_file(kernel: func.FuncOp) -> tuple[str, int, int]:
    loc = kernel.location
    if isinstance(loc, FileLineColLoc):
        return loc.filename.data, loc.line.data, loc.column.data
    return f"<kernel {kernel.sym_name.data}>", 0, 0


def argument_error(kernel: func.FuncOp, messages: list[str]) -> KernelArgumentError:
    file, line, col = _kernel_file(kernel)
    name = kernel.sym_name.data
    return KernelArgumentError([Diagnostic("error", f"kernel '{name}': {m}", file, line, col) for m in messages])


_CTYPES = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32}


def _describe(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} ({value.dtype})"
    return type(value).__name__


def inverse(order: list[int]) -> list[int]:
    inv = [0] * len(order)
    for k, d in enumerate(order):
        inv[d] = k
    return inv


def layout_name(order: list[int]) -> str:
    if order == sorted(order):
        return "row-major"
    if order == sorted(order, reverse=True):
        return "column-major"
    return f"storage order {order}"


def resolve_sizes(kernel: func.FuncOp, sizes: Mapping[str, object] | None) -> dict[str, int]:
    """Every size of the kernel: given, else its document default; `SizeError` if they do not fit
    the document (irkit.sizes: positive, known, the assumptions kept, no tensor empty)."""
    size_args, tensor_args = kernel_args(kernel)
    declared = [(s.name, s.default) for s in size_args]
    tensors = [TensorShape(t.name, partial(tensor_shape, t, size_args)) for t in tensor_args]
    out, problems = size_problems(declared, dict(sizes or {}), divisibility(kernel), tensors)
    file, line, col = _kernel_file(kernel)
    raise_if(problems, kernel.sym_name.data, file, line, col, KernelSizeError)
    return out


def divisibility(kernel: func.FuncOp) -> dict[str, int]:
    """The document's `assume { SIZE % D == 0 }` facts, from the kernel's `irkit.assume`."""
    assume = kernel.attributes.get("irkit.assume")
    if not isinstance(assume, DictionaryAttr):
        return {}
    div = assume.data.get("divisible")
    if not isinstance(div, DictionaryAttr):
        return {}
    return {k: v.value.data for k, v in div.data.items() if isinstance(v, IntegerAttr)}


def tensor_shape(t: TensorArg, size_args: list[SizeArg], sizes: Mapping[str, int]) -> tuple[int, ...]:
    """The logical shape of a tensor: its `irkit.shape` map at the sizes."""
    return tuple(t.shape.eval([], [sizes[s.name] for s in size_args]))


def tensor_bytes(dtype: str, shape: tuple[int, ...], align: int = DEFAULT_ALIGN) -> int:
    """The raw bytes `empty_tensor` needs for an array of `shape` (its elements and the alignment slack)."""
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(NUMPY_DTYPES[dtype]).itemsize + align


def empty_tensor(
    dtype: str,
    shape: tuple[int, ...],
    order: list[int] | None = None,
    align: int = DEFAULT_ALIGN,
    raw: np.ndarray | None = None,
) -> np.ndarray:
    """An uninitialised array of logical `shape` stored in `order` (outermost first), `align`-byte
    aligned; in `raw` (uint8, at least `tensor_bytes` long) when given, so that a caller timing many
    large cases can reuse memory whose pages have already faulted in."""
    order = list(range(len(shape))) if order is None else list(order)
    np_dtype = np.dtype(NUMPY_DTYPES[dtype])
    storage_shape = [shape[d] for d in order]
    nbytes = int(np.prod(storage_shape, dtype=np.int64)) * np_dtype.itemsize
    if raw is None:
        raw = np.empty(nbytes + align, dtype=np.uint8)
    elif raw.size < nbytes + align:
        raise ValueError(f"a raw buffer of {raw.size} bytes cannot hold {nbytes} bytes aligned to {align}")
    offset = (-raw.ctypes.data) % align
    flat = raw[offset : offset + nbytes].view(np_dtype)
    return flat.reshape(storage_shape).transpose(inverse(order))


def layout_problem(arr: np.ndarray, order: list[int]) -> str | None:
    if np.transpose(arr, order).flags.c_contiguous:
        return None
    if order == sorted(order):
        return "is not row-major (C-contiguous); pass np.ascontiguousarray(a)"
    if order == sorted(order, reverse=True):
        return "is not column-major (F-contiguous); pass np.asfortranarray(a)"
    return f"is not stored in order {order}: np.transpose(a, {order}) must be C-contiguous"


class CompiledKernel:
    """A kernel's C entry point with the argument checks its metadata implies."""

    def __init__(self, kernel: func.FuncOp, library: ctypes.CDLL | str | Path):
        self.kernel = kernel
        self.name = kernel.sym_name.data
        self.size_args, self.tensor_args = kernel_args(kernel)
        self.scalar_args = kernel_scalars(kernel)
        self.library = library if isinstance(library, ctypes.CDLL) else ctypes.CDLL(str(library))
        try:
            self.fn = getattr(self.library, c_symbol(self.name))
        except AttributeError:
            raise argument_error(kernel, [f"the library has no function {c_symbol(self.name)}"]) from None
        self.fn.restype = None
        scalar_types = {s.value: _CTYPES[s.dtype] for s in self.scalar_args}
        self.fn.argtypes = [
            ctypes.c_int64
            if arg in {s.value for s in self.size_args}
            else scalar_types.get(arg, ctypes.c_void_p)
            for arg in kernel.body.block.args
        ]
        self.tensors = {t.name: t for t in self.tensor_args}
        self.scalars = {s.name: s for s in self.scalar_args}

    @classmethod
    def build(cls, module: ModuleOp, kernel_name: str | None = None, cflags: list[str] | None = None):
        """Emit C for a loop-level module, compile it (cached) and load the kernel (the only one, or by name).
        (This module is the C target's loader; other code goes through `irkit.backends.target`.)"""
        from irkit.backends.build import compile_and_load

        kernels = find_kernels(module)
        if kernel_name is None:
            if len(kernels) != 1:
                names = ", ".join(k.sym_name.data for k in kernels) or "none"
                raise DiagnosticError([Diagnostic("error", f"name the kernel to run (the module holds: {names})")])
            kernel = kernels[0]
        else:
            matches = [k for k in kernels if k.sym_name.data == kernel_name]
            if not matches:
                raise DiagnosticError([Diagnostic("error", f"no kernel '{kernel_name}' in the module")])
            kernel = matches[0]
        return cls(kernel, compile_and_load(emit_c(module, cflags=cflags), cflags))

    # ---- metadata
    def resolve_sizes(self, sizes: Mapping[str, object] | None) -> dict[str, int]:
        return resolve_sizes(self.kernel, sizes)

    def shape(self, tensor: str, sizes: Mapping[str, object] | None = None) -> tuple[int, ...]:
        return tensor_shape(self.tensors[tensor], self.size_args, self.resolve_sizes(sizes))

    def empty(
        self, tensor: str, sizes: Mapping[str, object] | None = None, raw: np.ndarray | None = None
    ) -> np.ndarray:
        """An uninitialised array for `tensor`, with its layout and alignment (in `raw`, when given:
        see `empty_tensor`)."""
        t = self.tensors[tensor]
        return empty_tensor(t.dtype, self.shape(tensor, sizes), t.order, max(t.align or 0, DEFAULT_ALIGN), raw)

    def empty_bytes(self, tensor: str, sizes: Mapping[str, object] | None = None) -> int:
        """The raw bytes `empty` needs for `tensor`."""
        t = self.tensors[tensor]
        return tensor_bytes(t.dtype, self.shape(tensor, sizes), max(t.align or 0, DEFAULT_ALIGN))

    # ---- checks
    def check(self, arrays: Mapping[str, object], sizes: Mapping[str, int]) -> None:
        problems: list[str] = []
        for name in arrays:
            if name not in self.tensors and name not in self.scalars:
                takes = ", ".join([*self.tensors, *self.scalars])
                problems.append(f"unknown tensor '{name}' (the kernel takes {takes})")
        for sc in self.scalar_args:
            value = arrays.get(sc.name)
            if value is None:
                problems.append(f"no value for scalar '{sc.name}' ({sc.dtype})")
            elif np.ndim(value) != 0 or np.asarray(value).dtype.kind not in ("iu" if sc.dtype == "i32" else "iuf"):
                problems.append(f"scalar '{sc.name}': expected one {sc.dtype} number, got {_describe(value)}")
        present: list[tuple[TensorArg, np.ndarray]] = []
        for t in self.tensor_args:
            arr = arrays.get(t.name)
            shape = tensor_shape(t, self.size_args, sizes)
            if arr is None:
                problems.append(f"no array for {t.role} tensor '{t.name}' ({t.dtype}{list(shape)})")
                continue
            if not isinstance(arr, np.ndarray):
                problems.append(f"tensor '{t.name}': expected a numpy array, got {type(arr).__name__}")
                continue
            want = np.dtype(NUMPY_DTYPES[t.dtype])
            if arr.dtype != want:
                problems.append(f"tensor '{t.name}': dtype {arr.dtype}, expected {want} ({t.dtype})")
                continue
            if any(e <= 0 for e in shape):
                at = ", ".join(f"{k}={v}" for k, v in sizes.items())
                problems.append(f"tensor '{t.name}' has shape {shape} at {at}: every extent must be positive")
                continue
            if tuple(arr.shape) != shape:
                at = ", ".join(f"{k}={v}" for k, v in sizes.items())
                problems.append(f"tensor '{t.name}': shape {tuple(arr.shape)}, expected {shape} (at {at})")
                continue
            layout = layout_problem(arr, t.order)
            if layout is not None:
                problems.append(f"tensor '{t.name}' {layout} (its layout is {layout_name(t.order)})")
                continue
            if t.align and arr.ctypes.data % t.align:
                problems.append(
                    f"tensor '{t.name}': data at {arr.ctypes.data:#x} is not {t.align}-byte aligned, as the "
                    "document requires; allocate it with CompiledKernel.empty"
                )
                continue
            if t.role in ("output", "inout") and not arr.flags.writeable:
                problems.append(f"{t.role} tensor '{t.name}' is read-only")
                continue
            present.append((t, arr))
        for i, (t1, a1) in enumerate(present):
            for t2, a2 in present[i + 1 :]:
                if (t1.role != "input" or t2.role != "input") and np.may_share_memory(a1, a2):
                    problems.append(
                        f"tensors '{t1.name}' and '{t2.name}' share memory; the kernel needs distinct buffers"
                    )
        if problems:
            raise argument_error(self.kernel, problems)

    # ---- calls
    def __call__(self, arrays: Mapping[str, np.ndarray], sizes: Mapping[str, object] | None = None) -> None:
        """Run the kernel on `arrays` (every tensor by name); outputs are written in place."""
        resolved = self.resolve_sizes(sizes)
        self.check(arrays, resolved)
        self.fn(*self.arguments(arrays, resolved))

    def arguments(self, arrays: Mapping[str, object], sizes: Mapping[str, int]) -> list[object]:
        """The C function's arguments in order, unchecked: sizes, scalars by value, buffers by
        address (the caller keeps `arrays` alive while the arguments are used)."""
        values: dict[SSAValue, object] = {s.value: sizes[s.name] for s in self.size_args}
        values |= {t.value: arrays[t.name].ctypes.data for t in self.tensor_args}  # type: ignore[attr-defined]
        values |= {
            sc.value: np.asarray(arrays[sc.name]).astype(NUMPY_DTYPES[sc.dtype]).item() for sc in self.scalar_args
        }
        return [values[a] for a in self.kernel.body.block.args]

    def run(self, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, object] | None = None) -> dict[str, np.ndarray]:
        """Allocate the outputs, run, return the outputs by name.

        Inputs of the right dtype and shape but the wrong layout or alignment are copied into
        conforming arrays first; a wrong dtype or shape is still an error.  An in-out tensor is
        given with the inputs and returned with the outputs, updated in a copy (the given array
        stays as it was).
        """
        resolved = self.resolve_sizes(sizes)
        arrays: dict[str, np.ndarray] = {}
        for name, arr in inputs.items():
            t = self.tensors.get(name)
            if t is not None and t.role == "output":
                raise argument_error(self.kernel, [f"'{name}' is an output; run() allocates it"])
            if (
                t is not None
                and isinstance(arr, np.ndarray)
                and arr.dtype == np.dtype(NUMPY_DTYPES[t.dtype])
                and tuple(arr.shape) == tensor_shape(t, self.size_args, resolved)
                and (layout_problem(arr, t.order) or (t.align and arr.ctypes.data % t.align))
            ):
                fixed = self.empty(name, resolved)
                fixed[...] = arr
                arr = fixed
            arrays[name] = arr
        outputs = {t.name: self.empty(t.name, resolved) for t in self.tensor_args if t.role == "output"}
        for t in self.tensor_args:
            if t.role == "inout" and isinstance(arrays.get(t.name), np.ndarray) and arrays[t.name].shape == \
                    tensor_shape(t, self.size_args, resolved):  # fmt: skip
                outputs[t.name] = self.empty(t.name, resolved)
                outputs[t.name][...] = arrays.pop(t.name)
        self({**arrays, **outputs}, resolved)
        return outputs
