"""irkit's affine core: linear forms, their printing, and what can be proved of them.

`linear` holds the one linear-form class (`Lin` over any atom -- map
positions, SSA values, names -- with `floordiv`/`ceildiv`/`mod` atoms,
`Div`), its named division rules and its conversions from and to xDSL's
`AffineExpr` and `AffineMap` (xDSL only); `printer` prints an `AffineExpr`
for each target through one walk with hooks; `bounds` reads the loop
dialect's bounds and accesses as forms; `prove` holds the ranges of loop
variables and the prover that decides inequalities between forms.
"""
