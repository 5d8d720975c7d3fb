// A stencil: offset indexing maps are kept as they are (map dims = the
// loop ivs, outermost first); an extent with an offset becomes an
// upper-bound map over the size it uses.
// RUN: irkit-opt %s -p lower-tensorop | filecheck %s
// RUN: irkit-opt %s -p lower-tensorop | irkit-opt | filecheck %s

func.func @blur(%H: index {irkit.name = "H"}, %W: index {irkit.name = "W"},
                %inp: memref<?x?xf32> {irkit.name = "inp", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0 + 2, s1 + 2)>},
                %out: memref<?x?xf32> {irkit.name = "out", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  %bx = tensorop.alloc(%H, %W) {tensor_name = "bx", shape = affine_map<()[s0, s1] -> (s0 + 2, s1)>} : memref<?x?xf32>
  tensorop.generic ins(%inp, %inp, %inp : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) outs(%bx : memref<?x?xf32>) sizes(%H, %W) attributes {
      stage = "bx", loop_names = ["y", "x"], domain = affine_map<()[s0, s1] -> (s0 + 2, s1)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1 + 1)>, affine_map<(d0, d1) -> (d0, d1 + 2)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%l: f32, %c: f32, %r: f32, %o: f32):
    %0 = arith.addf %l, %c : f32
    %1 = arith.addf %0, %r : f32
    %three = arith.constant 3.0 : f32
    %2 = arith.divf %1, %three : f32
    tensorop.yield %2 : f32
  }
  tensorop.generic ins(%bx, %bx : memref<?x?xf32>, memref<?x?xf32>) outs(%out : memref<?x?xf32>) sizes(%H, %W) attributes {
      stage = "out", loop_names = ["y", "x"], domain = affine_map<()[s0, s1] -> (s0, s1)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0 + 1, d1)>, affine_map<(d0, d1) -> (d0 + 2, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%u: f32, %d: f32, %o: f32):
    %3 = arith.addf %u, %d : f32
    tensorop.yield %3 : f32
  }
  func.return
}

// CHECK:      %bx = loop.alloc(%H, %W) {tensor_name = "bx", shape = affine_map<()[s0, s1] -> ((s0 + 2), s1)>} : memref<?x?xf32>
// CHECK-NEXT: loop.for %[[Y:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> ((d0 + 2))>(%H) step 1 {loop_name = "y", stage = "bx"} {
// CHECK-NEXT:   loop.for %[[X:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%W) step 1 {loop_name = "x", stage = "bx"} {
// CHECK-NEXT:     %[[L:.*]] = loop.load %inp[affine_map<(d0, d1) -> (d0, d1)>] (%[[Y]], %[[X]]) {irkit.read = "inp[y, x]"} : memref<?x?xf32> -> f32
// CHECK-NEXT:     %[[C:.*]] = loop.load %inp[affine_map<(d0, d1) -> (d0, (d1 + 1))>] (%[[Y]], %[[X]]) {irkit.read = "inp[y, x + 1]"} : memref<?x?xf32> -> f32
// CHECK-NEXT:     %[[R:.*]] = loop.load %inp[affine_map<(d0, d1) -> (d0, (d1 + 2))>] (%[[Y]], %[[X]]) {irkit.read = "inp[y, x + 2]"} : memref<?x?xf32> -> f32
// CHECK-NEXT:     %[[S0:.*]] = arith.addf %[[L]], %[[C]] : f32
// CHECK-NEXT:     %[[S1:.*]] = arith.addf %[[S0]], %[[R]] : f32
// CHECK-NEXT:     %[[K:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:     %[[D:.*]] = arith.divf %[[S1]], %[[K]] : f32
// CHECK-NEXT:     loop.store %[[D]], %bx[affine_map<(d0, d1) -> (d0, d1)>] (%[[Y]], %[[X]]) : f32, memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: loop.for %[[Y2:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%H) step 1 {loop_name = "y", stage = "out"} {
// CHECK-NEXT:   loop.for %[[X2:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%W) step 1 {loop_name = "x", stage = "out"} {
// CHECK-NEXT:     loop.load %bx[affine_map<(d0, d1) -> ((d0 + 1), d1)>] (%[[Y2]], %[[X2]])
// CHECK-NEXT:     loop.load %bx[affine_map<(d0, d1) -> ((d0 + 2), d1)>] (%[[Y2]], %[[X2]])
// CHECK-NEXT:     arith.addf
// CHECK-NEXT:     loop.store %{{.*}}, %out[affine_map<(d0, d1) -> (d0, d1)>] (%[[Y2]], %[[X2]])
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: loop.free %bx
// CHECK-NEXT: func.return
