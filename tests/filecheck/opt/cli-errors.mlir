// Usage errors are one line on stderr, never a traceback.
// RUN: not irkit-opt %s -p canonicalise 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not irkit-opt %s -p 'cse{depth=2}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not irkit-opt %s -p 'scf-parallel-loop-tiling{parallel-loop-tile-sizes=a}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not irkit-opt %s -p 'cse{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not irkit-opt %s.missing 2>&1 | filecheck %s --check-prefix=MISSING

// UNKNOWN: irkit-opt: error: unknown pass 'canonicalise'; did you mean 'canonicalize'?
// UNKNOWN-NOT: Traceback
// OPTION: irkit-opt: error: pass 'cse' has no option 'depth' (it takes no options)
// TYPE: irkit-opt: error: option 'parallel-loop-tile-sizes' of pass 'scf-parallel-loop-tiling' expects tuple[int, ...], got 'a'
// SYNTAX: irkit-opt: error: malformed pass pipeline 'cse{' at column 5: expected argument name here
// MISSING: irkit-opt: error: no such file: '{{.*}}cli-errors.mlir.missing'

builtin.module {
}
