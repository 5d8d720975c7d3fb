// What generalize-tensorop cannot do is a located diagnostic, exit 1.
// RUN: not irkit-opt %s -p generalize-tensorop --split-input-file --allow-unregistered-dialect 2>&1 | filecheck %s

// CHECK: error: generalize-tensorop: the module holds no kernel function (func.func) to lower
builtin.module {
}

// -----

// CHECK: e.design:3:3: error: generalize-tensorop: elementwise exp needs floating-point operands, got i32
func.func @e(%N: index {irkit.name = "N"},
             %a: memref<?xi32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
             %b: memref<?xi32> {irkit.name = "b", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  tensorop.elementwise ins(%a : memref<?xi32>) outs(%b : memref<?xi32>) sizes(%N) {stage = "b", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, params = {fn = "exp"}} loc("e.design":3:3)
  func.return
}

// -----

// CHECK: m.design:2:3: error: generalize-tensorop: tensorop.matmul needs a domain of 3 loops, got 2
func.func @m(%N: index {irkit.name = "N"},
             %a: memref<?x?xf32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0, s0)>},
             %b: memref<?x?xf32> {irkit.name = "b", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0, s0)>}) {
  tensorop.matmul ins(%a, %a : memref<?x?xf32>, memref<?x?xf32>) outs(%b : memref<?x?xf32>) sizes(%N) {stage = "b", loop_names = ["i", "j"], domain = affine_map<()[s0] -> (s0, s0)>} loc("m.design":2:3)
  func.return
}

// -----

// CHECK: c.design:4:3: error: generalize-tensorop: a buffer that is neither a kernel argument nor a tensorop.alloc has no known shape
func.func @c(%N: index {irkit.name = "N"},
             %w: memref<?x?x?x?xf32> {irkit.name = "w", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (1, 1, 1, 1)>},
             %o: memref<?x?x?x?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (1, 1, s0, s0)>}) {
  %img = "test.image"() : () -> memref<?x?x?x?xf32>
  tensorop.conv2d ins(%img, %w : memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) outs(%o : memref<?x?x?x?xf32>) sizes(%N) {stage = "o", loop_names = ["n", "f", "y", "x", "c", "r", "s"], domain = affine_map<()[s0] -> (1, 1, s0, s0, 1, 1, 1)>, params = {padding = 1 : i64}} loc("c.design":4:3)
  func.return
}
