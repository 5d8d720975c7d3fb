// Input lower-tensorop cannot lower is reported as a located diagnostic,
// never a traceback, and irkit-opt exits 1.
// RUN: not irkit-opt %s -p lower-tensorop --split-input-file 2>&1 | filecheck %s

// CHECK: error: lower-tensorop: the module holds no kernel function (func.func) to lower
builtin.module {
}

// -----

// CHECK: d.design:1:1: error: lower-tensorop: the module holds design IR; run lower-design first
builtin.module {
  design.design "d" {
    design.size "N" = 8
  } loc("d.design":1:1)
}

// -----

// CHECK: k.design:3:3: error: lower-tensorop: kernel argument 1 has no 'irkit.shape' attribute: its shape is unknown
func.func @k(%N: index, %y: memref<?xf32>) {
  tensorop.fill %y : memref<?xf32> sizes(%N) {value = 0.0 : f32, stage = "y"} loc("k.design":3:3)
  func.return
}

// -----

// CHECK: k.design:4:3: error: lower-tensorop: fill value 0 : i32 does not have the buffer's element type f32
func.func @k(%N: index {irkit.name = "N"}, %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  tensorop.fill %y : memref<?xf32> sizes(%N) {value = 0 : i32, stage = "y"} loc("k.design":4:3)
  func.return
}

// -----

// CHECK: k.design:5:3: error: lower-tensorop: softmax needs floating-point operands, got i32
func.func @k(%N: index {irkit.name = "N"},
             %x: memref<?xi32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
             %y: memref<?xi32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  tensorop.softmax ins(%x : memref<?xi32>) outs(%y : memref<?xi32>) sizes(%N) {stage = "y", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>} loc("k.design":5:3)
  func.return
}
