// Names that cannot be C identifiers and IR that is not loop-level are
// reported as located diagnostics (exit 1), never pasted into C.
// RUN: not irkit-opt %s --split-input-file --emit c 2>&1 | filecheck %s
// CHECK-NOT: Traceback

func.func @k(%N: index {irkit.name = "N"}, %x: memref<?xf32> {irkit.name = "int", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  func.return
} loc("doc.design":3:1)
// CHECK: doc.design:3:1: error: tensor name 'int' cannot be used in C: it is a C keyword

// -----

func.func @_k(%N: index {irkit.name = "N"}) {
  func.return
}
// CHECK: error: kernel name '_k' cannot be used in C: names starting with '_' are reserved to the C implementation

// -----

func.func @k(%N: index {irkit.name = "INFINITY"}) {
  func.return
}
// CHECK: error: size name 'INFINITY' cannot be used in C: the generated C includes a standard header that defines this name

// -----

func.func @k(%N: index {irkit.name = "N"}, %x: memref<?xf32> {irkit.name = "x", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "free"} {
    %c = arith.constant 1.0 : f32
    loop.store %c, %x[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("doc.design":9:5)
  func.return
}
// CHECK: doc.design:9:5: error: loop name 'free' cannot be used in C: the generated C includes a standard header that defines this name

// -----

func.func @k(%N: index {irkit.name = "N"}, %x: memref<?xf32> {irkit.name = "x", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %t = loop.alloc(%N) {tensor_name = "irkit_tmp", shape = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  loop.free %t : memref<?xf32>
  func.return
}
// CHECK: error: temporary name 'irkit_tmp' cannot be used in C: names starting with 'irkit_' are reserved for generated code

// -----

func.func @k(%N: index {irkit.name = "N"}, %x: memref<?xf32> {irkit.name = "x", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i"} {
    %c = arith.constant 1.0 : f32
    %d = math.atan %c : f32
    loop.store %d, %x[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  }
  func.return
}
// CHECK: error: C backend: no C translation for 'math.atan'

// -----

func.func @k(%N: index {irkit.name = "N"}) {
  func.return
}
func.func @k2(%N: index) {
  func.return
}
// CHECK: error: C backend: function @k2: every argument needs irkit.name
