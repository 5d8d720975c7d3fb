// softmax(axis): temporaries <stage>_max and <stage>_sum of the shape
// without the axis (allocs over the size operands); fill max with -inf,
// max-reduce; P = exp(X - max); fill sum with 0, sum-reduce P; P = P / sum.
// All four generics iterate the stage's loops and carry its schedule.
// RUN: irkit-opt %s -p generalize-tensorop --split-input-file | filecheck %s
// RUN: irkit-opt %s -p lower-tensorop --split-input-file | filecheck %s --check-prefix=LOOPS

func.func @sm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
              %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
              %P: memref<?x?xf32> {irkit.name = "P", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  tensorop.softmax ins(%X : memref<?x?xf32>) outs(%P : memref<?x?xf32>) sizes(%M, %N) {stage = "P", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, params = {axis = 1 : i64}, schedule = [{kind = "vectorize", loop = "j", width = 16 : i64}]}
  func.return
}

// CHECK:      func.func @sm(
// CHECK-NEXT:   %P_max = tensorop.alloc(%M, %N) {tensor_name = "P_max", shape = affine_map<()[s0, s1] -> (s0)>} : memref<?xf32>
// CHECK-NEXT:   %P_sum = tensorop.alloc(%M, %N) {tensor_name = "P_sum", shape = affine_map<()[s0, s1] -> (s0)>} : memref<?xf32>
// CHECK-NEXT:   tensorop.fill %P_max : memref<?xf32> sizes(%M, %N) {value = 0xff800000 : f32, stage = "P"}
// CHECK-NEXT:   tensorop.generic ins(%X : memref<?x?xf32>) outs(%P_max : memref<?xf32>) sizes(%M, %N) attributes {stage = "P", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterators = ["parallel", "reduction"], schedule = [{kind = "vectorize", loop = "j", width = 16 : i64}]} {
// CHECK-NEXT:   ^bb0(%[[X:.*]]: f32, %[[M:.*]]: f32):
// CHECK-NEXT:     %[[R:.*]] = arith.maximumf %[[M]], %[[X]] : f32
// CHECK-NEXT:     tensorop.yield %[[R]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   tensorop.generic ins(%X, %P_max : memref<?x?xf32>, memref<?xf32>) outs(%P : memref<?x?xf32>) sizes(%M, %N) attributes {stage = "P", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterators = ["parallel", "parallel"], schedule = [{kind = "vectorize", loop = "j", width = 16 : i64}]} {
// CHECK-NEXT:   ^bb0(%[[X:.*]]: f32, %[[M:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:     %[[D:.*]] = arith.subf %[[X]], %[[M]] : f32
// CHECK-NEXT:     %[[E:.*]] = math.exp %[[D]] : f32
// CHECK-NEXT:     tensorop.yield %[[E]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   tensorop.fill %P_sum : memref<?xf32> sizes(%M, %N) {value = 0.000000e+00 : f32, stage = "P"}
// CHECK-NEXT:   tensorop.generic ins(%P : memref<?x?xf32>) outs(%P_sum : memref<?xf32>) sizes(%M, %N) attributes {stage = "P", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterators = ["parallel", "reduction"], schedule = [{kind = "vectorize", loop = "j", width = 16 : i64}]} {
// CHECK-NEXT:   ^bb0(%[[E:.*]]: f32, %[[S:.*]]: f32):
// CHECK-NEXT:     %[[R:.*]] = arith.addf %[[S]], %[[E]] : f32
// CHECK-NEXT:     tensorop.yield %[[R]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   tensorop.generic ins(%P_sum : memref<?xf32>) outs(%P : memref<?x?xf32>) sizes(%M, %N) attributes {stage = "P", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterators = ["parallel", "parallel"], schedule = [{kind = "vectorize", loop = "j", width = 16 : i64}]} {
// CHECK-NEXT:   ^bb0(%[[S:.*]]: f32, %[[E:.*]]: f32):
// CHECK-NEXT:     %[[Q:.*]] = arith.divf %[[E]], %[[S]] : f32
// CHECK-NEXT:     tensorop.yield %[[Q]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return

// LOOPS-COUNT-4: irkit.schedule = [{kind = "vectorize", loop = "j", width = 16 : i64}]
// LOOPS:         loop.free %P_sum
// LOOPS-NEXT:    loop.free %P_max
// LOOPS-NEXT:    func.return

// -----

// Axis 0 of a [M, N] input (negative axes count from the end: -2 == 0):
// the temporaries have shape (N) and are indexed by the loop j.
func.func @sm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
              %X: memref<?x?xf64> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
              %P: memref<?x?xf64> {irkit.name = "P", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  tensorop.softmax ins(%X : memref<?x?xf64>) outs(%P : memref<?x?xf64>) sizes(%M, %N) {stage = "P", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, params = {axis = -2 : i64}}
  func.return
}

// CHECK:      func.func @sm(
// CHECK-NEXT:   %P_max = tensorop.alloc(%M, %N) {tensor_name = "P_max", shape = affine_map<()[s0, s1] -> (s1)>} : memref<?xf64>
// CHECK-NEXT:   %P_sum = tensorop.alloc(%M, %N) {tensor_name = "P_sum", shape = affine_map<()[s0, s1] -> (s1)>} : memref<?xf64>
// CHECK-NEXT:   tensorop.fill %P_max : memref<?xf64> sizes(%M, %N) {value = 0xfff0000000000000 : f64, stage = "P"}
// CHECK-NEXT:   tensorop.generic ins(%X : memref<?x?xf64>) outs(%P_max : memref<?xf64>) {{.*}} indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterators = ["reduction", "parallel"]} {
// CHECK:        tensorop.generic ins(%X, %P_max : {{.*}} indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterators = ["parallel", "parallel"]} {
// CHECK:        tensorop.generic ins(%P : {{.*}} outs(%P_sum : {{.*}} iterators = ["reduction", "parallel"]} {
// CHECK:        tensorop.generic ins(%P_sum : {{.*}} outs(%P : {{.*}} indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>]

// -----

// Rank 1: the temporaries have rank 0 (memref<f32>, maps with no results).
func.func @sm(%N: index {irkit.name = "N"},
              %X: memref<?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
              %P: memref<?xf32> {irkit.name = "P", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  tensorop.softmax ins(%X : memref<?xf32>) outs(%P : memref<?xf32>) sizes(%N) {stage = "P", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>}
  func.return
}

// CHECK:      func.func @sm(
// CHECK-NEXT:   %P_max = tensorop.alloc(%N) {tensor_name = "P_max", shape = affine_map<()[s0] -> ()>} : memref<f32>
// CHECK-NEXT:   %P_sum = tensorop.alloc(%N) {tensor_name = "P_sum", shape = affine_map<()[s0] -> ()>} : memref<f32>
// CHECK-NEXT:   tensorop.fill %P_max
// CHECK-NEXT:   tensorop.generic ins(%X : memref<?xf32>) outs(%P_max : memref<f32>) {{.*}} indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterators = ["reduction"]} {

// LOOPS:      %P_max = loop.alloc(%N) {tensor_name = "P_max", shape = affine_map<()[s0] -> ()>} : memref<f32>
// LOOPS:      %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// LOOPS-NEXT: loop.store %[[NEGINF]], %P_max[affine_map<() -> ()>] () : f32, memref<f32>
