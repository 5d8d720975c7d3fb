// Loop bounds: the domain extent over the size symbols becomes a map whose
// dims are the sizes it uses, in symbol order, with those sizes as
// operands; a constant extent has none; unused sizes are not operands.
// Fill nests take their extents from the buffer's shape (irkit.shape of a
// kernel argument), loops named d0, d1, ...
// RUN: irkit-opt %s -p lower-tensorop | filecheck %s
// RUN: irkit-opt %s -p lower-tensorop | irkit-opt | filecheck %s

func.func @bounds(%A: index {irkit.name = "A"}, %B: index {irkit.name = "B"}, %C: index {irkit.name = "C"},
                  %x: memref<?x?xi32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2 + s0 * 2, 4)>},
                  %y: memref<?x?xi32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s2 + s0 * 2, 4)>}) {
  tensorop.fill %y : memref<?x?xi32> sizes(%A, %B, %C) {value = 7 : i32, stage = "y"}
  tensorop.generic ins(%x : memref<?x?xi32>) outs(%y : memref<?x?xi32>) sizes(%A, %B, %C) attributes {
      stage = "y", loop_names = ["i", "j"], domain = affine_map<()[s0, s1, s2] -> (s2 + s0 * 2, 4)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0, 3 - d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%v: i32, %o: i32):
    %s = arith.addi %v, %o : i32
    tensorop.yield %s : i32
  }
  func.return
}

// CHECK:      loop.for %[[D0:.*]] = affine_map<() -> (0)>() to affine_map<(d0, d1) -> (((d0 * 2) + d1))>(%A, %C) step 1 {loop_name = "d0", stage = "y"} {
// CHECK-NEXT:   loop.for %[[D1:.*]] = affine_map<() -> (0)>() to affine_map<() -> (4)>() step 1 {loop_name = "d1", stage = "y"} {
// CHECK-NEXT:     %[[SEVEN:.*]] = arith.constant 7 : i32
// CHECK-NEXT:     loop.store %[[SEVEN]], %y[affine_map<(d0, d1) -> (d0, d1)>] (%[[D0]], %[[D1]]) : i32, memref<?x?xi32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: loop.for %[[I:.*]] = affine_map<() -> (0)>() to affine_map<(d0, d1) -> (((d0 * 2) + d1))>(%A, %C) step 1 {loop_name = "i", stage = "y"} {
// CHECK-NEXT:   loop.for %[[J:.*]] = affine_map<() -> (0)>() to affine_map<() -> (4)>() step 1 {loop_name = "j", stage = "y"} {
// CHECK-NEXT:     %[[V:.*]] = loop.load %x[affine_map<(d0, d1) -> (d0, ((d1 * -1) + 3))>] (%[[I]], %[[J]]) : memref<?x?xi32> -> i32
// CHECK-NEXT:     %[[O:.*]] = loop.load %y[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[J]]) : memref<?x?xi32> -> i32
// CHECK-NEXT:     %[[S:.*]] = arith.addi %[[V]], %[[O]] : i32
// CHECK-NEXT:     loop.store %[[S]], %y[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[J]]) : i32, memref<?x?xi32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: func.return
