// Temporaries: tensorop.alloc becomes loop.alloc (same sizes, name, shape
// map, alignment); every allocation is freed, last first, just before the
// kernel returns.  A generic whose body does not read its output does not
// load it.
// RUN: irkit-opt %s -p lower-tensorop | filecheck %s
// RUN: irkit-opt %s -p lower-tensorop | irkit-opt | filecheck %s

func.func @chain(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
                 %a: memref<?x?xf32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
                 %out: memref<?x?xf32> {irkit.name = "out", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  %t1 = tensorop.alloc(%M, %N) {tensor_name = "t1", shape = affine_map<()[s0, s1] -> (s0, s1)>, align = 64 : i64} : memref<?x?xf32>
  %t2 = tensorop.alloc(%M, %N) {tensor_name = "t2", shape = affine_map<()[s0, s1] -> (s0, s1)>} : memref<?x?xf32>
  tensorop.generic ins(%a : memref<?x?xf32>) outs(%t1 : memref<?x?xf32>) sizes(%M, %N) attributes {
      stage = "t1", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    tensorop.yield %e : f32
  }
  tensorop.generic ins(%t1 : memref<?x?xf32>) outs(%t2 : memref<?x?xf32>) sizes(%M, %N) attributes {
      stage = "t2", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    tensorop.yield %n : f32
  }
  tensorop.generic ins(%t2 : memref<?x?xf32>) outs(%out : memref<?x?xf32>) sizes(%M, %N) attributes {
      stage = "out", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%x: f32, %o: f32):
    tensorop.yield %x : f32
  }
  func.return
}

// CHECK:      func.func @chain(
// CHECK-NEXT:   %t1 = loop.alloc(%M, %N) {tensor_name = "t1", shape = affine_map<()[s0, s1] -> (s0, s1)>, align = 64 : i64} : memref<?x?xf32>
// CHECK-NEXT:   %t2 = loop.alloc(%M, %N) {tensor_name = "t2", shape = affine_map<()[s0, s1] -> (s0, s1)>} : memref<?x?xf32>
// CHECK-NEXT:   loop.for %[[I:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "t1"} {
// CHECK-NEXT:     loop.for %[[J:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "t1"} {
// CHECK-NEXT:       %[[X:.*]] = loop.load %a[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[J]]) : memref<?x?xf32> -> f32
// CHECK-NEXT:       %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT:       loop.store %[[E]], %t1[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[J]]) : f32, memref<?x?xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %{{.*}} {loop_name = "i", stage = "t2"} {
// CHECK-NEXT:     loop.for %{{.*}} {loop_name = "j", stage = "t2"} {
// CHECK-NEXT:       loop.load %t1
// CHECK-NEXT:       arith.negf
// CHECK-NEXT:       loop.store %{{.*}}, %t2
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %{{.*}} {loop_name = "i", stage = "out"} {
// CHECK-NEXT:     loop.for %{{.*}} {loop_name = "j", stage = "out"} {
// CHECK-NEXT:       %[[Y:.*]] = loop.load %t2
// CHECK-NEXT:       loop.store %[[Y]], %out
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.free %t2 : memref<?x?xf32>
// CHECK-NEXT:   loop.free %t1 : memref<?x?xf32>
// CHECK-NEXT:   func.return
