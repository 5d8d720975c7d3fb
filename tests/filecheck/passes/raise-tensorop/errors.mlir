// raise-tensorop needs a tensorop kernel: loop IR and modules without a
// kernel are errors (exit 1), never a traceback.
// RUN: not irkit-opt %s --split-input-file -p raise-tensorop 2>&1 | filecheck %s

// CHECK: k.mlir:9:3: error: raise-tensorop: the kernel holds loop IR; run raise-loop first
// CHECK-NOT: Traceback
func.func @k(%N: index {irkit.name = "N"},
             %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "y"} {
    %c = arith.constant 1.0 : f32
    loop.store %c, %y[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("k.mlir":9:3)
  func.return
}

// -----

// CHECK: error: raise-tensorop: the module holds no kernel function
builtin.module {
}
