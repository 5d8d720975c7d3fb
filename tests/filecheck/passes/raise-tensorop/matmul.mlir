// raise-tensorop: a tensorop kernel back to a design document (--emit design).
// Sizes and tensors come from the function's arguments, the layout section
// from memref layouts and alignment, the schedule from the generic's
// `schedule`.  A fill and generic that are exactly what matmul generalizes
// to come back as `C = matmul(A, B)`; one that is not is an index statement.
// RUN: irkit-opt %s --split-input-file -p raise-tensorop --emit design | filecheck %s

func.func @mm(%M: index {irkit.name = "M", irkit.default = 64 : i64}, %N: index {irkit.name = "N", irkit.default = 32 : i64}, %K: index {irkit.name = "K", irkit.default = 16 : i64},
              %A: memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>, irkit.align = 32 : i64},
              %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1)>},
              %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) {
  tensorop.fill %C : memref<?x?xf32> sizes(%M, %N, %K) {value = 0.000000e+00 : f32, stage = "C"}
  tensorop.generic ins(%A, %B : memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) sizes(%M, %N, %K) attributes {
      stage = "C", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>,
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterators = ["parallel", "parallel", "reduction"],
      schedule = [{kind = "split", loop = "k", factor = 4 : i64, outer = "ko", inner = "ki"}, {kind = "reorder", loops = ["i", "ko", "j", "ki"]}, {kind = "parallel", loop = "i"}]} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    tensorop.yield %1 : f32
  }
  func.return
}

// CHECK:      design mm {
// CHECK-NEXT:   sizes { M = 64, N = 32, K = 16 }
// CHECK-EMPTY:
// CHECK-NEXT:   tensor A : f32[M, K] input
// CHECK-NEXT:   tensor B : f32[K, N] input
// CHECK-NEXT:   tensor C : f32[M, N] output
// CHECK-EMPTY:
// CHECK-NEXT:   C = matmul(A, B)
// CHECK-EMPTY:
// CHECK-NEXT:   layout {
// CHECK-NEXT:     A : col_major align 32
// CHECK-NEXT:     B : row_major
// CHECK-NEXT:     C : row_major
// CHECK-NEXT:   }
// CHECK-EMPTY:
// CHECK-NEXT:   schedule C {
// CHECK-NEXT:     split k by 4 -> ko, ki
// CHECK-NEXT:     reorder i, ko, j, ki
// CHECK-NEXT:     parallel i
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

// B read transposed: not a matmul, an index statement (`+=`: the fill is add's identity).
func.func @mmt(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
               %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>},
               %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s1, s2)>},
               %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) {
  tensorop.fill %C : memref<?x?xf32> sizes(%M, %N, %K) {value = 0.000000e+00 : f32, stage = "C"}
  tensorop.generic ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) sizes(%M, %N, %K) attributes {
      stage = "C", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>,
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterators = ["parallel", "parallel", "reduction"]} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    tensorop.yield %1 : f32
  }
  func.return
}

// CHECK:      design mmt {
// CHECK-NEXT:   sizes { M, N, K }
// CHECK:        tensor B : f32[N, K] input
// CHECK:        C[i, j] += A[i, k] * B[j, k]
// CHECK-NOT:    schedule
// CHECK:      }
