"""gcc's in-order ("fold-left") vectorisation of a scalar accumulation, as the model counts it.

`o[e] += a[e, k] * b[k]` with no schedule: gcc 12 keeps `o[e]` in a register, loads `a` and `b`
a full vector at a time and multiplies them as vectors, then adds the products to the
accumulator one lane at a time, in order (the assembly for AVX-512 and for AVX2: one `vmulps`,
then 16 or 8 `vaddss`, each lane taken out by `valignd` / `vextract`).  Priced as scalar loads
and the accumulator's load and store every element, the window's calibration loop (512 entries
of 128) had an L1 term of 28 us where 21.4 us was measured, on the Xeon model 167 guest built
for AVX2: the window's fit failed there, and every chain was then priced without a window.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from irkit.perf.predict import cost_model


def counts(text: str, tmp_path: Path, sizes: dict[str, int]) -> dict[str, float]:
    doc = tmp_path / "doc.design"
    doc.write_text(text)
    model, _, _ = cost_model(doc)
    env = {k: np.float64(v) for k, v in sizes.items()}
    env.update(line=64.0, lanes32=8.0, lanes64=4.0, cores=1.0, window=0.0, huge_page=4096.0)
    out: dict[str, float] = {}
    for _, core, *_ in model._nests:
        for k, v in core(env).items():
            out[k] = out.get(k, 0.0) + float(np.asarray(v))
    return out


def doc(statement: str, b_shape: str = "[L]") -> str:
    return (
        f"design r {{\n  sizes {{ E = 4, L = 512 }}\n  tensor a : f32[E, L] input\n  tensor b : f32{b_shape} input\n"
        f"  tensor o : f32[E] output\n  {statement}\n}}\n"
    )


SIZES = {"E": 4, "L": 512}


def test_the_products_are_vectors_and_the_accumulator_stays_in_a_register(tmp_path):
    c = counts(doc("o[e] += a[e, k] * b[k]"), tmp_path, SIZES)
    # a and b: one full-width (8-lane) vector load each per 8 elements (and the zeroing nest's
    # one vector store of o)
    assert c["instr_mem"] == 2 * 4 * 512 / 8 + 1
    # the accumulator: loaded and stored once an entry (4 entries), not once an element
    assert c["instr_store_s"] == 4
    assert c["instr_mem_s"] <= 2 * 4
    # one dependent add an element, and each lane's extract and add as scalar instructions
    assert c["chain_add"] + c.get("chain_fma", 0.0) == 4 * 512
    assert c["instr_fp_s"] == 2 * 4 * 512


def test_a_maximum_or_a_strided_operand_stays_scalar(tmp_path):
    for text in (doc("o[e] max= a[e, k]"), doc("o[e] += a[e, k] * b[k, e]", "[L, E]")):
        c = counts(text, tmp_path, SIZES)
        assert c.get("instr_mem", 0.0) <= 1  # no vector loads (the zeroing nest's store only)
        assert c["instr_mem_s"] >= 4 * 512  # an operand loaded every element
