// Chapter 6: bad options and bad input give one clear error and exit status 1.
// RUN: not irkit-opt %S/../../../../examples/tutorial/ch6/matmul_jki.design --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'lower-design,lower-tensorop,apply-schedule,tutorial-interchange{max-band=9}' 2>&1 | filecheck %s --check-prefix=MAX
// RUN: not irkit-opt %S/../../../../examples/tutorial/ch6/matmul_jki.design --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'lower-design,lower-tensorop,apply-schedule,tutorial-interchange{max-band=many}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not irkit-opt %S/../../../../examples/tutorial/ch6/matmul_jki.design --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'lower-design,lower-tensorop,apply-schedule,tutorial-interchange{hardware=nosuch}' 2>&1 | filecheck %s --check-prefix=HW
// RUN: not irkit-opt %S/../../../../examples/tutorial/ch6/matmul_jki.design --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'lower-design,lower-tensorop,apply-schedule,tutorial-interchange{sizes="M=0"}' 2>&1 | filecheck %s --check-prefix=SIZES
// RUN: not irkit-opt %S/../../../../examples/tutorial/ch6/matmul_jki.design --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'lower-design,lower-tensorop,apply-schedule,tutorial-interchange{sizes="Q=8"}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not irkit-opt %S/../../../../examples/tutorial/ch6/matmul_jki.design --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'lower-design,tutorial-interchange' 2>&1 | filecheck %s --check-prefix=LEVEL

// MAX:     error: tutorial-interchange: max-band must be between 1 and 6 (6! = 720 orders), got 9
// TYPE:    irkit-opt: error: option 'max-band' of pass 'tutorial-interchange' expects int, got 'many'
// HW:      error: tutorial-interchange: hardware: hardware description 'nosuch' not found: no nosuch.hw in
// SIZES:   error: tutorial-interchange: sizes: expected NAME=VALUE with a positive integer VALUE, got 'M=0'
// UNKNOWN: matmul_jki.design:6:1: error: tutorial-interchange: sizes: kernel has no size Q (its sizes: M, N, K)
// UNKNOWN-NEXT: design matmul_jki {
// LEVEL:   matmul_jki.design:15:3: error: tutorial-interchange: expects loop-level IR; run lower-tensorop first (found 'tensorop.fill')
// LEVEL-NEXT: C[i, j] += A[i, k] * B[k, j]
// LEVEL-NEXT: ^
