// The examples' scheduled loops, exported to affine, lowered by xDSL's own
// lower-affine and run in xDSL's interpreter, agree with irkit's loop
// interpreter on the same inputs (register-blocked gemm with tails in both
// directions, blur's compute_at temporaries, softmax's exp and division).
// The generic form between the tools: see docs/interop.md.
// RUN: irkit-opt %S/../../../../examples/gemm.design -p 'check-design,lower-design,lower-tensorop,apply-schedule,export-affine' --print-op-generic \
// RUN:   | xdsl-opt -p affine-for-to-scf,lower-affine \
// RUN:   | irkit interpret - --against %S/../../../../examples/gemm.design --size M=7 --size N=19 --size K=5 | filecheck %s --check-prefix=GEMM
// RUN: irkit-opt %S/../../../../examples/blur.design -p 'check-design,lower-design,lower-tensorop,apply-schedule,export-affine' --print-op-generic \
// RUN:   | xdsl-opt -p affine-for-to-scf,lower-affine \
// RUN:   | irkit interpret - --against %S/../../../../examples/blur.design --size H=9 --size W=21 | filecheck %s --check-prefix=BLUR
// RUN: irkit-opt %S/../../../../examples/softmax.design -p 'check-design,lower-design,lower-tensorop,apply-schedule,export-affine' --print-op-generic \
// RUN:   | xdsl-opt -p affine-for-to-scf,lower-affine \
// RUN:   | irkit interpret - --against %S/../../../../examples/softmax.design --size M=5 --size N=21 | filecheck %s --check-prefix=SOFTMAX
//
// A wrong kernel is caught: the same gemm with its sums turned into differences.
// RUN: irkit-opt %S/../../../../examples/gemm.design -p 'check-design,lower-design,lower-tensorop,apply-schedule,export-affine' --print-op-generic \
// RUN:   | xdsl-opt -p affine-for-to-scf,lower-affine | sed 's/arith.addf/arith.subf/' > %t.wrong.mlir
// RUN: not irkit interpret %t.wrong.mlir --against %S/../../../../examples/gemm.design --size M=7 --size N=5 --size K=3 | filecheck %s --check-prefix=WRONG
// Unlowered input is refused at the first op xDSL's interpreter cannot run.
// RUN: irkit-opt %S/../../../../examples/gemm.design -p 'check-design,lower-design,lower-tensorop,apply-schedule,export-affine' --print-op-generic > %t.affine.mlir
// RUN: not irkit interpret %t.affine.mlir 2>&1 | filecheck %s --check-prefix=UNLOWERED

// GEMM: @gemm in xDSL's interpreter at M=7, N=19, K=5
// GEMM-NEXT: C: ok: max abs error
// GEMM-NEXT: ok: xDSL's interpreter agrees with irkit's loop interpreter on every output

// BLUR: @blur in xDSL's interpreter at H=9, W=21
// BLUR-NEXT: out: ok:
// BLUR-NEXT: ok: xDSL's interpreter agrees

// SOFTMAX: @softmax in xDSL's interpreter at M=5, N=21
// SOFTMAX-NEXT: P: ok:
// SOFTMAX-NEXT: ok: xDSL's interpreter agrees

// WRONG: C: MISMATCH in {{[0-9]+}} elements: {{.*}}; worst at [{{[0-9]+}}, {{[0-9]+}}]: got
// WRONG-NEXT: MISMATCH: 1 output(s) differ from irkit's loop interpreter

// UNLOWERED: affine.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'affine.for' is not lowered: xDSL's interpreter runs func, scf, memref, arith and math
