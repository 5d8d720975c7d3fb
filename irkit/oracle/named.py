"""The numpy semantics of the named operations, irkit's own and plugins'."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from irkit import registry
from irkit.affine_text import Const, evaluate
from irkit.named_ops import NAMED_OPS
from irkit.oracle.common import ReferenceEvalError
from irkit.oracle.engine import _acc_dtype, _divsi

# --- named operations ----------------------------------------------------------------------


def _conv2d(
    image: np.ndarray, weights: np.ndarray, stride: int, padding: int, layout: str, acc: np.dtype
) -> np.ndarray:
    """Cross-correlation as a sum over the R x S window of shifted image slices times weights (tensordot over C)."""
    if layout == "nchw":
        img = image.transpose(0, 2, 3, 1)  # N, H, W, C
        wt = weights.transpose(2, 3, 1, 0)  # R, S, C, F
    else:
        img, wt = image, weights  # N, H, W, C and R, S, C, F
    n, h, w, c = img.shape
    r_, s_, c2, f = wt.shape
    if c != c2:
        raise ReferenceEvalError(f"conv2d: the image has {c} channels, the weights {c2}")
    oh = (h + 2 * padding - r_) // stride + 1
    ow = (w + 2 * padding - s_) // stride + 1
    if oh <= 0 or ow <= 0:
        raise ReferenceEvalError(f"conv2d: the output would be {oh} x {ow}")
    padded = np.zeros((n, h + 2 * padding, w + 2 * padding, c), dtype=acc)
    padded[:, padding : padding + h, padding : padding + w, :] = img
    wt = wt.astype(acc)
    out = np.zeros((n, oh, ow, f), dtype=acc)
    for r in range(r_):
        for s in range(s_):
            window = padded[:, r : r + stride * (oh - 1) + 1 : stride, s : s + stride * (ow - 1) + 1 : stride, :]
            out += np.tensordot(window, wt[r, s], axes=([3], [0]))
    return out.transpose(0, 3, 1, 2) if layout == "nchw" else out


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if x.dtype.kind != "f":
        raise ReferenceEvalError("softmax needs a floating-point tensor")
    x64 = x.astype(np.float64)
    x64 -= x64.max(axis=axis, keepdims=True)
    np.exp(x64, out=x64)
    x64 /= x64.sum(axis=axis, keepdims=True)
    return x64


def _elementwise(fn: str, args: list[np.ndarray], dt: np.dtype) -> np.ndarray:
    integer = dt.kind != "f"
    table: dict[str, Callable] = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _divsi if integer else np.divide,
        "max": np.maximum, "min": np.minimum, "neg": np.negative, "exp": np.exp, "sqrt": np.sqrt,
    }  # fmt: skip
    if fn not in table:
        raise ReferenceEvalError(f"unknown elementwise function '{fn}'")
    if integer and fn in ("exp", "sqrt"):
        raise ReferenceEvalError(f"elementwise {fn} needs a floating-point tensor")
    return table[fn](*args)


# Semantics of named operations added through `irkit.extend.register_named_op`:
# fn(operands, parameter values with defaults filled in, accumulation dtype) -> result.
ReferenceFn = Callable[[list[np.ndarray], dict[str, object], np.dtype], np.ndarray]
PLUGIN_MARK = "(registered by a plugin)"  # in every error of a plugin's semantics: the checker looks for it
REFERENCE_SEMANTICS: dict[str, ReferenceFn] = registry.REFERENCE_SEMANTICS


def named_op(name: str, args: list[np.ndarray], params: Mapping[str, object], dtype: np.dtype) -> np.ndarray:
    """The numpy value of a named operation (both levels), in `dtype`.

    `params` are Python values (`stride`, `padding`, `layout`, `axis`,
    `perm`, and for tensorop's `reduce`/`elementwise`: `dims`, `kind`, `fn`).
    """
    dt = np.dtype(dtype)
    acc = _acc_dtype(dt)
    if name == "matmul":
        a, b = args
        out = a.astype(acc) @ b.astype(acc)
    elif name == "batch_matmul":
        a, b = args
        if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
            raise ReferenceEvalError(f"batch_matmul of shapes {a.shape} and {b.shape}")
        a, b = a.astype(acc), b.astype(acc)
        out = np.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=acc)
        for k in range(a.shape[0]):  # one BLAS call per product: np.matmul on stacks may not use BLAS
            np.matmul(a[k], b[k], out=out[k])
    elif name == "conv2d":
        stride = int(params.get("stride", 1) or 1)  # type: ignore[arg-type]
        padding = int(params.get("padding", 0) or 0)  # type: ignore[arg-type]
        layout = str(params.get("layout", "nchw") or "nchw")
        out = _conv2d(args[0], args[1], stride, padding, layout, acc)
    elif name == "softmax":
        axis = params.get("axis", -1)
        out = _softmax(args[0], int(-1 if axis is None else axis))  # type: ignore[arg-type]
    elif name == "transpose":
        perm = params.get("perm")
        perm = list(reversed(range(args[0].ndim))) if perm is None else list(perm)  # type: ignore[call-overload]
        out = np.ascontiguousarray(np.transpose(args[0], perm))
    elif name == "reduce":
        dims = tuple(params.get("dims") or ())  # type: ignore[call-overload]
        kind = params.get("kind", "add") or "add"
        out = args[0].sum(axis=dims, dtype=acc) if kind == "add" else args[0].max(axis=dims)
    elif name == "elementwise":
        out = _elementwise(str(params.get("fn")), args, dt)
    elif name in REFERENCE_SEMANTICS:
        values = {k: p.default for k, p in NAMED_OPS[name].params.items()} if name in NAMED_OPS else {}
        values.update({k: v for k, v in params.items() if v is not None})
        try:
            out = REFERENCE_SEMANTICS[name]([np.asarray(a) for a in args], values, acc)
        except Exception as exc:  # a plugin's semantics: say whose code failed
            raise ReferenceEvalError(
                f"the reference semantics of '{name}' {PLUGIN_MARK} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if name in NAMED_OPS:
            _check_plugin_shape(name, [a.shape for a in args], values, np.shape(out))
    else:
        raise ReferenceEvalError(f"the reference has no semantics for the named operation '{name}'")
    return np.asarray(out).astype(dt, copy=False)


def _check_plugin_shape(name: str, shapes: list[tuple[int, ...]], values: dict, produced: tuple[int, ...]) -> None:
    """A plugin's numpy semantics must return the shape its own shape rule promises."""
    spec = NAMED_OPS[name]
    exprs = [[Const(n) for n in shape] for shape in shapes]
    promised = tuple(int(evaluate(e, {})) for e in spec.shape_fn(exprs, values)[0])
    if tuple(produced) != promised:
        raise ReferenceEvalError(
            f"the reference semantics of '{name}' {PLUGIN_MARK} returned shape {tuple(produced)}, "
            f"but its shape rule gives {promised} for operands of shapes {', '.join(str(s) for s in shapes)}"
        )


def _check_named_shape(stage: str, produced: tuple[int, ...], expected: tuple[int, ...]) -> None:
    if produced != expected:
        raise ReferenceEvalError(
            f"stage '{stage}': the operation produces shape {produced}, but the target has shape {expected}"
        )
