"""One check the tuner's tests share: a document's compiled kernel agrees with the numpy oracle."""

from __future__ import annotations

import numpy as np

import irkit
from irkit.oracle import compare, reduction_lengths


def agrees_with_the_oracle(text: str, sizes: dict[str, int], seed: int = 3, name: str = "tuned.design") -> None:
    """Compile `text`, run it at `sizes` on seeded random inputs, and assert every output is within tolerance."""
    kernel = irkit.compile(text, name=name)
    inputs = kernel.random_inputs(sizes, seed=seed)
    with np.errstate(all="ignore"):
        got = kernel(sizes, **inputs)
        expected = kernel.reference(inputs, sizes)
    lengths = reduction_lengths(kernel.levels["design"], kernel.resolve_sizes(sizes))
    for out, value in expected.items():
        report = compare(got[out], value, value.dtype, lengths.get(out, 1))
        assert report.ok, f"{out} at {sizes}: {report}\n{text}"
