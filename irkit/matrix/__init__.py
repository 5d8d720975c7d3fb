"""`irkit matrix`: a measured compatibility matrix, kernel x target.

Each document is built for each target (an ISA: the host's own, `x86-64-v3`
AVX2, `x86-64-v2` SSE4.2; a thread count) and run in a process of its own
(`irkit run --check --bench --json` with `--march` and `OMP_NUM_THREADS`), so
a kernel that crashes, or an ISA the host cannot run, costs one cell and not
the matrix.  A cell is

- ok (✅): the result agrees with the numpy oracle within the document's
  tolerance and, with `--max-rel-err`, within the bound against a float64
  evaluation of the document;
- a warning (⚠️): correct, but more than 10% slower than the target's unscheduled baseline
  (the document without its schedules, one thread, the same ISA), or the
  oracle itself gives NaN or infinities there;
- a failure (❌): a wrong result (the worst element, its value and the
  expected one), an error beyond `--max-rel-err`, a build the compiler
  refused (its message) or a crash.

Modules: `targets` (what a column is), `cell` (running one cell),
`precision` (the float64 oracle and the relative errors), `report` (CSV,
markdown, heat map, the diff report).
"""
