// What raise-loop cannot read is a located error, never a guess and never a
// traceback: at the op's location when it has one, else at the `origin`
// (the document directive) of the nearest enclosing loop that has one.
// RUN: not irkit-opt %s --split-input-file -p raise-loop 2>&1 | filecheck %s

// A tile loop of step 16 over an inner window of 32: the split overlaps itself.
// CHECK: k.design:7:5: error: raise-loop: loop 'ii' runs 32 iterations from tile loop 'io', whose step is 16: the split leaves gaps or overlaps
func.func @k(%N: index {irkit.name = "N"},
             %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y"} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "y"} {
      %c = arith.constant 1.0 : f32
      loop.store %c, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    } loc("k.design":7:5)
  }
  func.return
}

// -----

// The same without locations (IR printed and edited by hand): the error is at
// the directive that made the loop.
// CHECK: k.design:9:5: error: raise-loop: loop 'ii' runs 32 iterations from tile loop 'io', whose step is 16
func.func @k(%N: index {irkit.name = "N"},
             %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y", origin = "k.design:9:5"} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "y", origin = "k.design:9:5"} {
      %c = arith.constant 1.0 : f32
      loop.store %c, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
  }
  func.return
}

// -----

// A lower bound that is a maximum not of 0 (`max(0, N - 7)` is the box from 0 with `i >= N - 7`).
// CHECK: k.design:4:5: error: raise-loop: cannot raise loop 'i': its lower bound is a maximum
func.func @k(%N: index {irkit.name = "N"},
             %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %i = affine_map<(d0) -> (1, (d0 - 7))>(%N) to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "y", origin = "k.design:4:5"} {
    %c = arith.constant 1.0 : f32
    loop.store %c, %y[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  }
  func.return
}

// -----

// A temporary read but never written: a stage was dropped.
// CHECK: k.design:5:5: error: raise-loop: the generated code reads temporary 't' but never writes it (a stage was dropped?)
func.func @k(%N: index {irkit.name = "N"},
             %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y", parallel, origin = "k.design:5:5"} {
    %t = loop.alloc() {tensor_name = "t", shape = affine_map<() -> (16)>} : memref<?xf32>
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "y", origin = "k.design:4:5"} {
      %v = loop.load %t[affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%ii, %io) : memref<?xf32> -> f32
      loop.store %v, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
    loop.free %t : memref<?xf32>
  }
  func.return
}

// -----

// CHECK: error: raise-loop: the module holds no loop-level kernel
// CHECK-NOT: Traceback
func.func @empty() {
  func.return
}
