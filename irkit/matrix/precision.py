"""The precision gate: a kernel's outputs against a float64 evaluation of its document.

The oracle `--check` uses computes in the document's element type (`f32` stays
`f32` op by op, reductions are summed in float64), and the tolerance it
grants grows with the reduction length.  `--max-rel-err` asks more: every
element within a relative bound of the value the same document gives with
every `f32` tensor and scalar declared `f64` (the same inputs, widened).
An element's relative error is `|got - exact| / max(|exact|, floor)`, with
`floor` a thousandth of the output's largest magnitude, so that an element
near zero, where any rounding is a large relative error, is judged against
the output's scale instead.
"""

from __future__ import annotations

import re

import numpy as np

_F32_DECLARATION = re.compile(r"(\b(?:tensor|scalar)\s+[A-Za-z_]\w*\s*:\s*)f32\b")
FLOOR = 1e-3
WORST = 5  # elements named in the diff report


def float64_text(text: str) -> str:
    """The document with every `f32` tensor and scalar declared `f64`."""
    return _F32_DECLARATION.sub(r"\1f64", text)


def float64_outputs(text: str, name: str, sizes: dict[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    """The document's outputs computed in float64 from the inputs `irkit run --seed SEED` uses."""
    from irkit.frontend import parse_design
    from irkit.oracle import evaluate_design, random_inputs

    inputs = random_inputs(parse_design(text, name), sizes, seed=seed)
    widened = {k: np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind == "f" else v for k, v in inputs.items()}
    return evaluate_design(parse_design(float64_text(text), name), widened, sizes)


def relative_errors(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    got64, exact64 = np.asarray(got, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    finite = np.abs(exact64[np.isfinite(exact64)])
    floor = FLOOR * float(finite.max()) if finite.size else 0.0
    with np.errstate(all="ignore"):
        rel = np.abs(got64 - exact64) / np.maximum(np.abs(exact64), max(floor, np.finfo(np.float64).tiny))
    same = (got64 == exact64) | (np.isnan(got64) & np.isnan(exact64))
    rel[same] = 0.0
    rel[np.isnan(rel)] = np.inf
    return rel


def worst_elements(name: str, got: np.ndarray, exact: np.ndarray, rel: np.ndarray, count: int = WORST) -> list[dict]:
    flat = np.argsort(rel.reshape(-1), kind="stable")[::-1][:count]
    out = []
    for k in flat:
        where = tuple(int(i) for i in np.unravel_index(int(k), rel.shape))
        out.append({"tensor": name, "index": list(where), "got": float(got[where]), "float64": float(exact[where]),
                    "rel_err": float(rel[where])})  # fmt: skip
    return out
