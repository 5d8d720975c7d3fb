// model-perf on a parallel, vectorised triad: the kernel-wide bytes, exact flops
// (2 per element, over full chunks and the tail), the busy cores, one parallel entry,
// and the streaming-store term of the vector loop that writes the output.
// RUN: irkit-opt %s -p model-perf | filecheck %s
// RUN: irkit-opt %s -p model-perf | irkit-opt | filecheck %s

builtin.module {
  func.func @triad(%N: index {irkit.name = "N", irkit.default = 1024 : i64}, %a: memref<?xf32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>}, %b: memref<?xf32> {irkit.name = "b", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>}, %c: memref<?xf32> {irkit.name = "c", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>}, %d: memref<?xf32> {irkit.name = "d", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) attributes {irkit.hardware = "generic", irkit.assume = {divisible = {}, aligned = {}, noalias = []}} {
    loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 64 {loop_name = "io", stage = "d", origin = "triad.design:10:5", parallel} {
      loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 64), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "d", origin = "triad.design:11:5", vector = 8 : i64} {
        %a_1 = loop.load %a[affine_map<(d0) -> (d0)>] (%ii) : memref<?xf32> -> f32
        %b_1 = loop.load %b[affine_map<(d0) -> (d0)>] (%ii) : memref<?xf32> -> f32
        %c_1 = loop.load %c[affine_map<(d0) -> (d0)>] (%ii) : memref<?xf32> -> f32
        %0 = arith.mulf %a_1, %b_1 : f32
        %1 = arith.addf %0, %c_1 : f32
        loop.store %1, %d[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
      }
    }
    func.return
  }
}

// CHECK:      perf.kernel "triad" attributes {sizes = ["N"], kernel_bytes = "16 * N", hardware = {name = "generic"}, assumptions = []} {
// CHECK-NEXT:   perf.nest {name = "io", terms = {
// CHECK-SAME:     instr_mem_v8 = "4 * {{s[0-9]+}} * {{s[0-9]+}} * {{s[0-9]+}} + 4 * {{s[0-9]+}} * {{s[0-9]+}} * {{s[0-9]+}}"
// CHECK-SAME:     flops = "2 * {{s[0-9]+}} * max(0, {{s[0-9]+}}) + 2 * max(0, min(N, 64 * {{s[0-9]+}} + 64) - 64 * {{s[0-9]+}}) * min(1, {{s[0-9]+}})"
// CHECK-SAME:     active = "min(cores, {{s[0-9]+}})", regions = "1"
// CHECK-SAME:     streamed_lines = "le(33554432, {{s[0-9]+}}, le(128, 4 * {{s[0-9]+}}, {{s[0-9]+}}, 0), 0)"
// CHECK-SAME:     defs = ["s0 = cdiv(8, lanes32)", "s1 = max(0, min(N, 64))"
// CHECK-SAME:     origin = "triad.design:10:5"
