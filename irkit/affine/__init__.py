"""irkit's affine core: linear forms over loop variables and sizes, and what can be proved of them.

`linear` holds the linear-form class (`Lin`, with `floordiv`/`ceildiv`/`mod`
atoms, `Div`) and its conversions from and to xDSL's `AffineExpr` and
`AffineMap`; `prove` holds the ranges of loop variables and the prover that
decides inequalities between forms.  They were written for `compute_at`
(which places a producer inside a consumer's loop by proving footprints)
and moved here so that the other passes, the backends and raising can
share one implementation (issue 16: the other copies are still to move).
"""
