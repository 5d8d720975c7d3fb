// The perf dialect's verifier: a term must be a cost expression over the kernel's
// sizes, the model's symbols and the nest's earlier defs.
// RUN: not irkit-opt %s --split-input-file 2>&1 | filecheck %s
// CHECK-NOT: Traceback

builtin.module {
  perf.kernel "k" attributes {sizes = ["N"], kernel_bytes = "4 * N"} {
    perf.nest {name = "i", terms = {flops = "2 * M"}}
  }
}
// CHECK: term 'flops' of nest 'i': '2 * M' uses M, which is not a size or a model symbol

// -----

builtin.module {
  perf.kernel "k" attributes {sizes = ["N"], kernel_bytes = "4 * N"} {
    perf.nest {name = "i", terms = {lines = "cdiv(N, line) +"}}
  }
}
// CHECK: term 'lines' of nest 'i': 'cdiv(N, line) +' is not a cost expression

// -----

builtin.module {
  perf.kernel "k" attributes {sizes = ["N"], kernel_bytes = "4 * N"} {
    perf.nest {name = "i", defs = ["s0 = cdiv(N, 8)"], terms = {flops = "2 * s0 * cores"}}
  }
}
// CHECK: perf.nest {name = "i", defs = ["s0 = cdiv(N, 8)"], terms = {flops = "2 * s0 * cores"}}
