// elementwise(fn): one parallel generic with identity maps whose body is
// the function: arith for add/sub/mul/div/max/min (f: addf..., i: addi,
// divsi, maxsi...), negf (integers: 0 - x), math.exp / math.sqrt.
// RUN: irkit-opt %s -p generalize-tensorop --split-input-file | filecheck %s

func.func @e(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
             %a: memref<?x?xf32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
             %b: memref<?x?xf32> {irkit.name = "b", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
             %c: memref<?x?xf32> {irkit.name = "c", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  tensorop.elementwise ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>) sizes(%M, %N) {stage = "c", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, params = {fn = "max"}, schedule = [{kind = "vectorize", loop = "j", width = 8 : i64}]}
  func.return
}

// CHECK:      func.func @e(
// CHECK-NEXT:   tensorop.generic ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>) sizes(%M, %N) attributes {stage = "c", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterators = ["parallel", "parallel"], schedule = [{kind = "vectorize", loop = "j", width = 8 : i64}]} {
// CHECK-NEXT:   ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:     %[[R:.*]] = arith.maximumf %[[A]], %[[B]] : f32
// CHECK-NEXT:     tensorop.yield %[[R]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return

// -----

func.func @e(%N: index {irkit.name = "N"},
             %a: memref<?xi32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
             %b: memref<?xi32> {irkit.name = "b", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
             %c: memref<?xi32> {irkit.name = "c", irkit.role = "temp", irkit.shape = affine_map<()[s0] -> (s0)>},
             %d: memref<?xi32> {irkit.name = "d", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  tensorop.elementwise ins(%a, %b : memref<?xi32>, memref<?xi32>) outs(%c : memref<?xi32>) sizes(%N) {stage = "c", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, params = {fn = "div"}}
  tensorop.elementwise ins(%c : memref<?xi32>) outs(%d : memref<?xi32>) sizes(%N) {stage = "d", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, params = {fn = "neg"}}
  func.return
}

// CHECK:      func.func @e(
// CHECK-NEXT:   tensorop.generic ins(%a, %b : memref<?xi32>, memref<?xi32>) outs(%c : memref<?xi32>)
// CHECK-NEXT:   ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT:     %[[Q:.*]] = arith.divsi %[[A]], %[[B]] : i32
// CHECK-NEXT:     tensorop.yield %[[Q]] : i32
// CHECK-NEXT:   }
// CHECK-NEXT:   tensorop.generic ins(%c : memref<?xi32>) outs(%d : memref<?xi32>) sizes(%N) attributes {stage = "d", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterators = ["parallel"]} {
// CHECK-NEXT:   ^bb0(%[[C:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT:     %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT:     %[[N:.*]] = arith.subi %[[Z]], %[[C]] : i32
// CHECK-NEXT:     tensorop.yield %[[N]] : i32
// CHECK-NEXT:   }

// -----

func.func @e(%N: index {irkit.name = "N"},
             %a: memref<?xf64> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
             %b: memref<?xf64> {irkit.name = "b", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  tensorop.elementwise ins(%a : memref<?xf64>) outs(%b : memref<?xf64>) sizes(%N) {stage = "b", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, params = {fn = "sqrt"}}
  tensorop.elementwise ins(%b : memref<?xf64>) outs(%b : memref<?xf64>) sizes(%N) {stage = "b", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, params = {fn = "exp"}}
  tensorop.elementwise ins(%b : memref<?xf64>) outs(%b : memref<?xf64>) sizes(%N) {stage = "b", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, params = {fn = "neg"}}
  func.return
}

// CHECK:      func.func @e(
// CHECK:        math.sqrt %{{.*}} : f64
// CHECK:        math.exp %{{.*}} : f64
// CHECK:        arith.negf %{{.*}} : f64
