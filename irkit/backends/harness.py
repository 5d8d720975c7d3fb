"""A standalone C `main()` around one kernel, for sanitizers and command-line runs.

`emit_harness(module, kernel, sizes)` writes a second translation unit
that declares the kernel, allocates every tensor (aligned, exactly its
size, so AddressSanitizer sees a one-element overrun), fills inputs with
deterministic pseudo-random values, fills outputs with a poison value (NaN,
or 0x5A5A5A5A for i32, so an element the kernel forgets shows in the
checksum), calls the kernel once and prints, per output,

    checksum <tensor> <sum> <sum of absolute values>

(in storage order, accumulated in double).  `fill_values` computes the
same input values in numpy, so a checksum can be compared with a numpy or
ctypes run.  `build_harness` compiles kernel + harness into an executable
(cached like libraries), `run_harness` runs it.

Values: element `i` (storage order) of the tensor in argument position `a`
comes from splitmix64's finaliser applied to `(a + 1) << 40 ^ i`; floats
take the top 24 bits as `m / 2^23 - 1` in [-1, 1) (exact in f32), i32
values the top 4 bits minus 8, in [-8, 8).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from irkit.backends.build import build_executable
from irkit.backends.c_syntax import c_symbol, c_type
from irkit.backends.c_syntax import comment as _comment
from irkit.backends.runner import DEFAULT_ALIGN, NUMPY_DTYPES, inverse, resolve_sizes, tensor_shape
from irkit.backends.target import target
from irkit.diagnostics import Diagnostic, DiagnosticError
from irkit.kernel_abi import TensorArg, find_kernels, kernel_args, kernel_scalars, positive_definite
from irkit.oracle.inputs import make_positive_definite

ASAN_FLAGS = ["-fsanitize=address", "-fno-omit-frame-pointer", "-g", "-O1", "-fopenmp"]
RUN_TIMEOUT = 300  # seconds

_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB

_MIX = r"""static uint64_t irkit_mix(uint64_t x)
{
    uint64_t z = x + UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void *irkit_buffer(int64_t count, size_t size, size_t align, const char *name)
{
    void *p = NULL;
    const size_t bytes = (count > 0 ? (size_t)count : 1) * size;
    if (posix_memalign(&p, align, bytes) != 0) {
        fprintf(stderr, "harness: cannot allocate %lu bytes for '%s'\n", (unsigned long)bytes, name);
        exit(2);
    }
    return p;
}
"""
_CTYPES = {"f32": "float", "f64": "double", "i32": "int32_t"}
_VALUE = {
    "f32": "(float)((double)(irkit_mix((seed << 40) ^ (uint64_t)i) >> 40) / 8388608.0 - 1.0)",
    "f64": "(double)(irkit_mix((seed << 40) ^ (uint64_t)i) >> 40) / 8388608.0 - 1.0",
    "i32": "(int32_t)(irkit_mix((seed << 40) ^ (uint64_t)i) >> 60) - 8",
}
_POISON = {"f32": "NAN", "f64": "NAN", "i32": "0x5A5A5A5A"}
# What the harness passes for a scalar (by value): positive, as scale factors and epsilons are.
SCALAR_VALUE = {"f32": 1.25, "f64": 1.25, "i32": 3}
_SCALAR_TEXT = {"f32": "1.25f", "f64": "1.25", "i32": "3"}


def _support(dtype: str, role: str) -> list[str]:
    """The helper functions a tensor of `role` needs: an in-out tensor is filled like an input
    and summed like an output (each helper once, however many tensors use it)."""
    t = _CTYPES[dtype]
    fill = (
        f"static void irkit_fill_{dtype}({t} *p, int64_t n, uint64_t seed)\n{{\n"
        f"    for (int64_t i = 0; i < n; i += 1)\n        p[i] = {_VALUE[dtype]};\n}}\n"
    )
    poison = (
        f"static void irkit_poison_{dtype}({t} *p, int64_t n)\n{{\n"
        f"    for (int64_t i = 0; i < n; i += 1)\n        p[i] = {_POISON[dtype]};\n}}\n"
    )
    if role == "input":
        return [fill]
    if role == "inout":
        return [fill, _checksum(dtype)]
    return [poison, _checksum(dtype)]


def _definite(dtype: str) -> str:
    """`(X + X^T) / 2 + n I` in place, for a tensor assumed `positive_definite` (as
    `irkit.oracle.inputs` makes its random inputs): symmetric, so its storage order does not matter."""
    t = _CTYPES[dtype]
    return (
        f"static void irkit_definite_{dtype}({t} *p, int64_t n)\n{{\n"
        "    for (int64_t i = 0; i < n; i += 1) {\n"
        "        for (int64_t j = 0; j < i; j += 1) {\n"
        f"            const {t} mean = (p[i * n + j] + p[j * n + i]) / 2;\n"
        "            p[i * n + j] = mean;\n"
        "            p[j * n + i] = mean;\n"
        "        }\n"
        f"        p[i * n + i] += ({t})n;\n"
        "    }\n"
        "}\n"
    )


def _checksum(dtype: str) -> str:
    t = _CTYPES[dtype]
    return (
        f"static void irkit_checksum_{dtype}(const char *name, const {t} *p, int64_t n)\n{{\n"
        "    double sum = 0.0, abs_sum = 0.0;\n"
        "    for (int64_t i = 0; i < n; i += 1) {\n"
        "        sum += (double)p[i];\n"
        "        abs_sum += fabs((double)p[i]);\n"
        "    }\n"
        '    printf("checksum %s %.17g %.17g\\n", name, sum, abs_sum);\n'
        "}\n"
    )


def _pick_kernel(module: ModuleOp, kernel_name: str | None) -> func.FuncOp:
    kernels = find_kernels(module)
    if kernel_name is None and len(kernels) == 1:
        return kernels[0]
    for k in kernels:
        if k.sym_name.data == kernel_name:
            return k
    names = ", ".join(k.sym_name.data for k in kernels) or "none"
    raise DiagnosticError([Diagnostic("error", f"harness: no kernel '{kernel_name}' (the module holds: {names})")])


def emit_harness(module: ModuleOp, kernel_name: str | None, sizes: dict[str, int] | None = None) -> str:
    """C source of a `main()` that runs `kernel_name` once at `sizes` (defaults fill the rest)."""
    kernel = _pick_kernel(module, kernel_name)
    name = kernel.sym_name.data
    resolved = resolve_sizes(kernel, sizes)
    size_args, tensors = kernel_args(kernel)
    by_value = {t.value: t for t in tensors}
    scalars = {sc.value: sc for sc in kernel_scalars(kernel)}
    definite = positive_definite(kernel)
    at = ", ".join(f"{k}={v}" for k, v in resolved.items())
    proto: list[str] = []
    for arg in kernel.body.block.args:
        if arg in scalars:
            proto.append(f"const {_CTYPES[scalars[arg].dtype]}")
        elif arg in by_value:
            t = by_value[arg]
            proto.append(f"{'const ' if t.role == 'input' else ''}{c_type(t.memref.element_type)} *")
        else:
            proto.append("int64_t")
    out = [
        "/* " + _comment(f"Harness generated by irkit: runs kernel {name} once at {at}.") + " */",
        "#define _POSIX_C_SOURCE 200112L /* posix_memalign */",
        "#include <math.h>",
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "",
        f"void {c_symbol(name)}({', '.join(proto)});",
        "",
        _MIX,
        *sorted({part for t in tensors for part in _support(t.dtype, t.role)}),
        *sorted({_definite(t.dtype) for t in tensors if t.name in definite}),
        "int main(void)",
        "{",
    ]
    for s in size_args:
        out.append(f"    const int64_t {s.name} = {resolved[s.name]};")
    taken = {s.name for s in size_args}
    buffers: dict[str, str] = {}
    for t in tensors:
        var = f"buf_{t.name}"
        while var in taken or f"n_{var}" in taken:
            var += "_"
        taken.update((var, f"n_{var}"))
        buffers[t.name] = var
    call: list[str] = []
    for position, arg in enumerate(kernel.body.block.args):
        if arg in scalars:
            call.append(_SCALAR_TEXT[scalars[arg].dtype])
            continue
        if arg not in by_value:
            call.append(next(s.name for s in size_args if s.value is arg))
            continue
        t = by_value[arg]
        var = buffers[t.name]
        count = "*".join(f"INT64_C({e})" for e in tensor_shape(t, size_args, resolved)) or "1"
        ctype = c_type(t.memref.element_type)
        align = max(t.align or 0, DEFAULT_ALIGN)
        out.append(f"    const int64_t n_{var} = {count};  /* {t.name}: {t.dtype} {t.role} */")
        out.append(f'    {ctype} *{var} = ({ctype} *)irkit_buffer(n_{var}, sizeof({ctype}), {align}, "{t.name}");')
        if t.role in ("input", "inout"):
            out.append(f"    irkit_fill_{t.dtype}({var}, n_{var}, {position + 1});")
            if t.name in definite:
                side = tensor_shape(t, size_args, resolved)[0]
                out.append(f"    irkit_definite_{t.dtype}({var}, INT64_C({side}));")
        else:
            out.append(f"    irkit_poison_{t.dtype}({var}, n_{var});")
        call.append(var)
    out.append(f"    {c_symbol(name)}({', '.join(call)});")
    for t in tensors:
        if t.role in ("output", "inout"):
            var = buffers[t.name]
            out.append(f'    irkit_checksum_{t.dtype}("{t.name}", {var}, n_{var});')
    for t in tensors:
        out.append(f"    free({buffers[t.name]});")
    out += ["    return 0;", "}", ""]
    return "\n".join(out)


# ------------------------------------------------------------ numpy side


def fill_values(kernel: func.FuncOp, tensor: str, sizes: dict[str, int] | None = None) -> np.ndarray:
    """The values the harness puts in input `tensor`, as an array of its logical shape and layout."""
    resolved = resolve_sizes(kernel, sizes)
    size_args, tensors = kernel_args(kernel)
    scalar = next((sc for sc in kernel_scalars(kernel) if sc.name == tensor), None)
    if scalar is not None:
        return np.asarray(SCALAR_VALUE[scalar.dtype], dtype=NUMPY_DTYPES[scalar.dtype])
    args = list(kernel.body.block.args)
    t: TensorArg = next(x for x in tensors if x.name == tensor)
    seed = args.index(t.value) + 1
    shape = tensor_shape(t, size_args, resolved)
    n = int(np.prod(shape, dtype=np.int64))
    with np.errstate(over="ignore"):
        x = (np.uint64(seed) << np.uint64(40)) ^ np.arange(n, dtype=np.uint64)
        z = x + np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
        z = z ^ (z >> np.uint64(31))
    if t.dtype == "i32":
        flat = (z >> np.uint64(60)).astype(np.int32) - np.int32(8)
    else:
        flat = ((z >> np.uint64(40)).astype(np.float64) / 8388608.0 - 1.0).astype(NUMPY_DTYPES[t.dtype])
    storage = flat.reshape([shape[d] for d in t.order])
    values = storage.transpose(inverse(t.order))
    if t.name in positive_definite(kernel):  # as the harness's irkit_definite, in the element type
        values = values.copy()
        make_positive_definite(values)
    return values


def checksum(arr: np.ndarray, order: list[int] | None = None) -> tuple[float, float]:
    """(sum, sum of absolute values) in double, as the harness prints them (up to summation order)."""
    order = list(range(arr.ndim)) if order is None else order
    flat = np.transpose(arr, order).astype(np.float64).ravel()
    return float(flat.sum()), float(np.abs(flat).sum())


# ------------------------------------------------------------ build and run


@dataclass
class HarnessResult:
    returncode: int
    stdout: str
    stderr: str
    checksums: dict[str, tuple[float, float]]
    executable: Path


def build_harness(
    module: ModuleOp, kernel_name: str | None, sizes: dict[str, int] | None = None, cflags: list[str] | None = None
) -> Path:
    """Compile the module's C and the harness into one executable (cached)."""
    sources = {"kernel": target("c").emit(module, cflags), "main": emit_harness(module, kernel_name, sizes)}
    return build_executable(sources, cflags)


_LINE = re.compile(r"^checksum (\S+) (\S+) (\S+)$")


def run_executable(exe: Path, env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT) -> HarnessResult:
    full_env = dict(os.environ, **(env or {}))
    try:
        done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout, env=full_env, check=False)
    except subprocess.TimeoutExpired:
        raise DiagnosticError([Diagnostic("error", f"the harness ran longer than {timeout} s", str(exe))]) from None
    sums: dict[str, tuple[float, float]] = {}
    for line in done.stdout.splitlines():
        m = _LINE.match(line.strip())
        if m:
            sums[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return HarnessResult(done.returncode, done.stdout, done.stderr, sums, exe)


def run_harness(
    module: ModuleOp,
    kernel_name: str | None,
    sizes: dict[str, int] | None = None,
    cflags: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> HarnessResult:
    """Build and run the harness; the result has the exit status, output and parsed checksums."""
    return run_executable(build_harness(module, kernel_name, sizes, cflags), env)
