// matmul and batch_matmul: fill the output with 0, then one reduction
// generic over the op's own domain that keeps the stage, loop names,
// schedule and location; mulf/addf for floats, muli/addi for integers.
// RUN: irkit-opt %s -p generalize-tensorop --split-input-file | filecheck %s
// RUN: irkit-opt %s -p generalize-tensorop --split-input-file --print-debuginfo | filecheck %s --check-prefix=LOC

func.func @mm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
              %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>},
              %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1)>},
              %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) {
  tensorop.matmul ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) sizes(%M, %N, %K) {stage = "C", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>, schedule = [{kind = "parallel", loop = "i", loc = "mm.design:9:5"}]} loc("mm.design":6:3)
  func.return
}

// CHECK:      func.func @mm(
// CHECK-NEXT:   tensorop.fill %C : memref<?x?xf32> sizes(%M, %N, %K) {value = 0.000000e+00 : f32, stage = "C"}
// CHECK-NEXT:   tensorop.generic ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) sizes(%M, %N, %K) attributes {stage = "C", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>, indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterators = ["parallel", "parallel", "reduction"], schedule = [{kind = "parallel", loop = "i", loc = "mm.design:9:5"}]} {
// CHECK-NEXT:   ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:     %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:     %[[S:.*]] = arith.addf %[[C]], %[[P]] : f32
// CHECK-NEXT:     tensorop.yield %[[S]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return

// LOC: tensorop.fill {{.*}} loc("mm.design":6:3)
// LOC: tensorop.yield {{.*}} loc("mm.design":6:3)
// LOC: } loc("mm.design":6:3)

// -----

func.func @bmm(%B: index {irkit.name = "B"}, %M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
               %x: memref<?x?x?xi32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2, s3] -> (s0, s1, s3)>},
               %y: memref<?x?x?xi32> {irkit.name = "y", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2, s3] -> (s0, s3, s2)>},
               %z: memref<?x?x?xi32> {irkit.name = "z", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2, s3] -> (s0, s1, s2)>}) {
  tensorop.batch_matmul ins(%x, %y : memref<?x?x?xi32>, memref<?x?x?xi32>) outs(%z : memref<?x?x?xi32>) sizes(%B, %M, %N, %K) {stage = "z", loop_names = ["b", "i", "j", "k"], domain = affine_map<()[s0, s1, s2, s3] -> (s0, s1, s2, s3)>}
  func.return
}

// CHECK:      func.func @bmm(
// CHECK-NEXT:   tensorop.fill %z : memref<?x?x?xi32> sizes(%B, %M, %N, %K) {value = 0 : i32, stage = "z"}
// CHECK-NEXT:   tensorop.generic ins(%x, %y : memref<?x?x?xi32>, memref<?x?x?xi32>) outs(%z : memref<?x?x?xi32>) sizes(%B, %M, %N, %K) attributes {stage = "z", loop_names = ["b", "i", "j", "k"], domain = affine_map<()[s0, s1, s2, s3] -> (s0, s1, s2, s3)>, indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterators = ["parallel", "parallel", "parallel", "reduction"]} {
// CHECK-NEXT:   ^bb0(%[[X:.*]]: i32, %[[Y:.*]]: i32, %[[Z:.*]]: i32):
// CHECK-NEXT:     %[[P:.*]] = arith.muli %[[X]], %[[Y]] : i32
// CHECK-NEXT:     %[[S:.*]] = arith.addi %[[Z]], %[[P]] : i32
// CHECK-NEXT:     tensorop.yield %[[S]] : i32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
