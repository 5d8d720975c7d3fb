"""The reference semantics: a numpy oracle for design documents, tensorop kernels and loop IR.

Every correctness check in irkit compares against this module.  It runs a
checked design document (`evaluate_design`) or a tensorop kernel
(`evaluate_tensorop`) with numpy, for any sizes, and returns the output
tensors as row-major (C-order) arrays of their *logical* shapes; memory
layouts are the runner's business.

Both levels go through one engine, a *loop nest*: a domain (loop names and
extents, each loop parallel or reduction), accesses (a tensor and one
index expression per dimension, over the loops), a scalar body of
`arith`/`math` ops, and how the body's value meets the output element
(assign, or a combiner: add, max, min, mul, or a general fold).  An index
statement and a `tensorop.generic` both become such a nest; named
operations share one numpy implementation per operation.

Semantics decided here (see also docs/architecture.md):

- Statements run in document order.  Left-hand indices range over the
  target's dimensions; an index only on the right is a reduction index
  ranging over the dimensions it indexes directly (einsum style).
- `=` assigns; `+=` is a sum starting from 0; `max=` a maximum starting
  from -inf (`f32`, `f64`) or the lowest `int32`.  The maximum propagates
  NaN, as `arith.maximumf` does.
- The body is computed in the element type of the statement: `f32` stays
  `f32` op by op, constants take the element type, `exp`/`sqrt` are
  numpy's.  `i32` arithmetic wraps (two's complement); `/` on integers is
  `arith.divsi`, truncating toward zero like C (`-7 / 2 == -3`), and a
  division by zero raises `ReferenceEvalError` (C would trap).
- **Accumulation precision.**  A reduction sums the body values in float64
  (`f32`, `f64`) or int64 (`i32`) and rounds once to the element type at
  the end.  For `f32` the oracle is therefore close to the exactly rounded
  result and its own error is negligible against a compiled kernel's; the
  tolerance (`tolerance`) only has to bound the kernel's error.  Integer
  sums are exact modulo 2**32, the same as a wrapping `int32` loop in any
  order.  The einsum fast path (below) forms the products in float64 as
  well: a product of two `f32` values is exact there, so it differs from
  the `f32` body by at most half an ulp per term.  `f64` reductions sum in
  float64 (no extra precision).  `softmax` computes in float64 and rounds
  at the end; `matmul`, `batch_matmul` and `conv2d` accumulate like `+=`.
- Index expressions are evaluated per element, with floor division and
  a non-negative remainder (as in affine maps); an access out of bounds
  raises `ReferenceEvalError` rather than wrapping around as numpy would.
- Named operations overwrite their target (`tensorop.matmul` etc. are not
  accumulating, unlike `linalg.matmul`).

Efficiency: a statement that is a sum of products of plain-variable reads
(`C[i, j] += A[i, k] * B[k, j]`) runs as one `np.einsum(optimize=True)`
(BLAS); named operations use `@`, shifted-slice convolution and so on;
any other statement is evaluated over its whole index grid by
broadcasting open grids, reading tensors through strided views where the
indices allow (`x + 1`, `2 * y`) and fancy indexing otherwise, in chunks of
at most `CHUNK_ELEMENTS` grid points.

The package, one job a module: `common` (the error, dtypes, chunk size),
`inputs` (sizes and inputs), `engine` (index expressions, scalar bodies,
loop nests), `named` (the named operations' numpy semantics), `levels` (the
design and tensorop evaluators), `tolerance` (reduction lengths,
tolerances, the comparison), and `loop_interp`, the interpreter of loop IR
that `--check-semantics` uses where there is no C compiler.
"""

from __future__ import annotations

from irkit.oracle.common import CHUNK_ELEMENTS, NUMPY_DTYPES, ReferenceEvalError
from irkit.oracle.inputs import default_sizes, random_inputs, resolve_sizes
from irkit.oracle.levels import evaluate_design, evaluate_tensorop
from irkit.oracle.named import PLUGIN_MARK, REFERENCE_SEMANTICS, named_op
from irkit.oracle.tolerance import Comparison, compare, reduction_lengths, tolerance

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
