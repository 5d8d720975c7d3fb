"""C syntax shared by the C emitters: element types, literals and safe comments.

A leaf of the C backend: the scalar emitter (`irkit.backends.c`) and the
vector emitter (`irkit.backends.c_simd`) both print with it, so neither
needs the other's module for its syntax.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import Float32Type, Float64Type, IndexType, IntegerType
from xdsl.ir import Attribute

__all__ = ["c_symbol", "c_type", "comment", "float_literal", "int_literal", "is_f32"]


def c_symbol(kernel_name: str) -> str:
    """The C entry point of a kernel."""
    return f"irkit_{kernel_name}"


def c_type(t: Attribute) -> str | None:
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, IndexType):
        return "int64_t"
    if isinstance(t, IntegerType):
        return {1: "int", 32: "int32_t", 64: "int64_t"}.get(t.width.data)
    return None


def is_f32(t: Attribute) -> bool:
    return isinstance(t, Float32Type)


def comment(text: str) -> str:
    """`text` made safe inside a /* */ comment: printable ASCII, no terminator, no trigraphs."""
    clean = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)
    clean = clean.replace("*/", "* /").replace("/*", "/ *")
    while "??" in clean:
        clean = clean.replace("??", "?-?")
    return clean


def float_literal(value: float, t: Attribute) -> str:
    suffix = "f" if is_f32(t) else ""
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    text = repr(float(value))
    if "e" not in text and "." not in text:
        text += ".0"
    text += suffix
    return f"({text})" if text.startswith("-") else text


def int_literal(value: int, t: Attribute) -> str:
    width = t.width.data if isinstance(t, IntegerType) else 64
    if width == 1:
        return "1" if value & 1 else "0"
    if width == 32:
        value = (value + 2**31) % 2**32 - 2**31
        if value == -(2**31):
            return "INT32_MIN"
    elif width == 64 or isinstance(t, IndexType):
        value = (value + 2**63) % 2**64 - 2**63
        if value == -(2**63):
            return "INT64_MIN"
        if not -(2**31) < value < 2**31:
            return f"INT64_C({value})" if value >= 0 else f"(-INT64_C({-value}))"
    return str(value) if value >= 0 else f"({value})"

