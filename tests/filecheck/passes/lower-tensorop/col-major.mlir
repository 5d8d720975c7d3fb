// Layouts stay in the memref types: loads and stores use LOGICAL indices
// (the indexing maps unchanged), the C backend applies the storage order.
// The kernel's arguments and attributes are unchanged.
// RUN: irkit-opt %s -p lower-tensorop | filecheck %s
// RUN: irkit-opt %s -p lower-tensorop | irkit-opt | filecheck %s

func.func @copy_t(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
                  %A: memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64},
                  %B: memref<?x?xf64> {irkit.name = "B", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) attributes {irkit.hardware = "generic"} {
  %T = tensorop.alloc(%M, %N) {tensor_name = "T", shape = affine_map<()[s0, s1] -> (s0, s1)>} : memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>>
  tensorop.generic ins(%A : memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>>) outs(%T : memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>>) sizes(%M, %N) attributes {
      stage = "T", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f64, %t: f64):
    tensorop.yield %a : f64
  }
  tensorop.generic ins(%T : memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>>) outs(%B : memref<?x?xf64>) sizes(%M, %N) attributes {
      stage = "B", loop_names = ["j", "i"], domain = affine_map<()[s0, s1] -> (s1, s0)>,
      indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1, d0)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%x: f64, %b: f64):
    tensorop.yield %x : f64
  }
  func.return
}

// CHECK:      func.func @copy_t(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %A: memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64}, %B: memref<?x?xf64> {irkit.name = "B", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) attributes {irkit.hardware = "generic"} {
// CHECK-NEXT:   %T = loop.alloc(%M, %N) {tensor_name = "T", shape = affine_map<()[s0, s1] -> (s0, s1)>} : memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>>
// CHECK-NEXT:   loop.for %[[I:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "T"} {
// CHECK-NEXT:     loop.for %[[J:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "T"} {
// CHECK-NEXT:       %[[A:.*]] = loop.load %A[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[J]]) : memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>> -> f64
// CHECK-NEXT:       loop.store %[[A]], %T[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[J]]) : f64, memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// The loop order is the domain order: j (extent N) outside, i inside.
// CHECK-NEXT:   loop.for %[[J2:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "B"} {
// CHECK-NEXT:     loop.for %[[I2:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "B"} {
// CHECK-NEXT:       %[[T:.*]] = loop.load %T[affine_map<(d0, d1) -> (d1, d0)>] (%[[J2]], %[[I2]]) : memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>> -> f64
// CHECK-NEXT:       loop.store %[[T]], %B[affine_map<(d0, d1) -> (d1, d0)>] (%[[J2]], %[[I2]]) : f64, memref<?x?xf64>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.free %T : memref<?x?xf64, affine_map<(d0, d1) -> (d1, d0)>>
// CHECK-NEXT:   func.return
