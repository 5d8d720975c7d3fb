// A rank-0 buffer: its fill has no loops (constant and store where the
// fill was, map `() -> ()`); a reduction into it loads and stores it with a
// map with no results.
// RUN: irkit-opt %s -p lower-tensorop | filecheck %s
// RUN: irkit-opt %s -p lower-tensorop | irkit-opt | filecheck %s

func.func @total(%N: index {irkit.name = "N"},
                 %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
                 %s: memref<f32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0] -> ()>}) {
  tensorop.fill %s : memref<f32> sizes(%N) {value = 0.0 : f32, stage = "s"}
  tensorop.generic ins(%x : memref<?xf32>) outs(%s : memref<f32>) sizes(%N) attributes {
      stage = "s", loop_names = ["k"], domain = affine_map<()[s0] -> (s0)>,
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterators = ["reduction"]} {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %acc, %v : f32
    tensorop.yield %r : f32
  }
  func.return
}

// CHECK:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: loop.store %[[Z]], %s[affine_map<() -> ()>] () : f32, memref<f32>
// CHECK-NEXT: loop.for %[[K:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "k", stage = "s"} {
// CHECK-NEXT:   %[[V:.*]] = loop.load %x[affine_map<(d0) -> (d0)>] (%[[K]]) : memref<?xf32> -> f32
// CHECK-NEXT:   %[[A:.*]] = loop.load %s[affine_map<(d0) -> ()>] (%[[K]]) : memref<f32> -> f32
// CHECK-NEXT:   %[[R:.*]] = arith.addf %[[A]], %[[V]] : f32
// CHECK-NEXT:   loop.store %[[R]], %s[affine_map<(d0) -> ()>] (%[[K]]) : f32, memref<f32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return
