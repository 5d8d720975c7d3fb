// lower-tensorop generalizes named ops first (the generalize-tensorop code),
// so a named op lowers directly; its schedule lands on the main nest.
// RUN: irkit-opt %s -p lower-tensorop | filecheck %s
// RUN: irkit-opt %s -p generalize-tensorop,lower-tensorop | filecheck %s

func.func @mm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
              %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>},
              %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1)>},
              %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) {
  tensorop.matmul ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) sizes(%M, %N, %K) {stage = "C", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>, schedule = [{kind = "parallel", loop = "i"}]}
  func.return
}

// CHECK:      loop.for %[[D0:.*]] = {{.*}}(%M) step 1 {loop_name = "d0", stage = "C"} {
// CHECK-NEXT:   loop.for %[[D1:.*]] = {{.*}}(%N) step 1 {loop_name = "d1", stage = "C"} {
// CHECK-NEXT:     arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     loop.store
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: loop.for %[[I:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C", irkit.schedule = [{kind = "parallel", loop = "i"}]} {
// CHECK-NEXT:   loop.for %[[J:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C"} {
// CHECK-NEXT:     loop.for %[[K:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "C"} {
// CHECK-NEXT:       %[[A:.*]] = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%[[I]], %[[J]], %[[K]])
// CHECK-NEXT:       %[[B:.*]] = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%[[I]], %[[J]], %[[K]])
// CHECK-NEXT:       %[[C:.*]] = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%[[I]], %[[J]], %[[K]])
// CHECK-NEXT:       %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:       %[[S:.*]] = arith.addf %[[C]], %[[P]] : f32
// CHECK-NEXT:       loop.store %[[S]], %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%[[I]], %[[J]], %[[K]])
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: func.return
// CHECK-NOT:  tensorop.
