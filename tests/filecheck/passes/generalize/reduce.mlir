// reduce(dims, kind): loops are the kept input dims in order, then the
// reduced dims in increasing order; fill the output with the identity
// (add: 0; max: -inf, or the smallest i32), then one generic whose body
// combines the output element with the input element.
// RUN: irkit-opt %s -p generalize-tensorop --split-input-file | filecheck %s

func.func @r(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
             %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
             %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s1)>}) {
  tensorop.reduce ins(%X : memref<?x?xf32>) outs(%s : memref<?xf32>) sizes(%M, %N) {stage = "s", loop_names = ["j", "i"], domain = affine_map<()[s0, s1] -> (s1, s0)>, params = {dims = [0 : i64], kind = "add"}, schedule = [{kind = "parallel", loop = "j"}]}
  func.return
}

// CHECK:      func.func @r(
// CHECK-NEXT:   tensorop.fill %s : memref<?xf32> sizes(%M, %N) {value = 0.000000e+00 : f32, stage = "s"}
// CHECK-NEXT:   tensorop.generic ins(%X : memref<?x?xf32>) outs(%s : memref<?xf32>) sizes(%M, %N) attributes {stage = "s", loop_names = ["j", "i"], domain = affine_map<()[s0, s1] -> (s1, s0)>, indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterators = ["parallel", "reduction"], schedule = [{kind = "parallel", loop = "j"}]} {
// CHECK-NEXT:   ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32):
// CHECK-NEXT:     %[[R:.*]] = arith.addf %[[S]], %[[X]] : f32
// CHECK-NEXT:     tensorop.yield %[[R]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return

// -----

// Max over dims [2, 0] of a rank-3 i32 input: loops (d1 kept; d0, d2 reduced).
func.func @r(%A: index {irkit.name = "A"}, %B: index {irkit.name = "B"}, %C: index {irkit.name = "C"},
             %X: memref<?x?x?xi32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>},
             %m: memref<?xi32> {irkit.name = "m", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s1)>}) {
  tensorop.reduce ins(%X : memref<?x?x?xi32>) outs(%m : memref<?xi32>) sizes(%A, %B, %C) {stage = "m", loop_names = ["j", "i", "k"], domain = affine_map<()[s0, s1, s2] -> (s1, s0, s2)>, params = {dims = [2 : i64, 0 : i64], kind = "max"}}
  func.return
}

// CHECK:      func.func @r(
// CHECK-NEXT:   tensorop.fill %m : memref<?xi32> sizes(%A, %B, %C) {value = -2147483648 : i32, stage = "m"}
// CHECK-NEXT:   tensorop.generic ins(%X : memref<?x?x?xi32>) outs(%m : memref<?xi32>) sizes(%A, %B, %C) attributes {stage = "m", loop_names = ["j", "i", "k"], domain = affine_map<()[s0, s1, s2] -> (s1, s0, s2)>, indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0)>], iterators = ["parallel", "reduction", "reduction"]} {
// CHECK-NEXT:   ^bb0(%[[X:.*]]: i32, %[[M:.*]]: i32):
// CHECK-NEXT:     %[[R:.*]] = arith.maxsi %[[M]], %[[X]] : i32
// CHECK-NEXT:     tensorop.yield %[[R]] : i32
// CHECK-NEXT:   }
