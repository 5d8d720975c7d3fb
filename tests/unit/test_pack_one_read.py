"""`pack A[j, k] at jo`: packing one of two reads of a tensor (a Gram matrix `A A^T` reads A as
A[i, k] and A[j, k]); the other read stays a read of A.  Checked against numpy, raised back with
its read named, and refused with the reads listed when the named read is not one of them."""

from __future__ import annotations

import numpy as np
import pytest

import irkit
from irkit.frontend import parse_design
from tests.unit.oracle_agreement import irkit_says, raised_document

GRAM = """design gram {
  sizes { N = 40, K = 24 }
  tensor A : f32[N, K] input
  tensor C : f32[N, N] output
  C[i, j] += A[i, k] * A[j, k]
  schedule C {
    tile i, j by 8, 16 -> io, jo, ii, ji
    reorder io, jo, k, ii, ji
    parallel io
    vectorize ji by 16
    pack A[j, k] at jo
  }
}
"""


@pytest.mark.parametrize("sizes", [{"N": 40, "K": 24}, {"N": 37, "K": 19}, {"N": 5, "K": 1}])
def test_one_packed_read_computes_the_gram_matrix(sizes):
    kernel = irkit.compile(GRAM, name="gram.design")
    a = np.random.default_rng(sizes["N"]).standard_normal((sizes["N"], sizes["K"])).astype(np.float32)
    np.testing.assert_allclose(kernel(sizes, A=a)["C"], a.astype(np.float64) @ a.T, rtol=1e-4, atol=1e-4)


def test_only_the_named_read_goes_through_the_packed_copy():
    from irkit.dialects import loop as lp
    from irkit.raising.verify import lowered_loops

    loops = lowered_loops(parse_design(GRAM, "gram.design"))
    allocs = [op for op in loops.walk() if isinstance(op, lp.AllocOp)]
    assert [op.tensor_name.data for op in allocs] == ["A_pack"]
    loads = [op for op in loops.walk() if isinstance(op, lp.LoadOp)]
    reads = {(op.memref.name_hint, op.attributes["irkit.read"].data) for op in loads if "irkit.read" in op.attributes}
    assert reads == {("A", "A[i, k]"), ("A_pack", "A[j, k]")}, reads


def test_the_named_read_prints_back_and_verifies():
    from irkit.backends.design_text import print_design
    from irkit.raising.verify import compare_modules, lowered_loops

    module = parse_design(GRAM, "gram.design")
    assert "    pack A[j, k] at jo\n" in print_design(module)
    assert [d.message for d in compare_modules(module, lowered_loops(module))] == []
    assert "pack A[j, k] at jo" in raised_document(GRAM)


def test_verify_tells_which_read_is_packed():
    """The document packs A[i, k]; the loops pack A[j, k]: a difference naming both."""
    from irkit.raising.verify import compare_modules, lowered_loops

    other = GRAM.replace("pack A[j, k] at jo", "pack A[i, k] at jo")
    messages = [d.message for d in compare_modules(parse_design(other, "g.design"), lowered_loops(parse_design(GRAM, "g.design")))]
    assert any("A[i, k]" in m for m in messages) and any("A[j, k]" in m for m in messages), messages


@pytest.mark.parametrize(
    ("directive", "message"),
    [
        ("pack A at jo", "the reads A[ii, k] and A[ji, k] are not offsets of one tile (their indices differ by more "
                         "than constants); pack one of them (pack A[j, k] at jo)"),
        ("pack A[k, j] at jo", "pack A[k, j] at jo: the stage reads 'A' as A[i, k], A[j, k] inside 'jo', not as A[k, j]"),
    ],
)  # fmt: skip
def test_a_read_that_is_not_one_is_refused_with_the_reads(directive, message, tmp_path):
    status, err, _ = irkit_says(GRAM.replace("pack A[j, k] at jo", directive), tmp_path)
    assert status == 1 and message in err, err


def test_naming_the_read_of_a_tensor_read_once_is_refused(tmp_path):
    text = GRAM.replace("A[i, k] * A[j, k]", "A[i, k] * B[j, k]").replace(
        "tensor A : f32[N, K] input", "tensor A : f32[N, K] input\n  tensor B : f32[N, K] input"
    ).replace("pack A[j, k] at jo", "pack B[j, k] at jo")
    status, err, _ = irkit_says(text, tmp_path)
    assert status == 1 and "the stage reads 'B' once; write pack B at jo" in err, err
