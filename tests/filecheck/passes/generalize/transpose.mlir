// transpose(perm): output dimension d is input dimension perm[d] (default:
// reversed), so the input's map sends input dimension perm[d] to loop d.
// One parallel generic that copies the element; loops are the output's.
// RUN: irkit-opt %s -p generalize-tensorop --split-input-file | filecheck %s

func.func @t(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
             %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
             %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s1, s0)>}) {
  tensorop.transpose ins(%A : memref<?x?xf32>) outs(%B : memref<?x?xf32>) sizes(%M, %N) {stage = "B", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s1, s0)>, params = {perm = [1 : i64, 0 : i64]}, schedule = [{kind = "parallel", loop = "i"}]}
  func.return
}

// CHECK:      func.func @t(
// CHECK-NEXT:   tensorop.generic ins(%A : memref<?x?xf32>) outs(%B : memref<?x?xf32>) sizes(%M, %N) attributes {stage = "B", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s1, s0)>, indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterators = ["parallel", "parallel"], schedule = [{kind = "parallel", loop = "i"}]} {
// CHECK-NEXT:   ^bb0(%[[A:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:     tensorop.yield %[[A]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return

// -----

// Rank 3, perm [1, 2, 0]: out[i, j, k] = in[k, i, j] (out dim 0 is in dim 1,
// out dim 1 is in dim 2, out dim 2 is in dim 0).
func.func @t(%P: index {irkit.name = "P"}, %Q: index {irkit.name = "Q"}, %R: index {irkit.name = "R"},
             %A: memref<?x?x?xi32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>},
             %B: memref<?x?x?xi32> {irkit.name = "B", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s1, s2, s0)>}) {
  tensorop.transpose ins(%A : memref<?x?x?xi32>) outs(%B : memref<?x?x?xi32>) sizes(%P, %Q, %R) {stage = "B", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s1, s2, s0)>, params = {perm = [1 : i64, 2 : i64, 0 : i64]}}
  func.return
}

// CHECK:      tensorop.generic ins(%A : memref<?x?x?xi32>) outs(%B : memref<?x?x?xi32>) sizes(%P, %Q, %R) attributes {stage = "B", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s1, s2, s0)>, indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterators = ["parallel", "parallel", "parallel"]} {

// -----

// Default perm: reversed.
func.func @t(%P: index {irkit.name = "P"}, %Q: index {irkit.name = "Q"}, %R: index {irkit.name = "R"},
             %A: memref<?x?x?xi32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>},
             %B: memref<?x?x?xi32> {irkit.name = "B", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1, s0)>}) {
  tensorop.transpose ins(%A : memref<?x?x?xi32>) outs(%B : memref<?x?x?xi32>) sizes(%P, %Q, %R) {stage = "B", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s2, s1, s0)>}
  func.return
}

// CHECK:      indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d1, d0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
