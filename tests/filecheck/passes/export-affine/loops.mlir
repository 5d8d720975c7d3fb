// export-affine: irkit's loop dialect as upstream affine/memref, the schedule
// facts as irkit.* attributes; then affine-for-to-scf, the bounds xDSL's own
// lower-affine assumes away (operands, min/max of several results).
// RUN: irkit-opt %s -p export-affine | filecheck %s
// RUN: irkit-opt %s -p export-affine --print-op-generic | xdsl-opt -p affine-for-to-scf,lower-affine | filecheck %s --check-prefix=SCF
builtin.module {
  func.func @scale(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}, %Y: memref<?x?xf32> {irkit.name = "Y", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
    %t = loop.alloc(%M, %N) {tensor_name = "t", shape = affine_map<()[s0, s1] -> (s0, (s1 + 2))>, align = 64 : i64} : memref<?x?xf32>
    loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 32 {loop_name = "io", stage = "Y", parallel, origin = "s.design:9:5"} {
      loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %M) step 1 {loop_name = "ii", stage = "Y"} {
        %acc = loop.local {tensor_name = "acc"} : memref<8xf32>
        loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "Y", vector = 8 : i64, unroll = 2 : i64} {
          %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%ii, %j) : memref<?x?xf32> -> f32
          %two = arith.constant 2.000000e+00 : f32
          %y = arith.mulf %x, %two : f32
          loop.store %y, %t[affine_map<(d0, d1) -> (d0, (d1 + 1))>] (%ii, %j) : f32, memref<?x?xf32>
          %u = loop.load %t[affine_map<(d0, d1) -> (d0, (d1 + 1))>] (%ii, %j) : memref<?x?xf32> -> f32
          loop.store %u, %Y[affine_map<(d0, d1) -> (d0, d1)>] (%ii, %j) : f32, memref<?x?xf32>
        }
      }
    }
    loop.free %t : memref<?x?xf32>
    func.return
  }
}

// CHECK:      %[[E0:.*]] = affine.apply affine_map<()[s0, s1] -> (s0)> ()[%M, %N]
// CHECK-NEXT: %[[E1:.*]] = affine.apply affine_map<()[s0, s1] -> ((s1 + 2))> ()[%M, %N]
// CHECK-NEXT: %t = memref.alloc(%[[E0]], %[[E1]]) {alignment = 64 : i64, irkit.name = "t"} : memref<?x?xf32>
// CHECK-NEXT: affine.for %io = 0 to affine_map<(d0) -> (d0)>(%M) step 32 {
// CHECK-NEXT:   affine.for %ii = affine_map<(d0) -> (d0)>(%io) to min affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %M) {
// CHECK-NEXT:     %acc = memref.alloca() {irkit.name = "acc"} : memref<8xf32>
// CHECK-NEXT:     affine.for %j = 0 to affine_map<(d0) -> (d0)>(%N) {
// CHECK-NEXT:       %x = affine.load %X[%ii, %j] : memref<?x?xf32>
// CHECK:            affine.store %y, %t[%ii, %j + 1] : memref<?x?xf32>
// CHECK:          } {irkit.loop_name = "j", irkit.stage = "Y", irkit.vector = 8 : i64, irkit.unroll = 2 : i64}
// CHECK-NEXT:   } {irkit.loop_name = "ii", irkit.stage = "Y"}
// CHECK-NEXT: } {irkit.loop_name = "io", irkit.stage = "Y", irkit.parallel, irkit.origin = "s.design:9:5"}
// CHECK-NEXT: memref.dealloc %t : memref<?x?xf32>
// CHECK-NOT:  loop.

// SCF:     %{{.*}} = arith.minsi
// SCF:     scf.for %ii = %{{.*}} to %{{.*}} step %{{.*}} {
// SCF:       memref.load %X[%ii, %j] : memref<?x?xf32>
// SCF:     } {irkit.loop_name = "ii", irkit.stage = "Y"}
// SCF-NOT: affine.
