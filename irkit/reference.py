"""The reference semantics under its first name: everything public of `irkit.oracle`.

The oracle was one module, `irkit.reference`; it is now the package
`irkit.oracle`, a module per job.  This name stays for code written against
it (plugins, notebooks, the tests of the oracle itself).
"""

from __future__ import annotations

from irkit.oracle import (
    CHUNK_ELEMENTS,
    NUMPY_DTYPES,
    PLUGIN_MARK,
    REFERENCE_SEMANTICS,
    Comparison,
    ReferenceEvalError,
    compare,
    default_sizes,
    evaluate_design,
    evaluate_tensorop,
    named_op,
    random_inputs,
    reduction_lengths,
    resolve_sizes,
    tolerance,
)

__all__ = [
    "CHUNK_ELEMENTS",
    "NUMPY_DTYPES",
    "PLUGIN_MARK",
    "REFERENCE_SEMANTICS",
    "Comparison",
    "ReferenceEvalError",
    "compare",
    "default_sizes",
    "evaluate_design",
    "evaluate_tensorop",
    "named_op",
    "random_inputs",
    "reduction_lengths",
    "resolve_sizes",
    "tolerance",
]
