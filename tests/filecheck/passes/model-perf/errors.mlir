// model-perf needs loop-level kernels: given design or tensorop IR it says which
// passes to run first, with a non-zero exit and no traceback.
// RUN: not irkit-opt %S/../../../../examples/gemm.design -p model-perf 2>&1 | filecheck %s --check-prefix=DESIGN
// RUN: not irkit-opt %S/../../../../examples/gemm.design -p lower-design,model-perf 2>&1 | filecheck %s --check-prefix=TENSOROP
// RUN: not irkit predict %S/../../../../examples/gemm.design --size Q=3 2>&1 | filecheck %s --check-prefix=SIZE

// DESIGN-NOT: Traceback
// DESIGN: error: model-perf expects loop-level kernels (func.func); lower the document first: -p lower-design,lower-tensorop,apply-schedule,model-perf
// TENSOROP-NOT: Traceback
// TENSOROP: error: model-perf expects loop-level IR, but kernel 'gemm' still has 'tensorop.{{[a-z_]+}}'; run lower-tensorop (and apply-schedule) before it
// SIZE: irkit: error: --size: unknown size 'Q' (the document's sizes: M, N, K)
