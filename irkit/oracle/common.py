"""Names every part of the oracle shares: its error, its dtypes, its chunk size."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import Float32Type, Float64Type, IndexType, IntegerType
from xdsl.ir import Attribute

CHUNK_ELEMENTS = 1 << 20
"""Largest index grid (points) evaluated at once.  It bounds the oracle's working memory, and blocks of
at most 8 MiB per temporary stay under glibc's mmap threshold (32 MiB), so they reuse heap memory
instead of faulting in fresh pages for every operation (5-10x faster on large grids)."""

NUMPY_DTYPES: dict[str, type[np.generic]] = {"f32": np.float32, "f64": np.float64, "i32": np.int32}

_INT_DTYPES = {1: np.bool_, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def numpy_dtype(t: Attribute) -> np.dtype | None:
    """The numpy dtype of an xDSL scalar or element type (index is int64), None for any other;
    each evaluator says in its own error what it cannot hold."""
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, IntegerType) and t.width.data in _INT_DTYPES:
        return np.dtype(_INT_DTYPES[t.width.data])
    return None


class ReferenceEvalError(ValueError):
    """The program cannot be evaluated: a missing size or input, an access out of bounds, a division by zero..."""
