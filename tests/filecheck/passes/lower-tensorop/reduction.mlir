// A reduction: the fill becomes a nest over the buffer's shape (loops d0...)
// storing the constant; the generic a nest in loop_names order with bounds
// 0 to the domain extent (sizes as map dims), loads through the indexing
// maps (the output too, since the body reads it), the body, and a store.
// The schedule travels as `irkit.schedule` on the outermost loop.
// RUN: irkit-opt %s -p lower-tensorop | filecheck %s
// RUN: irkit-opt %s -p lower-tensorop | irkit-opt | filecheck %s
// RUN: irkit-opt %s -p lower-tensorop --print-debuginfo | filecheck %s --check-prefix=LOC

func.func @rowsum(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
                  %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
                  %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) attributes {irkit.metric = "throughput"} {
  tensorop.fill %s : memref<?xf32> sizes(%M, %N) {value = 0.0 : f32, stage = "s"} loc("rowsum.design":5:3)
  tensorop.generic ins(%X : memref<?x?xf32>) outs(%s : memref<?xf32>) sizes(%M, %N) attributes {
      stage = "s", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
      iterators = ["parallel", "reduction"],
      schedule = [{kind = "split", loop = "i", factor = 32 : i64, outer = "io", inner = "ii", loc = "rowsum.design:8:5"}]} {
  ^bb0(%x: f32, %acc: f32):
    %sum = arith.addf %acc, %x : f32
    tensorop.yield %sum : f32
  } loc("rowsum.design":5:3)
  func.return
}

// CHECK:      func.func @rowsum(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}, %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) attributes {irkit.metric = "throughput"} {
// CHECK-NEXT:   loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "s"} {
// CHECK-NEXT:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     loop.store %[[ZERO]], %s[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s", irkit.schedule = [{kind = "split", loop = "i", factor = 32 : i64, outer = "io", inner = "ii", loc = "rowsum.design:8:5"}]} {
// CHECK-NEXT:     loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s"} {
// CHECK-NEXT:       %[[X:.*]] = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
// CHECK-NEXT:       %[[ACC:.*]] = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
// CHECK-NEXT:       %[[SUM:.*]] = arith.addf %[[ACC]], %[[X]] : f32
// CHECK-NEXT:       loop.store %[[SUM]], %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }

// LOC:      loop.store %{{.*}}, %s[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32> loc("rowsum.design":5:3)
// LOC-NEXT: } loc("rowsum.design":5:3)
// LOC:      loop.store %{{.*}}, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32> loc("rowsum.design":5:3)
